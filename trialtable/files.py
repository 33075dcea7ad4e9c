"""Bounded reads of the files a user names: catalogs, profiles, run folders, inventories.

A path may name a device (``/dev/zero``, ``/dev/urandom``), a folder or a huge sparse file;
reading it whole would never end or exhaust memory. `read_bounded` reads a regular file or a
pipe (``--catalog <(command)``) up to a given size, and refuses anything else, or more, with
`FileRefused`, an ``OSError`` whose ``strerror`` says why in words, so that a reader's
existing ``except OSError`` names the file and the reason in its one line. (Opening a named
pipe waits for a writer, as any reader of it does; Ctrl-C ends the wait.)
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

MB = 1024 * 1024


class FileRefused(OSError):
    """A path that is not a regular file, or a file larger than its reader's cap."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size(n: int) -> str:
    return f"{n / MB:g} MB" if n >= MB else f"{n} bytes"


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file or pipe ``path``, at most ``limit`` of them.

    Raises
    ------
    FileNotFoundError, PermissionError, OSError
        As opening the file raises them.
    FileRefused
        For a folder, device or socket, or a file larger than ``limit`` bytes (its
        ``strerror`` reads e.g. ``is a device, not a regular file`` or ``is 5120 MB, more
        than the 256 MB allowed``).
    """
    fd = os.open(Path(path), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            kind = _kind(st.st_mode)
            what = kind if kind.startswith("not") else f"{kind}, not a regular file"
            raise FileRefused(errno.EINVAL, f"is {what}")
        if st.st_size > limit:
            raise FileRefused(
                errno.EFBIG, f"is {_size(st.st_size)}, more than the {_size(limit)} allowed"
            )
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:  # a pipe, a file that grew while read or reports no size (/proc)
        raise FileRefused(errno.EFBIG, f"holds more than the {_size(limit)} allowed")
    return data


def out_folder_problem(path: str | os.PathLike[str]) -> str | None:
    """Make the output folder ``path`` (and its parents); None, or why it cannot be one.

    Checked before a command starts its work, so that a file in the folder's place, a parent
    that cannot hold folders (``/proc``) or a folder without write permission is one line up
    front rather than an error at the end.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        return f"{p} exists and is not a folder"
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the folder {p} ({exc.strerror})"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"cannot write in the folder {p} (permission denied)"
    return None
