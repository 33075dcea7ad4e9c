"""Hostile input, round 4: impossible values in logs and profiles, Ctrl-C during a trial.

Each test failed before the fix it names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sizing.cli.main import main as sizing_main

LINE = '127.0.0.{n} - - [01/Jan/2026:00:00:{s:02d} {zone}] "GET /a HTTP/1.1" 200 {size} "-" "ua"\n'


def _log(path: Path, zone: str = "+0000", size: str = "512", lines: int = 60) -> Path:
    text = "".join(LINE.format(n=i, s=i % 60, zone=zone, size=size) for i in range(lines))
    path.write_text(text)
    return path


# -- data -----------------------------------------------------------------------------------
@pytest.mark.parametrize("zone", ["+9999", "-1500", "+0060"])
def test_a_time_zone_out_of_range_makes_the_line_malformed(zone, tmp_path, capsys):
    """A ``+9999`` zone shifted the line by 100 hours: a stretched span and a zeroed peak."""
    log = tmp_path / "a.log"
    log.write_text(_log(tmp_path / "good.log").read_text() + _log(tmp_path / "b", zone).read_text())
    out = tmp_path / "w.json"
    assert sizing_main(["workload", "--from-log", str(log), "--out", str(out)]) == 0
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert doc["span_s"] == 60 and doc["requests"] == 60
    assert doc["provenance"]["malformed_reasons"] == {"time out of range": 60}
    assert sizing_main(["workload", "--from-log", str(_log(tmp_path / "c.log", zone))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "time out of range" in err[0]


def test_the_farthest_real_zones_are_read(tmp_path, capsys):
    log = tmp_path / "a.log"
    log.write_text(
        _log(tmp_path / "p", "+1400").read_text() + _log(tmp_path / "m", "-1200").read_text()
    )
    out = tmp_path / "w.json"
    assert sizing_main(["workload", "--from-log", str(log), "--out", str(out)]) == 0
    capsys.readouterr()
    assert json.loads(out.read_text())["requests"] == 120


@pytest.mark.parametrize("size", ["1234567890123456789", "9007199254740993"])
def test_a_size_no_reader_accepts_is_never_written(size, tmp_path, capsys):
    """A 19-digit ``$body_bytes_sent`` wrote a workload ``recommend --workload`` refused."""
    log = tmp_path / "a.log"
    log.write_text(_log(tmp_path / "g").read_text() + _log(tmp_path / "b", size=size).read_text())
    out = tmp_path / "w.json"
    assert sizing_main(["workload", "--from-log", str(log), "--out", str(out)]) == 0
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert doc["provenance"]["malformed_reasons"] == {"size out of range": 60}
    assert doc["size_mix"]["spec"] == "512"
    code = sizing_main(["recommend", "--rps", "1e4", "--workload", str(out), "--format", "json"])
    assert code == 0, capsys.readouterr().err


def test_the_largest_size_a_reader_accepts_round_trips(tmp_path, capsys):
    from trialtable.values import MAX_SIZE_BYTES

    out = tmp_path / "w.json"
    log = _log(tmp_path / "a.log", size=str(MAX_SIZE_BYTES))
    assert sizing_main(["workload", "--from-log", str(log), "--out", str(out)]) == 0
    capsys.readouterr()
    code = sizing_main(["recommend", "--rps", "1e4", "--workload", str(out), "--format", "json"])
    assert code in (0, 1), capsys.readouterr().err  # 1: no type serves 8 PiB responses
    assert "error" not in capsys.readouterr().err
