"""Linear recursions ``x_{k+1} = A x_k + s_k`` as matrix products (no loop over samples).

The samples are cut into ``count`` blocks of ``L ~ sqrt(T)``.  Every block is first run from a
zero state, all blocks at once: ``L`` steps, each one ``(n, n) @ (n, count P)`` product.  The
block starts then follow from ``x_{(j+1)L} = A^L x_{jL} + (block j's end)`` (``count`` small
steps), and each sample adds ``A^i x_{jL}`` (one product).  That is ``2 n^2 T P`` flops in
matrix products (``ny n T P`` more for outputs ``C x``) and ``2 sqrt(T)`` Python steps: twice
the plain recursion, in BLAS, with no eigenbasis (defective or ill-conditioned ``A`` alike) and
no FFT round-off.
"""

from __future__ import annotations

import numpy as np

__all__ = ["impulse_response", "propagate"]


def impulse_response(A: np.ndarray, C: np.ndarray, length: int) -> np.ndarray:
    """``C A^t`` for ``t < length``, shape (length, ny, n), by doubling (log2(length) products).

    Examples
    --------
    >>> impulse_response(np.array([[0.5]]), np.array([[2.0]]), 3)[:, 0, 0]
    array([2. , 1. , 0.5])
    """
    ny, n = C.shape
    h = np.zeros((length, ny, n))
    h[0] = C
    power, filled = A.copy(), 1
    with np.errstate(over="ignore", invalid="ignore"):
        while filled < length:
            take = min(filled, length - filled)
            h[filled:filled + take] = h[:take] @ power
            filled += take
            power = power @ power
    return h


def propagate(A: np.ndarray, inputs: np.ndarray, *, initial: np.ndarray | None = None,
              C: np.ndarray | None = None) -> np.ndarray:
    """Outputs ``C x_k`` (T, ny, P) of ``x_{k+1} = A x_k + inputs_k``, ``k < T`` (module notes).

    Parameters
    ----------
    A : ndarray, shape (n, n)
    inputs : ndarray, shape (T, n, P)
        ``P`` systems driven at once (``inputs[k]`` is ``s_k``; the last one only reaches
        ``x_T``, which is not returned).
    initial : ndarray, shape (n, P), optional
        ``x_0``; zero by default.
    C : ndarray, shape (ny, n), optional
        The identity (states) by default.

    Returns
    -------
    ndarray, shape (T, ny, P)

    Examples
    --------
    >>> propagate(np.array([[0.5]]), np.ones((4, 1, 1)))[:, 0, 0]
    array([0.  , 1.  , 1.5 , 1.75])
    """
    T, n, P = inputs.shape
    ny = n if C is None else C.shape[0]
    L = max(1, int(np.sqrt(T)))
    count = -(-T // L)
    padded = np.zeros((count * L, n, P))
    padded[:T] = inputs
    drive = padded.reshape(count, L, n, P).transpose(1, 2, 0, 3).reshape(L, n, count * P)
    with np.errstate(over="ignore", invalid="ignore"):
        local = np.zeros((L + 1, n, count * P))            # every block from a zero state
        for i in range(L):
            np.matmul(A, local[i], out=local[i + 1])
            local[i + 1] += drive[i]
        starts = np.zeros((count, n, P))
        if initial is not None:
            starts[0] = initial
        ends = local[L].reshape(n, count, P)
        leap = np.linalg.matrix_power(A, L)
        for j in range(count - 1):
            starts[j + 1] = leap @ starts[j] + ends[:, j]
        y = (local[:L] if C is None else C @ local[:L]).reshape(L, ny, count, P)
        y += (impulse_response(A, np.eye(n) if C is None else C, L).reshape(L * ny, n)
              @ starts.transpose(1, 0, 2).reshape(n, count * P)).reshape(L, ny, count, P)
    return y.transpose(2, 0, 1, 3).reshape(count * L, ny, P)[:T]
