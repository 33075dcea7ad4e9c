"""From a calibration campaign's trials to a CPU profile's coefficients.

Every trial is one observation: the server's CPU time per request in its setting and round.
`fit` fits the cost model's coefficients to them jointly (weighted least squares on relative
errors, alternating with one contention factor per round), `build_profile` adds the per-round
spreads, the scaling, the flags and the provenance and returns the `trialtable.profile.Profile`.
Plain functions of the trial rows: refitting a stored campaign (or a profile's
``.trials.csv``) needs no host.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from runners.calibrate.settings import (
    MIN_WORKER_SHARE,
    SCALING_BASE,
    CalibrateOptions,
    Setting,
)
from runners.errors import RunnerError
from trialtable.jsonvalue import JsonObject, JsonValue, as_float
from trialtable.profile import (
    COEFFICIENTS,
    SIGNED,
    Coefficient,
    NewConnections,
    Profile,
    Scaling,
    cost_terms,
)

# Efficiency above this across worker counts is implausible (superlinear): warned, not used.
SUPERLINEAR = 1.15
#: A load generator using this share of its threads' CPU is the load's limit: a worker under
#: `MIN_WORKER_SHARE` then waits for it, not for a CPU another process took.
CLIENT_BOUND = 0.85
#: A coefficient whose standard error is more than this share of its value is not pinned by
#: the campaign (its 95% interval reaches zero): it is left out of the profile's coefficients
#: (readers take the reference's, speed-scaled) and kept under ``unidentified``.
UNIDENTIFIED_REL = 0.5
#: The relative standard error a campaign's extra rounds aim for on every coefficient.
TARGET_REL = 0.25
#: ... unless its standard error moves no setting's CPU time per request by more than this
#: share (an uncertain term too small to matter where it was measured is kept).
MATERIAL = 0.02
#: The terms of every keep-alive response: kept with a note when not identified. They are
#: fitted jointly over the same settings, each taking part of the others' cost, so a
#: reference value in place of one would not add up to what the campaign measured.
KEEP_UNIDENTIFIED = frozenset(
    {"request_us", "body_us", "byte_ns", "tls_request_us", "tls_body_us", "tls_byte_ns"}
)


def cpu_us(row: Mapping[str, JsonValue]) -> float:
    """Server CPU time per request of one trial [us]: CPU share x trial time / requests."""
    requests = as_float(row["requests"])
    cpu_s = as_float(row["server_cpu_pct"]) / 100.0 * as_float(row["duration_s"])
    return cpu_s / requests * 1e6 if requests > 0 and math.isfinite(cpu_s) else math.nan


def _usable(row: Mapping[str, JsonValue]) -> bool:
    """Valid, or invalid only because the load generator was saturated.

    The server's CPU time per request is measured all the same.
    """
    if bool(row["valid"]):
        return True
    reasons = str(row.get("invalid_reason") or "").split("; ")
    return all(r.startswith("load generator saturated") for r in reasons)


@dataclass
class Observation:
    """One trial as a data point of the fit.

    ``bound_by`` names what else limited the load when the worker ran under
    `MIN_WORKER_SHARE` of the wall time for a reason of the campaign's own (its load
    generator at its CPU limit, the upstream of a proxy setting sharing the host): such a
    trial is measured below saturation but is not a sign of a busy host.
    """

    setting: str
    round_: int
    cpu_us: float
    rps: float
    p99_ms: float
    meets_sla: bool
    worker_share: float
    flags: list[str] = field(default_factory=list)
    run_id: str = ""
    bound_by: str = ""

    @property
    def contended(self) -> bool:
        """The worker was not kept busy and nothing of the campaign's own explains it."""
        return self.worker_share < MIN_WORKER_SHARE and not self.bound_by


def _client_share(row: Mapping[str, JsonValue]) -> float:
    """The load generator's CPU time over what its threads could use [1] (NaN if unknown)."""
    try:
        threads = max(1.0, as_float(row.get("threads") or 1))
        return as_float(row["client_cpu_pct"]) / (100.0 * threads)
    except (KeyError, TypeError, ValueError):
        return math.nan


def observations(
    rows: Sequence[Mapping[str, JsonValue]],
    settings: Sequence[Setting],
    sla_ms: float,
    same_host: bool = True,
) -> tuple[list[Observation], list[str]]:
    """The campaign's trials as observations, with the warnings about them.

    ``same_host``: the load generator (and a proxy setting's upstream) shared the server's
    host (loopback), so a worker under `MIN_WORKER_SHARE` of the wall time in a proxy setting
    may be waiting for its upstream rather than for a CPU a competing process took.
    """
    by_name = {s.name: s for s in settings}
    obs, warnings = [], []
    for row in rows:
        m = re.match(r"^calibrate-(.+)-r(\d+)$", str(row.get("instance_label", "")))
        if not m or m.group(1) not in by_name:
            continue
        s = by_name[m.group(1)]
        if not _usable(row):
            warnings.append(f"{row['trial_id']} ({s.name}) not used: {row['invalid_reason']}")
            continue
        us = cpu_us(row)
        if not math.isfinite(us) or us <= 0:
            warnings.append(f"{row['trial_id']} ({s.name}) not used: no server CPU time")
            continue
        share = as_float(row["server_cpu_pct"]) / (100.0 * s.vcpus)
        o = Observation(
            s.name,
            int(m.group(2)) - 1,
            us,
            as_float(row["rps"]),
            as_float(row["latency_p99_ms"]),
            bool(row["meets_sla"]),
            share,
            run_id=str(row["run_id"]),
        )
        client = _client_share(row)
        if share < MIN_WORKER_SHARE and client >= CLIENT_BOUND:
            o.bound_by = f"the load generator ({client:.0%} of its CPU)"
        elif share < MIN_WORKER_SHARE and s.scenario.proxied and same_host:
            o.bound_by = "the upstream on the same host"
        if o.contended:
            o.flags.append(
                f"{row['trial_id']} ({s.name}): the workers ran {share:.0%} of the trial's "
                f"wall time and the load generator {client:.0%} of its CPU (a competing "
                "process or steal, or too few connections to load them)"
            )
        if not bool(row["valid"]):
            o.flags.append(f"{row['trial_id']} ({s.name}): {row['invalid_reason']}")
        obs.append(o)
    # Every usable trial counts: the load only has to keep latency sane, the CPU time per
    # request is measured either way; settings whose trials missed the SLA are named.
    for name in by_name:
        mine = [o for o in obs if o.setting == name]
        over = [o for o in mine if not o.p99_ms <= sla_ms]
        if over:
            warnings.append(
                f"{name}: {len(over)} of {len(mine)} trials over p99 {sla_ms:g} ms "
                f"(p99 {', '.join(f'{o.p99_ms:.1f}' for o in over)} ms)"
            )
    kept = obs
    return kept, warnings


def _row(s: Setting, wire_body: float | None) -> dict[str, float]:
    """The design row of a setting: coefficient name -> its multiplier in us per request.

    The cost formula is `trialtable.profile.cost_terms`, the one the capacity model predicts
    with: ``body_us`` is the fixed part of a response with a body (open, stat, sendfile or
    read), measured between the 0-byte and the 1 KB settings; ``tls_body_us`` is HTTPS's,
    which cannot sendfile.
    """
    sc = s.scenario
    return cost_terms(
        float(sc.file_bytes),
        https=sc.protocol == "https",
        wire_bytes=wire_body,
        connections=NewConnections(
            0.0 if sc.keepalive else 1.0, sc.tls_key, 1.0 if sc.tls_resumption else 0.0
        ),
        gzip=1.0 if sc.gzip else 0.0,
        scenario=sc.name,
    )


@dataclass
class Fit:
    """A weighted least-squares fit of the coefficients.

    Attributes
    ----------
    names : list of str
        Coefficients the observations identify.
    value, stderr : dict
        Estimates and standard errors (stderr NaN with no residual degrees of freedom).
    held_at_zero : dict
        Costs that fitted below zero: their unconstrained value (they are held at 0).
    residual_rel : float
        RMS of the relative residuals.
    round_factors : dict of int to float
        The host's contention level of each round (CPU time per request of every setting in
        that round over the fit), normalised so the median round is 1.
    """

    names: list[str]
    value: dict[str, float]
    stderr: dict[str, float]
    held_at_zero: dict[str, float]
    residual_rel: float
    round_factors: dict[int, float] = field(default_factory=dict)


def _nonnegative_wls(
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    names: Sequence[str],
    extra_dof: int,
    center: np.ndarray | None = None,
) -> tuple[dict[str, float], dict[str, float], dict[str, float], np.ndarray]:
    """Weighted least squares with costs held at zero when they fit below it.

    With ``center`` (each observation's setting median) the costs are fitted to the centres,
    so that one outlying trial of a busy host moves its setting by nothing rather than by a
    third; the standard errors still come from the observations' residuals around the fit,
    each coefficient's from those of the trials that measure it (HC3 sandwich estimator).
    Returns values, standard errors, held-at-zero raw values, and the weighted residuals.
    """
    active = list(range(len(names)))
    held: dict[str, float] = {}
    first_se: dict[str, float] = {}
    while True:
        Xa = X[:, active] * w[:, None]
        ya = (y if center is None else center) * w
        if np.linalg.matrix_rank(Xa) < len(active):
            lost = [names[i] for i in active]
            raise RunnerError(
                "the settings measured do not separate the coefficients "
                f"{', '.join(lost)}; run more settings"
            )
        beta, *_ = np.linalg.lstsq(Xa, ya, rcond=None)
        dof = len(y) - len(active) - extra_dof
        # The trials' own residuals (not the centres'): the scatter a busy host adds counts.
        # Each coefficient's error comes from the scatter of the trials that measure it
        # (heteroscedasticity-consistent, HC3): one noisy setting does not widen all.
        resid = y * w - Xa @ beta
        bread = np.linalg.inv(Xa.T @ Xa)
        if dof > 0:
            lev = np.clip(np.einsum("ij,jk,ik->i", Xa, bread, Xa), 0.0, 0.99)
            u = resid / (1.0 - lev)
            cov = bread @ (Xa.T * u**2) @ Xa @ bread
        else:
            cov = np.full_like(bread, math.nan)
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
        for i, j in enumerate(active):
            first_se.setdefault(names[j], float(se[i]))
        negative = [
            (beta[i], j) for i, j in enumerate(active) if beta[i] < 0 and names[j] not in SIGNED
        ]
        if not negative:
            break
        _, worst = min(negative)
        held[names[worst]] = float(beta[active.index(worst)])
        active.remove(worst)
    value = {names[j]: float(beta[i]) for i, j in enumerate(active)}
    stderr = {names[j]: float(se[i]) for i, j in enumerate(active)}
    for n in held:
        value[n] = 0.0
        stderr[n] = first_se[n]
    return value, stderr, held, resid


def fit(
    obs: Sequence[Observation],
    settings: Sequence[Setting],
    wire: dict[str, float] | None = None,
    allowed: Sequence[str] | None = None,
) -> Fit:
    """Fit the coefficients the observations identify.

    ``allowed`` (a round fitted alone: the campaign's own fit's names) limits them to the
    coefficients the whole campaign separates; without it they are `fitted_names` of the
    observations' settings.

    The model of a trial of setting s in round r is ``f_r * cost_s(coefficients)``: a busy
    host slows every setting of a round alike (cache pollution, wake-ups), and the rounds
    interleave every setting so that ``f_r`` can be told apart from the costs. The fit
    alternates a weighted least-squares fit of the costs to each setting's median trial
    divided by its round's factor (weights 1 / (setting median)^2, so every setting counts by
    its relative error; the median, so that one trial a busy host slowed does not move it)
    with the factors (the median ratio of a round's trials to the fit), normalised so
    the median round is 1: the coefficients are the costs at the campaign's median
    contention. A cost that comes out negative is held at zero and the rest refitted (an
    active-set non-negative fit); its unconstrained value is kept in ``held_at_zero``.

    Raises `RunnerError` when nothing can be fitted.
    """
    wire = wire or {}
    by_name = {s.name: s for s in settings}
    fitted = [o for o in obs if o.setting in by_name and o.setting not in _scaling_names(settings)]
    if not fitted:
        raise RunnerError("no usable trial to fit coefficients to")
    rows = [_row(by_name[o.setting], wire.get(o.setting)) for o in fitted]
    if allowed is None:
        names = fitted_names(rows)
    else:
        names = [n for n in allowed if any(r.get(n, 0.0) != 0.0 for r in rows)]
    X = np.array([[r.get(n, 0.0) for n in names] for r in rows])
    y = np.array([o.cpu_us for o in fitted])
    rounds = sorted({o.round_ for o in fitted})
    r_idx = np.array([rounds.index(o.round_) for o in fitted])
    factors = np.ones(len(rounds))
    settings_of = [o.setting for o in fitted]
    for _ in range(100):
        adjusted = y / factors[r_idx]
        med = {
            s: float(np.median([v for v, n in zip(adjusted, settings_of, strict=True) if n == s]))
            for s in set(settings_of)
        }
        w = np.array([1.0 / med[n] for n in settings_of])
        center = np.array([med[n] for n in settings_of])
        value, stderr, held, resid = _nonnegative_wls(
            X, adjusted, w, names, len(rounds) - 1, center
        )
        pred = X @ np.array([value[n] for n in names])
        if len(rounds) == 1 or not np.all(pred > 0):
            break
        ratio = np.log(y / pred)
        new = np.exp([np.median(ratio[r_idx == k]) for k in range(len(rounds))])
        new /= np.exp(np.median(np.log(new)))
        done = np.allclose(new, factors, rtol=1e-6)
        factors = new
        if done:
            break
    rel = float(np.sqrt(np.mean(resid**2))) if len(resid) else math.nan
    return Fit(
        list(names),
        value,
        stderr,
        held,
        rel,
        {r: float(f) for r, f in zip(rounds, factors, strict=True)},
    )


def fitted_names(rows: Sequence[dict[str, float]]) -> list[str]:
    """The coefficients the design rows ``rows`` hold and tell apart (`_separable`)."""
    return _separable([n for n in COEFFICIENTS if any(r.get(n, 0.0) != 0.0 for r in rows)], rows)


def _separable(names: Sequence[str], rows: Sequence[dict[str, float]]) -> list[str]:
    """``names`` less each coefficient the settings cannot tell from those before it.

    In `COEFFICIENTS` order: a campaign stored before ``proxy_byte_ns`` existed proxied one
    body size only, so its proxy cost is one number (``proxy_request_us``, that size's bytes
    included) and ``proxy_byte_ns`` is left out as not measured.
    """
    kept: list[str] = []
    for n in names:
        X = np.array([[r.get(m, 0.0) for m in (*kept, n)] for r in rows])
        if np.linalg.matrix_rank(X) == len(kept) + 1:
            kept.append(n)
    return kept


def unpinned(
    rows: Sequence[Mapping[str, JsonValue]], settings: Sequence[Setting], options: CalibrateOptions
) -> tuple[list[str], list[str]]:
    """Coefficients not yet pinned, and the one-worker settings that measure them.

    Not pinned: a standard error over `TARGET_REL` of the value that matters (`MATERIAL`).
    Another round of those settings (and only those) narrows them: each round has its own
    contention factor, so a round of a few settings still tells their differences apart.
    """
    obs, _ = observations(rows, settings, options.sla_p99_ms)
    wire = _wire_bodies(rows, settings)
    try:
        f = fit(obs, settings, wire)
    except RunnerError:
        return [], []
    weight = _weights(obs, settings, wire)
    names = [
        n
        for n in f.names
        if math.isfinite(f.stderr[n])
        and f.stderr[n] > TARGET_REL * abs(f.value[n])
        and f.stderr[n] * weight.get(n, 0.0) > MATERIAL
    ]
    use = [
        s.name
        for s in settings
        if s.vcpus == 1 and any(_row(s, wire.get(s.name)).get(n, 0.0) for n in names)
    ]
    return names, use


def check_identifiable(settings: Sequence[Setting]) -> None:
    """Raise `RunnerError` before any load if the settings cannot separate their costs.

    E.g. new HTTPS connections without new HTTP ones.
    """
    rows = [_row(s, None) for s in settings if s.vcpus == 1]
    if not rows:
        raise RunnerError("the settings asked for include no one-worker setting to fit")
    names = [n for n in COEFFICIENTS if any(r.get(n, 0.0) != 0.0 for r in rows)]
    X = np.array([[r.get(n, 0.0) for n in names] for r in rows])
    if np.linalg.matrix_rank(X) < len(names):
        raise RunnerError(
            "these settings do not separate the costs "
            f"{', '.join(names)}; add the settings that isolate them (e.g. static_http_0B, "
            "static_http_1KB and static_http_100KB for request_us, body_us and byte_ns, "
            "cps_http before cps_https_*)"
        )


def _scaling_names(settings: Sequence[Setting]) -> set[str]:
    return {s.name for s in settings if s.vcpus > 1}


def _coefficients(
    obs: Sequence[Observation],
    settings: Sequence[Setting],
    wire: dict[str, float],
) -> tuple[Fit, dict[str, Coefficient], dict[str, Any], list[str]]:
    """The joint fit, each coefficient with its spread, and those it does not identify."""
    warnings: list[str] = []
    f = fit(obs, settings, wire)
    rounds = sorted({o.round_ for o in obs})
    # A round alone is fitted for the campaign's coefficients that its settings hold: one that
    # cannot separate them raises and is left out of the spread, not fitted to fewer terms.
    per_round: dict[str, list[float]] = {n: [] for n in f.value}
    for r in rounds:
        try:
            fr = fit([o for o in obs if o.round_ == r], settings, wire, allowed=f.names)
        except RunnerError:
            continue
        for n in f.value:
            if n in fr.value:
                per_round[n].append(fr.value[n])
    weight = _weights(obs, settings, wire)
    built: dict[str, Coefficient] = {}
    loose: dict[str, str] = {}  # not identified -> what was fitted
    for n in COEFFICIENTS:
        if n not in f.value:
            continue
        vals = per_round[n]
        mean = float(np.mean(vals)) if vals else math.nan
        spread = (
            float(np.std(vals, ddof=1) / abs(mean))
            if len(vals) >= 2 and mean != 0 and math.isfinite(mean)
            else None
        )
        note = ""
        if n in f.held_at_zero:
            note = (
                f"fitted {f.held_at_zero[n]:.3g} +- {f.stderr[n]:.2g} (below zero, not "
                "distinguishable from it): held at 0"
            )
            warnings.append(f"{n} {note}")
        se = f.stderr[n]
        built[n] = Coefficient(
            round(f.value[n], 6),
            round(se, 6) if math.isfinite(se) else None,
            spread,
            COEFFICIENTS[n][0],
            note,
        )
        if (
            n not in f.held_at_zero
            and math.isfinite(se)
            and se > UNIDENTIFIED_REL * abs(built[n].value)
            and se * weight.get(n, 0.0) > MATERIAL
        ):
            rel = se / abs(built[n].value) if built[n].value else math.inf
            loose[n] = (
                f"fitted {built[n].value:.3g} +- {se:.2g} {built[n].unit} (relative error "
                f"{rel:.0%})"
            )
    dropped = _droppable(set(loose), set(built), [_row(s, None) for s in settings if s.vcpus == 1])
    coefficients = {}
    unidentified: dict[str, Any] = {}
    for n, c in built.items():
        if n in dropped:
            se = c.stderr or 0.0
            rel = se / abs(c.value) if c.value else math.inf
            unidentified[n] = {**c.to_dict(), "relative_error": round(min(rel, 1e6), 3)}
            warnings.append(
                f"{n} not identified: {loose[n]}; left out of the coefficients (readers take "
                "the reference's); more rounds pin it"
            )
            continue
        if n in loose:
            c = replace(c, note=f"not identified: {loose[n]}; kept as the best estimate")
            warnings.append(
                f"{n} not identified: {loose[n]}; kept, as other coefficients were measured "
                "relative to it (a reference value would not add up to this campaign's own "
                "settings); more rounds pin it"
            )
        coefficients[n] = c
    return f, coefficients, unidentified, warnings


def _droppable(loose: set[str], fitted: set[str], rows: Sequence[dict[str, float]]) -> set[str]:
    """The coefficients of ``loose`` that can be left to the reference.

    One can, unless it is a term of every response (`KEEP_UNIDENTIFIED`) or a coefficient
    that stays was measured only in settings that also hold it (a handshake beside
    connection_us, gateway_request_us beside proxy_request_us): the two were fitted as a sum,
    and a reference value in its place would not add up. Terms measured only together go
    together (the proxy's fixed and per-byte parts), and a gateway that goes lets its proxy
    go too.
    """

    def leans(m: str, n: str) -> bool:
        return any(r.get(m) for r in rows) and all(r.get(n) for r in rows if r.get(m))

    out = set(loose - KEEP_UNIDENTIFIED)
    changed = True
    while changed:
        changed = False
        for n in sorted(out):
            if any(leans(m, n) for m in fitted - out):
                out.discard(n)
                changed = True
    return out


def build_profile(
    rows: Sequence[Mapping[str, JsonValue]],
    settings: Sequence[Setting],
    *,
    configs: dict[str, str],
    host: dict[str, Any],
    options: CalibrateOptions,
    measured_over: str,
    steal: dict[str, float] | None = None,
    campaign_id: str = "",
) -> Profile:
    """The profile of a campaign's trials: fit, spreads, scaling, flags and provenance."""
    obs, warnings = observations(
        rows, settings, options.sla_p99_ms, same_host=measured_over == "loopback"
    )
    wire = _wire_bodies(rows, settings)
    f, coefficients, unidentified, notes = _coefficients(obs, settings, wire)
    warnings = [
        *_load_warnings(obs),
        *warnings,
        *notes,
        *_contention_warnings(f.round_factors, obs, host),
        *_coverage_warnings(coefficients, unidentified, steal or {}),
    ]
    scaling, scaling_warnings = _scaling(obs, settings)
    warnings += scaling_warnings
    tpc = host.get("threads_per_core")
    arch = str(host.get("arch", ""))
    return Profile(
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        cpu_model=str(host.get("cpu_model", "")),
        arch="arm64" if arch in ("aarch64", "arm64") else "x86_64",
        threads_per_core=tpc if isinstance(tpc, int) else None,
        measured_over=measured_over,
        load_generator=options.load_generator,
        host=_host_facts(host),
        coefficients=coefficients,
        scaling=scaling,
        sla_p99_ms=options.sla_p99_ms,
        runs=sorted({o.run_id for o in obs}),
        configs=configs,
        warnings=warnings,
        extra={
            "campaign": _campaign_fit(f, options, campaign_id),
            "measurements": _measurements(obs, settings),
            **({"unidentified": unidentified} if unidentified else {}),
        },
    )


def _campaign_fit(f: Fit, options: CalibrateOptions, campaign_id: str) -> dict[str, object]:
    """The campaign's options and how its fit went, for the profile's provenance."""
    return {
        "campaign_id": campaign_id,
        "options": options.to_dict(),
        "fit": "CPU time per request = round factor x cost model; weighted least "
        "squares on each setting's median (weights 1/median^2) alternating with the "
        "round factors (median round = 1); stderr from the joint fit (the trials' "
        "residuals, HC3 sandwich), spread = sd/|mean| of per-round fits",
        "relative_rms_residual": round(f.residual_rel, 4),
        "round_factors": {str(r + 1): round(v, 4) for r, v in sorted(f.round_factors.items())},
    }


def _load_warnings(obs: Sequence[Observation]) -> list[str]:
    """The trials whose worker ran under `MIN_WORKER_SHARE` of the wall time, flagged or not."""
    out = []
    flagged = sum(1 for o in obs if o.contended)
    if flagged:
        out.append(
            f"{flagged} of {len(obs)} trials flagged: the nginx workers ran under "
            f"{MIN_WORKER_SHARE:.0%} of the wall time while the load generator was not at its "
            "limit (CPU time per request is still measured directly, but the host was not "
            "quiet)"
        )
    bound = [o for o in obs if o.bound_by]
    if bound:
        out.append(
            f"{len(bound)} of {len(obs)} trials ran the worker under {MIN_WORKER_SHARE:.0%} "
            "of the wall time because the campaign's own load limited it ("
            + ", ".join(sorted({f"{o.setting}: {o.bound_by.split(' (')[0]}" for o in bound}))
            + "): measured below saturation, not flagged"
        )
    return out


def _contention_warnings(
    factors: dict[int, float], obs: Sequence[Observation], host: dict[str, Any]
) -> list[str]:
    """The host's contention across rounds, its CPU speed probe's changes, each trial's flags."""
    out = []
    if factors and max(factors.values()) > 1.25 * min(factors.values()):
        out.append(
            "the host's contention changed across rounds (CPU time per request of every "
            "setting x "
            + ", ".join(f"{v:.2f}" for _, v in sorted(factors.items()))
            + " by round): the coefficients are at the median round's level"
        )
    probes = {k: float(v) for k, v in (host.get("speed_probe_us") or {}).items()}
    if len(probes) >= 2 and max(probes.values()) > PROBE_CHANGE * min(probes.values()):
        out.append(
            "the CPU's speed changed during the campaign: a fixed computation outside nginx "
            "(one ECDSA P-256 signature, openssl speed) took "
            + ", ".join(f"{v:.1f}" for v in probes.values())
            + f" us of CPU ({', '.join(probes)}); compare profiles at the same probe level"
        )
    for o in obs:
        out.extend(o.flags)
    return out


def _coverage_warnings(
    coefficients: Mapping[str, object], unidentified: Mapping[str, object], steal: dict[str, float]
) -> list[str]:
    """CPU time stolen from the host, and the coefficients the campaign did not measure."""
    out = []
    for label, share in sorted(steal.items()):
        if math.isfinite(share) and share > 0.01:
            out.append(f"{label}: {share:.1%} of the host's CPU time was stolen")
    missing = [
        n
        for n in COEFFICIENTS
        if n not in coefficients and n not in unidentified and n != "http2_request_us"
    ]
    if missing:
        out.append(
            f"{', '.join(missing)} not measured: no setting of this campaign isolates "
            + ("it" if len(missing) == 1 else "them")
        )
    if "http2_request_us" not in coefficients:
        out.append("http2_request_us not measured: the campaign runs HTTP/1.1 only")
    return out


def _weights(
    obs: Sequence[Observation], settings: Sequence[Setting], wire: dict[str, float]
) -> dict[str, float]:
    """Coefficient -> its largest multiplier over a setting's median CPU time [1/unit].

    A coefficient's standard error times this is the most it moves any measured setting's
    cost per request, relative to that cost.
    """
    out: dict[str, float] = {}
    for s in settings:
        mine = [o.cpu_us for o in obs if o.setting == s.name]
        if not mine or s.vcpus > 1:
            continue
        med = float(np.median(mine))
        for n, x in _row(s, wire.get(s.name)).items():
            out[n] = max(out.get(n, 0.0), abs(x) / med)
    return out


def _wire_bodies(
    rows: Sequence[Mapping[str, JsonValue]], settings: Sequence[Setting]
) -> dict[str, float]:
    """Body bytes sent per response for gzip settings.

    Bytes per response minus the headers of the HTTP 0-byte setting (250 B when that was
    not measured).
    """
    header = [
        as_float(r["bytes_per_response"])
        for r in rows
        if str(r.get("instance_label", "")).startswith("calibrate-static_http_0B-")
    ]
    head = float(np.median(header)) if header else 250.0
    out = {}
    for s in settings:
        if s.scenario.gzip:
            sizes = [
                as_float(r["bytes_per_response"])
                for r in rows
                if str(r.get("instance_label", "")).startswith(f"calibrate-{s.name}-")
            ]
            if sizes:
                out[s.name] = max(0.0, float(np.median(sizes)) - head)
    return out


def _scaling(obs: Sequence[Observation], settings: Sequence[Setting]) -> tuple[Scaling, list[str]]:
    base = [o for o in obs if o.setting == SCALING_BASE]
    if not base:
        return Scaling(), []
    us1 = float(np.median([o.cpu_us for o in base]))
    workers, rps, eff, warnings = [1], [float(np.median([o.rps for o in base]))], [1.0], []
    for s in sorted((s for s in settings if s.vcpus > 1), key=lambda s: s.vcpus):
        mine = [o for o in obs if o.setting == s.name]
        if not mine:
            continue
        e = us1 / float(np.median([o.cpu_us for o in mine]))
        if e > SUPERLINEAR:
            warnings.append(
                f"{s.vcpus} workers: CPU per request {e:.2f}x better than with 1 (superlinear); "
                "not used as a scaling point"
            )
            continue
        workers.append(s.vcpus)
        rps.append(float(np.median([o.rps for o in mine])))
        eff.append(round(e, 4))
    return Scaling(workers, [round(x, 1) for x in rps], eff), warnings


def _measurements(obs: Sequence[Observation], settings: Sequence[Setting]) -> JsonObject:
    out: JsonObject = {}
    for s in settings:
        mine = [o for o in obs if o.setting == s.name]
        if not mine:
            continue
        out[s.name] = {
            "scenario": s.scenario.name,
            "protocol": s.scenario.protocol,
            "file_bytes": s.scenario.file_bytes,
            "gzip": s.scenario.gzip,
            "tls_key": s.scenario.tls_key if s.scenario.protocol == "https" else None,
            "workers": s.vcpus,
            "cpu_us_per_request": [round(o.cpu_us, 3) for o in mine],
            "rps": [round(o.rps, 1) for o in mine],
            "p99_ms": [round(o.p99_ms, 3) for o in mine],
            "worker_share": [round(o.worker_share, 3) for o in mine],
        }
    return out


_HOST_KEYS = (
    "hostname",
    "cpu_model",
    "arch",
    "cores",
    "cpus_allowed",
    "threads_per_core",
    "kernel",
    "nginx_version",
    "openssl_version",
    "wrk_version",
    "mem_kb",
    "sysctl",
    "cpu_flags",
    "cpu_vendor",
    "cpu_family",
    "cpu_model_number",
    "cpu_stepping",
    "hypervisor",
    "loadavg_at_start",
    "loadavg_at_end",
    "speed_probe_us",
)

#: Speed probes further apart than this (max / min) are a warning: the CPU changed speed.
PROBE_CHANGE = 1.25


def _host_facts(host: Mapping[str, object]) -> dict[str, object]:
    return {k: host[k] for k in _HOST_KEYS if k in host}
