"""The minimum-cost fleet per instance type that meets an RPS target under a p99 SLA.

Fleet rules (`FleetRules`): headroom on every instance, ``zones`` the fleet is spread over
(evenly, at least one instance per zone), ``zone_loss`` whole zones that may fail (the largest
ones), ``redundancy`` further instances that may fail, and for spot prices a ``spot_reserve``:
the fraction of the fleet that may be reclaimed at once. A count meets the rules when the
instances left after all of these losses still carry the target with the headroom kept.

Every count is computed in integers with bounded loops; fleets above `MAX_FLEET` instances
are not considered. `recommend` asks `sizing.fleet.engine.answer` over a `RowTable` of the
rows given; ``--region all`` asks it over the catalog's columns (`sizing.fleet.columnar`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

from sizing.catalog.load import LIKE_FIELDS, PRICING_COLUMNS, SHAPE_FIELDS, Instance
from sizing.catalog.providers import family_groups, provider_of
from sizing.fleet.counts import (
    DEFAULT_HEADROOM,
    DEFAULT_SPOT_RESERVE,
    HOURS_PER_MONTH,
    MAX_FLEET,
    SORTS,
    FleetRules,
    Option,
    Recommendation,
    count_at_confidence,
    count_for,
    fleet_count,
    min_instances,
    p_meet,
    p_meets_target,
    per_zone,
    survivors,
    usd_per_million,
    vcpus_by_family,
)
from sizing.fleet.engine import (
    BURSTABLE,
    GROUP,
    NO_BASELINE,
    NO_PRICE,
    Ranking,
    Screen,
    answer,
    dominated_reason,
    of_instance,
    rank_key,
    sort_key,
    sustained,
)
from sizing.fleet.question import FleetQuestion, check_sort, question
from sizing.model.capacity import Capacity, Workload, instance_capacities
from sizing.model.costmodel import CostProfile

__all__ = [
    "DEFAULT_HEADROOM",
    "DEFAULT_SPOT_RESERVE",
    "HOURS_PER_MONTH",
    "MAX_FLEET",
    "SORTS",
    "FleetRules",
    "Option",
    "Recommendation",
    "RowTable",
    "capacities",
    "count_at_confidence",
    "count_for",
    "fleet_count",
    "min_instances",
    "options_of",
    "p_meet",
    "p_meets_target",
    "per_zone",
    "prune_dominated",
    "recommend",
    "shape_of",
    "survivors",
    "sustained",
    "usd_per_million",
    "vcpus_by_family",
]


#: What capacity can depend on: everything but the region, the prices and the file.
_SHAPE = attrgetter(*SHAPE_FIELDS)
#: What `prune_dominated` compares types within.
_LIKE = attrgetter(*LIKE_FIELDS)


def shape_of(inst: Instance) -> tuple[Any, ...]:
    """What capacity can depend on: everything but the region, the prices and the file."""
    shape: tuple[Any, ...] = _SHAPE(inst)
    return shape


def capacities(
    instances: Iterable[Instance],
    work: Workload,
    evidence: Any = None,
    profiles: Sequence[CostProfile] = (),
) -> list[Capacity]:
    """Capacity of each instance, computed once per shape (the same type in many regions)."""
    table = RowTable(instances)
    reps, shape = table.shapes(range(len(table.rows)))
    caps = [sustained(c) for c in instance_capacities(reps, work, evidence, profiles)]
    return [of_instance(caps[s], inst) for s, inst in zip(shape, table.rows, strict=True)]


def prune_dominated(
    instances: Sequence[Instance], pricing: str = "on-demand", work: Workload | None = None
) -> tuple[list[Instance], list[dict[str, Any]]]:
    """Drop each type that a cheaper type in its region matches in everything capacity uses.

    Capacity depends on the CPU platform (``cpu``), architecture, vCPUs, threads per core,
    burstability and bandwidth, not on memory or local disks (the design's capacity model).
    So among types with the same provider, region, ``cpu``, ``arch``, ``vcpus``,
    ``threads_per_core``, ``burstable`` and ``cpu_baseline``, a type is dominated when another
    costs less (or the same, with an earlier name) and has at least its bandwidth: its
    ``network_gbps``, or with ``work.burst_network`` the rate its provider's rules give for
    bursts (a type with the lower baseline may burst higher).

    Returns
    -------
    kept : list of Instance
    excluded : list of dict
        One row per dominated type, naming the type that dominates it.
    """
    rows = list(instances)
    kept, dropped = _prune(rows, range(len(rows)), pricing, work)
    return [rows[k] for k in kept], [
        {
            "instance_type": rows[k].instance_type,
            "region": rows[k].region,
            "reason": dominated_reason(rows[b].instance_type, pricing),
        }
        for k, b in dropped
    ]


def _prune(
    rows: Sequence[Instance], among: Iterable[int], pricing: str, work: Workload | None
) -> tuple[list[int], list[tuple[int, int]]]:
    """`prune_dominated` of ``rows[among]``: kept rows, and (dropped row, dominating row)."""
    column = PRICING_COLUMNS[pricing]
    burst = work is not None and work.burst_network
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k in among:
        groups.setdefault(_LIKE(rows[k]), []).append(k)
    rate = {
        k: provider_of(rows[k]).network_gbps(rows[k], work)[0] if burst else rows[k].network_gbps
        for group in groups.values()
        for k in group
    }
    kept: list[int] = []
    dropped: list[tuple[int, int]] = []
    for group in groups.values():
        if len(group) > 1:
            group.sort(
                key=lambda k: (
                    getattr(rows[k], column) or math.inf,
                    -rate[k],
                    rows[k].instance_type,
                )
            )
        best_net, best = -math.inf, -1
        for k in group:  # cheapest first: kept only if it adds bandwidth
            if best >= 0 and rate[k] <= best_net:
                dropped.append((k, best))
                continue
            kept.append(k)
            if rate[k] > best_net:
                best_net, best = rate[k], k
    return kept, dropped


class RowTable:
    """`sizing.fleet.engine.CandidateTable` over `Instance` rows (rows are list places)."""

    def __init__(self, instances: Iterable[Instance]) -> None:
        self.rows = list(instances)

    def screen(self, q: FleetQuestion) -> Screen:
        """See `sizing.fleet.engine.CandidateTable`."""
        groups = family_groups(self.rows)
        pricing = q.rules.pricing
        left_out: dict[str, set[str]] = {}
        given: dict[str, tuple[int, bool]] = {}
        out: list[tuple[int, int, str]] = []
        candidates: list[int] = []
        for k, inst in enumerate(self.rows):
            priced = inst.price(pricing) is not None
            n, any_priced = given.get(inst.provider, (0, False))
            given[inst.provider] = (n + 1, any_priced or priced)
            group = groups.get(inst.key)
            if group and group not in q.include_families:
                left_out.setdefault(group, set()).add(inst.family)
                out.append((k, GROUP, group))
            elif inst.burstable and not q.burstable:
                out.append((k, BURSTABLE, ""))
            elif inst.burstable and inst.cpu_baseline is None:
                out.append((k, NO_BASELINE, ""))
            elif not priced:
                out.append((k, NO_PRICE, ""))
            else:
                candidates.append(k)
        burstable = any(i.burstable for i in self.rows)
        return Screen(candidates, lambda: out, len(out), left_out, burstable, given)

    def prune(self, rows: list[int], q: FleetQuestion) -> tuple[list[int], Any, int]:
        """See `sizing.fleet.engine.CandidateTable`."""
        kept, dropped = _prune(self.rows, rows, q.rules.pricing, q.workload)
        return kept, lambda: dropped, len(dropped)

    def shapes(self, rows: Iterable[int]) -> tuple[list[Instance], list[int]]:
        """See `sizing.fleet.engine.CandidateTable`."""
        place: dict[tuple[Any, ...], int] = {}
        reps: list[Instance] = []
        shape = []
        for k in rows:
            inst = self.rows[k]
            key = shape_of(inst)
            if key not in place:
                place[key] = len(reps)
                reps.append(inst)
            shape.append(place[key])
        return reps, shape

    def split(
        self, rows: list[int], shape: list[int], ok: Sequence[bool]
    ) -> tuple[list[int], list[int], list[int], list[int]]:
        """See `sizing.fleet.engine.CandidateTable`."""
        good = [j for j, s in enumerate(shape) if ok[s]]
        bad = [j for j, s in enumerate(shape) if not ok[s]]
        return (
            [rows[j] for j in good],
            [shape[j] for j in good],
            [rows[j] for j in bad],
            [shape[j] for j in bad],
        )

    def wheres(self, rows: list[int]) -> tuple[list[tuple[str, str]], list[int]]:
        """See `sizing.fleet.engine.CandidateTable`."""
        place: dict[tuple[str, str], int] = {}
        where = [
            place.setdefault((self.rows[k].provider, self.rows[k].region), len(place)) for k in rows
        ]
        return list(place), where

    def rank(self, q: FleetQuestion, found: Ranking) -> list[int]:
        """See `sizing.fleet.engine.CandidateTable`."""

        def key(j: int) -> tuple[Any, ...]:
            inst = self.rows[found.rows[j]]
            n, n_conf = found.counts_of(j)
            assert n is not None
            price = inst.price(q.rules.pricing)
            usd = found.egress_usd_month[found.where[j]]
            cost = rank_key(q.sort, (n, n_conf), price or math.nan, usd)
            lead = () if found.lead is None else (float(found.lead[j]),)
            return (*lead, *cost, n, inst.provider, inst.region, inst.instance_type)

        return sorted(range(len(found.rows)), key=key)

    def prices(self, rows: list[int], pricing: str) -> list[float]:
        """See `sizing.fleet.engine.CandidateTable`."""
        return [self.rows[k].price(pricing) or math.nan for k in rows]

    def take(self, rows: list[int], keep: Sequence[bool]) -> list[int]:
        """See `sizing.fleet.engine.CandidateTable`."""
        return [k for k, ok in zip(rows, keep, strict=True) if ok]

    def regions(self, rows: list[int]) -> dict[str, set[str]]:
        """See `sizing.fleet.engine.CandidateTable`."""
        out: dict[str, set[str]] = {}
        for k in rows:
            out.setdefault(self.rows[k].provider, set()).add(self.rows[k].region)
        return out

    def instance(self, row: int) -> Instance:
        """See `sizing.fleet.engine.CandidateTable`."""
        return self.rows[row]

    def names(self, row: int) -> tuple[str, str]:
        """See `sizing.fleet.engine.CandidateTable`."""
        return self.rows[row].instance_type, self.rows[row].region

    def keys(self, rows: list[int]) -> list[tuple[str, str, str]]:
        """See `sizing.fleet.engine.CandidateTable`."""
        return [(i.provider, i.region, i.instance_type) for i in map(self.rows.__getitem__, rows)]

    def finish(self, rec: Recommendation, found: Ranking, order: Any) -> Recommendation:
        """See `sizing.fleet.engine.CandidateTable`."""
        return rec


def recommend(
    target_rps: float,
    instances: Iterable[Instance],
    workload: Workload | None = None,
    **options: Any,
) -> Recommendation:
    """Find, for every instance type, the cheapest homogeneous fleet that meets the target.

    Parameters
    ----------
    target_rps : float
        Requests per second the fleet must serve [1/s].
    instances : iterable of Instance
        Candidate instance types (already filtered).
    workload : Workload, optional
        Scenario, protocol, response size and SLA (default ``Workload()``).
    **options
        The fleet rules and the question's other fields, by name (`sizing.fleet.question.
        question`): ``headroom``, ``redundancy``, ``max_count``, ``confidence``, ``zones``,
        ``zone_loss``, ``pricing``, ``spot_reserve``, ``sort``, ``burstable``, ``mix``,
        ``prune``, ``clients``, ``include_families``, ``egress_prices``, ``growth``,
        ``profiles``, ``evidence``.

    Returns
    -------
    Recommendation
        Options in ``sort`` order (then fewer instances, then name); carries its question.

    Raises
    ------
    InputError
        For a bad argument.
    Infeasible
        When no instance type can meet the target within the limits.
    """
    return answer(question(target_rps, workload, **options), RowTable(instances))


def options_of(rec: Recommendation, sort: str) -> Sequence[Option]:
    """The options re-ordered by another sort."""
    check_sort(sort)
    return sorted(rec.options, key=sort_key(sort))
