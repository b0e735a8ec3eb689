"""``dmdidc privacy ...``: figures, epsilon and calibration from the command line.

Wire into the main CLI with ``add_privacy_parser(sub)`` on the ``add_subparsers`` object; the
registered parser sets ``handler`` (the convention of :mod:`simulations.cli`).

Examples
--------
``dmdidc privacy figures --out out/privacy``
``dmdidc privacy compare --epsilons 1 3 8 --alphas 2 1.999 1.95``  (calibrated scales)
``dmdidc privacy epsilon --alpha 1.95 --scale 1.0``  (pure-DP epsilon)
``dmdidc privacy epsilon --alpha 1.95 --scale 1.0 --delta 1e-5 --steps 1000 --sampling-rate 1e-3``
``dmdidc privacy calibrate --epsilon 3 --delta 1e-5 --steps 1000 --sampling-rate 1e-3 \
--alpha 1.999``
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_privacy_parser", "run_privacy"]


def add_privacy_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``privacy`` subcommand (with ``figures``, ``epsilon``, ``calibrate``)."""
    parser = subparsers.add_parser("privacy", help="SaS/Gaussian/Laplace privacy tools",
                                   description="Differential privacy of SaS noise: figures, "
                                               "epsilon (pure or composed) and calibration.")
    actions = parser.add_subparsers(dest="privacy_command", required=True)

    figures = actions.add_parser("figures", help="write the seed's Fig. 3.6, 3.7, 4.1, 4.6")
    figures.add_argument("--out", required=True, help="output directory")
    figures.add_argument("--which", nargs="+", default=["3.6", "3.7", "4.1", "4.6"],
                         choices=["3.6", "3.7", "4.1", "4.6"])
    figures.add_argument("--steps", type=int, default=1000, help="compositions for Fig. 4.6")

    eps = actions.add_parser("epsilon", help="pure-DP or composed epsilon of SaS noise")
    _common(eps)
    eps.add_argument("--scale", type=float, required=True)

    cal = actions.add_parser("calibrate", help="smallest SaS scale for a composed epsilon")
    _common(cal)
    cal.add_argument("--epsilon", type=float, required=True)

    cmp_ = actions.add_parser("compare", help="calibrated scales: Gaussian vs SaS (seed claim)")
    cmp_.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, 8.0])
    cmp_.add_argument("--alphas", type=float, nargs="+", default=[2.0, 1.999, 1.95])
    cmp_.add_argument("--delta", type=float, default=1e-5)
    cmp_.add_argument("--steps", type=int, default=1000)
    cmp_.add_argument("--sampling-rate", type=float, default=1e-3)

    from simulations.private_identification_cli import add_private_parsers
    add_private_parsers(actions)  # identify, sweep (private identification)

    parser.set_defaults(handler=run_privacy)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--alpha", type=float, default=2.0, help="stability index in (0, 2]")
    parser.add_argument("--sensitivity", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=None,
                        help="if given, compose with the PLD accountant for this delta")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--sampling-rate", type=float, default=1.0)
    parser.add_argument("--replace-one", action="store_true",
                        help="REPLACE_ONE neighbouring relation (default ADD_OR_REMOVE)")


def run_privacy(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc privacy``; prints JSON results, returns the exit code."""
    from privacy import NeighboringRelation, SaSMechanism, accounting, calibration, figures

    command = args.privacy_command
    if command in ("identify", "sweep"):
        from simulations.private_identification_cli import run_private
        return run_private(args)
    if command == "figures":
        out = Path(args.out)
        makers = {"3.6": figures.figure_3_6, "3.7": figures.figure_3_7,
                  "4.1": figures.figure_4_1,
                  "4.6": lambda d: figures.figure_4_6(d, steps=args.steps)}
        for key in args.which:
            makers[key](out)
        print(json.dumps({"out": str(out), "figures": sorted(p.name for p in out.glob("*.png"))}))
        return 0
    relation = (NeighboringRelation.REPLACE_ONE if getattr(args, "replace_one", False)
                else NeighboringRelation.ADD_OR_REMOVE)
    if command == "epsilon":
        mech = SaSMechanism(alpha=args.alpha, scale=args.scale, sensitivity=args.sensitivity)
        result: dict[str, Any] = {"alpha": args.alpha, "scale": args.scale,
                                  "sensitivity": args.sensitivity,
                                  "pure_epsilon": _num(mech.epsilon),
                                  "expected_distortion": _num(mech.expected_distortion)}
        if args.delta is not None:
            result.update(delta=args.delta, steps=args.steps, sampling_rate=args.sampling_rate,
                          epsilon=_num(accounting.epsilon(
                              mech, delta=args.delta, steps=args.steps,
                              sampling_rate=args.sampling_rate, neighboring=relation)))
        print(json.dumps(result))
        return 0
    if command == "calibrate":
        if args.delta is None:
            scale = SaSMechanism.from_epsilon(args.epsilon, alpha=args.alpha,
                                              sensitivity=args.sensitivity).scale
        else:
            scale = calibration.calibrate_scale(
                args.epsilon, delta=args.delta, steps=args.steps,
                sampling_rate=args.sampling_rate, alpha=args.alpha,
                sensitivity=args.sensitivity, neighboring=relation)
        print(json.dumps({"alpha": args.alpha, "epsilon": args.epsilon, "delta": args.delta,
                          "steps": args.steps, "sampling_rate": args.sampling_rate,
                          "scale": scale}))
        return 0
    if command == "compare":
        rows = figures.calibration_comparison(
            epsilons=args.epsilons, delta=args.delta, sampling_rate=args.sampling_rate,
            steps=args.steps, alphas=args.alphas)
        print(json.dumps([{k: _num(v) for k, v in row.items()} for row in rows], indent=1))
        return 0
    print(f"unknown privacy command {command!r}", file=sys.stderr)
    return 2


def _num(value: float) -> float | str:
    return value if math.isfinite(value) else "inf"


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point: ``python -m simulations.privacy_cli privacy ...``."""
    parser = argparse.ArgumentParser(prog="dmdidc")
    add_privacy_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
