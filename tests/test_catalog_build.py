import csv
import gc
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from sizing.catalog import build as catalog_build
from sizing.catalog import gcp
from sizing.catalog import load as catalog
from sizing.catalog.rows import BuildResult, egress_row, num
from sizing.catalog.spot import spot_table
from sizing.cli.main import main
from sizing.errors import InputError

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
    assert c7g["price_usd_hour"] == "0.0725"
    saved = spot_table()["us-east-1", "c7g.large"].savings_pct  # the Spot Advisor feed
    assert c7g["spot_usd_hour"] == num(0.0725 * (100 - saved) / 100)
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
    written = catalog_build.write_catalog(result, out)
    # What `make catalog` would rebuild: every file the build writes, byte for byte.
    assert [p.name for p in written] == [
        "instances.csv",
        "instances.compact.jsonl",
        "instances.excluded.csv",
        "egress.csv",
    ]
    for path in written:
        assert path.read_bytes() == (catalog.DEFAULT_CATALOG.parent / path.name).read_bytes()
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


# ----------------------------------------------------------------------------- the fast path


def _row(**cells: str) -> dict[str, str]:
    """A valid catalog row (text cells), ``cells`` replacing some."""
    row = dict.fromkeys(catalog_build.BUILD_COLUMNS, "")
    row.update(
        provider="aws",
        region="us-east-1",
        instance_type="c7g.large",
        family="c7g",
        arch="arm64",
        cpu="AWS Graviton3",
        vcpus="2",
        memory_gib="4",
        network_gbps="0.937",
        network_burst="true",
        price_usd_hour="0.0725",
        source="aws/karpenter-provider-aws instance-types.md, zz_generated.pricing_aws.go",
        source_date="2026-07-20",
        threads_per_core="1",
        burstable="false",
        network_burst_gbps="12.5",
    )
    row.update(cells)
    return row


#: Rows the build writes as they are, whatever their text: formula prefixes, commas and
#: quotes, spaces around values, other spellings of numbers and flags, line breaks, text
#: beyond ASCII.
AWKWARD_ROWS = [
    _row(),
    _row(instance_type="=HYPERLINK(x)", cpu="+1", source='-2, @3 "quoted"'),
    _row(instance_type=" t3.micro ", family="t3", memory_gib=" 1 ", network_burst=" TRUE "),
    _row(instance_type="m5.large", vcpus="002", memory_gib="8.0", price_usd_hour="1e-05"),
    _row(instance_type="m6.large", memory_gib="0.50", spot_usd_hour="4", coremark="73269"),
    _row(instance_type="m7.large", network_burst="yes", burstable="1", threads_per_core=""),
    _row(instance_type="m8.large", cpu="Intel\nXeon", source="line\r\nbreak"),
    _row(instance_type="m9.large", vcpus="4.0", cpu_baseline="0.25", network_burst_gbps=""),
    _row(
        region="eu-west-1", instance_type="c7g.large", cpu="Graviton \u00e9\u4e2d", cpu_baseline=""
    ),
    _row(provider="GCP", region="us-central1", instance_type="e2-micro", source_date=""),
]


def _written(result: BuildResult, folder: Path) -> dict[str, bytes]:
    folder.mkdir()
    paths = catalog_build.write_catalog(result, folder / "instances.csv")
    return {p.name: p.read_bytes() for p in paths}


@pytest.mark.parametrize("n", range(len(AWKWARD_ROWS)))
def test_every_file_is_what_the_general_path_writes(tmp_path, monkeypatch, n):
    """Rows checked in memory give the bytes of the CSV written, read back and compacted."""
    rows = AWKWARD_ROWS[: n + 1]
    egress = [egress_row("aws", "us-east-1", "internet", (0.0, None, 0.09), "=src", "x")]
    result = BuildResult(rows=[dict(r) for r in rows], excluded=[("aws", "x", "=why")])
    result.egress = egress
    fast = _written(result, tmp_path / "fast")
    monkeypatch.setattr(catalog_build, "_table", lambda rows, names=None: None)  # the general path
    general = _written(result, tmp_path / "general")
    assert fast == general
    assert len(catalog.read_catalog(tmp_path / "fast" / "instances.csv")) == len(rows)
    # The compact form is what the loader's own writer makes of that CSV.
    again = catalog.write_compact(tmp_path / "general" / "instances.csv")
    assert fast["instances.compact.jsonl"] == again.read_bytes()


@pytest.mark.parametrize(
    ("cells", "field"),
    [
        ({"price_usd_hour": "0"}, "price_usd_hour"),
        ({"price_usd_hour": "cheap"}, "price_usd_hour"),
        ({"price_usd_hour": "nan"}, "price_usd_hour"),
        ({"price_usd_hour": "1" * 70}, "price_usd_hour"),
        ({"vcpus": "2.5"}, "vcpus"),
        ({"vcpus": ""}, "vcpus"),
        ({"vcpus": "-2"}, "vcpus"),
        ({"arch": "sparc"}, "arch"),
        ({"network_burst": "maybe"}, "network_burst"),
        ({"memory_gib": "inf"}, "memory_gib"),
        ({"source": "x" * 2001}, "source"),
        ({"region": "   "}, "region"),
        ({"network_burst_gbps": "0.5"}, "network_burst_gbps"),  # below the baseline
        ({"cpu_baseline": "3"}, "cpu_baseline"),  # above the vCPUs
        ({"threads_per_core": "3"}, "threads_per_core"),
    ],
)
def test_a_refused_value_is_one_line_and_nothing_is_written(tmp_path, cells, field):
    result = BuildResult(rows=[_row(instance_type="a.large"), _row(**cells)])
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match=f"field '{field}'") as caught:
        catalog_build.write_catalog(result, out / "instances.csv")
    assert "\n" not in str(caught.value)
    assert list(out.iterdir()) == []


def test_a_duplicate_instance_is_refused_before_anything_is_written(tmp_path):
    rows = [_row(), _row(provider="AWS", instance_type=" c7g.large")]  # the same once read
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match=r"duplicate instance aws/us-east-1/c7g\.large"):
        catalog_build.write_catalog(BuildResult(rows=rows), out / "instances.csv")
    assert list(out.iterdir()) == []


def test_bad_egress_prices_are_refused_before_anything_is_written(tmp_path):
    bad = egress_row("aws", "us-east-1", "internet", (0.0, None, -1.0), "src", "x")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match="usd_per_gib"):
        catalog_build.write_catalog(BuildResult(rows=[_row()], egress=[bad]), out / "instances.csv")
    assert list(out.iterdir()) == []


#: Internet egress tiers of one region, in a second ``compute`` section (merged).
EGRESS_YML = """compute:
  network:
    traffic:
      egress:
        internet:
          cost:
            0-1:
              us-central1:
                month: 0.12
            1-10:
              us-central1:
                month: 0.11
            10n:
              us-central1:
                month: 0.08
"""


@pytest.mark.parametrize("priced", [False, True])
def test_pricing_yml_is_read_and_parsed_once_per_build(upstream, tmp_path, monkeypatch, priced):
    gcp_dir = upstream[1]
    if priced:
        with (gcp_dir / "pricing.yml").open("a") as fh:
            fh.write(EGRESS_YML)
    seen: list[str] = []
    parse, read = gcp.parse_simple_yaml, gcp.read_upstream

    def counted_parse(text: str, path: str) -> dict[str, object]:
        seen.append(f"parse {path}")
        return parse(text, path)

    def counted_read(path: Path) -> str:
        seen.append(f"read {path}")
        return read(path)

    monkeypatch.setattr(gcp, "parse_simple_yaml", counted_parse)
    monkeypatch.setattr(gcp, "read_upstream", counted_read)
    result = catalog_build.build_providers({"gcp": gcp_dir}, tmp_path / "no-burst-table.csv")
    pricing = gcp_dir / "pricing.yml"
    assert [s for s in seen if s.endswith("pricing.yml")] == [f"read {pricing}", f"parse {pricing}"]
    assert result.egress == gcp.egress_rows(gcp_dir)
    assert len(result.egress) == (4 if priced else 0)  # three tiers and the inter-zone price


def test_a_pricing_line_without_a_colon_names_its_line():
    with pytest.raises(InputError, match=r"p.yml:3: expected 'key: value', got 'oops'"):
        gcp.parse_simple_yaml("a:\n  b: 1\n  oops\n", "p.yml")


def _naive_updates(names, files):
    """`gcp.apply_updates` as the SQL says: every pattern tried on every name."""
    out = {n: {} for n in names}
    for f in files:
        for likes, values in gcp._sql_updates(f.read_text()):
            patterns = [gcp.like_to_regex(p) for p in likes]
            for n in names:
                if any(p.match(n) for p in patterns):
                    for k, v in values.items():
                        out[n][k] = (v, f.name)
    return out


def test_like_patterns_match_what_sql_like_matches(tmp_path):
    rnd = random.Random(20)
    for trial in range(300):
        # Few letters, so that patterns of several parts often match, or nearly.
        letters = "aAbB-1." if trial % 2 else "ab"
        names = ["".join(rnd.choice(letters) for _ in range(rnd.randint(0, 8))) for _ in range(12)]
        names += ["\u00e9-a"] if trial % 5 == 0 else []
        files = []
        for j in range(2):
            statements = []
            for k in range(5):
                likes = " OR ".join(
                    "name LIKE '"
                    + "".join(rnd.choice(letters + "%%_") for _ in range(rnd.randint(0, 7)))
                    + "'"
                    for _ in range(rnd.randint(1, 2))
                )
                statements.append(f"UPDATE instances SET c{k % 3} = 'v{j}{k}' WHERE {likes};")
            path = tmp_path / f"{trial}-{j}.sql"
            path.write_text("\n".join(statements))
            files.append(path)
        assert gcp.apply_updates(names, files) == _naive_updates(names, files), names


def test_catalog_build_loads_only_its_own_command(upstream, tmp_path):
    aws, gcp_dir = upstream
    out = tmp_path / "cat.csv"
    code = (
        "import sys\n"
        "from sizing.cli.main import main\n"
        f"assert main(['catalog', 'build', '--aws-dir', {str(aws)!r}, '--gcp-dir', "
        f"{str(gcp_dir)!r}, '--out', {str(out)!r}]) == 0\n"
        "loaded = [m for m in ('sizing.cli.recommend', 'sizing.request', "
        "'sizing.workload.accesslog') if m in sys.modules]\n"
        "print(loaded)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert out.exists()


def _reference_yaml(text: str, path: str) -> dict[str, object]:
    """`gcp.parse_simple_yaml`'s rules, one line at a time (what its fast path must give)."""
    root: dict[str, object] = {}
    stack: list[tuple[int, dict[str, object]]] = [(-1, root)]
    skip_deeper_than: int | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] == "#" or line == "---":
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if skip_deeper_than is not None:
            if indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        if raw.lstrip().startswith("- "):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise InputError(f"{path}:{lineno}: expected 'key: value', got {line!r}")
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        value = value.strip()
        key = key.strip().strip("'\"")
        if not value:
            child = parent.get(key)
            if not isinstance(child, dict):
                child = parent[key] = {}
            stack.append((indent, child))
        elif value[0] in "|>":
            skip_deeper_than = indent
        else:
            value = value.strip("'\"")
            try:
                parent[key] = float(value)
            except ValueError:
                parent[key] = value
    return root


def _parsed(parse, text: str) -> str:
    try:
        return repr(parse(text, "p.yml"))
    except InputError as exc:
        return f"InputError: {exc}"


def test_pricing_yml_parser_follows_its_rules_line_by_line():
    assert _parsed(gcp.parse_simple_yaml, PRICING_YML) == _parsed(_reference_yaml, PRICING_YML)
    pieces = ["a", "x_1", "\u00e9", "-", "#", "'", '"', ":", ": ", " ", "\t", "|", ">", "1"]
    pieces += ["2.5", "nan", "---", "- ", "k: v", "\r", "\u2028", "1e3", "0-1"]
    rnd = random.Random(5)
    for _ in range(4000):
        lines = [
            " " * rnd.choice([0, 0, 1, 2, 2, 3, 4, 6])
            + "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 5)))
            for _ in range(rnd.randint(1, 8))
        ]
        text = "\n".join(lines) + rnd.choice(["", "\n"])
        assert _parsed(gcp.parse_simple_yaml, text) == _parsed(_reference_yaml, text), text


def test_a_canonical_number_cell_is_its_own_json():
    """The compact form copies such cells as they are: each must be ``repr`` of its float."""
    plain = ["0.0725", "12.5", "0.0001", "0.00012", "12345678901234.5", "1.00000000000001"]
    other = ["4", "4.0", "0.50", "00.5", "0.00001", "1e-05", ".5", "5.", " 0.5", "-0.5"]
    other += ["123456789012345", "1.000000000000001", "0.0", "1.2.3"]
    assert catalog_build._CANONICAL.findall("\n".join(plain + other)) == plain
    rnd = random.Random(3)
    found = 0
    for _ in range(50_000):
        text = rnd.choice(["0.", "0.0", ""])
        text += "".join(rnd.choice("0123456789.") for _ in range(rnd.randint(1, 17)))
        if catalog_build._CANONICAL.fullmatch(text):
            found += 1
            assert repr(float(text)) == text
    assert found > 10_000


def test_a_pricing_timestamp_out_of_range_is_one_line_and_exit_2(upstream, tmp_path, capsys):
    aws, gcp_dir = upstream
    pricing = gcp_dir / "pricing.yml"
    pricing.write_text(pricing.read_text().replace("timestamp: 1785391997", "timestamp: 1e20"))
    out = tmp_path / "cat.csv"
    argv = ["catalog", "build", "--aws-dir", str(aws), "--gcp-dir", str(gcp_dir), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "about.timestamp 1e+20 is not a time" in err[0]
    assert not out.exists()


def test_a_machine_type_of_infinite_cpus_is_left_out(upstream, tmp_path):
    gcp_dir = upstream[1]
    pricing = gcp_dir / "pricing.yml"
    pricing.write_text(pricing.read_text().replace("      cpu: 16\n", "      cpu: inf\n"))
    result = catalog_build.build_providers({"gcp": gcp_dir}, tmp_path / "no-burst-table.csv")
    assert ("gcp", "c4a-standard-16", "missing cpu or ram") in result.excluded
    assert "c4a-standard-16" not in {r["instance_type"] for r in result.rows}


def test_the_cycle_collector_runs_again_after_a_build(upstream, tmp_path, capsys):
    aws, gcp_dir = upstream
    argv = ["catalog", "build", "--aws-dir", str(aws), "--gcp-dir", str(gcp_dir), "--out"]
    assert main([*argv, str(tmp_path / "cat.csv")]) == 0
    assert gc.isenabled()
    assert main([*argv, str(tmp_path / "missing" / "cat.csv")]) == 2  # refused, mid-build
    assert gc.isenabled()
    assert "does not exist" in capsys.readouterr().err


def test_a_catalog_over_the_readers_size_limit_is_refused_as_the_reader_refuses_it(
    tmp_path, monkeypatch
):
    import sizing.catalog.load as load

    monkeypatch.setattr(load, "CATALOG_MAX_BYTES", 200)
    monkeypatch.setattr(catalog_build, "CATALOG_MAX_BYTES", 200)
    result = BuildResult(rows=[_row(instance_type=f"a{k}.large") for k in range(5)])
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError) as caught:
        catalog_build.write_catalog(result, out / "instances.csv")
    assert "\n" not in str(caught.value)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("share", [0.37, 0.5, 0.93])
def test_the_halves_write_what_one_process_writes(monkeypatch, share):
    """The shipped catalog's rows cut anywhere (mid-group too): the same CSV and compact form."""
    from sizing.catalog import beside as beside_mod

    with catalog.DEFAULT_CATALOG.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    monkeypatch.setattr(beside_mod, "usable_cpus", lambda: 1)  # all of it here, in one piece
    monkeypatch.setattr(catalog_build, "_CHILD_SHARE", 0.0)
    whole = catalog_build._csv_and_compact(rows, "instances.csv")
    assert whole[1] is not None  # the fast path, not the general writer
    # In one piece, the shipped files themselves (as `catalog build` wrote them).
    shipped = catalog.compact_path(catalog.DEFAULT_CATALOG).read_text(encoding="utf-8")
    assert whole == (catalog.DEFAULT_CATALOG.read_bytes(), shipped)
    monkeypatch.setattr(beside_mod, "usable_cpus", lambda: 2)
    monkeypatch.setattr(beside_mod, "_other_threads", lambda: False)
    monkeypatch.setattr(catalog_build, "_CHILD_SHARE", share)
    assert catalog_build._csv_and_compact(rows, "instances.csv") == whole
