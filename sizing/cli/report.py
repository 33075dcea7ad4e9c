"""``python -m sizing report``: the report notebook run on a `SizingRequest`, as HTML (PDF)."""

from __future__ import annotations

import argparse

from sizing.cli.common import progress_wanted, require_out_folder
from sizing.request import SizingRequest, add_arguments
from trialtable.pathargs import OUTPUT_FOLDER, path_arg
from trialtable.values import Subcommands

HELP = "execute the sizing report notebook and write HTML"


def add_parser(sub: Subcommands) -> None:
    """The ``report`` options: the request's flags, where to write and how."""
    p = sub.add_parser("report", help=HELP)
    add_arguments(p, "report")
    p.add_argument(
        "--out",
        required=True,
        type=path_arg(OUTPUT_FOLDER),
        metavar="DIR",
        help="folder for the executed notebook and the HTML page",
    )
    p.add_argument("--show-code", action="store_true", help="keep code cells in the HTML")
    p.add_argument(
        "--pdf", action="store_true", help="also print the page to PDF with headless Chromium"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="any other parameter of notebooks/sizing_report.ipynb (unknown names are refused)",
    )


def request_of(args: argparse.Namespace) -> SizingRequest:
    """The request the flags and the ``-p NAME VALUE`` pairs describe.

    Paths are made absolute: the notebook runs in its own folder.
    """
    from sizing.report.execute import coerce_parameters

    request = SizingRequest.from_args(args)
    if args.parameter:
        given = coerce_parameters("sizing_report", dict(args.parameter))
        request = SizingRequest.from_parameters({**request.to_parameters(), **given})
    return request.absolute()


def run(args: argparse.Namespace) -> int:
    """Execute the sizing report with papermill and write its HTML page."""
    from sizing.evidence.profiles import load_profiles
    from sizing.pipeline import instances_of
    from sizing.report.execute import build_report

    request = request_of(args)
    # The files and filters recommend reads, read as recommend reads them: a bad one is
    # recommend's line here, before --out is made, not a failed notebook cell seconds later.
    instances_of(request)
    load_profiles(request.profiles)
    if request.runs:
        from sizing.model.datasets import load_runs

        load_runs(list(request.runs), allow_simulated=request.allow_simulated)
    require_out_folder(args.out)
    ipynb, html = build_report(
        request.to_parameters(),
        args.out,
        show_code=args.show_code,
        pdf=args.pdf,
        progress=not args.quiet and progress_wanted(),
    )
    print(ipynb)
    print(html)
    if args.pdf:
        print(html.with_suffix(".pdf"))
    return 0
