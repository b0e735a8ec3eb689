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


def test_autocovariances_refuse_bad_series_loudly():
    # each bad input raises the package's errors naming the argument: no IndexError, no
    # broadcasting message, no complex values silently made real
    ones = np.ones((2, 5))
    bad = [(([], 2), ParameterError, "series is empty"),
           (([ones], -1), ParameterError, "max_lag"),
           (([ones], 1.5), ParameterError, "max_lag"),
           (([np.ones(5)], 1), DimensionError, r"series\[0\] has shape"),
           (([ones, np.ones((3, 4))], 1), DimensionError, r"series\[1\] has 3 rows"),
           (([ones, ones * 1j], 1), ParameterError, r"series\[1\] is complex")]
    for args, error, message in bad:
        with pytest.raises(error, match=message):
            autocovariances(*args)


@pytest.mark.parametrize("seed", range(4))
def test_autocovariances_accept_good_series_of_any_lengths(seed):
    # no false alarm: empty, single-sample and integer series, any lag including 0
    rng = np.random.default_rng(seed)
    rows, lags = int(rng.integers(1, 4)), int(rng.integers(0, 6))
    series = [rng.integers(-3, 4, (rows, int(K))) for K in rng.integers(0, 9, 3)]
    out = autocovariances(series, lags)
    assert out.shape == (lags + 1, rows)
    lag0 = sum(np.sum(s.astype(float) ** 2, axis=1) for s in series)
    np.testing.assert_allclose(out[0], lag0, rtol=1e-12, atol=1e-12)


def test_residual_memory_skips_empty_pieces_without_a_warning():
    # A trajectory with no residual samples adds nothing (it used to warn "Mean of empty slice").
    import warnings

    from dmdidc.regression.instrumental import residual_memory

    rng = np.random.default_rng(0)
    e = rng.standard_normal((2, 500))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert residual_memory([e, np.zeros((2, 0))]) == residual_memory([e])
