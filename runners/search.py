"""SLA search: the highest RPS whose p99 meets the SLA, per vCPU count.

Strategies work on any *target* with ``trial(vcpus, threads, connections, *, duration_s,
kind, rate_rps=None) -> row`` and ``max_threads(vcpus)``: a real `runners.sweep.Session` or
the simulated `runners.sim.SimTarget`. Every trial lands in the run's ``trials.csv``.

- ``grid``: threads x connections over a grid (the hand method of seed 000), the reference.
- ``adaptive``: with threads at the client's CPUs, an exponential ramp of connections (x4) up
  to the first failing trial, then a refinement of the bracket, then repeated confirmation
  trials at the answer. A closed loop's throughput does not fall as connections grow, so the
  answer lies between the RPS of the last pass and of the first fail: refinement stops once
  that gap is within ``rps_tolerance`` and the pass is already near the SLA. Split points are
  interpolated on p99 (linear in connections once the server saturates) and kept inside the
  bracket, falling back to the geometric midpoint.
- ``rate``: the same ramp, refinement and confirmation on wrk2's constant request rate (open
  loop), where a trial also fails when it does not reach the rate it asked for.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from runners.errors import RunnerError

STRATEGIES = ("adaptive", "grid", "rate")
# Two-sided 95% Student t quantiles for n - 1 = 1..30 degrees of freedom.
_T95 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


class Target(Protocol):
    """What a search drives: a real session or the simulator."""

    def max_threads(self, vcpus: int) -> int:
        """Threads the load generator can run on its own CPUs."""

    def trial(
        self,
        vcpus: int,
        threads: int,
        connections: int,
        *,
        duration_s: int = 10,
        kind: str = "sweep",
        rate_rps: float | None = None,
    ) -> dict[str, Any]:
        """Measure one setting; return the stored row."""


@dataclass(frozen=True)
class SearchOptions:
    """How to search.

    Attributes
    ----------
    sla_p99_ms : float
        The SLA on p99 latency [ms].
    strategy : str
        ``adaptive``, ``grid`` or ``rate``.
    duration_s, confirm_duration_s : int
        Length of search trials and of confirmation trials [s].
    confirm : int
        Confirmation trials at the answer (at least 3).
    start_connections, max_connections : int
        Where the ramp starts (default: 4 per thread) and the most it tries, per client.
    rps_tolerance : float
        Refinement stops when the RPS of the first fail is within this fraction of the pass.
    max_trials : int
        Upper bound on search trials before confirmation (``grid`` runs its whole grid).
    grid_threads : tuple of int
        Thread counts the grid tries (only those up to the client's CPUs).
    start_rate_rps : float
        First rate of the ``rate`` ramp [1/s].
    """

    sla_p99_ms: float = 5.0
    strategy: str = "adaptive"
    duration_s: int = 3
    confirm_duration_s: int = 6
    confirm: int = 3
    start_connections: int | None = None
    max_connections: int = 4096
    rps_tolerance: float = 0.02
    max_trials: int = 24
    grid_threads: tuple[int, ...] = (1, 2, 4, 8, 16)
    start_rate_rps: float = 1000.0

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise RunnerError(f"unknown strategy {self.strategy!r}; expected {STRATEGIES}")
        if self.confirm < 3:
            raise RunnerError("confirmation needs at least 3 trials (--confirm 3)")
        if self.max_connections < 1 or self.duration_s < 1 or self.confirm_duration_s < 1:
            raise RunnerError("durations and --max-connections must be positive")
        if not (math.isfinite(self.start_rate_rps) and self.start_rate_rps >= 1):
            raise RunnerError(f"--start-rate must be a finite rate >= 1, got {self.start_rate_rps}")
        if self.start_connections is not None and self.start_connections < 1:
            raise RunnerError("--start-connections must be at least 1")


@dataclass
class SearchResult:
    """The answer for one vCPU count, with what it cost and how sure it is."""

    vcpus: int
    scenario: str
    strategy: str
    sla_p99_ms: float
    max_rps_under_sla: float | None
    ci95_low: float | None
    ci95_high: float | None
    threads: int | None
    connections: int | None
    rate_rps: float | None
    latency_p99_ms: float | None
    error_rate: float | None
    trials: int
    load_seconds: float
    confirmed: bool
    non_monotonic: bool
    notes: list[str] = field(default_factory=list)
    trial_ids: list[str] = field(default_factory=list)
    simulated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return asdict(self)


def _passes(row: dict[str, Any], sla_p99_ms: float | None = None) -> bool:
    sla = float(row["sla_p99_ms"]) if sla_p99_ms is None else sla_p99_ms
    return bool(row["valid"]) and float(row["latency_p99_ms"]) <= sla


def _ci95(values: list[float]) -> tuple[float, float, float]:
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = (
        _T95[min(len(values) - 1, len(_T95)) - 1]
        * statistics.stdev(values)
        / math.sqrt(len(values))
    )
    return mean, mean - half, mean + half


def non_monotonic(
    rows: list[dict[str, Any]], load_key: str, sla_p99_ms: float | None = None
) -> list[str]:
    """Where more load gave clearly lower p99 or RPS, or a pass sits above a fail."""
    notes = []
    by_load: dict[float, list[dict[str, Any]]] = {}
    for r in rows:
        by_load.setdefault(float(r[load_key]), []).append(r)
    loads = sorted(by_load)
    med = {
        k: (
            statistics.median(float(r["latency_p99_ms"]) for r in v),
            statistics.median(float(r["rps"]) for r in v),
        )
        for k, v in by_load.items()
    }
    for a, b in itertools.pairwise(loads):
        (pa, ra), (pb, rb) = med[a], med[b]
        if pb < pa * 0.85 and pa - pb > 0.05:
            notes.append(
                f"p99 fell from {pa:.2f} to {pb:.2f} ms as {load_key} rose from {a:g} to {b:g}"
            )
        if load_key == "connections" and rb < ra * 0.95:
            notes.append(
                f"RPS fell from {ra:,.0f} to {rb:,.0f} as connections rose from {a:g} to {b:g}"
            )
    fails = [k for k in loads if not all(_passes(r, sla_p99_ms) for r in by_load[k])]
    passes_above = [
        k
        for k in loads
        if fails and k > min(fails) and all(_passes(r, sla_p99_ms) for r in by_load[k])
    ]
    if passes_above:
        notes.append(
            f"{load_key} {', '.join(f'{k:g}' for k in passes_above)} passed above a "
            f"failure at {min(fails):g}"
        )
    return notes


def search(
    target: Target,
    vcpus: int,
    options: SearchOptions,
    *,
    scenario: str = "static",
    simulated: bool = False,
) -> SearchResult:
    """Find the highest RPS under the SLA at ``vcpus`` with the chosen strategy."""
    rows: list[dict[str, Any]] = []

    def run(threads: int, load: float, kind: str, seconds: int | None = None) -> dict[str, Any]:
        seconds = seconds or options.duration_s
        if options.strategy == "rate":
            conns = min(options.max_connections, options.start_connections or 64 * threads)
            row = target.trial(
                vcpus, threads, max(threads, conns), duration_s=seconds, kind=kind, rate_rps=load
            )
        else:
            row = target.trial(vcpus, threads, int(load), duration_s=seconds, kind=kind)
        rows.append(row)
        return row

    threads = max(1, target.max_threads(vcpus))
    if options.strategy == "grid":
        return _finish_grid(target, vcpus, options, rows, run, threads, scenario, simulated)
    rate = options.strategy == "rate"
    load_key = "rate_rps" if rate else "connections"
    load = float(
        options.start_rate_rps if rate else max(threads, options.start_connections or 4 * threads)
    )
    top = math.inf if rate else float(options.max_connections)
    lo: dict[str, Any] | None = None
    hi: dict[str, Any] | None = None
    while len(rows) < options.max_trials:
        row = run(threads, load, "search-ramp")
        if not _passes(row, options.sla_p99_ms):
            hi = row
            break
        lo = row
        if load >= top:
            break
        load = min(top, load * 4)
    notes: list[str] = []
    if lo is None:
        first = rows[0]
        why = str(first["invalid_reason"] or "") or f"p99 {first['latency_p99_ms']:.2f} ms"
        notes.append(f"failed already at the lightest load ({load_key} {load:g}): {why}")
        return _result(vcpus, options, scenario, simulated, rows, [], threads, None, notes)
    while hi is not None and len(rows) < options.max_trials:
        a, b = float(lo[load_key]), float(hi[load_key])
        width = b - a
        near_sla = float(lo["latency_p99_ms"]) >= 0.5 * options.sla_p99_ms
        gap = float(hi["rps"]) / float(lo["rps"]) - 1 if float(lo["rps"]) > 0 else math.inf
        if width <= max(1.0, 0.05 * a) or (near_sla and gap <= options.rps_tolerance):
            break
        nxt = _split(lo, hi, load_key, options.sla_p99_ms)
        if not rate:
            nxt = float(round(nxt))
        if nxt <= a or nxt >= b:
            break
        row = run(threads, nxt, "search-refine")
        if _passes(row, options.sla_p99_ms):
            lo = row
        else:
            hi = row
    if hi is None and lo is not None and float(lo[load_key]) >= top:
        notes.append(
            f"every trial passed up to --max-connections {top:g}; the SLA was not "
            "reached, so the answer is a lower bound"
        )
    # Confirm at the answer; step back to the next passing load if most confirmations fail.
    candidates = sorted(
        {float(r[load_key]) for r in rows if _passes(r, options.sla_p99_ms)}, reverse=True
    )
    confirms: list[dict[str, Any]] = []
    chosen = None
    for step, answer in enumerate(candidates[:3]):
        batch = [
            run(threads, answer, "search-confirm", options.confirm_duration_s)
            for _ in range(options.confirm)
        ]
        confirms, chosen = batch, answer
        if sum(_passes(r, options.sla_p99_ms) for r in batch) * 2 > len(batch):
            break
        notes.append(
            f"confirmation at {load_key} {answer:g} failed in most repeats; "
            + ("stepped back" if step < 2 and len(candidates) > step + 1 else "gave up")
        )
    return _result(vcpus, options, scenario, simulated, rows, confirms, threads, chosen, notes)


def _split(lo: dict[str, Any], hi: dict[str, Any], key: str, sla: float) -> float:
    a, b = float(lo[key]), float(hi[key])
    pa, pb = float(lo["latency_p99_ms"]), float(hi["latency_p99_ms"])
    mid = math.sqrt(a * b)
    if not hi["valid"] or not math.isfinite(pb) or pb <= pa:
        return mid
    x = a + (0.9 * sla - pa) / (pb - pa) * (b - a)
    w = b - a
    return min(max(x, a + 0.1 * w), b - 0.1 * w)


def _finish_grid(
    target: Target,
    vcpus: int,
    options: SearchOptions,
    rows: list[dict[str, Any]],
    run: Callable[..., dict[str, Any]],
    threads: int,
    scenario: str,
    simulated: bool,
) -> SearchResult:
    conns = []
    c = 1
    while c <= options.max_connections:
        conns.append(c)
        c *= 2
    for t in [t for t in options.grid_threads if t <= threads]:
        for c in conns:
            if c >= t:
                run(t, c, "grid")
    passing = [r for r in rows if _passes(r, options.sla_p99_ms)]
    notes = []
    for t in sorted({int(r["threads"]) for r in rows}):
        notes += [
            f"threads {t}: {n}"
            for n in non_monotonic(
                [r for r in rows if int(r["threads"]) == t], "connections", options.sla_p99_ms
            )
        ]
    if not passing:
        return _result(
            vcpus,
            options,
            scenario,
            simulated,
            rows,
            [],
            None,
            None,
            [*notes, "no grid trial met the SLA"],
            grid=True,
        )
    best = max(passing, key=lambda r: float(r["rps"]))
    return _result(
        vcpus,
        options,
        scenario,
        simulated,
        rows,
        [best],
        int(best["threads"]),
        float(best["connections"]),
        notes,
        grid=True,
    )


def _result(
    vcpus: int,
    options: SearchOptions,
    scenario: str,
    simulated: bool,
    rows: list[dict[str, Any]],
    confirms: list[dict[str, Any]],
    threads: int | None,
    load: float | None,
    notes: list[str],
    grid: bool = False,
) -> SearchResult:
    rate = options.strategy == "rate"
    key = "rate_rps" if rate else "connections"
    if not grid:
        searched = [r for r in rows if r["kind"] != "search-confirm"]
        notes = non_monotonic(searched, key, options.sla_p99_ms) + notes
    passing = [r for r in confirms if _passes(r, options.sla_p99_ms)]
    if confirms and passing:
        mean, low, high = _ci95([float(r["rps"]) for r in confirms])
        p99 = statistics.median(float(r["latency_p99_ms"]) for r in confirms)
        err = statistics.fmean(float(r["error_rate"]) for r in confirms)
    else:
        mean = low = high = p99 = err = None  # type: ignore[assignment]
    return SearchResult(
        vcpus=vcpus,
        scenario=scenario,
        strategy=options.strategy,
        sla_p99_ms=options.sla_p99_ms,
        max_rps_under_sla=mean,
        ci95_low=None if low is None or not math.isfinite(low) else low,
        ci95_high=None if high is None or not math.isfinite(high) else high,
        threads=threads,
        connections=None if rate or load is None else int(load),
        rate_rps=load if rate else None,
        latency_p99_ms=p99,
        error_rate=err,
        trials=len(rows),
        load_seconds=float(
            sum(float(r["duration_s"]) + float(r.get("warmup_s") or 0) for r in rows)
        ),
        confirmed=(grid and bool(passing)) or (len(passing) * 2 > len(confirms) > 0),
        non_monotonic=any("fell" in n or "passed above" in n for n in notes),
        notes=notes,
        trial_ids=[str(r["trial_id"]) for r in rows],
        simulated=simulated,
    )


class _Replay:
    """A target that answers from a resumed run's rows before measuring anything new.

    The strategies are deterministic given the answers they see, so replaying the stored rows
    in order brings a resumed search back to where it stopped.
    """

    def __init__(self, target: Any, stored: list[dict[str, Any]]) -> None:
        self.target = target
        self.stored: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for row in stored:
            self.stored.setdefault(_key(row), []).append(row)
        self.seen: dict[tuple[Any, ...], int] = {}

    def max_threads(self, vcpus: int) -> int:
        return int(self.target.max_threads(vcpus))

    def trial(
        self,
        vcpus: int,
        threads: int,
        connections: int,
        *,
        duration_s: int = 10,
        kind: str = "sweep",
        rate_rps: float | None = None,
    ) -> dict[str, Any]:
        key = (vcpus, threads, connections, None if rate_rps is None else round(rate_rps), kind)
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        old = self.stored.get(key, [])
        if n < len(old):
            return old[n]
        row: dict[str, Any] = self.target.trial(
            vcpus, threads, connections, duration_s=duration_s, kind=kind, rate_rps=rate_rps
        )
        return row


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    rate = row.get("rate_rps")
    return (
        int(row["vcpus"]),
        int(row["threads"]),
        int(row["connections"]),
        None
        if rate in (None, "") or (isinstance(rate, float) and math.isnan(rate))
        else round(float(rate)),
        row["kind"],
    )


def run_search(
    plan: Any,
    options: SearchOptions,
    out: Any = "data/runs",
    *,
    sim: Any = None,
    resume: str | None = None,
    access: Any = None,
    progress: Any = None,
) -> tuple[str, list[SearchResult]]:
    """Search every vCPU count of ``plan`` and store all trials in one run folder.

    Parameters
    ----------
    plan : runners.sweep.Plan
        Hosts, scenario, vCPU counts, trial timing; its threads and connections are unused.
    options : SearchOptions
        Strategy and SLA.
    out : path
        Parent folder of run folders.
    sim : runners.sim.SimServer, optional
        Search the simulated server instead of real hosts (rows say ``simulated=true``).
    resume : str, optional
        Run id of an interrupted search to continue; stored trials are replayed, not rerun.
    access : runners.sweep.Access, optional
        SSH options.
    progress : file, optional
        Where one line per trial goes.

    Returns
    -------
    run_id, results
        The run's id and one `SearchResult` per vCPU count.
    """
    from runners.store import load_trials
    from runners.sweep import open_store, target_for

    if options.sla_p99_ms != plan.sla_p99_ms:
        raise RunnerError("the plan's SLA and the search's SLA differ")
    plan, store = open_store(plan, out, resume, sim, extra={"search": asdict(options)})
    results: list[SearchResult] = []

    class _Log:
        def __init__(self, target: Any) -> None:
            self.target, self.n = target, 0

        def max_threads(self, vcpus: int) -> int:
            return int(self.target.max_threads(vcpus))

        def trial(self, *a: Any, **kw: Any) -> dict[str, Any]:
            row: dict[str, Any] = self.target.trial(*a, **kw)
            self.n += 1
            if progress is not None:
                load = (
                    f"rate {row['rate_rps']:,.0f}"
                    if options.strategy == "rate"
                    else f"t{int(row['threads'])} c{int(row['connections'])}"
                )
                verdict = (
                    "pass"
                    if _passes(row, options.sla_p99_ms)
                    else ("invalid" if not row["valid"] else "over SLA")
                )
                print(
                    f"[v{int(row['vcpus'])} {row['kind']} #{self.n}] {load}: "
                    f"{float(row['rps']):,.0f} rps, p99 {float(row['latency_p99_ms']):.2f} "
                    f"ms, {verdict}",
                    file=progress,
                    flush=True,
                )
            return row

    def go(target: Any) -> None:
        replay = _Replay(target, load_trials(store.path).to_dict("records"))
        logged = _Log(replay)
        for v in plan.vcpus:
            results.append(
                search(logged, v, options, scenario=plan.scenario.name, simulated=sim is not None)
            )
            store.meta["search_results"] = [r.to_dict() for r in results]
            store.save_meta()

    with (
        store.recording_status(),
        target_for(
            plan, store, sim=sim, access=access, log=progress, rate=options.strategy == "rate"
        ) as target,
    ):
        go(target)
    return store.run_id, results
