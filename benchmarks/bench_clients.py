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

Where the time goes is split further: the storing on the trial's own path (the row, the
histograms and ``run.json``, encoded, written and fsynced: ``store_s``), and the longest
wrk's own run past D (its ``duration_us``: ``wrk_beyond_s``) against the rest of the
clients' run past D (wrk's start-up, its report, the shell's stamps: ``outside_wrk_s``).

``--against DIR`` measures other code (a checkout of an older commit, say) and this tree's
alternately, ``--rounds`` times each, in one session: each round runs this benchmark on
DIR's packages (``BENCH_CLIENTS_CODE=DIR``), then on this tree's, with the same options.

    .venv/bin/python benchmarks/bench_clients.py [--clients 8] [--trials 3] [--duration 10]
    .venv/bin/python benchmarks/bench_clients.py --against /tmp/old --rounds 4
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Where the code under test is imported from: this tree, or another one (`alternate`).
CODE = Path(os.environ.get("BENCH_CLIENTS_CODE") or ROOT)
sys.path.insert(0, str(CODE))

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
    spans, reasons, durations = [], [], []
    spent = timers(run)
    try:
        t0 = time.perf_counter()
        with target_for(plan, run, log=io.StringIO()) as session:
            session_s = time.perf_counter() - t0
            for _ in range(args.trials):
                t = time.time()
                row = session.trial(1, 1, args.connections)
                spans.append((t, time.time()))
                reasons.append(str(row.get("invalid_reason") or ""))
                durations.append(float(row["duration_s"]))
        windows = run.meta.get("windows", [])
    finally:
        run.close()
    walls = [b - a for a, b in spans]
    extra = [w - args.duration for w in walls]
    share = statistics.median(extra) / statistics.median(walls)
    return {
        **parts(spans, windows, args.duration),
        **storing(spans, spent),
        **wrk_parts(spans, windows, durations, args.duration),
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


def timers(run: Any) -> list[tuple[str, float, float]]:
    """Time what a run spends storing: (what, when it started, seconds) per call.

    Wraps the run folder's ``append`` and ``save_meta`` (``store``).
    """
    spent: list[tuple[str, float, float]] = []

    def wrap(owner: Any, name: str, kind: str) -> None:
        inner: Callable[..., Any] = getattr(owner, name)

        def timed(*a: Any, **k: Any) -> Any:
            t0, c0 = time.time(), time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                spent.append((kind, t0, time.perf_counter() - c0))

        setattr(owner, name, timed)

    wrap(run.folder, "append", "store")
    wrap(run.folder, "save_meta", "store")
    return spent


def storing(
    spans: list[tuple[float, float]], spent: list[tuple[str, float, float]]
) -> dict[str, float]:
    """Median per trial [s] of the storing on its path."""
    per = [sum(s for k, t, s in spent if k == "store" and a <= t <= b) for a, b in spans]
    return {"store_s": round(statistics.median(per), 3)}


def wrk_parts(
    spans: list[tuple[float, float]],
    windows: list[dict[str, Any]],
    durations: list[float],
    duration_s: float,
) -> dict[str, float]:
    """The longest wrk's own run past D, and the rest of the clients' run past D [s]."""
    if not windows:
        return {}
    own = [d - duration_s for d in durations]
    runs = [max(c["end_s"] - c["start_s"] for c in w["clients"]) - duration_s for w in windows]
    return {
        "wrk_beyond_s": round(statistics.median(own), 3),
        "outside_wrk_s": round(statistics.median(r - o for r, o in zip(runs, own, strict=True)), 3),
    }


def alternate(args: Any) -> int:
    """Run ``args.against``'s benchmark and this one alternately; print each round."""
    other = Path(args.against).resolve()
    if not (other / "runners" / "session.py").is_file():
        print(f"bench_clients: {other} holds no runners package", file=sys.stderr)
        return 2
    same = [f"--{k}={getattr(args, k)}" for k in ("clients", "trials", "duration", "connections")]
    rounds: list[dict[str, Any]] = []
    for n in range(args.rounds):
        for name, code in (("old", other), ("new", ROOT)):
            load0 = os.getloadavg()[0]
            p = subprocess.run(
                [sys.executable, __file__, *same],
                capture_output=True,
                text=True,
                env={**os.environ, "BENCH_CLIENTS_CODE": str(code)},
            )
            if p.returncode != 0:
                print(f"round {n + 1} {name} failed:\n{p.stdout}{p.stderr}", file=sys.stderr)
                return 1
            result = json.loads((ROOT / "benchmarks" / "results" / "clients.json").read_text())
            many = result["many_clients"]
            rounds.append({"round": n + 1, "code": name, **many, "load_before": round(load0, 2)})
            print(
                f"round {n + 1} {name}: {many['per_trial_overhead_s']:.3f} s per trial = "
                f"{many['per_trial_overhead_pct']:.2f}%, coordinator "
                f"{many.get('coordinator_s', 0):.3f} s = {many.get('coordinator_pct', 0):.2f}%, "
                f"after {many.get('after_s', 0):.3f} s, store {many.get('store_s', 'n/a')}, "
                f"load average {load0:.2f}",
                flush=True,
            )
    for name in ("old", "new"):
        mine = [r for r in rounds if r["code"] == name]
        print(
            f"{name}: median over {len(mine)} rounds: "
            f"{statistics.median(r['per_trial_overhead_pct'] for r in mine):.2f}% in total, "
            f"{statistics.median(r.get('coordinator_pct', 0) for r in mine):.2f}% coordinator"
        )
    print(f"saved {save('clients_alternated', {'rounds': rounds, 'options': same})}")
    return 0


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
    ap.add_argument("--against", help="a tree with other code to alternate with this one")
    ap.add_argument("--rounds", type=int, default=4, help="rounds of each with --against")
    args = ap.parse_args()
    if args.against:
        return alternate(args)
    print(machine(), f"code under test: {CODE}")
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
    names = ("before_start_s", "start_skew_s", "run_beyond_s", "wrk_beyond_s", "outside_wrk_s")
    names += ("after_s", "store_s")
    split = ", ".join(f"{k} {many[k]:.3f}" for k in names)
    result = {
        "duration_s": args.duration,
        "one_client": one,
        "many_clients": many,
        "coordination_added_per_trial_s": round(added, 3),
        "clock_offsets_once_s": round(clock_s, 3),
        "load_average_1min": [round(load0, 2), round(load1, 2)],
        "code": str(CODE),
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
