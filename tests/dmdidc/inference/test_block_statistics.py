"""The block test's statistics on singular covariances (dmdidc.inference.blocks)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc, random_excitation
from dmdidc.inference.blocks import _quadratic_forms


@pytest.mark.parametrize("seed", range(5))
def test_quadratic_forms_equal_the_solve_on_regular_covariances(seed):
    rng = np.random.default_rng(seed)
    k, n = 6, int(rng.integers(1, 6))
    factors = rng.standard_normal((k, n, n))
    covs = factors @ factors.transpose(0, 2, 1) + 0.1 * np.eye(n)
    columns = rng.standard_normal((k, n))
    expected = np.einsum("ka,ka->k", columns, np.linalg.solve(covs, columns[:, :, None])[:, :, 0])
    np.testing.assert_allclose(_quadratic_forms(columns, covs), expected, rtol=1e-10)


def test_a_direction_without_variance_makes_a_column_certain_not_an_error():
    # An eigenvalue rounded to -tiny made S + tiny I exactly singular: solve raised a bare
    # LinAlgError (under OPENBLAS_CORETYPE=Prescott, on noise-free records).
    tiny = np.finfo(float).tiny
    vectors = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
    covs = (vectors * np.array([-tiny, 0.0, 1.0])) @ vectors.T
    columns = np.stack([vectors[:, 2], vectors[:, 0], np.zeros(3)])
    statistics = _quadratic_forms(columns, np.stack([covs] * 3))
    assert np.all(statistics >= 0.0)
    # a coefficient known to rounding: the covariance's rounding (about eps) is all the variance
    # left in that direction, so the statistic is at least of order 1 / eps (1e18 under
    # SkylakeX, 1e308 where an eigenvalue rounds to -tiny); the unit direction gives about 1
    assert statistics[1] > 1e12 * max(statistics[0], 1.0)
    assert statistics[2] == 0.0


@pytest.mark.parametrize("seed, max_delay", [(20, 0), (28, 1)])
def test_noise_free_records_that_raised_under_prescott_fit(seed, max_delay):
    # The draws of benchmarks/bench_max_delay0.py (seeds 20 and 28, delayed, noise-free) that
    # raised LinAlgError in the block test under Prescott kernels.
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    A = rng.standard_normal((n, n))
    A -= (np.linalg.eigvals(A).real.max() + rng.uniform(0.1, 1.0)) * np.eye(n)
    delays = rng.uniform(0.3, 2.0, m) * 0.5
    plant = DelayedPlant.from_continuous(A, rng.standard_normal((n, m)), delays, 0.5)
    U = random_excitation(m, 2000, rng=rng)
    X = plant.simulate(np.zeros(n), U)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=max_delay).fit(X, U, dt=0.5)
    assert np.isfinite(est.block_test_.statistics).any()


@pytest.mark.parametrize("seed", range(4))
def test_covariances_singular_to_rounding_never_give_negative_statistics(seed):
    # review: the solve on random rank-2 4 x 4 covariances gave negative forms (-6.8e14) for
    # coefficients outside their range, which are certain, not without evidence
    rng = np.random.default_rng(seed)
    factors = rng.standard_normal((200, 4, 2))
    covs = factors @ factors.transpose(0, 2, 1)
    columns = rng.standard_normal((200, 4))
    statistics = _quadratic_forms(columns, covs)
    assert np.all(statistics >= 0.0)
    assert np.all(statistics > 1e6)        # every column leaves the covariance's range
