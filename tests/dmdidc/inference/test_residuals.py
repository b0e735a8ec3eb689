"""The moment statistic's quadratic form: Cholesky when safe, the same number as the
eigen-decomposition's pseudo-inverse form."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.inference.residuals import _pseudo_quadratic


def _eigen_form(V, g):
    values, vectors = np.linalg.eigh(V)
    keep = values > 1e-10 * values.max()
    projected = vectors[:, keep].T @ g
    return float(np.sum(projected ** 2 / values[keep])), int(keep.sum())


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("size, columns", [(40, 80), (200, 600), (60, 30), (60, 60)])
def test_cholesky_and_eigen_forms_agree(seed, size, columns, overwrite):
    # overwrite: factored in V's memory, and V rebuilt from its upper triangle when the
    # shifted factorization fails (columns < size: singular, the eigen path)
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((size, columns)) * np.exp(rng.uniform(-3, 3, columns))
    V = M @ M.T
    kept = V.copy()
    g = V @ rng.standard_normal(size) if columns < size else rng.standard_normal(size)
    statistic, rank = _pseudo_quadratic(V.copy() if overwrite else V, g, overwrite=overwrite)
    np.testing.assert_array_equal(V, kept)            # not overwritten unless allowed
    expected, expected_rank = _eigen_form(V, g)
    assert rank == expected_rank
    np.testing.assert_allclose(statistic, expected, rtol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_graded_kronecker_covariances_drop_the_same_directions(seed):
    # Moment covariances as the checks form them (a Bartlett sum of Kronecker products of
    # autocovariances) whose signal factor has a graded spectrum down to ~1e-13 of the largest:
    # some products fall below the threshold, some just above; g has components in all of them.
    rng = np.random.default_rng(seed)
    q, n, N = int(rng.integers(3, 13)), int(rng.integers(2, 8)), 3000
    W = rng.standard_normal((q, N)) * np.logspace(0, -rng.uniform(3, 6.5), q)[:, None]
    W = np.linalg.qr(rng.standard_normal((q, q)))[0] @ W
    E = rng.standard_normal((n, N + 1))
    E = E[:, 1:] - 0.6 * E[:, :-1]                     # a moving average, as measurement noise
    V = np.zeros((q * n, q * n))
    for tau, weight in ((0, 1.0), (1, 2.0 / 3.0), (2, 1.0 / 3.0)):
        term = np.kron(W[:, tau:] @ W[:, :N - tau].T, E[:, tau:] @ E[:, :N - tau].T)
        V += term if tau == 0 else weight * (term + term.T)
    V = 0.5 * (V + V.T)
    g = rng.standard_normal(q * n) * np.sqrt(np.abs(np.diag(V)))
    statistic, rank = _pseudo_quadratic(V, g)
    expected, expected_rank = _eigen_form(V, g)
    assert rank == expected_rank
    np.testing.assert_allclose(statistic, expected, rtol=1e-6)


def test_a_slow_series_refactors_the_matrix_it_overwrote():
    # eigenvalues down to 6e-10 of the largest: the shifted factor exists but its Neumann series
    # is slow, so V is factored again, rebuilt from the upper triangle the first factorization
    # left untouched
    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.standard_normal((50, 50)))[0]
    V = (Q * np.logspace(0, -9.2, 50)) @ Q.T
    V = 0.5 * (V + V.T)
    g = rng.standard_normal(50)
    assert _pseudo_quadratic(V.copy(), g, overwrite=True) == _pseudo_quadratic(V, g)


def test_a_singular_covariance_takes_the_eigen_path():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((30, 10))
    V = M @ M.T                                   # rank 10 of 30
    g = M @ rng.standard_normal(10)
    assert _pseudo_quadratic(V, g)[1] == 10


@pytest.mark.parametrize("seed", range(5))
def test_prewhitening_fir_is_the_causal_filter(seed):
    from scipy import signal

    from dmdidc.inference.residuals import _fir

    rng = np.random.default_rng(seed)
    taps = rng.standard_normal(rng.integers(1, 6))
    rows = rng.standard_normal((3, taps.size))    # one filter per row
    for K in (1, taps.size, 300):                 # fewer samples than taps too
        x = rng.standard_normal((3, K))
        np.testing.assert_allclose(_fir(taps, x), signal.lfilter(taps, [1.0], x, axis=1),
                                   atol=1e-12 * np.abs(x).max() * np.abs(taps).sum())
        np.testing.assert_allclose(
            _fir(rows, x),
            np.stack([signal.lfilter(r, [1.0], s) for r, s in zip(rows, x, strict=True)]),
            atol=1e-12 * np.abs(x).max() * np.abs(rows).sum())
    for a in (taps, rows):                        # no samples: nothing to filter
        assert _fir(a, np.zeros((3, 0))).shape == (3, 0)


@pytest.mark.parametrize("seed,lengths,lags", [(0, (4000,), 20), (1, (900, 1300), 25),
                                               (2, (600,), 30), (3, (150, 2000, 90), 12)])
def test_prewhitened_correlations_from_the_residual_moments_equal_filtering(seed, lengths, lags):
    """The factored moments of the filtered residuals are the filtered residuals' (rounding),
    and so are those of the pieces too short for them (filtered directly)."""
    import dataclasses

    from scipy import signal

    from dmdidc.inference.residuals import (
        _bartlett_sd,
        _cross_correlations,
        _prewhitened_correlations,
        _prewhitening_filter,
        _ResidualMoments,
    )
    from dmdidc.regression.lag_products import autocorrelations

    rng = np.random.default_rng(seed)
    E = [signal.lfilter([1.0], [1.0, -0.6], rng.standard_normal((3, K)), axis=1) + 0.2
         for K in lengths]
    S = [signal.lfilter([1.0], [1.0, -0.9], rng.standard_normal((2, K)), axis=1) - 1.0
         for K in lengths]
    tau = np.arange(-lags, lags + 1)
    N = sum(lengths)
    window, order = min(25, N // 10), min(10, N // 50)
    moments = _ResidualMoments.of(E, lags, (S,))
    signals = moments.signals[0]
    found = _prewhitened_correlations(moments, signals, tau)
    # the residual moments are shared by the input (all lags) and state (lags >= 0) correlations
    shared = _prewhitened_correlations(moments, signals, tau[tau >= 0])
    np.testing.assert_allclose(shared, found[tau >= 0], rtol=1e-12, atol=1e-12)
    direct = _prewhitened_correlations(dataclasses.replace(moments, factored=False), signals,
                                       tau)
    np.testing.assert_allclose(direct, found, rtol=1e-9, atol=1e-9)
    for j in range(2):
        a = _prewhitening_filter([s[j] for s in S], order)
        Ew = [signal.lfilter(a, [1.0], e, axis=1) for e in E]
        Sw = [signal.lfilter(a, [1.0], s[j])[None] for s in S]
        sd = _bartlett_sd(autocorrelations(Ew, window), autocorrelations(Sw, window), N)
        expected = (_cross_correlations(Ew, Sw, tau) / sd)[:, :, 0]
        assert np.allclose(found[:, :, j], expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_correlation_sums_equal_the_direct_sums(seed):
    """Autocorrelations, cross-correlations (each piece centred) and the whiteness moments
    (centred once over all pieces) by blocked FFT over laid-out pieces equal the sums over each
    piece (pieces shorter than the lags too)."""
    from dmdidc.inference.residuals import _cross_correlations, _ResidualMoments
    from dmdidc.regression.lag_products import autocorrelations

    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 400, size=rng.integers(1, 5))
    A = [rng.standard_normal((3, K)) + rng.normal() for K in lengths]
    B = [rng.standard_normal((2, K)) - rng.normal() for K in lengths]
    lags = np.arange(-12, 9)

    def direct(x, y, tau):
        x, y = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
        K = x.shape[1]
        lo, hi = max(0, tau), min(K, K + tau)
        if lo >= hi:
            return np.zeros((x.shape[0], y.shape[0]))
        return x[:, lo:hi] @ y[:, lo - tau:hi - tau].T

    cross = np.stack([sum(direct(x, y, tau) for x, y in zip(A, B, strict=True)) for tau in lags])
    var_a = sum(np.sum((x - x.mean(axis=1, keepdims=True)) ** 2, axis=1) for x in A)
    var_b = sum(np.sum((y - y.mean(axis=1, keepdims=True)) ** 2, axis=1) for y in B)
    expected = cross / np.sqrt(np.outer(var_a, var_b))
    np.testing.assert_allclose(_cross_correlations(A, B, lags), expected, atol=1e-12)
    auto = np.stack([sum(np.diag(direct(x, x, tau)) for x in A) for tau in range(15)])
    np.testing.assert_allclose(autocorrelations(A, 14), auto / auto[0], atol=1e-12)
    # the whiteness moments: the residuals centred once, over every piece (module notes)
    mean = sum(x.sum(axis=1) for x in A) / sum(lengths)
    pooled = [x - mean[:, None] for x in A]
    once = np.stack([sum(np.einsum("ik,ik->i", x[:, tau:], x[:, :x.shape[1] - tau])
                         for x in pooled) for tau in range(15)])
    np.testing.assert_allclose(_ResidualMoments.of(A, 14).autocorrelations(14), once / once[0],
                               atol=1e-12)


@pytest.mark.parametrize("seed,lengths,lags", [(0, (3000,), 15), (1, (400, 60, 5), 12)])
def test_dependent_moment_covariance_equals_the_sum_over_lags(seed, lengths, lags):
    """The Bartlett-smoothed product is the weighted sum of lagged moment products."""
    from dmdidc.inference.residuals import _moment_statistic, _pseudo_quadratic

    rng = np.random.default_rng(seed)
    W = [rng.standard_normal((3, K)) for K in lengths]
    E = [rng.standard_normal((2, K)) for K in lengths]
    moments = [(w[:, None, :] * e[None, :, :]).reshape(6, -1) for w, e in zip(W, E, strict=True)]
    V = np.zeros((6, 6))
    for tau in range(lags + 1):
        term = sum(m[:, tau:] @ m[:, :m.shape[1] - tau].T for m in moments if m.shape[1] > tau)
        V += term if tau == 0 else (1.0 - tau / (lags + 1.0)) * (term + term.T)
    g = sum(w @ e.T for w, e in zip(W, E, strict=True)).ravel()
    statistic, rank, _, _ = _moment_statistic(np.concatenate(W, axis=1),
                                              np.concatenate(E, axis=1), list(lengths), lags,
                                              independent=False)
    expected, expected_rank = _pseudo_quadratic(0.5 * (V + V.T), g)
    assert rank == expected_rank and np.isclose(statistic, expected, rtol=1e-9)


@pytest.mark.parametrize("seed,lengths,lags", [(0, (3000,), 2), (1, (400, 60, 2), 7)])
def test_independent_moment_covariance_is_the_bartlett_sum_of_kronecker_products(seed, lengths,
                                                                                 lags):
    from dmdidc.inference.residuals import _moment_statistic, _pseudo_quadratic

    rng = np.random.default_rng(seed)
    W = [rng.standard_normal((4, K)) for K in lengths]
    E = [rng.standard_normal((3, K)) for K in lengths]
    N = sum(lengths)
    V = np.zeros((12, 12))
    for tau in range(lags + 1):
        Wt = sum(w[:, tau:] @ w[:, :w.shape[1] - tau].T for w in W if w.shape[1] > tau)
        Et = sum(e[:, tau:] @ e[:, :e.shape[1] - tau].T for e in E if e.shape[1] > tau) / N
        term = np.kron(Wt, Et)
        V += term if tau == 0 else (1.0 - tau / (lags + 1.0)) * (term + term.T)
    g = sum(w @ e.T for w, e in zip(W, E, strict=True)).ravel()
    statistic, rank, z, index = _moment_statistic(np.concatenate(W, axis=1),
                                                  np.concatenate(E, axis=1), list(lengths),
                                                  lags, independent=True)
    expected, expected_rank = _pseudo_quadratic(0.5 * (V + V.T), g)
    sd = np.sqrt(np.diag(V))
    assert rank == expected_rank and np.isclose(statistic, expected, rtol=1e-9)
    assert index == np.argmax(np.abs(g) / sd) and np.isclose(z, np.max(np.abs(g) / sd))


def test_a_trajectory_without_residual_samples_changes_nothing():
    """residual_analysis (public) given a piece with no residuals (as a trajectory of R + 1
    samples or fewer leaves): the same analysis as without it, not an error of the layout."""
    from dmdidc.inference.residuals import residual_analysis

    rng = np.random.default_rng(0)
    full = [(rng.standard_normal((2, K)), rng.standard_normal((1, K + 2)),
             rng.standard_normal((2, K + 2))) for K in (300, 150)]
    empty = (np.zeros((2, 0)), rng.standard_normal((1, 2)), rng.standard_normal((2, 2)))
    with_empty = residual_analysis([full[0], empty, full[1]], 2)
    alone = residual_analysis(full, 2)
    for name in ("whiteness_z", "input_z", "state_z"):
        np.testing.assert_allclose(getattr(with_empty, name), getattr(alone, name),
                                   rtol=1e-12, atol=1e-12)
    assert with_empty.outlier_z == alone.outlier_z and with_empty.n_samples == alone.n_samples


@pytest.mark.parametrize("exogenous", [False, True])
def test_corrected_moment_signals_equal_the_explicit_two_stage_correction(exogenous):
    # w~ = w - S_wphi h_k with the explicit 2SLS projection h_k = M^-1 S_phiz S_zz^-1 z_k, for
    # instruments sharing the lagged inputs with the regressors (open loop, as many as the
    # regressors) and for more instruments than regressors (closed loop); the corrected signals
    # are orthogonal to the regressors.
    from dmdidc.inference.residuals import _corrected_signals
    from dmdidc.regression.solution import lagged_inputs

    for seed in range(4):
        rng = np.random.default_rng(seed)
        n, m, R, N = 3, 2, 4, 3000
        U = rng.standard_normal((m, N + R + 10))
        X = rng.standard_normal((n, N))
        lagged = lagged_inputs(U[:, :N + R], R)
        Phi = np.concatenate([X, lagged])
        if exogenous:
            signal = np.concatenate([X + rng.standard_normal((n, N)), U[:, R:N + R]])
            Z = lagged_inputs(np.concatenate([np.zeros((n + m, R)), signal], axis=1), R)
            common = 0
        else:
            Z = np.concatenate([X + 0.5 * rng.standard_normal((n, N)), lagged])
            common = m * (R + 1)
        W = lagged_inputs(U[:, :N + R + 3], R + 3)[-2 * m:, :N] + 0.3 * rng.standard_normal(
            (2 * m, N))
        S_zz, S_zphi = Z @ Z.T, Z @ Phi.T
        H = np.linalg.solve(S_zphi.T @ np.linalg.solve(S_zz, S_zphi),
                            S_zphi.T @ np.linalg.solve(S_zz, Z))
        direct = W - (W @ Phi.T) @ H
        corrected = _corrected_signals(W, Phi[:Phi.shape[0] - common], Z, common)
        np.testing.assert_allclose(corrected, direct, rtol=0, atol=1e-10 * np.abs(W).max())
        assert np.abs(corrected @ Phi.T).max() <= 1e-9 * np.linalg.norm(W) * np.linalg.norm(Phi)


@pytest.mark.parametrize("seed", range(4))
def test_the_shifted_factor_gives_the_quadratic_form_without_a_second_factorization(seed):
    # g^T V^-1 g from the factor of V - s I (Neumann series) equals the direct solve when the
    # smallest eigenvalue is far above the shift and when it is only a few times the shift
    # (more terms, or the factorization of V itself): the same number either way, up to the
    # rounding of a solve.
    from dmdidc.inference.residuals import _MOMENT_RANK_RTOL

    rng = np.random.default_rng(seed)
    size = 120
    Q = np.linalg.qr(rng.standard_normal((size, size)))[0]
    for smallest in (1e-2, 1e-6, 3e-9, 1.2e-9):
        values = np.concatenate([[1.0], np.geomspace(smallest, 1.0, size - 1)])
        V = (Q * values) @ Q.T
        V = 0.5 * (V + V.T)
        g = rng.standard_normal(size)
        statistic, rank = _pseudo_quadratic(V, g)
        if smallest > 2 * _MOMENT_RANK_RTOL * np.linalg.norm(V, 1):
            assert rank == size
            expected = float(g @ np.linalg.solve(V, g))
            # any solve's rounding is about the condition number (1 / smallest) times eps
            np.testing.assert_allclose(statistic, expected, rtol=1e-13 / smallest)

@pytest.mark.parametrize("seed", range(4))
def test_correlations_with_the_analysis_equal_those_computed_when_read(seed):
    """One pass for the whiteness test and every correlation (the residuals' transforms
    shared) gives the correlations each computed on its own when first read."""
    from dmdidc.inference.residuals import residual_analysis

    rng = np.random.default_rng(seed)
    n, m, R = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(0, 4))
    parts = [(rng.standard_normal((n, K)), rng.standard_normal((m, K + R)),
              np.cumsum(rng.standard_normal((n, K + R)), axis=1) * 0.1)
             for K in rng.integers(200, 3000, size=int(rng.integers(1, 4)))]
    eager = residual_analysis(parts, R)
    lazy = residual_analysis(parts, R, correlations=False)
    assert not lazy._correlations and set(eager._correlations) == {"input", "state"}
    np.testing.assert_allclose(eager.whiteness_z, lazy.whiteness_z, rtol=1e-10, atol=1e-10)
    for name in ("input_z", "state_z"):
        np.testing.assert_allclose(getattr(eager, name), getattr(lazy, name), rtol=1e-10,
                                   atol=1e-10)


def test_the_robust_residual_in_place_is_the_one_on_a_copy():
    from dmdidc.inference.residuals import _largest_robust_residual, largest_robust_residual

    rng = np.random.default_rng(0)
    E = rng.standard_t(3, size=(3, 1001))
    kept = E.copy()
    assert _largest_robust_residual(E.copy()) == largest_robust_residual(E)
    np.testing.assert_array_equal(E, kept)           # the public function leaves E alone


@pytest.mark.parametrize("length", [2000, 2001])
def test_the_outlier_scaling_centres_are_the_medians(length):
    # odd lengths too: their median was a view of the row that the MAD's partition then
    # reordered, so the centres (and the pieces' scale test) read the MAD instead
    from dmdidc.inference.residuals import largest_residual

    rng = np.random.default_rng(length)
    E = rng.standard_normal((3, length)) + np.array([[5.0], [-2.0], [0.0]])
    pooled = largest_residual([E])
    np.testing.assert_array_equal(pooled.centres[0], np.median(E, axis=1))
    pieces = [E[:, :length // 2], 10.0 * E[:, length // 2:]]     # unequal levels: own scales
    own = largest_residual(pieces)
    assert own.spread is not None
    for centre, piece in zip(own.centres, pieces, strict=True):
        np.testing.assert_array_equal(centre, np.median(piece, axis=1))
    z = max(float(np.max(d)) for d in own.deviations(pieces))
    assert z == pytest.approx(own.z, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_signed_robust_deviations_are_the_deviations_with_their_sign(seed):
    # the linearity check's Huber psi reads them: the same magnitudes (bit for bit) as the
    # outlier rule's, the sign of e - median, and E left alone; rows of tied values (MAD 0,
    # scaled by their rms) and even and odd lengths alike
    from dmdidc.inference.residuals import largest_robust_residual, robust_deviations

    rng = np.random.default_rng(seed)
    E = rng.standard_t(3, size=(4, 1000 + seed))
    E[3, : E.shape[1] // 2 + 1] = 0.25                    # more than half tied: MAD 0
    kept = E.copy()
    signed = robust_deviations(E, signed=True)
    np.testing.assert_array_equal(np.abs(signed), robust_deviations(E))
    median = np.median(E, axis=1, keepdims=True)
    np.testing.assert_array_equal(np.sign(signed), np.sign(E - median))
    assert np.max(np.abs(signed)) == largest_robust_residual(E)
    np.testing.assert_array_equal(E, kept)


@pytest.mark.parametrize("seed", range(4))
def test_laid_out_rows_are_the_shifted_signals_of_every_kept_trajectory(seed):
    # the moment checks' one-array layout equals building each trajectory's lagged rows and
    # concatenating them; trajectories with fewer than two samples in range are left out
    from dmdidc.inference.residuals import _laid_out

    rng = np.random.default_rng(seed)
    start, end = int(rng.integers(2, 6)), int(rng.integers(1, 4))
    sources = [(rng.standard_normal((3, K + 1)), rng.standard_normal((2, K)))
               for K in rng.integers(start + end, start + end + 40, size=4)]
    blocks = [(0, range(-1, 1)), (1, range(-end, start + 1))]
    laid, lengths = _laid_out(sources, blocks, start, end)
    expected = [np.concatenate([s[w][:, start - lag:s[1].shape[1] - end - lag]
                                for w, lags in blocks for lag in lags])
                for s in sources if s[1].shape[1] - end - start >= 2]
    assert lengths == [e.shape[1] for e in expected]
    np.testing.assert_array_equal(laid, np.concatenate(expected, axis=1))


@pytest.mark.parametrize("seed", range(6))
def test_yule_walker_rows_equal_one_toeplitz_solve_per_signal(seed):
    """Levinson-Durbin over every column at once: the filters of scipy's Toeplitz solve, and
    no filter (``[1, 0, ..]``) for a constant signal or a singular minor."""
    from scipy import linalg, signal

    from dmdidc.inference.residuals import _yule_walker
    from dmdidc.regression.lag_products import autocorrelations

    rng = np.random.default_rng(seed)
    order = int(rng.integers(1, 11))
    rows = np.stack([signal.lfilter([1.0], [1.0, -rng.uniform(-0.95, 0.95)],
                                    rng.standard_normal(3000)) for _ in range(4)])
    rows[1] = 5.0                                               # constant: no filter
    rho = autocorrelations([rows], order)
    rho = np.concatenate([rho, np.ones((order + 1, 1))], axis=1)     # singular minor
    taps = _yule_walker(rho, order)
    for j in (0, 2, 3):
        a = linalg.solve_toeplitz(rho[:order, j], rho[1:, j])
        np.testing.assert_allclose(taps[j], np.concatenate([[1.0], -a]), rtol=1e-10,
                                   atol=1e-12)
    for j in (1, 4):
        np.testing.assert_array_equal(taps[j], np.eye(order + 1)[0])


@pytest.mark.parametrize("seed", range(3))
def test_an_exact_fits_residual_statistics_wait_until_read(seed):
    """Below EXACT_FIT the checks do not read whiteness, outliers or correlations: they are
    not computed with the analysis, and when read equal those of the same residuals scaled
    above it (every one of them is scale-free)."""
    from dmdidc.inference.residuals import residual_analysis, residual_checks

    rng = np.random.default_rng(seed)
    n, m, R = 2, 1, 2
    parts = [(1e-12 * rng.standard_normal((n, K)), rng.standard_normal((m, K + R)),
              rng.standard_normal((n, K + R + 1))) for K in (800, 1500)]
    exact = residual_analysis(parts, R)
    assert exact.relative_residual < 1e-6 and not exact._tests and not exact._correlations
    assert all(c.passed for c in residual_checks(exact, 0.01))
    noisy = residual_analysis([(1e9 * e, u, x) for e, u, x in parts], R)
    assert noisy._tests
    for name in ("whiteness_z", "outlier_z", "input_z", "state_z"):
        np.testing.assert_allclose(getattr(exact, name), getattr(noisy, name), rtol=1e-10,
                                   atol=1e-10)


@pytest.mark.parametrize("samples", [150, 1000])
def test_the_outlier_threshold_keeps_gaussian_false_alarms_below_the_level(samples):
    """The largest robustly standardized residual of 1-20 Gaussian series against
    outlier_threshold at level 0.05: without the MAD scale's sampling error the Bonferroni
    quantile false-alarmed 12.7 % (150 samples) and 6.1 % (1000) of 1000 draws; with it
    0.3 % and 0.5 %.  A gross error (12 standard deviations) is found in every draw."""
    from scipy import stats

    from dmdidc.inference.residuals import largest_robust_residual, outlier_threshold

    rng = np.random.default_rng(samples)
    level, draws, alarms = 0.05, 300, 0
    for _ in range(draws):
        E = rng.standard_normal((int(rng.integers(1, 21)), samples))
        threshold = outlier_threshold(level, samples, E.shape[0])
        alarms += largest_robust_residual(E) > threshold
        E[rng.integers(E.shape[0]), rng.integers(samples)] += 12.0
        assert largest_robust_residual(E) > threshold
    # the count a false-alarm probability of ``level`` exceeds once in 10^4 test runs
    assert alarms <= stats.binom.ppf(1 - 1e-4, draws, level), alarms


def test_the_outlier_threshold_is_the_bonferroni_quantile_raised_by_the_scale_error():
    from scipy import special

    from dmdidc.inference.residuals import outlier_threshold

    for samples, series in [(100, 1), (300, 20), (20_000, 3)]:
        bonferroni = special.ndtri(1 - 1e-3 / (2 * samples * series))
        raised = outlier_threshold(1e-3, samples, series) / bonferroni - 1
        assert 3.4 / np.sqrt(samples) < raised < 3.6 / np.sqrt(samples)


@pytest.mark.parametrize("seed", range(3))
def test_moment_checks_take_the_long_run_covariance_moments_only_of_their_own_data(
        seed, monkeypatch):
    # An IV fit hands the moment checks the instrument moments of its long-run covariance:
    # the checks then decide as when computing them (statistics to rounding); moments of
    # other data (another draw) are refused, so the checks equal those computed from scratch.
    import warnings

    from dmdidc import DMDidc
    from dmdidc.inference import residuals
    from simulations.studies.data_kinds import make_data, random_plant

    calls = []
    original = residuals.moment_checks
    monkeypatch.setattr(residuals, "moment_checks",
                        lambda *a, **k: calls.append((a, k)) or original(*a, **k))
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n_states=3, n_inputs=2, max_delay=4)
    for _ in range(2):
        data = make_data("white", plant, samples=3000, rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            DMDidc(max_delay=4, estimator="iv").fit(data.X, data.U, dt=plant.dt)
    (args, own), (_, other) = calls
    assert own["instrument_moments"] is not None
    assert own["instrument_moments"].residual_memory is not None     # handed over too

    def statistics(moments):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            checks = original(*args, **dict(own, instrument_moments=moments))
        return [(c.name, c.passed, c.statistic) for c in checks]

    scratch = statistics(None)
    assert statistics(other["instrument_moments"]) == scratch
    for (name, passed, value), (_, passed_, value_) in zip(statistics(own["instrument_moments"]),
                                                           scratch, strict=True):
        assert passed == passed_, name
        assert value is None or abs(value - value_) <= 1e-8 * abs(value_), name


def test_moment_checks_take_the_residual_memory_only_of_their_coefficients():
    # the long-run covariance's memory of the checks' residuals is of its coefficients: least
    # squares kept by the pretest (or a robust fit) has other residuals, whose memory the
    # checks find themselves
    import dataclasses

    from dmdidc.inference.residuals import _own_memory
    from dmdidc.regression.instrumental import TrimmedMoments

    coefficients = np.arange(6.0).reshape(2, 3)
    moments = TrimmedMoments(10, False, np.eye(2), np.eye(2), np.zeros(2), 100,
                             residual_memory=7, coefficients=coefficients)
    assert _own_memory(moments, coefficients.copy()) == 7
    assert _own_memory(moments, coefficients + 1e-12) is None
    assert _own_memory(None, coefficients) is None
    assert _own_memory(dataclasses.replace(moments, residual_memory=None), coefficients) is None


def _plain_prewhitened_z(E, S, lags):
    """``corr(e_i,k , s_j,k-tau) / sd`` as the module notes define it, written out plainly:
    per signal its Yule-Walker filter (a Toeplitz solve on pooled per-piece-centred
    autocorrelations), every piece filtered from rest by ``np.convolve`` and centred, sums of
    products at each lag by ``np.dot`` within each piece, Bartlett's variance from the
    autocorrelations at lags ``0 .. window``."""
    from scipy.linalg import solve_toeplitz

    N = sum(e.shape[1] for e in E)
    window, order = min(25, max(N // 10, 1)), min(10, max(N // 50, 0))

    def lagged(a, b, tau):                         # sum_k a_k b_{k-tau} over every piece
        return sum(float(np.dot(x[max(tau, 0):x.size + min(tau, 0)],
                                y[max(-tau, 0):y.size - max(tau, 0)]))
                   for x, y in zip(a, b, strict=True))

    def centred(pieces):
        return [p - p.mean() for p in pieces]

    n, rows = E[0].shape[0], S[0].shape[0]
    z = np.zeros((len(lags), n, rows))
    for j in range(rows):
        s = centred([p[j] for p in S])
        r = np.array([lagged(s, s, t) for t in range(order + 1)])
        a = np.concatenate([[1.0], -solve_toeplitz(r[:-1] / r[0], r[1:] / r[0])]) \
            if order else np.ones(1)
        sw = centred([np.convolve(p[j], a)[:p.shape[1]] for p in S])
        s_cov = np.array([lagged(sw, sw, t) for t in range(window + 1)])
        taper = np.concatenate([[1.0], 2.0 * (1.0 - np.arange(1, window + 1) / (window + 1))])
        for i in range(n):
            ew = centred([np.convolve(e[i], a)[:e.shape[1]] for e in E])
            e_cov = np.array([lagged(ew, ew, t) for t in range(window + 1)])
            variance = np.sum(taper * (e_cov / e_cov[0]) * (s_cov / s_cov[0])) / N
            sd = np.sqrt(max(variance, 0.25 / N))
            for k, tau in enumerate(lags):
                z[k, i, j] = lagged(ew, sw, tau) / np.sqrt(e_cov[0] * s_cov[0]) / sd
    return z


@pytest.mark.parametrize("seed,lengths", [(0, (2500,)), (1, (900, 1300, 700)),
                                          (2, (400,) * 5), (3, (300, 2000))])
def test_the_correlations_equal_plain_sums_at_each_lag(seed, lengths):
    """The whiteness, input and state correlations of the analysis (inputs and states
    prewhitened together, their blocks transformed once, the residuals filtered along the
    lags) equal the plain computation: coloured residuals, coloured inputs, several pieces."""
    from scipy import signal

    from dmdidc.inference.residuals import residual_analysis

    rng = np.random.default_rng(seed)
    n, m, R, L = 3, 2, 2, 12
    parts = [(signal.lfilter([1.0], [1.0, -0.5], rng.standard_normal((n, K)), axis=1) + 0.3,
              signal.lfilter([1.0], [1.0, -0.8], rng.standard_normal((m, K + R)), axis=1) - 1.0,
              signal.lfilter([1.0, 0.4], [1.0, -0.6], rng.standard_normal((n, K + R)), axis=1))
             for K in lengths]
    analysis = residual_analysis(parts, R, L)
    E = [e for e, _, _ in parts]
    lags = np.arange(-L, L + 1)
    np.testing.assert_allclose(analysis.input_z, _plain_prewhitened_z(
        E, [u[:, R:] for _, u, _ in parts], lags), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(analysis.state_z, _plain_prewhitened_z(
        E, [x[:, R:] for _, _, x in parts], lags[lags >= 0]), rtol=1e-9, atol=1e-9)
    N = sum(lengths)
    # whiteness centres once over all samples (a piece's own mean biased every lag)
    mean = np.concatenate(E, axis=1).mean(axis=1)
    auto = np.array([[sum(float(np.dot(c[t:], c[:c.size - t]))
                          for c in (e[i] - mean[i] for e in E)) for i in range(n)]
                     for t in range(L + 1)])
    rho = auto / auto[0]
    np.testing.assert_allclose(analysis.whiteness_z, rho / np.sqrt((1 + 2 * rho[1] ** 2) / N),
                               rtol=1e-9, atol=1e-9)


def _cut(E, length, R=2):
    """Residual parts of ``length`` samples cut from the series ``E`` (no inputs or signals
    needed by the whiteness test)."""
    return [(E[:, s:s + length], np.zeros((1, length + R)), np.zeros((2, length + R)))
            for s in range(0, E.shape[1] - length + 1, length)]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("theta", [0.0, 0.5])
@pytest.mark.parametrize("length", [17, 60])
def test_the_whiteness_of_many_short_pieces_is_unbiased(seed, theta, length):
    """Audit finding: each piece's mean was removed, which shifts every lag's autocorrelation
    by about -(1 + 2 rho_1) / N_p: 1000 pieces of 17 samples gave z = -11 on white noise.
    Cuts of one series are centred once, over all samples; pieces the fit centred each (an
    intercept, or intercept and slope, per trajectory: detrend) are corrected for it
    (trends=).  On MA(1) residuals (white, or theta 0.5) neither raises the check, and the lags'
    mean stays near 0; uncorrected, the centred pieces' statistics are far below."""
    from dmdidc.inference.residuals import _critical, residual_analysis
    from dmdidc.trajectories import remove_trend

    rng = np.random.default_rng(seed)
    v = rng.standard_normal((2, 17_001))
    parts = _cut(v[:, 1:] - theta * v[:, :-1], length)
    for kind in (None, "constant", "linear"):
        centred = parts if kind is None else [(remove_trend(e, kind)[0], u, x)
                                              for e, u, x in parts]
        trends = None if kind is None else [kind] * len(parts)
        z = residual_analysis(centred, 2, correlations=False, trends=trends).whiteness_z[2:]
        assert np.abs(z).max() < _critical(0.01 / 9, z.size)
        assert abs(z[:3].mean()) < 1.5                        # lags 2 .. 4, both series
        if kind is not None and theta == 0.0 and length == 17:
            biased = residual_analysis(centred, 2, correlations=False).whiteness_z[2:]
            assert biased[:3].mean() < -4.0


def test_residual_checks_only_the_named_ones_equal_those_of_all_five():
    """``only`` returns the named checks, equal to the same checks of the full set, in the
    full set's order; an unknown name is refused naming the accepted ones."""
    from dmdidc.errors import ParameterError
    from dmdidc.inference.residuals import residual_analysis, residual_checks
    rng = np.random.default_rng(2)
    N, R = 600, 2
    U = rng.standard_normal((2, N + R))
    X = rng.standard_normal((3, N + R))
    E = rng.standard_normal((3, N))
    E[1, 100] += 40.0                                   # an outlier: one check fails
    every = residual_checks(residual_analysis([(E, U, X)], R), 0.01)
    for only in (("feedback", "outliers"), ("outliers", "state_completeness"), ("whiteness",)):
        some = residual_checks(residual_analysis([(E, U, X)], R), 0.01, only=only)
        assert [c.name for c in some] == [c.name for c in every if c.name in only]
        assert some == [c for c in every if c.name in only]
    with pytest.raises(ParameterError, match="accepted"):
        residual_checks(residual_analysis([(E, U, X)], R), 0.01, only=("feedbak",))


@pytest.mark.parametrize("a_lags, b_lags", [(range(6, 10), range(6)), (range(-1, -5, -1), range(6)),
                                            (range(6), range(6)), (range(-4, 0), range(5, -1, -1)),
                                            (range(3, 4), range(2))])
def test_lag_block_products_are_the_dense_products(a_lags, b_lags):
    # rows u_{k-a} and u_{k-b} of three trajectories' windows side by side (one of two
    # samples), as the moment checks lay them out: the lag structure gives A @ B.T
    from dmdidc.inference.residuals import _lag_block_products

    rng = np.random.default_rng(3)
    start, end = 10, 4
    pieces = [rng.standard_normal((3, K)) * 10.0 ** rng.uniform(-3, 3) for K in (40, 57, 16)]
    widths = [U.shape[1] - start - end for U in pieces]

    def laid(lags):
        return np.hstack([np.vstack([U[:, start - lag:start - lag + w] for lag in lags])
                          for U, w in zip(pieces, widths, strict=True)])

    firsts = np.cumsum([0] + widths[:-1])
    A, B = laid(a_lags), laid(b_lags)
    dense = A @ B.T
    got = _lag_block_products(A, a_lags, B, b_lags, firsts, firsts + np.array(widths) - 1)
    scale = np.sqrt(np.outer(np.sum(A ** 2, axis=1), np.sum(B ** 2, axis=1)))
    assert np.all(np.abs(got - dense) <= 1e-13 * scale)


@pytest.mark.parametrize("lower", [True, False])
def test_the_neumann_series_is_the_inverse_form(lower):
    # shift / lambda_min ~ 0.02: several terms, each one triangular solve, from either factor
    from scipy import linalg

    from dmdidc.inference.residuals import _neumann_form

    rng = np.random.default_rng(2)
    Q = np.linalg.qr(rng.standard_normal((30, 30)))[0]
    V = (Q * np.linspace(1.0, 5.0, 30)) @ Q.T
    V = 0.5 * (V + V.T)
    g, shift = rng.standard_normal(30), 0.02
    factor = linalg.cho_factor(V - shift * np.eye(30), lower=lower)
    np.testing.assert_allclose(_neumann_form(factor, shift, g), g @ np.linalg.solve(V, g),
                               rtol=1e-12)


@pytest.mark.parametrize("independent, lags", [(True, 0), (True, 3), (False, 4)])
def test_moment_statistic_of_directions_not_formed(independent, lags):
    # the directions basis.T @ C of signals C, one of them a combination of the others (dropped):
    # their statistic from C's products and the basis is theirs formed
    from dmdidc.inference.residuals import _decidable, _moment_statistic

    rng = np.random.default_rng(5)
    lengths = [700, 450]
    C = rng.standard_normal((6, sum(lengths)))
    C[5] = C[0] - 2.0 * C[3]
    E = rng.standard_normal((3, sum(lengths)))
    E[:, 1:] += 0.5 * E[:, :-1]                                 # a moving average
    basis, back, gram = _decidable(np.sum((C + 0.1) ** 2, axis=1), C)     # raw energies
    assert basis.shape == (6, 5)
    formed = _moment_statistic(basis.T @ C, E, lengths, lags, independent, back, np.eye(5))
    kept = _moment_statistic(C, E, lengths, lags, independent, back, gram, basis=basis)
    np.testing.assert_allclose(kept[:1] + kept[2:3], formed[:1] + formed[2:3], rtol=1e-10)
    assert kept[1] == formed[1] and kept[3] == formed[3]


@pytest.mark.parametrize("samples, lags", [(50, 3), (50, 7), (50, 60), (2000, 200), (2, 9)])
def test_bartlett_smoothing_is_the_weighted_sum(samples, lags):
    # running sums (windows beyond the running-sum bound) or a pass per lag: the same weighted
    # sum of the neighbours within the series, offset rows included
    from dmdidc.inference.residuals import _bartlett_smoothed

    rng = np.random.default_rng(4)
    moments = rng.standard_normal((4, samples)) + np.array([[0.0], [3.0], [-50.0], [1e-3]])
    tau = np.arange(samples)
    weights = np.clip(1.0 - np.abs(tau[:, None] - tau[None, :]) / (lags + 1.0), 0.0, None)
    expected = moments @ weights
    scale = np.abs(moments) @ weights
    assert np.all(np.abs(_bartlett_smoothed(moments, lags) - expected) <= 1e-13 * scale)


def test_subtract_product_in_place_and_empty():
    from dmdidc.inference.residuals import _subtract_product

    rng = np.random.default_rng(6)
    target, left, right = rng.standard_normal((5, 40)), rng.standard_normal((5, 3)), \
        rng.standard_normal((3, 40))
    expected = target - left @ right
    out = _subtract_product(target, left, right)
    assert out is target and np.array_equal(target, expected)
    for shapes in (((0, 40), (0, 3), (3, 40)), ((5, 40), (5, 0), (0, 40)), ((5, 0), (5, 3),
                                                                           (3, 0))):
        empty = [np.zeros(shape) for shape in shapes]
        assert _subtract_product(*empty).shape == shapes[0]


def test_iv_checks_with_every_group_beyond_its_size_bound():
    # 45 states, 5 inputs: 2250 moments per input group (bound 2000), 4050 for the states
    # (bound 120): nothing is laid out for the tests, and each says why it was not computed
    import warnings

    from dmdidc import DMDidc
    from simulations.studies.data_kinds import make_data, random_plant

    rng = np.random.default_rng(0)
    plant = random_plant(rng, n_states=45, n_inputs=5, max_delay=4)
    data = make_data("white", plant, samples=6000, rng=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = DMDidc(max_delay=4, estimator="iv").fit(data.X, data.U, dt=plant.dt)
    checks = {c.name: c for c in fitted.diagnostics_.checks}
    for name in ("input_correlation", "feedback", "state_completeness"):
        assert checks[name].passed is None and "not computed" in checks[name].finding


def test_pieces_of_unequal_noise_are_scaled_each_by_its_own():
    """Experiments of unequal noise levels: a common robust scale reads the noisier ones'
    ordinary residuals as outliers (z ~ 10 against ~ 5.5); their own scales do not, and a gross
    error in the quiet piece (12 of its standard deviations, 1.2 of the noisy one's) is still
    found.  Pieces of one noise level keep the common scale."""
    from dmdidc.inference.residuals import largest_residual, largest_robust_residual

    rng = np.random.default_rng(7)
    pieces = [scale * rng.standard_normal((3, 2000)) for scale in (1.0, 10.0, 1.0, 10.0)]
    largest = largest_residual(pieces)
    assert largest_robust_residual(np.concatenate(pieces, axis=1)) > largest.threshold(1e-3)
    assert largest.z < largest.threshold(1e-3)
    assert largest.samples == 2000 and largest.count == 8000 and 8 < largest.spread < 12
    pieces[0][1, 500] += 12.0
    assert largest_residual(pieces).z > largest_residual(pieces).threshold(1e-3)
    same = largest_residual([rng.standard_normal((3, 2000)) for _ in range(4)])
    assert same.spread is None and same.samples == same.count == 8000
    # pieces too short to compare scales: one scale over all of them
    short = largest_residual([rng.standard_normal((2, 20)), 10 * rng.standard_normal((2, 20))])
    assert short.spread is None and short.samples == 40


@pytest.mark.parametrize("seed", range(4))
def test_experiments_of_unequal_noise_are_not_outliers(seed):
    """IV on 8 experiments of a random plant, half at 20 dB and half at 40 dB: the outlier
    check failed on 10 of 10 plants with one robust scale over all of them (z ~ 19, threshold
    5.7); with the experiments' own scales it passes, and it still finds a gross error of 12
    standard deviations in a quiet experiment."""
    import warnings

    from dmdidc import DelayedPlant, DMDidc, random_excitation
    from simulations.studies.data_kinds import random_state_matrix

    rng = np.random.default_rng(seed)
    n, m, dt = 4, 2, 0.5
    plant = DelayedPlant.from_continuous(random_state_matrix(rng, n, dt),
                                         rng.standard_normal((n, m)),
                                         (rng.integers(0, 2, m) + rng.uniform(0.1, 0.9, m)) * dt,
                                         dt, max_delay=3)
    X, U = [], []
    for _ in range(8):
        U.append(random_excitation(m, 1000, rng=rng))
        X.append(plant.simulate(np.zeros(n), U[-1]))
    scale = X[0].std(axis=1, keepdims=True)
    X = [x + (0.1 if e % 2 else 0.01) * scale * rng.standard_normal(x.shape)
         for e, x in enumerate(X)]

    def outliers(X):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = DMDidc(max_delay=3, estimator="iv").fit(X, U, dt=dt)
        return next(c for c in fit.diagnostics_.checks if c.name == "outliers")

    check = outliers(X)
    assert check.passed, check.finding
    assert "noise levels differ" in check.finding
    X[0][0, 500] += 12 * 0.01 * scale[0, 0]
    assert outliers(X).failed


@pytest.mark.parametrize("length", [4095, 4097, 9001])
def test_robust_rows_across_blocks_are_those_of_numpy(length):
    # more samples than one block of the deviations (4096): outliers on the blocks' edges
    from dmdidc.inference.residuals import _MAD_TO_SIGMA, largest_robust_residual

    rng = np.random.default_rng(length)
    E = rng.standard_normal((3, length)) + np.array([[5.0], [-2.0], [0.0]])
    for row, column in ((0, min(4095, length - 2)), (1, length - 1), (2, min(4096, length - 1))):
        E[row, column] += 30.0
    deviation = np.abs(E - np.median(E, axis=1, keepdims=True))
    want = np.max(deviation.max(axis=1) / (_MAD_TO_SIGMA * np.median(deviation, axis=1)))
    assert largest_robust_residual(E) == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize("seed", range(8))
def test_outlier_variance_from_the_whiteness_products_equals_the_pieces_own(seed):
    # the outlier test's Bartlett variance reads the whiteness test's lagged products
    # centred by each piece's median: the pieces' own autocovariances to rounding, and the
    # scale test decides the same; medians holding most of a row's energy (a random walk, an
    # offset) are transformed again instead of cancelled
    from dmdidc.inference.residuals import _ResidualMoments, largest_residual
    from dmdidc.regression.lag_products import autocovariances

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5))
    levels = rng.uniform(0.5, 2.0, 4) if seed % 2 else np.ones(4)
    E = [level * rng.standard_normal((n, int(rng.integers(100, 2500))))
         + rng.uniform(-0.2, 0.2, (n, 1)) for level in levels]
    moments = _ResidualMoments.of(E, int(rng.integers(5, 40)))
    centres = np.array([np.median(e, axis=1) for e in E])
    L = min(50, min(e.shape[1] for e in E) // 2)
    shared = moments.centred_autocovariances(centres, L)
    own = autocovariances([e - c[:, None] for e, c in zip(E, centres, strict=True)], L)
    np.testing.assert_allclose(shared, own, rtol=0, atol=1e-13 * float(np.max(own[0])))
    with_shared = largest_residual(E, autocovariances_of=moments.centred_autocovariances)
    alone = largest_residual(E)
    assert (with_shared.spread is None) == (alone.spread is None)
    assert with_shared.z == pytest.approx(alone.z, rel=1e-12)
    walk = [np.cumsum(e, axis=1) for e in E]
    walk_centres = np.array([np.median(e, axis=1) for e in walk])
    assert _ResidualMoments.of(walk, 20).centred_autocovariances(walk_centres, L) is None


def _row_kinds(rng, n, N):
    """Rows a strided sample may misrepresent: heavy tails, ties, a period, sorted, constant,
    a NaN, a block of outliers."""
    rows = [rng.standard_normal(N), rng.standard_cauchy(N), rng.integers(0, 3, N).astype(float),
            np.sin(0.7 * np.arange(N)), np.arange(N, 0, -1.0), np.full(N, 2.5),
            np.where(np.arange(N) < N // 2 + 3, 1e6, rng.standard_normal(N))]
    with_nan = rng.standard_normal(N)
    with_nan[rng.integers(N)] = np.nan
    rows.append(with_nan)
    return np.array([rows[i % len(rows)] for i in range(n)])


@pytest.mark.parametrize("seed, n, N", [(0, 8, 4096), (1, 16, 4097), (2, 9, 20000),
                                        (3, 3, 5000), (4, 8, 100), (5, 5, 1)])
def test_row_medians_are_the_middle_order_statistics(seed, n, N):
    from dmdidc.inference.residuals import _row_medians

    rng = np.random.default_rng(seed)
    x = _row_kinds(rng, n, N)
    ranks = [N // 2] if N % 2 else [N // 2 - 1, N // 2]
    for permuted in (x, rng.permuted(x, axis=1), np.asfortranarray(x)):
        # np.median's numbers, a NaN sorted last (np.median's NaN would be no better for
        # the robust scales, and residuals are finite)
        truth = np.sort(permuted, axis=1)[:, ranks].mean(axis=1)
        finite = np.isfinite(permuted).all(axis=1)
        assert np.array_equal(truth[finite], np.median(permuted[finite], axis=1))
        kept = permuted.copy()
        assert np.array_equal(_row_medians(permuted), truth, equal_nan=True)
        assert np.array_equal(permuted, kept, equal_nan=True)
        assert np.array_equal(_row_medians(permuted.copy(), overwrite=True), truth,
                              equal_nan=True)
