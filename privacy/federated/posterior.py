"""The FedInfer server's Bayesian step: posteriors of the global data block under the noise law.

A *full observation* of the global block ``z*`` (7.18 synchronous, 7.24 asynchronous) is ``z*``
plus a weighted sum of the clients' independent release noises, whose per-coordinate law is a
:class:`~privacy.federated.noise.ReleaseSumNoise` (defined in :mod:`privacy.federated.noise`, the
federation's one noise type; its old name ``NoiseLaw`` is still served here, deprecated).

Posteriors over ``z*`` (independent coordinates):

* :class:`GaussianPosterior`: conjugate normal prior ``N(m0, v0)`` (flat by default); the
  streaming sufficient statistic is (count, running mean); posterior
  ``N(v (m0/v0 + n zbar/s^2), v = 1/(1/v0 + n/s^2))``.
* :class:`GridPosterior`: any :class:`ReleaseSumNoise` (used for SaS and Laplace, which have no
  finite sufficient statistic). Prior uniform on the box that holds every possible block (known
  from the clients' clipping bounds). Per coordinate the log-likelihood is kept on a grid that
  always spans the whole box: a uniform core of ``core`` nodes over the posterior mean +- 24 sd
  and geometric tails out to the box edges. When the posterior sd has halved since the grid was
  built, the grid is rebuilt and the log-likelihood re-evaluated exactly from the stored
  observations (O(n) work at geometrically spaced n, so O(n) in total). Nothing is truncated
  (the grid covers the prior's support); the only error is the trapezoid rule on a grid with 8
  nodes per posterior sd right after re-gridding (at least 4 until the next), which the tests
  check against adaptive quadrature of the exact posterior (relative errors ~1e-7 and below).

References
----------
Seed eqs. (7.4)-(7.5), (7.16)-(7.19), (7.24)-(7.25), Theorem 7.3.1, Assumption 4; stability of
SaS sums (Ch. 3, eq. 3.8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.lazy import deprecated_attributes
from _toolbox.validation import check_integer
from privacy.federated import _RENAMED
from privacy.federated.noise import ReleaseSumNoise

__all__ = ["INTERVALS", "PosteriorSummary", "GaussianPosterior", "GridPosterior", "make_posterior"]
# ``NoiseLaw``, once re-exported here, is now ``ReleaseSumNoise`` (served with a warning)
__getattr__ = deprecated_attributes(__name__, _RENAMED)


#: Credible intervals a summary can give: equal tails, or highest posterior density.
INTERVALS = ("central", "hpd")


@dataclass(frozen=True)
class PosteriorSummary:
    """Posterior mean, standard deviation and a credible interval per coordinate.

    ``interval`` says which: ``"central"`` (equal tails, the default) or ``"hpd"`` (highest
    posterior density).  They differ where the posterior is skewed, above all when its mode is
    at the prior box's edge: a statistic whose true value lies at the edge (a diagonal Gram
    entry near 0) is then *never* inside the central interval, whose lower end is the
    posterior's 2.5 % quantile above the edge, while the HPD interval starts at the edge.
    """

    mean: np.ndarray
    std: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    count: int
    interval: str = "central"


def _check_interval(interval: str) -> str:
    if interval not in INTERVALS:
        raise ParameterError(f"interval must be one of {INTERVALS}; got {interval!r}")
    return interval


def _check_obs(x: Any, dimension: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.shape != (dimension,):
        raise DimensionError(f"observation has shape {x.shape}; expected ({dimension},)")
    return x


class GaussianPosterior:
    """Conjugate normal posterior of ``z*`` from full observations with Gaussian noise.

    Parameters
    ----------
    law : ReleaseSumNoise
        Gaussian law of one full observation.
    dimension : int
    prior_mean : float or array, default 0
    prior_var : float or array, default inf (flat prior)

    Examples
    --------
    >>> post = GaussianPosterior(ReleaseSumNoise("gaussian", 2.0, (1.0,)), dimension=1)
    >>> arrays = post.add(post.initial(), np.array([1.0]))
    >>> arrays = post.add(arrays, np.array([3.0]))
    >>> s = post.summary(arrays)
    >>> float(s.mean[0]), round(float(s.std[0]), 6)     # mean 2, sd 2 / sqrt(2)
    (2.0, 1.414214)
    """

    def __init__(self, law: ReleaseSumNoise, dimension: int, *, prior_mean: Any = 0.0,
                 prior_var: Any = math.inf):
        if law.noise != "gaussian":
            raise ParameterError(f"GaussianPosterior needs a Gaussian noise law; got "
                                 f"{law.noise!r} (use GridPosterior)")
        self.law = law
        self.dimension = check_integer("dimension", dimension, minimum=1)
        self.prior_mean = np.broadcast_to(np.asarray(prior_mean, dtype=float), (dimension,))
        self.prior_var = np.broadcast_to(np.asarray(prior_var, dtype=float), (dimension,))
        if np.any(self.prior_var <= 0):
            raise ParameterError("prior_var must be > 0 (inf for a flat prior)")

    def initial(self) -> dict[str, np.ndarray]:
        """Empty statistic: count 0, running mean 0."""
        return {"count": np.array(0.0), "mean": np.zeros(self.dimension)}

    def add(self, arrays: dict[str, np.ndarray], x: Any) -> dict[str, np.ndarray]:
        """Streaming update ``T'`` (Assumption 4) with one full observation."""
        x = _check_obs(x, self.dimension)
        n = float(arrays["count"]) + 1.0
        return {"count": np.array(n), "mean": arrays["mean"] + (x - arrays["mean"]) / n}

    def summary(self, arrays: dict[str, np.ndarray], extra: Any = None,
                level: float = 0.95, interval: str = "central") -> PosteriorSummary:
        """Posterior given the statistic (and optionally one more pseudo-observation); the
        normal posterior is symmetric, so its HPD interval is the central one."""
        interval = _check_interval(interval)
        if extra is not None:
            arrays = self.add(arrays, extra)
        n = float(arrays["count"])
        noise_var = self.law.combined_scale ** 2
        if n == 0:      # no observation yet: the prior (possibly flat, infinite variance)
            mean = np.array(self.prior_mean, dtype=float)
            var = np.broadcast_to(np.asarray(self.prior_var, dtype=float), mean.shape)
        else:
            with np.errstate(divide="ignore"):
                prior_precision = np.where(np.isinf(self.prior_var), 0.0, 1.0 / self.prior_var)
            var = 1.0 / (prior_precision + n / noise_var)
            mean = var * (prior_precision * self.prior_mean + n * arrays["mean"] / noise_var)
        std = np.sqrt(var)
        half = special.ndtri(0.5 + level / 2.0) * std
        return PosteriorSummary(mean, std, mean - half, mean + half, level, int(n), interval)


class GridPosterior:
    """Posterior of ``z*`` on adaptive per-coordinate grids, for any :class:`ReleaseSumNoise`.

    Parameters
    ----------
    law : ReleaseSumNoise
    lower, upper : array_like, shape (d,)
        The box holding every possible global block (uniform prior on it).
    core : int, default 384
        Uniform nodes over the posterior mean +- 24 sd.
    tail : int, default 96
        Geometric nodes on each side from the core to the box edge.

    Examples
    --------
    >>> law = ReleaseSumNoise("sas", 0.5, (1.0, 1.0), alpha=1.5)
    >>> post = GridPosterior(law, lower=[-10.0], upper=[10.0])
    >>> arrays = post.initial()
    >>> for x in (0.9, 1.3, 0.7, 1.1):
    ...     arrays = post.add(arrays, np.array([x]))
    >>> s = post.summary(arrays)
    >>> bool(0.7 < s.mean[0] < 1.3 and s.lower[0] < s.mean[0] < s.upper[0])
    True
    """

    def __init__(self, law: ReleaseSumNoise, lower: Any, upper: Any, *, core: int = 384,
                 tail: int = 96):
        lo = np.asarray(lower, dtype=float)
        hi = np.asarray(upper, dtype=float)
        if lo.ndim != 1 or lo.shape != hi.shape:
            raise DimensionError(f"lower and upper must be 1-D of equal length; got shapes "
                                 f"{lo.shape} and {hi.shape}")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
            raise ParameterError("a grid posterior needs a finite prior box with upper > lower "
                                 "in every coordinate (the model's block_bounds)")
        self.law = law
        self.lower, self.upper = lo, hi
        self.dimension = lo.size
        self.core = check_integer("core", core, minimum=16)
        self.tail = check_integer("tail", tail, minimum=4)

    def initial(self) -> dict[str, np.ndarray]:
        """Before any observation: no grid yet (the first observation places it)."""
        d = self.dimension
        return {"count": np.array(0.0), "obs": np.zeros((0, d)),
                "grid": np.zeros((d, 0)), "loglik": np.zeros((d, 0)), "anchor_sd": np.zeros(d)}

    def _grid(self, center: np.ndarray, sd: np.ndarray) -> np.ndarray:
        """Nodes (d, core + 2 tail): uniform core c +- 24 sd, geometric tails to the box."""
        lo, hi = self.lower[:, None], self.upper[:, None]
        half = 24.0 * sd[:, None]
        c = np.clip(center, self.lower, self.upper)[:, None]
        a = np.maximum(c - half, lo)
        b = np.minimum(c + half, hi)
        u = np.linspace(0.0, 1.0, self.core)[None, :]
        core = a + (b - a) * u
        t = np.linspace(0.0, 1.0, self.tail + 1)[None, 1:]
        step = (b - a) / (self.core - 1)
        left_span = np.maximum(a - lo, 0.0)
        right_span = np.maximum(hi - b, 0.0)
        # geometric offsets from the core edge: first step ~ the core spacing, last at the edge
        left = a - _geometric(step, left_span, t)[:, ::-1]
        right = b + _geometric(step, right_span, t)
        grid = np.concatenate([left, core, right], axis=1)
        return np.maximum.accumulate(np.clip(grid, lo, hi), axis=1)

    def _loglik(self, obs: np.ndarray, grid: np.ndarray) -> np.ndarray:
        total = np.zeros_like(grid)
        for x in obs:
            total += self.law.logpdf(x[:, None] - grid)
        return total

    def add(self, arrays: dict[str, np.ndarray], x: Any) -> dict[str, np.ndarray]:
        """Add one full observation (re-gridding when the posterior sd has halved)."""
        x = _check_obs(x, self.dimension)
        obs = np.vstack([arrays["obs"], x[None, :]])
        count = np.array(float(arrays["count"]) + 1.0)
        if arrays["grid"].shape[1] == 0:
            sd = np.full(self.dimension, self.law.spread)
            grid = self._grid(x, sd)
            return {"count": count, "obs": obs, "grid": grid, "loglik": self._loglik(obs, grid),
                    "anchor_sd": sd}
        grid = arrays["grid"]
        loglik = arrays["loglik"] + self.law.logpdf(x[:, None] - grid)
        anchor = arrays["anchor_sd"]
        mean, std, _ = _moments(grid, loglik)
        shrunk = std < 0.5 * anchor
        if np.any(shrunk):
            new_grid = grid.copy()
            new_grid[shrunk] = self._grid(mean, std)[shrunk]
            loglik = loglik.copy()
            loglik[shrunk] = self._loglik(obs[:, shrunk], new_grid[shrunk])
            anchor = np.where(shrunk, std, anchor)
            grid = new_grid
        return {"count": count, "obs": obs, "grid": grid, "loglik": loglik, "anchor_sd": anchor}

    def summary(self, arrays: dict[str, np.ndarray], extra: Any = None,
                level: float = 0.95, interval: str = "central") -> PosteriorSummary:
        """Posterior mean, sd and credible interval (trapezoid on the grid): ``"central"``
        (equal tails) or ``"hpd"`` (highest density: the nodes of largest density holding
        ``level`` of the mass, from the lowest to the highest of them; it reaches the box's
        edge when the mode is there, see :class:`PosteriorSummary`)."""
        interval = _check_interval(interval)
        if extra is not None:   # a pseudo-observation (Alg. 2, line 11): no re-gridding
            extra = _check_obs(extra, self.dimension)
            if arrays["grid"].shape[1] == 0:
                arrays = self.add(arrays, extra)
            else:
                arrays = {**arrays, "count": arrays["count"] + 1.0,
                          "loglik": arrays["loglik"] + self.law.logpdf(extra[:, None]
                                                                       - arrays["grid"])}
        if arrays["grid"].shape[1] == 0:   # prior only
            mean = 0.5 * (self.lower + self.upper)
            std = (self.upper - self.lower) / math.sqrt(12.0)
            tail = 0.5 - level / 2.0
            width = self.upper - self.lower
            if interval == "central":
                lower, upper = self.lower + tail * width, self.upper - tail * width
            else:        # a uniform density: every interval of the level's width is highest
                lower, upper = self.lower, self.lower + level * width
            return PosteriorSummary(mean, std, lower, upper, level, 0, interval)
        mean, std, cdf = _moments(arrays["grid"], arrays["loglik"])
        if interval == "hpd":
            lower, upper = _hpd(arrays["grid"], arrays["loglik"], level)
        else:
            tail = 0.5 - level / 2.0
            lower = _quantile(arrays["grid"], cdf, tail)
            upper = _quantile(arrays["grid"], cdf, 1.0 - tail)
        return PosteriorSummary(mean, std, lower, upper, level, int(arrays["count"]), interval)


def _log_expm1(c: np.ndarray) -> np.ndarray:
    return np.where(c > 30.0, c, np.log(np.expm1(np.minimum(c, 30.0))))


def _geometric(step: np.ndarray, span: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Offsets ``span expm1(c t) / expm1(c)`` at ``t = i/n``: first ~``step``, last ``span``.

    ``c`` solves ``expm1(c) / expm1(c / n) = span / step`` (bisection); when ``span <= n step``
    the offsets are uniform.
    """
    n = t.shape[1]
    target = np.log(np.maximum(span, 1e-300) / np.maximum(step, 1e-300))[:, 0]
    lo = np.full(target.shape, 1e-9)
    hi = np.full(target.shape, 60.0 + np.maximum(target, 0.0))
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        above = _log_expm1(mid) - _log_expm1(mid / n) > target
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    c = hi[:, None]
    return span * np.exp(_log_expm1(c * t) - _log_expm1(c))


def _moments(grid: np.ndarray, loglik: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, sd and cdf at the nodes of the normalized density exp(loglik) (trapezoid)."""
    w = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    dx = np.diff(grid, axis=1)
    cell = 0.5 * (w[:, 1:] + w[:, :-1]) * dx
    mass = cell.sum(axis=1)
    first = (0.5 * (w[:, 1:] * grid[:, 1:] + w[:, :-1] * grid[:, :-1]) * dx).sum(1) / mass
    second = (0.5 * (w[:, 1:] * grid[:, 1:] ** 2 + w[:, :-1] * grid[:, :-1] ** 2) * dx).sum(1)
    var = np.maximum(second / mass - first ** 2, 0.0)
    cdf = np.concatenate([np.zeros((grid.shape[0], 1)), np.cumsum(cell, axis=1)], axis=1)
    return first, np.sqrt(var), cdf / mass[:, None]


def _hpd(grid: np.ndarray, loglik: np.ndarray, level: float
         ) -> tuple[np.ndarray, np.ndarray]:
    """Highest-density interval per coordinate: the nodes in decreasing density until they
    hold ``level`` of the trapezoid mass (each node half of its two cells), from the lowest to
    the highest of them (the HPD region itself for a unimodal density, a cover otherwise)."""
    w = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    dx = np.diff(grid, axis=1)
    share = np.zeros_like(w)
    share[:, :-1] += 0.5 * w[:, :-1] * dx
    share[:, 1:] += 0.5 * w[:, 1:] * dx
    order = np.argsort(-w, axis=1, kind="stable")
    mass = np.cumsum(np.take_along_axis(share, order, axis=1), axis=1)
    mass /= mass[:, -1:]
    count = np.argmax(mass >= level - 1e-12, axis=1) + 1        # nodes needed, per row
    inside = np.arange(w.shape[1])[None, :] < count[:, None]
    chosen = np.where(inside, order, -1)
    first = np.where(inside, order, w.shape[1]).min(axis=1)
    last = chosen.max(axis=1)
    rows = np.arange(w.shape[0])
    return grid[rows, first], grid[rows, last]


def _quantile(grid: np.ndarray, cdf: np.ndarray, q: float) -> np.ndarray:
    out = np.empty(grid.shape[0])
    for i in range(grid.shape[0]):
        out[i] = np.interp(q, cdf[i], grid[i])
    return out


def make_posterior(law: ReleaseSumNoise, dimension: int, bounds: tuple[Any, Any] | None = None,
                   **kwargs: Any) -> GaussianPosterior | GridPosterior:
    """Conjugate normal posterior for Gaussian noise, grid posterior otherwise."""
    if law.noise == "gaussian":
        return GaussianPosterior(law, dimension)
    if bounds is None:
        raise ParameterError(f"{law.noise} noise needs the prior box (block_bounds) of the "
                             f"model for its grid posterior")
    return GridPosterior(law, bounds[0], bounds[1], **kwargs)
