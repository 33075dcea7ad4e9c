"""Ctrl-C on either command line: one line on stderr, exit code 130, never a traceback.

Each command is made to wait on a named pipe that nobody writes (a catalog or an inventory
file), so the interrupt lands inside the command, whatever the machine's load.
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


def _waiting_on_fifo(pid: int, fifo: Path) -> bool:
    """The command waits on the pipe: blocked opening it, or holding it open while it waits
    for data (readers open a pipe without blocking and wait with a time bound)."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False
    if wchan in ("wait_for_partner", "fifo_open"):
        return True
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(fifo):
                return True
        except OSError:
            continue
    return False


def _interrupt(argv: list[str], fifo: Path) -> subprocess.CompletedProcess[str]:
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell without job control starts background jobs with SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not _waiting_on_fifo(proc.pid, fifo) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    assert _waiting_on_fifo(proc.pid, fifo), "the command never reached the pipe"
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
    fifo = tmp_path / "pipe"
    done = _interrupt([a.format(fifo=fifo, tmp=tmp_path) for a in argv], fifo)
    assert done.returncode == 130, done
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"python -m {argv[0]}"), done.stderr
    assert "interrupted" in lines[0]
