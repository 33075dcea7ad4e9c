"""Does each configuration feature's measured cost repeat from one campaign to the next?

Runs ``python -m runners features`` K times (or reads K campaigns' CSVs already written, with
``--read``) and prints, per feature, each campaign's extra CPU per request (user + kernel, us),
the median over campaigns and the largest departure from it. The goal (issue 31): every
feature's cost within +-15% of its median over three campaigns on a quiet host. A feature
whose campaigns' 95% intervals all reach zero is printed as "below resolution": a relative
spread of a cost the pairs cannot tell from nothing says nothing about repeatability, and the
line says how large the pairs' own interval was instead.

Two readings of each campaign are judged: the host's microseconds as measured, and the cost
on the reference core that the model carries (`sizing.model.features.on_reference_core`: the
user part scaled by the cost model's reference request over the campaign's own reference
request, the kernel part by the square root of that ratio). A vCPU that runs uniformly slower
through one campaign (a neighbour on the physical host) stretches the first and mostly cancels
in the second; the difference between the two readings is how much of the spread is the
host's speed rather than the feature.

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


def on_core(paths: list[Path]) -> dict[str, list[float]]:
    """Feature -> each campaign's cost on the reference core [us], as the model carries it."""
    from sizing.model.capacity import reference_request_us
    from sizing.model.features import load_feature_costs, on_reference_core

    by: dict[str, list[float]] = {}
    for path in paths:
        for name, cost in load_feature_costs(path).items():
            core = on_reference_core(cost, reference_request_us(cost.reference, cost.file_bytes))
            by.setdefault(name, []).append(core.user_us + core.kernel_us)
    return by


def departure(values: list[float]) -> float:
    """The largest departure of ``values`` from their median, as a share of it."""
    med = statistics.median(values)
    return max(abs(v - med) for v in values) / abs(med) if med else float("inf")


def verdict(values: list[tuple[float, float, float]]) -> tuple[str, float]:
    """The line's verdict and the largest departure from the median (a share of it)."""
    worst = departure([m for m, _, _ in values])
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
    from sizing.errors import InputError
    from trialtable.fields import printable

    try:
        core = on_core(paths)  # validates each file before `read` takes its numbers
    except InputError as exc:
        print(f"{ap.prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    results = judge(read(paths), core)
    judged = [r for r in results.values() if r["verdict"] != "below resolution"]
    ok = sum(r["verdict"] == "within" for r in judged)
    ok_core = sum(r["core_worst"] <= GOAL for r in judged)
    print(
        f"\n{ok} of {len(judged)} resolved features within +-{GOAL:.0%} of their median as "
        f"measured on the host, {ok_core} of {len(judged)} on the reference core (what the "
        f"model carries); {len(results) - len(judged)} below resolution; "
        f"load average {os.getloadavg()[0]:.2f} at end"
    )
    if args.save:
        save("feature_repeat", results)
    return 0


def judge(
    by: dict[str, list[tuple[float, float, float]]], core: dict[str, list[float]]
) -> dict[str, dict[str, object]]:
    """Print and return each feature's campaigns, on the host and on the reference core."""
    results: dict[str, dict[str, object]] = {}
    print(
        f"{'feature':24} {'campaigns (host us)':>26}  worst  {'on the reference core':>26}"
        "  worst   verdict (host)"
    )
    for name, values in by.items():
        word, worst = verdict(values)
        cores = core[name]
        each = " ".join(f"{m:7.2f}" for m, _, _ in values)
        each_core = " ".join(f"{c:7.2f}" for c in cores)
        core_worst = departure(cores)
        print(f"{name:24} {each:>26}  {worst:5.0%}  {each_core:>26}  {core_worst:5.0%}   {word}")
        results[name] = {
            "costs_us": [m for m, _, _ in values],
            "worst": worst,
            "core_us": cores,
            "core_worst": core_worst,
            "verdict": word,
        }
    return results


if __name__ == "__main__":
    raise SystemExit(main())
