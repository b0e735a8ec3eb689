"""Attack (a): trajectory reconstruction from intercepted Gram blocks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from dmdidc.regression import lagged_inputs
from privacy.errors import DimensionError
from simulations.smartgrid import (
    draw_households,
    free_dimensions,
    gram_blocks,
    load_profiles,
    reconstruct_trajectory,
    relative_error,
    simulate_fleet,
)
from simulations.smartgrid.reconstruction import _jacobian, _observed, _prior_matrices, _residuals

R = 3


@pytest.fixture(scope="module")
def record():
    fleet = draw_households(2, rng=0)
    return simulate_fleet(fleet, load_profiles("extract"), start_day=3, days=1, rng=4)


def test_gram_blocks_are_the_lagged_data_products():
    rng = np.random.default_rng(0)
    X, U = 20 + rng.normal(size=(2, 31)), rng.normal(size=(1, 30))
    blocks = gram_blocks(X, U, R)
    Phi = np.vstack([X[:, R:-1], lagged_inputs(U, R)])
    Y = X[:, R + 1:]
    np.testing.assert_allclose(blocks.gram, Phi @ Phi.T, rtol=1e-12)
    np.testing.assert_allclose(blocks.cross, Y @ Phi.T, rtol=1e-12)
    np.testing.assert_allclose(blocks.target_gram, Y @ Y.T, rtol=1e-12)
    assert blocks.n_samples == 30 - R and blocks.n_states == 2


def test_jacobian_matches_finite_differences(record):
    X, U = record.X[0][:, :13], record.U[0][:, :12]
    blocks = gram_blocks(X, U, R)
    H = lagged_inputs(U, R)
    N = blocks.n_samples
    prior = _prior_matrices(record.households[0].plant, 2, 1, R)
    point = (X[:, R:] + 0.1).ravel()
    for model in (None, prior):
        args = (H, _observed(blocks), N, 2, model, 0.5)
        J = _jacobian(point, *args)
        numeric = np.array([approx_fprime(point, lambda z, r=r, a=args: _residuals(z, *a)[r],
                                          1e-6) for r in range(J.shape[0])])
        np.testing.assert_allclose(J, numeric, rtol=1e-5, atol=1e-5)


def test_short_windows_are_reconstructed_exactly(record):
    errors = []
    for start in (0, 60, 150):
        X, U = record.X[0][:, start:start + 11], record.U[0][:, start:start + 10]
        result = reconstruct_trajectory(gram_blocks(X, U, R), U, restarts=8, rng=1)
        errors.append(relative_error(result.states, X[:, R:]))
        assert result.statistics_residual < 1e-8
    assert max(errors) < 1e-6


def test_long_windows_leave_the_trajectory_undetermined(record):
    # Counting: 2 states x (K - R + 1) unknowns against 21 independent statistics.
    assert free_dimensions(record.X[0][:, :13], record.U[0][:, :12], R) == (20, 0)
    assert free_dimensions(record.X[0][:, :49], record.U[0][:, :48], R) == (92, 71)
    X, U = record.X[1][:, 100:149], record.U[1][:, 100:148]
    result = reconstruct_trajectory(gram_blocks(X, U, R), U, restarts=2, rng=1)
    # The optimizer matches the statistics, yet the trajectory it finds is another one.
    assert result.statistics_residual < 1e-6
    assert relative_error(result.states, X[:, R:]) > 0.3


def test_bad_inputs():
    X, U = np.ones((2, 11)), np.ones((1, 10))
    with pytest.raises(DimensionError, match="one more than U"):
        gram_blocks(X[:, :-1], U, R)
    with pytest.raises(DimensionError, match="need more than max_delay"):
        gram_blocks(X[:, :4], U[:, :3], R)
    with pytest.raises(DimensionError, match="expected 10"):
        reconstruct_trajectory(gram_blocks(X, U, R), U[:, :9])
    with pytest.raises(DimensionError, match="shape"):
        relative_error(np.ones((2, 3)), np.ones((2, 4)))



def test_start_level_is_checked(record):
    X, U = record.X[0][:, :11], record.U[0][:, :10]
    with pytest.raises(DimensionError, match="start_level has 3 entries; expected n=2"):
        reconstruct_trajectory(gram_blocks(X, U, R), U, start_level=[0.0, 0.0, 0.0])
