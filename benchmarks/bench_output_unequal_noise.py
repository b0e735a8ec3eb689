"""OutputDMDidc with unequal sensor noise or sensor offsets: right or loud, noise_std_, cost.

Random stable plants (``random_plant(1600 + s)``: 3 states, 2 inputs, T = 0.5 s) seen through 2
or 3 random sensors, white inputs, K = 3000 samples, white noise per sensor at a level given as
a fraction of that output's standard deviation, and optionally a constant offset (in the same
units).  A fit is *right* when its eigenvalues are within 25 % (matched), its delays within
0.15 T and its DC gain within 25 %; *warned* when it issues a UserWarning.  ``noise_std_`` is
compared with each noisy sensor's true noise level (worst ratio over the outputs and plants).
Seconds are wall-clock of one default fit.  ``--coverage D`` instead fits D noise draws on
plants 0, 2 and 11 and counts how often ``delay_ci()`` and ``eigenvalue_ci()`` (95 %) hold the
truth.

    python benchmarks/bench_output_unequal_noise.py [--seeds 12] [--cases all]
    python benchmarks/bench_output_unequal_noise.py --coverage 20 --cases 40/10
    python benchmarks/bench_output_unequal_noise.py --coverage 30 --cases 34/24.4 --unequal 100

``--unequal`` sets the residual-variance ratio above which the fit is weighted (default 2;
100: these cases unweighted), to measure what the weighting buys.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment

import dmdidc.output.estimator as output_estimator
from dmdidc import OutputDMDidc, random_excitation
from simulations.studies.data_kinds import random_plant

T, R, K = 0.5, 4, 3000
#: name: (noise levels per sensor, offsets per sensor), both in output standard deviations
CASES = {
    "equal": ((0.03, 0.03), (0.0, 0.0)),
    "40/10": ((0.01, 0.3), (0.0, 0.0)),
    "offset50": ((0.03, 0.03), (0.0, 50.0)),
    "offsets": ((0.03, 0.03), (50.0, -200.0)),
    "3s_40/40/10": ((0.01, 0.01, 0.3), (0.0, 0.0, 0.0)),
    "3s_equal": ((0.03, 0.03, 0.03), (0.0, 0.0, 0.0)),
    "20/30": ((0.1, 0.03), (0.0, 0.0)),
    "30/27.5": ((0.03, 0.042), (0.0, 0.0)),
    "34/24.4": ((0.02, 0.06), (0.0, 0.0)),
    "exact/20": ((0.0, 0.1), (0.0, 0.0)),
    "120/20": ((1e-6, 0.1), (0.0, 0.0)),
    "60/10": ((0.001, 0.3), (0.0, 0.0)),
}


def _data(seed: int, levels, offsets, draw: int | None = None):
    plant = random_plant(1600 + seed, n_states=3, n_inputs=2)
    C = np.random.default_rng([seed, 18]).standard_normal((len(levels), 3))
    noise_seed = [seed, 19] if draw is None else [seed, draw, 99]
    noise = np.random.default_rng(noise_seed).standard_normal((len(levels), K))
    U = random_excitation(2, K, rng=seed)
    clean = C @ plant.simulate(np.zeros(3), U)[:, :-1]
    sd = clean.std(axis=1)
    sigma = np.asarray(levels) * sd
    return plant, C, clean + sigma[:, None] * noise + (np.asarray(offsets) * sd)[:, None], U, sigma


def _fit(Y, U):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
        seconds = time.perf_counter() - start
    return est, [w for w in caught if issubclass(w.category, UserWarning)], seconds


def _matched(found, truth):
    """Pairs (found, true) of eigenvalues matched by least relative distance."""
    cost = np.abs(found[:, None] - truth[None]) / np.maximum(np.abs(truth[None]), 0.02)
    return linear_sum_assignment(cost), cost


def _right(plant, C, est) -> bool:
    (rows, cols), cost = _matched(np.asarray(est.eigenvalues_), np.linalg.eigvals(plant.A_c))
    gain = C @ np.linalg.solve(-plant.A_c, plant.B_c)
    found = est.C @ np.linalg.solve(-est.A_c, est.B_c)
    return bool(cost[rows, cols].max() <= 0.25
                and np.max(np.abs(est.delay - plant.delay)) <= 0.15 * T
                and np.linalg.norm(found - gain) <= 0.25 * np.linalg.norm(gain))


def tally(cases, seeds: int) -> None:
    print("| case | right, silent | right, warned | wrong, warned | wrong, silent | order 3 "
          "| noise_std_ / truth, worst | s per fit, median |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in cases:
        levels, offsets = CASES[name]
        counts, order3, worst, seconds = np.zeros(4, int), 0, 1.0, []
        for seed in range(seeds):
            plant, C, Y, U, sigma = _data(seed, levels, offsets)
            est, caught, spent = _fit(Y, U)
            counts[2 * (not _right(plant, C, est)) + (not caught)] += 1
            order3 += est.order_ == 3
            noisy = sigma > 0                   # a noise-free sensor has no level to match
            worst = max(worst, float(np.exp(np.max(np.abs(np.log(est.noise_std_[noisy]
                                                                  / sigma[noisy]))))))
            seconds.append(spent)
        print(f"| {name} | {counts[1]} | {counts[0]} | {counts[2]} | {counts[3]} | {order3} "
              f"| {worst:.3f} | {np.median(seconds):.3f} |")


def coverage(cases, draws: int) -> None:
    for name in cases:
        levels, offsets = CASES[name]
        delays = eigenvalues = delay_count = eigenvalue_count = fits = warned = 0
        for seed in (0, 2, 11):
            for draw in range(draws):
                plant, C, Y, U, _ = _data(seed, levels, offsets, draw)
                est, caught, _ = _fit(Y, U)
                warned += bool(caught)
                if est.order_ != 3:
                    continue
                fits += 1
                ci = est.delay_ci(0.95)
                delays += int(np.sum((ci[:, 0] <= plant.delay) & (plant.delay <= ci[:, 1])))
                delay_count += plant.delay.size
                truth = np.linalg.eigvals(plant.A_c)
                box = est.eigenvalue_ci(0.95)
                (rows, cols), _ = _matched(np.asarray(est.eigenvalues_), truth)
                for i, j in zip(rows, cols, strict=True):
                    low, high = box[i]
                    eigenvalues += int(low.real <= truth[j].real <= high.real
                                       and low.imag <= truth[j].imag <= high.imag)
                    eigenvalue_count += 1
        print(f"{name}: order 3 in {fits} of {3 * draws} fits, {warned} warned; delay_ci covers "
              f"{delays}/{delay_count} = {delays / max(delay_count, 1):.3f}, eigenvalue_ci "
              f"{eigenvalues}/{eigenvalue_count} = {eigenvalues / max(eigenvalue_count, 1):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--cases", default="all",
                        help=f"comma-separated, of {', '.join(CASES)}; or all")
    parser.add_argument("--coverage", type=int, default=0, metavar="D",
                        help="noise draws per plant for the interval coverage (0: the tally)")
    parser.add_argument("--unequal", type=float, default=output_estimator._UNEQUAL,
                        help="residual-variance ratio above which the fit is weighted")
    args = parser.parse_args()
    output_estimator._UNEQUAL = args.unequal
    cases = list(CASES) if args.cases == "all" else args.cases.split(",")
    for name in cases:
        if name not in CASES:
            parser.error(f"--cases {name!r}; accepted: {', '.join(CASES)} or all")
    if args.coverage:
        coverage(cases, args.coverage)
    else:
        tally(cases, args.seeds)


if __name__ == "__main__":
    main()
