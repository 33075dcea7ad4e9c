"""Capacity of one instance type for one workload, with what it rests on.

capacity = min(reference curve(vCPUs) x family x scenario x protocol factors, derated to the
p99 SLA by a latency model;  network bandwidth / bytes per response)

Imports numpy and the standard library only: this is the interactive ``recommend`` path.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from sizing import curves
from sizing.catalog import Instance
from sizing.errors import InputError
from sizing.paths import ESTIMATES_DIR, FITS_PATH, REFERENCE_DIR

FACTORS_PATH = ESTIMATES_DIR / "factors.csv"
CLAIMS_PATH = REFERENCE_DIR / "relative-claims.csv"
SCENARIOS = ("static", "reverse_proxy", "api_gateway")
PROTOCOLS = ("http", "https")

#: Model constants that are estimates, each with its reasoning (printed with the answer).
ESTIMATES: dict[str, tuple[float, str]] = {
    "base_latency_ms": (
        0.5,
        "p99 of everything but NGINX's queue (network round trip in one zone, client and "
        "kernel stacks): 0.5 ms",
    ),
    "response_header_bytes": (
        250.0,
        "HTTP response status line and headers of a static file from NGINX: about 250 B",
    ),
    "segment_overhead_bytes": (
        66.0,
        "Ethernet (14), IPv4 (20) and TCP with timestamps (32) per segment of 1448 B",
    ),
    "tls_record_overhead_bytes": (
        29.0,
        "TLS 1.2/1.3 AES-GCM record header, nonce and tag per 16 KiB record",
    ),
    "reference_link_bound_fraction": (
        0.85,
        "a reference plateau at >= 85% of the 80 Gbps test link is taken as the link, not the CPU",
    ),
}
REFERENCE_LINK_GBPS = 80.0  # seed 004: 2x Intel XL710 40 GbE
MSS_BYTES = 1448.0
TLS_RECORD_BYTES = 16384.0


@dataclass(frozen=True)
class Workload:
    """What one request costs: scenario, protocol, response size and the p99 SLA.

    Attributes
    ----------
    scenario : str
        ``static``, ``reverse_proxy`` or ``api_gateway``.
    protocol : str
        ``http`` or ``https``.
    file_bytes : int
        Response body size [B].
    sla_p99_ms : float
        p99 latency the fleet must stay under [ms].
    """

    scenario: str = "static"
    protocol: str = "https"
    file_bytes: int = 1024
    sla_p99_ms: float = 5.0

    def __post_init__(self) -> None:
        if self.scenario not in SCENARIOS:
            raise InputError(
                f"unknown scenario {self.scenario!r}; expected one of: {', '.join(SCENARIOS)}"
            )
        if self.protocol not in PROTOCOLS:
            raise InputError(
                f"unknown protocol {self.protocol!r}; expected one of: {', '.join(PROTOCOLS)}"
            )
        if self.file_bytes < 0:
            raise InputError(f"file size must be >= 0 bytes, got {self.file_bytes}")
        if not (math.isfinite(self.sla_p99_ms) and self.sla_p99_ms > 0):
            raise InputError(f"SLA p99 must be a positive duration, got {self.sla_p99_ms} ms")


@dataclass
class Capacity:
    """Capacity of one instance for one workload and the constraint that binds."""

    instance: Instance
    capacity_rps: float
    cpu_peak_rps: float
    cpu_sla_rps: float
    network_rps: float
    max_utilization: float
    binding_constraint: str
    factor: float
    factor_low: float
    factor_high: float
    basis: list[str] = field(default_factory=list)
    rel_sd: float = 0.0
    measured: str = ""

    def quantile(self, p: float) -> float:
        """Capacity [1/s] at probability ``p``: log-normal CPU capacity, network capped."""
        return min(self.cpu_sla_rps * math.exp(_normal_quantile(p) * self.rel_sd), self.network_rps)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Central ``level`` interval of the capacity [1/s]."""
        return self.quantile(0.5 - level / 2), self.quantile(0.5 + level / 2)


@cache
def _normal_quantile(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


# ----------------------------------------------------------------------------- factors


@dataclass(frozen=True)
class Factor:
    """A resolved multiplicative factor with its range and provenance chain."""

    factor_id: str
    value: float
    low: float
    high: float
    kind: str
    explanation: str


@cache
def _claims(path: Path = CLAIMS_PATH) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        return {r["claim_id"]: r for r in csv.DictReader(fh)}


@cache
def load_factors(path: Path = FACTORS_PATH) -> dict[str, Factor]:
    """Resolve the editable factor table into values, ranges and provenance.

    Each row is either an ``estimate`` (``multiplier`` on its ``base``) or a
    ``published_ratio`` (a claim of the relative-claims table, applied to its ``base`` in the
    direction the claim runs).

    Raises
    ------
    InputError
        For an unknown base or claim, a claim that does not relate the row to its base, a
        cycle, or a bad number; the message names the file, line and field.
    """
    claims = _claims()
    try:
        with path.open(newline="") as fh:
            rows = {r["factor_id"]: (i, r) for i, r in enumerate(csv.DictReader(fh), start=2)}
    except FileNotFoundError:
        raise InputError(f"factor table {path} does not exist") from None
    resolved: dict[str, Factor] = {}

    def num(line: int, row: dict[str, str], name: str) -> float:
        try:
            v = float(row[name])
        except (TypeError, ValueError):
            raise InputError(f"{path}:{line}: field {name!r}: expected a positive number") from None
        if not (math.isfinite(v) and v > 0):
            raise InputError(f"{path}:{line}: field {name!r}: expected a positive number")
        return v

    def resolve(fid: str, stack: tuple[str, ...]) -> Factor:
        if fid == "reference-cpu":
            return Factor(
                fid, 1.0, 1.0, 1.0, "reference", "one seed-004 CPU (Xeon E5-2699 v3 core)"
            )
        if fid in resolved:
            return resolved[fid]
        if fid in stack:
            raise InputError(f"{path}: factor cycle {' -> '.join((*stack, fid))}")
        if fid not in rows:
            raise InputError(f"{path}: unknown base factor {fid!r} (after {stack[-1]})")
        line, row = rows[fid]
        base = resolve(row["base"], (*stack, fid))
        kind = row["kind"]
        if kind == "estimate":
            m, lo, hi = (
                num(line, row, c) for c in ("multiplier", "multiplier_low", "multiplier_high")
            )
            how = f"x{m:g} (estimate, {lo:g}-{hi:g})"
        elif kind == "published_ratio":
            cid = row["claim_id"]
            if cid not in claims:
                raise InputError(f"{path}:{line}: field 'claim_id': unknown claim {cid!r}")
            c = claims[cid]
            rlo, rhi = float(c["ratio_low"]), float(c["ratio_high"])
            rmid = math.sqrt(rlo * rhi)
            me, of = fid.split(":", 1)[1], row["base"].split(":", 1)[1]
            if (c["subject"], c["baseline"]) == (me, of):
                m, lo, hi = rmid, rlo, rhi
            elif (c["subject"], c["baseline"]) == (of, me):
                m, lo, hi = 1 / rmid, 1 / rhi, 1 / rlo
            else:
                raise InputError(
                    f"{path}:{line}: claim {cid} compares {c['subject']} with {c['baseline']}, "
                    f"not {me} with {of}"
                )
            how = f"x{m:.3g} ({lo:.3g}-{hi:.3g}, {c['source'].split(' ', 1)[0]} claim {cid})"
        else:
            raise InputError(
                f"{path}:{line}: field 'kind': expected estimate or published_ratio, got {kind!r}"
            )
        chain = (
            how
            if base.factor_id == "reference-cpu"
            else f"{how} of {base.factor_id} = {base.explanation}"
        )
        f = Factor(fid, base.value * m, base.low * lo, base.high * hi, kind, chain)
        resolved[fid] = f
        return f

    for fid in rows:
        resolve(fid, ())
    return resolved


def family_factor(inst: Instance, factors: dict[str, Factor]) -> tuple[Factor, bool]:
    """Per-vCPU factor of an instance's family, and whether it fell back to its arch."""
    f = factors.get(f"family:{inst.family}")
    if f is not None:
        return f, False
    return factors[f"arch:{inst.arch}"], True


# ----------------------------------------------------------------------------- reference curves


@cache
def load_fits(path: Path = FITS_PATH) -> dict[str, Any]:
    """Precomputed reference fits (``python -m sizing precompute`` writes them)."""
    try:
        return dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise InputError(
            f"precomputed fits {path} are missing; run: python -m sizing precompute"
        ) from None


def _cpu_curve(series: dict[str, Any], x: np.ndarray) -> np.ndarray:
    params = dict(series["params"])
    if series.get("link_bound"):
        # The reference plateau is the test link; the CPU could go on rising.
        params["p"] = math.inf
    return curves.evaluate(series["model"], params, x)


def reference_rps(vcpus: int, protocol: str, file_bytes: float) -> tuple[float, int, list[str]]:
    """Reference RPS of ``vcpus`` seed-004 CPUs for a response size, from the fitted curves.

    The per-request cost ``1/rps`` is interpolated linearly in bytes between the published
    sizes (0, 1, 10, 100 KB) and extrapolated past 100 KB along the last segment. NGINX may run
    fewer workers than CPUs, so the capacity at ``vcpus`` is the best of 1..vcpus workers.

    Returns
    -------
    rps : float
        Requests per second [1/s].
    workers : int
        Workers at which that rate is reached.
    notes : list of str
        Provenance of the curves used.
    """
    fits = load_fits()
    series = sorted(
        (
            s
            for s in fits["series"]
            if s["metric"] == "requests_per_s" and s["protocol"] == protocol
        ),
        key=lambda s: s["file_bytes"],
    )
    sizes = np.array([s["file_bytes"] for s in series], dtype=float)
    w = np.arange(1, max(int(vcpus), 1) + 1, dtype=float)
    i = int(np.clip(np.searchsorted(sizes, file_bytes) - 1, 0, len(sizes) - 2))
    t = (file_bytes - sizes[i]) / (sizes[i + 1] - sizes[i])
    # Only the two neighbouring sizes matter; cost per request is linear in bytes between them.
    lo_cost, hi_cost = (1.0 / _cpu_curve(series[j], w) for j in (i, i + 1))
    per_req = lo_cost + t * (hi_cost - lo_cost)
    rate = 1.0 / per_req
    best = int(np.argmax(rate))
    used = [series[i], series[i + 1]] if 0 < t < 1 or t > 1 else [series[i + (t >= 1)]]
    notes = []
    for s in used:
        extra = ", reference link plateau removed" if s.get("link_bound") else ""
        notes.append(
            f"{s['model']} fit of {s['source']} ({protocol}, {s['file_size']}; "
            f"MAPE {s['mape_pct']:.1f}%{extra})"
        )
    if t > 1:
        notes.append(f"estimate: {file_bytes:g} B extrapolated past the largest published size")
    elif 0 < t < 1:
        notes.append(
            f"{file_bytes:g} B interpolated between published sizes (cost linear in bytes)"
        )
    top = max(s["x_range"][1] for s in used)
    if best + 1 > top:
        notes.append(f"estimate: {best + 1} workers extrapolated past the {top:g} CPUs measured")
    return float(rate[best]), best + 1, notes


# ----------------------------------------------------------------------------- limits


def bytes_per_response(file_bytes: float, protocol: str) -> float:
    """Bytes on the wire per response, headers and framing included [B] (an estimate)."""
    payload = file_bytes + ESTIMATES["response_header_bytes"][0]
    if protocol == "https":
        payload += ESTIMATES["tls_record_overhead_bytes"][0] * max(
            1.0, math.ceil(payload / TLS_RECORD_BYTES)
        )
    segments = max(1.0, math.ceil(payload / MSS_BYTES))
    return payload + segments * ESTIMATES["segment_overhead_bytes"][0]


def sla_utilization(per_worker_rps: float, sla_p99_ms: float) -> float:
    """Highest utilization at which p99 stays under the SLA, in an M/M/1-per-worker model.

    Each worker serves its share of requests at rate ``mu``; in M/M/1 the sojourn time is
    exponential with rate ``mu - lambda``, so ``p99 = base + ln(100) / (mu (1 - rho))``.
    Solving for ``rho`` at ``p99 = SLA`` gives the cap (0 when even an idle worker misses it).

    Parameters
    ----------
    per_worker_rps : float
        Peak rate of one worker [1/s].
    sla_p99_ms : float
        SLA [ms].
    """
    base = ESTIMATES["base_latency_ms"][0]
    budget_s = (sla_p99_ms - base) / 1000.0
    if budget_s <= 0 or per_worker_rps <= 0:
        return 0.0
    return max(0.0, 1.0 - math.log(100.0) / (per_worker_rps * budget_s))


def instance_capacity(inst: Instance, work: Workload, evidence: Any = None) -> Capacity:
    """Capacity of one instance under the SLA, the binding constraint, and its basis.

    Parameters
    ----------
    inst : Instance
        The instance type.
    work : Workload
        What it serves.
    evidence : sizing.measured.Evidence, optional
        Calibrations from measured runs: a family with its own runs takes its capacity from
        them; other families with a factor row take the measured level through the relative
        factors.

    Notes
    -----
    ``rel_sd`` is the log-scale standard deviation of the CPU capacity: from the factor ranges
    (read as 95% ranges, an estimate) for the model, from the fit or the repeated trials for
    measurements.
    """
    factors = load_factors()
    fam, fallback = family_factor(inst, factors)
    scen = factors[f"scenario:{work.scenario}"]
    proto = factors[f"protocol:{work.protocol}"]
    ref_rps, workers, notes = reference_rps(inst.vcpus, work.protocol, work.file_bytes)
    factor = fam.value * scen.value * proto.value
    cpu_peak = ref_rps * factor
    rho = sla_utilization(cpu_peak / workers, work.sla_p99_ms)
    cpu_sla = cpu_peak * rho
    factor_low = fam.low * scen.low * proto.low
    factor_high = fam.high * scen.high * proto.high
    rel_sd = max(math.log(factor_high / factor), math.log(factor / factor_low), 0.0) / 1.96
    measured_lines: list[str] = []
    measured = ""
    if evidence is not None:
        cal = evidence.for_family(inst.family)
        if cal is not None:
            from sizing.measured import measured_capacity

            cpu_sla, rel_sd, line = measured_capacity(cal, inst, cpu_sla)
            measured_lines = [cal.describe(), line]
            measured = "own"
        elif evidence.carry_k is not None and not fallback:
            cpu_sla *= evidence.carry_k
            rel_sd = math.sqrt(rel_sd**2 + evidence.carry_sd**2)
            src = evidence.carry_from
            measured_lines = [
                f"measured level carried through the relative factors: x{evidence.carry_k:.2f} "
                f"of the model, from runs {', '.join(evidence.runs)} on "
                + ", ".join(sorted({c.family for c in src}))
                + (" (SIMULATED)" if evidence.simulated else "")
            ]
            measured = "carried"
    wire = bytes_per_response(work.file_bytes, work.protocol)
    net = float(curves.bandwidth_cap_rps(inst.network_gbps, wire))
    capacity = min(cpu_sla, net)
    if cpu_sla <= 0 or (rho <= 0 and measured != "own"):
        binding = "latency"
    else:
        binding = "network" if net < cpu_sla else "cpu"
    basis = [
        *measured_lines,
        *notes,
        f"{fam.factor_id} {fam.value:.3g}/vCPU: {fam.explanation}"
        + (
            f" (estimate: no row for family {inst.family}, {inst.arch} default)" if fallback else ""
        ),
    ]
    if scen.value != 1.0:
        basis.append(f"{scen.factor_id} x{scen.value:.3g}: {scen.explanation}")
    if proto.value != 1.0:
        basis.append(f"{proto.factor_id} x{proto.value:.3g}: {proto.explanation}")
    if measured != "own":
        basis.append(
            f"estimate: SLA derating to {rho:.1%} of peak (M/M/1 per worker, "
            f"{workers} workers, base latency {ESTIMATES['base_latency_ms'][0]:g} ms)"
        )
    basis.append(
        f"network {inst.network_gbps:g} Gbps"
        + (" (baseline of an 'up to' size)" if inst.network_burst else "")
        + f" / {wire:.0f} B per response (estimate of framing) = {net:,.0f} RPS"
    )
    basis.append(f"catalog {inst.instance_type}: {inst.source} ({inst.source_date})")
    return Capacity(
        instance=inst,
        capacity_rps=capacity,
        cpu_peak_rps=cpu_peak,
        cpu_sla_rps=cpu_sla,
        network_rps=net,
        max_utilization=rho,
        binding_constraint=binding,
        factor=factor,
        factor_low=factor_low,
        factor_high=factor_high,
        basis=basis,
        rel_sd=rel_sd,
        measured=measured,
    )
