"""``python -m runners compare``'s options (the comparison itself is `runners.compare`).

Cheap to import: building the parser loads neither the trial-table reader nor the comparison.
"""

from __future__ import annotations

import argparse

from runners.cli.options import DocSubcommands
from runners.names import COMPARE_GATES
from trialtable.pathargs import OUTPUT_FILE, RUN_FOLDER, path_arg
from trialtable.values import format_option, parse_fraction

__all__ = ["add_parser"]


def _gates(text: str) -> tuple[str, ...]:
    names = tuple(g.strip() for g in text.split(",") if g.strip())
    bad = [g for g in names if g not in COMPARE_GATES]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a comma list of {', '.join(COMPARE_GATES)}"
        )
    return names


def add_parser(sub: DocSubcommands) -> argparse.ArgumentParser:
    """Add the ``compare`` subcommand to the runners' subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help="compare two run folders setting by setting; exit 1 when B is worse than A",
        doc_from=("runners.compare", 0),
    )
    p.add_argument("run_a", type=path_arg(RUN_FOLDER), metavar="RUN_A", help="baseline run folder")
    p.add_argument("run_b", type=path_arg(RUN_FOLDER), metavar="RUN_B", help="candidate run folder")
    p.add_argument(
        "--fail-if-worse",
        type=parse_fraction,
        default=0.05,
        metavar="PCT",
        help="exit 1 when B's max RPS under the SLA is lower, or its p99 at equal load "
        "higher, by more than this (default 5%%)",
    )
    p.add_argument(
        "--gate",
        type=_gates,
        default=COMPARE_GATES,
        metavar="LIST",
        help="measures that decide: max-rps, p99 (default both)",
    )
    p.add_argument(
        "--html",
        type=path_arg(OUTPUT_FILE),
        default=None,
        metavar="OUT",
        help="also write an HTML view",
    )
    p.add_argument(
        "--history",
        nargs="+",
        type=path_arg(RUN_FOLDER),
        default=[],
        metavar="RUN",
        help="more run folders for the HTML view's history of max RPS under the SLA",
    )
    format_option(p)
    return p
