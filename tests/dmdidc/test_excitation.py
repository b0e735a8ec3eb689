"""Excitation inputs and excitation checks (dmdidc.excitation, Theorem 9.4.5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dmdidc import (
    DelayedPlant,
    DMDidc,
    ExcitationReport,
    InsufficientExcitationError,
    ParameterError,
    check_excitation,
    random_excitation,
    samples_needed,
)
from dmdidc.regression import lagged_inputs


@pytest.fixture(scope="module")
def plant():
    rng = np.random.default_rng(1)
    A_c = rng.standard_normal((3, 3)) * 0.5 - 0.5 * np.eye(3)
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((3, 2)), delay=[0.3, 0.75],
                                        dt=0.5, max_delay=2)


# ---------------------------------------------------------------------- samples_needed
@pytest.mark.parametrize("n, m, R", [(2, 2, 3), (1, 1, 0), (8, 3, 4), (20, 4, 20), (3, 0, 2)])
def test_samples_needed(n, m, R):
    assert samples_needed(n, m, R) == n + m * (R + 1)


@pytest.mark.parametrize("args, pattern", [((0, 1, 1), "n_states"), ((1, -1, 1), "n_inputs"),
                                           ((1, 1, -1), "max_delay"), ((1.5, 1, 1), "integer"),
                                           ((True, 1, 1), "integer")])
def test_samples_needed_errors(args, pattern):
    with pytest.raises(ParameterError, match=pattern):
        samples_needed(*args)


# ---------------------------------------------------------------------- random_excitation
def test_default_is_standard_normal_and_reproducible():
    U = random_excitation(3, 20000, rng=123)
    assert U.shape == (3, 20000)
    np.testing.assert_array_equal(U, random_excitation(3, 20000, rng=123))
    np.testing.assert_array_equal(U, random_excitation(3, 20000,
                                                       rng=np.random.default_rng(123)))
    assert not np.array_equal(U, random_excitation(3, 20000, rng=124))
    # N(0, 1): standard errors of mean and variance are ~0.004 and ~0.006 per channel.
    np.testing.assert_allclose(U.mean(axis=1), 0.0, atol=0.03)
    np.testing.assert_allclose(U.var(axis=1), 1.0, atol=0.05)
    assert stats.kstest(U.ravel(), "norm").pvalue > 1e-3


def test_generator_state_advances():
    rng = np.random.default_rng(5)
    first = random_excitation(2, 10, rng=rng)
    second = random_excitation(2, 10, rng=rng)
    assert not np.array_equal(first, second)


def test_scipy_distribution_and_scale():
    dist = stats.uniform(-1, 2)                                # U(-1, 1)
    U = random_excitation(2, 5000, distribution=dist, scale=3.0, rng=7)
    assert U.min() >= -3.0 and U.max() <= 3.0
    assert U.min() < -2.9 and U.max() > 2.9
    np.testing.assert_array_equal(U, random_excitation(2, 5000, distribution=dist, scale=3.0,
                                                       rng=7))
    np.testing.assert_allclose(U.var(), 3.0, rtol=0.05)        # (3^2) * 1/3
    laplace = random_excitation(1, 5000, distribution=stats.laplace(), rng=8)
    assert stats.kstest(laplace.ravel(), "laplace").pvalue > 1e-3


def test_callable_distribution_receives_generator_and_shape():
    seen = {}

    def sampler(generator, shape):
        seen["generator"], seen["shape"] = generator, shape
        return generator.uniform(2.0, 3.0, size=shape)

    U = random_excitation(2, 6, distribution=sampler, rng=9)
    assert isinstance(seen["generator"], np.random.Generator)
    assert seen["shape"] == (2, 6)
    assert np.all((U >= 2.0) & (U < 3.0))
    np.testing.assert_array_equal(U, np.random.default_rng(9).uniform(2.0, 3.0, size=(2, 6)))


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(distribution="normal"), "distribution must be"),
    (dict(distribution=lambda g, s: np.ones((3, 3))), "wrong shape"),
    (dict(distribution=lambda g, s: np.full(s, np.nan)), "non-finite"),
    (dict(scale=0.0), "scale must be > 0"),
    (dict(scale=-1.0), "scale"),
    (dict(rng="seed"), "rng"),
])
def test_random_excitation_errors(kwargs, pattern):
    with pytest.raises(ParameterError, match=pattern):
        random_excitation(2, 6, **kwargs)


@pytest.mark.parametrize("args", [(0, 5), (2, 0), (2.0, 5), (2, True)])
def test_random_excitation_size_errors(args):
    with pytest.raises(ParameterError):
        random_excitation(*args)


# ---------------------------------------------------------------------- check_excitation
def test_report_fields_match_independent_svd(plant):
    R = 2
    U = random_excitation(2, 40, rng=3)
    X = plant.simulate(np.zeros(3), U)
    report = check_excitation(X, U, max_delay=R)
    assert isinstance(report, ExcitationReport)
    Phi = np.concatenate([X[:, R:-1], lagged_inputs(U, R)])
    singular = np.linalg.svd(Phi / np.linalg.norm(Phi, axis=1, keepdims=True), compute_uv=False)
    assert report.n_regressors == 3 + 2 * 3 == Phi.shape[0]
    assert report.n_samples == 40 - R == Phi.shape[1]
    assert report.samples_needed == 9
    assert report.rank == 9
    assert report.largest_singular_value == pytest.approx(singular[0], rel=1e-10)
    assert report.smallest_singular_value == pytest.approx(singular[-1], rel=1e-8)
    assert report.condition_number == pytest.approx(singular[0] / singular[-1], rel=1e-8)
    assert report.sufficient
    assert str(report).startswith("excitation sufficient: rank 9/9, 38 samples (need 9)")


def test_constant_inputs_are_insufficient(plant):
    U = np.ones((2, 40))
    X = plant.simulate(np.zeros(3), U)
    report = check_excitation(X, U, max_delay=2)
    assert report.rank < report.n_regressors
    assert not report.sufficient
    assert "INSUFFICIENT" in str(report)
    # the smallest singular value is rounding (~1e-17): its ratio is meaningless, reported inf
    assert report.condition_number == float("inf")
    assert "condition number inf" in str(report)


def test_exactly_enough_samples_is_sufficient_and_one_fewer_is_not(plant):
    R = 2
    K = R + samples_needed(3, 2, R)                            # 2 + 9 = 11 inputs
    U = random_excitation(2, K, rng=4)
    X = plant.simulate(np.zeros(3), U)
    assert check_excitation(X, U, R).sufficient
    DMDidc(max_delay=R).fit(X, U, dt=0.5)                        # and the fit agrees
    short = check_excitation(X[:, :-1], U[:, :-1], R)
    assert short.n_samples == 8 and not short.sufficient
    with pytest.raises(InsufficientExcitationError):
        DMDidc(max_delay=R).fit(X[:, :-1], U[:, :-1], dt=0.5)


def test_trajectory_lists_add_samples(plant):
    U1, U2 = random_excitation(2, 6, rng=5), random_excitation(2, 7, rng=6)
    X1, X2 = plant.simulate(np.zeros(3), U1), plant.simulate(np.ones(3), U2)
    report = check_excitation([X1, X2], [U1, U2], max_delay=2)
    assert report.n_samples == 4 + 5
    assert report.sufficient
    assert not check_excitation(X1, U1, max_delay=2).sufficient


def test_check_excitation_errors(plant):
    U = random_excitation(2, 20, rng=3)
    X = plant.simulate(np.zeros(3), U)
    with pytest.raises(ParameterError, match="max_delay"):
        check_excitation(X, U, max_delay=-1)
    with pytest.raises(ParameterError, match="rank_rtol"):
        check_excitation(X, U, max_delay=1, rank_rtol=0.0)
    with pytest.raises(ValueError, match="U has 19 samples; expected 20"):
        check_excitation(X, U[:, 1:], max_delay=1)
