"""The factored coefficient covariance gives the numbers of the dense Kronecker formulas."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.regression.covariance import KroneckerCovariance
from dmdidc.regression.instrumental import long_run_covariance


def _psd(rng, k):
    M = rng.standard_normal((k, k))
    return M @ M.T / k + 0.1 * np.eye(k)


def _random(rng, n, p, terms, extra):
    left = np.array([_psd(rng, n)] + [rng.standard_normal((n, n)) for _ in range(terms - 1)])
    right = np.array([_psd(rng, p)] + [rng.standard_normal((p, p)) for _ in range(terms - 1)])
    return KroneckerCovariance(left, right, _psd(rng, n * p) if extra else None)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("extra", [False, True])
def test_every_factored_read_equals_the_dense_matrix(seed, extra):
    rng = np.random.default_rng(seed)
    n, p = rng.integers(1, 5), rng.integers(2, 8)
    cov = _random(rng, n, p, terms=int(rng.integers(1, 4)), extra=extra)
    dense = cov.dense()
    scale = np.abs(dense).max()
    close = dict(rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(cov.diagonal().ravel(), np.diag(dense), **close)
    columns = rng.choice(p, size=min(p, 3), replace=False)
    full = dense.reshape(n, p, n, p)
    np.testing.assert_allclose(cov.columns(columns), full[:, columns, :, columns], **close)
    P = rng.standard_normal((p, p))
    big = np.kron(np.eye(n), P)
    np.testing.assert_allclose(cov.project(P).dense(), big.T @ dense @ big,
                               rtol=1e-10, atol=1e-10 * scale * np.abs(P).max() ** 2)
    index = rng.choice(n * p, size=min(n * p, 7), replace=False)
    sub = dense[np.ix_(index, index)]
    np.testing.assert_allclose(cov.submatrix(index), sub, **close)
    J = rng.standard_normal((5, index.size))
    np.testing.assert_allclose(cov.linear_variances(J, index), np.diag(J @ sub @ J.T),
                               rtol=1e-10, atol=1e-10 * scale)
    u = rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))
    v = rng.standard_normal((3, p)) + 1j * rng.standard_normal((3, p))
    gradients = np.einsum("ka,kc->kac", u, v).reshape(3, n * p)
    expected = np.abs(np.einsum("ki,ij,kj->k", gradients, dense, gradients.conj()))
    np.testing.assert_allclose(cov.rank_one_variances(u, v, np.arange(p)), expected,
                               rtol=1e-10, atol=1e-10 * scale)


def test_a_dense_matrix_beyond_the_allocation_limit_is_refused_before_allocating():
    # 2000 sensors and p = 2000 regressors: (n p)^2 doubles = 128 TB. The factored reads work.
    from _toolbox.errors import ParameterError

    rng = np.random.default_rng(0)
    left, right = np.diag(rng.uniform(1.0, 2.0, 2000)), np.diag(rng.uniform(1.0, 2.0, 2000))
    cov = KroneckerCovariance.single(left, right)
    with pytest.raises(ParameterError, match=r"n = 2000 states and p = 2000.*factored"):
        cov.dense()
    assert cov.submatrix(np.array([0, 1])).shape == (2, 2)


def test_repeated_positions_add_their_gradients():
    rng = np.random.default_rng(3)
    cov = _random(rng, 3, 4, terms=2, extra=False)
    index = np.array([5, 2, 5, 7])
    J = rng.standard_normal((2, 4))
    merged = np.array([2, 5, 7])
    J_merged = np.stack([J[:, 1], J[:, 0] + J[:, 2], J[:, 3]], axis=1)
    np.testing.assert_allclose(cov.linear_variances(J, index),
                               cov.linear_variances(J_merged, merged), rtol=1e-12)


def _old_long_run(coefficients, blocks, lags):
    """The dense formula the factored one replaces (main before issue 19), verbatim."""
    from dmdidc.regression.instrumental import _inverse_sqrt

    Phi = np.concatenate([b[0] for b in blocks], axis=1)
    Z = np.concatenate([b[2] for b in blocks], axis=1)
    z_scale, Lz = _inverse_sqrt(Z @ Z.T)
    B = Lz @ ((Z @ Phi.T) / z_scale[:, None])
    M_inv = np.linalg.pinv(B.T @ B)
    G = (Lz.T @ B @ M_inv) / z_scale[:, None]
    N = Phi.shape[1]
    n, p = coefficients.shape
    total = np.zeros((n * p, n * p))
    start, series = 0, []
    for Phi_i, Y_i, _ in blocks:
        stop = start + Phi_i.shape[1]
        series.append((Y_i - coefficients @ Phi_i, G.T @ Z[:, start:stop]))
        start = stop
    L = lags
    for tau in range(L + 1):
        weight = 1.0 - tau / (L + 1.0)
        gamma_e = sum(E[:, tau:] @ E[:, :E.shape[1] - tau].T for E, _ in series)
        H = sum(h[:, tau:] @ h[:, :h.shape[1] - tau].T for _, h in series)
        term = np.kron(gamma_e / (N - p), H)      # per residual degree of freedom
        total += term if tau == 0 else weight * (term + term.T)
    values, vectors = np.linalg.eigh(0.5 * (total + total.T))
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T


@pytest.mark.parametrize("seed", range(4))
def test_long_run_covariance_is_the_lag_sum_and_positive_semidefinite(seed):
    rng = np.random.default_rng(seed)
    n, p, N = 2, 4, 400
    Theta = rng.standard_normal((n, p))
    blocks = []
    for _ in range(2):
        Phi = rng.standard_normal((p, N))
        Z = np.concatenate([Phi, rng.standard_normal((2, N))]) + 0.1 * rng.standard_normal(
            (p + 2, N))
        noise = rng.standard_normal((n, N + 1))
        blocks.append((Phi, Theta @ Phi + noise[:, 1:] - 0.6 * noise[:, :-1], Z))
    cov = long_run_covariance(Theta, blocks, lags=3)
    dense = cov.dense()
    # symmetric and positive semi-definite without any repair (a Bartlett-weighted spectrum)
    np.testing.assert_allclose(dense, dense.T, atol=1e-12 * np.abs(dense).max())
    assert np.linalg.eigvalsh(dense).min() >= -1e-10 * np.abs(dense).max()
    assert cov.left.shape[0] == 2 * 3 + 1
    # the terms are those of the textbook formula: lag 0 alone is Sigma kron H(0)
    lag0 = long_run_covariance(Theta, blocks, lags=0)
    np.testing.assert_allclose(lag0.dense(), np.kron(lag0.left[0], lag0.right[0]))


def test_long_run_covariance_matches_the_dense_formula_it_replaces():
    rng = np.random.default_rng(7)
    n, p, N = 3, 4, 300
    Theta = rng.standard_normal((n, p))
    blocks = []
    for length in (N, N - 50):
        Phi = rng.standard_normal((p, length))
        Z = np.concatenate([Phi, rng.standard_normal((2, length))])
        noise = rng.standard_normal((n, length + 1))
        blocks.append((Phi, Theta @ Phi + noise[:, 1:] + 0.5 * noise[:, :-1], Z))
    for lags in (0, 2, 5):
        old = _old_long_run(Theta, blocks, lags)
        np.testing.assert_allclose(long_run_covariance(Theta, blocks, lags=lags).dense(), old,
                                   rtol=1e-9, atol=1e-12 * np.abs(old).max())


@pytest.mark.parametrize("seed", range(3))
def test_long_run_residual_terms_are_the_lagged_products_within_each_trajectory(seed):
    # gamma_e(tau) = sum over trajectories of sum_k e_k e_{k-tau}^T, lags never crossing a
    # trajectory start; a trajectory shorter than the lag adds nothing to it.
    rng = np.random.default_rng(seed)
    n, p = 3, 4
    Theta = rng.standard_normal((n, p))
    blocks = []
    for length in (200, 3, 150):
        Phi = rng.standard_normal((p, length))
        Z = np.concatenate([Phi, rng.standard_normal((2, length))])
        noise = rng.standard_normal((n, length + 1))
        blocks.append((Phi, Theta @ Phi + noise[:, 1:] - 0.4 * noise[:, :-1], Z))
    lags = 5
    cov = long_run_covariance(Theta, blocks, lags=lags)
    E = [Y - Theta @ Phi for Phi, Y, _ in blocks]
    dof = sum(e.shape[1] for e in E) - p          # per residual degree of freedom
    for tau in range(lags + 1):
        direct = sum((e[:, tau:] @ e[:, :e.shape[1] - tau].T for e in E if e.shape[1] > tau),
                     np.zeros((n, n)))
        weight = 1.0 - tau / (lags + 1.0)
        term = cov.left[0] if tau == 0 else cov.left[2 * tau - 1]
        np.testing.assert_allclose(term * dof / weight, direct, rtol=1e-10,
                                   atol=1e-12 * np.abs(direct).max())


def _instrument_blocks(rng, layout: str, lengths, n=3, m=2, R=4, offset=0.0):
    """Regression blocks whose instruments are laid out as the refined fit's: open loop
    ``[x^_k; u_k .. u_k-R]`` (the lagged inputs shared with ``phi_k``), closed loop lags
    ``0 .. R`` of one signal; realistic correlation between instruments and regressors."""
    from dmdidc.regression.solution import lagged_inputs

    Theta = rng.standard_normal((n, n + m * (R + 1))) / np.sqrt(n + m * (R + 1))
    blocks = []
    for length in lengths:
        U = rng.standard_normal((m, length + R)) + offset
        X = rng.standard_normal((n, length)) + offset
        signal = X + 0.5 * rng.standard_normal((n, length))          # correlated, not equal
        Phi = np.concatenate([X, lagged_inputs(U, R)])
        if layout == "simulated":
            Z = np.concatenate([signal, lagged_inputs(U, R)])
        else:
            V = np.concatenate([np.concatenate([np.zeros((n, R)), signal], axis=1), U])
            Z = lagged_inputs(V, R)
        noise = rng.standard_normal((n, length + 1))
        blocks.append((Phi, Theta @ Phi + noise[:, 1:] - 0.5 * noise[:, :-1], Z))
    structure = (dict(common=m * (R + 1), lagged=(n, m)) if layout == "simulated"
                 else dict(lagged=(0, n + m)))
    return Theta, blocks, structure


@pytest.mark.parametrize("layout", ["simulated", "exogenous"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("lengths", [(120, 3, 57, 1), (2, 1, 90, 5)])
def test_lag_zero_gram_from_the_lag_structure_equals_the_product(layout, seed, lengths):
    # The blocks of two lags of the lagged signal follow from those of the lags before (one
    # sample in, one out per piece, pieces of one sample included): Z Z^T, exactly symmetric.
    from dmdidc.regression.instrumental import _lagged_gram

    rng = np.random.default_rng(seed)
    _, blocks, structure = _instrument_blocks(rng, layout, lengths, offset=0.7)
    Z = np.concatenate([b[2] for b in blocks], axis=1)
    lengths = [b[2].shape[1] for b in blocks]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    found = _lagged_gram(Z, starts, lengths, *structure["lagged"])
    direct = Z @ Z.T
    np.testing.assert_allclose(found, direct, rtol=0, atol=1e-13 * np.abs(direct).max())
    np.testing.assert_array_equal(found, found.T)


@pytest.mark.parametrize("layout", ["simulated", "exogenous"])
@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("lengths", [(120, 3, 57, 1), (2, 1, 90, 5)])
@pytest.mark.parametrize("lags", [3, 7])
def test_lagged_moments_from_the_lag_zero_gram_equal_the_direct_products(layout, centred, seed,
                                                                         lengths, lags):
    # Lags up to past the instruments' own lag window (R = 4) and pieces shorter than the lag
    # (also first, so products across piece starts reach back over several pieces):
    # the shifted columns of the lag-0 gram (less each piece's first samples, plus the constant
    # that centring leaves between two lags of one signal) are the direct products; 3 lags
    # by the stacked product, 7 by the transforms and the recursions along the lags.
    from dmdidc.regression import instrumental
    from dmdidc.regression.instrumental import lagged_moments

    assert (lags > instrumental._TRANSFORM_STRUCTURED_LAGS) == (lags == 7)

    rng = np.random.default_rng(seed)
    _, blocks, structure = _instrument_blocks(rng, layout, lengths, offset=0.7)
    Z = np.concatenate([b[2] for b in blocks], axis=1)
    means = Z.mean(axis=1) if centred else None
    if centred:
        Z = Z - means[:, None]
    lengths = [b[2].shape[1] for b in blocks]
    pieces = np.split(Z, np.cumsum(lengths)[:-1], axis=1)
    fast = lagged_moments(Z, lengths, lags, Z @ Z.T, means, structure["lagged"])
    plain = lagged_moments(Z, lengths, lags, Z @ Z.T)
    for tau in range(1, lags + 1):
        direct = sum(z[:, tau:] @ z[:, :z.shape[1] - tau].T for z in pieces if z.shape[1] > tau)
        scale = np.abs(direct).max()
        np.testing.assert_allclose(fast[tau - 1], direct, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(plain[tau - 1], direct, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("layout", ["simulated", "exogenous"])
@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("lengths", [(120, 3, 57, 1), (2, 1, 90, 5, 300)])
def test_lagged_moments_of_many_lags_by_transforms_equal_the_direct_products(layout, centred,
                                                                             seed, lengths):
    # 30 lags (past the lag window R = 4 and past most pieces) take the transforms for the
    # head rows and lag 0 against the head and the oldest lag, the anti-diagonal recursion
    # for the other new columns and the recursion along the rows for the lagged rows (with
    # the means' steps when centred): the direct products within each piece.
    from dmdidc.regression import instrumental
    from dmdidc.regression.instrumental import lagged_moments

    rng = np.random.default_rng(seed)
    _, blocks, structure = _instrument_blocks(rng, layout, lengths, offset=0.7)
    Z = np.concatenate([b[2] for b in blocks], axis=1)
    head, width = structure["lagged"]
    lags = 30
    assert lags > instrumental._TRANSFORM_STRUCTURED_LAGS
    means = Z.mean(axis=1) if centred else None
    if centred:
        Z = Z - means[:, None]
    lengths = [b[2].shape[1] for b in blocks]
    pieces = np.split(Z, np.cumsum(lengths)[:-1], axis=1)
    fast = lagged_moments(Z, lengths, lags, Z @ Z.T, means, structure["lagged"])
    energy = np.einsum("ij,ij->i", Z, Z)
    scale = np.sqrt(np.outer(energy, energy))     # Cauchy-Schwarz bound of every entry
    for tau in range(1, lags + 1):
        direct = sum((z[:, tau:] @ z[:, :z.shape[1] - tau].T for z in pieces
                      if z.shape[1] > tau), np.zeros(scale.shape))
        np.testing.assert_array_less(np.abs(fast[tau - 1] - direct), 1e-12 * scale + 1e-300)


@pytest.mark.parametrize("seed", range(3))
def test_lagged_moments_of_lags_beyond_all_samples_are_zero(seed):
    # Without lag structure, a lag longer than all the pieces together pairs no samples: the
    # products are zero (the shift's slice wrapped round and numpy raised a matmul error).
    from dmdidc.regression.instrumental import lagged_moments

    rng = np.random.default_rng(seed)
    lengths = [int(k) for k in rng.integers(0, 3, 3)] + [1]
    Z = rng.standard_normal((3, sum(lengths)))
    moments = lagged_moments(Z, lengths, sum(lengths) + 3, Z @ Z.T)
    pieces = np.split(Z, np.cumsum(lengths)[:-1], axis=1)
    for tau in range(1, moments.shape[0] + 1):
        direct = sum((z[:, tau:] @ z[:, :z.shape[1] - tau].T for z in pieces
                      if z.shape[1] > tau), np.zeros((3, 3)))
        np.testing.assert_allclose(moments[tau - 1], direct, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("rows, lags", [(2, 40), (6, 30), (30, 12)])
def test_lagged_moments_by_transforms_equal_the_direct_products(seed, rows, lags):
    # Many lags take the blocked transforms (pieces laid out lags apart): the same sums as a
    # product per lag within each piece, for pieces shorter than the lags, empty pieces and a
    # lag longer than some pieces, with coloured rows of unequal scale.
    from dmdidc.regression.instrumental import _TRANSFORM_LAGS, _TRANSFORM_ROWS, lagged_moments

    assert lags > _TRANSFORM_LAGS + _TRANSFORM_ROWS / rows          # the transform path
    rng = np.random.default_rng(seed)
    lengths = [120, 3, 0, 57, 1, 300, int(rng.integers(1, 60))]
    white = rng.standard_normal((rows, sum(lengths) + 5))
    Z = (white[:, 5:] + 0.8 * white[:, 4:-1] + 0.5 * white[:, :-5]) \
        * np.logspace(-3, 3, rows)[:, None] + 0.3
    moments = lagged_moments(Z, lengths, lags, Z @ Z.T)
    pieces = np.split(Z, np.cumsum(lengths)[:-1], axis=1)
    energy = np.einsum("ij,ij->i", Z, Z)
    scale = np.sqrt(np.outer(energy, energy))     # Cauchy-Schwarz bound of every entry
    for tau in range(1, lags + 1):
        direct = sum((z[:, tau:] @ z[:, :z.shape[1] - tau].T for z in pieces
                      if z.shape[1] > tau), np.zeros((rows, rows)))
        np.testing.assert_array_less(np.abs(moments[tau - 1] - direct), 1e-12 * scale + 1e-300)


def test_projected_instruments_invert_the_first_stage():
    # G^T S_zphi = I (the projected instruments reproduce the regressors' moments) and
    # G^T S_zz G = M^-1, with the shared lagged-input columns read from Z Z^T.
    from dmdidc.regression.instrumental import instrument_moments, projected_instruments

    for seed in range(5):
        rng = np.random.default_rng(seed)
        _, blocks, structure = _instrument_blocks(rng, "simulated", (400, 300))
        Phi = np.concatenate([b[0] for b in blocks], axis=1)
        Z = np.concatenate([b[2] for b in blocks], axis=1)
        common = structure["common"]
        S_zz, S_zphi = instrument_moments(Z, Phi[:Phi.shape[0] - common], common)
        np.testing.assert_allclose(S_zphi, Z @ Phi.T, rtol=1e-12, atol=1e-12 * np.abs(S_zz).max())
        G = projected_instruments(S_zz, S_zphi)
        np.testing.assert_allclose(G.T @ S_zphi, np.eye(Phi.shape[0]), atol=1e-9)
        M = S_zphi.T @ np.linalg.solve(S_zz, S_zphi)
        np.testing.assert_allclose(G.T @ S_zz @ G, np.linalg.inv(M), rtol=1e-8,
                                   atol=1e-10 * np.abs(np.linalg.inv(M)).max())


@pytest.mark.parametrize("layout", ["simulated", "exogenous"])
@pytest.mark.parametrize("centred", [False, True])
def test_long_run_covariance_with_the_instrument_layout_equals_the_plain_one(layout, centred):
    # The structured path (shared columns, lags from the lag-0 gram) computes the same
    # Kronecker terms as the plain one, over random draws and lag windows.
    for seed in range(4):
        rng = np.random.default_rng(seed)
        Theta, blocks, structure = _instrument_blocks(rng, layout, (300, 250, 2), offset=0.5)
        for lags in (0, 1, 3, 6):
            plain = long_run_covariance(Theta, blocks, lags=lags, centred=centred).dense()
            fast = long_run_covariance(Theta, blocks, lags=lags, centred=centred,
                                       **structure).dense()
            np.testing.assert_allclose(fast, plain, rtol=0, atol=1e-10 * np.abs(plain).max())


@pytest.mark.parametrize("layout", ["simulated", "exogenous"])
@pytest.mark.parametrize("centred", [False, True])
def test_trimmed_instrument_moments_equal_the_direct_products_of_the_kept_samples(layout,
                                                                                  centred):
    # The moment checks' instrument moments (each trajectory less `trim` samples at either
    # end, centred by their own means) read from the long-run covariance's products equal
    # the products of the kept samples; the covariance itself is unchanged; a trajectory
    # too short to keep two samples gives none (the checks compute their own).
    for seed in range(4):
        rng = np.random.default_rng(seed)
        Theta, blocks, structure = _instrument_blocks(rng, layout, (300, 250, 41), offset=3.0)
        common = structure.get("common", 0)
        plain = long_run_covariance(Theta, blocks, lags=2, centred=centred, **structure)
        covariance, trimmed = long_run_covariance(Theta, blocks, lags=2, centred=centred,
                                                  trim=10, **structure)
        np.testing.assert_array_equal(covariance.dense(), plain.dense())
        Z = np.concatenate([b[2][:, 10:-10] for b in blocks], axis=1)
        head = np.concatenate([b[0][:b[0].shape[0] - common, 10:-10] for b in blocks], axis=1)
        assert trimmed.n_samples == Z.shape[1] and trimmed.centred == centred
        np.testing.assert_allclose(trimmed.sums, Z.sum(axis=1), rtol=1e-12,
                                   atol=1e-12 * np.abs(Z).sum())
        if centred:
            Z = Z - Z.mean(axis=1, keepdims=True)
            head = head - head.mean(axis=1, keepdims=True)
        scale = np.abs(Z).max() * max(np.abs(Z).max(), np.abs(head).max()) * Z.shape[1]
        np.testing.assert_allclose(trimmed.S_zz, Z @ Z.T, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(trimmed.S_zhead, Z @ head.T, rtol=0, atol=1e-12 * scale)
        assert long_run_covariance(Theta, blocks, lags=2, centred=centred, trim=20,
                                   **structure)[1] is None          # 41 - 2 x 20 < 2


@pytest.mark.statistical
def test_coefficient_standard_errors_are_calibrated_on_short_records():
    # The default fit at K = 390 (10 x its 39 parameters; IV with the long-run covariance on
    # most redraws): over redraws of inputs and 30 dB noise, the coefficients' empirical
    # variance over the mean estimated one. Measured 0.95 (median over 5 plants x 300
    # redraws, per coefficient 0.83-1.05); dividing the residuals' autocovariances by N instead
    # of the degrees of freedom gave 0.98. 3 plants x 60 redraws: the median's sampling
    # spread is about 0.05, so the band [0.8, 1.2] fails for a covariance 20 % off, not by chance.
    import warnings

    from dmdidc import DMDidc
    from simulations.studies.data_kinds import random_plant

    ratios, estimators = [], []
    for seed in range(3):
        plant = random_plant(np.random.default_rng(100 + seed))
        rng = np.random.default_rng(200 + seed)
        thetas, variances = [], []
        for _ in range(60):
            U = rng.standard_normal((2, 390))
            X = plant.simulate(np.zeros(3), U)
            X = X + 10 ** -1.5 * np.sqrt(np.mean(X ** 2, 1, keepdims=True)) * rng.standard_normal(
                X.shape)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")       # this test reads the covariance only
                solution = DMDidc(max_delay=4).fit(X, U, dt=0.5).regression_
            estimators.append(solution.estimator)
            thetas.append(solution.coefficients.ravel())
            variances.append(solution.standard_errors.ravel() ** 2)
        ratios.append(np.var(thetas, axis=0, ddof=1) / np.mean(variances, axis=0))
    assert estimators.count("iv") > len(estimators) / 2       # the long-run path is exercised
    median = float(np.median(ratios))
    assert 0.8 <= median <= 1.2, f"empirical / estimated coefficient variance {median:.3f}"


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("extra", [False, True])
def test_frechet_variances_equal_the_dense_gradients(seed, extra):
    # X = V ((W E V) o F) W: A_c's first-order change from A_d's in the eigenbasis of a real
    # matrix with complex modes; each gradient built by mapping a unit change, then the dense
    # quadratic form over the covariance of the square block E = dTheta[:, columns]
    from dmdidc.inference.jacobian import _divided

    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(2, 6)), int(rng.integers(6, 10))
    cov = _random(rng, n, p, terms=int(rng.integers(1, 4)), extra=extra)
    mu, V = np.linalg.eig(rng.standard_normal((n, n)))
    W = np.linalg.inv(V)
    factors = 1.0 / _divided(np.exp(0.5 * mu), 0.5 * np.exp(0.5 * mu), mu)
    columns = np.sort(rng.choice(p, size=n, replace=False))
    gradients = np.zeros((n * n, n * n))
    for k in range(n * n):
        unit = np.zeros(n * n)
        unit[k] = 1.0
        X = V @ ((W @ unit.reshape(n, n) @ V) * factors) @ W
        assert np.abs(X.imag).max() <= 1e-10 * np.abs(X).max()     # a real map
        gradients[:, k] = X.real.ravel()
    index = (np.arange(n)[:, None] * p + columns[None, :]).ravel()
    block = cov.dense()[np.ix_(index, index)]
    expected = np.einsum("ij,jk,ik->i", gradients, block, gradients).reshape(n, n)
    got = cov.frechet_variances(V, W, factors, columns)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())
