"""Every AWS region: types per region, the one-line answer without prices, catalog update."""

from pathlib import Path

import pytest

from sizing.catalog import offer, spot
from sizing.catalog.load import read_catalog, select_instances
from sizing.cli.main import main
from sizing.errors import InputError

EXCERPT = Path(__file__).parent / "data/offer/aws-eu-central-1-excerpt.csv"


def test_the_spot_feed_lists_every_region_with_its_types():
    regions = spot.aws_regions()
    assert len(regions) >= 30 and regions["eu-central-1"] > 500
    c7g = spot.spot_table()["us-east-1", "c7g.large"]
    assert 0 < c7g.savings_pct < 100 and c7g.band in range(5)


def test_a_region_without_prices_answers_with_the_command_that_fetches_them():
    with pytest.raises(InputError) as err:
        select_instances(region="eu-central-1")
    msg = str(err.value)
    assert "\n" not in msg and "unknown region" not in msg
    assert "catalog update --provider aws --region eu-central-1" in msg
    with pytest.raises(InputError, match="unknown region mars-1"):
        select_instances(region="mars-1")


def test_the_offer_file_is_streamed_and_only_linux_shared_on_demand_kept():
    prices, date = offer.read_offer(str(EXCERPT))
    assert date == "2026-07-20"
    assert prices == {
        "c7g.medium": 0.0456,
        "c7g.large": 0.0912,
        "m7i.xlarge": 0.194,
        "zz9.huge": 0.5,
    }


def test_catalog_update_writes_a_checked_catalog(tmp_path, capsys):
    out = tmp_path / "aws-eu-central-1.csv"
    args = ["catalog", "update", "--provider", "aws", "--region", "eu-central-1"]
    assert main([*args, "--offer", str(EXCERPT), "--out", str(out)]) == 0
    rows = {i.instance_type: i for i in read_catalog(out)}
    assert set(rows) == {"c7g.medium", "c7g.large", "m7i.xlarge"}
    assert rows["c7g.large"].region == "eu-central-1"
    assert rows["c7g.large"].price_usd_hour == pytest.approx(0.0912)
    assert "AWS Price List offer file" in rows["c7g.large"].source
    assert "zz9.huge" in (tmp_path / "aws-eu-central-1.excluded.csv").read_text()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<!DOCTYPE html><html><body>Access denied</body></html>\n", "an HTML page"),
        ('"FormatVersion","v1.0"\n"Publication Date","2026-07-20T18:14:05Z"\n', "no header"),
        (None, "no on-demand Linux instance price"),  # cut off after the header
        ("bad-price", "bad price"),
    ],
)
def test_a_bad_offer_file_is_one_line_and_the_old_catalog_stays(tmp_path, text, problem):
    lines = EXCERPT.read_text().splitlines(keepends=True)
    if text is None:
        text = "".join(lines[:6])
    elif text == "bad-price":
        text = "".join(lines[:7]).replace('"0.0456000000"', '"-1"')
    bad = tmp_path / "offer.csv"
    bad.write_text(text)
    out = tmp_path / "aws-eu-central-1.csv"
    out.write_text("the previous catalog\n")
    args = ["catalog", "update", "--provider", "aws", "--region", "eu-central-1"]
    with pytest.raises(InputError, match=problem):
        offer.read_offer(str(bad))
    assert main([*args, "--offer", str(bad), "--out", str(out)]) == 2
    assert out.read_text() == "the previous catalog\n"


def test_spares_for_interruptions_are_binomial():
    assert spot.spares_for(10, 0.0, 0.95) == 0
    assert spot.spares_for(10, 0.05, 0.95) == 2  # P(<=1 of 11 lost) = 0.898, P(<=2 of 12) = 0.980
    assert spot.spares_for(27, 0.30, 0.95) > spot.spares_for(27, 0.05, 0.95)


def test_spot_prices_aws_and_says_the_spares_interruptions_call_for(capsys):
    args = ["recommend", "--rps", "1e6", "--pricing", "spot", "--provider", "aws"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "(aws us-east-1, spot)" in out
    assert "notes: " in out and "spot" in out.split("notes: ")[1].splitlines()[0]  # one screen
    assert main([*args, "--explain"]) == 0  # the note whole
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if line.startswith("note: spot:"))
    assert "AWS Spot Instance Advisor" in note and "binomial" in note and "spare" in note
