"""``python -m runners import``: real tools' result files into run folders, and bad input.

The files in ``tests/data/importers`` were written by hey and Locust, by wrk through the
``hdrhistogram`` package, and in k6's and vegeta's documented formats from a real local
measurement (README.md there says how each was recorded).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path

import pytest

from runners.cli.main import main as runners_main
from runners.importers.record import Setting, import_files
from runners.loadgen import latency_summary
from trialtable.read import read_rows

DATA = Path(__file__).parent / "data" / "importers"


def _one(out: Path, name: str, fmt: str, **kw: object) -> dict:
    run = import_files([str(DATA / name)], fmt, Setting(label="c7g.large", vcpus=1, **kw), str(out))
    (row,) = read_rows(run)
    return {"run": run, **row}


def _summary(latencies_us: list[int]) -> dict[str, float]:
    """Percentiles of raw latencies, with wrk's rank rule (an independent histogram)."""
    hist: dict[int, int] = {}
    for us in latencies_us:
        hist[us] = hist.get(us, 0) + 1
    return latency_summary(hist)


def test_k6_json_matches_its_own_samples_and_the_summary(tmp_path):
    values = [
        round(json.loads(line)["data"]["value"] * 1000)
        for line in (DATA / "k6.json").read_text().splitlines()
        if '"Point"' in line and '"http_req_duration"' in line
    ]
    row = _one(tmp_path, "k6.json", "k6")
    summary = json.loads((DATA / "k6-summary.json").read_text())["metrics"]
    assert row["requests"] == len(values) == summary["http_reqs"]["count"] == 120
    want = _summary(values)
    for k in ("p50", "p99", "max"):
        assert row[f"latency_{k}_ms"] == pytest.approx(want[k])
    assert row["latency_max_ms"] == pytest.approx(summary["http_req_duration"]["max"], abs=1e-3)
    assert row["bytes_per_response"] > 1024  # data_received counts headers too


def test_k6_summary_gives_k6s_own_numbers_marked_approximated(tmp_path):
    row = _one(tmp_path, "k6-summary.json", "k6-summary")
    trend = json.loads((DATA / "k6-summary.json").read_text())["metrics"]["http_req_duration"]
    assert row["requests"] == 120
    assert row["latency_p50_ms"] == pytest.approx(trend["med"])
    assert row["latency_p99_ms"] == pytest.approx(trend["p(99)"])
    assert row["latency_max_ms"] == pytest.approx(trend["max"])
    meta = json.loads((row["run"] / "run.json").read_text())["import"]
    assert "interpolated" in meta["files"][0]["approximated"]["latency_p99_ms"]


def test_vegeta_matches_its_raw_results(tmp_path):
    results = [json.loads(line) for line in (DATA / "vegeta.json").read_text().splitlines()]
    row = _one(tmp_path, "vegeta.json", "vegeta")
    assert row["requests"] == len(results) == 300
    want = _summary([round(r["latency"] / 1000) for r in results])
    for k in ("p50", "p99", "max"):
        assert row[f"latency_{k}_ms"] == pytest.approx(want[k])
    assert row["error_rate"] == 0


def test_hey_matches_its_csv_lines(tmp_path):
    with (DATA / "hey.csv").open() as fh:
        lines = list(csv.DictReader(fh))
    row = _one(tmp_path, "hey.csv", "hey")
    assert row["requests"] == len(lines) == 400
    want = _summary([round(float(r["response-time"]) * 1e6) for r in lines])
    for k in ("p50", "p99", "max"):
        assert row[f"latency_{k}_ms"] == pytest.approx(want[k])


def test_hdrh_log_matches_wrks_exact_histogram_to_three_digits(tmp_path):
    want = json.loads((DATA / "wrk.hlog.expected.json").read_text())["wrk merged (exact)"]
    row = _one(tmp_path, "wrk.hlog", "hdrh")
    assert row["requests"] == want["samples"]
    for k in ("p50", "p99", "max"):
        assert row[f"latency_{k}_ms"] == pytest.approx(want[k], rel=2e-3)
    assert row["duration_s"] > 2.5  # three 1 s wrk runs


def test_locust_gives_the_files_aggregated_row(tmp_path):
    row = _one(tmp_path, "locust_stats.csv", "locust")
    assert (row["requests"], row["latency_p50_ms"], row["latency_p99_ms"]) == (287, 18, 82)
    assert row["latency_max_ms"] == pytest.approx(98.1012129998362)
    meta = json.loads((row["run"] / "run.json").read_text())["import"]
    assert "rounded" in meta["files"][0]["approximated"]["latency_p99_ms"]
    assert meta["tool"] == "locust"


def test_run_json_records_the_file_and_what_is_exact(tmp_path):
    row = _one(tmp_path, "vegeta.json", "vegeta")
    meta = json.loads((row["run"] / "run.json").read_text())
    (f,) = meta["import"]["files"]
    assert f["sha256"] == hashlib.sha256((DATA / "vegeta.json").read_bytes()).hexdigest()
    assert f["name"] == "vegeta.json" and "latency_p99_ms" in f["exact"]
    assert meta["import"]["tool_version"].startswith("unknown")
    assert meta["status"] == "complete"
    hist = [json.loads(line) for line in (row["run"] / "histograms.jsonl").read_text().splitlines()]
    assert sum(c for _, c in hist[0]["clients"]["vegeta"]) == 300


def test_unknown_vcpus_or_p99_make_the_trial_invalid(tmp_path):
    run = import_files([str(DATA / "hey.csv")], "hey", Setting(), str(tmp_path))
    (row,) = read_rows(run)
    assert row["valid"] is False and "vCPUs are unknown" in row["invalid_reason"]
    summary = json.loads((DATA / "k6-summary.json").read_text())
    del summary["metrics"]["http_req_duration"]["p(99)"]
    (tmp_path / "s.json").write_text(json.dumps(summary))
    run = import_files([str(tmp_path / "s.json")], "k6-summary", Setting(vcpus=1), str(tmp_path))
    (row,) = read_rows(run)
    assert row["latency_p99_ms"] is None and "no p99" in row["invalid_reason"]


def test_cli_import_then_compare_and_recommend_read_it(tmp_path, capsys):
    runs = []
    for name, fmt in (("vegeta.json", "vegeta"), ("vegeta.json", "vegeta")):
        argv = ["import", str(DATA / name), "--format", fmt, "--label", "c7g.large"]
        argv += ["--vcpus", "1", "--sla-p99", "200ms", "--out", str(tmp_path)]
        assert runners_main(argv) == 0
        runs.append(capsys.readouterr().out.strip())
    assert all(Path(r, "trials.csv").is_file() for r in runs)
    assert runners_main(["compare", *runs]) == 0  # the same file twice: no difference
    assert "vegeta" in capsys.readouterr().out
    from sizing.cli import main as sizing_main

    argv = ["recommend", "--rps", "1e4", "--protocol", "http", "--sla-p99", "200ms"]
    code = sizing_main.main([*argv, "--runs", runs[0], "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0
    assert Path(runs[0]).name in out


def _bad(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


BAD = {
    "truncated k6 line": ("k6", (DATA / "k6.json").read_text()[:5000]),
    "huge line": ("vegeta", '{"latency": ' + "1" * (2 << 20) + "}\n"),
    "hey file as k6": ("k6", (DATA / "hey.csv").read_text()),
    "k6 file as hey": ("hey", (DATA / "k6.json").read_text()),
    "NaN latency (vegeta)": (
        "vegeta",
        '{"code":200,"latency":NaN,"timestamp":"2026-11-27T04:02:49.864305592Z"}\n',
    ),
    "NaN latency (k6)": (
        "k6",
        '{"type":"Point","metric":"http_req_duration","data":{"time":'
        '"2026-11-27T04:02:49Z","value":NaN,"tags":{"status":"200"}}}\n',
    ),
    "negative latency": (
        "vegeta",
        '{"code":200,"latency":-5,"timestamp":"2026-11-27T04:02:49.864305592Z"}\n',
    ),
    "empty file": ("hey", ""),
    "binary": ("hdrh", b"\x00\x01HISTF"),
    "not utf-8": ("locust", b"Type,Name\n\xff\xfe\n"),
    "hdrh garbage payload": ("hdrh", "0.0,1.0,2.0,HISTFAAAAnotreally==\n"),
    "hdrh no intervals": ("hdrh", "#[Histogram log format version 1.2]\n"),
    "locust without Aggregated": ("locust", (DATA / "locust_stats.csv").read_text()[:300]),
    "locust NaN": (
        "locust",
        (DATA / "locust_stats.csv").read_text().replace(",18,", ",nan,"),
    ),
    "k6 summary not an object": ("k6-summary", "[1, 2]"),
    "terminal escape in a line": ("hey", "\x1b]0;pwned\x07,a,b\n"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_no_run(tmp_path, capsys, case):
    fmt, data = BAD[case]
    path = _bad(tmp_path, "in.txt", data)
    out = tmp_path / "runs"
    assert runners_main(["import", str(path), "--format", fmt, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m runners import: error:")
    assert "\x1b" not in err and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


def test_a_missing_file_and_a_wrong_format_name_exit_2(tmp_path, capsys):
    assert runners_main(["import", str(tmp_path / "nope"), "--format", "hey"]) == 2
    assert "cannot be read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        runners_main(["import", str(DATA / "hey.csv"), "--format", "jmeter"])
    assert exc.value.code == 2


def test_percentiles_are_never_nan_for_per_request_files(tmp_path):
    for name, fmt in (("k6.json", "k6"), ("vegeta.json", "vegeta"), ("hey.csv", "hey")):
        row = _one(tmp_path / fmt, name, fmt)
        assert all(not math.isnan(row[f"latency_{k}_ms"]) for k in ("p50", "p90", "p99", "p999"))


def test_several_files_are_several_trials_and_a_hostile_label_stays_text(tmp_path):
    label = '=HYPERLINK("http://x")\x1b[31m'
    files = [str(DATA / "hey.csv"), str(DATA / "hey.csv")]
    run = import_files(files, "hey", Setting(label=label, vcpus=2), str(tmp_path))
    rows = read_rows(run)
    assert [r["trial_id"][-4:] for r in rows] == ["0001", "0002"]
    text = (run / "trials.csv").read_text()
    assert ",=HYPERLINK" not in text and "'=HYPERLINK" in text
    meta = json.loads((run / "run.json").read_text())
    assert [f["trial_id"] for f in meta["import"]["files"]] == [r["trial_id"] for r in rows]
