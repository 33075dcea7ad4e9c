"""The programs the runners start, by name: one map of their default binaries.

Every option that names a binary (``--nginx``, ``--openssl``, ``--wrk``, ``--wrk2``,
``--h2load``) defaults to its entry in `TOOLS`; what the user gives wins (`tool_path`). On a
host, a name is found on ``PATH``, then in `SEARCH_DIRS` (nginx often lives in ``/usr/sbin``,
off a user's ``PATH``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

#: Tool -> the binary run when the user names none (a name looked up on the host).
TOOLS: dict[str, str] = {
    "nginx": "nginx",
    "openssl": "openssl",
    "wrk": "wrk",
    "wrk2": "wrk2",
    "h2load": "h2load",
}

#: Folders searched after ``PATH`` for a tool given by name.
SEARCH_DIRS: tuple[str, ...] = (
    "/usr/sbin",
    "/sbin",
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/local/nginx/sbin",
)


def tool_path(name: str, chosen: Mapping[str, str] | None = None) -> str:
    """The binary to run for tool ``name``: the user's choice, else its entry in `TOOLS`.

    Parameters
    ----------
    name : str
        A key of `TOOLS`.
    chosen : mapping of str to str, optional
        Tool -> binary (name or path) the user gave, e.g. ``{"wrk": "/opt/wrk"}``.
    """
    if chosen and chosen.get(name):
        return chosen[name]
    return TOOLS[name]


def local_path(name: str) -> str | None:
    """Where tool ``name`` (its `TOOLS` binary) is on this machine, or None.

    Looks on ``PATH``, then in `SEARCH_DIRS`, as the runners do on every host.
    """
    binary = TOOLS.get(name, name)
    found = shutil.which(binary)
    if found or "/" in binary:
        return found
    for folder in SEARCH_DIRS:
        path = os.path.join(folder, binary)
        if os.access(path, os.X_OK) and os.path.isfile(path):
            return path
    return None
