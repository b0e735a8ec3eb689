"""The moment tests' lag-window covariance in factored form against the dense path.

``V = sum_j left_j kron right_j`` (``(q n)^2``) is never formed on the factored path
(:func:`dmdidc.inference.residuals._factored_form`): conjugate gradients with a Kronecker
preconditioner give ``g^T V^-1 g``, and a Lanczos bound certifies full rank, or the dense
path decides.  Here both are run on random signals and residuals (white and AR(1) 0.9,
several trajectories of unequal lengths, rank-deficient ones, tiny and huge scales, 4 to 2000
moments): the same statistic to 1e-8 relative, the same rank and the same largest standardized
moment, and the fallback taken wherever the rank is short.
"""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.inference.residuals import (
    _FACTORED_ITERATIONS,
    _factored_form,
    _lag_window_terms,
    _moment_statistic,
    _pseudo_quadratic,
)


def _series(rng, rows: int, lengths: tuple[int, ...], coloured: bool) -> np.ndarray:
    """Rows of white or AR(1) 0.9 noise, the trajectories side by side."""
    pieces = []
    for K in lengths:
        x = rng.standard_normal((rows, K))
        if coloured:
            for k in range(1, K):
                x[:, k] += 0.9 * x[:, k - 1]
        pieces.append(x)
    return np.concatenate(pieces, axis=1)


def _terms(W: np.ndarray, E: np.ndarray, lengths: tuple[int, ...], lags: int):
    gram = W @ W.T
    return _lag_window_terms(W, E, list(lengths), lags, gram, gram, None, None)


def _dense(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The reference covariance, by Kronecker products term by term."""
    return sum(np.kron(a, b) for a, b in zip(left, right, strict=True))


CASES = [  # (q, n, lengths, lags, coloured signals, coloured residuals)
    (2, 2, (300,), 2, False, False),
    (3, 4, (500, 120, 37), 3, True, False),
    (8, 5, (900, 400), 4, False, True),
    (12, 10, (2000, 700, 150), 2, True, True),
    (20, 25, (3000,), 6, True, False),
    (40, 50, (4000, 2500), 2, False, True),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("q,n,lengths,lags,coloured_w,coloured_e", CASES)
def test_the_factored_form_equals_the_dense_pseudo_inverse_form(seed, q, n, lengths, lags,
                                                                 coloured_w, coloured_e):
    rng = np.random.default_rng(seed)
    W = _series(rng, q, lengths, coloured_w)
    E = _series(rng, n, lengths, coloured_e)
    left, right = _terms(W, E, lengths, lags)
    g = (W @ E.T).ravel()
    form = _factored_form(left, right, g, _FACTORED_ITERATIONS)
    expected, expected_rank = _pseudo_quadratic(_dense(left, right), g)
    assert form is not None                      # well-posed: no fallback
    assert form[1] == expected_rank == q * n
    assert abs(form[0] - expected) <= 1e-8 * expected


@pytest.mark.parametrize("scale_w,scale_e", [(1e-40, 1.0), (1e40, 1e-30), (1e35, 1e35)])
def test_the_factored_form_is_the_same_in_any_units(scale_w, scale_e):
    rng = np.random.default_rng(3)
    lengths = (1500, 600)
    W = _series(rng, 6, lengths, True)
    E = _series(rng, 7, lengths, True)
    g = (W @ E.T).ravel()
    reference = _factored_form(*_terms(W, E, lengths, 3), g, _FACTORED_ITERATIONS)
    W, E = scale_w * W, scale_e * E
    left, right = _terms(W, E, lengths, 3)
    g = (W @ E.T).ravel()
    form = _factored_form(left, right, g, _FACTORED_ITERATIONS)
    expected, expected_rank = _pseudo_quadratic(_dense(left, right), g)
    assert form is not None and form[1] == expected_rank == 42
    assert abs(form[0] - expected) <= 1e-8 * expected
    assert abs(form[0] - reference[0]) <= 1e-8 * reference[0]


@pytest.mark.parametrize("deficient", ["signals", "residuals", "both"])
def test_a_repeated_signal_or_residual_falls_back_to_the_dense_rank(deficient):
    """A repeated row makes ``V`` singular (``W0`` or ``E0`` is): the factored path cannot
    certify full rank and leaves the decision to the dense path, whose rank is short."""
    rng = np.random.default_rng(4)
    lengths = (1200, 800)
    W = _series(rng, 6, lengths, True)
    E = _series(rng, 5, lengths, False)
    if deficient in ("signals", "both"):
        W[3] = W[1]
    if deficient in ("residuals", "both"):
        E[4] = E[0]
    left, right = _terms(W, E, lengths, 3)
    g = (W @ E.T).ravel()
    assert _factored_form(left, right, g, _FACTORED_ITERATIONS) is None
    expected = _pseudo_quadratic(_dense(left, right), g)
    assert expected[1] < 30
    for factored in (None, True):
        statistic, rank, _, _ = _moment_statistic(W, E, list(lengths), 3, True,
                                                  factored=factored)
        assert rank == expected[1] and abs(statistic - expected[0]) <= 1e-8 * expected[0]


def test_too_few_iterations_fall_back():
    rng = np.random.default_rng(5)
    lengths = (2000,)
    W = _series(rng, 10, lengths, True)
    E = _series(rng, 10, lengths, True)
    left, right = _terms(W, E, lengths, 4)
    g = (W @ E.T).ravel()
    assert _factored_form(left, right, g, 3) is None
    assert _factored_form(left, right, g, 0) is None
    assert _factored_form(left, right, g, _FACTORED_ITERATIONS) is not None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_moment_statistic_is_the_same_on_both_paths(seed):
    """The whole statistic: form, rank and the largest standardized moment (with reduced
    directions ``back`` and a ``basis`` of them), factored against dense."""
    rng = np.random.default_rng(seed)
    lengths = (3000, 1700, 450)
    s, r, n, lags = 30, 24, 40, 3
    W = _series(rng, s, lengths, True)
    E = _series(rng, n, lengths, seed == 1)
    basis = np.linalg.qr(rng.standard_normal((s, r)))[0] * rng.uniform(0.5, 2.0, r)
    back = rng.standard_normal((s, r))
    for kwargs in ({}, {"back": back, "gram": W @ W.T, "basis": basis}):
        dense = _moment_statistic(W, E, list(lengths), lags, True, factored=False, **kwargs)
        factored = _moment_statistic(W, E, list(lengths), lags, True, factored=True, **kwargs)
        assert factored[1] == dense[1] == (r if kwargs else s) * n
        assert abs(factored[0] - dense[0]) <= 1e-8 * dense[0]
        assert factored[3] == dense[3] and abs(factored[2] - dense[2]) <= 1e-10 * dense[2]
        # the variances against the dense covariance's own diagonal
        left, right = _terms(W if not kwargs else basis.T @ W, E, lengths, lags)
        sd = np.sqrt(np.diag(_dense(left, right)))
        g = ((W if not kwargs else basis.T @ W) @ E.T).ravel()
        if not kwargs:
            assert np.isclose(factored[2], np.max(np.abs(g) / sd), rtol=1e-10)


@pytest.mark.parametrize("gap", [1e-12, 1e-6])
@pytest.mark.parametrize("seen", [True, False])
@pytest.mark.parametrize("q,n", [(20, 21), (9, 11)])
def test_an_eigenvalue_the_preconditioner_misses_is_not_certified(gap, seen, q, n):
    """``V = diag(a) kron diag(b) - t (x x^T) kron (y y^T)``, ``a`` and ``b`` spread over
    [1, 2], ``t`` chosen (secular equation) so that the smallest eigenvalue is ``gap``: nearly
    a Kronecker product.  Below the rank cut (1e-10) the dense path drops it; at 1e-6 it keeps
    it, but no bound from the allowed Lanczos steps (fewer than the 420 moments) can tell that
    from zero.  The factored path must leave both to the dense path, also where ``g`` misses
    that direction (conjugate gradients then converge as if it were not there); with 99
    moments Lanczos exhausts the space and its Ritz values are the eigenvalues: the dense
    path's answer, or none (``None``: the solve's attainable residual, about ``1e-16`` times
    the spread of 1e6, misses 1e-12 -- with a target of 1e-9 it agrees to 1e-10)."""
    rng = np.random.default_rng(6)
    a, b = rng.uniform(1.0, 2.0, q), rng.uniform(1.0, 2.0, n)
    x = rng.standard_normal(q)
    y = rng.standard_normal(n)
    x, y = x / np.linalg.norm(x), y / np.linalg.norm(y)
    t = 1.0 / np.sum(np.outer(x, y).ravel() ** 2 / (np.outer(a, b).ravel() - gap))
    left = np.stack([np.diag(a), -t * np.outer(x, x)])
    right = np.stack([np.diag(b), np.outer(y, y)])
    assert abs(np.linalg.eigvalsh(_dense(left, right))[0] - gap) <= 1e-13
    G = rng.standard_normal((q, n))
    if not seen:
        G -= x[:, None] * (x @ G @ y) * y[None, :]
    g = G.ravel()
    form = _factored_form(left, right, g, _FACTORED_ITERATIONS)
    expected, expected_rank = _pseudo_quadratic(_dense(left, right), g)
    assert expected_rank == (q * n - 1 if gap < 1e-10 else q * n)
    if gap < 1e-10 or q * n > _FACTORED_ITERATIONS:
        assert form is None
    elif form is not None:   # (a spread of 1e6 may keep the residual above 1e-12: None)
        assert form[1] == expected_rank and abs(form[0] - expected) <= 1e-8 * expected
