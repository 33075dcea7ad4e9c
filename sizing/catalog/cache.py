"""A private cache of checked catalog rows, so that a run need not hash and check them again.

Reading the compact catalog means hashing the 5 MB CSV (is the compact form current?) and
checking every row of the regions asked for. Once a run has done that, the checked rows are
kept here under a key made of both files' path, size, modification time and inode: a later
run whose files have not changed takes the rows from the cache, with no hash and no check.

The cache is a folder the tool creates for itself, ``$XDG_CACHE_HOME/nginx-sizing`` (or
``~/.cache/nginx-sizing``; ``NGINX_SIZING_CACHE`` names another, ``off`` turns it off),
mode 0700. It is used only while it is a real folder (not a link) owned by this user with no
access for others; each file is opened without following links and used only when it is a
regular file of this user that nobody else may write. Files hold `marshal` data of plain
values (lists, text, numbers), written by `trialtable.files.write_atomic` (mode 0600).
Anything unexpected (a folder that fails the checks, a damaged or foreign file, a full disk)
means no cache: the rows are read and checked as without one.
"""

from __future__ import annotations

import marshal
import os
import stat
import time
import zlib
from pathlib import Path
from typing import Any

from trialtable.files import write_atomic

#: Raised by `marshal` on damaged data, by the file checks, and by the OS. A damaged file
#: of a few bytes can claim a list of billions of items: `marshal` then fails to allocate
#: it at once (MemoryError, before any memory is used), which is damage like any other.
_FAILURES = (OSError, ValueError, EOFError, TypeError, KeyError, MemoryError, OverflowError)
#: Largest cache file read [B]: the shipped catalog's is about 4 MB.
MAX_BYTES = 512 * 1024 * 1024


def cache_dir() -> Path | None:
    """The private cache folder, created if need be; None when off or not safe to use."""
    named = os.environ.get("NGINX_SIZING_CACHE", "")
    if named.lower() == "off":
        return None
    if named:
        folder = Path(named)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = Path(base) / "nginx-sizing"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        st = os.lstat(folder)
    except OSError:
        return None
    private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
    return folder if private else None


def _file(folder: Path, slot: str) -> Path:
    return folder / f"catalog-{zlib.crc32(slot.encode()):08x}.marshal"


def load(key: str, slot: str) -> Any:
    """The value stored under ``key`` in ``slot``, or None (no entry, or not to be trusted).

    None also when the cache is off or the slot holds another key's value.
    ``slot`` names the file: one per catalog, so that a changed catalog's entry replaces
    its earlier one instead of adding a file (the key holds the files' sizes and times).
    """
    folder = cache_dir()
    if folder is None:
        return None
    try:
        # Non-blocking: a named pipe planted in the cache is refused, never waited on.
        fd = os.open(_file(folder, slot), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.getuid()
            or st.st_mode & 0o022
            or st.st_size > MAX_BYTES
        ):
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read(MAX_BYTES + 1)
        if len(data) != st.st_size:
            return None  # changed while read
        stored = marshal.loads(data)
        if not isinstance(stored, tuple) or len(stored) != 2 or stored[0] != key:
            return None
        return stored[1]
    except _FAILURES:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def store(key: str, value: Any, slot: str) -> None:
    """Keep ``value`` (plain data) under ``key`` in ``slot``, replacing what the slot held.

    Silently nothing when the cache is unusable.
    """
    folder = cache_dir()
    if folder is None:
        return
    target = _file(folder, slot)
    try:
        if not stat.S_ISREG(os.lstat(target).st_mode):
            os.unlink(target)  # a pipe or link planted in the private folder: its name only
    except OSError:
        pass
    try:
        write_atomic(target, marshal.dumps((key, value)), mode=0o600)
    except _FAILURES:
        pass


#: A file modified this recently [ns] is not cached: a rewrite of the same size within the
#: file system's timestamp granularity would keep its key (git's "racily clean" rule).
RACY_NS = 2_000_000_000


def stat_key(*paths: Path) -> str | None:
    """The cache key of files: each one's path, size, modification time [ns], inode, device.

    None when one of them cannot be read, or was modified less than `RACY_NS` ago.
    """
    now = time.time_ns()
    parts = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            return None
        if now - st.st_mtime_ns < RACY_NS:
            return None
        parts.append(f"{os.path.realpath(p)}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_dev}")
    return "|".join(parts)
