"""Clipping to the declared bounds: the clipped share against the bias it causes.

Plants: :func:`simulations.studies.data_kinds.random_plant` (n = 3, m = 2, T = 0.5 s,
``R = 4``), 200 experiments of 300 standard-normal inputs, state noise 0.02.  The state bounds
are quantiles of the data's magnitudes (per state; 1.0: just above the largest, nothing
clipped), the input bound just above the largest input.

Printed per row: the share of the state values clipped, the largest shift of a coefficient of
the clipped fit from the unclipped one over its standard error, for the plain fit and for a
Gaussian release at ``--epsilon`` (per sample, delta 1e-5), the largest delay error, and the
clipping check's verdict (:mod:`dmdidc.inference.clipping`, whose threshold these numbers
justify).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_clipping.py [--plants 3]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from dmdidc import DMDidc, SufficientStatistics, random_excitation
from simulations.studies.data_kinds import random_plant

QUANTILES = (1.0, 0.9999, 0.999, 0.995, 0.99, 0.98, 0.95, 0.9)


def _statistics(Xs, Us, state_bound=None, input_bound=None):
    return sum(SufficientStatistics.from_data(X, U, max_delay=4, state_bound=state_bound,
                                              input_bound=input_bound)
               for X, U in zip(Xs, Us, strict=True))


def plant_rows(seed: int, epsilon: float) -> list[str]:
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n_states=3, n_inputs=2, dt=0.5, max_delay=4)
    Us = [random_excitation(2, 300, rng=rng) for _ in range(200)]
    Xs = [plant.simulate(np.zeros(3), U) + 0.02 * rng.standard_normal((3, 301)) for U in Us]
    magnitudes = np.abs(np.concatenate(Xs, 1))
    input_bound = 1.01 * max(np.abs(U).max() for U in Us)
    unclipped = DMDidc(max_delay=4).fit_statistics(_statistics(Xs, Us), dt=0.5)
    reference = unclipped.regression_.coefficients
    plain_se = unclipped.regression_.standard_errors.reshape(reference.shape)
    rows = []
    for quantile in QUANTILES:
        bound = np.quantile(magnitudes, quantile, axis=1) * (1.001 if quantile == 1.0 else 1.0)
        stats = _statistics(Xs, Us, bound, input_bound)
        plain = DMDidc(max_delay=4).fit_statistics(stats, dt=0.5)
        shift = np.abs(plain.regression_.coefficients - reference)
        release = stats.privatize("gaussian", epsilon=epsilon, delta=1e-5, rng=seed,
                                  accounted=True)
        private = DMDidc(max_delay=4).fit_statistics(release, dt=0.5)
        private_se = private.regression_.standard_errors.reshape(reference.shape)
        check = plain.diagnostics_["clipping"]
        rows.append(f"{seed:5d} {stats.clipping.share(0):8.4f} {np.max(shift / plain_se):10.3g} "
                    f"{np.max(shift / private_se):10.3g} "
                    f"{np.max(np.abs(plain.delay - plant.delay)):9.3g}  "
                    f"{'FAIL' if check.failed else 'pass'}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plants", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=3.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"plant  clipped  shift/SE   shift/SE   delay err  check\n"
          f"        share    plain     eps {args.epsilon:<5g}   plain [s]")
    for seed in range(args.plants):
        print("\n".join(plant_rows(seed, args.epsilon)), flush=True)


if __name__ == "__main__":
    main()
