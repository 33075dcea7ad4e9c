"""Published per-instance NGINX (and comparable static web server) measurements on cloud VMs.

The file ``data/cloud/measurements.csv`` holds one row per published value (see
``data/cloud/README.md`` for the sources, their harnesses and how the rows were extracted).
`load_cloud_measurements` reads it bounded, validates every row and returns a table; a bad row
is refused with one line naming the file, line and field.

Every row must name its source: ``source_id``, a repository (``repo`` with ``commit`` and
``path``) or a ``url``, and a ``quote`` (the verbatim text, or the key path of
machine-readable data, that the value was read from). Text fields are kept as data: a value
such as ``=HYPERLINK(...)`` is neither evaluated nor refused.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from sizing.errors import InputError, printable
from sizing.paths import DATA_DIR
from trialtable.fields import Field, FieldError, Fields
from trialtable.files import MB, read_bounded

DEFAULT_PATH = DATA_DIR / "cloud" / "measurements.csv"
#: Largest measurements file read [B]; the shipped file is about 4 MB.
MAX_BYTES = 64 * MB
MAX_ROWS = 200_000
MAX_TEXT = 500
COLUMNS = (
    "source_id",
    "provider",
    "instance_type",
    "vcpus",
    "cpu_platform",
    "server",
    "workload_class",
    "protocol",
    "body_bytes",
    "connections",
    "client_placement",
    "container",
    "metric",
    "value",
    "repo",
    "commit",
    "path",
    "url",
    "quote",
)
#: Optional columns: read when present.
OPTIONAL_COLUMNS = ("threads",)
PROVIDERS = ("aws", "gcp")
WORKLOAD_CLASSES = ("small_static", "large_static", "tls_handshake", "proxy", "api_gateway")
PROTOCOLS = ("http", "https")
CLIENT_PLACEMENTS = ("same_vm", "separate_vm", "separate_host")
CONTAINER = ("yes", "no")
#: Servers measured: NGINX itself, or a labelled comparable event-driven server (binserve, a
#: Rust static server; APISIX, an API gateway built on OpenResty, i.e. NGINX with LuaJIT).
SERVERS = ("nginx", "nginx_plus", "binserve", "apisix")
#: Sane range of each metric's value: (low, high, unit); checked at load.
METRIC_RANGES: dict[str, tuple[float, float, str]] = {
    "rps": (1.0, 1e8, "requests/s"),
    "cpu_us_per_request": (0.1, 1e5, "CPU microseconds per request"),
}
#: The numbers of a measurements row: type, unit and sane range (``value``'s range is its
#: metric's, `METRIC_RANGES`).
MEASUREMENTS = Fields(
    "cloud measurements",
    (
        Field("vcpus", "int", "vCPUs", 1, 4096),
        Field("body_bytes", "int", "bytes", 0, 1e9),
        Field("connections", "int", "connections", 1, 1e7),
        Field("threads", "int", "threads", 1, 1e5, required=False),
    ),
)
VALUE_FIELDS = {m: Field("value", "float", u, lo, hi) for m, (lo, hi, u) in METRIC_RANGES.items()}
#: Sane range of the other numbers of a row: (low, high, unit) (from `MEASUREMENTS`).
RANGES: dict[str, tuple[float, float, str]] = {
    f.name: (f.low, f.high, f.unit) for f in MEASUREMENTS.numbers()
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "provider": PROVIDERS,
    "workload_class": WORKLOAD_CLASSES,
    "protocol": PROTOCOLS,
    "client_placement": CLIENT_PLACEMENTS,
    "container": CONTAINER,
    "server": SERVERS,
    "metric": tuple(METRIC_RANGES),
}


def _where(path: Path, line: int, field: str) -> str:
    return f"{path}:{line}: field {field!r}"


def _text(path: Path, line: int, field: str, raw: str | None, required: bool = True) -> str:
    value = (raw or "").strip()
    if required and not value:
        raise InputError(f"{_where(path, line, field)}: must not be empty")
    if len(value) > MAX_TEXT:
        raise InputError(
            f"{_where(path, line, field)}: longer than {MAX_TEXT} characters ({len(value)})"
        )
    return value


def parse_row(path: Path, line: int, row: dict[str, str]) -> dict[str, object]:
    """One validated measurement row.

    Parameters
    ----------
    path : Path
        The file, for messages.
    line : int
        The row's line number, for messages.
    row : dict of str to str
        The row as read by `csv.DictReader`.

    Returns
    -------
    dict
        The row with numbers as floats or ints and text stripped.

    Raises
    ------
    InputError
        Naming the file, line and field of the row's first problem.
    """
    if None in row or any(v is None for v in row.values()):
        raise InputError(f"{path}:{line}: wrong number of fields")
    out: dict[str, object] = {}
    for field in ("source_id", "instance_type", "cpu_platform", "quote"):
        out[field] = _text(path, line, field, row[field])
    for field, choices in _CHOICES.items():
        value = _text(path, line, field, row[field])
        if value not in choices:
            raise InputError(
                f"{_where(path, line, field)}: expected one of {', '.join(choices)}, "
                f"got {printable(value)!r}"
            )
        out[field] = value
    for field in ("repo", "commit", "path", "url"):
        out[field] = _text(path, line, field, row[field], required=False)
    if not (out["repo"] and out["commit"] and out["path"]) and not out["url"]:
        raise InputError(
            f"{_where(path, line, 'repo')}: a row needs its source: repo, commit and path, or url"
        )
    metric = str(out["metric"])
    try:
        out.update(MEASUREMENTS.parse_row(row, f"{path}:{line}"))
        out["value"] = VALUE_FIELDS[metric].parse(row["value"], f"{path}:{line}")
    except FieldError as exc:
        raise InputError(str(exc)) from None
    return out


def load_cloud_measurements(path: str | Path | None = None) -> pd.DataFrame:
    """Read and validate the published cloud measurements.

    Parameters
    ----------
    path : str or Path, optional
        The CSV file; default ``data/cloud/measurements.csv`` of the shipped data
        (`sizing.paths.DATA_DIR`).

    Returns
    -------
    pandas.DataFrame
        One row per published value, with the columns of `COLUMNS` (and ``threads``, None
        where not given); ``value`` is a float, the counts are ints.

    Raises
    ------
    InputError
        Naming the file, line and field of the first problem: a missing file or column, a row
        without a source (repo, commit and path, or url, and a quote), a value outside its
        metric's sane range (`METRIC_RANGES`), an unknown provider, workload class, protocol,
        client placement, server or metric, an over-long text, or malformed CSV.
    """
    p = Path(path) if path is not None else DEFAULT_PATH
    try:
        data = read_bounded(p, MAX_BYTES)
    except FileNotFoundError:
        raise InputError(f"measurements file {p} does not exist") from None
    except OSError as exc:
        raise InputError(f"measurements file {p} cannot be read: {exc.strerror}") from None
    rows: list[dict[str, object]] = []
    with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        try:
            header = reader.fieldnames or []
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise InputError(f"{p}:1: missing column(s) {', '.join(missing)}")
            for i, row in enumerate(reader, start=2):
                if i > MAX_ROWS + 1:
                    raise InputError(f"{p}: more than {MAX_ROWS:,} rows")
                rows.append(parse_row(p, reader.line_num or i, row))
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(f"{p}:{reader.line_num}: malformed CSV: {exc}") from None
    return pd.DataFrame(rows, columns=[*COLUMNS, *OPTIONAL_COLUMNS])
