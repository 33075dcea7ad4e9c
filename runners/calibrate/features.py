"""What each configuration feature costs: ``python -m runners features``.

For each feature of `trialtable.features.FEATURES` that can run on this host, two private
nginx run on loopback (`runners.deploy.nginx.Deployment`), one worker each, both pinned to the
same CPU: the reference config (the static scenario, or the proxy for a feature that only
exists behind one, such as the Lua balancer) and the same config with the feature on. wrk
loads them in interleaved pairs (R F, then F R, ...), one at a time, so drift slower than a
pair cancels in each pair's difference, as ``runners ab --schedule alternate`` does. Each
trial reads the workers' user and kernel CPU time from ``/proc/PID/stat`` before and after;
a feature's cost is the median over pairs of (F - R) CPU time per request [us], user space and
kernel apart, with the seeded bootstrap 95% interval of that median as its spread. A feature
whose module is missing or whose directive this nginx refuses is written as not measured,
with the reason; no number is made up for it.
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import random
import shlex
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from runners import jwt
from runners.bootstrap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from runners.calibrate import logpath
from runners.calibrate.ingress import ingress_extra, upstreaminfo_extras
from runners.cputime import stat_user_system
from runners.deploy import container
from runners.deploy.conf import ConfExtra
from runners.deploy.container import Containerd, ContainerDeployment, Flood, FloodSettings
from runners.deploy.cri import CriContainerd, CriDeployment
from runners.deploy.nginx import Deployment, NginxHost
from runners.errors import BadInput, RunnerError
from runners.hosts import Host, LocalHost, facts
from runners.loadgen import Load, wrk
from runners.names import DEFAULT_OUT as DEFAULT_RUNS
from runners.run import recording
from runners.scenario import Scenario
from trialtable.features import (
    FEATURE_COST_COLUMNS,
    FEATURE_COSTS,
    FEATURE_NAMES,
    INGRESS_NGINX,
    INGRESS_NGINX_NO_METRICS,
    MEASURED,
    NOT_MEASURED,
    REFERENCE_WITH,
    UPSTREAMINFO_LOG,
)
from trialtable.fields import FieldError, FieldValue
from trialtable.files import write_atomic
from trialtable.jsonvalue import JsonObject
from trialtable.logpath import CONTAINER_LOG
from trialtable.output import table_csv

#: Where the table is written by default (beside it, the same name with ``.md``).
DEFAULT_OUT = Path("data/reference/feature-costs.csv")
#: The container log path's table, beside the feature-cost table (`runners.calibrate.logpath`).
LOG_PATH_FILE = "container-log-path.csv"
#: Errors per response above which a trial gives no cost.
MAX_ERROR_RATE = 0.01
#: The Lua modules, in load order (the Lua module needs the development kit first).
LUA_MODULES = ("ndk_http_module.so", "ngx_http_lua_module.so")
NJS_MODULES = ("ngx_http_js_module.so",)
#: The njs script a feature imports, written into the feature nginx's prefix.
NJS_SCRIPT = "features.js"
#: The Debian packages whose versions the notes record.
PACKAGES = (
    "nginx",
    "libnginx-mod-http-lua",
    "libnginx-mod-http-js",
    "lua-resty-core",
    "lua-cjson",
)
#: The floods of the container log path after each pair: lines, bytes a line, lines a write().
FLOODS = (
    FloodSettings(lines=300_000, line_bytes=100, per_write=1),
    FloodSettings(lines=1_280_000, line_bytes=100, per_write=64),
)
#: A minimal Lua handler: one variable read (a real handler does more; the model says so).
LUA_MINIMAL = "local _ = ngx.var.uri"


@dataclass(frozen=True)
class Settings:
    """One campaign's settings.

    Attributes
    ----------
    features : tuple of str
        The features to measure, in `FEATURE_NAMES` order.
    pairs : int
        Interleaved pairs per feature.
    seconds : int
        Length of each measured trial [s] (wrk takes whole seconds).
    connections : int
        wrk's open connections (one wrk thread).
    file_bytes : int
        Response body size [B].
    cpu : int
        The CPU both nginx are pinned to; wrk runs on the others.
    container_path : str
        For a feature run in containers: ``cri`` (pods made over containerd's CRI API, the
        kubelet's log path) or ``ctr`` (``ctr run``, whose reader copies the FIFO in blocks).
    runs : str
        Where a feature run in containers records what it starts (a run folder, removed
        once all of it is), for ``python -m runners cleanup --all --out RUNS``.
    """

    features: tuple[str, ...] = FEATURE_NAMES
    pairs: int = 5
    seconds: int = 2
    connections: int = 16
    file_bytes: int = 1024
    cpu: int = 0
    container_path: str = "cri"
    runs: str = DEFAULT_RUNS


@dataclass(frozen=True)
class Setup:
    """How one feature is turned on.

    Attributes
    ----------
    reference : str
        The scenario the pairs compare against: ``static``, or ``reverse_proxy`` for a
        feature that only exists behind a proxy.
    scenario : str
        The scenario with the feature on.
    modules : tuple of str
        Dynamic module files the feature needs, in load order.
    extra : ConfExtra
        The feature's own config lines.
    runtime : str
        ``containerd``: both nginx run in a container of a private containerd (the feature
        and its reference alike); "": on the host.
    reference_extra : ConfExtra or None
        Lines the reference config gets too (None: none), for a feature measured as the
        difference of two variants of one directive.
    """

    reference: str = "static"
    scenario: str = "static"
    modules: tuple[str, ...] = ()
    extra: ConfExtra = field(default_factory=ConfExtra)
    runtime: str = ""
    reference_extra: ConfExtra | None = None


def setups(file_bytes: int, path: str) -> dict[str, Setup]:
    """How each feature is turned on, serving ``file_bytes`` B at ``path``."""

    def lua(phase: str, code: str = LUA_MINIMAL) -> Setup:
        return Setup(modules=LUA_MODULES, extra=ConfExtra(server=(f"{phase} {{ {code} }}",)))

    def njs(directive: str, where: tuple[str, ...]) -> Setup:
        http = (f"js_import feature from {NJS_SCRIPT};",)
        return Setup(modules=NJS_MODULES, extra=ConfExtra(http=http, server=where))

    proxy = "reverse_proxy"
    log_ref, log_on = upstreaminfo_extras()
    table: dict[str, Setup] = {
        "access_log": Setup(extra=ConfExtra(server=("access_log access.log;",))),
        "access_log_buffered": Setup(
            extra=ConfExtra(server=("access_log access.log combined buffer=64k flush=1s;",))
        ),
        CONTAINER_LOG: Setup(
            extra=ConfExtra(server=("access_log /dev/stdout;",)), runtime="containerd"
        ),
        UPSTREAMINFO_LOG: Setup(
            reference=proxy, scenario=proxy, extra=log_on, reference_extra=log_ref
        ),
        "proxy_keepalive": Setup(scenario=proxy),
        "proxy_new_connection": Setup(scenario=proxy, extra=ConfExtra(upstream_keepalive=False)),
        "proxy_cache_hit": Setup(
            scenario=proxy,
            extra=ConfExtra(
                http=("proxy_cache_path tmp/feature-cache levels=1 keys_zone=feature_cache:1m;",),
                server=("proxy_cache feature_cache;", "proxy_cache_valid 200 1h;"),
            ),
        ),
        "lua_rewrite": lua("rewrite_by_lua_block"),
        "lua_access": lua("access_by_lua_block"),
        "lua_content": Setup(
            modules=LUA_MODULES,
            extra=ConfExtra(
                http=(f'init_by_lua_block {{ feature_body = string.rep("x", {file_bytes}) }}',),
                server=(
                    f"location = {path} {{ content_by_lua_block {{ ngx.print(feature_body) }} }}",
                ),
            ),
        ),
        "lua_balancer": Setup(
            reference=proxy,
            scenario=proxy,
            modules=LUA_MODULES,
            extra=ConfExtra(
                upstream=(
                    "balancer_by_lua_block { require('ngx.balancer').set_current_peer("
                    "'@UPSTREAM_HOST@', @UPSTREAM_PORT@) }",
                )
            ),
        ),
        "lua_header_filter": lua("header_filter_by_lua_block", "local _ = ngx.status"),
        "lua_log": lua("log_by_lua_block", "local _ = ngx.var.status"),
        INGRESS_NGINX: Setup(
            reference=proxy, scenario=proxy, modules=LUA_MODULES, extra=ingress_extra(path)
        ),
        INGRESS_NGINX_NO_METRICS: Setup(
            reference=proxy,
            scenario=proxy,
            modules=LUA_MODULES,
            extra=ingress_extra(path, metrics=False),
        ),
        "njs_access": njs("js_access", ("js_access feature.access;",)),
        "njs_content": njs("js_content", (f"location = {path} {{ js_content feature.content; }}",)),
        "limit_req": Setup(
            extra=ConfExtra(
                http=("limit_req_zone $binary_remote_addr zone=feature_req:1m rate=1000000r/s;",),
                server=("limit_req zone=feature_req burst=100000 nodelay;",),
            )
        ),
        "limit_conn": Setup(
            extra=ConfExtra(
                http=("limit_conn_zone $binary_remote_addr zone=feature_conn:1m;",),
                server=("limit_conn feature_conn 60000;",),
            )
        ),
        # The reference config sets these three in its http block; the server turns each off.
        "open_file_cache_off": Setup(extra=ConfExtra(server=("open_file_cache off;",))),
        "sendfile_off": Setup(extra=ConfExtra(server=("sendfile off;",))),
        "tcp_nopush_off": Setup(extra=ConfExtra(server=("tcp_nopush off;",))),
        # Both sides with no open_file_cache (REFERENCE_WITH), where the check is a stat: with
        # the cache on, the lookup is the cache's.
        "try_files_check": Setup(extra=ConfExtra(server=("try_files $uri =404;",))),
    }
    return _with_references(table)


def _with_references(table: dict[str, Setup]) -> dict[str, Setup]:
    """``table`` with each `REFERENCE_WITH` feature's pairs run on top of the features named.

    Their lines go into both sides' configs: the reference's, and before the feature's own.
    """
    for name, under in REFERENCE_WITH.items():
        server = tuple(line for u in under for line in table[u].extra.server)
        setup = table[name]
        table[name] = replace(
            setup,
            extra=replace(setup.extra, server=(*server, *setup.extra.server)),
            reference_extra=ConfExtra(server=server),
        )
    return table


def njs_script(file_bytes: int) -> str:
    """The njs handlers the njs features import: an access check that passes, a response."""
    return (
        f"const body = 'x'.repeat({file_bytes});\n"
        "function access(r) { return; }\n"
        "function content(r) { r.return(200, body); }\n"
        "export default {access, content};\n"
    )


@dataclass
class Trial:
    """One trial: requests and the workers' CPU time per request [us].

    ``side`` holds, for a feature run in a container, the log path's processes (``shim``,
    ``reader``, ``containerd``): their (user, kernel) CPU time per request [us].
    """

    requests: int
    user_us: float
    kernel_us: float
    side: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class Result:
    """One feature's pairs, or why it was not measured."""

    feature: str
    reference: str = "static"
    ref: list[Trial] = field(default_factory=list)
    on: list[Trial] = field(default_factory=list)
    note: str = ""
    floods: list[Flood] = field(default_factory=list)
    line_bytes: float = math.nan
    runtime_version: str = ""
    container_path: str = ""

    @property
    def measured(self) -> bool:
        """Whether at least two pairs were measured."""
        return len(self.ref) >= 2 and len(self.on) == len(self.ref)


@dataclass(frozen=True)
class Bench:
    """The host, its nginx and the wrk argv each side is loaded with."""

    host: Host
    nginx: NginxHost
    wrk: str
    modules_dir: str
    wrk_cpus: tuple[int, ...]


_STAT = 'for p; do cat "/proc/$p/stat" 2>/dev/null || echo "GONE $p"; done'


def read_ticks(host: Host, pids: Sequence[int]) -> tuple[int, int]:
    """The pids' summed (user, kernel) CPU time [clock ticks]; `RunnerError` if one is gone."""
    each = read_ticks_each(host, pids)
    return sum(u for u, _ in each), sum(k for _, k in each)


def read_ticks_each(host: Host, pids: Sequence[int]) -> list[tuple[int, int]]:
    """Each pid's (user, kernel) CPU time [clock ticks], in order; `RunnerError` if one is gone."""
    out = host.sh(_STAT, *map(str, pids), what="reading nginx's CPU time")
    each = []
    for line in out.stdout.splitlines():
        if line.startswith("GONE "):
            raise RunnerError(f"process {line.split()[1]} stopped during the trial")
        each.append(stat_user_system(line))
    return each


def run_trial(bench: Bench, dep: Deployment, settings: Settings, seconds: int) -> Trial:
    """Load ``dep`` for ``seconds`` s with wrk; its workers' CPU time per request."""
    assert dep.port is not None
    url = f"http://127.0.0.1:{dep.port}{dep.scenario.path}"
    load = Load(url, 1, settings.connections, seconds, cpus=bench.wrk_cpus)
    argv = wrk.command(load, binary=bench.wrk)
    pids = dep.pids()
    side = dep.side_pids() if isinstance(dep, ContainerDeployment) else {}
    before = read_ticks_each(bench.host, [*pids, *side.values()])
    r = bench.host.run(argv, check=False, timeout=seconds + 60, what="wrk")
    after = read_ticks_each(bench.host, [*pids, *side.values()])
    m = wrk.parse_text(r.stdout)
    if m.requests <= 0 or m.error_count > MAX_ERROR_RATE * m.requests:
        raise RunnerError(
            f"{m.error_count} errors in {m.requests} responses "
            f"({dep.error_log_tail() or 'nothing in the error log'})"
        )
    per = 1e6 / bench.nginx.clk_tck / m.requests
    used = [
        ((u1 - u0) * per, (k1 - k0) * per) for (u0, k0), (u1, k1) in zip(before, after, strict=True)
    ]
    n = len(pids)
    return Trial(
        m.requests,
        sum(u for u, _ in used[:n]),
        sum(k for _, k in used[:n]),
        dict(zip(side, used[n:], strict=True)),
    )


def _deployment(
    bench: Bench, scenario: Scenario, setup: Setup | None, runtime: Containerd | None
) -> Deployment:
    """A private nginx for ``scenario`` (with ``setup``'s lines), in ``runtime`` if given."""
    dep: Deployment
    if isinstance(runtime, CriContainerd):
        dep = CriDeployment(bench.nginx, scenario, runtime, runtime.record)
    elif runtime is not None:
        dep = ContainerDeployment(bench.nginx, scenario, runtime, runtime.record)
    else:
        dep = Deployment(bench.nginx, scenario)
    if setup is not None:
        loads = tuple(f"load_module {bench.modules_dir.rstrip('/')}/{m};" for m in setup.modules)
        dep.extra = replace(setup.extra, main=loads + setup.extra.main)
    return dep


def _start(bench: Bench, dep: Deployment, settings: Settings, script: bool) -> None:
    """Make the prefix (and the njs script in it), start nginx, warm it up (1 s, unmeasured)."""
    dep.setup()
    if script:
        assert dep.prefix is not None
        bench.host.write_text(f"{dep.prefix}/{NJS_SCRIPT}", njs_script(settings.file_bytes))
    dep.start([settings.cpu])
    run_trial(bench, dep, settings, 1)


def missing_modules(bench: Bench, setup: Setup) -> list[str]:
    """The module files ``setup`` needs that are not on the host."""
    paths = [f"{bench.modules_dir.rstrip('/')}/{m}" for m in setup.modules]
    if not paths:
        return []
    out = bench.host.sh('for f; do [ -f "$f" ] || echo "$f"; done', *paths, check=False)
    return out.stdout.split()


def measure(bench: Bench, name: str, settings: Settings, say: Callable[[str], None]) -> Result:
    """One feature's interleaved pairs; a `Result` with a note when it cannot run here."""
    setup = setups(settings.file_bytes, Scenario(protocol="http").path)[name]
    result = Result(name, setup.reference)
    missing = missing_modules(bench, setup)
    if missing:
        result.note = f"module not installed: {', '.join(missing)}"
        return result
    if not setup.runtime:
        _pairs(bench, result, setup, settings, say, None)
        return result
    absent = container.missing(bench.host)
    if absent:
        result.note = f"not measured, containerd absent: needs {', '.join(absent)}"
        return result
    result.container_path = settings.container_path
    try:
        cri = settings.container_path == "cri"
        with recording(settings.runs, name) as run:
            make = CriContainerd if cri else Containerd
            with make(bench.host, record=run) as runtime:
                result.runtime_version = runtime.version()
                _pairs(bench, result, setup, settings, say, runtime)
    except RunnerError as exc:
        result.note = f"did not run here: {exc}"
        result.ref, result.on, result.floods = [], [], []
    return result


def _pairs(
    bench: Bench,
    result: Result,
    setup: Setup,
    settings: Settings,
    say: Callable[[str], None],
    runtime: Containerd | None,
) -> None:
    """Run the interleaved pairs into ``result`` (in ``runtime``'s containers if given).

    In containers, a flood of the log path (`Containerd.flood`) follows each pair.
    """
    ref_scn = Scenario(protocol="http", file_bytes=settings.file_bytes)
    ref_setup = None if setup.reference_extra is None else Setup(extra=setup.reference_extra)
    ref_dep = _deployment(bench, replace(ref_scn, name=setup.reference), ref_setup, runtime)
    on_dep = _deployment(bench, replace(ref_scn, name=setup.scenario), setup, runtime)
    name = result.feature
    with ref_dep, on_dep:
        try:
            _start(bench, ref_dep, settings, False)
            _start(bench, on_dep, settings, setup.modules == NJS_MODULES)
            for i in range(settings.pairs):
                sides = [(ref_dep, result.ref), (on_dep, result.on)]
                for dep, trials in sides if i % 2 == 0 else sides[::-1]:
                    trials.append(run_trial(bench, dep, settings, settings.seconds))
                r, f = result.ref[-1], result.on[-1]
                say(
                    f"{name} pair {i + 1}/{settings.pairs}: extra user "
                    f"{f.user_us - r.user_us:+.2f} us, kernel {f.kernel_us - r.kernel_us:+.2f} us"
                )
                if runtime is not None:
                    _floods(bench, result, settings, runtime, say)
            if isinstance(on_dep, ContainerDeployment):
                result.line_bytes = container.mean_line_bytes(bench.host, on_dep.stdout_path())
        except RunnerError as exc:
            result.note = f"did not run here: {exc}"
            result.ref, result.on, result.floods = [], [], []


def _floods(
    bench: Bench,
    result: Result,
    settings: Settings,
    runtime: Containerd,
    say: Callable[[str], None],
) -> None:
    """One flood of each of `FLOODS` through ``runtime``'s log path, into ``result``."""
    for flood in FLOODS:
        got = runtime.flood(flood, settings.cpu, bench.nginx.clk_tck)
        result.floods.append(got)
        say(
            f"{result.feature} flood ({flood.per_write} lines a write): "
            f"{got.lines_per_s:,.0f} lines/s, shim {got.cpu_share('shim'):.2f} CPU, "
            f"reader {got.cpu_share('reader'):.2f} CPU"
        )


def open_bench(host: Host, cpu: int) -> tuple[Bench, dict[str, Any]]:
    """The bench on ``host`` and its facts; wrk goes on the CPUs other than ``cpu``."""
    info = facts(host, ["nginx", "wrk", "taskset"])
    missing = [t for t in ("nginx", "wrk") if not info["tools"].get(t)]
    if missing:
        raise RunnerError(f"{' and '.join(missing)} not found on {host.name}")
    allowed = info["cpus_allowed"]
    if cpu not in allowed:
        raise RunnerError(f"--cpu {cpu} is not among this host's CPUs ({allowed})")
    nginx_v = host.run([info["tools"]["nginx"], "-V"], check=False)
    others = tuple(c for c in allowed if c != cpu) if info["tools"].get("taskset") else ()
    bench = Bench(
        host=host,
        nginx=NginxHost(
            host,
            nginx=info["tools"]["nginx"],
            as_root=info.get("user") == "root",
            clk_tck=info["clk_tck"],
            nginx_version=info.get("nginx_version", ""),
            worker_group=info.get("nobody_group", ""),
        ),
        wrk=info["tools"]["wrk"],
        modules_dir=jwt.modules_path(nginx_v.stderr + nginx_v.stdout),
        wrk_cpus=others,
    )
    return bench, info


def run_campaign(
    settings: Settings, host: Host | None = None, progress: IO[str] | None = sys.stderr
) -> tuple[list[Result], dict[str, Any]]:
    """Measure every feature of ``settings``; the results and the host's facts."""
    host = host or LocalHost()

    def say(text: str) -> None:
        if progress is not None:
            print(text, file=progress, flush=True)

    bench, info = open_bench(host, settings.cpu)
    info["loadavg_before"] = loadavg(host)
    results = [measure(bench, name, settings, say) for name in settings.features]
    info["loadavg_after"] = loadavg(host)
    info["packages"] = _packages(host)
    return results, info


def loadavg(host: Host) -> str:
    """The host's load average over 1, 5 and 15 minutes, as /proc/loadavg gives it."""
    return " ".join(host.run(["cat", "/proc/loadavg"], check=False).stdout.split()[:3])


def _packages(host: Host) -> dict[str, str]:
    """Debian package versions of nginx and the modules (empty where not installed)."""
    out = host.run(
        ["dpkg-query", "-W", "-f=${Package} ${Version}\\n", *PACKAGES], check=False
    ).stdout
    return dict(ln.split(" ", 1) for ln in out.splitlines() if " " in ln)


def median_interval(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """The median of ``values`` and the seeded percentile bootstrap interval of it.

    Returns
    -------
    median, low, high : float
        NaN for all three with no values.
    """
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return math.nan, math.nan, math.nan
    rng = random.Random(BOOTSTRAP_SEED)
    meds = sorted(
        statistics.median(rng.choices(vals, k=len(vals))) for _ in range(BOOTSTRAP_RESAMPLES)
    )
    tail = (1 - confidence) / 2
    low = meds[math.floor(tail * (len(meds) - 1))]
    high = meds[math.ceil((1 - tail) * (len(meds) - 1))]
    return statistics.median(vals), low, high


def cpu_text(info: dict[str, Any]) -> str:
    """The host's CPU as the table records it: its name, with its CPUID where read."""
    name, cpuid = info.get("cpu_model", ""), info.get("cpu_id", "")
    return f"{name} ({cpuid})" if cpuid else name


def row(result: Result, settings: Settings, info: dict[str, Any], when: str) -> JsonObject:
    """One feature's row of the table (`trialtable.features.FEATURE_COSTS`)."""
    out: dict[str, Any] = dict.fromkeys(FEATURE_COST_COLUMNS, "")
    out.update(
        feature=result.feature,
        reference=result.reference,
        status=MEASURED if result.measured else NOT_MEASURED,
        pairs=len(result.ref) if result.measured else 0,
        file_bytes=settings.file_bytes,
        cpu_model=cpu_text(info),
        nginx_version=info.get("nginx_version", ""),
        measured_at=when,
        note=result.note,
    )
    if result.measured:
        for part in ("user", "kernel"):
            diffs = [
                getattr(f, f"{part}_us") - getattr(r, f"{part}_us")
                for r, f in zip(result.ref, result.on, strict=True)
            ]
            med, low, high = median_interval(diffs)
            out[f"{part}_us"], out[f"{part}_low_us"], out[f"{part}_high_us"] = med, low, high
            out[f"ref_{part}_us"] = statistics.median(getattr(r, f"{part}_us") for r in result.ref)
    return out


def to_csv(rows: Sequence[Mapping[str, object]]) -> str:
    """The table as CSV text (`trialtable.output.table_csv`)."""
    return table_csv(rows, FEATURE_COST_COLUMNS)


#: How a feature's pairs were set up, where it differs from the reference's (`notes_md`).
SETUP_NOTES = {
    CONTAINER_LOG: "- access_log_container: both nginx (reference and feature) run in containers "
    "of a private containerd (pods made over its CRI API, as a kubelet makes them; "
    "`--container-path ctr`: `ctr run --rootfs`), the host's /usr and /etc mounted "
    "read-only, the node's network, the feature with `access_log /dev/stdout`; the "
    "row is the nginx worker's own extra, the runtime's CPU per line (shim, reader) "
    f"and the path's line rate are in {LOG_PATH_FILE}",
    INGRESS_NGINX: "- ingress_nginx: the proxy's location made an ingress-nginx one "
    "(`runners.calibrate.ingress`: its variables, proxy headers and $req_id, and "
    "Lua in the rewrite, balancer, header-filter and log phases doing the "
    "controller's per-request work, metrics JSON-encoded per request), against "
    "the plain proxy",
    INGRESS_NGINX_NO_METRICS: "- ingress_nginx_no_metrics: the same with the controller's "
    "metrics off (no monitor.call() in the log phase, no flush timer), against the plain proxy",
    UPSTREAMINFO_LOG: "- access_log_upstreaminfo: both sides are the proxy with an unbuffered "
    "access log to a file and the ingress location's variables; the reference writes the "
    "combined line, the feature ingress-nginx's upstreaminfo line "
    "(`runners.calibrate.ingress.upstreaminfo_extras`): the longer line's extra "
    "alone, its reference request carrying a combined log line",
    "try_files_check": "- try_files_check: both sides without open_file_cache (NGINX's "
    "default, where the lookup is a stat), the feature with `try_files $uri =404` in its "
    "server: one candidate looked up, the file found",
}


def _setup_notes(rows: Sequence[dict[str, Any]], names: tuple[str, ...]) -> list[str]:
    """The `SETUP_NOTES` of those of ``names`` that ``rows`` hold, in that order."""
    held = {r["feature"] for r in rows}
    return [SETUP_NOTES[n] for n in names if n in held]


def notes_md(
    rows: Sequence[dict[str, Any]], settings: Settings, info: dict[str, Any], command: str
) -> str:
    """The table's notes: host, versions, settings, command, date, load, and what it means."""
    packages = info.get("packages", {})
    versions = ", ".join(f"{k} {v}" for k, v in packages.items()) or "not known (no dpkg)"
    lines = [
        "# Feature costs measured on this host",
        "",
        f"- Command: `{command}`",
        f"- Date (UTC): {max((str(r['measured_at']) for r in rows), default='')}",
        f"- Host CPU: {info.get('cpu_model', '')} ({info.get('cores', '?')} CPUs online), "
        f"kernel {info.get('kernel', '')}",
        f"- nginx: {info.get('nginx_version', '')}; OpenSSL: {info.get('openssl_version', '')}; "
        f"packages: {versions}; wrk: {info.get('wrk_version', '')}",
        f"- Load average (1, 5, 15 min) before: {info.get('loadavg_before', '')}, after: "
        f"{info.get('loadavg_after', '')} (the host was shared with other work: each cost is "
        "a median over pairs)",
        f"- Settings: {settings.pairs} interleaved pairs per feature (R F, F R, ...), "
        f"{settings.seconds} s per measured trial after a 1 s warm-up per nginx, wrk with 1 "
        f"thread and {settings.connections} keep-alive connections over loopback on CPUs "
        f"other than {settings.cpu}; each nginx has one worker pinned to CPU {settings.cpu}; "
        f"{settings.file_bytes} B body over HTTP/1.1; the proxy's upstream is the deployment's "
        "own nginx file server on 127.0.0.1 (its CPU is not counted)",
        "- Reference: the static config of `runners.deploy.conf` (access log off, keep-alive, "
        "sendfile, open_file_cache); `reverse_proxy` rows compare against its proxy (upstream "
        "keep-alive) instead",
        "- Cost: the nginx worker's and master's CPU time from /proc/PID/stat (utime = user, "
        "stime = kernel; clock ticks), per request; a feature's cost is the median over pairs "
        "of (feature on - reference), its spread the seeded percentile bootstrap 95% interval "
        "of that median (`*_low_us`, `*_high_us`)",
        *_setup_notes(rows, (CONTAINER_LOG,)),
        "- Lua and njs rows measure a minimal handler (one variable read or a fixed response): "
        "real handlers do more",
        *_setup_notes(rows, (INGRESS_NGINX, INGRESS_NGINX_NO_METRICS, UPSTREAMINFO_LOG)),
        *_setup_notes(rows, ("try_files_check",)),
        "- Over loopback the sender's kernel time includes delivering each segment to the "
        "receiving socket, so kernel costs hold part of the peer's receive path; the reference "
        "request, measured the same way in the same pairs, carries that too",
        "",
        "| feature | vs | pairs | user us (95%) | kernel us (95%) | reference user/kernel us "
        "| note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["status"] == MEASURED:
            user = f"{r['user_us']:.2f} ({r['user_low_us']:.2f}..{r['user_high_us']:.2f})"
            kern = f"{r['kernel_us']:.2f} ({r['kernel_low_us']:.2f}..{r['kernel_high_us']:.2f})"
            ref = f"{r['ref_user_us']:.2f} / {r['ref_kernel_us']:.2f}"
        else:
            user = kern = ref = "not measured"
        note = str(r["note"]).replace("|", "/").replace("\n", " ")
        head = f"| {r['feature']} | {r['reference']} | {r['pairs']}"
        lines.append(f"{head} | {user} | {kern} | {ref} | {note} |")
    return "\n".join(lines) + "\n"


def write_table(
    results: Sequence[Result],
    settings: Settings,
    info: dict[str, Any],
    out: Path,
    command: str,
) -> list[JsonObject]:
    """Write ``out`` (CSV) and its notes (``.md`` beside it); this run's rows.

    Rows of features this run did not measure are kept as ``out`` had them (with the notes of
    their run). A feature run in containers also appends its log path's rows to
    `LOG_PATH_FILE` beside ``out`` (`runners.calibrate.logpath`).
    """
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [row(r, settings, info, when) for r in results]
    kept, earlier = earlier_table(out, {r.feature for r in results})
    table = sorted([*kept, *rows], key=lambda r: FEATURE_NAMES.index(r["feature"]))
    write_atomic(out, to_csv(table))
    notes = notes_md(table, settings, info, command) + earlier
    write_atomic(out.with_suffix(".md"), notes)
    for r in results:
        common = _log_path_common(r, info, when)
        new = logpath.rows((r.ref, r.on), settings.seconds, r.floods, common)
        if new:
            logpath.append(out.parent / LOG_PATH_FILE, new, command)
    return rows


def _log_path_common(result: Result, info: dict[str, Any], when: str) -> dict[str, FieldValue]:
    """The columns every log-path row of ``result`` shares."""
    return {
        "measured_at": when,
        "container_path": result.container_path,
        "line_bytes": result.line_bytes if math.isfinite(result.line_bytes) else None,
        "lines_per_write": 1,
        "path": logpath.PATHS.get(result.container_path, ""),
        "cpu_model": info.get("cpu_model", ""),
        "cpus": info.get("cores", 1),
        "containerd_version": result.runtime_version,
        "nginx_version": info.get("nginx_version", ""),
        "loadavg": f"{info.get('loadavg_before', '')} -> {info.get('loadavg_after', '')}",
    }


def earlier_table(out: Path, measured: set[str]) -> tuple[list[dict[str, Any]], str]:
    """The rows of ``out`` for features not in ``measured``, and their run's notes.

    Returns the kept rows (typed as `row` makes them) and the notes of their runs from
    ``out``'s ``.md`` (`_earlier_notes`); `BadInput` when ``out`` exists but is not a
    feature-cost table.
    """
    if not out.exists():
        return [], ""
    try:
        reader = csv.DictReader(io.StringIO(out.read_text(encoding="utf-8")))
        if tuple(reader.fieldnames or ()) != FEATURE_COST_COLUMNS:
            raise FieldError(f"{out}:1: not a feature-cost table (other columns)")
        kept = [
            FEATURE_COSTS.parse_row(r, f"{out}:{i}")
            for i, r in enumerate(reader, start=2)
            if r.get("feature") not in measured
        ]
    except (OSError, UnicodeDecodeError, FieldError) as exc:
        raise BadInput(f"--out {out}: cannot keep its other rows: {exc}") from None
    kept = [{k: "" if v is None else v for k, v in r.items()} for r in kept]
    md = out.with_suffix(".md")
    if not kept or not md.exists():
        return kept, ""
    return kept, _earlier_notes(md.read_text(encoding="utf-8"), kept)


#: The heading of an earlier run's notes in the ``.md`` (its date follows).
RUN_OF = "## Rows measured at "


def _earlier_notes(md: str, kept: Sequence[Mapping[str, FieldValue]]) -> str:
    """The notes of the runs whose rows are kept, one section per run (by ``measured_at``).

    ``md``'s own header describes the run of its "Date (UTC)"; its sections, earlier runs.
    Only the runs that still own a kept row are carried.
    """
    head, _, rest = md.partition("\n| feature |")
    bullets = [ln for ln in head.splitlines() if ln.startswith("- ")]
    date = next((b.split(": ", 1)[1] for b in bullets if b.startswith("- Date (UTC): ")), "")
    runs = {date: bullets} if date else {}
    for section in rest.split("\n" + RUN_OF)[1:]:
        when, _, body = section.partition("\n")
        # Its own "- Rows:" line is written anew below (kept, it would repeat on every run).
        kept_lines = [ln for ln in body.splitlines() if ln.startswith("- ")]
        runs.setdefault(when.strip(), [ln for ln in kept_lines if not ln.startswith("- Rows: ")])
    text: list[str] = []
    for when in sorted({str(r["measured_at"]) for r in kept}):
        names = ", ".join(str(r["feature"]) for r in kept if r["measured_at"] == when)
        notes = runs.get(when, ["- (no notes were kept for this run)"])
        text += ["", f"{RUN_OF}{when}", "", f"- Rows: {names}", *notes]
    return "\n".join(text) + "\n" if text else ""


def command_line(argv: Sequence[str]) -> str:
    """The command as typed, for the notes."""
    return shlex.join(["python", "-m", "runners", *argv])
