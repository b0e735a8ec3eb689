"""Comparison accountants: simple, advanced, RDP and Gaussian DP (f-DP) composition.

These are for comparison with the PLD accountant of :mod:`privacy.accounting`.  Simple,
advanced and RDP composition are rigorous upper bounds (looser than the PLD).  The mu-GDP
central-limit approximation for *subsampled* Gaussians is **not** an upper bound (it can under-
report epsilon for finite N); it is labelled ``approximate`` everywhere.

References
----------
Seed eqs. (2.28) simple composition, (2.29) advanced composition, (2.34)-(2.35) RDP.
J. Dong, A. Roth, W. Su, "Gaussian differential privacy", JRSS-B 2022: Cor. 2.13 (mu-GDP to
(eps, delta)), Cor. 3.3 (composition), Thm 3.5 / Cor. 5.4 (CLT for subsampled Gaussian,
``mu = q sqrt(N (e^{1/nu^2} - 1))``).  I. Mironov, "Renyi differential privacy", CSF 2017;
dp_accounting.rdp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import optimize, special

from privacy.errors import AccountingError
from privacy.mechanisms import NeighboringRelation
from privacy.validation import check_in_interval, check_integer, check_positive, check_probability

__all__ = [
    "simple_composition",
    "advanced_composition",
    "rdp_epsilon_gaussian",
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


def rdp_epsilon_gaussian(sigma: float, *, delta: float, steps: int, sampling_rate: float = 1.0,
                         sensitivity: float = 1.0,
                         neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE
                         ) -> float:
    """RDP upper bound on epsilon for N Poisson-subsampled Gaussian releases (dp_accounting.rdp).

    Examples
    --------
    >>> 1.0 < rdp_epsilon_gaussian(1.0, delta=1e-5, steps=1000, sampling_rate=0.01) < 3.0
    True
    """
    sigma = check_positive("sigma", sigma)
    delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    steps = check_integer("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    sensitivity = check_positive("sensitivity", sensitivity)
    rel = (rdp_privacy_accountant.NeighborRel.REPLACE_ONE
           if neighboring is NeighboringRelation.REPLACE_ONE
           else rdp_privacy_accountant.NeighborRel.ADD_OR_REMOVE_ONE)
    if rel is rdp_privacy_accountant.NeighborRel.REPLACE_ONE and q < 1.0:
        raise AccountingError("dp_accounting's RDP accountant does not support Poisson "
                              "subsampling under REPLACE_ONE")
    event = dp_event.GaussianDpEvent(noise_multiplier=sigma / sensitivity)
    if q < 1.0:
        event = dp_event.PoissonSampledDpEvent(sampling_probability=q, event=event)
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=rel)
    accountant.compose(dp_event.SelfComposedDpEvent(event=event, count=steps))
    return float(accountant.get_epsilon(delta))


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
    first = special.ndtr(-epsilon / mu + mu / 2.0)
    second = math.exp(epsilon + special.log_ndtr(-epsilon / mu - mu / 2.0))
    return float(min(1.0, max(0.0, first - second)))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon with ``gdp_delta(mu, epsilon) <= delta`` (rounded up)."""
    mu = check_positive("mu", mu)
    delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(mu, hi) > delta:
        hi *= 2.0
    root = optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-13)
    while gdp_delta(mu, root) > delta:
        root = root * (1 + 1e-12) + 1e-15
    return root
