"""Many short experiments against one long record of the same number of samples.

Data made of many short experiments (repeated tests, a federation's clients, a fleet's units)
are common; each trajectory restarts its lags and, for the default and IV fits, its own
simulation of the refined instruments.  This script fits ``E`` experiments of ``L`` samples
of a random stable plant (``--states``, ``--inputs``, ``max_delay`` ``--max-delay``, i.i.d.
excitation, 2 % measurement noise) with ``DMDidc(estimator=...)`` for least squares, IV and
the default, and the same estimators on one record of ``E L`` samples of the same plant;
printed: the least CPU time of ``--repeats`` fits each and the ratio (many / one), and the
largest relative difference of the delays (a check that both fits see the same plant).

Before 2026-11-28 the refined instruments were simulated trajectory by trajectory and every
trajectory set up the streaming statistics engine: 3000 x 200 samples (n = 2, m = 2, R = 4)
took 1.49 s for IV against 0.16 s for one record of 600 000 samples (9x); the side-by-side
simulation and the short trajectories' vectors laid out for one product cut it to 0.37 s.

With ``--memory``, each count of experiments runs in a fresh process that fits the default
``DMDidc(max_delay=R)`` once on the many short experiments only (30 dB measurement noise,
``--plant modal``: ``n / 2`` lightly damped modes spread in frequency, which 4 inputs excite
in every state direction; ``--plant random``: this script's plant, ``--plant scaling``:
``bench_scaling.random_plant``, whose 50 states 4 inputs excite in ~12 directions above the
noise, so IV is refused and least squares fitted with a note).  Printed: the data's size, the
peak resident memory of the fit above what the process held before it (``ru_maxrss``), its
CPU and wall time, the estimator kept and the largest error of ``A_d``.  Before 2026-11-28,
every simulated instrument signal (as large as the states) was kept for the whole fit and a
refused fit joined all the data into one array to look for an offset:

    python benchmarks/bench_short_experiments.py --memory --states 50 --inputs 4 \
        --max-delay 5 --experiments 3000 10000 30000

``--estimator huber_iv --outliers 0.005`` measures robust IV (0.5 % of the samples moved by
30 noise sd).  Before 2026-11-28 it laid out every sample's regression vectors four times:
4683 MB above the data for 3000 experiments at n = 50, m = 4, R = 5; 228 MB since (205 MB for
10 000 experiments, 868 MB of data).

    python benchmarks/bench_short_experiments.py [--experiments 300 3000] [--length 200]
        [--states 2] [--inputs 2] [--max-delay 4] [--repeats 3]
        [--memory [--plant modal|random|scaling] [--estimator huber_iv] [--outliers 0.005]]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings

import numpy as np
from _common import cpu_best_time

from dmdidc import DelayedPlant, DMDidc, random_excitation

ESTIMATORS = ("ls", "iv", "auto")


def random_plant(n: int, m: int, R: int, rng: np.random.Generator, dt: float = 1.0
                 ) -> DelayedPlant:
    A = rng.standard_normal((n, n))
    A -= (np.linalg.eigvals(A).real.max() + rng.uniform(0.2, 1.0)) * np.eye(n)
    return DelayedPlant.from_continuous(A, rng.standard_normal((n, m)),
                                        rng.uniform(0.3, R - 0.5, m) * dt, dt, max_delay=R)


def records(plant: DelayedPlant, lengths: list[int], rng: np.random.Generator
            ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    Xs, Us = [], []
    for K in lengths:
        U = random_excitation(plant.n_inputs, K, rng=rng)
        X = plant.simulate(np.zeros(plant.n_states), U)
        Xs.append(X + 0.02 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape))
        Us.append(U)
    return Xs, Us


def modal_plant(n: int, m: int, R: int, rng: np.random.Generator, dt: float = 0.5
                ) -> DelayedPlant:
    """``n / 2`` lightly damped modes (damping 0.02-0.1 1/s) spread over the band, rotated:
    every state direction excited well above 30 dB noise by a few white inputs."""
    k = n // 2
    frequencies = np.sort(rng.uniform(0.1, 0.9 * np.pi / dt, k))
    damping = rng.uniform(0.02, 0.1, k)
    A = np.zeros((n, n))
    for i in range(k):
        A[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[-damping[i], frequencies[i]],
                                               [-frequencies[i], -damping[i]]]
    if n % 2:
        A[-1, -1] = -0.5
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    return DelayedPlant.from_continuous(Q @ A @ Q.T, rng.standard_normal((n, m)),
                                        rng.uniform(0.05, (R - 1) * dt, m), dt, max_delay=R)


def memory_child(args: argparse.Namespace, E: int) -> dict:
    """One default fit of ``E`` short experiments in this process: its peak memory and time."""
    rng = np.random.default_rng(1)
    if args.plant == "modal":
        plant = modal_plant(args.states, args.inputs, args.max_delay, rng)
    elif args.plant == "scaling":
        from bench_scaling import random_plant as scaling_plant
        plant = scaling_plant(args.states, args.inputs, args.max_delay, rng)
    else:
        plant = random_plant(args.states, args.inputs, args.max_delay, rng, dt=0.5)
    Xs, Us = [], []
    for _ in range(E):
        U = random_excitation(plant.n_inputs, args.length, rng=rng)
        Xs.append(plant.simulate(np.zeros(plant.n_states), U))
        Us.append(U)
    spread = np.sqrt(np.mean([X.var(axis=1) for X in Xs], axis=0))[:, None]
    for X in Xs:                                          # 30 dB: noise sd 10^(-1.5) signal
        X += 10 ** -1.5 * spread * rng.standard_normal(X.shape)
        if args.outliers:
            # a share of the samples (every state of each) off by 30 noise sd, either sign
            hit = rng.random(X.shape[1]) < args.outliers
            X[:, hit] += 30 * 10 ** -1.5 * spread * rng.choice([-1.0, 1.0], (X.shape[0], hit.sum()))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator = DMDidc(max_delay=args.max_delay, estimator=args.estimator).fit(
            Xs, Us, dt=plant.dt)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"experiments": E, "data_MB": sum(X.nbytes + U.nbytes for X, U in zip(Xs, Us,
                                                                              strict=True)) / 1e6,
            "peak_above_MB": (peak - before) / 1024, "cpu_s": cpu, "wall_s": wall,
            "estimator": estimator.regression_.estimator,
            "A_d_error": float(np.abs(estimator.model_.A_d - plant.A_d).max())}


def memory(args: argparse.Namespace) -> None:
    """Each count in a fresh process: ``ru_maxrss`` is a high-water mark."""
    print(f"plant {args.plant}, n = {args.states}, m = {args.inputs}, R = {args.max_delay}, "
          f"experiments of {args.length} samples, estimator {args.estimator!r}, outliers "
          f"{args.outliers:g} of the samples")
    for E in args.experiments:
        child = subprocess.run([sys.executable, __file__, "--child", str(E), *sys.argv[1:]],
                               capture_output=True, text=True, check=True)
        row = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"E = {E:6d} x {args.length}  data {row['data_MB']:7.0f} MB  peak above it "
              f"{row['peak_above_MB']:7.0f} MB  cpu {row['cpu_s']:6.1f} s  wall "
              f"{row['wall_s']:6.1f} s  {row['estimator']}  |A_d error| "
              f"{row['A_d_error']:.1e}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, nargs="+", default=[300, 3000])
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--states", type=int, default=2)
    parser.add_argument("--inputs", type=int, default=2)
    parser.add_argument("--max-delay", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory", action="store_true",
                        help="peak memory and time of one default fit per count (own process)")
    parser.add_argument("--plant", choices=("modal", "random", "scaling"), default="modal")
    parser.add_argument("--estimator", default="auto",
                        help="with --memory: DMDidc(estimator=...) (e.g. huber_iv)")
    parser.add_argument("--outliers", type=float, default=0.0,
                        help="with --memory: share of samples moved by 30 noise sd")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(memory_child(args, args.child)))
        return
    if args.memory:
        memory(args)
        return
    rng = np.random.default_rng(0)
    plant = random_plant(args.states, args.inputs, args.max_delay, rng)
    print(f"plant n = {plant.n_states}, m = {plant.n_inputs}, R = {args.max_delay}, "
          f"delays {np.round(plant.delay, 3).tolist()}")
    for E in args.experiments:
        many = records(plant, [args.length] * E, rng)
        one = records(plant, [args.length * E], rng)
        for estimator in ESTIMATORS:
            def fit(data, e=estimator):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return DMDidc(max_delay=args.max_delay, estimator=e).fit(*data, dt=plant.dt)
            t_many, est_many = cpu_best_time(lambda d=many: fit(d), args.repeats)
            t_one, est_one = cpu_best_time(lambda d=one: fit(d), args.repeats)
            gap = np.max(np.abs(est_many.delay - est_one.delay) / plant.delay)
            print(f"E = {E:5d} x {args.length}  {estimator:4s}  many {t_many:7.3f} s  "
                  f"one record {t_one:7.3f} s  ratio {t_many / t_one:5.2f}  "
                  f"({t_many / (E * args.length) * 1e6:.2f} us/sample; delays differ by "
                  f"{gap:.1e} relative)", flush=True)


if __name__ == "__main__":
    main()
