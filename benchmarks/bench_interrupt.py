"""How soon does Ctrl-C take effect during a trial? The time to a quiet machine and to exit.

``--repeats`` times each, ``python -m runners sweep`` (one client: the trial is one command
of the main thread) and ``python -m runners ab`` (a pair's two trials in threads) are started
with 60 s trials on loopback; once the load generator runs, SIGINT is sent. Measured from the
signal [s]: until no load generator of the command runs (their work folders are in a private
``$TMPDIR``), and until the command has exited (nginx stopped, folders removed, the message
printed). Before the fix both were the rest of the trial (up to 60 s). Prints each and the
median and worst per command, with the load average. With ``--ssh``, also ``sweep-ssh``: the
sweep with its server and client over SSH, to a throw-away sshd on 127.0.0.1 (the tests' own).

    .venv/bin/python benchmarks/bench_interrupt.py [--repeats 5] [--ssh]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine  # noqa: E402

COMMANDS = {
    "sweep": ["sweep", "--connections", "2", "--duration", "60s", "--warmup", "0"],
    "ab": ["ab", "--ab-directive", "gzip on;", "--connections", "2", "--duration", "60s"],
}


def generators(tmp: Path) -> list[int]:
    """Pids whose current folder is a client work folder under ``tmp``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(d / "cwd").startswith(f"{tmp}/nginx-sizing-load."):
                    out.append(int(d.name))
    return out


def once(name: str) -> tuple[float, float]:
    """One interrupted command: seconds from SIGINT to no load generator, and to its exit."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-int-") as out,
        tempfile.TemporaryDirectory(prefix="bench-int-tmp-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        os.chmod(tmp, 0o755)
        argv = COMMANDS[name] if name in COMMANDS else _over_ssh(stack, Path(out), tmp)
        env = {**os.environ, "TMPDIR": tmp, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "runners", *argv, "--out", out, "--quiet"],
            env=env,
            cwd=ROOT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not generators(Path(tmp)):
            if proc.poll() is not None:
                raise SystemExit(f"runners {name} exited {proc.returncode} before its load")
            time.sleep(0.02)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        quiet = None
        while proc.poll() is None or quiet is None:
            if quiet is None and not generators(Path(tmp)):
                quiet = time.monotonic() - t0
            time.sleep(0.01)
        return quiet, time.monotonic() - t0


def _over_ssh(stack: contextlib.ExitStack, out: Path, tmp: str) -> list[str]:
    """The sweep's argv to a throw-away sshd (stopped with ``stack``) whose sessions use ``tmp``."""
    from tests.sshd import start_sshd

    server = start_sshd(out / "sshd", extra=f"SetEnv TMPDIR={tmp}\n")
    stack.callback(server.stop)
    cfg = server.client_config(out / "sshd")
    spec = ["--server", server.spec, "--client", server.spec, "--ssh-config", str(cfg)]
    return [*COMMANDS["sweep"], *spec]


def main(argv: list[str] | None = None) -> int:
    """Interrupt each command ``--repeats`` times; print the times."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ssh", action="store_true", help="also the sweep over SSH (sweep-ssh)")
    ap.add_argument("--only", choices=[*COMMANDS, "sweep-ssh"], help="this command alone")
    args = ap.parse_args(argv)
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} at start")
    names = [args.only] if args.only else [*COMMANDS, *(["sweep-ssh"] if args.ssh else [])]
    for name in names:
        quiet, gone = [], []
        for _ in range(args.repeats):
            q, g = once(name)
            quiet.append(q)
            gone.append(g)
            print(f"{name}: load stopped {q:.2f} s, exited {g:.2f} s after Ctrl-C", flush=True)
        print(
            f"{name}: load stopped median {statistics.median(quiet):.2f} s (worst "
            f"{max(quiet):.2f}), exited median {statistics.median(gone):.2f} s (worst "
            f"{max(gone):.2f}); load average {os.getloadavg()[0]:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
