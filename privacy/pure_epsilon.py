"""Pure-DP epsilon of SaS noise: the maximum privacy loss, scalar and m-dimensional queries.

The scalar epsilon (seed eq. 3.29) is ``max_x log p(x - D) - log p(x)``; it depends only on
``scale / D`` (eq. 3.30).  :func:`maximize_loss` finds such maxima for many parameter values at
once (vectorized): a geometric scan brackets each peak, a golden-section search refines it, and
a curvature and evaluation margin is added so that the result is an upper bound.  The
m-dimensional epsilon (l1-sensitivity D) is certified by a concave envelope of the scalar
epsilon as a function of the sensitivity (:func:`sas_vector_epsilon`).

References
----------
Seed eqs. (3.14)-(3.16) (vector loss and the bound m eps(D)), (3.29), (3.30), (3.35), (3.57).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from _toolbox.errors import AccountingError, ParameterError
from _toolbox.validation import check_integer, check_positive
from privacy import stable

__all__ = ["sas_pure_epsilon", "sas_vector_epsilon", "VectorEpsilon", "maximize_loss",
           "sas_epsilon_floor", "check_epsilon_reachable"]

#: Absolute error assumed for one evaluation of a SaS log-density difference; added to every
#: maximised privacy loss so that reported pure-DP epsilons are upper bounds, so no reported
#: epsilon is below it.  The floor of reported epsilons is :func:`sas_epsilon_floor`: this
#: margin for alpha >= 0.5, higher below (the scale cap ``_MAX_RATIO``).
LOSS_EVAL_MARGIN = 3e-12

_SCAN = np.geomspace(1e-5, 1e6, 201)          # scan offsets in units of the row's width
_FOCUS = np.geomspace(1e-3, 1e3, 61)          # focus offsets in units of the row's focus scale
_GOLDEN = 0.5 * (3.0 - math.sqrt(5.0))
_REFINE_STEPS = 100
_TOL = 1e-10                                   # relative location tolerance of the maximiser
#: Range of scale / sensitivity that is computed.  Beyond ``_MAX_RATIO`` the value there is
#: reported: epsilon is non-increasing in the ratio, so it bounds every larger one.  For alpha
#: >= 0.5 it is already the evaluation margin; for small alpha the density's core is narrower
#: than 1e-12 scales (p(0) = Gamma(1 + 1/alpha) / (pi gamma): 1.2e6 / gamma at alpha 0.1), the
#: true epsilon keeps falling (measured without the cap at alpha 0.1: 8.9e-4 at 1e14, 8.9e-10
#: at 1e20) and the value at the cap is a conservative floor (:func:`sas_epsilon_floor`).  The
#: cap stays: the log-density inside that core is not verified.
_MIN_RATIO, _MAX_RATIO = 1e-290, 1e12


def maximize_loss(loss: Callable[[np.ndarray], np.ndarray], start: np.ndarray,
                  width: np.ndarray, focus: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds on ``max_{x > start_i} loss_i(x)`` for many rows at once.

    Parameters
    ----------
    loss : callable
        Maps an array ``x`` of shape ``(n, k)`` to losses of the same shape; row ``i`` is the
        loss with the ``i``-th parameter.  Each loss must be unimodal on ``(start_i, inf)``
        and tend to its limit at infinity (true for the SaS loss, seed Sec. 3.4).
    start, width : ndarray, shape (n,)
        Left end of the search and the row's length unit (the scan covers
        ``start + width * [1e-5, 1e6]``).
    focus : (center, scale), optional
        Adds a dense symmetric geometric grid around ``center`` resolving features of width
        ``scale`` (the SaS loss peaks within a few noise scales of the shifted location, which
        can be far narrower than the scan's spacing).

    Returns
    -------
    upper : ndarray, shape (n,)
        Best value found plus a curvature margin for the remaining location uncertainty and
        :data:`LOSS_EVAL_MARGIN` (relative to values above 1).
    argmax : ndarray, shape (n,)

    Raises
    ------
    AccountingError
        Non-finite loss values, or a maximum at the end of the scan (no decay within 1e6 units).
    """
    start = np.asarray(start, dtype=float).reshape(-1)
    width = np.asarray(width, dtype=float).reshape(-1)
    rows = np.arange(start.size)
    xs = start[:, None] + width[:, None] * _SCAN[None, :]
    if focus is not None:
        center, scale = (np.asarray(v, dtype=float).reshape(-1, 1) for v in focus)
        near = scale * _FOCUS[None, :]
        extra = np.concatenate([center - near, center, center + near], axis=1)
        xs = np.sort(np.concatenate([xs, np.maximum(extra, start[:, None])], axis=1), axis=1)
    values = np.asarray(loss(xs), dtype=float)
    if not np.all(np.isfinite(values)):
        raise AccountingError("privacy loss evaluation returned non-finite values")
    k = np.argmax(values, axis=1)
    if np.any(k == xs.shape[1] - 1):
        raise AccountingError("the privacy loss did not reach its maximum within 1e6 scales; "
                              "cannot bound it")
    x_k = xs[rows, k]
    best = values[rows, k]
    # bracket between the nearest distinct scan points (focus points may repeat)
    a = np.max(np.where(xs < x_k[:, None], xs, start[:, None]), axis=1)
    b = np.min(np.where(xs > x_k[:, None], xs, np.inf), axis=1)
    step = np.maximum(1e-4 * (b - a), 1e-8 * width)   # for the curvature, from the scan bracket
    x, f_x, a, b = _refine(loss, a, x_k, b, best, width)
    # curvature bound on the value error of the remaining bracket [a, b]
    probe = [_row_loss(loss, x + s * step) for s in (-1.0, 0.0, 1.0)]
    with np.errstate(over="ignore", invalid="ignore"):   # huge widths: ratio of infinities
        margin = 0.5 * np.abs(probe[0] - 2.0 * probe[1] + probe[2]) * ((b - a) / step) ** 2
    margin = np.where(np.isfinite(margin), margin, 0.0)
    best = np.maximum(best, f_x)
    return best + margin + LOSS_EVAL_MARGIN * np.maximum(1.0, np.abs(best)), x


def _refine(loss: Callable[[np.ndarray], np.ndarray], a: np.ndarray, x: np.ndarray,
            b: np.ndarray, f_x: np.ndarray, width: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Brent-style maximisation on every row's bracket ``a < x < b`` (``f(x) >= f(a), f(b)``).

    Parabolic steps through the three points, a golden-section step when they fail or the
    bracket stops halving, and steps of at least the tolerance, until every bracket is within
    ``4 * _TOL * (|x| + 1e-5 width)``.  Returns the best point, its value and the final
    bracket per row.
    """
    f_a, f_b = _row_loss(loss, a), _row_loss(loss, b)
    history = [b - a] * 3          # bracket widths; the last one is the current width
    for _ in range(_REFINE_STEPS):
        tol = _TOL * (np.abs(x) + 1e-5 * width)
        active = (b - a) > 4.0 * tol
        if not active.any():
            break
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            p = (x - a) ** 2 * (f_x - f_b) - (x - b) ** 2 * (f_x - f_a)
            q = (x - a) * (f_x - f_b) - (x - b) * (f_x - f_a)
            u = x - 0.5 * p / q
        right_larger = (b - x) > (x - a)
        golden = np.where(right_larger, x + _GOLDEN * (b - x), x - _GOLDEN * (x - a))
        stalled = (b - a) > 0.5 * history[-3]      # did not halve in two steps
        u = np.where(np.isfinite(u) & (u > a) & (u < b) & ~stalled, u, golden)
        u = np.where(np.abs(u - x) < tol, np.where(right_larger, x + tol, x - tol), u)
        u = np.where(active, u, x)
        f_u = _row_loss(loss, u)
        better = active & (f_u >= f_x)
        worse = active & ~better
        right = u > x
        # the maximum stays bracketed: keep the better point, cut at the worse one
        a_new = np.where(better & right, x, np.where(worse & ~right, u, a))
        b_new = np.where(better & ~right, x, np.where(worse & right, u, b))
        f_a = np.where(better & right, f_x, np.where(worse & ~right, f_u, f_a))
        f_b = np.where(better & ~right, f_x, np.where(worse & right, f_u, f_b))
        x, f_x = np.where(better, u, x), np.where(better, f_u, f_x)
        a, b = a_new, b_new
        history.append(b - a)
    return x, f_x, a, b


def _row_loss(loss: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    return np.asarray(loss(x[:, None]), dtype=float)[:, 0]


def _epsilon_of_ratios(alpha: float, ratios: np.ndarray) -> np.ndarray:
    """Scalar pure-DP epsilon at sensitivity 1 and scale ``ratios`` (vectorized, eq. 3.35)."""
    ratios = np.asarray(ratios, dtype=float)
    if alpha == 2.0:
        return np.full(ratios.shape, math.inf)
    if alpha == 1.0:
        # closed form (3.57): log((s+1)/(s-1)), s = sqrt(4 r^2 + 1), = 2 asinh(1/(2 r))
        return 2.0 * np.arcsinh(0.5 / ratios) * (1.0 + 4e-16)
    if np.any(ratios < _MIN_RATIO):
        raise AccountingError(f"scale / sensitivity = {float(np.min(ratios)):.3g} is below "
                              f"{_MIN_RATIO:g}: the pure-DP epsilon (above 1600, no privacy) is "
                              f"not computed")
    # epsilon is non-increasing in the ratio, and beyond _MAX_RATIO already below the
    # evaluation margin: the value there bounds every larger ratio
    ratios = np.minimum(ratios, _MAX_RATIO)
    inv = 1.0 / ratios[:, None]

    def loss(x: np.ndarray) -> np.ndarray:
        return (stable.sas_logpdf((x - 1.0) * inv, alpha)
                - stable.sas_logpdf(x * inv, alpha))
    with np.errstate(over="ignore"):
        upper, _ = maximize_loss(loss, np.full(ratios.shape, 0.5), np.maximum(ratios, 1.0),
                                 focus=(np.ones(ratios.shape), ratios))
    return upper


@functools.lru_cache(maxsize=4096)
def _epsilon_of_ratio(alpha: float, ratio: float) -> float:
    return float(_epsilon_of_ratios(alpha, np.array([ratio]))[0])


def sas_pure_epsilon(alpha: float, scale: float, sensitivity: float = 1.0) -> float:
    """Pure-DP epsilon of the scalar SaS mechanism, ``max_x log p(x - D) / p(x)`` (eq. 3.29).

    Depends only on ``scale / sensitivity`` (seed eqs. 3.30, 3.35); ``inf`` at alpha = 2; the
    Cauchy closed form (3.57) at alpha = 1.  An upper bound (see :func:`maximize_loss`), never
    below :data:`LOSS_EVAL_MARGIN`.

    Raises
    ------
    ParameterError
        alpha outside [0.1, 2], non-positive or non-finite scale or sensitivity.

    Examples
    --------
    >>> from privacy.pure_epsilon import sas_pure_epsilon
    >>> round(sas_pure_epsilon(1.0, 1.0), 6)   # Cauchy, eq. (3.57)
    0.962424
    """
    alpha = stable.check_alpha(alpha)
    scale = check_positive("scale", scale)
    sensitivity = check_positive("sensitivity", sensitivity)
    return _epsilon_of_ratio(alpha, scale / sensitivity)


def sas_epsilon_floor(alpha: float, dimension: int = 1) -> float:
    """The smallest pure-DP epsilon certified for SaS noise at any scale.

    The scalar epsilon reaches it at ``scale = 1e12 * sensitivity`` and stays there (the
    computed range, ``_MAX_RATIO``); an m-dimensional query with l1-sensitivity D certifies
    ``m`` times it (the even split of D over the coordinates is ``m eps_1(m scale / D)``, and
    at every larger scale every split is at the floor).  Measured: 4e-12 to 7e-12 for alpha in
    [0.5, 2) (the evaluation margin 3e-12 plus the epsilon at that scale), rising for small
    alpha: 1.3e-11 at 0.4, 6.7e-11 at 0.3, 5.6e-9 at 0.2, 9.2e-7 at 0.15, 0.066 at 0.1.  Zero
    at alpha = 1 (the Cauchy closed form is not capped).  A conservative floor, not the true
    epsilon (module notes at ``_MAX_RATIO``).

    Parameters
    ----------
    alpha : float
        Stability index in ``[0.1, 2)``.
    dimension : int, default 1
        Query dimension ``m``.

    Returns
    -------
    float

    Examples
    --------
    >>> from privacy.pure_epsilon import sas_epsilon_floor
    >>> sas_epsilon_floor(1.5) < 1e-11, 0.05 < sas_epsilon_floor(0.1) < 0.1
    (True, True)
    >>> sas_epsilon_floor(0.1, 20) == 20 * sas_epsilon_floor(0.1)
    True
    """
    alpha = stable.check_alpha(alpha, high_open=True)
    dimension = check_integer("dimension", dimension, minimum=1)
    if alpha == 1.0:
        return 0.0
    return dimension * _epsilon_of_ratio(alpha, _MAX_RATIO)


def check_epsilon_reachable(epsilon: float, alpha: float, dimension: int = 1) -> None:
    """Refuse a pure-DP target below :func:`sas_epsilon_floor` before any scale search (no
    scale reaches it: the search would double the scale to overflow).

    Raises
    ------
    ParameterError
        ``epsilon`` not a number > 0, or below the floor at this ``alpha`` and ``dimension``;
        the message names the floor and the remedies (a larger alpha, a larger epsilon).

    Examples
    --------
    >>> from privacy.pure_epsilon import check_epsilon_reachable
    >>> check_epsilon_reachable(1.0, 1.5, 20)
    >>> try:
    ...     check_epsilon_reachable(1.0, 0.1, 20)
    ... except ValueError as exc:
    ...     print(str(exc)[:61])
    epsilon=1.0 is not reachable by SaS noise with alpha=0.1 on a
    """
    epsilon = check_positive("epsilon", epsilon)
    floor = sas_epsilon_floor(alpha, dimension)
    if epsilon < floor:
        what = "a scalar query" if dimension == 1 else f"a {dimension}-entry query"
        raise ParameterError(
            f"epsilon={epsilon!r} is not reachable by SaS noise with alpha={alpha!r} on {what}: "
            f"the smallest pure-DP epsilon certified at any scale is {floor:.4g} (the "
            f"certified bound stops falling at scale 1e12 * sensitivity for small alpha). "
            f"Use a larger alpha (the floor is below 1e-10 from alpha 0.3 on) or an epsilon "
            f"above {floor:.4g}")


@dataclass(frozen=True)
class VectorEpsilon:
    """Pure-DP epsilon of an m-dimensional SaS query with l1-sensitivity D.

    Attributes
    ----------
    dimension : int
    upper_bound : float
        Certified bound ``m * g_hat(D/m)``, ``g_hat`` the least concave majorant of
        ``g(d) = eps_1(d)`` (scalar epsilon at sensitivity d) on [0, D].
    achieved : float
        A lower bound on the true value: ``max_k k * g(D/k)`` over a set of ``k <= m`` (all
        ``k <= 64`` and a geometric selection beyond), attained by spreading the shift evenly
        over ``k`` coordinates.
    seed_bound : float
        The seed's bound ``m * eps_1(D)`` (eq. 3.16), for comparison.
    """

    dimension: int
    upper_bound: float
    achieved: float
    seed_bound: float


def _concave_majorant_at(xs: np.ndarray, ys: np.ndarray, x0: float) -> float:
    """Value at ``x0`` of the least concave majorant of the points (xs, ys) (xs increasing)."""
    hull: list[tuple[float, float]] = []
    for x, y in zip(xs, ys, strict=True):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (y2 - y1) * (x - x1) <= (y - y1) * (x2 - x1):
                hull.pop()
            else:
                break
        hull.append((float(x), float(y)))
    for (x1, y1), (x2, y2) in zip(hull[:-1], hull[1:], strict=True):
        if x1 <= x0 <= x2:
            return y1 if x2 == x1 else y1 + (y2 - y1) * (x0 - x1) / (x2 - x1)
    return hull[-1][1]


@functools.lru_cache(maxsize=256)
def _vector_epsilon(alpha: float, ratio: float, dimension: int, grid_points: int
                    ) -> VectorEpsilon:
    m = dimension
    if alpha == 2.0:
        return VectorEpsilon(m, math.inf, math.inf, math.inf)
    if m == 1:
        eps = _epsilon_of_ratio(alpha, ratio)
        return VectorEpsilon(1, eps, eps, eps)
    # sensitivities in units of D (the total); g(d) = eps_1(ratio / d)
    ks = np.unique(np.concatenate([np.arange(1, min(m, 64) + 1),
                                   np.geomspace(1, m, 64).round().astype(int), [m]]))
    grid = np.unique(np.concatenate([
        np.linspace(0.0, 1.0, 201)[1:], np.geomspace(min(1e-4, 1e-2 / m), 1.0, grid_points),
        (1.0 + np.linspace(-0.5, 0.5, 401)) / m, 1.0 / ks]))
    grid = grid[(grid > 0) & (grid <= 1.0)]
    values = _epsilon_of_ratios(alpha, ratio / grid)
    # g is increasing, so g <= g(d_{j+1}) on [d_j, d_{j+1}]: the majorant of that staircase
    # (starting at g(0) = 0) is certified
    xs = np.concatenate([[0.0], grid])
    ys = np.concatenate([values, [values[-1]]])
    upper = m * _concave_majorant_at(xs, ys, 1.0 / m)
    at_k = dict(zip(grid.tolist(), values.tolist(), strict=True))
    achieved = max(k * at_k[1.0 / k] for k in ks.tolist())
    return VectorEpsilon(m, max(upper, achieved), achieved, m * values[-1])


def sas_vector_epsilon(alpha: float, scale: float, sensitivity: float = 1.0,
                       dimension: int = 1, *, grid_points: int = 1500) -> VectorEpsilon:
    """Pure-DP epsilon of an m-dimensional SaS query with l1-sensitivity D (i.i.d. noise).

    Derivation: the loss is separable, ``L(x) = sum_i l(x_i; d_i)`` (seed eq. 3.15), so for a
    fixed shift vector ``d`` the supremum over ``x`` is ``sum_i g(|d_i|)`` with ``g(d) =
    eps_1(d)`` the scalar epsilon at sensitivity ``d``.  ``g`` is increasing, so the worst shift
    has ``sum |d_i| = D`` and epsilon is ``max sum_i g(d_i)`` subject to ``sum d_i = D``.  For
    every such ``d``, ``sum_i g(d_i) <= sum_i g_hat(d_i) <= m g_hat(D/m)`` with ``g_hat`` the
    least concave majorant of ``g`` (Jensen).  ``g`` is evaluated on a grid (one vectorized
    maximisation for all grid points); since it is increasing, ``g(d) <= g(d_{j+1})`` on
    ``[d_j, d_{j+1}]`` and the majorant of that staircase is a certified bound.  When ``g`` is
    concave (e.g. Cauchy, ``g(d) = 2 asinh(d / (2 gamma))``) the bound is attained by the even
    split; when it is convex somewhere (alpha near 2) the worst split can concentrate the shift.
    Results are cached per ``(alpha, scale / sensitivity, dimension)``.

    Parameters
    ----------
    alpha : float
        Stability index in ``[0.1, 2]`` (``inf`` at 2).
    scale, sensitivity : float
        Noise scale and l1-sensitivity ``D`` of the whole m-vector.
    dimension : int, default 1
        Number of coordinates ``m >= 1``.
    grid_points : int, default 1500
        Geometrically spaced sensitivities at which ``g`` is evaluated (plus a uniform grid, a
        fine grid around ``D/m`` and the points ``D/k``).  The staircase makes the bound
        conservative by roughly the relative grid spacing (< 1 %); ``achieved`` is a lower
        bound, so the gap is visible.

    Returns
    -------
    VectorEpsilon

    Examples
    --------
    >>> from privacy.pure_epsilon import sas_vector_epsilon
    >>> v = sas_vector_epsilon(1.0, 1.0, dimension=2)   # Cauchy: even split, 4 asinh(1/4)
    >>> round(v.achieved, 6), v.upper_bound <= 1.01 * v.achieved
    (0.989866, True)
    """
    alpha = stable.check_alpha(alpha)
    scale = check_positive("scale", scale)
    sensitivity = check_positive("sensitivity", sensitivity)
    dimension = check_integer("dimension", dimension, minimum=1)
    grid_points = check_integer("grid_points", grid_points, minimum=10)
    return _vector_epsilon(alpha, scale / sensitivity, dimension, grid_points)
