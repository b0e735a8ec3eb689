"""``dmdidc federated identify``: federated DMDidc through FedInfer, delay error against N.

Register with ``add_identify_action(actions)`` on the ``federated`` group's subparsers
(:func:`simulations.cli.federated.add_federated_parser`).

Examples
--------
``dmdidc federated identify --clients 1000 --epsilon 1 --out out/fedid``
``dmdidc federated identify --clients 1,10,100 --mechanism sas --alpha 1.5 --out out/sas``
``dmdidc federated identify --clients 30 --engine flower --seeds 1 --out out/flower``
``dmdidc federated identify a.csv b.csv c.csv --inputs u1,u2 --max-delay 3 --state-bound 5 \
--input-bound 1 --out out/fed`` (the users' files, one per client:
:mod:`simulations.cli.federated_files`)
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from simulations.cli.common import (
    _alpha,
    _bound,
    _count,
    _probability,
    _seed,
    positive_vector,
)
from simulations.cli.identify import add_data_arguments

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
        description="With data files (one per client, read as 'dmdidc identify' reads its "
                    "data): every client privatizes its DMDidc statistics once within the "
                    "public bounds, FedInfer combines them and the plant is identified; writes "
                    "the model, summary.json and summary.md. Without files, the built-in study: "
                    "clients (the README plant with damping, delays 1.25 T and 1.5 T, noisy "
                    "measurements, many short experiments each) privatize their DMDidc "
                    "statistics once at event level; the server's FedInfer posterior of the "
                    "global statistics gives the delay with intervals. Writes summary.json, "
                    "summary.md, rows.json and delay_error.png.")
    add_data_arguments(p, clients=True)
    p.add_argument("--max-delay", type=_seed, help="delay bound R (data files; required)")
    p.add_argument("--state-bound", type=positive_vector,
                   help="public clip level |x_i| <= c of every client (one value or one per "
                        "state; data files; required)")
    p.add_argument("--input-bound", type=positive_vector,
                   help="public clip level |u_j| <= c (one value or one per input; data files; "
                        "required)")
    p.add_argument("--model", help="name of the model file written in --out (data files; "
                                   "default: model.json)")
    p.add_argument("--clients", type=_counts,
                   help="built-in study: largest N (grid 1, 3, 10, ... N; clients join over "
                        "rounds) or an explicit list (default: 1000)")
    p.add_argument("--epsilon", type=_bound, default=1.0, help="each client's budget")
    p.add_argument("--delta", type=_probability, default=None,
                   help="delta of the Gaussian and SaS releases (SaS: enables the l2 / GDP "
                        "calibration; not for laplace; default 1e-5)")
    p.add_argument("--mechanism", choices=("gaussian", "laplace", "sas"), default="gaussian",
                   help="noise of every client's release")
    p.add_argument("--unit", choices=("sample", "window", "trajectory"),
                   help="privacy unit of every client's release: one time step, --window "
                        "steps, or one trajectory (one experiment of a client's file; with "
                        "--missing drop one segment between gaps, not the whole file; data "
                        "files; default: sample; the built-in study releases per sample)")
    p.add_argument("--window", type=_count,
                   help="time steps per window (data files, with --unit window)")
    p.add_argument("--alpha", type=_alpha, default=None, help="SaS index (sas only; 1.5)")
    p.add_argument("--experiments", type=_count,
                   help="built-in study: experiments per client (default: 30)")
    p.add_argument("--length", type=_count,
                   help="built-in study: samples per experiment (default: 200)")
    p.add_argument("--noise-db", type=float,
                   help="built-in study: measurement noise, dB below each state's rms "
                        "(default: 20)")
    p.add_argument("--seeds", type=_count,
                   help="built-in study: repetitions (seed, seed + 1, ...; default: 5)")
    p.add_argument("--seed", type=_seed,
                   help="built-in study: seed of the first repetition (default: 0; a "
                        "simulation: the seed determines the noise). Data files: seed of the "
                        "clients' noise (default: fresh OS randomness, as a real release "
                        "needs; anyone with the seed can remove the noise)")
    p.add_argument("--baselines", type=_baselines,
                   help="built-in study: comparisons at the same budget: average (of client "
                        "models), per_sample (privatized samples), or none (default: "
                        "average,per_sample)")
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


def _default(value: Any, default: Any) -> Any:
    return default if value is None else value


def _refuse_file_options(args: argparse.Namespace) -> None:
    from _toolbox.errors import ParameterError
    from simulations.cli.federated_files import FILE_OPTIONS

    given = [flag for name, flag in FILE_OPTIONS.items() if getattr(args, name) is not None]
    if args.missing != "error":
        given.append("--missing")
    if given:
        raise ParameterError(f"{', '.join(given)} {'act' if len(given) > 1 else 'acts'} on "
                             f"data files; give the clients' files "
                             f"(dmdidc federated identify a.csv b.csv ...) or leave them out "
                             f"for the built-in study")


def run_identify_command(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc federated identify``."""
    from _toolbox.errors import ParameterError
    from simulations.cli.atomic import staged_folder
    from simulations.cli.common import (
        output_path,
        progress_bar,
        refuse_delta_without_effect,
        write_summary,
    )
    from simulations.studies.federated_identification import (
        FederatedIdentificationConfig,
        plot_identification,
        run_federated_identification,
        summarize_identification,
    )

    if args.alpha is not None and args.mechanism != "sas":
        raise ParameterError("--alpha only applies to --mechanism sas")
    refuse_delta_without_effect(args.mechanism, args.delta)
    if args.files:
        from simulations.cli.federated_files import run_on_files
        return run_on_files(args)
    _refuse_file_options(args)
    out = output_path(args.out, folder=True)
    config = FederatedIdentificationConfig(
        clients=_counts("1000") if args.clients is None else args.clients,
        experiments=_default(args.experiments, 30), length=_default(args.length, 200),
        noise_db=_default(args.noise_db, 20.0), mechanism=args.mechanism, epsilon=args.epsilon,
        delta=1e-5 if args.delta is None else args.delta,
        alpha=1.5 if args.alpha is None else args.alpha, seeds=_default(args.seeds, 5),
        seed=_default(args.seed, 0), engine=args.engine,
        baselines=_default(args.baselines, ("average", "per_sample")))
    with progress_bar(total=config.seeds, desc="federated identify", unit="seed") as bar:
        result = run_federated_identification(config, progress=lambda s: bar.update(1))
    summary = summarize_identification(result)
    epsilons = result["epsilon"]
    summary.update(clients=list(config.clients), unit=result["unit"],
                   epsilon_per_client={"max": max(epsilons), "min": min(epsilons),
                                       "values": epsilons},
                   delta=result["delta"], noise=result["noise"], config=result["config"])
    with staged_folder(out) as stage:
        write_summary(stage / "summary.json", _finite(summary),
                      title=f"dmdidc federated identify ({config.mechanism}, epsilon = "
                            f"{config.epsilon:g} per client)")
        (stage / "rows.json").write_text(json.dumps(_finite(result["rows"])))
        plot_identification(summary, stage / "delay_error.png",
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
    print(f"wrote {Path(out) / 'summary.json'}, summary.md, rows.json, delay_error.png")
    return 0
