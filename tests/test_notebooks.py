"""Notebooks as stored, the project's kernel, batch reports, and the report in a real Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from sizing.paths import KERNEL_NAME, NOTEBOOKS_DIR
from sizing.report import to_html
from tests.conftest import sizing_cli

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("NGINX_SIZING_ARTIFACTS", ROOT / "test-artifacts"))
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
EXPECTED = {"explore_reference", "sweep", "fit_runs", "sizing_report", "price_performance"}


def test_every_notebook_is_there():
    assert {p.stem for p in NOTEBOOKS} == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_are_stored_clean(path):
    """No outputs or counts (reviewable diffs), one parameters cell, the project's kernel."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].cell_type == "code"
    assert nb.metadata.kernelspec.name == KERNEL_NAME


def test_project_kernel_is_registered():
    out = subprocess.run(
        [sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    specs = json.loads(out.stdout)["kernelspecs"]
    assert KERNEL_NAME in specs, "run `make demo` or `make test` to register the kernel"
    argv0 = specs[KERNEL_NAME]["spec"]["argv"][0]
    assert Path(argv0).absolute().is_relative_to(Path(sys.prefix).absolute())


@pytest.fixture(scope="module")
def default_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    p = sizing_cli("report", "--rps", "1e6", "--sla-p99", "5ms", "--out", str(out))
    assert p.returncode == 0, p.stderr
    return out / "sizing_report.ipynb", out / "sizing_report.html"


def _figures(ipynb: Path) -> int:
    nb = nbformat.read(ipynb, as_version=4)
    return sum(
        1
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if "plotly-graph-div" in str(o.get("data", {}).get("text/html", ""))
    )


@pytest.mark.slow
def test_report_is_self_contained_without_code(default_report):
    ipynb, html = default_report
    text = html.read_text()
    assert _figures(ipynb) >= 3
    assert not re.search(r'<script[^>]*src="https?://', text)
    assert "* plotly.js v" in text  # the library itself, not a link to it
    assert "price_performance_figure" not in text  # no code cells
    assert "1,000,000 RPS" in text
    with_code = to_html(ipynb, html.with_name("with-code.html"), show_code=True)
    assert "price_performance_figure" in with_code.read_text()


@pytest.mark.slow
def test_report_renders_in_headless_chromium(default_report):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed (make test installs Debian's chromium)")
    ipynb, html = default_report
    base = [
        chromium,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--virtual-time-budget=15000",
        "--enable-logging=stderr",
        "--v=0",
    ]
    dom = subprocess.run(
        [*base, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = dom.stdout.count('class="plot-container plotly"')
    assert rendered == _figures(ipynb) >= 3
    assert dom.stdout.count('class="main-svg"') >= rendered
    console = [ln for ln in dom.stderr.splitlines() if ":CONSOLE" in ln]
    errors = [ln for ln in console if "Uncaught" in ln or "Error" in ln]
    assert not errors, errors
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "sizing_report.png"
    shot.unlink(missing_ok=True)
    subprocess.run(
        [*base, "--window-size=1280,3200", f"--screenshot={shot}", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 20_000


@pytest.mark.slow
def test_plain_papermill_runs_the_report(tmp_path):
    out = tmp_path / "out.ipynb"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(NOTEBOOKS_DIR / "sizing_report.ipynb"),
            str(out),
            "-p",
            "rps",
            "2e5",
            "-p",
            "providers",
            "aws",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    text = out.read_text()
    assert (
        "200,000 RPS" in text
        and "gcp"
        not in re.sub(r'"source".*', "", text)
        .split("Options, cheapest first")[-1]
        .split("vCPUs by family")[0]
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--provider", "nosuch"], 2, "unknown provider nosuch"),
        (["-p", "top", "abc"], 1, "sizing_report failed in cell"),
        (["--file-size", "huge"], 2, "is not a size"),
    ],
)
def test_failing_report_fails_with_the_cells_error(tmp_path, args, code, message):
    p = sizing_cli("report", "--rps", "1e6", "--out", str(tmp_path), *args)
    assert p.returncode == code
    assert len(p.stderr.strip().splitlines()) == 1 and message in p.stderr
    assert not (tmp_path / "sizing_report.html").exists()
