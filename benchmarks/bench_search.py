"""How close and how cheap the adaptive SLA search is, against the full grid.

1. Simulator, seeds 1..5, 4 vCPUs, p99 <= 5 ms: adaptive's max_rps_under_sla within 3% of
   grid's, using at most 25% of grid's trials.
2. The real local nginx (1 vCPU, wrk pinned apart, 2-second trials): the same comparison, with
   the noise band of the adaptive answer (95% CI of its confirmations) and of the grid (the
   spread of repeated trials at grid's best setting).

    .venv/bin/python benchmarks/bench_search.py [--real-seconds 2] [--skip-real]
"""

from __future__ import annotations

import argparse
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


def simulated(tmp: Path) -> list[dict[str, float]]:
    out = []
    for seed in range(1, 6):
        plan = Plan(vcpus=(4,), duration_s=3)
        _, (grid,) = run_search(plan, SearchOptions(strategy="grid"), tmp, sim=SimServer(seed))
        _, (adap,) = run_search(plan, SearchOptions(), tmp, sim=SimServer(seed))
        assert grid.max_rps_under_sla and adap.max_rps_under_sla
        out.append(
            {
                "seed": seed,
                "grid_rps": grid.max_rps_under_sla,
                "grid_trials": grid.trials,
                "adaptive_rps": adap.max_rps_under_sla,
                "adaptive_trials": adap.trials,
                "rps_ratio": adap.max_rps_under_sla / grid.max_rps_under_sla,
                "trial_ratio": adap.trials / grid.trials,
            }
        )
    return out


def real(tmp: Path, seconds: int) -> dict[str, object]:
    plan = Plan(vcpus=(1,), duration_s=seconds, warmup_s=1, cooldown_s=0.5)
    common = {"duration_s": seconds, "confirm_duration_s": 2 * seconds, "max_connections": 1024}
    _, (grid,) = run_search(plan, SearchOptions(strategy="grid", **common), tmp)
    _, (adap,) = run_search(plan, SearchOptions(**common), tmp)
    assert grid.max_rps_under_sla and adap.max_rps_under_sla and grid.connections
    # The grid's own noise: repeat its best setting as often as adaptive confirms.
    plan2, store = open_run(
        Plan(vcpus=(1,), duration_s=2 * seconds, warmup_s=1, cooldown_s=0.5), tmp, None
    )
    with target_for(plan2, store) as session:
        repeats = [
            session.trial(1, int(grid.threads or 1), grid.connections, kind="repeat")["rps"]
            for _ in range(3)
        ]
    return {
        "grid": grid.to_dict(),
        "adaptive": adap.to_dict(),
        "rps_ratio": adap.max_rps_under_sla / grid.max_rps_under_sla,
        "trial_ratio": adap.trials / grid.trials,
        "grid_best_repeats": repeats,
        "grid_repeat_spread_pct": 100 * (max(repeats) - min(repeats)) / statistics.fmean(repeats),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--real-seconds", type=int, default=2)
    parser.add_argument("--skip-real", action="store_true")
    args = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sims = simulated(Path(tmp) / "sim")
        results["simulated"] = sims
        print("simulator, 4 vCPUs, p99 <= 5 ms:")
        print(" seed  grid rps (trials)   adaptive rps (trials)   rps ratio  trial ratio")
        for r in sims:
            print(
                f" {r['seed']:>4}  {r['grid_rps']:>9,.0f} ({r['grid_trials']:>3})   "
                f"{r['adaptive_rps']:>12,.0f} ({r['adaptive_trials']:>3})   "
                f"{r['rps_ratio']:>9.3f}  {r['trial_ratio']:>11.3f}"
            )
        worst = max(abs(r["rps_ratio"] - 1) for r in sims)
        most = max(r["trial_ratio"] for r in sims)
        print(
            f" goal: |rps ratio - 1| <= 0.03 (worst {worst:.3f}), trial ratio <= 0.25 "
            f"(worst {most:.3f}): {'ok' if worst <= 0.03 and most <= 0.25 else 'MISSED'}"
        )
        if not args.skip_real:
            r = real(Path(tmp) / "real", args.real_seconds)
            results["real"] = r
            g, a = r["grid"], r["adaptive"]
            assert isinstance(g, dict) and isinstance(a, dict)
            print("real local nginx, 1 vCPU:")
            print(
                f" grid     {g['max_rps_under_sla']:>9,.0f} rps at t{g['threads']} "
                f"c{g['connections']}, {g['trials']} trials, {g['load_seconds']:.0f} s of load;"
                f" repeats of its best: {', '.join(f'{x:,.0f}' for x in r['grid_best_repeats'])}"
                f" (spread {r['grid_repeat_spread_pct']:.1f}%)"
            )
            print(
                f" adaptive {a['max_rps_under_sla']:>9,.0f} rps at t{a['threads']} "
                f"c{a['connections']}, {a['trials']} trials, {a['load_seconds']:.0f} s of load;"
                f" 95% CI {a['ci95_low']:,.0f}-{a['ci95_high']:,.0f}"
            )
            print(f" rps ratio {r['rps_ratio']:.3f}, trial ratio {r['trial_ratio']:.3f}")
    save("search", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
