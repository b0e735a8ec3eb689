"""Empirical DP auditing: a statistical lower bound on epsilon from samples of neighbouring outputs.

The hypothesis-testing view of DP (seed ``002`` Sec. 4): if a mechanism ``M`` is
``(epsilon, delta)``-DP then, for neighbours ``D, D'`` and *every* set ``S`` of outputs,

``P[M(D') in S] <= e^epsilon P[M(D) in S] + delta``  and the same with ``D, D'`` exchanged.

So each set ``S`` with estimated probabilities gives ``epsilon >= log((P_a(S) - delta) / P_b(S))``
(``a, b`` the two neighbours in either order).  The audit

1. draws ``n`` outputs under each neighbour and maps them to a real *score* (the privacy loss when
   the densities are known, the canary's loss or a projected gradient for DP-SGD, ...);
2. **selects** the set ``S`` - a half line ``{score > t}`` or ``{score <= t}``, and the order of
   the neighbours - on a first part of the samples (``selection_fraction``), maximising a bound
   that holds simultaneously for all candidates there (so that lucky extreme thresholds with few
   counts are not preferred);
3. **certifies** on the remaining, independent samples: one-sided Clopper-Pearson bounds
   ``P_a(S) >= lower``, ``P_b(S) <= upper``, each at level ``1 - (1 - confidence) / 2``, so both
   hold with probability >= ``confidence`` (union bound), and reports
   ``epsilon_lb = log((lower - delta) / upper)`` (0 if not positive).

Because ``S`` is fixed before the certification samples are looked at, ``P[epsilon_lb > true
epsilon] <= 1 - confidence`` for any mechanism: a lower bound above an accountant's epsilon is
evidence of a bug (or of an over-claim) at that confidence.  The auditor is black-box in the
mechanism: anything that can produce samples of the two neighbouring outputs can be audited
(:func:`audit`).

References
----------
M. Jagielski, J. Ullman, A. Oprea, "Auditing differentially private machine learning: how private
is private SGD?", NeurIPS 2020.  M. Nasr et al., "Adversary instantiation: lower bounds for
differentially private machine learning", IEEE S&P 2021.  C. J. Clopper, E. S. Pearson (1934).
Seed ``002`` Sec. 4 (hypothesis-testing DP, trade-off functions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from _toolbox.errors import DimensionError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_in_interval,
    check_integer,
    check_probability,
)

__all__ = ["AuditResult", "clopper_pearson_lower", "clopper_pearson_upper", "epsilon_lower_bound",
           "audit"]

Sampler = Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit.

    Attributes
    ----------
    epsilon_lower_bound : float
        ``epsilon_lb``: with probability >= ``confidence`` the true epsilon (at ``delta``) is at
        least this.
    confidence : float
    delta : float
    threshold : float
        ``t`` of the selected set.
    region : str
        ``"above"`` (``score > t``) or ``"below"`` (``score <= t``).
    order : str
        ``"alt_over_null"``: the bound used ``P_alt(S) <= e^eps P_null(S) + delta``;
        ``"null_over_alt"``: the neighbours exchanged.
    numerator_lower, denominator_upper : float
        The Clopper-Pearson bounds ``lower`` on ``P_a(S)`` and ``upper`` on ``P_b(S)``.
    certification_samples, selection_samples : int
        Samples per neighbour in each part.
    """

    epsilon_lower_bound: float
    confidence: float
    delta: float
    threshold: float
    region: str
    order: str
    numerator_lower: float
    denominator_upper: float
    certification_samples: int
    selection_samples: int


def clopper_pearson_upper(successes: np.ndarray | int, trials: int, level: float) -> np.ndarray:
    """One-sided exact upper confidence bound on a binomial probability (``1`` when all succeed).

    ``successes`` may be fractional (expected counts during selection).

    Examples
    --------
    >>> from privacy.audit import clopper_pearson_upper
    >>> round(float(clopper_pearson_upper(0, 100, 0.95)), 4)     # 1 - 0.05 ** (1 / 100)
    0.0295
    """
    k = np.asarray(successes, dtype=float)
    with np.errstate(invalid="ignore"):
        upper = stats.beta.ppf(level, k + 1.0, np.maximum(trials - k, 1e-300))
    return np.where(k >= trials, 1.0, upper)


def clopper_pearson_lower(successes: np.ndarray | int, trials: int, level: float) -> np.ndarray:
    """One-sided exact lower confidence bound on a binomial probability (``0`` for no success).

    Examples
    --------
    >>> from privacy.audit import clopper_pearson_lower
    >>> round(float(clopper_pearson_lower(100, 100, 0.95)), 4)   # 0.05 ** (1 / 100)
    0.9705
    """
    k = np.asarray(successes, dtype=float)
    with np.errstate(invalid="ignore"):
        lower = stats.beta.ppf(1.0 - level, np.maximum(k, 1e-300), trials - k + 1.0)
    return np.where(k <= 0, 0.0, lower)


def _bounds(rate_a: np.ndarray, rate_b: np.ndarray, trials: int, level: float, delta: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Certified epsilon for probabilities estimated as ``rate * trials`` successes."""
    lower = clopper_pearson_lower(rate_a * trials, trials, level)
    upper = clopper_pearson_upper(rate_b * trials, trials, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(lower > delta, np.log((lower - delta) / upper), 0.0)
    return np.maximum(eps, 0.0), lower, upper


def _tail_rates(sorted_scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Fraction of scores strictly above each threshold."""
    return 1.0 - np.searchsorted(sorted_scores, thresholds, side="right") / sorted_scores.size


def epsilon_lower_bound(null_scores: np.ndarray, alt_scores: np.ndarray, *, delta: float = 0.0,
                        confidence: float = 0.95, selection_fraction: float = 0.5,
                        max_thresholds: int = 2000,
                        rng: np.random.Generator | int | None = None) -> AuditResult:
    """Certified lower bound on epsilon from scores of outputs under two neighbours.

    Parameters
    ----------
    null_scores, alt_scores : array, shape (n,)
        Scores of independent outputs under ``D`` and under ``D'`` (same ``n``).
    delta : float, default 0
        The delta at which epsilon is bounded (compare with the claim at the same delta).
    confidence : float, default 0.95
        Probability that the bound holds (it is violated with probability <= 1 - confidence).
    selection_fraction : float, default 0.5
        Share of the samples used to choose the set; the rest certify it.
    max_thresholds : int, default 2000
        Candidate thresholds (quantiles of the pooled selection scores, plus the extremes).
    rng : Generator, int or None
        Shuffles the samples before splitting (so ordered inputs do not bias the split).

    Returns
    -------
    AuditResult

    Raises
    ------
    DimensionError, NonFiniteError, ParameterError
        Bad shapes (different sample counts, fewer than 2 samples per part), NaN scores, or
        parameters out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.audit import epsilon_lower_bound
    >>> rng = np.random.default_rng(0)
    >>> null, alt = rng.laplace(0, 1, 200_000), rng.laplace(1, 1, 200_000)   # epsilon = 1
    >>> res = epsilon_lower_bound(null, alt, confidence=0.95, rng=1)
    >>> 0.8 < res.epsilon_lower_bound <= 1.0
    True
    """
    null = check_finite_array("null_scores", null_scores, ndim=1)
    alt = check_finite_array("alt_scores", alt_scores, ndim=1)
    if null.size != alt.size:
        raise DimensionError(f"alt_scores has {alt.size} samples; expected {null.size} (as "
                             f"null_scores)")
    delta = check_in_interval("delta", delta, 0.0, 1.0, high_open=True)
    confidence = check_probability("confidence", confidence, allow_zero=False,
                                   allow_one=False)
    fraction = check_probability("selection_fraction", selection_fraction, allow_zero=False,
                                 allow_one=False)
    max_thresholds = check_integer("max_thresholds", max_thresholds, minimum=2)
    n = null.size
    n_select = int(round(fraction * n))
    if n_select < 2 or n - n_select < 2:
        raise DimensionError(f"need at least 2 samples per neighbour in each part; got {n} "
                             f"samples with selection_fraction={fraction}")
    gen = as_generator(rng)
    null, alt = gen.permutation(null), gen.permutation(alt)
    level = 1.0 - (1.0 - confidence) / 2.0
    sel_null, sel_alt = np.sort(null[:n_select]), np.sort(alt[:n_select])
    cert_null, cert_alt = np.sort(null[n_select:]), np.sort(alt[n_select:])
    n_cert = cert_null.size

    pooled = np.concatenate([sel_null, sel_alt])
    thresholds = np.unique(np.concatenate([
        np.quantile(pooled, np.linspace(0.0, 1.0, max_thresholds)),
        [pooled.min() - 1.0, pooled.max()]]))
    above_null, above_alt = _tail_rates(sel_null, thresholds), _tail_rates(sel_alt, thresholds)
    # four families: region above/below t, alt-over-null or null-over-alt.  Each candidate is
    # scored by the bound that holds simultaneously for all candidates on the selection samples
    # (Bonferroni): the maximum of plain estimates would favour extreme thresholds whose few
    # counts look good by chance and then fail to certify
    candidates = {("above", "alt_over_null"): (above_alt, above_null),
                  ("above", "null_over_alt"): (above_null, above_alt),
                  ("below", "alt_over_null"): (1.0 - above_alt, 1.0 - above_null),
                  ("below", "null_over_alt"): (1.0 - above_null, 1.0 - above_alt)}
    select_level = 1.0 - (1.0 - confidence) / (2.0 * len(candidates) * thresholds.size)
    best = (-1.0, None, None)
    for key, (num, den) in candidates.items():
        eps, _, _ = _bounds(num, den, n_select, select_level, delta)
        j = int(np.argmax(eps))
        if eps[j] > best[0]:
            best = (float(eps[j]), key, float(thresholds[j]))
    (region, order), t = best[1], best[2]

    above = {"null": _tail_rates(cert_null, np.array([t])),
             "alt": _tail_rates(cert_alt, np.array([t]))}
    rate = {k: (v if region == "above" else 1.0 - v) for k, v in above.items()}
    num, den = ((rate["alt"], rate["null"]) if order == "alt_over_null"
                else (rate["null"], rate["alt"]))
    eps, lower, upper = _bounds(num, den, n_cert, level, delta)
    return AuditResult(float(eps[0]), confidence, delta, t, region, order, float(lower[0]),
                       float(upper[0]), n_cert, n_select)


def audit(sampler: Sampler, *, samples: int, delta: float = 0.0, confidence: float = 0.95,
          score: Callable[[np.ndarray], np.ndarray] | None = None,
          selection_fraction: float = 0.5, batch_size: int = 100_000,
          rng: np.random.Generator | int | None = None) -> AuditResult:
    """Audit any release from a sampler of its outputs on two neighbouring inputs.

    Parameters
    ----------
    sampler : callable
        ``sampler(n, rng) -> (outputs_D, outputs_D')``: ``n`` independent outputs of the release
        on each neighbour (arrays with ``n`` rows; any trailing shape).
    samples : int
        Total outputs per neighbour (drawn in batches of ``batch_size``).
    delta, confidence, selection_fraction :
        As in :func:`epsilon_lower_bound`.
    score : callable, optional
        Maps a batch of outputs to ``(n,)`` real scores; the most powerful choice is the privacy
        loss ``log p_D'(o) / p_D(o)`` when it is known.  Default: outputs must be scalars.
    batch_size : int, default 100000
    rng : Generator, int or None

    Returns
    -------
    AuditResult

    Examples
    --------
    Audit privatized statistics (or any new release) by wrapping them in a sampler:

    >>> import numpy as np
    >>> from privacy import GaussianMechanism
    >>> from privacy.audit import audit
    >>> mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    >>> def sampler(n, rng):
    ...     # n scalar releases on each neighbour: a (1, n) batch
    ...     return (mech.randomize(np.zeros((1, n)), rng)[0],
    ...             mech.randomize(np.ones((1, n)), rng)[0])
    >>> res = audit(sampler, samples=100_000, delta=1e-5, rng=0)
    >>> res.epsilon_lower_bound <= 1.0
    True
    """
    samples = check_integer("samples", samples, minimum=4)
    batch_size = check_integer("batch_size", batch_size, minimum=1)
    gen = as_generator(rng)
    null_parts, alt_parts = [], []
    remaining = samples
    while remaining > 0:
        n = min(batch_size, remaining)
        out_null, out_alt = sampler(n, gen)
        for name, out, parts in (("null", out_null, null_parts), ("alt", out_alt, alt_parts)):
            values = np.asarray(score(out) if score is not None else out, dtype=float)
            if values.shape != (n,):
                raise DimensionError(f"the {name} scores of a batch of {n} samples have shape "
                                     f"{values.shape}; expected ({n},) (pass score= to map "
                                     f"non-scalar outputs)")
            parts.append(values)
        remaining -= n
    return epsilon_lower_bound(np.concatenate(null_parts), np.concatenate(alt_parts),
                               delta=delta, confidence=confidence,
                               selection_fraction=selection_fraction, rng=gen)
