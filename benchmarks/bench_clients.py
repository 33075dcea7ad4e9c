"""Coordinating many clients: the overhead per trial at 8 clients in network namespaces.

N clients (default 8), each in its own network namespace on one bridge, load nginx in a
server namespace (`tests.netns`). A session is opened once (host facts, each client's clock
offset, nginx deployed), then T trials of D seconds, no warm-up and no cooldown, are timed
one by one around `Session.trial`. The same is done with one client in the same set-up.
Goal: (wall - D) / wall <= 5% per trial at 8 clients. Needs root (namespaces).

Each 8-client trial's wall is split into named parts that add up to it (`PARTS`, from the
calls the benchmark times and the clients' stamps in ``run.json``), each printed in seconds
and as a share of the wall: the clock check (offsets read during the trial), the setup, the
start lead, the load tool's start-up past the common start, the window (D), the load tool's
run past the window and its report, nginx's second CPU sample, the collection (the last
output parsed), the merge, the store, and the rest. The coordinator's parts and the load
tools' are summed apart; the load tools' (eight wrk start-ups and reports on the CPU nginx
leaves them here) run side by side on separate client machines. For a machine with one core
per client, the coordinator's parts plus one client's load tool alone (its command's time
past D, in the one-client trials) are printed too. The N clock offsets (3 reads of ``date``
each) are timed apart: a run reads them once, not per trial.

``--against DIR`` measures other code (a worktree of an older commit, say) and this tree's
alternately, ``--rounds`` times each, in one session: each round runs this benchmark on
DIR's packages (``BENCH_CLIENTS_CODE=DIR``), then on this tree's, with the same options.

    .venv/bin/python benchmarks/bench_clients.py [--clients 8] [--trials 3] [--duration 10]
    .venv/bin/python benchmarks/bench_clients.py --against /tmp/old --rounds 4
"""

from __future__ import annotations

import argparse
import io
import json
import math
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

#: Where a multi-client trial's wall time goes, in order (`decompose`), and whose part it is.
PARTS = (
    ("clock_check_s", "clock check (offsets read during the trial)", "coordinator"),
    ("setup_s", "setup (the trial's call to the start being set)", "coordinator"),
    ("lead_s", "start lead (the start being set to the common start)", "coordinator"),
    ("startup_past_start_s", "load tool start-up past the common start", "load tool"),
    ("window_s", "the window (the trial's duration)", "window"),
    ("run_past_window_s", "load tool run past the window (to its END stamp)", "load tool"),
    ("report_s", "load tool report (END stamp to its output arriving)", "load tool"),
    ("sample_s", "nginx's second CPU sample (past the last parse)", "coordinator"),
    ("collection_s", "collection (the last output's parse)", "coordinator"),
    ("merge_s", "merge (the clients' histograms summed)", "coordinator"),
    ("store_s", "store (row, histograms, run.json, fsynced)", "coordinator"),
    ("rest_s", "the rest (judging, window checks, progress lines)", "coordinator"),
)

#: (what, start, end) of each timed call, on this machine's clock [s since the epoch].
EVENTS: list[tuple[str, float, float]] = []


def probe(owner: Any, name: str, kind: str, keep: Callable[[Any], Any] | None = None) -> None:
    """Record each call of ``owner.name`` in `EVENTS` as ``kind`` (``keep``: from its answer)."""
    inner: Callable[..., Any] = getattr(owner, name)

    def timed(*a: Any, **k: Any) -> Any:
        t0 = time.time()
        out = inner(*a, **k)
        EVENTS.append((kind if keep is None else f"{kind}:{keep(out)}", t0, time.time()))
        return out

    setattr(owner, name, timed)


def install_probes() -> None:
    """Time the calls a trial's parts are read from (works on older code too)."""
    import runners.loadgen
    import runners.session
    import runners.window
    from runners.deploy.nginx import Deployment
    from runners.session import Session

    probe(runners.window, "common_start", "start_set", keep=lambda start: f"{start:.6f}")
    probe(Session, "_run_one", "arrived")
    probe(Session, "_parse", "parsed")
    probe(runners.loadgen, "merge", "merge")
    probe(Deployment, "sample", "sample")
    probe(runners.session, "_clock_offset", "clock")


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
    timers(run)
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
        **alone(spans, args.duration, len(clients)),
        **wrk_parts(windows, durations, args.duration),
        "clients": len(clients),
        "session_open_s": round(session_s, 3),
        "trial_wall_s": [round(w, 3) for w in walls],
        "per_trial_overhead_s": round(statistics.median(extra), 3),
        "per_trial_overhead_pct": round(100 * share, 2),
        "invalid_reasons": reasons,
    }


def events(kind: str, a: float, b: float) -> list[tuple[str, float, float]]:
    """The `EVENTS` of ``kind`` (or ``kind:...``) that started within [a, b]."""
    return [e for e in EVENTS if e[0].split(":")[0] == kind and a <= e[1] <= b]


def decompose(span: tuple[float, float], w: dict[str, Any], duration_s: float) -> dict[str, float]:
    """One multi-client trial's wall split into `PARTS` [s]; they add up to the wall.

    The clients' stamps are on the coordinator's clock (`runners.window`). With a load tool
    that waits for the start itself the START stamp is its own start; with a shell that
    waits, it is the shell's, and the tool's start-up falls in ``run_past_window_s``.
    """
    t0, t1 = span
    cs = float(w["common_start_s"])
    clients = w["clients"]
    set_s = min(
        (e[1] for e in events("start_set", t0, t1) if abs(float(e[0].split(":")[1]) - cs) < 1e-5),
        default=t0,
    )
    arrived = max(e[2] for e in events("arrived", t0, t1))
    ended = max(float(c["end_s"]) for c in clients)
    started = max(float(c["start_s"]) for c in clients)
    seconds = {k: sum(e[2] - e[1] for e in events(k, t0, t1)) for k in ("clock", "merge")}
    # The last parse, and nginx's second sample (taken as the last client ends, before its
    # parse or beside it): the sample's part is the time it adds to the last parse's.
    _, parse_start, parsed = max(events("parsed", t0, t1), key=lambda e: e[2])
    sampled = max((e[2] for e in events("sample", arrived - 0.01, t1)), default=arrived)
    second = max(sampled, parsed) - arrived - (parsed - parse_start)
    out = {
        "clock_check_s": seconds["clock"],
        "setup_s": set_s - t0 - seconds["clock"],
        "lead_s": cs - set_s,
        "startup_past_start_s": max(0.0, started - cs),
        "window_s": float(duration_s),
        "run_past_window_s": ended - cs - duration_s - max(0.0, started - cs),
        "report_s": arrived - ended,
        "sample_s": second,
        "collection_s": parsed - parse_start,
        "merge_s": seconds["merge"],
        "store_s": sum(e[2] - e[1] for e in events("store", t0, t1)),
    }
    out["rest_s"] = (t1 - t0) - sum(out.values())
    # Per client, from the last to end: its END stamp and its output's arrival, past cs + D.
    ends = sorted(float(c["end_s"]) - cs - duration_s for c in clients)
    arrivals = sorted(e[2] - cs - duration_s for e in events("arrived", t0, t1))
    out.update({f"end_{i}_s": v for i, v in enumerate(ends)})
    out.update({f"arrived_{i}_s": v for i, v in enumerate(arrivals)})
    ready = [float(c["ready_s"]) for c in clients if isinstance(c.get("ready_s"), (int, float))]
    ready = [r for r in ready if math.isfinite(r)]
    out["slowest_ready_in_lead_s"] = max(ready) - set_s if ready else math.nan
    return out


def parts(
    spans: list[tuple[float, float]], windows: list[dict[str, Any]], duration_s: float
) -> dict[str, Any]:
    """Medians of each of `PARTS` over the trials [s] and their shares of the wall [%].

    Also the coordinator's own part and the load tools' (each the median of its sum per
    trial), with shares (empty for one client: no window).
    """
    if not windows:
        return {}
    rows = [decompose(s, w, duration_s) for s, w in zip(spans, windows, strict=True)]
    wall = statistics.median(b - a for a, b in spans)
    out: dict[str, Any] = {"trials": [{k: round(v, 4) for k, v in r.items()} for r in rows]}
    for key, _, _ in PARTS:
        value = statistics.median(r[key] for r in rows)
        out[key] = round(value, 4)
        out[key.removesuffix("_s") + "_pct"] = round(100 * value / wall, 2)
    out["slowest_ready_in_lead_s"] = round(
        statistics.median(r["slowest_ready_in_lead_s"] for r in rows), 4
    )
    for whose, name in (("coordinator", "coordinator"), ("load tool", "load_tool")):
        keys = [k for k, _, w in PARTS if w == whose]
        value = statistics.median(sum(r[k] for k in keys) for r in rows)
        out[f"{name}_s"] = round(value, 3)
        out[f"{name}_pct"] = round(100 * value / wall, 2)
    return out


def alone(spans: list[tuple[float, float]], duration_s: float, n: int) -> dict[str, float]:
    """With one client: its command's time past the duration [s] (start-up, report, exit).

    On a machine with one core per client each client's load tool takes about this.
    """
    if n != 1:
        return {}
    past = [
        max(e[2] for e in events("arrived", a, b)) - min(e[1] for e in events("arrived", a, b))
        for a, b in spans
    ]
    return {"load_tool_alone_s": round(statistics.median(past) - duration_s, 3)}


def timers(run: Any) -> None:
    """Time what a run spends storing (``store`` in `EVENTS`).

    Wraps the run folder's ``append`` and ``save_meta``.
    """
    probe(run.folder, "append", "store")
    probe(run.folder, "save_meta", "store")


def wrk_parts(
    windows: list[dict[str, Any]], durations: list[float], duration_s: float
) -> dict[str, float]:
    """The longest wrk's own run past D (its ``duration_us``) [s]."""
    if not windows:
        return {}
    return {"wrk_beyond_s": round(statistics.median(d - duration_s for d in durations), 3)}


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
            load1 = os.getloadavg()[0]
            rounds.append(
                {
                    "round": n + 1,
                    "code": name,
                    **many,
                    "load_tool_alone_s": result["one_client"].get("load_tool_alone_s"),
                    "one_core_per_client_pct": result.get("one_core_per_client_pct"),
                    "load_average_1min": [round(load0, 2), round(load1, 2)],
                }
            )
            print(f"round {n + 1} {name}, load average {load0:.2f} -> {load1:.2f}:", flush=True)
            print(shares(many, args.duration), flush=True)
    for name in ("old", "new"):
        mine = [r for r in rounds if r["code"] == name]
        median = {k: statistics.median(r[k] for r in mine) for k, _, _ in PARTS}
        median |= {
            k: statistics.median(r[k] for r in mine)
            for k in ("per_trial_overhead_pct", "coordinator_pct", "load_tool_pct")
        }
        print(
            f"{name}: median over {len(mine)} rounds: {median['per_trial_overhead_pct']:.2f}% "
            f"in total, coordinator {median['coordinator_pct']:.2f}%, load tool "
            f"{median['load_tool_pct']:.2f}%; parts [s]: "
            + ", ".join(f"{k.removesuffix('_s')} {median[k]:.3f}" for k, _, _ in PARTS)
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


def shares(many: dict[str, Any], duration_s: float) -> str:
    """The multi-client trial's parts, each in seconds and as a share of the wall, as lines."""
    wall = statistics.median(many["trial_wall_s"])
    lines = [f"  {many['clients']} clients, median trial wall {wall:.3f} s; per trial:"]
    for key, what, whose in PARTS:
        lines.append(
            f"  {what:<52} {many[key]:7.3f} s {many[key.removesuffix('_s') + '_pct']:6.2f}%"
            + (f"  ({whose})" if whose != "window" else "")
        )
    lines.append(
        f"  (the slowest client was ready {many['slowest_ready_in_lead_s']:.3f} s into the lead)"
    )
    lines.append(
        f"  overhead (wall - {duration_s:g} s) {many['per_trial_overhead_s']:.3f} s = "
        f"{many['per_trial_overhead_pct']:.2f}%: the coordinator's parts "
        f"{many['coordinator_s']:.3f} s = {many['coordinator_pct']:.2f}%, the load tools' "
        f"{many['load_tool_s']:.3f} s = {many['load_tool_pct']:.2f}%"
    )
    return "\n".join(lines)


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
    install_probes()
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
    # One core per client: the coordinator's parts as measured, each load tool's start-up
    # and report as one client alone took them (an upper bound: its spawn is counted too).
    projected = many["coordinator_s"] + max(0.0, one["load_tool_alone_s"])
    result = {
        "duration_s": args.duration,
        "one_client": one,
        "many_clients": many,
        "coordination_added_per_trial_s": round(
            many["per_trial_overhead_s"] - one["per_trial_overhead_s"], 3
        ),
        "clock_offsets_once_s": round(clock_s, 3),
        "one_core_per_client_s": round(projected, 3),
        "one_core_per_client_pct": round(100 * projected / (args.duration + projected), 2),
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
    print(shares(many, args.duration))
    print(
        f"one client alone: its load tool took {one['load_tool_alone_s']:.3f} s past the "
        f"{args.duration} s; with one core per client: the coordinator's parts + that = "
        f"{projected:.3f} s = {result['one_core_per_client_pct']:.2f}%\n"
        f"the {args.clients} clock offsets take {clock_s:.3f} s once a run; load average "
        f"{load0:.2f} -> {load1:.2f}; goal <= 5%: {'met' if result['met'] else 'NOT met'}"
    )
    print(f"saved {save('clients', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
