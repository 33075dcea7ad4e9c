"""JupyterLab in a real Chromium: every notebook runs, and the explorer follows its widgets.

The test starts one JupyterLab on 127.0.0.1 with a token, over copies of the notebooks in a
temporary folder (the stored notebooks stay without outputs), and drives Debian's chromium
through chromedriver. Each notebook opens in a workspace of its own (so the lab restores no
notebook of an earlier test, and Run All acts on this one), and its kernel is shut down before
the next notebook opens: one kernel at a time.

While the cells run, every poll checks what can go wrong and fails at once, naming the
notebook and the cell, with the tail of the server's log: an error output, a kernel that died
or restarts (its process gone or replaced, the server's ``execution_state``, the lab's kernel
status, a dialog), or nothing progressing (no prompt, output or kernel CPU time changed) for
``STALL_S``. The overall limits are generous: the machine may be busy.

Opt out (a machine without chromium): ``make test PYTEST_ARGS=--ignore=tests/test_lab.py``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from sizing.paths import NOTEBOOKS_DIR
from tests.browser import ARTIFACTS, chrome, chromium_paths, wait_for
from tests.explorer_layout import check_explorer_fits

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted(p.stem for p in NOTEBOOKS_DIR.glob("*.ipynb"))
RUN_TIMEOUT_S = 1200  # explore_reference fits 13 series: minutes on a busy 2-core machine
STALL_S = 240  # no prompt, output or kernel CPU time changed for this long: stuck
#: Kernel states, in the server's API or the lab's status indicator, that mean the kernel died
#: or is being restarted (nothing in this test restarts a kernel on purpose).
DEAD_STATES = frozenset({"dead", "restarting", "autorestarting", "terminating"})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    """The JupyterLab server this module started: its address, token and log."""

    base: str
    token: str
    work: Path
    log: Path
    runtime: Path

    def api(self, path: str, method: str = "GET") -> Any:
        """The server's REST API (JSON), authenticated with the token."""
        req = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def kernel_of(self, name: str) -> dict[str, Any] | None:
        """The kernel model (``id``, ``execution_state``) of the session on ``name``.ipynb."""
        for s in self.api("/api/sessions"):
            if s.get("path") == f"{name}.ipynb" and s.get("kernel"):
                return dict(s["kernel"])
        return None

    def shutdown_kernels(self) -> None:
        """Shut down every session's kernel, so that the next notebook runs alone."""
        for s in self.api("/api/sessions"):
            self.api(f"/api/sessions/{s['id']}", method="DELETE")

    def kernel_process(self, kernel_id: str) -> tuple[int, int] | None:
        """(pid, CPU clock ticks used) of the kernel's process, None when there is none.

        The kernel's command line names its connection file, in this server's private
        runtime folder.
        """
        needle = str(self.runtime / f"kernel-{kernel_id}.json").encode()
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                if needle not in (d / "cmdline").read_bytes():
                    continue
                fields = (d / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if fields[0] != "Z":
                return int(d.name), int(fields[11]) + int(fields[12])  # utime + stime
        return None


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Lab]:
    chromium_paths()
    root = tmp_path_factory.mktemp("lab")
    work = root / "notebooks"
    work.mkdir()
    for notebook in NOTEBOOKS_DIR.glob("*.ipynb"):  # the notebooks alone, nothing run beside
        shutil.copy2(notebook, work)
    settings = root / "settings"
    for ext, name, value in (
        # Every cell in the page, so that every prompt and output can be checked.
        ("@jupyterlab/notebook-extension", "tracker", {"windowingMode": "none"}),
        ("@jupyterlab/apputils-extension", "notification", {"fetchNews": "false"}),
    ):
        (settings / ext).mkdir(parents=True, exist_ok=True)
        (settings / ext / f"{name}.jupyterlab-settings").write_text(json.dumps(value))
    runtime = root / "runtime"
    port, token = _free_port(), secrets.token_hex(16)
    log_path = root / "lab.log"
    log = log_path.open("w")
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
        "--LabApp.expose_app_in_browser=True",  # the test reads cells and kernel status
        # A kernel that dies stays dead: the run fails on it, and no restarted kernel is
        # killed half-started by the next shutdown (its traceback would land in the log).
        "--KernelManager.autorestart=False",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime))
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work, env=env)
    server = Lab(f"http://127.0.0.1:{port}", token, work, log_path, runtime)

    def up() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"jupyter lab exited: {server.log_tail()}")
        try:
            return server.api("/api/status") is not None
        except OSError:
            return False

    try:
        wait_for(up, 180, "JupyterLab to answer")
        yield server
        text = log_path.read_text()
        assert "without encryption" not in text and "Traceback" not in text, text[-3000:]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()


#: The lab's own view of one notebook (``window.jupyterapp``, exposed by the test's server):
#: which notebooks are open and in front, the kernel's status as the lab shows it, a dialog,
#: and per code cell its execution count, first source line and first error output. The DOM
#: cannot tell an error from a warning: JupyterLab renders both as stderr.
_STATE_JS = """
const app = window.jupyterapp;
if (!app) return null;
const panels = Array.from(app.shell.widgets('main')).filter(
  w => w.content && w.sessionContext && w.context);
const panel = panels.find(w => w.context.path === arguments[0]);
const current = app.shell.currentWidget;
const dialog = document.querySelector('.jp-Dialog');
const state = {
  panels: panels.map(w => w.context.path),
  current: current && current.context ? current.context.path : null,
  dialog: dialog ? dialog.innerText.slice(0, 400) : null,
  status: null, kernel: null, cells: []};
if (!panel) return state;
const sc = panel.sessionContext;
state.status = sc.kernelDisplayStatus;
state.kernel = sc.session && sc.session.kernel ? sc.session.kernel.id : null;
state.cells = panel.content.widgets.map((c, i) => {
  if (c.model.type !== 'code') return null;
  const outs = c.model.outputs.toJSON();
  const err = outs.find(o => o.output_type === 'error');
  return {index: i, count: c.model.executionCount,
          source: c.model.sharedModel.getSource().split('\\n')[0].slice(0, 80),
          outputs: outs.length,
          error: err ? (err.ename + ': ' + err.evalue + '\\n' + (err.traceback || []).join('\\n')
                        .replace(/\\u001b\\[[0-9;]*m/g, '')).slice(0, 1500) : null};
}).filter(c => c);
return state;
"""


class _Watch:
    """Polls one notebook's page and kernel; fails at the first sign of trouble."""

    def __init__(self, d: Any, lab: Lab, name: str) -> None:
        self.d, self.lab, self.name = d, lab, name
        self.kernel_id: str | None = None
        self.pid: int | None = None

    def fail(self, why: str) -> NoReturn:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"lab-{self.name}-failure.png"
        try:
            self.d.save_screenshot(str(shot))
        except Exception:  # the browser may be gone too; the message matters more
            pass
        pytest.fail(
            f"{self.name}.ipynb: {why}\n(screenshot: {shot})\n"
            f"--- JupyterLab server log (tail) ---\n{self.lab.log_tail()}",
            pytrace=False,
        )

    def state(self) -> dict[str, Any]:
        state = self.d.execute_script(_STATE_JS, f"{self.name}.ipynb")
        if state is None:
            self.fail("window.jupyterapp is missing (the server exposes it to this test)")
        return dict(state)

    def finished(self) -> bool:
        """Every code cell ran (has an execution count) and the kernel is idle."""
        state = self.state()
        cells = state["cells"]
        return bool(cells) and state["status"] == "idle" and all(c["count"] for c in cells)

    def check(self) -> tuple[Any, ...]:
        """Fail on an error output, a dead kernel, a dialog or another notebook in front;
        return a snapshot whose change means progress."""
        state = self.state()
        for c in state["cells"]:
            if c["error"] is not None:
                self.fail(f"cell {c['index']} ({c['source']!r}) failed:\n{c['error']}")
        if state["panels"] and state["panels"] != [f"{self.name}.ipynb"]:
            self.fail(f"other notebooks are open: {state['panels']}")
        if state["current"] not in (None, f"{self.name}.ipynb"):
            self.fail(f"{state['current']} is in front")
        if state["dialog"]:
            self.fail(f"the lab shows a dialog: {state['dialog']!r}")
        if state["status"] in DEAD_STATES:
            self.fail(f"the lab's kernel status is {state['status']!r} (the kernel died)")
        kernel = self.lab.kernel_of(self.name)
        busy_ticks = None
        if kernel is not None:
            if self.kernel_id not in (None, kernel["id"]):
                self.fail(f"the kernel changed from {self.kernel_id} to {kernel['id']}")
            self.kernel_id = kernel["id"]
            if kernel.get("execution_state") in DEAD_STATES:
                self.fail(f"the server says the kernel is {kernel['execution_state']!r}")
            proc = self.lab.kernel_process(kernel["id"])
            if proc is None:
                if kernel.get("execution_state") != "starting":
                    self.fail(f"the kernel's process is gone ({kernel})")
            else:
                if self.pid not in (None, proc[0]):
                    self.fail(f"the kernel's process was replaced ({self.pid} -> {proc[0]})")
                self.pid = proc[0]
                # CPU time counts as progress only while the kernel works on a request (an
                # idle kernel's event loop uses a little CPU too).
                if kernel.get("execution_state") == "busy":
                    busy_ticks = proc[1]
        cells = tuple((c["count"], c["outputs"]) for c in state["cells"])
        return (cells, state["status"], busy_ticks)

    def until(self, done: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Poll ``done`` while checking the page and kernel, within ``timeout_s`` overall and
        ``STALL_S`` without any progress."""
        from selenium.common.exceptions import TimeoutException

        start = last_change = time.monotonic()
        last: tuple[Any, ...] | None = None
        while True:
            try:
                snapshot = self.check()
                if done():
                    return
            except TimeoutException:  # the page's main thread is busy: no answer this poll
                snapshot = last if last is not None else ()
            now = time.monotonic()
            if snapshot != last:
                last, last_change = snapshot, now
            elif now - last_change > STALL_S:
                waiting = [c for c in self.state()["cells"] if not c["count"]]
                where = (
                    f"cell {waiting[0]['index']} ({waiting[0]['source']!r}) has not run"
                    if waiting
                    else "every cell ran"
                )
                self.fail(
                    f"nothing progressed for {STALL_S} s waiting for {what}; {where}, "
                    f"kernel status {snapshot[1]!r}"
                )
            if now - start > timeout_s:
                self.fail(f"timed out after {timeout_s:g} s waiting for {what}")
            time.sleep(2)


def _open_and_run_all(d: Any, lab: Lab, name: str) -> _Watch:
    from selenium.webdriver.common.by import By

    # A workspace of its own: the lab restores no other notebook into this page, so Run All
    # acts on this notebook (with the default workspace, the notebook of the previous test
    # came back in front and ran again while this one waited).
    d.set_script_timeout(120)  # a busy machine may keep the page's main thread long
    d.get(f"{lab.base}/lab/workspaces/t-{name}/tree/{name}.ipynb?reset&token={lab.token}")
    watch = _Watch(d, lab, name)
    wait_for(
        lambda: (
            d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-CodeCell")
            and watch.state()["cells"]
        ),
        180,
        f"{name} to open",
    )
    watch.until(lambda: watch.state()["status"] == "idle", 240, f"{name}'s kernel to be idle")

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

    watch.check()  # this notebook alone, in front
    wait_for(run_all, 60, "Run > Run All Cells")
    watch.until(watch.finished, RUN_TIMEOUT_S, f"every cell of {name} to run")
    return watch


def _plot_state(d: Any) -> list[str]:
    return list(
        d.execute_script(
            "return Array.from(document.querySelectorAll('.js-plotly-plot'))"
            ".map(e => JSON.stringify((e.data || []).map(t => [t.name, (t.x || []).length])));"
        )
    )


@pytest.fixture
def one_kernel(lab: Lab) -> Iterator[Lab]:
    """The lab, with every kernel shut down after the test: one notebook's kernel at a time."""
    yield lab
    lab.shutdown_kernels()


#: Each figure's box in the page, its title, and whether MathJax typeset anything in outputs.
_FIGURES_JS = """
return Array.from(document.querySelectorAll('.jp-OutputArea .js-plotly-plot')).map(e => {
  const r = e.getBoundingClientRect();
  const t = e.querySelector('.gtitle');
  return {width: r.width, height: r.height, title: t ? t.textContent : '',
          svgs: e.querySelectorAll('.main-svg').length};
});
"""


def _check_outputs_read_as_text(d: Any, name: str) -> None:
    """Figures drawn at a readable size, no warning boxes, dollars not typeset as LaTeX."""
    from selenium.webdriver.common.by import By

    figures = d.execute_script(_FIGURES_JS)
    assert figures, f"{name}: no figure"
    for f in figures:
        assert f["svgs"] >= 1 and f["width"] >= 400 and f["height"] >= 200, (name, f)
    typeset = d.find_elements(
        By.CSS_SELECTOR, ".jp-OutputArea mjx-container, .jp-OutputArea .MathJax"
    )
    assert not typeset, f"{name}: MathJax typeset {len(typeset)} output(s)"
    stderr = d.find_elements(
        By.CSS_SELECTOR, '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
    )
    assert not stderr, f"{name}: {stderr[0].text[:300]}"
    # A screenshot of every figure, each a real picture (not a blank box).
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for i, e in enumerate(d.find_elements(By.CSS_SELECTOR, ".jp-OutputArea .js-plotly-plot")):
        d.execute_script("arguments[0].scrollIntoView({block: 'center'});", e)
        png = e.screenshot_as_png
        (ARTIFACTS / f"lab-{name}-figure-{i + 1}.png").write_bytes(png)
        assert len(png) > 8_000, (name, i, len(png))


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if n != "explore"])
def test_notebook_runs_in_jupyterlab(one_kernel, name):
    with chrome(1400, 1000) as d:
        watch = _open_and_run_all(d, one_kernel, name)
        wait_for(lambda: len(_plot_state(d)) >= 1, 120, f"{name}'s plots to render")
        watch.check()
        _check_outputs_read_as_text(d, name)
        if name == "sizing_report":
            decision = str(
                d.execute_script("return document.querySelector('#decision-summary').innerText")
            )
            # "$786 instances + $171,415 egress; $1.08/hour": dollars, not MathJax italics
            # ("786 instances + 171,415 egress").
            assert re.search(r"\$[\d,]+/month in all", decision), decision
            split = r"\$[\d,]+ instances \+ \$[\d,]+ egress; \$\d+\.\d\d/hour"
            assert re.search(split, decision), decision
            assert re.search(r"\(\$\d+\.\d\d/h\)", decision), decision
            table = str(
                d.execute_script("return document.querySelector('#T_options-table').innerText")
            )
            assert "$/hour" in table and re.search(r"\$\d+\.\d\d", table), table[:400]


def test_explorer_follows_its_widgets(one_kernel):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    with chrome(1400, 1000) as d:
        watch = _open_and_run_all(d, one_kernel, "explore")

        def table() -> str:
            return str(
                d.execute_script(
                    "const t = document.querySelector('.jp-OutputArea table.ns-table');"
                    "return t ? t.innerText : '';"
                )
            )

        before_table = wait_for(table, 120, "the explorer's table")
        before_plots = wait_for(lambda: _plot_state(d), 120, "the explorer's charts")
        # With egress priced, AWS's cheaper tier puts AWS first by default: pick GCP alone.
        assert "aws" in before_table
        provider = next(
            s for s in d.find_elements(By.CSS_SELECTOR, ".widget-dropdown") if "provider" in s.text
        )
        Select(provider.find_element(By.TAG_NAME, "select")).select_by_visible_text("gcp")
        watch.until(lambda: bool(table()) and table() != before_table, 120, "the table to follow")
        watch.until(
            lambda: bool(_plot_state(d)) and _plot_state(d) != before_plots, 120, "the charts"
        )
        after = table()
        assert "gcp" in after and "aws" not in after
        assert not any("aws" in p for p in _plot_state(d))
        watch.check()
        widget = str(d.execute_script("return document.querySelector('.jp-OutputArea').innerText"))
        assert not re.search(r"\bupdate \d+", widget), "a debug counter is shown"
        # The capacity chart shows the families picked in the list (the cheapest by default).
        families = wait_for(
            lambda: d.find_elements(By.CSS_SELECTOR, ".widget-select-multiple select"),
            60,
            "the families list",
        )[0]
        picked = Select(families).all_selected_options
        assert picked and len(Select(families).options) > len(picked)
        last = Select(families).options[-1].text
        assert not any(f'"{last}"' in p for p in _plot_state(d))
        Select(families).deselect_all()
        Select(families).select_by_index(len(Select(families).options) - 1)
        watch.until(
            lambda: any(f'"{last}"' in p for p in _plot_state(d)),
            120,
            f"the chart to follow the list ({last})",
        )
        _check_outputs_read_as_text(d, "explore")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(ARTIFACTS / "explorer.png"))
        # The same explorer fits the screen at 1280-1920 px, answered or not, and recovers.
        check_explorer_fits(d, watch)


def _write_notebook(path: Path, cells: list[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "nginx-sizing",
        "display_name": "Python (nginx-sizing)",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


@pytest.mark.parametrize(
    ("case", "cells", "signs"),
    [
        ("error", ["x = 1", "1 / 0", "y = 2"], ("cell 1 ('1 / 0') failed",)),
        (
            "dead_kernel",
            ["x = 1", "import os\nos._exit(1)", "y = 2"],
            ("died", "dialog", "replaced", "gone", "kernel status", "server says"),
        ),
    ],
)
def test_a_broken_notebook_fails_at_once(one_kernel, case, cells, signs):
    """An error output or a dying kernel fails the run with the notebook and the reason,
    not after the stall or the overall limit."""
    name = f"broken_{case}"
    _write_notebook(one_kernel.work / f"{name}.ipynb", cells)
    with chrome(1400, 1000) as d, pytest.raises(pytest.fail.Exception) as failed:
        _open_and_run_all(d, one_kernel, name)
    message = str(failed.value)
    first = message.splitlines()[0]
    print(f"\n{case}: {first}")  # with -s: what the failure says
    assert first.startswith(f"{name}.ipynb: ") and "nothing progressed" not in first, message
    assert "timed out" not in first, message
    assert any(s in message for s in signs), message
    assert case != "error" or "ZeroDivisionError" in message, message
    assert "JupyterLab server log (tail)" in message
