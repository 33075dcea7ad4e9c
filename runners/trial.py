"""Judging one trial: its row of the trial table from a measurement, valid or not, and why."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runners.loadgen.base import ERROR_KINDS, Measurement


def trial_row(
    ids: Mapping[str, Any],
    scenario: Any,
    m: Measurement,
    *,
    vcpus: int,
    threads: int,
    connections: int,
    rate_rps: float | None,
    warmup_s: float,
    client_cpu_pct: float,
    server_cpu_pct: float,
    sla_p99_ms: float,
    max_error_rate: float,
    saturated: Sequence[str] = (),
    size_problem: Callable[[float], str | None] | None = None,
) -> dict[str, Any]:
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
    saturated : sequence of str
        One note per saturated load generator.
    size_problem : callable, optional
        Bytes per response -> why they do not fit the scenario, or None.

    A trial is invalid with no responses, errors above ``max_error_rate``, a wrong response
    size, a saturated load generator, or (constant rate) under 95% of the rate asked.
    """
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
        "vcpus": vcpus,
        "scenario": scenario.name,
        "protocol": scenario.protocol,
        "file_bytes": scenario.file_bytes,
        "gzip": scenario.gzip,
        "keepalive": scenario.keepalive,
        "tls_resumption": scenario.tls_resumption,
        "jwt": scenario.jwt,
        "upstreams": scenario.upstreams if scenario.proxied else None,
        "threads": threads,
        "connections": connections,
        "rate_rps": rate_rps,
        "warmup_s": warmup_s,
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
        "client_cpu_pct": client_cpu_pct,
        "server_cpu_pct": server_cpu_pct,
        "sla_p99_ms": sla_p99_ms,
        "meets_sla": valid and p99 <= sla_p99_ms,
        "valid": valid,
        "invalid_reason": "; ".join(reasons),
    }


def invalidate(row: dict[str, Any], reasons: Sequence[str]) -> None:
    """Add ``reasons`` to a judged row: it becomes invalid and no longer meets its SLA."""
    if not reasons:
        return
    had = [r for r in str(row.get("invalid_reason") or "").split("; ") if r]
    row["invalid_reason"] = "; ".join([*had, *reasons])
    row["valid"] = False
    row["meets_sla"] = False
