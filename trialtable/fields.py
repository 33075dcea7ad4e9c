"""One declared table of fields per file kind: type, unit and sane range of each field.

Every reader of a file kind (a CSV parser, a compact JSON form, a TOML inventory) takes its
fields from one `Fields` table, so that every path refuses the same values: a number outside
its range, NaN, infinity, a 100k-digit integer, a negative price, zero vCPUs. A refusal is a
`FieldError` whose message names the place (file and line) and the field; each package turns it
into its own error (``InputError``, ``RunFolderError``, ``RunnerError``), one line, exit 2.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from trialtable.files import read_bounded

#: Longest text a number is parsed from [characters]: a float needs 24 at most; longer
#: (a 100k-digit integer) is refused before any conversion.
MAX_NUMBER_TEXT = 64

_INTEGER = re.compile(r"[-+]?[0-9]+")

#: The value of one field once checked: text, a number, a flag, or None (empty).
FieldValue: TypeAlias = str | int | float | bool | None

TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")


def printable(text: str) -> str:
    """``text`` as one printable line: newlines, terminal escapes and other controls escaped.

    Messages quote values from the user and from data files; shown this way, a newline or an
    escape sequence in them is seen, never acted on by the terminal.
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def cut(text: str, limit: int = 40) -> str:
    """``text`` cut after ``limit`` characters, ``...`` marking the cut (a refusal's echo)."""
    return text if len(text) <= limit else text[:limit] + "..."


class FieldError(ValueError):
    """A value a file kind's table refuses; the message names place and field."""


@dataclass(frozen=True)
class Field:
    """One field of a file kind.

    Attributes
    ----------
    name : str
        The field's name (a CSV column, a JSON or TOML key).
    kind : str
        ``int``, ``float``, ``str`` or ``bool``.
    unit : str
        The unit of a number (``""`` for none).
    low, high : float
        The sane range of a number, both included.
    required : bool
        Whether an empty value is refused (else it reads as None, or False for a flag).
    choices : tuple of str
        The values a text may take (empty: any text up to ``max_len``).
    max_len : int
        Longest text [characters].
    """

    name: str
    kind: str
    unit: str = ""
    low: float = -math.inf
    high: float = math.inf
    required: bool = True
    choices: tuple[str, ...] = ()
    max_len: int = 200

    def expected(self) -> str:
        """What the field takes, in words (for messages)."""
        if self.kind in ("int", "float"):
            what = "an integer" if self.kind == "int" else "a number"
            unit = f" {self.unit}" if self.unit else ""
            return f"{what} in [{self.low:g}, {self.high:g}]{unit}"
        if self.kind == "bool":
            return "true or false"
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return f"text of at most {self.max_len} characters"

    def _refuse(self, where: str, raw: object) -> FieldError:
        shown = cut(printable(str(raw)))
        return FieldError(
            f"{where}: field {self.name!r}: expected {self.expected()}, got {shown!r}"
        )

    def parse(self, raw: str | None, where: str) -> FieldValue:
        """The value of one text (a CSV cell), checked; None for an empty optional field.

        Raises
        ------
        FieldError
            For an empty required field, a malformed or over-long value, a number that is not
            finite or lies outside [low, high], a fraction where an integer is due, or a text
            outside ``choices``.
        """
        text = (raw or "").strip()
        if not text:
            if self.required:
                raise FieldError(f"{where}: field {self.name!r}: must not be empty")
            return False if self.kind == "bool" else None
        if self.kind == "str":
            return self.check(text, where)
        if self.kind == "bool":
            low = text.lower()
            if low in TRUE_WORDS or low in FALSE_WORDS:
                return low in TRUE_WORDS
            raise self._refuse(where, raw)
        if len(text) > MAX_NUMBER_TEXT:
            raise self._refuse(where, raw)
        try:
            value: float = int(text) if _INTEGER.fullmatch(text) else float(text)
        except ValueError:
            raise self._refuse(where, raw) from None
        return self.check(value, where)

    def check(self, value: object, where: str) -> FieldValue:
        """A value already typed (read from JSON or TOML), checked as `parse` checks text."""
        if self.kind == "str":
            if not isinstance(value, str):
                raise self._refuse(where, value)
            if self.required and not value.strip():
                raise FieldError(f"{where}: field {self.name!r}: must not be empty")
            if len(value) > self.max_len:
                raise FieldError(
                    f"{where}: field {self.name!r}: longer than {self.max_len} characters "
                    f"({len(value)})"
                )
            if self.choices and value not in self.choices:
                raise self._refuse(where, value)
            return value
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise self._refuse(where, value)
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._refuse(where, value)
        if isinstance(value, int):  # compared exactly: a 19-digit count keeps every digit
            if not (-(2**63) <= value < 2**63 and self.low <= value <= self.high):
                raise self._refuse(where, value if abs(value) < 10**40 else "a huge integer")
            return float(value) if self.kind == "float" else value
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise self._refuse(where, value)
        if self.kind == "int":
            if not value.is_integer():
                raise self._refuse(where, value)
            return int(value)
        return float(value)

    def check_number(self, value: object, where: str) -> float:
        """`check` of a number field's value (int or float), as a float."""
        checked = self.check(value, where)
        if isinstance(checked, bool) or not isinstance(checked, int | float):
            raise self._refuse(where, value)  # a text or flag field's value
        return float(checked)


class Fields:
    """The declared table of one file kind: its fields by name, in order.

    Parameters
    ----------
    kind : str
        The file kind in words (``catalog``, ``inventory``...), for documentation.
    fields : iterable of Field
        Its fields.
    """

    def __init__(self, kind: str, fields: Iterable[Field]) -> None:
        self.kind = kind
        self.fields: dict[str, Field] = {f.name: f for f in fields}

    def __getitem__(self, name: str) -> Field:
        return self.fields[name]

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields.values())

    def numbers(self) -> list[Field]:
        """The numeric fields."""
        return [f for f in self.fields.values() if f.kind in ("int", "float")]

    def parse_row(
        self, row: Mapping[str, str | None], where: str, names: Iterable[str] | None = None
    ) -> dict[str, Any]:
        """Parse the cells ``names`` (default: every field) of one text row."""
        wanted = self.fields if names is None else names
        return {n: self.fields[n].parse(row.get(n), where) for n in wanted}

    def check_row(
        self, row: Mapping[str, object], where: str, names: Iterable[str] | None = None
    ) -> dict[str, FieldValue]:
        """Check the typed values ``names`` (default: every field present) of one row.

        A missing or None value passes only for a field that is not required.
        """
        out: dict[str, FieldValue] = {}
        for n in self.fields if names is None else names:
            f = self.fields[n]
            value = row.get(n)
            if value is None:
                if f.required:
                    raise FieldError(f"{where}: field {n!r}: must not be empty")
                out[n] = None
                continue
            out[n] = f.check(value, where)
        return out

    def check_rows(
        self, rows: list[list[Any]], names: Sequence[str], where: str
    ) -> list[list[Any]]:
        """Check a block of typed rows (lists in ``names`` order) as `check_row` checks each.

        The checks run a column at a time (the fast path for a large compact file); any
        column that is not plainly valid sends the block through `check_row` row by row, so
        a refusal names the same row and field, with the same message, as `check_row` would.

        Returns
        -------
        list of list
            The rows with their values converted as `Field.check` converts them (an integer
            in a float field becomes a float).

        Raises
        ------
        FieldError
            For the first value `check_row` refuses.
        """
        columns = [list(c) for c in zip(*rows, strict=True)] if rows else []
        if len(columns) == len(names):
            ok = True
            for i, n in enumerate(names):
                checked = _checked_column(self.fields[n], columns[i])
                if checked is None:
                    ok = False
                    break
                columns[i] = checked
            if ok:
                return [list(r) for r in zip(*columns, strict=True)]
        out = []
        for row in rows:
            values = self.check_row(dict(zip(names, row, strict=True)), where, names)
            out.append([values[n] for n in names])
        return out


def csv_rows(
    path: str | os.PathLike[str],
    limit: int,
    *,
    what: str,
    columns: Iterable[str],
    max_rows: int | None = None,
) -> Iterator[tuple[int, dict[str, str]]]:
    """Each data row of the UTF-8 CSV file at ``path``, with its line number, read bounded.

    Parameters
    ----------
    path : str or PathLike
        The file (a pipe too; see `trialtable.files.read_bounded`).
    limit : int
        Largest file read [B].
    what : str
        The file kind in words, for messages (``catalog``, ``measurements``...).
    columns : iterable of str
        The columns the header must hold (others are read too).
    max_rows : int, optional
        Most data rows read (default: no limit but ``limit``).

    Yields
    ------
    tuple of (int, dict of str to str)
        The line number and the row as `csv.DictReader` reads it (a row with too many or
        too few fields holds a None key or value: the caller checks that where it matters).

    Raises
    ------
    FieldError
        Naming the file (and line): missing, unreadable or too large; a missing column; more
        than ``max_rows`` rows; malformed CSV or non-UTF-8 bytes.
    """
    try:
        data = read_bounded(path, limit)
    except FileNotFoundError:
        raise FieldError(f"{what} file {path} does not exist") from None
    except OSError as exc:
        raise FieldError(f"{what} file {path} cannot be read: {exc.strerror}") from None
    with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        try:
            header = reader.fieldnames or []
            missing = [c for c in columns if c not in header]
            if missing:
                raise FieldError(f"{path}:1: missing column(s) {', '.join(missing)}")
            for i, row in enumerate(reader, start=2):
                if max_rows is not None and i > max_rows + 1:
                    raise FieldError(f"{path}: more than {max_rows:,} rows")
                yield reader.line_num or i, row
        except (csv.Error, UnicodeDecodeError) as exc:
            raise FieldError(f"{path}:{reader.line_num}: malformed CSV: {exc}") from None


_NONE = type(None)


def _checked_column(f: Field, col: list[Any]) -> list[Any] | None:
    """``col`` converted as `Field.check` converts each value, or None if any may be refused."""
    types = set(map(type, col))
    present = col
    if _NONE in types:
        if f.required:
            return None
        types.discard(_NONE)
        present = [v for v in col if v is not None]
    if not present:
        return col
    if f.kind == "str":
        if types != {str} or max(map(len, present)) > f.max_len:
            return None
        if f.required and not all(map(str.strip, present)):
            return None
        if f.choices and not set(present) <= set(f.choices):
            return None
        return col
    if f.kind == "bool":
        return col if types == {bool} else None
    if not types <= {int, float}:
        return None
    if float in types and not all(map(math.isfinite, present)):
        return None
    low, high = min(present), max(present)
    if not (f.low <= low and high <= f.high and -(2**63) <= low and high < 2**63):
        return None
    if f.kind == "float":
        if int in types:
            return [None if v is None else float(v) for v in col]
        return col
    if float in types:
        if not all(v.is_integer() for v in present if type(v) is float):
            return None
        return [None if v is None else int(v) for v in col]
    return col
