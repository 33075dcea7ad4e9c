"""Hostile input, round 4: impossible values in logs and profiles, Ctrl-C during a trial.

Each test failed before the fix it names.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sizing.cli.main import main as sizing_main
from tests.conftest import interruptible

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


# -- processes ------------------------------------------------------------------------------
def _generators_in(folder: Path) -> list[int]:
    """Pids of the processes whose current folder is a client work folder in ``folder``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                cwd = Path(os.readlink(d / "cwd"))
                if cwd.parent == folder.resolve() and cwd.name.startswith("nginx-sizing-load."):
                    out.append(int(d.name))
    return out


def _await(condition, what: str, bound_s: float) -> None:
    """Poll ``condition`` until it holds; fail after ``bound_s`` (a generous bound)."""
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not after {bound_s:g} s"
        time.sleep(0.05)


def _start(argv: list[str], out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "runners", *argv, "--out", str(out), "--quiet"],
        cwd=Path(__file__).resolve().parents[1],
        preexec_fn=interruptible,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _interrupt_in_trial(proc, own_tmpdir: Path, times: int = 1) -> str:
    """Wait for a trial's load, Ctrl-C ``times``; the stderr, once the command ended.

    The trials last 60 s: an exit awaited for at most 45 s is one that did not wait for the
    trial's end (before: Ctrl-C took effect only when the trial ended).
    """
    try:
        _await(lambda: _generators_in(own_tmpdir) or proc.poll() is not None, "load", 120)
        assert proc.poll() is None, proc.communicate()
        for _ in range(times):
            proc.send_signal(signal.SIGINT)
        _await(lambda: proc.poll() is not None, "exit after Ctrl-C", 45)
        return proc.communicate()[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_ctrl_c_ends_a_trial_at_once_and_the_run_resumes(tmp_path, own_tmpdir, leaves_no_nginx):
    """Ctrl-C stops the trial's load now, drops the partial trial, and the run resumes.

    Before, wrk (in ``timeout``'s own process group) outlived the kill of the command's
    group and held its output open: Ctrl-C waited for the trial's end.
    """
    argv = ["sweep", "--connections", "2,3", "--duration", "60s", "--warmup", "0"]
    err = _interrupt_in_trial(_start(argv, tmp_path), own_tmpdir)
    (run,) = tmp_path.iterdir()
    assert err.strip().splitlines() == [
        f"python -m runners: interrupted; finished trials are kept in run {run.name} "
        f"(continue with --resume {run.name})"
    ]
    assert not _generators_in(own_tmpdir)
    assert len((run / "trials.csv").read_text().splitlines()) == 1  # the partial trial dropped
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted"
    # Resumed, it measures the dropped trial again; Ctrl-C twice in a row stops it too.
    err = _interrupt_in_trial(_start([*argv, "--resume", run.name], tmp_path), own_tmpdir, 2)
    assert "interrupted" in err and "Traceback" not in err
    assert not _generators_in(own_tmpdir)
    assert len((run / "trials.csv").read_text().splitlines()) == 1


def test_ctrl_c_ends_an_ab_pair_at_once(tmp_path, own_tmpdir, leaves_no_nginx):
    """Both trials of an ``ab`` pair run in threads: Ctrl-C stops their commands too."""
    argv = ["ab", "--ab-directive", "gzip on;", "--connections", "2", "--duration", "60s"]
    err = _interrupt_in_trial(_start(argv, tmp_path), own_tmpdir)
    runs = sorted(d.name for d in tmp_path.iterdir())
    assert len(runs) == 2 and all(r in err for r in runs), err
    assert not _generators_in(own_tmpdir)


# -- exit codes -----------------------------------------------------------------------------
SIM_SWEEP = ["sweep", "--server", "sim", "--quiet"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cleanup", "no-such-run"], "no run 'no-such-run'"),
        ([*SIM_SWEEP, "--resume", "no-such-run"], "no run 'no-such-run'"),
        ([*SIM_SWEEP, "--connections", "7", "--resume", "RUN"], "planned with other settings"),
        (["sweep", "--server", "a b", "--quiet"], "host 'a b' is not"),
        (["sweep", "--inventory", "NOFILE", "--quiet"], "cannot read inventory"),
        (["sweep", "--server", "h", "--ssh-config", "NOFILE", "--quiet"], "does not exist"),
        (["sweep", "--vcpus", "4096", "--quiet"], "CPUs for nginx"),
        ([*SIM_SWEEP, "--cooldown", "1e8s"], "longer than 86,400 s"),
        (["calibrate", "--settings", "warp"], "unknown setting 'warp'"),
        (["calibrate", "--resume", "nope"], "no campaign 'nope'"),
        (["sweep", "--target-address", "no-such-host.invalid", "--quiet"], "cannot resolve"),
        (["sweep", "--nginx-directive", "no_such_directive on", "--quiet"], "nginx -t rejected"),
    ],
)
def test_runners_answer_bad_input_with_exit_2(argv, message, tmp_path, capsys):
    """Each answered exit 1, as a fault of a host or a trial would."""
    from runners.cli.main import main as runners_main

    assert runners_main([*SIM_SWEEP, "--out", str(tmp_path)]) == 0
    (run,) = tmp_path.iterdir()
    argv = [a.replace("RUN", run.name).replace("NOFILE", str(tmp_path / "none")) for a in argv]
    capsys.readouterr()
    try:
        code = runners_main([*argv, "--out", str(tmp_path)])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_an_interrupt_stops_commands_in_other_threads_and_their_own_groups(tmp_path):
    """``timeout`` puts its command in a process group of its own: the session is killed."""
    import threading

    from runners.hosts import LocalHost, side_by_side

    host = LocalHost()
    marker = tmp_path / "started"
    script = f"echo $$ > {marker}.$1; exec timeout 120 sleep 120"

    def running() -> list[int]:
        return [int(p.read_text()) for p in tmp_path.glob("started.*") if p.read_text().strip()]

    def sleepers() -> list[int]:
        """The live processes of the commands' sessions (timeout and its sleep)."""
        out = []
        for d in Path("/proc").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = (d / "stat").read_bytes().rpartition(b")")[2].split()
                if int(fields[3]) in running() and fields[0] != b"Z":  # alive, in a session
                    out.append(int(d.name))  # of the commands
        return out

    def interrupt_once_running() -> None:
        _await(lambda: len(running()) == 2 and len(sleepers()) >= 4, "both commands", 60)
        os.kill(os.getpid(), signal.SIGINT)

    # A pytest-xdist worker ignores SIGINT: the test sets Python's own handler for its span.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_once_running, daemon=True).start()
        calls = [
            lambda i=i: host.run(["sh", "-c", script, "sh", str(i)], check=False) for i in (1, 2)
        ]
        with pytest.raises(KeyboardInterrupt):
            side_by_side(calls, [host])
    finally:
        signal.signal(signal.SIGINT, before)
    _await(lambda: not sleepers(), "every process of both commands killed", 30)
    assert host.run(["true"]).ok  # the host runs commands again


# -- addresses nginx listens on -------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target-address", "::ffff:0.0.0.0"], "target address '::ffff:0.0.0.0' is a wildcard"),
        (["--upstream-address", "0.0.0.0"], "upstream address '0.0.0.0' is a wildcard"),
        (["--nginx-directive", "listen [::ffff:0:0]:8080;"], "is a wildcard"),
        (["--nginx-directive", "listen wild.example:8080;"], "names the host 'wild.example'"),
    ],
)
def test_every_address_nginx_listens_on_follows_the_wildcard_rule(argv, message, tmp_path, capsys):
    """``::ffff:0.0.0.0`` (the IPv4 wildcard mapped into IPv6) listens on every IPv4
    interface, the upstream servers listen on ``--upstream-address``, and nginx resolves a
    ``listen`` host name itself: each was accepted."""
    from runners.cli.main import main as runners_main

    assert runners_main([*SIM_SWEEP, *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    allowed = [*SIM_SWEEP, *argv, "--allow-wildcard-address", "--out", str(tmp_path)]
    assert runners_main(allowed) == 0


def test_a_name_that_resolves_to_a_wildcard_is_refused(monkeypatch):
    """A hosts file that maps a name to 0.0.0.0 (as ad blockers do) made it a wildcard."""
    import socket

    from runners.errors import BadInput
    from runners.session import resolve

    def getaddrinfo(host, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("0.0.0.0", 0))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(BadInput, match=r"resolves to the wildcard 0\.0\.0\.0"):
        resolve("blocked.example")
    assert resolve("127.0.0.1") == "127.0.0.1"
