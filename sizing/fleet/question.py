"""The fleet question: what `sizing.fleet.engine.answer` answers, resolved and checked once.

A `FleetQuestion` holds the target, the workload, the fleet rules and how to rank and whom
to count. It is frozen and checked when made, so the engine reads it without checking again,
and an answer (`sizing.fleet.counts.Recommendation.question`) carries the question it
answers: asking it again, or a variant made with `dataclasses.replace`, repeats every flag.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sizing.catalog.providers import FAMILY_GROUPS
from sizing.errors import InputError
from sizing.fleet.counts import DEFAULT_SPOT_RESERVE, FleetRules
from sizing.model.costmodel import CostProfile
from sizing.model.inputs import POINT, ModelInputs
from sizing.vocabulary import CLIENTS, SORTS
from sizing.workload.value import Workload

__all__ = ["FleetQuestion", "check_sort", "check_target_rps", "included_groups", "question"]

#: The `FleetRules` fields a flat call (`question`) may name.
RULE_FIELDS = tuple(f.name for f in dataclasses.fields(FleetRules))


def check_target_rps(target_rps: object) -> None:
    """Raise `InputError` unless ``target_rps`` is a positive finite number [1/s]."""
    if not (
        isinstance(target_rps, int | float)
        and not isinstance(target_rps, bool)
        and math.isfinite(target_rps)
        and target_rps > 0
    ):
        raise InputError(f"target RPS must be a positive finite number, got {target_rps!r}")


def check_sort(sort: object) -> None:
    """Raise `InputError` unless ``sort`` is one of `sizing.vocabulary.SORTS`."""
    if sort not in SORTS:
        raise InputError(f"unknown sort {sort!r}; expected one of: {', '.join(SORTS)}")


@dataclass(frozen=True)
class FleetQuestion:
    """Which fleets meet a target, under which rules, ranked how (checked when made).

    Attributes
    ----------
    target_rps : float
        Requests per second the fleet must serve [1/s].
    workload : Workload
        Scenario, protocol, response size and SLA.
    rules : FleetRules
        Headroom, redundancy, zones and zone loss, pricing, spot reserve, max count and
        confidence (the spot reserve resolved).
    sort : str
        ``cost-at-confidence`` or ``cost`` (`sizing.vocabulary.SORTS`).
    burstable : bool
        Also count shared-core and credit-based types at their sustained baseline.
    mix : int
        With K > 1, also the cheapest fleet of up to K types per zone (`sizing.fleet.mix`).
    prune : bool
        Leave out types dominated by a cheaper one (never with run evidence).
    clients : str
        Where clients are (`sizing.vocabulary.CLIENTS`); prices the traffic.
    include_families : tuple of str
        The family groups brought back (`sizing.catalog.providers.FAMILY_GROUPS`), sorted.
    egress_prices : mapping, optional
        Egress price table (`sizing.catalog.egress.read_egress`; default: the shipped one).
    growth : (str, float), optional
        Traffic growth as given and its factor per month (`sizing.fleet.growth`).
    profiles : tuple of CostProfile
        Measured CPU profiles.
    evidence : Evidence, optional
        Calibrations from measured runs (`sizing.evidence.measured.build_evidence`).
    model : ModelInputs
        The capacity model's uncertain inputs moved from their point values (none by default;
        `sizing.analyses.sensitivity` moves one at a time).
    band_spares : bool
        Spot spares from each AWS type's interruption band (`sizing.fleet.spot`) instead of
        the flat reserve: spot prices and no reserve given.
    first_only : bool
        Only the first option is asked for (the on-demand comparison of a spot or committed
        answer): rows whose cheapest possible fleet costs more than a fleet found are not
        counted (`sizing.fleet.engine.within_reach`), so the other options, the runner-up and
        the excluded rows are partial. The first option is the one the whole answer ranks
        first.
    """

    target_rps: float
    workload: Workload = field(default_factory=Workload)
    rules: FleetRules = field(default_factory=FleetRules)
    sort: str = "cost-at-confidence"
    burstable: bool = False
    mix: int = 1
    prune: bool = True
    clients: str = "internet"
    include_families: tuple[str, ...] = ()
    egress_prices: dict[tuple[str, str, str], Any] | None = field(default=None, compare=False)
    growth: tuple[str, float] | None = None
    profiles: tuple[CostProfile, ...] = ()
    evidence: Any = field(default=None, compare=False)
    model: ModelInputs = POINT
    band_spares: bool = False
    first_only: bool = False

    def __post_init__(self) -> None:
        check_target_rps(self.target_rps)
        check_sort(self.sort)
        if not (isinstance(self.mix, int) and 1 <= self.mix <= 8):
            raise InputError(f"mix must be 1 to 8 instance types, got {self.mix!r}")
        if self.clients not in CLIENTS:
            raise InputError(
                f"unknown clients {self.clients!r}; expected one of: {', '.join(CLIENTS)}"
            )
        unknown = set(self.include_families) - set(FAMILY_GROUPS)
        if unknown:
            raise InputError(
                f"unknown family group(s) {', '.join(sorted(unknown))}; expected: "
                f"{', '.join(FAMILY_GROUPS)} or all"
            )
        self.rules.check()


def included_groups(groups: Iterable[str]) -> tuple[str, ...]:
    """The family groups brought back, sorted: every one of them for ``all``."""
    groups = tuple(groups)
    return tuple(sorted(FAMILY_GROUPS if "all" in groups else groups))


def question(target_rps: float, workload: Workload | None = None, **options: Any) -> FleetQuestion:
    """A `FleetQuestion` from flat keyword options, as `sizing.fleet.recommend.recommend` takes.

    Parameters
    ----------
    target_rps : float
        Requests per second the fleet must serve [1/s].
    workload : Workload, optional
        Default: ``Workload()``.
    **options
        `FleetRules` fields (``headroom``, ``redundancy``, ``zones``, ``zone_loss``,
        ``pricing``, ``spot_reserve``, ``max_count``, ``confidence``) and `FleetQuestion`
        fields; ``include_families`` may hold ``all``; ``spot_reserve`` None or left out is
        `sizing.fleet.counts.DEFAULT_SPOT_RESERVE` with spot prices, 0 otherwise.

    Raises
    ------
    InputError
        For a bad value, or an option neither names.
    """
    rules = {k: options.pop(k) for k in RULE_FIELDS if k in options}
    if rules.get("spot_reserve") is None:
        spot = rules.get("pricing") == "spot"
        rules["spot_reserve"] = DEFAULT_SPOT_RESERVE if spot else 0.0
        options.setdefault("band_spares", spot)
    included = included_groups(options.pop("include_families", ()))
    if "profiles" in options:
        options["profiles"] = tuple(options["profiles"])
    names = {f.name for f in dataclasses.fields(FleetQuestion)}
    if set(options) - names:
        raise TypeError(f"unknown fleet option(s): {', '.join(sorted(set(options) - names))}")
    return FleetQuestion(
        target_rps,
        workload or Workload(),
        FleetRules(**rules),
        include_families=included,
        **options,
    )
