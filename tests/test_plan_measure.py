"""What to measure next: value of information over the capacity's spread."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pytest

from sizing.analyses.plan_measure import DEFAULT_SEED, Draws, PlanInputs, plan_measurements
from sizing.catalog.load import Instance
from sizing.errors import InputError
from sizing.fleet.question import question
from sizing.model.capacity import Workload
from tests.conftest import sizing_cli

# family -> the CPU text its rows carry: one CPU platform each
# (`sizing.model.platforms.platform_of`)
CPU = {
    "a": "Intel Xeon Ice Lake",
    "b": "AMD EPYC Milan",
    "sure": "Intel Xeon Sapphire Rapids",
    "dear": "AMD EPYC Genoa",
}
# family -> the platform id plan-measurements groups its rows under
PLATFORM = {"a": "ice_lake", "b": "zen3", "sure": "sapphire_rapids", "dear": "zen4"}


def _inst(family: str, size: int, price: float) -> Instance:
    return Instance(
        provider="test",
        region="r",
        instance_type=f"{family}.{size}x",
        family=family,
        arch="x86_64",
        cpu=CPU[family],
        vcpus=size,
        memory_gib=size * 2.0,
        network_gbps=100.0,
        network_burst=False,
        price_usd_hour=price,
        source="test",
        source_date="2026-01-01",
    )


# family -> (RPS per vCPU, log-sd)
MODEL = {"a": (10_000.0, 0.3), "b": (9_000.0, 0.5), "sure": (9_500.0, 0.0), "dear": (10_000.0, 0.5)}


@dataclass
class _Capacity:
    """Only the contracted `sizing.model.capacity.Capacity` fields (the model may add others)."""

    capacity_rps: float
    cpu_sla_rps: float
    network_rps: float
    rel_sd: float
    binding_constraint: str = "cpu"
    basis: list[str] = field(default_factory=list)


def _capacity(inst: Instance, work: Workload) -> _Capacity:
    per_vcpu, sd = MODEL[inst.family]
    rps = per_vcpu * inst.vcpus
    return _Capacity(capacity_rps=rps, cpu_sla_rps=rps, network_rps=1e12, rel_sd=sd)


def _catalog() -> list[Instance]:
    out = []
    for fam, price in (("a", 0.10), ("b", 0.09), ("sure", 0.10), ("dear", 1.0)):
        out += [_inst(fam, n, price * n) for n in (2, 4, 8)]
    return out


def _plan(seed=DEFAULT_SEED, **rules):
    q = question(5e5, Workload(), **rules)
    return plan_measurements(q, _catalog(), Draws(seed=seed), PlanInputs(capacity=_capacity))


def test_no_uncertainty_no_value():
    by = {c.platform_id: c for c in _plan().candidates}
    assert by[PLATFORM["sure"]].value_usd_hour == 0.0
    assert by[PLATFORM["sure"]].rel_sd == 0.0


def test_a_platform_that_cannot_win_has_about_zero_value():
    by = {c.platform_id: c for c in _plan().candidates}
    dear = by[PLATFORM["dear"]]
    assert abs(dear.value_usd_hour) < 1e-9 and dear.p_best == 0.0
    assert by[PLATFORM["a"]].value_usd_hour > 0.5 and by[PLATFORM["b"]].value_usd_hour > 0.5


def test_ranking_is_stable_under_the_seed():
    first, again = _plan(seed=7), _plan(seed=7)
    assert [c.to_dict() for c in first.candidates] == [c.to_dict() for c in again.candidates]
    other = _plan(seed=8)
    ranks = [c.platform_id for c in first.candidates]
    assert ranks == [c.platform_id for c in other.candidates]
    assert ranks[-2:] in (
        [PLATFORM["dear"], PLATFORM["sure"]],
        [PLATFORM["sure"], PLATFORM["dear"]],
    )


def test_value_grows_with_the_spread():
    low = {c.platform_id: c for c in _plan().candidates}[PLATFORM["a"]].value_usd_hour
    MODEL["a"] = (10_000.0, 0.6)
    try:
        high = {c.platform_id: c for c in _plan().candidates}[PLATFORM["a"]].value_usd_hour
    finally:
        MODEL["a"] = (10_000.0, 0.3)
    assert high > low


def test_rows_are_grouped_by_their_cpu_platform():
    by = {c.platform_id: c for c in _plan().candidates}
    assert set(by) == set(PLATFORM.values())
    assert sorted(by[PLATFORM["a"]].instance_types) == sorted(f"test/a.{n}x" for n in (2, 4, 8))


def test_commands_name_the_cheapest_host_of_two_or_more_vcpus():
    plan = _plan()
    top = plan.candidates[0]
    assert top.measure_on.vcpus == 2
    assert top.command.startswith("python -m runners calibrate --server USER@HOST")
    assert top.measure_on.instance_type in top.command


def test_bad_arguments():
    with pytest.raises(InputError):
        _plan(confidence=1.5)
    with pytest.raises(InputError):
        question(-1)
    with pytest.raises(InputError):
        Draws(draws=10)


def test_cli_on_the_shipped_catalog():
    p = sizing_cli("plan-measurements", "--rps", "1e6", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["candidates"] and doc["seed"] == 20261121
    values = [c["value_usd_hour"] for c in doc["candidates"]]
    assert values == sorted(values, reverse=True)
    # "Cheapest now" is recommend's decision at the same confidence, its egress included
    # (burstable types left out as recommend leaves them out without --burstable).
    rec = json.loads(sizing_cli("recommend", "--rps", "1e6", "--format", "json").stdout)

    def total(o):
        return o["hourly_cost_at_confidence_usd"] + o["egress_monthly_usd"] / 730

    best = min(rec["options"], key=total)
    assert doc["cost_now_usd_hour"] == pytest.approx(total(best))
    assert doc["egress_now_usd_hour"] == pytest.approx(best["egress_monthly_usd"] / 730)
    assert doc["best_now"] == f"{best['provider']}/{best['instance_type']}"
    assert not any(o["burstable"] for o in rec["options"])
    table = sizing_cli("plan-measurements", "--rps", "1e6", "--provider", "gcp")
    assert table.returncode == 0 and "python -m runners calibrate" in table.stdout
    bad = sizing_cli("plan-measurements", "--rps", "-5")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_commands_prefer_a_host_sure_to_run_the_platform():
    """A cheaper family whose CPU text names several platforms (an e2-like VM that may land on
    any of them) is grouped under its newest, but is not where to measure that platform."""
    CPU["mixed"], MODEL["mixed"] = "Intel Xeon Ice Lake / Intel Xeon Cascade Lake", (9_000.0, 0.3)
    try:
        catalog = _catalog() + [_inst("mixed", n, 0.01 * n) for n in (2, 4)]
        plan = plan_measurements(question(5e5), catalog, inputs=PlanInputs(capacity=_capacity))
        ice = next(c for c in plan.candidates if c.platform_id == "ice_lake")
        assert any("mixed" in t for t in ice.instance_types)
        assert ice.measure_on.family == "a" and ice.measure_on.vcpus == 2
    finally:
        del CPU["mixed"], MODEL["mixed"]


def _brute_force(target, insts, caps, draws, sort="cost-at-confidence", residual_sd=0.05):
    """Values and P(best) with every type's cost curve drawn (no type left out), per platform."""
    import math
    from statistics import NormalDist

    import numpy as np

    from sizing.analyses import plan_measure as pm
    from sizing.fleet.counts import FleetRules

    z = np.random.default_rng(pm.DEFAULT_SEED).standard_normal(draws)
    costing = pm.Costing(target, FleetRules(), NormalDist().inv_cdf(1.0 - 0.95), sort)
    cpu, net, sd, peak = (
        np.array([getattr(c, f) for c in caps])
        for f in ("cpu_sla_rps", "network_rps", "rel_sd", "cpu_peak_rps")
    )
    price = np.array([i.price_usd_hour for i in insts])
    curves = pm.Curves(cpu, net, sd, price, peak=peak, insts=insts if sort == "carbon" else ())
    now = pm._fleet_cost(cpu, sd, curves, costing)
    pid = np.array([c.platform.platform_id for c in caps])
    out = {}
    for p in sorted(set(pid.tolist())):
        rows = curves.rows(np.flatnonzero(pid == p))
        mine = pm._cost_curves(rows, z, residual_sd, costing).min(axis=0)
        rest = now[pid != p].min() if (pid != p).any() else math.inf
        after = np.minimum(rest, mine)
        out[p] = (float((now.min() - after).mean()), float(np.mean(mine <= after)))
    return out


@pytest.mark.parametrize(
    ("target", "work", "sort"),
    [
        (1e6, Workload(), "cost-at-confidence"),
        (2e5, Workload(protocol="http"), "cost-at-confidence"),
        (3e7, Workload(), "cost-at-confidence"),
        (2e5, Workload(protocol="http"), "cost"),
        (1e6, Workload(), "carbon"),
    ],
)
def test_types_left_out_of_the_draws_change_nothing(target, work, sort):
    """Types whose cost at their best draw cannot beat the other platforms skip the Monte
    Carlo: values and P(best) equal a pass that draws every type."""
    from sizing.catalog.load import select_instances
    from sizing.model.capacity import instance_capacities

    insts = [i for i in select_instances() if not i.burstable]
    caps = instance_capacities(insts, work)
    plan = plan_measurements(
        question(target, work, sort=sort),
        insts,
        Draws(draws=300),
        PlanInputs(capacities=lambda i, w: caps),
    )
    want = _brute_force(target, insts, caps, 300, sort)
    got = {c.platform_id: (c.value_usd_hour, c.p_best) for c in plan.candidates}
    assert got == want
    assert any(v > 0 for v, _ in got.values())


@pytest.mark.parametrize(
    "fields",
    [
        {"providers": "gcp"},
        {"regions": "all", "providers": "aws", "protocol": "http"},
        {"profiles": ("amd-epyc-zen3-kvm-2vcpu-loopback.json",)},
    ],
    ids=["gcp", "aws-all-regions", "profile"],
)
def test_plan_for_prices_every_row_as_the_model_does(fields):
    """plan_for reuses the answer's capacities: the plan equals one from the model's own."""
    from sizing.analyses.plan_measure import fleet_egress, plan_for, screened
    from sizing.model.capacity import instance_capacities
    from sizing.paths import DATA_DIR
    from sizing.request import SizingRequest

    if "profiles" in fields:
        fields = {"profiles": tuple(str(DATA_DIR / "profiles" / f) for f in fields["profiles"])}
    request = SizingRequest(rps=1e6, **fields)
    answer, plan = plan_for(request, Draws(draws=300))
    rec = answer.recommendation
    insts = screened(rec.question, answer.instances)
    again = plan_measurements(
        rec.question,
        insts,
        Draws(draws=300),
        PlanInputs(
            capacities=lambda i, w: instance_capacities(i, w, rec.evidence, rec.profiles),
            egress=fleet_egress(request, rec),
        ),
    )
    assert plan.to_dict() == again.to_dict()


def _random_rules(rng):
    from sizing.fleet.counts import FleetRules

    zones = int(rng.integers(1, 7))
    return FleetRules(
        headroom=0.0,
        redundancy=int(rng.integers(0, 4)),
        zones=zones,
        zone_loss=int(rng.integers(0, zones)),
        spot_reserve=float(rng.choice([0.0, 0.1, 0.2, 0.37])),
        max_count=[None, 3, 40, 10**4][int(rng.integers(0, 4))],
        confidence=float(rng.choice([0.5, 0.9, 0.95])),
    )


def _random_usable(rng, target):
    odd = [0.0, -1.0, math.inf, math.nan, 1e-300, 1.0, target, target / 3, target / 7]
    exact = [target / k for k in rng.integers(1, 500, 6).tolist()]
    return np.array(odd + exact + (target / rng.uniform(0.5, 2000, 20)).tolist())


def test_vector_counts_equal_the_scalar_rule():
    """Every rule of the question (zones, zone loss, redundancy, spot reserve, max count), and
    spot spares by band, counted element-wise as the engine counts one type."""
    from sizing.fleet.counts import count_for, count_for_array
    from sizing.fleet.spot import count_with_spares_array, with_spares

    rng = np.random.default_rng(29)
    for _ in range(150):
        rules = _random_rules(rng)
        target = float(rng.choice([1.0, 1e6, 1e6 + 1, 7e6, 2.5e5]))
        usable = _random_usable(rng, target)
        want = [count_for(target, u, rules) for u in usable.tolist()]
        got = count_for_array(target, usable, rules)
        assert got.tolist() == [math.inf if n is None else n for n in want], rules
        rate = rng.choice([0.0, 0.05, 0.1, 0.15, 0.2, 0.3], len(usable))
        bare = replace(rules, spot_reserve=0.0)
        n0 = [count_for(target, u, bare) for u in usable.tolist()]
        band = [
            None if n is None else with_spares(n, r, rules) for n, r in zip(n0, rate, strict=True)
        ]
        got = count_with_spares_array(target, usable, rules, rate)
        assert got.tolist() == [math.inf if n is None else n for n in band], rules


def test_vector_cost_equals_the_engines_count_at_confidence():
    """`_fleet_cost` of a capacity is the engine's count at the confidence times the price."""
    from statistics import NormalDist

    from sizing.analyses import plan_measure as pm
    from sizing.fleet.counts import count_for

    rng = np.random.default_rng(11)
    for _ in range(60):
        rules = replace(_random_rules(rng), headroom=float(rng.choice([0.0, 0.2, 0.35])))
        cpu = rng.uniform(1e3, 1e6, 30)
        net, sd = rng.uniform(1e3, 2e6, 30), rng.uniform(0.0, 0.6, 30)
        z = NormalDist().inv_cdf(1.0 - rules.confidence)
        got = pm._fleet_cost(cpu, sd, pm.Curves(cpu, net, sd, 0.37), pm.Costing(1e6, rules, z))
        for k in range(30):
            usable = min(cpu[k] * math.exp(z * sd[k]), net[k]) * (1.0 - rules.headroom)
            n = count_for(1e6, usable, rules)
            assert got[k] == (math.inf if n is None else n * 0.37)


@pytest.mark.parametrize(
    "fields",
    [
        {"zones": 3, "zone_loss": 1},
        {"pricing": "spot", "spot_reserve": 0.2},
        {"pricing": "spot"},
        {"pricing": "3y", "providers": "gcp"},
    ],
    ids=["zones-3-loss-1", "spot-reserve", "spot-bands", "3y-gcp"],
)
def test_cheapest_now_is_recommends_decision(fields):
    """The plan asks the answer's question: its cheapest fleet now is the decision's."""
    from sizing.analyses.plan_measure import plan_for
    from sizing.request import SizingRequest

    answer, plan = plan_for(SizingRequest(rps=1e6, **fields), Draws(draws=100))
    best = answer.recommendation.options[0]
    inst = best.capacity.instance
    assert plan.best_now == f"{inst.provider}/{inst.instance_type}"
    assert answer.decision.startswith(f"Buy {best.count_at_confidence} x {inst.instance_type} ")
    total = best.hourly_cost_at_confidence_usd + best.egress_monthly_usd / 730
    assert plan.cost_now_usd_hour == pytest.approx(total, rel=1e-12)


def test_vector_cost_equals_the_engines_point_count():
    """Under ``--sort cost`` `_fleet_cost` is the engine's point count times the price."""
    from sizing.analyses import plan_measure as pm
    from sizing.fleet.counts import count_for

    rng = np.random.default_rng(13)
    for _ in range(40):
        rules = replace(_random_rules(rng), headroom=float(rng.choice([0.0, 0.2, 0.35])))
        cpu = rng.uniform(1e3, 1e6, 30)
        net, sd = rng.uniform(1e3, 2e6, 30), rng.uniform(0.0, 0.6, 30)
        costing = pm.Costing(1e6, rules, -1.6, "cost")
        got = pm._fleet_cost(cpu, sd, pm.Curves(cpu, net, sd, 0.37, 0.5), costing)
        for k in range(30):
            n = count_for(1e6, min(cpu[k], net[k]) * (1.0 - rules.headroom), rules)
            assert got[k] == (math.inf if n is None else n * 0.37 + 0.5)


@pytest.mark.parametrize("fields", [{}, {"zones": 3, "zone_loss": 1}], ids=["default", "zones"])
def test_sort_cost_ranks_by_the_point_count(fields):
    """Under ``--sort cost`` the cheapest fleet now is the decision's, counted at its point."""
    from sizing.analyses.plan_measure import plan_for, render
    from sizing.request import SizingRequest

    answer, plan = plan_for(SizingRequest(rps=1e6, sort="cost", **fields), Draws(draws=100))
    best = answer.recommendation.options[0]
    inst = best.capacity.instance
    assert plan.best_now == f"{inst.provider}/{inst.instance_type}" and plan.sort == "cost"
    assert answer.decision.startswith(f"Buy {best.count} x {inst.instance_type} ")
    total = best.hourly_cost_usd + best.egress_monthly_usd / 730
    assert plan.cost_now_usd_hour == pytest.approx(total, rel=1e-12)
    text = render(plan)
    assert "Cheapest fleet now at its point estimate (--sort cost)" in text
    assert "value = point cost now" in text and "at confidence" not in text


def test_sort_carbon_ranks_by_the_engines_carbon():
    """Under ``--sort carbon`` the least fleet now is the decision's, in gCO2e/h throughout."""
    from sizing.analyses.plan_measure import plan_for, render
    from sizing.request import SizingRequest

    answer, plan = plan_for(SizingRequest(rps=1e6, sort="carbon"), Draws(draws=200))
    best = answer.recommendation.options[0]
    inst = best.capacity.instance
    assert plan.best_now == f"{inst.provider}/{inst.instance_type}"
    assert plan.cost_now_usd_hour == pytest.approx(best.carbon().g_per_hour, rel=1e-12)
    doc = plan.to_dict()
    assert doc["sort"] == "carbon" and "carbon_now_gco2e_hour" in doc
    assert not any("usd" in k for k in [*doc, *doc["candidates"][0]])
    text = render(plan)
    assert "Lowest-carbon fleet now at its point estimate (--sort carbon)" in text
    assert "$" not in text.split("Measure next")[0]
