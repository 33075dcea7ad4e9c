"""AWS spot: the discount and interruption band per region and type, and the spares they call for.

``data/upstream/aws-spot/spot-advisor.csv`` is a compact extract of AWS's public Spot Instance
Advisor feed as ``alexei-led/spotinfo`` packages it (Apache-2.0; ``extract.py`` there rebuilds
it from the pinned commit): per region and Linux instance type, the savings over on-demand [%]
and the band of the share of instances interrupted in a month (`BANDS`).

It also says which instance types each AWS region offers (the regions the bundled prices do not
cover answer with the command that fetches them: `sizing.catalog.load.select_instances`).

Runs with the standard library only.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from sizing.catalog.rows import read_upstream
from sizing.errors import InputError
from sizing.paths import DATA_DIR

SPOT_FILE = DATA_DIR / "upstream" / "aws-spot" / "spot-advisor.csv"
SOURCE_DATE = "2025-06-28"
#: Interruption bands of the feed: index -> (low, high) share interrupted a month [1].
BANDS = ((0.0, 0.05), (0.05, 0.10), (0.10, 0.15), (0.15, 0.20), (0.20, 1.0))
BAND_LABELS = ("<5%", "5-10%", "10-15%", "15-20%", ">20%")
#: The share used for the top band, whose published range is open above 20% [1].
TOP_BAND_RATE = 0.30
#: Estimate: the share interrupted a month taken for a spot VM of a provider that publishes
#: no figure per type: the AWS top band's (see `estimate_reason`) [1].
ESTIMATED_RATE = TOP_BAND_RATE
#: What each such provider publishes of its spot VMs' interruptions, by title and publisher.
UNPUBLISHED = {
    "gcp": (
        "Google publishes no preemption rate for Spot VMs, per type or at all (Compute Engine "
        "documentation, 'Spot VMs', Google Cloud: they may be preempted at any time, their "
        "availability varying with Compute Engine usage)"
    ),
    "azure": (
        "Microsoft shows eviction-rate bands per size and region (0-5% to 20+%, over the 28 "
        "trailing days) only to signed-in users, in the portal and Azure Resource Graph's "
        "SpotResources table ('Use Azure Spot Virtual Machines', Microsoft Learn); no public "
        "figure per size"
    ),
}


class Spot(NamedTuple):
    """One type's spot terms in one region."""

    savings_pct: int  # savings over on-demand [%] (negative: spot above on-demand)
    band: int  # index into `BANDS`

    @property
    def interruption_rate(self) -> float:
        """The band's upper share interrupted a month (the top band: `TOP_BAND_RATE`) [1]."""
        return TOP_BAND_RATE if self.band == len(BANDS) - 1 else BANDS[self.band][1]


class Risk(NamedTuple):
    """A spot type's interruption risk in one region, with where it comes from."""

    rate: float  # share interrupted a month [1]
    band: str  # the published band ("<5%"...), or "estimate: 30%"
    source: str  # the feed's source line, or the estimate's reasoning ("estimate: ...")
    savings_pct: int | None  # savings over on-demand [%]; None: an estimate, no feed

    @property
    def basis(self) -> str:
        """Where the rate comes from, in a few words (`source` holds the estimate's reasoning)."""
        if self.savings_pct is None:
            return f"{self.band} a month: no published figure (the spot note says why)"
        return f"band {self.band} a month, AWS Spot Instance Advisor"


def spot_risk(provider: str, region: str, instance_type: str) -> Risk | None:
    """The type's interruption risk: AWS's Spot Advisor band, an estimate for GCP and Azure.

    None for an AWS type the feed does not list in the region (and an unknown provider):
    its fleet keeps the flat spot reserve.
    """
    if provider == "aws":
        spot = spot_table().get((region, instance_type))
        return None if spot is None else _published_risk(spot)
    if provider not in UNPUBLISHED:
        return None
    return _estimated_risk(provider)


@cache
def _published_risk(spot: Spot) -> Risk:
    """The risk of a type the feed lists with ``spot`` (made once per savings and band)."""
    return Risk(spot.interruption_rate, BAND_LABELS[spot.band], source(), spot.savings_pct)


@cache
def _estimated_risk(provider: str) -> Risk:
    """The risk of a ``provider`` spot VM, which no feed lists (made once per provider)."""
    return Risk(ESTIMATED_RATE, f"estimate: {ESTIMATED_RATE:.0%}", estimate_reason(provider), None)


@cache
def estimate_reason(provider: str) -> str:
    """Why a ``provider`` spot VM is taken as interrupted at `ESTIMATED_RATE` ("estimate: ...")."""
    table = spot_table()
    top = sum(1 for s in table.values() if s.band == len(BANDS) - 1)
    return (
        f"estimate: {ESTIMATED_RATE:.0%} of instances interrupted a month, as for AWS's top "
        f"band: {UNPUBLISHED[provider]}; {top / len(table):.0%} of the {len(table):,} AWS pools "
        f"sit in the top band (>20% a month, {source()}), so at a confidence above "
        f"{1 - top / len(table):.0%} a pool of unknown band is taken as one of them"
    )


@cache
def spot_table(path: Path = SPOT_FILE) -> dict[tuple[str, str], Spot]:
    """``(region, instance_type) -> Spot`` from the extract, every row checked.

    A few hundred distinct savings and bands serve its 15,000 rows: each is read and checked
    once (`_spot`), and its rows share it.
    """
    out: dict[tuple[str, str], Spot] = {}
    lines = read_upstream(path).splitlines()
    body = [line for line in lines if not line.startswith("#")]
    if not body or body[0] != "region,instance_type,savings_pct,interruption_band":
        raise InputError(f"{path}: expected the header region,instance_type,savings_pct,...")
    made: dict[tuple[str, str], Spot] = {}
    for i, line in enumerate(body[1:], start=3):
        try:
            region, name, savings, band = line.split(",")
        except ValueError:
            raise InputError(f"{path}:{i}: expected region,type,savings %,band") from None
        spot = made.get((savings, band))
        if spot is None:
            spot = made[savings, band] = _spot(savings, band, f"{path}:{i}")
        out[region, name] = spot
    return out


def _spot(savings: str, band: str, where: str) -> Spot:
    """The `Spot` of one row's savings and band cells, checked (``where`` names the row)."""
    try:
        spot = Spot(int(savings), int(band))
    except ValueError:
        raise InputError(f"{where}: expected region,type,savings %,band") from None
    if not -100 < spot.savings_pct < 100 or not 0 <= spot.band < len(BANDS):
        raise InputError(f"{where}: savings or band out of range")
    return spot


@cache
def source() -> str:
    """The extract's source line (its first ``#`` line)."""
    first = read_upstream(SPOT_FILE).split("\n", 1)[0]
    return first.lstrip("# ").strip() + f", {SOURCE_DATE}"


@cache
def aws_regions() -> dict[str, int]:
    """Every AWS region of the feed and how many instance types it lists."""
    out: dict[str, int] = {}
    for region, _ in spot_table():
        out[region] = out.get(region, 0) + 1
    return out


def spares_for(count: int, rate: float, confidence: float) -> int:
    """Spare instances so that ``count`` keep running at ``confidence`` [1].

    Each of ``count + spares`` instances is interrupted independently with probability
    ``rate`` (a month's share); the smallest ``spares`` for which at least ``count`` survive
    with probability ``confidence`` (binomial), at most ``10 x count + 10``.

    At least ``count`` of ``count + s`` survive exactly when fewer than ``s + 1``
    interruptions come before the ``count``-th survivor, a negative binomial: the spares are
    its ``confidence`` quantile, found by adding its terms from 0 up (for fleets so large
    that the first term underflows, each from `math.lgamma`, summed in logs). The standard
    library only: scipy's import alone costs more than a ``--region all`` answer.
    """
    if not 0 <= rate < 1 or not 0 < confidence < 1 or count < 1:
        raise ValueError("rate in [0, 1), confidence in (0, 1), count >= 1")
    if rate == 0:
        return 0
    limit = 10 * count + 10
    first = (1.0 - rate) ** count  # P(no interruption before the count-th survivor)
    if first > 1e-200:  # term by term: each from the one before
        term = total = first
        spares = 0
        while total < confidence and spares < limit:
            spares += 1
            term *= (count + spares - 1) / spares * rate
            total += term
        return spares
    log_p, log_q, goal = math.log(rate), math.log1p(-rate), math.log(confidence)
    base = count * log_q - math.lgamma(count)
    log_total, spares = count * log_q, 0
    while log_total < goal and spares < limit:
        spares += 1
        term = base + math.lgamma(count + spares) - math.lgamma(spares + 1) + spares * log_p
        high, low = max(log_total, term), min(log_total, term)
        log_total = high + math.log1p(math.exp(low - high))
    return spares


def spares_array(count: Any, rate: Any, confidence: float) -> Any:
    """`spares_for` of every ``(count, rate)`` pair, each distinct pair once [instances].

    Parameters
    ----------
    count : array_like of int
        Instances that must keep running, each >= 1 [instances].
    rate : array_like of float
        Each one's share interrupted a month, in [0, 1), broadcast against ``count`` [1].
    confidence : float
        Probability that they keep running, in (0, 1) [1].

    Returns
    -------
    numpy.ndarray
        The spares, int64, of ``count``'s shape [instances].
    """
    import numpy as np

    n = np.asarray(count, dtype=np.int64)
    p = np.broadcast_to(np.asarray(rate, dtype=float), n.shape)
    if not n.size:
        return np.zeros(n.shape, dtype=np.int64)
    pairs, which = np.unique(np.stack([n.ravel(), p.ravel()], axis=1), axis=0, return_inverse=True)
    found = [spares_for(int(c), r, confidence) for c, r in pairs.tolist()]
    return np.array(found, dtype=np.int64)[which.ravel()].reshape(n.shape)


def spot_note(option: Any, confidence: float, reserve: float) -> str:
    """The answer's line on the chosen spot option's interruption risk ("" without one).

    Parameters
    ----------
    option : sizing.fleet.counts.Option
        The chosen option (its instance, its count).
    confidence : float
        The request's ``--confidence`` [1].
    reserve : float
        The fraction of the fleet kept as spot reserve (``--spot-reserve``) [1].
    """
    inst = option.capacity.instance
    risk = spot_risk(inst.provider, inst.region, inst.instance_type)
    if risk is None:
        return ""
    head = f"spot: {inst.instance_type} in {inst.region}: {risk.source}"
    if risk.savings_pct is not None:
        head = (
            f"spot: {inst.instance_type} in {inst.region} saves {risk.savings_pct}% and is "
            f"interrupted {risk.band} of instances a month ({risk.source})"
        )
    held = getattr(option, "spot", None)
    if held:  # the count already holds the band's spares (sizing.fleet.spot)
        return f"{head}; the point-estimate count of {option.count} holds {held['basis']}" + (
            f"; the count at {confidence:.0%}, {option.count_at_confidence}, holds "
            f"{held['spares_at_confidence']}"
            if held.get("spares_at_confidence") is not None
            and option.count_at_confidence != option.count
            else ""
        )
    kept = option.count - math.floor(option.count * (1.0 - reserve) + 1e-9)
    spares = spares_for(max(1, option.count - kept), risk.rate, confidence)
    return (
        f"{head}; at {confidence:.0%} confidence the {option.count - kept} instances the "
        f"target needs call for {spares} spare(s) (binomial at {risk.rate:.0%}); the plan "
        f"keeps {kept} (--spot-reserve {reserve:.0%})"
    )
