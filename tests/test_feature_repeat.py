"""benchmarks/bench_feature_repeat.py: how it judges a feature's repeatability."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = (
    "feature",
    "status",
    "user_us",
    "user_low_us",
    "user_high_us",
    "kernel_us",
    "kernel_low_us",
    "kernel_high_us",
)


def _bench():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_feature_repeat
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return bench_feature_repeat


def _campaign(path: Path, rows: list[tuple[str, str, float, float]]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for name, status, mid, half in rows:
            w.writerow(
                (
                    name,
                    status,
                    mid / 2,
                    mid / 2 - half,
                    mid / 2 + half,
                    mid / 2,
                    mid / 2 - half,
                    mid / 2 + half,
                )
            )
    return path


def test_a_cost_is_judged_against_its_median_and_resolution(tmp_path: Path) -> None:
    bench = _bench()
    paths = [
        _campaign(
            tmp_path / f"c{i}.csv",
            [
                ("proxy", "measured", mid, 1.0),
                ("log", "measured", small, 3.0),
                ("lua", "not_measured", 0.0, 0.0),
            ],
        )
        for i, (mid, small) in enumerate([(70.0, 1.0), (76.0, 4.0), (80.0, 2.0)])
    ]
    by = bench.read(paths)
    assert sorted(by) == ["log", "proxy"]  # a feature not measured in every campaign is left out
    word, worst = bench.verdict(by["proxy"])
    assert word == "within" and abs(worst - 6 / 76) < 1e-9
    assert bench.verdict(by["log"])[0] == "below resolution"
    wide = [(10.0, 5.0, 15.0), (14.0, 9.0, 19.0)]
    assert bench.verdict(wide)[0] == "OUTSIDE"


def test_read_campaigns_are_judged_on_the_host_and_the_reference_core(tmp_path, capsys) -> None:
    bench = _bench()
    shipped = ROOT / "data" / "reference" / "feature-costs.csv"
    assert bench.main(["--read", str(shipped), str(shipped)]) == 0
    out = capsys.readouterr().out
    assert "ingress_nginx_no_metrics" in out and "on the reference core" in out
    bad = tmp_path / "bad.csv"
    bad.write_text(shipped.read_text().replace(",measured,", ",measured,nan-", 1))
    assert bench.main(["--read", str(shipped), str(bad)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "bad.csv:2" in err
