"""``python -m sizing reference`` and ``precompute``: the published datasets and their fits."""

from __future__ import annotations

import argparse
from pathlib import Path

from sizing.cli.common import require_out_folder
from sizing.paths import REFERENCE_DIR
from sizing.report.render import table as _table
from trialtable.pathargs import INPUT_FILE, OUTPUT_FILE, path_arg
from trialtable.values import Subcommands


def add_parsers(sub: Subcommands) -> None:
    """The ``reference`` and ``precompute`` options."""
    ref = sub.add_parser("reference", help="list or show the published reference datasets")
    ref.add_argument("--list", action="store_true", help="list datasets, rows and sources")
    ref.add_argument("--show", metavar="NAME", help="print one dataset as CSV")
    ref.add_argument(
        "--feature-costs",
        nargs="?",
        const=str(REFERENCE_DIR / "feature-costs.csv"),
        type=path_arg(INPUT_FILE),
        metavar="FILE",
        help="print each configuration feature's measured cost and its reference-core cost "
        "(default file data/reference/feature-costs.csv)",
    )

    pre = sub.add_parser("precompute", help="refit the reference and write data/fits/")
    pre.add_argument(
        "--out",
        default=None,
        type=path_arg(OUTPUT_FILE),
        metavar="PATH",
        help="where to write (default data/fits/...)",
    )


def run_reference(args: argparse.Namespace) -> int:
    """List the reference datasets, or print one."""
    from sizing.model.datasets import list_reference, load_reference

    if args.show:
        print(load_reference(args.show).to_csv(index=False), end="")
        return 0
    if args.feature_costs is not None:
        print(feature_costs_table(args.feature_costs))
        return 0
    rows = [
        [d["name"], str(d["rows"]), ", ".join(d["sources"]), d["file"], d["description"]]
        for d in list_reference()
    ]
    print(_table(["dataset", "rows", "sources", "file", "description"], rows, {1}))
    return 0


def run_precompute(args: argparse.Namespace) -> int:
    """Write the precomputed reference fits."""
    from sizing.fitting.cloudfit import precompute_cloud_model
    from sizing.fitting.fits import precompute, precompute_cost_model, precompute_platforms
    from sizing.paths import FITS_PATH

    if args.out is not None:
        require_out_folder(str(Path(args.out).parent))
    print(precompute(args.out or FITS_PATH))
    if args.out is None:
        print(precompute_cost_model())
        print(precompute_platforms())
        print(precompute_cloud_model())
    return 0


def feature_costs_table(path: str | None) -> str:
    """The measured feature costs and what each costs on the reference core, as a table."""
    from sizing.model.capacity import reference_request_us
    from sizing.model.features import load_feature_costs, on_reference_core, reference_us
    from trialtable.features import REFERENCE_WITH

    rows = []
    costs = load_feature_costs(path)
    for name, cost in costs.items():
        core = on_reference_core(cost, reference_us(cost, reference_request_us, costs))
        rows.append(
            [
                name,
                " + ".join((cost.reference, *REFERENCE_WITH.get(name, ()))),
                f"{cost.user_us:.2f}",
                f"{cost.kernel_us:.2f}",
                f"{core.user_us + core.kernel_us:.2f}",
                f"{core.sd_us:.2f}",
                f"x{core.speed_ratio:.2f}",
            ]
        )
    head = ["feature", "vs", "host user us", "host kernel us", "ref. core us", "sd us", "speed"]
    measured = sorted({cost.source for cost in costs.values()})
    return "\n".join([_table(head, rows, {2, 3, 4, 5, 6}), "measured:", *measured])
