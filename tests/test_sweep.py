"""Real sweeps on this machine: real nginx, real wrk, the CLI as users run it, and faults."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners.errors import RunnerError
from runners.hosts import LocalHost
from runners.store import load_trials
from runners.sweep import Plan, make_scenario, run_sweep
from tests.conftest import interruptible, nginx_under, runners_cli

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
FAST = {"duration_s": 1, "warmup_s": 0, "cooldown_s": 0.0}


def test_issue_command_works_exactly(tmp_path, leaves_no_nginx):
    out = tmp_path / "runs"
    p = runners_cli(
        "sweep",
        "--server",
        "local",
        "--scenario",
        "static",
        "--protocol",
        "http",
        "--file-size",
        "1KB",
        "--vcpus",
        "1",
        "--threads",
        "1",
        "--connections",
        "16",
        "--duration",
        "3s",
        "--out",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    (run,) = out.iterdir()
    df = load_trials(run)
    assert len(df) == 1
    row = df.iloc[0]
    assert row["run_id"] == run.name and row["trial_id"].startswith(run.name)
    assert (row["vcpus"], row["threads"], row["connections"]) == (1, 1, 16)
    assert row["scenario"] == "static" and row["file_bytes"] == 1024
    # Real load on a shared machine: that it served and for about as long as asked, no rate.
    assert row["rps"] > 0 and row["requests"] > 0 and 2.5 < row["duration_s"] < 30
    assert 1024 < row["bytes_per_response"] < 1024 + 600
    assert row["latency_p50_ms"] <= row["latency_p99_ms"] <= row["latency_max_ms"]
    assert row["server_cpu_pct"] > 0 and row["client_cpu_pct"] > 0
    assert row["valid"] or "saturated" in row["invalid_reason"]
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete"
    assert "worker_processes 1;" in meta["nginx_conf"]["1"]
    server = meta["hosts"]["server"]
    assert server["cores"] >= 1 and "nginx/" in server["nginx_version"]
    assert "net.core.somaxconn" in server["sysctl"]
    assert meta["commands"][0]["hosts"]["local"].split()[0] in ("taskset", "/usr/bin/wrk")
    (hist,) = [json.loads(x) for x in (run / "histograms.jsonl").read_text().splitlines()]
    assert hist["trial_id"] == row["trial_id"]
    assert sum(c for _, c in hist["clients"]["local"]) >= 0.99 * row["requests"]
    assert f"run folder: {run}" in p.stdout


class _InterruptAfter(io.StringIO):
    """A progress stream that raises KeyboardInterrupt once ``n`` trials have finished."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def write(self, text: str) -> int:
        if f"] {self.n}/" in text:
            raise KeyboardInterrupt
        return super().write(text)


def test_interrupted_sweep_resumes(tmp_path, leaves_no_nginx):
    plan = Plan(scenario=make_scenario("static"), connections=(4, 8, 16), **FAST)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, tmp_path, progress=_InterruptAfter(1))
    (run,) = tmp_path.iterdir()
    assert len(load_trials(run)) == 1
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted"

    with pytest.raises(RunnerError, match="other settings"):
        run_sweep(Plan(connections=(4, 8), **FAST), tmp_path, resume=run.name, progress=None)

    df = run_sweep(plan, tmp_path, resume=run.name, progress=None)
    assert sorted(df["connections"]) == [4, 8, 16]
    assert df["trial_id"].is_unique
    assert json.loads((run / "run.json").read_text())["status"] == "complete"
    again = run_sweep(plan, tmp_path, resume=run.name, progress=None)
    assert len(again) == 3  # nothing left to do


@pytest.mark.parametrize(
    ("name", "kw"),
    [
        ("cps", {"protocol": "https"}),
        ("static", {"protocol": "https", "file_bytes": 53 * 1024, "gzip": True}),
        ("api_gateway", {"upstreams": 2}),
        ("throughput", {}),
    ],
)
def test_scenarios_measure(tmp_path, name, kw, leaves_no_nginx):
    plan = Plan(scenario=make_scenario(name, **kw), connections=(4,), label="this machine", **FAST)
    row = run_sweep(plan, tmp_path, progress=None).iloc[0]
    assert row["requests"] > 10
    assert row["error_rate"] == 0
    assert "response size" not in str(row["invalid_reason"])
    assert row["instance_label"] == "this machine"
    assert bool(row["keepalive"]) is (name != "cps")
    if name == "throughput":
        assert row["throughput_gbps"] > 0.1
        assert row["bytes_per_response"] > 1024 * 1024


def _master_of_our_nginx(folder: Path) -> int | None:
    """The master of the nginx this test started (its prefix is under ``folder``)."""
    for pid in nginx_under(folder):
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        if "master process" in cmd:
            return pid
    return None


def _wait_rows(run_parent: Path, n: int, proc: subprocess.Popen, limit: float = 180) -> Path:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        for trials in run_parent.glob("*/trials.csv"):
            if len(trials.read_text().splitlines()) - 1 >= n:
                return trials.parent
        time.sleep(0.05)
    raise AssertionError("the sweep did not reach the expected trial")


@pytest.mark.parametrize("fault", ["kill-nginx", "ctrl-c"])
def test_faults_during_a_trial_keep_finished_trials(tmp_path, fault, own_tmpdir, leaves_no_nginx):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runners",
            "sweep",
            "--connections",
            "4,8,16",
            "--duration",
            "2s",
            "--warmup",
            "0",
            "--cooldown",
            "0",
            "--out",
            str(tmp_path),
            "--quiet",
        ],
        cwd=ROOT,
        preexec_fn=interruptible,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run = _wait_rows(tmp_path, 1, proc)
    time.sleep(0.5)  # inside the second trial
    if fault == "kill-nginx":
        master = _master_of_our_nginx(own_tmpdir)
        assert master is not None
        os.kill(master, signal.SIGKILL)
    else:
        proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    if fault == "kill-nginx":
        assert proc.returncode == 1
        assert "nginx on local exited during trial" in lines[0]
    else:
        assert proc.returncode == 130
        assert "interrupted" in lines[0] and lines[0].endswith(f"--resume {run.name})")
    assert len(load_trials(run)) == 1
    assert json.loads((run / "run.json").read_text())["status"] != "complete"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--wrk", "/nonexistent/wrk"], 1, "missing before any load: /nonexistent/wrk on local"),
        (
            ["--nginx-directive", "bogus_directive on"],
            2,
            'nginx -t rejected the server config on local: unknown directive "bogus_directive"',
        ),
        (["--vcpus", "512"], 2, "has only"),
        (["--vcpus", "0"], 2, "expected positive integers"),
        (["--duration", "1.5s"], 2, "whole seconds"),
        (["--server", "a b"], 2, "is not 'local'"),
        (["--file-size", "big"], 2, "is not a size"),
        (["--scenario", "cps", "--file-size", "1KB"], 2, "0-byte response"),
        (["--resume", "no-such-run"], 2, "no run 'no-such-run'"),
        (["--client", "local", "--client", "local"], 2, "listed twice"),
        (["--inventory", "/nonexistent.toml"], 2, "cannot read inventory"),
        (["--threads", "4", "--connections", "2"], 2, "no setting to run"),
        (["--sim-sigma", "0.1"], 2, "need --server sim"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, code, message, leaves_no_nginx):
    p = runners_cli(
        "sweep", "--duration", "1s", "--warmup", "0", "--out", str(tmp_path), "--quiet", *args
    )
    assert p.returncode == code, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr


def test_label_with_shell_metacharacters_is_data(tmp_path, leaves_no_nginx):
    evil = f"m5.large $(touch {tmp_path}/pwned); rm -rf {tmp_path}/x 'q\""
    (tmp_path / "x").mkdir()
    plan = Plan(label=evil, connections=(2,), **FAST)
    df = run_sweep(plan, tmp_path / "runs", progress=None)
    assert df.iloc[0]["instance_label"] == evil
    assert (tmp_path / "x").exists() and not (tmp_path / "pwned").exists()


def test_facts_command():
    p = runners_cli("facts")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)["local"]
    assert info["tools"]["wrk"] and info["tools"]["nginx"]
    assert LocalHost().run(["uname", "-r"]).stdout.strip() == info["kernel"]


def test_inventory_file(tmp_path):
    inv = tmp_path / "hosts.toml"
    inv.write_text('server = "local"\nclients = ["local"]\n')
    p = runners_cli("facts", "--inventory", str(inv))
    assert p.returncode == 0, p.stderr
    assert list(json.loads(p.stdout)) == ["local"]
    inv.write_text('server = "local"\nclinets = ["local"]\n')
    p = runners_cli("facts", "--inventory", str(inv))
    assert p.returncode == 2 and "unknown keys ['clinets']" in p.stderr
    inv.write_text("server = 5\n")
    p = runners_cli("facts", "--inventory", str(inv))
    assert p.returncode == 2 and "field 'server'" in p.stderr
    inv.write_text('ssh_config = "~/no/such/config"\nserver = "u@h"\n')
    p = runners_cli("facts", "--inventory", str(inv))
    assert p.returncode == 2 and "does not exist" in p.stderr
    inv.write_text('server = "local\n')
    p = runners_cli("facts", "--inventory", str(inv))
    assert p.returncode == 2 and "not valid TOML" in p.stderr
