"""Interactive exploration in JupyterLab: widgets that re-run ``recommend`` as they move.

`ExploreOptions` holds every knob; `run_options` is the one adapter from the knobs to the
``recommend`` call (zones and the pricing model included: `sizing.fleet.recommend.FleetRules`), so
that a new knob of ``recommend`` is wired here and nowhere else. `Explorer` draws the widgets,
the decision, the table and the charts, and redraws them on every change. The capacity chart
shows the families of the cheapest options; a list beside the knobs picks others.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sizing.catalog.load import Instance, filter_catalog
from sizing.errors import Infeasible, InputError
from sizing.fleet.recommend import Recommendation, recommend
from sizing.model.capacity import Workload

__all__ = ["ExploreOptions", "ExploreResult", "Explorer", "run_options"]

SIZES = {"0 B": 0, "1 KB": 1024, "10 KB": 10240, "100 KB": 102400, "1 MB": 1048576}
#: The explorer's pricing choices: label -> key of `sizing.catalog.load.PRICING_COLUMNS`.
PRICING = {
    "on-demand": "on-demand",
    "spot": "spot",
    "1-year commitment": "1y",
    "3-year commitment": "3y",
}


@dataclass(frozen=True)
class ExploreOptions:
    """Everything the explorer lets a user change.

    Attributes
    ----------
    target_rps : float
        Requests per second [1/s].
    sla_p99_ms : float
        p99 SLA [ms].
    headroom : float
        Spare fraction of each instance's capacity [1].
    redundancy : int
        Instances that may fail (N+k).
    zones : int
        Availability zones the fleet is spread over (1 = not spread; no zone is lost).
    protocol, scenario : str
        Workload.
    file_bytes : int
        Response body [B].
    provider, arch : str
        Catalog filters ("" = any).
    pricing_model : str
        A label of `PRICING` (types without that price are left out).
    confidence : float
        Probability for the count at the confidence.
    """

    target_rps: float = 1e6
    sla_p99_ms: float = 5.0
    headroom: float = 0.2
    redundancy: int = 0
    zones: int = 1
    protocol: str = "https"
    scenario: str = "static"
    file_bytes: int = 1024
    provider: str = ""
    arch: str = ""
    pricing_model: str = "on-demand"
    confidence: float = 0.95


@dataclass
class ExploreResult:
    """A recommendation and the options it could not apply."""

    rec: Recommendation | None
    not_applied: list[str] = field(default_factory=list)
    error: str = ""


def run_options(opts: ExploreOptions, catalog: Sequence[Instance]) -> ExploreResult:
    """Run ``recommend`` for ``opts``: the single adapter from the explorer's knobs.

    Returns
    -------
    ExploreResult
        The recommendation, or the one-line reason there is none (a filter that matches
        nothing, a target nothing meets), and the options that were not applied.
    """
    not_applied: list[str] = []
    try:
        if opts.pricing_model not in PRICING:
            raise InputError(
                f"unknown pricing {opts.pricing_model!r}; expected one of: {', '.join(PRICING)}"
            )
        instances = filter_catalog(catalog, provider=opts.provider or None, arch=opts.arch or None)
        work = Workload(opts.scenario, opts.protocol, opts.file_bytes, opts.sla_p99_ms)
        rec = recommend(
            opts.target_rps,
            instances,
            work,
            opts.headroom,
            opts.redundancy,
            confidence=opts.confidence,
            zones=opts.zones,
            pricing=PRICING[opts.pricing_model],
        )
    except (InputError, Infeasible) as exc:
        return ExploreResult(None, not_applied, str(exc))
    return ExploreResult(rec, not_applied)


class Explorer:
    """Sliders and pickers over the fast ``recommend`` path, with live table and charts.

    Parameters
    ----------
    catalog : sequence of Instance
        The instance catalog to choose from.
    options : ExploreOptions
        Where the knobs start.
    top : int
        Options in the table.
    """

    def __init__(
        self, catalog: Sequence[Instance], options: ExploreOptions | None = None, top: int = 10
    ) -> None:
        import ipywidgets as w

        self.catalog = list(catalog)
        self.top = top
        self.options = options or ExploreOptions()
        o = self.options
        style = {"description_width": "110px"}
        layout = w.Layout(width="380px")
        providers = sorted({i.provider for i in self.catalog})
        arches = sorted({i.arch for i in self.catalog})
        size_name = next((k for k, v in SIZES.items() if v == o.file_bytes), "1 KB")
        self.controls: dict[str, Any] = {
            "target_rps": w.FloatLogSlider(
                value=o.target_rps,
                base=10,
                min=3,
                max=8,
                step=0.05,
                description="target RPS",
                readout_format=".3s",
                continuous_update=False,
            ),
            "sla_p99_ms": w.FloatSlider(
                value=o.sla_p99_ms,
                min=1,
                max=50,
                step=0.5,
                description="p99 SLA [ms]",
                continuous_update=False,
            ),
            "headroom": w.FloatSlider(
                value=o.headroom,
                min=0,
                max=0.6,
                step=0.05,
                description="headroom",
                readout_format=".0%",
                continuous_update=False,
            ),
            "redundancy": w.IntSlider(
                value=o.redundancy,
                min=0,
                max=4,
                description="spares (N+k)",
                continuous_update=False,
            ),
            "zones": w.IntSlider(
                value=o.zones, min=1, max=3, description="zones", continuous_update=False
            ),
            "protocol": w.ToggleButtons(
                options=["http", "https"], value=o.protocol, description="protocol"
            ),
            "scenario": w.Dropdown(
                options=["static", "reverse_proxy", "api_gateway"],
                value=o.scenario,
                description="scenario",
            ),
            "file_bytes": w.Dropdown(
                options=list(SIZES), value=size_name, description="response size"
            ),
            "provider": w.Dropdown(
                options=[("any", ""), *((p, p) for p in providers)],
                value=o.provider,
                description="provider",
            ),
            "arch": w.Dropdown(
                options=[("any", ""), *((a, a) for a in arches)],
                value=o.arch,
                description="arch",
            ),
            "pricing_model": w.Dropdown(
                options=list(PRICING), value=o.pricing_model, description="pricing"
            ),
        }
        for c in self.controls.values():
            c.style = style
            c.layout = layout
            c.observe(self._changed, names="value")
        self.decision = w.HTML()
        self.table = w.HTML()
        self.charts = w.Output()
        self.status = w.HTML()
        #: Families on the capacity chart ("provider family"); the cheapest options' by default.
        self.families = w.SelectMultiple(
            description="chart families", rows=6, style=style, layout=layout
        )
        self.families.observe(self._families_changed, names="value")
        self._quiet = False
        self.rec: Recommendation | None = None
        left = w.VBox([*self.controls.values(), self.families], layout=w.Layout(width="400px"))
        self.widget = w.VBox([w.HBox([left, self.decision]), self.status, self.table, self.charts])
        self.refresh()

    def current(self) -> ExploreOptions:
        """The options the widgets show now."""
        values = {k: c.value for k, c in self.controls.items()}
        values["file_bytes"] = SIZES[values["file_bytes"]]
        return replace(self.options, **values)

    def _changed(self, _change: Any) -> None:
        self.refresh()

    def _families_changed(self, _change: Any) -> None:
        if not self._quiet and self.rec is not None:
            self._draw_charts(self.rec)

    def _draw_charts(self, rec: Recommendation) -> None:
        import plotly.io as pio

        from sizing.report import plots

        # The plotly mime type: JupyterLab draws it with its plotly extension, also inside an
        # output widget where an HTML page's scripts would not run. The outputs are set on the
        # widget itself (no output capture), which a batch run (papermill, nbval) also takes.
        figures = (
            plots.capacity_curves_figure(rec, families=list(self.families.value)),
            plots.cost_figure(rec, self.top),
        )
        self.charts.outputs = tuple(
            {
                "output_type": "display_data",
                "data": {
                    "application/vnd.plotly.v1+json": json.loads(pio.to_json(fig, validate=False)),
                    "text/plain": "plotly figure",
                },
                "metadata": {},
            }
            for fig in figures
        )

    def refresh(self) -> ExploreResult:
        """Recompute and redraw the decision, the table and the charts."""
        from sizing.report import plots, summary

        result = run_options(self.current(), self.catalog)
        self.rec = result.rec
        notes = "".join(
            f'<div style="color:#8a4b00">not applied: {summary.html.escape(n)}</div>'
            for n in result.not_applied
        )
        if result.rec is None:
            self.decision.value = (
                f'<div style="color:#a00;font-weight:700">{summary.html.escape(result.error)}</div>'
            )
            self.table.value = ""
            self.status.value = notes
            self.charts.outputs = ()
            return result
        rec = result.rec
        self.decision.value = summary.summary_html(summary.decision_summary(rec))
        self.table.value = summary.no_math(
            f"<h4>{summary.html.escape(summary.options_heading(rec))}</h4>"
            + summary.options_table(rec, self.top).to_html()
        )
        self.status.value = notes
        self._quiet = True
        try:
            self.families.options = plots.family_names(rec)
            self.families.value = tuple(plots.family_names(rec, self.top))
        finally:
            self._quiet = False
        self._draw_charts(rec)
        return result

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
