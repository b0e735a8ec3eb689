"""The eigenbasis-free derivatives agree with the block-matrix identity f([[A, E], [0, A]]) =
[[f(A), L_f(A, E)], [0, f(A)]] in random directions, however close the eigenvalues."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm, logm

from dmdidc.inference import frechet
from dmdidc.inference.frechet import SchurFrechet, schur_error


def near_defective(rng, n, split):
    """A random non-normal ``A_c`` with a Jordan-like chain of eigenvalues ``split`` apart."""
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    T = np.diag(-0.6 - split * np.arange(n)) + np.diag(np.ones(n - 1), 1) \
        + 0.3 * np.triu(rng.standard_normal((n, n)), 2)
    return Q @ T @ Q.T


def relative(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("seed, n, split", [(0, 3, 1e-9), (1, 4, 1e-6), (2, 6, 1e-3),
                                            (3, 8, 0.0), (4, 5, 1e-1)])
def test_the_logarithm_derivative_is_the_block_logarithm(seed, n, split):
    rng, dt = np.random.default_rng(seed), 0.5
    A_c = near_defective(rng, n, split)
    A_d = expm(A_c * dt)
    derivatives = SchurFrechet(A_c, dt)
    E = rng.standard_normal((4, n, n))
    ours = derivatives.log(E)
    for k in range(4):
        truth = logm(np.block([[A_d, E[k]], [np.zeros((n, n)), A_d]]))[:n, n:].real / dt
        assert relative(ours[k], truth) < 1e-9
    # the adjoint map: <G, L(E)> = <L*(G), E>, and the rows are the adjoint of unit directions
    G = rng.standard_normal((4, n, n))
    lhs = np.einsum("kab,kab->k", G, ours)
    rhs = np.einsum("kab,kab->k", derivatives.log_adjoint(G), E)
    assert np.abs(lhs - rhs).max() <= 1e-12 * np.abs(lhs).max()
    rows = derivatives.log_rows()
    assert relative(rows @ E[0].ravel(), ours[0].ravel()) < 1e-12
    assert schur_error(derivatives) < 1e-12


@pytest.mark.parametrize("per_block", [1, 2])
def test_the_rows_built_in_blocks_are_the_derivative(monkeypatch, per_block):
    # blocks of one or two of A_d's rows' directions (n = 50 held 545 MB as one block)
    monkeypatch.setattr(frechet, "_BLOCK_BYTES", 16 * 7 ** 3 * per_block)
    rng, dt = np.random.default_rng(8), 0.5
    derivatives = SchurFrechet(near_defective(rng, 7, 1e-5), dt)
    blocks = list(derivatives.log_row_blocks())
    assert len(blocks) == -(-7 // per_block)
    rows = derivatives.log_rows()
    E = rng.standard_normal((3, 7, 7))
    assert relative(E.reshape(3, -1) @ rows.T, derivatives.log(E).reshape(3, -1)) < 1e-12


@pytest.mark.parametrize("seed, n, split, s", [(5, 3, 1e-8, 0.5), (6, 6, 1e-4, 0.2),
                                               (7, 4, 0.0, 3.0)])
def test_the_hold_derivatives_are_the_block_exponential(seed, n, split, s):
    rng = np.random.default_rng(seed)
    A_c = 3.0 * near_defective(rng, n, split)           # ||A_c s|| up to ~10: several panels
    derivatives = SchurFrechet(A_c, 0.5)
    E, v = rng.standard_normal((n, n)), rng.standard_normal(n)
    M = np.block([[A_c, E], [np.zeros((n, n)), A_c]])
    big = expm(s * np.block([[M, np.eye(2 * n)], [np.zeros((2 * n, 4 * n))]]))
    assert relative(derivatives.hold_times(s, v, gamma=True) @ E.ravel(),
                    big[:n, 3 * n:] @ v) < 1e-10
    assert relative(derivatives.hold_times(s, v, gamma=False) @ E.ravel(),
                    expm(s * M)[:n, n:] @ v) < 1e-10
    exp_s, gamma_s = derivatives.hold(s)
    assert relative(exp_s, expm(s * A_c)) < 1e-12
    assert relative(gamma_s, big[:n, 2 * n:3 * n]) < 1e-12


@pytest.mark.parametrize("seed, n, w", [(8, 8, 6.2), (9, 20, 6.2), (10, 5, 6.28)])
def test_the_check_passes_right_derivatives_of_a_near_singular_logarithm(seed, n, w):
    # complex pairs near the negative axis (Im mu T ~ 3.1-3.14): the log's derivative is
    # 1e4-1e7 times its direction, and the unscaled block exponential's own rounding
    # rejected right derivatives (a review: 6.6e-4 at n = 20); scaled, the check is below the
    # limit while the derivative agrees with the block logarithm
    from dmdidc.inference.jacobian import MAX_SCHUR_ERROR

    rng = np.random.default_rng(seed)
    T = np.zeros((n, n))
    for k in range(0, n - 1, 2):
        T[k:k + 2, k:k + 2] = [[-0.3, w + 1e-7 * k], [-(w + 1e-7 * k), -0.3]]
    if n % 2:
        T[-1, -1] = -0.3
    T += np.triu(rng.standard_normal((n, n)), 2) / np.sqrt(n)
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c, dt = Q @ T @ Q.T, 0.5
    derivatives = SchurFrechet(A_c, dt)
    assert schur_error(derivatives) <= MAX_SCHUR_ERROR
    E = rng.standard_normal((n, n))
    A_d = expm(A_c * dt)
    block = logm(np.block([[A_d, E], [np.zeros((n, n)), A_d]]))[:n, n:] / dt
    found = derivatives.log(E[None])[0]
    assert np.linalg.norm(found - block.real) <= 1e-8 * np.linalg.norm(block)
