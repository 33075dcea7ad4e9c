"""The workload file's document as types: what `sizing.workload.accesslog` writes and reads.

The schema (keys, units, meaning) is described in `sizing.workload.accesslog`; these types
say the same for the type checker. The writer writes every key; a file read back is checked
by `sizing.workload.accesslog.validate_workload`, which requires the keys not marked
``NotRequired`` here (and checks every number sizing reads) and leaves the others as written.
"""

from __future__ import annotations

from typing import NotRequired, Required, TypedDict

__all__ = [
    "BusiestMinute",
    "FileRecord",
    "MalformedExample",
    "PerConnection",
    "Provenance",
    "RequestArgs",
    "Rps",
    "SizeBucket",
    "SizeMix",
    "Status",
    "Tls",
    "WorkloadDocument",
]


class Rps(TypedDict):
    """The request rate [requests/s]: the peak at a percentile of per-second rates."""

    percentile: float
    peak: float
    max_second: float
    mean: float


class BusiestMinute(TypedDict):
    """One of the busiest minutes: its start (ISO 8601), requests and rates [requests/s]."""

    start: str
    requests: int
    mean_rps: float
    max_second_rps: int


class SizeBucket(TypedDict):
    """Requests whose response size [B] falls in ``[from_bytes, to_bytes)``."""

    from_bytes: int
    to_bytes: int | None
    requests: int
    share: float
    mean_bytes: float


class SizeMix(TypedDict):
    """The response size mix: ``spec`` as ``--file-size`` reads it, mean size [B]."""

    spec: str
    mean_bytes: float
    source: NotRequired[str]
    buckets: NotRequired[list[SizeBucket]]


class PerConnection(TypedDict):
    """Requests per connection, measured or estimated, and how."""

    value: float
    connections: NotRequired[int]
    estimate: bool
    source: NotRequired[str]


class Tls(TypedDict):
    """The share of requests over TLS and of new TLS connections resumed [1]."""

    share: NotRequired[float | None]
    resumption: NotRequired[float | None]
    resumption_source: NotRequired[str | None]
    protocols: NotRequired[dict[str, float]]


class Status(TypedDict):
    """Shares of status classes (``2xx``) and of the ten most frequent codes [1]."""

    classes: dict[str, float]
    codes: dict[str, float]


class FileRecord(TypedDict):
    """What was read from one log file."""

    path: str
    bytes: int
    sha256_first_mb: str
    gzip: bool
    lines_read: int
    lines_parsed: int
    malformed: int
    notes: list[str]


class MalformedExample(TypedDict):
    """A malformed line shown: file, line number (None if unknown), why, its text (cut)."""

    file: str
    line: int | None
    reason: str
    text: str


class Provenance(TypedDict):
    """The files read, line counts, malformed lines and when the document was made."""

    files: list[FileRecord]
    lines_read: int
    lines_parsed: int
    malformed: int
    malformed_reasons: dict[str, int]
    malformed_examples: list[MalformedExample]
    created: str


class WorkloadDocument(TypedDict):
    """A workload file's document (format `sizing.workload.accesslog.FORMAT`)."""

    format: int
    kind: NotRequired[str]
    log_format: NotRequired[str]
    requests: float
    first_second: NotRequired[str]
    last_second: NotRequired[str]
    span_s: float
    rps: Rps
    busiest_minutes: NotRequired[list[BusiestMinute]]
    size_mix: NotRequired[SizeMix | None]
    requests_per_connection: NotRequired[PerConnection | None]
    tls: NotRequired[Tls | None]
    http_versions: NotRequired[dict[str, float]]
    status: NotRequired[Status | None]
    upstream_share: NotRequired[float | None]
    provenance: NotRequired[Provenance]


class RequestArgs(TypedDict, total=False):
    """The ``recommend`` arguments a workload document implies (only what the logs tell).

    ``rps`` [1/s] and ``growth`` [1] are always there; ``file_size`` is (mean bytes, mix)
    as ``--file-size`` parses it and ``file_size_text`` its spec.
    """

    rps: Required[float]
    growth: Required[float]
    file_size: tuple[int, tuple[tuple[int, float], ...]]
    file_size_text: str
    requests_per_connection: float
    requests_per_connection_estimate: bool
    tls_resumption: float
    protocol: str
    http2_share: float
    http_version: str
