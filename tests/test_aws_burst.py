"""AWS's "up to" bandwidths: the burst table's extract script and its use in sizing."""

import csv
import importlib.util
from pathlib import Path
from types import SimpleNamespace

from sizing.catalog import aws
from sizing.workload.value import Workload

#: Lines of backend/data/AWS/ec2-types.md in jihoo529/ragstone@fc702f1 (the Markdown copy of
#: AWS's "Amazon EC2: Instance Types" 2024): a network table's header and rows (names split
#: and footnoted by the PDF's text extraction; the header cut short), then EBS rows of the
#: same "a / b" form.
GUIDE_EXCERPT = """\
|Instance type|Baseline / Burst bandwidth (Gbps)|EFA|ENA|ENA Express|Network cards|...|
|---|---|---|---|---|---|---|---|---|
|M6gd|||||||||
|m6gd.medi 1 um|0.5 / 10.0|\u2717|\u2713|\u2717|1|2|4|\u2713|
|1 c5a.xlarge|1.25 / 10.0|\u2717|\u2713|\u2717|1|4|15|\u2713|
|m6gd.12xl arge|20 Gigabit|\u2717|\u2713|\u2717|1|8|30|\u2713|
|1 c5a.xlarge|400.00 / 3170.00|50.00 / 396.25|1600.00 / 13300.00|\u2713|default|
|c7gn.4xlarge 1|8333.00 / 10000.00|1041.62 / 1250.00|33333.00 / 40000.00|\u2713|default|
"""


def _extract():
    path = (
        Path(__file__).resolve().parents[1] / "data" / "upstream" / "aws-network" / "burst_table.py"
    )
    spec = importlib.util.spec_from_file_location("aws_network_extract", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_extract_reads_network_rows_and_skips_ebs_rows():
    rows = _extract().network_rows(GUIDE_EXCERPT)
    assert rows == {
        "m6gd.medium": (0.5, 10.0, True, 4),
        "c5a.xlarge": (1.25, 10.0, True, 5),
        "m6gd.12xlarge": (20.0, 20.0, False, 6),
    }


def test_extract_keeps_earlier_rows_the_guide_lacks():
    earlier = (
        "instance_type,baseline_gbps,burst_peak_gbps,network_burst,source\n"
        "c8g.large,0.937,12.5,true,x\n"
    )
    text = _extract().rows_csv(GUIDE_EXCERPT, earlier)
    names = [r["instance_type"] for r in csv.DictReader(text.splitlines())]
    assert names == ["c5a.xlarge", "c8g.large", "m6gd.12xlarge", "m6gd.medium"]


def test_shipped_table_gives_c5a_xlarge_its_burst():
    table = aws.read_burst_table(aws.DEFAULT_BURST_TABLE)
    assert table["c5a.xlarge"] == (True, 10.0)
    assert len(table) > 700
    inst = SimpleNamespace(
        provider="aws",
        instance_type="c5a.xlarge",
        vcpus=4,
        network_gbps=1.25,
        network_burst_gbps=None,
    )
    burst, how = aws.network_gbps(inst, Workload(burst_network=True))
    assert burst == 10.0 and "'up to' peak" in how
    assert aws.network_gbps(inst, Workload())[0] == 1.25
