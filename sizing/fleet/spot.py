"""Spot spares from each type's interruption band, in place of a flat reserve.

For an AWS type the Spot Advisor lists in its region (`sizing.catalog.spot`), the fleet is the
count the rules need without a spot reserve (``n0``: headroom, zones, redundancy) plus the
spares a binomial over the band's monthly interruption share calls for, so that at least
``n0`` instances keep running with the request's confidence (`sizing.catalog.spot.spares_for`,
the band's upper share, 30% for the open top band). Other types keep the flat reserve.

Used when the request prices spot and gives no ``--spot-reserve`` of its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sizing.catalog.spot import BAND_LABELS, Spot, spares_for, spot_table
from sizing.fleet.counts import FleetRules, Option, count_for, count_for_array, p_meet

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike


def _with_spares(
    target_rps: float, usable_rps: float, rules: FleetRules, spot: Spot
) -> tuple[int, int, FleetRules] | None:
    """The count, its spares and the rules that hold it (None: no fleet within the limit)."""
    bare = replace(rules, spot_reserve=0.0)
    n0 = count_for(target_rps, usable_rps, bare)
    if n0 is None:
        return None
    n = with_spares(n0, spot.interruption_rate, rules)
    if n is None:
        return None
    spares = n - n0
    # survivors(n) with this reserve is floor(n x n0 / n) = n0 before the redundancy.
    return n, spares, replace(bare, spot_reserve=spares / n)


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


def band_spares(options: Iterable[Option], target_rps: float, headroom: float) -> list[Option]:
    """``options`` with each listed AWS type's count set by its interruption band.

    Parameters
    ----------
    options : iterable of Option
        Counted with the flat reserve.
    target_rps : float
        Requests per second to serve [1/s].
    headroom : float
        Spare fraction of every instance's capacity [1].

    Returns
    -------
    list of Option
        The options in the same order: a new `Option` where the band applies, the same one
        elsewhere.
    """
    table = spot_table()
    return [_by_band(o, table, target_rps, headroom) for o in options]


def _by_band(
    o: Option, table: dict[tuple[str, str], Spot], target_rps: float, headroom: float
) -> Option:
    """``o`` counted with the spares of its interruption band (itself when none applies)."""
    inst, cap = o.capacity.instance, o.capacity
    spot = table.get((inst.region, inst.instance_type)) if inst.provider == "aws" else None
    if spot is None:
        return o
    rules = o.rules
    point = _with_spares(target_rps, cap.capacity_rps * (1.0 - headroom), rules, spot)
    if point is None:
        return o
    n, spares, held = point
    q = cap.quantile(1.0 - rules.confidence) * (1.0 - headroom)
    conf = _with_spares(target_rps, q, rules, spot)
    return replace(
        o,
        count=n,
        rules=held,
        utilization=target_rps / (n * cap.capacity_rps),
        hourly_cost_usd=n * o.unit_price_usd_hour,
        p_meets_target=p_meet(n, cap, target_rps, held),
        count_at_confidence=None if conf is None else conf[0],
        p_meets_at_confidence=(
            float("nan") if conf is None else p_meet(conf[0], cap, target_rps, conf[2])
        ),
        spot=spot_fields(spot, spares, None if conf is None else conf[1], rules.confidence),
    )


def spot_fields(
    spot: Spot, spares: int, spares_at_confidence: int | None, confidence: float
) -> dict[str, Any]:
    """What an option's JSON says of its spot spares."""
    return {
        "savings_pct": spot.savings_pct,
        "interruption_band": BAND_LABELS[spot.band],
        "interruption_rate": spot.interruption_rate,
        "spares": spares,
        "spares_at_confidence": spares_at_confidence,
        "basis": (
            f"{spares} spare(s) so that the count the rules need keeps running with "
            f"{confidence:.0%} confidence when each instance is interrupted with probability "
            f"{spot.interruption_rate:.0%} (binomial; band {BAND_LABELS[spot.band]} a month, "
            "AWS Spot Instance Advisor)"
        ),
    }
