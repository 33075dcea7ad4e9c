"""The catalog's columns and `recommend` over them give the answer the rows give."""

from __future__ import annotations

import copy
import math
import shutil
from typing import Any

import pytest

from sizing.errors import Infeasible, InputError


def _age(*paths: Any, seconds: int = 3600) -> None:
    """Set files' modification time back (a just-written file is never cached)."""
    import os
    import time

    ns = time.time_ns() - seconds * 1_000_000_000
    for p in paths:
        os.utime(p, ns=(ns, ns))


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A copy of the shipped catalog, its columns (from a cache of the test's) and its rows."""
    from sizing.catalog.columns import load_columns
    from sizing.catalog.load import DEFAULT_CATALOG, compact_path, load_catalog

    tmp = tmp_path_factory.mktemp("columnar")
    csv_path = tmp / "instances.csv"
    shutil.copyfile(DEFAULT_CATALOG, csv_path)
    shutil.copyfile(compact_path(DEFAULT_CATALOG), compact_path(csv_path))
    _age(csv_path, compact_path(csv_path))
    mp = pytest.MonkeyPatch()
    mp.setenv("NGINX_SIZING_CACHE", str(tmp / "cache"))
    try:
        first = load_columns(csv_path)  # made from the rows, then kept
        cols = load_columns(csv_path)  # from the cache
        rows = load_catalog(base=csv_path)
    finally:
        mp.undo()
    assert first is not None and cols is not None
    return csv_path, first, cols, rows


def _typed(insts: list[Any]) -> list[list[tuple[type, Any]]]:
    return [[(type(v), v) for v in i.__dict__.values()] for i in insts]


def test_columns_give_the_rows_the_row_reader_gives(shipped):
    import numpy as np

    _, first, cols, rows = shipped
    assert cols.n == first.n == len(rows)
    every = np.arange(cols.n)
    assert _typed(cols.instances(every)) == _typed(rows)
    assert _typed(first.instances(every[::-1])) == _typed(rows[::-1])
    assert cols.instance(5) is cols.instances([5])[0]  # one object per row


def _both(shipped: Any, **kw: Any) -> tuple[Any, Any]:
    import numpy as np

    from sizing.fleet.columnar import recommend_columns
    from sizing.fleet.question import question
    from sizing.fleet.recommend import recommend
    from sizing.workload.value import Workload

    _, _, cols, rows = shipped
    work = kw.pop("workload", Workload())
    target = kw.pop("target_rps", 1e6)
    by_rows = recommend(target, rows, work, **kw)
    by_cols = recommend_columns(question(target, work, **kw), cols, np.arange(cols.n))
    return by_rows, by_cols


def _profiles() -> tuple[Any, ...]:
    from sizing.evidence.profiles import load_profiles

    return tuple(load_profiles(["tests/data/profile-fixture-epyc.json"]))


CASES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "sort by cost": {"sort": "cost"},
    "spot": {"pricing": "spot", "spot_reserve": 0.2},
    "spot by band": {"pricing": "spot"},
    "spot by band, zones, max count": {"pricing": "spot", "zones": 3, "max_count": 40},
    "3y": {"pricing": "3y"},
    "burstable, small target": {"burstable": True, "target_rps": 1e3},
    "all families": {"include_families": ("all",)},
    "zones and losses": {"zones": 3, "zone_loss": 1, "redundancy": 1},
    "vpc clients over zones": {"clients": "vpc", "zones": 3},
    "max count (some infeasible)": {"max_count": 5},
    "confidence 0.9, headroom 0.3": {"confidence": 0.9, "headroom": 0.3},
    "no pruning": {"prune": False},
    "growth": {"growth": ("10%/month", 1.1)},
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_columns_answer_as_the_rows_do(shipped, case):
    by_rows, by_cols = _both(shipped, **copy.deepcopy(CASES[case]))
    assert by_cols.decision == by_rows.decision
    assert by_cols.notes == by_rows.notes
    assert by_cols.to_dict(top=10) == {**by_rows.to_dict(top=10), "excluded": by_cols.excluded}
    assert list(by_cols.excluded) == by_rows.excluded
    assert by_cols.to_dict() == by_rows.to_dict()


def test_spot_spares_on_a_few_regions_rank_as_the_rows_do(shipped):
    """Spares by band (AWS's feed, the GCP estimate) counted in the columns, ranked by carbon."""
    import numpy as np

    from sizing.fleet.columnar import recommend_columns
    from sizing.fleet.question import question
    from sizing.fleet.recommend import recommend

    _, _, cols, rows = shipped
    regions = {"us-east-1", "eu-central-1", "europe-west3"}
    picked = np.array([k for k, i in enumerate(rows) if i.region in regions])
    kw = {"pricing": "spot", "sort": "carbon", "zones": 2}
    by_rows = recommend(1e6, [rows[k] for k in picked], **kw)
    by_cols = recommend_columns(question(1e6, **kw), cols, picked)
    assert by_cols.decision == by_rows.decision
    assert by_cols.to_dict() == by_rows.to_dict()
    assert {o.capacity.instance.provider for o in by_cols.options if o.spot} == {"aws", "gcp"}


def test_the_columns_answer_burst_rates_as_the_rows_do(shipped):
    """--network burst prunes on the providers' burst rates: the same answer either way."""
    from sizing.workload.value import Workload

    by_rows, by_cols = _both(shipped, workload=Workload(burst_network=True))
    assert by_cols.decision == by_rows.decision
    assert list(by_cols.excluded) == by_rows.excluded
    assert by_cols.to_dict() == by_rows.to_dict()


def test_the_columns_answer_with_a_profile_and_a_mix(shipped):
    from sizing.workload.value import Workload

    work = Workload(file_bytes=50_000, protocol="http")
    by_rows, by_cols = _both(shipped, workload=work, profiles=_profiles(), mix=2)
    assert by_cols.mix == by_rows.mix
    assert by_cols.to_dict() == by_rows.to_dict()


def test_filtered_rows_answer_as_the_filtered_catalog_does(shipped):
    from sizing.catalog.load import filter_catalog
    from sizing.fleet.columnar import recommend_columns, select_rows
    from sizing.fleet.question import question
    from sizing.fleet.recommend import recommend

    _, _, cols, rows = shipped
    picked = select_rows(cols, provider="GCP", arch="arm64,x86_64", family=None)
    expected = filter_catalog(rows, provider="GCP", arch="arm64,x86_64")
    assert [cols.instance(r) for r in picked] == expected
    by_cols = recommend_columns(question(2e5), cols, picked)
    assert by_cols.to_dict() == recommend(2e5, expected).to_dict()
    for bad in ({"provider": "nowhere"}, {"arch": "sparc"}, {"family": "c7g,zz9"}):
        with pytest.raises(InputError) as by_rows_error:
            filter_catalog(rows, **bad)
        with pytest.raises(InputError) as by_cols_error:
            select_rows(cols, **bad)
        assert str(by_cols_error.value) == str(by_rows_error.value)


def test_an_infeasible_target_gives_the_rows_message(shipped):
    import numpy as np

    from sizing.fleet.columnar import recommend_columns
    from sizing.fleet.question import question
    from sizing.fleet.recommend import recommend

    _, _, cols, rows = shipped
    with pytest.raises(Infeasible) as by_rows:
        recommend(1e12, rows, max_count=2)
    with pytest.raises(Infeasible) as by_cols:
        recommend_columns(question(1e12, max_count=2), cols, np.arange(cols.n))
    assert "no instance type meets" in str(by_rows.value)
    assert str(by_cols.value) == str(by_rows.value)


def test_options_are_made_only_when_read(shipped, monkeypatch):
    import numpy as np

    from sizing.fleet import columnar
    from sizing.fleet.lazy import Lazy
    from sizing.fleet.question import question

    _, _, cols, _ = shipped
    made: list[tuple[int, int]] = []
    real = Lazy.__init__

    def counting(self: Any, n: int, make: Any) -> None:
        def wrapped(start: int, stop: int) -> Any:
            made.append((start, stop))
            return make(start, stop)

        real(self, n, wrapped)

    monkeypatch.setattr(Lazy, "__init__", counting)
    rec = columnar.recommend_columns(question(1e6), cols, np.arange(cols.n))
    doc = rec.to_dict(top=10)
    assert len(doc["options"]) == 10
    assert sum(stop - start for start, stop in made) < 100  # of thousands of options
    assert len(rec.options) > 1000


def test_a_lazy_list_behaves_as_a_list():
    from sizing.fleet.lazy import Lazy

    calls: list[tuple[int, int]] = []

    def make(start: int, stop: int) -> list[int]:
        calls.append((start, stop))
        return [i * i for i in range(start, stop)]

    items = Lazy(100, make)
    plain = [i * i for i in range(100)]
    assert len(items) == 100 and items and calls == []
    assert items[3] == 9 and calls == [(0, 4)]
    assert items[:5] == plain[:5] and items[2:8:3] == plain[2:8:3]
    assert items[-1] == plain[-1] and items[::-1] == plain[::-1]
    with pytest.raises(IndexError):
        items[100]
    assert list(items) == plain and items == plain
    assert copy.copy(items) == plain and type(copy.copy(items)) is list
    items.append(-1)
    assert len(items) == 101 and items[-1] == -1
    assert sorted(Lazy(3, lambda a, b: [3, 1, 2][a:b])) == [1, 2, 3]
    assert math.isclose(sum(Lazy(4, lambda a, b: [0.5] * (b - a))), 2.0)


def test_no_columns_without_a_usable_cache(tmp_path, monkeypatch):
    import csv

    from sizing.catalog.columns import load_columns
    from sizing.catalog.load import DEFAULT_CATALOG, compact_path

    csv_path = tmp_path / "instances.csv"
    shutil.copyfile(DEFAULT_CATALOG, csv_path)
    shutil.copyfile(compact_path(DEFAULT_CATALOG), compact_path(csv_path))
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "cache"))
    # Just written (its time set ahead, so that a slow machine cannot age it past the rule):
    # no cache key.
    _age(csv_path, compact_path(csv_path), seconds=-3600)
    assert load_columns(csv_path) is None
    _age(csv_path, compact_path(csv_path))
    monkeypatch.setenv("NGINX_SIZING_CACHE", "off")
    assert load_columns(csv_path) is None
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "cache"))
    cols = load_columns(csv_path)
    assert cols is not None
    entries = sorted(p.stat().st_mode & 0o077 for p in (tmp_path / "cache").iterdir())
    assert entries == [0, 0]  # the rows' file and the columns' file, private
    # A changed catalog: its compact form is no longer current, so no columns at all.
    with csv_path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows, names = list(reader), list(reader.fieldnames or [])
    rows[0]["price_usd_hour"] = str(float(rows[0]["price_usd_hour"]) * 2)
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    _age(csv_path, seconds=1800)
    assert load_columns(csv_path) is None


@pytest.mark.parametrize(
    ("regions", "providers"), [("all", "aws,GCP"), ("ALL", ""), ("us-east-1", "")]
)
def test_size_takes_the_columns_for_every_region_only(regions, providers, monkeypatch):
    from sizing import pipeline
    from sizing.request import SizingRequest

    request = SizingRequest(rps=1e6, regions=regions, providers=providers)
    answer = pipeline.size(request)
    monkeypatch.setattr(pipeline, "_by_columns", lambda request: False)
    by_rows = pipeline.size(request)
    kind = type(answer.recommendation).__name__
    assert kind == ("Recommendation" if regions == "us-east-1" else "ColumnarRecommendation")
    assert answer.decision == by_rows.decision
    excluded = by_rows.recommendation.excluded
    assert answer.to_dict(top=10) == {**by_rows.to_dict(top=10), "excluded": excluded}
    assert list(answer.instances) == list(by_rows.instances)


def test_one_region_reads_the_cache_once(tmp_path, monkeypatch):
    from sizing.catalog import cache
    from sizing.catalog.load import DEFAULT_CATALOG, compact_path, select_instances

    csv_path = tmp_path / "instances.csv"
    shutil.copyfile(DEFAULT_CATALOG, csv_path)
    shutil.copyfile(compact_path(DEFAULT_CATALOG), compact_path(csv_path))
    _age(csv_path, compact_path(csv_path))
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "cache"))
    expected = select_instances(region="us-east-1", base=csv_path)  # fills the cache
    reads: list[str] = []
    real = cache.load

    def counted(key: str, slot: str) -> Any:
        reads.append(slot)
        return real(key, slot)

    monkeypatch.setattr(cache, "load", counted)
    monkeypatch.setattr("sizing.catalog.load._LOADED", {})  # as a new run
    assert select_instances(region="us-east-1", base=csv_path) == expected
    assert len(reads) == 1  # the regions' check and the rows: one read


def test_an_answer_is_frozen(shipped):
    import dataclasses

    for rec in _both(shipped, target_rps=1e5, mix=2):
        doc = rec.to_dict(top=3)  # the columns' document reads the first options only
        assert len(rec.options) > 3 and rec.decision is not None and rec.mix is not None
        assert doc["decision"] == rec.decision and doc["traffic"] == rec.traffic
        for name, value in (("decision", None), ("traffic", {}), ("mix", None), ("notes", ())):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(rec, name, value)
        with pytest.raises(dataclasses.FrozenInstanceError):
            rec.options[0].count = 1
        assert dataclasses.replace(rec, notes=("added",)).notes == ("added",) != rec.notes
