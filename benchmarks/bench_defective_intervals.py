"""Intervals of nearly defective fits: the Schur-basis Jacobian against central differences.

Random plants of the Jacobian's tests (``simulations.studies.data_kinds.nonnormal_plant``) whose
exact ``A_c`` fails the eigenbasis check (n = 30 seed 7; n = 50 seeds 5, 8, 18), fitted on 2e4
samples with little noise (``--noise``; more noise splits the near-double eigenvalues and
the eigenbasis passes). Prints the checks, the CPU time of ``delay_ci()`` and
``confidence_intervals()`` (after), and with ``--central`` the same by central differences of
the recovery (before; minutes) and the largest relative gap of their standard errors.
``--force`` takes the Schur route on a draw whose eigenbasis passes (the same cost).

    PYTHONPATH=. python benchmarks/bench_defective_intervals.py --size 30,5 --seeds 7 --noise 1e-12
    PYTHONPATH=. python benchmarks/bench_defective_intervals.py --size 50,4 --seeds 8,18 \
        --noise 1e-9 --force
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import dmdidc.inference.intervals as intervals
from dmdidc import DMDidc, random_excitation
from dmdidc.inference import jacobian
from dmdidc.inference.frechet import SchurFrechet, schur_error
from simulations.studies.data_kinds import nonnormal_plant


def _cpu(call):
    start = time.process_time()
    out = call()
    return time.process_time() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="30,5", help="n,m")
    parser.add_argument("--seeds", default="7")
    parser.add_argument("--noise", type=float, default=1e-12)
    parser.add_argument("--central", action="store_true")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    n, m = map(int, args.size.split(","))
    if args.force:
        jacobian.MAX_EIGENBASIS_ERROR = -1.0
    for seed in map(int, args.seeds.split(",")):
        rng = np.random.default_rng(seed)
        plant = nonnormal_plant(rng, n, m, max_delay=5)
        U = random_excitation(m, 20000, rng=seed + 1)
        X = plant.simulate(np.zeros(n), U)
        X = X + args.noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est = DMDidc(max_delay=5).fit(X, U, dt=plant.dt)
            except ValueError as exc:
                print(f"n {n} m {m} seed {seed}: {str(exc)[:70]}")
                continue
        if not est.model_.has_continuous:
            print(f"n {n} m {m} seed {seed}: no continuous model")
            continue
        A_c, dt = est.model_.A_c, plant.dt
        mu, V = np.linalg.eig(A_c)
        W = np.linalg.inv(V)
        exp_T, (gamma_T, slope_T) = np.exp(mu * dt), jacobian._gamma(mu, dt)
        check = jacobian._eigenbasis_error(A_c, dt, V, W,
                                           jacobian._divided(exp_T, dt * exp_T, mu),
                                           jacobian._divided(gamma_T, slope_T, mu))
        line = (f"n {n} m {m} seed {seed}: cond(V) {np.linalg.cond(V):8.1e}, eigenbasis check "
                f"{check:8.1e}, Schur check {schur_error(SchurFrechet(A_c, dt)):8.1e}")
        if check <= jacobian.MAX_EIGENBASIS_ERROR:
            print(line + " (eigenbasis route)")
            continue
        delays, d = _cpu(est.delay_ci)
        every, c = _cpu(est.confidence_intervals)
        line += f"; delay_ci {delays:.2f} s, confidence_intervals {every:.2f} s CPU"
        if args.central:
            original = intervals.model_jacobian
            intervals.model_jacobian = lambda *a: None
            try:
                delays_cd, dn = _cpu(est.delay_ci)
                every_cd, cn = _cpu(est.confidence_intervals)
            finally:
                intervals.model_jacobian = original
            gap = max(np.nanmax(np.abs(getattr(c, k).standard_error
                                       / getattr(cn, k).standard_error - 1))
                      for k in ("delay", "A_c", "B_c"))
            line += (f"; central differences: delay_ci {delays_cd:.1f} s, confidence_intervals "
                     f"{every_cd:.1f} s CPU; standard errors differ by {gap:.1e} relative")
        print(line, flush=True)


if __name__ == "__main__":
    main()
