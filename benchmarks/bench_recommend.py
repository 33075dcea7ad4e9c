"""Start-up cost of the interactive path.

Median wall time of ``python -m sizing recommend --rps 1e6`` against ``python -c "import numpy"``,
measured alternately in one run so that machine noise hits both alike. Goal: ratio <= 2.5.

    .venv/bin/python benchmarks/bench_recommend.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from benchlib import ROOT, machine

RECOMMEND = [sys.executable, "-m", "sizing", "recommend", "--rps", "1e6"]
NUMPY = [sys.executable, "-c", "import numpy"]


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    wall(RECOMMEND), wall(NUMPY)  # warm the page cache and .pyc files
    rec, num = [], []
    for _ in range(args.repeat):
        rec.append(wall(RECOMMEND))
        num.append(wall(NUMPY))
    r, n = statistics.median(rec), statistics.median(num)
    print(f"machine: {machine()}")
    print(f"recommend --rps 1e6: median {r * 1000:.0f} ms over {args.repeat}")
    print(f"import numpy:        median {n * 1000:.0f} ms over {args.repeat}")
    print(f"ratio: {r / n:.2f} (goal <= 2.5)")
    return 0 if r / n <= 2.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
