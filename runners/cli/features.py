"""``python -m runners features``: its options, the campaign run, the table printed.

The campaign itself is `runners.calibrate.features`; this module only parses, calls it and
prints. Local host only: both nginx run on loopback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runners.cli.options import DocSubcommands
from runners.errors import BadInput
from trialtable.features import FEATURE_NAMES, MEASURED
from trialtable.files import out_folder_problem
from trialtable.logpath import CONTAINER_LOG
from trialtable.pathargs import OUTPUT_FILE, path_arg
from trialtable.values import int_between

__all__ = ["add_parser", "main"]


def _feature_list(text: str) -> tuple[str, ...]:
    names = {n.strip() for n in text.split(",") if n.strip()}
    bad = sorted(n for n in names if n not in FEATURE_NAMES)
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a comma list of {', '.join(FEATURE_NAMES)}"
        )
    return tuple(n for n in FEATURE_NAMES if n in names)


def add_parser(sub: DocSubcommands) -> argparse.ArgumentParser:
    """Add the ``features`` subcommand to the runners' subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "features",
        help="measure each configuration feature's extra CPU per request on this host",
        description=(
            "Two private nginx on loopback, pinned to one CPU: the reference static config and "
            "the same with one feature on, loaded by wrk in interleaved pairs; each feature's "
            "extra CPU time per request (user and kernel apart), median over pairs with its "
            "bootstrap 95% interval, written as CSV (and notes beside it, .md)."
        ),
    )
    p.add_argument(
        "--only",
        type=_feature_list,
        default=FEATURE_NAMES,
        metavar="LIST",
        help="comma list of features (default all)",
    )
    p.add_argument("--pairs", type=int_between(2, 100), default=5, help="pairs per feature (5)")
    p.add_argument(
        "--seconds", type=int_between(1, 60), default=2, help="measured trial length [s] (2)"
    )
    p.add_argument(
        "--connections", type=int_between(1, 1000), default=16, help="wrk connections (16)"
    )
    p.add_argument(
        "--file-size", type=int_between(0, 1 << 20), default=1024, help="body bytes (1024)"
    )
    p.add_argument("--cpu", type=int_between(0, 4095), default=0, help="CPU nginx is pinned to")
    p.add_argument(
        "--container-path",
        choices=("cri", "ctr"),
        default="cri",
        help="access_log_container: pods over containerd's CRI API (the kubelet's log path, "
        "needs grpcio) or ctr run (default cri)",
    )
    p.add_argument(
        "--out",
        type=path_arg(OUTPUT_FILE),
        default="data/reference/feature-costs.csv",
        metavar="FILE",
        help="the CSV to write (default data/reference/feature-costs.csv; notes in .md)",
    )
    return p


def main(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    """Run the campaign, write the table, print one line per feature."""
    from runners.calibrate import features as campaign
    from runners.calibrate import logpath

    out = Path(args.out)
    problem = out_folder_problem(out.parent if str(out.parent) else Path("."))
    if problem:
        print(f"python -m runners features: error: --out: {problem}", file=sys.stderr)
        return 2
    # The tables a run adds to are read before any load: a bad one is bad input now.
    campaign.earlier_table(out, set(args.only))
    try:
        logpath.read_table(out.parent / campaign.LOG_PATH_FILE)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"{out.parent / campaign.LOG_PATH_FILE}: {exc}") from None
    settings = campaign.Settings(
        features=args.only,
        pairs=args.pairs,
        seconds=args.seconds,
        connections=args.connections,
        file_bytes=args.file_size,
        cpu=args.cpu,
        container_path=args.container_path,
    )
    results, info = campaign.run_campaign(settings)
    command = campaign.command_line(argv if argv is not None else sys.argv[1:])
    rows = campaign.write_table(results, settings, info, out, command)
    for r in rows:
        if r["status"] == MEASURED:
            print(
                f"{r['feature']}: user {r['user_us']:+.2f} us "
                f"[{r['user_low_us']:+.2f}, {r['user_high_us']:+.2f}], kernel "
                f"{r['kernel_us']:+.2f} us [{r['kernel_low_us']:+.2f}, {r['kernel_high_us']:+.2f}]"
                f" per request over {r['pairs']} pairs (vs {r['reference']})"
            )
        else:
            print(f"{r['feature']}: not measured: {r['note']}")
    print(f"wrote {out} and {out.with_suffix('.md')}")
    if CONTAINER_LOG in args.only and (out.parent / campaign.LOG_PATH_FILE).exists():
        print(f"the container log path's rows: {out.parent / campaign.LOG_PATH_FILE}")
    return 0
