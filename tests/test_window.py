"""One window across clients: offsets, the barrier, late clients; real clients in namespaces."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from runners import window
from runners.loadgen import latency_summary
from runners.window import Offset, Window, window_problems
from tests import netns


def _w(host: str, start: float, end: float, rps: float = 100.0, offset: float = 0.0) -> Window:
    return Window(host, offset, 0.001, start, end, rps)


def test_clients_in_one_window_have_no_problem():
    ws = [_w("a", 100.02, 110.05), _w("b", 100.01, 110.04)]
    assert window_problems(ws, 100.0, 10, None) == []


def test_a_client_two_seconds_late_is_named():
    ws = [_w("a", 100.02, 110.05), _w("b", 102.03, 112.06)]
    (problem,) = window_problems(ws, 100.0, 10, None)
    assert problem == "b started 2.0 s after the common start"


def test_no_overlap_an_early_end_a_lost_stamp_and_a_short_share():
    ws = [_w("a", 100.0, 101.0), _w("b", 103.0, 104.0)]
    problems = window_problems(ws, 100.0, 1, None)
    assert "the clients' windows do not overlap" in problems
    ws = [_w("a", 100.0, 105.0), _w("b", 100.0, float("nan"), rps=40.0)]
    problems = window_problems(ws, 100.0, 10, 200.0)
    assert "a ended 5.0 s before the common end" in problems
    assert "b did not stamp its window" in problems
    assert "b achieved 40 of its 100 rps share" in problems


def test_the_clients_whose_window_missed_are_named_for_a_clock_check():
    ws = [_w("a", 100.02, 110.05), _w("b", 102.03, 112.06), _w("c", 100.0, float("nan"))]
    assert window.off_window(ws, 100.0, 10) == ["b", "c"]
    assert window.off_window(ws[:1], 100.0, 10) == []


def test_an_offset_larger_than_the_trial_is_refused():
    ws = [_w("a", 100.0, 110.0), _w("b", 100.0, 110.0, offset=30.0)]
    assert window_problems(ws, 100.0, 10, None) == ["b's clock is +30.0 s off, more than the trial"]


def test_clock_offset_keeps_the_shortest_round_trip():
    answers = iter([str(time.time() + 5.0), str(time.time() + 5.0), str(time.time() + 5.0)])
    got = window.clock_offset(lambda: next(answers))
    assert 4.0 < got.offset_s < 6.0 and got.uncertainty_s >= 0
    with pytest.raises(ValueError, match="not seconds"):
        window.clock_offset(lambda: "\x1b[31mnope")


def test_the_barrier_waits_for_the_start_on_the_clients_clock():
    start = time.time() + 0.3
    argv = window.barrier(["echo", "ran"], start, Offset(0.0, 0.0))
    r = subprocess.run(argv, capture_output=True, text=True, check=True)
    w = window.window_of("local", r.stderr, Offset(0.0, 0.0), 0.0)
    assert r.stdout == "ran\n"
    assert start <= w.start_s <= w.end_s and w.ready_s <= w.start_s
    # A client whose clock runs 100 s ahead waits for the same instant on its own clock.
    shifted = window.window_of("x", r.stderr, Offset(100.0, 0.0), 0.0)
    assert shifted.start_s == pytest.approx(w.start_s - 100.0)


def test_the_lead_is_ample_first_then_what_the_clients_took_to_be_ready():
    offsets = [Offset(0.0, 0.001), Offset(0.0, 0.002)]
    assert window.common_start(offsets, 100.0) == 100.0 + window.FIRST_LEAD_S
    # 1.5 times the slowest client's time to be ready in the trial before ...
    assert window.common_start(offsets, 100.0, 0.08) == pytest.approx(100.12)
    # ... never under the floor, nor under 4 times an offset's uncertainty.
    assert window.common_start(offsets, 100.0, 0.001) == 100.0 + window.MIN_LEAD_S
    assert window.common_start([Offset(0.0, 0.1)], 100.0, 0.01) == pytest.approx(100.4)
    assert window.common_start(offsets, 100.0, float("nan")) == 100.0 + window.FIRST_LEAD_S
    # A stale stamp (a clock stepped by 40 s) asks no lead past the cap.
    assert window.common_start(offsets, 100.0, 40.0) == 100.0 + window.MAX_LEAD_S


def test_a_tool_that_waits_itself_gets_the_start_in_its_environment():
    argv = window.barrier(["wrk", "http://x/"], 100.0, Offset(2.5, 0.0), waits=True)
    assert argv == ["env", f"{window.START_ENV}=102.500000", "wrk", "http://x/"]
    err = (
        "noise\nNGINX_SIZING_WINDOW_READY 102.1\nNGINX_SIZING_WINDOW_START 102.5\n"
        "NGINX_SIZING_WINDOW_END 112.6\n"
    )
    w = window.window_of("a", err, Offset(2.5, 0.0), 10.0)
    assert (w.ready_s, w.start_s, w.end_s) == pytest.approx((99.6, 100.0, 110.1))
    assert window.ready_after([w, _w("b", 100.0, 110.0)], 99.5) == pytest.approx(0.1)
    assert window.ready_after([_w("b", 100.0, 110.0)], 99.5) is None


def test_a_first_sample_answered_late_into_the_window_is_a_problem():
    # nginx's first CPU sample is taken during the lead: answered before the start, or
    # after it by no more than a client may start late, it covers the whole window.
    assert window.sample_problem(99.9, 100.0, 10) is None
    assert window.sample_problem(100.4, 100.0, 10) is None  # within 5% of 10 s
    assert window.sample_problem(float("nan"), 100.0, 10) is None  # never answered: raises
    assert window.sample_problem(101.2, 100.0, 10) == (
        "nginx's CPU was sampled 1.2 s after the common start"
    )


# What report.lua adds for a test: each bucket found wrk's own way (the i-th, from the
# first), and whether the one-pass reading of wrk's array was used.
_SLOW_AND_FAST = """
local report_done = done
done = function(summary, latency, requests)
  local slow = {}
  for i = 1, #latency do
    local value, count = latency(i)
    slow[i] = "[" .. num(value) .. "," .. num(count) .. "]"
  end
  io.write("\\nSLOW [", table.concat(slow, ","), "]\\n")
  io.write("FAST ", tostring(fast_buckets(latency, #latency) ~= nil), "\\n")
  report_done(summary, latency, requests)
end
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk missing")
def test_wrk_waits_for_the_start_itself_stamps_its_window_and_reports_every_bucket(
    tmp_path, leaves_no_nginx
):
    from runners.loadgen.wrk import REPORTER, parse_json
    from tests.loopback import private_nginx

    script = tmp_path / "report.lua"
    script.write_text(REPORTER.read_text() + _SLOW_AND_FAST)

    def http(prefix: Path, ports: list[int]) -> list[str]:
        return ["server {", f"listen 127.0.0.1:{ports[0]};", f"root {prefix}/html;", "}"]

    with private_nginx(tmp_path, http) as (port,):
        start = time.time() + 0.5
        argv = ["wrk", "-t2", "-c4", "-d1s", "-s", str(script), f"http://127.0.0.1:{port}/body.bin"]
        r = subprocess.run(
            window.barrier(argv, start, Offset(0.0, 0.0), waits=True),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 0, r.stderr
    w = window.window_of("local", r.stderr, Offset(0.0, 0.0), 0.0)
    assert w.ready_s <= w.start_s and start <= w.start_s < w.end_s
    measured = parse_json(r.stdout)
    slow = json.loads(r.stdout.split("SLOW ", 1)[1].splitlines()[0])
    assert measured.histogram_us == {us: n for us, n in slow}
    assert measured.requests > 0 and measured.histogram_us
    if "FAST true" not in r.stdout:
        pytest.skip("this wrk's Lua has no FFI: its report read each bucket (checked above)")


# -- real clients in network namespaces ---------------------------------------------------


@pytest.fixture
def server_and_four_clients():
    """A server namespace with a bridge, and four client namespaces on it."""
    try:
        with netns.bridge("nsw", 4) as made:
            yield made
    except netns.Unavailable as exc:
        pytest.skip(str(exc))


def _sweep(tmp_path: Path, made: netns.Bridge):
    from runners.sweep import Plan, make_scenario, run_sweep

    plan = Plan(
        scenario=make_scenario("static"),
        server=f"netns:{made.server}",
        clients=made.client_hosts,
        connections=(4,),
        duration_s=2,
        warmup_s=0,
        cooldown_s=0.0,
        sla_p99_ms=10_000.0,
    )
    df = run_sweep(plan, tmp_path, progress=None)
    meta = json.loads(next(Path(tmp_path).glob("*/run.json")).read_text())
    return df.iloc[0], meta


@pytest.mark.slow
def test_four_clients_in_namespaces_share_one_window_and_a_late_one_is_caught(
    tmp_path, server_and_four_clients, leaves_no_nginx, monkeypatch
):
    from runners.deploy.nginx import Deployment

    sampled: list[float] = []
    sample = Deployment.sample

    def stamped(self):
        sampled.append(time.time())
        return sample(self)

    monkeypatch.setattr(Deployment, "sample", stamped)
    row, meta = _sweep(tmp_path / "aligned", server_and_four_clients)
    monkeypatch.setattr(Deployment, "sample", sample)
    (trial,) = meta["windows"]
    (command,) = meta["commands"]  # saved with the windows, in one write
    assert command["trial_id"] == trial["trial_id"]
    # nginx is sampled once during the clients' run-up and once after the last one ended.
    first, second = sampled[-2:]
    assert first < min(c["end_s"] for c in trial["clients"])
    assert second >= max(c["end_s"] for c in trial["clients"])
    assert row["server_cpu_pct"] > 0
    clients = trial["clients"]
    assert tuple(c["host"] for c in clients) == server_and_four_clients.client_hosts
    assert all(abs(c["offset_s"]) < 1.0 for c in clients)  # one machine, one clock
    assert all(c["start_s"] >= trial["common_start_s"] for c in clients)
    assert "started" not in str(row["invalid_reason"]), row["invalid_reason"]
    assert row["clients"] == 4 and row["requests"] > 0
    # The row's p99 is the p99 of the union of the four clients' histograms.
    (hists,) = [json.loads(x) for x in next(tmp_path.glob("aligned/*/histograms.jsonl")).open()]
    union: dict[int, int] = {}
    for pairs in hists["clients"].values():
        for us, n in pairs:
            union[us] = union.get(us, 0) + n
    assert len(hists["clients"]) == 4
    assert row["latency_p99_ms"] == pytest.approx(latency_summary(union)["p99"])

    calls = []
    on_time = window.barrier

    def late_second(argv, start_s, offset, **kw):
        calls.append(start_s)
        return on_time(argv, start_s + (2.0 if len(calls) == 2 else 0.0), offset, **kw)

    monkeypatch.setattr("runners.window.barrier", late_second)
    row, meta = _sweep(tmp_path / "late", server_and_four_clients)
    assert not row["valid"] and not row["meets_sla"]
    assert f"{server_and_four_clients.client_hosts[1]} started 2." in row["invalid_reason"]
    assert "after the common start" in row["invalid_reason"]
