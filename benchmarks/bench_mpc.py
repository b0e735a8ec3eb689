"""Benchmark: one constrained MPC step, DelayedMPC side by side with the QP solved by hand.

The case of issue 21: a random plant with n = 10 states, m = 2 inputs and fractional delays
(1.25 T and 2.5 T, so R = 3), horizon N = 20, |u| <= 1, in closed loop from a state that
saturates the inputs.  At every step each contender solves the same problem (same state, same
committed inputs) and keeps its own warm start; the plant follows DelayedMPC's move.  Per step,
the median over the steps of the CPU time of the calling thread (robust on a loaded machine;
the solvers run in that thread, BLAS single-threaded), the contenders taking turns at every
step and the loop replayed ``--repeats`` times, the fastest replay of each step counting:

* ``DelayedMPC auto``: the default (DAQP on the condensed QP), the whole ``solve`` call
  (argument checks, vector update, solve, predicted states, cost, result);
* ``DelayedMPC OSQP`` / ``CLARABEL`` / ``CVXPY``: the other solvers of the controller;
* ``DAQP by hand``: the condensed QP's matrices set up once in a ``daqp.Model``; per step only
  ``f = q0 + q_p p``, ``update(f=f)`` and ``solve()`` (the floor: the QP itself);
* ``OSQP by hand``: the sparse QP set up once in ``osqp.OSQP``; per step ``update(q, l, u)`` and
  ``solve()`` (warm-started);
* ``python-control``: ``control.optimal.solve_ocp`` on the lifted delay-free system (the same
  cost and bounds; a general nonlinear-programming path), a few steps only;
* ``do-mpc``: ``do_mpc.controller.MPC`` on the lifted system (CasADi + IPOPT), if installed.

Columns: median ms per step, ratio to the DAQP solve by hand, and the largest difference of the
first move from DelayedMPC's (the solutions agree to solver tolerance).  A second table shows
how ``solver="auto"`` scales with the horizon (DAQP on the condensed QP, then OSQP on the
sparse one).

Run:  .venv/bin/python benchmarks/bench_mpc.py [--steps 40] [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

# Small dense problems: BLAS threads only add contention.  Set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit_summary, summary_row  # noqa: E402

from controllers.mpc import DelayedMPC  # noqa: E402
from dmdidc.model import DelayedPlant  # noqa: E402

HORIZON = 20


def random_plant(seed: int = 0, n: int = 10) -> DelayedPlant:
    """n states, m = 2, delays (1.25 T, 2.5 T) so R = 3; mildly unstable continuous dynamics."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((n, n)) / np.sqrt(n)
    A_c -= (np.max(np.linalg.eigvals(A_c).real) - 0.05) * np.eye(n)  # slowest mode unstable
    B_c = rng.standard_normal((n, 2))
    dt = 0.2
    return DelayedPlant.from_continuous(A_c, B_c, delay=[1.25 * dt, 2.5 * dt], dt=dt)


def true_step(plant: DelayedPlant, x: np.ndarray, u: np.ndarray, past: np.ndarray) -> np.ndarray:
    R = plant.max_delay
    x_next = plant.A_d @ x + plant.B_blocks[0] @ u
    for j in range(1, R + 1):
        x_next += plant.B_blocks[j] @ past[:, R - j]
    return x_next


def parameter(x: np.ndarray, past: np.ndarray) -> np.ndarray:
    return np.concatenate([x, past.T.ravel()])


def daqp_by_hand(mpc: DelayedMPC) -> Callable:
    """The condensed QP's matrices in a DAQP workspace; a step updates f and solves."""
    import daqp

    qp = mpc._qp
    model = daqp.Model()
    lower, upper = qp.bounds(np.zeros(qp.q_p.shape[1]))
    model.setup(np.ascontiguousarray(qp.hessian), qp.q0.copy(), np.zeros((0, qp.n_variables)),
                upper, lower, np.zeros(len(lower), dtype=np.intc))
    m = mpc.plant.n_inputs

    def step(x: np.ndarray, past: np.ndarray) -> np.ndarray:
        model.update(f=qp.q0 + qp.q_p @ parameter(x, past))
        v, _, flag, _ = model.solve()
        assert flag == 1
        return np.asarray(v[:m])
    return step


def osqp_by_hand(mpc: DelayedMPC) -> Callable:
    """The sparse QP in OSQP (tolerance 1e-8, polished, warm-started); a step updates q, l, u."""
    import osqp
    import scipy.sparse as sp

    from controllers.mpc_qp import build_qp
    qp = build_qp(mpc.plant, dead_steps=mpc.dead_steps, horizon=mpc.horizon, Q=mpc.Q, R=mpc.R,
                  terminal_weight=mpc.terminal_weight, u_bounds=(mpc.u_min, mpc.u_max),
                  x_bounds=(None, None), soft=False, state_penalty=1.0, sparse=True)
    solver = osqp.OSQP()
    lower, upper = qp.bounds(np.zeros(qp.q_p.shape[1]))
    solver.setup(P=sp.triu(qp.hessian, format="csc"), q=qp.q0, A=qp.A, l=lower, u=upper,
                 eps_abs=1e-8, eps_rel=1e-8, polishing=True, verbose=False, max_iter=20000)
    m = mpc.plant.n_inputs

    def step(x: np.ndarray, past: np.ndarray) -> np.ndarray:
        p = parameter(x, past)
        low, high = qp.bounds(p)
        solver.update(q=qp.cost_vector(p), l=low, u=high)
        result = solver.solve()
        return np.asarray(result.x[:m])
    return step


def lifted_problem(mpc: DelayedMPC, x: np.ndarray, past: np.ndarray) -> np.ndarray:
    """The lifted state z = [x_{k+w}, u_{k-1}, ..., u_{k-R+w}] of the delay-free pair (F, G)."""
    plant, w = mpc.plant, mpc.dead_steps
    R, m = plant.max_delay, plant.n_inputs
    fixed = plant.simulate(x, np.zeros((m, w)), past)[:, -1]
    return np.concatenate([fixed, *[past[:, R - i] for i in range(1, R - w + 1)]])


def _lifted(mpc: DelayedMPC) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lifted delay-free system ``(F, G)`` and the state weight on its plant states."""
    F, G = mpc._F, mpc._G
    n, size = mpc.plant.n_states, G.shape[0]
    Q_lift = np.zeros((size, size))
    Q_lift[:n, :n] = mpc.Q
    return F, G, Q_lift


def python_control(mpc: DelayedMPC) -> Callable:
    """control.optimal.solve_ocp on the lifted delay-free system (same cost and bounds)."""
    import control
    import control.optimal as opt

    F, G, Q_lift = _lifted(mpc)
    size, m = G.shape
    system = control.ss(F, G, np.eye(size), np.zeros((size, m)), mpc.plant.dt)
    timepts = np.arange(mpc.horizon + 1) * mpc.plant.dt
    cost = opt.quadratic_cost(system, Q_lift, mpc.R)
    terminal = opt.quadratic_cost(system, mpc.terminal_weight, None)
    bounds = [opt.input_range_constraint(system, mpc.u_min, mpc.u_max)]

    def step(x: np.ndarray, past: np.ndarray) -> np.ndarray:
        result = opt.solve_ocp(system, timepts, lifted_problem(mpc, x, past), cost, bounds,
                               terminal_cost=terminal, print_summary=False)
        return np.asarray(result.inputs[:, 0])
    return step


def do_mpc_controller(mpc: DelayedMPC) -> Callable:
    """do_mpc.controller.MPC on the lifted delay-free system (CasADi + IPOPT)."""
    import do_mpc

    F, G, Q_lift = _lifted(mpc)
    size, m = G.shape
    model = do_mpc.model.Model("discrete")
    z = model.set_variable("_x", "z", shape=(size, 1))
    u = model.set_variable("_u", "u", shape=(m, 1))
    model.set_rhs("z", F @ z + G @ u)
    model.setup()
    controller = do_mpc.controller.MPC(model)
    controller.set_param(n_horizon=mpc.horizon, t_step=mpc.plant.dt, store_full_solution=False,
                         nlpsol_opts={"ipopt.print_level": 0, "ipopt.sb": "yes",
                                      "print_time": 0})
    controller.set_objective(lterm=z.T @ Q_lift @ z + u.T @ mpc.R @ u,
                             mterm=z.T @ mpc.terminal_weight @ z)
    controller.bounds["lower", "_u", "u"] = mpc.u_min
    controller.bounds["upper", "_u", "u"] = mpc.u_max
    controller.setup()
    controller.set_initial_guess()

    def step(x: np.ndarray, past: np.ndarray) -> np.ndarray:
        return np.asarray(controller.make_step(lifted_problem(mpc, x, past)[:, None])).ravel()
    return step


def compare(steps: int, slow_steps: int, headline: bool = False, repeats: int = 5
            ) -> dict[str, float]:
    """The contenders' median ms per step (printed); ``headline``: DelayedMPC auto and DAQP by
    hand only."""
    plant = random_plant()
    kwargs = dict(horizon=HORIZON, u_min=-1.0, u_max=1.0)
    # the closed loop of DelayedMPC, recorded; every contender then replays it in a pass of
    # its own (its warm start follows the same states; no contender runs on caches that
    # another one has just filled with its own data)
    reference = DelayedMPC(plant, **kwargs)
    x = 3.0 * np.random.default_rng(1).standard_normal(plant.n_states)
    past = np.zeros((plant.n_inputs, plant.max_delay))
    trajectory, moves, bound = [], [], []
    for _ in range(steps):
        result = reference.solve(x, past)
        u = result.first_input
        trajectory.append((x, past))
        moves.append(u)
        bound.append(bool(np.any(np.abs(result.inputs) > 1 - 1e-9)))   # an active bound
        x = true_step(plant, x, u, past)
        past = np.concatenate([past[:, 1:], u[:, None]], axis=1)
    saturated = sum(bool(np.any(np.abs(u) > 1 - 1e-6)) for u in moves)
    contenders: dict[str, tuple[Callable, int]] = {}
    for name in ("auto",) if headline else ("auto", "OSQP", "CLARABEL", "CVXPY"):
        mpc = DelayedMPC(plant, solver=name, **kwargs)
        contenders[f"DelayedMPC {name}"] = (lambda x, p, o=mpc: o.solve(x, p).first_input,
                                            steps)
    contenders["DAQP by hand"] = (daqp_by_hand(reference), steps)
    if not headline:
        contenders["OSQP by hand"] = (osqp_by_hand(reference), steps)
        contenders["python-control solve_ocp"] = (python_control(reference), slow_steps)
        try:
            contenders["do-mpc"] = (do_mpc_controller(reference), steps)
        except ImportError:
            print("(do-mpc not installed: skipped)")
    # The contenders take turns at every step (a burst of load hits them alike) and the loop is
    # replayed `repeats` times (the slow ones once); per step the fastest replay counts.
    spent = {name: [[] for _ in range(count)] for name, (_, count) in contenders.items()}
    errors = dict.fromkeys(contenders, 0.0)
    for replay in range(repeats):
        for k, ((x, past), u) in enumerate(zip(trajectory, moves, strict=True)):
            for name, (step, count) in contenders.items():
                if k >= count or (replay and count < steps):
                    continue
                start = time.thread_time()
                got = step(x, past)
                spent[name][k].append(time.thread_time() - start)
                errors[name] = max(errors[name], float(np.max(np.abs(got - u))))
    median, counts, split = {}, {}, {}
    for name, per_step in spent.items():
        best = [min(times) for times in per_step]
        # the first step pays one-off set-up (cvxpy compiles, DAQP factors)
        median[name] = statistics.median(best[1:] if len(best) > 2 else best) * 1e3
        counts[name] = len(best)
        # the steps with an active input bound (DAQP iterates) and those without (the
        # unconstrained minimizer is the solution: DelayedMPC then skips DAQP)
        split[name] = [statistics.median([t for k, t in enumerate(best[1:], 1)
                                          if bound[k] == active] or [np.nan]) * 1e3
                       for active in (True, False)]
    floor = median["DAQP by hand"]
    floors = split["DAQP by hand"]
    print(f"n=10 m=2 delays (1.25 T, 2.5 T) R=3, N={HORIZON}, |u|<=1, {steps} closed-loop steps "
          f"({saturated} with a saturated first move, {sum(bound)} with an active bound); "
          f"|x_end| = {np.linalg.norm(x):.1e}")
    header = (f"{'step':<27} {'median ms':>10} {'/ DAQP by hand':>15} {'bound active':>13} "
              f"{'none active':>12} {'max |du_0|':>11} {'steps':>6}")
    print(header)
    print("-" * len(header))
    for name, value in median.items():
        active, free = (t / f for t, f in zip(split[name], floors, strict=True))
        print(f"{name:<27} {value:>10.3f} {value / floor:>15.2f} {active:>13.2f} {free:>12.2f} "
              f"{errors[name]:>11.1e} {counts[name]:>6}")
    ours = split["DelayedMPC auto"]
    return {**median, "first move error": errors["DAQP by hand"],
            "active ratio": ours[0] / floors[0], "free ratio": ours[1] / floors[1]}


def scaling(steps: int) -> None:
    print(f"\nsolver='auto' against the horizon (n=10, m=2, |u|<=1, |x|<=20; median of {steps} "
          f"steps)")
    header = (f"{'N':>5} {'auto picks':>10} {'build ms':>9} {'auto ms':>8} {'DAQP ms':>8} "
              f"{'OSQP ms':>8}")
    print(header)
    print("-" * len(header))
    plant = random_plant()
    x0 = 3.0 * np.random.default_rng(1).standard_normal(plant.n_states)
    for N in (10, 20, 50, 100, 200, 400):
        row = {}
        for name in ("auto", "DAQP", "OSQP"):
            start = time.perf_counter()
            mpc = DelayedMPC(plant, horizon=N, u_min=-1.0, u_max=1.0, x_min=-20.0, x_max=20.0,
                             solver=name)
            build = time.perf_counter() - start
            x, past, spent = x0.copy(), np.zeros((2, plant.max_delay)), []
            for _ in range(steps):
                start = time.thread_time()
                u = mpc.solve(x, past).first_input
                spent.append(time.thread_time() - start)
                x = true_step(plant, x, u, past)
                past = np.concatenate([past[:, 1:], u[:, None]], axis=1)
            row[name] = (mpc.solver, build * 1e3, statistics.median(spent[1:]) * 1e3)
        print(f"{N:>5} {row['auto'][0]:>10} {row['auto'][1]:>9.1f} {row['auto'][2]:>8.3f} "
              f"{row['DAQP'][2]:>8.3f} {row['OSQP'][2]:>8.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="closed-loop steps")
    parser.add_argument("--slow-steps", type=int, default=4,
                        help="steps for python-control (a general NLP solve: ~seconds each)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="replays of the closed loop (per step the fastest counts)")
    parser.add_argument("--json", action="store_true",
                        help="only the headline row (DelayedMPC auto vs DAQP by hand) for "
                             "run_all.py's table")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # do-mpc and python-control talk on import
        median = compare(args.steps, args.slow_steps, headline=args.json,
                         repeats=args.repeats)
        if args.json:
            ours, floor = median["DelayedMPC auto"] / 1e3, median["DAQP by hand"] / 1e3
            error, active = median["first move error"], median["active ratio"]
            # the goal also on the steps with an active bound alone (where DAQP iterates)
            emit_summary([summary_row(
                f"MPC step (n = 10, m = 2, N = {HORIZON}, bounded inputs)", ours, floor,
                "DAQP by hand", "<= 2, first moves to 1e-4",
                ours <= 2 * floor and active <= 2 and error <= 1e-4,
                note=f"steps with an active bound {active:.2f}, without "
                     f"{median['free ratio']:.2f}; first moves agree to {error:.1e}")])
            return
        scaling(max(5, args.steps // 4))


if __name__ == "__main__":
    main()
