"""Where the project's shipped files live: the one place their paths are resolved.

One rule, the same in a checkout and in an installed wheel: a shipped file is found next to
the package that ships it. ``sizing/data`` and ``sizing/notebooks`` are links to the
checkout's top-level ``data/`` and ``notebooks/``; the wheel carries their files at the same
places (``[tool.setuptools.package-data]`` in ``pyproject.toml``), and ``runners/report.lua``
sits beside ``runners/wrk.py`` in both. ``NGINX_SIZING_DATA`` points the data elsewhere
(tests, user copies).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The ``sizing`` package folder; shipped files are found below it.
PACKAGE_DIR = Path(__file__).resolve().parent


def shipped(*parts: str) -> Path:
    """Path of a file or folder shipped below the ``sizing`` package, e.g. ``("data",)``.

    The result is resolved (links followed), so messages name the file where it really is.
    """
    return PACKAGE_DIR.joinpath(*parts).resolve()


#: Root of the shipped data; ``NGINX_SIZING_DATA`` points elsewhere (tests, user copies).
DATA_DIR = Path(os.environ.get("NGINX_SIZING_DATA") or shipped("data"))
REFERENCE_DIR = DATA_DIR / "reference"
CATALOG_DIR = DATA_DIR / "catalog"
ESTIMATES_DIR = DATA_DIR / "estimates"
FITS_PATH = DATA_DIR / "fits" / "reference-fits.json"
#: The parameterised notebooks that `sizing.report.execute` executes.
NOTEBOOKS_DIR = shipped("notebooks")
#: The Jupyter kernel the project registers (installing the wheel, or ``make``) and papermill runs.
KERNEL_NAME = "nginx-sizing"
