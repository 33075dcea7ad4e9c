"""``python -m runners compare``: the threshold logic on recorded rows, and real sweeps."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from runners import compare
from runners.cli.main import main as runners_main
from tests.conftest import runners_cli
from trialtable.schema import TRIAL_COLUMNS

# One row as a real sweep on this machine recorded it (static HTTP 64 KB gzip, 1 vCPU).
RECORDED = dict(
    zip(
        TRIAL_COLUMNS,
        "R,R-0001,2026-11-24T03:34:59Z,sweep,false,local,local,1,,x86_64,AMD EPYC,1,0,1,"
        "pinned apart,static,http,1.1,wrk,65536,true,true,false,false,,1,4,1,,0,2.003753,685,"
        "341.85850252,13288039.993,0.106304319944,38870,0,0,0,0,0,0,11.921,15.735,23.182,"
        "26.006,26.006,11.6380202899,1.49719052199,33.9363184983,500,true,true,".split(","),
        strict=True,
    )
)


def write_run(folder: Path, trials: list[dict]) -> str:
    """A run folder whose trials.csv holds ``trials`` (changes to the recorded row)."""
    folder.mkdir(parents=True)
    with open(folder / "trials.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, TRIAL_COLUMNS, lineterminator="\n")
        w.writeheader()
        for i, t in enumerate(trials, start=1):
            row = {**RECORDED, "run_id": folder.name, "trial_id": f"{folder.name}-{i:04d}"}
            row.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in t.items()})
            w.writerow(row)
    return str(folder)


def repeats(rps: list[float], p99: float = 20.0, connections: int = 4, **kw) -> list[dict]:
    return [{"rps": r, "latency_p99_ms": p99, "connections": connections, **kw} for r in rps]


def run_compare(tmp_path, a_rows, b_rows, *extra: str, capsys=None) -> int:
    a = write_run(tmp_path / "a", a_rows)
    b = write_run(tmp_path / "b", b_rows)
    return runners_main(["compare", a, b, *extra])


@pytest.mark.parametrize(
    ("b_rps", "threshold", "expected"),
    [
        ([1000, 1000, 1000], "5%", 0),  # equal
        ([951, 951, 951], "5%", 0),  # -4.9%: inside
        ([949, 949, 949], "5%", 1),  # -5.1%: beyond
        ([800, 800, 800], "25%", 0),  # -20% under a generous threshold
        ([740, 740, 740], "25%", 1),  # -26%
        ([1500, 1500, 1500], "0%", 0),  # better never fails
        ([999, 999, 999], "0", 1),  # any loss fails at 0
    ],
)
def test_threshold_on_max_rps(tmp_path, b_rps, threshold, expected, capsys):
    a = repeats([990, 1000, 1010])
    b = repeats([x - 10 + 10 * i for i, x in enumerate(b_rps)])
    code = run_compare(tmp_path, a, b, "--fail-if-worse", threshold, "--gate", "max-rps")
    out = capsys.readouterr().out
    assert code == expected, out
    assert ("WORSE" in out) == (expected == 1)


def test_p99_at_equal_load_interpolates_and_gates(tmp_path, capsys):
    # A at 4 and 8 connections; B slower in latency but measured over the same loads.
    a = repeats([1000, 1000], p99=10.0, connections=4) + repeats(
        [1800, 1800], p99=20.0, connections=8
    )
    b = repeats([900, 900], p99=12.0, connections=4) + repeats(
        [2000, 2000], p99=30.0, connections=8
    )
    a_dir, b_dir = write_run(tmp_path / "a", a), write_run(tmp_path / "b", b)
    rb = compare.load_run(b_dir)
    (settings,) = rb.groups.values()
    # At 1000 RPS: 12 + (30 - 12) * (1000 - 900) / (2000 - 900)
    assert compare.p99_at(settings, {"rate_rps": None}, 1000.0) == pytest.approx(
        12 + 18 * 100 / 1100
    )
    assert compare.p99_at(settings, {"rate_rps": None}, 2100.0) is None  # outside B's range
    doc = compare.compare_runs(compare.load_run(a_dir), rb, 0.25, ("p99",))
    # p99 at 1000 RPS: +36.4%; at 1800 RPS: 12 + 18 * 900/1100 = 26.7 vs 20: +33.6%.
    assert doc["verdict"] == "worse"
    assert len(doc["worse"]) == 2
    assert runners_main(["compare", a_dir, b_dir, "--fail-if-worse", "40%"]) == 0
    assert runners_main(["compare", a_dir, b_dir, "--fail-if-worse", "30%", "--gate", "p99"]) == 1
    # max RPS under the SLA went up (+11%): that gate alone passes.
    assert (
        runners_main(["compare", a_dir, b_dir, "--fail-if-worse", "5%", "--gate", "max-rps"]) == 0
    )
    capsys.readouterr()


def test_sla_and_validity_decide_what_counts(tmp_path, capsys):
    a = repeats([1000, 1000, 1000]) + repeats([2000, 2000, 2000], connections=16)
    # B: 16 connections miss the SLA by majority, so its max under the SLA is the 4c setting.
    b = (
        repeats([1000, 1000, 1000])
        + repeats([2100], connections=16)
        + repeats([2100, 2100], connections=16, meets_sla=False)
        + repeats([9999], connections=16, valid=False, meets_sla=False, invalid_reason="x")
    )
    code = run_compare(tmp_path, a, b, "--fail-if-worse", "10%", "--format", "json")
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    (g,) = doc["groups"]
    assert g["a_max_rps_under_sla"]["mean"] == 2000
    assert g["b_max_rps_under_sla"]["mean"] == 1000 and g["b_max_at"] == "1t/4c"
    assert doc["b"]["invalid_trials"] == 1
    assert g["max_rps_ratio"] == pytest.approx(0.5)


def test_b_never_meeting_the_sla_is_worse_at_any_threshold(tmp_path, capsys):
    a = repeats([1000, 1000])
    b = repeats([1000, 1000], meets_sla=False)
    assert run_compare(tmp_path, a, b, "--fail-if-worse", "99%") == 1
    assert "meets the SLA at no setting" in capsys.readouterr().out


def test_intervals_say_how_and_are_seeded(tmp_path):
    a = compare.load_run(write_run(tmp_path / "a", repeats([900, 1000, 1100, 1000])))
    b = compare.load_run(write_run(tmp_path / "b", repeats([800, 850, 900])))
    d1 = compare.compare_runs(a, b, 0.05)
    d2 = compare.compare_runs(a, b, 0.05)
    g = d1["groups"][0]
    lo, hi = g["max_rps_ratio_ci"]
    assert lo < g["max_rps_ratio"] < hi and d1 == d2
    s = g["a_max_rps_under_sla"]
    # Student-t, 3 degrees of freedom: mean 1000, sd 81.65, t 3.182.
    assert s["ci_low"] == pytest.approx(1000 - 3.1824 * 81.65 / 2, rel=1e-3)
    assert "bootstrap" in d1["interval"] and "Student-t" in d1["interval"]
    one = compare.load_run(write_run(tmp_path / "c", repeats([1000])))
    g1 = compare.compare_runs(one, b, 0.05)["groups"][0]
    assert g1["max_rps_ratio_ci"] == [None, None]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing-a", "missing-b"], "not a run folder"),
        (["A", "B", "--fail-if-worse", "150%"], "outside"),
        (["A", "B", "--fail-if-worse", "lots"], "not a fraction"),
        (["A", "B", "--gate", "speed"], "comma list"),
        (["A", "OTHER"], "share no setting"),
        (["A", "EMPTY"], "no valid trial"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "A", repeats([1000]))
    write_run(tmp_path / "B", repeats([1000]))
    write_run(tmp_path / "OTHER", repeats([1000], vcpus=2))
    write_run(tmp_path / "EMPTY", repeats([1000], valid=False, invalid_reason="x"))
    with pytest.raises(SystemExit) as exc_info:
        code = runners_main(["compare", *args])
        raise SystemExit(code)
    err = capfd.readouterr().err
    assert exc_info.value.code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_html_escapes_hostile_labels(tmp_path, capsys):
    a = write_run(tmp_path / "a", repeats([1000, 1010]))
    b = write_run(tmp_path / "b", repeats([1000, 990]))
    hostile = "<script>alert(1)</script>"
    (tmp_path / "b" / "run.json").write_text(
        json.dumps({"plan": {"scenario": {"directives": [hostile]}}})
    )
    out = tmp_path / "view.html"
    assert runners_main(["compare", a, b, "--html", str(out), "--history", a]) == 0
    page = out.read_text()
    assert hostile not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "History" in page and '<script src="https://cdn.plot.ly' not in page
    capsys.readouterr()


def test_runners_never_import_sizing():
    import ast

    tree = ast.parse(Path(compare.__file__).read_text())
    names = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert not any(n.split(".")[0] == "sizing" for n in names)


# ---------------------------------------------------------------------------- real sweeps


def _sweep(out: Path, *extra: str) -> Path:
    before = set(out.iterdir()) if out.exists() else set()
    p = runners_cli(
        "sweep",
        "--server",
        "local",
        "--scenario",
        "static",
        "--protocol",
        "http",
        "--gzip",
        "--file-size",
        "64KB",
        "--vcpus",
        "1",
        "--threads",
        "1",
        "--connections",
        "4,4,4",
        "--duration",
        "2s",
        "--warmup",
        "0",
        "--cooldown",
        "0",
        "--sla-p99",
        "1s",
        "--quiet",
        "--out",
        str(out),
        *extra,
    )
    assert p.returncode == 0, p.stderr
    (run,) = set(out.iterdir()) - before
    return run


@pytest.mark.slow
def test_real_sweeps_same_setup_passes_and_slowdown_is_caught(tmp_path, leaves_no_nginx):
    """Two runs of the same setup pass a generous gate; gzip level 9 instead of nginx's
    default level 1 (the same compressible 64 KB body) is caught as worse.

    On this 2-core machine, level 9 served about 55% fewer requests per second than level 1
    (150 vs 320-550 RPS over three repeats of 2 s), and once only 23% (414 vs 538, a clean
    clone's CI run); runs of the same setup differed by up to about 40% when other work shared
    the machine. So the same setup is judged at 50% and the slowdown at 10%.
    """
    out = tmp_path / "runs"
    a = _sweep(out)
    same = _sweep(out)
    slow = _sweep(out, "--nginx-directive", "gzip_comp_level 9")
    p = runners_cli("compare", str(a), str(same), "--fail-if-worse", "50%", "--gate", "max-rps")
    assert p.returncode == 0, p.stdout + p.stderr
    html = tmp_path / "view.html"
    p = runners_cli("compare", str(a), str(slow), "--fail-if-worse", "10%", "--html", str(html))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "max RPS under the SLA" in p.stdout and "gzip_comp_level 9" in p.stdout
    assert html.stat().st_size > 0
