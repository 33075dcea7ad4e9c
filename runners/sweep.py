"""Sweeps: a plan's grid of (vCPUs x threads x connections) trials, run and stored.

`run_sweep` walks a `Plan`'s grid through a session (or the simulator), skipping what a
resumed run already holds. `target_for` gives what trials run on, for sweeps and searches.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

from runners import loadgen
from runners.plan import DEFAULT_OUT, Access, Plan
from runners.run import Progress, Run, name_run, open_run, stop_left_behind
from runners.scenario import make_scenario
from runners.session import Session, connect_hosts
from runners.store import load_trials

if TYPE_CHECKING:
    import pandas as pd

    from runners.sim import SimServer, SimTarget

# Plan, Access and make_scenario are re-exported: a sweep is written with them (notebooks).
__all__ = ["Access", "Plan", "make_scenario", "run_sweep", "target_for"]


@contextlib.contextmanager
def target_for(
    plan: Plan,
    run: Run,
    *,
    sim: SimServer | None = None,
    access: Access | None = None,
    log: IO[str] | None = None,
    mode: str = loadgen.CLOSED,
    sla_p99_ms: float | None = None,
) -> Iterator[SimTarget | Session]:
    """What trials run on: the simulated server, or a `Session` on the plan's hosts.

    For real hosts, what an earlier (killed) process of this run left behind is stopped
    first, with a warning on stderr.
    """
    if sim is not None:
        from runners.sim import SimTarget

        yield SimTarget(
            sim,
            run,
            plan.scenario,
            plan.sla_p99_ms if sla_p99_ms is None else sla_p99_ms,
            plan.label,
            plan.max_error_rate,
            plan.saturation,
        )
        return
    # A warning, shown even when progress is not.
    stop_left_behind(run.path, access, sys.stderr, record=run)
    with connect_hosts(plan, access) as hosts, Session(plan, hosts, run, log=log, mode=mode) as s:
        yield s


def run_sweep(
    plan: Plan,
    out: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    resume: str | None = None,
    access: Access | None = None,
    progress: IO[str] | None = sys.stderr,
    sim: SimServer | None = None,
) -> pd.DataFrame:
    """Run every setting of ``plan`` not already in the run; return its trials as a DataFrame.

    Parameters
    ----------
    plan : Plan
        What to measure.
    out : path
        Parent folder of run folders; the run lands in ``out/<run_id>/``.
    resume : str, optional
        Run id to continue: settings already measured are skipped.
    access : Access, optional
        SSH options.
    progress : file, optional
        Where the progress line goes (None for silence).
    sim : runners.sim.SimServer, optional
        Sweep the simulated server instead of real hosts (rows say ``simulated=true``).

    Raises
    ------
    RunnerError, trialtable.folder.RunFolderError
        With one line; an interrupted sweep raises ``KeyboardInterrupt`` after recording
        its status. Once the run exists, the exception's ``run_id`` names it.
    """
    plan.generator().check(plan.http_version, loadgen.CLOSED)
    plan, run = open_run(plan, out, resume, sim)
    try:
        done = {
            (int(r["vcpus"]), int(r["threads"]), int(r["connections"]))
            for r in run.rows()
            if r["kind"] == "sweep"
        }
        todo = [s for s in plan.settings() if s not in done]
        bar = Progress(len(todo), plan.warmup_s + plan.duration_s + plan.cooldown_s, progress)
        with run.status():
            if todo:
                with target_for(plan, run, sim=sim, access=access, log=progress) as target:
                    for v, t, c in todo:
                        bar.update(target.trial(v, t, c, duration_s=plan.duration_s))
    except BaseException as exc:
        name_run(exc, run.run_id)
        raise
    finally:
        run.close()
    return load_trials(run.path)
