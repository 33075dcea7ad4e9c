"""Providers as plug-ins: the contract every provider module keeps, and what it holds."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest

import sizing.catalog as catalog_package
from sizing.catalog import aws, build, gcp, providers
from sizing.catalog.load import DEFAULT_REGIONS, select_instances
from sizing.model import capacity
from sizing.workload.value import Workload

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = Path("/work/shared/facts/upstream")

#: What a provider module must define (the contract, written out once more on purpose).
MUST_DEFINE = (
    "NAME",
    "TITLE",
    "DEFAULT_REGIONS",
    "UPSTREAM",
    "ESTIMATES",
    "build",
    "network_gbps",
    "egress_rows",
    "SPECIAL_FAMILIES",
)


def test_the_contract_lists_what_a_provider_module_must_define():
    assert providers.CONTRACT == MUST_DEFINE
    assert providers.names() == ("aws", "azure", "gcp")
    for name, module in providers.providers().items():
        assert providers.missing(module) == [], name
        assert module.NAME == name
        assert isinstance(module.DEFAULT_REGIONS, tuple) and module.DEFAULT_REGIONS
        for group in module.SPECIAL_FAMILIES:
            assert group in providers.FAMILY_GROUPS


def test_a_module_without_the_contract_is_named_with_what_it_lacks():
    lacking = type(sys)("half")
    lacking.NAME = "half"
    lacking.build = 3  # not callable
    assert providers.missing(lacking) == [
        "TITLE",
        "DEFAULT_REGIONS",
        "UPSTREAM",
        "ESTIMATES",
        "network_gbps",
        "egress_rows",
        "SPECIAL_FAMILIES",
        "build",
    ]


def test_adding_a_provider_is_one_new_module(tmp_path, monkeypatch):
    (tmp_path / "zzcloud.py").write_text(
        "NAME = 'zzcloud'\nTITLE = 'ZZ Cloud'\nDEFAULT_REGIONS = ('zz-1',)\n"
        "UPSTREAM = 'none'\nESTIMATES = {}\nSPECIAL_FAMILIES = {'gpu': r'gx'}\n"
        "def build(folder, burst_table=None):\n    raise NotImplementedError\n"
        "def network_gbps(inst, work):\n    return 1.5, 'ZZ 1.5 Gbps flat'\n"
        "def egress_rows(folder):\n    return []\n"
    )
    monkeypatch.setattr(catalog_package, "__path__", [*catalog_package.__path__, str(tmp_path)])
    providers.providers.cache_clear()
    try:
        assert "zzcloud" in providers.names()
        assert "zz-1" in providers.default_regions()
        inst = replace(select_instances()[0], provider="zzcloud", family="gx9")
        assert capacity.network_gbps(inst, Workload()) == (1.5, "ZZ 1.5 Gbps flat")
        assert providers.family_group(inst) == "gpu"
    finally:
        providers.providers.cache_clear()
        sys.modules.pop("sizing.catalog.zzcloud", None)


def test_capacity_asks_the_provider_and_does_not_branch_on_it():
    text = (ROOT / "sizing/model/capacity.py").read_text()
    assert 'provider == "gcp"' not in text and 'provider == "aws"' not in text
    assert "provider_of(inst).network_gbps(inst, work)" in text
    items = {i.instance_type: i for i in select_instances()}
    base, face = Workload(), Workload(internet_facing=True)
    small_gcp = items["n2-highcpu-2"]
    assert capacity.network_gbps(small_gcp, base) == gcp.network_gbps(small_gcp, base)
    assert capacity.network_gbps(small_gcp, base)[0] == pytest.approx(4.0)
    small_aws = items["c7gn.4xlarge"]  # 50 Gbps baseline, 16 vCPUs
    assert capacity.network_gbps(small_aws, face)[0] == pytest.approx(5.0)
    assert "internet gateway" in aws.network_gbps(small_aws, face)[1]


def test_a_provider_without_a_module_keeps_its_rows_own_numbers():
    inst = replace(select_instances()[0], provider="hetzner", network_gbps=3.0)
    assert providers.provider_of(inst) is providers.PUBLISHED
    gbps, how = capacity.network_gbps(inst, Workload())
    assert gbps == 3.0 and "HETZNER" in how


def test_default_regions_come_from_the_provider_modules():
    assert DEFAULT_REGIONS == aws.DEFAULT_REGIONS + gcp.DEFAULT_REGIONS
    assert providers.default_regions() == DEFAULT_REGIONS


def test_estimates_of_the_providers_reach_the_answer():
    assert "gcp_sustained_gbps_per_vcpu" in capacity.ESTIMATES
    assert providers.estimates()["gcp_sustained_gbps_per_vcpu"][0] == gcp.GCP_GBPS_PER_VCPU


@pytest.mark.parametrize(
    "provider,family,instance_type,vcpus,group",
    [
        ("aws", "hpc7g", "hpc7g.16xlarge", 64, "hpc"),
        ("aws", "p5", "p5.48xlarge", 192, "gpu"),
        ("aws", "g6", "g6.xlarge", 4, "gpu"),
        ("aws", "inf2", "inf2.xlarge", 4, "accelerator"),
        ("aws", "trn1", "trn1.2xlarge", 8, "accelerator"),
        ("aws", "f2", "f2.6xlarge", 24, "accelerator"),
        ("aws", "m7i", "m7i.metal-24xl", 96, "metal"),
        ("gcp", "h3-standard", "h3-standard-88", 88, "hpc"),
        ("gcp", "a3-highgpu", "a3-highgpu-8g", 208, "gpu"),
        ("gcp", "c3-standard", "c3-standard-192-metal", 192, "metal"),
        ("aws", "c7g", "c7g.large", 2, ""),
        ("aws", "c7gn", "c7gn.large", 2, ""),
        ("gcp", "n4a-highcpu", "n4a-highcpu-1", 1, ""),
    ],
)
def test_special_families_by_name(provider, family, instance_type, vcpus, group):
    inst = replace(
        select_instances()[0],
        provider=provider,
        family=family,
        instance_type=instance_type,
        vcpus=vcpus,
    )
    assert providers.family_group(inst) == group


def test_one_size_families_are_big_single_shapes_only():
    items = select_instances()
    groups = providers.family_groups(items)
    by_type = {k[2]: g for k, g in groups.items()}
    assert by_type["u7i-12tb.224xlarge"] == "one-size"
    assert by_type["m2-megamem-416"] == "one-size"
    assert "c7g.large" not in by_type
    # A user's catalog of one small row is not a special type.
    small = [replace(items[0], provider="lab", family="box", instance_type="box.small", vcpus=2)]
    assert providers.family_groups(small) == {}


@pytest.mark.skipif(not UPSTREAM.exists(), reason="the upstream public files are not here")
def test_shipped_egress_prices_are_the_build_of_the_public_files():
    rows = aws.egress_rows(UPSTREAM / "aws") + gcp.egress_rows(UPSTREAM / "gcp")
    shipped = (ROOT / "data/catalog/egress.csv").read_text()
    assert build.egress_csv(rows) == shipped
    central = [r for r in rows if r["region"] == "us-central1" and r["kind"] == "internet"]
    assert [(r["from_gib"], r["to_gib"], r["usd_per_gib"]) for r in central] == [
        ("0", "1024", "0.12"),
        ("1024", "10240", "0.11"),
        ("10240", "", "0.08"),
    ]
    assert all("pricing.yml" in r["source"] and r["source_date"] for r in central)
    assert len({r["region"] for r in rows if r["provider"] == "gcp"}) >= 40
