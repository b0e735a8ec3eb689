"""``dmdidc federated ...``: the Ch. 8 federated-learning experiments from the command line.

Wire into the main CLI with ``actions = add_federated_parser(sub)`` on the ``add_subparsers``
object of :mod:`simulations.cli`.  The returned ``actions`` is the ``federated`` group's own
subparsers object: another module adds an action with ``actions.add_parser(name, help=...)``
and ``set_defaults(handler=function)`` on it (the convention of :mod:`simulations.cli`: the
handler takes the parsed ``argparse.Namespace`` and returns an exit code).

Examples
--------
``dmdidc federated experiment --dataset iris --partition expert --trials 100 --out out/iris``
``dmdidc federated experiment --dataset breast_cancer --stagger 1,2,5,10 --rounds 1000 --out o``
``dmdidc federated experiment --dataset synthetic --budget total --total-epsilons 1,4,16 --out o``
"""

from __future__ import annotations

import argparse
from typing import Any

from simulations.cli.atomic import staged_folder, written_files
from simulations.cli.common import output_path, write_table

__all__ = ["add_federated_parser", "run_experiment_command", "ALGORITHM_NAMES"]

_DEFAULT_BUDGETS = (1.0, 2.0, 4.0, 8.0, 16.0)
#: ``simulations.studies.federated_experiments.ALGORITHMS``, spelled out so that building the
#: parser (what ``--help`` does) imports nothing heavy; a test keeps the two equal.
ALGORITHM_NAMES = ("fedinfer", "fedavg", "fedprox", "scaffold", "fednova", "fedlin")


def _numbers(cast: type, what: str):
    """argparse type: comma-separated positive numbers of type ``cast``."""
    def parse(text: str) -> tuple:
        try:
            values = tuple(cast(v) for v in text.split(",") if v.strip())
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected comma-separated {what}; got {text!r}"
                                             ) from exc
        if not values or min(values) <= 0:
            raise argparse.ArgumentTypeError(f"expected {what} > 0; got {text!r}")
        return values
    return parse


_ints = _numbers(int, "integers")
_floats = _numbers(float, "numbers")


def _names(text: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    unknown = sorted(set(names) - set(ALGORITHM_NAMES))
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"algorithms must be among "
                                         f"{','.join(ALGORITHM_NAMES)}; got {text!r}")
    return names


def add_federated_parser(subparsers: Any) -> Any:
    """Register the ``federated`` group and its ``experiment`` action.

    Returns
    -------
    argparse subparsers object
        The group's actions; add more with ``actions.add_parser(...)`` and
        ``set_defaults(handler=...)``.
    """
    group = subparsers.add_parser(
        "federated", help="federated learning: FedInfer and the FedAvg family with local DP",
        description="Federated learning experiments (dissertation Ch. 5, 7, 8).")
    actions = group.add_subparsers(dest="federated_command", required=True)
    exp = actions.add_parser(
        "experiment",
        help="the Ch. 8 experiments: accuracy per round with bands, composed epsilon",
        description="Run FedInfer, FedAvg, FedProx, SCAFFOLD, FedNova and FedLin on a Ch. 8 data "
                    "set over many trials; write summary.json, CSV tables and PNG figures. "
                    "Settings left out take the seed's values for the data set.")
    exp.add_argument("--dataset", required=True, choices=("synthetic", "iris", "breast_cancer"))
    exp.add_argument("--partition", choices=("iid", "expert"), default="iid",
                     help="iid, or expert: client c holds class c (iris) (default: iid)")
    exp.add_argument("--stagger", type=_ints, default=None,
                     help="stagger rates gamma_k, e.g. 1,2,5,10 (rounds then count ticks)")
    exp.add_argument("--rounds", type=int, default=None,
                     help="rounds (ticks with --stagger); default: the seed's for the data set")
    exp.add_argument("--trials", type=int, default=100, help="independent trials (default: 100)")
    exp.add_argument("--budget", choices=("per-update", "total"), default="per-update",
                     help="per-update: every update (epsilon, delta)-DP as in the seed; total: "
                          "every client's composed epsilon after the run fixed "
                          "(default: per-update)")
    exp.add_argument("--total-epsilons", type=_floats, default=None,
                     help="composed budgets of the total-budget sweep, --budget total only "
                          "(default: 1,2,4,8,16)")
    exp.add_argument("--epsilon", type=float, default=None,
                     help="per-update epsilon (default: the seed's)")
    exp.add_argument("--delta", type=float, default=None,
                     help="delta of every release and report (default: the seed's)")
    exp.add_argument("--no-privacy", action="store_true",
                     help="no noise at all (the seed's Fig. 8.2)")
    exp.add_argument("--noise", choices=("gaussian", "laplace", "sas"), default="gaussian",
                     help="release noise, Gaussian as in the seed (default: gaussian)")
    exp.add_argument("--alpha", type=float, default=None,
                     help="SaS index, --noise sas only (default: 1.5)")
    exp.add_argument("--local-steps", type=int, default=None,
                     help="local gradient steps per round (default: the data set's)")
    exp.add_argument("--lr", type=float, default=None,
                     help="local step size of the gradient methods (default: the data set's)")
    exp.add_argument("--algorithms", type=_names, default=None,
                     help="comma-separated subset of " + ",".join(ALGORITHM_NAMES)
                     + " (default: all)")
    exp.add_argument("--seed", type=int, default=0, help="trial t uses seed + t (default: 0)")
    exp.add_argument("--out", required=True, help="output folder (files are overwritten)")
    exp.set_defaults(handler=run_experiment_command)
    return actions


def _check(args: argparse.Namespace) -> None:
    from _toolbox.errors import ParameterError
    if args.trials < 1:
        raise ParameterError(f"--trials must be >= 1; got {args.trials}")
    if args.rounds is not None and args.rounds < 1:
        raise ParameterError(f"--rounds must be >= 1; got {args.rounds}")
    if args.no_privacy:
        from simulations.cli.common import refuse_without_privacy

        refuse_without_privacy(args, {"budget": "per-update", "total_epsilons": None,
                                      "epsilon": None, "delta": None, "noise": "gaussian",
                                      "alpha": None})
    if args.noise != "sas" and args.alpha is not None:
        raise ParameterError("--alpha only applies to --noise sas")
    if args.budget == "per-update" and args.total_epsilons is not None:
        raise ParameterError("--total-epsilons only applies to --budget total")


def run_experiment_command(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc federated experiment``."""
    from simulations.cli.common import progress_bar
    from simulations.cli.terms import warn
    from simulations.studies.federated import (
        run_budget_sweep,
        run_experiment,
        write_budget_sweep,
        write_experiment,
    )
    from simulations.studies.federated_experiments import ExperimentConfig, delta_note

    _check(args)
    out = output_path(args.out, folder=True)
    if args.algorithms is None:
        args.algorithms = ALGORITHM_NAMES
    config = ExperimentConfig(args.dataset, partition=args.partition, stagger=args.stagger,
                              rounds=args.rounds, privacy=not args.no_privacy,
                              noise=args.noise,
                              alpha=1.5 if args.alpha is None else args.alpha,
                              epsilon=args.epsilon, delta=args.delta,
                              local_steps=args.local_steps, lr=args.lr)
    note = delta_note(config, args.seed)
    if note:
        warn(note, args)
    budgets = ((args.total_epsilons or _DEFAULT_BUDGETS) if args.budget == "total"
               else (None,))
    total = args.trials * len(args.algorithms) * len(budgets)
    with progress_bar(total=total, desc=f"federated {args.dataset}", unit="run") as bar:
        def step(name: str) -> None:
            bar.set_postfix_str(name)
            bar.update(1)
        with staged_folder(out) as stage:
            if args.budget == "total":
                sweep = run_budget_sweep(config, budgets, trials=args.trials, seed=args.seed,
                                         algorithms=args.algorithms, progress=step)
                summary = write_budget_sweep(sweep, stage)
            else:
                result = run_experiment(config, trials=args.trials, seed=args.seed,
                                        algorithms=args.algorithms, progress=step)
                summary = write_experiment(result, stage)
            table = _table(summary, args)
            write_table(stage / "summary.md", table,
                        title=f"dmdidc federated experiment ({args.dataset})")
            names = written_files(stage)
    print(table)
    print(f"wrote {out}/: {', '.join(names)}")     # the CSVs and the figure too
    return 0


def _table(summary: dict[str, Any], args: argparse.Namespace) -> str:
    names = [n for n in args.algorithms if n in summary]
    if args.budget == "total":
        lines = ["total epsilon  " + "  ".join(f"{n:>9}" for n in names)]
        for i, b in enumerate(summary["total_epsilon"]):
            lines.append(f"{b:13g}  " + "  ".join(f"{summary[n]['final_accuracy'][i]:9.3f}"
                                                  for n in names))
        return "\n".join(lines)
    lines = [f"{'algorithm':>10}  final accuracy  composed epsilon (max client)"]
    for n in names:
        eps = summary[n]["epsilon_composed"]
        lines.append(f"{n:>10}  {summary[n]['final_accuracy']:14.3f}  "
                     f"{max(eps) if eps else 0.0:.3g}")
    lines.append(f"{'central':>10}  {summary['centralized_accuracy']:14.3f}  (no privacy)")
    return "\n".join(lines)
