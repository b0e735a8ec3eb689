"""Accuracy of the DMDidc estimators on noisy data and of private identification (issue 8).

Sections (all data: experiments of 300 samples from rest, i.i.d. normal inputs; "x dB" noise
has standard deviation 10^(-x/20) times each state's rms; SaS noise "at 20 dB" has the scale
whose alpha = 2 member has that standard deviation, i.e. 0.1 rms / sqrt(2)):

  default   DMDidc(max_delay=3) (least squares) on the README plant (dissertation eq. 9.76,
            T = 2 s, r = 1.25 T and 1.5 T) with 20 dB Gaussian measurement noise, 10
            experiments: median delay error and how often the whole delay is right;
  iv        random stable plants (4 states, 2 inputs, eigenvalues with Re(lambda) T in
            [-1, -0.05], |Im(lambda)| T <= 1.5, per-channel fractional delays, T = 0.5 s), 10 dB
            measurement noise, K = 3000 and 30000: A_c error and delay error of least squares
            and of estimator="iv" (consistency: the error should fall like 1/sqrt(K));
  huber     README plant, SaS (alpha = 1.5) measurement noise at 20 dB, K = 30000:
            least squares against estimator="huber";
  private   README plant (r = 1.25 T, noise-free states), sufficient statistics of 10000
            experiments (K = 3e6) privatized at event level (epsilon, delta) = (1, 1e-5),
            Gaussian mechanism: delay error and wall time; the same data privatized per sample
            (states only, inputs public) and fitted with estimator="iv"; the ratio;
  coverage  (with --coverage) delay intervals at 95 %: least squares with process noise,
            IV with measurement noise (asymptotic), and the bootstrap over trajectories.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_estimators.py [--seeds 10]
      [--sections default iv huber private coverage]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from dmdidc import DelayedPlant, DMDidc, SufficientStatistics
from privacy.stable import sas_sample
from simulations.studies.data_kinds import random_state_matrix
from simulations.studies.fractional_delay import SEED_A_C, SEED_B_C
from simulations.studies.private_identification import identification_errors as errors
from simulations.studies.private_identification import privatize_samples, simulate_experiments

A_C, B_C = np.array(SEED_A_C), np.array(SEED_B_C)          # the README plant, eq. 9.76
T = 2.0


def random_stable_plant(rng: np.random.Generator) -> DelayedPlant:
    n, m, dt = 4, 2, 0.5
    A_c = random_state_matrix(rng, n, dt)
    delay = (rng.integers(0, 2, m) + rng.uniform(0.1, 0.9, m)) * dt
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), delay, dt, max_delay=3)


def experiments(plant, count, rng, snr_db=None, sas_alpha=None):
    U = rng.standard_normal((count, plant.n_inputs, 300))
    X = simulate_experiments(plant, U)
    if snr_db is not None:
        rms = np.sqrt(np.mean(X ** 2, axis=(0, 2)))[None, :, None]
        level = 10 ** (-snr_db / 20) * rms
        noise = (level / np.sqrt(2) * sas_sample(sas_alpha, 1.0, size=X.shape, rng=rng)
                 if sas_alpha else level * rng.standard_normal(X.shape))
        X = X + noise
    return list(X), list(U)


def fit(estimator, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(*args, **kwargs)


def default_section(seeds: int) -> None:
    for periods in (1.25, 1.5):
        plant = DelayedPlant.from_continuous(A_C, B_C, periods * T, T, max_delay=3)
        results = [errors(fit(DMDidc(max_delay=3), *experiments(
            plant, 10, np.random.default_rng(seed), snr_db=20.0), dt=T), plant)
            for seed in range(seeds)]
        delay = np.array([r[0] for r in results])
        print(f"default  r = {periods} T, 20 dB, 10 x 300: median delay error "
              f"{np.median(delay):.4f} T (90th pct. {np.percentile(delay, 90):.4f} T), right "
              f"whole delay {np.mean([r[2] for r in results]):.0%}", flush=True)


def iv_section(seeds: int) -> None:
    table = {(name, K): [] for name in ("ls", "iv") for K in (3000, 30000)}
    for plant_seed in range(seeds):
        plant = random_stable_plant(np.random.default_rng(1000 + plant_seed))
        for K in (3000, 30000):
            data = experiments(plant, K // 300, np.random.default_rng(plant_seed), snr_db=10.0)
            for name in ("ls", "iv"):
                table[(name, K)].append(errors(fit(DMDidc(max_delay=3, estimator=name), *data,
                                                   dt=plant.dt), plant))
    for name in ("ls", "iv"):
        a3, a30 = (np.median([r[1] for r in table[(name, K)]]) for K in (3000, 30000))
        d30 = np.array([r[0] for r in table[(name, 30000)]])
        print(f"iv       {name}: {seeds} random plants, 10 dB: median A_c error {a3:.3f} at "
              f"K=3000, {a30:.3f} at K=30000 (ratio {a30 / a3:.2f}); delay error at K=30000 "
              f"median {np.median(d30):.4f} T, 90th pct. {np.percentile(d30, 90):.4f} T, right "
              f"whole delay {np.mean([r[2] for r in table[(name, 30000)]]):.0%}", flush=True)


def huber_section(seeds: int) -> None:
    for periods in (1.25, 1.5):
        plant = DelayedPlant.from_continuous(A_C, B_C, periods * T, T, max_delay=3)
        rows = {"ls": [], "huber": []}
        for seed in range(seeds):
            data = experiments(plant, 100, np.random.default_rng(seed), snr_db=20.0,
                               sas_alpha=1.5)
            for name in rows:
                rows[name].append(errors(fit(DMDidc(max_delay=3, estimator=name), *data, dt=T),
                                         plant))
        text = ", ".join(f"{name} median delay error {np.median([r[0] for r in v]):.4f} T "
                         f"(A_c {np.median([r[1] for r in v]):.4f})" for name, v in rows.items())
        print(f"huber    r = {periods} T, SaS alpha 1.5 at 20 dB, K = 30000: {text}", flush=True)


def private_section(seeds: int) -> None:
    plant = DelayedPlant.from_continuous(A_C, B_C, 1.25 * T, T, max_delay=3)
    stats_rows, sample_rows, times = [], [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        U = rng.standard_normal((10_000, 2, 300))
        X = simulate_experiments(plant, U)
        start = time.perf_counter()
        stats = SufficientStatistics.from_data(list(X), list(U), max_delay=3, state_bound=150.0,
                                               input_bound=4.0)
        private = stats.privatize("gaussian", epsilon=1.0, delta=1e-5, unit="sample", rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DMDidc(max_delay=3).fit_statistics(private, dt=T)
        times.append(time.perf_counter() - start)
        stats_rows.append(errors(est, plant))
        noisy, eps, _ = privatize_samples(X, state_bound=150.0, mechanism="gaussian",
                                          epsilon=1.0, delta=1e-5, alpha=1.5, steps=1, rng=rng)
        sample_rows.append(errors(fit(DMDidc(max_delay=3, estimator="iv"), list(noisy),
                                      list(U), dt=T), plant))
    stat_err = np.median([r[0] for r in stats_rows])
    sample_err = np.median([r[0] for r in sample_rows])
    print(f"private  K = 3e6, (1, 1e-5) per time step ({private.privacy.epsilon:.4g} from the "
          f"accountant): statistics median delay error {stat_err:.4f} T (A_c "
          f"{np.median([r[1] for r in stats_rows]):.4f}, right w "
          f"{np.mean([r[2] for r in stats_rows]):.0%}), statistics + privatize + fit "
          f"{np.median(times):.2f} s; per-sample (IV) {sample_err:.4f} T (A_c "
          f"{np.median([r[1] for r in sample_rows]):.4f}); ratio {sample_err / stat_err:.0f}",
          flush=True)


def coverage_section(seeds: int) -> None:
    plant = DelayedPlant.from_continuous(A_C, B_C, 1.25 * T, T, max_delay=3)
    blocks = np.zeros((4, 2, 4))
    blocks[:, :, :2] = plant.B_blocks
    blocks[0, :, 2:] = np.eye(2)
    with_noise = DelayedPlant(plant.A_d, blocks, T)
    for case in ("ls, process noise", "iv, 20 dB measurement noise", "bootstrap, iv"):
        hits = []
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            if case.startswith("ls"):
                U = rng.standard_normal((10, 2, 300))
                X = simulate_experiments(with_noise, np.concatenate(
                    [U, 0.3 * rng.standard_normal((10, 2, 300))], axis=1))
                data = (list(X), list(U))
            else:
                data = experiments(plant, 20, rng, snr_db=20.0)
            est = fit(DMDidc(max_delay=3, estimator=case.split(",")[0] if "boot" not in case
                             else "iv"), *data, dt=T)
            if not est.model_.has_continuous:
                hits.append([False, False])
                continue
            if case.startswith("bootstrap"):
                ci = est.delay_ci(0.95, method="bootstrap", n_resamples=100, rng=seed,
                                  X=data[0], U=data[1])
            else:
                ci = est.delay_ci(0.95)
            hits.append((ci.low <= plant.delay) & (plant.delay <= ci.high))
        print(f"coverage {case}: 95 % delay intervals cover in {np.mean(hits, axis=0)} of "
              f"{seeds} repetitions (per channel)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--sections", nargs="+", default=["default", "iv", "huber", "private"],
                        choices=["default", "iv", "huber", "private", "coverage"])
    args = parser.parse_args()
    sections = {"default": default_section, "iv": iv_section, "huber": huber_section,
                "private": private_section, "coverage": coverage_section}
    for name in args.sections:
        sections[name](args.seeds if name not in ("private",) else min(args.seeds, 5))


if __name__ == "__main__":
    main()
