"""The analytic delta method gives the numbers of central differences, and the factored
eigenvalue and restriction covariances those of the dense Kronecker formulas."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dmdidc.inference.intervals as intervals
from dmdidc import DelayedPlant, DMDidc, random_excitation
from dmdidc.inference.diagnostics import eigenvalue_standard_errors, restricted_solution


def random_plant(rng, n, m, dt=0.5, R=4):
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c = Q @ (np.diag(rng.uniform(-2.0, -0.2, n))
               + 0.3 / np.sqrt(n) * np.triu(rng.standard_normal((n, n)), 1)) @ Q.T
    delay = rng.uniform(0.1, (R - 1) * dt, m)
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), delay, dt,
                                        max_delay=R)


def fitted(seed, n, m, noise=1e-3, K=3000, estimator="auto"):
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n, m)
    U = random_excitation(m, K, rng=rng)
    X = plant.simulate(np.zeros(n), U)
    X = X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plant, DMDidc(max_delay=plant.max_delay, estimator=estimator).fit(X, U,
                                                                                 dt=plant.dt)


@pytest.mark.parametrize("seed, n, m, estimator", [(0, 2, 1, "ls"), (1, 3, 2, "auto"),
                                                   (2, 4, 2, "iv"), (3, 5, 3, "ls"),
                                                   (4, 3, 1, "auto"), (5, 6, 2, "auto")])
def test_analytic_intervals_equal_central_differences(seed, n, m, estimator, monkeypatch):
    _, est = fitted(seed, n, m, estimator=estimator)
    if not est.model_.has_continuous:
        pytest.skip("no continuous model on this draw")
    analytic = est.confidence_intervals()
    monkeypatch.setattr(intervals, "model_jacobian", lambda *args: None)
    numeric = est.confidence_intervals()
    for name in ("delay", "A_c", "B_c"):
        a, b = getattr(analytic, name), getattr(numeric, name)
        np.testing.assert_array_equal(np.isnan(a.standard_error), np.isnan(b.standard_error))
        finite = np.isfinite(b.standard_error)
        # central differences with a step of 1e-3 standard errors are accurate to ~1e-6
        np.testing.assert_allclose(a.standard_error[finite], b.standard_error[finite],
                                   rtol=1e-5)
        np.testing.assert_array_equal(a.value, b.value)


@pytest.mark.parametrize("seed", range(5))
def test_intervals_cover_the_delay_on_random_plants(seed):
    plant, est = fitted(seed + 10, 3, 2, noise=1e-3, K=4000)
    ci = est.delay_ci(0.999)
    inside = (ci.low <= plant.delay) & (plant.delay <= ci.high)
    assert inside[np.isfinite(ci.standard_error)].all(), (plant.delay, str(ci))


@pytest.mark.parametrize("seed", range(5))
def test_factored_eigenvalue_errors_equal_the_dense_formula(seed):
    _, est = fitted(seed, 4, 2, estimator="auto")
    solution, A_d = est.regression_, est.model_.A_d
    n, p = solution.coefficients.shape
    rounding = np.finfo(float).eps * solution.target_rms
    cov = solution.covariance() + np.kron(np.diag(rounding ** 2), solution.unscaled_covariance)
    cov = cov.reshape(n, p, n, p)[:, :n, :, :n].reshape(n * n, n * n)
    values, right = np.linalg.eig(A_d)
    left = np.linalg.inv(right)
    gradients = np.einsum("ia,bi->iab", left, right).reshape(n, n * n)
    dense = np.sqrt(np.abs(np.einsum("ij,jk,ik->i", gradients, cov, gradients.conj())))
    got_values, got = eigenvalue_standard_errors(solution, A_d)
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_allclose(got, dense, rtol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_factored_restriction_equals_the_dense_projection(seed):
    _, est = fitted(seed, 3, 2)
    solution = est.regression_
    n, p = solution.coefficients.shape
    kept = est.block_test_.active
    restricted = restricted_solution(solution, kept)
    from dmdidc.inference.blocks import restriction_projector

    P = restriction_projector(solution, n, kept)
    dense = np.einsum("apbq,pc,qd->acbd", solution.covariance().reshape(n, p, n, p), P, P)
    np.testing.assert_allclose(restricted.covariance(), dense.reshape(n * p, n * p),
                               rtol=1e-9, atol=1e-12 * np.abs(dense).max())
