import pytest

from sizing.catalog import load as catalog
from sizing.catalog.rows import BUILD_COLUMNS, COLUMNS
from sizing.catalog.spot import spot_table
from sizing.errors import InputError

HEADER = ",".join(catalog.COLUMNS)


def _write(tmp_path, *lines, name="mine.csv"):
    p = tmp_path / name
    p.write_text("\n".join([HEADER, *lines]) + "\n")
    return p


ROW = "aws,us-east-1,c7gn.large,c7gn,arm64,AWS Graviton3E,2,4,6.25,true,0.2,my quote,2026-11-01"


def test_shipped_catalog_loads_with_provenance():
    items = catalog.load_catalog()
    assert len(items) > 10_000
    assert {i.provider for i in items} == {"aws", "azure", "gcp"}
    assert all(i.source and i.source_date for i in items)
    get = {i.key: i for i in items}
    t2a = get[("gcp", "us-central1", "t2a-standard-32")]
    assert t2a.price_usd_hour == 1.232 and t2a.vcpus == 32 and t2a.arch == "arm64"
    assert t2a.cpu == "Ampere Altra" and t2a.threads_per_core == 1
    # the three seed-000 prices (GCP, 32 vCPUs) agree with the upstream pricing file
    assert get[("gcp", "us-central1", "n2-standard-32")].price_usd_hour == 1.553888
    assert get[("gcp", "us-central1", "n2d-standard-32")].price_usd_hour == 1.351872
    c8g = get[("aws", "us-east-1", "c8g.large")]
    assert c8g.cpu == "AWS Graviton4" and c8g.price_usd_hour == 0.07976
    saved = spot_table()["us-east-1", "c8g.large"].savings_pct  # the Spot Advisor feed
    assert c8g.spot_usd_hour == pytest.approx(0.07976 * (100 - saved) / 100)
    assert t2a.spot_usd_hour == 0.524544 and t2a.commit_1y_usd_hour is None  # not published
    c4a = get[("gcp", "us-central1", "c4a-standard-2")]
    assert (c4a.price_usd_hour, c4a.spot_usd_hour) == (0.0898, 0.038816)
    # committed prices: month_1y and month_3y over 730 hours
    assert c4a.commit_1y_usd_hour == pytest.approx(43.2306 / 730, rel=1e-3)
    assert c4a.commit_3y_usd_hour < c4a.commit_1y_usd_hour < c4a.price_usd_hour


def test_compact_form_matches_the_csv():
    fast = catalog.load_catalog(regions=catalog.DEFAULT_REGIONS)
    slow = [
        i
        for i in catalog.read_catalog(catalog.DEFAULT_CATALOG)
        if i.region in catalog.DEFAULT_REGIONS
    ]
    assert fast == slow
    assert catalog.catalog_regions() == sorted({i.region for i in catalog.load_catalog()})


def test_stale_compact_form_falls_back_to_the_csv(tmp_path):
    p = _write(tmp_path, ROW, name="cat.csv")
    catalog.write_compact(p)
    assert catalog.load_catalog(base=p)[0].price_usd_hour == 0.2
    p.write_text(p.read_text().replace(",0.2,", ",0.3,"))
    assert catalog.load_catalog(base=p)[0].price_usd_hour == 0.3


def test_user_catalog_replaces_and_adds(tmp_path):
    extra = _write(
        tmp_path,
        ROW,
        "onprem,lab,box-1,box,x86_64,Xeon,8,32,10,false,0.5,our invoice,2026-10-01",
    )
    items = {i.key: i for i in catalog.load_catalog([extra])}
    assert len(items) == len(catalog.load_catalog()) + 1
    assert items[("aws", "us-east-1", "c7gn.large")].price_usd_hour == 0.2
    assert items[("aws", "us-east-1", "c7gn.large")].source == "my quote"
    assert items[("onprem", "lab", "box-1")].vcpus == 8


@pytest.mark.parametrize(
    "row,message",
    [
        (ROW.replace(",2,4,", ",0,4,"), r"mine.csv:2: field 'vcpus': expected an integer in"),
        (ROW.replace(",2,4,", ",2.5,4,"), r"field 'vcpus'"),
        (ROW.replace("0.2,my", "-1,my"), r"mine.csv:2: field 'price_usd_hour'"),
        (ROW.replace("6.25", "fast"), r"field 'network_gbps'"),
        (ROW.replace("arm64", "riscv"), r"field 'arch': expected one of x86_64, arm64"),
        (ROW.replace(",true,", ",maybe,"), r"field 'network_burst'"),
        (ROW.replace("my quote", ""), r"field 'source': must not be empty"),
        (ROW + ",extra", r"wrong number of fields"),
    ],
)
def test_validation_names_file_line_and_field(tmp_path, row, message):
    with pytest.raises(InputError, match=message):
        catalog.read_catalog(_write(tmp_path, row))


def test_duplicates_and_missing_columns(tmp_path):
    with pytest.raises(
        InputError, match=r"mine.csv:3: duplicate instance aws/us-east-1/c7gn.large"
    ):
        catalog.read_catalog(_write(tmp_path, ROW, ROW))
    bad = tmp_path / "bad.csv"
    bad.write_text("provider,region\naws,x\n")
    with pytest.raises(InputError, match=r"bad.csv:1: missing column\(s\) instance_type"):
        catalog.read_catalog(bad)
    with pytest.raises(InputError, match="does not exist"):
        catalog.read_catalog(tmp_path / "nope.csv")


def test_filters():
    items = catalog.load_catalog()
    arm_gcp = catalog.filter_catalog(items, provider="gcp", arch="arm64")
    assert {i.cpu for i in arm_gcp} == {"Ampere Altra", "Google Axion"}
    assert {"t2a-standard", "c4a-standard", "c4a-highcpu", "n4a-standard"} <= {
        i.family for i in arm_gcp
    }
    two = catalog.filter_catalog(items, family="c7gn,c6gn")
    assert {i.family for i in two} == {"c7gn", "c6gn"}
    assert catalog.filter_catalog(items, region="us-east-1", family=["c7i"])[0].provider == "aws"
    with pytest.raises(
        InputError, match="unknown provider oracle; expected one of: aws, azure, gcp"
    ):
        catalog.filter_catalog(items, provider="oracle")


@pytest.mark.parametrize(
    "field,raw",
    [
        ("vcpus", "1e8"),
        ("vcpus", "1e300"),
        ("memory_gib", "1e9"),
        ("network_gbps", "1e-320"),
        ("network_gbps", "inf"),
        ("price_usd_hour", "1e300"),
        ("price_usd_hour", "nan"),
        ("spot_usd_hour", "-1"),
        ("commit_1y_usd_hour", "0"),
        ("network_burst_gbps", "1e400"),
        ("coremark", "1e12"),
    ],
)
def test_every_number_has_a_sane_range(tmp_path, field, raw):
    cols = list(BUILD_COLUMNS)
    values = dict(zip(catalog.COLUMNS, ROW.split(","), strict=True))
    values[field] = raw
    p = tmp_path / "mine.csv"
    p.write_text(",".join(cols) + "\n" + ",".join(values.get(c, "") for c in cols) + "\n")
    with pytest.raises(InputError, match=rf"mine.csv:2: field '{field}': expected"):
        catalog.read_catalog(p)


def test_select_instances_regions(tmp_path):
    default = catalog.select_instances()
    assert {i.region for i in default} == set(catalog.DEFAULT_REGIONS)
    assert len(catalog.select_instances(region="all")) == len(catalog.load_catalog())
    assert {i.region for i in catalog.select_instances(region="europe-west4")} == {"europe-west4"}
    with pytest.raises(InputError, match="unknown region mars-1; expected all or one of"):
        catalog.select_instances(region="mars-1")
    mine = _write(
        tmp_path, "onprem,lab,box-1,box,x86_64,Xeon,8,32,10,false,0.5,our invoice,2026-10-01"
    )
    got = catalog.select_instances([mine])
    assert ("onprem", "lab", "box-1") in {i.key for i in got}


def test_one_column_list():
    """The builder writes and the reader reads `BUILD_COLUMNS`; the reader's typed table and
    the `Instance` it fills name the same columns in the same order (plus the file a row
    came from), so a column added in one place and not the others fails here."""
    from dataclasses import fields

    assert catalog.COLUMNS is COLUMNS
    names = [f.name for f in catalog.CATALOG]
    assert [n for n in names if n != "catalog_file"] == list(BUILD_COLUMNS)
    assert [f.name for f in fields(catalog.Instance)] == names
