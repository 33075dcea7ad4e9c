"""Throughput of ``python -m sizing workload --from-log`` on a generated combined-format log.

A log of the given size of text (``--gzip``: stored compressed) is written to a temporary
folder with a known per-second rate profile (a slow swell, a busy spell and short spikes)
and a known size mix (1 KiB 70 %, 50,000 B mean 20 %, empty 10 %). The command is then timed
on it; the benchmark reports the wall and CPU time, the throughput [MB of log text / s], the
command's peak RSS (``getrusage`` of children) and how its peak and mix compare with the
truth. Goal: 1 GB of log in <= 60 s with bounded memory. The exit code is 1 when the goal
is missed or the peak, request count or mix differ from the truth.

    .venv/bin/python benchmarks/bench_accesslog.py [--size 1GB] [--gzip] [--keep]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, machine, save

sys.path.insert(0, str(ROOT))

from sizing.workload.accesslog import SIZE_EDGES
from tests.logsynth import SIZES, Truth, write_combined
from trialtable.values import parse_size

GOAL_S = 60.0
GOAL_BYTES = 1000**3
LINE_BYTES = 205  # about the mean line length of the generated log [B]


def profile(seconds: int) -> list[int]:
    """Requests per second: a swell of one hour's period, a busy spell and a few spikes."""
    counts = []
    for s in range(seconds):
        rate = 300 + 200 * math.sin(2 * math.pi * s / 3600)
        if seconds // 2 <= s < seconds // 2 + 300:
            rate *= 2
        if s % 997 == 0:
            rate += 1500
        counts.append(round(rate))
    return counts


def seconds_for(size: int) -> int:
    """Seconds of the profile that make a log of about ``size`` bytes."""
    mean = sum(profile(3600)) / 3600
    return max(60, round(size / LINE_BYTES / mean))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GB", help="log size, e.g. 1GB, 200MB (default 1GB)")
    parser.add_argument("--gzip", action="store_true", help="gzip the log before reading it")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    size = parse_size(args.size)
    folder = Path(tempfile.mkdtemp(prefix="bench-accesslog-"))
    try:
        log = folder / ("access.log.gz" if args.gzip else "access.log")
        t0 = time.perf_counter()
        truth: Truth = write_combined(log, profile(seconds_for(size)), SIZES, compress=args.gzip)
        made_s = time.perf_counter() - t0
        nbytes = truth.text_bytes  # of log text: a gzip file holds it in fewer
        stored = log.stat().st_size
        print(f"machine: {machine()}")
        print(
            f"generated {nbytes / 1e6:,.0f} MB of log ({truth.requests:,} lines, "
            f"{len(truth.counts):,} s; {stored / 1e6:,.0f} MB stored) in {made_s:.0f} s: {log}"
        )
        out = folder / "workload.json"
        cmd = [
            sys.executable,
            "-m",
            "sizing",
            "workload",
            "--from-log",
            str(log),
            "--out",
            str(out),
        ]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        doc = json.loads(out.read_text())
        peak_truth = truth.peak(99)
        shares = [b["share"] for b in doc["size_mix"]["buckets"]]
        mix_error = max(
            abs(a - b) for a, b in zip(shares, truth.bucket_shares(SIZE_EDGES), strict=True)
        )
        results = {
            "log_bytes": nbytes,
            "stored_bytes": stored,
            "gzip": args.gzip,
            "lines": truth.requests,
            "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "mb_per_s": nbytes / 1e6 / wall,
            "peak_rss_mb": usage.ru_maxrss / 1024,
            "peak_rps": doc["rps"]["peak"],
            "peak_rps_truth": peak_truth,
            "requests": doc["requests"],
            "size_mix": doc["size_mix"]["spec"],
            "size_mix_max_share_error": mix_error,
        }
        goal = GOAL_S * nbytes / GOAL_BYTES
        print(
            f"workload --from-log: {wall:.1f} s wall, {results['cpu_s']:.1f} s CPU, "
            f"{results['mb_per_s']:.0f} MB/s of log, peak RSS {results['peak_rss_mb']:.0f} MB "
            f"(goal: <= {goal:.0f} s for this size, 60 s per GB)"
        )
        print(
            f"peak p99 {doc['rps']['peak']:g} requests/s (truth {peak_truth}); requests "
            f"{doc['requests']:,} (truth {truth.requests:,}); size mix {doc['size_mix']['spec']} "
            f"(largest share error {mix_error:.2g})"
        )
        save("accesslog-gzip" if args.gzip else "accesslog", results)
        ok = (
            wall <= goal
            and doc["rps"]["peak"] == peak_truth
            and doc["requests"] == truth.requests
            and mix_error < 1e-4
        )
        return 0 if ok else 1
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
