"""The blocked linear recursion equals the plain one."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.regression.propagation import delayed_response, propagate


def _recursion(A, inputs, initial, C):
    x, expected = initial.copy(), np.empty((inputs.shape[0], C.shape[0], inputs.shape[2]))
    for k in range(inputs.shape[0]):
        expected[k] = C @ x
        x = A @ x + inputs[k]
    return expected


@pytest.mark.parametrize("seed,T,P,radius", [(0, 1, 1, 1.1), (1, 2, 1, 1.1), (2, 31, 2, 1.1),
                                            (3, 33, 1, 0.9), (4, 500, 7, 1.01),
                                            (5, 2001, 1, 0.99)])
def test_blocked_propagation_equals_the_recursion(seed, T, P, radius):
    rng = np.random.default_rng(seed)
    n, ny = 4, 2
    A = rng.standard_normal((n, n))
    A *= radius / np.max(np.abs(np.linalg.eigvals(A)))          # radius > 1: a growing mode
    inputs, initial = rng.standard_normal((T, n, P)), rng.standard_normal((n, P))
    C = rng.standard_normal((ny, n))
    expected = _recursion(A, inputs, initial, C)
    found = propagate(A, inputs, initial=initial, C=C)
    assert np.allclose(found, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_a_defective_matrix_needs_no_eigenbasis():
    A = np.array([[0.9, 1.0, 0.0], [0.0, 0.9, 1.0], [0.0, 0.0, 0.9]])     # one Jordan block
    inputs = np.random.default_rng(0).standard_normal((300, 3, 2))
    expected = _recursion(A, inputs, np.zeros((3, 2)), np.eye(3))
    found = propagate(A, inputs)
    assert np.allclose(found, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())


@pytest.mark.parametrize("seed,m,R,K", [(0, 1, 0, 1), (1, 2, 3, 2), (2, 3, 5, 40), (3, 2, 20, 700),
                                        (4, 4, 2, 2001)])
def test_delayed_response_equals_the_recursion_with_lagged_inputs(seed, m, R, K):
    rng = np.random.default_rng(seed)
    n = 4
    A = rng.standard_normal((n, n))
    A *= 0.95 / np.max(np.abs(np.linalg.eigvals(A)))
    B = rng.standard_normal((R + 1, n, m))
    U = rng.standard_normal((m, K))
    x, expected = np.zeros(n), np.empty((n, K))
    for k in range(K):
        expected[:, k] = x
        x = A @ x + sum(B[j] @ U[:, k - j] for j in range(R + 1) if k >= j)
    found = delayed_response(A, B, U)
    assert found.shape == (n, K)
    assert np.allclose(found, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())


def test_delayed_inputs_may_enter_only_the_leading_states():
    rng = np.random.default_rng(7)
    A = 0.3 * rng.standard_normal((6, 6))
    B = rng.standard_normal((3, 4, 2))                # enters states 0 .. 3 of 6
    U = rng.standard_normal((2, 300))
    padded = np.concatenate([B, np.zeros((3, 2, 2))], axis=1)
    np.testing.assert_allclose(delayed_response(A, B, U), delayed_response(A, padded, U),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(delayed_response(A, B, U, leading=3),
                               delayed_response(A, B, U)[:3], rtol=1e-12, atol=1e-12)
