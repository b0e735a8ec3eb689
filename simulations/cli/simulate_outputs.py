"""``dmdidc simulate`` of an output model (``dmdidc identify --outputs``, ``y = C x``): the
controller acts on a delay-aware Kalman observer's estimate of the model's states
(:class:`~controllers.OutputFeedback`), and the loop runs on the model itself or on the true
plant of another output-model file, measured through that plant's ``C``.

The model's states are its own basis (canonical variates): ``--x0`` is given in the plant's
states and defaults to the least-norm state whose outputs are all 1; ``--q`` weighs the
outputs (``Q = C^T diag(q) C`` plus the ridge of :func:`~controllers.gains.output_weight`),
and the cost and the final norm are those of the outputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["run_output_simulate"]


def run_output_simulate(args: argparse.Namespace) -> int:
    """``simulate`` when ``args.model`` is an output model (the caller checked the options
    that do not depend on the model)."""
    from _toolbox.errors import NonFiniteError
    from controllers import DelayedKalmanObserver, OutputFeedback
    from simulations.cli.atomic import staged_folder
    from simulations.cli.common import json_number, output_path, summary_table, write_summary
    from simulations.cli.simulate import (
        _DEFAULT_SEED,
        _FINE_STEPS,
        _make_controller,
        _plot_trajectory,
        _run_settings,
        _sampler,
        _weights,
    )
    from simulations.closed_loop import simulate_closed_loop

    out = output_path(args.out, folder=True)
    est = _load_output_model(args.model, "model")
    truth = est if args.plant is None else _load_output_model(args.plant, "--plant")
    _check_truth(est, truth, args)
    model, plant, C = est.plant(), truth.plant(), np.asarray(truth.C, dtype=float)
    x0 = _output_start(args, C, plant)
    Q = _output_weight(args.q, np.asarray(est.C, dtype=float))
    R = _weights("--r", args.r, model.n_inputs)
    controller = _make_controller(args, model, Q, R)       # on the model's states
    if args.controller != "none":
        controller = OutputFeedback(controller, DelayedKalmanObserver(est))
    seed = _DEFAULT_SEED if args.seed is None else args.seed
    result = simulate_closed_loop(
        plant, controller, x0, args.steps, rng=seed, Q=_output_weight(args.q, C), R=R,
        process_noise=_sampler(args, args.process_noise),
        measurement_noise=_sampler(args, args.measurement_noise), measurement_matrix=C,
        fine=plant.has_continuous and args.steps <= _FINE_STEPS,
        progress=args.steps >= 500 and sys.stderr.isatty())
    if not (np.isfinite(result.states).all() and np.isfinite(result.inputs).all()):
        raise NonFiniteError(f"the trajectory from --x0 {args.x0 or '(outputs 1)'} overflows "
                             f"float64; start nearer the origin (nothing written)")
    outputs = C @ result.states
    summary = {"controller": args.controller, "steps": args.steps,
               "model_kind": "output model (y = C x; the observer estimates its states)",
               "cost": json_number(result.cost),
               "final_output_norm": json_number(float(np.linalg.norm(outputs[:, -1]))),
               **_run_settings(args, x0), "outputs": int(C.shape[0])}
    with staged_folder(out) as stage:
        result.to_csv(stage / "trajectory.csv")
        write_summary(stage / "summary.json", summary, title=f"dmdidc simulate {args.model}")
        _plot_trajectory(result, stage / "trajectory.png", args.controller, readout=C)
    print(summary_table(summary))
    print(f"wrote {out / 'trajectory.csv'}, {out / 'summary.json'}, {out / 'summary.md'}, "
          f"{out / 'trajectory.png'}")
    return 0


def _load_output_model(path: str, what: str):
    """An :class:`~dmdidc.OutputDMDidc` from its JSON file, a defect reported as one error."""
    from _toolbox.errors import ParameterError, ToolboxError
    from dmdidc import OutputDMDidc
    from simulations.cli.simulate import _is_output_model

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
    from simulations.cli.simulate import _start

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
