"""The first hour of a new user: help, units, one default protocol, loud unused runs, lab."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from runners.cli.main import build_parser as runners_parser
from sizing.cli.main import build_parser as sizing_parser
from sizing.model import curves
from sizing.model.capacity import Workload
from sizing.paths import FITS_PATH
from sizing.report.summary import tidy_table
from sizing.units import DEFAULT_PROTOCOL, parse_rps
from tests.conftest import sizing_cli
from tests.test_costmodel import FIT_TABLE_WORDS
from tests.test_measured import sim_run

ROOT = Path(__file__).resolve().parents[1]


def _options(parser: argparse.ArgumentParser, name: str):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub_name, sub in a.choices.items():
                yield from _options(sub, f"{name} {sub_name}")
        elif a.option_strings and "-h" not in a.option_strings:
            yield name, parser, a


@pytest.mark.parametrize("build", [sizing_parser, runners_parser], ids=["sizing", "runners"])
def test_help_shows_every_option_and_its_default(build):
    for name, parser, action in _options(build(), "cli"):
        assert action.help, f"{name} {action.option_strings} has no help"
        if action.nargs == 0 or action.required:
            continue
        shown = parser._get_formatter()._expand_help(action)
        assert re.search(r"default", shown), f"{name} {action.option_strings}: {shown}"
        if action.default not in (None, [], argparse.SUPPRESS):
            assert str(action.default) in shown or "(default " in shown, (name, shown)
        assert len(re.findall(r"\bdefault\b", shown)) == 1, (name, shown)  # said once


@pytest.mark.parametrize("build", [sizing_parser, runners_parser], ids=["sizing", "runners"])
def test_help_speaks_to_the_user(build):
    text = build().format_help()
    assert "``" not in text and "Imports" not in text and "one function" not in text, text


def test_catalog_help_lists_its_filters():
    p = sizing_cli("catalog", "--help")
    assert p.returncode == 0
    for flag in ("--provider", "--region", "--arch", "--family", "--catalog"):
        line = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith(flag))
        assert len(line.split(None, 2)) == 3, line  # flag, metavar, help text


@pytest.mark.parametrize(
    ("text", "value"),
    [("1M", 1e6), ("250k", 250e3), ("250K", 250e3), ("1.5G", 1.5e9), ("1e6", 1e6), ("2_000", 2e3)],
)
def test_rps_with_a_suffix(text, value):
    assert parse_rps(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["1X", "-1k", "0k", "infk", "nan", "k", "1 M M"])
def test_rps_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_rps(text)


def test_recommend_accepts_250k():
    p = sizing_cli("recommend", "--rps", "250k", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert '"target_rps": 250000.0' in p.stdout


def test_runners_and_sizing_share_one_default_protocol():
    sweep = runners_parser().parse_args(["sweep"])
    rec = sizing_parser().parse_args(["recommend", "--rps", "1e6"])
    assert sweep.protocol == rec.protocol == DEFAULT_PROTOCOL == Workload().protocol


def _sizing(capsys, *args: str) -> tuple[int, str, str]:
    """``python -m sizing ARGS`` in-process (`sizing.cli.main.main`): exit code, stdout, stderr."""
    from sizing.cli.main import main

    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def test_runs_that_do_not_match_are_refused_loudly(tmp_path, capsys):
    run = sim_run(tmp_path, "c7g")  # measured over HTTP; recommend asks HTTPS by default
    # The command line as a process once (exit code and stderr as a user sees them) ...
    p = sizing_cli("recommend", "--rps", "1e6", "--runs", run, "--allow-simulated")
    assert p.returncode == 1 and not p.stdout
    assert "none of the 1 run folder(s) measured this workload" in p.stderr
    assert "--allow-unused-runs" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    # ... its variants in-process (the same main, without a new interpreter each).
    code, _, err = _sizing(
        capsys, "recommend", "--rps", "1e6", "--runs", run, "--allow-simulated",
        "--allow-unused-runs",
    )  # fmt: skip
    assert code == 0 and "WARNING: none of the 1 run folder(s)" in err
    code, _, err = _sizing(
        capsys, "recommend", "--rps", "1e6", "--runs", run, "--allow-simulated", "--protocol",
        "http",
    )  # fmt: skip
    assert code == 0 and not err, err


def test_make_lab_allows_root_only_as_root():
    # Run as a user would: not as a sub-make of `make test`, whose flags and directory
    # messages would leak in.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    p = subprocess.run(
        ["make", "--no-print-directory", "-n", "lab", "LAB_ARGS=--no-browser --ServerApp.port=9"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    line = " ".join(p.stdout.split("jupyter lab", 1)[1].replace("\\\n", " ").split())
    assert ("--allow-root" in line) == (os.geteuid() == 0)
    assert "--KernelManager.transport=ipc" in line
    assert line.endswith("--no-browser --ServerApp.port=9")
    assert "LAB_ARGS" in (ROOT / "docs" / "reports.md").read_text()


def test_progress_bar_has_an_eta(monkeypatch, capsys):
    from sizing.cli.main import _progress_bar

    monkeypatch.setenv("NGINX_SIZING_PROGRESS", "1")
    with _progress_bar("fit", "series") as tick:
        for done in range(1, 14):
            tick(done, 13)
    err = capsys.readouterr().err
    assert re.search(r"fit: .*13/13 \[[0-9:]+<[0-9:]+", err), err  # done/total [elapsed<eta]
    monkeypatch.delenv("NGINX_SIZING_PROGRESS")
    with _progress_bar("fit", "series") as tick:  # stderr is not a terminal here
        tick(1, 13)
    assert capsys.readouterr().err == ""


def test_fit_shows_progress(reference_fit_run, replayed_reference_fit, monkeypatch, capsys):
    """``sizing fit``: progress with an ETA on stderr, the table on stdout.

    The real fit reports each series as it is done (recorded once per session); the command
    runs in-process on that fit, replayed, with progress asked for.
    """
    _, ticks = reference_fit_run
    assert ticks == [(i, 13) for i in range(1, 14)]
    monkeypatch.setenv("NGINX_SIZING_PROGRESS", "1")
    code, out, err = _sizing(capsys, "fit")
    assert code == 0, err[-2000:]
    assert re.search(r"fit: .*\d+/13 \[[0-9:]+<", err), err[-500:]
    for word in FIT_TABLE_WORDS:
        assert word in out or word.replace("closed", "not carried") in out, word


@pytest.mark.slow
def test_report_shows_progress_with_an_eta(tmp_path, capfd):
    from sizing.report.execute import execute

    execute("price_performance", {}, tmp_path / "pp.ipynb", progress=True)
    err = capfd.readouterr().err
    assert re.search(r"price_performance: .*\d+/\d+ .*<", err), err[-500:]
    log = tmp_path / "pp.kernel.log"  # kept only when the kernel wrote something
    kernel_log = log.read_text() if log.exists() else ""
    assert "without encryption" not in kernel_log and "without encryption" not in err


def test_model_tables_show_meaningful_digits():
    sel = curves.select_model([1, 2, 4, 8, 16], [1.0, 2.0, 4.0, 8.0, 16.0])
    table = pd.DataFrame(sel.table)
    html = tidy_table(table[["model", "mape_pct", "loo_mape_pct", "aicc", "selected"]]).to_html()
    assert not re.search(r">-?inf<|e-\d\d|\d\.\d{5,}", html), html


def test_make_fits_stores_meaningful_digits(tmp_path, monkeypatch):
    """`make fits` stores rounded numbers, so a refit rewrites no line for float noise."""
    from sizing.fitting import fits

    noisy = {"params": {"lam": 134759.7919139186, "kappa": 0.0003872265283791494}}
    monkeypatch.setattr(fits, "fit_reference", lambda name, compare: [{**noisy, "aicc": math.inf}])
    text = fits.precompute(tmp_path / "fits.json").read_text()
    assert '"lam": 134759.8' in text and '"kappa": 0.0003872265' in text, text
    assert '"aicc": null' in text
    stored = json.loads(FITS_PATH.read_text())
    assert stored["series"] and fits.stored_digits(stored) == stored


@pytest.mark.slow
def test_install_prints_no_setuptools_block(tmp_path):
    """`make`'s editable install prints no setuptools block about editable installs.

    pip shows a build backend's output only with -v (or on failure), so the install runs
    verbose here: the block must be silenced by the Makefile's environment, not hidden."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    plan = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", ".venv/.installed"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    line = next(ln for ln in plan.stdout.splitlines() if "pip install" in ln and " -e ." in ln)
    words = shlex.split(line)
    install_env = dict(env, **dict(w.split("=", 1) for w in words if "=" in w.split("-")[0]))
    assert "--quiet" in words, line
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    p = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-v", "--no-deps", "-e", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=install_env,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout + p.stderr
    assert "Successfully installed nginx-sizing" in out, out[-2000:]
    assert "Editable installation" not in out and "InformationOnly" not in out, out[-3000:]


def test_make_setup_says_each_step(tmp_path):
    """``make`` runs its real setup recipes (with a stand-in Python that records what pip and
    ipykernel were asked to do) and says each step, in order, with the time it started."""
    fake = tmp_path / "python3"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = -m ] && [ "$2" = venv ]; then\n'
        '  mkdir -p "$3/bin"\n'
        f'  printf \'#!/bin/sh\\necho "$@" >> {tmp_path}/calls\\n\' > "$3/bin/python"\n'
        '  chmod +x "$3/bin/python"\n'
        "fi\n"
    )
    fake.chmod(0o755)
    venv = tmp_path / "venv"

    def make() -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                "make",
                "--no-print-directory",
                f"{venv}/.installed-dev",
                f"VENV={venv}",
                f"PYTHON={fake}",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    p = make()
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    steps = [line for line in lines if " setup " in line]
    assert lines == steps, lines  # nothing but the steps: no recipe echo, no pip noise
    assert [re.search(r"setup (\S+)", s).group(1) for s in steps] == [  # type: ignore[union-attr]
        "1/4:",
        "2/4:",
        "3/4:",
        "4/4:",
        "done",
    ]
    assert all(re.match(r"\[\d\d:\d\d:\d\d\] setup ", s) for s in steps), steps
    calls = (tmp_path / "calls").read_text()
    assert "pip install --quiet -e ." in calls and "ipykernel install" in calls
    assert "pip install --quiet -e .[dev]" in calls
    again = make()
    assert again.returncode == 0 and "] setup" not in again.stdout  # done once, said once


def test_progress_shows_with_stdout_piped_on_a_terminal_of_unknown_size():
    """``fit --reference | less``: stdout a pipe, stderr a terminal (here one that reports
    0 x 0, where tqdm alone draws nothing): the bar is drawn and stays when done."""
    import pty

    master, slave = pty.openpty()
    code = (
        "from sizing.cli.main import _progress_bar\n"
        "with _progress_bar('fit', 'series') as tick:\n"
        "    for i in range(1, 4):\n"
        "        tick(i, 3)\n"
        "print('table')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NGINX_SIZING_PROGRESS"}
    env["PYTHONPATH"] = str(ROOT)
    try:
        p = subprocess.run(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=slave, env=env, timeout=120
        )
    finally:
        os.close(slave)
    seen = b""
    try:
        while chunk := os.read(master, 65536):
            seen += chunk
    except OSError:  # the terminal's other end is closed: all read
        pass
    finally:
        os.close(master)
    assert p.returncode == 0 and p.stdout == b"table\n"
    assert b"fit: 100%" in seen and b"3/3" in seen, seen[-300:]
