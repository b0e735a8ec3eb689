"""Tests of controllers.analysis: exact lifted loop, spectral radius, delay-mismatch study."""

from __future__ import annotations

import json

import numpy as np
import pytest

from controllers import (
    DelayMismatchStudy,
    FractionalDelayController,
    NaiveStateFeedback,
    PredictiveController,
    closed_loop_matrix,
    delay_mismatch_study,
    lqr_gain,
    plot_delay_mismatch,
    spectral_radius,
)
from dmdidc.model import DelayedPlant
from privacy.errors import DimensionError, NonFiniteError, ParameterError
from tests.seed_example import A_C, B_C, T, seed_plant


def run_loop(plant: DelayedPlant, controller, x0: np.ndarray, steps: int) -> np.ndarray:
    """Step the true plant with the controller's commands (DelayedPlant.simulate, one step)."""
    controller.reset()
    R, m = plant.max_delay, plant.n_inputs
    past = np.zeros((m, R))
    x, X = np.asarray(x0, float), [np.asarray(x0, float)]
    for _ in range(steps):
        u = controller(x)
        x = plant.simulate(x, u[:, None], U_past=past)[:, 1]
        if R:
            past = np.concatenate([past[:, 1:], u[:, None]], axis=1)
        X.append(x)
    return np.array(X).T


@pytest.mark.parametrize("make", [
    lambda p, K: NaiveStateFeedback(p, K),
    lambda p, K: PredictiveController(p, K),
    lambda p, K: PredictiveController(p, K, prediction="exact"),
    lambda p, K: FractionalDelayController(p, K),
])
@pytest.mark.parametrize("true_factor, model_factor", [(1.5, 1.5), (1.25, 1.6), (2.3, 0.4)])
def test_lifted_matrix_reproduces_step_by_step_loop(make, true_factor, model_factor):
    true_plant, model = seed_plant(true_factor), seed_plant(model_factor)
    ctrl = make(model, lqr_gain(model))
    M = closed_loop_matrix(true_plant, ctrl)
    L = max(true_plant.max_delay, ctrl.history_steps)
    assert M.shape == (2 + 2 * L,) * 2
    x0 = np.array([1.0, -2.0])
    X = run_loop(true_plant, ctrl, x0, 10)
    z = np.concatenate([x0, np.zeros(2 * L)])
    for k in range(10):
        z = M @ z
        np.testing.assert_allclose(z[:2], X[:, k + 1], rtol=1e-9, atol=1e-9)


def test_no_delay_no_history():
    plant = DelayedPlant.from_continuous(A_C, B_C, 0.0, T)
    K = lqr_gain(plant)
    M = closed_loop_matrix(plant, NaiveStateFeedback(plant, K))
    np.testing.assert_allclose(M, plant.A_d - plant.B_d @ K)


def test_seed_radii_table():
    rows = {}
    for factor in (1.0, 1.25, 1.5):
        plant = seed_plant(factor)
        K = lqr_gain(plant)
        rows[factor] = (spectral_radius(plant, PredictiveController(plant, K)),
                        spectral_radius(plant, FractionalDelayController(plant, K)))
    # measured values (see the report): truncated 0.1522 / 0.8141 / 1.0144, fractional 0.1522
    assert rows[1.0][0] == pytest.approx(0.152185, abs=1e-5)
    assert rows[1.25][0] == pytest.approx(0.814069, abs=1e-5)
    assert rows[1.5][0] == pytest.approx(1.014413, abs=1e-5)
    for factor in rows:
        assert rows[factor][1] == pytest.approx(0.152185, abs=1e-5)


def test_static_gain_without_history_is_the_plain_lifted_loop():
    # K_u may be None or empty (H = 0): the loop is the plant's lifted realization closed by K_x
    from controllers.analysis import feedback_gains, lifted_loop

    plant = seed_plant(1.25)
    K = lqr_gain(plant)
    F, G = plant.lifted_matrices()
    for empty in (None, np.zeros((0, 2, 2)), np.zeros((0,))):
        class Static:
            def feedback_matrices(self, empty=empty):
                return -K, empty

        K_x, K_u = feedback_gains(Static(), 2, 2)
        assert K_u.shape == (0, 2, 2)
        expected = F.copy()
        expected[:, :2] -= G @ K
        np.testing.assert_allclose(closed_loop_matrix(plant, Static()), expected, atol=1e-15)
        F_l, G_l, C_l = lifted_loop(plant, K_x, K_u)
        np.testing.assert_array_equal(F_l, F)
        np.testing.assert_array_equal(G_l, G)


def test_bad_controllers():
    plant = seed_plant(1.25)

    class NoProtocol:
        pass

    class WrongShape:
        def feedback_matrices(self):
            return np.zeros((2, 3)), np.zeros((0, 2, 2))

    class BadHistory:
        def feedback_matrices(self):
            return np.zeros((2, 2)), np.zeros((1, 2, 3))

    class NaNGain:
        def feedback_matrices(self):
            return np.full((2, 2), np.nan), np.zeros((0, 2, 2))

    with pytest.raises(ParameterError, match="feedback_matrices"):
        spectral_radius(plant, NoProtocol())
    with pytest.raises(DimensionError, match=r"K_x has shape \(2, 3\); expected \(2, 2\)"):
        closed_loop_matrix(plant, WrongShape())
    with pytest.raises(DimensionError, match="K_u has shape"):
        closed_loop_matrix(plant, BadHistory())
    with pytest.raises(NonFiniteError):
        closed_loop_matrix(plant, NaNGain())


def test_delay_mismatch_study_values_and_shape():
    offsets = np.linspace(-0.5, 0.5, 11) * T
    study = delay_mismatch_study(A_C, B_C, T, 1.25 * T, offsets=offsets)
    assert isinstance(study, DelayMismatchStudy)
    assert set(study.spectral_radius) == {"truncated", "exact", "fractional"}
    for curve in study.spectral_radius.values():
        assert curve.shape == (11,)
        assert not curve.flags.writeable
    plant = seed_plant(1.25)
    K = lqr_gain(plant)
    centre = 5
    assert study.spectral_radius["fractional"][centre] == pytest.approx(
        spectral_radius(plant, FractionalDelayController(plant, K)))
    assert study.spectral_radius["truncated"][centre] == pytest.approx(
        spectral_radius(plant, PredictiveController(plant, K)))
    # with the correct estimate the fractional controller is best, and near-optimal nearby
    assert np.argmin(study.spectral_radius["fractional"]) == centre
    assert study.spectral_radius["fractional"][centre] < study.spectral_radius["truncated"][centre]
    json.dumps(study.to_dict())


def test_delay_mismatch_study_matches_manual_construction():
    K = lqr_gain(seed_plant(1.25))
    study = delay_mismatch_study(A_C, B_C, T, 1.25 * T, K, [0.3], controllers=("fractional",))
    model = seed_plant(1.25 + 0.3 / T)
    assert study.spectral_radius["fractional"][0] == pytest.approx(
        spectral_radius(seed_plant(1.25), FractionalDelayController(model, K)))


def test_delay_mismatch_study_errors():
    with pytest.raises(ParameterError, match="delay estimate >= 0"):
        delay_mismatch_study(A_C, B_C, T, 0.2, offsets=[-0.5, 0.0])
    with pytest.raises(ParameterError, match="controllers must be taken from"):
        delay_mismatch_study(A_C, B_C, T, 2.5, offsets=[0.0], controllers=("mpc",))
    with pytest.raises(ParameterError, match="dt must be > 0"):
        delay_mismatch_study(A_C, B_C, 0.0, 2.5, offsets=[0.0])


def test_plot_delay_mismatch_writes_png(tmp_path):
    study = delay_mismatch_study(A_C, B_C, T, 1.25 * T, offsets=np.linspace(-0.4, 0.4, 5))
    path = plot_delay_mismatch(study, tmp_path / "sub" / "mismatch.png")
    assert path.exists()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("seed", range(4))
def test_the_lifted_radius_of_a_long_delay_is_an_upper_estimate(seed):
    # what spectral_radius's Notes say: the rounding of the nilpotent part only raises the
    # computed radius above the exact one (the reduced loop's), and it stays below 1
    from controllers import make_controller

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 4))
    A_c = rng.standard_normal((n, n)) - 0.5 * np.eye(n)
    B_c = rng.standard_normal((n, n)) + 3 * np.eye(n)
    plant = DelayedPlant.from_continuous(
        A_c, B_c, (int(rng.integers(10, 30)) + rng.uniform(0.1, 0.9, n)) * 0.5, 0.5)
    loop = make_controller("fractional", plant, Q=1e6)
    exact = loop.nominal_spectral_radius
    assert exact * (1 - 1e-9) <= spectral_radius(plant, loop) < 1
