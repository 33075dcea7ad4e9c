"""Where the project's data lives: the one place paths are resolved."""

from __future__ import annotations

import os
from pathlib import Path

#: Root of the shipped data; ``NGINX_SIZING_DATA`` points elsewhere (tests, user copies).
DATA_DIR = Path(
    os.environ.get("NGINX_SIZING_DATA", Path(__file__).resolve().parent.parent / "data")
)
REFERENCE_DIR = DATA_DIR / "reference"
CATALOG_DIR = DATA_DIR / "catalog"
ESTIMATES_DIR = DATA_DIR / "estimates"
FITS_PATH = DATA_DIR / "fits" / "reference-fits.json"
#: The parameterised notebooks that `sizing.report` executes.
NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
#: The Jupyter kernel the project registers (``make``) and papermill runs.
KERNEL_NAME = "nginx-sizing"
