"""Shared fixtures: the set of live nginx processes, to prove tests leave none behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def live_nginx_pids() -> set[int]:
    """Pids of nginx processes that are alive (zombies are not: they only await reaping)."""
    pids = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if (d / "comm").read_text().strip() != "nginx":
                continue
            state = (d / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            pids.add(int(d.name))
    return pids


def nginx_prefixes() -> set[str]:
    """Deployment folders under the temporary directory."""
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    return {p.name for p in tmp.glob("nginx-sizing.*")}


@pytest.fixture
def leaves_no_nginx():
    """Fail if the test leaves an nginx process or a deployment folder behind."""
    before, prefixes = live_nginx_pids(), nginx_prefixes()
    yield
    assert live_nginx_pids() - before == set(), "nginx processes left running"
    assert nginx_prefixes() - prefixes == set(), "deployment folders left behind"


def _cli(package: str, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", package, *args],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def runners_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m runners ARGS`` from the project root, bounded in time."""
    return _cli("runners", args, 120)


def sizing_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m sizing ARGS`` from the project root, bounded in time."""
    return _cli("sizing", args, 300)
