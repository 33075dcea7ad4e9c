"""What the answer is most sensitive to: one uncertain input at a time across its range.

Each uncertain input of the capacity model (a cost coefficient, a CPU platform's speed, an
estimated model constant, the level of a measurement) is moved to the low and then
the high end of its range while every other input stays at its point value, and the fast
``recommend`` path is run again. The effect is the change of the fleet cost at the chosen
confidence (the cheapest option's count that keeps the headroom with that probability, times
its price). The result is the data of a tornado chart.

`uncertain_inputs` lists the inputs; a new input of the model is one more `UncertainInput`
with a function that applies it. Imports numpy and the standard library only.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from sizing.catalog.load import Instance
from sizing.errors import Infeasible
from sizing.fleet.recommend import Recommendation
from sizing.model import capacity as _capacity
from sizing.model.capacity import Capacity, Evidence
from sizing.model.costmodel import (
    Coefficient,
    CostProfile,
    cpu_us_per_request,
    current_stack_coefficients,
    reference_profile,
)
from sizing.model.platforms import Platform, platform_of
from sizing.workload.value import Workload

# The module, not the function `sizing.fleet.recommend` that the package exports under that name.
_recommend = importlib.import_module("sizing.fleet.recommend")

__all__ = [
    "Sensitivity",
    "UncertainInput",
    "cost_at_confidence",
    "sensitivity",
    "uncertain_inputs",
]

#: Range of the estimated model constants that have a point value only (estimates).
CONSTANT_RANGES: dict[str, tuple[float, float, str]] = {
    "base_latency_ms": (
        0.25,
        1.0,
        "p99 outside NGINX's queue, 0.25 to 1 ms (estimate: one zone's round trip and stacks)",
    ),
}


@dataclass(frozen=True)
class UncertainInput:
    """One input of the model that has a range.

    Attributes
    ----------
    key : str
        Stable identifier, e.g. ``family:c6in`` or ``base_latency_ms``.
    label : str
        What a reader sees, e.g. ``c6in speed per vCPU``.
    kind : str
        ``estimate``, ``published`` or ``measured``.
    low, high, value : float
        The range and the point value, in the input's own unit (``unit``).
    unit : str
        Unit of ``low``/``high``/``value`` (``x`` for a multiplier).
    source : str
        Where the range comes from.
    apply : callable
        ``apply(v)`` returns a context manager under which the model uses ``v`` for this
        input.
    """

    key: str
    label: str
    kind: str
    low: float
    high: float
    value: float
    unit: str
    source: str
    apply: Callable[[float], contextlib.AbstractContextManager[None]]


@dataclass(frozen=True)
class Sensitivity:
    """Fleet cost at the confidence with one input at its low and at its high end.

    Attributes
    ----------
    input : UncertainInput
        The input moved.
    cost_low, cost_high : float or None
        Hourly fleet cost at the confidence [USD/h] with the input at its low/high end (None:
        no option meets the target then).
    choice_low, choice_high : str
        The cheapest fleet then, e.g. ``12 x c7g.2xlarge``.
    """

    input: UncertainInput
    cost_low: float | None
    cost_high: float | None
    choice_low: str
    choice_high: str

    @property
    def swing(self) -> float:
        """Spread of the cost across the range [USD/h] (infinite when an end is infeasible)."""
        if self.cost_low is None or self.cost_high is None:
            return math.inf
        return abs(self.cost_high - self.cost_low)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready row."""
        i = self.input
        return {
            "key": i.key,
            "label": i.label,
            "kind": i.kind,
            "low": i.low,
            "high": i.high,
            "value": i.value,
            "unit": i.unit,
            "source": i.source,
            "cost_low_usd_hour": self.cost_low,
            "cost_high_usd_hour": self.cost_high,
            "choice_low": self.choice_low,
            "choice_high": self.choice_high,
        }


def cost_at_confidence(rec: Recommendation) -> tuple[float, str]:
    """The cheapest fleet at the recommendation's confidence and its compute cost [USD/h].

    Fleets rank as the options do, with the month's egress (`Option.egress_monthly_usd`, the
    same for every type of one provider and region); the cost returned is the instances'.
    """
    best: tuple[float, float, str] | None = None
    for o in rec.options:
        n = o.count_at_confidence
        if n is None:
            continue
        cost = n * o.unit_price_usd_hour
        total = cost + o.egress_monthly_usd / 730.0
        if best is None or total < best[0]:
            best = (total, cost, f"{n} x {o.capacity.instance.instance_type}")
    if best is None:
        raise Infeasible("no option keeps the headroom at the confidence")
    return best[1], best[2]


# ----------------------------------------------------------------------------- inputs


@contextlib.contextmanager
def _patched(name: str, value: Any) -> Iterator[None]:
    """Let `sizing.model.capacity` see ``value`` under ``name`` for the duration."""
    space = vars(_capacity)
    original = space[name]
    space[name] = value
    try:
        yield
    finally:
        space[name] = original


def _coefficient_set(name: str, v: float) -> contextlib.AbstractContextManager[None]:
    current = current_stack_coefficients()
    if name in current:  # the answer takes it from the current stack, not the reference
        c = current[name]
        moved_current = {**current, name: replace(c, value=v, stderr=_scaled_sd(c, v))}
        return _patched("current_stack_coefficients", lambda: moved_current)
    ref = reference_profile()
    coefs = dict(ref.coefficients)
    c = coefs[name]
    coefs[name] = replace(c, value=v, stderr=_scaled_sd(c, v))
    moved = replace(ref, coefficients=coefs)
    return _patched("reference_profile", lambda: moved)


def _scaled_sd(c: Coefficient, v: float) -> float:
    """The same relative error at ``v``: moving the value alone must not widen the spread."""
    return c.stderr * (v / c.value) if c.value else c.stderr


def _platform_speed(platform_id: str, v: float) -> contextlib.AbstractContextManager[None]:
    original = platform_of

    def moved(inst: Instance) -> Platform:
        plat = original(inst)
        return replace(plat, core_speed=v) if plat.platform_id == platform_id else plat

    return _patched("platform_of", moved)


@contextlib.contextmanager
def _cloud_speed_set(platform_id: str, base: float, v: float) -> Iterator[None]:
    """The fitted per-vCPU speed of one platform scaled to ``v`` (from ``base``)."""
    original = _capacity.cloud_speed

    def moved(plat: Platform, tpc: int, work: Workload) -> tuple[float, float, str] | None:
        got = original(plat, tpc, work)
        if got is None or plat.platform_id != platform_id:
            return got
        return got[0] * v / base, got[1], got[2]

    with _patched("cloud_speed", moved):
        yield


@contextlib.contextmanager
def _constant_set(name: str, value: float) -> Iterator[None]:
    old = _capacity.ESTIMATES[name]
    _capacity.ESTIMATES[name] = (value, old[1])
    try:
        yield
    finally:
        _capacity.ESTIMATES[name] = old


@contextlib.contextmanager
def _measured_scaled(family: str, scale: float) -> Iterator[None]:
    """Scale the measured capacity of one family (measurements are already at the SLA)."""
    space = vars(_recommend)
    original: Callable[
        [Sequence[Instance], Workload, Evidence | None, Sequence[CostProfile]], list[Capacity]
    ]
    original = space["instance_capacities"]

    def scaled(
        insts: Sequence[Instance],
        work: Workload,
        evidence: Evidence | None = None,
        profiles: Sequence[CostProfile] = (),
    ) -> list[Capacity]:
        caps = original(insts, work, evidence, profiles)
        for i, cap in enumerate(caps):
            if cap.measured and cap.instance.family == family:
                cpu = cap.cpu_sla_rps * scale
                caps[i] = replace(cap, cpu_sla_rps=cpu, capacity_rps=min(cpu, cap.network_rps))
        return caps

    space["instance_capacities"] = scaled
    try:
        yield
    finally:
        space["instance_capacities"] = original


def _measured_at(family: str, point: float, v: float) -> contextlib.AbstractContextManager[None]:
    return _measured_scaled(family, v / point)


def _kind(c: Coefficient) -> str:
    if c.source.startswith("estimate"):
        return "estimate"
    return "measured" if c.measured_over == "loopback" else "published"


def uncertain_inputs(
    rec: Recommendation, *, families_of_top: int = 8, min_share: float = 0.02
) -> list[UncertainInput]:
    """The inputs with a range that can move the recommendation's answer.

    Parameters
    ----------
    rec : Recommendation
        The answer whose inputs to list.
    families_of_top : int
        The CPU platforms of this many cheapest options are listed (the others cannot move
        the cheapest fleet much).
    min_share : float
        Cost coefficients that make up less than this share of the CPU time per request of
        the workload are left out.

    Returns
    -------
    list of UncertainInput
        The cost model's coefficients that matter for the workload (95% range from their
        standard errors or estimated ranges), the per-core speed of each CPU platform of the
        cheapest options, the estimated base latency, and each measured family's level.
    """
    work = rec.workload
    ref = reference_profile()
    cost = cpu_us_per_request(work, ref)
    # The coefficients the answer uses: the current stack's where it has them.
    used = {**ref.coefficients, **current_stack_coefficients()}
    out: list[UncertainInput] = []
    for name, us in sorted(cost.terms.items(), key=lambda kv: -abs(kv[1])):
        c = used.get(name)
        if c is None or c.stderr <= 0 or abs(us) < min_share * cost.us:
            continue
        lo, hi = max(c.value - 1.96 * c.stderr, c.value * 0.05), c.value + 1.96 * c.stderr
        out.append(
            UncertainInput(
                key=f"coef:{name}",
                label=f"{name} ({c.unit})",
                kind=_kind(c),
                low=lo,
                high=hi,
                value=c.value,
                unit=c.unit,
                source=c.source,
                apply=partial(_coefficient_set, name),
            )
        )
    seen: set[str] = set()
    for o in rec.options[:families_of_top]:
        if o.capacity.measured == "own":
            continue
        plat = platform_of(o.capacity.instance)
        if plat.platform_id in seen:
            continue
        fitted = (
            None
            if work.gzip >= _capacity.GZIP_BOUND
            else _capacity.cloud_speed(plat, plat.threads_per_core, work)
        )
        if fitted is not None:
            seen.add(plat.platform_id)
            speed, sd, why = fitted
            out.append(
                UncertainInput(
                    key=f"platform:{plat.platform_id}",
                    label=f"{plat.name} speed per vCPU",
                    kind="published" if "fitted" in why else "estimate",
                    low=speed * math.exp(-1.96 * sd),
                    high=speed * math.exp(1.96 * sd),
                    value=speed,
                    unit="x reference core",
                    source=why,
                    apply=partial(_cloud_speed_set, plat.platform_id, speed),
                )
            )
            continue
        if plat.core_speed_high <= plat.core_speed_low:
            continue
        seen.add(plat.platform_id)
        out.append(
            UncertainInput(
                key=f"platform:{plat.platform_id}",
                label=f"{plat.name} speed per core",
                kind="estimate" if plat.estimate else "published",
                low=plat.core_speed_low,
                high=plat.core_speed_high,
                value=plat.core_speed,
                unit="x reference core",
                source=plat.source,
                apply=partial(_platform_speed, plat.platform_id),
            )
        )
    for name, (lo, hi, why) in CONSTANT_RANGES.items():
        v = _capacity.ESTIMATES[name][0]
        out.append(
            UncertainInput(
                key=name,
                label=name.replace("_ms", "").replace("_", " ") + " [ms]",
                kind="estimate",
                low=lo,
                high=hi,
                value=v,
                unit="ms",
                source=why,
                apply=partial(_constant_set, name),
            )
        )
    ev = rec.evidence
    for cal in getattr(ev, "calibrations", []) or []:
        sd = float(getattr(cal, "k_sd", 0.0) or 0.0)
        if sd <= 0:
            continue
        k = float(cal.k)
        out.append(
            UncertainInput(
                key=f"measured:{cal.family}",
                label=f"measured level of {cal.family}",
                kind="measured",
                low=k * math.exp(-1.96 * sd),
                high=k * math.exp(1.96 * sd),
                value=k,
                unit="x model",
                source=f"runs {', '.join(cal.series.runs)} (95% range of the measured level)",
                apply=partial(_measured_at, cal.family, k),
            )
        )
    return out


def sensitivity(
    rec: Recommendation,
    instances: Sequence[Instance],
    *,
    inputs: Sequence[UncertainInput] | None = None,
    max_count: int | None = None,
) -> list[Sensitivity]:
    """Fleet cost at the confidence with each uncertain input at its low and high end.

    Parameters
    ----------
    rec : Recommendation
        The answer at every input's point value (its target, workload, headroom, redundancy,
        evidence and confidence are reused).
    instances : sequence of Instance
        The candidates ``rec`` was computed from.
    inputs : sequence of UncertainInput, optional
        What to move; `uncertain_inputs` of ``rec`` by default.
    max_count : int, optional
        As given to `sizing.fleet.recommend.recommend`.

    Returns
    -------
    list of Sensitivity
        Largest swing first.
    """
    rows = []
    for inp in uncertain_inputs(rec) if inputs is None else inputs:
        ends: list[tuple[float | None, str]] = []
        for v in (inp.low, inp.high):
            with inp.apply(v):
                try:
                    r = _recommend.recommend(
                        rec.target_rps,
                        instances,
                        rec.workload,
                        rec.headroom,
                        rec.redundancy,
                        max_count,
                        rec.evidence,
                        rec.confidence,
                        profiles=rec.profiles,
                        zones=rec.rules.zones,
                        zone_loss=rec.rules.zone_loss,
                        pricing=rec.rules.pricing,
                        spot_reserve=rec.rules.spot_reserve,
                        sort=rec.sort,
                        clients=rec.traffic.get("clients", "internet"),
                        include_families=rec.include_families,
                    )
                    ends.append(cost_at_confidence(r))
                except Infeasible:
                    ends.append((None, "none meets the target"))
        rows.append(Sensitivity(inp, ends[0][0], ends[1][0], ends[0][1], ends[1][1]))
    rows.sort(key=lambda s: (-s.swing, s.input.key))
    return rows
