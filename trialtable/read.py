"""The typed reader of a run folder's ``trials.csv``, used by ``sizing`` and ``runners``.

Every problem is one `trialtable.folder.RunFolderError` naming the folder, the file, and
what is wrong (with the line and column when there is one): a missing or empty file, binary
or non-UTF-8 bytes, a renamed or missing column, a line cut short, a value of the wrong type.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trialtable.errors import RunFolderError
from trialtable.fields import Field, FieldError, Fields, FieldValue
from trialtable.files import MB, read_bounded
from trialtable.schema import ADDED_DEFAULTS, BY_NAME, COLUMNS, FALSE, TRIAL_COLUMNS, TRUE

if TYPE_CHECKING:
    import pandas as pd


#: Largest ``trials.csv`` read [B]: 256 MB, some hundreds of thousands of trials (a sweep
#: writes a few hundred); a larger file, or a device, pipe or folder in its place, is
#: refused unread.
TRIALS_MAX_BYTES = 256 * MB


def _error(folder: Path, file: str, problem: str) -> RunFolderError:
    return RunFolderError(f"run folder {folder}: {file} {problem}")


def _writer_alive(folder: Path) -> bool:
    """Whether the pid in the run's lock file is a live process (the run is being written)."""
    try:
        lock = read_bounded(folder / "run.lock", 64, regular_only=True, follow=False)
        pid = int(lock.decode().strip())
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False
    return True


def check_text(folder: Path, file: str, data: bytes) -> None:
    """Raise unless ``data`` is UTF-8 text with no NUL bytes."""
    if b"\0" in data:
        line = data[: data.index(b"\0")].count(b"\n") + 1
        raise _error(folder, file, f"holds binary data (a NUL byte on line {line})")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _error(folder, file, f"is not UTF-8 text (byte {exc.start} on line {line})") from None


_COLUMN_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _shown(name: str) -> str:
    """A header cell as a refusal shows it: a column-like name, never other content.

    A file that is not a trial table (another file linked or copied in its place) would
    otherwise have its first line echoed in the message.
    """
    return repr(name) if _COLUMN_NAME.fullmatch(name) else "that is not a column name"


def check_header(
    folder: Path, header: Sequence[str], expected: Sequence[str], *, older: bool = False
) -> list[str]:
    """Check a ``trials.csv`` header; return the columns an older version did not write.

    Parameters
    ----------
    header : sequence of str
        The file's first line, split.
    expected : sequence of str
        This version's columns.
    older : bool
        Accept a header that lacks only columns added since (`schema.ADDED_DEFAULTS`).
    """
    header = [h.strip() for h in header]
    if list(header) == list(expected):
        return []
    unknown = [h for h in header if h not in expected]
    missing = [c for c in expected if c not in header]
    if unknown:
        where = header.index(unknown[0]) + 1
        instead = f" (expected {missing[0]!r}?)" if missing else ""
        raise _error(
            folder,
            "trials.csv",
            f"has an unknown column {_shown(unknown[0])} in column {where}{instead}",
        )
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise _error(folder, "trials.csv", f"names column {_shown(dup)} twice")
    if older and set(missing) <= set(ADDED_DEFAULTS):
        return missing
    if missing:
        raise _error(folder, "trials.csv", f"lacks the columns {', '.join(missing)}")
    if older:
        return []
    raise _error(folder, "trials.csv", "has this version's columns in another order")


def read_rows(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The trials of one run folder as typed dicts (None where a value is empty).

    Raises
    ------
    RunFolderError
        For a missing folder or file, an empty, binary or non-UTF-8 file, an unknown or
        missing column, a torn last line, a line with the wrong number of fields, a value
        of the wrong type or out of its column's range (`RANGES`), or a row of another run.
        A bad value is named ``trials.csv:LINE: column NAME``.
    """
    folder = Path(run_dir)
    path = folder / "trials.csv"
    if not folder.is_dir():
        raise RunFolderError(f"{folder} is not a run folder (no such folder)")
    if not path.is_file():
        raise RunFolderError(f"{folder} is not a run folder (no trials.csv)")
    try:
        data = read_bounded(path, TRIALS_MAX_BYTES, regular_only=True, follow=False)
    except OSError as exc:
        raise _error(folder, "trials.csv", f"cannot be read ({exc.strerror})") from None
    if not data.strip():
        raise _error(folder, "trials.csv", "is empty (0 bytes): not even a header")
    check_text(folder, "trials.csv", data)
    if not data.endswith(b"\n") and b"\n" in data and _writer_alive(folder):
        # A row being written right now: read the rows before it.
        data = data[: data.rfind(b"\n") + 1]
    elif not data.endswith(b"\n"):
        n = data.count(b"\n") + 1
        raise _error(
            folder,
            f"trials.csv:{n}",
            f"ends in a cut-short line {n} (the run stopped mid-write); resuming the run "
            "removes it",
        )
    text = data.decode("utf-8")
    # A field may be as long as the file is allowed to be (a run on 100,000 vCPUs lists them
    # all in server_cpus): csv's default limit of 128 kB would refuse a row runners wrote. The
    # limit is the csv module's, for every reader in the process: it is put back after.
    limit = csv.field_size_limit(max(csv.field_size_limit(), TRIALS_MAX_BYTES))
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
        added = check_header(folder, header, TRIAL_COLUMNS, older=True)
        records = list(reader)
    except csv.Error as exc:
        raise _error(folder, f"trials.csv:{reader.line_num}", f"is not CSV ({exc})") from None
    finally:
        csv.field_size_limit(limit)
    run_id = folder.resolve().name
    rows = []
    for n, fields in enumerate(records, start=2):
        if not fields:
            continue
        if len(fields) != len(header):
            raise _error(
                folder,
                f"trials.csv:{n}",
                f"has {len(fields)} fields, the header {len(header)}",
            )
        row: dict[str, Any] = {}
        for name, value in zip(header, fields, strict=True):
            row[name] = _value(folder, n, name, value)
        for name in added:
            row[name] = _value(folder, n, name, ADDED_DEFAULTS[name])
        if row["run_id"] != run_id:
            raise _bad_field(folder, n, "run_id", row["run_id"], f"the folder's {run_id!r}")
        rows.append({c: row[c] for c in TRIAL_COLUMNS})
    return rows


#: The range a number in each numeric column may take, (low, high), both included. A value
#: outside it cannot come from a trial (a negative count, a latency of 1e300 ms) and would
#: only turn into nonsense or an overflow further on.
_BIG = 1e15
RANGES: dict[str, tuple[float, float]] = {
    "clients": (0, 10_000),
    "vcpus": (1, 100_000),
    "file_bytes": (0, 2**53),
    "upstreams": (0, 100_000),
    "threads": (0, 1_000_000),
    "connections": (0, 100_000_000),
    "streams": (0, 1_000_000),
    "rate_rps": (0, _BIG),
    "warmup_s": (0, 1e9),
    "duration_s": (0, 1e9),
    "requests": (0, 2**63 - 1),
    "rps": (0, _BIG),
    "bytes_per_s": (0, _BIG * 1e3),
    "throughput_gbps": (0, _BIG),
    "bytes_per_response": (0, 2**53),
    "errors_connect": (0, 2**63 - 1),
    "errors_read": (0, 2**63 - 1),
    "errors_write": (0, 2**63 - 1),
    "errors_status": (0, 2**63 - 1),
    "errors_timeout": (0, 2**63 - 1),
    "error_rate": (0, _BIG),
    "latency_p50_ms": (0, 1e12),
    "latency_p90_ms": (0, 1e12),
    "latency_p99_ms": (0, 1e12),
    "latency_p999_ms": (0, 1e12),
    "latency_max_ms": (0, 1e12),
    "latency_mean_ms": (0, 1e12),
    "client_cpu_pct": (0, 1e9),
    "server_cpu_pct": (0, 1e9),
    "sla_p99_ms": (0, 1e12),
}


#: The trial table's numbers as a declared table (`trialtable.fields`): each column's type and
#: unit from `trialtable.schema.COLUMNS`, its range from `RANGES`.
TRIALS = Fields(
    "trial table",
    (
        Field(c.name, c.kind, c.unit, *RANGES.get(c.name, (-math.inf, math.inf)), required=False)
        for c in COLUMNS
        if c.kind in ("int", "float")
    ),
)


def _bad_field(folder: Path, line: int, name: str, text: str, expected: str) -> RunFolderError:
    """The error for one bad value: ``trials.csv:LINE: column NAME: 'text' is not ...``."""
    return _error(folder, f"trials.csv:{line}:", f"column {name}: {text[:40]!r} is not {expected}")


def _value(folder: Path, line: int, name: str, text: str) -> FieldValue:
    kind = BY_NAME[name].kind
    if kind == "str":
        return text
    if text == "":
        return None
    value: float
    try:
        if kind == "bool":
            if text not in (TRUE, FALSE):
                raise ValueError
            return text == TRUE
        value = int(text) if kind == "int" else float(text)
        if math.isnan(value):
            raise ValueError
    except ValueError:
        expected = {"bool": "true or false", "int": "an integer", "float": "a number"}[kind]
        raise _bad_field(folder, line, name, text, expected) from None
    field = TRIALS[name]
    try:
        return field.check(value, "")
    except FieldError:
        raise _bad_field(
            folder, line, name, text, f"within [{field.low:g}, {field.high:g}]"
        ) from None


def read_trials(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """One run folder's ``trials.csv`` as a DataFrame with this version's columns, typed.

    Text columns hold text ("" when empty); integer columns are ``int64`` (``float64`` with
    NaN when some are empty); numbers are ``float64``; flags are ``bool`` (``object`` with
    None when some are empty).
    """
    import pandas as pd  # here: `recommend` reads trials as rows and never loads pandas

    rows = read_rows(run_dir)
    columns: dict[str, Any] = {}
    for col in TRIAL_COLUMNS:
        values = [r[col] for r in rows]
        kind = BY_NAME[col].kind
        if kind == "str":
            columns[col] = pd.Series(values, dtype=object)
        elif kind == "bool":
            has_none = any(v is None for v in values)
            columns[col] = pd.Series(values, dtype=object if has_none else bool)
        elif kind == "int" and not any(v is None for v in values):
            columns[col] = pd.Series(values, dtype="int64")
        else:
            columns[col] = pd.Series(
                [math.nan if v is None else float(v) for v in values], dtype="float64"
            )
    return pd.DataFrame(columns)
