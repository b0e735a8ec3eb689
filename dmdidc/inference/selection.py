"""Choosing the delay bound ``R`` from the data (``DMDidc(max_delay=None)``).

One pass computes the statistics with the largest bound tried, ``R_max``; the statistics of
every smaller ``R`` are sub-blocks of them (fewer input lags), on the same samples, so every
candidate is compared on equal footing.  For ``R = 0 .. R_max`` least squares gives the
residual covariance ``Sigma_R`` and the Bayesian information criterion

    BIC(R) = N log det Sigma_R + n (n + m (R + 1)) log N

(Schwarz 1978; the lag-order criterion of vector autoregressions, Lutkepohl 2005, Sec. 4.3).
Its minimiser ``R_BIC`` is the last lag whose block explains the data (when the model without
inputs is better still, no lag explains the states: the delay may exceed ``R_max``, which is
then chosen, with a warning).  The chosen bound is ``R_BIC + 1``: one spare block, so that the
second block of a fractional delay (small when the fraction is small, which the criterion may
drop) is in the model, and the block test can show that the lag after the delay has no effect.

**Noisy states.**  With measurement noise, least squares uses later input lags as a proxy for
the noisy state (errors in variables: the true state is a combination of past inputs), so the
criterion keeps falling with ``R`` and would choose ``R_max``.  The blocks *up to* the delay are
unbiased under that noise (their inputs are independent of the state's noise), so the block
test on the fit with ``R_max`` finds each channel's first active block ``w`` reliably, and the
bound is capped at ``max(w) + 2`` (the two blocks of a fractional delay plus one spare).
``R_max`` is the largest bound with at least ``_SAMPLES_PER_REGRESSOR`` samples per regressor,
at most ``_LARGEST_BOUND`` and shorter than every trajectory.

**A delay beyond the first search.**  When no lag up to ``R_max`` explains the states, the
delay may lie beyond it, and ``_LARGEST_BOUND`` is a cap on the search's cost, not what the data
allow (20 000 samples of one input allow about 2000 lags): the estimator widens the search,
doubling the bound (:func:`wider_bound`), while the samples allow it and the lagged inputs stay
at most ``_WIDEST_INPUT_LAGS`` (a delay of 37.4 periods: 30, then 60, where it is found).  Only
then does it warn, naming which limit stopped it: the samples (record longer) or the search's
width (pass ``max_delay`` above the delay).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from _toolbox.validation import read_only
from dmdidc.errors import InsufficientExcitationError, warn_model
from dmdidc.inference.blocks import block_test
from dmdidc.regression.solution import solve_normal_equations

__all__ = ["DelayBoundSelection", "largest_bound", "select_max_delay", "wider_bound"]

_LARGEST_BOUND = 30
_SAMPLES_PER_REGRESSOR = 10
#: The widest search: at most this many lagged inputs ``m (R + 1)`` (its BIC solves about
#: ``R`` regressions of as many regressors, and the fit keeps the widest bound when no lag
#: explains the states: about 2 s at 128 lags of 2e4 samples, 8 s at 256).
_WIDEST_INPUT_LAGS = 128


@dataclass(frozen=True)
class DelayBoundSelection:
    """Outcome of the delay-bound selection.

    Attributes
    ----------
    candidates : ndarray of int
        Bounds ``R`` compared (``0 .. limit``).
    criterion : ndarray
        BIC of each candidate (smaller is better).
    best : int
        ``R_BIC``, the candidate with the smallest criterion.
    first_active : ndarray of int
        First active input block per channel in the fit with ``limit`` (-1: none).
    selected : int
        The bound used, ``min(best + 1, max(first_active) + 2, limit)``.
    limit : int
        Largest bound tried.
    n_samples : int
        Samples the criterion was computed on.
    exceeded : bool
        No lag within ``limit`` explained the states (or the criterion was still smallest at
        ``limit``): the delay may exceed it, and a wider search may find it.
    """

    candidates: np.ndarray
    criterion: np.ndarray
    best: int
    first_active: np.ndarray
    selected: int
    limit: int
    n_samples: int
    exceeded: bool = False

    def __post_init__(self) -> None:
        for name in ("candidates", "first_active"):
            values = np.array(getattr(self, name), dtype=int)
            values.flags.writeable = False
            object.__setattr__(self, name, values)
        object.__setattr__(self, "criterion", read_only(self.criterion))

    def summary(self) -> str:
        """The criterion per candidate and the choice, one line."""
        cells = ", ".join(f"R={r}: {c:.4g}" for r, c in zip(self.candidates, self.criterion,
                                                              strict=True))
        spare = self.best + 1
        cap = (int(self.first_active.max()) + 2 if np.any(self.first_active >= 0)
               else None)                               # (the rule of select_max_delay)
        rule = (f"the smaller of {spare} (BIC minimal at R={self.best}, plus one spare block) "
                f"and {cap} (the latest first significant input block with R={self.limit}, "
                f"{self.first_active.tolist()}, plus two: measurement noise lets the criterion "
                f"keep falling)" if cap is not None else
                f"BIC minimal at R={self.best}, plus one spare block")
        return (f"max_delay chosen: {self.selected}, {rule}, at most {self.limit}; bounds "
                f"0..{self.limit} compared on {self.n_samples} samples: {cells}")


def largest_bound(lengths: list[int], n_states: int, n_inputs: int,
                  cap: int | None = _LARGEST_BOUND) -> int:
    """``R_max`` for trajectories with ``lengths`` inputs each (see the module notes): at
    most ``cap`` (``None``: what the samples allow).

    Raises
    ------
    InsufficientExcitationError
        Not even ``R = 1`` has enough samples.
    """
    shortest = min(lengths)
    top = shortest - 2 if cap is None else min(cap, shortest - 2)
    # samples (sum K - R) against regressors (n + m (R + 1)): both linear in R, so the
    # largest R that has enough is read off, then stepped down over the short trajectories
    total, count = sum(lengths), len(lengths)
    per = _SAMPLES_PER_REGRESSOR
    slope = count + per * n_inputs
    start = min(top, (total - per * (n_states + n_inputs)) // slope) if slope else top
    for R in range(start, 0, -1):
        if sum(K - R for K in lengths) >= per * (n_states + n_inputs * (R + 1)):
            return R
    raise InsufficientExcitationError(
        f"too few samples to choose max_delay from the data: {sum(lengths)} input samples in "
        f"{len(lengths)} trajectories (shortest {shortest}) give fewer than "
        f"{_SAMPLES_PER_REGRESSOR} samples per regressor even at R = 1; record more data or "
        f"set max_delay")


def wider_bound(limit: int, allowed: int, n_inputs: int) -> int | None:
    """The next bound of a search that found no lag within ``limit``: twice it, at most
    ``allowed`` (what the samples allow, :func:`largest_bound` without cap) and
    ``_WIDEST_INPUT_LAGS`` lagged inputs; ``None`` when neither leaves room."""
    widest = max(_LARGEST_BOUND, _WIDEST_INPUT_LAGS // max(n_inputs, 1) - 1)
    wider = min(2 * limit, allowed, widest)
    return wider if wider > limit else None


def _limit_reason(limit: int, allowed: int | None, n_inputs: int) -> str:
    """Why the search stopped at ``limit``, with the remedy."""
    fix = "pass max_delay=R, an integer above the delay in periods, if you know it"
    if allowed is None:
        return (f"{limit} is the bound the statistics were built with: build them with a "
                f"larger max_delay, or {fix}")
    if limit >= allowed:
        return (f"{limit} is the largest bound these data allow ({_SAMPLES_PER_REGRESSOR} "
                f"samples per regressor): record longer, or {fix}")
    return (f"the search stops at {limit} (at most {_WIDEST_INPUT_LAGS} lagged inputs, "
            f"{n_inputs} per lag; these data would allow up to {allowed}): {fix}")


def select_max_delay(gram: np.ndarray, n_samples: int, *, n_states: int, n_inputs: int,
                     limit: int, significance: float = 1e-3, allowed: int | None = None,
                     warn: bool = True) -> DelayBoundSelection:
    """BIC over ``R = 0 .. limit`` from the moments of ``[x_k; u_k..u_{k-limit}; x_{k+1}]``.

    Parameters
    ----------
    gram : ndarray, shape (2 n + m (limit + 1), 2 n + m (limit + 1))
        ``sum_k v_k v_k^T`` (layout of :class:`~dmdidc.SufficientStatistics` without
        instruments, bound ``limit``), in the data's units.
    n_samples : int
    n_states, n_inputs, limit : int
    significance : float, default 1e-3
        Level of the block test that finds the first active blocks.
    allowed : int, optional
        The largest bound the data allow (:func:`largest_bound` without cap), for the
        warning's reason; ``None``: ``limit`` is the statistics' own bound.
    warn : bool, default True
        ``False``: no warning (a search about to widen); ``exceeded`` still says it.

    Returns
    -------
    DelayBoundSelection

    Warns
    -----
    ContinuousModelWarning
        When the criterion is smallest at the largest bound tried (the delay may be longer).
    """
    n, m = n_states, n_inputs
    p_max = n + m * (limit + 1)
    targets = np.arange(p_max, p_max + n)
    if m == 0:          # no inputs, no delay: plain DMD needs no lag (and no warning)
        return DelayBoundSelection(
            candidates=np.zeros(1), criterion=np.array([_bic(gram, np.arange(n), targets,
                                                             n_samples, n)]),
            best=0, first_active=np.zeros(0), selected=0, limit=limit, n_samples=n_samples)
    candidates = np.arange(limit + 1)
    criterion = np.array([_bic(gram, np.arange(n + m * (R + 1)), targets, n_samples, n)
                          for R in candidates])
    best = int(np.argmin(criterion))
    phi = np.arange(p_max)
    full = solve_normal_equations(gram[np.ix_(phi, phi)], gram[np.ix_(targets, phi)],
                                  gram[np.ix_(targets, targets)], n_samples=n_samples,
                                  regressor_sum=np.zeros(p_max), target_sum=np.zeros(n),
                                  rank_rtol=0.0)
    first = block_test(full, n, m, limit, significance=significance).first_active
    states = np.arange(n)
    no_input = _bic(gram, states, targets, n_samples, n)
    exceeded = no_input <= criterion[best] or (best == limit and not np.any(first >= 0))
    reason = _limit_reason(limit, allowed, m)
    if no_input <= criterion[best]:
        if warn:
            warn_model(f"no input lag 0..{limit} explains the states better than the states "
                       f"alone (BIC {no_input:.4g} without inputs, {criterion[best]:.4g} at "
                       f"best with R = {best}): the delay may exceed {limit} periods, or the "
                       f"input does not act; {reason}; max_delay is set to {limit}")
        best = limit
    elif exceeded and warn:
        warn_model(f"the delay-bound criterion (BIC) is still smallest at the largest bound "
                   f"tried, R = {limit}: the delay may be longer than {limit} periods, or the "
                   f"data too short to tell; {reason}")
    cap = int(first.max()) + 2 if np.any(first >= 0) else limit
    return DelayBoundSelection(candidates=candidates, criterion=criterion, best=best,
                               first_active=first, selected=min(best + 1, cap, limit),
                               limit=limit, n_samples=n_samples, exceeded=bool(exceeded))


def _bic(gram: np.ndarray, phi: np.ndarray, targets: np.ndarray, n_samples: int, n: int
         ) -> float:
    """BIC of the least-squares regression of the targets on the entries ``phi``."""
    solution = solve_normal_equations(
        gram[np.ix_(phi, phi)], gram[np.ix_(targets, phi)], gram[np.ix_(targets, targets)],
        n_samples=n_samples, regressor_sum=np.zeros(phi.size), target_sum=np.zeros(n),
        rank_rtol=0.0)
    residual = solution.residual_covariance * solution.dof / n_samples
    sign, logdet = np.linalg.slogdet(residual)
    scale = max(np.trace(gram[np.ix_(targets, targets)]) / n_samples, np.finfo(float).tiny)
    floor = n * np.log(np.finfo(float).eps * scale)       # an exact fit: rounding level
    logdet = max(logdet, floor) if sign > 0 else floor
    return float(n_samples * logdet + n * phi.size * np.log(n_samples))
