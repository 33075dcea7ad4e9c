"""Command line: each subcommand parses its arguments and calls one library function.

Imports stay lazy so that ``recommend`` starts without pandas or scipy.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sizing.errors import Infeasible, InputError, ReportError, printable
from sizing.units import Parser as _Parser
from sizing.units import int_at_least as _int_at_least
from sizing.units import parse_duration_ms, parse_fraction, parse_rps, parse_size


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m sizing`` argument parser."""
    parser = _Parser(prog="python -m sizing", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    rec = sub.add_parser(
        "recommend", help="cheapest fleets that meet an RPS target under a p99 SLA"
    )
    _sizing_options(rec)
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

    cat = sub.add_parser("catalog", help="list the instance catalog, filtered")
    for name in ("provider", "region", "arch", "family"):
        cat.add_argument(f"--{name}")
    cat.add_argument("--catalog", action="append", default=[], metavar="PATH")

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
    p.add_argument("--region", help="only these regions (comma list)")
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


def _fmt_rps(v: float) -> str:
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k" if v >= 1e3 else f"{v:.0f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def render_recommendation(doc: dict[str, Any], top: int) -> str:
    """Human-readable recommendation: options, vCPUs by family, and what it rests on."""
    w = doc["workload"]
    out = [
        f"Target {doc['target_rps']:,.0f} RPS, p99 <= {doc['sla_p99_ms']:g} ms, "
        f"{w['scenario']} {w['protocol'].upper()} {w['file_bytes']:,} B responses, "
        f"headroom {doc['headroom']:.0%}, redundancy N+{doc['redundancy']}",
        "",
    ]
    rows = []
    for i, o in enumerate(doc["options"][:top], start=1):
        rows.append(
            [
                str(i),
                o["instance_type"],
                f"{o['provider']}/{o['region']}",
                o["arch"],
                str(o["vcpus"]),
                str(o["count"]),
                _fmt_rps(o["capacity_rps_per_instance"]),
                f"{o['utilization_at_target']:.0%}",
                f"{o['hourly_cost_usd']:.3f}",
                f"{o['monthly_cost_usd']:,.0f}",
                f"{o['usd_per_billion_requests']:.3f}",
                o["binding_constraint"] + {"own": "*", "carried": "+"}.get(o["measured"], ""),
                f"{o['p_meets_target']:.0%}",
                str(o["count_at_confidence"] or "-"),
            ]
        )
    out.append(
        _table(
            [
                "#",
                "instance",
                "where",
                "arch",
                "vCPUs",
                "count",
                "RPS/inst",
                "util",
                "$/hour",
                "$/month",
                "$/1e9 req",
                "binds",
                "P(meet)",
                f"n@{doc['confidence']:.0%}",
            ],
            rows,
            {0, 4, 5, 6, 7, 8, 9, 10, 12, 13},
        )
    )
    m = doc.get("measured")
    if m:
        sim = " SIMULATED" if m["simulated"] else ""
        out.append(
            f"* measured{sim} (runs {', '.join(m['runs']) or 'none used'})"
            + ("; + measured level carried through the relative factors" if m["carry_k"] else "")
        )
        for c in m["calibrations"]:
            shape = f"own {c['model']} curve" if c["shape"] == "own" else "shape borrowed"
            out.append(
                f"  {c['label']} -> family {c['family']}: {shape}, x{c['k_vs_model']:.2f} of the "
                f"model at vCPUs {', '.join(f'{v:g}' for v in c['vcpus'])}"
                + ("" if c["carried_to_other_families"] else " (not carried: no factor row)")
            )
        out += [f"  note: {n}" for n in m["notes"]]
    out.append(
        f"P(meet): probability the count serves the target (capacity spread from the "
        f"{'fits and repeats' if m else 'factor ranges, an estimate'}); "
        f"n@{doc['confidence']:.0%}: count that keeps the headroom with that probability"
    )
    out += ["", "vCPUs needed by family (cheapest size; fewest vCPUs over sizes):"]
    fam_rows = [
        [
            f["family"],
            f["provider"],
            f"{f['cheapest_count']} x {f['cheapest_instance_type']}",
            str(f["cheapest_total_vcpus"]),
            str(f["min_total_vcpus"]),
            f"{f['cheapest_hourly_cost_usd']:.3f}",
        ]
        for f in doc["vcpus_by_family"][:top]
    ]
    out.append(
        _table(
            ["family", "provider", "cheapest fleet", "vCPUs", "min vCPUs", "$/hour"],
            fam_rows,
            {3, 4, 5},
        )
    )
    best = doc["options"][0]
    lo, hi = best["capacity_factor_range"]
    out += ["", f"Rests on (option 1, {best['instance_type']}):"]
    out += [f"  - {b}" for b in best["basis"]]
    if best["measured"] == "own":
        clo, chi = best["capacity_interval_rps"]
        out.append(f"  - measured capacity, 95% interval {clo:,.0f} to {chi:,.0f} RPS")
    else:
        out.append(
            f"  - capacity range from the factor ranges: x{lo:.2f} to x{hi:.2f} of the point value"
        )
    used = 1 - doc["headroom"]
    out.append(f"  - estimate: headroom {doc['headroom']:.0%} (capacity used at most {used:.0%})")
    out.append("  - --format json gives every option's basis")
    out.append("  - data/estimates/factors.csv holds the editable estimates")
    return "\n".join(out)


def _csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    if rows:
        flat = [
            {
                k: (
                    "; ".join(v)
                    if k == "basis"
                    else json.dumps(v)
                    if isinstance(v, list | dict)
                    else v
                )
                for k, v in r.items()
            }
            for r in rows
        ]
        writer = csv.DictWriter(buf, fieldnames=list(flat[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(flat)
    return buf.getvalue()


def _instances(args: argparse.Namespace, catalog: list[Any] | None = None) -> list[Any]:
    from sizing.catalog import filter_catalog, load_catalog

    return filter_catalog(
        load_catalog(args.catalog) if catalog is None else catalog,
        provider=args.provider,
        region=args.region,
        arch=args.arch,
        family=args.family,
    )


def cmd_recommend(args: argparse.Namespace) -> int:
    """Print the cheapest fleets for the target."""
    from sizing.capacity import Workload
    from sizing.catalog import load_catalog
    from sizing.recommend import DEFAULT_HEADROOM, recommend

    catalog = load_catalog(args.catalog)
    instances = _instances(args, catalog)
    work = Workload(args.scenario, args.protocol, args.file_size, args.sla_p99)
    headroom = DEFAULT_HEADROOM if args.headroom is None else args.headroom
    evidence = None
    if args.runs:
        from sizing.measured import build_evidence, measured_series

        series = measured_series(args.runs, allow_simulated=args.allow_simulated)
        # Match labels against the whole catalog: a filter must not hide the measured type.
        evidence = build_evidence(series, catalog, work)
    rec = recommend(
        args.rps,
        instances,
        work,
        headroom,
        args.redundancy,
        args.max_count,
        evidence,
        args.confidence,
    )
    doc = rec.to_dict(top=args.top)
    if args.format == "json":
        print(json.dumps(doc, indent=1))
    elif args.format == "csv":
        print(_csv(doc["options"]), end="")
    else:
        print(render_recommendation(doc, args.top or 10))
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
    """Print the filtered instance catalog."""
    items = _instances(args)
    rows = [
        [
            i.provider,
            i.region,
            i.instance_type,
            i.arch,
            str(i.vcpus),
            f"{i.network_gbps:g}",
            f"{i.price_usd_hour:.4f}",
            i.source_date,
        ]
        for i in items
    ]
    print(
        _table(
            ["provider", "region", "instance", "arch", "vCPUs", "Gbps", "$/hour", "as of"],
            rows,
            {4, 5, 6},
        )
    )
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
