"""``dmdidc demo``: the dissertation's Figure 9.1 end to end (excitation -> DMDidc -> LQR ->
truncated vs fractional controller on the true plant), plus the delay-mismatch figure, then
``demo outputs``; ``dmdidc demo outputs``: identify a random plant from fewer sensors than
states (OutputDMDidc), then control it through a delay-aware Kalman filter in closed loop
(:mod:`simulations.studies.output_control`); ``dmdidc demo live``: adaptive control when the
delay steps mid-run and packets are lost (:mod:`simulations.studies.adaptive_delay`)."""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from simulations.cli.atomic import staged_folder
from simulations.cli.common import _bounded, _count, _seed, output_path, strict_json, write_table

__all__ = ["add_demo_parser"]


def add_demo_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``demo`` on the ``add_subparsers`` object of the root command."""
    demo = sub.add_parser("demo", help="Figure 9.1 end to end: excitation -> DMDidc -> LQR -> "
                                       "truncated vs fractional controller on the true plant; "
                                       "then 'demo outputs'")
    demo.add_argument("--out", default="out/demo", action=_BeforeKind, help="output folder")
    demo.add_argument("--seed", type=_seed, default=0, action=_BeforeKind, help="random seed")
    demo.add_argument("--steps", type=_count, default=25, action=_BeforeKind,
                      help="closed-loop steps")
    demo.set_defaults(handler=_run_demo)
    kinds = demo.add_subparsers(dest="demo_kind", required=False, metavar="{outputs,live}")
    outputs = kinds.add_parser("outputs", help="identify a random plant from fewer sensors than "
                                               "states (OutputDMDidc, 20 dB), then predictive "
                                               "feedback and input-bounded MPC through a "
                                               "delay-aware Kalman filter on the true plant")
    outputs.add_argument("--out", default="out/demo", help="output folder (writes "
                                                           "output_control.png and .json)")
    # None: the study's own defaults (OutputControlConfig), not a copy of them here
    outputs.add_argument("--seed", type=_seed, default=None,
                         help="random seed of the plant, sensors, data and noise (default 0)")
    outputs.add_argument("--steps", type=_at_least(10), default=None,
                         help="closed-loop steps (default 200)")
    # output_control.MIN_SAMPLES (not imported: numpy stays out of the CLI's startup;
    # test_demo checks they agree)
    outputs.add_argument("--samples", type=_at_least(400), default=None,
                         help="excitation samples of the fit (default 2000)")
    outputs.set_defaults(handler=_run_outputs)
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
    print(f"\nwrote {', '.join(str(out / name) for name in written)}\n")
    # the same seed; the closed loop keeps the output study's own length
    return _outputs(out, seed=args.seed)


def _run_outputs(args: argparse.Namespace) -> int:
    _refuse_options_before(args, "outputs")
    given = {"seed": args.seed, "steps": args.steps, "samples": args.samples}
    return _outputs(output_path(args.out, folder=True),
                    **{name: value for name, value in given.items() if value is not None})


def _outputs(out: Path, **settings: int) -> int:
    """Identify from outputs -> control in closed loop; print the numbers and write the figure
    and JSON into ``out``."""
    from simulations.cli.common import progress_bar
    from simulations.studies.output_control import (
        OutputControlConfig,
        plot_output_control,
        run_output_control,
    )

    config = OutputControlConfig(**settings)
    with progress_bar(total=6, desc="identify from outputs -> control", unit="step") as bar:
        run = run_output_control(
            config, progress=lambda message: (bar.set_postfix_str(message), bar.update(1)))
    summary = run.summary()
    with staged_folder(out) as stage:
        plot_output_control(run, stage / "output_control.png")
        (stage / "output_control.json").write_text(json.dumps(strict_json(summary), indent=2))
    print(_outputs_report(summary))
    written = ("output_control.png", "output_control.json")
    print(f"\nwrote {', '.join(str(out / name) for name in written)}")
    return 0


def _outputs_report(summary: dict[str, Any]) -> str:
    """The fit and the closed-loop costs as a few lines of text."""
    config, fit, cost = summary["config"], summary["fit"], summary["cost"]

    def complex_text(pairs: list[list[float]]) -> str:
        return ", ".join(f"{re:.3g}{im:+.3g}j" if im else f"{re:.3g}" for re, im in pairs)

    sensors = "1 sensor" if config["n_outputs"] == 1 else f"{config['n_outputs']} sensors"
    lines = [f"identify from outputs: {config['n_states']} states, {config['n_inputs']} inputs, "
             f"{sensors}, {config['samples']} samples at {config['snr_db']:g} dB "
             f"(seed {config['seed']})",
             # the whole rule (the residual test's F and p are the evidence for the order)
             textwrap.fill(fit["order_rule"], 96, initial_indent="  ",
                           subsequent_indent="    ")]
    for channel, (delay, (low, high), true) in enumerate(zip(
            fit["delay_s"], fit["delay_ci_95_s"], summary["plant"]["delay_s"],
            strict=True)):
        lines.append(f"  delay of input {channel}: {delay:.3f} s, 95 % interval "
                     f"[{low:.3f}, {high:.3f}] s (true {true:.3f} s)")
    lines.append(f"  eigenvalues {complex_text(fit['eigenvalues'])} 1/s "
                 f"(true {complex_text(summary['plant']['eigenvalues'])})")
    lines += [f"  warning: {message}" for message in fit["warnings"]]
    lines.append(f"closed loop on the true plant, {config['steps']} steps, cost of the outputs "
                 f"and inputs (no control: {cost['no control']:.4g}):")
    lines.append(f"  {'controller':<12}{'identified':>12}{'true model':>12}"
                 f"{'ident/true':>12}{'ident/none':>12}")
    for name in ("predictive", "mpc"):
        row = cost[name]
        lines.append(f"  {name:<12}{row['identified']:>12.4g}{row['true model']:>12.4g}"
                     f"{row['identified / true model']:>12.3f}"
                     f"{row['identified / no control']:>12.3f}")
    return "\n".join(lines)


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


def _refuse_options_before(args: argparse.Namespace, kind: str) -> None:
    from _toolbox.errors import ParameterError

    if getattr(args, "demo_options", None):
        raise ParameterError(f"{', '.join(args.demo_options)} given before '{kind}' belong to "
                             f"the Figure 9.1 demo; put the options after '{kind}' (dmdidc demo "
                             f"{kind} --out DIR ...)")


def _run_live(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from simulations.cli.common import progress_bar
    from simulations.studies.adaptive_delay import (
        AdaptiveConfig,
        adaptive_delay_study,
        plot_adaptive_run,
        summarize_runs,
    )

    _refuse_options_before(args, "live")
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
