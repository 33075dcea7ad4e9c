"""NGINX scenarios: the nginx.conf for each, and a private nginx deployed on a host.

A `Deployment` owns a prefix directory made with ``mktemp -d`` on the host, its own config,
pid file, ports, content and TLS key. It never reads, signals or edits any other nginx, and
`Deployment.teardown` stops its processes (workers too, even when the master was killed) and
removes the prefix, also after an error or Ctrl-C.
"""

from __future__ import annotations

import ipaddress
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from runners.errors import RunnerError
from runners.hosts import Host

SCENARIOS = ("static", "cps", "reverse_proxy", "api_gateway", "throughput")
DEFAULT_FILE_BYTES = {
    "static": 1024,
    "cps": 0,
    "reverse_proxy": 1024,
    "api_gateway": 1024,
    "throughput": 1024 * 1024,
}
TLS_KEYS = ("ecdsa", "rsa")
KEY_ARGS = {"ecdsa": ("ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"), "rsa": ("rsa:2048",)}
# A response carries the status line and headers besides the body: nginx sends 200-300 bytes.
HEADER_BYTES_RANGE = (64, 2048)


@dataclass(frozen=True)
class Scenario:
    """What the server does.

    Attributes
    ----------
    name : str
        ``static``, ``cps`` (one request per connection), ``reverse_proxy``, ``api_gateway``
        (regex match and URI rewrite, then proxy) or ``throughput`` (large files).
    protocol : str
        ``http`` or ``https``.
    file_bytes : int
        Response body size [B].
    gzip : bool
        Compress responses on the fly (clients send ``Accept-Encoding: gzip``).
    upstreams : int
        File servers behind the proxy (proxy scenarios only).
    tls_key : str
        ``ecdsa`` (P-256) or ``rsa`` (2048 bits) for the self-signed certificate.
    directives : tuple of str
        Extra directives for the ``http`` block, e.g. ``ssl_ciphers ...;``.
    """

    name: str = "static"
    protocol: str = "http"
    file_bytes: int = 1024
    gzip: bool = False
    upstreams: int = 1
    tls_key: str = "ecdsa"
    directives: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.name not in SCENARIOS:
            raise RunnerError(f"unknown scenario {self.name!r}; expected one of {SCENARIOS}")
        if self.protocol not in ("http", "https"):
            raise RunnerError(f"unknown protocol {self.protocol!r}; expected http or https")
        if self.tls_key not in TLS_KEYS:
            raise RunnerError(f"unknown TLS key {self.tls_key!r}; expected ecdsa or rsa")
        if self.file_bytes < 0:
            raise RunnerError(f"file size {self.file_bytes} is negative")
        if self.name == "cps" and self.file_bytes != 0:
            raise RunnerError("the cps scenario serves a 0-byte response; drop --file-size")
        if self.upstreams < 1:
            raise RunnerError(f"--upstreams must be at least 1 (got {self.upstreams})")

    @property
    def keepalive(self) -> bool:
        """Whether client connections are reused (all but ``cps``)."""
        return self.name != "cps"

    @property
    def proxied(self) -> bool:
        """Whether the server proxies to upstream file servers."""
        return self.name in ("reverse_proxy", "api_gateway")

    @property
    def body_name(self) -> str:
        """File name of the body under the content root."""
        return "body.html" if self.gzip else "body.bin"

    @property
    def path(self) -> str:
        """The request path clients ask for."""
        return "/api/v1/body" if self.name == "api_gateway" else f"/{self.body_name}"

    @property
    def headers(self) -> tuple[str, ...]:
        """Request headers clients send."""
        out = []
        if not self.keepalive:
            out.append("Connection: close")
        if self.gzip:
            out.append("Accept-Encoding: gzip")
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``run.json``."""
        d = asdict(self)
        d["directives"] = list(self.directives)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scenario:
        """Inverse of `to_dict`."""
        return cls(**{**d, "directives": tuple(d.get("directives", ()))})


def response_size_problem(scenario: Scenario, bytes_per_response: float) -> str | None:
    """Why the bytes read per response do not fit what the scenario serves, or None."""
    lo, hi = HEADER_BYTES_RANGE
    body = scenario.file_bytes
    if scenario.gzip and body > 0:
        if not lo <= bytes_per_response <= body + hi:
            return f"response size {bytes_per_response:.0f} B does not fit a gzip of {body} B"
        if bytes_per_response >= body + lo:
            return f"response size {bytes_per_response:.0f} B: the body was not compressed"
        return None
    if not body + lo <= bytes_per_response <= body + hi:
        return (
            f"response size {bytes_per_response:.0f} B is not a {body} B body plus headers "
            f"({body + lo}-{body + hi} B)"
        )
    return None


def affinity_masks(cpus: Sequence[int]) -> str:
    """``worker_cpu_affinity`` masks, one CPU per worker: ``[0, 2]`` -> ``"001 100"``."""
    width = max(cpus) + 1
    return " ".join("".join("1" if width - 1 - i == c else "0" for i in range(width)) for c in cpus)


def render_conf(
    scenario: Scenario,
    *,
    prefix: str,
    listen: str,
    port: int,
    cpus: Sequence[int],
    upstream: Sequence[str] = (),
    user: str | None = None,
) -> str:
    """The nginx.conf of the server under test.

    Parameters
    ----------
    scenario : Scenario
        What to serve.
    prefix : str
        The deployment's directory on the host (content, key, pid, logs, temp files).
    listen, port
        Address and port to listen on.
    cpus : sequence of int
        One worker per CPU, pinned with ``worker_cpu_affinity``.
    upstream : sequence of str
        ``host:port`` of each upstream file server (proxy scenarios).
    user : str, optional
        ``user`` directive (only meaningful when the master runs as root).
    """
    https = scenario.protocol == "https"
    lines = [
        f"# nginx-sizing: {scenario.name} over {scenario.protocol}, {scenario.file_bytes} B"
        f"{' gzip' if scenario.gzip else ''}, {len(cpus)} workers on CPUs "
        + ",".join(map(str, cpus)),
    ]
    if user:
        lines.append(f"user {user};")
    lines += [
        f"worker_processes {len(cpus)};",
        f"worker_cpu_affinity {affinity_masks(cpus)};",
        "worker_rlimit_nofile 65536;",
        f"pid {prefix}/nginx.pid;",
        f"error_log {prefix}/error.log warn;",
        "events {",
        "    worker_connections 16384;",
        "    accept_mutex off;",
        "}",
        "http {",
        *_http_common(prefix, keepalive=scenario.keepalive),
    ]
    if scenario.gzip:
        lines += [
            "    gzip on;",
            "    gzip_types *;",
            "    gzip_min_length 0;",
            "    gzip_proxied any;",
        ]
    if https:
        lines += [
            f"    ssl_certificate {prefix}/cert.pem;",
            f"    ssl_certificate_key {prefix}/key.pem;",
            "    ssl_protocols TLSv1.2 TLSv1.3;",
            # Every new connection does a full handshake, as the reference CPS tests did.
            "    ssl_session_cache off;",
            "    ssl_session_tickets off;",
        ]
    if scenario.proxied:
        if not upstream:
            raise RunnerError(f"the {scenario.name} scenario needs upstream servers")
        lines.append("    upstream backend {")
        lines += [f"        server {u};" for u in upstream]
        lines += ["        keepalive 64;", "    }"]
    lines += [f"    {d.rstrip(';')};" for d in scenario.directives]
    lines += [
        "    server {",
        f"        listen {_hostport(listen, port)}{' ssl' if https else ''} backlog=4096;",
        f"        root {prefix}/html;",
    ]
    proxy = [
        "proxy_pass http://backend;",
        "proxy_http_version 1.1;",
        'proxy_set_header Connection "";',
    ]
    if scenario.name == "reverse_proxy":
        lines += ["        location / {", *(f"            {p}" for p in proxy), "        }"]
    elif scenario.name == "api_gateway":
        lines += [
            r"        location ~ ^/api/(?<api_version>v[0-9]+)/(?<api_item>[a-z0-9_-]+)$ {",
            f"            rewrite ^ /$api_item.{scenario.body_name.split('.')[-1]} break;",
            *(f"            {p}" for p in proxy),
            "        }",
            "        location / {",
            "            return 404;",
            "        }",
        ]
    lines += ["    }", "}", ""]
    return "\n".join(lines)


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
            f"        listen {_hostport(listen, port)} backlog=4096;",
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


def _hostport(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


# The content: random bytes, or hex text that gzip can compress (about 2:1).
_SETUP = r"""
set -e
umask 022
d=$(mktemp -d "${TMPDIR:-/tmp}/nginx-sizing.XXXXXXXX")
echo "$d"
chmod 755 "$d"
mkdir -p "$d/html" "$d/tmp"
if [ "$2" = 1 ]; then
  od -An -v -tx1 /dev/urandom | tr -d ' \n' | head -c "$1" > "$d/html/$3"
else
  head -c "$1" /dev/urandom > "$d/html/$3"
fi
"""

_CERT = r"""
set -e
umask 077
o=$1 d=$2
shift 2
"$o" req -x509 -nodes -keyout "$d/key.pem" -out "$d/cert.pem" -days 7 -subj /CN=nginx-sizing \
  -newkey "$@" >/dev/null 2>&1 || { echo "openssl could not make a certificate" >&2; exit 1; }
chmod 600 "$d/key.pem"
chmod 644 "$d/cert.pem"
"""

_LISTENING = r"cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == \"0A\" {print $2}'"

# Shell helpers: a pid is alive when it exists and is not a zombie (a container's init may
# never reap it).
_ALIVE_FN = r"""
alive() {
  s=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ]
}
"""

# Write the config, test it, start nginx, wait for its pid and workers: one round trip.
_LAUNCH = r"""
p=$1 conf=$2 nginx=$3 want=$4
umask 022
printf '%s' "$5" > "$conf" || exit 1
out=$("$nginx" -t -q -p "$p" -c "$conf" 2>&1) || { echo TEST_FAILED; echo "$out"; exit 0; }
# -e (nginx >= 1.19.5) keeps even start-up messages out of the host's own error log.
if [ "$6" = 1 ]; then set -- -e "$p/error.log"; else set --; fi
out=$("$nginx" -p "$p" -c "$conf" "$@" 2>&1) || {
  echo START_FAILED; echo "$out"; exit 0; }
i=0
while [ ! -s "$p/nginx.pid" ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done
m=$(cat "$p/nginx.pid" 2>/dev/null)
[ -n "$m" ] || { echo NO_PID; exit 0; }
i=0
while :; do
  w=$(pgrep -P "$m" 2>/dev/null || cat "/proc/$m/task/$m/children" 2>/dev/null)
  set -- $w
  if [ $# -ge "$want" ] || [ $i -ge 250 ]; then break; fi
  sleep 0.02; i=$((i+1))
done
echo STARTED "$m" $w
"""

# Which of the pids are alive, then their /proc stat lines (CPU time): one round trip.
_SAMPLE = (
    _ALIVE_FN
    + r"""
for p in "$@"; do alive "$p" && echo "ALIVE $p"; done
for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null; done
exit 0
"""
)

# Stop masters (TERM, then KILL after 5 s), kill leftover workers, remove the prefix.
_STOP = (
    _ALIVE_FN
    + r"""
# Stop this deployment's nginx: the masters given, and any master started with -p under $dir
# (one whose pid was never learnt); then their workers, and the recorded workers that are
# orphans (a recycled pid now in someone else's nginx has a live nginx parent: left alone).
dir=$1 masters=$2; shift 2
if [ -n "$dir" ]; then
  for d in /proc/[0-9]*; do
    case "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)" in
      *"master process"*" -p $dir"*) masters="$masters ${d#/proc/}";;
    esac
  done
fi
kids=
for m in $masters; do
  if alive "$m"; then
    kids="$kids $(pgrep -P "$m" 2>/dev/null || cat "/proc/$m/task/$m/children" 2>/dev/null)"
    kill -TERM "$m" 2>/dev/null
  fi
done
for m in $masters; do
  i=0
  while alive "$m" && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
  alive "$m" && kill -KILL "$m" 2>/dev/null
done
for w in $kids "$@"; do
  alive "$w" || continue
  [ "$(cat "/proc/$w/comm" 2>/dev/null)" = nginx ] || continue
  case " $kids " in
    *" $w "*) ;;
    *)
      pp=$(sed 's/.*) . \([0-9]*\).*/\1/' "/proc/$w/stat" 2>/dev/null)
      [ "$(cat "/proc/$pp/comm" 2>/dev/null)" = nginx ] && continue
      case "$(tr '\0' ' ' < "/proc/$w/cmdline" 2>/dev/null)" in
        *"master process"*) continue;;
      esac
      ;;
  esac
  kill -KILL "$w" 2>/dev/null
done
[ -n "$dir" ] && rm -rf -- "$dir"
exit 0
"""
)


@dataclass
class NginxProcess:
    """One running private nginx: its prefix, config path, master and worker pids."""

    prefix: str
    conf_path: str
    master: int
    workers: list[int] = field(default_factory=list)


class Deployment:
    """A private nginx for one scenario on one host (and its upstream file servers).

    Parameters
    ----------
    host : Host
        The server host.
    scenario : Scenario
        What to serve.
    listen : str
        Address the server listens on (127.0.0.1 when every client is on the same host).
    nginx, openssl : str
        Resolved paths of the binaries on the host.
    run_as_root : bool
        Whether commands on the host run as root (workers then run as ``nobody``).
    clk_tck : int
        The host's clock ticks per second, for CPU time in /proc.
    upstream_host : Host, optional
        Where the upstream file servers run (default: the server host, on 127.0.0.1).
    upstream_address : str
        Address the server reaches them at, and they listen on when it is an IP.
    upstream_nginx : str, optional
        nginx binary on the upstream host.
    upstream_as_root : bool
        Whether commands on the upstream host run as root.
    nginx_version, upstream_nginx_version : str
        ``nginx -v`` output on each host; ``-e`` (1.19.5 and later) is used when it exists.
    """

    def __init__(
        self,
        host: Host,
        scenario: Scenario,
        *,
        listen: str = "127.0.0.1",
        nginx: str = "nginx",
        openssl: str = "openssl",
        run_as_root: bool = False,
        clk_tck: int = 100,
        upstream_host: Host | None = None,
        upstream_address: str = "127.0.0.1",
        upstream_nginx: str | None = None,
        upstream_as_root: bool | None = None,
        nginx_version: str = "",
        upstream_nginx_version: str | None = None,
    ) -> None:
        self.host, self.scenario, self.listen = host, scenario, listen
        self.nginx, self.openssl, self.clk_tck = nginx, openssl, clk_tck
        self.user = _worker_user(host) if run_as_root else None
        separate = upstream_host is not None and upstream_host is not host
        self.up_host: Host = upstream_host if separate and upstream_host else host
        self.up_address = upstream_address if separate else "127.0.0.1"
        self.up_nginx = (upstream_nginx or nginx) if separate else nginx
        as_root = run_as_root if upstream_as_root is None else upstream_as_root
        self.up_user = (_worker_user(self.up_host) if as_root else None) if separate else self.user
        self.up_prefix: str | None = None
        self._up_pids: set[int] = set()
        self.nginx_e = _has_e_flag(nginx_version)
        self.up_e = _has_e_flag(upstream_nginx_version or "") if separate else self.nginx_e
        self.prefix: str | None = None
        self.port: int | None = None
        self.server: NginxProcess | None = None
        self.upstream: NginxProcess | None = None
        self.upstream_ports: list[int] = []
        self.conf: str = ""
        self.upstream_conf: str = ""
        self._all_pids: set[int] = set()
        self._cpus: tuple[int, ...] = ()

    def setup(self) -> None:
        """Make the prefix, content and certificate; start the upstream servers if needed."""
        s = self.scenario
        self.prefix = self._make_prefix(self.host, "creating the nginx prefix")
        if s.protocol == "https":
            key = KEY_ARGS[s.tls_key]
            self.host.sh(_CERT, self.openssl, self.prefix, *key, what="making the TLS certificate")
        if s.proxied:
            self._start_upstream()

    def _make_prefix(self, host: Host, what: str) -> str:
        """A new prefix with the content on ``host``; recorded before anything can fail."""
        s = self.scenario
        out = host.sh(
            _SETUP,
            str(s.file_bytes),
            "1" if s.gzip else "0",
            s.body_name,
            check=False,
            timeout=120,
        )
        first = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
        if first.startswith("/"):
            if host is self.host:
                self.prefix = first
            else:
                self.up_prefix = first
        if not out.ok or not first.startswith("/"):
            detail = (out.stderr or out.stdout).strip().splitlines()
            raise RunnerError(
                f"{what} failed on {host.name}: {detail[-1] if detail else 'no output'}"
            )
        return first

    def _start_upstream(self) -> None:
        assert self.prefix is not None
        if self.up_host is self.host:
            up = f"{self.prefix}/upstream"
            self.host.sh(
                'mkdir -p "$1/tmp" && ln -s ../html "$1/html"',
                up,
                what="creating the upstream prefix",
            )
        else:
            up = self._make_prefix(self.up_host, "creating the upstream prefix")
        listen = self.up_address if _is_ip(self.up_address) else "0.0.0.0"
        for _ in range(5):
            self.upstream_ports = self.free_ports(self.scenario.upstreams, self.up_host)
            self.upstream_conf = render_upstream_conf(
                self.scenario,
                prefix=up,
                listen=listen,
                ports=self.upstream_ports,
                user=self.up_user,
            )
            proc = self._launch(
                up, self.upstream_conf, "upstream", len(self.upstream_ports), self.up_host
            )
            if proc is not None:
                self.upstream = proc
                return
        raise RunnerError(
            f"could not find free ports for the upstream servers on {self.up_host.name}"
        )

    def start(self, cpus: Sequence[int]) -> str:
        """Start (or restart) the server with one worker pinned to each of ``cpus``.

        Returns the exact nginx.conf used. The config is checked with ``nginx -t`` first.
        """
        if self.prefix is None:
            self.setup()
        assert self.prefix is not None
        if self.server is not None and tuple(cpus) == self._cpus and self.alive():
            return self.conf
        self.stop_server()
        upstream = [_hostport(self.up_address, p) for p in self.upstream_ports]
        for _ in range(5):
            self.port = self.free_ports(1)[0]
            self.conf = render_conf(
                self.scenario,
                prefix=self.prefix,
                listen=self.listen,
                port=self.port,
                cpus=cpus,
                upstream=upstream,
                user=self.user,
            )
            proc = self._launch(self.prefix, self.conf, "server", len(cpus))
            if proc is not None:
                self.server, self._cpus = proc, tuple(cpus)
                return self.conf
        raise RunnerError(f"could not find a free port for nginx on {self.host.name}")

    def _launch(
        self, prefix: str, conf: str, role: str, want: int, host: Host | None = None
    ) -> NginxProcess | None:
        """Write, test and start one nginx; None when its port was taken meanwhile."""
        host = host or self.host
        conf_path = f"{prefix}/nginx.conf"
        out = host.sh(
            _LAUNCH,
            prefix,
            conf_path,
            self.up_nginx if host is not self.host else self.nginx,
            str(want),
            conf,
            "1" if (self.up_e if host is not self.host else self.nginx_e) else "0",
            what=f"starting nginx ({role})",
            timeout=120,
        )
        lines = out.stdout.strip().splitlines()
        status = lines[0] if lines else "NO_OUTPUT"
        detail = _nginx_message("\n".join(lines[1:]))
        if status == "TEST_FAILED":
            raise RunnerError(f"nginx -t rejected the {role} config on {host.name}: {detail}")
        if status == "START_FAILED":
            if "Address already in use" in detail:
                return None
            raise RunnerError(f"nginx ({role}) did not start on {host.name}: {detail}")
        if not status.startswith("STARTED"):
            raise RunnerError(f"nginx ({role}) on {host.name} wrote no pid file in {prefix}")
        master, *workers = (int(p) for p in status.split()[1:])
        (self._all_pids if host is self.host else self._up_pids).update([master, *workers])
        return NginxProcess(prefix, conf_path, master, workers)

    def free_ports(self, n: int, host: Host | None = None) -> list[int]:
        """``n`` TCP ports in 20000-29999 that nothing on the host listens on."""
        out = (host or self.host).sh(_LISTENING, check=False)
        used = {int(h.rsplit(":", 1)[-1], 16) for h in out.stdout.split() if ":" in h}
        free = [p for p in range(20000, 30000) if p not in used]
        return random.sample(free, n)

    def pids(self) -> list[int]:
        """Master and worker pids of the server under test."""
        if self.server is None:
            return []
        return [self.server.master, *self.server.workers]

    def sample(self) -> tuple[bool, float]:
        """Whether the server's master and every worker run, and their CPU time [s].

        One round trip to the host.
        """
        pids = self.pids()
        if not pids:
            return False, 0.0
        out = self.host.sh(_SAMPLE, *map(str, pids), check=False)
        lines = out.stdout.splitlines()
        alive = sum(1 for ln in lines if ln.startswith("ALIVE "))
        ticks = sum(_stat_ticks(ln) for ln in lines if not ln.startswith("ALIVE "))
        return alive == len(pids), ticks / self.clk_tck

    def alive(self) -> bool:
        """Whether the server's master and every worker still run."""
        return self.sample()[0]

    def error_log_tail(self) -> str:
        """The last line of the server's error log, if any."""
        if self.prefix is None:
            return ""
        out = self.host.run(["tail", "-n", "1", f"{self.prefix}/error.log"], check=False)
        return out.stdout.strip()

    def stop_server(self) -> None:
        """Stop the server under test (upstreams keep running)."""
        if self.server is not None:
            self._stop(self.host, None, [self.server], set(self.server.workers))
            self._all_pids -= {self.server.master, *self.server.workers}
            self.server = None

    def teardown(self) -> None:
        """Stop every process this deployment started and remove its prefixes, on each host."""
        try:
            if self.up_host is not self.host:
                self._stop(self.up_host, self.up_prefix, [self.upstream], self._up_pids)
                self.upstream = None
            self._stop(self.host, self.prefix, [self.server, self.upstream], self._all_pids)
        finally:
            self.server = self.upstream = None
            self.prefix = self.up_prefix = None
            self._all_pids.clear()
            self._up_pids.clear()

    def _stop(
        self,
        host: Host,
        prefix: str | None,
        procs: Sequence[NginxProcess | None],
        pids: set[int],
    ) -> None:
        """Run `_STOP` on one host for its prefix, masters and every other pid recorded."""
        if not prefix and not pids:
            return
        masters = [p.master for p in procs if p is not None]
        host.sh(
            _STOP,
            prefix or "",
            " ".join(map(str, masters)),
            *map(str, sorted(pids - set(masters))),
            check=False,
            timeout=60,
        )

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()


def _has_e_flag(version: str) -> bool:
    """Whether an ``nginx -v`` line is of a version with the ``-e`` option (1.19.5+)."""
    m = re.search(r"nginx/(\d+)\.(\d+)\.(\d+)", version)
    if m is None:
        return False
    return tuple(int(g) for g in m.groups()) >= (1, 19, 5)


def _is_ip(addr: str) -> bool:
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        return False
    return True


def _stat_ticks(line: str) -> int:
    """Utime + stime from one /proc/PID/stat line [clock ticks]."""
    fields = line.rpartition(")")[2].split()
    if len(fields) < 13:
        return 0
    return int(fields[11]) + int(fields[12])


def _nginx_message(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in lines:
        if "[emerg]" in ln or "[alert]" in ln:
            return re.sub(r"^\d+#\d+: ", "", ln.split("] ", 1)[-1])
    return lines[-1] if lines else "no output"


def _worker_user(host: Host) -> str:
    """``nobody`` and its primary group, for workers started by a root master."""
    out = host.run(["id", "-gn", "nobody"], check=False)
    group = out.stdout.strip() if out.ok and out.stdout.strip() else "nogroup"
    return f"nobody {group}"
