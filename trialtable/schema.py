"""The trial table's columns: name, type, unit and meaning, in the order they are stored.

One row per trial, units in the column names. Every writer (`trialtable.folder`) and reader
(`trialtable.read`) takes the columns from here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One column of the trial table.

    Attributes
    ----------
    name : str
        The column's name (units in the name where it has one).
    kind : str
        ``str``, ``int``, ``float`` or ``bool`` (stored as ``true``/``false``).
    unit : str
        The unit, or ``""`` for none.
    meaning : str
        What the value is.
    """

    name: str
    kind: str
    unit: str
    meaning: str


COLUMNS: tuple[Column, ...] = (
    Column("run_id", "str", "", "the run (also its folder name)"),
    Column("trial_id", "str", "", "RUN_ID-NNNN, unique in the run, in the order run"),
    Column("started_at", "str", "UTC", "when the measured part started (ISO 8601, Z)"),
    Column("kind", "str", "", "sweep, search-ramp, search-refine, search-confirm or grid"),
    Column("simulated", "bool", "", "the simulated server, not a measurement"),
    Column("server_host", "str", "", "the server host as given (local, netns:NAME, user@host)"),
    Column("client_hosts", "str", "", "the load-generator hosts, space-separated"),
    Column("clients", "int", "", "number of load-generator hosts"),
    Column("instance_label", "str", "", "instance type or free label given by the user"),
    Column("arch", "str", "", "the server's machine architecture (uname -m)"),
    Column("cpu_model", "str", "", "the server's CPU model name"),
    Column("vcpus", "int", "vCPU", "nginx workers, one pinned CPU each"),
    Column("server_cpus", "str", "", "the CPUs the workers are pinned to, space-separated"),
    Column("client_cpus", "str", "", "each client's CPUs (comma lists, ';' between clients)"),
    Column("placement", "str", "", "pinned apart, shared with nginx, separate host, simulated"),
    Column("scenario", "str", "", "static, cps, reverse_proxy, api_gateway or throughput"),
    Column("protocol", "str", "", "http or https"),
    Column("http_version", "str", "", "HTTP version the clients spoke: 1.1 or 2"),
    Column("load_generator", "str", "", "wrk, wrk2, h2load, or sim"),
    Column("file_bytes", "int", "B", "response body size"),
    Column("gzip", "bool", "", "responses compressed on the fly"),
    Column("keepalive", "bool", "", "client connections reused"),
    Column("tls_resumption", "bool", "", "HTTPS sessions resumable (tickets and session cache)"),
    Column("jwt", "bool", "", "every request carried an RS256 JWT that nginx checked"),
    Column("upstreams", "int", "", "upstream file servers behind a proxy scenario"),
    Column("threads", "int", "", "load-generator threads per client"),
    Column("connections", "int", "", "open connections per client"),
    Column("streams", "int", "", "concurrent streams per connection (HTTP/2)"),
    Column("rate_rps", "float", "1/s", "constant rate asked (open loop), empty when closed"),
    Column("warmup_s", "float", "s", "discarded load before the trial"),
    Column("duration_s", "float", "s", "measured duration"),
    Column("requests", "int", "", "completed requests, all clients"),
    Column("rps", "float", "1/s", "requests per second, all clients"),
    Column("bytes_per_s", "float", "B/s", "bytes read per second, headers included"),
    Column("throughput_gbps", "float", "Gbit/s", "bytes_per_s in gigabits per second"),
    Column("bytes_per_response", "float", "B", "bytes read per response, headers included"),
    Column("errors_connect", "int", "", "connect errors"),
    Column("errors_read", "int", "", "read errors"),
    Column("errors_write", "int", "", "write errors"),
    Column("errors_status", "int", "", "responses with a status outside 2xx/3xx"),
    Column("errors_timeout", "int", "", "requests over the socket timeout"),
    Column("error_rate", "float", "", "errors per completed request"),
    Column("latency_p50_ms", "float", "ms", "median latency, from the merged histogram"),
    Column("latency_p90_ms", "float", "ms", "90th percentile latency"),
    Column("latency_p99_ms", "float", "ms", "99th percentile latency"),
    Column("latency_p999_ms", "float", "ms", "99.9th percentile latency"),
    Column("latency_max_ms", "float", "ms", "largest latency"),
    Column("latency_mean_ms", "float", "ms", "mean latency"),
    Column("client_cpu_pct", "float", "%", "CPU of the busiest client (100 = one CPU)"),
    Column("server_cpu_pct", "float", "%", "CPU of nginx's master and workers (100 = one CPU)"),
    Column("sla_p99_ms", "float", "ms", "the p99 the trial had to meet"),
    Column("meets_sla", "bool", "", "valid and p99 within the SLA"),
    Column("valid", "bool", "", "no invalidating problem (see invalid_reason)"),
    Column("invalid_reason", "str", "", "why the trial is invalid, '; '-separated"),
)
TRIAL_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS)
BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
# Columns added after the first version, and the value older rows mean by their absence.
ADDED_DEFAULTS: dict[str, str] = {
    "http_version": "1.1",
    "load_generator": "wrk",
    "streams": "1",
    "tls_resumption": "false",
    "jwt": "false",
}
TRUE, FALSE = "true", "false"

SCENARIOS = ("static", "cps", "reverse_proxy", "api_gateway", "throughput")
PROTOCOLS = ("http", "https")
HTTP_VERSIONS = ("1.1", "2")


def utc_now() -> str:
    """The current time as ``YYYY-mm-ddTHH:MM:SSZ`` (the table's timestamps)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def majority_passed(passed: int, total: int) -> bool:
    """Whether a batch of confirmation trials counts as passed: more than half of it."""
    return total > 0 and passed * 2 > total
