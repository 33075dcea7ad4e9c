"""A paired A/B comparison: two nginx configurations measured side by side in one session.

``python -m runners ab [SWEEP OPTIONS] --ab-directive TEXT [--pairs N] [--schedule together]``,
or ``--nginx-conf FILE [--nginx-conf-a FILE]`` in place of ``--ab-directive``.

Two separately run sweeps on a shared machine differ by the machine's drift (other work,
frequency, caches), which can be far larger than the change under test. Here configuration A
(the sweep options) and B (A plus the ``--ab-directive`` lines in nginx's ``http`` block; or
your own nginx.conf, rewritten as ``runners sweep --nginx-conf`` does, against the reference or
against ``--nginx-conf-a``) each get a private nginx on the same host, pinned to the same CPUs,
with the same load generator placement. With ``--schedule together`` (the default) a pair's two
trials run at the same time, each nginx loaded by its own load generator, their measured parts
started together after both warm-ups: both see the same interference from other work at the
same moment, so it cancels in the pair's ratio. With ``alternate`` they run one after the other
(A B, B A, ...), which cancels only drift slower than a pair. Each nginx is restarted before
each pair after the first: two processes of one configuration can differ by a steady few
percent, which restarts turn into noise the interval shows.

The measure of a trial is its server CPU time per request [us] (``cpu``, the default: it does
not fall when other processes take the CPU away from nginx) or its requests per second
(``rps``). Each pair gives the ratio of B's cost to A's (``cpu``: B/A; ``rps``: A/B, so above
1 is always "B is slower"). The verdict is on the median ratio, with a seeded percentile
bootstrap interval at ``--confidence``: B is worse when the interval's lower bound is above
``1 + threshold``, i.e. B costs more than the threshold more, at that confidence. Exit 1 then,
0 otherwise, 2 for bad input.
"""

from __future__ import annotations

import functools
import math
import random
import statistics
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import IO, TYPE_CHECKING

from runners.bootstrap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from runners.hosts import side_by_side
from trialtable.jsonvalue import JsonObject, JsonValue, as_float

if TYPE_CHECKING:  # a session and its run load only when pairs are measured
    from runners.plan import Access, Plan
    from runners.run import Run
    from runners.session import Session

#: Errors per response above which a trial gives no cost.
MAX_ERROR_RATE = 0.01
#: Pairs one ``ab`` command measures again because a client was lost in them (`pair_problem`).
MAX_PAIR_RERUNS = 2


@dataclass(frozen=True)
class Verdict:
    """The judgement of paired ratios (B's cost over A's; above 1 means B is slower).

    Attributes
    ----------
    median : float
        Median of the per-pair ratios.
    low, high : float
        Percentile bootstrap interval of the median at ``confidence``.
    n : int
        Pairs.
    spread : float
        Standard deviation of the ratios (NaN with fewer than 2).
    threshold : float
        Allowed slowdown, a fraction (0.04 for 4%).
    confidence : float
        Level of the interval, a fraction.
    worse : bool
        ``low > 1 + threshold``.
    """

    median: float
    low: float
    high: float
    n: int
    spread: float
    threshold: float
    confidence: float
    worse: bool

    def to_dict(self) -> JsonObject:
        """JSON-ready."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def pair_cost(row: Mapping[str, JsonValue], measure: str) -> float:
    """One trial's cost under ``measure``: server CPU microseconds per request, or 1/RPS.

    Returns NaN when the trial has no usable value: no requests, no CPU sample, errors above
    ``MAX_ERROR_RATE``, or (for ``rps``) an invalid trial. A ``cpu`` cost keeps a trial whose
    load generator was saturated: nginx's CPU per request does not depend on it.
    """
    rps = as_float(row.get("rps") or math.nan)
    errors = as_float(row.get("error_rate") or 0.0)
    if not rps > 0 or not errors <= MAX_ERROR_RATE:
        return math.nan
    if measure == "rps":
        return 1.0 / rps if row.get("valid", True) else math.nan
    cpu = as_float(row.get("server_cpu_pct") or math.nan)
    return 1e6 * cpu / 100.0 / rps if cpu > 0 else math.nan


def pair_problem(rows: Sequence[Mapping[str, JsonValue]], runs: Sequence[Run]) -> str:
    """Why a pair's two trials cannot be compared ("" when they can).

    A pair is invalid when a client was lost in either trial (its run's ``lost_clients``
    names the trial), or when its two trials ran on different clients (one side's client had
    come back, the other's not): their loads differ.
    """
    for row, run in zip(rows, runs, strict=True):
        lost = run.meta.get("lost_clients")
        for entry in lost if isinstance(lost, list) else []:
            if isinstance(entry, Mapping) and entry.get("trial_id") == row["trial_id"]:
                return f"{entry['reason']} (trial {row['trial_id']})"
    hosts = [str(r["client_hosts"]) for r in rows]
    if len(set(hosts)) > 1:
        return "its trials ran on different clients (" + " / ".join(hosts) + ")"
    return ""


def ratios(a_costs: Sequence[float], b_costs: Sequence[float]) -> list[float]:
    """Per-pair B/A cost ratios, pairs where either side is missing left out."""
    return [
        b / a
        for a, b in zip(a_costs, b_costs, strict=True)
        if math.isfinite(a) and math.isfinite(b) and a > 0
    ]


def judge(values: Sequence[float], threshold: float, confidence: float = 0.95) -> Verdict:
    """Judge per-pair ratios: B is worse when the median's lower bound exceeds 1 + threshold.

    Parameters
    ----------
    values : sequence of float
        B/A cost ratios, one per pair (at least 2).
    threshold : float
        Allowed slowdown as a fraction, in [0, 1).
    confidence : float
        Interval level, in (0, 1).

    Raises
    ------
    ValueError
        With fewer than 2 finite ratios, or a threshold or confidence out of range.
    """
    vals = [float(v) for v in values if math.isfinite(v) and v > 0]
    if len(vals) < 2:
        raise ValueError(f"{len(vals)} usable pairs; at least 2 are needed")
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold {threshold} is outside [0, 1)")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} is outside (0, 1)")
    rng = random.Random(BOOTSTRAP_SEED)
    n = len(vals)
    meds = sorted(statistics.median(rng.choices(vals, k=n)) for _ in range(BOOTSTRAP_RESAMPLES))
    tail = (1 - confidence) / 2
    low = meds[math.floor(tail * (len(meds) - 1))]
    high = meds[math.ceil((1 - tail) * (len(meds) - 1))]
    return Verdict(
        median=statistics.median(vals),
        low=low,
        high=high,
        n=n,
        spread=statistics.stdev(vals),
        threshold=threshold,
        confidence=confidence,
        worse=low > 1 + threshold,
    )


@dataclass(frozen=True)
class PairSettings:
    """How the pairs are measured.

    Attributes
    ----------
    pairs : int
        Pairs of trials.
    threads, connections : int
        The load generator's threads and connections in every trial.
    measure : str
        ``cpu`` (server CPU time per request) or ``rps`` (1/RPS).
    restart : bool
        Restart each nginx before each pair after the first.
    schedule : str
        ``together`` (a pair's trials at the same time) or ``alternate`` (A B, B A, ...).
    """

    pairs: int
    threads: int = 1
    connections: int = 16
    measure: str = "cpu"
    restart: bool = True
    schedule: str = "together"


def with_directives(plan: Plan, b_directives: Sequence[str]) -> Plan:
    """Plan B of ``runners ab``: ``plan`` with ``b_directives`` added to its ``http`` block."""
    scenario = plan.scenario
    return replace(
        plan,
        scenario=replace(scenario, directives=(*scenario.directives, *b_directives)),
        label=(plan.label + "-B") if plan.label else "B",
    )


def run_pairs(
    plan: Plan,
    plan_b: Plan,
    settings: PairSettings,
    out: str,
    *,
    progress: IO[str] | None = sys.stderr,
    access: Access | None = None,
) -> tuple[list[float], list[float], tuple[str, str]]:
    """Measure A (``plan``) and B (``plan_b``, e.g. `with_directives`) in interleaved pairs.

    Each side is its own run folder under ``out`` with its own private nginx; both nginx
    are pinned to the same CPUs (``plan.vcpus[0]`` of them) and loaded with the same
    threads and connections. With ``settings.schedule`` "together", a pair's two trials run
    at the same time, each with its own load generator, so both nginx share the CPUs and see
    the same interference; with "alternate", one after the other, A then B when i is even, B
    then A when odd. With ``settings.restart``, each nginx is restarted before each pair
    after the first. A pair in which a client was lost (`pair_problem`) is named on
    ``progress`` and in both runs' ``invalid_pairs``, and measured again, at most
    `MAX_PAIR_RERUNS` times a command; past that it counts as unusable (NaN costs). The lost
    client is tried again before the next trial (`runners.session.Session.trial`).

    Returns
    -------
    a_costs, b_costs : list of float
        Per pair, each side's cost under ``settings.measure`` (NaN for an unusable trial).
    run_ids : tuple of str
        The two run folders' ids (A, B).
    """
    from runners.run import open_run

    plan_a = replace(plan, label=(plan.label + "-A") if plan.label else "A")
    plan_a, run_a = open_run(plan_a, out, None)
    try:
        plan_b, run_b = open_run(plan_b, out, None)
    except BaseException:
        run_a.close()
        raise
    a_costs: list[float] = []
    b_costs: list[float] = []
    try:
        _measure_pairs(
            plan_a, plan_b, (run_a, run_b), settings, (a_costs, b_costs), progress, access
        )
    except KeyboardInterrupt as exc:
        # Both run folders exist and hold the trials measured so far: the message names them.
        exc.run_folders = (run_a.run_id, run_b.run_id)  # type: ignore[attr-defined]
        raise
    finally:
        run_a.close()
        run_b.close()
    return a_costs, b_costs, (run_a.run_id, run_b.run_id)


def _measure_pairs(
    plan_a: Plan,
    plan_b: Plan,
    runs: tuple[Run, Run],
    settings: PairSettings,
    costs: tuple[list[float], list[float]],
    progress: IO[str] | None,
    access: Access | None,
) -> None:
    """The pairs of `run_pairs`, each side's cost appended to its list of ``costs``."""
    from runners.session import Session, closed_together, connect_hosts

    vcpus, s = plan_a.vcpus[0], settings
    a_costs, b_costs = costs
    with (
        runs[0].status(),
        runs[1].status(),
        connect_hosts(plan_a, access) as hosts_a,
        connect_hosts(plan_b, access) as hosts_b,
        Session(plan_b, hosts_b, runs[1]) as sb,
        Session(plan_a, hosts_a, runs[0]) as sa,
        closed_together([sa, sb]),
    ):
        i, reruns = 0, 0
        while i < s.pairs:
            order = ((sa, a_costs), (sb, b_costs))
            if i % 2:
                order = order[::-1]
            rows = _pair(order, vcpus, s, restart=s.restart and (i > 0 or reruns > 0))
            problem = pair_problem(rows, [session.run for session, _ in order])
            if problem:
                _record_invalid_pair(i + 1, rows, [session.run for session, _ in order], problem)
            if problem and reruns < MAX_PAIR_RERUNS:
                reruns += 1
                if progress is not None:
                    print(
                        f"pair {i + 1}/{s.pairs}: invalid, {problem}; measured again "
                        f"({reruns} of {MAX_PAIR_RERUNS} re-runs)",
                        file=progress,
                        flush=True,
                    )
                continue
            for row, (_, side) in zip(rows, order, strict=True):
                side.append(math.nan if problem else pair_cost(row, s.measure))
            if progress is not None:
                r = b_costs[-1] / a_costs[-1] if a_costs[-1] > 0 else math.nan
                note = f" (invalid, not counted: {problem})" if problem else ""
                print(f"pair {i + 1}/{s.pairs}: B/A {r:.3f}{note}", file=progress, flush=True)
            i += 1


def _pair(
    order: Sequence[tuple[Session, list[float]]], vcpus: int, s: PairSettings, *, restart: bool
) -> list[Mapping[str, JsonValue]]:
    """One pair's rows, in ``order``'s order (each nginx restarted first with ``restart``)."""
    if restart:
        for session, _ in order:
            session.stop_server()
    if s.schedule == "together":
        for session, _ in order:
            session.configure(vcpus)
        return _together([session for session, _ in order], vcpus, s.threads, s.connections)
    return [session.trial(vcpus, s.threads, s.connections) for session, _ in order]


def _record_invalid_pair(
    number: int, rows: Sequence[Mapping[str, JsonValue]], runs: Sequence[Run], problem: str
) -> None:
    """Add the invalid pair to each run's ``invalid_pairs`` in ``run.json``."""
    entry: JsonObject = {
        "pair": number,
        "trial_ids": [str(r["trial_id"]) for r in rows],
        "reason": problem,
    }
    for run in runs:
        run.record_more("invalid_pairs", [entry])


def _together(
    sessions: Sequence[Session], vcpus: int, threads: int, connections: int
) -> list[Mapping[str, JsonValue]]:
    """One trial of each session at the same time; their rows, in ``sessions``' order.

    The warm-ups run together, then, once every warm-up has ended, the measured parts.
    Raises the first error of a trial that failed for a reason of its own (the others are
    then stopped at the barrier, or finish).
    """
    barrier = threading.Barrier(len(sessions))

    def one(session: Session) -> Mapping[str, JsonValue]:
        try:
            row = session.trial(vcpus, threads, connections, ready=barrier.wait)
        except BaseException:
            barrier.abort()
            raise
        return row

    hosts = {id(h): h for s in sessions for h in s.hosts.distinct()}.values()
    futures = side_by_side([functools.partial(one, s) for s in sessions], hosts)
    errors = [f.exception() for f in futures]
    own = [e for e in errors if e is not None and not isinstance(e, threading.BrokenBarrierError)]
    if own:
        raise own[0]
    return [f.result() for f in futures]


def render(
    verdict: Verdict,
    measure: str,
    run_ids: Sequence[str],
    values: Sequence[float],
    schedule: str = "together",
) -> str:
    """The verdict as text: every number names the runs it comes from."""
    what = "nginx CPU per request" if measure == "cpu" else "1/RPS"
    when = "each pair's trials together" if schedule == "together" else "trials alternated"
    lines = [
        f"A/B pairs: {verdict.n} (runs {run_ids[0]} = A, {run_ids[1]} = B; {what}; {when})",
        "per-pair B/A: " + " ".join(f"{v:.3f}" for v in values),
        f"median B/A {verdict.median:.3f}, {verdict.confidence:.0%} bootstrap interval "
        f"[{verdict.low:.3f}, {verdict.high:.3f}], spread (sd) {verdict.spread:.3f}",
        (
            f"WORSE: B costs more than {verdict.threshold:.1%} above A "
            f"at {verdict.confidence:.0%} confidence"
            if verdict.worse
            else f"pass: not shown worse than {verdict.threshold:.1%} "
            f"at {verdict.confidence:.0%} confidence"
        ),
    ]
    return "\n".join(lines)
