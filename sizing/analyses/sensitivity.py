"""What the answer is most sensitive to: one uncertain input at a time across its range.

Each uncertain input of the capacity model (a cost coefficient, a CPU platform's speed, an
estimated model constant, the level of a measurement) is moved to the low and then
the high end of its range while every other input stays at its point value, and the fast
``recommend`` path is run again. The effect is the change of the fleet cost at the chosen
confidence (the cheapest option's count that keeps the headroom with that probability, times
its price). The result is the data of a tornado chart.

`uncertain_inputs` lists the inputs; a new input of the model is one more `UncertainInput`
with a function that gives the `sizing.model.inputs.ModelInputs` of a value. Each end is the
answer's own question (`Recommendation.question`: every flag of the headline) asked again
with those model inputs; nothing of the model's modules is assigned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from sizing.catalog.load import Instance
from sizing.errors import Infeasible
from sizing.fleet.engine import answer
from sizing.fleet.recommend import Recommendation, RowTable
from sizing.model import capacity as _capacity
from sizing.model.capacity import Evidence
from sizing.model.costmodel import (
    Coefficient,
    cpu_us_per_request,
    current_stack_coefficients,
    reference_profile,
)
from sizing.model.inputs import ModelInputs
from sizing.model.platforms import platform_of
from sizing.workload.value import Workload
from trialtable.jsonvalue import JsonObject

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
    at : callable
        ``at(v)`` is the `ModelInputs` with this input at ``v`` (every other at its point).
    """

    key: str
    label: str
    kind: str
    low: float
    high: float
    value: float
    unit: str
    source: str
    at: Callable[[float], ModelInputs]


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

    def to_dict(self) -> JsonObject:
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


def _coefficient_at(name: str, v: float) -> ModelInputs:
    return ModelInputs(coefficients=((name, v),))


def _core_speed_at(platform_id: str, v: float) -> ModelInputs:
    return ModelInputs(core_speeds=((platform_id, v),))


def _cloud_speed_at(platform_id: str, base: float, v: float) -> ModelInputs:
    """The fitted per-vCPU speed of one platform scaled to ``v`` (from ``base``)."""
    return ModelInputs(cloud_speeds=((platform_id, v / base),))


def _constant_at(name: str, v: float) -> ModelInputs:
    return ModelInputs(estimates=((name, v),))


def _measured_at(family: str, point: float, v: float) -> ModelInputs:
    """The measured capacity of one family scaled (measurements are already at the SLA)."""
    return ModelInputs(measured=((family, v / point),))


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
    return [
        *_coefficient_inputs(rec.workload, min_share),
        *_platform_inputs(rec, families_of_top),
        *_constant_inputs(),
        *_measured_inputs(rec.evidence),
    ]


def _coefficient_inputs(work: Workload, min_share: float) -> list[UncertainInput]:
    """The cost coefficients that make up at least ``min_share`` of the workload's CPU time."""
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
                at=partial(_coefficient_at, name),
            )
        )
    return out


def _platform_inputs(rec: Recommendation, families_of_top: int) -> list[UncertainInput]:
    """The speed of each CPU platform of the ``families_of_top`` cheapest options."""
    work = rec.workload
    out: list[UncertainInput] = []
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
                    at=partial(_cloud_speed_at, plat.platform_id, speed),
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
                at=partial(_core_speed_at, plat.platform_id),
            )
        )
    return out


def _constant_inputs() -> list[UncertainInput]:
    """The estimated model constants with a range (`CONSTANT_RANGES`)."""
    out: list[UncertainInput] = []
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
                at=partial(_constant_at, name),
            )
        )
    return out


def _measured_inputs(ev: Evidence | None) -> list[UncertainInput]:
    """The level of each family measured by runs, over its 95% range."""
    out: list[UncertainInput] = []
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
                at=partial(_measured_at, cal.family, k),
            )
        )
    return out


def sensitivity(
    rec: Recommendation,
    instances: Sequence[Instance],
    *,
    inputs: Sequence[UncertainInput] | None = None,
) -> list[Sensitivity]:
    """Fleet cost at the confidence with each uncertain input at its low and high end.

    Parameters
    ----------
    rec : Recommendation
        The answer at every input's point value; its question (``rec.question``: target,
        workload, fleet rules, pricing, sort, families, burstable types, evidence, profiles)
        is asked again at each end.
    instances : sequence of Instance
        The candidates ``rec`` was computed from.
    inputs : sequence of UncertainInput, optional
        What to move; `uncertain_inputs` of ``rec`` by default.

    Returns
    -------
    list of Sensitivity
        Largest swing first.
    """
    # The cheapest fleet at the confidence reads the options, not the mix: not solved again.
    asked = replace(rec.question, mix=1)
    table = RowTable(instances)
    rows = []
    for inp in uncertain_inputs(rec) if inputs is None else inputs:
        ends: list[tuple[float | None, str]] = []
        for v in (inp.low, inp.high):
            try:
                ends.append(cost_at_confidence(answer(replace(asked, model=inp.at(v)), table)))
            except Infeasible:
                ends.append((None, "none meets the target"))
        rows.append(Sensitivity(inp, ends[0][0], ends[1][0], ends[0][1], ends[1][1]))
    rows.sort(key=lambda s: (-s.swing, s.input.key))
    return rows
