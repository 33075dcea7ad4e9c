"""Record the multi-client run the clients notebook shows by default (run as root).

Three clients in network namespaces (`tests.netns`) load nginx in a fourth; three 2-second
trials. In the second trial the second client is made to start 1.5 s after the common start
(its barrier is given a later instant, as tests/test_window.py does): the lagging client the
notebook is meant to show. Its ``run.json``, ``trials.csv`` and ``histograms.jsonl`` are
copied here.

    PYTHONPATH=$PWD .venv/bin/python tests/data/clients/record.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from runners import window  # noqa: E402
from runners.sweep import Plan, make_scenario, run_sweep  # noqa: E402
from tests import netns  # noqa: E402


def main() -> None:
    calls: list[float] = []
    on_time = window.barrier

    def second_late_in_trial_two(argv, start_s, offset, **kw):  # type: ignore[no-untyped-def]
        calls.append(start_s)
        return on_time(argv, start_s + (1.5 if len(calls) == 5 else 0.0), offset, **kw)

    window.barrier = second_late_in_trial_two  # type: ignore[assignment]
    with netns.bridge("rec", 3, subnet="10.231.15") as made, tempfile.TemporaryDirectory() as tmp:
        plan = Plan(
            scenario=make_scenario("static", protocol="http"),
            server=f"netns:{made.server}",
            clients=made.client_hosts,
            connections=(2, 3, 4),
            duration_s=2,
            warmup_s=0,
            cooldown_s=0.0,
            sla_p99_ms=10_000.0,
            label="three clients",
        )
        df = run_sweep(plan, tmp, progress=sys.stderr)
        run = Path(tmp) / str(df["run_id"].iloc[0])
        dest = HERE / run.name
        dest.mkdir()
        for name in ("run.json", "trials.csv", "histograms.jsonl"):
            shutil.copy(run / name, dest / name)
    print(dest)


if __name__ == "__main__":
    main()
