"""The whole catalog as columns, for ``recommend --region all`` on large catalogs.

The rows of `sizing.catalog.load` are Python objects, a few microseconds each to make; a
catalog of 170,000 rows spends most of a run making them. Here the checked rows of the
compact form are kept in the private cache (`sizing.catalog.cache`, its own file beside the
rows' one) as columns of codes: each field's distinct values sorted into a table (an empty
field after them all), each row holding the place of its value in that table as a 16- or
32-bit int. So a code is also the value's rank: sorting by codes sorts by values. `Columns`
reads them back as numpy arrays without a per-row step, and makes an `Instance` only for a
row that is asked for (the same object every time it is asked).

Two more codes come with every row: its *shape* (what capacity depends on:
`sizing.catalog.load.SHAPE_FIELDS`) and its *like* group (what
`sizing.fleet.recommend.prune_dominated` compares within: `sizing.catalog.load.LIKE_FIELDS`),
numbered by first appearance, so that per-row work becomes per-group work.

numpy is imported by this module only: the paths that never need columns do not load it.
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

import numpy as np

from sizing.catalog import cache as _cache
from sizing.catalog import load as _load
from sizing.catalog.load import FIELD_NAMES, LIKE_FIELDS, SHAPE_FIELDS, Instance, compact_path
from trialtable.fields import FieldValue

COLUMNS_SCHEMA = "nginx-sizing/catalog-columns/4"
#: Text columns.
TEXT = ("provider", "region", "instance_type", "family", "arch", "cpu", "source", "source_date")
#: Float columns [their units in `sizing.catalog.load.CATALOG`].
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
#: Integer columns.
INT = ("vcpus", "threads_per_core")
#: Yes/no columns (their table is always ``[False, True]``).
BOOL = ("network_burst", "burstable")
#: Group columns: numbered by first appearance, no table.
GROUPS = {"_shape": SHAPE_FIELDS, "_like": LIKE_FIELDS}
assert {*TEXT, *FLOAT, *INT, *BOOL, "catalog_file"} == set(FIELD_NAMES)


def _packed(codes: list[int], size: int) -> tuple[str, bytes]:
    """Codes as the bytes of an `array` of the narrowest of 16 and 32 bits, with its type."""
    kind = "H" if size <= 1 << 16 else "i"
    return kind, array(kind, codes).tobytes()


class ColumnsValue(TypedDict):
    """The plain data (`marshal`-able) the cache keeps for checked rows.

    Attributes
    ----------
    rows : int
        Rows [1].
    tables : dict of str to list
        Each field's distinct values, sorted, None last.
    cols : dict of str to (str, bytes)
        Each field's (and ``_shape``'s, ``_like``'s) codes, packed by `_packed`.
    files : dict of str to str
        Each provider's catalog file.
    """

    rows: int
    tables: dict[str, list[FieldValue]]
    cols: dict[str, tuple[str, bytes]]
    files: dict[str, str]


def _columns_value(items: Sequence[Instance]) -> ColumnsValue:
    """The plain data (`marshal`-able) the cache keeps for checked rows, in their order."""
    tables: dict[str, list[Any]] = {}
    cols: dict[str, tuple[str, bytes]] = {}
    for f in (*TEXT, *FLOAT, *INT, *BOOL):
        values = [getattr(i, f) for i in items]
        if f in BOOL:
            table: list[Any] = [False, True]
        else:
            table = sorted({v for v in values if v is not None})
            if len(table) < len(values) and None in values:
                table.append(None)
        place = {v: k for k, v in enumerate(table)}
        tables[f] = table
        cols[f] = _packed([place[v] for v in values], len(table))
    for name, keys in GROUPS.items():
        seen: dict[tuple[Any, ...], int] = {}
        codes = [seen.setdefault(tuple(getattr(i, f) for f in keys), len(seen)) for i in items]
        cols[name] = _packed(codes, len(seen))
    files = {i.provider: i.catalog_file for i in items}  # one file per provider
    return {"rows": len(items), "tables": tables, "cols": cols, "files": files}


def _all_of(values: list[Any], types: tuple[type, ...]) -> bool:
    """Whether every value is of one of ``types`` (``True`` is not an int unless bool is one).

    Checked per distinct type, not per value: a table of 50,000 values holds two or three.
    """
    return all(
        issubclass(kind, types) and (bool in types or not issubclass(kind, bool))
        for kind in set(map(type, values))
    )


class Columns:
    """Checked catalog rows as numpy columns of codes (see the module docstring).

    Attributes
    ----------
    n : int
        Rows [1].
    cols : dict of str to numpy.ndarray
        Each field's codes (its value's place in ``tables``), and ``_shape``, ``_like``.
    tables : dict of str to list
        Each field's distinct values, sorted, None last.
    catalog_file : str
        The catalog file every row comes from.
    derived : dict of str to Any
        What a caller derived from the columns alone (`sizing.fleet.columnar`'s family
        groups by shape), kept with them.
    """

    def __init__(self, value: ColumnsValue, catalog_file: str) -> None:
        self.n = int(value["rows"])
        self.tables: dict[str, list[Any]] = value["tables"]
        self.cols: dict[str, np.ndarray] = {}
        for f, (kind, data) in value["cols"].items():
            codes = np.frombuffer(data, dtype=np.uint16 if kind == "H" else np.int32)
            if len(codes) != self.n:
                raise ValueError("columns of unequal length")
            self.cols[f] = codes
        if set(self.cols) != {*self.tables, *GROUPS} or set(self.tables) != set(FIELD_NAMES) - {
            "catalog_file"
        }:
            raise ValueError("columns missing")
        for f, table in self.tables.items():
            if not isinstance(table, list) or not _all_of(
                table, _load.FIELD_TYPES[FIELD_NAMES.index(f)]
            ):
                raise ValueError(f"a {f} value of another type")
            codes = self.cols[f]
            if self.n and (int(codes.min()) < 0 or int(codes.max()) >= len(table)):
                raise ValueError(f"a {f} code outside its table")
        self.catalog_file = catalog_file
        #: The catalog file of each provider read from another file than ``catalog_file``.
        self.provider_files: dict[str, str] = dict(value.get("files", {}))
        self._made: dict[int, Instance] = {}
        self._numbers: dict[str, np.ndarray] = {}
        #: What a caller derives from these columns alone, kept with them: a process reads
        #: the same `Columns` again (`load_columns`), and its next answer reuses it.
        self.derived: dict[str, Any] = {}

    def size(self, field: str) -> int:
        """How many codes a column can hold."""
        if field in self.tables:
            return len(self.tables[field])
        codes = self.cols[field]
        return int(codes.max()) + 1 if len(codes) else 0

    def values(self, field: str, rows: np.ndarray | None = None) -> np.ndarray:
        """A number or yes/no column's values (NaN for an empty field), of ``rows`` if given."""
        table = self._numbers.get(field)
        if table is None:
            numbers = [math.nan if v is None else v for v in self.tables[field]]
            table = self._numbers[field] = np.array(numbers, dtype=np.float64)
            if field in INT or field in BOOL:
                table = self._numbers[field] = table.astype(np.int64)
        codes = self.cols[field]
        return table[codes if rows is None else codes[rows]]

    def instance(self, row: int) -> Instance:
        """Row ``row`` as an `Instance`: equal to the one the row reader makes."""
        inst = self._made.get(int(row))
        return inst if inst is not None else self.instances([row])[0]

    def instances(self, rows: Sequence[int] | np.ndarray) -> list[Instance]:
        """`instance` of each of ``rows`` (made a column at a time)."""
        picked = np.asarray(rows, dtype=np.int64)
        todo = [r for r in picked.tolist() if r not in self._made]
        if todo:
            at = np.array(todo, dtype=np.int64)
            by_field = []
            for f in FIELD_NAMES:
                if f == "catalog_file":  # each provider's own file (Azure: its bundled one)
                    names = self.tables["provider"]
                    codes = self.cols["provider"][at].tolist()
                    files = self.provider_files
                    by_field.append([files.get(names[k], self.catalog_file) for k in codes])
                    continue
                table = self.tables[f]
                by_field.append([table[k] for k in self.cols[f][at].tolist()])
            make = _load._instance
            for k, r in enumerate(todo):
                self._made[r] = make([column[k] for column in by_field])
        return [self._made[r] for r in picked.tolist()]


def load_columns(csv_path: str | Path) -> Columns | None:
    """Every row of a catalog as `Columns`, or None when the cache cannot serve them.

    None when the cache is off or unusable, when a file was modified within
    `sizing.catalog.cache.RACY_NS`, or when the compact form is not current: the rows are
    then read as rows. The first run after a change reads the rows (their own cache, or the
    compact file checked) and keeps their columns.

    A process that asks again for unchanged files (``--pricing spot`` answers the request at
    on-demand prices too) gets the same `Columns` again, kept beside the rows' entries of
    `sizing.catalog.load` under the same key: a changed file is read anew.
    """
    p = Path(csv_path)
    files = _load.catalog_files(p)  # beside the shipped catalog, the bundled ones (Azure)
    stats = _cache.stat_key(*(x for f in files for x in (f, compact_path(f))))
    if not stats or _cache.cache_dir() is None:
        return None
    key = f"{COLUMNS_SCHEMA}|{','.join(FIELD_NAMES)}|{stats}"
    slot = os.path.realpath(p) + "#columns"
    last = _load._LOADED.get(slot)
    if last is not None and last[0] == f"{key}|{p}":
        return cast(Columns, last[1])
    cols = _read_columns(key, slot, p, files)
    if cols is not None:
        _load._LOADED[slot] = (f"{key}|{p}", cols)
    return cols


def _read_columns(key: str, slot: str, p: Path, files: Sequence[Path]) -> Columns | None:
    """`load_columns` from the private cache, else made from the rows and kept there."""
    value = _cache.load(key, slot)
    if value is not None:
        try:
            return Columns(value, str(p))
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # not what this version keeps, or damaged: made again below
    items: list[Instance] = []
    for f in files:
        compact = _load._read_compact(f, None)
        if compact is None:
            return None
        items += compact[0]
    value = _columns_value(items)
    _cache.store(key, value, slot)
    return Columns(value, str(p))
