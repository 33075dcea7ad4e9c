"""Fleet counts: the rules a fleet must survive, counts per type, and the options found.

A count meets the `FleetRules` when the instances left after a zone loss, a spot reclaim and
``redundancy`` failures still carry the target with the headroom kept. Every count is computed
in integers with bounded loops; fleets above `MAX_FLEET` instances are not considered.

`Option` and `Recommendation` are the answer's data, frozen: `sizing.fleet.engine` makes each
once with every field (`dataclasses.replace` derives a new one), `sizing.fleet.mix` and
`sizing.fleet.decision` read them (both import this module, never
``recommend``, so the package has no import cycle).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sizing.catalog.load import PRICING_COLUMNS
from sizing.catalog.rows import HOURS_PER_MONTH
from sizing.errors import InputError
from sizing.model.capacity import ESTIMATES, Capacity, Workload
from sizing.model.carbon import Carbon, fleet_carbon, option_fields
from sizing.model.costmodel import CostProfile
from sizing.units import CONFIDENCE_RANGE
from sizing.vocabulary import SORTS as SORTS  # re-exported

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

DEFAULT_HEADROOM = 0.2
#: Largest fleet of one type considered: a bound on every count search.
MAX_FLEET = 1_000_000
#: Estimate: the fraction of a spot fleet that may be reclaimed at once. AWS publishes
#: interruption-frequency bands of <5% to >20% a month per pool and GCP may reclaim spot VMs
#: at any time with 30 s notice; 20% covers a bad pool without doubling the fleet.
DEFAULT_SPOT_RESERVE = 0.2


@dataclass(frozen=True)
class FleetRules:
    """How a fleet must survive: headroom, zones, failures, pricing and spot reserve.

    Attributes
    ----------
    headroom : float
        Spare fraction of every instance's capacity under the SLA [1].
    redundancy : int
        Instances that may fail (after a zone loss) while the rest meet the target.
    zones : int
        Zones the fleet is spread over, evenly, at least one instance in each.
    zone_loss : int
        Whole zones that may fail (the fullest ones), < ``zones``.
    pricing : str
        A key of `sizing.catalog.load.PRICING_COLUMNS`.
    spot_reserve : float
        Fraction of the fleet that may be reclaimed at once (used with spot prices) [1].
    max_count : int or None
        Largest fleet to consider (defaults to `MAX_FLEET`).
    confidence : float
        Probability with which the headroom must hold for the count at confidence.
    """

    headroom: float = DEFAULT_HEADROOM
    redundancy: int = 0
    zones: int = 1
    zone_loss: int = 0
    pricing: str = "on-demand"
    spot_reserve: float = 0.0
    max_count: int | None = None
    confidence: float = 0.95

    def check(self) -> None:
        """Raise InputError for a rule out of range."""
        if not (isinstance(self.headroom, int | float) and 0 <= self.headroom < 1):
            raise InputError(f"headroom must be a fraction in [0, 1), got {self.headroom!r}")
        if not 0 <= self.redundancy <= MAX_FLEET:
            raise InputError(
                f"redundancy must be 0 to {MAX_FLEET:,} instances, got {self.redundancy!r}"
            )
        if not 1 <= self.zones <= 64:
            raise InputError(f"zones must be 1 to 64, got {self.zones!r}")
        if not 0 <= self.zone_loss < self.zones:
            raise InputError(
                f"zone loss must be fewer than the {self.zones} zone(s), got {self.zone_loss!r}"
            )
        if self.pricing not in PRICING_COLUMNS:
            raise InputError(
                f"unknown pricing {self.pricing!r}; expected one of: {', '.join(PRICING_COLUMNS)}"
            )
        if not (isinstance(self.spot_reserve, int | float) and 0 <= self.spot_reserve < 1):
            raise InputError(
                f"spot reserve must be a fraction in [0, 1), got {self.spot_reserve!r}"
            )
        if self.max_count is not None and not 1 <= self.max_count:
            raise InputError(f"max count must be >= 1, got {self.max_count!r}")
        low, high = CONFIDENCE_RANGE
        if not (isinstance(self.confidence, int | float) and low <= self.confidence <= high):
            raise InputError(f"confidence must be in [{low:g}, {high:g}], got {self.confidence!r}")

    @property
    def limit(self) -> int:
        """Largest fleet considered."""
        return min(self.max_count or MAX_FLEET, MAX_FLEET)


def per_zone(count: int, zones: int) -> list[int]:
    """An even spread of ``count`` instances over ``zones`` (fullest zones first)."""
    q, r = divmod(count, zones)
    return [q + 1] * r + [q] * (zones - r)


def survivors(count: int, rules: FleetRules) -> int:
    """Instances certain to remain after the rules' zone loss, spot reclaim and failures.

    With an even spread, ``r`` zones hold ``q + 1`` instances and the rest ``q``; losing the
    ``zone_loss`` fullest leaves ``(zones - zone_loss) * q + max(0, r - zone_loss)``.
    """
    q, r = divmod(count, rules.zones)
    left = (rules.zones - rules.zone_loss) * q + max(0, r - rules.zone_loss)
    if rules.spot_reserve > 0:
        left = math.floor(left * (1.0 - rules.spot_reserve) + 1e-9)
    return left - rules.redundancy


def min_instances(target_rps: float, usable_rps: float) -> int | None:
    """Smallest ``m`` with ``m * usable_rps >= target_rps`` (None: above `MAX_FLEET`).

    Integer arithmetic around one float division, with at most two corrections each way.
    """
    if not (usable_rps > 0 and math.isfinite(usable_rps)):
        return None
    ratio = target_rps / usable_rps
    if not math.isfinite(ratio) or ratio > MAX_FLEET:
        return None
    m = max(math.ceil(ratio), 1)
    for _ in range(2):  # guard the float division at exact multiples
        if m > 1 and (m - 1) * usable_rps >= target_rps:
            m -= 1
    for _ in range(2):
        if m * usable_rps < target_rps:
            m += 1
    return m


def min_instances_array(target_rps: float, usable_rps: ArrayLike) -> np.ndarray:
    """`min_instances` of every element of ``usable_rps`` at once: inf where it is None.

    The same rule with the same float operations, element-wise: one division, its ceiling
    (at least 1), at most two steps down while ``(m - 1) * usable >= target``, then two up
    while ``m * usable < target`` (a step that changes no element leaves the next
    unchanged); usable rates that are not positive and finite, or that need more than
    `MAX_FLEET` instances, give inf. Imports numpy on first use (``recommend`` does not).

    Parameters
    ----------
    target_rps : float
        Requests per second to serve [1/s].
    usable_rps : array_like
        What one instance serves with the headroom kept, any shape [1/s].

    Returns
    -------
    numpy.ndarray
        Instances needed, as floats of ``usable_rps``'s shape (inf: no such fleet) [1].
    """
    import numpy as np

    q = np.asarray(usable_rps, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = target_rps / q
        ok = (q > 0) & np.isfinite(q) & np.isfinite(ratio) & (ratio <= MAX_FLEET)
        m = np.maximum(np.ceil(np.where(ok, ratio, 1.0)), 1.0)
        for _ in range(2):  # guard the float division at exact multiples
            down = ok & (m > 1) & ((m - 1) * q >= target_rps)
            if not down.any():
                break
            m -= down
        for _ in range(2):
            up = ok & (m * q < target_rps)
            if not up.any():
                break
            m += up
    return np.where(ok, m, math.inf)


def fleet_count(target_rps: float, usable_rps: float, redundancy: int) -> int | None:
    """Smallest ``n`` with ``(n - redundancy) * usable_rps >= target_rps`` (None: no such n)."""
    m = min_instances(target_rps, usable_rps)
    return None if m is None else m + redundancy


def count_for(target_rps: float, usable_rps: float, rules: FleetRules) -> int | None:
    """Smallest fleet whose `survivors` carry the target at ``usable_rps`` each.

    A binary search over at most ``log2(MAX_FLEET)`` steps; None when no fleet within the
    rules' limit does.
    """
    m = min_instances(target_rps, usable_rps)
    return None if m is None else count_of_min(m, rules)


def count_of_min(m: int, rules: FleetRules) -> int | None:
    """Smallest fleet whose `survivors` are at least ``m`` instances (None: above the limit).

    A binary search over at most ``log2(MAX_FLEET)`` steps.
    """
    lo, limit = max(rules.zones, m + rules.redundancy), rules.limit
    if lo > limit or survivors(limit, rules) < m:
        return None
    if survivors(lo, rules) >= m:
        return lo
    # survivors() is non-decreasing in the count: gallop up from lo, then bisect.
    step, hi = 1, lo
    while survivors(hi, rules) < m:  # at most log2(MAX_FLEET) doublings
        lo, hi, step = hi + 1, min(hi + step, limit), step * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if survivors(mid, rules) >= m:
            hi = mid
        else:
            lo = mid + 1
    return lo


def count_for_array(target_rps: float, usable_rps: ArrayLike, rules: FleetRules) -> np.ndarray:
    """`count_for` of every element of ``usable_rps`` at once: inf where it is None.

    `min_instances_array`, then `count_of_min` of each distinct count (the same rule, once per
    value); with one zone and no spot reserve that is ``m + redundancy`` within the limit.

    Parameters
    ----------
    target_rps : float
        Requests per second to serve [1/s].
    usable_rps : array_like
        What one instance serves with the headroom kept, any shape [1/s].
    rules : FleetRules
        The rules the fleet must survive.

    Returns
    -------
    numpy.ndarray
        Instances needed, as floats of ``usable_rps``'s shape (inf: no such fleet) [1].
    """
    import numpy as np

    m = min_instances_array(target_rps, usable_rps)
    if rules.zones == 1 and rules.spot_reserve == 0:
        n = m + rules.redundancy
        return np.where(n <= rules.limit, n, math.inf)
    values, which = np.unique(m, return_inverse=True)
    counts = [count_of_min(int(v), rules) if math.isfinite(v) else None for v in values.tolist()]
    found = np.array([math.inf if c is None else float(c) for c in counts])
    return found[which].reshape(m.shape)


def usd_per_million(hourly_cost_usd: float, target_rps: float) -> float:
    """What a million requests cost when the fleet serves ``target_rps`` under the SLA [USD].

    Parameters
    ----------
    hourly_cost_usd : float
        The fleet's cost [USD/h].
    target_rps : float
        Requests per second it serves [1/s].
    """
    return hourly_cost_usd / (target_rps * 3600.0) * 1e6


def p_meets_target(count: int, redundancy: int, cap: Capacity, target_rps: float) -> float:
    """Probability that ``count - redundancy`` instances serve ``target_rps`` under the SLA.

    The CPU capacity is log-normal around its point value with ``cap.rel_sd`` (the same for
    every instance of a type); the network cap is taken as known.
    """
    m = count - redundancy
    if m <= 0 or m * cap.network_rps < target_rps or cap.cpu_sla_rps <= 0:
        return 0.0
    need = target_rps / (m * cap.cpu_sla_rps)
    if cap.rel_sd <= 0 or need <= 0:  # need is 0 when a tiny target underflows
        return 1.0 if need <= 1 else 0.0
    return 0.5 * math.erfc(math.log(need) / (cap.rel_sd * math.sqrt(2)))


def p_meet(count: int, cap: Capacity, target_rps: float, rules: FleetRules) -> float:
    """Probability that the `survivors` of ``count`` instances serve the target (no headroom)."""
    left = survivors(count, rules)
    return p_meets_target(left, 0, cap, target_rps) if left > 0 else 0.0


def count_at_confidence(
    target_rps: float,
    cap: Capacity,
    headroom: float,
    redundancy: int,
    confidence: float,
    rules: FleetRules | None = None,
) -> int | None:
    """Fewest instances that keep the headroom with probability ``confidence``."""
    r = rules or FleetRules(headroom=headroom, redundancy=redundancy, confidence=confidence)
    return count_for(target_rps, cap.quantile(1.0 - confidence) * (1.0 - headroom), r)


@dataclass(frozen=True)
class Option:
    """One instance type's cheapest fleet for the target (frozen)."""

    capacity: Capacity
    count: int
    utilization: float
    hourly_cost_usd: float
    p_meets_target: float = math.nan
    confidence: float = 0.95
    count_at_confidence: int | None = None
    unit_price_usd_hour: float = math.nan
    rules: FleetRules = field(default_factory=FleetRules)
    p_meets_at_confidence: float = math.nan
    egress: dict[str, Any] | None = None
    #: Spot spares from the type's interruption band (`sizing.fleet.spot`), or None.
    spot: dict[str, Any] | None = None

    @property
    def hourly_cost_at_confidence_usd(self) -> float:
        """Hourly cost of the count at confidence (inf when there is none) [USD/h]."""
        if self.count_at_confidence is None:
            return math.inf
        return self.count_at_confidence * self.unit_price_usd_hour

    @property
    def egress_monthly_usd(self) -> float:
        """The month's data transfer cost (0 when not priced) [USD/month]."""
        usd = (self.egress or {}).get("usd_month")
        return 0.0 if usd is None else float(usd)

    def carbon(self) -> Carbon:
        """The point-estimate fleet's emissions at its CPU load (`sizing.model.carbon`)."""
        cap = self.capacity
        load = self.utilization * cap.capacity_rps / cap.cpu_peak_rps if cap.cpu_peak_rps else 1.0
        return fleet_carbon(cap.instance, self.count, load)

    def to_dict(self, target_rps: float) -> dict[str, Any]:
        """JSON-ready row."""
        inst = self.capacity.instance
        cap = self.capacity
        zones = self.rules.zones
        return {
            "provider": inst.provider,
            "region": inst.region,
            "instance_type": inst.instance_type,
            "family": inst.family,
            "arch": inst.arch,
            "cpu": inst.cpu,
            "vcpus": inst.vcpus,
            "count": self.count,
            "total_vcpus": self.count * inst.vcpus,
            "capacity_rps_per_instance": cap.capacity_rps,
            "cpu_peak_rps_per_instance": cap.cpu_peak_rps,
            "network_rps_per_instance": cap.network_rps,
            "utilization_at_target": self.utilization,
            "price_usd_hour": inst.price_usd_hour,
            "pricing": self.rules.pricing,
            "unit_price_usd_hour": self.unit_price_usd_hour,
            "hourly_cost_usd": self.hourly_cost_usd,
            "monthly_cost_usd": self.hourly_cost_usd * HOURS_PER_MONTH,
            "compute_monthly_usd": self.hourly_cost_usd * HOURS_PER_MONTH,
            "egress_monthly_usd": (self.egress or {}).get("usd_month"),
            "total_monthly_usd": self.hourly_cost_usd * HOURS_PER_MONTH + self.egress_monthly_usd,
            "usd_per_billion_requests": self.hourly_cost_usd / (target_rps * 3600.0) * 1e9,
            "usd_per_million_requests": usd_per_million(
                self.hourly_cost_usd + self.egress_monthly_usd / HOURS_PER_MONTH, target_rps
            ),
            "compute_usd_per_million_requests": usd_per_million(self.hourly_cost_usd, target_rps),
            "binding_constraint": cap.binding_constraint,
            "capacity_factor_range": [cap.factor_low / cap.factor, cap.factor_high / cap.factor],
            "capacity_interval_rps": list(cap.interval(0.95)),
            "capacity_sd_log": cap.rel_sd,
            "measured": cap.measured,
            "p_meets_target": self.p_meets_target,
            "confidence": self.confidence,
            "count_at_confidence": self.count_at_confidence,
            "hourly_cost_at_confidence_usd": (
                None if self.count_at_confidence is None else self.hourly_cost_at_confidence_usd
            ),
            "p_meets_target_at_confidence": self.p_meets_at_confidence,
            "zones": zones,
            "count_per_zone": per_zone(self.count, zones),
            "count_at_confidence_per_zone": (
                None
                if self.count_at_confidence is None
                else per_zone(self.count_at_confidence, zones)
            ),
            "burstable": inst.burstable,
            "egress": self.egress,
            "basis": list(cap.basis),
            **option_fields(
                inst, target_rps, cap.cpu_peak_rps, self.count, self.count_at_confidence
            ),
            **({"spot": self.spot} if self.spot else {}),
        }


@dataclass(frozen=True)
class Recommendation:
    """All feasible options in the chosen order, with the inputs they answer (frozen).

    Made once with every field by `sizing.fleet.engine.answer`; a changed answer is a new
    value (`dataclasses.replace`), never an assignment.
    """

    target_rps: float
    workload: Workload
    headroom: float
    redundancy: int
    options: list[Option]
    excluded: list[dict[str, Any]] = field(default_factory=list)
    evidence: Any = None
    confidence: float = 0.95
    rules: FleetRules = field(default_factory=FleetRules)
    sort: str = "cost-at-confidence"
    mix: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None
    profiles: tuple[CostProfile, ...] = ()
    notes: tuple[str, ...] = ()
    traffic: dict[str, Any] = field(default_factory=dict)
    include_families: tuple[str, ...] = ()

    #: Traffic growth as (the text given, factor per month), or None.
    growth: tuple[str, float] | None = None
    #: The question this answers (`sizing.fleet.question.FleetQuestion`, which imports this
    #: module), when the engine made it.
    question: Any = None

    def option_dicts(self, opts: Sequence[Option]) -> list[dict[str, Any]]:
        """The options' rows, with when each must grow when a growth rate is set."""
        rows = [o.to_dict(self.target_rps) for o in opts]
        if self.growth is not None:
            from sizing.fleet.growth import describe, growth_fields

            for o, row in zip(opts, rows, strict=True):
                fields = growth_fields(
                    survivors(o.count, self.rules),
                    o.capacity.capacity_rps,
                    self.headroom,
                    self.target_rps,
                    self.growth[1],
                )
                row.update(fields, growth_text=describe(fields, self.growth[0]))
        return rows

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON-ready document."""
        opts = self.options if top is None else self.options[:top]
        r = self.rules
        return {
            "target_rps": self.target_rps,
            "sla_p99_ms": self.workload.sla_p99_ms,
            "headroom": self.headroom,
            "redundancy": self.redundancy,
            "workload": self.workload.to_dict(),
            "confidence": self.confidence,
            "pricing": r.pricing,
            "zones": r.zones,
            "zone_loss": r.zone_loss,
            "spot_reserve": r.spot_reserve,
            "sort": self.sort,
            "regions": sorted({o.capacity.instance.region for o in self.options}),
            "no_redundancy": r.redundancy == 0 and r.zone_loss == 0,
            "decision": self.decision,
            "mix": self.mix,
            "measured": _evidence_dict(self.evidence),
            "traffic": self.traffic,
            "notes": list(self.notes),
            "options": self.option_dicts(opts),
            "growth": (
                None
                if self.growth is None
                else {"rate": self.growth[0], "factor_per_month": self.growth[1]}
            ),
            "vcpus_by_family": vcpus_by_family(self.options),
            "estimates": {k: {"value": v, "reasoning": r} for k, (v, r) in ESTIMATES.items()},
            "excluded": self.excluded,
        }


def _evidence_dict(ev: Any) -> dict[str, Any] | None:
    if ev is None:
        return None
    return {
        "runs": ev.runs,
        "simulated": ev.simulated,
        "notes": list(ev.notes),
        "calibrations": [
            {
                "label": c.series.label,
                "family": c.family,
                "runs": c.series.runs,
                "vcpus": c.series.x,
                "max_rps_under_sla": c.series.y,
                "shape": "own" if c.series.fit is not None else "borrowed",
                "model": c.series.fit.model if c.series.fit is not None else None,
                "k_vs_model": c.k,
                "k_sd_log": c.k_sd,
                "carried_to_other_families": c.factor_row,
                "simulated": c.series.simulated,
            }
            for c in ev.calibrations
        ],
        "carry_k": ev.carry_k,
    }


def vcpus_by_family(options: Iterable[Option]) -> list[dict[str, Any]]:
    """Answer in vCPUs, per family in the options' order (the same rules and ranking).

    Each family's row shows its first option in ``options`` (the ``cheapest_*`` fields: the
    best fleet of the family by the options' sort) and the fewest vCPUs any of its sizes needs.
    Pass the options sorted (`Recommendation.options` are).
    """
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for o in options:
        inst = o.capacity.instance
        key = (inst.provider, inst.family)
        total = o.count * inst.vcpus
        row = best.get(key)
        if row is None:
            best[key] = row = {
                "provider": inst.provider,
                "family": inst.family,
                "arch": inst.arch,
                "cheapest_instance_type": inst.instance_type,
                "cheapest_count": o.count,
                "cheapest_total_vcpus": total,
                "cheapest_hourly_cost_usd": o.hourly_cost_usd,
                "min_total_vcpus": total,
            }
        row["min_total_vcpus"] = min(row["min_total_vcpus"], total)
    return list(best.values())
