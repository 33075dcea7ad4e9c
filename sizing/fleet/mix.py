"""Mixed fleets: the cheapest fleet of up to K instance types per zone, as an integer program.

Variables, for candidate type ``t`` and zone ``z``: ``x[t, z]`` instances (integer) and
``y[t, z]`` (binary, the type is used in the zone); ``m[S]`` (continuous) is the capacity of
the largest instance left after losing the zone set ``S``. Minimise ``sum price_t x[t, z]``
subject to

- ``x[t, z] <= U_t y[t, z]`` and ``sum_t y[t, z] <= K`` in every zone;
- ``sum_t x[t, z] >= 1`` in every zone (the fleet is spread over every zone),  and every
  zone carries at least half its share of the target, ``sum_t c_t x[t, z] >= target / (2
  zones)`` (an even spread of one type always does);
- for every set ``S`` of ``zone_loss`` zones: ``(1 - r) sum_{z not in S} c_t x[t, z] -
  redundancy * m[S] >= target``, with ``m[S] >= c_t y[t, z]`` for ``z`` not in ``S``:
  after losing the zones of ``S``, a spot fraction ``r`` of the capacity and ``redundancy``
  instances of the largest type left, the rest carries the target. (Losing ``redundancy``
  instances of the largest type is exact when that type has that many instances left, and
  conservative otherwise.)

``c_t`` is a type's usable capacity: its capacity under the SLA times ``1 - headroom``, at
the point estimate (``--sort cost``) or, at a confidence ``p`` (default), such that the
fleet's capacity holds with probability ``p``.

Confidence. One instance of type ``t`` carries ``min(cpu_t exp(sd_t Z), net_t)``: a
log-normal CPU capacity (the model's spread) under a known network cap. ``Z`` is one draw per
CPU platform: types on the same platform rest on the same speed estimate, so their errors
move together; platforms are taken as independent. For one platform the probability that the
fleet carries the target is exact (the capacity is monotone in ``Z``). For several, each
platform's sum has its mean and variance computed by Gauss-Hermite quadrature, and the sum
over platforms (a sum of independent, roughly log-normal terms) is approximated by one
log-normal with the same mean and variance (Fenton-Wilkinson: ``s^2 = ln(1 + var/mean^2)``,
``mu = ln(mean) - s^2/2``). A test checks it against Monte Carlo simulation.

The program is solved first with every type at its own ``1 - p`` quantile (conservative:
independent errors partly cancel), then with the quantiles relaxed towards the median by
bisection, keeping the cheapest solution whose probability still reaches ``p``.

A mix is in one provider and region; places are compared on the total bill, the compute
plus the place's egress (the same traffic priced in each), and so is the mix against the best
single type (``total_monthly_usd``, ``single_type_total_monthly_usd``).

scipy (``scipy.optimize.milp``, HiGHS) is imported here only: the ``--mix`` path.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any

import numpy as np

from sizing.errors import InputError
from sizing.fleet.counts import HOURS_PER_MONTH, FleetRules, Option, Recommendation, per_zone

#: Candidate types per (provider, region) handed to the integer program.
MAX_CANDIDATES = 10
#: (provider, region) groups solved (those of the cheapest single-type options).
MAX_GROUPS = 2
MAX_LOSS_SCENARIOS = 64
BISECTION_STEPS = 3
#: Branch-and-bound nodes per solve: the solver stops at a count, not at a time, so the same
#: request gets the same mix on a busy machine as on a quiet one (a solve stopped there keeps
#: the best fleet found, within a gap of about 0.5% of the bound on the shipped catalog).
NODE_LIMIT = 1_000
#: A guard against a hang only: far above what NODE_LIMIT nodes take on a busy machine.
TIME_LIMIT_S = 300.0


@dataclass(frozen=True)
class TypeSpec:
    """One candidate type: CPU capacity at the median, network cap, spread, price, platform.

    One instance carries ``min(cpu_rps * exp(sd * Z), net_rps)`` under the SLA, ``Z``
    standard normal and shared by every type of the same ``platform``.
    """

    name: str
    cpu_rps: float
    net_rps: float
    sd: float
    price: float
    option: Any = None
    platform: str = ""

    def capacity(self, z: float | np.ndarray) -> Any:
        """Capacity of one instance at the standard-normal value ``z`` [1/s]."""
        return np.minimum(self.cpu_rps * np.exp(self.sd * np.asarray(z, dtype=float)), self.net_rps)

    @property
    def median_rps(self) -> float:
        """Capacity at the median [1/s]."""
        return min(self.cpu_rps, self.net_rps)


_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(48)
_GH_W = _GH_W / _GH_W.sum()


def fw_lognormal(means: np.ndarray, variances: np.ndarray) -> tuple[float, float]:
    """Fenton-Wilkinson: (mu, s) of the log-normal with the sum's mean and variance."""
    mean, var = float(np.sum(means)), float(np.sum(variances))
    if mean <= 0:
        return -math.inf, 0.0
    s2 = math.log1p(var / mean**2)
    return math.log(mean) - s2 / 2, math.sqrt(s2)


def p_sum_at_least(means: np.ndarray, variances: np.ndarray, need: float) -> float:
    """P(sum of independent positive terms >= ``need``), Fenton-Wilkinson approximation."""
    mu, s = fw_lognormal(means, variances)
    if mu == -math.inf:
        return 0.0
    if s <= 0:
        return 1.0 if math.exp(mu) >= need else 0.0
    return 1.0 - NormalDist().cdf((math.log(need) - mu) / s)


def _group_capacity(counts: np.ndarray, types: list[TypeSpec], z: np.ndarray) -> np.ndarray:
    total = np.zeros_like(z, dtype=float)
    for n, t in zip(counts, types, strict=True):
        if n > 0:
            total = total + float(n) * t.capacity(z)
    return total


def p_capacity_at_least(counts: np.ndarray, types: list[TypeSpec], need: float) -> float:
    """P(the fleet's capacity >= ``need``): types of one platform share their draw.

    One platform: exact (the capacity is monotone in the shared draw; bisection on it).
    Several: each platform's mean and variance by Gauss-Hermite quadrature (network caps
    included), then Fenton-Wilkinson across the independent platforms.
    """
    if need <= 0:
        return 1.0
    groups: dict[str, list[int]] = {}
    for i, (n, t) in enumerate(zip(counts, types, strict=True)):
        if n > 0:
            groups.setdefault(t.platform or t.name, []).append(i)
    if not groups:
        return 0.0
    if len(groups) == 1:
        idx = next(iter(groups.values()))
        cnt, tps = counts[idx], [types[i] for i in idx]

        def g(z: float) -> float:
            return float(_group_capacity(cnt, tps, np.array([z]))[0])

        lo, hi = -12.0, 12.0
        if g(hi) < need:
            return 0.0
        if g(lo) >= need:
            return 1.0
        for _ in range(60):  # bounded bisection on the shared draw
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if g(mid) >= need else (mid, hi)
        return 1.0 - NormalDist().cdf(hi)
    means, variances = [], []
    for idx in groups.values():
        vals = _group_capacity(counts[idx], [types[i] for i in idx], _GH_X)
        m = float(np.sum(_GH_W * vals))
        means.append(m)
        variances.append(max(float(np.sum(_GH_W * vals**2)) - m**2, 0.0))
    return p_sum_at_least(np.array(means), np.array(variances), need)


def _loss_sets(zones: int, loss: int) -> list[tuple[int, ...]]:
    """Every set of ``loss`` zones out of ``zones`` (refused above `MAX_LOSS_SCENARIOS`)."""
    if math.comb(zones, loss) > MAX_LOSS_SCENARIOS:
        raise InputError(
            f"--mix with {zones} zones and a loss of {loss} has {math.comb(zones, loss):,} "
            f"loss scenarios; at most {MAX_LOSS_SCENARIOS} are solved"
        )
    return list(itertools.combinations(range(zones), loss)) or [()]


@dataclass(frozen=True)
class _Layout:
    """Where each variable of the program sits: ``x`` (types x zones), ``y`` alike, then ``m``."""

    n_t: int
    n_z: int
    n_m: int

    @property
    def n_x(self) -> int:
        """Number of ``x`` (and of ``y``) variables."""
        return self.n_t * self.n_z

    @property
    def n_var(self) -> int:
        """Number of variables in all."""
        return 2 * self.n_x + self.n_m

    def xi(self, t: int, z: int) -> int:
        """Index of ``x[t, z]``."""
        return t * self.n_z + z

    def yi(self, t: int, z: int) -> int:
        """Index of ``y[t, z]``."""
        return self.n_x + t * self.n_z + z

    def row(self) -> np.ndarray:
        """An empty constraint row."""
        return np.zeros(self.n_var)


@dataclass
class _Constraints:
    """Constraint rows with their bounds, in the order they are added."""

    rows: list[np.ndarray]
    lo: list[float]
    hi: list[float]

    def add(self, row: np.ndarray, low: float, high: float) -> None:
        """Append ``low <= row @ v <= high``."""
        self.rows.append(row)
        self.lo.append(low)
        self.hi.append(high)


def _objective(types: list[TypeSpec], lay: _Layout) -> np.ndarray:
    """Hourly price of each ``x`` variable (0 for the others) [USD/h]."""
    cost = np.zeros(lay.n_var)
    for t, spec in enumerate(types):
        for z in range(lay.n_z):
            # A tie-break far below a cent (earlier zones, earlier types first): fleets of one
            # cost are told apart, so the same request gets the same answer.
            cost[lay.xi(t, z)] = spec.price * (1.0 + 1e-7 * (t * lay.n_z + z + 1))
    return cost


def _upper_counts(capacity: list[float], target: float, rules: FleetRules) -> list[int]:
    """Per type, an upper bound on its instances in one zone."""
    keep = 1.0 - rules.spot_reserve
    cmax = max(capacity)
    return [
        min(math.ceil(target / (keep * c)) + rules.redundancy * math.ceil(cmax / c) + 1, 10**6)
        for c in capacity
    ]


def _zone_constraints(
    lay: _Layout,
    capacity: list[float],
    upper: list[int],
    bounds: tuple[float, int],
    out: _Constraints,
) -> None:
    """Links ``x`` to ``y``, then per zone: at most K types, one instance, balance, order.

    ``bounds`` is (target [1/s], K the most types per zone).
    """
    target, max_types = bounds
    n_t, n_z = lay.n_t, lay.n_z
    for t in range(n_t):
        for z in range(n_z):
            r = lay.row()
            r[lay.xi(t, z)], r[lay.yi(t, z)] = 1.0, -float(upper[t])
            out.add(r, -np.inf, 0.0)
    for z in range(n_z):
        r = lay.row()
        for t in range(n_t):
            r[lay.yi(t, z)] = 1.0
        out.add(r, -np.inf, float(max_types))
        r = lay.row()
        for t in range(n_t):
            r[lay.xi(t, z)] = 1.0
        out.add(r, 1.0, np.inf)
        if n_z > 1:  # balanced: every zone carries at least half its share of the target
            r = lay.row()
            for t in range(n_t):
                r[lay.xi(t, z)] = capacity[t]
            out.add(r, target / (2 * n_z), np.inf)
        if z + 1 < n_z:  # zones are interchangeable: order them by size (symmetry breaking)
            r = lay.row()
            for t in range(n_t):
                r[lay.xi(t, z)], r[lay.xi(t, z + 1)] = 1.0, -1.0
            out.add(r, 0.0, np.inf)


def _loss_constraints(
    lay: _Layout,
    capacity: list[float],
    target: float,
    rules: FleetRules,
    out: _Constraints,
) -> None:
    """Per loss scenario: what outlives the lost zones, spot and redundancy carries the target."""
    keep = 1.0 - rules.spot_reserve
    for s, lost in enumerate(_loss_sets(lay.n_z, rules.zone_loss)):
        r = lay.row()
        for t in range(lay.n_t):
            for z in range(lay.n_z):
                if z not in lost:
                    r[lay.xi(t, z)] = keep * capacity[t]
        if lay.n_m:
            m = 2 * lay.n_x + s
            r[m] = -float(rules.redundancy)
            for t in range(lay.n_t):
                for z in range(lay.n_z):
                    if z not in lost:
                        rm = lay.row()
                        rm[m], rm[lay.yi(t, z)] = 1.0, -capacity[t]
                        out.add(rm, 0.0, np.inf)
        out.add(r, target, np.inf)


def solve_mix(
    types: list[TypeSpec],
    capacity: list[float],
    target: float,
    rules: FleetRules,
    max_types: int,
) -> np.ndarray | None:
    """The optimal ``x[t, z]`` (types x zones) for usable capacities ``capacity``, or None.

    ``capacity[t]`` is what one instance of type ``t`` may carry (headroom already taken off).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    loss = _loss_sets(rules.zones, rules.zone_loss)
    lay = _Layout(len(types), rules.zones, len(loss) if rules.redundancy > 0 else 0)
    upper = _upper_counts(capacity, target, rules)
    out = _Constraints([], [], [])
    _zone_constraints(lay, capacity, upper, (target, max_types), out)
    _loss_constraints(lay, capacity, target, rules, out)
    integrality = np.concatenate([np.ones(2 * lay.n_x), np.zeros(lay.n_m)])
    ub = np.concatenate(
        [
            np.repeat(np.array(upper, dtype=float), lay.n_z),
            np.ones(lay.n_x),
            np.full(lay.n_m, max(capacity)),
        ]
    )
    with solver_output_discarded():
        res = milp(
            _objective(types, lay),
            constraints=LinearConstraint(np.array(out.rows), np.array(out.lo), np.array(out.hi)),
            integrality=integrality,
            bounds=Bounds(np.zeros(lay.n_var), ub),
            options={"node_limit": NODE_LIMIT, "time_limit": TIME_LIMIT_S, "mip_rel_gap": 1e-9},
        )
    if res.x is None or res.status not in (0, 1):
        return None
    x = np.asarray(res.x[: lay.n_x], dtype=np.float64)  # scipy's result is untyped
    return np.rint(x).astype(int).reshape(lay.n_t, lay.n_z)


def _flush_c_stdio() -> None:
    """Flush the C library's stdio buffers (what a C extension printed and has not written)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def solver_output_discarded() -> Iterator[None]:
    """Send what C code writes to file descriptor 1 to /dev/null while the block runs.

    HiGHS (inside ``scipy.optimize.milp``) prints debugging lines to the process's stdout at
    the C level, where ``disp=False`` does not reach; they would land in the middle of
    ``--format json`` or ``csv`` output. Python's own output is flushed before and kept; the
    descriptor is restored afterwards whatever happens.
    """
    for stream in (sys.stdout, sys.__stdout__):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            if stream is not None:
                stream.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 at all: nothing to protect
        yield
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
        finally:
            os.close(devnull)
        try:
            yield
        finally:
            _flush_c_stdio()
            os.dup2(saved, 1)
    finally:
        os.close(saved)


def survivors_after_losses(
    x: np.ndarray, capacity: list[float], rules: FleetRules
) -> list[np.ndarray]:
    """Per loss scenario, the instances of each type left after the rules' losses.

    The spot reserve is applied by the caller as a capacity fraction.
    """
    out = []
    order = sorted(range(len(capacity)), key=lambda t: -capacity[t])
    for lost in _loss_sets(rules.zones, rules.zone_loss):
        left = np.array(
            [sum(x[t, z] for z in range(rules.zones) if z not in lost) for t in range(len(x))],
            dtype=float,
        )
        k = rules.redundancy
        present = [t for t in order if left[t] > 0]
        if k and present:
            left[present[0]] = max(0.0, left[present[0]] - k)  # K of the largest type left
        out.append(left)
    return out


def plan_probability(x: np.ndarray, types: list[TypeSpec], rules: FleetRules, need: float) -> float:
    """P(meet) of a plan: the worst loss scenario's probability that the rest carry ``need``."""
    med = [t.median_rps for t in types]
    keep = 1.0 - rules.spot_reserve
    return min(
        p_capacity_at_least(left, types, need / keep)
        for left in survivors_after_losses(x, med, rules)
    )


def optimise(
    types: list[TypeSpec],
    target: float,
    rules: FleetRules,
    max_types: int,
    confidence: float | None,
) -> tuple[np.ndarray, float, str] | None:
    """Cheapest plan: at the point estimate (``confidence`` None) or at a confidence.

    Returns the plan, its hourly cost, and how it was found.
    """
    h = 1.0 - rules.headroom
    med = [t.median_rps * h for t in types]
    if confidence is None:
        x = solve_mix(types, med, target, rules, max_types)
        if x is None:
            return None
        return x, _cost(x, types), "integer program at the point estimate"
    z = NormalDist().inv_cdf(confidence)

    def caps(alpha: float) -> list[float]:
        return [float(t.capacity(-alpha * z)) * h for t in types]

    def ok(x: np.ndarray) -> bool:
        return plan_probability(x, types, rules, target / h) >= confidence - 1e-9

    x = solve_mix(types, caps(1.0), target, rules, max_types)
    if x is None:
        return None
    best, lo, hi, solves = x, 0.0, 1.0, 1
    for _ in range(BISECTION_STEPS):  # smallest alpha whose optimum still holds at p
        mid = (lo + hi) / 2
        cand = solve_mix(types, caps(mid), target, rules, max_types)
        solves += 1
        if cand is not None and ok(cand):
            hi = mid
            if _cost(cand, types) < _cost(best, types) - 1e-12:
                best = cand
        else:
            lo = mid
    how = (
        f"integer program, {solves} solves: quantiles relaxed towards the median while the "
        f"Fenton-Wilkinson P(capacity with headroom >= target) stays >= {confidence:.0%}"
    )
    return best, _cost(best, types), how


def _cost(x: np.ndarray, types: list[TypeSpec]) -> float:
    return float(sum(x[t].sum() * spec.price for t, spec in enumerate(types)))


def candidates(
    options: list[Option], at_confidence: bool, banded: bool = False
) -> list[list[Option]]:
    """Per (provider, region), the most cost-efficient options, cheapest groups first.

    ``banded``: where a place has options whose spot spares follow their interruption band
    (`Option.spot`), only those (a place without any keeps the flat reserve's options).
    """
    groups: dict[tuple[str, str], list[Option]] = {}
    for o in options:
        inst = o.capacity.instance
        groups.setdefault((inst.provider, inst.region), []).append(o)
    if banded:
        groups = {k: [o for o in g if o.spot] or g for k, g in groups.items()}

    def per_dollar(o: Option) -> float:
        cap = o.capacity
        c = cap.quantile(1.0 - o.confidence) if at_confidence else cap.capacity_rps
        return -c / o.unit_price_usd_hour

    out = []
    for opts in groups.values():
        by_eff = sorted(opts, key=per_dollar)[: MAX_CANDIDATES * 2 // 3]
        by_cost = opts[: MAX_CANDIDATES - len(by_eff)]  # already in the recommendation's order
        seen: dict[int, Option] = {id(o): o for o in [*by_eff, *by_cost]}
        out.append(list(seen.values()))
    # Places are ranked on the whole bill: compute plus the place's egress.
    out.sort(
        key=lambda g: (
            g[0].egress_monthly_usd / HOURS_PER_MONTH
            + min(
                o.hourly_cost_at_confidence_usd if at_confidence else o.hourly_cost_usd for o in g
            )
        )
    )
    return out[:MAX_GROUPS]


def band_spares(
    x: np.ndarray, spots: list[dict[str, Any] | None], confidence: float
) -> tuple[np.ndarray, list[int], str]:
    """The plan ``x`` (types x zones) with each banded type's spot spares, and what they hold.

    As for one type (`sizing.fleet.spot`): type ``t``'s ``x[t].sum()`` instances, the count the
    rules need, keep running while no more than its spares are interrupted, each instance with
    its band's monthly share ``rates[t]`` (binomial). With ``k`` banded types in use, each
    type's spares hold at ``confidence ** (1 / k)``, so that every type keeps its count at
    ``confidence`` (interruptions taken as independent across types). A type's spares go to
    the zones it runs in, spread evenly, fullest zones first. ``spots[t]``: type ``t``'s
    option's spot fields (`sizing.fleet.spot.spot_fields`), None without a band.
    """
    from sizing.catalog.spot import spares_for

    rates = [None if s is None else s["interruption_rate"] for s in spots]
    used = [t for t, r in enumerate(rates) if r is not None and x[t].sum() > 0]
    each = confidence ** (1.0 / len(used)) if used else confidence
    out, spares = x.copy(), [0] * len(rates)
    for t in used:
        rate = rates[t]
        assert rate is not None
        spares[t] = spares_for(int(x[t].sum()), rate, each)
        zones = sorted((z for z in range(x.shape[1]) if x[t, z] > 0), key=lambda z: -x[t, z])
        for z, extra in zip(zones, per_zone(spares[t], len(zones)), strict=True):
            out[t, z] += extra
    basis = (
        f"each spot type's count holds the spares a binomial over its interruption band calls "
        f"for ({sum(spares)} in all), so that every type keeps the count the program needs "
        f"running with {confidence:.0%} confidence ({each:.2%} each over {len(used)} "
        "type(s), interruptions independent; each type's share as its option's spot says: "
        "its AWS Spot Instance Advisor band, an estimate for GCP and Azure)"
    )
    labels = {str((spots[t] or {}).get("interruption_band")) for t in used}
    guessed = sorted(b for b in labels if b.startswith("estimate:"))
    if guessed:
        basis += f"; {' and '.join(guessed)} a month for types with no published figure"
    return out, spares, basis


def _type_rows(
    x: np.ndarray, types: list[TypeSpec], bands: list[tuple[Any, int]] | None
) -> list[dict[str, Any]]:
    """The plan's row per type in use; ``bands``: each type's (band, spares) or None."""
    rows = []
    for t in [t for t in range(len(types)) if x[t].sum() > 0]:
        o = types[t].option
        inst = o.capacity.instance
        rows.append(
            {
                "instance_type": inst.instance_type,
                "provider": inst.provider,
                "region": inst.region,
                "count": int(x[t].sum()),
                "count_per_zone": [int(v) for v in x[t]],
                "capacity_rps_per_instance": o.capacity.capacity_rps,
                "capacity_sd_log": o.capacity.rel_sd,
                "unit_price_usd_hour": types[t].price,
                "hourly_cost_usd": float(x[t].sum() * types[t].price),
            }
        )
        if bands is not None:
            rows[-1]["spot"] = {
                "interruption_band": bands[t][0],
                "interruption_rate": o.spot["interruption_rate"],
                "spares": bands[t][1],
            }
    return rows


def _single_type(best: Option, at_conf: bool) -> dict[str, float]:
    """The best single type's hourly cost and total bill, as the mix is compared [USD]."""
    hourly = best.hourly_cost_at_confidence_usd if at_conf else best.hourly_cost_usd
    return {
        "single_type_hourly_cost_usd": hourly,
        "single_type_total_monthly_usd": hourly * HOURS_PER_MONTH + best.egress_monthly_usd,
    }


def best_mix(rec: Recommendation, max_types: int) -> dict[str, Any]:
    """The cheapest fleet of up to ``max_types`` types per zone (see the module docstring)."""
    at_conf = rec.sort == "cost-at-confidence"
    question = rec.question
    banded = question is not None and question.band_spares
    best: tuple[float, dict[str, Any]] | None = None
    for group in candidates(rec.options, at_conf, banded):
        # With spares by band, the program counts without a reserve; the spares come after.
        spot = banded and bool(group[0].spot)
        rules = replace(rec.rules, spot_reserve=0.0) if spot else rec.rules
        types = [
            TypeSpec(
                o.capacity.instance.instance_type,
                o.capacity.cpu_sla_rps,
                o.capacity.network_rps,
                o.capacity.rel_sd,
                o.unit_price_usd_hour,
                o,
                o.capacity.instance.cpu,
            )
            for o in group
        ]
        h = 1.0 - rules.headroom
        # One place, one traffic: the group's egress is every option's in it [USD/h].
        egress_hourly = group[0].egress_monthly_usd / HOURS_PER_MONTH
        bound = egress_hourly + rec.target_rps / max(
            t.median_rps * h / t.price for t in types
        )  # no fleet of these types costs less (continuous relaxation at the median)
        if best is not None and bound >= best[0]:
            continue
        found = optimise(
            types, rec.target_rps, rules, max_types, rec.confidence if at_conf else None
        )
        if found is None:
            continue
        x, cost, how = found
        plan, bands = x, [(o.spot or {}).get("interruption_band") for o in group]
        spares: list[int] = []
        if spot:
            x, spares, held = band_spares(plan, [o.spot for o in group], rec.confidence)
            cost = _cost(x, types)
        # Zones are interchangeable: one order of them (fullest first, type by type), so
        # solutions equal but for the zones' names read the same.
        x = x[:, sorted(range(x.shape[1]), key=lambda z: tuple(-int(v) for v in x[:, z]))]
        rows = _type_rows(x, types, list(zip(bands, spares, strict=True)) if spot else None)
        # With spares, the probability is the program's fleet's: the spares stand in for
        # the interrupted instances.
        p = plan_probability(plan, types, rules, rec.target_rps)
        doc = {
            "status": "optimal",
            "max_types": max_types,
            "zones": rules.zones,
            "pricing": rules.pricing,
            "types": rows,
            "count": int(x.sum()),
            "count_per_zone": [int(v) for v in x.sum(axis=0)],
            "hourly_cost_usd": cost,
            "monthly_cost_usd": cost * HOURS_PER_MONTH,
            "egress_monthly_usd": (group[0].egress or {}).get("usd_month"),
            "total_monthly_usd": (cost + egress_hourly) * HOURS_PER_MONTH,
            "p_meets_target": p,
            "at_confidence": at_conf,
            "confidence": rec.confidence,
            "candidates": len(types),
            **_single_type(rec.options[0], at_conf),
            "method": how + f" over the {len(types)} most cost-efficient types of "
            f"{rows[0]['provider']}/{rows[0]['region']} (scipy.optimize.milp, HiGHS); "
            "P(meet): over the worst loss, types of one CPU platform share their error, "
            "platforms are independent (Fenton-Wilkinson)",
        }
        if spot:
            doc["spot"] = {"spares": sum(spares), "basis": held}
        if best is None or cost + egress_hourly < best[0]:
            best = (cost + egress_hourly, doc)
    if best is None:
        return {
            "status": "infeasible",
            "max_types": max_types,
            "zones": rec.rules.zones,
            "message": "no mix of the candidate types meets the rules",
        }
    _ = per_zone
    return best[1]
