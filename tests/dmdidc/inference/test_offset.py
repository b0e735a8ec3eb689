"""The offset test and the operating point (dmdidc.inference.offset)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc, SufficientStatistics
from dmdidc.inference.offset import offset_test, operating_point
from dmdidc.statistics.fit import regression_from_statistics

A_C, B_C = [[-0.3, 0.2], [0.0, -0.5]], [[1.0, 0.0], [0.5, 2.0]]


def data(offset, seed, noise=0.01, samples=2000):
    plant = DelayedPlant.from_continuous(A_C, B_C, delay=[0.7, 1.2], dt=0.5)
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((2, samples))
    X = plant.simulate(np.zeros(2), U)
    X = X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    return plant, X + np.asarray(offset, float)[:, None], U


@pytest.mark.statistical
def test_the_intercept_statistic_is_chi_square_without_an_offset_and_large_with_one():
    statistics = []
    for seed in range(40):
        plant, X, U = data([0.0, 0.0], seed)
        stats = SufficientStatistics.from_data(X, U, max_delay=3, instruments="inputs")
        centred = regression_from_statistics(stats.centered(), 3, estimator="iv")
        statistics.append(offset_test(centred, stats, level=1e-3).statistic)
    # chi^2 with n = 2 degrees of freedom under white errors; measurement noise makes the
    # residuals a moving average whose long-run variance is smaller, so the test is
    # conservative (measured mean 0.09 here), never anti-conservative
    assert np.mean(statistics) < 2.5
    assert np.mean(np.array(statistics) > 13.8) <= 0.05           # 1e-3 quantile of chi^2_2
    plant, X, U = data([0.5, -0.2], 0)
    stats = SufficientStatistics.from_data(X, U, max_delay=3, instruments="inputs")
    centred = regression_from_statistics(stats.centered(), 3, estimator="iv")
    assert offset_test(centred, stats, level=1e-3).significant


def test_the_operating_point_is_the_equilibrium_under_the_mean_input():
    A_d = np.array([[0.5, 0.1], [0.0, 0.8]])
    blocks = np.array([[[1.0], [0.0]], [[0.2], [0.5]]])
    u_op = np.array([2.0])
    c = np.array([0.3, -0.1])
    x_op = operating_point(A_d, blocks, c, u_op)
    np.testing.assert_allclose(A_d @ x_op + blocks.sum(axis=0) @ u_op + c, x_op)


def test_physical_units_round_trip_through_fit_predict_save_and_control(tmp_path):
    # A model fitted to 350 K and 2e5 Pa predicts in K and Pa, keeps its operating point in
    # both file formats, and a controller designed on it regulates the plant to it.
    from controllers import make_controller
    from simulations.closed_loop import simulate_closed_loop

    scale = np.diag([1.0, 1e3])
    A_c = scale @ np.array(A_C) @ np.linalg.inv(scale)
    op_x, op_u = np.array([350.0, 2e5]), np.array([1.5, -0.3])
    true = DelayedPlant.from_continuous(A_c, scale @ np.array(B_C), [0.7, 1.2], 0.5,
                                        operating_point=(op_x, op_u))
    rng = np.random.default_rng(0)
    U = op_u[:, None] + rng.standard_normal((2, 3000))
    X = true.simulate(op_x, U)
    X = X + 0.01 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # found and removed, nothing to warn
        est = DMDidc(max_delay=4).fit(X, U, dt=0.5)
    op = est.model_.operating_point
    # the equilibrium of the true plant under the identified u_op
    expected = true.simulate(op_x, np.repeat(op.input[:, None], 400, axis=1))[:, -1]
    np.testing.assert_allclose(op.state, expected, rtol=1e-3)
    prediction = est.predict(op_x, U[:, :50])
    truth = true.simulate(op_x, U[:, :50])
    assert np.all(np.abs(prediction - truth).max(axis=1) < 0.1 * truth.std(axis=1))
    for suffix in ("json", "npz"):
        loaded = DelayedPlant.load(est.model_.save(tmp_path / f"model.{suffix}"))
        np.testing.assert_array_equal(loaded.operating_point.state, op.state)
        np.testing.assert_array_equal(loaded.operating_point.input, op.input)
    start = op.state + np.array([5.0, 1e3])
    loop = simulate_closed_loop(true, make_controller("fractional", est.model_), start, 120)
    np.testing.assert_allclose(loop.states[:, -1], op.state, rtol=1e-6)
    mpc = make_controller("mpc", est.model_, horizon=10, u_min=op_u - 3.0, u_max=op_u + 3.0)
    loop = simulate_closed_loop(true, mpc, start, 60)
    np.testing.assert_allclose(loop.states[:, -1], op.state, rtol=1e-5)
    assert np.all(loop.inputs >= (op_u - 3.0)[:, None] - 1e-6)


def test_without_detrend_an_offset_fails_its_check_and_auto_keeps_quiet_without_one():
    plant, X, U = data([3.0, -2.0], 1)
    with pytest.warns(UserWarning, match="check 'offset' failed"):
        DMDidc(max_delay=3, detrend=None).fit(X, U, dt=0.5)
    plant, X, U = data([0.0, 0.0], 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = DMDidc(max_delay=3).fit(X, U, dt=0.5)
    assert est.model_.operating_point is None
    assert est.diagnostics_["offset"].passed


def random_offset_data(seed, *, sensor, bias, mean_input=0.0, samples=4000):
    """A random plant (4 states, 1-2 inputs) driven by low-pass inputs (whose lagged values
    instrument the states' mean weakly), 30 dB of noise, a sensor offset of ``sensor`` state
    rms and an unrecorded input bias of ``bias`` input standard deviations."""
    from scipy import signal

    from simulations.studies.data_kinds import random_plant

    rng = np.random.default_rng(seed)
    m = 1 + seed % 2
    plant = random_plant(rng, n_states=4, n_inputs=m, dt=1.0, max_delay=4)
    b, a = signal.butter(2, 0.1)
    U = signal.lfilter(b, a, rng.standard_normal((m, samples + 200)), axis=1)[:, 200:]
    U = U / U.std(axis=1, keepdims=True) + mean_input
    X = plant.simulate(np.zeros(4), U + bias * rng.choice([-1.0, 1.0], (m, 1)))
    rms = np.sqrt(np.mean((X - X.mean(axis=1, keepdims=True)) ** 2, axis=1, keepdims=True))
    X = X + 10 ** (-30 / 20) * rms * rng.standard_normal(X.shape)
    return plant, X + sensor * rms * rng.choice([-1.0, 1.0], (4, 1)), U


def eigenvalue_error(estimate, truth):
    from simulations.studies.data_kinds import _eigenvalue_error
    return _eigenvalue_error(np.linalg.eigvals(estimate), np.linalg.eigvals(truth))


@pytest.mark.parametrize("sensor, bias", [(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)])
def test_refined_iv_fits_the_affine_model_when_weak_instruments_hide_the_offset(sensor, bias):
    # On these data IV's own intercept test (lagged inputs as instruments) missed most sensor
    # offsets (docs/scripts/offset_sweep.py); the default fit must find them all and be right.
    from dmdidc.fitting import instrumented_offset_decision, offset_decision

    missed_by_iv = rights = 0
    for seed in range(4):
        plant, X, U = random_offset_data(seed, sensor=sensor, bias=bias)
        stats = SufficientStatistics.from_data(X, U, max_delay=4, instruments="inputs")
        missed_by_iv += not offset_decision(stats, 4, "iv", level=1e-3).significant
        assert instrumented_offset_decision(stats, 4, level=1e-3).significant
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = DMDidc(max_delay=4).fit(X, U, dt=1.0)
        assert est.model_.operating_point is not None
        assert est.diagnostics_["offset"].passed
        if not est.model_.has_continuous:             # refused A_c: loud
            continue
        right = (eigenvalue_error(est.A_c, plant.A_c) < 0.1
                 and np.all(np.abs(est.delay - plant.delay) < 0.1))
        assert right or caught                         # a hard plant may be loud, never wrong
        rights += right
    assert rights >= 2
    if sensor:
        assert missed_by_iv >= 1                       # the case this decision exists for


@pytest.mark.parametrize("mean_input", [0.0, 2.0])
def test_no_offset_no_false_alarm_on_random_plants(mean_input):
    # Offset-free data, inputs recorded around zero or around an operating point: the offset
    # check passes without detrend (IV's test alone) and with the default (which may fit the
    # affine model around an operating point: a harmless intercept, no warning).
    from dmdidc.fitting import instrumented_offset_decision

    for seed in range(6):
        plant, X, U = random_offset_data(seed, sensor=0.0, bias=0.0, mean_input=mean_input)
        stats = SufficientStatistics.from_data(X, U, max_delay=4, instruments="inputs")
        test = instrumented_offset_decision(stats, 4, level=1e-3, offset="test")
        assert not test.significant
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = DMDidc(max_delay=4, detrend=None).fit(X, U, dt=1.0)
        assert not any("check 'offset'" in str(w.message) for w in caught)
        assert est.diagnostics_["offset"].passed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert DMDidc(max_delay=4).fit(X, U, dt=1.0).diagnostics_["offset"].passed


def test_streamed_iv_decides_the_offset_as_the_batch_fit_does():
    # partial_fit's IV solve decides the intercept by the same rule as fit (IV's test, then
    # least squares' when IV's finds nothing): the sensor offsets IV's test alone misses are
    # fitted as an operating point when streamed, too.
    for seed in range(4):
        plant, X, U = random_offset_data(seed, sensor=1.0, bias=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = streamed(X, U, 1.0, max_delay=4, estimator="iv")
        assert est.model_.operating_point is not None, seed


def streamed(X, U, dt, chunks=4, **params):
    """DMDidc(**params) fed X, U in ``chunks`` consecutive chunks by partial_fit."""
    est, L = DMDidc(**params), U.shape[1] // chunks
    for a in range(0, chunks * L, L):                # chunks overlap by one state
        est.partial_fit(X[:, a:a + L + 1], U[:, a:a + L], dt=dt)
    return est


def test_streamed_iv_without_detrend_tests_the_offset_as_the_batch_fit_does():
    # detrend=None: fit tests the intercept and a significant one fails the offset check;
    # partial_fit's IV solve did not test it at all (the check said 'not tested').  Now the
    # streamed verdict is the batch one, loud with a large offset, quiet without one, and
    # neither fits an operating point.
    cases = [(data([3.0, -2.0], seed), 0.5, False) for seed in range(2)]
    cases += [(data([0.0, 0.0], seed), 0.5, True) for seed in range(2)]
    cases += [(random_offset_data(seed, sensor=sensor, bias=0.0), 1.0,
               True if sensor == 0.0 else None)       # IV's weak test: batch's verdict
              for seed in range(2) for sensor in (1.0, 0.0)]
    for (_, X, U), dt, expected in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            batch = DMDidc(max_delay=4, estimator="iv", detrend=None).fit(X, U, dt=dt)
            est = streamed(X, U, dt, max_delay=4, estimator="iv", detrend=None)
        check = est.diagnostics_["offset"]
        assert check.passed is batch.diagnostics_["offset"].passed, check
        if expected is not None:                      # loud, or no false alarm
            assert check.passed is expected, check
        assert est.model_.operating_point is None


@pytest.mark.parametrize("seed", range(3))
def test_singular_moments_leave_the_centring_rounding_untested_not_inf(seed):
    """regression_rank on rank-deficient moments (an input that never moves): the rounding
    check of an affine fit from statistics said 'inf standard errors off'; it is not tested
    (singular moments), while full-rank statistics keep the measured, finite check."""
    plant, X, U = data([5.0, 3.0], seed, samples=3000)
    silent = np.vstack([U[:1], np.zeros_like(U[:1])])          # the second input never moves
    X_silent = plant.simulate(np.zeros(2), silent) + 0.01 * np.random.default_rng(
        seed).standard_normal(X.shape) + np.array([[5.0], [3.0]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay=3, regression_rank=6).fit_statistics(
            SufficientStatistics.from_data(X_silent, silent, max_delay=3), dt=0.5)
    check = est.diagnostics_["offset"]
    assert check.passed is None and "not tested" in check.finding
    assert "singular" in check.finding and "inf" not in check.finding
    assert np.isfinite(check.statistic)
    assert not any("'offset'" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        full = DMDidc(max_delay=3).fit_statistics(
            SufficientStatistics.from_data(X, U, max_delay=3), dt=0.5)
    check = full.diagnostics_["offset"]
    assert check.passed is True and np.isfinite(check.statistic)
    assert not any("'offset'" in str(w.message) for w in caught)
