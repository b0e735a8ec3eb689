"""Least squares' moment checks from one lagged Gram matrix (``inference.moment_gram``),
against the signals, regressors and residuals laid out sample by sample."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from dmdidc.errors import ParameterError
from dmdidc.inference.moment_gram import corrected_moments
from dmdidc.inference.residuals import MOMENT_LAGS, STATE_LAGS, moment_checks
from dmdidc.regression.lagged_gram import LaggedGram


def _laid_out(trajectories, coefficients, slots, R, centred):
    """Phi, W and E over the samples every slot reaches, trajectories side by side."""
    n = coefficients.shape[0]
    phis, ws, es = [], [], []
    for X, U in trajectories:
        K = U.shape[1]
        first = max([R] + [lag for _, lag in slots])
        last = K - 1 - max([0] + [-lag for _, lag in slots])
        if last - first + 1 < 2:
            continue
        k = np.arange(first, last + 1)
        signal = {"x": X, "u": U}
        phi = np.vstack([X[:, k]] + [U[:, k - j] for j in range(R + 1)])
        phis.append(phi)
        ws.append(np.vstack([signal[s][:, k - lag] for s, lag in slots]))
        es.append(X[:, k + 1] - coefficients @ phi)
    Phi, W, E = (np.concatenate(a, axis=1) if a else np.zeros((r, 0))
                 for a, r in ((phis, coefficients.shape[1]), (ws, 0), (es, n)))
    if centred:
        Phi, W, E = (a - a.mean(axis=1, keepdims=True) for a in (Phi, W, E))
    return Phi, W, E


@pytest.mark.parametrize("seed", range(12))
def test_corrected_moments_equal_those_of_the_laid_out_samples(seed):
    # random sizes, lags either side, several trajectories (some too short to count) and
    # lengths on both sides of the engine's dense/correlation switch
    rng = np.random.default_rng(seed)
    n, m, R = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(0, 6))
    L = int(rng.integers(1, 11))
    slots = ([("u", R + j) for j in range(1, L + 1)] + [("u", -j) for j in range(1, L + 1)]
             + [("x", j) for j in range(1, int(rng.integers(1, 4)))])
    trajectories = []
    for K in rng.choice([5, 40, 700, 3000, 9000], size=int(rng.integers(1, 4))):
        U = rng.standard_normal((m, int(K))) * 10.0 ** rng.uniform(-2, 2)
        X = rng.standard_normal((n, int(K) + 1)) * 10.0 ** rng.uniform(-2, 2) + 3.0
        trajectories.append((X, U))
    _assert_laid_out_moments(trajectories, rng.standard_normal((n, n + m * (R + 1))), slots, R,
                             bool(seed % 2))


@pytest.mark.parametrize("seed", range(6))
def test_pieces_laid_end_to_end_give_each_pieces_own_moments(seed):
    # the residual checks' pieces (too long for one dense product, shorter than
    # _DIRECT_SAMPLES) are correlated as one trajectory less the vectors whose lags straddle
    # two pieces: the same moments as each piece on its own, with very short pieces among
    # them (dense on their own) and one long one (products of its own)
    rng = np.random.default_rng(100 + seed)
    n, m, R, L = 8, 3, int(rng.integers(2, 8)), 10
    slots = ([("u", R + j) for j in range(1, L + 1)] + [("u", -j) for j in range(1, L + 1)]
             + [("x", 1), ("x", 2)])
    lengths = list(rng.integers(600, 3000, size=int(rng.integers(2, 9)))) + [30, 5000]
    trajectories = []
    for K in rng.permutation(lengths):
        U = rng.standard_normal((m, int(K))) * 10.0 ** rng.uniform(-1, 1)
        X = rng.standard_normal((n, int(K) + 1)) + 2.0
        trajectories.append((X, U))
    _assert_laid_out_moments(trajectories, rng.standard_normal((n, n + m * (R + 1))), slots, R,
                             bool(seed % 2))


def _assert_laid_out_moments(trajectories, coefficients, slots, R, centred):
    residuals = [X[:, R + 1:] - coefficients @ np.vstack(
        [X[:, R:U.shape[1]]] + [U[:, R - j:U.shape[1] - j] for j in range(R + 1)])
        for X, U in trajectories]
    out = corrected_moments(trajectories, residuals, slots, max_delay=R, centred=centred)
    Phi, W, E = _laid_out(trajectories, coefficients, slots, R, centred)
    assert out.n_samples == E.shape[1]
    if not out.n_samples:
        return
    C = W - (W @ Phi.T) @ np.linalg.pinv(Phi @ Phi.T) @ Phi
    scale = np.sqrt(np.outer(np.diag(W @ W.T), np.diag(W @ W.T)))
    np.testing.assert_allclose(out.raw, np.einsum("ij,ij->i", W, W), rtol=1e-10)
    np.testing.assert_allclose(out.signals / scale, (C @ C.T) / scale, atol=1e-9)
    size = np.sqrt(np.outer(np.diag(W @ W.T), np.diag(E @ E.T)))
    np.testing.assert_allclose(out.moments / size, (C @ E.T) / size, atol=1e-9)
    np.testing.assert_allclose(out.residuals, E @ E.T, rtol=1e-9,
                               atol=1e-12 * np.abs(E @ E.T).max())


@pytest.mark.parametrize("seed", range(6))
def test_least_squares_moment_statistics_are_the_kronecker_forms_of_the_samples(seed):
    # the statistic of each group is g^T (C C^T kron E E^T / N)^+ g of the laid-out samples
    # (every direction decidable: white inputs, random states), its threshold the chi^2
    # quantile of the full rank
    rng = np.random.default_rng(seed)
    n, m, R = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
    K = int(rng.integers(400, 3000))
    U = rng.standard_normal((m, K))
    X = rng.standard_normal((n, K + 1))
    coefficients = np.linalg.lstsq(
        np.vstack([X[:, R:K]] + [U[:, R - j:K - j] for j in range(R + 1)]).T,
        X[:, R + 1:].T, rcond=None)[0].T
    level = 0.01
    checks = moment_checks([(X, U)], None, coefficients, max_delay=R, centred=False,
                           level=level, kind="regressors")
    L, S = MOMENT_LAGS, STATE_LAGS
    groups = {"input_correlation": [("u", R + j) for j in range(1, L + 1)],
              "feedback": [("u", -j) for j in range(1, L + 1)],
              "state_completeness": [("x", j) for j in range(1, S + 1)]}
    every = [slot for slots in groups.values() for slot in slots]
    Phi, W_all, E = _laid_out([(X, U)], coefficients, every, R, False)
    row = 0
    for check in checks:
        width = len(groups[check.name]) * (m if check.name != "state_completeness" else n)
        W = W_all[row:row + width]
        row += width
        C = W - (W @ Phi.T) @ np.linalg.solve(Phi @ Phi.T, Phi)
        g = (C @ E.T).ravel()
        V = np.kron(C @ C.T, E @ E.T / E.shape[1])
        expected = g @ np.linalg.pinv(V, rcond=1e-10) @ g
        assert check.statistic == pytest.approx(expected, rel=1e-7)
        assert check.threshold == pytest.approx(special.chdtri(g.size, level))


def test_lagged_gram_refuses_lags_further_ahead_than_one_step():
    with pytest.raises(ParameterError, match="lags below -1"):
        LaggedGram([("u", 0), ("u", -2)], {"u": 1})


@pytest.mark.parametrize("K", [3000, 6000])
def test_misaligned_residuals_are_refused_on_either_path(K):
    """Residuals one sample short (X[:, 1:] for max_delay 2): refused by name whether the
    trajectory is summed by the engine (short) or by products of its own (long)."""
    from dmdidc.errors import DimensionError
    from dmdidc.inference.moment_gram import corrected_moments

    rng = np.random.default_rng(K)
    X, U = rng.standard_normal((2, K + 1)), rng.standard_normal((1, K))
    with pytest.raises(DimensionError, match=rf"residuals\[0\] has shape \(2, {K}\)"):
        corrected_moments([(X, U)], [X[:, 1:]], [("u", 3), ("u", -1)], max_delay=2,
                          centred=False)
