"""SLA search: the highest RPS whose p99 meets the SLA, per vCPU count.

Strategies work on any *target* with ``trial(vcpus, threads, connections, *, duration_s,
kind, rate_rps=None) -> row`` and ``max_threads(vcpus)``: a real `runners.session.Session` or
the simulated `runners.sim.SimTarget`. Every trial lands in the run's ``trials.csv``.

Each strategy is an object (`Adaptive`, `Grid`, `Rate`), found once by name in `STRATEGIES`.

- ``grid``: threads x connections over a grid (the hand method of seed 000), the reference.
- ``adaptive``: with threads at the client's CPUs, an exponential ramp of connections (x4) up
  to the first failing trial, then a refinement of the bracket, then repeated confirmation
  trials at the answer. A closed loop's throughput does not fall as connections grow, so the
  answer lies between the RPS of the last pass and of the first fail: refinement stops once
  that gap is within ``rps_tolerance`` and the pass is already near the SLA. Split points are
  interpolated on p99 (linear in connections once the server saturates) and kept inside the
  bracket, falling back to the geometric midpoint. When even the lightest load fails, it
  steps down (one thread, then one connection) before giving up, and says what it tried.
- ``rate``: the same ramp, refinement and confirmation on a constant request rate (open
  loop, a load generator with an open mode), where a trial also fails when it does not
  reach the rate it asked for.
"""

from __future__ import annotations

import itertools
import math
import os
import statistics
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import IO, TYPE_CHECKING, ClassVar, Protocol

from runners.errors import BadInput, RunnerError
from runners.loadgen import CLOSED, OPEN
from runners.names import STRATEGY_NAMES
from runners.plan import DEFAULT_OUT, Access, Plan
from runners.run import name_run, open_run
from trialtable.jsonvalue import JsonObject, JsonValue, as_float, as_int
from trialtable.read import RANGES
from trialtable.schema import majority_passed

if TYPE_CHECKING:  # the simulator loads only when a search runs on it
    from runners.sim import SimServer

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
    ) -> Mapping[str, JsonValue]:
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
        if self.strategy not in STRATEGY_NAMES:
            raise BadInput(f"unknown strategy {self.strategy!r}; expected {STRATEGY_NAMES}")
        if not 3 <= self.confirm <= len(_T95):
            raise BadInput(
                f"confirmation needs at least 3 and at most {len(_T95)} trials (--confirm)"
            )
        if self.max_connections < 1 or self.duration_s < 1 or self.confirm_duration_s < 1:
            raise BadInput("durations and --max-connections must be positive")
        if not 1 <= self.start_rate_rps <= RANGES["rate_rps"][1]:
            raise BadInput(
                f"--start-rate must be a finite rate from 1 to {RANGES['rate_rps'][1]:g} "
                f"(what a trial row holds), got {self.start_rate_rps}"
            )
        if self.start_connections is not None and self.start_connections < 1:
            raise BadInput("--start-connections must be at least 1")


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

    def to_dict(self) -> JsonObject:
        """Plain data for JSON output."""
        return asdict(self)


@dataclass(frozen=True)
class Question:
    """What one search asks: the vCPU count, how to search, the scenario, simulated or not."""

    vcpus: int
    options: SearchOptions
    scenario: str
    simulated: bool


@dataclass(frozen=True)
class Findings:
    """What a search found: every trial, the confirmations, and the setting it answers at.

    Attributes
    ----------
    rows : list of dict
        Every trial row, in the order run.
    confirms : list of dict
        The confirmation trials at the answer (the best passing trial for ``grid``).
    threads : int or None
        Load generator threads at the answer.
    load : float or None
        Connections per client, or the rate [1/s], at the answer.
    notes : list of str
        What the search saw on the way.
    """

    rows: list[Mapping[str, JsonValue]]
    confirms: list[Mapping[str, JsonValue]]
    threads: int | None
    load: float | None
    notes: list[str]


def _passes(row: Mapping[str, JsonValue], sla_p99_ms: float | None = None) -> bool:
    sla = as_float(row["sla_p99_ms"]) if sla_p99_ms is None else sla_p99_ms
    return bool(row["valid"]) and as_float(row["latency_p99_ms"]) <= sla


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
    rows: list[Mapping[str, JsonValue]], load_key: str, sla_p99_ms: float | None = None
) -> list[str]:
    """Where more load gave clearly lower p99 or RPS, or a pass sits above a fail."""
    notes = []
    by_load: dict[float, list[Mapping[str, JsonValue]]] = {}
    for r in rows:
        by_load.setdefault(as_float(r[load_key]), []).append(r)
    loads = sorted(by_load)
    med = {
        k: (
            statistics.median(as_float(r["latency_p99_ms"]) for r in v),
            statistics.median(as_float(r["rps"]) for r in v),
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


class Strategy(ABC):
    """How a search picks its trials; one object per strategy (`STRATEGIES`).

    Class attributes
    ----------------
    name : str
        The ``--strategy`` name.
    mode : str
        The load generator's mode it needs: ``"closed"`` or ``"open"``.
    load_key : str
        The row column its load is measured in: ``connections`` or ``rate_rps``.
    """

    name: ClassVar[str]
    mode: ClassVar[str] = CLOSED
    load_key: ClassVar[str] = "connections"

    @abstractmethod
    def search(
        self, target: Target, vcpus: int, options: SearchOptions, *, scenario: str, simulated: bool
    ) -> SearchResult:
        """The highest RPS under the SLA at ``vcpus``."""

    def trial(
        self,
        target: Target,
        vcpus: int,
        threads: int,
        load: float,
        kind: str,
        seconds: int,
        options: SearchOptions,
    ) -> Mapping[str, JsonValue]:
        """One trial at ``load`` (connections per client)."""
        return target.trial(vcpus, threads, int(load), duration_s=seconds, kind=kind)

    def describe(self, threads: int, load: float) -> str:
        """A setting in words, for notes."""
        t = f"{threads} thread{'s' if threads != 1 else ''}"
        return f"{t} x {load:g} connection{'s' if load != 1 else ''}"

    def result(self, asked: Question, found: Findings) -> SearchResult:
        """The answer from the trials, confirmations and notes."""
        options = asked.options
        searched = [r for r in found.rows if r["kind"] != "search-confirm"]
        notes = non_monotonic(searched, self.load_key, options.sla_p99_ms) + found.notes
        passing = [r for r in found.confirms if _passes(r, options.sla_p99_ms)]
        return _result(
            asked,
            replace(found, notes=notes),
            rate=self.load_key == "rate_rps",
            confirmed=majority_passed(len(passing), len(found.confirms)),
        )


class Adaptive(Strategy):
    """Ramp connections x4 from 4 per thread to the first fail, refine, confirm.

    When even the lightest load fails, it steps down (one thread, then one connection)
    before giving up, and the notes say what it tried.
    """

    name = "adaptive"

    def first_load(self, threads: int, options: SearchOptions) -> float:
        """Where the ramp starts."""
        return float(max(threads, options.start_connections or 4 * threads))

    def top(self, options: SearchOptions) -> float:
        """The most load the ramp tries."""
        return float(options.max_connections)

    def rounded(self, load: float) -> float:
        """A split point as a load the generator takes."""
        return float(round(load))

    def step_down(self, threads: int, load: float) -> list[tuple[int, float]]:
        """Lighter settings to try when the first one fails: one thread, then one connection."""
        out = [(1, float(max(1, int(load) // max(threads, 1)))), (1, 1.0)]
        return [s for i, s in enumerate(out) if s != (threads, load) and s not in out[:i]]

    def search(
        self, target: Target, vcpus: int, options: SearchOptions, *, scenario: str, simulated: bool
    ) -> SearchResult:
        """Ramp, refine the bracket, confirm (see the module's description)."""
        asked = Question(vcpus, options, scenario, simulated)
        walk = _Walk(self, target, asked)
        threads = max(1, target.max_threads(vcpus))
        start = self._start(walk, threads)
        if start is None:
            return self.result(asked, Findings(walk.rows, [], threads, None, walk.notes))
        threads, load, lo = start
        lo, hi = self._ramp(walk, threads, load, lo)
        lo, hi = self._refine(walk, threads, lo, hi)
        top = self.top(options)
        if hi is None and as_float(lo[self.load_key]) >= top:
            walk.notes.append(
                f"every trial passed up to --max-connections {top:g}; the SLA was not "
                "reached, so the answer is a lower bound"
            )
        confirms, chosen = self._confirm(walk, threads)
        return self.result(asked, Findings(walk.rows, confirms, threads, chosen, walk.notes))

    def _start(
        self, walk: _Walk, threads: int
    ) -> tuple[int, float, Mapping[str, JsonValue]] | None:
        """The first passing trial, stepping down if needed: (threads, next load, row).

        None when even the lightest settings failed (the notes say what was tried).
        """
        options = walk.asked.options
        load = self.first_load(threads, options)
        top = self.top(options)
        first = walk.run(threads, load, "search-ramp")
        if _passes(first, options.sla_p99_ms):
            return threads, min(top, load * 4) if load < top else load, first
        tried = [f"{self.load_key} {load:g}: {_why(first)}"]
        for t, lighter in self.step_down(threads, load):
            row = walk.run(t, lighter, "search-ramp")
            if _passes(row, options.sla_p99_ms):
                walk.notes.append(
                    f"the lightest load failed ({tried[0]}); stepped down to "
                    f"{self.describe(t, lighter)}, which passed"
                )
                return t, min(top, lighter * 4) if lighter < top else lighter, row
            tried.append(f"{self.describe(t, lighter)}: {_why(row)}")
        walk.notes.append(
            f"failed already at the lightest load ({tried[0]}); stepped down to "
            + "; ".join(tried[1:])
            if len(tried) > 1
            else f"failed already at the lightest load ({tried[0]})"
        )
        return None

    def _ramp(
        self, walk: _Walk, threads: int, load: float, lo: Mapping[str, JsonValue]
    ) -> tuple[Mapping[str, JsonValue], Mapping[str, JsonValue] | None]:
        """Load x4 from ``load`` to the first fail: (last pass, first fail or None)."""
        options = walk.asked.options
        top = self.top(options)
        hi: Mapping[str, JsonValue] | None = None
        while as_float(lo[self.load_key]) < top and len(walk.rows) < options.max_trials:
            row = walk.run(threads, load, "search-ramp")
            if not _passes(row, options.sla_p99_ms):
                hi = row
                break
            lo = row
            if load >= top:
                break
            load = min(top, load * 4)
        return lo, hi

    def _refine(
        self,
        walk: _Walk,
        threads: int,
        lo: Mapping[str, JsonValue],
        hi: Mapping[str, JsonValue] | None,
    ) -> tuple[Mapping[str, JsonValue], Mapping[str, JsonValue] | None]:
        """Split the bracket (pass, fail) until it is narrow or the pass is near the SLA."""
        options, key = walk.asked.options, self.load_key
        while hi is not None and len(walk.rows) < options.max_trials:
            a, b = as_float(lo[key]), as_float(hi[key])
            width = b - a
            near_sla = as_float(lo["latency_p99_ms"]) >= 0.5 * options.sla_p99_ms
            gap = (
                as_float(hi["rps"]) / as_float(lo["rps"]) - 1
                if as_float(lo["rps"]) > 0
                else math.inf
            )
            if width <= max(1.0, 0.05 * a) or (near_sla and gap <= options.rps_tolerance):
                break
            nxt = self.rounded(_split(lo, hi, key, options.sla_p99_ms))
            if nxt <= a or nxt >= b:
                break
            row = walk.run(threads, nxt, "search-refine")
            if _passes(row, options.sla_p99_ms):
                lo = row
            else:
                hi = row
        return lo, hi

    def _confirm(
        self, walk: _Walk, threads: int
    ) -> tuple[list[Mapping[str, JsonValue]], float | None]:
        """Confirm at the answer; step back to the next passing load if most confirmations fail.

        Returns the last batch of confirmations and the load they ran at.
        """
        options, key = walk.asked.options, self.load_key
        candidates = sorted(
            {
                as_float(r[key])
                for r in walk.rows
                if _passes(r, options.sla_p99_ms) and as_int(r["threads"]) == threads
            },
            reverse=True,
        )
        confirms: list[Mapping[str, JsonValue]] = []
        chosen = None
        for step, answer in enumerate(candidates[:3]):
            batch = [
                walk.run(threads, answer, "search-confirm", options.confirm_duration_s)
                for _ in range(options.confirm)
            ]
            confirms, chosen = batch, answer
            if majority_passed(sum(_passes(r, options.sla_p99_ms) for r in batch), len(batch)):
                break
            walk.notes.append(
                f"confirmation at {key} {answer:g} failed in most repeats; "
                + ("stepped back" if step < 2 and len(candidates) > step + 1 else "gave up")
            )
        return confirms, chosen


@dataclass
class _Walk:
    """One adaptive search under way: what it asks, and the trials and notes so far."""

    strategy: Adaptive
    target: Target
    asked: Question
    rows: list[Mapping[str, JsonValue]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def run(
        self, threads: int, load: float, kind: str, seconds: int | None = None
    ) -> Mapping[str, JsonValue]:
        """Run one trial (search trials' duration unless ``seconds``) and keep its row."""
        options = self.asked.options
        row = self.strategy.trial(
            self.target,
            self.asked.vcpus,
            threads,
            load,
            kind,
            seconds or options.duration_s,
            options,
        )
        self.rows.append(row)
        return row


class Rate(Adaptive):
    """The adaptive ramp, refinement and confirmation on a constant request rate (open loop).

    A trial also fails when it reaches less than 95% of the rate asked.
    """

    name = "rate"
    mode = OPEN
    load_key = "rate_rps"

    def first_load(self, threads: int, options: SearchOptions) -> float:
        """``--start-rate``."""
        return float(options.start_rate_rps)

    def top(self, options: SearchOptions) -> float:
        """No upper bound: the ramp goes until a trial fails."""
        return math.inf

    def rounded(self, load: float) -> float:
        """Rates stay as split."""
        return load

    def step_down(self, threads: int, load: float) -> list[tuple[int, float]]:
        """One thread at a quarter, then a sixteenth, of the rate."""
        return [(1, load / 4), (1, load / 16)]

    def describe(self, threads: int, load: float) -> str:
        """A rate in words."""
        return f"{threads} thread{'s' if threads != 1 else ''} at {load:,.0f} rps"

    def trial(
        self,
        target: Target,
        vcpus: int,
        threads: int,
        load: float,
        kind: str,
        seconds: int,
        options: SearchOptions,
    ) -> Mapping[str, JsonValue]:
        """One trial at ``load`` requests per second, with 64 connections per thread."""
        conns = min(options.max_connections, options.start_connections or 64 * threads)
        return target.trial(
            vcpus, threads, max(threads, conns), duration_s=seconds, kind=kind, rate_rps=load
        )


class Grid(Strategy):
    """Threads x connections over the whole grid (the hand method of seed 000)."""

    name = "grid"

    def search(
        self, target: Target, vcpus: int, options: SearchOptions, *, scenario: str, simulated: bool
    ) -> SearchResult:
        """Every setting of the grid; the answer is the best passing trial."""
        threads = max(1, target.max_threads(vcpus))
        rows: list[Mapping[str, JsonValue]] = []
        conns = []
        c = 1
        while c <= options.max_connections:
            conns.append(c)
            c *= 2
        for t in [t for t in options.grid_threads if t <= threads]:
            for c in conns:
                if c >= t:
                    rows.append(
                        self.trial(target, vcpus, t, c, "grid", options.duration_s, options)
                    )
        passing = [r for r in rows if _passes(r, options.sla_p99_ms)]
        notes = []
        for t in sorted({as_int(r["threads"]) for r in rows}):
            notes += [
                f"threads {t}: {n}"
                for n in non_monotonic(
                    [r for r in rows if as_int(r["threads"]) == t],
                    "connections",
                    options.sla_p99_ms,
                )
            ]
        asked = Question(vcpus, options, scenario, simulated)
        if not passing:
            found = Findings(rows, [], None, None, [*notes, "no grid trial met the SLA"])
            return _result(asked, found, confirmed=False)
        best = max(passing, key=lambda r: as_float(r["rps"]))
        found = Findings(
            rows, [best], as_int(best["threads"]), as_float(best["connections"]), notes
        )
        return _result(asked, found, confirmed=True)


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (Adaptive(), Grid(), Rate())}


def strategy_of(options: SearchOptions) -> Strategy:
    """The strategy object ``options`` names."""
    return STRATEGIES[options.strategy]


def search(
    target: Target,
    vcpus: int,
    options: SearchOptions,
    *,
    scenario: str = "static",
    simulated: bool = False,
) -> SearchResult:
    """Find the highest RPS under the SLA at ``vcpus`` with the chosen strategy."""
    return strategy_of(options).search(
        target, vcpus, options, scenario=scenario, simulated=simulated
    )


def _why(row: Mapping[str, JsonValue]) -> str:
    reason = row.get("invalid_reason")
    if isinstance(reason, str) and reason:
        return reason
    return f"p99 {as_float(row['latency_p99_ms']):.2f} ms"


def _split(lo: Mapping[str, JsonValue], hi: Mapping[str, JsonValue], key: str, sla: float) -> float:
    a, b = as_float(lo[key]), as_float(hi[key])
    pa, pb = as_float(lo["latency_p99_ms"]), as_float(hi["latency_p99_ms"])
    mid = math.sqrt(a * b)
    if not hi["valid"] or not math.isfinite(pb) or pb <= pa:
        return mid
    x = a + (0.9 * sla - pa) / (pb - pa) * (b - a)
    w = b - a
    return min(max(x, a + 0.1 * w), b - 0.1 * w)


def _result(
    asked: Question, found: Findings, *, confirmed: bool, rate: bool = False
) -> SearchResult:
    options, rows, confirms, load = asked.options, found.rows, found.confirms, found.load
    passing = [r for r in confirms if _passes(r, options.sla_p99_ms)]
    if confirms and passing:
        mean, low, high = _ci95([as_float(r["rps"]) for r in confirms])
        p99 = statistics.median(as_float(r["latency_p99_ms"]) for r in confirms)
        err = statistics.fmean(as_float(r["error_rate"]) for r in confirms)
    else:
        mean = low = high = p99 = err = None  # type: ignore[assignment]
    return SearchResult(
        vcpus=asked.vcpus,
        scenario=asked.scenario,
        strategy=options.strategy,
        sla_p99_ms=options.sla_p99_ms,
        max_rps_under_sla=mean,
        ci95_low=None if low is None or not math.isfinite(low) else low,
        ci95_high=None if high is None or not math.isfinite(high) else high,
        threads=found.threads,
        connections=None if rate or load is None else int(load),
        rate_rps=load if rate else None,
        latency_p99_ms=p99,
        error_rate=err,
        trials=len(rows),
        load_seconds=float(
            sum(as_float(r["duration_s"]) + as_float(r.get("warmup_s") or 0) for r in rows)
        ),
        confirmed=confirmed,
        non_monotonic=any("fell" in n or "passed above" in n for n in found.notes),
        notes=found.notes,
        trial_ids=[str(r["trial_id"]) for r in rows],
        simulated=asked.simulated,
    )


#: A stored trial's setting: vCPUs, threads, connections, rate (rounded) or None, kind.
_ReplayKey = tuple[int, int, int, int | None, str]


class _Replay:
    """A target that answers from a resumed run's rows before measuring anything new.

    The strategies are deterministic given the answers they see, so replaying the stored rows
    in order brings a resumed search back to where it stopped.
    """

    def __init__(self, target: Target, stored: Sequence[Mapping[str, JsonValue]]) -> None:
        self.target = target
        self.stored: dict[_ReplayKey, list[Mapping[str, JsonValue]]] = {}
        for row in stored:
            self.stored.setdefault(_key(row), []).append(row)
        self.seen: dict[_ReplayKey, int] = {}

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
    ) -> Mapping[str, JsonValue]:
        key = (vcpus, threads, connections, None if rate_rps is None else round(rate_rps), kind)
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        old = self.stored.get(key, [])
        if n < len(old):
            return old[n]
        row: Mapping[str, JsonValue] = self.target.trial(
            vcpus, threads, connections, duration_s=duration_s, kind=kind, rate_rps=rate_rps
        )
        return row


def _key(row: Mapping[str, JsonValue]) -> _ReplayKey:
    rate = row.get("rate_rps")
    return (
        as_int(row["vcpus"]),
        as_int(row["threads"]),
        as_int(row["connections"]),
        None
        if rate in (None, "") or (isinstance(rate, float) and math.isnan(rate))
        else round(as_float(rate)),
        str(row["kind"]),
    )


def run_search(
    plan: Plan,
    options: SearchOptions,
    out: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    sim: SimServer | None = None,
    resume: str | None = None,
    access: Access | None = None,
    progress: IO[str] | None = None,
    on_trial: Callable[[TrialReport], None] | None = None,
) -> tuple[str, list[SearchResult]]:
    """Search every vCPU count of ``plan`` and store all trials in one run folder.

    Parameters
    ----------
    plan : runners.plan.Plan
        Hosts, scenario, vCPU counts, trial timing; its threads and connections are unused.
    options : SearchOptions
        Strategy and SLA.
    out : path
        Parent folder of run folders.
    sim : runners.sim.SimServer, optional
        Search the simulated server instead of real hosts (rows say ``simulated=true``).
    resume : str, optional
        Run id of an interrupted search to continue; stored trials are replayed, not rerun.
    access : runners.plan.Access, optional
        SSH options.
    progress : file, optional
        Where the session says what it set up (hosts, target address).
    on_trial : callable, optional
        Told of each trial as it finishes (a `TrialReport`); the CLI prints a line of it.

    Returns
    -------
    run_id, results
        The run's id and one `SearchResult` per vCPU count.
    """
    from runners.store import load_trials
    from runners.sweep import target_for

    if options.sla_p99_ms != plan.sla_p99_ms:
        raise RunnerError("the plan's SLA and the search's SLA differ")
    strategy = strategy_of(options)
    plan.generator().check(plan.http_version, strategy.mode)
    plan, run = open_run(plan, out, resume, sim, extra={"search": asdict(options)})
    results: list[SearchResult] = []
    try:
        with (
            run.status(),
            target_for(plan, run, sim=sim, access=access, log=progress, mode=strategy.mode) as t,
        ):
            logged = _Reporting(
                _Replay(t, load_trials(run.path).to_dict("records")),
                on_trial,
                bound=_TrialBound(plan.vcpus, options) if not isinstance(strategy, Grid) else None,
            )
            for v in plan.vcpus:
                results.append(
                    search(
                        logged, v, options, scenario=plan.scenario.name, simulated=sim is not None
                    )
                )
                run.record(search_results=[r.to_dict() for r in results])
    except BaseException as exc:
        name_run(exc, run.run_id)
        raise
    finally:
        run.close()
    return run.run_id, results


class _TrialBound:
    """The most trial time a search has left, from ``max_trials`` and the confirmations.

    Each vCPU count runs at most ``max_trials`` search trials and ``confirm`` confirmations, so
    the seconds of load still to come are bounded; scaled by the wall time each second of load
    has taken so far (start-up, warm-up, cool-down), that bounds the time left.
    """

    def __init__(
        self,
        vcpus: Sequence[int],
        options: SearchOptions,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.vcpus, self.options, self.clock = list(vcpus), options, clock
        self.done: dict[int, list[int]] = {}
        self.load_s = 0.0
        self.started = clock()

    def add(self, vcpus: int, kind: str, seconds: float, replayed: bool) -> None:
        counts = self.done.setdefault(vcpus, [0, 0])
        counts[1 if kind == "search-confirm" else 0] += 1
        if not replayed:  # a resumed run's stored trial took no wall time
            self.load_s += seconds

    def left_s(self, vcpus: int) -> float | None:
        """Upper bound of the wall time left [s], None before any real trial."""
        o = self.options
        if self.load_s <= 0 or vcpus not in self.vcpus:
            return None
        per_load_s = (self.clock() - self.started) / self.load_s
        full = o.max_trials * o.duration_s + o.confirm * o.confirm_duration_s
        search, confirm = self.done.get(vcpus, [0, 0])
        here = max(0, o.max_trials - search) * o.duration_s if confirm == 0 else 0
        here += max(0, o.confirm - confirm) * o.confirm_duration_s
        later = len(self.vcpus) - 1 - self.vcpus.index(vcpus)
        return (here + later * full) * per_load_s


@dataclass(frozen=True)
class TrialReport:
    """One finished trial of a search, as it is told to the caller (a progress line).

    Attributes
    ----------
    n : int
        Its number in this search (1, 2, ...; replayed trials of a resumed run count).
    row : mapping
        Its row of ``trials.csv``.
    open_loop : bool
        Whether it drove a constant rate (its load is ``rate_rps``, not threads and
        connections).
    left_s : float, optional
        At most how long the search has left [s]; None when not known yet.
    """

    n: int
    row: Mapping[str, JsonValue]
    open_loop: bool
    left_s: float | None


class _Reporting:
    """A target that tells ``on_trial`` of each trial: its row and the time left."""

    def __init__(
        self,
        target: Target,
        on_trial: Callable[[TrialReport], None] | None,
        bound: _TrialBound | None = None,
    ) -> None:
        self.target, self.on_trial, self.n, self.bound = target, on_trial, 0, bound

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
    ) -> Mapping[str, JsonValue]:
        began = time.monotonic()
        row = self.target.trial(
            vcpus, threads, connections, duration_s=duration_s, kind=kind, rate_rps=rate_rps
        )
        self.n += 1
        left = None
        if self.bound is not None:
            replayed = time.monotonic() - began < 0.5 * duration_s
            self.bound.add(vcpus, kind, duration_s, replayed)
            left = self.bound.left_s(vcpus)
        if self.on_trial is not None:
            self.on_trial(TrialReport(self.n, row, rate_rps is not None, left))
        return row
