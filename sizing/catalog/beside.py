"""Work done in a forked child beside this process, its result or its error brought back.

`catalog build` is one process over independent parts (each provider's files; the compact
form beside the CSV). On a machine with two CPUs or more, `beside` forks a child for one
part while this process does another; the child sends its result (or the exception it
raised) back through a pipe, pickled, and exits at once (`os._exit`: no ``atexit``, no
flushing of the parent's buffers). Where there is no `os.fork`, or one usable CPU, the part
runs here, at once, and the answer is the same; so it does in a process with other threads
(`_other_threads`).

The child is this process's own: `Beside.result` reads its answer, then reaps it; an
answer that does not come (the child killed) is an error naming its signal.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Beside", "beside", "here", "usable_cpus"]

T = TypeVar("T")


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Beside(Generic[T]):
    """A part running in a child (or already done here); `result` waits for it."""

    def __init__(self, pid: int | None, fd: int | None, done: tuple[bool, Any] | None) -> None:
        self._pid, self._fd, self._done = pid, fd, done

    def result(self) -> T:
        """The part's result, or its exception raised here."""
        if self._done is None:
            self._done = self._collect()
        ok, value = self._done
        if not ok:
            raise value
        return value

    def cancel(self) -> None:
        """Stop the child (this process's own) and reap it, its answer unread."""
        if self._pid is not None and self._done is None:
            import signal  # only here: its import builds enums (a few ms of every build)

            os.kill(self._pid, signal.SIGKILL)
            self._done = (False, RuntimeError("cancelled"))
            self._reap()
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _collect(self) -> tuple[bool, Any]:
        """Read the child's whole answer, reap it, then unpickle what a clean exit wrote."""
        assert self._fd is not None
        fd, self._fd = self._fd, None
        with os.fdopen(fd, "rb") as pipe:
            data = pipe.read()
        status = self._reap()
        if status != 0 or not data:  # killed (a signal), failed, or cut off mid-answer
            why = (
                f"signal {os.WTERMSIG(status)}"
                if os.WIFSIGNALED(status)
                else f"exit {os.waitstatus_to_exitcode(status)}"
            )
            return False, RuntimeError(f"a part of the build ended without an answer ({why})")
        return pickle.loads(data)

    def _reap(self) -> int:
        assert self._pid is not None
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        return status


def beside(fn: Callable[..., T], *args: Any) -> Beside[T]:
    """``fn(*args)`` in a forked child when there is a second CPU, else here and now.

    Where no pipe or child can be had (a process limit), the part runs here too.
    """
    if not hasattr(os, "fork") or usable_cpus() < 2 or _other_threads():
        return here(fn, *args)
    for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
        if stream is not None:
            stream.flush()
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return here(fn, *args)
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return here(fn, *args)
    if pid == 0:  # the child: answer, then leave without running the parent's exit work
        code = 0
        try:
            os.close(read_fd)
            _answer(write_fd, fn, args)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    return Beside(pid, read_fd, None)


def _other_threads() -> bool:
    """Whether this process runs another Python thread (a notebook's kernel does).

    A fork copies only the calling thread: a lock another thread held (an import's, a
    logger's) would stay held in the child for ever, so such a process does the part itself.
    """
    threading = sys.modules.get("threading")  # never imported: no other Python thread
    return threading is not None and threading.active_count() > 1


def here(fn: Callable[..., T], *args: Any) -> Beside[T]:
    """``fn(*args)`` in this process, now; an exception is raised where `result` is asked."""
    try:
        return Beside(None, None, (True, fn(*args)))
    except Exception as exc:
        return Beside(None, None, (False, exc))


def _answer(fd: int, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """Run ``fn`` and write ``(ok, value)`` to ``fd``, pickled (an unpicklable error as text)."""
    try:
        payload: tuple[bool, Any] = (True, fn(*args))
    except Exception as exc:
        payload = (False, exc)
    try:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # the result or the error does not pickle: said as text
        what = exc if payload[0] else payload[1]
        data = pickle.dumps((False, RuntimeError(f"{type(what).__name__}: {what}")))
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(data)
