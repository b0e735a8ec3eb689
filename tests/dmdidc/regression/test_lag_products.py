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
