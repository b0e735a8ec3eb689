"""Additive noise mechanisms: Laplace, Gaussian and symmetric alpha-stable (SaS).

A mechanism adds noise to a query answer (``randomize``, explicit ``rng``) and *describes itself*:
every mechanism is an immutable (frozen) dataclass holding its noise parameters, the query's
sensitivity and dimension, and describes its release as a ``DpEvent``
(:meth:`Mechanism.to_dp_event`, :mod:`privacy.events`), which the one accountant
(:class:`privacy.accountant.Accountant`) composes.  The accountant reads the noise through
the public :class:`~privacy.noise.NoiseLaw` of ``mechanism.noise``.

Conventions (shared by every mechanism):

* **Releases.**  A mechanism releases one query of its declared ``dimension`` per call, with one
  epsilon.  ``randomize`` accepts exactly these layouts (time on the last axis, as everywhere in
  the toolbox): a scalar (``dimension == 1`` only) or shape ``(dimension,)`` is one release;
  shape ``(dimension, K)`` is a batch of ``K`` releases, one per column, which the accountant
  must be told about (``mechanism.to_dp_event(shape)``, or ``steps =
  mechanism.releases(shape)``).  Every other shape raises
  ``DimensionError``, so swapping Laplace for SaS never changes what a call means.
* ``sensitivity`` is the largest change of the whole ``dimension``-vector between neighbouring
  data sets, in the norm that matches the noise (``sensitivity_norm``: l1 for Laplace and SaS,
  l2 for Gaussian).  Under :attr:`NeighboringRelation.REPLACE_ONE` it is, as in
  ``dp_accounting``, the bound on one record's contribution, so replacing a record moves the
  query by up to ``2 * sensitivity``.
* The privacy loss of a scalar outcome ``x`` is ``log p(x - sensitivity) - log p(x)`` (seed eq.
  2.30 with the numerator shifted by the sensitivity, eq. 3.29).

References
----------
Seed thesis (``000_9f1dc78092037d5e``): Laplace (3.1), Gaussian (3.2), SaS density (3.7)-(3.8),
vector loss (3.14)-(3.16), pure-DP epsilon of SaS (3.29), scale/sensitivity invariance (3.30),
Cauchy closed form (3.57), expected distortion (3.85), Table 3.1, privacy curve (2.36), (4.1).
B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy: analytical
calibration and optimal denoising", ICML 2018.
"""

from __future__ import annotations

import abc
import enum
import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from _toolbox.errors import AccountingError, DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import (
    check_finite_array,
    check_in_interval,
    check_integer,
    check_positive,
)
from privacy import stable
from privacy.curves import gaussian_delta, gaussian_epsilon, smallest_satisfying
from privacy.noise import GaussianNoise, LaplaceNoise, NoiseLaw, SaSNoise
from privacy.pure_epsilon import (
    VectorEpsilon,
    _epsilon_of_ratio,
    check_epsilon_reachable,
    maximize_loss,
    sas_pure_epsilon,
    sas_vector_epsilon,
)

__all__ = [
    "NeighboringRelation",
    "Mechanism",
    "LaplaceMechanism",
    "GaussianMechanism",
    "SaSMechanism",
    "VectorEpsilon",
    "sas_pure_epsilon",
]


class NeighboringRelation(enum.Enum):
    """Neighbouring relation between data sets (one enum for the whole package).

    ``ADD_OR_REMOVE`` (default): the data sets differ by adding or removing one record.
    ``REPLACE_ONE``: one record is replaced by another (the query moves by up to twice the
    sensitivity, as in ``dp_accounting``).
    """

    ADD_OR_REMOVE = "add_or_remove"
    REPLACE_ONE = "replace_one"


class Mechanism(abc.ABC):
    """Base of the additive mechanisms: the release rule, ``randomize`` and ``releases``.

    Subclasses are frozen dataclasses with fields ``sensitivity`` and ``dimension`` and provide
    ``noise`` (the :class:`~privacy.noise.NoiseLaw` of one coordinate) and ``epsilon`` (pure-DP
    epsilon of one release, ``inf`` if there is none).
    """

    sensitivity: float
    dimension: int
    #: Norm in which ``sensitivity`` bounds the change of the query vector.
    sensitivity_norm: ClassVar[str]

    @property
    @abc.abstractmethod
    def noise(self) -> NoiseLaw:
        """Noise law of one coordinate (coordinates get i.i.d. noise)."""

    @property
    @abc.abstractmethod
    def epsilon(self) -> float:
        """Pure-DP epsilon of one release (an upper bound; ``inf`` when not pure DP)."""

    def _check_common(self) -> None:
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "dimension", check_integer("dimension", self.dimension,
                                                            minimum=1))

    def releases(self, shape: tuple[int, ...]) -> int:
        """Number of releases that :meth:`randomize` makes for a value of this shape.

        ``()`` (``dimension == 1`` only) and ``(dimension,)``: 1; ``(dimension, K)``: ``K``.
        Pass the result as ``steps`` (times the number of batches) to the accountant.

        Raises
        ------
        DimensionError
            Any other shape.

        Examples
        --------
        >>> from privacy import LaplaceMechanism
        >>> LaplaceMechanism(scale=1.0, dimension=3).releases((3, 50))
        50
        """
        try:
            shape = tuple(int(n) for n in shape)
        except TypeError as exc:
            raise DimensionError(f"shape must be a tuple of integers; got {shape!r}") from exc
        d = self.dimension
        if shape == () and d == 1:
            return 1
        if len(shape) in (1, 2) and shape[0] == d:
            return 1 if len(shape) == 1 else shape[1]
        one = "a scalar, " if d == 1 else ""
        hint = (f"; for one {shape[0]}-dimensional query build the mechanism with "
                f"dimension={shape[0]}" if len(shape) == 1 else "")
        raise DimensionError(
            f"value has shape {shape}; this {type(self).__name__} releases queries of dimension "
            f"{d}: pass {one}shape ({d},) for one release or ({d}, K) for a batch of K releases "
            f"(one per column){hint}")

    @abc.abstractmethod
    def _release_event(self) -> Any:
        """The ``DpEvent`` of one release (see :mod:`privacy.events`)."""

    def to_dp_event(self, shape: tuple[int, ...] | None = None) -> Any:
        """Describe one release, or the releases of a :meth:`randomize` call, as a ``DpEvent``.

        Parameters
        ----------
        shape : tuple of int, optional
            Shape of the value passed to :meth:`randomize`: ``None`` (one release), ``()``,
            ``(dimension,)`` or ``(dimension, K)`` (a batch of ``K`` releases, a
            ``SelfComposedDpEvent`` of ``K`` releases).

        Returns
        -------
        dp_accounting.dp_event.DpEvent
            ``GaussianDpEvent``, ``LaplaceDpEvent`` (scalar Laplace),
            :class:`~privacy.events.VectorLaplaceDpEvent` or :class:`~privacy.events.SaSDpEvent`
            with ``noise_multiplier = noise scale / sensitivity``, which
            :class:`privacy.accountant.Accountant` composes.

        Raises
        ------
        DimensionError
            A shape that :meth:`randomize` refuses.

        Examples
        --------
        >>> from privacy import GaussianMechanism
        >>> GaussianMechanism(sigma=2.0, dimension=3).to_dp_event((3, 10))
        SelfComposedDpEvent(event=GaussianDpEvent(noise_multiplier=2.0), count=10)
        """
        event = self._release_event()
        if shape is None:
            return event
        count = self.releases(shape)
        if count == 1:
            return event
        from dp_accounting import dp_event
        return dp_event.SelfComposedDpEvent(event=event, count=count)

    def randomize(self, value: Any, rng: np.random.Generator | int | None = None
                  ) -> float | np.ndarray:
        """Return ``value`` plus i.i.d. noise: one release, or a batch of releases (columns).

        Parameters
        ----------
        value : float or array_like, shape (), (dimension,) or (dimension, K)
            One query answer, or ``K`` answers as columns (a batch of ``K`` releases, each with
            ``epsilon``; compose them with ``steps = mechanism.releases(shape)``).
        rng : numpy.random.Generator, int or None

        Returns
        -------
        float or ndarray
            Same shape as ``value`` (a float for a scalar).

        Raises
        ------
        ParameterError
            ``value`` is None or not numeric.
        NonFiniteError
            NaN or infinite entries.
        DimensionError
            A shape other than the layouts above.
        """
        if value is None:
            raise ParameterError(f"value is None; expected a real number or an array of shape "
                                 f"({self.dimension},) or ({self.dimension}, K)")
        if isinstance(value, (str, bytes)):
            raise ParameterError(f"value must be a real number or array; got {value!r}")
        array = check_finite_array("value", value)
        self.releases(array.shape)
        with np.errstate(over="ignore"):
            noisy = array + self.noise.sample(array.shape, rng)
        if not np.all(np.isfinite(noisy)):
            raise NonFiniteError(f"value plus noise overflowed the floats (largest |value| "
                                 f"{float(np.max(np.abs(array))):.3g}); the release would be "
                                 f"inf: rescale the query")
        return float(noisy) if array.ndim == 0 else noisy


def _outcomes(x: Any) -> np.ndarray:
    """Outcomes of ``privacy_loss``: finite reals (every mechanism refuses NaN and inf alike)."""
    if isinstance(x, (str, bytes)) or x is None:
        raise ParameterError(f"x must be a real number or array of outcomes; got {x!r}")
    return check_finite_array("x", x)


# ----------------------------------------------------------------------------- Laplace


@dataclass(frozen=True)
class LaplaceMechanism(Mechanism):
    """Laplace mechanism: adds i.i.d. ``Laplace(0, scale)`` noise (seed eq. 3.1).

    Parameters
    ----------
    scale : float
        Laplace scale ``b > 0``.
    sensitivity : float, default 1.0
        l1-sensitivity ``D > 0`` of the ``dimension``-vector query.
    dimension : int, default 1
        Query dimension ``m``: one release is ``m`` numbers (see the module's release rule).

    Attributes
    ----------
    epsilon : float
        Pure-DP epsilon ``D / b`` of one release (any dimension: the l1 shift costs
        ``sum |d_i| / b``).

    Examples
    --------
    >>> from privacy import LaplaceMechanism
    >>> mech = LaplaceMechanism(scale=2.0, sensitivity=1.0, dimension=2)
    >>> mech.epsilon
    0.5
    >>> mech.randomize([1.0, 2.0], rng=0).shape
    (2,)

    References
    ----------
    Seed eq. (3.1); Dwork and Roth (2014), Thm 3.6.
    """

    scale: float
    sensitivity: float = 1.0
    dimension: int = 1
    sensitivity_norm: ClassVar[str] = "l1"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        self._check_common()

    @functools.cached_property
    def noise(self) -> LaplaceNoise:
        """Laplace law of one coordinate."""
        return LaplaceNoise(self.scale)

    @property
    def epsilon(self) -> float:
        """Pure-DP epsilon ``sensitivity / scale``."""
        return self.sensitivity / self.scale

    @property
    def expected_distortion(self) -> float:
        """Mean absolute error per coordinate ``E|Y| = scale`` (seed eq. 3.87)."""
        return self.scale

    def _release_event(self) -> Any:
        if self.dimension == 1:
            from dp_accounting import dp_event
            return dp_event.LaplaceDpEvent(noise_multiplier=self.scale / self.sensitivity)
        from privacy.events import VectorLaplaceDpEvent
        return VectorLaplaceDpEvent(noise_multiplier=self.scale / self.sensitivity,
                                    dimension=self.dimension)

    def privacy_loss(self, x: Any) -> float | np.ndarray:
        """Privacy loss ``log p(x - D) - log p(x)`` of scalar outcome(s) ``x`` (noise coords).

        Raises
        ------
        NonFiniteError
            NaN or infinite ``x`` (as for every mechanism).
        """
        x = _outcomes(x)
        with np.errstate(over="ignore"):   # beyond the floats only for scale < D / 1e308
            out = (np.abs(x) - np.abs(x - self.sensitivity)) / self.scale
        return float(out) if out.ndim == 0 else out


# ----------------------------------------------------------------------------- Gaussian


@dataclass(frozen=True)
class GaussianMechanism(Mechanism):
    """Gaussian mechanism: adds i.i.d. ``N(0, sigma^2)`` noise (seed eq. 3.2).

    Parameters
    ----------
    sigma : float
        Noise standard deviation ``> 0``.
    sensitivity : float, default 1.0
        l2-sensitivity ``D > 0`` of the ``dimension``-vector query.
    dimension : int, default 1
        Query dimension ``m``.  The privacy of one release does not depend on it (the Gaussian
        is rotation invariant: only the l2 length of the shift matters).

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
    dimension: int = 1
    sensitivity_norm: ClassVar[str] = "l2"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        self._check_common()

    @functools.cached_property
    def noise(self) -> GaussianNoise:
        """Normal law of one coordinate."""
        return GaussianNoise(self.sigma)

    @property
    def epsilon(self) -> float:
        """``inf``: the Gaussian mechanism has no pure-DP guarantee (use ``delta > 0``)."""
        return math.inf

    @classmethod
    def from_epsilon_delta(cls, epsilon: float, delta: float, *, sensitivity: float = 1.0,
                           method: str = "analytic", dimension: int = 1) -> GaussianMechanism:
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
            ``"analytic"``: smallest sigma (to relative 1e-12, rounded up) with exact
            ``delta(epsilon) <= delta`` (Balle & Wang 2018), valid for every epsilon.
            ``"classical"``: ``sigma = sqrt(2 ln(1.25/delta)) D / epsilon`` (Dwork & Roth), only
            proven for ``epsilon < 1``; other epsilons raise ``ParameterError``.
        dimension : int, default 1
            Query dimension (does not change sigma).

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
                       sensitivity, dimension)
        if method != "analytic":
            raise ParameterError(f"method must be 'analytic' or 'classical'; got {method!r}")
        sigma = smallest_satisfying(lambda s: gaussian_delta(sensitivity / s, epsilon), delta,
                                    start=sensitivity, rtol=1e-12, what="sigma")
        return cls(sigma, sensitivity, dimension)

    def delta_for_epsilon(self, epsilon: float) -> float:
        """Exact single-release privacy curve ``delta(epsilon)`` (seed eq. 4.1).

        ``delta = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``.
        """
        epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
        return gaussian_delta(self.sensitivity / self.sigma, epsilon)

    def epsilon_for_delta(self, delta: float) -> float:
        """Smallest epsilon with ``delta_for_epsilon(epsilon) <= delta`` (rounded up)."""
        delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
        return gaussian_epsilon(self.sensitivity / self.sigma, delta)

    @property
    def expected_distortion(self) -> float:
        """Mean absolute error per coordinate ``sqrt(2/pi) sigma`` (seed eq. 3.88)."""
        return math.sqrt(2.0 / math.pi) * self.sigma

    def privacy_loss(self, x: Any) -> float | np.ndarray:
        """Privacy loss ``log p(x - D) - log p(x) = (D / sigma) (x - D / 2) / sigma``.

        Evaluated as that product, so no power of sigma over- or underflows; a loss beyond the
        floats is ``+-inf`` (never NaN).

        Raises
        ------
        NonFiniteError
            NaN or infinite ``x`` (as for every mechanism).
        """
        x = _outcomes(x)
        d = self.sensitivity
        centred = x - 0.5 * d
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            out = np.where(centred == 0.0, 0.0, (d / self.sigma) * (centred / self.sigma))
        return float(out) if out.ndim == 0 else out

    def _release_event(self) -> Any:
        # rotation invariance: one release of any dimension is the scalar Gaussian pair
        from dp_accounting import dp_event
        return dp_event.GaussianDpEvent(noise_multiplier=self.sigma / self.sensitivity)


# ----------------------------------------------------------------------------- SaS


@dataclass(frozen=True)
class SaSMechanism(Mechanism):
    """Symmetric alpha-stable mechanism: adds i.i.d. SaS(alpha, scale) noise (seed eq. 3.8).

    Parameters
    ----------
    alpha : float
        Stability index in ``[0.1, 2]`` (``privacy.stable.MIN_ALPHA``); ``alpha = 2`` is
        Gaussian with ``sigma = sqrt(2) scale``
        and ``alpha = 1`` is Cauchy.
    scale : float
        Scale ``gamma > 0`` (characteristic function ``exp(-|gamma t|^alpha)``).
    sensitivity : float, default 1.0
        l1-sensitivity ``D > 0`` of the ``dimension``-vector query.
    dimension : int, default 1
        Query dimension ``m`` (each coordinate gets independent noise).  ``epsilon`` accounts
        for the worst split of the l1 shift over the coordinates.

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
    Seed eqs. (3.7)-(3.8), (3.14)-(3.16), (3.29)-(3.35), (3.57), (3.85); Table 3.1; privacy
    curve (2.36).
    """

    alpha: float
    scale: float
    sensitivity: float = 1.0
    dimension: int = 1
    sensitivity_norm: ClassVar[str] = "l1"

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", stable.check_alpha(self.alpha))
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        self._check_common()

    @functools.cached_property
    def noise(self) -> SaSNoise:
        """SaS law of one coordinate."""
        return SaSNoise(self.alpha, self.scale)

    @property
    def scalar_epsilon(self) -> float:
        """Pure-DP epsilon of one coordinate carrying the whole shift (seed eq. 3.29)."""
        return _epsilon_of_ratio(self.alpha, self.scale / self.sensitivity)

    @property
    def epsilon(self) -> float:
        """Pure-DP epsilon (an upper bound); ``inf`` for ``alpha = 2``.

        For ``dimension == 1`` this is ``max_x log p(x - D) - log p(x)`` (eq. 3.29), maximised by
        a vectorized scan and golden-section search plus an error margin.  For ``dimension > 1``
        it is :meth:`epsilon_vector` ``.upper_bound`` (about 0.1-0.3 s on first use, cached).
        """
        if self.dimension == 1:
            return self.scalar_epsilon
        return self.epsilon_vector(self.dimension).upper_bound

    def epsilon_vector(self, dimension: int, *, grid_points: int = 1500) -> VectorEpsilon:
        """Pure-DP epsilon of an m-dimensional query with l1-sensitivity D (i.i.d. noise).

        See :func:`privacy.pure_epsilon.sas_vector_epsilon` for the certified construction.
        """
        return sas_vector_epsilon(self.alpha, self.scale, self.sensitivity, dimension,
                                  grid_points=grid_points)

    @classmethod
    def from_epsilon(cls, epsilon: float, *, alpha: float, sensitivity: float = 1.0,
                     dimension: int = 1) -> SaSMechanism:
        """Smallest scale (to relative 1e-10, 1e-8 for vectors; rounded up) with epsilon <= target.

        Raises
        ------
        ParameterError
            ``alpha`` outside ``(0, 2)`` (alpha = 2 is not pure DP), bad epsilon/sensitivity,
            or ``epsilon`` below the floor certified at any scale
            (:func:`privacy.pure_epsilon.sas_epsilon_floor`).
        """
        epsilon = check_positive("epsilon", epsilon)
        alpha = stable.check_alpha(alpha, high_open=True)
        sensitivity = check_positive("sensitivity", sensitivity)
        dimension = check_integer("dimension", dimension, minimum=1)
        check_epsilon_reachable(epsilon, alpha, dimension)
        ratio = smallest_satisfying(lambda r: _epsilon_of_ratio(alpha, r), epsilon, rtol=1e-10,
                                    limit=1e300, what="scale / sensitivity")
        if dimension > 1:   # the vector epsilon is larger: search upwards from the scalar scale
            ratio = smallest_satisfying(
                lambda r: sas_vector_epsilon(alpha, r, 1.0, dimension).upper_bound, epsilon,
                start=ratio, rtol=1e-8, limit=1e300, what="scale / sensitivity")
        return cls(alpha=alpha, scale=ratio * sensitivity, sensitivity=sensitivity,
                   dimension=dimension)

    @property
    def expected_distortion(self) -> float:
        """Mean absolute error per coordinate ``E|Y| = 2 gamma Gamma(1 - 1/alpha) / pi`` (3.85).

        ``inf`` for ``alpha <= 1`` (no finite mean).
        """
        return stable.sas_mean_absolute_deviation(self.alpha, self.scale)

    def _release_event(self) -> Any:
        from privacy.events import SaSDpEvent
        return SaSDpEvent(alpha=self.alpha, noise_multiplier=self.scale / self.sensitivity,
                          dimension=self.dimension)

    def privacy_loss(self, x: Any) -> float | np.ndarray:
        """Privacy loss ``log p(x - D) - log p(x)`` of scalar outcome(s) ``x`` (noise coords).

        Raises
        ------
        NonFiniteError
            NaN or infinite ``x`` (as for every mechanism).
        """
        x = _outcomes(x)
        out = np.asarray(self.noise.logpdf(x - self.sensitivity) - self.noise.logpdf(x),
                         dtype=float)
        return float(out) if out.ndim == 0 else out

    def _loss_level_set(self, epsilon: float) -> tuple[float, float]:
        """Interval ``(a, b)`` where the scalar loss exceeds ``epsilon >= 0``.

        The loss is antisymmetric about ``D/2``, positive on ``(D/2, inf)``, rises to its peak
        ``x*`` and decays to 0 (to ``+inf`` linearly for alpha = 2), so ``{loss > eps}`` is an
        interval; each end is the threshold of a monotone piece (``b = inf`` when the loss stays
        above ``eps`` beyond ``1e12`` scales).
        """
        d = self.sensitivity
        if self.alpha == 2.0:
            sigma2 = 2.0 * self.scale ** 2
            return (epsilon * sigma2 + 0.5 * d * d) / d, math.inf
        _, x_star = maximize_loss(lambda x: np.asarray(self.privacy_loss(x)),
                                  np.array([0.5 * d]), np.array([max(self.scale, d)]),
                                  focus=(np.array([d]), np.array([self.scale])))
        x_star = float(x_star[0])

        def loss(t: float) -> float:
            return float(self.privacy_loss(t))
        if loss(x_star) <= epsilon:
            return x_star, x_star
        a = smallest_satisfying(lambda t: -loss(t), -epsilon, start=x_star, rtol=1e-14,
                                what="start of the level set")
        try:
            b = smallest_satisfying(loss, epsilon, start=x_star, rtol=1e-14,
                                    limit=1e12 * max(self.scale, d) / x_star,
                                    what="end of the level set")
        except AccountingError:
            b = math.inf
        return a, b

    def privacy_curve(self, epsilon: float) -> float:
        """Single-release privacy curve ``delta(epsilon)`` (seed eq. 2.36, Fig. 4.1).

        ``delta(eps) = int (p(x - D) - e^eps p(x))_+ dx = P1(A) - e^eps P0(A)`` with
        ``A = {loss > eps} = (a, b)``, computed from tail-accurate cell masses.  Zero for
        ``epsilon >= self.epsilon`` when ``alpha < 2``.

        Raises
        ------
        AccountingError
            ``dimension > 1`` (not implemented).
        """
        epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
        if self.dimension != 1:
            raise AccountingError(f"privacy_curve is implemented for dimension 1 only; got "
                                  f"dimension={self.dimension}")
        if self.alpha < 2.0 and epsilon >= self.scalar_epsilon:
            return 0.0
        a, b = self._loss_level_set(epsilon)
        if b <= a:
            return 0.0
        d = self.sensitivity
        mass1 = float(self.noise.cell_masses([a - d, b - d])[0])
        mass0 = float(self.noise.cell_masses([a, b])[0])
        return float(min(1.0, max(0.0, mass1 - math.exp(epsilon) * mass0)))
