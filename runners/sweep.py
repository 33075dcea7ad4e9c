"""Sweeps: a plan of (vCPUs x threads x connections) trials, run on real hosts and stored.

`Session` owns the hosts and the private nginx of one run and runs one trial at a time;
`run_sweep` walks a `Plan`'s grid through a session, skipping what a resumed run already holds.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import math
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from runners import wrk
from runners.errors import RunnerError
from runners.hosts import Host, HostSpec, connect, facts, require_tools
from runners.nginx import (
    DEFAULT_FILE_BYTES,
    Deployment,
    Scenario,
    _is_ip,
    response_size_problem,
)
from runners.store import RunStore, load_trials, new_run_id, saturation_note, trial_row

DEFAULT_OUT = "data/runs"


@dataclass(frozen=True)
class Plan:
    """What to measure and where.

    Attributes
    ----------
    scenario : Scenario
        What nginx serves.
    server, clients
        Host specs: ``local``, ``netns:NAME`` or ``[user@]host[:port]``.
    vcpus, threads, connections : tuple of int
        The grid: nginx workers (one pinned CPU each), wrk threads and connections per client.
    duration_s, warmup_s : int
        Length of each trial and of the discarded warm-up before it [s] (wrk takes whole s).
    cooldown_s : float
        Pause after each trial [s].
    timeout_s : int
        wrk's socket timeout [s]; slower responses count as timeouts.
    sla_p99_ms : float
        The p99 latency a trial must meet [ms].
    max_error_rate : float
        Errors per response above which a trial is invalid.
    saturation : float
        A client using this fraction of its allotted CPUs or more is saturated.
    label : str
        Instance type or free label stored in each row (``instance_label``).
    target_address : str, optional
        Address the clients use to reach the server; derived from the hosts when omitted.
    upstream_host, upstream_address : str, optional
        Where the proxy scenarios' upstream file servers run (default: the server host) and
        the address the server reaches them at (derived when omitted).
    nginx, wrk, openssl, wrk2 : str
        Binaries on the hosts (names looked up on PATH and in the sbin folders, or paths);
        wrk2 is needed only for constant-rate trials.
    """

    scenario: Scenario = field(default_factory=Scenario)
    server: str = "local"
    clients: tuple[str, ...] = ("local",)
    vcpus: tuple[int, ...] = (1,)
    threads: tuple[int, ...] = (1,)
    connections: tuple[int, ...] = (16,)
    duration_s: int = 10
    warmup_s: int = 1
    cooldown_s: float = 1.0
    timeout_s: int = 2
    sla_p99_ms: float = 5.0
    max_error_rate: float = 0.01
    saturation: float = 0.9
    label: str = ""
    target_address: str | None = None
    upstream_host: str | None = None
    upstream_address: str | None = None
    nginx: str = "nginx"
    wrk: str = "wrk"
    openssl: str = "openssl"
    wrk2: str = "wrk2"

    def __post_init__(self) -> None:
        for name in ("vcpus", "threads", "connections"):
            values = getattr(self, name)
            if not values or any(int(v) < 1 for v in values):
                raise RunnerError(f"{name} must be a non-empty list of positive integers")
        if self.duration_s < 1 or self.warmup_s < 0 or self.timeout_s < 1:
            raise RunnerError("wrk needs a duration >= 1 s, a warm-up >= 0 s and a timeout >= 1 s")
        if self.cooldown_s < 0:
            raise RunnerError("the cooldown cannot be negative")
        if not self.clients:
            raise RunnerError("at least one client host is needed")
        specs = [str(HostSpec.parse(c)) for c in self.clients]
        if len(set(specs)) != len(specs):
            raise RunnerError(f"a client host is listed twice: {', '.join(self.clients)}")
        HostSpec.parse(self.server)
        if not self.settings():
            raise RunnerError(
                "no setting to run: every --connections value is below every --threads value "
                "(wrk needs connections >= threads)"
            )
        if not 0 < self.saturation <= 1 or not 0 <= self.max_error_rate < 1:
            raise RunnerError("saturation must be in (0, 1] and max error rate in [0, 1)")

    def settings(self) -> list[tuple[int, int, int]]:
        """The grid in run order (vCPUs outermost, so nginx restarts once per count).

        Settings with fewer connections than threads are left out (wrk refuses them).
        """
        return [
            (v, t, c) for v in self.vcpus for t in self.threads for c in self.connections if c >= t
        ]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``run.json``."""
        d = asdict(self)
        d["scenario"] = self.scenario.to_dict()
        for key in ("clients", "vcpus", "threads", "connections"):
            d[key] = list(d[key])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        """Inverse of `to_dict`."""
        d = dict(d)
        d["scenario"] = Scenario.from_dict(d["scenario"])
        for key in ("clients", "vcpus", "threads", "connections"):
            d[key] = tuple(d[key])
        return cls(**d)


def make_scenario(name: str = "static", file_bytes: int | None = None, **kw: Any) -> Scenario:
    """A `Scenario` with the scenario's default file size when none is given."""
    return Scenario(
        name, file_bytes=DEFAULT_FILE_BYTES[name] if file_bytes is None else file_bytes, **kw
    )


@dataclass(frozen=True)
class Access:
    """How to reach SSH hosts (not part of what is measured)."""

    accept_new_host_keys: bool = False
    ssh_config: str | None = None


def _same_machine(a: HostSpec, b: HostSpec) -> bool:
    if a.kind in ("local", "netns") and b.kind in ("local", "netns"):
        return True
    return a.kind == b.kind == "ssh" and (a.host, a.port or 22) == (b.host, b.port or 22)


def _is_loopback(addr: str) -> bool:
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return addr == "localhost"


_TIMES_MARKER = "NGINX_SIZING_TIMES"
# Run wrk, then print the CPU time of the shell's children (wrk) with the shell's `times`.
_WRAP = f'"$@"; rc=$?; echo; echo {_TIMES_MARKER}; times; exit $rc'


def _cpu_seconds_from_times(text: str) -> float:
    lines = text.split(_TIMES_MARKER, 1)[-1].strip().splitlines()
    if len(lines) < 2:
        return math.nan
    total = 0.0
    for part in lines[1].split():
        minutes, _, seconds = part.rstrip("s").partition("m")
        try:
            total += float(minutes) * 60 + float(seconds)
        except ValueError:
            return math.nan
    return total


@dataclass
class _Client:
    host: Host
    spec: HostSpec
    facts: dict[str, Any]
    wrk: str
    script: str
    script_dir: str | None = None
    wrk2: str = ""
    timeout: str = ""
    cpus: list[int] = field(default_factory=list)


class Session:
    """The hosts and private nginx of one run; `trial` measures one setting.

    Use as a context manager: entering connects, checks tools, records host facts and
    deploys; leaving stops and removes everything it started on every host.
    """

    def __init__(
        self,
        plan: Plan,
        store: RunStore,
        *,
        access: Access | None = None,
        log: IO[str] | None = None,
        rate: bool = False,
    ) -> None:
        self.plan, self.store = plan, store
        self.rate = rate
        self.access = access or Access()
        self.log = log
        self.server: Host | None = None
        self.server_facts: dict[str, Any] = {}
        self.clients: list[_Client] = []
        self.deployment: Deployment | None = None
        self.target = ""
        self.server_cpus: list[int] = []
        self._vcpus: int | None = None
        self._seq = len(store.rows())
        self._extra_hosts: list[Host] = []

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

    def _connect(self, spec: str) -> Host:
        return connect(
            spec,
            accept_new_host_keys=self.access.accept_new_host_keys,
            ssh_config=self.access.ssh_config,
        )

    def _open(self) -> None:
        plan = self.plan
        server_spec = HostSpec.parse(plan.server)
        self.server = self._connect(plan.server)
        server_tools = [plan.nginx, "taskset"]
        if plan.scenario.protocol == "https":
            server_tools.append(plan.openssl)
        hosts: list[tuple[str, HostSpec, Host]] = []
        for c in plan.clients:
            spec = HostSpec.parse(c)
            host = self.server if str(spec) == str(server_spec) else self._connect(c)
            hosts.append((c, spec, host))
        client_tools = [plan.wrk, plan.wrk2] if self.rate else [plan.wrk]
        optional = ["taskset", "timeout"]
        shares = any(host is self.server for _, _, host in hosts)
        self.server_facts = facts(
            self.server,
            [*server_tools, *client_tools, "timeout"] if shares else server_tools,
        )
        found = {self.server.name: {t: self.server_facts["tools"][t] for t in server_tools}}
        client_facts = []
        for _, _spec, host in hosts:
            info = (
                self.server_facts
                if host is self.server
                else facts(host, [*client_tools, *optional])
            )
            client_facts.append(info)
            for tool in client_tools:
                found.setdefault(host.name, {})[tool] = info["tools"][tool]
        require_tools(found)
        for (_, spec, host), info in zip(hosts, client_facts, strict=True):
            self.clients.append(
                _Client(
                    host,
                    spec,
                    info,
                    info["tools"][plan.wrk],
                    "",
                    wrk2=info["tools"].get(plan.wrk2, "") if self.rate else "",
                    timeout=info["tools"].get("timeout", ""),
                )
            )
        self.target = self._target_address(server_spec)
        too_many = [v for v in plan.vcpus if v > len(self.server_facts["cpus_allowed"])]
        if too_many:
            raise RunnerError(
                f"--vcpus {max(too_many)}: {self.server.name} has only "
                f"{len(self.server_facts['cpus_allowed'])} CPUs for nginx"
            )
        self.store.meta["hosts"] = {
            "server": self.server_facts,
            "clients": client_facts,
            "target_address": self.target,
        }
        self.store.save_meta()
        self._say(
            f"server {self.server.name}: {self.server_facts.get('cpu_model')}, "
            f"{self.server_facts['cores']} CPUs; target {self.target}"
        )
        up_host, up_address, up_facts = self._upstream(server_spec, hosts)
        self.deployment = Deployment(
            self.server,
            plan.scenario,
            listen=self.target if _is_ip(self.target) else "0.0.0.0",
            nginx=self.server_facts["tools"][plan.nginx],
            openssl=self.server_facts["tools"].get(plan.openssl, plan.openssl),
            run_as_root=self.server_facts.get("user") == "root",
            clk_tck=self.server_facts["clk_tck"],
            upstream_host=up_host,
            upstream_address=up_address,
            upstream_nginx=up_facts["tools"].get(plan.nginx) if up_facts else None,
            upstream_as_root=up_facts.get("user") == "root" if up_facts else None,
            nginx_version=self.server_facts.get("nginx_version", ""),
            upstream_nginx_version=up_facts.get("nginx_version") if up_facts else None,
        )
        self.deployment.setup()
        if self.deployment.upstream_conf:
            self.store.meta["upstream_conf"] = self.deployment.upstream_conf
        for client in self.clients:
            if client.spec.kind == "ssh":
                out = client.host.sh(
                    'd=$(mktemp -d "${TMPDIR:-/tmp}/nginx-sizing-wrk.XXXXXXXX") && '
                    'printf "%s" "$1" > "$d/report.lua" && echo "$d"',
                    wrk.REPORTER.read_text(),
                    what="copying the wrk script",
                )
                client.script_dir = out.stdout.strip()
                client.script = f"{client.script_dir}/report.lua"
            else:
                client.script = str(wrk.REPORTER)

    def _upstream(
        self, server_spec: HostSpec, hosts: list[tuple[str, HostSpec, Host]]
    ) -> tuple[Host | None, str, dict[str, Any]]:
        """The upstream host (None: the server host), its address, and its facts."""
        plan = self.plan
        if not plan.scenario.proxied or not plan.upstream_host:
            return None, "127.0.0.1", {}
        spec = HostSpec.parse(plan.upstream_host)
        if str(spec) == str(server_spec):
            return None, "127.0.0.1", {}
        host = next((h for _, sp, h in hosts if str(sp) == str(spec)), None)
        if host is None:
            host = self._connect(plan.upstream_host)
            self._extra_hosts.append(host)
        info = facts(host, [plan.nginx])
        require_tools({host.name: {plan.nginx: info["tools"][plan.nginx]}})
        self.store.meta.setdefault("hosts", {})["upstream"] = info
        address = plan.upstream_address or self._address_of(spec, host, "the upstream host")
        self.store.meta["hosts"]["upstream_address"] = address
        return host, address, info

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
        if self.plan.target_address:
            return self.plan.target_address
        if all(c.spec == server_spec for c in self.clients) or (
            server_spec.kind == "local" and all(c.spec.kind == "local" for c in self.clients)
        ):
            return "127.0.0.1"
        assert self.server is not None
        return self._address_of(server_spec, self.server, "the clients")

    def configure(self, vcpus: int) -> None:
        """Run nginx with ``vcpus`` pinned workers, and place each client's wrk."""
        assert self.deployment is not None
        if self._vcpus == vcpus:
            return
        allowed = self.server_facts["cpus_allowed"]
        self.server_cpus = allowed[:vcpus]
        server_spec = HostSpec.parse(self.plan.server)
        conf = self.deployment.start(self.server_cpus)
        placement = {}
        for client in self.clients:
            if _same_machine(client.spec, server_spec):
                client.cpus = [c for c in allowed if c not in self.server_cpus]
                where = "pinned apart" if client.cpus else "shared with nginx"
            else:
                client.cpus = []
                where = "separate host"
            placement[client.host.name] = {"cpus": client.cpus, "placement": where}
        self.store.meta.setdefault("nginx_conf", {})[str(vcpus)] = conf
        self.store.meta.setdefault("placement", {})[str(vcpus)] = {
            "server_cpus": self.server_cpus,
            "clients": placement,
        }
        self.store.save_meta()
        self._vcpus = vcpus

    def max_threads(self, vcpus: int) -> int:
        """Threads per wrk client that fit the CPUs each client has for itself."""
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

    def _argv(
        self,
        client: _Client,
        threads: int,
        connections: int,
        seconds: int,
        script: bool,
        rate_rps: float | None = None,
    ) -> list[str]:
        # wrk2 (constant rate, split across clients) prints its own spectrum: no reporter.
        rate = rate_rps is not None
        return wrk.command(
            self.url(),
            threads=threads,
            connections=connections,
            duration_s=seconds,
            timeout_s=self.plan.timeout_s,
            headers=self.plan.scenario.headers,
            script=client.script if script and not rate else None,
            cpus=client.cpus,
            wrk=client.wrk2 if rate else client.wrk,
            rate_rps=rate_rps / len(self.clients) if rate_rps is not None else None,
        )

    def _run_clients(self, argvs: Sequence[list[str]], seconds: int) -> list[tuple[str, str, int]]:
        limit = seconds + self.plan.timeout_s + 60

        def one(pair: tuple[_Client, list[str]]) -> tuple[str, str, int]:
            client, argv = pair
            if client.timeout:
                # wrk stops on its own host even if the connection to it is lost.
                argv = [client.timeout, "-k", "5", f"{limit - 10}s", *argv]
            r = client.host.sh(_WRAP, *argv, check=False, timeout=limit)
            return r.stdout, r.stderr, r.exited

        if len(self.clients) == 1:
            return [one((self.clients[0], argvs[0]))]
        with ThreadPoolExecutor(len(self.clients)) as pool:
            return list(pool.map(one, zip(self.clients, argvs, strict=True)))

    def trial(
        self,
        vcpus: int,
        threads: int,
        connections: int,
        *,
        duration_s: int | None = None,
        kind: str = "sweep",
        rate_rps: float | None = None,
    ) -> dict[str, Any]:
        """Measure one setting; append and return its row.

        With ``rate_rps``, wrk2 drives a constant rate (open loop) and its percentile spectrum
        is parsed; the trial is invalid when the achieved rate is under 95% of it.

        Raises `RunnerError` if nginx dies or any client produces no result; the rows of
        earlier trials are already on disk.
        """
        assert self.deployment is not None and self.server is not None
        plan = self.plan
        seconds = duration_s or plan.duration_s
        self.configure(vcpus)
        self._seq += 1
        trial_id = f"{self.store.run_id}-{self._seq:04d}"
        if plan.warmup_s > 0:
            warm = [
                self._argv(c, threads, connections, plan.warmup_s, False, rate_rps)
                for c in self.clients
            ]
            for (out, err, code), client in zip(
                self._run_clients(warm, plan.warmup_s), self.clients, strict=True
            ):
                if code != 0 and "requests in" not in out:
                    raise RunnerError(
                        f"wrk on {client.host.name}: "
                        + wrk.no_result_message(err or out).removeprefix("wrk gave no result: ")
                    )
        argvs = [self._argv(c, threads, connections, seconds, True, rate_rps) for c in self.clients]
        started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        alive, cpu0 = self.deployment.sample()
        if alive:
            outputs = self._run_clients(argvs, seconds)
            alive, cpu1 = self.deployment.sample()
        if not alive:
            tail = self.deployment.error_log_tail()
            raise RunnerError(
                f"nginx on {self.server.name} exited during trial {trial_id}"
                + (f" (error.log: {tail})" if tail else "")
            )
        results = []
        for (out, err, _), client in zip(outputs, self.clients, strict=True):
            try:
                results.append(wrk.parse_wrk2(out) if rate_rps else wrk.parse_json(out))
            except RunnerError as exc:
                detail = str(exc) if "Usage" not in out else "wrk rejected its arguments"
                if err.strip():
                    detail = f"{detail}; {err.strip().splitlines()[-1]}"
                raise RunnerError(f"wrk on {client.host.name}: {detail}") from None
        merged = wrk.merge(results)
        client_pcts, saturated = [], []
        for (out, _, _), client, res in zip(outputs, self.clients, results, strict=True):
            cpu_s = _cpu_seconds_from_times(out)
            pct = 100.0 * cpu_s / res.duration_s if res.duration_s > 0 else math.nan
            client_pcts.append(pct)
            allotted = min(threads, len(client.cpus) or int(client.facts["cores"]))
            if note := saturation_note(pct, allotted, plan.saturation, client.host.name):
                saturated.append(note)
        row = trial_row(
            self._ids(trial_id, started_at, kind, vcpus),
            plan.scenario,
            merged,
            vcpus=vcpus,
            threads=threads,
            connections=connections,
            rate_rps=rate_rps,
            warmup_s=plan.warmup_s,
            client_cpu_pct=max(client_pcts) if client_pcts else math.nan,
            server_cpu_pct=100.0 * (cpu1 - cpu0) / merged.duration_s,
            sla_p99_ms=plan.sla_p99_ms,
            max_error_rate=plan.max_error_rate,
            saturated=saturated,
            size_problem=functools.partial(response_size_problem, plan.scenario),
        )
        self.store.append(
            row,
            {
                c.host.name: sorted(r.histogram_us.items())
                for c, r in zip(self.clients, results, strict=True)
            },
        )
        self.store.meta.setdefault("commands", []).append(
            {
                "trial_id": trial_id,
                "hosts": {
                    c.host.name: shlex.join(a) for c, a in zip(self.clients, argvs, strict=True)
                },
            }
        )
        self.store.save_meta()
        if plan.cooldown_s > 0:
            time.sleep(plan.cooldown_s)
        return row

    def _ids(self, trial_id: str, started_at: str, kind: str, vcpus: int) -> dict[str, Any]:
        """The identity and placement columns of a trial's row."""
        assert self.server is not None
        return {
            "run_id": self.store.run_id,
            "trial_id": trial_id,
            "started_at": started_at,
            "kind": kind,
            "simulated": False,
            "server_host": self.server.name,
            "client_hosts": " ".join(c.host.name for c in self.clients),
            "clients": len(self.clients),
            "instance_label": self.plan.label,
            "arch": self.server_facts.get("arch", ""),
            "cpu_model": self.server_facts.get("cpu_model", ""),
            "server_cpus": self.server_cpus,
            "client_cpus": ";".join(",".join(map(str, c.cpus)) or "any" for c in self.clients),
            "placement": self.store.meta["placement"][str(vcpus)]["clients"][
                self.clients[0].host.name
            ]["placement"],
        }

    # -- tearing down -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop and remove everything this session started; close connections."""
        with _interrupts_deferred():
            # Each step runs even if an earlier one fails (a lost connection, say).
            steps: list[Callable[[], object]] = []
            if self.deployment is not None:
                steps.append(self.deployment.teardown)
            for client in self.clients:
                if client.script_dir:
                    steps.append(
                        functools.partial(
                            client.host.run, ["rm", "-rf", "--", client.script_dir], check=False
                        )
                    )
            hosts = {id(c.host): c.host for c in self.clients}
            hosts.update({id(h): h for h in self._extra_hosts})
            if self.server is not None:
                hosts[id(self.server)] = self.server
            steps += [h.close for h in hosts.values()]
            for step in steps:
                with contextlib.suppress(Exception):
                    step()

    def _say(self, text: str) -> None:
        if self.log is not None:
            print(text, file=self.log, flush=True)


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


class Progress:
    """A progress line with an ETA on a terminal, one line per trial otherwise."""

    def __init__(self, total: int, seconds_each: float, stream: IO[str] | None) -> None:
        self.total, self.seconds_each, self.stream = total, seconds_each, stream
        self.done = 0
        self.start = time.monotonic()
        self.tty = bool(stream and stream.isatty())

    def update(self, row: dict[str, Any]) -> None:
        """Record one finished trial and redraw."""
        self.done += 1
        if self.stream is None:
            return
        elapsed = time.monotonic() - self.start
        left = self.total - self.done
        eta = elapsed / self.done * left if self.done else left * self.seconds_each
        width = 24
        filled = round(width * self.done / self.total) if self.total else width
        status = "ok" if row.get("valid") else "invalid"
        text = (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"v{row['vcpus']} t{row['threads']} c{row['connections']}: "
            f"{row['rps']:,.0f} rps, p99 {row['latency_p99_ms']:.2f} ms, {status}; "
            f"ETA {int(eta // 60)}:{int(eta % 60):02d}"
        )
        if self.tty:
            end = "\n" if left == 0 else ""
            self.stream.write("\r\033[K" + text + end)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


@contextlib.contextmanager
def target_for(
    plan: Plan,
    store: RunStore,
    *,
    sim: Any = None,
    access: Access | None = None,
    log: IO[str] | None = None,
    rate: bool = False,
    sla_p99_ms: float | None = None,
) -> Iterator[Any]:
    """What trials run on: the simulated server, or a `Session` on the plan's hosts."""
    if sim is not None:
        from runners.sim import SimTarget

        yield SimTarget(
            sim,
            store,
            plan.scenario,
            plan.sla_p99_ms if sla_p99_ms is None else sla_p99_ms,
            plan.label,
            plan.max_error_rate,
            plan.saturation,
        )
        return
    with Session(plan, store, access=access, log=log, rate=rate) as session:
        yield session


def open_store(
    plan: Plan,
    out: str | os.PathLike[str],
    resume: str | None,
    sim: Any = None,
    extra: Mapping[str, Any] | None = None,
) -> tuple[Plan, RunStore]:
    """A new run folder for ``plan``, or the run ``resume``, whose plan must match.

    ``extra`` holds more of what defines the run (a search's options); it is stored in
    ``run.json`` and must match too on resume.
    """
    extra = json.loads(json.dumps(dict(extra or {})))
    if resume is None:
        meta = {
            "run_id": new_run_id(plan.label or ("sim" if sim is not None else "")),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "status": "running",
            "simulated": sim is not None,
            "plan": plan.to_dict(),
            "sim": sim.to_dict() if sim is not None else None,
            **extra,
        }
        return plan, RunStore.create(out, meta)
    store = RunStore.open(out, resume)
    if bool(store.meta.get("simulated")) != (sim is not None):
        held = "simulated" if store.meta.get("simulated") else "measured"
        way = "with --server sim" if held == "simulated" else "against real hosts"
        raise RunnerError(f"run {resume} holds {held} trials; resume it {way}")
    if sim is not None and store.meta.get("sim") != json.loads(json.dumps(sim.to_dict())):
        raise RunnerError(
            f"run {resume} simulated another server (--seed/--sim-*); resume it with the same "
            "options"
        )
    stored = Plan.from_dict(store.meta["plan"])
    if stored != plan or any(store.meta.get(k) != v for k, v in extra.items()):
        a, b = stored.to_dict(), plan.to_dict()
        diff = [k for k in a if a[k] != b.get(k)]
        diff += [k for k, v in extra.items() if store.meta.get(k) != v]
        raise RunnerError(
            f"run {resume} was planned with other settings ({', '.join(diff)}); resume it "
            "with the same options, or start a new run"
        )
    return stored, store


def run_sweep(
    plan: Plan,
    out: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    resume: str | None = None,
    access: Access | None = None,
    progress: IO[str] | None = sys.stderr,
    sim: Any = None,
) -> Any:
    """Run every setting of ``plan`` not already in the run; return its trials as a DataFrame.

    Parameters
    ----------
    plan : Plan
        What to measure.
    out : path
        Parent folder of run folders; the run lands in ``out/<run_id>/``.
    resume : str, optional
        Run id to continue: settings already measured are skipped.
    access : Access, optional
        SSH options.
    progress : file, optional
        Where the progress line goes (None for silence).
    sim : runners.sim.SimServer, optional
        Sweep the simulated server instead of real hosts (rows say ``simulated=true``).
    """
    plan, store = open_store(plan, out, resume, sim)
    done = {
        (int(r["vcpus"]), int(r["threads"]), int(r["connections"]))
        for r in store.rows()
        if r["kind"] == "sweep"
    }
    todo = [s for s in plan.settings() if s not in done]
    bar = Progress(len(todo), plan.warmup_s + plan.duration_s + plan.cooldown_s, progress)
    with store.recording_status():
        if todo:
            with target_for(plan, store, sim=sim, access=access, log=progress) as target:
                for v, t, c in todo:
                    bar.update(target.trial(v, t, c, duration_s=plan.duration_s))
    return load_trials(store.path)
