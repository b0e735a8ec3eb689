"""False alarms and misses of DelayedMPC's unstable-mode recovery warning.

Random plants (1-3 states, 1-2 inputs, one or more unstable modes, a delay up to 2 s, T = 1 s),
``|u| <= 0.3``, N = 20, starts of norm 0.1 .. 10 along a random direction, 80 steps: a loop
that ends above its start's norm (or whose solver gives up) counts as diverging.  Prints the
counts of warned / quiet x diverging / converging loops per seed.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_mpc_recovery.py [seeds] [plants]
"""

import sys
import warnings

import numpy as np

from _toolbox.errors import SolverError, UnstableLoopWarning
from controllers import DelayedMPC
from dmdidc import DelayedPlant
from simulations import simulate_closed_loop


def sweep(seed: int, plants: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    counts = {"warned_diverging": 0, "warned_converging": 0, "quiet_diverging": 0,
              "quiet_converging": 0}
    for _ in range(plants):
        n, m = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        A = rng.standard_normal((n, n)) * 0.5
        A -= np.eye(n) * (np.max(np.linalg.eigvals(A).real) - rng.uniform(0.05, 0.4))
        plant = DelayedPlant.from_continuous(A, rng.standard_normal((n, m)),
                                             delay=rng.uniform(0, 2), dt=1.0)
        direction = rng.standard_normal(n)
        direction /= np.linalg.norm(direction)
        for scale in (0.1, 0.3, 1, 3, 10):
            mpc = DelayedMPC(plant, horizon=20, u_min=-0.3, u_max=0.3)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    diverged = simulate_closed_loop(plant, mpc, scale * direction,
                                                    80).final_norm > scale
                except (ArithmeticError, SolverError):   # overwhelmed by the divergence
                    diverged = True
            warned = any(w.category is UnstableLoopWarning for w in caught)
            key = ("warned_" if warned else "quiet_") + ("diverging" if diverged
                                                         else "converging")
            counts[key] += 1
    return counts


if __name__ == "__main__":
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    plants = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    for seed in range(seeds):
        print(seed, sweep(seed, plants), flush=True)
