"""The importer contract: one load tool's result file in, one measured trial out.

An importer (k6, vegeta, hey, HdrHistogram logs, Locust) is an `Importer`: it names its tool
and turns the file's text into an `Imported`, a `runners.loadgen.Measurement` plus what the
file says of itself (start time, connections, tool version) and which trial columns it
holds exactly and which only approximately. Per-request files (k6 JSON, vegeta, hey) give a
histogram in 1 us buckets, so percentiles follow the same rank rule as wrk's
(`runners.loadgen.percentile`); summary files (k6 summary, Locust) give the tool's own
numbers, marked as approximated where the tool rounds or interpolates.

Every refusal is an `ImportRefused`: one line naming the file, the line and the problem.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from runners.errors import RunnerError
from runners.loadgen.base import ERROR_KINDS, Measurement, latency_summary
from trialtable.fields import printable
from trialtable.files import loads_json
from trialtable.jsonvalue import JsonValue

#: Longest line read from an imported file [characters]; a longer one is refused.
MAX_LINE_CHARS = 1 << 20
#: Largest latency taken from a file [us]: a day. Larger is a unit mix-up or damage.
MAX_LATENCY_US = 86_400 * 10**6
#: Most requests one imported trial may count (the trial table's integers are 64-bit).
MAX_REQUESTS = 2**62
#: The latency columns of a trial, by the key `runners.loadgen.latency_summary` gives them.
LATENCY_COLUMNS = {k: f"latency_{k}_ms" for k in ("p50", "p90", "p99", "p999", "max", "mean")}
#: Columns a per-request file gives exactly (1 us buckets, the wrk rank rule).
PER_REQUEST_EXACT = ("requests", "error_rate", *LATENCY_COLUMNS.values())


class ImportRefused(RunnerError):
    """A file that cannot be imported (wrong format, damaged, hostile); exit status 2."""


@dataclass
class Imported:
    """What one imported file measured, and how exactly.

    Attributes
    ----------
    measurement : Measurement
        Requests, errors, duration, rate and latency percentiles [ms].
    exact : tuple of str
        Trial columns the file gives exactly.
    approximated : dict of str to str
        Trial column -> how it is approximated.
    started_at : str
        When the measurement started (ISO 8601, Z), or ``""`` when the file does not say.
    connections : int or None
        Concurrent connections or users, when the file says.
    version : str
        The tool's or format's version, when the file says.
    bytes_known : bool
        Whether ``measurement.bytes`` holds the bytes read, headers included.
    """

    measurement: Measurement
    exact: tuple[str, ...]
    approximated: dict[str, str] = field(default_factory=dict)
    started_at: str = ""
    connections: int | None = None
    version: str = ""
    bytes_known: bool = False


class Importer(ABC):
    """One tool's result format.

    Class attributes
    ----------------
    name : str
        The ``--format`` name.
    tool : str
        The tool that writes the format, stored as the trial's ``load_generator``.
    """

    name: ClassVar[str]
    tool: ClassVar[str]

    @abstractmethod
    def parse(self, text: str, where: str, options: Mapping[str, object]) -> Imported:
        """The measurement in ``text`` (a whole file); `ImportRefused` when there is none.

        Parameters
        ----------
        text : str
            The file's text.
        where : str
            The file's name, for messages.
        options : mapping
            Format options from the command line (``unit`` for HdrHistogram logs).
        """


def refuse(where: str, problem: str) -> ImportRefused:
    """An `ImportRefused` reading ``WHERE: PROBLEM``, with anything unprintable escaped."""
    return ImportRefused(printable(f"{where}: {problem}"))


def lines(text: str, where: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of every non-blank line; a line over `MAX_LINE_CHARS` refused."""
    for n, line in enumerate(text.splitlines(), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise refuse(f"{where}:{n}", f"line longer than {MAX_LINE_CHARS} characters")
        if line.strip():
            yield n, line


def json_value(text: str, where: str) -> JsonValue:
    """One JSON document, numbers finite (`trialtable.files.loads_json`), or `ImportRefused`."""
    try:
        return loads_json(text)
    except RecursionError:
        raise refuse(where, "is not JSON (nested too deeply)") from None
    except ValueError as exc:
        raise refuse(where, f"is not JSON ({str(exc)[:80]})") from None


def number(value: object, where: str, name: str, high: float = math.inf) -> float:
    """``value`` as a finite number in [0, ``high``], or `ImportRefused` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(str(value)[:64])
        except ValueError:
            raise refuse(where, f"{name} {str(value)[:40]!r} is not a number") from None
    if not (math.isfinite(value) and 0 <= value <= high):
        raise refuse(where, f"{name} {str(value)[:40]} is not a finite number in [0, {high:g}]")
    return float(value)


def latency_us(ms: object, where: str) -> int:
    """A latency in milliseconds as whole microseconds (`MAX_LATENCY_US` at most)."""
    return round(number(ms, where, "latency", MAX_LATENCY_US / 1000.0) * 1000.0)


def error_kind(status: int, message: str) -> str | None:
    """The error counter of one response: None for 1xx-3xx, ``status`` for others.

    A request with no response (status 0) is a timeout, a connect or a read error by its
    message.
    """
    if 100 <= status < 400:
        return None
    if status >= 400:
        return "status"
    low = message.lower()
    if "timeout" in low or "deadline" in low:
        return "timeout"
    if "connect" in low or "refused" in low or "dial" in low:
        return "connect"
    return "read"


def iso_utc(seconds: float) -> str:
    """Seconds since the epoch as ``YYYY-mm-ddTHH:MM:SSZ``, or ``""`` outside 1970-5138."""
    if not (math.isfinite(seconds) and 0 < seconds < 1e11):
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def from_requests(
    histogram_us: dict[int, int], errors: dict[str, int], duration_s: float, bytes_read: int = 0
) -> Measurement:
    """The measurement of a per-request file: every latency in ``histogram_us``."""
    n = sum(histogram_us.values())
    if n == 0:
        raise ImportRefused("no requests")
    if n > MAX_REQUESTS:
        raise ImportRefused(f"{n} requests: more than the trial table holds ({MAX_REQUESTS})")
    return Measurement(
        duration_s=duration_s,
        requests=n,
        bytes=bytes_read,
        errors={k: errors.get(k, 0) for k in ERROR_KINDS},
        histogram_us=histogram_us,
        latency_ms=latency_summary(histogram_us),
        rps=n / duration_s if duration_s > 0 else math.nan,
    )


#: The columns a summary file (k6's summary, Locust's stats) gives exactly.
SUMMARY_EXACT = ("requests", "rps", "latency_max_ms", "latency_mean_ms")


def from_summary(
    requests: int,
    rps: float,
    latency_ms: dict[str, float],
    errors: tuple[str, int],
    approximated: dict[str, str],
) -> Imported:
    """The trial of a summary file: its request count, rate [1/s] and latency [ms].

    Parameters
    ----------
    errors : tuple of (str, int)
        The one error kind (of `ERROR_KINDS`) the tool's failures count as, and their count.
    approximated : dict of str to str
        Trial column -> how the tool approximates it (the duration is ``requests / rps``).
    """
    kind, failed = errors
    m = Measurement(
        duration_s=requests / rps,
        requests=requests,
        bytes=0,
        errors={k: failed if k == kind else 0 for k in ERROR_KINDS},
        latency_ms=latency_ms,
        rps=rps,
    )
    return Imported(measurement=m, exact=SUMMARY_EXACT, approximated=approximated)


@dataclass
class Tally:
    """A per-request file's requests counted as read: a 1 us histogram and errors by kind."""

    histogram_us: dict[int, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)

    def add(self, us: int, kind: str | None) -> None:
        """Count one request of ``us`` microseconds, and its error kind (None: none)."""
        self.histogram_us[us] = self.histogram_us.get(us, 0) + 1
        if kind:
            self.errors[kind] = self.errors.get(kind, 0) + 1
