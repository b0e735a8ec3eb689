"""OutputDMDidc(max_delay=0) on random plants: a delay it cannot hold must be loud.

Each seed draws a random stable plant (order 1-4, 1-2 inputs, 1-2 random sensors, T = 0.5 s),
white output noise at 20-40 dB and K = 1000-3000 white inputs, once with true delays uniform
in (0.1 T, 2 T) and once with no delay.  Delayed: *right* (delay within 0.1 T and the plant's
order: impossible with max_delay=0 unless the delay is tiny), *loud* (a ValueError or a
DiagnosticWarning) or *silent*.  Undelayed: *quiet* or a *false alarm* (any warning naming
max_delay).

    python benchmarks/bench_output_max_delay0.py [--seeds 30] [--first 0]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from dmdidc import DelayedPlant, OutputDMDidc
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import random_state_matrix

T = 0.5


def run(seed: int, delayed: bool) -> tuple[str, str]:
    """Fit one random case with max_delay=0: its verdict and the first message."""
    rng = np.random.default_rng(seed)
    n, m, ny = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    delays = rng.uniform(0.1, 2.0, m) * T if delayed else np.zeros(m)
    K, snr_db = int(rng.integers(1000, 3001)), float(rng.uniform(20, 40))
    plant = DelayedPlant.from_continuous(random_state_matrix(rng, n, T),
                                         rng.standard_normal((n, m)), delays, T, max_delay=2)
    U = rng.standard_normal((m, K))
    clean = rng.standard_normal((ny, n)) @ plant.simulate(rng.standard_normal(n), U)[:, :K]
    Y = clean + clean.std(axis=1, keepdims=True) * 10 ** (-snr_db / 20) * rng.standard_normal(
        clean.shape)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est = OutputDMDidc(max_delay=0).fit(Y, U, dt=T)
        except ValueError as exc:
            return "loud", f"{type(exc).__name__}: {exc}"
    messages = [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)]
    if not delayed:
        named = [w for w in messages if "max_delay" in w]
        return ("false alarm", named[0]) if named else ("quiet", "")
    if est.order_ == n and np.all(np.abs(est.delay - delays) < 0.1 * T):
        return "right", ""
    return ("loud", messages[0]) if messages else ("silent", f"order {est.order_} of {n}, "
                                                             f"delays {np.round(delays / T, 2)} T")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    for delayed in (True, False):
        counts: dict[str, int] = {}
        start = time.process_time()
        for seed in range(args.first, args.first + args.seeds):
            verdict, text = run(seed, delayed)
            counts[verdict] = counts.get(verdict, 0) + 1
            if args.verbose or verdict in ("silent", "false alarm"):
                print(f"  seed {seed} {verdict}: {text[:150]}")
        print(f"{'delays in (0.1, 2) T' if delayed else 'no delay':>22}: {counts} "
              f"({time.process_time() - start:.1f} s CPU)")


if __name__ == "__main__":
    main()
