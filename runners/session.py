"""A session: the private nginx and the load generators of one run, on hosts passed in.

`connect_hosts` connects once to every host a plan names (the server, the clients, an
upstream host) and returns them as `Hosts`; a `Session` takes them, checks tools, records
host facts, deploys nginx, and measures one trial at a time (`Session.trial`). Leaving the
session stops and removes everything it started on every host; closing `Hosts` closes the
connections.
"""

from __future__ import annotations

import contextlib
import functools
import math
import shlex
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any

from runners import clients as many
from runners import jwt, loadgen, window
from runners.cputime import TIMES_MARKER, times_seconds
from runners.deploy.conf import is_wildcard
from runners.deploy.nginx import Deployment, NginxHost, is_ip, stop_leftovers
from runners.errors import BadHosts, BadInput, RunnerError
from runners.hosts import (
    Host,
    HostSpec,
    Result,
    connect,
    facts,
    require_tools,
    side_by_side,
)
from runners.plan import Access, Plan
from runners.run import Run
from runners.scenario import response_size_problem
from runners.trial import CpuUse, Judging, TrialSetting, invalidate, trial_row
from trialtable.folder import EncodedHistogram, encode_histogram
from trialtable.jsonvalue import JsonObject, JsonValue
from trialtable.schema import utc_now


@dataclass
class Hosts:
    """The connected hosts of a run: one connection per distinct host.

    Attributes
    ----------
    server : Host
        Where nginx runs.
    clients : list of Host
        The load-generator hosts, in the plan's order (the server's own `Host` when a client
        is the server host).
    upstream : Host, optional
        Where the proxy scenarios' upstream file servers run, when not on the server.
    """

    server: Host
    clients: list[Host]
    upstream: Host | None = None

    def distinct(self) -> list[Host]:
        """Each connection once."""
        hosts = {id(self.server): self.server}
        hosts.update({id(h): h for h in self.clients})
        if self.upstream is not None:
            hosts[id(self.upstream)] = self.upstream
        return list(hosts.values())

    def close(self) -> None:
        """Close every connection (each step runs even if another fails)."""
        for host in self.distinct():
            with contextlib.suppress(Exception):
                host.close()

    def __enter__(self) -> Hosts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect_hosts(plan: Plan, access: Access | None = None) -> Hosts:
    """Connect to the plan's server, clients and upstream host, once each."""
    access = access or Access()
    made: dict[str, Host] = {}

    def get(text: str) -> Host:
        key = str(HostSpec.parse(text))
        if key not in made:
            made[key] = connect(
                text,
                accept_new_host_keys=access.accept_new_host_keys,
                ssh_config=access.ssh_config,
            )
        return made[key]

    try:
        server = get(plan.server)
        clients = [_client(get, c) for c in plan.clients]
        upstream = get(plan.upstream_host) if plan.scenario.proxied and plan.upstream_host else None
    except BaseException:
        for host in made.values():
            with contextlib.suppress(Exception):
                host.close()
        raise
    if upstream is server:
        upstream = None
    return Hosts(server, clients, upstream)


def _client(get: Callable[[str], Host], text: str) -> Host:
    """The client host ``text`` connected; one that cannot be reached is bad input."""
    try:
        return get(text)
    except BadHosts:
        raise
    except RunnerError as exc:
        raise BadHosts(f"a client cannot be reached: {exc}") from None


#: The exit status a client's output carries when its connection was lost mid-command.
LOST_EXIT = 255


@dataclass
class _Measured:
    """What the clients kept in a trial measured, in the order of the session's clients."""

    results: list[loadgen.Measurement]
    outputs: list[tuple[str, str, int]]
    loads: list[loadgen.Load]
    server_cpu_s: float
    rate_rps: float | None
    histogram: dict[int, int] | None = None  # the results' histograms, already summed


@dataclass
class _Ran:
    """What a trial's measured part gave, before parsing and judging.

    ``alive``: nginx ran throughout; ``cpu0``, ``cpu1``: its CPU time before and after [s];
    ``outputs``: each client's (stdout, stderr, exit status), none when nginx was down
    before; ``start_s``: the clients' common start [s since the epoch] (None for one
    client); ``parsed``: each client's `Session._parse` answer when already parsed;
    ``problems``: why the trial is invalid for the measuring itself; ``histogram``: the
    parsed clients' histograms summed as they arrived (None: not summed yet).
    """

    alive: bool
    cpu0: float
    cpu1: float
    outputs: list[tuple[str, str, int]]
    start_s: float | None
    parsed: list[loadgen.Measurement | str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    histogram: dict[int, int] | None = None


@dataclass
class _Client:
    host: Host
    spec: HostSpec
    facts: dict[str, Any]
    binary: str
    workdir: str = ""
    timeout: str = ""
    cpus: list[int] = field(default_factory=list)
    offset: window.Offset | None = None
    weight: float = 1.0
    index: int = 0  # its place in the plan's clients
    retries: int = 0  # times tried again after it was lost


class Session:
    """The private nginx and the load generators of one run; `trial` measures one setting.

    Parameters
    ----------
    plan : Plan
        What to measure.
    hosts : Hosts
        The connected hosts (the session does not close them).
    run : Run
        The run it records into.
    log : file, optional
        Where it says what it set up.
    mode : str
        ``"closed"`` or ``"open"`` (constant rate): the load generator must have it.

    Use as a context manager: entering checks tools, records host facts and deploys;
    leaving stops and removes everything it started on every host.
    """

    def __init__(
        self,
        plan: Plan,
        hosts: Hosts,
        run: Run,
        *,
        log: IO[str] | None = None,
        mode: str = loadgen.CLOSED,
    ) -> None:
        self.plan, self.hosts, self.run = plan, hosts, run
        self.generator = plan.generator()
        self.mode = mode
        self.generator.check(plan.http_version, mode)
        self.log = log
        self.server: Host = hosts.server
        self.server_facts: dict[str, Any] = {}
        self.clients: list[_Client] = []
        self.lost: list[_Client] = []  # clients lost mid-run, left out of later trials
        self.deployment: Deployment | None = None
        self.target = ""
        self.server_cpus: list[int] = []
        self._vcpus: int | None = None
        # What the session recorded in run.json, kept here rather than read back.
        self._hosts_record: dict[str, Any] = {}
        self._placement = ""  # the first client's placement under the current vcpus
        # Each client's histogram as stored, encoded in its thread as it ended (`_run_many`).
        self._encoded: dict[int, EncodedHistogram] = {}
        # When the last common start was set, and the longest a client then took to be
        # ready for it [s] (`window.common_start` sizes the next lead by it).
        self._start_set_s = math.nan
        self._ready_s: float | None = None
        # Clients whose window missed the last trial's: their clocks are read again.
        self._recheck: set[str] = set()
        self._seq = len(run.rows())
        # A key pair for this session when nginx checks tokens: the public key goes into the
        # config, the private key signs the one token every request carries.
        self._jwt_keys = jwt.KeyPair.generate() if plan.scenario.jwt else None
        self._headers = plan.scenario.headers
        if self._jwt_keys is not None:
            self._headers += (jwt.authorization_header(self._jwt_keys.token()),)

    # -- setting up -------------------------------------------------------------------------
    def __enter__(self) -> Session:
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> None:
        plan = self.plan
        server_spec = HostSpec.parse(plan.server)
        server_tools = [plan.nginx, "taskset"]
        if plan.scenario.protocol == "https":
            server_tools.append(plan.openssl)
        specs = [HostSpec.parse(c) for c in plan.clients]
        tool = self.generator.tool(plan.binaries(), self.mode)
        optional = ["taskset", "timeout"]
        shares = any(host is self.server for host in self.hosts.clients)
        self.server_facts = facts(
            self.server, [*server_tools, tool, "timeout"] if shares else server_tools
        )
        found = {self.server.name: {t: self.server_facts["tools"][t] for t in server_tools}}
        client_facts = []
        for host in self.hosts.clients:
            info = self.server_facts if host is self.server else facts(host, [tool, *optional])
            client_facts.append(info)
            found.setdefault(host.name, {})[tool] = info["tools"][tool]
        require_tools(found)
        self._add_clients(specs, client_facts, tool)
        self.target = self._target_address(server_spec)
        too_many = [v for v in plan.vcpus if v > len(self.server_facts["cpus_allowed"])]
        if too_many:
            raise BadInput(
                f"--vcpus {max(too_many)}: {self.server.name} has only "
                f"{len(self.server_facts['cpus_allowed'])} CPUs for nginx"
            )
        self._hosts_record = {
            "server": self.server_facts,
            "clients": client_facts,
            "target_address": self.target,
        }
        self.run.record(hosts=self._hosts_record)
        self._say(
            f"server {self.server.name}: {self.server_facts.get('cpu_model')}, "
            f"{self.server_facts['cores']} CPUs; target {self.target}"
        )
        upstream, up_address = self._upstream()
        self.deployment = Deployment(
            NginxHost(
                self.server,
                nginx=self.server_facts["tools"][plan.nginx],
                openssl=self.server_facts["tools"].get(plan.openssl, plan.openssl),
                as_root=self.server_facts.get("user") == "root",
                clk_tck=self.server_facts["clk_tck"],
                nginx_version=self.server_facts.get("nginx_version", ""),
                worker_group=self.server_facts.get("nobody_group", ""),
            ),
            plan.scenario,
            listen=self.target,
            upstream=upstream,
            upstream_address=up_address,
            record=self.run,
            http2=plan.http_version == "2",
            jwt_public_key=self._jwt_keys.public_der_b64 if self._jwt_keys else None,
        )
        self.deployment.setup()
        if self.deployment.upstream_conf:
            self.run.record(upstream_conf=self.deployment.upstream_conf)
        for client in self.clients:
            self._prepare(client)

    def _add_clients(
        self, specs: Sequence[HostSpec], client_facts: Sequence[dict[str, Any]], tool: str
    ) -> None:
        """The clients with their facts and weights; with several, each clock's offset.

        Raises `BadHosts` when a clock is further off than a trial is long.
        """
        weights = self.plan.client_weights or (1.0,) * len(specs)
        for i, (spec, host, info, w) in enumerate(
            zip(specs, self.hosts.clients, client_facts, weights, strict=True)
        ):
            binary, timeout = info["tools"][tool], info["tools"].get("timeout", "")
            self.clients.append(_Client(host, spec, info, binary, "", timeout, weight=w, index=i))
        if len(self.clients) > 1:
            for client in self.clients:
                client.offset = _clock_offset(client.host)
            offsets = {c.host.name: c.offset.offset_s for c in self.clients if c.offset}
            many.check_offsets(offsets, self.plan.duration_s)

    def _prepare(self, client: _Client) -> None:
        """The generator's private work folder, with its files, on one client; recorded."""
        files = self.generator.files()
        args = [x for name, text in files.items() for x in (name, text)]
        out = client.host.sh(
            'd=$(mktemp -d "${TMPDIR:-/tmp}/nginx-sizing-load.XXXXXXXX") && echo "$d" && '
            'while [ $# -gt 0 ]; do printf "%s" "$2" > "$d/$1" || exit 1; shift 2; done',
            *args,
            check=False,
        )
        first = out.stdout.strip().splitlines()[:1]
        if first and first[0].startswith("/"):
            client.workdir = first[0]
            self.run.started(client.host.name, "client-workdir", client.workdir, [])
        if not out.ok or not client.workdir:
            detail = (out.stderr or out.stdout).strip().splitlines()
            raise RunnerError(
                f"preparing {self.generator.name}'s work folder failed on "
                f"{client.host.name}: {detail[-1] if detail else 'no output'}"
            )

    def _upstream(self) -> tuple[NginxHost | None, str]:
        """Where the upstream file servers run (None: on the server), and their address."""
        plan = self.plan
        host = self.hosts.upstream
        if host is None or host is self.server:
            return None, "127.0.0.1"
        spec = HostSpec.parse(plan.upstream_host or "")
        info = facts(host, [plan.nginx])
        require_tools({host.name: {plan.nginx: info["tools"][plan.nginx]}})
        address = resolve(
            plan.upstream_address or self._address_of(spec, host, "the upstream host")
        )
        self._hosts_record.update(upstream=info, upstream_address=address)
        self.run.record(hosts=self._hosts_record)
        return (
            NginxHost(
                host,
                nginx=info["tools"][plan.nginx],
                as_root=info.get("user") == "root",
                clk_tck=info["clk_tck"],
                nginx_version=info.get("nginx_version", ""),
                worker_group=info.get("nobody_group", ""),
            ),
            address,
        )

    def _address_of(self, spec: HostSpec, host: Host, what: str) -> str:
        if spec.kind == "netns":
            out = host.run(
                ["ip", "-4", "-o", "addr", "show", "scope", "global"],
                what="reading the namespace's address",
            )
            for line in out.stdout.splitlines():
                parts = line.split()
                if "inet" in parts:
                    return parts[parts.index("inet") + 1].split("/")[0]
            raise RunnerError(f"{spec} has no global IPv4 address for {what}")
        if spec.kind == "ssh":
            conn = getattr(host, "conn", None)
            return str(conn.host) if conn is not None else spec.host
        raise RunnerError(
            f"{what} is reached over a network: give its address (--target-address or "
            "--upstream-address)"
        )

    def _target_address(self, server_spec: HostSpec) -> str:
        """The IP address the clients load and nginx listens on (host names resolved)."""
        if self.plan.target_address:
            return resolve(self.plan.target_address)
        if all(c.spec == server_spec for c in self.clients) or (
            server_spec.kind == "local" and all(c.spec.kind == "local" for c in self.clients)
        ):
            return "127.0.0.1"
        return resolve(self._address_of(server_spec, self.server, "the clients"))

    def configure(self, vcpus: int) -> None:
        """Run nginx with ``vcpus`` pinned workers, and place each client's wrk."""
        assert self.deployment is not None
        if self._vcpus == vcpus:
            return
        self.server_cpus = self.server_facts["cpus_allowed"][:vcpus]
        conf = self.deployment.start(self.server_cpus)
        self.run.record_in("nginx_conf", str(vcpus), conf)
        self._place_clients(vcpus)
        self._vcpus = vcpus

    def _place_clients(self, vcpus: int) -> None:
        """Each client's CPUs beside nginx's ``vcpus`` (apart on the server's host); recorded."""
        allowed = self.server_facts["cpus_allowed"]
        server_spec = HostSpec.parse(self.plan.server)
        placement: dict[str, dict[str, Any]] = {}
        for client in self.clients:
            if _same_machine(client.spec, server_spec):
                client.cpus = [c for c in allowed if c not in self.server_cpus]
                where = "pinned apart" if client.cpus else "shared with nginx"
            else:
                client.cpus = []
                where = "separate host"
            placement[client.host.name] = {"cpus": client.cpus, "placement": where}
        self.run.record_in(
            "placement", str(vcpus), {"server_cpus": self.server_cpus, "clients": placement}
        )
        self._placement = str(placement[self.clients[0].host.name]["placement"])

    def stop_server(self) -> None:
        """Stop nginx (its upstreams keep running); the next `configure` starts a fresh one.

        `runners.interleave` does it before every pair after the first: a fresh process (new
        port, new memory) turns what one process happens to cost into noise across pairs, not
        a steady offset.
        """
        if self.deployment is not None:
            self.deployment.stop_server()
        self._vcpus = None

    def max_threads(self, vcpus: int) -> int:
        """Load-generator threads per client that fit the CPUs each client has for itself."""
        self.configure(vcpus)
        return max(1, min(len(c.cpus) or int(c.facts["cores"]) for c in self.clients))

    # -- one trial --------------------------------------------------------------------------
    def url(self) -> str:
        """The URL the clients load."""
        assert self.deployment is not None and self.deployment.port is not None
        host = f"[{self.target}]" if ":" in self.target else self.target
        return (
            f"{self.plan.scenario.protocol}://{host}:{self.deployment.port}"
            f"{self.plan.scenario.path}"
        )

    def _load(
        self,
        client: _Client,
        threads: int,
        connections: int,
        seconds: int,
        record: bool,
        rate_rps: float | None = None,
    ) -> loadgen.Load:
        """What one client runs; a constant rate is split across the clients by their weights."""
        total = sum(c.weight for c in self.clients)
        return loadgen.Load(
            url=self.url(),
            threads=threads,
            connections=connections,
            duration_s=seconds,
            timeout_s=self.plan.timeout_s,
            headers=self._headers,
            http_version=self.plan.http_version,
            streams=self.plan.streams,
            rate_rps=rate_rps * client.weight / total if rate_rps is not None else None,
            cpus=tuple(client.cpus),
            record=record,
        )

    def _argv(self, client: _Client, load: loadgen.Load) -> list[str]:
        return self.generator.command(load, binary=client.binary, workdir=client.workdir)

    def _run_clients(
        self, argvs: Sequence[list[str]], seconds: int, loads: Sequence[loadgen.Load] = ()
    ) -> list[tuple[str, str, int]]:
        """Run each client's argv side by side; (stdout, stderr, exit status) per client.

        The CPU time of the run follows its output (``times``). With ``loads``, what the
        generator's `collect` asks for runs after it (outside the timing) and its output is
        appended.
        """
        limit = self._limit(seconds)

        def one(i: int) -> tuple[str, str, int]:
            return self._run_one(self.clients[i], argvs[i], limit, loads[i] if loads else None)

        if len(self.clients) == 1:
            return [one(0)]
        calls = [functools.partial(one, i) for i in range(len(self.clients))]
        return [f.result() for f in side_by_side(calls, self.hosts.distinct())]

    def _run_one(
        self, client: _Client, argv: Sequence[str], limit: int, load: loadgen.Load | None
    ) -> tuple[str, str, int]:
        """One client's (stdout, stderr, exit status); a lost connection is the client's."""
        try:
            r = client.host.run(self._wrapped(client, argv, limit), check=False, timeout=limit)
        except RunnerError as exc:  # the connection is lost: the trial judges the client
            if len(self.clients) == 1:
                raise
            return "", str(exc), LOST_EXIT
        return self._collected(client, r, load, limit)

    def _run_many(
        self, argvs: list[list[str]], seconds: int, loads: Sequence[loadgen.Load]
    ) -> _Ran:
        """Several clients from one common start, nginx sampled around them, no serial step.

        The first sample is taken during the lead to the common start, beside the clients
        waiting for it; the second as the last client ends, beside that client's parse; each
        client's output is parsed, and its histogram added to the sum, in its own thread as
        it arrives (`_take`).
        """
        assert self.deployment is not None
        deployment, clients, limit = self.deployment, list(self.clients), self._limit(seconds)
        start_s = self._common_start(argvs, loads)
        assert start_s is not None
        lock, pending = threading.Lock(), [len(clients)]
        samples: dict[str, tuple[bool, float]] = {}
        ran: dict[int, tuple[tuple[str, str, int], loadgen.Measurement | str]] = {}
        sampled_at, summed = [math.nan], dict[int, int]()

        def before() -> None:
            samples["before"] = deployment.sample()
            sampled_at[0] = time.time()

        def one(i: int) -> None:
            sampling: Future[tuple[bool, float]] | None = None
            try:
                out = self._run_one(clients[i], argvs[i], limit, loads[i])
            finally:
                with lock:
                    pending[0] -= 1
                    last = pending[0] == 0
                if last:  # every client has ended: the second sample, now
                    sampling = sampler.submit(deployment.sample)
            try:
                ran[i] = out, self._take(clients[i], out, loads[i], (summed, lock))
            finally:
                if sampling is not None:
                    samples["after"] = sampling.result()

        calls: list[Callable[[], None]] = [before]
        calls += [functools.partial(one, i) for i in range(len(clients))]
        with ThreadPoolExecutor(1) as sampler:
            for f in side_by_side(calls, self.hosts.distinct()):
                f.result()
        (alive0, cpu0), (alive1, cpu1) = samples["before"], samples["after"]
        late = window.sample_problem(sampled_at[0], start_s, seconds)
        return _Ran(
            alive0 and alive1,
            cpu0,
            cpu1,
            [ran[i][0] for i in range(len(clients))],
            start_s,
            [ran[i][1] for i in range(len(clients))],
            [late] if late else [],
            summed,
        )

    def _take(
        self,
        client: _Client,
        output: tuple[str, str, int],
        load: loadgen.Load,
        into: tuple[dict[int, int], threading.Lock],
    ) -> loadgen.Measurement | str:
        """A client's output parsed as it arrives, beside the wait for the others.

        Its histogram is encoded as it is stored and added to ``into`` (the sum of the
        clients' histograms so far, under its lock).
        """
        parsed = self._parse(client, output, load)
        if not isinstance(parsed, str):
            self._encoded[id(parsed)] = encode_histogram(sorted(parsed.histogram_us.items()))
            summed, lock = into
            with lock:
                for us, n in parsed.histogram_us.items():
                    summed[us] = summed.get(us, 0) + n
        return parsed

    def _limit(self, seconds: int) -> int:
        """Longest wait for a client's command of a ``seconds`` long run [s]."""
        return seconds + self.plan.timeout_s + 60

    def _wrapped(self, client: _Client, argv: Sequence[str], limit: int) -> list[str]:
        """``argv`` as a client runs it, under `_WRAP` (its CPU time follows its output).

        Where the host has ``timeout``, the command stops on the host itself after
        ``limit`` - 10 s [s].
        """
        if client.timeout:
            # The generator stops on its own host even if the connection to it is lost.
            argv = [client.timeout, "-k", "5", f"{limit - 10}s", *argv]
        return ["sh", "-c", _WRAP, "sh", client.workdir or ".", *argv]

    def _collected(
        self, client: _Client, r: Result, load: loadgen.Load | None, limit: int
    ) -> tuple[str, str, int]:
        """A client's (stdout, stderr, exit status), the generator's `collect` output appended.

        What `collect` asks for runs after the measured command, outside its timing.
        """
        after = self.generator.collect(load, workdir=client.workdir) if load else None
        if after:
            extra = client.host.run(after, check=False, timeout=limit)
            return r.stdout + extra.stdout, r.stderr + extra.stderr, r.exited
        return r.stdout, r.stderr, r.exited

    def _measure(
        self, argvs: Sequence[list[str]], seconds: int, loads: Sequence[loadgen.Load]
    ) -> _Ran:
        """Sample nginx, run the clients, sample again.

        With one client on the server's own connection the three are one remote command
        (`Deployment.run_sampled`); with several, the clients start together and are parsed
        as they end (`_run_many`); else the samples and the client are separate commands.
        """
        assert self.deployment is not None
        if len(self.clients) == 1 and self.clients[0].host is self.server:
            client, limit = self.clients[0], self._limit(seconds)
            (alive, cpu0), r, after = self.deployment.run_sampled(
                self._wrapped(client, argvs[0], limit), timeout=limit
            )
            if r is None:
                return _Ran(False, cpu0, cpu0, [], None)
            outputs = [self._collected(client, r, loads[0], limit)]
            alive1, cpu1 = after if after is not None else self.deployment.sample()
            return _Ran(alive and alive1, cpu0, cpu1, outputs, None)
        if len(self.clients) > 1 and all(c.offset is not None for c in self.clients):
            return self._run_many(list(argvs), seconds, loads)
        alive, cpu0 = self.deployment.sample()
        if not alive:
            return _Ran(False, cpu0, cpu0, [], None)
        outputs = self._run_clients(argvs, seconds, loads)
        alive, cpu1 = self.deployment.sample()
        return _Ran(alive, cpu0, cpu1, outputs, None)

    def trial(
        self,
        vcpus: int,
        threads: int,
        connections: int,
        *,
        duration_s: int | None = None,
        kind: str = "sweep",
        rate_rps: float | None = None,
        ready: Callable[[], object] | None = None,
    ) -> JsonObject:
        """Measure one setting; append and return its row.

        With ``rate_rps``, the load generator drives a constant rate (open loop), split
        across the clients by their weights; the trial is invalid when the achieved rate is
        under 95% of it. ``ready``, when given, is called after the warm-up and before the
        measured part starts (``runners ab`` waits there so two trials run their measured
        parts together).

        With several clients, a client that gives no result while others do is lost: the
        trial is invalid and names it, and later trials run without it. Before each later
        trial it is tried once again (`_retry_lost`), at most `runners.clients.MAX_RETRIES`
        times a run; when it answers it rejoins, with its share of a constant rate.

        Raises `RunnerError` if nginx dies or no client produces a result; the rows of
        earlier trials are already on disk.
        """
        assert self.deployment is not None and self.server is not None
        seconds = duration_s or self.plan.duration_s
        self.configure(vcpus)
        self._seq += 1
        trial_id = f"{self.run.run_id}-{self._seq:04d}"
        self._retry_lost(trial_id)
        self._read_clocks_again()
        lost = self._warm_up(trial_id, threads, connections, rate_rps)
        loads = [self._load(c, threads, connections, seconds, True, rate_rps) for c in self.clients]
        argvs = [self._argv(c, load) for c, load in zip(self.clients, loads, strict=True)]
        if ready is not None:
            ready()
        started_at = utc_now()
        ran = self._measure(argvs, seconds, loads)
        if not ran.alive:
            tail = self.deployment.error_log_tail()
            raise RunnerError(
                f"nginx on {self.server.name} exited during trial {trial_id}"
                + (f" (error.log: {tail})" if tail else "")
            )
        parsed = ran.parsed or [
            self._parse(c, out, load)
            for c, out, load in zip(self.clients, ran.outputs, loads, strict=True)
        ]
        kept, results, gone = self._results(trial_id, parsed)
        outputs, argvs = [ran.outputs[i] for i in kept], [argvs[i] for i in kept]
        measured = _Measured(
            results, outputs, [loads[i] for i in kept], ran.cpu1 - ran.cpu0, rate_rps, ran.histogram
        )
        ids = self._ids(trial_id, started_at, kind)
        row = self._row(ids, measured, vcpus, threads, connections)
        invalidate(row, [*lost, *gone, *ran.problems])
        if ran.start_s is not None:
            self._check_windows(row, measured, ran.start_s, seconds)
        self._store(row, results, argvs)
        if self.plan.cooldown_s > 0:
            time.sleep(self.plan.cooldown_s)
        return row

    def _store(
        self,
        row: JsonObject,
        results: Sequence[loadgen.Measurement],
        argvs: Sequence[list[str]],
    ) -> None:
        """Append a trial's row with each client's histogram, and record its commands."""
        encoded, self._encoded = self._encoded, {}
        self.run.append(
            row,
            {
                c.host.name: encoded.get(id(r)) or sorted(r.histogram_us.items())
                for c, r in zip(self.clients, results, strict=True)
            },
        )
        self.run.record_command(
            str(row["trial_id"]),
            {c.host.name: shlex.join(a) for c, a in zip(self.clients, argvs, strict=True)},
        )

    def _warm_up(
        self, trial_id: str, threads: int, connections: int, rate_rps: float | None
    ) -> list[str]:
        """Run the discarded warm-up; the reasons of the clients lost in it."""
        plan, gen = self.plan, self.generator
        if plan.warmup_s <= 0:
            return []
        warm = [
            self._argv(c, self._load(c, threads, connections, plan.warmup_s, False, rate_rps))
            for c in self.clients
        ]
        failed = {}
        outputs = self._run_clients(warm, plan.warmup_s)
        for i, ((out, err, code), client) in enumerate(zip(outputs, self.clients, strict=True)):
            if problem := gen.warmup_problem(out, err, code):
                failed[i] = f"{gen.name} on {client.host.name}: {problem}"
        return self._drop(trial_id, failed, "warm-up")

    def _results(
        self, trial_id: str, parsed: Sequence[loadgen.Measurement | str]
    ) -> tuple[list[int], list[loadgen.Measurement], list[str]]:
        """The clients kept, their results, why others were lost (from `_parse`'s answers)."""
        results = {i: p for i, p in enumerate(parsed) if not isinstance(p, str)}
        failed = {i: p for i, p in enumerate(parsed) if isinstance(p, str)}
        gone = self._drop(trial_id, failed, "trial")
        return sorted(results), [results[i] for i in sorted(results)], gone

    def _parse(
        self, client: _Client, output: tuple[str, str, int], load: loadgen.Load
    ) -> loadgen.Measurement | str:
        """A client's parsed output, or why it gave none (one line naming the client)."""
        gen = self.generator
        out, err, _ = output
        try:
            return gen.parse(out, load)
        except RunnerError as exc:
            detail = str(exc)
            if last := _last_words(err):
                detail = f"{detail}; {last}"
            return f"{gen.name} on {client.host.name}: {detail}"

    def _drop(self, trial_id: str, failed: dict[int, str], part: str) -> list[str]:
        """Leave the clients that failed out of this trial and the next; the trial's reasons.

        A failure of the only client, or of every client, is the trial's: it raises.
        """
        if not failed:
            return []
        if len(failed) == len(self.clients):
            raise RunnerError(next(iter(failed.values())))
        entries = [
            {
                "trial_id": trial_id,
                "host": self.clients[i].host.name,
                "reason": f"client {self.clients[i].host.name} lost in the {part}: {failed[i]}",
            }
            for i in sorted(failed)
        ]
        self.lost += [self.clients[i] for i in sorted(failed)]
        self.clients = [c for i, c in enumerate(self.clients) if i not in failed]
        self.run.record_more("lost_clients", entries)
        for entry in entries:
            self._say(f"{trial_id}: {entry['reason']}; {len(self.clients)} clients go on")
        return [str(e["reason"]) for e in entries]

    def _retry_lost(self, trial_id: str) -> None:
        """Try each lost client once more before trial ``trial_id``; rejoin those that answer.

        A client is tried at most `runners.clients.MAX_RETRIES` times a run. Each try, and
        whether the client came back, goes into ``run.json``'s ``client_retries``.
        """
        tries, back = [], []
        for client in [c for c in self.lost if c.retries < many.MAX_RETRIES]:
            client.retries += 1
            entry: dict[str, Any] = {
                "trial_id": trial_id,
                "host": client.host.name,
                "attempt": client.retries,
            }
            try:
                self._rejoin(client)
            except RunnerError as exc:
                entry.update(returned=False, reason=str(exc))
                self._say(
                    f"{trial_id}: client {client.host.name} did not come back (try "
                    f"{client.retries} of {many.MAX_RETRIES}): {exc}"
                )
            else:
                offset = client.offset.offset_s if client.offset else 0.0
                entry.update(returned=True, offset_s=round(offset, 6))
                back.append(client)
            tries.append(entry)
        if not tries:
            return
        self.lost = [c for c in self.lost if all(c is not b for b in back)]
        self.clients = sorted([*self.clients, *back], key=lambda c: c.index)
        if back and self._vcpus is not None:
            self._place_clients(self._vcpus)
        self.run.record_more("client_retries", tries)
        for entry in (e for e in tries if e["returned"]):
            self._say(
                f"{trial_id}: client {entry['host']} is back (try {entry['attempt']} of "
                f"{many.MAX_RETRIES}), clock {entry['offset_s']:+.3f} s; "
                f"{len(self.clients)} clients go on"
            )

    def _rejoin(self, client: _Client) -> None:
        """Make a lost client ready again, or raise `RunnerError` saying why it is not.

        Its connection is opened again where lost; the load generator it may have left
        running is stopped and its work folder replaced by a fresh one; its clock is read
        again and must be within a trial's length of this one's.
        """
        client.host.reconnect()
        if client.workdir:
            self._remove_workdir(client)
            if client.workdir:
                raise RunnerError(f"its work folder {client.workdir} could not be removed")
        client.offset = _clock_offset(client.host)
        many.check_offsets({client.host.name: client.offset.offset_s}, self.plan.duration_s)
        self._prepare(client)

    def _row(
        self,
        ids: Mapping[str, JsonValue],
        measured: _Measured,
        vcpus: int,
        threads: int,
        connections: int,
    ) -> JsonObject:
        """The judged row of a trial's merged results (client saturation checked)."""
        plan, gen = self.plan, self.generator
        merged = loadgen.merge(measured.results, measured.histogram)
        client_pcts, saturated = [], []
        for (out, _, _), client, res in zip(
            measured.outputs, self.clients, measured.results, strict=True
        ):
            cpu_s = times_seconds(out)
            pct = 100.0 * cpu_s / res.duration_s if res.duration_s > 0 else math.nan
            client_pcts.append(pct)
            allotted = min(threads, len(client.cpus) or int(client.facts["cores"]))
            if note := gen.saturated(pct, allotted, plan.saturation, client.host.name):
                saturated.append(note)
        return trial_row(
            ids,
            plan.scenario,
            merged,
            TrialSetting(vcpus, threads, connections, measured.rate_rps, plan.warmup_s),
            CpuUse(
                max(client_pcts) if client_pcts else math.nan,
                100.0 * measured.server_cpu_s / merged.duration_s,
                saturated,
            ),
            Judging(
                plan.sla_p99_ms,
                plan.max_error_rate,
                functools.partial(response_size_problem, plan.scenario),
            ),
        )

    def _check_windows(
        self, row: JsonObject, measured: _Measured, start_s: float, seconds: int
    ) -> None:
        """Judge and record the clients' windows; say what each client did."""
        parts = zip(measured.outputs, self.clients, measured.results, measured.loads, strict=True)
        windows = [
            window.window_of(
                c.host.name, err, c.offset or window.Offset(0.0, 0.0), r.rps, load.rate_rps
            )
            for (_, err, _), c, r, load in parts
        ]
        invalidate(row, window.window_problems(windows, start_s, seconds, measured.rate_rps))
        self._ready_s = window.ready_after(windows, self._start_set_s)
        self._recheck = set(window.off_window(windows, start_s, seconds))
        # Saved with the trial's commands (`_store`): one write of run.json per trial.
        self.run.record_windows(
            str(row["trial_id"]), start_s, [w.to_dict() for w in windows], save=False
        )
        p99 = {
            w.host: r.latency_ms.get("p99", math.nan)
            for w, r in zip(windows, measured.results, strict=True)
        }
        for line in many.client_lines(windows, p99, start_s):
            self._say(line)

    def _read_clocks_again(self) -> None:
        """Read the clock of each client whose window missed the last trial's once more.

        A client that does not answer keeps its offset (the trial then finds it lost).
        """
        for client in [c for c in self.clients if c.host.name in self._recheck]:
            with contextlib.suppress(RunnerError):
                client.offset = _clock_offset(client.host)
        self._recheck = set()

    def _common_start(self, argvs: list[list[str]], loads: Sequence[loadgen.Load]) -> float | None:
        """With several clients, make each argv wait for one common start; that start [s].

        Each client waits on its own clock (`runners.window`): the load generator itself
        where it can (`LoadGenerator.waits_for_start`), else a shell; None for one client.
        """
        offsets = [c.offset for c in self.clients]
        if len(argvs) < 2 or any(o is None for o in offsets):
            return None
        known = [o for o in offsets if o is not None]
        self._start_set_s = time.time()
        start_s = window.common_start(known, self._start_set_s, self._ready_s)
        argvs[:] = [
            window.barrier(a, start_s, o, waits=self.generator.waits_for_start(load))
            for a, o, load in zip(argvs, known, loads, strict=True)
        ]
        return start_s

    def _ids(self, trial_id: str, started_at: str, kind: str) -> JsonObject:
        """The identity and placement columns of a trial's row."""
        assert self.server is not None
        return {
            "run_id": self.run.run_id,
            "trial_id": trial_id,
            "started_at": started_at,
            "kind": kind,
            "simulated": False,
            "load_generator": self.generator.name,
            "http_version": self.plan.http_version,
            "streams": self.plan.streams,
            "server_host": self.server.name,
            "client_hosts": " ".join(c.host.name for c in self.clients),
            "clients": len(self.clients),
            "instance_label": self.plan.label,
            "arch": self.server_facts.get("arch", ""),
            "cpu_model": self.server_facts.get("cpu_model", ""),
            "server_cpus": self.server_cpus,
            "client_cpus": ";".join(",".join(map(str, c.cpus)) or "any" for c in self.clients),
            "placement": self._placement,
        }

    # -- tearing down -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop and remove everything this session started (connections stay open).

        Each step runs even if an earlier one fails (a lost connection, say). Again, it finds
        nothing left to do.
        """
        with _interrupts_deferred():
            steps: list[Callable[[], object]] = []
            if self.deployment is not None:
                steps.append(self.deployment.teardown)
            for client in [*self.clients, *self.lost]:
                if client.workdir:
                    steps.append(functools.partial(self._remove_workdir, client))
            for step in steps:
                with contextlib.suppress(Exception):
                    step()

    def _remove_workdir(self, client: _Client) -> None:
        """Stop the client's load generators (an interrupted trial's) and remove its folder."""
        done, _ = stop_leftovers(client.host, client.workdir, [])
        if done:
            self.run.removed(client.host.name, client.workdir)
            client.workdir = ""

    def _say(self, text: str) -> None:
        if self.log is not None:
            print(text, file=self.log, flush=True)


@contextlib.contextmanager
def closed_together(sessions: Sequence[Session]) -> Iterator[None]:
    """On an exception (Ctrl-C), `Session.close` each of ``sessions`` at once, side by side.

    For ``ab``: its two sessions, on connections of their own, are torn down in a thread
    each rather than one after the other; each one's own exit then finds nothing left.
    """
    try:
        yield
    except BaseException:
        with _interrupts_deferred():
            threads = [threading.Thread(target=s.close) for s in sessions]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        raise


def resolve(address: str) -> str:
    """``address`` as an IP address: a host name is resolved here (the first TCP address).

    nginx then listens on exactly that address, never on every interface.
    """
    if is_ip(address):
        return address
    try:
        infos = socket.getaddrinfo(address, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise BadInput(f"cannot resolve {address!r} to an address ({reason})") from None
    addrs = [str(i[4][0]) for i in infos]
    v4 = [a for a in addrs if ":" not in a]
    found = (v4 or addrs)[0]
    if is_wildcard(found):  # allowed only written as one, with --allow-wildcard-address
        raise BadInput(
            f"{address!r} resolves to the wildcard {found}: nginx would listen on every "
            "interface; give the server's own address"
        )
    return found


def _same_machine(a: HostSpec, b: HostSpec) -> bool:
    if a.kind in ("local", "netns") and b.kind in ("local", "netns"):
        return True
    return a.kind == b.kind == "ssh" and (a.host, a.port or 22) == (b.host, b.port or 22)


# Run wrk in the client's work folder (its first argument), then print the CPU time of the
# shell's children (wrk) with the shell's `times`. The work folder as the generator's
# current folder is what proves, to a later `cleanup`, that a process is this run's load
# generator: a run killed with SIGKILL cannot stop its clients, and cleanup then stops every
# process of this user whose current folder is a recorded client work folder.
_WRAP = f'cd "$1" || exit 125; shift; "$@"; rc=$?; echo; echo {TIMES_MARKER}; times; exit $rc'


def _last_words(stderr: str) -> str:
    """The last line of a client's standard error that is not a window stamp."""
    lines = [
        ln.strip()
        for ln in stderr.strip().splitlines()
        if ln.strip()
        and not ln.startswith((window.READY_MARKER, window.START_MARKER, window.END_MARKER))
    ]
    return lines[-1] if lines else ""


def _clock_offset(host: Host) -> window.Offset:
    """``host``'s clock against this one's (`runners.window.clock_offset`)."""
    try:
        return window.clock_offset(lambda: host.run(["date", "+%s.%N"], timeout=30).stdout)
    except ValueError as exc:
        raise RunnerError(f"cannot read the clock of {host.name}: {exc}") from None


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Let cleanup finish before a Ctrl-C, SIGTERM or SIGHUP that arrives during it acts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {sig: signal.signal(sig, lambda signum, frame: pending.append(signum)) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if pending:
        raise KeyboardInterrupt
