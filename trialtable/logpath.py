"""The container log path's table (``data/reference/container-log-path.csv``), named once.

``runners`` writes it (`runners.calibrate.logpath`: ``python -m runners features --only
access_log_container``), ``sizing`` reads it (`sizing.model.logpath`); this module holds its
vocabulary, its fields and its checked reader, and imports neither package.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from trialtable.fields import Field, FieldError, Fields, FieldValue
from trialtable.files import MB, read_bounded

#: The configuration feature whose log path this table measures (`trialtable.features`).
CONTAINER_LOG = "access_log_container"
#: nginx's trials, the floods of one line a write() and of many (`FLOOD_BATCHED`).
MEASUREMENTS = ("nginx", "flood", "flood_batched")
#: The log path's processes, in the order the table lists them.
PROCESSES = ("shim", "reader", "containerd")
#: The nginx worker's own extra per line (log on - log off, per pair), listed before them.
NGINX_EXTRA = "nginx_extra"
#: Each path in words (the table's ``path`` column), by `features.Settings.container_path`.
PATHS = {
    "cri": (
        "CRI (the kubelet's path, pods made over containerd's CRI API): nginx write() to a "
        "pipe; containerd-shim-runc-v2 copies it to a FIFO; the containerd daemon's CRI "
        "logger reads it line by line and writes each line with a timestamp to the log file"
    ),
    "ctr": (
        "ctr run: nginx write() to a pipe; containerd-shim-runc-v2 copies it to a FIFO; ctr "
        "copies the FIFO to a file in blocks (no CRI logger: no per-line timestamped writes)"
    ),
}

#: The fields of the table, one row per run, measurement and process.
LOG_PATH = Fields(
    "container log path",
    (
        Field("measured_at", "str", max_len=40),
        Field("container_path", "str", choices=tuple(PATHS)),
        Field("measurement", "str", choices=MEASUREMENTS),
        Field("process", "str", choices=(NGINX_EXTRA, *PROCESSES)),
        Field("trials", "int", "trials", 1, 10_000),
        Field("lines_per_s", "float", "lines/s", 0.0, 1e9),
        Field("line_bytes", "float", "B", 0.0, 1e6, required=False),
        Field("lines_per_write", "int", "lines", 1, 1_000_000),
        Field("user_us", "float", "us/line", -1e4, 1e5),
        Field("kernel_us", "float", "us/line", -1e4, 1e5),
        Field("total_min_us", "float", "us/line", -1e4, 1e5),
        Field("total_max_us", "float", "us/line", -1e4, 1e5),
        Field("cpu_share", "float", "CPUs", -1e4, 1e4),
        Field("path", "str", max_len=300),
        Field("cpu_model", "str", required=False, max_len=200),
        Field("cpus", "int", "CPUs", 1, 1 << 16),
        Field("containerd_version", "str", required=False, max_len=200),
        Field("nginx_version", "str", required=False, max_len=200),
        Field("loadavg", "str", required=False, max_len=100),
    ),
)
LOG_PATH_COLUMNS = tuple(f.name for f in LOG_PATH)
#: The largest table read [B] (a run adds about 20 rows of 600 B).
MAX_BYTES = 4 * MB


def read_table(path: Path) -> list[dict[str, FieldValue]]:
    """The rows in ``path`` (none when it is missing), checked.

    Raises `FieldError` (one line naming the file and line) for a table of other columns or
    a bad value, `OSError` or `UnicodeDecodeError` for a file that cannot be read.
    """
    if not path.exists():
        return []
    text = read_bounded(path, MAX_BYTES).decode("utf-8")
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != LOG_PATH_COLUMNS:
        raise FieldError(f"{path}:1: not a container log-path table (other columns)")
    return [LOG_PATH.parse_row(r, f"{path}:{i}") for i, r in enumerate(reader, start=2)]
