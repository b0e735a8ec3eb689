"""Calibration: search a noise parameter against the (upper-bounding) accountant.

The returned parameter always meets the target according to :func:`privacy.accounting.epsilon`:
the search (:func:`privacy.curves.smallest_satisfying`) returns a value from the feasible side
of the bracket.

References
----------
Seed Sec. 4 (Fig. 4.6: epsilon after N subsampled compositions vs scale).
"""

from __future__ import annotations

import functools

from _toolbox.errors import ParameterError
from _toolbox.logs import quiet_logger
from _toolbox.validation import check_in_interval, check_integer, check_positive, check_probability
from privacy import accounting
from privacy.curves import smallest_satisfying
from privacy.mechanisms import GaussianMechanism, NeighboringRelation, SaSMechanism
from privacy.stable import check_alpha

__all__ = ["calibrate_scale", "calibrate_gaussian_sigma"]


def _check_target(target_epsilon: float, delta: float, steps: int, sampling_rate: float,
                  sensitivity: float, rtol: float, neighboring: NeighboringRelation
                  ) -> tuple[float, float, int, float, float, float, NeighboringRelation]:
    # (all checked before the remembered searches: their keys must be hashable and exact)
    if not isinstance(neighboring, NeighboringRelation):
        raise ParameterError(f"neighboring must be a NeighboringRelation; got {neighboring!r}")
    return (check_positive("target_epsilon", target_epsilon),
            check_in_interval("delta", delta, 0.0, 1.0, high_open=True),
            check_integer("steps", steps, minimum=1),
            check_probability("sampling_rate", sampling_rate, allow_zero=False),
            check_positive("sensitivity", sensitivity),
            check_in_interval("rtol", rtol, 0.0, 0.5, low_open=True), neighboring)


def calibrate_scale(target_epsilon: float, *, delta: float, steps: int,
                    sampling_rate: float = 1.0, alpha: float = 2.0, sensitivity: float = 1.0,
                    neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                    rtol: float = 1e-3, discretization: float | None = None,
                    dimension: int = 1) -> float:
    """Smallest SaS scale (within relative ``rtol``, rounded up) meeting ``target_epsilon``.

    Parameters
    ----------
    target_epsilon : float
        Target composed epsilon ``> 0``.
    delta : float
        Target delta in ``[0, 1)``; 0 asks for pure DP (needs ``alpha < 2``).
    steps : int
        Number of composed releases.
    sampling_rate : float, default 1.0
        Poisson sampling probability.
    alpha : float, default 2.0
        SaS stability index in ``[0.1, 2]`` (``privacy.stable.MIN_ALPHA``; 2 = Gaussian with
        ``sigma = sqrt(2) scale``).
    sensitivity : float, default 1.0
        l1-sensitivity of one release.
    neighboring : NeighboringRelation
    rtol : float, default 1e-3
        Relative accuracy of the returned scale.
    discretization : float, optional
        PLD grid of the accountant.
    dimension : int, default 1
        Query dimension of one release.

    Returns
    -------
    float
        Scale ``gamma`` with ``accounting.epsilon(SaSMechanism(alpha, gamma, sensitivity,
        dimension), ...) <= target_epsilon``.

    Raises
    ------
    ParameterError
        Bad arguments, or ``delta = 0`` with ``alpha = 2`` (a Gaussian has no pure DP).
    AccountingError
        No scale up to ``1e12 * sensitivity`` meets the target.

    Notes
    -----
    Answers are remembered per question (every argument, after its check): calibrating the
    same noise again, e.g. for each client of a federation, returns the same scale at once.

    Examples
    --------
    >>> from privacy.calibration import calibrate_scale
    >>> gamma = calibrate_scale(1.0, delta=1e-5, steps=10, alpha=1.0)
    >>> 7.5 < gamma < 7.7
    True
    """
    target, delta, steps, q, sensitivity, rtol, neighboring = _check_target(
        target_epsilon, delta, steps, sampling_rate, sensitivity, rtol, neighboring)
    alpha = check_alpha(alpha)
    dimension = check_integer("dimension", dimension, minimum=1)
    if delta == 0.0 and alpha == 2.0:
        raise ParameterError("delta=0 asks for pure DP, which alpha=2 (Gaussian noise) never "
                             "gives at any scale; use delta > 0 or alpha < 2")
    if discretization is not None:
        discretization = check_positive("discretization", discretization)
    return _sas_scale(target, delta, steps, q, alpha, sensitivity, neighboring, rtol,
                      discretization, dimension)


@functools.lru_cache(maxsize=128)
def _sas_scale(target: float, delta: float, steps: int, q: float, alpha: float,
               sensitivity: float, neighboring: NeighboringRelation, rtol: float,
               discretization: float | None, dimension: int) -> float:
    """The search of :func:`calibrate_scale` on checked arguments, remembered per question
    (every argument is in the key): each evaluation composes a PLD (seconds at small ``q``),
    and studies calibrate the same noise again (per client, per law, per table row)."""

    def evaluate(scale: float) -> float:
        mech = SaSMechanism(alpha=alpha, scale=scale, sensitivity=sensitivity,
                            dimension=dimension)
        return accounting.epsilon(mech, delta=delta, steps=steps, sampling_rate=q,
                                  neighboring=neighboring, discretization=discretization)
    return smallest_satisfying(evaluate, target, start=sensitivity, rtol=rtol, what="scale")


def calibrate_gaussian_sigma(target_epsilon: float, *, delta: float, steps: int,
                             sampling_rate: float = 1.0, sensitivity: float = 1.0,
                             neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                             rtol: float = 1e-3) -> float:
    """Smallest Gaussian sigma (within ``rtol``, rounded up) meeting ``target_epsilon``.

    Poisson-subsampled releases at large epsilons (a Renyi-DP calibrated sigma below a tenth
    of ``sensitivity``: typically epsilon above 100) get that Renyi-DP sigma instead, once the
    PLD accountant confirms its epsilon is within the target: larger than the smallest (at
    most about twice, measured), found in seconds where the PLD search takes minutes.  Either
    way :func:`privacy.accounting.epsilon` of the result is at most ``target_epsilon``.

    Raises
    ------
    ParameterError
        Bad arguments, or ``delta = 0`` (a Gaussian has no pure DP).

    Examples
    --------
    >>> from privacy.calibration import calibrate_gaussian_sigma
    >>> 1.3 < calibrate_gaussian_sigma(1.0, delta=1e-5, steps=1000, sampling_rate=0.01) < 1.5
    True
    """
    target, delta, steps, q, sensitivity, rtol, neighboring = _check_target(
        target_epsilon, delta, steps, sampling_rate, sensitivity, rtol, neighboring)
    if delta == 0.0:
        raise ParameterError("delta must be > 0 for a Gaussian (it has no pure DP); got 0")
    return _gaussian_sigma(target, delta, steps, q, sensitivity, neighboring, rtol)


#: Below this ``sigma / sensitivity`` a subsampled Gaussian's PLD spans so many losses that one
#: evaluation takes 10-20 s (measured, 15 steps at q = 0.02: 0.7 s at 1, 6 s at 0.2, 10-18 s
#: from 0.1 to 5e-4), and a search of a dozen of them minutes (trial 13: > 200 s at epsilon
#: 1e6); there the Renyi-DP calibration, a fraction of a second, is kept once the PLD confirms
#: it (the epsilon such noise protects is beyond 100 anyway).
_PLD_SEARCH_BELOW = 0.1


def _rdp_sigma(target: float, delta: float, steps: int, q: float, sensitivity: float,
               neighboring: NeighboringRelation, rtol: float) -> float | None:
    """Smallest sigma (within ``rtol``) whose Renyi-DP epsilon meets ``target``, when that
    sigma is below ``_PLD_SEARCH_BELOW * sensitivity`` (else None: the PLD search is kept,
    and one evaluation at that bound decides it, as RDP's epsilon falls with sigma): the
    accountant's own ``"rdp"`` bound, an upper bound on epsilon computed in a fraction of a
    second (None where it does not apply: subsampling under REPLACE_ONE)."""
    from privacy.accountant import _Leaf, _rdp

    def evaluate(sigma: float) -> float | None:
        return _rdp({_Leaf("gaussian", q, sigma / sensitivity): steps}, neighboring, delta, None)

    # orders whose series does not converge are left out by dp_accounting (still a bound);
    # its warning for each would flood the console
    with quiet_logger("absl"):
        gate = evaluate(_PLD_SEARCH_BELOW * sensitivity)
        if gate is None or gate > target:
            return None
        return smallest_satisfying(evaluate, target, start=sensitivity, rtol=rtol,
                                   what="sigma")


@functools.lru_cache(maxsize=128)
def _gaussian_sigma(target: float, delta: float, steps: int, q: float, sensitivity: float,
                    neighboring: NeighboringRelation, rtol: float) -> float:
    """The search of :func:`calibrate_gaussian_sigma` on checked arguments, remembered: each
    evaluation composes a PLD (seconds at small ``q``), and callers such as
    :func:`privacy.dpsgd.calibrate_noise` calibrate the same Gaussian for several noise laws.

    A subsampled Gaussian whose Renyi-DP sigma is below ``_PLD_SEARCH_BELOW * sensitivity``
    (large epsilons) keeps that sigma when the PLD accountant confirms it meets the target:
    a PLD search there would take minutes.
    """

    def evaluate(sigma: float) -> float:
        return accounting.epsilon(GaussianMechanism(sigma=sigma, sensitivity=sensitivity),
                                  delta=delta, steps=steps, sampling_rate=q,
                                  neighboring=neighboring)
    if q < 1.0:
        rdp = _rdp_sigma(target, delta, steps, q, sensitivity, neighboring, rtol)
        if rdp is not None and evaluate(rdp) <= target:
            return rdp
    return smallest_satisfying(evaluate, target, start=sensitivity, rtol=rtol, what="sigma")
