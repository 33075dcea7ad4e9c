"""Shared fixtures: the set of live nginx processes, to prove tests leave none behind."""

from __future__ import annotations

import atexit
import copy
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

# The catalog's private cache (`sizing.catalog.cache`) of this test session, not the user's:
# made once by the process that starts the session (its xdist workers inherit it) and removed
# when that process ends.
if "NGINX_SIZING_CACHE" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="nginx-sizing-cache-")
    os.environ["NGINX_SIZING_CACHE"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)


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


def nginx_prefixes(tmp: Path | None = None) -> set[str]:
    """Deployment folders under a temporary directory (default: ``$TMPDIR`` or /tmp)."""
    tmp = tmp or Path(os.environ.get("TMPDIR", "/tmp"))
    return {p.name for p in tmp.glob("nginx-sizing.*")}


def nginx_under(folder: Path) -> set[int]:
    """Live nginx pids whose command line names a prefix under ``folder``."""
    out = set()
    for pid in live_nginx_pids():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"{folder}/" in cmd:
            out.add(pid)
    return out


@pytest.fixture
def own_tmpdir(monkeypatch):
    """A private ``$TMPDIR`` for this test: every nginx prefix it makes lands there.

    World-traversable (like /tmp), so workers running as ``nobody`` can read the content.
    """
    folder = Path(tempfile.mkdtemp(prefix="nginx-sizing-test-", dir="/tmp"))
    folder.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def leaves_no_nginx(own_tmpdir):
    """Fail if the test leaves an nginx process or a deployment folder of its own behind.

    Only what the test started is checked (nginx under its private ``$TMPDIR``, and the pids
    of those processes), so other programs' nginx on a busy machine do not matter.
    """
    yield
    assert nginx_under(own_tmpdir) == set(), "nginx processes left running"
    assert nginx_prefixes(own_tmpdir) == set(), "deployment folders left behind"


@pytest.fixture(scope="session")
def reference_fit_run() -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """The fit of the reference dataset (every series, with the model comparison), once.

    A minute or more on a busy machine: the tests that need the fitted rows share this one.
    Returns the rows and the ``(done, total)`` progress calls the fit made.
    """
    from sizing.fitting import fits

    ticks: list[tuple[int, int]] = []
    rows = fits.fit_reference(
        "nginx-web-server", compare=True, progress=lambda d, t: ticks.append((d, t))
    )
    return rows, ticks


@pytest.fixture(scope="session")
def reference_fit(reference_fit_run) -> list[dict[str, Any]]:
    """The rows of `reference_fit_run`."""
    return reference_fit_run[0]


@pytest.fixture
def replayed_reference_fit(monkeypatch, reference_fit):
    """``sizing.fitting.fits.fit_reference`` answering the reference from `reference_fit`.

    For tests of what the commands do with a fit (tables, JSON, progress), not of the fit
    itself (`tests/test_project.py` checks that against the stored fit); it reports progress
    per series like the real one.
    """
    from sizing.fitting import fits

    real = fits.fit_reference

    def replay(name="nginx-web-server", level=0.95, compare=True, progress=None):
        if name != "nginx-web-server" or level != 0.95:
            return real(name, level=level, compare=compare, progress=progress)
        rows = []
        for done, row in enumerate(copy.deepcopy(reference_fit), start=1):
            if not compare:
                row.pop("comparison", None)
            rows.append(row)
            if progress is not None:
                progress(done, len(reference_fit))
        return rows

    monkeypatch.setattr(fits, "fit_reference", replay)
    return reference_fit


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


def interruptible() -> None:
    """``preexec_fn`` for a child a test sends SIGINT: a shell without job control (CI's, or
    ``nohup cmd &``) starts it with SIGINT ignored, and Python then never raises
    KeyboardInterrupt; the default disposition makes it behave as under a terminal's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
