"""The whole catalog as columns, for ``recommend --region all`` on large catalogs.

The rows of `sizing.catalog.load` are Python objects, a few microseconds each to make; a
catalog of 170,000 rows spends most of a run making them. Here the checked rows of the
compact form are kept in the private cache (`sizing.catalog.cache`, its own file beside the
rows' one) as columns: each number column as the bytes of a float64 or int64 array (NaN or 0
for an empty optional field), each text column as int32 codes into a table of its distinct
values. `Columns` reads them back as numpy arrays without a per-row step, and makes an
`Instance` only for a row that is asked for (the same object every time it is asked).

Two codes come with every row: its *shape* (what capacity depends on:
`SHAPE_FIELDS`) and its *like* group (what `sizing.fleet.recommend.prune_dominated`
compares within: `LIKE_FIELDS`), so that per-row work becomes per-group work.

numpy is imported by this module only: the paths that never need columns do not load it.
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sizing.catalog import cache as _cache
from sizing.catalog import load as _load
from sizing.catalog.load import FIELD_NAMES, LIKE_FIELDS, SHAPE_FIELDS, Instance, compact_path

COLUMNS_SCHEMA = "nginx-sizing/catalog-columns/2"
#: Text columns: int32 codes into a table of distinct values.
TEXT = ("provider", "region", "instance_type", "family", "arch", "cpu", "source", "source_date")
#: Float columns [their units in `sizing.catalog.load.CATALOG`]; NaN stands for an empty field.
FLOAT = (
    "memory_gib",
    "network_gbps",
    "price_usd_hour",
    "network_burst_gbps",
    "spot_usd_hour",
    "commit_1y_usd_hour",
    "commit_3y_usd_hour",
    "cpu_baseline",
    "coremark",
)
#: Integer columns; 0 stands for an empty ``threads_per_core``.
INT = ("vcpus", "threads_per_core")
#: Yes/no columns.
BOOL = ("network_burst", "burstable")
#: Float columns also kept as ranks (``_rank_<name>``): each value's place among the
#: column's distinct values (an empty field after them all), so that a sort is one of ints.
RANKED = (
    "network_gbps",
    "price_usd_hour",
    "spot_usd_hour",
    "commit_1y_usd_hour",
    "commit_3y_usd_hour",
)
_DTYPES = {
    **{f: np.int32 for f in (*TEXT, "_shape", "_like", *(f"_rank_{r}" for r in RANKED))},
    **{f: np.float64 for f in FLOAT},
    **{f: np.int64 for f in INT},
    **{f: np.int8 for f in BOOL},
}
assert {*TEXT, *FLOAT, *INT, *BOOL, "catalog_file"} == set(FIELD_NAMES)


def _columns_value(items: Sequence[Instance]) -> dict[str, Any]:
    """The plain data (`marshal`-able) the cache keeps for checked rows, in their order."""
    tables: dict[str, dict[str, int]] = {f: {} for f in TEXT}
    cols: dict[str, bytes] = {}
    for f in TEXT:
        table = tables[f]
        cols[f] = array("i", [table.setdefault(getattr(i, f), len(table)) for i in items]).tobytes()
    for f in FLOAT:
        values = [getattr(i, f) for i in items]
        cols[f] = array("d", [math.nan if v is None else v for v in values]).tobytes()
    for f in INT:
        cols[f] = array("q", [getattr(i, f) or 0 for i in items]).tobytes()
    for f in BOOL:
        cols[f] = array("b", [1 if getattr(i, f) else 0 for i in items]).tobytes()
    for name, keys in (("_shape", SHAPE_FIELDS), ("_like", LIKE_FIELDS)):
        seen: dict[tuple[Any, ...], int] = {}
        codes = [seen.setdefault(tuple(getattr(i, f) for f in keys), len(seen)) for i in items]
        cols[name] = array("i", codes).tobytes()
    for f in RANKED:
        values = [getattr(i, f) for i in items]
        place = {v: k for k, v in enumerate(sorted({v for v in values if v is not None}))}
        cols[f"_rank_{f}"] = array("i", [place.get(v, len(place)) for v in values]).tobytes()
    return {"rows": len(items), "tables": {f: list(t) for f, t in tables.items()}, "cols": cols}


class Columns:
    """Checked catalog rows as numpy columns (see the module docstring).

    Attributes
    ----------
    n : int
        Rows [1].
    cols : dict of str to numpy.ndarray
        Every column of `TEXT` (codes), `FLOAT`, `INT`, `BOOL`, and ``_shape``, ``_like``.
    tables : dict of str to list of str
        Each text column's distinct values, by code.
    catalog_file : str
        The catalog file every row comes from.
    """

    def __init__(self, value: dict[str, Any], catalog_file: str) -> None:
        self.n = int(value["rows"])
        self.tables: dict[str, list[str]] = value["tables"]
        self.cols = {f: np.frombuffer(b, dtype=_DTYPES[f]) for f, b in value["cols"].items()}
        if set(self.cols) != set(_DTYPES) or any(len(c) != self.n for c in self.cols.values()):
            raise ValueError("columns of unequal length")
        for f in TEXT:
            codes = self.cols[f]
            if self.n and (codes.min() < 0 or codes.max() >= len(self.tables[f])):
                raise ValueError(f"a {f} code outside its table")
        self.catalog_file = catalog_file
        self._made: dict[int, Instance] = {}

    def size(self, field: str) -> int:
        """How many codes a code column (text, ``_shape``, ``_like``, ``_rank_*``) can hold."""
        if field in self.tables:
            return len(self.tables[field])
        codes = self.cols[field]
        return int(codes.max()) + 1 if len(codes) else 0

    def text(self, field: str, rows: Any = None) -> np.ndarray:
        """The values of a text column as an object array (of ``rows`` when given)."""
        table = np.array(self.tables[field], dtype=object)
        codes = self.cols[field]
        return table[codes if rows is None else codes[rows]]

    def rank(self, field: str) -> np.ndarray:
        """Each code's place when the text column's values are sorted (Python's str order)."""
        table = self.tables[field]
        out = np.empty(len(table), dtype=np.int64)
        out[sorted(range(len(table)), key=table.__getitem__)] = np.arange(len(table))
        return out

    def instance(self, row: int) -> Instance:
        """Row ``row`` as an `Instance`: equal to the one the row reader makes."""
        inst = self._made.get(int(row))
        return inst if inst is not None else self.instances([row])[0]

    def instances(self, rows: Any) -> list[Instance]:
        """`instance` of each of ``rows`` (made a column at a time)."""
        rows = np.asarray(rows, dtype=np.int64)
        todo = [r for r in rows.tolist() if r not in self._made]
        if todo:
            c = self.cols
            at = np.array(todo, dtype=np.int64)
            values: dict[str, list[Any]] = {}
            for f in TEXT:
                table = self.tables[f]
                values[f] = [table[k] for k in c[f][at].tolist()]
            for f in FLOAT:
                values[f] = [None if v != v else v for v in c[f][at].tolist()]
            values["vcpus"] = c["vcpus"][at].tolist()
            values["threads_per_core"] = [v or None for v in c["threads_per_core"][at].tolist()]
            for f in BOOL:
                values[f] = [bool(v) for v in c[f][at].tolist()]
            values["catalog_file"] = [self.catalog_file] * len(todo)
            make = _load._instance
            by_field = [values[f] for f in FIELD_NAMES]
            for k, r in enumerate(todo):
                self._made[r] = make([column[k] for column in by_field])
        return [self._made[r] for r in rows.tolist()]


def load_columns(csv_path: str | Path) -> Columns | None:
    """Every row of a catalog as `Columns`, or None when the cache cannot serve them.

    None when the cache is off or unusable, when a file was modified within
    `sizing.catalog.cache.RACY_NS`, or when the compact form is not current: the rows are
    then read as rows. The first run after a change reads the rows (their own cache, or the
    compact file checked) and keeps their columns.
    """
    p = Path(csv_path)
    stats = _cache.stat_key(p, compact_path(p))
    if not stats or _cache.cache_dir() is None:
        return None
    key = f"{COLUMNS_SCHEMA}|{','.join(FIELD_NAMES)}|{stats}"
    slot = os.path.realpath(p) + "#columns"
    value = _cache.load(key, slot)
    if value is not None:
        try:
            return Columns(value, str(p))
        except (KeyError, TypeError, ValueError):
            pass
    compact = _load._read_compact(p, None)
    if compact is None:
        return None
    value = _columns_value(compact[0])
    _cache.store(key, value, slot)
    return Columns(value, str(p))
