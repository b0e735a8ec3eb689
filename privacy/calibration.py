"""Calibration: search a noise parameter against the (upper-bounding) PLD accountant.

The returned scale always satisfies the target according to the accountant: the bisection keeps a
bracket ``[lo, hi]`` with ``epsilon(hi) <= target`` and returns ``hi``.

References
----------
Seed Sec. 4 (Fig. 4.6: epsilon after N subsampled compositions vs scale).
"""

from __future__ import annotations

import math

from privacy import accounting
from privacy.errors import AccountingError
from privacy.mechanisms import GaussianMechanism, NeighboringRelation, SaSMechanism
from privacy.validation import check_in_interval, check_integer, check_positive, check_probability

__all__ = ["calibrate_scale", "calibrate_gaussian_sigma"]


def _bisect_log(evaluate, target: float, start: float, rtol: float, max_evals: int = 80
                ) -> float:
    """Smallest x (to relative ``rtol``) with evaluate(x) <= target; evaluate decreasing in x."""
    lo, hi = start, start
    value = evaluate(hi)
    evals = 1
    while value > target:
        lo, hi = hi, hi * 2.0
        value = evaluate(hi)
        evals += 1
        if hi > 1e12 * start:
            raise AccountingError(f"no scale up to {hi:g} reaches epsilon <= {target}")
    if lo == hi:
        lo = hi / 2.0
        while evaluate(lo) <= target:
            hi, lo = lo, lo / 2.0
            evals += 1
            if lo < 1e-12 * start:
                return hi
    while hi / lo - 1.0 > rtol and evals < max_evals:
        mid = math.sqrt(lo * hi)
        if evaluate(mid) <= target:
            hi = mid
        else:
            lo = mid
        evals += 1
    return hi


def calibrate_scale(target_epsilon: float, *, delta: float, steps: int,
                    sampling_rate: float = 1.0, alpha: float = 2.0, sensitivity: float = 1.0,
                    neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                    rtol: float = 1e-3, discretization: float | None = None) -> float:
    """Smallest SaS scale (within relative ``rtol``, rounded up) meeting ``target_epsilon``.

    Parameters
    ----------
    target_epsilon : float
        Target composed epsilon ``> 0``.
    delta : float
        Target delta in ``[0, 1)``.
    steps : int
        Number of composed releases.
    sampling_rate : float, default 1.0
        Poisson sampling probability.
    alpha : float, default 2.0
        SaS stability index in ``(0, 2]`` (2 = Gaussian with ``sigma = sqrt(2) scale``).
    sensitivity : float, default 1.0
    neighboring : NeighboringRelation
    rtol : float, default 1e-3
        Relative width of the final bisection bracket.

    Returns
    -------
    float
        Scale ``gamma`` with ``accounting.epsilon(SaSMechanism(alpha, gamma, sensitivity), ...)
        <= target_epsilon``.

    Examples
    --------
    >>> from privacy.calibration import calibrate_scale
    >>> gamma = calibrate_scale(1.0, delta=1e-5, steps=10, alpha=1.0)
    >>> 7.5 < gamma < 7.7
    True
    """
    target = check_positive("target_epsilon", target_epsilon)
    delta = check_in_interval("delta", delta, 0.0, 1.0, high_open=True)
    steps = check_integer("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    alpha = check_in_interval("alpha", alpha, 0.0, 2.0, low_open=True)
    sensitivity = check_positive("sensitivity", sensitivity)
    rtol = check_positive("rtol", rtol)

    def evaluate(scale: float) -> float:
        return accounting.epsilon(SaSMechanism(alpha=alpha, scale=scale, sensitivity=sensitivity),
                                  delta=delta, steps=steps, sampling_rate=q,
                                  neighboring=neighboring, discretization=discretization)
    return _bisect_log(evaluate, target, sensitivity, rtol)


def calibrate_gaussian_sigma(target_epsilon: float, *, delta: float, steps: int,
                             sampling_rate: float = 1.0, sensitivity: float = 1.0,
                             neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                             rtol: float = 1e-3) -> float:
    """Smallest Gaussian sigma (within ``rtol``, rounded up) meeting ``target_epsilon``.

    Examples
    --------
    >>> from privacy.calibration import calibrate_gaussian_sigma
    >>> 0.9 < calibrate_gaussian_sigma(2.0, delta=1e-5, steps=1000, sampling_rate=0.01) < 1.0
    True
    """
    target = check_positive("target_epsilon", target_epsilon)
    delta = check_in_interval("delta", delta, 0.0, 1.0, high_open=True)
    steps = check_integer("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    sensitivity = check_positive("sensitivity", sensitivity)

    def evaluate(sigma: float) -> float:
        return accounting.epsilon(GaussianMechanism(sigma=sigma, sensitivity=sensitivity),
                                  delta=delta, steps=steps, sampling_rate=q,
                                  neighboring=neighboring)
    return _bisect_log(evaluate, target, sensitivity, rtol)
