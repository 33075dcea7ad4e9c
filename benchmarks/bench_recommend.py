"""Start-up cost of the interactive path, and the mixed-fleet solve.

Median wall times, measured alternately in one run so that machine noise hits all alike:

- ``python -m sizing recommend --rps 1e6`` (default regions) / ``python -c "import numpy"``:
  goal <= 2.5;
- ``python -m sizing recommend --rps 1e6 --region all`` / ``import numpy``: goal <= 4;
- ``python -m sizing recommend --rps 1e6 --mix 3 --zones 3`` wall time: goal <= 2 s.

    .venv/bin/python benchmarks/bench_recommend.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from benchlib import ROOT, machine, save

BASE = [sys.executable, "-m", "sizing", "recommend", "--rps", "1e6"]
COMMANDS = {
    "recommend": BASE,
    "recommend --region all": [*BASE, "--region", "all"],
    "recommend --mix 3 --zones 3": [*BASE, "--mix", "3", "--zones", "3"],
    "import numpy": [sys.executable, "-c", "import numpy"],
}
GOALS = {"recommend": 2.5, "recommend --region all": 4.0}
MIX_GOAL_S = 2.0


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    for cmd in COMMANDS.values():
        wall(cmd)  # warm the page cache and .pyc files
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, cmd in COMMANDS.items():
            times[name].append(wall(cmd))
    med = {name: statistics.median(t) for name, t in times.items()}
    numpy = med["import numpy"]
    print(f"machine: {machine()}")
    ok = True
    results: dict[str, object] = {"repeat": args.repeat, "median_s": med}
    for name, m in med.items():
        print(f"{name:28s} median {m * 1000:6.0f} ms over {args.repeat}")
    for name, goal in GOALS.items():
        ratio = med[name] / numpy
        ok &= ratio <= goal
        results[f"ratio {name}"] = ratio
        print(f"ratio {name} / import numpy: {ratio:.2f} (goal <= {goal})")
    mix = med["recommend --mix 3 --zones 3"]
    ok &= mix <= MIX_GOAL_S
    print(f"--mix 3 --zones 3 wall time: {mix:.2f} s (goal <= {MIX_GOAL_S} s)")
    save("recommend", results)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
