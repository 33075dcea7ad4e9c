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

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean(value: object) -> str:
    """``value`` as text with control characters (ESC, CR, LF, C1, bidi overrides) escaped."""
    text = str(value)
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


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


def render_mix(mix: dict[str, Any]) -> list[str]:
    """The mixed fleet's lines."""
    if mix.get("status") != "optimal":
        return [f"Mixed fleet (up to {mix['max_types']} types): {clean(mix.get('message', ''))}"]
    out = [
        f"Mixed fleet (up to {mix['max_types']} types per zone, {mix['zones']} zone(s)): "
        f"${mix['hourly_cost_usd']:,.2f}/hour, ${mix['monthly_cost_usd']:,.0f}/month, "
        f"P(meet) {mix['p_meets_target']:.0%}"
        + (f" at {mix['confidence']:.0%} confidence" if mix.get("at_confidence") else "")
        + (
            " (no cheaper than the best single type)"
            if mix["hourly_cost_usd"] >= mix.get("single_type_hourly_cost_usd", math.inf) - 0.005
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
    out.append(f"  {clean(mix['method'])}")
    return out


def _sizes(w: dict[str, Any]) -> str:
    """The response size, or the size mix with each size's share: "1,024 B (70%), ..."."""
    mix = w.get("size_mix") or []
    if len(mix) > 1:
        total = sum(float(share) for _, share in mix) or 1.0
        return ", ".join(f"{int(b):,} B ({float(share) / total:.0%})" for b, share in mix)
    return f"{w['file_bytes']:,} B"


def render_recommendation(doc: dict[str, Any], top: int) -> str:
    """Human-readable recommendation: the decision, options, vCPUs by family, what it rests on."""
    w = doc["workload"]
    pricing = doc.get("pricing", "on-demand")
    zones = doc.get("zones", 1)
    rules = (
        f"headroom {doc['headroom']:.0%}, redundancy N+{doc['redundancy']}, "
        f"{zones} zone(s)"
        + (f", survives losing {doc['zone_loss']} zone(s)" if doc.get("zone_loss") else "")
        + f", {pricing} prices"
        + (
            f", spot reserve {doc['spot_reserve']:.0%}"
            if pricing == "spot" or doc.get("spot_reserve")
            else ""
        )
    )
    out = [
        f"Target {doc['target_rps']:,.0f} RPS, p99 <= {doc['sla_p99_ms']:g} ms, "
        f"{w['scenario']} {w['protocol'].upper()} {_sizes(w)} responses, {rules}",
        "regions: "
        + (
            clean(", ".join(doc.get("regions", [])))
            if len(doc.get("regions", [])) <= 6
            else f"{len(doc['regions'])} (all the catalog has)"
        ),
        "",
    ]
    t = doc.get("traffic") or {}
    if t:
        out.insert(
            -1,
            f"traffic: {t['gbps']:,.1f} Gbps, {t['monthly_gib'] / 1024:,.0f} TiB/month to "
            + ("clients on the internet" if t["clients"] == "internet" else "clients in the VPC")
            + f" ({clean(t['basis'])})",
        )
    out[-1:-1] = [f"note: {clean(n)}" for n in doc.get("notes", [])]
    dec = doc.get("decision")
    if dec:
        out += [*(clean(x) for x in _wrap(dec["text"])), ""]
    if doc.get("mix"):
        out += [*render_mix(doc["mix"]), ""]
    sort = doc.get("sort", "cost")
    out.append(
        "Options, by "
        + (
            f"hourly cost at {doc['confidence']:.0%} confidence (n@)"
            if sort == "cost-at-confidence"
            else "hourly cost at the point estimate"
        )
        + (", egress included" if doc.get("traffic") else "")
        + ":"
    )
    rows = []
    for i, o in enumerate(doc["options"][:top], start=1):
        conf_cost = o.get("hourly_cost_at_confidence_usd")
        rows.append(
            [
                str(i),
                o["instance_type"],
                f"{o['provider']}/{o['region']}",
                o["arch"],
                str(o["vcpus"]),
                str(o["count"]),
                fmt_rps(o["capacity_rps_per_instance"]),
                f"{o['utilization_at_target']:.0%}",
                f"{o['hourly_cost_usd']:.3f}",
                f"{o['monthly_cost_usd']:,.0f}",
                "-" if o.get("egress_monthly_usd") is None else f"{o['egress_monthly_usd']:,.0f}",
                f"{o.get('total_monthly_usd', o['monthly_cost_usd']):,.0f}",
                fmt_usd_small(
                    o.get("usd_per_million_requests", o["usd_per_billion_requests"] / 1e3)
                ).lstrip("$"),
                o["binding_constraint"] + {"own": "*", "carried": "+"}.get(o["measured"], ""),
                f"{o['p_meets_target']:.0%}",
                str(o["count_at_confidence"] or "-"),
                "-" if conf_cost is None else f"{conf_cost:.3f}",
            ]
        )
    conf = f"{doc['confidence']:.0%}"
    out.append(
        table(
            [
                "#",
                "instance",
                "where",
                "arch",
                "vCPUs",
                "count",
                "RPS/inst",
                "util",
                "$/hour",
                "compute $/mo",
                "egress $/mo",
                "total $/mo",
                "$/M req",
                "binds",
                "P(meet)",
                f"n@{conf}",
                f"$/h@{conf}",
            ],
            rows,
            {0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16},
        )
    )
    if doc.get("growth") and doc["options"] and doc["options"][0].get("growth_text"):
        out.append(f"growth (option 1): {clean(doc['options'][0]['growth_text'])}")
    if zones > 1 and doc["options"]:
        o = doc["options"][0]
        out.append(
            f"per zone (option 1): {'/'.join(str(c) for c in o['count_per_zone'])}"
            + (
                f"; at {conf}: {'/'.join(str(c) for c in o['count_at_confidence_per_zone'])}"
                if o.get("count_at_confidence_per_zone")
                else ""
            )
        )
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
        f"n@{conf}: count that keeps the headroom with that probability"
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
    best = doc["options"][0]
    lo, hi = best["capacity_factor_range"]
    out += ["", f"Rests on (option 1, {clean(best['instance_type'])}):"]
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
        )
    out.append("  - --format json gives every option's basis")
    out.append(
        "  - data/fits/cost-model.json holds the coefficients (python -m sizing fit --reference "
        "shows them), sizing/model/platforms.py the CPU speeds"
    )
    return "\n".join(out)


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
