"""``python -m sizing recommend``: parse a `SizingRequest`, `size` it, print the answer."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sizing.cli.k8s import add_k8s_options
from sizing.request import SizingRequest, add_arguments
from trialtable.output import json_text
from trialtable.values import format_option

HELP = "cheapest fleets that meet an RPS target under a p99 SLA"


def add_parser(sub: Any) -> None:
    """The ``recommend`` options: the request's flags and ``--format``."""
    p = sub.add_parser("recommend", help=HELP)
    add_arguments(p, "recommend")
    format_option(p, ("table", "json", "csv", "k8s"))
    add_k8s_options(p)


def run(args: argparse.Namespace) -> int:
    """Print the cheapest fleets for the target, the decision first."""
    from sizing.pipeline import size
    from sizing.report.render import render_recommendation, to_csv

    if args.format == "k8s":
        from sizing.cli import k8s

        return k8s.run(args)
    answer = size(SizingRequest.from_args(args))
    if answer.warning:
        print(f"python -m sizing recommend: {answer.warning}", file=sys.stderr)
    top = args.top if args.top is not None or args.format != "table" else 10
    doc = answer.to_dict(top=top)
    if args.format == "json":
        print(json_text(doc, indent=1))
    elif args.format == "csv":
        print(to_csv(doc["options"]), end="")
    else:
        print(render_recommendation(doc, top or 10))
    return 0
