"""Whether the whole part of a delay was decided by the block test zeroing a weak block.

The block test zeroes every input block before a channel's first significant one ``w``.  When
the true ``B^(w - 1)`` is merely weak (a weakly excited channel, few rows), that zero makes the
recovery return ``w`` exactly (its pair ``w - 1, w`` degenerate) or a delay near ``w`` with a
narrow interval: confidently wrong (3.05 T with the 99 % interval [2.84, 3.27] for a true
2.6 T).  The interval is conditional on the test's decision, so it cannot show this.  The
delay is therefore recovered a second time with ``B^(w - 1)`` fitted; if the two answers differ
by more than ``max(99 % half-width, 0.1 T)`` the decision mattered and the delay is ambiguous.
Keeping ``B^(w - 1)`` in the model instead would bias a true whole delay to ``w - eps``, so the
second recovery is only a check.  One rule, used by :class:`~dmdidc.DMDidc` (the
``delay_ambiguity`` check) and :class:`~dmdidc.OnlineDMDidc` (``delay_status_``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dmdidc.discretization import first_active_blocks
from dmdidc.inference.blocks import kept_blocks, restricted_coefficients, with_earlier_blocks
from dmdidc.inference.recovery import recover_channel, solution_weights
from dmdidc.regression.solution import RegressionSolution, coefficient_blocks

__all__ = ["AMBIGUITY", "DelayAmbiguity", "delay_ambiguity", "delay_with_earlier_block"]

#: Periods by which the two recoveries may differ (beyond the 99 % half-width of the delay)
#: before the delay counts as ambiguous: the accuracy asked of a delay estimate (issue 22).
AMBIGUITY = 0.1

#: The 99 % two-sided normal quantile: the half-width the two recoveries may differ by.
_Z99 = 2.5758293035489004


@dataclass(frozen=True)
class DelayAmbiguity:
    """The two recoveries of each channel's delay and the decision (module notes).

    Attributes
    ----------
    estimate : ndarray, shape (m,)
        The fit's delay (s), with the blocks before ``w`` zeroed.
    below : ndarray, shape (m,)
        The delay (s) recovered with ``B^(w - 1)`` fitted too (NaN for ``w < 1``).
    tolerance : ndarray, shape (m,)
        ``max(99 % half-width, 0.1 T)`` (s); the half-width only where it was needed.
    ambiguous : ndarray of bool, shape (m,)
        Channels whose two recoveries differ by more than ``tolerance``.
    """

    estimate: np.ndarray
    below: np.ndarray
    tolerance: np.ndarray
    ambiguous: np.ndarray


def delay_with_earlier_block(A_c: np.ndarray, solution: RegressionSolution,
                             active: np.ndarray, dt: float) -> np.ndarray:
    """Each channel's delay (s) recovered with ``B^(w - 1)`` fitted too (NaN for ``w < 1``).

    Parameters
    ----------
    A_c : ndarray, shape (n, n)
    solution : RegressionSolution
        The unrestricted regression.
    active : ndarray of bool, shape (R + 1, m)
        The block test's decision.
    dt : float

    Returns
    -------
    ndarray, shape (m,)
    """
    n, (R1, m) = A_c.shape[0], active.shape
    first = first_active_blocks(active)
    kept = with_earlier_blocks(kept_blocks(active), active)
    _, blocks = coefficient_blocks(restricted_coefficients(solution, n, kept), n, m, R1 - 1)
    delays = np.full(m, np.nan)
    weights = solution_weights(solution)
    for i, w in enumerate(first):
        if w >= 1:
            delays[i] = recover_channel(A_c, blocks[:, :, i], dt, int(w),
                                        significant=active[:, i], weights=weights)[1]
    return delays


def delay_ambiguity(A_c: np.ndarray, solution: RegressionSolution, active: np.ndarray,
                    delay: np.ndarray, dt: float,
                    standard_error: Callable[[], np.ndarray]) -> DelayAmbiguity:
    """Which channels' delays the block test's zeroing of ``B^(w - 1)`` decided (module notes).

    Parameters
    ----------
    A_c, solution, active
        As for :func:`delay_with_earlier_block`.
    delay : ndarray, shape (m,)
        The fit's delays (s).
    dt : float
    standard_error : callable
        Returns the delays' standard errors (s); called only when a gap exceeds ``0.1 T``
        (an interval costs more than the check).

    Returns
    -------
    DelayAmbiguity

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.3]], [[2.0]], delay=2.0, dt=0.5)
    >>> U = random_excitation(1, 500, rng=2)
    >>> noise = 0.02 * np.random.default_rng(3).standard_normal(501)
    >>> est = DMDidc(max_delay=6).fit(plant.simulate([0.0], U) + noise, U, dt=0.5)
    >>> check = delay_ambiguity(est.A_c, est.regression_, est.block_test_.active, est.delay,
    ...                         0.5, lambda: est.delay_ci().standard_error)
    >>> check.ambiguous.tolist()
    [False]
    """
    delay = np.asarray(delay, dtype=float)
    below = delay_with_earlier_block(A_c, solution, active, dt)
    gap = np.abs(below - delay)                     # (NaN for w = 0: nothing earlier)
    tolerance = np.full(delay.size, AMBIGUITY * dt)
    if np.any(gap > tolerance):                     # only then is the interval needed
        half = _Z99 * np.asarray(standard_error(), dtype=float)
        tolerance = np.maximum(np.nan_to_num(half), tolerance)
    return DelayAmbiguity(delay, below, tolerance, gap > tolerance)
