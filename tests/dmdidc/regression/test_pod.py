"""DMDidc on many sensors: the leading POD modes (``DMDidc(svd_rank=r)``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import (
    DelayedPlant,
    DimensionError,
    DMDidc,
    InsufficientExcitationError,
    ParameterError,
    random_excitation,
)
from dmdidc.regression.pod import pod_modes

SENSORS = 2000


def six_state_plant(rng, dt=0.25):
    """Two oscillating pairs and two real modes, two inputs with fractional delays."""
    frequencies = rng.uniform(0.5, 2.5, 2)
    damping = rng.uniform(0.1, 0.6, 2)
    A_c = np.zeros((6, 6))
    for k in range(2):
        A_c[2 * k:2 * k + 2, 2 * k:2 * k + 2] = [[-damping[k], frequencies[k]],
                                                  [-frequencies[k], -damping[k]]]
    A_c[4, 4], A_c[5, 5] = -rng.uniform(0.3, 1.0), -rng.uniform(1.0, 2.0)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]       # not in modal coordinates
    delay = rng.uniform(0.05, 3.5 * dt, 2)
    return DelayedPlant.from_continuous(Q @ A_c @ Q.T, rng.standard_normal((6, 2)), delay, dt,
                                        max_delay=5)


def sensor_data(seed, samples, noise, sensors=SENSORS):
    rng = np.random.default_rng(seed)
    plant = six_state_plant(rng)
    U = random_excitation(2, samples, rng=rng)
    Z = plant.simulate(np.zeros(6), U)
    X = rng.standard_normal((sensors, 6)) @ Z                  # X = C z
    X += noise * X.std() * rng.standard_normal(X.shape)
    return plant, X, U


def fit(X, U, plant, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=plant.max_delay, **params).fit(X, U, dt=plant.dt)


@pytest.mark.parametrize("samples, seed", [(1200, 0), (1200, 1), (1200, 2),   # K < n
                                           pytest.param(2400, 3, marks=pytest.mark.slow)])  # K > n
def test_many_sensors_of_six_states_give_the_delays_and_eigenvalues(samples, seed):
    plant, X, U = sensor_data(seed, samples, noise=0.01)
    est = fit(X, U, plant, svd_rank=6)
    assert est.modes_.shape == (SENSORS, 6)
    np.testing.assert_allclose(est.modes_.T @ est.modes_, np.eye(6), atol=1e-10)
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.01 * plant.dt)
    found = np.sort_complex(np.linalg.eigvals(est.A_c))
    true = np.sort_complex(np.linalg.eigvals(plant.A_c))
    np.testing.assert_allclose(found, true, atol=0.01 * np.abs(true).max())
    ci = est.delay_ci(0.999)
    assert np.all((ci.low <= plant.delay) & (plant.delay <= ci.high)), str(ci)
    # the prediction lives in the full space and follows the data to the noise level
    predicted = est.predict(X[:, 0], U[:, :40])
    assert predicted.shape == (SENSORS, 41)
    assert np.linalg.norm(predicted - X[:, :41]) <= 0.05 * np.linalg.norm(X[:, :41])


def test_without_svd_rank_more_sensors_than_snapshots_suggest_it():
    plant, X, U = sensor_data(0, 150, noise=0.01, sensors=200)
    with pytest.raises(InsufficientExcitationError, match=r"svd_rank=r.*POD modes"):
        fit(X, U, plant)


def test_no_false_alarm_on_exactly_low_rank_data():
    # noise-free: the modes span the six states exactly, the fit is exact
    plant, X, U = sensor_data(4, 800, noise=0.0, sensors=300)
    est = fit(X, U, plant, svd_rank=6)
    np.testing.assert_allclose(est.delay, plant.delay, atol=1e-6)
    np.testing.assert_allclose(np.sort_complex(est.eigs), np.sort_complex(plant.eigs),
                               atol=1e-8)
    assert not [c.name for c in est.diagnostics_.failed if c.name in ("effect", "delay_bound")]
    # DMD modes in the sensor space: unit columns, each an eigenvector of the full-space map
    modes = est.modes
    assert modes.shape == (300, 6)
    np.testing.assert_allclose(np.linalg.norm(modes, axis=0), 1.0, atol=1e-12)
    full = est.modes_ @ est.A_d @ est.modes_.T
    np.testing.assert_allclose(full @ modes, modes * est.eigs, atol=1e-8)


@pytest.mark.filterwarnings("ignore:Input data condition number")   # PyDMD on rank-6 data
@pytest.mark.parametrize("seed", range(3))
def test_eigenvalues_agree_with_pydmd_dmdc_without_delay(seed):
    pydmd = pytest.importorskip("pydmd")
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((6, 6)) * 0.3 - 0.5 * np.eye(6)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((6, 2)), 0.0, 0.2)
    U = random_excitation(2, 300, rng=rng)
    X = rng.standard_normal((200, 6)) @ plant.simulate(rng.standard_normal(6), U)
    ours = fit(X, U, plant, svd_rank=6, estimator="ls", detrend=None)
    theirs = pydmd.DMDc(svd_rank=6).fit(X, U)
    np.testing.assert_allclose(np.sort_complex(ours.eigs), np.sort_complex(theirs.eigs),
                               atol=1e-8)
    np.testing.assert_allclose(np.sort_complex(ours.eigs), np.sort_complex(plant.eigs),
                               atol=1e-8)


def test_pod_modes_match_the_thin_svd_on_both_sides():
    rng = np.random.default_rng(1)
    for shape in ((300, 120), (80, 500)):
        X = rng.standard_normal(shape) * np.exp(-np.arange(shape[1]) / 20.0)
        modes, singular = pod_modes([X[:, :shape[1] // 2], X[:, shape[1] // 2:]], 5)
        left, s, _ = np.linalg.svd(X, full_matrices=False)
        np.testing.assert_allclose(singular, s[:singular.size], rtol=1e-8)
        # the same subspace (signs fixed: largest entry positive)
        np.testing.assert_allclose(np.abs(modes.T @ left[:, :5]), np.eye(5), atol=1e-6)
        assert np.all(modes[np.argmax(np.abs(modes), axis=0), np.arange(5)] > 0)


def test_pod_modes_fall_back_to_the_svd_below_the_gram_resolution():
    rng = np.random.default_rng(2)
    Q = np.linalg.qr(rng.standard_normal((200, 4)))[0]
    X = Q @ np.diag([1.0, 1e-2, 1e-9, 1e-10]) @ np.linalg.qr(rng.standard_normal((60, 4)))[0].T
    modes, _ = pod_modes([X], 3)
    np.testing.assert_allclose(np.abs(modes.T @ Q[:, :3]), np.eye(3), atol=1e-5)


@pytest.mark.parametrize("call", ["partial_fit", "fit_statistics", "Y", "rank"])
def test_svd_rank_refuses_what_it_cannot_do(call):
    plant, X, U = sensor_data(0, 300, noise=0.0, sensors=50)
    est = DMDidc(max_delay=5, svd_rank=6)
    if call == "partial_fit":            # it streams (test_pod_streaming), but not these
        with pytest.raises(ParameterError, match="svd_rank streams least squares"):
            DMDidc(max_delay=5, svd_rank=6, instruments="states").partial_fit(X, U,
                                                                             dt=plant.dt)
        with pytest.raises(DimensionError, match="svd_rank=60 exceeds the 50 states"):
            DMDidc(max_delay=5, svd_rank=60).partial_fit(X, U, dt=plant.dt)
    elif call == "fit_statistics":
        with pytest.raises(ParameterError, match="svd_rank projects whole trajectories"):
            est.fit_statistics(None, dt=plant.dt)
    elif call == "Y":
        with pytest.raises(ParameterError, match="svd_rank projects whole trajectories"):
            DMDidc(max_delay=0, svd_rank=6).fit(X[:, :-1], U, Y=X[:, 1:], dt=plant.dt)
    else:
        with pytest.raises(DimensionError, match="svd_rank must be between 1 and min"):
            DMDidc(max_delay=5, svd_rank=51).fit(X, U, dt=plant.dt)


def test_without_svd_rank_there_are_no_pod_modes():
    plant, X, U = sensor_data(0, 400, noise=0.0, sensors=6)
    est = fit(X, U, plant)
    assert est.modes_ is None and est.pod_singular_values_ is None


@pytest.mark.parametrize("seed", range(3))
def test_randomized_modes_span_the_leading_subspace(seed):
    # a few modes well above the noise: the randomized range finder finds their subspace
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((1500, 6)))[0]
    X = Q @ np.diag([50, 30, 20, 10, 5, 3.0]) @ rng.standard_normal((6, 800))
    X += 0.01 * rng.standard_normal(X.shape)
    exact, s = pod_modes([X], 6, randomized=False)
    fast, s_fast = pod_modes([X], 6, randomized=True, rng=seed)
    np.testing.assert_allclose(np.abs(fast.T @ exact), np.eye(6), atol=1e-6)
    np.testing.assert_allclose(s_fast[:6], s[:6], rtol=1e-8)
    again, _ = pod_modes([X], 6, randomized=True, rng=seed)
    np.testing.assert_array_equal(again, fast)                  # reproducible with the seed


@pytest.mark.parametrize("randomized", [False, True])
@pytest.mark.parametrize("shape", [(40, 300), (400, 150)])
def test_centre_gives_the_modes_of_the_centred_snapshots_without_a_copy(shape, randomized):
    """``centre=c``: the modes and singular values of ``x_k - c`` from the snapshots' own
    products (both Gram routes and the randomized one), equal to those of an explicitly
    centred copy, on snapshots far from the origin (an offset of 5 against modes of 1)."""
    rng = np.random.default_rng(shape[0])
    n, K = shape
    states = [rng.standard_normal((n, 3)) @ rng.standard_normal((3, K)) + 5.0
              + 0.01 * rng.standard_normal((n, K)) for _ in range(2)]
    c = sum(X.sum(axis=1) for X in states) / (2 * K)
    modes, singular = pod_modes(states, 3, centre=c, randomized=randomized)
    copied, expected = pod_modes([X - c[:, None] for X in states], 3, randomized=randomized)
    assert np.max(np.abs(modes.T @ copied) - np.eye(3)) < 1e-9       # the same subspace, signs
    np.testing.assert_allclose(np.abs(modes), np.abs(copied), atol=1e-9)
    np.testing.assert_allclose(singular[:3], expected[:3], rtol=1e-9)


@pytest.mark.parametrize(("centre", "error"), [(np.zeros(3), "centre has 3 entries; expected 4"),
                                               (np.array([0.0, np.nan, 0.0, 0.0]), "centre")])
def test_a_bad_centre_is_refused_by_name(centre, error):
    X = np.random.default_rng(0).standard_normal((4, 50))
    with pytest.raises(ValueError, match=error):
        pod_modes([X], 2, centre=centre)
