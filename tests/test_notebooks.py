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
from sizing.report.execute import to_html
from tests.conftest import sizing_cli

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("NGINX_SIZING_ARTIFACTS", ROOT / "test-artifacts"))
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
EXPECTED = {
    "explore",
    "explore_reference",
    "sweep",
    "fit_runs",
    "sizing_report",
    "price_performance",
    "clients",
}


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
    p = sizing_cli("report", "--rps", "1M", "--sla-p99", "5ms", "--pdf", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(out / f"sizing_report.{x}") for x in ("ipynb", "html", "pdf")]
    log = out / "sizing_report.kernel.log"
    assert not log.exists() or log.stat().st_size > 0, "an empty kernel log left beside"
    assert not list(out.glob(".print-*")), "the print copy is removed"
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
def test_report_pdf_is_printed(default_report):
    pdf = default_report[1].with_suffix(".pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and len(data) > 50_000
    assert data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 2


def _pdf_pages(pdf: Path) -> list[str]:
    """The PDF's text, page by page, as ``pdftotext -layout`` lays it out."""
    if shutil.which("pdftotext") is None:
        pytest.fail("pdftotext is needed (Debian: poppler-utils; make test installs it)")
    p = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.split("\f")[:-1]


def _options_headers(html: Path) -> list[str]:
    head = html.read_text().split('id="T_options-table"')[1].split("</thead>")[0]
    return [
        re.sub(r"<[^>]+>", "", h).replace("&amp;", "&").strip()
        for h in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)
    ]


@pytest.mark.slow
def test_report_pdf_opens_on_the_decision_with_every_column(default_report):
    """Page 1 of the PDF has the decision, what it rests on and every options column."""
    _, html = default_report
    pages = _pdf_pages(html.with_suffix(".pdf"))
    page1 = " ".join(pages[0].split())
    buy = re.search(r'<div class="ns-buy">(\d+) (?:&times;|×) ([^<]+)</div>', html.read_text())
    assert buy, "the decision's headline is in the page"
    assert f"{buy[1]} × {buy[2]}" in page1, page1[:600]
    assert re.search(r"\$[\d,]+/month in all", page1), page1[:600]
    assert re.search(r"\$[\d,]+ instances \+ \$[\d,]+ egress; \$\d+\.\d\d/hour", page1)
    for label in ("Serves", "How sure", "Limit, basis", "Runner-up", "Rests on"):
        assert label in page1, label
    headers = _options_headers(html)
    assert {"Total $/mo", "$/hour", "P(meet)", "Limited by"} <= set(headers), headers
    for header in headers:
        assert header in page1, (header, page1[-1500:])
    # Page numbers on every page; no heading left alone at the foot of a page.
    headings = re.findall(r"<h2[^>]*>(.*?)<a", html.read_text())
    assert len(headings) >= 4, headings
    for n, text in enumerate(pages, start=1):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        assert lines[-1] == f"page {n} of {len(pages)}", lines[-3:]
        above = lines[-2] if len(lines) > 1 else ""
        assert not any(h.strip() and above.startswith(h.strip()) for h in headings), (n, above)


@pytest.mark.slow
def test_report_pdf_figures_and_tables_fit_the_page(default_report, tmp_path):
    """Laid out as Chromium prints it, every chart and table lies within the printable box."""
    from sizing.report.execute import PRINT_HEIGHT_PX, PRINT_WIDTH_PX, print_page
    from tests.browser import chrome, wait_for

    _, html = default_report
    page = tmp_path / "print.html"
    page.write_text(print_page(html.read_text()))
    with chrome(PRINT_WIDTH_PX, PRINT_HEIGHT_PX) as d:
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        d.get(page.as_uri())
        wait_for(
            lambda: d.execute_script("return document.querySelectorAll('.main-svg').length"),
            120,
            "the charts",
        )
        boxes = d.execute_script(
            "return Array.from(document.querySelectorAll("
            "'.js-plotly-plot, table.ns-table, #decision-summary'))"
            ".map(e => [e.className || e.id, e.getBoundingClientRect().toJSON()]);"
        )
        toolbars = d.execute_script(
            "return Array.from(document.querySelectorAll('.modebar-container, .modebar'))"
            ".filter(e => getComputedStyle(e).display !== 'none').length"
        )
        shot = ARTIFACTS / "sizing_report_print.png"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(shot))
    plots = [b for name, b in boxes if "js-plotly-plot" in str(name)]
    assert len(plots) >= 4, boxes
    for name, b in boxes:
        assert b["left"] >= 0 and b["right"] <= PRINT_WIDTH_PX + 1, (name, b)
        assert b["height"] <= PRINT_HEIGHT_PX, (name, b)
    for b in plots:
        assert b["width"] >= 300 and b["height"] >= 200, b  # drawn, not a sliver
    assert toolbars == 0


@pytest.mark.slow
def test_first_screen_is_the_decision(default_report):
    """At 1280x900 the summary, the tornado chart and the readable table are on screen."""
    from tests.browser import chrome, wait_for

    _, html = default_report
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "sizing_report_first_screen.png"
    shot.unlink(missing_ok=True)
    with chrome(1280, 900) as d:
        d.get(html.as_uri())
        wait_for(
            lambda: d.execute_script(
                "return document.querySelectorAll('.ns-side .main-svg .bars .point').length"
            ),
            120,
            "the tornado chart's bars",
        )

        def box(selector):
            return d.execute_script(
                "const e = document.querySelector(arguments[0]);"
                "return e && e.getBoundingClientRect().toJSON();",
                selector,
            )

        summary = box("#decision-summary")
        tornado = box(".ns-side .plotly-graph-div")
        table = box("#T_options-table")
        first_row = box("#T_options-table tbody tr:first-child")
        d.save_screenshot(str(shot))
        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        page_width = d.execute_script("return document.documentElement.scrollWidth")
    for name, b in (("summary", summary), ("tornado", tornado), ("first option", first_row)):
        assert b is not None, name
        assert 0 <= b["top"] and b["bottom"] <= 900 and b["right"] <= 1280, (name, b)
    assert table["top"] < 900 and table["right"] <= 1280, table
    assert tornado["height"] > 150 and summary["height"] > 150
    assert page_width <= 1280, "the widest table must fit in 1280 px"
    assert not errors, errors
    assert shot.stat().st_size > 20_000


@pytest.mark.slow
def test_hostile_catalog_in_a_path_with_a_comma(tmp_path):
    """Catalog strings are data in the HTML; a comma in the catalog's path is just a path."""
    from tests.test_report import HOSTILE, write_catalog

    cat = write_catalog(tmp_path / "prices, mine" / "my,catalog.csv", HOSTILE)
    out = tmp_path / "out"
    p = sizing_cli(
        "report", "--rps", "1e5", "--catalog", str(cat), "--provider", "local", "--out", str(out)
    )
    assert p.returncode == 0, p.stderr
    page = (out / "sizing_report.html").read_text()
    assert "&lt;img src=x onerror" in page
    assert "<img" not in page


@pytest.mark.slow
def test_report_parameter_names_are_refused_and_values_are_data(tmp_path):
    marker = tmp_path / "ran"
    p = sizing_cli(
        "report", "--rps", "1e6", "--out", str(tmp_path), "-p", f"x=open('{marker}','w')#", "1"
    )
    assert p.returncode == 2 and "not a parameter of sizing_report; valid:" in p.stderr
    assert "rps" in p.stderr and not marker.exists()
    value = f'"; open("{marker}", "w") #'
    p = sizing_cli("report", "--rps", "1e6", "--out", str(tmp_path), "-p", "providers", value)
    assert p.returncode == 2 and "unknown provider" in p.stderr, p.stderr
    assert not marker.exists()


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
        (["-p", "top", "abc"], 2, "parameter top: 'abc' is not an integer"),
        (["-p", "nosuch", "1"], 2, "'nosuch' is not a parameter of sizing_report"),
        (["--file-size", "huge"], 2, "is not a size"),
    ],
)
def test_failing_report_fails_with_the_cells_error(tmp_path, args, code, message):
    p = sizing_cli("report", "--rps", "1e6", "--out", str(tmp_path), *args)
    assert p.returncode == code
    assert len(p.stderr.strip().splitlines()) == 1 and message in p.stderr
    assert not (tmp_path / "sizing_report.html").exists()


@pytest.mark.slow
def test_report_takes_several_profiles(tmp_path):
    """Two ``--profile`` reach the notebook as two paths, and the report names both."""
    shipped = sorted((ROOT / "data" / "profiles").glob("*.json"))
    # Two profiles of one platform must agree (the shipped two, of one vCPU on two days,
    # do not): the second is the first filed under another CPU.
    doc = json.loads(shipped[0].read_text())
    doc["cpu_model"] = "Intel(R) Xeon(R) Platinum 8488C"
    doc["host"] = {k: v for k, v in doc["host"].items() if not k.startswith("cpu_")}
    other = tmp_path / "sapphire-rapids.json"
    other.write_text(json.dumps(doc))
    profiles = [shipped[0], other]
    args = [a for p in profiles[:2] for a in ("--profile", str(p))]
    p = sizing_cli("report", "--rps", "1e6", *args, "--out", str(tmp_path), "--quiet")
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "sizing_report.html").read_text()
    for path in profiles[:2]:
        assert path.name in text
