"""Time to build the default batch report: ``python -m sizing report --rps 1e6 --out DIR``.

Goal: <= 8 s on a quiet 2-core machine (kernel start, notebook execution and HTML rendering
included); ``bench_recommend.py --report`` times it with ``--pdf`` too (goal <= 15 s).

    .venv/bin/python benchmarks/bench_report.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import ROOT, save


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            t0 = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "sizing",
                    "report",
                    "--rps",
                    "1e6",
                    "--sla-p99",
                    "5ms",
                    "--out",
                    f"{tmp}/{i}",
                ],
                cwd=ROOT,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            walls.append(time.perf_counter() - t0)
    median = statistics.median(walls)
    save("report", {"walls_s": walls, "median_s": median})
    print(
        f"default report: median {median:.1f} s over {len(walls)} builds "
        f"({', '.join(f'{w:.1f}' for w in walls)}); goal <= 8 s: "
        f"{'ok' if median <= 8 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
