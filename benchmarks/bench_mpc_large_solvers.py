"""OSQP against Clarabel on the sparse QP of large MPC problems (the range ``solver="auto"``
does not condense for DAQP), which sets auto's choice between them.

Random stable plants (4, 8 or 10 states, 2 inputs, fractional delays), N = 150 or 300,
``|u| <= 0.5``; odd seeds add soft state bounds ``|x| <= 2`` (``--hard``: loose hard bounds
``|x| <= 20``).  Prints per seed: states, horizon, bounded, then each solver's CPU ms per step
of a 10-step closed loop and whether it finished (a ``SolverError``: OSQP at its limit).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_mpc_large_solvers.py [first last]
"""

import sys
import time
import warnings

import numpy as np

from controllers import DelayedMPC
from dmdidc import DelayedPlant
from simulations import simulate_closed_loop


def main(first: int = 0, last: int = 12, hard: bool = False) -> None:
    warnings.simplefilter("ignore")
    for seed in range(first, last):
        rng = np.random.default_rng(seed)
        n, m, N = int(rng.choice([4, 8, 10])), 2, int(rng.choice([150, 300]))
        A = rng.standard_normal((n, n)) / np.sqrt(n)
        A -= (np.max(np.linalg.eigvals(A).real) + rng.uniform(0.05, 0.3)) * np.eye(n)
        plant = DelayedPlant.from_continuous(A, rng.standard_normal((n, m)),
                                             delay=rng.choice([0.25, 1.25, 2.5], size=m) * 0.5,
                                             dt=0.5)
        bounded = bool(seed % 2)
        kwargs: dict = dict(horizon=N, u_min=-0.5, u_max=0.5)
        if bounded:
            kwargs.update(dict(x_min=-20.0, x_max=20.0) if hard else
                          dict(x_min=-2.0, x_max=2.0, soft_state_constraints=True))
        x0 = 3 * rng.standard_normal(n)
        row: list = [seed, n, N, bounded]
        for solver in ("OSQP", "CLARABEL"):
            mpc = DelayedMPC(plant, solver=solver, **kwargs)
            start = time.process_time()
            try:
                simulate_closed_loop(plant, mpc, x0, 10)
                status = "ok"
            except Exception as exc:    # noqa: BLE001 - the outcome is what is measured
                status = type(exc).__name__
            row += [solver, round((time.process_time() - start) / 10 * 1e3, 1), status]
        print(*row, flush=True)


if __name__ == "__main__":
    numbers = [int(a) for a in sys.argv[1:] if not a.startswith("--")]
    main(*numbers, hard="--hard" in sys.argv)
