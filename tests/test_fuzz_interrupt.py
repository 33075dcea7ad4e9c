"""Ctrl-C on either command line: one line on stderr, exit code 130, never a traceback.

Each command is made to wait on a pipe whose writer never writes (a catalog or an inventory
file given as ``/dev/fd/N``), so the interrupt lands inside the command, whatever the
machine's load.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _waiting_on_pipe(pid: int, inherited: int, pipe: str) -> bool:
    """The command waits on the pipe: it opened it (a descriptor besides the one it
    inherited) and holds it while it waits for data (readers wait with a time bound)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    opened = 0
    for fd in fds:
        try:
            if int(fd) != inherited and os.readlink(f"/proc/{pid}/fd/{fd}") == pipe:
                opened += 1
        except OSError:
            continue
    return opened > 0


def _interrupt(argv: list[str], read_fd: int) -> subprocess.CompletedProcess[str]:
    pipe = os.readlink(f"/proc/self/fd/{read_fd}")
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        pass_fds=(read_fd,),
        # A shell without job control starts background jobs with SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not _waiting_on_pipe(proc.pid, read_fd, pipe) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    assert _waiting_on_pipe(proc.pid, read_fd, pipe), "the command never reached the pipe"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["sizing", "catalog", "--catalog", "{fifo}"],
        ["sizing", "recommend", "--rps", "1e6", "--catalog", "{fifo}"],
        ["runners", "sweep", "--server", "sim", "--inventory", "{fifo}", "--out", "{tmp}"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_ctrl_c_is_one_line_and_130(argv: list[str], tmp_path: Path) -> None:
    # An anonymous pipe (as ``<(command)`` gives) whose writer, this test, never writes: a
    # named pipe nobody writes to is refused at once, before the command would wait.
    r, w = os.pipe()
    try:
        done = _interrupt([a.format(fifo=f"/dev/fd/{r}", tmp=tmp_path) for a in argv], r)
    finally:
        os.close(r)
        os.close(w)
    assert done.returncode == 130, done
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"python -m {argv[0]}"), done.stderr
    assert "interrupted" in lines[0]
