"""Command line: each subcommand parses its arguments and calls one library function.

One module per subcommand (`sizing.cli.recommend`, ``compare``, ``k8s``, ``report``, ``fit``,
``reference``, ``catalog``, ``plan``; ``workload`` is `sizing.evidence.accesslog`'s) adds its
parser and runs it; the sizing subcommands build their options from
`sizing.request.SizingRequest` and answer through `sizing.pipeline.size`.
Imports stay lazy so that ``recommend`` starts without pandas or scipy, and a run imports
only its own subcommand's module.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from sizing.cli.common import progress_bar as _progress_bar
from sizing.errors import Infeasible, InputError, ReportError, printable
from sizing.units import Parser as _Parser
from sizing.units import parse_duration_ms, parse_size

__all__ = ["COMMANDS", "build_parser", "main", "parse_duration_ms", "parse_size"]
_ = _progress_bar  # re-exported: the progress bar of long subcommands


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, its module imported on the first call (a run imports only its own)."""

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    call.__name__ = call.__qualname__ = name
    return call


#: Each module's parser builder, in the order of the full parser (``reference`` adds
#: ``precompute`` too).
_ADDERS: tuple[tuple[tuple[str, ...], Callable[[Any], object]], ...] = (
    (("recommend",), _lazy("sizing.cli.recommend", "add_parser")),
    (("compare",), _lazy("sizing.cli.compare", "add_parser")),
    (("k8s",), _lazy("sizing.cli.k8s", "add_parser")),
    (("fit",), _lazy("sizing.cli.fit", "add_parser")),
    (("reference", "precompute"), _lazy("sizing.cli.reference", "add_parsers")),
    (("catalog",), _lazy("sizing.cli.catalog", "add_parser")),
    (("report",), _lazy("sizing.cli.report", "add_parser")),
    (("plan-measurements",), _lazy("sizing.cli.plan", "add_parser")),
    (("workload",), _lazy("sizing.evidence.accesslog", "add_parser")),
)
#: The subcommands as the full parser's usage line lists them.
_CHOICES = "{" + ",".join(name for names, _ in _ADDERS for name in names) + "}"


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
    only = next((add for names, add in _ADDERS if command in names), None)
    if only is None:
        sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
        for _, add in _ADDERS:
            add(sub)
        return parser
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar=_CHOICES
    )
    only(sub)
    return parser


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "plan-measurements": _lazy("sizing.cli.plan", "run"),
    "recommend": _lazy("sizing.cli.recommend", "run"),
    "compare": _lazy("sizing.cli.compare", "run"),
    "k8s": _lazy("sizing.cli.k8s", "run"),
    "fit": _lazy("sizing.cli.fit", "run"),
    "reference": _lazy("sizing.cli.reference", "run_reference"),
    "catalog": _lazy("sizing.cli.catalog", "run"),
    "precompute": _lazy("sizing.cli.reference", "run_precompute"),
    "report": _lazy("sizing.cli.report", "run"),
    "workload": _lazy("sizing.evidence.accesslog", "run"),
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
