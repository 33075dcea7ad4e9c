"""Does each configuration feature's measured cost repeat from one campaign to the next?

Runs ``python -m runners features`` K times (or reads K campaigns' CSVs already written, with
``--read``) and prints, per feature, each campaign's extra CPU per request (user + kernel, us),
the median over campaigns and the largest departure from it. The goal (issue 31): every
feature's cost within +-15% of its median over three campaigns on a quiet host. A feature
whose campaigns' 95% intervals all reach zero is printed as "below resolution": a relative
spread of a cost the pairs cannot tell from nothing says nothing about repeatability, and the
line says how large the pairs' own interval was instead.

    .venv/bin/python benchmarks/bench_feature_repeat.py [--campaigns 3] [--pairs 9]
        [--only LIST] [--keep DIR]
    .venv/bin/python benchmarks/bench_feature_repeat.py --read A.csv B.csv C.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine, save  # noqa: E402

GOAL = 0.15


def total(row: dict[str, str]) -> tuple[float, float, float]:
    """A measured row's user + kernel cost [us] and its rough 95% range (the parts' added)."""
    mid = float(row["user_us"]) + float(row["kernel_us"])
    low = float(row["user_low_us"]) + float(row["kernel_low_us"])
    high = float(row["user_high_us"]) + float(row["kernel_high_us"])
    return mid, low, high


def read(paths: list[Path]) -> dict[str, list[tuple[float, float, float]]]:
    """Feature -> each campaign's (cost, low, high); features not measured in every one left out."""
    by: dict[str, list[tuple[float, float, float]]] = {}
    for path in paths:
        with path.open(newline="") as fh:
            for row in csv.DictReader(fh):
                if row["status"] == "measured":
                    by.setdefault(row["feature"], []).append(total(row))
    return {k: v for k, v in by.items() if len(v) == len(paths)}


def verdict(values: list[tuple[float, float, float]]) -> tuple[str, float]:
    """The line's verdict and the largest departure from the median (a share of it)."""
    mids = [m for m, _, _ in values]
    med = statistics.median(mids)
    worst = max(abs(m - med) for m in mids) / abs(med) if med else float("inf")
    if all(lo <= 0.0 <= hi for _, lo, hi in values):
        return "below resolution", worst
    return ("within" if worst <= GOAL else "OUTSIDE"), worst


def run(k: int, pairs: int, only: str, keep: Path) -> list[Path]:
    """K campaigns one after another; their CSVs."""
    out = []
    for i in range(k):
        path = keep / f"campaign{i + 1}.csv"
        cmd = [
            sys.executable,
            "-m",
            "runners",
            "features",
            "--pairs",
            str(pairs),
            "--out",
            str(path),
        ]
        if only:
            cmd += ["--only", only]
        print(f"campaign {i + 1}/{k}, load average {os.getloadavg()[0]:.2f}", flush=True)
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run or read the campaigns; print each feature's repeatability."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", type=Path, help="folder for the campaigns' CSVs (default: temporary)")
    ap.add_argument("--read", type=Path, nargs="+", help="campaign CSVs already written")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/<name>.json")
    args = ap.parse_args(argv)
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} at start")
    if args.read:
        paths = list(args.read)
    else:
        keep = args.keep or Path(tempfile.mkdtemp(prefix="feature-repeat-"))
        paths = run(args.campaigns, args.pairs, args.only, keep)
    by = read(paths)
    results = {}
    print(f"{'feature':24} {'campaigns (user+kernel us)':>34}  median  worst   verdict")
    for name, values in by.items():
        word, worst = verdict(values)
        each = " ".join(f"{m:7.2f}" for m, _, _ in values)
        med = statistics.median(m for m, _, _ in values)
        print(f"{name:24} {each:>34}  {med:6.2f}  {worst:5.0%}   {word}")
        results[name] = {"costs_us": [m for m, _, _ in values], "worst": worst, "verdict": word}
    judged = [r for r in results.values() if r["verdict"] != "below resolution"]
    ok = sum(r["verdict"] == "within" for r in judged)
    print(
        f"\n{ok} of {len(judged)} resolved features within +-{GOAL:.0%} of their median; "
        f"{len(results) - len(judged)} below resolution; "
        f"load average {os.getloadavg()[0]:.2f} at end"
    )
    if args.save:
        save("feature_repeat", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
