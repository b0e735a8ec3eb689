"""The cost of the ``linearity`` check: the default fit with and without it, and the check alone.

On white-input data of random stable plants (30 dB): a small fit (3 states, 2 inputs, R = 4,
K = 3000) and a large one (10 states, 3 inputs, R = 8, K = 10^5; the check thins the data to
about ``dmdidc.inference.linearity.SAMPLES`` samples).  Best CPU time of --repeat fits each (the
check replaced by a stub that returns "not tested" for the fit without it), with the ratio.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_linearity_cost.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import warnings

from _common import cpu_best_time

import dmdidc.inference.linearity as linearity
from dmdidc import DMDidc
from dmdidc.inference.checks import Check
from simulations.studies.data_kinds import make_data, random_plant

CASES = ((3, 2, 4, 3000), (10, 3, 8, 100_000))


def _stub(parts, model, level):
    return Check("linearity", "", None, finding="not tested (benchmark stub)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    # the fit imports the check from its module at each fit (lazily): the stub goes there
    real = linearity.linearity_check
    print(f"{'n, m, R, K':22s} {'with check':>11s} {'without':>9s} {'ratio':>6s}")
    for n, m, R, K in CASES:
        plant = random_plant(1000, n_states=n, n_inputs=m, max_delay=R,
                             delay_periods=(0.2, R - 1.2))
        data = make_data("white", plant, samples=K, rng=0)

        times = {}
        for name, check in (("without", _stub), ("with", real)):
            linearity.linearity_check = check
            times[name] = cpu_best_time(lambda R=R, data=data: _fit(R, data), args.repeat)[0]
        linearity.linearity_check = real
        with_, without = times["with"], times["without"]
        print(f"{n:2d}, {m}, {R}, {K:<11d} {with_ * 1e3:9.1f} ms {without * 1e3:6.1f} ms"
              f" {with_ / without:6.2f}", flush=True)


def _fit(R: int, data) -> DMDidc:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=R).fit(data.X, data.U, dt=0.5)


if __name__ == "__main__":
    main()
