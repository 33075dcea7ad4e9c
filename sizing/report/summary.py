"""The decision a report opens on, and the readable tables and appendix that follow it.

`decision_summary` turns a `Recommendation` into plain fields (what to buy, what it costs, how
sure, the runner-up); `summary_html` draws them. Fields the recommendation does not carry yet
(zones, per-zone counts, a pricing model, a decision paragraph) are read when present, so a
richer recommendation shows them without a change here. Every string that came from a user
(catalog fields, run labels, notes) is HTML-escaped where it reaches HTML.

Dollars are text, never LaTeX: JupyterLab typesets ``$...$`` in HTML outputs with MathJax, so
every HTML block and table made here carries MathJax's "ignore" classes (`NO_MATH`; `no_math`
wraps any other fragment), and Markdown text goes through `md_escape`.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import pandas as pd
from pandas.io.formats.style import Styler

from sizing.analyses.sensitivity import cost_at_confidence
from sizing.errors import Infeasible
from sizing.fleet.recommend import (
    HOURS_PER_MONTH,
    Option,
    Recommendation,
    usd_per_million,
    vcpus_by_family,
)
from sizing.paths import FITS_PATH
from sizing.report.sources import cited, name_sources, other_sources
from sizing.units import fmt_rps, fmt_sig, fmt_usd, fmt_usd_small
from sizing.workload.value import Workload

if TYPE_CHECKING:  # a figure is only passed through
    import plotly.graph_objects as go

    from sizing.analyses.sensitivity import Sensitivity

__all__ = [
    "NO_MATH",
    "DecisionSummary",
    "FleetChoice",
    "appendix_html",
    "decision_summary",
    "families_table",
    "figure_div",
    "md_escape",
    "model_version",
    "no_math",
    "options_heading",
    "options_table",
    "request_rows",
    "sensitivity_table",
    "summary_html",
    "tidy_table",
    "title_html",
]

_e = html.escape

#: Classes that tell MathJax (JupyterLab's, version 2 or 3) to leave an element's text alone.
NO_MATH = "mathjax_ignore tex2jax_ignore"


def no_math(fragment: str) -> str:
    """An HTML fragment that JupyterLab shows as written: ``$0.49/hour`` stays dollars."""
    return f'<div class="{NO_MATH}">{fragment}</div>'


def plural(n: int, word: str) -> str:
    """``"1 vCPU"``, ``"2 vCPUs"``: a count and its noun."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def sizes_text(work: Workload) -> str:
    """The response size, or the size mix with each size's share of requests.

    ``"1 KiB responses"``; ``"1 KiB (70%) and 50 KiB (30%) responses"``.
    """

    def kib(b: int) -> str:
        return f"{fmt_sig(b / 1024, 3)} KiB"

    mix = getattr(work, "size_mix", ()) or ()
    if len(mix) > 1:
        total = sum(w for _, w in mix) or 1.0
        parts = [f"{kib(b)} ({w / total:.0%})" for b, w in mix]
        return ", ".join(parts[:-1]) + f" and {parts[-1]} responses"
    return f"{kib(work.file_bytes)} responses"


@dataclass(frozen=True)
class FleetChoice:
    """One fleet: what to buy, what it costs, how sure."""

    instance_type: str
    provider: str
    region: str
    arch: str
    vcpus: int
    count: int
    count_at_confidence: int | None
    hourly_usd: float
    hourly_at_confidence_usd: float | None
    p_meet: float
    binding: str
    evidence: str
    zones: tuple[str, ...] = ()
    per_zone_counts: tuple[int, ...] = ()
    pricing_model: str = ""

    @property
    def monthly_usd(self) -> float:
        """Cost per month of 730 hours [USD]."""
        return self.hourly_usd * HOURS_PER_MONTH

    @property
    def monthly_at_confidence_usd(self) -> float | None:
        """Cost per month at the confidence count [USD]."""
        h = self.hourly_at_confidence_usd
        return None if h is None else h * HOURS_PER_MONTH


@dataclass(frozen=True)
class DecisionSummary:
    """The first screen of a report."""

    target_rps: float
    sla_p99_ms: float
    workload: str
    headroom: float
    redundancy: int
    confidence: float
    choice: FleetChoice
    runner_up: FleetChoice | None
    options: int
    simulated: bool = False
    measured_runs: tuple[str, ...] = ()
    decision_text: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    cheapest_at_confidence: tuple[str, float] | None = None
    #: The decision's numbers (`sizing.fleet.decision.decide`): what the headline shows.
    decision: Mapping[str, Any] | None = None
    limits: tuple[str, ...] = ()
    traffic: str = ""
    #: The answer's rules, as the decision states them (never a default).
    pricing: str = "on-demand"
    zones: int = 1
    zone_loss: int = 0
    #: The plan against the same request at on-demand prices, on the total bill ('' if none).
    against: str = ""


def _zones(o: Option) -> tuple[tuple[str, ...], tuple[int, ...]]:
    zones = getattr(o, "zones", None) or ()
    counts = getattr(o, "per_zone_counts", None) or getattr(o, "zone_counts", None) or ()
    if isinstance(zones, str):
        zones = (zones,)
    if isinstance(counts, Mapping):
        zones = zones or tuple(counts)
        counts = tuple(counts.values())
    return tuple(str(z) for z in zones), tuple(int(c) for c in counts)


def _choice(o: Option) -> FleetChoice:
    inst = o.capacity.instance
    zones, counts = _zones(o)
    n_conf = o.count_at_confidence
    return FleetChoice(
        instance_type=inst.instance_type,
        provider=inst.provider,
        region=inst.region,
        arch=inst.arch,
        vcpus=inst.vcpus,
        count=o.count,
        count_at_confidence=n_conf,
        hourly_usd=o.hourly_cost_usd,
        hourly_at_confidence_usd=None if n_conf is None else o.hourly_cost_at_confidence_usd,
        p_meet=o.p_meets_target,
        binding=o.capacity.binding_constraint,
        evidence={"own": "measured", "carried": "measured level carried"}.get(
            o.capacity.measured, "model (published tables and estimates)"
        ),
        zones=zones,
        per_zone_counts=counts,
        pricing_model=str(getattr(o, "pricing_model", "") or ""),
    )


def decision_summary(
    rec: Recommendation, *, decision_text: str = "", against: str = ""
) -> DecisionSummary:
    """What to buy, from a recommendation: its first option and the runner-up.

    Parameters
    ----------
    rec : Recommendation
        The answer (options in the order the recommendation ranks them).
    decision_text : str
        A paragraph that explains the choice; default the recommendation's own decision
        (its first sentence is `sizing.pipeline.Answer.decision`, the same everywhere).
    against : str
        The plan against on-demand prices (`sizing.analyses.baseline.against_on_demand`).
    """
    w = rec.workload
    ev = rec.evidence
    opts = rec.options
    try:
        cost, fleet = cost_at_confidence(rec)
        at_conf: tuple[str, float] | None = (fleet, cost)
    except Infeasible:
        at_conf = None
    return DecisionSummary(
        target_rps=rec.target_rps,
        sla_p99_ms=w.sla_p99_ms,
        workload=f"{w.scenario.replace('_', ' ')} {w.protocol.upper()}, {sizes_text(w)}",
        headroom=rec.headroom,
        redundancy=rec.redundancy,
        confidence=rec.confidence,
        choice=_choice(opts[0]),
        runner_up=_choice(opts[1]) if len(opts) > 1 else None,
        options=len(opts),
        simulated=bool(getattr(ev, "simulated", False)),
        measured_runs=tuple(getattr(ev, "runs", ()) or ()),
        decision_text=decision_text or str((rec.decision or {}).get("text", "")),
        decision=rec.decision,
        notes=tuple(getattr(ev, "notes", ()) or ()),
        cheapest_at_confidence=at_conf,
        limits=tuple(_short_note(n) for n in getattr(rec, "notes", ())),
        traffic=_traffic(rec),
        pricing=rec.rules.pricing,
        zones=rec.rules.zones,
        zone_loss=rec.rules.zone_loss,
        against=against,
    )


def _short_note(note: str) -> str:
    """A limit as the card shows it: what was left out or assumed, before the reasons.

    The whole note stays in the answer's ``notes`` (terminal, JSON) and the appendix.
    """
    head, sep, _ = note.partition("): ")
    return head + ")" if sep else note


def _traffic(rec: Recommendation) -> str:
    """One line on what serving the traffic costs for the first option ('' if not priced)."""
    t = getattr(rec, "traffic", None) or {}
    e = rec.options[0].egress if rec.options else None
    if not t or not e:
        return ""
    usd = e.get("usd_month")
    cost = "not priced" if usd is None else f"{fmt_usd(usd, 0)}/month"
    # The card keeps the volume and the last tier's price; the price table's source is in the
    # options' basis and the appendix, so the decision stays on the first page.
    basis = str(e.get("basis", ""))
    short = basis.split("; ")[0] + (")" if "; " in basis and "(" in basis.split("; ")[0] else "")
    return f"{t['gbps']:,.1f} Gbps to {t['clients']} clients: {cost} ({short})"


def _where(c: FleetChoice, s: DecisionSummary | None = None) -> str:
    d = (s.decision or {}) if s is not None else {}
    if s is not None and d.get("count_per_zone"):
        counts = "/".join(str(n) for n in d["count_per_zone"])
        z = "1 zone" if s.zones == 1 else f"{s.zones} zones, {counts} per zone"
        return f"{c.provider} {c.region}; {z}"
    if c.zones and c.per_zone_counts and len(c.zones) == len(c.per_zone_counts):
        z = ", ".join(f"{n} in {z}" for z, n in zip(c.zones, c.per_zone_counts, strict=True))
    elif c.zones:
        z = "zones " + ", ".join(c.zones)
    else:
        z = "zones not modelled"
    return f"{c.provider} {c.region}; {z}"


#: The decision card's style sheet (scoped by its classes).
_CARD_CSS = """<style>
.ns-first{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start;font-family:system-ui,sans-serif;
  max-width:1240px}
.ns-card{flex:0 0 560px;box-sizing:border-box;border:2px solid #1f4e79;border-radius:8px;
  padding:10px 14px;background:#f4f8fc}
.ns-card h2{margin:0;font-size:12px;color:#1f4e79;text-transform:uppercase;
  letter-spacing:.06em}
.ns-buy{font-size:26px;font-weight:700;margin:0;line-height:1.25}
.ns-cost{font-size:19px;margin:0 0 6px}
.ns-card dl{display:grid;grid-template-columns:96px 1fr;gap:2px 8px;margin:0;font-size:12.5px;
  line-height:1.35}
.ns-card dt{color:#555;font-weight:600;white-space:nowrap;width:auto;float:none}
.ns-card dd{margin:0}
.ns-warn{background:#fde2e1;border:1px solid #c00;padding:4px 8px;margin:6px 0;
  font-weight:700}
.ns-side{flex:1 1 420px;min-width:420px}
.ns-side dl{display:grid;grid-template-columns:70px 1fr;gap:2px 8px;margin:6px 0 0;
  font-size:12px;line-height:1.35}
.ns-side dt{color:#555;font-weight:600}
.ns-side dd{margin:0}
.ns-text-row{flex:1 1 100%}
.ns-text{font-size:13px;margin:6px 0 0}
</style>"""


def _runner_up(s: DecisionSummary, conf: str) -> str:
    """The card's runner-up: the decision's next best on its total bill (HTML)."""
    d, r = s.decision or {}, s.runner_up
    nb = d.get("next_best") or {}
    runner = (
        f"{nb['count']} &times; {_e(nb['instance_type'])} ({_e(nb['region'])}), "
        f"{fmt_usd(nb['total_monthly_usd'], 0)}/month in all"
        if nb.get("total_monthly_usd") is not None
        else f"{r.count} &times; {_e(r.instance_type)} ({_e(r.provider)}), "
        f"{fmt_usd(r.hourly_usd)}/h, P(meet) {r.p_meet:.0%}"
        + (
            f", {r.count_at_confidence} at {conf}: {fmt_usd(r.hourly_at_confidence_usd)}/h"
            if r.count_at_confidence is not None and r.hourly_at_confidence_usd is not None
            else ""
        )
        if r is not None
        else "none (only one instance type meets the target)"
    )
    return runner


def summary_html(s: DecisionSummary, side_html: str = "") -> str:
    """The decision as an HTML block, with ``side_html`` (e.g. the tornado chart) beside it.

    The headline is the count to buy: the one that keeps the headroom with the confidence (as
    the command line's decision); the point-estimate count and its P(meet) follow under
    "How sure". With no count at the confidence, the point-estimate count is the headline.
    """
    c = s.choice
    conf = f"{s.confidence:.0%}"
    at_conf = c.count_at_confidence is not None and c.hourly_at_confidence_usd is not None
    buy = c.count_at_confidence if at_conf else c.count
    hourly = (
        c.hourly_at_confidence_usd
        if at_conf and c.hourly_at_confidence_usd is not None
        else c.hourly_usd
    )
    basis_of_count = (
        f"the count that keeps the headroom with {conf} confidence"
        if at_conf
        else f"point estimate: no count keeps the headroom with {conf} confidence"
    )
    # The headline is the decision's fleet when there is one (`sizing.fleet.decision`, as in
    # the terminal: the point estimate when ranked by it); else the count above.
    d = s.decision or {}
    if d:
        buy = d.get("count", buy)
        hourly = d.get("hourly_cost_usd", hourly)
        if d.get("basis") == "point estimate":
            basis_of_count = "point estimate (ranked by the cost of the point estimate)"
    monthly = d.get("monthly_cost_usd", hourly * HOURS_PER_MONTH)
    egress = d.get("egress_monthly_usd")
    total = d.get("total_monthly_usd", monthly + (egress or 0.0))
    split = (
        f"{fmt_usd(monthly, 0)} instances + {fmt_usd(egress, 0)} egress; {fmt_usd(hourly)}/hour"
        if egress
        else f"{fmt_usd(hourly)}/hour, egress not priced"
    )
    sure = (
        f"<b>{c.count_at_confidence}</b> keep the headroom with {conf} confidence; the point "
        f"estimate, "
        f"{c.count} ({fmt_usd(c.hourly_usd)}/h), meets the target with P(meet) "
        f"<b>{c.p_meet:.0%}</b>"
        if at_conf
        else f"P(meet) <b>{c.p_meet:.0%}</b> at {c.count} instances; no count keeps the "
        f"headroom with {conf} confidence"
    )
    runner = _runner_up(s, conf)
    if s.cheapest_at_confidence is not None:
        fleet, cost = s.cheapest_at_confidence
        mine = f"{buy} x {c.instance_type}"
        if fleet != mine:
            sure += (
                f"; cheapest at {conf}: <b>{_e(fleet.replace(' x ', ' × '))}</b>, {fmt_usd(cost)}/h"
            )
    warn = ""
    if s.simulated:
        warn = '<div class="ns-warn">Rests on SIMULATED runs: not a measurement.</div>'
    basis = (
        "measured runs " + ", ".join(_e(x) for x in s.measured_runs)
        if s.measured_runs
        else "published tables and marked estimates (no runs of your own)"
    )
    pricing = f" ({_e(s.pricing)})"
    against = f"\n<dt>On-demand</dt><dd>{_e(s.against)}</dd>" if s.against else ""
    loss = f", survives losing {plural(s.zone_loss, 'zone')}" if s.zone_loss else ""
    text = f'<p class="ns-text">{_e(s.decision_text)}</p>' if s.decision_text else ""
    traffic = f"<dt>Traffic</dt><dd>{_e(s.traffic)}</dd>\n" if s.traffic else ""
    limits = (
        "<dt>Limits</dt><dd>" + "<br>".join(_e(n) for n in s.limits) + "</dd>\n" if s.limits else ""
    )
    extra = f"<dl>{traffic}{limits}</dl>" if traffic or limits else ""
    return f"""<div class="ns-first {NO_MATH}">
{_CARD_CSS}
<div class="ns-card" id="decision-summary">
<h2>Decision</h2>
<div class="ns-buy">{buy} &times; {_e(c.instance_type)}</div>
<div class="ns-cost">{fmt_usd(total, 0)}/month in all
<span style="font-size:13px;color:#555">{pricing}</span></div>
<div style="font-size:12px;color:#555">{split}</div>
<div style="font-size:12px;color:#555;margin:-4px 0 6px">{basis_of_count}</div>
{warn}
<dl>
<dt>Serves</dt><dd>{fmt_rps(s.target_rps)} RPS, p99 &le; {fmt_sig(s.sla_p99_ms)} ms,
{_e(s.workload)}; headroom {s.headroom:.0%}, N+{s.redundancy}{loss}</dd>
<dt>Where</dt><dd>{_e(_where(c, s))}; {plural(c.vcpus, "vCPU")} {_e(c.arch)} each</dd>
<dt>How sure</dt><dd>{sure}</dd>
<dt>Limit, basis</dt><dd>{_e(c.binding)}; {_e(c.evidence)}</dd>
<dt>Runner-up</dt><dd>{runner}</dd>{_carbon_line(d)}
<dt>Rests on</dt><dd>{basis}; {s.options} instance types qualify</dd>{against}
</dl>
</div>
<div class="ns-side">{side_html}{extra}</div>
<div class="ns-text-row">{text}</div>
</div>"""


def _carbon_line(decision: Mapping[str, Any]) -> str:
    """The decision card's carbon line ('' when the decision has none)."""
    c = decision.get("carbon")
    if not c:
        return ""
    text = (
        f"{fmt_sig(c['gco2e_per_mreq'])} gCO2e per million requests "
        f"({c['operational_g_per_hour']:.0f} g/h operational, "
        f"{c['embodied_g_per_hour']:.0f} g/h embodied; Cloud Carbon Footprint"
        + (", with estimates)" if c.get("estimate") else ")")
    )
    return f"\n<dt>Carbon</dt><dd>{_e(text)}</dd>"


def options_heading(rec: Recommendation) -> str:
    """The options table's heading, naming the order, the count and the prices."""
    if getattr(rec, "sort", "") == "cost-at-confidence":
        how = f"the count that keeps the headroom with {rec.confidence:.0%} confidence"
    else:
        how = "the point-estimate count"
    r = rec.rules
    zones = f"{r.zones} zone" + ("s" if r.zones > 1 else "")
    if r.zone_loss:
        zones += f", surviving the loss of {r.zone_loss}"
    return f"Options, cheapest total bill first ({how}; {r.pricing} prices; {zones})"


def _ranked(o: Option, rec: Recommendation) -> tuple[int, float, float]:
    """An option's count, $/hour and P(meet) as the options are ranked (at the confidence)."""
    if getattr(rec, "sort", "") == "cost-at-confidence" and o.count_at_confidence:
        return o.count_at_confidence, o.hourly_cost_at_confidence_usd, o.p_meets_at_confidence
    return o.count, o.hourly_cost_usd, o.p_meets_target


def options_table(rec: Recommendation, top: int = 10) -> Styler:
    """The cheapest options as a styled table: the total bill first, compute and egress beside.

    Every number is at the count the options are ranked by (`options_heading`); the terminal
    table and the JSON also give the point-estimate count and the vCPUs.

    Returns
    -------
    pandas.io.formats.style.Styler
        Escaped (catalog strings are data), index hidden, numbers formatted; about 1,200 px
        wide at 13 px type.
    """
    at_conf = getattr(rec, "sort", "") == "cost-at-confidence"
    count_header = f"Count at {rec.confidence:.0%}" if at_conf else "Count"
    rows = []
    for i, o in enumerate(rec.options[:top], start=1):
        n, hourly, p = _ranked(o, rec)
        inst = o.capacity.instance
        egress = (o.egress or {}).get("usd_month")
        mark = {"own": " *", "carried": " +"}.get(o.capacity.measured, "")
        cap = o.capacity.capacity_rps
        rows.append(
            {
                "#": i,
                "Instance": inst.instance_type + mark,
                "Where": f"{inst.provider} {inst.region}",
                count_header: n,
                "Total $/mo": fmt_usd(hourly * HOURS_PER_MONTH + (egress or 0.0), 0),
                "Compute $/mo": fmt_usd(hourly * HOURS_PER_MONTH, 0),
                "Egress $/mo": fmt_usd(egress, 0),
                "$/hour": fmt_usd(hourly),
                "$/M req.": fmt_usd_small(
                    usd_per_million(hourly + (egress or 0.0) / HOURS_PER_MONTH, rec.target_rps)
                ),
                "gCO2e/M": _grams(o, n, rec.target_rps),
                "RPS/instance": fmt_rps(cap),
                "Load": f"{rec.target_rps / (n * cap):.0%}" if n and cap else "-",
                "P(meet)": f"{p:.0%}",
                "Limited by": o.capacity.binding_constraint,
            }
        )
    df = pd.DataFrame(rows)
    left = [1, 2, 13]
    return _styled(df, "options-table", left, highlight_first=True)


def _grams(o: Option, n: int, target_rps: float) -> str:
    """gCO2e per million requests of ``n`` instances of an option (`sizing.model.carbon`)."""
    from sizing.model.carbon import cpu_load, fleet_carbon

    inst = o.capacity.instance
    c = fleet_carbon(inst, n, cpu_load(target_rps, n, o.capacity.cpu_peak_rps))
    return fmt_sig(c.per_million(target_rps))


def _styled(
    df: pd.DataFrame, table_id: str, left: Sequence[int], *, highlight_first: bool = False
) -> Styler:
    """A readable, escaped table: human headers, no index, 13 px type, no wrapping."""
    styles: list[Any] = [
        {
            "selector": "",
            "props": "border-collapse:collapse;font-size:13px;font-family:system-ui,sans-serif;",
        },
        {
            "selector": "th",
            "props": "background:#1f4e79;color:white;padding:4px 8px;text-align:right;"
            "white-space:nowrap;",
        },
        {
            "selector": "td",
            "props": "padding:3px 8px;border-bottom:1px solid #ddd;white-space:nowrap;"
            "text-align:right;",
        },
        *(
            {"selector": f"td.col{j}, th.col_heading.col{j}", "props": "text-align:left;"}
            for j in left
        ),
    ]
    if highlight_first:
        styles.append(
            {"selector": "tbody tr:first-child td", "props": "font-weight:700;background:#eaf2fb;"}
        )
    # The table's id is "T_" + uuid: the styles above are scoped to it.
    return (
        Styler(df, uuid=table_id, cell_ids=False)
        .hide(axis="index")
        .format(escape="html")
        .set_table_attributes(f'class="ns-table {NO_MATH}"')
        .set_table_styles(styles)
    )


def families_table(rec: Recommendation, top: int = 10) -> Styler:
    """VCPUs needed per family (cheapest size; fewest vCPUs over sizes), readable."""
    rows = [
        {
            "Family": f["family"],
            "Provider": f["provider"],
            "Arch": f["arch"],
            "Cheapest fleet": f"{f['cheapest_count']} x {f['cheapest_instance_type']}",
            "vCPUs in it": f["cheapest_total_vcpus"],
            "Fewest vCPUs (any size)": f["min_total_vcpus"],
            "$ / hour": fmt_usd(f["cheapest_hourly_cost_usd"]),
        }
        for f in vcpus_by_family(rec.options)[:top]
    ]
    return _styled(pd.DataFrame(rows), "families-table", [0, 1, 2, 3])


def sensitivity_table(rows: Sequence[Sensitivity], cost_now: float) -> Styler:
    """The tornado chart's numbers: each input's range and the fleet cost at each end."""

    def end(cost: float | None, choice: str) -> str:
        return "no option meets it" if cost is None else f"{fmt_usd(cost)} ({choice})"

    out = [
        {
            "Input": r.input.label,
            "Kind": r.input.kind,
            "Range": f"{fmt_sig(r.input.low)} to {fmt_sig(r.input.high)}"
            + ("" if r.input.unit == "x" else f" {r.input.unit}"),
            "Point": fmt_sig(r.input.value),
            "$ / hour at low end": end(r.cost_low, r.choice_low),
            "$ / hour at high end": end(r.cost_high, r.choice_high),
            "Swing": fmt_usd(r.swing),
        }
        for r in rows
    ]
    df = pd.DataFrame(out)
    return _styled(df, "sensitivity-table", [0, 1, 4, 5]).set_caption(
        f"Now: {fmt_usd(cost_now)} per hour"
    )


def title_html(rec: Recommendation, warning: str = "") -> str:
    """The report's one-line title, and a warning banner if any."""
    w = rec.workload
    warn = (
        f'<div style="background:#fde2e1;border:1px solid #c00;padding:4px 8px;'
        f'font-weight:700;margin:4px 0">{_e(warning)}</div>'
        if warning
        else ""
    )
    return (
        f'<h1 class="{NO_MATH}" style="font-family:system-ui,sans-serif;font-size:22px;'
        f'margin:0 0 8px">Sizing: {rec.target_rps:,.0f} RPS at p99 &le; '
        f"{fmt_sig(w.sla_p99_ms)} ms, "
        f"{_e(w.scenario.replace('_', ' '))} {_e(w.protocol.upper())}</h1>{warn}"
    )


def figure_div(fig: go.Figure, *, height: int | None = None) -> str:
    """A plotly figure as an HTML fragment, using the plotly.js the page already embeds."""
    if height is not None:
        fig.update_layout(height=height)
    return str(
        fig.to_html(full_html=False, include_plotlyjs=False, config={"displayModeBar": False})
    )


def model_version() -> str:
    """Package version and the date of the precomputed reference fits."""
    try:
        pkg = version("nginx-sizing")
    except PackageNotFoundError:
        pkg = "unknown"
    fits = FITS_PATH.name
    return f"nginx-sizing {pkg}, capacity model with reference fits {fits}"


def md_escape(text: str) -> str:
    """Text made literal in Markdown: HTML escaped, and ``$`` not read as LaTeX."""
    out = html.escape(text, quote=False)
    for ch in "\\`*_{}[]#|$":
        out = out.replace(ch, "\\" + ch)
    return out


def request_rows(rec: Recommendation, parameters: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The request a report answers, as labelled rows with units (what the model used).

    Workload and fleet rules are read from the recommendation (so a default shows as what it
    means: "no limit (keep-alive)", not ``0``); catalog filters and input files from
    ``parameters``, an empty one as "any" or "none".
    """
    w = rec.workload
    rules = getattr(rec, "rules", None)

    def listed(name: str, empty: str) -> str:
        v = parameters.get(name)
        items = [v] if isinstance(v, str) and v else [str(x) for x in v or []]
        return ", ".join(items) if items else empty

    rpc = w.requests_per_connection
    rows = [
        ("Target", f"{rec.target_rps:,.0f} requests/s"),
        ("p99 latency SLA", f"{fmt_sig(w.sla_p99_ms)} ms"),
        ("Scenario", w.scenario.replace("_", " ")),
        ("Protocol", f"{w.protocol.upper()}/{w.http_version}"),
        ("Response size", sizes_text(w).removesuffix(" responses")),
        (
            "Requests per connection",
            "no limit (keep-alive)" if math.isinf(rpc) else f"{rpc:g}",
        ),
    ]
    if w.protocol == "https":
        rows += [
            ("TLS key", w.tls_key),
            ("TLS sessions resumed", f"{w.tls_resumption:.0%} of new connections"),
        ]
    rows += [
        ("gzip", f"{w.gzip:.0%} of response bytes" if w.gzip else "off"),
        ("Network rates", "burst (up to)" if w.burst_network else "sustained (baseline)"),
        ("Internet-facing (AWS gateway limit)", "yes" if w.internet_facing else "no"),
        ("Environment", str(getattr(w, "environment", "vm"))),
        ("Headroom", f"{rec.headroom:.0%} of each instance's capacity spare"),
        ("Redundancy", f"N+{rec.redundancy}"),
    ]
    if rules is not None:
        rows += [
            (
                "Zones",
                f"{rules.zones}" + (f", {rules.zone_loss} may fail" if rules.zone_loss else ""),
            ),
            ("Pricing", rules.pricing),
        ]
    rows += [
        ("Confidence", f"{rec.confidence:.0%}"),
        ("Providers", listed("providers", "any")),
        ("Regions", listed("regions", "each provider's default")),
        ("Architectures", listed("arch", "any")),
        ("Families", listed("families", "any")),
        ("Catalog", listed("catalog", "the shipped catalog (data/catalog/instances.csv)")),
        ("Runs", listed("runs", "none (published tables and estimates)")),
        ("CPU profiles", listed("profiles", "none (the reference profile)")),
    ]
    if "mix" in parameters:
        mix = int(parameters["mix"] or 1)
        rows.append(("Instance types in one fleet", "one" if mix <= 1 else f"up to {mix}"))
    return rows


def appendix_html(
    rec: Recommendation,
    parameters: Mapping[str, Any],
    *,
    model_version: str,
    extra_sources: Sequence[str] = (),
) -> str:
    """The request as a labelled table, the model version, the catalog's date, each source.

    Parameters
    ----------
    rec : Recommendation
        The answer whose sources to name.
    parameters : mapping
        The report's inputs as given (for the catalog filters and input files).
    model_version : str
        Package and fit versions.
    extra_sources : sequence of str
        More source lines (e.g. the factor table's reasoning).
    """
    inputs = "".join(
        f'<tr><th style="text-align:left;padding:2px 12px 2px 0">{_e(k)}</th>'
        f'<td style="text-align:left;padding:2px 0">{_e(v)}</td></tr>'
        for k, v in request_rows(rec, parameters)
    )
    insts = [o.capacity.instance for o in rec.options]
    dates = sorted({i.source_date for i in insts})
    lines: list[str] = []
    for o in rec.options[:3]:
        lines += o.capacity.basis
    lines += list(extra_sources)
    docs = cited(" ".join(lines))
    pubs = "".join(
        f"<li><b>{_e(d.publisher)}</b>, &ldquo;{_e(d.title)}&rdquo;: {_e(d.gives)}</li>"
        for d in docs
    ) + "".join(f"<li>{_e(x)}</li>" for x in other_sources(lines))
    providers = sorted({(i.provider, i.region) for i in insts})
    as_of: dict[tuple[str, str], set[str]] = {}
    for i in insts:
        as_of.setdefault((i.provider, i.region), set()).add(i.source_date)
    prices = "".join(
        f"<li>{_e(p)} {_e(r)} {_e(rec.rules.pricing)} Linux prices and specifications, as of "
        f"{_e(', '.join(sorted(as_of[p, r])))}</li>"
        for p, r in providers
    )
    found: set[str] = set()
    for o in rec.options:
        e = o.egress or {}
        if e.get("basis"):
            i = o.capacity.instance
            found.add(f"{i.provider} {i.region} data transfer: {e['basis']}")
    egress = sorted(found)
    prices += "".join(f"<li>{_e(line)}</li>" for line in egress[:6])
    notes = "".join(f"<li>{_e(n)}</li>" for n in getattr(rec, "notes", ())) or "<li>none</li>"
    basis = "".join(f"<li>{_e(name_sources(b))}</li>" for b in once(rec.options[0].capacity.basis))
    font = "font-family:system-ui,sans-serif;font-size:13px"
    return f"""<div class="ns-appendix {NO_MATH}" style="{font}">
<h3>The request</h3><table id="inputs-table">{inputs}</table>
<h3>Versions</h3><p>Model: {_e(model_version)}. Catalog prices as of {_e(", ".join(dates))}.</p>
<h3>Sources the answer rests on</h3><ul>{pubs}</ul>
<h3>Prices and specifications</h3><ul>{prices}</ul>
<h3>Limits of the answer</h3><ul>{notes}</ul>
<h3>How the first option's capacity was computed</h3><ul>{basis}</ul>
</div>"""


def once(basis: Sequence[str]) -> list[str]:
    """Basis lines with a reason given before named, not printed again.

    ``env_packet_us = 0.3 us/packet (measured over nic): <the reason of env_request_us>``
    becomes ``env_packet_us = 0.3 us/packet (measured over nic): as env_request_us above``.
    """
    seen: dict[str, str] = {}
    out = []
    for line in basis:
        head, sep, why = line.partition("): ")
        name = head.split(" = ")[0]
        if sep and " = " in head and len(why) > 80 and why in seen:
            out.append(f"{head}): as {seen[why]} above")
            continue
        if sep and " = " in head:
            seen.setdefault(why, name)
        out.append(line)
    return out


def tidy_table(df: pd.DataFrame, *, digits: int = 3, table_id: str | None = None) -> Styler:
    """Any model or trial table, readable: numbers to ``digits`` significant digits.

    Float noise (``1e-14``) shows as 0, infinities as ``unbounded``, missing values as ``-``;
    strings are HTML-escaped (they may come from a catalog or a run label); column names have
    their underscores replaced by spaces.
    """

    def cell(v: object) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, numbers.Integral):
            return f"{int(v):,}"
        if isinstance(v, numbers.Real):
            return fmt_sig(float(v), digits)
        if v is None:
            return "-"
        return _e(str(v))

    shown = df.rename(columns=lambda c: str(c).replace("_", " "))
    left = [j for j, t in enumerate(shown.dtypes) if str(t) == "object"]
    styled = Styler(shown, uuid=table_id, cell_ids=False).hide(axis="index").format(cell)
    styles: list[Any] = [
        {"selector": "", "props": "border-collapse:collapse;font-size:13px;"},
        {"selector": "th", "props": "padding:3px 8px;text-align:right;white-space:nowrap;"},
        {"selector": "td", "props": "padding:2px 8px;text-align:right;white-space:nowrap;"},
    ]
    styles += [
        {"selector": f"td.col{j}, th.col_heading.col{j}", "props": "text-align:left;"} for j in left
    ]
    return styled.set_table_attributes(f'class="ns-table {NO_MATH}"').set_table_styles(styles)
