"""Does the bootstrap over privatized ``fit_statistics`` parts picture the estimator's
sampling + privacy spread?  ("Confidence intervals of private fits" on the "Noisy data" page.)

Random plants (``tests/dmdidc/test_resampling.random_plant``: 2-3 states, 1-2 inputs, real
eigenvalues -0.2 .. -1, delays 0.2-1.9 T, ``max_delay=3``), ``--parts`` experiments of
``--length`` samples each with process noise (least squares is consistent there), each experiment's
statistics privatized on its own (Gaussian, ``(epsilon, 1e-5)``-DP per time step, public bounds
from a pilot run of the plant).  Per repetition (new plant, new data, new noise):
``fit_statistics(parts)``, then ``--resamples`` bootstrap refits over the parts
(``dmdidc.resampling.parts_refit``), percentile intervals at ``--level`` for the delays and the
eigenvalues of ``A_c`` (sorted), and the asymptotic delay interval (delta method with the
privacy noise's covariance) for comparison.  Printed per epsilon: the coverage of each, the
median ratio of bootstrap to asymptotic delay half-width, and, for the plants of
``--fixed-seeds`` repeated ``--fixed`` times each, the bias and Monte Carlo standard deviation of
the delay estimate against the median bootstrap standard deviation.

``--declared linear`` replays the former rule (a part drawn ``c`` times declared ``c sigma^2``
instead of ``c^2 sigma^2``) to see what the declared variance changes in the intervals.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/private_bootstrap_coverage.py \
          [--repetitions 24] [--fixed 20] [--fixed-seeds 7 8] [--epsilons 3 10 inf] [--parts 10] \
          [--length 10000] [--resamples 60] [--declared exact]
"""

from __future__ import annotations

import argparse
import dataclasses
import warnings

import numpy as np

from dmdidc import DelayedPlant, DMDidc, SufficientStatistics, resampling
from dmdidc.errors import ContinuousModelWarning, DiagnosticWarning
from tests.dmdidc.inference.test_intervals import process_noise_experiments
from tests.dmdidc.test_resampling import random_plant

R = 3


def experiments(plant: DelayedPlant, count: int, length: int, rng: np.random.Generator):
    """``count`` experiments with process noise (0.3 on every state)."""
    Xs, Us = process_noise_experiments(plant, count, int(rng.integers(2 ** 31)), length=length)
    return list(zip(Xs, Us, strict=True))


def parts_of(data, bound: float, epsilon: float, rng: np.random.Generator):
    parts = [SufficientStatistics.from_data(X, U, max_delay=R, state_bound=bound,
                                            input_bound=5.0) for X, U in data]
    if np.isinf(epsilon):
        return parts
    return [p.privatize("gaussian", epsilon=epsilon, delta=1e-5, rng=rng) for p in parts]


def one(plant: DelayedPlant, bound: float, epsilon: float, args, rng) -> dict | None:
    parts = parts_of(experiments(plant, args.parts, args.length, rng), bound, epsilon, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        warnings.simplefilter("ignore", DiagnosticWarning)
        try:
            est = DMDidc(max_delay=R, estimator="ls").fit_statistics(parts, dt=1.0)
            asymptotic = est.confidence_intervals(args.level).delay
        except Exception as exc:       # (a study: count what fails, and why)
            return {"error": type(exc).__name__}
        refit, count = est._parts_refit()
        draws = []
        for _ in range(args.resamples):
            vector = refit(np.bincount(rng.integers(0, count, count), minlength=count))
            if vector is not None:
                draws.append(vector)
    n, m = plant.n_states, plant.n_inputs
    if len(draws) < args.resamples // 2 or not est.model_.has_continuous:
        return {"error": "no continuous model"}
    draws = np.array(draws)
    eig = np.sort(np.array([np.linalg.eigvals(d[m:m + n * n].reshape(n, n)).real
                            for d in draws]), axis=1)
    tail = 50.0 * (1.0 - args.level)
    delay_lo, delay_hi = np.percentile(draws[:, :m], [tail, 100 - tail], axis=0)
    eig_lo, eig_hi = np.percentile(eig, [tail, 100 - tail], axis=0)
    true_eig = np.sort(np.linalg.eigvals(plant.A_c).real)
    return {"delay": (delay_lo <= plant.delay) & (plant.delay <= delay_hi),
            "eig": (eig_lo <= true_eig) & (true_eig <= eig_hi),
            "asym": (asymptotic.low <= plant.delay) & (plant.delay <= asymptotic.high),
            "ratio": (delay_hi - delay_lo) / (asymptotic.high - asymptotic.low),
            "estimate": est.delay, "boot_sd": draws[:, :m].std(axis=0, ddof=1),
            # loud: some check of the fit failed (a DiagnosticWarning), e.g. `effect` when
            # the privacy noise hid every block of a channel, `precision` for A_c's modes
            "loud": np.full(m, bool(est.diagnostics_.failed)),
            "hidden": est.block_test_.first_active < 0}      # no active block: delay read 0


def loudness(rows: list[dict]) -> str:
    """How many missed and covered delay channels came from a fit that warned."""
    loud = np.concatenate([r["loud"] for r in rows])
    hidden = np.concatenate([r["hidden"] for r in rows])
    text = []
    for key, name in (("delay", "bootstrap"), ("asym", "asymptotic")):
        covered = np.concatenate([r[key] for r in rows])
        text.append(f"{name} misses {loud[~covered].sum()} of {(~covered).sum()} "
                    f"({hidden[~covered].sum()} without an active block), covered "
                    f"{loud[covered].sum()} of {covered.sum()}")
    return "; ".join(text)


def public_bound(plant: DelayedPlant, rng) -> float:
    """A state bound from a pilot run (public: not the released data)."""
    X = np.concatenate([X for X, _ in experiments(plant, 3, 300, rng)], axis=1)
    return float(1.5 * np.abs(X).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=24)
    parser.add_argument("--fixed", type=int, default=20)
    parser.add_argument("--fixed-seeds", type=int, nargs="*", default=[7, 8])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[3.0, 10.0, np.inf])
    parser.add_argument("--parts", type=int, default=10)
    parser.add_argument("--length", type=int, default=10000)
    parser.add_argument("--resamples", type=int, default=60)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--declared", choices=["exact", "linear"], default="exact")
    args = parser.parse_args()
    if args.declared == "linear":
        exact = resampling.weighted_total

        def linear(parts, counts):        # the former rule: c sigma^2 for a part drawn c times
            total = exact(parts, counts)
            return dataclasses.replace(total, noise_variance=float(sum(
                int(c) * p.noise_variance for p, c in zip(parts, counts, strict=True))))
        resampling.weighted_total = linear
    print(f"{args.parts} privatized parts of {args.length} samples, level {args.level}, "
          f"{args.resamples} resamples, declared variance rule: {args.declared}")
    for epsilon in args.epsilons:
        rows, errors = [], []
        for seed in range(args.repetitions):
            rng = np.random.default_rng(1000 + seed)
            plant = random_plant(rng)
            row = one(plant, public_bound(plant, rng), epsilon, args, rng)
            (errors if "error" in row else rows).append(row)
        if rows:
            cover = {key: np.mean(np.concatenate([r[key] for r in rows])) for key in
                     ("delay", "eig", "asym")}
            ratio = np.nanmedian(np.concatenate([r["ratio"] for r in rows]))
            print(f"epsilon {epsilon:>5}: {len(rows)} fits ({len(errors)} failed: "
                  f"{sorted(set(e['error'] for e in errors))}); coverage bootstrap delay "
                  f"{cover['delay']:.2f}, eigenvalues {cover['eig']:.2f}, asymptotic delay "
                  f"{cover['asym']:.2f}; bootstrap / asymptotic width {ratio:.2f}")
            print("  channels whose fit warned (a failed check): " + loudness(rows))
        for seed in args.fixed_seeds:
            fixed_plant(seed, epsilon, args)


def fixed_plant(seed: int, epsilon: float, args) -> None:
    """One plant, ``args.fixed`` new data and noise draws: the estimate's bias and spread
    against the bootstrap's."""
    rng = np.random.default_rng(seed)
    plant = random_plant(rng)
    bound = public_bound(plant, rng)
    rows = [one(plant, bound, epsilon, args, rng) for _ in range(args.fixed)]
    rows = [r for r in rows if "error" not in r]
    if len(rows) < 2:
        print(f"  plant {seed}: {len(rows)} fits with a continuous model")
        return
    estimates = np.array([r["estimate"] for r in rows])
    print(f"  plant {seed} (delays {np.round(plant.delay, 3)}), {len(rows)} fits: bias "
          f"{np.round(estimates.mean(axis=0) - plant.delay, 3)}, Monte Carlo sd "
          f"{np.round(estimates.std(axis=0, ddof=1), 3)}, median bootstrap sd "
          f"{np.round(np.median([r['boot_sd'] for r in rows], axis=0), 3)}, bootstrap "
          f"coverage {np.round(np.mean([r['delay'] for r in rows], axis=0), 2)}")

if __name__ == "__main__":
    main()
