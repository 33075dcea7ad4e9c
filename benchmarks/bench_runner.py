"""What the runner costs: overhead per trial, and throughput against a bare wrk.

1. Overhead: a sweep of 10-second trials (no warm-up, no cooldown, so every second that is not
   wrk's measured duration is the runner's own: connecting, host facts, deploying nginx,
   ``nginx -t``, starting it, CPU sampling, parsing, storing, tearing down; pandas is imported
   before the clock starts). Goal: <= 5% of the wall time locally, <= 10% over SSH (to a test
   sshd on 127.0.0.1 started here).
2. Harness cost: the runner's RPS and a bare ``wrk`` at the same settings (same nginx, same
   pinning), measured alternately in one run. Goal: median ratio >= 0.95.
3. The same two for h2load (HTTP/2 over TLS, 16 connections x 4 streams): the local overhead
   of 10-second trials, and the runner's RPS (h2load writing its per-request log, the log's
   histogram counted on the host) over a bare ``h2load`` without a log, same nginx and
   pinning, pairs alternated in order. Goals: <= 5% and median >= 0.95.

    .venv/bin/python benchmarks/bench_runner.py [--trials 3] [--pairs 5] [--only wrk|h2load]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def harness_vs_bare(out: Path, pairs: int, seconds: int) -> dict[str, object]:
    plan = Plan(
        scenario=make_scenario("static"),
        connections=(16,),
        duration_s=seconds,
        warmup_s=0,
        cooldown_s=0.0,
    )
    plan, store = open_run(plan, out, None)
    ratios, runner_rps, bare_rps = [], [], []
    with target_for(plan, store) as session:
        session.configure(1)
        client = session.clients[0]
        bare = wrk.command(
            session.url(), threads=1, connections=16, duration_s=seconds, cpus=client.cpus
        )
        subprocess.run(bare, capture_output=True, check=True)  # warm-up for both
        for _ in range(pairs):
            row = session.trial(1, 1, 16)
            b = wrk.parse_text(
                subprocess.run(bare, capture_output=True, text=True, check=True).stdout
            )
            runner_rps.append(row["rps"])
            bare_rps.append(b.rps)
            ratios.append(row["rps"] / b.rps)
    return {
        "pairs": pairs,
        "seconds": seconds,
        "runner_rps": runner_rps,
        "bare_rps": bare_rps,
        "ratios": ratios,
        "median_ratio": statistics.median(ratios),
        "bare_command": " ".join(bare),
    }


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
    ratios, runner_rps, bare_rps = [], [], []
    with target_for(plan, store) as session:
        session.configure(1)
        client = session.clients[0]
        bare = h2load.command(
            session.url(), connections=16, streams=4, duration_s=seconds, cpus=client.cpus
        )

        def run_bare() -> float:
            out = subprocess.run(bare, capture_output=True, text=True, check=True).stdout
            return h2load.parse_summary(out).rps

        run_bare()  # warm-up for both
        for i in range(pairs):
            if i % 2 == 0:
                r, b = session.trial(1, 1, 16)["rps"], run_bare()
            else:
                b = run_bare()
                r = session.trial(1, 1, 16)["rps"]
            runner_rps.append(r)
            bare_rps.append(b)
            ratios.append(r / b)
    return {
        "pairs": pairs,
        "seconds": seconds,
        "runner_rps": runner_rps,
        "bare_rps": bare_rps,
        "ratios": ratios,
        "median_ratio": statistics.median(ratios),
        "bare_command": " ".join(bare),
    }


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
    parser.add_argument("--pairs", type=int, default=5, help="runner/bare pairs")
    parser.add_argument("--pair-seconds", type=int, default=5)
    parser.add_argument("--only", choices=("wrk", "h2load"), help="one load generator's part")
    args = parser.parse_args()
    conns = tuple(8 * 2**i for i in range(args.trials))
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        if args.only != "h2load":
            wrk_part(results, base, conns, args)
        if args.only != "wrk":
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
    if args.only != "h2load":
        report_wrk(results)
    if args.only != "wrk":
        loc, h = results["local_h2load"], results["harness_h2load"]
        assert isinstance(loc, dict) and isinstance(h, dict)
        print(
            f"overhead local h2load (HTTP/2 over TLS): {loc['overhead_pct']:.2f}% of "
            f"{loc['wall_s']:.1f} s wall ({loc['trials']} x 10 s trials, "
            f"{loc['per_trial_overhead_s']:.2f} s each) goal <= 5%: "
            f"{'ok' if loc['overhead_pct'] <= 5.0 else 'MISSED'}"
        )
        print(
            f"runner/bare h2load RPS: median {h['median_ratio']:.3f} over {h['pairs']} pairs "
            f"(ratios {', '.join(f'{x:.3f}' for x in h['ratios'])}) goal >= 0.95: "
            f"{'ok' if h['median_ratio'] >= 0.95 else 'MISSED'}"
        )
    return 0


def wrk_part(results: dict[str, object], base: Path, conns: tuple[int, ...], args) -> None:
    plan = Plan(connections=conns, duration_s=10, warmup_s=0, cooldown_s=0.0)
    results["local"] = overhead(plan, base / "local")
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
    results["harness"] = harness_vs_bare(base / "pairs", args.pairs, args.pair_seconds)


def report_wrk(results: dict[str, object]) -> None:
    loc, ssh, h = results["local"], results["ssh"], results["harness"]
    assert isinstance(loc, dict) and isinstance(ssh, dict) and isinstance(h, dict)
    print(
        f"one SSH command (sh -c true) through the runner's host: median "
        f"{results['ssh_command_ms']:.0f} ms over 20"
    )
    for name, r, goal in (("local", loc, 5.0), ("ssh", ssh, 10.0)):
        print(
            f"overhead {name}: {r['overhead_pct']:.2f}% of {r['wall_s']:.1f} s wall "
            f"({r['trials']} x 10 s trials, {r['per_trial_overhead_s']:.2f} s each) "
            f"goal <= {goal:g}%: {'ok' if r['overhead_pct'] <= goal else 'MISSED'}"
        )
    print(
        f"runner/bare wrk RPS: median {h['median_ratio']:.3f} over {h['pairs']} pairs "
        f"(ratios {', '.join(f'{x:.3f}' for x in h['ratios'])}) goal >= 0.95: "
        f"{'ok' if h['median_ratio'] >= 0.95 else 'MISSED'}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
