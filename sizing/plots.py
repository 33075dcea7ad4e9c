"""Plotly figure builders shared by the notebooks and the batch reports.

Each function takes plain data (fits, DataFrames, a `Recommendation`) and returns a
``plotly.graph_objects.Figure``; none of them computes a capacity or a price itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from sizing.curves import CurveFit

TEMPLATE = "plotly_white"
_DASH_SLA = {"dash": "dash", "color": "firebrick"}


def use_offline_renderer() -> None:
    """Render figures with plotly.js embedded in the notebook, so exported HTML works offline."""
    import plotly.io as pio

    pio.renderers.default = "notebook"


def fit_figure(
    x: Sequence[float],
    y: Sequence[float],
    fits: Iterable[CurveFit],
    *,
    title: str,
    y_title: str,
    level: float = 0.95,
    x_max: float | None = None,
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
            name="published",
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
    series: Sequence[dict[str, Any]], link_gbps: float, wire_bytes: dict[str, float]
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
    for s in series:
        key = f"{s['protocol']} {s['file_size']}"
        fig.add_trace(go.Scatter(x=s["x"], y=s["y"], mode="lines+markers", name=key))
        ceiling = link_gbps * 1e9 / 8 / wire_bytes[key]
        fig.add_hline(
            y=ceiling,
            line={"dash": "dot"},
            annotation_text=f"{link_gbps:g} Gbps link / {wire_bytes[key]:,.0f} B "
            f"per response ({key})",
        )
    fig.update_layout(
        title="Where the 100 KB curves flatten: the network, not the CPUs",
        xaxis_title="CPUs",
        yaxis_title="requests per second",
        template=TEMPLATE,
    )
    return fig


def latency_throughput_figure(trials: Any, sla_p99_ms: float) -> go.Figure:
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
    fig.add_hline(y=sla_p99_ms, line=_DASH_SLA, annotation_text=f"SLA p99 {sla_p99_ms:g} ms")
    fig.update_layout(
        title="p99 latency against throughput (hollow: invalid trial)",
        xaxis_title="requests per second",
        yaxis_title="p99 latency [ms]",
        yaxis_type="log",
        template=TEMPLATE,
    )
    return fig


def options_frame(rec: Any, top: int = 15) -> Any:
    """The cheapest options as a DataFrame (one row per instance type)."""
    import pandas as pd

    rows = [o.to_dict(rec.target_rps) for o in rec.options[:top]]
    df = pd.DataFrame(rows)
    df["rps_per_usd_hour"] = df["capacity_rps_per_instance"] / df["price_usd_hour"]
    return df


def price_performance_figure(rec: Any, top: int = 15) -> go.Figure:
    """Capacity under the SLA per dollar-hour of each option's instance type."""
    df = options_frame(rec, top).sort_values("rps_per_usd_hour")
    fig = go.Figure()
    for provider, grp in df.groupby("provider"):
        fig.add_trace(
            go.Bar(
                y=grp["instance_type"],
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
        height=max(350, 28 * len(df) + 150),
        yaxis={"categoryorder": "trace"},
    )
    return fig


def cost_figure(rec: Any, top: int = 15) -> go.Figure:
    """Hourly cost of each option against its fleet size."""
    df = options_frame(rec, top)
    fig = go.Figure()
    for provider, grp in df.groupby("provider"):
        fig.add_trace(
            go.Scatter(
                x=grp["count"],
                y=grp["hourly_cost_usd"],
                mode="markers+text",
                name=provider,
                text=grp["instance_type"],
                textposition="top center",
                marker={"size": 10},
                hovertemplate="%{text}: %{x} instances, $%{y:.2f}/hour<extra></extra>",
            )
        )
    fig.update_layout(
        title=f"Cost against fleet size for {rec.target_rps:,.0f} RPS",
        xaxis_title="instances",
        yaxis_title="$ per hour",
        xaxis_type="log",
        template=TEMPLATE,
    )
    return fig


def capacity_curves_figure(rec: Any) -> go.Figure:
    """Capacity under the SLA of one instance against its vCPUs, one line per family.

    Every instance type the recommendation considered is on a line; the dashed line is the
    target, which one instance alone would have to carry.
    """
    points: dict[str, list[tuple[int, float, str]]] = {}
    for o in rec.options:
        inst = o.capacity.instance
        points.setdefault(f"{inst.provider} {inst.family}", []).append(
            (inst.vcpus, o.capacity.capacity_rps, inst.instance_type)
        )
    fig = go.Figure()
    for name, pts in sorted(points.items()):
        pts.sort()
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                mode="lines+markers",
                name=name,
                text=[p[2] for p in pts],
                hovertemplate="%{text}: %{y:,.0f} RPS at %{x} vCPUs<extra></extra>",
            )
        )
    fig.add_hline(
        y=rec.target_rps, line=_DASH_SLA, annotation_text=f"target {rec.target_rps:,.0f} RPS"
    )
    fig.update_layout(
        title="Capacity per instance under the SLA, by family",
        xaxis_title="vCPUs per instance",
        yaxis_title="RPS per instance",
        xaxis_type="log",
        yaxis_type="log",
        template=TEMPLATE,
    )
    return fig


def ratio_figure(rows: Any, title: str) -> go.Figure:
    """Published ratios next to the ratios recomputed from this package's data.

    Parameters
    ----------
    rows : pandas.DataFrame
        Columns ``comparison``, ``published`` and ``recomputed`` (ratios, 1 = equal).
    title : str
        Figure title.
    """
    fig = go.Figure()
    fig.add_trace(go.Bar(x=rows["comparison"], y=rows["published"], name="published"))
    fig.add_trace(go.Bar(x=rows["comparison"], y=rows["recomputed"], name="recomputed here"))
    fig.add_hline(y=1.0, line={"dash": "dot"})
    fig.update_layout(title=title, yaxis_title="ratio", barmode="group", template=TEMPLATE)
    return fig
