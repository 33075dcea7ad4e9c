"""Workers' scaling past the seed's 36 workers: the stand-in's table and its use."""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from sizing.catalog.load import load_catalog
from sizing.model import capacity
from sizing.workload.value import Workload

MEASUREMENTS = Path(__file__).resolve().parents[1] / "data" / "cloud" / "measurements.csv"
ARM = ("graviton", "axion", "altra")


def _family(row: dict[str, str]) -> tuple[str, str]:
    name = row["instance_type"]
    if row["provider"] == "aws":
        return row["provider"], name.split(".")[0]
    return row["provider"], "-".join(name.split("-")[:2])


def _ratios() -> dict[int, list[float]]:
    """Server CPU per request at the family's 32-48 vCPU size over that at n vCPUs (x86)."""
    sizes: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    with MEASUREMENTS.open(newline="") as f:
        for r in csv.DictReader(f):
            if (
                r["source_id"] == "sparecores-static-web"
                and r["body_bytes"] == "1024"
                and r["metric"] == "cpu_us_per_request"
                and "metal" not in r["instance_type"]
                and not r["cpu_platform"].startswith(ARM)
            ):
                sizes[_family(r)][int(r["vcpus"])].append(float(r["value"]))
    out: dict[int, list[float]] = defaultdict(list)
    for by_n in sizes.values():
        anchors = [n for n in by_n if 32 <= n <= 48]
        if not anchors:
            continue
        ref = statistics.median(by_n[min(anchors, key=lambda n: abs(n - 36))])
        for n in capacity.LARGE_SCALING[0]:
            if n in by_n:
                out[n].append(ref / statistics.median(by_n[n]))
    return out


def test_the_table_is_the_stand_ins_median_and_spread():
    ratios = _ratios()
    for n, (factor, sd) in capacity.LARGE_SCALING[0].items():
        assert len(ratios[n]) >= 70
        assert statistics.median(ratios[n]) == pytest.approx(factor, abs=0.01)
        assert statistics.stdev(math.log(x) for x in ratios[n]) == pytest.approx(sd, abs=0.01)


def test_the_factor_is_one_up_to_36_workers_then_falls_and_holds():
    assert capacity.large_scaling(36) == (1.0, 0.0)
    assert capacity.large_scaling(64) == (0.88, 0.09)
    f48, f96, f192 = (capacity.large_scaling(n)[0] for n in (48, 96, 192))
    assert 0.88 < f48 < 1.0 and f96 == f192 == 0.76


def test_a_large_instance_serves_less_per_vcpu_and_says_why():
    cat = {i.instance_type: i for i in load_catalog()}
    work = Workload(protocol="https", file_bytes=128)
    small = capacity.instance_capacity(cat["c6a.8xlarge"], work)
    big = capacity.instance_capacity(cat["c6a.48xlarge"], work)
    per_vcpu = (big.cpu_peak_rps / 192) / (small.cpu_peak_rps / 32)
    assert per_vcpu == pytest.approx(0.76 * small_to_big_seed(), rel=0.01)
    assert "x0.76 past 36 workers" in " ".join(big.basis)
    assert "past 36 workers" not in " ".join(small.basis)
    assert big.rel_sd > small.rel_sd


def small_to_big_seed() -> float:
    """The seed's own efficiency at 36 workers over that at 32 (held past 36)."""
    sigma = capacity.reference_profile().sigma
    return capacity.scaling_efficiency(36, sigma) / capacity.scaling_efficiency(32, sigma)
