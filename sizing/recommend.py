"""The minimum-cost fleet per instance type that meets an RPS target under a p99 SLA."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sizing.capacity import ESTIMATES, Capacity, Workload, instance_capacity
from sizing.catalog import Instance
from sizing.errors import Infeasible, InputError

HOURS_PER_MONTH = 730.0
DEFAULT_HEADROOM = 0.2


@dataclass
class Option:
    """One instance type's cheapest fleet for the target."""

    capacity: Capacity
    count: int
    utilization: float
    hourly_cost_usd: float
    p_meets_target: float = math.nan
    confidence: float = 0.95
    count_at_confidence: int | None = None

    def to_dict(self, target_rps: float) -> dict[str, Any]:
        """JSON-ready row."""
        inst = self.capacity.instance
        cap = self.capacity
        return {
            "provider": inst.provider,
            "region": inst.region,
            "instance_type": inst.instance_type,
            "family": inst.family,
            "arch": inst.arch,
            "vcpus": inst.vcpus,
            "count": self.count,
            "total_vcpus": self.count * inst.vcpus,
            "capacity_rps_per_instance": cap.capacity_rps,
            "cpu_peak_rps_per_instance": cap.cpu_peak_rps,
            "network_rps_per_instance": cap.network_rps,
            "utilization_at_target": self.utilization,
            "price_usd_hour": inst.price_usd_hour,
            "hourly_cost_usd": self.hourly_cost_usd,
            "monthly_cost_usd": self.hourly_cost_usd * HOURS_PER_MONTH,
            "usd_per_billion_requests": self.hourly_cost_usd / (target_rps * 3600.0) * 1e9,
            "binding_constraint": cap.binding_constraint,
            "capacity_factor_range": [cap.factor_low / cap.factor, cap.factor_high / cap.factor],
            "capacity_interval_rps": list(cap.interval(0.95)),
            "capacity_sd_log": cap.rel_sd,
            "measured": cap.measured,
            "p_meets_target": self.p_meets_target,
            "confidence": self.confidence,
            "count_at_confidence": self.count_at_confidence,
            "hourly_cost_at_confidence_usd": (
                None
                if self.count_at_confidence is None
                else self.count_at_confidence * inst.price_usd_hour
            ),
            "basis": list(cap.basis),
        }


@dataclass
class Recommendation:
    """All feasible options, cheapest first, with the inputs they answer."""

    target_rps: float
    workload: Workload
    headroom: float
    redundancy: int
    options: list[Option]
    excluded: list[dict[str, Any]] = field(default_factory=list)
    evidence: Any = None
    confidence: float = 0.95

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON-ready document."""
        opts = self.options if top is None else self.options[:top]
        return {
            "target_rps": self.target_rps,
            "sla_p99_ms": self.workload.sla_p99_ms,
            "headroom": self.headroom,
            "redundancy": self.redundancy,
            "workload": {
                "scenario": self.workload.scenario,
                "protocol": self.workload.protocol,
                "file_bytes": self.workload.file_bytes,
            },
            "confidence": self.confidence,
            "measured": _evidence_dict(self.evidence),
            "options": [o.to_dict(self.target_rps) for o in opts],
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


def fleet_count(target_rps: float, usable_rps: float, redundancy: int) -> int | None:
    """Smallest ``n`` with ``(n - redundancy) * usable_rps >= target_rps`` (None: no such n)."""
    if usable_rps <= 0:
        return None
    n = max(math.ceil(target_rps / usable_rps), 1)
    # Guard the float division at exact multiples.
    while n > 1 and (n - 1) * usable_rps >= target_rps:
        n -= 1
    while n * usable_rps < target_rps:
        n += 1
    return n + redundancy


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


def count_at_confidence(
    target_rps: float, cap: Capacity, headroom: float, redundancy: int, confidence: float
) -> int | None:
    """Fewest instances that keep the headroom with probability ``confidence``."""
    return fleet_count(target_rps, cap.quantile(1.0 - confidence) * (1.0 - headroom), redundancy)


def _check(target_rps: float, headroom: float, redundancy: int, max_count: int | None) -> None:
    if not (isinstance(target_rps, int | float) and math.isfinite(target_rps) and target_rps > 0):
        raise InputError(f"target RPS must be a positive finite number, got {target_rps!r}")
    if not (0 <= headroom < 1):
        raise InputError(f"headroom must be a fraction in [0, 1), got {headroom!r}")
    if redundancy < 0:
        raise InputError(f"redundancy must be >= 0 instances, got {redundancy!r}")
    if max_count is not None and max_count < 1:
        raise InputError(f"max count must be >= 1, got {max_count!r}")


def recommend(
    target_rps: float,
    instances: Iterable[Instance],
    workload: Workload | None = None,
    headroom: float = DEFAULT_HEADROOM,
    redundancy: int = 0,
    max_count: int | None = None,
    evidence: Any = None,
    confidence: float = 0.95,
) -> Recommendation:
    """Find, for every instance type, the cheapest homogeneous fleet that meets the target.

    Parameters
    ----------
    target_rps : float
        Requests per second the fleet must serve [1/s].
    instances : iterable of Instance
        Candidate instance types (already filtered).
    workload : Workload
        Scenario, protocol, response size and SLA.
    headroom : float
        Spare fraction kept free on every instance: each runs at most at
        ``(1 - headroom)`` of its capacity under the SLA [1].
    redundancy : int
        Instances that may fail while the rest still meet the target (N+k).
    max_count : int, optional
        Largest fleet to consider per instance type.
    evidence : sizing.measured.Evidence, optional
        Calibrations from measured runs (see `sizing.capacity.instance_capacity`).
    confidence : float
        For each option, also the count that keeps the headroom with this probability.

    Returns
    -------
    Recommendation
        Options sorted by hourly cost (then fewer instances, then name).

    Raises
    ------
    InputError
        For a bad argument.
    Infeasible
        When no instance type can meet the target within the limits.
    """
    work = workload or Workload()
    _check(target_rps, headroom, redundancy, max_count)
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence!r}")
    options: list[Option] = []
    excluded: list[dict[str, Any]] = []
    for inst in instances:
        cap = instance_capacity(inst, work, evidence)
        usable = cap.capacity_rps * (1.0 - headroom)
        n = fleet_count(target_rps, usable, redundancy)
        if n is None:
            excluded.append({"instance_type": inst.instance_type, "reason": "cannot meet the SLA"})
            continue
        if max_count is not None and n > max_count:
            excluded.append(
                {
                    "instance_type": inst.instance_type,
                    "reason": f"needs {n} > max count {max_count}",
                }
            )
            continue
        options.append(
            Option(
                capacity=cap,
                count=n,
                utilization=target_rps / (n * cap.capacity_rps),
                hourly_cost_usd=n * inst.price_usd_hour,
                p_meets_target=p_meets_target(n, redundancy, cap, target_rps),
                confidence=confidence,
                count_at_confidence=count_at_confidence(
                    target_rps, cap, headroom, redundancy, confidence
                ),
            )
        )
    if not options:
        why = f" within --max-count {max_count}" if max_count is not None else ""
        raise Infeasible(
            f"no instance type meets {target_rps:,.0f} RPS under p99 {work.sla_p99_ms:g} ms{why}"
        )
    options.sort(
        key=lambda o: (
            o.hourly_cost_usd,
            o.count,
            o.capacity.instance.provider,
            o.capacity.instance.instance_type,
        )
    )
    return Recommendation(
        target_rps, work, headroom, redundancy, options, excluded, evidence, confidence
    )


def vcpus_by_family(options: Iterable[Option]) -> list[dict[str, Any]]:
    """Answer in vCPUs: per family, the cheapest fleet's vCPUs and the fewest any size needs."""
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
        elif o.hourly_cost_usd < row["cheapest_hourly_cost_usd"]:
            row.update(
                cheapest_instance_type=inst.instance_type,
                cheapest_count=o.count,
                cheapest_total_vcpus=total,
                cheapest_hourly_cost_usd=o.hourly_cost_usd,
            )
        row["min_total_vcpus"] = min(row["min_total_vcpus"], total)
    return sorted(best.values(), key=lambda r: r["cheapest_hourly_cost_usd"])
