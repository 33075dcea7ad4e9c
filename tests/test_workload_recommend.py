"""``recommend --workload FILE``: size the traffic an access log shows, flags winning."""

from __future__ import annotations

import json

from sizing.cli.main import main


def _log(path, seconds=120, base=100, burst=900):
    lines = []
    for s in range(seconds):
        n = base + (burst if 60 <= s < 62 else 0)
        ts = f"01/Nov/2026:12:{s // 60:02d}:{s % 60:02d} +0000"
        for i in range(n):
            size = 1024 if i % 10 < 7 else 51200
            lines.append(f'10.0.0.{i % 50} - - [{ts}] "GET /f HTTP/1.1" 200 {size} "-" "wrk"\n')
    path.write_text("".join(lines))


def test_recommend_sizes_the_workload_and_its_growth(tmp_path, capsys):
    log = tmp_path / "access.log"
    _log(log)
    wl = tmp_path / "wl.json"
    assert main(["workload", "--from-log", str(log), "--out", str(wl)]) == 0
    doc = json.loads(wl.read_text())
    peak = doc["rps"]["peak"]
    capsys.readouterr()
    argv = ["recommend", "--workload", str(wl), "--workload-growth", "2x", "--format", "json"]
    assert main(argv) == 0
    out = capsys.readouterr()
    answer = json.loads(out.out)
    assert answer["target_rps"] == 2 * peak
    assert answer["workload"]["size_mix"] == [[1024, 0.7], [51200, 0.3]]
    assert "from workload" in out.err and "rps" in out.err
    # A flag the user gives wins over the file.
    assert main(["recommend", "--workload", str(wl), "--rps", "5000", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["target_rps"] == 5000


def test_recommend_without_rps_or_workload_is_one_line_and_2(capsys):
    assert main(["recommend"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--rps" in err[0] and "--workload" in err[0]
