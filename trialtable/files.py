"""Bounded reads of the files a user names, and the one way the tool writes a file.

Reading: a path may name a device (``/dev/zero``, ``/dev/urandom``), a folder, a huge sparse
file or a named pipe nobody writes to; reading it whole, or waiting on it, would never end or
exhaust memory. `read_bounded` reads a regular file, or a pipe (``--catalog <(command)``) up
to a given size and for at most `PIPE_SECONDS`, and refuses anything else, or more, with
`FileRefused`, an ``OSError`` whose ``strerror`` says why in words, so that a reader's
existing ``except OSError`` names the file and the reason in its one line. A named pipe is
opened without waiting for a writer: one that gives no data is refused, not waited on. The
files of a run folder (state the tool wrote itself) are read with ``regular_only=True,
follow=False``: a pipe, a device or a symbolic link planted there is refused.

Writing: `write_atomic` is every writer's last step (catalogs, reports, profiles, fits, run
and campaign state). It writes a new temporary file next to the target (``O_EXCL``, never
through a link), syncs it and renames it over the target, after `check_output` has refused a
target that is a symbolic link, a device, a pipe, a folder or one of the command's own
inputs, or whose folder is not a folder. A crash leaves the old file or the new one, never
half of one, and nothing outside the target's name is written.

`open_state` opens a state file the tool owns (a lock, an append-only log) without following
a symbolic link and refuses one that is not a regular file with a single link.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from trialtable.jsonvalue import JsonValue

MB = 1024 * 1024

#: Longest a pipe is read [s] before it is refused (a writer that never finishes).
PIPE_SECONDS = 30.0

#: Most digits of an integer in a JSON file the tool reads (a 100,000-digit number is
#: refused in words rather than by Python's integer-conversion limit).
JSON_MAX_DIGITS = 400

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class FileRefused(OSError):
    """A path that is not a regular file, or a file larger than its reader's cap."""


def file_kind(mode: int, pipe: str = "a pipe") -> str:
    """What a file of ``mode`` (an ``st_mode``) is, in words: ``a folder``, ``a device``...

    ``pipe`` names a FIFO (a reader of pipes says ``a pipe``, a command-line check ``a named
    pipe``); anything else that is not a regular file is ``not a regular file``.
    """
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISFIFO(mode):
        return pipe
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _refusal(mode: int) -> FileRefused:
    kind = file_kind(mode)
    what = kind if kind.startswith("not") else f"{kind}, not a regular file"
    return FileRefused(errno.EINVAL, f"is {what}")


def _size(n: int) -> str:
    return f"{n / MB:g} MB" if n >= MB else f"{n} bytes"


def _open(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """``os.open``; a symbolic link met with ``O_NOFOLLOW`` is a `FileRefused`."""
    try:
        return os.open(Path(path), flags | _O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and flags & _O_NOFOLLOW:
            raise FileRefused(errno.ELOOP, "is a symbolic link, not a regular file") from None
        raise


def read_bounded(
    path: str | os.PathLike[str],
    limit: int,
    *,
    regular_only: bool = False,
    follow: bool = True,
    timeout: float | None = None,
) -> bytes:
    """The bytes of the regular file or pipe ``path``, at most ``limit`` of them.

    Parameters
    ----------
    regular_only : bool
        Refuse a pipe too (a run folder's own files).
    follow : bool
        Follow a symbolic link at ``path`` (False: refuse it).
    timeout : float, optional
        Longest a pipe is read [s] (default `PIPE_SECONDS`).

    Raises
    ------
    FileNotFoundError, PermissionError, OSError
        As opening the file raises them.
    FileRefused
        For a folder, device, socket or link, a pipe that gives no data or does not end in
        time, or a file larger than ``limit`` bytes (its ``strerror`` reads e.g. ``is a
        device, not a regular file`` or ``is 5120 MB, more than the 256 MB allowed``).
    """
    flags = os.O_RDONLY | _O_NONBLOCK | (0 if follow else _O_NOFOLLOW)
    fd = _open(path, flags)
    try:
        st = os.fstat(fd)
        fifo = stat.S_ISFIFO(st.st_mode)
        if not (stat.S_ISREG(st.st_mode) or (fifo and not regular_only)):
            raise _refusal(st.st_mode)
        if st.st_size > limit:
            raise FileRefused(
                errno.EFBIG, f"is {_size(st.st_size)}, more than the {_size(limit)} allowed"
            )
        if fifo:
            data = _read_pipe(fd, limit, PIPE_SECONDS if timeout is None else timeout)
        else:
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            left = limit + 1
            while left > 0:
                chunk = os.read(fd, min(left, MB))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > limit:  # a pipe, a file that grew while read or reports no size (/proc)
        raise FileRefused(errno.EFBIG, f"holds more than the {_size(limit)} allowed")
    return data


def _read_pipe(fd: int, limit: int, timeout: float) -> bytes:
    """A pipe's bytes until its end, at most ``limit + 1``, within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    got = 0
    # A named pipe nobody opened for writing: ``select`` would wait (Linux reports no
    # hang-up before a first writer), but a read ends at once with nothing: refused now.
    try:
        first = os.read(fd, min(limit + 1, MB))
    except BlockingIOError:
        first = None  # a writer that has not written yet: waited for, with a time bound
    if first == b"":
        raise FileRefused(errno.ENODATA, "is a pipe that gave no data (no writer)")
    if first:
        chunks.append(first)
        got = len(first)
    while got <= limit:
        left = deadline - time.monotonic()
        if left <= 0:
            raise FileRefused(errno.ETIMEDOUT, f"is a pipe that did not end within {timeout:g} s")
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        try:
            chunk = os.read(fd, min(limit + 1 - got, MB))
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    if not chunks:
        raise FileRefused(errno.ENODATA, "is a pipe that gave no data (no writer)")
    return b"".join(chunks)


def loads_json(data: bytes | str) -> JsonValue:
    """JSON text as Python data, with every number finite and of a sane length.

    Raises ``ValueError`` (``json.JSONDecodeError`` for malformed text) for ``NaN`` or
    ``Infinity``, a number too large for a float (``1e999``) or an integer of more than
    `JSON_MAX_DIGITS` digits; ``RecursionError`` for nesting too deep.
    """

    def _int(text: str) -> int:
        if len(text.lstrip("-")) > JSON_MAX_DIGITS:
            raise ValueError(f"an integer of {len(text)} digits (at most {JSON_MAX_DIGITS})")
        return int(text)

    def _float(text: str) -> float:
        value = float(text)
        if value in (float("inf"), float("-inf")):
            raise ValueError(f"the number {text[:30]} is too large")
        return value

    def _constant(text: str) -> float:
        raise ValueError(f"{text} is not a number JSON allows")

    if isinstance(data, bytes):
        data = data.decode("utf-8")
    value: JsonValue = json.loads(
        data, parse_int=_int, parse_float=_float, parse_constant=_constant
    )
    return value


def check_output(
    path: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str]] = ()
) -> Path:
    """``path`` as a file the tool may (re)write, or `FileRefused` saying why not.

    Its folder must be a folder; the name itself, when it exists, a regular file (not a
    symbolic link, device, pipe, socket or folder) that is none of ``inputs``.
    """
    p = Path(path)
    parent = p.parent
    try:
        pst = os.stat(parent)
    except FileNotFoundError:
        raise FileRefused(errno.ENOENT, f"is in {parent}, which does not exist") from None
    if not stat.S_ISDIR(pst.st_mode):
        raise FileRefused(errno.ENOTDIR, f"is in {parent}, which is not a folder")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _refusal(st.st_mode)
    if st is not None:
        for src in inputs:
            try:
                same = os.path.samefile(src, p)
            except OSError:
                same = False
            if same:
                raise FileRefused(errno.EEXIST, f"is one of the inputs ({src})")
    return p


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    inputs: Iterable[str | os.PathLike[str]] = (),
    mode: int = 0o644,
) -> Path:
    """Write ``data`` as the new content of ``path``: a temporary file, synced, renamed.

    `check_output` first (a link, device, pipe or folder at ``path``, or one of ``inputs``,
    is refused with `FileRefused`); the temporary file is created with ``O_EXCL`` and
    ``O_NOFOLLOW`` next to ``path`` and removed when anything fails. Returns ``path``.
    """
    p = check_output(path, inputs=inputs)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = p.with_name(f".{p.name}.{os.urandom(4).hex()}.tmp")  # no import of secrets (OpenSSL)
    fd = _open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, mode)
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p


def open_state(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """A file descriptor of a state file the tool owns, opened without following a link.

    ``flags`` as for ``os.open`` (``O_TRUNC`` is not allowed: a lock or a log is never
    truncated by opening it). A symbolic link, a pipe, a device or folder, or a regular file
    with more than one name (a hard link planted to another file) is refused with
    `FileRefused`.
    """
    if flags & os.O_TRUNC:
        raise ValueError("open_state never truncates")
    fd = _open(path, flags | _O_NOFOLLOW | _O_NONBLOCK, mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refusal(st.st_mode)
        if st.st_nlink > 1:
            raise FileRefused(errno.EMLINK, "has another name (a hard link), not the tool's own")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def out_folder_problem(path: str | os.PathLike[str]) -> str | None:
    """Make the output folder ``path`` (and its parents); None, or why it cannot be one.

    Checked before a command starts its work, so that a file in the folder's place, a parent
    that cannot hold folders (``/proc``) or a folder without write permission is one line up
    front rather than an error at the end. A symbolic link in the folder's place is refused.
    """
    p = Path(path)
    if p.is_symlink():
        return f"{p} is a symbolic link, not a folder"
    if p.exists() and not p.is_dir():
        return f"{p} exists and is not a folder"
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the folder {p} ({exc.strerror})"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"cannot write in the folder {p} (permission denied)"
    return None
