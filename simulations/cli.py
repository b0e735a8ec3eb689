"""The ``dmdidc`` command line: ``demo``, ``identify``, ``simulate``, ``privacy``, ``federated``,
``smartgrid``.

Parsing and ``--help`` import no heavy package (cvxpy, matplotlib, scipy.stats): each handler
imports what it needs.  Every option either takes effect or is refused with a one-line error
(exit code 2); output files that already existed are listed on stderr after being overwritten.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from controllers.names import CONTROLLER_NAMES

__all__ = ["main", "build_parser"]


# Effective defaults of simulate options whose parser default is None, so that giving them
# where they do nothing can be refused (help texts show these values).
_DEFAULT_HORIZON = 10
_DEFAULT_NOISE = "normal"
_DEFAULT_ALPHA = 1.5
_DEFAULT_SEED = 0
_FINE_STEPS = 2000                  # simulate: inter-sample curve up to this many steps
_PROGRESS_STEPS = (500_000, 500)    # simulate: progress bar from this many steps (other, MPC)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default (even without help text), unless it has none (``None``,
    ``False``) or the help text already states it."""

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is None and action.option_strings and self._has_default(action):
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not self._has_default(action) or "default" in text:
            return text
        return super()._get_help_string(action)

    @staticmethod
    def _has_default(action: argparse.Action) -> bool:
        return not (action.default is None or action.default is False
                    or action.default is argparse.SUPPRESS)


class _Parser(argparse.ArgumentParser):
    """Argument parser whose help, and that of every subcommand under it, shows the defaults."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


class _VersionAction(argparse.Action):
    """``--version``: imports the package only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from dmdidc import __version__

        print(f"{parser.prog} {__version__}")
        parser.exit()


def _bounded(kind: type, minimum: float, *, strict: bool = False):
    """argparse type: a number of ``kind`` >= ``minimum`` (> if ``strict``)."""
    relation = ">" if strict else ">="

    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or \
                (value <= minimum if strict else value < minimum):
            noun = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"must be {noun} {relation} {minimum:g}; got "
                                             f"{text!r}")
        return value

    return convert


_count = _bounded(int, 1)
_seed = _bounded(int, 0)
_scale = _bounded(float, 0.0)
_bound = _bounded(float, 0.0, strict=True)


def _max_delay(text: str) -> int | None:
    """``--max-delay``: an integer >= 0 or ``auto`` (None: chosen from the data)."""
    if text == "auto":
        return None
    return _seed(text)               # an integer >= 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dmdidc`` command."""
    parser = _Parser(
        prog="dmdidc",
        description="Identify linear plants with fractional input delay (DMDidc), control them "
                    "and study privacy mechanisms.")
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)   # subparsers are _Parser too

    demo = sub.add_parser("demo", help="Figure 9.1 end to end: excitation -> DMDidc -> LQR -> "
                                       "truncated vs fractional controller on the true plant")
    demo.add_argument("--out", default="out/demo", help="output folder")
    demo.add_argument("--seed", type=_seed, default=0, help="random seed")
    demo.add_argument("--steps", type=_count, default=25, help="closed-loop steps")
    demo.set_defaults(handler=_run_demo)

    identify = sub.add_parser("identify", help="identify a delayed plant from X, U data")
    identify.add_argument("data", nargs="?", help=".npz file with arrays X (n, K+1) and U (m, K)")
    identify.add_argument("--states", help="CSV of states, one row per sample (K+1 rows)")
    identify.add_argument("--inputs", help="CSV of inputs, one row per sample (K rows)")
    identify.add_argument("--dt", type=float, required=True, help="sampling period T (seconds)")
    identify.add_argument("--max-delay", type=_max_delay, required=True,
                          help="delay bound R in sampling periods, or 'auto' (chosen from the "
                               "data by an information criterion)")
    identify.add_argument("--method", choices=("auto", "gram", "qr"), default="auto",
                          help="regression solver: normal equations, refined or redone with QR "
                               "when ill-conditioned (auto), normal equations only (gram), or "
                               "backward-stable tall-skinny QR (qr)")
    identify.add_argument("--estimator", choices=("ls", "iv", "huber"), default="ls",
                          help="least squares, instrumental variables (noisy states) or Huber "
                               "(heavy-tailed noise)")
    identify.add_argument("--level", type=float, default=0.95,
                          help="confidence level of the printed intervals")
    identify.add_argument("--detrend", choices=("none", "constant", "linear"), default="none",
                          help="remove each experiment's mean or linear trend from states and "
                               "inputs first (sensor offset, non-zero operating point); the "
                               "model is then in deviations (default: none)")
    identify.add_argument("--significance", type=float,
                          help="family-wise level of the test that decides which input blocks "
                               "act, and of the bound selection with --max-delay auto "
                               "(default: 0.001; with --block-rtol only beside auto)")
    identify.add_argument("--block-rtol", type=float, default=None,
                          help="override the test: an input block acts iff its norm exceeds "
                               "this fraction of the channel's largest (default: the test)")
    identify.add_argument("--out", default="model.json", help="model file (.json or .npz)")
    identify.set_defaults(handler=_run_identify)

    simulate = sub.add_parser("simulate", help="closed loop of a saved model with a controller")
    simulate.add_argument("model", help="identified model (.json or .npz from 'identify')")
    simulate.add_argument("--plant", help="true plant to control (.json/.npz with the model's "
                                          "T, states and inputs; default: the model itself)")
    simulate.add_argument("--controller", choices=CONTROLLER_NAMES, default="fractional",
                          help="fractional-delay predictive feedback (eqs. 9.70-9.74), "
                               "whole-delay prediction (truncated: eq. 9.13, or exact), "
                               "delay-naive state feedback, or constrained MPC")
    simulate.add_argument("--steps", type=_count, default=50, help="closed-loop steps")
    simulate.add_argument("--x0", help="initial state, comma separated (default: all ones)")
    simulate.add_argument("--horizon", type=_count,
                          help=f"MPC horizon in steps (default: {_DEFAULT_HORIZON}; only with "
                               f"--controller mpc)")
    simulate.add_argument("--u-max", type=_bound,
                          help="MPC input bound |u| <= u_max (default: unbounded; only with "
                               "--controller mpc)")
    simulate.add_argument("--process-noise", type=_scale, default=0.0,
                          help="scale of the process disturbance added to x_{k+1}")
    simulate.add_argument("--measurement-noise", type=_scale, default=0.0,
                          help="scale of the noise on the measured states")
    simulate.add_argument("--noise", choices=("normal", "laplace", "sas"),
                          help=f"noise distribution (default: {_DEFAULT_NOISE}; sas: symmetric "
                               f"alpha-stable, heavy-tailed; needs a noise scale > 0)")
    simulate.add_argument("--alpha", type=float,
                          help=f"SaS stability index in (0, 2] (default: {_DEFAULT_ALPHA}; only "
                               f"with --noise sas)")
    simulate.add_argument("--seed", type=_seed,
                          help=f"seed of the noise draws (default: {_DEFAULT_SEED}; needs a noise "
                               f"scale > 0)")
    simulate.add_argument("--out", default="out/simulate", help="output folder")
    simulate.set_defaults(handler=_run_simulate)

    try:
        from simulations.privacy_cli import add_privacy_parser
    except ImportError:  # pragma: no cover - privacy CLI not installed
        pass
    else:
        add_privacy_parser(sub)
    from simulations.federated_cli import add_federated_parser
    from simulations.flower_cli import add_serve_action
    from simulations.seed_fl_cli import add_seed_fl_actions
    actions = add_federated_parser(sub)      # experiment (Ch. 8)
    add_seed_fl_actions(actions)             # esn-attack, sifl
    add_serve_action(actions)                # serve: real Flower processes
    from simulations.federated_identification_cli import add_identify_action
    add_identify_action(actions)             # identify: federated DMDidc (statistics)
    from simulations.smartgrid_cli import add_smartgrid_parser
    add_smartgrid_parser(sub)                # smartgrid run, sweep (issue 10)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dmdidc`` console script; returns the exit code (2 on bad input)."""
    args = build_parser().parse_args(argv)
    from _toolbox.errors import ToolboxError  # after parsing: --help stays light

    existing: dict[Path, tuple[int, int, int]] = {}
    try:
        existing = _existing_outputs(getattr(args, "out", None))
        return int(args.handler(args) or 0)
    except (ToolboxError, ValueError, OSError) as exc:
        print(f"dmdidc {args.command}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        overwritten = [path for path, stamp in existing.items()
                       if path.is_file() and _stamp(path) != stamp]
        if overwritten:
            print(f"dmdidc {args.command}: note: overwrote "
                  f"{', '.join(str(path) for path in overwritten)}", file=sys.stderr)


def output_path(out: str | None, *, folder: bool) -> Path | None:
    """``--out`` as a path, refused before any work when it names the wrong kind of entry.

    Raises
    ------
    ParameterError
        A folder option naming an existing file, or a file option naming a folder.
    """
    from _toolbox.errors import ParameterError

    if out is None:
        return None
    path = Path(out)
    if folder and path.exists() and not path.is_dir():
        raise ParameterError(f"--out {out!r} is a file; it must name a folder (created if "
                             f"missing) for the output files")
    if not folder and path.is_dir():
        raise ParameterError(f"--out {out!r} is a folder; it must name a file")
    return path


def json_number(value: float) -> float | str:
    """``value``, or ``"inf"`` / ``"-inf"`` / ``"nan"``: JSON has no non-finite numbers."""
    value = float(value)
    return value if math.isfinite(value) else str(value)


def _existing_outputs(out: str | None) -> dict[Path, tuple[int, int, int]]:
    """The files ``--out`` (a file, or a folder's files) holds before a command runs."""
    if out is None:
        return {}
    path = Path(out)
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    return {file: _stamp(file) for file in files if file.is_file()}


def _stamp(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


# ---------------------------------------------------------------------------------- demo
def _run_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from simulations.fractional_delay_study import (
        StudyConfig,
        format_table,
        plot_study,
        run_fractional_delay_study,
        write_study,
    )

    out = output_path(args.out, folder=True)
    config = StudyConfig(seed=args.seed, steps=args.steps)
    out.mkdir(parents=True, exist_ok=True)
    total = 2 * len(config.delays_in_periods)
    with tqdm(total=total, desc="Figure 9.1", unit="run", file=sys.stderr) as bar:
        rows, runs = run_fractional_delay_study(
            config, progress=lambda message: (bar.set_postfix_str(message), bar.update(1)))
    figure = plot_study(runs, out / "figure_9_1.png")
    files = write_study(rows, config, out)
    mismatch = _mismatch_figure(config, out)
    print(format_table(rows))
    print(f"\nwrote {figure}, {mismatch}, {files['json']}, {files['csv']}")
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


# ---------------------------------------------------------------------------------- identify
def _load_data(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    from simulations.data_files import load_identification_data

    return load_identification_data(args.data, states=args.states, inputs=args.inputs)


def _run_identify(args: argparse.Namespace) -> int:
    import warnings

    from dmdidc import DMDidc, check_excitation

    # DMDidc refuses --significance beside --block-rtol where it would change nothing
    test = {"significance": args.significance, "block_rtol": args.block_rtol}
    output_path(args.out, folder=False)
    X, U = _load_data(args)
    estimator = DMDidc(max_delay=args.max_delay, method=args.method, estimator=args.estimator,
                       detrend=None if args.detrend == "none" else args.detrend, **test)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, U, dt=args.dt)
    model = estimator.model_
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    path = model.save(args.out)
    np.set_printoptions(precision=6, suppress=True)
    print(check_excitation(X, U, estimator.max_delay_))
    regression = estimator.regression_
    print(f"regression: rank {regression.rank}, condition number "
          f"{regression.condition_number:.3g}, relative residual "
          f"{regression.relative_residual:.2g}")
    print(estimator.block_test_.summary())
    if estimator.state_trend_ is not None:
        print(f"removed ({args.detrend}) mean state {estimator.state_trend_[:, :, 0].mean(0)}, "
              f"mean input {estimator.input_trend_[:, :, 0].mean(0)}: the model is in "
              f"deviations from the operating point")
    print(f"A_d =\n{model.A_d}")
    print(f"whole delay [periods] = {model.delay_steps}  (first active input block)")
    if estimator.delay_bound_ is not None:
        print(estimator.delay_bound_.summary())
    if model.has_continuous:
        print(f"delay [s] = {model.delay}  (fraction {model.delay_fraction})")
        print(f"A_c =\n{model.A_c}\nB_c =\n{model.B_c}")
        print(estimator.confidence_intervals(args.level).summary())
    else:
        print(f"no continuous model: {model.continuous_note}")
    for warning in caught:
        print(f"dmdidc identify: warning: {warning.message}", file=sys.stderr)
    print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------------------------- simulate
def _run_simulate(args: argparse.Namespace) -> int:
    from _toolbox.errors import DimensionError
    from simulations.closed_loop import simulate_closed_loop

    _check_simulate_options(args)
    out = output_path(args.out, folder=True)
    model = _load_plant(args.model, "model")
    plant = model if args.plant is None else _load_plant(args.plant, "--plant")
    if plant is not model:
        _check_plant_matches_model(plant, model, args)
    x0 = np.ones(model.n_states) if args.x0 is None else _parse_vector("--x0", args.x0)
    if x0.shape != (model.n_states,):
        raise DimensionError(f"--x0 has {x0.size} values; the model has {model.n_states} states")
    controller = _make_controller(args, model)
    seed = _DEFAULT_SEED if args.seed is None else args.seed
    # The exact inter-sample curve only serves the figure, which cannot show more than a few
    # thousand periods; a bar where the loop takes about a second (an MPC solve is ~2 ms).
    result = simulate_closed_loop(plant, controller, x0, args.steps, rng=seed,
                                  process_noise=_sampler(args, args.process_noise),
                                  measurement_noise=_sampler(args, args.measurement_noise),
                                  fine=plant.has_continuous and args.steps <= _FINE_STEPS,
                                  progress=args.steps >= _PROGRESS_STEPS[args.controller == "mpc"])
    out.mkdir(parents=True, exist_ok=True)
    result.to_csv(out / "trajectory.csv")
    summary = {"controller": args.controller, "steps": args.steps,
               "cost": json_number(result.cost), "final_state_norm": json_number(result.final_norm)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    figure = _plot_trajectory(result, out / "trajectory.png", args.controller)
    print(json.dumps(summary, indent=2))
    print(f"wrote {out / 'trajectory.csv'}, {out / 'summary.json'}, {figure}")
    return 0


def _check_simulate_options(args: argparse.Namespace) -> None:
    """Refuse options that would have no effect in this combination."""
    from _toolbox.errors import ParameterError

    if args.controller != "mpc":
        idle = [flag for flag, value in (("--horizon", args.horizon), ("--u-max", args.u_max))
                if value is not None]
        if idle:
            verb = "applies" if len(idle) == 1 else "apply"
            raise ParameterError(f"{' and '.join(idle)} {verb} only to --controller mpc; got "
                                 f"--controller {args.controller}")
    if args.process_noise == 0 and args.measurement_noise == 0:
        idle = [flag for flag, value in (("--noise", args.noise), ("--alpha", args.alpha),
                                         ("--seed", args.seed)) if value is not None]
        if idle:
            verb = "acts" if len(idle) == 1 else "act"
            raise ParameterError(f"{' and '.join(idle)} {verb} only on noise draws: give "
                                 f"--process-noise or --measurement-noise > 0")
    if args.alpha is not None and args.noise != "sas":
        raise ParameterError(f"--alpha is the stability index of SaS noise: it needs --noise sas "
                             f"(got --noise {args.noise or _DEFAULT_NOISE})")


def _load_plant(path: str, what: str):
    """A DelayedPlant from a file, any defect of the file reported as one clear error."""
    from _toolbox.errors import ParameterError, ToolboxError
    from dmdidc import DelayedPlant

    if not Path(path).is_file():
        raise FileNotFoundError(f"{what} file {path!r} does not exist")
    try:
        return DelayedPlant.load(path)
    except (ToolboxError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        # a malformed file must not end in a traceback, whatever the loader raises
        raise ParameterError(f"{what} file {path!r} is not a valid plant (expected what "
                             f"DelayedPlant.save or 'dmdidc identify' writes: .json or .npz with "
                             f"dt, A_d, B_blocks and optionally A_c, B_c, delay): {exc}") from exc


def _check_plant_matches_model(plant, model, args: argparse.Namespace) -> None:
    from _toolbox.errors import DimensionError, ParameterError

    if (plant.n_states, plant.n_inputs) != (model.n_states, model.n_inputs):
        raise DimensionError(f"--plant {args.plant!r} has {plant.n_states} states and "
                             f"{plant.n_inputs} inputs; the model {args.model!r} has "
                             f"{model.n_states} states and {model.n_inputs} inputs")
    if not math.isclose(plant.dt, model.dt, rel_tol=1e-9):
        raise ParameterError(f"--plant {args.plant!r} has sampling period T = {plant.dt:g} s; "
                             f"the model {args.model!r} has T = {model.dt:g} s: the controller "
                             f"acts once per model period, so both must agree (identify from "
                             f"data sampled at the plant's T)")


def _parse_vector(option: str, text: str) -> np.ndarray:
    try:
        return np.array([float(v) for v in text.split(",")])
    except ValueError as exc:
        raise ValueError(f"{option} must be comma-separated numbers; got {text!r}") from exc


def _sampler(args: argparse.Namespace, scale: float):
    from simulations.closed_loop import noise_sampler

    if scale == 0:
        return None
    noise = args.noise or _DEFAULT_NOISE
    if noise != "sas":
        return noise_sampler(noise, scale)
    return noise_sampler(noise, scale, alpha=_DEFAULT_ALPHA if args.alpha is None else args.alpha)


def _make_controller(args: argparse.Namespace, model):
    from controllers import make_controller

    if args.controller != "mpc":
        return make_controller(args.controller, model)
    bound = args.u_max
    horizon = _DEFAULT_HORIZON if args.horizon is None else args.horizon
    return make_controller("mpc", model, horizon=horizon,
                           u_min=None if bound is None else -bound, u_max=bound)


def _plot_trajectory(result, path: Path, title: str) -> Path:
    from _toolbox.plotting import new_figure, save_figure

    fig = new_figure((7, 5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    times = result.fine_times if result.fine_states is not None else result.times
    states = result.fine_states if result.fine_states is not None else result.states
    for i, row in enumerate(states):
        top.plot(times, row, label=f"x{i + 1}")
    for j, row in enumerate(result.inputs):
        bottom.step(result.times[:-1], row, where="post", label=f"u{j + 1}")
    top.set_ylabel("state")
    bottom.set_ylabel("input")
    bottom.set_xlabel("time [s]")
    top.set_title(f"closed loop, {title} controller")
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    return save_figure(fig, path)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
