"""wrk (and wrk2 for constant rates) behind the load-generator contract.

wrk records latency in one bucket per microsecond, and the shipped reporter (``report.lua``)
prints every non-empty bucket, so histograms from several clients merge exactly. wrk2 (``-R``,
open loop) prints its HdrHistogram percentile spectrum instead, parsed into a histogram at the
spectrum's own resolution.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

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

__all__ = [
    "GENERATOR",
    "JSON_MARKER",
    "REPORTER",
    "Wrk",
    "command",
    "no_result_message",
    "parse_json",
    "parse_text",
    "parse_wrk2",
]

# The reporter lives beside the runners package so that it ships with it.
REPORTER = Path(__file__).resolve().parents[1] / "report.lua"
JSON_MARKER = "NGINX_SIZING_JSON "


def command(load: Load, *, binary: str = TOOLS["wrk"], script: str | None = None) -> list[str]:
    """The argv of one wrk run, pinned with ``taskset`` when the load names CPUs.

    Parameters
    ----------
    load : Load
        URL, threads and total open connections (``connections >= threads``), run length and
        socket timeout [s] (wrk accepts whole seconds only), extra headers, CPUs to pin to,
        and a constant rate for wrk2 (``-R``, open loop) [1/s]. Its HTTP version and streams
        are not used (wrk speaks HTTP/1.1 without pipelining).
    binary : str
        The wrk binary (a wrk2 binary when the load has a rate).
    script : str, optional
        Path of a Lua script on the client host.
    """
    if load.threads < 1 or load.connections < load.threads:
        raise RunnerError(
            "wrk needs threads >= 1 and connections >= threads "
            f"(got {load.threads}, {load.connections})"
        )
    argv = [binary, "-t", str(load.threads), "-c", str(load.connections)]
    argv += ["-d", f"{load.duration_s}s"]
    if load.rate_rps is not None:
        argv += ["-R", str(max(1, round(load.rate_rps)))]
    argv += ["--timeout", f"{load.timeout_s}s", "--latency"]
    for header in load.headers:
        argv += ["-H", header]
    if script:
        argv += ["-s", script]
    argv.append(load.url)
    return pin(argv, load.cpus)


def parse_json(text: str) -> Measurement:
    """Parse the reporter's JSON line out of a wrk run's standard output."""
    for line in reversed(text.splitlines()):
        if line.startswith(JSON_MARKER):
            break
    else:
        raise RunnerError(no_result_message(text))
    try:
        doc = json.loads(line[len(JSON_MARKER) :])
        hist = {int(v): int(c) for v, c in doc["histogram_us"]}
        duration_s = doc["duration_us"] / 1e6
        result = Measurement(
            duration_s=duration_s,
            requests=int(doc["requests"]),
            bytes=int(doc["bytes"]),
            errors={k: int(doc["errors"][k]) for k in ERROR_KINDS},
            histogram_us=hist,
            rps=doc["requests"] / duration_s if duration_s > 0 else math.nan,
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise RunnerError(f"wrk reporter output is malformed: {exc}") from None
    result.latency_ms = latency_summary(hist)
    return result


_UNITS_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_UNITS_B = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
_TIME = r"([0-9.]+)(us|ms|s|m|h)"
_DONE = re.compile(r"^\s*(\d+) requests in " + _TIME + r", ([0-9.]+)([KMGT]?B) read", re.M)
_DIST = re.compile(r"^\s*(50|75|90|99|99\.9)%\s+" + _TIME + r"\s*$", re.M)
_MAX = re.compile(r"^\s*Latency\s+\S+\s+\S+\s+" + _TIME, re.M)
_AVG = re.compile(r"^\s*Latency\s+" + _TIME, re.M)
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", re.M)
_STATUS = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_RPS = re.compile(r"^Requests/sec:\s+([0-9.]+)", re.M)


def parse_text(text: str) -> Measurement:
    """Parse wrk's plain output (run with ``--latency``); the result has no histogram."""
    done = _DONE.search(text)
    if not done:
        raise RunnerError(no_result_message(text))
    duration_s = float(done.group(2)) * _UNITS_S[done.group(3)]
    errors = dict.fromkeys(ERROR_KINDS, 0)
    if m := _SOCKET.search(text):
        errors.update(
            zip(("connect", "read", "write", "timeout"), map(int, m.groups()), strict=True)
        )
    if m := _STATUS.search(text):
        errors["status"] = int(m.group(1))
    latency: dict[str, float] = {}
    for m in _DIST.finditer(text):
        latency[
            {"50": "p50", "75": "p75", "90": "p90", "99": "p99", "99.9": "p999"}[m.group(1)]
        ] = float(m.group(2)) * _UNITS_S[m.group(3)] * 1000.0
    if m := _MAX.search(text):
        latency["max"] = float(m.group(1)) * _UNITS_S[m.group(2)] * 1000.0
    if m := _AVG.search(text):
        latency["mean"] = float(m.group(1)) * _UNITS_S[m.group(2)] * 1000.0
    rps = _RPS.search(text)
    return Measurement(
        duration_s=duration_s,
        requests=int(done.group(1)),
        bytes=round(float(done.group(4)) * _UNITS_B[done.group(5)]),
        errors=errors,
        latency_ms=latency,
        rps=float(rps.group(1)) if rps else int(done.group(1)) / duration_s,
    )


_SPECTRUM_ROW = re.compile(r"^\s*([0-9.]+)\s+([0-9.]+)\s+(\d+)\s+(?:[0-9.]+|inf)\s*$")


def parse_wrk2(text: str) -> Measurement:
    """Parse wrk2's output with ``--latency``: its HdrHistogram "Detailed Percentile spectrum".

    The spectrum's cumulative counts become a histogram at the spectrum's own resolution
    (values in ms, 3 decimals, turned into microseconds), so clients still merge by summing.
    """
    _, found, spectrum = text.partition("Detailed Percentile spectrum:")
    if not found:
        raise RunnerError(
            "wrk2 output has no 'Detailed Percentile spectrum' (was it run with --latency?)"
        )
    summary = parse_text(text)
    hist: dict[int, int] = {}
    previous = 0
    for line in spectrum.splitlines():
        if line.lstrip().startswith("#["):
            break
        m = _SPECTRUM_ROW.match(line)
        if not m:
            continue
        value_us, total = round(float(m.group(1)) * 1000), int(m.group(3))
        if total > previous:
            hist[value_us] = hist.get(value_us, 0) + total - previous
            previous = total
    if not hist:
        raise RunnerError("wrk2's percentile spectrum is empty")
    summary.histogram_us = hist
    summary.latency_ms = latency_summary(hist)
    return summary


def no_result_message(text: str) -> str:
    """One line saying why wrk's output holds no result (its first line, or a usage error)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    first = lines[0] if lines else "no output"
    if first.startswith("Usage:"):
        return "wrk rejected its arguments (it printed its usage)"
    return f"wrk gave no result: {first}"


class Wrk(LoadGenerator):
    """wrk over HTTP/1.1 in a closed loop; wrk2 (``-R``) for a constant rate (open loop).

    Closed-loop runs load ``report.lua``, which prints the full 1 us histogram as JSON;
    open-loop runs parse wrk2's percentile spectrum.
    """

    name = "wrk"
    http_versions = ("1.1",)
    modes = (CLOSED, OPEN)

    def tool(self, binaries: Mapping[str, str], mode: str) -> str:
        """``wrk`` for a closed loop, ``wrk2`` for an open one (as the user named them)."""
        return tool_path("wrk2" if mode == OPEN else "wrk", binaries)

    def files(self) -> dict[str, str]:
        """The JSON reporter script."""
        return {"report.lua": REPORTER.read_text()}

    def command(self, load: Load, *, binary: str, workdir: str) -> list[str]:
        """Wrk's argv; the reporter only for measured closed-loop runs."""
        script = f"{workdir}/report.lua" if load.record and load.mode == CLOSED else None
        return command(load, binary=binary, script=script)

    def waits_for_start(self, load: Load) -> bool:
        """Measured closed-loop runs do: ``report.lua`` waits for the start and stamps."""
        return load.record and load.mode == CLOSED

    def parse(self, stdout: str, load: Load) -> Measurement:
        """The reporter's JSON (closed loop) or wrk2's spectrum (open loop)."""
        return parse_wrk2(stdout) if load.mode == OPEN else parse_json(stdout)

    def warmup_problem(self, stdout: str, stderr: str, code: int) -> str | None:
        """A warm-up failed when wrk exited non-zero without its summary."""
        if code == 0 or "requests in" in stdout:
            return None
        return self.no_result(stderr or stdout)

    def no_result(self, text: str) -> str:
        """The first line of wrk's output, or that it printed its usage."""
        return no_result_message(text).removeprefix("wrk gave no result: ")


GENERATOR = Wrk()
