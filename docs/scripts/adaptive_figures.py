"""Figure and table of the "Adaptive control on a delay change" section of the "Live
identification" page: the figure of ``dmdidc demo live`` (its default run, first plant) and the
closed-loop costs of the fixed and the adaptive loop for every controller kind.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/adaptive_figures.py [--out docs/figures]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from simulations.studies.adaptive_delay import (
    AdaptiveConfig,
    adaptive_delay_study,
    plot_adaptive_run,
    summarize_runs,
)

KINDS = ("fractional", "exact", "truncated", "mpc")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "figures"))
    parser.add_argument("--plants", type=int, default=10)
    args = parser.parse_args()
    out = Path(args.out)
    print("| controller | plants | adaptive < fixed after the step | cost ratio adaptive/fixed "
          "after the step: median (min .. max) | fixed loop diverged | re-designs per run |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in KINDS:
        runs = adaptive_delay_study(replace(AdaptiveConfig(), controller=kind), args.plants,
                                    rng=0)
        if kind == "fractional":
            path = plot_adaptive_run(runs[0], out / "live_adaptive.png")
            print(f"(wrote {path})")
        summary = summarize_runs(runs)
        ratios = np.array([row["ratio_after"] for row in summary["runs"]])
        diverged = sum(not np.isfinite(row["fixed_after"]) for row in summary["runs"])
        redesigns = [len(row["redesigns"]) for row in summary["runs"]]
        print(f"| {kind} | {len(runs)} | {summary['adaptive_beats_fixed_after_step']} | "
              f"{np.median(ratios):.2f} ({ratios.min():.2g} .. {ratios.max():.2f}) | "
              f"{diverged} | {min(redesigns)}-{max(redesigns)} |", flush=True)


if __name__ == "__main__":
    main()
