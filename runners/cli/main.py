"""Command line: ``python -m runners COMMAND``.

Commands: sweep, search, facts, cleanup, calibrate, compare, features, ab, import.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runners.cli import calibrate as cli_calibrate
from runners.cli import compare as cli_compare
from runners.cli import confsearch as cli_confsearch
from runners.cli import confsweep as cli_confsweep
from runners.cli import features as cli_features
from runners.cli import imports as cli_imports
from runners.cli.options import (
    DocParser,
    DocSubcommands,
    directive_problem,
    host_options,
    judge_options,
    out_option,
    response_options,
    ssh_options,
    tool_option,
    wildcard_problem,
)
from runners.errors import BadHosts, BadInput, RunnerError
from runners.loadgen import UnsupportedLoad
from runners.names import AB_MEASURES, AB_SCHEDULES, STRATEGY_NAMES
from trialtable.errors import RunFolderError
from trialtable.fields import Field, FieldError, Fields
from trialtable.files import read_bounded
from trialtable.jsonvalue import as_float, as_int
from trialtable.output import csv_cell, json_text
from trialtable.tls import KEYS, SHORT_TLS_KEYS, TLS_KEYS, tls_key
from trialtable.values import (
    DEFAULT_PROTOCOL,
    MAX_COUNT,
    MAX_TRIAL_SECONDS,
    Parser,
    float_between,
    format_option,
    int_between,
    parse_duration_ms,
    parse_fraction,
    parse_int_list,
    parse_seconds,
    parse_trial_seconds,
    printable,
    within_column,
)

if TYPE_CHECKING:
    from runners.search import TrialReport

__all__ = ["build_parser", "main", "parse_int_list", "parse_seconds"]


#: Largest inventory file read [B] (one holds a few host names).
INVENTORY_MAX_BYTES = 1024 * 1024
#: The inventory's keys (TOML): each a host string (``clients`` also a list of them), a path
#: or a flag; the hosts are then parsed as the command line's are (`runners.hosts`).
INVENTORY = Fields(
    "inventory",
    (
        Field("server", "str", max_len=1000),
        Field("clients", "str", max_len=1000),
        Field("target_address", "str", max_len=1000),
        Field("ssh_config", "str", max_len=4096),
        Field("accept_new_host_keys", "bool"),
        Field("upstream_host", "str", max_len=1000),
        Field("upstream_address", "str", max_len=1000),
    ),
)

#: Simulator parameters (``--server sim``) the trial table can hold the results of: a vCPU
#: serving at least 1 request/s keeps simulated latencies inside their column's range.
SIM_LAMBDA_RANGE = (1.0, 1e9)
#: USL contention and coherency of the simulator: fractions, as a real server's are.
SIM_USL_RANGE = (0.0, 1.0)


def _tls_key(text: str) -> str:
    """``--tls-key`` as both command lines spell it (`trialtable.tls`), to the run's short name."""
    try:
        return tls_key(text).short
    except ValueError as exc:
        raise argparse.ArgumentTypeError(printable(str(exc))) from None


def _seconds0(text: str) -> int:
    """A warm-up: 0, or a trial's length (at most `MAX_TRIAL_SECONDS`) [s]."""
    return 0 if text.strip() in ("0", "0s") else parse_trial_seconds(text)


def _seconds_float(text: str) -> float:
    """A pause: 0, or a duration up to `MAX_TRIAL_SECONDS` (a trial's longest) [s]."""
    if text.strip() in ("0", "0s"):
        return 0.0
    seconds = parse_duration_ms(text) / 1000.0
    if seconds > MAX_TRIAL_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is longer than {MAX_TRIAL_SECONDS:,} s (one day), the longest pause"
        )
    return seconds


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m runners`` argument parser."""
    parser = Parser(
        prog="python -m runners",
        description="Measure NGINX: deploy a private nginx on this machine or SSH hosts, drive "
        "it with a load generator, and record every trial. Each command has its own --help.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=DocParser)

    sw = sub.add_parser("sweep", help="measure a grid of vCPUs x threads x connections")
    _trial_options(sw, duration=10, what="each trial")
    sw.add_argument(
        "--threads",
        type=within_column(parse_int_list, "threads"),
        default=(1,),
        metavar="LIST",
        help="wrk threads per client (default 1)",
    )
    sw.add_argument(
        "--connections",
        type=within_column(parse_int_list, "connections"),
        default=(16,),
        metavar="LIST",
        help="wrk connections per client (default 16)",
    )
    cli_confsweep.add_options(sw)
    format_option(sw, ("table", "json", "csv"))

    se = sub.add_parser("search", help="highest RPS under a p99 SLA, per vCPU count")
    _trial_options(se, duration=3, what="each search trial")
    se.add_argument(
        "--strategy",
        choices=STRATEGY_NAMES,
        default="adaptive",
        help="adaptive ramp and refinement (default), the full grid, or constant rates",
    )
    se.add_argument(
        "--confirm",
        type=int,
        default=3,
        metavar="N",
        help="confirmation trials at the answer (default 3, from 3 to 30)",
    )
    se.add_argument(
        "--confirm-duration",
        type=within_column(parse_trial_seconds, "duration_s"),
        default=6,
        metavar="DURATION",
        help="length of each confirmation trial (default 6s)",
    )
    se.add_argument(
        "--start-connections",
        type=int_between(1, MAX_COUNT),
        default=None,
        metavar="N",
        help="first load of the ramp (default: 4 per thread)",
    )
    se.add_argument(
        "--max-connections",
        type=int_between(1, MAX_COUNT),
        default=4096,
        metavar="N",
        help="most connections per client the search tries (default 4096)",
    )
    se.add_argument(
        "--start-rate",
        type=float,
        default=1000.0,
        metavar="RPS",
        help="first rate of the wrk2 ramp (default 1000)",
    )
    tool_option(se, "wrk2")
    cli_confsweep.conf_option(
        se,
        "search your own nginx.conf (rewritten as sweep --nginx-conf does) after the reference "
        "config of the other options; the capacities' ratio goes into your run for "
        "`python -m sizing recommend --runs`",
    )
    format_option(se)

    fa = sub.add_parser("facts", help="check tools and print host facts as JSON")
    host_options(fa)

    cl = sub.add_parser(
        "cleanup",
        help="stop the nginx and remove the folders a killed run left on its hosts",
    )
    which = cl.add_mutually_exclusive_group(required=True)
    which.add_argument("run_id", nargs="?", metavar="RUN_ID", help="the run to clean up")
    which.add_argument("--all", action="store_true", help="every run in --out")
    out_option(cl)
    ssh_options(cl)
    cli_calibrate.add_parser(sub)
    cli_compare.add_parser(sub)
    cli_imports.add_parser(sub)
    cli_features.add_parser(sub)
    _add_ab_parser(sub)
    return parser


def _trial_options(
    p: argparse.ArgumentParser,
    *,
    duration: int,
    what: str,
    warmup: int = 1,
    cooldown: float = 1.0,
) -> None:
    """Hosts, scenario, vCPUs, trial timing, SLA, storage and simulator: sweep and search."""
    host_options(p)
    _scenario_options(p)
    p.add_argument(
        "--vcpus",
        type=within_column(parse_int_list, "vcpus"),
        default=(1,),
        metavar="LIST",
        help="nginx workers, one pinned CPU each (default 1)",
    )
    p.add_argument(
        "--duration",
        type=within_column(parse_trial_seconds, "duration_s"),
        default=duration,
        metavar="DURATION",
        help=f"length of {what} (default {duration}s)",
    )
    p.add_argument(
        "--warmup",
        type=within_column(_seconds0, "warmup_s"),
        default=warmup,
        metavar="DURATION",
        help=f"discarded load before each trial (default {warmup}s; 0 for none)",
    )
    p.add_argument(
        "--cooldown",
        type=_seconds_float,
        default=cooldown,
        metavar="DURATION",
        help=f"pause after each trial (default {cooldown:g}s)",
    )
    p.add_argument(
        "--timeout",
        type=parse_trial_seconds,
        default=2,
        metavar="DURATION",
        help="wrk socket timeout; slower responses count as timeouts (default 2s)",
    )
    judge_options(p)
    out_option(p)
    p.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="continue run RUN_ID in --out, skipping trials already done",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    _load_options(p)
    _sim_options(p)


def _load_options(p: argparse.ArgumentParser) -> None:
    from runners.loadgen import HTTP_VERSIONS, NAMES

    p.add_argument(
        "--load-generator",
        choices=NAMES,
        default="wrk",
        help="load generator on the clients (default wrk)",
    )
    p.add_argument(
        "--http-version",
        choices=HTTP_VERSIONS,
        default="1.1",
        help="HTTP version the clients speak (default 1.1; the load generator must speak it)",
    )
    p.add_argument(
        "--http2",
        dest="http_version",
        action="store_const",
        const="2",
        help="same as --http-version 2 (nginx listens for HTTP/2; use --load-generator h2load)",
    )
    p.add_argument(
        "--streams",
        type=within_column(int_between(1, 1000), "streams"),
        default=1,
        metavar="N",
        help="concurrent streams per connection over HTTP/2 (h2load -m; default 1)",
    )
    tool_option(p, "h2load")


def _sim_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=1, help="noise seed of --server sim")
    p.add_argument(
        "--sim-lambda",
        type=float_between(*SIM_LAMBDA_RANGE, "a positive finite rate from 1 to 1e9 [1/s]"),
        default=None,
        metavar="RPS",
        help="simulated capacity of one vCPU, from 1 to 1e9 (default 74000)",
    )
    p.add_argument(
        "--sim-sigma",
        type=float_between(*SIM_USL_RANGE, "a number >= 0 and <= 1"),
        default=None,
        help="simulated USL sigma, from 0 to 1",
    )
    p.add_argument(
        "--sim-kappa",
        type=float_between(*SIM_USL_RANGE, "a number >= 0 and <= 1"),
        default=None,
        help="simulated USL kappa, from 0 to 1",
    )


def _simulator(args: argparse.Namespace, hosts: dict[str, Any]) -> Any:
    """A SimServer for ``--server sim``, else None (and no simulator options allowed)."""
    from runners.sim import SimServer

    params = {
        k: v
        for k, v in (
            ("lambda_rps", args.sim_lambda),
            ("sigma", args.sim_sigma),
            ("kappa", args.sim_kappa),
        )
        if v is not None
    }
    if hosts["server"] != "sim":
        if params:
            raise BadInput("--sim-lambda/--sim-sigma/--sim-kappa need --server sim")
        return None
    if hosts["clients"] != ("local",):
        raise BadInput("--server sim simulates its own load generator; drop --client")
    return SimServer(seed=args.seed, **params)


def _scenario_options(p: argparse.ArgumentParser) -> None:
    from runners.scenario import SCENARIOS

    p.add_argument("--scenario", choices=SCENARIOS, default="static", help="what NGINX serves")
    response_options(p, protocol=DEFAULT_PROTOCOL)
    p.add_argument("--gzip", action="store_true", help="compress responses on the fly")
    p.add_argument(
        "--upstreams",
        type=within_column(int_between(1, 64), "upstreams"),
        default=1,
        metavar="N",
        help="upstream file servers behind the proxy scenarios (default 1, at most 64)",
    )
    p.add_argument(
        "--tls-key",
        type=_tls_key,
        default=KEYS[0].short,
        metavar="{" + ",".join(TLS_KEYS) + "}",
        help="self-signed certificate key, spelled as sizing spells it: "
        + " or ".join(TLS_KEYS)
        + f" (default {KEYS[0].name}; "
        + " and ".join(SHORT_TLS_KEYS)
        + " are read too)",
    )
    p.add_argument(
        "--tls-resumption",
        choices=("on", "off"),
        default="off",
        help="HTTPS: let clients resume TLS sessions (tickets and session cache); default off, "
        "every new connection a full handshake",
    )
    p.add_argument(
        "--jwt",
        action="store_true",
        help="reverse_proxy, api_gateway: every request carries an RS256 JWT that nginx checks "
        "(njs) before proxying",
    )
    p.add_argument(
        "--upstream-host",
        default=None,
        metavar="HOST",
        help="where the proxy scenarios' upstream file servers run (default: the server)",
    )
    p.add_argument(
        "--upstream-address",
        default=None,
        metavar="ADDR",
        help="address the server reaches the upstream host at (derived when omitted)",
    )
    p.add_argument(
        "--nginx-directive",
        action="append",
        default=[],
        metavar="TEXT",
        help="extra directive for the http block, e.g. 'ssl_ciphers ...'",
    )


def _hosts(args: argparse.Namespace) -> dict[str, Any]:
    """Server, clients and SSH options from the arguments and the inventory file."""
    inv: dict[str, Any] = {}
    if args.inventory:
        try:
            inv = tomllib.loads(read_bounded(args.inventory, INVENTORY_MAX_BYTES).decode("utf-8"))
        except OSError as exc:
            raise BadInput(f"cannot read inventory {args.inventory}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise BadInput(f"inventory {args.inventory} is not UTF-8 text") from None
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(f"inventory {args.inventory} is not valid TOML: {exc}") from None
        where = f"inventory {args.inventory}"
        unknown = set(inv) - set(INVENTORY.fields)
        if unknown:
            raise UnsupportedLoad(f"{where}: unknown keys {sorted(unknown)}")
        try:
            for key, value in inv.items():
                if key == "clients" and isinstance(value, list):
                    for host in value:
                        INVENTORY["clients"].check(host, where)
                else:
                    INVENTORY[key].check(value, where)
        except FieldError as exc:  # bad input, exit 2 (as a wildcard address)
            raise UnsupportedLoad(str(exc)) from None
    target = args.target_address or inv.get("target_address")
    upstream = getattr(args, "upstream_address", None) or inv.get("upstream_address")
    problem = wildcard_problem(target, args.allow_wildcard_address) or wildcard_problem(
        upstream, args.allow_wildcard_address, "upstream address"
    )  # the upstream file servers listen on theirs
    if problem:
        raise UnsupportedLoad(problem)
    clients = args.client or inv.get("clients") or ["local"]
    if isinstance(clients, str):
        clients = [clients]
    weights: tuple[float, ...] = ()
    if getattr(args, "clients", None):
        if args.client or inv.get("clients"):
            raise BadHosts("give the clients once: --client, --clients or the inventory's")
        from runners.clients import parse_clients

        listed = parse_clients(args.clients)
        clients, weights = list(listed.hosts), listed.weights
    return {
        "server": args.server or inv.get("server") or "local",
        "clients": tuple(clients),
        "client_weights": weights,
        "target_address": args.target_address or inv.get("target_address"),
        "upstream_host": getattr(args, "upstream_host", None) or inv.get("upstream_host"),
        "upstream_address": getattr(args, "upstream_address", None) or inv.get("upstream_address"),
        "ssh_config": args.ssh_config
        or (os.path.expanduser(inv["ssh_config"]) if inv.get("ssh_config") else None),
        "accept_new_host_keys": args.accept_new_host_keys
        or bool(inv.get("accept_new_host_keys", False)),
    }


def _plan(args: argparse.Namespace, hosts: dict[str, Any], sim: Any, **extra: Any) -> Any:
    """The `Plan` the sweep and search options describe (no warm-up or cooldown when simulated)."""
    from runners.plan import Plan
    from runners.scenario import make_scenario

    # Options that do not fit the scenario are bad arguments (exit 2), as the CLI's others.
    if args.jwt and args.scenario not in ("reverse_proxy", "api_gateway"):
        raise UnsupportedLoad(
            f"--jwt is for the reverse_proxy and api_gateway scenarios, not {args.scenario}"
        )
    if args.tls_resumption == "on" and args.protocol != "https":
        raise UnsupportedLoad("--tls-resumption on needs --protocol https")
    added = (*args.nginx_directive, *(getattr(args, "ab_directive", None) or ()))
    for text in added:
        problem = directive_problem(text, args.allow_wildcard_address)
        if problem:
            raise UnsupportedLoad(problem)
    scenario = make_scenario(
        args.scenario,
        args.file_size,
        protocol=args.protocol,
        gzip=args.gzip,
        upstreams=args.upstreams,
        tls_key=args.tls_key,
        directives=tuple(args.nginx_directive),
        tls_resumption=args.tls_resumption == "on",
        jwt=args.jwt,
    )
    return Plan(
        scenario=scenario,
        server="local" if sim is not None else hosts["server"],
        clients=hosts["clients"],
        vcpus=args.vcpus,
        duration_s=args.duration,
        warmup_s=0 if sim is not None else args.warmup,
        cooldown_s=0.0 if sim is not None else args.cooldown,
        timeout_s=args.timeout,
        sla_p99_ms=args.sla_p99,
        max_error_rate=args.max_error_rate,
        label=args.label,
        target_address=hosts["target_address"],
        upstream_host=hosts["upstream_host"],
        upstream_address=hosts["upstream_address"],
        nginx=args.nginx,
        wrk=args.wrk,
        openssl=args.openssl,
        load_generator=args.load_generator,
        http_version=args.http_version,
        streams=args.streams,
        h2load=args.h2load,
        client_weights=hosts["client_weights"],
        **extra,
    )


def _sweep(args: argparse.Namespace) -> int:
    import pandas as pd

    from runners.plan import Access
    from runners.sweep import run_sweep

    if args.nginx_conf:
        return cli_confsweep.main(args, cli_confsweep.Parts(_hosts, _plan))
    if args.pairs is not None:
        raise UnsupportedLoad("--pairs is for --nginx-conf (a sweep measures its grid once)")
    hosts = _hosts(args)
    sim = _simulator(args, hosts)
    plan = _plan(args, hosts, sim, threads=args.threads, connections=args.connections)
    access = Access(hosts["accept_new_host_keys"], hosts["ssh_config"])
    df = run_sweep(
        plan,
        args.out,
        sim=sim,
        resume=args.resume,
        access=access,
        progress=None if args.quiet else sys.stderr,
    )
    run_dir = Path(args.out) / str(df["run_id"].iloc[0]) if len(df) else Path(args.out)
    if args.format == "json":
        print(df.to_json(orient="records", indent=1))
    elif args.format == "csv":
        print(df.apply(lambda col: col.map(csv_cell)).to_csv(index=False), end="")
    else:
        cols = [
            "trial_id",
            "vcpus",
            "threads",
            "connections",
            "rps",
            "latency_p99_ms",
            "error_rate",
            "client_cpu_pct",
            "server_cpu_pct",
            "meets_sla",
            "valid",
        ]
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(df[cols].to_string(index=False, float_format=lambda x: f"{x:,.2f}"))
        bad = df[~df["valid"]]
        for _, r in bad.iterrows():
            print(f"invalid {r['trial_id']}: {r['invalid_reason']}")
        print(f"run folder: {run_dir}")
    return 0


def trial_line(report: TrialReport) -> str:
    """One progress line of a search: its load, RPS, p99, verdict and at most the time left."""
    from runners.run import verdict

    row, left = report.row, report.left_s
    load = (
        f"rate {as_float(row['rate_rps']):,.0f}"
        if report.open_loop
        else f"t{as_int(row['threads'])} c{as_int(row['connections'])}"
    )
    return (
        f"[v{as_int(row['vcpus'])} {row['kind']} #{report.n}] {load}: "
        f"{as_float(row['rps']):,.0f} rps, p99 {as_float(row['latency_p99_ms']):.2f} "
        f"ms, {verdict(row)}"
        + ("" if left is None else f"; at most {int(left // 60)}:{int(left % 60):02d} left")
    )


def _print_trial(report: TrialReport) -> None:
    print(trial_line(report), file=sys.stderr, flush=True)


def _search(args: argparse.Namespace) -> int:
    from runners.plan import Access
    from runners.search import SearchOptions, run_search

    hosts = _hosts(args)
    sim = _simulator(args, hosts)
    simulated = sim is not None
    plan = _plan(args, hosts, sim, wrk2=args.wrk2)
    options = SearchOptions(
        sla_p99_ms=args.sla_p99,
        strategy=args.strategy,
        duration_s=args.duration,
        confirm=args.confirm,
        confirm_duration_s=args.confirm_duration,
        start_connections=args.start_connections,
        max_connections=args.max_connections,
        start_rate_rps=args.start_rate,
    )
    if args.nginx_conf:
        asked = cli_confsearch.Asked(plan, options, hosts, _print_trial)
        return cli_confsearch.main(args, asked)
    run_id, results = run_search(
        plan,
        options,
        args.out,
        sim=sim,
        resume=args.resume,
        access=Access(hosts["accept_new_host_keys"], hosts["ssh_config"]),
        progress=None if args.quiet else sys.stderr,
        on_trial=None if args.quiet else _print_trial,
    )
    run_dir = Path(args.out) / run_id
    if args.format == "json":
        print(
            json_text(
                {
                    "run_id": run_id,
                    "run_dir": str(run_dir),
                    "results": [r.to_dict() for r in results],
                },
                indent=1,
            )
        )
        return 0
    head = (
        f"{'vcpus':>5} {'max_rps_under_sla':>18} {'95% CI':>23} {'threads':>7} "
        f"{'load':>12} {'p99 ms':>7} {'trials':>6} {'load s':>7}  flags"
    )
    sc = plan.scenario
    print(
        f"{'simulated ' if simulated else ''}{args.strategy} search, p99 <= "
        f"{args.sla_p99:g} ms, {sc.name} {sc.protocol} {sc.file_bytes} B"
    )
    print(head)
    for r in results:
        ci = (
            f"{r.ci95_low:,.0f}-{r.ci95_high:,.0f}"
            if r.ci95_low is not None and r.ci95_high is not None
            else "-"
        )
        load = (
            f"rate {r.rate_rps:,.0f}"
            if r.rate_rps is not None
            else f"c {r.connections}"
            if r.connections is not None
            else "-"
        )
        flags = [
            f
            for f, on in (
                ("unconfirmed", not r.confirmed),
                ("non-monotonic", r.non_monotonic),
                ("simulated", r.simulated),
            )
            if on
        ]
        rps = f"{r.max_rps_under_sla:,.0f}" if r.max_rps_under_sla is not None else "none"
        p99 = f"{r.latency_p99_ms:.2f}" if r.latency_p99_ms is not None else "-"
        print(
            f"{r.vcpus:>5} {rps:>18} {ci:>23} {r.threads or '-':>7} {load:>12} {p99:>7} "
            f"{r.trials:>6} {r.load_seconds:>7.0f}  {' '.join(flags)}"
        )
        for note in r.notes:
            print(f"      note: {note}")
    print(f"run folder: {run_dir}")
    return 0


def _cleanup(args: argparse.Namespace) -> int:
    from runners.plan import Access
    from runners.run import cleanup

    lines = cleanup(
        args.out,
        None if args.all else args.run_id,
        Access(args.accept_new_host_keys, args.ssh_config),
        log=sys.stderr,
    )
    if not lines:
        print("nothing left behind", file=sys.stderr)
    return 0


def _facts(args: argparse.Namespace) -> int:
    from runners.hosts import connect, facts, require_tools

    hosts = _hosts(args)
    out: dict[str, Any] = {}
    found: dict[str, dict[str, str]] = {}
    for role, spec in [("server", hosts["server"])] + [("client", c) for c in hosts["clients"]]:
        host = connect(
            spec, accept_new_host_keys=hosts["accept_new_host_keys"], ssh_config=hosts["ssh_config"]
        )
        try:
            tools = [args.nginx, args.openssl, "taskset"] if role == "server" else [args.wrk]
            info = facts(host, tools)
        finally:
            host.close()
        found.setdefault(host.name, {}).update(info["tools"])
        out[host.name] = {**info, "tools": found[host.name]}
    print(json.dumps(out, indent=1))
    require_tools(
        {h: {t: p for t, p in tools.items() if t != "taskset"} for h, tools in found.items()}
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # A terminal closing or `kill` stops a sweep as cleanly as Ctrl-C does.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)
    try:
        if args.command == "calibrate":
            return cli_calibrate.main(args)
        if args.command == "features":
            return cli_features.main(args, list(argv) if argv is not None else None)
        if args.command == "compare":
            from runners import compare

            return compare.main(args)
        if args.command == "ab":
            return _ab(args)
        if args.command == "import":
            return cli_imports.main(args)
        command = {"sweep": _sweep, "search": _search, "facts": _facts, "cleanup": _cleanup}
        return command[args.command](args)
    except BadInput as exc:  # UnsupportedLoad and BadHosts too
        print(f"{parser.prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except (RunnerError, RunFolderError) as exc:
        print(f"{parser.prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        run_id = getattr(exc, "run_id", None)
        folders = getattr(exc, "run_folders", None)
        if folders:  # ab: two runs, not resumable as a pair
            print(
                f"{parser.prog}: interrupted; the pairs measured so far are kept in runs "
                f"{folders[0]} (A) and {folders[1]} (B) in {getattr(args, 'out', '')}",
                file=sys.stderr,
            )
            return 130
        print(
            f"{parser.prog}: interrupted; "
            + (
                f"finished trials are kept in run {run_id} (continue with --resume {run_id})"
                if run_id
                else "no run was started"
            ),
            file=sys.stderr,
        )
        return 130


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


# ----------------------------------------------------------------------------- ab


def _confidence(text: str) -> float:
    """A confidence level: a fraction as `parse_fraction` reads it, and above 0."""
    value = parse_fraction(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is outside (0, 1); expected e.g. 0.95 or 95%")
    return value


def _add_ab_parser(sub: DocSubcommands) -> DocParser:
    """Add the ``ab`` subcommand (paired, interleaved A/B) to the runners' subparsers."""
    p = sub.add_parser(
        "ab",
        help="A/B: the sweep options (A) and A plus --ab-directive or your --nginx-conf (B), "
        "measured in interleaved pairs in one session; exit 1 when B is slower than A beyond "
        "--fail-if-worse",
        doc_from=("runners.interleave", 1),
    )
    _trial_options(p, duration=1, what="each trial", warmup=0, cooldown=0.2)
    p.add_argument(
        "--ab-directive",
        action="append",
        metavar="TEXT",
        help="directive B adds to A's http block (repeat for several)",
    )
    cli_confsweep.conf_option(
        p, "B is your own nginx.conf (rewritten as sweep --nginx-conf does) instead"
    )
    cli_confsweep.conf_option(
        p, "with --nginx-conf: A is this nginx.conf, not the reference", "--nginx-conf-a"
    )
    p.add_argument(
        "--pairs",
        type=int_between(2, 1000),
        default=24,
        metavar="N",
        help="A/B pairs of trials (default 24)",
    )
    p.add_argument(
        "--threads",
        type=int_between(1, 1024),
        default=1,
        metavar="N",
        help="wrk threads of every trial (default 1)",
    )
    p.add_argument(
        "--connections",
        type=int_between(1, 100000),
        default=16,
        metavar="N",
        help="wrk connections of every trial (default 16)",
    )
    p.add_argument(
        "--schedule",
        choices=AB_SCHEDULES,
        default="together",
        help="together: a pair's A and B trials run at the same time on the same CPUs, each "
        "with its own load generator (default); alternate: one after the other",
    )
    p.add_argument(
        "--measure",
        choices=AB_MEASURES,
        default="cpu",
        help="cpu: nginx CPU time per request (default); rps: 1/requests per second",
    )
    p.add_argument(
        "--fail-if-worse",
        type=parse_fraction,
        default=0.01,
        metavar="PCT",
        help="exit 1 when B's cost is above A's by more than this at --confidence (default 1%%)",
    )
    p.add_argument(
        "--confidence",
        type=_confidence,
        default=0.95,
        metavar="PCT",
        help="level of the bootstrap interval of the median ratio (default 95%%)",
    )
    format_option(p, ("table", "json"))
    return p


def _ab(args: Any) -> int:
    """``python -m runners ab``: 0 pass, 1 B worse, 2 bad input, 3 measurement failed."""
    from runners.interleave import PairSettings, judge, ratios, render, run_pairs
    from runners.plan import Access

    prog = "python -m runners ab"
    try:
        hosts = _hosts(args)
        if hosts["server"] == "sim" or args.resume:
            raise UnsupportedLoad("ab measures real nginx: --server sim and --resume do not apply")
        if len(args.vcpus) != 1:
            raise UnsupportedLoad("ab takes one --vcpus value")
        plan = _plan(args, hosts, None, threads=(args.threads,), connections=(args.connections,))
        plan, plan_b, conf = cli_confsweep.ab_plans(args, hosts, plan)
    except (UnsupportedLoad, RunnerError) as exc:
        print(f"{prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    try:
        settings = PairSettings(
            args.pairs, args.threads, args.connections, args.measure, schedule=args.schedule
        )
        a, b, ids = run_pairs(
            plan,
            plan_b,
            settings,
            args.out,
            progress=None if args.quiet else sys.stderr,
            access=Access(hosts["accept_new_host_keys"], hosts["ssh_config"]),
        )
        values = ratios(a, b)
        verdict = judge(values, args.fail_if_worse, args.confidence)
    except BadInput as exc:
        print(f"{prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except (RunnerError, RunFolderError, ValueError) as exc:
        print(f"{prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 3
    stored = cli_confsweep.ab_cost(args, (plan, plan_b), conf, ids, (values, verdict))
    if args.format == "json":
        doc = {
            "runs": {"a": ids[0], "b": ids[1]},
            "measure": args.measure,
            "schedule": args.schedule,
            "ratios": values,
        }
        print(json.dumps({**doc, **verdict.to_dict()}, indent=1))
    else:
        print(render(verdict, args.measure, ids, values, args.schedule))
        if stored:
            print(f"cost ratio stored in {stored}")
    return 1 if verdict.worse else 0
