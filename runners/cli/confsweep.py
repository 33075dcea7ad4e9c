"""``python -m runners sweep --nginx-conf FILE``: your own nginx.conf against the reference.

The file is read with its includes through the one configuration reader and rewritten to run
in a private prefix (`runners.deploy.userconf`); anything the sandbox cannot run is refused
with one line and exit 2 before a run starts. Then, as ``runners ab`` does
(`runners.interleave`), the reference config of the sweep options (A: the static scenario by
default) and your config (B) each get a private nginx pinned to the same CPUs and are measured
in interleaved pairs; the median of B's CPU time per request over A's, with its bootstrap
interval, is written into B's run folder as ``conf-cost.json``, where
``python -m sizing recommend --runs RUN`` reads it (`sizing.evidence.confcost`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from runners.deploy.conf import ConfTarget
from runners.deploy.userconf import UserConf, UserConfError, read_user_conf
from runners.errors import RunnerError
from runners.loadgen import UnsupportedLoad
from trialtable.confcost import CONF_COST_FILE, KIND
from trialtable.files import write_atomic
from trialtable.pathargs import INPUT_FILE, path_arg
from trialtable.values import int_between

PROG = "python -m runners sweep"
#: Pairs of trials by default.
PAIRS = 8


@dataclass(frozen=True)
class Parts:
    """The sweep's own readers of the hosts and the plan (`runners.cli.main`)."""

    hosts: Callable[[argparse.Namespace], dict[str, Any]]
    plan: Callable[..., Any]


def add_options(p: argparse.ArgumentParser) -> None:
    """``--nginx-conf`` and ``--pairs`` on the sweep parser."""
    p.add_argument(
        "--nginx-conf",
        type=path_arg(INPUT_FILE),
        default=None,
        metavar="FILE",
        help="measure your own nginx.conf (rewritten to run privately on loopback) against the "
        "reference config of the other options, in interleaved pairs; the cost ratio goes "
        "into the run for `python -m sizing recommend --runs`",
    )
    p.add_argument(
        "--pairs",
        type=int_between(2, 1000),
        default=None,
        metavar="N",
        help=f"with --nginx-conf: pairs of trials (reference, yours) (default {PAIRS})",
    )


def _checked(args: argparse.Namespace, parts: Parts) -> tuple[Any, Any, UserConf, dict[str, Any]]:
    """Plans A (reference) and B (the user's config), the config read, the hosts; or refuse."""
    from runners.cli.options import directive_problem

    hosts = parts.hosts(args)
    if hosts["server"] == "sim" or args.resume:
        raise UnsupportedLoad(
            "--nginx-conf measures real nginx: --server sim and --resume do not apply"
        )
    if len(args.vcpus) != 1 or len(args.threads) != 1 or len(args.connections) != 1:
        raise UnsupportedLoad(
            "--nginx-conf measures one setting: one --vcpus, --threads and --connections"
        )
    conf = read_user_conf(os.path.abspath(args.nginx_conf))
    plan = parts.plan(args, hosts, None, threads=args.threads, connections=args.connections)
    # Every listen of the rewritten config, by the rule --target-address follows.
    address = plan.target_address or "127.0.0.1"
    ports = list(range(20000, 20000 + len(conf.slots)))
    text = conf.render(ConfTarget("/run", address, ports, [0], ["127.0.0.1:9"]))
    problem = directive_problem(text, args.allow_wildcard_address)
    if problem:
        raise UnsupportedLoad(f"{args.nginx_conf}: {problem}")
    if plan.server == "local":
        _check_modules(conf, plan.nginx)
    scenario = replace(
        plan.scenario,
        name="reverse_proxy" if conf.upstreams else "static",
        protocol="https" if conf.https else "http",
        upstreams=min(max(len(conf.upstreams), 1), 64),
        directives=(),
        tls_resumption=False,
        jwt=False,
        nginx_conf=conf.path,
    )
    label = (plan.label + "-conf") if plan.label else "conf"
    return plan, replace(plan, scenario=scenario, label=label), conf, hosts


def _check_modules(conf: UserConf, nginx: str) -> None:
    """Refuse a ``load_module`` of a module file this host's nginx does not have."""
    from runners import jwt
    from runners.hosts import LocalHost

    if not conf.modules:
        return
    out = LocalHost().run([nginx, "-V"], check=False)
    folder = jwt.modules_path(out.stderr + out.stdout)
    missing = [m for m in conf.modules if not os.path.isfile(os.path.join(folder, m))]
    if missing:
        raise UserConfError(
            f"{conf.path}: load_module of a module not installed here ({folder}): "
            + ", ".join(missing)
        )


def main(args: argparse.Namespace, parts: Parts) -> int:
    """Measure the user's config against the reference; 0, 1 (measurement failed) or 2."""
    from runners.interleave import PairSettings, judge, ratios, render, run_pairs
    from runners.plan import Access
    from trialtable.errors import RunFolderError
    from trialtable.values import printable

    try:
        plan_a, plan_b, conf, hosts = _checked(args, parts)
    except (UnsupportedLoad, UserConfError) as exc:
        print(f"{PROG}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    settings = PairSettings(args.pairs or PAIRS, args.threads[0], args.connections[0])
    try:
        a, b, ids = run_pairs(
            plan_a,
            plan_b,
            settings,
            args.out,
            progress=None if args.quiet else sys.stderr,
            access=Access(hosts["accept_new_host_keys"], hosts["ssh_config"]),
        )
        values = ratios(a, b)
        verdict = judge(values, 0.0)
    except UserConfError as exc:
        print(f"{PROG}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except (RunnerError, RunFolderError, ValueError) as exc:
        print(f"{PROG}: error: {printable(str(exc))}", file=sys.stderr)
        return 1
    doc = _document(plan_a, plan_b, conf, ids, values, verdict.to_dict())
    write_atomic(Path(args.out) / ids[1] / CONF_COST_FILE, json.dumps(doc, indent=1) + "\n")
    if args.format == "json":
        print(json.dumps(doc, indent=1))
    else:
        print(
            f"{conf.path}: {len(conf.files)} file(s) read, served over {plan_b.scenario.protocol}"
        )
        print(render(verdict, "cpu", ids, values).split("\nWORSE")[0].split("\npass")[0])
        print(f"cost ratio stored in {Path(args.out) / ids[1] / CONF_COST_FILE}")
    return 0


def _document(
    plan_a: Any,
    plan_b: Any,
    conf: UserConf,
    ids: tuple[str, str],
    values: list[float],
    verdict: dict[str, Any],
) -> dict[str, Any]:
    """``conf-cost.json``: the ratio, its interval and pairs, what it compares, and where."""
    ref = plan_a.scenario
    return {
        "kind": KIND,
        "run_id": ids[1],
        "reference_run_id": ids[0],
        "measured_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nginx_conf": conf.path,
        "files": list(conf.files),
        "reference": {"scenario": ref.name, "protocol": ref.protocol, "file_bytes": ref.file_bytes},
        "served_protocol": plan_b.scenario.protocol,
        "measure": "nginx CPU time per request, yours / the reference's",
        "ratio": verdict["median"],
        "ratio_low": verdict["low"],
        "ratio_high": verdict["high"],
        "confidence": verdict["confidence"],
        "pairs": len(values),
        "ratios": values,
        "vcpus": plan_a.vcpus[0],
    }
