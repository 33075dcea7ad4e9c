"""Capacities of one process's last answer, kept for its next answer of the same inputs.

``recommend --pricing spot`` answers a request twice: its own plan, then the same request at
on-demand prices for the "saves $X against on-demand" line
(`sizing.analyses.baseline.against_on_demand`). Capacity does not depend on the price, the
regions asked for, the target or the fleet rules: only on the instance's row, the workload
(its SLA among it), the CPU profiles and the model's inputs (`sizing.model.inputs`). So
`kept_capacities` keeps what it computed under those inputs and computes only the rows it
has not seen under them (the same row objects: `sizing.catalog.columns.load_columns` gives
one process the same rows again); each row's capacity is the one a fresh computation gives
(`sizing.model.capacity.model_capacities` computes every row on its own: what rows share is
only cached within a call, never mixed between rows).

The on-demand answer asks for its first option only (`sizing.fleet.question.FleetQuestion`'s
``first_only``): the rows that cannot rank first are not counted at all
(`sizing.fleet.engine.within_reach`), so it computes few shapes beyond the kept ones.

One set of inputs is kept: another workload, profile set, model input or computing function
drops what was kept, and only the last answer's rows are kept (a long-lived process holds
one answer's shapes, never a growing store). Answers with measured evidence are not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sizing.catalog.load import Instance
from sizing.model.capacity import Capacity
from sizing.model.inputs import ModelInputs
from sizing.workload.value import Workload

__all__ = ["Compute", "forget", "kept_capacities"]

#: `sizing.model.capacity.instance_capacities`'s signature: rows, workload, evidence,
#: profiles, model inputs -> one capacity per row.
Compute = Callable[[list[Instance], Workload, Any, Sequence[Any], ModelInputs], list[Capacity]]

#: The inputs last computed under (compute, workload, profiles, model) with each row's
#: capacity by the row's id, as one tuple: read and replaced whole (a reader in another
#: thread never pairs one answer's inputs with another's capacities).
_KEPT: list[tuple[Any, dict[int, tuple[Instance, Capacity]]]] = [(None, {})]


def forget() -> None:
    """Drop what is kept (the next answer computes every capacity)."""
    _KEPT[0] = (None, {})


def kept_capacities(
    rows: Sequence[Instance],
    work: Workload,
    evidence: Any,
    profiles: Sequence[Any],
    model: ModelInputs,
    compute: Compute,
) -> list[Capacity]:
    """``compute(rows, work, evidence, profiles, model)``, the rows seen before taken as kept.

    Parameters
    ----------
    rows : sequence of Instance
        One row of each shape (`sizing.catalog.load.SHAPE_FIELDS`).
    work, evidence, profiles, model
        As `sizing.model.capacity.instance_capacities` takes them; with ``evidence`` (runs
        applied) nothing is kept.
    compute : callable
        The function that computes them (a test's replacement is its own inputs).

    Returns
    -------
    list of Capacity
        One per row, in the order of ``rows``.
    """
    if evidence is not None:
        return compute(list(rows), work, evidence, profiles, model)
    inputs = (compute, work, tuple(profiles), model)
    last_inputs, last = _KEPT[0]
    try:
        same = last_inputs == inputs
    except TypeError:  # an input that cannot be compared: computed, not kept
        return compute(list(rows), work, evidence, profiles, model)
    known = last if same else {}
    # By the row object itself (rows are frozen; the one kept holds its id): an equal row of
    # another reading is computed again rather than trusted to print alike (2 == 2.0).
    now = {id(r): hit for r in rows if (hit := known.get(id(r))) is not None and hit[0] is r}
    todo = list({id(r): r for r in rows if id(r) not in now}.values())
    if todo:
        found = compute(todo, work, None, profiles, model)
        now.update((id(r), (r, cap)) for r, cap in zip(todo, found, strict=True))
    _KEPT[0] = (inputs, now)  # this answer's rows only
    return [now[id(r)][1] for r in rows]
