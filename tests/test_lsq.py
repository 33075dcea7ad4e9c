"""The numpy least-squares fitter against scipy's ``curve_fit``, and the ``--runs`` imports."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from sizing.model import curves
from sizing.model.datasets import reference_series
from sizing.model.lsq import Weighting, fit_least_squares

ROOT = Path(__file__).resolve().parents[1]
#: Models whose parameters the published table determines. The plateau models' knees are
#: flat on most series (a sharpness of 5 or 50 fits alike): the two fitters stop at
#: different points of the flat minimum, with residuals equal to 1e-12.
MODELS = ("linear", "sqrt", "power", "amdahl", "usl")
SERIES = reference_series("nginx-web-server")


def _start(spec: curves.ModelSpec, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """The start and bounds `curves.CurveFit.fit` gives both fitters."""
    p0 = np.clip(spec.guess(x, y), spec.lower, spec.upper)
    lo, hi = np.asarray(spec.lower, dtype=float), np.asarray(spec.upper, dtype=float)
    span = np.where(np.isfinite(hi), hi - lo, np.abs(p0) + 1.0)
    p0 = np.clip(p0, lo + 1e-9 * span, np.where(np.isfinite(hi), hi - 1e-9 * span, np.inf))
    return p0, lo, hi


@pytest.mark.parametrize("loss", ["linear", "soft_l1"])
@pytest.mark.parametrize("errors", ["relative", "absolute"])
@pytest.mark.parametrize("model", MODELS)
def test_fitter_matches_curve_fit_on_the_published_table(model, errors, loss):
    """Coefficients and standard errors as ``curve_fit`` gives them, on recorded data.

    Every series of seed 004's table (13 series, 4 to 7 CPU counts). A parameter is compared
    where the data determine it (its standard error below half its value, or it sits at a
    bound): the two fitters stop at different points of a flat minimum otherwise. Agreement:
    the coefficient within 1e-6 of itself or 1e-4 of its standard error, the standard error
    within 1e-4 (both take it from a forward-difference Jacobian, at points that differ by
    the coefficients' difference).
    """
    from scipy.optimize import curve_fit

    spec = curves.MODELS[model]
    compared = 0
    for s in SERIES:
        x, y = np.asarray(s["x"], dtype=float), np.asarray(s["y"], dtype=float)
        if x.size <= len(spec.params):
            continue
        p0, lo, hi = _start(spec, x, y)
        sigma = y if errors == "relative" else None
        f_scale = 0.02 if errors == "relative" else 0.02 * float(np.median(y))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, want_cov = curve_fit(
                spec.func,
                x,
                y,
                p0=p0,
                sigma=sigma,
                absolute_sigma=False,
                bounds=(lo, hi),
                method="trf",
                ftol=1e-14,
                xtol=1e-14,
                gtol=1e-14,
                max_nfev=20000,
                loss=loss,
                f_scale=f_scale,
            )
        got, got_cov = fit_least_squares(
            spec.func, x, y, p0, lo, hi, weighting=Weighting(sigma, loss, f_scale)
        )
        want_se, got_se = np.sqrt(np.diag(want_cov)), np.sqrt(np.diag(got_cov))
        at_bound = (np.abs(want - lo) < 1e-6 * want_se) | (np.abs(hi - want) < 1e-6 * want_se)
        determined = (want_se < 0.5 * np.abs(want)) | at_bound
        if not determined.all():
            continue
        compared += 1
        where = (s["metric"], s["protocol"], s["file_size"])
        assert np.all(np.abs(got - want) <= 1e-6 * np.abs(want) + 1e-4 * want_se), (
            where,
            got,
            want,
        )
        assert got_se == pytest.approx(want_se, rel=1e-4), (where, got_se, want_se)
    assert compared >= 3, "too few series determine this model's parameters to compare"


def test_fitter_covariance_rule_without_spare_points_is_infinite():
    """As ``curve_fit``: as many points as parameters leave the errors unknown (inf)."""
    spec = curves.MODELS["power"]
    x, y = np.array([1.0, 4.0]), np.array([10.0, 20.0])
    p0, lo, hi = _start(spec, x, y)
    popt, pcov = fit_least_squares(spec.func, x, y, p0, lo, hi)
    assert popt == pytest.approx([10.0, 0.5], rel=1e-9)
    assert np.all(np.isinf(pcov))


def test_fitter_refuses_a_bad_start_and_an_unknown_loss():
    spec = curves.MODELS["linear"]
    with pytest.raises(ValueError, match="outside the bounds"):
        fit_least_squares(spec.func, [1, 2], [1, 2], [-1.0], spec.lower, spec.upper)
    with pytest.raises(ValueError, match="loss"):
        fit_least_squares(
            spec.func, [1, 2], [1, 2], [1.0], spec.lower, spec.upper, weighting=Weighting(loss="x")
        )


def test_student_t_quantile_matches_scipy():
    from scipy.special import stdtrit

    for dof in [*range(1, 60), 100, 250, 1000]:
        for p in (0.6, 0.75, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 0.9995, 0.025, 0.3):
            want = float(stdtrit(dof, p))
            assert curves._student_t_quantile(p, dof) == pytest.approx(want, rel=1e-11), (dof, p)
    assert curves._student_t_quantile(0.975, 2.5) == pytest.approx(float(stdtrit(2.5, 0.975)))


PROBE = """
import sys
from sizing.cli.main import main
try:
    code = main(sys.argv[1:])
finally:
    heavy = ("pandas", "scipy.optimize", "scipy.stats")
    loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + ".")})
    sys.stderr.write("LOADED " + " ".join(loaded) + "\\n")
sys.exit(code)
"""


def test_recommend_runs_imports_neither_pandas_nor_scipy_optimize(tmp_path):
    """The ``--runs`` path reads trial rows and fits with numpy alone."""
    from runners.search import SearchOptions, run_search
    from runners.sim import SimServer
    from runners.sweep import Plan

    run_id, _ = run_search(
        Plan(vcpus=(1, 2, 4, 8), label="c7g"), SearchOptions(), tmp_path, sim=SimServer(seed=1)
    )
    argv = ["recommend", "--rps", "1e6", "--protocol", "http", "--allow-simulated"]
    p = subprocess.run(
        [sys.executable, "-c", PROBE, *argv, "--runs", str(tmp_path / run_id)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert "Rests on SIMULATED runs" in p.stdout
    (line,) = [ln for ln in p.stderr.splitlines() if ln.startswith("LOADED")]
    assert line == "LOADED ", line
