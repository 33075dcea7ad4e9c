"""``python -m sizing plan-measurements``: which platform, measured, would most lower the cost."""

from __future__ import annotations

import argparse

from sizing.request import SizingRequest, add_arguments
from sizing.units import int_at_least
from trialtable.output import json_text
from trialtable.values import Subcommands, format_option, int_between

HELP = "which CPU platform, measured, would most lower the fleet's cost at confidence"


def add_parser(sub: Subcommands) -> None:
    """The ``plan-measurements`` options: the request's flags and the Monte Carlo's."""
    p = sub.add_parser("plan-measurements", help=HELP)
    add_arguments(p, "plan-measurements")
    p.add_argument("--top", type=int_at_least(1), default=5, help="commands to print (5)")
    p.add_argument(
        "--residual-sd",
        type=float,
        default=0.05,
        metavar="SD",
        help="log-sd of a capacity left after measuring it (default 0.05)",
    )
    p.add_argument("--draws", type=int_at_least(100), default=4000, help="Monte Carlo draws")
    p.add_argument(
        "--seed", type=int_between(0, 2**32 - 1), default=20261121, help="seed of the draws"
    )
    format_option(p)


def run(args: argparse.Namespace) -> int:
    """Rank CPU platforms by the value of measuring them; print the ranking."""
    from sizing.analyses.plan_measure import Draws, plan_for, render

    # --top here is the number of commands to print, not a field of the request.
    fields = argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "top"})
    answer, plan = plan_for(
        SizingRequest.from_args(fields), Draws(args.residual_sd, args.draws, args.seed)
    )
    if args.format == "json":
        print(json_text({"decision": answer.decision, **plan.to_dict()}, indent=1))
    else:
        print(render(plan, args.top, decision=answer.decision))
    return 0
