"""The fleet engine's table over the catalog's columns: ``recommend --region all``.

``recommend --region all`` on a large catalog spends its time on rows: making each one an
object, grouping, pruning and counting it. `ColumnTable` keeps the rows numpy columns
(`sizing.catalog.columns.Columns`) for `sizing.fleet.engine.answer`:

* family groups are found once per shape (type and platform), the one-size rule by counting
  each family's sizes with array operations;
* exclusions (family groups, burstable types, missing prices) are masks;
* dominated types (`sizing.fleet.recommend.prune_dominated`) are dropped by one sort and a
  running maximum of the bandwidth within each group;
* capacity and fleet counts are computed once per shape and spread over the rows; spot
  spares by each row's interruption band (`sizing.fleet.spot.band_counts`) once per
  distinct count and band;
* the options are ranked by the keys of `sizing.fleet.engine.rank_key`, as one lexsort;
* `Option` objects (and the rows' `Instance` objects) are made only for the options that are
  read: the printed table reads ten. The excluded rows' list is made when it is read.

Its answer equals the one `sizing.fleet.recommend.RowTable` gives for the same rows (tests
compare both).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from sizing.catalog.columns import Columns
from sizing.catalog.load import PRICING_COLUMNS, Instance, listing, norm_values
from sizing.catalog.providers import FAMILY_GROUPS, ONE_SIZE_MIN_VCPUS, family_group, provider_of
from sizing.errors import InputError
from sizing.fleet.counts import HOURS_PER_MONTH, Recommendation
from sizing.fleet.engine import (
    BURSTABLE,
    GROUP,
    NO_BASELINE,
    NO_PRICE,
    Ranking,
    Screen,
    answer,
    rank_costs,
)
from sizing.fleet.lazy import Lazy
from sizing.fleet.question import FleetQuestion

__all__ = [
    "ColumnTable",
    "ColumnarRecommendation",
    "instances_of",
    "recommend_columns",
    "select_rows",
]

#: The family group names by code (0: none).
GROUP_NAMES = ("", *FAMILY_GROUPS, "one-size")


@dataclass(frozen=True)
class ColumnarRecommendation(Recommendation):
    """A `Recommendation` whose options are made when read (see the module docstring).

    `to_dict` with ``top`` makes only those options: the regions of all options and
    `sizing.fleet.counts.vcpus_by_family` come from the columns.
    """

    #: The regions of every option, sorted.
    regions_of_options: list[str] = dataclasses.field(default_factory=list)
    #: `sizing.fleet.counts.vcpus_by_family` of every option, made when called.
    by_family: Callable[[], list[dict[str, Any]]] = list

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON-ready document, the same as `Recommendation.to_dict`'s."""
        if top is None:
            return super().to_dict(top)
        # The first ``top`` options only: the document's other fields come from the columns.
        doc = Recommendation.to_dict(replace(self, options=self.options[:top]), top)
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


def _present(codes: np.ndarray) -> np.ndarray:
    """The distinct codes (ints >= 0), sorted: ``np.unique``'s, by counting.

    ``np.unique`` without indices imports ``numpy.ma`` (tens of ms) to ask whether the codes
    are masked.
    """
    return np.flatnonzero(np.bincount(codes))


class _Name:
    """What `sizing.catalog.providers.family_group` reads of a row."""

    __slots__ = ("family", "instance_type", "provider")

    def __init__(self, provider: str, instance_type: str, family: str) -> None:
        self.provider, self.instance_type, self.family = provider, instance_type, family


def recommend_columns(q: FleetQuestion, cols: Columns, rows: np.ndarray) -> Recommendation:
    """`sizing.fleet.engine.answer` of the catalog rows ``rows`` (int array) of ``cols``.

    Raises
    ------
    Infeasible
        When no instance type can meet the target within the limits.
    """
    return answer(q, ColumnTable(cols, rows))


class ColumnTable:
    """`sizing.fleet.engine.CandidateTable` over catalog columns (rows are places in ``rows``).

    Parameters
    ----------
    cols : Columns
        The whole catalog.
    rows : numpy.ndarray
        The catalog rows asked about (int array, catalog order).
    """

    def __init__(self, cols: Columns, rows: np.ndarray) -> None:
        self.cols, self.rows = cols, rows
        self.every = len(rows) == cols.n  # no filter: the columns as they are, no copies
        self.tables = cols.tables
        shapes = _first_order(self.col("_shape"), cols.size("_shape"))
        self.shape_codes, self.shape_first, self.shape_of = shapes

    def col(self, name: str) -> np.ndarray:
        """A column's codes (of the rows asked for)."""
        return self.cols.cols[name] if self.every else self.cols.cols[name][self.rows]

    def value(self, name: str) -> np.ndarray:
        """A number column's values (of the rows asked for)."""
        return self.cols.values(name, None if self.every else self.rows)

    def groups(self) -> np.ndarray:
        """Each row's family group code (`GROUP_NAMES`): by name once per shape, then one-size."""
        tables = self.tables
        group = self.named_groups()[self.shape_of]  # a copy: the kept codes stay as they are
        n_family = len(tables["family"])
        pf = self.col("provider").astype(np.int64) * n_family + self.col("family").astype(np.int64)
        seen = np.zeros(
            (len(tables["provider"]) * n_family, len(tables["instance_type"])), dtype=bool
        )
        seen[pf, self.col("instance_type")] = True
        sizes = seen.sum(axis=1)[pf]
        one_size = GROUP_NAMES.index("one-size")
        group[(group == 0) & (sizes == 1) & (self.value("vcpus") >= ONE_SIZE_MIN_VCPUS)] = one_size
        return group

    def named_groups(self) -> np.ndarray:
        """Each shape's family group code by its name (`family_group`), in `shape_first` order.

        Kept with the columns by shape code (`sizing.catalog.columns.Columns.derived`): a
        process's next answer over the same columns (the on-demand comparison of
        ``--pricing spot``) names only the shapes not named before.
        """
        named = self.cols.derived.get("family_group")
        if named is None:
            named = np.full(self.cols.size("_shape"), -1, dtype=np.int64)
            self.cols.derived["family_group"] = named
        todo = np.flatnonzero(named[self.shape_codes] < 0)
        if len(todo):
            c, tables = self.cols.cols, self.tables
            first_rows = self.rows[self.shape_first[todo]]
            code_of = {g: k for k, g in enumerate(GROUP_NAMES)}
            named[self.shape_codes[todo]] = [
                code_of[
                    family_group(
                        cast(
                            Instance,
                            _Name(
                                tables["provider"][p],
                                tables["instance_type"][t],
                                tables["family"][f],
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
            ]
        return named[self.shape_codes]

    def screen(self, q: FleetQuestion) -> Screen:
        """See `sizing.fleet.engine.CandidateTable`."""
        group = self.groups()
        price = self.value(PRICING_COLUMNS[q.rules.pricing])
        burst = self.col("burstable").astype(bool)
        left = np.array([bool(g) and g not in q.include_families for g in GROUP_NAMES])
        why = np.zeros(len(self.rows), dtype=np.int8)
        why[np.isnan(price)] = NO_PRICE
        why[burst & np.isnan(self.value("cpu_baseline"))] = NO_BASELINE
        if not q.burstable:
            why[burst] = BURSTABLE
        why[left[group]] = GROUP
        family = self.col("family")
        out1 = np.flatnonzero(why == GROUP)
        left_out: dict[str, set[str]] = {}
        for g in _first_order(group[out1], len(GROUP_NAMES))[0].tolist():
            fam = _present(family[out1[group[out1] == g]])
            left_out[GROUP_NAMES[g]] = {self.tables["family"][f] for f in fam.tolist()}
        out = np.flatnonzero(why)

        def excluded() -> list[tuple[int, int, str]]:
            return [(i, int(why[i]), GROUP_NAMES[group[i]]) for i in out.tolist()]

        provider = self.col("provider")
        with_price = set(_present(provider[~np.isnan(price)]).tolist())
        given = {
            self.tables["provider"][p]: (int((provider == p).sum()), p in with_price)
            for p in _present(provider).tolist()
        }
        return Screen(
            np.flatnonzero(why == 0), excluded, len(out), left_out, bool(burst.any()), given
        )

    def prune(self, rows: np.ndarray, q: FleetQuestion) -> tuple[np.ndarray, Any, int]:
        """See `sizing.fleet.engine.CandidateTable`: cheapest first within each group."""
        if not len(rows):
            return rows, lambda: (), 0
        _, _, gid = _first_order(self.col("_like")[rows], self.cols.size("_like"))
        net, n_net = self.bandwidth(rows, q)
        price_col = PRICING_COLUMNS[q.rules.pricing]
        cost = self.col(price_col)[rows].astype(np.int64)
        n_type = self.cols.size("instance_type")
        t_rank = self.col("instance_type")[rows].astype(np.int64)  # codes are ranks
        widths = [len(rows), self.cols.size(price_col), n_net, n_type]
        if math.prod(widths) < 2**62:  # one key: group, price, bandwidth (high first), name
            key = ((gid * widths[1] + cost) * n_net + (n_net - 1 - net)) * n_type
            order = np.argsort(key + t_rank, kind="stable")
        else:
            order = np.lexsort((t_rank, -net, cost, gid))
        level = gid[order] * (n_net + 1) + net[order] + 1  # rises with the group
        best_before = np.concatenate((np.array([-1]), np.maximum.accumulate(level)[:-1]))
        keep = level > best_before
        where_best = np.maximum.accumulate(np.where(keep, np.arange(len(order)), 0))
        dropped = rows[order[~keep]]
        dominators = rows[order[where_best[~keep]]]

        def pairs() -> Any:
            return zip(dropped.tolist(), dominators.tolist(), strict=True)

        return rows[order[keep]], pairs, len(dropped)

    def bandwidth(self, rows: np.ndarray, q: FleetQuestion) -> tuple[np.ndarray, int]:
        """The rows' bandwidth as ranks, and how many ranks: baseline, or burst by provider."""
        if not q.workload.burst_network:
            return self.col("network_gbps")[rows].astype(np.int64), self.cols.size("network_gbps")
        rates = [
            provider_of(inst).network_gbps(inst, q.workload)[0] for inst in map(self.instance, rows)
        ]
        values, ranks = np.unique(np.array(rates, dtype=np.float64), return_inverse=True)
        return ranks.astype(np.int64), len(values)

    def shapes(self, rows: np.ndarray) -> tuple[list[Instance], np.ndarray]:
        """See `sizing.fleet.engine.CandidateTable`."""
        present, place = np.unique(self.shape_of[rows], return_inverse=True)
        return self.cols.instances(self.rows[self.shape_first[present]]), place

    def split(
        self, rows: np.ndarray, shape: np.ndarray, ok: Sequence[bool]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """See `sizing.fleet.engine.CandidateTable`."""
        good = np.array(ok, dtype=bool)[shape]
        return rows[good], shape[good], rows[~good], shape[~good]

    def wheres(self, rows: np.ndarray) -> tuple[list[tuple[str, str]], np.ndarray]:
        """See `sizing.fleet.engine.CandidateTable`."""
        n_region = len(self.tables["region"])
        code = self.col("provider").astype(np.int64)[rows] * n_region + self.col("region")[rows]
        wheres, _, where = _first_order(code, len(self.tables["provider"]) * n_region)
        names = [
            (self.tables["provider"][w // n_region], self.tables["region"][w % n_region])
            for w in wheres.tolist()
        ]
        return names, where

    def rank(self, q: FleetQuestion, found: Ranking) -> np.ndarray:
        """See `sizing.fleet.engine.CandidateTable`: `sizing.fleet.engine.rank_key` by column."""
        rows = found.rows
        n, n_conf = _point_counts(found)
        price = self.value(PRICING_COLUMNS[q.rules.pricing])[rows]
        fixed = np.array(found.egress_usd_month)[found.where] / HOURS_PER_MONTH
        costs = rank_costs(q.sort, (n, n_conf), price, fixed)
        keys = [
            self.col("instance_type")[rows].astype(np.int64),
            self.col("region")[rows].astype(np.int64),
            self.col("provider")[rows].astype(np.int64),
            n,
            *reversed(costs),  # np.lexsort's last key leads
        ]
        if found.lead is not None:  # ranked first (np.lexsort's last key leads)
            keys.append(np.asarray(found.lead, dtype=float))
        return np.lexsort(keys)

    def regions(self, rows: np.ndarray) -> dict[str, set[str]]:
        """See `sizing.fleet.engine.CandidateTable`."""
        provider = self.col("provider")[rows]
        region = self.col("region")[rows]
        out: dict[str, set[str]] = {}
        for p in _first_order(provider, len(self.tables["provider"]))[0].tolist():
            codes = _present(region[provider == p])
            out[self.tables["provider"][p]] = {self.tables["region"][r] for r in codes.tolist()}
        return out

    def instance(self, row: int) -> Instance:
        """See `sizing.fleet.engine.CandidateTable`."""
        return self.cols.instance(self.rows[row])

    def names(self, row: int) -> tuple[str, str]:
        """See `sizing.fleet.engine.CandidateTable`."""
        c, r = self.cols.cols, self.rows[row]
        return (
            self.tables["instance_type"][c["instance_type"][r]],
            self.tables["region"][c["region"][r]],
        )

    def keys(self, rows: np.ndarray) -> list[tuple[str, str, str]]:
        """See `sizing.fleet.engine.CandidateTable`."""
        t = self.tables
        return [
            (t["provider"][p], t["region"][r], t["instance_type"][i])
            for p, r, i in zip(
                self.col("provider")[rows].tolist(),
                self.col("region")[rows].tolist(),
                self.col("instance_type")[rows].tolist(),
                strict=True,
            )
        ]

    def prices(self, rows: np.ndarray, pricing: str) -> list[float]:
        """See `sizing.fleet.engine.CandidateTable`."""
        return self.value(PRICING_COLUMNS[pricing])[rows].tolist()

    def take(self, rows: np.ndarray, keep: Sequence[bool]) -> np.ndarray:
        """See `sizing.fleet.engine.CandidateTable`."""
        return rows[np.array(keep, dtype=bool)]

    def finish(self, rec: Recommendation, found: Ranking, order: Any) -> Recommendation:
        """``rec`` as a `ColumnarRecommendation`: its regions and totals read by column."""
        ranked = self.rows[found.rows[order]]
        n = _point_counts(found)[0][order]
        regions = sorted(
            self.tables["region"][r] for r in _present(self.cols.cols["region"][ranked]).tolist()
        )
        pricing = rec.rules.pricing
        return ColumnarRecommendation(
            **{f.name: getattr(rec, f.name) for f in dataclasses.fields(rec)},
            regions_of_options=regions,
            by_family=lambda: _by_family(self.cols, ranked, n, pricing),
        )


def _point_counts(found: Ranking) -> tuple[np.ndarray, np.ndarray]:
    """Each option row's count, and count at the confidence (inf: none) [instances]."""
    if found.banded is not None:  # spot spares by each row's band (sizing.fleet.spot)
        b = found.banded
        return b.n, np.where(b.n_conf >= 0, b.n_conf.astype(float), math.inf)
    n = np.array([c[0] or 0 for c in found.counts], dtype=np.int64)[found.shape]
    n_conf = np.array([math.inf if c[1] is None else c[1] for c in found.counts])
    return n, n_conf[found.shape]


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
    rows = np.arange(cols.n)
    for field, given in (("provider", provider), ("arch", arch), ("family", family)):
        wanted = norm_values(given)
        if wanted is None:
            continue
        codes = cols.cols[field][rows]
        present = _present(codes).tolist()
        lower = {k: str(cols.tables[field][k]).lower() for k in present}
        known = set(lower.values())
        unknown = sorted(wanted - known)
        if unknown:
            raise InputError(
                f"unknown {field} {listing(unknown)}; expected one of: {listing(sorted(known))}"
            )
        keep = [k for k, v in lower.items() if v in wanted]
        rows = rows[np.isin(codes, keep)]
    return rows


def instances_of(cols: Columns, rows: np.ndarray) -> Lazy[Instance]:
    """The rows' `Instance` objects, made when read."""
    return Lazy(len(rows), lambda start, stop: cols.instances(rows[start:stop]))
