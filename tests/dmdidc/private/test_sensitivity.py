"""Sensitivity of the released sufficient statistics (dmdidc.private.sensitivity), checked by
brute force.

For each privacy unit the derived bound must be at least the largest change an adversary can
cause: data and replacement values are searched over the vertices {-1, 0, 1} of the unit box
(greedy coordinate ascent from many random starts, simulations.studies.statistics_audit) on small
problems.  The bound must hold for every configuration found, and it should not be far above
the worst case found (else the noise would be wasted): the measured ratios are in the comments.
"""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc import ParameterError, SufficientStatistics
from dmdidc.private.sensitivity import statistics_sensitivity
from simulations.studies.statistics_audit import adversarial_neighbours


def worst_change(K, R, unit, window, detrend, norm, instruments=None):
    """Largest ||v(D') - v(D)|| found: D has one trajectory of K inputs (n = m = 1)."""
    return adversarial_neighbours(unit, norm=norm, window=window, samples=K, max_delay=R,
                                  detrend=detrend, instruments=instruments, starts=25,
                                  rng=0).change


@pytest.mark.slow
@pytest.mark.parametrize("unit, window, detrend, instruments, lower", [
    ("sample", None, None, None, 0.75),          # measured: found / bound = 0.82 (l1), 0.96 (l2)
    ("window", 2, None, None, 0.65),             # measured: 0.70 / 0.79
    ("trajectory", None, None, None, 0.5),       # measured: 0.58 / 0.74
    ("sample", None, None, "inputs", 0.8),       # measured: 0.87 / 0.97
    ("sample", None, "constant", None, 0.3),     # measured: 0.35 / 0.42 (short trajectory)
])
def test_derived_bound_holds_against_adversarial_data(unit, window, detrend, instruments, lower):
    K, R = 6, 1
    stats = SufficientStatistics.from_data(np.zeros((1, K + 1)), np.zeros((1, K)), max_delay=R,
                                           state_bound=1.0, input_bound=1.0, detrend=detrend,
                                           instruments=instruments,
                                           instrument_lags=1 if instruments else None)
    sens = statistics_sensitivity(stats, unit, window=window)
    for norm, bound in ((1, sens.l1), (2, sens.l2)):
        found = worst_change(K, R, unit, window, detrend, norm, instruments)
        assert found <= bound + 1e-9
        assert found >= lower * bound


def test_bound_counts_each_touched_sample_and_entry_once():
    # n = m = 1, R = 2, no instruments: v = [x_k, u_k, u_(k-1), u_(k-2), x_(k+1)] (d = 5).
    # One time step t touches samples t - 1 (x_t as target) .. t + 2 (u_t at lag 2): 4 samples.
    stats = SufficientStatistics.from_data(np.zeros((1, 11)), np.zeros((1, 10)), max_delay=2,
                                           state_bound=2.0, input_bound=3.0)
    sens = stats.sensitivity("sample")
    assert sens.touched_samples == 4
    d = 5
    assert sens.entry_bounds.size == d * (d + 1) // 2 + d == stats.dimension
    # independent count: in sample k = t - 1 .. t + 2 the changed coordinate is
    # k = t-1: x_(k+1) (4); k = t: x_k and u_k (0, 1); k = t+1: u_(k-1) (2); k = t+2: u_(k-2) (3)
    changed = [{4}, {0, 1}, {2}, {3}]
    expected = np.zeros((d, d))
    for c in changed:
        for i in range(d):
            for j in range(d):
                if i in c or j in c:
                    expected[i, j] += 1.0 if i == j else 2.0
    sums = 2.0 * np.array([sum(i in c for c in changed) for i in range(d)])
    want = np.concatenate([expected[np.triu_indices(d)], sums])
    np.testing.assert_array_equal(sens.entry_bounds, want)
    assert sens.l1 == pytest.approx(want.sum()) and sens.l2 == pytest.approx(np.linalg.norm(want))


def test_window_and_trajectory_bounds_grow_with_the_unit():
    stats = SufficientStatistics.from_data([np.zeros((2, 101))] * 3, [np.zeros((1, 100))] * 3,
                                           max_delay=3, state_bound=[1.0, 2.0], input_bound=1.0)
    sample, window, whole = (stats.sensitivity("sample"), stats.sensitivity("window", window=12),
                             stats.sensitivity("trajectory"))
    assert sample.l2 < window.l2 < whole.l2
    assert window.touched_samples == 12 + 3 + 1
    # a whole trajectory: every entry of its 97 samples can change (2 N off the diagonal)
    assert whole.entry_bounds.max() == 2 * 97
    # a window longer than any trajectory costs no more than the whole trajectory
    assert stats.sensitivity("window", window=500).l1 == whole.l1


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(unit="day"), "unit must be one of"),
    (dict(unit="window"), "needs window=w"),
    (dict(unit="sample", window=3), "window applies to unit='window' only"),
    (dict(unit="window", window=0), "window must be"),
])
def test_bad_units_are_refused(kwargs, pattern):
    stats = SufficientStatistics.from_data(np.zeros((1, 11)), np.zeros((1, 10)), max_delay=1,
                                           state_bound=1.0, input_bound=1.0)
    with pytest.raises(ParameterError, match=pattern):
        stats.sensitivity(**kwargs)


def test_statistics_without_bounds_or_centred_after_summing_have_no_sensitivity():
    X, U = np.ones((1, 11)), np.ones((1, 10))
    with pytest.raises(ParameterError, match="without bounds"):
        SufficientStatistics.from_data(X, U, max_delay=1).sensitivity()
    bounded = SufficientStatistics.from_data(X, U, max_delay=1, state_bound=1.0,
                                             input_bound=1.0)
    with pytest.raises(ParameterError, match="centred after summing"):
        bounded.centered().sensitivity()
