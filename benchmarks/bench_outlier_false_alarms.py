"""False alarms of DMDidc's outlier check on well-posed data, with and without the scale margin.

Random stable plants (``simulations.studies.data_kinds.random_plant``: 1-20 states, 1-3 inputs,
fractional delays, T = 0.5 s, max_delay = 4), white inputs, open loop, Gaussian measurement
noise at 10-60 dB, K log-uniform in ``300 .. --max-samples`` (the residual checks read at most
2e4 samples per series), one default ``DMDidc(max_delay=4)`` fit per seed.  For each fit the
largest robustly standardized residual (``diagnostics_.analysis.outlier_z``) is compared, at
several levels, with the Bonferroni quantile alone (before) and with
:func:`dmdidc.inference.residuals.outlier_threshold` (the quantile raised by three standard
deviations of the MAD scale's sampling error, what the check uses now; pieces of data whose
noise levels differ each by its own scale, :func:`dmdidc.inference.residuals.largest_residual`).
Printed per level: false alarms, their share and its 95 % upper bound (Clopper-Pearson),
overall and for the fits with fewer than 1000 residuals per series (where the scale's error is
largest).  The check's
own level is ``check_level / 7`` = 0.01 / 7 = 0.0014 by default.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_outlier_false_alarms.py
      [--seeds 1500] [--max-samples 1e5]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy import stats

from dmdidc import DMDidc
from dmdidc.inference.residuals import LargestResidual, _critical
from simulations.studies.data_kinds import make_data, random_plant

T, R = 0.5, 4
LEVELS = (0.01 / 7, 0.01, 0.05, 0.2)


def screened(seed: int, max_samples: float) -> LargestResidual | None:
    """The largest robust residual of one fit (with its scales), or None."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 21)), int(rng.integers(1, 4))
    K = int(np.exp(rng.uniform(np.log(300), np.log(max_samples))))
    K = max(K, 60 + 3 * n * (R + 2) * m)
    plant = random_plant(rng, n_states=n, n_inputs=m, dt=T, max_delay=R)
    data = make_data("white", plant, samples=K, snr_db=float(rng.uniform(10, 60)), rng=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = DMDidc(max_delay=R).fit(data.X, data.U, dt=T).diagnostics_.analysis
    if analysis is None:
        return None
    return analysis.outlier_scaling


def upper(alarms: int, total: int) -> float:
    """95 % upper confidence bound of a binomial share (Clopper-Pearson, one-sided 97.5 %)."""
    return 1.0 if alarms >= total else float(stats.beta.ppf(0.975, alarms + 1, total - alarms))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1500)
    parser.add_argument("--max-samples", type=float, default=1e5)
    args = parser.parse_args(argv)
    fits = [f for f in (screened(s, args.max_samples) for s in range(args.seeds)) if f]
    n, N, z = (np.array([getattr(f, name) for f in fits]) for name in ("series", "count", "z"))
    own = sum(f.spread is not None for f in fits)
    print(f"{len(fits)} fits; series per fit {n.min()}-{n.max()} (median {np.median(n):.0f}), "
          f"residuals per series {N.min()}-{N.max()}; pieces scaled each by its own (their "
          f"noise levels tested unequal, largest_residual) in {own}")
    print(f"{'fits':>12s} {'level':>7s} {'before':>22s} {'after':>22s}")
    for name, chosen in (("all", np.ones(len(z), bool)), ("N < 1000", N < 1000)):
        total = int(chosen.sum())
        for level in LEVELS:
            before = sum(int(z[i] > _critical(level, N[i] * n[i])) for i in np.flatnonzero(chosen))
            after = sum(int(fits[i].z > fits[i].threshold(level)) for i in np.flatnonzero(chosen))
            print(f"{name:>8s} {total:4d} {level:7.4f} "
                  f"{before:4d} {before / total:.4f} (<={upper(before, total):.4f}) "
                  f"{after:4d} {after / total:.4f} (<={upper(after, total):.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
