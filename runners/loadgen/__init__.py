"""Load generators behind one contract (`LoadGenerator`), found by name.

Adding one: a module ``runners/loadgen/NAME.py`` whose ``GENERATOR`` is a `LoadGenerator`
instance, and its line in `_MODULES`.
"""

from __future__ import annotations

import importlib

from runners.loadgen.base import (
    CLOSED,
    ERROR_KINDS,
    HTTP_VERSIONS,
    OPEN,
    PERCENTILES,
    Load,
    LoadGenerator,
    Measurement,
    UnsupportedLoad,
    latency_summary,
    merge,
    percentile,
    saturation_note,
)

__all__ = [
    "CLOSED",
    "ERROR_KINDS",
    "HTTP_VERSIONS",
    "NAMES",
    "OPEN",
    "PERCENTILES",
    "Load",
    "LoadGenerator",
    "Measurement",
    "UnavailableLoadGenerator",
    "UnsupportedLoad",
    "get",
    "latency_summary",
    "merge",
    "percentile",
    "saturation_note",
]

# name -> module holding GENERATOR; None: planned, not in this version yet.
_MODULES: dict[str, str | None] = {
    "wrk": "runners.loadgen.wrk",
    "h2load": "runners.loadgen.h2load",
    "wrk2": "runners.loadgen.wrk2",
}
NAMES = tuple(_MODULES)


class UnavailableLoadGenerator(UnsupportedLoad):
    """A load generator name that is unknown or not available in this version."""


def get(name: str) -> LoadGenerator:
    """The load generator registered as ``name``.

    Raises
    ------
    UnavailableLoadGenerator
        If ``name`` is unknown or its module is not part of this version.
    """
    if name not in _MODULES:
        raise UnavailableLoadGenerator(
            f"unknown load generator {name!r}; expected one of {', '.join(NAMES)}"
        )
    module = _MODULES[name]
    if module is None:
        raise UnavailableLoadGenerator(f"load generator {name} is not available in this version")
    generator = importlib.import_module(module).GENERATOR
    if not isinstance(generator, LoadGenerator):
        raise UnavailableLoadGenerator(f"{module}.GENERATOR is not a LoadGenerator")
    return generator
