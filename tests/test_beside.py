"""Work in a forked child beside this process (`sizing.catalog.beside`): results, errors, kills."""

from __future__ import annotations

import os
import signal

import pytest

from sizing.catalog import beside as beside_mod
from sizing.catalog.beside import beside, here
from sizing.errors import InputError


def _pid_and(value: int) -> tuple[int, int]:
    return os.getpid(), value * 2


def _refuse(text: str) -> None:
    raise InputError(text)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _unpicklable() -> object:
    return lambda: None


def _forks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every part in a child, whatever the machine and the test runner's threads."""
    monkeypatch.setattr(beside_mod, "usable_cpus", lambda: 2)
    monkeypatch.setattr(beside_mod, "_other_threads", lambda: False)


def test_result_comes_from_another_process(monkeypatch: pytest.MonkeyPatch) -> None:
    _forks(monkeypatch)
    pid, doubled = beside(_pid_and, 21).result()
    assert doubled == 42 and pid != os.getpid()


def test_error_is_raised_where_the_result_is_asked_for() -> None:
    job = beside(_refuse, "pricing.yml line 3: not a number")
    with pytest.raises(InputError, match=r"pricing\.yml line 3: not a number"):
        job.result()


def test_a_killed_child_is_an_error_naming_its_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    _forks(monkeypatch)
    with pytest.raises(RuntimeError, match=f"signal {int(signal.SIGKILL)}"):
        beside(_die).result()


def test_a_result_that_does_not_pickle_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _forks(monkeypatch)
    with pytest.raises(RuntimeError, match=r"(?i)pickle"):
        beside(_unpicklable).result()


def test_cancel_reaps_the_child_and_closes_its_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    _forks(monkeypatch)
    job = beside(signal.pause)
    pid, fd = job._pid, job._fd
    assert pid is not None and fd is not None
    job.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no longer this process's child
    with pytest.raises(OSError):
        os.fstat(fd)  # closed (and not reused yet: nothing opened since)
    with pytest.raises(RuntimeError, match="cancelled"):
        job.result()


def test_one_cpu_runs_it_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(beside_mod, "usable_cpus", lambda: 1)
    assert beside(_pid_and, 1).result() == (os.getpid(), 2)
    with pytest.raises(InputError):
        here(_refuse, "x").result()


def test_a_process_with_other_threads_runs_it_here(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    monkeypatch.setattr(beside_mod, "usable_cpus", lambda: 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert beside(_pid_and, 3).result() == (os.getpid(), 6)
    finally:
        stop.set()
        other.join()


def test_a_child_cut_off_mid_answer_is_an_error_not_a_bad_pickle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Some bytes of the answer arrived, then the child died: its signal is named."""
    _forks(monkeypatch)
    monkeypatch.setattr(beside_mod, "_answer", _write_half_and_die)
    with pytest.raises(RuntimeError, match=f"signal {int(signal.SIGKILL)}"):
        beside(_pid_and, 1).result()


def _write_half_and_die(fd: int, fn: object, args: object) -> None:
    os.write(fd, b"\x80\x05\x95partial")
    _die()
