import pytest

from sizing import catalog
from sizing.errors import InputError

HEADER = ",".join(catalog.COLUMNS)


def _write(tmp_path, *lines, name="mine.csv"):
    p = tmp_path / name
    p.write_text("\n".join([HEADER, *lines]) + "\n")
    return p


ROW = "aws,us-east-1,c7gn.large,c7gn,arm64,AWS Graviton3E,2,4,6.25,true,0.2,my quote,2026-11-01"


def test_shipped_catalog_loads_with_provenance():
    items = catalog.load_catalog()
    assert len(items) == 119
    assert {i.provider for i in items} == {"aws", "gcp"}
    assert all(i.source and i.source_date for i in items)
    t2a = next(i for i in items if i.instance_type == "t2a-standard-32")
    assert t2a.price_usd_hour == 1.232 and t2a.vcpus == 32 and t2a.arch == "arm64"


def test_user_catalog_replaces_and_adds(tmp_path):
    extra = _write(
        tmp_path,
        ROW,
        "onprem,lab,box-1,box,x86_64,Xeon,8,32,10,false,0.5,our invoice,2026-10-01",
    )
    items = {i.key: i for i in catalog.load_catalog([extra])}
    assert len(items) == 120
    assert items[("aws", "us-east-1", "c7gn.large")].price_usd_hour == 0.2
    assert items[("aws", "us-east-1", "c7gn.large")].source == "my quote"
    assert items[("onprem", "lab", "box-1")].vcpus == 8


@pytest.mark.parametrize(
    "row,message",
    [
        (ROW.replace(",2,4,", ",0,4,"), r"mine.csv:2: field 'vcpus': expected a positive integer"),
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
    assert {i.family for i in arm_gcp} == {"t2a-standard", "c4a-standard"}
    two = catalog.filter_catalog(items, family="c7gn,c6gn")
    assert {i.family for i in two} == {"c7gn", "c6gn"}
    assert catalog.filter_catalog(items, region="us-east-1", family=["c7i"])[0].provider == "aws"
    with pytest.raises(InputError, match="unknown provider azure; expected one of: aws, gcp"):
        catalog.filter_catalog(items, provider="azure")
