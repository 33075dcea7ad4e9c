"""``python -m sizing fit``: fit scaling curves (reference or runs), or show a profile."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from sizing.cli.common import progress_bar
from sizing.errors import Infeasible
from sizing.report.render import fmt_rps as _fmt_rps
from sizing.report.render import table as _table
from sizing.request import SizingRequest, add_arguments
from trialtable.output import terminal
from trialtable.pathargs import RUN_FOLDER, path_arg
from trialtable.values import Subcommands, format_option

if TYPE_CHECKING:
    from sizing.model.costmodel import Cost
    from sizing.workload.value import Workload


def add_parser(sub: Subcommands) -> None:
    """The ``fit`` options: what to fit, and the workload whose cost is broken down."""
    fit = sub.add_parser("fit", help="fit scaling curves to a reference dataset")
    fit.add_argument(
        "--reference",
        default="nginx-web-server",
        metavar="NAME",
        help="reference dataset to fit (python -m sizing reference --list)",
    )
    fit.add_argument(
        "--runs",
        nargs="+",
        default=[],
        type=path_arg(RUN_FOLDER),
        metavar="DIR",
        help="fit these run folders instead of the reference",
    )
    fit.add_argument("--allow-simulated", action="store_true", help="accept simulated runs")
    format_option(fit)
    fit.add_argument("--compare", action="store_true", help="include every candidate model")
    add_arguments(fit, "fit")


def run(args: argparse.Namespace) -> int:
    """Print the fitted model of every series of a reference dataset."""
    from sizing.fitting.fits import fit_reference
    from sizing.units import finite_json

    if args.runs:
        from sizing.evidence.measured import fit_runs

        rows = fit_runs(args.runs, allow_simulated=args.allow_simulated)
        if not rows:
            # As recommend with runs that measured nothing it can use: exit 1, not a table.
            raise Infeasible(
                f"the {len(args.runs)} run folder(s) hold no trials to fit ({', '.join(args.runs)})"
            )
        if not args.compare:
            for r in rows:
                r.pop("comparison", None)
        if args.format == "json":
            print(json.dumps(finite_json({"runs": args.runs, "series": rows}), indent=1))
            return 0
        print(_fit_table(rows))
        return 0
    if args.profiles:
        from sizing.evidence.profiles import describe_profile, load_profiles

        profs = load_profiles(args.profiles)
        print(terminal("\n\n".join(describe_profile(p) for p in profs)))
        return 0
    from sizing.model.costmodel import cpu_us_per_request, load_cost_model, reference_profile

    with progress_bar("fit", "series") as tick:
        rows = fit_reference(args.reference, compare=args.compare, progress=tick)
    doc = load_cost_model()
    work = SizingRequest.from_args(args).workload()
    cost = cpu_us_per_request(work, reference_profile())
    if args.format == "json":
        print(
            json.dumps(
                finite_json(
                    {
                        "reference": args.reference,
                        "cost_model": doc,
                        "workload": work.to_dict(),
                        "cpu_us_per_request": cost.us,
                        "cost_terms_us": cost.terms,
                        "series": rows,
                    }
                ),
                indent=1,
            )
        )
        return 0
    print(_cost_model_table(doc, work, cost))
    print()
    print("Per-series scaling curves (for comparison):")
    print(_fit_table(rows))
    return 0


def _cost_model_table(doc: dict[str, Any], work: Workload, cost: Cost) -> str:
    """The reference coefficients with standard errors, and the per-point residuals."""
    out = [
        f"Cost model of {doc['cpu_model']} ({doc['stack']}), fitted jointly to "
        f"{doc['n_points']} RPS/CPS values of {doc['source']}; residual sd "
        f"{doc['residual_sd']:.1%} (log scale)",
        "",
    ]
    rows = [
        [
            name,
            f"{c['value']:.4g}",
            f"{c['stderr']:.2g}",
            c["unit"],
            c["measured_over"],
            c["source"][:90],
        ]
        for name, c in doc["coefficients"].items()
    ]
    out.append(_table(["coefficient", "value", "+- se", "unit", "over", "source"], rows, {1, 2}))
    sc, st = doc["scaling"], doc["seed_test"]
    out += [
        "",
        f"scaling: sigma {sc['sigma']:.3g} +- {sc['sigma_stderr']:.2g} ({sc['meaning']})",
        f"seed test (not carried to instances): client-side delay z {st['z_us']:.3g} +- "
        f"{st['z_us_stderr']:.2g} us, per response byte +{st.get('z_byte_ns', 0.0):.3g} ns, "
        f"per new connection +{st['z_connection_us']:.3g} us, per full TLS handshake "
        f"+{st.get('z_handshake_us', 0.0):.3g} us, link {st['link_fraction']:.3g} x 80 Gbps",
        "",
        "Per-point residuals (predicted vs published):",
    ]
    res = [
        [
            r["metric"].replace("_per_s", "/s"),
            r["protocol"],
            f"{r['file_bytes']}",
            f"{r['cpus']}",
            f"{r['value']:,.0f}",
            f"{r['predicted']:,.0f}",
            f"{r['error_pct']:+.1f}%",
        ]
        for r in doc["residuals"]
    ]
    out.append(
        _table(
            ["metric", "protocol", "bytes", "CPUs", "published", "model", "error"],
            res,
            {2, 3, 4, 5, 6},
        )
    )
    terms = ", ".join(f"{k} {v:.2f}" for k, v in cost.terms.items())
    out += [
        "",
        f"{work.describe()}: {cost.us:.1f} us per request on the reference core "
        f"(+-{cost.rel_sd:.0%}): {terms}",
    ]
    return "\n".join(out)


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
