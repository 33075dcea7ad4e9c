"""``python -m runners search --nginx-conf FILE``: your nginx.conf's capacity under the SLA.

The config is read, checked and rewritten as ``runners sweep --nginx-conf`` does
(`runners.cli.confsweep.user_plan`: the same refusals, exit 2 before a run starts). Then the
search (`runners.search`) runs twice on the same host with the same options, one run folder
each: first the reference config of the options (the static scenario by default), then yours.
Their capacities under the p99 SLA, and the ratio reference/yours with an interval from both
searches' confirmation trials, are printed; the ratio goes into your run folder as
``conf-cost.json`` (``method: search``), where ``python -m sizing recommend --runs RUN``
reads it as it reads a sweep's (`sizing.evidence.confcost`).

The two searches run one after the other, not interleaved: drift of the host between them
(other work, frequency) is in the ratio, which the interval does not show. For a cost ratio
that cancels drift, ``runners sweep --nginx-conf`` measures interleaved pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from runners.cli.confsweep import cost_document, real_only, store_cost, user_plan
from runners.errors import BadInput
from trialtable.jsonvalue import JsonObject, JsonValue
from trialtable.values import printable

if TYPE_CHECKING:  # a plan and a search load only when one runs
    from runners.deploy.userconf import UserConf
    from runners.plan import Plan
    from runners.search import SearchOptions, SearchResult, TrialReport

PROG = "python -m runners search"
#: The normal quantile of a two-sided 95% interval.
Z95 = 1.959964


@dataclass(frozen=True)
class Asked:
    """What the search options gave: the plan, the search options, the hosts, a reporter."""

    plan: Plan
    options: SearchOptions
    hosts: dict[str, Any]
    on_trial: Callable[[TrialReport], None] | None


def _rel_sd(result: SearchResult) -> float | None:
    """Relative standard deviation of a search's capacity, from its 95% interval [1].

    The interval is a t-interval over a few confirmations: taking its half-width as 1.96
    standard deviations overstates the spread (it widens the ratio's interval, never narrows).
    None without an interval or a capacity above 0.
    """
    low, high, rps = result.ci95_low, result.ci95_high, result.max_rps_under_sla
    if low is None or high is None or rps is None or rps <= 0:
        return None
    return float((high - low) / 2 / Z95 / rps)


def search_measured(
    reference: SearchResult, yours: SearchResult, confirm: int
) -> JsonObject | None:
    """The measured part of ``conf-cost.json`` from two searches, or None without a ratio.

    ``reference`` and ``yours`` are `runners.search.SearchResult`; the ratio is the
    reference's capacity under the SLA over yours (above 1: yours costs more per request),
    its 95% interval from both relative spreads combined in log space.
    """
    ref_rps, your_rps = reference.max_rps_under_sla, yours.max_rps_under_sla
    ref_sd, your_sd = _rel_sd(reference), _rel_sd(yours)
    if ref_rps is None or your_rps is None or ref_sd is None or your_sd is None:
        return None
    ratio = ref_rps / your_rps
    sd = math.hypot(ref_sd, your_sd)
    return {
        "method": "search",
        "measure": "capacity under the p99 SLA, the reference's / yours (searched one after "
        "the other on one host)",
        "ratio": ratio,
        "ratio_low": ratio * math.exp(-Z95 * sd),
        "ratio_high": ratio * math.exp(Z95 * sd),
        "confidence": 0.95,
        "pairs": confirm,
        "sla_p99_ms": reference.sla_p99_ms,
        "reference_rps": ref_rps,
        "rps": your_rps,
    }


def main(args: argparse.Namespace, asked: Asked) -> int:
    """Search the reference, then the user's config; 0, or 2 for bad input, 130 interrupted.

    A host or trial failure is raised (`runners.errors.RunnerError`) for the command line.
    """
    try:
        real_only(args, asked.hosts)
        plan_b, conf = user_plan(asked.plan, args.nginx_conf, args.allow_wildcard_address)
    except BadInput as exc:
        print(f"{PROG}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    plan = asked.plan
    plan_a = replace(plan, label=f"{plan.label}-reference" if plan.label else "reference")
    found: list[tuple[str, SearchResult]] = []
    try:
        for side in (plan_a, plan_b):
            found.append(_search(args, side, asked))
    except KeyboardInterrupt as exc:
        kept = [run_id for run_id, _ in found] + [getattr(exc, "run_id", "")]
        print(
            f"{PROG}: interrupted; the trials so far are kept in run(s) "
            f"{', '.join(k for k in kept if k)} in {args.out} (not resumable: search again)",
            file=sys.stderr,
        )
        return 130
    (ref_id, ref), (run_id, yours) = found
    measured = search_measured(ref, yours, asked.options.confirm)
    doc = cost_document((plan_a, plan_b), conf, (ref_id, run_id), measured) if measured else None
    stored = store_cost(args.out, doc) if doc else None
    if args.format == "json":
        out = {
            "runs": {"reference": ref_id, "yours": run_id},
            "results": {"reference": ref.to_dict(), "yours": yours.to_dict()},
            "conf_cost": doc,
        }
        print(json.dumps(out, indent=1))
        return 0
    _print(conf, (plan_a, plan_b), found, measured)
    print(f"cost ratio stored in {stored}" if stored else "no ratio: a search found no capacity")
    return 0


def _search(args: argparse.Namespace, plan: Plan, asked: Asked) -> tuple[str, SearchResult]:
    """One search of ``plan`` in its own run folder: the run id and its one result."""
    from runners.plan import Access
    from runners.search import run_search

    hosts = asked.hosts
    run_id, results = run_search(
        plan,
        asked.options,
        args.out,
        access=Access(hosts["accept_new_host_keys"], hosts["ssh_config"]),
        progress=None if args.quiet else sys.stderr,
        on_trial=None if args.quiet else asked.on_trial,
    )
    return run_id, results[0]


def _print(
    conf: UserConf,
    plans: tuple[Plan, Plan],
    found: list[tuple[str, SearchResult]],
    measured: Mapping[str, JsonValue] | None,
) -> None:
    """The two capacities, each with its run, and the ratio."""
    ref = plans[0].scenario
    print(
        f"{printable(conf.path)} ({len(conf.files)} file(s), served over "
        f"{plans[1].scenario.protocol}) "
        f"against the reference {ref.name} {ref.protocol} {ref.file_bytes} B config, "
        f"p99 <= {found[0][1].sla_p99_ms:g} ms, searched one after the other on this host"
    )
    for name, (run_id, r) in zip(("reference", "yours"), found, strict=True):
        if r.max_rps_under_sla is None:
            print(f"  {name:9} run {run_id}: no load met the SLA")
            continue
        ci = (
            f" (95% CI {r.ci95_low:,.0f}-{r.ci95_high:,.0f})"
            if r.ci95_low is not None and r.ci95_high is not None
            else ""
        )
        p99 = f", p99 {r.latency_p99_ms:.2f} ms" if r.latency_p99_ms is not None else ""
        print(f"  {name:9} run {run_id}: {r.max_rps_under_sla:,.0f} rps under the SLA{ci}{p99}")
    if measured:
        print(
            f"capacity ratio reference/yours x{measured['ratio']:.2f} (95% "
            f"{measured['ratio_low']:.2f}-{measured['ratio_high']:.2f})"
        )
