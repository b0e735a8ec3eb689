"""``dmdidc demo``: the dissertation's Figure 9.1 end to end (excitation -> DMDidc -> LQR ->
truncated vs fractional controller on the true plant), plus the delay-mismatch figure;
``dmdidc demo live``: adaptive control when the delay steps mid-run and packets are lost
(:mod:`simulations.studies.adaptive_delay`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from simulations.cli.atomic import staged_folder
from simulations.cli.common import _bounded, _count, _seed, output_path, strict_json, write_table

__all__ = ["add_demo_parser"]


def add_demo_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``demo`` on the ``add_subparsers`` object of the root command."""
    demo = sub.add_parser("demo", help="Figure 9.1 end to end: excitation -> DMDidc -> LQR -> "
                                       "truncated vs fractional controller on the true plant")
    demo.add_argument("--out", default="out/demo", action=_BeforeKind, help="output folder")
    demo.add_argument("--seed", type=_seed, default=0, action=_BeforeKind, help="random seed")
    demo.add_argument("--steps", type=_count, default=25, action=_BeforeKind,
                      help="closed-loop steps")
    demo.set_defaults(handler=_run_demo)
    kinds = demo.add_subparsers(dest="demo_kind", required=False, metavar="{live}")
    live = kinds.add_parser("live", help="adaptive control: the delay steps mid-run (1.3 T -> "
                                         "2.6 T), 3 %% of the packets are lost; a controller "
                                         "re-designed on line against a fixed one")
    live.add_argument("--out", default="out/demo-live", help="output folder")
    live.add_argument("--seed", type=_seed, default=0, help="random seed")
    live.add_argument("--steps", type=_at_least(100), default=None,
                      help="samples per run (default: the study's, 3000; the delay steps at a "
                           "third of the run)")
    live.add_argument("--plants", type=_count, default=5, help="random plants")
    live.add_argument("--controller", choices=("fractional", "truncated", "exact", "mpc"),
                      default="fractional", help="the controller both loops use")
    live.set_defaults(handler=_run_live)
    return demo


class _BeforeKind(argparse._StoreAction):
    """Stores the option and notes it was given, so that ``demo --out X live`` (an option of
    the Figure 9.1 demo before ``live``, which ``live``'s own default would silently replace)
    is refused."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        super().__call__(parser, namespace, values, option_string)
        given = getattr(namespace, "demo_options", [])
        namespace.demo_options = [*given, option_string]


def _at_least(minimum: int):
    return _bounded(int, minimum)


def _run_demo(args: argparse.Namespace) -> int:
    from simulations.cli.common import progress_bar
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
    with progress_bar(total=total, desc="Figure 9.1", unit="run") as bar:
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



def _run_live(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from _toolbox.errors import ParameterError
    from simulations.cli.common import progress_bar
    from simulations.studies.adaptive_delay import (
        AdaptiveConfig,
        adaptive_delay_study,
        plot_adaptive_run,
        summarize_runs,
    )

    if getattr(args, "demo_options", None):
        raise ParameterError(f"{', '.join(args.demo_options)} given before 'live' belong to "
                             f"the Figure 9.1 demo; put the options after 'live' (dmdidc demo "
                             f"live --out DIR ...)")
    out = output_path(args.out, folder=True)
    config = AdaptiveConfig(controller=args.controller)
    if args.steps is not None:
        config = replace(config, steps=args.steps, step=args.steps // 3)
    with progress_bar(total=args.plants, desc="demo live", unit="plant") as bar:
        runs = adaptive_delay_study(config, args.plants, rng=args.seed,
                                    progress=lambda done: bar.update(1))
    summary = summarize_runs(runs)
    rows = [{"plant": i, "events": run["events"], "redesigns": run["redesigns"],
             "fixed_before": run["fixed_before"], "adaptive_before": run["adaptive_before"],
             "fixed_after": run["fixed_after"], "adaptive_after": run["adaptive_after"],
             "adaptive/fixed after": run["ratio_after"]}
            for i, run in enumerate(summary["runs"])]
    with staged_folder(out) as stage:
        plot_adaptive_run(runs[0], stage / "live_adaptive.png")
        (stage / "summary.json").write_text(json.dumps(strict_json(summary), indent=2))
        write_table(stage / "summary.md", rows, title="dmdidc demo live (adaptive control)")
    print(f"adaptive beat fixed after the step on {summary['adaptive_beats_fixed_after_step']} "
          f"of {len(runs)} plants; median cost ratio adaptive/fixed after the step "
          f"{summary['median_ratio_after']:.3f}")
    written = ("live_adaptive.png", "summary.json", "summary.md")
    print(f"wrote {', '.join(str(out / name) for name in written)}")
    return 0
