"""``sizing compare --baseline``, cost per million requests, and ``--growth``."""

from __future__ import annotations

import json
import math

import pytest

from sizing.analyses.baseline import BaselineSpec, compare_to_baseline, parse_baseline
from sizing.catalog.load import load_catalog, select_instances
from sizing.cli.main import main
from sizing.errors import InputError
from sizing.fleet.growth import growth_fields, months_until, parse_growth
from sizing.fleet.recommend import recommend, survivors
from sizing.workload.value import Workload

KNOWN = {"c6i.xlarge", "m5.2xlarge", "n2-standard-4", "x2iedn.xlarge"}


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("c6i.xlarge", BaselineSpec("c6i.xlarge")),
        ("c6i.xlarge x12", BaselineSpec("c6i.xlarge", 12)),
        ("c6i.xlargex12", BaselineSpec("c6i.xlarge", 12)),
        (" m5.2xlarge * 3 ", BaselineSpec("m5.2xlarge", 3)),
        ("n2-standard-4 X2", BaselineSpec("n2-standard-4", 2)),
        ("x2iedn.xlarge", BaselineSpec("x2iedn.xlarge")),
    ],
)
def test_parse_baseline(text, spec):
    assert parse_baseline(text, KNOWN) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("c9z.huge x3", "unknown baseline instance type 'c9z.huge'"),
        ("c6i.xlarge x0", "1 to"),
        ("c6i.xlarge x-3", "unknown"),
    ],
)
def test_parse_baseline_refuses(text, message):
    with pytest.raises(InputError, match=message):
        parse_baseline(text, KNOWN)


@pytest.fixture(scope="module")
def rec():
    return recommend(1e6, select_instances(), Workload(), zones=3, zone_loss=1)


def test_options_relative_to_the_baseline(rec):
    catalog = load_catalog()
    doc = compare_to_baseline(rec, BaselineSpec("c6i.xlarge", 12), catalog, top=5)
    b = doc["baseline"]
    assert b["count"] == 12 and b["count_given"]
    assert b["hourly_cost_usd"] == pytest.approx(12 * b["hourly_cost_usd"] / 12)
    assert b["fleet_capacity_rps"] == pytest.approx(12 * b["capacity_rps_per_instance"])
    for o, opt in zip(doc["options"], rec.options, strict=False):
        # Each option at the count the options are ranked by (the confidence), on the total
        # bill: compute and the traffic's egress.
        assert o["instance_type"] == opt.capacity.instance.instance_type
        assert o["count"] == opt.count_at_confidence
        assert o["hourly_cost_usd"] == pytest.approx(opt.hourly_cost_at_confidence_usd)
        total = opt.hourly_cost_at_confidence_usd * 730 + opt.egress_monthly_usd
        assert o["total_monthly_usd"] == pytest.approx(total)
        assert o["cost_pct"] == pytest.approx(100 * (total / b["total_monthly_usd"] - 1))
        assert o["capacity_pct"] == pytest.approx(
            100 * (o["count"] * opt.capacity.capacity_rps / b["fleet_capacity_rps"] - 1)
        )
        assert o["p_meets_target"] == pytest.approx(opt.p_meets_at_confidence)
    # 12 instances in 3 zones, one zone lost: 8 survive; the rules' own count keeps them.
    assert b["keeps_rules"] == (
        survivors(12, rec.rules) * b["capacity_rps_per_instance"] * 0.8 >= 1e6
    )


def test_baseline_without_count_is_what_its_type_needs(rec):
    doc = compare_to_baseline(rec, BaselineSpec("c6i.xlarge"), load_catalog())
    b = doc["baseline"]
    assert b["count"] == b["count_rules_need"] and b["keeps_rules"]
    assert 0.0 < b["p_meets_target"] <= 1.0


def test_a_fleet_too_small_is_said(rec):
    b = compare_to_baseline(rec, BaselineSpec("c6i.xlarge", 1), load_catalog())["baseline"]
    assert not b["keeps_rules"] and b["p_meets_target"] < 0.01


def test_cli_compare(capsys):
    code = main(["compare", "--rps", "5e5", "--baseline", "c6i.xlarge x12", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["baseline"]["instance_type"] == "c6i.xlarge" and len(doc["options"]) == 10
    assert all(math.isfinite(o["cost_pct"]) for o in doc["options"])
    assert main(["compare", "--rps", "5e5", "--baseline", "c6i.xlarge x4"]) == 0
    out = capsys.readouterr().out
    assert "base  c6i.xlarge" in out and "source: the same recommend call" in out


def test_cli_unknown_type_is_one_line_exit_2(capfd):
    code = main(["compare", "--rps", "1e6", "--baseline", "nope.large\x1b[2J x3"])
    err = capfd.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "unknown baseline instance type" in err and "\x1b" not in err


# ------------------------------------------------------------------ cost per request, growth


@pytest.mark.parametrize(
    ("text", "monthly"),
    [
        ("2x/yr", 2 ** (1 / 12)),
        ("2x/year", 2 ** (1 / 12)),
        ("5%/month", 1.05),
        ("5 % / mo", 1.05),
        ("1.5x/quarter", 1.5 ** (1 / 3)),
        ("100%/yr", 2 ** (1 / 12)),
    ],
)
def test_parse_growth(text, monthly):
    assert parse_growth(text) == pytest.approx(monthly)


@pytest.mark.parametrize(
    "text",
    ["", "fast", "2x", "1x/yr", "0.5x/yr", "-5%/month", "2x/decade", "1e9x/mo", "1e400x/yr"],
)
def test_parse_growth_refuses(text):
    with pytest.raises(InputError):
        parse_growth(text)


def test_month_the_fleet_must_grow():
    # 10 instances of 100 RPS, 20% headroom: 800 RPS usable for a 500 RPS target.
    f = growth_fields(10, 100.0, 0.2, 500.0, 1.05)
    assert f["months_until_growth"] == pytest.approx(math.log(800 / 500) / math.log(1.05))
    assert f["grow_in_month"] == 10  # 9.63 months: the target passes it in month 10
    assert f["months_until_headroom_used"] == pytest.approx(math.log(2) / math.log(1.05))
    assert months_until(500, 500, 1.05) == 0.0
    assert months_until(1e300, 1, 1.0000001) == math.inf
    assert growth_fields(0, 100.0, 0.2, 500.0, 1.05)["grow_in_month"] == 1


def test_recommend_says_cost_per_million_and_growth(capsys):
    assert main(["recommend", "--rps", "1e6", "--growth", "2x/yr", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    o = doc["options"][0]
    # Compute alone, as the old $/1e9 column; the headline figure adds the egress.
    compute = o["compute_usd_per_million_requests"]
    assert compute == pytest.approx(o["usd_per_billion_requests"] / 1000)
    assert o["usd_per_million_requests"] >= compute
    assert compute == pytest.approx(o["hourly_cost_usd"] / 3600.0)
    total_hourly = o["total_monthly_usd"] / 730.0
    assert o["usd_per_million_requests"] == pytest.approx(total_hourly / 3600.0)
    assert o["grow_in_month"] >= 1 and "must grow in month" in o["growth_text"]
    assert doc["growth"]["rate"] == "2x/yr"
    assert "per million requests" in doc["decision"]["text"]
    assert "must grow in month" in doc["decision"]["text"]
    assert main(["recommend", "--rps", "1e6", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "$/M req" in out and "$/1e9" not in out


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.000217, "$0.000217"), (0.1353, "$0.135"), (2.5, "$2.50"), (1234.5, "$1,234"), (0, "$0")],
)
def test_small_dollars_never_in_exponent_form(value, text):
    from sizing.units import fmt_usd_small

    assert fmt_usd_small(value) == text
    assert fmt_usd_small(1.7e-9) == "$0.00000000170"
