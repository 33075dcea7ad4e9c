"""h2load through the runners: sweeps and a rate search on a real local nginx, two clients (one
over the test sshd) merged exactly, and the JWT scenario under load. Bounded in time; no
assertion on how fast this machine is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runners.loadgen import latency_summary
from runners.plan import Access, Plan
from runners.scenario import make_scenario
from runners.sweep import run_sweep
from tests.conftest import runners_cli
from tests.loopback import h2load_logs, started_workdirs
from tests.sshd import start_sshd
from trialtable.folder import RunFolder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load (nghttp2-client) missing"),
]
FAST = {"duration_s": 1, "warmup_s": 1, "cooldown_s": 0.0}


def _histograms(runs: Path, run_id: str) -> dict[str, dict[int, int]]:
    with RunFolder.open(runs, run_id) as store:
        (h,) = list(store.histograms())
    return {host: {int(v): int(c) for v, c in pairs} for host, pairs in h["clients"].items()}


@pytest.mark.parametrize(
    ("protocol", "http_version", "streams"),
    [("https", "2", 4), ("http", "2", 1), ("https", "1.1", 1)],
    ids=["h2-tls", "h2c", "h1-tls"],
)
def test_sweep_closed_loop(tmp_path, protocol, http_version, streams, leaves_no_nginx):
    plan = Plan(
        scenario=make_scenario("static", protocol=protocol),
        connections=(4,),
        load_generator="h2load",
        http_version=http_version,
        streams=streams,
        **FAST,
    )
    df = run_sweep(plan, tmp_path / "runs", progress=None)
    row = df.iloc[0]
    assert row["load_generator"] == "h2load" and str(row["http_version"]) == http_version
    assert row["streams"] == streams
    # A closed loop on a client of one CPU may saturate it on a slow or busy machine: then the
    # trial must say so (the rule every load generator shares), and be valid otherwise.
    assert row["valid"] or "saturated" in row["invalid_reason"], row["invalid_reason"]
    assert row["requests"] > 0 and row["error_rate"] == 0
    (hist,) = _histograms(tmp_path / "runs", row["run_id"]).values()
    assert sum(hist.values()) == row["requests"]
    assert row["latency_p99_ms"] == pytest.approx(latency_summary(hist)["p99"])
    meta = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    (command,) = meta["commands"][0]["hosts"].values()
    assert "h2load" in command and "-m " + str(streams) in command
    conf = next(iter(meta["nginx_conf"].values()))
    assert (" http2 " in conf) is (http_version == "2")


def test_rate_search_runs_open_loop_with_h2load(tmp_path, leaves_no_nginx):
    """``search --strategy rate`` drives h2load's --rps and judges by the 95% rule."""
    p = runners_cli(
        "search",
        "--strategy",
        "rate",
        "--load-generator",
        "h2load",
        "--http2",
        "--protocol",
        "https",
        "--start-rate",
        "500",
        "--start-connections",
        "2",
        "--streams",
        "16",
        "--sla-p99",
        "50ms",
        "--duration",
        "1s",
        "--confirm-duration",
        "1s",
        "--warmup",
        "0",
        "--cooldown",
        "0",
        "--out",
        str(tmp_path),
        "--format",
        "json",
        "--quiet",
    )
    assert p.returncode == 0, p.stderr
    (result,) = json.loads(p.stdout)["results"]
    assert result["strategy"] == "rate" and result["trials"] >= 4
    (run,) = tmp_path.iterdir()
    with RunFolder.open(tmp_path, run.name) as store:
        rows = store.rows()
    assert {r["load_generator"] for r in rows} == {"h2load"}
    assert all(float(r["rate_rps"]) > 0 for r in rows)
    for r in rows:
        short = float(r["rps"]) < 0.95 * float(r["rate_rps"])
        assert short is ("achieved" in r["invalid_reason"]), r
    # h2load never sends more than the schedule: 1 s at the asked rate, plus one per connection.
    assert all(int(r["requests"]) <= float(r["rate_rps"]) + int(r["connections"]) for r in rows)
    if result["max_rps_under_sla"] is not None:
        assert result["rate_rps"] > 0


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def test_two_h2load_clients_one_over_ssh_merge_exactly(tmp_path, sshd, leaves_no_nginx):
    cfg = sshd.client_config(tmp_path)
    plan = Plan(
        scenario=make_scenario("static", protocol="https"),
        server="local",
        clients=("local", sshd.spec),
        target_address="127.0.0.1",
        connections=(2,),
        load_generator="h2load",
        http_version="2",
        streams=2,
        **FAST,
    )
    df = run_sweep(plan, tmp_path / "runs", access=Access(ssh_config=str(cfg)), progress=None)
    row = df.iloc[0]
    assert row["clients"] == 2 and row["client_hosts"] == f"local {sshd.spec}"
    hists = _histograms(tmp_path / "runs", row["run_id"])
    assert set(hists) == {"local", sshd.spec}
    assert all(sum(h.values()) > 0 for h in hists.values())
    merged: dict[int, int] = {}
    for h in hists.values():
        for v, c in h.items():
            merged[v] = merged.get(v, 0) + c
    assert sum(merged.values()) == row["requests"]
    summary = latency_summary(merged)
    for key in ("p50", "p90", "p99", "p999", "max"):
        assert row[f"latency_{key}_ms"] == pytest.approx(summary[key])
    # The per-request logs are gone (both clients write them on this machine).
    workdirs = started_workdirs(tmp_path / "runs")
    assert len(workdirs) == 2
    assert h2load_logs(*workdirs) == set()


@pytest.mark.parametrize("name", ["reverse_proxy", "api_gateway"])
def test_jwt_scenario_under_h2load(tmp_path, name, leaves_no_nginx):
    plan = Plan(
        scenario=make_scenario(name, jwt=True),
        connections=(2,),
        load_generator="h2load",
        http_version="2",
        **FAST,
    )
    df = run_sweep(plan, tmp_path / "runs", progress=None)
    row = df.iloc[0]
    assert bool(row["jwt"]) and row["valid"], row["invalid_reason"]
    # Every request carried the session's token and passed: no 401 among them.
    assert row["requests"] > 0 and row["errors_status"] == 0
    meta = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    (command,) = meta["commands"][0]["hosts"].values()
    assert "Authorization: Bearer ey" in command
