"""Paired, interleaved A/B comparison (`runners.interleave`, ``python -m runners ab``)."""

from __future__ import annotations

import json
import math

import pytest

from runners import interleave
from runners.cli import main as runners_main
from tests.conftest import runners_cli

# Per-pair B/A nginx CPU per request, recorded on the project's 2-core machine (static 1 KB,
# 1 vCPU, wrk 1 thread x 16 connections, 2 s trials, 6 pairs each).
SAME_SETUP = (1.040, 1.005, 1.100, 0.997, 1.003, 1.006)  # B: a directive that changes nothing
HEADERS_60 = (1.093, 1.060, 1.102, 1.041, 1.081, 1.069)  # B: 60 add_header lines
HEADERS_100 = (1.138, 1.180, 1.152, 1.143, 1.173, 1.144)  # B: 100 add_header lines


def test_same_setup_passes_and_injected_slowdowns_fail_at_4_percent():
    same = interleave.judge(SAME_SETUP, 0.04)
    assert not same.worse
    assert same.low <= 1.0 + 1e-9 and same.median == pytest.approx(1.0055)
    assert interleave.judge(HEADERS_60, 0.04).worse
    slow = interleave.judge(HEADERS_100, 0.04)
    assert slow.worse and slow.low > 1.10 and slow.n == 6


def test_a_slowdown_below_the_threshold_passes_and_a_higher_threshold_passes_it():
    assert not interleave.judge(HEADERS_60, 0.08).worse
    # One pair's outlier moves the median little: the same setup stays a pass.
    assert not interleave.judge((*SAME_SETUP, 1.5), 0.04).worse


def test_the_interval_is_seeded_and_narrows_with_more_pairs():
    a = interleave.judge(HEADERS_60, 0.04)
    assert a == interleave.judge(HEADERS_60, 0.04)
    b = interleave.judge(HEADERS_60 * 4, 0.04)
    assert b.high - b.low < a.high - a.low
    assert a.low <= a.median <= a.high


def test_a_faster_b_is_never_worse():
    assert not interleave.judge([1 / r for r in HEADERS_100], 0.0).worse


def test_pair_costs_and_ratios_leave_out_unusable_trials():
    ok = {"rps": 50_000.0, "server_cpu_pct": 100.0, "error_rate": 0.0, "valid": True}
    assert interleave.pair_cost(ok, "cpu") == pytest.approx(20.0)  # us per request
    assert interleave.pair_cost(ok, "rps") == pytest.approx(2e-5)
    saturated = {**ok, "valid": False}
    assert interleave.pair_cost(saturated, "cpu") == pytest.approx(20.0)
    assert math.isnan(interleave.pair_cost(saturated, "rps"))
    assert math.isnan(interleave.pair_cost({**ok, "error_rate": 0.5}, "cpu"))
    assert math.isnan(interleave.pair_cost({**ok, "rps": 0.0}, "cpu"))
    assert interleave.ratios([1.0, math.nan, 2.0], [1.1, 1.0, 2.0]) == [pytest.approx(1.1), 1.0]


@pytest.mark.parametrize(
    ("values", "threshold", "confidence"),
    [((1.0,), 0.04, 0.95), ((math.nan, 1.0), 0.04, 0.95), ((1, 1), 1.0, 0.95), ((1, 1), 0, 1)],
)
def test_judge_rejects_what_it_cannot_judge(values, threshold, confidence):
    with pytest.raises(ValueError):
        interleave.judge(values, threshold, confidence)


@pytest.mark.parametrize(
    "args",
    [
        ["ab", "--pairs", "3"],  # no --ab-directive
        ["ab", "--ab-directive", "x 1", "--pairs", "1"],
        ["ab", "--ab-directive", "x 1", "--fail-if-worse", "150%"],
        ["ab", "--ab-directive", "x 1", "--confidence", "100%"],
        ["ab", "--ab-directive", "x 1", "--server", "sim"],
        ["ab", "--ab-directive", "x 1", "--vcpus", "1,2"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, capsys):
    with pytest.raises(SystemExit) as exc:
        code = runners_main(args)
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and "Traceback" not in "\n".join(err)
    assert err[-1].startswith("python -m runners")


def _ab(out, directive: str) -> tuple[int, dict]:
    p = runners_cli(
        "ab",
        "--server",
        "local",
        "--scenario",
        "static",
        "--protocol",
        "http",
        "--pairs",
        "6",
        "--duration",
        "2s",
        "--cooldown",
        "0.2s",
        "--fail-if-worse",
        "4%",
        "--ab-directive",
        directive,
        "--format",
        "json",
        "--quiet",
        "--out",
        str(out),
    )
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


@pytest.mark.slow
def test_real_ab_same_setup_passes_and_added_headers_fail(tmp_path, leaves_no_nginx):
    """A directive that changes nothing passes a 4% gate; 100 ``add_header`` lines fail it.

    On the project's 2-core machine (6 pairs of 2 s trials, nginx CPU per request), the same
    setup gave medians B/A of 1.010 to 1.021 (lower bounds 0.973 to 0.981) and 100 headers
    1.148 (interval 1.141-1.176), so each side keeps several percent of margin.
    """
    code, same = _ab(tmp_path / "runs", "variables_hash_max_size 1024")
    assert code == 0 and not same["worse"], same
    headers = "; ".join(f"add_header X-Pad{i} v{i}" for i in range(100))
    code, slow = _ab(tmp_path / "runs", headers)
    assert code == 1 and slow["worse"] and slow["median"] > 1.04, slow
    assert len(slow["ratios"]) == 6
