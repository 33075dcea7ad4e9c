"""Zones, failures, spot reserve, sorting at a confidence, mixed fleets and bounded counts."""

import importlib
import itertools
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizing.catalog.load import Instance, select_instances
from sizing.cli.main import main
from sizing.errors import Infeasible, InputError
from sizing.fleet import mix as fleet
from sizing.fleet.recommend import (
    DEFAULT_SPOT_RESERVE,
    FleetRules,
    count_for,
    per_zone,
    recommend,
    survivors,
)
from sizing.model.capacity import Workload, instance_capacity

ROOT = Path(__file__).resolve().parent.parent
CATALOG = select_instances()


def _inst(name, price, vcpus=2, cpu="AWS Graviton3", family="c7g", **kw):
    return Instance(
        "aws",
        "us-east-1",
        name,
        family,
        "arm64",
        cpu,
        vcpus,
        4.0,
        10.0,
        False,
        price,
        "test",
        "2026-01-01",
        **kw,
    )


# ----------------------------------------------------------------------------- zones, failures


@pytest.mark.parametrize("zones,zone_loss,redundancy", [(3, 1, 0), (3, 1, 1), (2, 1, 0), (4, 2, 1)])
def test_zone_loss_keeps_the_target_with_the_headroom(zones, zone_loss, redundancy):
    rec = recommend(1e6, CATALOG[:200], zones=zones, zone_loss=zone_loss, redundancy=redundancy)
    for o in rec.options[:30]:
        d = o.to_dict(rec.target_rps)
        spread = d["count_per_zone"]
        assert sum(spread) == o.count and len(spread) == zones and min(spread) >= 1
        assert max(spread) - min(spread) <= 1
        usable = o.capacity.capacity_rps * (1 - rec.headroom)
        left = sum(sorted(spread)[: zones - zone_loss]) - redundancy
        assert left * usable >= 1e6 * (1 - 1e-12)
        smaller = sorted(per_zone(o.count - 1, zones))[: zones - zone_loss]
        assert o.count == zones or (sum(smaller) - redundancy) * usable < 1e6


def _each(one):
    """`instance_capacities` made of a per-instance replacement for `instance_capacity`."""

    def many(insts, work, evidence=None, profiles=(), model=None):
        return [one(inst, work, evidence, profiles) for inst in insts]

    return many


def test_count_rules_match_a_linear_scan():
    for z, loss, k, r, m in itertools.product(
        [1, 2, 3, 5], [0, 1, 2], [0, 1, 3], [0.0, 0.2, 0.5], [1, 2, 7, 30]
    ):
        if loss >= z:
            continue
        rules = FleetRules(zones=z, zone_loss=loss, redundancy=k, spot_reserve=r)
        n = count_for(m * 10.0, 10.0, rules)
        assert n == next(c for c in range(z, 10_000) if survivors(c, rules) >= m)


def test_no_redundancy_is_said_plainly(capsys):
    assert main(["recommend", "--rps", "1e6", "--top", "3"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.index("Buy ") < out.index("Options, cheapest")
    assert "No redundancy" in out
    assert main(["recommend", "--rps", "1e6", "--zones", "3", "--zone-loss", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "No redundancy" not in out and "in 3 zones (" in out and "per zone" in out


def test_bad_zone_rules_are_refused(capsys):
    with pytest.raises(InputError, match="zone loss must be fewer than the 2 zone"):
        recommend(1e6, CATALOG, zones=2, zone_loss=2)
    with pytest.raises(SystemExit) as exc:
        main(["recommend", "--rps", "1e6", "--zones", "0"])
    assert exc.value.code == 2 and "must be 1 to 64" in capsys.readouterr().err
    assert main(["recommend", "--rps", "1e6", "--zones", "2", "--zone-loss", "2"]) == 2
    assert "zone loss must be fewer" in capsys.readouterr().err


# ----------------------------------------------------------------------------- pricing, spot


def test_spot_reserve_adds_instances_and_is_explicit(tmp_path, capsys):
    gcp = [i for i in CATALOG if i.provider == "gcp"][:60]
    plain = recommend(1e6, gcp, pricing="spot", spot_reserve=0.0, sort="cost")
    held = recommend(1e6, gcp, pricing="spot", sort="cost")
    assert held.rules.spot_reserve == DEFAULT_SPOT_RESERVE
    by = {o.capacity.instance.key: o for o in plain.options}
    for o in held.options:
        p = by[o.capacity.instance.key]
        assert o.count >= p.count
        assert math.floor(o.count * (1 - DEFAULT_SPOT_RESERVE) + 1e-9) >= p.count
        assert o.unit_price_usd_hour == o.capacity.instance.spot_usd_hour
    assert main(["recommend", "--rps", "1e6", "--pricing", "spot", "--top", "2", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "spot reserve 20%" in out and "may be reclaimed" in out


def test_aws_has_no_committed_price_but_a_user_catalog_may(tmp_path, capsys):
    aws = [i for i in CATALOG if i.provider == "aws"]
    with pytest.raises(Infeasible):
        recommend(1e6, aws, pricing="1y")
    assert recommend(1e6, aws, pricing="spot").options  # spot: the Spot Advisor feed
    mine = tmp_path / "quotes.csv"
    mine.write_text(
        "provider,region,instance_type,family,arch,cpu,vcpus,memory_gib,network_gbps,"
        "network_burst,price_usd_hour,source,source_date,spot_usd_hour,commit_1y_usd_hour\n"
        "aws,us-east-1,c7g.large,c7g,arm64,AWS Graviton3,2,4,0.937,true,0.0725,our quote,"
        "2026-11-01,0.03,0.05\n"
    )
    assert (
        main(
            [
                "recommend",
                "--rps",
                "1e5",
                "--catalog",
                str(mine),
                "--provider",
                "aws",
                "--pricing",
                "1y",
                "--format",
                "json",
            ]
        )
        == 0
    )
    import json

    doc = json.loads(capsys.readouterr().out)
    assert [o["instance_type"] for o in doc["options"]] == ["c7g.large"]
    assert doc["options"][0]["unit_price_usd_hour"] == 0.05 and doc["pricing"] == "1y"
    assert any("no 1y price" in e["reason"] for e in doc["excluded"])


# ----------------------------------------------------------------------------- sorting


def test_sort_at_confidence_prefers_the_surer_type(monkeypatch):
    sure = _inst("sure.large", 0.11, cpu="Sure CPU", family="sure")
    wild = _inst("wild.large", 0.10, cpu="Wild CPU", family="wild")
    real = instance_capacity

    def fake(inst, work, evidence=None, profiles=()):
        cap = real(inst, work, evidence, profiles)
        cap = replace(cap, capacity_rps=1e5, cpu_sla_rps=1e5, network_rps=1e9)
        cap.rel_sd = 0.05 if inst.family == "sure" else 0.5
        return cap

    module = importlib.import_module("sizing.fleet.engine")
    monkeypatch.setattr(module, "instance_capacities", _each(fake))
    monkeypatch.setattr(importlib.import_module("sizing.fleet.decision"), "instance_capacity", fake)
    by_cost = recommend(1e6, [sure, wild], sort="cost")
    at_conf = recommend(1e6, [sure, wild])
    assert by_cost.options[0].capacity.instance.instance_type == "wild.large"
    assert at_conf.options[0].capacity.instance.instance_type == "sure.large"
    assert at_conf.decision["instance_type"] == "sure.large"
    assert at_conf.decision["count"] == at_conf.options[0].count_at_confidence
    assert at_conf.decision["p_meets_target"] >= 0.95
    assert "the answer moves most with" in at_conf.decision["text"]


# ----------------------------------------------------------------------------- bounded work


@pytest.mark.parametrize("rps", ["1e28", "1e300", "1.7e308"])
def test_huge_targets_end_quickly_with_one_line(rps):
    res = subprocess.run(
        [sys.executable, "-m", "sizing", "recommend", "--rps", rps, "--max-count", "9"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert res.returncode == 1, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "no instance type meets" in res.stderr
    with pytest.raises(Infeasible, match="within 1,000,000 instances"):
        recommend(float(rps), CATALOG[:20])


def test_terminal_escapes_in_catalog_strings_are_not_printed_raw(tmp_path, capsys):
    mine = tmp_path / "evil.csv"
    mine.write_text(
        "provider,region,instance_type,family,arch,cpu,vcpus,memory_gib,network_gbps,"
        "network_burst,price_usd_hour,source,source_date\n"
        'evil,lab,"box\x1b[2J\x1b[31m\nFAKE LINE",box,x86_64,"Xeon\x07",8,32,10,false,0.001,'
        '"me\x1b]0;title\x07",2026\n'
    )
    assert main(["recommend", "--rps", "1e5", "--catalog", str(mine), "--provider", "evil"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\nFAKE LINE" not in out and "box\\x1b[2J" in out and "\\nFAKE LINE" in out
    assert main(["catalog", "--catalog", str(mine), "--provider", "evil"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\nFAKE LINE" not in out


# ----------------------------------------------------------------------------- mixed fleets


def _feasible(x, caps, target, rules, k):
    """Whether x[t, z] meets the rules the integer program states."""
    n_t, n_z = x.shape
    keep = 1 - rules.spot_reserve
    if any((x[:, z] > 0).sum() > k or x[:, z].sum() < 1 for z in range(n_z)):
        return False
    if n_z > 1 and any(
        sum(caps[t] * x[t, z] for t in range(n_t)) < target / (2 * n_z) for z in range(n_z)
    ):
        return False
    for lost in itertools.combinations(range(n_z), rules.zone_loss):
        left = [z for z in range(n_z) if z not in lost]
        total = keep * sum(caps[t] * x[t, z] for t in range(n_t) for z in left)
        largest = max((caps[t] for t in range(n_t) for z in left if x[t, z] > 0), default=0)
        if total - rules.redundancy * largest < target - 1e-9:
            return False
    return True


def _brute_force(types, caps, target, rules, k, upper):
    """Cheapest x[t, z] with every count <= upper, by enumeration."""
    n_t, n_z = len(types), rules.zones
    grid = np.array(list(itertools.product(range(upper + 1), repeat=n_t * n_z)))
    costs = grid @ np.repeat([t.price for t in types], n_z)
    # Every count vector, cheapest first: the first feasible one is the optimum.
    for i in np.argsort(costs, kind="stable"):
        if _feasible(grid[i].reshape(n_t, n_z), caps, target, rules, k):
            return float(costs[i])
    return math.inf


@pytest.mark.parametrize(
    "zones,zone_loss,redundancy,k,spot",
    [
        (1, 0, 0, 1, 0.0),
        (1, 0, 1, 2, 0.0),
        (2, 0, 0, 2, 0.0),
        (2, 1, 0, 1, 0.0),
        (2, 1, 1, 2, 0.0),
        (2, 0, 0, 1, 0.25),
    ],
)
def test_mixed_fleet_optimum_matches_brute_force(zones, zone_loss, redundancy, k, spot):
    rng = np.random.default_rng(zones * 100 + zone_loss * 10 + redundancy + k)
    upper = 6 if zones > 1 else 12
    for _ in range(2):
        caps = [float(c) for c in rng.uniform(40, 100, size=3).round(1)]
        types = [
            fleet.TypeSpec(f"t{i}", c, 1e9, 0.0, float(round(c * rng.uniform(0.8, 1.3) / 100, 4)))
            for i, c in enumerate(caps)
        ]
        target = float(rng.uniform(60, 120))
        rules = FleetRules(
            headroom=0.0, zones=zones, zone_loss=zone_loss, redundancy=redundancy, spot_reserve=spot
        )
        found = fleet.optimise(types, target, rules, k, None)
        truth = _brute_force(types, caps, target, rules, k, upper)
        assert found is not None and truth < math.inf
        x, cost, _ = found
        assert _feasible(x, caps, target, rules, k)
        assert x.max() <= upper  # so the enumeration covered it
        assert cost == pytest.approx(truth, abs=1e-9)


def _mc(counts, types, need, n=400_000, seed=1):
    rng = np.random.default_rng(seed)
    draws = {}
    total = np.zeros(n)
    for c, t in zip(counts, types, strict=True):
        z = draws.setdefault(t.platform, rng.standard_normal(n))
        total += c * t.capacity(z)
    return float(np.mean(total >= need))


@pytest.mark.parametrize("seed", range(6))
def test_fenton_wilkinson_against_monte_carlo(seed):
    rng = np.random.default_rng(seed)
    types = [
        fleet.TypeSpec(
            f"t{i}",
            float(rng.uniform(5e4, 3e5)),
            float(rng.uniform(1e5, 1e6)),
            float(rng.uniform(0.1, 0.45)),
            1.0,
            platform=f"p{i % 3}",
        )
        for i in range(5)
    ]
    counts = rng.integers(1, 8, size=5).astype(float)
    med = sum(c * t.median_rps for c, t in zip(counts, types, strict=True))
    for q in (0.6, 0.8, 0.95):
        need = med * q
        approx = fleet.p_capacity_at_least(counts, types, need)
        sim = _mc(counts, types, need)
        assert abs(approx - sim) < 0.03, (q, approx, sim)


def test_one_platform_probability_is_exact():
    types = [
        fleet.TypeSpec("a", 1e5, 9e4, 0.3, 1.0, platform="p"),
        fleet.TypeSpec("b", 3e5, 1e9, 0.3, 1.0, platform="p"),
    ]
    counts = np.array([3.0, 2.0])
    for need in (3e5, 5e5, 7e5):
        assert fleet.p_capacity_at_least(counts, types, need) == pytest.approx(
            _mc(counts, types, need), abs=0.005
        )


def test_mix_is_never_dearer_than_one_type_and_holds_at_the_confidence(capsys):
    rec = recommend(1e6, CATALOG, zones=3, mix=3)
    mix = rec.mix
    assert mix["status"] == "optimal"
    best = rec.options[0]
    assert mix["hourly_cost_usd"] <= best.hourly_cost_at_confidence_usd + 1e-9
    assert mix["p_meets_target"] >= rec.confidence
    assert all(len([t for t in mix["types"] if t["count_per_zone"][z]]) <= 3 for z in range(3))
    assert len(mix["count_per_zone"]) == 3 and min(mix["count_per_zone"]) >= 1
    assert "scipy" not in sys.modules or True  # the --mix path may import scipy
    doc = rec.to_dict(top=2)
    assert doc["mix"]["types"] and doc["decision"]["text"].startswith("Buy ")


def test_recommend_without_mix_does_not_import_scipy():
    code = (
        "import sys\n"
        "from sizing.fleet.recommend import recommend\n"
        "from sizing.catalog.load import select_instances\n"
        "recommend(1e6, select_instances(), zones=3, zone_loss=1)\n"
        "assert 'scipy' not in sys.modules\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr


def test_work_is_bounded_for_a_default_workload():
    rules = FleetRules(zones=3, zone_loss=1, redundancy=2)
    assert count_for(1e300, 1e-300, rules) is None
    assert count_for(1e6, 1.0, rules) == 1_500_003 or count_for(1e6, 1.0, rules) is None
    assert Workload().sla_p99_ms == 5.0


@pytest.mark.parametrize(
    "field,value", [("vcpus", "1e8"), ("vcpus", "1e300"), ("network_gbps", "1e-320")]
)
def test_absurd_catalog_numbers_are_one_line_exit_2(tmp_path, field, value):
    cols = "provider region instance_type family arch cpu vcpus memory_gib network_gbps".split()
    cols += "network_burst price_usd_hour source source_date".split()
    row = dict(
        zip(cols, "x,lab,b-1,b,x86_64,Xeon,8,32,10,false,0.5,me,2026".split(","), strict=True)
    )
    row[field] = value
    mine = tmp_path / "big.csv"
    mine.write_text(",".join(cols) + "\n" + ",".join(row[c] for c in cols) + "\n")
    res = subprocess.run(
        [sys.executable, "-m", "sizing", "recommend", "--rps", "1e6", "--catalog", str(mine)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"python -m sizing recommend: error: {mine}:2: field '{field}': expected "
        + res.stderr.split(": expected ", 1)[1].strip()
    ]


def test_burstable_types_are_marked_and_never_taken_at_their_burst():
    small = [i for i in CATALOG if i.instance_type in ("e2-micro", "t3.micro", "e2-highcpu-2")]
    assert {i.instance_type for i in small if i.burstable} == {"e2-micro", "t3.micro"}
    rec = recommend(2e3, small)
    assert {o.capacity.instance.instance_type for o in rec.options} == {"e2-highcpu-2"}
    reasons = {e["instance_type"]: e["reason"] for e in rec.excluded}
    assert reasons["e2-micro"].startswith("burstable CPU")
    rec = recommend(2e3, small, burstable=True, prune=False)
    got = {o.capacity.instance.instance_type: o.capacity for o in rec.options}
    reasons = {e["instance_type"]: e["reason"] for e in rec.excluded}
    assert "without a published sustained baseline" in reasons["t3.micro"]
    micro = got["e2-micro"]
    full = instance_capacity(micro.instance, Workload())
    assert micro.cpu_sla_rps == pytest.approx(full.cpu_sla_rps * 0.25)
    assert any("sustained baseline of 0.25" in b for b in micro.basis)


def test_no_price_under_the_pricing_model_is_said(capsys):
    assert main(["recommend", "--rps", "1e6", "--provider", "aws", "--pricing", "3y"]) == 1
    err = capsys.readouterr().err
    assert (
        "no candidate instance type has a 3y price" in err
        and "AWS on-demand and spot," in err
    )


def test_pruning_keeps_the_optimum_when_capacity_rests_on_the_platform(monkeypatch):
    real = instance_capacity

    def by_platform(inst, work, evidence=None, profiles=()):
        # capacity from what the design's model uses: platform, vCPUs, threads, bandwidth
        cap = real(inst, work, evidence, profiles)
        speed = (
            1.0 + (sum(map(ord, inst.cpu)) % 7) / 10 + (0.3 if inst.threads_per_core == 1 else 0)
        )
        cpu = 4e4 * inst.vcpus * speed
        net = inst.network_gbps * 1e9 / 8 / 1500
        return replace(cap, cpu_sla_rps=cpu, network_rps=net, capacity_rps=min(cpu, net))

    monkeypatch.setattr(
        importlib.import_module("sizing.fleet.engine"), "instance_capacities", _each(by_platform)
    )
    monkeypatch.setattr(
        importlib.import_module("sizing.fleet.decision"), "instance_capacity", by_platform
    )
    for sort in ("cost", "cost-at-confidence"):
        full = recommend(1e6, CATALOG, prune=False, sort=sort)
        pruned = recommend(1e6, CATALOG, sort=sort)
        assert len(pruned.options) < len(full.options) / 2
        key = "hourly_cost_usd" if sort == "cost" else "hourly_cost_at_confidence_usd"
        assert getattr(pruned.options[0], key) == pytest.approx(getattr(full.options[0], key))
        assert any(e["reason"].startswith("dominated by") for e in pruned.excluded)


# ----------------------------------------------------------------------------- counts, vectorised


_USABLE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-3, max_value=1e7),
    st.sampled_from([0.0, -0.0, -1.0, 1e-300, 5e-324, 1.0, 250_000.0, 1e6 / 3, 1e6 / 7]),
)


@settings(max_examples=300, deadline=None)
@given(
    target=st.one_of(
        st.floats(min_value=1e-6, max_value=1e12),
        st.sampled_from([1.0, 1e6, 1e6 + 1, 7e6, 2.5e5, 1e12]),
    ),
    usable=st.lists(_USABLE, min_size=1, max_size=30),
    multiples=st.lists(st.integers(1, 1_100_000), max_size=10),
)
def test_min_instances_array_agrees_with_min_instances(target, usable, multiples):
    """One rule, two forms: the vector count equals the scalar one on every element."""
    from sizing.fleet.counts import min_instances, min_instances_array

    # exact divisors of the target and their float neighbours: where the division rounds
    usable = (
        usable
        + [target / k for k in multiples]
        + [math.nextafter(target / k, 0) for k in multiples]
    )
    got = min_instances_array(target, np.array(usable)).tolist()
    want = [min_instances(target, u) for u in usable]
    assert got == [math.inf if w is None else float(w) for w in want]


def test_min_instances_array_keeps_the_shape_and_marks_no_fleet_as_inf():
    """Up to `MAX_FLEET` instances counted; beyond it, or at no capacity, no fleet (inf)."""
    from sizing.fleet.counts import MAX_FLEET, min_instances_array

    got = min_instances_array(1e6, np.array([[1e6 / 3, 0.0], [1.0, 1e6 / MAX_FLEET / 2]]))
    assert got.shape == (2, 2)
    assert got.tolist() == [[3.0, math.inf], [1e6, math.inf]]


def test_pruning_compares_the_rates_the_request_uses():
    """With --network burst a type that bursts higher is not dominated by a cheaper one."""
    from sizing.fleet.recommend import prune_dominated
    from sizing.workload.value import Workload

    steady = replace(_inst("steady", 0.10), network_gbps=10.0, network_burst_gbps=10.0)
    bursty = replace(_inst("bursty", 0.12), network_gbps=5.0, network_burst_gbps=25.0)
    kept, dropped = prune_dominated([steady, bursty])
    assert [i.instance_type for i in kept] == ["steady"]
    assert dropped[0]["instance_type"] == "bursty"
    kept, dropped = prune_dominated([steady, bursty], work=Workload(burst_network=True))
    assert sorted(i.instance_type for i in kept) == ["bursty", "steady"] and not dropped
