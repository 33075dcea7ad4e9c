"""A killed container campaign leaves nothing that ``python -m runners cleanup`` cannot remove.

A child process runs `runners.calibrate.features.measure` for ``access_log_container`` as a
campaign does (a private containerd, two nginx in its containers), stopped at its first
trial; the test kills it with SIGKILL, then runs ``cleanup --all`` on the run folders it
recorded into, and looks for the daemon, its shims, the containers' processes, the mounts
and the folders of that run (its own, never the machine's others).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from runners.cli.main import main as runners_main
from runners.deploy import container
from runners.errors import RunnerError
from runners.hosts import LocalHost

_NO_TOOLS = [t for t in (*container.CONTAINERD_TOOLS, "wrk") if shutil.which(t) is None]
try:
    import grpc  # noqa: F401

    _NO_GRPC = ""
except ImportError:
    _NO_GRPC = "grpcio is not installed (the CRI path's client)"

# The campaign up to its first trial, which says so and waits to be killed.
_CHILD = textwrap.dedent(
    """
    import sys, time
    from runners.calibrate import features as campaign
    from runners.hosts import LocalHost

    def first_trial(*args, **kwargs):
        print("UP", flush=True)
        time.sleep(600)

    campaign.run_trial = first_trial
    bench, _ = campaign.open_bench(LocalHost(), 0)
    settings = campaign.Settings(container_path=sys.argv[1], runs=sys.argv[2])
    campaign.measure(bench, "access_log_container", settings, print)
    """
)


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(") ")[2][:1] != "Z"


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()[19]
    except (OSError, IndexError):
        return ""


def _family(folder: str) -> dict[int, str]:
    """Processes whose command line names ``folder``, and their descendants: pid -> start."""
    parents: dict[int, int] = {}
    named: set[int] = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmdline = (d / "cmdline").read_bytes()
        except OSError:
            continue
        parents[int(d.name)] = int(stat.rpartition(") ")[2].split()[1])
        if f"{folder}/".encode() in cmdline and int(d.name) != os.getpid():
            named.add(int(d.name))
    found = set(named)
    while True:
        more = {p for p, pp in parents.items() if pp in found} - found
        if not more:
            break
        found |= more
    return {p: _start_time(p) for p in found}


def _mounts_under(folder: str) -> list[str]:
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return [ln.split()[4] for ln in lines if ln.split()[4].startswith(f"{folder}/")]


def _shim_sockets(folder: str) -> list[Path]:
    """The shim sockets the tasks of ``folder``'s containerd wrote in their bundles."""
    bundles = Path(folder, "state", "io.containerd.runtime.v2.task").glob("*/*/address")
    return [Path(b.read_text().strip().removeprefix("unix://")) for b in bundles]


@pytest.mark.slow
@pytest.mark.skipif(bool(_NO_TOOLS), reason=f"not installed: {', '.join(_NO_TOOLS)}")
@pytest.mark.skipif(os.geteuid() != 0, reason="containerd runs containers as root")
@pytest.mark.skipif(bool(_NO_GRPC), reason=_NO_GRPC)
@pytest.mark.parametrize("path", ["cri", "ctr"])
def test_cleanup_removes_what_a_killed_container_campaign_left(tmp_path, path):
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, path, str(runs)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    # A campaign that never reaches its first trial is killed, not waited for.
    watchdog = threading.Timer(120, child.kill)
    watchdog.start()
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line.strip() == "UP", "the campaign did not reach its first trial"
        (started,) = runs.glob("*/started.jsonl")
        entries = [json.loads(ln) for ln in started.read_text().splitlines()]
        folders = [e["path"] for e in entries if e["what"] == container.RECORD_WHAT]
        prefixes = [e["path"] for e in entries if e["what"] != container.RECORD_WHAT]
        folder = folders[0]
        family = _family(folder)
        sockets = _shim_sockets(folder)
        # The CRI plugin mounts each container's root folder on the host; ctr's are in
        # the containers' own mount namespaces.
        assert _mounts_under(folder) or path == "ctr"
        assert family and sockets and prefixes
    finally:
        watchdog.cancel()
        child.send_signal(signal.SIGKILL)
        child.wait()
    # The run's daemon, shims and containers outlive the killed campaign, and the shims'
    # sockets with them; another run's private containerd runs beside them.
    assert any(_alive(p) for p in family)
    assert all(s.is_socket() for s in sockets)
    with container.Containerd(LocalHost()) as other:
        assert runners_main(["cleanup", "--all", "--out", str(runs)]) == 0
        assert _alive(other.pid) and Path(other.folder, "containerd.sock").is_socket()
    left = [p for p, t in family.items() if _alive(p) and _start_time(p) == t]
    assert not left
    assert not _mounts_under(folder)
    assert not any(s.exists() for s in sockets)
    assert not Path(folder).exists()
    assert not any(Path(p).exists() for p in prefixes)
    # Nothing is left to do: a second cleanup finds nothing.
    assert runners_main(["cleanup", "--all", "--out", str(runs)]) == 0


@pytest.mark.parametrize(
    ("folder", "why"),
    [
        ("/etc", "its name is not one the project makes"),
        ("relative/nginx-sizing-ctr.abcdefgh", "its name is not one the project makes"),
        ("/var/nginx-sizing-ctr.abcdefgh", "not in this host's temporary folder"),
    ],
)
def test_cleanup_leaves_a_folder_it_cannot_prove_alone(folder, why, monkeypatch):
    monkeypatch.setenv("TMPDIR", "/tmp")
    done, notes = container.stop_leftover(LocalHost(), folder, [1], {"1": "0"})
    assert not done and any(why in n for n in notes)


def test_cleanup_leaves_a_planted_link_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    target = tmp_path / "kept"
    target.mkdir()
    link = tmp_path / f"{container.FOLDER_NAME}.abcdefgh"
    link.symlink_to(target)
    done, notes = container.stop_leftover(LocalHost(), str(link), [], {})
    assert not done and notes == ["it is a symbolic link"]
    assert target.is_dir() and link.is_symlink()


class _Record:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def started(self, host, what, path, pids, starts=None) -> None:
        self.events.append(("started", path))

    def removed(self, host, path) -> None:
        self.events.append(("removed", path))


def test_a_start_that_fails_half_way_removes_its_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(container, "_START", "echo NOT_READY\n")
    record = _Record()
    with (
        pytest.raises(RunnerError, match="did not start"),
        container.Containerd(LocalHost(), record=record),
    ):
        pass
    (folder,) = {p for _, p in record.events}
    assert [e for e, _ in record.events] == ["started", "removed"]
    assert folder.startswith(f"{tmp_path}/{container.FOLDER_NAME}.")
    assert not Path(folder).exists()
