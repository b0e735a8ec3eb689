"""Incremental POD: the batch modes, chunk by chunk, in n (r + oversampling) memory."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.regression.incremental_pod import IncrementalPOD
from dmdidc.regression.pod import pod_modes


def _angle(A: np.ndarray, B: np.ndarray) -> float:
    """Largest principal angle's sine between the spans of orthonormal A and B."""
    return float(np.linalg.norm(A - B @ (B.T @ A), 2))


def _low_rank(rng, n, K, rank, noise):
    spectrum = np.geomspace(10.0, 1.0, rank)
    X = np.linalg.qr(rng.standard_normal((n, rank)))[0] * spectrum @ rng.standard_normal((rank, K))
    return X + noise * rng.standard_normal((n, K))


@pytest.mark.parametrize("seed", range(6))
def test_streamed_modes_span_the_batch_modes(seed):
    """Random sizes, ranks, chunkings; sensor noise far below the modes (the svd_rank case)."""
    rng = np.random.default_rng(seed)
    n, K, rank = int(rng.integers(300, 1500)), int(rng.integers(400, 900)), int(rng.integers(2, 7))
    X = _low_rank(rng, n, K, rank, noise=1e-3)
    cuts = np.sort(rng.choice(np.arange(1, K), size=5, replace=False))
    pod = IncrementalPOD(rank)
    for a, b in zip([0, *cuts], [*cuts, K], strict=True):
        pod.update(X[:, a:b])
    batch, singular = pod_modes([X], rank)
    assert _angle(batch, pod.basis[:, :rank]) < 1e-5
    np.testing.assert_allclose(pod.singular_values[:rank], singular[:rank], rtol=1e-6)
    assert pod.snapshots == K
    np.testing.assert_allclose(pod.basis.T @ pod.basis, np.eye(pod.basis.shape[1]), atol=1e-12)


def test_exactly_low_rank_data_are_exact_and_the_transition_maps_coordinates():
    rng = np.random.default_rng(7)
    X = _low_rank(rng, 400, 300, 4, noise=0.0)
    pod = IncrementalPOD(4, oversampling=2)
    pod.update(X[:, :100])
    old = pod.basis.copy()
    transition = pod.update(X[:, 100:])
    x = X[:, 50]                                   # in the span of the first basis
    np.testing.assert_allclose(transition @ (old.T @ x), pod.basis.T @ x, atol=1e-10)
    assert _angle(pod_modes([X], 4)[0], pod.basis[:, :4]) < 1e-10
    assert pod.discarded_energy < 1e-20 * np.sum(X ** 2)


def test_a_weak_mode_next_to_noise_is_where_the_approximation_shows():
    """No gap between a kept mode and the noise: the streamed span is an approximation,
    still close (the budget is the discarded energy)."""
    rng = np.random.default_rng(8)
    X = _low_rank(rng, 500, 600, 3, noise=0.3)
    pod = IncrementalPOD(3)
    for a in range(0, 600, 100):
        pod.update(X[:, a:a + 100])
    assert pod.discarded_energy > 0
    assert _angle(pod_modes([X], 3)[0], pod.basis[:, :3]) < 0.1
