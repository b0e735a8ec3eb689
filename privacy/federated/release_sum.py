"""FedInfer's posterior of a global sum from independent noisy releases of its parts.

Client ``k`` releases ``zhat_k = z_k + r_k`` once (its whole budget), ``r_k`` i.i.d. per
coordinate with its own law and scale (a :class:`~privacy.federated.noise.ReleaseSumNoise`:
``ReleaseSumNoise.release(kind, scale, alpha)``, whose old name ``ReleaseNoise`` still
works).  The
server observes ``y = sum_k zhat_k = z* + e``, ``e = sum_k r_k``: one *full observation* of the
global block ``z* = sum_k z_k`` (seed 7.18), and FedInfer's posterior given it is, per
coordinate, ``p(z* | y) ~ prior(z*) f_e(y - z*)`` with ``f_e`` the law of the summed noise:

* **Gaussian** releases (``sigma_k``): ``e ~ N(0, sum_k sigma_k^2)``; with FedInfer's flat
  conjugate prior (:class:`GaussianPosterior`) the posterior is ``N(y, sum_k sigma_k^2)``.
* **SaS** releases with a common alpha (``gamma_k``): ``e`` is SaS(alpha) with scale
  ``(sum_k gamma_k^alpha)^(1/alpha)`` (stability, seed eq. 3.8; checked against
  ``scipy.stats.levy_stable`` in the tests).  Heterogeneous scales stay closed-form; the relative
  error of ``y / N`` falls only like ``N^(1/alpha - 1)`` for equal scales, not ``N^(-1/2)``.
  Different alphas do not sum to a stable law and are refused.
* **Laplace** releases (``b_k``): equal scales (up to 400 terms) have the closed form of
  :class:`privacy.federated.noise.ReleaseSumNoise`; otherwise (heterogeneous scales, or more
  terms) the density is the Fourier inversion of ``prod_k 1 / (1 + b_k^2 t^2)`` on a grid of
  ``spread / 512`` (FFT), tabulated in log and extended beyond the table (where it falls below
  1e-13 of the peak) with the exact exponential rate ``1 / max_k b_k`` (:class:`LaplaceSum`).
* Gaussian and Laplace releases together: the same inversion with the Gaussian factor.

Non-Gaussian posteriors use FedInfer's :class:`GridPosterior` with its uniform prior on the box
that holds every possible global block (known from the clients' clipping bounds and public
sample counts), which also gives SaS (alpha <= 1) posterior means that a flat prior lacks.
Clients joining over rounds add their releases to ``y`` and their scales to the law: the
streaming statistic is ``(y, scales)`` (``(y, sum sigma^2)``, ``(y, sum gamma^alpha)``).

References
----------
Seed Ch. 7 (eqs. 7.13-7.19, Algorithm 2's posterior), Ch. 3 (eq. 3.8: SaS sums).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import check_in_interval, check_positive
from privacy.federated.noise import ReleaseNoise, ReleaseSumNoise
from privacy.federated.posterior import GridPosterior, PosteriorSummary

__all__ = ["ReleaseNoise", "LaplaceSum", "summed_noise_law", "sum_posterior"]

_MAX_CLOSED_LAPLACE = 400
#: Grid spacing of the Fourier inversion: this fraction of the spread of the sum, and at most
#: this fraction of the smallest Laplace scale (the cusp of few terms needs it).
_STEP = 1.0 / 128.0
_STEP_SMALLEST = 1.0 / 32.0
#: Half-width of the tabulated density: this many spreads (plus as many largest scales).
_HALF_WIDTH = 40.0
#: Characteristic-function values below exp(-800) are zero in double precision.
_LOG_TINY = -800.0
#: Below this fraction of the peak the inverted density is numerical noise: extrapolate.
_FLOOR = 1e-13


class LaplaceSum:
    """Law of a sum of independent Laplace (and Gaussian) noises, by Fourier inversion.

    Parameters
    ----------
    laplace_scales : sequence of float
        ``b_k`` (at least one).
    gaussian_variance : float, default 0
        Variance of an independent Gaussian term.

    Examples
    --------
    Two equal scales against the closed form of :class:`ReleaseSumNoise`:

    >>> law = LaplaceSum([1.0, 1.0])
    >>> exact = ReleaseSumNoise("laplace", 1.0, (1.0, 1.0))
    >>> x = np.array([0.0, 1.0, 5.0, 20.0])
    >>> bool(np.allclose(law.logpdf(x), exact.logpdf(x), atol=1e-6))
    True
    """

    noise = "laplace"

    def __init__(self, laplace_scales: Sequence[float], gaussian_variance: float = 0.0):
        b = np.array([check_positive("laplace scale", v) for v in laplace_scales], dtype=float)
        if b.size == 0:
            raise ParameterError("LaplaceSum needs at least one Laplace scale")
        if not (math.isfinite(gaussian_variance) and gaussian_variance >= 0):
            raise ParameterError(f"gaussian_variance must be finite and >= 0; got "
                                 f"{gaussian_variance!r}")
        self.rate = 1.0 / float(b.max())
        self.spread = math.sqrt(2.0 * float(np.sum(b ** 2)) + gaussian_variance)
        step = min(_STEP * self.spread, _STEP_SMALLEST * float(b.min()))
        half = _HALF_WIDTH * (self.spread + float(b.max()))
        size = 1 << int(math.ceil(math.log2(2.0 * half / step)))
        omega = 2.0 * math.pi * np.fft.fftfreq(size, d=step)
        log_cf = -0.5 * gaussian_variance * omega ** 2
        # largest scales first: after a few, only low frequencies are left above exp(-800)
        for chunk in np.array_split(np.sort(b)[::-1], max(1, b.size // 32)):
            alive = np.flatnonzero(log_cf > _LOG_TINY)
            log_cf[alive] -= np.log1p(np.outer(omega[alive] ** 2, chunk ** 2)).sum(axis=1)
        density = np.fft.fft(np.exp(log_cf)).real / (size * step)   # x_j = j step, wrapped
        keep = size // 2
        x = np.arange(keep) * step
        f = density[:keep]
        valid = f > _FLOOR * f[0]
        last = int(np.argmin(valid)) if not valid.all() else keep
        self._x = x[:last]
        self._logf = np.log(f[:last])
        # beyond the table: the last local slope, never steeper than the exact asymptotic rate
        # 1 / max b (a sum's log density bends towards that rate from above, so the extension
        # errs towards heavier tails)
        local = ((self._logf[-1] - self._logf[-9]) / (self._x[-1] - self._x[-9])
                 if last > 9 else -self.rate)
        self._slope = min(max(local, -self.rate), -1e-3 * self.rate)

    def logpdf(self, x: Any) -> np.ndarray:
        """Log density at ``x`` (any shape)."""
        a = np.abs(np.asarray(x, dtype=float))
        inside = np.interp(a, self._x, self._logf)
        beyond = self._logf[-1] + self._slope * (a - self._x[-1])
        return np.where(a <= self._x[-1], inside, beyond)


def summed_noise_law(noises: Sequence[ReleaseSumNoise]) -> ReleaseSumNoise | LaplaceSum:
    """The per-coordinate law of ``sum_k r_k`` (see the module notes).

    Parameters
    ----------
    noises : sequence of ReleaseSumNoise
        One per release (at least one; :meth:`ReleaseSumNoise.release`, formerly
        ``ReleaseNoise``).
        A law with several weights stands for its weighted terms.

    Returns
    -------
    ReleaseSumNoise or LaplaceSum
        With ``logpdf`` and ``spread`` (what :class:`GridPosterior` needs); Gaussian sums
        as a Gaussian :class:`ReleaseSumNoise`.

    Raises
    ------
    ParameterError
        No release, SaS releases with different alphas, or SaS mixed with other noise.
    """
    noises = list(noises)
    if not noises:
        raise ParameterError("noises must hold at least one release's noise")
    terms = [(n.noise, n.scale * w, n.alpha) for n in noises for w in n.weights]
    kinds = {kind for kind, _, _ in terms}
    if "sas" in kinds:
        alphas = sorted({alpha for kind, _, alpha in terms if kind == "sas"})
        if kinds != {"sas"} or len(alphas) > 1:
            raise ParameterError(f"SaS releases sum to a stable law only with one alpha and no "
                                 f"other noise; got kinds {sorted(kinds)} and alphas {alphas}")
        return ReleaseSumNoise("sas", 1.0, tuple(scale for _, scale, _ in terms), alphas[0])
    if kinds == {"gaussian"}:
        return ReleaseSumNoise("gaussian", 1.0, tuple(scale for _, scale, _ in terms))
    laplace = [scale for kind, scale, _ in terms if kind == "laplace"]
    variance = sum(scale ** 2 for kind, scale, _ in terms if kind == "gaussian")
    if variance == 0 and len(set(laplace)) == 1 and len(laplace) <= _MAX_CLOSED_LAPLACE:
        return ReleaseSumNoise("laplace", laplace[0], (1.0,) * len(laplace))
    return LaplaceSum(laplace, variance)


def sum_posterior(total: Any, noises: Sequence[ReleaseSumNoise], *, lower: Any, upper: Any,
                  level: float = 0.95) -> PosteriorSummary:
    """FedInfer's posterior of ``z* = sum_k z_k`` given ``y = sum_k (z_k + r_k)``.

    Parameters
    ----------
    total : array_like, shape (d,)
        ``y``, the sum of the releases.
    noises : sequence of ReleaseSumNoise
        The noise of every release summed into ``y`` (empty: ``y`` is exact).
    lower, upper : array_like, shape (d,)
        The prior box of ``z*`` (used by non-Gaussian noise; Gaussian noise has FedInfer's
        flat conjugate prior).
    level : float, default 0.95
        Level of the central credible intervals.

    Returns
    -------
    PosteriorSummary
        Per coordinate: mean, sd, central credible interval.

    Raises
    ------
    DimensionError, NonFiniteError, ParameterError
        Shapes that disagree, non-finite values, or a noise mix without a law here.

    Examples
    --------
    >>> noises = [ReleaseSumNoise.release("gaussian", 3.0),
    ...           ReleaseSumNoise.release("gaussian", 4.0)]
    >>> post = sum_posterior([10.0], noises, lower=[-100.0], upper=[100.0])
    >>> float(post.mean[0]), float(post.std[0])          # N(y, 3^2 + 4^2)
    (10.0, 5.0)
    """
    y = np.asarray(total, dtype=float)
    if y.ndim != 1 or y.size == 0:
        raise DimensionError(f"total must be a non-empty 1-D array; got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise NonFiniteError(f"total holds {int(np.sum(~np.isfinite(y)))} non-finite values")
    level = check_in_interval("level", level, 0.0, 1.0, low_open=True, high_open=True)
    if not noises:
        zero = np.zeros_like(y)
        return PosteriorSummary(y.copy(), zero, y.copy(), y.copy(), level, 1)
    law = summed_noise_law(noises)
    if law.noise == "gaussian":
        # GaussianPosterior's flat-prior closed form for one observation, without its
        # round-off: the mean is exactly the sum (what a plain aggregation returns)
        std = np.full(y.size, law.combined_scale)
        half = special.ndtri(0.5 + level / 2.0) * std
        return PosteriorSummary(y.copy(), std, y - half, y + half, level, 1)
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if lo.shape != y.shape or hi.shape != y.shape:
        raise DimensionError(f"lower and upper must have the shape of total {y.shape}; got "
                             f"{lo.shape} and {hi.shape}")
    posterior = GridPosterior(law, lo, hi)
    return posterior.summary(posterior.add(posterior.initial(), y), level=level)
