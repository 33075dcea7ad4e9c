"""Every option of a request against what the user runs today: ``sizing compare --baseline``.

The baseline is an instance type and, optionally, a count (``c6i.xlarge x12``). Its capacity
comes from the same model, evidence and fleet rules as the options of the `Recommendation`
it is compared with, so the percentages compare like with like:

- cost %: an option's hourly cost over the baseline fleet's, minus 1;
- capacity %: an option's fleet capacity under the SLA (count x capacity per instance)
  over the baseline fleet's, minus 1;
- P(meet): the probability each fleet's survivors (after the rules' zone loss, failures
  and spot reserve) serve the target, the baseline's beside each option's.

Without a count, the baseline is the count of its type the rules need for the target (so
"what it would take today" is compared).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sizing.catalog.load import Instance
from sizing.errors import InputError
from sizing.fleet.recommend import (
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


def _fleet(rec: Recommendation, cap: Capacity, count: int | None, price: float) -> dict[str, Any]:
    """A fleet's numbers under the recommendation's rules."""
    r = rec.rules
    capacity = math.nan if count is None else count * cap.capacity_rps
    hourly = math.nan if count is None else count * price
    return {
        "count": count,
        "count_per_zone": None if count is None else per_zone(count, r.zones),
        "hourly_cost_usd": hourly,
        "usd_per_million_requests": usd_per_million(hourly, rec.target_rps),
        "fleet_capacity_rps": capacity,
        "p_meets_target": math.nan if count is None else p_meet(count, cap, rec.target_rps, r),
        "keeps_rules": count is not None
        and survivors(count, r) * cap.capacity_rps * (1.0 - rec.headroom) >= rec.target_rps,
    }


def compare_to_baseline(
    rec: Recommendation, spec: BaselineSpec, catalog: list[Instance], top: int | None = 10
) -> dict[str, Any]:
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
    needed = count_for(rec.target_rps, cap.capacity_rps * (1.0 - rec.headroom), rec.rules)
    count = spec.count if spec.count is not None else needed
    base = {
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
        **_fleet(rec, cap, count, price),
    }
    rows = []
    for o in rec.options if top is None else rec.options[:top]:
        i = o.capacity.instance
        row = {
            "instance_type": i.instance_type,
            "provider": i.provider,
            "region": i.region,
            "vcpus": i.vcpus,
            **_fleet(rec, o.capacity, o.count, o.unit_price_usd_hour),
            "count_at_confidence": o.count_at_confidence,
        }
        row["cost_pct"] = _pct(row["hourly_cost_usd"], base["hourly_cost_usd"])
        row["capacity_pct"] = _pct(row["fleet_capacity_rps"], base["fleet_capacity_rps"])
        rows.append(row)
    return {
        "target_rps": rec.target_rps,
        "sla_p99_ms": rec.workload.sla_p99_ms,
        "pricing": rec.rules.pricing,
        "baseline": base,
        "options": rows,
        "source": "the same recommend call: model, evidence, profiles and fleet rules "
        "(capacity per instance under the SLA as in --format json's basis)",
    }


def _pct(value: float, base: float) -> float:
    if not (math.isfinite(value) and math.isfinite(base)) or base <= 0:
        return math.nan
    return 100.0 * (value / base - 1.0)


def render_baseline(doc: dict[str, Any]) -> str:
    """The comparison as a text table: the baseline first, then each option."""
    from sizing.report.render import clean, fmt_rps, table
    from sizing.units import fmt_usd_small

    b = doc["baseline"]

    def pct(x: float) -> str:
        return "-" if not math.isfinite(x) else f"{x:+.0f}%"

    def num(x: float, fmt: str) -> str:
        return "-" if x is None or not math.isfinite(x) else format(x, fmt)

    head = (
        f"Baseline: {b['count'] if b['count'] is not None else 'no'} x {b['instance_type']} "
        f"({b['provider']} {b['region']})"
        + ("" if b["count_given"] else " (the count the rules need)")
        + f": ${num(b['hourly_cost_usd'], ',.2f')}/hour, "
        f"{fmt_rps(b['fleet_capacity_rps']) if math.isfinite(b['fleet_capacity_rps']) else '-'}"
        f" RPS under the SLA, P(meet) {num(b['p_meets_target'], '.0%')}, "
        + ("keeps the fleet rules" if b["keeps_rules"] else "does NOT keep the fleet rules")
        + ("" if b["count_rules_need"] is None else f" (the rules need {b['count_rules_need']})")
    )
    rows = [
        [
            "base",
            b["instance_type"],
            f"{b['provider']}/{b['region']}",
            str(b["count"] or "-"),
            num(b["hourly_cost_usd"], ".3f"),
            fmt_usd_small(b["usd_per_million_requests"]),
            "0%",
            fmt_rps(b["fleet_capacity_rps"]) if math.isfinite(b["fleet_capacity_rps"]) else "-",
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
                num(o["hourly_cost_usd"], ".3f"),
                fmt_usd_small(o["usd_per_million_requests"]),
                pct(o["cost_pct"]),
                fmt_rps(o["fleet_capacity_rps"]),
                pct(o["capacity_pct"]),
                num(o["p_meets_target"], ".0%"),
            ]
        )
    out = [
        f"Target {doc['target_rps']:,.0f} RPS, p99 <= {doc['sla_p99_ms']:g} ms, "
        f"{doc['pricing']} prices",
        clean(head),
        "",
        table(
            [
                "#",
                "instance",
                "where",
                "count",
                "$/hour",
                "$/M req",
                "cost",
                "RPS (SLA)",
                "capacity",
                "P(meet)",
            ],
            rows,
            {0, 3, 4, 5, 6, 7, 8, 9},
        ),
        "cost, capacity: relative to the baseline; RPS (SLA): the fleet's capacity under the SLA; "
        "P(meet): probability the survivors of the fleet rules serve the target",
        f"source: {doc['source']}",
    ]
    return "\n".join(out)
