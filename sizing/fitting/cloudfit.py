"""Platform speeds and deployment-environment costs fitted to published cloud measurements.

The reference costs (`sizing.model.costmodel`) were measured on one bare-metal Haswell core.
What a request costs on the machines people rent is fitted here to the published per-instance
measurements in ``data/cloud/measurements.csv`` (`sizing.fitting.cloudtruth`), in two stages:

1. **Relative per-vCPU speed, per workload class.** For each class (``small_static``: bodies
   under 16 KB; ``large_static``: 16 KB and up), every observation's CPU time per request on
   one vCPU, ``t`` [us], is explained as ``ln t = a[source, body, protocol] - b[platform,
   threads per core] + e``: one level per harness and body size (the server program, the
   client's placement and the body are the harness's, not the CPU's) and one speed per
   platform and vCPU kind. Least squares; ``e`` is the scatter between instance types of one
   platform. Where a platform is seen both as whole cores and as hyper-threads, the
   difference is the SMT gain of that class: ``g = 2 exp(b[p, 2] - b[p, 1])``.
2. **Absolute level and environment.** The speeds are put on the reference core's scale at an
   anchor platform (Haswell, the reference's own core, if present): a hyper-thread of it is
   worth ``g / 2`` reference cores, times a clock factor with a 10% prior. Then every NGINX
   observation (a real NGINX, not a stand-in server) gives the environment's extra CPU time
   per request: ``E = t V - C(w)``, where ``V`` is the vCPU's speed and ``C(w)`` the reference
   cost of its workload. The median over observations is the environment's ``request_us``.

The spread of a prediction has four parts, each reported: the platform speed's standard
error, the scatter between instance types of a platform (``within_sd``), the disagreement
between independent sources on the same instance type (``between_source_sd``: each source's
residual for an instance type it shares with another source), and the anchor and environment
terms' errors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sizing.catalog.load import load_catalog
from sizing.errors import InputError
from sizing.fitting.cloudtruth import load_cloud_measurements
from sizing.model.cloud import (
    ANCHOR_CLOCK,
    ANCHORS,
    CLASSES,
    CLOUD_MODEL_PATH,
    ENVIRONMENT_OF_HARNESS,
    K8S_EXTRA_US,
    SMT_PRIOR,
    VM_PACKET_US,
    CloudModel,
    EnvTerm,
    PlatformSpeed,
    speed_for,
    workload_class,
)
from sizing.model.costmodel import cpu_us_per_request, reference_profile
from sizing.model.platforms import WHOLE_CORE_FAMILIES, platform_of, platforms
from sizing.model.steps import GenerationStep, capped_speed, load_steps, step_pairs
from sizing.units import finite_json
from sizing.workload.value import Workload
from trialtable.files import write_atomic

__all__ = [
    "cap_to_steps",
    "fit_cloud_model",
    "observations",
    "precompute_cloud_model",
    "predict",
    "reference_cost_us",
]


@cache
def reference_cost_us(body_bytes: float, protocol: str, features: str = "") -> float:
    """CPU time of one request on the reference core, bare metal, keep-alive [us].

    The seed-004 coefficients (`sizing.model.costmodel.reference_profile`) without any
    packet or environment term, plus the measured cost of the source's configuration
    ``features`` (space-separated names, each once per request; `sizing.fitting.cloudtruth`),
    as `sizing` charges a user's: what the source's config costs is then not fitted into the
    platform speeds or the environment's term.
    """
    from sizing.model.capacity import features_profile

    feats = tuple((name, 1.0) for name in features.split())
    work = Workload(protocol=protocol, file_bytes=int(body_bytes), features=feats)
    prof, _ = features_profile(reference_profile(), work)
    return cpu_us_per_request(work, prof, over_nic=False).us


def _cost_us(r: Any) -> float:
    """`reference_cost_us` of an observation (a row of `observations`)."""
    features = r.features if isinstance(r.features, str) else ""
    return reference_cost_us(float(r.body_bytes), str(r.protocol), features)


def _threads_per_core(catalog_tpc: Mapping[str, int], inst: str, platform: str) -> int:
    if inst in catalog_tpc:
        return catalog_tpc[inst]
    if any(inst.startswith(f) for f in WHOLE_CORE_FAMILIES):
        return 1
    known = platforms()
    return known[platform].threads_per_core if platform in known else 2


def catalog_threads_per_core() -> dict[str, int]:
    """VCPUs per core of every instance type in the shipped catalog (all regions)."""
    out: dict[str, int] = {}
    for inst in load_catalog():
        if inst.instance_type not in out:
            out[inst.instance_type] = platform_of(inst).threads_per_core
    return out


#: Rows of machines with more vCPUs than this place no platform: a client on the same VM,
#: loopback and the kernel's shared locks dominate there (CPU time per request rises 2-100x
#: from 16 to 192 vCPUs in the same family), which is the worker-scaling term's business.
MAX_VCPUS = 16
#: Platforms built on the same core as another (the NGINX shift of one carries to the other).
SAME_CORE = {"graviton3e": "graviton3", "axion": "graviton4", "altra": "graviton2"}
#: The machine size [vCPUs] at which harness levels are stated (see `_relative_speeds`).
SIZE_CENTRE = 4.0
#: Residuals beyond this many robust sds (1.4826 x MAD) are screened out, then the fit is redone.
OUTLIER_SDS = 3.5


def observations(
    df: pd.DataFrame,
    catalog_tpc: Mapping[str, int] | None = None,
    max_vcpus: int = MAX_VCPUS,
) -> pd.DataFrame:
    """One row per (source, instance type, body, protocol): CPU time per request on one vCPU.

    ``cpu_us_per_request`` rows (the server's own CPU time) give it directly: the median
    over connection settings. ``rps`` rows of a harness whose client ran elsewhere give it as
    ``vcpus x 1e6 / highest RPS`` (every vCPU busy serving at the highest load measured).
    ``rps`` rows of a client on the same VM give nothing (the VM's time was shared).
    Machines with more than ``max_vcpus`` vCPUs are left out (`MAX_VCPUS`). Each row keeps
    its source's configuration ``features`` (empty where the table has none).
    """
    df = df[df["vcpus"] <= max_vcpus]
    if "features" not in df.columns:
        df = df.assign(features="")
    tpc = dict(catalog_tpc) if catalog_tpc is not None else catalog_threads_per_core()
    keys = ["source_id", "server", "provider", "instance_type", "cpu_platform", "vcpus"]
    keys += ["workload_class", "body_bytes", "protocol", "container", "client_placement"]
    keys += ["features"]
    rows: list[dict[str, Any]] = []
    for key, grp in df.groupby(keys, sort=True, dropna=False):
        rec: dict[str, Any] = dict(zip(keys, key, strict=True))
        cpu = grp[grp["metric"] == "cpu_us_per_request"]["value"]
        rps = grp[grp["metric"] == "rps"]["value"]
        if len(cpu):
            t = float(np.median(cpu))
            how = "server CPU time"
        elif len(rps) and rec["client_placement"] != "same_vm":
            t = float(rec["vcpus"]) * 1e6 / float(rps.max())
            how = "vCPUs / highest RPS"
        else:
            continue
        rec["t_us"] = t
        rec["how"] = how
        rec["threads_per_core"] = _threads_per_core(tpc, rec["instance_type"], rec["cpu_platform"])
        rec["environment"] = ENVIRONMENT_OF_HARNESS.get(
            (rec["container"], rec["client_placement"]), ""
        )
        rows.append(rec)
    out = pd.DataFrame(rows)
    if out.empty:
        raise InputError("cloud measurements: no row gives a CPU time per request")
    out["wclass"] = [workload_class(b) for b in out["body_bytes"]]
    return out


def _relative_speeds(
    obs: pd.DataFrame,
) -> tuple[
    dict[tuple[str, int], tuple[float, float]],
    np.ndarray,
    float,
    dict[tuple[str, int, str], float],
    dict[str, float],
]:
    """Stage 1 for one class: ``b[platform, tpc]`` (relative, log) with standard errors.

    Also returns the residuals, their sd, the harness levels and each sized harness's slope
    in log2(vCPUs / SIZE_CENTRE).
    """
    rows: list[Any] = list(obs.itertuples())
    levels = sorted({(str(r.source_id), int(r.body_bytes), str(r.protocol)) for r in rows})
    groups = sorted({(str(r.cpu_platform), int(r.threads_per_core)) for r in rows})
    li = {k: i for i, k in enumerate(levels)}
    gi = {k: i for i, k in enumerate(groups)}
    # A harness measured on several machine sizes gets a slope in log2(vCPUs), centred at
    # SIZE_CENTRE: its CPU time per request moves with the size (a client on the same VM,
    # loopback), and platforms measured mostly small or mostly large would otherwise absorb it.
    sized = sorted(str(s) for s, v in obs.groupby("source_id")["vcpus"].nunique().items() if v > 1)
    si = {s: i for i, s in enumerate(sized)}
    n, p = len(obs), len(levels) + len(groups) - 1 + len(sized)
    x = np.zeros((n, p))
    y = np.log(obs["t_us"].to_numpy(dtype=float))
    for row, r in enumerate(rows):
        x[row, li[(str(r.source_id), int(r.body_bytes), str(r.protocol))]] = 1.0
        gnum = gi[(str(r.cpu_platform), int(r.threads_per_core))]
        if gnum > 0:  # the first group is the zero of the relative scale
            x[row, len(levels) + gnum - 1] = -1.0
        if str(r.source_id) in si:
            col = len(levels) + len(groups) - 1 + si[str(r.source_id)]
            x[row, col] = math.log2(float(r.vcpus) / SIZE_CENTRE)
    keep = np.ones(n, dtype=bool)
    for _ in range(3):
        coef, *_ = np.linalg.lstsq(x[keep], y[keep], rcond=None)
        resid = y - x @ coef
        mad = 1.4826 * float(np.median(np.abs(resid[keep] - np.median(resid[keep]))))
        new = np.abs(resid) <= OUTLIER_SDS * max(mad, 1e-6)
        if (new == keep).all():
            break
        keep = new
    dof = max(int(keep.sum()) - np.linalg.matrix_rank(x[keep]), 1)
    s2 = float(resid[keep] @ resid[keep]) / dof
    cov = s2 * np.linalg.pinv(x[keep].T @ x[keep])
    resid = np.where(keep, resid, np.nan)
    out: dict[tuple[str, int], tuple[float, float]] = {groups[0]: (0.0, 0.0)}
    for g, i in gi.items():
        if i > 0:
            j = len(levels) + i - 1
            out[g] = (float(coef[j]), math.sqrt(max(float(cov[j, j]), 0.0)))
    lv = {(str(k[0]), int(str(k[1])), str(k[2])): float(coef[i]) for k, i in li.items()}
    slopes = {src: float(coef[len(levels) + len(groups) - 1 + i]) for src, i in si.items()}
    return out, resid, math.sqrt(s2), lv, slopes


def _between_sources(obs: pd.DataFrame, resid: np.ndarray) -> tuple[float, int]:
    """Sd of one source's residual for an instance type another source also measured."""
    frame = obs[["source_id", "instance_type"]].copy()
    frame["r"] = resid
    frame = frame.dropna()
    per = frame.groupby(["instance_type", "source_id"])["r"].mean().reset_index()
    diffs: list[float] = []
    for _, grp in per.groupby("instance_type"):
        if grp["source_id"].nunique() < 2:
            continue
        r = grp["r"].to_numpy()
        diffs.extend(float(a - b) for i, a in enumerate(r) for b in r[i + 1 :])
    if not diffs:
        return 0.0, 0
    return math.sqrt(float(np.mean(np.square(diffs))) / 2.0), len(diffs)


@dataclass
class _Relative:
    """Stage 1 of every class: relative speeds, harness levels, scatter and size slopes."""

    rel: dict[str, dict[tuple[str, int], tuple[float, float]]] = field(default_factory=dict)
    raw_levels: dict[str, dict[tuple[str, int, str], float]] = field(default_factory=dict)
    within: dict[str, float] = field(default_factory=dict)
    between_sd: float = 0.0
    pairs: int = 0
    size_slopes: dict[str, float] = field(default_factory=dict)


def _relative_by_class(train: pd.DataFrame) -> _Relative:
    """Stage 1 for each workload class, and the scatter between sources over all of them."""
    out = _Relative()
    between: list[tuple[float, int]] = []
    for cls in CLASSES:
        sub = train[train["wclass"] == cls]
        if sub.empty:
            continue
        out.rel[cls], resid, out.within[cls], out.raw_levels[cls], slopes = _relative_speeds(sub)
        out.size_slopes.update({f"{src}|{cls}": b for src, b in slopes.items()})
        between.append(_between_sources(sub, resid))
    out.pairs = sum(n for _, n in between)
    out.between_sd = (
        math.sqrt(sum(sd**2 * n for sd, n in between) / out.pairs)
        if out.pairs
        else out.within.get("small_static", 0.3)
    )
    return out


def _smt_gains(
    rel: dict[str, dict[tuple[str, int], tuple[float, float]]],
) -> dict[str, tuple[float, float, str]]:
    """SMT gain per class from platforms measured both ways (else the prior): gain, sd, why."""
    smt: dict[str, tuple[float, float, str]] = {}
    for cls, by_group in rel.items():
        gains = []
        for (pid, tpc), (b2, se2) in by_group.items():
            if tpc == 2 and (pid, 1) in by_group:
                b1, se1 = by_group[(pid, 1)]
                gains.append((pid, 2.0 * math.exp(b2 - b1), math.hypot(se1, se2)))
        if gains:
            lg = np.log([g for _, g, _ in gains])
            g = float(np.exp(lg.mean()))
            sd = float(np.std(lg, ddof=1)) if len(gains) > 1 else gains[0][2]
            sd = max(sd, float(np.mean([s for _, _, s in gains])))
            smt[cls] = (
                g,
                g * sd,
                "fitted: per-vCPU speed of "
                + ", ".join(pid for pid, _, _ in gains)
                + " as whole cores and as hyper-threads",
            )
        else:
            smt[cls] = SMT_PRIOR[0], SMT_PRIOR[1], SMT_PRIOR[2]
    return smt


def _absolute_speeds(
    train: pd.DataFrame,
    stage1: _Relative,
    smt: dict[str, tuple[float, float, str]],
    anchor: str,
) -> tuple[dict[str, PlatformSpeed], dict[str, float], dict[str, float]]:
    """Stage 2's scale at the anchor platform: speeds, harness levels and anchor sds by class."""
    known = platforms()
    speeds: dict[str, PlatformSpeed] = {}
    levels: dict[str, float] = {}
    anchor_sds: dict[str, float] = {}
    counts = train.groupby(["cpu_platform", "threads_per_core"])["instance_type"].nunique()
    srcs = train.groupby(["cpu_platform", "threads_per_core", "wclass"])["source_id"].unique()
    anchor_core = known[anchor].core_speed if anchor in known else 1.0
    for cls, speeds_rel in stage1.rel.items():
        g, g_sd, _ = smt[cls]
        if (anchor, 2) in speeds_rel:
            base_b, base_se = speeds_rel[(anchor, 2)]
            anchor_v = anchor_core * ANCHOR_CLOCK[0] * g / 2.0
            anchor_sd = math.hypot(ANCHOR_CLOCK[1], g_sd / g)
        else:
            base_b, base_se = speeds_rel[(anchor, 1)]
            anchor_v = anchor_core * ANCHOR_CLOCK[0]
            anchor_sd = ANCHOR_CLOCK[1]
        anchor_sds[cls] = anchor_sd
        for (src, body, proto), a in stage1.raw_levels[cls].items():
            # t = L / V: the harness's CPU time per request on one reference core [us].
            levels[f"{src}|{body}|{proto}"] = math.exp(a - base_b) * anchor_v
        for (pid, tpc), (b, se) in speeds_rel.items():
            key = CloudModel.key(pid, tpc, cls)
            speeds[key] = PlatformSpeed(
                pid,
                tpc,
                cls,
                anchor_v * math.exp(b - base_b),
                math.hypot(se, base_se) if (pid, tpc) != (anchor, 2) else 0.0,
                int(counts.get((pid, tpc), 0)),
                sorted(str(s) for s in srcs.get((pid, tpc, cls), [])),
            )
    return speeds, levels, anchor_sds


def fit_cloud_model(
    obs: pd.DataFrame,
    exclude_sources: Collection[str] = (),
    exclude_platforms: Collection[str] = (),
) -> CloudModel:
    """Fit the cloud model to `observations`, leaving out whole sources or platforms.

    Parameters
    ----------
    obs : DataFrame
        From `observations`.
    exclude_sources, exclude_platforms : collection of str
        Held out of every stage of the fit (leave-one-out benchmarks).
    """
    train = obs[
        ~obs["source_id"].isin(list(exclude_sources))
        & ~obs["cpu_platform"].isin(list(exclude_platforms))
    ]
    if train.empty:
        raise InputError("cloud model: nothing left to fit after the exclusions")
    stage1 = _relative_by_class(train)
    rel = stage1.rel
    smt = _smt_gains(rel)
    # Absolute scale at the anchor platform.
    anchor = next(
        (a for a in ANCHORS if all((a, 2) in rel[c] or (a, 1) in rel[c] for c in rel)), ""
    )
    if not anchor:
        raise InputError("cloud model: no anchor platform (Haswell to Cascade Lake) in the data")
    speeds, levels, anchor_sds = _absolute_speeds(train, stage1, smt, anchor)
    model = CloudModel(
        speeds=speeds,
        smt_gain=smt,
        environments={},
        within_sd=stage1.within,
        between_source_sd=stage1.between_sd,
        between_source_pairs=stage1.pairs,
        anchor=anchor,
        fitted_on=sorted(train["source_id"].unique()),
        held_out=sorted({*exclude_sources, *(f"platform:{p}" for p in exclude_platforms)}),
        levels=levels,
        anchor_sd=anchor_sds,
        size_slopes=stage1.size_slopes,
    )
    model.environments = _environments(train, model)
    # Stage 3a: a hyper-thread's worth to NGINX serving a client on another machine is not
    # the stand-in's (whose client shares the VM's cores): one shift of every hyper-thread
    # speed, from the real-NGINX rows where they place both kinds, with the prior's weight.
    _smt_shift(train, model)
    model.environments = _environments(train, model)
    # Stage 3b: where real NGINX measured a platform, its speed follows NGINX, not the stand-in
    # server (their platform ratios differ: Graviton2 and Ice Lake most). The shift is the
    # mean log residual of the platform's NGINX rows, shrunk by n / (n + 1); the environment
    # level is then refitted. Twice, as each moves the other a little.
    gap_sd, gap_n = stand_in_gap(_nginx_residuals(train, model))
    for _ in range(2):
        _shift_to_nginx(train, model)
        model.environments = _environments(train, model)
    _widen_stand_in(train, model, gap_sd, gap_n)
    # Stage 4: a stand-in-only speed past a published generation step is held to it.
    cap_to_steps(model, load_steps())
    return model


def stand_in_gap(resid: Mapping[str, list[tuple[str, float]]]) -> tuple[float, int]:
    """Log sd of the gap between the stand-in server's speed and real NGINX's, per platform.

    For each platform speed that real NGINX measured (`_nginx_residuals`, taken before
    stage 3b moves the speeds), its shift is the mean of ``ln(predicted / measured)`` over
    its NGINX rows: how far NGINX places the platform from where the stand-in server (a
    static server that is not NGINX, its client on the same VM) placed it, after the common
    SMT shift and environment level. The figure is the root mean square of those shifts
    over the platforms: what a speed fitted to the stand-in alone may be off by. Only the
    rows of the fit enter (a held-out source or platform is not in ``resid``). On the
    shipped data: 0.17 over 10 platform speeds (small bodies; the large-body class has no
    NGINX rows). It includes the instance-type scatter of a few rows per platform, so it
    errs wide.

    Parameters
    ----------
    resid : mapping
        Speed key -> (instance type, log residual) of each real-NGINX row.

    Returns
    -------
    tuple of (float, int)
        The log sd [1] (0.0 when no platform has NGINX rows) and the platforms behind it.
    """
    shifts = [float(np.mean([x for _, x in rows])) for rows in resid.values() if rows]
    if not shifts:
        return 0.0, 0
    return math.sqrt(float(np.mean(np.square(shifts)))), len(shifts)


def _widen_stand_in(train: pd.DataFrame, model: CloudModel, gap_sd: float, gap_n: int) -> None:
    """Mark the speeds no real-NGINX row placed and widen their log sd by the gap."""
    nginx = train[train["server"] == "nginx"]
    measured = {
        CloudModel.key(str(p), int(t), str(c))
        for p, t, c in zip(
            nginx["cpu_platform"], nginx["threads_per_core"], nginx["wclass"], strict=True
        )
    }
    for key, sp in list(model.speeds.items()):
        if key not in measured:
            model.speeds[key] = replace(
                sp, rel_sd=math.hypot(sp.rel_sd, gap_sd), stand_in_only=True, stand_in_sd=gap_sd
            )
    model.stand_in_gap_sd, model.stand_in_gap_platforms = round(gap_sd, 4), gap_n


def cap_to_steps(model: CloudModel, steps: Collection[GenerationStep]) -> None:
    """Hold each stand-in-only speed to its published step over the generation before.

    For every step (`sizing.model.steps`), class it speaks of and vCPU kind of the subject,
    where the subject's speed rests on the stand-in server alone and its ratio to the
    baseline's speed (`step_pairs`) passes the step's upper bound, the speed becomes
    ``baseline x high`` and its log sd grows until the 95% range reaches back to the
    stand-in's figure. A speed real NGINX measured is never moved
    (`sizing.fitting.speedcheck.step_checks` reports it).
    """
    for step, key, base in step_pairs(model, steps):
        sp = model.speeds[key]
        if not sp.stand_in_only or sp.capped_by:
            continue
        # the baseline as it stands now: held itself by an earlier step, its held speed
        base = model.speed(base.platform_id, base.threads_per_core, base.workload_class) or base
        capped = capped_speed(sp.speed, base.speed, step)
        if capped is None:
            continue
        speed, sd = capped
        model.speeds[key] = replace(
            sp,
            speed=speed,
            rel_sd=max(sp.rel_sd, sd),
            cap_shift=math.log(speed / sp.speed),
            capped_by=(
                f"held to x{step.high:.2f} of {step.baseline} (was {sp.speed:.3g}, "
                f"x{sp.speed / base.speed:.2f}): {step.step_id}, {step.source}; "
                "data/platforms/generation-steps.csv"
            ),
        )


def _nginx_residuals(train: pd.DataFrame, model: CloudModel) -> dict[str, list[tuple[str, float]]]:
    """ln(predicted / measured) of each real-NGINX row, per platform speed key."""
    resid: dict[str, list[tuple[str, float]]] = {}
    r: Any
    for r in train[(train["server"] == "nginx") & (train["environment"] != "")].itertuples():
        key = CloudModel.key(str(r.cpu_platform), int(r.threads_per_core), str(r.wclass))
        sp = model.speeds.get(key)
        env = model.environments.get(str(r.environment))
        if sp is None or env is None:
            continue
        level = _cost_us(r) + env.request_us
        pred = level / sp.speed
        resid.setdefault(key, []).append((str(r.instance_type), math.log(pred / float(r.t_us))))
    return resid


def _smt_shift(train: pd.DataFrame, model: CloudModel) -> None:
    """Stage 3a: the hyper-thread speeds of every platform, moved to real NGINX's SMT gain.

    Per class, the data's estimate is the mean log residual of the hyper-thread platforms'
    NGINX rows less that of the whole-core platforms' (a common level error cancels), with
    its standard error from the platforms' scatter; it is combined with the prior
    ``ln(SMT_PRIOR / fitted gain)`` by their precisions. Without real NGINX on both kinds the
    prior alone moves the speeds. The shift's sd joins every hyper-thread speed's sd.
    """
    resid = _nginx_residuals(train, model)
    for cls, (g, g_sd, why) in list(model.smt_gain.items()):
        by_kind: dict[int, list[float]] = {1: [], 2: []}
        for key, rows in resid.items():
            _, tpc, kcls = key.split("|")
            if kcls == cls:
                by_kind[int(tpc)].append(float(np.mean([x for _, x in rows])))
        prior = math.log(SMT_PRIOR[0] / g)
        prior_sd = math.hypot(SMT_PRIOR[1] / SMT_PRIOR[0], g_sd / g)
        ht, wc = by_kind[2], by_kind[1]
        if len(ht) >= 2 and len(wc) >= 2:
            data = float(np.mean(ht) - np.mean(wc))
            data_se = math.sqrt(
                float(np.var(ht, ddof=1)) / len(ht) + float(np.var(wc, ddof=1)) / len(wc)
            )
            data_se = max(data_se, 0.02)
            w_p, w_d = 1.0 / prior_sd**2, 1.0 / data_se**2
            shift = (prior * w_p + data * w_d) / (w_p + w_d)
            shift_sd = math.sqrt(1.0 / (w_p + w_d))
            how = (
                f"{len(ht)} hyper-thread and {len(wc)} whole-core platforms measured with real "
                f"NGINX (x{math.exp(data):.2f} +- {data_se:.2f}) and the prior ({SMT_PRIOR[2]})"
            )
        else:
            shift, shift_sd = prior, prior_sd
            how = f"no real NGINX on both kinds: the prior ({SMT_PRIOR[2]})"
        for key, sp in list(model.speeds.items()):
            if sp.workload_class == cls and sp.threads_per_core == 2:
                model.speeds[key] = replace(
                    sp,
                    speed=sp.speed * math.exp(shift),
                    rel_sd=math.hypot(sp.rel_sd, shift_sd),
                    smt_shift=sp.smt_shift + shift,
                )
        gain = g * math.exp(shift)
        model.smt_gain[cls] = (
            gain,
            gain * math.hypot(g_sd / g, shift_sd),
            f"{why} ({g:.2f} for the stand-in server with its client on the same VM), "
            f"x{math.exp(shift):.2f} for NGINX serving clients elsewhere: {how}",
        )


def _shift_to_nginx(train: pd.DataFrame, model: CloudModel) -> None:
    """Move each platform's speed towards its real-NGINX rows (see `fit_cloud_model`)."""
    resid = _nginx_residuals(train, model)
    shifts: dict[str, tuple[float, int]] = {}
    for key, rows in resid.items():
        n = len({inst for inst, _ in rows})
        shifts[key] = float(np.mean([x for _, x in rows])) * n / (n + 1.0), n
    # A platform with the same core takes the shift of one NGINX measured (where it has none).
    for key in list(model.speeds):
        pid, tpc, cls = key.split("|")
        twin = CloudModel.key(SAME_CORE.get(pid, ""), int(tpc), cls)
        if key not in shifts and twin in shifts:
            shifts[key] = shifts[twin]
    for key, (shift, n) in shifts.items():
        sp = model.speeds[key]
        model.speeds[key] = replace(
            sp,
            speed=sp.speed * math.exp(shift),
            nginx_shift=sp.nginx_shift + shift,
            nginx_types=n,
        )


def _environments(train: pd.DataFrame, model: CloudModel) -> dict[str, EnvTerm]:
    """Stage 2: each environment's extra CPU time per request, from real NGINX rows."""
    extra: dict[str, list[float]] = {}
    srcs: dict[str, set[str]] = {}
    r: Any
    for r in train[(train["server"] == "nginx") & (train["environment"] != "")].itertuples():
        sp = model.speed(str(r.cpu_platform), int(r.threads_per_core), str(r.wclass))
        if sp is None:
            continue
        cost = _cost_us(r)
        extra.setdefault(str(r.environment), []).append(float(r.t_us) * sp.speed - cost)
        srcs.setdefault(str(r.environment), set()).add(str(r.source_id))
    out: dict[str, EnvTerm] = {
        "bare-metal": EnvTerm(
            "bare-metal",
            0.0,
            0.0,
            0.0,
            0.0,
            "the reference costs' own setting (seed 004: NGINX on bare metal over 2x 40 GbE)",
        )
    }
    for env, values in extra.items():
        v = np.asarray(values)
        med = float(np.median(v))
        se_fit = 1.2533 * float(np.std(v, ddof=1)) / math.sqrt(len(v)) if len(v) > 1 else med
        out[env] = EnvTerm(
            env,
            med,
            se_fit,
            VM_PACKET_US[0],
            VM_PACKET_US[1],
            f"fitted: median over {len(v)} NGINX instance measurement(s) of "
            f"{', '.join(sorted(srcs[env]))} of (CPU time per request x vCPU speed - the "
            f"reference cost); per packet: {VM_PACKET_US[2]}",
            len(v),
            True,
        )
    k, k_sd, k_why = K8S_EXTRA_US
    if "vm" not in out and "kubernetes" in out:
        kube = out["kubernetes"]
        floor = (
            f"; held at 0: the fitted kubernetes term ({kube.request_us:.1f} us) is below the "
            "pod path's central value, so a VM is not charged below bare metal"
            if kube.request_us < k
            else ""
        )
        out["vm"] = EnvTerm(
            "vm",
            max(kube.request_us - k, 0.0),
            math.hypot(kube.request_stderr, k_sd),
            VM_PACKET_US[0],
            VM_PACKET_US[1],
            f"the kubernetes term less the pod network path ({k_why}){floor}; kubernetes: "
            f"{kube.source}",
            0,
            True,
        )
    if "kubernetes" not in out and "vm" in out:
        vm = out["vm"]
        out["kubernetes"] = EnvTerm(
            "kubernetes",
            vm.request_us + k,
            math.hypot(vm.request_stderr, k_sd),
            vm.packet_us,
            vm.packet_stderr,
            f"the vm term plus the pod network path ({k_why}); vm: {vm.source}",
            0,
            vm.anchored,
        )
    if "vm" not in out:
        out["vm"] = EnvTerm(
            "vm",
            8.0,
            6.0,
            VM_PACKET_US[0],
            VM_PACKET_US[1],
            "estimate: no NGINX measurement in the fit; a VM's exits and interrupt path "
            "(0-20 us on the reference core, 95%)",
        )
        out["kubernetes"] = EnvTerm(
            "kubernetes",
            8.0 + k,
            math.hypot(6.0, k_sd),
            VM_PACKET_US[0],
            VM_PACKET_US[1],
            f"estimate: the vm estimate plus the pod network path ({k_why})",
        )
    return out


def precompute_cloud_model(path: str | Path | None = None) -> Path:
    """Fit the cloud model to the shipped measurements and write ``data/fits/``."""
    p = Path(path) if path is not None else CLOUD_MODEL_PATH
    model = fit_cloud_model(observations(load_cloud_measurements()))
    doc = finite_json(_rounded(model.to_dict()))
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return p


def _rounded(value: object) -> object:
    """Floats to 4 significant digits (the file is read by people and diffed)."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def predict(model: CloudModel, obs: pd.DataFrame) -> pd.DataFrame:
    """Predicted CPU time per request per vCPU [us] and its log sd, for `observations` rows.

    A row of a harness the fit saw takes that harness's level; a real NGINX row of a harness
    the fit did not see takes the reference cost plus its environment's term (nothing of the
    row's own source is used); another server of an unseen harness gets ``level_known``
    False and a level of 1 (the caller scales it and says so).
    """
    out = obs.copy()
    preds, sds, kinds, known = [], [], [], []
    r: Any
    for r in obs.itertuples():
        cls = str(r.wclass)
        pid, tpc = str(r.cpu_platform), int(r.threads_per_core)
        v, v_sd, kind, _ = speed_for(model, pid, tpc, cls)
        key = f"{r.source_id}|{r.body_bytes}|{r.protocol}"
        nginx_env = r.server == "nginx" and r.environment in model.environments
        own_level = key in model.levels and not nginx_env
        # A harness level fitted on the anchor, or an environment fitted on it: no anchor sd.
        v_sd = v_sd if own_level else model.speed_sd(v_sd, cls, str(r.environment))
        spread = math.hypot(v_sd, model.spread(cls))
        if own_level:
            # The stand-in harness's own speeds (before stages 3a, 3b and 4) and size slope.
            sp = model.speed(pid, tpc, cls) if kind == "fitted" else None
            if sp is not None:
                v /= math.exp(sp.nginx_shift + sp.smt_shift + sp.cap_shift)
                # The stand-in's own rows need no stand-in-to-NGINX gap.
                v_sd = math.sqrt(max(v_sd**2 - sp.stand_in_sd**2, 0.0))
                spread = math.hypot(v_sd, model.spread(cls))
            slope = model.size_slopes.get(f"{r.source_id}|{cls}", 0.0)
            size = math.exp(slope * math.log2(float(r.vcpus) / SIZE_CENTRE))
            level, level_sd, ok = model.levels[key] * size, 0.0, True
        elif nginx_env:
            env = model.environments[str(r.environment)]
            level = _cost_us(r) + env.request_us
            level_sd, ok = env.request_stderr / level, True
        else:
            level, level_sd, ok = 1.0, 0.0, False
        preds.append(level / v)
        sds.append(math.hypot(spread, level_sd))
        kinds.append(kind)
        known.append(ok)
    out["t_pred_us"] = preds
    out["log_sd"] = sds
    out["speed_kind"] = kinds
    out["level_known"] = known
    return out
