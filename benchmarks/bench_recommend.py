"""Speed of the interactive paths, as ratios to ``python -c "import numpy"`` in the same run.

Every command is timed as a whole process (wall clock, and the CPU time the kernel charged
it), all of them once per round, the order rotating from round to round, so that a busy
spell of the machine hits every command alike; each ratio is taken within its round and the
median over the rounds is quoted with its spread (min-max over rounds).

==========================================================  =================================
command                                                     goal
==========================================================  =================================
``recommend --rps 1e6``                                     <= 2 x import numpy
``recommend --rps 1e6 --region all``                        <= 3 x
``recommend --rps 1e6 --region all --provider azure``       <= 3 x (57 regions, 1,023 sizes,
                                                            built into the cache on first use)
``recommend --rps 1e6 --region all --sort carbon``          <= 3 x
``recommend --rps 1e6 --region all --pricing spot``         <= 3 x (spares per band, by columns)
``recommend --rps 1e6 --protocol http --runs DIR``          <= 3 x (a simulated run of c7g,
                                                            made here, ``--allow-simulated``)
``plan-measurements --rps 1e6``                             <= 3 x
``catalog build`` from the upstream files                   <= 5 x (skipped without them)
``recommend --rps 1e6 --region all``, catalog 10 x larger   <= 4 x (the shipped rows again in
                                                            9 more copies of every region)
``recommend --rps 1e6 --mix 3 --zones 3``                   <= 2 s
``report --rps 1e6 --sla-p99 5ms`` / with ``--pdf``         <= 8 s / <= 15 s (``--report``)
==========================================================  =================================

``import numpy`` starts its BLAS threads, so on 2 CPUs its wall time is below its CPU time;
the CPU ratios are printed beside the wall ones. The load average before and after is saved
with the results: a loaded machine stretches every figure. The timed commands run without
``PYTHONDONTWRITEBYTECODE``, so the warm-up round leaves the project's ``.pyc`` files as an
installed package has them.

    .venv/bin/python benchmarks/bench_recommend.py [--rounds 11] [--report] [--upstream DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import ROOT, machine, save

PY = sys.executable
SIZING = [PY, "-m", "sizing"]
REC = [*SIZING, "recommend", "--rps", "1e6"]
NUMPY = "import numpy"
#: Ratio goals (wall, to import numpy) and absolute goals [s].
RATIO_GOALS = {
    "recommend": 2.0,
    "recommend --region all": 3.0,
    "--region all --provider azure": 3.0,
    "--region all --sort carbon": 3.0,
    "--region all --pricing spot": 3.0,
    "recommend --runs DIR": 3.0,
    "plan-measurements": 3.0,
    "catalog build": 5.0,
    "--region all, catalog x10": 4.0,
}
SECONDS_GOALS = {"recommend --mix 3 --zones 3": 2.0, "report": 8.0, "report --pdf": 15.0}


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, as the kernel charged it) of one whole process."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):  # 1: an infeasible target still answers
            err.seek(0)
            text = err.read().decode(errors="replace").strip()[-300:]
            raise SystemExit(f"{' '.join(cmd)} exited {code}: {text}")
    return wall, usage.ru_utime + usage.ru_stime


def simulated_run(tmp: Path) -> Path:
    """A run folder of the simulator (label c7g), so that ``--runs`` has something to read."""
    sys.path.insert(0, str(ROOT))
    from runners.search import SearchOptions, run_search
    from runners.sim import SimServer
    from runners.sweep import Plan

    run_id, _ = run_search(
        Plan(vcpus=(1, 2, 4, 8), label="c7g"), SearchOptions(), tmp, sim=SimServer(seed=1)
    )
    return tmp / run_id


def large_data(tmp: Path, copies: int = 10) -> Path:
    """A data folder whose catalog holds the shipped rows ``copies`` times (regions renamed).

    Everything else links to the shipped data; the compact form is written as
    ``catalog build`` writes it.
    """
    sys.path.insert(0, str(ROOT))
    from sizing.catalog.load import write_compact

    shipped = ROOT / "data"
    data = tmp / "data"
    (data / "catalog").mkdir(parents=True)
    for entry in shipped.iterdir():
        if entry.name != "catalog":
            (data / entry.name).symlink_to(entry.resolve())
    for entry in (shipped / "catalog").iterdir():
        if not entry.name.startswith("instances."):
            (data / "catalog" / entry.name).symlink_to(entry.resolve())
    src = shipped / "catalog" / "instances.csv"
    out = data / "catalog" / "instances.csv"
    with src.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        names = list(reader.fieldnames or [])
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        for k in range(copies):
            for row in rows:
                writer.writerow(row if k == 0 else {**row, "region": f"{row['region']}-x{k}"})
    write_compact(out)
    return data


def commands(tmp: Path, upstream: Path | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each benchmarked command with its environment."""
    # The catalog cache of this benchmark's own folder, warmed by the first round.
    env = {**os.environ, "NGINX_SIZING_CACHE": str(tmp / "cache")}
    # As on a user's machine, the warm-up round writes the project's compiled sources (a
    # shell or CI that sets PYTHONDONTWRITEBYTECODE would have every timed run recompile
    # them, while numpy's compiled files come installed).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    run = simulated_run(tmp / "runs")
    big = large_data(tmp / "large")
    cmds: dict[str, tuple[list[str], dict[str, str]]] = {
        NUMPY: ([PY, "-c", "import numpy"], env),
        "recommend": (REC, env),
        "recommend --region all": ([*REC, "--region", "all"], env),
        "--region all --provider azure": ([*REC, "--region", "all", "--provider", "azure"], env),
        "--region all --sort carbon": ([*REC, "--region", "all", "--sort", "carbon"], env),
        "--region all --pricing spot": ([*REC, "--region", "all", "--pricing", "spot"], env),
        "recommend --runs DIR": (
            [*REC, "--protocol", "http", "--runs", str(run), "--allow-simulated"],
            env,
        ),
        "plan-measurements": ([*SIZING, "plan-measurements", "--rps", "1e6"], env),
        "--region all, catalog x10": (
            [*REC, "--region", "all"],
            {**env, "NGINX_SIZING_DATA": str(big)},
        ),
        "recommend --mix 3 --zones 3": ([*REC, "--mix", "3", "--zones", "3"], env),
    }
    if upstream is not None and (upstream / "aws").is_dir() and (upstream / "gcp").is_dir():
        out = tmp / "built" / "instances.csv"
        out.parent.mkdir()
        cmds["catalog build"] = (
            [
                *SIZING,
                "catalog",
                "build",
                "--aws-dir",
                str(upstream / "aws"),
                "--gcp-dir",
                str(upstream / "gcp"),
                "--out",
                str(out),
            ],
            env,
        )
    return cmds


def spread(values: list[float]) -> dict[str, float]:
    """Median, min and max."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def rounds(
    cmds: dict[str, tuple[list[str], dict[str, str]]], n: int
) -> dict[str, dict[str, list[float]]]:
    """``n`` rounds of every command, the order rotating by one each round."""
    names = list(cmds)
    for name in names:  # warm-up: page cache and .pyc files
        timed(*cmds[name])
    out: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in names}
    for r in range(n):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            wall, cpu = timed(*cmds[name])
            out[name]["wall"].append(wall)
            out[name]["cpu"].append(cpu)
    return out


def report_times(tmp: Path, n: int) -> dict[str, list[float]]:
    """Wall seconds of ``report`` and ``report --pdf``, alternated, ``n`` of each."""
    base = [*SIZING, "report", "--rps", "1e6", "--sla-p99", "5ms", "--quiet"]
    walls: dict[str, list[float]] = {"report": [], "report --pdf": []}
    for i in range(n):
        names = ["report", "report --pdf"] if i % 2 == 0 else ["report --pdf", "report"]
        for name in names:
            cmd = [*base, "--out", str(tmp / f"report-{i}-{len(name)}")]
            if name.endswith("--pdf"):
                cmd.append("--pdf")
            walls[name].append(timed(cmd)[0])
    return walls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--report", action="store_true", help="also time report and --pdf")
    parser.add_argument("--report-repeat", type=int, default=3)
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="time only the commands whose name contains NAME (repeatable; import numpy always)",
    )
    parser.add_argument(
        "--upstream",
        type=Path,
        default=ROOT.parent / "shared" / "facts" / "upstream",
        help="folder with aws/ and gcp/ upstream files, for catalog build",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cmds = commands(tmp, args.upstream)
        if args.only:
            cmds = {k: v for k, v in cmds.items() if k == NUMPY or any(o in k for o in args.only)}
        times = rounds(cmds, args.rounds)
        reports = report_times(tmp, args.report_repeat) if args.report else {}
    load_after = os.getloadavg()
    numpy = times[NUMPY]
    results: dict[str, Any] = {
        "rounds": args.rounds,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "commands": {k: " ".join(v[0]) for k, v in cmds.items()},
        "seconds": {k: {m: spread(v[m]) for m in v} for k, v in times.items()},
        "ratios": {},
    }
    print(f"machine: {machine()}; load average {load_before[0]:.2f} before, {load_after[0]:.2f}")
    print(f"{args.rounds} rounds, order rotating; whole processes; median (min-max over rounds)")
    w = spread(numpy["wall"])
    print(f"{NUMPY:28s} wall {w['median']:.3f} s ({w['min']:.3f}-{w['max']:.3f})")
    ok = True
    for name, goal in RATIO_GOALS.items():
        if name not in times:
            why = "not asked for" if args.only else f"no upstream files at {args.upstream}"
            print(f"{name:28s} skipped ({why})")
            continue
        t = times[name]
        wall = [a / b for a, b in zip(t["wall"], numpy["wall"], strict=True)]
        cpu = [a / b for a, b in zip(t["cpu"], numpy["cpu"], strict=True)]
        rw, rc, s = spread(wall), spread(cpu), spread(t["wall"])
        met = rw["median"] <= goal
        ok &= met
        results["ratios"][name] = {"wall": rw, "cpu": rc, "goal": goal, "met": met}
        print(
            f"{name:28s} wall {s['median']:.3f} s; x{rw['median']:.2f} "
            f"({rw['min']:.2f}-{rw['max']:.2f}) import numpy, CPU x{rc['median']:.2f} "
            f"({rc['min']:.2f}-{rc['max']:.2f}); goal <= {goal:g}: "
            f"{'ok' if met else 'MISSED'}"
        )
    absolute = {k: times[k]["wall"] for k in SECONDS_GOALS if k in times}
    absolute.update(reports)
    results["absolute"] = {}
    for name, walls in absolute.items():
        s, goal = spread(walls), SECONDS_GOALS[name]
        met = s["median"] <= goal
        ok &= met
        results["absolute"][name] = {**s, "goal_s": goal, "met": met}
        print(
            f"{name:28s} wall {s['median']:.2f} s ({s['min']:.2f}-{s['max']:.2f}); "
            f"goal <= {goal:g} s: {'ok' if met else 'MISSED'}"
        )
    if not args.only:  # a partial run does not replace the full one
        save("recommend", results)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
