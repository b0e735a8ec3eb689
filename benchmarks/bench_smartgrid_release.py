"""Release calibration of a household's pure-DP SaS statistics: one scale search vs nested.

A window unit of 12 steps under daily sharing reaches two days of a release and two releases
(``privatize_household(..., mechanism="sas", delta=0, alpha=1.9, unit="window", window=12,
releases=2)``, 152 released entries, household 0 of ``draw_households(8, rng=0)``, 21 days).
Its per-release epsilon is calibrated so the accountant's composed guarantee meets the budget:

* ``scale search`` (today): one search over the released scale on the household guarantee;
* ``nested``: the bisection over the per-release epsilon that :func:`privatize_household`
  still uses for the other mechanisms, each step a release calibration (a scale search of its
  own) -- run here by switching the pure-SaS shortcut off.

Each run starts with empty caches (certified vector bounds, release calibrations).  Printed:
CPU seconds (best of ``--repeat``), the released scale, the household's certified epsilon, the
ratio.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_smartgrid_release.py [--repeat 1]
"""

from __future__ import annotations

import argparse
from unittest import mock

from _common import cpu_best_time

from dmdidc.private.release import calibrate_release
from privacy.pure_epsilon import _vector_epsilon
from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
from simulations.smartgrid import private_identification as pi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    record = simulate_fleet(draw_households(8, rng=0), load_profiles("extract"), start_day=330,
                            days=21, excitation=0.5, excitation_signal="binary", rng=1)
    stats = pi.household_statistics(record, 0, max_delay=3)

    def release():
        calibrate_release.cache_clear()
        _vector_epsilon.cache_clear()
        return pi.privatize_household(stats, mechanism="sas", epsilon=args.epsilon, delta=0.0,
                                      alpha=1.9, unit="window", window=12, releases=2,
                                      rng=0)[1]

    def nested():
        with mock.patch.object(pi, "_uses_pure_sas", return_value=False):
            return release()

    times = {}
    for name, run in (("scale search", release), ("nested", nested)):
        times[name], guarantee = cpu_best_time(run, args.repeat)
        scale = guarantee.to_dict()["noise_scale"]
        print(f"{name:>13}: {times[name]:6.2f} s CPU  scale {scale:.6g}  household epsilon "
              f"{guarantee.epsilon:.6f} (budget {args.epsilon:g})")
    print(f"nested / scale search: {times['nested'] / times['scale search']:.2f}x")


if __name__ == "__main__":
    main()
