"""Importable factories for deployed test runs (the SuperNodes import them by name)."""

from __future__ import annotations

from tests.privacy.federated.toy import toy_data


def toy_partition(partition_id: int, num_partitions: int, *, dim: int = 2, seed: int = 0):
    """Client ``partition_id``'s share of :func:`toy_data` (the same recipe on every node)."""
    return toy_data(num_partitions, dim, seed)[partition_id]
