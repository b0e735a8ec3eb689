"""Coverage of the default fit's 95 % delay interval over random plants and redraws of the data
(the coverage table of "Confidence intervals" on the "Noisy data" page).

Per condition: ``--plants`` random plants (``random_plant``: 3 states, 2 inputs, T = 0.5 s,
``max_delay=4``), each channel's delay ``w + p`` periods (``w`` in 0..2) with the fraction
``p`` = 0.5 (*half*), uniform in (0.1, 0.9) (*frac*), 0 (*whole*) or within 0.1 of a whole
period (*edge*: 0.01-0.08 or 0.92-0.99); ``--redraws`` data sets per plant (white inputs, 30 dB
measurement noise, K samples), each fitted by ``DMDidc(max_delay=4).fit(X, U, dt=0.5)``.
Printed per condition: fits, fits that raised or warned (loud), coverage of the true delays by
the intervals of the quiet fits with its 95 % binomial band, the median ``|z|`` (estimate minus
truth over the standard error; 0.674 for a standard normal) and the median width.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/delay_coverage.py
          [--kinds half frac whole edge] [--samples 390 3000 30000] [--plants 20]
          [--redraws 10] [--first 0]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from dmdidc import DelayedPlant, DMDidc
from simulations.studies.data_kinds import random_plant

T, R = 0.5, 4


def fraction(kind: str, rng: np.random.Generator) -> np.ndarray:
    """The two channels' fractions of a period for a delay ``kind``."""
    if kind == "half":
        return np.full(2, 0.5)
    if kind == "whole":
        return np.zeros(2)
    if kind == "frac":
        return rng.uniform(0.1, 0.9, 2)
    near = rng.random(2) < 0.5
    return np.where(near, rng.uniform(0.01, 0.08, 2), rng.uniform(0.92, 0.99, 2))


def condition(kind: str, samples: int, plants: int, redraws: int, first: int) -> dict:
    """Coverage statistics of one condition (module notes)."""
    covered, z, widths, fits, loud = [], [], [], 0, 0
    for seed in range(first, first + plants):
        rng = np.random.default_rng(5000 + seed)
        base = random_plant(7000 + seed)
        delay = (rng.integers(0, 3, 2) + fraction(kind, rng)) * T
        plant = DelayedPlant.from_continuous(base.A_c, base.B_c, delay, T, max_delay=R)
        for _ in range(redraws):
            U = rng.standard_normal((2, samples))
            X = plant.simulate(np.zeros(3), U)
            X = X + 10 ** -1.5 * np.sqrt(np.mean(X ** 2, axis=1, keepdims=True)) \
                * rng.standard_normal(X.shape)
            fits += 1
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    fit = DMDidc(max_delay=R).fit(X, U, dt=T)
                    ci = fit.delay_ci()
                except ValueError:
                    loud += 1
                    continue
            if caught:
                loud += 1
                continue
            covered += list((ci.low <= plant.delay) & (plant.delay <= ci.high))
            z += list((fit.delay - plant.delay) / ci.standard_error)
            widths += list((ci.high - ci.low) / T)
    n = len(covered)
    return dict(fits=fits, loud=loud, n=n, coverage=float(np.mean(covered)),
                band=1.96 * np.sqrt(0.95 * 0.05 / max(n, 1)),
                median_z=float(np.nanmedian(np.abs(z))), width=float(np.median(widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=["half", "frac", "whole", "edge"])
    parser.add_argument("--samples", nargs="+", type=int, default=[390, 3000, 30000])
    parser.add_argument("--plants", type=int, default=20)
    parser.add_argument("--redraws", type=int, default=10)
    parser.add_argument("--first", type=int, default=0)
    args = parser.parse_args()
    print("kind   K      fits  loud  delays  coverage  95 % band      median|z|  median width/T")
    for samples in args.samples:
        for kind in args.kinds:
            c = condition(kind, samples, args.plants, args.redraws, args.first)
            print(f"{kind:6s} {samples:<6d} {c['fits']:5d} {c['loud']:5d} {c['n']:7d}  "
                  f"{c['coverage']:.3f}     {0.95 - c['band']:.3f}-{0.95 + c['band']:.3f}  "
                  f"{c['median_z']:.2f}       {c['width']:.2e}")


if __name__ == "__main__":
    main()
