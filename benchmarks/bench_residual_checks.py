"""Cost of the residual checks of a fit (issue 21): against a numpy Gram pass and direct sums.

On the ``bench_fit.py`` plant (n = 20, m = 4, R = 20) with 2e5 noisy samples, least squares is
fitted once; then, in CPU time (best of ``--repeat``):

  * the residual checks of that fit (``residual_analysis`` + ``residual_checks``: whiteness,
    outliers, the prewhitened correlations with every input and state on the 2e4 diagnostic
    samples) against one numpy ``V @ V.T`` of the 104 x K regression data;
  * :func:`dmdidc.regression.lag_products.lag_products` of the residuals with the states at
    the 41 lags the state correlations need, against the same sums as one matrix product per
    lag (``E[:, d:] @ X[:, :-d].T``), the direct way;
  * :func:`dmdidc.regression.lag_products.lag_product_sets` of the products the checks
    read (the residuals' autocovariances, their products with the inputs and with the states,
    the inputs' and states' autocovariances; lags -30 .. 35), each series transformed once,
    against the same five products as separate ``lag_products`` calls (each transforming its
    series again).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_residual_checks.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import cpu_best_time, emit_summary, summary_row
from bench_fit import noisy_row_data

from dmdidc import DMDidc
from dmdidc.inference.residuals import residual_analysis, residual_checks
from dmdidc.regression.lag_products import PieceLayout, lag_product_sets, lag_products


def direct_products(E: np.ndarray, X: np.ndarray, low: int, high: int) -> np.ndarray:
    """``sum_k e_k x_{k-d}^T`` by one matrix product per lag."""
    T = E.shape[1]
    out = np.zeros((E.shape[0], X.shape[0], high - low + 1))
    for d in range(low, high + 1):
        first, stop = max(d, 0), min(T, T + d)
        out[:, :, d - low] = E[:, first:stop] @ X[:, first - d:stop - d].T
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    K = args.samples
    plant, X, U, V = noisy_row_data(K)
    n, R = plant.n_states, plant.max_delay
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=R, estimator="ls").fit(X, U, dt=plant.dt)
    parts = list(est.diagnostics_.analysis.parts)

    def checks():
        return residual_checks(residual_analysis(parts, R), 0.01 / 8)

    t_gram, _ = cpu_best_time(lambda: V @ V.T, args.repeat)
    t_checks, _ = cpu_best_time(checks, args.repeat)
    E = [e for e, _, _ in parts]
    layout = PieceLayout(np.array([e.shape[1] for e in E]), gap=41)
    E_laid, X_laid = layout.place(E), layout.place([x[:, R:] for _, _, x in parts])
    t_fft, fast = cpu_best_time(lambda: lag_products(E_laid, X_laid, -10, 30), args.repeat)
    t_direct, slow = cpu_best_time(lambda: direct_products(E_laid, X_laid, -10, 30),
                                   args.repeat)
    error = float(np.max(np.abs(fast - slow)) / np.max(np.abs(slow)))
    U_laid = layout.place([u[:, R:] for _, u, _ in parts])
    series = [E_laid, U_laid, X_laid]
    pairs = [(0, 0, True), (0, 1, False), (1, 1, True), (0, 2, False), (2, 2, True)]
    t_sets, shared = cpu_best_time(lambda: lag_product_sets(series, pairs, -30, 35),
                                   args.repeat)
    t_calls, separate = cpu_best_time(
        lambda: [lag_products(series[i], series[j], -30, 35, diagonal=d) for i, j, d in pairs],
        args.repeat)
    sets_error = max(float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
                     for a, b in zip(shared, separate, strict=True))
    rows = [summary_row(f"residual checks of the LS fit (n = {n}, R = {R}, K = {K:.0e}, "
                        f"{sum(e.shape[1] for e in E)} diagnostic samples)", t_checks, t_gram,
                        f"numpy V @ V.T ({V.shape[0]} x K)", "<= 0.3", t_checks <= 0.3 * t_gram),
            summary_row(f"lag_products, {n} residuals x {n} states, 41 lags (max rel. "
                        f"difference {error:.1e})", t_fft, t_direct,
                        "one matrix product per lag", "< 1 (faster)", t_fft < t_direct),
            summary_row(f"lag_product_sets, the checks' 5 products (residuals, {U.shape[0]} "
                        f"inputs, {n} states; max rel. difference {sets_error:.1e})", t_sets,
                        t_calls, "5 lag_products calls", "< 1 (faster)", t_sets < t_calls)]
    emit_summary(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
