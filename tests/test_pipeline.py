"""One request, one pipeline: the same decision in the terminal, the report and the explorer.

For several requests the decision sentence (`sizing.pipeline.Answer.decision`) is looked for
in the output of ``python -m sizing recommend``, the HTML page ``python -m sizing report``
writes (the notebook executed by papermill) and the explorer's decision pane. The terminal
wraps lines at 100 characters and HTML escapes text, so both are compared after undoing that
(whitespace runs as one space, entities unescaped).
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import json
import re
from pathlib import Path

import pytest

from sizing.cli.main import build_parser
from sizing.cli.main import main as sizing_main
from sizing.errors import InputError
from sizing.pipeline import size
from sizing.report.execute import notebook_parameters
from sizing.report.explorer import decision_html, explore
from sizing.request import SizingRequest, parameter_names, parameters_cell
from tests.conftest import sizing_cli
from tests.test_measured import sim_run

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "data" / "profiles" / "amd-epyc-zen3-kvm-2vcpu-loopback.json"

CASES = {
    "defaults": ["--rps", "1e6"],
    "mix": ["--rps", "1e6", "--mix", "2"],
    "zones": ["--rps", "1e6", "--zones", "3", "--zone-loss", "1"],
    "profile": ["--rps", "1e6", "--profile", str(PROFILE)],
    "azure": ["--rps", "1e6", "--provider", "azure"],
}


def flat(text: str) -> str:
    """Terminal text as a reader sees it: whitespace runs (line wraps) as one space."""
    return " ".join(text.split())


def flat_html(page: str) -> str:
    """An HTML page as a reader sees it: tags dropped, entities unescaped, whitespace as one."""
    return flat(html.unescape(re.sub(r"<[^>]+>", " ", page)))


def request_of(command: str, argv: list[str]) -> SizingRequest:
    extra = ["--out", "unused"] if command == "report" else []
    return SizingRequest.from_args(build_parser().parse_args([command, *argv, *extra]))


def terminal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert sizing_main(["recommend", *argv]) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A simulated run of c7g sizes (HTTP): no recorded run folder is shipped in tests/data."""
    return sim_run(tmp_path_factory.mktemp("runs"), "c7g")


def cases(run: str) -> dict[str, list[str]]:
    runs = ["--rps", "1e6", "--protocol", "http", "--runs", run, "--allow-simulated"]
    return {**CASES, "runs": runs}


@pytest.mark.parametrize("name", [*CASES, "runs"])
def test_terminal_and_explorer_show_the_same_decision(name, run_folder, capsys):
    argv = cases(run_folder)[name]
    request = request_of("recommend", argv)
    answer = size(request)
    decision = answer.decision
    assert decision.startswith("Buy ") and "/hour" in decision and "/month" in decision
    assert "confidence" in decision and " x " in decision
    out = terminal(capsys, argv)
    assert decision in flat(out), (decision, out[:600])
    pane = decision_html(explore(request))
    assert decision in flat_html(pane)
    # The headline of the card is the decision's fleet, not another count.
    count = answer.recommendation.decision["count"]
    assert f"{count} × {answer.recommendation.decision['instance_type']}" in flat_html(pane)


def test_the_cases_give_different_decisions(run_folder):
    """The comparison could fail: the requests do not all answer the same."""
    found = {
        name: size(request_of("recommend", a)).decision for name, a in cases(run_folder).items()
    }
    assert len(set(found.values())) >= 3, found
    assert "in 3 zones" in found["zones"]


def test_explorer_answers_the_same_region_as_recommend():
    request = SizingRequest()
    rec = explore(request).rec
    assert rec is not None
    regions = {o.capacity.instance.region for o in rec.options}
    assert regions == {o.capacity.instance.region for o in size(request).options}
    assert regions <= {"us-east-1", "us-central1"}


def test_plan_measurements_shows_the_same_decision(capsys):
    assert sizing_main(["plan-measurements", "--rps", "1e6", "--draws", "200"]) == 0
    out = capsys.readouterr().out
    assert size(SizingRequest(rps=1e6)).decision == out.splitlines()[0]


# -- the request: generated options and parameters --------------------------------------------


def test_recommend_and_report_options_are_the_request_fields():
    fields = {f.name for f in dataclasses.fields(SizingRequest)}
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    pods = {"pod_cpus", "name", "namespace", "image", "max_replicas", "out"}
    for command, own, lacks in (
        ("recommend", {"format", "workload", "workload_growth", "explain", *pods}, set()),
        ("report", {"out", "show_code", "pdf", "quiet", "parameter"}, set()),
        ("compare", {"baseline", "format"}, {"mix"}),
        ("k8s", pods, {"mix", "top"}),
    ):
        dests = {a.dest for a in sub.choices[command]._actions} - {"help"}
        assert dests - own == fields - {"size_mix"} - lacks, command


def test_report_notebook_parameters_are_the_request():
    assert list(notebook_parameters("sizing_report")) == parameter_names()
    nb = json.loads((ROOT / "notebooks" / "sizing_report.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    assert "".join(cell["source"]) == parameters_cell()


def test_parameters_round_trip_as_json():
    request = request_of(
        "recommend",
        [
            "--rps",
            "250k",
            "--file-size",
            "1KB:0.7,50KB:0.3",
            "--requests-per-connection",
            "4",
            "--zones",
            "3",
            "--zone-loss",
            "1",
            "--mix",
            "2",
            "--pricing",
            "spot",
            "--environment",
            "bare-metal",
            "--jwt",
            "rs256",
            "--catalog",
            "a.csv",
        ],
    )
    params = json.loads(json.dumps(request.to_parameters()))
    assert SizingRequest.from_parameters(params) == request
    assert SizingRequest.from_dict(params) == request
    assert SizingRequest.from_parameters(SizingRequest().to_parameters()) == SizingRequest()


def test_text_parameters_go_through_the_flags_parsers():
    r = SizingRequest.from_parameters(
        {"rps": "250k", "file_size": "2KB", "catalog": "a,b.csv", "zones": "3", "mix": "2"}
    )
    assert r.rps == 250e3 and r.file_bytes == 2048 and r.catalog == ("a,b.csv",)
    assert r.zones == 3 and r.mix == 2


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"rps": "-5"}, "parameter rps: '-5' is not a positive finite"),
        ({"zones": "99"}, "parameter zones: '99' must be 1 to 64"),
        ({"zones": 2, "zone_loss": 2}, "zone loss must be fewer than the 2 zone"),
        ({"environment": "mainframe"}, "unknown environment 'mainframe'"),
        ({"pricing": "free"}, "unknown pricing 'free'"),
        ({"rps": float("nan")}, "target RPS must be a positive finite number"),
    ],
)
def test_bad_parameters_are_refused_with_their_name(given, message):
    with pytest.raises(InputError, match=re.escape(message)):
        SizingRequest.from_parameters(given)


def test_unknown_names_are_refused():
    with pytest.raises(InputError, match="'x; import os' is not a parameter of the sizing"):
        SizingRequest.from_dict({"x; import os": 1})


# -- the report, executed ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", [*CASES, "runs"])
def test_report_html_shows_the_terminals_decision(name, run_folder, tmp_path, capsys):
    argv = cases(run_folder)[name]
    decision = size(request_of("recommend", argv)).decision
    assert decision in flat(terminal(capsys, argv))
    p = sizing_cli("report", *argv, "--out", str(tmp_path), "--quiet")
    assert p.returncode == 0, p.stderr[-2000:]
    page = (tmp_path / "sizing_report.html").read_text()
    assert decision in flat_html(page), name


@pytest.mark.slow
def test_report_pdf_shows_the_terminals_decision(tmp_path, capsys):
    import shutil
    import subprocess

    if not (shutil.which("pdftotext") and shutil.which("chromium")):
        pytest.skip("needs chromium and pdftotext (poppler-utils)")
    argv = CASES["zones"]
    decision = size(request_of("recommend", argv)).decision
    assert decision in flat(terminal(capsys, argv))
    p = sizing_cli("report", *argv, "--pdf", "--out", str(tmp_path), "--quiet")
    assert p.returncode == 0, p.stderr[-2000:]
    text = subprocess.run(
        ["pdftotext", str(tmp_path / "sizing_report.pdf"), "-"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert decision in flat(text), flat(text)[:1500]
