"""The one fleet engine: a `FleetQuestion` answered over a table of candidate rows.

`answer` screens the rows (family groups left out, burstable types, missing prices), drops
dominated types, computes capacity and fleet counts once per shape (what capacity depends
on), prices the traffic once per region, ranks the options and decides. Every reason, count,
note and message is written here once.

The table does the work per row, behind `CandidateTable`: `sizing.fleet.recommend.RowTable`
over `Instance` objects (the standard library only: the interactive path never loads numpy),
`sizing.fleet.columnar.ColumnTable` over the catalog's numpy columns (``--region all``). A
table's rows are opaque to the engine (a list of ints, or an int array); it hands them back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from sizing.catalog.egress import egress_cost, traffic
from sizing.catalog.load import PRICING_COLUMNS, Instance, listing
from sizing.catalog.providers import FAMILY_GROUPS
from sizing.errors import Infeasible
from sizing.fleet.counts import (
    HOURS_PER_MONTH,
    MAX_FLEET,
    Option,
    Recommendation,
    count_for,
    count_of_min,
    p_meet,
)
from sizing.fleet.decision import decide
from sizing.fleet.kept import kept_capacities
from sizing.fleet.lazy import Lazy
from sizing.fleet.question import FleetQuestion
from sizing.fleet.spot import BandCounts, apply_band, band_counts, band_rates
from sizing.model.capacity import (
    Capacity,
    binding,
    instance_capacities,
    wire_bytes_per_request,
)
from sizing.model.carbon import option_g_per_hour

__all__ = [
    "BURSTABLE",
    "GROUP",
    "NO_BASELINE",
    "NO_PRICE",
    "CandidateTable",
    "Screen",
    "answer",
    "at_confidence",
    "rank_costs",
    "rank_key",
    "sort_key",
]

#: Why a row is screened out (0: kept), in the order the rules are tried.
GROUP, BURSTABLE, NO_BASELINE, NO_PRICE = 1, 2, 3, 4
#: A table's rows, opaque to the engine: a list of ints (`sizing.fleet.recommend.RowTable`)
#: or an int array (`sizing.fleet.columnar.ColumnTable`); and one of them.
Rows = Any
Row = Any
#: One shape's counts: the count, the count at the confidence [instances] and their chances.
Counts = tuple[int | None, int | None, float, float]


@dataclass(frozen=True)
class Screen:
    """What screening found: the rows left, and what the notes need of the rows.

    Attributes
    ----------
    candidates : rows
        The rows that passed, in the table's order.
    excluded : callable
        Yields ``(row, reason code, family group)`` of each row screened out, in row order.
    n_excluded : int
        How many rows ``excluded`` yields.
    left_out : dict of str to set of str
        Family group left out -> its families, groups in the order first met.
    any_burstable : bool
        Whether any row is burstable.
    given : dict of str to (int, bool)
        Provider -> its rows and whether any of them has a price of the question's pricing.
    """

    candidates: Any
    excluded: Callable[[], Iterable[tuple[Any, int, str]]]
    n_excluded: int
    left_out: dict[str, set[str]]
    any_burstable: bool
    given: dict[str, tuple[int, bool]]


class CandidateTable(Protocol):
    """The rows an engine answers over (see the module docstring)."""

    def screen(self, q: FleetQuestion) -> Screen:
        """The reason code of each row: `GROUP`, `BURSTABLE`, `NO_BASELINE`, `NO_PRICE`."""

    def prune(
        self, rows: Rows, q: FleetQuestion
    ) -> tuple[Rows, Callable[[], Iterable[tuple[Row, Row]]], int]:
        """Kept rows, a callable yielding ``(dropped row, dominating row)``, and their count."""

    def shapes(self, rows: Rows) -> tuple[list[Instance], Rows]:
        """One row of each shape among ``rows``, and each row's place in that list."""

    def split(self, rows: Rows, shape: Rows, ok: Sequence[bool]) -> tuple[Rows, Rows, Rows, Rows]:
        """Rows (and their shapes) whose shape is ``ok``, then those whose shape is not."""

    def wheres(self, rows: Rows) -> tuple[list[tuple[str, str]], Rows]:
        """Each (provider, region) of ``rows`` in the order first met, and each row's place."""

    def rank(self, q: FleetQuestion, found: Ranking) -> Rows:
        """The order of the option rows by `rank_key`."""

    def regions(self, rows: Rows) -> dict[str, set[str]]:
        """Provider -> the regions of ``rows``, providers in the order first met."""

    def instance(self, row: Row) -> Instance:
        """The row as an `Instance`."""

    def names(self, row: Row) -> tuple[str, str]:
        """The row's instance type and region."""

    def keys(self, rows: Rows) -> Iterable[tuple[str, str, str]]:
        """Each row's provider, region and instance type."""

    def prices(self, rows: Rows, pricing: str) -> list[float]:
        """Each row's unit price of ``pricing`` [USD/h], as `rank` reads it."""

    def take(self, rows: Rows, keep: Sequence[bool]) -> Rows:
        """The rows whose ``keep`` is true, in their order."""

    def finish(self, rec: Recommendation, found: Ranking, order: Rows) -> Recommendation:
        """The answer as the table hands it out (a columnar one reads its totals by column)."""


@dataclass(frozen=True)
class Ranking:
    """What a table ranks the options by: their rows, shapes' counts, places' egress."""

    rows: Any
    shape: Any
    where: Any
    counts: list[Counts]
    egress_usd_month: list[float]
    #: A key ranked before the cost (``--sort carbon``: each option row's gCO2e/h), or None.
    lead: Any = None
    #: Each option row's counts with its spot band's spares (`sizing.fleet.spot`), or None.
    banded: BandCounts | None = None

    def counts_of(self, j: int) -> tuple[int | None, int | None]:
        """Option row ``j``'s count and count at the confidence [instances]."""
        if self.banded is not None:
            return self.banded.counts_of(j)
        n, n_conf = self.counts[self.shape[j]][:2]
        return n, n_conf


def rank_key(
    sort: str, counts: tuple[int, int | None], price: float, egress_usd_month: float
) -> tuple[float, ...]:
    """The cost part of an option's rank: at the confidence (with ``sort`` so), then point.

    Parameters
    ----------
    counts : (int, int or None)
        The count and the count at the confidence [instances].
    price : float
        The unit price [USD/h].
    egress_usd_month : float
        The traffic's price [USD/month].
    """
    n, n_conf = counts
    fixed = egress_usd_month / HOURS_PER_MONTH
    total = n * price + fixed
    if not at_confidence(sort):
        return (total,)
    return ((math.inf if n_conf is None else n_conf * price) + fixed, total)


def at_confidence(sort: str) -> bool:
    """Whether ``sort`` ranks by the count at the confidence (else by the point count)."""
    return sort == "cost-at-confidence"


def rank_costs(sort: str, counts: tuple[Any, Any], price: Any, fixed: Any) -> tuple[Any, ...]:
    """`rank_key` of many options at once: the same float operations element-wise.

    Parameters
    ----------
    counts : (numpy.ndarray, numpy.ndarray)
        The counts and the counts at the confidence [instances], inf where there is none
        (only the one the sort reads is used when it reads one).
    price : array_like
        The unit prices [USD/h].
    fixed : array_like
        What each fleet pays whatever its count (its region's egress) [USD/h].

    Returns
    -------
    tuple of numpy.ndarray
        The keys in `rank_key`'s order [USD/h]; inf where the count is.
    """
    import numpy as np  # the columns' and plan-measurements' paths only

    def cost(count: Any) -> Any:
        with np.errstate(invalid="ignore"):
            return np.where(np.isfinite(count), count * price, math.inf) + fixed

    n, n_conf = counts
    if not at_confidence(sort):
        return (cost(n),)
    return (cost(n_conf), cost(n))


def sort_key(sort: str) -> Callable[[Option], tuple[Any, ...]]:
    """The key that orders options: `rank_key`, then fewer instances, provider, region, name."""

    def key(o: Option) -> tuple[Any, ...]:
        inst = o.capacity.instance
        cost = rank_key(
            sort, (o.count, o.count_at_confidence), o.unit_price_usd_hour, o.egress_monthly_usd
        )
        lead = (o.carbon().g_per_hour,) if sort == "carbon" else ()
        return (*lead, *cost, o.count, inst.provider, inst.region, inst.instance_type)

    return key


def shape_counts(q: FleetQuestion, cap: Capacity) -> Counts:
    """A shape's counts [instances] and the chance [0-1] each keeps the target.

    The count, the count at the confidence, and their chances; None and NaN where no count
    within the rules keeps the target.
    """
    rules, target = q.rules, q.target_rps
    n = count_for(target, cap.capacity_rps * (1.0 - rules.headroom), rules)
    at = cap.quantile(1.0 - rules.confidence) * (1.0 - rules.headroom)
    n_conf = count_for(target, at, rules)
    return (
        n,
        n_conf,
        math.nan if n is None else p_meet(n, cap, target, rules),
        math.nan if n_conf is None else p_meet(n_conf, cap, target, rules),
    )


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
    return replace(
        cap,
        cpu_peak_rps=cap.cpu_peak_rps * f,
        cpu_sla_rps=cpu_sla,
        capacity_rps=min(cpu_sla, cap.network_rps),
        binding_constraint=binding(cpu_sla, cap.network_rps, cap.outside)
        if cap.binding_constraint != "latency"
        else "latency",
        basis=[
            *cap.basis,
            f"burstable: CPU capacity at the sustained baseline of {inst.cpu_baseline:g} of "
            f"{inst.vcpus} vCPU(s) (x{f:.2f})",
        ],
    )


def of_instance(cap: Capacity, inst: Instance) -> Capacity:
    """``cap`` for another row of its shape (a shallow copy, cheaper than copy.copy)."""
    if cap.instance is inst:
        return cap
    twin = object.__new__(Capacity)
    twin.__dict__.update(cap.__dict__)
    twin.instance = inst
    return twin


def screen_reason(code: int, group: str, pricing: str) -> str:
    """The excluded row's reason for a screening code."""
    if code == GROUP:
        return f"{group}: {FAMILY_GROUPS[group]} (--include-families {group})"
    if code == BURSTABLE:
        return "burstable CPU: its burst is not sustained capacity"
    if code == NO_BASELINE:
        return "burstable CPU without a published sustained baseline"
    return f"no {pricing} price published"


def dominated_reason(best: str, pricing: str) -> str:
    """The excluded row's reason when ``best`` dominates it."""
    return (
        f"dominated by {best} (same CPU, vCPUs and at least its bandwidth, at a lower "
        f"{pricing} price)"
    )


def infeasible_reason(cap: Capacity, limit: int) -> str:
    """Why no count of a shape keeps the target."""
    return (
        "cannot meet the SLA" if cap.capacity_rps <= 0 else f"needs more than {limit:,} instances"
    )


def answer(q: FleetQuestion, table: CandidateTable) -> Recommendation:
    """Find, for every candidate row, the cheapest homogeneous fleet that meets the target.

    Parameters
    ----------
    q : FleetQuestion
        The question (checked).
    table : CandidateTable
        The candidate rows.

    Returns
    -------
    Recommendation
        Options in ``q.sort`` order (then fewer instances, provider, region, name), made
        when read; carries ``q``.

    Raises
    ------
    Infeasible
        When no instance type can meet the target within the limits.
    """
    screen = table.screen(q)
    kept, dominated = screen.candidates, Pairs(list, 0)
    if q.prune and q.evidence is None:
        kept, dropped, n_dropped = table.prune(kept, q)
        dominated = Pairs(dropped, n_dropped)
    notes = notes_of(q, screen, table.regions(kept))
    if not len(kept):
        raise Infeasible("; ".join([_no_candidate(q, screen), *notes]))
    if bounded(q):
        kept = within_reach(q, table, kept)
    reps, shape = table.shapes(kept)
    # The last answer's capacities of the same inputs are reused (sizing.fleet.kept).
    found_caps = kept_capacities(
        reps, q.workload, q.evidence, q.profiles, q.model, instance_capacities
    )
    caps = [sustained(c) for c in found_caps]
    counts = [shape_counts(q, cap) for cap in caps]
    at, at_shape, bad, bad_shape = table.split(kept, shape, [c[0] is not None for c in counts])
    if not len(at):
        raise Infeasible(_no_option(q, caps))
    wheres, where = table.wheres(at)
    priced = _egress(q, wheres)
    egress = [priced[w] for w in wheres]
    usd = [0.0 if e["usd_month"] is None else float(e["usd_month"]) for e in egress]
    found = Ranking(at, at_shape, where, counts, usd)
    if q.band_spares:  # each row's spares by its interruption band
        flat = [c[:2] for c in counts]
        banded = band_counts(q, band_rates(table.keys(at)), at_shape, caps, flat)
        found = replace(found, banded=banded)
    if q.sort == "carbon":
        found = replace(found, lead=carbon_lead(q, table, found, caps))
    order = table.rank(q, found)

    def make_options(start: int, stop: int) -> list[Option]:
        return [_option(q, table, found, caps, egress, order[j]) for j in range(start, stop)]

    def infeasible() -> Iterable[tuple[Any, str]]:
        for row, s in zip(bad, bad_shape, strict=True):
            yield row, infeasible_reason(caps[s], q.rules.limit)

    rec = Recommendation(
        q.target_rps,
        q.workload,
        q.rules.headroom,
        q.rules.redundancy,
        Lazy(len(order), make_options),
        _excluded(q, table, screen, dominated, Pairs(infeasible, len(bad))),
        q.evidence,
        q.rules.confidence,
        q.rules,
        q.sort,
        profiles=q.profiles,
        notes=(*notes, *traffic_notes(priced, q.clients, q.rules.zones)),
        traffic=traffic_of(q),
        include_families=q.include_families,
        growth=q.growth,
        question=q,
    )
    return finish(table.finish(rec, found, order))


#: How many of the rows with the cheapest floors `within_reach` counts to find its bound.
FIRST_ROWS = 128


def bounded(q: FleetQuestion) -> bool:
    """Whether `within_reach` may leave rows out.

    Only when the first option alone is asked for, ranked by cost with flat counts (no
    carbon lead, spot bands, mix or run evidence).
    """
    plain = q.sort != "carbon" and not q.band_spares and q.mix == 1
    return q.first_only and plain and q.evidence is None


def within_reach(q: FleetQuestion, table: CandidateTable, rows: Rows) -> Rows:
    """The rows whose fleet might rank first: the others are never counted.

    A row's fleet costs at least its floor: the rules' smallest fleet (`count_of_min` of one
    instance) at its price, plus its region's egress [USD/h], by the float operations of
    `rank_key`, whose first cost no count below it reaches. The fleets of the `FIRST_ROWS`
    rows of the lowest floors are counted (their shapes' capacities computed afresh); the
    cheapest of them bounds the first option's cost, and a row whose floor is above that
    bound costs more than that fleet, so it cannot rank first. Ties are kept.
    """
    smallest = count_of_min(1, q.rules)
    if smallest is None:
        return rows
    wheres, where = table.wheres(rows)
    priced = _egress(q, wheres)
    usd = [0.0 if e["usd_month"] is None else float(e["usd_month"]) for e in priced.values()]
    fixed = [usd[w] / HOURS_PER_MONTH for w in list(where)]
    prices = table.prices(rows, q.rules.pricing)
    floors = [smallest * p + f for p, f in zip(prices, fixed, strict=True)]
    first = set(sorted(range(len(floors)), key=floors.__getitem__)[:FIRST_ROWS])
    reps, shape = table.shapes(table.take(rows, [j in first for j in range(len(floors))]))
    caps = instance_capacities(reps, q.workload, None, q.profiles, q.model)
    counts = [shape_counts(q, sustained(c))[:2] for c in caps]
    bound = math.inf
    for j, s in zip(sorted(first), list(shape), strict=True):  # `take` keeps the rows' order
        n, n_conf = counts[s]
        if n is not None:
            bound = min(bound, rank_key(q.sort, (n, n_conf), prices[j], usd[where[j]])[0])
    # A price that is not a number >= 0 bounds nothing: its row is kept.
    out = [not (p >= 0 and f > bound) for p, f in zip(prices, floors, strict=True)]
    return table.take(rows, out)


def carbon_lead(
    q: FleetQuestion, table: CandidateTable, found: Ranking, caps: Sequence[Capacity]
) -> Any:
    """Each option row's gCO2e/h at its point count and CPU load (`Option.carbon`'s)."""
    import numpy as np  # --sort carbon only: the default answer never imports numpy

    shapes = [caps[int(s)].instance for s in found.shape]
    names = [table.names(r) for r in found.rows]
    n = (
        np.array([found.counts[int(s)][0] for s in found.shape], dtype=float)
        if found.banded is None
        else found.banded.n.astype(float)
    )
    peak = np.array([caps[int(s)].cpu_peak_rps for s in found.shape], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.where(peak > 0, q.target_rps / (n * peak), 1.0)
    return option_g_per_hour(
        [(s.provider, region) for s, (_, region) in zip(shapes, names, strict=True)],
        [t for t, _ in names],
        shapes,
        np.array([s.vcpus for s in shapes], dtype=float),
        n,
        load,
    )


@dataclass(frozen=True)
class Pairs:
    """Rows made when read: ``make()`` yields ``n`` pairs (a row and what to say of it)."""

    make: Callable[[], Iterable[tuple[Any, Any]]]
    n: int


def _excluded(
    q: FleetQuestion, table: CandidateTable, screen: Screen, dominated: Pairs, infeasible: Pairs
) -> Lazy[dict[str, Any]]:
    """The excluded rows, made when read: screened out, dominated, then infeasible."""
    pricing = q.rules.pricing

    def rows() -> Iterable[dict[str, Any]]:
        for row, code, group in screen.excluded():
            yield _row(table.names(row), screen_reason(code, group, pricing))
        for row, best in dominated.make():
            yield _row(table.names(row), dominated_reason(table.names(best)[0], pricing))
        for row, reason in infeasible.make():
            yield _row(table.names(row), reason)

    return Lazy(screen.n_excluded + dominated.n + infeasible.n, _once(rows))


def _egress(q: FleetQuestion, wheres: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    """The month's traffic priced in each (provider, region) of ``wheres``."""
    monthly_gib = traffic(q.target_rps, wire_bytes_per_request(q.workload))[1]
    return {
        w: egress_cost(
            *w, monthly_gib, clients=q.clients, zones=q.rules.zones, prices=q.egress_prices
        )
        for w in wheres
    }


def _row(names: tuple[str, str], reason: str) -> dict[str, Any]:
    return {"instance_type": names[0], "region": names[1], "reason": reason}


def _once(rows: Callable[[], Iterable[dict[str, Any]]]) -> Callable[[int, int], list[Any]]:
    """A `Lazy` maker that makes every row the first time any is read."""
    made: list[list[dict[str, Any]]] = []

    def make(start: int, stop: int) -> list[dict[str, Any]]:
        if not made:
            made.append(list(rows()))
        return made[0][start:stop]

    return make


def _option(
    q: FleetQuestion,
    table: CandidateTable,
    found: Ranking,
    caps: list[Capacity],
    egress: list[dict[str, Any]],
    j: int,
) -> Option:
    """The option of the ``j``-th option row."""
    inst = table.instance(found.rows[j])
    s = int(found.shape[j])
    cap = of_instance(caps[s], inst)
    n, n_conf, p_n, p_conf = found.counts[s]
    assert n is not None
    unit = inst.price(q.rules.pricing)
    assert unit is not None
    option = Option(
        capacity=cap,
        count=n,
        utilization=q.target_rps / (n * cap.capacity_rps),
        hourly_cost_usd=n * unit,
        p_meets_target=p_n,
        confidence=q.rules.confidence,
        count_at_confidence=n_conf,
        unit_price_usd_hour=unit,
        rules=q.rules,
        p_meets_at_confidence=p_conf,
        egress=egress[int(found.where[j])],
    )
    if found.banded is None:
        return option
    return apply_band(option, found.banded, j, q.target_rps)


#: The prices the shipped catalog's rows carry, by provider.
SHIPPED_PRICES = (
    "shipped prices: AWS on-demand and spot, GCP on-demand, spot, 1y and 3y, Azure on-demand"
)


def _no_candidate(q: FleetQuestion, screen: Screen) -> str:
    """Why no row is left after screening and pruning."""
    pricing = q.rules.pricing
    if any(priced for _, priced in screen.given.values()):
        return "no candidate instance type is left"
    unpriced = ", ".join(p.upper() for p in sorted(screen.given))
    column = PRICING_COLUMNS[pricing]
    return f"no candidate instance type has a {pricing} price" + (
        f" ({unpriced} rows have none; {SHIPPED_PRICES}; a --catalog or "
        f"--prices file may add {column})"
        if pricing != "on-demand"
        else ""
    )


def _no_option(q: FleetQuestion, caps: Sequence[Capacity]) -> str:
    """Why no candidate's count keeps the target."""
    limit = q.rules.max_count
    why = f" within --max-count {limit}" if limit is not None else ""
    if limit is None and not any(c.capacity_rps <= 0 for c in caps):
        why = f" within {MAX_FLEET:,} instances"
    return (
        f"no instance type meets {q.target_rps:,.0f} RPS under p99 "
        f"{q.workload.sla_p99_ms:g} ms{why}"
    )


def traffic_notes(
    priced: dict[tuple[str, str], dict[str, Any]], clients: str, zones: int
) -> list[str]:
    """The notes on the traffic's price: regions without one, the share crossing zones."""
    notes: list[str] = []
    unpriced = sorted(f"{p}/{r}" for (p, r), e in priced.items() if e["usd_month"] is None)
    if unpriced:
        notes.append(
            f"egress not priced for {listing(unpriced, 6)}: no published "
            f"{'internet' if clients == 'internet' else 'inter-zone'} transfer price in "
            "data/catalog/egress.csv; their totals hold compute only"
        )
    if clients == "vpc" and zones > 1:
        notes.append(
            f"estimate: with clients in the VPC over {zones} zones, {(zones - 1) / zones:.0%} "
            "of responses cross a zone (no zone affinity) and pay the inter-zone price"
        )
    return notes


def notes_of(q: FleetQuestion, screen: Screen, regions: dict[str, set[str]]) -> list[str]:
    """One line for each limit of the answer: what was dropped, and why.

    ``regions`` maps each provider to the regions of its candidates, providers in the order
    first met.
    """
    pricing = q.rules.pricing
    notes = [
        f"left out {group} ({listing(sorted(families), 6)}): {FAMILY_GROUPS[group]}; "
        f"add --include-families {group} (or --all-families)"
        for group, families in screen.left_out.items()
    ]
    if not q.burstable and screen.any_burstable:
        notes.append(
            "left out burstable types (t3, e2-medium...): their burst is not sustained; "
            "add --burstable"
        )
    for prov in sorted(screen.given):
        n, priced = screen.given[prov]
        if prov not in regions and not priced:
            notes.append(
                f"--pricing {pricing} leaves out {prov.upper()}: none of its {n} rows carries "
                f"a {pricing} price ({SHIPPED_PRICES}; a --catalog or --prices file may add "
                "them)"
            )
    counts = {p: len(r) for p, r in regions.items()}
    if len(counts) > 1 and len(set(counts.values())) > 1:
        parts = [
            f"{n} {p.upper()} region{'s' if n > 1 else ''}"
            + (f" ({listing(sorted(regions[p]), 6)})" if n <= 3 else "")
            for p, n in sorted(counts.items(), key=lambda kv: -kv[1])
        ]
        notes.append(
            "ranks " + " against ".join(parts) + ": the catalog prices the providers in "
            "different numbers of regions, so the cheapest region wins more often where "
            "more are priced"
        )
    return notes


def traffic_of(q: FleetQuestion) -> dict[str, Any]:
    """The answer's traffic: the clients, bytes per response, Gbit/s and GiB a month."""
    bytes_per_request = wire_bytes_per_request(q.workload)
    gbps, monthly_gib = traffic(q.target_rps, bytes_per_request)
    return {
        "clients": q.clients,
        "bytes_per_request": bytes_per_request,
        "gbps": gbps,
        "monthly_gib": monthly_gib,
        "basis": (
            f"{q.target_rps:,.0f} RPS x {bytes_per_request:,.0f} B on the wire per response "
            "(body, headers and framing; an estimate) over a 730-hour month"
        ),
    }


def finish(rec: Recommendation) -> Recommendation:
    """``rec`` with its mix (K > 1) and its decision: new values, ``rec`` is not changed."""
    q = rec.question
    assert q is not None
    if q.mix > 1:
        # numpy and scipy are imported on the --mix path only (no cycle: mix imports counts).
        from sizing.fleet.mix import best_mix

        rec = replace(rec, mix=best_mix(rec, q.mix))
    return replace(rec, decision=decide(rec))
