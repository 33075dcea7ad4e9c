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
``rel_sd`` (the network cap is known, so a network-bound type gains nothing), and under
``--sort carbon`` ``cpu_peak_rps``.

The fleets are ranked as the engine ranks them for the question's sort
(`sizing.fleet.engine.rank_key`): by the cost of the count at the confidence (the default),
of the point count (``--sort cost``), or by the point count's gCO2e/h (``--sort carbon``, whose
values are in gCO2e/h); "cost" above is that number.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sizing.catalog.egress import egress_cost
from sizing.catalog.load import Instance
from sizing.catalog.spot import spot_risk
from sizing.errors import Infeasible, InputError
from sizing.fleet.counts import FleetRules, count_for_array
from sizing.fleet.engine import at_confidence, rank_costs
from sizing.fleet.question import FleetQuestion
from sizing.fleet.recommend import (
    HOURS_PER_MONTH,
    Recommendation,
    RowTable,
    prune_dominated,
    shape_of,
    sustained,
)
from sizing.fleet.spot import count_with_spares_array
from sizing.model.capacity import Capacity, Workload, instance_capacities, instance_capacity
from sizing.model.carbon import option_g_per_hour
from sizing.model.platforms import match_cpu_text, platform_of
from sizing.pipeline import Answer, size
from sizing.request import SizingRequest
from trialtable.jsonvalue import JsonObject

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

    def to_dict(self) -> JsonObject:
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
    """Platforms ranked by the value of measuring them.

    Under ``--sort carbon`` the ``*_usd_hour`` numbers of the plan and its candidates are
    gCO2e/h (`to_dict` and `render` name them so, `Unit`).
    """

    target_rps: float
    confidence: float
    cost_now_usd_hour: float
    best_now: str
    candidates: list[Candidate]
    draws: int
    seed: int
    notes: list[str] = field(default_factory=list)
    egress_now_usd_hour: float = 0.0
    #: The question's sort: the cost it ranks by (`sizing.fleet.engine.rank_key`).
    sort: str = "cost-at-confidence"

    def to_dict(self) -> JsonObject:
        """Plain data for JSON output (the values' keys name their unit, `Unit`)."""
        doc: JsonObject = {
            "target_rps": self.target_rps,
            "confidence": self.confidence,
            "sort": self.sort,
            "cost_now_usd_hour": self.cost_now_usd_hour,
            "best_now": self.best_now,
            "egress_now_usd_hour": self.egress_now_usd_hour,
            "draws": self.draws,
            "seed": self.seed,
            "candidates": [c.to_dict() for c in self.candidates],
            "notes": self.notes,
        }
        return _in_unit(doc, Unit.of(self.sort))


@dataclass(frozen=True)
class Curves:
    """What the cost at the confidence reads of each row (arrays that broadcast together).

    Attributes
    ----------
    cpu, net : array_like
        CPU capacity under the SLA and network cap [1/s].
    sd : array_like
        Log-sd of the CPU capacity [1].
    price : array_like
        Unit price under the question's pricing (`sizing.catalog.load.PRICING_COLUMNS`) [USD/h].
    fixed : array_like
        What the fleet pays whatever its count (its region's egress) [USD/h].
    rate : array_like
        Spot interruption share of the row's band (`sizing.fleet.spot`); NaN where the flat
        spot reserve of the rules applies [1].
    peak : array_like
        CPU capacity at full load (``--sort carbon``: the fleet's CPU load) [1/s].
    insts : sequence of Instance
        The rows (``--sort carbon``: their power, grid and embodied carbon), or empty.
    """

    cpu: Any
    net: Any
    sd: Any
    price: Any
    fixed: Any = 0.0
    rate: Any = math.nan
    peak: Any = math.nan
    insts: Sequence[Instance] = ()

    def rows(self, idx: np.ndarray) -> Curves:
        """Rows ``idx`` as a column (one row per type, broadcast against the draws)."""

        def col(v: Any) -> Any:
            return np.asarray(v, dtype=float)[idx][:, None] if np.ndim(v) else v

        return Curves(
            col(self.cpu),
            col(self.net),
            col(self.sd),
            col(self.price),
            col(self.fixed),
            col(self.rate),
            col(self.peak),
            [self.insts[k] for k in idx.tolist()] if len(self.insts) else (),
        )


@dataclass(frozen=True)
class Costing:
    """How a fleet is counted and ranked: the question's target [1/s], rules, z and sort.

    ``z_conf`` is the normal quantile at ``1 - confidence``. ``sort`` is the question's: as in
    `sizing.fleet.engine.rank_key`, ``cost-at-confidence`` ranks by the count at the
    confidence, the other sorts by the point count.
    """

    target_rps: float
    rules: FleetRules
    z_conf: float
    sort: str = "cost-at-confidence"


def _fleet_cost(
    cpu_rps: np.ndarray, rel_sd: np.ndarray, curves: Curves, costing: Costing
) -> np.ndarray:
    """Hourly cost of the count the sort ranks by, per value of the CPU capacity [USD/h].

    The count is `_fleet_count`'s; its cost the engine's ranking cost
    (`sizing.fleet.engine.rank_costs`), inf where no count keeps the target.
    """
    n = _fleet_count(cpu_rps, rel_sd, curves, costing)
    if costing.sort == "carbon":
        return _fleet_carbon(cpu_rps, n, curves, costing.target_rps)
    price = np.asarray(curves.price, dtype=float)
    cost: np.ndarray = rank_costs(costing.sort, (n, n), price, curves.fixed)[0]
    return cost


def _fleet_carbon(cpu_rps: Any, n: np.ndarray, curves: Curves, target_rps: float) -> np.ndarray:
    """The gCO2e/h of fleets of ``n`` (`sizing.fleet.engine.carbon_lead`'s), inf where no count.

    The CPU's peak scales with its capacity under the SLA (one platform speed), so a fleet's
    CPU load is the target over ``n`` times the row's peak at ``cpu_rps``.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(curves.cpu > 0, cpu_rps / curves.cpu, 1.0)
        peak = np.broadcast_to(curves.peak * scale, n.shape)
        load = np.where(peak > 0, target_rps / (n * peak), 1.0)
        insts = curves.insts
        g = option_g_per_hour(
            [(i.provider, i.region) for i in insts],
            [i.instance_type for i in insts],
            list(insts),
            np.array([i.vcpus for i in insts], dtype=float),
            n.T,  # rows last: the rows' own numbers broadcast against the draws
            load.T,
        ).T
        out: np.ndarray = np.where(np.isfinite(n), g, math.inf)
    return out


def _fleet_count(cpu_rps: Any, rel_sd: Any, curves: Curves, costing: Costing) -> np.ndarray:
    """The count the sort ranks by, per value of the CPU capacity [instances] (inf: none).

    ``cpu_rps`` and ``rel_sd`` broadcast against ``curves``' network cap and band rate. Ranked
    at the confidence, the capacity is the CPU's at ``exp(z_conf * rel_sd)``, network capped,
    less the headroom (by the point count: the CPU's itself); the count is
    `sizing.fleet.counts.count_for_array` of it under the question's rules (zones, zone loss,
    redundancy, spot reserve, max count), or, where a row has a band rate,
    `sizing.fleet.spot.count_with_spares_array`: each element equals the scalar count of
    `sizing.fleet.engine` (tests/test_plan_measure.py).
    """
    rules = costing.rules
    cpu = np.asarray(cpu_rps, dtype=float)
    if at_confidence(costing.sort):
        sd = np.asarray(rel_sd, dtype=float)
        # math.exp, as the scalar path (numpy's exp may differ in the last digit), once per
        # spread
        spreads, which = np.unique(sd.ravel(), return_inverse=True)
        exp = [math.exp(costing.z_conf * r) for r in spreads.tolist()]
        cpu = cpu * np.array(exp)[which].reshape(sd.shape)
    q = np.minimum(cpu, curves.net) * (1.0 - rules.headroom)
    n: np.ndarray = count_for_array(costing.target_rps, q, rules)
    rate = np.asarray(curves.rate, dtype=float)
    if not np.isnan(rate).all():
        flat = np.isnan(rate)
        bands = count_with_spares_array(costing.target_rps, q, rules, np.where(flat, 0.0, rate))
        n = np.where(flat, n, bands)
    return n


def _best_now(
    insts: list[Instance],
    now: np.ndarray,
    curves: Curves,
    costing: Costing,
    prune: Workload | None = None,
) -> int:
    """The row the engine ranks first (`sizing.fleet.engine.sort_key`).

    The least ``now`` (cost, or gCO2e/h under ``--sort carbon`` and then the point cost),
    then fewer instances, then provider, region and name. With ``prune`` (the question's
    workload, when the engine leaves dominated types out), a tied type that another tied
    type dominates (`sizing.fleet.recommend.prune_dominated`) is not the engine's first.
    """
    tied = np.flatnonzero(now == now.min())
    if prune is not None and len(tied) > 1:
        among = [insts[int(t)] for t in tied]
        kept = {id(i) for i in prune_dominated(among, costing.rules.pricing, prune)[0]}
        tied = np.array([t for t, i in zip(tied, among, strict=True) if id(i) in kept])
    if len(tied) == 1:
        return int(tied[0])
    rows = curves.rows(tied)
    n = _fleet_count(rows.cpu, rows.sd, rows, costing).ravel()
    cost = rank_costs("cost", (n, n), np.ravel(rows.price), np.ravel(rows.fixed))[0]

    def key(j: int) -> tuple[Any, ...]:
        inst = insts[int(tied[j])]
        lead = (cost[j],) if costing.sort == "carbon" else ()
        return (*lead, n[j], inst.provider, inst.region, inst.instance_type)

    return int(tied[min(range(len(tied)), key=key)])


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


@dataclass(frozen=True)
class Draws:
    """The Monte Carlo of a measurement's outcome (checked when made).

    Attributes
    ----------
    residual_sd : float
        Log-sd of the capacity left after a measurement (repeat noise, host-to-host spread);
        never more than the spread before it [1].
    draws : int
        Draws of the measurement's outcome.
    seed : int
        Seed of the draws (the same draws for every platform).
    """

    residual_sd: float = 0.05
    draws: int = DEFAULT_DRAWS
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if not 0 <= self.residual_sd < 5 or not 100 <= self.draws <= 1_000_000:
            raise InputError("residual sd must be in [0, 5) and draws in [100, 1000000]")


@dataclass(frozen=True)
class PlanInputs:
    """Where the plan's numbers come from (injectable for tests).

    Attributes
    ----------
    capacity : callable
        The capacity model of one instance type.
    group : callable
        The platform grouping (`platform_key`).
    capacities : callable, optional
        The capacity model for all instances at once (`sizing.model.capacity.
        instance_capacities`); when given, used instead of ``capacity``.
    egress : callable, optional
        What a fleet of the type pays per hour whatever its count (`fleet_egress`) [USD/h];
        it enters every fleet's cost, so the cheapest fleet is the one `recommend` decides
        on. None: compute only.
    """

    capacity: Callable[[Instance, Workload], Capacity] = instance_capacity
    group: Callable[[Instance], tuple[str, str]] = platform_key
    capacities: Callable[[list[Instance], Workload], list[Capacity]] | None = None
    egress: Callable[[Instance], float] | None = None


def _curves(
    q: FleetQuestion, insts: list[Instance], caps: list[Capacity], inputs: PlanInputs
) -> Curves:
    """Every row's numbers under the question: its pricing, egress and spot bands."""
    pricing, carbon = q.rules.pricing, q.sort == "carbon"
    bands = [
        spot_risk(i.provider, i.region, i.instance_type) if q.band_spares else None for i in insts
    ]
    return Curves(
        cpu=np.array([c.cpu_sla_rps for c in caps], dtype=float),
        net=np.array([c.network_rps for c in caps], dtype=float),
        sd=np.array([c.rel_sd for c in caps], dtype=float),
        price=np.array([i.price(pricing) for i in insts], dtype=float),
        fixed=np.array([inputs.egress(i) if inputs.egress else 0.0 for i in insts], dtype=float),
        rate=np.array([math.nan if b is None else b.rate for b in bands]),
        peak=np.array([c.cpu_peak_rps for c in caps], dtype=float) if carbon else math.nan,
        insts=insts if carbon else (),
    )


def plan_measurements(
    q: FleetQuestion,
    instances: Iterable[Instance],
    draws: Draws = Draws(),
    inputs: PlanInputs = PlanInputs(),
) -> MeasurementPlan:
    """Rank CPU platforms by the expected saving of measuring them.

    Parameters
    ----------
    q : FleetQuestion
        The question `recommend` answers: target, workload and every rule (headroom,
        redundancy, zones and zone loss, pricing, spot reserve or spares by band, max count,
        confidence).
    instances : iterable of Instance
        Candidate instance types (already screened; rows without a price under the
        question's pricing are left out).
    draws : Draws
        The Monte Carlo of the measurement's outcome.
    inputs : PlanInputs
        The capacity model, grouping and egress.

    Raises
    ------
    InputError
        For no instance types.
    Infeasible
        When no instance type can meet the target.
    """
    insts = [i for i in instances if i.price(q.rules.pricing) is not None]
    if not insts:
        raise InputError("no instance types to compare (check the filters)")
    from statistics import NormalDist

    z_conf = NormalDist().inv_cdf(1.0 - q.rules.confidence)
    costing = Costing(q.target_rps, q.rules, z_conf, q.sort)
    z = np.random.default_rng(draws.seed).standard_normal(draws.draws)
    work = q.workload
    caps = (
        inputs.capacities(insts, work)
        if inputs.capacities
        else [inputs.capacity(i, work) for i in insts]
    )
    curves = _curves(q, insts, caps, inputs)
    now = _fleet_cost(curves.cpu, curves.sd, curves, costing)
    if not np.isfinite(now).any():
        raise Infeasible(f"no instance type meets {q.target_rps:,.0f} RPS")
    keys, members = _group_rows(insts, caps, inputs.group)
    group_now = np.array([now[m].min() for m in members])
    # What a group's draws compete with: the cheapest fleet of every other group, as today.
    rests = [
        float(np.delete(group_now, g).min()) if len(keys) > 1 else math.inf
        for g in range(len(keys))
    ]
    # A type whose cost at its largest draw (its capacity nudged up, so that no rounding can
    # lift the bound above a draw's cost) exceeds that is never the cheapest after: it is
    # left out of the curves, which changes neither the costs after nor P(best).
    top = np.round(z.max() * np.maximum(curves.sd, 0.0) / 1e-3) * 1e-3
    lifted = curves.cpu * np.exp(top) * (1.0 + 1e-9)
    bound = _fleet_cost(lifted, np.minimum(draws.residual_sd, curves.sd), curves, costing)
    rest_of_row = np.empty(len(insts))
    for g, mem in enumerate(members):
        rest_of_row[mem] = rests[g]
    useful = np.isfinite(bound) & (bound <= rest_of_row)
    pick = _Picker(insts, curves.price)
    candidates = []
    for key, mem, rest in zip(keys, members, rests, strict=True):
        mine = _cheapest_after(mem[useful[mem]], curves, z, draws.residual_sd, costing)
        after = np.minimum(rest, mine)
        candidates.append(
            _candidate(key, mem, (float(now.min()) - after, mine <= after), now, curves, pick)
        )
    candidates.sort(key=lambda c: (-c.value_usd_hour, c.platform_id))
    best_now = _best_now(insts, now, curves, costing, q.workload if q.prune else None)
    best = insts[best_now]
    return MeasurementPlan(
        target_rps=q.target_rps,
        confidence=q.rules.confidence,
        cost_now_usd_hour=float(now.min()),
        best_now=f"{best.provider}/{best.instance_type}",
        egress_now_usd_hour=float(curves.fixed[best_now]),
        candidates=candidates,
        draws=draws.draws,
        seed=draws.seed,
        notes=[_value_note(q.sort, draws)],
        sort=q.sort,
    )


def _value_note(sort: str, draws: Draws) -> str:
    """What the value is, in the words of the cost the question's sort ranks by."""
    cost = "cost at confidence" if at_confidence(sort) else "point cost"
    if sort == "carbon":
        cost = "gCO2e/h of the point count"
    return (
        f"value = {cost} now - expected {cost} after the platform is measured (preposterior "
        f"Monte Carlo, {draws.draws} draws, seed {draws.seed}); a measurement leaves a log-sd "
        f"of {draws.residual_sd:g}; platforms are treated as independent"
    )


def _ranked_by(plan: MeasurementPlan) -> str:
    """How the plan's fleets are ranked (the question's sort)."""
    if at_confidence(plan.sort):
        return f"at {plan.confidence:.0%} confidence"
    return f"at its point estimate (--sort {plan.sort})"


def _in_unit(doc: JsonObject, unit: Unit) -> JsonObject:
    """``doc`` with its ``usd`` keys named for ``unit`` (`MeasurementPlan.to_dict`)."""
    if unit.key == "usd":
        return doc

    def named(d: JsonObject) -> JsonObject:
        return {k.replace("usd", unit.key).replace("cost_", "carbon_"): v for k, v in d.items()}

    doc = named(doc)
    cands = doc["candidates"]
    if isinstance(cands, list):
        doc["candidates"] = [named(c) if isinstance(c, dict) else c for c in cands]
    doc.pop("egress_now_gco2e_hour", None)  # dollars: not a carbon number
    return doc


class _Picker:
    """Where to measure a group and the labels of its rows (computed once for all groups)."""

    def __init__(self, insts: list[Instance], price: np.ndarray) -> None:
        self.insts, self.price = insts, price
        self.single = _single_platform_rows(insts)
        self.vcpus = np.array([i.vcpus for i in insts])
        self.labels = [f"{i.provider}/{i.instance_type}" for i in insts]

    def measure_on(self, mem: np.ndarray) -> Instance:
        """The instance type to measure the group ``mem`` on (`_measure_on`)."""
        return self.insts[_measure_on(mem, self.single, self.vcpus, self.price, self.insts)]


def _candidate(
    key: tuple[str, str],
    mem: np.ndarray,
    after: tuple[np.ndarray, np.ndarray],
    now: np.ndarray,
    curves: Curves,
    pick: _Picker,
) -> Candidate:
    """One group's `Candidate` from its saving at each draw [USD/h] and whether it is best."""
    saving, best = after
    finite = bool(np.isfinite(saving).all())
    draws = len(saving)
    measure_on = pick.measure_on(mem)
    return Candidate(
        platform_id=key[0],
        name=key[1],
        instance_types=sorted(pick.labels[k] for k in mem.tolist()),
        rel_sd=float(curves.sd[mem].max()),
        value_usd_hour=float(saving.mean()) if finite else math.nan,
        value_se_usd_hour=float(saving.std(ddof=1) / math.sqrt(draws)) if finite else math.nan,
        p_best=float(np.mean(best)),
        cost_now_usd_hour=float(now[mem].min()),
        measure_on=measure_on,
        command=_calibrate_command(measure_on),
    )


def _cheapest_after(
    rows: np.ndarray, curves: Curves, z: np.ndarray, residual_sd: float, costing: Costing
) -> np.ndarray:
    """The least cost the sort ranks by of ``rows`` at each draw, once measured [USD/h].

    (gCO2e/h under ``--sort carbon``.)
    """
    mine = np.full(len(z), math.inf)
    # Types alike in everything the cost curve uses but the price (one type in many
    # regions) have the same counts at every draw: the cheapest of them alone counts.
    # (With egress or spot bands, alike also in what the fleet pays whatever its count
    # and in the band.) Ranked by carbon, each row's grid and power are its own: none alike.
    cpu, net, sd, price, fixed = curves.cpu, curves.net, curves.sd, curves.price, curves.fixed
    rate = np.nan_to_num(np.asarray(curves.rate, dtype=float) + np.zeros(len(cpu)), nan=-1.0)
    own = costing.sort == "carbon"
    cheapest: dict[tuple[float, ...], int] = {}
    for k in rows.tolist():
        alike = (cpu[k], net[k], sd[k], fixed[k], rate[k], k if own else -1)
        like = cheapest.setdefault(alike, k)
        if price[k] < price[like]:
            cheapest[alike] = k
    distinct = np.array(list(cheapest.values()), dtype=int)
    for start in range(0, len(distinct), _BLOCK):
        cost = _cost_curves(curves.rows(distinct[start : start + _BLOCK]), z, residual_sd, costing)
        mine = np.minimum(mine, cost.min(axis=0))
    return mine


def _group_rows(
    insts: list[Instance], caps: list[Capacity], group: Callable[[Instance], tuple[str, str]]
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


def _cost_curves(curves: Curves, z: np.ndarray, residual_sd: float, costing: Costing) -> np.ndarray:
    """Cost at the confidence for each type (rows) and each draw of its measured capacity.

    ``curves`` hold one row per type as a column (`Curves.rows`). Each type's capacity once
    measured is its point value times ``exp(rel_sd * Z)``, rounded to a grid of 0.1% on the
    log scale (fleet counts are step functions of it); the measured capacity keeps a log-sd
    of ``min(residual_sd, rel_sd)`` [USD/h].
    """
    grid = np.round(z[None, :] * np.maximum(curves.sd, 0.0) / 1e-3).astype(int)
    cpu = curves.cpu * np.exp(grid * 1e-3)
    return _fleet_cost(cpu, np.minimum(residual_sd, curves.sd), curves, costing)


def render(plan: MeasurementPlan, top: int = 5, decision: str = "") -> str:
    """The ranking as text with the commands for the top platforms (after ``decision``).

    In dollars, or in gCO2e under ``--sort carbon`` (`Unit`).
    """
    u = Unit.of(plan.sort)
    lines = [
        *([decision, ""] if decision else []),
        f"{u.best} fleet now {_ranked_by(plan)}: {plan.best_now}, "
        f"{u.hourly(plan.cost_now_usd_hour)}/hour ({u.monthly(plan.cost_now_usd_hour)}/month)"
        + (
            f", of which ${plan.egress_now_usd_hour:,.2f}/hour egress (every fleet's cost "
            "below holds its region's egress)"
            if plan.egress_now_usd_hour and u.key == "usd"
            else ""
        ),
        "",
        f"{'rank':>4}  {'platform':<44} {'sd':>5} {f'value {u.per_hour}':>10} {'+-':>6} "
        f"{u.per_month:>9} {'P(best)':>7} {f'now {u.per_hour}':>9}",
    ]
    for n, c in enumerate(plan.candidates, 1):
        now = f"{c.cost_now_usd_hour:,.2f}" if math.isfinite(c.cost_now_usd_hour) else "-"
        lines.append(
            f"{n:>4}  {c.name[:44]:<44} {c.rel_sd:>5.2f} {c.value_usd_hour:>10,.2f} "
            f"{c.value_se_usd_hour:>6.2f} {c.value_usd_hour * 730 / u.month_divisor:>9,.0f} "
            f"{c.p_best:>7.0%} {now:>9}"
        )
    lines += ["", "Measure next (exact commands):"]
    for c in plan.candidates[:top]:
        if c.value_usd_hour <= 0:
            break
        lines.append(f"  {c.name}: expected {u.saving} {u.hourly(c.value_usd_hour)}/hour")
        lines.append(f"    {c.command}")
    lines += ["", *[f"note: {n}" for n in plan.notes]]
    return "\n".join(lines)


@dataclass(frozen=True)
class Unit:
    """What a plan's values are in: USD, or gCO2e under ``--sort carbon`` (per hour).

    Attributes
    ----------
    key : str
        The JSON keys' unit (``usd`` or ``gco2e``).
    best, saving : str
        The words for the least fleet and for a value.
    per_hour, per_month : str
        The table's column units.
    month_divisor : float
        A month's amount in the monthly column's unit (1: dollars or grams).
    """

    key: str
    best: str
    saving: str
    per_hour: str
    per_month: str
    month_divisor: float

    @staticmethod
    def of(sort: str) -> Unit:
        """The unit of the cost ``sort`` ranks by."""
        if sort == "carbon":
            return Unit("gco2e", "Lowest-carbon", "cut of", "g/h", "g/month", 1.0)
        return Unit("usd", "Cheapest", "saving", "$/h", "$/month", 1.0)

    def hourly(self, x: float) -> str:
        """An amount per hour, as the render writes it (without "/hour")."""
        return f"${x:,.2f}" if self.key == "usd" else f"{x:,.2f} gCO2e"

    def monthly(self, x: float) -> str:
        """An hourly amount over a 730-hour month (without "/month")."""
        return f"${x * 730:,.0f}" if self.key == "usd" else f"{x * 730 / 1000:,.0f} kg CO2e"


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


def plan_for(request: SizingRequest, draws: Draws = Draws()) -> tuple[Answer, MeasurementPlan]:
    """The request's answer (`sizing.pipeline.size`) and the platforms worth measuring for it.

    The plan asks the answer's own question (`sizing.fleet.counts.Recommendation.question`:
    every rule of it) of the answer's rows priced under its pricing, burstable types as the
    answer counts them, with the same evidence, profiles and model inputs.
    """
    answer = size(request)
    rec = answer.recommendation
    q = rec.question  # the answer's own question: its rules, not the request's again

    def capacities(insts: list[Instance], w: Workload) -> list[Capacity]:
        # The answer's options hold the capacity of their rows, and of every row of the same
        # shape (a type in other regions); every other shape's is computed once, as the
        # answer computes them (a burstable type's at its sustained baseline). Rows of one
        # shape share one object: the plan reads only its numbers and platform.
        have = {shape_of(o.capacity.instance): o.capacity for o in rec.options}
        shapes = [shape_of(i) for i in insts]
        new: dict[tuple[Any, ...], Instance] = {}
        for shape, inst in zip(shapes, insts, strict=True):
            if shape not in have:
                new.setdefault(shape, inst)
        if new:
            found = instance_capacities(list(new.values()), w, rec.evidence, rec.profiles, q.model)
            have.update(zip(new, map(sustained, found), strict=True))
        return [have[shape] for shape in shapes]

    inputs = PlanInputs(capacities=capacities, egress=fleet_egress(request, rec))
    return answer, plan_measurements(q, screened(q, answer.instances), draws, inputs)


def screened(q: FleetQuestion, instances: Sequence[Instance]) -> list[Instance]:
    """The rows the answer screens in (`sizing.fleet.recommend.RowTable.screen`).

    Family groups it leaves out stay out; burstable types as it counts them (at their
    sustained baseline with --burstable, else left out); rows without the question's price out.
    """
    table = RowTable(list(instances))
    return [table.rows[k] for k in table.screen(q).candidates]
