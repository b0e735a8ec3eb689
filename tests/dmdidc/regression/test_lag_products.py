"""The regression layer's lagged products (shared by the HAC covariance and the residual checks;
their blocked FFT against the direct sums is tested in
test_lag_product_sets.py): pooled over trajectories without products across them."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.errors import DimensionError, ParameterError
from dmdidc.regression.lag_products import autocovariances, lag_products


@pytest.mark.parametrize("lags", [0, 3, 25, 140])
def test_autocovariances_pool_trajectories_without_products_across_them(lags):
    rng = np.random.default_rng(lags)
    series = [rng.standard_normal((4, K)) + 1.0 for K in (300, 1, 60, 2)]
    expected = np.zeros((lags + 1, 4))
    for s in series:
        for tau in range(min(lags, s.shape[1] - 1) + 1):
            expected[tau] += np.sum(s[:, tau:] * s[:, :s.shape[1] - tau], axis=1)
    np.testing.assert_allclose(autocovariances(series, lags), expected, rtol=0,
                               atol=1e-12 * expected[0].max())


def test_lag_products_refuse_bad_series_loudly():
    with pytest.raises(ParameterError, match="low <= high"):
        lag_products(np.ones((1, 5)), np.ones((1, 5)), 3, 2)
    with pytest.raises(DimensionError, match="same number"):
        lag_products(np.ones((1, 5)), np.ones((1, 4)), 0, 2)
    with pytest.raises(ParameterError, match="complex"):
        lag_products(np.ones((1, 5)) * 1j, np.ones((1, 5)), 0, 2)


@pytest.mark.parametrize("name", ["autocovariances", "autocorrelations"])
def test_autocovariances_refuse_bad_series_loudly(name):
    # each bad input raises the package's errors naming the argument: no IndexError, no
    # broadcasting message, no complex values silently made real (autocorrelations, their
    # centred and normalized sibling, raised IndexError / numpy's broadcasting ValueError and
    # dropped the imaginary part with a ComplexWarning)
    from dmdidc.regression import lag_products as module

    function = getattr(module, name)
    ones = np.ones((2, 5))
    bad = [(([], 2), ParameterError, "series is empty"),
           (([ones], -1), ParameterError, "max_lag"),
           (([ones], 1.5), ParameterError, "max_lag"),
           (([np.ones(5)], 1), DimensionError, r"series\[0\] has shape"),
           (([ones, np.ones((3, 4))], 1), DimensionError, r"series\[1\] has 3 rows"),
           (([ones, ones * 1j], 1), ParameterError, r"series\[1\] is complex")]
    for args, error, message in bad:
        with pytest.raises(error, match=message):
            function(*args)


@pytest.mark.parametrize("seed", range(4))
def test_autocovariances_accept_good_series_of_any_lengths(seed):
    # no false alarm: empty, single-sample and integer series, any lag including 0
    from dmdidc.regression.lag_products import autocorrelations

    rng = np.random.default_rng(seed)
    rows, lags = int(rng.integers(1, 4)), int(rng.integers(0, 6))
    series = [rng.integers(-3, 4, (rows, int(K))) for K in rng.integers(0, 9, 3)]
    out = autocovariances(series, lags)
    assert out.shape == (lags + 1, rows)
    lag0 = sum(np.sum(s.astype(float) ** 2, axis=1) for s in series)
    np.testing.assert_allclose(out[0], lag0, rtol=1e-12, atol=1e-12)
    rho = autocorrelations(series, lags)
    assert rho.shape == (lags + 1, rows) and np.isfinite(rho).all()
    assert np.all((rho[0] == 1.0) | (rho[0] == 0.0)) and np.all(np.abs(rho) <= 1.0 + 1e-12)


def test_residual_memory_skips_empty_pieces_without_a_warning():
    # A trajectory with no residual samples adds nothing (it used to warn "Mean of empty slice").
    import warnings

    from dmdidc.regression.instrumental import residual_memory

    rng = np.random.default_rng(0)
    e = rng.standard_normal((2, 500))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert residual_memory([e, np.zeros((2, 0))]) == residual_memory([e])


@pytest.mark.parametrize("seed", range(6))
def test_autocorrelations_equal_the_centred_sums_per_piece(seed):
    """Each piece centred on its own mean, lags within a piece, pooled; empty pieces add
    nothing and a constant row gives zeros (no division by zero)."""
    from dmdidc.regression.lag_products import autocorrelations

    rng = np.random.default_rng(seed)
    rows, lags = int(rng.integers(1, 4)), int(rng.integers(1, 40))
    series = [np.cumsum(rng.standard_normal((rows, int(K))), axis=1) + 3.0
              for K in rng.integers(0, 300, 4)]
    series[0] = np.zeros((rows, 0))
    series[1][-1] = 2.0                                    # constant within its piece
    centred = [s - s.mean(axis=1, keepdims=True) for s in series if s.shape[1]]
    cov = np.stack([sum(np.sum(c[:, v:] * c[:, :c.shape[1] - v], axis=1) if v < c.shape[1]
                        else np.zeros(rows) for c in centred) for v in range(lags + 1)])
    expected = cov / np.where(cov[0] > 0, cov[0], 1.0)
    np.testing.assert_allclose(autocorrelations(series, lags), expected, atol=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_residual_memory_decides_as_the_centred_autocovariances(seed):
    """residual_memory reads the shared autocorrelations: the same memory as its former
    autocovariances of the centred pieces, on white, moving-average and AR residuals."""
    from scipy import signal, special

    from dmdidc.regression.instrumental import _MAX_HAC_LAGS, residual_memory

    rng = np.random.default_rng(seed)
    colour = [[1.0], [1.0, 0.5], [1.0, -0.3, 0.2, 0.4]][seed % 3]
    residuals = [signal.lfilter(colour, [1.0, -0.5 * (seed % 2)],
                                rng.standard_normal((3, int(K))), axis=1) + 1.0
                 for K in rng.integers(50, 2000, 3)]
    N = sum(e.shape[1] for e in residuals)
    limit = int(min(_MAX_HAC_LAGS, max(N // 10, 1)))
    cov = autocovariances([e - e.mean(axis=1, keepdims=True) for e in residuals], limit)
    rho = cov / np.where(cov[0] > 0, cov[0], 1.0)
    z = float(special.ndtri(1.0 - 0.01 / (2.0 * rho.size)))
    significant = np.flatnonzero(np.any(np.abs(rho[1:]) > z / np.sqrt(N), axis=1))
    assert residual_memory(residuals) == (int(significant[-1]) + 1 if significant.size else 0)


@pytest.mark.parametrize("seed", range(8))
def test_trimmed_autocovariances_equal_those_of_the_trimmed_pieces(seed):
    """The pieces less their first and last trim samples, each re-centred, from the whole
    pieces' sums: the same sums as computed on the trimmed pieces (pieces left with fewer
    than two samples out; lags beyond a short piece, and trims beyond the lags)."""
    from dmdidc.regression.lag_products import (
        centred_autocovariances,
        trimmed_autocovariances,
    )

    rng = np.random.default_rng(seed)
    rows, lags, trim = int(rng.integers(1, 4)), int(rng.integers(0, 40)), int(rng.integers(0, 12))
    series = [np.cumsum(rng.standard_normal((rows, int(K))), axis=1) + 5.0
              for K in rng.integers(1, 150, 5)]
    full, laid, layout = centred_autocovariances(series, lags)
    sums, samples = trimmed_autocovariances(laid, layout, full, trim, lags)
    kept = [s[:, trim:s.shape[1] - trim] for s in series if s.shape[1] - 2 * trim >= 2]
    assert samples == sum(s.shape[1] for s in kept)
    expected = (centred_autocovariances(kept, lags)[0] if kept
                else np.zeros((lags + 1, rows)))
    scale = max(np.abs(expected).max(initial=0.0), 1.0)
    np.testing.assert_allclose(sums, expected, rtol=0, atol=1e-12 * scale)
    with pytest.raises(ParameterError, match="gap"):
        trimmed_autocovariances(laid, layout, full, trim, layout.gap)
    with pytest.raises(ParameterError, match="trim"):
        trimmed_autocovariances(laid, layout, full, -1, lags)
    with pytest.raises(DimensionError, match="pooled"):
        trimmed_autocovariances(laid, layout, full[:, :0], trim, lags)
    with pytest.raises(DimensionError, match="layout's size"):
        trimmed_autocovariances(laid[:, 1:], layout, full, trim, lags)


@pytest.mark.parametrize("seed", range(12))
def test_residual_memory_of_trimmed_pieces_is_theirs(seed):
    """residual_memory(residuals, trim) pairs the memory with that of the trimmed pieces
    (what the moment checks test), on white, moving-average and AR residuals, in long pieces
    (from the pairs the cut removes) and many short ones (the trimmed pieces anew)."""
    from scipy import signal

    from dmdidc.regression.instrumental import residual_memory

    rng = np.random.default_rng(seed)
    colour = [[1.0], [1.0, 0.5], [1.0, -0.3, 0.2, 0.4]][seed % 3]
    lengths = rng.integers(15, 3000, 4) if seed < 6 else rng.integers(0, 80, 60)
    residuals = [signal.lfilter(colour, [1.0, -0.8 * (seed % 2)],
                                rng.standard_normal((3, int(K))), axis=1) + 1.0
                 for K in lengths]
    trim = int(rng.integers(1, 12))
    trimmed = [e[:, trim:e.shape[1] - trim] for e in residuals if e.shape[1] - 2 * trim >= 2]
    assert residual_memory(residuals, trim) == (residual_memory(residuals),
                                                residual_memory(trimmed))


def test_residual_memory_of_no_residual_series_is_zero():
    # no rows (nothing to be serially correlated): memory 0, trimmed or not, not a division
    # by zero in the Bonferroni count
    from dmdidc.regression.instrumental import residual_memory

    empty = [np.zeros((0, 40)), np.zeros((0, 30))]
    assert residual_memory(empty) == 0
    assert residual_memory(empty, 4) == (0, 0)
