"""Spot spares from each type's interruption band, in place of a flat reserve.

For an AWS type the Spot Advisor lists in its region, and for every GCP and Azure type
(`sizing.catalog.spot.spot_risk`), the fleet is the count the rules need without a spot
reserve (``n0``: headroom, zones, redundancy) plus the spares a binomial over the type's
monthly interruption share calls for, so that at least ``n0`` instances keep running with the
request's confidence (`sizing.catalog.spot.spares_for`; AWS: the band's upper share, 30% for
the open top band; GCP and Azure publish none: an estimate, 30%). AWS types the feed does not
list keep the flat reserve.

Used when the request prices spot and gives no ``--spot-reserve`` of its own: the engine
(`sizing.fleet.engine.answer`) asks `band_counts` for every option row's counts before it
ranks them, over either table (the rows, or the catalog's columns), and `apply_band` for
each option it makes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sizing.catalog.spot import Risk, spares_array, spares_for, spot_risk
from sizing.fleet.counts import FleetRules, Option, count_for_array, p_meet

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

    from sizing.fleet.question import FleetQuestion
    from sizing.model.capacity import Capacity


def with_spares(count: int, rate: float, rules: FleetRules) -> int | None:
    """``count`` plus the spares its band calls for (None: above the rules' limit) [instances].

    Parameters
    ----------
    count : int
        The count the rules need without a spot reserve [instances].
    rate : float
        The band's share interrupted a month (`Spot.interruption_rate`) [1].
    rules : FleetRules
        Their confidence and limit.
    """
    n = count + spares_for(count, rate, rules.confidence)
    return None if n > rules.limit else n


def count_with_spares_array(
    target_rps: float, usable_rps: ArrayLike, rules: FleetRules, rate: ArrayLike
) -> np.ndarray:
    """Each element's count with spot spares by its band (`_with_spares`' count) [instances].

    Parameters
    ----------
    target_rps : float
        Requests per second to serve [1/s].
    usable_rps : array_like
        What one instance serves with the headroom kept [1/s].
    rules : FleetRules
        The rules (their spot reserve is replaced by the spares).
    rate : array_like
        The band's share interrupted a month (`Spot.interruption_rate`), broadcast against
        ``usable_rps`` [1].

    Returns
    -------
    numpy.ndarray
        The counts as floats (inf: no fleet within the limit): `with_spares` of each
        distinct ``(count without a reserve, rate)`` pair once.
    """
    import numpy as np

    n0 = count_for_array(target_rps, usable_rps, replace(rules, spot_reserve=0.0))
    n0, rates = np.broadcast_arrays(n0, np.asarray(rate, dtype=float))
    pairs, which = np.unique(
        np.stack([n0.ravel(), rates.ravel()], axis=1), axis=0, return_inverse=True
    )
    found = []
    for n, r in pairs.tolist():
        total = with_spares(int(n), r, rules) if math.isfinite(n) else None
        found.append(math.inf if total is None else float(total))
    return np.array(found)[which.ravel()].reshape(n0.shape)


@dataclass(frozen=True)
class BandCounts:
    """Each option row's counts with its band's spares (`band_counts`), int arrays.

    Attributes
    ----------
    n : numpy.ndarray
        The count [instances]; the flat reserve's where no band applies.
    n_conf : numpy.ndarray
        The count at the confidence [instances]; -1: none within the rules.
    spares : numpy.ndarray
        The spares in ``n`` [instances]; -1: no band (the flat reserve's count).
    spares_conf : numpy.ndarray
        The spares in ``n_conf`` [instances]; -1: none.
    """

    n: np.ndarray
    n_conf: np.ndarray
    spares: np.ndarray
    spares_conf: np.ndarray

    def counts_of(self, j: int) -> tuple[int, int | None]:
        """Option row ``j``'s count and count at the confidence (None: none) [instances]."""
        n_conf = int(self.n_conf[j])
        return int(self.n[j]), None if n_conf < 0 else n_conf


def band_counts(
    q: FleetQuestion,
    rate: ArrayLike,
    shape: ArrayLike,
    caps: Sequence[Capacity],
    flat: Sequence[tuple[int | None, int | None]],
) -> BandCounts:
    """Each option row's counts with the spares its interruption band calls for.

    A row with a band (``rate`` not NaN) counts ``n0``, what the rules need without a spot
    reserve, plus `sizing.catalog.spot.spares_array` of ``(n0, rate)`` at the confidence,
    for the point estimate and at the confidence alike; a row without one, or whose point
    count with spares is above the rules' limit, keeps its shape's ``flat`` counts.

    Parameters
    ----------
    q : FleetQuestion
        Its target [1/s] and rules.
    rate : array_like
        Each option row's share interrupted a month, NaN where no band applies [1].
    shape : array_like of int
        Each option row's place in ``caps`` and ``flat``.
    caps : sequence of Capacity
        One capacity per shape (burstable types at their sustained baseline).
    flat : sequence of (int or None, int or None)
        Each shape's count and count at the confidence with the flat reserve [instances].
    """
    import numpy as np

    rules, target, keep = q.rules, q.target_rps, 1.0 - q.rules.headroom
    bare = replace(rules, spot_reserve=0.0)
    point = np.array([cap.capacity_rps * keep for cap in caps], dtype=float)
    at = np.array([cap.quantile(1.0 - rules.confidence) * keep for cap in caps], dtype=float)
    n_flat = np.array([[-1 if c is None else c for c in pair] for pair in flat], dtype=np.int64)
    per_shape = np.column_stack(
        [
            np.nan_to_num(count_for_array(target, point, bare), posinf=-1),
            np.nan_to_num(count_for_array(target, at, bare), posinf=-1),
            n_flat.reshape(len(caps), 2),
        ]
    ).astype(np.int64)[np.asarray(shape, dtype=np.int64)]
    n0, n0c, n_flat, n_flat_c = per_shape.T
    r = np.asarray(rate, dtype=float)
    spares = _spares(n0, r, ~np.isnan(r) & (n0 > 0), rules.confidence)
    ok = ~np.isnan(r) & (n0 > 0) & (n0 + spares <= rules.limit)
    spares_c = _spares(n0c, r, ok & (n0c > 0), rules.confidence)
    ok_c = ok & (n0c > 0) & (n0c + spares_c <= rules.limit)
    return BandCounts(
        n=np.where(ok, n0 + spares, n_flat),
        n_conf=np.where(ok, np.where(ok_c, n0c + spares_c, -1), n_flat_c),
        spares=np.where(ok, spares, -1),
        spares_conf=np.where(ok_c, spares_c, -1),
    )


def _spares(
    count: np.ndarray, rate: np.ndarray, where: np.ndarray, confidence: float
) -> np.ndarray:
    """`spares_array` of the ``where`` elements; 0 elsewhere [instances]."""
    import numpy as np

    out = np.zeros(count.shape, dtype=np.int64)
    out[where] = spares_array(count[where], rate[where], confidence)
    return out


def band_rates(keys: Iterable[tuple[str, str, str]]) -> list[float]:
    """Each ``(provider, region, instance type)``'s share interrupted a month, NaN: none [1].

    `sizing.catalog.spot.spot_risk`'s: AWS's band, the estimate for GCP and Azure.
    """
    out = []
    for key in keys:
        risk = spot_risk(*key)
        out.append(math.nan if risk is None else risk.rate)
    return out


def apply_band(o: Option, banded: BandCounts, j: int, target_rps: float) -> Option:
    """``o`` (option row ``j``) with its band's counts, chances and spot fields, if it has one.

    Parameters
    ----------
    o : Option
        Counted with the flat reserve.
    banded : BandCounts
        The option rows' counts (`band_counts`).
    j : int
        Its option row.
    target_rps : float
        Requests per second to serve [1/s].
    """
    spares = int(banded.spares[j])
    if spares < 0:
        return o
    inst, cap, rules = o.capacity.instance, o.capacity, o.rules
    risk = spot_risk(inst.provider, inst.region, inst.instance_type)
    assert risk is not None
    bare = replace(rules, spot_reserve=0.0)
    n, n_conf = banded.counts_of(j)
    # survivors(n) with this reserve is floor(n x n0 / n) = n0 before the redundancy.
    held = replace(bare, spot_reserve=spares / n)
    spares_conf = None if n_conf is None else int(banded.spares_conf[j])
    return replace(
        o,
        count=n,
        rules=held,
        utilization=target_rps / (n * cap.capacity_rps),
        hourly_cost_usd=n * o.unit_price_usd_hour,
        p_meets_target=p_meet(n, cap, target_rps, held),
        count_at_confidence=n_conf,
        p_meets_at_confidence=(
            math.nan
            if n_conf is None or spares_conf is None
            else p_meet(n_conf, cap, target_rps, replace(bare, spot_reserve=spares_conf / n_conf))
        ),
        spot=spot_fields(risk, spares, spares_conf, rules.confidence),
    )


def spot_fields(
    risk: Risk, spares: int, spares_at_confidence: int | None, confidence: float
) -> dict[str, Any]:
    """What an option's JSON says of its spot spares."""
    return {
        "savings_pct": risk.savings_pct,
        "interruption_band": risk.band,
        "interruption_rate": risk.rate,
        "source": risk.source,
        "spares": spares,
        "spares_at_confidence": spares_at_confidence,
        "basis": (
            f"{spares} spare(s) so that the count the rules need keeps running with "
            f"{confidence:.0%} confidence when each instance is interrupted with probability "
            f"{risk.rate:.0%} (binomial; {risk.basis})"
        ),
    }
