"""How close and how cheap the adaptive SLA search is, against the full grid.

1. Simulator, seeds 1..5, 4 vCPUs, p99 <= 5 ms: adaptive's max_rps_under_sla within 3% of
   grid's, using at most 25% of grid's trials.
2. The real local nginx (1 vCPU, wrk pinned apart, 2-second trials): the same comparison, with
   the noise band of the adaptive answer (95% CI of its confirmations) and of the grid (the
   spread of repeated trials at grid's best setting).

A search that finds no rate under the SLA (the machine too busy for p99 <= 5 ms at any load
tried) is reported as such ("no rate under the SLA"), its ratios left out, and the goal
marked missed.

    .venv/bin/python benchmarks/bench_search.py [--real-seconds 2] [--skip-real]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import save  # noqa: E402

from runners.run import open_run  # noqa: E402
from runners.search import SearchOptions, run_search  # noqa: E402
from runners.sim import SimServer  # noqa: E402
from runners.sweep import Plan, target_for  # noqa: E402

NO_RATE = "no rate under the SLA"


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None when either search found no rate under the SLA."""
    return a / b if a and b else None


def shown(rps: float | None) -> str:
    """An RPS, or what a search that found none under the SLA says."""
    return f"{rps:,.0f}" if rps else NO_RATE


def at(r: dict[str, object]) -> str:
    """``N rps at tT cC`` of a search's result, or that it found no rate under the SLA."""
    rps = r["max_rps_under_sla"]
    if not rps:
        return NO_RATE
    return f"{rps:>9,.0f} rps at t{r['threads']} c{r['connections']}"


def simulated(tmp: Path, sla_ms: float = 5.0) -> list[dict[str, float | None]]:
    out = []
    for seed in range(1, 6):
        plan = Plan(vcpus=(4,), duration_s=3, sla_p99_ms=sla_ms)
        grid_opts = SearchOptions(strategy="grid", sla_p99_ms=sla_ms)
        _, (grid,) = run_search(plan, grid_opts, tmp, sim=SimServer(seed))
        _, (adap,) = run_search(plan, SearchOptions(sla_p99_ms=sla_ms), tmp, sim=SimServer(seed))
        out.append(
            {
                "seed": seed,
                "grid_rps": grid.max_rps_under_sla,
                "grid_trials": grid.trials,
                "adaptive_rps": adap.max_rps_under_sla,
                "adaptive_trials": adap.trials,
                "rps_ratio": ratio(adap.max_rps_under_sla, grid.max_rps_under_sla),
                "trial_ratio": adap.trials / grid.trials,
            }
        )
    return out


def real(tmp: Path, seconds: int, sla_ms: float = 5.0) -> dict[str, object]:
    plan = Plan(vcpus=(1,), duration_s=seconds, warmup_s=1, cooldown_s=0.5, sla_p99_ms=sla_ms)
    common = {
        "duration_s": seconds,
        "confirm_duration_s": 2 * seconds,
        "max_connections": 1024,
        "sla_p99_ms": sla_ms,
    }
    _, (grid,) = run_search(plan, SearchOptions(strategy="grid", **common), tmp)
    _, (adap,) = run_search(plan, SearchOptions(**common), tmp)
    # The grid's own noise: repeat its best setting as often as adaptive confirms (only when
    # the grid found a rate under the SLA: otherwise it has no best setting to repeat).
    repeats: list[float] = []
    if grid.max_rps_under_sla and grid.connections:
        plan2, store = open_run(
            Plan(vcpus=(1,), duration_s=2 * seconds, warmup_s=1, cooldown_s=0.5, sla_p99_ms=sla_ms),
            tmp,
            None,
        )
        with target_for(plan2, store) as session:
            repeats = [
                session.trial(1, int(grid.threads or 1), grid.connections, kind="repeat")["rps"]
                for _ in range(3)
            ]
    return {
        "grid": grid.to_dict(),
        "adaptive": adap.to_dict(),
        "rps_ratio": ratio(adap.max_rps_under_sla, grid.max_rps_under_sla),
        "trial_ratio": adap.trials / grid.trials if grid.trials else None,
        "grid_best_repeats": repeats,
        "grid_repeat_spread_pct": (
            100 * (max(repeats) - min(repeats)) / statistics.fmean(repeats) if repeats else None
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--real-seconds", type=int, default=2)
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument(
        "--sla-p99-ms", type=float, default=5.0, help="the SLA both searches aim at [ms]"
    )
    args = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sims = simulated(Path(tmp) / "sim", args.sla_p99_ms)
        results["simulated"] = sims
        print(f"simulator, 4 vCPUs, p99 <= {args.sla_p99_ms:g} ms:")
        print(" seed  grid rps (trials)   adaptive rps (trials)   rps ratio  trial ratio")
        for r in sims:
            rr = r["rps_ratio"]
            print(
                f" {r['seed']:>4}  {shown(r['grid_rps']):>9} ({r['grid_trials']:>3})   "
                f"{shown(r['adaptive_rps']):>12} ({r['adaptive_trials']:>3})   "
                f"{'-' if rr is None else f'{rr:.3f}':>9}  {r['trial_ratio']:>11.3f}"
            )
        found = [r["rps_ratio"] for r in sims if r["rps_ratio"] is not None]
        worst = max((abs(x - 1) for x in found), default=math.inf)
        most = max(float(r["trial_ratio"] or 0) for r in sims)
        missing = len(sims) - len(found)
        print(
            f" goal: |rps ratio - 1| <= 0.03 (worst {worst:.3f}), trial ratio <= 0.25 "
            f"(worst {most:.3f})"
            + (f"; {missing} seed(s) with {NO_RATE}" if missing else "")
            + f": {'ok' if worst <= 0.03 and most <= 0.25 and not missing else 'MISSED'}"
        )
        if not args.skip_real:
            r = real(Path(tmp) / "real", args.real_seconds, args.sla_p99_ms)
            results["real"] = r
            g, a = r["grid"], r["adaptive"]
            assert isinstance(g, dict) and isinstance(a, dict)
            print(f"real local nginx, 1 vCPU, p99 <= {args.sla_p99_ms:g} ms:")
            repeats = r["grid_best_repeats"]
            assert isinstance(repeats, list)
            print(
                f" grid     {at(g)}, {g['trials']} trials, {g['load_seconds']:.0f} s of load;"
                + (
                    f" repeats of its best: {', '.join(f'{x:,.0f}' for x in repeats)}"
                    f" (spread {r['grid_repeat_spread_pct']:.1f}%)"
                    if repeats
                    else " no best setting to repeat"
                )
            )
            ci = (
                f" 95% CI {a['ci95_low']:,.0f}-{a['ci95_high']:,.0f}"
                if a.get("ci95_low") and a.get("ci95_high")
                else ""
            )
            print(
                f" adaptive {at(a)}, {a['trials']} trials, {a['load_seconds']:.0f} s of load;" + ci
            )
            rr, tr = r["rps_ratio"], r["trial_ratio"]
            print(
                f" rps ratio {NO_RATE + ' in one search' if rr is None else f'{rr:.3f}'}, "
                f"trial ratio {'-' if tr is None else f'{tr:.3f}'}"
            )
    save("search", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
