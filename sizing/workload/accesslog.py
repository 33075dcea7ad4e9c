r"""The workload a fleet serves, read from NGINX access logs.

``python -m sizing workload --from-log FILE... [--log-format FORMAT] [--peak-percentile 99]
[--out FILE]`` reads access logs (plain or gzip, told apart by their first bytes) in the
default ``combined`` format or in a ``log_format`` string the user gives, and writes a
workload file: the peak request rate at a percentile of the per-second rates, the response
size mix, requests per connection, TLS resumption, HTTP versions, status classes and the
share of requests passed upstream.

Reading
-------
A log format is compiled into one regular expression whose field patterns cannot run past
the character that follows the field (possessive ``[^c\n]*+``), so a line of any length is
matched in linear time. Files are read in blocks of `CHUNK_BYTES` of whole lines; each block
is matched at once (``findall``) and its columns are counted with ``collections.Counter``,
so the work per line stays in C. Memory is bounded: one block, a line of at most
`MAX_LINE_BYTES` carried between blocks, 14.4 KB per hour of log spanned (per-second
counts, at most `MAX_HOURS` hours) and a few counters. A line that does not match the format
is malformed: counted, a few shown (escaped), never fatal.

The workload file (``format`` 1)
--------------------------------
A JSON object:

``format`` : int
    1.
``kind`` : str
    ``"nginx-sizing workload"``.
``log_format`` : str
    The nginx ``log_format`` the lines were read with.
``requests`` : int
    Lines parsed (requests).
``first_second``, ``last_second`` : str
    The first and last logged second, ISO 8601 in UTC (nginx logs a request when it ends).
``span_s`` : int
    Seconds from the first to the last logged second, both included [s].
``rps`` : object
    ``percentile`` [%], ``peak`` (the smallest per-second rate that ``percentile`` % of the
    seconds of the span do not exceed, seconds without a request counting as 0) [1/s],
    ``max_second`` [1/s], ``mean`` (requests / ``span_s``) [1/s].
``busiest_minutes`` : list of object
    Up to five minutes with the most requests: ``start`` (ISO 8601, UTC), ``requests``,
    ``mean_rps`` (over the minute's seconds within the span) [1/s], ``max_second_rps`` [1/s].
``size_mix`` : object or null
    ``spec`` (the mix in the ``--file-size`` syntax of ``recommend``, e.g.
    ``1KB:0.7,50KB:0.3``: each bucket's mean size [B] with its share of requests),
    ``mean_bytes`` [B], ``source`` (the variable read), ``buckets`` (``from_bytes``,
    ``to_bytes`` (null: no upper bound), ``requests``, ``share``, ``mean_bytes``). Null when
    the format logs no size.
``requests_per_connection`` : object or null
    ``value`` [1], ``connections`` (connections counted or estimated), ``estimate`` (bool)
    and ``source``: ``$connection_requests`` (requests / connections whose first request is
    logged), else an estimate from distinct client addresses per minute.
``tls`` : object
    ``share`` (requests over TLS, or null when unknown), ``resumption`` (share of new TLS
    connections that resumed a session, or null), ``resumption_source``, ``protocols``
    (share of requests per TLS protocol).
``http_versions`` : object
    Share of requests per HTTP version (``1.0``, ``1.1``, ``2``, ``3``, ``other``).
``status`` : object or null
    ``classes`` (share per ``1xx`` .. ``5xx``) and ``codes`` (share of the ten most frequent
    codes).
``upstream_share`` : float or null
    Share of requests with an ``$upstream_addr`` (passed to a backend); null when not logged.
``provenance`` : object
    ``files`` (``path``, ``bytes``, ``sha256_first_mb`` (of the file's first MiB as stored),
    ``gzip``, ``lines_read``, ``lines_parsed``, ``malformed``, ``notes``), ``lines_read``,
    ``lines_parsed``, ``malformed``, ``malformed_reasons`` (count per reason),
    ``malformed_examples`` (``file``, ``line``, ``reason``, ``text`` escaped and cut to 200
    characters) and ``created`` (ISO 8601, UTC).

`load_workload_file` validates such a file; `workload_to_request_args` turns it into the
arguments of ``recommend`` (with a growth factor), and `request_argv` into its command line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import stat
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from heapq import nlargest
from pathlib import Path
from typing import Any

from sizing.errors import InputError, printable
from sizing.workload.distinct import EXACT_CAP, Distinct, K
from sizing.workload.document import (
    BusiestMinute,
    FileRecord,
    MalformedExample,
    PerConnection,
    RequestArgs,
    SizeBucket,
    SizeMix,
    Status,
    Tls,
    WorkloadDocument,
)
from trialtable.fields import Field, FieldError, Fields, cut
from trialtable.files import FileRefused, read_bounded, write_atomic
from trialtable.pathargs import INPUT_FILE, OUTPUT_FILE, path_arg
from trialtable.values import MAX_SIZE_BYTES, Subcommands, float_between, parse_size

#: Version of the workload file's schema.
FORMAT = 1
KIND = "nginx-sizing workload"

#: nginx's predefined ``combined`` format.
COMBINED = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent"'
)
#: The ``main`` format of nginx's packaged nginx.conf: combined and the forwarded-for header.
MAIN = COMBINED + ' "$http_x_forwarded_for"'
PRESETS = {"combined": COMBINED, "main": MAIN}

MiB = 1024 * 1024
#: Bytes of log matched at once [B].
CHUNK_BYTES = 4 * MiB
#: Longest line carried from one block to the next [B]; a longer one is malformed.
MAX_LINE_BYTES = MiB
#: Most hours a set of logs may span (a leap year): per-second counts take 14.4 KB an hour.
MAX_HOURS = 24 * 366
#: Upper edges of the response size buckets [B]: 1 KiB, 10 KiB, 100 KiB, 1 MiB, 10 MiB.
SIZE_EDGES = (1024, 10 * 1024, 100 * 1024, MiB, 10 * MiB)
#: A bucket with a smaller share of requests joins its neighbour in the mix.
MIN_BUCKET_SHARE = 0.001
#: Malformed lines shown, and the characters shown of each.
EXAMPLES = 5
EXAMPLE_CHARS = 200
#: Largest workload file `load_workload_file` reads [B].
MAX_WORKLOAD_BYTES = MiB
#: Largest request rate a workload file may hold [1/s].
MAX_RPS = 1e12
#: Longest log format string [characters].
MAX_FORMAT_CHARS = 10_000

# --- log formats ------------------------------------------------------------------------

# Variables with a fixed shape: (captured pattern, pattern after the capture).
_FIXED: dict[str, tuple[bytes, bytes]] = {
    "time_local": (rb"[0-9]{2}/[A-Za-z]{3}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{4}", b""),
    "time_iso8601": (
        rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:Z|[+-][0-9]{2}:[0-9]{2})",
        b"",
    ),
    "msec": (rb"[0-9]{1,12}", rb"\.[0-9]{1,6}"),
    "status": (rb"[0-9]{3}", b""),
    "body_bytes_sent": (rb"[0-9]{1,19}|-", b""),
    "bytes_sent": (rb"[0-9]{1,19}|-", b""),
    "connection_requests": (rb"[0-9]{1,19}|-", b""),
    "connection": (rb"[0-9]{1,19}|-", b""),
    "request_time": (rb"[0-9]{1,12}(?:\.[0-9]{1,6})?|-", b""),
    "ssl_session_reused": (rb"r|\.|-|", b""),
}
# Variables whose value the tally reads.
_READ = (
    "time_local",
    "time_iso8601",
    "msec",
    "request",
    "server_protocol",
    "status",
    "body_bytes_sent",
    "bytes_sent",
    "connection_requests",
    "ssl_session_reused",
    "ssl_protocol",
    "scheme",
    "upstream_addr",
    "remote_addr",
)
# Variables nginx writes as lists ("a, b : c"): with a space after them, spaces are allowed
# only inside the separators.
_LISTS = {
    "upstream_addr",
    "upstream_status",
    "upstream_response_time",
    "upstream_connect_time",
    "upstream_header_time",
    "upstream_bytes_received",
    "upstream_bytes_sent",
    "upstream_response_length",
    "upstream_cache_status",
}
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))")
_QUOTED_PIECES = re.compile(r"^\s*(?:'[^']*'\s*)+$")


@dataclass(frozen=True)
class LogFormat:
    """An nginx ``log_format`` compiled into one pattern over whole lines (bytes).

    Attributes
    ----------
    text : str
        The format string.
    regex : re.Pattern of bytes
        Matches one whole line (``re.MULTILINE``: ``findall`` over a block of lines).
    fields : tuple of str
        The variable each captured group holds, in group order.
    """

    text: str
    regex: re.Pattern[bytes]
    fields: tuple[str, ...]

    def index(self, name: str) -> int | None:
        """The group index of variable ``name`` (0-based), or None when not captured."""
        return self.fields.index(name) if name in self.fields else None


def _up_to(stop: bytes | None) -> bytes:
    """A value running up to the byte ``stop`` (or to the end of the line)."""
    if stop is None:
        return rb"[^\r\n]*+"
    return rb"[^" + re.escape(stop) + rb"\n]*+"


def compile_format(text: str) -> LogFormat:
    """Compile an nginx ``log_format`` string (or ``combined``, ``main``) into a `LogFormat`.

    The string may be given as nginx writes it, in single-quoted pieces
    (``'$remote_addr - ' '"$request"'``). A variable other than those of fixed shape
    (numbers, times, ``$status``, ``$ssl_session_reused``) runs up to the first character of
    the text after it, which it must therefore not hold; ``$request`` ends with its last
    space-free word, the HTTP version.

    Raises
    ------
    InputError
        For an empty or too long format, one without a time variable (``$time_local``,
        ``$time_iso8601`` or ``$msec``), a line break in it, or two variables with nothing
        between them where the first has no fixed shape.
    """
    name = text.strip()
    preset = PRESETS.get(name)
    fmt = preset or text
    if len(fmt) > MAX_FORMAT_CHARS:
        raise InputError(f"the log format is {len(fmt)} characters; at most {MAX_FORMAT_CHARS}")
    if preset is None and _QUOTED_PIECES.match(fmt):
        fmt = "".join(re.findall(r"'([^']*)'", fmt))
    if not fmt.strip():
        raise InputError("the log format is empty; give an nginx log_format string or combined")
    if "\n" in fmt or "\r" in fmt:
        raise InputError("the log format holds a line break; nginx writes one line per request")
    pieces: list[tuple[str, str]] = []  # ("lit", text) or ("var", name)
    pos = 0
    for m in _VARIABLE.finditer(fmt):
        if m.start() > pos:
            pieces.append(("lit", fmt[pos : m.start()]))
        pieces.append(("var", (m.group(1) or m.group(2)).lower()))
        pos = m.end()
    if pos < len(fmt):
        pieces.append(("lit", fmt[pos:]))
    names = [v for kind, v in pieces if kind == "var"]
    if not {"time_local", "time_iso8601", "msec"} & set(names):
        raise InputError(
            f"the log format {fmt!r} has no time; it needs $time_local, $time_iso8601 or $msec"
        )
    # After the last variable read, the text that follows it is matched as written and the
    # rest of the line loosely: nothing there is read, and a bare [^\n]*+ is the fastest scan.
    read_at = [i for i, (kind, v) in enumerate(pieces) if kind == "var" and v in _READ]
    loose_from = read_at[-1] + 2 if read_at else len(pieces)
    out = [rb"^"]
    fields: list[str] = []
    loose = False
    for i, (kind, value) in enumerate(pieces):
        if i >= loose_from:
            out.append(rb"[^\n]*+")
            loose = True
            break
        if kind == "lit":
            out.append(re.escape(value.encode()))
            continue
        nxt = pieces[i + 1] if i + 1 < len(pieces) else None
        stop = nxt[1].encode()[:1] if nxt and nxt[0] == "lit" else None
        capture = value in _READ and value not in fields
        if value in _FIXED:
            body, tail = _FIXED[value]
            out.append((b"(" if capture else b"(?:") + body + b")" + tail)
            if capture:
                fields.append(value)
            continue
        if nxt is not None and stop is None:
            raise InputError(
                f"${value} is followed by ${nxt[1]} with nothing between them; the log format "
                "cannot tell where one ends"
            )
        if value == "request":
            if stop == b" ":
                raise InputError(
                    "$request holds spaces; put it between quotes in the log format, "
                    'as combined does ("$request")'
                )
            # The request line up to its last space, then the HTTP version.
            avoid = re.escape(stop) if stop else rb"\r"
            last = rb"[^" + avoid + rb"\n]*"
            word = rb"[^ " + avoid + rb"\n]*+"
            out.append(b"(?:" + last + b" )?" + (b"(" if capture else b"(?:") + word + b")")
        elif value in _LISTS and stop == b" ":
            item = rb"[^ ,\n]*+"
            out.append((b"(" if capture else b"(?:") + item + rb"(?:(?:, | : )" + item + rb")*+)")
        else:
            out.append((b"(" if capture else b"(?:") + _up_to(stop) + b")")
        if capture:
            fields.append(value)
    if loose:
        out.append(rb"$")
    else:
        if preset is not None:
            out.append(rb"(?: [^\r\n]*)?")  # fields appended to a predefined format
        out.append(rb"\r?$")
    return LogFormat(fmt, re.compile(b"".join(out), re.MULTILINE), tuple(fields))


# --- reading files ----------------------------------------------------------------------


@dataclass
class FileStats:
    """What was read from one log file (its provenance)."""

    path: str
    bytes: int
    sha256_first_mb: str
    gzip: bool
    lines_read: int = 0
    lines_parsed: int = 0
    malformed: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> FileRecord:
        """JSON-ready fields."""
        return {
            "path": self.path,
            "bytes": self.bytes,
            "sha256_first_mb": self.sha256_first_mb,
            "gzip": self.gzip,
            "lines_read": self.lines_read,
            "lines_parsed": self.lines_parsed,
            "malformed": self.malformed,
            "notes": self.notes,
        }


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_log(path: str) -> tuple[int, os.stat_result]:
    """Open the regular file ``path`` for reading; its descriptor and status.

    A named pipe is refused without waiting for a writer (the file is opened non-blocking).

    Raises
    ------
    InputError
        For a missing or unreadable path, a folder, a device, a socket or a pipe, in one line
        that names it.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            what = kind if kind.startswith("not") else f"{kind}, not a regular file"
            raise FileRefused(0, f"is {what}")
        os.set_blocking(fd, True)
    except OSError as exc:
        os.close(fd)
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return fd, st


def _first_mb_digest(fd: int) -> tuple[str, bytes]:
    import hashlib

    head = os.pread(fd, MiB, 0)
    return hashlib.sha256(head).hexdigest(), head[:2]


def _raw(fd: int) -> Iterator[bytes]:
    while data := os.read(fd, CHUNK_BYTES):
        yield data


def _gunzip(fd: int, stats: FileStats) -> Iterator[bytes]:
    """The decompressed bytes of a gzip file (members one after another), in bounded pieces.

    A truncated or corrupt stream ends the file with a note in ``stats``: the lines read up
    to there count, the cut last line is malformed.
    """
    import zlib

    d = zlib.decompressobj(31)
    started = False
    for data in _raw(fd):
        while data:
            started = True
            try:
                out = d.decompress(data, CHUNK_BYTES)
            except zlib.error as exc:
                stats.notes.append(f"corrupt gzip data ({exc}); the rest of the file is skipped")
                return
            if out:
                yield out
            data = d.unconsumed_tail
            if d.eof:
                rest = d.unused_data
                d = zlib.decompressobj(31)
                started = False
                if rest.strip(b"\0"):
                    if rest[:2] != b"\x1f\x8b":
                        stats.notes.append("bytes after the gzip data are skipped")
                        return
                    data = rest
    if started:
        try:
            tail = d.flush()
        except zlib.error:  # pragma: no cover - flush reports a cut stream by returning
            tail = b""
        if tail:
            yield tail
        stats.notes.append("truncated gzip file: it ends inside compressed data")


_LONG = object()


def _blocks(pieces: Iterator[bytes]) -> Iterator[bytes | tuple[object, bytes]]:
    """Blocks of whole lines, each ending with a line feed.

    A line longer than `MAX_LINE_BYTES` that crosses blocks comes as ``(_LONG, its first
    bytes)`` and is skipped.
    """
    carry = b""
    skipping = False
    for data in pieces:
        if skipping:
            i = data.find(b"\n")
            if i < 0:
                continue
            data = data[i + 1 :]
            skipping = False
        buf = carry + data if carry else data
        j = buf.rfind(b"\n")
        if j < 0:
            carry = buf
        else:
            if j == len(buf) - 1:
                yield buf
                carry = b""
            else:
                yield buf[: j + 1]
                carry = buf[j + 1 :]
        if len(carry) > MAX_LINE_BYTES:
            yield (_LONG, carry[: EXAMPLE_CHARS * 4])
            carry = b""
            skipping = True
    if carry and not skipping:
        yield carry + b"\n"


# --- counting ---------------------------------------------------------------------------

_MONTHS = {
    m.encode(): i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
_VERSIONS = {
    b"HTTP/1.0": "1.0",
    b"HTTP/1.1": "1.1",
    b"HTTP/2.0": "2",
    b"HTTP/2": "2",
    b"HTTP/3.0": "3",
    b"HTTP/3": "3",
}
_TLS_NAMES = (b"SSLv3", b"TLSv1", b"TLSv1.1", b"TLSv1.2", b"TLSv1.3")
#: Latest second a log may name (9999-12-31T23:59:59Z) [s since 1970].
_MAX_SECOND = 253402300799
#: Farthest a time zone lies from UTC [s]: 14 hours (UTC-12:00 to UTC+14:00 are in use).
_MAX_ZONE_S = 14 * 3600


def _second(text: bytes, kind: str) -> int | None:
    """Seconds since 1970 (UTC) of a logged time, or None for an impossible one."""
    try:
        if kind == "msec":
            sec = int(text)
        elif kind == "time_local":
            # 10/Oct/2000:13:55:36 -0700
            month = _MONTHS.get(text[3:6])
            if month is None:
                return None
            t = datetime(
                int(text[7:11]), month, int(text[0:2]),
                int(text[12:14]), int(text[15:17]), int(text[18:20]), tzinfo=UTC,
            )  # fmt: skip
            hours, minutes = int(text[22:24]), int(text[24:26])
            offset = (hours * 60 + minutes) * 60
            if minutes > 59 or offset > _MAX_ZONE_S:
                return None
            sec = int(t.timestamp()) - (offset if text[21:22] == b"+" else -offset)
        else:
            when = datetime.fromisoformat(text.decode("ascii"))
            zone = when.utcoffset()
            if zone is not None and abs(zone.total_seconds()) > _MAX_ZONE_S:
                return None
            sec = int(when.timestamp())
    except (ValueError, OverflowError):
        return None
    return sec if 0 <= sec <= _MAX_SECOND else None


def _iso(sec: int) -> str:
    return datetime.fromtimestamp(sec, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _example_text(line: bytes) -> str:
    text = printable(line[:EXAMPLE_CHARS].decode("utf-8", "backslashreplace"))
    return text + (f"... ({len(line):,} bytes)" if len(line) > EXAMPLE_CHARS else "")


class Tally:
    """Counts over the lines of one or more logs; `result` is the workload document."""

    def __init__(self, fmt: LogFormat) -> None:
        self.fmt = fmt
        self.ngroups = len(fmt.fields)
        self.time_field = next(f for f in fmt.fields if f in ("time_local", "time_iso8601", "msec"))
        self.ti = fmt.fields.index(self.time_field)
        self.si = fmt.index("body_bytes_sent")
        self.size_source = "$body_bytes_sent"
        if self.si is None:
            self.si = fmt.index("bytes_sent")
            self.size_source = "$bytes_sent"
        self.vi = fmt.index("server_protocol")
        if self.vi is None:
            self.vi = fmt.index("request")
        self.sti = fmt.index("status")
        self.cri = fmt.index("connection_requests")
        self.rsi = fmt.index("ssl_session_reused")
        self.spi = fmt.index("ssl_protocol")
        self.sci = fmt.index("scheme")
        self.ui = fmt.index("upstream_addr")
        self.ai = fmt.index("remote_addr") if self.cri is None else None
        self.hours: dict[int, array[int]] = {}
        self.first: int | None = None
        self.last: int | None = None
        self.timed = 0
        self.times: dict[bytes, int | None] = {}
        self.size_count = [0] * (len(SIZE_EDGES) + 1)
        self.size_bytes = [0] * (len(SIZE_EDGES) + 1)
        self.status: Counter[bytes] = Counter()
        self.versions: Counter[str] = Counter()
        self.tls_protocols: Counter[str] = Counter()
        self.tls_yes = 0
        self.tls_known = 0
        self.new_connections = 0
        self.connection_requests = 0
        self.new_tls = 0
        self.new_resumed = 0
        self.reused_requests = 0
        self.tls_by_reuse = 0
        self.upstream = 0
        self.upstream_known = 0
        self.estimated_connections = 0
        self.recent_minute = -1
        self.recent_clients = Distinct()
        self.sketched = False  # a minute's distinct addresses were estimated by a sketch
        self.files: list[FileStats] = []
        self.reasons: Counter[str] = Counter()
        self.examples: list[MalformedExample] = []

    # -- files --

    def read_file(self, path: str) -> FileStats:
        """Count the lines of the log file ``path`` (plain or gzip)."""
        fd, st = open_log(path)
        try:
            digest, magic = _first_mb_digest(fd)
            stats = FileStats(path, st.st_size, digest, magic == b"\x1f\x8b")
            self.files.append(stats)
            pieces = _gunzip(fd, stats) if stats.gzip else _raw(fd)
            for block in _blocks(pieces):
                if isinstance(block, tuple):
                    stats.lines_read += 1
                    self._malformed(stats, stats.lines_read, "longer than 1 MiB", block[1], 1)
                else:
                    self._block(block, stats)
        finally:
            os.close(fd)
        self._flush_minute()
        return stats

    def _malformed(self, stats: FileStats, line: int | None, reason: str, text: bytes, n: int):
        stats.malformed += n
        self.reasons[reason] += n
        if len(self.examples) < EXAMPLES:
            self.examples.append(
                {"file": stats.path, "line": line, "reason": reason, "text": _example_text(text)}
            )

    def _find_examples(
        self, block: bytes, stats: FileStats, base: int, bad: dict[int, tuple[set[bytes], str]]
    ) -> None:
        """Show the malformed lines of ``block`` until `EXAMPLES` are shown.

        ``bad``: per column index, the values that make a line malformed and the reason.
        """
        match = self.fmt.regex.match
        for i, line in enumerate(block.split(b"\n")[:-1], start=base + 1):
            if len(self.examples) >= EXAMPLES:
                return
            m = match(line)
            reason = "does not match the log format" if m is None else ""
            for col, (values, why) in bad.items():
                if m is not None and not reason and m.group(col + 1) in values:
                    reason = why
            if reason:
                self.examples.append(
                    {"file": stats.path, "line": i, "reason": reason, "text": _example_text(line)}
                )

    def _block(self, block: bytes, stats: FileStats) -> None:
        base = stats.lines_read
        lines = block.count(b"\n")
        stats.lines_read += lines
        matches: list[Any] = self.fmt.regex.findall(block)
        unmatched = lines - len(matches)
        cols = self._transpose(matches)
        # Times first: a line with an impossible time is malformed.
        times: Counter[bytes] = Counter(cols[self.ti]) if matches else Counter()
        minutes: dict[bytes, int] = {}
        bad_times = set()
        for t, n in times.items():
            sec = self._time(t)
            if sec is None or not self._add_second(sec, n):
                bad_times.add(t)
            else:
                minutes[t] = sec // 60
        bad = {self.ti: (bad_times, "time out of range")}
        if self.si is not None and matches:
            # A size no response can have (above MAX_SIZE_BYTES) is no size a reader accepts.
            sizes = {v for v in set(cols[self.si]) if v != b"-" and int(v) > MAX_SIZE_BYTES}
            bad[self.si] = (sizes, "size out of range")
        bad = {col: found for col, found in bad.items() if found[0]}
        if unmatched:
            stats.malformed += unmatched
            self.reasons["does not match the log format"] += unmatched
        for col, (values, reason) in bad.items():
            kept = [m for m in matches if (m[col] if self.ngroups > 1 else m) not in values]
            stats.malformed += len(matches) - len(kept)
            self.reasons[reason] += len(matches) - len(kept)
            matches = kept
        if bad:
            cols = self._transpose(matches)
        if (unmatched or bad) and len(self.examples) < EXAMPLES:
            self._find_examples(block, stats, base, bad)
        if not matches:
            return
        stats.lines_parsed += len(matches)
        self.timed += len(matches)
        if self.ngroups > 1:
            self._columns(cols, minutes)

    def _transpose(self, matches: list[Any]) -> list[tuple[bytes, ...]]:
        """The columns of ``findall``'s matches (one group: the matches themselves)."""
        if self.ngroups == 1:
            return [tuple(matches)]
        return list(zip(*matches, strict=True)) if matches else []

    def _time(self, text: bytes) -> int | None:
        try:
            return self.times[text]
        except KeyError:
            if len(self.times) > 100_000:
                self.times.clear()
            sec = self.times[text] = _second(text, self.time_field)
            return sec

    def _add_second(self, sec: int, n: int) -> bool:
        hour, s = divmod(sec, 3600)
        counts = self.hours.get(hour)
        if counts is None:
            if len(self.hours) >= MAX_HOURS:
                return False
            counts = self.hours[hour] = array("I", [0]) * 3600
        counts[s] += n
        if self.first is None or sec < self.first:
            self.first = sec
        if self.last is None or sec > self.last:
            self.last = sec
        return True

    def _columns(self, cols: list[tuple[bytes, ...]], minutes: dict[bytes, int]) -> None:
        if self.si is not None:
            for value, n in Counter(cols[self.si]).items():
                if value == b"-":
                    continue
                size = int(value)
                b = bisect_right(SIZE_EDGES, size)
                self.size_count[b] += n
                self.size_bytes[b] += size * n
        if self.sti is not None:
            self.status.update(cols[self.sti])
        if self.vi is not None:
            for value, n in Counter(cols[self.vi]).items():
                self.versions[_VERSIONS.get(value, "other")] += n
        if self.spi is not None:
            for value, n in Counter(cols[self.spi]).items():
                if value in (b"-", b""):
                    self.tls_known += n
                    continue
                self.tls_protocols[value.decode() if value in _TLS_NAMES else "other"] += n
                self.tls_yes += n
                self.tls_known += n
        elif self.sci is not None:
            c = Counter(cols[self.sci])
            self.tls_yes += c[b"https"]
            self.tls_known += c[b"https"] + c[b"http"]
        reused = cols[self.rsi] if self.rsi is not None else None
        if reused is not None:
            c = Counter(reused)
            self.reused_requests += c[b"r"]
            self.tls_by_reuse += c[b"r"] + c[b"."]
        if self.cri is not None:
            cr = cols[self.cri]
            self.new_connections += cr.count(b"1")
            self.connection_requests += len(cr) - cr.count(b"-")
            if reused is not None:
                firsts = Counter(zip(cr, reused, strict=True))
                self.new_resumed += firsts[(b"1", b"r")]
                self.new_tls += firsts[(b"1", b"r")] + firsts[(b"1", b".")]
        if self.ui is not None:
            up = cols[self.ui]
            self.upstream_known += len(up)
            self.upstream += len(up) - up.count(b"-") - up.count(b"")
        if self.ai is not None:
            self._estimate(list(map(minutes.__getitem__, cols[self.ti])), cols[self.ai])

    def _estimate(self, minute: list[int], addr: tuple[bytes, ...]) -> None:
        """Count distinct (minute, client address) pairs: the connections' estimate.

        Pairs the block before already counted are not counted again. Lines in time order
        (as nginx writes them) are taken a minute at a time, as slices; others as pairs.
        A minute's addresses are counted in bounded memory (`sizing.workload.distinct`).
        """
        if minute == sorted(minute):
            for m in dict.fromkeys(minute):
                lo, hi = bisect_left(minute, m), bisect_right(minute, m)
                if m != self.recent_minute:
                    self._flush_minute()
                    self.recent_minute = m
                self.recent_clients.add(addr[lo:hi])
            return
        pairs = set(zip(minute, addr, strict=True))
        known = self.recent_clients.exact or set()
        pairs -= {(self.recent_minute, a) for a in known}
        self._flush_minute()
        self.estimated_connections += len(pairs)

    def _flush_minute(self) -> None:
        """Add the current minute's distinct addresses to the estimate; start afresh."""
        self.estimated_connections += self.recent_clients.count()
        self.sketched = self.sketched or self.recent_clients.estimated
        self.recent_minute, self.recent_clients = -1, Distinct()

    # -- the document --

    def result(self, peak_percentile: float) -> WorkloadDocument:
        """The workload document (see the module's description of the schema).

        Raises
        ------
        InputError
            When no line was parsed.
        """
        lines = sum(f.lines_read for f in self.files)
        malformed = sum(f.malformed for f in self.files)
        names = ", ".join(f.path for f in self.files)
        if not self.timed or self.first is None or self.last is None:
            hint, why = "", "does not match the log format"
            if self.examples:
                ex = self.examples[0]
                hint = f"; line {ex['line']}: {ex['text'][:80]}"
                why = ex["reason"]
            if why != "does not match the log format":  # the format matched; a value did not
                raise InputError(
                    f"no line of {names} is usable ({lines:,} lines read{hint}: {why})"
                )
            raise InputError(
                f"no line of {names} matches the log format ({lines:,} lines read{hint}); give "
                "the server's log_format with --log-format"
            )
        first, last = self.first, self.last
        span = last - first + 1
        rates: Counter[int] = Counter()
        minutes: list[tuple[int, int, int]] = []
        covered = 0
        for hour, counts in self.hours.items():
            lo = max(self.first - hour * 3600, 0)
            hi = min(self.last - hour * 3600 + 1, 3600)
            rates.update(counts[lo:hi])
            covered += hi - lo
            for m in range(60):
                part = counts[m * 60 : m * 60 + 60]
                total = sum(part)
                if total:
                    minutes.append((total, hour * 3600 + m * 60, max(part)))
        rates[0] += span - covered
        peak = _nearest_rank(rates, peak_percentile)
        busiest: list[BusiestMinute] = [
            {
                "start": _iso(start),
                "requests": total,
                "mean_rps": total / (min(start + 60, last + 1) - max(start, first)),
                "max_second_rps": top,
            }
            for total, start, top in nlargest(5, minutes)
        ]
        doc: WorkloadDocument = {
            "format": FORMAT,
            "kind": KIND,
            "log_format": self.fmt.text,
            "requests": self.timed,
            "first_second": _iso(self.first),
            "last_second": _iso(self.last),
            "span_s": span,
            "rps": {
                "percentile": peak_percentile,
                "peak": float(peak),
                "max_second": float(max(rates)),
                "mean": self.timed / span,
            },
            "busiest_minutes": busiest,
            "size_mix": self._size_mix(),
            "requests_per_connection": self._per_connection(),
            "tls": self._tls(),
            "http_versions": _shares(self.versions),
            "status": self._status(),
            "upstream_share": (
                self.upstream / self.upstream_known if self.upstream_known else None
            ),
            "provenance": {
                "files": [f.to_dict() for f in self.files],
                "lines_read": lines,
                "lines_parsed": self.timed,
                "malformed": malformed,
                "malformed_reasons": dict(self.reasons),
                "malformed_examples": self.examples,
                "created": _iso(int(datetime.now(UTC).timestamp())),
            },
        }
        return doc

    def _size_mix(self) -> SizeMix | None:
        total = sum(self.size_count)
        if self.si is None or not total:
            return None
        lows = (0, *SIZE_EDGES)
        highs: tuple[int | None, ...] = (*SIZE_EDGES, None)
        buckets: list[SizeBucket] = [
            {
                "from_bytes": lows[i],
                "to_bytes": highs[i],
                "requests": self.size_count[i],
                "share": self.size_count[i] / total,
                "mean_bytes": self.size_bytes[i] / self.size_count[i] if self.size_count[i] else 0,
            }
            for i in range(len(lows))
        ]
        # The mix: non-empty buckets, a tiny one joined to its neighbour (the smaller side).
        mix = [[self.size_count[i], self.size_bytes[i]] for i in range(len(lows))]
        mix = [m for m in mix if m[0]]
        i = 0
        while len(mix) > 1 and i < len(mix):
            if mix[i][0] / total < MIN_BUCKET_SHARE:
                j = i - 1 if i > 0 else i + 1
                mix[j][0] += mix[i][0]
                mix[j][1] += mix[i][1]
                del mix[i]
                i = 0
                continue
            i += 1
        shares = [round(n / total, 4) for n, _ in mix]
        big = shares.index(max(shares))
        shares[big] = round(1 - sum(s for k, s in enumerate(shares) if k != big), 4)
        words = [_size_word(round(b / n)) for n, b in mix]
        spec = (
            words[0]
            if len(mix) == 1
            else ",".join(f"{w}:{s:g}" for w, s in zip(words, shares, strict=True))
        )
        return {
            "spec": spec,
            "mean_bytes": sum(self.size_bytes) / total,
            "source": self.size_source,
            "buckets": buckets,
        }

    def _per_connection(self) -> PerConnection | None:
        if self.cri is not None:
            if not self.new_connections:
                return None
            return {
                "value": max(1.0, self.connection_requests / self.new_connections),
                "connections": self.new_connections,
                "estimate": False,
                "source": "$connection_requests: requests / connections whose first request "
                "is logged",
            }
        if self.ai is None or not self.estimated_connections:
            return None
        return {
            "value": max(1.0, self.timed / self.estimated_connections),
            "connections": self.estimated_connections,
            "estimate": True,
            "source": "estimate: one connection per client address ($remote_addr) and minute"
            + (
                f"; a minute of more than {EXACT_CAP:,} addresses counted by a sketch "
                f"(k minimum values, k={K}: about {1 / math.sqrt(K - 2):.1%} standard error)"
                if self.sketched
                else ""
            ),
        }

    def _tls(self) -> Tls:
        share: float | None = None
        if self.tls_known:
            share = self.tls_yes / self.tls_known
        elif self.rsi is not None and self.timed:
            share = self.tls_by_reuse / self.timed
        resumption: float | None = None
        source = None
        if self.cri is not None and self.rsi is not None and self.new_tls:
            resumption = self.new_resumed / self.new_tls
            source = "$ssl_session_reused of each connection's first request"
        elif self.rsi is not None and self.tls_by_reuse:
            resumption = self.reused_requests / self.tls_by_reuse
            source = "estimate: $ssl_session_reused over all TLS requests (no $connection_requests)"
        return {
            "share": share,
            "resumption": resumption,
            "resumption_source": source,
            "protocols": _shares(self.tls_protocols),
        }

    def _status(self) -> Status | None:
        total = sum(self.status.values())
        if not total:
            return None
        classes: Counter[str] = Counter()
        for code, n in self.status.items():
            classes[f"{code[:1].decode()}xx"] += n
        return {
            "classes": _shares(classes),
            "codes": {code.decode(): n / total for code, n in self.status.most_common(10)},
        }


def _shares(counts: Counter[str]) -> dict[str, float]:
    total = sum(counts.values())
    return {k: counts[k] / total for k in sorted(counts)} if total else {}


def _nearest_rank(hist: Counter[int], percentile: float) -> int:
    """The smallest value that ``percentile`` % of the counted values do not exceed."""
    n = sum(hist.values())
    rank = max(1, math.ceil(percentile / 100 * n - 1e-9))
    seen = 0
    for value in sorted(hist):
        seen += hist[value]
        if seen >= rank:
            return value
    return max(hist)  # pragma: no cover - rank <= n


def _size_word(n: int) -> str:
    """Bytes as the ``--file-size`` parser reads them: ``1KB``, ``2MB`` or plain bytes."""
    if n and n % MiB == 0:
        return f"{n // MiB}MB"
    if n and n % 1024 == 0:
        return f"{n // 1024}KB"
    return str(n)


def read_logs(
    paths: Sequence[str], log_format: str = "combined", peak_percentile: float = 99.0
) -> WorkloadDocument:
    """The workload document of the access logs ``paths`` (see the module's schema).

    Parameters
    ----------
    paths : sequence of str
        Log files, plain or gzip; all are checked (exist, regular files, not given twice)
        before any is read.
    log_format : str
        The nginx ``log_format`` string, or ``combined`` / ``main``.
    peak_percentile : float
        Percentile of the per-second request rates reported as the peak [%], in (0, 100].

    Raises
    ------
    InputError
        For a bad format or file, or logs without one parsable line.
    """
    if not 0 < peak_percentile <= 100:
        raise InputError(f"the peak percentile must be in (0, 100], got {peak_percentile:g}")
    fmt = compile_format(log_format)
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        fd, st = open_log(path)
        os.close(fd)
        other = seen.setdefault((st.st_dev, st.st_ino), path)
        if other != path or list(paths).count(path) > 1:
            raise InputError(f"{path}: the same file is given twice (as {other})")
    tally = Tally(fmt)
    for path in paths:
        tally.read_file(path)
    return tally.result(peak_percentile)


# --- workload files ---------------------------------------------------------------------


#: The numbers of a workload file, by their path in the document (``rps.peak``; ``share``
#: for each named share of ``http_versions`` and ``status``): type, unit and sane range.
WORKLOAD = Fields(
    "workload",
    (
        Field("requests", "float", "requests", 1, 2**63),
        Field("span_s", "float", "s", 1, 2**40),
        Field("rps.percentile", "float", "%", 1e-9, 100),
        Field("rps.peak", "float", "requests/s", 0, MAX_RPS),
        Field("rps.max_second", "float", "requests/s", 0, MAX_RPS),
        Field("rps.mean", "float", "requests/s", 0, MAX_RPS),
        Field("size_mix.mean_bytes", "float", "B", 0, 2**53),
        Field("requests_per_connection.value", "float", "requests", 1, 1e12),
        Field("tls.share", "float", "", 0, 1, required=False),
        Field("tls.resumption", "float", "", 0, 1, required=False),
        Field("upstream_share", "float", "", 0, 1, required=False),
        Field("share", "float", "", 0, 1),
    ),
)


def _number(
    doc: Mapping[str, object], key: str, where: str, field: str | None = None
) -> float | None:
    """``doc[key]`` checked against the `WORKLOAD` field ``field`` (default: ``key``)."""
    f = WORKLOAD[field or key]
    value = doc.get(key)
    if value is None and not f.required:
        return None
    try:
        return f.check_number(value, where)
    except FieldError:
        raise InputError(
            f"{where}: {key} is {_show(value)}; expected a number in [{f.low:g}, {f.high:g}]"
        ) from None


def _show(value: object) -> str:
    return cut(json.dumps(value))


def _object(
    doc: Mapping[str, object], key: str, where: str, optional: bool = False
) -> dict[str, object]:
    value = doc.get(key)
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: {key} is {_show(value)}; expected an object")
    return value


def parse_mix(text: str) -> tuple[int, tuple[tuple[int, float], ...]]:
    """``1KB`` or ``1KB:0.7,50KB:0.3`` -> (mean bytes, mix), as ``recommend --file-size``.

    Raises
    ------
    InputError
        For a size the size parser refuses, or shares that are not positive or do not sum
        to 1.
    """

    def size(word: str) -> int:
        try:
            return parse_size(word)
        except argparse.ArgumentTypeError as exc:
            raise InputError(str(exc)) from None

    if len(text) > 1000:
        raise InputError(f"a size mix of {len(text)} characters; at most 1000")
    if ":" not in text and "," not in text:
        return size(text), ()
    mix = []
    for part in text.split(","):
        word, sep, share = part.partition(":")
        try:
            w = float(share) if sep else math.nan
        except ValueError:
            w = math.nan
        if not (math.isfinite(w) and 0 < w <= 1):
            raise InputError(f"{part!r}: each part of a size mix is SIZE:SHARE, e.g. 1KB:0.7")
        mix.append((size(word), w))
    total = sum(w for _, w in mix)
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise InputError(f"the shares of the size mix {text!r} sum to {total:g}, not 1")
    return round(sum(s * w for s, w in mix)), tuple(mix)


def validate_workload(doc: Any, where: str = "workload") -> WorkloadDocument:
    """``doc`` if it is a workload document of a known format with every value in range.

    Raises
    ------
    InputError
        Naming the first field out of place, in one line.
    """
    checked: WorkloadDocument = doc  # returned once every check below holds
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object (a workload file), got {_show(doc)}")
    if doc.get("source") in ("nginx.conf", "ingress-nginx ConfigMap"):
        raise InputError(
            f"{where}: this workload file was read from a configuration, not from logs: give "
            "the configuration to recommend --nginx-conf or --ingress-nginx"
        )
    if doc.get("format") != FORMAT or isinstance(doc.get("format"), bool):
        raise InputError(
            f"{where}: format is {_show(doc.get('format'))}; this version reads workload "
            f"files of format {FORMAT} (python -m sizing workload writes them)"
        )
    _number(doc, "requests", where)
    _number(doc, "span_s", where)
    rps = _object(doc, "rps", where)
    _number(rps, "percentile", f"{where}: rps", "rps.percentile")
    for key in ("peak", "max_second", "mean"):
        _number(rps, key, f"{where}: rps", f"rps.{key}")
    mix = _object(doc, "size_mix", where, optional=True)
    if mix:
        spec = mix.get("spec")
        if not isinstance(spec, str):
            raise InputError(
                f"{where}: size_mix: spec is {_show(spec)}; expected e.g. 1KB:0.7,50KB:0.3"
            )
        parse_mix(spec)
        _number(mix, "mean_bytes", f"{where}: size_mix", "size_mix.mean_bytes")
    rpc = _object(doc, "requests_per_connection", where, optional=True)
    if rpc:
        _number(rpc, "value", f"{where}: requests_per_connection", "requests_per_connection.value")
        if not isinstance(rpc.get("estimate"), bool):
            raise InputError(f"{where}: requests_per_connection: estimate must be true or false")
    tls = _object(doc, "tls", where, optional=True)
    for key in ("share", "resumption"):
        _number(tls, key, f"{where}: tls", f"tls.{key}")
    for key in ("http_versions",):
        shares = _object(doc, key, where, optional=True)
        for name in shares:
            _number(shares, name, f"{where}: {key}", "share")
    status = _object(doc, "status", where, optional=True)
    for key in ("classes", "codes") if status else ():
        part = _object(status, key, f"{where}: status")
        for name in part:
            _number(part, name, f"{where}: status: {key}", "share")
    _number(doc, "upstream_share", where)
    return checked


def load_workload_file(path: str | os.PathLike[str]) -> WorkloadDocument:
    """Read and validate the workload file ``path`` (at most `MAX_WORKLOAD_BYTES`).

    Returns
    -------
    dict
        The workload document; `workload_to_request_args` turns it into ``recommend``'s
        arguments.

    Raises
    ------
    InputError
        For a missing, unreadable or oversized file, a folder or device, text that is not
        JSON, or a document `validate_workload` refuses, in one line naming the file.
    """
    where = str(path)
    try:
        data = read_bounded(path, MAX_WORKLOAD_BYTES)
    except OSError as exc:
        raise InputError(f"{where}: {exc.strerror or exc}") from None
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{where}: not a JSON workload file ({exc})") from None
    return validate_workload(doc, where)


def parse_growth(value: float | str) -> float:
    """A growth factor: ``2``, ``2x``, ``1.5X`` or ``150%`` -> 2.0, 2.0, 1.5, 1.5 [1].

    Raises
    ------
    InputError
        For anything else, or a factor outside (0, 1e6].
    """
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            if text.endswith("%"):
                factor = float(text[:-1]) / 100
            else:
                factor = float(text[:-1] if text.endswith("x") else text)
        except ValueError:
            raise InputError(
                f"{value[:40]!r} is not a growth factor; expected e.g. 2x, 1.5 or 150%"
            ) from None
    else:
        factor = float(value)
    if not (math.isfinite(factor) and 0 < factor <= 1e6):
        raise InputError(f"a growth factor must be in (0, 1e6], got {value!r}")
    return factor


def workload_to_request_args(workload: WorkloadDocument, growth: float | str = 1.0) -> RequestArgs:
    """The ``recommend`` arguments a validated workload document implies.

    Parameters
    ----------
    workload : dict
        A document `load_workload_file` (or `validate_workload`) accepted.
    growth : float or str
        Factor applied to the peak rate (``2x``: twice today's peak) [1].

    Returns
    -------
    dict
        ``rps`` [1/s] (the peak times ``growth``), and when the logs tell them:
        ``file_size`` (mean bytes, mix) as ``--file-size`` parses it, ``file_size_text``
        (its spec), ``requests_per_connection`` [1] (with ``requests_per_connection_estimate``),
        ``tls_resumption`` [1], ``protocol`` (``https`` when most requests use TLS),
        ``http_version`` (``2`` when most requests use HTTP/2 or 3) and ``http2_share`` [1].

    Raises
    ------
    InputError
        For a bad growth factor, or a peak of 0 requests/s (logs with fewer seconds that
        have a request than the percentile leaves out).
    """
    factor = parse_growth(growth)
    rps = workload["rps"]
    if not rps["peak"] > 0:
        raise InputError(
            f"the p{rps['percentile']:g} of the per-second request rates is 0: fewer than "
            f"{100 - rps['percentile']:g}% of the seconds logged have a request; read the logs "
            "again with a lower --peak-percentile"
        )
    out: RequestArgs = {"rps": rps["peak"] * factor, "growth": factor}
    mix = workload.get("size_mix")
    if mix:
        out["file_size"] = parse_mix(mix["spec"])
        out["file_size_text"] = mix["spec"]
    rpc = workload.get("requests_per_connection")
    if rpc:
        out["requests_per_connection"] = float(rpc["value"])
        out["requests_per_connection_estimate"] = bool(rpc["estimate"])
    tls = workload.get("tls") or {}
    resumption, share = tls.get("resumption"), tls.get("share")
    if resumption is not None:
        out["tls_resumption"] = float(resumption)
    if share is not None:
        out["protocol"] = "https" if share >= 0.5 else "http"
    versions = workload.get("http_versions") or {}
    known = sum(v for k, v in versions.items() if k != "other")
    if known > 0:
        h2 = (versions.get("2", 0.0) + versions.get("3", 0.0)) / known
        out["http2_share"] = h2
        out["http_version"] = "2" if h2 >= 0.5 else "1.1"
    return out


def request_argv(args: RequestArgs) -> list[str]:
    """``recommend``'s command-line options for `workload_to_request_args`'s result."""
    argv = ["--rps", repr(float(args["rps"]))]
    if "file_size_text" in args:
        argv += ["--file-size", args["file_size_text"]]
    if "requests_per_connection" in args:
        argv += ["--requests-per-connection", f"{args['requests_per_connection']:.6g}"]
    if "protocol" in args:
        argv += ["--protocol", args["protocol"]]
    if "tls_resumption" in args and args.get("protocol", "https") == "https":
        argv += ["--tls-resumption", f"{args['tls_resumption']:.4g}"]
    if "http_version" in args:
        argv += ["--http-version", args["http_version"]]
    return argv


# --- command line -----------------------------------------------------------------------


def add_parser(
    sub: Subcommands,
    sources: Callable[[argparse._MutuallyExclusiveGroup], None] | None = None,
) -> argparse.ArgumentParser:
    """Add the ``workload`` subcommand to ``sub`` (an argparse subparsers object).

    ``sources`` adds other sources than ``--from-log`` to the group of which one is given
    (`sizing.cli.workload`: ``--from-conf``, ``--ingress-nginx``).
    """
    p: argparse.ArgumentParser = sub.add_parser(
        "workload",
        help="a workload file from NGINX access logs: peak RPS, size mix, connections, TLS",
        description="Read NGINX access logs (plain or gzip) and write a workload file (JSON): "
        "the peak request rate at a percentile of per-second rates, the busiest minutes, the "
        "response size mix, requests per connection, TLS resumption, HTTP versions, status "
        "classes and upstream share. Malformed lines are counted and shown, never fatal.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-log",
        nargs="+",
        type=path_arg(INPUT_FILE),
        metavar="FILE",
        help="access log files, plain or gzip",
    )
    if sources is not None:
        sources(source)
    p.add_argument(
        "--log-format",
        default="combined",
        metavar="FORMAT",
        help="the server's nginx log_format string (e.g. '$remote_addr [$time_local] "
        '"$request" $status $bytes_sent $connection_requests\'), or combined or main',
    )
    p.add_argument(
        "--peak-percentile",
        type=float_between(1e-9, 100, "a percentile in (0, 100]"),
        default=99.0,
        metavar="P",
        help="percentile of the per-second request rates reported as the peak",
    )
    p.add_argument(
        "--out",
        type=path_arg(OUTPUT_FILE),
        default=None,
        metavar="FILE",
        help="write the workload file here (default: the JSON on standard output)",
    )
    return p


def _pct(x: float) -> str:
    return f"{x:.1%}"


def summary(doc: WorkloadDocument) -> list[str]:
    """Lines for a person: what the workload file holds (every quoted value escaped)."""
    prov = doc["provenance"]
    rps = doc["rps"]
    out = [
        f"read {len(prov['files'])} file(s), {prov['lines_read']:,} lines: "
        f"{prov['lines_parsed']:,} parsed, {prov['malformed']:,} malformed",
        f"peak {rps['peak']:,.0f} requests/s (p{rps['percentile']:g} of per-second rates; "
        f"busiest second {rps['max_second']:,.0f}), mean {rps['mean']:,.1f} over "
        f"{doc['span_s']:,} s from {doc['first_second']}",
    ]
    if doc["busiest_minutes"]:
        out.append(
            "busiest minutes: "
            + ", ".join(
                f"{m['start'][:16]}Z {m['mean_rps']:,.1f}/s" for m in doc["busiest_minutes"]
            )
        )
    if doc["size_mix"]:
        mix = doc["size_mix"]
        out.append(f"size mix: {mix['spec']} (mean {mix['mean_bytes']:,.0f} B, {mix['source']})")
    rpc = doc["requests_per_connection"]
    if rpc:
        out.append(
            f"requests per connection: {rpc['value']:,.2f}"
            + (" (an estimate: one connection per client and minute)" if rpc["estimate"] else "")
        )
    tls = doc["tls"] or Tls()  # a document read from logs always has its tls part
    if tls["share"] is not None:
        line = f"TLS: {_pct(tls['share'])} of requests"
        if tls["resumption"] is not None:
            line += f", {_pct(tls['resumption'])} of new TLS connections resumed"
        out.append(line)
    if doc["http_versions"]:
        out.append(
            "HTTP versions: " + ", ".join(f"{k} {_pct(v)}" for k, v in doc["http_versions"].items())
        )
    if doc["status"]:
        out.append(
            "status: " + ", ".join(f"{k} {_pct(v)}" for k, v in doc["status"]["classes"].items())
        )
    if doc["upstream_share"] is not None:
        out.append(f"passed upstream: {_pct(doc['upstream_share'])} of requests")
    for f in prov["files"]:
        for note in f["notes"]:
            out.append(f"{f['path']}: {note}")
    for ex in prov["malformed_examples"]:
        out.append(f"malformed: {ex['file']} line {ex['line']} ({ex['reason']}): {ex['text']}")
    return [printable(line) for line in out]


def _write(path: str, text: str, inputs: Sequence[str]) -> None:
    """``text`` as the new content of ``path`` (`write_atomic`: never a log, link or device)."""
    try:
        write_atomic(path, text, inputs=inputs)
    except OSError as exc:
        raise InputError(f"--out: cannot write {path} ({exc.strerror or exc})") from None


def run(args: argparse.Namespace) -> int:
    """``python -m sizing workload``: read the logs, write the workload file; exit code 0.

    Raises
    ------
    InputError
        As `read_logs` raises it, or when ``--out`` cannot be written.
    """
    if args.out is not None and Path(args.out).is_dir():
        raise InputError(f"--out: {args.out} is a folder; expected a file name")
    doc = read_logs(args.from_log, args.log_format, args.peak_percentile)
    lines = summary(doc)
    try:
        command = request_argv(workload_to_request_args(doc))
        lines.append("size it: python -m sizing recommend " + " ".join(command))
    except InputError as exc:
        lines.append(printable(str(exc)))
    return emit(args.out, doc, lines, args.from_log)


def emit(
    out: str | None, doc: Mapping[str, object], lines: list[str], inputs: Sequence[str] = ()
) -> int:
    """The workload document on standard output (lines on stderr), or written to ``out``.

    ``inputs`` are the files the document was read from: ``out`` may be none of them.
    """
    text = json.dumps(doc, indent=1, ensure_ascii=True) + "\n"
    if out is None:
        sys.stdout.write(text)
        print("\n".join(lines), file=sys.stderr)
        return 0
    _write(out, text, inputs)
    print("\n".join([*lines, f"wrote {printable(str(out))}"]))
    return 0
