"""Held-out benchmark: the model against published NGINX deployments no fit reads.

Run (a few seconds)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_heldout.py

Each row of ``data/reference/heldout-deployments.csv`` (sources and columns in
``heldout-deployments.md``) is sized the way ``recommend`` sizes one instance:
`sizing.model.capacity.instance_capacity` for the row's instance type, protocol, body size,
scenario and environment, its peak (CPU peak, capped by the network) times the number of
instances that served the published figure, with the 95% range from the answer's own log sd.
A row whose machine is not in the catalog (bare metal, Azure, an unnamed CPU) is sized on the
catalog type named in ``model_instance``, set to the row's vCPUs (and link, where given): the
``mapped`` column says so. A row whose NGINX ran fewer workers than its catalog type has vCPUs
(``vcpus_nginx`` below them: e.g. one APISIX worker on a 2-vCPU VM) is capped at those
workers' vCPUs (`workers_cap`).

Each row's configuration becomes the workload's features (`trialtable.features`), priced from
the feature costs measured on this project's own host (``data/reference/feature-costs.csv``),
which no row here was used to make: an access log that is on; a proxy with or without upstream
keep-alive; for the ingress-nginx controller's rows the measured ``ingress_nginx`` feature
(what its template and Lua run per proxied request, `runners.calibrate.ingress`), and for the
other ``ingress_lua`` rows (Kong, also OpenResty) a minimal Lua handler in each phase
ingress-nginx's template runs on every proxied request (`sizing.workload.conf.ingress.LUA`).
``--no-features`` sizes every row as the tuned reference config instead (``ingress_lua`` as
``api_gateway``), the model before the configuration was read, for comparison in one run.

The published harness is sized as it ran (`same_host`, `with_colocated`, `features_of`):
runs of minutes at the providers' burst rate; a load generator on NGINX's own machine over
loopback, taking its share (`sizing.fitting.samevm`); a program beside NGINX that the source
measured alone, taking its share; an access log to a container's stdout priced as the
``access_log_container`` feature with the container runtime's log path
(`sizing.model.logpath`: its CPU per line and the cap one container's stream sets).
What a row leaves unknown (`unknowns`: its CPU, its environment) widens its range by a term
fitted on the fitted data, and the table names each row's widest term.

``--trace ROW_ID`` prints one row's prediction term by term instead (each CPU term, the
platform speed and its source, the SLA derating, the caps).

Nothing here or in the data file is read by any fit (``tests/test_heldout.py`` checks that
only ``benchmarks/`` and ``tests/`` name the file).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sizing.fitting.samevm import ClientSpeed

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "reference" / "heldout-deployments.csv"
Z95 = 1.959964
#: The model's scenario for each scenario the data names.
SCENARIO = {"static": "static", "reverse_proxy": "reverse_proxy", "ingress_lua": "reverse_proxy"}
#: The same, when the configuration is not read (``--no-features``).
SCENARIO_PLAIN = {**SCENARIO, "ingress_lua": "api_gateway"}


def features_of(row: dict[str, str]) -> tuple[tuple[str, float], ...]:
    """The configuration features a row's columns state, each once per request."""
    from sizing.workload.conf.ingress import INGRESS_FEATURE, LUA

    names = []
    if row["access_log"].startswith("on"):
        # To a container's stdout: the runtime's log path (sizing.model.logpath) too.
        names.append("access_log_container" if "stdout" in row["access_log"] else "access_log")
    if row["scenario"] in ("reverse_proxy", "ingress_lua"):
        kept = row["upstream_keepalive"].startswith("yes")
        names.append("proxy_keepalive" if kept else "proxy_new_connection")
    if "ingress-nginx" in row["lua"]:
        names.append(INGRESS_FEATURE)  # the controller's per-request work, measured as one
    elif row["lua"].startswith("yes"):
        names += [name for name, _line in LUA]
    names += file_defaults(row)
    return tuple((name, 1.0) for name in names)


#: The file-serving defaults a row's ``nginx_defaults`` may list -> the priced feature (None:
#: named as the answer names it, not priced; `sizing.workload.conf.derive.SENDFILE_OFF`).
FILE_DEFAULTS = {
    "open_file_cache off": "open_file_cache_off",
    "tcp_nopush off": "tcp_nopush_off",
    "sendfile off": None,
}


def file_defaults(row: dict[str, str]) -> list[str]:
    """The priced features of a row's ``nginx_defaults``: its list before any ``(``, checked."""
    cell = row["nginx_defaults"]
    if cell.startswith("n/a"):
        return []
    listed = [t.strip() for t in cell.split(" (", 1)[0].split(",")]
    unknown = [t for t in listed if t not in FILE_DEFAULTS]
    if unknown:
        raise ValueError(
            f"{row['row_id']}: nginx_defaults {unknown[0]!r} is not one of {list(FILE_DEFAULTS)}"
        )
    return [f for t in listed if (f := FILE_DEFAULTS[t]) is not None]


def same_host(row: dict[str, str]) -> bool:
    """The load generator ran on NGINX's own machine (it shared the vCPUs)."""
    return row["client_placement"].startswith("same host")


def client_shared(
    cpu_peak: float, nginx_us: float, speed: ClientSpeed | None = None
) -> tuple[float, float]:
    """NGINX's peak [1/s] and the added log sd when a load generator shares its vCPUs.

    Each request costs NGINX ``nginx_us`` (on the reference core) and the client
    `same_vm_client_cost` (on the client's own scale), times NGINX's speed over the
    client's on the platform (`client_speed`; 1 without one), so NGINX gets
    `nginx_share` of the machine; the client's spread over instance types adds its share of
    the log sd.
    """
    from sizing.fitting.samevm import nginx_share, same_vm_client_cost

    client = same_vm_client_cost()
    share = nginx_share(nginx_us, client.us, speed.ratio if speed is not None else 1.0)
    return cpu_peak * share, (1 - share) * client.rel_sd


def client_speed_of(cap: Any, work: Any) -> ClientSpeed | None:
    """The same-VM client's speed on the platform an answer was sized on (None: none known)."""
    from sizing.fitting.samevm import client_speed
    from sizing.model.cloud import workload_class

    if cap.platform is None:
        return None
    plat = cap.platform
    return client_speed(plat.platform_id, plat.threads_per_core, workload_class(work.file_bytes))


def with_colocated(cpu_peak: float, row: dict[str, str]) -> float:
    """NGINX's peak [1/s] on a machine it shares with a program the row's source measured.

    The source's ``colocated_rps`` is that program's own peak over the row's instances
    (e.g. the backend alone on the same nodes); each request costs both their CPU time, so
    the machine serves ``1 / (1 / nginx + 1 / colocated)``.
    """
    if not row.get("colocated_rps"):
        return cpu_peak
    other = float(row["colocated_rps"]) / int(row["instances"])
    return 1.0 / (1.0 / cpu_peak + 1.0 / other)


def workers_cap(cpu: float, cpu_peak: float, workers: int, vcpus: int) -> float:
    """NGINX's peak [1/s] when it runs fewer workers than the instance has vCPUs.

    Each worker runs on at most one vCPU, so NGINX gets at most ``workers / vcpus`` of the
    instance's CPU peak ``cpu_peak`` [1/s]; ``cpu`` is its peak before the cap (after any
    same-host client's share). With as many workers as vCPUs (or more) nothing changes.
    `sizing.model.capacity` caps a workload's ``workers`` otherwise (a worker alone on a
    hyper-threaded core runs faster there); the rows capped here are one worker on
    Graviton and Altra, a thread per core, where the two agree, and the cap must come after
    the share a load generator on the same VM takes, which the model does not size.
    """
    if workers >= vcpus:
        return cpu
    return min(cpu, cpu_peak * workers / vcpus)


#: Providers whose environment a fitted source measured (others: an unseen environment).
SEEN_PROVIDERS = ("aws", "gcp", "bare-metal")


def unknowns(row: dict[str, str]) -> dict[str, float]:
    """Log sds for what the row's machine leaves unknown, each from the fitted data.

    - ``unknown CPU`` (the source names no CPU): the sd of the fitted x86 hyper-thread platforms'
      per-vCPU speeds (`sizing.fitting.samevm.unknown_cpu_sd`): the CPU may be any of them.
    - ``unseen environment`` (a provider or site no fitted source measured): the sd of one
      fitted harness's platform placements about the other's after their common shift
      (``stand_in_gap_sd`` of the cloud model, fitted on its two sources).
    """
    from sizing.fitting.samevm import unknown_cpu_sd
    from sizing.model.capacity import cloud_model

    out = {}
    if row["cpu_model"].startswith("not stated"):
        out["unknown CPU"] = unknown_cpu_sd()
    if not row["provider"].startswith(SEEN_PROVIDERS):
        out["unseen environment"] = float(cloud_model().stand_in_gap_sd)
    return out


def load_rows(path: Path = DATA) -> list[dict[str, str]]:
    """The held-out rows, as text."""
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _catalog() -> dict[str, Any]:
    from sizing.catalog.load import load_catalog

    out: dict[str, Any] = {}
    for inst in load_catalog():
        out.setdefault(inst.instance_type, inst)
    return out


def sized_as(row: dict[str, str], catalog: dict[str, Any], configured: bool = True) -> Any:
    """The instance and workload a row is sized as (see the module's docstring)."""
    from sizing.workload.value import Workload

    inst = catalog[row["model_instance"]]
    if row["instance_type"] != row["model_instance"]:
        changes: dict[str, Any] = {"vcpus": int(row["vcpus_nginx"]), "instance_type": row["row_id"]}
        if row.get("link_gbps"):
            changes.update(network_gbps=float(row["link_gbps"]), network_burst_gbps=None)
        inst = dataclasses.replace(inst, **changes)
    work = Workload(
        scenario=(SCENARIO if configured else SCENARIO_PLAIN)[row["scenario"]],
        protocol=row["protocol"],
        file_bytes=int(row["body_bytes"]),
        # A client on the same host reaches NGINX over loopback: no pod network path, no NIC.
        environment="bare-metal" if same_host(row) else row["environment"],
        features=features_of(row) if configured else (),
        burst_network=True,
    )
    return inst, work


def trace(row_id: str, configured: bool = True) -> list[str]:
    """One row's prediction term by term: the answer's own basis lines, then the peak.

    Each CPU term [us per request on the reference core] with its coefficient, the platform
    speed [reference cores per vCPU] and where it comes from, the SLA derating and the caps,
    as `instance_capacity` states them. Raises KeyError for a row that is not in the data.
    """
    from sizing.model.capacity import instance_capacity

    rows = {r["row_id"]: r for r in load_rows()}
    if row_id not in rows:
        raise KeyError(row_id)
    inst, work = sized_as(rows[row_id], _catalog(), configured)
    cap = instance_capacity(inst, work)
    vcpu_us = inst.vcpus * 1e6 / cap.cpu_peak_rps
    lines = [
        *cap.basis,
        f"peak: {cap.cpu_peak_rps:,.0f} RPS on the CPU ({cap.cpu_us_per_request:.1f} us on the "
        f"reference core = {vcpu_us:.1f} us of one of {inst.vcpus} vCPUs per request), "
        f"{cap.network_rps:,.0f} RPS on the network",
    ]
    if same_host(rows[row_id]):
        lines += client_lines(cap, work)
    workers = int(rows[row_id]["vcpus_nginx"])
    if workers < inst.vcpus:
        lines.append(
            f"workers' cap: {workers} worker(s) of {inst.vcpus} vCPUs: at most "
            f"{cap.cpu_peak_rps * workers / inst.vcpus:,.0f} RPS"
        )
    return lines


def client_lines(cap: Any, work: Any) -> list[str]:
    """A same-VM row's client terms: its cost, its own speed and NGINX's share, with sources."""
    from sizing.fitting.samevm import same_vm_client_cost

    client, speed = same_vm_client_cost(), client_speed_of(cap, work)
    peak, _ = client_shared(cap.cpu_peak_rps, cap.cpu_us_per_request, speed)
    ratio = speed.ratio if speed is not None else 1.0
    return [
        f"same-VM client: {client.us:.1f} us per request at its own speed ({client.source})",
        f"client's speed: {speed.source if speed is not None else 'none known: NGINX speed'}",
        f"NGINX's share: {cap.cpu_us_per_request:.1f} / ({cap.cpu_us_per_request:.1f} + "
        f"{client.us:.1f} x {ratio:.2f}) = {peak / cap.cpu_peak_rps:.2f} of the VM: "
        f"{peak:,.0f} RPS",
    ]


def predict(
    row: dict[str, str], catalog: dict[str, Any], configured: bool = True
) -> dict[str, Any]:
    """The model's peak capacity and 95% range for one row, with the row's figures."""
    from sizing.model.capacity import instance_capacity

    vcpus = int(row["vcpus_nginx"])
    mapped = row["instance_type"] != row["model_instance"]
    same_vm = same_host(row)
    inst, work = sized_as(row, catalog, configured)
    cap = instance_capacity(inst, work)
    cpu, net = cap.cpu_peak_rps, cap.network_rps
    terms = {"model": cap.rel_sd}
    if same_vm:
        speed = client_speed_of(cap, work)
        cpu, terms["same-VM client"] = client_shared(cpu, cap.cpu_us_per_request, speed)
        net = math.inf
    cpu = workers_cap(cpu, cap.cpu_peak_rps, vcpus, inst.vcpus)
    cpu = with_colocated(cpu, row)
    terms.update(unknowns(row))
    rel_sd = math.sqrt(sum(v * v for v in terms.values()))
    n = int(row["instances"])
    peak = min(cpu, net) * n
    lo = min(cpu * math.exp(-Z95 * rel_sd), net) * n
    hi = min(cpu * math.exp(Z95 * rel_sd), net) * n
    published = float(row["measured_rps"])
    return {
        "row": row["row_id"],
        "source": row["source_id"],
        "published": published,
        "predicted": peak,
        "low": lo,
        "high": hi,
        "ratio": peak / published,
        "ln": math.log(peak / published),
        "inside": lo <= published <= hi,
        "width": hi / lo,
        "mapped": f"{row['model_instance']} @ {vcpus} vCPU" if mapped else "",
        "server_bound": row["server_bound"],
        "platform": cap.platform.name if cap.platform is not None else "",
        "dominant": max(terms, key=lambda k: terms[k]),
    }


def summary(results: list[dict[str, Any]]) -> dict[str, float]:
    """Median |ln(pred/published)|, share within 25%, share inside the 95% range, width."""
    if not results:
        return {"n": 0}
    ln = [abs(r["ln"]) for r in results]
    return {
        "n": len(results),
        "median_abs_ln": statistics.median(ln),
        "median_ln": statistics.median(r["ln"] for r in results),
        "within_25pct": sum(abs(r["ratio"] - 1) <= 0.25 for r in results) / len(results),
        "inside_95": sum(r["inside"] for r in results) / len(results),
        "median_width": statistics.median(r["width"] for r in results),
    }


def per_source(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One pseudo-row per source: the medians of its rows (each source counted once)."""
    out = []
    for src in sorted({r["source"] for r in results}):
        grp = [r for r in results if r["source"] == src]
        ln = statistics.median(r["ln"] for r in grp)
        out.append(
            {
                "source": src,
                "n": len(grp),
                "ln": ln,
                "ratio": math.exp(ln),
                "inside": statistics.median(float(r["inside"]) for r in grp) >= 0.5,
                "width": statistics.median(r["width"] for r in grp),
            }
        )
    return out


def _fmt(s: dict[str, float]) -> str:
    if not s.get("n"):
        return "n 0"
    return (
        f"n {s['n']:>2}  median |ln(pred/pub)| {s['median_abs_ln']:.3f} "
        f"(median ln {s['median_ln']:+.3f})  within 25% {s['within_25pct']:.0%}  "
        f"inside 95% range {s['inside_95']:.0%}  median range width x{s['median_width']:.2f}"
    )


def run(path: Path = DATA, configured: bool = True) -> dict[str, Any]:
    """Score every row (with its configuration's features, or without); the summaries."""
    catalog = _catalog()
    results = [predict(r, catalog, configured) for r in load_rows(path)]
    sources = per_source(results)
    return {
        "rows": results,
        "all": summary(results),
        "server_bound_yes": summary([r for r in results if r["server_bound"] == "yes"]),
        "per_source": sources,
        "sources_once": summary(sources),
    }


def heldout_steps(catalog: dict[str, Any], path: Path = DATA) -> dict[tuple[str, str], str]:
    """Per-vCPU ratios of held-out rows of one source between two platforms, for display.

    Keyed by (subject, baseline) platform id; each value names the source and rows' ratio.
    Rows of one source, same vCPUs and harness; printed beside the published steps only
    (`speed_checks`), never used to set a speed.
    """
    from sizing.model.platforms import platform_of

    per: dict[tuple[str, str], dict[str, float]] = {}
    for row in load_rows(path):
        if row["instance_type"] != row["model_instance"]:
            continue
        pid = platform_of(catalog[row["instance_type"]]).platform_id
        key = (row["source_id"], row["vcpus_nginx"])
        per.setdefault(key, {})[pid] = float(row["measured_rps"])
    out: dict[tuple[str, str], str] = {}
    for (source, _), by_pid in per.items():
        for a, ra in by_pid.items():
            for b, rb in by_pid.items():
                if a != b:
                    out.setdefault((a, b), f"x{ra / rb:.2f} ({source})")
    return out


def speed_checks(catalog: dict[str, Any]) -> list[str]:
    """The cloud model's platform speeds against their generations: lines to print.

    Speeds far from their generation's neighbours (`sizing.fitting.speedcheck`), then each
    fitted step between two platforms against the published step (Arm's measured NGINX
    range, AWS's "up to" figures; ``data/platforms/generation-steps.csv``), with the
    held-out rows' own ratio where one source measured both platforms.
    """
    from sizing.fitting.speedcheck import FLAG_RATIO, generation_outliers, step_checks
    from sizing.model.capacity import cloud_model

    model = cloud_model()
    if model is None:
        return ["no cloud model shipped: no platform speed to check"]
    flags = generation_outliers(model)
    lines = [
        f"speeds outside x{FLAG_RATIO[1]}-x{FLAG_RATIO[0]} of their generation's neighbours: "
        f"{len(flags)}"
    ]
    for f in flags:
        held_to = " (held to a published step)" if model.speeds[f.key].capped_by else ""
        lines.append(f"  FLAG {f.key:<28} x{f.ratio:.2f} of {', '.join(f.neighbours)}{held_to}")
    held = heldout_steps(catalog)
    lines.append("fitted steps against published ones (data/platforms/generation-steps.csv):")
    for c in step_checks(model):
        subject, _, cls = c.key.split("|")
        step = next(s for s in _steps() if s.step_id == c.step_id)
        rng = f"{c.low:.2f}-{c.high:.2f}" if c.low else f"up to {c.high:.2f}"
        seen = held.get((subject, step.baseline), "") if cls == "small_static" else ""
        lines.append(
            f"  {c.step_id:<24} {c.key:<28} fitted x{c.ratio:.2f}  published {rng:<12} "
            f"{c.status:<6} {c.basis}" + (f"; held-out rows {seen}" if seen else "")
        )
    return lines


def _steps() -> tuple[Any, ...]:
    from sizing.model.steps import load_steps

    return load_steps()


def main() -> int:
    configured = "--no-features" not in sys.argv[1:]
    if "--trace" in sys.argv[1:]:
        at = sys.argv.index("--trace")
        row_id = sys.argv[at + 1] if at + 1 < len(sys.argv) else ""
        try:
            lines = trace(row_id, configured)
        except KeyError:
            print(f"bench_heldout: no row {row_id!r} in {DATA.name}", file=sys.stderr)
            return 2
        print("\n".join(lines))
        return 0
    out = run(configured=configured)
    print(
        f"{'row':<26} {'published':>10} {'predicted':>10} {'ratio':>6} {'95% range':>19} "
        f"{'in':>3} {'bound':>7}  {'widest term':<18}  mapped to"
    )
    for r in out["rows"]:
        rng = f"{r['low']:>9,.0f}-{r['high']:<9,.0f}"
        print(
            f"{r['row']:<26} {r['published']:>10,.0f} {r['predicted']:>10,.0f} "
            f"{r['ratio']:>6.2f} {rng:>19} {'yes' if r['inside'] else 'no':>3} "
            f"{r['server_bound']:>7}  {r['dominant']:<18}  {r['mapped'] or '-'}"
        )
    print("\nper source (median over its rows):")
    for s in out["per_source"]:
        print(
            f"  {s['source']:<36} n {s['n']:>2}  ratio {s['ratio']:.2f}  "
            f"inside {'yes' if s['inside'] else 'no'}  width x{s['width']:.2f}"
        )
    print("\nSUMMARY" + ("" if configured else " (--no-features: the configuration not read)"))
    print(f"  all rows:                  {_fmt(out['all'])}")
    print(f"  server-bound rows only:    {_fmt(out['server_bound_yes'])}")
    print(f"  each source counted once:  {_fmt(out['sources_once'])}")
    print("\nPLATFORM SPEEDS")
    print("\n".join(speed_checks(_catalog())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
