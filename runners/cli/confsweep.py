"""``python -m runners sweep --nginx-conf FILE``: your own nginx.conf against the reference.

The file is read with its includes through the one configuration reader and rewritten to run
in a private prefix (`runners.deploy.userconf`); anything the sandbox cannot run is refused
with one line and exit 2 before a run starts. Then, as ``runners ab`` does
(`runners.interleave`), the reference config of the sweep options (A: the static scenario by
default) and your config (B) each get a private nginx pinned to the same CPUs and are measured
in interleaved pairs; the median of B's CPU time per request over A's, with its bootstrap
interval, is written into B's run folder as ``conf-cost.json``, where
``python -m sizing recommend --runs RUN`` reads it (`sizing.evidence.confcost`).

`user_plan` is the one way a command turns its plan into a run of the user's config: ``runners
ab --nginx-conf`` (`ab_plans`) and ``runners search --nginx-conf`` (`runners.cli.confsearch`)
read, rewrite and refuse through it, and write ``conf-cost.json`` through `cost_document`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runners.deploy.conf import ConfTarget
from runners.deploy.userconf import UserConf, UserConfError, read_user_conf
from runners.errors import RunnerError
from runners.loadgen import UnsupportedLoad
from trialtable.confcost import CONF_COST_FILE, KIND
from trialtable.files import write_atomic
from trialtable.jsonvalue import JsonObject, JsonValue
from trialtable.pathargs import INPUT_FILE, path_arg
from trialtable.tls import tls_key
from trialtable.values import int_between, printable

if TYPE_CHECKING:  # a plan and the pairs' verdict load only when a sweep runs
    from runners.interleave import Verdict
    from runners.plan import Plan

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
    conf_option(
        p,
        "measure your own nginx.conf (rewritten to run privately on loopback) against the "
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


def conf_option(p: argparse.ArgumentParser, text: str, flag: str = "--nginx-conf") -> None:
    """A ``--nginx-conf``-like option: an nginx.conf file to read and run (help ``text``)."""
    p.add_argument(flag, type=path_arg(INPUT_FILE), default=None, metavar="FILE", help=text)


def real_only(args: argparse.Namespace, hosts: dict[str, Any]) -> None:
    """Refuse what a run of a user's config cannot be: simulated, resumed, or many settings."""
    if hosts["server"] == "sim" or args.resume:
        raise UnsupportedLoad(
            "--nginx-conf measures real nginx: --server sim and --resume do not apply"
        )
    if len(args.vcpus) != 1:
        raise UnsupportedLoad("--nginx-conf measures one setting: one --vcpus")


def user_plan(
    plan: Plan, path: str, allow_wildcard: bool, label: str = "conf"
) -> tuple[Plan, UserConf]:
    """``plan`` running the user's config at ``path`` instead of its scenario's config.

    The config is read and checked (`runners.deploy.userconf`); its every ``listen``, as
    rewritten, follows the rule ``--target-address`` follows; a ``load_module`` of a module
    this host lacks is refused (a remote server's modules are checked when it is set up).

    Raises
    ------
    UnsupportedLoad, UserConfError
        One line naming the file (and line): bad input, exit 2.
    """
    from runners.cli.options import directive_problem

    conf = read_user_conf(os.path.abspath(path))
    address = plan.target_address or "127.0.0.1"
    ports = list(range(20000, 20000 + len(conf.slots)))
    text = conf.render(ConfTarget("/run", address, ports, [0], ["127.0.0.1:9"]))
    problem = directive_problem(text, allow_wildcard)
    if problem:
        raise UnsupportedLoad(f"{path}: {problem}")
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
    label = f"{plan.label}-{label}" if plan.label else label
    if conf.key.note:  # the run's key: the user's certificate's type, or why not
        print(printable(conf.key.note), file=sys.stderr)
    return replace(plan, scenario=scenario, label=label), conf


def _checked(args: argparse.Namespace, parts: Parts) -> tuple[Any, Any, UserConf, dict[str, Any]]:
    """Plans A (reference) and B (the user's config), the config read, the hosts; or refuse."""
    hosts = parts.hosts(args)
    real_only(args, hosts)
    if len(args.threads) != 1 or len(args.connections) != 1:
        raise UnsupportedLoad("--nginx-conf measures one setting: one --threads and --connections")
    plan = parts.plan(args, hosts, None, threads=args.threads, connections=args.connections)
    plan_b, conf = user_plan(plan, args.nginx_conf, args.allow_wildcard_address)
    return plan, plan_b, conf, hosts


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
    doc = cost_document((plan_a, plan_b), conf, ids, pairs_measured(values, verdict.to_dict()))
    stored = store_cost(args.out, doc)
    if args.format == "json":
        print(json.dumps(doc, indent=1))
    else:
        print(
            f"{printable(conf.path)}: {len(conf.files)} file(s) read, served over "
            f"{plan_b.scenario.protocol}"
        )
        print(render(verdict, "cpu", ids, values).split("\nWORSE")[0].split("\npass")[0])
        print(f"cost ratio stored in {stored}")
    return 0


def ab_plans(args: argparse.Namespace, hosts: dict[str, Any], plan: Any) -> tuple[Any, Any, Any]:
    """Plans A and B of ``runners ab`` and B's config read (None for ``--ab-directive``).

    A is ``plan`` (the reference config of the options) or ``--nginx-conf-a FILE``; B is A
    plus the ``--ab-directive`` lines, or ``--nginx-conf FILE``.

    Raises
    ------
    UnsupportedLoad, UserConfError
        Bad input (exit 2), one line.
    """
    from runners.interleave import with_directives

    if bool(args.ab_directive) == bool(args.nginx_conf):
        raise UnsupportedLoad("ab needs one B: --ab-directive lines or --nginx-conf FILE")
    if not args.nginx_conf:
        if args.nginx_conf_a:
            raise UnsupportedLoad("--nginx-conf-a is A against B's --nginx-conf: give both")
        return plan, with_directives(plan, args.ab_directive), None
    real_only(args, hosts)
    allow = args.allow_wildcard_address
    plan_a = user_plan(plan, args.nginx_conf_a, allow)[0] if args.nginx_conf_a else plan
    plan_b, conf = user_plan(plan, args.nginx_conf, allow, label="conf-B")
    return plan_a, plan_b, conf


def ab_cost(
    args: argparse.Namespace,
    plans: tuple[Plan, Plan],
    conf: UserConf | None,
    ids: tuple[str, str],
    measured: tuple[list[float], Verdict],
) -> Path | None:
    """``runners ab --nginx-conf``: B's ``conf-cost.json`` when A is the reference; its path.

    Only the ``cpu`` measure against the reference (not ``--nginx-conf-a``) is a cost ratio
    `python -m sizing recommend --runs` can carry; ``measured`` is the pairs' ratios and
    their `runners.interleave.Verdict`.
    """
    if conf is None or args.nginx_conf_a or args.measure != "cpu":
        return None
    values, verdict = measured
    return store_cost(
        args.out, cost_document(plans, conf, ids, pairs_measured(values, verdict.to_dict()))
    )


def cost_document(
    plans: tuple[Plan, Plan],
    conf: UserConf,
    ids: tuple[str, str],
    measured: Mapping[str, JsonValue],
) -> JsonObject:
    """``conf-cost.json``: what ``measured`` (the ratio, its interval, how) compares, where.

    ``plans`` and ``ids`` are the reference's and the user config's (A, B).
    """
    ref = plans[0].scenario
    return {
        "kind": KIND,
        "run_id": ids[1],
        "reference_run_id": ids[0],
        "measured_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nginx_conf": conf.path,
        "files": list(conf.files),
        "reference": {"scenario": ref.name, "protocol": ref.protocol, "file_bytes": ref.file_bytes},
        "served_protocol": plans[1].scenario.protocol,
        "tls_key": (conf.key.name or tls_key(plans[1].scenario.tls_key).name)
        if plans[1].scenario.protocol == "https"
        else None,
        **measured,
        "vcpus": plans[0].vcpus[0],
    }


def pairs_measured(values: list[float], verdict: Mapping[str, JsonValue]) -> JsonObject:
    """The measured part of `cost_document` from interleaved pairs (`runners.interleave`)."""
    return {
        "method": "pairs",
        "measure": "nginx CPU time per request, yours / the reference's",
        "ratio": verdict["median"],
        "ratio_low": verdict["low"],
        "ratio_high": verdict["high"],
        "confidence": verdict["confidence"],
        "pairs": len(values),
        "ratios": values,
    }


def store_cost(out: str, doc: Mapping[str, JsonValue]) -> Path:
    """Write ``doc`` as the user config's run's ``conf-cost.json``; its path."""
    path = Path(out) / str(doc["run_id"]) / CONF_COST_FILE
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    return path
