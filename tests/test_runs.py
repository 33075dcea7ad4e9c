"""A run's lifecycle under faults: its lock, a killed runner's leftovers, a full disk, Ctrl-C
during set-up, the address nginx binds to, and what the progress and messages say."""

from __future__ import annotations

import io
import json
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners.errors import RunnerError
from runners.run import Progress, verdict
from runners.sim import SimServer
from tests.conftest import interruptible, nginx_prefixes, nginx_under, runners_cli

ROOT = Path(__file__).resolve().parents[1]
SIM = ("sweep", "--server", "sim", "--quiet", "--connections", "8,16")


def _runner(*args: str, preexec_fn=None, **kw) -> subprocess.Popen:
    def setup() -> None:
        interruptible()
        if preexec_fn is not None:
            preexec_fn()

    return subprocess.Popen(
        [sys.executable, "-m", "runners", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=setup,
        **kw,
    )


def _wait(cond, limit: float = 120, what: str = "the condition") -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_run_in_use_is_refused(tmp_path):
    p = runners_cli(*SIM, "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    (run,) = tmp_path.iterdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from trialtable.folder import RunFolder\n"
            "RunFolder.open(sys.argv[1], sys.argv[2])\n"
            "print('locked', flush=True)\n"
            "time.sleep(120)\n",
            str(tmp_path),
            run.name,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        p = runners_cli(*SIM, "--out", str(tmp_path), "--resume", run.name)
        assert p.returncode == 1
        assert p.stderr.strip() == (
            f"python -m runners: error: run {run.name} is in use by pid {holder.pid}"
        )
    finally:
        holder.kill()  # SIGKILL: the kernel releases the lock
        holder.wait()
    p = runners_cli(*SIM, "--out", str(tmp_path), "--resume", run.name)
    assert p.returncode == 0, p.stderr
    assert len((run / "trials.csv").read_text().splitlines()) == 3  # no duplicated trials


@pytest.mark.slow
@pytest.mark.parametrize("how", ["cleanup", "resume"])
def test_a_killed_runner_leaves_nothing_for_long(tmp_path, own_tmpdir, leaves_no_nginx, how):
    args = ("sweep", "--connections", "4,8", "--duration", "2s", "--warmup", "0")
    args += ("--cooldown", "0", "--quiet", "--out", str(tmp_path))
    proc = _runner(*args)
    _wait(lambda: any(len(t.read_text().splitlines()) > 1 for t in tmp_path.glob("*/trials.csv")))
    (run,) = tmp_path.iterdir()
    proc.kill()
    proc.communicate(timeout=60)
    left = nginx_under(own_tmpdir)
    assert left, "the killed runner's nginx should still run"
    started = [json.loads(x) for x in (run / "started.jsonl").read_text().splitlines()]
    recorded = {p for e in started for p in e.get("pids", [])}
    assert left & recorded  # its pids were recorded before the first load
    assert any(e["what"] == "client-workdir" for e in started)
    if how == "cleanup":
        p = runners_cli("cleanup", run.name, "--out", str(tmp_path))
        assert p.returncode == 0, p.stderr
    else:
        p = runners_cli(*args, "--resume", run.name)
        assert p.returncode == 0, p.stderr
        assert len((run / "trials.csv").read_text().splitlines()) == 3
    assert "warning: run" in p.stderr and "stopping and removing it" in p.stderr
    _wait(lambda: not nginx_under(own_tmpdir), 30, "the leftover nginx to stop")
    assert not nginx_prefixes(own_tmpdir)
    assert not list(own_tmpdir.glob("nginx-sizing-load.*"))
    again = runners_cli("cleanup", "--all", "--out", str(tmp_path))
    assert again.returncode == 0 and "nothing left behind" in again.stderr


def test_cleanup_touches_only_what_the_project_made(tmp_path):
    run = tmp_path / "r1"
    run.mkdir()
    (run / "run.json").write_text('{"run_id": "r1", "plan": {}}')
    victim = tmp_path / "not-ours"
    victim.mkdir()
    line = {"event": "started", "host": "local", "what": "nginx-prefix", "path": str(victim)}
    (run / "started.jsonl").write_text(json.dumps(line) + "\n")
    p = runners_cli("cleanup", "r1", "--out", str(tmp_path))
    assert p.returncode == 0
    assert "not provably this run's (its name is not one the project makes)" in p.stderr
    assert "left alone" in p.stderr
    assert victim.is_dir()
    p = runners_cli("cleanup", "no-such-run", "--out", str(tmp_path))
    assert p.returncode == 2 and "no run 'no-such-run'" in p.stderr


def _small_files(limit: int):
    def set_limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return set_limit


def test_a_full_disk_is_one_line_and_loses_nothing(tmp_path):
    conns = ",".join(str(c) for c in range(8, 48))
    proc = _runner(*SIM[:-1], conns, "--out", str(tmp_path), preexec_fn=_small_files(12_000))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "trials.csv cannot be written (File too large)" in err
    (run,) = tmp_path.iterdir()
    assert not (run / "run.json.tmp").exists()
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"].startswith("failed: ")
    from trialtable.read import read_rows

    rows = read_rows(run)  # every row whole
    assert 3 < len(rows) < 40
    p = runners_cli(*SIM[:-1], conns, "--out", str(tmp_path), "--resume", run.name)
    assert p.returncode == 0, p.stderr
    assert len(read_rows(run)) == 40


@pytest.mark.slow
def test_ctrl_c_while_the_test_file_is_written(tmp_path, own_tmpdir, leaves_no_nginx):
    proc = _runner(
        "sweep", "--file-size", "2GB", "--gzip", "--duration", "1s", "--out", str(tmp_path)
    )
    body = []

    def writing() -> bool:
        body[:] = list(own_tmpdir.glob("nginx-sizing.*/html/body.html"))
        return bool(body) and body[0].stat().st_size > 0

    _wait(writing, what="the test file to be written")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    (run,) = tmp_path.iterdir()
    assert f"--resume {run.name}" in err
    assert not body[0].exists()
    assert not nginx_prefixes(own_tmpdir)


@pytest.mark.slow
def test_nginx_binds_to_the_resolved_address_only(tmp_path, leaves_no_nginx):
    p = runners_cli(
        "sweep",
        "--target-address",
        "localhost",
        "--connections",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "0",
        "--cooldown",
        "0",
        "--quiet",
        "--out",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    meta = json.loads(next(tmp_path.glob("*/run.json")).read_text())
    address = meta["hosts"]["target_address"]
    assert address in ("127.0.0.1", "::1")
    conf = meta["nginx_conf"]["1"]
    assert "0.0.0.0" not in conf and ("listen 127.0.0.1:" in conf or "listen [::1]:" in conf)


def test_progress_says_pass_or_over_sla():
    row = {"vcpus": 1, "threads": 1, "connections": 8, "rps": 1000.0, "sla_p99_ms": 5.0}
    assert verdict({**row, "valid": True, "latency_p99_ms": 4.0}) == "pass"
    assert verdict({**row, "valid": True, "latency_p99_ms": 6.0}) == "over SLA"
    assert verdict({**row, "valid": False, "latency_p99_ms": 1.0}) == "invalid"
    out = io.StringIO()
    Progress(2, 1.0, out).update({**row, "valid": True, "latency_p99_ms": 6.0})
    assert "over SLA" in out.getvalue() and " ok" not in out.getvalue()
    assert re.search(r"1/2 .*; ETA \d+:\d\d$", out.getvalue().strip()), out.getvalue()


@pytest.mark.parametrize(
    "bad",
    [
        {"lambda_rps": float("nan")},
        {"lambda_rps": 0.0},
        {"lambda_rps": -74000.0},
        {"sigma": -0.1},
        {"kappa": float("inf")},
        {"client_cpus": 0},
    ],
)
def test_simulator_refuses_impossible_parameters(bad):
    with pytest.raises(RunnerError, match="simulator"):
        SimServer(**bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sim-lambda", "nan"], "positive finite"),
        (["--sim-lambda", "0"], "positive finite"),
        (["--sim-lambda", "-5"], "positive finite"),
        (["--sim-sigma", "-1"], ">= 0"),
        (["--sim-kappa", "nan"], ">= 0"),
        (["--upstreams", "65"], "must be <= 64"),
    ],
)
def test_cli_bounds(tmp_path, args, message):
    p = runners_cli(*SIM, "--out", str(tmp_path), *args)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and message in p.stderr
    assert not any(tmp_path.iterdir())
