"""Bounded nonlinear least squares in numpy: the one fitter behind `sizing.model.curves`.

`fit_least_squares` answers what ``scipy.optimize.curve_fit(func, x, y, p0, sigma,
bounds=(lower, upper), method="trf", loss=...)`` answers, parameters and covariance, without
importing ``scipy.optimize`` (about half a second of imports, more than the whole command
that asks for a fit from a run folder).

The minimum is found by Levenberg-Marquardt with bounds (a step is clipped to the box; a
parameter at a bound whose gradient points out of the box is held there for the step),
steered by a central-difference Jacobian. The covariance follows ``curve_fit``'s rule
exactly: the Jacobian at the solution by forward differences with ``scipy``'s step
(``sqrt(eps) * max(1, |p|)``, turned back at a bound), scaled for a robust loss as
``least_squares`` scales it, inverted by SVD without the singular values below
``eps * max(shape) * s_max``, times the residual variance ``2 * cost / (n - k)`` (infinite
when ``n <= k``).

Where the data leave a parameter undetermined (a flat minimum: a plateau's sharpness, a slope
no remaining point constrains), the two searches stop at different points of equal residual;
`tests/test_lsq.py` compares them where the data determine every parameter.

Only numpy is imported.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

EPS = float(np.finfo(float).eps)
#: Forward-difference step relative to ``max(1, |p|)`` [1], ``least_squares``' default.
DIFF_STEP = EPS**0.5
LOSSES = ("linear", "soft_l1")
#: Relative change of the cost below which a step ends the search [1].
FTOL = 1e-15
#: Length of a step, relative to the parameters', below which it ends the search [1].
XTOL = 1e-14
#: Largest gradient of the cost at which the search ends [1].
GTOL = 1e-14


def _residuals(
    func: Callable[..., FloatArray], x: FloatArray, y: FloatArray, w: FloatArray, p: FloatArray
) -> FloatArray:
    """Weighted residuals ``(func(x, *p) - y) * w`` [1]; NaN where the model cannot be evaluated."""
    with np.errstate(all="ignore"):
        return (np.asarray(func(x, *p), dtype=float) - y) * w


def _rho(f: FloatArray, loss: str, f_scale: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The loss of each residual and its first two derivatives in ``f**2``, as ``least_squares``.

    ``soft_l1`` is ``2 * (sqrt(1 + z) - 1)`` with ``z = (f / f_scale)**2``, rescaled by
    ``f_scale**2``.
    """
    if loss == "linear":
        return f**2, np.ones_like(f), np.zeros_like(f)
    t = 1.0 + (f / f_scale) ** 2
    return 2.0 * (t**0.5 - 1.0) * f_scale**2, t**-0.5, -0.5 * t**-1.5 / f_scale**2


def _cost(f: FloatArray, loss: str, f_scale: float) -> float:
    """Half the sum of the loss [1] (``least_squares``' ``cost``); inf where not finite."""
    if not np.all(np.isfinite(f)):
        return math.inf
    return 0.5 * float(np.sum(_rho(f, loss, f_scale)[0]))


def _scaled(
    jac: FloatArray, f: FloatArray, loss: str, f_scale: float
) -> tuple[FloatArray, FloatArray]:
    """Jacobian and residuals scaled for a robust loss (``scale_for_robust_loss_function``)."""
    if loss == "linear":
        return jac, f
    _, rho1, rho2 = _rho(f, loss, f_scale)
    scale = rho1 + 2.0 * rho2 * f**2
    scale[scale < EPS] = EPS
    scale = scale**0.5
    return jac * scale[:, None], f * (rho1 / scale)


def forward_jacobian(
    fun: Callable[[FloatArray], FloatArray],
    p: FloatArray,
    f0: FloatArray,
    lower: FloatArray,
    upper: FloatArray,
) -> FloatArray:
    """Forward-difference Jacobian with ``least_squares``' '2-point' step and bound rule.

    The step of parameter ``i`` is ``sqrt(eps) * max(1, |p_i|)`` (positive at ``p_i = 0``),
    reversed when it would leave the box and the other side has room, else shortened to the
    farther bound.
    """
    sign = (p >= 0).astype(float) * 2.0 - 1.0
    h = DIFF_STEP * sign * np.maximum(1.0, np.abs(p))
    lower_dist, upper_dist = p - lower, upper - p
    if not np.all((lower == -np.inf) & (upper == np.inf)):
        stepped = p + h
        violated = (stepped < lower) | (stepped > upper)
        fitting = np.abs(h) <= np.maximum(lower_dist, upper_dist)
        h[violated & fitting] *= -1.0
        forward = (upper_dist >= lower_dist) & ~fitting
        h[forward] = upper_dist[forward]
        backward = (upper_dist < lower_dist) & ~fitting
        h[backward] = -lower_dist[backward]
    cols = []
    for i in range(p.size):
        q = p.copy()
        q[i] = p[i] + h[i]
        dx = q[i] - p[i]
        cols.append((fun(q) - f0) / dx)
    return np.column_stack(cols)


def central_jacobian(
    fun: Callable[[FloatArray], FloatArray], p: FloatArray, lower: FloatArray, upper: FloatArray
) -> FloatArray:
    """Central-difference Jacobian (step ``eps**(1/3) * max(1, |p|)``, one-sided at a bound).

    The search steers by it: its error (``eps**(2/3)``) is far below the forward difference's
    (``sqrt(eps)``), so that the minimum is found to the precision the data allow.
    """
    eps_third = EPS ** (1.0 / 3.0)
    cols = []
    for i in range(p.size):
        h = eps_third * max(1.0, abs(float(p[i])))
        up, dn = p.copy(), p.copy()
        up[i] = min(p[i] + h, upper[i])
        dn[i] = max(p[i] - h, lower[i])
        cols.append((fun(up) - fun(dn)) / (up[i] - dn[i]))
    return np.column_stack(cols)


@dataclass(frozen=True)
class Weighting:
    """How each residual counts in the cost.

    Attributes
    ----------
    sigma : array_like, optional
        Scale of each point's error [unit of y]: residuals are divided by it (relative
        errors: ``sigma = y``). The covariance is scaled by the residual variance, as
        ``curve_fit(absolute_sigma=False)``.
    loss : {"linear", "soft_l1"}
        ``linear`` is least squares; ``soft_l1`` the pseudo-Huber loss of ``least_squares``.
    f_scale : float
        The soft margin of ``soft_l1`` [unit of the weighted residuals].
    """

    sigma: ArrayLike | None = None
    loss: str = "linear"
    f_scale: float = 1.0


#: Plain least squares, every point's error of the same scale.
UNWEIGHTED = Weighting()


class _Counted:
    """The weighted residuals of ``func`` at parameters ``q``, counting the evaluations."""

    def __init__(
        self, func: Callable[..., FloatArray], x: FloatArray, y: FloatArray, w: FloatArray
    ) -> None:
        self.func, self.x, self.y, self.w = func, x, y, w
        self.nfev = 0

    def __call__(self, q: FloatArray) -> FloatArray:
        self.nfev += 1
        return _residuals(self.func, self.x, self.y, self.w, q)


@dataclass
class _Search:
    """One Levenberg-Marquardt search: the point it stands at and its damping."""

    fun: _Counted
    lo: FloatArray
    hi: FloatArray
    weighting: Weighting
    max_nfev: int
    p: FloatArray
    f: FloatArray
    cost: float
    mu: float = -1.0
    nu: float = 2.0

    def _cost(self, f: FloatArray) -> float:
        return _cost(f, self.weighting.loss, self.weighting.f_scale)

    def iterate(self) -> bool:
        """One outer step: a new Jacobian and a damped step; False when the search ends."""
        p, lo, hi = self.p, self.lo, self.hi
        loss, f_scale = self.weighting.loss, self.weighting.f_scale
        jac, fs = _scaled(central_jacobian(self.fun, p, lo, hi), self.f, loss, f_scale)
        if not np.all(np.isfinite(jac)):
            return False
        g = jac.T @ fs
        a = jac.T @ jac
        held = ((p <= lo) & (g > 0)) | ((p >= hi) & (g < 0))
        free = ~held
        # The gradient's test of ``least_squares`` (gtol, in the parameters' own units).
        if not free.any() or np.max(np.abs(g[free])) < GTOL:
            return False
        diag = np.maximum(np.diag(a), EPS * max(float(np.max(np.diag(a))), EPS))
        if self.mu < 0:
            self.mu = 1e-3  # Marquardt's damping, relative to the curvature of each parameter
        return self._damped_step(g, a, free, diag)

    def _damped_step(
        self, g: FloatArray, a: FloatArray, free: NDArray[np.bool_], diag: FloatArray
    ) -> bool:
        """Damp until a step lowers the cost; whether the search should go on."""
        while self.fun.nfev < self.max_nfev:
            p = self.p
            step = np.zeros_like(p)
            sub = a[np.ix_(free, free)] + self.mu * np.diag(diag[free])
            try:
                step[free] = np.linalg.solve(sub, -g[free])
            except np.linalg.LinAlgError:
                if self._damp_more():
                    return False
                continue
            trial = np.clip(p + step, self.lo, self.hi)
            d = trial - p
            if np.all(np.abs(d) <= 1e-15 * np.maximum(np.abs(p), 1e-300)):
                return False
            predicted = -(g @ d + 0.5 * d @ a @ d)
            f_new = self.fun(trial)
            cost_new = self._cost(f_new)
            actual = self.cost - cost_new
            if predicted > 0 and actual > 0:
                gain = actual / predicted
                self.mu *= cast(float, max(1.0 / 3.0, 1.0 - (2.0 * gain - 1.0) ** 3))
                self.nu = 2.0
                self.p, self.f, self.cost = trial, f_new, cost_new
                # Converged when neither the model nor the step promises more (MINPACK's ftol).
                moved = not (predicted <= FTOL * cost_new and actual <= FTOL * cost_new)
                # ... or when the step is below XTOL of the parameters (``least_squares``' xtol).
                return moved and float(np.linalg.norm(d)) > XTOL * (
                    XTOL + float(np.linalg.norm(trial))
                )
            if self._damp_more():
                return False
        return False

    def _damp_more(self) -> bool:
        """Raise the damping; True when it has grown past any use."""
        self.mu *= self.nu
        self.nu *= 2.0
        return self.mu > 1e30


def fit_least_squares(
    func: Callable[..., FloatArray],
    x: ArrayLike,
    y: ArrayLike,
    p0: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    *,
    weighting: Weighting = UNWEIGHTED,
    max_nfev: int = 20000,
) -> tuple[FloatArray, FloatArray]:
    """Fit ``func(x, *p)`` to ``y`` within bounds; parameters and their covariance.

    Parameters
    ----------
    func : callable
        The model, ``func(x, *p) -> y`` on arrays [unit of y].
    x, y : array_like
        Points, one dimension each (``x`` in the model's unit, ``y`` in the rate's).
    p0 : array_like
        Starting parameters, inside the bounds.
    lower, upper : array_like
        Bounds of each parameter (``-inf``/``inf`` for none).
    weighting : Weighting
        Each point's error scale and the loss (default: plain least squares).
    max_nfev : int
        Most evaluations of ``func`` before giving up.

    Returns
    -------
    popt : ndarray
        The parameters at the minimum.
    pcov : ndarray
        Their covariance (``inf`` everywhere when there are no more points than parameters,
        or when it cannot be told).

    Raises
    ------
    ValueError
        An unknown loss, a start outside the bounds or where the model is not finite, or no
        minimum within ``max_nfev`` evaluations.
    """
    loss, f_scale, sigma = weighting.loss, weighting.f_scale, weighting.sigma
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, not {loss!r}")
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    lo = np.asarray(lower, dtype=float)
    hi = np.asarray(upper, dtype=float)
    p = np.asarray(p0, dtype=float).copy()
    w = 1.0 / np.asarray(sigma, dtype=float) if sigma is not None else np.ones_like(ya)
    if np.any(p < lo) or np.any(p > hi):
        raise ValueError("the starting parameters are outside the bounds")
    fun = _Counted(func, xa, ya, w)
    f = fun(p)
    cost = _cost(f, loss, f_scale)
    if not math.isfinite(cost):
        raise ValueError("the model is not finite at the starting parameters")
    search = _Search(fun, lo, hi, weighting, max_nfev, p, f, cost)
    # A fit through every point ends where its residuals are below what a forward difference
    # resolves (``sqrt(eps)`` of the data): past that, a curve whose best fit lies at infinity
    # (a knee growing sharper without end) would creep on until the evaluations run out.
    floor = 0.5 * (DIFF_STEP * float(np.linalg.norm(ya * w))) ** 2
    while fun.nfev < max_nfev and search.cost > floor:
        if not search.iterate():
            break
    if fun.nfev >= max_nfev:
        raise ValueError(f"no minimum found within {max_nfev} evaluations of the model")
    return search.p, covariance(fun, search.p, search.f, lo, hi, loss=loss, f_scale=f_scale)


def covariance(
    fun: Callable[[FloatArray], FloatArray],
    p: FloatArray,
    f: FloatArray,
    lower: FloatArray,
    upper: FloatArray,
    *,
    loss: str = "linear",
    f_scale: float = 1.0,
) -> FloatArray:
    """``curve_fit``'s covariance of the parameters ``p`` of residuals ``fun`` at the minimum.

    The Moore-Penrose inverse of ``J^T J`` (singular values below ``eps * max(J.shape) *
    s_max`` dropped) times ``2 * cost / (n - k)``; ``inf`` everywhere for ``n <= k`` or NaN.
    """
    jac, _ = _scaled(forward_jacobian(fun, p, f, lower, upper), f, loss, f_scale)
    k = p.size
    with np.errstate(all="ignore"):
        try:
            _, s, vt = np.linalg.svd(jac, full_matrices=False)
        except np.linalg.LinAlgError:
            return np.full((k, k), np.inf)
        threshold = EPS * max(jac.shape) * s[0]
        keep = s > threshold
        s, vt = s[keep], vt[: int(keep.sum())]
        pcov = np.dot(vt.T / s**2, vt)
    if np.isnan(pcov).any() or f.size <= k:
        return np.full((k, k), np.inf)
    scaled: FloatArray = pcov * (2.0 * _cost(f, loss, f_scale) / (f.size - k))
    return scaled
