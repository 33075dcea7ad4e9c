"""Command line: each subcommand parses its arguments and calls one library function.

Imports stay lazy so that ``recommend`` starts without pandas or scipy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sizing.errors import Infeasible, InputError, ReportError, printable
from sizing.evidence import accesslog as _accesslog
from sizing.report.render import fmt_rps as _fmt_rps
from sizing.report.render import render_catalog, render_recommendation, to_csv
from sizing.report.render import table as _table
from sizing.units import (
    DEFAULT_PROTOCOL,
    parse_confidence,
    parse_duration_ms,
    parse_fraction,
    parse_rps,
    parse_size,
)
from sizing.units import Parser as _Parser
from sizing.units import int_at_least as _int_at_least
from trialtable.output import json_text, terminal
from trialtable.values import format_option, int_between, number_or_percent, parse_path

if TYPE_CHECKING:
    from sizing.model.costmodel import Cost
    from sizing.model.workload import Workload


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
    parser = _Parser(
        prog="python -m sizing",
        description="How many NGINX servers, of which cloud instance type, serve a target of "
        "requests per second with p99 latency under an SLA, at the lowest cost. Each command "
        "has its own --help.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    rec = sub.add_parser(
        "recommend", help="cheapest fleets that meet an RPS target under a p99 SLA"
    )
    _sizing_options(rec)
    _fleet_options(rec)
    _serving_options(rec)
    rec.add_argument(
        "--max-count",
        type=_int_at_least(1),
        default=None,
        help="largest fleet to consider per instance type (default: no limit)",
    )
    rec.add_argument(
        "--top",
        type=_int_at_least(1),
        default=None,
        help="options to show (default 10 in the table, all in json/csv)",
    )
    format_option(rec, ("table", "json", "csv", "k8s"))
    _k8s_options(rec)
    rec.add_argument(
        "--mix",
        type=_int_between(1, 8),
        default=1,
        metavar="K",
        help="also find the cheapest fleet of up to K instance types per zone (integer program)",
    )

    # compare --baseline: every option of the same request against what runs today.
    cmp_ = sub.add_parser(
        "compare", help="every option of a request against what you run today (--baseline)"
    )
    cmp_.add_argument(
        "--baseline",
        required=True,
        metavar="TYPE[xN]",
        help="instance type you run today and optionally how many, e.g. 'c6i.xlarge x12' "
        "(without a count: the count its type needs for the target)",
    )
    _sizing_options(cmp_)
    _fleet_options(cmp_)
    cmp_.add_argument("--max-count", type=_int_at_least(1), default=None, help=argparse.SUPPRESS)
    cmp_.add_argument("--top", type=_int_at_least(1), default=10, help="options shown (10)")
    format_option(cmp_)

    # k8s: Deployment, PodDisruptionBudget and HPA, and the node type that packs them.
    k8s = sub.add_parser("k8s", help="Kubernetes manifests and the cheapest node type")
    _sizing_options(k8s)
    _fleet_options(k8s)
    k8s.add_argument("--max-count", type=_int_at_least(1), default=None, help=argparse.SUPPRESS)
    _k8s_options(k8s)

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
        type=parse_path,
        metavar="DIR",
        help="fit these run folders instead of the reference",
    )
    fit.add_argument("--allow-simulated", action="store_true", help="accept simulated runs")
    format_option(fit)
    fit.add_argument("--compare", action="store_true", help="include every candidate model")
    fit.add_argument(
        "--protocol",
        choices=("http", "https"),
        default="https",
        help="protocol of the workload whose cost is broken down (default https)",
    )
    fit.add_argument(
        "--file-size",
        type=_size_or_mix,
        default=(1024, ()),
        metavar="SIZE",
        help="the workload whose cost per request is broken down (default 1KB)",
    )
    fit.add_argument(
        "--scenario",
        choices=("static", "reverse_proxy", "api_gateway"),
        default="static",
        help="what NGINX does per request in that workload (default static)",
    )
    fit.add_argument(
        "--sla-p99",
        type=parse_duration_ms,
        default=5.0,
        metavar="DURATION",
        help="p99 latency SLA with a unit, for the capacity under the SLA (default 5ms)",
    )
    _workload_options(fit)

    ref = sub.add_parser("reference", help="list or show the published reference datasets")
    ref.add_argument("--list", action="store_true", help="list datasets, rows and sources")
    ref.add_argument("--show", metavar="NAME", help="print one dataset as CSV")

    cat = sub.add_parser(
        "catalog", help="list the instance catalog (filtered), or build it from upstream files"
    )
    cat.add_argument(
        "action",
        nargs="?",
        choices=("list", "build"),
        default="list",
        help="list (default) or build the catalog from the providers' public files",
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
        type=parse_path,
        metavar="PATH",
        help="your own catalog CSV (same columns); adds or replaces entries; repeatable",
    )
    cat.add_argument(
        "--aws-dir", type=parse_path, metavar="DIR", help="build: karpenter's AWS files"
    )
    cat.add_argument(
        "--gcp-dir", type=parse_path, metavar="DIR", help="build: pricing.yml and series/*.sql"
    )
    cat.add_argument(
        "--burst-table",
        type=parse_path,
        metavar="CSV",
        default=None,
        help="build: AWS 'up to' bandwidth peaks (default: the shipped aws-network-burst.csv)",
    )
    cat.add_argument(
        "--out", type=parse_path, metavar="FILE", help="build: the catalog CSV to write"
    )

    rep = sub.add_parser("report", help="execute the sizing report notebook and write HTML")
    _sizing_options(rep)
    rep.add_argument("--top", type=_int_at_least(1), default=10, help="options to show")
    rep.add_argument(
        "--out",
        required=True,
        type=parse_path,
        metavar="DIR",
        help="folder for the executed notebook and the HTML page",
    )
    rep.add_argument("--show-code", action="store_true", help="keep code cells in the HTML")
    rep.add_argument(
        "--pdf", action="store_true", help="also print the page to PDF with headless Chromium"
    )
    rep.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    rep.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="any other parameter of notebooks/sizing_report.ipynb (unknown names are refused)",
    )

    pre = sub.add_parser("precompute", help="refit the reference and write data/fits/")
    pre.add_argument(
        "--out",
        default=None,
        type=parse_path,
        metavar="PATH",
        help="where to write (default data/fits/...)",
    )

    plm = sub.add_parser(
        "plan-measurements",
        help="which CPU platform, measured, would most lower the fleet's cost at confidence",
    )
    _sizing_options(plm)
    _plan_measure_options(plm)
    _accesslog.add_parser(sub)
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
        help="rank by the cost of the count at --confidence (cost-at-confidence, the default) or "
        "of the point estimate (cost)",
    )
    p.add_argument(
        "--burstable",
        action="store_true",
        help="also consider shared-core and credit-based types (t3, e2-micro...)",
    )
    p.add_argument(
        "--growth",
        type=_growth,
        default=None,
        metavar="RATE",
        help="traffic growth, e.g. 2x/yr or 5%%/month: say in which month each fleet must grow",
    )


def _growth(text: str) -> tuple[str, float]:
    """``--growth``: (the text, factor per month)."""
    from sizing.fleet.growth import parse_growth

    try:
        return text, parse_growth(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _k8s_options(p: argparse.ArgumentParser) -> None:
    """Pod size, names and output of the Kubernetes answer (``k8s``, ``recommend --format k8s``)."""
    g = p.add_argument_group("Kubernetes (k8s, --format k8s)")
    g.add_argument("--pod-cpus", type=_int_between(1, 64), default=2, help="CPUs (workers) per pod")
    g.add_argument("--name", default="nginx", help="Deployment name (an RFC 1123 label)")
    g.add_argument("--namespace", default=None, help="namespace (an RFC 1123 label)")
    g.add_argument("--image", default="nginx:1.27", help="container image")
    g.add_argument("--max-replicas", type=_int_at_least(1), default=None, help="HPA ceiling")
    g.add_argument("--out", type=parse_path, default=None, metavar="FILE", help="write YAML here")


def _family_groups(text: str) -> tuple[str, ...]:
    """``hpc,gpu`` -> the family groups (`sizing.catalog.providers.FAMILY_GROUPS`)."""
    from sizing.catalog.providers import FAMILY_GROUPS

    names = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
    bad = [n for n in names if n not in FAMILY_GROUPS and n != "all"]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown family group {(','.join(bad) or text)[:60]!r}; expected a comma list of "
            f"{', '.join(FAMILY_GROUPS)}, or all"
        )
    return names


def _serving_options(p: argparse.ArgumentParser) -> None:
    """Where clients are and which families are in: ``recommend`` only."""
    p.add_argument(
        "--clients",
        choices=("internet", "vpc"),
        default="internet",
        help="where clients are: internet (data transfer out priced in the region's tiers; "
        "default) or vpc (same VPC: with --zones Z > 1 an estimated (Z-1)/Z of responses "
        "pay the inter-zone price)",
    )
    fam = p.add_mutually_exclusive_group()
    fam.add_argument(
        "--include-families",
        type=_family_groups,
        default=(),
        metavar="GROUPS",
        help="bring back family groups that are otherwise left out: a comma list of hpc, gpu, "
        "accelerator, metal, one-size (default none)",
    )
    fam.add_argument(
        "--all-families",
        action="store_const",
        const=("all",),
        dest="include_families",
        help="consider every family (HPC, GPU, accelerator, bare-metal and one-size included)",
    )


def _plan_measure_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-count",
        type=_int_at_least(1),
        default=None,
        help="largest fleet to consider per instance type (default: no limit)",
    )
    p.add_argument("--top", type=_int_at_least(1), default=5, help="commands to print (5)")
    p.add_argument(
        "--residual-sd",
        type=float,
        default=0.05,
        metavar="SD",
        help="log-sd of a capacity left after measuring it (default 0.05)",
    )
    p.add_argument("--draws", type=_int_at_least(100), default=4000, help="Monte Carlo draws")
    p.add_argument(
        "--seed", type=int_between(0, 2**32 - 1), default=20261121, help="seed of the draws"
    )
    format_option(p)


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
    p.add_argument(
        "--protocol",
        choices=("http", "https"),
        default=DEFAULT_PROTOCOL,
        help="protocol clients use (default: %(default)s; the runners measure the same)",
    )
    p.add_argument(
        "--file-size",
        type=_size_or_mix,
        default=(1024, ()),
        metavar="SIZE",
        help="response body size, e.g. 0, 1KB, 53KB, 1MB (default 1KB), or a mix of sizes "
        "with their shares of requests, e.g. 1KB:0.7,50KB:0.3",
    )
    p.add_argument(
        "--scenario",
        choices=("static", "reverse_proxy", "api_gateway"),
        default="static",
        help="what NGINX does per request",
    )
    _workload_options(p)
    p.add_argument("--provider", help="only these providers (comma list; default: all)")
    p.add_argument(
        "--region",
        help="only these regions (comma list), or all (default: us-east-1, us-central1 and "
        "the regions of your --catalog files)",
    )
    p.add_argument(
        "--arch", help="only these architectures: x86_64, arm64 (comma list; default: all)"
    )
    p.add_argument("--family", help="only these families (comma list; default: all)")
    p.add_argument(
        "--catalog",
        action="append",
        default=[],
        type=parse_path,
        metavar="PATH",
        help="your own catalog CSV (same columns); adds or replaces entries",
    )
    p.add_argument(
        "--runs",
        nargs="+",
        default=[],
        type=parse_path,
        metavar="DIR",
        help="run folders whose measurements replace or calibrate the model",
    )
    p.add_argument(
        "--allow-simulated",
        action="store_true",
        help="accept simulated runs (their use is marked in the output)",
    )
    p.add_argument(
        "--allow-unused-runs",
        action="store_true",
        help="answer from the model (with a warning) when no run measured this workload, "
        "instead of exit 1",
    )
    p.add_argument(
        "--confidence",
        type=parse_confidence,
        default=0.95,
        metavar="FRACTION",
        help="also give each option's count that keeps the headroom with this "
        "probability (default 0.95)",
    )


def _size_or_mix(text: str) -> tuple[int, tuple[tuple[int, float], ...]]:
    """``--file-size``: one size or a mix ``SIZE:SHARE,...`` -> (mean bytes, mix)."""
    from sizing.model.workload import parse_size_mix

    try:
        return parse_size_mix(text, parse_size)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _requests_per_connection(text: str) -> float:
    if text.strip().lower() in ("inf", "unlimited"):
        return float("inf")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; expected requests per connection >= 1, or inf"
        ) from None
    if not value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: requests per connection must be >= 1")
    return value


def _share(text: str) -> float:
    """A fraction in [0, 1]: ``0.8`` or ``80%``."""
    value = number_or_percent(text, "a fraction", "0.8 or 80%")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is outside [0, 1]; expected e.g. 0.8")
    return value


def _workload_options(p: argparse.ArgumentParser) -> None:
    """The traffic knobs of `sizing.model.workload.Workload` (shared by recommend, report, fit)."""
    p.add_argument(
        "--requests-per-connection",
        type=_requests_per_connection,
        default=float("inf"),
        metavar="N",
        help="requests per connection (keep-alive reuse); 1 = a new connection for every "
        "request; default inf (connections stay open)",
    )
    p.add_argument(
        "--tls-resumption",
        type=_share,
        default=0.0,
        metavar="FRACTION",
        help="share of new TLS connections that resume a session (default 0)",
    )
    p.add_argument(
        "--tls-key",
        choices=("ecdsa-p256", "rsa2048"),
        default="ecdsa-p256",
        help="server key of full TLS handshakes (default ecdsa-p256)",
    )
    p.add_argument(
        "--gzip",
        type=_share,
        default=0.0,
        metavar="FRACTION",
        help="share of the response bytes NGINX gzip-compresses on the fly (default 0)",
    )
    p.add_argument(
        "--http-version",
        choices=("1.1", "2"),
        default="1.1",
        help="HTTP version clients speak (2: HTTP/2 streams on each connection; default 1.1)",
    )
    p.add_argument(
        "--network",
        choices=("baseline", "burst"),
        default="baseline",
        help="size against sustained bandwidth (baseline, the default) or the 'up to' peaks "
        "(burst), AWS and GCP alike",
    )
    p.add_argument(
        "--internet-facing",
        action="store_true",
        help="traffic passes AWS's internet gateway: 5 Gbps under 32 vCPUs",
    )
    p.add_argument(
        "--environment",
        choices=("bare-metal", "vm", "kubernetes"),
        default="vm",
        help="where NGINX runs: on the host's own kernel, in a VM behind a virtual NIC "
        "(vm, the default), or in a pod behind a Kubernetes Service",
    )
    p.add_argument(
        "--jwt",
        choices=("none", "rs256", "es256"),
        default="none",
        help="JWT signature checked per request (reverse_proxy and api_gateway scenarios)",
    )
    p.add_argument(
        "--profile",
        action="append",
        default=[],
        type=parse_path,
        metavar="FILE",
        help="CPU profile JSON (python -m runners calibrate); its coefficients serve every "
        "catalog type of its CPU platform",
    )


def workload_from_args(args: argparse.Namespace) -> Workload:
    """The `Workload` the parsed flags describe."""
    from sizing.model.workload import Workload

    size, mix = args.file_size
    return Workload(
        args.scenario,
        args.protocol,
        size,
        args.sla_p99,
        requests_per_connection=args.requests_per_connection,
        tls_resumption=args.tls_resumption,
        tls_key=args.tls_key,
        gzip=args.gzip,
        size_mix=mix,
        http_version=args.http_version,
        burst_network=args.network == "burst",
        internet_facing=args.internet_facing,
        environment=args.environment,
        jwt=args.jwt,
    )


def _instances(args: argparse.Namespace) -> list[Any]:
    from sizing.catalog.load import select_instances

    return select_instances(
        args.catalog,
        provider=args.provider,
        region=args.region,
        arch=args.arch,
        family=args.family,
    )


def _recommendation(args: argparse.Namespace, work: Workload | None = None) -> Any:
    """The `Recommendation` the parsed flags ask for (``recommend``, ``compare``)."""
    from sizing.evidence.profiles import load_profiles
    from sizing.fleet.recommend import DEFAULT_HEADROOM, recommend

    instances = _instances(args)
    work = work or workload_from_args(args)
    profiles = load_profiles(args.profile)
    headroom = DEFAULT_HEADROOM if args.headroom is None else args.headroom
    evidence = None
    if args.runs:
        from sizing.catalog.load import load_catalog
        from sizing.evidence.measured import build_evidence, measured_series
        from sizing.evidence.runs_check import require_used_runs

        series = measured_series(args.runs, allow_simulated=args.allow_simulated)
        # Match labels against the whole catalog: a filter must not hide the measured type.
        evidence = build_evidence(series, load_catalog(args.catalog), work)
        warning = require_used_runs(evidence, args.runs, allow_unused=args.allow_unused_runs)
        if warning:
            print(f"python -m sizing {args.command}: {warning}", file=sys.stderr)
    rec = recommend(
        args.rps,
        instances,
        work,
        headroom,
        args.redundancy,
        args.max_count,
        evidence,
        args.confidence,
        profiles=profiles,
        zones=args.zones,
        zone_loss=args.zone_loss,
        pricing=args.pricing,
        spot_reserve=args.spot_reserve,
        sort=args.sort,
        burstable=args.burstable,
        mix=getattr(args, "mix", 1),
        clients=getattr(args, "clients", "internet"),
        # Families named with --family are wanted, whatever their group.
        include_families=("all",) if args.family else getattr(args, "include_families", ()),
        growth=args.growth,
    )
    return rec


def cmd_recommend(args: argparse.Namespace) -> int:
    """Print the cheapest fleets for the target."""
    if args.format == "k8s":
        return cmd_k8s(args)
    rec = _recommendation(args)
    top = args.top if args.top is not None or args.format != "table" else 10
    doc = rec.to_dict(top=top)
    if args.format == "json":
        print(json_text(doc, indent=1))
    elif args.format == "csv":
        print(to_csv(doc["options"]), end="")
    else:
        print(render_recommendation(doc, top or 10))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Print every option of the request relative to the ``--baseline`` fleet."""
    from sizing.catalog.load import load_catalog
    from sizing.fleet.baseline import compare_to_baseline, parse_baseline, render_baseline

    catalog = load_catalog(args.catalog)
    spec = parse_baseline(args.baseline, {i.instance_type for i in catalog})
    doc = compare_to_baseline(_recommendation(args), spec, catalog, args.top)
    if args.format == "json":
        print(json.dumps(doc, indent=1))
    else:
        print(render_baseline(doc))
    return 0


def cmd_k8s(args: argparse.Namespace) -> int:
    """Write Kubernetes manifests for the target, on the node type that packs them cheapest."""
    from sizing.fleet.k8s import check_image, check_name, k8s_answer
    from trialtable.read import read_rows

    check_name(args.name, "--name")
    if args.namespace is not None:
        check_name(args.namespace, "--namespace")
    check_image(args.image)
    rec = _recommendation(args)
    rows = [r for d in args.runs for r in read_rows(d)]
    answer = k8s_answer(
        args.rps,
        _instances(args),
        rec.workload,
        rec.rules,
        pod_cpus=args.pod_cpus,
        evidence=rec.evidence,
        profiles=rec.profiles,
        runs_rows=rows,
        name=args.name,
        namespace=args.namespace,
        image=args.image,
        max_replicas=args.max_replicas,
    )
    if args.out:
        Path(args.out).write_text(answer["yaml"], encoding="utf-8")
        print("\n".join(answer["comments"][:5]))
    else:
        print(answer["yaml"], end="")
    return 0


def _progress_wanted() -> bool:
    """Progress bars go to a terminal, or anywhere when NGINX_SIZING_PROGRESS=1."""
    return sys.stderr.isatty() or os.environ.get("NGINX_SIZING_PROGRESS") == "1"


@contextlib.contextmanager
def _progress_bar(desc: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar with an ETA on stderr when it is a terminal; ``tick(done, total)``.

    With stdout piped (``fit --reference | less``) the finished bar stays on stderr, so the
    time it took is still there; a terminal that reports no size gets 80 x 24 (tqdm draws
    nothing in a terminal of 0 x 0).
    """
    from tqdm import tqdm

    try:
        width = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        width = 0
    bar = tqdm(
        desc=desc,
        unit=unit,
        file=sys.stderr,
        disable=not _progress_wanted(),
        leave=not sys.stdout.isatty(),
        ncols=None if width > 0 else 80,
        nrows=None if width > 0 else 24,
    )

    def tick(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)
        bar.refresh()  # each step is seconds long: show it now

    try:
        yield tick
    finally:
        bar.close()


def cmd_fit(args: argparse.Namespace) -> int:
    """Print the fitted model of every series of a reference dataset."""
    from sizing.model.fits import finite_json, fit_reference

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
    if args.profile:
        from sizing.evidence.profiles import describe_profile, load_profiles

        profs = load_profiles(args.profile)
        print(terminal("\n\n".join(describe_profile(p) for p in profs)))
        return 0
    from sizing.model.costmodel import cpu_us_per_request, load_cost_model, reference_profile

    with _progress_bar("fit", "series") as tick:
        rows = fit_reference(args.reference, compare=args.compare, progress=tick)
    doc = load_cost_model()
    work = workload_from_args(args)
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


def cmd_reference(args: argparse.Namespace) -> int:
    """List the reference datasets, or print one."""
    from sizing.model.datasets import list_reference, load_reference

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
        from sizing.catalog.build import (
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


def _require_out_folder(path: str) -> None:
    """Make the output folder ``--out`` names, or raise `InputError` saying why it cannot be."""
    from trialtable.files import out_folder_problem

    problem = out_folder_problem(path)
    if problem:
        raise InputError(f"--out: {problem}")


def cmd_report(args: argparse.Namespace) -> int:
    """Execute the sizing report with papermill and write its HTML page."""
    from sizing.evidence.profiles import load_profiles
    from sizing.fleet.recommend import DEFAULT_HEADROOM
    from sizing.report.execute import build_report

    # The files and filters recommend reads, read as recommend reads them: a bad one is
    # recommend's line here, before --out is made, not a failed notebook cell seconds later.
    _instances(args)
    load_profiles(args.profile)
    if args.runs:
        from sizing.model.datasets import load_runs

        load_runs(list(args.runs), allow_simulated=args.allow_simulated)
    _require_out_folder(args.out)
    params: dict[str, Any] = {
        "rps": args.rps,
        "sla_p99_ms": args.sla_p99,
        "protocol": args.protocol,
        "file_size": str(args.file_size[0]),
        "scenario": args.scenario,
        "headroom": DEFAULT_HEADROOM if args.headroom is None else args.headroom,
        "redundancy": args.redundancy,
        "providers": args.provider or "",
        "regions": args.region or "",
        "arch": args.arch or "",
        "families": args.family or "",
        "catalog": [str(Path(c).resolve()) for c in args.catalog],
        "top": args.top,
        "runs": [str(Path(r).resolve()) for r in args.runs],
        "allow_simulated": args.allow_simulated,
        "allow_unused_runs": args.allow_unused_runs,
        "confidence": args.confidence,
    }
    params.update(_workload_params(args))
    params.update({name: value for name, value in args.parameter})
    ipynb, html = build_report(
        params,
        args.out,
        show_code=args.show_code,
        pdf=args.pdf,
        progress=not args.quiet and _progress_wanted(),
    )
    print(ipynb)
    print(html)
    if args.pdf:
        print(html.with_suffix(".pdf"))
    return 0


def _workload_params(args: argparse.Namespace) -> dict[str, Any]:
    """The workload flags that differ from their defaults, as notebook parameters."""
    out: dict[str, Any] = {}
    if args.file_size[1]:
        out["size_mix"] = ",".join(f"{b}:{w:g}" for b, w in args.file_size[1])
    if args.requests_per_connection != float("inf"):
        out["requests_per_connection"] = args.requests_per_connection
    for name, default in (
        ("tls_resumption", 0.0),
        ("tls_key", "ecdsa-p256"),
        ("gzip", 0.0),
        ("http_version", "1.1"),
        ("network", "baseline"),
        ("internet_facing", False),
        ("environment", "vm"),
        ("jwt", "none"),
    ):
        if getattr(args, name) != default:
            out[name] = getattr(args, name)
    if args.profile:
        out["profiles"] = [str(Path(f).resolve()) for f in args.profile]
    return out


def cmd_precompute(args: argparse.Namespace) -> int:
    """Write the precomputed reference fits."""
    from sizing.model.cloudfit import precompute_cloud_model
    from sizing.model.fits import precompute, precompute_cost_model, precompute_platforms
    from sizing.paths import FITS_PATH

    if args.out is not None:
        _require_out_folder(str(Path(args.out).parent))
    print(precompute(args.out or FITS_PATH))
    if args.out is None:
        print(precompute_cost_model())
        print(precompute_platforms())
        print(precompute_cloud_model())
    return 0


def cmd_plan_measurements(args: argparse.Namespace) -> int:
    """Rank CPU platforms by the value of measuring them."""
    from sizing.evidence.plan_measure import main
    from sizing.evidence.profiles import load_profiles

    # As recommend without --burstable: a burstable type's burst is not sustained capacity.
    steady = [inst for inst in _instances(args) if not inst.burstable]
    return main(args, steady, workload_from_args(args), load_profiles(args.profile))


COMMANDS = {
    "workload": _accesslog.run,
    "plan-measurements": cmd_plan_measurements,
    "recommend": cmd_recommend,
    "fit": cmd_fit,
    "reference": cmd_reference,
    "catalog": cmd_catalog,
    "compare": cmd_compare,
    "k8s": cmd_k8s,
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
    except OSError as exc:
        # A file the command writes or reads failed in a way no check before could tell.
        where = f" {exc.filename}" if exc.filename else ""
        print(f"{prog}: error:{printable(where)} {exc.strerror or exc}", file=sys.stderr)
        return 1
