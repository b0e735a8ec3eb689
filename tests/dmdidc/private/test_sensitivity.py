"""Sensitivity of the released sufficient statistics (dmdidc.private.sensitivity), checked by
brute force.

For each privacy unit the derived bound must be at least the largest change an adversary can
cause: data and replacement values are searched over the vertices {-1, 0, 1} of the unit box
(greedy coordinate ascent from many random starts, simulations.studies.statistics_audit) on small
problems.  The bound must hold for every configuration found, and it should not be far above
the worst case found (else the noise would be wasted): the measured ratios are in the comments.
"""

from __future__ import annotations

import copy
import pickle

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


@pytest.mark.parametrize("detrend", [None, "constant"])
def test_a_window_past_the_longest_trajectory_is_that_trajectory(detrend):
    stats = SufficientStatistics.from_data([np.zeros((2, 101)), np.zeros((2, 61))],
                                           [np.zeros((1, 100)), np.zeros((1, 60))], max_delay=3,
                                           state_bound=[1.0, 2.0], input_bound=1.0,
                                           detrend=detrend)
    whole = stats.sensitivity("trajectory")
    longest = stats.max_trajectory_samples
    # the array of touched samples is not built window-long (1e12 steps would be terabytes)
    for window in (longest, longest + 1, 10**12):
        wide = stats.sensitivity("window", window=window)
        assert np.array_equal(wide.entry_bounds, whole.entry_bounds)
        assert wide.touched_samples == whole.touched_samples == longest
        assert wide.window == window
    # a touched window never reports more samples than a trajectory has
    assert stats.sensitivity("window", window=longest - 2).touched_samples == longest
    shorter = stats.sensitivity("window", window=longest // 2)
    assert shorter.touched_samples == longest // 2 + 4 and shorter.l1 <= whole.l1


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


def _sign_data(rng, K):
    """Unit-box data of one trajectory with every value at a vertex (+-1)."""
    return rng.choice([-1.0, 1.0], (1, K + 1)), rng.choice([-1.0, 1.0], (1, K))


@pytest.mark.parametrize("detrend", [None, "constant"])
def test_a_part_added_twice_moves_the_sum_twice_and_its_sensitivity_says_so(detrend):
    # S + S and weighted_total with count 3 hold S's data 2 and 3 times: one replaced time step
    # of that data moves the sum 2 (3) times as far as it moves S.  Brute force: flip the sign
    # of one time step (all signals) at every position and take the largest change.
    from dmdidc.resampling import weighted_total

    rng = np.random.default_rng(3)
    K, R = 12, 1
    X, U = _sign_data(rng, K)
    other = SufficientStatistics.from_data(*_sign_data(rng, K), max_delay=R, state_bound=1.0,
                                           input_bound=1.0, detrend=detrend)

    def build(X, U):
        return SufficientStatistics.from_data(X, U, max_delay=R, state_bound=1.0,
                                              input_bound=1.0, detrend=detrend)

    def combine(S):
        twice = S + S
        # a pickled or deep-copied S is S's data too (its multiplicity was lost: l1 halved)
        return {"S + S": twice, "(S + other) + S": (S + other) + S,
                "weighted_total 3": weighted_total([S, other], np.array([3, 1])),
                "from_vector": SufficientStatistics.from_vector(twice.to_vector(), like=twice),
                "S + pickled S": S + pickle.loads(pickle.dumps(S)),
                "deepcopy(S) + S + pickled S": copy.deepcopy(S) + S + pickle.loads(
                    pickle.dumps(S))}

    S = build(X, U)
    totals = combine(S)
    expected = {"S + S": 2, "(S + other) + S": 2, "weighted_total 3": 3, "from_vector": 2,
                "S + pickled S": 2, "deepcopy(S) + S + pickled S": 3}
    one = S.sensitivity("sample")
    worst = dict.fromkeys(totals, 0.0)
    for t in range(K):           # time step t of x (t <= K) and u (t < K) replaced
        Xn, Un = X.copy(), U.copy()
        Xn[:, t] *= -1.0
        Un[:, t] *= -1.0
        moved_S = build(Xn, Un)
        base = moved_S.to_vector() - S.to_vector()
        for name, moved in combine(moved_S).items():
            change = np.abs(moved.to_vector() - totals[name].to_vector())
            np.testing.assert_allclose(change, expected[name] * np.abs(base), atol=1e-9)
            sens = totals[name].sensitivity("sample")
            assert np.all(change <= sens.entry_bounds + 1e-9), name
            worst[name] = max(worst[name], float(np.linalg.norm(change)))
    for name, total in totals.items():
        assert total.multiplicity == expected[name]
        sens = total.sensitivity("sample")
        np.testing.assert_allclose(sens.entry_bounds, expected[name] * one.entry_bounds)
        assert worst[name] <= sens.l2
        if detrend is None:      # (the centred bound is loose: 0.35-0.42 of the worst case)
            # the unrepeated sensitivity would not have covered the change: the test has teeth
            assert worst[name] > one.l2 * (expected[name] - 1), name
    # privatize calibrates on the repeated sensitivity; distinct parts keep multiplicity 1
    release = totals["S + S"].privatize("gaussian", epsilon=1.0, delta=1e-5, rng=0).privacy
    assert release.sensitivity == pytest.approx(2 * one.l2)
    assert (S + other).multiplicity == 1 and sum([S, other, build(X, U)]).multiplicity == 1
