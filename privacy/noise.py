"""Noise laws: the centred, symmetric noise a mechanism adds to each query coordinate.

A :class:`NoiseLaw` is the public interface between the mechanisms and the accountant: the
accountant builds a pessimistic privacy loss distribution from ``logpdf``, ``cdf``/``sf`` cell
masses (:meth:`NoiseLaw.cell_masses`, accurate in both tails) and ``tail_bound``; a
mechanism draws its noise with :meth:`NoiseLaw.sample`.  Every mechanism exposes its law as
``mechanism.noise`` (one coordinate; coordinates are i.i.d.).

References
----------
Seed eqs. (3.1) Laplace, (3.2) Gaussian, (3.7)-(3.8) symmetric alpha-stable.
"""

from __future__ import annotations

import abc
import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import as_generator, check_in_interval, check_positive, check_probability
from privacy import stable

__all__ = ["NoiseLaw", "LaplaceNoise", "GaussianNoise", "SaSNoise"]


def _shape(shape: Any) -> tuple[int, ...]:
    """A sample shape: an integer or a tuple of integers >= 0."""
    dims = (shape,) if isinstance(shape, numbers.Integral) else shape
    try:
        ok = all(isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 0
                 for n in dims)
    except TypeError:
        ok = False
    if not ok:
        raise DimensionError(f"shape must be an integer or a tuple of integers >= 0; "
                             f"got {shape!r}")
    return tuple(int(n) for n in dims)


def _finite_draws(draws: np.ndarray, law: NoiseLaw) -> np.ndarray:
    """The draws, refused when a scale near the float limit made some of them overflow."""
    if not np.all(np.isfinite(draws)):
        raise NonFiniteError(f"{law!r} drew non-finite noise (its scale is too close to the "
                             f"float limit 1.8e308)")
    return draws


class NoiseLaw(abc.ABC):
    """Centred symmetric noise law of one coordinate.

    Attributes
    ----------
    scale : float
        Width parameter (Laplace ``b``, Gaussian ``sigma``, SaS ``gamma``).
    light_tailed : bool
        True when the tails decay faster than any power (Laplace, Gaussian, SaS with
        alpha = 2): the privacy loss of a shift is then unbounded or linear in the tails, and the
        accountant truncates at :meth:`tail_bound`.  False for SaS with alpha < 2, whose loss
        tends to 0 in the tails.
    """

    scale: float
    light_tailed: bool

    @abc.abstractmethod
    def logpdf(self, x: Any) -> np.ndarray:
        """Log density at ``x`` (array_like, any shape; finite everywhere on the real line)."""

    @abc.abstractmethod
    def cdf(self, x: Any) -> np.ndarray:
        """``P(noise <= x)``, with full relative accuracy in the lower tail."""

    @abc.abstractmethod
    def sf(self, x: Any) -> np.ndarray:
        """``P(noise > x)``, with full relative accuracy in the upper tail."""

    @abc.abstractmethod
    def sample(self, shape: tuple[int, ...], rng: np.random.Generator | int | None = None
               ) -> np.ndarray:
        """I.i.d. draws of the given shape (explicit ``rng``: Generator, seed or None)."""

    def tail_bound(self, mass: float) -> float:
        """Smallest ``t >= 0`` (rounded up) with ``P(noise > t) <= mass``, ``mass`` in (0, 1/2]."""
        from privacy.curves import smallest_satisfying

        mass = check_probability("mass", mass, allow_zero=False)
        return smallest_satisfying(lambda t: float(self.sf(t)), mass, start=self.scale,
                                   rtol=1e-9, limit=1e300, what="tail bound")

    def cell_masses(self, edges: Any) -> np.ndarray:
        """Noise mass of each cell ``[edges[i], edges[i+1]]`` (edges increasing, +-inf allowed).

        Differences of ``cdf`` left of 0, of ``sf`` right of 0 and ``1 - cdf(lo) - sf(hi)``
        across 0, so cells far out in either tail keep their relative accuracy; ``cdf`` and
        ``sf`` are evaluated once per edge.  Negative rounding residues are clipped to 0.

        Parameters
        ----------
        edges : array_like, shape (n + 1,)

        Returns
        -------
        ndarray, shape (n,)
        """
        edges = stable.as_points("edges", edges)
        if edges.ndim != 1 or edges.size < 2:
            raise DimensionError(f"edges must be a 1-d array of at least 2 increasing values; "
                                 f"got shape {edges.shape}")
        if np.any(np.diff(edges) < 0):
            raise ParameterError("edges must be non-decreasing")
        cdf, sf = self.cdf(edges), self.sf(edges)
        lo, hi = edges[:-1], edges[1:]
        mass = np.where(hi <= 0, cdf[1:] - cdf[:-1],
                        np.where(lo >= 0, sf[:-1] - sf[1:], 1.0 - cdf[:-1] - sf[1:]))
        return np.maximum(mass, 0.0)


@dataclass(frozen=True)
class LaplaceNoise(NoiseLaw):
    """Laplace law with density ``exp(-|x|/b) / (2b)`` (seed eq. 3.1).

    Examples
    --------
    >>> law = LaplaceNoise(scale=2.0)
    >>> float(law.sf(0.0)), law.cell_masses([-2.0, 2.0]).round(6)
    (0.5, array([0.632121]))
    """

    scale: float
    light_tailed = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))

    def logpdf(self, x: Any) -> np.ndarray:
        with np.errstate(over="ignore"):
            return -np.abs(stable.as_points("x", x)) / self.scale - math.log(2.0 * self.scale)

    def sf(self, x: Any) -> np.ndarray:
        with np.errstate(over="ignore"):
            z = stable.as_points("x", x) / self.scale
            return np.where(z >= 0, 0.5 * np.exp(-np.abs(z)), 1.0 - 0.5 * np.exp(-np.abs(z)))

    def cdf(self, x: Any) -> np.ndarray:
        return self.sf(-stable.as_points("x", x))

    def tail_bound(self, mass: float) -> float:
        mass = check_in_interval("mass", mass, 0.0, 0.5, low_open=True)
        return self.scale * math.log(0.5 / mass) * (1.0 + 1e-15)

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator | int | None = None
               ) -> np.ndarray:
        return _finite_draws(as_generator(rng).laplace(0.0, self.scale, size=_shape(shape)),
                             self)


@dataclass(frozen=True)
class GaussianNoise(NoiseLaw):
    """Normal law ``N(0, sigma^2)`` (seed eq. 3.2); ``scale`` is ``sigma``.

    Examples
    --------
    >>> law = GaussianNoise(scale=1.0)
    >>> law.cell_masses([-1.0, 1.0, 2.0]).round(6)
    array([0.682689, 0.135905])
    """

    scale: float
    light_tailed = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))

    def logpdf(self, x: Any) -> np.ndarray:
        with np.errstate(over="ignore"):
            z = stable.as_points("x", x) / self.scale
            return -0.5 * z * z - math.log(self.scale * math.sqrt(2.0 * math.pi))

    def cdf(self, x: Any) -> np.ndarray:
        from scipy import special
        with np.errstate(over="ignore"):
            return special.ndtr(stable.as_points("x", x) / self.scale)

    def sf(self, x: Any) -> np.ndarray:
        from scipy import special
        with np.errstate(over="ignore"):
            return special.ndtr(-stable.as_points("x", x) / self.scale)

    def tail_bound(self, mass: float) -> float:
        from scipy import special
        mass = check_in_interval("mass", mass, 0.0, 0.5, low_open=True)
        return -self.scale * float(special.ndtri(mass)) * (1.0 + 1e-12)

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator | int | None = None
               ) -> np.ndarray:
        return _finite_draws(as_generator(rng).normal(0.0, self.scale, size=_shape(shape)),
                             self)


@dataclass(frozen=True)
class SaSNoise(NoiseLaw):
    """Symmetric alpha-stable law, characteristic function ``exp(-|scale t|^alpha)`` (eq. 3.7).

    ``alpha = 2`` is ``N(0, 2 scale^2)``, ``alpha = 1`` Cauchy; numerics from
    :mod:`privacy.stable` (closed forms at 1 and 2, tables and Bergstrom tails otherwise).

    Examples
    --------
    >>> law = SaSNoise(alpha=1.0, scale=1.0)
    >>> law.cell_masses([-1.0, 1.0]).round(6)   # Cauchy: 2 arctan(1) / pi
    array([0.5])
    """

    alpha: float
    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", stable.check_alpha(self.alpha))
        object.__setattr__(self, "scale", check_positive("scale", self.scale))

    @property
    def light_tailed(self) -> bool:  # type: ignore[override]
        return self.alpha == 2.0

    def logpdf(self, x: Any) -> np.ndarray:
        return stable.sas_logpdf(x, self.alpha, self.scale)

    def cdf(self, x: Any) -> np.ndarray:
        return stable.sas_cdf(x, self.alpha, self.scale)

    def sf(self, x: Any) -> np.ndarray:
        return stable.sas_sf(x, self.alpha, self.scale)

    def tail_bound(self, mass: float) -> float:
        if self.alpha == 2.0:
            return GaussianNoise(math.sqrt(2.0) * self.scale).tail_bound(mass)
        return super().tail_bound(mass)

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator | int | None = None
               ) -> np.ndarray:
        return _finite_draws(np.asarray(stable.sas_sample(self.alpha, self.scale,
                                                          size=_shape(shape), rng=rng),
                                        dtype=float), self)
