"""The linearity check: a static nonlinearity is loud; linear data of every kind are not."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc
from dmdidc.inference.linearity import linearity_check
from dmdidc.inference.residuals import model_residuals
from simulations.studies.data_kinds import DATA_KINDS, make_data, random_plant

T, R, K = 0.5, 4, 3000


def _rms(X):
    return np.sqrt(np.mean(X ** 2, axis=1, keepdims=True))


def _noisy(X, rng, snr_db=30.0):
    return X + 10 ** (-snr_db / 20) * _rms(X) * rng.standard_normal(X.shape)


def _fit(X, U, **params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay=R, **params).fit(X, U, dt=T)
    return est, [str(w.message) for w in caught]


def _linearity_warned(messages):
    return any("check 'linearity' failed" in m for m in messages)


@pytest.mark.parametrize("seed", range(6))
def test_a_saturating_state_is_loud(seed):
    # tanh on one state at half its rms: before the check, eigenvalues 40-270 % off and silent
    data = make_data("saturating_state", random_plant(1000 + seed), rng=seed)
    est, messages = _fit(data.X, data.U)
    check = est.diagnostics_["linearity"]
    assert check.failed and _linearity_warned(messages)
    assert "nonlinearly" in check.finding and "actuator applied" in check.remedy


@pytest.mark.parametrize("seed", range(6))
def test_a_saturating_actuator_with_the_command_recorded_is_loud(seed):
    # clipped at 2 sd: eigenvalues within 25 % but 5-50 standard errors off, silent before
    rng = np.random.default_rng(seed)
    plant = random_plant(1000 + seed)
    U = rng.standard_normal((2, K))
    X = _noisy(plant.simulate(np.zeros(3), np.clip(U, -2.0, 2.0)), rng)
    est, messages = _fit(X, U)
    assert est.diagnostics_["linearity"].failed and _linearity_warned(messages)
    # the input the actuator applied makes the same data linear: no alarm
    applied, _ = _fit(X, np.clip(U, -2.0, 2.0))
    assert applied.diagnostics_["linearity"].passed


@pytest.mark.parametrize("kind", sorted(set(DATA_KINDS) - {"saturating_state"}))
def test_linear_data_of_every_kind_raise_no_linearity_alarm(kind):
    for seed in range(4):
        plant = random_plant(1000 + seed)
        data = make_data(kind, plant, rng=seed)
        est, messages = _fit(data.X, data.U)
        assert est.diagnostics_["linearity"].passed is not False, (kind, seed)
        assert not _linearity_warned(messages)


@pytest.mark.parametrize("seed", range(4))
def test_two_level_inputs_heavy_tails_and_quantization_raise_no_alarm(seed):
    rng = np.random.default_rng(seed)
    plant = random_plant(1000 + seed)
    # a PRBS with long holds: its cube is the input itself, no feature of it is tested
    U = np.sign(np.repeat(rng.standard_normal((2, K // 20 + 1)), 20, axis=1)[:, :K])
    check = _fit(_noisy(plant.simulate(np.zeros(3), U), rng), U)[0].diagnostics_["linearity"]
    assert check.passed and "cube of input" not in check.finding
    # Student-t3 process noise and a 10 % rms quantizer
    U = rng.standard_normal((2, K))
    X = plant.simulate(np.zeros(3), U)
    W = 0.3 * _rms(X) * rng.standard_t(3, (3, K)) / np.sqrt(3)
    heavy = np.zeros_like(X)
    for k in range(K):
        heavy[:, k + 1] = plant.A_d @ heavy[:, k] + W[:, k]
    assert _fit(_noisy(X + heavy, rng), U)[0].diagnostics_["linearity"].passed
    step = 0.1 * _rms(X)
    assert _fit(step * np.round(_noisy(X, rng) / step), U)[0].diagnostics_["linearity"].passed


def _parts(plant, X, U):
    return model_residuals([(X, U)], plant.A_d, plant.B_blocks)


def test_the_statistic_names_the_residual_and_the_feature():
    plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]], delay=1.3,
                                         dt=T, max_delay=3)
    U = np.random.default_rng(0).standard_normal((1, K))
    check = linearity_check(_parts(plant, plant.simulate([0.0, 0.0], np.clip(U, -1, 1)), U),
                            plant, 0.01 / 8)
    assert check.failed and check.statistic > check.threshold > 3.0
    assert "residual" in check.finding and "cube of input 0 lagged" in check.finding
    assert "Bonferroni over" in check.finding


def test_not_tested_without_inputs_or_samples():
    plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=0.3, dt=T, max_delay=1)
    U = np.random.default_rng(1).standard_normal((1, 30))      # 10 samples per column needed
    check = linearity_check(_parts(plant, plant.simulate([0.0], U), U), plant, 0.01)
    assert check.passed is None and "not tested" in check.finding
    free = DelayedPlant(np.array([[0.9]]), np.zeros((2, 1, 0)), T)
    X = 0.9 ** np.arange(50.0)[None]
    check = linearity_check(_parts(free, X, np.zeros((0, 49))), free, 0.01)
    assert check.passed is None


def test_an_unstable_model_keeps_the_input_features():
    plant = DelayedPlant.from_continuous([[0.01]], [[1.0]], delay=0.3, dt=T, max_delay=1)
    rng = np.random.default_rng(2)
    U = rng.standard_normal((1, 1500))
    X = plant.simulate([0.0], np.clip(U, -1.0, 1.0)) + 0.05 * rng.standard_normal((1, 1501))
    check = linearity_check(_parts(plant, X, U), plant, 0.01)
    assert check.failed and "cube of input 0" in check.finding


@pytest.mark.parametrize("seed", range(3))
def test_many_short_experiments_pool_their_samples_in_any_order(seed):
    # Review: 15 experiments of 200 samples of a saturating state were each too short for the
    # features alone ("not tested" on 10 of 10, and 8 of them silent); pooled under one
    # projection with an intercept per experiment they are tested, in either order
    data = make_data("saturating_state", random_plant(2000 + seed), rng=seed)
    Xs = [data.X[:, a:a + 201] for a in range(0, 3000, 200)]
    Us = [data.U[:, a:a + 200] for a in range(0, 3000, 200)]
    for order in (slice(None), slice(None, None, -1)):
        est, messages = _fit(Xs[order], Us[order])
        check = est.diagnostics_["linearity"]
        # failed, or inconclusive where the residuals are coloured (whiteness then warns)
        assert check.passed is not True and "nonlinearly" in check.finding, (order, check)
        assert _linearity_warned(messages) or est.diagnostics_["whiteness"].failed, messages
    linear = make_data("white", random_plant(2000 + seed), rng=seed)
    est, messages = _fit([linear.X[:, a:a + 201] for a in range(0, 3000, 200)],
                         [linear.U[:, a:a + 200] for a in range(0, 3000, 200)])
    assert est.diagnostics_["linearity"].passed and not _linearity_warned(messages)


@pytest.mark.parametrize("seed", range(3))
def test_one_long_record_keeps_the_sample_budget_and_still_finds_saturation(seed, monkeypatch):
    # a single record of 30000 samples: the check works on a window of its budget (SAMPLES),
    # not on every sample, and a saturating actuator is still loud
    from dmdidc.inference import linearity

    rng = np.random.default_rng(400 + seed)
    plant = random_plant(rng)
    U = rng.standard_normal((plant.n_inputs, 30_000))
    bent = plant.simulate(np.zeros(plant.n_states), np.clip(U, -1.0, 1.0))
    bent = bent + 1e-3 * bent.std(axis=1, keepdims=True) * rng.standard_normal(bent.shape)
    widths = []
    whitened = linearity._whitened
    monkeypatch.setattr(linearity, "_whitened",
                        lambda F, F0, order: widths.append(F.shape[1]) or whitened(F, F0, order))
    check = linearity_check(model_residuals([(bent, U)], plant.A_d, plant.B_blocks), plant,
                            0.01 / 8)
    assert widths and max(widths) <= linearity.SAMPLES
    assert check.failed


@pytest.mark.parametrize("order", [0, 1, 3, 10])
def test_whitened_is_each_features_prediction_error_filter(order):
    # independent of the implementation: Yule-Walker taps by scipy's Toeplitz solve and the
    # filter 1 - sum_i a_i z^-i by lfilter (zero history), feature by feature
    from scipy import linalg, signal

    from dmdidc.inference.linearity import _RIDGE, _whitened

    rng = np.random.default_rng(order)
    F = np.cumsum(rng.standard_normal((4, 500)), axis=1)
    F[3] = 2.0                                           # a constant feature: no filter
    F0 = F - F.mean(axis=1, keepdims=True)
    out = _whitened(F, F0, order)
    for f in range(F.shape[0]):
        r = np.array([F0[f, i:] @ F0[f, :F.shape[1] - i] for i in range(order + 1)])
        r = r / (r[0] if r[0] > 0 else 1.0)
        taps = (linalg.solve(linalg.toeplitz(r[:order]) + _RIDGE * np.eye(order), r[1:])
                if order else np.zeros(0))
        want = signal.lfilter(np.r_[1.0, -taps], [1.0], F[f])
        np.testing.assert_allclose(out[f], want, rtol=0, atol=1e-10 * np.abs(F[f]).max())
