"""Bounds on some channels only, and distant bounds, against an MPC written in cvxpy from the
documented cost (DelayedMPC's docstring), with delays: every solver gives its first move.

Before 2026-11-28 an infinite bound was refused (NonFiniteError), so a channel was left
unbounded with a stand-in such as 1e15, and Clarabel (called directly, or through cvxpy)
returned an 'optimal' first move of 0 where it was 0.067: its stopping tests scale with the
largest bound.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
import scipy.linalg

from _toolbox.errors import SolverError, UnstableLoopWarning
from controllers.mpc import DelayedMPC
from controllers.qp_solvers import DISTANT_BOUND_RATIO, QPOutcome, distant_bounds
from dmdidc.model import DelayedPlant

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_mpc_independent import random_problem  # noqa: E402  (the benchmark's problems)

SOLVERS = ("auto", "DAQP", "OSQP", "CLARABEL", "CVXPY")


def random_plant(rng: np.random.Generator, n: int, m: int) -> DelayedPlant:
    """A stable plant with fractional input delays of 0 .. 2.9 periods."""
    A_c = rng.standard_normal((n, n)) / np.sqrt(n)
    A_c -= (np.linalg.eigvals(A_c).real.max() + 0.3) * np.eye(n)
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)),
                                        delay=rng.uniform(0, 2.9, m) * 0.3, dt=0.3)


def terminal_weight(plant: DelayedPlant, Q: np.ndarray, R: np.ndarray) -> tuple[np.ndarray,
                                                                                 int]:
    """``(P, w)``: the Riccati weight on z = [x, u_{-1} .. u_{-(R-w)}] of the delay-free
    plant advanced by the whole delay ``w`` (built here, not with the library's lifting)."""
    B = plant.B_blocks
    w = next(j for j in range(len(B)) if np.any(B[j]))
    n, m, L = plant.n_states, plant.n_inputs, len(B) - 1 - w
    F, G = np.zeros((n + m * L, n + m * L)), np.zeros((n + m * L, m))
    F[:n, :n], G[:n] = plant.A_d, B[w]
    for i in range(1, L + 1):                   # slot i holds u_{t-i}, acting through B[w+i]
        F[:n, n + (i - 1) * m:n + i * m] = B[w + i]
        if i > 1:
            F[n + (i - 1) * m:n + i * m, n + (i - 2) * m:n + (i - 1) * m] = np.eye(m)
    if L:
        G[n:n + m] = np.eye(m)
    Q_lift = scipy.linalg.block_diag(Q, np.zeros((m * L, m * L)))
    return scipy.linalg.solve_discrete_are(F, G, Q_lift, R), w


def reference_move(plant, N, Q, R, x0, bounds, soft_penalty=None, history=None):
    """First move of the documented problem (channels with an infinite side unbounded on it):
    cost on x_{k+w+1} .. x_{k+w+N-1}, inputs, and z_N' P z_N; bounds on x_{k+w+1} ..
    x_{k+w+N}; the past inputs ``history`` (m, R), oldest first, or at rest (zero)."""
    P, w = terminal_weight(plant, Q, R)
    B, n, m = plant.B_blocks, plant.n_states, plant.n_inputs
    past = len(B) - 1
    u = cp.Variable((m, N))

    def move(i):
        return u[:, i] if i >= 0 else np.zeros(m) if history is None else history[:, past + i]

    states = [x0]
    for t in range(w + N):
        states.append(plant.A_d @ states[-1] + sum(B[j] @ move(t - j) for j in range(past + 1)
                                                   if np.any(B[j])))
    z = cp.hstack([states[w + N]] + [move(N - 1 - i) for i in range(past - w)])
    cost = cp.quad_form(z, P) + sum(cp.quad_form(u[:, i], R) for i in range(N))
    cost += sum(cp.quad_form(states[w + i], Q) for i in range(1, N))
    u_min, u_max, x_min, x_max = bounds
    constraints = []
    for i in range(N):
        for c in range(m):
            constraints += [u[c, i] >= u_min[c]] if np.isfinite(u_min[c]) else []
            constraints += [u[c, i] <= u_max[c]] if np.isfinite(u_max[c]) else []
        for c in range(n):
            slack = 0
            if soft_penalty is not None:
                slack = cp.Variable(nonneg=True)
                cost += soft_penalty * slack
            signal = states[w + i + 1][c]
            constraints += [signal >= x_min[c] - slack] if np.isfinite(x_min[c]) else []
            constraints += [signal <= x_max[c] + slack] if np.isfinite(x_max[c]) else []
    problem = cp.Problem(cp.Minimize(cost), constraints)
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return None if problem.status != "optimal" else u.value[:, 0]


def cases(seed):
    """Random plants (2-5 states, 2-3 inputs), one input channel unbounded below and one
    above, one state unbounded above and one below; hard or soft state bounds."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(2, 4))
    plant = random_plant(rng, n, m)
    u_min, u_max = -rng.uniform(0.2, 1.0, m), rng.uniform(0.2, 1.0, m)
    x_min, x_max = -rng.uniform(1.0, 3.0, n), rng.uniform(1.0, 3.0, n)
    u_min[0], u_max[-1], x_max[0], x_min[1] = -np.inf, np.inf, np.inf, -np.inf
    return (plant, int(rng.choice([2, 5, 15])), rng.standard_normal(n) * 0.7,
            (u_min, u_max, x_min, x_max), bool(seed % 2))


@pytest.mark.parametrize("seed", range(6))
def test_infinite_bounds_leave_their_channels_free_with_every_solver(seed):
    plant, N, x0, bounds, soft = cases(seed)
    n, m = plant.n_states, plant.n_inputs
    Q, R = np.eye(n), np.eye(m)
    kwargs = dict(horizon=N, Q=Q, R=R, u_min=bounds[0], u_max=bounds[1], x_min=bounds[2],
                  x_max=bounds[3], soft_state_constraints=soft)
    penalty = DelayedMPC(plant, **kwargs).state_penalty if soft else None
    expected = reference_move(plant, N, Q, R, x0, bounds, penalty)
    assert expected is not None        # the cases are feasible
    scale = max(1.0, np.abs(expected).max())
    for solver in SOLVERS:
        mpc = DelayedMPC(plant, solver=solver, **kwargs)
        assert np.isneginf(mpc.u_min[0]) and np.isposinf(mpc.x_max[0])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            move = mpc.solve(x0).first_input
        assert np.abs(move - expected).max() < 1e-5 * scale, solver


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("far", [1e12, 1e15, 1e20, 1e300])
def test_a_distant_bound_is_the_bound_it_says(solver, far):
    """The finding's case: a state bound of ``far`` on one channel beside bounds of 1 (a
    stand-in for "none") leaves the first move that of the problem without it."""
    plant = random_plant(np.random.default_rng(1), 3, 2)
    Q, R, x0 = np.eye(3), np.eye(2), np.full(3, 0.1)
    free = np.array([-1.0, -np.inf, -1.0]), np.array([1.0, np.inf, 1.0])
    expected = reference_move(plant, 3, Q, R, x0, (np.full(2, -np.inf), np.full(2, np.inf),
                                                   *free))
    assert np.abs(expected).max() > 0.05          # the move Clarabel gave as 0
    for bounds in ((np.array([-1.0, -far, -1.0]), np.array([1.0, far, 1.0])),
                   (np.full(3, -far), np.full(3, far))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            move = DelayedMPC(plant, horizon=3, Q=Q, R=R, x_min=bounds[0], x_max=bounds[1],
                              solver=solver).solve(x0).first_input
        assert np.abs(move - expected).max() < 1e-6 * np.abs(expected).max(), bounds[1]


@pytest.mark.parametrize("scale", [1e4, 1e6])
def test_clarabel_solves_a_plan_on_a_bound_at_large_scale(scale):
    """A plan riding a state bound at 1e4 with R = 1e3 (multipliers of 1e7) was reported
    PrimalInfeasible by Clarabel (DAQP and OSQP solved it): it now solves the QP scaled to
    its dynamics' size.  The reference is the same problem written in units of ``scale``."""
    plant = DelayedPlant(np.diag([0.9, 0.5]), np.eye(2)[None], 1.0)
    x0, x_max = scale * np.array([3.0, 0.5]), scale * np.array([2.0, 1.0])
    Q, R = np.eye(2), 1e3 * np.eye(2)
    unbounded = (np.full(2, -np.inf), np.full(2, np.inf), np.full(2, -np.inf))
    expected = scale * reference_move(plant, 5, Q, R, x0 / scale,
                                      (*unbounded, x_max / scale))
    plan = DelayedMPC(plant, horizon=5, Q=Q, R=R, x_max=x_max, solver="CLARABEL").solve(x0)
    assert np.all(plan.states[:, 1:] <= (x_max * (1 + 1e-6))[:, None])
    assert plan.states[0, 1] > 2 * scale * (1 - 1e-6)        # the bound binds
    assert np.abs(plan.first_input - expected).max() < 1e-6 * np.abs(expected).max()


def test_distant_bounds_rule():
    ratio = DISTANT_BOUND_RATIO
    assert not distant_bounds(np.array([1.0, ratio])).any()
    assert distant_bounds(np.array([1.0, 2 * ratio])).tolist() == [False, True]
    # relative to the smallest bound (signals in large units are not distant) ...
    assert not distant_bounds(np.array([1e5, 1e10])).any()
    # ... up to ratio ** 2: beyond it, always
    assert distant_bounds(np.array([1e15, 1e15])).all()
    assert not distant_bounds(np.array([0.0, -np.inf, np.inf])).any()


def test_unstable_plant_recovery_check_with_an_unbounded_channel():
    """An infinite input bound reaches the recovery check of an unstable plant without NaN
    (inf - inf): the unbounded channel can always bring the mode back, so no warning."""
    plant = DelayedPlant.from_continuous(np.array([[0.2]]), np.array([[1.0, 1.0]]),
                                         delay=[0.5, 0.5], dt=0.5)
    mpc = DelayedMPC(plant, horizon=10, u_min=[-0.01, -np.inf], u_max=[0.01, np.inf])
    x, past = np.array([50.0]), np.zeros((2, plant.max_delay))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnstableLoopWarning)
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(40):
            u = mpc(x)
            x = plant.simulate(x, u[:, None], past)[:, -1]
            past = mpc.history
    assert abs(x[0]) < 1e-3


def soft_case(seed):
    """The trial's random soft-bound problems (up to 10 states, 3 inputs, delays up to 4.9
    periods, committed inputs nonzero): the benchmark's draws, soft state bounds for these
    seeds."""
    plant, kwargs, x0, history = random_problem(seed, long=False)
    assert kwargs.get("soft_state_constraints"), seed
    return plant, kwargs, x0, history


@pytest.mark.parametrize("seed", [89, 146])
def test_clarabel_soft_moves_to_its_tolerance(seed):
    """With Clarabel's own tolerances (1e-8) these soft-bound first moves were 7e-5 (direct)
    and 2.9e-4 (through cvxpy) off DAQP's, beyond the documented 1e-4 agreement; with the
    defaults 1e-10, within 2e-6.  DAQP's move is checked against OSQP's (another method)."""
    plant, kwargs, x0, history = soft_case(seed)
    exact = DelayedMPC(plant, solver="DAQP", **kwargs).solve(x0, history).first_input
    other = DelayedMPC(plant, solver="OSQP", **kwargs).solve(x0, history).first_input
    assert np.abs(exact - other).max() < 1e-6
    for solver in ("CLARABEL", "CVXPY"):
        move = DelayedMPC(plant, solver=solver, **kwargs).solve(x0, history).first_input
        assert np.abs(move - exact).max() < 1e-5, solver


def stalled_case():
    """A review's random problem (4 states, delays 1.30 T and 0.94 T, unstable-free, N =
    36, R = diag(37, 131), bounds from 16 to 5e4 with infinite sides) on which Clarabel at
    tolerances 1e-10 stopped with 'InsufficientProgress' (its progress test: a residual
    jumped 100x above tol_feas), directly and through cvxpy, where its own 1e-8 solves it."""
    A_c = np.array([[-0.38527090356545857, -0.039425213494835805, -0.20061995515134984,
                     -0.9358153467573216],
                    [-0.06958525418711159, -1.3611738978094472, -0.2003965791014318,
                     -0.11751377734222924],
                    [0.6002955196514277, -0.6363173315592242, -1.0703029417923287,
                     1.0179669017711024],
                    [-0.2723271956196908, -0.3159642205021737, 0.8102701474076616,
                     -0.4743565534466793]])
    B_c = np.array([[-1.293020305872751, 0.4082036489905961],
                    [1.2737979672036042, 0.5299164444082823],
                    [-1.6061770608253054, 0.2352602976603339],
                    [-0.9527249184256126, -0.273339625362273]])
    plant = DelayedPlant.from_continuous(A_c, B_c, delay=[1.3011967636100608,
                                                          0.944118053644873], dt=1.0)
    Q = np.diag([1.9703646889008553, 0.2520887256676733, 1.1196440507483676,
                 1.0002672893934994])
    R = np.diag([36.883213475297396, 131.01829719900707])
    x0 = np.array([0.45720602091966095, 1.5554028349558422, -1.5200188070224374,
                   -0.24008130918366974])
    bounds = (np.array([-25470.357174301455, -np.inf]),
              np.array([54689.242750125166, 0.56772264687284879]),
              np.array([-np.inf, -429.70037785463273, -727.7488637668015, -np.inf]),
              np.array([16.470509213277413, 443.66783639061373, 1413.6809717817957, np.inf]))
    history = np.array([[0.025940784754560738, -0.01651304061749164],
                        [-0.02404543543289188, 0.19677043523873133]])
    return plant, Q, R, x0, bounds, history


@pytest.mark.parametrize("solver", ["CLARABEL", "CVXPY"])
def test_clarabel_stalled_at_tight_tolerances_solves_at_its_own(solver):
    plant, Q, R, x0, bounds, history = stalled_case()
    expected = reference_move(plant, 36, Q, R, x0, bounds, history=history)
    kwargs = dict(horizon=36, Q=Q, R=R, u_min=bounds[0], u_max=bounds[1], x_min=bounds[2],
                  x_max=bounds[3], solver=solver)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = DelayedMPC(plant, **kwargs).solve(x0, history)
    move = result.first_input
    assert np.abs(move - expected).max() < 1e-6 * np.abs(expected).max()
    if solver == "CLARABEL":
        own = {"tol_gap_abs": 1e-8, "tol_gap_rel": 1e-8, "tol_feas": 1e-8}   # Clarabel's
        alone = DelayedMPC(plant, solver_options=own, **kwargs).solve(x0, history)
        assert result.iterations > alone.iterations      # the stalled solve's count too
        # tolerances of one's own are one's own: no second solve
        tight = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}
        with pytest.raises(SolverError, match="InsufficientProgress"):
            DelayedMPC(plant, solver_options=tight, **kwargs).solve(x0, history)


def test_cvxpy_clarabel_stalled_at_tight_tolerances_solves_at_its_own(monkeypatch):
    """Through cvxpy a stall is a cvxpy SolverError (3 of a review's 80 random problems, each
    solved at Clarabel's own tolerances): solved again at those, unless the user set them."""
    plant, Q, R, x0, bounds, history = stalled_case()
    kwargs = dict(horizon=5, Q=Q, R=R, u_min=bounds[0], u_max=bounds[1], solver="CVXPY")
    expected = reference_move(plant, 5, Q, R, x0, (*bounds[:2], bounds[2] * np.inf,
                                                   bounds[3] * np.inf), history=history)
    calls = []
    original = cp.Problem.solve

    def stalls_when_tight(problem, *args, **options):
        calls.append(options.get("tol_feas"))
        if options.get("tol_feas", 1.0) < 1e-9:
            raise cp.error.SolverError("Solver 'CLARABEL' failed.")
        return original(problem, *args, **options)

    monkeypatch.setattr(cp.Problem, "solve", stalls_when_tight)
    move = DelayedMPC(plant, **kwargs).solve(x0, history).first_input
    assert calls == [1e-10, 1e-8]
    assert np.abs(move - expected).max() < 1e-6 * np.abs(expected).max()
    with pytest.raises(SolverError, match="failed"):
        DelayedMPC(plant, solver_options={"tol_feas": 1e-10}, **kwargs).solve(x0, history)


def soft_at_large_scale():
    """A review's random problem (5 states, delay 1.02 T, soft state bounds from 1 to 5e5
    beside states of 5e5): Clarabel through cvxpy called it 'infeasible', and the message
    read 'the hard state bounds ... cannot be met ... Use soft_state_constraints=True'."""
    A_c = np.array([[-0.35290427332050345, -0.8828144750664684, -0.5620853279215993,
                     -0.6404576485644805, -1.5811404225285295],
                    [-0.008985952565395647, -2.753677644241999, -1.1837741304574563,
                     -0.02007118856670853, 0.2726922794834607],
                    [-0.8089563469372972, 0.12942875169006401, -0.15705701050150944,
                     1.4199715686603163, 0.8886448803327246],
                    [-0.32199919457377885, 1.2511640326069204, -0.29481325460363805,
                     -1.6372490047513923, 0.9467208716622048],
                    [0.3614989178068832, 0.49060881481174134, -0.8324571307578486,
                     -0.27289791081523285, -1.0093081226087741]])
    B_c = np.array([[-1.7664467454217399], [2.23104410319756], [0.7993785460072322],
                    [-0.812851033142918], [1.179169817613754]])
    plant = DelayedPlant.from_continuous(A_c, B_c, delay=[1.0247751514111756], dt=1.0)
    kwargs = dict(horizon=11, Q=np.diag([0.39859719059585974, 0.3437528541863219,
                                         0.06128610619114074, 0.471260615617491,
                                         0.7946870720534956]),
                  R=394.96560373867425, u_min=-6528.463659198294, u_max=29071.189719140417,
                  x_min=[-41.652438569773572, -63943.825533169307, -1.1448089648290194,
                         -np.inf, -406042.99157057842],
                  x_max=[111.98419117900829, 82649.533901645322, 4.9640978977814170, np.inf,
                         525444.08570344024], soft_state_constraints=True)
    x0 = np.array([-510696.14354916045, -535280.5088461569, 193912.44475136115,
                   -442537.7934324194, -443948.35078394064])
    return plant, kwargs, x0, np.array([[381.268141515893, -221.3358309475662]])


def test_infeasible_soft_problem_is_called_numerical_trouble():
    plant, kwargs, x0, history = soft_at_large_scale()
    plan = DelayedMPC(plant, solver="DAQP", **kwargs).solve(x0, history)   # it has a plan
    assert plan.status == "optimal"
    try:
        DelayedMPC(plant, solver="CVXPY", **kwargs).solve(x0, history)
    except SolverError as exc:          # (a later cvxpy or Clarabel may solve it)
        message = str(exc)
        assert "soft" in message and "numerical trouble" in message, message
        assert "cannot be met" not in message and "Use soft_state_constraints" not in message
    # whichever solver reports 'infeasible' on soft or all-infinite state bounds is said so
    infinite = dict(kwargs, x_min=np.full(5, -np.inf), x_max=np.full(5, np.inf),
                    soft_state_constraints=False)
    for settings in (kwargs, infinite):
        mpc = DelayedMPC(plant, solver="OSQP", **settings)
        mpc._solver.solve = lambda p: QPOutcome(None, "infeasible", 1, 0.0)
        with pytest.raises(SolverError, match="always feasible") as info:
            mpc.solve(x0, history)
        assert "cannot be met" not in str(info.value)


def test_a_feasible_problem_called_infeasible_is_said_so():
    """A review's random problem (3 states, delay 3.5 T, one output bound at 2.3e5 beside
    states of 1.5e5, inputs free): Clarabel through cvxpy (not rescaled) reported it
    infeasible, and the message said the bound 'cannot be met' (the closest reached: the
    bound itself), though DAQP solves it.  A checked plan now says numerical trouble."""
    A_c = np.array([[-0.7665056686121523, 0.7599708644079872, 0.20337071953821506],
                    [1.6586636008151843, -0.9340208735440207, -1.8009658486555078],
                    [0.9187788841678789, 0.9341444187912877, -0.6882262006837521]])
    B_c = np.array([[-1.7779053892097485], [-0.3689646466587515], [-2.2109122000117822]])
    plant = DelayedPlant.from_continuous(A_c, B_c, delay=[0.35236963802304794], dt=0.1)
    C = np.array([[-1.7838454781954174, 1.2887231687245124, -0.13599423088681162]])
    kwargs = dict(horizon=17, Q=np.diag([0.024208995140616228, 0.19435080016299333,
                                         0.13918627815863727]), R=6071.7345349882335,
                  y_max=225770.81359472524, C=C, output_offset=-24168.996442055653)
    x0 = np.array([-46439.76490165085, 104185.75242913354, -153765.80317463048])
    history = np.array([[56685.63223883886, 60811.16621895571, 50404.557818658344,
                         54698.3095299516]])
    plan = DelayedMPC(plant, solver="DAQP", **kwargs).solve(x0, history)
    outputs = C @ plan.states[:, 4:] - 24168.996442055653
    assert np.all(outputs <= 225770.81359472524 * (1 + 1e-9))      # feasible, checked
    try:
        DelayedMPC(plant, solver="CVXPY", **kwargs).solve(x0, history)
    except SolverError as exc:          # (a later cvxpy or Clarabel may solve it)
        message = str(exc)
        assert "(checked)" in message and "numerical trouble" in message, message
        assert "cannot be met" not in message
    # a problem nothing solves keeps naming the bound that cannot be met
    with pytest.raises(SolverError, match="cannot be met"):
        DelayedMPC(plant, solver="CVXPY", **dict(kwargs, u_min=-1.0, u_max=1.0)).solve(
            x0, history)


@pytest.mark.parametrize("solver, remedy", [("CLARABEL", "solver='DAQP'"),
                                            ("CVXPY", "solver='DAQP'"),
                                            ("OSQP", "solver='CLARABEL'"),
                                            ("DAQP", "solver='CLARABEL'")])
def test_a_plan_beyond_its_bounds_names_another_solver(solver, remedy):
    """Clarabel's plans broke state bounds of 1e-2 beside states of 4e7 (a review's random
    problems; DAQP solved them), and the SolverError advised solver='CLARABEL'."""
    plant = random_plant(np.random.default_rng(0), 2, 1)
    mpc = DelayedMPC(plant, horizon=3, x_min=-1.0, x_max=1.0, solver=solver)
    with pytest.raises(SolverError, match="violates x_max") as info:
        mpc._check_state_bounds(np.full(2 * 3, 5.0))
    assert remedy in str(info.value) and f"solver='{solver}'" not in str(info.value)
