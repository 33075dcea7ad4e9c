"""Fit the reference scaling tables, and precompute the fits the ``recommend`` path reads."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sizing import curves
from sizing.capacity import ESTIMATES, REFERENCE_LINK_GBPS, bytes_per_response
from sizing.datasets import reference_series
from sizing.paths import FITS_PATH

PLATEAU_MODELS = ("linear_plateau", "smooth_plateau", "power_plateau")


def _link_bound(series: dict[str, Any], fit: curves.CurveFit) -> bool:
    """Whether the fitted plateau of an RPS series is the reference test link."""
    if series["metric"] != "requests_per_s" or fit.model not in PLATEAU_MODELS:
        return False
    wire = bytes_per_response(float(series["file_bytes"]), str(series["protocol"]))
    top_gbps = float(fit.predict([fit.x_range_[1]])[0]) * wire * 8 / 1e9
    return top_gbps >= ESTIMATES["reference_link_bound_fraction"][0] * REFERENCE_LINK_GBPS


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


def finite_json(obj: Any) -> Any:
    """Replace non-finite floats (inf AICc, nan LOO) with None so the JSON is standard."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite_json(v) for v in obj]
    return obj


def precompute(path: str | Path = FITS_PATH, name: str = "nginx-web-server") -> Path:
    """Write the fitted reference curves that ``recommend`` evaluates without scipy."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "dataset": name,
        "generated_by": "python -m sizing precompute",
        "series": fit_reference(name, compare=False),
    }
    p.write_text(json.dumps(finite_json(doc), indent=1, sort_keys=True) + "\n")
    return p
