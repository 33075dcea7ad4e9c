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

The settings and options are `runners.calibrate.settings`, the fit from trials to a profile
`runners.calibrate.fit`; this module runs the campaign (its command line is
`runners.cli.calibrate`) and re-exports the names callers use (`CalibrateOptions`,
`fit_settings`, `build_profile`, ...).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from runners import loadgen
from runners.calibrate.fit import (
    TARGET_REL,
    build_profile,
    check_identifiable,
    cpu_us,
    observations,
    unpinned,
)
from runners.calibrate.settings import (
    MIN_WORKER_SHARE,
    CalibrateOptions,
    Setting,
    fit_settings,
    retired_settings,
    scaling_settings,
)
from runners.errors import BadInput, RunnerError
from runners.hosts import Host, HostSpec, connect, facts, parse_cpu_list
from runners.run import cleanup
from runners.store import load_trials
from runners.sweep import Access, Plan, run_sweep
from trialtable.files import MB, loads_json, read_bounded, write_atomic
from trialtable.jsonvalue import JsonObject, JsonValue, as_float, as_int
from trialtable.output import json_text
from trialtable.profile import Profile, write_profile

__all__ = [
    "CalibrateOptions",
    "Campaign",
    "Setting",
    "build_profile",
    "check_identifiable",
    "fit_settings",
    "observations",
    "retired_settings",
    "run_calibrate",
    "scaling_settings",
    "unsupported",
]


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


#: What the speed probe runs: a fixed computation outside nginx, timed in CPU time as nginx is.
SPEED_PROBE = "openssl speed -seconds 1 -mr ecdsap256"


def parse_speed_probe(text: str) -> float:
    """CPU time of one ECDSA P-256 signature [us] from ``openssl speed -mr ecdsap256`` output.

    The ``+F4:N:256:SIGN_PER_S:VERIFY_PER_S`` line holds the signatures per second of user CPU
    time (``openssl speed`` times its loops in CPU time unless ``-elapsed``). NaN when absent.
    """
    for line in text.splitlines():
        parts = line.strip().split(":")
        if len(parts) == 5 and parts[0] == "+F4" and parts[2] == "256":
            try:
                rate = float(parts[3])
            except ValueError:
                return math.nan
            return 1e6 / rate if rate > 0 and math.isfinite(rate) else math.nan
    return math.nan


def _speed_probe(host: Host, openssl: str, cpu: int) -> float:
    """Run the speed probe on ``cpu`` of the server [us per signature]; NaN when it fails.

    The same computation before each round and at the end says whether the CPU itself (its
    host's contention, frequency, a busy sibling thread) changed speed during the campaign,
    which neither the load average nor steal fully shows.
    """
    argv = ["taskset", "-c", str(cpu), openssl, *SPEED_PROBE.split()[1:]]
    out = host.run(argv, check=False, timeout=60, what="timing a fixed computation")
    return parse_speed_probe(out.stdout + out.stderr) if out.ok else math.nan


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
            raise BadInput(f"campaign id {cid!r} is not a plain folder name")
        path = Path(out) / cid
        try:
            data = read_bounded(path / "campaign.json", 16 * MB, regular_only=True, follow=False)
            meta = loads_json(data)
        except FileNotFoundError:
            raise BadInput(f"no campaign {cid!r} in {out} (no campaign.json)") from None
        except OSError as exc:
            raise BadInput(f"cannot read {path / 'campaign.json'}: it {exc.strerror}") from None
        except (ValueError, RecursionError) as exc:
            raise BadInput(f"cannot read {path / 'campaign.json'}: {exc}") from None
        if not isinstance(meta, dict):
            raise BadInput(f"cannot read {path / 'campaign.json'}: not a JSON object")
        stored = meta.get("options", {})
        # A key the campaign did not store yet (an option added since) is not a difference.
        diff = [k for k, v in options.to_dict().items() if k in stored and stored[k] != v]
        if diff:
            raise BadInput(
                f"campaign {cid} was run with other options ({', '.join(diff)}); resume it "
                "with the same options"
            )
        return cls(path, meta)

    def save(self) -> None:
        """Write ``campaign.json`` atomically."""
        try:
            write_atomic(self.path / "campaign.json", json_text(self.meta, indent=1) + "\n")
        except OSError as exc:
            where = self.path / "campaign.json"
            raise RunnerError(f"cannot write {where}: {exc.strerror}") from None

    def trials(self) -> list[JsonObject]:
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


def _connections(setting: Setting, done: Sequence[Mapping[str, JsonValue]], sla_ms: float) -> int:
    """Connections per worker for the next round, from this setting's earlier trials.

    Halved after a p99 over the SLA from a busy worker, doubled after a far lower p99 from an
    idle one.
    """
    c = setting.connections
    for row in done:
        c = as_int(row["connections"]) // max(1, setting.vcpus)
        p99 = as_float(row["latency_p99_ms"])
        share = as_float(row["server_cpu_pct"]) / (100.0 * setting.vcpus)
        if not math.isfinite(p99) or (p99 > sla_ms and share >= MIN_WORKER_SHARE):
            # Queueing at a busy worker: fewer connections. A p99 over the SLA with the worker
            # mostly idle comes from elsewhere (a competing process, delayed ACKs of large
            # responses) and halving would only leave the worker idler.
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
    progress: IO[str] | None = None,
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
        Where progress lines with an ETA go (the caller's stream; None, the default, for
        silence).
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
    settings = _campaign_settings(options, len(info.cpus), extra_settings, progress)
    run = [*settings, *extra_settings]
    steps = [
        _Step(s, r)
        for r in range(options.rounds)
        # Rotate the order every round: no setting always follows the same neighbour.
        for s in run[r % len(run) :] + run[: r % len(run)]
    ]
    campaign = existing or Campaign.create(out, options)
    _say(progress, f"calibrate: campaign {campaign.campaign_id} in {campaign.path}")
    if existing is not None and campaign.runs_dir.is_dir():
        # What a killed process of this campaign left running (its nginx, its work folders).
        cleanup(campaign.runs_dir, None, access, log=progress)
    _start(campaign, settings, extra_settings, info)
    session = _Session(
        options,
        server,
        access,
        info,
        campaign,
        threads_of=lambda vcpus: _threads(min(client_cores), vcpus, all(same)),
        steal=dict(campaign.meta.get("steal", {})),
        probes=campaign.meta["host"].setdefault("speed_probe_us", {}),
    )
    eta = _Eta(len(steps), progress)
    try:
        extra = _extra_rounds(campaign, settings, options, eta)
        for step in itertools.chain(steps, extra):
            session.measure(step, eta)
        if eta.measured:
            session.finish()
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
        steal=session.steal,
        campaign_id=campaign.campaign_id,
    )
    path = write_profile(profile, campaign.path / "profile.json")
    campaign.meta["status"] = "complete"
    campaign.save()
    _say(progress, f"calibrate: profile written to {path}")
    return path, profile


def _campaign_settings(
    options: CalibrateOptions,
    cpus: int,
    extra_settings: Sequence[Setting],
    progress: IO[str] | None,
) -> list[Setting]:
    """The settings a campaign measures on a server of ``cpus`` CPUs, checked identifiable."""
    settings = fit_settings()
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
    return settings


def _start(
    campaign: Campaign,
    settings: Sequence[Setting],
    extra_settings: Sequence[Setting],
    info: _HostInfo,
) -> None:
    """Record the campaign's settings and host, and mark it running."""
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
                    for k in ("loadavg_at_start", "loadavg_at_end", "speed_probe_us")
                    if k in before_host
                },
                "cpu_flags": info.flags,
                "threads_per_core": info.threads_per_core,
            },
            "status": "running",
        }
    )
    campaign.save()


def _extra_rounds(
    campaign: Campaign, settings: Sequence[Setting], options: CalibrateOptions, eta: _Eta
) -> Iterator[_Step]:
    """Rounds of the settings that measure a coefficient not yet pinned."""
    for k in range(options.more_rounds):
        names, use = unpinned(campaign.trials(), settings, options)
        if not use:
            return
        _say(
            eta.stream,
            f"calibrate: extra round {k + 1}: {', '.join(names)} not yet within "
            f"{TARGET_REL:.0%}; measuring {', '.join(use)} again",
        )
        eta.total += len(use)
        for s in settings:
            if s.name in use:
                yield _Step(s, options.rounds + k)


@dataclass
class _Session:
    """A campaign being measured on its connected server: one step at a time."""

    options: CalibrateOptions
    server: Host
    access: Access
    info: _HostInfo
    campaign: Campaign
    #: Load generator threads for a setting of so many vCPUs.
    threads_of: Callable[[int], int]
    #: Steal share of the server's CPU during each trial, by label.
    steal: dict[str, float]
    #: The server's speed probe [us] at the start of each round (``r1``...) and at the end.
    probes: dict[str, float]

    def measure(self, step: _Step, eta: _Eta) -> None:
        """Measure one step, unless an earlier process of this campaign did."""
        campaign, options, server = self.campaign, self.options, self.server
        label = _label(step.setting.name, step.round_)
        rows = campaign.trials()
        if any(r["instance_label"] == label for r in rows):
            eta.skip()
            return
        if f"r{step.round_ + 1}" not in self.probes:
            us = _speed_probe(server, options.openssl, self.info.cpus[0])
            if math.isfinite(us):
                self.probes[f"r{step.round_ + 1}"] = round(us, 3)
                campaign.save()
        earlier = [
            r
            for r in rows
            if str(r["instance_label"]).startswith(f"calibrate-{step.setting.name}-r")
        ]
        per_worker = _connections(step.setting, earlier, options.sla_p99_ms)
        threads = self.threads_of(step.setting.vcpus)
        connections = max(threads, per_worker * step.setting.vcpus)
        plan = _plan(options, step.setting, label, threads, connections)
        before = _cpu_times(server)
        df = run_sweep(plan, campaign.runs_dir, access=self.access, progress=None)
        self.steal[label] = _steal_share(before, _cpu_times(server))
        campaign.meta["steal"] = {k: v for k, v in self.steal.items() if math.isfinite(v)}
        campaign.save()
        row = {str(k): v for k, v in df.to_dict("records")[-1].items()}  # column names
        eta.update(step, row)

    def finish(self) -> None:
        """Record the server's load and speed probe at the end."""
        load = self.server.run(["cat", "/proc/loadavg"], check=False)
        self.campaign.meta["host"]["loadavg_at_end"] = load.stdout.strip()
        us = _speed_probe(self.server, self.options.openssl, self.info.cpus[0])
        if math.isfinite(us):
            self.probes["end"] = round(us, 3)
        self.campaign.save()


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
            meta = loads_json(
                read_bounded(run / "run.json", 16 * MB, regular_only=True, follow=False)
            )
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(meta, dict):
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

    def update(self, step: _Step, row: Mapping[str, JsonValue]) -> None:
        self.done += 1
        self.measured += 1
        if self.stream is None:
            return
        elapsed = time.monotonic() - self.start
        left = self.total - self.done
        eta = elapsed / self.measured * left
        us = cpu_us(row)
        print(
            f"[{self.done}/{self.total}] {step.setting.name} round {step.round_ + 1}: "
            f"{as_float(row['rps']):,.0f} rps, {us:,.1f} us CPU/request, "
            f"p99 {as_float(row['latency_p99_ms']):.2f} ms"
            f"{'' if row['valid'] else ' (invalid: ' + str(row['invalid_reason']) + ')'}; "
            f"ETA {int(eta // 60)}:{int(eta % 60):02d}",
            file=self.stream,
            flush=True,
        )


def _say(stream: IO[str] | None, text: str) -> None:
    if stream is not None:
        print(text, file=stream, flush=True)
