"""Per-trajectory trends on many short trajectories: bias, standard errors and coverage.

Plant: a damped oscillator (``A_c = [[-0.3, 1], [-1, -0.3]]``, T = 1 s), one input with a
delay of 1.3 T, white process noise 0.3 on both states (an input of the simulated plant that
the fit does not see), each trajectory from a random state with its own sensor offset.
``DMDidc(max_delay=2, detrend=..., estimator="ls")`` on ``count`` trajectories of ``samples``
inputs, ``--reps`` repetitions per row.

Printed per row: the mean error of the four entries of ``A_d`` over their mean standard error
(``bias/SE``: the dynamic-panel bias the intervals do not cover), the spread of the estimates
over the mean standard error (``sd/SE``: 1 when the standard errors are right), the estimated
bias of :func:`dmdidc.inference.trend_bias.trend_bias` over the same standard error, the
per-entry coverage of the 95 % intervals (t quantile on the fit's residual dof) and the share
of fits whose ``trend_bias`` check failed.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_detrend_coverage.py [--reps 400]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy import stats

from dmdidc import DelayedPlant, DMDidc
from dmdidc.inference.trend_bias import trend_bias

PLANT = DelayedPlant.from_continuous([[-0.3, 1.0], [-1.0, -0.3]], [[1.0, 1, 0], [0.5, 0, 1]],
                                     delay=[1.3, 0, 0], dt=1.0)
ROWS = [(20, 60), (40, 30), (100, 12), (400, 3), (1200, 1)]


def row(detrend: str, samples: int, count: int, reps: int, rng: np.random.Generator) -> str:
    errors, scale, predicted, hits, failed = [], [], [], [], 0
    for _ in range(reps):
        Xs, Us = [], []
        for _ in range(count):
            U, W = rng.standard_normal((1, samples)), 0.3 * rng.standard_normal((2, samples))
            X = PLANT.simulate(rng.standard_normal(2), np.vstack([U, W]))
            Xs.append(X + rng.standard_normal((2, 1)))
            Us.append(U)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DMDidc(max_delay=2, detrend=detrend, estimator="ls").fit(Xs, Us, dt=1.0)
        solution = est.regression_
        errors.append(solution.coefficients[:, :2] - PLANT.A_d)
        scale.append(solution.standard_errors[:, :2])
        predicted.append(trend_bias(solution, [samples] * count, 2, detrend)[:, :2])
        half = stats.t.ppf(0.975, solution.dof) * solution.standard_errors[:, :2]
        hits.append(np.abs(errors[-1]) <= half)
        failed += est.diagnostics_["trend_bias"].failed
    se = np.mean(scale, axis=0)
    numbers = {"bias/SE": np.mean(errors, axis=0) / se, "sd/SE": np.std(errors, axis=0) / se,
               "estimate/SE": np.mean(predicted, axis=0) / se,
               "coverage": np.mean(hits, axis=0)}
    text = "  ".join(f"{k} {np.array2string(v.ravel(), precision=2, floatmode='fixed')}"
                     for k, v in numbers.items())
    return f"{detrend:8s} {count:4d} x {samples:4d}  {text}  check failed {failed / reps:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    for detrend in ("constant", "linear"):
        for samples, count in ROWS:
            print(row(detrend, samples, count, args.reps, rng), flush=True)


if __name__ == "__main__":
    main()
