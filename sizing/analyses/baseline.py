"""Every option of a request against what the user runs today: ``sizing compare --baseline``.

The baseline is an instance type and, optionally, a count (``c6i.xlarge x12``). Its capacity
comes from the same model, evidence and fleet rules as the options of the `Recommendation`
it is compared with, so the percentages compare like with like:

- cost %: an option's total bill (compute and the traffic's egress where it runs, a month)
  over the baseline fleet's, minus 1; each option at the count the options are ranked by (the
  count that keeps the headroom at the request's confidence, as the decision), the baseline
  at its given count or at the count the rules need at that confidence;
- capacity %: an option's fleet capacity under the SLA (count x capacity per instance)
  over the baseline fleet's, minus 1;
- P(meet): the probability each fleet's survivors (after the rules' zone loss, failures
  and spot reserve) serve the target, the baseline's beside each option's.

Without a count, the baseline is the count of its type the rules need for the target (so
"what it would take today" is compared).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from sizing.catalog.egress import egress_cost
from sizing.catalog.load import Instance
from sizing.errors import Infeasible, InputError
from sizing.fleet.recommend import (
    HOURS_PER_MONTH,
    MAX_FLEET,
    Recommendation,
    capacities,
    count_for,
    p_meet,
    per_zone,
    survivors,
    usd_per_million,
)
from sizing.model.capacity import Capacity
from sizing.pipeline import Answer, size
from sizing.report.render import clean, fmt_rps, table
from sizing.units import fmt_usd_small
from trialtable.jsonvalue import JsonObject

_DIGITS = "0123456789"


def _split_count(raw: str) -> tuple[str, str] | None:
    """``"TYPE xN"`` -> ``("TYPE", "N")`` (1 to 7 digits; ``x``, ``*`` or ``×``), else None.

    Written with string methods, in one pass: a pattern with a lazy group before optional
    spaces backtracks quadratically on a long run of spaces.
    """
    head = raw.rstrip(_DIGITS)
    digits = raw[len(head) :]
    head = head.rstrip()
    if not 1 <= len(digits) <= 7 or not head or head[-1].lower() not in "x*×":
        return None
    return head[:-1].rstrip(), digits


@dataclass(frozen=True)
class BaselineSpec:
    """What the user runs today: an instance type and optionally how many."""

    instance_type: str
    count: int | None = None

    def __str__(self) -> str:
        return self.instance_type + ("" if self.count is None else f" x{self.count}")


def parse_baseline(text: str, known: set[str]) -> BaselineSpec:
    """``TYPE`` or ``TYPE xN`` (also ``TYPE*N``) -> `BaselineSpec`.

    A type name is tried whole first (names hold an ``x``: ``c6i.xlarge``), then as
    ``TYPE`` followed by a count.

    Raises
    ------
    InputError
        For an empty text, a count outside 1 to `MAX_FLEET`, or a type not in ``known``.
    """
    raw = text.strip() if isinstance(text, str) else ""
    if not raw:
        raise InputError("--baseline is empty; expected an instance type, e.g. c6i.xlarge x12")
    if raw in known:
        return BaselineSpec(raw)
    m = _split_count(raw)
    if m is not None and m[0] in known:
        n = int(m[1])
        if not 1 <= n <= MAX_FLEET:
            raise InputError(f"baseline count must be 1 to {MAX_FLEET:,}, got {n}")
        return BaselineSpec(m[0], n)
    name = m[0] if m is not None and m[0] else raw
    raise InputError(
        f"unknown baseline instance type {name[:60]!r}; python -m sizing catalog lists them"
    )


def _pick(spec: BaselineSpec, catalog: list[Instance], rec: Recommendation) -> Instance:
    """The baseline's catalog row: in a region of the answer if it has one there."""
    rows = [i for i in catalog if i.instance_type == spec.instance_type]
    regions = {o.capacity.instance.region for o in rec.options}
    rows.sort(key=lambda i: (i.region not in regions, i.provider, i.region))
    return rows[0]


class FleetNumbers(TypedDict):
    """A fleet's count, cost [USD], capacity [RPS] and whether it keeps the rules."""

    count: int | None
    count_per_zone: list[int] | None
    hourly_cost_usd: float
    monthly_cost_usd: float
    egress_monthly_usd: float | None
    total_monthly_usd: float
    usd_per_million_requests: float
    fleet_capacity_rps: float
    p_meets_target: float
    keeps_rules: bool


def _fleet(
    rec: Recommendation, cap: Capacity, count: int | None, price: float, egress: float | None
) -> FleetNumbers:
    """A fleet's numbers under the recommendation's rules (``egress`` [USD/month])."""
    r = rec.rules
    capacity = math.nan if count is None else count * cap.capacity_rps
    hourly = math.nan if count is None else count * price
    total = hourly * HOURS_PER_MONTH + (egress or 0.0)
    return {
        "count": count,
        "count_per_zone": None if count is None else per_zone(count, r.zones),
        "hourly_cost_usd": hourly,
        "monthly_cost_usd": hourly * HOURS_PER_MONTH,
        "egress_monthly_usd": egress,
        "total_monthly_usd": total,
        "usd_per_million_requests": usd_per_million(total / HOURS_PER_MONTH, rec.target_rps),
        "fleet_capacity_rps": capacity,
        "p_meets_target": math.nan if count is None else p_meet(count, cap, rec.target_rps, r),
        "keeps_rules": count is not None
        and survivors(count, r) * cap.capacity_rps * (1.0 - rec.headroom) >= rec.target_rps,
    }


def compare_to_baseline(
    rec: Recommendation, spec: BaselineSpec, catalog: list[Instance], top: int | None = 10
) -> JsonObject:
    """The baseline fleet and each option relative to it.

    Parameters
    ----------
    rec : Recommendation
        The answer to the request (its workload, evidence, profiles and rules are used for
        the baseline too).
    spec : BaselineSpec
        What runs today.
    catalog : list of Instance
        Where the baseline's type is looked up (the whole catalog: a filter of the request
        must not hide what runs today).
    top : int, optional
        Options to compare (None: all).

    Returns
    -------
    dict
        ``baseline`` (type, region, count, hourly cost, fleet capacity under the SLA,
        P(meet), whether it keeps the fleet rules, the count the rules need) and
        ``options`` (each option's count, cost, capacity and P(meet), with ``cost_pct``
        and ``capacity_pct`` relative to the baseline, in percent).

    Raises
    ------
    InputError
        When the baseline's type has no price for the request's pricing.
    """
    inst = _pick(spec, catalog, rec)
    price = inst.price(rec.rules.pricing)
    if price is None:
        raise InputError(
            f"baseline {inst.instance_type} has no {rec.rules.pricing} price in the catalog"
        )
    (cap,) = capacities([inst], rec.workload, rec.evidence, rec.profiles)
    at_conf = rec.sort == "cost-at-confidence"
    per = cap.quantile(1.0 - rec.confidence) if at_conf else cap.capacity_rps
    needed = count_for(rec.target_rps, per * (1.0 - rec.headroom), rec.rules)
    count = spec.count if spec.count is not None else needed
    base: dict[str, Any] = {
        "instance_type": inst.instance_type,
        "provider": inst.provider,
        "region": inst.region,
        "vcpus": inst.vcpus,
        "capacity_rps_per_instance": cap.capacity_rps,
        "count_given": spec.count is not None,
        "count_rules_need": needed,
        "utilization_at_target": (
            math.nan if not count else rec.target_rps / (count * cap.capacity_rps)
        ),
        "basis": list(cap.basis),
        **_fleet(rec, cap, count, price, _egress(rec, inst)),
    }
    rows = []
    for o in rec.options if top is None else rec.options[:top]:
        i = o.capacity.instance
        n = o.count_at_confidence if at_conf and o.count_at_confidence else o.count
        row: dict[str, Any] = {
            "instance_type": i.instance_type,
            "provider": i.provider,
            "region": i.region,
            "vcpus": i.vcpus,
            **_fleet(rec, o.capacity, n, o.unit_price_usd_hour, (o.egress or {}).get("usd_month")),
            "count_at_confidence": o.count_at_confidence,
            "point_count": o.count,
        }
        row["cost_pct"] = _pct(row["total_monthly_usd"], base["total_monthly_usd"])
        row["capacity_pct"] = _pct(row["fleet_capacity_rps"], base["fleet_capacity_rps"])
        rows.append(row)
    return {
        "target_rps": rec.target_rps,
        "sla_p99_ms": rec.workload.sla_p99_ms,
        "pricing": rec.rules.pricing,
        "zones": rec.rules.zones,
        "zone_loss": rec.rules.zone_loss,
        "confidence": rec.confidence,
        "counts_at": f"{rec.confidence:.0%} confidence" if at_conf else "the point estimate",
        "baseline": base,
        "options": rows,
        "source": "the same recommend call: model, evidence, profiles and fleet rules "
        "(capacity per instance under the SLA as in --format json's basis)",
    }


def _egress(rec: Recommendation, inst: Instance) -> float | None:
    """The answer's traffic priced where ``inst`` runs [USD/month] (None: not priced)."""
    t = rec.traffic or {}
    if not t:
        return None
    return egress_cost(
        inst.provider, inst.region, t["monthly_gib"], clients=t["clients"], zones=rec.rules.zones
    ).get("usd_month")


def _pct(value: float, base: float) -> float:
    if not (math.isfinite(value) and math.isfinite(base)) or base <= 0:
        return math.nan
    return 100.0 * (value / base - 1.0)


def _money(row: dict[str, Any]) -> list[str]:
    """Total, compute and egress a month, and $/hour, as table cells."""

    def usd(x: float | None) -> str:
        return "-" if x is None or not math.isfinite(x) else f"{x:,.0f}"

    return [
        usd(row["total_monthly_usd"]),
        usd(row["monthly_cost_usd"]),
        usd(row["egress_monthly_usd"]),
        "-" if not math.isfinite(row["hourly_cost_usd"]) else f"{row['hourly_cost_usd']:.3f}",
    ]


def _fleet_words(row: dict[str, Any], doc: dict[str, Any]) -> str:
    """'41 x c8g.medium (aws us-east-1, on-demand) in 3 zones (14/14/13 per zone), $X/month'."""
    zones = doc.get("zones", 1)
    spread = "/".join(str(c) for c in row["count_per_zone"] or [])
    where = f"in {zones} zones ({spread} per zone)" if zones > 1 else "in 1 zone"
    total = row["total_monthly_usd"]
    return (
        f"{row['count'] if row['count'] is not None else 'no'} x {row['instance_type']} "
        f"({row['provider']} {row['region']}, {doc['pricing']}) {where}, "
        + ("-" if not math.isfinite(total) else f"${total:,.0f}/month in all")
    )


def render_baseline(doc: dict[str, Any]) -> str:
    """The comparison as a text table: the baseline first, then each option."""
    b = doc["baseline"]

    def pct(x: float) -> str:
        return "-" if not math.isfinite(x) else f"{x:+.1f}%"

    def num(x: float, fmt: str) -> str:
        return "-" if x is None or not math.isfinite(x) else format(x, fmt)

    def rps(x: float) -> str:
        return fmt_rps(x) if math.isfinite(x) else "-"

    head = (
        "Baseline: "
        + _fleet_words(b, doc)
        + ("" if b["count_given"] else " (the count the rules need)")
        + f", {rps(b['fleet_capacity_rps'])} RPS under the SLA, "
        f"P(meet) {num(b['p_meets_target'], '.0%')}, "
        + ("keeps the fleet rules" if b["keeps_rules"] else "does NOT keep the fleet rules")
        + ("" if b["count_rules_need"] is None else f" (the rules need {b['count_rules_need']})")
    )
    rows = [
        [
            "base",
            b["instance_type"],
            f"{b['provider']}/{b['region']}",
            str(b["count"] or "-"),
            *_money(b),
            fmt_usd_small(b["usd_per_million_requests"]),
            "0%",
            rps(b["fleet_capacity_rps"]),
            "0%",
            num(b["p_meets_target"], ".0%"),
        ]
    ]
    for n, o in enumerate(doc["options"], start=1):
        rows.append(
            [
                str(n),
                o["instance_type"],
                f"{o['provider']}/{o['region']}",
                str(o["count"]),
                *_money(o),
                fmt_usd_small(o["usd_per_million_requests"]),
                pct(o["cost_pct"]),
                rps(o["fleet_capacity_rps"]),
                pct(o["capacity_pct"]),
                num(o["p_meets_target"], ".0%"),
            ]
        )
    counts_at = doc.get("counts_at", "the point estimate")
    out = [
        f"Target {doc['target_rps']:,.0f} RPS, p99 <= {doc['sla_p99_ms']:g} ms, "
        f"{doc['pricing']} prices, counts at {counts_at}",
        clean(head),
        *(["Option 1: " + clean(_fleet_words(doc["options"][0], doc))] if doc["options"] else []),
        "",
        table(
            [
                "#",
                "instance",
                "where",
                "count",
                "total $/mo",
                "compute $/mo",
                "egress $/mo",
                "$/hour",
                "$/M req",
                "cost",
                "RPS (SLA)",
                "capacity",
                "P(meet)",
            ],
            rows,
            {0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
        ),
        "cost: the total bill (compute and egress) relative to the baseline's; capacity: "
        "relative to the baseline; RPS (SLA): the fleet's capacity under the SLA; "
        "P(meet): probability the survivors of the fleet rules serve the target",
        f"source: {doc['source']}",
    ]
    return "\n".join(out)


class AgainstOnDemand(TypedDict):
    """A plan against on-demand: the on-demand decision, the difference [USD/month], a line."""

    on_demand: JsonObject
    difference_monthly_usd: float
    text: str


def against_on_demand(answer: Answer) -> AgainstOnDemand | None:
    """The answer's plan against the same request at on-demand prices, on the total bill.

    A spot or committed price lowers the instances' cost, but the plan it picks may sit where
    egress costs more (or need more instances for the spot reserve), so it can cost more in
    all than on-demand; this says so either way.

    Parameters
    ----------
    answer : sizing.pipeline.Answer
        An answer whose request's pricing is not on-demand.

    Returns
    -------
    dict or None
        ``on_demand`` (the on-demand decision's count, type, provider, region and total),
        ``difference_monthly_usd`` (this plan's total minus on-demand's [USD/month]) and
        ``text`` (one line); None for an on-demand request, or when on-demand has no answer.
    """
    request = answer.request
    mine = answer.recommendation.decision
    if request.pricing == "on-demand" or not mine:
        return None
    try:
        # Only its first option is read: rows that cannot rank first are not counted.
        od = size(replace(request, pricing="on-demand"), first_only=True).recommendation.decision
    except Infeasible:
        return None
    if not od:
        return None
    diff = mine["total_monthly_usd"] - od["total_monthly_usd"]
    plan = (
        f"{od['count']} x {od['instance_type']} ({od['provider']} {od['region']}, on-demand), "
        f"${od['total_monthly_usd']:,.0f}/month in all"
    )
    if diff > 0.5:
        text = (
            f"This {request.pricing} plan costs ${diff:,.0f}/month MORE in all "
            f"(+{diff / od['total_monthly_usd']:.1%}) than on-demand: {plan}"
        )
    else:
        text = f"This {request.pricing} plan saves ${-diff:,.0f}/month in all against {plan}"
    keys = ("count", "instance_type", "provider", "region", "total_monthly_usd")
    return {
        "on_demand": {k: od[k] for k in keys},
        "difference_monthly_usd": diff,
        "text": text,
    }
