"""``catalog update --provider gcp --from FILE``: a saved Cloud Billing Catalog SKU list."""

import json
from pathlib import Path

import pytest

from sizing.catalog import skus
from sizing.catalog.load import load_catalog, read_catalog
from sizing.cli.main import main
from sizing.errors import InputError

EXCERPT = Path(__file__).parent / "data/skus/gcp-europe-west3-skus.json"
UPDATE = ["catalog", "update", "--provider", "gcp", "--region", "europe-west3"]


def test_only_on_demand_core_and_ram_of_the_region_are_kept():
    assert skus.read_skus(str(EXCERPT), "europe-west3") == {
        ("n2", "Core"): pytest.approx(0.04073),
        ("n2", "Ram"): pytest.approx(0.005458),
        ("e2", "Core"): pytest.approx(0.0281037),
        ("e2", "Ram"): pytest.approx(0.00376602),
    }


def test_the_prices_built_match_the_shipped_ones_out_of_sample(tmp_path, capsys):
    """The unit prices reproduce 4 shipped types; every other N2 and E2 type is predicted."""
    out = tmp_path / "gcp-europe-west3.csv"
    assert main([*UPDATE, "--from", str(EXCERPT), "--out", str(out)]) == 0
    built = {i.instance_type: i for i in read_catalog(out)}
    shipped = {
        i.instance_type: i.price_usd_hour
        for i in load_catalog((), regions={"europe-west3"})
        if i.provider == "gcp" and i.instance_type in built
    }
    assert len(shipped) > 40 and {i.split("-")[0] for i in built} == {"n2", "e2"}
    for name, price in shipped.items():
        assert built[name].price_usd_hour == pytest.approx(price, rel=1e-6), name
    assert built["n2-standard-4"].region == "europe-west3"
    assert "Cloud Billing Catalog SKUs" in built["n2-standard-4"].source
    excluded = (tmp_path / "gcp-europe-west3.excluded.csv").read_text()
    assert "e2-micro" in excluded and "shared-core" in excluded and "no c3 core" in excluded


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<html><body>API key not valid</body></html>", "an HTML page"),
        ('{"skus": [', "not complete JSON"),
        ('{"skus": [], "nextPageToken": "abc"}', "nextPageToken set"),
        ('{"skus": []}', "no on-demand core or RAM price"),
        ("nanos", "bad pric"),
    ],
)
def test_a_bad_file_is_one_line_and_the_old_catalog_stays(text, problem, tmp_path):
    if text == "nanos":
        page = json.loads(EXCERPT.read_text())
        page["skus"][0]["pricingInfo"][0]["pricingExpression"]["tieredRates"] = []
        text = json.dumps(page)
    bad = tmp_path / "skus.json"
    bad.write_text(text)
    out = tmp_path / "gcp-europe-west3.csv"
    out.write_text("the previous catalog\n")
    with pytest.raises(InputError, match=problem):
        skus.read_skus(str(bad), "europe-west3")
    assert main([*UPDATE, "--from", str(bad), "--out", str(out)]) == 2
    assert out.read_text() == "the previous catalog\n"


def test_without_a_file_gcp_says_in_one_line_why_it_is_not_fetched(capsys):
    assert main(UPDATE) == 2
    err = capsys.readouterr().err.strip()
    assert "needs an API key" in err and "--from FILE" in err and "\n" not in err
