"""Tests of controllers.feedback: naive, predictive (eq. 9.13) and fractional (eqs. 9.70-9.75)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from controllers import (
    FractionalDelayController,
    NaiveStateFeedback,
    PredictiveController,
    UnstableLoopWarning,
    closed_loop_matrix,
    lqr_gain,
    reduced_input_matrix,
    spectral_radius,
)
from controllers.errors import SolverError
from dmdidc.discretization import zoh_matrices
from dmdidc.errors import LogarithmError
from dmdidc.model import DelayedPlant
from privacy.errors import DimensionError, NonFiniteError, ParameterError
from tests.seed_example import A_C, B_C, T, seed_plant

FACTORS = (1.0, 1.25, 1.5)


def radius(M: np.ndarray) -> float:
    return float(np.max(np.abs(np.linalg.eigvals(M))))


def nominal_radius(plant: DelayedPlant, K: np.ndarray) -> float:
    return radius(plant.A_d - plant.B_d @ K)


# ------------------------------------------------------------------ independent reference sim
def simulate_piecewise(A_c, B_c, delay, dt, controller, x0, steps):
    """Exact piecewise-constant simulation of x' = A_c x + sum_j b_j u_j(t - r_j), ZOH commands.

    Independent of the controller code: integrates between every input switching instant.
    Returns commands U (steps, m), samples X (steps + 1, n) and ``state_at(t)``.
    """
    n, m = B_c.shape
    delay = np.asarray(delay, dtype=float) * np.ones(m)
    U = np.zeros((steps, m))
    X = [np.asarray(x0, dtype=float)]

    def applied(t: float) -> np.ndarray:
        idx = np.floor((t - delay) / dt + 1e-9).astype(int)
        return np.array([U[k, j] if 0 <= k < steps else 0.0 for j, k in enumerate(idx)])

    def propagate(x, t0, t1):
        marks = {t0, t1}
        for j in range(m):
            for k in range(-1, steps + 2):
                if t0 < k * dt + delay[j] < t1:
                    marks.add(k * dt + delay[j])
        marks = sorted(marks)
        for a, b in zip(marks[:-1], marks[1:], strict=True):
            Phi, Gamma_B = zoh_matrices(A_c, B_c, b - a)
            x = Phi @ x + Gamma_B @ applied(0.5 * (a + b))
        return x

    for k in range(steps):
        U[k] = controller(X[-1])
        X.append(propagate(X[-1], k * dt, (k + 1) * dt))

    def state_at(t: float) -> np.ndarray:
        k = int(np.floor(t / dt + 1e-12))
        return propagate(X[k], k * dt, t)

    return U, np.array(X), state_at


def iterate_feedback_matrices(controller, xs):
    K_x, K_u = controller.feedback_matrices()
    H, m = K_u.shape[0], K_x.shape[0]
    past = [np.zeros(m)] * H
    out = []
    for x in xs:
        u = K_x @ x + sum(K_u[i] @ past[i] for i in range(H))
        past = ([u] + past)[:H]
        out.append(u)
    return np.array(out)


def assert_same_law(first, second, *, atol: float) -> None:
    for a, b in zip(first.feedback_matrices(), second.feedback_matrices(), strict=True):
        np.testing.assert_allclose(a, b, atol=atol)


def char_poly_ratio_ok(M: np.ndarray, N: np.ndarray, rng) -> bool:
    """det(zI - M) == z^(dim M - dim N) det(zI - N) at random points z (robust to nilpotents)."""
    extra = M.shape[0] - N.shape[0]
    for z in rng.normal(size=4) + 1j * rng.normal(size=4):
        lhs = np.linalg.det(z * np.eye(M.shape[0]) - M)
        rhs = z ** extra * np.linalg.det(z * np.eye(N.shape[0]) - N)
        if not np.isclose(lhs, rhs, rtol=1e-8, atol=1e-10):
            return False
    return True


# ------------------------------------------------------------------ seed scenario (Figure 9.1)
@pytest.fixture(scope="module")
def seed_radii():
    table = {}
    for factor in FACTORS:
        plant = seed_plant(factor)
        K = lqr_gain(plant, Q=np.eye(2), R=np.eye(2))
        table[factor] = {
            "nominal": nominal_radius(plant, K),
            "truncated": spectral_radius(plant, PredictiveController(plant, K)),
            "fractional": spectral_radius(plant, FractionalDelayController(plant, K)),
        }
    return table


def test_seed_fractional_stable_at_all_delays(seed_radii):
    for factor in FACTORS:
        row = seed_radii[factor]
        assert row["fractional"] < 1
        assert row["fractional"] == pytest.approx(row["nominal"], rel=1e-6)


def test_seed_truncated_identical_at_1T_slower_at_125T_fails_at_15T(seed_radii):
    assert seed_radii[1.0]["truncated"] == pytest.approx(seed_radii[1.0]["fractional"], rel=1e-9)
    assert seed_radii[1.25]["fractional"] < seed_radii[1.25]["truncated"] < 1
    assert seed_radii[1.5]["truncated"] >= 1


def test_seed_controllers_identical_laws_at_whole_delay():
    plant = seed_plant(1.0)
    K = lqr_gain(plant)
    assert_same_law(PredictiveController(plant, K), FractionalDelayController(plant, K),
                    atol=1e-12)
    exact = PredictiveController(plant, K, prediction="exact").feedback_matrices()
    np.testing.assert_allclose(exact[0], PredictiveController(plant, K).feedback_matrices()[0])


@pytest.mark.parametrize("factor", FACTORS)
def test_fractional_loop_reproduces_eq_9_75(factor):
    plant = seed_plant(factor)
    K = lqr_gain(plant)
    ctrl = FractionalDelayController(plant, K)
    M = closed_loop_matrix(plant, ctrl)
    nominal = plant.A_d - plant.B_d @ K
    assert char_poly_ratio_ok(M, nominal, np.random.default_rng(1))
    eigs = np.linalg.eigvals(M)
    order = np.argsort(-np.abs(eigs))
    np.testing.assert_allclose(np.sort_complex(eigs[order[:2]]),
                               np.sort_complex(np.linalg.eigvals(nominal)), atol=1e-6)
    assert np.all(np.abs(eigs[order[2:]]) < 1e-5)
    np.testing.assert_allclose(ctrl.nominal_closed_loop(), nominal, atol=1e-12)


@pytest.mark.parametrize("factor", FACTORS)
def test_fractional_command_uses_state_at_application_instant(factor):
    """u_k = -K x(kT + r) with the true continuous state (eq. 9.74), checked by simulation."""
    plant = seed_plant(factor)
    K = lqr_gain(plant)
    ctrl = FractionalDelayController(plant, K)
    U, X, state_at = simulate_piecewise(A_C, B_C, factor * T, T, ctrl, [1.0, -0.5], 8)
    for k in range(8):
        np.testing.assert_allclose(U[k], -K @ state_at(k * T + factor * T), atol=1e-10)
    # and x sampled at kT + r follows (A_d - B_d K) exactly (eq. 9.75)
    for k in range(6):
        np.testing.assert_allclose(state_at((k + 1) * T + factor * T),
                                   (plant.A_d - plant.B_d @ K) @ state_at(k * T + factor * T),
                                   atol=1e-10)


def test_truncated_is_eq_9_13():
    plant = seed_plant(1.5)          # w = 1, p = 0.5
    K = lqr_gain(plant)
    ctrl = PredictiveController(plant, K)
    K_x, K_u = ctrl.feedback_matrices()
    np.testing.assert_allclose(K_x, -K @ plant.A_d)
    np.testing.assert_allclose(K_u, (-K @ plant.B_d)[None])   # i = k-1: A_d^0 B_d
    plant3 = DelayedPlant.from_continuous(A_C, B_C, delay=3.25 * T, dt=T)    # w = 3
    K_x, K_u = PredictiveController(plant3, K).feedback_matrices()
    A, B = plant3.A_d, plant3.B_d
    np.testing.assert_allclose(K_x, -K @ A @ A @ A, atol=1e-12)
    np.testing.assert_allclose(K_u, np.stack([-K @ B, -K @ A @ B, -K @ A @ A @ B]), atol=1e-12)


def test_exact_prediction_is_state_w_steps_ahead():
    plant = seed_plant(1.5)
    K = lqr_gain(plant)
    ctrl = PredictiveController(plant, K, prediction="exact")
    rng = np.random.default_rng(3)
    u_past = rng.normal(size=(2, ctrl.history_steps))
    x = rng.normal(size=2)
    ctrl.reset(u_past)
    # x_{k+1} from the plant with issued commands only (u_k does not act before x_{k+2})
    x_next = plant.simulate(x, np.zeros((2, 1)), U_past=u_past)[:, 1]
    np.testing.assert_allclose(ctrl(x), -K @ x_next, atol=1e-12)


@pytest.mark.parametrize("prediction", ["truncated", "exact"])
def test_whole_delay_predictive_loop_is_nominal(prediction):
    plant = DelayedPlant.from_continuous(A_C, B_C, delay=2 * T, dt=T)
    K = lqr_gain(plant)
    M = closed_loop_matrix(plant, PredictiveController(plant, K, prediction=prediction))
    assert char_poly_ratio_ok(M, plant.A_d - plant.B_d @ K, np.random.default_rng(0))


# ------------------------------------------------------------------ protocol and state
@pytest.mark.parametrize("make", [
    lambda p, K: NaiveStateFeedback(p, K),
    lambda p, K: PredictiveController(p, K),
    lambda p, K: PredictiveController(p, K, prediction="exact"),
    lambda p, K: FractionalDelayController(p, K),
    lambda p, K: FractionalDelayController(p, K, reference_delay=1.0),
])
@pytest.mark.parametrize("delay", [1.5 * T, [0.4 * T, 2.7 * T]])
def test_call_sequence_equals_feedback_matrices(make, delay):
    plant = DelayedPlant.from_continuous(A_C, B_C, delay=delay, dt=T)
    K = lqr_gain(plant)
    ctrl = make(plant, K)
    xs = np.random.default_rng(7).normal(size=(12, 2))
    expected = iterate_feedback_matrices(ctrl, xs)
    got = np.array([ctrl(x) for x in xs])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    ctrl.reset()
    np.testing.assert_allclose(np.array([ctrl(x) for x in xs]), expected, rtol=1e-12, atol=1e-12)
    assert ctrl.command_history.shape == (ctrl.history_steps, 2)


def test_reset_with_history_and_feedback_matrices_are_copies():
    plant = seed_plant(1.5)
    ctrl = FractionalDelayController(plant, lqr_gain(plant))
    H = ctrl.history_steps
    u_past = np.arange(2.0 * H).reshape(2, H)      # oldest first
    ctrl.reset(u_past)
    np.testing.assert_allclose(ctrl.command_history, u_past[:, ::-1].T)
    K_x, K_u = ctrl.feedback_matrices()
    x = np.array([0.3, -0.1])
    expected = K_x @ x + sum(K_u[i] @ u_past[:, H - 1 - i] for i in range(H))
    np.testing.assert_allclose(ctrl(x), expected)
    K_x[:] = 0.0
    assert np.any(ctrl.feedback_matrices()[0] != 0)
    with pytest.raises(DimensionError, match=r"u_past has shape \(2, 1\); expected \(2, 2\)"):
        ctrl.reset(np.zeros((2, 1)))


def test_estimator_like_object_accepted():
    plant = seed_plant(1.25)
    K = lqr_gain(plant)
    estimator = SimpleNamespace(model_=plant)
    assert_same_law(FractionalDelayController(estimator, K),
                    FractionalDelayController(plant, K), atol=1e-9)
    assert spectral_radius(estimator, PredictiveController(estimator, K)) == pytest.approx(
        spectral_radius(plant, PredictiveController(plant, K)))


# ------------------------------------------------------------------ naive controller
def test_naive_controller():
    plant = seed_plant(1.25)
    K = lqr_gain(plant)
    for source in (plant, 2, None):
        ctrl = NaiveStateFeedback(source, K)
        K_x, K_u = ctrl.feedback_matrices()
        np.testing.assert_allclose(K_x, -K)
        assert K_u.shape == (0, 2, 2)
        np.testing.assert_allclose(ctrl(np.array([1.0, 2.0])), -K @ [1.0, 2.0])
    assert spectral_radius(plant, NaiveStateFeedback(plant, K)) > 1   # delay-naive fails here
    no_delay = DelayedPlant.from_continuous(A_C, B_C, 0.0, T)
    assert spectral_radius(no_delay, NaiveStateFeedback(no_delay, K)) == pytest.approx(
        nominal_radius(no_delay, K))


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("cls", [NaiveStateFeedback, PredictiveController,
                                 FractionalDelayController])
def test_gain_shape_and_finiteness(cls):
    plant = seed_plant(1.25)
    with pytest.raises(DimensionError, match=r"K has shape \(2, 3\); expected \(2, 2\)"):
        cls(plant, np.ones((2, 3)))
    with pytest.raises(NonFiniteError, match="K contains 1 NaN"):
        cls(plant, np.array([[np.nan, 0.0], [0.0, 1.0]]))
    ctrl = cls(plant, np.eye(2))
    with pytest.raises(DimensionError, match=r"x has shape \(3,\); expected \(2,\)"):
        ctrl(np.ones(3))
    with pytest.raises(NonFiniteError):
        ctrl(np.array([np.inf, 0.0]))


def test_other_errors():
    plant = seed_plant(1.25)
    with pytest.raises(ParameterError, match="prediction must be one of"):
        PredictiveController(plant, np.eye(2), prediction="fractional")
    with pytest.raises(ParameterError, match="model must be a DelayedPlant"):
        PredictiveController(np.eye(2), np.eye(2))
    discrete_only = DelayedPlant(plant.A_d, plant.B_blocks, T)
    with pytest.raises(LogarithmError, match="FractionalDelayController .* needs the "
                                             "continuous-time model"):
        FractionalDelayController(discrete_only, np.eye(2))
    with pytest.raises(ParameterError, match="reference_delay must be >= 0"):
        FractionalDelayController(plant, np.eye(2), reference_delay=-1.0)
    with pytest.raises(ParameterError, match="number of inputs >= 1"):
        NaiveStateFeedback(0, np.eye(2))


def test_truncated_without_continuous_model_uses_first_nonzero_block():
    plant = seed_plant(1.25)
    discrete_only = DelayedPlant(plant.A_d, plant.B_blocks, T)
    K = lqr_gain(plant)
    assert_same_law(PredictiveController(discrete_only, K),
                    PredictiveController(plant, K), atol=1e-9)


# ------------------------------------------------------------------ per-channel delays
def test_per_channel_commands_use_each_channels_application_instant():
    rng = np.random.default_rng(11)
    A_c, B_c = 0.3 * rng.normal(size=(4, 4)), rng.normal(size=(4, 2))
    delay = np.array([3.39, 1.69])
    plant = DelayedPlant.from_continuous(A_c, B_c, delay, 1.0)
    K = lqr_gain(plant)
    ctrl = FractionalDelayController(plant, K)
    U, _, state_at = simulate_piecewise(A_c, B_c, delay, 1.0, ctrl, rng.normal(size=4), 14)
    for k in range(10):
        for j in range(2):
            assert U[k, j] == pytest.approx(-K[j] @ state_at(k + delay[j]), abs=1e-9)


def test_per_channel_loop_equals_staggered_sampling_loop():
    rng = np.random.default_rng(5)
    checked = 0
    while checked < 15:
        n, m = int(rng.integers(2, 5)), int(rng.integers(2, 4))
        A_c, B_c = 0.5 * rng.normal(size=(n, n)), rng.normal(size=(n, m))
        delay = rng.uniform(0.0, 3.0, size=m)
        plant = DelayedPlant.from_continuous(A_c, B_c, delay, 1.0)
        try:
            K = lqr_gain(plant)
        except SolverError:
            continue
        ctrl = FractionalDelayController(plant, K)
        assert char_poly_ratio_ok(closed_loop_matrix(plant, ctrl), ctrl.nominal_closed_loop(),
                                  rng)
        checked += 1


def test_delays_differing_by_whole_periods_give_nominal_loop():
    plant = DelayedPlant.from_continuous(A_C, B_C, delay=[1.3 * T, 3.3 * T], dt=T)
    K = lqr_gain(plant)
    ctrl = FractionalDelayController(plant, K)
    assert char_poly_ratio_ok(closed_loop_matrix(plant, ctrl), plant.A_d - plant.B_d @ K,
                              np.random.default_rng(2))


def test_reference_mode_gives_reduced_loop_and_common_delay_reduces_to_eq_9_74():
    rng = np.random.default_rng(8)
    A_c, B_c = 0.4 * rng.normal(size=(3, 3)), rng.normal(size=(3, 2))
    plant = DelayedPlant.from_continuous(A_c, B_c, [0.7, 2.45], 1.0)
    B_eff = reduced_input_matrix(plant, 1.5)
    K = lqr_gain(plant.A_d, B_eff)
    ctrl = FractionalDelayController(plant, K, reference_delay=1.5)
    assert char_poly_ratio_ok(closed_loop_matrix(plant, ctrl), plant.A_d - B_eff @ K, rng)
    np.testing.assert_allclose(ctrl.nominal_closed_loop(), plant.A_d - B_eff @ K)
    common = DelayedPlant.from_continuous(A_c, B_c, 1.7, 1.0)
    np.testing.assert_allclose(reduced_input_matrix(common), common.B_d, atol=1e-12)
    K = lqr_gain(common)
    assert_same_law(FractionalDelayController(common, K, reference_delay=1.7),
                    FractionalDelayController(common, K), atol=1e-12)


def test_truncated_per_channel_uses_each_channels_whole_delay():
    plant = DelayedPlant.from_continuous(A_C, B_C, delay=[1.0 * T, 3.0 * T], dt=T)  # w = 1, 3
    K = lqr_gain(plant)
    A, b = plant.A_d, plant.B_d
    B_eff = np.stack([A @ A @ b[:, 0], b[:, 1]], axis=1)          # A^{W - w_j} b_j, W = 3
    ctrl = PredictiveController(plant, K)
    assert char_poly_ratio_ok(closed_loop_matrix(plant, ctrl), A - B_eff @ K,
                              np.random.default_rng(4))


def test_fractional_stabilizes_random_multi_delay_plants_where_truncated_fails():
    """Exact lifted spectral radius on random plants with distinct per-channel delays."""
    rng = np.random.default_rng(2024)
    frac_stable = trunc_stable = both_fail_frac = total = 0
    while total < 60:
        n, m = int(rng.integers(2, 5)), int(rng.integers(2, 4))
        A_c, B_c = 0.5 * rng.normal(size=(n, n)), rng.normal(size=(n, m))
        delay = 1.0 + rng.uniform(0.0, 1.0, size=m)
        plant = DelayedPlant.from_continuous(A_c, B_c, delay, 1.0)
        try:
            K = lqr_gain(plant)
        except SolverError:
            continue
        total += 1
        frac = spectral_radius(plant, FractionalDelayController(plant, K)) < 1
        trunc = spectral_radius(plant, PredictiveController(plant, K)) < 1
        frac_stable += frac
        trunc_stable += trunc
        both_fail_frac += trunc and not frac
    assert frac_stable >= 0.9 * total
    assert trunc_stable <= 0.6 * total
    assert both_fail_frac == 0


# ------------------------------------------------------------------ property: eq. (9.75)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4), m=st.integers(1, 3),
       delay_periods=st.floats(0.0, 3.5), dt=st.floats(0.1, 2.0))
def test_property_fractional_loop_has_the_nominal_eigenvalues(seed, n, m, delay_periods, dt):
    rng = np.random.default_rng(seed)
    A_c, B_c = rng.normal(size=(n, n)) / dt, rng.normal(size=(n, m))
    plant = DelayedPlant.from_continuous(A_c, B_c, delay_periods * dt, dt)
    try:
        K = lqr_gain(plant)
    except SolverError:
        assume(False)
    # Eq. (9.75): the lifted loop has the eigenvalues of A_d - B_d K and otherwise zeros.
    # Computed eigenvalues of the nilpotent part move by ~(eps ||M||)^(1/size) and more with
    # the large gains of fast unstable plants, where they mix with small nominal ones (seed
    # 780668, n = m = 1, r = 3 T: radius 0.0374 vs 0.0365), so the spectra are compared through
    # the characteristic polynomials, det(zI - M) = z^k det(zI - N), on a circle beyond the
    # spectrum (no cancellation there; an eigenvalue off by d changes the ratio by ~d / |z|).
    # The determinants themselves carry rounding of ~10 eps per entry (seed 1552, n = m = 1,
    # r = 1e-12 T, T = 2: 1.6e-12), so the bound is 1e-10, far below a wrong eigenvalue's.
    M = closed_loop_matrix(plant, FractionalDelayController(plant, K))
    N = plant.A_d - plant.B_d @ K
    extra = M.shape[0] - N.shape[0]
    rho = 2.0 * max(1.0, np.linalg.norm(M, 2))
    for z in rho * np.exp(2j * np.pi * rng.uniform(size=4)):
        lhs = np.linalg.det(z * np.eye(M.shape[0]) - M)
        rhs = z ** extra * np.linalg.det(z * np.eye(N.shape[0]) - N)
        assert abs(lhs - rhs) <= 1e-10 * abs(rhs)
    if np.linalg.norm(M, 2) < 100:       # well scaled: the radius itself is accurate
        got = spectral_radius(plant, FractionalDelayController(plant, K))
        assert got == pytest.approx(nominal_radius(plant, K), rel=1e-6, abs=1e-4)


# ------------------------------------------------------------------ literal eqs. (9.71)-(9.73)
@pytest.mark.parametrize("factor", [1.25, 1.5, 2.75])
def test_common_delay_law_is_literal_eq_9_73(factor):
    """x(kT + r) = A_d^(p) x_{k+w} + B_d^(p) u_{k-1}, x_{k+w} from w multi-block steps."""
    plant = seed_plant(factor)
    w, p = int(plant.delay_steps[0]), float(plant.delay_fraction[0])
    K = lqr_gain(plant)
    ctrl = FractionalDelayController(plant, K)
    rng = np.random.default_rng(9)
    u_past = rng.normal(size=(2, plant.max_delay))      # u_{k-R} .. u_{k-1}
    x = rng.normal(size=2)
    ctrl.reset(u_past[:, plant.max_delay - ctrl.history_steps:])
    x_kw = plant.simulate(x, np.zeros((2, w)), U_past=u_past)[:, w]   # no u_k.. acts before
    A_p, B_p = zoh_matrices(A_C, B_C, p * T)                         # eqs. (9.71), (9.72)
    x_r = A_p @ x_kw + B_p @ u_past[:, -1]                           # eq. (9.73)
    np.testing.assert_allclose(ctrl(x), -K @ x_r, atol=1e-10)        # eq. (9.74)


def test_fitted_dmdidc_estimator_end_to_end():
    from dmdidc import DMDidc

    true_plant = DelayedPlant.from_continuous(A_C, B_C, 1.5 * T, T, max_delay=4)
    U = np.random.default_rng(0).normal(size=(2, 60))
    X = true_plant.simulate(np.zeros(2), U)
    estimator = DMDidc(max_delay=4).fit(X, U, dt=T)
    K = lqr_gain(estimator)
    assert spectral_radius(true_plant, FractionalDelayController(estimator, K)) < 0.2
    assert spectral_radius(true_plant, PredictiveController(estimator, K)) > 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4), m=st.integers(1, 3),
       dt=st.floats(0.2, 2.0))
def test_property_per_channel_loop_is_staggered_sampling_loop(seed, n, m, dt):
    rng = np.random.default_rng(seed)
    A_c, B_c = 0.5 * rng.normal(size=(n, n)) / dt, rng.normal(size=(n, m))
    delay = rng.uniform(0.0, 2.5, size=m) * dt
    plant = DelayedPlant.from_continuous(A_c, B_c, delay, dt)
    try:
        K = lqr_gain(plant)
    except SolverError:
        assume(False)
    ctrl = FractionalDelayController(plant, K)
    lifted = radius(closed_loop_matrix(plant, ctrl))
    assert lifted == pytest.approx(radius(ctrl.nominal_closed_loop()), rel=1e-6, abs=1e-4)


# ------------------------------------------------------------------ the nominal loop check
def test_unstable_nominal_loops_warn_naming_the_check_and_the_remedies():
    """Right or loud: a controller whose loop on its own exact model diverges warns at
    construction, attributed to the caller's line (the README plant, per-channel delays)."""
    unequal = DelayedPlant.from_continuous(A_C, B_C, delay=[2.0, 2.9], dt=T)
    with pytest.warns(UnstableLoopWarning) as caught:
        ctrl = FractionalDelayController(unequal, lqr_gain(unequal))
    text = str(caught[0].message)
    assert caught[0].filename == __file__
    for part in ("nominal loop check failed", "spectral radius 1.18", "fractions differ",
                 "reference_delay=r", "reduced_input_matrix", "DelayedMPC"):
        assert part in text, part
    assert ctrl.nominal_spectral_radius == pytest.approx(spectral_radius(unequal, ctrl),
                                                         rel=1e-8)
    with pytest.warns(UnstableLoopWarning, match=r"K was not designed for it: design K on "
                                                 r"\(A_d, B_eff\)"):
        FractionalDelayController(unequal, 3.0 * lqr_gain(unequal), reference_delay=2.9)
    whole = DelayedPlant.from_continuous(A_C, B_C, delay=[2.0, 4.0], dt=T)
    for prediction in ("exact", "truncated"):
        with pytest.warns(UnstableLoopWarning, match=r"radius 1.9.*whole delays that differ "
                                                     r"between channels \(\[1, 2\] periods\)"
                                                     r".*whole_delay_input_matrix"):
            PredictiveController(whole, lqr_gain(whole), prediction=prediction)
    with pytest.warns(UnstableLoopWarning, match=r"predicts whole periods only.*"
                                                 r"make_controller\('fractional', model\)"):
        PredictiveController(seed_plant(1.5), lqr_gain(seed_plant(1.5)))   # Figure 9.1
    with pytest.warns(UnstableLoopWarning, match="ignores the model's delays"):
        NaiveStateFeedback(seed_plant(1.5), lqr_gain(seed_plant(1.5)))


def test_stable_nominal_loops_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnstableLoopWarning)
        for factor in FACTORS:
            plant = seed_plant(factor)
            ctrl = FractionalDelayController(plant, lqr_gain(plant))
            assert ctrl.nominal_spectral_radius == pytest.approx(
                nominal_radius(plant, ctrl.K), rel=1e-8)
        ctrl = PredictiveController(seed_plant(1.0), lqr_gain(seed_plant(1.0)))
        assert ctrl.nominal_spectral_radius < 1
        assert NaiveStateFeedback(None, [[1.0, 2.0]]).nominal_spectral_radius is None


def test_with_model_warns_when_the_kept_gain_fails_on_the_new_model():
    old = DelayedPlant.from_continuous(A_C, B_C, delay=2.0, dt=T, max_delay=3)
    new = DelayedPlant.from_continuous(A_C, B_C, delay=[2.0, 4.0], dt=T, max_delay=3)
    ctrl = PredictiveController(old, lqr_gain(old), prediction="exact")
    with pytest.warns(UnstableLoopWarning, match="whole delays that differ"):
        ctrl.with_model(new)


def test_lifted_loops_beyond_the_check_size_are_not_checked():
    """A 250-period delay with two inputs: the lifted loop has 504 states, beyond
    NOMINAL_CHECK_SIZE; its eigenvalue call (~0.3 s) is not made at construction, the radius is
    None, and spectral_radius() still gives it on request."""
    from controllers.feedback import NOMINAL_CHECK_SIZE

    plant = DelayedPlant.from_continuous(A_C, B_C, delay=[250 * T, 250.5 * T], dt=T)
    assert plant.n_states + plant.n_inputs * plant.max_delay > NOMINAL_CHECK_SIZE
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnstableLoopWarning)
        naive = NaiveStateFeedback(plant, lqr_gain(plant))
        truncated = PredictiveController(plant, lqr_gain(plant))
    assert naive.nominal_spectral_radius is None and truncated.nominal_spectral_radius is None
    assert spectral_radius(plant, naive) > 1          # what the check would have said
    fractional = FractionalDelayController(plant, lqr_gain(plant))   # (n + m) states: checked
    assert fractional.nominal_spectral_radius is not None
