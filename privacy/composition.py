"""Composition theorems: simple, advanced, optimal pure-DP, RDP and Gaussian DP (f-DP).

Simple, advanced and RDP composition are rigorous upper bounds, looser than the PLD accountant
of :mod:`privacy.accounting`, which uses two of them where the PLD cannot go: the optimal
composition of pure DP (:func:`pure_dp_epsilon`, exact for the worst epsilon-DP mechanism, any
number of steps) and RDP for very long subsampled Gaussian compositions.  The mu-GDP
central-limit approximation for *subsampled* Gaussians is **not** an upper bound (it can under-
report epsilon for finite N); it is labelled ``approximate`` everywhere.

References
----------
Seed eqs. (2.28) simple composition, (2.29) advanced composition, (2.34)-(2.35) RDP.
J. Dong, A. Roth, W. Su, "Gaussian differential privacy", JRSS-B 2022: Cor. 2.13 (mu-GDP to
(eps, delta)), Cor. 3.3 (composition), Thm 3.5 / Cor. 5.4 (CLT for subsampled Gaussian,
``mu = q sqrt(N (e^{1/nu^2} - 1))``).  I. Mironov, "Renyi differential privacy", CSF 2017;
dp_accounting.rdp.  P. Kairouz, S. Oh, P. Viswanath, "The composition theorem for differential
privacy", ICML 2015 (randomized response is the worst epsilon-DP mechanism, so its N-fold
composition is the optimal composition bound).  B. Balle, G. Barthe, M. Gaboardi, "Privacy
amplification by subsampling", NeurIPS 2018 (``log(1 + q (e^eps - 1))``).  M. Bun, T. Steinke,
"Concentrated differential privacy: simplifications, extensions, and lower bounds", TCC 2016.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant

from _toolbox.errors import AccountingError
from _toolbox.validation import check_in_interval, check_integer, check_positive, check_probability
from privacy.curves import gaussian_delta, gaussian_epsilon, smallest_satisfying
from privacy.mechanisms import GaussianMechanism, NeighboringRelation
from privacy.pld import MIN_RESOLVED_VARIATION, release_variation

__all__ = [
    "simple_composition",
    "advanced_composition",
    "amplified_epsilon",
    "pure_dp_delta",
    "pure_dp_epsilon",
    "rdp_epsilon_gaussian",
    "rdp_delta_gaussian",
    "stable_rdp_gaussians",
    "rdp_accountant",
    "gdp_mu_gaussian",
    "gdp_delta",
    "gdp_epsilon",
    "CompositionResult",
]


@dataclass(frozen=True)
class CompositionResult:
    """An (epsilon, delta) guarantee and whether it is a rigorous upper bound."""

    epsilon: float
    delta: float
    rigorous: bool
    method: str


def simple_composition(epsilon: float, delta: float = 0.0, *, steps: int) -> CompositionResult:
    """``N`` releases of an (eps, delta)-DP mechanism are (N eps, N delta)-DP (seed eq. 2.28).

    Examples
    --------
    >>> simple_composition(0.1, steps=10).epsilon
    1.0
    """
    epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
    delta = check_probability("delta", delta)
    steps = check_integer("steps", steps, minimum=1)
    return CompositionResult(steps * epsilon, min(1.0, steps * delta), True, "simple")


def advanced_composition(epsilon: float, delta: float = 0.0, *, steps: int,
                         delta_slack: float) -> CompositionResult:
    """Advanced composition (seed eq. 2.29, Dwork-Rothblum-Vadhan).

    ``eps' = eps sqrt(2 N ln(1/delta')) + N eps (e^eps - 1)`` with total delta
    ``N delta + delta'``.

    Examples
    --------
    >>> r = advanced_composition(0.01, steps=1000, delta_slack=1e-5)
    >>> round(r.epsilon, 4)
    1.6179
    """
    epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
    delta = check_probability("delta", delta)
    steps = check_integer("steps", steps, minimum=1)
    delta_slack = check_in_interval("delta_slack", delta_slack, 0.0, 1.0, low_open=True,
                                    high_open=True)
    eps = (epsilon * math.sqrt(2.0 * steps * math.log(1.0 / delta_slack))
           + steps * epsilon * math.expm1(epsilon))
    return CompositionResult(eps, min(1.0, steps * delta + delta_slack), True, "advanced")


def rdp_accountant(event: dp_event.DpEvent, neighboring: NeighboringRelation
                   ) -> rdp_privacy_accountant.RdpAccountant:
    """``dp_accounting``'s RDP accountant with ``event`` composed under the relation; under
    REPLACE_ONE the Gaussian and Laplace noise multipliers are halved first (a replacement
    shifts a release by twice the sensitivity, this package's convention, which the RDP
    accountant would otherwise read as the replacement's own shift).

    Raises
    ------
    AccountingError
        ``event`` is not supported by the RDP accountant (e.g. Poisson subsampling under
        REPLACE_ONE).

    Examples
    --------
    >>> from privacy import GaussianMechanism, NeighboringRelation
    >>> acc = rdp_accountant(GaussianMechanism(sigma=2.0).to_dp_event(),
    ...                      NeighboringRelation.ADD_OR_REMOVE)
    >>> bool(2.0 < acc.get_epsilon(1e-5) < 3.0)
    True
    """
    rel = (rdp_privacy_accountant.NeighborRel.REPLACE_ONE
           if neighboring is NeighboringRelation.REPLACE_ONE
           else rdp_privacy_accountant.NeighborRel.ADD_OR_REMOVE_ONE)
    if neighboring is NeighboringRelation.REPLACE_ONE:
        event = _replacement_event(event)
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=rel)
    if not accountant.supports(event):
        raise AccountingError(f"dp_accounting's RDP accountant does not support {event} under "
                              f"{neighboring.name} (Poisson subsampling under REPLACE_ONE is "
                              f"not supported)")
    return accountant.compose(event)


def _replacement_event(event: dp_event.DpEvent) -> dp_event.DpEvent:
    """``event`` under REPLACE_ONE in this package's convention: a sensitivity bounds one
    record's addition or removal, so a replacement shifts the release by twice it (as the PLD
    accountant reads it), while dp_accounting's RDP reads a Gaussian's or Laplace's noise
    multiplier as that of the replacement itself: the multipliers are halved (a review found
    epsilon 8.08 for 17.86, and 1.4e6 for 5.0e6 at 1e7 steps).  Other noise events are refused
    rather than guessed.

    Examples
    --------
    >>> _replacement_event(dp_event.GaussianDpEvent(2.0)).noise_multiplier
    1.0
    """
    if isinstance(event, (dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent)):
        return type(event)(event.noise_multiplier / 2.0)
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return dp_event.SelfComposedDpEvent(_replacement_event(event.event), event.count)
    if isinstance(event, dp_event.ComposedDpEvent):
        return dp_event.ComposedDpEvent([_replacement_event(e) for e in event.events])
    if isinstance(event, (dp_event.NoOpDpEvent, dp_event.PoissonSampledDpEvent)):
        return event        # (Poisson subsampling under REPLACE_ONE is refused below)
    raise AccountingError(f"{event} under REPLACE_ONE: the RDP route converts only Gaussian and "
                          f"Laplace noise (a shift of twice the sensitivity); use the PLD "
                          f"accountant (privacy.accountant)")


def _rdp_accountant(sigma: float, steps: int, sampling_rate: float, sensitivity: float,
                    neighboring: NeighboringRelation) -> rdp_privacy_accountant.RdpAccountant:
    sigma = check_positive("sigma", sigma)
    steps = check_integer("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    sensitivity = check_positive("sensitivity", sensitivity)
    event = GaussianMechanism(sigma, sensitivity).to_dp_event()
    if q < 1.0:
        event = dp_event.PoissonSampledDpEvent(sampling_probability=q, event=event)
    return rdp_accountant(dp_event.SelfComposedDpEvent(event=event, count=steps), neighboring)


#: Integer Renyi orders of :func:`stable_rdp_gaussians`.
_ORDERS = np.arange(2, 257)


def _log_a(q: float, inv: float) -> np.ndarray:
    """``log A_a`` of the Poisson-subsampled Gaussian (rate ``q < 1``, ``inv = (D / sigma)^2``)
    at every order of ``_ORDERS``, as ``log1p`` of a sum of positive terms."""
    from scipy import special

    out = np.empty(_ORDERS.size)
    for i, a in enumerate(_ORDERS):
        k = np.arange(2, a + 1)
        x = 0.5 * (k * k - k) * inv
        with np.errstate(over="ignore", divide="ignore"):
            log_expm1 = np.where(x > 1.0, x + np.log1p(-np.exp(-x)), np.log(np.expm1(x)))
        terms = (special.gammaln(a + 1) - special.gammaln(k + 1) - special.gammaln(a - k + 1)
                 + (a - k) * math.log1p(-q) + k * math.log(q) + log_expm1)
        out[i] = np.logaddexp(0.0, special.logsumexp(terms))
    return out


def stable_rdp_gaussians(leaves: list[tuple[float, float, int]], target_delta: float | None,
                         target_epsilon: float | None) -> float:
    """Renyi DP of Poisson-subsampled Gaussians at integer orders, stable for tiny rates.

    ``A_a = sum_k C(a, k) (1 - q)^(a - k) q^k e^((k^2 - k) / (2 z^2))`` (Mironov, Talwar and
    Zhang 2019) is ``1 + sum_{k >= 2} C(a, k) (1 - q)^(a - k) q^k expm1((k^2 - k) / (2 z^2))``:
    every term positive, summed in log space, and ``log A_a = log1p(...)``.  Converted by
    ``epsilon = min_a rdp(a) + log(1 / delta) / (a - 1)`` (Mironov 2017, Prop. 3).  Each
    leaf is ``(noise multiplier sigma / D, rate q, count)``; give exactly one target.

    Examples
    --------
    >>> round(stable_rdp_gaussians([(1.0, 1e-20, 10 ** 40)], 1e-5, None), 3)
    7.174
    """
    rdp = np.zeros(_ORDERS.size)
    for multiplier, q, count in leaves:
        ratio = 1.0 / multiplier
        inv = ratio * ratio     # 1 / z^2 (inf beyond the floats, not OverflowError)
        if q == 1.0:
            rdp += count * _ORDERS * (0.5 * inv)
        else:
            rdp += count * _log_a(q, inv) / (_ORDERS - 1)
    if target_delta is not None:
        if target_delta == 0.0:
            return math.inf
        return float(np.min(rdp + math.log(1.0 / target_delta) / (_ORDERS - 1)))
    with np.errstate(over="ignore"):
        return float(min(1.0, np.min(np.exp((_ORDERS - 1) * (rdp - target_epsilon)))))


def _stable_rdp_answer(sigma: float, steps: int, sampling_rate: float, sensitivity: float,
                       neighboring: NeighboringRelation, delta: float | None,
                       epsilon: float | None) -> float | None:
    """:func:`stable_rdp_gaussians` where dp_accounting's RDP loses a tiny rate (else None)."""
    sigma = check_positive("sigma", sigma)
    steps = check_integer("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    sensitivity = check_positive("sensitivity", sensitivity)
    gaussian = GaussianMechanism(sigma, sensitivity)
    if (q == 1.0 or neighboring is not NeighboringRelation.ADD_OR_REMOVE
            or release_variation(gaussian.noise, sensitivity, q) >= MIN_RESOLVED_VARIATION):
        return None
    return stable_rdp_gaussians([(sigma / sensitivity, q, steps)], delta, epsilon)


def rdp_epsilon_gaussian(sigma: float, *, delta: float, steps: int, sampling_rate: float = 1.0,
                         sensitivity: float = 1.0,
                         neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE
                         ) -> float:
    """RDP upper bound on epsilon for N Poisson-subsampled Gaussian releases (dp_accounting.rdp).

    Raises
    ------
    AccountingError
        Poisson subsampling under REPLACE_ONE (not supported by dp_accounting's RDP).

    Examples
    --------
    >>> 1.0 < rdp_epsilon_gaussian(1.0, delta=1e-5, steps=1000, sampling_rate=0.01) < 3.0
    True
    """
    delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    stable = _stable_rdp_answer(sigma, steps, sampling_rate, sensitivity, neighboring,
                                delta, None)
    if stable is not None:
        return stable
    accountant = _rdp_accountant(sigma, steps, sampling_rate, sensitivity, neighboring)
    return float(accountant.get_epsilon(delta))


def rdp_delta_gaussian(sigma: float, *, epsilon: float, steps: int, sampling_rate: float = 1.0,
                       sensitivity: float = 1.0,
                       neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE
                       ) -> float:
    """RDP upper bound on delta for N Poisson-subsampled Gaussian releases (dp_accounting.rdp).

    Examples
    --------
    >>> 0.0 < rdp_delta_gaussian(1.0, epsilon=2.0, steps=1000, sampling_rate=0.01) < 1e-3
    True
    """
    epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
    stable = _stable_rdp_answer(sigma, steps, sampling_rate, sensitivity, neighboring,
                                None, epsilon)
    if stable is not None:
        return stable
    accountant = _rdp_accountant(sigma, steps, sampling_rate, sensitivity, neighboring)
    return float(min(1.0, accountant.get_delta(epsilon)))


def amplified_epsilon(epsilon: float, sampling_rate: float) -> float:
    """Pure-DP epsilon after Poisson subsampling: ``log(1 + q (e^eps - 1))`` (add/remove).

    Examples
    --------
    >>> round(amplified_epsilon(1.0, 0.01), 6)
    0.017037
    """
    epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    if q == 1.0 or epsilon == math.inf:
        return epsilon
    value = float(np.logaddexp(epsilon + math.log(q), math.log1p(-q)))
    return min(epsilon, value * (1.0 + 1e-15))


#: Largest number of steps for which the randomized-response tail is computed exactly with
#: ``scipy.special.betainc``: measured against the normal limit, its relative error stays below
#: 1e-6 up to 1e9 trials and grows beyond (2e-5 at 1e12, wrong sign at 1e18).  Longer
#: compositions use the zCDP bound of the same releases (:func:`_zcdp_delta`).
_BETAINC_MAX_STEPS = 10 ** 9


def _zcdp_delta(epsilon1: float, steps: int, epsilon: float) -> float:
    """delta(epsilon) of ``steps`` epsilon1-DP releases through zero-concentrated DP.

    An epsilon1-DP release is ``epsilon1**2 / 2``-zCDP and zCDP adds up, so the composition is
    ``rho = steps epsilon1**2 / 2``-zCDP, which is ``(epsilon, exp(-(epsilon - rho)**2 /
    (4 rho)))``-DP for ``epsilon > rho`` (Bun and Steinke 2016, Props. 1.3 and 3.3): an upper
    bound on the optimal composition, closed form for any number of steps.
    """
    rho = 0.5 * steps * epsilon1 * epsilon1
    if epsilon <= rho:
        return 1.0
    return min(1.0, math.exp(-(epsilon - rho) ** 2 / (4.0 * rho)))


def _zcdp_epsilon(epsilon1: float, steps: int, delta: float) -> float:
    """Inverse of :func:`_zcdp_delta`: ``rho + 2 sqrt(rho log(1/delta))`` (rounded up)."""
    rho = 0.5 * steps * epsilon1 * epsilon1
    return (rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))) * (1.0 + 1e-12)


def _first_count_above(epsilon1: float, steps: int, epsilon: float) -> int:
    """Smallest count ``k`` whose randomized-response loss ``epsilon1 (2k - N)`` exceeds eps.

    Exact rational arithmetic: a float ``(N + eps/eps1) / 2`` is off by up to ``N * 1e-16``
    counts for large ``N``, which a step-by-step correction cannot afford.
    """
    from fractions import Fraction

    ratio = Fraction(epsilon) / Fraction(epsilon1)
    return int(math.floor((steps + ratio) / 2)) + 1


def pure_dp_delta(epsilon1: float, *, steps: int, epsilon: float) -> float:
    """Optimal delta(epsilon) of ``steps`` compositions of an ``epsilon1``-DP mechanism.

    The N-fold randomized response with ``epsilon1`` dominates every such composition
    (Kairouz et al. 2015); its privacy loss is ``epsilon1 (2K - N)`` with ``K ~ Bin(N, p)``,
    ``p = e^eps1 / (1 + e^eps1)``, so
    ``delta = P(K >= k0) - e^eps P'(K >= k0)`` with ``K' ~ Bin(N, 1 - p)`` and ``k0`` the first
    count whose loss exceeds ``epsilon`` (regularized incomplete beta functions).  A relative
    margin of 1e-10 covers their rounding.  Beyond ``10**9`` steps, where the incomplete beta
    function loses its accuracy, the zCDP bound of the same composition is returned (an upper
    bound, closed form; Bun and Steinke 2016).

    Examples
    --------
    >>> pure_dp_delta(0.5, steps=4, epsilon=2.0) == 0.0      # 4 * 0.5 is the largest loss
    True
    >>> round(pure_dp_delta(1.0, steps=1, epsilon=0.0), 6)     # (e - 1) / (e + 1)
    0.462117
    """
    from scipy import special

    epsilon1 = check_in_interval("epsilon1", epsilon1, 0.0, math.inf, high_open=True)
    steps = check_integer("steps", steps, minimum=1)
    epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
    if epsilon >= steps * epsilon1:
        return 0.0
    if steps > _BETAINC_MAX_STEPS:
        return _zcdp_delta(epsilon1, steps, epsilon)
    k0 = _first_count_above(epsilon1, steps, epsilon)
    p = 1.0 / (1.0 + math.exp(-epsilon1))
    q = math.exp(-epsilon1) * p            # 1 - p = e^-eps1 p, without cancellation or overflow
    # P(K >= k0) = I_p(k0, N - k0 + 1)
    upper = float(special.betainc(k0, steps - k0 + 1, p))
    lower = float(special.betainc(k0, steps - k0 + 1, q))
    # e^eps P'(K >= k0) <= P(K >= k0): capping its log there only avoids an overflow
    second = (math.exp(min(epsilon + math.log(lower), math.log(upper)))
              if lower > 0 and upper > 0 else 0.0)
    return float(min(1.0, max(0.0, upper - second) + 1e-10 * upper))


def pure_dp_epsilon(epsilon1: float, *, steps: int, delta: float) -> float:
    """Optimal composed epsilon for ``delta`` of ``steps`` ``epsilon1``-DP releases.

    Smallest epsilon (rounded up) with :func:`pure_dp_delta` ``<= delta``; ``steps *
    epsilon1`` for ``delta = 0``.  Any number of steps (beyond ``10**9`` through the closed
    zCDP bound, see :func:`pure_dp_delta`).

    Examples
    --------
    >>> pure_dp_epsilon(0.1, steps=10, delta=0.0)
    1.0
    >>> pure_dp_epsilon(0.01, steps=10_000, delta=1e-5) < 10_000 * 0.01
    True
    """
    epsilon1 = check_in_interval("epsilon1", epsilon1, 0.0, math.inf)
    steps = check_integer("steps", steps, minimum=1)
    delta = check_in_interval("delta", delta, 0.0, 1.0, high_open=True)
    if epsilon1 == 0.0:
        return 0.0
    total = steps * epsilon1
    if delta == 0.0 or math.isinf(epsilon1):
        return total
    if steps > _BETAINC_MAX_STEPS:
        return min(_zcdp_epsilon(epsilon1, steps, delta), total)
    if pure_dp_delta(epsilon1, steps=steps, epsilon=0.0) <= delta:
        return 0.0
    value = smallest_satisfying(lambda e: pure_dp_delta(epsilon1, steps=steps, epsilon=e), delta,
                                start=epsilon1 * math.sqrt(steps), rtol=1e-10, what="epsilon")
    return min(value, total)


def gdp_mu_gaussian(sigma: float, *, steps: int, sampling_rate: float = 1.0,
                    sensitivity: float = 1.0) -> tuple[float, bool]:
    """mu of Gaussian DP for N (subsampled) Gaussian releases; returns ``(mu, exact)``.

    Without subsampling, N Gaussian releases are exactly ``sqrt(N) D / sigma``-GDP.  With
    ``q < 1`` the CLT value ``q sqrt(N (e^{(D/sigma)^2} - 1))`` is an *approximation* (Dong, Roth,
    Su Cor. 5.4): ``exact`` is then False and the value is not an upper bound.
    """
    sigma = check_positive("sigma", sigma)
    steps = check_integer("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    sensitivity = check_positive("sensitivity", sensitivity)
    ratio = sensitivity / sigma
    if q == 1.0:
        return math.sqrt(steps) * ratio, True
    return q * math.sqrt(steps * math.expm1(ratio ** 2)), False


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta(eps) of mu-GDP: ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (DRS Cor 2.13)."""
    mu = check_positive("mu", mu)
    epsilon = check_in_interval("epsilon", epsilon, 0.0, math.inf)
    return gaussian_delta(mu, epsilon)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon with ``gdp_delta(mu, epsilon) <= delta`` (rounded up)."""
    mu = check_positive("mu", mu)
    delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return gaussian_epsilon(mu, delta)
