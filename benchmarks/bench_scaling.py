"""Cost of a fit as the state dimension grows (issue 19 item 5): the factored covariance.

A random stable plant (``--plants``: ``random``, real modes in a random basis, whose weakly
excited directions at n = 50 make the default fit fall back to least squares and fail its
checks; ``oscillatory``, lightly damped modes, every direction excited, IV fitted and every
check passed) with n states, m inputs, max_delay R, K samples of i.i.d. excitation
and relative measurement noise ``--noise`` (default 1e-5: at 1e-3 the weakly excited
directions of the larger random plants put an eigenvalue of A_d below zero, so there is no
continuous model to give intervals of; generation excluded).  Printed per size:

  * one numpy Gram pass of the regression data (``[Phi; Y] [Phi; Y]^T`` with the lagged inputs
    built): the reference of the ratios;
  * the default ``DMDidc(max_delay=R).fit`` (IV with refined instruments, every check), its
    tracemalloc peak beyond the data, and the ratio to the Gram pass (wall, and CPU:
    ``process_time``, steadier on a shared machine);
  * ``confidence_intervals()`` (analytic delta method, factored) and ``delay_ci()`` (the
    delays' rows alone), CPU time: the first request of a fit (it also recovers the block
    structure with the earlier blocks, which later requests reuse) and the best of the later
    ones, with their tracemalloc peaks; for small n, the same intervals by central differences
    of the recovery (the method replaced; ``--numeric-up-to``).

Goals of the issue: n = 50, m = 4, R = 5, K = 2e4 under 200 MB beyond the data and within 10x
of the Gram pass; ``delay_ci()`` at n = 30, m = 5 under a second.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_scaling.py \\
          [--sizes 4,2 30,5 50,4] [--samples 20000] [--numeric-up-to 10] [--noise 1e-5]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import timed

import dmdidc.inference.intervals as intervals
from dmdidc import DelayedPlant, DMDidc, random_excitation
from dmdidc.regression import lagged_inputs


def random_plant(n: int, m: int, R: int, rng: np.random.Generator, dt: float = 0.5
                 ) -> DelayedPlant:
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c = Q @ (np.diag(rng.uniform(-2.0, -0.2, n))
               + 0.3 / np.sqrt(n) * np.triu(rng.standard_normal((n, n)), 1)) @ Q.T
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)),
                                        rng.uniform(0.05, (R - 1) * dt, m), dt, max_delay=R)


def oscillatory_plant(n: int, m: int, R: int, rng: np.random.Generator, dt: float = 0.5
                      ) -> DelayedPlant:
    """``n / 2`` lightly damped modes (frequencies 0.3-5 rad/s below the Nyquist 6.3, decay
    rates 0.05-0.5 /s) in a random basis: a vibrating structure.  Unlike
    :func:`random_plant`, whose real modes leave ~17 of 50 state directions unexcited by 4
    inputs (the default fit then refuses IV and fits least squares, failing its checks), every
    direction is excited: IV is fitted and every check passes (seeds 0-3)."""
    frequencies = np.sort(rng.uniform(0.3, 5.0, n // 2))
    decays = rng.uniform(0.05, 0.5, n // 2)
    A = np.zeros((n, n))
    for i, (w, s) in enumerate(zip(frequencies, decays, strict=True)):
        A[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[-s, w], [-w, -s]]
    if n % 2:
        A[-1, -1] = -rng.uniform(0.2, 2.0)
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    return DelayedPlant.from_continuous(Q @ A @ Q.T, rng.standard_normal((n, m)),
                                        rng.uniform(0.05, (R - 1) * dt, m), dt, max_delay=R)


PLANTS = {"random": random_plant, "oscillatory": oscillatory_plant}


def _cpu(function, repeats: int) -> float:
    """Best CPU time (``process_time``) of ``repeats`` runs: steadier than wall time on a
    shared machine, where other jobs stretch the short Gram pass more than the fit."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)


def run(n: int, m: int, R: int, K: int, repeats: int, numeric_up_to: int, noise: float,
        kind: str = "random") -> None:
    rng = np.random.default_rng(0)
    plant = PLANTS[kind](n, m, R, rng)
    U = random_excitation(m, K, rng=1)
    X = plant.simulate(np.zeros(n), U)
    X = X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)

    def gram_pass():
        data = np.concatenate([X[:, R:-1], lagged_inputs(U, R), X[:, R + 1:]])
        return data @ data.T

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DMDidc(max_delay=R).fit(X, U, dt=plant.dt)

    gram, _, gram_peak, _ = timed(gram_pass, repeats)
    best, _, peak, est = timed(fit, repeats)
    cpu = _cpu(fit, repeats) / _cpu(gram_pass, repeats)
    failed = ",".join(c.name for c in est.diagnostics_.failed) or "none"
    print(f"{kind:11s} n={n:3d} m={m} R={R} K={K:.0e}  "
          f"Gram pass {gram:7.4f} s ({gram_peak:6.1f} MB)  "
          f"fit {best:7.3f} s  x{best / gram:6.1f} (CPU x{cpu:5.1f})  peak {peak:6.1f} MB "
          f"beyond the data ({(X.nbytes + U.nbytes) / 2**20:.1f} MB)  "
          f"[{est.diagnostics_.estimator}; failed checks: {failed}]", flush=True)
    if not est.model_.has_continuous:
        print("      (no continuous model on this draw: no intervals)")
        return
    first = _cpu(est.confidence_intervals, 1)
    later = _cpu(est.confidence_intervals, repeats)
    analytic, _, ci_peak, ci = timed(est.confidence_intervals, 1)
    delays = _cpu(est.delay_ci, repeats)
    _, _, delay_peak, _ = timed(est.delay_ci, 1)
    line = (f"      confidence_intervals CPU {first:6.3f} s first, {later:6.3f} s later "
            f"(peak {ci_peak:6.1f} MB); delay_ci CPU {delays:6.3f} s "
            f"(peak {delay_peak:6.1f} MB)")
    if n <= numeric_up_to:
        original = intervals.model_jacobian
        intervals.model_jacobian = lambda *args: None           # central differences
        try:
            numeric, _, _, slow = timed(est.confidence_intervals, 1)
        finally:
            intervals.model_jacobian = original
        gap = np.nanmax(np.abs(ci.delay.standard_error - slow.delay.standard_error)
                        / slow.delay.standard_error)
        line += (f"; central differences {numeric:7.3f} s (x{numeric / analytic:5.1f} "
                 f"slower; delay SE differ by {gap:.1e} relative)")
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["4,2", "10,3", "30,5", "50,4"],
                        help="n,m pairs")
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--max-delay", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--numeric-up-to", type=int, default=10)
    parser.add_argument("--noise", type=float, default=1e-5)
    parser.add_argument("--plants", nargs="+", choices=sorted(PLANTS),
                        default=["random", "oscillatory"],
                        help="plant families (random: real modes, poorly excited at large n; "
                             "oscillatory: lightly damped modes, every direction excited)")
    args = parser.parse_args()
    for size in args.sizes:
        n, m = (int(v) for v in size.split(","))
        for kind in args.plants:
            run(n, m, args.max_delay, args.samples, args.repeats, args.numeric_up_to,
                args.noise, kind)


if __name__ == "__main__":
    main()
