"""The ``dmdidc`` command line: ``demo``, ``identify``, ``simulate``, ``privacy``, ``federated``."""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from privacy.errors import ToolboxError

__all__ = ["main", "build_parser"]

CONTROLLER_NAMES = ("fractional", "truncated", "exact", "naive", "mpc")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dmdidc`` command."""
    parser = argparse.ArgumentParser(
        prog="dmdidc",
        description="Identify linear plants with fractional input delay (DMDidc), control them "
                    "and study privacy mechanisms.")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="Figure 9.1 end to end: excitation -> DMDidc -> LQR -> "
                                       "truncated vs fractional controller on the true plant")
    demo.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--steps", type=int, default=25, help="closed-loop steps (default 25)")
    demo.set_defaults(handler=_run_demo)

    identify = sub.add_parser("identify", help="identify a delayed plant from X, U data")
    identify.add_argument("data", nargs="?", help=".npz file with arrays X (n, K+1) and U (m, K)")
    identify.add_argument("--states", help="CSV of states, one row per sample (K+1 rows)")
    identify.add_argument("--inputs", help="CSV of inputs, one row per sample (K rows)")
    identify.add_argument("--dt", type=float, required=True, help="sampling period T (seconds)")
    identify.add_argument("--max-delay", type=int, required=True,
                          help="delay bound R in sampling periods")
    identify.add_argument("--method", choices=("auto", "gram", "qr"), default="auto")
    identify.add_argument("--block-rtol", type=float, default=1e-6,
                          help="relative threshold below which an input block counts as zero")
    identify.add_argument("--out", default="model.json", help="model file (.json or .npz)")
    identify.set_defaults(handler=_run_identify)

    simulate = sub.add_parser("simulate", help="closed loop of a saved model with a controller")
    simulate.add_argument("model", help="identified model (.json or .npz from 'identify')")
    simulate.add_argument("--plant", help="true plant to control (.json/.npz; default: the model)")
    simulate.add_argument("--controller", choices=CONTROLLER_NAMES, default="fractional")
    simulate.add_argument("--steps", type=int, default=50)
    simulate.add_argument("--x0", help="initial state, comma separated (default: all ones)")
    simulate.add_argument("--horizon", type=int, default=10, help="MPC horizon (default 10)")
    simulate.add_argument("--u-max", type=float, default=None, help="MPC input bound |u| <= u_max")
    simulate.add_argument("--process-noise", type=float, default=0.0,
                          help="scale of the process disturbance added to x_{k+1} (default 0)")
    simulate.add_argument("--measurement-noise", type=float, default=0.0,
                          help="scale of the noise on the measured states (default 0)")
    simulate.add_argument("--noise", choices=("normal", "laplace", "sas"), default="normal",
                          help="noise distribution (sas: symmetric alpha-stable, heavy-tailed)")
    simulate.add_argument("--alpha", type=float, default=1.5, help="SaS stability index")
    simulate.add_argument("--seed", type=int, default=0, help="seed of the noise draws")
    simulate.add_argument("--out", default="out/simulate", help="output folder")
    simulate.set_defaults(handler=_run_simulate)

    try:
        from simulations.privacy_cli import add_privacy_parser
    except ImportError:  # pragma: no cover - privacy CLI not installed
        pass
    else:
        add_privacy_parser(sub)
    from simulations.federated_cli import add_federated_parser
    actions = add_federated_parser(sub)  # returns the group's actions, for more commands
    from simulations.flower_cli import add_serve_action
    add_serve_action(actions)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dmdidc`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (ToolboxError, ValueError, OSError) as exc:
        print(f"dmdidc {args.command}: error: {exc}", file=sys.stderr)
        return 2


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

    config = StudyConfig(seed=args.seed, steps=args.steps)
    out = Path(args.out)
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
    if args.data:
        path = Path(args.data)
        try:
            with np.load(path, allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
        except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
            raise ValueError(f"cannot read {str(path)!r} as an .npz archive of arrays X and U: "
                             f"{exc}") from exc
        missing = {"X", "U"} - set(arrays)
        if missing:
            raise ValueError(f"{path} lacks the array(s) {sorted(missing)}; it must hold "
                             f"X (n, K+1) and U (m, K)")
        return arrays["X"], arrays["U"]
    if not (args.states and args.inputs):
        raise ValueError("give an .npz file, or both --states and --inputs CSV files")
    return _read_csv(args.states).T, _read_csv(args.inputs).T


def _read_csv(path: str) -> np.ndarray:
    try:
        data = np.loadtxt(path, delimiter=",", ndmin=2)
    except (OSError, ValueError) as exc:
        # a header line is allowed: retry skipping it
        try:
            data = np.loadtxt(path, delimiter=",", ndmin=2, skiprows=1)
        except (OSError, ValueError):
            raise ValueError(f"cannot read {path!r} as numeric CSV: {exc}") from exc
    return data


def _run_identify(args: argparse.Namespace) -> int:
    from dmdidc import DMDidc, check_excitation

    X, U = _load_data(args)
    report = check_excitation(X, U, args.max_delay)
    estimator = DMDidc(max_delay=args.max_delay, method=args.method,
                       block_rtol=args.block_rtol).fit(X, U, dt=args.dt)
    model = estimator.model_
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    path = model.save(args.out)
    np.set_printoptions(precision=6, suppress=True)
    print(report)
    regression = estimator.regression_
    print(f"regression: rank {regression.rank}, condition number "
          f"{regression.condition_number:.3g}, relative residual "
          f"{regression.relative_residual:.2g}")
    print(f"A_d =\n{model.A_d}")
    if model.has_continuous:
        print(f"delay [s] = {model.delay}  (whole periods {model.delay_steps}, fraction "
              f"{model.delay_fraction})")
        print(f"A_c =\n{model.A_c}\nB_c =\n{model.B_c}")
    else:
        print(f"no continuous model: {model.continuous_note}")
    print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------------------------- simulate
def _run_simulate(args: argparse.Namespace) -> int:
    from controllers import lqr_gain
    from dmdidc import DelayedPlant
    from simulations.closed_loop import simulate_closed_loop

    model = DelayedPlant.load(args.model)
    plant = DelayedPlant.load(args.plant) if args.plant else model
    if (plant.n_states, plant.n_inputs) != (model.n_states, model.n_inputs):
        raise ValueError(f"the plant has {plant.n_states} states and {plant.n_inputs} inputs; "
                         f"the model has {model.n_states} and {model.n_inputs}")
    x0 = np.ones(model.n_states) if args.x0 is None else _parse_vector("--x0", args.x0)
    controller = _make_controller(args, model, lqr_gain(model))
    result = simulate_closed_loop(plant, controller, x0, args.steps, rng=args.seed,
                                  process_noise=_sampler(args, args.process_noise),
                                  measurement_noise=_sampler(args, args.measurement_noise),
                                  fine=plant.has_continuous, progress=args.steps > 2000)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result.to_csv(out / "trajectory.csv")
    summary = {"controller": args.controller, "steps": args.steps, "cost": float(result.cost),
               "final_state_norm": float(np.linalg.norm(result.states[:, -1]))}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    figure = _plot_trajectory(result, out / "trajectory.png", args.controller)
    print(json.dumps(summary, indent=2))
    print(f"wrote {out / 'trajectory.csv'}, {out / 'summary.json'}, {figure}")
    return 0


def _parse_vector(option: str, text: str) -> np.ndarray:
    try:
        return np.array([float(v) for v in text.split(",")])
    except ValueError as exc:
        raise ValueError(f"{option} must be comma-separated numbers; got {text!r}") from exc


def _sampler(args: argparse.Namespace, scale: float):
    from simulations.closed_loop import noise_sampler

    if scale < 0:
        raise ValueError(f"noise scales must be >= 0; got {scale}")
    if scale == 0:
        return None
    params = {"alpha": args.alpha} if args.noise == "sas" else {}
    return noise_sampler(args.noise, scale, **params)


def _make_controller(args: argparse.Namespace, model, K: np.ndarray):
    from controllers import FractionalDelayController, NaiveStateFeedback, PredictiveController

    if args.controller == "fractional":
        return FractionalDelayController(model, K)
    if args.controller == "truncated":
        return PredictiveController(model, K, prediction="truncated")
    if args.controller == "exact":
        return PredictiveController(model, K, prediction="exact")
    if args.controller == "naive":
        return NaiveStateFeedback(model, K)
    from controllers import DelayedMPC

    bound = args.u_max
    return DelayedMPC(model, horizon=args.horizon, u_min=None if bound is None else -bound,
                      u_max=bound)


def _plot_trajectory(result, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
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
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
