"""Plotly figure builders shared by the notebooks and the batch reports.

Each function takes plain data (fits, DataFrames, a `Recommendation`) and returns a
``plotly.graph_objects.Figure``; none of them computes a capacity or a price itself.
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from sizing.model.curves import CurveFit

if TYPE_CHECKING:  # the figures only read a recommendation
    from sizing.analyses.sensitivity import Sensitivity
    from sizing.fleet.counts import Recommendation
    from sizing.model.datasets import ReferenceSeries

TEMPLATE = "plotly_white"
_DASH_SLA = {"dash": "dash", "color": "firebrick"}


def text(value: object) -> str:
    """A user-supplied string made safe for plotly labels (plotly reads a subset of HTML)."""
    return html.escape(str(value), quote=False)


def use_offline_renderer() -> None:
    """Render figures with plotly.js embedded in the notebook, so exported HTML works offline."""
    pio.renderers.default = "notebook"
    # Labels are text: a "$" in "$ per hour" is a dollar, never LaTeX (and nothing is fetched
    # to typeset it), and the toolbar carries no plotly logo.
    pio.renderers["notebook"].config = {"typesetMath": False, "displaylogo": False}
    # Embed plotly.js now, in this cell's output, so that figures drawn as HTML fragments
    # (`sizing.report.summary.figure_div`) before the first ``fig.show()`` find it loaded.
    pio.renderers._activate_pending_renderers()


def fit_figure(
    x: Sequence[float],
    y: Sequence[float],
    fits: Iterable[CurveFit],
    *,
    title: str,
    y_title: str,
    level: float = 0.95,
    x_max: float | None = None,
    points_name: str = "published",
) -> go.Figure:
    """Points, each fitted curve, and the prediction band of the first fit.

    Parameters
    ----------
    x, y : sequence of float
        Measured CPUs [1] and values (RPS, CPS or Gbps).
    fits : iterable of CurveFit
        Fitted models; the first gets its ``level`` prediction interval drawn as a band.
    title, y_title : str
        Figure and y-axis titles.
    level : float
        Coverage of the band.
    x_max : float, optional
        Extend the curves to this many CPUs.
    points_name : str
        Legend name of the points: ``published``, ``measured`` or ``simulated``.
    """
    fits = list(fits)
    xs = np.linspace(min(x), max(x_max or max(x), max(x)), 200)
    fig = go.Figure()
    if fits:
        lo, hi = fits[0].predict_interval(xs, level=level, kind="prediction")
        fig.add_trace(
            go.Scatter(
                x=np.r_[xs, xs[::-1]],
                y=np.r_[hi, lo[::-1]],
                fill="toself",
                line={"width": 0},
                fillcolor="rgba(31,119,180,0.15)",
                name=f"{level:.0%} prediction ({fits[0].model})",
                hoverinfo="skip",
            )
        )
    for f in fits:
        fig.add_trace(
            go.Scatter(
                x=xs, y=f.predict(xs), mode="lines", name=f"{f.model} (MAPE {f.mape_pct_:.1f}%)"
            )
        )
    fig.add_trace(
        go.Scatter(
            x=list(x),
            y=list(y),
            mode="markers",
            name=text(points_name),
            marker={"size": 9, "color": "black"},
        )
    )
    fig.update_layout(
        title=title,
        xaxis_title="CPUs",
        yaxis_title=y_title,
        template=TEMPLATE,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def plateau_figure(
    series: Sequence[ReferenceSeries], link_gbps: float, wire_bytes: dict[str, float]
) -> go.Figure:
    """RPS against CPUs for large responses, with the test link's RPS ceiling per series.

    Parameters
    ----------
    series : sequence of dict
        Reference series with ``x``, ``y``, ``protocol``, ``file_size``.
    link_gbps : float
        Bandwidth of the test link [Gbit/s].
    wire_bytes : dict of str to float
        Bytes on the wire per response, keyed by ``"protocol file_size"``.
    """
    fig = go.Figure()
    colors = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
    for i, s in enumerate(series):
        key = f"{s['protocol']} {s['file_size']}"
        color = colors[i % len(colors)]
        fig.add_trace(
            go.Scatter(x=s["x"], y=s["y"], mode="lines+markers", name=key, line={"color": color})
        )
        ceiling = link_gbps * 1e9 / 8 / wire_bytes[key]
        # The ceilings of the series lie close together: name them in the legend, not in
        # annotations that would sit on top of each other.
        fig.add_trace(
            go.Scatter(
                x=[min(s["x"]), max(s["x"])],
                y=[ceiling, ceiling],
                mode="lines",
                line={"dash": "dot", "color": color},
                name=f"{key} ceiling: {link_gbps:g} Gbps / {wire_bytes[key]:,.0f} B per response",
                hovertemplate="%{y:,.0f} RPS<extra></extra>",
            )
        )
    fig.update_layout(
        title="Where the 100 KB curves flatten: the network, not the CPUs",
        xaxis_title="CPUs",
        yaxis_title="requests per second",
        template=TEMPLATE,
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def latency_throughput_figure(trials: pd.DataFrame, sla_p99_ms: float) -> go.Figure:
    """p99 latency against RPS, one line per vCPU count, with the SLA line.

    Parameters
    ----------
    trials : pandas.DataFrame
        Trial rows (``vcpus``, ``connections``, ``rps``, ``latency_p99_ms``, ``valid``).
    sla_p99_ms : float
        The SLA [ms].
    """
    fig = go.Figure()
    for v, grp in trials.sort_values(["vcpus", "connections"]).groupby("vcpus"):
        valid = grp["valid"].astype(bool)
        fig.add_trace(
            go.Scatter(
                x=grp["rps"],
                y=grp["latency_p99_ms"],
                mode="lines+markers",
                name=f"{v} vCPU",
                marker={"symbol": ["circle" if ok else "circle-open" for ok in valid], "size": 9},
                text=[
                    f"t{t} c{c}{'' if ok else ' (invalid)'}"
                    for t, c, ok in zip(grp["threads"], grp["connections"], valid, strict=True)
                ],
                hovertemplate="%{x:,.0f} rps, p99 %{y:.2f} ms, %{text}<extra></extra>",
            )
        )
    # A trace, not add_hline's annotation: on a log axis that annotation lands at 10^y.
    rps = [float(v) for v in trials["rps"] if math.isfinite(float(v))] or [0.0, 1.0]
    fig.add_trace(
        go.Scatter(
            x=[min(rps), max(rps)],
            y=[sla_p99_ms, sla_p99_ms],
            mode="lines",
            line=_DASH_SLA,
            name=f"SLA p99 {sla_p99_ms:g} ms",
            hoverinfo="skip",
        )
    )
    p99 = [float(v) for v in trials["latency_p99_ms"] if math.isfinite(float(v)) and float(v) > 0]
    lo = min([*p99, sla_p99_ms]) / 1.5
    hi = max([*p99, sla_p99_ms]) * 1.5
    fig.update_layout(
        title="p99 latency against throughput (hollow: invalid trial)",
        xaxis_title="requests per second",
        yaxis_title="p99 latency [ms]",
        yaxis={"type": "log", "range": [math.log10(lo), math.log10(hi)]},
        template=TEMPLATE,
    )
    return fig


def options_frame(rec: Recommendation, top: int = 15) -> pd.DataFrame:
    """The cheapest options as a DataFrame (one row per option).

    ``label`` names the option on a chart: its instance type, with its region when the same
    type is offered in several regions among the options (a catalog of several regions).
    """
    rows = [o.to_dict(rec.target_rps) for o in rec.options[:top]]
    df = pd.DataFrame(rows)
    df["rps_per_usd_hour"] = df["capacity_rps_per_instance"] / df["price_usd_hour"]
    repeated = df["instance_type"].duplicated(keep=False)
    df["label"] = [
        f"{t} ({r})" if rep else t
        for t, r, rep in zip(df["instance_type"], df["region"], repeated, strict=True)
    ]
    return df


def price_performance_figure(rec: Recommendation, top: int = 15) -> go.Figure:
    """Capacity under the SLA per dollar-hour of each option's instance type."""
    df = options_frame(rec, top).sort_values("rps_per_usd_hour")
    fig = go.Figure()
    for provider, grp in df.groupby("provider"):
        fig.add_trace(
            go.Bar(
                y=[text(t) for t in grp["label"]],
                x=grp["rps_per_usd_hour"],
                orientation="h",
                name=provider,
                text=[f"{v:,.0f}" for v in grp["rps_per_usd_hour"]],
                hovertemplate="%{y}: %{x:,.0f} RPS per $/hour<extra></extra>",
            )
        )
    fig.update_layout(
        title="Price-performance: RPS under the SLA per $ per hour",
        xaxis_title="RPS per $/hour",
        template=TEMPLATE,
        # At most about 600 px: the chart fits a printed page (A4 landscape).
        height=min(600, max(350, 22 * len(df) + 140)),
        yaxis={"categoryorder": "trace"},
        # One bar per instance type: side by side would shift them off their labels.
        barmode="overlay",
    )
    return fig


def cost_figure(rec: Recommendation, top: int = 15) -> go.Figure:
    """Hourly cost of each option against the instances to buy at the confidence.

    Each point is one option of the options table, at the count that keeps the headroom with
    the recommendation's confidence (the count to buy) and that fleet's cost; its label is
    the option's rank (``#`` in the options table), the instance type is in the hover text.
    Options that share a point share one label ("2, 3", "4-8"). Options with no count at the
    confidence are left out. The x axis is logarithmic with whole-number ticks.
    """
    df = options_frame(rec, top)
    df["rank"] = range(1, len(df) + 1)
    df = df[df["count_at_confidence"].notna()].copy()
    df["buy"] = df["count_at_confidence"].astype(int)
    df["buy_cost"] = df["hourly_cost_at_confidence_usd"].astype(float)
    fig = go.Figure()
    for provider, grp in df.groupby("provider"):
        shared = grp.groupby(["buy", "buy_cost"], sort=False)
        xs, ys, labels, hover = [], [], [], []
        for key, pts in shared:
            n, cost = cast(tuple[int, float], key)
            xs.append(int(n))
            ys.append(float(cost))
            labels.append(_ranks(list(pts["rank"])))
            hover.append(
                "<br>".join(
                    f"#{r} {text(t)}" for r, t in zip(pts["rank"], pts["label"], strict=True)
                )
            )
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers+text",
                name=text(provider),
                text=labels,
                textposition="middle right",
                textfont={"size": 11},
                customdata=hover,
                marker={"size": 10},
                hovertemplate="%{customdata}<br>%{x} instances, $%{y:.2f}/hour<extra></extra>",
            )
        )
    counts = sorted({int(v) for v in df["buy"]}) or [1]
    fig.update_layout(
        title=f"Cost against fleet size for {rec.target_rps:,.0f} RPS: the instances to buy "
        f"at {rec.confidence:.0%} (labels: # in the options table)",
        xaxis={
            "title": {"text": f"instances to buy (count at {rec.confidence:.0%})"},
            "type": "log",
            "tickvals": integer_log_ticks(counts[0], counts[-1]),
            "tickformat": "d",
            "range": [math.log10(counts[0]) - 0.08, math.log10(counts[-1]) + 0.15],
        },
        yaxis={"title": {"text": "$ per hour"}, "tickprefix": "$", "tickformat": ".2f"},
        template=TEMPLATE,
        height=450,
    )
    return fig


def _ranks(ranks: list[int]) -> str:
    """Ranks as a short label: runs of consecutive ranks as ranges (``"1, 4-8"``)."""
    out: list[str] = []
    for r in sorted(ranks):
        if out and out[-1].split("-")[-1] == str(r - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ", ".join(out)


def integer_log_ticks(lo: float, hi: float) -> list[int]:
    """Whole-number ticks for a logarithmic axis from ``lo`` to ``hi`` (1, 2, 5, 10, 20, ...).

    When the range spans less than a decade, 3 and 7 (and 30, 70, ...) join in.
    """
    lo = max(1.0, float(lo))
    hi = max(lo, float(hi))
    steps = (1, 2, 3, 5, 7) if hi / lo < 10 else (1, 2, 5)
    out: list[int] = []
    decade = 1
    while decade <= hi * 10:
        for m in steps:
            v = m * decade
            if lo / 1.5 <= v <= hi * 1.5:
                out.append(v)
        decade *= 10
    return out or [int(lo)]


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def family_names(rec: Recommendation, top: int | None = None) -> list[str]:
    """Families (``"provider family"``) of the recommendation's options, cheapest first.

    With ``top``, only those of the ``top`` cheapest options.
    """
    out: list[str] = []
    for o in rec.options[:top] if top is not None else rec.options:
        inst = o.capacity.instance
        name = f"{inst.provider} {inst.family}"
        if name not in out:
            out.append(name)
    return out


#: Plotly's default colours, one per family line.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)

#: One instance type on a family's line: vCPUs, capacity [RPS], name, interval low, high [RPS].
_Point = tuple[int, float, str, float, float]


def _family_points(
    rec: Recommendation, level: float, keep: set[str] | None
) -> dict[str, list[_Point]]:
    """Each family's (or only ``keep``'s) instance types, with their ``level`` interval."""
    points: dict[str, list[_Point]] = {}
    for o in rec.options:
        inst = o.capacity.instance
        name = f"{inst.provider} {inst.family}"
        if keep is not None and name not in keep:
            continue
        lo, hi = o.capacity.interval(level)
        points.setdefault(name, []).append(
            (inst.vcpus, o.capacity.capacity_rps, inst.instance_type, lo, hi)
        )
    return points


def _family_traces(name: str, pts: list[_Point], color: str, level: float) -> list[go.Scatter]:
    """A family's line with error bars, and its shaded band where it has two points or more."""
    xs = [p[0] for p in pts]
    out = []
    if len(pts) > 1:
        out.append(
            go.Scatter(
                x=xs + xs[::-1],
                y=[p[4] for p in pts] + [p[3] for p in pts][::-1],
                fill="toself",
                fillcolor=_rgba(color, 0.12),
                line={"width": 0},
                name=f"{text(name)} {level:.0%} range",
                legendgroup=name,
                showlegend=False,
                hoverinfo="skip",
            )
        )
    out.append(
        go.Scatter(
            x=xs,
            y=[p[1] for p in pts],
            mode="lines+markers",
            name=text(name),
            legendgroup=name,
            line={"color": color},
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [p[4] - p[1] for p in pts],
                "arrayminus": [p[1] - p[3] for p in pts],
                "thickness": 1,
                "width": 3,
            },
            text=[text(p[2]) for p in pts],
            hovertemplate="%{text}: %{y:,.0f} RPS at %{x} vCPUs<extra></extra>",
        )
    )
    return out


def capacity_curves_figure(
    rec: Recommendation,
    level: float = 0.95,
    families_of_top: int | None = None,
    families: Sequence[str] | None = None,
) -> go.Figure:
    """Capacity under the SLA of one instance against its vCPUs, one line per family.

    Every instance type the recommendation considered is on a line (or only those of the
    families of the ``families_of_top`` cheapest options, or only ``families``, named as
    `family_names` names them), with the ``level`` interval of its capacity as error bars and
    a shaded band. The axis is per instance, so the target is not drawn as a line across it:
    a star marks the decision's instance type at the load each of its instances carries at
    the target (the target divided by the count to buy at the confidence).
    """
    keep: set[str] | None = None
    if families is not None:
        keep = set(families)
    elif families_of_top is not None:
        keep = set(family_names(rec, families_of_top))
    points = _family_points(rec, level, keep)
    fig = go.Figure()
    for k, (name, pts) in enumerate(sorted(points.items())):
        for trace in _family_traces(name, sorted(set(pts)), PALETTE[k % len(PALETTE)], level):
            fig.add_trace(trace)
    first = rec.options[0]
    n_buy = first.count_at_confidence or first.count
    inst = first.capacity.instance
    fig.add_trace(
        go.Scatter(
            x=[inst.vcpus],
            y=[rec.target_rps / n_buy],
            mode="markers",
            marker={"symbol": "star", "size": 15, "color": "firebrick"},
            name=f"load per instance: {n_buy} x {text(inst.instance_type)}",
            hovertemplate=f"{rec.target_rps:,.0f} RPS / {n_buy} = %{{y:,.0f}} RPS per "
            "instance<extra></extra>",
        )
    )
    vcpus = [p[0] for pts in points.values() for p in pts] + [inst.vcpus]
    rps = [v for pts in points.values() for p in pts for v in (p[3], p[4]) if v > 0]
    rps.append(rec.target_rps / n_buy)
    fig.update_layout(
        title=f"Capacity per instance under the SLA, by family (bands: {level:.0%} range)",
        xaxis={
            "title": {"text": "vCPUs per instance"},
            "type": "log",
            "tickvals": integer_log_ticks(min(vcpus), max(vcpus)),
            "tickformat": "d",
        },
        yaxis={
            "title": {"text": "RPS per instance"},
            "type": "log",
            "tickvals": integer_log_ticks(min(rps), max(rps)),
            "tickformat": "~s",
        },
        template=TEMPLATE,
        height=480,
        legend={"font": {"size": 11}},
    )
    return fig


_SHORT = {
    "performance": "perf.",
    "price-performance": "price-perf.",
    "reverse_proxy": "proxy",
    "api_gateway": "API gw",
    "static": "",
}


def _short_label(rows: pd.DataFrame, i: int, extra: Sequence[str]) -> str:
    """A bar's label, one short line each: the compared families, the kind, the scenario."""
    comparison = " / ".join(
        part.strip().removesuffix("-standard")
        for part in str(rows["comparison"].iloc[i]).split("/")
    )
    words = [_SHORT.get(str(rows[c].iloc[i]), str(rows[c].iloc[i])) for c in extra]
    return "<br>".join(text(w) for w in (comparison, *words) if w)


def ratio_figure(rows: pd.DataFrame, title: str) -> go.Figure:
    """Published ratios next to the ratios recomputed from this package's data.

    Parameters
    ----------
    rows : pandas.DataFrame
        Columns ``comparison``, ``published`` and ``recomputed`` (ratios, 1 = equal), and
        optionally ``kind`` and ``scenario``, which join the bar's (short, two-line) label.
        With ``published_low``/``published_high`` (and ``recomputed_low``/``recomputed_high``)
        the bar stands at the midpoint and an error bar spans the range: a study that
        published 1.52 to 1.68 shows both ends.
    title : str
        Figure title.
    """
    extra = [c for c in ("kind", "scenario") if c in rows]
    labels = [_short_label(rows, i, extra) for i in range(len(rows))]
    # One bar per category and trace: a repeated category would stack its bars.
    seen: dict[str, int] = {}
    for i, lab in enumerate(labels):
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] > 1:
            labels[i] = f"{lab} #{seen[lab]}"

    def bar(kind: str, name: str) -> go.Bar:
        mid = [float(v) for v in rows[kind]]
        ranged = f"{kind}_low" in rows and f"{kind}_high" in rows
        lows = [float(v) for v in rows[f"{kind}_low"]] if ranged else mid
        highs = [float(v) for v in rows[f"{kind}_high"]] if ranged else mid
        return go.Bar(
            x=labels,
            y=mid,
            name=name,
            # A range's ends are in the hover text (and the table above the chart): printed on
            # the bar they would shrink to nothing beside the whisker.
            text=[
                f"{lo:.2f}" if abs(hi - lo) < 0.005 else f"{lo:.2f}-{hi:.2f}"
                for lo, hi in zip(lows, highs, strict=True)
            ],
            texttemplate=[
                "" if abs(hi - lo) >= 0.005 else "%{text}"
                for lo, hi in zip(lows, highs, strict=True)
            ],
            textposition="outside",
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [h - m for h, m in zip(highs, mid, strict=True)],
                "arrayminus": [m - lo for m, lo in zip(mid, lows, strict=True)],
                "visible": ranged,
                "thickness": 1.5,
                "width": 6,
            },
            hovertemplate="%{x}: %{text}<extra>" + name + "</extra>",
        )

    fig = go.Figure()
    fig.add_trace(bar("published", "published (range: whiskers)"))
    fig.add_trace(bar("recomputed", "recomputed here"))
    fig.add_hline(y=1.0, line={"dash": "dot"})
    ends = [1.0, *rows["published"], *rows["recomputed"]]
    ends += [v for c in ("published_high", "recomputed_high") if c in rows for v in rows[c]]
    fig.update_layout(
        title=title,
        yaxis_title="ratio (1 = equal)",
        yaxis_range=[0, max(ends) * 1.2],
        barmode="group",
        template=TEMPLATE,
        xaxis={"tickangle": 0, "automargin": True, "tickfont": {"size": 11}},
        uniformtext={"minsize": 10, "mode": "hide"},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
    )
    return fig


def tornado_figure(
    rows: Sequence[Sensitivity], baseline_usd_hour: float, confidence: float, *, top: int = 8
) -> go.Figure:
    """What the fleet cost at the confidence is most sensitive to (a tornado chart).

    Inputs that do not move the cost are left out (the sensitivity table lists them).

    Parameters
    ----------
    rows : sequence of sizing.analyses.sensitivity.Sensitivity
        Largest swing first.
    baseline_usd_hour : float
        Fleet cost at the confidence with every input at its point value [USD/h].
    confidence : float
        The confidence of the counts.
    top : int
        Inputs to show.
    """
    moving = [r for r in rows if r.swing > 1e-9]
    rows = moving[:top][::-1]
    labels = [
        "<br>".join(
            text(line)
            for line in (
                *_wrap(r.input.label, 34),
                f"{_num(r.input.low)}-{_num(r.input.high)}"
                f"{'' if r.input.unit == 'x' else ' ' + r.input.unit}"
                + (" (estimate)" if r.input.kind == "estimate" else f" ({r.input.kind})"),
            )
        )
        for r in rows
    ]
    fig = go.Figure()
    for end, color, name in (
        ("low", "#4c78a8", "input at its low end"),
        ("high", "#f58518", "input at its high end"),
    ):
        costs = [getattr(r, f"cost_{end}") for r in rows]
        choice = [getattr(r, f"choice_{end}") for r in rows]
        fig.add_trace(
            go.Bar(
                y=labels,
                x=[(c - baseline_usd_hour) if c is not None else 0.0 for c in costs],
                base=baseline_usd_hour,
                orientation="h",
                name=name,
                marker={"color": color},
                customdata=[
                    [("-" if c is None else f"${c:,.2f}"), text(ch)]
                    for c, ch in zip(costs, choice, strict=True)
                ],
                hovertemplate="%{customdata[0]}/h: %{customdata[1]}<extra></extra>",
            )
        )
    fig.add_vline(x=baseline_usd_hour, line={"color": "black", "width": 1})
    fig.update_layout(
        title={
            "text": "What the answer is most sensitive to",
            "font": {"size": 14},
            "y": 0.98,
            "yanchor": "top",
        },
        barmode="overlay",
        xaxis={
            "title": {
                "text": f"fleet $ per hour at {confidence:.0%} (now ${baseline_usd_hour:,.2f})"
            },
            "tickprefix": "$",
            "tickformat": ".2f",
            "nticks": 5,
            "tickangle": 0,
        },
        template=TEMPLATE,
        height=110 + 44 * max(len(rows), 3),
        margin={"l": 10, "r": 10, "t": 70, "b": 50},
        legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom", "xanchor": "left"},
        yaxis={"automargin": True, "tickfont": {"size": 11}},
    )
    if not rows:
        fig.add_annotation(
            text="no uncertain input moves the cost across its range",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
        )
    return fig


def _num(v: float) -> str:
    return f"{v:.3g}"


def _wrap(label: str, width: int) -> list[str]:
    """``label`` broken at spaces into lines of at most about ``width`` characters."""
    return textwrap.wrap(label, width, break_long_words=False) or [label]


def clients_figure(clients: Sequence[dict[str, Any]]) -> go.Figure:
    """Each client's rate and p99 over time in a multi-client run: a lagging client at a glance.

    One line per client; each trial is a segment from the client's start to its end at its
    achieved rate (top) and its own p99 (bottom), on the coordinator's clock. The trials'
    common windows are shaded: a client that started late or ended early sits off its
    window, one short of its share sits under the others.

    Parameters
    ----------
    clients : sequence of dict
        `runners.clients.per_client` rows (``host``, ``trial_id``, ``start_s``, ``end_s``,
        ``common_start_s``, ``common_end_s`` [s], ``rps``, ``asked_rps`` [1/s], ``p99_ms``).
    """
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, subplot_titles=("rate", "p99")
    )
    hosts = list(dict.fromkeys(str(c["host"]) for c in clients))
    for i, host in enumerate(hosts):
        mine = [c for c in clients if c["host"] == host]
        for row, key, unit in ((1, "rps", "rps"), (2, "p99_ms", "ms")):
            xs: list[float | None] = []
            ys: list[float | None] = []
            texts: list[str] = []
            for c in mine:
                xs += [c["start_s"], c["end_s"], None]
                ys += [c[key], c[key], None]
                asked = f" of {c['asked_rps']:,.0f}" if c.get("asked_rps") else ""
                texts += [text(f"{c['trial_id']}{asked if key == 'rps' else ''}")] * 2 + [""]
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines+markers",
                    name=text(host),
                    legendgroup=text(host),
                    showlegend=row == 1,
                    line={"width": 3, "color": _client_color(i)},
                    text=texts,
                    hovertemplate=f"%{{y:,.2f}} {unit}, %{{text}}<extra>{text(host)}</extra>",
                ),
                row=row,
                col=1,
            )
    for start, end in sorted({(c["common_start_s"], c["common_end_s"]) for c in clients}):
        fig.add_vrect(x0=start, x1=end, fillcolor="grey", opacity=0.12, line_width=0)
    fig.update_layout(
        title="each client's rate and p99 over the run (shaded: the trials' common windows)",
        template=TEMPLATE,
        legend={"orientation": "h", "y": -0.15},
    )
    fig.update_yaxes(title_text="requests per second", row=1, col=1)
    fig.update_yaxes(title_text="p99 latency [ms]", row=2, col=1)
    fig.update_xaxes(title_text="seconds since the first trial's common start", row=2, col=1)
    return fig


def _client_color(i: int) -> str:
    import plotly.colors

    palette = plotly.colors.qualitative.Dark24
    return str(palette[i % len(palette)])
