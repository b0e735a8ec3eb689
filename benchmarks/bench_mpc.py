"""Benchmark: DelayedMPC solve time per closed-loop step vs horizon, both solvers.

For each plant (the seed plant of dissertation section 9.5 with delay 1.5 T, and a random plant
with n = 10, m = 2, R = 3), each solver and each horizon N, the script runs a closed loop with
|u| <= 1 and reports the median time per step (CPU time of the calling thread, which is robust
to a loaded machine; the solvers run in that thread) of

* ``param``: the DelayedMPC way - one DPP problem, parameters updated, warm-started re-solve;
* ``naive``: a fresh controller (new cvxpy problem, compiled and solved) at every step, with the
  same terminal weight passed in so that no Riccati solve is timed.

Columns: ``first ms`` is the first parametrized solve (includes cvxpy's one-off DPP compilation),
``param ms`` the median of the later ones (``wall ms``: the same in wall-clock time),
``solver ms`` the median time the QP solver itself reports, ``iters`` the median solver
iterations (OSQP checks termination every 25).

Run:  .venv/bin/python benchmarks/bench_mpc.py [--steps 30] [--naive-steps 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

# Small dense problems: BLAS threads only add contention (a 2x2 triangular solve took 20 ms on a
# loaded 2-core box).  Set before numpy is imported; an explicit environment value wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controllers.mpc import DelayedMPC  # noqa: E402
from dmdidc.model import DelayedPlant  # noqa: E402

HORIZONS = (5, 10, 20, 40)
SOLVERS = ("CLARABEL", "OSQP")


def seed_plant() -> DelayedPlant:
    """Seed plant: A_c = [[0, 1.1], [-1.1, 0]], B_c = [[1, -1], [-1, 2]], T = 2, delay 1.5 T."""
    A_c = np.array([[0.0, 1.1], [-1.1, 0.0]])
    B_c = np.array([[1.0, -1.0], [-1.0, 2.0]])
    return DelayedPlant.from_continuous(A_c, B_c, delay=3.0, dt=2.0)


def random_plant(seed: int = 0) -> DelayedPlant:
    """n = 10, m = 2, delays (1.25 T, 2.5 T) so R = 3; mildly unstable continuous dynamics."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((10, 10)) / np.sqrt(10)
    A_c -= (np.max(np.linalg.eigvals(A_c).real) - 0.05) * np.eye(10)  # slowest mode unstable
    B_c = rng.standard_normal((10, 2))
    dt = 0.2
    plant = DelayedPlant.from_continuous(A_c, B_c, delay=[1.25 * dt, 2.5 * dt], dt=dt)
    assert plant.max_delay == 3
    return plant


def true_step(plant: DelayedPlant, x: np.ndarray, u: np.ndarray, past: np.ndarray) -> np.ndarray:
    R = plant.max_delay
    x_next = plant.A_d @ x + plant.B_blocks[0] @ u
    for j in range(1, R + 1):
        x_next += plant.B_blocks[j] @ past[:, R - j]
    return x_next


def run(plant: DelayedPlant, solver: str, horizon: int, steps: int, naive_steps: int,
        x0: np.ndarray) -> dict[str, float]:
    kwargs = dict(horizon=horizon, u_min=-1.0, u_max=1.0, solver=solver)
    mpc = DelayedMPC(plant, **kwargs)
    P = mpc.terminal_weight
    x, past = x0.copy(), np.zeros((plant.n_inputs, plant.max_delay))
    param_times, param_wall, naive_times, iterations, solver_times = [], [], [], [], []
    for k in range(steps):
        start, wall = time.thread_time(), time.perf_counter()
        result = mpc.solve(x, past)
        param_times.append(time.thread_time() - start)
        param_wall.append(time.perf_counter() - wall)
        if result.iterations is not None:
            iterations.append(result.iterations)
        if result.solver_time is not None:
            solver_times.append(result.solver_time)
        if k < naive_steps:
            start = time.thread_time()
            fresh = DelayedMPC(plant, P=P, warm_start=False, **kwargs).solve(x, past)
            naive_times.append(time.thread_time() - start)
            assert np.allclose(fresh.first_input, result.first_input, atol=1e-5)
        u = result.first_input
        x = true_step(plant, x, u, past)
        past = np.concatenate([past[:, 1:], u[:, None]], axis=1)
    # the first parametrized solve includes the one-off DPP compilation: report it separately
    return {"first": param_times[0] * 1e3,
            "param": statistics.median(param_times[1:]) * 1e3,
            "wall": statistics.median(param_wall[1:]) * 1e3,
            "naive": statistics.median(naive_times) * 1e3,
            "solver": statistics.median(solver_times) * 1e3 if solver_times else float("nan"),
            "iters": statistics.median(iterations) if iterations else float("nan"),
            "final_norm": float(np.linalg.norm(x))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="closed-loop steps per case")
    parser.add_argument("--naive-steps", type=int, default=8,
                        help="steps on which the rebuild-every-step variant is also timed")
    args = parser.parse_args(argv)
    plants = {"seed n=2 m=2 R=2": (seed_plant(), np.array([3.0, -2.0])),
              "random n=10 m=2 R=3": (random_plant(), np.random.default_rng(1).standard_normal(10))}
    header = (f"{'plant':<21} {'solver':<9} {'N':>3} {'first ms':>9} {'param ms':>9} "
              f"{'wall ms':>8} {'solver ms':>9} {'naive ms':>9} {'naive/param':>11} "
              f"{'iters':>6} {'|x_end|':>9}")
    print(header)
    print("-" * len(header))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an inaccurate solve should not hide in a benchmark
        for name, (plant, x0) in plants.items():
            for solver in SOLVERS:
                for horizon in HORIZONS:
                    row = run(plant, solver, horizon, args.steps, args.naive_steps, x0)
                    print(f"{name:<21} {solver:<9} {horizon:>3} {row['first']:>9.2f} "
                          f"{row['param']:>9.2f} {row['wall']:>8.2f} {row['solver']:>9.2f} "
                          f"{row['naive']:>9.2f} "
                          f"{row['naive'] / row['param']:>11.1f} {row['iters']:>6.0f} "
                          f"{row['final_norm']:>9.1e}")


if __name__ == "__main__":
    main()
