"""OutputDMDidc's second-delay check: right or loud where two delays fit as well, quiet elsewhere.

*Twins*: the trial plants whose one sensor cannot tell two delays apart, the second in a well
narrower than the delay search's grid (2 states, 1 input, ``random_plant(seed, n_states=2,
n_inputs=1)``; plant 1002 has 3 states), ``K = 2000``, white output noise at 20, 30, 40 and
60 dB, three draws each, ``OutputDMDidc(max_delay=3)``.  A fit is *right* when its delay is
within 0.15 T, *loud* when it warns "delay not determined", otherwise *silently wrong*.
*Ordinary*: 20 random plants (3 states, 2 inputs, seeds 0-19) seen by 1 and by 2 sensors at
30 dB, ``max_delay=4``: the fits that warn at all and those that name a second delay (a
rise is a false alarm of the check).  CPU seconds per fit, the median of each group.

    python benchmarks/bench_output_delay_ties.py [--draws 3]
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter

import numpy as np

from dmdidc import OutputDMDidc, random_excitation
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import random_plant

T = 0.5
#: (plant seed, states, sensor seed, input seed) of the trial's twin plants.
TWINS = [(600, 2, [0, 5], 0), (900, 2, [0, 2], 0), (914, 2, [14, 2], 14), (907, 2, [7, 2], 7),
         (1002, 3, [2, 3], 2)]


def noisy(clean: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    """``clean`` plus white noise at ``snr_db`` per output (its own stream, never the inputs')."""
    rng = np.random.default_rng([seed, 777])
    return clean + 10 ** (-snr_db / 20) * clean.std(axis=1, keepdims=True) * rng.standard_normal(
        clean.shape)


def fit(Y: np.ndarray, U: np.ndarray, max_delay: int) -> tuple[OutputDMDidc, list[str], float]:
    """The fit, its DiagnosticWarnings and its CPU seconds."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.process_time()
        est = OutputDMDidc(max_delay=max_delay).fit(Y, U, dt=T)
        seconds = time.process_time() - start
    return est, [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)], \
        seconds


def twins(draws: int) -> list[float]:
    """Print one line per twin plant; the CPU seconds of its fits."""
    seconds = []
    total = Counter()
    for pid, n, sensor_seed, input_seed in TWINS:
        plant = random_plant(pid, n_states=n, n_inputs=1)
        C = np.random.default_rng(sensor_seed).standard_normal((1, n))
        U = random_excitation(1, 2000, rng=input_seed)
        clean = C @ plant.simulate(np.zeros(n), U)[:, :-1]
        row = Counter()
        for snr_db in (20, 30, 40, 60):
            for draw in range(draws):
                est, messages, spent = fit(noisy(clean, snr_db, 1000 * draw + snr_db), U, 3)
                seconds.append(spent)
                named = any("channel 0: delay not determined" in m for m in messages)
                right = abs(est.delay[0] - plant.delay[0]) <= 0.15 * T
                row["right" if right else "loud" if named else "SILENT"] += 1
        total.update(row)
        print(f"twin plant {pid:5d} (true delay {plant.delay[0]:.4f} s): right {row['right']:2d}"
              f"  wrong, loud {row['loud']:2d}  silently wrong {row['SILENT']:2d}")
    print(f"all twins: right {total['right']}  wrong, loud {total['loud']}  "
          f"silently wrong {total['SILENT']}")
    return seconds


def ordinary() -> list[float]:
    """Print the warning counts of the ordinary plants; the CPU seconds of their fits."""
    seconds, warned, named = [], Counter(), Counter()
    for seed in range(20):
        plant = random_plant(seed)
        U = random_excitation(2, 2000, rng=seed)
        for sensors in (1, 2):
            C = np.random.default_rng([seed, sensors]).standard_normal((sensors, 3))
            clean = C @ plant.simulate(np.zeros(3), U)[:, :-1]
            _, messages, spent = fit(noisy(clean, 30, seed), U, 4)
            seconds.append(spent)
            warned[sensors] += bool(messages)
            named[sensors] += any("delay not determined" in m for m in messages)
    for sensors in (1, 2):
        print(f"ordinary plants, {sensors} sensor(s): {warned[sensors]} of 20 fits warn, "
              f"{named[sensors]} name a second delay")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=3, help="noise draws per plant and SNR")
    args = parser.parse_args()
    twin_seconds = twins(args.draws)
    ordinary_seconds = ordinary()
    print(f"CPU s per fit (median): twins {np.median(twin_seconds):.3f}, "
          f"ordinary {np.median(ordinary_seconds):.3f}")


if __name__ == "__main__":
    main()
