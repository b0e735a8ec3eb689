"""Input matrix and per-channel delays given ``A`` and ``C``: structured output-error regression.

With the dynamics fixed, the outputs are linear in the input blocks, the initial states and the
feedthrough:

    y_k = C A^(k - R) x_R + sum_j sum_{t = R}^{k - 1} C A^(k - 1 - t) B^(j) u_{t - j} + D u_k

(rows from ``k = R`` on, so every input a row needs was recorded).  Unlike state data, outputs
do not determine the blocks ``B^(j)`` themselves: an input "in flight" can be counted in the
state along any direction ``E`` with ``C E = 0`` (``B^(0) + E``, ``B^(1) - A E`` give the same
outputs).  What they determine is the continuous plant: a channel with delay
``r = (w + p) T`` acts only through ``B^(w) = Gamma_0(p) b`` and ``B^(w+1) = Gamma_1(p) b``
(eq. 9.65), so for a given ``r`` the outputs are linear in ``b`` and the delay is the minimizer
of the profile residual (a separable least-squares problem, Golub & Pereyra 1973).

The unstructured second moments of all lag responses are accumulated once
(:func:`lag_moments`: FFT convolutions with the impulse response ``C A^t``); every candidate
delay then costs a congruence of that Gram matrix, never another pass over the data.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import linalg, optimize, signal

from dmdidc.discretization import checked_expm, split_delay, split_periods
from dmdidc.regression.propagation import impulse_response

__all__ = ["PROFILE_CELL", "LagMoments", "StructuredFit", "decaying_response", "delay_profile",
           "family_of_modes", "hold_family", "lag_moments", "modes", "profile_minima",
           "spectral_family", "pair_of", "structured_fit", "profile_delays"]

#: Grid points per sampling period of the first delay search.
_GRID_PER_PERIOD = 8
#: Finer grids of the search around its best point, each ``_ZOOM`` times finer (to 1/4096 of a
#: period: well within the delay's standard error at any realistic noise).
_ZOOMS, _ZOOM = 3, 8


@dataclass(frozen=True)
class LagMoments:
    """Second moments of the unstructured lag regression (one pass over the data).

    Coefficient order: ``B^(j)[:, i]`` for lag j, then channel i (``(R + 1) m n``), then the
    initial state of each experiment, then ``D`` row-major when ``feedthrough``.
    """

    normal: np.ndarray        # (P, P): Phi^T Phi
    moment: np.ndarray        # (P,)
    energy: float             # sum of squared targets
    rows: int
    n_states: int
    n_inputs: int
    max_delay: int
    n_experiments: int
    n_outputs: int
    feedthrough: bool
    offset: bool = False


@dataclass(frozen=True)
class StructuredFit:
    """The structured regression at given delays.

    Attributes
    ----------
    delays : ndarray, shape (m,)
        Seconds.
    B_c : ndarray, shape (n, m)
    D : ndarray, shape (ny, m)
    initial_states : ndarray, shape (E, n)
    offset : ndarray, shape (ny,)
        Constant output offset (zero unless estimated).
    rss : float
    dof : int
    covariance : ndarray
        Covariance (white output noise) of ``[vec(B_c) by channel, x_R's, D]``.
    """

    delays: np.ndarray
    B_c: np.ndarray
    D: np.ndarray
    initial_states: np.ndarray
    offset: np.ndarray
    rss: float
    dof: int
    covariance: np.ndarray


#: Rows of the lag regression formed at a time (its Gram is accumulated chunk by chunk, so
#: the regressors stay in cache and the memory does not grow with the data).
_CHUNK = 2048


#: Impulse-response entries below this fraction of its largest are zero (far below the
#: rounding of any product with them, ``eps`` of the largest term).
_NEGLIGIBLE = 1e-20


def decaying_response(A: np.ndarray, C: np.ndarray, length: int) -> tuple[np.ndarray, int]:
    """``C A^t`` (length, ny, n) with entries below ``_NEGLIGIBLE`` of the largest set to zero,
    and the number of leading samples that are not all zero.

    A stable plant's response decays below rounding long before the data end: it is computed
    only that far (the powers beyond are subnormal numbers, which slow every product with them
    several times), and convolutions with it need only that many samples.  Once ``n``
    consecutive samples are negligible, every later one is a combination of them (Cayley-
    Hamilton), so a negligible second half of what was computed ends the doubling.

    Examples
    --------
    >>> h, kept = decaying_response(np.array([[0.5]]), np.array([[1.0]]), 1000)
    >>> h.shape, 60 < kept < 200, float(h[kept:].max())
    ((1000, 1, 1), True, 0.0)
    """
    if np.max(np.abs(np.linalg.eigvals(A)), initial=0.0) >= 1.0:
        # a mode that does not decay may be weakly observed at first and dominate later: the
        # negligible early samples say nothing about the later ones
        return impulse_response(A, C, length), length
    take = min(length, 64)
    while True:
        h = impulse_response(A, C, take)
        size = np.abs(h).reshape(take, -1).max(axis=1)
        small = size <= _NEGLIGIBLE * size.max(initial=0.0)
        if take == length or (take >= 2 * A.shape[0] and small[take // 2:].all()):
            break
        take = min(length, 8 * take)
    h[np.abs(h) < _NEGLIGIBLE * size.max(initial=0.0)] = 0.0
    kept = int(np.flatnonzero(~small)[-1:].sum()) + 1
    out = np.zeros((length,) + h.shape[1:])
    out[:take] = h
    return out, min(kept, length)


def _responses(U: np.ndarray, A: np.ndarray, C: np.ndarray, R: int
               ) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """``h[k] = C A^k`` (K, ny, n) (zero from sample ``kept`` on: :func:`decaying_response`),
    ``kept``, the responses ``z`` (K, ny, m, n) to the whole input
    record and the corrections ``Q`` (R + 1, n, m n) of the lags (zero for lag ``R``).

    The response of lag ``j`` at row ``k`` is ``sum_{t < k} h[k - 1 - t] u[t + R - j]``: the
    response ``z[k + R - j]`` to the whole input record less that of its first ``R - j``
    samples, which is ``h[k] Q_j`` with ``Q_j = sum_{s < R - j} u[s] A^(R - j - 1 - s)``
    (n x n per channel).  So one convolution per channel serves every lag.
    """
    ny, n = C.shape
    m, K = U.shape
    h, kept = decaying_response(A, C, K)                                     # (K, ny, n)
    # z[q] = sum_{s < q} h[q - 1 - s] u[s]: convolve, then delay by one sample.
    z = np.zeros((K, ny, m, n))
    z[1:] = signal.fftconvolve(h[:kept, :, None, :], U.T[:, None, :, None], axes=0)[:K - 1]
    powers = np.stack([np.linalg.matrix_power(A, k) for k in range(R + 1)])
    Q = np.zeros((R + 1, n, m * n))
    for j in range(R):      # Q_j[i] = sum_{s < R - j} u_i[s] A^(R - j - 1 - s)   (m, n, n)
        Q[j] = np.einsum("is,src->ric", U[:, :R - j], powers[R - j - 1::-1]).reshape(n, -1)
    return h, kept, z, Q


def lag_moments(experiments: list[tuple[np.ndarray, np.ndarray]], A: np.ndarray,
                C: np.ndarray, max_delay: int, *, feedthrough: bool = False,
                offset: bool = False) -> LagMoments:
    """Accumulate :class:`LagMoments` over experiments ``(Y (ny, K), U (m, K))``."""
    ny, n = C.shape
    m, R, E = experiments[0][1].shape[0], max_delay, len(experiments)
    n_block = (R + 1) * m * n
    direct = n_block + E * n                    # feedthrough D (ny m), then the offset (ny)
    width = direct + (ny * m if feedthrough else 0) + (ny if offset else 0)
    normal = np.zeros((width, width))
    moment = np.zeros(width)
    energy, rows = 0.0, 0
    for e, (Y, U) in enumerate(experiments):
        h, kept, z, Q = _responses(U, A, C, R)
        for a in range(0, U.shape[1] - R, _CHUNK):
            b = min(a + _CHUNK, U.shape[1] - R)             # rows k in [a, b): samples R + k
            full = np.zeros((b - a, ny, width))
            lags = full[:, :, :n_block].reshape(b - a, ny, R + 1, m * n)
            # the initial-state corrections h[k] Q_j vanish once the response has decayed
            live = max(min(b, kept) - a, 0)
            initial = h[a:a + live].reshape(-1, n)    # one product, not one per row
            for j in range(R + 1):
                lags[:, :, j] = z[R - j + a:R - j + b].reshape(b - a, ny, m * n)
                lags[:live, :, j] -= (initial @ Q[j]).reshape(live, ny, m * n)
            full[:, :, n_block + e * n:n_block + (e + 1) * n] = h[a:b]
            for o in range(ny):
                if feedthrough:
                    full[:, o, direct + o * m:direct + (o + 1) * m] = U[:, R + a:R + b].T
                if offset:
                    full[:, o, width - ny + o] = 1.0
            target = Y[:, R + a:R + b].T
            flat = full.reshape(-1, width)
            normal += flat.T @ flat
            moment += flat.T @ target.ravel()
            energy += float(np.sum(target ** 2))
            rows += target.size
    return LagMoments(normal=normal, moment=moment, energy=energy, rows=rows, n_states=n,
                      n_inputs=m, max_delay=R, n_experiments=E, n_outputs=ny,
                      feedthrough=feedthrough, offset=offset)


def hold_family(A_c: np.ndarray, dt: float, delays: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whole steps ``w`` (G,) and hold blocks ``Gamma_0(p)``, ``Gamma_1(p)`` (G, n, n) of the
    delays ``r = (w + p) T`` (G,) (eq. 9.65).

    ``B^(w) = Gamma_0(p) b`` with ``Gamma_0(p) = Gamma((1 - p) T)`` and ``B^(w+1) =
    Gamma_1(p) b`` with ``Gamma_1(p) = e^{A (1 - p) T} Gamma(p T) = Gamma(T) - Gamma_0(p)``
    (the two holds make up one period), ``Gamma(s) = int_0^s e^{A t} dt``: the upper right
    block of ``e^{M s}``, ``M = [[A_c, I], [0, 0]]``, for every span in one batched ``expm``
    (a delay search evaluates whole grids of delays).

    Examples
    --------
    >>> steps, gamma_0, gamma_1 = hold_family(np.array([[-1.0]]), 0.5, np.array([0.2, 0.5]))
    >>> steps.tolist(), bool(np.allclose(gamma_0[:, 0, 0] + gamma_1[:, 0, 0], 1 - np.exp(-0.5)))
    ([0, 1], True)
    """
    n = A_c.shape[0]
    steps, fractions = split_delay(np.asarray(delays, dtype=float), dt)
    # A grid over several periods repeats its fractions: each distinct span once.
    fractions, inverse = np.unique(fractions, return_inverse=True)
    spans = np.concatenate([[1.0], 1.0 - fractions]) * dt
    block = np.zeros((2 * n, 2 * n))
    block[:n, :n], block[:n, n:] = A_c, np.eye(n)
    with np.errstate(all="ignore"):
        exps = linalg.expm(block * spans[:, None, None]) if np.all(np.isfinite(block)) else None
    if exps is None or not np.all(np.isfinite(exps)):      # the error names the failing span
        exps = np.stack([checked_expm(block, f"[[A_c, I], [0, 0]] * s with s = {s!r}", s)
                         for s in spans])
    gamma = exps[:, :n, n:]
    gamma_0 = gamma[1:][inverse.ravel()]
    return steps, gamma_0, gamma[0] - gamma_0


#: Largest eigenvector condition number for which :func:`spectral_family` uses the
#: eigendecomposition (its hold blocks are then accurate to about ``1e6 eps``, ample for a
#: delay search that the output-error refinement completes).
_SPECTRAL_COND = 1e6


def spectral_family(A_c: np.ndarray, dt: float, *, cond: float = _SPECTRAL_COND
                    ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`hold_family` of one plant as a function of the delays, for searches over grids.

    With ``A_c = V diag(lambda) V^-1`` well conditioned, ``Gamma(s) = V diag((e^{lambda s} -
    1) / lambda) V^-1``: a grid of delays costs elementwise exponentials and one batched
    product instead of a matrix exponential per delay.  A defective ``A_c``, or one whose
    eigenvectors' condition number exceeds ``cond``, falls back to :func:`hold_family`.

    Examples
    --------
    >>> A = np.array([[-1.0, 2.0], [0.0, -3.0]])
    >>> delays = np.array([0.1, 0.7, 1.3])
    >>> fast, exact = spectral_family(A, 0.5)(delays), hold_family(A, 0.5, delays)
    >>> all(np.allclose(a, b, rtol=1e-10, atol=1e-14) for a, b in zip(fast, exact))
    True
    """
    return family_of_modes(A_c, dt, modes(A_c, cond))


#: The eigendecompositions of the latest ``A_c`` matrices :func:`modes` was asked about (keyed
#: by their bytes): within a fit the same ``A_c`` is decomposed by the residual evaluation, the
#: Jacobian at the same point and the delay searches at the refined dynamics.
_DECOMPOSED: dict = {}
_DECOMPOSED_KEPT = 8
_DECOMPOSED_LOCK = threading.Lock()


def modes(A_c: np.ndarray, cond: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(lambda, V, V^-1)`` of ``A_c = V diag(lambda) V^-1``, or ``None`` when an eigenvalue
    is not finite or the eigenvectors' condition number exceeds ``cond``.

    Examples
    --------
    >>> values, vectors, inverse = modes(np.array([[-1.0, 2.0], [0.0, -3.0]]), 1e6)
    >>> sorted(values.real.tolist()), modes(np.array([[0.0, 1.0], [0.0, 0.0]]), 1e6)
    ([-3.0, -1.0], None)
    """
    key = (A_c.shape, A_c.dtype.str, A_c.tobytes())
    with _DECOMPOSED_LOCK:
        found = _DECOMPOSED.pop(key, None)
    if found is None:
        values, vectors = np.linalg.eig(A_c)
        condition = np.linalg.cond(vectors) if np.all(np.isfinite(values)) else np.inf
        inverse = np.linalg.inv(vectors) if condition <= cond else None
        for array in (values, vectors, inverse):    # shared by every caller: read only
            if array is not None:
                array.flags.writeable = False
        found = (values, vectors, condition, inverse)
    values, vectors, condition, inverse = found
    if condition <= cond and inverse is None:       # decomposed before for a smaller cond
        inverse = np.linalg.inv(vectors)
        inverse.flags.writeable = False
        found = (values, vectors, condition, inverse)
    with _DECOMPOSED_LOCK:
        _DECOMPOSED[key] = found                    # the most recently used last
        while len(_DECOMPOSED) > _DECOMPOSED_KEPT:
            del _DECOMPOSED[next(iter(_DECOMPOSED))]
    return (values, vectors, inverse) if condition <= cond else None


def family_of_modes(A_c: np.ndarray, dt: float,
                    found: tuple[np.ndarray, np.ndarray, np.ndarray] | None
                    ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`spectral_family` from the :func:`modes` ``found`` of ``A_c`` (``None``: the
    matrix exponentials of :func:`hold_family`), for callers that use the modes themselves."""
    if found is None:
        return lambda delays: hold_family(A_c, dt, delays)
    values, vectors, inverse = found

    def gamma(spans: np.ndarray) -> np.ndarray:
        z = values * spans[:, None]                                       # (G, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            phi = np.where(values == 0, spans[:, None], np.expm1(z) / values)
        return ((vectors * phi[:, None, :]) @ inverse).real        # A_c is real

    period = gamma(np.array([dt]))[0]

    def family(delays: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        delays = np.asarray(delays, dtype=float)
        if not (np.isfinite(delays).all() and (delays >= 0).all()):
            split_delay(delays, dt)              # raises, naming what is wrong
        # finite, >= 0, and a searched delay is at most max_delay periods
        steps, fractions = split_periods(delays / dt)
        gamma_0 = gamma((1.0 - fractions) * dt)
        return steps, gamma_0, period - gamma_0
    return family


#: ``pair(delay) -> (w, Gamma_0(p), Gamma_1(p))`` for one plant (:func:`pair_of`).
Pair = Callable[[float], tuple[int, np.ndarray, np.ndarray]]


def pair_of(A_c: np.ndarray, dt: float) -> Pair:
    """``delay -> (w, Gamma_0(p), Gamma_1(p))`` of one plant (:func:`hold_family`), remembered
    (the structured fits revisit the delays of the search)."""
    @lru_cache(maxsize=4096)
    def pair(delay: float) -> tuple[int, np.ndarray, np.ndarray]:
        steps, gamma_0, gamma_1 = hold_family(A_c, dt, np.array([delay]))
        return int(steps[0]), gamma_0[0], gamma_1[0]
    return pair


def _structure(moments: LagMoments, pair: Pair, delays: np.ndarray,
               free: np.ndarray, drop: int | None = None) -> np.ndarray:
    """Map (P, Q) from structured parameters to the unstructured lag coefficients.

    Channels in ``free`` keep every lag block unstructured (used while another channel's delay
    is searched); the others act through ``Gamma_0(p)``, ``Gamma_1(p)`` at their delay; channel
    ``drop`` has no columns (the one being searched, :func:`_channel_profile`).
    """
    n, m, R = moments.n_states, moments.n_inputs, moments.max_delay
    P = moments.moment.size
    n_block = (R + 1) * m * n
    widths = [0 if i == drop else (R + 1) * n if free[i] else n for i in range(m)]
    Q = sum(widths) + P - n_block
    S = np.zeros((P, Q))
    col = 0
    for i in range(m):
        if i == drop:
            continue
        if free[i]:
            for j in range(R + 1):
                rows = slice((j * m + i) * n, (j * m + i + 1) * n)
                S[rows, col + j * n:col + (j + 1) * n] = np.eye(n)
        else:
            w, gamma_0, gamma_1 = pair(float(delays[i]))
            for j, gamma in ((w, gamma_0), (w + 1, gamma_1)):
                if j <= R:
                    S[(j * m + i) * n:(j * m + i + 1) * n, col:col + n] = gamma
        col += widths[i]
    S[n_block:, col:] = np.eye(P - n_block)
    return S


def _solve(moments: LagMoments, S: np.ndarray) -> tuple[np.ndarray, float]:
    normal = S.T @ moments.normal @ S
    rhs = S.T @ moments.moment
    theta = np.linalg.lstsq(normal, rhs, rcond=None)[0]
    return theta, max(moments.energy - float(rhs @ theta), 0.0)


#: Relative eigenvalue cutoff of the pseudo-inverses of :mod:`dmdidc.output` (``lstsq``'s
#: default scale): the profile residual's normal matrices and the refinement's quadratic model.
RCOND = 10 * np.finfo(float).eps


def _channel_profile(moments: LagMoments, family: Callable, pair: Pair,
                     delays: np.ndarray, channel: int, free: np.ndarray
                     ) -> Callable[[np.ndarray], np.ndarray]:
    """The profile residual of one channel's delay, ``r (G,) -> RSS (G,)``, others fixed.

    The other columns ``S_o`` do not depend on ``r``: they are projected out once (normal
    matrix ``N~ = N - N S_o (S_o^T N S_o)^+ S_o^T N``, moment ``m~`` likewise), so each trial
    delay costs the ``n x n`` normal equations of its two blocks, ``Gamma_0`` at lag ``w`` and
    ``Gamma_1`` at ``w + 1`` (the same RSS as the joint least squares, by the Schur
    complement), for a whole grid of trial delays at once.
    """
    n, m, R = moments.n_states, moments.n_inputs, moments.max_delay
    S = _structure(moments, pair, delays, free, drop=channel)
    NS = moments.normal @ S
    inverse = np.linalg.pinv(S.T @ NS, hermitian=True)
    other_moment = S.T @ moments.moment
    # The channel's lag blocks of N~ and m~, with a zero block for lag R + 1 (not modelled).
    rows = ((np.arange(R + 1)[:, None] * m + channel) * n + np.arange(n)).ravel()
    normal = np.zeros((R + 2, n, R + 2, n))
    normal[:R + 1, :, :R + 1] = (moments.normal[np.ix_(rows, rows)]
                                 - NS[rows] @ inverse @ NS[rows].T).reshape(R + 1, n, R + 1, n)
    moment = np.zeros((R + 2, n))
    moment[:R + 1] = (moments.moment[rows] - NS[rows] @ (inverse @ other_moment)).reshape(R + 1, n)
    base = moments.energy - float(other_moment @ inverse @ other_moment)
    # per whole step w, the (2n, 2n) block of lags w and w + 1 and their moments
    lags = np.stack([np.arange(R + 1), np.arange(1, R + 2)], axis=1)
    pair_normal = normal[lags[:, :, None], :, lags[:, None, :]].transpose(
        0, 1, 3, 2, 4).reshape(R + 1, 2 * n, 2 * n)
    pair_moment = moment[lags].reshape(R + 1, 2 * n)

    def rss(r: np.ndarray) -> np.ndarray:
        w, gamma_0, gamma_1 = family(np.atleast_1d(r))
        G = np.concatenate([gamma_0, gamma_1], axis=1)                      # (G, 2n, n)
        M = G.transpose(0, 2, 1) @ pair_normal[w] @ G
        v = np.einsum("gkc,gk->gc", G, pair_moment[w])
        values, vectors = np.linalg.eigh(0.5 * (M + M.transpose(0, 2, 1)))
        keep = values > RCOND * np.max(np.abs(values), axis=1, keepdims=True)
        along = np.einsum("gkc,gk->gc", vectors, v)
        explained = np.sum(np.where(keep, along ** 2 / np.where(keep, values, 1.0), 0.0), axis=1)
        return np.maximum(base - explained, 0.0)
    return rss


def _search(moments: LagMoments, family: Callable, pair: Pair, dt: float,
            delays: np.ndarray, channel: int, free: np.ndarray) -> float:
    """The delay of one channel minimizing the profile residual: a grid, ``_ZOOMS`` finer grids
    around the best point (each a batch of hold blocks), then the vertex of the parabola
    through the last three points if it is lower (a start for the output-error refinement,
    which settles the last digits)."""
    top = moments.max_delay * dt
    if top == 0.0:                                  # max_delay = 0: nothing to search
        return 0.0
    grid = np.linspace(0.0, top, moments.max_delay * _GRID_PER_PERIOD + 1)
    rss = _channel_profile(moments, family, pair, delays, channel, free)
    values = rss(grid)
    best, step = int(np.argmin(values)), grid[1] - grid[0]
    for _ in range(_ZOOMS):
        grid = np.clip(grid[best] + step * np.linspace(-1.0, 1.0, 2 * _ZOOM + 1), 0.0, top)
        values = rss(grid)
        best, step = int(np.argmin(values)), step / _ZOOM
    if 0 < best < grid.size - 1:
        left, middle, right = values[best - 1:best + 2]
        curvature = left - 2.0 * middle + right
        if curvature > 0:
            vertex = grid[best] + 0.5 * step * (left - right) / curvature
            if rss(vertex)[0] < middle:
                return float(vertex)
    return float(grid[best])


def profile_delays(moments: LagMoments, A_c: np.ndarray, dt: float, *,
                   sweeps: int = 1) -> np.ndarray:
    """Per-channel delays (seconds) minimizing the profile residual.

    Each channel is first searched with the others unstructured (so the search does not depend
    on their unknown delays), then all channels are refined in turn with the others structured.
    """
    m = moments.n_inputs
    pair, family = pair_of(A_c, dt), spectral_family(A_c, dt)
    delays = np.zeros(m)
    for i in range(m):
        free = np.ones(m, dtype=bool)
        free[i] = False
        delays[i] = _search(moments, family, pair, dt, delays, i, free)
    if m > 1:
        structured = np.zeros(m, dtype=bool)
        for _ in range(sweeps):
            previous = delays.copy()
            for i in range(m):
                delays[i] = _search(moments, family, pair, dt, delays, i, structured)
            if np.max(np.abs(delays - previous)) < 1e-6 * dt:
                break
    return delays


def structured_fit(moments: LagMoments, A_c: np.ndarray, dt: float, delays: np.ndarray
                   ) -> StructuredFit:
    """``B_c``, initial states and ``D`` at the given delays, with their covariance."""
    n, m, E = moments.n_states, moments.n_inputs, moments.n_experiments
    ny = moments.n_outputs
    S = _structure(moments, pair_of(A_c, dt), delays, np.zeros(m, dtype=bool))
    theta, rss = _solve(moments, S)
    Q = S.shape[1]
    dof = max(moments.rows - Q, 1)
    # White noise of equal variance in every (scaled) output: sigma^2 (S^T Phi^T Phi S)^-1.
    covariance = rss / dof * np.linalg.pinv(S.T @ moments.normal @ S)
    return StructuredFit(delays=delays.copy(), B_c=theta[:m * n].reshape(m, n).T,
                         D=theta[m * n + E * n:m * n + E * n + ny * m].reshape(ny, m)
                         if moments.feedthrough else np.zeros((ny, m)),
                         offset=theta[theta.size - ny:] if moments.offset else np.zeros(ny),
                         initial_states=theta[m * n:m * n + E * n].reshape(E, n), rss=rss,
                         dof=dof, covariance=covariance)


#: Grid step of :func:`delay_profile`, in sampling periods.
PROFILE_CELL = 1.0 / (2 * _GRID_PER_PERIOD)
#: Step of the finite differences that bracket the minima between the profile's grid points,
#: in sampling periods: small against the narrowest wells seen (trial plant 900 at 60 dB: the
#: residual doubles within 0.002 period of its bottom), and the differences stay far above the
#: residual's rounding (a few ``eps`` of the outputs' energy) wherever the slope matters.
_SLOPE_STEP = 1e-5
#: Tolerance of the bounded Brent search of each bracketed well, in sampling periods; Brent
#: adds ``sqrt(eps) |r|`` (the residual is flat to rounding closer to the minimum).
_MINIMUM_TOLERANCE = 1e-9


def _structured_profile(moments: LagMoments, A_c: np.ndarray, dt: float, delays: np.ndarray,
                        channel: int) -> Callable[[np.ndarray], np.ndarray]:
    """One channel's profile residual ``r (G,) -> RSS (G,)``, the others structured at
    ``delays``."""
    return _channel_profile(moments, spectral_family(A_c, dt), pair_of(A_c, dt), delays, channel,
                            np.zeros(moments.n_inputs, dtype=bool))


def _profile_grid(moments: LagMoments, dt: float) -> np.ndarray:
    return np.linspace(0.0, moments.max_delay * dt,
                       round(moments.max_delay / PROFILE_CELL) + 1)


def delay_profile(moments: LagMoments, A_c: np.ndarray, dt: float, delays: np.ndarray,
                  channel: int) -> tuple[np.ndarray, np.ndarray]:
    """The profile residual of one channel's delay on a grid (steps of ``PROFILE_CELL`` periods
    over ``[0, max_delay dt]``), the other channels structured at ``delays``: ``(grid, rss)``."""
    grid = _profile_grid(moments, dt)
    return grid, _structured_profile(moments, A_c, dt, delays, channel)(grid)


def profile_minima(moments: LagMoments, A_c: np.ndarray, dt: float, delays: np.ndarray,
                   channel: int, *, skip: tuple[float, float] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, Callable]:
    """The local minima of one channel's profile residual over ``[0, max_delay dt]`` (the other
    channels structured at ``delays``), however narrow their wells.

    A well can be narrower than the grid of :func:`delay_profile` (with one sensor, a second
    delay that fits as well as the chosen one can sit in a well whose residual doubles within
    0.002 period: its grid points lie several times higher).  So the grid is not read for
    values but for brackets: a cell whose ends slope down into it (one-sided finite
    differences, so a corner at a whole period counts on each side) holds a minimum, which a
    bounded Brent search finds in about 11 evaluations (each the small congruence of
    :func:`_channel_profile`).  A grid point that both sides slope up from (the ends of the
    range, corners) is a minimum as it stands.
    Cells within ``skip = (low, high)`` (s) are not searched (a known minimum's own well).

    Returns
    -------
    minima : ndarray, shape (M,)
        Delays (s) of the local minima, increasing.
    values : ndarray, shape (M,)
        The profile residual there.
    rss : callable
        The profile residual, ``r (G,) -> RSS (G,)``.
    """
    rss = _structured_profile(moments, A_c, dt, delays, channel)
    grid = _profile_grid(moments, dt)
    if grid.size == 1:                                  # max_delay = 0
        return grid, rss(grid), rss
    h = _SLOPE_STEP * dt
    values, right, left = np.split(rss(np.r_[grid, grid[:-1] + h, grid[1:] - h]),
                                   [grid.size, 2 * grid.size - 1])
    leaving = right - values[:-1]                       # the slope leaving each point rightwards
    arriving = values[1:] - left                        # the slope arriving at the next point
    at_points = np.flatnonzero(np.r_[True, arriving <= 0] & np.r_[leaving >= 0, True])
    cells = (leaving < 0) & (arriving > 0)
    if skip is not None:
        cells &= (grid[:-1] < skip[0]) | (grid[1:] > skip[1])
    cells = np.flatnonzero(cells)

    def scalar(r: float) -> float:
        return float(rss(np.array([r]))[0])

    inside = [optimize.fminbound(scalar, grid[k], grid[k + 1], xtol=_MINIMUM_TOLERANCE * dt,
                                 full_output=True)[:2] for k in cells]
    minima = np.r_[grid[at_points], [x for x, _ in inside]]
    found = np.r_[values[at_points], [f for _, f in inside]]
    order = np.argsort(minima, kind="stable")
    return minima[order], found[order], rss
