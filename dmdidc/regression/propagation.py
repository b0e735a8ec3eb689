"""Linear recursions ``x_{k+1} = A x_k + s_k`` as matrix products (no loop over samples).

The samples are cut into ``count`` blocks of ``L ~ sqrt(T)``.  Every block is first run from a
zero state, all blocks at once: ``L`` steps, each one ``(n, n) @ (n, count P)`` product.  The
block starts then follow from ``x_{(j+1)L} = A^L x_{jL} + (block j's end)`` (``count`` small
steps), and each sample adds ``A^i x_{jL}`` (one product).  That is ``2 n^2 T P`` flops in
matrix products (``ny n T P`` more for outputs ``C x``) and ``2 sqrt(T)`` Python steps: twice
the plain recursion, in BLAS, with no eigenbasis (defective or ill-conditioned ``A`` alike) and
no FFT round-off.

With delayed inputs, ``s_k = sum_j B^(j) u_{k-j}`` (:func:`delayed_response`), the inputs of a
step are one product of the stacked ``[B^(R) .. B^(0)]`` with overlapping windows of the
time-major inputs (a strided view, nothing copied): the forcing is never stored.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["delayed_response", "impulse_response", "propagate"]


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
            # one product of the stacked rows (not ``take`` batched small ones: several x
            # cheaper for the long responses of slow modes)
            h[filled:filled + take] = (h[:take].reshape(-1, n) @ power).reshape(take, ny, n)
            filled += take
            power = power @ power
    return h


def _blocks(T: int, shortest: int = 1) -> tuple[int, int]:
    """Block length ``L ~ sqrt(T)`` (at least ``shortest``) and the number of blocks."""
    L = max(1, shortest, int(np.sqrt(T)))
    return L, -(-T // L)


def _local_runs(A: np.ndarray, L: int, width: int, drive: Callable[[int], np.ndarray],
                seen: Callable[[int, np.ndarray], None] | None = None) -> np.ndarray:
    """Every block from a zero state, ``(L + 1, n, width)``: ``L`` steps, one product each.

    ``drive(i)`` gives the inputs of in-block step ``i`` of every block, shape (r, width)
    (column ``c P + p``: block ``c``, system ``p``); they enter the first ``r`` states.
    ``seen(i, x)`` is shown each step's states ``x`` (i = 1 .. L - 1) while they are in cache.
    """
    local = np.empty((L + 1, A.shape[0], width))
    local[0] = 0.0
    for i in range(L):
        np.matmul(A, local[i], out=local[i + 1])
        step = drive(i)
        local[i + 1, :step.shape[0]] += step
        if seen is not None and i + 1 < L:
            seen(i + 1, local[i + 1])
    return local


def _block_starts(A: np.ndarray, L: int, count: int, P: int, local: np.ndarray,
                  initial: np.ndarray | None) -> np.ndarray:
    """The block starts ``x_{cL}`` (count, n, P): ``x_{(c+1)L} = A^L x_{cL} + (block c's
    end from a zero state)``, ``count`` small steps."""
    n = A.shape[0]
    starts = np.zeros((count, n, P))
    if initial is not None:
        starts[0] = initial
    ends = local[L].reshape(n, count, P)
    leap = np.linalg.matrix_power(A, L)
    for j in range(count - 1):
        starts[j + 1] = leap @ starts[j] + ends[:, j]
    return starts


def _blocked(A: np.ndarray, L: int, count: int, P: int,
             drive: Callable[[int], np.ndarray], initial: np.ndarray | None,
             C: np.ndarray | None) -> np.ndarray:
    """Outputs ``C x_{cL+i}`` (count, L, ny, P) of the recursion (module notes); without
    ``C``, the states.  ``drive``: as in :func:`_local_runs`."""
    n = A.shape[0]
    ny = n if C is None else C.shape[0]
    local = _local_runs(A, L, count * P, drive)
    starts = _block_starts(A, L, count, P, local, initial)
    response = impulse_response(A, np.eye(n) if C is None else C, L)      # (L, ny, n)
    y = (local[:L] if C is None else C @ local[:L]).reshape(L, ny, count, P)
    y += (response.reshape(L * ny, n)
          @ starts.transpose(1, 0, 2).reshape(n, count * P)).reshape(L, ny, count, P)
    return y.transpose(2, 0, 1, 3)


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
    L, count = _blocks(T)
    padded = np.zeros((count * L, n, P))
    padded[:T] = inputs
    drive = padded.reshape(count, L, n, P).transpose(1, 2, 0, 3).reshape(L, n, count * P)
    with np.errstate(over="ignore", invalid="ignore"):
        y = _blocked(A, L, count, P, drive.__getitem__, initial, C)
    return y.reshape(count * L, ny, P)[:T]


def delayed_response(A: np.ndarray, B_blocks: np.ndarray, inputs: np.ndarray, *,
                     leading: int | None = None, input_moments: int | None = None
                     ) -> np.ndarray | tuple[np.ndarray, tuple]:
    """States ``x_0 .. x_{K-1}`` of ``x_{k+1} = A x_k + sum_j B^(j) u_{k-j}`` from ``x_0 = 0``
    (``u`` zero before the start; module notes).

    Parameters
    ----------
    A : ndarray, shape (n, n)
    B_blocks : ndarray, shape (R + 1, r, m)
        ``r <= n``: the inputs enter the first ``r`` states (the others are driven through
        ``A`` only).
    inputs : ndarray, shape (m, K)
    leading : int, optional
        Return only the first ``leading`` states (the others are still simulated).
    input_moments : int, optional
        ``a < K``: also return, for every state, ``(sum_{k=a}^{K-1} x_k u_k^T (n, m), x_a,
        x_{K-1})``, read from the blocks (a product of ``n m`` per sample): what the lagged
        products ``sum_k x_k u_{k-j}^T`` follow from by the recursion, even for the states
        not returned.

    Returns
    -------
    ndarray, shape (n, K) or (leading, K)
        Column ``k`` is ``x_k``; with ``input_moments``, the pair of it and the moments.

    Examples
    --------
    >>> B = np.array([[[0.0]], [[1.0]]])                  # u reaches x one period late
    >>> delayed_response(np.array([[0.5]]), B, np.ones((1, 4)))[0]
    array([0. , 0. , 1. , 1.5])
    """
    R1, r, m = B_blocks.shape
    K, n = inputs.shape[1], A.shape[0]
    ny = n if leading is None else leading
    L, count = _blocks(K, shortest=R1)      # windows L m apart do not overlap: BLAS reads them
    padded = np.zeros((count * L + R1 - 1, m))              # time-major, R zeros first
    padded[R1 - 1:R1 - 1 + K] = inputs.T
    # window t covers padded rows t .. t + R, i.e. u_{t-R} .. u_t: B^(R) first
    windows = np.lib.stride_tricks.sliding_window_view(padded.ravel(), R1 * m)[::m]
    stacked = B_blocks[::-1].transpose(0, 2, 1).reshape(R1 * m, r).T      # (r, R1 m)
    blocks = padded[R1 - 1:].reshape(count, L, m)           # blocks[c, i] = u_{cL+i}
    local_moments = np.zeros((n, m))

    def seen(i: int, x: np.ndarray) -> None:                # sum_c local_i[:, c] u_{cL+i}^T
        local_moments[...] += x @ blocks[:, i]

    with np.errstate(over="ignore", invalid="ignore"):
        local = _local_runs(A, L, count, lambda i: stacked @ windows[i::L][:count].T,
                            None if input_moments is None else seen)
        starts = _block_starts(A, L, count, 1, local, None)[:, :, 0]       # (count, n)
        powers = impulse_response(A, np.eye(n), L)                          # A^i, (L, n, n)
        # x_{cL+i} = local_i[:, c] + A^i start_c, state by state: one product of its rows of
        # A^i with the starts into a reused (L, count) buffer, the blocks' own part added, one
        # 2-D transposing copy into time order (26 against 35 ms for 20 states of 2e5
        # samples as one product, a 3-D add and a 3-D transposing copy)
        x, buffer = np.empty((ny, count, L)), np.empty((L, count))
        for s in range(ny):
            np.matmul(powers[:, s], starts.T, out=buffer)
            buffer += local[:L, s]
            x[s] = buffer.T
    rows = x.reshape(ny, count * L)[:, :K]
    if input_moments is None:
        return rows
    return rows, _input_moments(local, starts, powers, blocks, inputs, input_moments,
                                local_moments)


def _input_moments(local: np.ndarray, starts: np.ndarray, powers: np.ndarray,
                   blocks: np.ndarray, inputs: np.ndarray, first: int,
                   local_moments: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sum_{k=first}^{K-1} x_k u_k^T, x_first, x_{K-1})`` of every state from the blocks
    (``x_{cL+i} = local_i[:, c] + A^i start_c``, ``powers`` the ``A^i``, ``starts`` (count,
    n)); ``blocks[c, i]`` is ``u_{cL+i}`` (zero from ``K`` on) and ``local_moments`` the
    blocks' own part ``sum_c,i local_i[:, c] u_{cL+i}^T``, summed during the recursion."""
    L, K = local.shape[0] - 1, inputs.shape[1]
    n, m = starts.shape[1], blocks.shape[2]
    # the starts' part as sum_i A^i S_i with S_i = sum_c start_c u_{cL+i}^T, every S_i in one
    # product
    S = (starts.T @ blocks.reshape(blocks.shape[0], L * m)).reshape(n, L, m)
    total = local_moments + (powers.transpose(1, 0, 2).reshape(n, -1)
                             @ S.transpose(1, 0, 2).reshape(-1, m))

    def states(k: np.ndarray) -> np.ndarray:                                # (len(k), n)
        c, i = np.divmod(k, L)
        return local[i, :, c] + np.einsum("kab,kb->ka", powers[i], starts[c])

    head = states(np.arange(first))
    return (total - head.T @ inputs[:, :first].T, states(np.array([first]))[0],
            states(np.array([K - 1]))[0])
