"""Is OnlineDMDidc's level warning pessimistic?  ("States recorded around a level" on the
"Live identification" page; ``OnlineDMDidc._level_rounding``.)

Random plants (``random_plant``: 3 states, 2 inputs, ``max_delay=4``, delays 0.3-2.5 T) driven
by white inputs, 2000 samples, states with 30-80 dB of noise scaled to deviations of 0.5, a
level ``10^e`` (``e`` 1-6 in steps of 0.5) times a random 0.2-1 with a random sign per state
added; streamed in chunks of 500 with forgetting 1 or 0.999.  The *error* of a stream is the
largest relative error of its residual variances against the same stream at level 0; the
*estimate* the rounding unit ``eps reach^2`` over the level-0 residual variance (the ratio
over states whose unit exceeds 1e-3 and whose error is below 5: beyond, the variances are
rounding alone).  Fits that fail (the moments singular at the largest levels) are left out.

Prints the ratio error / estimate (its maximum sets ``_LEVEL_ROUNDING``), then per stream:
how many are more than 10 % off and how many of them are quiet (must be none), how many are
within and warned anyway (the price of pessimism).

Run:  PYTHONPATH=. OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/level_warning_sweep.py \
          [--plants 16] [--estimator ls|iv]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from dmdidc import OnlineDMDidc
from simulations.studies.data_kinds import random_plant


def stream(plant, X, U, level, forgetting, estimator):
    """Residual variances, the stream and whether it warned of the level."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        live = OnlineDMDidc(max_delay=4, dt=plant.dt, forgetting=forgetting, detect=False,
                            estimator=estimator)
        for a in range(0, U.shape[1], 500):
            live.update(X[:, a:a + 501] + level[:, None], U[:, a:a + 500])
        residual = np.diag(live.regression_.residual_covariance)
    return residual, live, any("recorded around" in str(w.message) for w in caught)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plants", type=int, default=16)
    parser.add_argument("--estimator", default="ls", choices=("ls", "iv"))
    args = parser.parse_args()
    eps = np.finfo(float).eps
    ratios, beyond, quiet, within, warned_within = [], 0, 0, 0, 0
    for seed in range(args.plants):
        for snr in (30, 40, 50, 60, 70, 80):
            rng = np.random.default_rng(seed)                  # the same plant at every snr
            plant = random_plant(rng, n_states=3, n_inputs=2, max_delay=4,
                                 delay_periods=(0.3, 2.5))
            U = rng.standard_normal((2, 2000))
            X = plant.simulate(np.zeros(3), U)
            X = X + 10 ** (-snr / 20) * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
            X = X * (0.5 / X.std(axis=1, keepdims=True))
            signs = rng.choice([-1.0, 1.0], 3) * rng.uniform(0.2, 1.0, 3)
            for forgetting in (1.0, 0.999):
                exact, _, _ = stream(plant, X, U, np.zeros(3), forgetting, args.estimator)
                for exponent in np.arange(1.0, 6.01, 0.5):
                    try:
                        residual, live, warned = stream(plant, X, U, 10 ** exponent * signs,
                                                        forgetting, args.estimator)
                    except Exception:                          # singular moments
                        continue
                    error = np.abs(residual / exact - 1)
                    p = live._layout.n_regressors
                    shift = np.abs(live._shift)
                    reach = shift[p:p + 3] + np.abs(live.regression_.coefficients) @ shift[:p]
                    unit = eps * reach ** 2 / exact
                    kept = (unit > 1e-3) & (error < 5)         # (beyond: rounding alone)
                    ratios.extend(error[kept] / unit[kept])
                    if error.max() > 0.1:
                        beyond, quiet = beyond + 1, quiet + (not warned)
                    else:
                        within, warned_within = within + 1, warned_within + warned
    ratios = np.array(ratios)
    print(f"error / (eps reach^2 / residual): max {ratios.max():.3g}, "
          f"99 % {np.quantile(ratios, 0.99):.3g}, median {np.median(ratios):.3g}")
    print(f"streams more than 10 % off: {beyond}, quiet {quiet}; within: {within}, "
          f"warned {warned_within}")


if __name__ == "__main__":
    main()
