"""Dense privacy-loss PMFs: composition by FFT (self-convolution by squaring) and queries.

The accountant composes the pessimistic PLDs of :mod:`privacy.pld` here rather than in
``dp_accounting``, whose ``self_compose`` of a small (sparse) PMF first computes
``size ** steps`` as a Python integer (seconds for a million steps, forever for ``10**30``)
and whose ``epsilon`` search loops in Python over the composed grid.

* :func:`self_compose` raises a PMF to the power ``n`` by repeated squaring: ``2 log2 n``
  real FFT convolutions, each followed by a *pessimistic* truncation (mass of the far left
  moves up to the first kept loss, mass of the far right to infinite loss), so every result
  dominates the exact composition: every epsilon and delta derived from it is an upper bound.
  The size of each convolution is known before it is computed: a composition that would need
  more than ``max_points`` grid points is refused (``AccountingError``) before allocating.
* :func:`delta_for_epsilon` and :func:`epsilon_for_delta` evaluate the hockey-stick
  divergence ``delta(eps) = m_inf + sum_{l > eps} p_l (1 - e^{eps - l})`` from suffix sums
  (vectorized; exponents in log space, so no loss range overflows).

References
----------
Seed: composition (2.28), privacy curves (2.36)-(2.38).  A. Koskela, J. Jalko, A. Honkela,
"Computing tight differential privacy guarantees using FFT", AISTATS 2020.  dp_accounting
``pld/pld_pmf.py`` (the pessimistic truncation rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft

from _toolbox.errors import AccountingError
from _toolbox.validation import check_in_interval, check_integer

__all__ = ["DensePmf", "from_dp_accounting", "compose", "self_compose", "delta_for_epsilon",
           "epsilon_for_delta"]


@dataclass(frozen=True)
class DensePmf:
    """A privacy-loss PMF on the grid ``(lower + i) * discretization`` plus mass at ``+inf``.

    Examples
    --------
    >>> import numpy as np
    >>> pmf = DensePmf(0.5, -1, np.array([0.25, 0.5, 0.25]), 0.0)   # losses -0.5, 0, 0.5
    >>> pmf.losses.tolist()
    [-0.5, 0.0, 0.5]
    """

    discretization: float
    lower: int
    probs: np.ndarray
    infinity_mass: float

    @property
    def losses(self) -> np.ndarray:
        """The grid losses of ``probs``."""
        return (self.lower + np.arange(self.probs.size)) * self.discretization


def from_dp_accounting(pmf) -> DensePmf:
    """The :class:`DensePmf` of a ``dp_accounting`` ``PLDPmf`` (sparse ones are densified)."""
    dense = pmf.to_dense_pmf()
    # the private fields are the data dp_accounting itself composes
    return DensePmf(float(dense._discretization), int(dense._lower_loss),  # noqa: SLF001
                    np.asarray(dense._probs, dtype=float),  # noqa: SLF001
                    float(dense._infinity_mass))  # noqa: SLF001


def _tail_length(probs: np.ndarray, half: float) -> int:
    """How many leading entries of ``probs`` sum to at most ``half``.

    The cumulative sums of a prefix are those of the whole array (cumsum adds in order), and
    the tails cut are short: prefixes of 256, 2048, ... entries are summed until one exceeds
    ``half``, rather than the whole array.
    """
    count = 256
    while True:
        head = np.cumsum(probs[:count])
        if head[-1] > half or count >= probs.size:
            return int(np.searchsorted(head, half, side="right"))
        count *= 8


def _truncate(probs: np.ndarray, lower: int, budget: float) -> tuple[np.ndarray, int, float]:
    """Pessimistic truncation: drop up to ``budget / 2`` of mass at each end.

    The left tail is added to the first kept loss (its loss only grows) and the right tail is
    returned as mass for ``+inf``; both moves can only increase every delta.  ``probs`` is
    changed in place (the result is a view of it).
    """
    if budget <= 0.0 or probs.size <= 1:
        return probs, lower, 0.0
    half = 0.5 * budget
    left = min(_tail_length(probs, half), probs.size - 1)
    right = min(_tail_length(probs[::-1], half), probs.size - 1 - left)
    probs[left] += float(np.sum(probs[:left]))
    return probs[left:probs.size - right], lower + left, float(np.sum(probs[probs.size - right:]))


def _size(a: DensePmf, b: DensePmf, max_points: int) -> int:
    """Grid points of ``a * b``; refused (before anything is allocated) beyond ``max_points``."""
    size = a.probs.size + b.probs.size - 1
    if size > max_points:
        raise AccountingError(f"the composed privacy loss distribution needs {size} grid points "
                              f"(more than {max_points}); no PLD bound for this composition")
    return size


def _convolve(a: DensePmf, b: DensePmf | None, budget: float, max_points: int) -> DensePmf:
    """``a * b`` (``a * a`` when ``b`` is None) by real FFT, then pessimistic truncation."""
    other = a if b is None else b
    size = _size(a, other, max_points)
    n = fft.next_fast_len(size, real=True)
    fa = fft.rfft(a.probs, n)
    return _inverse(a, other, fa * fa if b is None else fa * fft.rfft(other.probs, n), n, size,
                    budget)


def _inverse(a: DensePmf, other: DensePmf, spectrum: np.ndarray, n: int, size: int,
             budget: float) -> DensePmf:
    """The truncated PMF of ``a * other`` from the ``n``-point spectrum of the product."""
    # FFT round-off leaves ~1e-20 of either sign in every bin (measured; a few 1e-16 summed
    # over a tail), far below the truncation budget: negative residues are dropped
    probs = fft.irfft(spectrum, n)[:size]
    np.maximum(probs, 0.0, out=probs)
    # a pmf whose mass exceeds 1 by rounding grows like (1 + r)**count over the squarings
    # (1e30 releases: overflow, and NaN read as epsilon 0): refused rather than read
    total = float(np.sum(probs))
    if not math.isfinite(total):
        raise AccountingError(f"the composed privacy loss distribution overflowed (total mass "
                              f"{total!r}): no PLD bound for this composition")
    probs, lower, right = _truncate(probs, a.lower + other.lower, budget)
    infinity = 1.0 - (1.0 - a.infinity_mass) * (1.0 - other.infinity_mass)
    return DensePmf(a.discretization, lower, probs, min(1.0, infinity + right))


def compose(a: DensePmf, b: DensePmf, *, tail_mass: float = 1e-12,
            max_points: int = 2 ** 24) -> DensePmf:
    """The PMF of the composition of two releases (same grid), pessimistically truncated.

    Examples
    --------
    >>> import numpy as np
    >>> coin = DensePmf(1.0, -1, np.array([0.5, 0.0, 0.5]), 0.0)
    >>> compose(coin, coin, tail_mass=0.0).probs.round(3).tolist()
    [0.25, 0.0, 0.5, 0.0, 0.25]
    """
    if a.discretization != b.discretization:
        raise AccountingError(f"PMFs on different grids ({a.discretization} and "
                              f"{b.discretization}) cannot be composed")
    return _convolve(a, b, tail_mass, max_points)


def self_compose(pmf: DensePmf, count: int, *, tail_mass: float = 1e-12,
                 max_points: int = 2 ** 24) -> DensePmf:
    """The PMF of ``count`` releases, by squaring: ``2 log2(count)`` FFT convolutions.

    Each convolution may cut ``tail_mass / (2 log2 count)`` from its tails (the right tail to
    infinite loss); the result dominates the exact composition.  A cut from an early square
    is carried into every later one, so the mass at infinity grows to about ``count *
    tail_mass / log2(count)`` at most (measured: 2.5e-11 at 1e3 and 1.3e-8 at 1e6 releases
    of a subsampled Gaussian, against a delta of 1e-5).  The default 1e-12 is above the FFT
    round-off in the tails (a few 1e-16 per convolution), which a budget like dp_accounting's
    1e-15 could not cut through.

    Raises
    ------
    AccountingError
        A convolution would exceed ``max_points`` grid points (checked before allocating).

    Examples
    --------
    >>> import numpy as np
    >>> coin = DensePmf(1.0, -1, np.array([0.5, 0.0, 0.5]), 0.0)
    >>> four = self_compose(coin, 4, tail_mass=0.0)
    >>> four.lower, (four.probs[::2] * 16).round(6).tolist()
    (-4, [1.0, 4.0, 6.0, 4.0, 1.0])
    """
    count = check_integer("count", count, minimum=1)
    budget = tail_mass / (2 * count.bit_length())
    result, base = None, pmf
    while True:
        if count & 1 and result is not None and count > 1:
            # the product result * base and the square of base share base's spectrum (at
            # the square's size, the larger: result holds lower powers): one FFT fewer
            size, square = _size(result, base, max_points), _size(base, base, max_points)
            n = fft.next_fast_len(max(size, square), real=True)
            fb = fft.rfft(base.probs, n)
            result = _inverse(result, base, fft.rfft(result.probs, n) * fb, n, size, budget)
            base = _inverse(base, base, fb * fb, n, square, budget)
            count >>= 1
            continue
        if count & 1:
            result = base if result is None else _convolve(result, base, budget, max_points)
        count >>= 1
        if not count:
            return result
        base = _convolve(base, None, budget, max_points)


def _suffixes(pmf: DensePmf) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Losses, suffix sums ``S_k = sum_{i >= k} p_i`` and ``log T_k = log sum p_i e^{-l_i}``."""
    losses = pmf.losses
    probs = pmf.probs
    suffix = np.append(np.cumsum(probs[::-1])[::-1], 0.0)
    with np.errstate(divide="ignore"):
        log_terms = np.log(probs) - losses
    log_t = np.append(np.logaddexp.accumulate(log_terms[::-1])[::-1], -np.inf)
    return losses, suffix, log_t


def delta_for_epsilon(pmf: DensePmf, epsilon: float) -> float:
    """Hockey-stick divergence ``delta(epsilon)`` of the PMF (an upper bound if it dominates).

    Examples
    --------
    >>> import numpy as np
    >>> coin = DensePmf(1.0, -1, np.array([0.5, 0.0, 0.5]), 0.0)   # randomized response, eps 1
    >>> round(delta_for_epsilon(coin, 0.0), 6)                      # 0.5 (1 - e^-1)
    0.31606
    """
    epsilon = check_in_interval("epsilon", epsilon, -math.inf, math.inf)
    losses, suffix, log_t = _suffixes(pmf)
    k = int(np.searchsorted(losses, epsilon, side="right"))
    with np.errstate(over="ignore"):
        value = pmf.infinity_mass + suffix[k] - math.exp(min(epsilon + log_t[k], 700.0))
    return float(min(1.0, max(0.0, value)))


def epsilon_for_delta(pmf: DensePmf, delta: float) -> float:
    """Smallest epsilon with ``delta_for_epsilon(pmf, epsilon) <= delta`` (rounded up).

    ``inf`` when the mass at infinite loss exceeds ``delta``.  On the segment between two grid
    losses the divergence is ``m + S_k - e^eps T_k``, solved in closed form.

    Examples
    --------
    >>> import numpy as np
    >>> coin = DensePmf(1.0, -1, np.array([0.5, 0.0, 0.5]), 0.0)
    >>> epsilon_for_delta(coin, 0.0)
    1.0
    """
    delta = check_in_interval("delta", delta, 0.0, 1.0)
    if pmf.infinity_mass > delta:
        return math.inf
    losses, suffix, log_t = _suffixes(pmf)
    with np.errstate(over="ignore"):
        # divergence at each grid loss l_j: the losses above it are those with i >= j + 1
        at_grid = pmf.infinity_mass + suffix[1:] - np.exp(np.minimum(losses + log_t[1:], 700.0))
    j = int(np.argmax(at_grid <= delta))    # the last entry (= infinity_mass) always qualifies
    gap = pmf.infinity_mass + suffix[j] - delta
    if gap <= 0.0 or not np.isfinite(log_t[j]):
        return float(losses[j])
    crossing = math.log(gap) - float(log_t[j])     # m + S_j - e^eps T_j = delta
    if j > 0:
        crossing = max(crossing, float(losses[j - 1]))
    # round up: a relative 1e-12 covers the rounding of the suffix sums
    return float(min(losses[j], crossing + 1e-12 * max(1.0, abs(crossing))))
