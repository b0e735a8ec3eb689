"""``dmdidc demo``: the dissertation's Figure 9.1 end to end (excitation -> DMDidc -> LQR ->
truncated vs fractional controller on the true plant), plus the delay-mismatch figure."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from simulations.cli.atomic import staged_folder
from simulations.cli.common import _count, _seed, output_path, write_table

__all__ = ["add_demo_parser"]


def add_demo_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``demo`` on the ``add_subparsers`` object of the root command."""
    demo = sub.add_parser("demo", help="Figure 9.1 end to end: excitation -> DMDidc -> LQR -> "
                                       "truncated vs fractional controller on the true plant")
    demo.add_argument("--out", default="out/demo", help="output folder")
    demo.add_argument("--seed", type=_seed, default=0, help="random seed")
    demo.add_argument("--steps", type=_count, default=25, help="closed-loop steps")
    demo.set_defaults(handler=_run_demo)
    return demo


def _run_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from simulations.studies.fractional_delay import (
        StudyConfig,
        format_table,
        plot_study,
        run_fractional_delay_study,
        write_study,
    )

    out = output_path(args.out, folder=True)
    config = StudyConfig(seed=args.seed, steps=args.steps)
    total = 2 * len(config.delays_in_periods)
    with tqdm(total=total, desc="Figure 9.1", unit="run", file=sys.stderr) as bar:
        rows, runs = run_fractional_delay_study(
            config, progress=lambda message: (bar.set_postfix_str(message), bar.update(1)))
    table = format_table(rows)
    with staged_folder(out) as stage:
        plot_study(runs, stage / "figure_9_1.png")
        files = write_study(rows, config, stage)
        _mismatch_figure(config, stage)
        write_table(stage / "summary.md", table, title="dmdidc demo (Figure 9.1)")
    print(table)
    written = ["figure_9_1.png", "delay_mismatch.png", files["json"].name, files["csv"].name,
               "summary.md"]
    print(f"\nwrote {', '.join(str(out / name) for name in written)}")
    return 0


def _mismatch_figure(config, out: Path) -> Path:
    from controllers import lqr_gain
    from controllers.analysis import delay_mismatch_study, plot_delay_mismatch
    from dmdidc import DelayedPlant

    A_c, B_c = np.array(config.A_c), np.array(config.B_c)
    true_delay = 1.25 * config.dt
    model = DelayedPlant.from_continuous(A_c, B_c, true_delay, config.dt)
    K = lqr_gain(model)
    offsets = np.linspace(-0.5, 0.5, 41) * config.dt
    study = delay_mismatch_study(A_c, B_c, config.dt, true_delay, K, offsets)
    return Path(plot_delay_mismatch(study, out / "delay_mismatch.png"))

