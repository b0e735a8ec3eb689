"""DelayedMPC warns when input bounds cannot bring an unstable mode back (by its own plan)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from _toolbox.errors import SolverError, UnstableLoopWarning
from controllers.mpc import DelayedMPC
from dmdidc.model import DelayedPlant
from simulations.closed_loop import simulate_closed_loop


def unstable_plant(seed: int) -> tuple[DelayedPlant, np.ndarray, float]:
    """A plant with one unstable mode ``a > 0`` and stable others, the left eigenvector ``w``
    of that mode, and the continuous recovery limit: from ``z = w'x`` with ``|u_j| <= 1``
    the mode ``z' = a z + w'B u(t - r)`` is brought back iff ``|z(r)| < sum_j |w'b_j| / a``
    (the inputs at full force; independent of the MPC)."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    a = rng.uniform(0.05, 0.5)
    rates = np.concatenate([[a], -rng.uniform(0.2, 1.5, n - 1)])
    S = rng.standard_normal((n, n)) + 2 * np.eye(n)
    A = S @ np.diag(rates) @ np.linalg.inv(S)
    B = rng.standard_normal((n, m))
    delay = rng.uniform(0.0, 2.0)
    plant = DelayedPlant.from_continuous(A, B, delay=delay, dt=rng.uniform(0.3, 1.0))
    w = np.linalg.inv(S)[0]                  # left eigenvector: w'A = a w'
    limit = np.abs(w @ B).sum() / a / np.exp(a * delay)   # |w'x0| limit (z grows over r)
    return plant, w, limit


def run(plant: DelayedPlant, x0: np.ndarray, steps: int) -> tuple[float, list[str]]:
    mpc = DelayedMPC(plant, horizon=30, u_min=-1.0, u_max=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            final = simulate_closed_loop(plant, mpc, x0, steps).final_norm
        except (ArithmeticError, SolverError):   # a solver overwhelmed by the divergence
            final = np.inf
    return final, [str(w.message) for w in caught if w.category is UnstableLoopWarning]


@pytest.mark.parametrize("seed", range(6))
def test_beyond_recovery_warns_once_and_diverges(seed):
    plant, w, limit = unstable_plant(seed)
    x0 = 1.5 * limit * w / (w @ w)           # unstable component 1.5x the limit
    final, caught = run(plant, x0, 60)
    assert len(caught) == 1
    assert "Widen the input bounds" in caught[0]
    assert final > np.linalg.norm(x0)         # the warning was right: the loop diverged


@pytest.mark.parametrize("seed", range(6))
def test_recoverable_start_converges_without_warning(seed):
    plant, w, limit = unstable_plant(seed)
    x0 = 0.5 * limit * w / (w @ w)
    final, caught = run(plant, x0, 200)
    assert caught == []
    assert final < 1e-3 * np.linalg.norm(x0)


def test_stable_plant_on_its_bounds_does_not_warn():
    plant = DelayedPlant.from_continuous([[-0.2, 1.0], [0.0, -0.5]], [[0.0], [1.0]],
                                         delay=1.5, dt=1.0)
    final, caught = run(plant, np.array([50.0, -40.0]), 200)
    assert caught == []
    assert final < 1e-3


def test_the_trial_scalar_plant():
    """The trial: |u| <= 0.1 on x' = 0.2 x; from 2 beyond recovery, from 0.3 within."""
    plant = DelayedPlant.from_continuous([[0.2]], [[1.0]], delay=1.5, dt=1.0)
    mpc = DelayedMPC(plant, horizon=20, u_min=-0.1, u_max=0.1)
    with pytest.warns(UnstableLoopWarning, match="cannot bring"):
        mpc.solve([2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnstableLoopWarning)
        DelayedMPC(plant, horizon=20, u_min=-0.1, u_max=0.1).solve([0.3])


@pytest.mark.parametrize("seed", range(6))
def test_one_mode_interval_decides_as_the_box_least_squares(seed):
    """With one unstable mode the check tests the interval the bounded moves reach
    (``_reach_maps``' span) instead of ``lsq_linear``: both decide alike on states from well
    inside to far beyond the region (asymmetric bounds; one-sided on odd seeds)."""
    from scipy.optimize import lsq_linear

    plant, w, limit = unstable_plant(seed)
    m = plant.n_inputs
    u_min, u_max = -np.linspace(0.5, 1.0, m), np.linspace(0.2, 0.9, m)
    if seed % 2:
        u_max = None
    mpc = DelayedMPC(plant, horizon=10, u_min=u_min, u_max=u_max)
    reach_u, reach_p, span = mpc._reach_maps()
    assert span is not None
    rng = np.random.default_rng(seed)
    agreed, outcomes = 0, set()
    for size in limit * np.geomspace(1e-2, 1e2, 30):
        p = np.concatenate([w / (w @ w) * size * rng.choice([-1.0, 1.0]),
                            rng.uniform(-0.5, 0.5, m * plant.max_delay)])
        free = reach_p @ p
        best = lsq_linear(reach_u, -free, bounds=tuple(mpc._reach_bounds), method="bvls")
        exact = np.linalg.norm(reach_u @ best.x + free) <= 1e-7 * np.linalg.norm(free)
        value = float(free[0])
        interval = max(0.0, value + span[0], -(value + span[1])) <= 1e-7 * abs(value)
        edge = min(abs(value + span[0]), abs(value + span[1]))
        if edge > 1e-6 * (abs(value) + 1.0):        # not at the region's edge itself
            assert interval == exact, (size, value, span)
            agreed += 1
            outcomes.add(bool(exact))
    assert agreed >= 25
    # (one-sided bounds on inputs pushing the mode both ways reach every value)
    assert outcomes == ({True} if np.isinf(span).all() else {True, False})
