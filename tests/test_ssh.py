"""The runners through Fabric over SSH, to a real sshd the tests start on 127.0.0.1."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runners import loadgen
from runners.errors import RunnerError
from runners.hosts import SSHHost, connect
from runners.sweep import Access, Plan, make_scenario, run_sweep
from tests.conftest import nginx_under, runners_cli
from tests.sshd import free_port, keygen, start_sshd
from trialtable.folder import RunFolder

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
FAST = {"duration_s": 1, "warmup_s": 0, "cooldown_s": 0.0}


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def test_unknown_host_key_is_refused_then_accepted(tmp_path, sshd):
    cfg = sshd.client_config(tmp_path, known=False)
    p = runners_cli("facts", "--server", sshd.spec, "--client", sshd.spec, "--ssh-config", str(cfg))
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1
    assert "host key for [127.0.0.1]" in p.stderr and "--accept-new-host-keys" in p.stderr
    assert not (tmp_path / "known_hosts").exists()

    p = runners_cli(
        "facts", "--server", sshd.spec, "--ssh-config", str(cfg), "--accept-new-host-keys"
    )
    assert p.returncode == 0, p.stderr
    recorded = (tmp_path / "known_hosts").read_text().split()
    assert recorded[0] == f"[127.0.0.1]:{sshd.port}"
    assert recorded[2] == sshd.host_pub.read_text().split()[1]
    assert json.loads(p.stdout)[sshd.spec]["tools"]["nginx"]

    p = runners_cli("facts", "--server", sshd.spec, "--ssh-config", str(cfg))
    assert p.returncode == 0, p.stderr


def test_a_known_hosts_link_is_not_written_through(tmp_path, sshd):
    """The key is recorded through the one writer: a link at known_hosts is refused."""
    cfg = sshd.client_config(tmp_path, known=False)
    target = tmp_path / "elsewhere"
    target.write_text("keep\n")
    (tmp_path / "known_hosts").symlink_to(target)
    p = runners_cli(
        "facts", "--server", sshd.spec, "--ssh-config", str(cfg), "--accept-new-host-keys"
    )
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "cannot record the host key in" in p.stderr
    assert target.read_text() == "keep\n" and (tmp_path / "known_hosts").is_symlink()


def test_changed_host_key_is_refused(tmp_path, sshd):
    other = tmp_path / "other"
    keygen(other)
    kind, blob = Path(f"{other}.pub").read_text().split()[:2]
    cfg = sshd.client_config(tmp_path, host_line=f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    with pytest.raises(RunnerError, match="CHANGED"):
        connect(sshd.spec, ssh_config=str(cfg), accept_new_host_keys=True)


def test_refused_user_key(tmp_path, sshd):
    stranger = tmp_path / "stranger"
    keygen(stranger)
    cfg = sshd.client_config(tmp_path, key=stranger)
    p = runners_cli("facts", "--server", sshd.spec, "--ssh-config", str(cfg))
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1
    assert f"authentication as {sshd.user} failed" in p.stderr


def test_unreachable_host(tmp_path, sshd):
    cfg = sshd.client_config(tmp_path)
    p = runners_cli(
        "sweep",
        "--server",
        f"{sshd.user}@127.0.0.1:{free_port()}",
        "--ssh-config",
        str(cfg),
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1
    assert "cannot connect to" in p.stderr and "connection refused" in p.stderr.lower()


def test_remote_arguments_cannot_inject(tmp_path, sshd):
    host = connect(sshd.spec, ssh_config=str(sshd.client_config(tmp_path)))
    try:
        evil = f"a; touch {tmp_path}/pwned $(touch {tmp_path}/pwned2) `id` 'q\" \\n"
        assert host.run(["echo", evil]).stdout.rstrip("\n") == evil
        host.write_text(f"{tmp_path}/odd $(name).txt", evil + "\n", 0o600)
        assert (tmp_path / "odd $(name).txt").read_text() == evil + "\n"
        assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    finally:
        host.close()


def test_sweep_over_ssh(tmp_path, sshd, leaves_no_nginx):
    cfg = sshd.client_config(tmp_path)
    plan = Plan(
        scenario=make_scenario("static", protocol="https"),
        server=sshd.spec,
        clients=(sshd.spec,),
        connections=(4, 8),
        label="ssh host",
        **FAST,
    )
    df = run_sweep(plan, tmp_path / "runs", access=Access(ssh_config=str(cfg)), progress=None)
    assert len(df) == 2
    assert (df["server_host"] == sshd.spec).all() and (df["client_hosts"] == sshd.spec).all()
    assert (df["requests"] > 10).all() and (df["error_rate"] == 0).all()
    meta = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    assert meta["hosts"]["target_address"] == "127.0.0.1"
    assert meta["hosts"]["server"]["host"] == sshd.spec
    assert all(sshd.spec in c["hosts"] for c in meta["commands"])
    (run,) = (tmp_path / "runs").iterdir()
    started = [json.loads(x) for x in (run / "started.jsonl").read_text().splitlines()]
    workdirs = [e["path"] for e in started if e.get("what") == "client-workdir"]
    assert workdirs and not any(Path(w).exists() for w in workdirs)  # the script is gone
    assert all(not Path(e["path"]).exists() for e in started)  # and every prefix


def test_two_clients_merge_exactly(tmp_path, sshd, leaves_no_nginx):
    cfg = sshd.client_config(tmp_path)
    plan = Plan(
        server="local",
        clients=("local", sshd.spec),
        target_address="127.0.0.1",
        connections=(4,),
        **FAST,
    )
    df = run_sweep(plan, tmp_path / "runs", access=Access(ssh_config=str(cfg)), progress=None)
    row = df.iloc[0]
    assert row["clients"] == 2 and row["client_hosts"] == f"local {sshd.spec}"
    store = RunFolder.open(tmp_path / "runs", row["run_id"])
    (h,) = list(store.histograms())
    assert set(h["clients"]) == {"local", sshd.spec}
    merged = loadgen.merge(
        loadgen.Measurement(
            1.0,
            sum(c for _, c in pairs),
            0,
            dict.fromkeys(loadgen.ERROR_KINDS, 0),
            {int(v): int(c) for v, c in pairs},
            rps=0.0,
        )
        for pairs in h["clients"].values()
    )
    assert row["latency_p99_ms"] == pytest.approx(merged.latency_ms["p99"])
    assert row["latency_p50_ms"] == pytest.approx(merged.latency_ms["p50"])
    assert merged.requests >= 0.99 * row["requests"]
    assert all(sum(c for _, c in pairs) > 0 for pairs in h["clients"].values())


def test_a_killed_runner_over_ssh_is_cleaned_up(tmp_path, own_tmpdir, leaves_no_nginx):
    """SIGKILL the runner mid-sweep; `cleanup` stops its nginx and removes both folders."""
    server = start_sshd(tmp_path / "sshd", extra=f"SetEnv TMPDIR={own_tmpdir}\n")
    try:
        cfg = server.client_config(tmp_path)
        runs = tmp_path / "runs"
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "runners", "sweep", "--server", server.spec),
                *("--client", server.spec, "--ssh-config", str(cfg), "--connections", "4,8"),
                *("--duration", "2s", "--warmup", "0", "--cooldown", "0", "--quiet"),
                *("--out", str(runs)),
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while not any(len(t.read_text().splitlines()) > 1 for t in runs.glob("*/trials.csv")):
            assert proc.poll() is None and time.monotonic() < deadline, "no first trial"
            time.sleep(0.05)
        proc.kill()
        proc.communicate(timeout=60)
        assert nginx_under(own_tmpdir) and list(own_tmpdir.glob("nginx-sizing-load.*"))
        p = runners_cli("cleanup", "--all", "--out", str(runs), "--ssh-config", str(cfg))
        assert p.returncode == 0, p.stderr
        assert f"on {server.spec}" in p.stderr and "stopping and removing it" in p.stderr
        deadline = time.monotonic() + 30
        while nginx_under(own_tmpdir) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not list(own_tmpdir.glob("nginx-sizing*"))
    finally:
        server.stop()


def test_commands_share_one_remote_shell_and_keep_their_output_exact(tmp_path, sshd):
    host = connect(sshd.spec, ssh_config=str(sshd.client_config(tmp_path)))
    try:
        assert host.run(["printf", "%s", "no newline"]).stdout == "no newline"
        r = host.sh('printf "out\\n\\n"; printf "err" >&2; exit 3', check=False)
        assert (r.stdout, r.stderr, r.exited) == ("out\n\n", "err", 3)
        big = host.sh('head -c 3000000 /dev/zero | tr "\\0" a; echo; echo tail >&2')
        assert big.stdout == "a" * 3_000_000 + "\n" and big.stderr == "tail\n"
        assert host.run(["sh", "-c", "read x; echo ${x:-none}"]).stdout == "none\n"  # no stdin
        missing = host.run(["/nonexistent/tool"], check=False)
        assert missing.exited == 127 and "not found" in missing.stderr
        for _ in range(20):
            host.run(["true"])
        assert host.commands == 25 and host.sessions == 1
    finally:
        host.close()


def test_a_timed_out_command_closes_the_shell_and_the_next_gets_a_new_one(tmp_path, sshd):
    host = connect(sshd.spec, ssh_config=str(sshd.client_config(tmp_path)))
    try:
        r = host.run(["sleep", "30"], timeout=0.5, check=False)
        assert r.exited == 124 and "timed out" in r.stderr
        assert host.run(["echo", "again"]).stdout == "again\n"
        assert host.sessions == 2
    finally:
        host.close()


def test_a_command_while_the_shell_is_busy_gets_its_own_session(tmp_path, sshd):
    host = connect(sshd.spec, ssh_config=str(sshd.client_config(tmp_path)))
    # The slow command holds the shell until the fast one has run (it makes the flag), so
    # the order does not depend on how fast a loaded machine schedules the threads.
    flag = f"/tmp/nginx-sizing-busy-{uuid.uuid4().hex}"
    wait = f"i=0; while [ ! -e {flag} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"
    try:
        with ThreadPoolExecutor(1) as pool:
            slow = pool.submit(host.run, ["sh", "-c", f"{wait}; rm -f {flag}; echo slow"])
            deadline = time.monotonic() + 30
            while not host._shell_lock.locked() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert host._shell_lock.locked()
            fast = host.run(["sh", "-c", f"touch {flag}; echo fast"])
            assert fast.stdout == "fast\n" and slow.result().stdout == "slow\n"
        assert host.sessions == 2
    finally:
        host.close()


def _commands_of_a_sweep(tmp_path, sshd, monkeypatch, trials: int) -> int:
    counted = []
    real = SSHHost._exec

    def counting(self, argv, timeout):
        counted.append(argv[0])
        return real(self, argv, timeout)

    monkeypatch.setattr(SSHHost, "_exec", counting)
    plan = Plan(
        server=sshd.spec,
        clients=(sshd.spec,),
        connections=(4, 8, 16)[:trials],
        **FAST,
    )
    cfg = sshd.client_config(tmp_path)
    run_sweep(plan, tmp_path / f"runs{trials}", access=Access(ssh_config=str(cfg)), progress=None)
    return len(counted)


def test_a_trial_over_ssh_is_one_remote_command(tmp_path, sshd, monkeypatch, leaves_no_nginx):
    """Sampling nginx, running wrk and sampling again go as one command; setting up and
    tearing down take a fixed few."""
    one = _commands_of_a_sweep(tmp_path, sshd, monkeypatch, 1)
    three = _commands_of_a_sweep(tmp_path, sshd, monkeypatch, 3)
    assert three - one == 2
    assert one <= 8  # facts, prefix, content, client folder, start, the trial, stop, removal


# -- Ctrl-C stops remote commands on their host ---------------------------------------------
def _sessions_of(pids: list[int]) -> list[int]:
    """The live processes (not zombies) in the sessions of ``pids`` on this machine."""
    sids = set()
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            sids.add(int(Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[3]))
    out = []
    for d in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (d / "stat").read_bytes().rpartition(b")")[2].split()
            if int(fields[3]) in sids and fields[0] != b"Z":
                out.append(int(d.name))
    return out


def _await(condition, what: str, bound_s: float) -> None:
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not after {bound_s:g} s"
        time.sleep(0.05)


def _remote_long_commands(tmp_path: Path, n: int) -> tuple[list[list[str]], Callable[[], list]]:
    """``n`` remote commands that each record their pid, then run ``timeout`` 300 s of
    ``sleep`` (``timeout`` puts ``sleep`` in a process group of its own); and a function
    that lists their live processes (the sshd is on loopback: the host is this machine)."""
    tag = uuid.uuid4().hex
    marks = [tmp_path / f"remote-{tag}.{i}" for i in range(n)]
    argvs = [["sh", "-c", f"echo $$ > {m}; exec timeout 300 sleep 300"] for m in marks]

    def alive() -> list[int]:
        pids = [int(m.read_text()) for m in marks if m.exists() and m.read_text().strip()]
        return _sessions_of(pids) if len(pids) == n else []

    return argvs, alive


def _with_sigint(when: Callable[[], bool], body: Callable[[], object]) -> None:
    """Run ``body``; SIGINT this process once ``when`` holds; expect KeyboardInterrupt."""
    fired = threading.Event()

    def interrupt_once() -> None:
        _await(when, "the remote commands running", 60)
        fired.set()
        os.kill(os.getpid(), signal.SIGINT)

    # A pytest-xdist worker ignores SIGINT: the test sets Python's own handler for its span.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_once, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            body()
            _await(fired.is_set, "the interrupt", 60)  # the body returned first: wait for it
    finally:
        signal.signal(signal.SIGINT, before)


def test_ctrl_c_kills_the_remote_command_and_its_session(tmp_path, sshd):
    """Ctrl-C in the thread that waits for a remote command kills it on its host, with every
    process of its session; before, it ran on there until the host's ``timeout`` ended it."""
    host = connect(sshd.spec, ssh_config=str(sshd.client_config(tmp_path)))
    try:
        (argv,), alive = _remote_long_commands(tmp_path, 1)
        _with_sigint(lambda: len(alive()) >= 2, lambda: host.run(argv, check=False))
        _await(lambda: not alive(), "the remote command and its sleep killed", 30)
        assert host.run(["echo", "again"]).stdout == "again\n"  # a new shell serves
    finally:
        host.close()


def test_ctrl_c_kills_remote_commands_of_other_threads(tmp_path, sshd):
    """Two commands side by side (one in the connection's shell, one in a session of its
    own, the shell being busy): the interrupt kills both on the host."""
    from runners.hosts import side_by_side

    host = connect(sshd.spec, ssh_config=str(sshd.client_config(tmp_path)))
    try:
        argvs, alive = _remote_long_commands(tmp_path, 2)
        calls = [functools.partial(host.run, a, check=False) for a in argvs]
        _with_sigint(lambda: len(alive()) >= 4, lambda: side_by_side(calls, [host]))
        _await(lambda: not alive(), "both remote commands killed", 30)
        assert host.sessions >= 2 and host.run(["true"]).ok
    finally:
        host.close()


def test_a_timed_out_remote_command_is_killed_on_its_host(tmp_path, sshd):
    """Before, a timed-out command was only left behind (to the host's ``timeout``)."""
    host = connect(sshd.spec, ssh_config=str(sshd.client_config(tmp_path)))
    try:
        (argv,), alive = _remote_long_commands(tmp_path, 1)
        assert host.run(argv, timeout=3, check=False).exited == 124
        _await(lambda: not alive(), "the timed-out command killed", 30)
        assert host.run(["echo", "again"]).stdout == "again\n"
    finally:
        host.close()


def test_ctrl_c_in_a_trial_over_ssh_stops_its_load(tmp_path, own_tmpdir, leaves_no_nginx):
    """A 60 s trial on an SSH server and client: Ctrl-C stops the remote wrk, nginx and the
    command; the run keeps its finished trials (none) for --resume."""
    from tests.test_hardening4 import _generators_in, _interrupt_in_trial, _start

    server = start_sshd(tmp_path / "sshd", extra=f"SetEnv TMPDIR={own_tmpdir}\n")
    try:
        cfg = server.client_config(tmp_path)
        argv = [
            *("sweep", "--server", server.spec, "--client", server.spec),
            *("--ssh-config", str(cfg), "--connections", "2", "--duration", "60s"),
            *("--warmup", "0"),
        ]
        err = _interrupt_in_trial(_start(argv, tmp_path / "runs"), own_tmpdir)
        assert "interrupted; finished trials are kept in run" in err and "Traceback" not in err
        assert not _generators_in(own_tmpdir)
    finally:
        server.stop()
