"""The minimum-cost fleet per instance type that meets an RPS target under a p99 SLA.

Fleet rules (`FleetRules`): headroom on every instance, ``zones`` the fleet is spread over
(evenly, at least one instance per zone), ``zone_loss`` whole zones that may fail (the largest
ones), ``redundancy`` further instances that may fail, and for spot prices a ``spot_reserve``:
the fraction of the fleet that may be reclaimed at once. A count meets the rules when the
instances left after all of these losses still carry the target with the headroom kept.

Every count is computed in integers with bounded loops; fleets above `MAX_FLEET` instances
are not considered.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import Any

from sizing.catalog.egress import CLIENTS, Prices, egress_cost, traffic
from sizing.catalog.load import LIKE_FIELDS, PRICING_COLUMNS, SHAPE_FIELDS, Instance
from sizing.catalog.providers import FAMILY_GROUPS, family_groups, provider_of
from sizing.errors import Infeasible, InputError
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
from sizing.fleet.decision import decide
from sizing.model.capacity import (
    Capacity,
    Workload,
    instance_capacities,
    wire_bytes_per_request,
)
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
    "survivors",
    "sustained",
    "usd_per_million",
    "vcpus_by_family",
]


#: What capacity can depend on: everything but the region, the prices and the file.
_SHAPE = attrgetter(*SHAPE_FIELDS)


def _shape(inst: Instance) -> tuple[Any, ...]:
    """What capacity can depend on: everything but the region, the prices and the file."""
    shape: tuple[Any, ...] = _SHAPE(inst)
    return shape


#: What `prune_dominated` compares types within.
_LIKE = attrgetter(*LIKE_FIELDS)


def sustained(cap: Capacity) -> Capacity:
    """A burstable type's capacity at its sustained CPU baseline (others unchanged).

    A shared-core type may burst above ``cpu_baseline`` vCPUs only for a while (credits, or
    a share of the host), so its CPU capacity is scaled by ``cpu_baseline / vcpus``.
    """
    inst = cap.instance
    if not inst.burstable or inst.cpu_baseline is None:
        return cap
    f = min(inst.cpu_baseline / inst.vcpus, 1.0)
    if f >= 1.0:
        return cap
    cpu_sla = cap.cpu_sla_rps * f
    out = replace(
        cap,
        cpu_peak_rps=cap.cpu_peak_rps * f,
        cpu_sla_rps=cpu_sla,
        capacity_rps=min(cpu_sla, cap.network_rps),
        binding_constraint=(
            cap.binding_constraint
            if cap.binding_constraint == "latency"
            else "network"
            if cap.network_rps < cpu_sla
            else "cpu"
        ),
        basis=[
            *cap.basis,
            f"burstable: CPU capacity at the sustained baseline of {inst.cpu_baseline:g} of "
            f"{inst.vcpus} vCPU(s) (x{f:.2f})",
        ],
    )
    return out


def capacities(
    instances: Iterable[Instance],
    work: Workload,
    evidence: Any = None,
    profiles: Sequence[CostProfile] = (),
) -> list[Capacity]:
    """Capacity of each instance, computed once per shape (the same type in many regions)."""
    instances = list(instances)
    first: dict[tuple[Any, ...], Instance] = {}
    for inst in instances:
        first.setdefault(_shape(inst), inst)
    seen = {
        key: sustained(cap)
        for key, cap in zip(
            first, instance_capacities(list(first.values()), work, evidence, profiles), strict=True
        )
    }
    out = []
    for inst in instances:
        cap = seen[_shape(inst)]
        if cap.instance is not inst:
            twin = object.__new__(Capacity)  # a shallow copy, cheaper than copy.copy
            twin.__dict__.update(cap.__dict__)
            twin.instance = inst
            cap = twin
        out.append(cap)
    return out


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
    column = PRICING_COLUMNS[pricing]
    burst = work is not None and work.burst_network
    rate: dict[int, float] = {}
    for inst in instances:
        rate[id(inst)] = (
            provider_of(inst).network_gbps(inst, work)[0] if burst else inst.network_gbps
        )
    groups: dict[tuple[Any, ...], list[Instance]] = {}
    for inst in instances:
        groups.setdefault(_LIKE(inst), []).append(inst)
    kept: list[Instance] = []
    dropped: list[dict[str, Any]] = []
    for group in groups.values():
        if len(group) > 1:
            group.sort(
                key=lambda i: (getattr(i, column) or math.inf, -rate[id(i)], i.instance_type)
            )
        best_net = -math.inf
        best: Instance | None = None
        for inst in group:  # cheapest first: kept only if it adds bandwidth
            if best is not None and rate[id(inst)] <= best_net:
                dropped.append(
                    {
                        "instance_type": inst.instance_type,
                        "region": inst.region,
                        "reason": f"dominated by {best.instance_type} (same CPU, vCPUs and "
                        f"at least its bandwidth, at a lower {pricing} price)",
                    }
                )
                continue
            kept.append(inst)
            if rate[id(inst)] > best_net:
                best_net, best = rate[id(inst)], inst
    return kept, dropped


def _check(target_rps: float, headroom: float, redundancy: int, max_count: int | None) -> None:
    if not (isinstance(target_rps, int | float) and math.isfinite(target_rps) and target_rps > 0):
        raise InputError(f"target RPS must be a positive finite number, got {target_rps!r}")
    FleetRules(headroom=headroom, redundancy=redundancy, max_count=max_count).check()


def recommend(
    target_rps: float,
    instances: Iterable[Instance],
    workload: Workload | None = None,
    headroom: float = DEFAULT_HEADROOM,
    redundancy: int = 0,
    max_count: int | None = None,
    evidence: Any = None,
    confidence: float = 0.95,
    profiles: Sequence[CostProfile] = (),
    *,
    zones: int = 1,
    zone_loss: int = 0,
    pricing: str = "on-demand",
    spot_reserve: float | None = None,
    sort: str = "cost-at-confidence",
    burstable: bool = False,
    mix: int = 1,
    prune: bool = True,
    clients: str = "internet",
    include_families: Collection[str] = (),
    egress_prices: dict[tuple[str, str, str], Prices] | None = None,
    growth: tuple[str, float] | None = None,
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
        Instances that may fail (after a zone loss) while the rest still meet the target.
    max_count : int, optional
        Largest fleet to consider per instance type (at most `MAX_FLEET`).
    evidence : sizing.evidence.measured.Evidence, optional
        Calibrations from measured runs (see `sizing.model.capacity.instance_capacity`).
    confidence : float
        For each option, also the count that keeps the headroom with this probability.
    profiles : sequence of CostProfile
        Measured CPU profiles (`sizing.evidence.profiles.load_profiles`).
    zones : int
        Zones the fleet is spread over (evenly, at least one instance per zone).
    zone_loss : int
        Whole zones that may be lost while the rest keep the target with the headroom.
    pricing : str
        ``on-demand``, ``spot``, ``1y`` or ``3y``; types without that price are excluded.
    spot_reserve : float, optional
        Fraction of a spot fleet that may be reclaimed at once; default
        `DEFAULT_SPOT_RESERVE` with spot prices, 0 otherwise.
    sort : str
        ``cost-at-confidence`` (the cost of the count at confidence) or ``cost``.
    burstable : bool
        Also consider shared-core and credit-based types (their burst is not sustained).
    prune : bool
        Leave out types dominated by a cheaper one (`prune_dominated`); never with runs as
        evidence, which are matched by family.
    mix : int
        With K > 1, also solve for the cheapest fleet of up to K types per zone
        (`sizing.fleet.mix.best_mix`; imports scipy).
    clients : str
        Where clients are (`sizing.catalog.egress`): ``internet`` prices data transfer out
        to the internet, ``vpc`` the share that crosses zones; the cost ranks with it.
    include_families : collection of str
        Family groups left out by default that come back (`sizing.catalog.providers.
        FAMILY_GROUPS`: hpc, gpu, accelerator, metal, one-size), or ``all``.
    egress_prices : dict, optional
        Egress price table (`sizing.catalog.egress.read_egress`; default: the shipped one).
    growth : (str, float), optional
        Traffic growth as given and its factor per month (`sizing.fleet.growth.parse_growth`):
        each option and the decision then say in which month the fleet must grow.

    Returns
    -------
    Recommendation
        Options in ``sort`` order (then fewer instances, then name).

    Raises
    ------
    InputError
        For a bad argument.
    Infeasible
        When no instance type can meet the target within the limits.
    """
    work, rules, included = _setup(
        target_rps,
        workload,
        headroom,
        redundancy,
        max_count,
        confidence,
        zones=zones,
        zone_loss=zone_loss,
        pricing=pricing,
        spot_reserve=spot_reserve,
        sort=sort,
        mix=mix,
        clients=clients,
        include_families=include_families,
    )
    options: list[Option] = []
    excluded: list[dict[str, Any]] = []
    candidates: list[Instance] = []
    instances = list(instances)
    groups = family_groups(instances)
    left_out: dict[str, set[str]] = {}
    for inst in instances:
        group = groups.get(inst.key)
        if group and group not in included:
            left_out.setdefault(group, set()).add(inst.family)
            excluded.append(
                {
                    "instance_type": inst.instance_type,
                    "region": inst.region,
                    "reason": f"{group}: {FAMILY_GROUPS[group]} (--include-families {group})",
                }
            )
        elif inst.burstable and not burstable:
            excluded.append(
                {
                    "instance_type": inst.instance_type,
                    "region": inst.region,
                    "reason": "burstable CPU: its burst is not sustained capacity",
                }
            )
        elif inst.burstable and inst.cpu_baseline is None:
            excluded.append(
                {
                    "instance_type": inst.instance_type,
                    "region": inst.region,
                    "reason": "burstable CPU without a published sustained baseline",
                }
            )
        elif inst.price(pricing) is None:
            excluded.append(
                {
                    "instance_type": inst.instance_type,
                    "region": inst.region,
                    "reason": f"no {pricing} price published",
                }
            )
        else:
            candidates.append(inst)
    if prune and evidence is None:
        candidates, dominated = prune_dominated(candidates, pricing, work)
        excluded += dominated
    counts: dict[tuple[Any, ...], tuple[int | None, int | None, float, float]] = {}
    for cap in capacities(candidates, work, evidence, profiles):
        inst = cap.instance
        price = inst.price(pricing)
        assert price is not None
        key = _shape(inst)
        found = counts.get(key)
        if found is None:
            usable = cap.capacity_rps * (1.0 - headroom)
            n = count_for(target_rps, usable, rules)
            n_conf = count_for(target_rps, cap.quantile(1.0 - confidence) * (1.0 - headroom), rules)
            found = counts[key] = (
                n,
                n_conf,
                math.nan if n is None else p_meet(n, cap, target_rps, rules),
                math.nan if n_conf is None else p_meet(n_conf, cap, target_rps, rules),
            )
        n, n_conf, p_n, p_conf = found
        if n is None:
            if cap.capacity_rps <= 0:
                why = "cannot meet the SLA"
            else:
                why = f"needs more than {rules.limit:,} instances"
            excluded.append(
                {"instance_type": inst.instance_type, "region": inst.region, "reason": why}
            )
            continue
        options.append(
            Option(
                capacity=cap,
                count=n,
                utilization=target_rps / (n * cap.capacity_rps),
                hourly_cost_usd=n * price,
                p_meets_target=p_n,
                confidence=confidence,
                count_at_confidence=n_conf,
                unit_price_usd_hour=price,
                rules=rules,
                p_meets_at_confidence=p_conf,
            )
        )
    notes = _notes(instances, candidates, left_out, pricing, burstable)
    if not candidates:
        why = f"no candidate instance type has a {pricing} price" + (
            " (the shipped AWS rows carry on-demand and spot prices only; a --catalog or "
            "--prices file may add commit_1y_usd_hour and commit_3y_usd_hour)"
            if pricing != "on-demand"
            else ""
        )
        if instances and any(inst.price(pricing) is not None for inst in instances):
            why = "no candidate instance type is left"
        raise Infeasible("; ".join([why, *notes]))
    if not options:
        why = f" within --max-count {max_count}" if max_count is not None else ""
        if (
            max_count is None
            and any(e["reason"].startswith("needs more than") for e in excluded)
            and not any(e["reason"] == "cannot meet the SLA" for e in excluded)
        ):
            why = f" within {MAX_FLEET:,} instances"
        raise Infeasible(
            f"no instance type meets {target_rps:,.0f} RPS under p99 {work.sla_p99_ms:g} ms{why}"
        )
    monthly_gib = traffic(target_rps, wire_bytes_per_request(work))[1]
    priced: dict[tuple[str, str], dict[str, Any]] = {}
    for o in options:
        inst = o.capacity.instance
        where = (inst.provider, inst.region)
        if where not in priced:
            priced[where] = egress_cost(
                *where, monthly_gib, clients=clients, zones=zones, prices=egress_prices
            )
        o.egress = priced[where]
    notes += _traffic_notes(priced, clients, zones)
    if pricing == "spot" and spot_reserve is None:  # spares from each type's band
        from sizing.fleet.spot import band_spares

        band_spares(options, target_rps, headroom)
    options.sort(key=_sort_key(sort))
    return _finish(
        Recommendation(
            target_rps,
            work,
            headroom,
            redundancy,
            options,
            excluded,
            evidence,
            confidence,
            rules,
            sort,
            profiles=tuple(profiles),
            notes=notes,
            include_families=tuple(sorted(included)),
            growth=growth,
        ),
        clients,
        mix,
    )


def _traffic_notes(
    priced: dict[tuple[str, str], dict[str, Any]], clients: str, zones: int
) -> list[str]:
    """The notes on the traffic's price: regions without one, the share crossing zones."""
    notes: list[str] = []
    unpriced = sorted(f"{p}/{r}" for (p, r), e in priced.items() if e["usd_month"] is None)
    if unpriced:
        notes.append(
            f"egress not priced for {_listing(unpriced)}: no published "
            f"{'internet' if clients == 'internet' else 'inter-zone'} transfer price in "
            "data/catalog/egress.csv; their totals hold compute only"
        )
    if clients == "vpc" and zones > 1:
        notes.append(
            f"estimate: with clients in the VPC over {zones} zones, {(zones - 1) / zones:.0%} "
            "of responses cross a zone (no zone affinity) and pay the inter-zone price"
        )
    return notes


def _finish(rec: Recommendation, clients: str, mix: int) -> Recommendation:
    """``rec`` with its traffic, its mix (K > 1) and its decision."""
    work, target_rps = rec.workload, rec.target_rps
    bytes_per_request = wire_bytes_per_request(work)
    gbps, monthly_gib = traffic(target_rps, bytes_per_request)
    rec.traffic = {
        "clients": clients,
        "bytes_per_request": bytes_per_request,
        "gbps": gbps,
        "monthly_gib": monthly_gib,
        "basis": (
            f"{target_rps:,.0f} RPS x {bytes_per_request:,.0f} B on the wire per response "
            "(body, headers and framing; an estimate) over a 730-hour month"
        ),
    }
    if mix > 1:
        # numpy and scipy are imported on the --mix path only (no cycle: mix imports counts).
        from sizing.fleet.mix import best_mix

        rec.mix = best_mix(rec, mix)
    rec.decision = decide(rec)
    return rec


def _setup(
    target_rps: float,
    workload: Workload | None,
    headroom: float,
    redundancy: int,
    max_count: int | None,
    confidence: float,
    *,
    zones: int,
    zone_loss: int,
    pricing: str,
    spot_reserve: float | None,
    sort: str,
    mix: int,
    clients: str,
    include_families: Collection[str],
) -> tuple[Workload, FleetRules, set[str]]:
    """The workload, the fleet rules and the family groups included, of `recommend`'s arguments.

    Raises
    ------
    InputError
        For a bad argument.
    """
    work = workload or Workload()
    if not (isinstance(target_rps, int | float) and math.isfinite(target_rps) and target_rps > 0):
        raise InputError(f"target RPS must be a positive finite number, got {target_rps!r}")
    if sort not in SORTS:
        raise InputError(f"unknown sort {sort!r}; expected one of: {', '.join(SORTS)}")
    if not 1 <= mix <= 8:
        raise InputError(f"mix must be 1 to 8 instance types, got {mix!r}")
    if clients not in CLIENTS:
        raise InputError(f"unknown clients {clients!r}; expected one of: {', '.join(CLIENTS)}")
    unknown = set(include_families) - {*FAMILY_GROUPS, "all"}
    if unknown:
        raise InputError(
            f"unknown family group(s) {', '.join(sorted(unknown))}; expected: "
            f"{', '.join(FAMILY_GROUPS)} or all"
        )
    included = set(FAMILY_GROUPS) if "all" in include_families else set(include_families)
    reserve = spot_reserve
    if reserve is None:
        reserve = DEFAULT_SPOT_RESERVE if pricing == "spot" else 0.0
    rules = FleetRules(
        headroom, redundancy, zones, zone_loss, pricing, reserve, max_count, confidence
    )
    rules.check()
    return work, rules, included


def _listing(values: Sequence[str], limit: int = 6) -> str:
    """Up to ``limit`` values, then how many more."""
    shown = ", ".join(values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _notes(
    instances: Sequence[Instance],
    candidates: Sequence[Instance],
    left_out: dict[str, set[str]],
    pricing: str,
    burstable: bool,
) -> list[str]:
    """One line for each limit of the answer: what was dropped, and why."""
    given: dict[str, tuple[int, bool]] = {}
    for i in instances:
        n, priced = given.get(i.provider, (0, False))
        given[i.provider] = (n + 1, priced or i.price(pricing) is not None)
    regions: dict[str, set[str]] = {}
    for i in candidates:
        regions.setdefault(i.provider, set()).add(i.region)
    return _notes_of(
        left_out, any(i.burstable for i in instances), given, regions, pricing, burstable
    )


def _notes_of(
    left_out: dict[str, set[str]],
    any_burstable: bool,
    given: dict[str, tuple[int, bool]],
    regions: dict[str, set[str]],
    pricing: str,
    burstable: bool,
) -> list[str]:
    """The notes of `_notes` from what they need.

    Parameters
    ----------
    left_out : dict of str to set of str
        Family group left out -> its families, in the order first met.
    any_burstable : bool
        Whether any row is burstable.
    given : dict of str to (int, bool)
        Provider -> its rows [1] and whether any of them has a ``pricing`` price.
    regions : dict of str to set of str
        Provider -> the regions of its candidates, providers in the order first met.
    """
    notes = []
    for group, families in left_out.items():
        notes.append(
            f"left out {group} ({_listing(sorted(families))}): {FAMILY_GROUPS[group]}; "
            f"add --include-families {group} (or --all-families)"
        )
    if not burstable and any_burstable:
        notes.append(
            "left out burstable types (t3, e2-medium...): their burst is not sustained; "
            "add --burstable"
        )
    for prov in sorted(given):
        n, priced = given[prov]
        if prov not in regions and not priced:
            notes.append(
                f"--pricing {pricing} leaves out {prov.upper()}: none of its {n} rows carries "
                f"a {pricing} price (the shipped AWS rows carry on-demand and spot prices only; "
                "a --catalog or --prices file "
                "may add them)"
            )
    counts = {p: len(r) for p, r in regions.items()}
    if len(counts) > 1 and len(set(counts.values())) > 1:
        parts = [
            f"{n} {p.upper()} region{'s' if n > 1 else ''}"
            + (f" ({_listing(sorted(regions[p]))})" if n <= 3 else "")
            for p, n in sorted(counts.items(), key=lambda kv: -kv[1])
        ]
        notes.append(
            "ranks " + " against ".join(parts) + ": the catalog prices the providers in "
            "different numbers of regions, so the cheapest region wins more often where "
            "more are priced"
        )
    return notes


def _sort_key(sort: str) -> Any:
    def by_cost(o: Option) -> tuple[Any, ...]:
        inst = o.capacity.instance
        total = o.hourly_cost_usd + o.egress_monthly_usd / HOURS_PER_MONTH
        return (total, o.count, inst.provider, inst.region, inst.instance_type)

    def by_conf(o: Option) -> tuple[Any, ...]:
        return (
            o.hourly_cost_at_confidence_usd + o.egress_monthly_usd / HOURS_PER_MONTH,
            *by_cost(o),
        )

    def by_carbon(o: Option) -> tuple[Any, ...]:
        return (o.carbon().g_per_hour, *by_cost(o))

    if sort == "carbon":
        return by_carbon
    return by_conf if sort == "cost-at-confidence" else by_cost


def options_of(rec: Recommendation, sort: str) -> Sequence[Option]:
    """The options re-ordered by another sort."""
    if sort not in SORTS:
        raise InputError(f"unknown sort {sort!r}; expected one of: {', '.join(SORTS)}")
    return sorted(rec.options, key=_sort_key(sort))
