"""Azure as a provider: its extracts, CPU mapping, prices and the answer it gives."""

import csv
import io

import pytest

from sizing.catalog import azure, providers
from sizing.catalog.load import DEFAULT_REGIONS, bundled_catalogs, select_instances
from sizing.cli.main import main
from sizing.errors import InputError
from sizing.model.platforms import platform_of

#: The head of the generated Go price file's layout (from karpenter-provider-azure@352646f
#: pkg/providers/pricing/zz_generated.pricing.go), one dedicated-host SKU and one zero price.
GO_EXCERPT = """// generated at 2026-06-18T03:43:41Z
func init() {
	// australiacentral
	initialOnDemandPrices["australiacentral"] = map[string]float64{
		"DCadsv6_Type1":          11.345000,
		"Standard_D2as_v5":       0.107000,
		"Standard_D4as_v5":       0.000000,
	}
	initialOnDemandPrices["eastus"] = map[string]float64{
		"Basic_A0":               0.018000,
		"Standard_D2as_v5":       0.086000,
	}
}
"""


def test_the_extract_script_drops_host_skus_and_zero_prices():
    import importlib.util

    spec = importlib.util.spec_from_file_location("extract", azure.FOLDER / "extract.py")
    extract = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extract)
    prices, generated = extract.parse_prices(GO_EXCERPT)
    assert generated == "2026-06-18T03:43:41Z"
    assert prices == {"Standard_D2as_v5": {"australiacentral": 0.107, "eastus": 0.086}}
    text = extract.prices_csv(prices, generated)
    assert text.splitlines()[1:] == ["size,australiacentral,eastus", "Standard_D2as_v5,0.107,0.086"]


def test_cpu_text_names_the_platform_from_the_model_or_the_size_name():
    assert azure.azure_cpu("Standard_D2s_v5", "Intel", "8370C") == "Intel Xeon Ice Lake (8370C)"
    assert azure.azure_cpu("Standard_D2as_v6", "AMD", "9V74") == "AMD EPYC Genoa (9V74)"
    assert azure.azure_cpu("Standard_D2as_v7", "", "").startswith("AMD EPYC Turin (inferred")
    assert azure.azure_cpu("Standard_D2ps_v6", "Microsoft", "Neoverse-N2").startswith(
        "Microsoft Azure Cobalt 100"
    )
    assert azure.parse_size("Standard_E32-16ads_v5") == ("E", "ads", 5)
    assert azure.family_of("Standard_E32-16ads_v5") == "Eads_v5"


def test_the_build_meets_the_issue_and_marks_every_estimate():
    result = azure.build_azure(azure.FOLDER)
    types = {r["instance_type"] for r in result.rows}
    regions = {r["region"] for r in result.rows}
    assert len(types) >= 1000 and len(regions) >= 40
    reasons = {reason for _, _, reason in result.excluded}
    assert "GPU, FPGA or ML accelerator" in reasons
    assert not any(r["instance_type"].startswith(("Standard_N", "Basic_")) for r in result.rows)
    for r in result.rows[:: max(1, len(result.rows) // 500)]:
        assert float(r["price_usd_hour"]) > 0
        assert "SpareCores/sc-data-dumps@" in r["source"] and "karpenter" in r["source"]
        table = r["instance_type"] in azure.read_bandwidth(azure.FOLDER)
        assert ("Microsoft size table" if table else "bandwidth: estimate") in r["source"]
    d2 = next(r for r in result.rows if r["instance_type"] == "Standard_D2s_v5")
    assert d2["network_gbps"] == "12.5"


def test_a_cpu_nothing_places_gets_the_labelled_wide_fallback():
    cobalt = next(
        i
        for i in select_instances(provider="azure", region="eastus")
        if i.instance_type == "Standard_D4ps_v6"
    )
    plat = platform_of(cobalt)
    assert plat.estimate and plat.platform_id == "arm64-default"
    assert plat.core_speed_high / plat.core_speed_low == pytest.approx(2.5)


def test_azure_is_kept_out_of_the_default_answer_and_answers_when_named(capsys):
    assert "eastus" not in DEFAULT_REGIONS
    assert "eastus" in providers.default_regions(["azure"])
    assert len(bundled_catalogs()) == 1
    assert main(["recommend", "--rps", "1e6", "--provider", "azure", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and all(r["provider"] == "azure" for r in rows if "provider" in r)
    assert "Standard_" in out and "eastus" in out


def test_a_bad_price_file_is_one_line_naming_it(tmp_path):
    for name in azure.FILES:
        (tmp_path / name).write_bytes((azure.FOLDER / name).read_bytes())
    (tmp_path / "prices.csv").write_text("size,eastus\nStandard_D2s_v5,0.1,0.2\n")
    with pytest.raises(InputError, match=r"prices.csv:3: 3 cells, expected 2"):
        azure.build_azure(tmp_path)


def test_the_default_answer_never_builds_the_azure_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path))
    assert {i.provider for i in select_instances()} == {"aws", "gcp"}
    assert not list(tmp_path.glob("azure-*"))
    assert "westeurope" in {i.region for i in select_instances(region="westeurope")}
    assert list(tmp_path.glob("azure-*.compact.jsonl"))


def test_shipped_egress_rows_take_the_regions_of_the_price_header(tmp_path):
    """`egress_rows` of the shipped extract reads its header alone, to the file's regions."""
    (tmp_path / "prices.csv").write_bytes((azure.FOLDER / "prices.csv").read_bytes())
    header = azure.read_prices(tmp_path / "prices.csv")[0]
    assert list(azure.regions()) == header
    assert azure.egress_rows(tmp_path) == azure.egress_rows() == azure.egress_rows(azure.FOLDER)
    assert [r["region"] for r in azure.egress_rows() if r["kind"] == "inter-zone"] == header
