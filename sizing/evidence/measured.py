"""Capacity from the user's own runs: fits, calibrations against the model, evidence.

A run's trials give, per (instance label, scenario, protocol, size, SLA, vCPUs), the highest
RPS that met the SLA (`sizing.model.datasets.max_rps_under_sla`). Those points become a
`MeasuredSeries`. A series is matched to the catalog by its label (an instance type, or else
a family) and turned into a `Calibration`: the ratio ``k`` of the measured RPS to what the
capacity model predicts for the same family and vCPUs.

- With 3 or more vCPU counts the series has its own fitted curve, which gives the capacity of
  every size of the family directly (its confidence interval widens outside the measured
  range).
- With fewer, the shape is borrowed: a size that was measured takes its measured value; any
  other size takes the nearest measured value moved along the model's curve, and the output
  says so. Each doubling away from the measurement adds an estimated spread
  (`BORROWED_SHAPE_SD_PER_DOUBLING`).
- Families without their own runs get the measured level through the model's relative factors:
  the pooled ``k`` of calibrations whose family has a factor row (measurements of a family the
  model only guesses at are not carried).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sizing.catalog.load import Instance
from sizing.errors import InputError
from sizing.model.capacity import Capacity, binding, model_capacity
from sizing.model.platforms import platform_of
from sizing.workload.value import Workload

if TYPE_CHECKING:
    from sizing.model.curves import CurveFit

#: A row of a fit table or a model comparison: JSON-ready values.
Row = dict[str, object]

BORROWED_SHAPE_SD_PER_DOUBLING = (
    0.05,
    "estimate: a measured level moved to another size along the model's curve gains 5% "
    "(one standard deviation, log scale) of uncertainty per doubling of vCPUs",
)
SINGLE_TRIAL_SD = (
    0.15,
    "estimate: an unrepeated short trial's RPS is taken to vary by 15% (one standard "
    "deviation, log scale) between identical trials (noisy neighbours, turbo, warm-up); "
    "repeated trials (a search's confirmations) measure the spread instead",
)
LOW_SERVER_CPU = (
    0.5,
    "a trial whose server used less than half of the CPU time its vCPUs allow at the answer "
    "was limited by something else (the client, the host, a throttled VM)",
)
METRICS = {
    "cps": ("connections_per_s_under_sla", "rps"),
    "throughput": ("throughput_gbps_under_sla", "throughput_gbps"),
}
DEFAULT_METRIC = ("requests_per_s_under_sla", "rps")


@dataclass
class MeasuredSeries:
    """The best measured RPS under the SLA per vCPU count, for one label and workload."""

    label: str
    scenario: str
    protocol: str
    file_bytes: int
    sla_p99_ms: float
    metric: str
    x: list[float]
    y: list[float]
    sd: list[float]
    repeats: list[int]
    runs: list[str]
    simulated: bool
    fit: CurveFit | None = None
    comparison: list[Row] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def own_shape(self) -> bool:
        """Whether the series has enough vCPU counts (3) for its own curve."""
        return self.fit is not None


def measured_series(dirs: Sequence[str], allow_simulated: bool = False) -> list[MeasuredSeries]:
    """Load run folders and build one `MeasuredSeries` per label and workload.

    Reads the trial tables as rows (`sizing.model.datasets.load_run_rows`) and fits with
    `sizing.model.curves`: neither pandas nor ``scipy.optimize`` is imported.
    """
    from sizing.model import curves
    from sizing.model.datasets import group_rows, load_run_rows, max_rps_rows

    trials = load_run_rows(list(dirs), allow_simulated=allow_simulated)
    out = []
    group = ["instance_label", "scenario", "protocol", "file_bytes", "sla_p99_ms"]
    for key, grp in group_rows(trials, group):
        label, scenario, protocol, file_bytes, sla = (_cell_text(k) for k in key)
        metric, column = METRICS.get(str(scenario), DEFAULT_METRIC)
        answers = sorted(
            (a for a in max_rps_rows(grp, column) if _number(a["max_rps_under_sla"])),
            key=lambda a: float(a["vcpus"]),
        )
        x = [float(a["vcpus"]) for a in answers]
        y = [float(a["max_rps_under_sla"]) for a in answers]
        sd = [float(a["rps_std"]) if _number(a["rps_std"]) else 0.0 for a in answers]
        s = MeasuredSeries(
            label=str(label),
            scenario=str(scenario),
            protocol=str(protocol),
            file_bytes=int(float(file_bytes)),
            sla_p99_ms=float(sla),
            metric=metric,
            x=x,
            y=y,
            sd=sd,
            repeats=[int(a["repeats"]) for a in answers],
            runs=sorted({r["run_id"] for r in grp}),
            simulated=any(bool(r["simulated"]) for r in grp),
        )
        s.warnings = _low_cpu_warnings(grp, x, y)
        if len(set(x)) >= 3:
            with warnings.catch_warnings():
                # Over-parameterised candidates on few points warn; the selection weighs them.
                warnings.simplefilter("ignore")
                sel = curves.select_model(x, y)
            s.fit, s.comparison = sel.best, sel.table
        out.append(s)
    return out


def _number(value: object) -> bool:
    """Whether a cell holds a finite number (not None, NaN or infinite)."""
    return isinstance(value, int | float) and math.isfinite(value)


def _cell_text(value: object) -> str:
    """A group's key as text: an empty cell is ``nan``, a whole count keeps no decimals."""
    return "nan" if value is None else str(value)


def _low_cpu_warnings(
    grp: Sequence[Mapping[str, object]], x: list[float], y: list[float]
) -> list[str]:
    """Flag answers whose server got much less CPU than its vCPUs allow.

    ``grp`` holds the trials (rows with ``vcpus``, ``valid``, ``rps``, ``server_cpu_pct``).
    """
    if not grp or "server_cpu_pct" not in grp[0]:
        return []
    out = []
    for v, rps in zip(x, y, strict=True):
        used = [
            float(r["server_cpu_pct"])  # type: ignore[arg-type]
            for r in grp
            if r["vcpus"] == v
            and r["valid"] is True
            and _number(r["rps"])
            and float(r["rps"]) >= 0.9 * rps  # type: ignore[arg-type]
            and _number(r["server_cpu_pct"])
        ]
        if used and max(used) < LOW_SERVER_CPU[0] * 100.0 * v:
            out.append(
                f"{v:g} vCPUs: the server used at most {max(used) / v:.0f}% of each vCPU "
                f"at the answer; {LOW_SERVER_CPU[1]}"
            )
    return out


def fit_runs(dirs: Sequence[str], allow_simulated: bool = False) -> list[Row]:
    """Fit each measured series; rows in the form of `sizing.fitting.fits.fit_reference`.

    Series with fewer than 3 vCPU counts are listed with their points and no model: their
    shape is borrowed from the reference when they are used for sizing.
    """
    from sizing.model import curves

    rows = []
    for s in measured_series(dirs, allow_simulated):
        row: Row = {
            "metric": s.metric,
            "label": s.label,
            "scenario": s.scenario,
            "protocol": s.protocol,
            "file_size": f"{s.file_bytes} B",
            "file_bytes": s.file_bytes,
            "sla_p99_ms": s.sla_p99_ms,
            "x": s.x,
            "y": s.y,
            "runs": s.runs,
            "simulated": s.simulated,
            "source": "runs " + ", ".join(s.runs) + (" (simulated)" if s.simulated else ""),
            "warnings": s.warnings,
        }
        if s.fit is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pw = curves.fit_curve("power", s.x, s.y, errors="relative")
            lo, hi = pw.param_interval("b", 0.95)
            row.update(
                {
                    "model": s.fit.model,
                    "formula": s.fit.spec.formula,
                    "params": s.fit.params_,
                    "stderr": s.fit.stderr_,
                    "mape_pct": s.fit.mape_pct_,
                    "loo_mape_pct": next(r["loo_mape_pct"] for r in s.comparison if r["selected"]),
                    "aicc": s.fit.aicc_,
                    "criterion": "loo" if len(s.x) < 10 else "aicc",
                    "x_range": list(s.fit.x_range_),
                    "power_exponent": {"b": pw.params_["b"], "low": lo, "high": hi, "level": 0.95},
                    "comparison": s.comparison,
                }
            )
        else:
            row.update(
                {
                    "model": None,
                    "note": f"{len(s.x)} vCPU count(s): too few to fit a curve; sizing borrows "
                    "the reference curve's shape and calibrates its level",
                }
            )
        rows.append(row)
    return rows


@dataclass
class Calibration:
    """One measured series matched to the catalog and set against the model."""

    series: MeasuredSeries
    family: str
    instance: Instance
    k: float
    k_sd: float
    factor_row: bool
    ratios: list[float] = field(default_factory=list)
    ratio_sds: list[float] = field(default_factory=list)

    def describe(self) -> str:
        """One line for an option's basis."""
        s = self.series
        shape = (
            f"own {s.fit.model} curve over {len(s.x)} vCPU counts"
            if s.fit is not None
            else f"shape borrowed from the reference ({len(s.x)} vCPU count(s) measured)"
        )
        sim = " SIMULATED" if s.simulated else ""
        return (
            f"measured{sim}: runs {', '.join(s.runs)} ({s.label}, {s.scenario} {s.protocol} "
            f"{s.file_bytes} B, p99 <= {s.sla_p99_ms:g} ms) at vCPUs "
            f"{', '.join(f'{v:g}' for v in s.x)}: "
            + ", ".join(f"{y:,.0f}" for y in s.y)
            + f" RPS; {shape}; x{self.k:.2f} of the model"
        )


@dataclass
class Evidence:
    """Calibrations for a workload, and the pooled level carried to unmeasured families."""

    calibrations: list[Calibration]
    notes: list[str]
    carry_k: float | None = None
    carry_sd: float = 0.0
    carry_from: list[Calibration] = field(default_factory=list)
    #: What `apply` looks up once per family or CPU rather than once per catalog row.
    _families: dict[str, Calibration | None] = field(
        default_factory=dict, repr=False, compare=False
    )
    _known: dict[tuple[str, str, str], bool] = field(
        default_factory=dict, repr=False, compare=False
    )
    _carried_line: str = field(default="", repr=False, compare=False)

    @property
    def runs(self) -> list[str]:
        """Every run id the evidence rests on."""
        return sorted({r for c in self.calibrations for r in c.series.runs})

    @property
    def simulated(self) -> bool:
        """Whether any of it is simulated."""
        return any(c.series.simulated for c in self.calibrations)

    def for_family(self, family: str) -> Calibration | None:
        """The calibration measured on ``family`` (the one with most vCPU counts)."""
        if family not in self._families:
            own = [c for c in self.calibrations if c.family == family]
            self._families[family] = max(own, key=lambda c: len(c.series.x)) if own else None
        return self._families[family]

    def _known_platform(self, inst: Instance) -> bool:
        """`_known_platform` of a row, asked once per CPU text, architecture and family."""
        key = (inst.cpu, inst.arch, inst.family)
        if key not in self._known:
            self._known[key] = _known_platform(inst)
        return self._known[key]

    def apply(self, cap: Capacity, work: Workload) -> Capacity:
        """The model's capacity with these measurements applied.

        A family with its own runs takes its capacity from them; another family whose CPU
        platform the model knows (not an architecture default) takes the measured level
        through the model's relative speeds.
        """
        inst = cap.instance
        cal = self.for_family(inst.family)
        if cal is not None:
            cpu_sla, rel_sd, line = measured_capacity(cal, inst, cap.cpu_sla_rps)
            lines = [cal.describe(), line, *cal.series.warnings]
            basis = [*lines, *(b for b in cap.basis if not b.startswith("estimate: SLA derating"))]
            measured = "own"
        elif self.carry_k is not None and self._known_platform(inst):
            cpu_sla = cap.cpu_sla_rps * self.carry_k
            rel_sd = math.sqrt(cap.rel_sd**2 + self.carry_sd**2)
            if not self._carried_line:
                self._carried_line = (
                    f"measured level carried through the model's relative speeds: "
                    f"x{self.carry_k:.2f} of the model, from runs {', '.join(self.runs)} on "
                    + ", ".join(sorted({c.family for c in self.carry_from}))
                    + (" (SIMULATED)" if self.simulated else "")
                )
            basis = [self._carried_line, *cap.basis]
            measured = "carried"
        else:
            return cap
        capacity = min(cpu_sla, cap.network_rps)
        return replace(
            cap,
            capacity_rps=capacity,
            cpu_sla_rps=cpu_sla,
            binding_constraint=binding(cpu_sla, cap.network_rps, cap.outside),
            basis=basis,
            rel_sd=rel_sd,
            measured=measured,
        )


def _known_platform(inst: Instance) -> bool:
    return not platform_of(inst).platform_id.endswith("-default")


def catalog_for(
    series: Sequence[MeasuredSeries],
    instances: Sequence[Instance],
    whole: Callable[[], Sequence[Instance]],
) -> Sequence[Instance]:
    """The catalog rows to match the series' labels against (`build_evidence`).

    ``instances`` (the rows the request selected) when every label names one of their
    instance types or families, else ``whole()`` (the whole catalog, every region: about ten
    times the rows, a tenth of a second to read), so that a filter never hides the measured
    type. Both give the same family and the same model capacities for a label the
    selection holds: a type's CPU, architecture and model capacity do not depend on its
    region (``tests/test_measured.py`` checks this for every label of the default regions).
    """
    names = {i.instance_type.lower() for i in instances} | {i.family.lower() for i in instances}
    if instances and all(s.label and s.label.lower() in names for s in series):
        return instances
    return whole()


def _match(label: str, instances: Sequence[Instance], runs: list[str]) -> tuple[Instance, str]:
    if not label:
        raise InputError(
            f"runs {', '.join(runs)} have no instance_label; measure with --label TYPE so they "
            "can be matched to the catalog"
        )
    low = label.lower()
    for i in instances:
        if i.instance_type.lower() == low:
            return i, i.family
    fam = [i for i in instances if i.family.lower() == low]
    if fam:
        return min(fam, key=lambda i: i.vcpus), fam[0].family
    raise InputError(
        f"runs {', '.join(runs)}: label {label!r} is neither an instance type nor a family of "
        "the catalog; add this machine with --catalog FILE (same columns as "
        "data/catalog/instances.csv, instance_type = the label)"
    )


def build_evidence(
    series: Sequence[MeasuredSeries], instances: Sequence[Instance], work: Workload
) -> Evidence:
    """Match each series that measured ``work`` to the catalog and calibrate it."""
    cals, notes = [], []
    for s in series:
        same = (s.scenario, s.protocol, s.file_bytes) == (
            work.scenario,
            work.protocol,
            work.file_bytes,
        )
        if not same:
            notes.append(
                f"runs {', '.join(s.runs)} measured {s.scenario} {s.protocol} {s.file_bytes} B; "
                f"the request is {work.scenario} {work.protocol} {work.file_bytes} B: not used"
            )
            continue
        if not math.isclose(s.sla_p99_ms, work.sla_p99_ms):
            notes.append(
                f"runs {', '.join(s.runs)} measured under p99 <= {s.sla_p99_ms:g} ms; the "
                f"request asks {work.sla_p99_ms:g} ms: not used"
            )
            continue
        if not s.x:
            notes.append(f"runs {', '.join(s.runs)}: no trial met the SLA: not used")
            continue
        inst, family = _match(s.label, instances, s.runs)
        models = [model_capacity(replace(inst, vcpus=int(v)), work).cpu_sla_rps for v in s.x]
        if min(models) <= 0 or min(s.y) <= 0:
            notes.append(
                f"runs {', '.join(s.runs)}: the model has no capacity under p99 <= "
                f"{work.sla_p99_ms:g} ms to compare with (the SLA is at or below its base "
                "latency): not used"
            )
            continue
        logs, sds = [], []
        for y, sd, n, model in zip(s.y, s.sd, s.repeats, models, strict=True):
            logs.append(math.log(y / model))
            if n <= 1:
                sds.append(SINGLE_TRIAL_SD[0])
            else:
                sds.append(sd / y / math.sqrt(n))
        k = math.exp(sum(logs) / len(logs))
        spread = (
            math.sqrt(sum((v - math.log(k)) ** 2 for v in logs) / (len(logs) - 1))
            if len(logs) > 1
            else 0.0
        )
        k_sd = math.sqrt(spread**2 / len(logs) + (sum(sds) / len(sds)) ** 2)
        cals.append(
            Calibration(
                s, family, inst, k, k_sd, _known_platform(inst), [math.exp(v) for v in logs], sds
            )
        )
    ev = Evidence(cals, notes)
    carriers = [c for c in cals if c.factor_row]
    if carriers:
        ev.carry_k = math.exp(sum(math.log(c.k) for c in carriers) / len(carriers))
        ev.carry_sd = math.sqrt(sum(c.k_sd**2 for c in carriers) / len(carriers))
        ev.carry_from = carriers
    return ev


def measured_capacity(
    cal: Calibration, inst: Instance, model_cpu_sla: float
) -> tuple[float, float, str]:
    """CPU capacity under the SLA of ``inst`` from its family's calibration.

    Returns the capacity [1/s], its log-scale standard deviation, and a basis line.
    """
    s = cal.series
    v = float(inst.vcpus)
    if s.fit is not None:
        point = float(s.fit.predict([v])[0])
        if not point > 0:
            return 0.0, 0.0, f"{inst.vcpus} vCPUs: the measured curve gives no capacity there"
        lo, hi = s.fit.predict_interval([v], level=0.95, kind="confidence")
        sd = max(math.log(max(hi[0], point) / point), math.log(point / max(lo[0], 1e-9))) / 1.96
        sd = math.sqrt(sd**2 + cal.k_sd**2)
        where = (
            "inside the measured vCPUs"
            if min(s.x) <= v <= max(s.x)
            else f"extrapolated from {min(s.x):g}-{max(s.x):g} vCPUs"
        )
        return point, sd, f"{inst.vcpus} vCPUs from the measured curve ({where})"
    # Anchor on the nearest measured vCPU count; move along the model's curve from there.
    i = min(range(len(s.x)), key=lambda j: abs(math.log2(v / s.x[j])))
    doublings = abs(math.log2(v / s.x[i]))
    ratio = cal.ratios[i] if cal.ratios else cal.k
    anchor_sd = cal.ratio_sds[i] if cal.ratio_sds else cal.k_sd
    shape_sd = BORROWED_SHAPE_SD_PER_DOUBLING[0] * doublings
    sd = math.sqrt(anchor_sd**2 + shape_sd**2)
    if doublings == 0:
        if s.repeats[i] <= 1:
            return (
                s.y[i],
                sd,
                f"{inst.vcpus} vCPUs: measured by one unrepeated trial ({SINGLE_TRIAL_SD[1]})",
            )
        return s.y[i], sd, f"{inst.vcpus} vCPUs: measured directly ({s.repeats[i]} trials)"
    return (
        ratio * model_cpu_sla,
        sd,
        f"{inst.vcpus} vCPUs: the measured {s.x[i]:g}-vCPU value moved along the model's curve "
        f"(shape borrowed, {doublings:.1f} doublings; {BORROWED_SHAPE_SD_PER_DOUBLING[1]})",
    )
