"""Additive noise mechanisms: Laplace, Gaussian and symmetric alpha-stable (SaS).

A mechanism adds noise to a query answer (``randomize``, explicit ``rng``) and *describes itself*:
every mechanism is an immutable (frozen) dataclass holding its noise parameters and the query's
sensitivity, and that value is what :mod:`privacy.accounting` composes.  The accountant reads the
centred noise law through the private methods ``_logpdf``, ``_cdf``, ``_sf``, ``_grid_halfwidth``
and ``_light_tailed``; nothing else is needed to build a pessimistic privacy loss distribution.

Conventions (shared by every mechanism):

* ``sensitivity`` is the largest change of the query between neighbouring data sets, in the norm
  that matches the noise (l1 for Laplace and SaS, l2 for Gaussian).  Under
  :attr:`NeighboringRelation.REPLACE_ONE` it is, as in ``dp_accounting``, the bound on one record's
  contribution, so replacing a record moves the query by up to ``2 * sensitivity``.
* The privacy loss of an outcome ``x`` is ``log p(x - sensitivity) - log p(x)`` (seed eq. 2.30 with
  the numerator shifted by the sensitivity, eq. 3.29).

References
----------
Seed thesis (``000_9f1dc78092037d5e``): Laplace (3.1), Gaussian (3.2), SaS density (3.7)-(3.8),
pure-DP epsilon of SaS (3.29), scale/sensitivity invariance (3.30), Cauchy closed form (3.57),
small/large-scale limits (3.75), (3.79), expected distortion (3.85), Table 3.1, privacy curve
(2.36), (4.1).  B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential
privacy: analytical calibration and optimal denoising", ICML 2018.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from privacy import stable
from privacy.errors import AccountingError, DimensionError, ParameterError
from privacy.validation import (
    as_generator,
    check_in_interval,
    check_integer,
    check_positive,
    check_probability,
)

__all__ = [
    "NeighboringRelation",
    "LaplaceMechanism",
    "GaussianMechanism",
    "SaSMechanism",
    "sas_pure_epsilon",
]

#: Absolute error assumed for one evaluation of a SaS log-density difference; added to every
#: maximised privacy loss so that reported pure-DP epsilons are upper bounds.
_LOSS_EVAL_MARGIN = 3e-12


class NeighboringRelation(enum.Enum):
    """Neighbouring relation between data sets (one enum for the whole package).

    ``ADD_OR_REMOVE`` (default): the data sets differ by adding or removing one record.
    ``REPLACE_ONE``: one record is replaced by another (the query moves by up to twice the
    sensitivity, as in ``dp_accounting``).
    """

    ADD_OR_REMOVE = "add_or_remove"
    REPLACE_ONE = "replace_one"


def _as_output(value: Any, noisy: np.ndarray) -> float | np.ndarray:
    return float(noisy) if np.ndim(value) == 0 else noisy


def _check_value(value: Any) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"value must be a real number or array; got {value!r}") from exc
    if not np.all(np.isfinite(array)):
        raise ParameterError("value must be finite; got NaN or infinite entries")
    return array


def _interval_mass(cdf: np.ndarray, sf: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                   cdf_lo: np.ndarray, sf_lo: np.ndarray) -> np.ndarray:
    """Mass of a symmetric law on [lo, hi] from cdf/sf values, accurate in both tails."""
    left = cdf - cdf_lo
    right = sf_lo - sf
    middle = 1.0 - cdf_lo - sf
    return np.where(hi <= 0, left, np.where(lo >= 0, right, middle))


# ----------------------------------------------------------------------------- Laplace


@dataclass(frozen=True)
class LaplaceMechanism:
    """Laplace mechanism: adds ``Laplace(0, scale)`` noise (seed eq. 3.1).

    Parameters
    ----------
    scale : float
        Laplace scale ``b > 0``.
    sensitivity : float, default 1.0
        l1-sensitivity ``D > 0`` of the query.

    Attributes
    ----------
    epsilon : float
        Pure-DP epsilon ``D / b``.

    Examples
    --------
    >>> from privacy import LaplaceMechanism
    >>> mech = LaplaceMechanism(scale=2.0, sensitivity=1.0)
    >>> mech.epsilon
    0.5
    >>> noisy = mech.randomize([1.0, 2.0], rng=0)
    >>> noisy.shape
    (2,)

    References
    ----------
    Seed eq. (3.1); Dwork and Roth (2014), Thm 3.6.
    """

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @property
    def epsilon(self) -> float:
        """Pure-DP epsilon ``sensitivity / scale``."""
        return self.sensitivity / self.scale

    @property
    def expected_distortion(self) -> float:
        """Mean absolute error ``E|Y| = scale`` (seed eq. 3.87)."""
        return self.scale

    def privacy_loss(self, x: Any) -> float | np.ndarray:
        """Privacy loss ``log p(x - D) - log p(x)`` of outcome(s) ``x`` (noise coordinates)."""
        x = np.asarray(x, dtype=float)
        out = (np.abs(x) - np.abs(x - self.sensitivity)) / self.scale
        return float(out) if out.ndim == 0 else out

    def randomize(self, value: Any, rng: np.random.Generator | int | None = None
                  ) -> float | np.ndarray:
        """Return ``value`` plus i.i.d. Laplace noise (scalar or array, same shape)."""
        array = _check_value(value)
        noisy = array + as_generator(rng).laplace(0.0, self.scale, size=array.shape)
        return _as_output(value, noisy)

    def describe(self) -> LaplaceMechanism:
        """The accountant's description of this mechanism (the immutable value itself)."""
        return self

    def to_dp_event(self) -> Any:
        """Equivalent ``dp_accounting.LaplaceDpEvent``."""
        from dp_accounting import dp_event
        return dp_event.LaplaceDpEvent(noise_multiplier=self.scale / self.sensitivity)

    # accountant interface
    _light_tailed = True

    def _logpdf(self, x: np.ndarray) -> np.ndarray:
        return -np.abs(x) / self.scale - math.log(2.0 * self.scale)

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        return stats.laplace.cdf(x, scale=self.scale)

    def _sf(self, x: np.ndarray) -> np.ndarray:
        return stats.laplace.sf(x, scale=self.scale)

    def _grid_halfwidth(self) -> float:
        return self.scale * 42.0  # tail mass exp(-42) / 2 < 1e-18


# ----------------------------------------------------------------------------- Gaussian


def _gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """Exact single-release delta(epsilon) of the Gaussian mechanism (Balle & Wang 2018)."""
    if sigma == math.inf:
        return 0.0
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = special.ndtr(a - b)
    second = math.exp(epsilon + special.log_ndtr(-a - b)) if epsilon < 700 else 0.0
    return float(min(1.0, max(0.0, first - second)))


@dataclass(frozen=True)
class GaussianMechanism:
    """Gaussian mechanism: adds ``N(0, sigma^2)`` noise (seed eq. 3.2).

    Parameters
    ----------
    sigma : float
        Noise standard deviation ``> 0``.
    sensitivity : float, default 1.0
        l2-sensitivity ``D > 0`` of the query.

    Examples
    --------
    >>> from privacy import GaussianMechanism
    >>> mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    >>> round(mech.sigma, 3)
    3.731
    >>> mech.delta_for_epsilon(1.0) <= 1e-5
    True

    References
    ----------
    Seed eqs. (3.2), (4.1); Balle and Wang (2018), Thm 8 (analytic Gaussian mechanism);
    Dwork and Roth (2014), Thm A.1 (classical calibration, valid for epsilon < 1).
    """

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @classmethod
    def from_epsilon_delta(cls, epsilon: float, delta: float, *, sensitivity: float = 1.0,
                           method: str = "analytic") -> GaussianMechanism:
        """Calibrate ``sigma`` for a single ``(epsilon, delta)``-DP release.

        Parameters
        ----------
        epsilon : float
            Target epsilon ``> 0``; the classical method needs ``epsilon < 1``.
        delta : float
            Target delta in ``(0, 1)``.
        sensitivity : float, default 1.0
            l2-sensitivity.
        method : {"analytic", "classical"}
            ``"analytic"``: smallest sigma (to relative 1e-10, rounded up) with exact
            ``delta(epsilon) <= delta`` (Balle & Wang 2018), valid for every epsilon.
            ``"classical"``: ``sigma = sqrt(2 ln(1.25/delta)) D / epsilon`` (Dwork & Roth), only
            proven for ``epsilon < 1``; other epsilons raise ``ParameterError``.

        Raises
        ------
        ParameterError
            Bad epsilon, delta, sensitivity or method.
        """
        epsilon = check_positive("epsilon", epsilon)
        delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
        sensitivity = check_positive("sensitivity", sensitivity)
        if method == "classical":
            if epsilon >= 1.0:
                raise ParameterError(f"epsilon must lie in (0, 1) for the classical Gaussian "
                                     f"calibration; got {epsilon!r} (use method='analytic')")
            return cls(math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon,
                       sensitivity)
        if method != "analytic":
            raise ParameterError(f"method must be 'analytic' or 'classical'; got {method!r}")

        def excess(log_sigma: float) -> float:
            return _gaussian_delta(epsilon, math.exp(log_sigma), sensitivity) - delta

        lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 10.0
        while excess(lo) < 0:
            lo -= 10.0
        while excess(hi) > 0:
            hi += 10.0
        root = optimize.brentq(excess, lo, hi, xtol=1e-13, rtol=1e-14)
        sigma = math.exp(root)
        while _gaussian_delta(epsilon, sigma, sensitivity) > delta:
            sigma *= 1.0 + 1e-12
        return cls(sigma * (1.0 + 1e-10), sensitivity)

    def delta_for_epsilon(self, epsilon: float) -> float:
        """Exact single-release privacy curve ``delta(epsilon)`` (seed eq. 4.1).

        ``delta = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``.
        """
        epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
        return _gaussian_delta(epsilon, self.sigma, self.sensitivity)

    def epsilon_for_delta(self, delta: float) -> float:
        """Smallest epsilon with ``delta_for_epsilon(epsilon) <= delta`` (rounded up)."""
        delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
        if self.delta_for_epsilon(0.0) <= delta:
            return 0.0
        hi = 1.0
        while self.delta_for_epsilon(hi) > delta:
            hi *= 2.0
        root = optimize.brentq(lambda e: self.delta_for_epsilon(e) - delta, 0.0, hi,
                               xtol=1e-14, rtol=1e-13)
        while self.delta_for_epsilon(root) > delta:
            root = root * (1 + 1e-12) + 1e-15
        return root

    @property
    def expected_distortion(self) -> float:
        """Mean absolute error ``sqrt(2/pi) sigma`` (seed eq. 3.88)."""
        return math.sqrt(2.0 / math.pi) * self.sigma

    def privacy_loss(self, x: Any) -> float | np.ndarray:
        """Privacy loss ``log p(x - D) - log p(x) = (2 x D - D^2) / (2 sigma^2)``."""
        x = np.asarray(x, dtype=float)
        d = self.sensitivity
        out = (2.0 * x * d - d * d) / (2.0 * self.sigma ** 2)
        return float(out) if out.ndim == 0 else out

    def randomize(self, value: Any, rng: np.random.Generator | int | None = None
                  ) -> float | np.ndarray:
        """Return ``value`` plus i.i.d. ``N(0, sigma^2)`` noise (scalar or array)."""
        array = _check_value(value)
        noisy = array + as_generator(rng).normal(0.0, self.sigma, size=array.shape)
        return _as_output(value, noisy)

    def describe(self) -> GaussianMechanism:
        """The accountant's description of this mechanism (the immutable value itself)."""
        return self

    def to_dp_event(self) -> Any:
        """Equivalent ``dp_accounting.GaussianDpEvent``."""
        from dp_accounting import dp_event
        return dp_event.GaussianDpEvent(noise_multiplier=self.sigma / self.sensitivity)

    _light_tailed = True

    def _logpdf(self, x: np.ndarray) -> np.ndarray:
        return stats.norm.logpdf(x, scale=self.sigma)

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        return special.ndtr(np.asarray(x) / self.sigma)

    def _sf(self, x: np.ndarray) -> np.ndarray:
        return special.ndtr(-np.asarray(x) / self.sigma)

    def _grid_halfwidth(self) -> float:
        return self.sigma * 9.0  # tail mass Phi(-9) ~ 1e-19


# ----------------------------------------------------------------------------- SaS noise law


def _sas_functions(alpha: float, scale: float) -> tuple[Callable, Callable, Callable]:
    """(logpdf, cdf, sf) of the centred SaS law (``privacy.stable``; closed forms at 1 and 2)."""
    return (lambda x: stable.sas_logpdf(x, alpha, scale),
            lambda x: stable.sas_cdf(x, alpha, scale),
            lambda x: stable.sas_sf(x, alpha, scale))


def _maximize_loss(loss: Callable[[np.ndarray], np.ndarray], start: float, width: float,
                   focus: tuple[float, float] | None = None) -> tuple[float, float]:
    """Maximise a smooth loss on ``[start, inf)`` that tends to 0 at infinity.

    A geometric scan from ``start`` brackets the peak, bounded Brent refines it.  ``focus =
    (center, scale)`` adds a dense symmetric geometric grid around ``center`` resolving features
    of width ``scale`` (the SaS loss peaks within a few noise scales of the shifted location, a
    peak far narrower than the scan's spacing when the noise scale is small).  Returns
    ``(upper_bound_of_max, argmax)``; the bound adds the Brent tolerance's second-order effect and
    an evaluation margin.
    """
    offsets = np.geomspace(1e-5 * width, 1e6 * width, 401)
    xs = start + offsets
    if focus is not None:
        center, scale = focus
        near = scale * np.geomspace(1e-3, 1e3, 121)
        extra = np.concatenate([center - near, [center], center + near])
        xs = np.unique(np.concatenate([xs, extra[extra > start]]))
    values = np.asarray(loss(xs), dtype=float)
    if not np.all(np.isfinite(values)):
        raise AccountingError("privacy loss evaluation returned non-finite values")
    k = int(np.argmax(values))
    if k == len(xs) - 1:
        raise AccountingError("the privacy loss did not reach its maximum within 1e6 scales; "
                              "cannot bound it")
    lo = start if k == 0 else xs[k - 1]
    hi = xs[k + 1]
    xatol = max(1e-14 * abs(xs[k]), 1e-15 * width)
    res = optimize.minimize_scalar(lambda t: -float(loss(np.array([t]))[0]), bounds=(lo, hi),
                                   method="bounded", options={"xatol": xatol, "maxiter": 500})
    x_star = float(res.x)
    best = max(float(-res.fun), float(values[k]))
    # curvature-based bound on the value error due to the location tolerance
    step = max(1e-4 * (hi - lo), 1e-8 * width)
    probe = np.asarray(loss(np.array([x_star - step, x_star, x_star + step])), dtype=float)
    curvature = abs(probe[0] - 2 * probe[1] + probe[2]) / step ** 2
    margin = 0.5 * curvature * (hi - lo) ** 2 if not res.success else 0.5 * curvature * xatol ** 2
    return best + margin + _LOSS_EVAL_MARGIN * max(1.0, abs(best)), x_star


@functools.lru_cache(maxsize=4096)
def _sas_epsilon_normalized(alpha: float, ratio: float) -> float:
    """Pure-DP epsilon of SaS with scale ``ratio`` and sensitivity 1 (seed eq. 3.35)."""
    if alpha == 2.0:
        return math.inf
    if alpha == 1.0:
        # closed form (3.57): log((s+1)/(s-1)), s = sqrt(4 ratio^2 + 1), = 2 asinh(1/(2 ratio))
        return 2.0 * math.asinh(0.5 / ratio) * (1.0 + 4e-16)
    logpdf, _, _ = _sas_functions(alpha, ratio)

    def loss(x):
        return logpdf(x - 1.0) - logpdf(x)
    value, _ = _maximize_loss(loss, 0.5, max(ratio, 1.0), focus=(1.0, ratio))
    return value


def sas_pure_epsilon(alpha: float, scale: float, sensitivity: float = 1.0) -> float:
    """Pure-DP epsilon of the scalar SaS mechanism, ``max_x log p(x - D) / p(x)``.

    Depends only on ``scale / sensitivity`` (seed eqs. 3.29, 3.30, 3.35); ``inf`` at alpha = 2.

    Examples
    --------
    >>> from privacy.mechanisms import sas_pure_epsilon
    >>> round(sas_pure_epsilon(1.0, 1.0), 6)   # Cauchy, eq. (3.57)
    0.962424
    """
    alpha = check_in_interval("alpha", alpha, 0.0, 2.0, low_open=True)
    scale = check_positive("scale", scale)
    sensitivity = check_positive("sensitivity", sensitivity)
    return _sas_epsilon_normalized(alpha, scale / sensitivity)


def _concave_majorant_at(xs: np.ndarray, ys: np.ndarray, x0: float) -> float:
    """Value at ``x0`` of the least concave majorant of the points (xs, ys) (xs increasing)."""
    hull: list[tuple[float, float]] = []
    for x, y in zip(xs, ys, strict=False):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (y2 - y1) * (x - x1) <= (y - y1) * (x2 - x1):
                hull.pop()
            else:
                break
        hull.append((float(x), float(y)))
    for (x1, y1), (x2, y2) in zip(hull[:-1], hull[1:], strict=False):
        if x1 <= x0 <= x2:
            return y1 if x2 == x1 else y1 + (y2 - y1) * (x0 - x1) / (x2 - x1)
    return hull[-1][1]


@dataclass(frozen=True)
class VectorEpsilon:
    """Pure-DP epsilon of an m-dimensional SaS query with l1-sensitivity D.

    Attributes
    ----------
    upper_bound : float
        Certified bound ``m * g_hat(D/m)``, ``g_hat`` the least concave majorant of
        ``g(d) = eps_1(d)`` (scalar epsilon at sensitivity d) on [0, D].
    achieved : float
        A lower bound on the true value: ``max_k k * g(D/k)``, k = 1..m (attained by spreading
        the shift evenly over k coordinates).
    seed_bound : float
        The seed's bound ``m * eps_1(D)`` (eq. 3.16), for comparison.
    """

    dimension: int
    upper_bound: float
    achieved: float
    seed_bound: float


@functools.lru_cache(maxsize=256)
def _vector_upper_bound(alpha: float, ratio: float, dimension: int) -> float:
    return SaSMechanism(alpha=alpha, scale=ratio).epsilon_vector(dimension).upper_bound


@dataclass(frozen=True)
class SaSMechanism:
    """Symmetric alpha-stable mechanism: adds i.i.d. SaS(alpha, scale) noise (seed eq. 3.8).

    Parameters
    ----------
    alpha : float
        Stability index in ``(0, 2]``; ``alpha = 2`` is Gaussian with ``sigma = sqrt(2) scale``
        and ``alpha = 1`` is Cauchy.
    scale : float
        Scale ``gamma > 0`` (characteristic function ``exp(-|gamma t|^alpha)``).
    sensitivity : float, default 1.0
        l1-sensitivity ``D > 0`` of the query.
    dimension : int, default 1
        Number of query coordinates ``m`` (each gets independent noise).  ``epsilon`` accounts
        for the worst split of the l1 shift over coordinates.

    Examples
    --------
    >>> from privacy import SaSMechanism
    >>> mech = SaSMechanism(alpha=1.0, scale=1.0)
    >>> round(mech.epsilon, 6)
    0.962424
    >>> round(mech.privacy_curve(0.5), 4)
    0.1191
    >>> round(SaSMechanism.from_epsilon(0.5, alpha=1.0).scale, 4)
    1.9793

    References
    ----------
    Seed eqs. (3.7)-(3.8), (3.29)-(3.35), (3.57), (3.85); Table 3.1; privacy curve (2.36).
    """

    alpha: float
    scale: float
    sensitivity: float = 1.0
    dimension: int = 1
    _functions: tuple = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", check_in_interval("alpha", self.alpha, 0.0, 2.0,
                                                            low_open=True))
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "dimension", check_integer("dimension", self.dimension,
                                                            minimum=1))

    # -- noise law
    def _funcs(self) -> tuple[Callable, Callable, Callable]:
        if self._functions is None:
            object.__setattr__(self, "_functions", _sas_functions(self.alpha, self.scale))
        return self._functions

    @property
    def _light_tailed(self) -> bool:
        return self.alpha == 2.0

    def _logpdf(self, x: np.ndarray) -> np.ndarray:
        return self._funcs()[0](x)

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        return self._funcs()[1](x)

    def _sf(self, x: np.ndarray) -> np.ndarray:
        return self._funcs()[2](x)

    def _grid_halfwidth(self) -> float:
        if self.alpha == 2.0:
            return 9.0 * math.sqrt(2.0) * self.scale
        return 1e4 * max(self.scale, self.sensitivity)

    # -- privacy
    @property
    def scalar_epsilon(self) -> float:
        """Pure-DP epsilon of one coordinate carrying the whole shift (seed eq. 3.29)."""
        return _sas_epsilon_normalized(self.alpha, self.scale / self.sensitivity)

    @property
    def epsilon(self) -> float:
        """Pure-DP epsilon (an upper bound); ``inf`` for ``alpha = 2``.

        For ``dimension == 1`` this is ``max_x log p(x - D) - log p(x)`` (eq. 3.29), maximised by
        bracketing and bounded Brent plus an error margin.  For ``dimension > 1`` it is
        :meth:`epsilon_vector` ``.upper_bound``.
        """
        if self.dimension == 1:
            return self.scalar_epsilon
        return _vector_upper_bound(self.alpha, self.scale / self.sensitivity, self.dimension)

    def epsilon_vector(self, dimension: int, *, grid_points: int = 1500) -> VectorEpsilon:
        """Pure-DP epsilon of an m-dimensional query with l1-sensitivity D (i.i.d. noise).

        Derivation: the loss is separable, ``L(x) = sum_i l(x_i; d_i)``, so for a fixed shift
        vector ``d`` the supremum over ``x`` is ``sum_i g(|d_i|)`` with ``g(d) = eps_1(d)`` the
        scalar epsilon at sensitivity ``d``.  ``g`` is increasing, so the worst shift has
        ``sum |d_i| = D`` and epsilon is ``max sum_i g(d_i)`` subject to ``sum d_i = D``.  For
        every such ``d``, ``sum_i g(d_i) <= sum_i g_hat(d_i) <= m g_hat(D/m)`` with ``g_hat`` the
        least concave majorant of ``g`` (Jensen).  ``g`` is evaluated on a grid; since it is
        increasing, ``g(d) <= g(d_{j+1})`` on ``[d_j, d_{j+1}]`` and the majorant of that
        staircase is a certified bound.  When ``g`` is concave (e.g. Cauchy,
        ``g(d) = 2 asinh(d / (2 gamma))``) the bound is attained by the even split; when it is
        convex somewhere (alpha near 2, where the loss is Gaussian-like) the worst split can
        concentrate the shift.

        Parameters
        ----------
        dimension : int
            Number of coordinates ``m >= 1``.
        grid_points : int, default 1500
            Number of geometrically spaced sensitivities ``d`` at which ``g`` is evaluated (plus
            a uniform grid and a fine grid around ``D/m``).  The staircase bound between grid
            points makes the result conservative by roughly the relative grid spacing
            (< 1 %); ``achieved`` is a certified lower bound, so the gap is visible.

        Returns
        -------
        VectorEpsilon
            Upper bound, an attained lower bound and the seed's bound (3.16).
        """
        m = check_integer("dimension", dimension, minimum=1)
        if self.alpha == 2.0:
            return VectorEpsilon(m, math.inf, math.inf, math.inf)
        total = self.sensitivity

        def g(d: float) -> float:
            return 0.0 if d <= 0 else _sas_epsilon_normalized(self.alpha, self.scale / d)
        grid = np.unique(np.concatenate([
            [0.0], np.linspace(0.0, total, 201), np.geomspace(1e-4 * total, total, grid_points),
            total / m * (1.0 + np.linspace(-0.5, 0.5, 401)),
            total / np.arange(1, m + 1)]))
        grid = grid[(grid >= 0) & (grid <= total)]
        values = np.array([g(d) for d in grid])
        step_x = grid[:-1]
        step_y = values[1:]
        xs = np.append(step_x, total)
        ys = np.append(step_y, values[-1])
        upper = m * _concave_majorant_at(xs, ys, total / m)
        achieved = max(k * g(total / k) for k in range(1, m + 1))
        return VectorEpsilon(m, max(upper, achieved), achieved, m * g(total))

    @classmethod
    def from_epsilon(cls, epsilon: float, *, alpha: float, sensitivity: float = 1.0
                     ) -> SaSMechanism:
        """Smallest scale (to relative 1e-10, rounded up) whose pure-DP epsilon is <= ``epsilon``.

        Raises
        ------
        ParameterError
            ``alpha`` outside ``(0, 2)`` (alpha = 2 is not pure DP) or bad epsilon/sensitivity.
        """
        epsilon = check_positive("epsilon", epsilon)
        alpha = check_in_interval("alpha", alpha, 0.0, 2.0, low_open=True, high_open=True)
        sensitivity = check_positive("sensitivity", sensitivity)

        def excess(log_ratio: float) -> float:
            return _sas_epsilon_normalized(alpha, math.exp(log_ratio)) - epsilon
        lo, hi = -2.0, 2.0
        while excess(lo) < 0:
            lo -= 4.0
        while excess(hi) > 0:
            hi += 4.0
        root = optimize.brentq(excess, lo, hi, xtol=1e-12, rtol=1e-13)
        ratio = math.exp(root) * (1.0 + 1e-10)
        while _sas_epsilon_normalized(alpha, ratio) > epsilon:
            ratio *= 1.0 + 1e-9
        return cls(alpha=alpha, scale=ratio * sensitivity, sensitivity=sensitivity)

    @property
    def expected_distortion(self) -> float:
        """Mean absolute error ``E|Y| = 2 gamma Gamma(1 - 1/alpha) / pi`` (seed eq. 3.85).

        ``inf`` for ``alpha <= 1`` (no finite mean).
        """
        if self.alpha <= 1.0:
            return math.inf
        return 2.0 * self.scale * math.gamma(1.0 - 1.0 / self.alpha) / math.pi

    def privacy_loss(self, x: Any) -> float | np.ndarray:
        """Privacy loss ``log p(x - D) - log p(x)`` of scalar outcome(s) ``x`` (noise coords)."""
        x = np.asarray(x, dtype=float)
        out = np.asarray(self._logpdf(x - self.sensitivity) - self._logpdf(x), dtype=float)
        return float(out) if out.ndim == 0 else out

    def _loss_level_set(self, epsilon: float) -> tuple[float, float]:
        """Interval ``(a, b)`` where the scalar loss exceeds ``epsilon >= 0``.

        The loss is antisymmetric about ``D/2``, positive on ``(D/2, inf)``, rises to its peak
        and decays to 0 (to ``+inf`` linearly for alpha = 2), so ``{loss > eps}`` is an interval.
        """
        d = self.sensitivity
        loss = self.privacy_loss
        if self.alpha == 2.0:
            sigma2 = 2.0 * self.scale ** 2
            return (epsilon * sigma2 + 0.5 * d * d) / d, math.inf
        peak, x_star = _maximize_loss(lambda x: np.asarray(loss(x)), 0.5 * d,
                                      max(self.scale, d))
        f = lambda t: float(loss(t)) - epsilon  # noqa: E731
        if f(x_star) <= 0:
            return x_star, x_star
        left = 0.5 * d
        a = left if f(left) > 0 else optimize.brentq(f, left, x_star, xtol=1e-14 * x_star,
                                                     rtol=1e-15)
        hi = 2.0 * x_star
        while f(hi) > 0:
            hi *= 2.0
            if hi > 1e12 * max(self.scale, d):
                return a, math.inf
        b = optimize.brentq(f, x_star, hi, xtol=1e-14 * hi, rtol=1e-15)
        return a, b

    def privacy_curve(self, epsilon: float) -> float:
        """Single-release privacy curve ``delta(epsilon)`` (seed eq. 2.36, Fig. 4.1).

        ``delta(eps) = int (p(x - D) - e^eps p(x))_+ dx = P1(A) - e^eps P0(A)`` with
        ``A = {loss > eps} = (a, b)``, computed from cdf/sf differences (accurate in the tails).
        Zero for ``epsilon >= self.epsilon`` when ``alpha < 2``.
        """
        epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
        if self.dimension != 1:
            raise AccountingError("privacy_curve is implemented for dimension 1 only")
        if self.alpha < 2.0 and epsilon >= self.scalar_epsilon:
            return 0.0
        a, b = self._loss_level_set(epsilon)
        if b <= a:
            return 0.0
        d = self.sensitivity
        mass1 = self._mass(a - d, b - d)
        mass0 = self._mass(a, b)
        return float(min(1.0, max(0.0, mass1 - math.exp(epsilon) * mass0)))

    def _mass(self, lo: float, hi: float) -> float:
        """Noise mass of ``[lo, hi]``."""
        cdf, sf = self._cdf, self._sf
        if hi <= 0:
            return float(cdf(np.array(hi)) - cdf(np.array(lo)))
        if lo >= 0:
            return float(sf(np.array(lo)) - (0.0 if hi == math.inf else sf(np.array(hi))))
        return float(1.0 - cdf(np.array(lo)) - (0.0 if hi == math.inf else sf(np.array(hi))))

    def randomize(self, value: Any, rng: np.random.Generator | int | None = None
                  ) -> float | np.ndarray:
        """Return ``value`` plus i.i.d. SaS(alpha, scale) noise (scalar or array, same shape).

        With ``dimension = m > 1`` the value must have exactly ``m`` entries: ``epsilon`` then
        covers the whole m-dimensional release.  With ``dimension = 1`` every entry of an array
        is a separate scalar release, each with ``epsilon`` (compose them with the accountant,
        or build the mechanism with ``dimension`` equal to the number of entries).
        """
        array = _check_value(value)
        if self.dimension > 1 and array.size != self.dimension:
            raise DimensionError(f"value has {array.size} entries; this mechanism was built for "
                                 f"dimension={self.dimension} coordinates, which its epsilon "
                                 f"covers")
        noise = stable.sas_sample(self.alpha, self.scale, size=array.shape, rng=rng)
        return _as_output(value, array + noise)

    def describe(self) -> SaSMechanism:
        """The accountant's description of this mechanism (the immutable value itself)."""
        return self


def _check_sampling_rate(sampling_rate: float) -> float:
    return check_probability("sampling_rate", sampling_rate, allow_zero=False)
