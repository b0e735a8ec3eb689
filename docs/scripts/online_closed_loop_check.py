"""The closed-loop numbers of "Undetermined delays" on the "Live identification" page: the
adaptive study's loop (``AdaptiveConfig``, 1600 samples, the delay step at 800) on random plants,
the delay estimate read every 50 samples; per plant the reports that are confidently wrong (off
by more than 0.1 T and outside their 99 % interval), the undetermined reads after the warm-up
(500 samples after the start and after the change), and the coverage of the 99 % intervals.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/online_closed_loop_check.py [--plants 12]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from simulations.studies.adaptive_delay import AdaptiveConfig, adaptive_delay_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plants", type=int, default=12)
    args = parser.parse_args()
    config = replace(AdaptiveConfig(), steps=1600, step=800)
    covered, undetermined, reads = [], 0, 0
    for seed in range(args.plants):
        run = adaptive_delay_run(config, rng=seed)
        times = run.times[:, None]
        truth = np.where(times <= config.step, config.old_delay, config.new_delay)
        skip = (times > config.step) & (times <= config.step + config.chunk)   # the step's chunk
        finite = np.isfinite(run.high - run.low) & ~skip
        covers = finite & (run.low <= truth) & (truth <= run.high)
        reported = np.isfinite(run.estimate) & ~skip
        wrong = reported & (np.abs(run.estimate - truth) > 0.1) & ~covers
        warm = ((times >= 500) & (times <= config.step)) | (times >= config.step + 500)
        warm = np.broadcast_to(warm, run.estimate.shape)
        undetermined += int(np.isnan(run.estimate[warm]).sum())
        reads += int(warm.sum())
        covered += list(covers[finite])
        print(f"plant {seed}: confidently wrong {int(wrong.sum())}, undetermined after the "
              f"warm-up {int(np.isnan(run.estimate[warm]).sum())}, re-designs {run.redesigns}, "
              f"cost ratio after the step {run.costs()['ratio_after']:.2f}", flush=True)
    print(f"99 % intervals covering the truth: {sum(covered)} of {len(covered)}; undetermined "
          f"after the warm-up: {undetermined} of {reads} channel reads")


if __name__ == "__main__":
    main()
