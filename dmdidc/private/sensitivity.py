"""How much one privacy unit can move the released sufficient statistics.

The released vector is :meth:`dmdidc.SufficientStatistics.to_vector`: every distinct entry of
``gram = sum_k v_k v_k^T`` (its upper triangle) and, for uncentred statistics, ``sums``.  The
data were clipped to the declared bounds and divided by them, so every entry of every ``v_k``
lies in [-1, 1].

**Which samples a unit touches.**  Entry block ``(s, lag)`` of ``v_k`` holds signal ``s`` at
time ``k - lag`` (``x_{k+1}`` has lag -1).  Replacing the data at time steps ``t .. t + w - 1``
(all signals at those times: ``w = 1`` for ``unit="sample"``, the window length for
``"window"``) changes, in sample ``k``, exactly the coordinates ``c_k`` of the blocks with
``t <= k - lag < t + w``: ``w + max_lag + 1`` consecutive samples are touched (``R + 2`` for a
single time step of plain least-squares statistics: ``x_t`` as regressor of sample ``t`` and
target of ``t - 1``, ``u_t`` in samples ``t .. t + R``).

**Per-entry bound.**  With all values in [-1, 1], a product ``z_i z_j`` (i != j) changes by at
most 2 when ``z_i`` or ``z_j`` changes, a square ``z_i^2`` in [0, 1] by at most 1, a value by
at most 2.  Summing over the touched samples, entry ``(i, j)`` of the Gram changes by at most
``b_ij = sum_k 2 [i in c_k or j in c_k]`` (``sum_k [i in c_k]`` on the diagonal) and ``sums_i``
by ``2 a_i``, ``a_i = #{k : i in c_k}``.  Then ``l1 = sum b`` and ``l2 = sqrt(sum b^2)`` over the
released entries bound the l1 and l2 change of the vector (triangle inequality per entry);
each distinct entry is counted once, because only the upper triangle is released.

**Whole trajectory.**  Every sample of one trajectory (at most ``max_trajectory_samples = N``)
may change completely: ``b_ij = 2 N``, ``b_ii = N``, ``2 N`` for sums.  These bound every
unit (a window lies in one trajectory); a window of ``w >= N`` steps is a whole trajectory.

**Centred statistics** (``detrend="constant"``: ``C = sum_k z_k z_k^T - s s^T / N_t`` per
trajectory).  With ``|s_j| <= N_t`` and ``|delta s_i| <= 2 a_i``, the mean term changes by at
most ``2 a_i + 2 a_j + 4 a_i a_j / N_t`` (``4 a_i + 4 a_i^2 / N_t`` on the diagonal), added to
``b_ij`` with the shortest trajectory's ``N_t``; and since ``|C_ij| <= N_t`` for values in
[-1, 1], no entry moves by more than ``2 N_t`` (``N_t`` on the diagonal) with the longest.

**Repeated parts.**  A sum that counts one part ``c`` times (``S + S``, or
:func:`dmdidc.resampling.weighted_total` with count ``c``; :attr:`~dmdidc.SufficientStatistics.
multiplicity`) holds every unit of that part ``c`` times: every bound is multiplied by the
largest such ``c`` (the change is linear in the part, centred or not).

The bound is verified by brute force in the tests (adversarial data on small problems: the
largest change found never exceeds it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from _toolbox.validation import check_integer, read_only
from dmdidc.errors import ParameterError

__all__ = ["StatisticsSensitivity", "statistics_sensitivity", "PRIVACY_UNITS"]

#: Privacy units: what neighbouring data sets differ in.
PRIVACY_UNITS = ("sample", "window", "trajectory")


@dataclass(frozen=True)
class StatisticsSensitivity:
    """Sensitivity of :meth:`dmdidc.SufficientStatistics.to_vector` to one privacy unit.

    Attributes
    ----------
    unit : str
        ``"sample"``, ``"window"`` or ``"trajectory"``.
    window : int or None
        Time steps of a window.
    entry_bounds : ndarray, shape (dimension,)
        Largest change of every released entry (same order as ``to_vector``).
    l1, l2 : float
        Bounds on the l1 and l2 norm of the change of the whole vector (the sensitivity of
        Laplace / SaS and of Gaussian noise).
    touched_samples : int
        Regression samples a unit can change (at most those of the longest trajectory).
    """

    unit: str
    window: int | None
    entry_bounds: np.ndarray
    l1: float
    l2: float
    touched_samples: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "entry_bounds", read_only(self.entry_bounds))


def _touch_pattern(slots: list[tuple[str, int]], widths: dict[str, int], window: int
                   ) -> np.ndarray:
    """Boolean (touched samples, d): which coordinates change in each touched sample."""
    lags = [lag for _, lag in slots]
    ks = np.arange(min(lags), window + max(lags))        # replaced times 0 .. window - 1
    columns = []
    for signal, lag in slots:
        changed = (ks - lag >= 0) & (ks - lag < window)
        columns.append(np.repeat(changed[:, None], widths[signal], axis=1))
    return np.concatenate(columns, axis=1)


def statistics_sensitivity(stats, unit: str = "sample", *, window: int | None = None
                           ) -> StatisticsSensitivity:
    """Per-entry, l1 and l2 sensitivity of the released statistics (see the module notes).

    Parameters
    ----------
    stats : SufficientStatistics
        Statistics built with bounds (unit-box data).
    unit : {"sample", "window", "trajectory"}
    window : int, optional
        Time steps per window (``unit="window"`` only).

    Returns
    -------
    StatisticsSensitivity

    Raises
    ------
    ParameterError
        Unknown unit, a missing or superfluous window, statistics without bounds, or
        statistics centred after summing (their sensitivity is not derived here).

    References
    ----------
    Dwork and Roth (2014), Def. 3.1 (l1-sensitivity) and Thm A.1 (l2); the unit-box scaling
    follows the clipping of DP-SGD (seed Ch. 4).
    """
    if unit not in PRIVACY_UNITS:
        raise ParameterError(f"unit must be one of {PRIVACY_UNITS}; got {unit!r}")
    if unit == "window":
        if window is None:
            raise ParameterError("unit='window' needs window=w (time steps per window)")
        window = check_integer("window", window, minimum=1)
    elif window is not None:
        raise ParameterError(f"window applies to unit='window' only; got window={window!r} "
                             f"with unit={unit!r}")
    if stats.state_bound is None:
        raise ParameterError("the statistics were built without bounds: declare state_bound "
                             "and input_bound (and instrument_bound) in from_data, so that one "
                             "unit's influence is bounded")
    if stats.centering == "global":
        raise ParameterError("statistics centred after summing (centered()) have no derived "
                             "sensitivity; center per trajectory with from_data(..., "
                             "detrend='constant') before privatizing")
    layout = stats.layout
    d = layout.dimension
    widths = {s: layout.width(s) for s in ("x", "u", "e")}
    longest = stats.max_trajectory_samples
    full = np.full((d, d), 2.0 * longest)
    np.fill_diagonal(full, float(longest))
    full_sums = np.full(d, 2.0 * longest)
    if unit == "trajectory":
        bounds, sums, touched = full, full_sums, longest
    else:
        # a window replaces time steps of one trajectory: past the longest one it touches
        # no more (every entry is then at the trajectory's bound), so the pattern is built for
        # at most that many steps, not an array as long as the window (1e9 steps: 130 GB)
        steps = 1 if unit == "sample" else min(window, max(longest, 1))
        pattern = _touch_pattern(layout.slots, widths, steps)
        touched = min(pattern.shape[0], longest)
        P = pattern.astype(float)
        either = pattern.shape[0] - (1.0 - P).T @ (1.0 - P)   # samples where i or j changes
        bounds = 2.0 * either
        counts = P.sum(axis=0)                            # a_i
        np.fill_diagonal(bounds, counts)
        sums = 2.0 * counts
        if stats.centering == "trajectory":
            shortest = max(stats.min_trajectory_samples, 1)
            mean_term = (2.0 * (counts[:, None] + counts[None, :])
                         + 4.0 * np.outer(counts, counts) / shortest)
            bounds = np.minimum(bounds + mean_term, full)
        else:
            bounds = np.minimum(bounds, full)
            sums = np.minimum(sums, full_sums)
    upper = bounds[np.triu_indices(d)]
    entries = np.concatenate([upper, sums]) if stats.released_sums else upper
    entries = entries * stats.multiplicity
    return StatisticsSensitivity(unit=unit, window=window, entry_bounds=entries,
                                 l1=float(entries.sum()), l2=float(np.sqrt(entries @ entries)),
                                 touched_samples=int(touched))
