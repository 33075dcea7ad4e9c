"""Interactive exploration in JupyterLab: widgets that re-run the sizing as they move.

The widgets start at a `sizing.request.SizingRequest`'s values and hold request fields by
their names; `explore` turns the request they show into an answer with the one pipeline
(`sizing.pipeline.size`), and `decision_html` renders it, the decision sentence
(`sizing.pipeline.Answer.decision`) included, as the report does. A new input of the request
is wired here by adding its widget, nothing else. `Explorer` draws the widgets, the decision,
the table and the charts, and redraws them on every change. The capacity chart shows the
families of the cheapest options; a list beside the knobs picks others. The controls keep
their width at any window width (`LAYOUT_CSS`): the decision sits beside them or below.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from sizing.catalog.load import Instance, load_catalog
from sizing.errors import Infeasible, InputError
from sizing.fleet.counts import Recommendation
from sizing.pipeline import Answer, size
from sizing.request import SizingRequest
from sizing.vocabulary import CLIENTS
from sizing.workload.value import PROTOCOLS, SCENARIOS

if TYPE_CHECKING:  # ipywidgets loads only when the explorer is shown
    from ipywidgets import Widget

_T = TypeVar("_T")

__all__ = ["ExploreResult", "Explorer", "decision_html", "explore"]

SIZES = {"0 B": 0, "1 KB": 1024, "10 KB": 10240, "100 KB": 102400, "1 MB": 1048576}
#: The explorer's pricing choices: label -> the request's ``pricing``.
PRICING = {
    "on-demand": "on-demand",
    "spot": "spot",
    "1-year commitment": "1y",
    "3-year commitment": "3y",
}
#: Each control's width [px]: its description (110 px), the slider or picker, the readout.
CONTROL_WIDTH_PX = 380
#: The decision pane's width beside the controls [px]: narrower, it moves below them.
PANE_MIN_PX = 420
#: The explorer's style sheet (scoped by its class): the card and its side narrow to the pane,
#: long words wrap, a wide table scrolls inside its own box, the no-answer line wraps; a
#: toggle's buttons share the room beside its label (`ROW_CLASSES` puts the label there).
LAYOUT_CSS = """<style>
.ns-explorer .widget-html-content{min-width:0}
.ns-explorer .widget-toggle-buttons>div{display:flex;flex:1 1 0;min-width:0}
.ns-explorer .widget-toggle-buttons .widget-toggle-button{flex:1 1 0;min-width:0;width:auto}
.ns-explorer-pane{padding-left:12px;line-height:1.35;overflow-wrap:break-word;min-width:0}
.ns-explorer-pane dt{white-space:nowrap}
.ns-explorer-pane .ns-first{max-width:100%}
.ns-explorer-pane .ns-card{flex:1 1 340px;max-width:560px;min-width:0}
.ns-explorer-pane .ns-side{flex:1 1 300px;min-width:0}
.ns-explorer-pane .ns-side:empty{display:none}
.ns-no-answer{color:#a00;font-weight:700;white-space:normal}
.ns-why{font-size:12px;color:#555;white-space:normal}
.ns-table-box{overflow-x:auto;max-width:100%;line-height:1.35}
.ns-table-box h4{white-space:normal;margin:8px 0}
</style>"""
#: The classes that lay a control out as one row, its label beside it (ipywidgets' sliders and
#: dropdowns have them; its toggle buttons do not, and put their label above).
ROW_CLASSES = ("widget-inline-hbox", "jupyter-widget-inline-hbox")


@dataclass
class ExploreResult:
    """An answer, or the one-line reason there is none, and the options not applied."""

    answer: Answer | None
    not_applied: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def rec(self) -> Recommendation | None:
        """The answer's recommendation (None without an answer)."""
        return None if self.answer is None else self.answer.recommendation


def explore(request: SizingRequest) -> ExploreResult:
    """Size ``request`` with `sizing.pipeline.size`.

    A bad input or a target nothing meets is kept as the one-line reason there is no answer.
    """
    try:
        return ExploreResult(size(request))
    except (InputError, Infeasible) as exc:
        return ExploreResult(None, [], str(exc))


def reason_line(error: str) -> tuple[str, str]:
    """The reason there is no answer split into its first clause and the notes after it.

    Clauses are joined by "; " (`sizing.fleet.recommend`); one inside parentheses stays.
    """
    text = " ".join(error.split())
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith("; ", i):
            return text[:i], text[i + 2 :]
    return text, ""


def decision_html(result: ExploreResult) -> str:
    """The decision pane: the report's decision card, or one line saying why there is none.

    The notes after the reason (families left out, ...) fold under "details". The pane fits
    the width it is given (`LAYOUT_CSS`): the card narrows to 340 px and wraps its words.
    """
    from sizing.report import summary

    e = summary.html.escape
    if result.answer is None:
        line, rest = reason_line(result.error)
        more = f'<details class="ns-why"><summary>details</summary>{e(rest)}</details>'
        return (
            f'<div class="ns-explorer-pane {summary.NO_MATH}">'
            f'<div class="ns-no-answer">No answer: {e(line)}</div>{more if rest else ""}</div>'
        )
    from sizing.analyses.baseline import against_on_demand

    # A spot or committed plan against on-demand on the total bill, as the terminal and report.
    other = against_on_demand(result.answer)
    against = other["text"] if other is not None else ""
    s = summary.decision_summary(result.answer.recommendation, against=against)
    return f'<div class="ns-explorer-pane">{summary.summary_html(s)}</div>'


def _with(options: list[tuple[str, _T]], value: _T, label: str) -> list[tuple[str, _T]]:
    """``options`` with ``value`` among them (as ``label``): the request's own stays shown."""
    return options if value in [v for _, v in options] else [*options, (label, value)]


def sliders(o: SizingRequest) -> dict[str, Widget]:
    """The request's numbers as sliders, each range widened to hold the request's value."""
    import ipywidgets as w

    log_rps = math.log10(max(o.rps, 1.0))
    return {
        "rps": w.FloatLogSlider(
            value=o.rps,
            base=10,
            min=min(3.0, log_rps),
            max=max(8.0, log_rps),
            step=0.05,
            description="target RPS",
            readout_format=".3s",
            continuous_update=False,
        ),
        "sla_p99_ms": w.FloatSlider(
            value=o.sla_p99_ms,
            min=min(1.0, o.sla_p99_ms),
            max=max(50.0, o.sla_p99_ms),
            step=0.5,
            description="p99 SLA [ms]",
            continuous_update=False,
        ),
        "headroom": w.FloatSlider(
            value=o.headroom,
            min=0,
            max=max(0.6, o.headroom),
            step=0.05,
            description="headroom",
            readout_format=".0%",
            continuous_update=False,
        ),
        "redundancy": w.IntSlider(
            value=o.redundancy,
            min=0,
            max=max(4, o.redundancy),
            description="spares (N+k)",
            continuous_update=False,
        ),
        "zones": w.IntSlider(
            value=o.zones, min=1, max=max(3, o.zones), description="zones", continuous_update=False
        ),
    }


def pickers(o: SizingRequest, catalog: list[Instance]) -> dict[str, Widget]:
    """The request's choices as pickers; a value off the usual list is added to it."""
    import ipywidgets as w

    providers = [("any", ""), *((p, p) for p in sorted({i.provider for i in catalog}))]
    arches = [("any", ""), *((a, a) for a in sorted({i.arch for i in catalog}))]
    return {
        "protocol": w.ToggleButtons(
            options=list(PROTOCOLS), value=o.protocol, description="protocol"
        ),
        "scenario": w.Dropdown(
            options=_with([(x, x) for x in SCENARIOS], o.scenario, o.scenario),
            value=o.scenario,
            description="scenario",
        ),
        "file_bytes": w.Dropdown(
            options=_with(list(SIZES.items()), o.file_bytes, f"{o.file_bytes:,} B"),
            value=o.file_bytes,
            description="response size",
        ),
        "providers": w.Dropdown(
            options=_with(providers, o.providers, o.providers),
            value=o.providers,
            description="provider",
        ),
        "arch": w.Dropdown(options=_with(arches, o.arch, o.arch), value=o.arch, description="arch"),
        "pricing": w.Dropdown(
            options=_with(list(PRICING.items()), o.pricing, o.pricing),
            value=o.pricing,
            description="pricing",
        ),
        # Egress ranks with compute: where clients are moves the bill most of all.
        "clients": w.ToggleButtons(
            options=_with([(x, x) for x in CLIENTS], o.clients, o.clients),
            value=o.clients,
            description="clients",
        ),
    }


class Explorer:
    """Sliders and pickers over the fast ``recommend`` path, with live table and charts.

    Parameters
    ----------
    request : SizingRequest, optional
        Where the knobs start (default: the request's defaults, as ``recommend``'s).
    """

    def __init__(self, request: SizingRequest | None = None) -> None:
        import ipywidgets as w

        self.request = request or SizingRequest()
        o = self.request
        self.top = o.top or 10
        self.catalog = load_catalog(list(o.catalog))
        style = {"description_width": "110px"}
        layout = w.Layout(width=f"{CONTROL_WIDTH_PX}px")
        self.controls: dict[str, Widget] = {**sliders(o), **pickers(o, self.catalog)}
        for c in self.controls.values():
            c.style = style
            c.layout = layout
            for name in ROW_CLASSES:  # every label beside its control, as wide as the others
                c.add_class(name)
            c.observe(self._changed, names="value")
        # The decision beside the controls while both fit, below them when not; the controls
        # keep their width whatever the pane holds (a long reason, a wide card or table).
        self.decision = w.HTML(layout=w.Layout(flex=f"1 1 {PANE_MIN_PX}px", min_width="0"))
        self.table = w.HTML(layout=w.Layout(min_width="0"))
        self.charts = w.Output(layout=w.Layout(min_width="0"))
        self.status = w.HTML()
        #: Families on the capacity chart ("provider family"); the cheapest options' by default.
        self.families = w.SelectMultiple(
            description="chart families", rows=6, style=style, layout=layout
        )
        self.families.observe(self._families_changed, names="value")
        self._quiet = False
        self.rec: Recommendation | None = None
        column = f"{CONTROL_WIDTH_PX + 20}px"
        left = w.VBox(
            [*self.controls.values(), self.families],
            layout=w.Layout(width=column, min_width=column, flex=f"0 0 {column}"),
        )
        top = w.HBox(
            [left, self.decision],
            layout=w.Layout(flex_flow="row wrap", align_items="flex-start", width="100%"),
        )
        css = w.HTML(LAYOUT_CSS, layout=w.Layout(display="none"))
        self.widget = w.VBox([css, top, self.status, self.table, self.charts])
        self.widget.add_class("ns-explorer")
        self.refresh()

    def current(self) -> SizingRequest:
        """The request the widgets show now."""
        return self.request.replace(**{k: c.value for k, c in self.controls.items()})

    def _changed(self, _change: object) -> None:
        self.refresh()

    def _families_changed(self, _change: object) -> None:
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

        try:
            result = explore(self.current())
        except InputError as exc:  # a combination of widget values the request refuses
            result = ExploreResult(None, [], str(exc))
        self.rec = result.rec
        notes = "".join(
            f'<div style="color:#8a4b00">not applied: {summary.html.escape(n)}</div>'
            for n in result.not_applied
        )
        self.decision.value = decision_html(result)
        if result.rec is None:
            self.table.value = ""
            self.status.value = notes
            self.charts.outputs = ()
            return result
        rec = result.rec
        self.table.value = summary.no_math(
            f'<div class="ns-table-box"><h4>{summary.html.escape(summary.options_heading(rec))}'
            f"</h4>{summary.options_table(rec, self.top).to_html()}</div>"
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
