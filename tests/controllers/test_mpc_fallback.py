"""solver="auto": a step where OSQP stops at its limit is solved by Clarabel, said once."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import controllers.mpc as mpc_module
from _toolbox.errors import SolverError
from controllers.mpc import DelayedMPC
from tests.controllers.test_mpc import random_delayed_plant


@pytest.mark.parametrize("seed", range(4))
def test_auto_falls_back_to_clarabel_when_osqp_stops(seed, monkeypatch):
    monkeypatch.setattr(mpc_module, "AUTO_DENSE_ENTRIES", 0)     # "auto" picks OSQP
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(1, 3))
    plant = random_delayed_plant(rng, n, m)
    kwargs = dict(horizon=int(rng.integers(5, 20)), u_min=-0.5, u_max=0.5)
    if seed % 2:
        kwargs.update(x_min=-30.0, x_max=30.0)
    limited = DelayedMPC(plant, solver="auto", solver_options={"max_iter": 2}, **kwargs)
    assert limited.solver == "OSQP"
    reference = DelayedMPC(plant, solver="CLARABEL", **kwargs)
    x, past = 2.0 * rng.standard_normal(n), np.zeros((m, plant.max_delay))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            got, expected = limited.solve(x, past), reference.solve(x, past)
            assert got.solver == "CLARABEL" and got.status == "optimal"
            np.testing.assert_allclose(got.inputs, expected.inputs, atol=1e-6)
            x = plant.simulate(x, got.inputs[:, :1], past)[:, -1]
            past = np.concatenate([past[:, 1:], got.inputs[:, :1]], axis=1)
    said = [w for w in caught if "OSQP (picked by solver='auto')" in str(w.message)]
    assert len(said) == 1 and said[0].category is RuntimeWarning
    # forced OSQP stays loud
    forced = DelayedMPC(plant, solver="OSQP", solver_options={"max_iter": 2}, **kwargs)
    with pytest.raises(SolverError, match="user_limit"):
        forced.solve(x, past)


def test_auto_picks_clarabel_for_large_problems_with_soft_bounds(monkeypatch):
    monkeypatch.setattr(mpc_module, "AUTO_DENSE_ENTRIES", 0)     # every problem "large"
    plant = random_delayed_plant(np.random.default_rng(0), 4, 2)
    soft = dict(x_min=-2.0, x_max=2.0, soft_state_constraints=True)
    assert DelayedMPC(plant, horizon=10, u_min=-1, u_max=1, **soft).solver == "CLARABEL"
    assert DelayedMPC(plant, horizon=10, u_min=-1, u_max=1).solver == "OSQP"
