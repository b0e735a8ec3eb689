"""Ch. 8 data sets, experiment configs, calibrated trials."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.errors import ParameterError
from simulations.studies.federated_datasets import load_dataset
from simulations.studies.federated_experiments import (
    ALGORITHMS,
    ExperimentConfig,
    build_trial,
    delta_note,
    releases,
    schedule,
)


@pytest.mark.parametrize("name, clients, dim, classes", [
    ("synthetic", 2, 2, 2), ("iris", 3, 4, 3), ("breast_cancer", 4, 30, 2)])
def test_datasets_are_split_and_scaled(name, clients, dim, classes):
    data = load_dataset(name, rng=1)
    X, y = data.pooled()
    assert data.num_clients == clients and X.shape[1] == dim and data.num_classes == classes
    assert np.all(np.abs(X) <= 1.0) and np.all(np.abs(data.X_test) <= 1.0)
    total = {"synthetic": 1000, "iris": 150, "breast_cancer": 569}[name]
    assert len(y) + len(data.y_test) == total
    assert abs(len(data.y_test) - 0.2 * total) <= classes
    sizes = data.samples
    assert max(sizes) - min(sizes) <= 1
    again = load_dataset(name, rng=1)
    np.testing.assert_array_equal(again.clients[0]["X"], data.clients[0]["X"])


def test_expert_partition_gives_each_client_one_class():
    data = load_dataset("iris", partition="expert", rng=3)
    counts = np.array([np.bincount(c["y"], minlength=3) for c in data.clients])
    assert np.all(np.diag(counts) == 37) and counts.sum() == 120
    assert np.all(counts.sum(axis=0) == 40)
    with pytest.raises(ParameterError, match="num_clients must be 3"):
        load_dataset("iris", partition="expert", num_clients=2)
    with pytest.raises(ParameterError, match="dataset"):
        load_dataset("mnist")


def test_config_roundtrip_and_defaults():
    config = ExperimentConfig("breast_cancer", stagger=(1, 2, 5, 10), rounds=50)
    assert config.epsilon == 0.5 and config.delta == 0.0025 and config.clients == 4
    flat = config.to_config()
    assert flat["stagger"] == "1,2,5,10" and all(not isinstance(v, tuple) for v in flat.values())
    assert ExperimentConfig.from_config(flat) == config
    with pytest.raises(ParameterError, match="unknown"):
        ExperimentConfig.from_config({**flat, "colour": "red"})
    with pytest.raises(ParameterError, match="total_epsilon"):
        ExperimentConfig("iris", budget="total")


def test_stagger_schedules_and_release_counts():
    config = ExperimentConfig("breast_cancer", stagger=(1, 2, 5, 10), rounds=40)
    assert schedule(config, "fedinfer")["mode"] == "async"
    assert schedule(config, "fedavg")["rounds"] == 4
    assert schedule(config, "fednova")["rounds"] == 40
    assert releases(config, "fedinfer") == [40, 20, 8, 4]
    assert releases(config, "fedlin") == [79] * 4
    trial = build_trial(config, 0, ("fednova", "fedavg"))
    assert trial.algorithms["fednova"].local_steps == (10, 5, 2, 1)
    assert trial.algorithms["fedavg"].local_steps == (10,) * 4


def test_per_update_and_total_budgets_are_met():
    config = ExperimentConfig("synthetic", rounds=20)
    trial = build_trial(config, 0)
    for name in ALGORITHMS:
        algo = trial.algorithms[name]
        per_update = 2 if name == "fedlin" else 1
        for k in range(2):
            eps = algo.client_dp(k).epsilon(per_update)
            assert 0.16 * (1 - 5e-3) <= eps <= 0.16
    total = build_trial(config.replace(budget="total", total_epsilon=3.0), 0)
    for name in ALGORITHMS:
        algo = total.algorithms[name]
        counts = releases(config, name)
        eps = [algo.client_dp(k).epsilon(n) for k, n in enumerate(counts)]
        assert max(eps) <= 3.0 and max(eps) > 3.0 * 0.99
    none = build_trial(config.replace(privacy=False), 0, ("fedinfer", "scaffold"))
    assert none.algorithms["fedinfer"].client_dp(0) is None


def test_delta_is_flagged_where_it_may_show_a_clients_record():
    # independent: publishing each record with probability delta shows one of n with
    # probability 1 - (1 - delta)^n, simulated here
    rng = np.random.default_rng(0)
    shown = np.mean((rng.random((20_000, 40)) < 0.0095).any(axis=1))
    assert 0.3 < shown < 0.34
    note = delta_note(ExperimentConfig("iris"))                    # 40 records per client
    assert note is not None and "up to 40 records" in note and "= 0.32" in note
    assert "--delta below" in note
    assert delta_note(ExperimentConfig("breast_cancer")) is not None         # 0.0025, 114
    # well-posed settings stay quiet: the synthetic set (1e-4, 400) and no privacy at all
    assert delta_note(ExperimentConfig("synthetic")) is None
    assert delta_note(ExperimentConfig("iris", delta=1e-5)) is None
    assert delta_note(ExperimentConfig("iris", privacy=False)) is None
