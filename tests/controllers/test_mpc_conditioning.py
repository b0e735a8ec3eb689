"""The condensed QP loses the moves' precision on unstable plants over long horizons: ``"auto"``
then solves the sparse QP, ``solver="DAQP"`` is refused, and every plan is checked against its
hard state bounds (a trial found DAQP's first move off by 6 % and "optimal" plans breaking
them)."""

from __future__ import annotations

import numpy as np
import pytest

from _toolbox.errors import ParameterError, SolverError
from controllers import DelayedMPC
from controllers.mpc import MAX_CONDENSED_CONDITION
from controllers.qp_solvers import DAQPSolver, QPOutcome, condition_number
from dmdidc import DelayedPlant

UNSTABLE = DelayedPlant.from_continuous([[1.0]], [[1.0]], 1.7, 1.0)      # A_d = e


def _random_unstable(seed: int) -> DelayedPlant:
    rng = np.random.default_rng([seed, 77])
    n, m = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    A = rng.standard_normal((n, n))
    A += (1.2 - np.max(np.linalg.eigvals(A).real)) * np.eye(n)     # slowest mode at +1.2
    return DelayedPlant.from_continuous(A, rng.standard_normal((n, m)),
                                        rng.uniform(0.1, 1.8, m), 0.5)


@pytest.mark.parametrize("horizon", [1, 10, 20, 40])
def test_the_first_move_of_an_unstable_plant_does_not_depend_on_the_horizon(horizon):
    """With the Riccati terminal weight the first move is the LQR move at every horizon; the
    condensed QP gave -7.4877 instead of -7.9373 from N = 20 on."""
    mpc = DelayedMPC(UNSTABLE, horizon=horizon)
    reference = DelayedMPC(UNSTABLE, horizon=1, solver="CLARABEL").solve([1.0], [[0.0, 0.0]])
    move = mpc.solve([1.0], [[0.0, 0.0]]).first_input
    np.testing.assert_allclose(move, reference.first_input, rtol=1e-6)
    well_conditioned = condition_number(DelayedMPC(UNSTABLE, horizon=horizon, solver="OSQP")
                                        ._build_qp(sparse=False).hessian)
    assert mpc.solver == ("DAQP" if well_conditioned <= MAX_CONDENSED_CONDITION else "CLARABEL")


@pytest.mark.parametrize("seed", range(6))
def test_auto_agrees_with_the_sparse_qp_on_random_unstable_plants(seed):
    plant = _random_unstable(seed)
    x = np.random.default_rng(seed).standard_normal(plant.n_states)
    for horizon in (5, 25):
        auto = DelayedMPC(plant, horizon=horizon).solve(x)
        sparse = DelayedMPC(plant, horizon=horizon, solver="CLARABEL").solve(x)
        np.testing.assert_allclose(auto.inputs, sparse.inputs, rtol=1e-4,
                                   atol=1e-4 * max(1.0, np.abs(sparse.inputs).max()))


def test_daqp_on_an_ill_conditioned_condensed_qp_is_refused_naming_the_limit():
    with pytest.raises(ParameterError, match="MAX_CONDENSED_CONDITION|positive definite"):
        DelayedMPC(UNSTABLE, horizon=25, solver="DAQP")
    # a stable plant over the same horizon keeps DAQP
    stable = DelayedPlant.from_continuous([[-1.0]], [[1.0]], 1.7, 1.0)
    assert DelayedMPC(stable, horizon=25).solver == "DAQP"


def test_a_plan_beyond_a_hard_state_bound_raises(monkeypatch):
    """Whatever the solver reports, a plan that breaks a hard bound is refused."""
    plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], 0.4, 1.0)
    mpc = DelayedMPC(plant, horizon=3, x_max=0.5)
    assert mpc.solve([0.2]).states.max() <= 0.5 + 1e-9
    bad = np.full(mpc._qp.n_variables, 5.0)                 # drives x far above 0.5
    monkeypatch.setattr(mpc._solver, "solve", lambda p: QPOutcome(bad, "optimal", 1, 0.0))
    with pytest.raises(SolverError, match="violates x_max"):
        mpc.solve([0.2])


def test_soft_bounds_may_be_exceeded_without_error():
    plant = DelayedPlant.from_continuous([[0.0]], [[1.0]], 1.5, 1.0)
    mpc = DelayedMPC(plant, horizon=3, u_min=-0.1, u_max=0.1, x_max=0.5,
                     soft_state_constraints=True)
    result = mpc.solve([1.0], [[0.0, 0.0]])     # |u| <= 0.1 cannot bring x from 1 to 0.5
    assert result.states[0, mpc.dead_steps + 1:].max() > 0.6       # on the bounded steps


def test_a_hessian_daqp_cannot_factor_raises_a_solver_error():
    """DAQP's setup flag -5 left a workspace whose first solve raised a bare RuntimeError."""
    qp = DelayedMPC(UNSTABLE, horizon=3, solver="OSQP")._build_qp(sparse=False)
    broken = qp.__class__(**{**qp.__dict__, "hessian": -np.eye(qp.n_variables)})
    with pytest.raises(SolverError, match="exit flag"):
        DAQPSolver(broken, {}, warm_start=True)


def test_condition_number_matches_numpy():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((6, 6))
    H = M @ M.T + 1e-3 * np.eye(6)
    exact = np.linalg.cond(H, 1)
    assert exact / 3 <= condition_number(H) <= 3 * exact      # an estimate, within a factor


def test_bounds_that_exclude_the_origin_of_a_model_without_operating_point_are_refused():
    """Trial: u in [0.2, 1] on a model without an operating point was accepted, and the loop
    parked at the bound (the target is u = 0, x = 0)."""
    plant = DelayedPlant.from_continuous([[0.0, 1.1], [-1.1, 0.0]], [[1.0, -1.0], [-1.0, 2.0]],
                                         delay=2.5, dt=2.0)
    with pytest.raises(ParameterError, match="no operating point.*u_min, u_max"):
        DelayedMPC(plant, horizon=10, u_min=0.2, u_max=1.0)
    with pytest.raises(ParameterError, match="no operating point.*x_min, x_max"):
        DelayedMPC(plant, horizon=10, x_min=[0.1, -1.0], x_max=[1.0, 1.0])
    DelayedMPC(plant, horizon=10, u_min=-0.2, u_max=1.0)          # containing 0: accepted


@pytest.mark.parametrize("horizon", [5, 20])
def test_the_bound_check_tolerance_is_the_users_bound_at_every_step(horizon):
    """Review: the condensed rows' bounds less the free response scaled the tolerance (0.04
    absolute at N = 20 for x_max = 2); the check now reads the user's bound at every step."""
    plant = DelayedPlant.from_continuous([[0.5]], [[1.0]], 0.3, 1.0)       # A_d = 1.65
    mpc = DelayedMPC(plant, horizon=horizon, x_max=2.0)
    assert mpc.solver == "DAQP"
    at_bound = np.full(horizon, 2.0)
    mpc._check_state_bounds(at_bound + 1e-6)                    # within 1e-6 x max(1, 2)
    beyond = at_bound.copy()
    beyond[-1] += 1e-4
    with pytest.raises(SolverError, match=rf"x_\(k\+{mpc.dead_steps + horizon}\)\[0\] "
                                          r"violates x_max by 0\.0001"):
        mpc._check_state_bounds(beyond)


def test_daqp_settings_under_auto_say_why_clarabel_runs():
    with pytest.raises(ParameterError, match="solves this problem with Clarabel.*primal_tol"):
        DelayedMPC(UNSTABLE, horizon=25, solver_options={"primal_tol": 1e-9})
    assert DelayedMPC(UNSTABLE, horizon=5, solver_options={"primal_tol": 1e-9}).solver == "DAQP"
