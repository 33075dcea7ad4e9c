"""`recommend` over the catalog's columns: the same answer, per group instead of per row.

``recommend --region all`` on a large catalog spends its time on rows: making each one an
object, grouping, pruning and counting it. Here the rows stay numpy columns
(`sizing.catalog.columns.Columns`) until the options are ranked:

* family groups are found once per shape (type and platform), the one-size rule by counting
  each family's sizes with array operations;
* exclusions (family groups, burstable types, missing prices) are masks;
* dominated types (`sizing.fleet.recommend.prune_dominated`) are dropped by one sort and a
  running maximum of the bandwidth within each group;
* capacity and fleet counts are computed once per shape and spread over the rows;
* the options are ranked by the same keys as `sizing.fleet.recommend`;
* `Option` objects (and the rows' `Instance` objects) are made only for the options that are
  read: the printed table reads ten. The excluded rows' list is made when it is read.

The answer is the one `sizing.fleet.recommend.recommend` gives for the same rows (tests
compare both); when nothing is feasible the rows path is taken, so the messages are its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, SupportsIndex, TypeVar, cast, overload

import numpy as np

from sizing.catalog.columns import Columns
from sizing.catalog.egress import egress_cost, traffic
from sizing.catalog.load import PRICING_COLUMNS, Instance
from sizing.catalog.providers import FAMILY_GROUPS, ONE_SIZE_MIN_VCPUS, family_group
from sizing.errors import InputError
from sizing.fleet import recommend as _rec
from sizing.fleet.counts import (
    HOURS_PER_MONTH,
    FleetRules,
    Option,
    Recommendation,
    count_for,
    p_meet,
)
from sizing.model.capacity import Capacity, Workload, instance_capacities, wire_bytes_per_request
from sizing.model.carbon import option_g_per_hour
from sizing.model.costmodel import CostProfile

T = TypeVar("T")
#: Items made at a time while a `Lazy` list is iterated.
_CHUNK = 32


class Lazy(list[T]):
    """A list of ``n`` items made on first use by ``make(start, stop)`` (items start..stop-1).

    Indexing, slicing and iterating make only the items up to the one asked for; any other
    list operation makes them all first. A copy or a pickle is a plain list.
    """

    def __init__(self, n: int, make: Callable[[int, int], list[T]]) -> None:
        super().__init__()
        self._n = n
        self._make = make

    def _fill(self, upto: int) -> None:
        have = list.__len__(self)
        upto = min(upto, self._n)
        if have < upto:
            list.extend(self, self._make(have, upto))

    def _all(self) -> None:
        self._fill(self._n)

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __iter__(self) -> Iterator[T]:
        for i in range(self._n):
            if i >= list.__len__(self):
                self._fill(i + _CHUNK)
            yield list.__getitem__(self, i)

    @overload
    def __getitem__(self, key: SupportsIndex) -> T: ...

    @overload
    def __getitem__(self, key: slice) -> list[T]: ...

    def __getitem__(self, key: SupportsIndex | slice) -> T | list[T]:
        if isinstance(key, slice):
            start, stop, step = key.indices(self._n)
            if step > 0:
                self._fill(stop)
                return list.__getitem__(self, slice(start, stop, step))
            self._all()
            return list.__getitem__(self, key)
        i = key.__index__()
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("list index out of range")
        self._fill(i + 1)
        return list.__getitem__(self, i)

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (list, (list(iter(self)),))

    def __repr__(self) -> str:
        self._all()
        return list.__repr__(self)


def _whole(name: str) -> Any:
    """A list method that first makes every item (and then knows the new length)."""
    method = getattr(list, name)

    def run(self: Lazy[Any], *args: Any, **kwargs: Any) -> Any:
        self._all()
        out = method(self, *args, **kwargs)
        self._n = list.__len__(self)
        return out

    run.__name__ = name
    run.__doc__ = method.__doc__
    return run


for _name in (
    "__contains__",
    "__reversed__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__add__",
    "__iadd__",
    "__mul__",
    "__rmul__",
    "__imul__",
    "__setitem__",
    "__delitem__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "index",
    "count",
    "sort",
    "reverse",
    "copy",
    "clear",
):
    setattr(Lazy, _name, _whole(_name))
Lazy.__hash__ = None


class ColumnarRecommendation(Recommendation):
    """A `Recommendation` whose options are made when read (see the module docstring).

    `to_dict` with ``top`` makes only those options: the regions of all options and
    `sizing.fleet.counts.vcpus_by_family` come from the columns.
    """

    regions_of_options: list[str]
    by_family: Callable[[], list[dict[str, Any]]]

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON-ready document, the same as `Recommendation.to_dict`'s."""
        if top is None:
            return super().to_dict(top)
        every = self.options
        self.options = every[:top]  # the document's other fields come from the columns
        try:
            doc = super().to_dict(top)
        finally:
            self.options = every
        doc["regions"] = list(self.regions_of_options)
        doc["vcpus_by_family"] = self.by_family()
        return doc


def _first_order(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes in order of first appearance: the codes, where each first appears, each row's place.

    ``codes`` are ints in ``[0, size)``; no sort of the rows, only of the codes present.
    """
    n = len(codes)
    first = np.full(size, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n))
    present = np.flatnonzero(first < n)
    order = present[np.argsort(first[present], kind="stable")]
    place = np.zeros(size, dtype=np.int64)
    place[order] = np.arange(len(order))
    return order, first[order], place[codes]


class _Name:
    """What `sizing.catalog.providers.family_group` reads of a row."""

    __slots__ = ("family", "instance_type", "provider")

    def __init__(self, provider: str, instance_type: str, family: str) -> None:
        self.provider, self.instance_type, self.family = provider, instance_type, family


def recommend_columns(
    target_rps: float,
    cols: Columns,
    rows: np.ndarray,
    workload: Workload | None = None,
    headroom: float = _rec.DEFAULT_HEADROOM,
    redundancy: int = 0,
    max_count: int | None = None,
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
    include_families: Sequence[str] = (),
    egress_prices: dict[tuple[str, str, str], Any] | None = None,
    growth: tuple[str, float] | None = None,
) -> Recommendation:
    """`sizing.fleet.recommend.recommend` of the catalog rows ``rows`` of ``cols``.

    Parameters are those of `sizing.fleet.recommend.recommend` (no run evidence), with the
    candidates given as ``cols`` and the row numbers ``rows`` (int array, catalog order).

    Returns
    -------
    Recommendation
        Equal to the rows path's, options made when read.

    Raises
    ------
    InputError
        For a bad argument.
    Infeasible
        When no instance type can meet the target within the limits (the rows path's
        message).
    """
    args: dict[str, Any] = {
        "zones": zones,
        "zone_loss": zone_loss,
        "pricing": pricing,
        "spot_reserve": spot_reserve,
        "sort": sort,
        "mix": mix,
        "clients": clients,
        "include_families": include_families,
    }
    work, rules, included = _rec._setup(
        target_rps, workload, headroom, redundancy, max_count, confidence, **args
    )

    def rows_path() -> Recommendation:
        """The same request by rows: burst rates, and the messages of an answer with no option."""
        return _rec.recommend(
            target_rps,
            cols.instances(rows),
            workload,
            headroom,
            redundancy,
            max_count,
            None,
            confidence,
            profiles,
            burstable=burstable,
            prune=prune,
            egress_prices=egress_prices,
            growth=growth,
            **args,
        )

    if work.burst_network:
        # The columns prune on baseline rates; burst rates are the provider's rules, per row.
        return rows_path()
    if pricing == "spot" and spot_reserve is None:
        return rows_path()  # spares by each row's interruption band (sizing.fleet.spot)
    c = cols.cols
    tables = cols.tables
    every = len(rows) == cols.n  # no filter: the columns as they are, no copies

    def col(name: str) -> np.ndarray:
        """A column's codes (of the rows asked for)."""
        return c[name] if every else c[name][rows]

    def value(name: str) -> np.ndarray:
        """A number column's values (of the rows asked for)."""
        return cols.values(name, None if every else rows)

    n_family = len(tables["family"])
    n_type = len(tables["instance_type"])
    provider = col("provider").astype(np.int64)
    family = col("family").astype(np.int64)
    vcpus = value("vcpus")
    price = value(PRICING_COLUMNS[pricing])
    burst = col("burstable").astype(bool)
    shape = col("_shape")
    types = col("instance_type")

    # Family groups: by name once per shape, then the one-size rule over the rows.
    n_shape = cols.size("_shape")
    _, shape_first, shape_of = _first_order(shape, n_shape)
    first_rows = rows[shape_first]
    names = ["", *FAMILY_GROUPS, "one-size"]
    code_of = {g: k for k, g in enumerate(names)}
    per_shape = np.array(
        [
            code_of[
                family_group(
                    cast(
                        Instance,
                        _Name(
                            tables["provider"][p], tables["instance_type"][t], tables["family"][f]
                        ),
                    )
                )
            ]
            for p, t, f in zip(
                c["provider"][first_rows].tolist(),
                c["instance_type"][first_rows].tolist(),
                c["family"][first_rows].tolist(),
                strict=True,
            )
        ],
        dtype=np.int64,
    )
    group = per_shape[shape_of]
    pf = provider * n_family + family
    seen = np.zeros((len(tables["provider"]) * n_family, n_type), dtype=bool)
    seen[pf, types] = True
    one_size = (group == 0) & (seen.sum(axis=1)[pf] == 1) & (vcpus >= ONE_SIZE_MIN_VCPUS)
    group[one_size] = code_of["one-size"]

    # Exclusions, the first reason that applies to each row.
    left = np.array([bool(g) and g not in included for g in names])
    why = np.zeros(len(rows), dtype=np.int8)
    why[np.isnan(price)] = 4
    why[burst & np.isnan(value("cpu_baseline"))] = 3
    if not burstable:
        why[burst] = 2
    why[left[group]] = 1
    reasons = {
        2: "burstable CPU: its burst is not sustained capacity",
        3: "burstable CPU without a published sustained baseline",
        4: f"no {pricing} price published",
    }
    out_rows = np.flatnonzero(why)
    left_out: dict[str, set[str]] = {}
    out1 = np.flatnonzero(why == 1)
    for g in _first_order(group[out1], len(names))[0].tolist():
        fam = np.unique(family[out1[group[out1] == g]])
        left_out[names[g]] = {tables["family"][f] for f in fam.tolist()}

    def group_reason(g: int) -> str:
        return f"{names[g]}: {FAMILY_GROUPS[names[g]]} (--include-families {names[g]})"

    candidates = np.flatnonzero(why == 0)
    t_rank = types.astype(np.int64)  # codes are ranks

    # Dominated types: cheapest first within each group, kept only when adding bandwidth.
    if prune and len(candidates):
        _, _, gid = _first_order(col("_like")[candidates], cols.size("_like"))
        net = col("network_gbps")[candidates].astype(np.int64)
        cost = col(PRICING_COLUMNS[pricing])[candidates].astype(np.int64)
        n_net = cols.size("network_gbps")
        widths = [len(candidates), cols.size(PRICING_COLUMNS[pricing]), n_net, n_type]
        if math.prod(widths) < 2**62:  # one key: group, price, bandwidth (high first), name
            key = ((gid * widths[1] + cost) * n_net + (n_net - 1 - net)) * n_type
            order = np.argsort(key + t_rank[candidates], kind="stable")
        else:
            order = np.lexsort((t_rank[candidates], -net, cost, gid))
        level = gid[order] * (n_net + 1) + net[order] + 1  # rises with the group
        best_before = np.concatenate((np.array([-1]), np.maximum.accumulate(level)[:-1]))
        keep = level > best_before
        where_best = np.maximum.accumulate(np.where(keep, np.arange(len(order)), 0))
        kept = candidates[order[keep]]
        dropped = candidates[order[~keep]]
        dominators = candidates[order[where_best[~keep]]]
    else:
        kept = candidates
        dropped = dominators = np.zeros(0, dtype=np.int64)
    if not len(kept):
        return rows_path()

    # Capacity and counts once per shape (of any row: capacity does not depend on the region).
    kept_shape_of = shape_of[kept]
    in_kept = np.unique(kept_shape_of)
    reps = cols.instances(first_rows[in_kept])
    caps: list[Any] = [None] * len(shape_first)
    for k, cap in zip(
        in_kept.tolist(), instance_capacities(reps, work, None, profiles), strict=True
    ):
        caps[k] = _rec.sustained(cap)
    counts = [
        (None, None, math.nan, math.nan)
        if cap is None
        else _counts(target_rps, cap, rules, headroom, confidence)
        for cap in caps
    ]
    feasible = np.array([n is not None for n, _, _, _ in counts], dtype=bool)[kept_shape_of]
    if not feasible.any():
        return rows_path()
    options_at = kept[feasible]
    option_shape = kept_shape_of[feasible]
    infeasible = kept[~feasible]
    infeasible_why = [
        ""
        if cap is None
        else "cannot meet the SLA"
        if cap.capacity_rps <= 0
        else f"needs more than {rules.limit:,} instances"
        for cap in caps
    ]
    infeasible_shape = kept_shape_of[~feasible]

    # Egress once per provider and region.
    n_region = len(tables["region"])
    region = col("region").astype(np.int64)
    where_code = provider[options_at] * n_region + region[options_at]
    wheres, _, where_of = _first_order(where_code, len(tables["provider"]) * n_region)
    monthly_gib = traffic(target_rps, wire_bytes_per_request(work))[1]
    priced: dict[tuple[str, str], dict[str, Any]] = {}
    for w in wheres.tolist():
        place = (tables["provider"][w // n_region], tables["region"][w % n_region])
        priced[place] = egress_cost(
            *place, monthly_gib, clients=clients, zones=zones, prices=egress_prices
        )
    priced_list = list(priced.values())
    egress = np.array(
        [0.0 if e["usd_month"] is None else float(e["usd_month"]) for e in priced_list]
    )[where_of]

    # Rank as `sizing.fleet.recommend._sort_key` does.
    n_opt = np.array([n or 0 for n, _, _, _ in counts], dtype=np.int64)[option_shape]
    n_conf = np.array([-1 if m is None else m for _, m, _, _ in counts], dtype=np.int64)
    n_conf_opt = n_conf[option_shape]
    p_opt = price[options_at]
    total = n_opt * p_opt + egress / HOURS_PER_MONTH
    keys = [
        t_rank[options_at],
        region[options_at],
        provider[options_at],
        n_opt,
        total,
    ]
    if sort == "cost-at-confidence":
        at_conf = np.where(n_conf_opt >= 0, n_conf_opt * p_opt, math.inf)
        keys.append(at_conf + egress / HOURS_PER_MONTH)
    if sort == "carbon":  # grams per hour of the point count, as `Option.carbon` gives them
        cap_rps = np.array([0.0 if k is None else k.capacity_rps for k in caps])[option_shape]
        peak = np.array([0.0 if k is None else k.cpu_peak_rps for k in caps])[option_shape]
        with np.errstate(divide="ignore", invalid="ignore"):
            load = np.where(peak > 0, target_rps / (n_opt * cap_rps) * cap_rps / peak, 1.0)
        pr = zip(provider[options_at].tolist(), region[options_at].tolist(), strict=True)
        keys.append(
            option_g_per_hour(
                [(tables["provider"][p], tables["region"][r]) for p, r in pr],
                [tables["instance_type"][t] for t in types[options_at].tolist()],
                [caps[k].instance for k in option_shape.tolist()],
                vcpus[options_at],
                n_opt,
                load,
            )
        )
    ranked = np.lexsort(keys)
    ranked_rows = rows[options_at[ranked]]
    ranked_shape = option_shape[ranked]
    ranked_where = where_of[ranked]

    def make_options(start: int, stop: int) -> list[Option]:
        out = []
        for j in range(start, stop):
            inst = cols.instance(ranked_rows[j])
            cap = caps[ranked_shape[j]]
            if cap.instance is not inst:
                twin = object.__new__(Capacity)
                twin.__dict__.update(cap.__dict__)
                twin.instance = inst
                cap = twin
            n, m, p_n, p_conf = counts[ranked_shape[j]]
            assert n is not None
            unit = inst.price(pricing)
            assert unit is not None
            out.append(
                Option(
                    capacity=cap,
                    count=n,
                    utilization=target_rps / (n * cap.capacity_rps),
                    hourly_cost_usd=n * unit,
                    p_meets_target=p_n,
                    confidence=confidence,
                    count_at_confidence=m,
                    unit_price_usd_hour=unit,
                    rules=rules,
                    p_meets_at_confidence=p_conf,
                    egress=priced_list[ranked_where[j]],
                )
            )
        return out

    made: list[list[dict[str, Any]]] = []

    def make_excluded(start: int, stop: int) -> list[dict[str, Any]]:
        if made:
            return made[0][start:stop]
        types = tables["instance_type"]
        regions = tables["region"]
        t_code = c["instance_type"]
        r_code = c["region"]
        out = []
        for i in out_rows.tolist():
            r = rows[i]
            reason = reasons[why[i]] if why[i] != 1 else group_reason(group[i])
            out.append(
                {
                    "instance_type": types[t_code[r]],
                    "region": regions[r_code[r]],
                    "reason": reason,
                }
            )
        for i, b in zip(dropped.tolist(), dominators.tolist(), strict=True):
            r = rows[i]
            out.append(
                {
                    "instance_type": types[t_code[r]],
                    "region": regions[r_code[r]],
                    "reason": f"dominated by {types[t_code[rows[b]]]} (same CPU, vCPUs and "
                    f"at least its bandwidth, at a lower {pricing} price)",
                }
            )
        for i, s in zip(infeasible.tolist(), infeasible_shape.tolist(), strict=True):
            r = rows[i]
            out.append(
                {
                    "instance_type": types[t_code[r]],
                    "region": regions[r_code[r]],
                    "reason": infeasible_why[s],
                }
            )
        made.append(out)
        return out[start:stop]

    n_excluded = len(out_rows) + len(dropped) + len(infeasible)
    notes = _notes(cols, rows, kept, left_out, price, burst, pricing, burstable)
    notes += _rec._traffic_notes(priced, clients, zones)
    rec = ColumnarRecommendation(
        target_rps,
        work,
        headroom,
        redundancy,
        Lazy(len(ranked_rows), make_options),
        Lazy(n_excluded, make_excluded),
        None,
        confidence,
        rules,
        sort,
        profiles=tuple(profiles),
        notes=notes,
        include_families=tuple(sorted(included)),
        growth=growth,
    )
    option_regions = np.unique(c["region"][ranked_rows])
    rec.regions_of_options = sorted(tables["region"][r] for r in option_regions)
    rec.by_family = lambda: _by_family(cols, ranked_rows, n_opt[ranked], pricing)
    return _rec._finish(rec, clients, mix)


def _counts(
    target_rps: float, cap: Capacity, rules: FleetRules, headroom: float, confidence: float
) -> tuple[int | None, int | None, float, float]:
    """A shape's counts [instances] and the chance [0-1] each keeps ``target_rps`` [1/s].

    The count, the count at ``confidence``, and their chances; None and NaN where no count
    within the rules keeps the target.
    """
    n = count_for(target_rps, cap.capacity_rps * (1.0 - headroom), rules)
    n_conf = count_for(target_rps, cap.quantile(1.0 - confidence) * (1.0 - headroom), rules)
    return (
        n,
        n_conf,
        math.nan if n is None else p_meet(n, cap, target_rps, rules),
        math.nan if n_conf is None else p_meet(n_conf, cap, target_rps, rules),
    )


def _by_family(
    cols: Columns, ranked_rows: np.ndarray, counts: np.ndarray, pricing: str
) -> list[dict[str, Any]]:
    """`sizing.fleet.counts.vcpus_by_family` of the ranked options, from the columns."""
    c, tables = cols.cols, cols.tables
    key = c["provider"][ranked_rows].astype(np.int64) * len(tables["family"]) + c["family"][
        ranked_rows
    ].astype(np.int64)
    totals = counts * cols.values("vcpus", ranked_rows)
    _, first, group = _first_order(key, len(tables["provider"]) * len(tables["family"]))
    least = np.full(len(first), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(least, group, totals)
    out = []
    for k, j in enumerate(first.tolist()):
        inst = cols.instance(ranked_rows[j])
        n = int(counts[j])
        unit = inst.price(pricing)
        assert unit is not None
        out.append(
            {
                "provider": inst.provider,
                "family": inst.family,
                "arch": inst.arch,
                "cheapest_instance_type": inst.instance_type,
                "cheapest_count": n,
                "cheapest_total_vcpus": n * inst.vcpus,
                "cheapest_hourly_cost_usd": n * unit,
                "min_total_vcpus": int(least[k]),
            }
        )
    return out


def _notes(
    cols: Columns,
    rows: np.ndarray,
    kept: np.ndarray,
    left_out: dict[str, set[str]],
    price: np.ndarray,
    burst: np.ndarray,
    pricing: str,
    burstable: bool,
) -> list[str]:
    """`sizing.fleet.recommend._notes` from the columns."""
    c, tables = cols.cols, cols.tables
    provider = c["provider"][rows]
    given = {tables["provider"][p]: p for p in np.unique(provider).tolist()}
    with_price = set(np.unique(provider[~np.isnan(price)]).tolist())
    kept_provider = provider[kept]
    regions: dict[str, set[str]] = {}
    for p in _first_order(kept_provider, len(tables["provider"]))[0].tolist():
        codes = np.unique(c["region"][rows[kept[kept_provider == p]]])
        regions[tables["provider"][p]] = {tables["region"][r] for r in codes.tolist()}
    return _rec._notes_of(
        left_out,
        bool(burst.any()),
        {name: (int((provider == p).sum()), p in with_price) for name, p in given.items()},
        regions,
        pricing,
        burstable,
    )


def select_rows(
    cols: Columns,
    provider: str | Sequence[str] | None = None,
    arch: str | Sequence[str] | None = None,
    family: str | Sequence[str] | None = None,
) -> np.ndarray:
    """The rows `sizing.catalog.load.filter_catalog` keeps, as row numbers.

    Raises
    ------
    InputError
        If a filter names a value that no row has (the same message).
    """
    from sizing.catalog.load import _listing, _norm

    rows = np.arange(cols.n)
    for field, given in (("provider", provider), ("arch", arch), ("family", family)):
        wanted = _norm(given)
        if wanted is None:
            continue
        codes = cols.cols[field][rows]
        present = np.unique(codes).tolist()
        lower = {k: str(cols.tables[field][k]).lower() for k in present}
        known = set(lower.values())
        unknown = sorted(wanted - known)
        if unknown:
            raise InputError(
                f"unknown {field} {_listing(unknown)}; expected one of: {_listing(sorted(known))}"
            )
        keep = [k for k, v in lower.items() if v in wanted]
        rows = rows[np.isin(codes, keep)]
    return rows


def instances_of(cols: Columns, rows: np.ndarray) -> Lazy[Instance]:
    """The rows' `Instance` objects, made when read."""
    return Lazy(len(rows), lambda start, stop: cols.instances(rows[start:stop]))
