"""Plants whose states come in mixed units (1e-3 .. 1e3): every solver path gives the moves of
the same plant in common units, solved by an MPC written in cvxpy from the documented cost.

Before 2026-11-28 OSQP (forced, or picked by "auto") returned 'optimal' first moves of the
wrong sign on such plants (18 of 143 random problems off by more than 1e-4, worst 53 %; its
polish accepted with a dual residual 4.5 times its tolerance), or called them infeasible;
Clarabel's moves were 1.6e-3 off: the states' units spread the dynamics rows' entries over
1e-6 .. 1e6, and the solvers' stopping tests are relative to the largest.  The sparse QP is
now solved in equilibrated variables (controllers.qp_solvers.equilibrate).

The plant ``(S A S^-1, S B)`` with ``Q = S^-2`` and bounds ``S b`` is the plant ``(A, B)``
with ``Q = I`` and bounds ``b`` in the states ``S^-1 x``: the same inputs are optimal.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import controllers.qp_solvers as qp_solvers
from _toolbox.errors import SolverError
from controllers.mpc import DelayedMPC
from controllers.mpc_qp import build_qp
from controllers.qp_solvers import QPOutcome, equilibrate
from dmdidc.model import DelayedPlant
from tests.controllers.test_mpc_bounds import reference_move

SOLVERS = ("auto", "DAQP", "OSQP", "CLARABEL", "CVXPY")
#: Agreement with the reference, relative to max(1, |u|): the direct solvers (DAQP exact,
#: OSQP polished, Clarabel at 1e-10; measured within 1e-7 on 151 problems) and the cvxpy
#: path (not rescaled: Clarabel through cvxpy; measured 1.2e-5)
TOLERANCE = {"auto": 1e-6, "DAQP": 1e-6, "OSQP": 1e-6, "CLARABEL": 1e-6, "CVXPY": 1e-4}


def mixed_units_case(seed: int):
    """A random plant (2-5 states, 1-2 inputs, stable or not, fractional delays 0-3
    periods), its states in units 1e-3, 1 and 1e3 (at least two of them), input bounds and,
    for two seeds in three, hard state bounds; ``(common, mixed, S, N, bounds, x0)``."""
    rng = np.random.default_rng(seed)
    n, m, dt = int(rng.integers(2, 6)), int(rng.integers(1, 3)), rng.uniform(0.3, 1.0)
    A_c = rng.standard_normal((n, n))
    A_c -= (np.linalg.eigvals(A_c).real.max() + rng.uniform(-0.1, 0.8)) * np.eye(n)
    B_c, delay = rng.standard_normal((n, m)), rng.uniform(0, 3, m) * dt
    units = np.array([-3, 0, 3])
    s = 10.0 ** np.concatenate([rng.permutation(units)[:2], rng.choice(units, n - 2)])
    s = rng.permutation(s)
    S = np.diag(s)
    common = DelayedPlant.from_continuous(A_c, B_c, delay=delay, dt=dt)
    mixed = DelayedPlant.from_continuous(S @ A_c @ np.diag(1 / s), S @ B_c, delay=delay,
                                         dt=dt)
    u_max = rng.uniform(0.2, 2.0, m)
    x_max = rng.uniform(1.0, 4.0, n) if seed % 3 else np.full(n, np.inf)
    bounds = (-u_max, u_max, -x_max, x_max)
    return common, mixed, s, int(rng.choice([10, 40])), bounds, rng.standard_normal(n)


def check_case(seed: int) -> int:
    """Every solver on the mixed-unit plant against the reference on the common one; the
    number of solvers checked (0 when the reference finds the problem infeasible)."""
    common, mixed, s, N, (u_lo, u_hi, x_lo, x_hi), x0 = mixed_units_case(seed)
    n, m = common.n_states, common.n_inputs
    expected = reference_move(common, N, np.eye(n), np.eye(m), x0, (u_lo, u_hi, x_lo, x_hi))
    if expected is None:
        return 0
    checked = 0
    for solver in SOLVERS:
        mpc = DelayedMPC(mixed, horizon=N, Q=np.diag(s ** -2.0), u_min=u_lo, u_max=u_hi,
                         x_min=s * x_lo, x_max=s * x_hi, solver=solver)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)      # no inaccurate, no fallback
            warnings.filterwarnings("ignore", "the input bounds cannot bring")
            move = mpc.solve(s * x0).first_input
        error = np.abs(move - expected).max() / max(1.0, np.abs(expected).max())
        assert error < TOLERANCE[solver], (seed, solver, mpc.solver, error)
        checked += 1
    return checked


@pytest.mark.parametrize("seed", range(8))
def test_mixed_units_every_solver_gives_the_common_units_moves(seed):
    check_case(seed)


@pytest.mark.slow
def test_mixed_units_over_many_seeds():
    checked = sum(check_case(seed) for seed in range(8, 80))
    assert checked >= 5 * 50                     # most problems feasible


def test_equilibrated_mixed_units_are_the_common_ones():
    """Curtis and Reid's scales undo a diagonal change of units exactly (up to the powers of
    two): the equilibrated constraint matrices of ``S A S^-1`` and of ``A`` agree within a
    factor of 4 entry by entry, where the unscaled ones differ by up to 1e6."""
    for seed in range(6):
        common, mixed, s, N, (u_lo, u_hi, x_lo, x_hi), _ = mixed_units_case(seed)
        n, m = common.n_states, common.n_inputs
        dead = next(j for j, b in enumerate(common.B_blocks) if np.any(b))
        kwargs = dict(dead_steps=dead, horizon=N, R=np.eye(m), u_bounds=(u_lo, u_hi),
                      soft=False, state_penalty=1.0, sparse=True)
        size = n + m * (common.max_delay - dead)
        qps = [build_qp(plant, Q=Q, terminal_weight=np.eye(size), x_bounds=bounds, **kwargs)
               for plant, Q, bounds in ((common, np.eye(n), (x_lo, x_hi)),
                                        (mixed, np.diag(s ** -2.0), (s * x_lo, s * x_hi)))]
        (one, _), (other, _) = (equilibrate(qp) for qp in qps)
        assert (one.A != 0).nnz == (other.A != 0).nnz
        ratio = np.abs(other.A[one.A.nonzero()] / one.A[one.A.nonzero()])
        assert ratio.max() <= 4.0 and ratio.min() >= 0.25, seed


def wrong_sign_plant():
    """The review's plant: states in mm, m and km, N = 10, |u| <= 0.5, hard state bounds; the
    first move is -0.026879 (DAQP, Clarabel, the cvxpy path)."""
    A = np.array([[-0.3, 0.1, 1.0], [-0.6, -1.2, -0.5], [-1.0, -0.6, -1.8]])
    s = np.array([1e3, 1.0, 1e-3])
    plant = DelayedPlant.from_continuous(np.diag(s) @ A @ np.diag(1 / s),
                                         s[:, None] * np.array([[0.2], [0.7], [-0.8]]),
                                         delay=0.75, dt=0.5)
    kwargs = dict(horizon=10, Q=np.diag(s ** -2.0), u_min=-0.5, u_max=0.5, x_min=-1.5 * s,
                  x_max=1.5 * s)
    return plant, kwargs, s


def test_a_polish_beyond_osqps_tolerance_is_solved_again(monkeypatch):
    """Unequilibrated (as before), OSQP's polish returned +0.0246 'solved', its dual
    residual 4.5e-4 above the tolerance; the guard solves the step again unpolished."""
    plant, kwargs, s = wrong_sign_plant()
    expected = DelayedMPC(plant, solver="DAQP", **kwargs).solve(s).first_input
    assert expected[0] < -0.02
    monkeypatch.setattr(qp_solvers, "equilibrate",
                        lambda qp, least_spread=1.0: (qp, np.ones(qp.n_variables)))
    result = DelayedMPC(plant, solver="OSQP", **kwargs).solve(s)
    assert result.status == "optimal"
    np.testing.assert_allclose(result.first_input, expected, atol=1e-6)


@pytest.fixture
def osqp_says_infeasible(monkeypatch):
    """OSQP (set up by any controller) reports every step infeasible."""
    def infeasible(self, p):
        return QPOutcome(None, "infeasible", 7, 0.0)
    monkeypatch.setattr(qp_solvers.OSQPSolver, "solve", infeasible)
    import controllers.mpc as mpc_module
    monkeypatch.setattr(mpc_module, "AUTO_DENSE_ENTRIES", 0)     # "auto" picks OSQP


def test_auto_falls_back_to_clarabel_when_osqp_says_infeasible(osqp_says_infeasible):
    """The review's 12-state plant in mixed units (N = 450) was 'infeasible' to the OSQP
    that "auto" picked, and the SolverError advised solver='DAQP' (or 'auto')."""
    plant, kwargs, s = wrong_sign_plant()
    expected = DelayedMPC(plant, solver="DAQP", **kwargs).solve(s).first_input
    mpc = DelayedMPC(plant, solver="auto", **kwargs)
    assert mpc.solver == "OSQP"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            result = mpc.solve(s)
            assert result.solver == "CLARABEL" and result.status == "optimal"
            np.testing.assert_allclose(result.first_input, expected, atol=1e-6)
    said = [w for w in caught if "OSQP (picked by solver='auto')" in str(w.message)]
    assert len(said) == 1 and "'infeasible'" in str(said[0].message)
    # forced OSQP stays loud, and may advise 'auto'
    with pytest.raises(SolverError, match="numerical trouble") as info:
        DelayedMPC(plant, solver="OSQP", **kwargs).solve(s)
    assert "solver='DAQP' (or 'auto')" in str(info.value)


def test_auto_never_advises_auto(osqp_says_infeasible, monkeypatch):
    """When Clarabel agrees with OSQP the message names both and advises DAQP alone."""
    plant, kwargs, s = wrong_sign_plant()
    monkeypatch.setattr(qp_solvers.ClarabelSolver, "solve",
                        lambda self, p: QPOutcome(None, "infeasible", 3, 0.0))
    with pytest.raises(SolverError, match="OSQP and CLARABEL reported") as info:
        DelayedMPC(plant, solver="auto", **kwargs).solve(s)
    assert "'auto'" not in str(info.value) and "solver='DAQP'" in str(info.value)
    mpc = DelayedMPC(plant, solver="auto", **kwargs)
    with pytest.raises(SolverError, match="violates x_max") as info:
        mpc._check_state_bounds(np.full(3 * 10, 5e3), "CLARABEL")
    assert "'auto'" not in str(info.value)
    for status in ("user_limit", "error: OSQP status 'x'"):
        with pytest.raises(SolverError) as info:
            mpc._check_status(status, s, mpc.history, "OSQP")
        assert "'auto'" not in str(info.value), status


@pytest.mark.slow
def test_auto_on_the_long_mixed_units_plant():
    """The review's case itself: 12 states in mixed units, N = 450; "auto" (OSQP on the
    sparse QP) gives DAQP's first move."""
    rng = np.random.default_rng(3)
    for _ in range(3):      # the third random stable 12-state plant of this seed
        n, m, T = 12, 2, 0.5
        A = rng.standard_normal((n, n))
        A -= (np.max(np.linalg.eigvals(A).real) + rng.uniform(0.1, 1)) * np.eye(n)
        B = rng.standard_normal((n, m))
        delay = rng.uniform(0, 3, m) * T
        s = 10.0 ** rng.choice([-3, 0, 3], n)
        ub, xb = rng.uniform(0.2, 1, m), rng.uniform(1, 3, n)
        x0 = rng.uniform(-1, 1, n) * xb * 0.9
    plant = DelayedPlant.from_continuous(np.diag(s) @ A @ np.diag(1 / s), s[:, None] * B,
                                         delay, T)
    kwargs = dict(horizon=450, Q=np.diag(s ** -2.0), u_min=-ub, u_max=ub, x_min=-s * xb,
                  x_max=s * xb)
    expected = DelayedMPC(plant, solver="DAQP", **kwargs).solve(s * x0).first_input
    mpc = DelayedMPC(plant, **kwargs)
    assert mpc.solver == "OSQP"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = mpc.solve(s * x0)
    assert result.solver == "OSQP"
    np.testing.assert_allclose(result.first_input, expected, atol=1e-6)
