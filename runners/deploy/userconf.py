"""A user's own nginx.conf, rewritten to run inside a deployment's prefix (pure).

`read_user_conf` reads the file with its includes through the one configuration reader
(`trialtable.nginxconf`, shared with ``sizing workload --from-conf``: crossplane, bounded,
include loops and unknown modules refused) and checks what cannot run in the sandbox;
`UserConf.render` writes the config a `runners.deploy.nginx.Deployment` starts:

- every ``listen`` on the deployment's own address, one private port per port of the
  original (``listen 80`` and ``listen [::]:80`` share one), a Unix socket inside the prefix;
- every ``proxy_pass`` target and ``upstream`` server on the deployment's stub upstream
  (its nginx file servers on 127.0.0.1), ``resolver`` dropped;
- ``root`` and ``alias`` on the prefix's content, logs, pid, temporary and cache folders in
  the prefix, certificates and keys replaced by the deployment's own (of the key type of the
  loaded server's certificate: `runners.deploy.userkey`), secrets a TLS server
  would read (DH parameters, CRLs, password and ticket key files) dropped or replaced;
- the main context's ``user``, ``pid``, ``worker_processes``, ``worker_cpu_affinity``,
  ``daemon``, ``master_process``, ``lock_file`` and ``working_directory`` set by the run.

Refused, with one line naming the file and line (`UserConfError`): what would write or
read code outside the prefix (``proxy_store``, Lua or njs code in files), send beyond the host
(a syslog log), reach an upstream the stub cannot stand for (FastCGI, uWSGI, SCGI,
memcached, gRPC, mail's ``auth_http``, an ``https://`` or variable target), and
``load_module`` of a module file that is not in the host's module folder (checked by the
deployment). OCSP responders are dropped. Inline Lua and njs code runs as written: what it
opens itself (files, sockets) is not rewritten.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Required, TypedDict

import crossplane

from runners.deploy.conf import ConfTarget, hostport
from runners.deploy.userkey import CertKey, cert_key
from runners.errors import BadInput
from trialtable.errors import ConfError
from trialtable.nginxconf import DATA_BLOCKS, Statement, load


class UserConfError(BadInput):
    """A user configuration that cannot run in the sandbox (bad input: exit 2)."""


#: Main-context directives the run sets itself (the user's are dropped).
RUN_OWNED = frozenset(
    {
        "user",
        "pid",
        "worker_processes",
        "worker_cpu_affinity",
        "daemon",
        "master_process",
        "lock_file",
        "working_directory",
        "worker_rlimit_core",
    }
)
#: Dropped anywhere: name lookups and secrets the run's own TLS does not need.
DROPPED = frozenset(
    {
        "resolver",
        "resolver_timeout",
        "ssl_dhparam",
        "ssl_crl",
        "proxy_ssl_crl",
        "ssl_stapling_file",
        "ssl_password_file",
        "proxy_ssl_password_file",
        "proxy_bind",
        "ssl_stapling_responder",
        "ssl_ocsp_responder",
    }
)
#: Replaced by the deployment's certificate or key (a file in the prefix).
CERTS = frozenset(
    {
        "ssl_certificate",
        "ssl_trusted_certificate",
        "ssl_client_certificate",
        "proxy_ssl_certificate",
        "proxy_ssl_trusted_certificate",
        "lua_ssl_trusted_certificate",
        "js_fetch_trusted_certificate",
    }
)
KEYS = frozenset({"ssl_certificate_key", "proxy_ssl_certificate_key"})
TEMP_PATHS = frozenset(
    f"{kind}_temp_path" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
)
CACHE_PATHS = frozenset(f"{kind}_cache_path" for kind in ("proxy", "fastcgi", "uwsgi", "scgi"))
#: Upstream protocols the stub (plain HTTP nginx file servers) cannot stand for.
OTHER_UPSTREAMS = frozenset(
    {"fastcgi_pass", "uwsgi_pass", "scgi_pass", "memcached_pass", "grpc_pass", "auth_http"}
)
#: Code read from files (outside the prefix): inline it (``*_by_lua_block``) to run it here.
CODE_FILES = frozenset(
    {
        "js_import",
        "js_include",
        "js_path",
        "lua_package_path",
        "lua_package_cpath",
        "perl_modules",
        "perl_require",
        "xslt_stylesheet",
    }
)
#: ``listen`` parameters that belong to the socket: given once per address and port.
SOCKET_OPTIONS = (
    "backlog=",
    "rcvbuf=",
    "sndbuf=",
    "accept_filter=",
    "deferred",
    "bind",
    "ipv6only=",
    "reuseport",
    "so_keepalive=",
    "fastopen=",
    "setfib=",
)
#: Where the run's files go inside the prefix.
CERT_FILE, KEY_FILE, TICKET_FILE, HTPASSWD_FILE = "cert.pem", "key.pem", "ticket.key", "htpasswd"


@dataclass
class UserConf:
    """A user's configuration, read and checked, ready to render for a deployment.

    Attributes
    ----------
    path : str
        The file read.
    files : tuple of str
        Every file read.
    statements : list of Statement
        Its statements, includes spliced in.
    slots : list of str
        The original ports (or Unix socket paths), one private port (socket) each, in order.
    target : int
        The slot the load goes to: the first ``listen`` of the first ``http`` server.
    https : bool
        Whether the target slot serves TLS.
    upstreams : list of str
        The original upstream targets, one stub server each (at most the stub's 64).
    modules : tuple of str
        Module file names it loads (checked on the host).
    needs_cert : bool
        Whether any directive reads a certificate or key.
    key : CertKey
        The run's key: the type of the loaded server's certificate (`runners.deploy.userkey`).
    """

    path: str
    files: tuple[str, ...]
    statements: list[Statement]
    slots: list[str] = field(default_factory=list)
    target: int = -1
    https: bool = False
    upstreams: list[str] = field(default_factory=list)
    modules: tuple[str, ...] = ()
    needs_cert: bool = False
    key: CertKey = field(default_factory=CertKey)

    def render(self, out: ConfTarget) -> str:
        """The nginx.conf that runs this configuration in ``out.prefix``."""
        head = [
            f"# nginx-sizing: {os.path.basename(self.path)} rewritten to run in {out.prefix}",
            *out.main_lines(workers_only=True),
            f"pid {out.prefix}/nginx.pid;",
        ]
        if self.key.name:
            head.insert(1, f"# the run's certificate key: {self.key.name}")
        if not any(s.name == "error_log" for s in self.statements):
            head.append(f"error_log {out.prefix}/error.log warn;")
        rewriter = _Rewriter(self, out)
        body = crossplane.build(rewriter.block(self.statements, ()))
        return "\n".join(head) + "\n" + body + "\n"


class BuiltStatement(TypedDict, total=False):
    """One statement for ``crossplane.build``: directive, arguments, line, block or comment."""

    directive: Required[str]
    args: Required[list[str]]
    line: int
    comment: str
    block: list[BuiltStatement]


def _comment(text: str) -> BuiltStatement:
    return {"directive": "#", "args": [], "comment": " " + text, "line": -1}


def _verbatim(s: Statement) -> BuiltStatement:
    """A data block's entry (``types``, ``map`` ...), unchanged."""
    out: BuiltStatement = {"directive": s.name, "args": list(s.args)}
    if s.block is not None:
        out["block"] = [_verbatim(x) for x in s.block]
    return out


def _refuse(s: Statement, why: str) -> UserConfError:
    return UserConfError(f'{s.where}: "{s.name}" {why}; not run in the sandbox')


def _slot_key(arg: str) -> str:
    """The port of a ``listen`` address (the socket path for ``unix:``): what a slot is."""
    if arg.startswith("unix:"):
        return arg
    if arg.startswith("["):
        return arg.rpartition("]:")[2] if "]:" in arg else "80"
    _, colon, port = arg.rpartition(":")
    if colon:
        return port
    return arg if arg.isdigit() else "80"


def _upstream_key(s: Statement) -> str:
    """What a ``proxy_pass`` targets: ``host:port`` or an upstream block's name (checked)."""
    url = s.args[0] if s.args else ""
    if "$" in url:
        raise _refuse(s, "has a target in a variable (the stub upstream cannot stand for it)")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme != "http":
        raise _refuse(s, f"to {scheme or url!r}: only http:// targets have a local stub")
    return rest.split("/", 1)[0]


def _scan(conf: UserConf, stmts: list[Statement], ctx: tuple[str, ...], names: set[str]) -> None:
    """Check every statement; collect slots, upstream targets, modules, the target slot."""
    for s in stmts:
        _check_statement(s)
        if s.name == "upstream" and s.args:
            names.add(s.args[0])
        if s.name == "listen" and s.args:
            key = _slot_key(s.args[0])
            if key not in conf.slots:
                conf.slots.append(key)
            if ctx == ("http", "server") and conf.target < 0:
                conf.target, conf.https = conf.slots.index(key), "ssl" in s.args[1:]
        if s.name == "server" and ctx == ("http", "upstream") and s.args:
            conf.upstreams.append(s.args[0])
        if s.name == "proxy_pass":
            conf.upstreams.append(_upstream_key(s))
        if s.name == "load_module" and s.args:
            conf.modules += (os.path.basename(s.args[0]),)
        if s.name in CERTS or s.name in KEYS:
            conf.needs_cert = True
        if s.block is not None and s.name not in DATA_BLOCKS:
            _scan(conf, s.block, (*ctx, s.name), names)


def _check_statement(s: Statement) -> None:
    """Refuse what the sandbox cannot run (one line naming file and line)."""
    if s.name in OTHER_UPSTREAMS:
        raise _refuse(s, "needs an upstream of its own protocol (only HTTP has a local stub)")
    if s.name in CODE_FILES or s.name.endswith("_by_lua_file"):
        raise _refuse(s, "reads code from a file outside the run's folder (inline it)")
    if s.name.endswith("_store") and s.args[:1] != ["off"]:
        raise _refuse(s, "writes responses into files outside the run's folder")
    if s.name in ("access_log", "error_log") and s.args[:1] and s.args[0].startswith("syslog:"):
        raise _refuse(s, "sends the log to a syslog server beyond the run")
    if s.name == "ssl_engine":
        raise _refuse(s, "uses a hardware engine")


def read_user_conf(path: str) -> UserConf:
    """The configuration at ``path``, read and checked.

    Raises
    ------
    UserConfError
        One line naming the file (and line): a file that does not parse, an include loop, an
        unknown module's directive (`trialtable.nginxconf`), no ``http`` server that
        listens, or anything the sandbox cannot run.
    """
    try:
        config = load(path)
    except ConfError as exc:
        raise UserConfError(str(exc)) from None
    conf = UserConf(str(path), tuple(config.files), config.statements)
    names: set[str] = set()
    _scan(conf, config.statements, (), names)
    conf.upstreams = [u for u in dict.fromkeys(conf.upstreams) if u not in names]
    conf.upstreams = conf.upstreams or ([] if not _proxies(config.statements) else ["stub"])
    if conf.target < 0:
        raise UserConfError(f"{path}: no http server listens (nothing to load)")
    if conf.https:
        conf.key = cert_key(_target_certs(config.statements, os.path.dirname(str(path))))
    return conf


def _target_certs(stmts: list[Statement], base: str) -> list[tuple[str, str]]:
    """``(path, where)`` of the loaded server's ``ssl_certificate`` lines (else the http's).

    The loaded server is the first ``http`` server that listens; a relative path is read
    from the main file's folder, as nginx reads it.
    """
    for http in (s.block for s in stmts if s.name == "http" and s.block):
        servers = [s.block for s in http if s.name == "server" and s.block]
        target = next((b for b in servers if any(x.name == "listen" for x in b)), [])
        for scope in (target, http):
            inline = ("data:", "$")  # nothing to read: kept as written, and said so
            certs = [
                (
                    c.args[0] if c.args[0].startswith(inline) else os.path.join(base, c.args[0]),
                    c.where,
                )
                for c in scope
                if c.name == "ssl_certificate" and c.args
            ]
            if certs:
                return certs
    return []


def _proxies(stmts: list[Statement]) -> bool:
    return any(s.name == "proxy_pass" or (s.block and _proxies(s.block)) for s in stmts)


class _Rewriter:
    """Turns one configuration's statements into crossplane payload for one deployment."""

    def __init__(self, conf: UserConf, out: ConfTarget) -> None:
        self.conf, self.out = conf, out
        stubs = list(out.upstream) or ["127.0.0.1:9"]
        self.stub = {u: stubs[i % len(stubs)] for i, u in enumerate(conf.upstreams)}
        self.stub_default = stubs[0]
        self.count = 0
        self.line = 0
        self.socket_done: set[str] = set()

    def _file(self, kind: str, suffix: str = "") -> str:
        self.count += 1
        return f"{self.out.prefix}/{kind}-{self.count}{suffix}"

    def statement(self, s: Statement, ctx: tuple[str, ...]) -> BuiltStatement:
        """One statement rewritten (a ``# dropped`` comment for a dropped one)."""
        if (not ctx and s.name in RUN_OWNED) or s.name in DROPPED:
            return _comment(f"dropped: {s.name} ({s.where})")
        self.line += 1
        out: BuiltStatement = {"directive": s.name, "args": self.args(s, ctx), "line": self.line}
        if s.block is not None and s.name in DATA_BLOCKS:  # entries are data: kept as they are
            out["block"] = [_verbatim(x) for x in s.block]
        elif s.block is not None:
            out["block"] = self.block(s.block, (*ctx, s.name))
        return out

    def block(self, stmts: list[Statement], ctx: tuple[str, ...]) -> list[BuiltStatement]:
        """A block's statements; a second identical ``listen`` or certificate line dropped.

        ``listen 80`` and ``listen [::]:80`` land on one address, two certificates (RSA and
        ECDSA) on the run's one.
        """
        out, seen = [], set()
        for s in stmts:
            d = self.statement(s, ctx)
            key = (d["directive"], d["args"][0] if d["args"] else "", "quic" in d["args"])
            if d["directive"] in ("listen", *CERTS, *KEYS):
                if key in seen:
                    d = _comment(f"merged: {s.name} ({s.where})")
                seen.add(key)
            if d["directive"] == "#":
                self.line += 1
                d["line"] = self.line
            out.append(d)
        return out

    def args(self, s: Statement, ctx: tuple[str, ...]) -> list[str]:
        """The statement's arguments, moved into the run."""
        a, p = list(s.args), self.out.prefix
        name = s.name
        if name == "listen":
            return self.listen(a)
        if name in ("root", "alias"):
            return [f"{p}/html" + ("/" if a[0].endswith("/") else "")]
        if name == "error_log" and not ctx:
            a = [f"{p}/error.log", *a[1:]]
        elif name in ("access_log", "error_log") and a and a[0] not in ("off", "stderr"):
            if not a[0].startswith("memory:"):
                a[0] = self._file("log", ".log")
        elif name in TEMP_PATHS:
            a[0] = self._file("tmp")
        elif name in CACHE_PATHS:
            a = [self._file("cache")] + [
                f"temp_path={self._file('tmp')}" if x.startswith("temp_path=") else x for x in a[1:]
            ]
        elif name in CERTS:
            a = [f"{p}/{CERT_FILE}"]
        elif name in KEYS:
            a = [f"{p}/{KEY_FILE}"]
        elif name == "ssl_session_ticket_key":
            a = [f"{p}/{TICKET_FILE}"]
        elif name == "auth_basic_user_file":
            a = [f"{p}/{HTPASSWD_FILE}"]
        elif name == "load_module":
            a = [f"{self.out.modules_dir.rstrip('/')}/{os.path.basename(a[0])}"]
        elif name == "server" and ctx[-1:] == ("upstream",):
            keep = [x for x in a[1:] if x.split("=")[0] not in ("resolve", "service", "route")]
            a = [self.stub.get(a[0], self.stub_default), *keep]
        elif name == "proxy_pass":
            host = a[0].partition("://")[2].split("/", 1)[0]
            if host in self.stub:
                a[0] = a[0].replace(host, self.stub[host], 1)
        return a

    def listen(self, a: list[str]) -> list[str]:
        """A ``listen`` on the run's address and the slot's private port."""
        key = _slot_key(a[0])
        index = self.conf.slots.index(key)
        if key.startswith("unix:"):
            addr = f"unix:{self.out.prefix}/socket-{index}.sock"
        else:
            addr = hostport(self.out.listen, self.out.ports[index])
        socket = f"{addr} {'quic' in a}"
        first = socket not in self.socket_done
        self.socket_done.add(socket)
        rest = [x for x in a[1:] if first or not x.startswith(SOCKET_OPTIONS)]
        return [addr, *(x for x in rest if not x.startswith("ipv6only="))]
