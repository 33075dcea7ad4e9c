"""``python -m sizing recommend``: parse a `SizingRequest`, `size` it, print the answer."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from sizing.cli.k8s import add_k8s_options
from sizing.errors import InputError
from sizing.request import SizingRequest, add_arguments
from trialtable.output import json_text
from trialtable.pathargs import INPUT_FILE, path_arg
from trialtable.values import Subcommands, format_option

HELP = "cheapest fleets that meet an RPS target under a p99 SLA"


#: Request fields a workload file (``python -m sizing workload``) sets, by argparse dest,
#: unless their flag is given: the flag wins.
FROM_WORKLOAD = (
    "rps",
    "file_bytes",
    "requests_per_connection",
    "tls_resumption",
    "protocol",
    "http_version",
)
_DEFAULTS: dict[str, Any] = {}


def add_parser(sub: Subcommands) -> None:
    """The ``recommend`` options: the request's flags, ``--workload`` and ``--format``."""
    p = sub.add_parser("recommend", help=HELP)
    add_arguments(p, "recommend")
    for action in p._actions:
        if action.dest == "rps":
            action.required = False  # --rps or --workload (checked in `run`)
            action.help = "target requests per second (or the peak of --workload)"
    p.add_argument(
        "--workload",
        type=path_arg(INPUT_FILE),
        metavar="FILE",
        help="a workload file from python -m sizing workload --from-log: its peak RPS, size mix, "
        "requests per connection, TLS resumption, protocol and HTTP version, where no flag "
        "gives them (default none)",
    )
    p.add_argument(
        "--workload-growth",
        default="1x",
        metavar="FACTOR",
        help="size for the workload's peak times this factor, e.g. 2x or 150%% (default 1x)",
    )
    format_option(p, ("table", "json", "csv", "k8s"))
    p.add_argument(
        "--explain",
        action="store_true",
        help="with the table format: every note, the traffic, vCPUs by family and the whole "
        "basis the answer rests on (default: one screen, the decision, the options and one "
        "line of basis)",
    )
    add_k8s_options(p)
    _DEFAULTS.update({a.dest: a.default for a in p._actions if a.dest in FROM_WORKLOAD})


def apply_workload(args: argparse.Namespace) -> list[str]:
    """Set the request flags a ``--workload`` file implies where none was given.

    Returns one line for each value taken from the file (said on stderr).
    """
    path = getattr(args, "workload", None)
    if path is None:
        if args.rps is None:
            raise InputError("give --rps, or --workload FILE (python -m sizing workload)")
        return []
    from sizing.workload.accesslog import load_workload_file, workload_to_request_args

    implied: Mapping[str, object] = workload_to_request_args(
        load_workload_file(path), args.workload_growth
    )
    taken = []
    for dest in FROM_WORKLOAD:
        key = "file_size" if dest == "file_bytes" else dest
        if key not in implied or getattr(args, dest) != _DEFAULTS.get(dest):
            continue
        setattr(args, dest, implied[key])
        shown = implied.get("file_size_text", implied[key]) if key == "file_size" else implied[key]
        taken.append(
            f"{dest.replace('_', ' ')} {shown:,.0f}"
            if dest == "rps"
            else f"{dest.replace('_', ' ')} {shown}"
        )
    return taken


def run(args: argparse.Namespace) -> int:
    """Print the cheapest fleets for the target, the decision first."""
    from sizing.pipeline import size
    from sizing.report.render import render_recommendation, to_csv

    taken = apply_workload(args)
    if taken:
        print(
            f"python -m sizing recommend: from workload {args.workload}: " + "; ".join(taken),
            file=sys.stderr,
        )
    if args.format == "k8s":
        from sizing.cli import k8s

        return k8s.run(args)
    answer = size(SizingRequest.from_args(args))
    if answer.warning:
        print(f"python -m sizing recommend: {answer.warning}", file=sys.stderr)
    top = args.top if args.top is not None or args.format != "table" else 10
    doc = answer.to_dict(top=top)
    if args.format != "csv":
        from sizing.analyses.baseline import against_on_demand

        other = against_on_demand(answer)
        if other is not None:
            doc["against_on_demand"] = other
    if args.format == "json":
        print(json_text(doc, indent=1))
    elif args.format == "csv":
        print(to_csv(doc["options"]), end="")
    else:
        print(render_recommendation(doc, top or 10, explain=args.explain))
    return 0
