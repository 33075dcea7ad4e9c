"""Does ``runners ab`` catch a 5% slowdown and pass the same setup, session after session?

K same-setup sessions (B adds ``variables_hash_max_size 1024``, a directive that changes no
work) and K sessions where B adds ``--headers`` ``add_header`` lines (50 cost 3 to 5% more
nginx CPU per request on the project's 2-core machine, depending on its load), alternated,
each a full ``python -m runners ab`` with the options given (default: the command's
defaults). Prints, per session, the median B/A, its interval, the per-pair spread (sd) and
the verdict, then the detection count (slow sessions that exit 1), the false-alarm count
(same-setup sessions that exit 1), the mean spread and the wall time. Loopback only: static
1 KB over HTTP on one vCPU.

    .venv/bin/python benchmarks/bench_ab.py [--sessions 5] [--headers 50] [--pairs N]
        [--duration 1s] [--warmup 0s] [--fail-if-worse 1%] [--schedule together|alternate] [--save]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import machine, save  # noqa: E402

SAME = "variables_hash_max_size 1024"


def headers(n: int) -> str:
    """``n`` ``add_header`` lines as one ``--ab-directive`` value."""
    return "; ".join(f"add_header X-Pad{i} v{i}" for i in range(n))


def session(directive: str, out: Path, extra: list[str]) -> dict[str, Any]:
    """One ``runners ab`` session: its JSON verdict, exit status and wall time [s]."""
    argv = [sys.executable, "-m", "runners", "ab", "--server", "local", "--scenario", "static"]
    argv += ["--protocol", "http", "--ab-directive", directive, "--format", "json", "--quiet"]
    argv += ["--out", str(out), *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"runners ab exited {p.returncode}: {p.stderr.strip()[-300:]}")
    return {**json.loads(p.stdout), "exit": p.returncode, "wall_s": wall}


def main(argv: list[str] | None = None) -> int:
    """Run the sessions and print detection and false-alarm counts."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=5, help="sessions of each kind (K)")
    ap.add_argument("--headers", type=int, default=50, help="add_header lines of the slow B")
    ap.add_argument("--pairs")
    ap.add_argument("--duration")
    ap.add_argument("--warmup")
    ap.add_argument("--cooldown")
    ap.add_argument("--fail-if-worse")
    ap.add_argument("--schedule")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/bench_ab.json")
    args = ap.parse_args(argv)
    extra: list[str] = []
    for opt in ("pairs", "duration", "warmup", "cooldown", "fail_if_worse", "schedule"):
        if (value := getattr(args, opt)) is not None:
            extra += [f"--{opt.replace('_', '-')}", value]
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} at start")
    print(f"runners ab options: {' '.join(extra) or '(defaults)'}; slow B = {args.headers} headers")
    results: dict[str, list[dict[str, Any]]] = {"same": [], "slow": []}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        for k in range(args.sessions):
            for kind, directive in (("same", SAME), ("slow", headers(args.headers))):
                r = session(directive, Path(tmp), extra)
                results[kind].append(r)
                print(
                    f"{kind} {k + 1}: median B/A {r['median']:.3f} "
                    f"[{r['low']:.3f}, {r['high']:.3f}] sd {r['spread']:.3f} "
                    f"n {r['n']} {'WORSE' if r['worse'] else 'pass'} ({r['wall_s']:.0f} s)",
                    flush=True,
                )
    wall = time.monotonic() - t0
    caught = sum(r["worse"] for r in results["slow"])
    false_alarms = sum(r["worse"] for r in results["same"])
    sds = [r["spread"] for rs in results.values() for r in rs]
    slow_medians = [r["median"] for r in results["slow"]]
    same_medians = [r["median"] for r in results["same"]]
    print(
        f"detected {caught}/{args.sessions} slow sessions (measured effect: median of "
        f"medians {statistics.median(slow_medians):.3f}); false alarms "
        f"{false_alarms}/{args.sessions} (same-setup medians {min(same_medians):.3f} to "
        f"{max(same_medians):.3f}); per-pair sd {statistics.mean(sds):.4f} mean "
        f"({min(sds):.4f} to {max(sds):.4f}); {wall:.0f} s in all, "
        f"{wall / (2 * args.sessions):.0f} s a session; load average "
        f"{os.getloadavg()[0]:.2f} at the end"
    )
    if args.save:
        save(
            "bench_ab",
            {
                "options": extra,
                "headers": args.headers,
                "sessions": results,
                "detected": caught,
                "false_alarms": false_alarms,
                "wall_s": wall,
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
