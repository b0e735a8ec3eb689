"""``dmdidc federated esn-attack`` and ``dmdidc federated sifl``: the seed's attack studies.

:func:`add_seed_fl_actions` adds the two actions to the ``add_subparsers`` object of a
``federated`` command group; each action sets ``handler`` (the convention of
:mod:`simulations.cli`).

Examples
--------
``dmdidc federated esn-attack --out out/esn``  (Figs. 6.4-6.7 and summary.json, ~5 min)
``dmdidc federated esn-attack --out out/esn --trials 3 --gd-iterations 2000 --unit step``
``dmdidc federated sifl --out out/sifl``  (exactness, NbAFL comparison, attacks, ~5 min)
``dmdidc federated sifl --out out/sifl --dataset breast_cancer --models logistic``
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simulations.cli.atomic import staged_folder
from simulations.cli.common import output_path, summary_table, write_table

__all__ = ["add_seed_fl_actions", "run_esn_attack", "run_sifl_study_cli"]


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    return value


def add_seed_fl_actions(actions: Any) -> None:
    """Add ``esn-attack`` and ``sifl`` to ``actions`` (an ``add_subparsers`` object)."""
    esn = actions.add_parser(
        "esn-attack",
        help="reconstruction attack on federated echo state networks and its DP defence "
             "(seed Ch. 6, Figs. 6.4-6.7)")
    esn.add_argument("--out", required=True, help="output folder (figures, summary.json)")
    esn.add_argument("--nodes", type=_positive_int, default=100, help="reservoir size")
    esn.add_argument("--steps", type=_positive_int, default=20, help="input length T")
    esn.add_argument("--trials", type=_positive_int, default=10,
                     help="random adversary starts / noise draws")
    esn.add_argument("--gd-iterations", type=_positive_int, default=10_000,
                     help="iterations of the seed's gradient descent (6.20) and AMSGrad")
    esn.add_argument("--restarts", type=int, default=3,
                     help="random L-BFGS restarts of the strongest attack")
    esn.add_argument("--snr", type=float, default=0.25,
                     help="signal-to-noise power ratio of the defence (0.25 = 1:4)")
    esn.add_argument("--input-bound", type=float, default=5.0,
                     help="clipping bound on |u_t| assumed by the sensitivity")
    esn.add_argument("--unit", choices=("sequence", "step"), default="sequence",
                     help="privacy unit of private_epsilon")
    esn.add_argument("--observations", type=_positive_int, default=1,
                     help="FedInfer releases of the noisy statistics (composed)")
    esn.add_argument("--delta", type=float, default=1e-5, help="delta of private_epsilon")
    esn.add_argument("--seed", type=int, default=0, help="seed of the reservoir and noise")
    esn.set_defaults(handler=run_esn_attack)

    sifl = actions.add_parser(
        "sifl",
        help="immersion-coded FL (SIFL): exactness vs FL, NbAFL baseline, attacks on the codes")
    sifl.add_argument("--out", required=True, help="output folder (figures, summary.json)")
    sifl.add_argument("--dataset", choices=("digits", "breast_cancer"), default="digits",
                      help="scikit-learn data set")
    sifl.add_argument("--models", nargs="+", choices=("logistic", "mlp"),
                      default=["logistic", "mlp"],
                      help="models; the summary's accuracy is for the first")
    sifl.add_argument("--clients", type=_positive_int, default=10,
                      help="clients (IID split of the training set)")
    sifl.add_argument("--rounds", type=_positive_int, default=100,
                      help="rounds of the accuracy comparison and the attacks")
    sifl.add_argument("--exact-rounds", type=_positive_int, default=30,
                      help="rounds of the exactness runs (minibatch local training)")
    sifl.add_argument("--extra-dim", type=_positive_int, default=50,
                      help="n~ - n of the immersion")
    sifl.add_argument("--scales", nargs="+", choices=("unit", "paper"),
                      default=["unit", "paper"], help="code scale presets")
    sifl.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 5.0, 10.0, 20.0],
                      help="NbAFL target epsilons (composed over the rounds)")
    sifl.add_argument("--delta", type=float, default=1e-5, help="delta of the NbAFL epsilons")
    sifl.add_argument("--clip", type=float, default=1.0, help="NbAFL per-example clip norm")
    sifl.add_argument("--nbafl-seeds", type=_positive_int, default=5,
                      help="noise draws per NbAFL epsilon")
    sifl.add_argument("--seed", type=int, default=0, help="seed of splits, codes and noise")
    sifl.set_defaults(handler=run_sifl_study_cli)


def _progress(total: int, desc: str):
    from simulations.cli.common import progress_bar

    bar = progress_bar(total=total, desc=desc, unit="task")

    def tick(message: str) -> None:
        bar.set_postfix_str(message)
        bar.update(1)
    return bar, tick


def run_esn_attack(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc federated esn-attack``."""
    from simulations.studies.esn_attack import (
        ESNStudyConfig,
        plot_esn_study,
        run_esn_study,
        write_esn_study,
    )

    config = ESNStudyConfig(n_nodes=args.nodes, steps=args.steps, trials=args.trials,
                            gd_iterations=args.gd_iterations, restarts=args.restarts,
                            snr=args.snr,
                            input_bound=args.input_bound, unit=args.unit,
                            observations=args.observations, delta=args.delta, seed=args.seed)
    out = output_path(args.out, folder=True)
    bar, tick = _progress(4 + 2 * config.trials, "esn-attack")
    with bar:
        result = run_esn_study(config, progress=tick)
    keys = ("plain_relative_error", "private_relative_error", "private_epsilon",
            "private_delta", "privacy_unit", "noise_sigma", "sensitivity_l2_diameter")
    return _finish(out, "dmdidc federated esn-attack", {k: result["summary"][k] for k in keys},
                   lambda stage: plot_esn_study(result, stage) + write_esn_study(result, stage))


def _finish(out: Path, title: str, shown: dict[str, Any], write) -> int:
    """Write the study's files (``write(stage)`` returns their paths) and ``summary.md``
    atomically into ``out``, print the table and the files."""
    with staged_folder(out) as stage:
        written = [Path(p).name for p in write(stage)]
        write_table(stage / "summary.md", shown, title=title)
    print(summary_table(shown))
    print("wrote " + ", ".join(str(out / name) for name in [*written, "summary.md"]))
    return 0


def run_sifl_study_cli(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc federated sifl``."""
    from simulations.studies.sifl import (
        SIFLStudyConfig,
        plot_sifl_study,
        run_sifl_study,
        write_sifl_study,
    )

    config = SIFLStudyConfig(dataset=args.dataset, models=tuple(args.models),
                             clients=args.clients, rounds=args.rounds,
                             exact_rounds=args.exact_rounds, extra_dim=args.extra_dim,
                             scales=tuple(args.scales), epsilons=tuple(args.epsilons),
                             delta=args.delta, clip=args.clip, nbafl_seeds=args.nbafl_seeds,
                             seed=args.seed)
    out = output_path(args.out, folder=True)
    per_model = 6 * len(config.scales) + 1 + len(config.epsilons)
    bar, tick = _progress(1 + per_model * len(config.models) + len(config.scales), "sifl")
    with bar:
        result = run_sifl_study(config, progress=tick)
    summary = result["summary"]
    shown = {"max_abs_difference_vs_plain": summary["max_abs_difference_vs_plain"],
             "max_abs_difference_vs_plain_by_scale":
                 summary["max_abs_difference_vs_plain_by_scale"],
             "accuracy": summary["accuracy"]}
    return _finish(out, "dmdidc federated sifl", shown,
                   lambda stage: plot_sifl_study(result, stage) + [write_sifl_study(result,
                                                                                    stage)])
