"""``dmdidc privacy identify`` and ``dmdidc privacy sweep``: private identification on the CLI.

Registered in :mod:`simulations.cli.privacy` with :func:`add_private_parsers` on its actions;
the handler is :func:`run_private`.

Examples
--------
``dmdidc privacy identify data.npz --dt 2 --max-delay 3 --state-bound 150 --input-bound 4 \
--epsilon 1 --delta 1e-5 --unit sample`` (``--state-operating-point 60,1.2`` and
``--input-operating-point 45`` centre the bounds on a public operating point)
``dmdidc privacy sweep --out out/privacy_study --samples 30000 300000 --seeds 3``
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from simulations.cli.atomic import staged_file, staged_folder
from simulations.cli.common import (
    MODEL_SUFFIXES,
    _alpha,
    _bound,
    _count,
    _probability,
    _seed,
    check_unit_window,
    finite_vector,
    output_path,
    per_channel,
    positive_vector,
    refuse_delta_without_effect,
    refuse_interpolation,
    seed_warning,
    write_summary,
    write_table,
)
from simulations.cli.identify import (
    DEFAULT_MODEL,
    add_data_arguments,
    delay_record,
    load_data,
    model_out,
    refuse_delay_at_bound,
    signals_record,
    signals_text,
    with_signals,
)
from simulations.cli.terms import warn

__all__ = ["add_private_parsers", "run_private", "PRIVATE_COMMANDS"]

PRIVATE_COMMANDS = ("identify", "sweep")
#: Defaults of the sweep's options that act on some mechanisms or units only.
_SWEEP_DEFAULTS = {"alpha": 1.5, "delta": 1e-5, "window": 12}


def add_private_parsers(actions: Any) -> None:
    """Add ``identify`` and ``sweep`` to the ``dmdidc privacy`` actions."""
    identify = actions.add_parser(
        "identify", help="privatize a data file's sufficient statistics and identify from them",
        description="Clip the data to the declared bounds, compute the DMDidc sufficient "
                    "statistics, release them once with differential privacy and identify the "
                    "delayed plant from the release (the guarantee is printed).")
    add_data_arguments(identify, private=True)
    identify.add_argument("--max-delay", type=_seed, required=True,
                          help="delay bound R in sampling periods")
    identify.add_argument("--state-bound", type=positive_vector, required=True,
                          help="declared bound |x_i| <= c (one value or one per state, comma "
                               "separated); data beyond it are clipped. Must not come from the "
                               "data")
    identify.add_argument("--input-bound", type=positive_vector, required=True,
                          help="declared bound |u_j| <= c (one value or one per input)")
    identify.add_argument("--state-operating-point", type=finite_vector, metavar="X_OP",
                          help="public operating point subtracted from the states before "
                               "clipping (one value or one per state, e.g. a set point; never a "
                               "data mean): --state-bound then bounds |x_i - x_op,i|, and the "
                               "model keeps the operating point. Default 0")
    identify.add_argument("--input-operating-point", type=finite_vector, metavar="U_OP",
                          help="public operating point subtracted from the inputs before "
                               "clipping (one value or one per input); --input-bound then bounds "
                               "|u_j - u_op,j|. Default 0")
    identify.add_argument("--mechanism", choices=("gaussian", "laplace", "sas"),
                          default="gaussian", help="noise mechanism")
    identify.add_argument("--epsilon", type=_bound, required=True, help="target epsilon")
    identify.add_argument("--delta", type=_probability,
                          help="target delta (required for gaussian; sas: enables the l2 / "
                               "GDP calibration; not for laplace; default: none)")
    identify.add_argument("--alpha", type=_alpha, help="SaS stability index in (0, 2) (only with "
                                                      "--mechanism sas)")
    identify.add_argument("--unit", choices=("sample", "window", "trajectory"), default="sample",
                          help="privacy unit: one time step, a window of time steps, or one "
                               "trajectory (one experiment; with --missing drop one segment "
                               "between gaps, not the whole file)")
    identify.add_argument("--window", type=_count, help="time steps per window (only with --unit "
                                                     "window)")
    identify.add_argument("--detrend", choices=("none", "constant"), default="none",
                          help="remove the record's mean (an intercept) before the statistics")
    identify.add_argument("--estimator", choices=("ls", "iv"), default="ls",
                          help="least squares or instrumental variables (lagged inputs)")
    identify.add_argument("--level", type=_probability, default=0.95,
                          help="confidence level of the printed intervals")
    identify.add_argument("--seed", type=_seed, help="seed of the privacy noise (default: fresh "
                                                   "randomness, as a real release needs); "
                                                   "whoever has it can remove the noise: keep "
                                                   "it secret (it is not written anywhere)")
    identify.add_argument("--out", default=None,
                          help=f"model file (.json or .npz; replaced if it exists). Default: "
                               f"{DEFAULT_MODEL}, which is not replaced if it exists (give "
                               f"--out or --force)")
    identify.add_argument("--force", action="store_true",
                          help=f"replace an existing {DEFAULT_MODEL} when --out is not given")
    identify.add_argument("--json", dest="json_out",
                          help="also write the guarantee, estimates and intervals as JSON here "
                               "(and their table beside it, as .md)")

    sweep = actions.add_parser(
        "sweep", help="privacy-utility study: statistics vs per-sample privatization",
        description="Delay and A_c errors against epsilon for every privacy unit, data size "
                    "and mechanism, privatizing the sufficient statistics once or every state "
                    "sample (README plant, experiments of 300 samples). Writes "
                    "privacy_study.csv, privacy_study.json and privacy_study.png.")
    sweep.add_argument("--out", default="out/privacy_study", help="output folder")
    sweep.add_argument("--epsilons", type=float, nargs="+", default=[0.3, 1.0, 3.0, 10.0])
    sweep.add_argument("--units", nargs="+", default=["sample", "window", "trajectory"],
                       choices=("sample", "window", "trajectory"))
    sweep.add_argument("--window", type=int, default=_SWEEP_DEFAULTS["window"],
                       help="time steps per window (needs window among --units)")
    sweep.add_argument("--samples", type=int, nargs="+", default=[30_000, 300_000, 3_000_000],
                       help="data sizes K (multiples of 300)")
    sweep.add_argument("--mechanisms", nargs="+", default=["gaussian", "laplace", "sas"],
                       choices=("gaussian", "laplace", "sas"))
    sweep.add_argument("--approaches", nargs="+", default=["statistics", "per-sample"],
                       choices=("statistics", "per-sample"))
    sweep.add_argument("--alpha", type=float, default=_SWEEP_DEFAULTS["alpha"],
                       help="SaS stability index (needs sas among --mechanisms)")
    sweep.add_argument("--delta", type=float, default=_SWEEP_DEFAULTS["delta"],
                       help="target delta (needs gaussian among --mechanisms)")
    sweep.add_argument("--seeds", type=int, default=5, help="repetitions per point")
    sweep.add_argument("--seed", type=int, default=0, help="root seed")


def run_private(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc privacy identify`` and ``dmdidc privacy sweep``."""
    if args.privacy_command == "identify":
        return _identify(args)
    return _sweep(args)


def _identify(args: argparse.Namespace) -> int:
    from _toolbox.errors import ParameterError
    from dmdidc import DMDidc, SufficientStatistics

    if args.alpha is not None and args.mechanism != "sas":
        raise ParameterError("--alpha needs --mechanism sas")
    refuse_delta_without_effect(args.mechanism, args.delta)
    check_unit_window(args.unit, args.window)
    args.out = model_out(args)
    output_path(args.out, folder=False, suffixes=MODEL_SUFFIXES)
    output_path(args.json_out, folder=False, suffixes=(".json",), option="--json")
    refuse_interpolation(args)
    data = load_data(args)
    n, m = data.X[0].shape[0], data.U[0].shape[0]
    state_bound = per_channel("--state-bound", args.state_bound, n, "state")
    input_bound = per_channel("--input-bound", args.input_bound, m, "input")
    # deviations from the public operating point: the bounds are declared around it
    x_op = _operating_point("--state-operating-point", args.state_operating_point, n, "state")
    u_op = _operating_point("--input-operating-point", args.input_operating_point, m, "input")
    Xs = [x - x_op[:, None] for x in data.X]
    Us = [u - u_op[:, None] for u in data.U]
    X, U = (Xs[0], Us[0]) if len(Xs) == 1 else (Xs, Us)
    if args.seed is not None:
        outputs = args.out if args.json_out is None else f"{args.out} or {args.json_out}"
        warn(seed_warning(args.seed, "the release's noise", outputs), args)
    instruments = "inputs" if args.estimator == "iv" else None
    stats = SufficientStatistics.from_data(
        X, U, max_delay=args.max_delay,
        state_bound=state_bound, input_bound=input_bound, instruments=instruments,
        detrend=None if args.detrend == "none" else args.detrend)
    # the data owner's warnings, before the fit's: heavy clipping (the library's check
    # 'clipping') is often why the fit fails, and only here is its count known
    with warnings.catch_warnings(record=True) as released:
        warnings.simplefilter("always")
        private = stats.privatize(args.mechanism, epsilon=args.epsilon, delta=args.delta,
                                  unit=args.unit, window=args.window, alpha=args.alpha,
                                  rng=args.seed)
    for warning in released:
        warn(warning.message, args)
    if args.unit == "trajectory" and len(Xs) > 1:
        # the unit protects one trajectory; one person's record across all of them is k
        # trajectories, whose protection composes (k times the bound, group privacy)
        warn(f"--unit trajectory protects each of the {len(Xs)} trajectories of the data "
             f"(experiments, or segments between gaps with --missing drop) at "
             f"{private.privacy.epsilon:g}, not the file as a whole: a record that spans all "
             f"of them is protected only at the group-privacy bound of {len(Xs)} units "
             f"(about {len(Xs)} x epsilon)", args)
    estimator = DMDidc(max_delay=args.max_delay, estimator=args.estimator)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit_statistics(private, dt=args.dt)
        refuse_delay_at_bound(estimator, "--max-delay")
        # (its warning when the intervals cannot be given is the command's, not a traceback's)
        model = with_signals(_at(estimator.annotated_model(args.level), x_op, u_op), data)
    path = Path(args.out)
    print(f"data: n = {n} states, m = {m} inputs, {stats.n_samples} regression "
          f"samples; {stats.clipped} values clipped to the bounds (local information, not "
          f"released)")
    print(f"released: {private.dimension} statistics, {private.privacy}")
    print(estimator.block_test_.summary())
    print(f"signals (rows and columns of the matrices): {signals_text(model.signal_info)}")
    print(f"whole delay [periods] = {model.delay_steps}  (first active input block)")
    if model.operating_point is not None:
        print(f"operating point: x_op = {model.operating_point.state}, u_op = "
              f"{model.operating_point.input} (the model works in deviations from it)")
    intervals, delays = delay_record(estimator, model, args.level)
    summary: dict[str, Any] = {"signals": signals_record(model.signal_info),
                               "privacy": _release_dict(private.privacy), **delays}
    if model.operating_point is not None:
        summary["operating_point"] = {"state": model.operating_point.state.tolist(),
                                      "input": model.operating_point.input.tolist()}
    if model.has_continuous:
        print(intervals.summary() if intervals is not None
              else "no confidence intervals (the warning below says why)")
        summary.update(A_c=model.A_c.tolist(), B_c=model.B_c.tolist(), level=args.level)
    else:
        print(f"no continuous model: {model.continuous_note}")
    for warning in caught:
        warn(warning.message, args)
    with staged_file(path) as staged_model:
        model.save(staged_model)
        if args.json_out:
            json_path = Path(args.json_out)
            with staged_folder(json_path.parent) as stage:
                write_summary(stage / json_path.name,
                              json.loads(json.dumps(summary, default=_jsonable)),
                              title=f"dmdidc privacy identify {' '.join(args.data) or args.states}")
    if args.json_out:
        print(f"wrote {path}, {args.json_out}, {Path(args.json_out).with_suffix('.md')}")
    else:
        print(f"wrote {path}")
    return 0


def _operating_point(option: str, values: list[float] | None, size: int, noun: str
                     ) -> np.ndarray:
    """``values`` of ``option`` as one value per channel (zeros when not given)."""
    if values is None:
        return np.zeros(size)
    return np.broadcast_to(np.asarray(per_channel(option, values, size, noun), float), (size,))


def _at(model, x_op: np.ndarray, u_op: np.ndarray):
    """``model`` (fitted to deviations from ``(x_op, u_op)``) with that operating point added
    to any it fitted itself; unchanged without one."""
    if not (x_op.any() or u_op.any()):
        return model
    return model.shifted_by(x_op, u_op)


def _release_dict(release) -> dict[str, Any]:
    return {"mechanism": type(release.mechanism).__name__, "epsilon": release.epsilon,
            "delta": release.delta, "unit": release.unit, "window": release.window,
            "sensitivity": release.sensitivity, "norm": release.norm,
            "dimension": release.dimension, "accountant": release.accountant,
            "statement": str(release)}


def _jsonable(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else str(value)


def _sweep(args: argparse.Namespace) -> int:
    from simulations.cli.common import progress_bar, refuse_unused
    from simulations.studies.private_identification import (
        PrivacyStudyConfig,
        plot_privacy_study,
        run_privacy_study,
        summarize_study,
        write_privacy_study,
    )

    acts = {"alpha": ("sas" in args.mechanisms, "sas among --mechanisms"),
            "delta": ("gaussian" in args.mechanisms, "gaussian among --mechanisms"),
            "window": ("window" in args.units, "window among --units")}
    refuse_unused(args, {name: (_SWEEP_DEFAULTS[name], *rule) for name, rule in acts.items()})
    config = PrivacyStudyConfig(
        epsilons=tuple(args.epsilons), units=tuple(dict.fromkeys(args.units)),
        window=args.window, samples=tuple(args.samples),
        mechanisms=tuple(dict.fromkeys(args.mechanisms)),
        approaches=tuple(dict.fromkeys(args.approaches)), alpha=args.alpha, delta=args.delta,
        seeds=args.seeds, seed=args.seed)
    total = (len(config.samples) * config.seeds * len(config.units) * len(config.mechanisms)
             * len(config.epsilons) * len(config.approaches))
    with progress_bar(total=total, desc="privacy sweep", unit="fit") as bar:
        rows = run_privacy_study(config, progress=lambda message: (
            bar.set_postfix_str(message), bar.update(1)))
    summary = summarize_study(rows)
    out = Path(args.out)
    with staged_folder(out) as stage:
        write_privacy_study(rows, summary, config, stage)
        plot_privacy_study(summary, stage / "privacy_study.png")
        write_table(stage / "privacy_study.md", _table(summary), title="dmdidc privacy sweep")
    print(_table(summary))
    print(f"\nwrote {out / 'privacy_study.csv'}, {out / 'privacy_study.json'}, "
          f"{out / 'privacy_study.md'}, {out / 'privacy_study.png'}")
    return 0


def _table(summary: list[dict[str, Any]]) -> str:
    """Median delay error (in T) of both approaches and their ratio, per point."""
    lines = [f"{'unit':<10} {'mechanism':<9} {'K':>9} {'eps':>6} | {'statistics':>10} "
             f"{'per-sample':>10} {'ratio':>8} | {'A_c stat.':>9} {'A_c sample':>10}"]
    by_key = {(e["approach"], e["unit"], e["mechanism"], e["samples"], e["epsilon"]): e
              for e in summary}
    for (approach, unit, mechanism, K, eps), entry in sorted(by_key.items(),
                                                             key=lambda item: item[0][1:]):
        if approach != "statistics":
            continue
        other = by_key.get(("per-sample", unit, mechanism, K, eps))
        ratio = f"{entry.get('ratio', float('nan')):8.3g}"
        lines.append(
            f"{unit:<10} {mechanism:<9} {K:>9} {eps:>6g} | {entry['delay_median']:>10.3g} "
            f"{other['delay_median'] if other else float('nan'):>10.3g} {ratio} | "
            f"{entry['A_c_median']:>9.3g} {other['A_c_median'] if other else float('nan'):>10.3g}")
    return "\n".join(lines)
