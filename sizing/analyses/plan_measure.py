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
the ranking is reproducible and differences are not Monte Carlo noise. A type whose cost at
its largest draw is above every other platform's cheapest fleet today can never be the cheapest
after, so its draws are not computed (the values and P(best) are the same either way).

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

from sizing.catalog.egress import egress_cost
from sizing.catalog.load import Instance
from sizing.errors import Infeasible, InputError
from sizing.fleet.counts import min_instances_array
from sizing.fleet.question import check_target_rps
from sizing.fleet.recommend import HOURS_PER_MONTH, Recommendation, shape_of, sustained
from sizing.model.capacity import Capacity, Workload, instance_capacities, instance_capacity
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
    egress_now_usd_hour: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "target_rps": self.target_rps,
            "confidence": self.confidence,
            "cost_now_usd_hour": self.cost_now_usd_hour,
            "best_now": self.best_now,
            "egress_now_usd_hour": self.egress_now_usd_hour,
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
    fixed: Any = 0.0,
) -> np.ndarray:
    """Hourly cost of the count at the confidence, per value of the CPU capacity [USD/h].

    ``network_rps``, ``rel_sd``, ``price`` and ``fixed`` (what the fleet pays whatever its
    count: the request's egress from the type's region) are numbers or arrays that broadcast
    against ``cpu_rps``. The capacity at the confidence is the CPU's at ``exp(z_conf * rel_sd)``,
    network capped, less the headroom; the count is `sizing.fleet.counts.min_instances_array`
    of it plus ``redundancy``, so each element equals the scalar `sizing.fleet.counts.
    fleet_count`'s (tests/test_speed_paths.py); inf where no count within ``max_count`` does.
    """
    sd = np.asarray(rel_sd, dtype=float)
    # math.exp, as the scalar path (numpy's exp may differ in the last digit), once per spread
    spreads, which = np.unique(sd.ravel(), return_inverse=True)
    factor = np.array([math.exp(z_conf * r) for r in spreads.tolist()])[which].reshape(sd.shape)
    q = np.minimum(cpu_rps * factor, network_rps) * (1.0 - headroom)
    n = min_instances_array(target_rps, q) + redundancy
    ok = np.isfinite(n) if max_count is None else n <= max_count
    with np.errstate(invalid="ignore"):
        return np.where(ok, n * np.asarray(price, dtype=float) + fixed, math.inf)


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


def _check(
    target_rps: float, rules: tuple[float, int, float], residual_sd: float, draws: int
) -> None:
    """Raise `InputError` for a bad argument of `plan_measurements`.

    ``rules`` are the headroom [1], the redundancy [instances] and the confidence [0-1].
    """
    headroom, redundancy, confidence = rules
    check_target_rps(target_rps)
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence!r}")
    if not 0 <= headroom < 1 or redundancy < 0:
        raise InputError("headroom must be in [0, 1) and redundancy >= 0")
    if not 0 <= residual_sd < 5 or not 100 <= draws <= 1_000_000:
        raise InputError("residual sd must be in [0, 5) and draws in [100, 1000000]")


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
    egress: Callable[[Instance], float] | None = None,
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
    egress : callable, optional
        What a fleet of the type pays per hour whatever its count (the request's egress from
        its region) [USD/h]; it enters every fleet's cost, so the cheapest fleet is the one
        `recommend` decides on. None: compute only.

    Raises
    ------
    InputError
        For a bad argument.
    Infeasible
        When no instance type can meet the target.
    """
    _check(target_rps, (headroom, redundancy, confidence), residual_sd, draws)
    work = workload or Workload()
    insts = list(instances)
    if not insts:
        raise InputError("no instance types to compare (check the filters)")
    from statistics import NormalDist

    z_conf = NormalDist().inv_cdf(1.0 - confidence)
    z = np.random.default_rng(seed).standard_normal(draws)
    caps = capacities(insts, work) if capacities else [capacity(i, work) for i in insts]
    cpu = np.array([c.cpu_sla_rps for c in caps], dtype=float)
    net = np.array([c.network_rps for c in caps], dtype=float)
    sd = np.array([c.rel_sd for c in caps], dtype=float)
    price = np.array([i.price_usd_hour for i in insts], dtype=float)
    fixed = np.array([egress(i) if egress else 0.0 for i in insts], dtype=float)
    rules = (target_rps, headroom, redundancy, z_conf, max_count)
    now = _fleet_cost(cpu, net, sd, price, *rules, fixed)
    if not np.isfinite(now).any():
        raise Infeasible(f"no instance type meets {target_rps:,.0f} RPS")
    best_now = int(np.argmin(now))
    keys, members = _group_rows(insts, caps, group)
    group_now = np.array([now[m].min() for m in members])
    # What a group's draws compete with: the cheapest fleet of every other group, as today.
    rests = [
        float(np.delete(group_now, g).min()) if len(keys) > 1 else math.inf
        for g in range(len(keys))
    ]
    # A type whose cost at its largest draw (its capacity nudged up, so that no rounding can
    # lift the bound above a draw's cost) exceeds that is never the cheapest after: it is
    # left out of the curves, which changes neither the costs after nor P(best).
    top = np.round(z.max() * np.maximum(sd, 0.0) / 1e-3) * 1e-3
    bound = _fleet_cost(
        cpu * np.exp(top) * (1.0 + 1e-9), net, np.minimum(residual_sd, sd), price, *rules, fixed
    )
    rest_of_row = np.empty(len(insts))
    for g, mem in enumerate(members):
        rest_of_row[mem] = rests[g]
    useful = np.isfinite(bound) & (bound <= rest_of_row)
    single = _single_platform_rows(insts)
    vcpus = np.array([i.vcpus for i in insts])
    labels = [f"{i.provider}/{i.instance_type}" for i in insts]
    candidates = []
    for (pid, name), mem, rest in zip(keys, members, rests, strict=True):
        curves = (cpu, net, sd, price, fixed)
        mine = _cheapest_after(mem[useful[mem]], curves, z, residual_sd, rules)
        after = np.minimum(rest, mine)
        saving = float(now.min()) - after
        finite = bool(np.isfinite(saving).all())
        measure_on = insts[_measure_on(mem, single, vcpus, price, insts)]
        candidates.append(
            Candidate(
                platform_id=pid,
                name=name,
                instance_types=sorted(labels[k] for k in mem.tolist()),
                rel_sd=float(sd[mem].max()),
                value_usd_hour=float(saving.mean()) if finite else math.nan,
                value_se_usd_hour=float(saving.std(ddof=1) / math.sqrt(draws))
                if finite
                else math.nan,
                p_best=float(np.mean(mine <= after)),
                cost_now_usd_hour=float(now[mem].min()),
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
        egress_now_usd_hour=float(fixed[best_now]),
        candidates=candidates,
        draws=draws,
        seed=seed,
        notes=[
            "value = cost at confidence now - expected cost at confidence after the platform "
            f"is measured (preposterior Monte Carlo, {draws} draws, seed {seed}); a measurement "
            f"leaves a log-sd of {residual_sd:g}; platforms are treated as independent",
        ],
    )


def _cheapest_after(
    rows: np.ndarray,
    curves: tuple[np.ndarray, ...],
    z: np.ndarray,
    residual_sd: float,
    rules: tuple[float, float, int, float, int | None],
) -> np.ndarray:
    """The cheapest cost at the confidence of ``rows`` at each draw, once measured [USD/h].

    ``curves`` are every row's CPU and network capacity [1/s], log-sd, price [USD/h] and
    fixed cost [USD/h]; ``rules`` the target, headroom, redundancy, z at the confidence and
    max count of `_fleet_cost`.
    """
    cpu, net, sd, price, fixed = curves
    mine = np.full(len(z), math.inf)
    # Types alike in everything the cost curve uses but the price (one type in many
    # regions) have the same counts at every draw: the cheapest of them alone counts.
    # (With egress, alike also in what the fleet pays whatever its count.)
    cheapest: dict[tuple[float, float, float, float], int] = {}
    for k in rows.tolist():
        like = cheapest.setdefault((cpu[k], net[k], sd[k], fixed[k]), k)
        if price[k] < price[like]:
            cheapest[(cpu[k], net[k], sd[k], fixed[k])] = k
    distinct = np.array(list(cheapest.values()), dtype=int)
    for start in range(0, len(distinct), _BLOCK):
        block = distinct[start : start + _BLOCK]
        cost = _cost_curves(
            cpu[block],
            net[block],
            sd[block],
            price[block],
            z,
            residual_sd,
            *rules,
            fixed[block],
        )
        mine = np.minimum(mine, cost.min(axis=0))
    return mine


def _group_rows(
    insts: list[Instance], caps: list[Any], group: Callable[[Instance], tuple[str, str]]
) -> tuple[list[tuple[str, str]], list[np.ndarray]]:
    """The groups' ``(id, name)`` in order of first appearance and each one's row indices.

    With `platform_key`, a row's group is the platform its capacity was computed for
    (`sizing.model.capacity.Capacity.platform`, `platform_of`'s), found once there.
    """
    plats = [getattr(c, "platform", None) for c in caps] if group is platform_key else []
    keys = [(p.platform_id, p.name) for p in plats if p is not None]
    if len(keys) != len(insts):
        keys = [group(inst) for inst in insts]
    index: dict[str, int] = {}
    names: dict[str, str] = {}
    gid = np.array([index.setdefault(pid, len(index)) for pid, _ in keys], dtype=int)
    for pid, name in keys:
        names[pid] = name
    order = np.argsort(gid, kind="stable")
    members = np.split(order, np.cumsum(np.bincount(gid, minlength=len(index)))[:-1])
    return [(pid, names[pid]) for pid in index], members


def _single_platform_rows(insts: list[Instance]) -> np.ndarray:
    """Whether each row's CPU text names one platform (`_runs_one_platform`, once per text)."""
    one: dict[str, bool] = {}
    out = np.empty(len(insts), dtype=bool)
    for k, inst in enumerate(insts):
        found = one.get(inst.cpu)
        if found is None:
            found = one[inst.cpu] = _runs_one_platform(inst)
        out[k] = found
    return out


def _measure_on(
    mem: np.ndarray, single: np.ndarray, vcpus: np.ndarray, price: np.ndarray, insts: list[Instance]
) -> int:
    """The row to measure a group on: sure to run its platform, >= 2 vCPUs, cheapest, by name.

    The first of ``mem`` in that order (the order of ``min`` over those keys).
    """
    rank = (~single[mem]).astype(int) * 2 + (vcpus[mem] < 2)
    pick = mem[rank == rank.min()]
    cheapest = pick[price[pick] == price[pick].min()]
    pick = cheapest if len(cheapest) else pick  # none when a price is not a number
    if len(pick) == 1:
        return int(pick[0])
    first = min(insts[k].instance_type for k in pick.tolist())
    return next(k for k in pick.tolist() if insts[k].instance_type == first)


#: Instance types whose cost curves are computed at once (rows x draws floats each).
_BLOCK = 64


def _cost_curves(
    cpu_sla_rps: np.ndarray,
    network_rps: np.ndarray,
    rel_sd: np.ndarray,
    price: np.ndarray,
    z: np.ndarray,
    residual_sd: float,
    target_rps: float,
    headroom: float,
    redundancy: int,
    z_conf: float,
    max_count: int | None,
    fixed: np.ndarray | float = 0.0,
) -> np.ndarray:
    """Cost at the confidence for each type (rows) and each draw of its measured capacity.

    Each type's capacity once measured is its point value times ``exp(rel_sd * Z)``, rounded
    to a grid of 0.1% on the log scale (fleet counts are step functions of it); the measured
    capacity keeps a log-sd of ``min(residual_sd, rel_sd)`` [USD/h].
    """
    rel = rel_sd[:, None]
    grid = np.round(z[None, :] * np.maximum(rel, 0.0) / 1e-3).astype(int)
    cpu = cpu_sla_rps[:, None] * np.exp(grid * 1e-3)
    return _fleet_cost(
        cpu,
        network_rps[:, None],
        np.minimum(residual_sd, rel),
        price[:, None],
        target_rps,
        headroom,
        redundancy,
        z_conf,
        max_count,
        np.asarray(fixed, dtype=float)[:, None] if np.ndim(fixed) else fixed,
    )


def render(plan: MeasurementPlan, top: int = 5, decision: str = "") -> str:
    """The ranking as text with the commands for the top platforms (after ``decision``)."""
    lines = [
        *([decision, ""] if decision else []),
        f"Cheapest fleet now at {plan.confidence:.0%} confidence: {plan.best_now}, "
        f"${plan.cost_now_usd_hour:,.2f}/hour (${plan.cost_now_usd_hour * 730:,.0f}/month)"
        + (
            f", of which ${plan.egress_now_usd_hour:,.2f}/hour egress (every fleet's cost "
            "below holds its region's egress)"
            if plan.egress_now_usd_hour
            else ""
        ),
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


def fleet_egress(request: SizingRequest, rec: Recommendation) -> Callable[[Instance], float]:
    """What a fleet of a type pays per hour for the answer's egress from its region [USD/h].

    As the answer prices it: its traffic (``rec.traffic``), clients and zones through
    `sizing.catalog.egress.egress_cost`; a region with no published price pays nothing, as in
    `sizing.fleet.counts.Option.egress_monthly_usd`.
    """
    monthly_gib, clients = rec.traffic["monthly_gib"], rec.traffic["clients"]
    zones = rec.rules.zones
    priced: dict[tuple[str, str], float] = {}

    def egress(inst: Instance) -> float:
        where = (inst.provider, inst.region)
        if where not in priced:
            usd = egress_cost(*where, monthly_gib, clients=clients, zones=zones)["usd_month"]
            priced[where] = (0.0 if usd is None else float(usd)) / HOURS_PER_MONTH
        return priced[where]

    return egress


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

    def capacities(insts: list[Instance], w: Workload) -> list[Capacity]:
        # The answer's options hold the capacity of their rows, and of every row of the same
        # shape (a type in other regions); every other shape's is computed once, as the
        # answer computes them. Burstable types are not among ``insts``, so `sustained`
        # changes none. Rows of one shape share one object: the plan reads only its numbers
        # and platform.
        have = {shape_of(o.capacity.instance): o.capacity for o in rec.options}
        shapes = [shape_of(i) for i in insts]
        new: dict[tuple[Any, ...], Instance] = {}
        for shape, inst in zip(shapes, insts, strict=True):
            if shape not in have:
                new.setdefault(shape, inst)
        if new:
            found = instance_capacities(list(new.values()), w, rec.evidence, rec.profiles)
            have.update(zip(new, map(sustained, found), strict=True))
        return [have[shape] for shape in shapes]

    q = rec.question  # the answer's own question: its rules, not the request's again
    rules = q.rules
    plan = plan_measurements(
        q.target_rps,
        [inst for inst in answer.instances if not inst.burstable],
        q.workload,
        headroom=rules.headroom,
        redundancy=rules.redundancy,
        max_count=rules.max_count,
        confidence=rules.confidence,
        residual_sd=residual_sd,
        draws=draws,
        seed=seed,
        capacities=capacities,
        egress=fleet_egress(request, rec),
    )
    return answer, plan
