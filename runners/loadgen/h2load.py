"""h2load (nghttp2): HTTP/2 and HTTP/1.1 load, closed loop and open loop.

- Closed loop: ``-c`` connections, each with ``-m`` concurrent streams (HTTP/2) or pipelined
  requests (HTTP/1.1; the runners keep ``-m 1`` there), on ``-t`` native threads.
- Open loop: ``--rps`` per connection. h2load sends at the asked rate while a connection has a
  free stream; when all ``-m`` streams of a connection are busy, due requests wait and their
  latency counts from when they were sent, not from when they were due (h2load has no way to
  count from the intended send time). Such a trial falls short of the asked rate, and the
  trial judge marks it invalid under 95% of the rate (``rate_shortfall``). Over HTTP/2, more
  streams per connection (``--streams``) keep a slow response from holding back the next
  request; HTTP/1.1 has one request in flight per connection, so it needs more connections.
- h2load has no per-request timeout: a trial is bounded by its duration (requests still in
  flight at the end are not counted), and ``errors_timeout`` stays 0 unless h2load reports one.
- ``--log-file`` writes one line per request: start time [us since the epoch], HTTP status
  (-1 for a failed stream), latency [us]. Its latencies are integers in microseconds, so they
  form the same exact 1 us histogram as the wrk reporter's, and clients merge by summing.
  The histogram is counted on the client host (``awk``) so only ``value count`` pairs travel.

The summary h2load prints is parsed for counts, errors, bytes and the rate; ``traffic``'s
total counts the main duration only (its ``data`` figure also counts the warm-up, so it is
not used).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from runners.cputime import TIMES_MARKER
from runners.errors import RunnerError
from runners.loadgen.base import (
    CLOSED,
    ERROR_KINDS,
    OPEN,
    Load,
    LoadGenerator,
    Measurement,
    latency_summary,
    pin,
)
from runners.tools import TOOLS, tool_path
from trialtable.schema import HTTP_VERSIONS

NAME = "h2load"
RATE_SHORTFALL = 0.95
HIST_MARKER = "NGINX_SIZING_H2LOAD_US"
FAILED_MARKER = "NGINX_SIZING_H2LOAD_FAILED"

# Count the log's latencies per microsecond on the client host; failed streams apart.
_AWK = (
    "NF >= 3 { if ($2 + 0 > 0) h[$3 + 0]++; else f++ } "
    f'END {{ printf "{FAILED_MARKER} %d\\n", f + 0; '
    f'for (v in h) printf "{HIST_MARKER} %d %d\\n", v, h[v] }}'
)

# Run h2load with a private log file, print the CPU time of the shell's children (h2load)
# with `times`, then the log's histogram; the log is removed even when interrupted. h2load
# makes one write() per request, so the log goes to memory (/dev/shm) where it can. The first
# argument is the client's work folder, recorded before it exists: the log is named after it
# (``WORKDIR-h2load.XXXXXXXX`` in /dev/shm, or beside the work folder), so that the cleanup
# of a killed run, which removes the work folder, finds and removes the log too.
WRAPPER = (
    'w=$1; shift; b=${w##*/}; [ -n "$b" ] || b=nginx-sizing\n'
    'd=/dev/shm; [ -d "$d" ] && [ -w "$d" ] || d=${w%/*}\n'
    '[ -n "$w" ] && [ -d "$d" ] || d=${TMPDIR:-/tmp}\n'
    'log=$(mktemp "$d/$b-h2load.XXXXXXXX") || exit 1\n'
    "trap 'rm -f \"$log\"' EXIT\n"
    "trap 'exit 143' HUP INT TERM\n"
    '"$@" --log-file="$log"; rc=$?\n'
    f"echo; echo {TIMES_MARKER}; times\n"
    f"awk -F '\\t' '{_AWK}' \"$log\"\n"
    "exit $rc\n"
)


@dataclass(frozen=True)
class Summary:
    """What h2load's printed summary says.

    Attributes
    ----------
    clients : int
        Connections h2load opened (the sum of its ``spawning thread`` lines).
    duration_s : float
        Main measurement duration [s] (``requests / req/s``; the warm-up is not in it).
    total, started, done, succeeded, failed, errored, timeout : int
        h2load's request counters. ``failed`` includes responses with status >= 400.
    status : dict of str to int
        Responses per status class: ``2xx``, ``3xx``, ``4xx``, ``5xx``.
    traffic_bytes : int
        Bytes received in the main duration, frames and headers included.
    rps : float
        Completed requests per second [1/s].
    latency_min_ms, latency_max_ms, latency_mean_ms : float
        h2load's own ``time for request`` figures [ms] (rounded as printed).
    """

    clients: int
    duration_s: float
    total: int
    started: int
    done: int
    succeeded: int
    failed: int
    errored: int
    timeout: int
    status: dict[str, int]
    traffic_bytes: int
    rps: float
    latency_min_ms: float
    latency_max_ms: float
    latency_mean_ms: float

    @property
    def errors(self) -> dict[str, int]:
        """The error counters under the wrk kinds.

        ``connect``: no request started at all (one per connection); ``status``: responses
        with status >= 400; ``timeout``; ``read``: every other failed stream; ``write``: 0.
        """
        status = self.status["4xx"] + self.status["5xx"]
        out = dict.fromkeys(ERROR_KINDS, 0)
        out["status"] = status
        out["timeout"] = self.timeout
        out["read"] = max(0, self.failed - status - self.timeout)
        if self.started == 0:
            out["connect"] = max(1, self.clients)
        return out


def command(load: Load, *, binary: str = TOOLS["h2load"], warmup_s: int = 0) -> list[str]:
    """The argv of one timed h2load run, pinned with ``taskset`` when the load names CPUs.

    The per-request log is added by `WRAPPER` (``--log-file``), which runs this argv.

    Parameters
    ----------
    load : Load
        The URL (``https://`` negotiates HTTP/2 with ALPN; ``http://`` speaks h2c with prior
        knowledge, or HTTP/1.1 with ``http_version="1.1"``, ``--h1``); native threads and
        connections (h2load's clients, at least ``threads``); the measured duration [s];
        concurrent streams per connection (``-m``) over HTTP/2, always 1 over HTTP/1.1 (no
        pipelining); in an open loop, the total rate of this h2load [1/s], split evenly over
        its connections; extra headers; CPUs to pin to. Its socket timeout is not used.
    binary : str
        The h2load binary.
    warmup_s : int
        Warm-up before the measured duration (not measured) [s].
    """
    threads, connections, rate_rps = load.threads, load.connections, load.rate_rps
    if threads < 1 or connections < threads:
        raise RunnerError(
            f"h2load needs threads >= 1 and connections >= threads (got {threads}, {connections})"
        )
    if load.http_version not in HTTP_VERSIONS:
        raise RunnerError(f"unknown HTTP version {load.http_version!r}; expected 1.1 or 2")
    if load.duration_s < 1 or warmup_s < 0:
        raise RunnerError("h2load needs a duration >= 1 s and a warm-up >= 0 s")
    if rate_rps is not None and not (math.isfinite(rate_rps) and rate_rps > 0):
        raise RunnerError(f"the rate must be a positive number of requests/s (got {rate_rps})")
    m = 1 if load.http_version == "1.1" else load.streams
    if m < 1:
        raise RunnerError(f"streams per connection must be at least 1 (got {m})")
    argv = [binary, "-t", str(threads), "-c", str(connections), "-m", str(m)]
    argv += ["-D", str(load.duration_s)]
    if warmup_s > 0:
        argv += ["--warm-up-time", str(warmup_s)]
    if rate_rps is not None:
        argv.append(f"--rps={rate_rps / connections:.6g}")
    if load.http_version == "1.1":
        argv.append("--h1")
    for header in load.headers:
        argv += ["-H", header]
    argv.append(load.url)
    return pin(argv, load.cpus)


_SIZE = r"([0-9.]+)(us|ms|s)"
_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}
_SPAWN = re.compile(r"^spawning thread #\d+: (\d+) total client", re.M)
_FINISHED = re.compile(r"^finished in \S+, ([0-9.]+) req/s", re.M)
_REQUESTS = re.compile(
    r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
    r"(\d+) errored, (\d+) timeout",
    re.M,
)
_STATUS = re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", re.M)
_TRAFFIC = re.compile(r"^traffic: \S+ \((\d+)\) total", re.M)
_REQUEST_TIME = re.compile(r"^time for request:\s+" + r"\s+".join([_SIZE] * 3), re.M)


def parse_summary(text: str) -> Summary:
    """Parse h2load's printed summary (its standard output)."""
    req = _REQUESTS.search(text)
    finished = _FINISHED.search(text)
    if req is None or finished is None:
        raise RunnerError(no_result_message(text))
    status = _STATUS.search(text)
    traffic = _TRAFFIC.search(text)
    times = _REQUEST_TIME.search(text)
    total, started, done, succeeded, failed, errored, timeout = map(int, req.groups())
    rps = float(finished.group(1))
    lat = [float(times.group(i)) * _MS[times.group(i + 1)] for i in (1, 3, 5)] if times else []
    return Summary(
        clients=sum(int(n) for n in _SPAWN.findall(text)),
        duration_s=done / rps if rps > 0 and done else math.nan,
        total=total,
        started=started,
        done=done,
        succeeded=succeeded,
        failed=failed,
        errored=errored,
        timeout=timeout,
        status=dict(
            zip(("2xx", "3xx", "4xx", "5xx"), map(int, status.groups()), strict=True)
            if status
            else dict.fromkeys(("2xx", "3xx", "4xx", "5xx"), 0)
        ),
        traffic_bytes=int(traffic.group(1)) if traffic else 0,
        rps=rps,
        latency_min_ms=lat[0] if lat else math.nan,
        latency_max_ms=lat[1] if lat else math.nan,
        latency_mean_ms=lat[2] if lat else math.nan,
    )


def histogram_from_output(text: str) -> tuple[dict[int, int], int]:
    """The histogram and failed streams that `WRAPPER` printed after h2load's output."""
    hist: dict[int, int] = {}
    failed = 0
    for line in text.splitlines():
        if line.startswith(HIST_MARKER + " "):
            _, value, count = line.split()
            hist[int(value)] = hist.get(int(value), 0) + int(count)
        elif line.startswith(FAILED_MARKER + " "):
            failed += int(line.split()[1])
    return hist, failed


def result(summary: Summary, histogram_us: Mapping[int, int]) -> Measurement:
    """One h2load run as the result every load generator gives (counts, errors, histogram)."""
    hist = {int(v): int(c) for v, c in histogram_us.items() if c}
    out = Measurement(
        duration_s=summary.duration_s if summary.done else 0.0,
        requests=summary.done,
        bytes=summary.traffic_bytes,
        errors=summary.errors,
        histogram_us=hist,
        rps=summary.rps,
    )
    if hist:
        out.latency_ms = latency_summary(hist)
    return out


def parse(text: str) -> Measurement:
    """Parse the output of h2load run under `WRAPPER`: summary plus the log's histogram.

    Raises `RunnerError` when h2load printed no summary, or when the log holds fewer
    responses than the summary counts (a log cut short).
    """
    summary = parse_summary(text)
    hist, _failed = histogram_from_output(text)
    logged = sum(hist.values())
    if logged < summary.done - summary.failed:
        raise RunnerError(
            f"h2load's log holds {logged} responses but its summary counts "
            f"{summary.done - summary.failed} successful ones"
        )
    return result(summary, hist)


def rate_shortfall(achieved_rps: float, asked_rps: float) -> str | None:
    """Why an open-loop trial does not count: under 95% of the rate asked, or None."""
    if achieved_rps < RATE_SHORTFALL * asked_rps:
        return f"achieved {achieved_rps:.0f} of the {asked_rps:.0f} rps asked"
    return None


def no_result_message(text: str) -> str:
    """One line saying why h2load's output holds no result."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in lines:
        low = ln.lower()
        if "usage:" in low or "unrecognized option" in low or "invalid" in low:
            return f"h2load rejected its arguments: {ln}"
        if "no protocol" in low or "not found" in low or "could not" in low:
            return f"h2load: {ln}"
    return f"h2load gave no result: {lines[0] if lines else 'no output'}"


class H2load(LoadGenerator):
    """h2load: HTTP/2 (TLS with ALPN, or h2c) and HTTP/1.1; closed and open loop.

    Each run goes through `WRAPPER` (``sh -c``): h2load writes its per-request log to a
    private temporary file, the shell prints h2load's CPU time and the log's histogram, then
    removes the log. The trial's own CPU measurement around the command therefore also counts
    the ``awk`` pass over the log (about 0.1 s per million requests).
    """

    name = NAME
    http_versions = HTTP_VERSIONS
    modes = (CLOSED, OPEN)

    def tool(self, binaries: Mapping[str, str], mode: str) -> str:
        """``h2load`` (as the user named it) for either mode."""
        return tool_path("h2load", binaries)

    def command(self, load: Load, *, binary: str, workdir: str) -> list[str]:
        """``sh -c WRAPPER sh <h2load argv>`` for a measured run; h2load alone for a warm-up."""
        argv = command(load, binary=binary)
        if not load.record:
            return argv
        return ["sh", "-c", WRAPPER, "sh", workdir, *argv]

    def parse(self, stdout: str, load: Load) -> Measurement:
        """Summary, error counters and the log's exact histogram."""
        return parse(stdout)

    def no_result(self, text: str) -> str:
        """Why h2load's output holds no result, in one line."""
        return no_result_message(text).removeprefix("h2load gave no result: ")


GENERATOR = H2load()
