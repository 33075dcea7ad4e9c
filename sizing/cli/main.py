"""Command line: each subcommand parses its arguments and calls one library function.

One module per subcommand (`sizing.cli.recommend`, ``compare``, ``k8s``, ``report``, ``fit``,
``reference``, ``catalog``, ``plan``, ``workload``) adds its
parser and runs it; the sizing subcommands build their options from
`sizing.request.SizingRequest` and answer through `sizing.pipeline.size`.
Imports stay lazy so that ``recommend`` starts without pandas or scipy.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from sizing.cli.common import progress_bar as _progress_bar
from sizing.errors import Infeasible, InputError, ReportError, printable
from sizing.units import Parser as _Parser
from sizing.units import parse_duration_ms, parse_size
from trialtable.values import Subcommands

__all__ = ["COMMANDS", "build_parser", "main", "parse_duration_ms", "parse_size"]
_ = _progress_bar  # re-exported: the progress bar of long subcommands


#: Each subcommand's module and the function that adds its parser, in the order of the full
#: parser (``reference`` adds ``precompute`` too). A module is imported when its command
#: runs (or the full parser is built): a command loads only its own code.
_ADDERS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("recommend",), "sizing.cli.recommend", "add_parser"),
    (("compare",), "sizing.cli.compare", "add_parser"),
    (("k8s",), "sizing.cli.k8s", "add_parser"),
    (("fit",), "sizing.cli.fit", "add_parser"),
    (("reference", "precompute"), "sizing.cli.reference", "add_parsers"),
    (("catalog",), "sizing.cli.catalog", "add_parser"),
    (("report",), "sizing.cli.report", "add_parser"),
    (("plan-measurements",), "sizing.cli.plan", "add_parser"),
    (("workload",), "sizing.cli.workload", "add_parser"),
)
#: The subcommands as the full parser's usage line lists them.
_CHOICES = "{" + ",".join(name for names, _, _ in _ADDERS for name in names) + "}"


def _adder(module: str, name: str) -> Callable[[Subcommands], None]:
    """``module.name``, a function that adds a subcommand's parser, imported on first use."""
    function: Callable[[Subcommands], None] = getattr(importlib.import_module(module), name)
    return function


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``python -m sizing`` argument parser.

    With ``command`` (a subcommand's name), only that subcommand's options are built (what
    a run of it parses: its messages and help are the same); the usage line still lists
    every subcommand.
    """
    parser = _Parser(
        prog="python -m sizing",
        description="How many NGINX servers, of which cloud instance type, serve a target of "
        "requests per second with p99 latency under an SLA, at the lowest cost. Each command "
        "has its own --help.",
    )
    only = next((add for names, *add in _ADDERS if command in names), None)
    if only is None:
        sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
        for _, module, name in _ADDERS:
            _adder(module, name)(sub)
        return parser
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar=_CHOICES
    )
    _adder(*only)(sub)
    return parser


def _runner(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A command's run function, its module imported when the command runs."""

    def run(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(module), name
        )
        return command(args)

    run.__qualname__ = run.__name__ = f"{module}.{name}"
    return run


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "plan-measurements": _runner("sizing.cli.plan", "run"),
    "recommend": _runner("sizing.cli.recommend", "run"),
    "compare": _runner("sizing.cli.compare", "run"),
    "k8s": _runner("sizing.cli.k8s", "run"),
    "fit": _runner("sizing.cli.fit", "run"),
    "reference": _runner("sizing.cli.reference", "run_reference"),
    "catalog": _runner("sizing.cli.catalog", "run"),
    "precompute": _runner("sizing.cli.reference", "run_precompute"),
    "report": _runner("sizing.cli.report", "run"),
    "workload": _runner("sizing.cli.workload", "run"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (2 bad input, 1 infeasible target)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # The parser of the subcommand asked for alone (building all ten costs a start-up's tenth).
    args = build_parser(argv[0] if argv else None).parse_args(argv)
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
