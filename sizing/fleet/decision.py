"""The decision: what to buy, the next best, and the input the answer depends on most.

The sensitivity is a one-at-a-time check on the chosen type: the capacity estimate moved by
one log-normal standard deviation each way, the headroom by 10 points each way, the SLA halved
and doubled, and (when ranking at a confidence) the confidence at 90% and 99%. The input whose
range moves the chosen fleet's hourly cost most is named.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

from sizing.fleet.counts import (
    HOURS_PER_MONTH,
    FleetRules,
    Option,
    Recommendation,
    count_for,
    per_zone,
    survivors,
    usd_per_million,
)
from sizing.model.capacity import Capacity, instance_capacity
from sizing.model.carbon import Carbon, cpu_load, fleet_carbon


def _count(rec: Recommendation, cap: Capacity, rules: FleetRules, scale: float = 1.0) -> int | None:
    if rec.sort == "cost-at-confidence":
        per = cap.quantile(1.0 - rules.confidence)
    else:
        per = cap.capacity_rps
    return count_for(rec.target_rps, per * scale * (1.0 - rules.headroom), rules)


def sensitivity(rec: Recommendation, option: Option) -> list[dict[str, Any]]:
    """For each input, the chosen type's count at its low and high value (None: infeasible)."""
    cap, rules = option.capacity, rec.rules
    rows: list[dict[str, Any]] = []

    def add(name: str, low: str, high: str, n_low: int | None, n_high: int | None) -> None:
        rows.append(
            {"input": name, "low": low, "high": high, "count_low": n_low, "count_high": n_high}
        )

    sd = cap.rel_sd
    if sd > 0:
        inst = cap.instance
        what = "measured capacity" if cap.measured else "capacity estimate"
        add(
            f"the {what} of {inst.cpu or inst.family} (log-normal sd {sd:.2f})",
            f"-1 sd (x{math.exp(-sd):.2f})",
            f"+1 sd (x{math.exp(sd):.2f})",
            _count(rec, cap, rules, math.exp(-sd)),
            _count(rec, cap, rules, math.exp(sd)),
        )
    h = rules.headroom
    lo_h, hi_h = max(0.0, h - 0.1), min(0.9, h + 0.1)
    add(
        "the headroom",
        f"{lo_h:.0%}",
        f"{hi_h:.0%}",
        _count(rec, cap, replace(rules, headroom=lo_h)),
        _count(rec, cap, replace(rules, headroom=hi_h)),
    )
    w = rec.workload
    caps = []
    for sla in (w.sla_p99_ms / 2, w.sla_p99_ms * 2):
        work = replace(w, sla_p99_ms=sla)
        caps.append(instance_capacity(cap.instance, work, rec.evidence, rec.profiles))
    add(
        "the p99 SLA",
        f"{w.sla_p99_ms / 2:g} ms",
        f"{w.sla_p99_ms * 2:g} ms",
        _count(rec, caps[0], rules),
        _count(rec, caps[1], rules),
    )
    if rec.sort == "cost-at-confidence":
        add(
            "the confidence",
            "90%",
            "99%",
            _count(rec, cap, replace(rules, confidence=0.90)),
            _count(rec, cap, replace(rules, confidence=0.99)),
        )
    return rows


def _spread(row: dict[str, Any], base: int) -> float:
    lo, hi = row["count_low"], row["count_high"]
    if lo is None or hi is None:
        return math.inf
    return abs(math.log(max(lo, 1) / base)) + abs(math.log(max(hi, 1) / base))


def decide(rec: Recommendation) -> dict[str, Any]:
    """The fleet to buy, in words and numbers (see the module docstring)."""
    at_conf = rec.sort == "cost-at-confidence"
    best = rec.options[0]
    inst = best.capacity.instance
    zones = rec.rules.zones
    n = best.count_at_confidence if at_conf and best.count_at_confidence else best.count
    p = best.p_meets_at_confidence if at_conf and best.count_at_confidence else best.p_meets_target
    hourly = n * best.unit_price_usd_hour
    doc: dict[str, Any] = {
        "instance_type": inst.instance_type,
        "provider": inst.provider,
        "region": inst.region,
        "count": n,
        "zones": zones,
        "count_per_zone": per_zone(n, zones),
        "pricing": rec.rules.pricing,
        "hourly_cost_usd": hourly,
        "monthly_cost_usd": hourly * HOURS_PER_MONTH,
        "egress_monthly_usd": (best.egress or {}).get("usd_month"),
        "total_monthly_usd": hourly * HOURS_PER_MONTH + best.egress_monthly_usd,
        "p_meets_target": p,
        "basis": "count at confidence" if at_conf else "point estimate",
        "usd_per_million_requests": usd_per_million(
            hourly + best.egress_monthly_usd / HOURS_PER_MONTH, rec.target_rps
        ),
    }
    doc["carbon"] = carbon_words(
        fleet_carbon(inst, n, cpu_load(rec.target_rps, n, best.capacity.cpu_peak_rps)), rec
    )
    if rec.growth is not None:
        from sizing.fleet.growth import describe, growth_fields

        grow = growth_fields(
            survivors(n, rec.rules),
            best.capacity.capacity_rps,
            rec.headroom,
            rec.target_rps,
            rec.growth[1],
        )
        doc["growth"] = {**grow, "text": describe(grow, rec.growth[0])}
    nxt = next(
        (
            o
            for o in itertools.islice(rec.options, 1, None)
            if o.capacity.instance.instance_type != inst.instance_type
        ),
        None,
    )  # another type, not the same type in another region
    if nxt is not None:
        nn = nxt.count_at_confidence if at_conf and nxt.count_at_confidence else nxt.count
        doc["next_best"] = {
            "instance_type": nxt.capacity.instance.instance_type,
            "region": nxt.capacity.instance.region,
            "count": nn,
            "hourly_cost_usd": nn * nxt.unit_price_usd_hour,
            "total_monthly_usd": nn * nxt.unit_price_usd_hour * HOURS_PER_MONTH
            + nxt.egress_monthly_usd,
        }
    rows = sensitivity(rec, best)
    if rows:
        top = max(rows, key=lambda r: _spread(r, n))
        doc["moves_most_with"] = top
    doc["sensitivity"] = rows
    mix = rec.mix
    mix_total = (mix or {}).get("total_monthly_usd")
    if mix_total is not None and mix_total < doc["total_monthly_usd"] - 0.5:
        # On the whole bill: a mix in a place of dearer egress saves nothing.
        doc["mix_saves_usd_month"] = doc["total_monthly_usd"] - mix_total
        doc["mix_saves_usd_hour"] = doc["mix_saves_usd_month"] / HOURS_PER_MONTH
    doc["headline"] = headline(doc, rec)
    doc["text"] = decision_text(doc, rec)
    return doc


def carbon_words(c: Carbon, rec: Recommendation) -> dict[str, Any]:
    """The chosen fleet's emissions as numbers and one sentence (`sizing.model.carbon`)."""
    g = c.per_million(rec.target_rps)
    text = (
        f"Carbon: {g:.3g} gCO2e per million requests at the target "
        f"({c.operational_g_per_hour:,.0f} g/hour operational at {c.cpu_utilization:.0%} CPU, "
        f"{c.watts_per_vcpu:.2f} W per vCPU, grid {c.grid_kg_per_kwh * 1000:,.0f} gCO2e/kWh; "
        f"{c.embodied_g_per_hour:,.0f} g/hour embodied; Cloud Carbon Footprint's coefficients"
        + ("; some stand-ins, marked as estimates in --format json" if c.estimate else "")
        + ")"
    )
    return {
        "gco2e_per_mreq": g,
        "g_per_hour": c.g_per_hour,
        "operational_g_per_hour": c.operational_g_per_hour,
        "embodied_g_per_hour": c.embodied_g_per_hour,
        "estimate": c.estimate,
        "basis": list(c.basis),
        "text": text,
    }


def _egress_words(doc: dict[str, Any], rec: Recommendation) -> str:
    """The decision's words on the cost of the traffic ('' when it is not priced)."""
    egress = doc.get("egress_monthly_usd")
    if not egress:
        return ""
    t = rec.traffic
    what = "internet egress" if t.get("clients") == "internet" else "inter-zone traffic"
    out = (
        f" for the instances, plus ${egress:,.0f}/month {what} ({t.get('gbps', 0):,.0f} Gbps)"
        f" = ${doc['total_monthly_usd']:,.0f}/month in all"
    )
    if egress > doc["monthly_cost_usd"]:
        share = egress / doc["total_monthly_usd"]
        out += f" (the traffic, not the instances, is {share:.1%} of the bill)"
    return out


def headline(doc: dict[str, Any], rec: Recommendation) -> str:
    """The decision in one sentence: what to buy, where, what it costs, how sure.

    Count, type, region, $/hour, $/month (with the traffic's egress when priced), $ per
    million requests, P(meet), and when the fleet must grow (with a growth rate).

    This sentence is what every way of asking shows (the terminal, the report's HTML and
    PDF, the explorer): `sizing.pipeline.Answer.decision`.
    """
    from sizing.units import fmt_usd_small

    z = doc["zones"]
    spread = "/".join(str(c) for c in doc["count_per_zone"])
    where = f"in {z} zones ({spread} per zone)" if z > 1 else "in 1 zone"
    out = (
        f"Buy {doc['count']} x {doc['instance_type']} ({doc['provider']} {doc['region']}, "
        f"{doc['pricing']}) {where}, ${doc['hourly_cost_usd']:,.2f}/hour, "
        f"${doc['monthly_cost_usd']:,.0f}/month"
        + _egress_words(doc, rec)
        + f", {fmt_usd_small(doc['usd_per_million_requests'])} per million requests at the "
        f"target under the SLA, P(meet) {doc['p_meets_target']:.0%}"
    )
    if doc["basis"] == "count at confidence":
        out += f" (the count that keeps the headroom with {rec.confidence:.0%} confidence)"
    if doc.get("growth"):
        out += f"; {doc['growth']['text']}"
    return out


def decision_text(doc: dict[str, Any], rec: Recommendation) -> str:
    """The one-paragraph decision: the `headline`, then the runner-up and what moves it most."""
    z = doc["zones"]
    out = [doc.get("headline") or headline(doc, rec)]
    more = []
    nb = doc.get("next_best")
    if nb:
        more.append(
            f"the next best is {nb['count']} x {nb['instance_type']} ({nb['region']}) at "
            f"${nb['total_monthly_usd']:,.0f}/month in all (${nb['hourly_cost_usd']:,.2f}/hour)"
        )
    mv = doc.get("moves_most_with")
    if mv:
        lo = "none" if mv["count_low"] is None else mv["count_low"]
        hi = "none" if mv["count_high"] is None else mv["count_high"]
        more.append(
            f"the answer moves most with {mv['input']}: {mv['low']} -> {lo}, "
            f"{mv['high']} -> {hi} instances"
        )
    if rec.mix and doc.get("mix_saves_usd_month"):
        more.append(
            f"a mix of types saves ${doc['mix_saves_usd_month']:,.0f}/month in all "
            f"(${doc['mix_saves_usd_hour']:,.2f}/hour, below)"
        )
    if more:
        text = "; ".join(more)
        out.append(text[0].upper() + text[1:])
    if doc.get("carbon"):
        out.append(doc["carbon"]["text"].removesuffix("."))
    r = rec.rules
    if r.redundancy == 0 and r.zone_loss == 0:
        out.append(
            "No redundancy: the plan keeps no spare instance"
            + (" or zone" if z > 1 else " and sits in one zone")
            + (
                " (add --redundancy 1 or --zone-loss 1)"
                if z > 1
                else " (add --redundancy 1, or --zones 3 --zone-loss 1)"
            )
        )
    return " ".join(s + "." for s in out)
