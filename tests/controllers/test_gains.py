"""Tests of controllers.gains: LQR and pole-placement design on the delay-free pair (A_d, B_d)."""

from __future__ import annotations

from types import SimpleNamespace

import control
import numpy as np
import pytest

from controllers import is_schur, lqr_gain, place_gain
from dmdidc.model import DelayedPlant
from privacy.errors import DimensionError, NonFiniteError, ParameterError
from tests.seed_example import A_C, B_C, T, seed_plant


@pytest.fixture(scope="module")
def plant() -> DelayedPlant:
    return seed_plant(1.25)


def radius(M: np.ndarray) -> float:
    return float(np.max(np.abs(np.linalg.eigvals(M))))


def test_seed_discretization_matches_eq_9_77(plant):
    np.testing.assert_allclose(plant.A_d, [[-0.589, 0.809], [-0.809, -0.589]], atol=2e-3)
    np.testing.assert_allclose(plant.B_d, [[-0.709, 2.153], [-2.179, 2.914]], atol=2e-3)


def test_lqr_equals_control_dlqr_on_the_delay_free_pair(plant):
    K = lqr_gain(plant)
    K_ref, _, _ = control.dlqr(plant.A_d, plant.B_d, np.eye(2), np.eye(2))
    np.testing.assert_allclose(K, K_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lqr_gain(plant.A_d, plant.B_d), K_ref, rtol=1e-12, atol=1e-12)
    assert radius(plant.A_d - plant.B_d @ K) < 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lqr_gain_is_the_riccati_gain_computed_independently(seed):
    # Independent of python-control: scipy's DARE solution P gives K = (R + B'PB)^-1 B'PA, and
    # K is optimal: the closed-loop cost x0' P x0 equals the sum of the stage costs.
    import scipy.linalg

    rng = np.random.default_rng(seed)
    n, m = 3, 2
    A = rng.standard_normal((n, n))
    B = rng.standard_normal((n, m))
    Q = np.diag(rng.uniform(0.5, 2.0, n))
    R = np.diag(rng.uniform(0.5, 2.0, m))
    P = scipy.linalg.solve_discrete_are(A, B, Q, R)
    K_ref = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
    K = lqr_gain(A, B, Q=Q, R=R)
    np.testing.assert_allclose(K, K_ref, rtol=1e-8, atol=1e-10)
    x = x0 = rng.standard_normal(n)
    cost = 0.0
    for _ in range(2000):
        u = -K @ x
        cost += x @ Q @ x + u @ R @ u
        x = A @ x + B @ u
    assert cost == pytest.approx(x0 @ P @ x0, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_place_gain_places_the_poles_of_a_multi_input_pair(seed):
    # Checked by the characteristic polynomial of A - B K, not against control.place itself.
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((4, 4))
    B = rng.standard_normal((4, 2))
    poles = np.array([0.5, -0.3, 0.1 + 0.2j, 0.1 - 0.2j])
    K = place_gain(A, B, poles=poles)
    np.testing.assert_allclose(np.poly(A - B @ K), np.poly(poles).real, atol=1e-9)


def test_lqr_with_weights_and_scalar_weights(plant):
    Q, R = np.diag([2.0, 0.5]), np.array([[3.0, 0.5], [0.5, 1.0]])
    K_ref, _, _ = control.dlqr(plant.A_d, plant.B_d, Q, R)
    np.testing.assert_allclose(lqr_gain(plant, Q=Q, R=R), K_ref, rtol=1e-10, atol=1e-12)
    K_ref2, _, _ = control.dlqr(plant.A_d, plant.B_d, 2 * np.eye(2), 0.5 * np.eye(2))
    np.testing.assert_allclose(lqr_gain(plant, Q=2.0, R=0.5), K_ref2, rtol=1e-10)


def test_design_on_per_channel_plant_uses_sum_of_blocks():
    plant = DelayedPlant.from_continuous(A_C, B_C, delay=[2.0, 3.3], dt=T)
    np.testing.assert_allclose(plant.B_d, plant.B_blocks.sum(axis=0))
    K_ref, _, _ = control.dlqr(plant.A_d, plant.B_d, np.eye(2), np.eye(2))
    np.testing.assert_allclose(lqr_gain(plant), K_ref, rtol=1e-12, atol=1e-12)


def test_fitted_estimator_is_accepted(plant):
    estimator = SimpleNamespace(model_=plant)
    np.testing.assert_allclose(lqr_gain(estimator), lqr_gain(plant))
    poles = [0.3, -0.2]
    np.testing.assert_allclose(place_gain(estimator, poles=poles), place_gain(plant, poles=poles))


def test_lqr_single_input_with_vector_B():
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    K = lqr_gain(A, np.array([0.0, 0.1]))
    assert K.shape == (1, 2)
    assert radius(A - np.array([[0.0], [0.1]]) @ K) < 1


@pytest.mark.parametrize("Q, R, error, match", [
    (np.array([[1.0, 0.5], [0.0, 1.0]]), None, ParameterError, "Q must be symmetric"),
    (np.diag([1.0, -1.0]), None, ParameterError, "positive semidefinite"),
    (None, np.diag([1.0, 0.0]), ParameterError, "R must be symmetric positive definite"),
    (np.eye(3), None, DimensionError, r"Q has shape \(3, 3\); expected .*\(2, 2\)"),
    (None, np.eye(1), DimensionError, "R has shape"),
    (np.array([[np.nan, 0.0], [0.0, 1.0]]), None, NonFiniteError, "Q contains 1 NaN"),
])
def test_weight_validation(plant, Q, R, error, match):
    with pytest.raises(error, match=match):
        lqr_gain(plant, Q=Q, R=R)


def test_matrix_validation():
    with pytest.raises(DimensionError, match="A_d must be square"):
        lqr_gain(np.ones((2, 3)), np.ones((2, 1)))
    with pytest.raises(DimensionError, match=r"B has shape \(3, 1\); expected \(2, m\)"):
        lqr_gain(np.eye(2), np.ones((3, 1)))
    with pytest.raises(NonFiniteError, match="A_d contains"):
        lqr_gain(np.array([[np.inf, 0.0], [0.0, 1.0]]), np.ones((2, 1)))
    with pytest.raises(ParameterError, match="B must be omitted"):
        lqr_gain(DelayedPlant.from_continuous(A_C, B_C, 0.0, T), np.eye(2))
    with pytest.raises(ParameterError, match="model_or_A must be a DelayedPlant"):
        lqr_gain(np.eye(2))


def test_unstabilizable_pair_is_refused_as_bad_input():
    A = np.diag([2.0, 0.5])
    B = np.array([[0.0], [1.0]])  # the unstable mode is not reachable
    with pytest.raises(ParameterError, match="not stabilizable: its mode 2"):
        lqr_gain(A, B)


def test_place_gain_places_poles(plant):
    poles = np.array([0.2 + 0.1j, 0.2 - 0.1j])
    K = place_gain(plant, poles=poles)
    np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(plant.A_d - plant.B_d @ K)),
                               np.sort_complex(poles), atol=1e-10)
    K_ref = control.place(plant.A_d, plant.B_d, poles)
    np.testing.assert_allclose(K, K_ref, atol=1e-12)


def test_place_gain_errors(plant):
    with pytest.raises(ParameterError, match="strictly inside the unit circle"):
        place_gain(plant, poles=[1.0, 0.5])
    with pytest.raises(DimensionError, match=r"poles has shape \(3,\); expected \(2,\)"):
        place_gain(plant, poles=[0.1, 0.2, 0.3])
    with pytest.raises(ParameterError, match="conjugate pairs"):
        place_gain(plant, poles=[0.1 + 0.1j, 0.2])
    with pytest.raises(NonFiniteError):
        place_gain(plant, poles=[np.nan, 0.2])
    with pytest.raises(ParameterError, match="cannot be placed"):
        place_gain(np.eye(2), np.array([[1.0], [0.0]]), poles=[0.5, 0.5])


def test_is_schur():
    assert is_schur(np.diag([0.5, -0.99]))
    assert not is_schur(np.diag([0.5, 1.0]))
    assert is_schur(np.zeros((0, 0)))


# ------------------------------------------------------------------ output models
def _output_model(rng, n, m, sensors):
    """A stand-in for a fitted output model: ``model_`` and a measurement matrix ``C``."""
    A_c = rng.standard_normal((n, n)) * 0.8
    A_c -= (np.linalg.eigvals(A_c).real.max() - 0.1) * np.eye(n)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)),
                                         rng.uniform(0.1, 1.5, m), 0.5)
    return SimpleNamespace(model_=plant, C=rng.standard_normal((sensors, n)))


def _in_basis(model, T):
    """The same model in the state basis ``x' = T x``."""
    plant, Ti = model.model_, np.linalg.inv(T)
    moved = DelayedPlant.from_continuous(T @ plant.A_c @ Ti, T @ plant.B_c, plant.delay,
                                         plant.dt)
    return SimpleNamespace(model_=moved, C=model.C @ Ti)


@pytest.mark.parametrize("seed", range(6))
def test_output_models_weigh_their_outputs_by_default_in_any_basis(seed):
    """Review finding: lqr_gain's default Q = I weighed an output model's canonical variates,
    so the design depended on the basis (cost 22.1 against 12.4 with C^T C).  The default is
    now output_weight(C) = C^T C + 1e-6 ||C||^2 I, and the loop's eigenvalues are the same in
    any basis (up to the ridge's effect), which the identity's are not."""
    from controllers.gains import output_weight

    rng = np.random.default_rng(seed)
    n, m, sensors = int(rng.integers(2, 5)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    model = _output_model(rng, n, m, sensors)
    np.testing.assert_allclose(lqr_gain(model), lqr_gain(model, Q=output_weight(model.C)),
                               rtol=1e-12, atol=1e-12)
    Q = output_weight(model.C)
    scale = np.linalg.norm(model.C, 2) ** 2
    np.testing.assert_allclose(Q, model.C.T @ model.C + 1e-6 * scale * np.eye(n), rtol=1e-12,
                               atol=1e-14 * scale)
    # a well-conditioned change of basis with scales 0.1 .. 10
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    T = U @ np.diag(np.geomspace(0.1, 10.0, n))
    moved = _in_basis(model, T)

    def char_poly(mdl, K):
        plant = mdl.model_
        return np.poly(plant.A_d - plant.B_d @ K)

    # the ridge (I in each basis) moves the coefficients by up to ~7e-3 on such plants; the
    # identity weight moves them by 0.1 .. 0.6
    same = np.abs(char_poly(model, lqr_gain(model)) - char_poly(moved, lqr_gain(moved)))
    other = np.abs(char_poly(model, lqr_gain(model.model_))
                   - char_poly(moved, lqr_gain(moved.model_)))
    assert same.max() < 0.02 < 0.05 < other.max()
    # the plant alone (no C) keeps the identity default
    np.testing.assert_allclose(lqr_gain(model.model_), lqr_gain(model.model_, Q=np.eye(n)),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("B_c", [[[0.0], [0.0]], [[0.0], [1.0]]])
def test_an_unstabilizable_plant_is_refused_naming_the_mode(B_c):
    """Trial: B = 0 raised a SolverError from inside the Riccati solver."""
    from controllers import make_controller

    plant = DelayedPlant.from_continuous([[0.5, 0.0], [0.0, -1.0]], B_c, 1.3, 0.5)
    with pytest.raises(ParameterError, match=r"not stabilizable: its mode 1\.28"):
        make_controller("fractional", plant)
    # the same plant with the unstable mode reached is designed
    reached = DelayedPlant.from_continuous([[0.5, 0.0], [0.0, -1.0]], [[1.0], [1.0]], 1.3, 0.5)
    make_controller("fractional", reached)
