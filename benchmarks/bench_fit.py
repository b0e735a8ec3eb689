"""DMDidc fit speed and memory against a plain numpy Gram pass and PyDMD's DMDc.

Problem: random stable plant, n = 20 states, m = 4 inputs, per-channel fractional delays, R = 20
past periods (p = n + m (R + 1) = 104 regressors), K samples of i.i.d. normal excitation.
Data generation (simulation) is excluded from every timing.

Compared, per K:
  * ``DMDidc(max_delay=R).fit`` with method "auto" (the default: a Gram pass, repeated with QR
    when the equilibrated condition number exceeds 1e4, as it does for this smooth plant),
    "gram" and "qr"; each also split into regression only (accumulate + solve) and recovery
    of the continuous model and delays;
  * (a) one numpy Gram pass over the same augmented data: Phi (p, N) = [x_k; u_k; ...; u_{k-R}]
    is built explicitly (timed separately, "build Phi"), then ``Phi @ Phi.T`` and ``Y @ Phi.T``
    ("numpy Gram"; solving the 104 x 104 system is negligible).  For K = 1e6 Phi would be 832 MB,
    so it is built and multiplied in chunks of 1e5 columns (the sums are the same);
  * (b) PyDMD ``DMDc(svd_rank=-1)`` at R = 0 on the same X, U vs ``DMDidc(max_delay=0).fit``.

Times: ``time.perf_counter``, best and median of ``--repeats`` runs; ratios use the best.
Peak memory: tracemalloc peak during the first timed run of each step, i.e. the largest
Python/numpy heap allocated above the data already in memory (numpy reports its buffers to
tracemalloc; LAPACK workspace allocated outside numpy is not seen).  On a shared machine run
with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1: idle-spinning BLAS threads make timings swing
by 10-100x under oversubscription.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_fit.py \
          [--sizes 10000 100000 1000000] [--repeats 3] [--repeats-large 1]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
import tracemalloc
import warnings

import numpy as np
from _common import timed

from dmdidc import ContinuousModelWarning, DelayedPlant, DMDidc, random_excitation
from dmdidc.inference.recovery import recover_continuous
from dmdidc.regression import lagged_inputs, make_accumulator

N_STATES, N_INPUTS, MAX_DELAY, DT = 20, 4, 20, 0.1
CHUNK = 100_000


def make_plant(seed: int = 0) -> DelayedPlant:
    rng = np.random.default_rng(seed)
    n, m = N_STATES, N_INPUTS
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c = Q @ (np.diag(rng.uniform(-2.0, -0.2, n)) + 0.5 * np.triu(rng.standard_normal((n, n)),
                                                                      1)) @ Q.T
    B_c = rng.standard_normal((n, m))
    delay = np.array([0.35, 0.9, 1.42, 1.95])            # w = 3, 9, 14, 19 periods of 0.1 s
    return DelayedPlant.from_continuous(A_c, B_c, delay=delay, dt=DT, max_delay=MAX_DELAY)


def generate(plant: DelayedPlant, K: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Simulate K steps in chunks (bounded working memory), carrying state and input history."""
    n, m, R = plant.n_states, plant.n_inputs, plant.max_delay
    rng = np.random.default_rng(seed)
    X = np.empty((n, K + 1))
    U = np.empty((m, K))
    X[:, 0] = rng.standard_normal(n)
    past = np.zeros((m, R))
    for start in range(0, K, CHUNK):
        stop = min(start + CHUNK, K)
        Uc = random_excitation(m, stop - start, rng=rng)
        Xc = plant.simulate(X[:, start], Uc, U_past=past)
        X[:, start + 1:stop + 1] = Xc[:, 1:]
        U[:, start:stop] = Uc
        past = np.concatenate([past, Uc], axis=1)[:, -R:]
    return X, U


def noisy_row_data(K: int, seed: int = 1
                   ) -> tuple[DelayedPlant, np.ndarray, np.ndarray, np.ndarray]:
    """The data of ``make bench``'s fit rows: the plant, states with 1 % relative measurement
    noise, i.i.d. inputs, and the regression data ``V = [x_k; u_k .. u_{k-R}]`` (p x (K - R))."""
    plant = make_plant()
    n, R = plant.n_states, plant.max_delay
    rng = np.random.default_rng(seed)
    U = random_excitation(plant.n_inputs, K, rng=rng)
    X = plant.simulate(rng.standard_normal(n), U)
    X += 0.01 * np.std(X, axis=1, keepdims=True) * rng.standard_normal(X.shape)
    V = np.concatenate([X[:, R:K], lagged_inputs(U, R)], axis=0)
    return plant, X, U, V


def numpy_gram_pass(X: np.ndarray, U: np.ndarray, R: int) -> tuple[float, float, np.ndarray]:
    """Build Phi chunk by chunk and accumulate Phi Phi^T, Y Phi^T; return (t_build, t_gram, C)."""
    K = U.shape[1]
    p = X.shape[0] + U.shape[0] * (R + 1)
    gram = np.zeros((p, p))
    cross = np.zeros((X.shape[0], p))
    t_build = t_gram = 0.0
    for start in range(R, K, CHUNK):
        stop = min(start + CHUNK, K)
        t0 = time.perf_counter()
        Phi = np.concatenate([X[:, start:stop], lagged_inputs(U[:, start - R:stop], R)], axis=0)
        Y = X[:, start + 1:stop + 1]
        t1 = time.perf_counter()
        gram += Phi @ Phi.T
        cross += Y @ Phi.T
        t_gram += time.perf_counter() - t1
        t_build += t1 - t0
    coefficients = np.linalg.solve(gram, cross.T).T
    return t_build, t_gram, coefficients


def pydmd_dmdc(X: np.ndarray, U: np.ndarray):
    from pydmd import DMDc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDc(svd_rank=-1).fit(X, U)


def run(K: int, repeats: int, plant: DelayedPlant) -> list[tuple]:
    X, U = generate(plant, K)
    rows = []

    def ours(method: str, R: int = MAX_DELAY):
        def fn():
            with warnings.catch_warnings():
                # R = 0 (the speed comparison with PyDMD) rightly warns that the inputs, delayed
                # by 3.5-19.5 periods, show no effect within 0 periods
                warnings.simplefilter("ignore", ContinuousModelWarning)
                return DMDidc(max_delay=R, method=method).fit(X, U, dt=DT).model_
        return fn

    def regression_only(method: str, R: int = MAX_DELAY):
        def fn():
            acc = make_accumulator(method, N_STATES, N_INPUTS, R)
            for start in range(0, K, 65536):                # DMDidc's default chunk_size
                stop = min(start + 65536, K)
                acc.update(X[:, start:stop + 1], U[:, start:stop])
            return acc.solution()
        return fn

    errors = {}
    for label, method, fn in [("DMDidc auto (R=20, default)", "auto", ours("auto")),
                              ("DMDidc gram (R=20)", "gram", ours("gram")),
                              ("DMDidc qr   (R=20)", "qr", ours("qr"))]:
        best, med, peak, model = timed(fn, repeats)
        rows.append((K, label, best, med, peak))
        errors[method] = (float(np.max(np.abs(model.B_blocks - plant.B_blocks))),
                          float(np.max(np.abs(model.delay - plant.delay)) / DT))
    for label, fn in [("  gram regression only (R=20)", regression_only("gram")),
                      ("  qr regression only (R=20)", regression_only("qr")),
                      ("  recovery only (R=20)",
                       lambda: recover_continuous(model.A_d, model.B_blocks, DT))]:
        best, med, peak, solution = timed(fn, repeats)
        rows.append((K, label, best, med, peak))
        if "gram" in label:
            cond = solution.condition_number

    builds, grams = [], []
    for i in range(repeats):
        gc.collect()
        if i == 0:
            tracemalloc.start()
        t_build, t_gram, _ = numpy_gram_pass(X, U, MAX_DELAY)
        if i == 0:
            np_peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        builds.append(t_build)
        grams.append(t_gram)
    rows.append((K, "numpy build Phi", min(builds), statistics.median(builds), np_peak))
    rows.append((K, "numpy Gram Phi@Phi.T+Y@Phi.T", min(grams), statistics.median(grams), np_peak))

    for label, fn in [("DMDidc gram (R=0)", ours("gram", 0)),
                      ("DMDidc auto (R=0)", ours("auto", 0)),
                      ("PyDMD DMDc (R=0)", lambda: pydmd_dmdc(X, U))]:
        best, med, peak, _ = timed(fn, repeats)
        rows.append((K, label, best, med, peak))
    print(f"  K={K:.0e}: equilibrated condition number {cond:.3g}", flush=True)
    for method, (block_err, delay_err) in errors.items():
        print(f"  K={K:.0e} {method}: max |B_blocks - exact| = {block_err:.2e}, max delay error "
              f"= {delay_err:.2e} T", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repeats-large", type=int, default=1,
                        help="repeats for K >= 1e6 (each QR fit then takes tens of seconds)")
    args = parser.parse_args()
    plant = make_plant()
    threads = {k: os.environ.get(k, "unset") for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    print(f"n={N_STATES} m={N_INPUTS} R={MAX_DELAY} p={N_STATES + N_INPUTS * (MAX_DELAY + 1)}, "
          f"repeats={args.repeats} ({args.repeats_large} for K >= 1e6); times in s (best / "
          f"median), peak = tracemalloc MB of the first run; {threads}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    print(f"\n{'K':>8} | {'step':<30} | {'best s':>8} | {'median s':>8} | {'peak MB':>8} | ratio")
    print("-" * 100, flush=True)
    for K in args.sizes:
        rows = run(K, args.repeats if K < 1_000_000 else args.repeats_large, plant)
        by = {r[1]: r for r in rows}
        # Ratios use the best times: on a shared machine, contention only ever adds time.
        gram_ref = by["numpy Gram Phi@Phi.T+Y@Phi.T"][2]
        full_ref = gram_ref + by["numpy build Phi"][2]
        pydmd_ref = by["PyDMD DMDc (R=0)"][2]
        for _, label, best, med, peak in rows:
            if "recovery" in label:
                ratio = ""
            elif "R=20" in label:
                ratio = f"{best / gram_ref:.2f}x numpy Gram, {best / full_ref:.2f}x build+Gram"
            elif "R=0" in label and "PyDMD" not in label:
                ratio = f"{best / pydmd_ref:.2f}x PyDMD"
            else:
                ratio = ""
            print(f"{K:>8.0e} | {label:<30} | {best:8.3f} | {med:8.3f} | {peak:8.1f} | {ratio}",
                  flush=True)


if __name__ == "__main__":
    main()
