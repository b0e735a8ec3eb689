"""``dmdidc privacy dpsgd`` and ``dmdidc privacy audit``: the DP-SGD study and the DP audits.

Registered in the ``privacy`` command group by :func:`add_dpsgd_actions`.

Examples
--------
``dmdidc privacy dpsgd --dataset digits --out out/dpsgd_digits``
``dmdidc privacy dpsgd --dataset breast_cancer --epsilons 0.5 1 2 --seeds 30 --out DIR``
``dmdidc privacy dpsgd --dataset digits --tune --out DIR``  (grid search on the validation split)
``dmdidc privacy audit --out out/audit``
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

from simulations.cli.atomic import staged_folder
from simulations.cli.common import _bound, _bounded, _count, _seed, write_table

__all__ = ["add_dpsgd_actions", "run_dpsgd_action", "DEFAULT_HYPERPARAMETERS", "TUNING_GRID"]

#: Hyperparameters used when none are given: the result of ``--tune`` (Gaussian noise,
#: epsilon 2, validation split, 5 seeds per candidate) on each dataset/model (README); other
#: models fall back to the study's defaults.
DEFAULT_HYPERPARAMETERS = {
    ("digits", "softmax"): dict(clip_norm=0.5, learning_rate=0.3, sampling_rate=0.02,
                                epochs=30.0),
    ("digits", "mlp"): dict(clip_norm=0.5, learning_rate=1.0, sampling_rate=0.1, epochs=30.0),
    ("breast_cancer", "logistic"): dict(clip_norm=0.5, learning_rate=0.3, sampling_rate=0.02,
                                        epochs=30.0),
}

#: Candidates of ``--tune``.
TUNING_GRID = {"clip_norm": [0.5, 1.0, 2.0], "learning_rate": [0.3, 1.0, 3.0],
               "sampling_rate": [0.02, 0.05, 0.1], "epochs": [10.0, 30.0]}

_HYPER = ("clip_norm", "learning_rate", "sampling_rate", "epochs")


def add_dpsgd_actions(actions: Any) -> None:
    """Add the ``dpsgd`` and ``audit`` actions to the ``privacy`` subparsers object."""
    study = actions.add_parser(
        "dpsgd",
        help="DP-SGD accuracy vs epsilon: Gaussian vs SaS noise at equal privacy",
        description="Train DP-SGD (numpy; per-example clipping, Poisson sampling) with Gaussian "
                    "and SaS noise calibrated to each target epsilon; write summary.json, "
                    "runs.csv and accuracy_vs_epsilon.png.")
    study.add_argument("--dataset", choices=("digits", "breast_cancer"), default="digits",
                       help="scikit-learn dataset (offline)")
    study.add_argument("--model", choices=("logistic", "softmax", "mlp"), default=None,
                       help="default: softmax for digits, logistic for breast_cancer")
    study.add_argument("--out", required=True, help="output directory")
    study.add_argument("--epsilons", type=_bound, nargs="+", default=[0.5, 1.0, 2.0, 4.0, 8.0],
                       help="target composed epsilons of one model's training run (each seed; "
                            "summary.json also gives epsilon_all_seeds)")
    study.add_argument("--noises", nargs="+",
                       default=["gaussian", "sas_1.999", "sas_1.95", "sas_1.9", "sas_1.5"],
                       help="'gaussian' or 'sas_<alpha>' (alpha in [1, 2))")
    study.add_argument("--scalar-accounting-alphas", type=_bound, nargs="*", default=[],
                       help="also run SaS with the seed's scalar accountant (an over-claim "
                            "for vectors; reported with the certified epsilon); none to skip")
    study.add_argument("--seeds", type=_bounded(int, 2), default=20,
                       help="training seeds per cell (at least 2: the confidence intervals)")
    study.add_argument("--delta", type=_bound, default=1e-5, help="target delta")
    for name in _HYPER:
        study.add_argument("--" + name.replace("_", "-"), type=_bound, default=None,
                           help="default: the tuned value for the dataset/model")
    study.add_argument("--hidden", type=_count, default=32, help="hidden units of the MLP")
    study.add_argument("--split-seed", type=_seed, default=0, help="train/val/test split seed")
    study.add_argument("--seed", type=_seed, default=0, help="training seed")
    study.add_argument("--tune", action="store_true",
                       help="grid-search the hyperparameters not given on the validation split "
                            "first (one shared set for every noise)")
    study.add_argument("--tune-noise", default="gaussian", help="noise used for tuning")
    study.add_argument("--tune-epsilon", type=_bound, default=2.0, help="epsilon for tuning")
    study.add_argument("--no-progress", action="store_true", help="hide progress bars")

    aud = actions.add_parser(
        "audit",
        help="empirical lower bounds on epsilon vs the accountant's claims",
        description="Audit Laplace/Gaussian/SaS mechanisms, DP-SGD (canaries) and the "
                    "privatized DMDidc sufficient statistics, including "
                    "deliberately mis-calibrated ones; write summary.json ('audits') and "
                    "audits.png.")
    aud.add_argument("--out", required=True, help="output directory")
    aud.add_argument("--which", nargs="+", default=None,
                     help="audits to run (default: all; an unknown name is refused with the "
                          "list of choices; docs/auditing.md gives each table row's name)")
    aud.add_argument("--samples", type=_count, default=1_000_000,
                     help="outputs per neighbour for scalar mechanisms")
    aud.add_argument("--vector-samples", type=_count, default=400_000,
                     help="outputs per neighbour for the 16-dimensional SaS release")
    aud.add_argument("--runs", type=_count, default=20_000, help="DP-SGD runs per neighbour")
    aud.add_argument("--statistics-samples", type=_count, default=20_000,
                     help="privatized sufficient statistics per neighbour (one privatize call "
                          "each, ~0.3 ms)")
    aud.add_argument("--confidence", type=float, default=0.95,
                     help="probability that each lower bound holds")
    aud.add_argument("--seed", type=_seed, default=0, help="random seed")
    aud.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _progress(args: argparse.Namespace, desc: str):
    if args.no_progress:
        return None
    from simulations.cli.common import progress_bar
    return lambda items: progress_bar(items, desc=desc)


def _prepare_out(out: str) -> Path:
    from simulations.cli.common import output_path

    return output_path(out, folder=True)


def _write_json(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, indent=1))


def _run_study(args: argparse.Namespace) -> int:
    from _toolbox.errors import ParameterError
    from simulations.cli.common import given_options
    from simulations.studies.dpsgd import StudyConfig, plot_study, run_study, tune_hyperparameters

    model = args.model or ("softmax" if args.dataset == "digits" else "logistic")
    # every option acts or is refused: these would be silently ignored
    unused = given_options(args, {"tune_noise": "gaussian", "tune_epsilon": 2.0}) \
        if not args.tune else []
    if unused:
        raise ParameterError(f"{', '.join(unused)} only act with --tune (the grid search on "
                             f"the validation split): add --tune or leave "
                             f"{'them' if len(unused) > 1 else 'it'} out")
    if model != "mlp" and given_options(args, {"hidden": 32}):
        raise ParameterError(f"--hidden {args.hidden} sets the hidden units of the MLP; the "
                             f"{model} model has none: add --model mlp or leave it out")
    given = {name: getattr(args, name) for name in _HYPER if getattr(args, name) is not None}
    defaults = DEFAULT_HYPERPARAMETERS.get((args.dataset, model), {})
    config = StudyConfig(
        dataset=args.dataset, model=model, epsilons=tuple(args.epsilons),
        noises=tuple(args.noises), scalar_accounting_alphas=tuple(args.scalar_accounting_alphas),
        seeds=args.seeds, delta=args.delta, hidden=args.hidden, split_seed=args.split_seed,
        seed=args.seed, **{**defaults, **given})
    out = _prepare_out(args.out)
    tuning = None
    if args.tune:
        grid = {k: v for k, v in TUNING_GRID.items() if k not in given}
        config, scores = tune_hyperparameters(config, epsilon=args.tune_epsilon,
                                              noise=args.tune_noise, grid=grid,
                                              progress=_progress(args, "tuning"))
        tuning = {"noise": args.tune_noise, "epsilon": args.tune_epsilon, "grid": grid,
                  "chosen": {k: getattr(config, k) for k in _HYPER}, "candidates": scores}
    summary = run_study(config, progress=_progress(args, "dpsgd"))
    summary["tuning"] = tuning
    summary["figures"] = ["accuracy_vs_epsilon.png"]
    table = _study_table(summary)
    with staged_folder(out) as stage:
        plot_study(summary, stage / "accuracy_vs_epsilon.png")
        _write_json(stage / "summary.json", summary)
        write_table(stage / "summary.md", table, title="dmdidc privacy dpsgd")
        with open(stage / "runs.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(summary["runs"][0]))
            writer.writeheader()
            writer.writerows(summary["runs"])
    print(table)
    return 0


#: A certified epsilon this far above its column's target is printed in its cell.
_CERTIFIED_RTOL = 0.01


def _study_table(summary: dict) -> str:
    """Test accuracy (%, +- the 95 % interval) per noise and target epsilon; a row whose
    certified epsilon is above the column's target (the scalar-accounting rows: their
    calibration claims the target, the accountant certifies more) shows it in the cell.

    Examples
    --------
    >>> cell = {"mean": 0.8, "ci95_high": 0.81}
    >>> print(_study_table({"epsilons": [1.0], "accuracy": {"gaussian": {"1": cell},
    ...     "sas_1.9_scalar_accounting": {"1": cell}}, "epsilon_composed": {
    ...     "gaussian": {"1": 0.9999}, "sas_1.9_scalar_accounting": {"1": 1.49}}}))
    ...                                 # doctest: +NORMALIZE_WHITESPACE
    noise     target eps=1
    gaussian  80.00 +-  1.00
    sas_1.9_scalar_accounting  80.00 +-  1.00 (certified eps 1.49)
    """
    eps = [f"{e:g}" for e in summary["epsilons"]]
    rows = []
    for label, cells in summary["accuracy"].items():
        certified = summary.get("epsilon_composed", {}).get(label, {})
        row = []
        for e in eps:
            c = cells[e]
            text = f"{100 * c['mean']:7.2f} +- {100 * (c['ci95_high'] - c['mean']):5.2f}"
            if certified.get(e, 0.0) > float(e) * (1 + _CERTIFIED_RTOL):
                text += f" (certified eps {certified[e]:.3g})"
            row.append(text)
        rows.append((label, row))
    width = max([17] + [len(t) for _, row in rows for t in row])
    lines = [f"{'noise':>30} " + " ".join(f"{'target eps=' + e:>{width}}" for e in eps)]
    lines += [f"{label:>30} " + " ".join(f"{t:>{width}}" for t in row) for label, row in rows]
    if "non_private" in summary:
        lines.append(f"{'no noise (clipped)':>30} "
                     f"{100 * summary['non_private']['accuracy']['mean']:7.2f}")
    return "\n".join(lines)


def _run_audit(args: argparse.Namespace) -> int:
    from simulations.studies.audit import AUDIT_NAMES, plot_audits, run_audits

    records = run_audits(names=args.which or AUDIT_NAMES, samples=args.samples,
                         vector_samples=args.vector_samples, runs=args.runs,
                         statistics_samples=args.statistics_samples,
                         confidence=args.confidence, rng=args.seed,
                         progress=_progress(args, "audits"))
    out = _prepare_out(args.out)
    lines = [f"{'audit':>52} {'delta':>7} {'claimed':>8} {'lower bd':>8}  result"]
    for r in records:
        if r["violation"]:
            flag = "VIOLATION" + ("" if r["claim_known_wrong"] else " (UNEXPECTED: a bug?)")
        else:
            flag = "not detected (claim known wrong)" if r["claim_known_wrong"] else "ok"
        lines.append(f"{r['name']:>52} {r['delta']:7.0e} {r['epsilon_claimed']:8.3f} "
                     f"{r['epsilon_lower_bound']:8.3f}  {flag}")
    with staged_folder(out) as stage:
        plot_audits(records, stage / "audits.png")
        _write_json(stage / "summary.json", {"audits": records, "figures": ["audits.png"]})
        write_table(stage / "summary.md", "\n".join(lines), title="dmdidc privacy audit")
    print("\n".join(lines))
    return 0


def run_dpsgd_action(args: argparse.Namespace) -> int:
    """Handler of ``privacy dpsgd`` and ``privacy audit``."""
    if args.privacy_command == "dpsgd":
        return _run_study(args)
    return _run_audit(args)
