"""``python -m sizing catalog``: list the filtered catalog, or build it from upstream files."""

from __future__ import annotations

import argparse
import contextlib
import gc
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sizing.catalog import providers
from sizing.cli.common import catalog_rows
from sizing.errors import InputError, printable
from sizing.report.render import render_catalog
from trialtable.pathargs import INPUT_FILE, INPUT_FOLDER, OUTPUT_FILE, path_arg
from trialtable.values import Subcommands

if TYPE_CHECKING:
    from sizing.catalog.rows import BuildResult


def add_parser(sub: Subcommands) -> None:
    """The ``catalog`` options."""
    cat = sub.add_parser(
        "catalog", help="list the instance catalog (filtered), or build it from upstream files"
    )
    cat.add_argument(
        "action",
        nargs="?",
        choices=("list", "build", "update"),
        default="list",
        help="list (default) or build the catalog from the providers' public files; update: "
        "one AWS or Azure region's prices from the provider's public prices "
        "(--provider aws|azure --region R; gcp from a saved SKU list, --from FILE)",
    )
    cat.add_argument(
        "--provider", help="only these providers, e.g. aws,gcp (comma list; default: all)"
    )
    cat.add_argument(
        "--region",
        help="only these regions, e.g. us-east-1 (comma list), or all (default: us-east-1, "
        "us-central1 and the regions of your --catalog files)",
    )
    cat.add_argument(
        "--arch", help="only these architectures: x86_64, arm64 (comma list; default: all)"
    )
    cat.add_argument(
        "--family", help="only these families, e.g. c7g,t2a-standard (comma list; default: all)"
    )
    cat.add_argument(
        "--catalog",
        action="append",
        default=[],
        type=path_arg(INPUT_FILE),
        metavar="PATH",
        help="your own catalog CSV (same columns); adds or replaces entries; repeatable",
    )
    # One --NAME-dir per provider module (`sizing.catalog.providers`), named by its NAME.
    for name, module in providers.providers().items():
        cat.add_argument(
            f"--{name}-dir",
            dest=f"{name}_dir",
            type=path_arg(INPUT_FOLDER),
            metavar="DIR",
            help=f"build: the folder of {module.TITLE} files ({module.UPSTREAM})",
        )
    cat.add_argument(
        "--upstream",
        type=path_arg(INPUT_FOLDER),
        metavar="DIR",
        help="build: a folder with one subfolder of public files per provider, named as the "
        f"provider ({', '.join(f'{n}/' for n in providers.names())}); a --NAME-dir wins",
    )
    cat.add_argument(
        "--burst-table",
        type=path_arg(INPUT_FILE),
        metavar="CSV",
        default=None,
        help="build: AWS 'up to' bandwidth peaks (default: the shipped aws-network-burst.csv)",
    )
    cat.add_argument(
        "--out",
        type=path_arg(OUTPUT_FILE),
        metavar="FILE",
        help="build, update: the catalog CSV to write (update: default PROVIDER-REGION.csv)",
    )
    cat.add_argument(
        "--from",
        dest="from_file",
        type=path_arg(INPUT_FILE),
        metavar="FILE",
        help="update --provider gcp: a saved Cloud Billing Catalog answer of Compute Engine's "
        "SKUs (its API needs a key, so it is not fetched)",
    )
    cat.add_argument(
        "--offer",
        type=path_arg(INPUT_FILE),
        metavar="FILE_OR_URL",
        help="update: the AWS offer CSV, or the Azure Retail Prices API's first page (URL or a "
        "saved whole answer), to read (default: the provider's public URL for the region)",
    )


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused for the block, then as it was.

    A build makes a few hundred thousand dicts, tuples and texts and no cycle: each
    collection the allocations would trigger walks them all and frees nothing (a twentieth
    of the build's time).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: How each provider names a region: the pattern, the provider's name and an example.
REGION_NAMES = {
    "aws": (r"[a-z]{2}(-[a-z]+)+-\d{1,2}", "AWS", "eu-central-1"),
    "azure": (r"[a-z][a-z0-9]{2,39}", "Azure", "westeurope"),
    "gcp": (r"[a-z]+-[a-z]+\d{1,2}", "GCP", "europe-west3"),
}


def _region(provider: str, given: str | None) -> str:
    """``--region`` checked against how ``provider`` names its regions, or InputError."""
    region = (given or "").strip().lower()
    pattern, name, example = REGION_NAMES[provider]
    if not re.fullmatch(pattern, region):
        raise InputError(
            f"catalog update needs --region as {name} names it, e.g. {example}, "
            f"got {printable(given or '')!r}"
        )
    return region


def _update(args: argparse.Namespace) -> int:
    """``catalog update``: one AWS, Azure or GCP region's catalog from the provider's prices."""
    from sizing.catalog.build import iter_summary, write_catalog

    provider = (args.provider or "").lower()
    if provider == "gcp" and not args.from_file:
        raise InputError(
            "catalog update --provider gcp: Google's Cloud Billing Catalog API needs an API "
            "key, so it is not fetched; save its Compute Engine SKU list and add --from FILE"
        )
    if provider not in ("aws", "azure", "gcp"):
        raise InputError("catalog update needs --provider aws, azure or gcp")
    region = _region(provider, args.region)
    with _no_cycle_collection():
        if provider == "gcp":
            result, out = _update_gcp(region, args)
        elif provider == "azure":
            result, out = _update_azure(region, args)
        else:
            result, out = _update_aws(region, args)
        paths = write_catalog(result, out)
    for line in iter_summary(result):
        print(line)
    for p in paths:
        print(p)
    return 0


def _update_aws(region: str, args: argparse.Namespace) -> tuple[BuildResult, Path]:
    """The rows of one AWS region from its offer file, and where they go."""
    from sizing.catalog.offer import default_out, offer_url, update_aws

    out = Path(args.out or default_out(region))
    return update_aws(region, args.offer or offer_url(region)), out


def _update_azure(region: str, args: argparse.Namespace) -> tuple[BuildResult, Path]:
    """The rows of one Azure region from the Retail Prices API, and where they go."""
    from sizing.catalog.retail import default_out, region_url, update_azure

    out = Path(args.out or default_out(region))
    return update_azure(region, args.offer or region_url(region)), out


def _update_gcp(region: str, args: argparse.Namespace) -> tuple[BuildResult, Path]:
    """The rows of one GCP region from a saved Cloud Billing Catalog SKU list."""
    from sizing.catalog.skus import default_out, update_gcp

    out = Path(args.out or default_out(region))
    return update_gcp(region, args.from_file), out


def run(args: argparse.Namespace) -> int:
    """Print the filtered instance catalog, build it from the providers' files, or update it."""
    if args.action == "update":
        return _update(args)
    if args.action == "build":
        from sizing.catalog.build import (
            DEFAULT_BURST_TABLE,
            build_providers,
            iter_summary,
            write_catalog,
        )

        if args.out is None:
            raise InputError("catalog build needs --out FILE")
        folders = {
            name: folder
            for name in providers.names()
            if (folder := getattr(args, f"{name}_dir")) is not None
        }
        if args.upstream is not None:
            upstream = Path(args.upstream)
            if not upstream.is_dir():
                raise InputError(f"--upstream {printable(str(upstream))}: not a folder")
            for name in providers.names():
                sub = upstream / name
                if name not in folders and sub.is_dir():
                    folders[name] = sub

        with _no_cycle_collection():
            result = build_providers(folders, args.burst_table or DEFAULT_BURST_TABLE)
            paths = write_catalog(result, args.out)
        for line in iter_summary(result):
            print(line)
        for p in paths:
            print(p)
        return 0
    print(render_catalog(catalog_rows(args)))
    return 0
