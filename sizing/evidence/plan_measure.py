"""What to measure next: the value of calibrating one CPU platform, in fleet dollars.

Today's answer is the cheapest fleet at the chosen confidence: for each instance type, the count
that keeps the headroom when the capacity sits at its ``1 - confidence`` quantile (capacity is
log-normal around its point value with log-sd ``rel_sd``). A wide spread makes that count large.

Measuring a platform (``python -m runners calibrate`` on one of its instances) replaces its
spread with a measured value. Before measuring, that value is unknown: it is the point value
times ``exp(rel_sd * Z)``, with ``Z`` standard normal and one ``Z`` shared by every instance
type of the platform (their speed is the platform's). The preposterior expected cost is the
average, over draws of ``Z``, of the cheapest fleet at the confidence once the platform's
capacities are known (its types at the drawn value, with the measurement's own residual
spread; every other type as today). The value of measuring is

    VOI(platform) = cost at confidence now - E_Z[cost at confidence after measuring]

in $/hour: what the measurement is expected to save on the fleet (by firming up a type that is
already cheapest, or by revealing that another platform is cheaper). A platform with no spread
has zero value; one that cannot become the cheapest at any plausible draw has about zero value.
The draws use a fixed seed and the same draws for every platform (common random numbers), so
the ranking is reproducible and differences are not Monte Carlo noise.

Platforms are assumed independent (measuring one does not inform another), and only the
contracted `sizing.model.capacity.Capacity` fields are used: ``cpu_sla_rps``, ``network_rps``,
``rel_sd`` (the network cap is known, so a network-bound type gains nothing).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sizing.catalog.load import Instance
from sizing.errors import Infeasible, InputError
from sizing.fleet.counts import MAX_FLEET
from sizing.fleet.recommend import capacities as shape_capacities
from sizing.model.capacity import Capacity, Workload, instance_capacity
from sizing.model.platforms import match_cpu_text, platform_of
from sizing.pipeline import Answer, size
from sizing.request import SizingRequest

DEFAULT_DRAWS = 4000
DEFAULT_SEED = 20261121


def platform_key(inst: Instance) -> tuple[str, str]:
    """``(platform id, readable name)`` an instance type is grouped under.

    The CPU platform of `sizing.model.platforms.platform_of`: every family that runs that CPU (on
    any provider) is measured by one calibration. Unknown CPU text falls back to the
    architecture's default platform (``<arch>-default``), as `platform_of` does.
    """
    p = platform_of(inst)
    return p.platform_id, p.name


@dataclass
class Candidate:
    """One platform's value of being measured.

    Attributes
    ----------
    platform_id, name : str
        The group (see `platform_key`).
    instance_types : list of str
        Catalog types in the group (provider/type).
    rel_sd : float
        Largest log-sd of the group's CPU capacity today.
    value_usd_hour : float
        Expected reduction of the fleet's hourly cost at the confidence [USD/h].
    value_se_usd_hour : float
        Monte Carlo standard error of that value [USD/h].
    p_best : float
        Probability that, once measured, one of its types is the cheapest fleet.
    cost_now_usd_hour : float
        The group's cheapest fleet at the confidence today [USD/h] (inf: cannot meet).
    measure_on : Instance
        The instance type to measure on: the cheapest with at least 2 vCPUs among the types
        whose CPU text names this platform alone (any type of the group when none does).
    command : str
        The ``runners calibrate`` command to run on such a host.
    """

    platform_id: str
    name: str
    instance_types: list[str]
    rel_sd: float
    value_usd_hour: float
    value_se_usd_hour: float
    p_best: float
    cost_now_usd_hour: float
    measure_on: Instance
    command: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "platform_id": self.platform_id,
            "name": self.name,
            "instance_types": self.instance_types,
            "rel_sd": self.rel_sd,
            "value_usd_hour": self.value_usd_hour,
            "value_usd_month": self.value_usd_hour * 730,
            "value_se_usd_hour": self.value_se_usd_hour,
            "p_best_after": self.p_best,
            "cost_now_usd_hour": self.cost_now_usd_hour,
            "measure_on": self.measure_on.instance_type,
            "command": self.command,
        }


@dataclass
class MeasurementPlan:
    """Platforms ranked by the value of measuring them."""

    target_rps: float
    confidence: float
    cost_now_usd_hour: float
    best_now: str
    candidates: list[Candidate]
    draws: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "target_rps": self.target_rps,
            "confidence": self.confidence,
            "cost_now_usd_hour": self.cost_now_usd_hour,
            "best_now": self.best_now,
            "draws": self.draws,
            "seed": self.seed,
            "candidates": [c.to_dict() for c in self.candidates],
            "notes": self.notes,
        }


def _fleet_cost(
    cpu_rps: np.ndarray,
    network_rps: Any,
    rel_sd: Any,
    price: Any,
    target_rps: float,
    headroom: float,
    redundancy: int,
    z_conf: float,
    max_count: int | None,
) -> np.ndarray:
    """Hourly cost of the count at the confidence, per value of the CPU capacity [USD/h].

    ``network_rps``, ``rel_sd`` and ``price`` are numbers or arrays that broadcast against
    ``cpu_rps``. The count is `sizing.fleet.counts.fleet_count`'s, evaluated element-wise
    with the same float operations (one division, its ceiling, two corrections each way),
    so each element equals the scalar function's (tests/test_speed_paths.py).
    """
    sd = np.asarray(rel_sd, dtype=float)
    # math.exp, as the scalar path: numpy's exp may differ in the last digit
    factor = np.array([math.exp(z_conf * r) for r in sd.ravel().tolist()]).reshape(sd.shape)
    q = np.asarray(np.minimum(cpu_rps * factor, network_rps) * (1.0 - headroom), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = target_rps / q
        ok = (q > 0) & np.isfinite(q) & (ratio <= MAX_FLEET)
        m = np.maximum(np.ceil(np.where(ok, ratio, 1.0)), 1.0)
        # Guard the float division at exact multiples, as min_instances does: at most two
        # steps down, then two up (a step that changes no element leaves the next unchanged).
        for _ in range(2):
            down = (m > 1) & ((m - 1) * q >= target_rps)
            if not down.any():
                break
            m -= down
        for _ in range(2):
            up = m * q < target_rps
            if not up.any():
                break
            m += up
        n = m + redundancy
        if max_count is not None:
            ok &= n <= max_count
        return np.where(ok, n * np.asarray(price, dtype=float), math.inf)


def _runs_one_platform(inst: Instance) -> bool:
    """Whether the type's CPU text names one platform (an e2 VM may land on any of four)."""
    return len(match_cpu_text(inst.cpu)) <= 1


def _calibrate_command(inst: Instance) -> str:
    label = f"{inst.provider}-{inst.instance_type}"
    return (
        f"python -m runners calibrate --server USER@HOST --out data/runs  "
        f"# on {inst.provider} {inst.instance_type} ({inst.cpu}); then copy "
        f"data/runs/<campaign>/profile.json to data/profiles/{shlex.quote(label)}.json"
    )


def plan_measurements(
    target_rps: float,
    instances: Iterable[Instance],
    workload: Workload | None = None,
    *,
    headroom: float = 0.2,
    redundancy: int = 0,
    max_count: int | None = None,
    confidence: float = 0.95,
    residual_sd: float = 0.05,
    draws: int = DEFAULT_DRAWS,
    seed: int = DEFAULT_SEED,
    capacity: Callable[[Instance, Workload], Capacity] = instance_capacity,
    group: Callable[[Instance], tuple[str, str]] = platform_key,
    capacities: Callable[[list[Instance], Workload], list[Capacity]] | None = None,
) -> MeasurementPlan:
    """Rank CPU platforms by the expected saving of measuring them.

    Parameters
    ----------
    target_rps : float
        Requests per second the fleet must serve [1/s].
    instances : iterable of Instance
        Candidate instance types (already filtered).
    workload : Workload
        What is served.
    headroom, redundancy, max_count, confidence
        As for `sizing.fleet.recommend.recommend`.
    residual_sd : float
        Log-sd of the capacity left after a measurement (repeat noise, host-to-host spread);
        never more than the spread before it.
    draws : int
        Monte Carlo draws of the measurement's outcome.
    seed : int
        Seed of the draws (the same draws for every platform).
    capacity, group : callables
        The capacity model and the platform grouping (injectable for tests).
    capacities : callable, optional
        The capacity model for all instances at once (`sizing.model.capacity.
        instance_capacities`); when given, used instead of ``capacity``.

    Raises
    ------
    InputError
        For a bad argument.
    Infeasible
        When no instance type can meet the target.
    """
    if not (math.isfinite(target_rps) and target_rps > 0):
        raise InputError(f"target RPS must be a positive finite number, got {target_rps!r}")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence!r}")
    if not 0 <= headroom < 1 or redundancy < 0:
        raise InputError("headroom must be in [0, 1) and redundancy >= 0")
    if not 0 <= residual_sd < 5 or not 100 <= draws <= 1_000_000:
        raise InputError("residual sd must be in [0, 5) and draws in [100, 1000000]")
    work = workload or Workload()
    insts = list(instances)
    if not insts:
        raise InputError("no instance types to compare (check the filters)")
    from statistics import NormalDist

    z_conf = NormalDist().inv_cdf(1.0 - confidence)
    z = np.random.default_rng(seed).standard_normal(draws)
    caps = capacities(insts, work) if capacities else [capacity(i, work) for i in insts]
    now = _fleet_cost(
        np.array([c.cpu_sla_rps for c in caps], dtype=float),
        np.array([c.network_rps for c in caps], dtype=float),
        [c.rel_sd for c in caps],
        np.array([i.price_usd_hour for i in insts], dtype=float),
        target_rps,
        headroom,
        redundancy,
        z_conf,
        max_count,
    )
    if not np.isfinite(now).any():
        raise Infeasible(f"no instance type meets {target_rps:,.0f} RPS")
    best_now = int(np.argmin(now))
    groups: dict[str, list[int]] = {}
    names: dict[str, str] = {}
    # The platform follows from these fields alone (`platform_of`): each found once.
    seen: dict[tuple[Any, ...], tuple[str, str]] = {}
    for k, inst in enumerate(insts):
        if group is platform_key:
            fields = (inst.cpu, inst.arch, inst.family, inst.threads_per_core)
            found = seen.get(fields)
            if found is None:
                found = seen[fields] = group(inst)
            pid, name = found
        else:
            pid, name = group(inst)
        groups.setdefault(pid, []).append(k)
        names[pid] = name
    candidates = []
    for pid, members in groups.items():
        mem = set(members)
        others = [k for k in range(len(insts)) if k not in mem]
        rest = float(now[others].min()) if others else math.inf
        after = np.full(draws, rest)
        mine = np.full(draws, math.inf)
        # Types alike in everything the cost curve uses but the price (one type in many
        # regions) have the same counts at every draw: the cheapest of them alone can be
        # the group's cheapest.
        cheapest: dict[tuple[float, float, float], int] = {}
        for k in members:
            c = caps[k]
            like = cheapest.setdefault((c.cpu_sla_rps, c.network_rps, c.rel_sd), k)
            if insts[k].price_usd_hour < insts[like].price_usd_hour:
                cheapest[(c.cpu_sla_rps, c.network_rps, c.rel_sd)] = k
        distinct = list(cheapest.values())
        for start in range(0, len(distinct), _BLOCK):
            block = distinct[start : start + _BLOCK]
            cost = _cost_curves(
                [caps[k] for k in block],
                [insts[k] for k in block],
                z,
                residual_sd,
                target_rps,
                headroom,
                redundancy,
                z_conf,
                max_count,
            )
            mine = np.minimum(mine, cost.min(axis=0))
        after = np.minimum(after, mine)
        saving = float(now.min()) - after
        finite = np.isfinite(saving)
        value = float(saving[finite].mean()) if finite.all() else math.nan
        se = float(saving.std(ddof=1) / math.sqrt(draws)) if finite.all() else math.nan
        measure_on = min(
            (insts[k] for k in members),
            key=lambda i: (
                not _runs_one_platform(i),
                i.vcpus < 2,
                i.price_usd_hour,
                i.instance_type,
            ),
        )
        candidates.append(
            Candidate(
                platform_id=pid,
                name=names[pid],
                instance_types=sorted(
                    f"{insts[k].provider}/{insts[k].instance_type}" for k in members
                ),
                rel_sd=max(caps[k].rel_sd for k in members),
                value_usd_hour=value,
                value_se_usd_hour=se,
                p_best=float(np.mean(mine <= after)),
                cost_now_usd_hour=float(now[members].min()),
                measure_on=measure_on,
                command=_calibrate_command(measure_on),
            )
        )
    candidates.sort(key=lambda c: (-c.value_usd_hour, c.platform_id))
    best = insts[best_now]
    return MeasurementPlan(
        target_rps=target_rps,
        confidence=confidence,
        cost_now_usd_hour=float(now.min()),
        best_now=f"{best.provider}/{best.instance_type}",
        candidates=candidates,
        draws=draws,
        seed=seed,
        notes=[
            "value = cost at confidence now - expected cost at confidence after the platform "
            f"is measured (preposterior Monte Carlo, {draws} draws, seed {seed}); a measurement "
            f"leaves a log-sd of {residual_sd:g}; platforms are treated as independent",
        ],
    )


#: Instance types whose cost curves are computed at once (rows x draws floats each).
_BLOCK = 64


def _cost_curves(
    caps: list[Capacity],
    insts: list[Instance],
    z: np.ndarray,
    residual_sd: float,
    target_rps: float,
    headroom: float,
    redundancy: int,
    z_conf: float,
    max_count: int | None,
) -> np.ndarray:
    """Cost at the confidence for each type (rows) and each draw of its measured capacity.

    Each type's capacity once measured is its point value times ``exp(rel_sd * Z)``, rounded
    to a grid of 0.1% on the log scale (fleet counts are step functions of it); the measured
    capacity keeps a log-sd of ``min(residual_sd, rel_sd)`` [USD/h].
    """
    rel = np.array([c.rel_sd for c in caps], dtype=float)[:, None]
    grid = np.round(z[None, :] * np.maximum(rel, 0.0) / 1e-3).astype(int)
    cpu = np.array([c.cpu_sla_rps for c in caps], dtype=float)[:, None] * np.exp(grid * 1e-3)
    return _fleet_cost(
        cpu,
        np.array([c.network_rps for c in caps], dtype=float)[:, None],
        np.minimum(residual_sd, rel),
        np.array([i.price_usd_hour for i in insts], dtype=float)[:, None],
        target_rps,
        headroom,
        redundancy,
        z_conf,
        max_count,
    )


def render(plan: MeasurementPlan, top: int = 5, decision: str = "") -> str:
    """The ranking as text with the commands for the top platforms (after ``decision``)."""
    lines = [
        *([decision, ""] if decision else []),
        f"Cheapest fleet now at {plan.confidence:.0%} confidence: {plan.best_now}, "
        f"${plan.cost_now_usd_hour:,.2f}/hour (${plan.cost_now_usd_hour * 730:,.0f}/month)",
        "",
        f"{'rank':>4}  {'platform':<44} {'sd':>5} {'value $/h':>10} {'+-':>6} "
        f"{'$/month':>9} {'P(best)':>7} {'now $/h':>9}",
    ]
    for n, c in enumerate(plan.candidates, 1):
        now = f"{c.cost_now_usd_hour:,.2f}" if math.isfinite(c.cost_now_usd_hour) else "-"
        lines.append(
            f"{n:>4}  {c.name[:44]:<44} {c.rel_sd:>5.2f} {c.value_usd_hour:>10,.2f} "
            f"{c.value_se_usd_hour:>6.2f} {c.value_usd_hour * 730:>9,.0f} {c.p_best:>7.0%} "
            f"{now:>9}"
        )
    lines += ["", "Measure next (exact commands):"]
    for c in plan.candidates[:top]:
        if c.value_usd_hour <= 0:
            break
        lines.append(f"  {c.name}: expected saving ${c.value_usd_hour:,.2f}/hour")
        lines.append(f"    {c.command}")
    lines += ["", *[f"note: {n}" for n in plan.notes]]
    return "\n".join(lines)


def plan_for(
    request: SizingRequest,
    *,
    residual_sd: float = 0.05,
    draws: int = DEFAULT_DRAWS,
    seed: int = DEFAULT_SEED,
) -> tuple[Answer, MeasurementPlan]:
    """The request's answer (`sizing.pipeline.size`) and the platforms worth measuring for it.

    The plan prices the same catalog rows, evidence and profiles as the answer; burstable
    types are left out as the answer leaves them out (their burst is not sustained capacity).
    """
    answer = size(request)
    rec = answer.recommendation

    def capacity(inst: Instance, w: Workload) -> Capacity:
        return instance_capacity(inst, w, rec.evidence, rec.profiles)

    def capacities(insts: list[Instance], w: Workload) -> list[Capacity]:
        # once per shape (a type in many regions), as the answer counted them; burstable
        # types are not among ``insts``, so `sustained` leaves every capacity as it is. The
        # answer's options already hold the capacity of their rows: only the rest is computed.
        known = {id(o.capacity.instance): o.capacity for o in rec.options}
        rest = [i for i in insts if id(i) not in known]
        more = iter(shape_capacities(rest, w, rec.evidence, rec.profiles))
        return [known[id(i)] if id(i) in known else next(more) for i in insts]

    rules = request.rules()
    plan = plan_measurements(
        request.rps,
        [inst for inst in answer.instances if not inst.burstable],
        rec.workload,
        headroom=rules.headroom,
        redundancy=rules.redundancy,
        max_count=rules.max_count,
        confidence=rules.confidence,
        residual_sd=residual_sd,
        draws=draws,
        seed=seed,
        capacity=capacity,
        capacities=capacities,
    )
    return answer, plan
