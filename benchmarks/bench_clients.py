"""Coordinating many clients: the overhead per trial at 8 clients in network namespaces.

N clients (default 8), each in its own network namespace on one bridge, load nginx in a
server namespace (`tests.netns`). A session is opened once (host facts, each client's clock
offset, nginx deployed), then T trials of D seconds, no warm-up and no cooldown, are timed
one by one around `Session.trial`: the nginx CPU samples, the common start and each client's
wait for it, the clients' run side by side, parsing, the window checks, the per-client
progress lines, the row and ``run.json``. The same is done with one client in the same
set-up. Reported per trial: wall - D (what the runner adds to the load) and its share of the
wall, for 1 and for N clients; the difference is what coordinating N clients adds. The
one-off cost of the session (facts, offsets, deployment) and of the N clock offsets alone
(3 reads of ``date`` each) are reported apart: they are paid once per run, not per trial.
Goal: (wall - D) / wall <= 5% per trial at 8 clients. Needs root (namespaces).

    .venv/bin/python benchmarks/bench_clients.py [--clients 8] [--trials 3] [--duration 10]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine, save  # noqa: E402

from runners.hosts import HostSpec, LocalHost  # noqa: E402
from runners.run import open_run  # noqa: E402
from runners.sweep import Plan, make_scenario, target_for  # noqa: E402
from runners.window import clock_offset  # noqa: E402
from tests import netns  # noqa: E402


def timed_trials(clients: tuple[str, ...], server: str, args: Any, out: Path) -> dict[str, Any]:
    """Open one session on ``clients``; time it and ``args.trials`` trials [s]."""
    plan = Plan(
        scenario=make_scenario("static", protocol="http"),
        server=server,
        clients=clients,
        connections=(args.connections,),
        duration_s=args.duration,
        warmup_s=0,
        cooldown_s=0.0,
        sla_p99_ms=10_000.0,
    )
    plan, run = open_run(plan, out, None)
    spans, reasons = [], []
    try:
        t0 = time.perf_counter()
        with target_for(plan, run, log=io.StringIO()) as session:
            session_s = time.perf_counter() - t0
            for _ in range(args.trials):
                t = time.time()
                row = session.trial(1, 1, args.connections)
                spans.append((t, time.time()))
                reasons.append(str(row.get("invalid_reason") or ""))
        windows = run.meta.get("windows", [])
    finally:
        run.close()
    walls = [b - a for a, b in spans]
    extra = [w - args.duration for w in walls]
    share = statistics.median(extra) / statistics.median(walls)
    return {
        **parts(spans, windows, args.duration),
        "clients": len(clients),
        "session_open_s": round(session_s, 3),
        "trial_wall_s": [round(w, 3) for w in walls],
        "per_trial_overhead_s": round(statistics.median(extra), 3),
        "per_trial_overhead_pct": round(100 * share, 2),
        "invalid_reasons": reasons,
    }


def parts(
    spans: list[tuple[float, float]], windows: list[dict[str, Any]], duration_s: float
) -> dict[str, float]:
    """Where a multi-client trial's time goes, medians [s] (empty for one client).

    ``before_start``: from the trial's call to the common start (nginx CPU sample, the lead);
    ``start_skew``: the last client's start after the common start; ``run_beyond``: the
    longest client's run (stamps) beyond the duration (its start-up and report); ``after``:
    from the last client's end to the trial's return (second sample, parse, storing);
    ``coordinator``: before + skew + after, and its share of a trial whose longest client
    ran exactly the duration [%].
    """
    if not windows:
        return {}
    rows = []
    for (t0, t1), w in zip(spans, windows, strict=True):
        cs, clients = float(w["common_start_s"]), w["clients"]
        rows.append(
            (
                cs - t0,
                max(c["start_s"] for c in clients) - cs,
                max(c["end_s"] - c["start_s"] for c in clients) - duration_s,
                t1 - max(c["end_s"] for c in clients),
            )
        )
    names = ("before_start_s", "start_skew_s", "run_beyond_s", "after_s")
    out = {n: round(statistics.median(r[i] for r in rows), 3) for i, n in enumerate(names)}
    # The coordinator's own part: the trial's wall less its longest client's run, i.e. the
    # overhead with the clients' run matched to the duration (their start-up and report,
    # eight copies on the same CPUs here, are the load generators', not the coordinator's).
    own = statistics.median(r[0] + r[1] + r[3] for r in rows)
    out["coordinator_s"] = round(own, 3)
    out["coordinator_pct"] = round(100 * own / (duration_s + own), 2)
    return out


def offsets_s(clients: tuple[str, ...]) -> float:
    """Seconds to measure every client's clock offset once (as a session does)."""
    hosts = [LocalHost(HostSpec.parse(c)) for c in clients]
    t0 = time.perf_counter()
    for host in hosts:
        clock_offset(lambda h=host: h.run(["date", "+%s.%N"], timeout=30).stdout)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="trial length [s]")
    ap.add_argument("--connections", type=int, default=2, help="wrk connections per client")
    args = ap.parse_args()
    print(machine())
    load0 = os.getloadavg()[0]
    try:
        with netns.bridge("bcl", args.clients, subnet="10.231.13") as made:
            server = f"netns:{made.server}"
            with tempfile.TemporaryDirectory() as tmp:
                one = timed_trials(made.client_hosts[:1], server, args, Path(tmp))
                many = timed_trials(made.client_hosts, server, args, Path(tmp))
            clock_s = offsets_s(made.client_hosts)
    except netns.Unavailable as exc:
        print(f"bench_clients: {exc}", file=sys.stderr)
        return 2
    load1 = os.getloadavg()[0]
    added = many["per_trial_overhead_s"] - one["per_trial_overhead_s"]
    split = ", ".join(
        f"{k} {many[k]:.3f}" for k in ("before_start_s", "start_skew_s", "run_beyond_s", "after_s")
    )
    result = {
        "duration_s": args.duration,
        "one_client": one,
        "many_clients": many,
        "coordination_added_per_trial_s": round(added, 3),
        "clock_offsets_once_s": round(clock_s, 3),
        "load_average_1min": [round(load0, 2), round(load1, 2)],
        "goal": "per-trial (wall - duration) / wall <= 5% at 8 clients",
        "met": many["per_trial_overhead_pct"] <= 5.0,
    }
    for r in (one, many):
        print(
            f"{r['clients']} client(s): trial wall {r['trial_wall_s']} s for {args.duration} s "
            f"of load: {r['per_trial_overhead_s']:.3f} s per trial = "
            f"{r['per_trial_overhead_pct']:.2f}% (session opened in {r['session_open_s']:.2f} s)"
        )
    print(
        f"{args.clients} clients, median per trial: {split}\n"
        f"the coordinator's own part (the clients' run matched to {args.duration} s): "
        f"{many.get('coordinator_s', 0):.3f} s = {many.get('coordinator_pct', 0):.2f}%\n"
        f"coordinating {args.clients} clients adds {added:+.3f} s per trial; their clock "
        f"offsets take {clock_s:.3f} s once; load average {load0:.2f} -> {load1:.2f}; "
        f"goal <= 5%: {'met' if result['met'] else 'NOT met'}"
    )
    print(f"saved {save('clients', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
