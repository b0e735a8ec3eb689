"""Privacy accounting: N-fold composition with Poisson subsampling, always as an upper bound.

:func:`epsilon` and :func:`delta` answer for ``steps`` Poisson-subsampled releases of one
mechanism; :func:`guarantee` returns the same number together with the method that produced it.
Every answer is the smallest of the rigorous upper bounds that apply:

* ``"pld"``: ``dp_accounting``'s privacy loss distribution (PLD) composition of the pessimistic
  single-release PLD (:mod:`privacy.pld`: native for Gaussian and Laplace, built from the noise
  law for SaS).  Used for scalar mechanisms and for Gaussians of any dimension.
* ``"gaussian-exact"``: without subsampling, N Gaussian releases are exactly a Gaussian with
  ``mu = sqrt(N) D / sigma`` (closed form, any N).
* ``"pure-dp"``: the optimal composition of the mechanism's pure-DP epsilon (amplified by
  subsampling under ADD_OR_REMOVE), through the N-fold randomized response, which dominates
  every epsilon-DP mechanism (:func:`privacy.composition.pure_dp_epsilon`, any N).  Always
  computed for Laplace and SaS with alpha < 2; the only bound for their vector (``dimension >
  1``) releases, whose PLD is not built.
* ``"rdp"``: Renyi DP (``dp_accounting.rdp``) for subsampled Gaussians when the composed PLD
  would not fit in memory (about ``2**24`` grid points; e.g. ``steps = 10**9``).

A batch of ``K`` releases (``randomize`` on shape ``(dimension, K)``) is ``K`` steps:
``steps = mechanism.releases(shape)``.

References
----------
Seed: composition (2.28), privacy curves (2.36)-(2.38), subsampled PRVs (2.39)-(2.40).
See :mod:`privacy.pld` and :mod:`privacy.composition` for the constructions.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from _toolbox.errors import AccountingError, ParameterError
from _toolbox.validation import check_in_interval, check_integer, check_positive, check_probability
from privacy import composition
from privacy.curves import gaussian_delta, gaussian_epsilon
from privacy.mechanisms import Mechanism, NeighboringRelation
from privacy.pld import gaussian_equivalent, pessimistic_pld, privacy_loss_distribution

__all__ = ["epsilon", "delta", "guarantee", "Guarantee", "privacy_loss_distribution",
           "pessimistic_pld"]

_TAIL_MASS_TRUNCATION = 1e-15
#: Largest composed PLD (grid points of dp_accounting's FFT) the accountant builds.
_MAX_COMPOSED_POINTS = 2 ** 24


@dataclass(frozen=True)
class Guarantee:
    """A composed ``(epsilon, delta)`` upper bound and how it was obtained.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee (one of them was the target).
    method : str
        ``"pld"``, ``"gaussian-exact"``, ``"pure-dp"`` or ``"rdp"`` (module docstring).
    steps : int
    sampling_rate : float
    neighboring : NeighboringRelation
    """

    epsilon: float
    delta: float
    method: str
    steps: int
    sampling_rate: float
    neighboring: NeighboringRelation


def _check_common(mechanism: Any, steps: Any, sampling_rate: Any, neighboring: Any
                  ) -> tuple[int, float, NeighboringRelation]:
    if not isinstance(mechanism, Mechanism):
        raise ParameterError(f"mechanism must be a LaplaceMechanism, GaussianMechanism or "
                             f"SaSMechanism; got {type(mechanism).__name__}")
    steps = check_integer("steps", steps, minimum=1)
    sampling_rate = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    if not isinstance(neighboring, NeighboringRelation):
        raise ParameterError(f"neighboring must be a NeighboringRelation; got {neighboring!r}")
    return steps, sampling_rate, neighboring


def _pure_epsilon(mechanism: Mechanism, neighboring: NeighboringRelation) -> float:
    """Pure-DP epsilon of one release under the relation (``inf`` if none)."""
    if neighboring is NeighboringRelation.REPLACE_ONE:
        if math.isinf(mechanism.epsilon):
            return math.inf
        return dataclasses.replace(mechanism, sensitivity=2.0 * mechanism.sensitivity).epsilon
    return mechanism.epsilon


def _composed_points(pld: pld_lib.PrivacyLossDistribution, steps: int) -> int:
    """Grid points of dp_accounting's FFT for ``steps`` self-compositions (its Chernoff bound)."""
    pmfs = [pld._pmf_remove] if pld._symmetric else [pld._pmf_remove, pld._pmf_add]  # noqa: SLF001
    points = 0
    for pmf in pmfs:
        probs = pmf.to_dense_pmf()._probs  # noqa: SLF001 - the array dp_accounting convolves
        lo, hi = pld_common.compute_self_convolve_bounds(probs, steps, _TAIL_MASS_TRUNCATION)
        points = max(points, hi - lo + 1)
    return points


def _candidates(mechanism: Mechanism, steps: int, q: float, neighboring: NeighboringRelation,
                discretization: float | None, generic: bool, *,
                target_delta: float | None = None, target_epsilon: float | None = None
                ) -> list[tuple[float, str]]:
    """All applicable upper bounds (value, method) on epsilon (or delta) for the target."""
    want_epsilon = target_delta is not None
    found: list[tuple[float, str]] = []
    gaussian = gaussian_equivalent(mechanism)
    if gaussian is not None and not generic and q == 1.0:
        shift = 2.0 if neighboring is NeighboringRelation.REPLACE_ONE else 1.0
        mu = math.sqrt(steps) * shift * gaussian.sensitivity / gaussian.sigma
        if want_epsilon:
            value = math.inf if target_delta == 0.0 else gaussian_epsilon(mu, target_delta)
        else:
            value = gaussian_delta(mu, target_epsilon)
        return [(value, "gaussian-exact")]
    pure = _pure_epsilon(mechanism, neighboring)
    if math.isfinite(pure):
        eps1 = (composition.amplified_epsilon(pure, q)
                if neighboring is NeighboringRelation.ADD_OR_REMOVE else pure)
        value = (composition.pure_dp_epsilon(eps1, steps=steps, delta=target_delta)
                 if want_epsilon else
                 composition.pure_dp_delta(eps1, steps=steps, epsilon=target_epsilon))
        found.append((value, "pure-dp"))
        if (target_delta == 0.0) if want_epsilon else (value == 0.0):
            return found  # exact: the largest composed loss
    if mechanism.dimension != 1 and gaussian is None:
        return found  # no PLD for vector Laplace / SaS
    single = privacy_loss_distribution(mechanism, sampling_rate=q, neighboring=neighboring,
                                       discretization=discretization, steps_hint=steps,
                                       generic=generic)
    if steps == 1 or _composed_points(single, steps) <= _MAX_COMPOSED_POINTS:
        composed = (single.self_compose(steps, tail_mass_truncation=_TAIL_MASS_TRUNCATION)
                    if steps > 1 else single)
        value = float(composed.get_epsilon_for_delta(target_delta) if want_epsilon
                      else composed.get_delta_for_epsilon(target_epsilon))
        if math.isnan(value):
            raise AccountingError("dp_accounting returned NaN")
        found.insert(0, (value, "pld"))
    elif gaussian is not None and neighboring is NeighboringRelation.ADD_OR_REMOVE:
        kwargs = dict(steps=steps, sampling_rate=q, sensitivity=gaussian.sensitivity)
        value = (composition.rdp_epsilon_gaussian(gaussian.sigma, delta=target_delta, **kwargs)
                 if want_epsilon else
                 composition.rdp_delta_gaussian(gaussian.sigma, epsilon=target_epsilon,
                                                **kwargs))
        found.append((value, "rdp"))
    if not found:
        raise AccountingError(f"steps={steps} subsampled Gaussian releases under REPLACE_ONE "
                              f"exceed the PLD accountant's memory (> {_MAX_COMPOSED_POINTS} "
                              f"grid points) and dp_accounting's RDP does not support this "
                              f"relation; use fewer steps or ADD_OR_REMOVE")
    return found


def guarantee(mechanism: Mechanism, *, delta: float | None = None,
              epsilon: float | None = None, steps: int = 1, sampling_rate: float = 1.0,
              neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
              discretization: float | None = None, generic: bool = False) -> Guarantee:
    """Composed guarantee for ``delta`` (or for ``epsilon``), with the method that gave it.

    Exactly one of ``delta`` / ``epsilon`` is the target; the other field of the result is the
    upper bound, the smallest over the methods that apply (module docstring).  Other parameters
    as in :func:`epsilon`.

    Raises
    ------
    ParameterError
        Bad arguments, or not exactly one of ``delta`` and ``epsilon``.
    AccountingError
        No method can bound this case.

    Examples
    --------
    >>> from privacy import LaplaceMechanism
    >>> from privacy.accounting import guarantee
    >>> g = guarantee(LaplaceMechanism(scale=1.0, dimension=3), delta=0.0, steps=10)
    >>> g.epsilon, g.method
    (10.0, 'pure-dp')
    """
    steps, q, neighboring = _check_common(mechanism, steps, sampling_rate, neighboring)
    if (delta is None) == (epsilon is None):
        raise ParameterError(f"give exactly one of delta and epsilon; got delta={delta!r}, "
                             f"epsilon={epsilon!r}")
    if discretization is not None:
        discretization = check_positive("discretization", discretization)
    if delta is not None:
        delta = check_in_interval("delta", delta, 0.0, 1.0, high_open=True)
        found = _candidates(mechanism, steps, q, neighboring, discretization, generic,
                            target_delta=delta)
        value, method = min(found, key=lambda item: item[0])
        return Guarantee(max(0.0, value), delta, method, steps, q, neighboring)
    epsilon = check_positive("epsilon", epsilon)
    found = _candidates(mechanism, steps, q, neighboring, discretization, generic,
                        target_epsilon=epsilon)
    value, method = min(found, key=lambda item: item[0])
    return Guarantee(epsilon, min(1.0, max(0.0, value)), method, steps, q, neighboring)


def epsilon(mechanism: Mechanism, *, delta: float, steps: int = 1, sampling_rate: float = 1.0,
            neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
            discretization: float | None = None, generic: bool = False) -> float:
    """Upper bound on epsilon after ``steps`` Poisson-subsampled releases, for ``delta``.

    Parameters
    ----------
    mechanism : LaplaceMechanism, GaussianMechanism or SaSMechanism
        Description of one release (one query of its ``dimension``).
    delta : float
        Target delta in ``[0, 1)`` (0: pure DP, ``inf`` for Gaussians).
    steps : int, default 1
        Number of composed releases ``N >= 1``; a batch ``(dimension, K)`` counts ``K``.
    sampling_rate : float, default 1.0
        Poisson sampling probability ``q`` in ``(0, 1]``.
    neighboring : NeighboringRelation, default ADD_OR_REMOVE
    discretization : float, optional
        PLD loss grid (default 1e-4, coarser for extreme loss ranges); smaller is tighter and
        slower.
    generic : bool, default False
        Force the generic pessimistic PLD also for Laplace/Gaussian (cross-checks).

    Returns
    -------
    float
        epsilon >= the true value (may be ``inf``, never NaN or negative): the smallest of the
        bounds listed in the module docstring; :func:`guarantee` also says which one.

    Raises
    ------
    ParameterError
        Bad arguments.
    AccountingError
        The accountant cannot bound this case.

    Examples
    --------
    >>> from privacy import GaussianMechanism
    >>> from privacy.accounting import epsilon
    >>> eps = epsilon(GaussianMechanism(sigma=1.0), delta=1e-5, steps=1000, sampling_rate=0.01)
    >>> 1.8 < eps < 1.9
    True

    References
    ----------
    Seed Sec. 2.6.4, 2.7 (eqs. 2.36-2.40).
    """
    return guarantee(mechanism, delta=delta, steps=steps, sampling_rate=sampling_rate,
                     neighboring=neighboring, discretization=discretization,
                     generic=generic).epsilon


def delta(mechanism: Mechanism, *, epsilon: float, steps: int = 1, sampling_rate: float = 1.0,
          neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
          discretization: float | None = None, generic: bool = False) -> float:
    """Upper bound on delta after ``steps`` Poisson-subsampled releases, for ``epsilon``.

    Same parameters as :func:`epsilon` with ``epsilon > 0`` instead of ``delta``; returns a value
    in ``[0, 1]`` (exactly 0 when ``epsilon`` exceeds the composed pure-DP bound).

    Examples
    --------
    >>> from privacy import SaSMechanism
    >>> from privacy.accounting import delta
    >>> delta(SaSMechanism(alpha=1.0, scale=1.0), epsilon=1.0) == 0.0
    True
    """
    return guarantee(mechanism, epsilon=epsilon, steps=steps, sampling_rate=sampling_rate,
                     neighboring=neighboring, discretization=discretization,
                     generic=generic).delta
