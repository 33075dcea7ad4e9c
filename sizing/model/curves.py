"""Scaling models as pure functions, their fitting, intervals and model selection.

Every model maps a number of CPUs ``x`` (NGINX workers or vCPUs) to a rate ``y`` (requests,
connections per second, or Gbps) and works on scalars and arrays alike. Fitting follows the
scikit-learn contract: hyperparameters in ``__init__``, ``fit(x, y)`` returns ``self``, learned
values end in ``_``.

This module imports only numpy. Fits are bounded nonlinear least squares by
`sizing.model.lsq` (numpy; the parameters and covariance ``scipy.optimize.curve_fit`` gives,
without its half second of imports), and the intervals' Student t quantiles come from the
closed form for whole degrees of freedom, so that fitting a run folder starts fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from trialtable.jsonvalue import JsonObject

FloatArray = NDArray[np.float64]


def power(x: ArrayLike, a: float, b: float) -> FloatArray:
    """Power law ``a * x**b``.

    Parameters
    ----------
    x : numeric
        CPUs [1].
    a : float
        Rate at one CPU [unit of y].
    b : float
        Exponent [1]; 0.5 is the sqrt(x) shape, 1 is linear.
    """
    return a * np.asarray(x, dtype=float) ** b


def sqrt(x: ArrayLike, a: float) -> FloatArray:
    """Square-root law ``a * sqrt(x)``: the power law with ``b = 0.5`` fixed."""
    return power(x, a, 0.5)


def linear(x: ArrayLike, a: float) -> FloatArray:
    """Linear scaling through the origin, ``a * x``."""
    return a * np.asarray(x, dtype=float)


def linear_plateau(x: ArrayLike, a: float, p: float) -> FloatArray:
    """Linear rise with a hard knee, ``min(a * x, p)``; the knee sits at ``x = p / a``."""
    return np.minimum(a * np.asarray(x, dtype=float), p)


def smooth_plateau(x: ArrayLike, a: float, p: float, s: float) -> FloatArray:
    """Linear rise bending smoothly into a plateau.

    ``a*x / (1 + (a*x/p)**s)**(1/s)``: slope ``a`` at small ``x``, limit ``p``, and a knee
    whose sharpness grows with ``s`` (``s -> inf`` gives :func:`linear_plateau`).
    """
    ax = a * np.asarray(x, dtype=float)
    return ax / (1.0 + (ax / p) ** s) ** (1.0 / s)


def power_plateau(x: ArrayLike, a: float, b: float, p: float, s: float) -> FloatArray:
    """Power-law rise bending smoothly into a plateau.

    ``a*x**b / (1 + (a*x**b/p)**s)**(1/s)``: :func:`smooth_plateau` with a free exponent,
    for rises that are sub- or super-linear before the knee.
    """
    axb = a * np.asarray(x, dtype=float) ** b
    return axb / (1.0 + (axb / p) ** s) ** (1.0 / s)


def amdahl(x: ArrayLike, lam: float, sigma: float) -> FloatArray:
    """Amdahl's law, ``lam*x / (1 + sigma*(x-1))``: USL with no coherency term."""
    xf = np.asarray(x, dtype=float)
    return lam * xf / (1.0 + sigma * (xf - 1.0))


def usl(x: ArrayLike, lam: float, sigma: float, kappa: float) -> FloatArray:
    """Universal Scalability Law, ``lam*x / (1 + sigma*(x-1) + kappa*x*(x-1))``.

    Parameters
    ----------
    x : numeric
        Concurrency or CPUs [1].
    lam : float
        Rate of one unit without contention [unit of y].
    sigma : float
        Contention (serial fraction) [1].
    kappa : float
        Coherency (crosstalk) cost [1].
    """
    xf = np.asarray(x, dtype=float)
    return lam * xf / (1.0 + sigma * (xf - 1.0) + kappa * xf * (xf - 1.0))


def usl_peak_x(sigma: float, kappa: float) -> float:
    """Continuous ``x`` of the USL maximum, ``sqrt((1 - sigma) / kappa)`` (inf when kappa = 0)."""
    if kappa <= 0:
        return math.inf
    return math.sqrt(max(1.0 - sigma, 0.0) / kappa)


def bandwidth_cap_rps(link_gbps: ArrayLike, bytes_per_response: ArrayLike) -> FloatArray:
    """Responses per second a link can carry.

    Parameters
    ----------
    link_gbps : numeric
        Link or instance bandwidth [Gbit/s].
    bytes_per_response : numeric
        Bytes on the wire per response, headers and framing included [B].
    """
    return (
        np.asarray(link_gbps, dtype=np.float64)
        * 1e9
        / 8.0
        / np.asarray(bytes_per_response, dtype=np.float64)
    )


def _student_t_cdf(t: float, dof: int) -> float:
    """``P(T <= t)`` of Student's t with a whole number ``dof`` of degrees of freedom [1].

    The closed form for whole ``dof`` (Abramowitz and Stegun 26.7.3 and 26.7.4): with
    ``theta = atan(t / sqrt(dof))``, ``P(|T| <= t)`` is a finite series in ``cos(theta)``.
    """
    theta = math.atan(abs(t) / math.sqrt(dof))
    c2 = math.cos(theta) ** 2
    if dof % 2:
        total, term = 1.0, 1.0
        for j in range(2, dof - 1, 2):  # 2/3 c2, (2*4)/(3*5) c2^2, ...
            term *= c2 * j / (j + 1)
            total += term
        inside = (
            2.0 / math.pi * (theta + (math.sin(theta) * math.cos(theta) * total if dof > 1 else 0))
        )
    else:
        total, term = 1.0, 1.0
        for j in range(1, dof - 2, 2):  # 1/2 c2, (1*3)/(2*4) c2^2, ...
            term *= c2 * j / (j + 1)
            total += term
        inside = math.sin(theta) * total
    return 0.5 + 0.5 * inside if t >= 0 else 0.5 - 0.5 * inside


def _student_t_quantile(p: float, dof: float) -> float:
    """Quantile ``p`` of Student's t with ``dof`` degrees of freedom [1].

    For a whole ``dof`` (every fit's ``n - k``): Newton's method on the closed-form
    distribution function (`_student_t_cdf`), started from the normal quantile and kept
    inside a bracket, to the last bits of a double; it agrees with ``scipy.special.stdtrit``
    (which ``scipy.stats.t.ppf`` calls) to 1e-11 relative or better, without importing scipy (a
    fifth of a second on the ``--runs`` path). Another ``dof`` asks ``stdtrit`` itself.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1, not {p}")
    if dof != int(dof) or dof < 1:
        from scipy.special import stdtrit

        return float(stdtrit(dof, p))
    n = int(dof)
    if p < 0.5:
        return -_student_t_quantile(1.0 - p, n)
    if p == 0.5:
        return 0.0
    if n == 1:
        return math.tan(math.pi * (p - 0.5))
    if n == 2:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    log_norm = math.lgamma((n + 1) / 2) - math.lgamma(n / 2) - 0.5 * math.log(n * math.pi)
    lo, hi = 0.0, 1.0
    while _student_t_cdf(hi, n) < p:
        lo, hi = hi, 2.0 * hi
    t = min(max(NormalDist().inv_cdf(p), lo), hi)
    for _ in range(200):
        err = _student_t_cdf(t, n) - p
        if err > 0:
            hi = t
        else:
            lo = t
        density = math.exp(log_norm - (n + 1) / 2 * math.log1p(t * t / n))
        step = err / density
        nxt = t - step
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - t) <= 1e-16 * abs(t) or nxt in (lo, hi):
            return nxt
        t = nxt
    return t


@dataclass(frozen=True)
class ModelSpec:
    """A named model: its function, parameter names, and how to start and bound a fit."""

    name: str
    func: Callable[..., FloatArray]
    params: tuple[str, ...]
    guess: Callable[[FloatArray, FloatArray], list[float]]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    formula: str


def _slope0(x: FloatArray, y: FloatArray) -> float:
    i = int(np.argmin(x))
    return float(y[i] / x[i])


def _usl_guess(x: FloatArray, y: FloatArray) -> list[float]:
    # Gunther's linearisation: x/C - 1 = sigma*(x-1) + kappa*x*(x-1), with C = y/lam.
    lam = _slope0(x, y)
    c = y / lam
    mask = x > 1
    if mask.sum() >= 2:
        lhs = x[mask] / c[mask] - 1.0
        design = np.column_stack([x[mask] - 1.0, x[mask] * (x[mask] - 1.0)])
        (sig, kap), *_ = np.linalg.lstsq(design, lhs, rcond=None)
        return [lam, float(min(max(sig, 1e-6), 0.99)), float(max(kap, 1e-9))]
    return [lam, 0.01, 1e-4]


def _plateau_guess(x: FloatArray, y: FloatArray) -> list[float]:
    return [_slope0(x, y), float(np.max(y))]


def _power_guess(x: FloatArray, y: FloatArray) -> list[float]:
    ok = (x > 0) & (y > 0)
    if ok.sum() >= 2:
        b, loga = np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)
        return [float(math.exp(loga)), float(b)]
    return [_slope0(x, y), 1.0]


INF = math.inf

MODELS: dict[str, ModelSpec] = {
    "linear": ModelSpec(
        "linear", linear, ("a",), lambda x, y: [_slope0(x, y)], (0.0,), (INF,), "a*x"
    ),
    "sqrt": ModelSpec(
        "sqrt", sqrt, ("a",), lambda x, y: [_slope0(x, y)], (0.0,), (INF,), "a*sqrt(x)"
    ),
    "power": ModelSpec("power", power, ("a", "b"), _power_guess, (0.0, -2.0), (INF, 3.0), "a*x**b"),
    "linear_plateau": ModelSpec(
        "linear_plateau",
        linear_plateau,
        ("a", "p"),
        _plateau_guess,
        (0.0, 0.0),
        (INF, INF),
        "min(a*x, p)",
    ),
    "smooth_plateau": ModelSpec(
        "smooth_plateau",
        smooth_plateau,
        ("a", "p", "s"),
        lambda x, y: [*_plateau_guess(x, y), 4.0],
        (0.0, 0.0, 0.5),
        (INF, INF, 50.0),
        "a*x / (1 + (a*x/p)**s)**(1/s)",
    ),
    "power_plateau": ModelSpec(
        "power_plateau",
        power_plateau,
        ("a", "b", "p", "s"),
        lambda x, y: [*_power_guess(x, y), float(np.max(y)), 4.0],
        (0.0, 0.05, 0.0, 0.5),
        (INF, 3.0, INF, 50.0),
        "a*x**b / (1 + (a*x**b/p)**s)**(1/s)",
    ),
    "amdahl": ModelSpec(
        "amdahl",
        amdahl,
        ("lam", "sigma"),
        lambda x, y: _usl_guess(x, y)[:2],
        (0.0, 0.0),
        (INF, 1.0),
        "lam*x / (1 + sigma*(x-1))",
    ),
    "usl": ModelSpec(
        "usl",
        usl,
        ("lam", "sigma", "kappa"),
        _usl_guess,
        (0.0, 0.0, 0.0),
        (INF, 1.0, INF),
        "lam*x / (1 + sigma*(x-1) + kappa*x*(x-1))",
    ),
}

DEFAULT_CANDIDATES: tuple[str, ...] = (
    "linear",
    "sqrt",
    "power",
    "linear_plateau",
    "smooth_plateau",
    "power_plateau",
    "amdahl",
    "usl",
)


def evaluate(model: str, params: Mapping[str, float], x: ArrayLike) -> FloatArray:
    """Evaluate a named model with named parameters (for precomputed fits).

    Raises
    ------
    ValueError
        If the model is unknown or a parameter is missing.
    """
    spec = _spec(model)
    missing = [p for p in spec.params if p not in params]
    if missing:
        raise ValueError(f"model {model!r} needs parameters {missing}")
    return spec.func(x, *(float(params[p]) for p in spec.params))


def _spec(model: str) -> ModelSpec:
    try:
        return MODELS[model]
    except KeyError:
        known = ", ".join(MODELS)
        raise ValueError(f"unknown model {model!r}; expected one of: {known}") from None


def _as_xy(x: ArrayLike, y: ArrayLike, nparams: int) -> tuple[FloatArray, FloatArray]:
    xa = np.asarray(x, dtype=float).ravel()
    ya = np.asarray(y, dtype=float).ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length ({xa.size} vs {ya.size})")
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(ya))):
        raise ValueError("x and y must be finite numbers")
    if np.any(xa <= 0):
        raise ValueError("x (CPUs) must be positive")
    if np.any(ya <= 0):
        raise ValueError("y must be positive")
    if xa.size < nparams:
        raise ValueError(f"{xa.size} points cannot fit {nparams} parameters")
    return xa, ya


class CurveFit:
    """A scaling model fitted by (weighted) nonlinear least squares.

    Parameters
    ----------
    model : str
        A key of :data:`MODELS`.
    errors : {"absolute", "relative"}
        ``absolute`` minimises the sum of squared residuals in ``y`` (the standard
        least-squares solution); ``relative`` minimises squared relative residuals, which
        suits rates spanning orders of magnitude and the MAPE criterion.
    loss : {"linear", "soft_l1"}
        ``linear`` is ordinary least squares; ``soft_l1`` is a robust loss (pseudo-Huber, scale
        2% of ``y``) that lets one stray point pull the curve less.

    Attributes
    ----------
    params_ : dict
        Fitted parameters by name.
    stderr_ : dict
        Standard errors of the parameters (nan where the fit cannot tell).
    cov_ : ndarray
        Parameter covariance matrix.
    r2_, mape_pct_, aicc_, rss_ : float
        Quality: coefficient of determination, mean absolute percentage error [%],
        corrected Akaike information criterion, weighted residual sum of squares.
    n_ : int
        Number of points fitted.
    x_range_ : tuple of float
        Smallest and largest ``x`` seen by the fit.
    """

    def __init__(self, model: str = "usl", errors: str = "absolute", loss: str = "linear") -> None:
        self.model = model
        self.errors = errors
        self.loss = loss

    @property
    def spec(self) -> ModelSpec:
        """The :class:`ModelSpec` of this fit's model."""
        return _spec(self.model)

    def fit(self, x: ArrayLike, y: ArrayLike) -> CurveFit:
        """Fit the model to points ``(x, y)`` and return ``self``.

        Raises
        ------
        ValueError
            If the model or the errors setting is unknown, or the data cannot be fitted.
        """
        from sizing.model.lsq import Weighting, fit_least_squares

        spec = self.spec
        if self.errors not in ("absolute", "relative"):
            raise ValueError(f"errors must be 'absolute' or 'relative', not {self.errors!r}")
        if self.loss not in ("linear", "soft_l1"):
            raise ValueError(f"loss must be 'linear' or 'soft_l1', not {self.loss!r}")
        xa, ya = _as_xy(x, y, len(spec.params))
        sigma = ya if self.errors == "relative" else None
        p0 = np.clip(spec.guess(xa, ya), spec.lower, spec.upper)
        lower = np.asarray(spec.lower)
        upper = np.asarray(spec.upper)
        # Start strictly inside the bounds, as trust-region-reflective requires.
        span = np.where(np.isfinite(upper), upper - lower, np.abs(p0) + 1.0)
        p0 = np.clip(
            p0, lower + 1e-9 * span, np.where(np.isfinite(upper), upper - 1e-9 * span, INF)
        )
        try:
            popt, pcov = fit_least_squares(
                spec.func,
                xa,
                ya,
                p0,
                lower,
                upper,
                weighting=Weighting(
                    sigma,
                    self.loss,
                    0.02 if self.errors == "relative" else 0.02 * float(np.median(ya)),
                ),
                max_nfev=20000,
            )
        except ValueError as exc:
            raise ValueError(f"could not fit {spec.name}: {exc}") from None
        self.params_ = {name: float(v) for name, v in zip(spec.params, popt, strict=True)}
        self.cov_ = np.asarray(pcov, dtype=float)
        with np.errstate(invalid="ignore"):
            se = np.sqrt(np.diag(self.cov_))
        self.stderr_ = {name: float(v) for name, v in zip(spec.params, se, strict=True)}
        self._score(xa, ya)
        return self

    def _score(self, xa: FloatArray, ya: FloatArray) -> None:
        pred = self.predict(xa)
        resid = ya - pred
        w = 1.0 / ya if self.errors == "relative" else np.ones_like(ya)
        n, k = ya.size, len(self.spec.params)
        self.n_ = int(n)
        self.x_range_ = (float(xa.min()), float(xa.max()))
        self.dof_ = int(n - k)
        self.rss_ = float(np.sum((resid * w) ** 2))
        tss = float(np.sum((ya - ya.mean()) ** 2))
        self.r2_ = float(1.0 - np.sum(resid**2) / tss) if tss > 0 else math.nan
        self.mape_pct_ = float(100.0 * np.mean(np.abs(resid / ya)))
        self.aicc_ = aicc(self.rss_, n, k)
        self._x = xa
        self._y = ya

    def predict(self, x: ArrayLike) -> FloatArray:
        """Fitted rate at ``x``."""
        return evaluate(self.model, self.params_, x)

    def _jacobian(self, x: FloatArray) -> FloatArray:
        names = self.spec.params
        base = np.array([self.params_[p] for p in names])
        cols = []
        for i in range(len(names)):
            h = 1e-6 * max(abs(base[i]), 1e-12)
            up, dn = base.copy(), base.copy()
            up[i] += h
            dn[i] -= h
            cols.append((self.spec.func(x, *up) - self.spec.func(x, *dn)) / (2 * h))
        return np.column_stack(cols)

    def predict_interval(
        self, x: ArrayLike, level: float = 0.95, kind: str = "confidence"
    ) -> tuple[FloatArray, FloatArray]:
        """Lower and upper bounds around :meth:`predict` at ``x``.

        Parameters
        ----------
        x : numeric
            CPUs [1].
        level : float
            Two-sided coverage, between 0 and 1.
        kind : {"confidence", "prediction"}
            ``confidence`` bounds the fitted curve (delta method on the parameter
            covariance, Student t quantile); ``prediction`` also adds the residual scatter
            of a new observation.
        """
        if not 0 < level < 1:
            raise ValueError(f"level must be between 0 and 1, not {level}")
        xa = np.atleast_1d(np.asarray(x, dtype=float))
        pred = self.predict(xa)
        jac = self._jacobian(xa)
        var = np.einsum("ij,jk,ik->i", jac, self.cov_, jac)
        if kind == "prediction":
            s2 = self.rss_ / max(self.dof_, 1)
            scale = pred**2 if self.errors == "relative" else np.ones_like(pred)
            var = var + s2 * scale
        elif kind != "confidence":
            raise ValueError(f"kind must be 'confidence' or 'prediction', not {kind!r}")
        q = _student_t_quantile(0.5 + level / 2, max(self.dof_, 1))
        half = q * np.sqrt(np.maximum(var, 0.0))
        return pred - half, pred + half

    def param_interval(self, name: str, level: float = 0.95) -> tuple[float, float]:
        """Confidence interval of one parameter (Student t on its standard error)."""
        q = _student_t_quantile(0.5 + level / 2, max(self.dof_, 1))
        v, se = self.params_[name], self.stderr_[name]
        return v - q * se, v + q * se

    def loo_mape_pct(self) -> float:
        """Leave-one-out mean absolute percentage error [%] (nan if too few points)."""
        xa, ya = self._x, self._y
        k = len(self.spec.params)
        if xa.size - 1 < k:
            return math.nan
        errs = []
        for i in range(xa.size):
            keep = np.arange(xa.size) != i
            try:
                sub = type(self)(self.model, self.errors, self.loss).fit(xa[keep], ya[keep])
            except ValueError:
                return math.nan
            errs.append(abs(float(sub.predict(xa[i : i + 1])[0]) - ya[i]) / ya[i])
        return float(100.0 * np.mean(errs))

    def to_dict(self) -> JsonObject:
        """Plain summary: model, formula, params, stderr, quality (JSON-ready)."""
        return {
            "model": self.model,
            "formula": self.spec.formula,
            "errors": self.errors,
            "loss": self.loss,
            "params": self.params_,
            "stderr": self.stderr_,
            "n": self.n_,
            "x_range": list(self.x_range_),
            "r2": self.r2_,
            "mape_pct": self.mape_pct_,
            "aicc": self.aicc_,
        }


class USL(CurveFit):
    """Universal Scalability Law fit, with ``lambda_``, ``sigma_``, ``kappa_`` and ``peak_x_``."""

    def __init__(self, model: str = "usl", errors: str = "absolute", loss: str = "linear") -> None:
        super().__init__(model, errors, loss)

    def fit(self, x: ArrayLike, y: ArrayLike) -> USL:
        """Fit and return ``self``; see :meth:`CurveFit.fit`."""
        super().fit(x, y)
        self.lambda_ = self.params_["lam"]
        self.sigma_ = self.params_["sigma"]
        self.kappa_ = self.params_["kappa"]
        self.peak_x_ = usl_peak_x(self.sigma_, self.kappa_)
        return self


def fit_curve(
    model: str, x: ArrayLike, y: ArrayLike, errors: str = "absolute", loss: str = "linear"
) -> CurveFit:
    """Fit one named model; the function twin of ``CurveFit(model, errors, loss).fit(x, y)``."""
    cls = USL if model == "usl" else CurveFit
    return cls(model, errors, loss).fit(x, y)


def fit_usl(x: ArrayLike, y: ArrayLike, errors: str = "absolute") -> USL:
    """Fit the Universal Scalability Law by nonlinear least squares.

    Parameters
    ----------
    x : array_like
        Concurrency or CPUs [1], positive.
    y : array_like
        Throughput at each ``x`` [any rate unit], positive.
    errors : {"absolute", "relative"}
        See :class:`CurveFit`.

    Returns
    -------
    USL
        The fitted model, with ``lambda_``, ``sigma_``, ``kappa_``, ``peak_x_``.
    """
    return USL(errors=errors).fit(x, y)


def aicc(rss: float, n: int, k: int) -> float:
    """Corrected Akaike information criterion of a least-squares fit.

    ``k`` counts the model's parameters; the residual variance is one more.
    """
    kk = k + 1
    if n - kk - 1 <= 0 or rss <= 0:
        return math.inf if rss > 0 else -math.inf
    return float(n * math.log(rss / n) + 2 * kk + 2 * kk * (kk + 1) / (n - kk - 1))


@dataclass
class Selection:
    """Result of :func:`select_model`: the winner and the comparison of all candidates."""

    best: CurveFit
    criterion: str
    table: list[dict[str, Any]]


def select_model(
    x: ArrayLike,
    y: ArrayLike,
    candidates: Sequence[str] = DEFAULT_CANDIDATES,
    errors: str = "relative",
    loss: str = "linear",
    criterion: str = "auto",
    loo_below: int = 10,
) -> Selection:
    """Fit every candidate model and pick one.

    Parameters
    ----------
    x, y : array_like
        CPUs [1] and rates.
    candidates : sequence of str
        Model names from :data:`MODELS`.
    errors : {"relative", "absolute"}
        Weighting of the residuals, as in :class:`CurveFit`.
    loss : {"linear", "soft_l1"}
        Loss, as in :class:`CurveFit`.
    criterion : {"auto", "aicc", "loo"}
        ``aicc`` picks the lowest AICc; ``loo`` the lowest leave-one-out MAPE; ``auto`` uses
        ``loo`` when there are fewer than ``loo_below`` points and ``aicc`` otherwise.
    loo_below : int
        Threshold for ``auto``.

    Returns
    -------
    Selection
        ``best`` fit, the ``criterion`` used, and ``table``: one row per candidate with
        ``model``, ``params``, ``mape_pct``, ``loo_mape_pct``, ``aicc``, ``delta_aicc``,
        ``r2``, ``selected`` and ``note`` (why a model is not ranked; failed fits carry an
        ``error``).

    Notes
    -----
    A model with ``k`` parameters is ranked only from ``n > k + 1`` points: with fewer it
    passes through (nearly) every point, leaves its errors unknown and no point out for its
    leave-one-out error. Such a model is not fitted; its row says why. When no candidate has
    few enough parameters, all are ranked.
    """
    n = np.asarray(x).size
    if criterion == "auto":
        criterion = "loo" if n < loo_below else "aicc"
    if criterion not in ("aicc", "loo"):
        raise ValueError(f"criterion must be 'auto', 'aicc' or 'loo', not {criterion!r}")
    fits: list[CurveFit] = []
    rows: list[dict[str, Any]] = []
    rankable = [c for c in candidates if n > len(_spec(c).params) + 1] or list(candidates)
    for name in candidates:
        if name not in rankable:
            k = len(_spec(name).params)
            rows.append(
                {
                    "model": name,
                    "selected": False,
                    "note": f"not ranked: {k} parameters need at least {k + 2} points, "
                    f"there are {n}",
                }
            )
            continue
        try:
            f = fit_curve(name, x, y, errors=errors, loss=loss)
        except ValueError as exc:
            rows.append({"model": name, "error": str(exc), "selected": False})
            continue
        fits.append(f)
        rows.append(
            {
                "model": name,
                "params": f.params_,
                "mape_pct": f.mape_pct_,
                "loo_mape_pct": f.loo_mape_pct(),
                "aicc": f.aicc_,
                "r2": f.r2_,
                "selected": False,
                "note": "",
            }
        )
    if not fits:
        raise ValueError("no candidate model could be fitted")
    ok = [r for r in rows if "mape_pct" in r]
    finite_aicc = [r["aicc"] for r in ok if math.isfinite(r["aicc"])]
    best_aicc = min(finite_aicc) if finite_aicc else math.nan
    for r in ok:
        r["delta_aicc"] = r["aicc"] - best_aicc if math.isfinite(r["aicc"]) else math.inf

    def key(r: dict[str, Any]) -> tuple[float, float]:
        primary = r["loo_mape_pct"] if criterion == "loo" else r["aicc"]
        if primary is None or math.isnan(primary):
            primary = math.inf
        return (primary, r["mape_pct"])

    winner = min(ok, key=key)
    winner["selected"] = True
    best = next(f for f in fits if f.model == winner["model"])
    return Selection(best=best, criterion=criterion, table=rows)
