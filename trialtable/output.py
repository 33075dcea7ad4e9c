"""What the tool prints or writes for people and spreadsheets, made safe in one place.

- `terminal`: text for a terminal; every control character (escape sequences that change a
  title, clear the screen or make a hyperlink) is shown escaped, newlines kept between lines.
- `csv_cell`: one CSV cell; a text starting with a formula prefix (``=``, ``+``, ``-``,
  ``@``, tab, carriage return) gets a leading single quote, so that a spreadsheet shows it
  as text instead of running it. Numbers stay numbers.
- `json_text`: JSON that is always valid: NaN and infinities become ``null``
  (``allow_nan=False`` guards the rest).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

_T = TypeVar("_T")

#: First characters a spreadsheet reads as the start of a formula.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _printable(line: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)


def terminal(text: str) -> str:
    """``text`` with every control character escaped except the newlines between lines."""
    return "\n".join(_printable(line) for line in str(text).split("\n"))


def csv_cell(value: _T) -> _T | str:
    """``value`` for a CSV cell: a text with a formula prefix gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_row(values: Iterable[_T]) -> list[_T | str]:
    """`csv_cell` of each value."""
    return [csv_cell(v) for v in values]


def table_csv(rows: Iterable[Mapping[str, object]], columns: Sequence[str]) -> str:
    """Rows as CSV text under ``columns``, made for the measured tables.

    Floats to 4 decimals, a missing value empty, whitespace folded to single spaces and
    formula-like text made inert (`csv_cell`).
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_table_cell(r.get(k)) for k in columns])
    return buf.getvalue()


def _table_cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4f}"
    return csv_cell(" ".join(str(v).split()))


def finite(obj: object) -> object:
    """``obj`` with every non-finite float (in dicts, lists and tuples) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def json_text(obj: object, *, indent: int | None = None) -> str:
    """``json.dumps`` of `finite` ``obj``, never ``NaN`` or ``Infinity``."""
    return json.dumps(finite(obj), allow_nan=False, indent=indent)
