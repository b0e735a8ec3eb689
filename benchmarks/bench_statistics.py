"""IV and sufficient-statistics fits against the least-squares Gram pass (issue 8).

Two problems, K samples of i.i.d. normal excitation in one trajectory (generation excluded):

  * the README plant (n = 2, m = 2, R = 3: p = 10 regressors; IV with L = 2 more input lags);
  * the bench_fit plant (n = 20, m = 4, R = 20: p = 104; IV with L = 10 more input lags).

Timed, per K: one numpy Gram pass (``Phi @ Phi.T + Y @ Phi.T`` of the explicit p x K regression
data, built in chunks outside the timing, as in bench_fit: the reference of the ratios, issue
21); the least-squares Gram pass (``GramAccumulator``: accumulate and solve);
``DMDidc(estimator="iv").fit`` (statistics with instruments, 2SLS, block test and recovery);
the statistics pass alone (``from_trajectories``: no validation, no clipping) and
``SufficientStatistics.from_data`` (validation, clipping to bounds), each without and with
instruments; ``fit_statistics`` on them;
``privatize`` (Gaussian, sample level) plus ``fit_statistics``.
Peak memory: tracemalloc peak of the first run (numpy reports its buffers) - nothing scales
like K x K (a K x K matrix of doubles is 8 TB at K = 1e6).
Last, the statistics pass alone in CPU time (the wall clock of a shared machine also measures
the other processes): ``from_trajectories`` without and with instruments against the numpy
products, taking turns, best of the repeats (issue 21's goal: <= 0.5x); and the pass with
instruments with every correlation summed in the time domain (the engine before the
frequency-domain sums of many lags, :mod:`dmdidc.regression.lagged_gram`), as the ratio of the
two.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_statistics.py \
          [--sizes 100000 1000000] [--plants readme wide] [--repeats 3]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import cpu_best_time, timed
from bench_fit import CHUNK, numpy_gram_pass

from dmdidc import (
    DelayedPlant,
    DMDidc,
    InsufficientExcitationError,
    SufficientStatistics,
    random_excitation,
)
from dmdidc.regression import lagged_gram, lagged_inputs, make_accumulator
from simulations.studies.fractional_delay import SEED_A_C, SEED_B_C


def readme_plant() -> tuple[DelayedPlant, int]:
    return DelayedPlant.from_continuous(np.array(SEED_A_C), np.array(SEED_B_C), 2.5, 2.0,
                                        max_delay=3), 2


def wide_plant() -> tuple[DelayedPlant, int]:
    rng = np.random.default_rng(0)
    n, m = 20, 4
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c = Q @ (np.diag(rng.uniform(-2.0, -0.2, n)) + 0.5 * np.triu(rng.standard_normal((n, n)),
                                                                      1)) @ Q.T
    delay = np.array([0.35, 0.9, 1.42, 1.95])
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), delay, 0.1,
                                        max_delay=20), 10


def run(plant: DelayedPlant, lags: int, K: int, repeats: int) -> None:
    n, m, R, dt = plant.n_states, plant.n_inputs, plant.max_delay, plant.dt
    U = random_excitation(m, K, rng=1)
    X = plant.simulate(np.zeros(n), U) + 0.01 * np.random.default_rng(2).standard_normal(
        (n, K + 1))
    bounds = dict(state_bound=4 * np.abs(X).max(axis=1), input_bound=5.0)

    def gram_pass():
        acc = make_accumulator("gram", n, m, R)
        for a in range(0, K, 65536):
            b = min(a + 65536, K)
            acc.update(X[:, a:b + 1], U[:, a:b])
        return acc.solution()

    def quiet(function):
        def wrapped():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    return function()
                except InsufficientExcitationError:   # privacy noise hid the excitation:
                    return "failed"                   # the time is still what it costs
        return wrapped

    plain = SufficientStatistics.from_data(X, U, max_delay=R, **bounds)
    instrumented = SufficientStatistics.from_data(X, U, max_delay=R, instruments="inputs",
                                                  instrument_lags=lags, **bounds)
    steps = [
        ("least-squares Gram pass", gram_pass),
        ("DMDidc(estimator='iv').fit", quiet(lambda: DMDidc(
            max_delay=R, estimator="iv", instruments="inputs",
            instrument_lags=lags).fit(X, U, dt=dt))),
        ("DMDidc(estimator='ls').fit (auto)", quiet(lambda: DMDidc(max_delay=R).fit(X, U,
                                                                                   dt=dt))),
        # the Gram pass of the statistics alone (validated data, no clipping): issue 21
        ("statistics pass (from_trajectories)", lambda: SufficientStatistics.from_trajectories(
            [(X, U)], [None], max_delay=R)),
        ("  ... with instruments", lambda: SufficientStatistics.from_trajectories(
            [(X, U)], [None], max_delay=R, instruments="inputs", instrument_lags=lags)),
        ("SufficientStatistics.from_data", lambda: SufficientStatistics.from_data(
            X, U, max_delay=R, **bounds)),
        ("  ... with instruments", lambda: SufficientStatistics.from_data(
            X, U, max_delay=R, instruments="inputs", instrument_lags=lags, **bounds)),
        ("fit_statistics (ls)", quiet(lambda: DMDidc(max_delay=R).fit_statistics(plain, dt=dt))),
        ("fit_statistics (iv)", quiet(lambda: DMDidc(max_delay=R, estimator="iv")
                                      .fit_statistics(instrumented, dt=dt))),
        ("privatize (gaussian, sample) + fit", quiet(lambda: DMDidc(max_delay=R).fit_statistics(
            plain.privatize("gaussian", epsilon=1.0, delta=1e-5, rng=0, accounted=True),
            dt=dt))),
    ]
    # the reference: the products alone (numpy_gram_pass times them, not building Phi)
    reference = min(numpy_gram_pass(X, U, R)[1] for _ in range(repeats))
    print(f"  n={n:2d} p={n + m * (R + 1):3d} K={K:.0e}  {'numpy Gram pass (reference)':<38} "
          f"{reference:8.4f} s  x 1.00", flush=True)
    for label, function in steps:
        best, _, peak, result = timed(function, repeats)
        note = "  (no model: the privacy noise hides the excitation)" if result == "failed" \
            else ""
        print(f"  n={n:2d} p={n + m * (R + 1):3d} K={K:.0e}  {label:<38} {best:8.4f} s  "
              f"x{best / reference:5.2f} numpy Gram  peak {peak:7.1f} MB{note}", flush=True)
    statistics_pass_cpu(X, U, R, lags, repeats)
    data_mb = (X.nbytes + U.nbytes) / 2**20
    print(f"  (data in memory: {data_mb:.1f} MB; statistics: {plain.dimension} / "
          f"{instrumented.dimension} numbers)")


def statistics_pass_cpu(X: np.ndarray, U: np.ndarray, R: int, lags: int, repeats: int) -> None:
    """CPU time of the statistics pass (plain, with instruments) against the numpy products of
    the regression data (built outside the timing), measured in turns."""
    n, K = X.shape[0], U.shape[1]
    chunks = []
    for start in range(R, K, CHUNK):
        stop = min(start + CHUNK, K)
        chunks.append((np.concatenate([X[:, start:stop], lagged_inputs(U[:, start - R:stop], R)]),
                       X[:, start + 1:stop + 1]))

    def products():
        for Phi, Y in chunks:
            Phi @ Phi.T
            Y @ Phi.T

    def instrumented():
        return SufficientStatistics.from_trajectories(
            [(X, U)], [None], max_delay=R, instruments="inputs", instrument_lags=lags)

    def time_domain():
        spectral = lagged_gram._SPECTRAL_ROWS
        lagged_gram._SPECTRAL_ROWS = np.inf          # every group: products of lag matrices
        try:
            return instrumented()
        finally:
            lagged_gram._SPECTRAL_ROWS = spectral

    steps = {"numpy products": products,
             "statistics pass": lambda: SufficientStatistics.from_trajectories(
                 [(X, U)], [None], max_delay=R),
             "  ... with instruments": instrumented,
             "  ... time domain only": time_domain}
    best = dict.fromkeys(steps, np.inf)
    for _ in range(max(repeats, 3)):
        for label, function in steps.items():
            best[label] = min(best[label], cpu_best_time(function, 1)[0])
    reference = best.pop("numpy products")
    print(f"  n={n:2d} K={K:.0e}  CPU: numpy products {reference:.4f} s", flush=True)
    for label, seconds in best.items():
        print(f"  n={n:2d} K={K:.0e}  CPU: {label:<24} {seconds:8.4f} s  "
              f"x{seconds / reference:5.2f} numpy products", flush=True)
    ratio = best["  ... with instruments"] / best["  ... time domain only"]
    print(f"  n={n:2d} K={K:.0e}  CPU: with instruments, frequency-domain sums of many lags / "
          f"time domain only: x{ratio:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--plants", nargs="+", choices=["readme", "wide"],
                        default=["readme", "wide"])
    args = parser.parse_args()
    for make in (readme_plant if name == "readme" else wide_plant for name in args.plants):
        plant, lags = make()
        for K in args.sizes:
            run(plant, lags, K, args.repeats)


if __name__ == "__main__":
    main()
