"""DMDidc(max_delay=0) on random plants: a delay beyond the bound must fail delay_bound.

Each seed draws a random stable plant (2-3 states, 1-2 inputs, modes slower than 1/T,
T = 0.5 s) and white inputs, once with true delays uniform in (0.3 T, 2 T) and once with no
delay, with measurement noise of ``--noise`` times each state's spread.  Delayed: *loud*
(``delay_bound`` failed: the command line refuses the model) or *silent*.  Undelayed:
*quiet* or a *false alarm* (``delay_bound`` failed).  The CPU time of the fits is printed
beside the time of the same fits with the zero-bound check switched off (its refit runs only
on a symptom of the R = 0 fit), as the ratio.

    python benchmarks/bench_max_delay0.py [--seeds 30] [--noise 0.02] [--samples 2000]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from dmdidc import DelayedPlant, DMDidc, random_excitation
from dmdidc.estimator import DMDidc as Estimator

T = 0.5


def record(seed: int, delayed: bool, noise: float, samples: int):
    """A random plant's record (also the draws of tests/dmdidc/inference/test_zero_bound.py)."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    A = rng.standard_normal((n, n))
    A -= (np.linalg.eigvals(A).real.max() + rng.uniform(0.1, 1.0)) * np.eye(n)
    delays = rng.uniform(0.3, 2.0, m) * T if delayed else np.zeros(m)
    plant = DelayedPlant.from_continuous(A, rng.standard_normal((n, m)), delays, T)
    U = random_excitation(m, samples, rng=rng)
    X = plant.simulate(np.zeros(n), U)
    return X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape), U


def fits(data: list, check: bool) -> tuple[list[bool], float]:
    """``delay_bound`` failed per record, and the CPU seconds of the fits."""
    original = Estimator._zero_bound
    if not check:
        Estimator._zero_bound = lambda self, *args: None
    try:
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            failed = [DMDidc(max_delay=0).fit(X, U, dt=T).diagnostics_["delay_bound"].failed
                      for X, U in data]
        return failed, time.process_time() - start
    finally:
        Estimator._zero_bound = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    for delayed in (True, False):
        data = [record(seed, delayed, args.noise, args.samples) for seed in range(args.seeds)]
        failed, checked = fits(data, True)
        _, unchecked = fits(data, False)
        verdict = "loud" if delayed else "false alarm"
        print(f"{'delays in (0.3, 2) T' if delayed else 'no delay':>22}: {verdict} "
              f"{sum(failed)} of {len(failed)} (noise {args.noise:g}, K {args.samples}); "
              f"CPU {checked:.2f} s with the check, {unchecked:.2f} s without "
              f"(ratio {checked / unchecked:.2f})", flush=True)


if __name__ == "__main__":
    main()
