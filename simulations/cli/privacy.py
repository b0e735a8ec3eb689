"""``dmdidc privacy ...``: figures, epsilon, calibration and the Gaussian-vs-SaS comparison.

Wire into the main CLI with ``add_privacy_parser(sub)`` on the ``add_subparsers`` object; the
registered parser sets ``handler`` (the convention of :mod:`simulations.cli`).  Every flag takes
effect: ``--steps``, ``--sampling-rate``, ``--replace-one`` and ``--dimension`` always go through
the accountant (:func:`privacy.accounting.guarantee`), which composes for ``--delta`` (default 0,
i.e. pure DP; a Gaussian, alpha = 2, needs ``--delta > 0``) and says which bound it used.

Examples
--------
``dmdidc privacy figures --out out/privacy``
``dmdidc privacy compare --epsilons 1 3 8 --alphas 2 1.999 1.95 --out compare.json``
``dmdidc privacy epsilon --alpha 1.95 --scale 1.0``  (pure-DP epsilon of one release)
``dmdidc privacy epsilon --alpha 1.95 --scale 1.0 --steps 100``  (pure-DP composition)
``dmdidc privacy epsilon --alpha 1.95 --scale 1.0 --delta 1e-5 --steps 1000 --sampling-rate 1e-3``
``dmdidc privacy calibrate --epsilon 3 --delta 1e-5 --steps 1000 --sampling-rate 1e-3 \
--alpha 1.999``
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from simulations.cli.atomic import staged_file, staged_folder
from simulations.cli.common import (
    _bound,
    _count,
    json_number,
    output_path,
    strict_json,
    summary_table,
)

__all__ = ["add_privacy_parser", "run_privacy", "comparison_table"]

_FIGURES = ("3.6", "3.7", "4.1", "4.6")
_FIGURE_4_6_STEPS = 1000
_FIGURE_FILES = {"3.6": "fig3_6_epsilon_vs_scale.png", "3.7": "fig3_7_cauchy_limits.png",
                 "4.1": "fig4_1_privacy_curves.png", "4.6": "fig4_6_composed_epsilon.png"}


def add_privacy_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``privacy`` (subcommands ``figures``, ``epsilon``, ``calibrate``, ``compare``)."""
    # The parsers are of the class of the one above (simulations.cli's shows the defaults).
    parser = subparsers.add_parser("privacy", help="SaS/Gaussian privacy: epsilon, calibration, "
                                                   "figures",
                                   description="Differential privacy of SaS noise (alpha = 2 is "
                                               "Gaussian): epsilon (pure or composed), "
                                               "calibration, figures, Gaussian-vs-SaS scales.")
    actions = parser.add_subparsers(dest="privacy_command", required=True)

    figures = actions.add_parser("figures", help="write the seed's Fig. 3.6, 3.7, 4.1, 4.6")
    figures.add_argument("--out", required=True,
                         help="output directory (PNG files; existing ones are overwritten and "
                              "listed as 'overwritten' in the printed JSON)")
    figures.add_argument("--which", nargs="+", default=list(_FIGURES), choices=_FIGURES,
                         help="figures to write")
    figures.add_argument("--steps", type=int,
                         help=f"composed releases N of Fig. 4.6 (q = 1e-3, delta = 1e-5; "
                              f"default: {_FIGURE_4_6_STEPS}; only with Fig. 4.6)")
    _json_flag(figures)

    eps = actions.add_parser("epsilon", help="epsilon of SaS noise, one release or composed")
    _common(eps)
    eps.add_argument("--scale", type=_bound, required=True, help="SaS scale gamma (> 0)")

    cal = actions.add_parser("calibrate", help="smallest SaS scale meeting a composed epsilon")
    _common(cal)
    cal.add_argument("--epsilon", type=float, required=True, help="target composed epsilon")

    cmp_ = actions.add_parser("compare", help="calibrated scales: Gaussian vs SaS (seed claim)")
    cmp_.add_argument("--epsilons", type=_bound, nargs="+", default=[1.0, 3.0, 8.0],
                      help="target composed epsilons")
    cmp_.add_argument("--alphas", type=_bound, nargs="+", default=[2.0, 1.999, 1.95],
                      help="stability indices (2 = Gaussian; it is always the reference)")
    cmp_.add_argument("--delta", type=_bound, default=1e-5, help="delta of the guarantee (> 0)")
    cmp_.add_argument("--steps", type=_count, default=1000, help="composed releases N")
    cmp_.add_argument("--sampling-rate", type=_bound, default=1e-3,
                      help="Poisson sampling probability q per release")
    cmp_.add_argument("--out", default=None,
                      help="also write the rows as JSON to this file (an existing file is "
                           "overwritten; dmdidc lists it on stderr)")

    from simulations.cli.dpsgd import add_dpsgd_actions
    add_dpsgd_actions(actions)  # dpsgd, audit

    from simulations.cli.private_identification import add_private_parsers
    add_private_parsers(actions)  # identify, sweep (private identification)

    parser.set_defaults(handler=run_privacy)
    return parser


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the result as one JSON object instead of a table")


def _common(parser: argparse.ArgumentParser) -> None:
    _json_flag(parser)
    parser.add_argument("--alpha", type=float,
                        help="stability index in [0.1, 2]; 2 = Gaussian (sigma = sqrt(2) scale); "
                             "default: 2 with --delta > 0; without --delta it must be given "
                             "(< 2: pure DP)")
    parser.add_argument("--sensitivity", type=float, default=1.0,
                        help="l1-sensitivity of one release")
    parser.add_argument("--dimension", type=int, default=1,
                        help="query dimension of one release (vector SaS: pure-DP composition)")
    parser.add_argument("--delta", type=float,
                        help="delta of the composed guarantee; 0 = pure DP (needs alpha < 2); "
                             "default: 0 with --alpha < 2")
    parser.add_argument("--steps", type=int, default=1, help="composed releases N")
    parser.add_argument("--sampling-rate", type=float, default=1.0,
                        help="Poisson sampling probability q per release")
    parser.add_argument("--replace-one", action="store_true",
                        help="REPLACE_ONE neighbouring relation (default: ADD_OR_REMOVE)")
    parser.add_argument("--unit", default="record",
                        help="name of the privacy unit one release's sensitivity is for (what "
                             "neighbouring data sets differ in, e.g. example, household); "
                             "printed with the guarantee. Default: record")


def run_privacy(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc privacy``; prints the result, returns the exit code."""
    if args.privacy_command in ("dpsgd", "audit"):
        from simulations.cli.dpsgd import run_dpsgd_action
        return run_dpsgd_action(args)
    if args.privacy_command in ("identify", "sweep"):
        from simulations.cli.private_identification import run_private
        return run_private(args)
    handlers = {"figures": _run_figures, "epsilon": _run_epsilon,
                "calibrate": _run_calibrate, "compare": _run_compare}
    return handlers[args.privacy_command](args)


def _relation(args: argparse.Namespace) -> Any:
    from privacy.mechanisms import NeighboringRelation
    return (NeighboringRelation.REPLACE_ONE if args.replace_one
            else NeighboringRelation.ADD_OR_REMOVE)


def _resolve_noise(args: argparse.Namespace) -> None:
    """Set ``args.alpha`` and ``args.delta`` from what was given, refusing the combination
    that has no epsilon (a Gaussian, alpha = 2, under pure DP, delta = 0) with the reason."""
    from _toolbox.errors import ParameterError

    if args.alpha is None and args.delta is None:
        raise ParameterError("give the noise: --alpha A with 0.1 <= A < 2 for a pure-DP "
                             "(delta = 0) epsilon of SaS noise, or --delta D > 0 for an "
                             "(epsilon, delta) guarantee (alpha then defaults to 2, Gaussian); "
                             "the Gaussian has no pure-DP epsilon, so no default pair is valid")
    if args.delta is None:
        args.delta = 0.0
    if args.alpha is None:
        if args.delta == 0.0:
            raise ParameterError("--delta 0 is pure DP, which the default alpha = 2 (Gaussian) "
                                 "cannot give; give --alpha < 2 or --delta > 0")
        args.alpha = 2.0
    if args.alpha == 2.0 and args.delta == 0.0:
        raise ParameterError("--alpha 2 is Gaussian noise, which has no pure-DP epsilon; give "
                             "--delta > 0 (e.g. --delta 1e-5) or --alpha < 2")


def _report(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """The result as a table, or as one JSON object with ``--json``."""
    print(json.dumps(strict_json(result)) if args.json else summary_table(result))


def _run_epsilon(args: argparse.Namespace) -> int:
    from privacy import accounting
    from privacy.mechanisms import SaSMechanism

    _resolve_noise(args)
    mech = SaSMechanism(alpha=args.alpha, scale=args.scale, sensitivity=args.sensitivity,
                        dimension=args.dimension)
    bound = accounting.guarantee(mech, delta=args.delta, steps=args.steps,
                                 sampling_rate=args.sampling_rate, neighboring=_relation(args))
    _report(args, {**_noise_fields(mech),
                   "sensitivity": mech.sensitivity, "dimension": mech.dimension,
                   "pure_epsilon_one_release": json_number(mech.epsilon),
                   "expected_distortion": json_number(mech.expected_distortion),
                   **_guarantee_fields(bound, args.unit)})
    return 0


def _run_calibrate(args: argparse.Namespace) -> int:
    from privacy import accounting, calibration
    from privacy.mechanisms import NeighboringRelation, SaSMechanism

    _resolve_noise(args)
    relation = _relation(args)
    single_pure = (args.delta == 0.0 and args.steps == 1 and args.sampling_rate == 1.0
                   and relation is NeighboringRelation.ADD_OR_REMOVE and args.alpha < 2.0)
    if single_pure:   # one release, pure DP: the exact inverse of the pure epsilon
        scale = SaSMechanism.from_epsilon(args.epsilon, alpha=args.alpha,
                                          sensitivity=args.sensitivity,
                                          dimension=args.dimension).scale
    else:
        scale = calibration.calibrate_scale(
            args.epsilon, delta=args.delta, steps=args.steps, sampling_rate=args.sampling_rate,
            alpha=args.alpha, sensitivity=args.sensitivity, neighboring=relation,
            dimension=args.dimension)
    mech = SaSMechanism(alpha=args.alpha, scale=scale, sensitivity=args.sensitivity,
                        dimension=args.dimension)
    bound = accounting.guarantee(mech, delta=args.delta, steps=args.steps,
                                 sampling_rate=args.sampling_rate, neighboring=relation)
    _report(args, {"target_epsilon": args.epsilon, **_noise_fields(mech),
                   "sensitivity": mech.sensitivity, "dimension": mech.dimension,
                   "expected_distortion": json_number(mech.expected_distortion),
                   **_guarantee_fields(bound, args.unit)})
    return 0


def _noise_fields(mech: Any) -> dict[str, Any]:
    """The noise's index and scale, and for a Gaussian (alpha = 2) its standard deviation
    ``sigma = sqrt(2) scale``: a SaS scale is not the sigma a reader of ``--scale`` expects."""
    fields = {"alpha": mech.alpha, "scale": mech.scale}
    if mech.alpha == 2.0:
        fields["gaussian_sigma"] = math.sqrt(2.0) * mech.scale
    return fields


def _guarantee_fields(bound: Any, unit: str) -> dict[str, Any]:
    """The guarantee's fields, its privacy unit among them (an epsilon means nothing without
    what it protects), and its sentence."""
    import dataclasses

    bound = dataclasses.replace(bound, unit=unit)
    return {"epsilon": json_number(bound.epsilon), "delta": bound.delta, "steps": bound.steps,
            "sampling_rate": bound.sampling_rate, "neighboring": bound.neighboring.value,
            "unit": bound.unit, "method": bound.method, "guarantee": str(bound)}


def _run_figures(args: argparse.Namespace) -> int:
    from _toolbox.errors import ParameterError
    from simulations.cli.common import progress_bar
    from simulations.studies import sas_figures as figures

    if args.steps is not None and "4.6" not in args.which:
        raise ParameterError(f"--steps sets N of Fig. 4.6, which --which {' '.join(args.which)} "
                             f"does not draw; add 4.6 or leave --steps out")
    steps = _FIGURE_4_6_STEPS if args.steps is None else args.steps
    out = output_path(args.out, folder=True)
    existing = [_FIGURE_FILES[key] for key in args.which if (out / _FIGURE_FILES[key]).exists()]
    with progress_bar(total=len(args.which), desc="figures", unit="fig") as bar, \
            staged_folder(out) as stage:
        for key in args.which:
            bar.set_postfix_str(f"Fig. {key}")
            if key == "4.6":   # the slow one (48 composed accountings): its own bar
                with progress_bar(desc="Fig. 4.6 points", unit="point",
                          leave=False) as points:
                    figures.figure_4_6(stage, steps=steps, progress=points.update)
            else:
                {"3.6": figures.figure_3_6, "3.7": figures.figure_3_7,
                 "4.1": figures.figure_4_1}[key](stage)
            bar.update()
    _report(args, {"out": str(out), "figures": [_FIGURE_FILES[k] for k in args.which],
                   "overwritten": existing})
    return 0


def _run_compare(args: argparse.Namespace) -> int:
    from simulations.cli.common import progress_bar
    from simulations.studies import sas_figures as figures

    out = output_path(args.out, folder=False)
    total = len(args.epsilons) * len(args.alphas)
    with progress_bar(total=total, desc="calibrating", unit="scale") as bar:
        rows = figures.calibration_comparison(
            epsilons=args.epsilons, delta=args.delta, sampling_rate=args.sampling_rate,
            steps=args.steps, alphas=args.alphas, progress=lambda row: bar.update())
    print(comparison_table(rows, sampling_rate=args.sampling_rate))
    print(f"\nN = {args.steps} releases, q = {args.sampling_rate:g}, delta = {args.delta:g}; "
          f"cells: calibrated SaS scale (ratio to the Gaussian's scale = sigma / sqrt(2))")
    if out is not None:
        with staged_file(out) as staged:
            staged.write_text(json.dumps(strict_json(rows), indent=1))
    return 0


def comparison_table(rows: list[dict[str, float]], *, sampling_rate: float) -> str:
    """Markdown table of :func:`simulations.studies.sas_figures.calibration_comparison` rows
    (README layout).

    Examples
    --------
    >>> rows = [{"epsilon": 1.0, "alpha": 2.0, "scale": 0.453, "scale_ratio_to_gaussian": 1.0},
    ...         {"epsilon": 1.0, "alpha": 1.95, "scale": 0.281,
    ...          "scale_ratio_to_gaussian": 0.62}]
    >>> print(comparison_table(rows, sampling_rate=1e-3))
    | q | eps | Gaussian | alpha = 1.95 |
    | --- | --- | --- | --- |
    | 0.001 | 1 | 0.453 | 0.281 (0.620x) |
    """
    alphas = list(dict.fromkeys(row["alpha"] for row in rows if row["alpha"] != 2.0))
    lines = ["| q | eps | Gaussian | " + " | ".join(f"alpha = {a:g}" for a in alphas) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in alphas) + " |"]
    for eps in dict.fromkeys(row["epsilon"] for row in rows):
        cells = {row["alpha"]: row for row in rows if row["epsilon"] == eps}
        some = next(iter(cells.values()))
        gaussian = some["scale"] / some["scale_ratio_to_gaussian"]
        values = [f"{cells[a]['scale']:#.3g} ({cells[a]['scale_ratio_to_gaussian']:#.3g}x)"
                  if a in cells else "" for a in alphas]
        lines.append(f"| {sampling_rate:g} | {eps:g} | {gaussian:#.3g} | "
                     + " | ".join(values) + " |")
    return "\n".join(lines)
