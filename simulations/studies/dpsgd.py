"""Accuracy of DP-SGD with Gaussian and SaS noise at equal composed privacy (seed Ch. 4).

For each target epsilon the Gaussian sigma is calibrated for one model's run (steps, sampling
rate, delta) by :func:`privacy.dpsgd.calibrate_noise`; each seed trains one model on the same
data, so releasing all of a cell's models composes them (``epsilon_all_seeds`` in the summary).
Every SaS noise gets the scale with the same certified Gaussian equivalent
(:mod:`privacy.vector_sas`), so all runs of one target have the same privacy bound.
Optionally the seed's *scalar* SaS accounting is also run
(:func:`privacy.calibration.calibrate_scale`, which assumes a one-dimensional release): those
runs report the epsilon actually certified for the scale used.

All seeds of one (noise, epsilon) cell train together (vectorized replicates); the same seed gives
the same initialisation and Poisson batches for every noise, so differences to the Gaussian are
paired.  Hyperparameters are fixed by the caller or tuned on a validation split
(:func:`tune_hyperparameters`); test accuracy is reported.

References
----------
Seed thesis Ch. 4, Tables 4.1-4.6 (SaS vs Gaussian in DP-SGD via Opacus).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import stats

from _toolbox.errors import ParameterError
from privacy import calibration
from privacy.dpsgd import (
    DPSGDConfig,
    GradientNoise,
    LogisticModel,
    MLPModel,
    SoftmaxModel,
    calibrate_noise,
    dpsgd_epsilon,
    dpsgd_train,
)

__all__ = ["StudyConfig", "load_dataset", "make_model", "parse_noise", "run_study",
           "tune_hyperparameters", "plot_study", "DATASETS", "MODELS"]

DATASETS = ("digits", "breast_cancer")
MODELS = ("logistic", "softmax", "mlp")
_SCALAR_SUFFIX = "_scalar_accounting"


@dataclass(frozen=True)
class StudyConfig:
    """What one study run trains (validated on construction).

    ``noises`` are labels ``"gaussian"`` or ``"sas_<alpha>"``; ``scalar_accounting_alphas`` adds
    ``"sas_<alpha>_scalar_accounting"`` runs calibrated with the seed's scalar accountant.
    """

    dataset: str = "digits"
    model: str = "softmax"
    epsilons: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)
    noises: tuple[str, ...] = ("gaussian", "sas_1.999", "sas_1.95", "sas_1.9", "sas_1.5")
    scalar_accounting_alphas: tuple[float, ...] = ()
    seeds: int = 20
    delta: float = 1e-5
    clip_norm: float = 0.5
    learning_rate: float = 0.3
    sampling_rate: float = 0.02
    epochs: float = 30.0
    hidden: int = 32
    split_seed: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ParameterError(f"dataset must be one of {DATASETS}; got {self.dataset!r}")
        if self.model not in MODELS:
            raise ParameterError(f"model must be one of {MODELS}; got {self.model!r}")
        if self.dataset == "digits" and self.model == "logistic":
            raise ParameterError("model 'logistic' is binary; digits has 10 classes (use "
                                 "'softmax' or 'mlp')")
        if not self.epsilons or min(self.epsilons) <= 0:
            raise ParameterError(f"epsilons must be positive; got {self.epsilons}")
        for label in self.noises:
            parse_noise(label)
        if self.seeds < 2:
            raise ParameterError(f"seeds must be >= 2 for confidence intervals; got "
                                 f"{self.seeds}")
        for alpha in self.scalar_accounting_alphas:
            GradientNoise("sas", 1.0, alpha)
        self.train_config(n_train=1)   # validates the hyperparameters

    @property
    def steps(self) -> int:
        """Steps of a run, ``round(epochs / sampling_rate)``."""
        return max(1, round(self.epochs / self.sampling_rate))

    def train_config(self, n_train: int) -> DPSGDConfig:
        """The :class:`DPSGDConfig` of every run (expected batch ``q n_train``)."""
        return DPSGDConfig(clip_norm=self.clip_norm, learning_rate=self.learning_rate,
                           sampling_rate=self.sampling_rate, steps=self.steps,
                           expected_batch_size=self.sampling_rate * n_train)


def parse_noise(label: str) -> tuple[str, float | None]:
    """``"gaussian"`` -> ``("gaussian", None)``, ``"sas_1.9"`` -> ``("sas", 1.9)``."""
    if label == "gaussian":
        return "gaussian", None
    if label.startswith("sas_"):
        try:
            alpha = float(label[4:])
        except ValueError:
            alpha = None
        if alpha is not None:
            GradientNoise("sas", 1.0, alpha)
            return "sas", alpha
    raise ParameterError(f"noise must be 'gaussian' or 'sas_<alpha>' with alpha in [1, 2); got "
                         f"{label!r}")


def load_dataset(name: str, *, split_seed: int = 0) -> dict[str, np.ndarray]:
    """Stratified 60/20/20 train/validation/test split of a scikit-learn dataset.

    ``digits``: pixels divided by 16 (a fixed, data-independent scaling).  ``breast_cancer``:
    standardised with the *training* mean and standard deviation - a data-dependent step that is
    not privatized (as in the seed and most DP-SGD studies); the privacy statement covers the
    training given that preprocessing.
    """
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import train_test_split

    if name not in DATASETS:
        raise ParameterError(f"dataset must be one of {DATASETS}; got {name!r}")
    X, y = (load_digits if name == "digits" else load_breast_cancer)(return_X_y=True)
    X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.4, stratify=y,
                                                  random_state=split_seed)
    X_val, X_te, y_val, y_te = train_test_split(X_rest, y_rest, test_size=0.5, stratify=y_rest,
                                                random_state=split_seed)
    if name == "digits":
        def scale(a):
            return a / 16.0
    else:
        mean, std = X_tr.mean(axis=0), X_tr.std(axis=0)

        def scale(a):
            return (a - mean) / std
    return {"X_train": scale(X_tr), "y_train": y_tr, "X_val": scale(X_val), "y_val": y_val,
            "X_test": scale(X_te), "y_test": y_te}


def make_model(name: str, n_features: int, n_classes: int, hidden: int = 32):
    """``logistic`` (binary), ``softmax`` or ``mlp`` (one tanh hidden layer)."""
    if name == "logistic":
        if n_classes != 2:
            raise ParameterError(f"model 'logistic' needs 2 classes; the data have {n_classes}")
        return LogisticModel(n_features)
    if name == "softmax":
        return SoftmaxModel(n_features, n_classes)
    if name == "mlp":
        return MLPModel(n_features, hidden, n_classes)
    raise ParameterError(f"model must be one of {MODELS}; got {name!r}")


def _mean_ci(values: np.ndarray) -> dict[str, float]:
    """Mean and two-sided 95 % Student-t interval over seeds."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    half = float(stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1)
                 / np.sqrt(values.size))
    return {"mean": mean, "ci95_low": mean - half, "ci95_high": mean + half,
            "std": float(values.std(ddof=1))}


def _noises_for(config: StudyConfig, epsilon: float, steps: int
                ) -> dict[str, tuple[GradientNoise, float | None]]:
    """Noise per label for one target: (noise, scalar-accountant claim or None)."""
    run = dict(clip_norm=config.clip_norm, steps=steps, sampling_rate=config.sampling_rate,
               delta=config.delta)
    sigma = calibrate_noise(epsilon, law="gaussian", **run).scale
    out: dict[str, tuple[GradientNoise, float | None]] = {}
    for label in config.noises:
        law, alpha = parse_noise(label)
        out[label] = (GradientNoise.from_gaussian_equivalent(sigma, law=law, alpha=alpha), None)
    for alpha in config.scalar_accounting_alphas:
        scale = calibration.calibrate_scale(epsilon, delta=config.delta, steps=steps,
                                            sampling_rate=config.sampling_rate, alpha=alpha,
                                            sensitivity=config.clip_norm)
        out[f"sas_{alpha:g}{_SCALAR_SUFFIX}"] = (GradientNoise("sas", scale, alpha), epsilon)
    return out


def run_study(config: StudyConfig, *, progress: Callable[[Sequence], Sequence] | None = None
              ) -> dict:
    """Train every (noise, epsilon) cell for ``config.seeds`` seeds; return the summary dict.

    ``progress`` wraps the list of cells (e.g. ``tqdm.tqdm``).
    """
    data = load_dataset(config.dataset, split_seed=config.split_seed)
    X, y = data["X_train"], data["y_train"]
    classes = int(max(y.max(), data["y_test"].max())) + 1
    model = make_model(config.model, X.shape[1], classes, config.hidden)
    train = config.train_config(len(y))
    cells: list[tuple[float | None, str, GradientNoise | None, float | None]] = [
        (None, "non_private", None, None)]
    wrap = progress or (lambda items: items)
    for eps in wrap(config.epsilons):
        for label, (noise, claim) in _noises_for(config, eps, train.steps).items():
            cells.append((eps, label, noise, claim))

    summary: dict = {
        "dataset": config.dataset, "model": config.model, "n_params": model.n_params,
        "n_train": int(len(y)), "n_val": int(len(data["y_val"])),
        "n_test": int(len(data["y_test"])),
        "privacy_unit": "one training example (add-or-remove neighbours)",
        "delta": config.delta, "seeds": config.seeds, "epsilons": list(config.epsilons),
        "config": asdict(config), "hyperparameters": {**asdict(train)},
        "accuracy": {}, "difference_vs_gaussian": {}, "noise_scale": {},
        "gaussian_equivalent_sigma": {}, "epsilon_composed": {}, "epsilon_scalar_claim": {},
        # epsilon_composed is one seed's model; the seeds train on the same data, so releasing
        # all of a cell's models composes them (the accountant's epsilon of seeds x steps)
        "epsilon_meaning": "epsilon_composed: per model (one seed's run); "
                           "epsilon_all_seeds: releasing all the seeds' models of a cell",
        "epsilon_all_seeds": {}, "runs": []}
    per_seed: dict[tuple[str, str], np.ndarray] = {}
    for eps, label, noise, claim in wrap(cells):
        result = dpsgd_train(model, X, y, config=train, noise=noise, replicates=config.seeds,
                             rng=config.seed)
        acc = model.accuracy(result.params, data["X_test"], data["y_test"])
        if noise is None:
            summary["non_private"] = {"accuracy": {**_mean_ci(acc),
                                                   "per_seed": acc.tolist()}}
            continue
        key = f"{eps:g}"
        composed = dpsgd_epsilon(noise, clip_norm=train.clip_norm, steps=train.steps,
                                 sampling_rate=train.sampling_rate, delta=config.delta)
        per_seed[(label, key)] = acc
        summary["accuracy"].setdefault(label, {})[key] = {**_mean_ci(acc),
                                                          "per_seed": acc.tolist()}
        summary["noise_scale"].setdefault(label, {})[key] = noise.scale
        summary["gaussian_equivalent_sigma"].setdefault(label, {})[key] = \
            noise.gaussian_equivalent_sigma
        summary["epsilon_composed"].setdefault(label, {})[key] = composed
        summary["epsilon_all_seeds"].setdefault(label, {})[key] = result.epsilon(
            config.delta, released=config.seeds)
        if claim is not None:
            summary["epsilon_scalar_claim"].setdefault(label, {})[key] = claim
        summary["runs"].extend(
            {"noise": label, "target_epsilon": eps, "seed_index": i, "accuracy": float(a),
             "scale": noise.scale, "epsilon_composed": composed}
            for i, a in enumerate(acc))
    if "gaussian" in config.noises:
        for (label, key), acc in per_seed.items():
            if label != "gaussian":
                summary["difference_vs_gaussian"].setdefault(label, {})[key] = _mean_ci(
                    acc - per_seed[("gaussian", key)])
    return summary


def tune_hyperparameters(config: StudyConfig, *, epsilon: float, noise: str = "gaussian",
                         grid: dict[str, Sequence[float]], seeds: int = 5,
                         progress: Callable[[Sequence], Sequence] | None = None
                         ) -> tuple[StudyConfig, list[dict]]:
    """Grid search on the validation split for one noise at one target epsilon.

    ``grid`` maps ``clip_norm``, ``learning_rate``, ``sampling_rate``, ``epochs`` to candidate
    values; each candidate is calibrated to ``epsilon`` and trained ``seeds`` times.  Returns the
    config with the best mean validation accuracy and every candidate's score.  (Tuning on the
    private data is itself not accounted - the usual caveat of DP-SGD studies.)
    """
    keys = ("clip_norm", "learning_rate", "sampling_rate", "epochs")
    unknown = set(grid) - set(keys)
    if unknown:
        raise ParameterError(f"grid keys must be among {keys}; got {sorted(unknown)}")
    data = load_dataset(config.dataset, split_seed=config.split_seed)
    X, y = data["X_train"], data["y_train"]
    classes = int(y.max()) + 1
    model = make_model(config.model, X.shape[1], classes, config.hidden)
    law, alpha = parse_noise(noise)
    values = [grid.get(k, [getattr(config, k)]) for k in keys]
    # the calibrated sigma is clip_norm times a noise multiplier that depends on (q, steps) only
    multiplier: dict[tuple[float, int], float] = {}
    scores = []
    combos = list(itertools.product(*values))
    for combo in (progress or (lambda c: c))(combos):
        candidate = replace(config, **dict(zip(keys, combo, strict=True)))
        train = candidate.train_config(len(y))
        cache_key = (candidate.sampling_rate, train.steps)
        if cache_key not in multiplier:
            multiplier[cache_key] = calibrate_noise(
                epsilon, law="gaussian", clip_norm=1.0, steps=train.steps,
                sampling_rate=candidate.sampling_rate, delta=config.delta).scale
        noise_obj = GradientNoise.from_gaussian_equivalent(
            multiplier[cache_key] * candidate.clip_norm, law=law, alpha=alpha)
        result = dpsgd_train(model, X, y, config=train, noise=noise_obj, replicates=seeds,
                             rng=config.seed + 1)
        acc = float(model.accuracy(result.params, data["X_val"], data["y_val"]).mean())
        scores.append({**dict(zip(keys, combo, strict=True)), "validation_accuracy": acc})
    best = max(scores, key=lambda s: s["validation_accuracy"])
    return replace(config, **{k: best[k] for k in keys}), scores


def plot_study(summary: dict, path) -> None:
    """Accuracy vs epsilon with 95 % bands (left) and paired differences to Gaussian (right)."""
    from _toolbox.plotting import new_figure, save_figure

    fig = new_figure((11, 4.2))
    left, right = fig.subplots(1, 2)
    for label, cells in summary["accuracy"].items():
        eps = sorted(cells, key=float)
        x = np.array([float(e) for e in eps])
        mean = np.array([cells[e]["mean"] for e in eps])
        low = np.array([cells[e]["ci95_low"] for e in eps])
        high = np.array([cells[e]["ci95_high"] for e in eps])
        style = "--" if label.endswith(_SCALAR_SUFFIX) else "-"
        line, = left.plot(x, mean, style, marker="o", ms=3, label=label)
        left.fill_between(x, low, high, color=line.get_color(), alpha=0.15)
        diff = summary["difference_vs_gaussian"].get(label)
        if diff:
            d_mean = np.array([diff[e]["mean"] for e in eps])
            right.errorbar(x, 100 * d_mean, yerr=100 * np.array(
                [[diff[e]["mean"] - diff[e]["ci95_low"] for e in eps],
                 [diff[e]["ci95_high"] - diff[e]["mean"] for e in eps]]),
                fmt=style, marker="o", ms=3, capsize=2, color=line.get_color(), label=label)
    if "non_private" in summary:
        left.axhline(summary["non_private"]["accuracy"]["mean"], color="k", ls=":",
                     label="no noise (clipped)")
    ticks = [float(e) for e in summary["epsilons"]]
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xticks(ticks, [f"{e:g}" for e in ticks])
        ax.minorticks_off()
        ax.set_xlabel(f"target epsilon (delta = {summary['delta']:g})")
        ax.grid(True, which="both", alpha=0.3)
    left.set_ylabel("test accuracy (mean, 95% CI)")
    right.set_ylabel("accuracy - Gaussian (percentage points)")
    right.axhline(0.0, color="k", lw=0.8)
    left.legend(fontsize=7)
    if right.get_legend_handles_labels()[0]:
        right.legend(fontsize=7)
    else:       # the Gaussian alone: no other noise to compare with it
        right.text(0.5, 0.5, "no noise other than Gaussian", transform=right.transAxes,
                   ha="center", va="center", fontsize=8, color="0.4")
    fig.suptitle(f"DP-SGD on {summary['dataset']} ({summary['model']}, "
                 f"{summary['seeds']} seeds)")
    save_figure(fig, path, dpi=90)
