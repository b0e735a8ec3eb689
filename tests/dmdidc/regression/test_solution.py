"""Streaming Gram and TSQR accumulators (dmdidc.regression), checked against explicit matrices."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc import DimensionError, InsufficientExcitationError, ParameterError, RegressionSolution
from dmdidc.regression import GramAccumulator, QRAccumulator, lagged_inputs, make_accumulator


def explicit_regression(X, U, R):
    """Phi (p, N) = [x_k; u_k; ...; u_{k-R}] and Y (n, N) = x_{k+1}, k = R .. K-1, by a loop."""
    K = U.shape[1]
    cols = [np.concatenate([X[:, k]] + [U[:, k - j] for j in range(R + 1)]) for k in range(R, K)]
    return np.array(cols).T, X[:, R + 1:]


def random_data(rng, n, m, K):
    return rng.standard_normal((n, K + 1)), rng.standard_normal((m, K))


def feed(acc, X, U, cuts):
    """Feed one trajectory in chunks ending at the sample indices in ``cuts``."""
    start = 0
    for stop in list(cuts) + [U.shape[1]]:
        acc.update(X[:, start:stop + 1], U[:, start:stop])
        start = stop


def test_lagged_inputs_matches_loop():
    U = np.arange(2 * 7, dtype=float).reshape(2, 7)
    L = lagged_inputs(U, 2)
    assert L.shape == (6, 5)
    for c, k in enumerate(range(2, 7)):
        np.testing.assert_array_equal(L[:, c], np.concatenate([U[:, k], U[:, k - 1], U[:, k - 2]]))
    np.testing.assert_array_equal(lagged_inputs(U, 0), U)


@pytest.mark.parametrize("R", [0, 1, 4])
@pytest.mark.parametrize("cuts", [[], [1, 2, 3, 40], [5, 6, 7], [2, 30, 31, 32, 59]])
def test_gram_accumulator_equals_explicit_products(R, cuts):
    rng = np.random.default_rng(R)
    n, m, K = 3, 2, 60
    X, U = random_data(rng, n, m, K)
    X *= 1e3                                                # different scales on purpose
    acc = GramAccumulator(n, m, R)
    feed(acc, X, U, cuts)
    Phi, Y = explicit_regression(X, U, R)
    assert acc.n_samples == K - R == Phi.shape[1]
    scale = np.linalg.norm(Phi, axis=1)
    np.testing.assert_allclose(acc.symmetric_gram() / np.outer(scale, scale),
                               Phi @ Phi.T / np.outer(scale, scale), atol=1e-13)
    np.testing.assert_allclose(acc.cross, Y @ Phi.T, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(acc.target_gram, Y @ Y.T, rtol=1e-12)


@pytest.mark.parametrize("R", [0, 3])
def test_qr_factor_reproduces_gram(R):
    rng = np.random.default_rng(10 + R)
    n, m, K = 2, 3, 50
    X, U = random_data(rng, n, m, K)
    acc = QRAccumulator(n, m, R)
    feed(acc, X, U, [1, 2, 20])
    Phi, Y = explicit_regression(X, U, R)
    full = np.concatenate([Phi, Y])
    np.testing.assert_allclose(acc.factor.T @ acc.factor, full @ full.T, rtol=1e-12, atol=1e-11)
    assert acc.factor.shape == (acc.p + n, acc.p + n)       # memory independent of K


def test_multiple_trajectories_do_not_straddle():
    rng = np.random.default_rng(3)
    n, m, R = 2, 1, 2
    X1, U1 = random_data(rng, n, m, 20)
    X2, U2 = random_data(rng, n, m, 15)
    for cls in (GramAccumulator, QRAccumulator):
        acc = cls(n, m, R)
        feed(acc, X1, U1, [4])
        acc.new_trajectory()
        feed(acc, X2, U2, [1])
        Phi = np.concatenate([explicit_regression(X1, U1, R)[0],
                              explicit_regression(X2, U2, R)[0]], axis=1)
        Y = np.concatenate([X1[:, R + 1:], X2[:, R + 1:]], axis=1)
        assert acc.n_samples == 18 + 13
        coefficients = np.linalg.lstsq(Phi.T, Y.T, rcond=None)[0].T
        np.testing.assert_allclose(acc.solution().coefficients, coefficients, atol=1e-10)
        np.testing.assert_allclose(acc.regressor_sum, Phi.sum(axis=1), atol=1e-12)
        np.testing.assert_allclose(acc.target_sum, Y.sum(axis=1), atol=1e-12)


@pytest.mark.parametrize("cls", [GramAccumulator, QRAccumulator])
def test_solution_equals_lstsq_with_residual_and_spectrum(cls):
    rng = np.random.default_rng(5)
    n, m, R, K = 3, 2, 2, 80
    X, U = random_data(rng, n, m, K)                        # Y is not linear in Phi: residual
    acc = cls(n, m, R)
    feed(acc, X, U, [10, 33])
    Phi, Y = explicit_regression(X, U, R)
    solution = acc.solution()
    assert isinstance(solution, RegressionSolution)
    coefficients = np.linalg.lstsq(Phi.T, Y.T, rcond=None)[0].T
    np.testing.assert_allclose(solution.coefficients, coefficients, atol=1e-11)
    residual = np.linalg.norm(Y - coefficients @ Phi)
    assert solution.residual_norm == pytest.approx(residual, rel=1e-8)
    equilibrated = Phi / np.linalg.norm(Phi, axis=1, keepdims=True)
    singular = np.linalg.svd(equilibrated, compute_uv=False)
    np.testing.assert_allclose(solution.singular_values, singular, rtol=1e-10)
    assert solution.condition_number == pytest.approx(singular[0] / singular[-1], rel=1e-9)
    assert (solution.rank, solution.n_samples) == (acc.p, K - R)


@pytest.mark.parametrize("cls", [GramAccumulator, QRAccumulator])
def test_add_samples_explicit(cls):
    rng = np.random.default_rng(6)
    Phi = rng.standard_normal((5, 40))
    C = rng.standard_normal((2, 5))
    acc = cls(2, 1, 2)                                       # p = 2 + 1 * 3 = 5
    acc.add_samples(Phi[:, :17], C @ Phi[:, :17])
    acc.add_samples(Phi[:, 17:], C @ Phi[:, 17:])
    assert acc.n_samples == 40
    np.testing.assert_allclose(acc.solution().coefficients, C, atol=1e-12)


@pytest.mark.parametrize("cls", [GramAccumulator, QRAccumulator])
def test_too_few_samples_and_rank_deficiency(cls):
    rng = np.random.default_rng(7)
    n, m, R = 2, 2, 1                                        # p = 6
    X, U = random_data(rng, n, m, R + 5)                     # 5 samples
    acc = cls(n, m, R)
    acc.update(X, U)
    with pytest.raises(InsufficientExcitationError, match="5 regression samples; at least 6"):
        acc.solution()
    acc2 = cls(n, m, R)
    X2, U2 = rng.standard_normal((n, 31)), np.tile(rng.standard_normal(30), (2, 1))
    acc2.update(X2, U2)
    with pytest.raises(InsufficientExcitationError, match="numerical rank 4 of 6"):
        acc2.solution()
    truncated = acc2.solution(svd_rank=4)                    # deliberate reduced fit
    assert truncated.rank == 4
    assert truncated.condition_number == float("inf")        # rank-deficient data
    with pytest.raises(DimensionError, match="regression_rank must be between 1 and 6"):
        acc2.solution(svd_rank=7)


@pytest.mark.parametrize("cls", [GramAccumulator, QRAccumulator])
def test_covariance_residual_mean_and_standard_errors_equal_explicit_formulas(cls):
    rng = np.random.default_rng(8)
    n, m, R, K = 3, 2, 2, 90
    X, U = random_data(rng, n, m, K)
    X += 0.7                                                 # an offset: non-zero residual mean
    acc = cls(n, m, R)
    feed(acc, X, U, [11, 40])
    Phi, Y = explicit_regression(X, U, R)
    N, p = Phi.shape[1], Phi.shape[0]
    theta = np.linalg.lstsq(Phi.T, Y.T, rcond=None)[0].T
    E = Y - theta @ Phi
    solution = acc.solution()
    np.testing.assert_allclose(solution.unscaled_covariance, np.linalg.inv(Phi @ Phi.T),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(solution.residual_covariance, E @ E.T / (N - p), rtol=1e-8)
    np.testing.assert_allclose(solution.residual_mean, E.mean(axis=1), atol=1e-10)
    assert np.abs(solution.residual_mean).max() > 1e-3
    np.testing.assert_allclose(solution.target_rms, np.sqrt(np.mean(Y ** 2, axis=1)), rtol=1e-12)
    expected = np.sqrt(np.outer(np.diag(E @ E.T) / (N - p), np.diag(np.linalg.inv(Phi @ Phi.T))))
    np.testing.assert_allclose(solution.standard_errors, expected, rtol=1e-8)
    assert solution.dof == N - p


@pytest.mark.statistical
def test_standard_errors_match_the_spread_of_repeated_estimates():
    # Monte Carlo: 400 independent regressions y = theta phi + e, Gaussian e with covariance S.
    rng = np.random.default_rng(9)
    n, p, N = 2, 4, 60
    theta = rng.standard_normal((n, p))
    L = np.array([[1.0, 0.0], [0.6, 0.5]])
    Phi = rng.standard_normal((p, N))                       # fixed design
    estimates, reported = [], []
    for _ in range(400):
        Y = theta @ Phi + L @ rng.standard_normal((n, N))
        acc = QRAccumulator(n, 2, 0)                         # p = n + 2 = 4 regressors
        acc.add_samples(Phi, Y)
        solution = acc.solution()
        estimates.append(solution.coefficients)
        reported.append(solution.standard_errors)
    spread = np.std(np.array(estimates), axis=0, ddof=1)
    mean_reported = np.mean(np.array(reported), axis=0)
    # 400 replications: the sample std is within ~3.5 * 3.5% of the truth.
    np.testing.assert_allclose(mean_reported, spread, rtol=0.15)


def test_condition_number_infinite_when_singular():
    rng = np.random.default_rng(10)
    X = rng.standard_normal((2, 41))
    U = np.ones((1, 40))                                     # constant input: rank-deficient
    for cls in (GramAccumulator, QRAccumulator):
        acc = cls(2, 1, 1)
        acc.update(X, U)
        solution = acc.solution(svd_rank=3)
        assert solution.condition_number == float("inf")
        assert solution.singular_values[-1] <= solution.rank_tolerance


def test_make_accumulator():
    assert isinstance(make_accumulator("gram", 2, 1, 3), GramAccumulator)
    assert isinstance(make_accumulator("qr", 2, 1, 3), QRAccumulator)
    assert make_accumulator("qr", 2, 1, 3).p == 2 + 1 * 4
    with pytest.raises(ParameterError, match="'gram' or 'qr'"):
        make_accumulator("svd", 2, 1, 3)


def _close_modes(rng, gap, noise, K=3000):
    """A plant of two nearly equal modes (cond 2e2 - 5e4 with ``gap`` 1e-3 - 1e-5) and states
    measured with relative noise ``noise``."""
    from dmdidc import DelayedPlant, random_excitation

    true = DelayedPlant.from_continuous(np.diag([-0.1, -0.1 + gap]), np.array([[1.0], [1.0]]),
                                        0.45, 1.0, max_delay=2)
    U = random_excitation(1, K, rng=rng)
    X = true.simulate(np.zeros(2), U)
    return X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape), U


@pytest.mark.parametrize("seed", range(8))
def test_auto_skips_refinement_only_when_its_rounding_hides_in_the_noise(seed):
    """cond in (1e4, 1e6]: the Gram solution is kept when the estimated rounding error is at
    most 1 % of every standard error, and then differs from QR by little of one (the estimate
    was measured within 0.3-3x); otherwise refinement reaches QR's accuracy."""
    from dmdidc.regression.solution import (
        GRAM_CONDITION_LIMIT,
        REFINEMENT_CONDITION_LIMIT,
        ROUNDING_SHARE,
        _rounding_share,
        least_squares,
    )

    rng = np.random.default_rng(seed)
    for noise in (1e-4, 1e-6, 1e-8, 1e-11):
        X, U = _close_modes(rng, 1e-5, noise)
        gram, _ = least_squares([(X, U)], 2, method="gram")
        if not GRAM_CONDITION_LIMIT < gram.condition_number <= REFINEMENT_CONDITION_LIMIT:
            continue
        auto, _ = least_squares([(X, U)], 2)
        qr, _ = least_squares([(X, U)], 2, method="qr")
        error = np.max(np.abs(auto.coefficients - qr.coefficients) / qr.standard_errors)
        if _rounding_share(gram) <= ROUNDING_SHARE:
            np.testing.assert_array_equal(auto.coefficients, gram.coefficients)
            assert error < 5 * ROUNDING_SHARE
        else:                            # refined: far below the Gram solution's error
            assert error < 1e-3 * ROUNDING_SHARE + 0.1 * np.max(
                np.abs(gram.coefficients - qr.coefficients) / qr.standard_errors)


@pytest.mark.parametrize("seed", range(4))
def test_noise_free_fits_are_always_refined(seed):
    """Exact fits' residuals are rounding, not noise: the share is infinite and "auto"
    reaches QR's accuracy (QR itself: the moments' residual covariance is rounding too,
    :func:`test_auto_takes_qr_when_the_residual_covariance_is_the_moments_rounding`)."""
    from dmdidc.regression.solution import _rounding_share, least_squares

    rng = np.random.default_rng(seed)
    for gap in (1e-5, 1e-6):
        X, U = _close_modes(rng, gap, 0.0)
        gram, _ = least_squares([(X, U)], 2, method="gram")
        if gram.condition_number > 1e6:
            continue
        assert _rounding_share(gram) == np.inf
        auto, _ = least_squares([(X, U)], 2)
        qr, _ = least_squares([(X, U)], 2, method="qr")
        assert np.max(np.abs(auto.coefficients - qr.coefficients)) <= 1e-3 * np.max(
            np.abs(gram.coefficients - qr.coefficients)) + 1e-13


def _eight_digits(a):
    """``a`` as written with ``%.8g`` and read back."""
    return np.array([float(f"{v:.8g}") for v in np.ravel(a)]).reshape(np.shape(a))


@pytest.mark.parametrize("seed", range(4))
def test_auto_takes_qr_when_the_residual_covariance_is_the_moments_rounding(seed):
    """Exact states written with 8 digits: the residuals (the rounding, ~1e-8 of the data's
    level) are as small as the normal equations' own rounding of ``||y||^2``, so their
    residual covariance is not even the right size; "auto" sees it
    (``residual_rounding_share`` above ROUNDING_SHARE) and takes QR's.  With noise of 1e-3
    the share is far below it, the Gram solution is kept, and its covariance is QR's."""
    from dmdidc import random_excitation
    from dmdidc.regression.solution import ROUNDING_SHARE, least_squares, residual_rounding_share
    from simulations.studies.data_kinds import random_plant

    rng = np.random.default_rng(seed)
    plant = random_plant(rng)
    U = random_excitation(plant.n_inputs, 3000, rng=rng)
    X = plant.simulate(np.zeros(plant.n_states), U)
    noisy = X + 1e-3 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    for data, rounded in (((_eight_digits(X), _eight_digits(U)), True), ((noisy, U), False)):
        gram, accumulator = least_squares([data], 4, method="gram")
        auto, _ = least_squares([data], 4)
        qr, _ = least_squares([data], 4, method="qr")
        share = residual_rounding_share(gram, np.diag(accumulator.target_gram))
        variances = [np.diag(fit.residual_covariance) for fit in (gram, auto, qr)]
        if rounded:
            assert share > ROUNDING_SHARE
            np.testing.assert_allclose(variances[1], variances[2], rtol=1e-6)
        else:
            assert share < 1e-3 * ROUNDING_SHARE
            np.testing.assert_array_equal(auto.coefficients, gram.coefficients)
            np.testing.assert_allclose(variances[0], variances[2], rtol=1e-3)


@pytest.mark.parametrize("seed", range(4))
def test_qr_affine_solution_is_the_centred_moments_solution(seed):
    """``QRAccumulator.solution(centred=True)`` is the affine fit of the centred moments (one
    intercept): same coefficients, residual covariance, degrees of freedom and zero sums, on
    well-conditioned data with an offset; the fit through the origin is unchanged."""
    from dmdidc.statistics.fit import regression_from_statistics
    from dmdidc.statistics.layout import StatisticsLayout
    from dmdidc.statistics.statistics import SufficientStatistics

    rng = np.random.default_rng(40 + seed)
    n, m, R = 2, int(rng.integers(1, 3)), int(rng.integers(0, 3))
    X, U = random_data(rng, n, m, 400)
    X, U = X + rng.uniform(-5, 5, (n, 1)), U + rng.uniform(-2, 2, (m, 1))
    qr, gram = QRAccumulator(n, m, R), GramAccumulator(n, m, R)
    feed(qr, X, U, [7, 150])
    feed(gram, X, U, [7, 150])
    Phi, Y = explicit_regression(X, U, R)
    V = np.concatenate([Phi, Y])
    stats = SufficientStatistics.plain(StatisticsLayout(n, m, R, None, 0, 0), V @ V.T,
                                       V.sum(axis=1), V.shape[1])
    expected = regression_from_statistics(stats.centered(), R)
    found = qr.solution(centred=True)
    np.testing.assert_allclose(found.coefficients, expected.coefficients, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(found.residual_covariance, expected.residual_covariance,
                               rtol=1e-8)
    np.testing.assert_allclose(found.standard_errors, expected.standard_errors, rtol=1e-8)
    assert found.dof == expected.dof == V.shape[1] - Phi.shape[0] - 1
    np.testing.assert_array_equal(found.residual_mean, 0.0)
    np.testing.assert_allclose(qr.solution().coefficients, gram.solution().coefficients,
                               rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_auto_refines_noisy_fits_whose_rounding_shows(seed):
    """Low noise (relative residual 2e-6, above EXACT_FIT), cond ~4e5 and 1e5 samples: the
    estimated share (0.016) is finite and above ROUNDING_SHARE, so "auto" refines (the Gram
    solution was 1-2.6 % of a standard error from QR, the refined one ~3e-7); the estimate
    follows the actual error (0.6-1.6x here; 0.3-3x over the plants of its docstring)."""
    from dmdidc.regression.solution import ROUNDING_SHARE, _rounding_share, least_squares

    X, U = _close_modes(np.random.default_rng(seed), 1e-6, 1.5e-6, K=100_000)
    gram, _ = least_squares([(X, U)], 2, method="gram")
    share = _rounding_share(gram)
    assert ROUNDING_SHARE < share < np.inf
    auto, _ = least_squares([(X, U)], 2)
    qr, _ = least_squares([(X, U)], 2, method="qr")
    before = np.max(np.abs(gram.coefficients - qr.coefficients) / qr.standard_errors)
    after = np.max(np.abs(auto.coefficients - qr.coefficients) / qr.standard_errors)
    assert after < 0.01 * before
    assert 0.1 < before / share < 10


@pytest.mark.parametrize("samples", [3, 60, 400])
def test_a_qr_accumulator_pickled_without_its_ones_column_gets_it_back(samples):
    """An accumulator pickled before the column of ones was kept (``factor`` alone) is
    restored with it from its sums: the same factor, and the same affine solution as the
    accumulator that kept it, also after more samples."""
    import pickle

    rng = np.random.default_rng(samples)
    n, m, R = 2, 1, 2
    X, U = random_data(rng, n, m, samples + 200)
    X = X + 4.0
    acc = QRAccumulator(n, m, R)
    feed(acc, X[:, :samples + 1], U[:, :samples], [1])
    state = {k: v for k, v in acc.__dict__.items() if k != "_factor"}
    state["factor"] = acc.factor.copy()
    old = QRAccumulator.__new__(QRAccumulator)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    np.testing.assert_allclose(old.factor, acc.factor, rtol=0, atol=0)
    np.testing.assert_allclose(old._factor.T @ old._factor, acc._factor.T @ acc._factor,
                               rtol=1e-10, atol=1e-9)
    for a in (acc, old):
        a.update(X[:, samples:], U[:, samples:])
    np.testing.assert_allclose(old.solution(centred=True).coefficients,
                               acc.solution(centred=True).coefficients, rtol=1e-9, atol=1e-10)
