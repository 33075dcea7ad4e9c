"""What it costs to serve: egress priced from public tiers, ranked with compute, and shown."""

import csv
import io
import json
import math
from dataclasses import replace

import pytest

from sizing.catalog import egress
from sizing.catalog.load import select_instances
from sizing.cli import main as cli
from sizing.errors import InputError
from sizing.fleet.recommend import recommend
from sizing.workload.value import Workload

CATALOG = select_instances()  # the default regions
HEADER = "provider,region,kind,from_gib,to_gib,usd_per_gib,source,source_date,note\n"


def test_tiers_price_each_gib_at_the_tier_it_falls_in():
    aws = egress.shipped_egress()["aws", "us-east-1", "internet"]
    assert aws.monthly_usd(50) == 0.0  # inside the free 100 GB
    assert aws.monthly_usd(1100) == pytest.approx(1000 * 0.09)
    # 200 TiB: 100 free, 10,140 at 0.09, 40,960 at 0.085, 102,400 at 0.07, the rest at 0.05
    gib = 200 * 1024.0
    want = 10140 * 0.09 + 40960 * 0.085 + 102400 * 0.07 + (gib - 153600) * 0.05
    assert aws.monthly_usd(gib) == pytest.approx(want)
    gcp = egress.shipped_egress()["gcp", "us-central1", "internet"]
    assert gcp.monthly_usd(20 * 1024.0) == pytest.approx(1024 * 0.12 + 9216 * 0.11 + 10240 * 0.08)
    assert "pricing.yml" in gcp.source and gcp.source_date


def test_traffic_of_a_million_100kb_responses():
    gbps, gib = egress.traffic(1e6, 102400)
    assert gbps == pytest.approx(819.2)
    assert gib == pytest.approx(1e6 * 102400 * 730 * 3600 / 2**30)


def test_vpc_clients_pay_only_for_the_share_that_crosses_zones():
    one = egress.egress_cost("gcp", "us-central1", 1000.0, clients="vpc", zones=1)
    assert one["usd_month"] == 0.0 and one["share"] == 0.0
    three = egress.egress_cost("gcp", "us-central1", 3000.0, clients="vpc", zones=3)
    assert three["share"] == pytest.approx(2 / 3)
    assert three["usd_month"] == pytest.approx(2000 * 0.01)
    assert three["basis"].startswith("estimate:")
    aws = egress.egress_cost("aws", "us-east-1", 3000.0, clients="vpc", zones=2)
    assert aws["usd_month"] == pytest.approx(1500 * 0.02)  # out of one zone and into the other


def test_a_region_without_a_price_is_said_and_not_guessed():
    e = egress.egress_cost("aws", "eu-west-9", 1000.0)
    assert e["usd_month"] is None and "no internet transfer price" in e["basis"]
    with pytest.raises(InputError, match="unknown clients"):
        egress.egress_cost("aws", "us-east-1", 1.0, clients="mars")


@pytest.mark.parametrize(
    "body,message",
    [
        ("x,y,internet,0,,0.1,s,d,\n", None),
        ("x,y,space,0,,0.1,s,d,\n", "field 'kind': expected one of"),
        ("x,y,internet,0,,-1,s,d,\n", "field 'usd_per_gib': expected a number in \\[0, 100\\]"),
        ("x,y,internet,0,10,0.1,s,d,\nx,y,internet,20,,0.1,s,d,\n", "gap or overlap"),
        ("x,y,internet,5,2,0.1,s,d,\n", "field 'to_gib': must be above"),
        ("x,y,internet,0,,=cmd(),s,d,\n", "field 'usd_per_gib': expected a number"),
    ],
)
def test_a_bad_egress_table_is_one_clear_error(tmp_path, body, message):
    path = tmp_path / "egress.csv"
    path.write_text(HEADER + body)
    if message is None:
        assert egress.read_egress(path)["x", "y", "internet"].monthly_usd(10) == pytest.approx(1)
    else:
        with pytest.raises(InputError, match=message):
            egress.read_egress(path)


def test_egress_ranks_with_compute():
    """A cheaper instance behind dearer egress loses to a dearer one behind cheaper egress."""
    base = next(i for i in CATALOG if i.instance_type == "c7g.large")
    cheap = replace(base, provider="p1", region="r", instance_type="cheap.large", family="cheap")
    dear = replace(
        base,
        provider="p2",
        region="r",
        instance_type="dear.large",
        family="dear",
        price_usd_hour=base.price_usd_hour * 2,
    )
    prices = {}
    for prov, usd in (("p1", 0.10), ("p2", 0.05)):
        prices[prov, "r", "internet"] = egress.Prices(
            prov, "r", "internet", (egress.Tier(0, math.inf, usd),), "test table", "2026"
        )
    rec = recommend(1e5, [cheap, dear], Workload(), egress_prices=prices)
    assert [o.capacity.instance.instance_type for o in rec.options] == ["dear.large", "cheap.large"]
    none = recommend(1e5, [cheap, dear], Workload(), clients="vpc", egress_prices=prices)
    assert none.options[0].capacity.instance.instance_type == "cheap.large"


def test_100kb_at_a_million_rps_the_traffic_dominates_the_bill():
    rec = recommend(1e6, CATALOG, Workload(file_bytes=100 * 1024))
    assert 800 < rec.traffic["gbps"] < 900  # 819 Gbps of bodies, plus headers and framing
    d = rec.decision
    assert d is not None
    assert d["egress_monthly_usd"] > 100 * d["monthly_cost_usd"]
    assert d["total_monthly_usd"] == pytest.approx(d["monthly_cost_usd"] + d["egress_monthly_usd"])
    assert "the traffic, not the instances" in d["text"] and "internet egress" in d["text"]
    opt = rec.to_dict()["options"][0]
    assert opt["total_monthly_usd"] == pytest.approx(
        opt["compute_monthly_usd"] + opt["egress_monthly_usd"]
    )
    assert opt["egress"]["source"] and opt["egress"]["source_date"]


def test_terminal_json_and_csv_split_compute_and_egress(capsys):
    args = ["recommend", "--rps", "1e6", "--file-size", "100KB", "--top", "3"]
    assert cli.main([*args, "--explain"]) == 0
    out = capsys.readouterr().out
    for words in ("compute $/mo", "egress $/mo", "total $/mo", "traffic: ", "Gbps"):
        assert words in out
    assert "the traffic, not the instances" in " ".join(out.split())
    assert cli.main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["traffic"]["clients"] == "internet" and doc["notes"]
    assert doc["decision"]["egress_monthly_usd"] > doc["decision"]["monthly_cost_usd"]
    assert cli.main([*args, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {"compute_monthly_usd", "egress_monthly_usd", "total_monthly_usd"} <= set(rows[0])
    assert float(rows[0]["egress_monthly_usd"]) > float(rows[0]["compute_monthly_usd"])


def test_special_families_are_left_out_by_default_and_said(capsys):
    args = ["recommend", "--rps", "1e6", "--file-size", "100KB", "--format", "json"]
    assert cli.main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not doc["options"][0]["family"].startswith("hpc")
    assert all(o["family"] != "hpc7g" for o in doc["options"])
    assert any(
        n.startswith("left out hpc (") and "--include-families hpc" in n for n in doc["notes"]
    )
    families = [f["family"] for f in doc["vcpus_by_family"]]
    order = list(dict.fromkeys(o["family"] for o in doc["options"]))
    assert families == order  # the family table follows the options' rules and order
    assert cli.main([*args, "--all-families"]) == 0
    every = json.loads(capsys.readouterr().out)
    assert any(o["family"] == "hpc7g" for o in every["options"])
    assert not any(n.startswith("left out hpc") for n in every["notes"])
    assert cli.main([*args, "--include-families", "hpc"]) == 0
    assert any(o["family"] == "hpc7g" for o in json.loads(capsys.readouterr().out)["options"])
    assert cli.main([*args, "--family", "hpc7g"]) == 0  # named: wanted
    assert json.loads(capsys.readouterr().out)["options"][0]["family"] == "hpc7g"


def test_every_limit_is_one_line(capsys):
    assert cli.main(["recommend", "--rps", "1e6", "--pricing", "spot", "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith("spot: ") and "binomial" in n for n in notes)  # AWS priced
    assert cli.main(["recommend", "--rps", "1e6", "--region", "all", "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("GCP regions against 1 AWS region (us-east-1)" in n for n in notes)
    assert all("\n" not in n for n in notes)
    args = ["recommend", "--rps", "1e6", "--zones", "3", "--clients", "vpc"]
    assert cli.main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "--zones 3" not in doc["decision"]["text"]
    assert "--zone-loss 1" in doc["decision"]["text"]
    assert any(n.startswith("estimate: with clients in the VPC over 3 zones") for n in doc["notes"])
    assert cli.main([*args, "--explain"]) == 0
    out = capsys.readouterr().out
    assert "note: estimate: with clients in the VPC" in out
    assert cli.main(args) == 0  # one screen: the note's head, --explain for the rest
    short = " ".join(capsys.readouterr().out.split())
    assert "with clients in the VPC over 3 zones (an estimate); --explain says why" in short


@pytest.mark.parametrize(
    "flags",
    [
        ["--include-families", "hpc,warp"],
        ["--include-families", "\x1b[2J"],
        ["--clients", "mars"],
        ["--all-families", "--include-families", "gpu"],
    ],
)
def test_bad_serving_flags_are_one_line_and_exit_2(capsys, flags):
    with pytest.raises(SystemExit) as exc:
        cli.main(["recommend", "--rps", "1e6", *flags])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "\x1b" not in err
