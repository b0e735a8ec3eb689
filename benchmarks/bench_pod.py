"""DMDidc on many sensors (issue 19 item 3): ``DMDidc(svd_rank=r)`` against one numpy thin SVD
of the snapshots and PyDMD's ``DMDc(svd_rank=r)``.

A random 6-state plant with two inputs (fractional delays 0.35 s and 0.8 s, T = 0.25 s) is
observed by ``n`` sensors, ``X = C z`` plus 1 % noise, ``K`` samples (generation excluded).
Printed per size: the time of ``np.linalg.svd(X, full_matrices=False)`` (the reference),
``DMDidc(max_delay=5, svd_rank=6).fit`` (POD, IV, block test, every check), PyDMD
``DMDc(svd_rank=6)`` (no delay model), the POD step alone by the Gram route and randomized,
their ratios to the SVD, the tracemalloc peaks beyond
the data, and the accuracy: the largest eigenvalue error (continuous, relative) and delay error.

Goal of the issue: at most 2x one thin SVD, memory O(n r + p^2).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_pod.py \\
          [--sizes 2000,1200 100000,300] [--no-pydmd]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import timed

from dmdidc import DelayedPlant, DMDidc, random_excitation
from dmdidc.regression.pod import pod_modes


def data(n: int, K: int) -> tuple[DelayedPlant, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    A_c = np.zeros((6, 6))
    A_c[:2, :2] = [[-0.2, 1.0], [-1.0, -0.2]]
    A_c[2:4, 2:4] = [[-0.5, 2.0], [-2.0, -0.5]]
    A_c[4, 4], A_c[5, 5] = -0.8, -1.5
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    plant = DelayedPlant.from_continuous(Q @ A_c @ Q.T, rng.standard_normal((6, 2)),
                                         [0.35, 0.8], 0.25, max_delay=5)
    U = random_excitation(2, K, rng=1)
    X = rng.standard_normal((n, 6)) @ plant.simulate(np.zeros(6), U)
    X += 0.01 * X.std() * rng.standard_normal(X.shape)
    return plant, X, U


def eigenvalue_error(found: np.ndarray, true: np.ndarray) -> float:
    found, true = np.sort_complex(found), np.sort_complex(true)
    return float(np.max(np.abs(found - true)) / np.max(np.abs(true)))


def run(n: int, K: int, repeats: int, pydmd: bool) -> None:
    plant, X, U = data(n, K)
    svd, _, svd_peak, _ = timed(lambda: np.linalg.svd(X, full_matrices=False), repeats)

    def ours():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DMDidc(max_delay=5, svd_rank=6).fit(X, U, dt=plant.dt)

    best, _, peak, est = timed(ours, repeats)
    error = eigenvalue_error(np.linalg.eigvals(est.A_c), np.linalg.eigvals(plant.A_c))
    print(f"n={n:6d} K={K:5d} (X {X.nbytes / 2**20:6.0f} MB)  thin SVD {svd:7.3f} s "
          f"(peak {svd_peak:6.0f} MB)", flush=True)
    print(f"    DMDidc(svd_rank=6)  {best:7.3f} s  x{best / svd:5.2f} of the SVD  peak "
          f"{peak:6.0f} MB  eigenvalue error {error:.1e}  delay error "
          f"{np.max(np.abs(est.delay - plant.delay)):.1e} s", flush=True)
    for randomized in (False, True):
        seconds, _, _, _ = timed(lambda r=randomized: pod_modes([X], 6, randomized=r), repeats)
        print(f"    pod_modes(randomized={randomized!s:5}) {seconds:7.3f} s  "
              f"x{seconds / svd:5.2f} of the SVD", flush=True)
    if pydmd:
        from pydmd import DMDc

        def theirs():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return DMDc(svd_rank=6).fit(X, U)

        best_p, _, peak_p, model = timed(theirs, repeats)
        error_p = eigenvalue_error(np.log(model.eigs.astype(complex)) / plant.dt,
                                   np.linalg.eigvals(plant.A_c))
        print(f"    PyDMD DMDc(svd_rank=6) {best_p:7.3f} s  x{best_p / svd:5.2f} of the SVD  "
              f"peak {peak_p:6.0f} MB  eigenvalue error {error_p:.1e} (no delay model)  "
              f"DMDidc/PyDMD x{best / best_p:5.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["2000,1200", "2000,4000", "100000,300"],
                        help="n,K pairs (sensors, samples)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-pydmd", action="store_true")
    args = parser.parse_args()
    for size in args.sizes:
        n, K = (int(v) for v in size.split(","))
        run(n, K, args.repeats, not args.no_pydmd)


if __name__ == "__main__":
    main()
