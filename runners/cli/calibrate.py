"""``python -m runners calibrate``: its options, the campaign run, the profile printed.

The campaign itself is `runners.calibrate.campaign`; this module only parses, calls it and renders.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING

from runners import loadgen
from runners.cli.options import (
    DocSubcommands,
    host_options,
    out_option,
    tool_option,
    wildcard_problem,
)
from trialtable.values import (
    format_option,
    int_at_least,
    parse_duration_ms,
    within_column,
)

if TYPE_CHECKING:
    from trialtable.profile import Profile

__all__ = ["add_parser", "main", "render"]


def add_parser(sub: DocSubcommands) -> argparse.ArgumentParser:
    """Add the ``calibrate`` subcommand to the runners' subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "calibrate",
        help="measure what a request costs on a host's CPU and write a CPU profile",
        description=(
            "A fixed campaign of settings (keep-alive static 0 B/1 KB/100 KB over HTTP and "
            "HTTPS, new connections over HTTP and HTTPS with ECDSA and RSA keys and with "
            "resumed TLS sessions, gzip, "
            "reverse proxy, API gateway, and 1..N workers), repeated and interleaved; the CPU "
            "time of nginx per request is fitted to the cost model's coefficients."
        ),
    )
    host_options(p, server_default="local", inventory=False)
    out_option(p, "campaign folders")
    p.add_argument(
        "--quick", action="store_true", help="1 s trials and 2 rounds (about 3 minutes on 2 vCPUs)"
    )
    p.add_argument(
        "--resume",
        metavar="CAMPAIGN_ID",
        help="continue campaign CAMPAIGN_ID in --out with the same options",
    )
    p.add_argument(
        "--repeats",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="rounds of every setting (default 3; 2 with --quick)",
    )
    p.add_argument(
        "--extra-rounds",
        type=int,
        default=None,
        metavar="N",
        help="at most N further rounds of only the settings that measure a coefficient whose "
        "standard error is still over 25%% of its value (default 2; 0 with --quick)",
    )
    p.add_argument(
        "--sla-p99",
        type=within_column(parse_duration_ms, "sla_p99_ms"),
        default=5.0,
        metavar="DURATION",
        help="p99 each setting is measured under (default 5ms)",
    )
    p.add_argument(
        "--load-generator",
        default="wrk",
        metavar="NAME",
        help="closed-loop load generator: wrk (default) or h2load (HTTP/1.1; it does not "
        "reconnect, so the cps settings are left out)",
    )
    p.add_argument(
        "--settings",
        default="",
        metavar="LIST",
        help="comma-separated subset of the campaign's settings (default all)",
    )
    p.add_argument(
        "--max-workers",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="most nginx workers of the scaling settings (default: all CPUs)",
    )
    tool_option(p, "h2load")
    format_option(p)
    p.add_argument("--quiet", action="store_true", help="no progress output")
    return p


def main(args: argparse.Namespace) -> int:
    """``python -m runners calibrate``: run the campaign, print the coefficients."""
    from runners.calibrate import (
        campaign as calibrate,  # the campaign and its fit (numpy): only when it runs
    )
    from runners.plan import Access

    problem = wildcard_problem(args.target_address, args.allow_wildcard_address)
    if problem:
        raise loadgen.UnsupportedLoad(problem)
    options = calibrate.CalibrateOptions(
        server=args.server,
        clients=tuple(args.client or ["local"]),
        quick=args.quick,
        repeats=args.repeats,
        extra_rounds=args.extra_rounds,
        sla_p99_ms=args.sla_p99,
        load_generator=args.load_generator,
        only=tuple(s.strip() for s in args.settings.split(",") if s.strip()),
        max_workers=args.max_workers,
        target_address=args.target_address,
        nginx=args.nginx,
        wrk=args.wrk,
        openssl=args.openssl,
        h2load=args.h2load,
    )
    path, profile = calibrate.run_calibrate(
        options,
        args.out,
        resume=args.resume,
        access=Access(args.accept_new_host_keys, args.ssh_config),
        progress=None if args.quiet else sys.stderr,
    )
    if args.format == "json":
        print(json.dumps(profile.to_dict(), indent=1))
        return 0
    print(render(profile))
    print(f"profile: {path}")
    return 0


def render(profile: Profile) -> str:
    """The coefficients, scaling and warnings of a profile as text."""
    lines = [
        f"CPU profile: {profile.cpu_model} ({profile.arch}, "
        f"{profile.threads_per_core or '?'} threads per core), measured over "
        f"{profile.measured_over} with {profile.load_generator}, p99 <= {profile.sla_p99_ms:g} ms",
        f"{'coefficient':<30} {'value':>10} {'stderr':>9} {'spread':>7}  unit",
    ]
    for name, c in profile.coefficients.items():
        spread = f"{c.spread:.1%}" if c.spread is not None else "-"
        se = f"{c.stderr:.2g}" if c.stderr is not None else "-"
        lines.append(
            f"{name:<30} {c.value:>10.4g} {se:>9} {spread:>7}  {c.unit}"
            + ("  (held at 0)" if "held at 0" in c.note else "")
            + ("  (not identified)" if c.note.startswith("not identified") else "")
        )
    for name, u in profile.extra.get("unidentified", {}).items():
        lines.append(
            f"{name:<30} {'-':>10} {'-':>9} {'-':>7}  {u.get('unit', '')}  (not identified: "
            f"{u.get('value', math.nan):.3g} +- {u.get('stderr') or math.nan:.2g}; readers take "
            "the reference's)"
        )
    sc = profile.scaling
    if sc.workers:
        lines.append(
            "scaling: "
            + ", ".join(
                f"{w} workers {r:,.0f} rps (efficiency {e:.2f})"
                for w, r, e in zip(sc.workers, sc.rps, sc.efficiency, strict=True)
            )
        )
    lines.append(f"runs: {len(profile.runs)}; warnings: {len(profile.warnings)}")
    lines += [f"  warning: {w}" for w in profile.warnings[:12]]
    if len(profile.warnings) > 12:
        lines.append(f"  ... {len(profile.warnings) - 12} more in the profile")
    return "\n".join(lines)
