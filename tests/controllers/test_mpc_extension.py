"""Costs and constraints of one's own (``cvxpy_extension``, solver="CVXPY") take effect in the
loop, checked against the documented problem written in cvxpy here with the same terms.

Before 2026-11-28 the docs offered ``solver="CVXPY"`` "for costs and constraints of your own",
but the only route was to build ``cvxpy.Problem(mpc.problem.objective + extra, ...)`` and solve
it by hand: ``mpc(x)`` kept solving its own problem, whatever the user added.
"""

from __future__ import annotations

import copy

import cvxpy as cp
import numpy as np
import pytest

from _toolbox.errors import ParameterError, SolverError
from controllers.mpc import DelayedMPC
from dmdidc.model import DelayedPlant


@pytest.fixture
def plant() -> DelayedPlant:
    """Two inputs with fractional delays of 0.4 and 1.7 periods (w = 0, R = 2)."""
    A_c = np.array([[-0.3, 1.0, 0.0], [-1.0, -0.2, 0.5], [0.0, 0.3, -0.8]])
    B_c = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    return DelayedPlant.from_continuous(A_c, B_c, delay=[0.2, 0.85], dt=0.5)


def reference_move(plant, N, x0, history, extra):
    """First move of the documented problem (Q = I, R = I, the Riccati terminal weight taken
    from the controller, |u| <= 1) plus ``extra(u, states) -> (cost, constraints)``, the
    prediction written out step by step."""
    P = DelayedMPC(plant, horizon=N).terminal_weight
    B, m = plant.B_blocks, plant.n_inputs
    R = len(B) - 1
    u = cp.Variable((m, N))

    def move(i):
        return u[:, i] if i >= 0 else history[:, R + i]

    states = [x0]
    for t in range(N):
        states.append(plant.A_d @ states[-1] + sum(B[j] @ move(t - j) for j in range(R + 1)))
    z = cp.hstack([states[N]] + [move(N - 1 - i) for i in range(R)])
    cost = cp.quad_form(z, P) + cp.sum_squares(u) + sum(cp.sum_squares(s) for s in states[1:N])
    more_cost, more = extra(u, states)
    problem = cp.Problem(cp.Minimize(cost + more_cost), [cp.abs(u) <= 1] + more)
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return u.value[:, 0]


def fixed_first_move(u, x):
    return 0, [u[0, 0] == 0.123]


def costly_second_input(u, x):
    return 20 * cp.sum(cp.abs(u[1, :])) + 5 * cp.sum_squares(x[0, 1:]), []


@pytest.mark.parametrize("extension, extra", [
    (fixed_first_move, lambda u, s: (0, [u[0, 0] == 0.123])),
    (costly_second_input, lambda u, s: (20 * cp.sum(cp.abs(u[1, :]))
                                        + 5 * sum(cp.square(v[0]) for v in s[1:]), [])),
])
def test_an_extension_takes_effect_in_the_loop(plant, extension, extra):
    N = 8
    plain = DelayedMPC(plant, horizon=N, u_min=-1, u_max=1, solver="CVXPY")
    mpc = DelayedMPC(plant, horizon=N, u_min=-1, u_max=1, solver="CVXPY",
                     cvxpy_extension=extension)
    x, history = np.array([1.5, -1.0, 0.5]), np.zeros((2, plant.max_delay))
    for _ in range(4):     # the loop's own steps: the committed inputs carry the extension
        expected = reference_move(plant, N, x, history, extra)
        assert np.abs(plain.solve(x, history).first_input - expected).max() > 1e-2
        u = mpc(x)
        assert np.abs(u - expected).max() < 1e-6
        x = plant.simulate(x, u[:, None], history)[:, -1]
        history = mpc.history
    if extension is fixed_first_move:
        assert mpc.last_result.first_input[0] == pytest.approx(0.123, abs=1e-7)
    # copies and a re-designed controller keep it
    twin = copy.deepcopy(mpc)
    assert np.abs(twin(x) - mpc(x)).max() < 1e-7
    assert mpc.with_model(plant).cvxpy_extension is extension


def test_bad_extensions_are_refused(plant):
    with pytest.raises(ParameterError, match="only solver='CVXPY' solves; got solver='auto'"):
        DelayedMPC(plant, horizon=5, cvxpy_extension=fixed_first_move)
    with pytest.raises(ParameterError, match="must be a function"):
        DelayedMPC(plant, horizon=5, solver="CVXPY", cvxpy_extension=[1.0])
    with pytest.raises(ParameterError, match=r"must return \(cost, constraints\)"):
        DelayedMPC(plant, horizon=5, solver="CVXPY", cvxpy_extension=lambda u, x: 0)
    with pytest.raises(ParameterError, match="scalar cvxpy expression"):
        DelayedMPC(plant, horizon=5, solver="CVXPY", cvxpy_extension=lambda u, x: (u, []))
    with pytest.raises(ParameterError, match="list of cvxpy constraints"):
        DelayedMPC(plant, horizon=5, solver="CVXPY",
                   cvxpy_extension=lambda u, x: (0, [u[0, 0]]))
    with pytest.raises(ParameterError, match="non-convex"):
        DelayedMPC(plant, horizon=5, solver="CVXPY",
                   cvxpy_extension=lambda u, x: (-cp.sum_squares(u), []))


def impossible_first_move(u, x):
    return 0, [u[0, 0] == 5.0]


@pytest.mark.parametrize("bounds", [{}, {"x_min": -10.0, "x_max": 10.0}])
def test_an_extension_nothing_meets_is_named(plant, bounds):
    """Its constraints (u_0 = 5 beside |u| <= 1) made the problem infeasible, and the message
    read 'only input bounds (always feasible): numerical trouble' (with state bounds: 'the
    hard state bounds ... cannot be met'), naming solvers that cannot take an extension."""
    mpc = DelayedMPC(plant, horizon=8, u_min=-1, u_max=1, solver="CVXPY",
                     cvxpy_extension=impossible_first_move, **bounds)
    with pytest.raises(SolverError, match="infeasible") as info:
        mpc.solve(np.ones(3))
    message = str(info.value)
    assert "cvxpy_extension 'impossible_first_move'" in message, message
    assert "always feasible" not in message and "cannot be met" not in message
    # the same bounds without it have a plan: the extension is the cause
    assert DelayedMPC(plant, horizon=8, u_min=-1, u_max=1, solver="CVXPY",
                      **bounds).solve(np.ones(3)).status == "optimal"


def test_an_extension_holds_in_simulate_closed_loop(plant):
    from simulations import simulate_closed_loop

    capped = DelayedMPC(plant, horizon=8, u_min=-1, u_max=1, solver="CVXPY",
                        cvxpy_extension=capped_first_input)
    run = simulate_closed_loop(plant, capped, x0=[1.5, -1.0, 0.5], steps=15)
    free = simulate_closed_loop(plant, DelayedMPC(plant, horizon=8, u_min=-1, u_max=1),
                                x0=[1.5, -1.0, 0.5], steps=15)
    assert free.inputs[0].max() > 0.2                    # without it the cap would bind
    assert run.inputs[0].max() <= 0.05 + 1e-7
    assert run.final_norm < 0.5 * np.linalg.norm(run.states[:, 0])   # and the loop settles


def capped_first_input(u, x):
    return 0, [u[0, :] <= 0.05]
