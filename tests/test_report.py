"""The decision summary, sensitivity, readable tables, escaping and report parameters."""

from __future__ import annotations

import csv
import html
import importlib
import re
from dataclasses import replace
from pathlib import Path

import pytest

from sizing.analyses.sensitivity import (
    _measured_at,
    cost_at_confidence,
    sensitivity,
    uncertain_inputs,
)
from sizing.catalog.load import load_catalog
from sizing.errors import InputError
from sizing.fleet.recommend import recommend
from sizing.model import capacity
from sizing.model.capacity import Workload
from sizing.model.inputs import ModelInputs
from sizing.paths import CATALOG_DIR
from sizing.report.execute import coerce_parameters, notebook_parameters
from sizing.report.sources import name_sources
from sizing.report.summary import (
    appendix_html,
    decision_summary,
    families_table,
    md_escape,
    no_math,
    options_heading,
    options_table,
    sensitivity_table,
    summary_html,
)

# The module, not the function `sizing.fleet.recommend` that the package exports under that name.
engine_module = importlib.import_module("sizing.fleet.engine")

HOSTILE = '<img src=x onerror="alert(1)">'


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def rec(catalog):
    # Clients in the VPC of one zone: no transfer charge, so the instances alone rank and move.
    return recommend(1e6, catalog, Workload(), clients="vpc")


def test_summary_is_the_first_option_and_the_runner_up(rec):
    s = decision_summary(rec)
    first, second = rec.options[0], rec.options[1]
    assert s.choice.instance_type == first.capacity.instance.instance_type
    assert s.choice.count == first.count
    assert s.choice.monthly_usd == pytest.approx(first.hourly_cost_usd * 730)
    assert s.choice.count_at_confidence == first.count_at_confidence
    assert s.runner_up is not None
    assert s.runner_up.instance_type == second.capacity.instance.instance_type
    cost, fleet = cost_at_confidence(rec)
    assert s.cheapest_at_confidence == (fleet, cost)
    page = summary_html(s, "<div id=side></div>")
    # The headline is the decision's fleet (the count at the confidence), as in the terminal.
    n = rec.decision["count"]
    assert n == first.count_at_confidence
    assert f"{n} &times; {first.capacity.instance.instance_type}" in page
    assert rec.decision["headline"] in html.unescape(page)
    assert f"the point estimate, {first.count} " in page
    assert "id=side" in page and "P(meet)" in page and "Runner-up" in page


def test_summary_states_the_answers_zones_and_pricing(catalog):
    # Labels come from the answer's rules and decision, never from defaults.
    r = recommend(1e6, catalog, Workload(), zones=3, zone_loss=1, pricing="1y")
    page = summary_html(decision_summary(r))
    spread = "/".join(str(n) for n in r.decision["count_per_zone"])
    assert f"3 zones, {spread} per zone" in page and "survives losing 1 zone" in page
    assert "(1y)" in page and "(on-demand)" not in page and "not modelled" not in page
    assert f"${r.decision['total_monthly_usd']:,.0f}/month in all" in page


def test_user_strings_are_escaped_everywhere(catalog):
    bad = replace(catalog[0], instance_type=HOSTILE, family=HOSTILE, source=HOSTILE)
    r = recommend(1e6, [bad], Workload())
    s = decision_summary(r)
    pages = [
        summary_html(s),
        options_table(r).to_html(),
        families_table(r).to_html(),
        appendix_html(r, {"catalog": HOSTILE}, model_version="test"),
        md_escape(HOSTILE),
    ]
    for page in pages:
        assert "<img" not in page, page
    assert "&lt;img" in pages[0] and "&lt;img" in pages[1]


def test_dollars_in_markdown_are_not_latex():
    assert md_escape("$0.45/hour, $328/month") == r"\$0.45/hour, \$328/month"


def test_readable_table_headers_and_numbers(rec):
    html = options_table(rec, 5).to_html()
    for header in ("Instance", "Count at 95%", "RPS/instance", "$/hour", "Total $/mo", "P(meet)"):
        assert header in html
    assert "capacity_rps_per_instance" not in html and "e+" not in html
    assert 'id="T_options-table"' in html
    assert html.count("<tr>") == 6  # header and five options


def _model_names() -> tuple[object, object, dict[str, tuple[float, str]], object]:
    """What the sensitivity could have assigned: it assigns none of it."""
    return (
        vars(capacity)["reference_profile"],
        vars(capacity)["platform_of"],
        dict(capacity.ESTIMATES),
        vars(engine_module)["instance_capacities"],
    )


def test_sensitivity_moves_the_cost_and_restores_the_model(catalog):
    # 3M RPS: enough instances that a coefficient's range moves the integer count (at 1M the
    # answer is 7 instances, and tls_request_us's whole range keeps it at 7).
    rec = recommend(3e6, catalog, Workload(), clients="vpc")
    before = _model_names()
    rows = sensitivity(rec, catalog)
    after = _model_names()
    assert after[0] is before[0] and after[1] is before[1] and after[3] is before[3]
    assert after[2] == before[2]
    assert capacity.ESTIMATES["base_latency_ms"][0] == 0.5
    assert _measured_at("c7g", 1.0, 2.0) == ModelInputs(measured=(("c7g", 2.0),))
    swings = [r.swing for r in rows]
    assert swings == sorted(swings, reverse=True)
    base = cost_at_confidence(rec)[0]
    tls = next(r for r in rows if r.input.key == "coef:tls_request_us")
    # HTTPS's extra CPU per request at its low end costs less (or no more); at its high end
    # more (or no less: counts are integers), and the two ends differ.
    assert tls.cost_low <= base <= tls.cost_high and tls.cost_low < tls.cost_high
    speed = next(r for r in rows if r.input.key.startswith("platform:"))
    # A faster CPU platform is never dearer than a slower one.
    assert speed.cost_high <= base <= speed.cost_low and speed.cost_high < speed.cost_low
    assert {r.input.kind for r in rows} <= {"estimate", "published", "measured"}
    table = sensitivity_table(rows, base).to_html()
    assert "tls_request_us" in table and "speed per" in table


def test_an_input_at_its_point_value_changes_nothing(rec, catalog):
    inputs = uncertain_inputs(rec)
    kinds = ("coef:", "platform:", "base_latency_ms")
    picked = [next(i for i in inputs if i.key.startswith(k)) for k in kinds]
    same = [replace(i, low=i.value, high=i.value) for i in picked]
    base = cost_at_confidence(rec)[0]
    for row in sensitivity(rec, catalog, inputs=same):
        assert row.cost_low == pytest.approx(base) and row.cost_high == pytest.approx(base)


def test_sources_are_named_by_title_and_publisher(rec):
    text = name_sources("nginx-web-server, 004_2a50d35d485b581a.txt table 1")
    assert 'NGINX (F5), "Web Server Load Balancing with NGINX Plus' in text
    page = appendix_html(rec, {"rps": 1e6}, model_version="v")
    assert "Web Server Load Balancing with NGINX Plus" in page
    assert "004_2a50d35d485b581a.txt" not in page
    assert "as of 2026-" in page


def test_report_parameters_are_checked_against_the_notebook():
    names = notebook_parameters("sizing_report")
    assert {"rps", "catalog", "runs", "top", "allow_unused_runs"} <= set(names)
    with pytest.raises(InputError, match=r"not a parameter of sizing_report; valid: .*rps"):
        coerce_parameters("sizing_report", {"x; import os": "1"})
    out = coerce_parameters(
        "sizing_report",
        {"top": "5", "rps": "250k", "allow_simulated": "true", "catalog": "a,b.csv"},
    )
    assert out == {"top": 5, "rps": 250e3, "allow_simulated": True, "catalog": ["a,b.csv"]}
    with pytest.raises(InputError, match="parameter top: 'abc' is not an integer"):
        coerce_parameters("sizing_report", {"top": "abc"})
    hostile = '"; __import__("os").system("false") #'
    assert coerce_parameters("sizing_report", {"providers": hostile}) == {"providers": hostile}


def write_catalog(path: Path, instance_type: str) -> Path:
    with (CATALOG_DIR / "instances.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    row = dict(rows[0], instance_type=instance_type, provider="local", region="lab")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerow(row)
    return path


def test_report_kernels_keep_their_sockets_in_a_folder_of_their_own(tmp_path):
    """Not ``kernel-ipc-N`` in the notebooks' folder, where two reports, or a copy of the
    folder, would meet them."""
    from sizing.report.execute import _ipc_kernel_manager

    manager = _ipc_kernel_manager(tmp_path)(kernel_name="nginx-sizing")
    assert manager.transport == "ipc"
    assert Path(manager.ip).parent == tmp_path


def test_dollars_in_html_outputs_are_not_typeset(rec):
    s = decision_summary(rec)
    for page in (
        summary_html(s),
        options_table(rec).to_html(),
        families_table(rec).to_html(),
        appendix_html(rec, {}, model_version="v"),
        no_math("$1 and $2"),
    ):
        assert "mathjax_ignore" in page and "tex2jax_ignore" in page


def test_the_appendix_is_a_labelled_table_of_the_request(rec):
    page = appendix_html(rec, {"catalog": [], "requests_per_connection": 0}, model_version="v")
    inputs = page.split('id="inputs-table">')[1].split("</table>")[0]
    for label, value in (
        ("Target", "1,000,000 requests/s"),
        ("p99 latency SLA", "5 ms"),
        ("Requests per connection", "no limit (keep-alive)"),
        ("Catalog", "the shipped catalog"),
        ("Headroom", "20%"),
    ):
        assert f">{label}</th>" in inputs and value in inputs, (label, inputs)
    assert "[]" not in inputs and ">0<" not in inputs


def test_the_summary_reads_as_text(catalog):
    work = Workload(size_mix=((1024, 0.7), (51200, 0.3)))
    r = recommend(1e6, catalog, work)
    page = summary_html(decision_summary(r))
    assert "1 KiB (70%) and 50 KiB (30%) responses" in page
    one = next(o for o in r.options if o.capacity.instance.vcpus == 1)
    single = decision_summary(replace(r, options=[one]))
    assert "1 vCPU " in summary_html(single) and "1 vCPUs" not in summary_html(single)
    assert options_heading(r) == (
        "Options, cheapest total bill first (the count that keeps the headroom with 95% "
        "confidence; on-demand prices; 1 zone)"
    )
    basis = " ".join(r.options[0].capacity.basis)
    assert "measured over none" not in basis
    assert re.search(r"body_us \d+\.\d\d us \(\d", basis), basis


def test_the_terminal_answer_shows_the_size_mix(catalog):
    from sizing.report.render import render_recommendation

    work = Workload(size_mix=((1024, 0.7), (51200, 0.3)))
    text = render_recommendation(recommend(1e6, catalog, work).to_dict(top=3), 3)
    first = text.splitlines()[0]
    assert "1,024 B (70%), 51,200 B (30%) responses" in first, first
    assert f"{work.file_bytes:,} B responses" not in first  # not the mean alone
