"""``dmdidc federated identify``: federated DMDidc through FedInfer, delay error against N.

Register with ``add_identify_action(actions)`` on the ``federated`` group's subparsers
(:func:`simulations.cli.federated.add_federated_parser`).

Examples
--------
``dmdidc federated identify --clients 1000 --epsilon 1 --out out/fedid``
``dmdidc federated identify --clients 1,10,100 --mechanism sas --alpha 1.5 --out out/sas``
``dmdidc federated identify --clients 30 --engine flower --seeds 1 --out out/flower``
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_identify_action", "run_identify_command"]

_BASELINES = ("average", "per_sample")


def _counts(text: str) -> tuple[int, ...]:
    """``N`` (the grid 1, 3, 10, ... up to N) or an explicit comma-separated list."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected an integer or comma-separated integers; "
                                         f"got {text!r}") from exc
    if not values or min(values) < 1 or list(values) != sorted(set(values)):
        raise argparse.ArgumentTypeError(f"expected increasing client counts >= 1; got {text!r}")
    if len(values) == 1:
        from simulations.studies.federated_identification import client_grid
        return client_grid(values[0])
    return values


def _baselines(text: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    if text.strip() == "none":
        return ()
    if not names or set(names) - set(_BASELINES):
        raise argparse.ArgumentTypeError(f"baselines must be 'none' or among "
                                         f"{','.join(_BASELINES)}; got {text!r}")
    return names


def add_identify_action(actions: Any) -> None:
    """Add ``identify`` to the ``dmdidc federated`` group."""
    p = actions.add_parser(
        "identify", help="federated DMDidc: clients release statistics, FedInfer combines",
        description="Clients (the README plant with damping, delays 1.25 T and 1.5 T, noisy "
                    "measurements, many short experiments each) privatize their DMDidc "
                    "statistics once at event level; the server's FedInfer posterior of the "
                    "global statistics gives the delay with intervals. Writes summary.json, "
                    "rows.json and delay_error.png.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--clients", type=_counts, default="1000",
                   help="largest N (grid 1, 3, 10, ... N; clients join over rounds) or an "
                        "explicit list")
    p.add_argument("--epsilon", type=float, default=1.0, help="each client's budget")
    p.add_argument("--delta", type=float, default=None,
                   help="delta of the Gaussian and SaS releases (SaS: enables the l2 / GDP "
                        "calibration; not for laplace; default 1e-5)")
    p.add_argument("--mechanism", choices=("gaussian", "laplace", "sas"), default="gaussian",
                   help="noise of every client's release")
    p.add_argument("--alpha", type=float, default=None, help="SaS index (sas only; 1.5)")
    p.add_argument("--experiments", type=int, default=30, help="experiments per client")
    p.add_argument("--length", type=int, default=200, help="samples per experiment")
    p.add_argument("--noise-db", type=float, default=20.0,
                   help="measurement noise, dB below each state's rms")
    p.add_argument("--seeds", type=int, default=5, help="repetitions (seed, seed + 1, ...)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first repetition")
    p.add_argument("--baselines", type=_baselines, default="average,per_sample",
                   help="comparisons at the same budget: average (of client models), "
                        "per_sample (privatized samples), or none")
    p.add_argument("--engine", choices=("numpy", "flower"), default="numpy",
                   help="runtime of the protocol: numpy runner or Flower in-process")
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(handler=run_identify_command)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def run_identify_command(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc federated identify``."""
    from tqdm import tqdm

    from _toolbox.errors import ParameterError
    from simulations.cli.common import output_path
    from simulations.studies.federated_identification import (
        FederatedIdentificationConfig,
        plot_identification,
        run_federated_identification,
        summarize_identification,
    )

    if args.alpha is not None and args.mechanism != "sas":
        raise ParameterError("--alpha only applies to --mechanism sas")
    if args.delta is not None and args.mechanism == "laplace":
        raise ParameterError(f"--delta applies to --mechanism gaussian or sas; got --delta "
                             f"{args.delta} with --mechanism laplace (pure epsilon-DP)")
    out = output_path(args.out, folder=True)
    config = FederatedIdentificationConfig(
        clients=args.clients, experiments=args.experiments, length=args.length,
        noise_db=args.noise_db, mechanism=args.mechanism, epsilon=args.epsilon,
        delta=1e-5 if args.delta is None else args.delta,
        alpha=1.5 if args.alpha is None else args.alpha, seeds=args.seeds,
        seed=args.seed, engine=args.engine, baselines=args.baselines)
    with tqdm(total=config.seeds, desc="federated identify", unit="seed",
              file=sys.stderr) as bar:
        result = run_federated_identification(config, progress=lambda s: bar.update(1))
    summary = summarize_identification(result)
    epsilons = result["epsilon"]
    summary.update(clients=list(config.clients), unit=result["unit"],
                   epsilon_per_client={"max": max(epsilons), "min": min(epsilons),
                                       "values": epsilons},
                   delta=result["delta"], config=result["config"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(_finite(summary), indent=2))
    (out / "rows.json").write_text(json.dumps(_finite(result["rows"])))
    plot_identification(summary, out / "delay_error.png",
                        title=f"{config.mechanism}, epsilon = {config.epsilon:g} per client")
    print(f"{'N':>6}  " + "  ".join(f"{m:>22}" for m in summary["table"]))
    for i, n in enumerate(config.clients):
        cells = [summary["table"][m][i] for m in summary["table"]]
        print(f"{n:>6}  " + "  ".join(f"{c['median']:9.3g} [{c['p10']:.2g}, {c['p90']:.2g}]"
                                      for c in cells))
    print("measured rate (slope of log median error, N >= 10): " + ", ".join(
        f"{m} {r:.2f}" for m, r in summary["rate_measured"].items())
          + f"; expected {summary['rate_expected']:.2f}")
    print(f"each client: epsilon <= {max(epsilons):.4g} (delta {result['delta']:g}) per "
          f"{result['unit']}, composed over its releases")
    print(f"wrote {Path(out) / 'summary.json'}, rows.json, delay_error.png")
    return 0
