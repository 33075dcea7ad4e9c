"""Read an nginx.conf with its includes: the shared reader (`trialtable.nginxconf`).

The reader is shared with ``python -m runners sweep --nginx-conf``; here its refusals are the
sizing commands' `InputError` (one line naming file and line, exit 2).
"""

from __future__ import annotations

import os

from sizing.errors import InputError
from trialtable import nginxconf
from trialtable.errors import ConfError
from trialtable.nginxconf import (
    DATA_BLOCKS,
    EXTRA_DIRECTIVES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_GLOB_MATCHES,
    MAX_LINE_BYTES,
    MAX_TOTAL_BYTES,
    Config,
    Statement,
)

__all__ = [
    "DATA_BLOCKS",
    "EXTRA_DIRECTIVES",
    "MAX_DEPTH",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_GLOB_MATCHES",
    "MAX_LINE_BYTES",
    "MAX_TOTAL_BYTES",
    "Config",
    "Statement",
    "load",
]


def load(path: str | os.PathLike[str]) -> Config:
    """`trialtable.nginxconf.load`, its refusals raised as `InputError`."""
    try:
        return nginxconf.load(path)
    except ConfError as exc:
        raise InputError(str(exc)) from None
