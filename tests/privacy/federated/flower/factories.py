"""Importable factories for deployed test runs (the SuperNodes import them by name)."""

from __future__ import annotations

import numpy as np

from privacy.federated.gradient import Scaffold, update_sensitivity
from privacy.federated.local_dp import LocalDP
from privacy.federated.models import KernelFeatures, LeastSquaresModel
from tests.privacy.federated.toy import toy_data

SIZES = (20, 30, 25)


def toy_partition(partition_id: int, num_partitions: int, *, dim: int = 2, seed: int = 0):
    """Client ``partition_id``'s share of :func:`toy_data` (the same recipe on every node)."""
    return toy_data(num_partitions, dim, seed)[partition_id]


def classification_partition(partition_id: int, num_partitions: int, *, seed: int = 0):
    """A non-IID two-class share with heavy-tailed label noise, from (seed, partition)."""
    rng = np.random.default_rng([seed, partition_id])
    size = SIZES[partition_id % len(SIZES)]
    X = rng.normal(size=(size, 2)) + 0.4 * partition_id
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.standard_t(3, size=size) > 0).astype(int)
    return {"X": X, "y": y}


def private_scaffold(num_clients: int = 3, *, noise_multiplier: float = 3.0) -> Scaffold:
    """SCAFFOLD with Gaussian local DP: stateful clients (control variates, release counts)."""
    sizes = [SIZES[k % len(SIZES)] for k in range(num_clients)]
    features = KernelFeatures.random(low=[-2, -2], high=[2, 2], count=4, rng=1)
    model = LeastSquaresModel(features, num_classes=2, feature_bound=3.0,
                              total_samples=sum(sizes))
    dps = [LocalDP("gaussian", noise_multiplier * update_sensitivity(model, 1.0, n, "l2"),
                   update_sensitivity(model, 1.0, n, "l2"), model.num_features) for n in sizes]
    return Scaffold(model, dps, samples=sizes, lr=0.05, local_steps=2)
