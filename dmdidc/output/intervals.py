"""Delay intervals across a whole period: the fit on the other side of the kink.

The sampled outputs are continuous in a channel's delay but not smooth at a whole number of
periods: just below ``w T`` the input's switch falls inside the sample interval that ends at
``w T`` and reaches the state sampled there, just above it does not.  With partial
measurements (``C B`` large against the slower terms) the residual sum of squares then has a
sharp, narrow well just below the whole period, and a fit can stop there even when the true
delay lies a little above it (seen in ``benchmarks/bench_output_loud.py``: true 1.019 T fitted
at 0.9994 T with a standard error of 0.0006 T, 32 of them from the truth; a fit restarted just
above the period ends at 1.018 T, 2 noise variances lower, with a standard error of 0.013 T).
The Wald interval there uses one side's curvature only, and the data do not decide the side.

For each channel whose delay lies within :data:`REACH` standard errors of a whole period
(between the bounds), the output-error fit is restarted just across it; if it stays on that
side, its delay, standard error and excess ``Delta RSS / sigma^2`` over the chosen fit are kept.
:meth:`~dmdidc.output.OutputDMDidc.delay_ci` joins that side's interval whenever the other
fit is not rejected at the interval's level by the likelihood ratio (both sides' delays are
then consistent with the data), the analogue of spanning the block
structure in :mod:`dmdidc.inference.intervals`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from dmdidc.errors import LogarithmError
from dmdidc.output.refine import Refined, refine

__all__ = ["OtherSide", "REACH", "other_sides", "restart", "spanned"]

#: Channels within this many standard errors of a whole period are refitted across it (the
#: half-width of a 0.999 interval: every level up to there can reach the period).
REACH = float(stats.norm.isf(0.0005))
#: The restart starts this fraction of a period across the whole period (inside the other
#: side's smooth piece, away from the kink's narrow well).
_ACROSS = 0.01
#: Where the other side is evaluated when its fit returns to the chosen side: just across the
#: period (that side's one-sided derivatives).
_CORNER = 1e-9


@dataclass(frozen=True)
class OtherSide:
    """The fit with one channel's delay on the other side of a whole period."""

    #: The whole period crossed, seconds.
    period: float
    #: That fit's delay and its standard error, seconds.
    delay: float
    se: float
    #: ``(RSS_other - RSS_chosen) / sigma^2`` (negative when the other side fits better).
    excess: float


def restart(experiments: list, refined: Refined, delays: np.ndarray, dt: float, R: int, *,
            feedthrough: bool, offset: bool, max_evaluations: int = 60) -> Refined | None:
    """The output-error fit started from ``refined`` with the delays ``delays`` (m,), or
    ``None`` if no continuous plant is found from there (:class:`~dmdidc.errors.
    LogarithmError`, a singular system); ``max_evaluations=1`` evaluates there without a
    step.  Bad input is not caught: it raises."""
    try:
        return refine(experiments, dt, R, A_c=refined.A_c, C=refined.C, B_c=refined.B_c,
                      delays=delays, initial_states=refined.initial_states,
                      D=refined.D if feedthrough else None,
                      offset=refined.offset if offset else None,
                      max_evaluations=max_evaluations)
    except (LogarithmError, np.linalg.LinAlgError):
        return None


def _refit(experiments: list, refined: Refined, i: int, delay: float, dt: float, R: int,
           **options) -> Refined | None:
    """:func:`restart` with channel ``i``'s delay moved to ``delay``."""
    delays = refined.delays.copy()
    delays[i] = delay
    return restart(experiments, refined, delays, dt, R, **options)


def other_sides(experiments: list, refined: Refined, dt: float, R: int, *, feedthrough: bool,
                offset: bool) -> tuple[OtherSide | None, ...]:
    """Per channel, the fit restarted across the nearest whole period (if it returns to the
    chosen side, the chosen fit evaluated just across the period, with that side's one-sided
    curvature), or ``None`` (the delay is farther than :data:`REACH` standard errors from a
    whole period inside ``(0, R dt)``, or the fit failed)."""
    at = refined.layout["delays"].start
    sigma2 = refined.rss / refined.dof
    found: list[OtherSide | None] = []
    for i, delay in enumerate(refined.delays):
        se = float(np.sqrt(max(refined.covariance[at + i, at + i], 0.0)))
        period = round(delay / dt) * dt
        side = 1.0 if delay < period else -1.0        # the other side of the period
        if not (0 < period < R * dt and abs(delay - period) <= REACH * se) or sigma2 <= 0:
            found.append(None)
            continue
        other = _refit(experiments, refined, i, period + side * _ACROSS * dt, dt, R,
                       feedthrough=feedthrough, offset=offset)
        if other is None or side * (other.delays[i] - period) < 0:
            # came back to the chosen side: the other side's best is at the period itself
            # (a corner); its one-sided curvature there bounds it (no step taken)
            other = _refit(experiments, refined, i, period + side * _CORNER * dt, dt, R,
                           feedthrough=feedthrough, offset=offset, max_evaluations=1)
        if other is None:
            found.append(None)
            continue
        found.append(OtherSide(
            period=float(period), delay=float(other.delays[i]),
            se=float(np.sqrt(max(other.covariance[at + i, at + i], 0.0))),
            excess=(other.rss - refined.rss) / sigma2))
    return tuple(found)


def spanned(low: np.ndarray, high: np.ndarray, sides: tuple[OtherSide | None, ...], z: float,
            level: float) -> tuple[np.ndarray, np.ndarray]:
    """The Wald bounds ``low``, ``high`` (m,) joined with each other side's interval where
    the other fit is not rejected at ``level`` (``excess`` below the chi-squared(1) quantile):
    the data do not decide the side, whether or not the chosen side's interval reaches the
    period (a sharp well just below it is narrower than its distance to the period).

    Examples
    --------
    >>> side = OtherSide(period=1.0, delay=1.02, se=0.01, excess=1.5)
    >>> low, high = spanned(np.array([0.998]), np.array([1.0005]), (side,), 1.96, 0.95)
    >>> float(low[0]), round(float(high[0]), 4)
    (0.998, 1.0396)
    """
    low, high = low.copy(), high.copy()
    critical = float(stats.chi2.isf(1.0 - level, 1))
    for i, side in enumerate(sides):
        if side is None or side.excess > critical:
            continue
        low[i] = min(low[i], side.delay - z * side.se)
        high[i] = max(high[i], side.delay + z * side.se)
    return low, high
