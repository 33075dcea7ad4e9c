import os
from pathlib import Path

import pytest

from sizing.catalog import build as catalog_build
from sizing.catalog import load as catalog
from sizing.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = [
    Path(os.environ["NGINX_SIZING_UPSTREAM"]) if os.environ.get("NGINX_SIZING_UPSTREAM") else None,
    ROOT.parent / "shared" / "facts" / "upstream",
    ROOT.parent.parent / "shared" / "facts" / "upstream",
]
UPSTREAM = next((p for p in CANDIDATES if p is not None and (p / "aws").is_dir()), None)

MD = """## c7g Family
### `c7g.large`
#### Labels
 | Label | Value |
 |--|--|
 |karpenter.k8s.aws/instance-category|c|
 |karpenter.k8s.aws/instance-cpu|2|
 |karpenter.k8s.aws/instance-cpu-manufacturer|aws|
 |karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz|2600|
 |karpenter.k8s.aws/instance-family|c7g|
 |karpenter.k8s.aws/instance-generation|7|
 |karpenter.k8s.aws/instance-memory|4096|
 |karpenter.k8s.aws/instance-network-bandwidth|937|
 |kubernetes.io/arch|arm64|
### `c7g.metal`
 |karpenter.k8s.aws/instance-category|c|
 |karpenter.k8s.aws/instance-cpu|64|
 |karpenter.k8s.aws/instance-cpu-manufacturer|aws|
 |karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz|2600|
 |karpenter.k8s.aws/instance-family|c7g|
 |karpenter.k8s.aws/instance-generation|7|
 |karpenter.k8s.aws/instance-memory|131072|
 |kubernetes.io/arch|arm64|
### `g5g.xlarge`
 |karpenter.k8s.aws/instance-category|g|
 |karpenter.k8s.aws/instance-cpu|4|
 |karpenter.k8s.aws/instance-cpu-manufacturer|aws|
 |karpenter.k8s.aws/instance-family|g5g|
 |karpenter.k8s.aws/instance-generation|5|
 |karpenter.k8s.aws/instance-gpu-count|1|
 |karpenter.k8s.aws/instance-memory|8192|
 |kubernetes.io/arch|arm64|
### `t3.micro`
 |karpenter.k8s.aws/instance-category|t|
 |karpenter.k8s.aws/instance-cpu|2|
 |karpenter.k8s.aws/instance-cpu-manufacturer|intel|
 |karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz|2500|
 |karpenter.k8s.aws/instance-family|t3|
 |karpenter.k8s.aws/instance-generation|3|
 |karpenter.k8s.aws/instance-memory|1024|
 |kubernetes.io/arch|amd64|
### `c7a.large`
 |karpenter.k8s.aws/instance-category|c|
 |karpenter.k8s.aws/instance-cpu|2|
 |karpenter.k8s.aws/instance-cpu-manufacturer|amd|
 |karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz|3700|
 |karpenter.k8s.aws/instance-family|c7a|
 |karpenter.k8s.aws/instance-generation|7|
 |karpenter.k8s.aws/instance-memory|4096|
 |kubernetes.io/arch|amd64|
"""
PRICING_GO = """// generated at 2026-07-20T13:44:30Z for us-east-1
var InitialOnDemandPricesAWS = map[string]map[ec2types.InstanceType]float64{
	// us-east-1
	"us-east-1": {
		"c7g.large": 0.072500, "c7g.metal": 2.32, "g5g.xlarge": 0.42,
		"t3.micro": 0.010400, "c7a.large": 0.10264,
	},
}
"""
BANDWIDTH_GO = """	InstanceTypeBandwidthMegabits = map[string]int64{
		// c1.medium has vague bandwidth information, bandwidth is Moderate
		"t3.micro":             64,
		"c7a.large":            781,
	}
"""
PRICING_YML = """---
about:
  copyright: |2

    Licensed: text with: colons
  generated: Thu Jul 30 06:13:17 2026
  timestamp: 1785391997
compute:
  instance:
    c4a-standard-2:
      cost:
        us-central1:
          hour: 0.0898
          hour_spot: 0.038816
          month: 65.554
          month_1y: 43.2306
          month_3y: 29.5066
      cpu: 2
      ram: 8
    c4a-standard-16:
      cost:
        us-central1:
          hour: 0.7184
      cpu: 16
      ram: 64
    e2-micro:
      cost:
        us-central1:
          hour: 0.0083764275
      cpu: 0.25
      ram: 1
    g2-standard-4:
      cost:
        us-central1:
          hour: 0.7
      cpu: 4
      l4: 1
      ram: 16
  license:
    c4a-standard-2:
      cost:
        rhel:
          hour: 0.0288
compute:
  instance:
    c4a-standard-2:
      cost:
        windows:
          hour: 0.092
region:
  us-central1:
    location: Iowa
  zones:
    - us-central1-a
"""
C4A_SQL = """/* C4A */
UPDATE instances SET
series      = 'c4a',
cpuPlatform = 'Google Axion'
WHERE name LIKE 'c4a-%';
UPDATE instances SET bandwidth = '10' WHERE name LIKE 'c4a-%-1%';
UPDATE instances SET bandwidth = '10' WHERE name LIKE 'c4a-%-2%';
UPDATE instances SET bandwidth = '23' WHERE name LIKE 'c4a-%-16%';
"""
E2_SQL = """UPDATE instances SET
series      = 'e2',
cpuPlatform = 'Skylake, Broadwell, Haswell, Rome'
WHERE name LIKE 'e2-%';
UPDATE instances SET bandwidth = '1' WHERE name LIKE 'e2-micro';
"""


@pytest.fixture
def upstream(tmp_path):
    aws, gcp = tmp_path / "aws", tmp_path / "gcp"
    (gcp / "series").mkdir(parents=True)
    aws.mkdir()
    (aws / "instance-types.md").write_text(MD)
    (aws / "zz_generated.pricing_aws.go").write_text(PRICING_GO)
    (aws / "zz_generated.bandwidth.go").write_text(BANDWIDTH_GO)
    (gcp / "pricing.yml").write_text(PRICING_YML)
    (gcp / "series" / "c4a.sql").write_text(C4A_SQL)
    (gcp / "series" / "e2.sql").write_text(E2_SQL)
    return aws, gcp


def test_build_parses_both_providers(upstream, tmp_path):
    aws, gcp = upstream
    result = catalog_build.build_providers(
        {"aws": aws, "gcp": gcp}, tmp_path / "no-burst-table.csv"
    )
    rows = {r["instance_type"]: r for r in result.rows}
    assert set(rows) == {
        "c7g.large",
        "t3.micro",
        "c7a.large",
        "c4a-standard-2",
        "c4a-standard-16",
        "e2-micro",
    }
    c7g = rows["c7g.large"]
    assert (c7g["cpu"], c7g["vcpus"], c7g["memory_gib"], c7g["network_gbps"]) == (
        "AWS Graviton3",
        "2",
        "4",
        "0.937",
    )  # md label when the bandwidth file lacks it
    assert c7g["price_usd_hour"] == "0.0725" and c7g["spot_usd_hour"] == ""
    assert c7g["source_date"] == "2026-07-20" and "pricing_aws.go" in c7g["source"]
    assert rows["c7a.large"]["cpu"] == "AMD EPYC Genoa"
    assert rows["c7a.large"]["threads_per_core"] == "1"  # 7th generation AMD: no SMT
    assert rows["t3.micro"]["burstable"] == "true"
    assert rows["t3.micro"]["network_gbps"] == "0.064"
    c4a = rows["c4a-standard-2"]
    # the second compute.instance section and the licence section add no prices
    assert c4a["price_usd_hour"] == "0.0898" and c4a["spot_usd_hour"] == "0.038816"
    assert float(c4a["commit_1y_usd_hour"]) == pytest.approx(43.2306 / 730)
    assert c4a["cpu"] == "Google Axion" and c4a["arch"] == "arm64"
    assert c4a["source_date"] == "2026-07-30" and c4a["region"] == "us-central1"
    # LIKE patterns in file order: 'c4a-%-1%' then the later 'c4a-%-16%' wins
    assert rows["c4a-standard-16"]["network_gbps"] == "23"
    assert rows["c4a-standard-16"]["commit_1y_usd_hour"] == ""  # not published
    e2 = rows["e2-micro"]
    assert e2["burstable"] == "true" and e2["cpu_baseline"] == "0.25" and e2["vcpus"] == "1"
    assert e2["cpu"] == (
        "Intel Xeon Skylake / Intel Xeon Broadwell / Intel Xeon Haswell / AMD EPYC Rome"
    )
    reasons = {name: why for _, name, why in result.excluded}
    assert reasons["c7g.metal"].startswith("bare metal")
    assert reasons["g5g.xlarge"].startswith("GPU")
    assert reasons["g2-standard-4"].startswith("GPU")


def test_build_command_writes_a_loadable_catalog(upstream, tmp_path, capsys):
    aws, gcp = upstream
    out = tmp_path / "cat.csv"
    assert (
        main(["catalog", "build", "--aws-dir", str(aws), "--gcp-dir", str(gcp), "--out", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "6 rows" in text and "left out" in text
    items = catalog.load_catalog(base=out)
    assert len(items) == 6
    assert catalog.compact_path(out).exists()
    assert (tmp_path / "cat.excluded.csv").read_text().startswith("provider,instance_type")


def test_build_refuses_missing_files(tmp_path, capsys):
    assert (
        main(["catalog", "build", "--aws-dir", str(tmp_path), "--out", str(tmp_path / "x.csv")])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "instance-types.md does not exist" in err[0]


@pytest.mark.skipif(UPSTREAM is None, reason="../shared/facts/upstream is not present")
def test_shipped_catalog_is_the_build_of_the_upstream_files(tmp_path):
    assert UPSTREAM is not None
    out = tmp_path / "instances.csv"
    result = catalog_build.build_providers({"aws": UPSTREAM / "aws", "gcp": UPSTREAM / "gcp"})
    catalog_build.write_catalog(result, out)
    assert out.read_text() == catalog.DEFAULT_CATALOG.read_text()
    shipped_excluded = catalog.DEFAULT_CATALOG.with_name("instances.excluded.csv")
    assert (tmp_path / "instances.excluded.csv").read_text() == shipped_excluded.read_text()
    cpus = {r["cpu"] for r in result.rows}
    assert {
        "AWS Graviton4",
        "Google Axion",
        "Ampere Altra",
        "AMD EPYC Genoa",
        "Intel Xeon Sapphire Rapids",
    } <= cpus


def test_build_from_one_upstream_folder_finds_each_provider(upstream, tmp_path, capsys):
    """--upstream DIR takes each provider's subfolder by its name (what `make catalog` uses)."""
    aws, _ = upstream
    out = tmp_path / "cat.csv"
    assert main(["catalog", "build", "--upstream", str(aws.parent), "--out", str(out)]) == 0
    assert len(catalog.load_catalog(base=out)) == 6
    capsys.readouterr()
    # A --NAME-dir wins over the subfolder; a missing folder is one line and exit 2.
    bad = ["catalog", "build", "--upstream", str(tmp_path / "nope"), "--out", str(out)]
    assert main(bad) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a folder" in err[0]
