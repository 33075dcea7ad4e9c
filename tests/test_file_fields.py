"""Every file kind's declared fields (`trialtable.fields`) hold on every reader of that kind.

For each kind (catalog CSV and its compact form, cloud measurements, crypto figures, egress
prices, the AWS burst table, workload files, inventories, histograms and started records),
hypothesis makes rows with one field out of range or malformed and checks one error naming
file, line and field (never another exception); rows with every field in range read back.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runners.cli import main as runners_cli
from sizing.catalog import aws, egress, load
from sizing.catalog.rows import BUILD_COLUMNS
from sizing.errors import InputError
from sizing.fitting import cloudtruth
from sizing.model import crypto, gzip
from sizing.paths import DATA_DIR
from sizing.workload import accesslog
from trialtable.fields import MAX_NUMBER_TEXT, Field, FieldError
from trialtable.folder import HISTOGRAM, RunFolder, RunFolderError, new_run_id, outstanding
from trialtable.zlib import ZLIB_LEVELS

FAST = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def bad_text(f: Field) -> st.SearchStrategy[str]:
    """Texts a numeric field must refuse: out of range, not finite, malformed, too long."""
    options = [
        st.sampled_from(["nan", "NaN", "inf", "-inf", "1e999", "abc", "=1+2", "0x10", "1,5"]),
        st.just("1" * 100_000),
        st.just("9" * (MAX_NUMBER_TEXT + 1)),
    ]
    if f.low > -math.inf:
        below = st.floats(max_value=float(f.low), exclude_max=True, min_value=-1e300)
        options.append(below.map(repr))
    if f.high < math.inf:
        above = st.floats(min_value=float(f.high), exclude_min=True, max_value=1e300)
        options.append(above.map(repr))
    if f.kind == "int" and f.low + 0.5 <= f.high:
        options.append(st.just(repr(f.low + 0.5)))
    return st.one_of(options)


def bad_json(f: Field) -> st.SearchStrategy[Any]:
    """Typed values (as JSON or TOML give them) a numeric field must refuse."""
    options: list[st.SearchStrategy[Any]] = [
        st.sampled_from([math.nan, math.inf, -math.inf, True, "1", None, [1], {"a": 1}]),
        st.just(10**30),
    ]
    if f.low > -math.inf:
        options.append(st.floats(max_value=float(f.low), exclude_max=True, min_value=-1e300))
    if f.high < math.inf:
        options.append(st.floats(min_value=float(f.high), exclude_min=True, max_value=1e300))
    return st.one_of(options)


def good_text(f: Field) -> st.SearchStrategy[str]:
    """Texts within the field's range."""
    if f.kind == "int":
        return st.integers(math.ceil(f.low), int(f.high)).map(str)
    return st.floats(f.low, f.high, allow_nan=False).map(repr)


def _csv(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def _first_row(path: Path) -> tuple[list[str], dict[str, str]]:
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline=""))
    return list(reader.fieldnames or ()), next(iter(reader))


def _refused(exc: BaseException, path: Path, line: int, name: str) -> None:
    text = str(exc)
    assert f"{path}:{line}:" in text and f"field {name!r}" in text, text
    assert "\n" not in text and len(text) < 1000


# ------------------------------------------------------------------------ catalog, both forms

CAT_HEADER = list(BUILD_COLUMNS)
CAT_ROW = {
    **dict.fromkeys(CAT_HEADER, ""),
    "provider": "aws",
    "region": "r-1",
    "instance_type": "x.large",
    "family": "x",
    "arch": "x86_64",
    "cpu": "Intel",
    "vcpus": "2",
    "memory_gib": "4",
    "network_gbps": "1",
    "network_burst": "false",
    "price_usd_hour": "0.1",
    "source": "test",
}
CAT_NUMBERS = [f.name for f in load.CATALOG.numbers()]


@FAST
@given(name=st.sampled_from(CAT_NUMBERS), data=st.data())
def test_catalog_csv_refuses_every_bad_number(tmp_path, name, data):
    raw = data.draw(bad_text(load.CATALOG[name]))
    path = _csv(tmp_path / "c.csv", CAT_HEADER, [{**CAT_ROW, name: raw}])
    with pytest.raises(InputError) as exc:
        load.read_catalog(path)
    _refused(exc.value, path, 2, name)


@FAST
@given(name=st.sampled_from(CAT_NUMBERS), data=st.data())
def test_catalog_csv_reads_back_every_number_in_range(tmp_path, name, data):
    f = load.CATALOG[name]
    raw = data.draw(good_text(f))
    row = {**CAT_ROW, name: raw, "vcpus": "4096" if name != "vcpus" else raw}
    if name == "network_burst_gbps":
        row["network_gbps"] = "0.001"
    (inst,) = load.read_catalog(_csv(tmp_path / "c.csv", CAT_HEADER, [row]))
    assert getattr(inst, name) == (int(raw) if f.kind == "int" else float(raw))


def _tampered_compact(tmp_path: Path, name: str, value: Any) -> tuple[Path, Path]:
    """A valid catalog with a current compact form whose one row holds ``value`` at ``name``."""
    csv_path = _csv(tmp_path / "c.csv", CAT_HEADER, [CAT_ROW])
    compact = load.write_compact(csv_path)
    lines = compact.read_text(encoding="utf-8").split("\n")
    rows = json.loads(lines[1])
    rows[0][load.FIELD_NAMES.index(name)] = value
    lines[1] = json.dumps(rows)
    compact.write_text("\n".join(lines), encoding="utf-8")
    return csv_path, compact


@FAST
@given(name=st.sampled_from(CAT_NUMBERS), data=st.data())
def test_compact_catalog_refuses_what_the_csv_refuses(tmp_path, name, data):
    value = data.draw(bad_json(load.CATALOG[name]))
    f = load.CATALOG[name]
    if value is None and not f.required:
        return  # an empty optional field: the CSV takes it too
    csv_path, compact = _tampered_compact(tmp_path, name, value)
    with pytest.raises(InputError) as exc:
        load.load_catalog(base=csv_path)
    _refused(exc.value, compact, 2, name)


def test_compact_catalog_refuses_zero_vcpus_and_a_negative_price(tmp_path):
    for name, value in (("vcpus", 0), ("price_usd_hour", -0.01), ("vcpus", 10**30)):
        csv_path, _ = _tampered_compact(tmp_path, name, value)
        with pytest.raises(InputError, match=rf"c\.compact\.jsonl:2: field '{name}'"):
            load.load_catalog(base=csv_path)


# ---------------------------------------------------------------- the new data files (CSV)

KINDS = {
    "measurements": (
        DATA_DIR / "cloud" / "measurements.csv",
        [cloudtruth.MEASUREMENTS[n] for n in cloudtruth.RANGES] + [cloudtruth.VALUE_FIELDS["rps"]],
        cloudtruth.load_cloud_measurements,
    ),
    "crypto": (
        DATA_DIR / "reference" / "crypto-current.csv",
        [crypto.FIGURES[n] for n in ("clock_ghz", "threads", "value")],
        crypto.load_figures,
    ),
    "egress": (
        DATA_DIR / "catalog" / "egress.csv",
        [egress.EGRESS[n] for n in ("from_gib", "to_gib", "usd_per_gib")],
        egress.read_egress,
    ),
    "zlib levels": (
        gzip.ZLIB_LEVELS_PATH,
        [ZLIB_LEVELS[n] for n in ("level", "cpu_vs_level1", "output_vs_level1")],
        gzip.load_levels,
    ),
    "burst": (
        aws.DEFAULT_BURST_TABLE,
        [aws.BURST[n] for n in ("baseline_gbps", "burst_peak_gbps")],
        aws.read_burst_table,
    ),
}
CASES = [(kind, f.name) for kind, (_, fields, _) in KINDS.items() for f in fields]


@FAST
@given(case=st.sampled_from(CASES), data=st.data())
def test_data_files_refuse_every_bad_number(tmp_path, case, data):
    kind, name = case
    shipped, fields, read = KINDS[kind]
    f = next(f for f in fields if f.name == name)
    header, row = _first_row(shipped)
    raw = data.draw(bad_text(f))
    if kind == "crypto" and name == "value" and raw.startswith("9"):
        return  # a long run of nines is refused too, but by the operation's range
    path = _csv(tmp_path / f"{kind}.csv", header, [{**row, name: raw}])
    with pytest.raises(InputError) as exc:
        read(path)
    _refused(exc.value, path, 2, name)


def test_shipped_data_files_read_by_their_tables():
    for shipped, _, read in KINDS.values():
        assert len(read(shipped)) > 0


# --------------------------------------------------------------------------- workload files


def _workload() -> dict[str, Any]:
    return {
        "format": accesslog.FORMAT,
        "requests": 1000,
        "span_s": 60,
        "rps": {"percentile": 99, "peak": 30.0, "max_second": 40.0, "mean": 16.0},
    }


WORKLOAD_PATHS = ["requests", "span_s", "rps.percentile", "rps.peak", "rps.max_second"]


@FAST
@given(name=st.sampled_from(WORKLOAD_PATHS), data=st.data())
def test_workload_files_refuse_every_bad_number(name, data):
    value = data.draw(bad_json(accesslog.WORKLOAD[name]))
    doc = _workload()
    *parent, key = name.split(".")
    (doc[parent[0]] if parent else doc)[key] = value
    with pytest.raises(InputError, match=rf"w\.json: (rps: )?{key} is .*expected a number in"):
        accesslog.validate_workload(doc, "w.json")


def test_a_workload_file_in_range_reads_back():
    assert accesslog.validate_workload(_workload(), "w.json")["rps"]["peak"] == 30.0


# ------------------------------------------------------------------------------- inventory


@FAST
@given(
    key=st.sampled_from(["server", "clients", "target_address", "accept_new_host_keys"]),
    value=st.sampled_from(["1", "1.5", "true", "[1]", "{a = 1}", '"' + "h" * 2000 + '"']),
)
def test_an_inventory_value_of_the_wrong_kind_is_one_line_exit_2(tmp_path, capsys, key, value):
    if key == "accept_new_host_keys" and value == "true":
        return
    inv = tmp_path / "inv.toml"
    inv.write_text(f"{key} = {value}\n", encoding="utf-8")
    code = runners_cli.main(
        ["sweep", "--server", "sim", "--inventory", str(inv), "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and f"inventory {inv}: field {key!r}" in err


# -------------------------------------------------------------- run folder: histograms, pids


@FAST
@given(which=st.sampled_from(["latency_us", "count"]), data=st.data())
def test_a_bad_histogram_pair_is_named_by_line(tmp_path, which, data):
    value = data.draw(bad_json(HISTOGRAM[which]))
    out = tmp_path / f"o{data.draw(st.integers(0, 10**9))}"
    folder = RunFolder.create(out, {"run_id": new_run_id("t"), "plan": {}})
    folder.close()
    pair = [value, 5] if which == "latency_us" else [100, value]
    good = json.dumps({"trial_id": "t-1", "clients": {"local": [[100, 5]]}})
    bad = json.dumps({"trial_id": "t-2", "clients": {"local": [pair]}})
    folder.histograms_path.write_text(f"{good}\n{bad}\n", encoding="utf-8")
    with pytest.raises(RunFolderError, match=rf"histograms\.jsonl:2: field '{which}'"):
        list(folder.histograms())


@FAST
@given(pid=st.one_of(st.integers(-(10**30), 0), st.integers(2**22 + 1, 10**30), st.just("1e3")))
def test_started_records_keep_only_pids_in_range(tmp_path, pid):
    d = tmp_path / f"r{abs(hash(str(pid)))}"
    d.mkdir()
    line = {"event": "started", "host": "local", "path": "/p", "pids": [pid, 42]}
    (d / "started.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    (entry,) = outstanding(d)
    assert entry["pids"] == [42]


def test_a_field_never_raises_anything_but_field_error():
    f = Field("n", "int", "", 1, 10)
    for raw in ("", "1" * 100_000, "\x1b[2J", "1e309", "-0", "5.0", " 7 "):
        try:
            f.parse(raw, "x:1")
        except FieldError as exc:
            assert "\x1b" not in str(exc)
    assert f.parse(" 7 ", "x:1") == 7 and f.parse("5.0", "x:1") == 5
    big = Field("requests", "int", "", 0, 2**63 - 1)
    assert big.parse("9223372036854775807", "x:1") == 2**63 - 1  # every digit kept
