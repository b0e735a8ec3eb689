"""compare (fit %, NRMSE, simulation and k-step prediction) and resid (residual correlations
with bands), checked against python-control and direct computations on random plants."""

import warnings

import control
import numpy as np
import pytest

from dmdidc import (
    DelayedPlant,
    DimensionError,
    DMDidc,
    IdData,
    ParameterError,
    compare,
    random_excitation,
    resid,
)
from tests.dmdidc.test_data import _data, _random_plant


@pytest.mark.parametrize("seed", range(6))
def test_simulation_equals_python_control(seed):
    plant, X, U = _data(seed, K=300, n=3, m=2)
    result = compare(plant, X, U)
    R = plant.max_delay
    # python-control: the lifted realization from z_R = [x_R, u_{R-1}, .., u_0]
    sys = plant.to_control()
    z0 = np.concatenate([X[:, R]] + [U[:, R - j] for j in range(1, R + 1)])
    padded = np.concatenate([U[:, R:], np.zeros((2, 1))], axis=1)   # one output per input
    response = control.forced_response(sys, U=padded, X0=z0)
    np.testing.assert_allclose(result.predicted[0], response.outputs[:, 1:],
                               rtol=1e-9, atol=1e-9 * np.abs(X).max())
    np.testing.assert_array_equal(result.measured[0], X[:, R + 1:])


@pytest.mark.parametrize("seed", range(6))
def test_k_step_prediction_equals_a_direct_loop(seed):
    plant, X, U = _data(seed, K=120)
    R, k = plant.max_delay, 1 + seed % 4
    result = compare(plant, X, U, horizon=k)
    for t in (R + k, 60, X.shape[1] - 1):
        x = X[:, t - k]
        for s in range(t - k, t):
            x = plant.A_d @ x + sum(plant.B_blocks[j] @ U[:, s - j] for j in range(R + 1))
        np.testing.assert_allclose(result.predicted[0][:, t - R - k], x, rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_fit_percent_is_the_definition_and_orders_models(seed):
    plant, X, U = _data(seed, noise=0.05)
    result = compare(plant, X, U)
    y, yhat = result.measured[0], result.predicted[0]
    expected = 100 * (1 - np.linalg.norm(y - yhat, axis=1)
                      / np.linalg.norm(y - y.mean(axis=1, keepdims=True), axis=1))
    np.testing.assert_allclose(result.fit_percent, expected, rtol=1e-12)
    np.testing.assert_allclose(result.nrmse, 1 - expected / 100, rtol=1e-10)
    # the true plant beats a plant whose delay is one period off, on every signal
    wrong = DelayedPlant.from_continuous(plant.A_c, plant.B_c, plant.delay + plant.dt,
                                         plant.dt)
    assert np.all(compare(wrong, X, U).fit_percent < result.fit_percent)


def test_noise_free_data_fit_perfectly_and_constants_are_named():
    plant, X, U = _data(0, noise=0.0)
    assert np.all(compare(plant, X, U).fit_percent > 100 - 1e-8)
    zero = DelayedPlant(np.zeros((1, 1)), np.zeros((1, 1, 1)), dt=1.0)
    result = compare(zero, np.zeros((1, 11)), np.ones((1, 10)))
    assert np.isnan(result.fit_percent[0]) and "constant" in str(result)


def test_operating_point_and_iddata_names():
    plant, X, U = _data(1)
    op = ([10.0, -3.0], [2.0])
    shifted = DelayedPlant(plant.A_d, plant.B_blocks, plant.dt, plant.A_c, plant.B_c,
                           plant.delay, operating_point=op)
    data = IdData(X + np.array(op[0])[:, None], U + op[1][0], dt=plant.dt,
                  state_names=["T", "p"], state_units=["K", "Pa"])
    physical = compare(shifted, data)
    np.testing.assert_allclose(physical.fit_percent, compare(plant, X, U).fit_percent,
                               rtol=1e-9)
    assert physical.names == ("T", "p") and "T" in str(physical)
    # a model without operating point is compared with the data's deviations
    np.testing.assert_allclose(compare(plant, IdData(
        X + np.array(op[0])[:, None], U + op[1][0], dt=plant.dt, operating_point=op)).fit_percent,
        compare(plant, X, U).fit_percent, rtol=1e-9)
    ahead = compare(shifted, data, horizon=2)
    np.testing.assert_allclose(ahead.fit_percent, compare(plant, X, U, horizon=2).fit_percent,
                               rtol=1e-9)


def test_bad_arguments_are_loud():
    plant, X, U = _data(0, K=20)
    with pytest.raises(DimensionError, match="data have 1 states.*the model has 2 and 1"):
        compare(plant, X[:1], U)
    with pytest.raises(ParameterError, match="horizon"):
        compare(plant, X, U, horizon=0)
    with pytest.raises(DimensionError, match="too short"):
        compare(plant, X[:, :4], U[:, :3])
    with pytest.raises(ParameterError, match="give the inputs U"):
        compare(plant, X)
    with pytest.raises(ParameterError, match="level"):
        resid(plant, X, U, level=1.0)
    with pytest.raises(DimensionError, match="too few"):
        resid(plant, X, U, lags=15)


def test_plots_return_figures(tmp_path):
    plant, X, U = _data(2, K=200)
    fig = compare(plant, X, U).plot(tmp_path / "compare.png")
    assert (tmp_path / "compare.png").stat().st_size > 0 and len(fig.axes) == 2
    fig = resid(plant, X, U).plot()
    assert len(fig.axes) == 2 * 2          # auto row plus one cross row, per state
    with pytest.raises(ParameterError, match="experiment"):
        compare(plant, X, U).plot(experiment=1)


def test_resid_correlations_equal_a_direct_computation():
    plant, X, U = _data(3, K=400, noise=0.1)
    result = resid(plant, X, U, lags=5)
    R = plant.max_delay
    e = X[:, R + 1:] - (plant.A_d @ X[:, R:-1] + sum(
        plant.B_blocks[j] @ U[:, R - j:U.shape[1] - j] for j in range(R + 1)))
    np.testing.assert_allclose(result.residuals[0], e, atol=1e-12)
    e0 = e[0] - e[0].mean()
    u0 = U[0, R:] - U[0, R:].mean()
    for tau in (1, 3):
        auto = np.dot(e0[tau:], e0[:-tau]) / np.dot(e0, e0)
        np.testing.assert_allclose(result.auto[tau, 0], auto, rtol=1e-9)
        cross = np.dot(e0[tau:], u0[:-tau]) / np.sqrt(np.dot(e0, e0) * np.dot(u0, u0))
        np.testing.assert_allclose(result.cross[result.lags.tolist().index(tau), 0, 0], cross,
                                   rtol=1e-9)
    assert result.auto_band == pytest.approx(2.5758 / np.sqrt(e.shape[1]), rel=1e-3)


def test_resid_false_alarms_stay_near_the_level_on_correct_models():
    """The true model: over random plants, about 1 % of correlations leave the 99 % bands."""
    outside, largest = [], []
    for seed in range(12):
        plant, X, U = _process_noise_data(seed)
        result = resid(plant, X, U)
        outside += [result.auto_outside.mean(), result.cross_outside.mean()]
        largest.append(result.largest_cross()[0])
    assert np.mean(outside) < 0.03
    assert max(largest) < 1.8                 # no single correlation far outside its band


def _process_noise_data(seed, K=1500, noise=0.1):
    """Data with white process noise: the true model's one-step residuals are white."""
    rng = np.random.default_rng(seed)
    plant = _random_plant(rng)
    n, m = plant.n_states, plant.n_inputs
    blocks = np.zeros((plant.max_delay + 1, n, m + n))
    blocks[:, :, :m] = plant.B_blocks
    blocks[0, :, m:] = np.eye(n)                   # the noise enters as inputs of its own
    U = random_excitation(m, K, rng=rng)
    W = noise * rng.standard_normal((n, K))
    X = DelayedPlant(plant.A_d, blocks, plant.dt).simulate(np.zeros(n), np.vstack([U, W]))
    return plant, X, U


@pytest.mark.parametrize("seed", range(6))
def test_resid_exposes_a_wrong_delay(seed):
    plant, X, U = _process_noise_data(seed)
    wrong = DelayedPlant.from_continuous(plant.A_c, plant.B_c, plant.delay + 2 * plant.dt,
                                         plant.dt)
    ratio, lag, _, _ = resid(wrong, X, U).largest_cross()
    assert ratio > 3 and 0 <= lag <= 4


def test_estimator_methods_and_a_fitted_model_on_new_data():
    rng = np.random.default_rng(7)
    plant = _random_plant(rng)
    U, V = random_excitation(1, 800, rng=rng), random_excitation(1, 800, rng=rng)
    noisy = [plant.simulate(np.zeros(2), W) + 0.02 * rng.standard_normal((2, 801))
             for W in (U, V)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=3).fit(noisy[0], U, dt=plant.dt)
    validation = IdData(noisy[1], V, dt=plant.dt)
    # the identified model predicts new data almost as well as the true plant
    truth = compare(plant, validation).fit_percent
    assert np.all(est.compare(validation).fit_percent > truth - 1.0)
    assert est.resid(validation).largest_cross()[0] < 2
