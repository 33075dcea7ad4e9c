"""Command line: each subcommand parses its arguments and calls one library function.

One module per subcommand (`sizing.cli.recommend`, ``compare``, ``k8s``, ``report``, ``fit``,
``reference``, ``catalog``, ``plan``; ``workload`` is `sizing.evidence.accesslog`'s) adds its
parser and runs it; the sizing subcommands build their options from
`sizing.request.SizingRequest` and answer through `sizing.pipeline.size`.
Imports stay lazy so that ``recommend`` starts without pandas or scipy.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from sizing.cli import catalog, compare, fit, k8s, plan, recommend, reference, report
from sizing.cli.common import progress_bar as _progress_bar
from sizing.errors import Infeasible, InputError, ReportError, printable
from sizing.evidence import accesslog
from sizing.units import Parser as _Parser
from sizing.units import parse_duration_ms, parse_size

__all__ = ["COMMANDS", "build_parser", "main", "parse_duration_ms", "parse_size"]
_ = _progress_bar  # re-exported: the progress bar of long subcommands


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m sizing`` argument parser."""
    parser = _Parser(
        prog="python -m sizing",
        description="How many NGINX servers, of which cloud instance type, serve a target of "
        "requests per second with p99 latency under an SLA, at the lowest cost. Each command "
        "has its own --help.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    recommend.add_parser(sub)
    compare.add_parser(sub)
    k8s.add_parser(sub)
    fit.add_parser(sub)
    reference.add_parsers(sub)
    catalog.add_parser(sub)
    report.add_parser(sub)
    plan.add_parser(sub)
    accesslog.add_parser(sub)
    return parser


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "plan-measurements": plan.run,
    "recommend": recommend.run,
    "compare": compare.run,
    "k8s": k8s.run,
    "fit": fit.run,
    "reference": reference.run_reference,
    "catalog": catalog.run,
    "precompute": reference.run_precompute,
    "report": report.run,
    "workload": accesslog.run,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (2 bad input, 1 infeasible target)."""
    args = build_parser().parse_args(argv)
    prog = f"python -m sizing {args.command}"
    try:
        return COMMANDS[args.command](args)
    except (InputError, argparse.ArgumentTypeError) as exc:
        print(f"{prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except Infeasible as exc:
        print(f"{prog}: {printable(str(exc))}", file=sys.stderr)
        return 1
    except ReportError as exc:
        print(f"{prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # A file the command writes or reads failed in a way no check before could tell.
        where = f" {exc.filename}" if exc.filename else ""
        print(f"{prog}: error:{printable(where)} {exc.strerror or exc}", file=sys.stderr)
        return 1
