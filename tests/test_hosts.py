"""Host specs, quoting, file writing and host facts on this machine."""

from __future__ import annotations

import os
import stat
import time

import pytest

from runners.errors import RunnerError
from runners.hosts import HostSpec, LocalHost, connect, facts, parse_cpu_list, require_tools


@pytest.mark.parametrize(
    ("text", "kind", "host", "user", "port", "back"),
    [
        ("local", "local", "", None, None, "local"),
        ("", "local", "", None, None, "local"),
        ("netns:srv-1", "netns", "srv-1", None, None, "netns:srv-1"),
        ("web1", "ssh", "web1", None, None, "web1"),
        (
            "ops@web1.example.com:2222",
            "ssh",
            "web1.example.com",
            "ops",
            2222,
            "ops@web1.example.com:2222",
        ),
        ("root@[::1]:22", "ssh", "::1", "root", 22, "root@[::1]:22"),
    ],
)
def test_host_spec(text, kind, host, user, port, back):
    spec = HostSpec.parse(text)
    assert (spec.kind, spec.host, spec.user, spec.port) == (kind, host, user, port)
    assert str(spec) == back


@pytest.mark.parametrize("text", ["a b", "u@", "host:99999", "h;rm -rf /", "x@y@z", "netns:a/b"])
def test_bad_host_spec(text):
    with pytest.raises(RunnerError, match="host"):
        HostSpec.parse(text)


def test_arguments_cannot_inject(tmp_path):
    host = LocalHost()
    evil = f"a; touch {tmp_path}/pwned $(touch {tmp_path}/pwned2) `id` 'q\" \\n"
    out = host.run(["echo", evil])
    assert out.stdout.rstrip("\n") == evil
    out = host.sh('printf "%s" "$1"', evil)
    assert out.stdout == evil
    assert not any(tmp_path.iterdir())


def test_write_text_mode_and_content(tmp_path):
    host = LocalHost()
    path = tmp_path / "odd name $(x).conf"
    text = 'user "q";\n\\n $HOME `id`\n'
    host.write_text(str(path), text, 0o600)
    assert path.read_text() == text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_failed_command_is_one_line():
    with pytest.raises(RunnerError) as err:
        LocalHost().run(["sh", "-c", "echo first >&2; echo boom >&2; exit 3"], what="the step")
    assert str(err.value) == "the step failed on local (exit 3): boom"
    missing = LocalHost().run(["/nonexistent/prog"], check=False)
    assert missing.exited == 127


def test_facts_of_this_machine():
    info = facts(connect("local"), ["nginx", "wrk", "openssl", "no-such-tool-xyz"])
    assert info["cores"] == os.cpu_count()
    assert info["cpus_allowed"] == sorted(os.sched_getaffinity(0))
    assert info["tools"]["nginx"].endswith("nginx")
    assert info["tools"]["no-such-tool-xyz"] == ""
    assert "nginx/" in info["nginx_version"]
    assert info["wrk_version"].startswith("wrk")
    assert info["openssl_version"].startswith("OpenSSL")
    assert info["sysctl"]["net.core.somaxconn"].isdigit()
    assert len(info["sysctl"]["net.ipv4.ip_local_port_range"].split()) == 2
    assert info["kernel"] == os.uname().release


def test_require_tools_names_every_missing_tool():
    with pytest.raises(RunnerError) as err:
        require_tools(
            {"local": {"nginx": "/usr/sbin/nginx", "wrk": ""}, "ops@h2": {"wrk": "", "openssl": ""}}
        )
    message = str(err.value)
    assert "wrk on local" in message and "wrk on ops@h2" in message
    assert "openssl on ops@h2" in message and "nginx" not in message.split("(")[0]
    require_tools({"local": {"nginx": "/x"}})


def test_cpu_list():
    assert parse_cpu_list("0-3,6, 8-9") == [0, 1, 2, 3, 6, 8, 9]
    assert parse_cpu_list("") == []


def _session_members(sid: int) -> list[int]:
    """The live processes (not zombies) of session ``sid``."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except (OSError, ValueError):
            continue
        if d.isdigit() and int(fields[3]) == sid and fields[0] != b"Z":
            out.append(int(d))
    return out


@pytest.mark.parametrize("path", [os.defpath, "/nonexistent"], ids=["pkill", "no-pkill"])
def test_a_remote_sessions_processes_are_killed_only_with_their_proof(path):
    """The scripts `SSHHost` runs on its host (run here with a local ``sh``): the shell names
    its session and start time; the kill takes that session's processes, ``timeout``'s own
    process group with them, and nothing of a session whose leader is not that shell."""
    import subprocess

    from runners.hosts import _IDENTIFY, _KILL_SESSIONS, _LEADER

    shell = subprocess.Popen(
        ["sh"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # as sshd starts the remote shell
    )
    try:
        assert shell.stdin is not None and shell.stdout is not None
        shell.stdin.write(_IDENTIFY.replace("@TOKEN@", "T") + "echo $$; timeout 300 sleep 300\n")
        shell.stdin.flush()
        token, leader = shell.stdout.readline().split()
        assert token == "T" and _LEADER.fullmatch(leader) and leader.startswith(f"{shell.pid}:")
        deadline = time.monotonic() + 60
        while len(_session_members(shell.pid)) < 3:  # sh, timeout, sleep
            assert time.monotonic() < deadline, "the command did not start"
            time.sleep(0.02)
        sid, start = leader.split(":")
        later, other = f"{sid}:{int(start) + 10**9}", f"{os.getpid()}:0"
        kill = ["/bin/sh", "-c", _KILL_SESSIONS, "sh"]
        env = {"PATH": path}  # without pkill: each process's stat line read in the shell
        done = subprocess.run([*kill, later, other], capture_output=True, text=True, env=env)
        assert done.stdout.split() == ["GONE", sid, "GONE", str(os.getpid())]
        assert len(_session_members(shell.pid)) == 3
        done = subprocess.run([*kill, leader], capture_output=True, text=True, env=env)
        assert done.stdout.split() == ["KILLED", str(shell.pid)]
        shell.wait(timeout=60)
        while _session_members(shell.pid):
            assert time.monotonic() < deadline, "the session outlived the kill"
            time.sleep(0.02)
    finally:
        shell.kill()
        shell.wait()
