"""Judging one trial: its row of the trial table from a measurement, valid or not, and why."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runners.loadgen.base import ERROR_KINDS, Measurement
from trialtable.jsonvalue import JsonObject, JsonValue

if TYPE_CHECKING:
    from runners.scenario import Scenario


@dataclass(frozen=True)
class TrialSetting:
    """The setting one trial ran at.

    Attributes
    ----------
    vcpus, threads, connections : int
        Server vCPUs, load-generator threads and open connections (all clients).
    rate_rps : float or None
        The constant rate asked (open loop) [1/s]; None for a closed loop.
    warmup_s : float
        Warm-up before the measurement [s].
    """

    vcpus: int
    threads: int
    connections: int
    rate_rps: float | None
    warmup_s: float


@dataclass(frozen=True)
class CpuUse:
    """How busy the hosts were during one trial.

    Attributes
    ----------
    client_cpu_pct, server_cpu_pct : float
        CPU used by the load generator (the busiest client) and by the server [%].
    saturated : sequence of str
        One note per saturated load generator.
    """

    client_cpu_pct: float
    server_cpu_pct: float
    saturated: Sequence[str] = ()


@dataclass(frozen=True)
class Judging:
    """What a trial must meet to count and to pass.

    Attributes
    ----------
    sla_p99_ms : float
        The SLA on p99 latency [ms].
    max_error_rate : float
        The largest fraction of errors a valid trial may have.
    size_problem : callable, optional
        Bytes per response -> why they do not fit the scenario, or None.
    """

    sla_p99_ms: float
    max_error_rate: float
    size_problem: Callable[[float], str | None] | None = None


def trial_row(
    ids: Mapping[str, JsonValue],
    scenario: Scenario,
    m: Measurement,
    setting: TrialSetting,
    cpu: CpuUse,
    judging: Judging,
) -> JsonObject:
    """One row of the trial table from a measurement, judged valid or not.

    Parameters
    ----------
    ids : mapping
        The identity and placement columns (``run_id``, ``trial_id``, ``started_at``, ``kind``,
        ``simulated``, hosts, ``instance_label``, ``arch``, ``cpu_model``, CPUs, placement).
    scenario : runners.scenario.Scenario
        What was served.
    m : runners.loadgen.Measurement
        The (merged) measurement.
    setting : TrialSetting
        What the trial ran at.
    cpu : CpuUse
        How busy client and server were, and which load generators saturated.
    judging : Judging
        The SLA, the error bound and the response-size check.

    A trial is invalid with no responses, errors above ``max_error_rate``, a wrong response
    size, a saturated load generator, or (constant rate) under 95% of the rate asked.
    """
    rate_rps, max_error_rate = setting.rate_rps, judging.max_error_rate
    size_problem, saturated, sla_p99_ms = judging.size_problem, cpu.saturated, judging.sla_p99_ms
    per_response = m.bytes / m.requests if m.requests else math.nan
    error_rate = m.error_count / max(m.requests, 1)
    reasons = []
    if m.requests == 0:
        reasons.append("no responses")
    if error_rate > max_error_rate:
        reasons.append(f"errors {error_rate:.2%} > {max_error_rate:.2%}")
    if m.requests and size_problem is not None and (problem := size_problem(per_response)):
        reasons.append(problem)
    if saturated:
        reasons.append("load generator saturated: " + ", ".join(saturated))
    if rate_rps is not None and m.rps < 0.95 * rate_rps:
        reasons.append(f"achieved {m.rps:.0f} of the {rate_rps:.0f} rps asked")
    p99 = m.latency_ms.get("p99", math.nan)
    valid = not reasons
    return {
        **ids,
        "vcpus": setting.vcpus,
        "scenario": scenario.name,
        "protocol": scenario.protocol,
        "file_bytes": scenario.file_bytes,
        "gzip": scenario.gzip,
        "keepalive": scenario.keepalive,
        "tls_resumption": scenario.tls_resumption,
        "jwt": scenario.jwt,
        "upstreams": scenario.upstreams if scenario.proxied else None,
        "threads": setting.threads,
        "connections": setting.connections,
        "rate_rps": rate_rps,
        "warmup_s": setting.warmup_s,
        "duration_s": m.duration_s,
        "requests": m.requests,
        "rps": m.rps,
        "bytes_per_s": m.bytes_per_s,
        "throughput_gbps": m.bytes_per_s * 8 / 1e9,
        "bytes_per_response": per_response,
        **{f"errors_{k}": m.errors[k] for k in ERROR_KINDS},
        "error_rate": error_rate,
        "latency_p50_ms": m.latency_ms.get("p50"),
        "latency_p90_ms": m.latency_ms.get("p90"),
        "latency_p99_ms": p99,
        "latency_p999_ms": m.latency_ms.get("p999"),
        "latency_max_ms": m.latency_ms.get("max"),
        "latency_mean_ms": m.latency_ms.get("mean"),
        "client_cpu_pct": cpu.client_cpu_pct,
        "server_cpu_pct": cpu.server_cpu_pct,
        "sla_p99_ms": sla_p99_ms,
        "meets_sla": valid and p99 <= sla_p99_ms,
        "valid": valid,
        "invalid_reason": "; ".join(reasons),
    }


def invalidate(row: JsonObject, reasons: Sequence[str]) -> None:
    """Add ``reasons`` to a judged row: it becomes invalid and no longer meets its SLA."""
    if not reasons:
        return
    had = [r for r in str(row.get("invalid_reason") or "").split("; ") if r]
    row["invalid_reason"] = "; ".join([*had, *reasons])
    row["valid"] = False
    row["meets_sla"] = False
