"""The Ch. 8 experiments on Flower: factories a deployed app names with JSON arguments.

:mod:`simulations.studies.federated_experiments` turns one flat :class:`ExperimentConfig` and a
trial seed into the data split, the model and the calibrated algorithms (:func:`build_trial`).
These factories rebuild exactly that trial in every Flower process — the server, and each node
keeping only its own partition — so a deployed run is the trial the numpy runner would run.

Examples
--------
>>> from simulations.studies.federated_experiments import ExperimentConfig
>>> from simulations.studies.federated_flower import experiment_specs
>>> specs = experiment_specs("fedavg", ExperimentConfig("iris", partition="expert"), seed=3)
>>> specs["data"].build(0, 3)["X"].shape[1], specs["num_clients"], specs["mode"]
(4, 3, 'sync')
"""

from __future__ import annotations

from typing import Any

from _toolbox.errors import ParameterError
from privacy.federated.flower.app import FactorySpec
from privacy.federated.protocol import ClientData
from simulations.studies.federated_experiments import (
    Evaluator,
    ExperimentConfig,
    build_trial,
    schedule,
)

__all__ = ["experiment_algorithm", "experiment_partition", "experiment_evaluator",
           "experiment_specs"]


def experiment_algorithm(*, name: str, seed: int, config: dict[str, Any]) -> Any:
    """Algorithm ``name`` of trial ``seed`` (noise calibrated as in the experiment)."""
    return build_trial(ExperimentConfig.from_config(config), seed, (name,)).algorithms[name]


def experiment_partition(partition_id: int, num_partitions: int, *, seed: int,
                         config: dict[str, Any]) -> ClientData:
    """Client ``partition_id``'s training data in trial ``seed``."""
    data = build_trial(ExperimentConfig.from_config(config), seed, ()).data
    if num_partitions != data.num_clients:
        raise ParameterError(f"the node was started with num-partitions={num_partitions}; the "
                             f"experiment has {data.num_clients} clients")
    return data.clients[partition_id]


def experiment_evaluator(*, seed: int, config: dict[str, Any]) -> Evaluator:
    """Test accuracy of a model on trial ``seed``'s reserved test set (run on the server)."""
    trial = build_trial(ExperimentConfig.from_config(config), seed, ())
    return Evaluator(trial.model, trial.data.X_test, trial.data.y_test)


def experiment_specs(name: str, config: ExperimentConfig, *, seed: int = 0) -> dict[str, Any]:
    """Factory specs and schedule of one experiment algorithm, for :func:`run_deployment`.

    Returns
    -------
    dict
        ``algorithm``, ``data``, ``evaluate`` (:class:`FactorySpec`), ``num_clients`` and the
        run config of its schedule: ``mode`` with ``rounds``, or ``ticks`` and ``stagger``
        (FedInfer under stagger runs asynchronously; see
        :func:`simulations.studies.federated_experiments.schedule`).
    """
    flat = config.to_config()
    module = __name__
    plan = schedule(config, name)
    run = {"mode": plan["mode"]}
    if plan["mode"] == "async":
        run.update(ticks=plan["ticks"], stagger=",".join(map(str, plan["stagger"])))
    else:
        run.update(rounds=plan["rounds"])
    return {"algorithm": FactorySpec(f"{module}:experiment_algorithm",
                                     {"name": name, "seed": seed, "config": flat}),
            "data": FactorySpec(f"{module}:experiment_partition", {"seed": seed, "config": flat}),
            "evaluate": FactorySpec(f"{module}:experiment_evaluator",
                                    {"seed": seed, "config": flat}),
            "num_clients": config.clients, **run}
