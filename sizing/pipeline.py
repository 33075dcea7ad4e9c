"""One pipeline: `size` turns a `SizingRequest` into an `Answer`; every caller renders that.

The command line (``recommend``, ``report``, ``plan-measurements``), the report notebook and
the explorer all call `size` and only render its answer, so the decision a person reads,
`Answer.decision`, is the same sentence in the terminal, the HTML page, the PDF and the
explorer.

``size`` reads the catalog files and filters, the CPU profiles and the run folders the
request names, asks the request's `sizing.fleet.question.FleetQuestion` once of the fleet
engine (`sizing.fleet.engine.answer`: every instance type's fleet, the mixed fleet when asked,
the decision).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sizing.catalog.load import (
    DEFAULT_CATALOG,
    Instance,
    load_catalog,
    norm_values,
    select_instances,
)
from sizing.evidence.profiles import load_profiles
from sizing.evidence.runs_check import require_used_runs
from sizing.fleet.engine import answer
from sizing.fleet.question import FleetQuestion, included_groups
from sizing.fleet.recommend import Option, Recommendation, RowTable
from sizing.request import SizingRequest
from sizing.workload.value import Workload

__all__ = ["Answer", "instances_of", "question_of", "size"]


@dataclass(frozen=True)
class Answer:
    """What `size` found for a request.

    Attributes
    ----------
    request : SizingRequest
        The question.
    recommendation : Recommendation
        Every feasible option in the request's order, the mix, the decision's numbers.
    decision : str
        The sentence a person reads: count, type, where, $/hour, $/month and how sure.
    warning : str
        A line to show before the answer (runs given but not used), or empty.
    instances : sequence of Instance
        The catalog rows the request's filters selected (before fleet rules excluded any).
    """

    request: SizingRequest
    recommendation: Recommendation
    decision: str
    warning: str = ""
    instances: Sequence[Instance] = ()

    @property
    def options(self) -> list[Option]:
        """The options table: each type's cheapest fleet, in the request's order."""
        return self.recommendation.options

    @property
    def basis(self) -> tuple[str, ...]:
        """What the chosen option's numbers rest on: runs, profiles, tables, estimates."""
        return tuple(self.recommendation.options[0].capacity.basis)

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """The JSON document of ``recommend --format json`` (``top`` options)."""
        doc = self.recommendation.to_dict(top=top)
        reading = self.request.configuration()
        if reading is not None:
            doc["configuration"] = reading.to_dict()
        return doc


def instances_of(request: SizingRequest) -> list[Instance]:
    """The catalog rows the request's catalog files and filters select.

    Raises
    ------
    InputError
        For a filter value no row has, or a bad catalog file.
    """
    items = select_instances(
        request.catalog,
        provider=request.providers or None,
        region=request.regions or None,
        arch=request.arch or None,
        family=request.families or None,
    )
    if request.prices:  # the user's own prices over the catalog's
        from sizing.catalog.prices import apply_prices

        items = apply_prices(items, request.prices)
    return items


def evidence_of(
    request: SizingRequest, instances: Sequence[Instance] = (), work: Workload | None = None
) -> tuple[Any, str]:
    """The measured evidence of the request's runs (None without runs) and its warning.

    ``work`` is the request's workload when already resolved.

    Raises
    ------
    Infeasible
        When runs were given, none measured the workload, and unused runs are not allowed.
    """
    if not request.runs:
        return None, ""
    from sizing.evidence.confcost import conf_evidence, split_runs
    from sizing.evidence.measured import build_evidence, catalog_for, measured_series

    # Runs of `runners sweep --nginx-conf` hold a configuration's cost ratio, not trials.
    costs, runs = split_runs(list(request.runs))
    evidence: Any = None
    if runs:
        series = measured_series(runs, allow_simulated=request.allow_simulated)
        # Match labels against the whole catalog when the selection lacks one: a filter must
        # not hide the measured type.
        catalog = catalog_for(series, instances, lambda: load_catalog(list(request.catalog)))
        evidence = build_evidence(series, catalog, work or request.workload())
    if costs:
        evidence = conf_evidence(costs, evidence, work or request.workload())
    warning = require_used_runs(
        evidence, list(request.runs), allow_unused=request.allow_unused_runs
    )
    return evidence, warning


def question_of(
    request: SizingRequest, work: Workload, profiles: Sequence[Any] = (), evidence: Any = None
) -> FleetQuestion:
    """The fleet question of a request: its workload ``work`` (resolved), rules and flags."""
    return FleetQuestion(
        request.rps,
        work,
        request.rules(),
        sort=request.sort,
        burstable=request.burstable,
        mix=request.mix,
        clients=request.clients,
        include_families=included_groups(request.family_groups()),
        growth=request.growth_rate(),
        profiles=tuple(profiles),
        evidence=evidence,
        band_spares=_band_spares(request),
    )


def size(request: SizingRequest, first_only: bool = False) -> Answer:
    """Answer a sizing request: the options, the mix when asked, and the decision.

    Parameters
    ----------
    request : SizingRequest
        Workload, SLA, fleet rules, pricing, filters and evidence.
    first_only : bool
        Only the decision's option is wanted (`sizing.fleet.question.FleetQuestion.first_only`:
        the other options, the runner-up and the excluded rows are then partial).

    Returns
    -------
    Answer
        With `Answer.decision`, the sentence every caller shows.

    Raises
    ------
    InputError
        For a bad file or filter.
    Infeasible
        When nothing meets the target, or runs were given and none is used.
    """
    work = request.workload()
    profiles = load_profiles(request.profiles)
    if _by_columns(request):
        # numpy on this path only: the whole catalog kept as columns (sizing.fleet.columnar).
        from sizing.catalog.columns import load_columns
        from sizing.fleet import columnar

        cols = load_columns(DEFAULT_CATALOG)
        if cols is not None:
            rows = columnar.select_rows(
                cols, request.providers or None, request.arch or None, request.families or None
            )
            q = replace(question_of(request, work, profiles), first_only=first_only)
            rec = columnar.recommend_columns(q, cols, rows)
            return _answer(request, rec, "", columnar.instances_of(cols, rows))
    instances = instances_of(request)
    evidence, warning = evidence_of(request, instances, work)
    q = replace(question_of(request, work, profiles, evidence), first_only=first_only)
    rec = answer(q, RowTable(instances))
    return _answer(request, rec, warning, tuple(instances))


def _answer(
    request: SizingRequest, rec: Recommendation, warning: str, instances: Sequence[Instance]
) -> Answer:
    """The answer, its decision the first sentence of the recommendation's text."""
    decision = rec.decision["headline"] + "." if rec.decision else ""
    notes: list[str] = []
    reading = request.configuration()
    if reading is not None:  # what the configuration gave, in every rendering's notes
        from sizing.model.features import shipped_feature_costs
        from sizing.workload.conf.reading import answer_notes

        notes.extend(answer_notes(reading, set(shipped_feature_costs())))
    if request.pricing == "spot" and rec.options:  # the chosen option's interruption risk
        from sizing.catalog.spot import spot_note

        rules = rec.rules
        note = spot_note(rec.options[0], rules.confidence, rules.spot_reserve)
        if note:
            notes.append(note)
    if notes:  # a new answer with the notes added (the engine's is frozen)
        rec = replace(rec, notes=(*rec.notes, *notes))
    return Answer(request, rec, decision, warning, instances)


def _band_spares(request: SizingRequest) -> bool:
    """Whether spot spares follow each AWS type's interruption band (no reserve given)."""
    return request.pricing == "spot" and request.spot_reserve is None


def _by_columns(request: SizingRequest) -> bool:
    """Whether the request is answered from the catalog's columns (`sizing.fleet.columnar`).

    Yes for every region of the shipped catalog, with no catalog file of the user's and no
    runs (`sizing.fleet.columnar.ColumnTable`).
    """
    return (
        not request.runs
        and not request.catalog
        and not request.prices
        and norm_values(request.regions) == {"all"}
    )
