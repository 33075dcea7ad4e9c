"""Property-based tests of the loaders: user catalogs and run folders, damaged in every way.

A catalog or run folder that is generated, truncated, sprinkled with random bytes or given
values at the edges of float range must be used (exit 0), found infeasible (1) or refused
(2) in one line, never with a traceback, a hang or a memory blow-up. A refusal names the file;
a refusal caused by one bad field names the file, the line and the field.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from sizing.paths import CATALOG_DIR
from tests.fuzzworker import Result, Worker, check_clean
from tests.test_fuzz_cli import EDGE_NUMBERS, fuzz_settings
from trialtable.schema import BY_NAME

SHIPPED = CATALOG_DIR / "instances.csv"

field_values = st.one_of(
    st.sampled_from(EDGE_NUMBERS),
    st.sampled_from(["1e8", "1e9", "1e300", "-5", "0.5", "2.5", "true", "maybe", "x86", "ARM64"]),
    st.floats().map(repr),
    st.integers(min_value=-(2**64), max_value=2**64).map(str),
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs",), blacklist_characters="\x00\r\n\u2028\u2029\x85"
        ),
        max_size=10,
    ),
)


def _shipped_rows(n: int) -> tuple[list[str], list[list[str]]]:
    with SHIPPED.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1 : 1 + n]


def _csv_text(header: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def names_file(result: Result, path: Path) -> bool:
    """Whether the failure message names ``path`` (as given, or only its file name)."""
    return str(path) in result.stderr or path.name in result.stderr


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("fuzz-cwd"))
    yield w
    w.close()


#: Catalog columns that hold numbers (sizes, bandwidths, prices).
NUMERIC = ("vcpus", "memory_gib", "network_gbps", "network_burst_gbps", "price_usd_hour")


def _write_catalog(tmp_path: Path, row: int, col: int, value: str) -> tuple[Path, list[str]]:
    header, rows = _shipped_rows(4)
    rows[row][col] = value
    path = tmp_path / "mine.csv"
    path.write_text(_csv_text(header, rows), encoding="utf-8")
    return path, header


def _recommend_with(worker: Worker, path: Path) -> Result:
    return worker.run(
        "sizing", ["recommend", "--rps", "1e6", "--catalog", str(path), "--format", "json"]
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [("vcpus", "1e308"), ("vcpus", "1e9"), ("network_gbps", "1e-320"), ("price_usd_hour", "1e300")],
)
def test_absurd_catalog_numbers_are_refused_naming_file_line_and_field(
    worker: Worker, tmp_path: Path, column: str, value: str
) -> None:
    header = _shipped_rows(1)[0]
    path, _ = _write_catalog(tmp_path, 0, header.index(column), value)
    result = _recommend_with(worker, path)
    check_clean(result, "python -m sizing")
    assert result.code == 2 and f"{path}:2" in result.stderr and column in result.stderr


@fuzz_settings(60)
@given(data=st.data())
def test_catalog_field_values(worker: Worker, tmp_path: Path, data: st.DataObject) -> None:
    """One field of one row replaced: used, or refused naming file, line and field."""
    header, rows = _shipped_rows(4)
    row = data.draw(st.integers(0, len(rows) - 1), label="row")
    col = data.draw(st.integers(0, len(header) - 1), label="column")
    value = data.draw(field_values, label="value")
    assume(value != rows[row][col])
    path, header = _write_catalog(tmp_path, row, col, value)
    result = _recommend_with(worker, path)
    check_clean(result, "python -m sizing")
    if result.code == 2:
        message = result.stderr.strip().splitlines()[-1]
        assert f"{path}:{row + 2}" in message, message
        if "duplicate" not in message:
            assert header[col] in message, message


@fuzz_settings(40)
@given(data=st.data())
def test_catalog_damaged_bytes(worker: Worker, tmp_path: Path, data: st.DataObject) -> None:
    """Truncated, byte-flipped or random files: used or refused naming the file."""
    original = _csv_text(*_shipped_rows(5)).encode()
    how = data.draw(st.sampled_from(["truncate", "insert", "random", "empty-lines"]))
    if how == "truncate":
        blob = original[: data.draw(st.integers(0, len(original) - 1))]
    elif how == "insert":
        at = data.draw(st.integers(0, len(original)))
        blob = original[:at] + data.draw(st.binary(min_size=1, max_size=8)) + original[at:]
    elif how == "random":
        blob = data.draw(st.binary(max_size=400))
    else:
        blob = original.replace(b"\n", b"\n\n\r\n", data.draw(st.integers(1, 3)))
    path = tmp_path / "damaged.csv"
    path.write_bytes(blob)
    result = worker.run("sizing", ["catalog", "--catalog", str(path)])
    check_clean(result, "python -m sizing")
    assert result.code in (0, 2)
    if result.code == 2:
        assert names_file(result, path), result.stderr


# ----------------------------------------------------------------------------- run folders


@pytest.fixture(scope="module")
def sim_run(worker: Worker, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small simulated sweep: a real run folder written by the runners."""
    out = tmp_path_factory.mktemp("runs")
    result = worker.run(
        "runners",
        [
            "sweep",
            "--server",
            "sim",
            "--vcpus",
            "1,2,4",
            "--connections",
            "8,64",
            "--duration",
            "1s",
            "--label",
            "c7g.large",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.code == 0, result.stderr
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    return run


def _copy(run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "runs" / run.name
    if dest.parent.exists():
        shutil.rmtree(dest.parent)
    shutil.copytree(run, dest)
    return dest


def _fit(worker: Worker, run: Path) -> Result:
    return worker.run("sizing", ["fit", "--runs", str(run), "--allow-simulated"])


@fuzz_settings(40)
@given(data=st.data())
def test_run_folder_trials_field_values(
    worker: Worker, sim_run: Path, tmp_path: Path, data: st.DataObject
) -> None:
    """One field of ``trials.csv`` replaced: used, or refused naming file, line and field.

    The column is drawn among those the reader checks (numbers, flags, the run id) half of
    the time, so that most examples reach a refusal rather than a free-text column.
    """
    run = _copy(sim_run, tmp_path)
    path = run / "trials.csv"
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    line = data.draw(st.integers(1, len(rows) - 1), label="line")
    checked = [i for i, name in enumerate(rows[0]) if BY_NAME[name].kind != "str"]
    col = data.draw(
        st.one_of(st.sampled_from(checked), st.integers(0, len(rows[0]) - 1)), label="column"
    )
    value = data.draw(field_values, label="value")
    assume(value != rows[line][col])
    rows[line][col] = value
    path.write_text(_csv_text(rows[0], rows[1:]))
    result = _fit(worker, run)
    check_clean(result, "python -m sizing")
    event(f"exit {result.code}")
    if result.code == 2:
        message = result.stderr.strip().splitlines()[-1]
        assert str(run) in message, message
        assert re.search(rf"trials\.csv:{line + 1}\b", message), message
        assert f"column {rows[0][col]}" in message, message


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("vcpus", "two", "is not an integer"),
        ("vcpus", "0", "is not within [1, 100000]"),
        ("rps", "1e309", "is not within"),
        ("rps", "nan", "is not a number"),
        ("latency_p99_ms", "-1", "is not within"),
        ("requests", str(2**64), "is not within"),
        ("meets_sla", "maybe", "is not true or false"),
        ("run_id", "another-run", "is not the folder's"),
    ],
)
def test_a_bad_trials_value_is_named_by_line_and_field(
    worker: Worker, sim_run: Path, tmp_path: Path, column: str, value: str, expected: str
) -> None:
    """The property's refusals, each for sure: exit 2, ``trials.csv:LINE: column NAME``."""
    run = _copy(sim_run, tmp_path)
    path = run / "trials.csv"
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    rows[3][rows[0].index(column)] = value
    path.write_text(_csv_text(rows[0], rows[1:]))
    result = _fit(worker, run)
    check_clean(result, "python -m sizing")
    assert result.code == 2, result.stderr
    assert f"{run}: trials.csv:4: column {column}: {value[:40]!r} {expected}" in result.stderr


@fuzz_settings(40)
@given(data=st.data())
def test_run_folder_damaged_files(
    worker: Worker, sim_run: Path, tmp_path: Path, data: st.DataObject
) -> None:
    """Truncated, emptied, binary or missing run files: refused naming the folder and file."""
    run = _copy(sim_run, tmp_path)
    name = data.draw(st.sampled_from(["trials.csv", "run.json", "histograms.jsonl"]))
    path = run / name
    original = path.read_bytes()
    how = data.draw(st.sampled_from(["truncate", "insert", "random", "empty", "missing", "rename"]))
    if how == "truncate":
        path.write_bytes(original[: data.draw(st.integers(0, max(0, len(original) - 1)))])
    elif how == "insert":
        at = data.draw(st.integers(0, len(original)))
        path.write_bytes(
            original[:at] + data.draw(st.binary(min_size=1, max_size=8)) + original[at:]
        )
    elif how == "random":
        path.write_bytes(data.draw(st.binary(max_size=300)))
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "missing":
        path.unlink()
    else:
        header, _, rest = original.partition(b"\n")
        cols = header.split(b",")
        i = data.draw(st.integers(0, len(cols) - 1))
        cols[i] = cols[i] + b"_renamed"
        path.write_bytes(b",".join(cols) + b"\n" + rest)
    result = _fit(worker, run)
    check_clean(result, "python -m sizing")
    event(f"{name} {how}: exit {result.code}")
    if result.code != 0:
        assert str(run) in result.stderr and name in result.stderr, result.stderr


def _resume(worker: Worker, run: Path) -> Result:
    return worker.run(
        "runners",
        [
            "sweep",
            "--server",
            "sim",
            "--resume",
            run.name,
            "--vcpus",
            "1,2,4",
            "--connections",
            "8,64",
            "--duration",
            "1s",
            "--label",
            "c7g.large",
            "--out",
            str(run.parent),
            "--quiet",
        ],
    )


@fuzz_settings(30)
@given(data=st.data())
def test_resume_of_a_damaged_run(
    worker: Worker, sim_run: Path, tmp_path: Path, data: st.DataObject
) -> None:
    """``--resume`` of a damaged run: resumed, or refused in one line naming the run."""
    run = _copy(sim_run, tmp_path)
    name = data.draw(st.sampled_from(["trials.csv", "run.json", "histograms.jsonl"]))
    path = run / name
    original = path.read_bytes()
    how = data.draw(st.sampled_from(["truncate", "random", "empty", "missing", "plan"]))
    if how == "truncate":
        path.write_bytes(original[: data.draw(st.integers(0, max(0, len(original) - 1)))])
    elif how == "random":
        path.write_bytes(data.draw(st.binary(max_size=300)))
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "missing":
        path.unlink()
    else:
        meta = json.loads((run / "run.json").read_text())
        key = data.draw(st.sampled_from(sorted(meta)))
        meta[key] = data.draw(st.sampled_from([None, 0, "", [], {}, "x", 1e308]))
        (run / "run.json").write_text(json.dumps(meta))
    result = _resume(worker, run)
    check_clean(result, "python -m runners")
    event(f"{name} {how}: exit {result.code}")
    if result.code != 0:
        assert run.name in result.stderr, result.stderr
        # A damaged file is named; a changed plan is a run planned otherwise (named by key),
        # and a key that is not of its type is named with the file.
        assert how == "plan" or name in result.stderr, result.stderr
        if how == "plan" and key == "simulated" and not isinstance(meta[key], bool):
            assert "run.json field 'simulated'" in result.stderr, result.stderr
