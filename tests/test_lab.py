"""JupyterLab in a real Chromium: every notebook runs, and the explorer follows its widgets.

The test starts its own JupyterLab on 127.0.0.1 with a token, over copies of the notebooks
in a temporary folder (the stored notebooks stay without outputs), and drives Debian's
chromium through chromedriver. Every wait polls with a generous limit: the machine may be
busy.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from sizing.paths import NOTEBOOKS_DIR
from tests.browser import chrome, chromium_paths, wait_for

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted(p.stem for p in NOTEBOOKS_DIR.glob("*.ipynb"))
#: Opt-in until a kernel that dies in the lab (seen once: price_performance's kernel exited
#: and the test waited for its cells) makes the test fail fast instead of waiting.
pytestmark = pytest.mark.skipif(
    os.environ.get("NGINX_SIZING_LAB_TEST") != "1",
    reason="JupyterLab browser test: set NGINX_SIZING_LAB_TEST=1",
)
RUN_TIMEOUT_S = 1200  # explore_reference fits 13 series: minutes on a busy 2-core machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    chromium_paths()
    root = tmp_path_factory.mktemp("lab")
    work = root / "notebooks"
    shutil.copytree(NOTEBOOKS_DIR, work)
    settings = root / "settings"
    for ext, name, value in (
        # Every cell in the page, so that every prompt and output can be checked.
        ("@jupyterlab/notebook-extension", "tracker", {"windowingMode": "none"}),
        ("@jupyterlab/apputils-extension", "notification", {"fetchNews": "false"}),
    ):
        (settings / ext).mkdir(parents=True, exist_ok=True)
        (settings / ext / f"{name}.jupyterlab-settings").write_text(json.dumps(value))
    port, token = _free_port(), secrets.token_hex(16)
    log = (root / "lab.log").open("w")
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={work}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={root / 'workspaces'}",
        "--KernelManager.transport=ipc",  # as `make lab`
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"jupyter lab exited: {(root / 'lab.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_for(up, 180, "JupyterLab to answer")
        yield base, token, work
        text = (root / "lab.log").read_text()
        assert "without encryption" not in text and "Traceback" not in text, text[-3000:]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()


def _open_and_run_all(d, base: str, token: str, name: str) -> None:
    from selenium.webdriver.common.by import By

    d.get(f"{base}/lab/tree/{name}.ipynb?token={token}")
    wait_for(
        lambda: d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-CodeCell"),
        180,
        f"{name} to open",
    )
    wait_for(
        lambda: d.execute_script(
            "const e = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
            ".jp-Notebook-ExecutionIndicator');"
            "return e && e.getAttribute('data-status') === 'idle';"
        ),
        240,
        f"{name}'s kernel to be idle",
    )

    def run_all() -> bool:
        menu = [
            e for e in d.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-itemLabel") if e.text == "Run"
        ]
        menu[0].click()
        item = wait_for(
            lambda: d.find_elements(
                By.CSS_SELECTOR, 'li.lm-Menu-item[data-command="runmenu:run-all"]'
            ),
            30,
            "the Run All Cells menu item",
        )
        item[0].click()
        return True

    wait_for(run_all, 60, "Run > Run All Cells")

    def finished() -> bool:
        prompts = d.execute_script(
            "return Array.from(document.querySelectorAll("
            "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt'))"
            ".map(e => e.textContent.trim());"
        )
        status = d.execute_script(
            "const e = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
            ".jp-Notebook-ExecutionIndicator'); return e && e.getAttribute('data-status');"
        )
        return (
            bool(prompts)
            and status == "idle"
            and all(p.startswith("[") and p[1:-2].isdigit() for p in prompts)
        )

    wait_for(finished, RUN_TIMEOUT_S, f"every cell of {name} to run", poll_s=2)


def _errors(d) -> list[str]:
    return d.execute_script(
        "return Array.from(document.querySelectorAll("
        "'.jp-OutputArea-output[data-mime-type=\"application/vnd.jupyter.error\"]'))"
        ".map(e => e.textContent.slice(0, 500));"
    )


def _plot_state(d) -> list[str]:
    return d.execute_script(
        "return Array.from(document.querySelectorAll('.js-plotly-plot'))"
        ".map(e => JSON.stringify((e.data || []).map(t => [t.name, (t.x || []).length])));"
    )


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if n != "explore"])
def test_notebook_runs_in_jupyterlab(lab, name):
    base, token, _ = lab
    with chrome(1400, 1000) as d:
        _open_and_run_all(d, base, token, name)
        assert not _errors(d), _errors(d)
        wait_for(lambda: len(_plot_state(d)) >= 1, 120, f"{name}'s plots to render")


def test_explorer_follows_its_widgets(lab):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base, token, _ = lab
    artifacts = Path(os.environ.get("NGINX_SIZING_ARTIFACTS", Path.cwd() / "test-artifacts"))
    with chrome(1400, 1000) as d:
        _open_and_run_all(d, base, token, "explore")
        assert not _errors(d), _errors(d)

        def table() -> str:
            return d.execute_script(
                "const t = document.querySelector('.jp-OutputArea table.ns-table');"
                "return t ? t.innerText : '';"
            )

        before_table = wait_for(table, 120, "the explorer's table")
        before_plots = wait_for(lambda: _plot_state(d), 120, "the explorer's charts")
        assert "gcp" in before_table
        provider = next(
            s for s in d.find_elements(By.CSS_SELECTOR, ".widget-dropdown") if "provider" in s.text
        )
        Select(provider.find_element(By.TAG_NAME, "select")).select_by_visible_text("aws")
        wait_for(lambda: table() and table() != before_table, 120, "the table to follow")
        wait_for(lambda: _plot_state(d) and _plot_state(d) != before_plots, 120, "the charts")
        after = table()
        assert "aws" in after and "gcp" not in after
        assert not any("gcp" in p for p in _plot_state(d))
        assert not _errors(d), _errors(d)
        artifacts.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(artifacts / "explorer.png"))
