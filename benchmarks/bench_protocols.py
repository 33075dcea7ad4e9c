"""What protocols and options cost on this machine, as ratios within one run.

Each variant is a one-trial sweep (1 nginx worker on its own CPU, load generator pinned apart,
1 KB static or proxied body); the variants run in rounds, alternated, and each figure is the
median over rounds. Ratios are what count: on a shared machine the absolute RPS moves.

- HTTP/2 over TLS (h2load, 16 connections x 4 streams) against HTTP/1.1 over TLS (h2load and
  wrk, 16 connections).
- JWT: reverse_proxy over HTTPS with and without an RS256 token checked on every request
  (seed 002 reports about a 90% drop with NGINX Plus auth_jwt).
- TLS handshakes: cps over HTTPS (one request per connection, wrk) with every connection a
  full handshake, and with resumed sessions.

Server CPU per request [us] = server CPU time / requests (the trial's ``server_cpu_pct``).

    .venv/bin/python benchmarks/bench_protocols.py [--rounds 3] [--seconds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine, save  # noqa: E402

from runners.plan import Plan  # noqa: E402
from runners.scenario import make_scenario  # noqa: E402
from runners.sweep import run_sweep  # noqa: E402

H2LOAD = {"load_generator": "h2load"}
VARIANTS: dict[str, dict[str, Any]] = {
    "static https HTTP/1.1 wrk": {"scenario": ("static", {}), "connections": 16},
    "static https HTTP/1.1 h2load": {"scenario": ("static", {}), "connections": 16, **H2LOAD},
    "static https HTTP/2 h2load m4": {
        "scenario": ("static", {}),
        "connections": 16,
        "http_version": "2",
        "streams": 4,
        **H2LOAD,
    },
    "reverse_proxy https wrk": {"scenario": ("reverse_proxy", {}), "connections": 16},
    "reverse_proxy https wrk, JWT RS256": {
        "scenario": ("reverse_proxy", {"jwt": True}),
        "connections": 16,
    },
    "cps https wrk, full handshakes": {"scenario": ("cps", {}), "connections": 16},
    "cps https wrk, resumed sessions": {
        "scenario": ("cps", {"tls_resumption": True}),
        "connections": 16,
    },
}


def plan_of(spec: dict[str, Any], seconds: int) -> Plan:
    name, extra = spec["scenario"]
    rest = {k: v for k, v in spec.items() if k not in ("scenario", "connections")}
    return Plan(
        scenario=make_scenario(name, protocol="https", **extra),
        connections=(spec["connections"],),
        duration_s=seconds,
        warmup_s=1,
        cooldown_s=0.0,
        **rest,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    rows: dict[str, list[dict[str, Any]]] = {k: [] for k in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            order = list(VARIANTS) if i % 2 == 0 else list(reversed(VARIANTS))
            for name in order:
                df = run_sweep(plan_of(VARIANTS[name], args.seconds), Path(tmp), progress=None)
                rows[name].append(df.iloc[0].to_dict())
    summary: dict[str, dict[str, Any]] = {}
    for name, rs in rows.items():
        rps = [float(r["rps"]) for r in rs]
        cpu_us = [float(r["server_cpu_pct"]) / 100 * 1e6 / float(r["rps"]) for r in rs]
        summary[name] = {
            "rps": rps,
            "median_rps": statistics.median(rps),
            "server_cpu_us_per_request": statistics.median(cpu_us),
            "p99_ms": statistics.median(float(r["latency_p99_ms"]) for r in rs),
            "valid": all(bool(r["valid"]) for r in rs),
            "invalid_reasons": sorted({str(r["invalid_reason"]) for r in rs} - {"", "nan"}),
        }
    med = {k: v["median_rps"] for k, v in summary.items()}
    ratios = {
        "HTTP/2 m4 / HTTP/1.1 (h2load)": med["static https HTTP/2 h2load m4"]
        / med["static https HTTP/1.1 h2load"],
        "HTTP/2 m4 (h2load) / HTTP/1.1 (wrk)": med["static https HTTP/2 h2load m4"]
        / med["static https HTTP/1.1 wrk"],
        "JWT / plain reverse_proxy": med["reverse_proxy https wrk, JWT RS256"]
        / med["reverse_proxy https wrk"],
        "resumed / full handshakes (cps)": med["cps https wrk, resumed sessions"]
        / med["cps https wrk, full handshakes"],
    }
    save("protocols", {"rounds": args.rounds, "seconds": args.seconds, **summary, "ratios": ratios})
    print(f"machine: {machine()}")
    print(f"{'variant':40s} {'RPS (median)':>13s} {'server us/req':>14s} {'p99 ms':>8s}")
    for name, v in summary.items():
        flag = "" if v["valid"] else "  invalid: " + "; ".join(v["invalid_reasons"])
        print(
            f"{name:40s} {v['median_rps']:13,.0f} {v['server_cpu_us_per_request']:14.0f} "
            f"{v['p99_ms']:8.2f}{flag}"
        )
    for name, r in ratios.items():
        print(f"{name}: {r:.3f}" + (f" (a {100 * (1 - r):.0f}% drop)" if r < 1 else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
