"""Published generation steps: one CPU generation's per-vCPU speed over the one before it.

``data/platforms/generation-steps.csv`` (sources and quotes in ``generation-steps.md``) holds
what makers and NGINX measurements publish about a newer platform against an older one, on
instances of the same size: a measured NGINX range (Arm's Graviton3 reverse-proxy runs), or a
maker's "up to" figure (AWS's launch posts: NGINX, web applications, or the largest gain any
workload is claimed), which bounds the step from above only. No held-out deployment of the
benchmarks is among them.

Two uses: `sizing.fitting.cloudfit` caps a speed fitted only from the stand-in server where
its step over the older platform passes the published upper bound (`capped_speed`), and
`sizing.fitting.speedcheck.step_checks` reports every fitted step against its range.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sizing.errors import InputError
from sizing.model.cloud import CloudModel, PlatformSpeed
from sizing.paths import DATA_DIR

__all__ = ["STEPS_PATH", "GenerationStep", "capped_speed", "load_steps", "step_pairs"]

STEPS_PATH = DATA_DIR / "platforms" / "generation-steps.csv"
_COLUMNS = (
    "step_id",
    "subject",
    "baseline",
    "subject_tpc",
    "baseline_tpc",
    "ratio_low",
    "ratio_high",
    "kind",
    "families",
    "title",
    "publisher",
    "date",
    "url",
    "quote",
)
#: Kinds of figure: a measured NGINX range, or an "up to" claim (NGINX, web, any workload).
KINDS = ("nginx", "nginx_up_to", "web_up_to", "any_up_to")


@dataclass(frozen=True)
class GenerationStep:
    """One published step between two platforms, per vCPU on same-size instances.

    Attributes
    ----------
    step_id : str
        Row id.
    subject, baseline : str
        Platform ids (`sizing.model.platforms`), newer over older.
    subject_tpc, baseline_tpc : int
        vCPUs per core of the instances compared (1 whole cores, 2 hyper-threads).
    low : float or None
        Lower bound of the ratio [1]; None for an "up to" figure.
    high : float
        Upper bound of the ratio [1].
    kind : str
        One of `KINDS`.
    source : str
        Title, publisher and date, for a basis line.
    """

    step_id: str
    subject: str
    baseline: str
    subject_tpc: int
    baseline_tpc: int
    low: float | None
    high: float
    kind: str
    source: str

    def applies_to(self, workload_class: str) -> bool:
        """Whether the step speaks of a workload class (`sizing.model.cloud.CLASSES`).

        A measured NGINX range was measured on small responses (1 KB): it holds for
        ``small_static`` only. An "up to" claim bounds what any web or other workload gains,
        so it bounds both classes.
        """
        return self.kind != "nginx" or workload_class == "small_static"


def _ratio(text: str, where: str) -> float:
    """A positive finite ratio from a cell, or InputError naming the cell."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{where}: not a positive ratio: {text!r}")
    return value


def _step(row: dict[str, str], where: str) -> GenerationStep:
    """One CSV row as a `GenerationStep`, every field checked."""
    if row["kind"] not in KINDS:
        raise InputError(f"{where} kind: {row['kind']!r} is not one of {', '.join(KINDS)}")
    tpc = []
    for col in ("subject_tpc", "baseline_tpc"):
        if row[col] not in ("1", "2"):
            raise InputError(f"{where} {col}: {row[col]!r} is not 1 or 2")
        tpc.append(int(row[col]))
    low = _ratio(row["ratio_low"], f"{where} ratio_low") if row["ratio_low"] else None
    high = _ratio(row["ratio_high"], f"{where} ratio_high")
    if low is not None and low > high:
        raise InputError(f"{where}: ratio_low {low} above ratio_high {high}")
    if (low is None) != row["kind"].endswith("_up_to"):
        raise InputError(f"{where}: an 'up to' kind has no ratio_low, a measured one has one")
    return GenerationStep(
        row["step_id"],
        row["subject"],
        row["baseline"],
        tpc[0],
        tpc[1],
        low,
        high,
        row["kind"],
        f"{row['title']} ({row['publisher']}, {row['date']})",
    )


def parse_steps(text: str, name: str = "generation-steps.csv") -> list[GenerationStep]:
    """The steps of a CSV text (`load_steps`'s reader), InputError on a bad row."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != _COLUMNS:
        raise InputError(f"{name}: columns are not {', '.join(_COLUMNS)}")
    return [_step(row, f"{name} line {i}") for i, row in enumerate(reader, start=2)]


@cache
def load_steps(path: Path = STEPS_PATH) -> tuple[GenerationStep, ...]:
    """The shipped published steps, in file order."""
    return tuple(parse_steps(path.read_text(encoding="utf-8"), path.name))


def capped_speed(
    speed: float, baseline_speed: float, step: GenerationStep
) -> tuple[float, float] | None:
    """A speed held to ``baseline_speed x step.high``, and the log sd its range then needs.

    Parameters
    ----------
    speed, baseline_speed : float
        Per-vCPU speeds of the subject and the baseline [reference cores].
    step : GenerationStep
        The published step between them.

    Returns
    -------
    tuple of (float, float) or None
        The capped speed [reference cores] and the log sd [1] at which its 95% range reaches
        back up to ``speed``; None when ``speed`` is within the step (or either speed is not
        a positive finite number).
    """
    if not (math.isfinite(speed) and math.isfinite(baseline_speed) and baseline_speed > 0):
        return None
    cap = baseline_speed * step.high
    if speed <= cap:
        return None
    return cap, math.log(speed / cap) / 1.959964


def step_pairs(
    model: CloudModel, steps: Iterable[GenerationStep]
) -> list[tuple[GenerationStep, str, PlatformSpeed]]:
    """(step, subject speed key, baseline speed) of every fitted speed a step compares.

    Each vCPU kind of the subject is set against the baseline's vCPU kind the step names
    where the kind is the step's own, else against the same kind (a core's step is the same
    whichever kind both are seen as); classes as `GenerationStep.applies_to`.
    """
    out = []
    for step in steps:
        for key, sp in model.speeds.items():
            if sp.platform_id != step.subject or not step.applies_to(sp.workload_class):
                continue
            tpc = (
                step.baseline_tpc
                if sp.threads_per_core == step.subject_tpc
                else sp.threads_per_core
            )
            base = model.speed(step.baseline, tpc, sp.workload_class)
            if base is not None:
                out.append((step, key, base))
    return out
