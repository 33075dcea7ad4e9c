"""What the runner costs: overhead per trial, and throughput against a bare wrk.

1. Overhead: a sweep of 10-second trials (no warm-up, no cooldown, so every second that is not
   wrk's measured duration is the runner's own: connecting, host facts, deploying nginx,
   ``nginx -t``, starting it, CPU sampling, parsing, storing, tearing down; pandas is imported
   before the clock starts). Goal: <= 5% of the wall time locally, <= 10% over SSH (to a test
   sshd on 127.0.0.1 started here).
2. Harness cost: the runner's RPS and a bare ``wrk`` at the same settings, measured in
   pairs on one nginx, the order alternating pair by pair (runner first, then bare first).
   The bare tool is started the way the runner starts its own: the session's own command for
   a run it does not record (the same binary, pinning, timeout and shell wrapper, on the same
   client host), less the reporter script. Goal: median ratio >= 0.95; 12 pairs by default,
   and the line says whether the median's 95% interval (order statistics) is narrower than
   5%, i.e. whether the pairs resolve the goal.
3. The same two for h2load (HTTP/2 over TLS, 16 connections x 4 streams): the local overhead
   of 10-second trials, and the runner's RPS (h2load writing its per-request log, the log's
   histogram counted on the host) over a bare ``h2load`` without a log, started the same
   way. Goals: <= 5% and median >= 0.95.

    .venv/bin/python benchmarks/bench_runner.py [--trials 3] [--pairs 12] [--only wrk|h2load|ssh]

``--only ssh`` runs only the SSH part of 1: one command's round trip over the open connection
and the overhead of a sweep to the test sshd, with the machine's load average (1 minute)
before and after.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine, save  # noqa: E402

from runners.hosts import connect  # noqa: E402
from runners.loadgen import h2load, wrk  # noqa: E402
from runners.run import open_run  # noqa: E402
from runners.sweep import Access, Plan, make_scenario, run_sweep, target_for  # noqa: E402
from tests.sshd import start_sshd  # noqa: E402


def overhead(plan: Plan, out: Path, access: Access | None = None) -> dict[str, float]:
    import pandas  # noqa: F401  (a one-time import, not a cost of each trial)

    t0 = time.perf_counter()
    df = run_sweep(plan, out, access=access, progress=None)
    wall = time.perf_counter() - t0
    load = float(df["duration_s"].sum())
    return {
        "trials": len(df),
        "wall_s": wall,
        "load_s": load,
        "overhead_pct": 100 * (wall - load) / wall,
        "per_trial_overhead_s": (wall - load) / len(df),
    }


def median_interval(ratios: list[float], level: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval of the median of ``ratios`` (order statistics, binomial).

    The k-th smallest and k-th largest, with k the largest count whose binomial tail
    ``P(X < k)`` for ``X ~ Bin(n, 1/2)`` stays within ``(1 - level) / 2``; the whole range when
    there are too few pairs for that.
    """
    n = len(ratios)
    xs = sorted(ratios)
    tail, k, cum = (1.0 - level) / 2.0, 0, 0.0
    while k < n // 2:
        cum += math.comb(n, k) / 2**n
        if cum > tail:
            break
        k += 1
    if k == 0:
        return xs[0], xs[-1]
    return xs[k - 1], xs[n - k]


def alternated(
    pairs: int, runner: Callable[[], float], bare: Callable[[], float]
) -> dict[str, object]:
    """``pairs`` runner and bare runs, the order alternating pair by pair, and their ratios."""
    ratios, runner_rps, bare_rps = [], [], []
    bare()  # warm-up for both
    for i in range(pairs):
        if i % 2 == 0:
            r = runner()
            b = bare()
        else:
            b = bare()
            r = runner()
        runner_rps.append(r)
        bare_rps.append(b)
        ratios.append(r / b)
    low, high = median_interval(ratios)
    return {
        "pairs": pairs,
        "runner_rps": runner_rps,
        "bare_rps": bare_rps,
        "ratios": ratios,
        "median_ratio": statistics.median(ratios),
        "ci95_low": low,
        "ci95_high": high,
        "resolves_5pct": high - low < RESOLVE,
    }


#: The difference the pairs must resolve: the median ratio's 95% interval narrower than this.
RESOLVE = 0.05


def bare_runner(session: Any, parse: Callable[[str], Any], seconds: int) -> Callable[[], float]:
    """The bare tool started the way the runner starts its own: the session's own command for
    a run it does not record (no reporter script, no per-request log), the same binary,
    pinning, timeout and shell wrapper, on the same client host; its RPS per run."""
    client = session.clients[0]
    load = session._load(client, 1, 16, seconds, record=False)
    argv = session._argv(client, load)

    def run() -> float:
        ((out, err, code),) = session._run_clients([argv], seconds)
        if code != 0:
            raise SystemExit(f"bare run failed ({code}): {err.strip()[:200]}")
        return float(parse(out).rps)

    run.argv = argv  # type: ignore[attr-defined]
    return run


def harness_vs_bare(out: Path, pairs: int, seconds: int) -> dict[str, object]:
    plan = Plan(
        scenario=make_scenario("static"),
        connections=(16,),
        duration_s=seconds,
        warmup_s=0,
        cooldown_s=0.0,
    )
    plan, store = open_run(plan, out, None)
    with target_for(plan, store) as session:
        session.configure(1)
        bare = bare_runner(session, wrk.parse_text, seconds)
        result = alternated(pairs, lambda: float(session.trial(1, 1, 16)["rps"]), bare)
    return {**result, "seconds": seconds, "bare_command": shlex.join(bare.argv)}  # type: ignore[attr-defined]


H2 = {"load_generator": "h2load", "http_version": "2", "streams": 4}


def h2load_vs_bare(out: Path, pairs: int, seconds: int) -> dict[str, object]:
    """Runner trials and bare h2load runs, alternately, on one nginx with the same pinning."""
    plan = Plan(
        scenario=make_scenario("static", protocol="https"),
        connections=(16,),
        duration_s=seconds,
        warmup_s=0,
        cooldown_s=0.0,
        **H2,
    )
    plan, store = open_run(plan, out, None)
    with target_for(plan, store) as session:
        session.configure(1)
        bare = bare_runner(session, h2load.parse_summary, seconds)
        result = alternated(pairs, lambda: float(session.trial(1, 1, 16)["rps"]), bare)
    return {**result, "seconds": seconds, "bare_command": shlex.join(bare.argv)}  # type: ignore[attr-defined]


def ssh_command_ms(spec: str, ssh_config: str, n: int = 20) -> float:
    """Median wall time of one trivial command over an open SSH connection [ms]."""
    host = connect(spec, ssh_config=ssh_config)
    try:
        walls = []
        for _ in range(n):
            t0 = time.perf_counter()
            host.run(["true"])
            walls.append(1000 * (time.perf_counter() - t0))
    finally:
        host.close()
    return statistics.median(walls)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=3, help="10-second trials per sweep")
    parser.add_argument(
        "--pairs", type=int, default=12, help="runner/bare pairs, the order alternating"
    )
    parser.add_argument("--pair-seconds", type=int, default=5)
    parser.add_argument(
        "--only",
        choices=("wrk", "h2load", "ssh"),
        help="one load generator's part, or only the SSH overhead",
    )
    args = parser.parse_args()
    conns = tuple(8 * 2**i for i in range(args.trials))
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        if args.only == "ssh":
            ssh_part(results, base, conns)
        elif args.only != "h2load":
            wrk_part(results, base, conns, args)
        if args.only in (None, "h2load"):
            h2_plan = Plan(
                scenario=make_scenario("static", protocol="https"),
                connections=tuple(c // 2 for c in conns),
                duration_s=10,
                warmup_s=0,
                cooldown_s=0.0,
                **H2,
            )
            results["local_h2load"] = overhead(h2_plan, base / "local-h2load")
            results["harness_h2load"] = h2load_vs_bare(
                base / "pairs-h2load", args.pairs, args.pair_seconds
            )
    save("runner" if args.only is None else f"runner-{args.only}", results)
    print(f"machine: {machine()}")
    if args.only == "ssh":
        report_ssh(results)
    elif args.only != "h2load":
        report_wrk(results)
    if args.only in (None, "h2load"):
        loc, h = results["local_h2load"], results["harness_h2load"]
        assert isinstance(loc, dict) and isinstance(h, dict)
        print(
            f"overhead local h2load (HTTP/2 over TLS): {loc['overhead_pct']:.2f}% of "
            f"{loc['wall_s']:.1f} s wall ({loc['trials']} x 10 s trials, "
            f"{loc['per_trial_overhead_s']:.2f} s each) goal <= 5%: "
            f"{'ok' if loc['overhead_pct'] <= 5.0 else 'MISSED'}"
        )
        print(pairs_line("h2load", h))
    return 0


def wrk_part(results: dict[str, object], base: Path, conns: tuple[int, ...], args) -> None:
    plan = Plan(connections=conns, duration_s=10, warmup_s=0, cooldown_s=0.0)
    results["local"] = overhead(plan, base / "local")
    ssh_part(results, base, conns)
    results["harness"] = harness_vs_bare(base / "pairs", args.pairs, args.pair_seconds)


def ssh_part(results: dict[str, object], base: Path, conns: tuple[int, ...]) -> None:
    """One SSH command's round trip, and a sweep's overhead, to a test sshd on 127.0.0.1."""
    results["load_average_before"] = os.getloadavg()[0]
    sshd = start_sshd(base / "sshd")
    try:
        cfg = sshd.client_config(base)
        results["ssh_command_ms"] = ssh_command_ms(sshd.spec, str(cfg))
        ssh_plan = Plan(
            server=sshd.spec,
            clients=(sshd.spec,),
            connections=conns,
            duration_s=10,
            warmup_s=0,
            cooldown_s=0.0,
        )
        results["ssh"] = overhead(ssh_plan, base / "ssh", Access(ssh_config=str(cfg)))
    finally:
        sshd.stop()
    results["load_average_after"] = os.getloadavg()[0]


def report_ssh(results: dict[str, object]) -> None:
    ssh = results["ssh"]
    assert isinstance(ssh, dict)
    print(
        f"one SSH command (true) through the runner's host: median "
        f"{results['ssh_command_ms']:.1f} ms over 20"
    )
    print(overhead_line("ssh", ssh, 10.0))
    print(
        f"load average (1 min): {results['load_average_before']:.2f} before, "
        f"{results['load_average_after']:.2f} after"
    )


def overhead_line(name: str, r: dict[str, Any], goal: float) -> str:
    """A sweep's overhead against its goal [%]."""
    return (
        f"overhead {name}: {r['overhead_pct']:.2f}% of {r['wall_s']:.1f} s wall "
        f"({r['trials']} x 10 s trials, {r['per_trial_overhead_s']:.2f} s each) "
        f"goal <= {goal:g}%: {'ok' if r['overhead_pct'] <= goal else 'MISSED'}"
    )


def report_wrk(results: dict[str, object]) -> None:
    loc, h = results["local"], results["harness"]
    assert isinstance(loc, dict) and isinstance(h, dict)
    report_ssh(results)
    print(overhead_line("local", loc, 5.0))
    print(pairs_line("wrk", h))


def pairs_line(tool: str, h: dict[str, Any]) -> str:
    """The runner/bare verdict: the median ratio, its 95% interval and what it resolves."""
    resolved = (
        f"resolves {RESOLVE:.0%}"
        if h["resolves_5pct"]
        else f"does NOT resolve {RESOLVE:.0%}: run more --pairs"
    )
    return (
        f"runner/bare {tool} RPS: median {h['median_ratio']:.3f} over {h['pairs']} pairs "
        f"(alternated order; 95% CI {h['ci95_low']:.3f}-{h['ci95_high']:.3f}, {resolved}; "
        f"ratios {', '.join(f'{x:.3f}' for x in h['ratios'])}) goal >= 0.95: "
        f"{'ok' if h['median_ratio'] >= 0.95 else 'MISSED'}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
