"""Batch reports: execute a parameterised notebook with papermill, then render HTML.

The kernel's own log goes to ``<notebook>.kernel.log`` beside the executed notebook. The HTML
page is self-contained: the notebooks draw with plotly's ``notebook`` renderer, which
embeds plotly.js in the first figure's output, and the page links nothing outside itself.
Code cells are left out unless asked for. A failing cell fails the report with that cell's
error, and no HTML page is written.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sizing.errors import InputError, ReportError
from sizing.paths import KERNEL_NAME, NOTEBOOKS_DIR

__all__ = ["ReportError", "build_report", "execute", "to_html"]


# Scripts the HTML template links from CDNs (require.js, MathJax): the report needs neither.
_REMOTE_SCRIPT = re.compile(r'<script[^>]*\ssrc="https?://[^"]*"[^>]*>\s*</script>\s*', re.I)


def execute(
    notebook: str,
    parameters: Mapping[str, Any],
    out_ipynb: str | Path,
    *,
    kernel: str = KERNEL_NAME,
) -> Path:
    """Run ``notebooks/<notebook>.ipynb`` with ``parameters`` into ``out_ipynb``."""
    import papermill as pm
    from jupyter_client.kernelspec import NoSuchKernel

    src = NOTEBOOKS_DIR / f"{notebook}.ipynb"
    if not src.is_file():
        raise InputError(f"no notebook {notebook!r} in {NOTEBOOKS_DIR}")
    out = Path(out_ipynb)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _stderr_to(out.with_suffix(".kernel.log")):
            pm.execute_notebook(
                str(src),
                str(out),
                parameters=dict(parameters),
                kernel_name=kernel,
                progress_bar=False,
                cwd=str(NOTEBOOKS_DIR),
                log_output=False,
            )
    except pm.PapermillExecutionError as exc:
        if exc.ename == "InputError":
            raise InputError(exc.evalue) from None
        raise ReportError(
            f"{notebook} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}"
        ) from None
    except NoSuchKernel:
        raise InputError(
            f"the Jupyter kernel {kernel!r} is not registered; run `make demo` (or "
            f"python -m ipykernel install --sys-prefix --name {kernel})"
        ) from None
    return out


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Send this process's file descriptor 2 (inherited by the kernel) to ``path``."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("w") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def to_html(ipynb: str | Path, html: str | Path, *, show_code: bool = False) -> Path:
    """Render an executed notebook as one self-contained HTML page."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(ipynb), as_version=4)
    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=not show_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(nb)
    body = _REMOTE_SCRIPT.sub("", body)
    out = Path(html)
    out.write_text(body, encoding="utf-8")
    return out


def build_report(
    parameters: Mapping[str, Any],
    out_dir: str | Path,
    *,
    notebook: str = "sizing_report",
    show_code: bool = False,
    kernel: str = KERNEL_NAME,
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

    Raises
    ------
    InputError
        A bad parameter (the notebook raised `InputError`) or a missing kernel.
    ReportError
        Any other failing cell; no HTML page is written.
    """
    out = Path(out_dir)
    html = out / f"{notebook}.html"
    html.unlink(missing_ok=True)
    ipynb = execute(notebook, parameters, out / f"{notebook}.ipynb", kernel=kernel)
    return ipynb, to_html(ipynb, html, show_code=show_code)
