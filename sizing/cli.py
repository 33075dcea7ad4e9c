"""Command line: each subcommand parses its arguments and calls one library function.

Imports stay lazy so that ``recommend`` starts without pandas or scipy.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sizing.errors import Infeasible, InputError, ReportError
from sizing.render import fmt_rps as _fmt_rps
from sizing.render import render_catalog, render_recommendation, to_csv
from sizing.render import table as _table
from sizing.units import Parser as _Parser
from sizing.units import int_at_least as _int_at_least
from sizing.units import parse_duration_ms, parse_fraction, parse_rps, parse_size


def _int_between(low: int, high: int) -> Any:
    """An argument type for integers in ``[low, high]``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} must be {low} to {high}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m sizing`` argument parser."""
    parser = _Parser(prog="python -m sizing", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    rec = sub.add_parser(
        "recommend", help="cheapest fleets that meet an RPS target under a p99 SLA"
    )
    _sizing_options(rec)
    _fleet_options(rec)
    rec.add_argument(
        "--max-count",
        type=_int_at_least(1),
        default=None,
        help="largest fleet to consider per instance type",
    )
    rec.add_argument(
        "--top",
        type=_int_at_least(1),
        default=None,
        help="options to show (default 10 in the table, all in json/csv)",
    )
    rec.add_argument("--format", choices=("table", "json", "csv"), default="table")
    rec.add_argument(
        "--mix",
        type=_int_between(1, 8),
        default=1,
        metavar="K",
        help="also find the cheapest fleet of up to K instance types per zone (integer program)",
    )

    fit = sub.add_parser("fit", help="fit scaling curves to a reference dataset")
    fit.add_argument("--reference", default="nginx-web-server", metavar="NAME")
    fit.add_argument(
        "--runs",
        nargs="+",
        default=[],
        metavar="DIR",
        help="fit these run folders instead of the reference",
    )
    fit.add_argument("--allow-simulated", action="store_true", help="accept simulated runs")
    fit.add_argument("--format", choices=("table", "json"), default="table")
    fit.add_argument("--compare", action="store_true", help="include every candidate model")

    ref = sub.add_parser("reference", help="list or show the published reference datasets")
    ref.add_argument("--list", action="store_true", help="list datasets, rows and sources")
    ref.add_argument("--show", metavar="NAME", help="print one dataset as CSV")

    cat = sub.add_parser(
        "catalog", help="list the instance catalog (filtered), or build it from upstream files"
    )
    cat.add_argument("action", nargs="?", choices=("list", "build"), default="list")
    for name in ("provider", "region", "arch", "family"):
        cat.add_argument(f"--{name}")
    cat.add_argument("--catalog", action="append", default=[], metavar="PATH")
    cat.add_argument("--aws-dir", metavar="DIR", help="build: karpenter's AWS files")
    cat.add_argument("--gcp-dir", metavar="DIR", help="build: pricing.yml and series/*.sql")
    cat.add_argument(
        "--burst-table",
        metavar="CSV",
        default=None,
        help="build: AWS 'up to' bandwidth peaks (default: the shipped aws-network-burst.csv)",
    )
    cat.add_argument("--out", metavar="FILE", help="build: the catalog CSV to write")

    rep = sub.add_parser("report", help="execute the sizing report notebook and write HTML")
    _sizing_options(rep)
    rep.add_argument("--top", type=_int_at_least(1), default=10, help="options to show")
    rep.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="folder for the executed notebook and the HTML page",
    )
    rep.add_argument("--show-code", action="store_true", help="keep code cells in the HTML")
    rep.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="any other notebook parameter",
    )

    pre = sub.add_parser("precompute", help="refit the reference and write data/fits/")
    pre.add_argument("--out", default=None, metavar="PATH")
    return parser


def _fleet_options(p: argparse.ArgumentParser) -> None:
    """Zones, failures, pricing, sort and burstable types: ``recommend`` only."""
    p.add_argument(
        "--zones",
        type=_int_between(1, 64),
        default=1,
        metavar="Z",
        help="spread the fleet evenly over Z zones, at least one instance each (default 1)",
    )
    p.add_argument(
        "--zone-loss",
        type=_int_between(0, 63),
        default=0,
        metavar="N",
        help="keep the target with the headroom after losing N whole zones (default 0)",
    )
    p.add_argument(
        "--pricing",
        choices=("on-demand", "spot", "1y", "3y"),
        default="on-demand",
        help="price column: on-demand, spot, 1y or 3y committed (the shipped AWS rows have "
        "on-demand prices only; a --catalog file may add its own spot_usd_hour, "
        "commit_1y_usd_hour, commit_3y_usd_hour)",
    )
    p.add_argument(
        "--spot-reserve",
        type=parse_fraction,
        default=None,
        metavar="FRACTION",
        help="with spot prices: fraction of the fleet that may be reclaimed at once, kept as "
        "extra instances (default 20%%, an estimate)",
    )
    p.add_argument(
        "--sort",
        choices=("cost-at-confidence", "cost"),
        default="cost-at-confidence",
        help="rank by the cost of the count at --confidence (default) or of the point estimate",
    )
    p.add_argument(
        "--burstable",
        action="store_true",
        help="also consider shared-core and credit-based types (t3, e2-micro...)",
    )


def _sizing_options(p: argparse.ArgumentParser) -> None:
    """Target, workload, catalog filters and runs: shared by ``recommend`` and ``report``."""
    p.add_argument("--rps", type=parse_rps, required=True, help="target requests per second")
    p.add_argument(
        "--sla-p99",
        type=parse_duration_ms,
        default=5.0,
        metavar="DURATION",
        help="p99 latency SLA with a unit (default 5ms)",
    )
    p.add_argument(
        "--headroom",
        type=parse_fraction,
        default=None,
        help="spare fraction of each instance's SLA capacity (default 0.2)",
    )
    p.add_argument(
        "--redundancy",
        type=_int_at_least(0),
        default=0,
        help="instances that may fail while the rest meet the target, N+k (default 0)",
    )
    p.add_argument("--protocol", choices=("http", "https"), default="https")
    p.add_argument(
        "--file-size",
        type=parse_size,
        default=1024,
        metavar="SIZE",
        help="response body size, e.g. 0, 1KB, 53KB, 1MB (default 1KB)",
    )
    p.add_argument(
        "--scenario", choices=("static", "reverse_proxy", "api_gateway"), default="static"
    )
    p.add_argument("--provider", help="only these providers (comma list)")
    p.add_argument(
        "--region",
        help="only these regions (comma list), or all (default: us-east-1, us-central1 and "
        "the regions of your --catalog files)",
    )
    p.add_argument("--arch", help="only these architectures: x86_64, arm64 (comma list)")
    p.add_argument("--family", help="only these families (comma list)")
    p.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="PATH",
        help="your own catalog CSV (same columns); adds or replaces entries",
    )
    p.add_argument(
        "--runs",
        nargs="+",
        default=[],
        metavar="DIR",
        help="run folders whose measurements replace or calibrate the model",
    )
    p.add_argument(
        "--allow-simulated",
        action="store_true",
        help="accept simulated runs (their use is marked in the output)",
    )
    p.add_argument(
        "--confidence",
        type=parse_fraction,
        default=0.95,
        metavar="FRACTION",
        help="also give each option's count that keeps the headroom with this "
        "probability (default 0.95)",
    )


def _instances(args: argparse.Namespace) -> list[Any]:
    from sizing.catalog import select_instances

    return select_instances(
        args.catalog,
        provider=args.provider,
        region=args.region,
        arch=args.arch,
        family=args.family,
    )


def cmd_recommend(args: argparse.Namespace) -> int:
    """Print the cheapest fleets for the target."""
    from sizing.capacity import Workload
    from sizing.recommend import DEFAULT_HEADROOM, recommend

    instances = _instances(args)
    work = Workload(args.scenario, args.protocol, args.file_size, args.sla_p99)
    headroom = DEFAULT_HEADROOM if args.headroom is None else args.headroom
    evidence = None
    if args.runs:
        from sizing.catalog import load_catalog
        from sizing.measured import build_evidence, measured_series

        series = measured_series(args.runs, allow_simulated=args.allow_simulated)
        # Match labels against the whole catalog: a filter must not hide the measured type.
        evidence = build_evidence(series, load_catalog(args.catalog), work)
    rec = recommend(
        args.rps,
        instances,
        work,
        headroom,
        args.redundancy,
        args.max_count,
        evidence,
        args.confidence,
        zones=args.zones,
        zone_loss=args.zone_loss,
        pricing=args.pricing,
        spot_reserve=args.spot_reserve,
        sort=args.sort,
        burstable=args.burstable,
        mix=args.mix,
    )
    top = args.top if args.top is not None or args.format != "table" else 10
    doc = rec.to_dict(top=top)
    if args.format == "json":
        print(json.dumps(doc, indent=1))
    elif args.format == "csv":
        print(to_csv(doc["options"]), end="")
    else:
        print(render_recommendation(doc, top or 10))
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    """Print the fitted model of every series of a reference dataset."""
    from sizing.fits import finite_json, fit_reference

    if args.runs:
        from sizing.measured import fit_runs

        rows = fit_runs(args.runs, allow_simulated=args.allow_simulated)
        if not args.compare:
            for r in rows:
                r.pop("comparison", None)
        if args.format == "json":
            print(json.dumps(finite_json({"runs": args.runs, "series": rows}), indent=1))
            return 0
        print(_fit_table(rows))
        return 0
    rows = fit_reference(args.reference, compare=args.compare)
    if args.format == "json":
        print(json.dumps(finite_json({"reference": args.reference, "series": rows}), indent=1))
        return 0
    print(_fit_table(rows))
    return 0


def _fit_table(rows: list[dict[str, Any]]) -> str:
    """Fitted series as a table; runs add their label and measured points."""
    runs = any("label" in r for r in rows)
    table = []
    for r in rows:
        if r.get("model") is None:
            fit_cells = ["-", "(shape borrowed: too few vCPU counts)", "-", "-", "-"]
        else:
            pe = r["power_exponent"]
            params = ", ".join(f"{k}={v:.4g}" for k, v in r["params"].items())
            fit_cells = [
                r["model"],
                params,
                f"{r['mape_pct']:.2f}",
                f"{r['loo_mape_pct']:.2f}",
                f"{pe['b']:.2f} [{pe['low']:.2f}, {pe['high']:.2f}]",
            ]
        head = [r["metric"], r["protocol"], r["file_size"]]
        if runs:
            points = ", ".join(f"{x:g}:{_fmt_rps(y)}" for x, y in zip(r["x"], r["y"], strict=True))
            head = [
                r["label"] + (" (simulated)" if r["simulated"] else ""),
                r["scenario"],
                *head,
                f"{r['sla_p99_ms']:g} ms",
                points,
            ]
        table.append([*head, *fit_cells])
    headers = ["metric", "protocol", "size", "model", "params", "MAPE %", "LOO %", "power b (95%)"]
    if runs:
        headers = ["label", "scenario", *headers[:3], "SLA", "vCPUs:RPS", *headers[3:]]
    n = len(headers)
    out = _table(headers, table, {n - 3, n - 2})
    if runs:
        out += "\n\nruns: " + ", ".join(sorted({x for r in rows for x in r["runs"]}))
    return out


def cmd_reference(args: argparse.Namespace) -> int:
    """List the reference datasets, or print one."""
    from sizing.datasets import list_reference, load_reference

    if args.show:
        print(load_reference(args.show).to_csv(index=False), end="")
        return 0
    rows = [
        [d["name"], str(d["rows"]), ", ".join(d["sources"]), d["file"], d["description"]]
        for d in list_reference()
    ]
    print(_table(["dataset", "rows", "sources", "file", "description"], rows, {1}))
    return 0


def cmd_catalog(args: argparse.Namespace) -> int:
    """Print the filtered instance catalog, or build it from the providers' files."""
    if args.action == "build":
        from sizing.catalog_build import (
            DEFAULT_BURST_TABLE,
            build_catalog,
            iter_summary,
            write_catalog,
        )

        if args.out is None:
            raise InputError("catalog build needs --out FILE")
        result = build_catalog(args.aws_dir, args.gcp_dir, args.burst_table or DEFAULT_BURST_TABLE)
        paths = write_catalog(result, args.out)
        for line in iter_summary(result):
            print(line)
        for p in paths:
            print(p)
        return 0
    print(render_catalog(_instances(args)))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Execute the sizing report with papermill and write its HTML page."""
    from sizing.recommend import DEFAULT_HEADROOM
    from sizing.report import build_report

    params: dict[str, Any] = {
        "rps": args.rps,
        "sla_p99_ms": args.sla_p99,
        "protocol": args.protocol,
        "file_size": str(args.file_size),
        "scenario": args.scenario,
        "headroom": DEFAULT_HEADROOM if args.headroom is None else args.headroom,
        "redundancy": args.redundancy,
        "providers": args.provider or "",
        "regions": args.region or "",
        "arch": args.arch or "",
        "families": args.family or "",
        "catalog": ",".join(args.catalog),
        "top": args.top,
        "runs": ",".join(str(Path(r).resolve()) for r in args.runs),
        "allow_simulated": args.allow_simulated,
        "confidence": args.confidence,
    }
    params.update({name: value for name, value in args.parameter})
    ipynb, html = build_report(params, args.out, show_code=args.show_code)
    print(ipynb)
    print(html)
    return 0


def cmd_precompute(args: argparse.Namespace) -> int:
    """Write the precomputed reference fits."""
    from sizing.fits import precompute
    from sizing.paths import FITS_PATH

    print(precompute(args.out or FITS_PATH))
    return 0


COMMANDS = {
    "recommend": cmd_recommend,
    "fit": cmd_fit,
    "reference": cmd_reference,
    "catalog": cmd_catalog,
    "precompute": cmd_precompute,
    "report": cmd_report,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (2 bad input, 1 infeasible target)."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except InputError as exc:
        print(f"python -m sizing {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Infeasible as exc:
        print(f"python -m sizing {args.command}: {exc}", file=sys.stderr)
        return 1
    except ReportError as exc:
        print(f"python -m sizing {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except argparse.ArgumentTypeError as exc:
        print(f"python -m sizing {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
