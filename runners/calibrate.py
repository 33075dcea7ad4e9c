"""Calibration: a fixed campaign on one host that measures what a request costs on its CPU.

Each *setting* (a scenario, protocol, body size, key, worker count) isolates one or two terms
of the cost model in `trialtable.profile`. A setting runs as its own sweep run (one trial), the
settings interleaved round after round (``repeats`` rounds), so slow drifts of a busy machine
spread over every setting instead of biasing one. What is measured is the CPU time of the
server's nginx per request (its workers' and master's utime + stime over the trial, divided by
the requests served), at a load under the p99 SLA; the coefficients are then fitted jointly by
weighted least squares (relative errors) with standard errors, and fitted again per round to
give each coefficient's spread across repeats.

The campaign lives in ``OUT/<campaign_id>/``: ``campaign.json`` (options), ``runs/`` (one
sweep run per setting and round, each a normal run folder) and ``profile.json``. An interrupted
campaign resumes with ``resume=<campaign_id>``: settings whose run holds a trial are not run
again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from runners import loadgen
from runners.cli_options import host_options
from runners.errors import RunnerError
from runners.hosts import Host, HostSpec, connect, facts, parse_cpu_list
from runners.nginx import Scenario
from runners.store import load_trials
from runners.sweep import Access, Plan, run_sweep
from trialtable.profile import (
    COEFFICIENTS,
    SIGNED,
    Coefficient,
    Profile,
    Scaling,
    write_profile,
)
from trialtable.values import format_option, int_at_least, parse_duration_ms

KB = 1024
GZIP_BYTES = 16 * KB
# Efficiency above this across worker counts is implausible (superlinear): warned, not used.
SUPERLINEAR = 1.15
# A worker that ran less than this share of the trial's wall time did not have its CPU alone
# (a competing process, steal) or was not loaded: flagged.
MIN_WORKER_SHARE = 0.75


@dataclass(frozen=True)
class Setting:
    """One measured configuration of the campaign.

    Attributes
    ----------
    name : str
        Stable name (also the key of the profile's ``configs``).
    scenario : Scenario
        What nginx serves.
    connections : int
        Connections per worker of the first round; later rounds halve them after a p99 over
        the SLA and double them when the worker was idle and p99 far under it.
    vcpus : int
        nginx workers (one pinned CPU each).
    """

    name: str
    scenario: Scenario
    connections: int
    vcpus: int = 1


def _static(name: str, protocol: str, size: int, conns: int, **kw: Any) -> Setting:
    return Setting(name, Scenario("static", protocol=protocol, file_bytes=size, **kw), conns)


def fit_settings() -> list[Setting]:
    """The settings that isolate the coefficients (one worker each).

    The starting connection counts are chosen so a closed loop stays under a few ms of p99
    (about ``SLA / cost per request``); they adapt per round.
    """
    return [
        _static("static_http_0B", "http", 0, 16),
        _static("static_http_1KB", "http", KB, 16),
        _static("static_http_64KB", "http", 64 * KB, 8),
        _static("static_https_0B", "https", 0, 16),
        _static("static_https_1KB", "https", KB, 16),
        _static("static_https_64KB", "https", 64 * KB, 8),
        Setting("cps_http", Scenario("cps", protocol="http", file_bytes=0), 8),
        Setting("cps_https_ecdsa", Scenario("cps", protocol="https", file_bytes=0), 4),
        Setting("cps_https_rsa", Scenario("cps", protocol="https", file_bytes=0, tls_key="rsa"), 2),
        # wrk resumes its TLS session on every reconnect when nginx allows it (one full
        # handshake per connection slot, then resumed ones): the resumed handshake's cost.
        Setting(
            "cps_https_resumed",
            Scenario("cps", protocol="https", file_bytes=0, tls_resumption=True),
            8,
        ),
        _static("gzip_http_16KB", "http", GZIP_BYTES, 4, gzip=True),
        Setting("reverse_proxy_http_1KB", Scenario("reverse_proxy", file_bytes=KB), 8),
        Setting("api_gateway_http_1KB", Scenario("api_gateway", file_bytes=KB), 8),
    ]


SCALING_BASE = "static_http_1KB"


def scaling_settings(cpus: int) -> list[Setting]:
    """``static_http_1KB`` at 2, 4, 8, ... workers up to ``cpus`` (at most 4 counts)."""
    base = next(s for s in fit_settings() if s.name == SCALING_BASE)
    counts: list[int] = []
    n = 2
    while n <= cpus and len(counts) < 4:
        counts.append(n)
        n *= 2
    if cpus > 1 and cpus not in counts and len(counts) < 4:
        counts.append(cpus)
    return [replace(base, name=f"scaling_{n}_workers", vcpus=n) for n in counts]


@dataclass(frozen=True)
class CalibrateOptions:
    """What a campaign runs and where.

    Attributes
    ----------
    server, clients : host specs
        ``local``, ``netns:NAME`` or ``[user@]host[:port]``.
    quick : bool
        Short trials and 2 rounds (about 2-3 minutes on a 2-vCPU host).
    repeats : int, optional
        Rounds (each setting once per round); default 3, or 2 with ``quick``.
    sla_p99_ms : float
        p99 each setting is measured under [ms].
    load_generator : str
        A closed-loop load generator of `runners.loadgen` (``wrk`` or ``h2load``, HTTP/1.1);
        with one that cannot run a setting (h2load does not reconnect, so no ``cps_*``), the
        campaign leaves those settings out and says so.
    only : tuple of str
        Run only these settings (default: all).
    max_workers : int, optional
        Most workers of the scaling settings (default: every CPU of the server).
    target_address : str, optional
        Address the clients use (derived when omitted).
    nginx, wrk, openssl : str
        Binaries on the hosts.
    """

    server: str = "local"
    clients: tuple[str, ...] = ("local",)
    quick: bool = False
    repeats: int | None = None
    sla_p99_ms: float = 5.0
    load_generator: str = "wrk"
    only: tuple[str, ...] = ()
    max_workers: int | None = None
    target_address: str | None = None
    nginx: str = "nginx"
    wrk: str = "wrk"
    openssl: str = "openssl"
    h2load: str = "h2load"

    def __post_init__(self) -> None:
        if self.repeats is not None and not 1 <= self.repeats <= 20:
            raise RunnerError(f"--repeats must be between 1 and 20 (got {self.repeats})")
        if not self.sla_p99_ms > 0 or not math.isfinite(self.sla_p99_ms):
            raise RunnerError("--sla-p99 must be a positive duration")
        # The campaign loads a closed loop over HTTP/1.1 (raises UnsupportedLoad otherwise).
        loadgen.get(self.load_generator).check("1.1", loadgen.CLOSED)
        known = {s.name for s in fit_settings()}
        unknown = [n for n in self.only if n not in known and not n.startswith("scaling_")]
        if unknown:
            raise RunnerError(
                f"unknown setting {unknown[0]!r}; known: {', '.join(sorted(known))}, "
                "scaling_N_workers"
            )
        if self.max_workers is not None and self.max_workers < 1:
            raise RunnerError("--max-workers must be at least 1")
        HostSpec.parse(self.server)
        for c in self.clients:
            HostSpec.parse(c)

    @property
    def rounds(self) -> int:
        """Rounds to run."""
        return self.repeats if self.repeats is not None else (2 if self.quick else 3)

    @property
    def duration_s(self) -> int:
        """Length of each trial [s]."""
        return 1 if self.quick else 3

    @property
    def warmup_s(self) -> int:
        """Discarded warm-up before each trial [s]."""
        return 1

    @property
    def cooldown_s(self) -> float:
        """Pause after each trial [s]."""
        return 0.2 if self.quick else 0.5

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``campaign.json``."""
        return {
            "server": self.server,
            "clients": list(self.clients),
            "quick": self.quick,
            "repeats": self.rounds,
            "sla_p99_ms": self.sla_p99_ms,
            "load_generator": self.load_generator,
            "only": list(self.only),
            "max_workers": self.max_workers,
            "target_address": self.target_address,
            "nginx": self.nginx,
            "wrk": self.wrk,
            "openssl": self.openssl,
            "h2load": self.h2load,
        }

    @property
    def client_binary(self) -> str:
        """The load generator's binary (name or path) on the clients."""
        return self.h2load if self.load_generator == "h2load" else self.wrk


@dataclass
class _HostInfo:
    facts: dict[str, Any]
    threads_per_core: int | None
    flags: list[str]
    cpus: list[int]


_EXTRA_FACTS = r"""
c=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
first=${c%%[-,]*}
t=/sys/devices/system/cpu/cpu${first:-0}/topology/thread_siblings_list
echo "siblings=$(cat "$t" 2>/dev/null)"
f=$(sed -n 's/^flags[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
[ -n "$f" ] || f=$(sed -n 's/^Features[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
echo "flags=$f"
for k in vendor_id "cpu family" model stepping; do
  v=$(sed -n "s/^$k[[:space:]]*:[[:space:]]*//p" /proc/cpuinfo | head -n 1)
  echo "cpuinfo.$k=$v"
done
h=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor:[[:space:]]*//p')
echo "hypervisor=$h"
echo "loadavg=$(cat /proc/loadavg 2>/dev/null)"
"""


def _host_info(host: Host, tools: Sequence[str]) -> _HostInfo:
    info = facts(host, tools)
    out = host.sh(_EXTRA_FACTS, what="reading CPU topology", check=False, timeout=30)
    kv = dict(line.partition("=")[::2] for line in out.stdout.splitlines() if "=" in line)
    siblings = parse_cpu_list(kv.get("siblings", "").strip()) if kv.get("siblings") else []
    names = {
        "vendor_id": "cpu_vendor",
        "cpu family": "cpu_family",
        "model": "cpu_model_number",
        "stepping": "cpu_stepping",
    }
    for key, name in names.items():
        if kv.get(f"cpuinfo.{key}"):
            info[name] = kv[f"cpuinfo.{key}"]
    if kv.get("hypervisor"):
        info["hypervisor"] = kv["hypervisor"]
    info["loadavg_at_start"] = kv.get("loadavg", "")
    return _HostInfo(
        info,
        len(siblings) or None,
        kv.get("flags", "").split(),
        list(info["cpus_allowed"]),
    )


def _cpu_times(host: Host) -> list[int]:
    """The aggregate ``cpu`` line of /proc/stat [ticks].

    user, nice, system, idle, iowait, irq, softirq, steal.
    """
    out = host.run(["head", "-n", "1", "/proc/stat"], check=False)
    parts = out.stdout.split()
    if not parts or parts[0] != "cpu":
        return []
    return [int(x) for x in parts[1:9]]


def _steal_share(before: list[int], after: list[int]) -> float:
    if len(before) < 8 or len(after) < 8:
        return math.nan
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(delta)
    return delta[7] / total if total > 0 else math.nan


# -- the campaign ---------------------------------------------------------------------------


def _label(setting: str, round_: int) -> str:
    return f"calibrate-{setting}-r{round_ + 1}"


class Campaign:
    """The folder and state of one calibration campaign."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path, self.meta = path, meta
        self._cache: dict[str, list[dict[str, Any]]] = {}

    @property
    def runs_dir(self) -> Path:
        """Where the sweep runs of the settings land."""
        return self.path / "runs"

    @property
    def campaign_id(self) -> str:
        """The campaign's id (its folder name)."""
        return str(self.meta["campaign_id"])

    @classmethod
    def create(cls, out: str | os.PathLike[str], options: CalibrateOptions) -> Campaign:
        """A new campaign folder under ``out``."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        cid = f"{stamp}-calibrate-{secrets.token_hex(2)}"
        path = Path(out) / cid
        try:
            (path / "runs").mkdir(parents=True)
        except OSError as exc:
            raise RunnerError(f"cannot create the campaign folder {path}: {exc}") from None
        meta = {
            "campaign_id": cid,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "options": options.to_dict(),
            "status": "running",
        }
        c = cls(path, meta)
        c.save()
        return c

    @classmethod
    def open(cls, out: str | os.PathLike[str], cid: str, options: CalibrateOptions) -> Campaign:
        """Reopen campaign ``cid`` to resume it; its options must match."""
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", cid):
            raise RunnerError(f"campaign id {cid!r} is not a plain folder name")
        path = Path(out) / cid
        try:
            meta = json.loads((path / "campaign.json").read_text())
        except FileNotFoundError:
            raise RunnerError(f"no campaign {cid!r} in {out} (no campaign.json)") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise RunnerError(f"cannot read {path / 'campaign.json'}: {exc}") from None
        stored = meta.get("options", {})
        diff = [k for k, v in options.to_dict().items() if stored.get(k) != v]
        if diff:
            raise RunnerError(
                f"campaign {cid} was run with other options ({', '.join(diff)}); resume it "
                "with the same options"
            )
        return cls(path, meta)

    def save(self) -> None:
        """Write ``campaign.json`` atomically."""
        tmp = self.path / "campaign.json.tmp"
        tmp.write_text(json.dumps(self.meta, indent=1) + "\n")
        os.replace(tmp, self.path / "campaign.json")

    def trials(self) -> list[dict[str, Any]]:
        """Every stored trial of the campaign's runs, as dicts (empty runs are skipped).

        A run with a trial is complete (one trial per run), so it is read once.
        """
        rows: list[dict[str, Any]] = []
        if not self.runs_dir.is_dir():
            return rows
        for run in sorted(self.runs_dir.iterdir()):
            if run.name not in self._cache:
                if not (run / "trials.csv").is_file():
                    continue
                found = load_trials(run).to_dict("records")
                if not found:
                    continue
                self._cache[run.name] = found
            rows.extend(self._cache[run.name])
        return rows


@dataclass
class _Step:
    setting: Setting
    round_: int


def _connections(setting: Setting, done: list[dict[str, Any]], sla_ms: float) -> int:
    """Connections per worker for the next round, from this setting's earlier trials."""
    c = setting.connections
    for row in done:
        c = int(row["connections"]) // max(1, setting.vcpus)
        p99 = float(row["latency_p99_ms"])
        share = float(row["server_cpu_pct"]) / (100.0 * setting.vcpus)
        if not math.isfinite(p99) or p99 > sla_ms:
            c = max(1, c // 2)
        elif p99 < sla_ms / 4 and share < MIN_WORKER_SHARE and c < 64:
            c *= 2
    return c


def _threads(client_cpus: int, vcpus: int, same: bool) -> int:
    """Threads per wrk: the client CPUs the workers leave (at least 1, at most 2 per worker)."""
    free = client_cpus - vcpus if same else client_cpus
    return max(1, min(free, 2 * vcpus, 8))


def run_calibrate(
    options: CalibrateOptions,
    out: str | os.PathLike[str],
    *,
    resume: str | None = None,
    access: Access | None = None,
    progress: IO[str] | None = sys.stderr,
    extra_settings: Sequence[Setting] = (),
) -> tuple[Path, Profile]:
    """Run (or resume) a calibration campaign and write its profile.

    Parameters
    ----------
    options : CalibrateOptions
        What to run, where.
    out : path
        Parent folder of campaign folders.
    resume : str, optional
        Campaign id to continue.
    access : Access, optional
        SSH options.
    progress : file, optional
        Where progress lines with an ETA go (None for silence).
    extra_settings : sequence of Setting
        More settings measured in the same interleaved rounds but not fitted (held out, to
        check the profile's predictions against; see benchmarks/bench_calibrate.py).

    Returns
    -------
    (path of profile.json, Profile)
    """
    access = access or Access()
    # Nothing is created before the options, the settings and the hosts check out.
    existing = Campaign.open(out, resume, options) if resume else None
    server = connect(
        options.server,
        accept_new_host_keys=access.accept_new_host_keys,
        ssh_config=access.ssh_config,
    )
    try:
        return _run(options, out, existing, server, access, progress, extra_settings)
    finally:
        server.close()


def _run(
    options: CalibrateOptions,
    out: str | os.PathLike[str],
    existing: Campaign | None,
    server: Host,
    access: Access,
    progress: IO[str] | None,
    extra_settings: Sequence[Setting],
) -> tuple[Path, Profile]:
    """`run_calibrate` on a connected server host."""
    info = _host_info(server, [options.nginx, options.openssl])
    client_cores = _client_cores(options, access, server)
    server_spec = HostSpec.parse(options.server)
    same = [_same_machine(HostSpec.parse(c), server_spec) for c in options.clients]
    settings = fit_settings()
    cpus = len(info.cpus)
    if options.max_workers:
        cpus = min(cpus, options.max_workers)
    settings += scaling_settings(cpus)
    if options.only:
        settings = [s for s in settings if s.name in options.only]
        if not settings:
            raise RunnerError("none of the settings asked for can run on this host")
    cannot = {s.name: why for s in settings if (why := unsupported(options, s))}
    if cannot and options.only:
        name, why = next(iter(cannot.items()))
        raise loadgen.UnsupportedLoad(f"setting {name}: {why}")
    if cannot:
        _say(
            progress,
            f"calibrate: warning: {options.load_generator} cannot run "
            f"{', '.join(cannot)}; they are left out ({next(iter(cannot.values()))})",
        )
        settings = [s for s in settings if s.name not in cannot]
    check_identifiable(settings)
    known = {s.name for s in settings}
    clash = [s.name for s in extra_settings if s.name in known]
    if clash:
        raise RunnerError(f"extra settings reuse campaign setting names: {', '.join(clash)}")
    run = [*settings, *extra_settings]
    steps = [
        _Step(s, r)
        for r in range(options.rounds)
        # Rotate the order every round: no setting always follows the same neighbour.
        for s in run[r % len(run) :] + run[: r % len(run)]
    ]
    campaign = existing or Campaign.create(out, options)
    _say(progress, f"calibrate: campaign {campaign.campaign_id} in {campaign.path}")
    before_host = campaign.meta.get("host", {})
    campaign.meta.update(
        {
            "settings": [s.name for s in settings],
            "extra_settings": [s.name for s in extra_settings],
            "host": {
                **info.facts,
                # A resumed campaign keeps the load it started under.
                **{
                    k: before_host[k]
                    for k in ("loadavg_at_start", "loadavg_at_end")
                    if k in before_host
                },
                "cpu_flags": info.flags,
                "threads_per_core": info.threads_per_core,
            },
            "status": "running",
        }
    )
    campaign.save()
    steal: dict[str, float] = dict(campaign.meta.get("steal", {}))
    eta = _Eta(len(steps), progress)
    try:
        for step in steps:
            label = _label(step.setting.name, step.round_)
            rows = campaign.trials()
            if any(r["instance_label"] == label for r in rows):
                eta.skip()
                continue
            earlier = [
                r
                for r in rows
                if str(r["instance_label"]).startswith(f"calibrate-{step.setting.name}-r")
            ]
            per_worker = _connections(step.setting, earlier, options.sla_p99_ms)
            threads = _threads(min(client_cores), step.setting.vcpus, all(same))
            connections = max(threads, per_worker * step.setting.vcpus)
            plan = _plan(options, step.setting, label, threads, connections)
            before = _cpu_times(server)
            df = run_sweep(plan, campaign.runs_dir, access=access, progress=None)
            steal[label] = _steal_share(before, _cpu_times(server))
            campaign.meta["steal"] = {k: v for k, v in steal.items() if math.isfinite(v)}
            campaign.save()
            row = df.to_dict("records")[-1]
            eta.update(step, row)
        if eta.measured:
            load = server.run(["cat", "/proc/loadavg"], check=False)
            campaign.meta["host"]["loadavg_at_end"] = load.stdout.strip()
            campaign.save()
    except KeyboardInterrupt:
        campaign.meta["status"] = "interrupted"
        campaign.save()
        raise
    rows = campaign.trials()
    profile = build_profile(
        rows,
        settings,
        configs=_configs(campaign.runs_dir),
        host=campaign.meta["host"],
        options=options,
        measured_over="loopback" if all(same) else "network",
        steal=steal,
        campaign_id=campaign.campaign_id,
    )
    path = write_profile(profile, campaign.path / "profile.json")
    campaign.meta["status"] = "complete"
    campaign.save()
    _say(progress, f"calibrate: profile written to {path}")
    return path, profile


def _client_cores(options: CalibrateOptions, access: Access, server: Host) -> list[int]:
    """CPUs each client host can use (the server's facts for a client on the same host)."""
    server_spec = HostSpec.parse(options.server)
    cores = []
    for c in options.clients:
        spec = HostSpec.parse(c)
        if str(spec) == str(server_spec) or (spec.kind == server_spec.kind == "local"):
            host, mine = server, False
        else:
            host = connect(
                c, accept_new_host_keys=access.accept_new_host_keys, ssh_config=access.ssh_config
            )
            mine = True
        try:
            cores.append(len(facts(host, [options.client_binary])["cpus_allowed"]))
        finally:
            if mine:
                host.close()
    return cores


def _same_machine(a: HostSpec, b: HostSpec) -> bool:
    if a.kind in ("local", "netns") and b.kind in ("local", "netns"):
        return True
    return a.kind == b.kind == "ssh" and (a.host, a.port or 22) == (b.host, b.port or 22)


def unsupported(options: CalibrateOptions, setting: Setting) -> str | None:
    """Why the options' load generator cannot run ``setting``, or None when it can."""
    try:
        _plan(options, setting, "check", 1, 1)
    except loadgen.UnsupportedLoad as exc:
        return str(exc)
    return None


def _plan(
    options: CalibrateOptions, setting: Setting, label: str, threads: int, connections: int
) -> Plan:
    return Plan(
        scenario=setting.scenario,
        server=options.server,
        clients=options.clients,
        vcpus=(setting.vcpus,),
        threads=(threads,),
        connections=(connections,),
        duration_s=options.duration_s,
        warmup_s=options.warmup_s,
        cooldown_s=options.cooldown_s,
        sla_p99_ms=options.sla_p99_ms,
        label=label,
        target_address=options.target_address,
        nginx=options.nginx,
        wrk=options.wrk,
        openssl=options.openssl,
        h2load=options.h2load,
        load_generator=options.load_generator,
    )


def _configs(runs_dir: Path) -> dict[str, str]:
    """Setting name -> the exact nginx.conf (and upstream conf) it ran, from the runs."""
    out: dict[str, str] = {}
    for run in sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []:
        try:
            meta = json.loads((run / "run.json").read_text())
        except (OSError, json.JSONDecodeError):
            continue
        label = str(meta.get("plan", {}).get("label", ""))
        m = re.match(r"^calibrate-(.+)-r\d+$", label)
        if not m:
            continue
        for conf in meta.get("nginx_conf", {}).values():
            out.setdefault(m.group(1), _strip_paths(str(conf)))
        if meta.get("upstream_conf"):
            out.setdefault(f"{m.group(1)} (upstream)", _strip_paths(str(meta["upstream_conf"])))
    return out


def _strip_paths(conf: str) -> str:
    """The config with its temporary prefix written as ``$PREFIX`` (identical across runs)."""
    return re.sub(r"/[^\s;]*nginx-sizing\.[A-Za-z0-9]+", "$PREFIX", conf)


class _Eta:
    def __init__(self, total: int, stream: IO[str] | None) -> None:
        self.total, self.stream = total, stream
        self.done = self.measured = 0
        self.start = time.monotonic()

    def skip(self) -> None:
        self.done += 1

    def update(self, step: _Step, row: dict[str, Any]) -> None:
        self.done += 1
        self.measured += 1
        if self.stream is None:
            return
        elapsed = time.monotonic() - self.start
        left = self.total - self.done
        eta = elapsed / self.measured * left
        us = _cpu_us(row)
        print(
            f"[{self.done}/{self.total}] {step.setting.name} round {step.round_ + 1}: "
            f"{float(row['rps']):,.0f} rps, {us:,.1f} us CPU/request, "
            f"p99 {float(row['latency_p99_ms']):.2f} ms"
            f"{'' if row['valid'] else ' (invalid: ' + str(row['invalid_reason']) + ')'}; "
            f"ETA {int(eta // 60)}:{int(eta % 60):02d}",
            file=self.stream,
            flush=True,
        )


def _say(stream: IO[str] | None, text: str) -> None:
    if stream is not None:
        print(text, file=stream, flush=True)


# -- from trials to coefficients ------------------------------------------------------------


def _cpu_us(row: dict[str, Any]) -> float:
    """Server CPU time per request of one trial [us]: CPU share x trial time / requests."""
    requests = float(row["requests"])
    cpu_s = float(row["server_cpu_pct"]) / 100.0 * float(row["duration_s"])
    return cpu_s / requests * 1e6 if requests > 0 and math.isfinite(cpu_s) else math.nan


def _usable(row: dict[str, Any]) -> bool:
    """Valid, or invalid only because the load generator was saturated.

    The server's CPU time per request is measured all the same.
    """
    if bool(row["valid"]):
        return True
    reasons = str(row.get("invalid_reason") or "").split("; ")
    return all(r.startswith("load generator saturated") for r in reasons)


@dataclass
class Observation:
    """One trial as a data point of the fit."""

    setting: str
    round_: int
    cpu_us: float
    rps: float
    p99_ms: float
    meets_sla: bool
    worker_share: float
    flags: list[str] = field(default_factory=list)
    run_id: str = ""


def observations(
    rows: Sequence[dict[str, Any]], settings: Sequence[Setting], sla_ms: float
) -> tuple[list[Observation], list[str]]:
    """The campaign's trials as observations, with the warnings about them."""
    by_name = {s.name: s for s in settings}
    obs, warnings = [], []
    for row in rows:
        m = re.match(r"^calibrate-(.+)-r(\d+)$", str(row.get("instance_label", "")))
        if not m or m.group(1) not in by_name:
            continue
        s = by_name[m.group(1)]
        if not _usable(row):
            warnings.append(f"{row['trial_id']} ({s.name}) not used: {row['invalid_reason']}")
            continue
        us = _cpu_us(row)
        if not math.isfinite(us) or us <= 0:
            warnings.append(f"{row['trial_id']} ({s.name}) not used: no server CPU time")
            continue
        share = float(row["server_cpu_pct"]) / (100.0 * s.vcpus)
        o = Observation(
            s.name,
            int(m.group(2)) - 1,
            us,
            float(row["rps"]),
            float(row["latency_p99_ms"]),
            bool(row["meets_sla"]),
            share,
            run_id=str(row["run_id"]),
        )
        if share < MIN_WORKER_SHARE:
            o.flags.append(
                f"{row['trial_id']} ({s.name}): the workers ran {share:.0%} of the trial's "
                "wall time (a competing process or steal, or a load too light to saturate them)"
            )
        if not bool(row["valid"]):
            o.flags.append(f"{row['trial_id']} ({s.name}): {row['invalid_reason']}")
        obs.append(o)
    # Every usable trial counts: the load only has to keep latency sane, the CPU time per
    # request is measured either way; settings whose trials missed the SLA are named.
    for name in by_name:
        mine = [o for o in obs if o.setting == name]
        over = [o for o in mine if not o.p99_ms <= sla_ms]
        if over:
            warnings.append(
                f"{name}: {len(over)} of {len(mine)} trials over p99 {sla_ms:g} ms "
                f"(p99 {', '.join(f'{o.p99_ms:.1f}' for o in over)} ms)"
            )
    kept = obs
    return kept, warnings


def _row(s: Setting, wire_body: float | None) -> dict[str, float]:
    """The design row of a setting: coefficient name -> its multiplier in us per request."""
    sc = s.scenario
    https = sc.protocol == "https"
    body = float(sc.file_bytes) if wire_body is None else wire_body
    x = {"request_us": 1.0, "byte_ns": body / 1000.0}
    if https:
        x["tls_request_us"] = 1.0
        x["tls_byte_ns"] = body / 1000.0
    if sc.name == "cps":
        x["connection_us"] = 1.0
        if https and sc.tls_resumption:
            x["handshake_resumed_us"] = 1.0
        elif https:
            key = (
                "handshake_full_rsa2048_us"
                if sc.tls_key == "rsa"
                else "handshake_full_ecdsa_p256_us"
            )
            x[key] = 1.0
    if sc.gzip:
        x["gzip_byte_ns"] = sc.file_bytes / 1000.0
    if sc.proxied:
        x["proxy_request_us"] = 1.0
    if sc.name == "api_gateway":
        x["gateway_request_us"] = 1.0
    return x


@dataclass
class Fit:
    """A weighted least-squares fit of the coefficients.

    Attributes
    ----------
    names : list of str
        Coefficients the observations identify.
    value, stderr : dict
        Estimates and standard errors (stderr NaN with no residual degrees of freedom).
    held_at_zero : dict
        Costs that fitted below zero: their unconstrained value (they are held at 0).
    residual_rel : float
        RMS of the relative residuals.
    round_factors : dict of int to float
        The host's contention level of each round (CPU time per request of every setting in
        that round over the fit), normalised so the median round is 1.
    """

    names: list[str]
    value: dict[str, float]
    stderr: dict[str, float]
    held_at_zero: dict[str, float]
    residual_rel: float
    round_factors: dict[int, float] = field(default_factory=dict)


def _nonnegative_wls(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, names: Sequence[str], extra_dof: int
) -> tuple[dict[str, float], dict[str, float], dict[str, float], np.ndarray]:
    """Weighted least squares with costs held at zero when they fit below it.

    Returns values, standard errors, held-at-zero raw values, and the weighted residuals.
    """
    active = list(range(len(names)))
    held: dict[str, float] = {}
    first_se: dict[str, float] = {}
    while True:
        Xa = X[:, active] * w[:, None]
        ya = y * w
        if np.linalg.matrix_rank(Xa) < len(active):
            lost = [names[i] for i in active]
            raise RunnerError(
                "the settings measured do not separate the coefficients "
                f"{', '.join(lost)}; run more settings"
            )
        beta, *_ = np.linalg.lstsq(Xa, ya, rcond=None)
        dof = len(y) - len(active) - extra_dof
        resid = ya - Xa @ beta
        s2 = float(resid @ resid) / dof if dof > 0 else math.nan
        cov = s2 * np.linalg.inv(Xa.T @ Xa)
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
        for i, j in enumerate(active):
            first_se.setdefault(names[j], float(se[i]))
        negative = [
            (beta[i], j) for i, j in enumerate(active) if beta[i] < 0 and names[j] not in SIGNED
        ]
        if not negative:
            break
        _, worst = min(negative)
        held[names[worst]] = float(beta[active.index(worst)])
        active.remove(worst)
    value = {names[j]: float(beta[i]) for i, j in enumerate(active)}
    stderr = {names[j]: float(se[i]) for i, j in enumerate(active)}
    for n in held:
        value[n] = 0.0
        stderr[n] = first_se[n]
    return value, stderr, held, resid


def fit(
    obs: Sequence[Observation], settings: Sequence[Setting], wire: dict[str, float] | None = None
) -> Fit:
    """Fit the coefficients the observations identify.

    The model of a trial of setting s in round r is ``f_r * cost_s(coefficients)``: a busy
    host slows every setting of a round alike (cache pollution, wake-ups), and the rounds
    interleave every setting so that ``f_r`` can be told apart from the costs. The fit
    alternates a weighted least-squares fit of the costs on the trials divided by their
    round's factor (weights 1 / (setting median)^2, so every setting counts by its relative
    error) with the factors (the median ratio of a round's trials to the fit), normalised so
    the median round is 1: the coefficients are the costs at the campaign's median
    contention. A cost that comes out negative is held at zero and the rest refitted (an
    active-set non-negative fit); its unconstrained value is kept in ``held_at_zero``.

    Raises `RunnerError` when nothing can be fitted.
    """
    wire = wire or {}
    by_name = {s.name: s for s in settings}
    fitted = [o for o in obs if o.setting in by_name and o.setting not in _scaling_names(settings)]
    if not fitted:
        raise RunnerError("no usable trial to fit coefficients to")
    rows = [_row(by_name[o.setting], wire.get(o.setting)) for o in fitted]
    names = [n for n in COEFFICIENTS if any(r.get(n, 0.0) != 0.0 for r in rows)]
    X = np.array([[r.get(n, 0.0) for n in names] for r in rows])
    y = np.array([o.cpu_us for o in fitted])
    rounds = sorted({o.round_ for o in fitted})
    r_idx = np.array([rounds.index(o.round_) for o in fitted])
    factors = np.ones(len(rounds))
    settings_of = [o.setting for o in fitted]
    for _ in range(100):
        adjusted = y / factors[r_idx]
        med = {
            s: float(np.median([v for v, n in zip(adjusted, settings_of, strict=True) if n == s]))
            for s in set(settings_of)
        }
        w = np.array([1.0 / med[n] for n in settings_of])
        value, stderr, held, resid = _nonnegative_wls(X, adjusted, w, names, len(rounds) - 1)
        pred = X @ np.array([value[n] for n in names])
        if len(rounds) == 1 or not np.all(pred > 0):
            break
        ratio = np.log(y / pred)
        new = np.exp([np.median(ratio[r_idx == k]) for k in range(len(rounds))])
        new /= np.exp(np.median(np.log(new)))
        done = np.allclose(new, factors, rtol=1e-6)
        factors = new
        if done:
            break
    rel = float(np.sqrt(np.mean(resid**2))) if len(resid) else math.nan
    return Fit(
        list(names),
        value,
        stderr,
        held,
        rel,
        {r: float(f) for r, f in zip(rounds, factors, strict=True)},
    )


def check_identifiable(settings: Sequence[Setting]) -> None:
    """Raise `RunnerError` before any load if the settings cannot separate their costs.

    E.g. new HTTPS connections without new HTTP ones.
    """
    rows = [_row(s, None) for s in settings if s.vcpus == 1]
    if not rows:
        raise RunnerError("the settings asked for include no one-worker setting to fit")
    names = [n for n in COEFFICIENTS if any(r.get(n, 0.0) != 0.0 for r in rows)]
    X = np.array([[r.get(n, 0.0) for n in names] for r in rows])
    if np.linalg.matrix_rank(X) < len(names):
        raise RunnerError(
            "these settings do not separate the costs "
            f"{', '.join(names)}; add the settings that isolate them (e.g. static_http_0B "
            "with static_http_1KB for request_us and byte_ns, cps_http before cps_https_*)"
        )


def _scaling_names(settings: Sequence[Setting]) -> set[str]:
    return {s.name for s in settings if s.vcpus > 1}


def build_profile(
    rows: Sequence[dict[str, Any]],
    settings: Sequence[Setting],
    *,
    configs: dict[str, str],
    host: dict[str, Any],
    options: CalibrateOptions,
    measured_over: str,
    steal: dict[str, float] | None = None,
    campaign_id: str = "",
) -> Profile:
    """The profile of a campaign's trials: fit, spreads, scaling, flags and provenance."""
    obs, warnings = observations(rows, settings, options.sla_p99_ms)
    wire = _wire_bodies(rows, settings)
    f = fit(obs, settings, wire)
    rounds = sorted({o.round_ for o in obs})
    per_round: dict[str, list[float]] = {n: [] for n in f.value}
    for r in rounds:
        try:
            fr = fit([o for o in obs if o.round_ == r], settings, wire)
        except RunnerError:
            continue
        for n in f.value:
            if n in fr.value:
                per_round[n].append(fr.value[n])
    coefficients = {}
    for n in COEFFICIENTS:
        if n not in f.value:
            continue
        vals = per_round[n]
        mean = float(np.mean(vals)) if vals else math.nan
        spread = (
            float(np.std(vals, ddof=1) / abs(mean))
            if len(vals) >= 2 and mean != 0 and math.isfinite(mean)
            else None
        )
        note = ""
        if n in f.held_at_zero:
            note = (
                f"fitted {f.held_at_zero[n]:.3g} +- {f.stderr[n]:.2g} (below zero, not "
                "distinguishable from it): held at 0"
            )
            warnings.append(f"{n} {note}")
        se = f.stderr[n]
        coefficients[n] = Coefficient(
            round(f.value[n], 6),
            round(se, 6) if math.isfinite(se) else None,
            spread,
            COEFFICIENTS[n][0],
            note,
        )
    factors = f.round_factors
    if factors and max(factors.values()) > 1.25 * min(factors.values()):
        warnings.append(
            "the host's contention changed across rounds (CPU time per request of every "
            "setting x "
            + ", ".join(f"{v:.2f}" for _, v in sorted(factors.items()))
            + " by round): the coefficients are at the median round's level"
        )
    for o in obs:
        warnings.extend(o.flags)
    flagged = sum(1 for o in obs if o.worker_share < MIN_WORKER_SHARE)
    if flagged:
        warnings.insert(
            0,
            f"{flagged} of {len(obs)} trials flagged: the nginx workers ran under "
            f"{MIN_WORKER_SHARE:.0%} of the wall time (CPU time per request is still measured "
            "directly, but the host was not quiet)",
        )
    for label, share in sorted((steal or {}).items()):
        if math.isfinite(share) and share > 0.01:
            warnings.append(f"{label}: {share:.1%} of the host's CPU time was stolen")
    missing = [n for n in COEFFICIENTS if n not in coefficients and n != "http2_request_us"]
    if missing:
        warnings.append(
            f"{', '.join(missing)} not measured: no setting of this campaign isolates "
            + ("it" if len(missing) == 1 else "them")
        )
    if "http2_request_us" not in coefficients:
        warnings.append("http2_request_us not measured: the campaign runs HTTP/1.1 only")
    scaling, scaling_warnings = _scaling(obs, settings)
    warnings += scaling_warnings
    tpc = host.get("threads_per_core")
    arch = str(host.get("arch", ""))
    return Profile(
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        cpu_model=str(host.get("cpu_model", "")),
        arch="arm64" if arch in ("aarch64", "arm64") else "x86_64",
        threads_per_core=tpc if isinstance(tpc, int) else None,
        measured_over=measured_over,
        load_generator=options.load_generator,
        host=_host_facts(host),
        coefficients=coefficients,
        scaling=scaling,
        sla_p99_ms=options.sla_p99_ms,
        runs=sorted({o.run_id for o in obs}),
        configs=configs,
        warnings=warnings,
        extra={
            "campaign": {
                "campaign_id": campaign_id,
                "options": options.to_dict(),
                "fit": "CPU time per request = round factor x cost model; weighted least "
                "squares (weights 1/median^2 per setting) alternating with the round factors "
                "(median round = 1); stderr from the joint fit, spread = sd/|mean| of "
                "per-round fits",
                "relative_rms_residual": round(f.residual_rel, 4),
                "round_factors": {str(r + 1): round(v, 4) for r, v in sorted(factors.items())},
            },
            "measurements": _measurements(obs, settings),
        },
    )


def _wire_bodies(rows: Sequence[dict[str, Any]], settings: Sequence[Setting]) -> dict[str, float]:
    """Body bytes sent per response for gzip settings.

    Bytes per response minus the headers of the HTTP 0-byte setting (250 B when that was
    not measured).
    """
    header = [
        float(r["bytes_per_response"])
        for r in rows
        if str(r.get("instance_label", "")).startswith("calibrate-static_http_0B-")
    ]
    head = float(np.median(header)) if header else 250.0
    out = {}
    for s in settings:
        if s.scenario.gzip:
            sizes = [
                float(r["bytes_per_response"])
                for r in rows
                if str(r.get("instance_label", "")).startswith(f"calibrate-{s.name}-")
            ]
            if sizes:
                out[s.name] = max(0.0, float(np.median(sizes)) - head)
    return out


def _scaling(obs: Sequence[Observation], settings: Sequence[Setting]) -> tuple[Scaling, list[str]]:
    base = [o for o in obs if o.setting == SCALING_BASE]
    if not base:
        return Scaling(), []
    us1 = float(np.median([o.cpu_us for o in base]))
    workers, rps, eff, warnings = [1], [float(np.median([o.rps for o in base]))], [1.0], []
    for s in sorted((s for s in settings if s.vcpus > 1), key=lambda s: s.vcpus):
        mine = [o for o in obs if o.setting == s.name]
        if not mine:
            continue
        e = us1 / float(np.median([o.cpu_us for o in mine]))
        if e > SUPERLINEAR:
            warnings.append(
                f"{s.vcpus} workers: CPU per request {e:.2f}x better than with 1 (superlinear); "
                "not used as a scaling point"
            )
            continue
        workers.append(s.vcpus)
        rps.append(float(np.median([o.rps for o in mine])))
        eff.append(round(e, 4))
    return Scaling(workers, [round(x, 1) for x in rps], eff), warnings


def _measurements(obs: Sequence[Observation], settings: Sequence[Setting]) -> dict[str, Any]:
    out = {}
    for s in settings:
        mine = [o for o in obs if o.setting == s.name]
        if not mine:
            continue
        out[s.name] = {
            "scenario": s.scenario.name,
            "protocol": s.scenario.protocol,
            "file_bytes": s.scenario.file_bytes,
            "gzip": s.scenario.gzip,
            "tls_key": s.scenario.tls_key if s.scenario.protocol == "https" else None,
            "workers": s.vcpus,
            "cpu_us_per_request": [round(o.cpu_us, 3) for o in mine],
            "rps": [round(o.rps, 1) for o in mine],
            "p99_ms": [round(o.p99_ms, 3) for o in mine],
            "worker_share": [round(o.worker_share, 3) for o in mine],
        }
    return out


_HOST_KEYS = (
    "hostname",
    "cpu_model",
    "arch",
    "cores",
    "cpus_allowed",
    "threads_per_core",
    "kernel",
    "nginx_version",
    "openssl_version",
    "wrk_version",
    "mem_kb",
    "sysctl",
    "cpu_flags",
    "cpu_vendor",
    "cpu_family",
    "cpu_model_number",
    "cpu_stepping",
    "hypervisor",
    "loadavg_at_start",
    "loadavg_at_end",
)


def _host_facts(host: dict[str, Any]) -> dict[str, Any]:
    return {k: host[k] for k in _HOST_KEYS if k in host}


# -- command line ---------------------------------------------------------------------------


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``calibrate`` subcommand to the runners' subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "calibrate",
        help="measure what a request costs on a host's CPU and write a CPU profile",
        description=(
            "A fixed campaign of settings (keep-alive static 0 B/1 KB/64 KB over HTTP and "
            "HTTPS, new connections over HTTP and HTTPS with ECDSA and RSA keys and with "
            "resumed TLS sessions, gzip, "
            "reverse proxy, API gateway, and 1..N workers), repeated and interleaved; the CPU "
            "time of nginx per request is fitted to the cost model's coefficients."
        ),
    )
    host_options(p, server_default="local", inventory=False)
    p.add_argument(
        "--out",
        default="data/runs",
        metavar="DIR",
        help="parent folder of campaign folders (default data/runs)",
    )
    p.add_argument(
        "--quick", action="store_true", help="1 s trials and 2 rounds (about 3 minutes on 2 vCPUs)"
    )
    p.add_argument(
        "--resume",
        metavar="CAMPAIGN_ID",
        help="continue campaign CAMPAIGN_ID in --out with the same options",
    )
    p.add_argument(
        "--repeats",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="rounds of every setting (default 3; 2 with --quick)",
    )
    p.add_argument(
        "--sla-p99",
        type=parse_duration_ms,
        default=5.0,
        metavar="DURATION",
        help="p99 each setting is measured under (default 5ms)",
    )
    p.add_argument(
        "--load-generator",
        default="wrk",
        metavar="NAME",
        help="closed-loop load generator: wrk (default) or h2load (HTTP/1.1; it does not "
        "reconnect, so the cps settings are left out)",
    )
    p.add_argument(
        "--settings",
        default="",
        metavar="LIST",
        help="comma-separated subset of the campaign's settings (default all)",
    )
    p.add_argument(
        "--max-workers",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="most nginx workers of the scaling settings (default: all CPUs)",
    )
    p.add_argument(
        "--h2load", default="h2load", metavar="PATH", help="h2load binary on the clients"
    )
    format_option(p)
    p.add_argument("--quiet", action="store_true", help="no progress output")
    return p


def main(args: argparse.Namespace) -> int:
    """``python -m runners calibrate``: run the campaign, print the coefficients."""
    options = CalibrateOptions(
        server=args.server,
        clients=tuple(args.client or ["local"]),
        quick=args.quick,
        repeats=args.repeats,
        sla_p99_ms=args.sla_p99,
        load_generator=args.load_generator,
        only=tuple(s.strip() for s in args.settings.split(",") if s.strip()),
        max_workers=args.max_workers,
        target_address=args.target_address,
        nginx=args.nginx,
        wrk=args.wrk,
        openssl=args.openssl,
        h2load=args.h2load,
    )
    path, profile = run_calibrate(
        options,
        args.out,
        resume=args.resume,
        access=Access(args.accept_new_host_keys, args.ssh_config),
        progress=None if args.quiet else sys.stderr,
    )
    if args.format == "json":
        print(json.dumps(profile.to_dict(), indent=1))
        return 0
    print(render(profile))
    print(f"profile: {path}")
    return 0


def render(profile: Profile) -> str:
    """The coefficients, scaling and warnings of a profile as text."""
    lines = [
        f"CPU profile: {profile.cpu_model} ({profile.arch}, "
        f"{profile.threads_per_core or '?'} threads per core), measured over "
        f"{profile.measured_over} with {profile.load_generator}, p99 <= {profile.sla_p99_ms:g} ms",
        f"{'coefficient':<30} {'value':>10} {'stderr':>9} {'spread':>7}  unit",
    ]
    for name, c in profile.coefficients.items():
        spread = f"{c.spread:.1%}" if c.spread is not None else "-"
        se = f"{c.stderr:.2g}" if c.stderr is not None else "-"
        lines.append(
            f"{name:<30} {c.value:>10.4g} {se:>9} {spread:>7}  {c.unit}"
            + ("  (held at 0)" if c.note else "")
        )
    sc = profile.scaling
    if sc.workers:
        lines.append(
            "scaling: "
            + ", ".join(
                f"{w} workers {r:,.0f} rps (efficiency {e:.2f})"
                for w, r, e in zip(sc.workers, sc.rps, sc.efficiency, strict=True)
            )
        )
    lines.append(f"runs: {len(profile.runs)}; warnings: {len(profile.warnings)}")
    lines += [f"  warning: {w}" for w in profile.warnings[:12]]
    if len(profile.warnings) > 12:
        lines.append(f"  ... {len(profile.warnings) - 12} more in the profile")
    return "\n".join(lines)
