"""What one process keeps between answers (`sizing.fleet.kept`, the catalog's columns) is never
a stale answer: every answer equals the one a fresh process gives."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from typing import Any

import pytest


def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a new process: nothing kept (the private cache on disk stays)."""
    from sizing.fleet import kept

    kept.forget()
    monkeypatch.setattr("sizing.catalog.load._LOADED", {})


def _doc(request: Any) -> dict[str, Any]:
    from sizing.pipeline import size

    answer = size(request)
    return {"decision": answer.decision, **answer.to_dict(top=8)}


def test_answers_after_others_equal_fresh_ones(monkeypatch):
    from sizing.request import SizingRequest

    spot = SizingRequest(rps=1e6, regions="all", pricing="spot")
    # Each after the one before it, in one process: another pricing (the on-demand
    # comparison), then what capacity depends on (the SLA, the body size) with some providers
    # only (a subset of the columns' rows), then a few regions (the rows' path).
    asked = [
        spot,
        dataclasses.replace(spot, pricing="on-demand"),
        dataclasses.replace(spot, pricing="on-demand", sla_p99_ms=2.0),
        dataclasses.replace(spot, sla_p99_ms=2.0, file_bytes=100_000, providers="aws"),
        dataclasses.replace(spot, pricing="on-demand", regions="us-east-1,europe-west1"),
    ]
    _fresh(monkeypatch)
    in_turn = [_doc(r) for r in asked]
    for request, got in zip(asked, in_turn, strict=True):
        _fresh(monkeypatch)
        assert got == _doc(request), request
    assert len({str(d) for d in in_turn}) == len(asked)  # each input moved the answer


def _rows(n: int) -> list[Any]:
    from sizing.catalog.load import load_catalog

    return load_catalog()[:n]


def test_kept_capacities_compute_only_rows_not_seen_under_the_same_inputs():
    from sizing.fleet import kept
    from sizing.model.capacity import instance_capacities
    from sizing.model.inputs import POINT, ModelInputs
    from sizing.workload.value import Workload

    asked: list[int] = []

    def counted(rows, work, evidence, profiles, model):
        asked.append(len(rows))
        return instance_capacities(rows, work, evidence, profiles, model)

    rows = _rows(12)
    work = Workload()
    kept.forget()

    def caps(these: list[Any], w: Workload = work, model: ModelInputs = POINT) -> list[Any]:
        return kept.kept_capacities(these, w, None, (), model, counted)

    first = caps(rows[:8])
    assert caps(rows[4:12]) == instance_capacities(rows[4:12], work)
    assert asked == [8, 4]  # rows 4-7 kept
    assert first == instance_capacities(rows[:8], work)
    # Another SLA, another model input: computed again, and as a fresh computation.
    tight = dataclasses.replace(work, sla_p99_ms=1.0)
    assert caps(rows[4:12], tight) == instance_capacities(rows[4:12], tight)
    slower = ModelInputs(estimates=(("base_latency_ms", 0.9),))
    got = caps(rows[4:12], tight, slower)
    assert got == instance_capacities(rows[4:12], tight, model=slower)
    assert got != instance_capacities(rows[4:12], tight)
    assert asked == [8, 4, 8, 8]
    # An equal row read again (another object) is computed again; evidence is never kept.
    again = [dataclasses.replace(r) for r in rows[4:12]]
    caps(again, tight, slower)
    assert asked[-1] == 8
    kept.kept_capacities(again, tight, object(), (), slower, lambda *a: asked.append(-1) or [])
    assert asked[-1] == -1
    # Another computing function (a replacement): its own inputs.
    kept.forget()
    caps(rows[:4])
    kept.kept_capacities(rows[:4], work, None, (), POINT, lambda r, *a: asked.append(99) or r)
    assert asked[-2:] == [4, 99]


def test_the_columns_are_read_again_when_a_file_changes(tmp_path, monkeypatch):
    from sizing.catalog.columns import load_columns
    from sizing.catalog.load import DEFAULT_CATALOG, compact_path

    csv_path = tmp_path / "instances.csv"
    shutil.copyfile(DEFAULT_CATALOG, csv_path)
    shutil.copyfile(compact_path(DEFAULT_CATALOG), compact_path(csv_path))
    old = time.time_ns() - 3600 * 1_000_000_000
    for p in (csv_path, compact_path(csv_path)):
        os.utime(p, ns=(old, old))
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "cache"))
    cols = load_columns(csv_path)
    assert cols is not None and load_columns(csv_path) is cols  # the same files: kept
    os.utime(csv_path, ns=(old + 10**9, old + 10**9))  # touched: its key changes
    again = load_columns(csv_path)
    assert again is not None and again is not cols and again.n == cols.n
    monkeypatch.setenv("NGINX_SIZING_CACHE", "off")
    assert load_columns(csv_path) is None  # no cache: none kept either


#: What `sizing.analyses.baseline.against_on_demand` reads of the on-demand decision, and more.
FIRST_KEYS = ("instance_type", "provider", "region", "count", "total_monthly_usd")


@pytest.mark.parametrize(
    "changes",
    [
        {"regions": "all"},
        {"regions": "all", "pricing": "1y", "sort": "cost"},
        {"regions": "all", "redundancy": 1, "zones": 3, "zone_loss": 1, "rps": 1e5},
        {"regions": "all", "max_count": 5},
        {"regions": "us-east-1,europe-west1", "pricing": "3y"},  # the rows' path
    ],
)
def test_first_only_ranks_the_same_first_option_and_counts_fewer_shapes(monkeypatch, changes):
    """`sizing.fleet.engine.within_reach`: rows that cannot rank first are not counted."""
    from sizing.fleet import engine
    from sizing.pipeline import size
    from sizing.request import SizingRequest

    counted: list[int] = []
    keep = engine.kept_capacities
    monkeypatch.setattr(
        engine, "kept_capacities", lambda rows, *a: counted.append(len(rows)) or keep(rows, *a)
    )
    request = dataclasses.replace(SizingRequest(rps=1e6), **changes)
    got = []
    for first_only in (False, True):
        _fresh(monkeypatch)
        decision = size(request, first_only=first_only).recommendation.decision
        got.append({k: decision[k] for k in FIRST_KEYS})
    assert got[0] == got[1]
    assert counted[1] <= counted[0]
    if changes == {"regions": "all"}:
        assert counted[1] < counted[0] / 2  # most shapes cost more than a fleet found
