"""``OutputDMDidc``'s ``convergence`` check over random open-loop plants: how each model's
output-error search ended, and how often the check warns on well-posed data.

Random plants of orders 1-6 with 1-2 inputs (delays 0.2-2.8 T, T = 0.5 s, ``max_delay`` 4) seen
through 1-3 random sensors, in 1-3 experiments (600-2000 samples each; one of 2000), white
inputs, noise-free and 20, 30, 40 dB of white output noise in turn.  Per plant: the order, the
model search's ending, evaluations and the gain still promised (noise variances), how many of the
fit's searches (candidates included; not the profiles' deliberately short ones) stopped at their
limit with more to gain, the convergence check and the other warnings.  ``--limit N`` caps every
search at N evaluations (the check must then fail where the model's continuation cannot reach
the minimum); ``--more M`` sets the continuation (0: none).  Times are CPU seconds per fit.

    python benchmarks/bench_output_convergence.py [--seeds 400] [--first 0]
                                                  [--limit 60] [--more 180]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from dmdidc import OutputDMDidc
from dmdidc.output import estimator, intervals, refine
from simulations.studies.data_kinds import random_output_experiments

T, R = 0.5, 4
SNRS = (np.inf, 20.0, 30.0, 40.0)


def draw(seed: int):
    """Plant, description and data (``(Y, U)`` or lists of experiments) of ``seed``."""
    return random_output_experiments(seed, SNRS[seed % len(SNRS)], dt=T, max_delay=R)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--more", type=int, default=estimator._MORE_EVALUATIONS)
    args = parser.parse_args()
    refine.refine.__kwdefaults__["max_evaluations"] = args.limit
    intervals.restart.__kwdefaults__["max_evaluations"] = args.limit
    estimator._MORE_EVALUATIONS = max(args.more, 1)
    searches: list = []

    def counted(function):
        def wrapper(*positional, **keywords):
            fit = function(*positional, **keywords)
            if keywords.get("max_evaluations", args.limit) == args.limit:   # not profiles
                searches.append(fit.ending)
            return fit
        return wrapper

    estimator.refine, intervals.refine = counted(estimator.refine), counted(intervals.refine)
    print(f"{'seed':>4}  {'plant':<28} {'order':>5}  {'ending':<11} {'evals':>5} {'gain':>8}  "
          f"{'limit':>5}  {'check':<5}  {'CPU s':>6}  other warnings")
    failed, total, cpu, limited = 0, 0, 0.0, 0
    for seed in range(args.first, args.first + args.seeds):
        plant, info, (Y, U) = draw(seed)
        searches.clear()
        start = time.process_time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
        seconds = time.process_time() - start
        cpu, total = cpu + seconds, total + 1
        check = next(c for c in est.checks_ if c.name == "convergence")
        failed += check.failed
        at_limit = sum(ending == "evaluations" for ending in searches)
        limited += at_limit
        others = sum("'convergence'" not in str(w.message) for w in caught)
        fit = est.refined_
        print(f"{seed:>4}  {info:<28} {est.order_:>5}  {fit.ending:<11} {fit.evaluations:>5} "
              f"{fit.gain:>8.3g}  {at_limit:>5}  {'FAIL' if check.failed else 'pass':<5}  "
              f"{seconds:>6.3f}  {others}")
    print(f"\n{total} fits: convergence check failed on {failed}; searches at their limit with "
          f"more to gain {limited}; CPU {cpu:.2f} s ({cpu / total:.3f} s per fit)")


if __name__ == "__main__":
    main()
