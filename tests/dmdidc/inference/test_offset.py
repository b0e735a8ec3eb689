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
