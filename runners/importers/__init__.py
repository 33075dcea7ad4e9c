"""Importers of other load tools' result files behind one contract (`Importer`), by format.

Adding one: a module ``runners/importers/NAME.py`` whose ``IMPORTER`` is an `Importer`
instance, and its line in `_MODULES`. `runners.importers.record` writes what they read into
a run folder.
"""

from __future__ import annotations

import importlib

from runners.importers.base import Imported, Importer, ImportRefused

__all__ = ["FORMATS", "ImportRefused", "Imported", "Importer", "get"]

# --format name -> module holding IMPORTER.
_MODULES: dict[str, str] = {
    "k6": "runners.importers.k6",
    "k6-summary": "runners.importers.k6_summary",
    "vegeta": "runners.importers.vegeta",
    "hey": "runners.importers.hey",
    "hdrh": "runners.importers.hdrh",
    "locust": "runners.importers.locust",
}
FORMATS = tuple(_MODULES)


def get(name: str) -> Importer:
    """The importer of format ``name``; `ImportRefused` for an unknown one."""
    if name not in _MODULES:
        raise ImportRefused(f"unknown format {name!r}; expected one of {', '.join(FORMATS)}")
    importer = importlib.import_module(_MODULES[name]).IMPORTER
    if not isinstance(importer, Importer):
        raise ImportRefused(f"{_MODULES[name]}.IMPORTER is not an Importer")
    return importer
