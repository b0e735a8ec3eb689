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
time-major inputs (a strided view, nothing copied): the forcing is never stored.  There the
block ends from a zero state are a linear map of each block's ``(L + R) m`` inputs, read in
one product (:func:`_block_ends`), so the recursion runs once, from the true block starts:
no blocks' own states to store and correct (``n^2 T`` flops fewer, and two passes over the
states' memory).
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


def _local_runs(A: np.ndarray, L: int, width: int, drive: Callable[[int], np.ndarray]
                ) -> np.ndarray:
    """Every block from a zero state, ``(L + 1, n, width)``: ``L`` steps, one product each.

    ``drive(i)`` gives the inputs of in-block step ``i`` of every block, shape (r, width)
    (column ``c P + p``: block ``c``, system ``p``); they enter the first ``r`` states.
    """
    local = np.empty((L + 1, A.shape[0], width))
    local[0] = 0.0
    for i in range(L):
        np.matmul(A, local[i], out=local[i + 1])
        step = drive(i)
        local[i + 1, :step.shape[0]] += step
    return local


def _block_starts(A: np.ndarray, L: int, count: int, P: int, ends: np.ndarray,
                  initial: np.ndarray | None) -> np.ndarray:
    """The block starts ``x_{cL}`` (count, n, P): ``x_{(c+1)L} = A^L x_{cL} + (block c's
    end from a zero state)`` (``ends``, (n, count P)), ``count`` small steps."""
    n = A.shape[0]
    starts = np.zeros((count, n, P))
    if initial is not None:
        starts[0] = initial
    ends = ends.reshape(n, count, P)
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
    starts = _block_starts(A, L, count, P, local[L], initial)
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
                     leading: int | None = None, input_moments: int | None = None,
                     state_sums: bool = False) -> np.ndarray | tuple[np.ndarray, tuple]:
    """States ``x_0 .. x_{K-1}`` of ``x_{k+1} = A x_k + sum_j B^(j) u_{k-j}`` from ``x_0 = 0``
    (``u`` zero before the start; module notes).

    The block ends from a zero state are first read from the inputs alone (one product with
    the map from a block's inputs to its end, built from the powers of ``A``), so the
    recursion then runs once from the true block starts, its states written into time order
    as they come: no blocks' own states to store and correct afterwards.

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
        x_{K-1})`` (a product of ``n m`` per sample): what the lagged products ``sum_k x_k
        u_{k-j}^T`` follow from by the recursion, even for the states not returned.
    state_sums : bool, default False
        With ``input_moments``, also the sums ``sum_{k=a}^{K-1} x_k`` as a last column of
        the products (those with a constant input that drives nothing: no forcing).

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
    stacked = np.ascontiguousarray(B_blocks[::-1].transpose(0, 2, 1).reshape(R1 * m, r))
    if input_moments is not None:
        # step-major, [i, c] = [u_{cL+i}; 1] (zero from K on): each step's operand contiguous
        steps = np.empty((L, count, m + state_sums))
        steps[:, :, :m] = padded[R1 - 1:R1 - 1 + count * L].reshape(count, L, m).transpose(1, 0, 2)
        if state_sums:
            steps[:, :, m] = 1.0
            steps[K - (count - 1) * L:, count - 1, m] = 0.0
        moments = np.zeros((n, steps.shape[2]))
        # every state of the blocks holding x_0 .. x_a and x_{K-1}: the moments' head and ends
        kept = np.unique(np.r_[np.arange(input_moments // L + 1), (K - 1) // L])
        kept_states = np.empty((L, kept.size, n))
    # The blocks run side by side as the rows of ``state`` (count, n), so each step's states
    # are rows of the time-major x[c, i] = x_{cL+i}, turned into rows of samples block by
    # block (in cache: numpy's transposing copy of the whole took three times as long)
    x = np.empty((count, L, ny))
    transposed = np.ascontiguousarray(A.T)
    with np.errstate(over="ignore", invalid="ignore"):
        ends = _block_ends(A, B_blocks, padded, L, count)
        state = _block_starts(A, L, count, 1, ends, None)[:, :, 0].copy()       # (count, n)
        following = np.empty_like(state)
        for i in range(L):
            x[:, i] = state[:, :ny]
            if input_moments is not None:
                moments += state.T @ steps[i]
                kept_states[i] = state[kept]
            if i + 1 < L:
                np.matmul(state, transposed, out=following)
                following[:, :r] += windows[i::L][:count] @ stacked
                state, following = following, state
    rows = np.empty((ny, K))
    for c in range(count):
        rows[:, c * L:(c + 1) * L] = x[c, :min(L, K - c * L)].T
    if input_moments is None:
        return rows

    def states(k: np.ndarray) -> np.ndarray:                                # (len(k), n)
        c, i = np.divmod(k, L)
        return kept_states[i, np.searchsorted(kept, c)]

    first = input_moments
    head = states(np.arange(first))
    early = np.arange(first)
    return rows, (moments - head.T @ steps[early % L, early // L],
                  states(np.array([first]))[0], states(np.array([K - 1]))[0])


def _block_ends(A: np.ndarray, B_blocks: np.ndarray, padded: np.ndarray, L: int,
                count: int) -> np.ndarray:
    """Every block's end from a zero state, (n, count), from its inputs alone.

    Block ``c`` ends at ``sum_t g_t u_{cL+t}`` over ``t = -R .. L - 1``, with ``g_t = sum_j
    A^(L-1-t-j)[:, :r] B^(j)`` over the ``j`` whose forcing step ``t + j`` lies in the
    block.  With ``c_d = sum_j Q_(d-j) B^(j)``, ``Q_q = A^q[:, :r]`` for ``q <= R`` (zero
    otherwise): ``g_t = c_(L-1-t)`` near the block's end (``t > L - 1 - R``), ``A^(L-1-R-t)
    c_R`` inside it and ``A^(L-1-R) c_(R-t)`` before it (``t < 0``), so only ``R + 1``
    powers of ``A`` and those of ``c_R`` (``m`` columns) are needed; then one product with
    the block's ``(L + R) m`` inputs (its own rows of ``padded``, which starts with ``R``
    zeros, and the next block's first ``R``): ``n (L + R) m`` per block, a few per cent of
    the recursion.
    """
    R1, r, m = B_blocks.shape
    n, R = A.shape[0], R1 - 1
    Q = impulse_response(A.T, np.eye(n)[:r], R1).transpose(0, 2, 1)            # (R1, n, r)
    products = (Q.reshape(R1 * n, r) @ B_blocks.transpose(1, 0, 2).reshape(r, R1 * m)
                ).reshape(R1, n, R1, m)                                       # Q_q B^(j)
    c = np.zeros((2 * R + 1, n, m))
    for j in range(R1):
        c[j:j + R1] += products[:, :, j]
    g = np.empty((L + R, n, m))                                   # g_t at row t + R
    g[:R] = np.linalg.matrix_power(A, L - 1 - R) @ c[2 * R:R:-1]
    g[R:L] = impulse_response(A.T, c[R].T, L - R)[::-1].transpose(0, 2, 1)
    g[L:] = c[R - 1::-1] if R else c[:0]
    g = g.transpose(1, 0, 2).reshape(n, (L + R) * m)
    own = padded[:count * L].reshape(count, L * m)                 # u_{cL-R} .. u_{cL+L-R-1}
    ends = g[:, :L * m] @ own.T
    if R:                                                          # u_{cL+L-R} .. u_{cL+L-1}
        tail = np.lib.stride_tricks.sliding_window_view(padded[L:].ravel(), R * m)[::L * m]
        ends += g[:, L * m:] @ tail[:count].T
    return ends
