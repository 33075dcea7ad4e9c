"""A child process that runs ``python -m sizing|runners`` in-process, bounded, for the fuzz tests.

Starting an interpreter (and pandas, scipy) per generated example would make a few hundred
examples take many minutes on a busy machine; one worker process runs them all instead, each
by calling the package's ``main(argv)``. The worker caps its own address space
(``RLIMIT_AS``, a memory blow-up becomes a ``MemoryError``) and each call's time
(``SIGALRM``); the test side also gives up on a worker that does not answer in time (a hang
in C code) and starts a fresh one.

Protocol: one JSON request per line on stdin (``{"package", "argv", "timeout_s"}``), one JSON
answer per line on the original stdout (``{"code", "stdout", "stderr", "escaped", "seconds"}``;
``escaped`` is the traceback of an exception that left ``main``, or null).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: Address space the worker may grow by past its size after the imports [bytes].
MEMORY_HEADROOM = 1536 * 1024**2


class _Timeout(BaseException):
    """Raised by SIGALRM inside a call that ran past its time."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _serve() -> None:
    out = os.fdopen(os.dup(1), "w")
    # Programs the commands start inherit fd 1: keep them off the answer pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    # Warm the imports the commands make, so the cap measures the work, not the libraries.
    for name in ("sizing.cli.main", "runners.cli.main", "pandas", "scipy.optimize", "numpy"):
        importlib.import_module(name)
    limit = _vm_size() + MEMORY_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _on_alarm)
    out.write(json.dumps({"ready": True, "limit": limit}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        cli = {"sizing": "sizing.cli.main", "runners": "runners.cli.main"}[req["package"]]
        main = importlib.import_module(cli).main
        stdout, stderr = io.StringIO(), io.StringIO()
        escaped = None
        code: Any = None
        started = time.monotonic()
        signal.alarm(int(req["timeout_s"]))
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    code = main(req["argv"])
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                    if exc.code is not None and not isinstance(exc.code, int):
                        print(exc.code, file=sys.stderr)
        except _Timeout:
            escaped = f"timed out after {req['timeout_s']} s"
        except BaseException:  # every escape is a finding: report it, keep serving
            escaped = traceback.format_exc()
        finally:
            signal.alarm(0)
        answer = {
            "code": code,
            "stdout": stdout.getvalue()[-20000:],
            "stderr": stderr.getvalue()[-20000:],
            "escaped": escaped,
            "seconds": time.monotonic() - started,
        }
        out.write(json.dumps(answer) + "\n")
        out.flush()


@dataclass
class Result:
    """What one call gave: exit code, output, and any escaped exception or hang."""

    code: int | None
    stdout: str
    stderr: str
    escaped: str | None
    seconds: float


class Worker:
    """The test side: start the worker, send argv lists, restart it after a hang or crash."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.env = {
            **os.environ,
            # One thread per library keeps the address space small and the machine calm.
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MALLOC_ARENA_MAX": "2",
            "PYTHONPATH": str(ROOT),
            **(env or {}),
        }
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, __file__],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        ready = self._read(proc, 300)
        if ready is None:
            proc.kill()
            raise RuntimeError("fuzz worker did not start")
        return proc

    @staticmethod
    def _read(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any] | None:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = proc.stdout.readline()
        return json.loads(line) if line else None

    def run(self, package: str, argv: list[str], timeout_s: int = 60) -> Result:
        """``python -m PACKAGE ARGV`` in the worker, within ``timeout_s`` (plus a grace)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None
        self.proc.stdin.write(
            json.dumps({"package": package, "argv": argv, "timeout_s": timeout_s}) + "\n"
        )
        self.proc.stdin.flush()
        answer = self._read(self.proc, timeout_s + 30)
        if answer is None:
            died = self.proc.poll()
            self.close()
            what = f"worker died (status {died})" if died is not None else "worker hung"
            return Result(None, "", "", f"{what} on {package} {argv}", float(timeout_s))
        return Result(**answer)

    def close(self) -> None:
        """Stop the worker."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def check_clean(result: Result, prog: str) -> None:
    """The CLI property: exit 0, 1 or 2, nothing escaped, and a failure is one clear line.

    ``prog`` is ``python -m sizing`` or ``python -m runners``: a failure's last stderr line
    starts with it (argparse's and the commands' own messages both do).
    """
    assert result.escaped is None, result.escaped
    assert result.code in (0, 1, 2), (result.code, result.stderr[-2000:])
    assert "Traceback (most recent call last)" not in result.stderr, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    hostile = [line for line in lines if not line.isprintable()]
    assert not hostile, f"control characters reach the terminal: {hostile[:3]!r}"
    if result.code != 0:
        lines = result.stderr.strip().splitlines()
        assert lines, "a failure says why on stderr"
        assert lines[-1].startswith(prog), lines[-1]


if __name__ == "__main__":
    _serve()
