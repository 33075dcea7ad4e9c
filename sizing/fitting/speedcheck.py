"""Fitted platform speeds far from their CPU generation's neighbours (a plausibility check).

A fitted per-vCPU speed (`sizing.fitting.cloudfit`) rests on whatever the measurements of its
platform were; one harness on a few instance types can place a platform far from where its
design does. The check: each speed, turned into a core's worth (`core_of_vcpu`, so that
whole-core and hyper-thread vCPUs compare), against the median of the same class's core
speeds of the same lineage's adjacent generations (`GENERATIONS`; the mean of the two
where there is one on each side). A ratio above
`FLAG_RATIO` [1] (x1.5) or below its lower bound (x0.55) is flagged. Above: one generation
step in these lineages gains 10-40% per core in their makers' figures (Zen 4 to Zen 5 about
16%, Graviton4 to Graviton5 up to 25%), so a platform at the end of a lineage, one step past
its neighbour, should sit near x1.25 and one between two generations near x1; x1.5 is past the
largest step claimed. Below: x0.55, wider, as the oldest cores (a first Graviton's Cortex-A72
is a phone core) fall further behind their successors than a step. On the shipped fit every
other speed sits within x0.57-1.40. `benchmarks/bench_cloud.py` prints the flags; nothing here
changes a speed.

`step_checks` sets each fitted step between two platforms against what is published of it
(`sizing.model.steps`: Arm's measured NGINX range, AWS's "up to" figures), and says whether
the fit held a stand-in-only speed to it (`sizing.fitting.cloudfit.cap_to_steps`) or leaves a
speed real NGINX measured outside it. The held-out benchmark prints both checks.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sizing.model.cloud import CloudModel, core_of_vcpu
from sizing.model.steps import GenerationStep, load_steps, step_pairs

__all__ = [
    "FLAG_RATIO",
    "GENERATIONS",
    "SpeedFlag",
    "StepCheck",
    "generation_outliers",
    "step_checks",
]

#: Lineages of CPU generations, oldest first; platforms of one generation share a tuple.
#: Arm's Neoverse cores are one lineage whoever builds the chip (AWS, Ampere, Google).
GENERATIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    "intel": (
        ("sandy_bridge",),
        ("ivy_bridge",),
        ("haswell",),
        ("broadwell",),
        ("skylake",),
        ("cascade_lake",),
        ("ice_lake",),
        ("sapphire_rapids",),
        ("emerald_rapids",),
        ("granite_rapids",),
    ),
    "amd": (("zen1",), ("zen2",), ("zen3",), ("zen4",), ("zen5",)),
    "arm": (
        ("graviton1",),
        ("graviton2", "altra"),
        ("graviton3", "graviton3e"),
        ("graviton4", "axion"),
        ("graviton5", "axion_n3"),
    ),
}

#: (high, low) bounds of a core speed over its neighbours' median [1].
FLAG_RATIO = (1.5, 0.55)


@dataclass(frozen=True)
class SpeedFlag:
    """One speed outside its neighbours' band.

    Attributes
    ----------
    key : str
        The speed's key (platform|threads per core|class).
    speed : float
        Its per-vCPU speed [reference cores].
    ratio : float
        Its core speed over the one its neighbours lead to expect [1].
    neighbours : tuple of str
        The platforms of the adjacent generations that were compared.
    """

    key: str
    speed: float
    ratio: float
    neighbours: tuple[str, ...]


def _neighbours(platform_id: str) -> tuple[tuple[str, ...], ...]:
    """The generations just before and after ``platform_id``'s in its lineage (one at an end)."""
    for gens in GENERATIONS.values():
        for i, gen in enumerate(gens):
            if platform_id in gen:
                return gens[max(i - 1, 0) : i] + gens[i + 1 : i + 2]
    return ()


def _core_speeds(model: CloudModel, cls: str, gen: tuple[str, ...]) -> list[float]:
    """Core speeds [reference cores] of ``gen``'s platforms in class ``cls`` (both vCPU kinds)."""
    return [
        o.speed * core_of_vcpu(model, cls, o.threads_per_core)
        for o in model.speeds.values()
        if o.workload_class == cls and o.platform_id in gen
    ]


def generation_outliers(model: CloudModel) -> list[SpeedFlag]:
    """Every fitted speed whose core speed is outside `FLAG_RATIO` of where its neighbours put it.

    Where it is expected: the mean of the median core speeds of the generation
    before and the one after (a platform between them), or the one neighbour's median at
    either end of a lineage.

    Parameters
    ----------
    model : CloudModel
        A fitted cloud model.

    Returns
    -------
    list of SpeedFlag
        In key order; empty when every speed sits with its neighbours.
    """
    high, low = FLAG_RATIO
    out: list[SpeedFlag] = []
    for key, sp in sorted(model.speeds.items()):
        cls = sp.workload_class
        medians = [
            statistics.median(c)
            for c in (_core_speeds(model, cls, g) for g in _neighbours(sp.platform_id))
            if c
        ]
        if not medians:
            continue
        expected = statistics.fmean(medians)
        ratio = sp.speed * core_of_vcpu(model, cls, sp.threads_per_core) / expected
        if ratio > high or ratio < low:
            near = tuple(p for g in _neighbours(sp.platform_id) for p in g)
            out.append(SpeedFlag(key, sp.speed, ratio, near))
    return out


@dataclass(frozen=True)
class StepCheck:
    """One fitted step between two platforms against its published range.

    Attributes
    ----------
    step_id : str
        The published step (``data/platforms/generation-steps.csv``).
    key : str
        The subject's speed key (platform|threads per core|class).
    ratio : float
        The fitted per-vCPU speed over the baseline's [1].
    low, high : float
        The published range [1]; ``low`` is 0 for an "up to" figure.
    status : str
        ``within``, ``above`` or ``below`` the range, or ``held`` (a stand-in-only speed
        the fit held to ``high``).
    basis : str
        ``NGINX-measured`` or ``stand-in only``.
    """

    step_id: str
    key: str
    ratio: float
    low: float
    high: float
    status: str
    basis: str


def step_checks(
    model: CloudModel, steps: tuple[GenerationStep, ...] | None = None
) -> list[StepCheck]:
    """Every fitted speed a published step compares, with the step's range and a verdict.

    Parameters
    ----------
    model : CloudModel
        A fitted cloud model.
    steps : tuple of GenerationStep, optional
        The published steps (default: the shipped ones).

    Returns
    -------
    list of StepCheck
        In the steps' order, then by speed key.
    """
    out: list[StepCheck] = []
    pairs = step_pairs(model, load_steps() if steps is None else steps)
    for step, key, base in pairs:
        sp = model.speeds[key]
        ratio = sp.speed / base.speed
        low = step.low or 0.0
        if sp.capped_by:
            status = "held"
        elif ratio > step.high * 1.0005:
            status = "above"
        elif ratio < low / 1.0005:
            status = "below"
        else:
            status = "within"
        basis = "stand-in only" if sp.stand_in_only else "NGINX-measured"
        out.append(StepCheck(step.step_id, key, ratio, low, step.high, status, basis))
    return out
