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

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize, signal

from dmdidc.discretization import checked_expm, split_delay
from dmdidc.regression.propagation import impulse_response

__all__ = ["LagMoments", "StructuredFit", "delay_profile", "hold_blocks", "lag_moments",
           "pair_of", "structured_fit", "profile_delays"]

#: Grid points per sampling period of the first delay search.
_GRID_PER_PERIOD = 8


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


def _regressors(Y: np.ndarray, U: np.ndarray, A: np.ndarray, C: np.ndarray, R: int,
                feedthrough: bool, offset: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lag responses (T, ny, (R+1) m n), initial-state responses (T, ny, n), and the direct
    rows: feedthrough ``D`` (ny m), then a constant output offset (ny)."""
    ny, n = C.shape
    m, K = U.shape
    T = K - R
    h = impulse_response(A, C, T)                                            # (T, ny, n)
    lagged = np.stack([U[:, R - j:K - j] for j in range(R + 1)])             # (R+1, m, T)
    # response[k] = sum_{t < k} h[k - 1 - t] v_t: convolve, then delay by one sample.
    conv = signal.fftconvolve(h[None, None], lagged[:, :, :, None, None], axes=2)[:, :, :T - 1]
    blocks = np.zeros((T, ny, R + 1, m, n))
    blocks[1:] = conv.transpose(2, 3, 0, 1, 4)
    direct = (np.einsum("ab,tk->tabk", np.eye(ny), U[:, R:].T).reshape(T, ny, ny * m)
              if feedthrough else np.zeros((T, ny, 0)))
    if offset:
        direct = np.concatenate([direct, np.broadcast_to(np.eye(ny), (T, ny, ny))], axis=2)
    return blocks.reshape(T, ny, -1), h, direct


def lag_moments(experiments: list[tuple[np.ndarray, np.ndarray]], A: np.ndarray,
                C: np.ndarray, max_delay: int, *, feedthrough: bool = False,
                offset: bool = False) -> LagMoments:
    """Accumulate :class:`LagMoments` over experiments ``(Y (ny, K), U (m, K))``."""
    ny, n = C.shape
    m, R, E = experiments[0][1].shape[0], max_delay, len(experiments)
    n_block = (R + 1) * m * n
    width = n_block + E * n + (ny * m if feedthrough else 0) + (ny if offset else 0)
    normal = np.zeros((width, width))
    moment = np.zeros(width)
    energy, rows = 0.0, 0
    for e, (Y, U) in enumerate(experiments):
        lags, initial, direct = _regressors(Y, U, A, C, R, feedthrough, offset)
        full = np.zeros((lags.shape[0], ny, width))
        full[:, :, :n_block] = lags
        full[:, :, n_block + e * n:n_block + (e + 1) * n] = initial
        full[:, :, n_block + E * n:] = direct
        target = Y[:, R:].T
        flat = full.reshape(-1, width)
        normal += flat.T @ flat
        moment += np.einsum("tap,ta->p", full, target)
        energy += float(np.sum(target ** 2))
        rows += target.size
    return LagMoments(normal=normal, moment=moment, energy=energy, rows=rows, n_states=n,
                      n_inputs=m, max_delay=R, n_experiments=E, n_outputs=ny,
                      feedthrough=feedthrough, offset=offset)


#: ``pair(delay) -> (w, Gamma_0(p), Gamma_1(p))`` for one plant (:func:`pair_of`).
Pair = Callable[[float], tuple[int, np.ndarray, np.ndarray]]


def pair_of(A_c: np.ndarray, dt: float) -> Pair:
    """``delay -> (w, Gamma_0(p), Gamma_1(p))`` of ``r = (w + p) T`` (eq. 9.65), remembered.

    ``B^(w) = Gamma_0(p) b`` with ``Gamma_0(p) = Gamma((1 - p) T)`` and ``B^(w+1) =
    Gamma_1(p) b`` with ``Gamma_1(p) = e^{A (1 - p) T} Gamma(p T) = Gamma(T) - Gamma_0(p)``
    (the two holds make up one period), ``Gamma(s) = int_0^s e^{A t} dt``: one matrix
    exponential per plant and one per new delay (the delay searches revisit their grid).
    """
    n = A_c.shape[0]
    block = np.zeros((2 * n, 2 * n))
    block[:n, :n], block[:n, n:] = A_c, np.eye(n)

    def gamma(s: float) -> np.ndarray:
        return checked_expm(block, f"[[A_c, I], [0, 0]] * s with s = {s!r}", s)[:n, n:]

    period = gamma(dt)

    @lru_cache(maxsize=4096)
    def pair(delay: float) -> tuple[int, np.ndarray, np.ndarray]:
        steps, fractions = split_delay(np.array([delay]), dt)
        gamma_0 = gamma((1.0 - fractions[0]) * dt)
        return int(steps[0]), gamma_0, period - gamma_0
    return pair


def hold_blocks(A_c: np.ndarray, dt: float, delays: np.ndarray
                ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """:func:`pair_of` of each delay (this runs at every step of the refinement)."""
    pair = pair_of(A_c, dt)
    return [pair(float(r)) for r in np.asarray(delays, dtype=float)]


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


def _channel_profile(moments: LagMoments, pair: Pair, delays: np.ndarray, channel: int,
                     free: np.ndarray) -> Callable[[float], float]:
    """The profile residual of one channel's delay, ``r -> RSS``, with the others fixed.

    The other columns ``S_o`` do not depend on ``r``: they are projected out once (normal
    matrix ``N~ = N - N S_o (S_o^T N S_o)^+ S_o^T N``, moment ``m~`` likewise), so each trial
    delay costs the ``n x n`` normal equations of its two blocks, ``Gamma_0`` at lag ``w`` and
    ``Gamma_1`` at ``w + 1`` (the same RSS as the joint least squares, by the Schur complement).
    """
    n, m, R = moments.n_states, moments.n_inputs, moments.max_delay
    S = _structure(moments, pair, delays, free, drop=channel)
    NS = moments.normal @ S
    inverse = np.linalg.pinv(S.T @ NS, hermitian=True)
    other_moment = S.T @ moments.moment
    normal = moments.normal - NS @ inverse @ NS.T
    moment = moments.moment - NS @ (inverse @ other_moment)
    base = moments.energy - float(other_moment @ inverse @ other_moment)

    def rss(r: float) -> float:
        w, gamma_0, gamma_1 = pair(r)
        parts = [(slice((j * m + channel) * n, (j * m + channel + 1) * n), gamma)
                 for j, gamma in ((w, gamma_0), (w + 1, gamma_1)) if j <= R]
        M = sum(ga.T @ normal[a, b] @ gb for a, ga in parts for b, gb in parts)
        v = sum(ga.T @ moment[a] for a, ga in parts)
        return max(base - float(v @ np.linalg.lstsq(M, v, rcond=None)[0]), 0.0)
    return rss


def _search(moments: LagMoments, pair: Pair, dt: float, delays: np.ndarray, channel: int,
            free: np.ndarray) -> float:
    """The delay of one channel minimizing the profile residual (grid, then bounded refine)."""
    top = moments.max_delay * dt
    if top == 0.0:                                  # max_delay = 0: nothing to search
        return 0.0
    grid = np.linspace(0.0, top, moments.max_delay * _GRID_PER_PERIOD + 1)
    rss = _channel_profile(moments, pair, delays, channel, free)
    values = np.array([rss(r) for r in grid])
    best = int(np.argmin(values))
    step = grid[1] - grid[0]
    low, high = max(grid[best] - step, 0.0), min(grid[best] + step, top)
    refined = optimize.minimize_scalar(rss, bounds=(low, high), method="bounded",
                                       options={"xatol": 1e-6 * dt})
    return float(refined.x) if refined.fun <= values[best] else float(grid[best])


def profile_delays(moments: LagMoments, A_c: np.ndarray, dt: float, *,
                   sweeps: int = 1) -> np.ndarray:
    """Per-channel delays (seconds) minimizing the profile residual.

    Each channel is first searched with the others unstructured (so the search does not depend
    on their unknown delays), then all channels are refined in turn with the others structured.
    """
    m = moments.n_inputs
    pair = pair_of(A_c, dt)
    delays = np.zeros(m)
    for i in range(m):
        free = np.ones(m, dtype=bool)
        free[i] = False
        delays[i] = _search(moments, pair, dt, delays, i, free)
    if m > 1:
        structured = np.zeros(m, dtype=bool)
        for _ in range(sweeps):
            previous = delays.copy()
            for i in range(m):
                delays[i] = _search(moments, pair, dt, delays, i, structured)
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


def delay_profile(moments: LagMoments, A_c: np.ndarray, dt: float, delays: np.ndarray,
                  channel: int) -> tuple[np.ndarray, np.ndarray]:
    """The profile residual of one channel's delay on a grid (steps of 1/16 period over
    ``[0, max_delay dt]``), the other channels structured at ``delays``: ``(grid, rss)``."""
    grid = np.linspace(0.0, moments.max_delay * dt, 2 * moments.max_delay * _GRID_PER_PERIOD + 1)
    rss = _channel_profile(moments, pair_of(A_c, dt), delays, channel,
                           np.zeros(moments.n_inputs, dtype=bool))
    return grid, np.array([rss(r) for r in grid])
