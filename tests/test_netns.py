"""Two hosts on one machine: server and client in two network namespaces joined by a veth."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runners.sweep import Plan, make_scenario, run_sweep

pytestmark = pytest.mark.slow
SERVER_NS, CLIENT_NS = f"nsz-srv-{os.getpid()}", f"nsz-cli-{os.getpid()}"
SERVER_IP, CLIENT_IP = "10.231.7.1", "10.231.7.2"


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


@pytest.fixture
def two_namespaces():
    if shutil.which("ip") is None:
        pytest.skip("no ip command (iproute2) on this machine")
    made = []
    try:
        for ns in (SERVER_NS, CLIENT_NS):
            r = _ip("netns", "add", ns)
            if r.returncode != 0:
                pytest.skip(f"ip netns is not allowed here: {r.stderr.strip()}")
            made.append(ns)
        veth_s, veth_c = f"vs{os.getpid() % 100000}", f"vc{os.getpid() % 100000}"
        steps = [
            ("link", "add", veth_s, "type", "veth", "peer", "name", veth_c),
            ("link", "set", veth_s, "netns", SERVER_NS),
            ("link", "set", veth_c, "netns", CLIENT_NS),
            ("-n", SERVER_NS, "addr", "add", f"{SERVER_IP}/30", "dev", veth_s),
            ("-n", CLIENT_NS, "addr", "add", f"{CLIENT_IP}/30", "dev", veth_c),
            ("-n", SERVER_NS, "link", "set", veth_s, "up"),
            ("-n", CLIENT_NS, "link", "set", veth_c, "up"),
            ("-n", SERVER_NS, "link", "set", "lo", "up"),
            ("-n", CLIENT_NS, "link", "set", "lo", "up"),
        ]
        for step in steps:
            r = _ip(*step)
            if r.returncode != 0:
                pytest.skip(f"cannot build the veth pair: ip {' '.join(step)}: {r.stderr.strip()}")
        yield
    finally:
        for ns in made:
            _ip("netns", "del", ns)


def test_server_and_client_in_two_namespaces(tmp_path, two_namespaces, leaves_no_nginx):
    plan = Plan(
        scenario=make_scenario("static"),
        server=f"netns:{SERVER_NS}",
        clients=(f"netns:{CLIENT_NS}",),
        connections=(8,),
        duration_s=1,
        warmup_s=0,
        cooldown_s=0.0,
    )
    df = run_sweep(plan, tmp_path, progress=None)
    row = df.iloc[0]
    assert row["server_host"] == f"netns:{SERVER_NS}"
    assert row["client_hosts"] == f"netns:{CLIENT_NS}"
    assert row["requests"] > 100 and row["error_rate"] == 0
    meta = json.loads(next(Path(tmp_path).glob("*/run.json")).read_text())
    assert meta["hosts"]["target_address"] == SERVER_IP
    assert f"listen {SERVER_IP}:" in meta["nginx_conf"]["1"]
    # The server is not reachable from the client namespace's loopback: traffic crossed the veth.
    r = subprocess.run(
        ["ip", "netns", "exec", CLIENT_NS, "ip", "-4", "-o", "addr"], capture_output=True, text=True
    )
    assert SERVER_IP not in r.stdout


def test_upstreams_on_another_host(tmp_path, two_namespaces, leaves_no_nginx):
    """The api_gateway's upstream file servers run in the client's namespace, across the veth."""
    plan = Plan(
        scenario=make_scenario("api_gateway", upstreams=2),
        server=f"netns:{SERVER_NS}",
        clients=(f"netns:{CLIENT_NS}",),
        upstream_host=f"netns:{CLIENT_NS}",
        connections=(8,),
        duration_s=1,
        warmup_s=0,
        cooldown_s=0.0,
    )
    row = run_sweep(plan, tmp_path, progress=None).iloc[0]
    assert row["requests"] > 100 and row["error_rate"] == 0
    assert "response size" not in str(row["invalid_reason"])
    meta = json.loads(next(Path(tmp_path).glob("*/run.json")).read_text())
    assert meta["hosts"]["upstream_address"] == CLIENT_IP
    assert f"listen {CLIENT_IP}:" in meta["upstream_conf"]
    assert f"server {CLIENT_IP}:" in meta["nginx_conf"]["1"]
