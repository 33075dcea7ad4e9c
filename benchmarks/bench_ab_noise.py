"""Where ``runners ab``'s per-pair noise comes from: two nginx of one configuration, paired.

Two private nginx (A and B, the same static 1 KB configuration as ``runners``' own, one worker
pinned to CPU 0) are loaded by ``wrk -t1 -c16`` pinned to CPU 1, for ``--rounds`` pairs of
``--seconds`` trials. Per trial, nginx's CPU time per request [us] from
``/proc/PID/schedstat`` (ns) and, beside it, from ``/proc/PID/stat`` (clock ticks). Per pair,
B/A; printed: the ratios, their median and sd (the per-pair spread ``runners ab`` judges),
and the same sd from clock ticks.

- ``--schedule together``: both trials of a pair at the same time (two wrk side by side);
  ``alternate``: A then B, B then A, ...
- ``--restart``: fresh nginx for both before each pair after the first.
- ``--no-aslr``: nginx started under ``setarch -R`` (no address-space randomisation).

Loopback only; both nginx are stopped and their folder removed at the end.

    .venv/bin/python benchmarks/bench_ab_noise.py [--schedule together] [--restart]
        [--no-aslr] [--rounds 12] [--seconds 1]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine  # noqa: E402

from runners.deploy.conf import ConfTarget, render_conf  # noqa: E402
from runners.scenario import make_scenario  # noqa: E402


@dataclass
class Nginx:
    """One private nginx: its folder, port, master and worker pids."""

    prefix: Path
    port: int
    master: int
    worker: int


def start(prefix: Path, no_aslr: bool) -> Nginx:
    """Write the configuration and body under ``prefix`` and start nginx there."""
    (prefix / "html").mkdir(parents=True, exist_ok=True)
    for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / "tmp" / d).mkdir(parents=True, exist_ok=True)
    (prefix / "html" / "body.bin").write_bytes(os.urandom(1024))
    port = random.randrange(20000, 30000)
    conf = prefix / "nginx.conf"
    conf.write_text(
        render_conf(
            make_scenario("static", protocol="http"),
            ConfTarget(str(prefix), "127.0.0.1", [port], [0]),
        )
    )
    (prefix / "nginx.pid").unlink(missing_ok=True)
    pre = ["setarch", "-R"] if no_aslr else []
    argv = [*pre, "nginx", "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "error.log")]
    subprocess.run(argv, check=True)
    pid_file = prefix / "nginx.pid"
    for _ in range(250):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        time.sleep(0.02)
    master = int(pid_file.read_text())
    workers: list[str] = []
    for _ in range(250):
        workers = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if workers:
            break
        time.sleep(0.02)
    return Nginx(prefix, port, master, int(workers[0]))


def stop(n: Nginx) -> None:
    """Stop ``n`` and wait for its master to exit (at most 5 s)."""
    argv = ["nginx", "-p", str(n.prefix), "-c", str(n.prefix / "nginx.conf"), "-s", "stop"]
    subprocess.run(argv, stderr=subprocess.DEVNULL, check=False)
    for _ in range(250):
        if not Path(f"/proc/{n.master}").exists():
            return
        time.sleep(0.02)


def cpu(n: Nginx) -> tuple[float, float]:
    """CPU time [s] of the master and worker: from schedstat (ns), and from stat (ticks)."""
    ns = ticks = 0
    for pid in (n.master, n.worker):
        ns += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        f = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        ticks += int(f[11]) + int(f[12])
    return ns / 1e9, ticks / os.sysconf("SC_CLK_TCK")


def load(ns: list[Nginx], seconds: int) -> list[tuple[float, float]]:
    """Load each of ``ns`` at once with its own wrk; CPU us per request (schedstat, ticks)."""
    before = [cpu(n) for n in ns]
    wrk = ["taskset", "-c", "1", "wrk", "-t1", "-c16", f"-d{seconds}s"]
    procs = [
        subprocess.Popen(
            [*wrk, f"http://127.0.0.1:{n.port}/body.bin"], stdout=subprocess.PIPE, text=True
        )
        for n in ns
    ]
    outs = [p.communicate()[0] for p in procs]
    after = [cpu(n) for n in ns]
    costs = []
    for b, a, out in zip(before, after, outs, strict=True):
        m = re.search(r"(\d+) requests in", out)
        if not m:
            raise SystemExit(f"wrk gave no request count: {out.strip()[-200:]}")
        requests = int(m.group(1))
        costs.append((1e6 * (a[0] - b[0]) / requests, 1e6 * (a[1] - b[1]) / requests))
    return costs


def main(argv: list[str] | None = None) -> int:
    """Measure the pairs and print their spread."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schedule", choices=("together", "alternate"), default="together")
    ap.add_argument("--restart", action="store_true")
    ap.add_argument("--no-aslr", action="store_true")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--seconds", type=int, default=1)
    args = ap.parse_args(argv)
    if not shutil.which("nginx") or not shutil.which("wrk") or (os.cpu_count() or 1) < 2:
        print("bench_ab_noise: needs nginx, wrk and 2 CPUs", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="bench-ab-noise-"))
    sides: list[Nginx] = []
    pairs: list[tuple[tuple[float, float], tuple[float, float]]] = []
    try:
        for side in ("a", "b"):  # one at a time: a failed start still stops the one before
            sides.append(start(base / side, args.no_aslr))
        for r in range(args.rounds):
            if args.restart and r > 0:
                for i, n in enumerate(sides):
                    stop(n)
                    sides[i] = start(n.prefix, args.no_aslr)
            if args.schedule == "together":
                a, b = load(sides, args.seconds)
            else:
                first, second = (0, 1) if r % 2 == 0 else (1, 0)
                got = {first: load([sides[first]], args.seconds)[0]}
                time.sleep(0.2)
                got[second] = load([sides[second]], args.seconds)[0]
                a, b = got[0], got[1]
            pairs.append((a, b))
            time.sleep(0.2)
    finally:
        for n in sides:
            stop(n)
        shutil.rmtree(base, ignore_errors=True)
    ns_ratios = [b[0] / a[0] for a, b in pairs]
    tick_ratios = [b[1] / a[1] for a, b in pairs if a[1] > 0]
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f}")
    print(
        f"schedule {args.schedule}, restart {args.restart}, ASLR "
        f"{'off' if args.no_aslr else 'on'}, {args.rounds} pairs of {args.seconds} s"
    )
    print(f"A cost: {statistics.mean(a[0] for a, _ in pairs):.2f} us/request (schedstat)")
    print("per-pair B/A: " + " ".join(f"{v:.3f}" for v in ns_ratios))
    print(
        f"median {statistics.median(ns_ratios):.4f}, per-pair sd "
        f"{statistics.stdev(ns_ratios):.4f} (schedstat ns), "
        f"{statistics.stdev(tick_ratios):.4f} (clock ticks)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
