"""Published per-instance NGINX (and comparable static web server) measurements on cloud VMs.

The file ``data/cloud/measurements.csv`` holds one row per published value (see
``data/cloud/README.md`` for the sources, their harnesses and how the rows were extracted).
`load_cloud_measurements` reads it bounded, validates every row and returns a table; a bad row
is refused with one line naming the file, line and field.

``data/cloud/sources.csv`` (next to the measurements) describes each source and says whether
the fit uses it (``fit``: ``yes`` or ``no``), and, in an optional ``features`` column, the
configuration features its NGINX ran with (names of `trialtable.features`, space-separated, each
once per request), which the fit charges as `sizing` charges a user's. Rows of a source marked
``no`` are held out: by
default `load_cloud_measurements` leaves them out, so they stay unseen by the fit and can
check it out of sample (``include_held_out=True`` returns them too, with ``fit`` saying which).

Every row must name its source: ``source_id``, a repository (``repo`` with ``commit`` and
``path``) or a ``url``, and a ``quote`` (the verbatim text, or the key path of
machine-readable data, that the value was read from). Text fields are kept as data: a value
such as ``=HYPERLINK(...)`` is neither evaluated nor refused.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sizing.catalog import providers
from sizing.errors import InputError, printable
from sizing.paths import DATA_DIR
from trialtable.features import FEATURE_NAMES
from trialtable.fields import Field, FieldError, Fields, csv_rows
from trialtable.files import MB
from trialtable.schema import PROTOCOLS

DEFAULT_PATH = DATA_DIR / "cloud" / "measurements.csv"
#: The sources file read next to a measurements file (``<dir>/sources.csv``).
SOURCES_NAME = "sources.csv"
SOURCE_COLUMNS = ("source_id", "title", "publisher", "year", "url", "repo_commit", "kind", "fit")
SOURCE_KINDS = ("absolute", "ratio")
#: The two answers of a yes/no column.
YES_NO = ("yes", "no")
#: Whether the fit uses a source's rows (``no``: held out, an out-of-sample check only).
FIT = YES_NO
#: Largest sources file read [B].
MAX_SOURCES_BYTES = 1 * MB
#: Largest measurements file read [B]; the shipped file is about 4 MB.
MAX_BYTES = 64 * MB
MAX_ROWS = 200_000
MAX_TEXT = 500
#: Longest text of a sources file's field [characters] (a harness description is long).
MAX_SOURCE_TEXT = 2000
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
#: The providers a row may name: every provider module of the catalog
#: (`sizing.catalog.providers`), so a new provider's published measurements need no edit here.
PROVIDERS = providers.names()
WORKLOAD_CLASSES = ("small_static", "large_static", "tls_handshake", "proxy", "api_gateway")
CLIENT_PLACEMENTS = ("same_vm", "separate_vm", "separate_host")
CONTAINER = YES_NO
#: Servers measured: NGINX itself, or a labelled comparable event-driven server (binserve, a
#: Rust static server; APISIX and Kong Gateway, API gateways built on OpenResty, i.e. NGINX
#: with LuaJIT).
SERVERS = ("nginx", "nginx_plus", "binserve", "apisix", "kong")
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
        # Empty where the source does not state it (Kong's published runs).
        Field("connections", "int", "connections", 1, 1e7, required=False),
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


def _text(
    path: Path,
    line: int,
    field: str,
    raw: str | None,
    required: bool = True,
    limit: int = MAX_TEXT,
) -> str:
    value = (raw or "").strip()
    if required and not value:
        raise InputError(f"{_where(path, line, field)}: must not be empty")
    if len(value) > limit:
        raise InputError(
            f"{_where(path, line, field)}: longer than {limit} characters ({len(value)})"
        )
    return value


def _choice(path: Path, line: int, field: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InputError(
            f"{_where(path, line, field)}: expected one of {', '.join(allowed)}, "
            f"got {printable(value)!r}"
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
        out[field] = _choice(path, line, field, _text(path, line, field, row[field]), choices)
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


def load_sources(path: str | Path) -> dict[str, dict[str, str]]:
    """Read and validate a sources file (``sources.csv``).

    Parameters
    ----------
    path : str or Path
        The CSV file.

    Returns
    -------
    dict of str to dict
        Each source's row (text, stripped) by its ``source_id``.

    Raises
    ------
    InputError
        Naming the file, line and field of the first problem: a missing file or column, a
        duplicate or empty ``source_id``, a source with neither ``url`` nor ``repo_commit``, an
        unknown ``kind`` or ``fit``, an empty ``harness``, an over-long text, or malformed CSV.
    """
    p = Path(path)
    out: dict[str, dict[str, str]] = {}
    columns = (*SOURCE_COLUMNS, "harness")
    try:
        for line, row in csv_rows(p, MAX_SOURCES_BYTES, what="sources", columns=columns):
            if None in row or any(v is None for v in row.values()):
                raise InputError(f"{p}:{line}: wrong number of fields")
            sid = _text(p, line, "source_id", row["source_id"])
            if sid in out:
                raise InputError(f"{_where(p, line, 'source_id')}: {printable(sid)!r} twice")
            rec = {
                k: _text(p, line, k, row[k], required=False, limit=MAX_SOURCE_TEXT)
                for k in row
                if k
            }
            rec["harness"] = _text(p, line, "harness", row["harness"], limit=MAX_SOURCE_TEXT)
            if not rec["url"] and not rec["repo_commit"]:
                raise InputError(f"{_where(p, line, 'url')}: a source needs a url or a repo_commit")
            _choice(p, line, "kind", rec["kind"], SOURCE_KINDS)
            _choice(p, line, "fit", rec["fit"], FIT)
            rec["features"] = _features(p, line, rec.get("features", ""))
            out[sid] = rec
    except FieldError as exc:
        raise InputError(str(exc)) from None
    return out


def _features(path: Path, line: int, text: str) -> str:
    """A source's ``features`` cell, checked: known feature names, each once."""
    names = text.split()
    for name in names:
        if name not in FEATURE_NAMES or names.count(name) > 1:
            raise InputError(
                f"{_where(path, line, 'features')}: {printable(name)[:60]!r} is not a feature "
                f"named once; expected names of: {', '.join(FEATURE_NAMES)}"
            )
    return " ".join(names)


def load_cloud_measurements(
    path: str | Path | None = None, *, include_held_out: bool = False
) -> pd.DataFrame:
    """Read and validate the published cloud measurements.

    Parameters
    ----------
    path : str or Path, optional
        The CSV file; default ``data/cloud/measurements.csv`` of the shipped data
        (`sizing.paths.DATA_DIR`). A ``sources.csv`` next to it (`SOURCES_NAME`) is read too:
        every row's ``source_id`` must be one of its sources, and the sources it marks
        ``fit=no`` are held out. Without that file every row counts as fitted.
    include_held_out : bool, optional
        Also return the rows of held-out sources (default: only the rows the fit uses).

    Returns
    -------
    pandas.DataFrame
        One row per published value, with the columns of `COLUMNS` (and ``threads``, None
        where not given, ``fit``, ``yes`` or ``no``, and its source's ``features``, empty
        where none are named); ``value`` is a float, the counts are
        ints (``connections`` None where the source does not state it).

    Raises
    ------
    InputError
        Naming the file, line and field of the first problem: a missing file or column, a row
        without a source (repo, commit and path, or url, and a quote), a source not in the
        sources file, a value outside its metric's sane range (`METRIC_RANGES`), an unknown
        provider, workload class, protocol, client placement, server or metric, an over-long
        text, or malformed CSV (in either file).
    """
    p = Path(path) if path is not None else DEFAULT_PATH
    src_path = p.with_name(SOURCES_NAME)
    sources = load_sources(src_path) if src_path.is_file() else None
    rows: list[dict[str, object]] = []
    try:
        lines = csv_rows(p, MAX_BYTES, what="measurements", columns=COLUMNS, max_rows=MAX_ROWS)
        for line, row in lines:
            rec = parse_row(p, line, row)
            sid = str(rec["source_id"])
            if sources is None:
                rec["fit"], rec["features"] = "yes", ""
            elif sid not in sources:
                raise InputError(
                    f"{_where(p, line, 'source_id')}: {printable(sid)!r} is not a source "
                    f"of {src_path}"
                )
            else:
                rec["fit"], rec["features"] = sources[sid]["fit"], sources[sid]["features"]
            if include_held_out or rec["fit"] == "yes":
                rows.append(rec)
    except FieldError as exc:
        raise InputError(str(exc)) from None
    return pd.DataFrame(rows, columns=[*COLUMNS, *OPTIONAL_COLUMNS, "fit", "features"])
