"""How often does ``runners ab`` fail a change that changes nothing? Its false-alarm rate.

K sessions of ``python -m runners ab`` where B adds ``variables_hash_max_size 1024`` (a
directive that changes no work: A and B serve the same requests with the same code), each
with the options given (default: the command's defaults, 1 s trials). A session that exits 1
is a false alarm; the rate must be at most 1 - ``--confidence`` (5% at the default 95%).
Printed per session: the median B/A, its interval, the per-pair spread (sd) and the verdict;
then the false-alarm count and rate with its 95% Wilson interval, the spread of the session
medians (the session offset pairing leaves), the load average at start and end and the wall
time. Loopback only: static 1 KB over HTTP on one vCPU.

    .venv/bin/python benchmarks/bench_ab_noop.py [--sessions 40] [--pairs N]
        [--duration 1s] [--schedule together|alternate] [--save]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_ab import SAME, session  # noqa: E402
from benchlib import machine, save  # noqa: E402


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a rate of ``k`` in ``n``."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main(argv: list[str] | None = None) -> int:
    """Run the no-op sessions; print the false-alarm rate."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=40, help="no-op sessions (K)")
    ap.add_argument("--pairs")
    ap.add_argument("--duration")
    ap.add_argument("--schedule")
    ap.add_argument("--confidence")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/<name>.json")
    args = ap.parse_args(argv)
    extra: list[str] = []
    for opt in ("pairs", "duration", "schedule", "confidence"):
        if (value := getattr(args, opt)) is not None:
            extra += [f"--{opt}", value]
    load0 = os.getloadavg()[0]
    print(f"machine: {machine()}; load average {load0:.2f} at start")
    print(f"runners ab options: {' '.join(extra) or '(defaults)'}; B adds {SAME!r}")
    results: list[dict[str, Any]] = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-ab-noop-") as tmp:
        for k in range(args.sessions):
            r = session(SAME, Path(tmp), extra)
            results.append(r)
            print(
                f"session {k + 1}: median B/A {r['median']:.3f} [{r['low']:.3f}, {r['high']:.3f}] "
                f"sd {r['spread']:.3f} n {r['n']} {'WORSE' if r['worse'] else 'pass'} "
                f"({r['wall_s']:.0f} s, load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    wall = time.monotonic() - t0
    alarms = sum(r["worse"] for r in results)
    n = len(results)
    low, high = wilson(alarms, n)
    medians = [r["median"] for r in results]
    allowed = 1 - (results[0]["confidence"] if results else 0.95)
    print(
        f"false alarms {alarms}/{n} = {alarms / n:.1%} (95% Wilson [{low:.1%}, {high:.1%}]; "
        f"allowed {allowed:.0%}); session medians {min(medians):.3f} to {max(medians):.3f}, "
        f"sd {statistics.stdev(medians):.4f}; per-pair sd "
        f"{statistics.mean(r['spread'] for r in results):.4f} mean; {wall:.0f} s in all, "
        f"{wall / n:.0f} s a session; load average {load0:.2f} at start, "
        f"{os.getloadavg()[0]:.2f} at the end"
    )
    if args.save:
        name = "bench_ab_noop" + (f"_pairs{args.pairs}" if args.pairs else "")
        save(name, {"options": extra, "sessions": results, "false_alarms": alarms, "wall_s": wall})
    return 0


if __name__ == "__main__":
    sys.exit(main())
