"""OutputDMDidc.partial_fit: exact subspace statistics over chunks, a bounded reservoir."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc import IdData, OutputDMDidc
from dmdidc.errors import DimensionError, InsufficientExcitationError, ParameterError
from dmdidc.output.streaming import Reservoir, SubspaceStatistics
from dmdidc.output.subspace import subspace_basis

from .test_estimator import R, T, _experiment


def _eigenvalues(est: OutputDMDidc, n: int) -> np.ndarray:
    return np.sort_complex(np.linalg.eigvals(est.subspace_.dynamics(n)[0]))


def _stream(est: OutputDMDidc, Y, U, cuts, *, overlap: bool) -> OutputDMDidc:
    """Feed ``Y``, ``U`` in chunks starting at ``cuts`` (state convention when ``overlap``)."""
    edges = [*cuts, U.shape[1]]
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        est.partial_fit(Y[:, a:b + int(overlap)], U[:, a:b], dt=T)
    return est


@pytest.mark.parametrize("seed", range(4))
def test_streamed_statistics_equal_the_batch_ones(seed):
    """Random plants, 20 dB, random chunk boundaries (some shorter than one window)."""
    rng = np.random.default_rng(100 + seed)
    plant, C, Y, U = _experiment(seed, snr_db=20.0, K=2400)
    cuts = np.sort(rng.choice(np.arange(1, 2400), size=6, replace=False))
    cuts = [0, *cuts[:3], cuts[3], cuts[3] + 3, *cuts[4:]]          # one 3-sample chunk
    cuts = sorted(set(cuts))
    for offset in (True, False):
        stats = SubspaceStatistics(Y.shape[0], U.shape[0], max_delay=R, horizon=10,
                                   offset=offset)
        for a, b in zip(cuts, [*cuts[1:], 2400], strict=True):
            stats.update(Y[:, a:b], U[:, a:b], new_experiment=a == 0)
        scale = np.std(Y, axis=1)                       # about the experiment's mean
        np.testing.assert_allclose(stats.spread(), scale, rtol=1e-12)
        batch = subspace_basis([(Y / scale[:, None], U)], R, horizon=10, offset=offset)
        streamed = stats.basis(scale)
        assert streamed.columns == batch.columns
        np.testing.assert_allclose(streamed.singular_values, batch.singular_values,
                                   atol=1e-12)
        for n in (1, 3):
            np.testing.assert_allclose(
                np.sort_complex(np.linalg.eigvals(streamed.dynamics(n)[0])),
                np.sort_complex(np.linalg.eigvals(batch.dynamics(n)[0])), atol=1e-9)


@pytest.mark.parametrize("overlap", [True, False])
def test_partial_fit_within_memory_is_fit(overlap):
    plant, C, Y, U = _experiment(0, snr_db=20.0, K=3000)
    Ys = np.hstack([Y, Y[:, -1:]]) if overlap else Y          # any last output will do
    est = _stream(OutputDMDidc(max_delay=R), Ys, U, [0, 1000, 2000], overlap=overlap)
    batch = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
    assert est.samples_ == est.refinement_samples_ == 3000
    np.testing.assert_allclose(est.singular_values_, batch.singular_values_, atol=1e-12)
    assert est.order_ == batch.order_ == 3
    np.testing.assert_allclose(est.delay, batch.delay, atol=1e-6 * T)
    np.testing.assert_allclose(np.sort_complex(est.eigenvalues_),
                               np.sort_complex(batch.eigenvalues_), rtol=1e-4)   # optimizer


def test_beyond_memory_the_subspace_uses_everything_and_the_refinement_the_recent():
    plant, C, Y, U = _experiment(2, snr_db=20.0, K=6000, n=3)
    est = _stream(OutputDMDidc(max_delay=R, memory=2500), Y, U, range(0, 6000, 1000),
                  overlap=False)
    batch = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
    assert (est.samples_, est.refinement_samples_) == (6000, 2500)
    np.testing.assert_allclose(est.singular_values_, batch.singular_values_, atol=1e-12)
    np.testing.assert_allclose(_eigenvalues(est, 3), _eigenvalues(batch, 3), atol=1e-9)
    # the refinement sees 2500 samples: a coarser but right model
    assert est.order_ == 3
    assert np.max(np.abs(est.delay - plant.delay)) < 0.1 * T
    assert est.initial_states_.shape == (1, 3)


def test_lists_of_experiments_and_new_experiment_are_separate_experiments():
    plant, C, Y, U = _experiment(12, K=2400)
    est = OutputDMDidc(max_delay=R)
    est.partial_fit(Y[:, :1200], U[:, :1200], dt=T)
    est.partial_fit(Y[:, 1300:], U[:, 1300:], dt=T, new_experiment=True)     # a gap: new one
    np.testing.assert_allclose(est.delay, plant.delay, atol=1e-6 * T)
    assert est.initial_states_.shape == (2, 3)
    batch = OutputDMDidc(max_delay=R).fit([Y[:, :1200], Y[:, 1300:]],
                                          [U[:, :1200], U[:, 1300:]], dt=T)
    # exact data: the correlations beyond the order are rounding (~1e-10)
    np.testing.assert_allclose(est.singular_values_, batch.singular_values_, atol=1e-8)
    # an IdData with two experiments streams as two experiments
    data = IdData([Y[:, :1201] + 5.0, Y[:, 1300:] + 5.0], [U[:, :1200], U[:, 1300:-1]], dt=T,
                  operating_point=(np.full(2, 5.0), np.zeros(2)))
    from_data = OutputDMDidc(max_delay=R).partial_fit(data)
    assert from_data.initial_states_.shape == (2, 3)
    np.testing.assert_allclose(from_data.delay, plant.delay, atol=1e-6 * T)


def test_bad_chunks_are_loud():
    plant, C, Y, U = _experiment(14, K=1700)
    est = OutputDMDidc(max_delay=R).partial_fit(Y[:, :801], U[:, :800], dt=T)
    with pytest.raises(DimensionError, match="does not continue"):
        est.partial_fit(Y[:, 801:1601], U[:, 800:1599], dt=T)           # skipped y_800
    with pytest.raises(DimensionError, match="fixed one output more"):
        est.partial_fit(Y[:, 800:1600], U[:, 800:1600], dt=T)
    with pytest.raises(ParameterError, match="dt changed"):
        est.partial_fit(Y[:, 800:1601], U[:, 800:1600], dt=2 * T)
    with pytest.raises(DimensionError, match="outputs and"):
        est.partial_fit(Y[:1, 800:1601], U[:, 800:1600], dt=T)
    with pytest.raises(DimensionError, match="samples"):
        est.partial_fit(Y[:, 800:1605], U[:, 800:1600], dt=T)
    with pytest.raises(ParameterError, match="detrend"):
        OutputDMDidc(max_delay=R, detrend="constant").partial_fit(Y, U, dt=T)
    with pytest.raises(ParameterError, match="memory"):
        OutputDMDidc(max_delay=R, memory=10).partial_fit(Y, U, dt=T)
    bad = Y[:, 800:1601].copy()
    bad[1, 7] = np.inf
    with pytest.raises(ValueError, match="Y"):
        est.partial_fit(bad, U[:, 800:1600], dt=T)
    # a good chunk after the refused ones continues the stream
    est.partial_fit(Y[:, 800:1601], U[:, 800:1600], dt=T)
    np.testing.assert_allclose(est.delay, plant.delay, atol=1e-6 * T)


def test_too_little_data_so_far_says_so_and_more_data_fits():
    plant, C, Y, U = _experiment(3, n=2, m=2, outputs=1, K=1500)
    est = OutputDMDidc(max_delay=R).partial_fit(Y[:, :40], U[:, :40], dt=T)
    with pytest.raises(InsufficientExcitationError, match="not enough data streamed"):
        est.delay_ci()
    est.partial_fit(Y[:, 40:], U[:, 40:], dt=T)
    assert est.order_ == 2
    np.testing.assert_allclose(est.delay, plant.delay, atol=1e-6 * T)


def test_the_reservoir_keeps_the_most_recent_contiguous_samples():
    keep = Reservoir(memory=10, shortest=3)
    series = np.arange(30.0)[None]
    keep.add(series[:, :6], series[:, :6], new_experiment=True)
    keep.add(series[:, 6:9], series[:, 6:9], new_experiment=False)
    keep.add(series[:, 20:24], series[:, 20:24], new_experiment=True)
    kept = keep.experiments
    assert keep.size <= 10 and [Y.shape[1] for Y, _ in kept] == [6, 4]
    np.testing.assert_array_equal(kept[0][0], series[:, 3:9])     # the oldest lost its head
    keep.add(series[:, 24:29], series[:, 24:29], new_experiment=False)
    # the first experiment would keep 1 < 3 samples: dropped whole
    assert [Y.tolist() for Y, _ in keep.experiments] == [series[:, 20:29].tolist()]
