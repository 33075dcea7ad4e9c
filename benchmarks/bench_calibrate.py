"""Does a calibrated profile predict what it was not fitted to, and does it repeat?

1. Out of sample: one campaign measures its 12 fitting settings and, interleaved in the same
   rounds, 12 held-out settings (other sizes, HTTPS proxying, gzip over HTTPS, ...). The
   profile is fitted on the campaign's settings only; each held-out setting's RPS per worker
   is predicted from the profile's cost model (1e6 / predicted CPU us per request) and
   compared with the measured one (1e6 / measured CPU us per request: the requests one worker
   serves per second of its CPU, which on a busy shared machine differs from the raw RPS the
   load generator saw). Goal: median absolute error <= 10%.
2. Repeatability: a second campaign (fitting settings only); the relative difference of the
   main coefficients between the two, |a - b| / mean(a, b). Goal: <= 10% each.

    .venv/bin/python benchmarks/bench_calibrate.py [--quick] [--keep DIR]
    .venv/bin/python benchmarks/bench_calibrate.py --refit DIR   # refit what --keep DIR kept

Default campaigns take about 8 + 4 minutes on a 2-vCPU host; ``--quick`` about 3 + 1.5.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine, save  # noqa: E402

from runners import calibrate as cal  # noqa: E402
from runners import calibrate_fit as calfit  # noqa: E402
from runners.nginx import Scenario  # noqa: E402
from trialtable.profile import Profile  # noqa: E402

KB = 1024
MAIN = (
    "request_us",
    "tls_byte_ns",
    "connection_us",
    "handshake_full_ecdsa_p256_us",
    "handshake_full_rsa2048_us",
    "gzip_byte_ns",
    "proxy_request_us",
)


def held_out() -> list[cal.Setting]:
    """Settings the profile is not fitted to: new sizes and new combinations of its terms."""
    S = cal.Setting
    return [
        S("ho_static_http_4KB", Scenario("static", file_bytes=4 * KB), 16),
        S("ho_static_http_16KB", Scenario("static", file_bytes=16 * KB), 16),
        S("ho_static_http_256KB", Scenario("static", file_bytes=256 * KB), 4),
        S("ho_static_https_4KB", Scenario("static", protocol="https", file_bytes=4 * KB), 16),
        S("ho_static_https_16KB", Scenario("static", protocol="https", file_bytes=16 * KB), 8),
        S("ho_static_https_256KB", Scenario("static", protocol="https", file_bytes=256 * KB), 4),
        S("ho_gzip_http_64KB", Scenario("static", file_bytes=64 * KB, gzip=True), 2),
        S("ho_gzip_https_16KB", Scenario("static", "https", 16 * KB, gzip=True), 4),
        S("ho_reverse_proxy_https_1KB", Scenario("reverse_proxy", "https", KB), 8),
        S("ho_reverse_proxy_http_16KB", Scenario("reverse_proxy", "http", 16 * KB), 8),
        S("ho_api_gateway_https_1KB", Scenario("api_gateway", "https", KB), 8),
        S("ho_api_gateway_http_16KB", Scenario("api_gateway", "http", 16 * KB), 8),
    ]


def predict(profile: Profile, s: cal.Setting, wire: float | None) -> float:
    """Predicted RPS of one worker-second of CPU for a setting."""
    sc = s.scenario
    us = profile.cpu_us_per_request(
        file_bytes=sc.file_bytes,
        https=sc.protocol == "https",
        tls_key=sc.tls_key,
        gzip_bytes=sc.file_bytes if sc.gzip else 0.0,
        wire_bytes=wire,
        scenario=sc.name,
    )
    return 1e6 / us


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="quick campaigns (1 s trials)")
    ap.add_argument("--keep", metavar="DIR", help="keep the campaigns in DIR")
    ap.add_argument(
        "--refit",
        metavar="DIR",
        help="refit the two campaigns a --keep run left in DIR (no new measurement)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.refit or args.keep or tmp)
        options = cal.CalibrateOptions(quick=args.quick, max_workers=1)
        extras = held_out()
        kept = sorted(p.name for p in out.iterdir() if (p / "campaign.json").is_file())
        if args.refit and len(kept) != 2:
            raise SystemExit(f"{out} holds {len(kept)} campaigns, not the 2 of one benchmark")
        first, second = kept if args.refit else (None, None)
        load_before = os.getloadavg()
        path_a, prof_a = cal.run_calibrate(
            options,
            out,
            resume=first,
            extra_settings=extras,
            progress=None if first else sys.stderr,
        )
        campaign = cal.Campaign(path_a.parent, {"campaign_id": path_a.parent.name})
        rows = campaign.trials()
        obs, _ = cal.observations(rows, extras, options.sla_p99_ms)
        wire = calfit._wire_bodies(rows, extras)
        predictions = []
        for s in extras:
            mine = [o for o in obs if o.setting == s.name]
            if not mine:
                continue
            measured = 1e6 / statistics.median(o.cpu_us for o in mine)
            pred = predict(prof_a, s, wire.get(s.name))
            predictions.append(
                {
                    "setting": s.name,
                    "measured_rps_per_worker_cpu_s": round(measured, 1),
                    "predicted": round(pred, 1),
                    "error": round(pred / measured - 1, 4),
                    "raw_rps": round(statistics.median(o.rps for o in mine), 1),
                    "worker_share": round(statistics.median(o.worker_share for o in mine), 3),
                }
            )
        errors = [abs(p["error"]) for p in predictions]
        path_b, prof_b = cal.run_calibrate(
            options, out, resume=second, progress=None if second else sys.stderr
        )
        load_after = os.getloadavg()
        spread = {}
        for name in MAIN:
            a, b = prof_a.coefficients.get(name), prof_b.coefficients.get(name)
            if a is None or b is None or a.value + b.value <= 0:
                continue
            spread[name] = {
                "a": a.value,
                "b": b.value,
                "rel_diff": round(abs(a.value - b.value) / ((a.value + b.value) / 2), 4),
            }
        results = {
            "quick": args.quick,
            "refit_of_kept_campaigns": bool(args.refit),
            "round_factors": [p.extra["campaign"].get("round_factors") for p in (prof_a, prof_b)],
            "campaigns": [path_a.parent.name, path_b.parent.name],
            "load_average_before_after": [load_before, load_after],
            "flagged_trials": [
                sum("trials flagged" in w for w in p.warnings) and p.warnings[0]
                for p in (prof_a, prof_b)
            ],
            "predictions": predictions,
            "median_abs_error": round(statistics.median(errors), 4) if errors else math.nan,
            "worst_abs_error": round(max(errors), 4) if errors else math.nan,
            "coefficients_a": {k: c.value for k, c in prof_a.coefficients.items()},
            "coefficients_b": {k: c.value for k, c in prof_b.coefficients.items()},
            "two_campaign_rel_diff": spread,
            "max_rel_diff": max((v["rel_diff"] for v in spread.values()), default=math.nan),
            "median_rel_diff": statistics.median(v["rel_diff"] for v in spread.values())
            if spread
            else math.nan,
        }
        saved = save("bench_calibrate", results)
    print(f"machine: {machine()}; load average {load_before[0]:.1f} -> {load_after[0]:.1f}")
    print(f"{'held-out setting':<30} {'measured':>10} {'predicted':>10} {'error':>7}")
    for p in predictions:
        print(
            f"{p['setting']:<30} {p['measured_rps_per_worker_cpu_s']:>10,.0f} "
            f"{p['predicted']:>10,.0f} {p['error']:>+7.1%}"
        )
    print(
        f"median |error| {results['median_abs_error']:.1%} (goal <= 10%), "
        f"worst {results['worst_abs_error']:.1%}"
    )
    for name, v in spread.items():
        print(f"{name:<30} {v['a']:>10.4g} {v['b']:>10.4g} {v['rel_diff']:>7.1%}")
    print(f"two campaigns: max relative difference {results['max_rel_diff']:.1%} (goal <= 10%)")
    print(f"results: {saved}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
