"""Benchmark: DelayedMPC's first moves, every solver, against an MPC written here in cvxpy.

The reference is the problem of DelayedMPC's docstring written out independently (its own
lifting and Riccati terminal weight, the states as cvxpy variables, Clarabel at tolerances
1e-11): cost on ``x_{k+w+1} .. x_{k+w+N-1}`` and the inputs, ``z_N' P z_N`` on the lifted
terminal state; input bounds, hard or soft state bounds on ``x_{k+w+1} .. x_{k+w+N}``.

Random problems: 1-10 states, 1-3 inputs, stable or mildly unstable (slowest continuous mode
at +0.15), fractional delays 0-4.9 periods, nonzero committed inputs, horizons 1-40 (``--long``:
60-200), input bounds alone, with hard or soft state bounds, or none.  Each solver's first move
is compared with the reference's (relative to ``max(1, |u|)``); a solver may instead refuse
loudly (SolverError, ParameterError), and an infeasible reference must be reported infeasible.
Warnings other than the unstable-mode recovery warning count as false alarms.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mpc_independent.py \\
          [--first 0] [--count 190] [--long]
2026-11-28, 190 problems (seeds 0-189): every move within 1.7e-6 of the reference (CVXPY;
Clarabel 7.3e-7, the others 2.3e-7), 3 loud OSQP stops (soft bounds on unstable plants), the
50 infeasible problems reported so by every solver, no false alarm; before that day's fixes
Clarabel and CVXPY were 2.4e-4 and 2.5e-4 off on 3 soft problems.  ``--long --first 1000
--count 30``: all within 5.7e-9, 1 loud OSQP stop, 1 DAQP refusal (condensed Hessian's
condition 1.2e10), 11 infeasible problems reported so.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import cvxpy as cp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _toolbox.errors import ParameterError, SolverError, UnstableLoopWarning  # noqa: E402
from controllers.mpc import DelayedMPC  # noqa: E402
from dmdidc.model import DelayedPlant  # noqa: E402


def random_problem(seed: int, long: bool) -> tuple[DelayedPlant, dict, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 11)), int(rng.integers(1, 4))
    unstable = rng.random() < 0.3
    A_c = rng.standard_normal((n, n)) / np.sqrt(n)
    A_c -= (np.linalg.eigvals(A_c).real.max() + (-0.15 if unstable else 0.3)) * np.eye(n)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)),
                                         delay=rng.uniform(0, 4.9, m) * 0.3, dt=0.3)
    N = int(rng.choice([60, 100, 150, 200] if long else [1, 2, 3, 5, 10, 20, 40]))
    Q, R = np.diag(rng.uniform(0.1, 3, n)), np.diag(rng.uniform(0.1, 2, m))
    u_max = rng.uniform(0.2, 2, m)
    kind = int(rng.integers(0, 4))     # input bounds; + hard state; + soft state; none
    x0 = rng.standard_normal(n) * rng.choice([0.3, 1, 3])
    history = np.clip(rng.standard_normal((m, plant.max_delay)) * 0.5, -u_max[:, None],
                      u_max[:, None])
    kwargs: dict = dict(horizon=N, Q=Q, R=R)
    if kind != 3:
        kwargs.update(u_min=-u_max, u_max=u_max)
    if kind in (1, 2):
        x_max = rng.uniform(0.5, 4, n)
        kwargs.update(x_min=-x_max, x_max=x_max, soft_state_constraints=kind == 2)
    return plant, kwargs, x0, history


def riccati_weight(plant: DelayedPlant, Q: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, int]:
    """``(P, w)`` on z = [x, u_{-1} .. u_{-(R-w)}] of the delay-free plant advanced by w."""
    B = plant.B_blocks
    w = next(j for j in range(len(B)) if np.any(B[j]))
    n, m, L = plant.n_states, plant.n_inputs, len(B) - 1 - w
    F, G = np.zeros((n + m * L, n + m * L)), np.zeros((n + m * L, m))
    F[:n, :n], G[:n] = plant.A_d, B[w]
    for i in range(1, L + 1):
        F[:n, n + (i - 1) * m:n + i * m] = B[w + i]
        if i > 1:
            F[n + (i - 1) * m:n + i * m, n + (i - 2) * m:n + (i - 1) * m] = np.eye(m)
    if L:
        G[n:n + m] = np.eye(m)
    P = scipy.linalg.solve_discrete_are(F, G, scipy.linalg.block_diag(Q, np.zeros((m * L,) * 2)),
                                        R)
    return 0.5 * (P + P.T), w


def root(M: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh(0.5 * (M + M.T))
    return np.sqrt(np.clip(values, 0, None))[:, None] * vectors.T


def reference_move(plant, kwargs, x0, history, penalty) -> np.ndarray | None:
    """The reference's first move, or None where it finds the problem infeasible."""
    Q, R, N = kwargs["Q"], kwargs["R"], kwargs["horizon"]
    P, w = riccati_weight(plant, Q, R)
    B, n, m = plant.B_blocks, plant.n_states, plant.n_inputs
    past = len(B) - 1
    u, x = cp.Variable((m, N)), cp.Variable((n, w + N + 1))
    inputs = cp.hstack([cp.Constant(history), u]) if past else u     # column c: u_{k-past+c}
    constraints = [x[:, 0] == x0]
    for t in range(w + N):
        forcing = sum(B[j] @ inputs[:, past + t - j] for j in range(past + 1) if np.any(B[j]))
        constraints.append(x[:, t + 1] == plant.A_d @ x[:, t] + forcing)
    cost = cp.sum_squares(root(R) @ u)
    if N > 1:
        cost += cp.sum_squares(root(Q) @ x[:, w + 1:w + N])
    terminal = [x[:, w + N]] + [inputs[:, past + N - 1 - i] for i in range(past - w)]
    cost += cp.sum_squares(root(P) @ (cp.hstack(terminal) if len(terminal) > 1 else x[:, w + N]))
    if "u_min" in kwargs:
        constraints += [u >= np.outer(kwargs["u_min"], np.ones(N)),
                        u <= np.outer(kwargs["u_max"], np.ones(N))]
    if "x_min" in kwargs:
        window = x[:, w + 1:]
        slack = cp.Variable(window.shape, nonneg=True) if penalty is not None else 0
        if penalty is not None:
            cost += penalty * cp.sum(slack)
        constraints += [window + slack >= np.outer(kwargs["x_min"], np.ones(N)),
                        window - slack <= np.outer(kwargs["x_max"], np.ones(N))]
    problem = cp.Problem(cp.Minimize(cost), constraints)
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11,
                  max_iter=500)
    return None if problem.status != "optimal" else u.value[:, 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--count", type=int, default=190, help="number of problems")
    parser.add_argument("--long", action="store_true", help="horizons 60-200 (no CVXPY)")
    args = parser.parse_args()
    solvers = ("auto", "DAQP", "OSQP", "CLARABEL") + (() if args.long else ("CVXPY",))
    tally = {"agree": 0, "loud": 0, "infeasible, said so": 0, "WRONG": 0, "FALSE ALARM": 0}
    worst = dict.fromkeys(solvers, 0.0)
    for seed in range(args.first, args.first + args.count):
        plant, kwargs, x0, history = random_problem(seed, args.long)
        soft = kwargs.get("soft_state_constraints", False)
        penalty = DelayedMPC(plant, **kwargs).state_penalty if soft else None
        expected = reference_move(plant, kwargs, x0, history, penalty)
        for solver in solvers:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    move = DelayedMPC(plant, solver=solver, **kwargs).solve(x0, history)
                    move = move.first_input
                except (SolverError, ParameterError) as exc:
                    said = "infeasible" in str(exc)
                    key = "infeasible, said so" if expected is None and said else "loud"
                    tally[key] += 1
                    if key == "loud":
                        print(f"seed {seed} {solver}: {type(exc).__name__}: {str(exc)[:90]}")
                    continue
            alarms = [w for w in caught if not issubclass(w.category, UnstableLoopWarning)]
            if expected is None:
                tally["WRONG"] += 1
                print(f"seed {seed} {solver}: a move where the reference finds no solution")
                continue
            error = float(np.abs(move - expected).max()) / max(1.0, np.abs(expected).max())
            worst[solver] = max(worst[solver], error)
            key = "WRONG" if error > 1e-4 else "FALSE ALARM" if alarms else "agree"
            tally[key] += 1
            if key != "agree":
                print(f"seed {seed} {solver}: first move off by {error:.2e}, warnings "
                      f"{[str(w.message)[:60] for w in alarms]}")
    print(tally)
    print("largest relative first-move difference:",
          {solver: f"{value:.1e}" for solver, value in worst.items()})


if __name__ == "__main__":
    warnings.filterwarnings("ignore", message="Objective contains too many subexpressions")
    main()
