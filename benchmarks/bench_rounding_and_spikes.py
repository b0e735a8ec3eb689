"""Two false alarms of a user trial, over random plants: exact data written with 8 digits
around offsets, and coloured noise with a few spikes.

Sections:

  rounded  noise-free states of random plants (``simulations.studies.data_kinds.random_plant``:
           3 states, 2 inputs, fractional delays, T = 0.5 s, max_delay = 4, K = 4000, i.i.d.
           inputs) plus offsets of 20 state rms (and of 20, -3 and 100 rms), states and inputs
           written with ``%.8g`` and read back; the default fit and robust IV: how many fail
           ``block_structure`` (any check), and how many 99.9 % delay intervals miss the true
           delay.  The normal equations' residual covariance of such data is their rounding
           (the QR switch, :func:`dmdidc.regression.solution.residual_rounding_share`).
  spikes   2-5 states, 1-2 inputs, K 1e3-1e4, 3 % measurement noise, white or AR(1)-coloured
           (0.9), with 6 spikes of 20 state deviations or 1 % outliers of 50 noise levels; the
           default fit: how often ``whiteness`` and ``state_completeness`` fail (whiteness
           reads the residuals the outlier check flags clipped at its threshold).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_rounding_and_spikes.py
      [--seeds 12] [--sections rounded spikes]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy import signal

from dmdidc import DMDidc, random_excitation
from simulations.studies.data_kinds import random_plant

R = 4


def written(a: np.ndarray) -> np.ndarray:
    """``a`` as written with ``%.8g`` and read back."""
    return np.array([float(f"{v:.8g}") for v in a.ravel()]).reshape(a.shape)


def _quiet(est: DMDidc, X: np.ndarray, U: np.ndarray, dt: float) -> DMDidc:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, U, dt=dt)


def rounded_section(seeds: int) -> None:
    print(f"{'offsets (state rms)':22s} {'estimator':10s} {'block_structure':>16s} "
          f"{'any check':>10s} {'99.9 % delay interval misses':>29s}")
    for offsets in ([20.0, 20.0, 20.0], [20.0, -3.0, 100.0]):
        for estimator in ("auto", "huber_iv"):
            structure = failed = missed = 0
            for seed in range(seeds):
                rng = np.random.default_rng(9000 + seed)
                plant = random_plant(rng)
                U = random_excitation(plant.n_inputs, 4000, rng=rng)
                X = plant.simulate(np.zeros(plant.n_states), U)
                rms = np.sqrt(np.mean(X ** 2, axis=1, keepdims=True))
                est = _quiet(DMDidc(max_delay=R, estimator=estimator),
                             written(X + np.array(offsets)[:, None] * rms), written(U),
                             plant.dt)
                checks = est.diagnostics_
                structure += checks["block_structure"].passed is False
                failed += bool(checks.failed)
                delay = est.confidence_intervals(0.999).delay
                missed += not np.all((delay.low <= plant.delay) & (plant.delay <= delay.high))
            print(f"{str(offsets):22s} {estimator:10s} {structure:9d}/{seeds:<6d}"
                  f"{failed:4d}/{seeds:<5d}{missed:17d}/{seeds}", flush=True)


def spikes_section(seeds: int) -> None:
    counts: dict[tuple[str, str], list[int]] = {}
    for seed in range(seeds):
        rng = np.random.default_rng(7000 + seed)
        n = int(rng.integers(2, 6))
        plant = random_plant(rng, n_states=n, n_inputs=int(rng.integers(1, 3)))
        K = int(rng.choice([1000, 3000, 10000]))
        U = random_excitation(plant.n_inputs, K, rng=rng)
        X = plant.simulate(np.zeros(n), U)
        spread = X.std(axis=1, keepdims=True)
        for colour in (0.0, 0.9):
            e = rng.standard_normal(X.shape)
            if colour:
                e = signal.lfilter([np.sqrt(1 - colour ** 2)], [1, -colour], e, axis=1)
            for case in ("6 spikes", "1 %"):
                Xn = X + 0.03 * spread * e
                if case == "6 spikes":
                    at = rng.choice(np.arange(K + 1), 6, replace=False)
                    rows = rng.integers(n, size=6)
                    Xn[rows, at] += 20 * spread[rows, 0] * rng.choice([-1, 1], 6)
                else:
                    hit = rng.random(K + 1) < 0.01
                    Xn[:, hit] += 1.5 * spread * rng.choice([-1.0, 1.0], (n, int(hit.sum())))
                checks = _quiet(DMDidc(max_delay=R), Xn, U, plant.dt).diagnostics_
                tally = counts.setdefault(("coloured" if colour else "white", case), [0, 0, 0])
                tally[0] += 1
                tally[1] += checks["whiteness"].passed is False
                tally[2] += checks["state_completeness"].passed is False
    for (noise, case), (total, white, complete) in sorted(counts.items()):
        print(f"{noise:8s} noise + {case:8s}: whiteness failed {white:3d}/{total}, "
              f"state_completeness failed {complete:3d}/{total}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--sections", nargs="+", default=["rounded", "spikes"])
    args = parser.parse_args()
    if "rounded" in args.sections:
        rounded_section(args.seeds)
    if "spikes" in args.sections:
        spikes_section(args.seeds)


if __name__ == "__main__":
    main()
