"""Soft state bounds do not depend on the states' units: the default penalty scales with them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from _toolbox.errors import SolverError
from controllers.mpc import DelayedMPC
from dmdidc.model import DelayedPlant


def cases(seed: int):
    """Random stable 2-3 state plants, starts, state and input bounds."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    A_c = rng.standard_normal((n, n))
    A_c -= (np.linalg.eigvals(A_c).real.max() + rng.uniform(0.1, 0.5)) * np.eye(n)
    B_c = rng.standard_normal((n, m))
    delay = rng.uniform(0.0, 2.0)
    for _ in range(20):
        x0 = rng.standard_normal(n)
        yield A_c, B_c, delay, x0, np.abs(x0).max() * rng.uniform(1.05, 2.0), rng.uniform(1, 3)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("scale", [1.0, 1e5])
def test_soft_plans_meet_the_bounds_whenever_the_hard_problem_can(seed, scale):
    """The exact L1 penalty: where the hard problem is feasible the soft plan is the hard one
    (its states within the bounds, its first move the hard one's), in any units."""
    checked = 0
    for A_c, B_c, delay, x0, bound, umax in cases(seed):
        plant = DelayedPlant.from_continuous(A_c, B_c * scale, delay=delay, dt=1.0)
        kwargs = dict(horizon=8, u_min=-umax, u_max=umax, x_min=-bound * scale,
                      x_max=bound * scale)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                hard = DelayedMPC(plant, **kwargs).solve(x0 * scale)
            except SolverError:
                continue                            # infeasible: the soft plan may leave
            soft = DelayedMPC(plant, soft_state_constraints=True, **kwargs).solve(x0 * scale)
        w = soft.dead_steps
        excess = np.abs(soft.states[:, w + 1:]).max() - bound * scale
        assert excess <= 1e-6 * bound * scale
        np.testing.assert_allclose(soft.first_input, hard.first_input, atol=1e-4 * umax)
        checked += 1
    assert checked >= 3


def test_the_default_penalty_scales_and_a_given_one_is_kept():
    plant = DelayedPlant.from_continuous([[0.0, 1.1], [-1.1, 0.0]], [[1.0, -1.0], [-1.0, 2.0]],
                                         delay=2.5, dt=2.0)
    small = DelayedMPC(plant, horizon=5, x_min=-1e3, x_max=1e3, soft_state_constraints=True)
    large = DelayedMPC(plant, horizon=5, x_min=-1e8, x_max=1e8, soft_state_constraints=True)
    assert large.state_penalty == pytest.approx(1e5 * small.state_penalty)
    given = DelayedMPC(plant, horizon=5, x_min=-1e5, x_max=1e5, soft_state_constraints=True,
                       state_penalty=3.0)
    assert given.state_penalty == 3.0
