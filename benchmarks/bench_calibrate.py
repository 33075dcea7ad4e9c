"""Does a calibrated profile reproduce the machine it measured?

1. A calibration campaign (``runners calibrate``, one worker) writes a profile (with
   ``--held-out``, 8 more settings it is not fitted to run in its rounds and are predicted too).
2. Minutes later, DIRECT sweeps of the same host (loopback, one pinned worker, wrk on the
   other CPUs) of 12 workloads: HTTP and HTTPS, bodies of 0 B, 1 KB and 100 KB, keep-alive
   and a new connection per request (HTTPS: a full ECDSA handshake each), ``--repeats``
   interleaved rounds.
3. Each workload's capacity per vCPU is predicted from the profile through ``sizing`` exactly
   as ``recommend --profile`` computes it (`sizing.evidence.profiles.host_capacity`: the
   profile's platform, its threads per core, reference terms only where the profile has none),
   over loopback; it is compared with the measured requests per second of the worker's CPU
   (requests / the worker's CPU seconds: the worker's capacity when saturated, and on a busy
   host the number that does not depend on how much CPU other processes left it). The
   uncalibrated model (no profile) is printed beside it.
4. Each coefficient's relative error (standard error / value) and run-to-run spread.

Goals (issue 24): every ratio within 10% of 1, every coefficient's relative error under 25%,
on a quiet host. Durations are bounded: about 5 + 4 minutes on a 2-vCPU host (``--quick``
about 3 + 1.5).

    .venv/bin/python benchmarks/bench_calibrate.py [--quick] [--repeats N] [--keep DIR]
    .venv/bin/python benchmarks/bench_calibrate.py --refit DIR   # what --keep DIR kept
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine, save  # noqa: E402

from runners.calibrate import campaign as cal  # noqa: E402
from runners.calibrate.fit import cpu_us  # noqa: E402
from runners.scenario import Scenario  # noqa: E402
from runners.store import load_trials  # noqa: E402
from runners.sweep import Plan, run_sweep  # noqa: E402
from sizing.evidence.profiles import host_capacity  # noqa: E402
from sizing.evidence.profiles import read_profile as read_cost_profile  # noqa: E402
from sizing.workload.value import Workload  # noqa: E402
from trialtable.profile import read_profile  # noqa: E402

KB = 1024
SIZES = (0, KB, 100 * KB)


def workloads() -> list[tuple[str, Scenario, int, Workload]]:
    """(name, what the sweep runs, connections, what sizing is asked) of the 12 workloads."""
    out = []
    for protocol in ("http", "https"):
        for size in SIZES:
            for keepalive in (True, False):
                name = f"{protocol}_{size // KB if size else 0}{'KB' if size else 'B'}_" + (
                    "keepalive" if keepalive else "new_connection"
                )
                scenario = (
                    Scenario("static", protocol, size) if keepalive else _closed(protocol, size)
                )
                if keepalive:
                    conns = 16 if size < 100 * KB else 8
                else:
                    conns = 8 if protocol == "http" else 4
                work = Workload(
                    scenario="static",
                    protocol=protocol,
                    file_bytes=size,
                    requests_per_connection=math.inf if keepalive else 1.0,
                )
                out.append((name, scenario, conns, work))
    return out


def _closed(protocol: str, size: int) -> Scenario:
    """One request per connection with a ``size`` body (HTTPS: a full handshake each).

    The runners' ``cps`` scenario (``Connection: close``, keep-alive off in nginx) with a
    body: the runners refuse that combination on their command line (``cps`` is defined as
    0-byte), but nginx serves the body file of any size the same way.
    """
    s = Scenario("cps", protocol, 0)
    object.__setattr__(s, "file_bytes", size)
    return s


def held_out() -> list[cal.Setting]:
    """Settings the profile is not fitted to, measured in the campaign's own rounds."""
    S = cal.Setting
    return [
        S("ho_static_http_4KB", Scenario("static", file_bytes=4 * KB), 16),
        S("ho_static_http_16KB", Scenario("static", file_bytes=16 * KB), 16),
        S("ho_static_http_256KB", Scenario("static", file_bytes=256 * KB), 4),
        S("ho_static_https_4KB", Scenario("static", protocol="https", file_bytes=4 * KB), 16),
        S("ho_static_https_16KB", Scenario("static", protocol="https", file_bytes=16 * KB), 8),
        S("ho_static_https_256KB", Scenario("static", protocol="https", file_bytes=256 * KB), 4),
        S("ho_reverse_proxy_https_1KB", Scenario("reverse_proxy", "https", KB), 8),
        S("ho_reverse_proxy_http_16KB", Scenario("reverse_proxy", "http", 16 * KB), 8),
    ]


def _setting_workload(s: cal.Setting) -> Workload:
    sc = s.scenario
    return Workload(scenario=sc.name, protocol=sc.protocol, file_bytes=sc.file_bytes)


def speed_probe() -> float:
    """The campaign's speed probe, run here on the first CPU [us per ECDSA P-256 signature].

    The same fixed computation the campaign timed before each round (`runners.calibrate.campaign`):
    a different figure before the direct sweeps says the CPU's speed moved in between.
    """
    cpu = sorted(os.sched_getaffinity(0))[0]
    argv = ["taskset", "-c", str(cpu), "openssl", *cal.SPEED_PROBE.split()[1:]]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return math.nan
    return cal.parse_speed_probe(out.stdout + out.stderr)


def direct_sweeps(out: Path, repeats: int, duration_s: int, resume: bool) -> list[dict[str, Any]]:
    """Run (or, with ``resume``, reread) the direct sweeps; their trial rows."""
    out.mkdir(parents=True, exist_ok=True)
    done: dict[str, dict[str, Any]] = {}
    for run in sorted(out.iterdir()):
        if (run / "trials.csv").is_file():
            for row in load_trials(run).to_dict("records"):
                done[str(row["instance_label"])] = row
    rows = []
    for r in range(repeats):
        for name, scenario, conns, _ in workloads():
            label = f"direct-{name}-r{r + 1}"
            if label not in done:
                if resume:
                    continue
                plan = Plan(
                    scenario=scenario,
                    vcpus=(1,),
                    threads=(1,),
                    connections=(conns,),
                    duration_s=duration_s,
                    warmup_s=1,
                    cooldown_s=0.5,
                    label=label,
                )
                df = run_sweep(plan, out, progress=None)
                done[label] = df.to_dict("records")[-1]
                row = done[label]
                print(
                    f"direct {name} round {r + 1}: {float(row['rps']):,.0f} rps, "
                    f"{cpu_us(row):.1f} us CPU/request, worker "
                    f"{float(row['server_cpu_pct']):.0f}%",
                    file=sys.stderr,
                    flush=True,
                )
            rows.append({**done[label], "workload": name})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="quick campaign, 2 s direct trials")
    ap.add_argument("--repeats", type=int, default=2, help="rounds of direct sweeps (default 2)")
    ap.add_argument(
        "--held-out",
        action="store_true",
        help="also measure 8 settings the profile is not fitted to in the campaign's rounds",
    )
    ap.add_argument("--keep", metavar="DIR", help="keep the campaign and the sweeps in DIR")
    ap.add_argument("--refit", metavar="DIR", help="recompute what a --keep run left in DIR")
    args = ap.parse_args()
    if not 1 <= args.repeats <= 5:
        print("bench_calibrate: --repeats must be 1 to 5", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.refit or args.keep or tmp)
        if args.refit and not out.is_dir():
            print(f"bench_calibrate: --refit {out}: no such folder", file=sys.stderr)
            return 2
        out.mkdir(parents=True, exist_ok=True)  # a new --keep folder is made
        kept = sorted(p.name for p in out.iterdir() if (p / "campaign.json").is_file())
        if len(kept) > 1 or (args.refit and not kept):
            print(f"bench_calibrate: {out} holds {len(kept)} campaigns, not 1", file=sys.stderr)
            return 2
        # A refit measures nothing: no extra rounds beyond those the campaign ran.
        stored = json.loads((out / kept[0] / "campaign.json").read_text()) if kept else {}
        options = cal.CalibrateOptions(
            quick=args.quick,
            max_workers=1,
            extra_rounds=stored.get("options", {}).get("extra_rounds", 0) if args.refit else None,
        )
        load_before = os.getloadavg()
        # A --keep folder that holds a campaign continues it (and its missing sweeps).
        path, _ = cal.run_calibrate(
            options,
            out,
            resume=kept[0] if kept else None,
            progress=None if args.refit else sys.stderr,
            extra_settings=held_out() if args.held_out else (),
        )
        prof = read_cost_profile(path)
        unidentified = read_profile(path).extra.get("unidentified", {})
        probe_direct = math.nan if args.refit else speed_probe()
        rows = direct_sweeps(
            out / "direct", args.repeats, 2 if args.quick else 3, resume=bool(args.refit)
        )
        load_after = os.getloadavg()
        results_rows = []
        for name, _, _, work in workloads():
            mine = [r for r in rows if r["workload"] == name]
            if not mine:
                continue
            us = [cpu_us(r) for r in mine]
            measured = 1e6 / statistics.median(us)
            cap = host_capacity(prof, work)
            bare = host_capacity(prof, work, use_profile=False)
            results_rows.append(
                {
                    "workload": name,
                    "measured_per_worker_cpu_s": round(measured, 1),
                    "measured_us": [round(x, 2) for x in us],
                    "raw_rps": [round(float(r["rps"]), 1) for r in mine],
                    "worker_share": [round(float(r["server_cpu_pct"]) / 100, 3) for r in mine],
                    "predicted": round(cap.cpu_peak_rps, 1),
                    "predicted_us": round(cap.cpu_us_per_request, 3),
                    "ratio": round(cap.cpu_peak_rps / measured, 4),
                    "uncalibrated_ratio": round(bare.cpu_peak_rps / measured, 4),
                    "terms": cap.basis[1],
                }
            )
        held = []
        if args.held_out:
            campaign_rows = cal.Campaign(path.parent, {"campaign_id": path.parent.name}).trials()
            obs, _ = cal.observations(campaign_rows, held_out(), options.sla_p99_ms)
            for s in held_out():
                mine = [o.cpu_us for o in obs if o.setting == s.name]
                if mine:
                    measured = 1e6 / statistics.median(mine)
                    pred = host_capacity(prof, _setting_workload(s)).cpu_peak_rps
                    held.append({"setting": s.name, "measured": measured, "ratio": pred / measured})
        fitted = read_profile(path).coefficients
        coefs = {}
        for name, c in prof.coefficients.items():
            # sd: the fit's standard error and the run-to-run spread together (as sizing
            # reads them).
            own = fitted.get(name)
            se = own.stderr if own is not None and own.stderr is not None else math.nan
            coefs[name] = {
                "value": c.value,
                # The fit's standard error (the coefficient's own error) ...
                "stderr": se,
                "relative_error": round(se / abs(c.value), 4) if c.value else None,
                # ... and with the run-to-run spread, as sizing's intervals read it.
                "sd": c.stderr,
                "relative_sd": round(c.rel_sd, 4) if c.value else None,
                "source": c.source if "not fitted" in c.source else "profile",
            }
        ratios = [r["ratio"] for r in results_rows]
        within = sum(abs(x - 1) <= 0.10 for x in ratios)
        rel = [
            v["relative_error"]
            for v in coefs.values()
            if v["relative_error"] is not None and math.isfinite(v["relative_error"])
        ]
        results = {
            "quick": args.quick,
            "repeats": args.repeats,
            "refit_of_kept": bool(args.refit),
            "campaign": path.parent.name,
            "load_average_before_after": [load_before, load_after],
            "profile_warnings": list(prof.warnings[:3]),
            "workloads": results_rows,
            "within_10pct": f"{within} of {len(ratios)}",
            "median_abs_log_ratio": round(statistics.median(abs(math.log(x)) for x in ratios), 4)
            if ratios
            else math.nan,
            "coefficients": coefs,
            "coefficients_under_25pct": f"{sum(x < 0.25 for x in rel)} of {len(rel)}",
            "unidentified": unidentified,
            "held_out": held,
            "speed_probe_us": {
                "campaign": read_profile(path).host.get("speed_probe_us", {}),
                "before_direct_sweeps": probe_direct,
            },
        }
        saved = save("bench_calibrate", results)
    print(f"machine: {machine()}; load average {load_before[0]:.1f} -> {load_after[0]:.1f}")
    print(f"profile: campaign {path.parent.name}; {prof.warnings[0] if prof.warnings else ''}")
    probes = results["speed_probe_us"]
    print(
        "speed probe (us of CPU per ECDSA P-256 signature): campaign "
        + ", ".join(f"{k} {v:.1f}" for k, v in probes["campaign"].items())
        + f"; before the direct sweeps {probes['before_direct_sweeps']:.1f}"
    )
    print(
        f"{'workload':<28} {'measured':>9} {'profile':>9} {'ratio':>6} {'no-prof':>7}  "
        "(requests per second of one worker's CPU; measured us per request)"
    )
    for r in results_rows:
        print(
            f"{r['workload']:<28} {r['measured_per_worker_cpu_s']:>9,.0f} "
            f"{r['predicted']:>9,.0f} {r['ratio']:>6.3f} {r['uncalibrated_ratio']:>7.3f}  "
            f"({', '.join(f'{x:.1f}' for x in r['measured_us'])}; worker "
            f"{', '.join(f'{x:.0%}' for x in r['worker_share'])})"
        )
    print(f"within 10%: {results['within_10pct']} (goal: all)")
    print(
        f"{'coefficient':<30} {'value':>10} {'stderr':>9} {'rel':>6} {'+- sd':>9} {'rel':>6}"
        "  (sd: stderr and run-to-run spread, as sizing reads them)"
    )
    for name, v in coefs.items():
        relv, rsd = v["relative_error"], v["relative_sd"]
        print(
            f"{name:<30} {v['value']:>10.4g} {v['stderr']:>9.2g} "
            f"{(f'{relv:.0%}' if relv is not None else '-'):>6} {v['sd']:>9.2g} "
            f"{(f'{rsd:.0%}' if rsd is not None else '-'):>6}"
            + ("  (included in another term)" if v["source"] != "profile" else "")
        )
    print(
        f"standard error under 25% of the value: {results['coefficients_under_25pct']} (goal: all)"
    )
    for name, u in unidentified.items():
        what = (
            f"fitted into {u['fitted_into']}"
            if "fitted_into" in u
            else f"{u['value']:.3g} +- {u.get('stderr', math.nan):.2g} {u['unit']}"
        )
        print(f"not identified, reference used: {name} ({what})")
    for h in held:
        print(f"held out {h['setting']:<30} {h['measured']:>9,.0f} ratio {h['ratio']:.3f}")
    print(f"results: {saved}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
