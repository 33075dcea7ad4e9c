"""Traffic growth: when a fleet sized for today's target must grow.

A growth rate is read as ``2x/yr`` (doubles every year), ``5%/month``, ``30%/yr`` or
``1.5x/quarter`` (the period is required) and kept as a factor per month. A fleet whose
survivors (after the zone loss, failures and spot reserve of its rules) carry ``usable_rps``
with the headroom kept holds a target growing by ``g`` a month for
``log(usable_rps / target) / log(g)`` months; after that month the fleet must grow. The
month at which even the headroom is used up is given beside.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sizing.errors import InputError

#: Months in each period a growth rate may be given per.
PERIOD_MONTHS: dict[str, float] = {
    "month": 1.0,
    "mo": 1.0,
    "m": 1.0,
    "quarter": 3.0,
    "q": 3.0,
    "year": 12.0,
    "yr": 12.0,
    "y": 12.0,
}
#: Largest growth accepted: x1000 a month (beyond it no monthly answer means anything).
MAX_MONTHLY_FACTOR = 1000.0
#: Horizon beyond which "never within" is said instead of a month [months].
HORIZON_MONTHS = 1200.0

_GROWTH = re.compile(
    r"^\s*(?P<num>[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(?P<kind>x|%)\s*"
    r"(?:/\s*(?P<period>[a-z]+))?\s*$",
    re.IGNORECASE,
)


def parse_growth(text: str) -> float:
    """A growth rate -> its factor per month [1/month].

    ``2x/yr`` means doubling in twelve months; ``5%/month`` x1.05 a month (compounded);
    ``1.5x/quarter`` x1.5 in three months. The period is required: a bare ``2x`` reads as a
    one-off factor on the target elsewhere, not as a rate.

    Raises
    ------
    InputError
        For text that is not such a rate, a factor not above 1 (no growth: nothing to say),
        or one above `MAX_MONTHLY_FACTOR` a month.
    """
    m = _GROWTH.match(text if isinstance(text, str) else "")
    if m is None:
        raise InputError(
            f"growth {str(text)[:40]!r} is not a rate; expected e.g. 2x/yr, 5%/month, 1.5x/quarter"
        )
    if m["period"] is None:
        raise InputError(
            f"growth {str(text)[:40]!r} has no period; expected a rate such as 2x/yr or 5%/month"
        )
    value = float(m["num"])
    period = m["period"].lower().rstrip("s")
    months = PERIOD_MONTHS.get(period)
    if months is None:
        raise InputError(
            f"growth period {period[:20]!r} is unknown; expected /month, /quarter or /yr"
        )
    factor = value if m["kind"].lower() == "x" else 1.0 + value / 100.0
    if not math.isfinite(factor):
        raise InputError(f"growth {text[:40]!r} is not a finite rate")
    if not factor > 1.0:
        raise InputError(f"growth {text[:40]!r} does not grow; expected a factor above 1x")
    monthly = math.pow(factor, 1.0 / months)
    if not monthly <= MAX_MONTHLY_FACTOR:
        raise InputError(f"growth {text[:40]!r} is above x{MAX_MONTHLY_FACTOR:g} a month")
    return monthly


def months_until(usable_rps: float, target_rps: float, monthly_factor: float) -> float:
    """Months until a target growing by ``monthly_factor`` exceeds ``usable_rps`` [months].

    0 when it already does; `math.inf` beyond `HORIZON_MONTHS`.
    """
    if not (usable_rps > 0 and target_rps > 0 and monthly_factor > 1.0):
        return 0.0 if usable_rps <= target_rps else math.inf
    if usable_rps <= target_rps:
        return 0.0
    months = math.log(usable_rps / target_rps) / math.log(monthly_factor)
    return months if months <= HORIZON_MONTHS else math.inf


def growth_fields(
    survivors: int,
    capacity_rps: float,
    headroom: float,
    target_rps: float,
    monthly_factor: float,
) -> dict[str, Any]:
    """The growth answer of one fleet: months with the headroom kept and until it is used up.

    Parameters
    ----------
    survivors : int
        Instances left after the fleet rules' losses.
    capacity_rps : float
        One instance's capacity under the SLA [1/s].
    headroom : float
        Spare fraction kept on every instance [1].
    target_rps : float
        Today's target [1/s].
    monthly_factor : float
        Growth per month [1].

    Returns
    -------
    dict
        ``months_until_growth`` (float or None for beyond the horizon), ``grow_in_month``
        (the first whole month the target no longer fits: 1 is the coming month) and
        ``months_until_headroom_used``.
    """
    usable = max(survivors, 0) * capacity_rps
    keep = months_until(usable * (1.0 - headroom), target_rps, monthly_factor)
    full = months_until(usable, target_rps, monthly_factor)
    return {
        "months_until_growth": None if math.isinf(keep) else keep,
        "grow_in_month": None if math.isinf(keep) else math.floor(keep) + 1,
        "months_until_headroom_used": None if math.isinf(full) else full,
    }


def describe(fields: dict[str, Any], growth_text: str) -> str:
    """One sentence: when the fleet must grow at that rate."""
    keep = fields.get("months_until_growth")
    full = fields.get("months_until_headroom_used")
    if keep is None:
        return f"at {growth_text} growth the fleet holds beyond {HORIZON_MONTHS:g} months"
    head = (
        f"at {growth_text} growth the fleet must grow in month {fields['grow_in_month']} "
        f"(the target passes its capacity with the headroom kept after {keep:.1f} months"
    )
    tail = "" if full is None else f"; the headroom itself is used up after {full:.1f} months"
    return head + tail + ")"
