"""One private nginx on one host (and its upstream file servers), and its teardown.

A `Deployment` owns a prefix directory made with ``mktemp -d`` on the host, its own config,
pid file, ports, content and TLS key. It never reads, signals or edits any other nginx, and
`Deployment.teardown` stops its processes (workers too, even when the master was killed) and
removes the prefix, also after an error or Ctrl-C. `stop_leftovers` stops what a killed
process left behind, from the prefix and pids it recorded.
"""

from __future__ import annotations

import contextlib
import ipaddress
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from runners import jwt
from runners.cputime import stat_ticks
from runners.deploy.conf import (
    ConfExtra,
    ConfTarget,
    hostport,
    render_conf,
    render_upstream_conf,
)
from runners.deploy.userconf import UserConfError, read_user_conf
from runners.deploy.userkey import CERT_KEYS
from runners.errors import BadInput, RunnerError
from runners.hosts import Host, Result
from runners.scenario import Scenario
from runners.tools import TOOLS
from trialtable.tls import tls_key

# A new prefix: printed first, so it is known (and recorded) before the content is written.
_PREFIX = r"""
set -e
umask 022
d=$(mktemp -d "${TMPDIR:-/tmp}/nginx-sizing.XXXXXXXX")
echo "$d"
chmod 755 "$d"
mkdir -p "$d/html" "$d/tmp"
"""

# The content (random bytes, or hex text that gzip can compress, about 2:1), then, when an
# openssl path follows, the certificate; last the ports something listens on (for the first
# start's port choice): one round trip.
_CONTENT = r"""
set -e
umask 022
if [ "$2" = 1 ]; then
  od -An -v -tx1 /dev/urandom | tr -d ' \n' | head -c "$1" > "$4/html/$3"
else
  head -c "$1" /dev/urandom > "$4/html/$3"
fi
if [ -n "$5" ]; then
  o=$5 d=$4
  shift 5
  @CERT@
fi
set +e
echo @LISTEN_MARK@
@LISTENING@
exit 0
"""

# A self-signed certificate in $d, made by openssl $o with the -newkey arguments "$@".
_CERT = r"""
umask 077
"$o" req -x509 -nodes -keyout "$d/key.pem" -out "$d/cert.pem" -days 7 -subj /CN=nginx-sizing \
  -newkey "$@" >/dev/null 2>&1 || { echo "openssl could not make a certificate" >&2; exit 1; }
chmod 600 "$d/key.pem"
chmod 644 "$d/cert.pem"
umask 022
"""

# A user config's files: a session ticket key and an empty password file of the run's own;
# then the module files (of those named) missing from the module folder, one a line.
_USER_FILES = r"""
p=$1 m=$2; shift 2
umask 077
head -c 80 /dev/urandom > "$p/ticket.key" || exit 1
: > "$p/htpasswd" && chmod 644 "$p/htpasswd"
for f; do [ -f "$m/$f" ] || echo "$f"; done
exit 0
"""

# The local ADDRESS:PORT (hexadecimal) of every listening TCP socket (state 0A).
_LISTENING = """cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" {print $2}'"""
# Printed before the listening sockets that follow a script's own output.
_LISTEN_MARK = "NGINX_SIZING_LISTENING"
_CONTENT = (
    _CONTENT.replace("@CERT@", _CERT.strip().replace("\n", "\n  "))
    .replace("@LISTEN_MARK@", _LISTEN_MARK)
    .replace("@LISTENING@", _LISTENING)
)

# Shell helpers (ALIVE_FN, shared with runners.deploy.container): a pid is alive when it
# exists and is not a zombie (a container's init may never reap it); its start time is
# field 22 of /proc/PID/stat (clock ticks since boot).
# Both read the stat line with the shell's own `read` (the name in parentheses may hold
# spaces): no process is started, which on a loaded host took 20-30 ms each time.
# `children` prints a process's children: the kernel's list, else `pgrep` (which reads every
# process's stat: 170 ms on the same host). `wait_gone N PID...` polls every 0.05 s, at most N
# times, until every PID is gone; `left` holds those still alive.
ALIVE_FN = r"""
alive() {
  { read -r _st < "/proc/$1/stat"; } 2>/dev/null || return 1
  _st=${_st##*") "}
  [ -n "$_st" ] && [ "${_st%% *}" != Z ]
}
started_at() {
  { read -r _st < "/proc/$1/stat"; } 2>/dev/null || return 1
  _st=${_st##*") "}
  set -- $_st
  echo "${20}"
}
children() {
  _ch=
  { read -r _ch < "/proc/$1/task/$1/children"; } 2>/dev/null
  [ -n "$_ch" ] || _ch=$(pgrep -P "$1" 2>/dev/null)
  echo $_ch
}
wait_gone() {
  _n=$1; shift; _i=0
  while :; do
    left=
    for _p in "$@"; do alive "$_p" && left="$left $_p"; done
    [ -z "$left" ] && return 0
    [ $_i -ge "$_n" ] && return 1
    sleep 0.05; _i=$((_i+1))
  done
}
"""

# Write the config, test it, start nginx, wait for its pid and workers: one round trip.
_LAUNCH = (
    ALIVE_FN
    + r"""
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
  w=$(children "$m")
  set -- $w
  if [ $# -ge "$want" ] || [ $i -ge 250 ]; then break; fi
  sleep 0.02; i=$((i+1))
done
s=
for q in $m $w; do
  s="$s $q:$(started_at "$q")"
done
echo STARTED "$m" $w
echo STARTS $s
"""
)

# Which of the pids are alive, their /proc stat lines (CPU time in clock ticks), then their
# CPU time in ns from /proc/PID/schedstat where the kernel keeps it.
_SAMPLE_FN = r"""
sample() {
  for p in "$@"; do alive "$p" && echo "ALIVE $p"; done
  for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null; done
  for p in "$@"; do s=$(cat "/proc/$p/schedstat" 2>/dev/null) && echo "SCHED ${s%% *}"; done
}
"""
# One sample: one round trip.
_SAMPLE = ALIVE_FN + _SAMPLE_FN + 'sample "$@"\nexit 0\n'
# A sample, the command (only when every pid is alive), a second sample: one round trip for
# what would take three. Arguments: the number of pids, the pids, the command's argv. The
# command's output is what it printed, between the two markers; the exit status is its own.
_RUN_MARK, _AFTER_MARK, _DOWN_MARK = "NGINX_SIZING_RUN", "NGINX_SIZING_AFTER", "NGINX_SIZING_DOWN"
_SAMPLED = (
    ALIVE_FN
    + _SAMPLE_FN
    + r"""
k=$1; shift; pids=
while [ "$k" -gt 0 ]; do pids="$pids $1"; shift; k=$((k-1)); done
sample $pids
for p in $pids; do alive "$p" || { echo @DOWN@; exit 0; }; done
echo @RUN@
"$@"; rc=$?
echo
echo @AFTER@
sample $pids
exit $rc
""".replace("@DOWN@", _DOWN_MARK)
    .replace("@RUN@", _RUN_MARK)
    .replace("@AFTER@", _AFTER_MARK)
)

# Stop masters (TERM, then KILL after 5 s), kill leftover workers, remove the prefix.
_STOP_BODY = r"""
# Stop this deployment's nginx: the masters given, and any master started with -p $dir (or a
# prefix inside it: one whose pid was never learnt); then their workers, and the recorded
# workers that are orphans (a recycled pid now in someone else's nginx has a live nginx
# parent: left alone). A recorded pid given as PID:START is touched only while its start time
# is still START (the same process, not a recycled pid); otherwise it is reported (LEFT).
dir=$1 masters=$2; shift 2
if [ -n "$dir" ]; then
  # One grep finds the nginx masters; only their command lines are read one by one.
  for d in $(grep -alF "master process" /proc/[0-9]*/cmdline 2>/dev/null); do
    d=${d%/cmdline}
    case "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)" in
      *"master process"*" -p $dir "*|*"master process"*" -p $dir/"*|*"master process"*" -p $dir")
        masters="$masters ${d#/proc/}";;
    esac
  done
fi
given=
for a in "$@"; do
  case "$a" in
    *:*)
      p=${a%%:*} t=${a#*:}
      alive "$p" || continue
      if [ "$(started_at "$p")" != "$t" ]; then
        echo "LEFT $p started at another time than recorded (another process now)"
        continue
      fi
      given="$given $p";;
    *) given="$given $a";;
  esac
done
set -- $given
kids=
for m in $masters; do
  if alive "$m"; then
    kids="$kids $(children "$m")"
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
if [ -n "$dir" ]; then
  rm -rf -- "$dir"
  # A load generator's per-request logs, named after its work folder (see loadgen.h2load).
  for f in "/dev/shm/${dir##*/}-"* "${dir%/*}/${dir##*/}-"*; do
    [ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ] && rm -f -- "$f"
  done
fi
"""
# After stopping, the ports something listens on, for the next start's port choice.
_STOP = ALIVE_FN + _STOP_BODY + f"echo {_LISTEN_MARK}\n{_LISTENING}\nexit 0\n"

# What a killed run left is touched only when it is provably the run's own: a folder (not a
# link) of this user, made by mktemp directly in this host's temporary root with the
# project's name; anything else is reported (NOT_OURS) and left alone.
# A client work folder's load generators: every process of this user whose current folder
# is the work folder (the wrapper starts them there), stopped (TERM, then KILL after 5 s).
_STOP_CLIENTS = r"""
case "${1##*/}" in
  nginx-sizing-load.????????)
    gens= here=$(cd "$1" 2>/dev/null && pwd -P) || here=$1
    for d in /proc/[0-9]*; do
      [ -O "$d" ] || continue
      [ "$d/cwd" -ef "$here" ] && gens="$gens ${d#/proc/}"  # a test builtin: no fork
    done
    if [ -n "$gens" ]; then
      kill -TERM $gens 2>/dev/null
      wait_gone 100 $gens || kill -KILL $left 2>/dev/null
      for g in $gens; do echo "CLIENT $g"; done
    fi;;
esac
"""

_LEFTOVER = (
    ALIVE_FN
    + r"""
root=${TMPDIR:-/tmp}
root=${root%/}
[ -n "$root" ] || root=/tmp
case "${1##*/}" in
  nginx-sizing.????????|nginx-sizing-load.????????) ;;
  *) echo "NOT_OURS its name is not one the project makes"; exit 0;;
esac
if [ "${1%/*}" != "$root" ]; then
  echo "NOT_OURS it is not in this host's temporary folder $root"; exit 0
fi
if [ -L "$1" ]; then echo "NOT_OURS it is a symbolic link"; exit 0; fi
if [ -e "$1" ] && { [ ! -d "$1" ] || [ ! -O "$1" ]; }; then
  echo "NOT_OURS it is not a folder of this user"; exit 0
fi
"""
    + _STOP_CLIENTS
    + _STOP_BODY
    + "exit 0\n"
)


@dataclass
class NginxProcess:
    """One running private nginx: its prefix, config path, master and worker pids."""

    prefix: str
    conf_path: str
    master: int
    workers: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class NginxHost:
    """A host that runs nginx, and what the deployment needs to know about it.

    Attributes
    ----------
    host : Host
        Where the commands run.
    nginx, openssl : str
        Resolved paths (or names) of the binaries there.
    as_root : bool
        Whether commands there run as root (workers then run as ``nobody``).
    clk_tck : int
        Clock ticks per second, for CPU time in /proc.
    nginx_version : str
        ``nginx -v`` output; ``-e`` (1.19.5 and later) is used when it exists.
    worker_group : str
        Primary group of ``nobody`` there, when the host's facts hold it (else it is asked
        for when workers run as ``nobody``).
    """

    host: Host
    nginx: str = TOOLS["nginx"]
    openssl: str = TOOLS["openssl"]
    as_root: bool = False
    clk_tck: int = 100
    nginx_version: str = ""
    worker_group: str = ""

    @property
    def has_e_flag(self) -> bool:
        """Whether this nginx has ``-e`` (keep start-up messages out of the host's log)."""
        return _has_e_flag(self.nginx_version)


@dataclass
class NginxInstance:
    """Where one of a deployment's nginx runs, and what it made there.

    A `Deployment` holds one for the server and, when the upstream file servers run on
    another host, one for them.

    Attributes
    ----------
    at : NginxHost
        The host and its binaries.
    address : str
        The IP address this nginx listens on.
    user : str, optional
        The ``user`` directive of its workers (``nobody`` and its group under root).
    prefix : str, optional
        Its private prefix, once made.
    pids : set of int
        Every master and worker pid it started there.
    """

    at: NginxHost
    address: str
    user: str | None = None
    prefix: str | None = None
    pids: set[int] = field(default_factory=set)

    @classmethod
    def on(cls, at: NginxHost, address: str) -> NginxInstance:
        """An instance on ``at`` listening on ``address`` (workers as ``nobody`` under root)."""
        return cls(at, address, _worker_user(at) if at.as_root else None)


class Recorder(Protocol):
    """Where a deployment records what it starts and removes (`runners.run.Run`)."""

    def started(
        self,
        host: str,
        what: str,
        path: str,
        pids: list[int],
        starts: Mapping[int, str] | None = None,
    ) -> None:
        """Told before a prefix or process can be used; ``starts``: each pid's start time."""

    def removed(self, host: str, path: str) -> None:
        """Told once a prefix is stopped and removed."""


class Deployment:
    """A private nginx for one scenario on one host (and its upstream file servers).

    Parameters
    ----------
    server : NginxHost
        The server host.
    scenario : Scenario
        What to serve.
    listen : str
        The IP address the server listens on (the clients' target address).
    upstream : NginxHost, optional
        Where the upstream file servers run (default: the server host, on 127.0.0.1).
    upstream_address : str
        The IP address the server reaches them at, and they listen on.
    record : Recorder, optional
        Told ``started(host, what, prefix, pids)`` when a prefix or nginx starts (before it
        is used), and ``removed(host, prefix)`` once a prefix is stopped and removed.
    http2 : bool
        Serve HTTP/2 (the clients speak HTTP/2).
    jwt_public_key : str, optional
        For a scenario with ``jwt``: the base64 DER public key tokens are checked with.

    Attributes
    ----------
    main : NginxInstance
        The server's nginx (its prefix also holds the upstream servers when they share it).
    upstream_side : NginxInstance or None
        The upstream file servers' nginx on their own host; None when they run on the server.
    server, upstream : NginxProcess or None
        The running server under test and upstream file servers.
    """

    def __init__(
        self,
        server: NginxHost,
        scenario: Scenario,
        *,
        listen: str = "127.0.0.1",
        upstream: NginxHost | None = None,
        upstream_address: str = "127.0.0.1",
        record: Recorder | None = None,
        http2: bool = False,
        jwt_public_key: str | None = None,
    ) -> None:
        if scenario.jwt and not jwt_public_key:
            raise RunnerError("the JWT scenario needs the public key tokens are signed for")
        self.jwt_public_key = jwt_public_key
        self.jwt_config: jwt.JwtConfig | None = None
        if not is_ip(listen) or (upstream is not None and not is_ip(upstream_address)):
            raise RunnerError("nginx listens on an IP address; resolve host names first")
        self.host, self.scenario = server.host, scenario
        self.main = NginxInstance.on(server, listen)
        # The upstream file servers' own host; None: they run on the server, on 127.0.0.1.
        self.upstream_side = (
            NginxInstance.on(upstream, upstream_address)
            if upstream is not None and upstream.host is not server.host
            else None
        )
        self.port: int | None = None
        self.server: NginxProcess | None = None
        self.upstream: NginxProcess | None = None
        self.upstream_ports: list[int] = []
        self.conf: str = ""
        self.upstream_conf: str = ""
        self._cpus: tuple[int, ...] = ()
        self._recorder = record
        self.http2 = http2
        #: A configuration feature's own lines in the server's config (none by default).
        self.extra = ConfExtra()
        #: A user's own configuration, read and checked once (`runners.deploy.userconf`).
        self.user_conf = read_user_conf(scenario.nginx_conf) if scenario.nginx_conf else None
        self._modules_dir = ""
        # The ports in use on a host (by id), as the last script there saw them: the next
        # port choice there takes them instead of asking again (once).
        self._listening: dict[int, set[int]] = {}

    @property
    def prefix(self) -> str | None:
        """The server's private prefix, once made."""
        return self.main.prefix

    def setup(self) -> None:
        """Make the prefix, content and certificate; start the upstream servers if needed."""
        s = self.scenario
        cert = s.protocol == "https" or (self.user_conf is not None and self.user_conf.needs_cert)
        self._make_prefix(self.main, "creating the nginx prefix", cert=cert)
        if self.user_conf is not None:
            self._setup_user_conf()
        if s.jwt:
            self._setup_jwt()
        if s.proxied:
            self._start_upstream()

    def _setup_user_conf(self) -> None:
        """The run's own ticket key and password file; the modules the user config loads."""
        assert self.prefix is not None and self.user_conf is not None
        version = self.host.run([self.main.at.nginx, "-V"], check=False, what="nginx -V")
        self._modules_dir = jwt.modules_path(version.stderr + version.stdout)
        out = self.host.sh(
            _USER_FILES,
            self.prefix,
            self._modules_dir,
            *self.user_conf.modules,
            what="writing the run's ticket key and password file",
        )
        if out.stdout.split():
            raise UserConfError(
                f"{self.user_conf.path}: load_module of a module not installed on "
                f"{self.host.name}: {', '.join(out.stdout.split())}"
            )

    def _setup_jwt(self) -> None:
        """Copy the token verifier into the prefix; find the njs module on the host."""
        assert self.prefix is not None and self.jwt_public_key
        version = self.host.run([self.main.at.nginx, "-V"], check=False, what="nginx -V")
        modules = jwt.modules_path(version.stderr + version.stdout)
        module = f"{modules.rstrip('/')}/{jwt.MODULE_FILE}"
        script = f"{self.prefix}/{jwt.VERIFY_SCRIPT.name}"
        # Check for the module and write the verifier: one round trip.
        out = self.host.sh(
            '[ -f "$1" ] || { echo NO_MODULE; exit 0; }; '
            'umask 077; printf "%s" "$3" > "$2" && chmod 644 "$2"',
            module,
            script,
            jwt.VERIFY_SCRIPT.read_text(),
            what=f"writing {script}",
        )
        if out.stdout.strip() == "NO_MODULE":
            raise RunnerError(
                f"the JWT check needs njs on {self.host.name}: {module} is missing (Debian: "
                "apt-get install libnginx-mod-http-js)"
            )
        self.jwt_config = jwt.JwtConfig(modules, script, self.jwt_public_key)

    def _newkey(self) -> tuple[str, ...]:
        """``openssl req -newkey`` arguments of the run's key: a user config's key type."""
        if self.user_conf is not None and self.user_conf.key.name:
            return CERT_KEYS[self.user_conf.key.name]
        return tls_key(self.scenario.tls_key).newkey

    def _make_prefix(self, inst: NginxInstance, what: str, *, cert: bool = False) -> str:
        """A new prefix for ``inst`` on its host, recorded before its content is written.

        Two round trips: the prefix (recorded before anything is written into it), then the
        content, the certificate (with ``cert``) and the ports in use, together.
        """
        s = self.scenario
        host = inst.at.host
        out = host.sh(_PREFIX, check=False, timeout=60)
        first = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
        if first.startswith("/"):
            inst.prefix = first
            self._record(host, "nginx-prefix", first, [])
        if not out.ok or not first.startswith("/"):
            detail = (out.stderr or out.stdout).strip().splitlines()
            raise RunnerError(
                f"{what} failed on {host.name}: {detail[-1] if detail else 'no output'}"
            )
        newkey = self._newkey() if cert else ()
        out = host.sh(
            _CONTENT,
            str(s.file_bytes),
            "1" if s.gzip else "0",
            s.body_name,
            first,
            inst.at.openssl if cert else "",
            *newkey,
            what=f"writing the {s.file_bytes} B test file"
            + (" and the TLS certificate" if cert else ""),
            timeout=300,
        )
        self._note_listening(host, out.stdout)
        return first

    def _note_listening(self, host: Host, stdout: str) -> str:
        """Keep the ports in use a script listed after `_LISTEN_MARK`; return what came before.

        Nothing is kept when the list is missing (the script stopped early).
        """
        before, mark, after = ("\n" + stdout).partition(f"\n{_LISTEN_MARK}\n")
        if mark:
            self._listening[id(host)] = _ports(after)
        return before[1:]

    def _record(
        self,
        host: Host,
        what: str,
        prefix: str,
        pids: list[int],
        starts: dict[int, str] | None = None,
    ) -> None:
        if self._recorder is not None:
            self._recorder.started(host.name, what, prefix, pids, starts or None)

    def _start_upstream(self) -> None:
        assert self.prefix is not None
        inst = self.upstream_side
        if inst is None:
            inst, listen = self.main, "127.0.0.1"
            up = f"{self.prefix}/upstream"
            self.host.sh(
                'mkdir -p "$1/tmp" && ln -s ../html "$1/html"',
                up,
                what="creating the upstream prefix",
            )
        else:
            listen = inst.address
            up = self._make_prefix(inst, "creating the upstream prefix")
        for _ in range(5):
            self.upstream_ports = self.free_ports(self.scenario.upstreams, inst.at.host)
            self.upstream_conf = render_upstream_conf(
                self.scenario,
                prefix=up,
                listen=listen,
                ports=self.upstream_ports,
                user=inst.user,
            )
            proc = self._launch(inst, up, self.upstream_conf, "upstream", len(self.upstream_ports))
            if proc is not None:
                self.upstream = proc
                return
        raise RunnerError(
            f"could not find free ports for the upstream servers on {inst.at.host.name}"
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
        up_address = self.upstream_side.address if self.upstream_side else "127.0.0.1"
        upstream = [hostport(up_address, p) for p in self.upstream_ports]
        for _ in range(5):
            self.conf = self._render(cpus, upstream)
            proc = self._launch(self.main, self.prefix, self.conf, "server", len(cpus))
            if proc is not None:
                self.server, self._cpus = proc, tuple(cpus)
                return self.conf
        raise RunnerError(f"could not find a free port for nginx on {self.host.name}")

    def _render(self, cpus: Sequence[int], upstream: Sequence[str]) -> str:
        """The server's config on newly chosen free ports (``self.port`` the loaded one)."""
        assert self.prefix is not None
        slots = self.user_conf.slots if self.user_conf is not None else [""]
        ports = self.free_ports(len(slots))
        target = ConfTarget(
            self.prefix,
            self.main.address,
            ports,
            cpus,
            upstream,
            self.main.user,
            self._modules_dir,
        )
        if self.user_conf is not None:
            self.port = ports[self.user_conf.target]
            return self.user_conf.render(target)
        self.port = ports[0]
        return render_conf(
            self.scenario, target, http2=self.http2, jwt_config=self.jwt_config, extra=self.extra
        )

    def _launch(
        self, inst: NginxInstance, prefix: str, conf: str, role: str, want: int
    ) -> NginxProcess | None:
        """Write, test and start one nginx of ``inst``; None when its port was taken meanwhile."""
        host = inst.at.host
        conf_path = f"{prefix}/nginx.conf"
        out = host.sh(
            _LAUNCH,
            prefix,
            conf_path,
            inst.at.nginx,
            str(want),
            conf,
            "1" if inst.at.has_e_flag else "0",
            what=f"starting nginx ({role})",
            timeout=120,
        )
        lines = out.stdout.strip().splitlines()
        status = lines[0] if lines else "NO_OUTPUT"
        detail = _nginx_message("\n".join(lines[1:]))
        if status == "TEST_FAILED":
            # With the user's config or directives in it, the rejection is theirs: bad input.
            theirs = self.user_conf is not None or bool(self.scenario.directives)
            fault = BadInput if theirs else RunnerError
            raise fault(f"nginx -t rejected the {role} config on {host.name}: {detail}")
        if status == "START_FAILED":
            if "Address already in use" in detail:
                return None
            raise RunnerError(f"nginx ({role}) did not start on {host.name}: {detail}")
        if not status.startswith("STARTED"):
            raise RunnerError(f"nginx ({role}) on {host.name} wrote no pid file in {prefix}")
        master, *workers = (int(p) for p in status.split()[1:])
        inst.pids.update([master, *workers])
        starts = _starts(lines)
        self._record(host, "nginx", inst.prefix or prefix, [master, *workers], starts)
        return NginxProcess(prefix, conf_path, master, workers)

    def free_ports(self, n: int, host: Host | None = None) -> list[int]:
        """``n`` TCP ports in 20000-29999 that nothing on the host listens on.

        The list of ports in use is the one the last script on the host printed (preparing
        the prefix, stopping nginx) when there is one not yet used; else it is read now. A
        port taken in between makes the start fail with "Address already in use", and the
        caller tries another.
        """
        host = host or self.host
        used = self._listening.pop(id(host), None)
        if used is None:
            used = _ports(host.sh(_LISTENING, check=False).stdout)
        free = [p for p in range(20000, 30000) if p not in used]
        return random.sample(free, n)

    def pids(self) -> list[int]:
        """Master and worker pids of the server under test."""
        if self.server is None:
            return []
        return [self.server.master, *self.server.workers]

    def sample(self) -> tuple[bool, float]:
        """Whether the server's master and every worker run, and their CPU time [s].

        The CPU time is ``/proc/PID/schedstat``'s (ns) when every pid has one, else
        ``/proc/PID/stat``'s utime + stime (clock ticks, 10 ms each on most kernels: 2% of a
        1 s trial at half a CPU). One round trip to the host.
        """
        pids = self.pids()
        if not pids:
            return False, 0.0
        out = self.host.sh(_SAMPLE, *map(str, pids), check=False)
        return read_sample(out.stdout, len(pids), self.main.at.clk_tck)

    def run_sampled(
        self, argv: Sequence[str], *, timeout: float
    ) -> tuple[tuple[bool, float], Result | None, tuple[bool, float] | None]:
        """Sample the server, run ``argv`` on its host, sample again: one round trip.

        Returns
        -------
        before : (bool, float)
            The first `sample`: whether every process runs, their CPU time [s].
        result : Result or None
            What ``argv`` printed and its exit status; None when it did not run (nginx was
            not running) or the round trip failed before it (``before`` is then not alive).
        after : (bool, float) or None
            The second sample, taken as ``argv`` ended; None when the output stops before it
            (then call `sample`).
        """
        pids = self.pids()
        if not pids:
            return (False, 0.0), None, None
        out = self.host.sh(
            _SAMPLED, str(len(pids)), *map(str, pids), *argv, check=False, timeout=timeout
        )
        head, run_mark, rest = ("\n" + out.stdout).partition(f"\n{_RUN_MARK}\n")
        if not run_mark:
            if f"\n{_DOWN_MARK}" in head:
                return read_sample(head, len(pids), self.main.at.clk_tck), None, None
            detail = out.stderr.strip().splitlines()
            raise RunnerError(
                f"sampling nginx and running {argv[0] if argv else 'the client'} failed on "
                f"{self.host.name} (exit {out.exited}): {detail[-1] if detail else 'no output'}"
            )
        before = read_sample(head, len(pids), self.main.at.clk_tck)
        body, after_mark, tail = rest.rpartition(f"\n{_AFTER_MARK}\n")
        if not after_mark:
            return before, Result(rest, out.stderr, out.exited), None
        after = read_sample(tail, len(pids), self.main.at.clk_tck)
        return before, Result(body, out.stderr, out.exited), after

    def alive(self) -> bool:
        """Whether the server's master and every worker still run."""
        return self.sample()[0]

    def error_log_tail(self) -> str:
        """The error-log line that says why nginx stopped, or "" when there is no log.

        The last emerg, alert or crit line, or a worker that exited on a signal; else the
        last line.
        """
        if self.prefix is None:
            return ""
        out = self.host.run(["tail", "-n", "200", f"{self.prefix}/error.log"], check=False)
        return relevant_log_line(out.stdout)

    def stop_server(self) -> None:
        """Stop the server under test (upstreams keep running)."""
        if self.server is not None:
            self._stop(self.host, None, [self.server], set(self.server.workers))
            self.main.pids -= {self.server.master, *self.server.workers}
            self.server = None

    def teardown(self) -> None:
        """Stop every process this deployment started and remove its prefixes, on each host."""
        up, main = self.upstream_side, self.main
        try:
            if up is not None:
                self._stop(up.at.host, up.prefix, [self.upstream], up.pids)
                self._removed(up.at.host, up.prefix)
                self.upstream = None
            self._stop(main.at.host, main.prefix, [self.server, self.upstream], main.pids)
            self._removed(main.at.host, main.prefix)
        finally:
            self.server = self.upstream = None
            for inst in (main, up):
                if inst is not None:
                    inst.prefix = None
                    inst.pids.clear()

    def _removed(self, host: Host, prefix: str | None) -> None:
        if prefix and self._recorder is not None:
            self._recorder.removed(host.name, prefix)

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
        out = host.sh(
            _STOP,
            prefix or "",
            " ".join(map(str, masters)),
            *map(str, sorted(pids - set(masters))),
            check=False,
            timeout=60,
        )
        self._note_listening(host, out.stdout)

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


def stop_leftovers(
    host: Host, prefix: str, pids: Sequence[int], starts: Mapping[str, str] | None = None
) -> tuple[bool, list[str]]:
    """Stop the nginx of a prefix a killed run left behind, and remove the prefix.

    Acts only on what it can prove the run started: a prefix the project names
    (``nginx-sizing.XXXXXXXX``, a client's ``nginx-sizing-load.XXXXXXXX``) made directly in
    the host's temporary folder (``$TMPDIR`` or ``/tmp``), a folder of this user and not a
    link; the nginx masters whose command line holds ``-p PREFIX``; a recorded pid only while
    its start time is the one recorded (``starts``), and then only under teardown's rules.
    Returns whether the prefix qualified, and one note per thing left alone.
    """
    starts = starts or {}
    base = prefix.rstrip("/").rpartition("/")[2]
    named = re.fullmatch(r"nginx-sizing(-load)?\.[A-Za-z0-9]{8}", base)
    if not prefix.startswith("/") or not named:
        return False, ["its name is not one the project makes"]
    given = [f"{p}:{starts[str(p)]}" for p in pids if str(p) in starts]
    notes = [f"pid {p} has no recorded start time" for p in pids if str(p) not in starts]
    out = host.sh(_LEFTOVER, prefix.rstrip("/"), "", *given, check=False, timeout=60)
    for line in out.stdout.splitlines():
        if line.startswith("NOT_OURS "):
            return False, [line.removeprefix("NOT_OURS ")]
        if line.startswith("LEFT "):
            pid, _, why = line.removeprefix("LEFT ").partition(" ")
            notes.append(f"pid {pid} {why}")
    return True, notes


def read_sample(text: str, n: int, clk_tck: int) -> tuple[bool, float]:
    """Whether all ``n`` pids run, and their CPU time [s], from `_SAMPLE_FN`'s lines.

    The CPU time is the sum of the ``SCHED`` lines (ns) when every pid has one, else of the
    ``/proc/PID/stat`` lines' utime + stime (``clk_tck`` ticks per second).
    """
    lines = text.splitlines()
    alive = sum(1 for ln in lines if ln.startswith("ALIVE "))
    sched = [ln.split()[1] for ln in lines if ln.startswith("SCHED ") and len(ln.split()) == 2]
    if len(sched) == n and all(v.isdigit() for v in sched):
        return alive == n, sum(int(v) for v in sched) / 1e9
    ticks = sum(
        stat_ticks(ln)
        for ln in lines
        if ln.strip()
        and not ln.startswith(
            ("ALIVE ", "SCHED ", _RUN_MARK, _AFTER_MARK, _DOWN_MARK, _LISTEN_MARK)
        )
    )
    return alive == n, ticks / clk_tck


def _ports(text: str) -> set[int]:
    """The ports of `_LISTENING`'s ``ADDRESS:PORT`` words (hexadecimal)."""
    ports = set()
    for word in text.split():
        _, colon, port = word.rpartition(":")
        if colon:
            with contextlib.suppress(ValueError):
                ports.add(int(port, 16))
    return ports


def _starts(lines: Sequence[str]) -> dict[int, str]:
    """``{pid: start time}`` from `_LAUNCH`'s ``STARTS pid:ticks ...`` line."""
    for line in lines:
        if line.startswith("STARTS"):
            pairs = (w.partition(":") for w in line.split()[1:])
            return {int(p): t for p, _, t in pairs if p.isdigit() and t.isdigit()}
    return {}


def relevant_log_line(text: str) -> str:
    """The line of an nginx error log that says why it stopped (see `error_log_tail`)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.search(r"\[(emerg|alert|crit)\]|exited on signal", ln):
            return ln
    return lines[-1] if lines else ""


def is_ip(addr: str) -> bool:
    """Whether ``addr`` is an IPv4 or IPv6 address (not a host name)."""
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        return False
    return True


def _nginx_message(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in lines:
        if "[emerg]" in ln or "[alert]" in ln:
            return re.sub(r"^\d+#\d+: ", "", ln.split("] ", 1)[-1])
    return lines[-1] if lines else "no output"


def _worker_user(at: NginxHost) -> str:
    """``nobody`` and its primary group, for workers started by a root master."""
    group = at.worker_group
    if not group:
        out = at.host.run(["id", "-gn", "nobody"], check=False)
        group = out.stdout.strip() if out.ok and out.stdout.strip() else "nogroup"
    return f"nobody {group}"
