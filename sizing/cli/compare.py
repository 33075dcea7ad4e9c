"""``python -m sizing compare --baseline``: every option of a request against today's fleet."""

from __future__ import annotations

import argparse
import sys

from sizing.request import SizingRequest, add_arguments
from trialtable.values import Subcommands, format_option

HELP = "every option of a request against what you run today (--baseline)"


def add_parser(sub: Subcommands) -> None:
    """The ``compare`` options: the request's flags, ``--baseline`` and ``--format``."""
    p = sub.add_parser("compare", help=HELP)
    p.add_argument(
        "--baseline",
        required=True,
        metavar="TYPE[xN]",
        help="instance type you run today and optionally how many, e.g. 'c6i.xlarge x12' "
        "(without a count: the count its type needs for the target)",
    )
    add_arguments(p, "compare")
    format_option(p)


def run(args: argparse.Namespace) -> int:
    """Print every option of the request relative to the ``--baseline`` fleet."""
    from sizing.analyses.baseline import compare_to_baseline, parse_baseline, render_baseline
    from sizing.catalog.load import load_catalog
    from sizing.pipeline import size
    from trialtable.output import json_text

    request = SizingRequest.from_args(args)
    catalog = load_catalog(list(request.catalog))
    spec = parse_baseline(args.baseline, {i.instance_type for i in catalog})
    answer = size(request)
    if answer.warning:
        print(f"python -m sizing compare: {answer.warning}", file=sys.stderr)
    doc = compare_to_baseline(answer.recommendation, spec, catalog, request.top or 10)
    if args.format == "json":
        print(json_text(doc, indent=1))
    else:
        print(render_baseline(doc))
    return 0
