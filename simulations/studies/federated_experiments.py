"""Ch. 8 experiment setup: one flat config -> data, model and every algorithm, privacy calibrated.

:class:`ExperimentConfig` holds everything an experiment needs as flat scalars, so a runtime in
another process (a Flower ClientApp / ServerApp) rebuilds the identical algorithm and client
data from ``config.to_config()`` and a trial seed with :func:`build_trial`.

Privacy (record-level, add/remove, delta from the config):

* ``budget="per-update"`` (the seed's matching, Figs. 8.3-8.8): every update of every algorithm
  is ``(epsilon, delta)``-DP -- FedInfer's block release, a gradient method's update (FedLin's
  update and gradient together).  Composed epsilons then differ between algorithms and grow
  with the rounds; they are reported, not hidden.
* ``budget="total"``: each algorithm's noise is calibrated so that every client's composed
  epsilon after the whole run is at most ``total_epsilon`` (FedInfer's clients share one noise
  law, calibrated for the client that releases most).

Delta is per record, and a client holds ``n`` records: the mechanism that publishes each record
in the clear with probability ``delta`` is ``(0, delta)``-DP, yet shows one of the ``n`` with
probability ``1 - (1 - delta)^n``.  :func:`delta_note` says when that is not small (at least
:data:`DELTA_EXPOSURE`): the seed's iris delta 0.0095 with 40 records per client gives 0.32,
breast cancer 0.0025 with 114 gives 0.25; the synthetic set 1e-4 with 400 gives 0.04.

Stagger (system heterogeneity, Sec. 8.5): time is counted in ticks of the fastest client.
FedInfer runs asynchronously (Algorithm 2).  FedAvg and SCAFFOLD wait for every client each
round (round time ``max gamma_k`` ticks; the seed: they "proceed at the speed of the slowest
client").  FedProx, FedNova and FedLin run one round per tick in which client ``k`` does
``max(1, local_steps // gamma_k)`` local steps (partial work / variable local steps).

References
----------
Seed Ch. 8 (Secs. 8.2-8.5, Figs. 8.2-8.8), Remark 8, Ch. 5.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from privacy.federated.fedinfer import FedInfer
from privacy.federated.gradient import (
    FedAvg,
    FedLin,
    FedNova,
    FedProx,
    Scaffold,
    update_sensitivity,
)
from privacy.federated.local_dp import NOISES, LocalDP
from privacy.federated.models import KernelFeatures, LeastSquaresModel, noise_norm
from privacy.federated.runner import Network
from simulations.studies.federated_datasets import DATASETS, FederatedData, load_dataset

__all__ = ["ALGORITHMS", "SEED_SETTINGS", "ExperimentConfig", "Trial", "build_trial",
           "Evaluator", "schedule", "delta_note", "DELTA_EXPOSURE"]

ALGORITHMS = ("fedinfer", "fedavg", "fedprox", "scaffold", "fednova", "fedlin")
_GRADIENT = {"fedavg": FedAvg, "fedprox": FedProx, "scaffold": Scaffold, "fednova": FedNova,
             "fedlin": FedLin}
_WAIT_FOR_ALL = ("fedavg", "scaffold")

#: The seed's settings per data set: per-update (epsilon, delta) and iterations (Ch. 8), and
#: this package's model / optimizer choices (kernel basis size and width, ridge, gradient
#: steps), fixed once on noise-free runs and shared by every algorithm.
SEED_SETTINGS: dict[str, dict[str, Any]] = {
    "synthetic": {"epsilon": 0.16, "delta": 1e-4, "rounds": 100, "basis": 4, "rbf_scale": 1.0,
                  "feature_bound": 2.5, "ridge": 0.05, "lr": 0.2, "local_steps": 5,
                  "clip": 1.0, "mu": 0.1},
    "iris": {"epsilon": 1.38, "delta": 0.0095, "rounds": 200, "basis": 4, "rbf_scale": 1.0,
             "feature_bound": 2.5, "ridge": 0.05, "lr": 0.15, "local_steps": 5, "clip": 1.0,
             "mu": 0.1},
    "breast_cancer": {"epsilon": 0.5, "delta": 0.0025, "rounds": 200, "basis": 11,
                      "rbf_scale": 0.5, "feature_bound": 4.0, "ridge": 0.05, "lr": 0.04,
                      "local_steps": 10, "clip": 2.0, "mu": 0.1},
}


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything one Ch. 8 experiment needs, as flat values (``None``: the seed's default).

    Parameters
    ----------
    dataset : {"synthetic", "iris", "breast_cancer"}
    partition : {"iid", "expert"}
    num_clients : int, optional
    stagger : tuple of int, optional
        ``gamma_k`` per client (system heterogeneity); ``rounds`` then counts ticks.
    rounds : int, optional
    privacy : bool, default True
        False: no clipping noise at all (the seed's Fig. 8.2).
    noise : {"gaussian", "laplace", "sas"}
    alpha : float
        SaS index.
    epsilon, delta : float, optional
        Per-update privacy (``budget="per-update"``); ``delta`` is also the delta of every
        reported composed epsilon.
    budget : {"per-update", "total"}
    total_epsilon : float, optional
        Composed budget per client (``budget="total"``).
    basis, rbf_scale, feature_bound, ridge, lr, local_steps, clip, mu : optional
        Model and optimizer settings (see :data:`SEED_SETTINGS`); ``feature_bound`` is the
        l2 norm every client clips its feature vectors to (sensitivities scale with it).
    test_fraction : float
    """

    dataset: str
    partition: str = "iid"
    num_clients: int | None = None
    stagger: tuple[int, ...] | None = None
    rounds: int | None = None
    privacy: bool = True
    noise: str = "gaussian"
    alpha: float = 1.5
    epsilon: float | None = None
    delta: float | None = None
    budget: str = "per-update"
    total_epsilon: float | None = None
    basis: int | None = None
    rbf_scale: float | None = None
    feature_bound: float | None = None
    ridge: float | None = None
    lr: float | None = None
    local_steps: int | None = None
    clip: float | None = None
    mu: float | None = None
    test_fraction: float = 0.2

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ParameterError(f"dataset must be one of {sorted(DATASETS)}; got "
                                 f"{self.dataset!r}")
        if self.noise not in NOISES:
            raise ParameterError(f"noise must be one of {NOISES}; got {self.noise!r}")
        if self.budget not in ("per-update", "total"):
            raise ParameterError(f"budget must be 'per-update' or 'total'; got {self.budget!r}")
        if self.budget == "total" and self.privacy and self.total_epsilon is None:
            raise ParameterError("budget='total' needs total_epsilon")
        if self.stagger is not None:
            object.__setattr__(self, "stagger", tuple(int(g) for g in self.stagger))
            if any(g < 1 for g in self.stagger):
                raise ParameterError(f"stagger rates must be >= 1; got {self.stagger}")
        defaults = SEED_SETTINGS[self.dataset]
        for name in ("epsilon", "delta", "rounds", "basis", "rbf_scale", "feature_bound",
                     "ridge", "lr", "local_steps", "clip", "mu"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, defaults[name])

    @property
    def clients(self) -> int:
        return DATASETS[self.dataset] if self.num_clients is None else self.num_clients

    def replace(self, **changes: Any) -> ExperimentConfig:
        return dataclasses.replace(self, **changes)

    def to_config(self) -> dict[str, Any]:
        """Flat config (stagger as a comma-separated string; ``None`` values omitted)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            out[f.name] = ",".join(map(str, value)) if f.name == "stagger" else value
        return out

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ExperimentConfig:
        """Inverse of :meth:`to_config`."""
        values = dict(config)
        if isinstance(values.get("stagger"), str):
            values["stagger"] = tuple(int(g) for g in values["stagger"].split(",") if g)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - names
        if unknown:
            raise ParameterError(f"unknown experiment settings {sorted(unknown)}")
        return cls(**values)


@dataclass(frozen=True)
class Trial:
    """One trial: its data, model and algorithms (noise calibrated), and how to run each."""

    config: ExperimentConfig
    data: FederatedData
    model: LeastSquaresModel
    algorithms: dict[str, Any]


class Evaluator:
    """Test accuracy of a weight matrix, with the test features computed once."""

    def __init__(self, model: LeastSquaresModel, X: np.ndarray, y: np.ndarray):
        self.phi = model.clipped_features(X)
        self.y = np.asarray(y)
        self.binary = model.num_classes == 2
        self.shape = model.weight_shape

    def accuracy(self, W: Any) -> float:
        out = self.phi @ np.asarray(W, dtype=float).reshape(self.shape)
        pred = (out[:, 0] > 0).astype(int) if self.binary else np.argmax(out, axis=1)
        return float(np.mean(pred == self.y))

    def __call__(self, model_arrays: dict[str, np.ndarray]) -> dict[str, float]:
        return {"accuracy": self.accuracy(model_arrays["w"])}


def local_steps(config: ExperimentConfig, name: str) -> tuple[int, ...]:
    """Local steps per client (partial work under stagger for FedProx, FedNova, FedLin)."""
    k = config.clients
    if config.stagger is None or name in _WAIT_FOR_ALL:
        return (config.local_steps,) * k
    return tuple(max(1, config.local_steps // g) for g in config.stagger)


def schedule(config: ExperimentConfig, name: str) -> dict[str, Any]:
    """How to run ``name``: ``{"mode": "sync", "rounds", "network"}`` or async with stagger.

    Under stagger, ``rounds`` of the config counts ticks; FedAvg / SCAFFOLD rounds last
    ``max(gamma)`` ticks (the network latency of client ``k`` is ``gamma_k``).
    """
    if config.stagger is None:
        return {"mode": "sync", "rounds": config.rounds, "network": None}
    if name == "fedinfer":
        return {"mode": "async", "ticks": config.rounds, "stagger": config.stagger}
    if name in _WAIT_FOR_ALL:
        slowest = max(config.stagger)
        return {"mode": "sync", "rounds": math.ceil(config.rounds / slowest),
                "network": Network(latency=[float(g) for g in config.stagger])}
    return {"mode": "sync", "rounds": config.rounds, "network": Network(latency=1.0)}


def releases(config: ExperimentConfig, name: str) -> list[int]:
    """Releases each client makes in a full, loss-free run of ``name``."""
    plan = schedule(config, name)
    if plan["mode"] == "async":
        return [plan["ticks"] // g for g in plan["stagger"]]
    rounds = plan["rounds"]
    per_client = 2 * rounds - 1 if name == "fedlin" else rounds
    return [per_client] * config.clients


def _release(config: ExperimentConfig, *, sensitivity: float, dimension: int, per_update: int,
             total_releases: int) -> LocalDP:
    if config.budget == "per-update":
        return LocalDP.per_update(config.noise, epsilon=config.epsilon, delta=config.delta,
                                  sensitivity=sensitivity, releases=per_update,
                                  dimension=dimension, alpha=config.alpha)
    return LocalDP.calibrate(config.noise, epsilon=config.total_epsilon, delta=config.delta,
                             sensitivity=sensitivity, releases=total_releases,
                             dimension=dimension, alpha=config.alpha)


def build_model(config: ExperimentConfig, data: FederatedData,
                rng: np.random.Generator) -> LeastSquaresModel:
    """Kernel least squares with ``basis`` random RBF centres in the feature box (Remark 8)."""
    d = data.input_dim
    feats = KernelFeatures.random(low=-np.ones(d), high=np.ones(d), count=config.basis,
                                  rng=rng, kernel="rbf", scale=config.rbf_scale)
    return LeastSquaresModel(feats, data.num_classes, feature_bound=config.feature_bound,
                             total_samples=data.total_samples, ridge=config.ridge)


def build_algorithm(name: str, config: ExperimentConfig, data: FederatedData,
                    model: LeastSquaresModel) -> Any:
    """One algorithm with its privacy calibrated for this data split."""
    if name not in ALGORITHMS:
        raise ParameterError(f"algorithm must be one of {ALGORITHMS}; got {name!r}")
    norm = noise_norm(config.noise)
    count = releases(config, name)
    if name == "fedinfer":
        dp = None
        if config.privacy:
            dp = _release(config, sensitivity=model.block_sensitivity(norm),
                          dimension=model.block_dimension, per_update=1,
                          total_releases=max(count))
        shares = np.array(data.samples, dtype=float) / data.total_samples
        return FedInfer(model, dp, num_clients=data.num_clients, stagger=config.stagger
                        if schedule(config, name)["mode"] == "async" else None, shares=shares)
    cls = _GRADIENT[name]
    dps = [None] * data.num_clients
    if config.privacy:
        dps = [_release(config, sensitivity=update_sensitivity(model, config.clip, n, norm),
                        dimension=model.num_features * model.num_outputs,
                        per_update=cls.releases_per_update, total_releases=c)
               for n, c in zip(data.samples, count, strict=True)]
    kwargs = {"samples": data.samples, "lr": config.lr, "local_steps": local_steps(config, name),
              "clip": config.clip}
    if name == "fedprox":
        kwargs["mu"] = config.mu
    if name == "fedlin":
        kwargs["lr"] = config.lr * min(kwargs["local_steps"]) / max(kwargs["local_steps"])
    return cls(model, dps, **kwargs)


def _trial_data(config: ExperimentConfig, seed: int) -> tuple[FederatedData, Any]:
    """The data split of trial ``seed`` and the generator that goes on to draw its model."""
    gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(7,)))
    return load_dataset(config.dataset, partition=config.partition,
                        num_clients=config.num_clients, test_fraction=config.test_fraction,
                        rng=gen), gen


#: Chance that a ``(0, delta)``-DP release shows one of a client's records in the clear, from
#: which :func:`delta_note` warns.
DELTA_EXPOSURE = 0.1


def delta_note(config: ExperimentConfig, seed: int = 0) -> str | None:
    """A warning when ``config.delta`` is not small against a client's number of records
    (module notes), else ``None`` (also without privacy).

    Examples
    --------
    >>> print(delta_note(ExperimentConfig("iris")))     # doctest: +ELLIPSIS
    delta = 0.0095 per record is not small for clients of up to 40 records: ... 0.32 ...
    >>> delta_note(ExperimentConfig("iris", delta=1e-5)) is None
    True
    """
    if not config.privacy:
        return None
    data, _ = _trial_data(config, seed)
    records = max(len(client["y"]) for client in data.clients)
    exposure = -math.expm1(records * math.log1p(-config.delta))
    if exposure < DELTA_EXPOSURE:
        return None
    return (f"delta = {config.delta:g} per record is not small for clients of up to {records} "
            f"records: a (0, delta)-DP release may show one of a client's records in the clear "
            f"with probability 1 - (1 - delta)^{records} = {exposure:.2g} (delta * n = "
            f"{config.delta * records:.2g}); every epsilon of this run holds only with that "
            f"caveat. Remedy: --delta below {DELTA_EXPOSURE / records:.2g} (e.g. 1e-5); the "
            f"seed's value is kept by default to reproduce its figures")


def build_trial(config: ExperimentConfig, seed: int,
                algorithms: tuple[str, ...] = ALGORITHMS) -> Trial:
    """Data split, random kernel basis and algorithms of trial ``seed``."""
    data, gen = _trial_data(config, seed)
    model = build_model(config, data, gen)
    built = {name: build_algorithm(name, config, data, model) for name in algorithms}
    return Trial(config, data, model, built)
