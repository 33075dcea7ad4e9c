"""Spot spares from each AWS type's interruption band at --confidence (`sizing.fleet.spot`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sizing.catalog import spot
from sizing.fleet.counts import survivors
from sizing.pipeline import size
from sizing.request import SizingRequest


def test_spares_hold_for_large_fleets_and_grow_with_the_band():
    assert spot.spares_for(1, 0.05, 0.95) == 0  # P(the one survives) = 0.95
    big = spot.spares_for(5000, 0.30, 0.95)  # no float overflow of comb(n, k)
    assert 0.30 * 7000 < 5000 + big < 7500
    assert spot.spares_for(27, 0.30, 0.99) > spot.spares_for(27, 0.30, 0.90)


def test_each_listed_type_counts_its_band_spares_and_says_so():
    answer = size(SizingRequest(rps=1e6, pricing="spot", providers="aws"))
    doc = answer.to_dict(top=20)
    opts = answer.options[:20]
    assert all(o.spot for o in opts)
    for o in opts:
        band = spot.spot_table()[o.capacity.instance.region, o.capacity.instance.instance_type]
        spares = o.spot["spares"]
        need = o.count - spares
        assert spares == spot.spares_for(need, band.interruption_rate, 0.95)
        assert survivors(o.count, o.rules) == need
    assert doc["options"][0]["spot"]["interruption_band"]
    note = next(n for n in doc["notes"] if n.startswith("spot: "))
    assert "binomial" in note and f"point-estimate count of {opts[0].count}" in note


def test_a_given_reserve_stays_flat():
    answer = size(SizingRequest(rps=1e6, pricing="spot", providers="aws", spot_reserve=0.2))
    assert not any(o.spot for o in answer.options)
    o = answer.options[0]
    assert survivors(o.count, o.rules) == int(o.count * 0.8 + 1e-9)


def test_every_region_counts_band_spares_in_the_columns():
    """``--pricing spot --region all`` is answered from the columns, spares by band and all
    (tests/test_columnar.py holds the columns' answer equal to the rows')."""
    answer = size(SizingRequest(rps=1e6, pricing="spot", regions="all", providers="aws"))
    assert type(answer.recommendation).__name__ == "ColumnarRecommendation"
    doc = answer.to_dict(top=10)
    assert all(o.get("spot") for o in doc["options"])
    assert any(n.startswith("spot: ") for n in doc["notes"])


def test_spares_of_many_pairs_at_once_equal_one_at_a_time():
    import numpy as np

    count = np.array([1, 2, 7, 40, 313, 5000, 12])
    rate = np.array([0.0, 0.05, 0.3, 0.1, 0.15, 0.2, 0.3])
    got = spot.spares_array(count, rate, 0.97)
    for c, r, s in zip(count.tolist(), rate.tolist(), got.tolist(), strict=True):
        held = spot.spares_array([c], [r], 0.97)[0]
        assert s == held == spot.spares_for(c, r, 0.97)


def test_a_spot_mix_carries_each_types_band_spares():
    answer = size(SizingRequest(rps=1e6, pricing="spot", providers="aws", mix=3, zones=3))
    mix = answer.recommendation.mix
    assert mix["status"] == "optimal" and mix["spot"]["spares"] > 0
    used = [t for t in mix["types"] if t["count"]]
    each = 0.95 ** (1 / len(used))
    for t in used:
        spares = t["spot"]["spares"]
        assert spares == spot.spares_for(t["count"] - spares, t["spot"]["interruption_rate"], each)
    assert sum(t["spot"]["spares"] for t in used) == mix["spot"]["spares"]
    assert mix["hourly_cost_usd"] == sum(t["hourly_cost_usd"] for t in used)
    assert sum(mix["count_per_zone"]) == mix["count"] == sum(t["count"] for t in used)
    assert "95% confidence" in mix["spot"]["basis"]
    from sizing.report.render import render_mix

    assert any(line.startswith("  spot: ") for line in render_mix(mix, explain=False))


def test_mix_spares_go_to_the_zones_the_type_runs_in():
    import numpy as np

    from sizing.fleet.mix import band_spares

    x = np.array([[10, 9, 0], [0, 0, 3]])
    fields = {"interruption_rate": 0.3, "interruption_band": "estimate: 30%"}
    out, spares, basis = band_spares(x, [fields, None], 0.95)
    assert spares == [spot.spares_for(19, 0.3, 0.95), 0]
    assert out[1].tolist() == [0, 0, 3] and out[0, 2] == 0
    assert out[0].sum() == 19 + spares[0] and out[0, 0] - 10 >= out[0, 1] - 9
    assert "1 type(s)" in basis and "estimate: 30% a month" in basis


def test_gcp_and_azure_spot_take_the_estimate_and_say_so():
    from sizing.catalog.spot import ESTIMATED_RATE, spot_risk

    for provider in ("gcp", "azure"):
        risk = spot_risk(provider, "anywhere", "any-size")
        assert risk is not None and risk.rate == ESTIMATED_RATE
        assert risk.band.startswith("estimate:") and risk.source.startswith("estimate:")
    assert spot_risk("aws", "us-east-1", "no-such.type") is None  # keeps the flat reserve
    answer = size(SizingRequest(rps=1e6, pricing="spot", providers="gcp"))
    o = answer.options[0]
    need = o.count - o.spot["spares"]
    assert o.spot["spares"] == spot.spares_for(need, ESTIMATED_RATE, 0.95)
    assert o.spot["interruption_band"].startswith("estimate:")
    assert o.spot["source"].startswith("estimate:") and "estimate:" in o.spot["basis"]
    note = next(n for n in answer.recommendation.notes if n.startswith("spot: "))
    assert "estimate: 30% of instances interrupted a month" in note and "Google" in note


def test_spot_spares_for_every_region_need_no_scipy():
    """The binomial quantile is the standard library's: scipy's import alone is too slow."""
    code = (
        "import sys\n"
        "from sizing.pipeline import size\n"
        "from sizing.request import SizingRequest\n"
        "answer = size(SizingRequest(rps=1e6, pricing='spot', regions='all'))\n"
        "answer.to_dict(top=10)\n"
        "assert 'scipy' not in sys.modules, 'scipy imported'\n"
    )
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert res.returncode == 0, res.stderr[-500:]
