"""Text rendering of recommendations and tables for the terminal.

Every string that comes from a catalog, a run or a label goes through `clean`: terminal
escape sequences, other control characters and newlines are shown as visible escapes, so a
hostile catalog cannot move the cursor, recolour the terminal or forge table lines.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from sizing.units import fmt_usd_small
from trialtable.output import csv_cell

#: Control characters but tab, newline and return (ESC, C1, line separators, bidi overrides).
_OTHER_CONTROL = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(rf"[\t\n\r{_OTHER_CONTROL}]")
_PAGE_CONTROL = re.compile(rf"[{_OTHER_CONTROL}]")


def _escaped(m: re.Match[str]) -> str:
    return m.group(0).encode("unicode_escape").decode("ascii")


def clean(value: object) -> str:
    """``value`` as text with control characters (ESC, CR, LF, C1, bidi overrides) escaped."""
    return _CONTROL.sub(_escaped, str(value))


def clean_page(text: str) -> str:
    r"""``text`` (a whole page) with `clean`'s escapes but its own tabs, newlines and returns.

    In the page's scripts such a character stands in a string literal, where its escape
    (``\x1b``) means the same character.
    """
    return _PAGE_CONTROL.sub(_escaped, text)


def fmt_rps(v: float) -> str:
    """Requests per second, short: 1.20M, 350k, 12."""
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k" if v >= 1e3 else f"{v:.0f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    """A plain aligned text table; every cell is `clean`-ed."""
    rows = [[clean(c) for c in r] for r in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _wrap(text: str, width: int = 100) -> list[str]:
    words, lines, cur = text.split(" "), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    return [*lines, cur] if cur else lines


def render_mix(mix: dict[str, Any], explain: bool = True) -> list[str]:
    """The mixed fleet's lines: its total bill first (compute and egress beside it)."""
    if mix.get("status") != "optimal":
        return [f"Mixed fleet (up to {mix['max_types']} types): {clean(mix.get('message', ''))}"]
    total = mix.get("total_monthly_usd", mix["monthly_cost_usd"])
    egress = mix.get("egress_monthly_usd")
    single = mix.get("single_type_total_monthly_usd", math.inf)
    out = [
        f"Mixed fleet (up to {mix['max_types']} types per zone, {mix['zones']} zone(s), "
        f"{clean(mix.get('pricing', 'on-demand'))}): ${total:,.0f}/month in all "
        f"(${mix['monthly_cost_usd']:,.0f} instances"
        + ("" if egress is None else f" + ${egress:,.0f} egress")
        + f"; ${mix['hourly_cost_usd']:,.2f}/hour), P(meet) {mix['p_meets_target']:.0%}"
        + (f" at {mix['confidence']:.0%} confidence" if mix.get("at_confidence") else "")
        + (
            f" (no cheaper in all than the best single type, ${single:,.0f}/month)"
            if total >= single - 0.5
            else ""
        )
    ]
    rows = [
        [
            clean(t["instance_type"]),
            clean(f"{t['provider']}/{t['region']}"),
            str(t["count"]),
            "/".join(str(c) for c in t["count_per_zone"]),
            fmt_rps(t["capacity_rps_per_instance"]),
            f"{t['unit_price_usd_hour']:.4f}",
            f"{t['hourly_cost_usd']:.3f}",
        ]
        for t in mix["types"]
    ]
    out.append(
        table(
            ["instance", "where", "count", "per zone", "RPS/inst", "$/h each", "$/hour"],
            rows,
            {2, 4, 5, 6},
        )
    )
    if mix.get("spot"):  # spares by each type's interruption band (sizing.fleet.mix)
        out.append(f"  spot: {clean(mix['spot']['basis'])}")
    if explain:
        out.append(f"  {clean(mix['method'])}")
    return out


def _sizes(w: dict[str, Any]) -> str:
    """The response size, or the size mix with each size's share: "1,024 B (70%), ..."."""
    mix = w.get("size_mix") or []
    if len(mix) > 1:
        total = sum(float(share) for _, share in mix) or 1.0
        return ", ".join(f"{int(b):,} B ({float(share) / total:.0%})" for b, share in mix)
    return f"{w['file_bytes']:,} B"


def _buy(o: dict[str, Any], doc: dict[str, Any]) -> tuple[int, float, float]:
    """An option's count, $/hour and P(meet) as the options are ranked (at the confidence)."""
    at_conf = doc.get("sort") == "cost-at-confidence" and o.get("count_at_confidence")
    if at_conf:
        return (
            int(o["count_at_confidence"]),
            float(o["hourly_cost_at_confidence_usd"]),
            float(o.get("p_meets_target_at_confidence", o["p_meets_target"])),
        )
    return int(o["count"]), float(o["hourly_cost_usd"]), float(o["p_meets_target"])


def _option_row(i: int, o: dict[str, Any], doc: dict[str, Any]) -> list[str]:
    """One row of the options table: total bill first, at the count the ranking buys."""
    n, hourly, p = _buy(o, doc)
    egress = o.get("egress_monthly_usd")
    compute = hourly * 730.0
    total = compute + (egress or 0.0)
    per_m = (hourly + (egress or 0.0) / 730.0) * 1e6 / (doc["target_rps"] * 3600.0)
    cap = o["capacity_rps_per_instance"]
    return [
        str(i),
        o["instance_type"],
        f"{o['provider']}/{o['region']}",
        o["arch"],
        str(o["vcpus"]),
        str(n),
        f"{total:,.0f}",
        f"{compute:,.0f}",
        "-" if egress is None else f"{egress:,.0f}",
        f"{hourly:.3f}",
        fmt_usd_small(per_m).lstrip("$"),
        _grams(o, doc),
        fmt_rps(cap),
        f"{doc['target_rps'] / (n * cap):.0%}" if n and cap else "-",
        o["binding_constraint"] + {"own": "*", "carried": "+"}.get(o["measured"], ""),
        f"{p:.0%}",
        str(o["count"]),
    ]


def _grams(o: dict[str, Any], doc: dict[str, Any]) -> str:
    """An option's gCO2e per million requests at the count the ranking buys ("-": none)."""
    at_conf = doc.get("sort") == "cost-at-confidence" and o.get("count_at_confidence")
    g = o.get("gco2e_per_mreq_at_confidence" if at_conf else "gco2e_per_mreq")
    if g is None:
        return "-"
    return f"{g:,.0f}" if g >= 10 else f"{g:.2g}"


def options_lines(doc: dict[str, Any], top: int) -> list[str]:
    """The options table with its heading: the total bill leads, at the ranking's count."""
    conf = f"{doc['confidence']:.0%}"
    at_conf = doc.get("sort") == "cost-at-confidence"
    first = "least CO2e per request" if doc.get("sort") == "carbon" else "cheapest total bill"
    head = (
        f"Options, {first} first ("
        + (
            f"the count that keeps the headroom with {conf} confidence"
            if at_conf
            else "point-estimate count"
        )
        + f"; {doc.get('pricing', 'on-demand')} prices"
        + (", egress included" if doc.get("traffic") else "")
        + "):"
    )
    rows = [_option_row(i, o, doc) for i, o in enumerate(doc["options"][:top], start=1)]
    headers = [
        "#",
        "instance",
        "where",
        "arch",
        "vCPUs",
        f"n@{conf}" if at_conf else "count",
        "total $/mo",
        "compute $/mo",
        "egress $/mo",
        "$/hour",
        "$/M req",
        "gCO2e/M",
        "RPS/inst",
        "util",
        "binds",
        "P(meet)",
        "point n",
    ]
    return [head, table(headers, rows, {0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16})]


def _header_lines(doc: dict[str, Any]) -> list[str]:
    """The request in one line: target, SLA, workload, rules, pricing, regions."""
    w = doc["workload"]
    pricing = doc.get("pricing", "on-demand")
    regions = doc.get("regions", [])
    rules = (
        f"headroom {doc['headroom']:.0%}, redundancy N+{doc['redundancy']}, "
        f"{doc.get('zones', 1)} zone(s)"
        + (f", survives losing {doc['zone_loss']} zone(s)" if doc.get("zone_loss") else "")
        + f", {pricing} prices"
        + (
            f", spot reserve {doc['spot_reserve']:.0%}"
            if pricing == "spot" or doc.get("spot_reserve")
            else ""
        )
        + (
            f" (spares by interruption band at {doc['confidence']:.0%} for AWS types the "
            "Spot Advisor lists, by an estimate for GCP and Azure)"
            if any(o.get("spot") for o in doc.get("options", []))
            else ""
        )
    )
    return [
        f"Target {doc['target_rps']:,.0f} RPS, p99 <= {doc['sla_p99_ms']:g} ms, "
        f"{w['scenario']} {w['protocol'].upper()} {_sizes(w)} responses, {rules}",
        "regions: "
        + (
            clean(", ".join(regions))
            if len(regions) <= 6
            else f"{len(regions)} (all the catalog has)"
        ),
    ]


def _note_head(note: str) -> str:
    """A note's head: what was left out or assumed, before its reasons and lists."""
    estimate = note.startswith("estimate: ")
    head = note.removeprefix("estimate: ").split(": ")[0].split(", ")[0]
    head = re.sub(r" \(.*", "", head)
    return head + (" (an estimate)" if estimate else "")


def _short_notes(notes: Sequence[str]) -> list[str]:
    """The notes as one wrapped line of their heads (``--explain`` prints them whole)."""
    if not notes:
        return []
    heads = "; ".join(clean(_note_head(n)) for n in notes)
    return _wrap(f"notes: {heads}; --explain says why")


def _zone_lines(doc: dict[str, Any]) -> list[str]:
    """Growth and per-zone lines of option 1."""
    out = []
    conf = f"{doc['confidence']:.0%}"
    if doc.get("growth") and doc["options"] and doc["options"][0].get("growth_text"):
        out.append(f"growth (option 1): {clean(doc['options'][0]['growth_text'])}")
    if doc.get("zones", 1) > 1 and doc["options"]:
        o = doc["options"][0]
        out.append(
            f"per zone (option 1): {'/'.join(str(c) for c in o['count_per_zone'])}"
            + (
                f"; at {conf}: {'/'.join(str(c) for c in o['count_at_confidence_per_zone'])}"
                if o.get("count_at_confidence_per_zone")
                else ""
            )
        )
    return out


def render_recommendation(doc: dict[str, Any], top: int, explain: bool = True) -> str:
    """Human-readable recommendation: the decision, options, and what it rests on.

    Parameters
    ----------
    doc : dict
        The answer's JSON document (`sizing.pipeline.Answer.to_dict`).
    top : int
        Options in the table.
    explain : bool
        Whole notes, traffic, vCPUs by family and the whole basis; without it one screen:
        the decision, the options table and one line of basis.
    """
    out = _header_lines(doc)
    if explain:
        t = doc.get("traffic") or {}
        if t:
            out.append(
                f"traffic: {t['gbps']:,.1f} Gbps, {t['monthly_gib'] / 1024:,.0f} TiB/month to "
                + (
                    "clients on the internet"
                    if t["clients"] == "internet"
                    else "clients in the VPC"
                )
                + f" ({clean(t['basis'])})"
            )
        out += [f"note: {clean(n)}" for n in doc.get("notes", [])]
    else:
        out += _short_notes(doc.get("notes", []))
    out.append("")
    dec = doc.get("decision")
    if dec:
        out += [*(clean(x) for x in _wrap(dec["text"])), ""]
    if doc.get("against_on_demand"):
        out += [*(clean(x) for x in _wrap(doc["against_on_demand"]["text"])), ""]
    if doc.get("mix"):
        out += [*render_mix(doc["mix"], explain), ""]
    out += options_lines(doc, top)
    out += _zone_lines(doc)
    if not explain:
        out.append(_one_line_basis(doc))
        return "\n".join(out)
    out += _explain_lines(doc, top)
    return "\n".join(out)


def _one_line_basis(doc: dict[str, Any]) -> str:
    """The basis in one line (``--explain`` prints it whole)."""
    m = doc.get("measured")
    best = doc["options"][0]
    what = (
        ("SIMULATED runs " if m.get("simulated") else "measured runs ")
        + clean(", ".join(m["runs"]))
        if m and m.get("runs")
        else "published tables and marked estimates (no runs of your own)"
    )
    return (
        f"Rests on {what}; {len(best['basis'])} sources for option 1: --explain lists them, "
        "--format json every option's"
    )


def _explain_lines(doc: dict[str, Any], top: int) -> list[str]:
    """What ``--explain`` adds: measured calibrations, vCPUs by family and the whole basis."""
    out: list[str] = []
    conf = f"{doc['confidence']:.0%}"
    m = doc.get("measured")
    if m:
        sim = " SIMULATED" if m["simulated"] else ""
        out.append(
            f"* measured{sim} (runs {clean(', '.join(m['runs'])) or 'none used'})"
            + ("; + measured level carried through the relative factors" if m["carry_k"] else "")
        )
        for c in m["calibrations"]:
            shape = f"own {c['model']} curve" if c["shape"] == "own" else "shape borrowed"
            out.append(
                f"  {clean(c['label'])} -> family {clean(c['family'])}: {shape}, "
                f"x{c['k_vs_model']:.2f} of the model at vCPUs "
                f"{', '.join(f'{v:g}' for v in c['vcpus'])}"
                + ("" if c["carried_to_other_families"] else " (not carried: no factor row)")
            )
        out += [f"  note: {clean(n)}" for n in m["notes"]]
    out.append(
        f"P(meet): probability the count serves the target (capacity spread from the "
        f"{'fits and repeats' if m else 'coefficient errors and platform speed ranges'}); "
        f"n@{conf}: count that keeps the headroom with that probability; point n: the count "
        "at the point estimate"
    )
    out += [
        "",
        "vCPUs needed by family, in the options' order (its best size; fewest vCPUs over sizes):",
    ]
    fam_rows = [
        [
            f["family"],
            f["provider"],
            f"{f['cheapest_count']} x {f['cheapest_instance_type']}",
            str(f["cheapest_total_vcpus"]),
            str(f["min_total_vcpus"]),
            f"{f['cheapest_hourly_cost_usd']:.3f}",
        ]
        for f in doc["vcpus_by_family"][:top]
    ]
    out.append(
        table(
            ["family", "provider", "cheapest fleet", "vCPUs", "min vCPUs", "$/hour"],
            fam_rows,
            {3, 4, 5},
        )
    )
    return out + _rests_on(doc)


def _rests_on(doc: dict[str, Any]) -> list[str]:
    """The whole "Rests on" of option 1."""
    best = doc["options"][0]
    pricing = doc.get("pricing", "on-demand")
    lo, hi = best["capacity_factor_range"]
    out = ["", f"Rests on (option 1, {clean(best['instance_type'])}):"]
    out += [f"  - {clean(b)}" for b in best["basis"]]
    if best["measured"] == "own":
        clo, chi = best["capacity_interval_rps"]
        out.append(f"  - measured capacity, 95% interval {clo:,.0f} to {chi:,.0f} RPS")
    else:
        out.append(
            f"  - capacity 95% range from the coefficients' errors and the platform's speed range: "
            f"x{lo:.2f} to x{hi:.2f} of the point value"
        )
    used = 1 - doc["headroom"]
    out.append(f"  - estimate: headroom {doc['headroom']:.0%} (capacity used at most {used:.0%})")
    if pricing == "spot":
        out.append(
            f"  - estimate: spot reserve {doc['spot_reserve']:.0%} of the fleet may be reclaimed "
            "at once (--spot-reserve)"
            + (
                "; options with spot spares by interruption share use those instead (their "
                "spot in --format json; GCP and Azure shares are estimates)"
                if any(o.get("spot") for o in doc.get("options", []))
                else ""
            )
        )
    out.append("  - --format json gives every option's basis")
    out.append(
        "  - data/fits/cost-model.json holds the coefficients (python -m sizing fit --reference "
        "shows them), sizing/model/platforms.py the CPU speeds"
    )
    return out


def render_catalog(items: Sequence[Any]) -> str:
    """The catalog listing."""
    rows = [
        [
            i.provider,
            i.region,
            i.instance_type,
            i.arch,
            i.cpu,
            str(i.vcpus),
            f"{i.network_gbps:g}",
            f"{i.price_usd_hour:.4f}",
            "-" if i.spot_usd_hour is None else f"{i.spot_usd_hour:.4f}",
            "-" if i.commit_1y_usd_hour is None else f"{i.commit_1y_usd_hour:.4f}",
            "-" if i.commit_3y_usd_hour is None else f"{i.commit_3y_usd_hour:.4f}",
            ("burst " if i.burstable else "") + i.source_date,
        ]
        for i in items
    ]
    return table(
        [
            "provider",
            "region",
            "instance",
            "arch",
            "cpu",
            "vCPUs",
            "Gbps",
            "$/hour",
            "spot",
            "1y",
            "3y",
            "as of",
        ],
        rows,
        {5, 6, 7, 8, 9, 10},
    )


def to_csv(rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as CSV (lists and dicts as JSON, ``basis`` joined with ``; ``).

    Text is `clean`-ed: a control character from a catalog field is written escaped (as the
    table shows it and JSON encodes it), never raw into the reader's file or terminal.
    """
    buf = io.StringIO()
    if rows:
        flat = [
            {
                k: (
                    clean("; ".join(v))
                    if k == "basis"
                    else clean(json.dumps(v))
                    if isinstance(v, list | dict)
                    else clean(v)
                    if isinstance(v, str)
                    else v
                )
                for k, v in r.items()
            }
            for r in rows
        ]
        writer = csv.DictWriter(buf, fieldnames=list(flat[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in r.items()} for r in flat)
    return buf.getvalue()
