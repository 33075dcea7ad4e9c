"""Option blocks shared by the ``python -m runners`` subcommands.

``sweep``, ``search`` and ``facts`` (`runners.cli.main`) and ``calibrate``
(`runners.cli.calibrate`) reach
their hosts the same way; ``cleanup`` shares the SSH access options. Each function adds its
options to one subcommand's parser; names, defaults and help are defined here once.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import ipaddress
import re
import socket
from typing import Any, TypeAlias

from runners.deploy.conf import is_wildcard
from runners.names import DEFAULT_OUT
from runners.tools import TOOLS
from trialtable.pathargs import INPUT_FILE, OUTPUT_FOLDER, PROGRAM, path_arg
from trialtable.schema import PROTOCOLS
from trialtable.values import (
    Parser,
    parse_duration_ms,
    parse_fraction,
    parse_label,
    parse_size,
    within_column,
)


class DocParser(Parser):
    """A subcommand's parser whose description is a paragraph of a module's docstring.

    ``doc_from=(MODULE, N)``: the N-th paragraph (from 0) of ``MODULE``'s docstring, read only
    when the help is printed, so building the parser does not import the module.
    """

    def __init__(self, *args: Any, doc_from: tuple[str, int] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.doc_from = doc_from

    def format_help(self) -> str:
        """The help, with the description read from the module on first use."""
        if self.doc_from is not None and self.description is None:
            module, paragraph = self.doc_from
            doc = importlib.import_module(module).__doc__ or ""
            parts = doc.split("\n\n")
            self.description = parts[paragraph] if paragraph < len(parts) else None
        return super().format_help()


#: What ``add_subparsers(parser_class=DocParser)`` returns: each subcommand adds its parser to it.
DocSubcommands: TypeAlias = "argparse._SubParsersAction[DocParser]"


def out_option(p: argparse.ArgumentParser, what: str = "run folders") -> None:
    """``--out DIR``: the parent folder of the ``what`` a command writes (default data/runs)."""
    p.add_argument(
        "--out",
        default=DEFAULT_OUT,
        type=path_arg(OUTPUT_FOLDER),
        metavar="DIR",
        help=f"parent folder of {what} (default {DEFAULT_OUT})",
    )


def judge_options(p: argparse.ArgumentParser) -> None:
    """``--sla-p99`` and ``--max-error-rate``: how a trial is judged; ``--label``: its row's."""
    p.add_argument(
        "--sla-p99",
        type=within_column(parse_duration_ms, "sla_p99_ms"),
        default=5.0,
        metavar="DURATION",
        help="p99 latency a trial must meet (default 5ms)",
    )
    p.add_argument(
        "--max-error-rate",
        type=within_column(parse_fraction, "error_rate"),
        default=0.01,
        metavar="FRACTION",
        help="errors per response above which a trial is invalid (default 1%%)",
    )
    p.add_argument(
        "--label",
        type=parse_label,
        default="",
        help="instance type or free label stored in each row (instance_label)",
    )


def response_options(p: argparse.ArgumentParser, *, protocol: str) -> None:
    """``--protocol`` (default ``protocol``) and ``--file-size``: what the clients asked for."""
    p.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=protocol,
        help="protocol the load generator speaks (default: %(default)s; sizing assumes the same)",
    )
    p.add_argument(
        "--file-size",
        type=within_column(parse_size, "file_bytes"),
        default=None,
        metavar="SIZE",
        help="response body, e.g. 0, 1KB, 53KB, 1MB (default: the scenario's, 1KB for static, "
        "1MB for throughput, 0 for cps)",
    )


def ssh_options(p: argparse.ArgumentParser) -> None:
    """``--accept-new-host-keys`` and ``--ssh-config``: how SSH hosts are trusted and found."""
    p.add_argument(
        "--accept-new-host-keys",
        action="store_true",
        help="trust and record SSH host keys not yet in known_hosts",
    )
    p.add_argument(
        "--ssh-config",
        type=path_arg(INPUT_FILE),
        metavar="FILE",
        help="ssh config file instead of ~/.ssh/config",
    )


def host_options(
    p: argparse.ArgumentParser, *, server_default: str | None = None, inventory: bool = True
) -> None:
    """The server, clients, how to reach them and the binaries they run.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    server_default : str or None
        ``--server``'s default; None where an ``--inventory`` file may name the server (the
        command falls back to ``local``).
    inventory : bool
        Whether ``--inventory FILE`` (server, clients, target address, ssh config in TOML) and
        ``--clients @FILE`` (a hosts file, `runners.clients`) are offered.
    """
    p.add_argument(
        "--server",
        default=server_default,
        metavar="HOST",
        help="local (default), netns:NAME or [user@]host[:port]",
    )
    p.add_argument(
        "--client",
        action="append",
        default=None,
        metavar="HOST",
        help="load generator host; repeat for several (default local)",
    )
    if inventory:
        p.add_argument(
            "--clients",
            metavar="@FILE|A,B",
            help="client hosts: @FILE with one 'HOST [WEIGHT]' a line (WEIGHT: the host's share "
            "of a constant rate against the others', default 1), or a comma-separated list",
        )
        p.add_argument(
            "--inventory",
            type=path_arg(INPUT_FILE),
            metavar="FILE",
            help="TOML file with server, clients, target_address, ssh_config",
        )
    p.add_argument(
        "--target-address",
        metavar="ADDR",
        help="address the clients use to reach the server (derived when omitted); nginx "
        "listens only there",
    )
    p.add_argument(
        "--allow-wildcard-address",
        action="store_true",
        help="let --target-address be 0.0.0.0 or :: (nginx then listens on every interface)",
    )
    ssh_options(p)
    for name in ("nginx", "wrk", "openssl"):
        tool_option(p, name)


#: Where a tool of `TOOLS` runs, for its option's help, when not on the clients.
TOOL_HOSTS = {
    "nginx": "the server",
    "openssl": "the server",
    "wrk2": "the clients (constant-rate trials)",
}


def tool_option(p: argparse.ArgumentParser, name: str) -> None:
    """``--NAME PATH``: the binary of tool ``name`` (default its entry in `TOOLS`)."""
    p.add_argument(
        f"--{name}",
        default=TOOLS[name],
        type=path_arg(PROGRAM),
        metavar="PATH",
        help=f"{name} binary on {TOOL_HOSTS.get(name, 'the clients')}",
    )


def wildcard_problem(
    address: str | None, allowed: bool, what: str = "target address"
) -> str | None:
    """Why ``address`` may not be the target address (or ``what`` else nginx listens on).

    A wildcard (``0.0.0.0``, ``::``, a short form such as ``0``, or ``::ffff:0.0.0.0``, the
    IPv4 wildcard mapped into IPv6) makes nginx listen on every interface of the server:
    refused unless ``--allow-wildcard-address``.
    """
    if not address or allowed:
        return None
    if not is_wildcard(address):
        return None
    return (
        f"{what} {address!r} is a wildcard: nginx would listen on every interface; "
        "give the server's own address, or add --allow-wildcard-address"
    )


#: nginx's tokens: a quoted string, a comment, a block or statement end, or a bare word.
_NGINX_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'" + r"""|#[^\n]*|[{};]|[^\s{};"']+"""
)


def _listen_host(arg: str) -> str | None:
    """The address of a ``listen`` argument: ``"*"`` for every interface, None for a socket."""
    if arg.startswith("unix:"):
        return None
    if arg.startswith("["):
        return arg[1 : arg.find("]")] if "]" in arg else arg
    host, colon, _ = arg.rpartition(":")
    if not colon:
        return "*" if arg.isdigit() else arg  # ``listen 8080``: every interface
    return host


def _name_problem(host: str | None, allowed: bool) -> str | None:
    """Why a ``listen`` may not name ``host``, or None.

    A host name (``localhost`` aside) is resolved by nginx on the server, maybe to a wildcard
    that this side cannot see: refused unless ``--allow-wildcard-address``.
    """
    if not host or allowed or host.strip("[]").lower() in ("localhost", "*"):
        return None
    text = host.strip("[]")
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(text)
        return None
    with contextlib.suppress(OSError):
        socket.inet_aton(text)
        return None
    return (
        f"listen names the host {host!r}, which nginx resolves on the server (to every "
        "interface for all this check can tell); give an IP address"
    )


def directive_problem(text: str, allowed: bool) -> str | None:
    """Why the extra nginx directive ``text`` may not be used, or None.

    A ``listen`` in it (in a ``server`` block the text opens) follows the rule of
    `wildcard_problem`: a wildcard or port-only address makes nginx listen on every interface
    and is refused unless ``--allow-wildcard-address``. An ``include`` is refused: what it
    would add cannot be checked.
    """
    words = [t for t in _NGINX_TOKEN.findall(text) if not t.startswith("#")]
    tokens = [t[1:-1] if t[:1] in "\"'" else t for t in words]
    start = True
    for i, token in enumerate(tokens):
        if start and token == "include":
            return f"directive {text[:80]!r}: include is not allowed (its content is not checked)"
        if start and token == "listen" and i + 1 < len(tokens):
            host = _listen_host(tokens[i + 1])
            if host == "*" and not allowed:
                return (
                    f"directive {text[:80]!r} makes nginx listen on every interface; "
                    "listen on the server's own address, or add --allow-wildcard-address"
                )
            problem = wildcard_problem(host, allowed) or _name_problem(host, allowed)
            if problem:
                return f"directive {text[:80]!r}: {problem}"
        start = token in ("{", "}", ";")
    return None
