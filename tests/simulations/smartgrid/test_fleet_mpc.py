"""The batched fleet MPC equals one DelayedMPC per household (same problem, solved together)."""

import numpy as np
import pytest

from controllers import DelayedMPC
from dmdidc import DelayedPlant
from simulations.smartgrid.fleet_mpc import FleetMPC

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _plant(delay_periods=1.4):
    A_c = np.array([[-1 / 1.2, 1 / 1.5], [1 / 6.0, -1 / 6.0 - 1 / 20.0]]) / 3600.0 * 300.0
    B_c = np.array([[0.0], [2.0 / 6.0]]) / 3600.0 * 300.0
    return DelayedPlant.from_continuous(A_c / 300.0, B_c / 300.0, delay_periods * 300.0, 300.0)


@pytest.mark.parametrize("comfort", [None, (-0.3, 0.3)])
def test_fleet_mpc_equals_delayed_mpc_per_household(comfort):
    plant = _plant()
    rng = np.random.default_rng(0)
    N, H, R = 5, 6, plant.max_delay
    Q, Rw = np.diag([1.0, 0.1]), np.array([[1.0]])
    fleet = FleetMPC(plant, households=N, horizon=H, Q=Q, R=Rw, input_limits=(-0.5, 0.5),
                     comfort=comfort, comfort_penalty=50.0)
    e = rng.normal(scale=[0.8, 1.5], size=(N, 2))
    history = rng.uniform(-0.3, 0.3, size=(N, R))               # newest first
    u_ss = rng.uniform(-0.3, 0.3, size=N)
    x_ss = np.column_stack([np.zeros(N), rng.normal(size=N)])
    m = np.full(H + R + 2, 0.05)
    dx = np.zeros((H + R + 2, 2))
    moves = fleet(e, history, u_ss=u_ss, x_ss=x_ss, m=m, dx=dx)
    assert fleet.dead_steps == 1
    for i in range(N):
        low, high = -0.5 - u_ss[i] - m[0], 0.5 - u_ss[i] - m[0]
        options = {}
        if comfort is not None:
            options = dict(x_min=[comfort[0] - x_ss[i, 0], -1e6],
                           x_max=[comfort[1] - x_ss[i, 0], 1e6],
                           soft_state_constraints=True, state_penalty=50.0)
        single = DelayedMPC(plant, horizon=H, Q=Q, R=Rw, u_min=low, u_max=high, **options)
        result = single.solve(e[i], history[i, ::-1][None, :])
        np.testing.assert_allclose(moves[i], result.first_input[0], atol=2e-5)
    # the comparison can fail: the constraints matter for at least one household
    unconstrained = FleetMPC(plant, households=N, horizon=H, Q=Q, R=Rw,
                             input_limits=(-50.0, 50.0), comfort=None)
    free = unconstrained(e, history, u_ss=u_ss, x_ss=x_ss, m=m, dx=dx)
    assert np.max(np.abs(free - moves)) > 1e-3
