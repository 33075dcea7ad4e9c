"""Every surface of one answer states the same decision (issue 30).

For a set of requests (spot prices; three zones surviving the loss of one; a mixed fleet;
100 KB responses; one with no answer) each surface is rendered from one `size(request)`:
the terminal's text (default and ``--explain``), the JSON document, the report's decision card
and options table (the HTML pieces, without papermill), the ``--mix`` lines, the Kubernetes
answer and ``compare``. Each must state the decision's count, type, region, pricing, zones
and total bill (compute and egress), and compare on that total at the request's confidence.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from sizing.analyses.baseline import BaselineSpec, compare_to_baseline, render_baseline
from sizing.analyses.k8s import PodBasis, k8s_answer
from sizing.catalog.load import load_catalog
from sizing.cli.main import build_parser
from sizing.cli.main import main as sizing_main
from sizing.pipeline import Answer, size
from sizing.report.render import render_mix, render_recommendation
from sizing.report.summary import decision_summary, options_heading, options_table, summary_html
from sizing.request import SizingRequest

#: name -> the flags after ``recommend --rps 1e6``.
REQUESTS: dict[str, list[str]] = {
    "spot": ["--pricing", "spot"],
    "zones": ["--zones", "3", "--zone-loss", "1"],
    "mix": ["--mix", "3"],
    "100KB": ["--file-size", "100KB"],
}
NO_ANSWER = ["--sla-p99", "0.01ms"]

_ANSWERS: dict[str, Answer] = {}


def answer_of(name: str) -> Answer:
    """The answer to ``REQUESTS[name]`` (sized once per test run)."""
    if name not in _ANSWERS:
        args = build_parser("recommend").parse_args(["recommend", "--rps", "1e6", *REQUESTS[name]])
        _ANSWERS[name] = size(SizingRequest.from_args(args))
    return _ANSWERS[name]


def flat(text: str) -> str:
    """Text or HTML as a reader sees it: tags dropped, entities unescaped, one space, x for ×."""
    text = html.unescape(re.sub(r"<[A-Za-z/!][^>]*>", " ", text))
    return " ".join(text.replace("×", "x").split())


def usd(value: float) -> str:
    """Dollars as every surface prints a monthly total."""
    return f"${value:,.0f}"


def zones_words(d: dict[str, Any]) -> str:
    """How the decision's zones read: '1 zone' or '14/14/13 per zone'."""
    if d["zones"] == 1:
        return "1 zone"
    return "/".join(str(c) for c in d["count_per_zone"]) + " per zone"


def assert_states(text: str, d: dict[str, Any], what: str, *, count: bool = True) -> None:
    """``text`` names the decision's count and type, region, pricing, zones and total."""
    t = flat(text)
    if count:
        assert f"{d['count']} x {d['instance_type']}" in t, (what, "count and type")
    assert d["region"] in t, (what, "region")
    assert d["pricing"] in t, (what, "pricing")
    assert zones_words(d) in t, (what, "zones")
    assert usd(d["total_monthly_usd"]) in t, (what, "total")


def card_only(page: str) -> str:
    """The decision card of the summary HTML, without the decision paragraph below it."""
    start = page.index('id="decision-summary"')
    return page[start : page.index('<div class="ns-side">', start)]


@pytest.mark.parametrize("name", list(REQUESTS))
def test_terminal_and_json_state_the_decision(name: str) -> None:
    ans = answer_of(name)
    doc = ans.to_dict(top=10)
    d = doc["decision"]
    assert (doc["pricing"], doc["zones"]) == (d["pricing"], d["zones"])
    assert d["total_monthly_usd"] == pytest.approx(d["monthly_cost_usd"] + d["egress_monthly_usd"])
    for explain in (False, True):
        text = render_recommendation(doc, 10, explain=explain)
        assert_states(text, d, f"terminal explain={explain}")
        table = text[text.index("Options") :]
        row1 = next(line for line in table.splitlines() if line.lstrip().startswith("1 "))
        assert f" {d['count']} " in row1 and usd(d["total_monthly_usd"])[1:] in row1, row1
    assert len(render_recommendation(doc, 10, explain=False).splitlines()) <= 40


@pytest.mark.parametrize("name", list(REQUESTS))
def test_report_card_and_options_table_state_the_decision(name: str) -> None:
    ans = answer_of(name)
    rec = ans.recommendation
    d = rec.decision
    card = card_only(summary_html(decision_summary(rec, decision_text=ans.decision)))
    assert_states(card, d, "card")
    assert "zones not modelled" not in card
    if rec.rules.zone_loss:
        assert f"losing {rec.rules.zone_loss} zone" in flat(card)
    table = options_table(rec).to_html()
    cells = [flat(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", table[table.index("<tbody") :])]
    first = cells[: cells.index("2")] if "2" in cells else cells
    heading = flat(options_heading(rec))
    assert d["instance_type"] in first and str(d["count"]) in first, first
    assert f"{d['provider']} {d['region']}" in first and usd(d["total_monthly_usd"]) in first
    assert d["pricing"] in heading and f"{d['zones']} zone" in heading, heading


def test_mix_is_compared_on_the_total_bill() -> None:
    ans = answer_of("mix")
    doc = ans.to_dict(top=10)
    d, mix = doc["decision"], doc["mix"]
    lines = flat("\n".join(render_mix(mix)))
    assert mix["total_monthly_usd"] == pytest.approx(
        mix["monthly_cost_usd"] + mix["egress_monthly_usd"]
    )
    assert usd(mix["total_monthly_usd"]) in lines and d["pricing"] in lines
    saves = d.get("mix_saves_usd_month")
    if saves:
        assert mix["total_monthly_usd"] < d["total_monthly_usd"]
        assert "a mix of types saves" in flat(d["text"])
    else:
        assert "mix of types saves" not in d["text"]


@pytest.mark.parametrize("name", list(REQUESTS))
def test_kubernetes_reads_the_answer(name: str) -> None:
    ans = answer_of(name)
    rec = ans.recommendation
    d = rec.decision
    doc = k8s_answer(
        rec.target_rps,
        list(ans.instances),
        rec.workload,
        rec.rules,
        basis=PodBasis(rec.evidence, rec.profiles, traffic=rec.traffic),
    )
    node = doc["node"]
    text = flat("\n".join(doc["comments"]))
    assert d["pricing"] in text and f"{rec.rules.zones} zone" in text
    # The node type is chosen on the whole bill: its egress is the decision's where the
    # decision's region serves it.
    assert node["total_monthly_usd"] == pytest.approx(
        node["monthly_cost_usd"] + (node["egress_monthly_usd"] or 0.0)
    )
    assert usd(node["total_monthly_usd"]) in text
    totals = [n["total_monthly_usd"] for n in doc["nodes"]]
    assert totals == sorted(totals)
    if node["region"] == d["region"]:
        assert node["egress_monthly_usd"] == pytest.approx(d["egress_monthly_usd"])
    # The autoscaler scales out at the headroom load, never above the CPU request.
    assert doc["hpa_target_percent"] <= 100


def test_kubernetes_honours_the_confidence() -> None:
    ans = answer_of("zones")
    rec = ans.recommendation
    from dataclasses import replace

    got: dict[float, dict[str, Any]] = {}
    for conf in (0.5, 0.99):
        doc = k8s_answer(
            rec.target_rps,
            list(ans.instances),
            rec.workload,
            replace(rec.rules, confidence=conf),
            basis=PodBasis(rec.evidence, rec.profiles, traffic=rec.traffic),
        )
        got[conf] = {n["node_type"]: n for n in doc["nodes"]}
        assert f"{conf:.0%} confidence" in flat("\n".join(doc["comments"]))
        assert doc["node"]["p_meets_target"] >= conf
    for node, low in got[0.5].items():
        high = got[0.99].get(node)
        assert high is None or high["replicas"] >= low["replicas"]
    assert any(got[0.99][n]["replicas"] > got[0.5][n]["replicas"] for n in got[0.99])


@pytest.mark.parametrize("name", list(REQUESTS))
def test_compare_reads_the_decision(name: str) -> None:
    ans = answer_of(name)
    rec = ans.recommendation
    d = rec.decision
    doc = compare_to_baseline(rec, BaselineSpec(d["instance_type"]), load_catalog([]), 10)
    first = doc["options"][0]
    assert (first["instance_type"], first["region"], first["count"]) == (
        d["instance_type"],
        d["region"],
        d["count"],
    )
    assert first["total_monthly_usd"] == pytest.approx(d["total_monthly_usd"])
    text = render_baseline(doc)
    assert_states(text, d, "compare", count=False)


@pytest.mark.parametrize(
    "command",
    [
        ["recommend"],
        ["recommend", "--format", "json"],
        ["k8s"],
        ["compare", "--baseline", "c6i.xlarge"],
    ],
)
def test_no_answer_says_why_on_every_surface(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert sizing_main([*command, "--rps", "1e6", *NO_ANSWER]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "no instance type meets 1,000,000 RPS" in err


def test_a_pricing_model_is_compared_with_on_demand_on_the_total(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sizing.analyses.baseline import against_on_demand

    ans = answer_of("spot")
    other = against_on_demand(ans)
    assert other is not None
    od = answer_of("zones").request  # any on-demand request answers None
    assert against_on_demand(size(od)) is None
    d = ans.recommendation.decision
    diff = d["total_monthly_usd"] - other["on_demand"]["total_monthly_usd"]
    assert other["difference_monthly_usd"] == pytest.approx(diff)
    # Dearer in all (a place of dearer egress) is said in capitals; cheaper, as a saving.
    assert ("MORE in all" in other["text"]) == (diff > 0.5)
    assert ("saves" in other["text"]) == (diff <= 0.5)
    assert sizing_main(["recommend", "--rps", "1e6", "--pricing", "spot"]) == 0
    assert flat(other["text"]) in flat(capsys.readouterr().out)
    rec = ans.recommendation
    card = card_only(summary_html(decision_summary(rec, against=other["text"])))
    assert flat(other["text"]) in flat(card)


def test_the_explorer_states_the_clis_decision(capsys: pytest.CaptureFixture[str]) -> None:
    """Spot prices in three zones surviving the loss of one: the explorer's widgets start at
    the request, and its card and table state the command line's decision."""
    from sizing.report.explorer import Explorer

    argv = ["recommend", "--rps", "1e6", "--pricing", "spot", "--zones", "3", "--zone-loss", "1"]
    assert sizing_main([*argv, "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    d = cli["decision"]
    explorer = Explorer(SizingRequest.from_args(build_parser("recommend").parse_args(argv)))
    assert explorer.current() == explorer.request
    assert explorer.rec is not None
    mine = explorer.rec.decision
    for key in ("count", "instance_type", "region", "pricing", "zones", "count_per_zone"):
        assert mine[key] == d[key], key
    assert mine["total_monthly_usd"] == pytest.approx(d["total_monthly_usd"])
    card = card_only(explorer.decision.value)
    assert_states(card, d, "explorer card")
    assert "losing 1 zone" in flat(card)
    assert flat(cli["against_on_demand"]["text"]) in flat(card)
    table = explorer.table.value
    heading = flat(table[: table.index("<table")])
    assert d["pricing"] in heading and "3 zones, surviving the loss of 1" in heading, heading
    cells = [flat(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", table[table.index("<tbody") :])]
    first = cells[: cells.index("2")]
    assert d["instance_type"] in first and str(d["count"]) in first, first
    assert f"{d['provider']} {d['region']}" in first and usd(d["total_monthly_usd"]) in first


def test_the_explorer_keeps_a_request_with_no_answer() -> None:
    """The widgets hold the request's SLA (off the slider's usual range) and say why in one
    line, as the command line does."""
    from sizing.report.explorer import Explorer

    args = build_parser("recommend").parse_args(["recommend", "--rps", "1e6", *NO_ANSWER])
    explorer = Explorer(SizingRequest.from_args(args))
    assert explorer.current() == explorer.request and explorer.rec is None
    pane = flat(explorer.decision.value)
    assert pane == "No answer: no instance type meets 1,000,000 RPS under p99 0.01 ms", pane
    assert explorer.table.value == "" and explorer.charts.outputs == ()


def _pdf_pages(pdf: Any) -> list[str]:
    """The PDF's text page by page (``pdftotext -layout``), each as one line of words."""
    import shutil
    import subprocess

    if shutil.which("pdftotext") is None:
        pytest.fail("pdftotext is needed (Debian: poppler-utils; make test installs it)")
    p = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0, p.stderr
    return [joined(page) for page in p.stdout.split("\f")[:-1]]


def joined(text: str) -> str:
    """Words as one line, a word broken at a hyphen at a line's end made whole again."""
    return re.sub(r"-\s+(?=[a-z0-9@])", "-", " ".join(text.split()))


@pytest.mark.slow
def test_the_pdf_a_manager_files(tmp_path: Any) -> None:
    """Zones, zone loss and spot: no near-empty page, every source, nothing twice."""
    from sizing.report.execute import build_report
    from sizing.report.sources import cited, name_sources, other_sources

    args = ["--pricing", "spot", "--zones", "3", "--zone-loss", "1"]
    request = SizingRequest.from_args(
        build_parser("recommend").parse_args(["recommend", "--rps", "1e6", *args])
    )
    rec = size(request).recommendation
    _, html_page = build_report(request.to_parameters(), tmp_path, pdf=True)
    pages = _pdf_pages(html_page.with_suffix(".pdf"))
    words = [len(p.split()) for p in pages]
    assert min(words) >= 40, words  # a page of a figure has its title, axes and labels
    text = " ".join(pages)
    d = rec.decision
    assert_states(text[: len(pages[0])], d, "PDF page 1")
    # The card says what the spot plan costs in all against on-demand.
    assert "On-demand This spot plan" in pages[0]
    lines = [b for o in rec.options[:3] for b in o.capacity.basis]
    for source in [*(x.title for x in cited(" ".join(lines))), *other_sources(lines)]:
        assert joined(source) in text, source
    # No paragraph twice: each reason of the first option's basis is printed once.
    for line in rec.options[0].capacity.basis:
        why = name_sources(line.partition("): ")[2])
        if len(why) > 80:
            assert text.count(joined(why[:70])) == 1, why[:70]
    # The sensitivity moves only coefficients the answer's CPU time per request is made of.
    cpu = next(b for b in rec.options[0].capacity.basis if b.startswith("CPU time per request"))
    used = set(re.findall(r"\b([a-z_]+_(?:us|ns)) [\d.]+ us \(", cpu))
    section = text[text.index("Sensitivity in numbers") : text.index("Appendix")]
    moved = set(re.findall(r"\b([a-z_]+_(?:us|ns)) \(", section))
    assert moved and moved <= used, (moved, used)


@pytest.mark.slow
def test_a_request_with_no_answer_gets_a_one_page_report(tmp_path: Any) -> None:
    out = tmp_path / "none"
    argv = ["report", "--rps", "1e6", *NO_ANSWER, "--pdf", "--quiet", "--out", str(out)]
    assert sizing_main(argv) == 0
    pages = _pdf_pages(out / "sizing_report.pdf")
    assert len(pages) == 1
    assert "no instance type meets 1,000,000 RPS under p99 0.01 ms" in pages[0]
    assert "sla_p99_ms 0.01" in pages[0]
