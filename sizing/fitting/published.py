"""Published family comparisons recomputed from the catalog and the capacity model.

Seeds 000 and 002 publish ratios between instance families (performance, and performance per
dollar). Recomputing them from this package's own capacity model and today's catalog prices
shows which of the published figures the model reproduces and how prices moved since.
"""

from __future__ import annotations

import csv
from typing import TypedDict

from sizing.catalog.load import Instance
from sizing.model.capacity import SCENARIOS, Workload, instance_capacity
from sizing.paths import REFERENCE_DIR

# AWS size names in the seeds' "L/XL/2XL/4XL" notation, in vCPUs.
AWS_SIZES = {"L": 2, "XL": 4, "2XL": 8, "4XL": 16}
#: Published ratios that the model uses as inputs (everything else it predicts).
INPUTS = {
    "000-perf-t2a-vs-n2": "input: fits NGINX's hyper-thread gain (sizing.model.platforms)",
    "002-apigw-vs-rp": "input: the API gateway's extra cost per request (sizing.fitting.fits)",
    "004-ecc-vs-rsa": "input: ECDSA P-256 handshake cost from RSA 2048's (sizing.fitting.fits)",
    "004-openssl-102-vs-101": "input: full handshakes on a current OpenSSL (sizing.model.capacity)",
}
METRICS = {
    "requests_per_s": "performance",
    "requests_per_s_under_sla": "performance",
    "requests_per_s_per_usd": "price-performance",
}


def _sizes(text: str) -> list[int]:
    text = text.strip()
    if text.endswith("vCPU"):
        return [int(text.split()[0])]
    return [AWS_SIZES[s] for s in text.split("/") if s in AWS_SIZES]


def _seed_prices() -> dict[str, float]:
    """Hourly prices of the VMs seed 000 tested, as it published them [USD/h]."""
    with (REFERENCE_DIR / "gcp-32vcpu-test-vms.csv").open(newline="") as fh:
        return {r["instance_type"]: float(r["price_usd_per_hour"]) for r in csv.DictReader(fh)}


class SizeRatio(TypedDict):
    """One size of a claim: its vCPUs and the recomputed ratio [1]."""

    vcpus: int
    ratio: float


class RecomputedClaim(TypedDict):
    """A published family comparison next to the same comparison recomputed by the model."""

    claim_id: str
    comparison: str
    kind: str
    scenario: str
    sizes: str
    published_low: float
    published_high: float
    recomputed_low: float
    recomputed_high: float
    recomputed_cpu_only: float
    per_size: list[SizeRatio]
    role: str
    source: str


def recompute_claims(
    instances: list[Instance], region: str | None = None, *, seed_prices: bool = False
) -> list[RecomputedClaim]:
    """Each family comparison of ``relative-claims.csv`` next to its recomputed value.

    Parameters
    ----------
    instances : list of Instance
        The catalog to price and size with.
    region : str, optional
        Only instances of this region (default: the first region that has both families).
    seed_prices : bool
        Price-performance with the prices a seed published for the VMs it tested (seed 000's
        test table) instead of today's catalog prices: the claim as it was measured, so that
        only the performance ratio is predicted.

    Returns
    -------
    list of dict
        ``claim_id``, ``comparison``, ``kind`` (performance or price-performance),
        ``published_low``/``published_high``, ``recomputed_low``/``recomputed_high`` over the
        sizes the claim covers, ``recomputed_cpu_only`` (the same without the network cap),
        ``per_size`` (vCPUs and ratio), ``role`` (``predicted`` or why it is an input),
        ``sizes`` and ``source``. Claims whose families or sizes are
        not in the catalog are left out.
    """
    with (REFERENCE_DIR / "relative-claims.csv").open(newline="") as fh:
        claims = list(csv.DictReader(fh))
    published = _seed_prices() if seed_prices else {}
    out: list[RecomputedClaim] = []
    for c in claims:
        kind = METRICS.get(c["metric"])
        if kind is None or c["scenario"] not in SCENARIOS or not c["file_bytes"]:
            continue
        sla = float(c["sla_p99_ms"]) if c["sla_p99_ms"] else 5.0
        # Seed 000 served its 53 KB file gzip-compressed in every test.
        gzip = 1.0 if c["source"].startswith("000_") else 0.0
        work = Workload(c["scenario"], c["protocol"], int(c["file_bytes"]), sla, gzip=gzip)
        ratios: list[float] = []
        cpu_ratios: list[float] = []
        per_size: list[SizeRatio] = []
        for v in _sizes(c["sizes"]):
            subject = _pick(instances, c["subject"], v, region)
            baseline = _pick(instances, c["baseline"], v, region)
            if subject is None or baseline is None:
                continue
            pair = [subject, baseline]
            found = [instance_capacity(i, work) for i in pair]
            price = (
                [1.0, 1.0]
                if kind == "performance"
                else [
                    published.get(i.instance_type, i.price_usd_hour)
                    if c["source"].startswith("000_")
                    else i.price_usd_hour
                    for i in pair
                ]
            )
            caps = [f.capacity_rps / p for f, p in zip(found, price, strict=True)]
            cpus = [f.cpu_sla_rps / p for f, p in zip(found, price, strict=True)]
            ratios.append(caps[0] / caps[1])
            cpu_ratios.append(cpus[0] / cpus[1])
            per_size.append({"vcpus": v, "ratio": caps[0] / caps[1]})
        if not ratios:
            continue
        out.append(
            {
                "claim_id": c["claim_id"],
                "comparison": f"{c['subject']} / {c['baseline']}",
                "kind": kind,
                "scenario": c["scenario"],
                "sizes": c["sizes"],
                "published_low": float(c["ratio_low"]),
                "published_high": float(c["ratio_high"]),
                "recomputed_low": min(ratios),
                "recomputed_high": max(ratios),
                "recomputed_cpu_only": sum(cpu_ratios) / len(cpu_ratios),
                "per_size": per_size,
                "role": INPUTS.get(c["claim_id"], "predicted"),
                "source": c["source"],
            }
        )
    return out


def _pick(
    instances: list[Instance], family: str, vcpus: int, region: str | None
) -> Instance | None:
    for i in instances:
        if i.family == family and i.vcpus == vcpus and (region is None or i.region == region):
            return i
    return None
