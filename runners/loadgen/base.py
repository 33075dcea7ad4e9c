"""The load-generator contract: what one client runs in one trial, and what it measured.

A load generator (wrk, wrk2, h2load) is a `LoadGenerator`: it names the binary the clients
need, the files it wants in the client's work folder, builds the argv of one run from a
`Load`, and parses that run's standard output into a `Measurement` with an exact latency
histogram in 1 us buckets. Histograms from several clients merge exactly by summing counts
per bucket (`merge`), and fleet percentiles come from the merge, never from one client.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from runners.errors import BadInput, RunnerError
from trialtable.schema import HTTP_VERSIONS as HTTP_VERSIONS  # re-exported

ERROR_KINDS = ("connect", "read", "write", "status", "timeout")
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}
CLOSED, OPEN = "closed", "open"


class UnsupportedLoad(BadInput):
    """A load generator asked for something it cannot do, or not available (bad arguments)."""


@dataclass(frozen=True)
class Load:
    """What one client runs in one trial.

    Attributes
    ----------
    url : str
        Target URL (``http://`` or ``https://``).
    threads, connections : int
        Load-generator threads and open connections on this client.
    duration_s : int
        Run length [s] (whole seconds).
    timeout_s : int
        Socket timeout [s]; slower responses count as timeouts.
    headers : tuple of str
        Extra request headers, e.g. ``"Connection: close"``.
    http_version : str
        ``"1.1"`` or ``"2"``.
    streams : int
        Concurrent streams per connection (HTTP/2; 1 for HTTP/1.1).
    rate_rps : float, optional
        This client's share of a constant request rate (open loop) [1/s]; None for a closed
        loop.
    cpus : tuple of int
        CPUs to pin the load generator to; empty for no pinning.
    record : bool
        Whether the run is measured (False for a warm-up, whose output is only checked).
    """

    url: str
    threads: int
    connections: int
    duration_s: int
    timeout_s: int = 2
    headers: tuple[str, ...] = ()
    http_version: str = "1.1"
    streams: int = 1
    rate_rps: float | None = None
    cpus: tuple[int, ...] = ()
    record: bool = True

    @property
    def mode(self) -> str:
        """``"open"`` with a constant rate, else ``"closed"``."""
        return OPEN if self.rate_rps is not None else CLOSED


@dataclass
class Measurement:
    """One load-generator run, or the exact merge of several run side by side.

    Attributes
    ----------
    duration_s : float
        Measured duration [s] (the longest of the merged runs).
    requests : int
        Completed requests.
    bytes : int
        Bytes read, headers included [B].
    errors : dict of str to int
        Error counters: connect, read, write, status (non-2xx/3xx), timeout.
    histogram_us : dict of int to int
        Latency histogram: microseconds -> responses. Empty when parsed from text output.
    latency_ms : dict of str to float
        p50, p90, p99, p999, max and mean latency [ms].
    rps : float
        Requests per second [1/s], the sum over merged runs.
    """

    duration_s: float
    requests: int
    bytes: int
    errors: dict[str, int]
    histogram_us: dict[int, int] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    rps: float = math.nan

    @property
    def bytes_per_s(self) -> float:
        """Bytes read per second [B/s]."""
        return self.bytes / self.duration_s if self.duration_s > 0 else math.nan

    @property
    def error_count(self) -> int:
        """All errors of every kind."""
        return sum(self.errors.values())


class LoadGenerator(ABC):
    """One load generator behind the contract the trials use.

    Class attributes
    ----------------
    name : str
        Registry name, stored in every row's ``load_generator``.
    http_versions : tuple of str
        HTTP versions it speaks (``"1.1"``, ``"2"``).
    modes : tuple of str
        ``"closed"`` (N connections, each sends when the last response came back) and/or
        ``"open"`` (a constant request rate).
    """

    name: ClassVar[str]
    http_versions: ClassVar[tuple[str, ...]] = ("1.1",)
    modes: ClassVar[tuple[str, ...]] = (CLOSED,)

    def check(self, http_version: str, mode: str | None = None) -> None:
        """Raise `RunnerError` unless this generator supports ``http_version`` (and ``mode``)."""
        if http_version not in self.http_versions:
            raise UnsupportedLoad(
                f"{self.name} does not speak HTTP/{http_version} "
                f"(it speaks {', '.join('HTTP/' + v for v in self.http_versions)})"
            )
        if mode is not None and mode not in self.modes:
            raise UnsupportedLoad(
                f"{self.name} has no {mode}-loop mode (it has: {', '.join(self.modes)})"
            )

    @abstractmethod
    def tool(self, binaries: Mapping[str, str], mode: str) -> str:
        """The binary (name or path) the clients need for ``mode``.

        ``binaries`` maps tool names to what the user chose (``{"wrk": "/opt/wrk", ...}``).
        """

    def files(self) -> dict[str, str]:
        """Files to put in each client's work folder once per run: name -> text."""
        return {}

    @abstractmethod
    def command(self, load: Load, *, binary: str, workdir: str) -> list[str]:
        """The argv of one run on a client (pinned with ``taskset`` when ``load.cpus``).

        Parameters
        ----------
        load : Load
            What to run.
        binary : str
            The resolved path of `tool` on the client.
        workdir : str
            The client's private work folder (holds `files`; removed at the end of the run).
        """

    @abstractmethod
    def parse(self, stdout: str, load: Load) -> Measurement:
        """The measurement of one run from its standard output, with an exact histogram.

        Raises `RunnerError` with one line saying why when the output holds no result.
        """

    def collect(self, load: Load, *, workdir: str) -> list[str] | None:
        """An argv to run on the client after a measured run, outside its CPU timing.

        Its standard output is appended to the run's before `parse` (for example, a
        per-request log in ``workdir`` summarised into a histogram). None: nothing to run.
        """
        return None

    def waits_for_start(self, load: Load) -> bool:
        """Whether a run of ``load`` waits for `runners.window.START_ENV` itself.

        Such a run is launched at once, does its start-up before that instant and stamps
        its own window on standard error (`runners.window`); else a shell waits for it.
        """
        return False

    def warmup_problem(self, stdout: str, stderr: str, code: int) -> str | None:
        """Why a warm-up run failed (one line), or None when it ran."""
        return None if code == 0 else self.no_result(stderr or stdout)

    def no_result(self, text: str) -> str:
        """One line saying why a run's output (stdout or stderr) holds no result."""
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        return lines[0] if lines else "no output"

    def saturated(self, cpu_pct: float, allotted: int, threshold: float, host: str) -> str | None:
        """Why the generator counts as saturated, or None.

        Parameters
        ----------
        cpu_pct : float
            CPU the run used [% of one CPU], measured by the trial around the command.
        allotted : int
            CPUs it had for itself (its threads, at most its pinned CPUs).
        threshold : float
            Fraction of the allotted CPUs at which it is saturated (e.g. 0.9).
        host : str
            The client's name, for the note.
        """
        return saturation_note(cpu_pct, allotted, threshold, host, self.name)


def saturation_note(
    cpu_pct: float, allotted: int, saturation: float, host: str, name: str = "wrk"
) -> str | None:
    """Why a load generator counts as saturated (CPU at ``saturation`` of its CPUs), or None."""
    if cpu_pct >= saturation * 100.0 * allotted:
        return f"{name} used {cpu_pct:.0f}% of its {allotted} CPU on {host}"
    return None


def pin(argv: list[str], cpus: Iterable[int]) -> list[str]:
    """``argv`` under ``taskset -c CPUS`` when ``cpus`` is not empty."""
    cpus = list(cpus)
    if not cpus:
        return argv
    return ["taskset", "-c", ",".join(str(c) for c in cpus), *argv]


def percentile(histogram_us: Mapping[int, int], p: float) -> float:
    """The ``p``-th percentile [us] of a histogram, with wrk's own rank rule.

    wrk returns the smallest value whose cumulative count reaches
    ``round(p / 100 * n + 0.5)`` (C ``round``: halves away from zero).
    """
    return percentiles(histogram_us, (p,))[0]


def percentiles(histogram_us: Mapping[int, int], ps: Sequence[float]) -> list[float]:
    """`percentile` of each of ``ps`` [us], in one pass over the sorted buckets."""
    n = sum(histogram_us.values())
    if n == 0:
        return [math.nan] * len(ps)
    ranks = sorted((math.floor(p / 100.0 * n + 0.5 + 0.5), i) for i, p in enumerate(ps))
    values = sorted(histogram_us)
    out = [float(values[-1])] * len(ps)
    total, k = 0, 0
    for value in values:
        total += histogram_us[value]
        while k < len(ranks) and total >= ranks[k][0]:
            out[ranks[k][1]] = float(value)
            k += 1
        if k == len(ranks):
            break
    return out


def latency_summary(histogram_us: Mapping[int, int]) -> dict[str, float]:
    """p50, p90, p99, p999, max and mean [ms] of a histogram in microseconds."""
    n = sum(histogram_us.values())
    at = percentiles(histogram_us, tuple(PERCENTILES.values()))
    out = {name: us / 1000.0 for name, us in zip(PERCENTILES, at, strict=True)}
    out["max"] = max(histogram_us) / 1000.0 if n else math.nan
    out["mean"] = sum(v * c for v, c in histogram_us.items()) / n / 1000.0 if n else math.nan
    return out


def merge(results: Iterable[Measurement], summed: Mapping[int, int] | None = None) -> Measurement:
    """Exact merge of runs that ran side by side on several clients.

    Counts, bytes, errors and histogram buckets add up; RPS is the sum of each run's rate;
    percentiles are recomputed from the merged histogram. ``summed``: the runs' histograms
    already added up (as each run ended), taken as the merged one.
    """
    runs = list(results)
    if not runs:
        raise RunnerError("nothing to merge: no load-generator results")
    if len(runs) > 1 and any(not r.histogram_us and r.requests for r in runs):
        raise RunnerError(
            "cannot merge results without histograms (text output); use the JSON reporter"
        )
    hist: dict[int, int] = dict(summed) if summed is not None else {}
    for r in runs if summed is None else ():
        for v, c in r.histogram_us.items():
            hist[v] = hist.get(v, 0) + c
    merged = Measurement(
        duration_s=max(r.duration_s for r in runs),
        requests=sum(r.requests for r in runs),
        bytes=sum(r.bytes for r in runs),
        errors={k: sum(r.errors[k] for r in runs) for k in ERROR_KINDS},
        histogram_us=hist,
        rps=sum(r.rps for r in runs),
    )
    merged.latency_ms = latency_summary(hist) if hist else dict(runs[0].latency_ms)
    return merged
