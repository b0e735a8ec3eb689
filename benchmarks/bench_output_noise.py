"""OutputDMDidc under coloured output noise: right or loud, and what it costs.

Random stable plants (3 states, 2 inputs, delays 0.2-2.8 T, T = 0.5 s) seen through 2 random
sensors, white inputs, K samples, 20 dB output noise that is either white or AR(1) with pole
0.9 (each output's noise scaled to the same power).  A fit is *wrong* when its order is not 3
or an eigenvalue is off by more than 10 %; *loud* when it issues a DiagnosticWarning.  Times are
CPU seconds (``process_time``) of one default fit.

    python benchmarks/bench_output_noise.py [--seeds 10] [--samples 4000] [--pole 0.9]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import signal

from dmdidc import OutputDMDidc, random_excitation
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import random_plant

T, R = 0.5, 4


def _data(seed: int, samples: int, pole: float):
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n_states=3, n_inputs=2, dt=T, max_delay=R,
                         delay_periods=(0.2, 2.8))
    U = random_excitation(2, samples, rng=rng)
    C = rng.standard_normal((2, 3))
    Y = C @ plant.simulate(rng.standard_normal(3), U)[:, :samples]
    noise = signal.lfilter([1.0], [1.0, -pole], rng.standard_normal(Y.shape), axis=1)
    noise /= noise.std(axis=1, keepdims=True)
    return plant, Y + 0.1 * Y.std(axis=1, keepdims=True) * noise, U


def _run(seed: int, samples: int, pole: float) -> tuple[bool, bool, float, int]:
    plant, Y, U = _data(seed, samples, pole)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.process_time()
        est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
        seconds = time.process_time() - start
    truth = np.sort_complex(np.linalg.eigvals(plant.A_c))
    right = est.order_ == 3 and bool(np.max(np.abs(np.sort_complex(est.eigenvalues_) - truth)
                                            / np.abs(truth)) < 0.1)
    loud = any(issubclass(w.category, DiagnosticWarning) for w in caught)
    return right, loud, seconds, est.order_


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--pole", type=float, default=0.9)
    args = parser.parse_args()
    print(f"{'noise':>12} {'right':>6} {'loud':>5} {'silently wrong':>15} {'orders':>22} "
          f"{'CPU s/fit (median)':>19}")
    for name, pole in (("white", 0.0), (f"AR(1) {args.pole:g}", args.pole)):
        runs = [_run(seed, args.samples, pole) for seed in range(args.seeds)]
        right = sum(r for r, _, _, _ in runs)
        loud = sum(q for _, q, _, _ in runs)
        silent = sum(not r and not q for r, q, _, _ in runs)
        orders = ",".join(str(o) for _, _, _, o in runs)
        print(f"{name:>12} {right:>6} {loud:>5} {silent:>15} {orders:>22} "
              f"{np.median([s for _, _, s, _ in runs]):>19.2f}")


if __name__ == "__main__":
    main()
