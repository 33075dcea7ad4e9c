"""Scenario configs and the private nginx, run for real on this machine."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import ssl
import stat
import subprocess
import time
from pathlib import Path

import pytest

from runners.deploy.conf import affinity_masks
from runners.deploy.nginx import Deployment, NginxHost, relevant_log_line
from runners.errors import RunnerError
from runners.hosts import LocalHost
from runners.scenario import Scenario, response_size_problem
from tests.conftest import live_nginx_pids

ROOT = os.geteuid() == 0


def _within(seconds: float, cond) -> bool:
    """Whether ``cond()`` holds within ``seconds`` (polled): a busy machine reaps slowly."""
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _get(port: int, path: str, https: bool, headers: dict[str, str] | None = None):
    if https:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", port, timeout=30, context=ctx
        )
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp, body


@pytest.mark.parametrize(
    "scenario",
    [
        Scenario("static", "http", 1024),
        Scenario("static", "https", 10 * 1024),
        Scenario("static", "https", 53 * 1024, gzip=True),
        Scenario("cps", "http", 0),
        Scenario("cps", "https", 0, tls_key="rsa"),
        Scenario("reverse_proxy", "http", 1024, upstreams=2),
        Scenario("api_gateway", "https", 1024),
        Scenario("throughput", "http", 1 << 20),
    ],
    ids=lambda s: f"{s.name}-{s.protocol}-{s.file_bytes}{'-gzip' if s.gzip else ''}",
)
def test_scenario_serves_what_it_says(scenario, leaves_no_nginx):
    with Deployment(NginxHost(LocalHost(), as_root=ROOT), scenario) as dep:
        conf = dep.start([0])
        assert "worker_processes 1;" in conf and "worker_cpu_affinity 1;" in conf
        assert dep.alive() and dep.port
        headers = {"Accept-Encoding": "gzip"} if scenario.gzip else {}
        resp, body = _get(dep.port, scenario.path, scenario.protocol == "https", headers)
        assert resp.status == 200
        if scenario.gzip:
            assert resp.getheader("Content-Encoding") == "gzip"
            assert 0 < len(body) < scenario.file_bytes
        else:
            assert len(body) == scenario.file_bytes
        if not scenario.keepalive:
            assert resp.getheader("Connection") == "close"
        if scenario.name == "api_gateway":
            resp404, _ = _get(dep.port, "/body.bin", scenario.protocol == "https")
            assert resp404.status == 404
        if scenario.protocol == "https":
            key = f"{dep.prefix}/key.pem"
            assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
            text = subprocess.run(
                ["openssl", "pkey", "-in", key, "-noout", "-text"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            expected = "prime256v1" if scenario.tls_key == "ecdsa" else "2048 bit"
            assert expected in text


def test_restart_with_more_workers_pins_each(leaves_no_nginx):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    with Deployment(NginxHost(LocalHost(), as_root=ROOT), Scenario()) as dep:
        dep.start([0])
        first = dep.pids()
        conf = dep.start([0, 1])
        assert "worker_cpu_affinity 01 10;" in conf
        assert len(dep.server.workers) == 2
        assert not set(first) & set(dep.pids())
        for w in dep.server.workers:
            # a new worker pins itself as it starts: on a busy machine, wait for it (bounded)
            deadline = time.monotonic() + 30
            while len(os.sched_getaffinity(w)) != 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            allowed = os.sched_getaffinity(w)
            assert len(allowed) == 1
        assert sorted(next(iter(os.sched_getaffinity(w))) for w in dep.server.workers) == [0, 1]


def test_bad_config_is_refused_by_nginx_t(leaves_no_nginx):
    dep = Deployment(
        NginxHost(LocalHost(), as_root=ROOT), Scenario(directives=("bogus_directive on",))
    )
    with pytest.raises(RunnerError) as err, dep:
        dep.start([0])
    message = str(err.value)
    assert message.startswith("nginx -t rejected the server config on local:")
    assert "bogus_directive" in message and "\n" not in message


def test_killed_master_leaves_no_workers(leaves_no_nginx):
    with Deployment(NginxHost(LocalHost(), as_root=ROOT), Scenario()) as dep:
        dep.start([0])
        os.kill(dep.server.master, signal.SIGKILL)
        assert _within(30, lambda: not dep.alive())
        assert set(dep.server.workers) <= live_nginx_pids()  # orphans still serve


def test_other_nginx_is_left_alone(tmp_path, leaves_no_nginx):
    """An nginx that is not ours keeps running through a whole deployment."""
    (tmp_path / "html").mkdir()
    conf = tmp_path / "nginx.conf"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf.write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n"
        f"events {{}}\nhttp {{ server {{ listen 127.0.0.1:{port}; }} }}\n"
    )
    subprocess.run(
        ["nginx", "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log")],
        check=True,
    )
    foreign = int((tmp_path / "nginx.pid").read_text())
    foreign_workers = [
        int(p) for p in Path(f"/proc/{foreign}/task/{foreign}/children").read_text().split()
    ]
    try:
        with Deployment(NginxHost(LocalHost(), as_root=ROOT), Scenario()) as dep:
            dep.start([0])
            # Even a recorded pid that now belongs to another nginx is left alone.
            dep.main.pids.update(foreign_workers)
        assert foreign in live_nginx_pids()
        assert set(foreign_workers) <= live_nginx_pids()
    finally:
        os.kill(foreign, signal.SIGTERM)
        _within(30, lambda: foreign not in live_nginx_pids())


def test_teardown_finds_a_master_whose_pid_was_lost(leaves_no_nginx):
    dep = Deployment(NginxHost(LocalHost(), as_root=ROOT), Scenario())
    dep.start([0])
    pids = set(dep.pids())
    dep.server = None
    dep.main.pids.clear()
    dep.teardown()
    assert _within(30, lambda: not pids & live_nginx_pids())


def test_affinity_masks():
    assert affinity_masks([0]) == "1"
    assert affinity_masks([0, 1]) == "01 10"
    assert affinity_masks([1, 3]) == "0010 1000"


@pytest.mark.parametrize(
    ("scenario", "per_response", "ok"),
    [
        (Scenario(file_bytes=1024), 1278, True),
        (Scenario(file_bytes=1024), 300, False),
        (Scenario(file_bytes=1024), 1024 + 5000, False),
        (Scenario("cps", file_bytes=0), 170, True),
        (Scenario(file_bytes=53 * 1024, gzip=True), 30000, True),
        (Scenario(file_bytes=53 * 1024, gzip=True), 53 * 1024 + 250, False),
    ],
)
def test_response_size_check(scenario, per_response, ok):
    assert (response_size_problem(scenario, per_response) is None) is ok


def test_scenario_validation():
    with pytest.raises(RunnerError, match="unknown scenario"):
        Scenario("bogus")
    with pytest.raises(RunnerError, match="0-byte"):
        Scenario("cps", file_bytes=10)
    with pytest.raises(RunnerError, match="upstreams"):
        Scenario("reverse_proxy", upstreams=0)


def test_the_relevant_error_log_line_is_quoted():
    log = (
        "2026/11/21 10:00:00 [notice] 10#10: start worker process 11\n"
        "2026/11/21 10:00:05 [alert] 10#10: worker process 11 exited on signal 9\n"
        "2026/11/21 10:00:05 [notice] 10#10: signal 17 (SIGCHLD) received from 11\n"
    )
    assert "worker process 11 exited on signal 9" in relevant_log_line(log)
    assert relevant_log_line("a\nb [notice] last\n") == "b [notice] last"
    assert relevant_log_line("") == ""


def test_http2_is_on_the_listening_socket_only_when_asked():
    from runners.deploy.conf import ConfTarget, render_conf

    where = ConfTarget("/p", "127.0.0.1", [20001], [0])
    assert " http2 " not in render_conf(Scenario(protocol="https"), where)
    conf = render_conf(Scenario(protocol="https"), where, http2=True)
    assert "listen 127.0.0.1:20001 ssl http2 backlog=4096;" in conf
    conf = render_conf(Scenario(), where, http2=True)
    assert "listen 127.0.0.1:20001 http2 backlog=4096;" in conf


def test_a_sampled_run_is_one_command_and_each_part_is_read_back(tmp_path, leaves_no_nginx):
    """`run_sampled`: the sample before, the command's own output and status, the sample
    after, from one remote command; nginx down before means the command never ran."""
    with Deployment(NginxHost(LocalHost(), as_root=ROOT), Scenario()) as dep:
        dep.start([0])
        calls = []
        real = dep.host._exec

        def counting(argv, timeout):
            calls.append(argv)
            return real(argv, timeout)

        dep.host._exec = counting  # type: ignore[method-assign]
        script = 'printf "NGINX_SIZING_AFTER\\nout"; echo err >&2; exit 3'
        (alive0, cpu0), r, after = dep.run_sampled(["sh", "-c", script], timeout=60)
        assert len(calls) == 1
        assert alive0 and r is not None and after is not None
        assert (r.stdout, r.stderr, r.exited) == ("NGINX_SIZING_AFTER\nout", "err\n", 3)
        alive1, cpu1 = after
        assert alive1 and cpu1 >= cpu0 > 0
        # What a separate sample says agrees with the sampled run's.
        assert dep.sample()[0] and dep.sample()[1] >= cpu1
        os.kill(dep.server.master, signal.SIGKILL)
        for w in dep.server.workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while dep.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        (alive0, _), r, after = dep.run_sampled(["touch", str(tmp_path / "ran")], timeout=60)
        assert not alive0 and r is None and after is None
        assert not (tmp_path / "ran").exists()


def test_the_jwt_check_without_njs_says_what_to_install(tmp_path, leaves_no_nginx):
    from runners import jwt
    from runners.scenario import make_scenario

    fake = tmp_path / "nginx"
    fake.write_text(f"#!/bin/sh\necho 'configure arguments: --modules-path={tmp_path}/mods' >&2\n")
    fake.chmod(0o755)
    dep = Deployment(
        NginxHost(LocalHost(), nginx=str(fake)),
        make_scenario("reverse_proxy", jwt=True),
        jwt_public_key=jwt.KeyPair.generate().public_der_b64,
    )
    try:
        with pytest.raises(RunnerError, match=f"needs njs on local: {tmp_path}/mods/"):
            dep.setup()
        assert dep.prefix is not None
        assert not (Path(dep.prefix) / jwt.VERIFY_SCRIPT.name).exists()
    finally:
        prefix = dep.prefix
        dep.teardown()
    assert prefix and not Path(prefix).exists()
