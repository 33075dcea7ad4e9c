"""Build the instance catalog from the providers' public files, read as they are published.

Each provider module (`sizing.catalog.providers`: `sizing.catalog.aws`, `sizing.catalog.gcp`)
reads its own files and says what it leaves out and why; this module merges their rows,
writes the catalog CSV, its compact form, the exclusion list and the egress prices
(``egress.csv``), and validates the catalog by reading it back.

Kept and marked: shared-core and credit-based types (AWS t2, t3, t3a, t4g; GCP e2-micro,
e2-small, e2-medium, f1-micro, g1-small) are ``burstable=true``; their ``cpu_baseline`` gives
the sustained vCPUs where the file publishes it. The recommendation leaves them out unless
asked (their burst is not sustained capacity).

Runs with the standard library only.
"""

from __future__ import annotations

import csv
import io
import math
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from operator import itemgetter
from pathlib import Path
from typing import Any

from sizing.catalog import providers
from sizing.catalog.aws import DEFAULT_BURST_TABLE
from sizing.catalog.egress import read_egress
from sizing.catalog.load import CATALOG, FIELD_NAMES, MAX_ROWS, Instance, read_catalog
from sizing.catalog.rows import BUILD_COLUMNS, EGRESS_COLUMNS, BuildResult
from sizing.errors import InputError
from trialtable.fields import MAX_NUMBER_TEXT, Field
from trialtable.files import check_output, write_atomic
from trialtable.output import FORMULA_PREFIXES, csv_cell, csv_row

__all__ = [
    "BUILD_COLUMNS",
    "DEFAULT_BURST_TABLE",
    "BuildResult",
    "build_providers",
    "catalog_csv",
    "egress_csv",
    "excluded_csv",
    "iter_summary",
    "write_catalog",
]


def build_providers(
    folders: Mapping[str, str | Path], burst_table: str | Path | None = None
) -> BuildResult:
    """Build the catalog rows and egress prices from each provider's upstream folder.

    Parameters
    ----------
    folders : mapping of str to path
        Provider name (`sizing.catalog.providers`) to the folder of its public files.
    burst_table : path, optional
        AWS "up to" bandwidth peaks (default: the shipped ``aws-network-burst.csv``).
    """
    if not folders:
        flags = ", ".join(f"--{n}-dir" for n in providers.names())
        raise InputError(f"give the folder of one provider's public files or more: {flags}")
    result = BuildResult()
    result.inputs = [Path(p) for p in (*folders.values(), burst_table) if p is not None]
    for name, folder in folders.items():
        module = providers.get(name)
        part = module.build(Path(folder), None if burst_table is None else Path(burst_table))
        result.rows += part.rows
        result.excluded += part.excluded
        result.egress += module.egress_rows(Path(folder))
    result.rows.sort(
        key=lambda r: (
            r["provider"],
            r["region"],
            r["family"],
            int(r["vcpus"]),
            float(r["memory_gib"]),
            r["instance_type"],
        )
    )
    # One line per excluded type (AWS repeats per region).
    result.excluded = sorted(set(result.excluded))
    return result


def catalog_csv(rows: Iterable[dict[str, str]]) -> str:
    """The rows as catalog CSV text (header first, Unix line ends)."""
    rows = list(rows)
    columns = _columns(rows)
    if columns is None:  # rows of other keys or values: the general writer
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(BUILD_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
        return buf.getvalue()
    return _csv_text(columns)


def _columns(rows: list[dict[str, str]]) -> list[tuple[str, ...]] | None:
    """The rows' cells a column at a time, in `BUILD_COLUMNS` order, each `csv_cell`-safe.

    None unless every row has exactly the keys `BUILD_COLUMNS` and every cell is text.
    """
    keys = set(BUILD_COLUMNS)
    if not all(r.keys() == keys for r in rows):
        return None
    if not rows:
        return [() for _ in BUILD_COLUMNS]
    columns = list(zip(*map(itemgetter(*BUILD_COLUMNS), rows), strict=True))
    if any(set(map(type, col)) != {str} for col in columns):
        return None
    return [_formula_safe(col) for col in columns]


#: A cell that starts with a formula prefix (`trialtable.output.FORMULA_PREFIXES`), in
#: a column's cells joined by newlines.
_FORMULA_START = re.compile("(?:^|\n)(?:" + "|".join(map(re.escape, FORMULA_PREFIXES)) + ")")


def _formula_safe(col: tuple[str, ...]) -> tuple[str, ...]:
    """`csv_cell` of every text of one column (the column itself when none needs it)."""
    if _FORMULA_START.search("\n".join(col)) is None:
        return col
    return tuple(csv_cell(v) for v in col)


def _csv_text(columns: list[tuple[str, ...]]) -> str:
    """The catalog CSV of `_columns` (header first, Unix line ends)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(BUILD_COLUMNS)
    writer.writerows(zip(*columns, strict=True))
    return buf.getvalue()


def excluded_csv(excluded: Iterable[tuple[str, str, str]]) -> str:
    """What the build left out and why, as CSV."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["provider", "instance_type", "reason"])
    writer.writerows(csv_row(e) for e in excluded)
    return buf.getvalue()


def iter_summary(result: BuildResult) -> Iterator[str]:
    """Lines that say what was built and what was left out."""
    by = Counter((r["provider"], r["region"]) for r in result.rows)
    providers = Counter(r["provider"] for r in result.rows)
    regions = {p: sum(1 for (q, _) in by if q == p) for p in providers}
    yield f"{len(result.rows)} rows: " + ", ".join(
        f"{p} {n} in {regions[p]} region(s)" for p, n in sorted(providers.items())
    )
    for reason, n in result.exclusion_counts().items():
        yield f"left out: {n} type(s): {reason}"


def egress_csv(rows: Iterable[dict[str, str]]) -> str:
    """Egress price rows as CSV (`sizing.catalog.rows.EGRESS_COLUMNS`)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(EGRESS_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
    return buf.getvalue()


def write_catalog(result: BuildResult, out: str | Path) -> tuple[Path, ...]:
    """Validate the catalog, write its CSV, then its companions.

    The rows are checked in memory, a column at a time, by the catalog's field table
    (`sizing.catalog.load.CATALOG`: types, ranges, choices, lengths), its relations (burst
    peak, CPU baseline) and unique keys: the values `sizing.catalog.load.read_catalog`
    would read back from the CSV. When any check may refuse a value, the CSV is written to
    a private folder and read back by `read_catalog`, whose message names the row and field.

    Returns
    -------
    tuple of Path
        The CSV, its compact form (see `sizing.catalog.load.write_compact`), the list of what
        was left out (``<name>.excluded.csv``) and, when the build priced egress, the egress
        prices (``egress.csv`` beside it).
    """
    from sizing.catalog.load import compact_path, write_compact

    path = Path(out)
    if not result.rows:
        raise InputError("the upstream files gave no catalog rows")
    excluded = path.with_name(path.name.removesuffix(".csv") + ".excluded.csv")
    egress = path.with_name("egress.csv")
    targets = [path, compact_path(path), excluded] + ([egress] if result.egress else [])
    inputs = [f for p in result.inputs for f in ([p, *p.rglob("*")] if p.is_dir() else [p])]
    for target in targets:  # every output checked before any write
        try:
            check_output(target, inputs=inputs)
        except OSError as exc:
            raise InputError(f"cannot write {target}: it {exc.strerror}") from None
    columns = _columns(result.rows)
    text = catalog_csv(result.rows) if columns is None else _csv_text(columns)
    items = None if columns is None else _read_back(columns, str(path))
    try:
        with tempfile.TemporaryDirectory() as tmp:  # checked by reading it back, privately
            if items is None:
                checked = read_catalog(write_atomic(Path(tmp) / path.name, text))
                items = [replace(i, catalog_file=str(path)) for i in checked]
            if result.egress:  # the egress prices too, by the reader that uses them
                read_egress(write_atomic(Path(tmp) / egress.name, egress_csv(result.egress)))
        write_atomic(path, text, inputs=inputs)
        compact = write_compact(path, items)
        write_atomic(excluded, excluded_csv(result.excluded), inputs=inputs)
        if result.egress:
            write_atomic(egress, egress_csv(result.egress), inputs=inputs)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    if not result.egress:
        return path, compact, excluded
    return path, compact, excluded, egress


def _read_back(columns: list[tuple[str, ...]], catalog_file: str) -> list[Instance] | None:
    """The instances `read_catalog` reads from the CSV of ``columns``, or None.

    None when any value might be refused or read otherwise than plainly (the caller then
    reads the written CSV back); a value passed here is one `read_catalog` passes, as the
    same value.
    """
    n = len(columns[0])
    if not 0 < n <= MAX_ROWS:
        return None
    if any(_UNPLAIN.search("".join(col)) for col in columns):
        return None  # a NUL (the CSV reader refuses it) or a line break inside a cell
    values: dict[str, list[Any]] = {}
    for name, col in zip(BUILD_COLUMNS, columns, strict=True):
        checked = _read_column(CATALOG[name], col)
        if checked is None:
            return None
        values[name] = checked
    values["provider"] = [v.lower() for v in values["provider"]]
    values["cpu"] = [v or "" for v in values["cpu"]]
    values["source_date"] = [v or "" for v in values["source_date"]]
    values["catalog_file"] = [catalog_file] * n
    peaks = values["network_burst_gbps"]
    if any(p is not None and p < b for p, b in zip(peaks, values["network_gbps"], strict=True)):
        return None
    baselines = values["cpu_baseline"]
    if any(c is not None and c > v for c, v in zip(baselines, values["vcpus"], strict=True)):
        return None
    keys = zip(values["provider"], values["region"], values["instance_type"], strict=True)
    if len(set(keys)) != n:
        return None  # a duplicate instance
    rows = zip(*(values[name] for name in FIELD_NAMES), strict=True)
    return [_instance(dict(zip(FIELD_NAMES, row, strict=True))) for row in rows]


#: Characters that make a cell read back otherwise than as written, or not at all.
_UNPLAIN = re.compile("[\0\r\n]")


def _instance(values: dict[str, Any]) -> Instance:
    """An `Instance` of checked values (the class has no ``__post_init__`` to run)."""
    inst = object.__new__(Instance)
    inst.__dict__.update(values)
    return inst


def _read_column(field: Field, col: tuple[str, ...]) -> list[Any] | None:
    """The values `Field.parse` gives the cells of one column, or None if any may differ.

    None for any cell `Field.parse` might refuse, and for any spelling read by a rule this
    does not repeat (a number in an integer column written as ``2.0``, a flag as ``yes``).
    """
    text = [v.strip() for v in col]
    if field.required and not all(text):
        return None
    if field.kind == "bool":
        if not set(text) <= {"true", "false", ""}:
            return None
        return [v == "true" for v in text]
    if field.kind == "str":
        if max(map(len, text)) > field.max_len:
            return None
        if field.choices and not set(text) <= set(field.choices):
            return None
        return [v or None for v in text]
    present = [v for v in text if v]
    if not present:
        return [None] * len(text)
    if max(map(len, present)) > MAX_NUMBER_TEXT:
        return None
    if field.kind == "int":
        digits = "".join(present)
        if not (digits.isascii() and digits.isdigit()):
            return None
        numbers: list[Any] = list(map(int, present))
    else:
        try:
            numbers = list(map(float, present))
        except ValueError:
            return None
        if not all(map(math.isfinite, numbers)):
            return None
    if not (field.low <= min(numbers) and max(numbers) <= field.high):
        return None
    if len(numbers) == len(text):
        return numbers
    found = iter(numbers)
    return [next(found) if v else None for v in text]
