import json
import math
from pathlib import Path

import numpy as np
import pytest

from sizing.model import curves

PUBLISHED = json.loads((Path(__file__).parent / "data" / "usl_published.json").read_text())


def _digits(value: float) -> float:
    """Relative precision a printed value carries (e.g. 0.0001044 -> 4 significant digits)."""
    text = f"{value:.10g}".lstrip("-0.").replace(".", "").rstrip("0")
    return 0.5 * 10.0 ** (1 - max(len(text), 1))


@pytest.mark.parametrize("ds", PUBLISHED["datasets"], ids=lambda d: d["name"])
def test_fit_usl_matches_published_least_squares(ds):
    fit = curves.fit_usl(ds["x"], ds["y"])
    got = {"sigma": fit.sigma_, "kappa": fit.kappa_, "lambda": fit.lambda_}
    for name, want in ds["expected"].items():
        if want == 0:
            assert abs(got[name]) < 1e-6, (name, got[name])
            continue
        # 1e-3 relative, or the precision the source printed when that is coarser.
        tol = max(1e-3, _digits(want))
        assert got[name] == pytest.approx(want, rel=tol), (name, got[name], want)
    assert fit.peak_x_ == pytest.approx(curves.usl_peak_x(fit.sigma_, fit.kappa_))


def test_usl_recovers_exact_synthetic_parameters():
    x = np.array([1, 2, 4, 8, 16, 32, 64.0])
    y = curves.usl(x, 1000.0, 0.05, 0.0008)
    fit = curves.fit_usl(x, y)
    assert fit.sigma_ == pytest.approx(0.05, rel=1e-6)
    assert fit.kappa_ == pytest.approx(0.0008, rel=1e-6)
    assert fit.lambda_ == pytest.approx(1000.0, rel=1e-6)
    assert fit.peak_x_ == pytest.approx(math.sqrt(0.95 / 0.0008))
    assert fit.mape_pct_ < 1e-6


def test_models_work_on_scalars_and_arrays():
    for name, spec in curves.MODELS.items():
        params = [1.0] * len(spec.params)
        if name == "usl":
            params = [1.0, 0.1, 0.01]
        scalar = spec.func(4.0, *params)
        array = spec.func(np.array([4.0, 8.0]), *params)
        assert np.ndim(scalar) == 0 and array.shape == (2,)
        assert float(scalar) == pytest.approx(float(array[0]))


def test_sqrt_is_power_with_half_exponent_and_plateau_knee():
    assert curves.sqrt(9.0, 2.0) == pytest.approx(6.0)
    assert curves.power(9.0, 2.0, 0.5) == pytest.approx(6.0)
    assert curves.linear_plateau(np.array([1, 5, 10.0]), 2.0, 10.0).tolist() == [2, 10, 10]
    # The smooth knee approaches the hard one as the sharpness grows.
    assert curves.smooth_plateau(100.0, 2.0, 10.0, 50.0) == pytest.approx(10.0, rel=1e-3)


def test_interval_contains_prediction_and_widens_with_level():
    x = np.array([1, 2, 4, 8, 16, 32.0])
    rng = np.random.default_rng(1)
    y = curves.usl(x, 100.0, 0.03, 0.001) * (1 + 0.02 * rng.standard_normal(x.size))
    fit = curves.fit_usl(x, y)
    lo95, hi95 = fit.predict_interval([10.0], level=0.95)
    lo50, hi50 = fit.predict_interval([10.0], level=0.5)
    mid = fit.predict([10.0])
    assert lo95[0] < lo50[0] < mid[0] < hi50[0] < hi95[0]
    plo, phi = fit.predict_interval([10.0], level=0.95, kind="prediction")
    assert plo[0] < lo95[0] and phi[0] > hi95[0]
    assert all(math.isfinite(v) and v > 0 for v in fit.stderr_.values())


def test_selection_returns_the_whole_comparison_table():
    x = [1, 2, 4, 8, 16, 32, 36]
    y = list(curves.linear_plateau(np.array(x, float), 10.0, 100.0))
    sel = curves.select_model(x, y, candidates=("linear", "linear_plateau", "usl"))
    assert sel.best.model == "linear_plateau"
    assert [r["model"] for r in sel.table] == ["linear", "linear_plateau", "usl"]
    assert sum(r["selected"] for r in sel.table) == 1
    assert all({"mape_pct", "loo_mape_pct", "aicc", "delta_aicc"} <= r.keys() for r in sel.table)


def test_aicc_penalises_parameters_on_few_points():
    assert curves.aicc(1.0, 7, 1) < curves.aicc(1.0, 7, 3)
    assert curves.aicc(1.0, 4, 3) == math.inf


def test_bandwidth_cap():
    # 10 Gbit/s of 1250-byte responses is one million responses per second.
    assert curves.bandwidth_cap_rps(10.0, 1250.0) == pytest.approx(1e6)


@pytest.mark.parametrize(
    "x,y,msg",
    [
        ([1, 2], [1, 2, 3], "differ in length"),
        ([0, 1, 2, 3], [1, 2, 3, 4], "positive"),
        ([1, 2, 3, 4], [1, float("nan"), 3, 4], "finite"),
        ([1, 2], [1, 2], "cannot fit 3 parameters"),
    ],
)
def test_fit_rejects_bad_input(x, y, msg):
    with pytest.raises(ValueError, match=msg):
        curves.fit_usl(x, y)


def test_unknown_model_is_named():
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        curves.CurveFit("nope").fit([1, 2, 3], [1, 2, 3])


def test_a_model_is_not_ranked_from_too_few_points():
    import warnings

    x, y = [1, 2, 4, 8], [40e3, 78e3, 150e3, 270e3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no OptimizeWarning from an unidentifiable fit
        sel = curves.select_model(x, y)
    rows = {r["model"]: r for r in sel.table}
    assert len(sel.best.params_) + 1 < len(x)
    assert rows["power_plateau"]["note"].startswith("not ranked: 4 parameters need at least 6")
    assert "mape_pct" not in rows["usl"] and not rows["usl"]["selected"]
    assert rows["linear"]["note"] == ""
    # With enough points every model is ranked.
    many = curves.select_model([1, 2, 4, 8, 16, 32], [1.0, 1.9, 3.6, 6.5, 11.0, 16.0])
    assert all(r.get("note", "") == "" for r in many.table)
