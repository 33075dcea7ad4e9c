"""Directives -> workload: what one server and location of an nginx.conf does per request.

NGINX's inheritance is followed: a directive set in ``location`` replaces the one of its
``server``, which replaces the one of ``http`` (for the array-like directives too:
``access_log``, ``proxy_set_header``, ``limit_req``). The values NGINX uses when a directive is
absent are its documented defaults (https://nginx.org/en/docs/, version 1.22).

Every feature names the file and line it was read at; every value that is not read but
estimated says so; every directive that may cost per request and has no feature is listed as
not costed.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from sizing.errors import InputError, printable
from sizing.workload.conf.load import Config, Statement
from sizing.workload.conf.locations import fallback_target
from sizing.workload.conf.reading import Found, Reading, read_count, read_level, read_workers
from sizing.workload.value import Workload
from trialtable.features import (
    COMBINED_FORMAT,
    INGRESS_NGINX,
    INGRESS_NGINX_NO_METRICS,
    UPSTREAMINFO_FORMAT,
    UPSTREAMINFO_LOG,
)
from trialtable.logpath import CONTAINER_LOG

SOURCE = "your nginx.conf"

#: Share of requests a proxy_cache serves, when nothing measured says (an estimate).
CACHE_HIT_ESTIMATE = 0.5
#: Share of new TLS connections resumed when a session cache or tickets are on (an estimate).
RESUMPTION_ESTIMATE = 0.5
#: Share of the response bytes gzipped when gzip is on and its types are not ``*``.
GZIP_SHARE_ESTIMATE = 0.5

#: Lua handlers by phase -> feature (`trialtable.features`).
LUA_PHASES = {
    "rewrite": "lua_rewrite",
    "access": "lua_access",
    "content": "lua_content",
    "header_filter": "lua_header_filter",
    "log": "lua_log",
}
#: The measured feature of an ingress-nginx controller's per-request work, and the Lua-handler
#: features it covers (priced instead of them: `_ingress`).
INGRESS_FEATURE = INGRESS_NGINX
INGRESS_COVERS = ("lua_rewrite", "lua_balancer", "lua_header_filter", "lua_log")
#: The same feature with the controller's metrics off (no ``monitor.call()`` in the log phase).
INGRESS_NO_METRICS = INGRESS_NGINX_NO_METRICS
#: The controller's metrics when nothing read says: off, and where that default is set.
METRICS_DEFAULT = (
    False,
    "the controller's --enable-metrics default false (kubernetes/ingress-nginx@dbb11b92 "
    "pkg/flags/flags.go:177, since #12095, 2024-10) and the Helm chart's "
    "controller.metrics.enabled false (charts/ingress-nginx/values.yaml:911, passed to the "
    "controller since #10959, 2024-02; controllers before #12095 run without the chart have "
    "metrics on)",
)
#: What a log phase runs with metrics on, when the template writes it inline (before #11806,
#: 2024-09: ``log_by_lua_block { balancer.log() monitor.call() }``, nginx.tmpl:1268-1273 at
#: kubernetes/ingress-nginx@ee614407); since then ``log_by_lua_file ngx_conf_log_block.lua``
#: reads the switch from /etc/nginx/lua/cfg.json (``enable_metrics``), not from nginx.conf.
MONITOR_CALL = "monitor.call()"
#: The upstream every proxied location of a controller-rendered nginx.conf passes to, whose
#: peer its Lua balancer picks (kubernetes/ingress-nginx@dbb11b92 nginx.tmpl:518-532).
INGRESS_UPSTREAM = "upstream_balancer"
#: njs handlers -> feature.
NJS = {"js_access": "njs_access", "js_content": "njs_content"}
_LUA_KINDS = ("", "_block", "_file")
#: Directives that may cost per request and have no feature (yet).
UNCOSTED = frozenset(
    {
        *(f"{p}_by_lua{k}" for p in ("body_filter", "set", "server_rewrite") for k in _LUA_KINDS),
        *(f"{p}_by_lua{k}" for p in ("ssl_certificate", "ssl_client_hello") for k in _LUA_KINDS),
        "set_by_lua", "js_set", "js_filter", "js_header_filter", "js_body_filter",
        "rewrite", "if", "sub_filter", "ssi", "add_before_body", "add_after_body",
        "auth_request", "auth_basic", "image_filter", "xslt_stylesheet", "perl", "mirror",
        "gunzip", "fastcgi_pass", "uwsgi_pass", "scgi_pass", "grpc_pass", "memcached_pass",
        "secure_link", "geoip_country", "geoip_city", "geoip_org", "slice", "autoindex",
        "dav_methods", "ssl_verify_client", "more_set_headers", "more_clear_headers",
        "more_set_input_headers", "more_clear_input_headers", "ssl_ocsp", "random_index",
        "flv", "mp4", "proxy_store", "userid", "split_clients",
    }
)  # fmt: skip
#: Directives that answer a request without opening a file (a static location's content).
ANSWERS = frozenset(
    {"return", "js_content", "stub_status", "empty_gif"}
    | {f"content_by_lua{k}" for k in _LUA_KINDS}
)
#: Why ``sendfile off`` (NGINX's default) is named, not priced: `runners features` measured it
#: cheaper than sendfile for a 1 KB file (data/reference/feature-costs.csv, ``sendfile_off``),
#: and its copies grow with the body, so one per-request cost would be wrong either way.
SENDFILE_OFF = (
    "not priced: measured cheaper than sendfile for a 1 KB file, and its copies grow with the body"
)
#: A ``rewrite`` whose replacement starts so, or with one of these flags, redirects the client.
REDIRECT_PREFIXES = ("http://", "https://", "$scheme")
REDIRECT_FLAGS = ("redirect", "permanent")
#: Settings read and reported (not costed per request), with NGINX's defaults.
SETTINGS = {
    "worker_processes": "1",
    "worker_connections": "512",
    "worker_cpu_affinity": "none",
    "sendfile": "off",
    "tcp_nopush": "off",
    "open_file_cache": "off",
    "error_log": "logs/error.log error",
    "proxy_buffering": "on",
    "ssl_protocols": "TLSv1 TLSv1.1 TLSv1.2 TLSv1.3",
    "ssl_ciphers": "HIGH:!aNULL:!MD5",
    "gzip_comp_level": "1",
    "gzip_min_length": "20",
    "gzip_types": "text/html",
    "keepalive_timeout": "75s",
    "keepalive_requests": "1000",
}


@dataclass(frozen=True)
class Scope:
    """The blocks a request passes, outermost first: main, http, server, location(s)."""

    blocks: tuple[Statement, ...]

    def lookup(self, name: str, upto: int | None = None) -> list[Statement]:
        """The statements ``name`` in effect: the innermost block's that has any."""
        for block in reversed(self.blocks[:upto]):
            found = [s for s in block.block or () if s.name == name]
            if found:
                return found
        return []

    def one(self, name: str) -> Statement | None:
        """The last statement ``name`` in effect (a single-valued directive)."""
        found = self.lookup(name)
        return found[-1] if found else None

    def statements(self) -> Iterator[Statement]:
        """Every statement of the blocks (``if`` blocks included), outermost first."""
        for block in self.blocks[1:]:
            yield from _walk(block.block or [], into={"if", "limit_except"})


def _walk(statements: list[Statement], into: set[str]) -> Iterator[Statement]:
    for s in statements:
        yield s
        if s.block is not None and s.name in into:
            yield from _walk(s.block, into)


def _children(block: Statement, name: str) -> list[Statement]:
    return [s for s in block.block or () if s.name == name]


def _server_names(server: Statement) -> list[str]:
    return [n for s in _children(server, "server_name") for n in s.args]


def _pick_server(http: Statement, name: str | None) -> Statement:
    servers = _children(http, "server")
    if not servers:
        raise InputError(f"{http.where}: the http block has no server")
    if name is None:
        return next((s for s in servers if _children(s, "listen")), servers[0])
    for s in servers:
        if any(fnmatch.fnmatchcase(name, n.lstrip("~")) or n == name for n in _server_names(s)):
            return s
    known = ", ".join(sorted({n for s in servers for n in _server_names(s)})) or "none"
    raise InputError(f"no server named {name[:40]!r}; the server names are: {known[:300]}")


def _locations(block: Statement) -> Iterator[tuple[Statement, ...]]:
    """Every location under ``block``, as the chain of nested locations."""
    for loc in _children(block, "location"):
        yield (loc,)
        for inner in _locations(loc):
            yield (loc, *inner)


def _pick_location(server: Statement, path: str | None) -> tuple[Statement, ...]:
    want = "/" if path is None else path
    for chain in _locations(server):
        if chain[-1].args and chain[-1].args[-1] == want:
            return chain
    if path is None:
        return ()
    known = ", ".join(" ".join(c[-1].args) for c in _locations(server)) or "none"
    raise InputError(
        f"no location {path[:40]!r} in the chosen server; its locations: {known[:300]}"
    )


def choose(config: Config, server: str | None, location: str | None) -> tuple[Scope, str]:
    """The scope that serves the traffic and a sentence saying which was chosen."""
    main = Statement("main", [], config.path, 0, config.statements)
    http = next((s for s in config.statements if s.name == "http"), None)
    if http is None:
        raise InputError(f"{config.path}: no http block: nothing serves HTTP")
    srv = _pick_server(http, server)
    chain = _pick_location(srv, location)
    count = len(_children(http, "server"))
    names = " ".join(_server_names(srv)) or "(no server_name)"
    listens = "; ".join(" ".join(s.args) for s in _children(srv, "listen")) or "80 (default)"
    how = "as asked" if server else f"the first with a listen, of {count}"
    text = f"server {names} (listen {listens}) at {srv.where}, {how}"
    if chain:
        text += f"; location {' '.join(chain[-1].args)} at {chain[-1].where}"
    else:
        text += "; no location / in it: the server's own directives"
    return Scope((main, http, srv, *chain)), text


@dataclass(frozen=True)
class Tried:
    """A ``try_files`` of the chosen location, where it runs and whether its fallback was taken.

    ``followed``: the fallback is what is sized; ``unfollowed``: a fallback that could not be
    followed.
    """

    statement: Statement
    scope: Scope
    followed: bool = False
    unfollowed: str = ""

    @property
    def checks(self) -> int:
        """Candidates looked up per sized request.

        Every one (each a miss) when the fallback is sized, else the first, which a file answers.
        """
        return max(1, len(self.statement.args) - 1) if self.followed else 1


def follow(scope: Scope, chosen: str) -> tuple[Scope, str, Tried | None]:
    """Where the requests of a static location with ``try_files`` are sized.

    A location that passes nothing on and answers nothing itself, whose ``try_files`` falls
    back to another location (``@app``, or a URI such as ``/index.php?$args``), serves only
    the requests a file answers; the others go on. Sized as the fallback's location: requests
    a file answers cost less, so the answer is on the safe side, and says so.
    """
    block = scope.blocks[-1]
    tries = _children(block, "try_files")
    if not tries or _passes(block) or _answers(block):
        return scope, chosen, None
    t = tries[-1]
    target = fallback_target(scope.blocks[2], t.args[-1]) if t.args else None
    if target is None or target[-1] is block:
        lost = t.args[-1] if target is None and t.args and t.args[-1][:1] != "=" else ""
        return scope, chosen, Tried(t, scope, unfollowed=lost)
    text = (
        f"{chosen}; its try_files at {t.where} sends a request no file answers to location "
        f"{' '.join(target[-1].args)} at {target[-1].where}: sized as that location (a request "
        "a file answers costs less)"
    )
    return Scope((*scope.blocks[:3], *target)), text, Tried(t, scope, followed=True)


def _passes(block: Statement) -> bool:
    """``block`` hands requests to an upstream (``proxy_pass``, ``fastcgi_pass`` ...)."""
    return any(s.name.endswith("_pass") for s in block.block or ())


def derive(config: Config, server: str | None = None, location: str | None = None) -> Reading:
    r"""The workload of the chosen server and location of ``config``.

    Parameters
    ----------
    config : Config
        A configuration `sizing.workload.conf.load.load` read.
    server : str, optional
        A ``server_name`` (wildcards as NGINX writes them); default: the first server with a
        ``listen``.
    location : str, optional
        A location's path as written (``/``, ``/api/``, ``~ \.php$``'s last word); default
        ``/``.
    """
    scope, chosen, tried = follow(*choose(config, server, location))
    found = Found(SOURCE)
    _protocol(scope, found)
    _keepalive(scope, found)
    _gzip(scope, found)
    _access_log(scope, found)
    _proxy(scope, found)
    _handlers(scope, found)
    _ingress(scope, found)
    _files(scope, found)
    _try_files(tried, found)
    _workers(scope, found)
    _settings(scope, found)
    for s in scope.statements():
        if s.name in UNCOSTED:
            found.not_costed(s.name, s.where)
    workload = Workload(
        **found.values,
        features=tuple(found.features.items()),
        uncosted=tuple(found.uncosted),
    )
    return Reading(config.path, tuple(config.files), chosen, workload, found)


def _protocol(scope: Scope, found: Found) -> None:
    """Protocol, HTTP/2, TLS key and resumption, from listen and ssl_* directives."""
    server = scope.blocks[2]
    listens = _children(server, "listen")
    ssl = [s for s in listens if "ssl" in s.args or "quic" in s.args]  # QUIC is always TLS
    ssl_on = scope.one("ssl")
    on = ssl[0] if ssl else ssl_on if ssl_on and _is_on(ssl_on) else None
    found.value("protocol", "https" if on else "http", on.where if on else server.where)
    if on is None:
        return
    if len(ssl) < len(listens):
        found.estimates.append("the server listens with and without TLS: sized as HTTPS")
    h2 = next((s for s in listens if "http2" in s.args), None) or scope.one("http2")
    if h2 is not None and (h2.name == "listen" or _is_on(h2)):
        found.value("http_version", "2", h2.where)
    quic = next((s for s in listens if "quic" in s.args), None)
    if quic is not None:
        found.not_costed("listen quic (HTTP/3)", quic.where)
        found.estimates.append(
            f"HTTP/3 at {found.at(quic.where)}: the clients that use it are sized as over TCP; "
            "QUIC encrypts each packet in user space and cannot use sendfile or TSO, so they "
            "likely cost more (not measured)"
        )
    _tls_key(scope, found)
    cache, tickets = scope.one("ssl_session_cache"), scope.one("ssl_session_tickets")
    cached = cache is not None and cache.args not in (["off"], ["none"])
    ticketed = tickets is None or _is_on(tickets)  # NGINX's default: on
    if cached or ticketed:
        where = (cache if cached and cache else tickets or server).where
        found.value("tls_resumption", RESUMPTION_ESTIMATE, where)
        found.estimates.append(
            f"TLS resumption {RESUMPTION_ESTIMATE:.0%}: session "
            + ("cache" if cached else "tickets (NGINX's default)")
            + " on, the share of returning clients unknown (measure it: $ssl_session_reused "
            "in the access log, python -m sizing workload --from-log)"
        )


def _tls_key(scope: Scope, found: Found) -> None:
    certs = scope.lookup("ssl_certificate")
    kinds = []
    for cert in certs:
        name = os.path.basename(cert.args[0]).lower() if cert.args else ""
        if "ecdsa" in name or "ec256" in name or "p256" in name or "prime256" in name:
            kinds.append(("ecdsa-p256", cert))
        elif "rsa" in name or "snakeoil" in name:  # Debian's ssl-cert snakeoil: RSA 2048
            kinds.append(("rsa2048", cert))
    if kinds:
        key, cert = min(kinds)  # with both, clients that can take ECDSA do
        found.value("tls_key", key, cert.where)
    elif certs:
        found.estimates.append(
            f"TLS key type unknown from the certificate's name ({certs[0].where}): "
            "the default key type is assumed"
        )


#: A time NGINX reads as zero: zeros with its units ("0", "0s", "0ms", "0m", "0s0ms"...).
_ZERO_TIME = re.compile(r"(?:0+(?:ms|[smhdwMy])?)+")


def _keepalive(scope: Scope, found: Found) -> None:
    """Requests per connection: 1 with keepalive_timeout 0, else keepalive_requests."""
    timeout = scope.one("keepalive_timeout")
    if timeout is not None and timeout.args and _ZERO_TIME.fullmatch(timeout.args[0]):
        found.value("requests_per_connection", 1.0, timeout.where)
        return
    requests = scope.one("keepalive_requests")
    value, where = 1000.0, "keepalive_requests: NGINX's default 1000"
    if requests is not None:
        where = requests.where
        value = float(read_count(requests.args[0], f"{where}: keepalive_requests"))
    found.value("requests_per_connection", max(value, 1.0), where)
    found.estimates.append(
        f"requests per connection {value:g}: the most keepalive_requests allows; clients "
        "that close sooner make it fewer"
    )


def _gzip(scope: Scope, found: Found) -> None:
    on = scope.one("gzip")
    if on is None or not _is_on(on):
        return
    types = [t for s in scope.lookup("gzip_types") for t in s.args]
    share = 1.0 if "*" in types else GZIP_SHARE_ESTIMATE
    found.value("gzip", share, on.where)
    level = scope.one("gzip_comp_level")
    if level is not None:
        found.value(
            "gzip_level", read_level(level.args[0] if level.args else "", level.where), level.where
        )
    found.estimates.append(
        f"gzip on {share:.0%} of the response bytes: the share of responses of the types "
        f"{' '.join(types) or 'text/html (default)'} is unknown"
    )


#: The most times a long format is priced at the measured upstreaminfo extra (a bound).
MAX_FORMAT_SHARE = 10.0


def format_share(text: str) -> tuple[float, str]:
    """How many upstreaminfo extras a log format's line is priced at, and the estimate (if one).

    ``access_log_upstreaminfo`` is measured for the controller's format (`UPSTREAMINFO_FORMAT`,
    1.0) over ``combined`` (0.0); another format is placed between or beyond them by its
    length in characters, linearly, at most `MAX_FORMAT_SHARE` (an estimate: a line costs by
    its variables and bytes, which the format's length only roughly tells).
    """
    if text == UPSTREAMINFO_FORMAT:
        return 1.0, ""
    base, full = len(COMBINED_FORMAT), len(UPSTREAMINFO_FORMAT)
    share = min(max((len(text) - base) / (full - base), 0.0), MAX_FORMAT_SHARE)
    return share, (
        f"a log format of {len(text)} characters priced by its length as {share:.2f} x the "
        f"measured extra of ingress-nginx's upstreaminfo line ({full} characters) over "
        f"combined ({base})"
    )


#: Destinations of an access log that are the process's standard output.
STDOUT = ("/dev/stdout", "/proc/self/fd/1", "/dev/fd/1")
#: The ingress-nginx controller's default access log path (config.go:770), linked to
#: /dev/stdout in its image (``rootfs/Dockerfile:84``: ``ln -sf /dev/stdout
#: /var/log/nginx/access.log``, kubernetes/ingress-nginx@dbb11b92).
CONTROLLER_ACCESS_LOG = "/var/log/nginx/access.log"


def _access_log(scope: Scope, found: Found) -> None:
    logs = scope.lookup("access_log")
    if not logs:
        found.feature("access_log", 1.0, "access_log: NGINX's default logs/access.log")
        return
    if any(s.args[:1] == ["off"] for s in logs):
        return
    formats = {f.args[0]: f for f in scope.lookup("log_format", upto=2) if f.args}
    for s in logs:
        name = s.args[1] if len(s.args) > 1 and "=" not in s.args[1] else "combined"
        fmt = formats.get(name)
        text = "".join(a for a in fmt.args[1:] if not a.startswith("escape=")) if fmt else ""
        chars = len(text)
        share, estimate = format_share(text) if fmt else (0.0, "")
        if share > 0 and fmt is not None:
            found.feature(UPSTREAMINFO_LOG, share, fmt.where)
            if estimate:
                found.estimates.append(f"access_log at {s.where}: {estimate}")
        found.settings[f"access_log {s.where}"] = " ".join(s.args) + (
            f" (format {name}: {chars} characters, at {fmt.where})" if fmt else f" (format {name})"
        )
        buffered = any(a.startswith(("buffer=", "gzip=")) for a in s.args[1:])
        if s.args[0] in STDOUT:
            found.feature(CONTAINER_LOG, 1.0, s.where)
            found.estimates.append(
                f"access_log to {s.args[0]} at {s.where}: priced as a container's stdout through "
                "containerd's CRI logger (under systemd the journal reads it: not measured)"
            )
            continue
        found.feature("access_log_buffered" if buffered else "access_log", 1.0, s.where)
        if s.args and s.args[0].startswith("syslog:"):
            found.not_costed("access_log syslog", s.where)
        if any(a.startswith("if=") for a in s.args):
            found.estimates.append(f"access_log if= at {s.where}: every request counted as logged")


def _upstream(scope: Scope, target: str) -> Statement | None:
    """The ``upstream`` block ``proxy_pass`` names, if there is one."""
    host = target.split("://", 1)[-1].split("/", 1)[0]
    return next((u for u in _children(scope.blocks[1], "upstream") if u.args == [host]), None)


def _reuses(scope: Scope, upstream: Statement | None) -> str:
    """Why an upstream connection is not kept alive, or empty when it is."""
    if upstream is None:
        return "no upstream block with keepalive"
    if not _children(upstream, "keepalive"):
        return f"upstream {upstream.args[0]} has no keepalive"
    return _asks_keepalive(scope)


def _asks_keepalive(scope: Scope) -> str:
    """Why the proxy's upstream request asks to close the connection, or empty when it does not."""
    version = scope.one("proxy_http_version")
    if version is None or version.args != ["1.1"]:
        return "proxy_http_version is not 1.1"
    cleared = any(
        s.args[:1]
        and s.args[0].lower() == "connection"
        and (s.args[1:] in ([""], []) or _empty_without_upgrade(scope, s.args[1]))
        for s in scope.lookup("proxy_set_header")
    )
    return "" if cleared else 'proxy_set_header Connection "" is not set'


def _empty_without_upgrade(scope: Scope, value: str) -> bool:
    """``value`` is a ``map $http_upgrade`` variable that is empty for a request without one.

    The WebSocket idiom ``map $http_upgrade $connection_upgrade { default upgrade; '' ''; }``
    (ingress-nginx's template writes it so with upstream keep-alive, nginx.tmpl:380-387 at
    kubernetes/ingress-nginx@dbb11b92) sends no Connection header to the upstream for a plain
    request, which keeps the connection alive as ``Connection ""`` does.
    """
    for m in scope.lookup("map", upto=2):
        if m.args[:2] == ["$http_upgrade", value]:
            return any(s.name == "" and s.args == [""] for s in m.block or ())
    return False


def _proxy(scope: Scope, found: Found) -> None:
    """proxy_pass: kept-alive upstream or a new connection per request; proxy_cache."""
    block = scope.blocks[-1]
    passes = [s for s in block.block or () if s.name == "proxy_pass"]
    if not passes:
        passes = [s for i in _children(block, "if") for s in _children(i, "proxy_pass")]
        if passes:
            found.estimates.append(
                f"proxy_pass under if at {found.at(passes[-1].where)}: sized as if every "
                "request were proxied (those its condition leaves are served otherwise)"
            )
    if not passes:
        found.value("scenario", "reverse_proxy" if _passes(block) else "static", block.where)
        return
    p = passes[-1]
    target = p.args[0] if p.args else ""
    found.value("scenario", "reverse_proxy", p.where)
    if target.startswith("https://"):
        found.not_costed("proxy_pass https (TLS to the upstream)", p.where)
    upstream = _upstream(scope, target)
    why = _reuses(scope, upstream)
    cache = scope.one("proxy_cache")
    hit = CACHE_HIT_ESTIMATE if cache is not None and cache.args != ["off"] else 0.0
    if hit:
        found.feature("proxy_cache_hit", hit, cache.where if cache else p.where)
        found.estimates.append(
            f"proxy_cache hits {hit:.0%} of requests: the hit share is unknown (measure it: "
            "$upstream_cache_status in the access log)"
        )
    found.feature("proxy_new_connection" if why else "proxy_keepalive", 1.0 - hit, p.where)
    if why:
        found.estimates.append(f"a new upstream connection per proxied request: {why}")
        _closes_first(scope, upstream, found, p)
    if upstream is not None:
        for s in upstream.block or ():
            if s.name.startswith("balancer_by_lua"):
                found.feature("lua_balancer", 1.0 - hit, s.where)


def _closes_first(scope: Scope, upstream: Statement | None, found: Found, p: Statement) -> None:
    """A proxy that asks for a kept-alive connection but keeps none closes each one itself.

    ``proxy_http_version 1.1`` with ``Connection`` cleared and no ``keepalive`` pool: the
    upstream keeps the connection open, so the proxy ends it and holds its TIME_WAIT, for
    each upstream address (an ``upstream`` block's ``server`` lines, else the one address
    ``proxy_pass`` names; a name that resolves to several counts once).
    """
    pool = upstream is not None and _children(upstream, "keepalive")
    if pool or _asks_keepalive(scope):
        return
    servers = [s for s in (upstream.block or ()) if s.name == "server"] if upstream else []
    found.value("upstream_time_wait", max(1, len(servers)), p.where)
    found.estimates.append(
        "the proxy closes each upstream connection itself (HTTP/1.1 asked, no keepalive pool): "
        "its ports, held 60 s each in TIME_WAIT, cap the new connections a second to each "
        "upstream address (sizing.model.ports)"
    )


def _handlers(scope: Scope, found: Found) -> None:
    """Lua and njs handlers by phase; limit_req and limit_conn."""
    for phase, feature in LUA_PHASES.items():
        for kind in _LUA_KINDS:
            for s in scope.lookup(f"{phase}_by_lua{kind}"):
                found.feature(feature, 1.0, s.where)
    for directive, feature in NJS.items():
        for s in scope.lookup(directive):
            found.feature(feature, 1.0, s.where)
    for name in ("limit_req", "limit_conn"):
        for s in scope.lookup(name):
            found.feature(name, 1.0, s.where)


def _ingress(scope: Scope, found: Found) -> None:
    """A location an ingress-nginx controller rendered: its Lua priced as `INGRESS_FEATURE`.

    Recognised by its ``proxy_pass`` to `INGRESS_UPSTREAM` with a Lua balancer in that
    upstream and Lua in the location's log phase, as the controller's template writes every
    ingress location; the measured feature then replaces the minimal-handler features it
    covers (`INGRESS_COVERS`), at the balancer's count.
    """
    passes = [s for s in scope.blocks[-1].block or () if s.name == "proxy_pass"]
    target = passes[-1].args[0] if passes and passes[-1].args else ""
    upstream = _upstream(scope, target)
    if upstream is None or upstream.args != [INGRESS_UPSTREAM]:
        return
    balancer = next((s for s in upstream.block or () if s.name.startswith("balancer_by_lua")), None)
    if balancer is None or "lua_log" not in found.features:
        return
    count = found.features.get("lua_balancer", 1.0)
    for name in INGRESS_COVERS:
        found.features.pop(name, None)
        found.provenance.pop(name, None)
    feature = INGRESS_FEATURE if _monitored(scope, found) else INGRESS_NO_METRICS
    found.feature(feature, count, balancer.where)
    _controller_stdout(scope, found)
    found.estimates.append(
        f"an ingress-nginx controller's location (proxy_pass to {INGRESS_UPSTREAM}, a Lua "
        f"balancer at {balancer.where}): its Lua, variables and headers priced as the measured "
        f"{feature} feature, not as minimal handlers"
    )


def _controller_stdout(scope: Scope, found: Found) -> None:
    """A controller location's log to `CONTROLLER_ACCESS_LOG` is the container's stdout.

    The reader took the path for a file (``access_log``); in the controller's image it is a
    link to /dev/stdout, so the line goes through the container runtime's log path.
    """
    logs = [s for s in scope.lookup("access_log") if s.args[:1] == [CONTROLLER_ACCESS_LOG]]
    if not logs:
        return
    for name in ("access_log", "access_log_buffered"):
        found.features.pop(name, None)
        found.provenance.pop(name, None)
    found.feature(CONTAINER_LOG, 1.0, logs[0].where)
    found.estimates.append(
        f"access_log {CONTROLLER_ACCESS_LOG} at {logs[0].where}: the controller's image links "
        "it to /dev/stdout (kubernetes/ingress-nginx@dbb11b92 rootfs/Dockerfile:84), so it is "
        "priced as a container's stdout through containerd's CRI logger"
    )


def _monitored(scope: Scope, found: Found) -> bool:
    """Whether the ingress location's log phase builds the controller's metrics.

    An inline log block says it (`MONITOR_CALL` in it or not); a log file (the template since
    #11806) does not, and the controller's default is taken (`METRICS_DEFAULT`), as said.
    """
    inline = scope.lookup("log_by_lua_block") + scope.lookup("log_by_lua")
    if inline:
        on = any(MONITOR_CALL in "".join(s.args) for s in inline)
        where = ", ".join(s.where for s in inline)
        said = "in" if on else "not in"
        found.settings["metrics"] = (
            f"{'on' if on else 'off'} ({MONITOR_CALL} {said} the log phase at {where})"
        )
        return on
    on, why = METRICS_DEFAULT
    found.settings["metrics"] = f"{'on' if on else 'off'} (assumed: {why})"
    found.estimates.append(
        f"metrics {'on' if on else 'off'}: the log phase is a Lua file, which reads the "
        "controller's --enable-metrics from /etc/nginx/lua/cfg.json, not from nginx.conf; "
        "assumed the controller's default"
    )
    return on


def _answers(block: Statement) -> bool:
    """``block`` answers every request itself: a ``return``, a content handler, a redirect."""
    for s in block.block or ():
        if s.name in ANSWERS:
            return True
        if s.name == "rewrite" and len(s.args) >= 2:
            if s.args[1].startswith(REDIRECT_PREFIXES) or s.args[-1] in REDIRECT_FLAGS:
                return True
    return False


def _files(scope: Scope, found: Found) -> None:
    """How a static location sends its files, where NGINX's defaults cost per request.

    Only where the location serves files: not a proxy, and neither the server nor the chosen
    location answers first (such answers are not inherited by nested locations). Without
    ``open_file_cache`` each request opens its file. Over plain HTTP/1.1 (nginx sends files
    over TLS without sendfile unless kTLS is on; HTTP/2 is read only over TLS here), for the
    responses not gzipped on the fly (those are built in memory): with sendfile on,
    ``tcp_nopush off`` sends the header in a segment of its own; ``sendfile off`` is named,
    not priced (`SENDFILE_OFF`).
    """
    if found.values.get("scenario", "static") != "static":
        return
    if any(_answers(b) for b in (scope.blocks[2], scope.blocks[-1])):
        return
    _off(scope, found, "open_file_cache", 1.0, "each request opens, checks and closes its file")
    plain = found.values.get("protocol", "http") == "http"
    sent = 1.0 - float(found.values.get("gzip", 0.0))
    if not plain or found.values.get("http_version", "1.1") != "1.1" or sent <= 0:
        return
    where = _left_off(scope, "sendfile")
    if where is not None:
        found.not_costed("sendfile off", where)
        found.estimates.append(f"sendfile off at {found.at(where)}: {SENDFILE_OFF}")
    else:
        what = "each header leaves in a segment before the file"
        _off(
            scope,
            found,
            "tcp_nopush",
            sent,
            what + (" (the gzipped share aside)" if sent < 1 else ""),
        )


def _try_files(tried: Tried | None, found: Found) -> None:
    """``try_files`` looks each candidate up on the file system unless open_file_cache holds it."""
    if tried is None:
        return
    if tried.unfollowed:
        found.estimates.append(
            f"try_files at {found.at(tried.statement.where)}: its fallback "
            f"{printable(tried.unfollowed[:60])!r} is not followed (a URI in variables, no "
            "location that matches, or a regex passed over as too costly to try): sized as "
            "this location"
        )
    cache_off = _left_off(tried.scope, "open_file_cache") is not None
    errors = tried.scope.one("open_file_cache_errors")
    if not cache_off and (not tried.followed or (errors is not None and _is_on(errors))):
        return
    why = (
        "with open_file_cache off"
        if cache_off
        else "open_file_cache keeps no failed lookup (open_file_cache_errors off), and each "
        "candidate before the fallback misses"
    )
    found.feature("try_files_check", float(tried.checks), tried.statement.where)
    found.estimates.append(
        f"try_files at {found.at(tried.statement.where)} {why}: {tried.checks} candidate(s) "
        "looked up per request, priced as the measured try_files_check"
    )


def _workers(scope: Scope, found: Found) -> None:
    """``worker_processes``: how many of an instance's vCPUs NGINX serves on (``auto``: all)."""
    s = next(iter(_children(scope.blocks[0], "worker_processes")), None)
    if s is None:
        default = SETTINGS["worker_processes"]
        found.value("workers", int(default), f"worker_processes: NGINX's default {default}")
        found.estimates.append(
            "worker_processes not set: NGINX runs one worker process (its default), so each "
            "instance serves on one vCPU; 'worker_processes auto;' runs one per vCPU"
        )
        return
    if s.args == ["auto"]:
        return
    count = read_workers(s.args[0] if s.args else "", f"{s.where}: worker_processes")
    found.value("workers", count, s.where)


def _is_off(s: Statement) -> bool:
    """An on/off directive set off (nginx reads the flag in any case)."""
    return bool(s.args) and s.args[0].lower() == "off"


def _is_on(s: Statement) -> bool:
    """An on/off directive set on (``ssl``, ``http2``, ``gzip`` ...: in any case, as nginx)."""
    return bool(s.args) and s.args[0].lower() == "on"


def _left_off(scope: Scope, directive: str) -> str | None:
    """Where ``directive`` is off, or the location where it is absent (off by default); None: on."""
    s = scope.one(directive)
    if s is not None and not _is_off(s):
        return None
    return s.where if s else scope.blocks[-1].where


def _off(scope: Scope, found: Found, directive: str, count: float, what: str) -> None:
    """Charge ``<directive>_off`` ``count`` times where it is off or absent (NGINX's default)."""
    where = _left_off(scope, directive)
    if where is None:
        return
    found.feature(f"{directive}_off", count, where)
    found.estimates.append(
        f"{directive} off at {found.at(where)} (NGINX's default where none is set): {what}, "
        f"priced as the measured {directive}_off"
    )


def _settings(scope: Scope, found: Found) -> None:
    """The settings read and reported; error_log at debug or info is not costed."""
    events = next((s for s in scope.blocks[0].block or () if s.name == "events"), None)
    for name, default in SETTINGS.items():
        s = scope.one(name)
        if s is None and events is not None and name == "worker_connections":
            s = next(iter(_children(events, name)), None)
        shown = " ".join(s.args) if s else f"{default} (NGINX's default)"
        found.settings[name] = shown + (f" at {s.where}" if s else "")
        if name == "error_log" and s and s.args[-1:] and s.args[-1] in ("debug", "info"):
            found.not_costed(f"error_log {s.args[-1]}", s.where)
