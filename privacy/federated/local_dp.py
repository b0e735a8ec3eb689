"""Local differential privacy of a client's releases: the noise, its accountant and calibration.

A federated client privatizes each message it sends (a FedInfer data block, a gradient-method
update) by clipping its data to declared bounds and adding noise.  :class:`LocalDP` describes one
such *release*: the noise law (Gaussian, Laplace or SaS), its scale, the release's sensitivity in
the norm that matches the noise (l2 for Gaussian, l1 for Laplace and SaS) and its dimension.  It
adds the noise through the :mod:`privacy.mechanisms` objects and is a view of the one
accountant: the client's *composed* epsilon after ``N`` releases is
:class:`privacy.accountant.Accountant`'s answer for ``N`` compositions of the release's event
(:meth:`LocalDP.to_dp_event`), never a hand-written formula:

* Gaussian (any dimension: rotation invariance), scalar Laplace and scalar SaS: the PLD
  composition (Gaussian without subsampling: exact closed form).
* Vector Laplace and vector SaS releases: the optimal pure-DP composition of the release's
  certified pure-DP epsilon (``SaSMechanism(dimension=m).epsilon`` for SaS), which the PLD
  accountant does not cover.  (A Laplace vector release with l1-sensitivity D is also
  dominated by the scalar pair with shift D, checked numerically in the tests, but the
  accountant does not rely on it.)

The privacy unit is stated by ``unit`` (``"record"``: one data point of the client's data set,
added or removed).  Client sampling by the server gives no amplification here: the server knows
whom it asked.

References
----------
Seed Ch. 2 (composition 2.28, PLDs 2.36-2.40), Ch. 3 (SaS mechanism), Ch. 8 (per-update
matching of Figs. 8.3-8.8).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from _toolbox.errors import AccountingError, ParameterError
from _toolbox.validation import check_in_interval, check_integer, check_positive
from privacy.accountant import Accountant, Guarantee
from privacy.federated.noise import NOISE_KINDS, check_noise_kind
from privacy.federated.validation import noise_allowance
from privacy.mechanisms import GaussianMechanism, LaplaceMechanism, SaSMechanism

__all__ = ["LocalDP", "NOISES"]

NOISES = NOISE_KINDS   # the old name of privacy.federated.noise.NOISE_KINDS
_UNITS = ("record", "client")
#: Release counts at which the fast per-round bound is evaluated: every count up to 64, then a
#: geometric grid (ratio 1.04); a count in between reports the bound at the next grid point.
_EXACT_UP_TO = 64
_GRID_RATIO = 1.04
_FAST_DISCRETIZATION = 1e-3


def _grid_point(releases: int) -> int:
    if releases <= _EXACT_UP_TO:
        return releases
    steps = math.ceil(math.log(releases / _EXACT_UP_TO) / math.log(_GRID_RATIO) - 1e-12)
    point = math.ceil(_EXACT_UP_TO * _GRID_RATIO ** steps)
    return max(point, releases)


@dataclass(frozen=True)
class LocalDP:
    """One client release: clip bound -> sensitivity, noise law and scale, and its accountant.

    Parameters
    ----------
    noise : {"gaussian", "laplace", "sas"}
    scale : float
        Gaussian ``sigma``, Laplace ``b`` or SaS ``gamma`` (> 0).
    sensitivity : float
        Largest change of one release when one privacy unit is added or removed, in the norm of
        the noise (l2 for Gaussian, l1 for Laplace and SaS).
    dimension : int, default 1
        Number of coordinates of one release.
    alpha : float, default 1.5
        SaS stability index in (0, 2) (``noise="sas"`` only).
    delta : float, default 1e-5
        The delta at which composed epsilons are reported.
    budget : float, optional
        Composed-epsilon budget: a client whose next release would exceed it abstains.
    unit : {"record", "client"}, default "record"
        The privacy unit the sensitivity was derived for.

    Examples
    --------
    >>> dp = LocalDP.per_update("gaussian", epsilon=0.5, delta=1e-4, sensitivity=1.0)
    >>> round(dp.scale, 2), round(dp.epsilon(1), 3)
    (5.9, 0.5)
    >>> dp.epsilon(100) > 10 * dp.epsilon(1) ** 0.5   # repeated releases compose
    True
    """

    noise: str
    scale: float
    sensitivity: float
    dimension: int = 1
    alpha: float = 1.5
    delta: float = 1e-5
    budget: float | None = None
    unit: str = "record"

    def __post_init__(self) -> None:
        check_noise_kind(self.noise)
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "dimension", check_integer("dimension", self.dimension,
                                                           minimum=1))
        alpha = check_in_interval("alpha", self.alpha, 0.0, 2.0, low_open=True, high_open=True)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "delta", check_in_interval("delta", self.delta, 0.0, 1.0,
                                                            high_open=True))
        if self.budget is not None:
            object.__setattr__(self, "budget", check_positive("budget", self.budget))
        if self.unit not in _UNITS:
            raise ParameterError(f"unit must be one of {_UNITS}; got {self.unit!r}")

    # ---------------------------------------------------------------- noise
    @property
    def mechanism(self) -> GaussianMechanism | LaplaceMechanism | SaSMechanism:
        """The :mod:`privacy.mechanisms` object describing one release."""
        return _mechanism(self.noise, self.scale, self.sensitivity, self.dimension, self.alpha)

    def randomize(self, value: Any, rng: np.random.Generator) -> np.ndarray:
        """``value`` (``dimension`` entries, any shape) plus one release's noise."""
        array = np.asarray(value, dtype=float)
        if array.size != self.dimension:
            raise ParameterError(f"value has {array.size} entries; this release was declared "
                                 f"with dimension={self.dimension}")
        noisy = self.mechanism.randomize(array.ravel(), rng=rng)
        return np.asarray(noisy, dtype=float).reshape(array.shape)

    def noise_allowance(self, false_alarm: float = 1e-12) -> tuple[float, float]:
        """How far one release's noise reaches: ``(per coordinate, l2)``, each exceeded with
        probability at most ``false_alarm``.

        The coordinate allowance is the noise's tail bound at ``false_alarm / (2 dimension)``
        (a union bound over coordinates and signs); the l2 allowance is ``sqrt(dimension)``
        times it, and for Gaussian noise also at most ``sigma (sqrt(d) + sqrt(2 ln(1 /
        false_alarm)))`` (Gaussian concentration of the norm).  The server widens a client's
        declared clipping bound by these (:class:`privacy.federated.validation.ReplyBound`), so
        an honest reply is rejected with probability at most ``false_alarm``.

        Examples
        --------
        >>> coordinate, l2 = LocalDP("gaussian", 1.0, 1.0, dimension=100).noise_allowance()
        >>> 7.0 < coordinate < 9.0 and 10.0 < l2 < 18.0
        True
        """
        false_alarm = check_in_interval("false_alarm", false_alarm, 0.0, 0.5, low_open=True)
        return _noise_allowance(self.noise, self.scale, self.dimension, self.alpha, false_alarm)

    # ---------------------------------------------------------------- accounting
    def to_dp_event(self) -> Any:
        """The ``DpEvent`` of one release (:meth:`privacy.mechanisms.Mechanism.to_dp_event`)."""
        return self.mechanism.to_dp_event()

    def guarantee(self, releases: int) -> Guarantee:
        """The accountant's guarantee (at ``delta``, for one ``unit``) after ``releases``.

        Examples
        --------
        >>> print(LocalDP("laplace", 2.0, 1.0).guarantee(3))
        (1.5, 1e-05)-DP for one record added or removed (3 releases; upper bound by pld)
        """
        releases = check_integer("releases", releases, minimum=0)
        return Accountant(unit=self.unit).compose(self.to_dp_event(), releases).guarantee(
            delta=self.delta)

    def epsilon(self, releases: int) -> float:
        """Composed epsilon (upper bound, at ``delta``) after ``releases`` releases."""
        releases = check_integer("releases", releases, minimum=0)
        if releases == 0:
            return 0.0
        return _composed(self.noise, self.scale, self.sensitivity, self.dimension, self.alpha,
                         self.delta, releases, None)

    def epsilon_bound(self, releases: int) -> float:
        """A fast upper bound on :meth:`epsilon` for per-round reports.

        Exact release counts up to 64, then the composed bound at the next point of a 4 %
        geometric grid (epsilon grows with the count, so it bounds every count below), with a
        PLD grid of 1e-3 (pessimistic like the default 1e-4, slightly looser).
        """
        releases = check_integer("releases", releases, minimum=0)
        if releases == 0:
            return 0.0
        return _composed(self.noise, self.scale, self.sensitivity, self.dimension, self.alpha,
                         self.delta, _grid_point(releases), _FAST_DISCRETIZATION)

    def allows(self, releases_done: int, more: int = 1) -> bool:
        """Whether ``more`` releases fit in the budget after ``releases_done`` (no budget: True)."""
        if self.budget is None:
            return True
        return self.epsilon(releases_done + more) <= self.budget

    # ---------------------------------------------------------------- calibration
    @classmethod
    def per_update(cls, noise: str, *, epsilon: float, delta: float, sensitivity: float,
                   releases: int = 1, dimension: int = 1, alpha: float = 1.5,
                   budget: float | None = None, unit: str = "record") -> LocalDP:
        """Smallest noise such that ``releases`` releases (one update) compose to ``epsilon``.

        The seed's matching: every update is ``(epsilon, delta)``-DP (Figs. 8.3-8.8).
        """
        return cls.calibrate(noise, epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                             releases=releases, dimension=dimension, alpha=alpha,
                             budget=budget, unit=unit)

    @classmethod
    def calibrate(cls, noise: str, *, epsilon: float, delta: float, sensitivity: float,
                  releases: int, dimension: int = 1, alpha: float = 1.5,
                  budget: float | None = None, unit: str = "record") -> LocalDP:
        """Smallest scale (relative 1e-3, rounded up) with ``epsilon(releases) <= epsilon``.

        The search uses the accountant with a 1e-3 loss grid, whose pessimistic value bounds
        the default grid's, so the returned release meets the target under :meth:`epsilon`.

        Use ``releases`` = releases per update for per-update matching and = total releases of
        the run for an equal total budget.

        Raises
        ------
        ParameterError
            Bad arguments.
        """
        target = check_positive("epsilon", epsilon)
        releases = check_integer("releases", releases, minimum=1)
        sensitivity = check_positive("sensitivity", sensitivity)
        template = cls(noise, 1.0, sensitivity, dimension, alpha, delta, budget, unit)

        def composed(scale: float) -> float:
            # the coarser PLD grid is pessimistic too (it bounds the default grid's value)
            return _composed(noise, scale, sensitivity, template.dimension, template.alpha,
                             template.delta, releases, _FAST_DISCRETIZATION)
        scale = _smallest_scale(composed, target, sensitivity, 1e-3)
        return cls(noise, scale, sensitivity, dimension, alpha, delta, budget, unit)

    def replace_scale(self, scale: float) -> LocalDP:
        """The same release with another noise scale."""
        return LocalDP(self.noise, scale, self.sensitivity, self.dimension, self.alpha,
                       self.delta, self.budget, self.unit)

    def to_config(self) -> dict[str, Any]:
        """Flat config (for runtimes that rebuild the algorithm in another process)."""
        config = {"dp_noise": self.noise, "dp_scale": self.scale,
                  "dp_sensitivity": self.sensitivity, "dp_dimension": self.dimension,
                  "dp_alpha": self.alpha, "dp_delta": self.delta, "dp_unit": self.unit}
        if self.budget is not None:
            config["dp_budget"] = self.budget
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LocalDP | None:
        """Inverse of :meth:`to_config` (``None`` when the config holds no ``dp_noise``)."""
        if "dp_noise" not in config:
            return None
        return cls(config["dp_noise"], config["dp_scale"], config["dp_sensitivity"],
                   config["dp_dimension"], config["dp_alpha"], config["dp_delta"],
                   config.get("dp_budget"), config["dp_unit"])


def _smallest_scale(composed, target: float, start: float, rtol: float) -> float:
    """Smallest scale (within ``rtol``, rounded up) with ``composed(scale) <= target``.

    ``composed`` decreases with the scale; the bracket always keeps ``composed(hi) <= target``.
    """
    lo = hi = start
    while composed(hi) > target:
        lo, hi = hi, 2.0 * hi
        if hi > 1e12 * start:
            raise AccountingError(f"no noise scale up to {hi:g} reaches epsilon <= {target}")
    if lo == hi:
        lo = hi / 2.0
        while composed(lo) <= target:
            hi, lo = lo, lo / 2.0
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if composed(mid) <= target else (mid, hi)
    return hi


def _mechanism(noise: str, scale: float, sensitivity: float, dimension: int, alpha: float
               ) -> GaussianMechanism | LaplaceMechanism | SaSMechanism:
    """One release of ``dimension`` coordinates (one query, one epsilon)."""
    if noise == "sas":
        return SaSMechanism(alpha=alpha, scale=scale, sensitivity=sensitivity,
                            dimension=dimension)
    cls, name = (GaussianMechanism, "sigma") if noise == "gaussian" else (LaplaceMechanism,
                                                                         "scale")
    # Laplace / Gaussian describe a vector release by its norm sensitivity alone where they have
    # no ``dimension`` field; where they have one, it declares the query's length
    extra = ({"dimension": dimension} if "dimension" in {f.name for f in dataclasses.fields(cls)}
             else {})
    return cls(**{name: scale}, sensitivity=sensitivity, **extra)


def _composed(noise: str, scale: float, sensitivity: float, dimension: int, alpha: float,
              delta: float, releases: int, discretization: float | None) -> float:
    # the privacy loss depends on scale / sensitivity only (seed eq. 3.30 for SaS; immediate
    # for Laplace and Gaussian), so clients with different sensitivities share cache entries
    return _composed_normalized(noise, scale / sensitivity, dimension, alpha, delta, releases,
                                discretization)


@functools.lru_cache(maxsize=16384)
def _composed_normalized(noise: str, ratio: float, dimension: int, alpha: float, delta: float,
                         releases: int, discretization: float | None) -> float:
    event = _mechanism(noise, ratio, 1.0, dimension, alpha).to_dp_event()
    return Accountant(discretization=discretization).compose(event, releases).epsilon(delta)


@functools.lru_cache(maxsize=64)
def _noise_allowance(noise: str, scale: float, dimension: int, alpha: float,
                     false_alarm: float) -> tuple[float, float]:
    coordinate = noise_allowance(_mechanism(noise, scale, 1.0, dimension, alpha).noise,
                                 dimension, false_alarm)
    l2 = math.sqrt(dimension) * coordinate
    if noise == "gaussian":
        l2 = min(l2, scale * (math.sqrt(dimension) + math.sqrt(2 * math.log(1 / false_alarm))))
    return coordinate, l2
