"""OutputDMDidc on several experiments of one plant: unequal noise levels and short records.

*Two experiments* (``--case two``): a random 3-state plant with 2 inputs seen by one sensor
(:func:`simulations.studies.data_kinds.random_plant`, T = 0.5 s, max_delay 4), two experiments
of 1500 samples whose inputs are ``--apart`` times apart in amplitude (white, from rest), the
noise at 30 dB of the plant's response to unit inputs times each experiment's amplitude
(``--noise apart``: noise levels ``--apart`` times apart) or the same in both (``--noise
same``); fitted with ``--detrend`` (``none``: one offset for both, the default; ``constant``:
each experiment's mean fitted with the plant, which lets the fit weigh the experiments by their
noise).  *Short experiments* (``--case short``): ``--count`` experiments of ``--samples``
samples of one plant, each from a random state, white noise at 30 dB of each experiment's own
output (so their levels differ), ``--draws`` noise draws.

A fit is *right* when its order is the plant's, every eigenvalue within 10 % and every delay
within 0.1 T (as :mod:`bench_output_loud`); *loud* when it warned.  The rows also give the
``noise_levels`` check's verdict, ``experiment_levels_`` and, for the short experiments, the
root mean square of the eigenvalue and delay errors in standard errors (fits at the plant's
order).

    python benchmarks/bench_output_experiments.py [--case two] [--seeds 8] [--apart 10]
        [--noise apart] [--detrend none]
    python benchmarks/bench_output_experiments.py --case short [--count 30] [--samples 100]
        [--draws 15] [--detrend constant]

2026-11-28 (the review that added the check, the weighting and the joint constants):
``--case two`` seeds 0-7, apart 10: noise apart, default: 0 right (orders 4-8), 8 fail the
check; noise apart, constant: 7 right (before the joint constants 0); noise same, constant:
7 right and quiet (before 4); ``--case short`` on plant 21 of the review (this script's
``--plant 21``), constant: 11 of 15 at the plant's order (before 0 of 15), eigenvalue and
delay errors 1.15 and 1.19 standard errors rms.  CPU: a weighted fit costs the misweighted fit
before it (median 0.69 s per fit for noise apart, 0.05 s for the same noise, constant).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment

from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import random_plant, random_state_matrix

T, R = 0.5, 4


def _right(plant, est) -> bool:
    truth, found = np.linalg.eigvals(plant.A_c), est.eigenvalues_
    if found.size != truth.size:
        return False
    cost = np.abs(found[:, None] - truth[None, :]) / np.abs(truth[None, :])
    rows, columns = linear_sum_assignment(cost)
    return bool(cost[rows, columns].max() < 0.1
                and np.max(np.abs(est.delay - plant.delay)) < 0.1 * T)


def _fit(Ys, Us, detrend):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.process_time()
        est = OutputDMDidc(max_delay=R, detrend=detrend).fit(Ys, Us, dt=T)
        seconds = time.process_time() - start
    return est, [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)], \
        seconds


def two_experiments(seed: int, apart: float, noise_apart: bool, K: int = 1500):
    """The plant and the two experiments of ``seed`` (as tests/dmdidc/output/test_checks)."""
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n_states=3, n_inputs=2, dt=T, max_delay=R)
    C = rng.standard_normal((1, 3))
    level = 0.03 * np.sqrt(np.mean((C @ plant.simulate(
        np.zeros(3), random_excitation(2, K, rng=seed))[:, :K]) ** 2))
    Ys, Us = [], []
    for amplitude in (np.sqrt(apart), 1.0 / np.sqrt(apart)):
        U = amplitude * random_excitation(2, K, rng=rng)
        Y = C @ plant.simulate(np.zeros(3), U)[:, :K]
        Ys.append(Y + (amplitude if noise_apart else 1.0) * level * rng.standard_normal(Y.shape))
        Us.append(U)
    return plant, Ys, Us


def short_experiments(plant_seed: int, draw: int, count: int, samples: int):
    """``count`` experiments of ``samples`` samples of the plant of ``plant_seed``."""
    rng = np.random.default_rng(plant_seed)
    periods = rng.uniform(0.3, 3.7, 2)
    rng = np.random.default_rng(plant_seed)
    plant = DelayedPlant.from_continuous(random_state_matrix(rng, 3, T),
                                         rng.standard_normal((3, 2)), periods * T, T,
                                         max_delay=R)
    C = rng.standard_normal((1, 3))
    noise = np.random.default_rng(100 + draw)
    Ys, Us = [], []
    for _ in range(count):
        U = noise.standard_normal((2, samples))
        Y = C @ plant.simulate(noise.standard_normal(3), U)[:, :-1]
        Ys.append(Y + 0.03 * Y.std() * noise.standard_normal(Y.shape))
        Us.append(U)
    return plant, Ys, Us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=("two", "short"), default="two")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--apart", type=float, default=10.0)
    parser.add_argument("--noise", choices=("apart", "same"), default="apart")
    parser.add_argument("--detrend", choices=("none", "constant", "linear"), default=None)
    parser.add_argument("--plant", type=int, default=21)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--draws", type=int, default=15)
    args = parser.parse_args()
    detrend = args.detrend or ("none" if args.case == "two" else "constant")
    detrend = False if detrend == "none" else detrend
    right = loud = failed = 0
    errors_eig, errors_delay, cpu = [], [], []
    runs = range(args.seeds) if args.case == "two" else range(args.draws)
    for run in runs:
        if args.case == "two":
            plant, Ys, Us = two_experiments(run, args.apart, args.noise == "apart")
        else:
            plant, Ys, Us = short_experiments(args.plant, run, args.count, args.samples)
        est, messages, seconds = _fit(Ys, Us, detrend)
        cpu.append(seconds)
        ok = _right(plant, est)
        right += ok
        loud += bool(messages)
        failed += est.checks_[2].failed
        if est.order_ == plant.n_states:
            truth = np.linalg.eigvals(plant.A_c)
            cost = np.abs(est.eigenvalues_[:, None] - truth[None, :])
            rows, columns = linear_sum_assignment(cost)
            errors_eig += list(cost[rows, columns] / est.eigenvalue_se_[rows])
            errors_delay += list(np.abs(est.delay - plant.delay) / est.delay_se_)
        print(f"{args.case} {run:3d}: order {est.order_}/{plant.n_states} "
              f"{'right' if ok else 'wrong'}{', warned' if messages else ''}; noise_levels "
              f"{'FAIL' if est.checks_[2].failed else 'note' if est.checks_[2].beyond else 'pass'}"
              f"; experiment_levels_ {np.round(est.experiment_levels_[:4], 2).tolist()}"
              f"{' ...' if est.experiment_levels_.size > 4 else ''}; {seconds:.2f} s")

    def rms(values: list) -> float:
        return float(np.sqrt(np.mean(np.square(values)))) if values else float("nan")

    print(f"\n{len(runs)} fits ({args.case}, detrend={detrend!r}): right {right}, warned "
          f"{loud}, noise_levels failed {failed}; at the plant's order, errors in standard "
          f"errors rms: eigenvalues {rms(errors_eig):.2f}, delays {rms(errors_delay):.2f}; "
          f"CPU s per fit, median {np.median(cpu):.2f}")


if __name__ == "__main__":
    main()
