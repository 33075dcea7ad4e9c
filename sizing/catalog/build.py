"""Build the instance catalog from the providers' public files, read as they are published.

Each provider module (`sizing.catalog.providers`: `sizing.catalog.aws`, `sizing.catalog.gcp`)
reads its own files and says what it leaves out and why; this module merges their rows,
checks them, then writes the catalog CSV, its compact form, the exclusion list and the egress
prices (``egress.csv``).

The rows are checked before anything is written, in memory and a column at a time: each
distinct cell is read once, by the rules `sizing.catalog.load.read_catalog` reads the CSV
with (the same field table, relations and unique keys), and its value goes into the compact
form as `sizing.catalog.load.write_compact` would write it. Any cell those rules might read
otherwise sends the build the long way: the CSV written to a private folder, read back by
`read_catalog` (whose message names the line and field), and compacted by `write_compact`.

On a machine with a second CPU the parts go side by side (`sizing.catalog.beside`): each
provider but the last is built in a child process, and half the compact form's rows are made
in one while this process writes the CSV text and the other half.

Kept and marked: shared-core and credit-based types (AWS t2, t3, t3a, t4g; GCP e2-micro,
e2-small, e2-medium, f1-micro, g1-small) are ``burstable=true``; their ``cpu_baseline`` gives
the sustained vCPUs where the file publishes it. The recommendation leaves them out unless
asked (their burst is not sustained capacity).

Runs with the standard library only.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
import operator
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from sizing.catalog import providers
from sizing.catalog.aws import DEFAULT_BURST_TABLE
from sizing.catalog.beside import Beside, beside, here
from sizing.catalog.egress import EGRESS_MAX_BYTES, parse_egress, read_egress
from sizing.catalog.load import (
    CATALOG,
    CATALOG_MAX_BYTES,
    COMPACT_SCHEMA,
    FIELD_NAMES,
    MAX_ROWS,
    compact_path,
    read_catalog,
    write_compact,
)
from sizing.catalog.rows import BUILD_COLUMNS, EGRESS_COLUMNS, BuildResult
from sizing.errors import InputError, printable
from trialtable.fields import MAX_NUMBER_TEXT, Field, FieldValue
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
    burst = None if burst_table is None else Path(burst_table)
    jobs = [(name, Path(folder), burst) for name, folder in folders.items()]
    # Side by side: each provider but the last in a child of its own, the last here.
    parts: list[Beside[BuildResult]] = []
    try:
        for job in jobs[:-1]:  # each child kept as it starts: stopped below on any error
            parts.append(beside(_provider_part, *job))
        parts.append(here(_provider_part, *jobs[-1]))
        for part in map(Beside.result, parts):  # in the folders' order, errors too
            result.rows += part.rows
            result.excluded += part.excluded
            result.egress += part.egress
    finally:
        for p in parts:
            p.cancel()
    result.rows = _sorted_rows(result.rows)
    # One line per excluded type (AWS repeats per region).
    result.excluded = sorted(set(result.excluded))
    return result


def _provider_part(name: str, folder: Path, burst_table: Path | None) -> BuildResult:
    """One provider's rows, exclusions and egress prices from its folder."""
    module = providers.get(name)
    part = module.build(folder, burst_table)
    if not part.egress_read:  # a build may price egress from the files it read; else asked
        part.egress = module.egress_rows(folder)
    return part


def _sorted_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows by provider, region, family, vCPUs, memory and type (a stable sort)."""
    column = {name: [r[name] for r in rows] for name in ("vcpus", "memory_gib")}
    vcpus = {text: int(text) for text in dict.fromkeys(column["vcpus"])}
    memory = {text: float(text) for text in dict.fromkeys(column["memory_gib"])}
    keys = list(
        zip(
            map(itemgetter("provider"), rows),
            map(itemgetter("region"), rows),
            map(itemgetter("family"), rows),
            map(vcpus.__getitem__, column["vcpus"]),
            map(memory.__getitem__, column["memory_gib"]),
            map(itemgetter("instance_type"), rows),
            strict=True,
        )
    )
    return list(map(rows.__getitem__, sorted(range(len(rows)), key=keys.__getitem__)))


def catalog_csv(rows: Iterable[dict[str, str]]) -> str:
    """The rows as catalog CSV text (header first, Unix line ends)."""
    rows = list(rows)
    table = _table(rows)
    if table is None:  # rows of other keys or values: the general writer
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(BUILD_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
        return buf.getvalue()
    return _csv_text(table)


class _Table(NamedTuple):
    """Catalog rows a column at a time, in `BUILD_COLUMNS` order."""

    columns: list[tuple[str, ...]]  # each cell `csv_cell`-safe, as the CSV holds it
    distinct: list[set[str]]  # each column's distinct cells


def _table(rows: list[dict[str, str]], names: tuple[str, ...] = BUILD_COLUMNS) -> _Table | None:
    """The rows' columns ``names`` (two or more; default all) as a `_Table`.

    None unless every row has exactly the keys `BUILD_COLUMNS` and every cell is text.
    """
    if not rows:
        return _Table([() for _ in names], [set() for _ in names])
    if set(map(len, rows)) != {len(BUILD_COLUMNS)}:
        return None
    try:  # every column there, and (as many keys as columns) no other
        cells_by_row = list(map(itemgetter(*names), rows))
    except KeyError:
        return None
    table = _Table([], [])
    for col in zip(*cells_by_row, strict=True):
        try:
            cells = set(col)
        except TypeError:  # an unhashable value
            return None
        if set(map(type, cells)) != {str}:
            return None
        if any(map(str.startswith, cells, itertools.repeat(FORMULA_PREFIXES))):
            safe = {v: csv_cell(v) for v in cells}
            col = tuple(map(safe.__getitem__, col))
            cells = set(safe.values())
        table.columns.append(col)
        table.distinct.append(cells)
    return table


def _csv_text(table: _Table, header: bool = True) -> str:
    """The catalog CSV of a `_Table` (Unix line ends), as `csv.writer` writes it.

    The header first, unless ``header`` is False (the table's lines alone). A column whose
    cells hold no comma, quote, line break or NUL is joined as it is; the distinct cells of
    any other column are written by `csv.writer` one at a time.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(BUILD_COLUMNS)
    head = buf.getvalue() if header else ""
    columns = []
    for col, cells in zip(table.columns, table.distinct, strict=True):
        if any(c in "".join(cells) for c in ',"\r\n\0'):
            written = {}
            for cell in cells:
                buf.seek(0)
                buf.truncate()
                writer.writerow((cell, ""))  # the cell, a comma, an empty cell, a newline
                written[cell] = buf.getvalue()[:-2]
            col = tuple(map(written.__getitem__, col))
        columns.append(col)
    if not table.columns[0]:
        return head
    return head + "\n".join(map(",".join, zip(*columns, strict=True))) + "\n"


def excluded_csv(excluded: Iterable[tuple[str, str, str]]) -> str:
    """What the build left out and why, as CSV."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["provider", "instance_type", "reason"])
    writer.writerows(csv_row(map(printable, e)) for e in excluded)  # names from a price file
    return buf.getvalue()


def iter_summary(result: BuildResult) -> Iterator[str]:
    """Lines that say what was built and what was left out."""
    names = list(map(itemgetter("provider"), result.rows))
    by = Counter(zip(names, map(itemgetter("region"), result.rows), strict=True))
    providers = Counter(names)
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
    data, compact_text = _csv_and_compact(result.rows, path.name)
    excluded_text = excluded_csv(result.excluded)
    egress_text = egress_csv(result.egress) if result.egress else None
    items = None
    try:
        if compact_text is None:  # checked by reading it back, privately
            with tempfile.TemporaryDirectory() as tmp:
                checked = read_catalog(write_atomic(Path(tmp) / path.name, data))
            items = [replace(i, catalog_file=str(path)) for i in checked]
        if egress_text is not None:  # the egress prices too, by the reader that uses them
            _check_egress(egress_text, egress)
        write_atomic(path, data, inputs=inputs)
        if compact_text is None:
            compact = write_compact(path, items)
        else:
            compact = write_atomic(compact_path(path), compact_text, inputs=[path])
        write_atomic(excluded, excluded_text, inputs=inputs)
        if egress_text is not None:
            write_atomic(egress, egress_text, inputs=inputs)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    if not result.egress:
        return path, compact, excluded
    return path, compact, excluded, egress


def _csv_and_compact(rows: list[dict[str, str]], csv_name: str) -> tuple[bytes, str | None]:
    """The catalog CSV's bytes and its compact form's text (None: to be read back first).

    The rows are made in two halves, the first in a child beside this process (`beside`):
    each half's CSV lines and compact-form rows (`_half`); the compact form's header, groups
    and sources come from the whole table's key columns first (`_compact_plan`).
    """
    n = len(rows)
    keys = _table(rows, _KEY_COLUMNS)
    plan = None if keys is None else _compact_plan(keys, csv_name)
    sources = None if plan is None else plan.sources
    cut = int(n * _CHILD_SHARE)
    head = beside(_half, rows, 0, cut, sources, True)
    try:
        tail = _half(rows, cut, n, sources, False)
        first = head.result()
    finally:
        head.cancel()
    if first is None or tail is None:  # rows of other keys or values: the general writer
        return catalog_csv(rows).encode("utf-8"), None
    data = (first[0] + tail[0]).encode("utf-8")
    if plan is None or first[1] is None or tail[1] is None or len(data) > CATALOG_MAX_BYTES:
        return data, None  # refused or read otherwise; over the reader's limit: it says why
    return data, _compact_text(plan, first[1] + tail[1], data)


def _half(
    rows: list[dict[str, str]], lo: int, hi: int, sources: dict[str, int] | None, first: bool
) -> tuple[str, list[str] | None] | None:
    """Rows ``lo`` to ``hi`` as CSV lines and compact-form rows; None if not plain rows.

    The CSV lines have the header first if ``first``; the compact-form rows are None without
    ``sources`` or where one might be read otherwise; None in all when the rows are not plain
    catalog rows (`_table`).
    """
    table = _table(rows[lo:hi])
    if table is None:
        return None
    compact = None if sources is None else _compact_rows(table, sources)
    return _csv_text(table, header=first), compact


def _check_egress(text: str, path: Path) -> None:
    """Read the egress prices ``text`` as `read_egress` reads the file ``path`` (InputError)."""
    if len(text.encode("utf-8")) <= EGRESS_MAX_BYTES:
        parse_egress(text, path)
        return
    with tempfile.TemporaryDirectory() as tmp:  # refused by the reader's bound, in its words
        read_egress(write_atomic(Path(tmp) / path.name, text))


#: The share of the rows whose CSV lines and compact-form rows a child makes beside this
#: process, which makes the rest meanwhile.
_CHILD_SHARE = 0.5


class _Compact(NamedTuple):
    """What the compact form's rows need from the whole table, and its header but the hash."""

    header: dict[str, Any]
    groups: dict[str, range | list[int]]
    sources: dict[str, int]


#: The columns the compact form's header, groups and sources are made from.
_KEY_COLUMNS = ("provider", "region", "instance_type", "source")


def _compact_plan(keys: _Table, csv_name: str) -> _Compact | None:
    """The compact form's header but its hash, its groups and sources; None to go the long way.

    ``keys`` holds the rows' `_KEY_COLUMNS`. What `sizing.catalog.load.write_compact` writes
    for the instances `read_catalog` reads from the catalog CSV: one JSON line of header
    (schema, the CSV's SHA-256, fields, sources, the line of each provider/region group,
    regions, rows), then one line per group, in first-seen order, each row made by
    `_compact_rows`. None when the rows are past the reader's limit or hold a duplicate
    instance (the reader says why, on the long way: the CSV written to a private folder and
    read back by `read_catalog`).
    """
    n = len(keys.columns[0])
    if not 0 < n <= MAX_ROWS:
        return None
    values = {}
    for name, col, cells in zip(_KEY_COLUMNS, keys.columns, keys.distinct, strict=True):
        read = _read_cells(CATALOG[name], cells)
        if read is None:
            return None
        values[name] = list(map(read.__getitem__, col))
    providers = [p.lower() for p in values["provider"]]
    regions = values["region"]
    if len(set(zip(providers, regions, values["instance_type"], strict=True))) != n:
        return None  # a duplicate instance
    sources = {s: i for i, s in enumerate(dict.fromkeys(values["source"]))}
    groups = _groups(list(map("/".join, zip(providers, regions, strict=True))))
    header = {
        "schema": COMPACT_SCHEMA,
        "csv": csv_name,
        "csv_sha256": None,  # filled in by `_compact_text`
        "fields": list(FIELD_NAMES),
        "sources": list(sources),
        "groups": {g: i + 2 for i, g in enumerate(groups)},
        "regions": sorted(set(regions)),
        "rows": n,
    }
    return _Compact(header, groups, sources)


def _compact_rows(table: _Table, sources: dict[str, int]) -> list[str] | None:
    """The compact form's rows of ``table``, each a JSON array's inside; or None.

    Each distinct cell of a column is read (`_read_cells`) and written as JSON once. None when
    any value might be refused or read otherwise than plainly.
    """
    columns, distinct = table.columns, table.distinct
    for cells in distinct:
        joined = "".join(cells)
        if "\0" in joined or "\r" in joined or "\n" in joined:
            return None  # a NUL (the CSV reader refuses it) or a line break inside a cell
    reads: dict[str, dict[str, Any]] = {}
    for name, cells in zip(BUILD_COLUMNS, distinct, strict=True):
        read = _read_cells(CATALOG[name], cells)
        if read is None:
            return None
        reads[name] = read
    reads["provider"] = {cell: value.lower() for cell, value in reads["provider"].items()}
    for name in ("cpu", "source_date"):  # read as "" when empty
        reads[name] = {cell: value or "" for cell, value in reads[name].items()}
    column = dict(zip(BUILD_COLUMNS, columns, strict=True))

    def values(name: str) -> list[Any]:
        return list(map(reads[name].__getitem__, column[name]))

    if _any_greater(values("network_gbps"), values("network_burst_gbps")):
        return None  # a burst peak below the baseline
    if _any_greater(values("cpu_baseline"), values("vcpus")):
        return None  # more sustained vCPUs than vCPUs
    reads["source"] = {cell: sources[value] for cell, value in reads["source"].items()}
    json_columns = [
        ['""'] * len(columns[0])  # the catalog file: not kept in the compact form
        if name == "catalog_file"
        else _json_column(reads[name], column[name], CATALOG[name].kind)
        for name in FIELD_NAMES
    ]
    return list(map(",".join, zip(*json_columns, strict=True)))


def _compact_text(plan: _Compact, rows: list[str], csv_data: bytes) -> str:
    """The compact form's text: the plan's header with the hash of the CSV's bytes, the groups."""
    header = {**plan.header, "csv_sha256": hashlib.sha256(csv_data).hexdigest()}
    lines = [json.dumps(header, separators=(",", ":"))]
    for found in plan.groups.values():
        lines.append("[[" + "],[".join(map(rows.__getitem__, found)) + "]]")
    return "\n".join(lines) + "\n"


def _any_greater(a: list[Any], b: list[Any]) -> bool:
    """Whether ``a[i] > b[i]`` for any ``i`` where neither is None."""
    none = itertools.repeat(None)
    known = list(map(operator.and_, map(operator.is_not, a, none), map(operator.is_not, b, none)))
    return any(map(operator.gt, itertools.compress(a, known), itertools.compress(b, known)))


def _groups(keys: list[str]) -> dict[str, range | list[int]]:
    """The indices of each key, the keys in first-seen order (a range for a run of one key)."""
    order = dict.fromkeys(keys)
    if sum(map(operator.ne, keys, keys[1:])) == len(order) - 1:  # each key in one run
        starts = [keys.index(key) for key in order] + [len(keys)]
        return {key: range(a, b) for key, a, b in zip(order, starts, starts[1:], strict=False)}
    out: dict[str, range | list[int]] = {}
    for i, key in enumerate(keys):
        out.setdefault(key, []).append(i)  # type: ignore[union-attr]
    return out


#: The JSON text of each kind of value, as `json.dumps` writes it.
_JSON_OF: dict[type, Callable[[Any], str]] = {
    float: float.__repr__,
    int: int.__repr__,
    str: encode_basestring_ascii,
}


#: A number cell whose text is the JSON (``repr``) of the float it reads as: plain digits, a
#: point, no zero at either end, 15 digits at most, and at least 0.0001 (a shorter text,
#: or another of as many digits, would read as another float; so the shortest is this one).
_CANONICAL = re.compile(
    r"^(?=[0-9.]{3,16}$)(?:[1-9][0-9]*\.[0-9]*[1-9]|0\.0{0,3}[1-9](?:[0-9]*[1-9])?)$", re.M
)


def _json_column(read: dict[str, FieldValue], col: Sequence[str], kind: str) -> Sequence[str]:
    """The JSON text of the value each cell of ``col`` reads as (``read``), in order."""
    if kind == "float":
        same = set(_CANONICAL.findall("\n".join(read)))
        if len(same) == len(read):
            return col  # every cell is its number's JSON already
        texts = dict(zip(same, same, strict=True))
        for cell in read.keys() - same:
            texts[cell] = _json(read[cell])
    else:
        texts = _json_texts(read)
    return list(map(texts.__getitem__, col))


def _json_texts(read: dict[str, FieldValue]) -> dict[str, str]:
    """The JSON text of the value read from each cell."""
    values = list(read.values())
    kinds = set(map(type, values))
    if len(kinds) == 1 and (kind := kinds.pop()) in _JSON_OF:
        return dict(zip(read, map(_JSON_OF[kind], values), strict=True))
    if "" in read and kinds == {type(None), float}:  # an optional number: empty is null
        texts = dict(zip(read, map(_JSON_OF[float], [v or 0.0 for v in values]), strict=True))
        texts[""] = "null"
        return texts
    return {cell: _json(value) for cell, value in read.items()}


def _json(value: object) -> str:
    """``json.dumps(value)`` for None, a flag, a number or a text."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is float:
        return float.__repr__(value)  # what the JSON encoder writes for a finite float
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value)


def _read_cells(field: Field, distinct: set[str]) -> dict[str, Any] | None:
    """What `Field.parse` reads from each of a column's distinct cells, or None.

    None when `Field.parse` might refuse any cell, or read it by a rule this does not
    repeat (a number in an integer column written as ``2.0``, a flag as ``yes``).
    """
    blank = "" in distinct
    if blank and field.required:
        return None
    cells = list(distinct - {""}) if blank else list(distinct)
    text = list(map(str.strip, cells))
    if "" in text:
        return None  # a cell of spaces alone
    values: list[Any] | None
    if field.kind == "bool":
        if not set(text) <= {"true", "false"}:
            return None
        values = [v == "true" for v in text]
    elif field.kind == "str":
        if text and max(map(len, text)) > field.max_len:
            return None
        if field.choices and not set(text) <= set(field.choices):
            return None
        values = text
    else:
        values = _plain_numbers(field, text) if text else []
        if values is None:
            return None
    read = dict(zip(cells, values, strict=True))
    if blank:
        read[""] = False if field.kind == "bool" else None
    return read


def _plain_numbers(field: Field, texts: list[str]) -> list[float] | None:
    """The numbers `Field.parse` reads from ``texts``, or None if it may read any otherwise.

    Integers are plain ASCII digits only; no text is longer than `MAX_NUMBER_TEXT`; every
    number lies in the field's range.
    """
    if max(map(len, texts)) > MAX_NUMBER_TEXT:
        return None
    numbers: list[float]
    if field.kind == "int":
        digits = "".join(texts)
        if not (digits.isascii() and digits.isdigit()):
            return None
        numbers = list(map(int, texts))
    else:
        try:
            numbers = list(map(float, texts))
        except ValueError:
            return None
        if not all(map(math.isfinite, numbers)):
            return None
    if not (field.low <= min(numbers) and max(numbers) <= field.high):
        return None
    return numbers
