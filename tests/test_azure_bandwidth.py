"""The extract of Azure's published bandwidth tables (data/upstream/azure/bandwidth.py)."""

import importlib.util

from sizing.catalog import azure

#: The Network tab of articles/virtual-machines/sizes/compute-optimized/falsv6-series.md
#: (MicrosoftDocs/azure-compute-docs@0b0136e2c8b1, CC BY 4.0), as published: note "36,000".
FALSV6 = """### [Network](#tab/sizenetwork)

Network interface info for each size

| Size Name | Max NICs (Qty.) | Max Network Bandwidth (Mb/s) |
| --- | --- | --- |
| Standard_F2als_v6 | 2 | 12500 |
| Standard_F64als_v6 | 8 | 36,000 |

#### Networking resources
"""

#: Other spellings the parser accepts; the layouts are those of the size pages.
OTHER_FORMS = """| Size | vCPU | Max NICs / Expected network bandwidth (Mbps) |
| --- | --- | --- |
| Standard_D1_v2 | 1 | 2 / 750 |

| Size Name | Max NICs (Qty.) | Max Network Bandwidth (Gbps) |
|---|---|---|
| Standard_X8<sup>1</sup> | 4 | Up to 12.5 |
| Standard_X16 | 8 | N/A |

| Size Name | Max Remote Storage Disks (Qty.) | Burst Bandwidth (MB/s) |
| --- | --- | --- |
| Standard_F2als_v6 | 4 | 4000 |

| Size Name | Max NICs (Qty.) | Max Bandwidth (Mbps) |
| --- | --- | --- |
| Standard_D2ds_v5 | 2 | 12500 |
"""


#: Forms of the older size pages (MicrosoftDocs/azure-compute-docs, CC BY 4.0; the cells as
#: published, the storage columns between them left out):
#: ev3-esv3-series.md@fd6a290d3eba (a unitless combined column, then one in Mbps),
#: ebdsv5-ebsv5-series.md@76e3d22a34ca ("Network bandwidth", no unit), lsv2-series.md@0eeb1929a473
#: ("16,000+", a lower bound) and ecasv5-ecadsv5-series.md@9ed072b872e3 (rows with no closing "|").
OLDER_PAGES = """| Size | vCPU | Max NICs / Network bandwidth |
|---|---|---|
| Standard_E2_v3<sup>1</sup>  | 2  | 2/1000  |

| Size | vCPU | Max NICs/ Expected network bandwidth  (Mbps) |
|---|---|---|
| Standard_E2s_v3<sup>4</sup>                | 2  | 2/1000 |

| Size | vCPU | Max NICs | Network bandwidth |
|----------------------|-----|---|-------|
| Standard_E2bds_v5    | 2   | 2 | 12500 |

| Size Name | Max NICs (Qty.) | Max Network Bandwidth (Mbps) |
| --- | --- | --- |
| Standard_L32s_v2 | 8 | 12,800 |
| Standard_L48s_v2 | 8 | 16,000+ |

| Size | vCPU | Max NICs | Max network bandwidth (Mbps)
|---|---|---|---|
| Standard_EC2as_v5  | 2  | 2 | 3000
"""


def test_unitless_columns_and_lower_bounds_are_left_unread():
    b = _script()
    assert b.network_rows(OLDER_PAGES) == [
        ("Standard_E2s_v3", 1000.0),
        ("Standard_L32s_v2", 12800.0),
        ("Standard_EC2as_v5", 3000.0),
    ]


def _script():
    spec = importlib.util.spec_from_file_location("bandwidth", azure.FOLDER / "bandwidth.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_network_table_is_read_by_its_column_name():
    b = _script()
    assert b.network_rows(FALSV6) == [
        ("Standard_F2als_v6", 12500.0),
        ("Standard_F64als_v6", 36000.0),
    ]
    assert b.network_rows(OTHER_FORMS) == [
        ("Standard_D1_v2", 750.0),
        ("Standard_X8", 12500.0),
        ("Standard_D2ds_v5", 12500.0),
    ]


def test_known_sizes_are_kept_and_a_conflict_is_reported():
    b = _script()
    pages = [
        ("a/falsv6-series.md", "0b0136e2c8b19b69ce4e", FALSV6),
        ("b/other.md", "1234567890abcdef", FALSV6.replace("36,000", "40000")),
    ]
    rows, conflicts = b.bandwidth_table(pages, {"Standard_F64als_v6"})
    assert rows == [["Standard_F64als_v6", "36000", "a/falsv6-series.md", "0b0136e2c8b1"]]
    assert conflicts == ["Standard_F64als_v6: 36000 (a/falsv6-series.md), 40000 (b/other.md)"]
    dav4 = (
        "| Size Name | Max Network Bandwidth (Mb/s) |\n| --- | --- |\n| Standard_D2a_v41 | 2000 |\n"
    )
    rows2, _ = b.bandwidth_table([("p.md", "0" * 40, dav4)], {"Standard_D2a_v4"})
    assert [r[:2] for r in rows2] == [["Standard_D2a_v4", "2000"]]
    text = b.render(rows)
    assert text.startswith("# Max Network Bandwidth") and "CC BY 4.0" in text.splitlines()[0]


def test_the_shipped_extract_reads_and_names_pages_at_commits():
    b = _script()
    published = azure.read_bandwidth(azure.FOLDER)
    assert published["Standard_F1als_v7"] == 16.0 and published["Standard_F2s_v2"] == 5.0
    rows = azure.extract_rows(azure.FOLDER / "bandwidth.csv")
    known = b.known_sizes(azure.FOLDER / "sizes.csv")
    for row in rows:
        assert row["size"] in known and row["page"].startswith(b.SIZES_ROOT)
        assert len(row["commit"]) == 12 and int(row["commit"], 16) >= 0
