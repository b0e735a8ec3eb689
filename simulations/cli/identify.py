"""``dmdidc identify``: identify a delayed plant from X, U data (``.npz`` or CSV files) and write
the model file."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from simulations.cli.atomic import staged_file
from simulations.cli.common import (
    FIGURE_SUFFIXES,
    LONG_FIT_SAMPLES,
    MODEL_SUFFIXES,
    _bounded,
    _probability,
    _seed,
    elapsed_status,
    given_options,
    output_path,
    was_given,
)
from simulations.cli.terms import for_command, warn

#: The model file ``identify`` writes without ``--out`` (never replaced without ``--force``).
DEFAULT_MODEL = "model.json"

__all__ = ["add_identify_parser", "add_data_arguments", "load_data", "check_delay_memory",
           "refuse_delay_at_bound", "refuse_outputs", "require_max_delay", "with_signals",
           "signals_text", "signals_record", "signal_labels", "unit_intervals", "delay_record"]


def require_max_delay(args: argparse.Namespace, mode: str) -> None:
    """``--max-delay`` must be given for data with inputs (``mode``): the delay bound is the
    one choice DMDidc cannot default; only a record without inputs needs none."""
    from _toolbox.errors import ParameterError

    if not was_given(args, "max_delay", object()):
        raise ParameterError(f"{mode} needs --max-delay: the delay bound R in sampling periods "
                             f"(an integer >= 0, or auto); only a record without inputs "
                             f"(plain DMD) needs none")


def _max_delay(text: str) -> int | None:
    """``--max-delay``: an integer >= 0 or ``auto`` (None: chosen from the data)."""
    if text == "auto":
        return None
    return _seed(text)               # an integer >= 0



def add_identify_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``identify`` on the ``add_subparsers`` object of the root command."""
    identify = sub.add_parser("identify", help="identify a delayed plant from X, U data")
    add_data_arguments(identify)
    identify.add_argument("--max-delay", type=_max_delay, default=0,
                          help="delay bound R in sampling periods, or 'auto' (chosen from the "
                               "data by an information criterion); required for data with "
                               "inputs, which have no default (a record without inputs is "
                               "plain DMD: R = 0)")
    identify.add_argument("--estimator", choices=("auto", "ls", "iv", "huber", "huber_iv"),
                          default="auto",
                          help="auto: instrumental variables with refined instruments "
                               "(consistent under measurement noise; robust when the residuals "
                               "show outliers); ls: least squares; iv; huber: robust least "
                               "squares; huber_iv: robust instrumental variables")
    identify.add_argument("--method", choices=("auto", "gram", "qr"), default="auto",
                          help="least-squares solver (--estimator ls only): normal equations, "
                               "refined or redone with QR when ill-conditioned (auto), normal "
                               "equations only (gram), or backward-stable tall-skinny QR (qr)")
    identify.add_argument("--level", type=_probability, default=0.95,
                          help="confidence level of the printed intervals")
    identify.add_argument("--detrend", choices=("auto", "none", "constant", "linear"),
                          default="auto",
                          help="auto: keep an affine term (the operating point) when the data "
                               "show an offset (exact on noise-free data); none: through the "
                               "origin; constant / linear: each experiment its own operating "
                               "point (and drift): its mean or line removed, then one "
                               "intercept (and slope) per experiment fitted exactly; the "
                               "model is in deviations from them. With --outputs: auto "
                               "estimates a constant output offset, none fits none, constant "
                               "removes each experiment's mean, linear each experiment's line "
                               "(drifting sensors), fitted jointly with the plant")
    identify.add_argument("--reference",
                          help="closed-loop data: CSV of the reference or dither that excites "
                               "the loop, one row per sample (K rows); it drives the "
                               "instruments so feedback does not bias the fit")
    identify.add_argument("--check-level", type=_probability, default=0.01,
                          help="family-wise false-alarm probability of the fit's validation "
                               "checks on well-posed data")
    identify.add_argument("--residuals", metavar="FIGURE",
                          help="write the residual-analysis figure (whiteness, residual-input "
                               "and residual-signal correlations) to this file (.png, .pdf or "
                               ".svg)")
    identify.add_argument("--significance", type=_probability,
                          help="family-wise level of the test that decides which input blocks "
                               "act, and of the bound selection with --max-delay auto "
                               "(default: 0.001; with --block-rtol only beside auto)")
    identify.add_argument("--block-rtol", type=_probability, default=None,
                          help="override the test: an input block acts iff its norm exceeds "
                               "this fraction of the channel's largest (default: the test)")
    identify.add_argument("--svd-rank", type=int, default=None, metavar="R",
                          help="identify in the leading R POD modes of the states (many "
                               "sensors of a few modes); the model file is in those coordinates")
    identify.add_argument("--horizon", type=_bounded(int, 2), metavar="F",
                          help="with --outputs: the future and past window of the subspace "
                               "step, in samples (default: max(10, ceil(2 (max_order + 1) / "
                               "outputs)), max_order = 10); lower it for a short record")
    identify.add_argument("--order", type=_bounded(int, 1), metavar="N",
                          help="with --outputs: fix the plant order (default: chosen from the "
                               "data, order_rule in the model file)")
    identify.add_argument("--max-order", type=_bounded(int, 1), metavar="N",
                          help="with --outputs: the largest order considered (default: 10)")
    identify.add_argument("--feedthrough", action="store_true",
                          help="with --outputs: estimate a direct feedthrough D (outputs that "
                               "react to the input of the same sample)")
    identify.add_argument("--out", "--model-out", default=None,
                          help=f"model file (.json or .npz; .json only with --outputs; "
                               f"replaced if it exists). Default: {DEFAULT_MODEL}, which is "
                               f"not replaced if it exists (give --out or --force)")
    identify.add_argument("--force", action="store_true",
                          help=f"replace an existing {DEFAULT_MODEL} when --out is not given")
    identify.set_defaults(handler=_run_identify)
    return identify


def add_data_arguments(parser: argparse.ArgumentParser, *, clients: bool = False,
                       private: bool = False) -> None:
    """The data options shared by every command that reads identification data files
    (``clients``: one file per client, CSV tables or ``.npz``, no two-file form; ``private``:
    the command releases the data privately, so its help says interpolation is refused, as
    :func:`simulations.cli.common.refuse_interpolation` does)."""
    if clients:
        parser.add_argument("files", nargs="*", metavar="FILE",
                            help="the clients' data files (.npz with X and U, or CSV tables: "
                                 "then --inputs and --states name columns); none: the "
                                 "built-in study")
    else:
        parser.add_argument("data", nargs="*", metavar="DATA",
                            help=".npz file with arrays X (n, K+1) and U (m, K), or a CSV "
                                 "table with a row per sample (then --inputs and --states name "
                                 "columns); several files: one experiment each (the same "
                                 "columns, units and sampling period), fitted together")
    two_files = "" if clients else "CSV of states, one row per sample (K+1 rows); with a CSV "
    parser.add_argument("--states",
                        help=f"{two_files}{'table: ' if not clients else 'the tables: '}its "
                             f"state columns, comma separated (names or 1-based numbers; "
                             f"default: every column but the time and the inputs)")
    parser.add_argument("--inputs",
                        help=("" if clients else "CSV of inputs, one row per sample (K rows); "
                                                 "with a CSV table: ")
                             + "its input columns (required)"
                             + ("" if clients else "; 'none': a record without inputs (plain "
                                                   "DMD; so is an .npz without U)"))
    parser.add_argument("--outputs",
                        help="output identification (y = C x, fewer measured signals than "
                             "states; OutputDMDidc): the CSV table's measured columns, or "
                             "'all' (every column but the time and the inputs; with .npz or "
                             "two files: the states array or file, e.g. --states y.csv "
                             "--inputs u.csv --outputs all); with a data file not with "
                             "--states")
    parser.add_argument("--time", metavar="COLUMN",
                        help="the time column of the CSV file(s) (name or 1-based number; its "
                             "unit in brackets, e.g. 'time [ms]', or in its name, 'Time (ms)', "
                             "'time_ms'), 'none' (no time column: "
                             "every column is a signal) or 'ignore' (leave the column named "
                             "like a time, or a first column that grows by one step, out "
                             "unread; give --dt); default: a column named time, timestamp or t "
                             "(a 't' whose unit is not a time unit, which does not increase or "
                             "which --states/--inputs name is a signal, e.g. a temperature); an "
                             "unnamed first column that counts rows (pandas' to_csv index) is "
                             "left out; a time column is never fitted as a state")
    parser.add_argument("--time-tolerance", type=float, metavar="F",
                        help="largest deviation of a time step from one sampling period, as a "
                             "fraction of the period (time-stamp jitter; default 0.1); the "
                             "jitter measured is reported; refused without a time column to "
                             "read (an .npz, --time none or ignore)")
    parser.add_argument("--missing", choices=("error", "drop", "interpolate"), default="error",
                        help="missing samples (empty, nan, NA, #N/A, -; rows a time column "
                             "skips): "
                             "refuse them, drop them (the record splits into experiments at "
                             "the gaps) or interpolate them "
                             "linearly in time; the command reports how many and where. Lost "
                             "inputs are better dropped: an interpolated input is not what the "
                             "plant received (the fit warns with their count, the state fit "
                             "and the --outputs fit alike)"
                             + ("; a private release refuses interpolate (one reading sets "
                                "its whole gap): use drop" if private or clients else ""))
    parser.add_argument("--dt", type=float,
                        help="sampling period T (seconds); default: the time column's step "
                             "(required without a time column)")


def load_data(args: argparse.Namespace, *, outputs: bool = False):
    """The data of ``args`` (:class:`~simulations.data_preparation.IdentificationData`), its
    notes printed, and the sampling period decided (``args.dt`` set).  ``outputs``: the command
    identifies from measured outputs (``--outputs``); the others refuse it."""
    from _toolbox.errors import ParameterError, ToolboxError
    from simulations.data_preparation import (
        is_table,
        merged,
        read_identification_data,
        refuse_idle_tolerance,
    )

    refuse_outputs(args, accepted=outputs)

    files = args.data or [None]
    if len(files) > 1 and any(is_table(path) for path in (args.states, args.inputs)
                              if path is not None):
        raise ParameterError("--states and --inputs name a table's columns when several data "
                             "files are given, not files of their own")
    items = []
    for file in files:
        try:
            items.append(read_identification_data(
                file, states=args.states, inputs=args.inputs, time=args.time,
                missing=args.missing, dt=args.dt, outputs=args.outputs,
                time_tolerance=args.time_tolerance))
        except ToolboxError as error:
            if len(files) == 1:
                raise
            # of several files, say which one (a missing value's sample numbers are its own)
            raise type(error)(f"{file}: {error}") from None
    data = items[0] if len(items) == 1 else merged(items, files)
    for note in data.notes:             # before a refusal too: a row index left out shows
        print(f"data: {note}")
    refuse_idle_tolerance(args.time_tolerance, [data])
    if data.dt is None:
        raise ParameterError("give --dt, the sampling period T in seconds (the data have no "
                             "time column to read it from)")
    args.dt = data.dt
    _check_magnitude(data)
    return data


def with_signals(model, data, files: str | None = None):
    """``model`` with the names and units of ``data``'s signals where its file gives them (a
    CSV header, an IdData archive) and the data file(s) (``files``, default ``data.source``)
    as its data provenance, as the model file records them."""
    info = model.signal_info
    fields: dict[str, Any] = {}
    if data.state_names is not None and info.sensors is not None:
        from dmdidc import SensorMap

        # POD coordinates (--svd-rank): the names are the sensors', kept with the modes
        sensors = SensorMap(data.state_names, data.state_units, info.sensors.modes,
                            info.sensors.centre)
        fields.update(sensors=sensors,
                      state_units=(sensors.coordinate_unit,) * len(info.state_names))
    elif data.state_names is not None:
        fields.update(state_names=data.state_names, state_units=data.state_units)
    if data.input_names is not None:
        fields.update(input_names=data.input_names, input_units=data.input_units)
    provenance = {**(info.provenance or {}), "data": {
        "source": files or data.source, "experiments": len(data.X),
        "samples": sum(X.shape[1] for X in data.X), "dt": data.dt}}
    info = info.renamed(**fields, provenance=provenance)
    if info.intervals:       # fitted on arrays: the units of A_c and B_c follow the signals'
        info = info.renamed(intervals=unit_intervals(info.intervals, info))
    return model.with_info(info)


def unit_intervals(intervals, info):
    """``intervals`` (a :class:`~dmdidc.ConfidenceIntervals`, or the plain-JSON form of
    :attr:`~dmdidc.ModelInfo.intervals`) with ``A_c`` and ``B_c`` in the units of ``info``'s
    signals (:func:`~dmdidc.inference.intervals.rate_units`): the command fits arrays and
    names the signals after the fit."""
    from dmdidc.inference.intervals import rate_units, with_signal_units

    if not isinstance(intervals, dict):
        return with_signal_units(intervals, info.state_units, info.input_units)
    result = dict(intervals)
    for name, columns in (("A_c", info.state_units), ("B_c", info.input_units)):
        if name in result:
            unit = rate_units(info.state_units, columns)
            result[name] = {**result[name],
                            "unit": unit if isinstance(unit, str) else unit.tolist()}
    return result


def delay_record(estimator, model, level: float) -> tuple[Any, dict[str, Any]]:
    """The model's confidence intervals in its signals' units (``None`` where the delta
    method cannot give them) and the summary fields of its delays, for the commands that
    write a summary (``privacy identify``, ``federated identify``).

    The fields: ``delay_steps`` (the block test's whole delays: always), ``delay_s`` (the
    continuous model's delays, or ``"n/a (no continuous model: ...)"``), ``delay_low`` and
    ``delay_high`` (``None`` without intervals), and ``missing``, what the data did not
    support, each with why (``{}`` when nothing is missing).  A channel without an active
    block (check ``effect`` failed) has no delay: its entries of ``delay_s``, ``delay_low``
    and ``delay_high`` are ``None`` and ``missing["delays"]`` names it.  Noisy releases may
    leave the model without a continuous part, or leave no continuous model to the structure
    with the block before each delay fitted too, which the intervals span
    (:func:`~dmdidc.inference.intervals.asymptotic_intervals` then raises
    ``LogarithmError``): the model is still written and the summary says what it lacks,
    where the commands exited with status 2 and wrote nothing.
    """
    from dmdidc.discretization import first_active_blocks
    from dmdidc.errors import LogarithmError

    fields: dict[str, Any] = {"delay_steps": model.delay_steps.tolist(), "delay_s": None,
                              "delay_low": None, "delay_high": None, "missing": {}}
    # the model reports 0 for a channel without an active block; a summary read as data
    # would take that for a measured delay, so it gets null and says why
    silent = first_active_blocks(model.active_blocks) < 0
    if silent.any():
        fields["missing"]["delays"] = _silent_delays(estimator, model, silent)
    if not model.has_continuous:
        fields["delay_s"] = f"n/a (no continuous model: {model.continuous_note})"
        fields["missing"]["continuous model"] = model.continuous_note
        return None, fields
    fields["delay_s"] = _without(model.delay, silent)
    try:
        intervals = unit_intervals(estimator.confidence_intervals(level), model.signal_info)
    except LogarithmError as exc:
        fields["missing"]["intervals"] = f"the delta method cannot give them: {exc}"
        return None, fields
    fields.update(delay_low=_without(intervals.delay.low, silent),
                  delay_high=_without(intervals.delay.high, silent))
    return intervals, fields


def _without(values, silent) -> list:
    """``values`` as a list, ``None`` where ``silent``."""
    return [None if off else value for value, off in zip(values.tolist(), silent, strict=True)]


def _silent_delays(estimator, model, silent) -> str:
    """Why the delays of the ``silent`` input channels (no active block) are not given: the
    failed ``effect`` check's finding and remedy."""
    names = ", ".join(str(model.signal_info.input_names[i]) for i in np.flatnonzero(silent))
    text = (f"input(s) {names}: no active input block, so no delay (delay_s, delay_low, "
            f"delay_high null; the model file holds 0)")
    try:
        effect = estimator.diagnostics_["effect"]
    except KeyError:        # a fit without the effect test (blocks chosen by a threshold)
        return text
    if not effect.failed:
        return text
    return f"{text}: {effect.message()}"


def signal_labels(names, units) -> list[str]:
    """``name [unit]`` (``name`` without a unit), as a CSV header cell names a signal."""
    return [f"{name} [{unit}]" if unit else name for name, unit in zip(names, units,
                                                                         strict=True)]


def signals_text(info) -> str:
    """The signals of a :class:`~dmdidc.ModelInfo` in the order of the matrices' rows and
    columns: ``states T_room [K], T_wall [K]; inputs heater [kW]``."""
    from simulations.data_preparation import names_text

    states = names_text(signal_labels(info.state_names, info.state_units)) or 'none'
    if info.sensors is not None:
        sensors = info.sensors
        states += (f" (POD coordinates of the {sensors.n_sensors} sensors "
                   f"{names_text(signal_labels(sensors.names, sensors.units))}; the model "
                   f"file keeps their names, units and modes)")
    return (f"states {states}"
            f"; inputs {', '.join(signal_labels(info.input_names, info.input_units)) or 'none'}")


def signals_record(info) -> dict[str, list[str]]:
    """The signals of a :class:`~dmdidc.ModelInfo` for a JSON summary."""
    return {"states": list(info.state_names), "state_units": list(info.state_units),
            "inputs": list(info.input_names), "input_units": list(info.input_units)}


def refuse_outputs(args: argparse.Namespace, *, accepted: bool = False) -> None:
    """``--outputs`` is output identification: only ``dmdidc identify`` does it."""
    from _toolbox.errors import ParameterError

    if getattr(args, "outputs", None) is not None and not accepted:
        raise ParameterError(f"--outputs {args.outputs!r}: output identification (y = C x) is "
                             f"done by 'dmdidc identify --outputs'; this command needs every "
                             f"state measured (--states)")


def _check_magnitude(data) -> None:
    """Refuse values whose squares, summed over the samples, overflow float64: the fit forms
    such sums (Gram matrices), and an overflow surfaces as an obscure linear-algebra failure."""
    from _toolbox.errors import NonFiniteError

    samples = sum(U.shape[1] + 1 for U in data.U)
    limit = math.sqrt(np.finfo(float).max / (64.0 * samples))
    for kind, arrays in (("x", data.X), ("u", data.U)):
        for array in arrays:
            peak = np.abs(array)
            if peak.size and peak.max() > limit:      # no inputs (m = 0): nothing to check
                channel, sample = np.unravel_index(int(np.argmax(peak)), peak.shape)
                raise NonFiniteError(
                    f"{kind}{channel + 1} reaches {array[channel, sample]:.3g} at sample "
                    f"{sample}: the fit sums squares of the data, which overflow float64 "
                    f"beyond |value| = {limit:.2g} for {samples} samples; rescale the data "
                    f"(larger units) or remove the outlier")


def _load_reference(path: str, samples: int) -> np.ndarray:
    """The reference CSV as (q, K), one row per sample in the file."""
    from simulations.data_files import read_samples_csv

    reference = read_samples_csv(path).T
    if reference.shape[1] != samples:
        from _toolbox.errors import DimensionError

        raise DimensionError(f"--reference {path!r} has {reference.shape[1]} rows; expected "
                             f"{samples} (one per input sample)")
    return reference


def model_out(args: argparse.Namespace) -> str:
    """``--out``, or :data:`DEFAULT_MODEL` when it was not given, refused if a file of that
    name exists and ``--force`` was not given: a second run in the same folder would
    otherwise replace the first one's model with no more than a line of output.

    Raises
    ------
    ParameterError
        The default model file exists and neither ``--out`` nor ``--force`` was given.
    """
    if args.out is not None:
        return args.out
    if Path(DEFAULT_MODEL).exists() and not args.force:
        from _toolbox.errors import ParameterError

        raise ParameterError(f"{DEFAULT_MODEL} exists (an earlier run's model?) and --out was "
                             f"not given: name the model file with --out FILE, or pass --force "
                             f"to replace {DEFAULT_MODEL}")
    return DEFAULT_MODEL


def _run_identify(args: argparse.Namespace) -> int:
    import warnings

    from _toolbox.errors import InsufficientExcitationError
    from dmdidc import DMDidc
    from simulations.data_preparation import name_held_input

    # DMDidc refuses --significance beside --block-rtol where it would change nothing
    test = {"significance": args.significance, "block_rtol": args.block_rtol}
    args.out = model_out(args)
    # OutputDMDidc writes JSON only; a wrong suffix would fail after the fit, or (.npz) hold JSON
    if args.outputs is not None and Path(args.out).suffix in set(MODEL_SUFFIXES) - {".json"}:
        from _toolbox.errors import ParameterError

        raise ParameterError(f"--out {args.out!r}: an output model (--outputs) is written as "
                             f"JSON only (OutputDMDidc.save); name a .json file")
    output_path(args.out, folder=False,
                suffixes=MODEL_SUFFIXES if args.outputs is None else (".json",))
    output_path(args.residuals, folder=False, suffixes=FIGURE_SUFFIXES, option="--residuals")
    if args.outputs is None and args.horizon is not None:
        from _toolbox.errors import ParameterError

        raise ParameterError(f"--horizon {args.horizon} is the window of output identification "
                             f"(--outputs); the state fit has none")
    output_only = given_options(args, _OUTPUTS_ONLY)
    if args.outputs is None and output_only:
        from _toolbox.errors import ParameterError

        raise ParameterError(f"{', '.join(output_only)} configure output identification "
                             f"(--outputs); the state fit has no such option")
    data = load_data(args, outputs=True)
    X, U = data.arrays
    if args.outputs is not None:
        return _run_identify_outputs(args, data)
    if args.reference is not None and data.U[0].shape[0] == 0:
        from _toolbox.errors import ParameterError

        raise ParameterError("--reference drives the instruments of data with inputs; this "
                             "record has none (plain DMD by least squares, nothing to "
                             "instrument): remove --reference")
    if args.reference is not None and len(data.X) > 1:
        from _toolbox.errors import ParameterError

        raise ParameterError("--reference needs one unbroken record; --missing drop split the "
                             "data into segments (use --missing interpolate)")
    if data.U[0].shape[0] > 0:
        require_max_delay(args, "data with inputs")
    check_delay_memory(args.max_delay, data)
    reference = (None if args.reference is None
                 else _load_reference(args.reference, data.U[0].shape[1]))
    estimator = DMDidc(max_delay=args.max_delay, method=args.method, estimator=args.estimator,
                       detrend=None if args.detrend == "none" else args.detrend,
                       check_level=args.check_level, svd_rank=args.svd_rank, **test)
    samples = sum(Ui.shape[1] for Ui in data.U)
    with warnings.catch_warnings(record=True) as caught, elapsed_status(
            f"fitting {samples:,} samples", show=samples >= LONG_FIT_SAMPLES):
        warnings.simplefilter("always")
        try:
            estimator.fit(X, U, dt=args.dt, reference=reference)
        except InsufficientExcitationError as exc:
            name_held_input(data, exc)             # the cause by its column's name
            raise
    refuse_delay_at_bound(estimator, "--max-delay")
    with warnings.catch_warnings(record=True) as annotating:    # intervals it cannot give
        warnings.simplefilter("always")
        model = with_signals(estimator.annotated_model(args.level), data)
    caught += annotating
    with staged_file(args.out) as staged:
        model.save(staged)
    path = Path(args.out)
    with np.printoptions(precision=6, suppress=True):
        _report(args, estimator, model, X, U, caught)
    if data.interpolated_inputs:         # the fit saw arrays: IdData's warning said here
        from dmdidc.missing import interpolated_inputs_warning

        warn(interpolated_inputs_warning(data.interpolated_inputs, "state"), args)
    print(f"wrote {path}")
    return 0


def _report(args: argparse.Namespace, estimator, model, X, U, caught: list) -> None:
    from dmdidc import check_excitation

    sensors = model.signal_info.sensors
    if sensors is not None:
        # --svd-rank regresses on the POD coordinates: the sensors themselves (often more than
        # the samples) would report a rank deficiency that the fit does not have
        X = [sensors.project(Xi) for Xi in X] if isinstance(X, list) else sensors.project(X)
        print(f"excitation in the {sensors.modes.shape[1]} POD modes of the "
              f"{sensors.n_sensors} signals:")
    print(check_excitation(X, U, estimator.max_delay_))
    regression = estimator.regression_
    print(f"regression ({regression.estimator}): rank {regression.rank}, condition number "
          f"{regression.condition_number:.3g}, relative residual "
          f"{regression.relative_residual:.2g}")
    print(estimator.block_test_.summary())
    if estimator.state_trend_ is not None:
        # a state's trend holds its trajectory's shift (operating point under the fitted
        # intercept), not only its mean: name it for what it is
        print(f"removed ({args.detrend}) trend per trajectory (averaged over trajectories, "
              f"value at sample 0): state operating point "
              f"{estimator.state_trend_[:, :, 0].mean(0)}, input level "
              f"{estimator.input_trend_[:, :, 0].mean(0)}: the model is in deviations from them")
    if model.operating_point is not None:
        print(f"operating point: x_op = {model.operating_point.state}, u_op = "
              f"{model.operating_point.input} (the model works in deviations from it)")
    print(f"signals (rows and columns of the matrices): {signals_text(model.signal_info)}")
    print(f"A_d =\n{model.A_d}")
    print(f"whole delay [periods] = {model.delay_steps}  (first active input block)")
    if estimator.delay_bound_ is not None:
        print(for_command(estimator.delay_bound_.summary(), args))
    if model.has_continuous:
        print(f"delay [s] = {model.delay}  (fraction {model.delay_fraction})")
        print(f"A_c =\n{model.A_c}\nB_c =\n{model.B_c}")
        if model.signal_info.intervals:
            print(unit_intervals(estimator.confidence_intervals(args.level),
                                 model.signal_info).summary())
        else:
            print("no confidence intervals (the warning below says why)")
    else:
        print(f"no continuous model: {model.continuous_note}")
    # the checks' remedies as this command's flags, as its warnings ('--detrend auto')
    print(for_command(estimator.diagnostics_.summary(), args))
    if args.residuals is not None:
        with staged_file(args.residuals) as staged:
            estimator.diagnostics_.plot(staged)
        print(f"wrote {args.residuals}")
    for warning in caught:
        warn(warning.message, args)


#: Options of output identification that the state fit does not take (name: default).
_OUTPUTS_ONLY = {"order": None, "max_order": None, "feedthrough": False}

#: Options of the state fit that output identification does not take (name: default).
_STATE_ONLY = {"reference": None, "estimator": "auto", "method": "auto", "svd_rank": None,
               "block_rtol": None, "residuals": None, "significance": None, "check_level": 0.01}


def _run_identify_outputs(args: argparse.Namespace, data) -> int:
    """``identify --outputs``: :class:`~dmdidc.OutputDMDidc` on the measured outputs."""
    import warnings

    from _toolbox.errors import ParameterError
    from _toolbox.formatting import interval_text
    from dmdidc import IdData, OutputDMDidc
    from dmdidc.missing import interpolated_inputs_warning

    given = given_options(args, _STATE_ONLY)
    if given:
        raise ParameterError(f"--outputs (output identification) does not take "
                             f"{', '.join(given)}: they configure the state fit")
    require_max_delay(args, "--outputs")
    if args.max_delay is None:
        raise ParameterError("--outputs needs an integer --max-delay (the bound is not chosen "
                             "automatically for outputs)")
    check_delay_memory(args.max_delay, data)
    # auto: a constant output offset is estimated (the operating point of the outputs)
    estimator = OutputDMDidc(max_delay=args.max_delay, horizon=args.horizon,
                             order=args.order, feedthrough=args.feedthrough,
                             max_order=10 if args.max_order is None else args.max_order,
                             offset=args.detrend != "none",
                             detrend=args.detrend if args.detrend in ("constant", "linear")
                             else False)
    # segments (--missing drop) go in as an IdData: fit leaves out those shorter than one
    # window (a 1-step segment between close gaps was refused as transposed data); one pair
    # of arrays may hold as many output samples as inputs, which IdData's states refuse
    Y, U = data.arrays
    samples = sum(Ui.shape[1] for Ui in data.U)
    with warnings.catch_warnings(record=True) as caught, elapsed_status(
            f"fitting {samples:,} samples (outputs)", show=samples >= LONG_FIT_SAMPLES):
        warnings.simplefilter("always")
        if isinstance(Y, list):
            estimator.fit(IdData(Y, U, dt=args.dt))
        else:
            estimator.fit(Y, U, dt=args.dt)
    if estimator.at_bound_.any():
        raise ParameterError(f"--max-delay {args.max_delay} is too small: the delay of input(s) "
                             f"{np.flatnonzero(estimator.at_bound_).tolist()} reached the bound "
                             f"{args.max_delay * args.dt:g} s; raise --max-delay (no model "
                             f"written)")
    with staged_file(args.out) as staged:
        estimator.save(staged, level=args.level, signals=_output_signals(data))
    intervals = estimator.delay_ci(args.level)
    outputs, inputs = _labels(data.state_names, data.state_units), _labels(data.input_names,
                                                                            data.input_units)
    with np.printoptions(precision=6, suppress=True):
        print(f"output identification (OutputDMDidc): {estimator.order_rule_}")
        if outputs or inputs:
            print(f"signals: outputs {', '.join(outputs) or 'unnamed'}; inputs "
                  f"{', '.join(inputs) or 'unnamed'}")
        for i, (delay, (low, high)) in enumerate(zip(estimator.delay, intervals, strict=True)):
            name = f" ({inputs[i]})" if inputs else ""
            print(f"input {i}{name}: delay {interval_text(delay, low, high, unit='s')} "
                  f"({100 * args.level:g} % interval; {estimator.delay_steps[i]} whole periods + "
                  f"fraction {estimator.delay_fraction[i]:.3f})")
        # (significant digits: precision=6 would print a small standard error as 0)
        print(f"eigenvalues of A_c: {estimator.eigenvalues_} (standard errors "
              f"{_significant(estimator.eigenvalue_se_)})")
        print(f"output noise std: {_significant(estimator.noise_std_)}")
        if args.detrend == "linear":
            print("output trend: each experiment's line removed from outputs and inputs and "
                  "fitted with the plant (--detrend linear; the model is in deviations)")
        elif args.detrend == "constant":
            print("output level: each experiment's mean removed from outputs and inputs and "
                  "fitted with the plant (--detrend constant; the model is in deviations)")
        elif estimator.offset:
            print(f"output offset (estimated; --detrend {args.detrend}): "
                  f"{_significant(estimator.offset_)}")
        print(f"A_c =\n{estimator.A_c}\nB_c =\n{estimator.B_c}\nC =\n{estimator.C}\n"
              f"(the basis of the canonical variates: only eigenvalues, delays and the transfer "
              f"function are unique)")
    _report_output_checks(estimator, [U.shape[1] for U in data.U])
    if data.interpolated_inputs:         # the fit saw arrays: IdData's warning said here
        warn(interpolated_inputs_warning(data.interpolated_inputs), args)
    for warning in caught:
        warn(_outlier_remedy(str(warning.message)), args)
    print(f"wrote {args.out}")
    return 0


def _output_signals(data) -> dict[str, list[str]] | None:
    """The names and units of the outputs and inputs, where the data file gives them."""
    signals = {}
    if data.state_names is not None:
        signals.update(outputs=list(data.state_names), output_units=list(data.state_units))
    if data.input_names is not None:
        signals.update(inputs=list(data.input_names), input_units=list(data.input_units))
    return signals or None


def _labels(names, units) -> list[str]:
    """``name [unit]`` per signal, or none when the file names none."""
    return [] if names is None else signal_labels(names, units)


#: The outlier check's remedy in the command's terms: the Python one edits arrays.
_OUTLIERS_CLI = ("Remedy: the output-error fit is least squares and gross errors move it: empty "
                 "the outputs' cells at the outlier samples listed above in the data file and "
                 "identify again with --missing drop (the record splits at them)")


def _outlier_remedy(message: str) -> str:
    """A warning with the outlier check's Python remedy given as the command's."""
    if message.startswith("check 'outliers' failed") and " Remedy: " in message:
        return message.split(" Remedy: ")[0] + " " + _OUTLIERS_CLI
    return message


def _report_output_checks(estimator, lengths: list[int]) -> None:
    """The residual checks of an output fit (``checks_``) as the state fit's table rows,
    and the samples the failed outlier check found (numbered as the fit's samples; with
    segments of ``lengths`` inputs, by the data's segment: the fit leaves out those shorter
    than one window, :func:`~dmdidc.output.checks.windowed`)."""
    print("residual checks (OutputDMDidc.checks_):")
    for check in estimator.checks_:
        print(check.row())
    segments = len(lengths) > 1
    shortest = 2 * estimator.horizon_ + estimator.max_delay + 1
    kept = [i for i, n in enumerate(lengths) if n >= shortest] or list(range(len(lengths)))
    flagged = [(kept[e], k) for e, samples in enumerate(estimator.outlier_samples_)
               for k in samples.tolist()]
    if flagged:
        shown = ", ".join(f"{e}:{k}" if segments else str(k) for e, k in flagged[:30])
        more = f" and {len(flagged) - 30} more" if len(flagged) > 30 else ""
        where = ("segment:sample, each segment numbered from its first sample"
                 if segments else "numbered from the first sample fitted, from 0")
        print(f"outlier samples ({where}): {shown}{more}")


def _significant(values) -> str:
    """``values`` to two significant digits each, as ``[3.2e-08, 0.014]``."""
    return "[" + ", ".join(f"{value:.2g}" for value in np.ravel(values)) + "]"


def check_delay_memory(max_delay: int | None, data) -> None:
    """Refuse a delay bound the data cannot hold or the memory cannot fit, before fitting."""
    from _toolbox.errors import ParameterError
    from simulations.cli.resources import check_memory, memory_budget

    if max_delay is None:
        return
    longest = max(U.shape[1] for U in data.U)
    if max_delay >= longest:
        raise ParameterError(f"--max-delay {max_delay} needs more than {max_delay} samples; the "
                             f"longest record has {longest}: accepted --max-delay 0 .. "
                             f"{max(longest - 2, 0)} (at least one regression sample)")
    budget = memory_budget()
    low, high = 0, longest - 1                 # the largest bound that fits, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if _regression_bytes(middle, data) <= budget else \
            (low, middle - 1)
    check_memory("--max-delay", max_delay, _regression_bytes(max_delay, data),
                 f"0 .. {low} for these data", budget)


def _regression_bytes(max_delay: int, data) -> float:
    """Peak memory of a DMDidc fit: ``p = n + m (R + 1) + 1`` regressors over the ``K - R``
    samples of each segment, kept in about four copies (data, instruments, residuals, Gram)."""
    n, m = data.X[0].shape[0], data.U[0].shape[0]
    samples = sum(max(U.shape[1] - max_delay, 0) for U in data.U)
    regressors = n + m * (max_delay + 1) + 1
    return 8.0 * 4 * regressors * (samples + regressors)


def refuse_delay_at_bound(estimator, option: str) -> None:
    """A delay found at the delay bound is an error, not a model: the bound may cut it."""
    from _toolbox.errors import ParameterError

    check = estimator.diagnostics_["delay_bound"]
    if check.failed:
        # at 0 the finding names two causes (a delay, or a state the data do not measure)
        verdict = ("may be too small" if estimator.max_delay_ == 0 else "is too small")
        raise ParameterError(f"{option} {estimator.max_delay_} {verdict}: {check.finding}; "
                             f"{check.remedy} (no model written)")
