"""SIFL vs standard FL vs NbAFL on scikit-learn data, and what the SIFL encodings leak.

Three parts (seed ``004_...``):

1. Exactness: decoded SIFL (Algorithms 1 and 2) against plain FL with the same minibatches, for
   softmax regression and a small MLP, with SGD, momentum and Adam on the clients, with unit-scale
   codes and with the paper's scales (``||Pi1|| ~ 1e-3``, ``||N1|| ~ 1e3``, noise std 1e3).
2. Accuracy: FL, SIFL M1/M2 (equal to FL), clipped FL and NbAFL at epsilon in {1, 5, 10, 20}
   (one clipped full-batch step per round, noise calibrated by the accountant for the composed
   (epsilon, delta) over the rounds).
3. Privacy of the encodings: the paper's per-element epsilon (Theorem 2) next to the aggregator's
   difference attack, the eavesdropper's noise-subspace attack and the server's attack on
   Algorithm 2 (:mod:`privacy.federated.sifl_attacks`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.plotting import new_figure, save_figure
from _toolbox.validation import check_integer, check_positive
from privacy.federated.sifl import (
    AggregatorCode,
    ClientData,
    ImmersionCode,
    nbafl_noise_multiplier,
    run_nbafl,
    run_plain_fl,
    run_sifl,
)
from privacy.federated.sifl_attacks import (
    client_difference_attack,
    element_epsilon,
    noise_subspace_attack,
    server_scale_attack,
)
from privacy.federated.sifl_models import MLP, OPTIMIZERS, LocalOptimizer, SoftmaxRegression

__all__ = ["SIFLStudyConfig", "CODE_SCALES", "load_federated_data", "run_sifl_study",
           "plot_sifl_study", "write_sifl_study"]

#: (pi_scale, kernel_scale, noise_std) presets: unit scales, and the paper's Sec. 6.1 values.
CODE_SCALES = {"unit": (1.0, 1.0, 1.0), "paper": (1e-3, 1e3, 1e3)}
DATASETS = ("digits", "breast_cancer")
MODELS = ("logistic", "mlp")


@dataclass(frozen=True)
class SIFLStudyConfig:
    """Settings of the SIFL study.

    Attributes
    ----------
    dataset : {"digits", "breast_cancer"}
    models : tuple of {"logistic", "mlp"}
        ``accuracy`` in the summary is for the first.
    hidden : int
        MLP hidden units.
    clients : int
        IID split of the training set.
    rounds : int
        Rounds of the accuracy comparison (one full-batch SGD step per round).
    learning_rate : float
        Its step size.
    exact_rounds, local_steps, batch_size
        Schedule of the exactness runs (minibatch local training).
    learning_rates : tuple of float
        Step sizes of SGD, momentum (0.9) and Adam in the exactness runs.
    extra_dim : int
        ``n~ - n`` of the immersion.
    scales : tuple of str
        Code scale presets (``CODE_SCALES``); ``max_abs_difference_vs_plain`` is for the first.
    epsilons, delta, clip, nbafl_seeds
        NbAFL baseline.
    paper_clip : float
        ``C`` of the paper's sensitivity ``2 C / |D_i|`` used for the per-element epsilon.
    seed : int
    """

    dataset: str = "digits"
    models: tuple[str, ...] = MODELS
    hidden: int = 16
    clients: int = 10
    rounds: int = 100
    learning_rate: float = 0.5
    exact_rounds: int = 30
    local_steps: int = 5
    batch_size: int = 32
    learning_rates: tuple[float, float, float] = (0.5, 0.1, 0.01)
    extra_dim: int = 50
    scales: tuple[str, ...] = ("unit", "paper")
    epsilons: tuple[float, ...] = (1.0, 5.0, 10.0, 20.0)
    delta: float = 1e-5
    clip: float = 1.0
    nbafl_seeds: int = 5
    paper_clip: float = 1000.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ParameterError(f"dataset must be one of {DATASETS}; got {self.dataset!r}")
        if not self.models or any(m not in MODELS for m in self.models):
            raise ParameterError(f"models must be a non-empty subset of {MODELS}; got "
                                 f"{self.models!r}")
        if not self.scales or any(s not in CODE_SCALES for s in self.scales):
            raise ParameterError(f"scales must be a non-empty subset of {tuple(CODE_SCALES)}; "
                                 f"got {self.scales!r}")
        for name in ("hidden", "rounds", "exact_rounds", "local_steps", "batch_size",
                     "extra_dim", "nbafl_seeds"):
            check_integer(name, getattr(self, name), minimum=1)
        check_integer("clients", self.clients, minimum=2)
        for name in ("learning_rate", "clip", "paper_clip"):
            check_positive(name, getattr(self, name))
        for eps in self.epsilons:
            check_positive("epsilons", eps)


def load_federated_data(dataset: str, clients: int, *, seed: int = 0
                        ) -> tuple[list[ClientData], np.ndarray, np.ndarray, int]:
    """Stratified 80/20 split, features scaled on the training set, IID split over clients.

    Returns ``(client_data, X_test, y_test, n_classes)``.
    """
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if dataset not in DATASETS:
        raise ParameterError(f"dataset must be one of {DATASETS}; got {dataset!r}")
    X, y = (load_digits if dataset == "digits" else load_breast_cancer)(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=seed,
                                                        stratify=y)
    if dataset == "digits":
        X_train, X_test = X_train / 16.0, X_test / 16.0       # pixel range 0..16
    else:
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    parts = np.array_split(np.random.default_rng(seed).permutation(y_train.size), clients)
    data = [ClientData(X_train[p], y_train[p]) for p in parts]
    return data, X_test, y_test, int(y.max()) + 1


def _gen(*keys: int) -> np.random.Generator:
    """Independent, reproducible streams for the parts of the study."""
    return np.random.default_rng(list(keys))


def _model(name: str, n_features: int, n_classes: int, hidden: int):
    if name == "logistic":
        return SoftmaxRegression(n_features, n_classes)
    return MLP(n_features, hidden, n_classes)


def _codes(model, config: SIFLStudyConfig, scale: str, seed: int
           ) -> tuple[ImmersionCode, AggregatorCode]:
    pi, kernel, noise = CODE_SCALES[scale]
    code = ImmersionCode.random(model.size, model.size + config.extra_dim, pi_scale=pi,
                                kernel_scale=kernel, noise_std=noise, rng=_gen(seed, 1))
    agg = AggregatorCode.random(2, pi_scale=pi, kernel_scale=kernel, noise_std=noise,
                                rng=_gen(seed, 2))
    return code, agg


def _exactness(config, model, clients, X_test, y_test, tick) -> tuple[list[dict], dict]:
    rows, curves = [], {}
    theta0 = model.init(_gen(config.seed, 3))
    for opt_name, lr in zip(OPTIMIZERS, config.learning_rates, strict=True):
        optimizer = LocalOptimizer(opt_name, lr)
        schedule = {"rounds": config.exact_rounds, "local_steps": config.local_steps,
                    "batch_size": config.batch_size, "batch_seed": config.seed}
        plain = run_plain_fl(model, optimizer, clients, theta0, **schedule)
        for scale in config.scales:
            code, agg = _codes(model, config, scale, config.seed)
            for method, aggregator in (("m1", None), ("m2", agg)):
                decoded = run_sifl(model, optimizer, clients, theta0, code, **schedule,
                                   aggregator=aggregator, rng=_gen(config.seed, 4)).decoded
                per_round = np.max(np.abs(decoded - plain), axis=1)
                curves[(opt_name, scale, method)] = per_round
                rows.append({"optimizer": opt_name, "scale": scale, "method": method,
                             "max_abs_difference": float(per_round.max()),
                             "accuracy_plain": model.accuracy(plain[-1], X_test, y_test),
                             "accuracy_sifl": model.accuracy(decoded[-1], X_test, y_test)})
                tick(f"exactness {opt_name} {scale} {method}")
    return rows, curves


def _comparison(config, model, clients, X_test, y_test, multipliers, tick) -> dict:
    theta0 = model.init(_gen(config.seed, 3))
    sgd = LocalOptimizer("sgd", config.learning_rate)
    acc = lambda history: np.array([model.accuracy(w, X_test, y_test) for w in history])  # noqa: E731
    plain = run_plain_fl(model, sgd, clients, theta0, rounds=config.rounds)
    code, agg = _codes(model, config, config.scales[0], config.seed)
    curves = {"fl": acc(plain)}
    for method, aggregator in (("sifl_m1", None), ("sifl_m2", agg)):
        curves[method] = acc(run_sifl(model, sgd, clients, theta0, code, rounds=config.rounds,
                                      aggregator=aggregator, rng=_gen(config.seed, 5)).decoded)
    common = {"rounds": config.rounds, "learning_rate": config.learning_rate,
              "clip": config.clip}
    curves["fl_clipped"] = acc(run_nbafl(model, clients, theta0, noise_multiplier=0.0, **common))
    tick("comparison fl/sifl")
    spread = {}
    for eps, multiplier in multipliers.items():
        runs = np.array([acc(run_nbafl(model, clients, theta0, noise_multiplier=multiplier,
                                       rng=_gen(config.seed, 6, s), **common))
                         for s in range(config.nbafl_seeds)])
        curves[f"nbafl_eps_{eps:g}"] = runs.mean(axis=0)
        spread[f"nbafl_eps_{eps:g}"] = float(runs[:, -1].std())
        tick(f"nbafl eps {eps:g}")
    return {"curves": curves, "final_std": spread, "plain": plain}


def _privacy(config, model, clients, X_test, y_test, plain, tick) -> tuple[dict, dict]:
    """Attacks on the accuracy-comparison schedule, for each code scale."""
    theta0 = model.init(_gen(config.seed, 3))
    sgd = LocalOptimizer("sgd", config.learning_rate)
    sensitivity = 2.0 * config.paper_clip / min(c.size for c in clients)
    report, plots = {}, {}
    for scale in config.scales:
        code, agg = _codes(model, config, scale, config.seed)
        m1 = run_sifl(model, sgd, clients, theta0, code, rounds=config.rounds,
                      rng=_gen(config.seed, 5))
        m2 = run_sifl(model, sgd, clients, theta0, code, rounds=config.rounds, aggregator=agg,
                      rng=_gen(config.seed, 5))
        diff = client_difference_attack(m1.uploads, code)
        broadcasts = np.array(m1.broadcasts)
        coords, complement = noise_subspace_attack(broadcasts, config.extra_dim)
        truth = (complement.T @ code.Pi1 @ plain[:-1].T).T
        recovered, _ = server_scale_attack(m2.server_view)
        true_models = plain[1:]
        cosines = np.abs(np.sum(recovered * true_models, axis=1)) / (
            np.linalg.norm(recovered, axis=1) * np.linalg.norm(true_models, axis=1))
        # the server fixes the sign of its estimate with 20 labelled examples it holds
        sign = 1.0 if (model.accuracy(recovered[-1], X_test[:20], y_test[:20])
                       >= model.accuracy(-recovered[-1], X_test[:20], y_test[:20])) else -1.0
        report[scale] = {
            "element_epsilon_local_model": element_epsilon(code, sensitivity=sensitivity,
                                                           delta=config.delta),
            "element_epsilon_local_model_m2": element_epsilon(
                code, sensitivity=sensitivity, delta=config.delta, aggregator=agg),
            "element_sensitivity": sensitivity,
            "aggregator_difference_noise": diff.noise_in_differences,
            "eavesdropper_relative_error": float(np.linalg.norm(coords - truth)
                                                 / np.linalg.norm(truth)),
            "server_m2_min_abs_cosine": float(cosines.min()),
            "server_m2_recovered_accuracy": model.accuracy(sign * recovered[-1], X_test[20:],
                                                           y_test[20:]),
            "true_accuracy": model.accuracy(true_models[-1], X_test[20:], y_test[20:]),
            "m2_decoding_error": float(np.max(np.abs(m2.decoded - plain))),
        }
        plots[scale] = {"broadcast_singular_values": np.linalg.svd(
            np.diff(broadcasts, axis=0), compute_uv=False), "server_cosines": cosines}
        tick(f"attacks {scale}")
    return report, plots


def run_sifl_study(config: SIFLStudyConfig = SIFLStudyConfig(), *,
                   progress: Callable[[str], None] | None = None) -> dict:
    """Run exactness, accuracy comparison and attacks; returns summary numbers and curves."""
    tick = progress or (lambda message: None)
    clients, X_test, y_test, n_classes = load_federated_data(config.dataset, config.clients,
                                                             seed=config.seed)
    multipliers = {eps: nbafl_noise_multiplier(eps, delta=config.delta, rounds=config.rounds)
                   for eps in config.epsilons}
    tick("calibration")
    summary = {"config": asdict(config), "nbafl_noise_multiplier":
               {f"{k:g}": v for k, v in multipliers.items()}}
    exactness, accuracy, spread, privacy, plots = [], {}, {}, {}, {}
    for name in config.models:
        model = _model(name, X_test.shape[1], n_classes, config.hidden)
        rows, curves = _exactness(config, model, clients, X_test, y_test, tick)
        exactness += [{"model": name, **row} for row in rows]
        comparison = _comparison(config, model, clients, X_test, y_test, multipliers, tick)
        accuracy[name] = {k: float(v[-1]) for k, v in comparison["curves"].items()}
        spread[name] = comparison["final_std"]
        plots[name] = {"exactness": curves, "accuracy": comparison["curves"]}
        if name == config.models[0]:
            privacy, plots["attacks"] = _privacy(config, model, clients, X_test, y_test,
                                                 comparison["plain"], tick)
    by_scale = {s: max(r["max_abs_difference"] for r in exactness if r["scale"] == s)
                for s in config.scales}
    summary.update({
        "max_abs_difference_vs_plain": by_scale[config.scales[0]],
        "max_abs_difference_scale": config.scales[0],
        "max_abs_difference_vs_plain_by_scale": by_scale,
        "exactness": exactness,
        "accuracy": accuracy[config.models[0]],
        "accuracy_model": config.models[0],
        "accuracy_by_model": accuracy,
        "nbafl_accuracy_std_by_model": spread,
        "privacy": privacy,
    })
    return {"summary": summary, "plots": plots}


def plot_sifl_study(result: dict, out_dir: str | Path) -> list[Path]:
    """Write ``sifl_accuracy.png``, ``sifl_exactness.png`` and ``sifl_attacks.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary, plots = result["summary"], result["plots"]
    first = summary["accuracy_model"]
    paths = []

    fig = new_figure((7, 4.5))
    ax = fig.add_subplot()
    for k, (name, curve) in enumerate(plots[first]["accuracy"].items()):
        style = {"fl": "-", "sifl_m1": "o", "sifl_m2": "x"}.get(name, "--")
        ax.plot(curve, style, ms=3, markevery=5, color=f"C{k}", label=name)
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{first} on {summary['config']['dataset']}: FL = SIFL M1 = M2; NbAFL (mean)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    paths.append(save_figure(fig, out / "sifl_accuracy.png"))

    fig = new_figure((7, 4.5))
    ax = fig.add_subplot()
    for (opt, scale, method), curve in plots[first]["exactness"].items():
        ax.semilogy(np.maximum(curve, 1e-18), "-" if scale == "unit" else "--",
                    label=f"{opt} {method} {scale}")
    ax.set_xlabel("round")
    ax.set_ylabel("max |decoded SIFL - plain FL|")
    ax.set_title("decoded SIFL vs plain FL, same minibatches")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    paths.append(save_figure(fig, out / "sifl_exactness.png"))

    fig = new_figure((10, 4))
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for scale, data in plots["attacks"].items():
        values = data["broadcast_singular_values"]
        left.semilogy(values / values[0], ".", ms=3, label=scale)
        right.plot(np.arange(1, data["server_cosines"].size + 1), data["server_cosines"],
                   label=scale)
    left.axvline(summary["config"]["extra_dim"] - 0.5, color="k", lw=0.8)
    left.set_xlabel("index")
    left.set_ylabel("singular value of broadcast changes (relative)")
    left.set_title("eavesdropper: noise lives in n~ - n directions")
    right.set_xlabel("round")
    right.set_ylabel("|cos(recovered, true global model)|")
    right.set_title("server attack on Algorithm 2")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    paths.append(save_figure(fig, out / "sifl_attacks.png"))
    return paths


def write_sifl_study(result: dict, out_dir: str | Path) -> Path:
    """Write ``summary.json`` (overwriting an existing one); returns its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "summary.json"
    path.write_text(json.dumps(result["summary"], indent=2))
    return path
