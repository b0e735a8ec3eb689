"""The Ch. 8 federated experiments: many trials, accuracy curves with bands, composed privacy.

:func:`run_experiment` runs every algorithm of :mod:`simulations.studies.federated_experiments` on
``trials`` independent trials (data split, kernel basis, noise) through the numpy reference
runtime and collects the test accuracy after every round (or tick, under stagger) and each
client's composed epsilon.  :func:`run_budget_sweep` gives the equal-total-budget view (final
accuracy against the composed epsilon every client ends with).  :func:`write_experiment` /
:func:`write_budget_sweep` write ``summary.json``, CSV tables and PNG figures.

References
----------
Seed Ch. 8 (Figs. 8.2-8.8, the printed final accuracies in Secs. 8.3-8.5).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privacy.federated.results import SEEDED_NOISE_NOTE
from privacy.federated.runner import run_async, run_sync
from simulations.studies.federated_experiments import (
    ALGORITHMS,
    Evaluator,
    ExperimentConfig,
    build_trial,
    schedule,
)

__all__ = ["AlgorithmCurves", "ExperimentResult", "run_experiment", "run_budget_sweep",
           "write_experiment", "write_budget_sweep", "SEED_REPORTED"]

#: Final accuracies the seed prints (Secs. 8.3-8.5); figures without printed values are absent.
SEED_REPORTED: dict[str, dict[str, str]] = {
    "synthetic": {"scaffold": "~80 % (peak, Fig. 8.3)", "fedlin": "~80 % (peak, Fig. 8.3)",
                  "fedinfer": "converges to the optimum (Fig. 8.3)"},
    "iris-iid": {"fedinfer": "globally optimal (Fig. 8.5)",
                 "fedavg": "sub-optimal (Fig. 8.5)"},
    "iris-expert": {"fedavg": "67 %", "scaffold": "85 %", "fedlin": "89 %",
                    "fedinfer": "centralized accuracy (Fig. 8.6)"},
    "breast_cancer": {"fedinfer": "95 % after 200 iterations", "fedavg": "91 %",
                      "scaffold": "91 %", "fedlin": "91 %"},
    "breast_cancer-stagger": {"fedinfer": "> 90 % quickly (Fig. 8.8)",
                              "fedlin": "90 % only after 1000 iterations"},
}

_STYLE = {"fedinfer": ("tab:blue", "o"), "fedavg": ("tab:orange", "x"),
          "fedprox": ("tab:purple", "s"), "scaffold": ("goldenrod", ">"),
          "fednova": ("tab:brown", "d"), "fedlin": ("tab:green", "^")}


@dataclass(frozen=True)
class AlgorithmCurves:
    """One algorithm over all trials.

    Attributes
    ----------
    accuracy : ndarray, shape (trials, steps)
        Test accuracy after each round (ticks under stagger).
    epsilon : ndarray, shape (steps, clients)
        Composed epsilon of each client after each step (upper bound; identical across trials
        because every trial releases the same number of times).
    final_epsilon : ndarray, shape (clients,)
        Exact composed epsilon after the last step.
    epsilon_per_update : float or None
        Epsilon of one update (the client's first release group) at the run's delta.
    noise_scale : list of float
        Each client's noise scale (sigma, b or gamma).
    """

    name: str
    accuracy: np.ndarray
    epsilon: np.ndarray
    final_epsilon: np.ndarray
    epsilon_per_update: float | None
    noise_scale: list[float]

    @property
    def final_accuracy(self) -> float:
        return float(np.mean(self.accuracy[:, -1]))


@dataclass(frozen=True)
class ExperimentResult:
    config: ExperimentConfig
    trials: int
    steps: np.ndarray
    curves: dict[str, AlgorithmCurves]
    centralized: float


def _run_one(name: str, trial, seed: int) -> tuple[np.ndarray, Any]:
    """Accuracy per step (round, or tick under stagger) and the run result."""
    algo = trial.algorithms[name]
    evaluator = Evaluator(trial.model, trial.data.X_test, trial.data.y_test)
    plan = schedule(trial.config, name)
    data = trial.data.clients
    if plan["mode"] == "async":
        result = run_async(algo, data, stagger=plan["stagger"], ticks=plan["ticks"], seed=seed,
                           evaluate=evaluator)
        return result.metric("accuracy"), result
    result = run_sync(algo, data, rounds=plan["rounds"], seed=seed, network=plan["network"],
                      evaluate=evaluator)
    accuracy = result.metric("accuracy")
    if trial.config.stagger is None:
        return accuracy, result
    times = np.array([r.time for r in result.history])
    ticks = np.arange(1, trial.config.rounds + 1)
    initial = evaluator(algo.model(algo.init_server_state(len(data), seed)))["accuracy"]
    index = np.searchsorted(times, ticks, side="right") - 1
    return np.where(index >= 0, accuracy[np.maximum(index, 0)], initial), result


def _per_update(algo: Any, name: str) -> tuple[float | None, list[float]]:
    dps = [algo.client_dp(k) for k in range(algo.num_clients)]
    if dps[0] is None:
        return None, []
    per_update = 2 if name == "fedlin" else 1
    return dps[0].epsilon(per_update), [dp.scale for dp in dps]


def _steps_epsilon(result: Any, config: ExperimentConfig) -> np.ndarray:
    eps = result.epsilon_history()
    if config.stagger is None or eps.shape[1] == 0 or len(eps) == config.rounds:
        return eps
    times = np.array([r.time for r in result.history])
    index = np.searchsorted(times, np.arange(1, config.rounds + 1), side="right") - 1
    return np.where(index[:, None] >= 0, eps[np.maximum(index, 0)], 0.0)


def run_experiment(config: ExperimentConfig, *, trials: int = 100, seed: int = 0,
                   algorithms: Sequence[str] = ALGORITHMS,
                   progress: Callable[[str], None] | None = None) -> ExperimentResult:
    """Run ``trials`` trials of every algorithm.

    Trial ``t`` uses seed ``seed + t`` for its data split, kernel basis and noise, the same for
    every algorithm (paired comparison).
    """
    accuracy: dict[str, list[np.ndarray]] = {name: [] for name in algorithms}
    first: dict[str, Any] = {}
    central = []
    for t in range(trials):
        trial = build_trial(config, seed + t, tuple(algorithms))
        X, y = trial.data.pooled()
        central.append(Evaluator(trial.model, trial.data.X_test, trial.data.y_test).accuracy(
            trial.model.centralized(X, y)))
        for name in algorithms:
            curve, result = _run_one(name, trial, seed + t)
            accuracy[name].append(curve)
            first.setdefault(name, (trial.algorithms[name], result))
            if progress is not None:
                progress(name)
    curves = {}
    for name in algorithms:
        algo, result = first[name]
        per_update, scales = _per_update(algo, name)
        curves[name] = AlgorithmCurves(name, np.array(accuracy[name]),
                                       _steps_epsilon(result, config), result.final_epsilon(),
                                       per_update, scales)
    steps = np.arange(1, next(iter(curves.values())).accuracy.shape[1] + 1)
    return ExperimentResult(config, trials, steps, curves, float(np.mean(central)))


def run_budget_sweep(config: ExperimentConfig, budgets: Sequence[float], *, trials: int = 20,
                     seed: int = 0, algorithms: Sequence[str] = ALGORITHMS,
                     progress: Callable[[str], None] | None = None
                     ) -> dict[float, ExperimentResult]:
    """Equal total budget: each algorithm calibrated so every client ends at <= each budget."""
    return {float(b): run_experiment(config.replace(budget="total", total_epsilon=float(b)),
                                     trials=trials, seed=seed, algorithms=algorithms,
                                     progress=progress) for b in budgets}


# ------------------------------------------------------------------------------- outputs
def _key(config: ExperimentConfig) -> str:
    if config.dataset == "iris":
        return f"iris-{config.partition}"
    if config.dataset == "breast_cancer" and config.stagger is not None:
        return "breast_cancer-stagger"
    return config.dataset


def _settings(config: ExperimentConfig, trials: int) -> dict[str, Any]:
    return {**config.to_config(), "trials": trials}


def _band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return values.mean(0), np.percentile(values, 10, axis=0), np.percentile(values, 90, axis=0)


def _figure(figsize: tuple[float, float]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _replace_notice(paths: Sequence[Path]) -> list[str]:
    return [str(p) for p in paths if p.exists()]


def write_experiment(result: ExperimentResult, out: str | Path) -> dict[str, Any]:
    """Write ``summary.json``, ``curves.csv``, ``epsilon.csv`` and ``accuracy.png``.

    Returns the summary dict, with ``"overwritten"`` listing files that existed before.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "summary.json", out / "curves.csv", out / "epsilon.csv",
             out / "accuracy.png"]
    overwritten = _replace_notice(files)
    config = result.config
    summary: dict[str, Any] = {
        "settings": _settings(config, result.trials),
        "delta": config.delta,
        "epsilon_per_update": config.epsilon if config.privacy else None,
        "centralized_accuracy": result.centralized,
        "seed_reported": SEED_REPORTED.get(_key(config), {}),
        "privacy_unit": "one record of a client's data set (add/remove), local DP",
        "noise": SEEDED_NOISE_NOTE,
    }
    for name, c in result.curves.items():
        summary[name] = {
            "final_accuracy": c.final_accuracy,
            "final_accuracy_p10_p90": [float(np.percentile(c.accuracy[:, -1], 10)),
                                       float(np.percentile(c.accuracy[:, -1], 90))],
            "epsilon_composed": c.final_epsilon.tolist(),
            "epsilon_per_update": c.epsilon_per_update,
            "noise_scale": c.noise_scale,
        }
    unit = "tick" if config.stagger is not None else "round"
    rows = [f"{unit},algorithm,mean,p10,p90"]
    for name, c in result.curves.items():
        mean, lo, hi = _band(c.accuracy)
        rows += [f"{s},{name},{m:.6f},{a:.6f},{b:.6f}"
                 for s, m, a, b in zip(result.steps, mean, lo, hi, strict=True)]
    (out / "curves.csv").write_text("\n".join(rows) + "\n")
    rows = [f"{unit},algorithm,client,epsilon"]
    for name, c in result.curves.items():
        for i, s in enumerate(result.steps):
            rows += [f"{s},{name},{k},{e:.6g}" for k, e in enumerate(c.epsilon[i])]
    (out / "epsilon.csv").write_text("\n".join(rows) + "\n")
    _plot_curves(result, out / "accuracy.png")
    summary["overwritten"] = overwritten
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _plot_curves(result: ExperimentResult, path: Path) -> None:
    config = result.config
    private = config.privacy and any(c.epsilon.size for c in result.curves.values())
    fig = _figure((11, 4.2) if private else (6.5, 4.2))
    axes = fig.subplots(1, 2) if private else [fig.add_subplot()]
    unit = "ticks" if config.stagger is not None else "communication rounds"
    every = max(1, len(result.steps) // 12)
    for name, c in result.curves.items():
        color, marker = _STYLE.get(name, ("black", "."))
        mean, lo, hi = _band(c.accuracy)
        axes[0].plot(result.steps, mean, color=color, marker=marker, markevery=every,
                     label=f"{name} ({c.final_accuracy:.1%})")
        axes[0].fill_between(result.steps, lo, hi, color=color, alpha=0.12)
        if private:
            axes[1].plot(result.steps, c.epsilon.max(axis=1), color=color, marker=marker,
                         markevery=every, label=name)
    axes[0].axhline(result.centralized, color="gray", ls=":", label="centralized")
    axes[0].set_xlabel(unit)
    axes[0].set_ylabel(f"test accuracy (mean, 10-90 % of {result.trials} trials)")
    title = f"{config.dataset} ({config.partition}, {config.clients} clients"
    title += f", stagger {list(config.stagger)})" if config.stagger else ")"
    if config.privacy and config.budget == "per-update":
        title += f", per-update ({config.epsilon:g}, {config.delta:g})"
    axes[0].set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    if private:
        axes[1].set_yscale("log")
        axes[1].set_xlabel(unit)
        axes[1].set_ylabel(f"composed epsilon (worst client, delta = {config.delta:g})")
        axes[1].set_title("what the per-update matching costs in total", fontsize=9)
        axes[1].legend(fontsize=7)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_budget_sweep(sweep: dict[float, ExperimentResult], out: str | Path
                       ) -> dict[str, Any]:
    """Equal-total-budget outputs: ``summary.json``, ``budget.csv``, ``accuracy_vs_epsilon.png``.

    ``summary[algorithm]["final_accuracy"]`` and ``["epsilon_composed"]`` are lists aligned
    with ``summary["total_epsilon"]``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "summary.json", out / "budget.csv", out / "accuracy_vs_epsilon.png"]
    overwritten = _replace_notice(files)
    budgets = sorted(sweep)
    any_result = sweep[budgets[0]]
    config = any_result.config
    summary: dict[str, Any] = {
        "settings": {k: v for k, v in _settings(config, any_result.trials).items()
                     if k != "total_epsilon"},
        "delta": config.delta, "epsilon_per_update": None, "total_epsilon": budgets,
        "centralized_accuracy": any_result.centralized,
        "privacy_unit": "one record of a client's data set (add/remove), local DP",
        "noise": SEEDED_NOISE_NOTE,
    }
    rows = ["total_epsilon,algorithm,mean,p10,p90,max_client_epsilon,epsilon_per_update"]
    for name in any_result.curves:
        entry = {"final_accuracy": [], "epsilon_composed": [], "epsilon_per_update": []}
        for b in budgets:
            c = sweep[b].curves[name]
            final = c.accuracy[:, -1]
            entry["final_accuracy"].append(float(final.mean()))
            entry["epsilon_composed"].append(c.final_epsilon.tolist())
            entry["epsilon_per_update"].append(c.epsilon_per_update)
            rows.append(f"{b:g},{name},{final.mean():.6f},{np.percentile(final, 10):.6f},"
                        f"{np.percentile(final, 90):.6f},{c.final_epsilon.max():.6g},"
                        f"{c.epsilon_per_update:.6g}")
        summary[name] = entry
    (out / "budget.csv").write_text("\n".join(rows) + "\n")
    fig = _figure((6.5, 4.3))
    ax = fig.add_subplot()
    for name in any_result.curves:
        color, marker = _STYLE.get(name, ("black", "."))
        finals = np.array([sweep[b].curves[name].accuracy[:, -1] for b in budgets])
        ax.plot(budgets, finals.mean(1), color=color, marker=marker, label=name)
        ax.fill_between(budgets, np.percentile(finals, 10, 1), np.percentile(finals, 90, 1),
                        color=color, alpha=0.12)
    ax.axhline(any_result.centralized, color="gray", ls=":", label="centralized, no privacy")
    ax.set_xscale("log")
    ax.set_xlabel(f"composed epsilon of every client after the run (delta = {config.delta:g})")
    ax.set_ylabel("final test accuracy")
    ax.set_title(f"{config.dataset} ({config.partition}): equal total budget, "
                 f"{config.rounds} {'ticks' if config.stagger else 'rounds'}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "accuracy_vs_epsilon.png", dpi=110)
    summary["overwritten"] = overwritten
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary
