"""SLA search strategies on the simulated server, wrk2 parsing, and the search CLI."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from runners.errors import RunnerError
from runners.loadgen import Load, wrk
from runners.search import SearchOptions, _passes, non_monotonic, run_search, search
from runners.sim import SimServer, SimTarget
from runners.store import load_trials
from runners.sweep import Plan
from tests.conftest import runners_cli
from trialtable.folder import RunFolder, RunFolderError

ROOT = Path(__file__).resolve().parents[1]
WRK2 = Path(__file__).parent / "data" / "wrk2" / "readme-example.txt"


def sim_target(tmp_path, seed=1, name="r", **sim):
    store = RunFolder.create(tmp_path, {"run_id": f"{name}{seed}", "simulated": True, "plan": {}})
    return SimTarget(SimServer(seed=seed, **sim), store)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_adaptive_matches_grid_in_a_quarter_of_the_trials(tmp_path, seed):
    grid = search(sim_target(tmp_path, seed, "g"), 4, SearchOptions(strategy="grid"))
    adaptive = search(sim_target(tmp_path, seed, "a"), 4, SearchOptions())
    assert adaptive.max_rps_under_sla == pytest.approx(grid.max_rps_under_sla, rel=0.03)
    assert adaptive.trials <= 0.25 * grid.trials
    assert adaptive.confirmed and adaptive.latency_p99_ms <= 5.0
    assert adaptive.ci95_low < adaptive.max_rps_under_sla < adaptive.ci95_high
    assert adaptive.load_seconds < grid.load_seconds


def test_search_is_deterministic_per_seed(tmp_path):
    a = search(sim_target(tmp_path, 3, "x"), 2, SearchOptions())
    b = search(sim_target(tmp_path, 3, "y"), 2, SearchOptions())
    c = search(sim_target(tmp_path, 4, "z"), 2, SearchOptions())
    assert a.max_rps_under_sla == b.max_rps_under_sla
    assert a.max_rps_under_sla != c.max_rps_under_sla


def test_every_trial_lands_in_the_run(tmp_path):
    target = sim_target(tmp_path)
    result = search(target, 4, SearchOptions())
    df = load_trials(target.store.path)
    assert len(df) == result.trials == len(result.trial_ids)
    assert df["simulated"].all()
    assert (df["kind"] == "search-confirm").sum() == 3
    assert set(df["kind"]) >= {"search-ramp", "search-confirm"}


def test_rate_strategy_on_the_simulator(tmp_path):
    target = sim_target(tmp_path)
    result = search(target, 4, SearchOptions(strategy="rate"))
    capacity = target.sim.capacity(4)
    assert 0.95 * capacity <= result.max_rps_under_sla <= 1.01 * capacity
    assert result.rate_rps is not None and result.connections is None
    assert result.latency_p99_ms <= 5.0


def test_an_unreachable_sla_says_so(tmp_path):
    result = search(sim_target(tmp_path), 1, SearchOptions(sla_p99_ms=0.1))
    assert result.max_rps_under_sla is None and not result.confirmed
    assert "failed already at the lightest load" in result.notes[-1]


def test_client_saturation_fails_trials(tmp_path):
    # One wrk thread drives at most thread_rps: a strong server saturates it.
    target = sim_target(tmp_path, client_cpus=1, thread_rps=50000)
    result = search(target, 4, SearchOptions())
    df = load_trials(target.store.path)
    assert (~df["valid"]).any()
    assert df.loc[~df["valid"], "invalid_reason"].str.contains("saturated").all()
    assert result.max_rps_under_sla is None or result.max_rps_under_sla < 50000


class _Flaky:
    """A target whose highest passing load fails on repeat: the confirmation steps back."""

    def __init__(self):
        self.n = 0

    def max_threads(self, vcpus):
        return 1

    def trial(self, vcpus, threads, connections, *, duration_s=10, kind="sweep", rate_rps=None):
        self.n += 1
        p99 = connections / 20
        if kind == "search-confirm" and connections == 64:
            p99 = 6.0
        return {
            "trial_id": str(self.n),
            "kind": kind,
            "vcpus": vcpus,
            "threads": threads,
            "connections": connections,
            "rate_rps": rate_rps,
            "rps": 1000 * connections,
            "latency_p99_ms": p99,
            "sla_p99_ms": 5.0,
            "valid": True,
            "error_rate": 0.0,
            "duration_s": duration_s,
            "warmup_s": 0,
            "invalid_reason": "",
        }


class _Slow(_Flaky):
    """A target that fails its first load with several threads, and passes with one thread."""

    def max_threads(self, vcpus):
        return 2

    def trial(self, vcpus, threads, connections, *, duration_s=10, kind="sweep", rate_rps=None):
        row = super().trial(vcpus, threads, connections, duration_s=duration_s, kind=kind)
        row["latency_p99_ms"] = 9.0 if threads > 1 else connections / 20
        return row


def test_a_failing_lightest_load_steps_down_first():
    result = search(_Slow(), 1, SearchOptions(start_connections=8, max_trials=6))
    assert result.threads == 1 and result.max_rps_under_sla is not None
    assert any("stepped down to 1 thread x 4 connections, which passed" in n for n in result.notes)


def test_a_search_that_fails_everything_says_what_it_tried(tmp_path):
    result = search(sim_target(tmp_path), 1, SearchOptions(sla_p99_ms=0.1))
    note = result.notes[-1]
    assert note.startswith("failed already at the lightest load (connections 32: p99")
    assert "stepped down to 1 thread x 4 connections: p99" in note
    assert "1 thread x 1 connection: p99" in note
    assert result.trials == 3


def test_failed_confirmation_steps_back():
    result = search(_Flaky(), 1, SearchOptions(start_connections=4, max_trials=4))
    assert result.connections == 16
    assert any("stepped back" in n for n in result.notes)
    assert result.confirmed


def test_non_monotonic_is_flagged():
    rows = [
        {"connections": c, "latency_p99_ms": p, "rps": r, "valid": True, "sla_p99_ms": 5}
        for c, p, r in [(4, 0.9, 100), (16, 0.3, 200), (64, 6.0, 300), (256, 4.0, 310)]
    ]
    notes = non_monotonic(rows, "connections")
    assert any("p99 fell from 0.90 to 0.30" in n for n in notes)
    assert any("passed above a failure at 64" in n for n in notes)
    assert not non_monotonic(rows[:1], "connections")
    assert _passes(rows[0]) and not _passes(rows[2])


def test_simulated_and_measured_rows_do_not_mix(tmp_path):
    target = sim_target(tmp_path)
    row = target.trial(1, 1, 4, duration_s=1)
    measured = RunFolder.create(tmp_path, {"run_id": "m", "simulated": False, "plan": {}})
    with pytest.raises(RunFolderError, match="a simulated row cannot join it"):
        measured.append(row)
    with pytest.raises(RunnerError, match="needs a run marked simulated"):
        SimTarget(SimServer(), measured)


class _StopAfter:
    def __init__(self, n):
        self.n = n

    def __call__(self, report):
        if report.n == self.n:
            raise KeyboardInterrupt


def test_interrupted_search_resumes_to_the_same_answer(tmp_path):
    plan = Plan(vcpus=(2, 4), duration_s=3)
    options = SearchOptions()
    _, whole = run_search(plan, options, tmp_path / "a", sim=SimServer(seed=2))
    with pytest.raises(KeyboardInterrupt):
        run_search(plan, options, tmp_path / "b", sim=SimServer(seed=2), on_trial=_StopAfter(9))
    (run,) = (tmp_path / "b").iterdir()
    assert len(load_trials(run)) == 9
    with pytest.raises(RunnerError, match="other settings"):
        run_search(
            plan, SearchOptions(confirm=4), tmp_path / "b", sim=SimServer(seed=2), resume=run.name
        )
    _, resumed = run_search(plan, options, tmp_path / "b", sim=SimServer(seed=2), resume=run.name)
    assert [r.max_rps_under_sla for r in resumed] == pytest.approx(
        [r.max_rps_under_sla for r in whole], rel=1e-9
    )
    assert len(load_trials(run)) == sum(r.trials for r in whole)


def test_parse_wrk2_recorded_output():
    r = wrk.parse_wrk2(WRK2.read_text())
    assert r.requests == 60018 and r.rps == pytest.approx(2000.28)
    assert sum(r.histogram_us.values()) == 39500  # the spectrum's total count
    # The spectrum is coarser than wrk2's own percentiles: ours is the bucket at or above.
    assert 11.18 <= r.latency_ms["p99"] <= 11.18 * 1.01
    assert 6.67 <= r.latency_ms["p50"] <= 6.68
    assert r.latency_ms["max"] == pytest.approx(12.503)
    with pytest.raises(RunnerError, match="--latency"):
        wrk.parse_wrk2(WRK2.read_text().split("  Detailed")[0])
    argv = wrk.command(Load("http://h/", 2, 64, 5, rate_rps=2000.4), binary="wrk2")
    assert argv[0] == "wrk2" and argv[argv.index("-R") + 1] == "2000"


def test_cli_search_sim_json(tmp_path):
    p = runners_cli(
        "search",
        "--server",
        "sim",
        "--seed",
        "2",
        "--vcpus",
        "1,4",
        "--out",
        str(tmp_path),
        "--format",
        "json",
        "--quiet",
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [r["vcpus"] for r in doc["results"]] == [1, 4]
    for r in doc["results"]:
        for key in (
            "max_rps_under_sla",
            "trials",
            "load_seconds",
            "threads",
            "connections",
            "latency_p99_ms",
            "error_rate",
            "ci95_low",
            "ci95_high",
        ):
            assert key in r and r[key] is not None
        assert r["simulated"] is True
    assert doc["results"][1]["max_rps_under_sla"] > 3 * doc["results"][0]["max_rps_under_sla"]
    meta = json.loads((Path(doc["run_dir"]) / "run.json").read_text())
    assert meta["simulated"] is True and meta["sim"]["seed"] == 2
    assert meta["status"] == "complete" and len(meta["search_results"]) == 2


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--server", "sim", "--confirm", "2"], 2, "at least 3"),
        (["--server", "sim", "--confirm", "31"], 2, "at most 30"),
        (["--server", "sim", "--strategy", "bogus"], 2, "invalid choice"),
        (["--sim-lambda", "5"], 2, "need --server sim"),
        (["--server", "sim", "--client", "h2"], 2, "drop --client"),
        (["--strategy", "rate", "--wrk2", "/nonexistent/wrk2"], 1, "/nonexistent/wrk2 on local"),
        (["--server", "sim", "--sla-p99", "5"], 2, "not a duration with a unit"),
        (["--server", "sim", "--start-rate", "nan", "--strategy", "rate"], 2, "--start-rate"),
        (["--server", "sim", "--start-rate", "0", "--strategy", "rate"], 2, "--start-rate"),
    ],
)
def test_cli_search_bad_input(tmp_path, args, code, message, leaves_no_nginx):
    p = runners_cli("search", "--out", str(tmp_path), "--quiet", *args)
    assert p.returncode == code, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and message in p.stderr


@pytest.mark.slow
def test_real_local_search(tmp_path, leaves_no_nginx):
    p = runners_cli(
        "search",
        "--vcpus",
        "1",
        "--duration",
        "1s",
        "--confirm-duration",
        "1s",
        "--warmup",
        "0",
        "--cooldown",
        "0",
        "--max-connections",
        "256",
        "--out",
        str(tmp_path),
        "--format",
        "json",
        "--quiet",
    )
    assert p.returncode == 0, p.stderr
    (r,) = json.loads(p.stdout)["results"]
    assert r["simulated"] is False
    df = load_trials(next(tmp_path.iterdir()))
    assert len(df) == r["trials"] >= 1
    assert (df["simulated"] == False).all()  # noqa: E712
    # A busy machine may fail even the lightest load, or most confirmations of every passing
    # load: then the answer is unconfirmed and the search says what it tried.
    if r["max_rps_under_sla"] is None or not r["confirmed"]:
        assert not r["confirmed"]
        assert any("lightest load" in n or "confirmation" in n for n in r["notes"]), r["notes"]
        return
    confirms = df[df["kind"] == "search-confirm"]
    assert r["threads"] >= 1 and len(confirms) >= 3 and r["max_rps_under_sla"] > 0
    # The answer rests on a majority of its confirmation trials meeting the SLA (one of three
    # may miss it on a busy machine, and then the pooled p99 may too).
    last = confirms.tail(3)
    assert last["meets_sla"].astype(bool).sum() >= 2, last[["rps", "latency_p99_ms"]]
    assert not math.isnan(r["ci95_low"])


def test_sweep_on_the_simulator(tmp_path):
    p = runners_cli(
        "sweep",
        "--server",
        "sim",
        "--seed",
        "3",
        "--vcpus",
        "1,2",
        "--threads",
        "8",
        "--connections",
        "16,64",
        "--out",
        str(tmp_path),
        "--quiet",
        "--format",
        "json",
    )
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert len(rows) == 4 and all(r["simulated"] for r in rows)
    (run,) = tmp_path.iterdir()
    assert json.loads((run / "run.json").read_text())["sim"]["seed"] == 3
    again = runners_cli(
        "sweep",
        "--vcpus",
        "1,2",
        "--threads",
        "8",
        "--connections",
        "16,64",
        "--out",
        str(tmp_path),
        "--quiet",
        "--resume",
        run.name,
    )
    assert again.returncode == 2 and "holds simulated trials" in again.stderr


def test_progress_lines_bound_the_time_left(tmp_path):
    """Each trial line says at most how long the search has left: the trials and confirmations
    ``max_trials`` still allows, at the wall time a second of load has taken so far."""
    import time

    from runners.cli.main import trial_line
    from runners.search import _Reporting, _TrialBound

    opts = SearchOptions(max_trials=4, duration_s=1, confirm=3, confirm_duration_s=2)
    now = [100.0]
    bound = _TrialBound([1, 2], opts, clock=lambda: now[0])
    bound.add(1, "search", 1, replayed=False)
    bound.add(1, "search", 1, replayed=False)
    now[0] += 4.0  # 2 s of load took 4 s of wall time: 2 s per second of load
    # v1: 2 search trials and 3 confirmations of 2 s left; v2: 4 + 3 x 2 s
    assert bound.left_s(1) == pytest.approx((2 + 6 + 10) * 2.0)
    bound.add(1, "search-confirm", 2, replayed=False)
    now[0] += 4.0  # 4 s of load in 8 s; once confirming, no more search trials for v1
    assert bound.left_s(1) == pytest.approx((2 * 2 + 10) * 2.0)
    bound.add(2, "search", 1, replayed=True)  # a resumed trial takes no wall time
    assert bound.load_s == 4

    class Slow:
        def trial(self, vcpus, threads, connections, **kw):
            time.sleep(0.6 * kw["duration_s"])
            return {
                "vcpus": vcpus,
                "kind": kw["kind"],
                "threads": threads,
                "rps": 1000.0,
                "connections": connections,
                "latency_p99_ms": 1.0,
                "sla_p99_ms": 5.0,
                "meets_sla": True,
                "valid": True,
            }

        def max_threads(self, vcpus):
            return 1

    reports = []
    log = _Reporting(Slow(), reports.append, bound=_TrialBound([1], opts))
    log.trial(1, 1, 4, duration_s=1, kind="search")
    log.trial(1, 1, 8, duration_s=1, kind="search")
    assert [r.n for r in reports] == [1, 2] and not reports[0].open_loop
    lines = [trial_line(r) for r in reports]
    assert len(lines) == 2 and all("left" in line for line in lines), lines
    left = [line.rsplit("at most ", 1)[1] for line in lines]
    assert all(re.fullmatch(r"\d+:\d\d left", t) for t in left), left
