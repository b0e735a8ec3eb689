"""Tests of controllers.mpc.DelayedMPC (seed plant of dissertation section 9.5, delay 1.5 T)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from controllers.errors import SolverError
from controllers.mpc import INPUT_BOUND_TOLERANCE, DelayedMPC, MPCResult
from dmdidc import DMDidc
from dmdidc.model import DelayedPlant
from privacy.errors import DimensionError, NonFiniteError, ParameterError
from tests.seed_example import A_C, B_C, T, seed_plant

SOLVERS = ["DAQP", "OSQP", "CLARABEL", "CVXPY"]


@pytest.fixture(scope="module")
def plant() -> DelayedPlant:
    return seed_plant(1.5)


def true_step(plant: DelayedPlant, x: np.ndarray, u_now: np.ndarray,
              past: np.ndarray) -> np.ndarray:
    """x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j}; ``past`` is u_{k-R} .. u_{k-1} (oldest first)."""
    R = plant.max_delay
    x_next = plant.A_d @ x + plant.B_blocks[0] @ u_now
    for j in range(1, R + 1):
        x_next = x_next + plant.B_blocks[j] @ past[:, R - j]
    return x_next


def closed_loop(plant: DelayedPlant, mpc: DelayedMPC, x0: np.ndarray, steps: int):
    x, past = np.asarray(x0, float), np.zeros((plant.n_inputs, plant.max_delay))
    X, U = [x], []
    for _ in range(steps):
        u = mpc(x)
        x = true_step(plant, x, u, past)
        past = np.concatenate([past[:, 1:], u[:, None]], axis=1)
        X.append(x)
        U.append(u)
    return np.array(X).T, np.array(U).T


def lifted_reduced(plant: DelayedPlant, w: int):
    return DelayedPlant(plant.A_d, plant.B_blocks[w:], plant.dt).lifted_matrices()


def fixed_state(plant: DelayedPlant, x: np.ndarray, history: np.ndarray, w: int) -> np.ndarray:
    """x_{k+w}: only committed inputs act before x_{k+w+1}."""
    for t in range(w):
        past = np.concatenate([history[:, t:], np.zeros((plant.n_inputs, t))], axis=1)
        x = true_step(plant, x, np.zeros(plant.n_inputs), past)
    return x


def finite_horizon_lq(F, G, Q_lift, R, P, zeta0, N):
    """Closed-form minimizer of sum_{i=1}^{N-1} z_i'Qz_i + z_N'Pz_N + sum u_i'Ru_i (batch)."""
    size, m = G.shape
    H = np.kron(np.eye(N), R)
    f = np.zeros(N * m)
    for i in range(1, N + 1):
        W = P if i == N else Q_lift
        Gamma = np.zeros((size, N * m))
        for col in range(i):
            Gamma[:, col * m:(col + 1) * m] = np.linalg.matrix_power(F, i - 1 - col) @ G
        H += Gamma.T @ W @ Gamma
        f += Gamma.T @ W @ np.linalg.matrix_power(F, i) @ zeta0
    return np.linalg.solve(H, -f).reshape(N, m).T


def zeta(plant, x, history, w):
    R = plant.max_delay
    newest_first = [history[:, R - i] for i in range(1, R - w + 1)]
    return np.concatenate([fixed_state(plant, x, history, w), *newest_first])


# ---------------------------------------------------------------------- structure
def test_dead_steps_shapes_and_fixed_states(plant):
    mpc = DelayedMPC(plant, horizon=6)
    assert plant.max_delay == 2 and mpc.dead_steps == 1
    x, hist = np.array([0.3, -0.2]), np.array([[0.1, -0.4], [0.2, 0.5]])
    result = mpc.solve(x, hist)
    assert isinstance(result, MPCResult)
    assert result.inputs.shape == (2, 6) and result.states.shape == (2, 1 + 6 + 1)
    assert result.dead_steps == 1 and result.solver == "DAQP"   # "auto" on a small QP
    assert result.status == "optimal" and result.success
    assert np.isfinite(result.cost) and result.solve_time > 0
    assert result.iterations is None or result.iterations >= 0
    # the first w + 1 predicted states are fixed by x_k and the committed inputs
    np.testing.assert_allclose(result.states[:, 0], x)
    np.testing.assert_allclose(result.states[:, 1], fixed_state(plant, x, hist, 1), atol=1e-8)
    # the whole prediction is the plant's response to history + decisions
    # (u_{k+6} cannot act on x_{k+7}: B^(0) = 0, so a zero column stands in for it)
    X = plant.simulate(x, np.hstack([result.inputs, np.zeros((2, 1))]), hist)
    np.testing.assert_allclose(result.states, X, atol=1e-7)


def test_result_is_immutable(plant):
    result = DelayedMPC(plant, horizon=3).solve(np.ones(2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.cost = 0.0
    with pytest.raises(ValueError):
        result.inputs[0, 0] = 1.0
    first = result.first_input
    first[0] = 99.0
    assert result.inputs[0, 0] != 99.0


@pytest.mark.parametrize("solver", ["CVXPY", "DAQP"])
def test_dpp_and_problem_built_once(plant, solver):
    mpc = DelayedMPC(plant, horizon=8, u_min=-1, u_max=1, x_min=-10, x_max=10, solver=solver)
    problem = mpc.problem
    assert problem.is_dcp(dpp=True)
    assert {p.name() for p in problem.parameters()} == {"x_k", "u_history"}
    mpc(np.array([1.0, 0.5]))
    mpc(np.array([0.5, 0.2]))
    assert mpc.problem is problem
    assert mpc.problem.parameters()[0] is problem.parameters()[0]
    mpc.reset()
    mpc(np.array([1.0, 0.5]))
    assert mpc.problem is problem


@pytest.mark.parametrize("solver", ["OSQP", "DAQP"])
def test_warm_start_saves_iterations(plant, solver):
    x = np.array([1.0, 0.5])
    cold = DelayedMPC(plant, horizon=10, u_min=-1, u_max=1, solver=solver, warm_start=False)
    warm = DelayedMPC(plant, horizon=10, u_min=-1, u_max=1, solver=solver, warm_start=True)
    for mpc in (cold, warm):
        mpc.solve(x)
    r_cold, r_warm = cold.solve(x * 0.9), warm.solve(x * 0.9)
    np.testing.assert_allclose(r_cold.inputs, r_warm.inputs, atol=1e-6)
    assert r_warm.iterations <= r_cold.iterations


# ---------------------------------------------------------------------- closed loop
@pytest.mark.parametrize("solver", SOLVERS)
def test_closed_loop_respects_input_bounds_and_converges(plant, solver):
    mpc = DelayedMPC(plant, horizon=10, u_min=-1.0, u_max=1.0, solver=solver)
    X, U = closed_loop(plant, mpc, np.array([6.0, -4.0]), steps=40)
    assert np.max(np.abs(U)) <= 1.0 + INPUT_BOUND_TOLERANCE  # never violated ...
    assert np.max(np.abs(U)) >= 1.0 - 1e-6  # ... although the bounds were active
    assert np.linalg.norm(X[:, -1]) < 1e-3
    assert np.all(np.isfinite(U))


def test_history_shift_reset_and_functional_solve(plant):
    mpc = DelayedMPC(plant, horizon=5, u_min=-1, u_max=1)
    x = np.array([0.4, -0.3])
    u0 = mpc(x)
    np.testing.assert_allclose(mpc.history[:, -1], u0)
    np.testing.assert_allclose(mpc.history[:, 0], 0.0)
    assert mpc.last_result is not None
    before = mpc.history
    mpc.solve(x, np.ones((2, 2)) * 0.1)  # functional: history untouched
    np.testing.assert_array_equal(mpc.history, before)
    mpc.reset()
    assert mpc.last_result is None and np.all(mpc.history == 0)
    np.testing.assert_allclose(mpc(x), u0, atol=1e-7)
    mpc.reset(u_history=np.full((2, 2), 0.5))
    np.testing.assert_array_equal(mpc.history, 0.5)


# ---------------------------------------------------------------------- optimality
@pytest.mark.parametrize("solver", SOLVERS)
def test_unconstrained_first_move_is_infinite_horizon_lq(plant, solver):
    """Default P is the lifted DARE: with no active constraint u_k = -K z_k (exactly)."""
    import scipy.linalg

    Q, R = np.diag([2.0, 1.0]), np.diag([0.5, 1.5])
    mpc = DelayedMPC(plant, horizon=7, Q=Q, R=R, u_min=-1e3, u_max=1e3, solver=solver)
    F, G = lifted_reduced(plant, 1)
    Q_lift = np.zeros_like(F)
    Q_lift[:2, :2] = Q
    P = scipy.linalg.solve_discrete_are(F, G, Q_lift, R)
    np.testing.assert_allclose(mpc.terminal_weight, P, atol=1e-9)
    K = np.linalg.solve(R + G.T @ P @ G, G.T @ P @ F)
    x, hist = np.array([0.7, -0.4]), np.array([[0.2, -0.1], [0.3, 0.05]])
    result = mpc.solve(x, hist)
    np.testing.assert_allclose(result.first_input, -K @ zeta(plant, x, hist, 1), atol=1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_unconstrained_matches_closed_form_finite_horizon_lq(plant, solver):
    N, Q, R = 6, np.eye(2), np.array([[1.0, 0.2], [0.2, 0.8]])
    P_x = np.array([[3.0, 0.5], [0.5, 1.0]])
    mpc = DelayedMPC(plant, horizon=N, Q=Q, R=R, P=P_x, u_min=-100, u_max=100, solver=solver)
    F, G = lifted_reduced(plant, 1)
    Q_lift, P_lift = np.zeros_like(F), np.zeros_like(F)
    Q_lift[:2, :2], P_lift[:2, :2] = Q, P_x
    x, hist = np.array([-0.5, 0.9]), np.array([[0.3, -0.2], [0.1, 0.4]])
    expected = finite_horizon_lq(F, G, Q_lift, R, P_lift, zeta(plant, x, hist, 1), N)
    result = mpc.solve(x, hist)
    np.testing.assert_allclose(result.inputs, expected, atol=1e-6)


@pytest.mark.parametrize("solver", ["DAQP", "OSQP", "CLARABEL"])
def test_solvers_agree_with_active_constraints(plant, solver):
    kwargs = dict(horizon=10, u_min=[-1.0, -0.5], u_max=[1.0, 0.5], x_min=-3, x_max=3)
    x, hist = np.array([2.0, -1.5]), np.array([[0.5, -0.5], [0.2, 0.1]])
    a = DelayedMPC(plant, solver="CVXPY", **kwargs).solve(x, hist)
    b = DelayedMPC(plant, solver=solver, **kwargs).solve(x, hist)
    assert np.any(np.isclose(np.abs(a.inputs), [[1.0], [0.5]], atol=1e-6))  # active bounds
    np.testing.assert_allclose(a.inputs, b.inputs, atol=1e-5)
    np.testing.assert_allclose(a.cost, b.cost, rtol=1e-6)
    np.testing.assert_allclose(a.states, b.states, atol=1e-5)


def test_no_delay_plant_and_distinct_channel_delays():
    p0 = DelayedPlant.from_continuous(A_C, B_C, delay=0.0, dt=T)
    assert p0.max_delay == 0
    mpc = DelayedMPC(p0, horizon=5, u_min=-1, u_max=1)
    assert mpc.dead_steps == 0 and mpc.history.shape == (2, 0)
    X, U = closed_loop(p0, mpc, np.array([1.0, 1.0]), 30)
    assert np.linalg.norm(X[:, -1]) < 1e-3 and np.max(np.abs(U)) <= 1 + 1e-6
    p2 = DelayedPlant.from_continuous(A_C, B_C, delay=[2.5, 5.0], dt=T)
    mpc2 = DelayedMPC(p2, horizon=8, u_min=-1, u_max=1, solver="OSQP")
    assert mpc2.dead_steps == 1
    X, U = closed_loop(p2, mpc2, np.array([1.0, -1.0]), 40)
    assert np.linalg.norm(X[:, -1]) < 1e-3 and np.max(np.abs(U)) <= 1 + 1e-6


def test_accepts_fitted_estimator(plant):
    class Fitted:
        model_ = plant

    assert DelayedMPC(Fitted(), horizon=2).plant is plant


# ---------------------------------------------------------------------- state constraints
@pytest.mark.parametrize("solver", SOLVERS)
def test_state_bounds_respected_when_feasible(plant, solver):
    x0 = np.array([1.0, 1.0])
    free_X, _ = closed_loop(plant, DelayedMPC(plant, horizon=10, solver=solver), x0, 20)
    bound = 0.1
    assert free_X[1, 2:].max() > bound + 0.05  # the bound would be violated without it
    mpc = DelayedMPC(plant, horizon=10, x_max=[10.0, bound], x_min=-10, solver=solver)
    X, _ = closed_loop(plant, mpc, x0, 40)
    # x_1 (and x_0) are fixed by the past (w = 1); from x_2 on the bound must hold
    assert X[1, 2:].max() <= bound + 1e-6
    assert np.linalg.norm(X[:, -1]) < 1e-3


@pytest.mark.parametrize("solver", SOLVERS)
def test_unreachable_state_bounds_raise_solver_error(plant, solver):
    mpc = DelayedMPC(plant, horizon=5, u_min=-1, u_max=1, x_min=-0.01, x_max=0.01,
                     solver=solver)
    x, hist = np.array([3.0, -2.0]), np.array([[1.0, 1.0], [-1.0, 1.0]])
    with pytest.raises(SolverError, match="infeasible") as info:
        mpc.solve(x, hist)
    assert "x_max" in str(info.value) and "committed inputs" in str(info.value)
    # the message names the first bound that cannot be met: component, side and step
    assert "first bound that cannot be met is x_max[0] = 0.01 on x_(k+2)" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    before = mpc.history
    with pytest.raises(SolverError):
        mpc(x)
    np.testing.assert_array_equal(mpc.history, before)  # failed step commits nothing


def test_soft_state_bounds_never_infeasible(plant):
    mpc = DelayedMPC(plant, horizon=5, u_min=-1, u_max=1, x_min=-0.01, x_max=0.01,
                     soft_state_constraints=True)
    result = mpc.solve(np.array([3.0, -2.0]), np.array([[1.0, 1.0], [-1.0, 1.0]]))
    assert result.status in ("optimal", "optimal_inaccurate")
    assert np.max(np.abs(result.inputs)) <= 1 + 1e-6
    # with loose soft bounds (inactive) the answer is the unconstrained one
    soft = DelayedMPC(plant, horizon=5, x_min=-50, x_max=50, soft_state_constraints=True)
    hard = DelayedMPC(plant, horizon=5)
    x = np.array([0.5, 0.2])
    np.testing.assert_allclose(soft.solve(x).inputs, hard.solve(x).inputs, atol=1e-6)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("horizon", [0, -3, 2.5, 5.0, True, "5", None])
def test_bad_horizon(plant, horizon):
    with pytest.raises(ParameterError, match="horizon"):
        DelayedMPC(plant, horizon=horizon)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(u_min=1.0, u_max=-1.0), ParameterError, "u_min > u_max"),
    (dict(u_min=[-1, 2], u_max=[1, 1]), ParameterError, r"component\(s\) \[1\]"),
    (dict(x_min=1.0, x_max=0.0), ParameterError, "x_min > x_max"),
    # an infinite bound on its own side is no bound (tests/controllers/test_mpc_bounds.py);
    # on the other side it admits nothing, and NaN is no number
    (dict(u_max=-np.inf), ParameterError, r"u_max is -inf in component\(s\) \[0, 1\]"),
    (dict(u_min=np.nan), NonFiniteError, "u_min is NaN"),
    (dict(x_max=[1.0, -np.inf]), ParameterError, r"x_max is -inf in component\(s\) \[1\]"),
    (dict(x_min=[1.0, np.inf]), ParameterError, r"x_min is inf in component\(s\) \[1\]"),
    (dict(u_min=[-1.0, None]), NonFiniteError, r"u_min is NaN \(or None\) in component"),
    (dict(u_max=[1, 2, 3]), DimensionError, "u_max"),
    (dict(x_min=np.zeros((2, 1))), DimensionError, "x_min"),
    (dict(Q=-np.eye(2)), ParameterError, "Q must be symmetric positive semidefinite"),
    (dict(Q=np.array([[1.0, 2.0], [0.0, 1.0]])), ParameterError, "Q must be symmetric"),
    (dict(Q=np.eye(3)), DimensionError, "Q"),
    (dict(R=np.diag([1.0, 0.0])), ParameterError, "R must be symmetric positive definite"),
    (dict(R=[1.0, np.nan]), NonFiniteError, "R"),
    (dict(P=np.eye(3)), DimensionError, "P"),
    (dict(P=-np.eye(2)), ParameterError, "P"),
    (dict(solver="ECOS"), ParameterError, "solver"),
    (dict(inaccurate="ignore"), ParameterError, "inaccurate"),
    (dict(state_penalty=0.0, x_max=1.0, soft_state_constraints=True), ParameterError,
     "state_penalty"),
    # settings that would change nothing are refused, not ignored
    (dict(soft_state_constraints=True), ParameterError,
     "soft_state_constraints needs state bounds"),
    (dict(soft_state_constraints=True, x_min=-np.inf, x_max=[np.inf, np.inf]),
     ParameterError, "finite in some component"),
    (dict(x_max=1.0, state_penalty=100.0), ParameterError,
     "state_penalty weighs the slack of soft_state_constraints"),
    (dict(warm_start="yes"), ParameterError, "warm_start"),
])
def test_bad_settings(plant, kwargs, error, match):
    with pytest.raises(error, match=match):
        DelayedMPC(plant, horizon=3, **kwargs)
    assert issubclass(error, ValueError)


def test_bad_call_arguments(plant):
    mpc = DelayedMPC(plant, horizon=3)
    with pytest.raises(DimensionError, match=r"x has shape \(3,\)"):
        mpc(np.zeros(3))
    with pytest.raises(DimensionError, match="x must be 1-dimensional"):
        mpc(np.zeros((2, 1)))
    with pytest.raises(NonFiniteError):
        mpc(np.array([np.nan, 0.0]))
    with pytest.raises(DimensionError, match="u_history"):
        mpc.solve(np.zeros(2), np.zeros((2, 3)))
    with pytest.raises(DimensionError, match="u_history"):
        mpc.reset(np.zeros((2, 2)).T[:1])
    with pytest.raises(ParameterError, match="model must be a DelayedPlant"):
        DelayedMPC(np.eye(2), horizon=3)
    zero = DelayedPlant(np.eye(2), np.zeros((2, 2, 2)), 1.0)
    with pytest.raises(ParameterError, match="nothing to control"):
        DelayedMPC(zero, horizon=3)


def test_solver_name_case_insensitive_and_lq_default_weights(plant):
    assert DelayedMPC(plant, horizon=2, solver="osqp").solver == "OSQP"
    assert DelayedMPC(plant, horizon=2, solver="Auto").solver == "DAQP"


def test_terminal_weight_fallback_warns_when_dare_has_no_solution():
    # an uncontrollable unstable mode: the lifted DARE has no stabilizing solution
    p = DelayedPlant(np.diag([2.0, 0.5]), np.array([[[0.0], [1.0]]]), 1.0)
    with pytest.warns(RuntimeWarning, match="Riccati"):
        mpc = DelayedMPC(p, horizon=3)
    np.testing.assert_allclose(mpc.terminal_weight, np.eye(2))
    assert mpc.solve(np.array([0.1, 0.1])).status == "optimal"


# ---------------------------------------------------------------------- solver status policy
def _fake_status(monkeypatch, mpc: DelayedMPC, status: str, scale: float = 1.0) -> None:
    """Make the next solves report ``status`` (and optionally scale the returned inputs)."""
    solver = mpc._solver
    original = solver.solve

    def solve(p):
        outcome = original(p)
        return outcome._replace(status=status, v=outcome.v * scale)

    monkeypatch.setattr(solver, "solve", solve)


def test_optimal_inaccurate_policies(plant, monkeypatch):
    x = np.array([0.5, -0.2])
    warn = DelayedMPC(plant, horizon=4, u_min=-1, u_max=1)
    _fake_status(monkeypatch, warn, "optimal_inaccurate")
    with pytest.warns(RuntimeWarning, match="optimal_inaccurate"):
        result = warn.solve(x)
    assert result.status == "optimal_inaccurate" and not result.success
    raise_ = DelayedMPC(plant, horizon=4, inaccurate="raise")
    _fake_status(monkeypatch, raise_, "optimal_inaccurate")
    with pytest.raises(SolverError, match="optimal_inaccurate"):
        raise_(x)
    assert raise_.last_result is None and np.all(raise_.history == 0)
    accept = DelayedMPC(plant, horizon=4, inaccurate="accept")
    _fake_status(monkeypatch, accept, "optimal_inaccurate")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert accept.solve(x).status == "optimal_inaccurate"


def test_a_solution_that_is_not_finite_is_refused(plant, monkeypatch):
    mpc = DelayedMPC(plant, horizon=4, u_min=-1, u_max=1)
    _fake_status(monkeypatch, mpc, "optimal", scale=np.nan)
    with pytest.raises(SolverError, match="no finite solution"):
        mpc(np.array([1.0, -1.0]))
    assert mpc.last_result is None


def test_inputs_outside_bounds_are_reported_not_clipped(plant, monkeypatch):
    mpc = DelayedMPC(plant, horizon=4, u_min=-1, u_max=1, inaccurate="accept")
    _fake_status(monkeypatch, mpc, "optimal_inaccurate", scale=1.01)
    with pytest.raises(SolverError, match="violate u_m"):
        mpc.solve(np.array([6.0, -4.0]))


@pytest.mark.parametrize("solver, options", [
    ("OSQP", {"max_iter": 3, "polishing": False}), ("DAQP", {"iter_limit": 1}),
    ("CLARABEL", {"max_iter": 1})])
def test_iteration_limit_raises(plant, solver, options):
    mpc = DelayedMPC(plant, horizon=10, u_min=-1, u_max=1, solver=solver,
                     solver_options=options)
    with pytest.raises(SolverError, match="user_limit"):   # (bounds active: DAQP iterates)
        mpc(np.array([30.0, -20.0]))


@pytest.mark.parametrize("solver", SOLVERS)
def test_an_option_the_solver_does_not_know_is_a_toolbox_error(plant, solver):
    # refused when the solver is set up (direct solvers) or at the first solve (cvxpy)
    with pytest.raises((ParameterError, SolverError), match="bogus_option"):
        DelayedMPC(plant, horizon=4, solver=solver,
                   solver_options={"bogus_option": 1})(np.array([1.0, 0.0]))


# ---------------------------------------------------------------------- model mismatch, property
def identified(plant: DelayedPlant, noise: float, seed: int = 3) -> DMDidc:
    """DMDidc on 5 experiments x 300 samples of the true plant, with measurement noise of
    ``noise`` times each state's rms."""
    rng = np.random.default_rng(seed)
    Us = [rng.standard_normal((2, 300)) for _ in range(5)]
    Xs = [plant.simulate(np.zeros(2), U) for U in Us]
    rms = np.sqrt(np.mean(np.concatenate(Xs, axis=1) ** 2, axis=1))[:, None]
    Xs = [X + noise * rms * rng.standard_normal(X.shape) for X in Xs]
    return DMDidc(max_delay=3).fit(Xs, Us, dt=plant.dt)


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_identified_model_regulates_true_plant_within_state_bounds(plant, noise):
    """MPC on a really identified model (regression blocks ~1e-14 or noise, never exactly 0):
    the right dead steps, and state bounds feasible on the true plant stay feasible."""
    est = identified(plant, noise)
    assert np.abs(est.regression_.coefficients[:, 2:4]).max() > 0    # B^(0) of the regression
    # |x| <= 3 is feasible on the true plant from x_2 on (x_1 = A_d x_0 is fixed by the past,
    # |x_1| = 3.4); with the old rule (w = 0 from the 1e-14 block) it was reported infeasible.
    mpc = DelayedMPC(est, horizon=10, u_min=-1, u_max=1, x_min=-3.0, x_max=3.0)
    assert mpc.dead_steps == DelayedMPC(plant, horizon=10).dead_steps == 1
    X, U = closed_loop(plant, mpc, np.array([3.0, -2.0]), 60)
    assert np.max(np.abs(X[:, 1])) > 3.0
    assert np.max(np.abs(U)) <= 1 + INPUT_BOUND_TOLERANCE
    assert np.max(np.abs(X[:, 2:])) <= 3.0 + 1e-6
    assert np.linalg.norm(X[:, -1]) < 1e-3


def test_dead_steps_come_from_the_model_not_from_a_tolerance():
    # A block of 1e-300 acts (it is not zero); exact zeros do not.  The estimator writes exact
    # zeros where its test finds no effect, so this rule needs no tolerance.
    blocks = np.zeros((3, 2, 2))
    blocks[2] = np.eye(2)
    assert DelayedMPC(DelayedPlant(0.5 * np.eye(2), blocks, 1.0), horizon=2).dead_steps == 2
    blocks[1, 0, 1] = 1e-300
    assert DelayedMPC(DelayedPlant(0.5 * np.eye(2), blocks, 1.0), horizon=2).dead_steps == 1


def test_unconstrained_first_move_is_lq_for_random_delayed_plants():
    """Property (hypothesis): random plants and per-channel delays, u_k = -K z_k."""
    import scipy.linalg
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=6, deadline=None, derandomize=True)
    @given(st.integers(1, 3), st.integers(1, 2), st.integers(0, 2**31 - 1),
           st.integers(1, 6))
    def check(n, m, seed, horizon):
        rng = np.random.default_rng(seed)
        A_c = rng.standard_normal((n, n))
        B_c = rng.standard_normal((n, m))
        dt = 0.5
        delays = rng.choice([0.0, 0.25, 0.5, 1.0, 1.5, 2.25], size=m) * dt
        true = DelayedPlant.from_continuous(A_c, B_c, delay=delays, dt=dt)
        mpc = DelayedMPC(true, horizon=horizon)
        w = mpc.dead_steps
        assert w == int(np.min(true.delay_steps))
        F, G = lifted_reduced(true, w)
        Q_lift = np.zeros_like(F)
        Q_lift[:n, :n] = np.eye(n)
        P = scipy.linalg.solve_discrete_are(F, G, Q_lift, np.eye(m))
        K = np.linalg.solve(np.eye(m) + G.T @ P @ G, G.T @ P @ F)
        x = rng.standard_normal(n)
        hist = rng.standard_normal((m, true.max_delay))
        expected = -K @ zeta(true, x, hist, w)
        got = mpc.solve(x, hist).first_input
        np.testing.assert_allclose(got, expected, atol=1e-6 * max(1.0, np.abs(expected).max()))

    check()


def test_settings_are_read_only(plant):
    mpc = DelayedMPC(plant, horizon=3, u_min=-1, u_max=[1, 2])
    np.testing.assert_array_equal(mpc.u_max, [1.0, 2.0])
    assert mpc.x_min is None
    for array in (mpc.Q, mpc.R, mpc.u_min, mpc.terminal_weight):
        with pytest.raises(ValueError):
            array[0] = 5.0


# ---------------------------------------------------------------------- direct solvers vs cvxpy
def random_delayed_plant(rng: np.random.Generator, n: int, m: int) -> DelayedPlant:
    """A random plant with fractional per-channel delays (slowest mode slightly unstable)."""
    A_c = rng.standard_normal((n, n)) / np.sqrt(n)
    A_c -= (np.max(np.linalg.eigvals(A_c).real) - 0.05) * np.eye(n)
    dt = 0.2
    delays = rng.choice([0.25, 0.5, 1.25, 1.5, 2.5], size=m) * dt
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), delay=delays, dt=dt)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("constraints", ["inputs", "hard states", "soft states"])
def test_direct_solvers_match_the_cvxpy_path_on_random_plants(seed, constraints):
    """First moves (and whole plans) of DAQP, OSQP and Clarabel agree with the cvxpy
    formulation to 1e-4, on random plants with fractional delays, with bounds that are active
    (large initial state) and inactive (small one)."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(1, 3))
    plant = random_delayed_plant(rng, n, m)
    kwargs: dict = dict(horizon=int(rng.integers(3, 12)), u_min=-1.0, u_max=1.0)
    if constraints != "inputs":
        kwargs.update(x_min=-4.0, x_max=4.0,
                      soft_state_constraints=constraints == "soft states")
    reference = DelayedMPC(plant, solver="CVXPY", **kwargs)
    others = [DelayedMPC(plant, solver=name, **kwargs) for name in ("DAQP", "OSQP", "CLARABEL")]
    hist = 0.3 * rng.standard_normal((m, plant.max_delay))
    direction = rng.standard_normal(n)
    saturated = False
    for scale in (0.01, 3.0):                    # bounds inactive, then active
        x = scale * direction / np.linalg.norm(direction)
        try:
            expected = reference.solve(x, hist)
        except SolverError:                      # hard bounds the inputs cannot meet
            for mpc in others:
                with pytest.raises(SolverError, match="infeasible"):
                    mpc.solve(x, hist)
            continue
        saturated |= bool(np.any(np.abs(expected.inputs) > 1 - 1e-6))
        for mpc in others:
            got = mpc.solve(x, hist)
            assert got.solver == mpc.solver and got.status == "optimal"
            np.testing.assert_allclose(got.first_input, expected.first_input, atol=1e-4)
            np.testing.assert_allclose(got.inputs, expected.inputs, atol=1e-4)
            assert abs(got.cost - expected.cost) <= 1e-5 * max(1.0, abs(expected.cost))
            assert np.max(np.abs(got.inputs)) <= 1 + INPUT_BOUND_TOLERANCE
    if constraints == "inputs":
        assert saturated                         # the large state did activate the bounds


def test_direct_solvers_follow_the_closed_loop_of_the_cvxpy_path():
    """30 closed-loop steps with warm starts: same trajectory as the cvxpy path."""
    rng = np.random.default_rng(11)
    plant = random_delayed_plant(rng, 6, 2)
    kwargs = dict(horizon=15, u_min=-1.0, u_max=1.0, x_min=-6.0, x_max=6.0)
    x0 = 2.5 * rng.standard_normal(6)
    X_ref, U_ref = closed_loop(plant, DelayedMPC(plant, solver="CVXPY", **kwargs), x0, 30)
    for name in ("DAQP", "OSQP"):
        X, U = closed_loop(plant, DelayedMPC(plant, solver=name, **kwargs), x0, 30)
        np.testing.assert_allclose(U, U_ref, atol=1e-4)
        np.testing.assert_allclose(X, X_ref, atol=1e-3)


def test_auto_picks_daqp_for_small_and_osqp_for_large_problems(plant):
    assert DelayedMPC(plant, horizon=20, u_min=-1, u_max=1).solver == "DAQP"
    big = DelayedMPC(plant, horizon=600, u_min=-1, u_max=1, x_min=-50, x_max=50)
    assert big.solver == "OSQP"
    assert np.all(np.abs(big.solve(np.array([3.0, -2.0])).inputs) <= 1 + 1e-6)


def test_horizon_whose_qp_is_too_large_is_refused(plant):
    from controllers.mpc import MAX_DENSE_ENTRIES, MAX_QP_VARIABLES

    too_long = MAX_QP_VARIABLES // 4 + 1         # (n + m) N variables at least
    with pytest.raises(ParameterError, match=f"horizon = {too_long} .*accepted: horizon <="):
        DelayedMPC(plant, horizon=too_long)
    dense = int(np.sqrt(MAX_DENSE_ENTRIES)) // 2 + 1
    with pytest.raises(ParameterError, match="condensed QP.*solver='OSQP'"):
        DelayedMPC(plant, horizon=dense, solver="DAQP")


def test_cvxpy_path_takes_cvxpys_solver_in_its_options(plant):
    x = np.array([2.0, -1.0])
    clarabel = DelayedMPC(plant, horizon=8, u_min=-1, u_max=1, solver="CVXPY").solve(x)
    osqp = DelayedMPC(plant, horizon=8, u_min=-1, u_max=1, solver="CVXPY",
                      solver_options={"solver": "osqp"}).solve(x)
    np.testing.assert_allclose(osqp.inputs, clarabel.inputs, atol=1e-5)
    with pytest.raises(ParameterError, match=r"solver_options\['solver'\].*'ECOS'"):
        DelayedMPC(plant, horizon=8, solver="CVXPY", solver_options={"solver": "ECOS"})


def test_operating_point_is_handled_by_every_solver():
    """A model with an operating point: bounds and states in physical units, same answer."""
    base = seed_plant(1.5)
    plant = DelayedPlant(base.A_d, base.B_blocks, base.dt,
                         operating_point=(np.array([1.0, -0.5]), np.array([0.2, 0.1])))
    x = np.array([2.5, -1.5])
    kwargs = dict(horizon=8, u_min=-0.8, u_max=1.2, x_min=-6.0, x_max=6.0)
    results = {name: DelayedMPC(plant, solver=name, **kwargs).solve(x)
               for name in ("DAQP", "OSQP", "CVXPY")}
    for result in results.values():
        np.testing.assert_allclose(result.states[:, 0], x)
        np.testing.assert_allclose(result.inputs, results["CVXPY"].inputs, atol=1e-5)
        assert np.all(result.inputs <= 1.2 + 1e-6) and np.all(result.inputs >= -0.8 - 1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_each_result_keeps_its_prediction_with_an_operating_point(seed):
    # with an operating point the parameter is built afresh (deviations) instead of copied from
    # the buffer: a result's lazy prediction, evaluated after later solves, is still its own
    rng = np.random.default_rng(seed)
    base = random_delayed_plant(rng, 3, 2)
    op = (rng.standard_normal(3), 0.1 * rng.standard_normal(2))
    plant = DelayedPlant(base.A_d, base.B_blocks, base.dt, operating_point=op)
    mpc = DelayedMPC(plant, horizon=5, u_min=-1.0, u_max=1.0)
    xs = [rng.standard_normal(3) for _ in range(3)]
    results = [mpc.solve(x) for x in xs]
    fresh = [DelayedMPC(plant, horizon=5, u_min=-1.0, u_max=1.0).solve(x) for x in xs]
    for x, result, alone in zip(xs, results, fresh, strict=True):
        np.testing.assert_allclose(result.states[:, 0], x, atol=1e-12)
        np.testing.assert_allclose(result.states, alone.states, atol=1e-8)


def test_a_huge_finite_state_is_not_reported_as_non_finite(plant):
    # finite, if absurd: no NonFiniteError (and no overflow warning from the checks)
    mpc = DelayedMPC(plant, horizon=3, u_min=-1, u_max=1)
    try:
        u = mpc(np.array([1e160, 0.0]))
    except SolverError as exc:      # the solver may fail at this scale, but says so
        assert "only input bounds" in str(exc) and "numerical trouble" in str(exc)
    else:
        assert np.all(np.isfinite(u)) and np.all(np.abs(u) <= 1 + INPUT_BOUND_TOLERANCE)
    with pytest.raises(NonFiniteError, match="u_history"):
        mpc.solve(np.zeros(2), np.array([[np.inf, 0.0], [0.0, 0.0]]))


def _limits(rng: np.random.Generator, m: int, kind: str) -> tuple:
    """``(u_min, u_max)`` of one kind: per input, one for all, one-sided, or none; each
    containing 0 (the target of a model without an operating point: bounds that exclude it
    are refused)."""
    if kind == "none":
        return None, None
    size, repeat = (m, 1) if kind == "per input" else (1, m)
    low = -rng.uniform(0.5, 2.0, size).repeat(repeat)
    high = rng.uniform(0.2, 2.0, size).repeat(repeat)
    return (None, high) if kind == "upper only" else (low, high)


@pytest.mark.parametrize("limits", ["per input", "one for all", "upper only", "none"])
@pytest.mark.parametrize("seed", range(5))
def test_the_quick_bound_checks_decide_as_the_exact_one(plant, seed, limits):
    # every step's quick test of the moves (the extreme moves by argmin / argmax when every
    # input has the same limits, else one maximum over the box) accepts only what the exact
    # comparison accepts; anything near or past a bound goes on to the exact decision, and a
    # NaN or an infinite move anywhere is refused, with or without bounds
    rng = np.random.default_rng(seed)
    m = plant.n_inputs
    u_min, u_max = _limits(rng, m, limits)
    mpc = DelayedMPC(plant, horizon=4, u_min=u_min, u_max=u_max)
    low = np.full(m, -1.0) if u_min is None else u_min
    high = np.full(m, 1.0) if u_max is None else u_max
    for _ in range(200):
        scale = rng.choice([0.5, 1.0, 1.0 + 0.5 * INPUT_BOUND_TOLERANCE, 1.0 + 3e-6, 1.5])
        moves = (low + (high - low) * rng.uniform(0.5 - scale / 2, 0.5 + scale / 2,
                                                  (mpc.horizon, m))).ravel()
        try:
            mpc._check_input_bounds(moves)
            refused = False
        except SolverError:
            refused = True
        allowed_low, allowed_high = mpc._u_allowed
        assert refused == (not ((moves >= allowed_low).all() and (moves <= allowed_high).all()))
        for bad in (np.nan, np.inf, -np.inf):
            spoiled = moves.copy()
            spoiled[rng.integers(len(moves))] = bad
            with pytest.raises(SolverError, match="no finite"):
                mpc._check_input_bounds(spoiled)


@pytest.mark.parametrize("seed", range(4))
def test_solve_takes_any_real_arguments_and_keeps_each_results_prediction(seed):
    # solve fills one parameter buffer in place: each result must keep its own parameter, and
    # lists, integer arrays and float arrays of the same values give the same moves
    plant = random_delayed_plant(np.random.default_rng(seed), 4, 2)
    mpc = DelayedMPC(plant, horizon=5, u_min=-1.0, u_max=1.0)
    rng = np.random.default_rng(100 + seed)
    n, m, R = plant.n_states, plant.n_inputs, plant.max_delay
    x1, x2 = rng.integers(-3, 4, n), rng.integers(-3, 4, n)
    history = rng.integers(-1, 2, (m, R))
    first = mpc.solve(x1, history)
    second = mpc.solve(x2.astype(float), history.astype(float))
    np.testing.assert_array_equal(first.states[:, 0], x1)      # lazy, computed after `second`
    np.testing.assert_array_equal(second.states[:, 0], x2)
    again = mpc.solve(x1.tolist(), history.tolist())
    np.testing.assert_allclose(again.inputs, first.inputs, atol=1e-9)
    for bad in (np.nan, np.inf, -np.inf):
        where = rng.integers(n)
        with pytest.raises(NonFiniteError, match="x"):
            mpc.solve(np.where(np.arange(n) == where, bad, 1.0), history)
        bad_history = history * 1.0
        bad_history[rng.integers(m), rng.integers(R)] = bad
        with pytest.raises(NonFiniteError, match="u_history"):
            mpc.solve(x1 * 1.0, bad_history)


def test_a_copied_controller_solves_as_the_original(plant):
    # solve fills a parameter buffer through views of it: a copy (with_model makes one) must
    # fill a buffer consistent with its views, interleaved with the original
    import copy

    mpc = DelayedMPC(plant, horizon=4, u_min=-1.0, u_max=1.0)
    twin = copy.copy(mpc)
    fresh = DelayedMPC(plant, horizon=4, u_min=-1.0, u_max=1.0)
    for x in (np.array([1.0, -1.0]), np.array([-3.0, 0.5]), np.array([0.2, 2.0])):
        expected = fresh.solve(x).inputs
        np.testing.assert_allclose(twin.solve(x).inputs, expected, atol=1e-9)
        np.testing.assert_allclose(mpc.solve(-x).inputs, fresh.solve(-x).inputs, atol=1e-9)
    rebuilt = copy.copy(mpc._p)          # a copied buffer is a fresh, consistent one
    rebuilt.x[...] = 1.0
    rebuilt.history[...] = 2.0
    assert rebuilt.vector.tolist() == [1.0] * plant.n_states + [2.0] * (rebuilt.vector.size
                                                                        - plant.n_states)


# ---------------------------------------------------------------------- deep copies and pickles
def _pickled(mpc: DelayedMPC) -> DelayedMPC:
    import pickle

    return pickle.loads(pickle.dumps(mpc))


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed", range(3))
def test_deep_copies_and_pickles_are_independent_controllers(solver, seed):
    """A deep copy or an unpickled controller, taken mid-run (warm solver, history, last
    result), makes the same next moves as the original, and stepping it leaves the original's
    history, last result and moves unchanged (each has its own solver)."""
    import copy

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 5)), int(rng.integers(1, 3))
    plant = random_delayed_plant(rng, n, m)
    kwargs: dict = dict(horizon=int(rng.integers(3, 9)), u_min=-1.0, u_max=1.0, solver=solver)
    if seed == 2:
        kwargs.update(x_min=-5.0, x_max=5.0, soft_state_constraints=True)
    mpc = DelayedMPC(plant, **kwargs)
    for _ in range(3):                              # warm start and history in use
        mpc(2.0 * rng.standard_normal(n))
    for duplicate in (copy.deepcopy, _pickled):
        twin = duplicate(mpc)
        assert twin._solver is not mpc._solver and twin.solver == mpc.solver
        np.testing.assert_array_equal(twin.history, mpc.history)
        np.testing.assert_allclose(twin.last_result.states, mpc.last_result.states)
        history, result = mpc.history, mpc.last_result
        states = [2.0 * rng.standard_normal(n) for _ in range(3)]
        moves = [twin(x) for x in states]           # stepping the copy ...
        np.testing.assert_array_equal(mpc.history, history)   # ... leaves the original alone
        assert mpc.last_result is result
        for x, u in zip(states, moves, strict=True):   # ... which then makes the same moves
            np.testing.assert_allclose(mpc(x), u, atol=1e-6)
        np.testing.assert_allclose(twin.history, mpc.history, atol=1e-6)


def test_a_pickled_result_keeps_its_prediction(plant):
    import copy

    mpc = DelayedMPC(plant, horizon=4, u_min=-1.0, u_max=1.0, solver="DAQP")
    result = mpc.solve(np.array([2.0, -1.0]))
    for twin in (_pickled(result), copy.deepcopy(result)):
        np.testing.assert_array_equal(twin.inputs, result.inputs)
        np.testing.assert_array_equal(twin.states, result.states)
        assert twin.cost == result.cost and twin.status == result.status
        assert not twin.inputs.flags.writeable and not twin.states.flags.writeable


@pytest.mark.parametrize("limits", ["one for all", "upper only", "none", "per input"])
@pytest.mark.parametrize("seed", range(4))
def test_steps_solved_without_daqp_equal_daqps_solution(seed, limits):
    # with input bounds alone, a step whose unconstrained minimizer keeps the bounds skips
    # DAQP (iterations 0): along a closed loop from a saturating state the plans equal DAQP's
    # own (the shortcut switched off) to rounding, both kinds of step occur where bounds can
    # be active, and per-input limits (no shortcut) always call DAQP
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 7)), 2
    plant = random_delayed_plant(rng, n, m)
    low, high = -rng.uniform(0.5, 2.0, m), rng.uniform(0.5, 2.0, m)   # about the set point
    if limits != "per input":
        low, high = np.full(m, low[0]), np.full(m, high[0])
    u_min, u_max = {"none": (None, None), "upper only": (None, high)}.get(limits, (low, high))
    kwargs = dict(horizon=int(rng.integers(3, 15)), u_min=u_min, u_max=u_max, solver="DAQP")
    fast, plain = DelayedMPC(plant, **kwargs), DelayedMPC(plant, **kwargs)
    plain._solver._free = None
    assert (fast._solver._free is None) == (limits == "per input")
    x, past = 5.0 * rng.standard_normal(n), np.zeros((m, plant.max_delay))
    skipped, inside = [], []
    lowest = -np.inf if u_min is None else u_min[:, None] + 1e-6
    highest = np.inf if u_max is None else u_max[:, None] - 1e-6
    for _ in range(40):
        got, expected = fast.solve(x, past), plain.solve(x, past)
        np.testing.assert_allclose(got.inputs, expected.inputs, rtol=1e-9, atol=1e-9)
        assert abs(got.cost - expected.cost) <= 1e-9 * max(1.0, abs(expected.cost))
        skipped.append(got.iterations == 0)
        inside.append(bool(np.all((expected.inputs > lowest) & (expected.inputs < highest))))
        u = got.first_input
        x = true_step(plant, x, u, past)
        past = np.concatenate([past[:, 1:], u[:, None]], axis=1)
    if limits == "per input":
        assert not any(skipped)
    else:   # tried after a step without an active bound, and taken when none is active
        assert skipped[0] or not inside[0]
        assert all(skipped[k] for k in range(1, 40) if inside[k - 1] and inside[k])
    if limits == "none":
        assert all(skipped)


def test_no_daqp_shortcut_with_state_bounds_or_slack(plant):
    for kwargs in (dict(x_min=-5.0, x_max=5.0),
                   dict(x_min=-5.0, x_max=5.0, soft_state_constraints=True)):
        mpc = DelayedMPC(plant, horizon=6, u_min=-1.0, u_max=1.0, solver="DAQP", **kwargs)
        assert mpc._solver._free is None
        assert mpc.solve(np.array([0.01, 0.0])).iterations > 0


def _physical_plant(seed):
    """A random delayed plant around a physical operating point: u_op of tens (a valve in %),
    x_op its equilibrium."""
    rng = np.random.default_rng(seed)
    base = random_delayed_plant(rng, 3, 2)
    u_op = rng.uniform(20.0, 60.0, 2)
    x_op = np.linalg.solve(np.eye(3) - base.A_d, base.B_d @ u_op)
    return DelayedPlant(base.A_d, base.B_blocks, base.dt, operating_point=(x_op, u_op))


@pytest.mark.parametrize("seed", range(6))
def test_bounds_that_exclude_the_operating_point_are_refused(seed):
    # Walkthrough finding 5: |u| <= 10 around u_op = 45 could never hold the operating point
    # (cost 3e5, silently); the bounds are physical, so u_op must lie within them.
    plant = _physical_plant(seed)
    u_op, x_op = plant.operating_point.input, plant.operating_point.state
    with pytest.raises(ParameterError, match=r"operating point u_op = .*outside \[u_min, "
                                             r"u_max\].*physical values, not deviations"):
        DelayedMPC(plant, horizon=5, u_max=10.0)
    with pytest.raises(ParameterError, match=r"u_op .*component\(s\) \[1\]"):
        DelayedMPC(plant, horizon=5, u_min=[0.0, u_op[1] + 1.0], u_max=100.0)
    low = x_op - 1.0
    low[2] = x_op[2] + 0.5
    with pytest.raises(ParameterError, match=r"operating point x_op = .*component\(s\) \[2\]"):
        DelayedMPC(plant, horizon=5, x_min=low)
    with pytest.raises(ParameterError, match="x_op"):
        DelayedMPC(plant, horizon=5, x_max=x_op - 1.0, soft_state_constraints=True)


@pytest.mark.parametrize("seed", range(6))
def test_an_actuator_range_around_the_operating_point_holds_it(seed):
    # The asymmetric range 0 .. 100 (a valve in %) contains u_op: accepted, and the loop
    # returns to the operating point with every input inside the range.
    from simulations.closed_loop import simulate_closed_loop

    plant = _physical_plant(seed)
    op = plant.operating_point
    mpc = DelayedMPC(plant, horizon=8, u_min=0.0, u_max=100.0, x_min=op.state - 50.0,
                     x_max=op.state + 50.0, soft_state_constraints=True)
    start = op.state + np.random.default_rng(seed).normal(0.0, 1.0, 3)
    result = simulate_closed_loop(plant, mpc, start, 200)
    assert result.inputs.min() >= -1e-6 and result.inputs.max() <= 100.0 + 1e-6
    assert result.final_norm < 1e-3 * np.linalg.norm(start - op.state)


# ---------------------------------------------------------------------- output models
@pytest.mark.parametrize("seed", range(3))
def test_output_models_default_to_output_weights_and_refuse_state_bounds(seed):
    """Review finding: on an output model (whose states are canonical variates) the default
    Q = I weighed the variates and x_min/x_max bounded them, silently; the default is now
    output_weight(C), and state bounds are refused with the reason and the remedies."""
    from types import SimpleNamespace

    from controllers import make_controller
    from controllers.gains import output_weight

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    A_c = rng.standard_normal((n, n)) - np.eye(n)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((n, 2)),
                                         rng.uniform(0.1, 1.5, 2), 0.5)
    model = SimpleNamespace(model_=plant, C=rng.standard_normal((1, n)))
    mpc = DelayedMPC(model, horizon=5, u_min=-1.0, u_max=1.0)
    np.testing.assert_allclose(mpc.Q, output_weight(model.C), rtol=1e-12)
    assert np.allclose(make_controller("mpc", model, horizon=5).Q, output_weight(model.C))
    with pytest.raises(ParameterError, match=r"x_min/x_max bound the states of the model, and "
                                             r"this model \(SimpleNamespace\) is an output "
                                             r"model: its states are canonical variates"):
        DelayedMPC(model, horizon=5, x_max=1.0)
    with pytest.raises(ParameterError, match="canonical variates"):
        make_controller("mpc", model, horizon=5, x_min=-1.0, soft_state_constraints=True)
    # the plant itself: the identity and bounds on its states, as before
    np.testing.assert_array_equal(DelayedMPC(plant, horizon=5, x_max=5.0).Q, np.eye(n))
