"""Tests of ``with_model``: a controller re-designed for an updated model (a new delay) equals
one built afresh on that model (feedback laws, MPC solutions), carries its command history
over, leaves the original unchanged and refuses a model of other sizes."""

from __future__ import annotations

import numpy as np
import pytest

from _toolbox.errors import DimensionError
from controllers import DelayedMPC, lqr_gain, make_controller
from dmdidc.model import DelayedPlant
from simulations.studies.data_kinds import random_plant

LINEAR = ("fractional", "truncated", "exact", "naive")
SEEDS = range(6)
R_MAX = 4


def delay_pair(seed: int) -> tuple[DelayedPlant, DelayedPlant]:
    """A random plant and the same (A_c, B_c) with every delay moved by 0.6 .. 1.6 periods
    (up or down, staying in [0.1, R_MAX - 0.5] periods)."""
    rng = np.random.default_rng(seed)
    old = random_plant(rng, delay_periods=(0.2, 2.0), max_delay=R_MAX)
    shift = rng.uniform(0.6, 1.6, old.n_inputs) * rng.choice([-1, 1], old.n_inputs)
    new_delay = np.clip(old.delay / old.dt + shift, 0.1, R_MAX - 0.5) * old.dt
    new = DelayedPlant.from_continuous(old.A_c, old.B_c, new_delay, old.dt, max_delay=R_MAX)
    return old, new


def settings(ctrl) -> dict:
    """The settings with_model keeps besides K: the reference delay the factory chose (the
    random plants' channels have unequal delay fractions)."""
    reference = getattr(ctrl, "reference_delay", None)
    return {} if reference is None else {"reference_delay": reference}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", LINEAR)
def test_updated_linear_controller_equals_a_fresh_one(name: str, seed: int) -> None:
    old, new = delay_pair(seed)
    ctrl = make_controller(name, old)
    before = [a.copy() for a in ctrl.feedback_matrices()]
    updated = ctrl.with_model(new)
    fresh = make_controller(name, new, K=ctrl.K, **settings(ctrl))
    assert type(updated) is type(ctrl)
    np.testing.assert_array_equal(updated.K, ctrl.K)          # the gain is re-used
    for a, b in zip(updated.feedback_matrices(), fresh.feedback_matrices(), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    for a, b in zip(ctrl.feedback_matrices(), before, strict=True):   # original unchanged
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ("fractional", "exact"))
def test_updated_linear_controller_continues_with_its_commands(name: str, seed: int) -> None:
    old, new = delay_pair(seed)
    rng = np.random.default_rng(100 + seed)
    ctrl = make_controller(name, old)
    issued = [ctrl(x) for x in rng.standard_normal((6, old.n_states))]
    updated = ctrl.with_model(new)
    H = updated.history_steps
    keep = min(H, ctrl.history_steps)
    past = np.zeros((old.n_inputs, H))              # oldest first; older than kept: at rest
    if keep:
        past[:, H - keep:] = np.array(issued[-keep:]).T
    fresh = make_controller(name, new, K=ctrl.K, **settings(ctrl))
    fresh.reset(past)
    x = rng.standard_normal(old.n_states)
    np.testing.assert_allclose(updated(x), fresh(x), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("solver", ("DAQP", "OSQP"))
def test_updated_mpc_solves_the_problem_of_a_fresh_one(solver: str, seed: int) -> None:
    old, new = delay_pair(seed)
    options = dict(horizon=8, u_min=-1.0, u_max=1.0, x_min=-5.0, x_max=5.0,
                   soft_state_constraints=True, solver=solver)
    mpc = DelayedMPC(old, **options)
    old_dead = mpc.dead_steps
    updated = mpc.with_model(new)
    fresh = DelayedMPC(new, **options)
    assert (updated.dead_steps, updated.solver) == (fresh.dead_steps, fresh.solver)
    assert mpc.dead_steps == old_dead and mpc.plant.max_delay == R_MAX
    np.testing.assert_allclose(updated.terminal_weight, fresh.terminal_weight, rtol=1e-9,
                               atol=1e-9)
    rng = np.random.default_rng(200 + seed)
    scale = 1e-6 if solver == "DAQP" else 1e-4      # OSQP: ADMM to its eps 1e-8, polished
    for _ in range(3):
        x = 2 * rng.standard_normal(new.n_states)
        history = 0.5 * rng.standard_normal((new.n_inputs, R_MAX))
        a, b = updated.solve(x, history), fresh.solve(x, history)
        np.testing.assert_allclose(a.inputs, b.inputs, atol=scale)
        assert abs(a.cost - b.cost) <= scale * max(1.0, abs(b.cost))


def test_updated_mpc_carries_the_committed_inputs() -> None:
    old, new = delay_pair(1)
    mpc = DelayedMPC(old, horizon=6)
    for x in np.random.default_rng(5).standard_normal((5, old.n_states)):
        mpc(x)
    updated = mpc.with_model(new)
    np.testing.assert_array_equal(updated.history, mpc.history)     # same bound R
    assert updated.last_result is None


def test_gain_can_be_replaced() -> None:
    old, new = delay_pair(2)
    ctrl = make_controller("fractional", old)
    K = lqr_gain(new, Q=2 * np.eye(new.n_states))
    np.testing.assert_array_equal(ctrl.with_model(new, K=K).K, K)


@pytest.mark.parametrize("name", (*LINEAR, "mpc"))
def test_model_of_other_sizes_is_refused(name: str) -> None:
    old, _ = delay_pair(3)
    other = random_plant(4, n_states=old.n_states + 1, max_delay=R_MAX)
    ctrl = make_controller(name, old, horizon=5) if name == "mpc" else make_controller(name, old)
    with pytest.raises(DimensionError, match="states"):
        ctrl.with_model(other)
