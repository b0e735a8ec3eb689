"""``state_completeness`` of plain DMD (no inputs, least squares): false alarms on measurement
noise whose bias is negligible, detections of signals that are not the full state.

Without inputs ``DMDidc`` fits least squares (nothing to instrument with), and least squares'
moments detect any measurement noise by ``sqrt(N)``: a trial (2026-11-27) saw
``state_completeness`` fail at relative noise 1e-4..1e-3 where the eigenvalues were right to
7e-6..3e-4, with a remedy (``estimator='auto'``) that was what had run.  The check now asks IV
on the earlier states (:func:`dmdidc.inference.residuals.noise_bias`) whether noise explains
the failure (Sargan) and how far it biases least squares, in standard errors.  This script
counts, per condition and relative noise level (noise sd / signal sd), the fits whose check
failed, those where it was inconclusive (it failed beside a failed ``whiteness``, which warns
instead), the loud fits (any ``DiagnosticWarning``) and the median relative eigenvalue error
(continuous eigenvalues, matched).

Conditions (random stable plants: 3-6 states, T = 0.5 s, real and complex modes):

  decays      5 free decays of 80 samples from random states, every state measured
  stationary  one run of 400 samples driven by process noise (least squares consistent)
  svd         the decays seen by 1000 sensors (``X = C z``), ``svd_rank`` = states
  partial     the decays with one state not measured (a fault: must fail)
  output      the decays as ``y = C x`` with one signal fewer than states (a fault)

Run the same script against an older tree to compare (``PYTHONPATH=<old tree>:benchmarks``):

    PYTHONPATH=.:benchmarks OPENBLAS_NUM_THREADS=1 .venv/bin/python
        benchmarks/bench_plain_dmd_state.py [--seeds 40] [--conditions decays partial ...]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy.linalg import expm
from scipy.optimize import linear_sum_assignment

from dmdidc import DMDidc
from dmdidc.errors import DiagnosticWarning

T = 0.5
NOISES = (0.0, 1e-5, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1)


def random_plant(rng: np.random.Generator) -> np.ndarray:
    """A random stable A_c with 3-6 well-separated real or complex modes."""
    nz = int(rng.integers(3, 7))
    blocks, size = [], 0
    while size < nz:
        if nz - size >= 2 and rng.random() < 0.5:
            re, im = -rng.uniform(0.05, 0.9), rng.uniform(0.3, 1.5)
            blocks.append(np.array([[re, im], [-im, re]]))
            size += 2
        else:
            blocks.append(np.array([[-rng.uniform(0.05, 1.5)]]))
            size += 1
    A = np.zeros((nz, nz))
    at = 0
    for block in blocks:
        k = block.shape[0]
        A[at:at + k, at:at + k] = block
        at += k
    S = rng.standard_normal((nz, nz)) + 2 * np.eye(nz)
    return S @ A @ np.linalg.inv(S)


def data(condition: str, noise: float, seed: int) -> tuple[list[np.ndarray], np.ndarray, dict]:
    rng = np.random.default_rng(7000 + seed)
    A = random_plant(rng)
    nz = A.shape[0]
    A_d = expm(A * T)
    runs = [(rng.standard_normal(nz), 80, 0.0) for _ in range(5)]
    if condition == "stationary":
        runs = [(rng.standard_normal(nz), 400, 0.3)]
    Xs = []
    for z0, K, process in runs:
        Z = np.zeros((nz, K + 1))
        Z[:, 0] = z0
        for k in range(K):
            Z[:, k + 1] = A_d @ Z[:, k] + process * rng.standard_normal(nz)
        Xs.append(Z)
    options: dict = {}
    if condition == "partial":
        Xs = [X[:-1] for X in Xs]
    elif condition == "output":
        C = rng.standard_normal((nz - 1, nz))
        Xs = [C @ X for X in Xs]
    elif condition == "svd":
        C = rng.standard_normal((1000, nz))
        Xs = [C @ X for X in Xs]
        options = {"svd_rank": nz}
    scale = np.std(np.hstack(Xs))
    return [X + noise * scale * rng.standard_normal(X.shape) for X in Xs], A, options


def eigenvalue_error(estimated: np.ndarray, true: np.ndarray) -> float:
    """Largest relative error of the matched eigenvalues (nan when the counts differ)."""
    if estimated.size != true.size:
        return float("nan")
    distance = np.abs(estimated[:, None] - true[None, :])
    rows, columns = linear_sum_assignment(distance)
    return float(np.max(distance[rows, columns] / np.abs(true[columns])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--conditions", nargs="+",
                        default=["decays", "stationary", "svd", "partial", "output"])
    args = parser.parse_args()
    print(f"{'condition':11s} {'noise':>7s} {'failed':>8s} {'inconcl.':>8s} {'loud':>8s} "
          f"{'eig err':>9s}")
    for condition in args.conditions:
        for noise in NOISES:
            failed, inconclusive, loud, errors = 0, 0, 0, []
            for seed in range(args.seeds):
                Xs, A, options = data(condition, noise, seed)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    est = DMDidc(**options).fit(Xs, [np.zeros((0, X.shape[1] - 1)) for X in Xs],
                                                dt=T)
                check = next(c for c in est.diagnostics_.checks
                             if c.name == "state_completeness")
                failed += check.passed is False
                inconclusive += check.passed is None and "inconclusive" in check.finding
                loud += any(issubclass(w.category, DiagnosticWarning) for w in caught)
                errors.append(eigenvalue_error(np.log(np.linalg.eigvals(est.model_.A_d)
                                                      .astype(complex)) / T,
                                               np.linalg.eigvals(A)))
            print(f"{condition:11s} {noise:7.0e} {failed:4d}/{args.seeds:<3d} "
                  f"{inconclusive:4d}/{args.seeds:<3d} {loud:4d}/{args.seeds:<3d} "
                  f"{np.nanmedian(errors) if np.isfinite(errors).any() else np.nan:9.2g}",
                  flush=True)


if __name__ == "__main__":
    main()
