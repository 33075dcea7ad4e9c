"""Carbon per request (`sizing.model.carbon`): CCF's method by hand, stand-ins said, the sort."""

from __future__ import annotations

import dataclasses
import math

import pytest

from sizing.catalog.load import select_instances
from sizing.errors import InputError
from sizing.model import carbon
from sizing.pipeline import size
from sizing.request import SizingRequest


def _one(name: str, region: str = "us-east-1"):
    return next(i for i in select_instances(region=[region]) if i.instance_type == name)


def test_a_fleet_by_hand_from_the_extracts():
    """Graviton2 in us-east-1: CCF's watts, AWS's PUE, the EPA factor; c6g's embodied row."""
    inst = _one("c6g.xlarge")
    lo, hi = carbon.cpu_power()["aws", "Graviton2"]
    assert (lo, hi) == (0.4743, 1.6930)  # CCF's Graviton rows are EPYC 2nd Gen's
    c = carbon.fleet_carbon(inst, 10, 0.6)
    assert not c.estimate
    watts = 0.4743 + 0.6 * (1.6930 - 0.4743)
    grid = 0.379069  # EPA eGRID2020 SERC, kgCO2e/kWh
    assert c.operational_g_per_hour == pytest.approx(40 * watts * 1.135 * grid)
    kg, server_vcpus = 1155.46, 64  # c6g.xlarge in embodied.csv
    per_vcpu = carbon.embodied()["aws", "c6g.xlarge"]
    assert per_vcpu == pytest.approx(kg / server_vcpus)
    assert c.embodied_g_per_hour == pytest.approx(40 * per_vcpu * 1000 / 35040)
    assert c.per_million(1e5) == pytest.approx(c.g_per_hour / 3.6e8 * 1e6)
    assert any("Graviton2 row" in b for b in c.basis)
    assert any("eGRID2020" in b and "2020" in b for b in c.basis)


def test_more_load_more_watts_and_a_bounded_load():
    inst = _one("c6g.xlarge")
    low, high = carbon.fleet_carbon(inst, 4, 0.1), carbon.fleet_carbon(inst, 4, 0.9)
    assert low.operational_g_per_hour < high.operational_g_per_hour
    assert low.embodied_g_per_hour == high.embodied_g_per_hour
    assert carbon.fleet_carbon(inst, 4, 7.0).cpu_utilization == 1.0
    assert carbon.fleet_carbon(inst, 4, math.nan).cpu_utilization == 1.0


def test_stand_ins_are_marked_as_estimates():
    inst = _one("c6g.xlarge")
    elsewhere = dataclasses.replace(inst, region="xx-nowhere-1")
    c = carbon.fleet_carbon(elsewhere, 1, 0.5)
    assert c.estimate
    assert any("estimate: no factor for aws/xx-nowhere-1" in b for b in c.basis)
    zurich = dataclasses.replace(inst, region="eu-central-2")
    assert any(
        "Zurich taken as switzerlandnorth" in b for b in carbon.fleet_carbon(zurich, 1, 0.5).basis
    )
    unknown_type = dataclasses.replace(inst, instance_type="c99g.xlarge")
    assert any("c99g.xlarge has no" in b for b in carbon.fleet_carbon(unknown_type, 1, 0.5).basis)
    turin = next(i for i in select_instances(region=["us-east-1"]) if "Turin" in (i.cpu or ""))
    c = carbon.fleet_carbon(turin, 1, 0.5)
    assert c.estimate and any("Zen 5 taken as EPYC 4th Gen" in b for b in c.basis)


def test_every_region_of_the_three_providers_has_a_factor_or_a_marked_one():
    for (prov, region), (factor, source) in carbon.grid().items():
        assert 0 <= factor < 2, (prov, region)
        assert source
    for (prov, region), (_, ap, ar) in carbon.same_grid().items():
        assert (ap, ar) in carbon.grid(), (prov, region)
        assert (prov, region) not in carbon.grid()


def test_a_damaged_extract_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "cpu-power.csv").write_text("provider,architecture,min\naws,x,1\n")
    monkeypatch.setattr(carbon, "CCF_DIR", tmp_path)
    carbon.cpu_power.cache_clear()
    try:
        with pytest.raises(InputError, match=r"cpu-power\.csv: expected the header"):
            carbon.cpu_power()
    finally:
        carbon.cpu_power.cache_clear()


def test_options_carry_grams_and_sort_carbon_ranks_by_them():
    answer = size(SizingRequest(rps=2e5, sort="carbon"))
    doc = answer.to_dict(top=None)
    grams = [o["gco2e_per_mreq"] for o in doc["options"]]
    assert grams == sorted(grams)
    first = doc["options"][0]
    assert first["carbon"]["basis"] and first["gco2e_per_mreq_at_confidence"] is not None
    assert doc["decision"]["carbon"]["gco2e_per_mreq"] == pytest.approx(grams[0])
    assert "gCO2e per million requests" in doc["decision"]["text"]
    cheapest = size(SizingRequest(rps=2e5)).to_dict(top=1)["options"][0]
    assert cheapest["gco2e_per_mreq_at_confidence"] >= grams[0]


def test_the_columns_rank_by_carbon_as_the_rows_do(monkeypatch):
    from sizing import pipeline

    request = SizingRequest(rps=1e6, regions="all", sort="carbon")
    answer = size(request)
    assert type(answer.recommendation).__name__ == "ColumnarRecommendation"
    monkeypatch.setattr(pipeline, "_by_columns", lambda request: False)
    by_rows = size(request)
    assert answer.decision == by_rows.decision
    excluded = by_rows.recommendation.excluded
    assert answer.to_dict(top=10) == {**by_rows.to_dict(top=10), "excluded": excluded}
