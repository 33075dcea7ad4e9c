"""Fit NGINX scaling curves and price the fleets that meet an RPS target under a p99 SLA.

The names below load their modules (numpy, scipy) on first use, so that ``python -m sizing``
starts, and handles Ctrl-C, before any of them is imported.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sizing.capacity import Workload, instance_capacity
    from sizing.catalog import filter_catalog, load_catalog
    from sizing.curves import CurveFit, fit_curve, fit_usl, select_model
    from sizing.recommend import recommend

_WHERE = {
    "CurveFit": "sizing.curves",
    "Workload": "sizing.capacity",
    "filter_catalog": "sizing.catalog",
    "fit_curve": "sizing.curves",
    "fit_usl": "sizing.curves",
    "instance_capacity": "sizing.capacity",
    "load_catalog": "sizing.catalog",
    "recommend": "sizing.recommend",
    "select_model": "sizing.curves",
}

__all__ = [
    "CurveFit",
    "Workload",
    "filter_catalog",
    "fit_curve",
    "fit_usl",
    "instance_capacity",
    "load_catalog",
    "recommend",
    "select_model",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'sizing' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


class _Package(types.ModuleType):
    """The package, whose ``recommend`` stays the function once its submodule is imported.

    Importing ``sizing.recommend`` sets the package's attribute of that name to the module;
    the function keeps the name, as it did when this file imported it eagerly (the module
    is ``importlib.import_module("sizing.recommend")``).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _WHERE and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
