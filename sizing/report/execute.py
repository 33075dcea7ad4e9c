"""Batch reports: execute a parameterised notebook with papermill, then render HTML.

The kernel's own log goes to ``<notebook>.kernel.log`` beside the executed notebook (removed
when the kernel wrote nothing). The HTML page is self-contained: the notebooks draw with
plotly's ``notebook`` renderer, which embeds plotly.js in the first figure's output, and the
page links nothing outside itself. Code cells are left out unless asked for. A failing cell
fails the report with that cell's error, and no HTML page is written.

The PDF is laid out for paper (`PRINT_CSS`): A4 landscape, wide tables in smaller type with
nothing scrolled away, the charts drawn at the printable width (Chromium opens the page at
that width before printing, so plotly sizes each chart to the paper), no chart toolbars, each
heading kept with what follows it, no table or chart split across pages, page numbers.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from html import escape
from pathlib import Path
from typing import Any

from sizing.errors import Infeasible, InputError, ReportError
from sizing.paths import KERNEL_NAME, NOTEBOOKS_DIR
from sizing.report.render import clean, clean_page
from sizing.units import parse_rps
from trialtable.files import check_output, write_atomic

__all__ = [
    "ReportError",
    "build_report",
    "coerce_parameters",
    "execute",
    "notebook_parameters",
    "print_page",
    "to_html",
    "to_pdf",
]


# Scripts the HTML template links from CDNs (require.js, MathJax): the report needs neither.
_REMOTE_SCRIPT = re.compile(r'<script[^>]*\ssrc="https?://[^"]*"[^>]*>\s*</script>\s*', re.I)

#: The printed page: A4 landscape with these margins [mm] (top, right, bottom, left).
PAGE_MM = (297.0, 210.0)
MARGIN_MM = (10.0, 10.0, 14.0, 10.0)
_CSS_PX_PER_MM = 96 / 25.4
#: Width of the printable area in CSS pixels (about 1,047): the width charts are drawn at.
PRINT_WIDTH_PX = int((PAGE_MM[0] - MARGIN_MM[1] - MARGIN_MM[3]) * _CSS_PX_PER_MM)
#: Height of the printable area in CSS pixels (about 703): no chart may be taller.
PRINT_HEIGHT_PX = int((PAGE_MM[1] - MARGIN_MM[0] - MARGIN_MM[2]) * _CSS_PX_PER_MM)

_PAGE_CSS = (
    f"@page {{ size: {PAGE_MM[0]:g}mm {PAGE_MM[1]:g}mm; "
    f"margin: {' '.join(f'{m:g}mm' for m in MARGIN_MM)}; "
    '@bottom-right { content: "page " counter(page) " of " counter(pages); '
    "font: 9pt system-ui, sans-serif; color: #555; } }"
)

#: The layout for paper, applied when the page is printed (and always in the copy Chromium
#: prints, so that plotly draws the charts at the printable width).
PRINT_CSS = """
body, .jp-Notebook, .jp-Cell, .jp-OutputArea, .jp-OutputArea-child, .jp-OutputArea-output,
.jp-RenderedHTMLCommon { overflow: visible !important; }
body { margin: 0 !important; padding: 0 !important; }
.jp-Notebook, main { padding: 0 !important; margin: 0 !important; }
.jp-Cell { padding: 0 !important; }
.jp-OutputArea-output, .jp-RenderedHTMLCommon { padding-right: 0 !important; }
.jp-OutputArea-output table, table.ns-table { font-size: 10.5px !important; }
.jp-OutputArea-output table td, .jp-OutputArea-output table th { padding: 2px 5px !important; }
.modebar, .modebar-container { display: none !important; }
h1, h2, h3, h4, .jp-MarkdownCell { break-after: avoid; page-break-after: avoid; }
table, tr, .js-plotly-plot, .plotly-graph-div, .ns-card, .jp-OutputArea-child,
.ns-appendix ul, .ns-appendix table { break-inside: avoid; page-break-inside: avoid; }
.ns-first { max-width: none !important; }
.jp-OutputArea-child:has(.ns-first) { break-inside: auto; page-break-inside: auto; }
.ns-first .ns-card { break-inside: avoid; page-break-inside: avoid; }
#T_options-table, .jp-OutputArea-child:has(#T_options-table) {
  break-inside: auto; page-break-inside: auto; }
#T_options-table thead { display: table-header-group; }
.ns-text { font-size: 10.5px !important; }
.jp-Cell:not(:has(h1, h2, h3, h4, p, pre, table, dl, ul, img, svg, .plotly-graph-div)) {
  display: none !important; }
"""


def notebook_parameters(notebook: str) -> dict[str, object]:
    """The names and default values of a notebook's ``parameters`` cell.

    Raises
    ------
    InputError
        When the notebook does not exist.
    """
    import nbformat  # the Jupyter stack loads only when a notebook is read or run

    src = NOTEBOOKS_DIR / f"{notebook}.ipynb"
    if not src.is_file():
        raise InputError(f"no notebook {notebook!r} in {NOTEBOOKS_DIR}")
    nb = nbformat.read(str(src), as_version=4)
    out: dict[str, object] = {}
    for cell in nb.cells:
        if "parameters" in cell.metadata.get("tags", []):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        out[target.id] = ast.literal_eval(node.value)
    return out


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}
_KINDS = {"bool": "true or false", "int": "an integer", "float": "a number"}


def coerce_parameters(notebook: str, given: Mapping[str, object]) -> dict[str, object]:
    """Check parameter names against the notebook and give text values the default's type.

    A name that is not in the notebook's ``parameters`` cell is refused (names become code in
    the injected cell; values stay data: strings are quoted by papermill). Text given for a
    number, a flag or a list becomes one.

    Raises
    ------
    InputError
        For an unknown name (the message lists the valid ones) or a value of the wrong type.
    """
    defaults = notebook_parameters(notebook)
    out: dict[str, object] = {}
    for name, value in given.items():
        if name not in defaults:
            raise InputError(
                f"{name!r} is not a parameter of {notebook}; valid: {', '.join(sorted(defaults))}"
            )
        default = defaults[name]
        if not isinstance(value, str) or isinstance(default, str):
            out[name] = value
            continue
        try:
            if isinstance(default, bool):
                low = value.strip().lower()
                if low not in _TRUE | _FALSE:
                    raise ValueError(value)
                out[name] = low in _TRUE
            elif isinstance(default, int):
                out[name] = int(value)
            elif isinstance(default, float):
                out[name] = parse_rps(value) if name == "rps" else float(value)
            elif isinstance(default, list):
                out[name] = [value] if value else []
            else:
                out[name] = value
        except argparse.ArgumentTypeError as exc:
            raise InputError(f"parameter {name}: {exc}") from None
        except (ValueError, TypeError):
            kind = _KINDS.get(type(default).__name__, f"a {type(default).__name__}")
            raise InputError(f"parameter {name}: {value!r} is not {kind}") from None
    return out


def execute(
    notebook: str,
    parameters: Mapping[str, object],
    out_ipynb: str | Path,
    *,
    kernel: str = KERNEL_NAME,
    progress: bool = False,
) -> Path:
    """Run ``notebooks/<notebook>.ipynb`` with ``parameters`` into ``out_ipynb``.

    With ``progress``, this process's stderr gets a progress bar with an ETA per cell; the
    kernel's own stderr goes to ``<out>.kernel.log``.
    """
    import papermill as pm  # Jupyter: seconds of imports, only when a report runs
    from jupyter_client.kernelspec import NoSuchKernel

    src = NOTEBOOKS_DIR / f"{notebook}.ipynb"
    if not src.is_file():
        raise InputError(f"no notebook {notebook!r} in {NOTEBOOKS_DIR}")
    out = Path(out_ipynb)
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.with_suffix(".kernel.log")
    bar: Any = False
    console = None
    if progress:
        sys.stderr.flush()
        console = os.fdopen(os.dup(2), "w", buffering=1)
        bar = {"file": console, "desc": f"{notebook}", "unit": "cell", "leave": False}
    try:
        with _stderr_to(log), contextlib.ExitStack() as stack:
            if console is not None:
                stack.callback(console.close)
            sockets = stack.enter_context(tempfile.TemporaryDirectory(prefix="nginx-sizing-"))
            # papermill writes into a private folder; the result reaches `out` by
            # `write_atomic` (never through a link at that name), a failed run's notebook too.
            private = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nginx-sizing-")))
            stack.callback(_publish, private / out.name, out)
            pm.execute_notebook(
                str(src),
                str(private / out.name),
                parameters=dict(parameters),
                kernel_name=kernel,
                progress_bar=bar,
                cwd=str(NOTEBOOKS_DIR),
                log_output=False,
                kernel_manager_class=_ipc_kernel_manager(Path(sockets)),
            )
    except pm.PapermillExecutionError as exc:
        if exc.ename == "InputError":
            raise InputError(exc.evalue) from None
        if exc.ename == "Infeasible":
            raise Infeasible(exc.evalue) from None
        raise ReportError(
            f"{notebook} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}"
        ) from None
    except NoSuchKernel:
        raise InputError(
            f"the Jupyter kernel {kernel!r} is not registered; run `make demo` (or "
            f"python -m ipykernel install --sys-prefix --name {kernel})"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            if log.stat().st_size == 0:
                log.unlink()
    return out


def _ipc_kernel_manager(socket_dir: Path) -> type:
    """A kernel manager whose kernels talk over Unix sockets in ``socket_dir``.

    No TCP port is opened for a batch report, and ipykernel's "running over TCP without
    encryption" warning has no reason to be printed. The sockets go in a private folder of
    their own: jupyter_client's default, ``kernel-ipc-N`` in the working folder (the
    notebooks' folder), would leave sockets among the notebooks while a report runs, and
    Jupyter's runtime folder may lie deeper than the 107 characters a socket's path may have.
    """
    from jupyter_client.manager import AsyncKernelManager  # Jupyter: only to run a report
    from traitlets import CaselessStrEnum, default

    class IPCKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        @default("ip")
        def _ip_in_socket_dir(self) -> str:
            return str(socket_dir / "kernel-ipc")

    return IPCKernelManager


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Send this process's file descriptor 2 (inherited by the kernel) to ``path``."""
    sys.stderr.flush()
    # The tool's own log: never through a link, pipe or device planted at its name.
    target = check_output(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags | os.O_CLOEXEC, 0o644)
    saved = os.dup(2)
    with os.fdopen(fd, "w") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def to_html(ipynb: str | Path, html: str | Path, *, show_code: bool = False) -> Path:
    """Render an executed notebook as one self-contained HTML page."""
    import nbformat  # Jupyter: only to render a report
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(ipynb), as_version=4)
    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=not show_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(nb)
    body = clean_page(_REMOTE_SCRIPT.sub("", body))  # a hostile value's controls as text
    body = _with_style(body, f"{_PAGE_CSS}\n@media print {{{PRINT_CSS}}}")
    return write_atomic(html, body, inputs=[ipynb])


def no_answer_page(parameters: Mapping[str, object], reason: str, html: str | Path) -> Path:
    """A one-page report for a request with no answer: why, what to loosen, the request.

    Parameters
    ----------
    parameters : mapping
        The report's parameters as checked (`coerce_parameters`).
    reason : str
        The one line that says why no fleet meets the request.
    html : path
        Where the page is written.
    """
    given = "; ".join(f"{k} {v}" for k, v in parameters.items() if v not in (None, "", [], ()))
    body = f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>Sizing: no answer</title>
<style>body{{font-family:system-ui,sans-serif;font-size:13px;margin:16px}}
th{{text-align:left;padding:2px 12px 2px 0;font-weight:600}}td{{padding:2px 0}}
.ns-none{{border:2px solid #c00;border-radius:8px;padding:10px 14px;background:#fde2e1;
font-size:16px;font-weight:700;max-width:900px}}</style></head><body>
<h1 style="font-size:22px">Sizing: no answer</h1>
<div class="ns-none" id="no-answer">{escape(clean(reason))}</div>
<p>No fleet of the selected instance types meets this request. What moves it: a looser p99
SLA (--sla-p99), a lower target (--rps), less headroom (--headroom), more instances
(--max-count), or more of the catalog (--region all, --provider, --family,
--all-families).</p>
<p id="inputs"><b>The request:</b> {escape(clean(given))}</p>
</body></html>"""
    return write_atomic(html, _with_style(body, f"{_PAGE_CSS}\n@media print {{{PRINT_CSS}}}"))


def print_page(page: str) -> str:
    """The HTML ``page`` laid out for paper on any medium (the copy Chromium prints)."""
    return _with_style(page, PRINT_CSS)


def _with_style(page: str, css: str) -> str:
    """``page`` with a style sheet added at the end of its head (or at its start)."""
    tag = f'<style id="ns-print">{css}</style>'
    at = page.find("</head>")
    return page[:at] + tag + page[at:] if at >= 0 else tag + page


def find_chromium() -> str:
    """Path of Debian's ``chromium`` (or ``chromium-browser``); InputError if neither."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise InputError("--pdf needs chromium (Debian: apt-get install chromium)")


def _publish(private: Path, out: Path) -> None:
    """Copy a file made in a private folder to ``out`` atomically (nothing when none was made)."""
    if private.is_file():
        write_atomic(out, private.read_bytes())


def to_pdf(html: str | Path, pdf: str | Path, *, timeout_s: float = 180.0) -> Path:
    """Print an HTML page to PDF with headless Chromium (charts rendered first).

    Raises
    ------
    ReportError
        When Chromium fails or writes nothing.
    """
    out = check_output(Path(pdf).absolute())
    # A copy laid out for paper on screen too: its scripts (plotly) run at the printable width.
    page = Path(html).read_text(encoding="utf-8")
    fd, name = tempfile.mkstemp(prefix=".print-", suffix=".html", dir=Path(html).parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(print_page(page))
    try:
        # Chromium prints into a private folder; the PDF reaches `out` by `write_atomic`.
        with tempfile.TemporaryDirectory(prefix="nginx-sizing-") as private:
            printed = _print(Path(name), Path(private) / out.name, timeout_s)
            return write_atomic(out, printed.read_bytes())
    finally:
        Path(name).unlink(missing_ok=True)


def _print(html: Path, out: Path, timeout_s: float) -> Path:
    cmd = [
        find_chromium(),
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--virtual-time-budget=20000",
        f"--window-size={PRINT_WIDTH_PX},{PRINT_HEIGHT_PX}",
        "--no-pdf-header-footer",
        f"--print-to-pdf={out}",
        html.absolute().as_uri(),
    ]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ReportError(f"chromium did not print {out} within {timeout_s:g} s") from None
    if p.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        last = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise ReportError(f"chromium could not print {out}: {last}")
    return out


def build_report(
    parameters: Mapping[str, object],
    out_dir: str | Path,
    *,
    notebook: str = "sizing_report",
    show_code: bool = False,
    kernel: str = KERNEL_NAME,
    pdf: bool = False,
    progress: bool = False,
) -> tuple[Path, Path]:
    """Execute ``notebook`` with ``parameters`` and write ``<notebook>.ipynb`` and ``.html``.

    Parameters
    ----------
    parameters : mapping
        Values for the notebook's ``parameters`` cell.
    out_dir : path
        Folder for the executed notebook and the HTML page.
    notebook : str
        Notebook name under ``notebooks/``.
    show_code : bool
        Keep the code cells in the HTML page.
    kernel : str
        Jupyter kernel to run (the project's by default).
    pdf : bool
        Also print ``<notebook>.pdf`` with headless Chromium.
    progress : bool
        Show a progress bar with an ETA on stderr.

    A request no fleet meets gets a one-page report that says why (`no_answer_page`).

    Raises
    ------
    InputError
        A bad parameter (the notebook raised `InputError`) or a missing kernel.
    ReportError
        Any other failing cell; no HTML page is written.
    """
    params = coerce_parameters(notebook, parameters)
    if pdf:
        find_chromium()
    out = Path(out_dir)
    html = out / f"{notebook}.html"
    html.unlink(missing_ok=True)
    (out / f"{notebook}.pdf").unlink(missing_ok=True)
    started = time.monotonic()
    try:
        ipynb = execute(
            notebook, params, out / f"{notebook}.ipynb", kernel=kernel, progress=progress
        )
    except Infeasible as exc:
        # No answer is an answer: one page that says why and what to loosen.
        page = no_answer_page(params, str(exc), html)
        if pdf:
            to_pdf(page, out / f"{notebook}.pdf")
        return out / f"{notebook}.ipynb", page
    page = to_html(ipynb, html, show_code=show_code)
    if pdf:
        to_pdf(page, out / f"{notebook}.pdf")
    if progress:
        print(f"report: done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return ipynb, page
