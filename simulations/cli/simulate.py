"""``dmdidc simulate``: the closed loop of a saved model with a controller (or the open loop), on
the model itself or on a given true plant; trajectory CSV, summary JSON and Markdown, figure."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from controllers.names import CONTROLLER_NAMES
from simulations.cli.atomic import staged_folder
from simulations.cli.common import (
    _count,
    _scale,
    _seed,
    json_number,
    lower_bounds,
    output_path,
    positive_vector,
    summary_table,
    upper_bounds,
    write_summary,
)
from simulations.cli.terms import warn

__all__ = ["add_simulate_parser"]

# Effective defaults of simulate options whose parser default is None, so that giving them
# where they do nothing can be refused (help texts show these values).
_DEFAULT_HORIZON = 10
_DEFAULT_NOISE = "normal"
_DEFAULT_ALPHA = 1.5
_DEFAULT_SEED = 0
_X0_LIMIT = 1e150                   # simulate: |x0| whose squares (the cost) stay finite
_FINE_STEPS = 2000                  # simulate: inter-sample curve up to this many steps
_PROGRESS_STEPS = (500_000, 500)    # simulate: progress bar from this many steps (other, MPC)


def add_simulate_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``simulate`` on the ``add_subparsers`` object of the root command."""
    simulate = sub.add_parser("simulate", help="closed loop of a saved model with a controller")
    simulate.add_argument("model", help="identified model (.json or .npz from 'identify'; an "
                                        "output model from 'identify --outputs' is controlled "
                                        "through a Kalman observer of its states)")
    simulate.add_argument("--plant", help="true plant to control (.json/.npz with the model's "
                                          "T, states and inputs; for an output model, an output "
                                          "model with its T, inputs and outputs; default: the "
                                          "model itself)")
    simulate.add_argument("--controller", choices=CONTROLLER_NAMES + ("none",),
                          default="fractional",
                          help="fractional-delay predictive feedback (eqs. 9.70-9.74), "
                               "whole-delay prediction (truncated: eq. 9.13, or exact), "
                               "delay-naive state feedback, constrained MPC, or none (the open "
                               "loop: inputs held at the operating point, or 0)")
    simulate.add_argument("--steps", type=_count, default=50, help="closed-loop steps")
    simulate.add_argument("--x0", help="initial state in the plant's units, comma separated "
                                       "(default: all ones; for an output model the "
                                       "least-norm state whose outputs are all 1; required "
                                       "when the model or the plant has an operating point "
                                       "x_op: a physical start is yours to choose, e.g. x_op "
                                       "plus a disturbance)")
    simulate.add_argument("--horizon", type=_count,
                          help=f"MPC horizon in steps (default: {_DEFAULT_HORIZON}; only with "
                               f"--controller mpc)")
    simulate.add_argument("--u-max", type=upper_bounds,
                          help="MPC upper input bounds u_j <= u_max_j, physical values (with an "
                               "operating point u_op too: not deviations from it, and u_op must "
                               "lie within the bounds): one value for every input or one per "
                               "input, comma separated, inf for an input without an upper bound "
                               "(default: unbounded; without --u-min "
                               "also the lower bound -u_max; only with --controller mpc)")
    simulate.add_argument("--u-min", type=lower_bounds,
                          help="MPC lower input bounds u_j >= u_min_j, physical values (a valve "
                               "0..100 %%: --u-min 0 --u-max 100); default: -u_max, or "
                               "unbounded without --u-max; a list that starts with a minus "
                               "sign goes after '=': --u-min=-5,0; -inf for an input without a "
                               "lower bound: --u-min=-inf,0; only with --controller "
                               "mpc)")
    simulate.add_argument("--y-max", type=upper_bounds,
                          help="MPC upper output bounds y_i <= y_max_i of an output model "
                               "('identify --outputs'), physical values y = C x + offset_ (the "
                               "outputs' level at the operating point must lie within them): "
                               "one value for every output or one per output, inf for an output "
                               "without an upper bound; soft (an exact "
                               "L1 penalty), as the observer's estimate may stray; only with "
                               "--controller mpc")
    simulate.add_argument("--y-min", type=lower_bounds,
                          help="MPC lower output bounds y_i >= y_min_i of an output model, as "
                               "--y-max (a list that starts with a minus sign goes after '=': "
                               "--y-min=-5); only with --controller mpc")
    simulate.add_argument("--q", type=positive_vector,
                          help="state weights: the diagonal of Q (one value, or one per state) "
                               "of the LQR or MPC design and of the reported cost (default: 1); "
                               "for an output model the outputs' weights (one value, or one per "
                               "output; Q = C^T diag(q) C plus a ridge)")
    simulate.add_argument("--r", type=positive_vector,
                          help="input weights: the diagonal of R (one value, or one per input; "
                               "default: 1)")
    simulate.add_argument("--process-noise", type=_scale, default=0.0,
                          help="scale of the process disturbance added to x_{k+1}")
    simulate.add_argument("--measurement-noise", type=_scale, default=0.0,
                          help="scale of the noise on the measured states (for an "
                               "output model: on the measured outputs)")
    simulate.add_argument("--noise", choices=("normal", "laplace", "sas"),
                          help=f"noise distribution (default: {_DEFAULT_NOISE}; sas: symmetric "
                               f"alpha-stable, heavy-tailed; needs a noise scale > 0)")
    simulate.add_argument("--alpha", type=float,
                          help=f"SaS stability index in [0.1, 2] (default: {_DEFAULT_ALPHA}; only "
                               f"with --noise sas)")
    simulate.add_argument("--seed", type=_seed,
                          help=f"seed of the noise draws (default: {_DEFAULT_SEED}; needs a noise "
                               f"scale > 0)")
    simulate.add_argument("--out", default="out/simulate", help="output folder")
    simulate.set_defaults(handler=_run_simulate)
    return simulate


def _run_simulate(args: argparse.Namespace) -> int:
    from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
    from simulations.cli.resources import check_memory, memory_budget
    from simulations.closed_loop import CoordinatesError, simulate_closed_loop

    _check_simulate_options(args)
    if Path(args.model).is_file() and _is_output_model(Path(args.model)):
        return _run_output_simulate(args)
    for option, value in (("--y-max", args.y_max), ("--y-min", args.y_min)):
        if value is not None:
            raise ParameterError(f"{option} bounds the outputs of an output model ('identify "
                                 f"--outputs'); {args.model!r} is a state model, whose outputs "
                                 f"are its states")
    out = output_path(args.out, folder=True)
    model = _load_plant(args.model, "model")
    if model.n_inputs == 0:        # autonomous (m = 0) model: there is nothing to act with
        from _toolbox.errors import ParameterError
        raise ParameterError(f"model {args.model!r} has no inputs (identified from autonomous "
                             f"data): a controller needs at least one input to act on the "
                             f"plant; use its A_d / A_c to predict the free response")
    _repeat_failed_checks(model, args)
    plant = model if args.plant is None else _load_plant(args.plant, "--plant")
    if plant is not model:
        _check_plant_matches_model(plant, model, args)
        _note_operating_points(plant, model, args)
    point = plant.operating_point              # the plant's equilibrium, in its units
    x0 = _start(args, model, point)
    if x0.shape != (model.n_states,):
        raise DimensionError(f"--x0 has {x0.size} values; the model has {model.n_states} states")
    if np.abs(x0).max() > _X0_LIMIT:
        raise ParameterError(f"--x0 {args.x0}: the cost squares the states, and float64 "
                             f"overflows beyond 1.3e154; accepted |x0_i| <= {_X0_LIMIT:g} "
                             f"(express the states in larger units; nothing written)")
    # states, measurements, process and measurement noise, inputs, cost terms: per step
    per_step = 8.0 * (4 * model.n_states + 2 * model.n_inputs + 2)
    check_memory("--steps", args.steps, per_step * (args.steps + 1),
                 f"1 .. {int(memory_budget() // per_step) - 1} for this model")
    Q = _weights("--q", args.q, model.n_states)
    R = _weights("--r", args.r, model.n_inputs)
    controller = _make_controller(args, model, Q, R)
    seed = _DEFAULT_SEED if args.seed is None else args.seed
    # The exact inter-sample curve only serves the figure, which cannot show more than a few
    # thousand periods; a bar where the loop takes about a second (an MPC solve is ~2 ms).
    try:
        with _said_in_command_terms(args):
            result = simulate_closed_loop(
                plant, controller, x0, args.steps, rng=seed, Q=Q, R=R,
                process_noise=_sampler(args, args.process_noise),
                measurement_noise=_sampler(args, args.measurement_noise),
                fine=plant.has_continuous and args.steps <= _FINE_STEPS,
                progress=args.steps >= _PROGRESS_STEPS[args.controller == "mpc"]
                and sys.stderr.isatty())                  # no bar frames in a pipe or a log
    except CoordinatesError as exc:
        # the command's remedies: the plant file's field or identify's flag, not Python calls
        remedy = ("drop the plant file's \"operating_point\" and give --x0 as a deviation "
                  "from it, or identify the model where the data show their operating point "
                  "(dmdidc identify ... --detrend auto)" if exc.plant_has_point else
                  "add the plant's operating point to its file (\"operating_point\": "
                  "{\"state\": [...], \"input\": [...]}, in the model's units), or identify "
                  "the model from deviations (dmdidc identify ... --detrend constant)")
        raise ParameterError(f"{exc.finding}; {remedy} (nothing written)") from None
    except NonFiniteError as exc:
        raise NonFiniteError(f"the trajectory from --x0 {args.x0 or 'ones'} is not finite "
                             f"({exc}); float64 holds values up to 1.8e308: scale the states "
                             f"or start nearer the origin (nothing written)") from exc
    if not (np.isfinite(result.states).all() and np.isfinite(result.inputs).all()):
        raise NonFiniteError(f"the trajectory from --x0 {args.x0 or 'ones'} overflows float64 "
                             f"(values beyond 1.8e308); scale the states or start nearer the "
                             f"origin (nothing written)")
    # the regulated quantity: the distance from the operating point (the cost weighs it too)
    final = result.final_norm
    summary = {"controller": args.controller, "steps": args.steps,
               "cost": json_number(result.cost), "final_state_norm": json_number(final),
               **_run_settings(args, x0)}
    radius = getattr(controller, "nominal_spectral_radius", None)
    if radius is not None:      # the loop on the model itself: < 1 is stable there
        summary["model_spectral_radius"] = json_number(radius)
    if plant is not model:
        _check_loop_on_plant(summary, plant, controller, result, x0, args)
    labels = _labels(model)
    if labels is not None:
        from simulations.cli.identify import signals_record

        summary["signals"] = signals_record(model.info)
    if point is not None:
        summary["operating_point_state"] = point.state.tolist()
        print(f"operating point x_op = {point.state}: the cost and the final state "
              f"norm are taken from it (the plant works in deviations from it)")
    with staged_folder(out) as stage:
        result.to_csv(stage / "trajectory.csv", **(labels or {}))
        write_summary(stage / "summary.json", summary, title=f"dmdidc simulate {args.model}")
        _plot_trajectory(result, stage / "trajectory.png", args.controller, labels)
    print(summary_table(summary))
    print(f"wrote {out / 'trajectory.csv'}, {out / 'summary.json'}, {out / 'summary.md'}, "
          f"{out / 'trajectory.png'}")
    return 0


@contextlib.contextmanager
def _said_in_command_terms(args: argparse.Namespace) -> Iterator[None]:
    """Warnings of the loop (an MPC's recovery check, its solver fallback) printed as the
    command's warnings, each once (also when the loop then fails)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            said = set()
            for item in caught:
                text = str(item.message)
                if text not in said:
                    said.add(text)
                    warn(text, args)


#: simulate warns when the loop's final state norm exceeds this many times the start's (and
#: twice the norm halfway through: a stationary noisy loop is not growing).
_GROWTH = 10.0


def _repeat_failed_checks(model, args: argparse.Namespace) -> None:
    """Repeat, as a warning, the fit checks the model failed when it was identified (a state
    model keeps their names in its provenance, an output model its checks): the file alone
    would otherwise run silently."""
    if hasattr(model, "checks_"):                               # an OutputDMDidc
        failed = [check.name for check in model.checks_ or () if check.failed]
    else:
        failed = (getattr(model.info, "provenance", None) or {}).get("failed_checks")
    if failed:
        warn(f"the model {args.model!r} failed the fit check(s) {', '.join(map(str, failed))} "
             f"when it was identified (identify's warnings said why and what to do): a "
             f"controller designed on it may not act on the plant as the model predicts", args)


def _check_loop_on_plant(summary: dict, plant, controller, result, x0: np.ndarray,
                         args: argparse.Namespace) -> None:
    """The loop on the true plant (``--plant``): the spectral radius of a linear controller's
    lifted loop on it (``plant_spectral_radius``, a warning at >= 1; the float64 lifted loop's
    radius, whose small values at long delays are rounding's upper estimates, see
    ``controllers.spectral_radius``), else a warning when the
    state grew (the README model on a plant with delay 4.5 s instead of 2.5 s: radius 1.197
    on the plant, 0.15 on the model, and only the latter was reported)."""
    from controllers.feedback import NOMINAL_CHECK_SIZE
    from controllers.lifted import spectral_radius

    radius = None
    if callable(getattr(controller, "feedback_matrices", None)):
        lag = max(plant.max_delay, getattr(controller, "history_steps", 0))
        if plant.n_states + plant.n_inputs * lag <= NOMINAL_CHECK_SIZE:
            radius = spectral_radius(plant.deviation_model(), controller)
            summary["plant_spectral_radius"] = json_number(radius)
            if radius >= 1.0:
                warn(f"the {args.controller} controller's loop on the plant {args.plant!r} is "
                     f"unstable: spectral radius {radius:.6g} >= 1 (on the model "
                     f"{_radius_text(summary.get('model_spectral_radius'))}): the model's "
                     f"dynamics or delays differ from the plant's by more than the loop "
                     f"tolerates; re-identify from data of this plant, or use a controller "
                     f"with more margin (smaller --q against --r)", args)
            return
    _check_growth(result, args)


def _check_growth(result, args: argparse.Namespace) -> None:
    """Warn when the loop on ``--plant`` grew: the final state norm above ``_GROWTH`` times
    the start's, twice the norm halfway (growth, not a noisy steady loop) and twice the norm
    the noise alone reaches, ``(process + measurement scale) sqrt(n steps)`` (the spread of
    a random walk, which bounds a stable loop's within the run): from ``--x0 0.001,0.001``
    with ``--process-noise 0.01`` a model's own stable MPC loop ended at 0.019-0.023 in 3 of
    20 seeds, "grown" 13-16 times its start, against a floor of 0.11."""
    if args.controller == "none" or args.plant is None:
        return                      # the open loop is the plant's own; the model: its radius
    norms = result.state_norms
    start, final, halfway = float(norms[0]), result.final_norm, float(norms[len(norms) // 2])
    floor = ((args.process_noise + args.measurement_noise)
             * float(np.sqrt(result.states.shape[0] * (len(norms) - 1))))
    if start > 0 and final > _GROWTH * start and final > 2.0 * max(halfway, floor):
        warn(f"the {args.controller} controller's loop on the plant {args.plant!r} grew: "
             f"final state norm {final:.4g} against {start:.4g} at the start (and "
             f"{halfway:.4g} halfway): the model does not describe the plant well enough for "
             f"this controller; re-identify from data of this plant"
             + (", or widen --u-max / --u-min" if args.controller == "mpc" else ""), args)


def _radius_text(radius: Any) -> str:
    return "unchecked" if radius is None else f"{radius:.6g}"


def _lower_input_bounds(args: argparse.Namespace) -> list[float] | None:
    """``--u-min``, or by default ``-u_max`` when only ``--u-max`` is given (symmetric)."""
    if args.u_min is not None or args.u_max is None:
        return args.u_min
    return [-value for value in args.u_max]


def _run_settings(args: argparse.Namespace, x0: np.ndarray) -> dict[str, Any]:
    """What the run used, defaults resolved, so that ``summary.json`` reproduces it."""
    settings: dict[str, Any] = {"model": args.model, "plant": args.plant or args.model,
                                "x0": x0.tolist(), "q": args.q or [1.0], "r": args.r or [1.0]}
    if args.controller == "mpc":
        settings.update(horizon=_DEFAULT_HORIZON if args.horizon is None else args.horizon,
                        u_max=args.u_max, u_min=_lower_input_bounds(args))
        if args.y_max is not None or args.y_min is not None:
            settings.update(y_max=args.y_max, y_min=args.y_min)
    if args.process_noise > 0 or args.measurement_noise > 0:
        noise = args.noise or _DEFAULT_NOISE
        settings.update(process_noise=args.process_noise,
                        measurement_noise=args.measurement_noise, noise=noise,
                        seed=_DEFAULT_SEED if args.seed is None else args.seed)
        if noise == "sas":
            settings["alpha"] = _DEFAULT_ALPHA if args.alpha is None else args.alpha
    return settings


def _weights(option: str, values: list[float] | None, size: int) -> np.ndarray | None:
    """``--q``/``--r`` as a diagonal weight matrix (None: the identity default)."""
    from _toolbox.errors import DimensionError

    if values is None:
        return None
    if len(values) not in (1, size):
        raise DimensionError(f"{option} has {len(values)} values; give one, or {size} (one per "
                             f"{'state' if option == '--q' else 'input'})")
    return np.diag(np.broadcast_to(np.asarray(values, dtype=float), (size,)))


def _check_simulate_options(args: argparse.Namespace) -> None:
    """Refuse options that would have no effect in this combination."""
    from _toolbox.errors import ParameterError

    if args.controller == "none" and args.r is not None:
        raise ParameterError("--r weighs the inputs of a controller's design; --controller none "
                             "holds the inputs (its cost weighs the states by --q)")
    if args.controller != "mpc":
        idle = [flag for flag, value in (("--horizon", args.horizon), ("--u-max", args.u_max),
                                         ("--u-min", args.u_min), ("--y-max", args.y_max),
                                         ("--y-min", args.y_min)) if value is not None]
        if idle:
            verb = "applies" if len(idle) == 1 else "apply"
            raise ParameterError(f"{' and '.join(idle)} {verb} only to --controller mpc; got "
                                 f"--controller {args.controller}")
    if args.u_min is None and args.u_max is not None and min(args.u_max) <= 0:
        raise ParameterError(f"--u-max {','.join(f'{v:g}' for v in args.u_max)} without "
                             f"--u-min bounds the inputs symmetrically, -u_max <= u <= u_max, "
                             f"which needs u_max > 0; give --u-min for a range of your own")
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
    if _is_output_model(Path(path)):
        raise ParameterError(f"{what} file {path!r} is an output model ('dmdidc identify "
                             f"--outputs', y = C x) but the model is a state model, whose "
                             f"controller is fed the plant's states: simulate an output model "
                             f"as the model ('dmdidc simulate OUTPUT_MODEL.json [--plant "
                             f"OUTPUT_PLANT.json]', through a Kalman observer), see "
                             f"docs/output-identification.md")
    try:
        return DelayedPlant.load(path)
    except (ToolboxError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        # a malformed file must not end in a traceback, whatever the loader raises
        raise ParameterError(f"{what} file {path!r} is not a valid plant (expected what "
                             f"DelayedPlant.save or 'dmdidc identify' writes: .json or .npz with "
                             f"dt, A_d, B_blocks and optionally A_c, B_c, delay): {exc}") from exc


def _is_output_model(path: Path) -> bool:
    """Whether ``path`` is a JSON file of :meth:`dmdidc.OutputDMDidc.save`."""
    import json

    from dmdidc import OutputDMDidc

    if path.suffix.lower() != ".json":
        return False
    try:
        record = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return False        # not JSON at all: the plant loader says what is wrong
    return isinstance(record, dict) and record.get("format") == OutputDMDidc.FILE_FORMAT


def _start(args: argparse.Namespace, model, point) -> np.ndarray:
    """``--x0``, or all ones for a model and plant without an operating point.

    A physical start is not guessed: one unit from ``x_op`` is 1 m on a 1.2 m level and
    1e-5 of a 1e5 Pa pressure, and nothing in a model says what size a disturbance has."""
    from _toolbox.errors import ParameterError

    if args.x0 is not None:
        return _parse_vector("--x0", args.x0)
    own = model.operating_point if point is None else point
    if own is None:
        return np.ones(model.n_states)
    example = ",".join(f"{value:.4g}" for value in own.state)
    whose = "the plant" if point is not None else "the model"
    raise ParameterError(f"--x0 is required: {whose} has the operating point x_op = "
                         f"({example}) in physical units, and a start there is yours to "
                         f"choose (e.g. --x0 {example} with the disturbance of interest added)")


def _note_operating_points(plant, model, args: argparse.Namespace) -> None:
    """Warn when the model's operating point (where its controller regulates to) is not the
    plant's: an identified model's is the equilibrium under the data's mean input, and the
    loop then settles there, its cost (about the plant's point) holding the difference (a new
    user's room: 0.29 degC off, cost 6.74 against 1.48 designed on the plant's point)."""
    own, theirs = model.operating_point, plant.operating_point
    if own is None or theirs is None:
        return                  # (one side only: the loop's own coordinates check decides)
    gap = float(np.linalg.norm(own.state - theirs.state))
    if gap <= 1e-9 * max(float(np.linalg.norm(theirs.state)), 1.0):
        return
    warn(f"the model regulates to its operating point x_op = "
         f"{np.array2string(own.state, precision=4)}, the plant's is "
         f"{np.array2string(theirs.state, precision=4)} ({gap:.3g} apart): the loop settles at "
         f"the model's, and the cost, about the plant's point, includes that offset. To "
         f"regulate to the plant's point, design the controller in Python on "
         f"model.with_operating_point(state=...)", args)


def _check_plant_matches_model(plant, model, args: argparse.Namespace) -> None:
    from _toolbox.errors import DimensionError, ParameterError

    if (plant.n_states, plant.n_inputs) != (model.n_states, model.n_inputs):
        raise DimensionError(f"--plant {args.plant!r} has {plant.n_states} states and "
                             f"{plant.n_inputs} inputs; the model {args.model!r} has "
                             f"{model.n_states} states and {model.n_inputs} inputs")
    if not math.isclose(plant.dt, model.dt, rel_tol=1e-9):
        raise ParameterError(f"--plant {args.plant!r} has sampling period T = {plant.dt:g} s; "
                             f"the model {args.model!r} has T = {model.dt:g} s: the controller "
                             f"acts once per model period, so both must agree: identify from "
                             f"data sampled at the plant's T, and when their time stamps jitter "
                             f"(T is then read from their span) give it: dmdidc identify ... "
                             f"--dt {plant.dt:g}")
    # Coordinates (operating points on one side only) are the loop's own check
    # (simulations.closed_loop._check_coordinates), before it runs: nothing is written.


def _parse_vector(option: str, text: str) -> np.ndarray:
    from _toolbox.errors import NonFiniteError, ParameterError

    try:
        values = np.array([float(v) for v in text.split(",")])
    except ValueError as exc:
        raise ParameterError(f"{option} must be comma-separated numbers; got {text!r}") from exc
    if not np.isfinite(values).all():
        raise NonFiniteError(f"{option} must be finite numbers; got {text!r}")
    return values


def _sampler(args: argparse.Namespace, scale: float):
    from simulations.closed_loop import noise_sampler

    if scale == 0:
        return None
    noise = args.noise or _DEFAULT_NOISE
    if noise != "sas":
        return noise_sampler(noise, scale)
    return noise_sampler(noise, scale, alpha=_DEFAULT_ALPHA if args.alpha is None else args.alpha)


class _OpenLoop:
    """``--controller none``: the inputs held at the model's operating point (0 without one)."""

    def __init__(self, model) -> None:
        point = model.operating_point
        self._input = (np.zeros(model.n_inputs) if point is None
                       else np.asarray(point.input, dtype=float))

    def reset(self) -> None:
        """Nothing to forget."""

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self._input.copy()


def _make_controller(args: argparse.Namespace, model, Q, R, outputs=None):
    """The controller of ``--controller`` on ``model`` (``outputs``: an output model's ``C``
    and level, through which ``--y-min`` / ``--y-max`` bound its outputs)."""
    import warnings

    from _toolbox.errors import DimensionError, UnstableLoopWarning
    from controllers import make_controller

    if args.controller == "none":
        return _OpenLoop(model)
    if args.controller == "fractional" and not model.has_continuous:
        from _toolbox.errors import ParameterError

        raise ParameterError(f"--controller fractional (the default) needs the model's "
                             f"continuous form (A_c, B_c, delay), which {args.model!r} lacks "
                             f"(identify printed why); --controller exact, truncated, naive or "
                             f"mpc work on its discrete model")
    if args.controller != "mpc":
        weights = {key: value for key, value in (("Q", Q), ("R", R)) if value is not None}
        with warnings.catch_warnings():
            # said below in the command's terms, not in Python's
            warnings.simplefilter("ignore", UnstableLoopWarning)
            controller = make_controller(args.controller, model, **weights)
        radius = controller.nominal_spectral_radius       # None: a loop too large to check
        if radius is not None and radius >= 1:
            print(f"warning: the {args.controller} controller's loop is unstable on the model "
                  f"itself (spectral radius {radius:.6g} >= 1), so on the plant too if the "
                  f"model is right; --controller fractional (on a model with its continuous "
                  f"form) or mpc predict through the model's delays", file=sys.stderr)
        return controller
    bounds = {}
    for option, values in (("--u-max", args.u_max), ("--u-min", _lower_input_bounds(args))):
        if values is not None:
            if len(values) not in (1, model.n_inputs):
                raise DimensionError(f"{option} has {len(values)} values; give one, or "
                                     f"{model.n_inputs} (one per input)")
            bounds[option] = np.broadcast_to(np.asarray(values, dtype=float), (model.n_inputs,))
    upper, lower = bounds.get("--u-max"), bounds.get("--u-min")
    horizon = _DEFAULT_HORIZON if args.horizon is None else args.horizon
    limits = {}
    if outputs is not None and (args.y_max is not None or args.y_min is not None):
        C, level = outputs
        for key, option, values in (("y_max", "--y-max", args.y_max),
                                    ("y_min", "--y-min", args.y_min)):
            if values is not None:
                if len(values) not in (1, C.shape[0]):
                    raise DimensionError(f"{option} has {len(values)} values; give one, or "
                                         f"{C.shape[0]} (one per output)")
                limits[key] = np.broadcast_to(np.asarray(values, dtype=float), (C.shape[0],))
        limits.update(C=C, output_offset=level, soft_state_constraints=True)
    return make_controller("mpc", model, horizon=horizon, Q=Q, R=R, u_min=lower, u_max=upper,
                           **limits)


def _labels(model) -> dict[str, list[str]] | None:
    """The model's signals as column labels (``T_room [K]``), or None for a model without
    names of its own (the columns stay ``x_1 ..``, ``u_1 ..``)."""
    from dmdidc import ModelInfo
    from simulations.cli.identify import signal_labels

    info = model.info
    default = ModelInfo.default(model.n_states, model.n_inputs)
    if info is None or (info.state_names, info.input_names, info.state_units,
                        info.input_units) == (default.state_names, default.input_names,
                                              default.state_units, default.input_units):
        return None

    return {"state_labels": signal_labels(info.state_names, info.state_units),
            "input_labels": signal_labels(info.input_names, info.input_units)}


def _plot_trajectory(result, path: Path, title: str,
                     labels: dict[str, list[str]] | None = None,
                     readout: np.ndarray | None = None, level: np.ndarray | None = None,
                     bounds: tuple | None = None) -> Path:
    """States (or, with ``readout`` ``C``, the noise-free outputs ``C x + level``) over the
    inputs; ``bounds`` (``--y-min``, ``--y-max`` values) drawn as dashed lines in each
    output's colour."""
    from _toolbox.plotting import new_figure, save_figure

    fig = new_figure((7, 5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    times = result.fine_times if result.fine_states is not None else result.times
    states = result.fine_states if result.fine_states is not None else result.states
    shown, name = (states, "x") if readout is None else (
        readout @ states + (0.0 if level is None else level[:, None]), "y")
    for i, row in enumerate(shown):
        line, = top.plot(times, row,
                         label=labels["state_labels"][i] if labels else f"{name}{i + 1}")
        for side, values in zip(("min", "max"), bounds or (None, None), strict=True):
            if values is not None:
                value = values[0] if len(values) == 1 else values[i]
                if not np.isfinite(value):      # no bound on this output: no line, no label
                    continue
                top.axhline(value, color=line.get_color(), linestyle="--", linewidth=0.8,
                            label=f"{name}{i + 1} {side}" if len(shown) > 1 else f"{name} {side}")
    for j, row in enumerate(result.inputs):
        bottom.step(result.times[:-1], row, where="post",
                    label=labels["input_labels"][j] if labels else f"u{j + 1}")
    top.set_ylabel("state" if readout is None else "output")
    bottom.set_ylabel("input")
    bottom.set_xlabel("time [s]")
    top.set_title("open loop" if title == "none" else f"closed loop, {title} controller")
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    return save_figure(fig, path)


# -- output models (identify --outputs) ----------------------------------------------------
# The controller acts on a delay-aware Kalman observer's estimate of the model's states
# (OutputFeedback); the loop runs on the model itself or on the true plant of another
# output-model file, measured through that plant's C.  The model's states are its own basis
# (canonical variates): --x0 is given in the plant's states and defaults to the least-norm
# state whose outputs are all 1; --q weighs the outputs (C^T diag(q) C plus output_weight's
# ridge), and the cost and the final norm are those of the outputs.

def _run_output_simulate(args: argparse.Namespace) -> int:
    """``simulate`` when ``args.model`` is an output model (the caller checked the options
    that do not depend on the model)."""
    from _toolbox.errors import NonFiniteError, ParameterError
    from controllers import DelayedKalmanObserver, OutputFeedback
    from simulations.closed_loop import simulate_closed_loop

    out = output_path(args.out, folder=True)
    est = _load_output_model(args.model, "model")
    _repeat_failed_checks(est, args)
    truth = est if args.plant is None else _load_output_model(args.plant, "--plant")
    _check_truth(est, truth, args)
    model, plant, C = est.plant(), truth.plant(), np.asarray(truth.C, dtype=float)
    x0 = _output_start(args, C, plant)
    Q = _output_weight(args.q, np.asarray(est.C, dtype=float))
    R = _weights("--r", args.r, model.n_inputs)
    detrend = getattr(est, "detrend", False)
    if args.controller != "none" and detrend in ("constant", "linear"):
        # the observer's own refusal names a Python argument (offset=) the command lacks
        raise ParameterError(
            f"{args.model!r} was identified with --detrend {detrend}: each experiment's "
            f"{'mean' if detrend == 'constant' else 'line'} was removed and not kept, so the "
            f"outputs' level the observer subtracts is unknown; identify without --detrend "
            f"(the default estimates a constant output offset) to simulate a controller on "
            f"it (--controller none runs)")
    own = (np.asarray(est.C, dtype=float), _level(est))     # the model's outputs: y = C x + c
    controller = _make_controller(args, model, Q, R, own)   # on the model's states
    if args.controller != "none":
        controller = OutputFeedback(controller, DelayedKalmanObserver(est))
    # the true sensors read their level too, which the observer subtracts (without it the
    # loop steered the plant to cancel a sensor offset it never saw: output 1.2 off its level)
    level = _level(truth)
    seed = _DEFAULT_SEED if args.seed is None else args.seed
    result = simulate_closed_loop(
        plant, controller, x0, args.steps, rng=seed, Q=_output_weight(args.q, C), R=R,
        process_noise=_sampler(args, args.process_noise),
        measurement_noise=_with_level(_sampler(args, args.measurement_noise), level,
                                      args.steps),
        measurement_matrix=C, fine=plant.has_continuous and args.steps <= _FINE_STEPS,
        progress=args.steps >= 500 and sys.stderr.isatty())
    if not (np.isfinite(result.states).all() and np.isfinite(result.inputs).all()):
        raise NonFiniteError(f"the trajectory from --x0 {args.x0 or '(outputs 1)'} overflows "
                             f"float64; start nearer the origin (nothing written)")
    # regulation: the outputs' deviation from their value at the plant's operating point
    deviation = C @ result.deviations[:, -1]
    summary = {"controller": args.controller, "steps": args.steps,
               "model_kind": "output model (y = C x + offset; the observer estimates its "
                             "states)",
               "cost": json_number(result.cost),
               "final_output_norm": json_number(float(np.linalg.norm(deviation))),
               **_run_settings(args, x0), "outputs": int(C.shape[0])}
    if np.any(level != 0):
        summary["output_offset"] = level.tolist()
    if truth is not est:
        _check_growth(result, args)
    bounds = None
    if args.controller == "mpc" and (args.y_max is not None or args.y_min is not None):
        bounds = (args.y_min, args.y_max)
        _report_bound_violation(summary, result, C, level, bounds, args)
    with staged_folder(out) as stage:
        result.to_csv(stage / "trajectory.csv")
        write_summary(stage / "summary.json", summary, title=f"dmdidc simulate {args.model}")
        _plot_trajectory(result, stage / "trajectory.png", args.controller, readout=C,
                         level=level, bounds=bounds)
    print(summary_table(summary))
    print(f"wrote {out / 'trajectory.csv'}, {out / 'summary.json'}, {out / 'summary.md'}, "
          f"{out / 'trajectory.png'}")
    return 0


#: A true output beyond its bound by more than this (relative to max(1, |bound|)) is reported
#: as a violation (rounding of the plan's own tolerance aside).
_BOUND_TOLERANCE = 1e-6


def _report_bound_violation(summary: dict, result, C: np.ndarray, level: np.ndarray,
                            bounds: tuple, args: argparse.Namespace) -> None:
    """``output_bound_violation``: how far the true outputs went beyond ``--y-min`` /
    ``--y-max``, between the samples too where the loop has the exact inter-sample trajectory
    (``output_bound_violation_at_samples`` beside it), and a warning when they did.  The MPC
    bounds the outputs its observer predicts at the samples: the estimate starts from rest
    and the plant moves between samples (the README output model with ``--y-min -0.1``: 0.49
    at the samples, 0.85 between them, reported as 0.49 and silently)."""
    low, high = bounds
    sampled = _bound_violation(C @ result.states + level[:, None], low, high)
    worst, where = sampled, "at a sample"
    summary["output_bound_violation"] = json_number(sampled)
    if result.fine_states is not None:
        fine = _bound_violation(C @ result.fine_states + level[:, None], low, high)
        summary["output_bound_violation"] = json_number(fine)
        summary["output_bound_violation_at_samples"] = json_number(sampled)
        if fine > sampled:
            worst, where = fine, "between samples"
    scale = max([1.0, *(abs(v) for v in (low or []) + (high or []))])
    if worst > _BOUND_TOLERANCE * scale:
        warn(f"the true outputs went beyond the output bounds by {worst:.4g} ({where}; "
             f"{sampled:.4g} at the samples): the MPC bounds the outputs its Kalman observer "
             f"predicts at the samples, so they hold for the plant only once the observer's "
             f"estimate has converged (it starts from rest) and not between samples; leave "
             f"a margin inside the limits you need, or start the plant at rest", args)


def _bound_violation(outputs: np.ndarray, low: list[float] | None,
                     high: list[float] | None) -> float:
    """The largest excursion of ``outputs`` (l, samples) beyond their bounds (0 within)."""
    rows = outputs.shape[0]
    worst = 0.0
    if high is not None:
        worst = max(worst, float(np.max(outputs - np.broadcast_to(high, (rows,))[:, None])))
    if low is not None:
        worst = max(worst, float(np.max(np.broadcast_to(low, (rows,))[:, None] - outputs)))
    return worst


def _level(est) -> np.ndarray:
    """An output model's output level ``offset_`` (zeros without one)."""
    rows = np.asarray(est.C).shape[0]
    return np.zeros(rows) if est.offset_ is None else np.asarray(est.offset_, dtype=float)


def _with_level(sampler, level: np.ndarray, steps: int):
    """The measurement noise of ``sampler`` (or none) plus the sensors' constant ``level``."""
    if not np.any(level):
        return sampler
    if sampler is None:
        return np.repeat(level[:, None], steps + 1, axis=1)

    def shifted(rng, shape):
        return sampler(rng, shape) + level[:, None]
    return shifted


def _load_output_model(path: str, what: str):
    """An :class:`~dmdidc.OutputDMDidc` from its JSON file, a defect reported as one error."""
    from _toolbox.errors import ParameterError, ToolboxError
    from dmdidc import OutputDMDidc

    if not Path(path).is_file():
        raise FileNotFoundError(f"{what} file {path!r} does not exist")
    if not _is_output_model(Path(path)):
        raise ParameterError(f"{what} file {path!r} is not an output model, but the model is: "
                             f"an output model's loop measures the true plant through its own "
                             f"C, so --plant must be an output model too ('dmdidc identify "
                             f"--outputs' or OutputDMDidc.save, e.g. of a longer experiment)")
    try:
        return OutputDMDidc.load(path)
    except (ToolboxError, ValueError, TypeError, KeyError, IndexError) as exc:
        raise ParameterError(f"{what} file {path!r} is not a valid output model: {exc}") from exc


def _check_truth(est: Any, truth: Any, args: argparse.Namespace) -> None:
    """The model and the true plant agree on what the loop exchanges; neither has
    feedthrough (the loop measures ``y = C x``)."""
    import math

    from _toolbox.errors import DimensionError, ParameterError

    for name, fitted, path in (("model", est, args.model), ("--plant", truth, args.plant)):
        if fitted.plant().n_inputs == 0:
            raise ParameterError(f"{name} {path!r} has no inputs: a controller needs one to "
                                 f"act with")
        if np.any(np.asarray(fitted.D) != 0):
            raise ParameterError(f"{name} has feedthrough (D != 0, identified with "
                                 f"feedthrough=True): the loop measures y = C x, and a "
                                 f"controller acting on its own command through D is not "
                                 f"simulated; use the model in Python (OutputFeedback)")
    if truth is est:
        return
    sizes = [(fitted.plant().n_inputs, np.asarray(fitted.C).shape[0]) for fitted in (est, truth)]
    if sizes[0] != sizes[1]:
        raise DimensionError(f"--plant {args.plant!r} has {sizes[1][0]} inputs and "
                             f"{sizes[1][1]} outputs; the model {args.model!r} has "
                             f"{sizes[0][0]} and {sizes[0][1]}")
    if not math.isclose(truth.dt, est.dt, rel_tol=1e-9):
        raise ParameterError(f"--plant {args.plant!r} has T = {truth.dt:g} s; the model has "
                             f"T = {est.dt:g} s: the controller acts once per model period")


def _output_start(args: argparse.Namespace, C: np.ndarray, plant: Any) -> np.ndarray:
    """``--x0`` (the plant's states), or the least-norm state whose outputs are all 1."""
    from _toolbox.errors import DimensionError

    if args.x0 is not None or plant.operating_point is not None:
        x0 = _start(args, plant, plant.operating_point)
    else:
        x0 = np.linalg.lstsq(C, np.ones(C.shape[0]), rcond=None)[0]
    if x0.shape != (plant.n_states,):
        raise DimensionError(f"--x0 has {x0.size} values; the plant (an output model, its "
                             f"states canonical variates) has {plant.n_states}")
    return x0


def _output_weight(values: list[float] | None, C: np.ndarray) -> np.ndarray:
    """``C^T diag(q) C`` plus :func:`~controllers.gains.output_weight`'s ridge: ``--q`` weighs
    the outputs (one value, or one per output)."""
    from _toolbox.errors import DimensionError
    from controllers.gains import output_weight

    if values is None:
        return output_weight(C)
    if len(values) not in (1, C.shape[0]):
        raise DimensionError(f"--q has {len(values)} values; an output model's --q weighs its "
                             f"outputs: give one, or {C.shape[0]} (one per output)")
    q = np.broadcast_to(np.asarray(values, dtype=float), (C.shape[0],))
    return output_weight(np.sqrt(q)[:, None] * C)
