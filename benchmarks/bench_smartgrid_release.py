"""Release calibration of a household's composed SaS statistics: one scale search vs nested.

A window unit of 12 steps under daily sharing reaches two days of a release and two releases
(``privatize_household(..., mechanism="sas", alpha=..., unit="window", window=12,
releases=2)``, household 0 of ``draw_households(8, rng=0)``, 21 days).  The release's noise is
calibrated so the accountant's composed guarantee meets the budget:

* ``scale search`` (today, ``_release_calibration``): the released scale is the decision
  variable -- the smallest scale meeting the household budget through each certificate that
  applies, the smaller chosen by the release's own rule (``choose_sas_scale``), the release
  drawing exactly that noise;
* ``nested`` (the former calibration, written out below): a bisection over the per-release
  epsilon, each step a release calibration (``calibrate_release``: for pure DP a scale search
  of its own), then the release calibrated again at the epsilon found.

Cases: ``pure``: delta 0, epsilon 1, the 152-entry release (``max_delay=3``); ``both``:
delta 1e-5, alpha 1.5, epsilon 10 on the 65-entry release of ``max_delay=0``, where both
certificates apply and the GDP scale is above the pure-DP lower bound, so the rule also
searches the pure-DP scale (the case the former calibration ran as nested searches: a pure-DP
search inside every step of its epsilon bisection).

Each run starts with empty caches (certified vector bounds, release calibrations).  Printed:
CPU seconds (best of ``--repeat``), the released scale, the household's certified epsilon, the
ratio.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_smartgrid_release.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import math

from _common import cpu_best_time

from dmdidc.private.release import calibrate_release, privatize_calibrated
from privacy.pure_epsilon import _vector_epsilon
from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
from simulations.smartgrid import private_identification as pi

CASES = {"pure": dict(max_delay=3, delta=0.0, alpha=1.9, epsilon=1.0),
         "both": dict(max_delay=0, delta=1e-5, alpha=1.5, epsilon=10.0)}
UNIT = dict(unit="window", window=12)
TRAJECTORIES = RELEASES = 2


def nested(stats, epsilon: float, delta: float, alpha: float):
    """The former calibration: bisection of the per-release epsilon (1 %), each step a
    release calibration, the household guarantee of its accounted mechanism."""
    sens = stats.sensitivity("window", window=12)

    def calibration(eps_release: float):
        return calibrate_release("sas", eps_release, delta=delta, alpha=alpha, l1=sens.l1,
                                 l2=sens.l2, dimension=stats.dimension)

    def household(eps_release: float) -> float:
        return pi._household_bound(calibration(eps_release).accounted, unit="window",
                                   trajectories=TRAJECTORIES, releases=RELEASES,
                                   delta=delta).epsilon

    low, high = epsilon / (TRAJECTORIES * RELEASES), epsilon
    while household(low) > epsilon:
        low /= 4.0
    while high / low > 1.01:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if household(middle) > epsilon else (middle, high)
    private = privatize_calibrated(stats, calibration(low), rng=0, accounted=True, **UNIT)
    return pi.household_guarantee(private.privacy, trajectories=TRAJECTORIES,
                                  releases=RELEASES, delta=delta, **UNIT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cases", nargs="+", choices=tuple(CASES), default=list(CASES))
    args = parser.parse_args()
    record = simulate_fleet(draw_households(8, rng=0), load_profiles("extract"), start_day=330,
                            days=21, excitation=0.5, excitation_signal="binary", rng=1)
    for case in args.cases:
        options = dict(CASES[case])
        stats = pi.household_statistics(record, 0, max_delay=options.pop("max_delay"))

        def fresh(run):
            def timed():
                calibrate_release.cache_clear()
                _vector_epsilon.cache_clear()
                return run()
            return timed

        runs = {"scale search": fresh(lambda s=stats, o=options: pi.privatize_household(
                    s, mechanism="sas", releases=RELEASES, rng=0, accounted=True, **UNIT,
                    **o)[1]),
                "nested": fresh(lambda s=stats, o=options: nested(s, **o))}
        times = {}
        print(f"{case}: {stats.dimension}-entry release, epsilon {options['epsilon']:g}, "
              f"delta {options['delta']:g}, alpha {options['alpha']:g}")
        for name, run in runs.items():
            times[name], guarantee = cpu_best_time(run, args.repeat)
            scale = guarantee.to_dict()["noise_scale"]
            print(f"  {name:>13}: {times[name]:6.2f} s CPU  scale {scale:.6g}  household "
                  f"epsilon {guarantee.epsilon:.6f} (budget {options['epsilon']:g}, "
                  f"{guarantee.method})")
        print(f"  nested / scale search: {times['nested'] / times['scale search']:.2f}x")


if __name__ == "__main__":
    main()
