"""``python -m sizing workload``: from access logs, an nginx.conf or an ingress ConfigMap.

The access-log command is `sizing.workload.accesslog`'s; this adds ``--from-conf FILE`` and
``--ingress-nginx CONFIGMAP`` (`sizing.workload.conf`) to it, and writes their workload
document through the same output path. The help of ``--ingress-nginx``, ``--server`` and
``--location`` is the sizing request's (`sizing.request`).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path

from sizing.errors import InputError, printable
from sizing.request import SizingRequest
from trialtable.pathargs import INPUT_FILE, path_arg
from trialtable.values import Subcommands

#: What a workload document read from a configuration holds (``source``).
SOURCES = {False: "nginx.conf", True: "ingress-nginx ConfigMap"}


def _help(name: str) -> str:
    f = next(f for f in dataclasses.fields(SizingRequest) if f.name == name)
    return str(f.metadata["help"])


def add_parser(sub: Subcommands) -> None:
    """The ``workload`` subcommand: ``--from-log``, ``--from-conf`` or ``--ingress-nginx``."""
    from sizing.workload.accesslog import add_parser as add_log_parser

    parser = add_log_parser(sub, _sources)
    parser.description = (
        f"{parser.description} Or read an nginx.conf with its includes (--from-conf) or an "
        "ingress-nginx ConfigMap (--ingress-nginx), never running it, into the workload and its "
        "per-request features, each with the file and line it was read at."
    )
    parser.add_argument("--server", default="", metavar="NAME", help=_help("conf_server"))
    parser.add_argument("--location", default="", metavar="LOCATION", help=_help("conf_location"))


def _sources(source: argparse._MutuallyExclusiveGroup) -> None:
    source.add_argument(
        "--from-conf",
        type=path_arg(INPUT_FILE),
        metavar="FILE",
        help="an nginx.conf (its includes read too, nothing run): the workload and the "
        "per-request features of the server and location that serve the traffic",
    )
    source.add_argument(
        "--ingress-nginx",
        type=path_arg(INPUT_FILE),
        metavar="CONFIGMAP",
        help=_help("ingress_nginx"),
    )


def run(args: argparse.Namespace) -> int:
    """Write the workload of the logs, or of the configuration; exit code 0."""
    from sizing.workload import accesslog

    if args.from_log is not None:
        if args.server or args.location:
            raise InputError("--server and --location pick from --from-conf, not from logs")
        return accesslog.run(args)
    if args.out is not None and Path(args.out).is_dir():
        raise InputError(f"--out: {args.out} is a folder; expected a file name")
    doc, lines = conf_document(args)
    given = [p for p in (args.from_conf, args.ingress_nginx) if p]
    return accesslog.emit(args.out, doc, lines, given)


def conf_document(args: argparse.Namespace) -> tuple[dict[str, object], list[str]]:
    """The workload document of ``--from-conf``/``--ingress-nginx`` and lines for a person."""
    from sizing.workload.accesslog import FORMAT, KIND
    from sizing.workload.conf import read

    ingress = args.ingress_nginx is not None
    reading = read(args.from_conf or "", args.ingress_nginx or "", args.server, args.location)
    doc: dict[str, object] = {
        "format": FORMAT,
        "kind": KIND,
        "source": SOURCES[ingress],
        "workload": reading.workload.to_dict(),
        "configuration": reading.to_dict(),
    }
    flag = "--ingress-nginx" if ingress else "--nginx-conf"
    argv = ["--rps", "RPS", flag, reading.path]
    argv += ["--server", args.server] if args.server else []
    argv += ["--location", args.location] if args.location else []
    lines = reading.lines()
    lines.append(printable("size it: python -m sizing recommend " + shlex.join(argv)))
    return doc, lines
