"""The nginx.conf text of the server under test and of its upstream file servers (pure)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from runners import jwt
from runners.errors import RunnerError
from runners.scenario import Scenario

# Resumed TLS sessions: tickets (stateless) and a shared cache (TLS 1.2 session ids; TLS 1.3
# stateful tickets when tickets are off), valid for an hour.
SESSION_RESUMPTION = (
    "ssl_session_cache shared:nginx_sizing_tls:10m;",
    "ssl_session_timeout 1h;",
    "ssl_session_tickets on;",
)


@dataclass(frozen=True)
class ConfExtra:
    """Lines a configuration feature adds to the server under test's config, verbatim.

    Attributes
    ----------
    main : tuple of str
        Lines of the main context (``load_module ...;``).
    http : tuple of str
        Lines of the ``http`` block, before the server (blocks allowed).
    server : tuple of str
        Lines of the ``server`` block, after ``root`` (locations allowed).
    upstream : tuple of str
        Lines of the proxy's ``upstream`` block; ``@UPSTREAM_HOST@`` and ``@UPSTREAM_PORT@``
        stand for the first upstream file server.
    upstream_keepalive : bool
        Keep upstream connections alive (False: a new upstream connection per request).
    """

    main: tuple[str, ...] = ()
    http: tuple[str, ...] = ()
    server: tuple[str, ...] = ()
    upstream: tuple[str, ...] = ()
    upstream_keepalive: bool = True


def affinity_masks(cpus: Sequence[int]) -> str:
    """``worker_cpu_affinity`` masks, one CPU per worker: ``[0, 2]`` -> ``"001 100"``."""
    width = max(cpus) + 1
    return " ".join("".join("1" if width - 1 - i == c else "0" for i in range(width)) for c in cpus)


@dataclass(frozen=True)
class ConfTarget:
    """Where a config runs: the deployment's prefix, address, ports, CPUs and upstreams.

    Attributes
    ----------
    prefix : str
        The deployment's directory on the host (content, key, pid, logs, temp files).
    listen : str
        The address nginx listens on.
    ports : sequence of int
        The ports it listens on (the reference config: one; a user config: one per port of
        the original).
    cpus : sequence of int
        One worker per CPU, pinned with ``worker_cpu_affinity``.
    upstream : sequence of str
        ``host:port`` of each upstream file server (proxy scenarios, the stub upstream).
    user : str, optional
        ``user`` directive (only meaningful when the master runs as root).
    modules_dir : str
        The host's nginx module folder (a user config's ``load_module`` files come from it).
    """

    prefix: str
    listen: str
    ports: Sequence[int]
    cpus: Sequence[int]
    upstream: Sequence[str] = ()
    user: str | None = None
    modules_dir: str = ""

    def main_lines(self, workers_only: bool = False) -> list[str]:
        """The main context's ``user``, workers, affinity, pid (and error log) lines."""
        lines = [f"user {self.user};"] if self.user else []
        lines += [
            f"worker_processes {len(self.cpus)};",
            f"worker_cpu_affinity {affinity_masks(self.cpus)};",
        ]
        if not workers_only:
            lines += [
                "worker_rlimit_nofile 65536;",
                f"pid {self.prefix}/nginx.pid;",
                f"error_log {self.prefix}/error.log warn;",
            ]
        return lines


def render_conf(
    scenario: Scenario,
    target: ConfTarget,
    *,
    http2: bool = False,
    jwt_config: jwt.JwtConfig | None = None,
    extra: ConfExtra = ConfExtra(),
) -> str:
    """The nginx.conf of the server under test.

    Parameters
    ----------
    scenario : Scenario
        What to serve.
    target : ConfTarget
        Where: prefix, address and port (the first of ``ports``), CPUs, upstream servers.
    http2 : bool
        Serve HTTP/2 on the listening socket (with TLS by ALPN; cleartext: prior knowledge).
    jwt_config : runners.jwt.JwtConfig, optional
        For a scenario with ``jwt``: the njs module folder, the verifier script and the key.
    extra : ConfExtra
        A configuration feature's own lines (`runners.calibrate.features`); none by default.
    """
    if scenario.jwt and jwt_config is None:
        raise RunnerError("the JWT check needs its module folder, script and public key")
    cpus = target.cpus
    lines = [
        f"# nginx-sizing: {scenario.name} over {scenario.protocol}, {scenario.file_bytes} B"
        f"{' gzip' if scenario.gzip else ''}, {len(cpus)} workers on CPUs "
        + ",".join(map(str, cpus)),
    ]
    if scenario.jwt and jwt_config is not None:
        lines += jwt.main_lines(jwt_config.modules_dir)
    lines += list(extra.main)
    lines += target.main_lines()
    lines += [
        "events {",
        "    worker_connections 16384;",
        "    accept_mutex off;",
        "}",
        "http {",
        *_http_common(target.prefix, keepalive=scenario.keepalive),
        *_gzip_tls_lines(scenario, target.prefix),
        *_upstream_lines(scenario, target.upstream, extra),
    ]
    if scenario.jwt and jwt_config is not None:
        lines += [
            f"    {d}" for d in jwt.http_lines(jwt_config.script_path, jwt_config.public_der_b64)
        ]
    lines += [f"    {d.rstrip(';')};" for d in scenario.directives]
    lines += [f"    {d}" for d in extra.http]
    lines += _server_lines(scenario, target, http2, extra)
    lines += ["}", ""]
    return "\n".join(lines)


def _gzip_tls_lines(scenario: Scenario, prefix: str) -> list[str]:
    """The ``http`` block's gzip and TLS lines."""
    lines = []
    if scenario.gzip:
        lines += [
            "    gzip on;",
            "    gzip_types *;",
            "    gzip_min_length 0;",
            "    gzip_proxied any;",
        ]
    if scenario.protocol == "https":
        lines += [
            f"    ssl_certificate {prefix}/cert.pem;",
            f"    ssl_certificate_key {prefix}/key.pem;",
            "    ssl_protocols TLSv1.2 TLSv1.3;",
        ]
        if scenario.tls_resumption:
            lines += [f"    {d}" for d in SESSION_RESUMPTION]
        else:
            # Every new connection does a full handshake, as the reference CPS tests did.
            lines += ["    ssl_session_cache off;", "    ssl_session_tickets off;"]
    return lines


def _upstream_lines(scenario: Scenario, upstream: Sequence[str], extra: ConfExtra) -> list[str]:
    """The proxy scenarios' ``upstream backend`` block (none for the others)."""
    if not scenario.proxied:
        return []
    if not upstream:
        raise RunnerError(f"the {scenario.name} scenario needs upstream servers")
    lines = ["    upstream backend {", *(f"        server {u};" for u in upstream)]
    up_host, _, up_port = upstream[0].rpartition(":")
    peer = {"@UPSTREAM_HOST@": up_host.strip("[]"), "@UPSTREAM_PORT@": up_port}
    for u in extra.upstream:
        for mark, value in peer.items():
            u = u.replace(mark, value)
        lines.append(f"        {u}")
    lines += ["        keepalive 64;"] if extra.upstream_keepalive else []
    lines.append("    }")
    return lines


def _server_lines(
    scenario: Scenario, target: ConfTarget, http2: bool, extra: ConfExtra
) -> list[str]:
    """The ``server`` block: the listening socket, the root, the scenario's locations."""
    https = scenario.protocol == "https"
    lines = [
        "    server {",
        f"        listen {hostport(target.listen, target.ports[0])}{' ssl' if https else ''}"
        f"{' http2' if http2 else ''} backlog=4096;",
        f"        root {target.prefix}/html;",
        *(f"        {d}" for d in extra.server),
    ]
    if http2 and not https:
        # h2c with sendfile stalls each response about 40 ms (a small DATA frame header
        # waits on a delayed ACK); over TLS nginx never uses sendfile.
        lines.append("        sendfile off;")
    proxy = [
        "proxy_pass http://backend;",
        "proxy_http_version 1.1;",
        'proxy_set_header Connection "";',
    ]
    # With a JWT check, the location verifies the token and a named location proxies.
    handler = jwt.location_lines() if scenario.jwt else proxy
    named = [f"        {b}" for b in jwt.backend_location(proxy)] if scenario.jwt else []
    if scenario.name == "reverse_proxy":
        lines += ["        location / {", *(f"            {p}" for p in handler), "        }"]
        lines += named
    elif scenario.name == "api_gateway":
        lines += [
            r"        location ~ ^/api/(?<api_version>v[0-9]+)/(?<api_item>[a-z0-9_-]+)$ {",
            f"            rewrite ^ /$api_item.{scenario.body_name.split('.')[-1]} break;",
            *(f"            {p}" for p in handler),
            "        }",
            *named,
            "        location / {",
            "            return 404;",
            "        }",
        ]
    lines.append("    }")
    return lines


def render_upstream_conf(
    scenario: Scenario, *, prefix: str, listen: str, ports: Sequence[int], user: str | None
) -> str:
    """The nginx.conf of the upstream file servers: one server block per port."""
    lines = ["# nginx-sizing: upstream file servers for the proxy scenarios"]
    if user:
        lines.append(f"user {user};")
    lines += [
        f"worker_processes {len(ports)};",
        "worker_rlimit_nofile 65536;",
        f"pid {prefix}/nginx.pid;",
        f"error_log {prefix}/error.log warn;",
        "events {",
        "    worker_connections 16384;",
        "}",
        "http {",
        *_http_common(prefix, keepalive=True),
    ]
    for port in ports:
        lines += [
            "    server {",
            f"        listen {hostport(listen, port)} backlog=4096;",
            f"        root {prefix}/html;",
            "    }",
        ]
    lines += ["}", ""]
    return "\n".join(lines)


def _http_common(prefix: str, *, keepalive: bool) -> list[str]:
    return [
        "    access_log off;",
        "    default_type application/octet-stream;",
        "    types {",
        "        text/html html;",
        "        application/octet-stream bin;",
        "    }",
        "    sendfile on;",
        "    tcp_nopush on;",
        "    tcp_nodelay on;",
        f"    keepalive_timeout {'300s' if keepalive else '0'};",
        "    keepalive_requests 1000000;",
        "    open_file_cache max=1024 inactive=60s;",
        "    open_file_cache_valid 80s;",
        "    open_file_cache_min_uses 1;",
        *(
            f"    {kind}_temp_path {prefix}/tmp/{kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        ),
    ]


def hostport(addr: str, port: int) -> str:
    """``addr:port``, with IPv6 addresses in brackets."""
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def is_wildcard(address: str) -> bool:
    """Whether nginx listening on ``address`` listens on every interface.

    ``0.0.0.0``, ``::``, the short forms the system's parser reads as them (``0``, ``0x0``),
    and ``::ffff:0.0.0.0`` (the IPv4 wildcard mapped into IPv6: every IPv4 interface).
    """
    text = address.strip().strip("[]")
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        try:
            return socket.inet_aton(text) == bytes(4)
        except OSError:
            return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_unspecified or (mapped is not None and mapped.is_unspecified)
