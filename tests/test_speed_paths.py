"""The fast paths give what the per-row paths give: same values, same refusals.

`trialtable.fields.Fields.check_rows` (a column at a time) against `Fields.check_row` (a row at
a time), on hypothesis-made blocks of good and bad values; `sizing.model.capacity`'s batch
capacities against `model_capacity` per row on the whole shipped catalog.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trialtable.fields import Field, FieldError, Fields

TABLE = Fields(
    "test",
    (
        Field("name", "str", max_len=8),
        Field("arch", "str", choices=("x86_64", "arm64")),
        Field("note", "str", required=False),
        Field("n", "int", "", 1, 4096),
        Field("tpc", "int", "", 1, 2, required=False),
        Field("x", "float", "", 0.001, 1e4),
        Field("opt", "float", "", 1e-6, 1e4, required=False),
        Field("flag", "bool", required=False),
    ),
)
NAMES = tuple(f.name for f in TABLE)
ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 2, 3, 4096, 4097, 10_000, 2**63, -(2**63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 1.0, 2.0, 1e-7, 1e-6, 1e4, 1e4 + 1, math.nan, math.inf]),
    st.text(max_size=10),
    st.sampled_from(["x86_64", "arm64", "", "  ", "ok"]),
    st.lists(st.integers(), max_size=2),
)
GOOD = {
    "name": st.text(min_size=1, max_size=8).filter(str.strip),
    "arch": st.sampled_from(["x86_64", "arm64"]),
    "note": st.one_of(st.none(), st.text(max_size=20)),
    "n": st.integers(1, 4096) | st.sampled_from([1.0, 8.0]),
    "tpc": st.sampled_from([None, 1, 2, 1.0]),
    "x": st.floats(0.001, 1e4) | st.integers(1, 10_000),
    "opt": st.one_of(st.none(), st.floats(1e-6, 1e4), st.integers(1, 10_000)),
    "flag": st.sampled_from([None, True, False]),
}
GOOD_ROW = st.tuples(*(GOOD[n] for n in NAMES)).map(list)


def _per_row(rows: list[list[Any]]) -> list[list[Any]] | str:
    try:
        return [
            [TABLE.check_row(dict(zip(NAMES, r, strict=True)), "f:1", NAMES)[n] for n in NAMES]
            for r in rows
        ]
    except FieldError as exc:
        return str(exc)


def _fast(rows: list[list[Any]]) -> list[list[Any]] | str:
    try:
        return TABLE.check_rows([list(r) for r in rows], NAMES, "f:1")
    except FieldError as exc:
        return str(exc)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types (an int converted to float must be a float)."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return [[(type(v), v) for v in r] for r in a] == [[(type(v), v) for v in r] for r in b]


@settings(max_examples=300, deadline=None)
@given(st.lists(GOOD_ROW, min_size=0, max_size=6), st.data())
def test_check_rows_matches_check_row(rows, data):
    if rows and data.draw(st.booleans()):  # one bad value somewhere
        i = data.draw(st.integers(0, len(rows) - 1))
        j = data.draw(st.integers(0, len(NAMES) - 1))
        rows[i][j] = data.draw(ANY)
    assert _same(_fast(rows), _per_row(rows))


def test_check_rows_refuses_like_check_row_on_the_first_bad_row():
    good = ["a", "arm64", None, 2, 1, 1.5, None, True]
    bad_late = [*good[:3], 0, *good[4:]]  # n = 0 in row 3
    bad_early = [*good[:5], math.nan, *good[6:]]  # x = NaN in row 2
    rows = [good, bad_early, bad_late]
    assert _fast(rows) == _per_row(rows)
    assert "'x'" in str(_fast(rows))
    with pytest.raises(FieldError):
        TABLE.check_rows([good, [*good[:4], 3, *good[5:]]], NAMES, "f:1")  # tpc 3


# ----------------------------------------------------------------------------- capacities


def _shipped_types() -> list[Any]:
    from sizing.catalog.load import load_catalog

    seen: dict[tuple[str, str], Any] = {}
    for inst in load_catalog():
        seen.setdefault((inst.provider, inst.instance_type), inst)
    return list(seen.values())


def _workloads() -> list[Any]:
    from sizing.workload.value import Workload

    return [
        Workload(),
        Workload(protocol="http", file_bytes=100_000),
        Workload(gzip=0.8),
        Workload(sla_p99_ms=0.5),  # no type can meet it: derating 0, latency-bound
        Workload(scenario="reverse_proxy", jwt="rs256", environment="kubernetes"),
        Workload(requests_per_connection=1.0, environment="bare-metal"),
        Workload(size_mix=((1024.0, 0.8), (1_000_000.0, 0.2))),
    ]


def _fields(cap: Any) -> dict[str, Any]:
    from dataclasses import fields

    out = {f.name: getattr(cap, f.name) for f in fields(cap)}
    for k, v in out.items():
        if isinstance(v, float) and math.isnan(v):
            out[k] = "nan"
    return out


@pytest.mark.parametrize("work", _workloads(), ids=lambda w: w.describe()[:40])
def test_batch_capacities_equal_the_per_row_model_on_the_shipped_catalog(work):
    from sizing.model.capacity import model_capacities, model_capacity

    insts = _shipped_types()
    assert len(insts) > 1000
    batch = model_capacities(insts, work)
    assert len(batch) == len(insts)
    for inst, cap in zip(insts, batch, strict=True):
        one = model_capacity(inst, work)
        assert cap.instance is inst
        assert _fields(cap) == _fields(one), inst.instance_type
    if work.sla_p99_ms < 1:
        assert any(c.binding_constraint == "latency" for c in batch)


def test_batch_capacities_with_a_profile_and_duplicates_and_edge_rows():
    from dataclasses import replace

    from sizing.evidence.profiles import load_profiles
    from sizing.model.capacity import model_capacities, model_capacity
    from sizing.workload.value import Workload

    profiles = load_profiles(["tests/data/profile-fixture-epyc.json"])
    insts = _shipped_types()
    base = insts[0]
    edge = [
        replace(base, vcpus=1),
        replace(base, vcpus=4096),
        replace(base, threads_per_core=1),
        replace(base, threads_per_core=2),
        replace(base, cpu="an unknown CPU", family="zz9"),
        replace(base, provider="other"),
        base,
        base,  # the same row twice
    ]
    rows = [*insts, *edge]
    work = Workload()
    batch = model_capacities(rows, work, profiles)
    assert any(c.profile for c in batch), "the profile's platform must appear in the catalog"
    for inst, cap in zip(rows, batch, strict=True):
        assert _fields(cap) == _fields(model_capacity(inst, work, profiles))
    assert model_capacities([], work) == []


# ----------------------------------------------------------------------------- plan-measurements


def _scalar_cost(usable: float, target: float, redundancy: int, price: float, max_count: Any):
    from sizing.fleet.counts import FleetRules, count_for

    rules = FleetRules(headroom=0.0, redundancy=redundancy, max_count=max_count)
    n = count_for(target, usable, rules)
    return math.inf if n is None else n * price


def _vector_cost(usable: Any, target: float, redundancy: int, price: float, max_count: Any):
    from sizing.analyses.plan_measure import Costing, Curves, _fleet_cost
    from sizing.fleet.counts import FleetRules

    rules = FleetRules(headroom=0.0, redundancy=redundancy, max_count=max_count)
    return _fleet_cost(
        usable, 0.0, Curves(usable, math.inf, 0.0, price), Costing(target, rules, 0.0)
    )


@settings(max_examples=200, deadline=None)
@given(
    usable=st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from([0.0, -1.0, 1.0, 1e-300, 1e-3, 250_000.0, 1e6 / 3, 1e6 / 7]),
        ),
        min_size=1,
        max_size=20,
    ),
    target=st.sampled_from([1.0, 1e6, 1e6 + 1, 7e6, 2.5e5]),
    redundancy=st.integers(0, 3),
    max_count=st.sampled_from([None, 1, 4, 30]),
)
def test_vectorised_fleet_cost_equals_the_scalar_count(usable, target, redundancy, max_count):
    import numpy as np

    price = 0.37
    got = _vector_cost(np.array(usable), target, redundancy, price, max_count)
    want = [_scalar_cost(u, target, redundancy, price, max_count) for u in usable]
    assert got.tolist() == want


def test_vectorised_fleet_cost_at_exact_multiples():
    import numpy as np

    usable = [1e6 / k for k in range(1, 200)] + [1e6 / k * (1 + 1e-16) for k in range(1, 50)]
    got = _vector_cost(np.array(usable), 1e6, 0, 1.0, None)
    assert got.tolist() == [_scalar_cost(u, 1e6, 0, 1.0, None) for u in usable]


def _bisection_as_written_first(per_worker_rps: float, sla_p99_ms: float, cv2: float) -> float:
    """`sla_utilization` as first written (a nested function per step), for comparison."""
    from sizing.model.capacity import ESTIMATES

    if per_worker_rps <= 0:
        return 0.0
    s_ms = 1000.0 / per_worker_rps
    budget = sla_p99_ms - ESTIMATES["base_latency_ms"][0] - s_ms
    if budget <= 0:
        return 0.0

    def p99_wait(rho: float) -> float:
        if rho >= 1.0:
            return math.inf
        return s_ms * (1.0 + cv2) / 2.0 * max(math.log(100.0 * rho), 0.0) / (1.0 - rho)

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if p99_wait(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


@settings(max_examples=500, deadline=None)
@given(
    rate=st.floats(-1.0, 1e7) | st.sampled_from([0.0, 1.0, 200.0, 1e3, 2e3, 1e5]),
    sla=st.floats(0.0, 1e4) | st.sampled_from([0.5, 0.6, 1.0, 5.0, math.inf]),
    cv2=st.floats(0.0, 10.0) | st.just(0.25),
)
def test_sla_utilization_is_the_bisection_as_first_written(rate, sla, cv2):
    from sizing.model.capacity import sla_utilization

    assert sla_utilization(rate, sla, cv2) == _bisection_as_written_first(rate, sla, cv2)


# ----------------------------------------------------------------------------- catalog cache


def _rows(insts: list[Any]) -> list[list[tuple[type, Any]]]:
    return [[(type(v), v) for v in i.__dict__.values()] for i in insts]


def _catalog_copy(tmp_path: Any) -> Any:
    """A copy of the shipped catalog CSV and its compact form, in a folder of the test's."""
    import shutil

    from sizing.catalog.load import DEFAULT_CATALOG, compact_path

    csv_path = tmp_path / "instances.csv"
    shutil.copyfile(DEFAULT_CATALOG, csv_path)
    shutil.copyfile(compact_path(DEFAULT_CATALOG), compact_path(csv_path))
    _age(csv_path, compact_path(csv_path))
    return csv_path


def _age(*paths: Any, seconds: int = 3600) -> None:
    """Set files' modification time ``seconds`` back (a just-written file is never cached)."""
    import os
    import time

    ns = time.time_ns() - seconds * 1_000_000_000
    for p in paths:
        os.utime(p, ns=(ns, ns))


def test_cached_rows_equal_checked_rows(tmp_path, monkeypatch):
    from sizing.catalog import cache
    from sizing.catalog.load import DEFAULT_REGIONS, load_catalog

    csv_path = _catalog_copy(tmp_path)
    monkeypatch.setenv("NGINX_SIZING_CACHE", "off")
    plain_default = load_catalog(base=csv_path, regions=set(DEFAULT_REGIONS))
    plain_all = load_catalog(base=csv_path)
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "cache"))
    for _ in range(2):  # filled by the first run (default regions, then the rest), used after
        assert _rows(load_catalog(base=csv_path, regions=set(DEFAULT_REGIONS))) == _rows(
            plain_default
        )
        assert _rows(load_catalog(base=csv_path)) == _rows(plain_all)
    (entry,) = (tmp_path / "cache").iterdir()
    assert entry.stat().st_mode & 0o077 == 0
    assert cache.cache_dir() == tmp_path / "cache"

    def no_hash(path: Any) -> str:
        raise AssertionError(f"{path} hashed although the cache knows it")

    monkeypatch.setattr("sizing.catalog.load._sha256", no_hash)
    assert _rows(load_catalog(base=csv_path)) == _rows(plain_all)


def test_a_changed_catalog_is_not_taken_from_the_cache(tmp_path, monkeypatch):
    import csv

    from sizing.catalog.load import load_catalog

    csv_path = _catalog_copy(tmp_path)
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "cache"))
    before = load_catalog(base=csv_path, regions={"us-east-1"})
    with csv_path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows, names = list(reader), list(reader.fieldnames or [])
    first = next(r for r in rows if r["region"] == "us-east-1")
    first["price_usd_hour"] = str(float(first["price_usd_hour"]) * 2)
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    _age(csv_path, seconds=1800)  # a new time, set, not left to the clock
    after = load_catalog(base=csv_path, regions={"us-east-1"})
    # The compact form no longer matches the CSV's hash: the CSV itself was read and checked.
    was = {i.key: i.price_usd_hour for i in before}
    now = {i.key: i.price_usd_hour for i in after}
    key = (first["provider"].lower(), "us-east-1", first["instance_type"])
    assert now[key] == 2 * was[key]
    assert {k: v for k, v in now.items() if k != key} == {k: v for k, v in was.items() if k != key}


def test_the_cache_is_not_used_in_a_folder_others_may_write(tmp_path, monkeypatch):
    from sizing.catalog import cache

    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(shared))
    assert cache.cache_dir() is None
    cache.store("k", [1], "s")
    assert list(shared.iterdir()) == [] and cache.load("k", "s") is None
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(link))
    assert cache.cache_dir() is None
    monkeypatch.setenv("NGINX_SIZING_CACHE", "off")
    assert cache.cache_dir() is None


def test_a_cache_file_others_may_write_or_another_key_or_damage_is_ignored(tmp_path, monkeypatch):
    from sizing.catalog import cache

    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "c"))
    cache.store("key", ["value"], "s")
    assert cache.load("key", "s") == ["value"]
    (entry,) = (tmp_path / "c").iterdir()
    entry.chmod(0o666)
    assert cache.load("key", "s") is None
    entry.chmod(0o600)
    assert cache.load("another key", "s") is None
    good = entry.read_bytes()
    entry.write_bytes(b"\x00 not marshal data")
    assert cache.load("key", "s") is None
    entry.unlink()
    target = tmp_path / "elsewhere"
    target.write_bytes(good)  # a valid entry, reachable only through the link
    target.chmod(0o600)
    entry.symlink_to(target)  # a link in place of the file: never followed
    assert cache.load("key", "s") is None


def test_a_just_written_file_has_no_cache_key(tmp_path):
    """Racily clean: a file modified within RACY_NS could be rewritten with the same key."""
    from sizing.catalog import cache

    fresh = tmp_path / "fresh.csv"
    fresh.write_text("x")
    assert cache.stat_key(fresh) is None
    _age(fresh)
    assert cache.stat_key(fresh) is not None


def test_a_changed_catalog_replaces_its_cache_entry(tmp_path, monkeypatch):
    """One file per slot (catalog): a new key (the files changed) takes the old one's place."""
    from sizing.catalog import cache

    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "c"))
    cache.store("key at time 1", ["old"], "catalog.csv")
    cache.store("key at time 2", ["new"], "catalog.csv")
    assert len(list((tmp_path / "c").iterdir())) == 1
    assert cache.load("key at time 1", "catalog.csv") is None
    assert cache.load("key at time 2", "catalog.csv") == ["new"]


def test_a_damaged_cache_entry_still_gives_the_checked_rows(tmp_path, monkeypatch):
    import marshal

    from sizing.catalog.load import load_catalog

    csv_path = _catalog_copy(tmp_path)
    monkeypatch.setenv("NGINX_SIZING_CACHE", "off")
    plain = load_catalog(base=csv_path, regions={"us-east-1"})
    monkeypatch.setenv("NGINX_SIZING_CACHE", str(tmp_path / "c"))
    load_catalog(base=csv_path, regions={"us-east-1"})
    (entry,) = (tmp_path / "c").iterdir()
    key, _ = marshal.loads(entry.read_bytes())
    entry.write_bytes(marshal.dumps((key, (["aws/us-east-1"], [], {"aws/us-east-1": b"x"}))))
    entry.chmod(0o600)
    assert _rows(load_catalog(base=csv_path, regions={"us-east-1"})) == _rows(plain)
