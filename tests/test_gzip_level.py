"""gzip_comp_level: read from a config, priced from zlib measured per level.

The table ``data/reference/zlib-levels.csv`` was written by
``python -m runners.calibrate.zlibspeed --out data/reference/zlib-levels.csv``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from runners.calibrate import zlibspeed
from sizing.errors import InputError
from sizing.model.capacity import current_stack, wire_bytes_per_request
from sizing.model.costmodel import cpu_us_per_request, reference_profile
from sizing.model.gzip import ZLIB_LEVELS_PATH, level_effect
from sizing.workload.conf import read
from sizing.workload.value import Workload

ZIPPED = Workload(protocol="http", file_bytes=16384, gzip=1.0)


def _conf(tmp_path: Path, level: str) -> Path:
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "worker_processes auto;\nevents {}\nhttp {\n access_log off;\n open_file_cache max=9;\n"
        f" gzip on;\n gzip_types *;\n{level} server {{\n  listen 80;\n  location / {{ }}\n }}\n}}\n"
    )
    return conf


def test_the_shipped_table_holds_every_level_and_grows_with_it():
    rows = list(csv.DictReader(ZLIB_LEVELS_PATH.open()))
    assert [int(r["level"]) for r in rows] == list(range(1, 10))
    assert float(rows[0]["cpu_vs_level1"]) == 1.0 == float(rows[0]["output_vs_level1"])
    assert level_effect(6).cpu > 1.3 and level_effect(9).cpu > 1.3  # timings: noisy, not ordered
    sizes = [level_effect(level).output for level in range(1, 10)]  # sizes: exact
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] < 0.95


def test_a_configs_level_moves_the_gzip_cost_and_the_bytes_sent(tmp_path):
    assert read(str(_conf(tmp_path, ""))).workload.gzip_level == 1
    six = read(str(_conf(tmp_path, " gzip_comp_level 6;\n"))).workload
    assert six.gzip_level == 6 and six.gzip == 1.0
    prof = current_stack(reference_profile())
    one = cpu_us_per_request(ZIPPED, prof, over_nic=False)
    at6 = cpu_us_per_request(
        Workload(protocol="http", file_bytes=16384, gzip=1.0, gzip_level=6), prof, over_nic=False
    )
    effect = level_effect(6)
    assert at6.terms["gzip_byte_ns"] == pytest.approx(one.terms["gzip_byte_ns"] * effect.cpu)
    assert any(n.startswith(f"gzip_byte_ns x{effect.cpu:.2f}: zlib") for n in at6.notes)
    assert wire_bytes_per_request(six) < wire_bytes_per_request(ZIPPED)


@pytest.mark.parametrize("level", ["0", "10", "fast", "-1"])
def test_a_level_nginx_would_refuse_is_one_line(tmp_path, level):
    conf = _conf(tmp_path, f" gzip_comp_level {level};\n")
    with pytest.raises(InputError, match=rf"{conf}:8: gzip level"):
        read(str(conf))


@pytest.mark.parametrize("bad", [0, 10, 1.0, True])
def test_a_workload_refuses_a_bad_level(bad):
    with pytest.raises(InputError, match="gzip level must be"):
        Workload(gzip_level=bad)


def test_the_controllers_gzip_level(tmp_path):
    cm = tmp_path / "cm.yaml"
    cm.write_text("kind: ConfigMap\ndata:\n  use-gzip: 'true'\n  gzip-level: '5'\n")
    assert read(None, str(cm)).workload.gzip_level == 5


def test_the_measurement_times_every_level_on_pieces_of_the_corpus():
    pieces = [b"<p>nginx sizing</p>\n" * 800] * 3
    rows = zlibspeed.measure(pieces, repeats=1)
    assert [r["level"] for r in rows] == list(range(1, 10)) and rows[0]["cpu_vs_level1"] == 1.0
    assert all(0 < float(str(r["output_ratio"])) < 1 for r in rows)


def test_the_measurement_refuses_bad_options_in_one_line(capsys):
    assert zlibspeed.main(["--out", "/nonexistent/folder/z.csv"]) == 2
    assert capsys.readouterr().err.strip() == "zlibspeed: /nonexistent/folder is not a folder"
    with pytest.raises(SystemExit) as exc:
        zlibspeed.main(["--out", "z.csv", "--repeats", "0"])
    assert exc.value.code == 2 and "--repeats" in capsys.readouterr().err.splitlines()[-1]
