"""Fit NGINX scaling curves and price the fleets that meet an RPS target under a p99 SLA.

The names below load their modules (numpy, scipy) on first use, so that ``python -m sizing``
starts, and handles Ctrl-C, before any of them is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sizing.catalog.load import filter_catalog, load_catalog
    from sizing.fleet.recommend import recommend
    from sizing.model.capacity import Workload, instance_capacity
    from sizing.model.curves import CurveFit, fit_curve, fit_usl, select_model
    from sizing.pipeline import Answer, size
    from sizing.request import SizingRequest

_WHERE = {
    "Answer": "sizing.pipeline",
    "SizingRequest": "sizing.request",
    "size": "sizing.pipeline",
    "CurveFit": "sizing.model.curves",
    "Workload": "sizing.model.capacity",
    "filter_catalog": "sizing.catalog.load",
    "fit_curve": "sizing.model.curves",
    "fit_usl": "sizing.model.curves",
    "instance_capacity": "sizing.model.capacity",
    "load_catalog": "sizing.catalog.load",
    "recommend": "sizing.fleet.recommend",
    "select_model": "sizing.model.curves",
}

__all__ = [
    "Answer",
    "CurveFit",
    "SizingRequest",
    "Workload",
    "filter_catalog",
    "fit_curve",
    "fit_usl",
    "instance_capacity",
    "load_catalog",
    "recommend",
    "select_model",
    "size",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'sizing' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
