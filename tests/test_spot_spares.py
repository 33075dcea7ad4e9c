"""Spot spares from each AWS type's interruption band at --confidence (`sizing.fleet.spot`)."""

from __future__ import annotations

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
