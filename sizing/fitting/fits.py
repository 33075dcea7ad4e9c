"""Fit the reference scaling tables, and precompute the fits the ``recommend`` path reads."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from pathlib import Path
from statistics import NormalDist
from typing import Any, TypedDict

import numpy as np

from sizing.catalog.load import load_catalog
from sizing.fitting.published import recompute_claims
from sizing.fitting.runcosts import http2_term, proxy_terms, tls_byte_current
from sizing.model import curves, platforms
from sizing.model.capacity import REFERENCE_LINK_GBPS, bytes_per_response
from sizing.model.costmodel import (
    COST_MODEL_PATH,
    FITTED,
    REFERENCE_CPU,
    REFERENCE_SOURCE,
    REFERENCE_STACK,
    UNITS,
    seed_cost_us,
    seed_prediction,
)
from sizing.model.datasets import ReferenceSeries, reference_series
from sizing.paths import FITS_PATH, REFERENCE_DIR
from sizing.units import finite_json
from trialtable.files import write_atomic
from trialtable.jsonvalue import JsonObject
from trialtable.profile import cost_terms

PLATEAU_MODELS = ("linear_plateau", "smooth_plateau", "power_plateau")
#: A per-series plateau at >= 85% of the 80 Gbps test link is taken as the link, not the CPU.
LINK_BOUND_FRACTION = 0.85


def _link_bound(series: ReferenceSeries, fit: curves.CurveFit) -> bool:
    """Whether the fitted plateau of an RPS series is the reference test link."""
    if series["metric"] != "requests_per_s" or fit.model not in PLATEAU_MODELS:
        return False
    wire = bytes_per_response(float(series["file_bytes"]), str(series["protocol"]))
    top_gbps = float(fit.predict([fit.x_range_[1]])[0]) * wire * 8 / 1e9
    return top_gbps >= LINK_BOUND_FRACTION * REFERENCE_LINK_GBPS


def fit_reference(
    name: str = "nginx-web-server",
    level: float = 0.95,
    compare: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Fit every series of a reference scaling dataset, selecting a model per series.

    Parameters
    ----------
    name : str
        Reference dataset name.
    level : float
        Coverage of the power-law exponent interval reported per series.
    compare : bool
        Include the per-series model comparison table.
    progress : callable, optional
        Called as ``progress(done, total)`` after each series.

    Returns
    -------
    list of dict
        Per series: ``metric``, ``protocol``, ``file_size``, ``file_bytes``, ``model``,
        ``params``, ``stderr``, ``mape_pct``, ``loo_mape_pct``, ``aicc``, ``criterion``,
        ``x_range``, ``power_exponent`` (with its interval: is the shape sqrt(x)?),
        ``link_bound``, ``source`` and, if asked, ``comparison``.
    """
    out = []
    todo = reference_series(name)
    for done, s in enumerate(todo, start=1):
        sel = curves.select_model(s["x"], s["y"])
        best = sel.best
        pw = curves.fit_curve("power", s["x"], s["y"], errors="relative")
        lo, hi = pw.param_interval("b", level)
        row: dict[str, Any] = {
            "metric": s["metric"],
            "protocol": s["protocol"],
            "file_size": s["file_size"],
            "file_bytes": s["file_bytes"],
            "model": best.model,
            "formula": best.spec.formula,
            "params": best.params_,
            "stderr": best.stderr_,
            "mape_pct": best.mape_pct_,
            "loo_mape_pct": next(r["loo_mape_pct"] for r in sel.table if r["selected"]),
            "aicc": best.aicc_,
            "criterion": sel.criterion,
            "x_range": list(best.x_range_),
            "power_exponent": {"b": pw.params_["b"], "low": lo, "high": hi, "level": level},
            "link_bound": _link_bound(s, best),
            "source": s["source"],
        }
        if compare:
            row["comparison"] = sel.table
        out.append(row)
        if progress is not None:
            progress(done, len(todo))
    return out


def precompute(path: str | Path = FITS_PATH, name: str = "nginx-web-server") -> Path:
    """Write the fitted reference curves that ``recommend`` evaluates without scipy."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "dataset": name,
        "generated_by": "python -m sizing precompute",
        "series": fit_reference(name, compare=False),
    }
    write_atomic(p, json.dumps(stored_digits(finite_json(doc)), indent=1, sort_keys=True) + "\n")
    return p


#: Significant digits of every number ``precompute`` stores: curves evaluate to within 1e-6 of
#: the fit, and a refit on another machine rewrites no line for float noise alone.
STORED_DIGITS = 7


def stored_digits(obj: object, digits: int = STORED_DIGITS) -> object:
    """``obj`` with every float rounded to ``digits`` significant digits."""
    if isinstance(obj, float):
        return _sig(obj, digits)
    if isinstance(obj, dict):
        return {k: stored_digits(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [stored_digits(v, digits) for v in obj]
    return obj


# ----------------------------------------------------------------------------- cost model

#: Seed-004 metrics the cost model is fitted to (throughput tables measure the link).
COST_METRICS = ("requests_per_s", "connections_per_s")
_START = {
    "request_us": 7.0,
    "body_us": 8.0,
    "byte_ns": 0.2,
    "tls_request_us": 5.0,
    "tls_byte_ns": 1.6,
    "connection_us": 25.0,
    "handshake_full_rsa2048_us": 2300.0,
    "sigma": 0.005,
    "z_us": 6.0,
    "z_connection_us": 100.0,
    "z_handshake_us": 1000.0,
    "z_byte_ns": 1.0,
    "link_fraction": 0.95,
}
LOG_BOUND = 12.0
SEED_TABLE = "004_2a50d35d485b581a.txt tables 'RPS for HTTP/HTTPS Requests', 'CPS for HTTP/HTTPS'"


class SeedPoint(TypedDict):
    """One published number of seed 004: its workload, CPUs and value [requests or conns/s]."""

    metric: str
    protocol: str
    file_bytes: int
    cpus: int
    value: float


class Residual(SeedPoint):
    """A seed point with the fit's prediction and its error [%]."""

    predicted: float
    error_pct: float


class CostFit(TypedDict):
    """`fit_cost_model`'s answer (see there)."""

    names: list[str]
    fixed: dict[str, float]
    params: dict[str, float]
    stderr: dict[str, float]
    cov_log: list[list[float]]
    residual_sd: float
    residuals: list[Residual]
    n_points: int
    x_opt: list[float]


def seed_points(name: str = "nginx-web-server") -> list[SeedPoint]:
    """Seed 004's RPS and CPS values, one dict per published number."""
    out: list[SeedPoint] = []
    for s in reference_series(name):
        if s["metric"] not in COST_METRICS:
            continue
        for x, y in zip(s["x"], s["y"], strict=True):
            out.append(
                {
                    "metric": s["metric"],
                    "protocol": s["protocol"],
                    "file_bytes": int(s["file_bytes"]),
                    "cpus": int(x),
                    "value": float(y),
                }
            )
    return out


def fit_cost_model(points: list[SeedPoint], fixed: dict[str, float] | None = None) -> CostFit:
    """Fit one coefficient set (and the test's scaling) jointly to seed-004 points.

    Least squares on log(predicted / published), every coefficient kept positive (fitted on
    its log). Standard errors from the Jacobian at the optimum, scaled by the residual
    variance; the prediction sd of a point adds that residual sd.

    Parameters
    ----------
    points : list of dict
        Seed-004 points (`seed_points`).
    fixed : dict, optional
        Parameters held at a value instead of fitted (e.g. ``{"z_handshake_us": 0.0}``
        removes a term, to compare model forms); they get a standard error of 0.

    Returns
    -------
    dict
        ``params`` (name -> value), ``stderr``, ``cov_log`` (covariance of the log
        parameters, list of lists, in ``names`` order), ``names``, ``residual_sd`` (log
        scale), ``residuals`` (per point: the point, predicted, error), ``n_points``.
    """
    from scipy.optimize import least_squares  # scipy's optimiser: half a second of imports

    held = dict(fixed or {})
    names = [n for n in _START if n not in held]

    def model(logp: np.ndarray, p: SeedPoint) -> float:
        params = {**held, **dict(zip(names, np.exp(logp), strict=True))}
        return seed_prediction(params, p["metric"], p["protocol"], p["file_bytes"], p["cpus"])

    def resid(logp: np.ndarray) -> np.ndarray:
        return np.array([math.log(model(logp, p) / p["value"]) for p in points])

    x0 = np.log([_START[n] for n in names])
    # Each parameter within a factor e^12 (about 1.6e5) of its start: wide enough never to bind
    # a parameter the data determine, and it keeps the search away from overflow.
    res = least_squares(resid, x0, x_scale=1.0, bounds=(x0 - LOG_BOUND, x0 + LOG_BOUND))
    dof = max(len(points) - len(names), 1)
    s2 = float(res.fun @ res.fun) / dof
    jac = res.jac
    cov = np.linalg.pinv(jac.T @ jac) * s2
    values = np.exp(res.x)
    stderr = values * np.sqrt(np.clip(np.diag(cov), 0, None))
    rows: list[Residual] = []
    for p, r in zip(points, res.fun, strict=True):
        pred = p["value"] * math.exp(float(r))
        error_pct = 100.0 * (pred / p["value"] - 1.0)
        rows.append(Residual(**p, predicted=pred, error_pct=error_pct))
    return {
        "names": names,
        "fixed": held,
        "params": {**held, **{n: float(v) for n, v in zip(names, values, strict=True)}},
        "stderr": {
            **{n: 0.0 for n in held},
            **{n: float(v) for n, v in zip(names, stderr, strict=True)},
        },
        "cov_log": cov.tolist(),
        "residual_sd": math.sqrt(s2),
        "residuals": rows,
        "n_points": len(points),
        "x_opt": res.x.tolist(),
    }


def predict_with_interval(
    fit: CostFit, point: SeedPoint, level: float = 0.95
) -> tuple[float, float, float]:
    """Point prediction and ``level`` prediction interval of a seed-004 value from ``fit``.

    The log-scale sd is the delta-method parameter sd plus the residual sd.
    """
    names = fit["names"]
    x = np.array(fit["x_opt"])
    cov = np.array(fit["cov_log"])

    def f(v: np.ndarray) -> float:
        params = {**fit.get("fixed", {}), **dict(zip(names, np.exp(v), strict=True))}
        return math.log(
            seed_prediction(
                params, point["metric"], point["protocol"], point["file_bytes"], point["cpus"]
            )
        )

    base = f(x)
    h = 1e-5
    g = np.array([(f(x + h * np.eye(len(x))[i]) - base) / h for i in range(len(x))])
    sd = math.sqrt(float(g @ cov @ g) + fit["residual_sd"] ** 2)
    zq = NormalDist().inv_cdf(0.5 + level / 2)
    return math.exp(base), math.exp(base - zq * sd), math.exp(base + zq * sd)


def _sig(v: float, digits: int = 3) -> float:
    """Round to ``digits`` significant digits (stored numbers carry no false precision)."""
    if v == 0 or not math.isfinite(v):
        return v
    return float(f"{v:.{digits}g}")


def _claim(claim_id: str) -> tuple[float, float, str]:
    with (REFERENCE_DIR / "relative-claims.csv").open(newline="") as fh:
        for r in csv.DictReader(fh):
            if r["claim_id"] == claim_id:
                return float(r["ratio_low"]), float(r["ratio_high"]), r["source"]
    raise KeyError(claim_id)


def _range_coef(value: float, low: float, high: float, unit: str, source: str) -> JsonObject:
    """A coefficient from a value and a 95% range (stderr = half the log range / 1.96)."""
    rel = max(math.log(high / value), math.log(value / low)) / 1.96 if value > 0 else 0.0
    return {
        "value": _sig(value),
        "stderr": _sig(abs(value) * rel if value else (high - low) / 3.92, 2),
        "unit": unit,
        "measured_over": "none",
        "source": source,
    }


def _fitted_coefficients(p: dict[str, float], se: dict[str, float]) -> JsonObject:
    """The coefficients fitted to the seed table, with their standard errors."""
    return {
        n: {
            "value": _sig(p[n]),
            "stderr": _sig(se[n], 2),
            "unit": UNITS[n],
            "measured_over": "nic",
            "source": f"fitted to {SEED_TABLE} (NGINX, 2x 40 GbE bare metal)",
        }
        for n in FITTED
    }


def _input_coefficients(p: dict[str, float]) -> JsonObject:
    """The coefficients set from published ratios and estimates, with their ranges."""
    coefs: dict[str, Any] = {}
    lo, hi, src = _claim("004-ecc-vs-rsa")
    rsa = p["handshake_full_rsa2048_us"]
    mid = math.sqrt(lo * hi)
    coefs["handshake_full_ecdsa_p256_us"] = _range_coef(
        rsa / mid,
        rsa / hi,
        rsa / lo,
        UNITS["handshake_full_ecdsa_p256_us"],
        f"RSA 2048 handshake / {mid:.2f} (published ratio {lo:g}-{hi:g}x, {src}; an input)",
    )
    coefs["handshake_resumed_us"] = _range_coef(
        40.0,
        20.0,
        80.0,
        "us/handshake",
        "estimate: an abbreviated handshake (session ticket) skips the signature and key "
        "exchange; symmetric work and two extra records cost about 40 us on the reference "
        "core (20-80)",
    )
    coefs["gzip_byte_ns"] = _range_coef(
        8.0,
        5.0,
        15.0,
        "ns/byte",
        "estimate: zlib at NGINX's default level 1 compresses about 125 MB/s of text on a "
        "2015 server core: 8 ns per input byte (5-15)",
    )
    for name, (value, low, high, why) in proxy_terms(p).items():
        # Measured over loopback; the upstream leg's packets over a NIC are counted apart.
        coefs[name] = {
            **_range_coef(value, low, high, UNITS[name], why),
            "measured_over": "loopback",
        }
    proxy = coefs["proxy_request_us"]["value"]
    glo, ghi, gsrc = _claim("002-apigw-vs-rp")
    # A 1 KB HTTPS request through the reverse proxy, priced by the one cost formula (the
    # seed's body_us holds HTTPS's fixed body cost: no tls_body_us).
    rp = {**p, "proxy_request_us": proxy, "proxy_byte_ns": coefs["proxy_byte_ns"]["value"]}
    terms = cost_terms(1024, https=True, scenario="reverse_proxy")
    rp_https_1k = seed_cost_us(rp, terms)
    gmid = 1 / math.sqrt(glo * ghi) - 1
    coefs["gateway_request_us"] = _range_coef(
        rp_https_1k * gmid,
        rp_https_1k * (1 / ghi - 1),
        rp_https_1k * (1 / glo - 1),
        "us/request",
        f"regex match and URI rewrite: {gmid:.1%} of a 1 KB HTTPS reverse proxy request "
        f"(published {1 - ghi:.0%}-{1 - glo:.0%} fewer RPS, {gsrc}; an input)",
    )
    h2, h2_lo, h2_hi, h2_why = http2_term(p)
    coefs["http2_request_us"] = {
        "value": _sig(h2),
        "stderr": _sig((h2_hi - h2_lo) / 3.92, 2),
        "unit": "us/request",
        "measured_over": "loopback",
        "source": h2_why,
    }
    coefs["nic_packet_us"] = _range_coef(
        0.8,
        0.4,
        1.6,
        "us/packet",
        "estimate: a packet through a NIC driver, interrupts and NAPI costs about 1 us of a "
        "core (the kernel forwards about 1 Mpps per core); loopback skips most of it: 0.8 us "
        "(0.4-1.6) on the reference core",
    )
    coefs["vnic_packet_us"] = _range_coef(
        0.3,
        0.1,
        1.0,
        "us/packet",
        "estimate: a cloud VM's virtual NIC (ENA, gVNIC, virtio) adds hypervisor and "
        "packet-allowance work over the seed's bare-metal NIC: 0.3 us (0.1-1.0) per packet on "
        "the reference core",
    )
    return coefs


def _correlations(fit: CostFit) -> dict[str, float]:
    """The fitted coefficients' correlations of 0.05 or more (in log space), by pair."""
    names = fit["names"]
    cov = fit["cov_log"]
    corr: dict[str, float] = {}
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if j <= i or a not in FITTED or b not in FITTED:
                continue
            c = cov[i][j] / math.sqrt(cov[i][i] * cov[j][j]) if cov[i][i] and cov[j][j] else 0.0
            if abs(c) >= 0.05:
                corr[f"{a}|{b}"] = round(c, 2)
    return corr


def cost_model_doc(fit: CostFit) -> JsonObject:
    """The stored reference cost model: fitted coefficients, estimates, scaling, residuals."""
    p, se = fit["params"], fit["stderr"]
    coefs = {**_fitted_coefficients(p, se), **_input_coefficients(p)}
    corr = _correlations(fit)
    tls_value, tls_lo, tls_hi, tls_why = tls_byte_current(p)
    tls_current = {
        **_range_coef(tls_value, tls_lo, tls_hi, "ns/byte", tls_why),
        "measured_over": "loopback",
    }
    return {
        "schema": "nginx-sizing/cost-model/1",
        "generated_by": "python -m sizing precompute",
        "cpu_model": REFERENCE_CPU,
        "stack": REFERENCE_STACK,
        "source": REFERENCE_SOURCE,
        "measured_over": "nic",
        "speed_basis": "core",
        "arch": "x86_64",
        "coefficients": coefs,
        # What `sizing.model.capacity.current_stack` puts in place of the seed's 2015 build.
        "current_stack": {"tls_byte_ns": tls_current},
        "correlation": corr,
        "scaling": {
            "sigma": _sig(p["sigma"]),
            "sigma_stderr": _sig(se["sigma"], 2),
            "meaning": "n workers deliver n / (1 + sigma (n - 1)) workers' worth of requests",
        },
        "seed_test": {
            "z_us": _sig(p["z_us"]),
            "z_us_stderr": _sig(se["z_us"], 2),
            "z_connection_us": _sig(p["z_connection_us"]),
            "z_connection_us_stderr": _sig(se["z_connection_us"], 2),
            "z_handshake_us": _sig(p["z_handshake_us"]),
            "z_handshake_us_stderr": _sig(se["z_handshake_us"], 2),
            "z_byte_ns": _sig(p["z_byte_ns"]),
            "z_byte_ns_stderr": _sig(se["z_byte_ns"], 2),
            "link_fraction": _sig(p["link_fraction"]),
            "link_fraction_stderr": _sig(se["link_fraction"], 2),
            "meaning": "seed 004's closed loop (50 connections from one client: delay z_us per "
            "request outside the server plus z_byte_ns per response byte on the wire, plus "
            "z_connection_us per new connection and z_handshake_us per full TLS handshake, the "
            "client's side of it) and its 80 Gbps link x link_fraction; never applied to cloud "
            "instances",
        },
        "residual_sd": _sig(fit["residual_sd"], 2),
        "n_points": fit["n_points"],
        "residuals": [
            {
                "metric": r["metric"],
                "protocol": r["protocol"],
                "file_bytes": r["file_bytes"],
                "cpus": r["cpus"],
                "value": r["value"],
                "predicted": _sig(r["predicted"], 4),
                "error_pct": round(r["error_pct"], 1),
            }
            for r in fit["residuals"]
        ],
    }


def precompute_cost_model(path: str | Path | None = None) -> Path:
    """Fit the cost model to every seed-004 RPS and CPS point and write it to ``data/fits/``."""
    p = Path(path) if path is not None else COST_MODEL_PATH
    p.parent.mkdir(parents=True, exist_ok=True)
    doc = cost_model_doc(fit_cost_model(seed_points()))
    write_atomic(p, json.dumps(finite_json(doc), indent=1, sort_keys=True) + "\n")
    return p


def fit_ht_nginx() -> float:
    """Solve NGINX's hyper-thread gain so the model reproduces seed 000's T2A/N2 ratio.

    Bisection on the gain: the model's ratio at the claim's workload falls as the gain (which
    raises the hyper-threaded N2) rises.
    """
    claim_id, target = platforms.HT_FIT_CLAIM[0], platforms.HT_FIT_CLAIM[1]
    catalog = load_catalog()

    def ratio(ht: float) -> float:
        platforms._HT_OVERRIDE.append(ht)
        platforms.ht_nginx.cache_clear()
        try:
            rows = [r for r in recompute_claims(catalog) if r["claim_id"] == claim_id]
            return float(rows[0]["recomputed_low"])
        finally:
            platforms._HT_OVERRIDE.pop()
            platforms.ht_nginx.cache_clear()

    lo, hi = 1.0, 2.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if ratio(mid) > target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def precompute_platforms(path: str | Path | None = None) -> Path:
    """Write the fitted hyper-thread gain to ``data/platforms/nginx-ht.json``."""
    p = Path(path) if path is not None else platforms.HT_FIT_PATH
    p.parent.mkdir(parents=True, exist_ok=True)
    ht = fit_ht_nginx()
    doc = {
        "ht_nginx": _sig(ht, 3),
        "claim": platforms.HT_FIT_CLAIM[0],
        "ratio": platforms.HT_FIT_CLAIM[1],
        "generated_by": "python -m sizing precompute",
        "meaning": "NGINX work of a core's two hyper-threads over one thread, fitted so the "
        "capacity model reproduces seed 000's T2A/N2 ratio at its workload",
    }
    write_atomic(p, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return p
