"""Your own nginx.conf's measured cost, carried to every platform (``recommend --runs RUN``).

A run of ``python -m runners sweep --nginx-conf FILE`` holds ``conf-cost.json``
(`trialtable.confcost`): the median over interleaved pairs of that config's nginx CPU time per
request over the reference config's, measured on one host at the same time. A request for the
reference's workload (scenario, protocol and body size) then takes the model's CPU capacity of
every option divided by that ratio: the config is taken to cost the same multiple of the
reference on every platform (its spread adds to the capacity's range). Other runs given with
it are used as `sizing.evidence.measured` uses them, first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sizing.errors import InputError
from sizing.model.capacity import Capacity, binding
from sizing.workload.value import Workload
from trialtable.confcost import ConfCost, read_conf_cost
from trialtable.errors import RunFolderError

if TYPE_CHECKING:
    from sizing.evidence.measured import Calibration, Evidence


def split_runs(dirs: Sequence[str]) -> tuple[list[ConfCost], list[str]]:
    """The runs' cost ratios, and the run folders without one (trial runs).

    Raises
    ------
    InputError
        A damaged ``conf-cost.json`` (one line).
    """
    costs, others = [], []
    for d in dirs:
        try:
            cost = read_conf_cost(d)
        except RunFolderError as exc:
            raise InputError(str(exc)) from None
        if cost is None:
            others.append(d)
        else:
            costs.append(cost)
    # A cost's reference run (measured in the same pairs) is part of it, not a trial run.
    references = {c.reference_run_id for c in costs}
    return costs, [d for d in others if Path(d).name not in references]


@dataclass
class ConfEvidence:
    """A measured configuration's cost ratio over other evidence (or over the model).

    Attributes
    ----------
    cost : ConfCost or None
        The ratio used (None: none fits the request).
    inner : Evidence or None
        The evidence of the other runs (`sizing.evidence.measured.Evidence`), applied first.
    notes : list of str
        Why a run was not used.
    """

    cost: ConfCost | None
    inner: Evidence | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def calibrations(self) -> list[Calibration]:
        """The other runs' calibrations."""
        return list(getattr(self.inner, "calibrations", []) or [])

    @property
    def used(self) -> bool:
        """Whether any run is used."""
        return self.cost is not None or bool(self.calibrations)

    @property
    def runs(self) -> list[str]:
        """Every run id the evidence rests on."""
        own = [self.cost.run_id, self.cost.reference_run_id] if self.cost else []
        return sorted({*own, *(getattr(self.inner, "runs", []) or [])})

    @property
    def carry_k(self) -> float | None:
        """The other runs' level carried to unmeasured families (`Evidence.carry_k`)."""
        return getattr(self.inner, "carry_k", None)

    @property
    def simulated(self) -> bool:
        """Whether the other runs are simulated (a configuration's run never is)."""
        return bool(getattr(self.inner, "simulated", False))

    def apply(self, cap: Capacity, work: Workload) -> Capacity:
        """The capacity with the other runs applied, then its CPU part divided by the ratio."""
        if self.inner is not None:
            cap = self.inner.apply(cap, work)
        c = self.cost
        if c is None:
            return cap
        cpu = cap.cpu_sla_rps / c.ratio
        sd = math.log(c.ratio_high / c.ratio_low) / (2 * 1.96)
        how = (
            "nginx CPU time per request"
            if c.method == "pairs"
            else "cost, from their capacities under the p99 SLA (the reference's over yours)"
        )
        runs = (
            f"{c.pairs} interleaved pairs on one host"
            if c.method == "pairs"
            else f"two searches one after the other on one host, {c.pairs} confirmations each"
        )
        line = (
            f"measured: your nginx.conf ({c.nginx_conf}) costs x{c.ratio:.2f} (95% "
            f"{c.ratio_low:.2f}-{c.ratio_high:.2f}) the reference {c.scenario} config's {how}, "
            f"runs {c.run_id} against {c.reference_run_id} ({runs}); the CPU capacity is "
            "divided by it on every platform"
        )
        return replace(
            cap,
            capacity_rps=min(cpu, cap.network_rps),
            cpu_sla_rps=cpu,
            binding_constraint=binding(cpu, cap.network_rps, cap.outside),
            basis=[line, *cap.basis],
            rel_sd=math.sqrt(cap.rel_sd**2 + sd**2),
            measured=cap.measured or "carried",
        )


def conf_evidence(
    costs: Sequence[ConfCost], inner: Evidence | None, work: Workload
) -> ConfEvidence:
    """The ratio that fits ``work`` (the reference's workload, no features of its own).

    Raises
    ------
    InputError
        When two runs' ratios both fit (which configuration is meant is not known).
    """
    fits, notes = [], list(getattr(inner, "notes", []) or [])
    for c in costs:
        ref = (c.scenario, c.protocol, c.file_bytes)
        if ref != (work.scenario, work.protocol, work.file_bytes):
            notes.append(
                f"run {c.run_id} measured your nginx.conf against the {ref[0]} {ref[1]} "
                f"{ref[2]} B reference; the request is {work.scenario} {work.protocol} "
                f"{work.file_bytes} B: not used"
            )
        elif work.features or work.uncosted:
            notes.append(
                f"run {c.run_id}: the request carries configuration features of its own "
                "(--nginx-conf); the measured ratio stands for them: ask without --nginx-conf"
            )
        else:
            fits.append(c)
    if len(fits) > 1:
        raise InputError(
            "runs " + ", ".join(c.run_id for c in fits) + " each measured a configuration's "
            "cost for this workload; give one of them"
        )
    return ConfEvidence(fits[0] if fits else None, inner, notes)
