"""Closed-form Gaussian privacy curve and the monotone search that inverts privacy curves.

One implementation of each, shared by the mechanisms, the comparison accountants and the
calibration: ``gaussian_delta`` / ``gaussian_epsilon`` (the privacy curve of a Gaussian shift,
equivalently of mu-GDP) and ``smallest_satisfying`` (smallest positive ``x`` with a
non-increasing ``f(x) <= target``, returned from the feasible side).

References
----------
Seed eq. (4.1).  B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential
privacy", ICML 2018, Thm 8.  J. Dong, A. Roth, W. Su, "Gaussian differential privacy", JRSS-B
2022, Cor. 2.13.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from _toolbox.errors import AccountingError

__all__ = ["gaussian_delta", "gaussian_epsilon", "smallest_satisfying"]


def smallest_satisfying(func: Callable[[float], float], target: float, *, start: float = 1.0,
                        rtol: float = 1e-12, limit: float = 1e12,
                        what: str = "the parameter") -> float:
    """Smallest ``x > 0`` (within relative ``rtol``) with ``func(x) <= target``.

    ``func`` must be non-increasing in ``x`` (it may be a step function, e.g. an accountant's
    output).  The bracket is grown geometrically from ``start`` in both directions, then
    narrowed on ``log x`` by the Illinois variant of regula falsi with bisection safeguards;
    the upper end of the bracket always satisfies ``func(x) <= target`` and is returned, so
    the result errs on the safe side.

    Parameters
    ----------
    func : callable float -> float
        Non-increasing function.
    target : float
        Threshold.
    start : float, default 1.0
        Initial guess ``> 0``.
    rtol : float, default 1e-12
        Relative width of the final bracket.
    limit : float, default 1e12
        The bracket may grow to ``start * limit`` (and shrink to ``start / limit``): if ``func``
        is still above ``target`` there, ``AccountingError`` is raised; if it is still below at
        ``start / limit``, that value is returned.
    what : str
        Name of ``x`` for the error message.

    Raises
    ------
    AccountingError
        No ``x`` up to ``start * limit`` meets the target.

    Examples
    --------
    >>> x = smallest_satisfying(lambda x: 1.0 / x, 0.25)
    >>> 4.0 <= x < 4.0 * (1 + 1e-11)
    True
    """
    def excess(log_x: float) -> float:
        return func(math.exp(log_x)) - target

    log_start, log_limit = math.log(start), math.log(limit)
    lo = hi = log_start
    f_hi = excess(hi)
    step = 1.0
    if f_hi > 0:
        f_lo = f_hi
        while f_hi > 0:
            lo, f_lo = hi, f_hi
            hi, step = hi + step, 2.0 * step
            if hi - log_start > log_limit:
                raise AccountingError(f"no {what} up to {math.exp(log_start + log_limit):.3g} "
                                      f"reaches the target {target!r}")
            f_hi = excess(hi)
    else:
        f_lo = f_hi
        while f_lo <= 0:
            hi, f_hi = lo, f_lo
            lo, step = lo - step, 2.0 * step
            if log_start - lo > log_limit:
                return math.exp(hi)
            f_lo = excess(lo)
    # invariant: f_lo > 0 >= f_hi
    tol = math.log1p(rtol)
    kept, widths = 0, [hi - lo]
    for _ in range(400):
        width = hi - lo
        if width <= tol:
            break
        stalled = len(widths) >= 3 and width > 0.5 * widths[-3]
        x = lo + 0.5 * width
        if not stalled and f_lo != f_hi:
            x = hi - f_hi * width / (f_hi - f_lo)
            # step just past the estimate, towards the end that was kept: when the estimate is
            # good, the next evaluation lands on the other side and closes the bracket
            x += 0.45 * tol * kept
            x = min(max(x, lo + 0.01 * width), hi - 0.01 * width)
        f_x = excess(x)
        if f_x <= 0:
            hi, f_hi = x, f_x
            f_lo = 0.5 * f_lo if kept == -1 else f_lo   # Illinois: damp the kept end
            kept = -1
        else:
            lo, f_lo = x, f_x
            f_hi = 0.5 * f_hi if kept == 1 else f_hi
            kept = 1
        widths.append(hi - lo)
    return math.exp(hi)


def gaussian_delta(mu: float, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of the Gaussian pair ``N(mu, 1)`` vs ``N(0, 1)`` (mu-GDP).

    ``delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``; a Gaussian mechanism with
    sensitivity ``D`` and noise ``sigma`` has ``mu = D / sigma`` (seed eq. 4.1).  Arguments are
    not checked (callers validate).

    Examples
    --------
    >>> round(gaussian_delta(1.0, 0.0), 6)   # 2 Phi(1/2) - 1
    0.382925
    """
    from scipy import special

    if mu == 0.0:
        return 0.0
    if mu == math.inf:
        return 1.0
    first = float(special.ndtr(-epsilon / mu + mu / 2.0))
    if epsilon > 1e12:
        # the exponent below adds two terms of size ~epsilon and keeps too few digits of
        # their sum: drop the subtracted term (delta <= first is still an upper bound)
        return min(1.0, first)
    log_second = epsilon + float(special.log_ndtr(-epsilon / mu - mu / 2.0))
    second = math.exp(log_second) if log_second > -745.0 else 0.0
    return min(1.0, max(0.0, first - second))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Smallest ``epsilon >= 0`` with :func:`gaussian_delta` ``(mu, epsilon) <= delta``.

    Rounded up (the returned epsilon always satisfies the target).

    Examples
    --------
    >>> 4.377 < gaussian_epsilon(1.0, 1e-5) < 4.378
    True
    """
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    if mu > 1e150:   # epsilon is about mu**2 / 2, beyond the floats: inf is the upper bound
        return math.inf
    # the answer is about mu**2 / 2 + mu * Phi^-1(1 - delta): start there
    return smallest_satisfying(lambda e: gaussian_delta(mu, e), delta,
                               start=max(mu, 0.5 * mu * mu, 1e-3), rtol=1e-13, what="epsilon")
