"""OutputDMDidc interval coverage by repetition: one plant, the noise redrawn many times.

The sweep of ``bench_output_loud.py`` gives one fit per plant; whether an interval is too
narrow for a given plant shows only when its noise is redrawn.  ``--seed s`` takes sweep plant
``s`` (plant, sensors, inputs and noise level fixed) and redraws the output noise ``--repeats``
times; ``--kink`` instead fits the two-state, one-sensor plants with a delay 0.01 T above a
whole period of ``tests/dmdidc/output/test_intervals.py`` (plant ``[5, seed]`` per
repetition).  Fits at the plant's order; a fit with an eigenvalue off by more than 10 % or a
delay off by more than 0.1 T is not counted (the question is the intervals of right fits).

Printed per quantity: the share of the 95 % intervals (eigenvalue boxes) that cover the truth,
the median width, and the root mean square of the errors in reported standard errors
(``(estimate - truth) / se``: 1 when the standard errors are right; a box needs both parts).

    python benchmarks/bench_output_coverage.py --seed 6 [--repeats 60]
    python benchmarks/bench_output_coverage.py --kink [--repeats 60]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from bench_output_loud import R, T, case

from dmdidc import DelayedPlant, OutputDMDidc
from simulations.studies.data_kinds import random_state_matrix


def sweep_plant(seed: int):
    """Repetition ``r`` of sweep plant ``seed``: its data with the noise redrawn."""
    c = case(seed)
    clean, U = c["clean"], c["U"]
    scale = np.std(c["Y"] - clean, axis=1, keepdims=True)     # the sweep's noise level

    def draw(r: int):
        rng = np.random.default_rng([seed, 1000 + r])
        return c["plant"], clean + scale * rng.standard_normal(clean.shape), U, c["n"], R
    return draw


def kink_plant(fraction: float = 1.01):
    """The two-state, one-sensor plant ``[5, r]`` with its delay ``fraction`` periods."""
    def draw(r: int):
        rng = np.random.default_rng([5, r])
        plant = DelayedPlant.from_continuous(random_state_matrix(rng, 2, T),
                                             rng.standard_normal((2, 1)),
                                             np.array([fraction * T]), T, max_delay=3)
        U = rng.standard_normal((1, 1500))
        C = rng.standard_normal((1, 2))
        clean = C @ plant.simulate(rng.standard_normal(2), U)[:, :1500]
        return plant, clean + 0.05 * clean.std() * rng.standard_normal(clean.shape), U, 2, 3
    return draw


def repeat(draw, repeats: int) -> dict:
    rows = {"delay": [], "eig": []}
    skipped, seconds, fits = 0, [], 0
    for r in range(repeats):
        plant, Y, U, n, max_delay = draw(r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.process_time()
            try:
                est = OutputDMDidc(max_delay=max_delay, order=n).fit(Y, U, dt=T)
            except ValueError:
                skipped += 1
                continue
            seconds.append(time.process_time() - start)
        truth = np.sort_complex(np.linalg.eigvals(plant.A_c))
        order = np.argsort(est.eigenvalues_)
        found = est.eigenvalues_[order]
        if (np.max(np.abs(found - truth) / np.abs(truth)) > 0.1
                or np.max(np.abs(est.delay - plant.delay)) > 0.1 * T):
            skipped += 1
            continue
        fits += 1
        low, high = est.delay_ci().T
        for i in range(plant.delay.size):
            rows["delay"].append((i, low[i] <= plant.delay[i] <= high[i], (high[i] - low[i]) / T,
                                  est.delay[i] - plant.delay[i], est.delay_se_[i]))
        low, high = est.eigenvalue_ci().T
        low, high = low[order], high[order]
        axes = est._axes_se()[order]
        for i, t in enumerate(truth):
            if t.imag < 0:
                continue            # a conjugate pair counted once
            inside = (low[i].real <= t.real <= high[i].real
                      and low[i].imag <= t.imag <= high[i].imag)
            rows["eig"].append((i, t, inside, max((high[i] - low[i]).real,
                                                  (high[i] - low[i]).imag) / abs(t),
                                found[i] - t, axes[i]))
    return {"rows": rows, "skipped": skipped, "seconds": seconds, "fits": fits}


def _spread(z: np.ndarray) -> float:
    """Root mean square of ``z`` (about the truth, not the mean: a bias counts too)."""
    z = z[np.isfinite(z)]
    return float(np.sqrt(np.mean(z ** 2))) if z.size else np.nan


def report(result: dict, *, pooled: bool = False) -> None:
    """Per delay and eigenvalue of the plant; ``pooled``: per kind over different plants."""
    rows = result["rows"]
    if pooled:
        rows = {"delay": [(0,) + row[1:] for row in rows["delay"]],
                "eig": [(bool(row[1].imag),) + row[1:] for row in rows["eig"]]}
    print(f"  right fits counted: {result['fits']}"
          f" (skipped {result['skipped']}), median CPU s per fit "
          f"{np.median(result['seconds']):.2f}")
    for i in sorted({row[0] for row in rows["delay"]}):
        mine = [row for row in rows["delay"] if row[0] == i]
        z = np.array([row[3] / row[4] for row in mine])
        print(f"  delay {i}: {len(mine)} fits, covered {np.mean([row[1] for row in mine]):.3f}, "
              f"median width {np.median([row[2] for row in mine]):.4f} T, rms of error / se "
              f"{_spread(z):.2f}")
    for i in sorted({row[0] for row in rows["eig"]}):
        mine = [row for row in rows["eig"] if row[0] == i]
        errors = np.array([row[4] for row in mine])
        axes = np.array([row[5] for row in mine])
        t = mine[0][1]
        kind = ("pairs" if t.imag else "real") if pooled else (
            f"pair {t:.3g}" if t.imag else f"real {t.real:.3g}")
        ratio = f"real {_spread(errors.real / axes[:, 0]):.2f}"
        if t.imag:
            ratio += f", imaginary {_spread(errors.imag / axes[:, 1]):.2f}"
        print(f"  eigenvalue {kind}: covered {np.mean([row[2] for row in mine]):.3f}, median "
              f"width {np.median([row[3] for row in mine]):.4f} |lambda|, rms of error / se "
              f"{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, action="append", default=[])
    parser.add_argument("--kink", action="store_true")
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    for seed in args.seed:
        print(f"sweep plant {seed} ({case(seed)['label']}), noise redrawn {args.repeats} times:")
        report(repeat(sweep_plant(seed), args.repeats))
    if args.kink:
        print(f"two states, one sensor, delay 1.01 T, {args.repeats} plants:")
        report(repeat(kink_plant(), args.repeats), pooled=True)


if __name__ == "__main__":
    main()
