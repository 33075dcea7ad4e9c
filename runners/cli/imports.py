"""``python -m runners import``: other load tools' result files as a run folder.

``python -m runners import FILE... --format k6|k6-summary|vegeta|hey|hdrh|locust
[--label TYPE] [--vcpus N] --out DIR`` writes one trial per file into a new run folder in
DIR (`runners.importers.record`), with the tool, the files' SHA-256 and which columns are
exact and which approximated in its ``run.json``; ``recommend --runs`` and ``runners
compare`` read it as any run. Bad input is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from runners.cli.options import DocSubcommands, judge_options, out_option, response_options
from runners.importers import FORMATS
from trialtable.errors import RunFolderError
from trialtable.fields import printable
from trialtable.pathargs import INPUT_FILE, path_arg
from trialtable.schema import SCENARIOS
from trialtable.values import (
    int_between,
    within_column,
)

__all__ = ["add_parser", "main"]


def add_parser(sub: DocSubcommands) -> argparse.ArgumentParser:
    """Add the ``import`` subcommand to the runners' subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "import",
        help="import k6, vegeta, hey, HdrHistogram-log or Locust results as a run folder",
        doc_from=("runners.cli.imports", 1),
    )
    p.add_argument(
        "files",
        nargs="+",
        type=path_arg(INPUT_FILE),
        metavar="RESULTS",
        help="result files, one per trial",
    )
    p.add_argument("--format", choices=FORMATS, required=True, help="the files' format")
    p.add_argument(
        "--vcpus",
        type=within_column(int_between(1, 100_000), "vcpus"),
        default=None,
        metavar="N",
        help="the server's vCPUs (without it the trials are invalid for sizing)",
    )
    p.add_argument("--scenario", choices=SCENARIOS, default="static", help="what was served")
    response_options(p, protocol="http")
    judge_options(p)
    p.add_argument(
        "--connections",
        type=within_column(int_between(1, 100_000_000), "connections"),
        default=None,
        metavar="N",
        help="concurrent connections or users the tool ran",
    )
    p.add_argument("--tool-version", default="", metavar="TEXT", help="the tool's version")
    p.add_argument(
        "--unit", choices=("us", "ns", "ms"), default="us", help="hdrh: the values' unit"
    )
    out_option(p)
    return p


def main(args: argparse.Namespace) -> int:
    """Import the files; print the run folder. Exit 2 on bad input."""
    from runners.errors import RunnerError
    from runners.importers.record import Setting, import_files

    setting = Setting(
        label=args.label,
        vcpus=args.vcpus,
        scenario=args.scenario,
        protocol=args.protocol,
        file_bytes=args.file_size,
        sla_p99_ms=args.sla_p99,
        max_error_rate=args.max_error_rate,
        connections=args.connections,
        tool_version=args.tool_version,
        unit=args.unit,
    )
    try:
        path = import_files(args.files, args.format, setting, args.out)
    except (RunnerError, RunFolderError) as exc:
        print(f"python -m runners import: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    print(path)
    return 0
