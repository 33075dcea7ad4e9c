"""Every figure: its data and its layout (trace types, bar mode, axis ranges, labels)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from sizing.analyses.sensitivity import cost_at_confidence, sensitivity
from sizing.catalog.load import load_catalog
from sizing.fitting.published import recompute_claims
from sizing.fleet.recommend import recommend
from sizing.model import curves
from sizing.model.capacity import REFERENCE_LINK_GBPS, Workload, bytes_per_response
from sizing.model.datasets import reference_series
from sizing.report import plots


@pytest.fixture(scope="module")
def rec():
    # Clients in the VPC of one zone: no transfer charge, so the instances alone rank and move.
    return recommend(1e6, load_catalog(), Workload(), clients="vpc")


def test_ratio_bars_are_side_by_side_and_each_its_own_value():
    table = pd.DataFrame(recompute_claims(load_catalog()))
    table["published"] = (table["published_low"] + table["published_high"]) / 2
    table["recomputed"] = (table["recomputed_low"] + table["recomputed_high"]) / 2
    fig = plots.ratio_figure(table, "ratios")
    assert fig.layout.barmode == "group"
    pub, rec_ = fig.data
    assert pub.type == rec_.type == "bar"
    # No category repeats within a trace (a repeat would stack two ratios into one bar).
    assert len(set(pub.x)) == len(pub.x) == len(table)
    assert list(pub.y) == pytest.approx(list(table["published"]))
    assert max(pub.y) < 2.0  # the published ratios are 1.0 to 1.9
    assert fig.layout.yaxis.range[1] >= max(max(pub.y), max(rec_.y))
    assert any("price-perf." in x for x in pub.x)


def test_ratio_bars_draw_the_published_ranges_with_short_labels():
    table = pd.DataFrame(recompute_claims(load_catalog()))
    table["published"] = (table["published_low"] + table["published_high"]) / 2
    table["recomputed"] = (table["recomputed_low"] + table["recomputed_high"]) / 2
    fig = plots.ratio_figure(table, "ratios")
    pub = fig.data[0]
    assert pub.error_y.visible
    # Each whisker spans the published range: 1.52 to 1.68 is not drawn as 1.60 alone.
    for mid, up, down, lo, hi in zip(
        pub.y,
        pub.error_y.array,
        pub.error_y.arrayminus,
        table["published_low"],
        table["published_high"],
        strict=True,
    ):
        assert mid + up == pytest.approx(hi) and mid - down == pytest.approx(lo)
    assert any(u > 0.05 for u in pub.error_y.array)  # the AWS study published ranges
    assert "1.52-1.68" in pub.text
    assert fig.layout.yaxis.range[1] >= max(table["published_high"])
    # Short labels (at most three lines of 14 characters) leave the chart to the bars.
    for label in pub.x:
        lines = label.split("<br>")
        assert len(lines) <= 3 and all(len(line) <= 14 for line in lines), label
    # A range's ends are not printed on its bar (they would shrink beside the whisker).
    assert all(t == "" for t, u in zip(pub.texttemplate, pub.error_y.array, strict=True) if u)


def test_sweep_sla_line_is_at_the_sla_on_the_log_axis():
    trials = pd.DataFrame(
        {
            "vcpus": [1, 1, 2, 2],
            "connections": [4, 16, 4, 16],
            "threads": [1, 1, 1, 1],
            "rps": [40e3, 70e3, 80e3, 130e3],
            "latency_p99_ms": [0.4, 2.5, 0.3, 9.0],
            "valid": [True, True, True, False],
        }
    )
    fig = plots.latency_throughput_figure(trials, 5.0)
    assert fig.layout.yaxis.type == "log"
    lo, hi = fig.layout.yaxis.range
    assert 10**lo < 0.3 and 10**hi > 9.0 and 10**hi < 100  # the data fill the axis
    assert not fig.layout.annotations  # nothing placed at 10^5 ms
    sla = [t for t in fig.data if t.name.startswith("SLA")]
    assert len(sla) == 1 and list(sla[0].y) == [5.0, 5.0]
    assert [t.name for t in fig.data if t.mode == "lines+markers"] == ["1 vCPU", "2 vCPU"]
    assert list(fig.data[1].marker.symbol) == ["circle", "circle-open"]


def test_fit_points_are_named_by_what_they_are():
    x, y = [1, 2, 4, 8], [1.0, 1.9, 3.6, 6.5]
    fit = curves.fit_curve("usl", x, y)
    fig = plots.fit_figure(x, y, [fit], title="t", y_title="rps", points_name="simulated")
    names = [t.name for t in fig.data]
    assert "simulated" in names and "published" not in names
    assert fig.data[0].fill == "toself"  # the prediction band
    assert plots.fit_figure(x, y, [fit], title="t", y_title="rps").data[-1].name == "published"


def test_plateau_ceilings_do_not_overlap():
    big = [s for s in reference_series() if s["metric"] == "requests_per_s"]
    big = [s for s in big if s["file_bytes"] == 102400]
    wire = {
        f"{s['protocol']} {s['file_size']}": bytes_per_response(s["file_bytes"], s["protocol"])
        for s in big
    }
    fig = plots.plateau_figure(big, REFERENCE_LINK_GBPS, wire)
    assert not fig.layout.annotations
    ceilings = [t for t in fig.data if "ceiling" in t.name]
    assert len(ceilings) == len(big) == 2
    for c, s in zip(ceilings, big, strict=True):
        key = f"{s['protocol']} {s['file_size']}"
        assert c.y[0] == pytest.approx(REFERENCE_LINK_GBPS * 1e9 / 8 / wire[key])
        assert c.line.dash == "dot"


def test_price_performance_bars_are_not_stacked(rec):
    fig = plots.price_performance_figure(rec, top=10)
    assert fig.layout.barmode == "overlay"
    assert {t.type for t in fig.data} == {"bar"}
    ys = [y for t in fig.data for y in t.y]
    assert len(ys) == len(set(ys)) == 10
    o = rec.options[0]
    first = o.capacity.capacity_rps / o.capacity.instance.price_usd_hour
    assert first == pytest.approx(
        next(
            x
            for t in fig.data
            for x, y in zip(t.x, t.y, strict=True)
            if y == plots.options_frame(rec, 10)["label"].iloc[0]
        )
    )


def test_capacity_chart_has_uncertainty_and_a_per_instance_load(rec):
    fig = plots.capacity_curves_figure(rec)
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    bands = [t for t in fig.data if t.fill == "toself"]
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert bands and lines and all(t.error_y.array is not None for t in lines)
    # The axis is per instance: no fleet target across it, but the load one instance of the
    # decision carries (the target over the count to buy).
    assert not fig.layout.annotations and not fig.layout.shapes
    (star,) = [t for t in fig.data if t.mode == "markers"]
    first = rec.options[0]
    assert star.y[0] == pytest.approx(rec.target_rps / first.count_at_confidence)
    assert star.x[0] == first.capacity.instance.vcpus
    assert first.capacity.instance.instance_type in star.name
    # Whole-number vCPU ticks; RPS ticks on 1-2-5 steps, no "10 2 3" minor labels.
    assert all(isinstance(v, int) for v in fig.layout.xaxis.tickvals)
    assert fig.layout.xaxis.tickformat == "d"
    ys = fig.layout.yaxis.tickvals
    assert all(str(int(v))[0] in "125" and set(str(int(v))[1:]) <= {"0"} for v in ys), ys
    lo = min(min(t.y) for t in lines)
    hi = max(max(t.y) for t in lines)
    assert min(ys) <= lo * 1.5 and max(ys) >= hi / 1.5


def test_cost_figure_plots_the_counts_to_buy_on_whole_number_ticks(rec):
    top = 10
    fig = plots.cost_figure(rec, top=top)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.title.text == "$ per hour"
    points = {
        (x, round(y, 6)): label
        for t in fig.data
        for x, y, label in zip(t.x, t.y, t.text, strict=True)
    }
    want: dict[tuple[int, float], list[str]] = {}
    for rank, o in enumerate(rec.options[:top], start=1):
        key = (o.count_at_confidence, round(o.hourly_cost_at_confidence_usd, 6))
        want.setdefault(key, []).append(rank)
    # Each option at its count at the confidence (not the point estimate), options on one
    # point sharing one label.
    assert points == {k: plots._ranks(v) for k, v in want.items()}
    assert plots._ranks([1, 4, 5, 6, 9, 10]) == "1, 4-6, 9-10"
    assert any(o.count != o.count_at_confidence for o in rec.options[:top])
    # Labels are ranks (short: no overlapping names); ticks are whole instance counts.
    assert all(len(label) <= 8 for label in points.values())
    assert all(isinstance(v, int) for v in fig.layout.xaxis.tickvals)
    assert fig.layout.xaxis.tickformat == "d"
    xs = [x for x, _ in points]
    assert min(fig.layout.xaxis.tickvals) <= min(xs) * 1.5
    assert max(fig.layout.xaxis.tickvals) >= max(xs) / 1.5
    lo, hi = fig.layout.xaxis.range
    assert 10**lo < min(xs) and 10**hi > max(xs)  # no point on the edge


def test_integer_log_ticks():
    assert plots.integer_log_ticks(3, 24) == [2, 3, 5, 7, 10, 20, 30]
    assert plots.integer_log_ticks(3, 8) == [2, 3, 5, 7, 10]
    assert plots.integer_log_ticks(1, 96) == [1, 2, 5, 10, 20, 50, 100]


def test_tornado_bars_start_at_today_s_cost(rec):
    rows = sensitivity(rec, load_catalog())
    now, _ = cost_at_confidence(rec)
    fig = plots.tornado_figure(rows, now, rec.confidence)
    assert fig.layout.barmode == "overlay"
    low, high = fig.data
    assert low.orientation == high.orientation == "h"
    assert all(b == pytest.approx(now) for b in (low.base, high.base))
    moving = [r for r in rows if r.swing > 1e-9]
    assert len(low.y) == min(8, len(moving))
    top = moving[0]
    assert low.x[-1] == pytest.approx(top.cost_low - now)  # largest swing drawn on top
    assert high.x[-1] == pytest.approx(top.cost_high - now)
    assert low.y[-1].replace("<br>", " ").startswith(top.input.label)
    assert f"{top.input.unit} ({top.input.kind})" in low.y[-1] or "(estimate)" in low.y[-1]
    assert "95%" in fig.layout.xaxis.title.text
    # Names wrap rather than clip: short lines, and the margin grows to fit them.
    for label in low.y:
        assert all(len(line) <= 40 for line in label.split("<br>")), label
    assert fig.layout.yaxis.automargin
    assert fig.layout.xaxis.tickangle == 0 and fig.layout.xaxis.nticks <= 6
    title = re.sub(r"<[^>]+>", "", fig.layout.title.text.replace("<br>", "\n"))
    assert all(len(line) <= 60 for line in title.splitlines()), title


def test_labels_from_a_catalog_are_escaped(rec):
    from dataclasses import replace

    inst = replace(rec.options[0].capacity.instance, instance_type="<b onmouseover=x>")
    r = recommend(1e6, [inst], Workload())
    fig = plots.price_performance_figure(r)
    labels = [str(v) for t in fig.data for v in (*(t.y or ()), *(t.text or ()))]
    assert "&lt;b onmouseover=x&gt;" in labels and "<b onmouseover=x>" not in labels
    hover = " ".join(str(v) for t in plots.cost_figure(r).data for v in t.customdata)
    assert "&lt;b onmouseover=x&gt;" in hover and "<b onmouseover=x>" not in hover
    star = plots.capacity_curves_figure(r).data[-1]
    assert "&lt;b onmouseover=x&gt;" in star.name and "<b" not in star.name


def test_capacity_chart_can_keep_the_families_of_the_cheapest(rec):
    fig = plots.capacity_curves_figure(rec, families_of_top=3)
    wanted = {
        f"{o.capacity.instance.provider} {o.capacity.instance.family}" for o in rec.options[:3]
    }
    assert {t.name for t in fig.data if t.mode == "lines+markers"} == wanted
    assert wanted == set(plots.family_names(rec, 3))
    some = plots.family_names(rec)[-2:]
    fig = plots.capacity_curves_figure(rec, families=some)
    assert {t.name for t in fig.data if t.mode == "lines+markers"} == set(some)


def test_price_performance_fits_a_printed_page(rec):
    from sizing.report.execute import PRINT_HEIGHT_PX

    for top in (5, 20, 60):
        fig = plots.price_performance_figure(rec, top=top)
        assert fig.layout.height <= PRINT_HEIGHT_PX - 60


def test_explorer_charts_the_families_of_the_cheapest_and_others_on_request():
    from sizing.report.explorer import Explorer
    from sizing.request import SizingRequest

    ex = Explorer(SizingRequest(top=5))
    rec = ex.rec
    assert rec is not None
    assert list(ex.families.value) == plots.family_names(rec, 5)
    assert len(ex.families.options) > len(ex.families.value)  # every family can be picked

    def chart_families() -> set[str]:
        fig = ex.charts.outputs[0]["data"]["application/vnd.plotly.v1+json"]
        return {t["name"] for t in fig["data"] if t.get("mode") == "lines+markers"}

    assert chart_families() == set(plots.family_names(rec, 5))
    other = ex.families.options[-1]
    ex.families.value = (other,)
    assert chart_families() == {other}
    assert "update" not in ex.status.value and "ns-updates" not in ex.status.value
    assert "mathjax_ignore" in ex.table.value and "mathjax_ignore" in ex.decision.value


def test_plotly_typesets_no_labels():
    import plotly.io as pio

    plots.use_offline_renderer()
    assert pio.renderers["notebook"].config["typesetMath"] is False
