"""Refuse to credit runs that the answer does not use.

When ``--runs`` are given but none of them measured the requested workload and SLA, the
answer is the model's alone: that must be said loudly, not in a footer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sizing.errors import Infeasible

if TYPE_CHECKING:
    from sizing.evidence.confcost import ConfEvidence
    from sizing.evidence.measured import Evidence

__all__ = ["require_used_runs"]


def require_used_runs(
    evidence: Evidence | ConfEvidence | None, run_dirs: Sequence[str], *, allow_unused: bool
) -> str:
    """Check that ``evidence`` rests on at least one of ``run_dirs``.

    Parameters
    ----------
    evidence : sizing.evidence.measured.Evidence, ConfEvidence or None
        What `sizing.evidence.measured.build_evidence` (and `conf_evidence`) made of the runs.
    run_dirs : sequence of str
        The run folders given.
    allow_unused : bool
        Only warn (return the warning) instead of raising.

    Returns
    -------
    str
        A warning line when no run is used and ``allow_unused``; empty otherwise.

    Raises
    ------
    Infeasible
        When runs were given, none is used, and not ``allow_unused``.
    """
    used = getattr(evidence, "calibrations", None) or getattr(evidence, "used", False)
    if not run_dirs or evidence is None or used:
        return ""
    why = "; ".join(getattr(evidence, "notes", []) or []) or "no run matched"
    msg = (
        f"none of the {len(run_dirs)} run folder(s) measured this workload and SLA, so the "
        f"answer would rest on the model alone ({why}); ask for the workload the runs measured "
        "(e.g. --protocol, --file-size, --scenario, --sla-p99) or pass --allow-unused-runs"
    )
    if not allow_unused:
        raise Infeasible(msg)
    return "WARNING: " + msg.replace(" or pass --allow-unused-runs", "")
