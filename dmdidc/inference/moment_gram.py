"""The moments of least squares' residual checks from one lagged Gram matrix.

The moment tests of a fit whose regressors instrument themselves (least squares, Huber,
:func:`dmdidc.inference.residuals.moment_checks` with ``kind="regressors"``) need only second
moments: the corrected signals ``w~_k = w_k - S_wphi S^+ phi_k`` enter through their Gram
matrix and their products with the residuals, and the Kronecker covariance of those
moments through the residuals' Gram matrix.  Every one of them is a block of the Gram
matrix of ``v_k = [phi_k; w_k; e_k]``, whose signals are lags of three: the states (the
regressor ``x_k`` and the past states ``x_{k-1} .. x_{k-S}``), the inputs (``u_k ..
u_{k-R}`` and the moment lags beyond either side) and the residuals ``e_k``.  Its blocks are
cross-correlations (:class:`~dmdidc.regression.lagged_gram.LaggedGram`): per sample the
states and residuals against one lag matrix of the inputs, not the dense product of the
``d ~ 265`` rows laid out side by side (the layout alone, one copy of every row, cost as
much as those correlations at ``n = 20, m = 4, R = 20``).  On long trajectories the
engine's correlations are transforms, which the residuals' many rows would multiply: there
their blocks are direct products instead (:func:`_with_residuals`).  The pieces between
(the residual checks' ten pieces of about 2000 samples of a long record) are correlated as
one trajectory laid end to end (:func:`_joined_gram`): one Gram matrix for all of them, the
residuals a signal of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmdidc.errors import DimensionError
from dmdidc.regression.instrumental import projected_instruments
from dmdidc.regression.lagged_gram import LaggedGram, regression_slots

__all__ = ["CorrectedMoments", "corrected_moments"]

#: Samples per block of the residuals' products with the lagged inputs: the copied window
#: of the inputs stays in cache.
_BLOCK = 1024
#: Trajectories of at least this many samples take the residuals' products of their own
#: (:func:`_residual_products`); shorter ones correlate them in the engine, whose products
#: in the time domain share one lag matrix of the inputs with the states (10 pieces of 2040
#: samples, n = 20, m = 4, R = 20: 17-18 ms against 19-20 ms for the products of their own;
#: one trajectory of 2e4 samples, n = 50, m = 4, R = 5: 29-30 ms against 19-22 ms), all of
#: them laid end to end as one trajectory (:func:`_joined_gram`; 10 pieces of 2000 samples,
#: n = 50, m = 4, R = 5: 58 -> 55 ms, under load).
_DIRECT_SAMPLES = 4096


@dataclass(frozen=True)
class CorrectedMoments:
    """Second moments of the corrected moment signals and the residuals.

    Attributes
    ----------
    signals : ndarray, shape (q, q)
        ``sum_k w~_k w~_k^T`` of the corrected signals.
    raw : ndarray, shape (q,)
        ``sum_k w_k^2`` of the signals before the correction (their energy).
    moments : ndarray, shape (q, n)
        ``g = sum_k w~_k e_k^T``.
    residuals : ndarray, shape (n, n)
        ``sum_k e_k e_k^T``.
    lengths : list of int
        Samples of each trajectory used (those with at least two).
    """

    signals: np.ndarray
    raw: np.ndarray
    moments: np.ndarray
    residuals: np.ndarray
    lengths: list[int]

    @property
    def n_samples(self) -> int:
        return int(sum(self.lengths))


def corrected_moments(trajectories: list[tuple[np.ndarray, np.ndarray]],
                      residuals: list[np.ndarray], slots: list[tuple[str, int]], *,
                      max_delay: int, centred: bool) -> CorrectedMoments:
    """The moments of the signals ``slots`` (``("x" | "u", lag)``, negative lags: future
    values) with the ``residuals`` of the regression on ``phi_k = [x_k; u_k .. u_{k-R}]``,
    corrected by least squares' own projection, over ``k = a .. K - 1 - b`` of each trajectory
    (``a`` the largest lag, ``b`` the largest future one, ``K`` its inputs' samples);
    ``centred``: every signal, regressor and residual less its mean over all of them.

    Parameters
    ----------
    trajectories : list of (X (n, K + 1), U (m, K))
    residuals : list of ndarray (n, K - R)
        ``e_k`` for ``k = R .. K - 1`` of each trajectory
        (:func:`~dmdidc.inference.residuals.model_residuals`; any width when ``K`` leaves
        fewer than two samples).
    slots : list of (str, int)
    max_delay : int
    centred : bool

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X, U = rng.standard_normal((2, 301)), rng.standard_normal((1, 300))
    >>> out = corrected_moments([(X, U)], [X[:, 2:]], [("u", 3), ("u", -1)],
    ...                         max_delay=1, centred=False)
    >>> out.signals.shape, out.moments.shape, out.lengths
    ((2, 2), (2, 2), [296])
    """
    R = max_delay
    n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
    p = n + m * (R + 1)
    # every lag shifted by the furthest future one: the same samples, counted from later
    # (LaggedGram streams one value ahead at most)
    ahead = max(0, -min((lag for _, lag in slots), default=0))
    layout = [(s, lag + ahead) for s, lag in regression_slots(R)[:-1] + list(slots)]
    total, lengths = None, []
    # one engine per call (0.3 ms each): the residuals a signal of it for short trajectories,
    # products of their own for long ones (_with_residuals)
    joint = LaggedGram(layout + [("e", ahead)], {"x": n, "u": m, "e": n})
    engine = None
    joined: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for index, ((X, U), E) in enumerate(zip(trajectories, residuals, strict=True)):
        K = U.shape[1]
        if K - joint.first_sample < 2:
            continue
        if E.shape != (n, K - R):
            # the products below slice the residuals by sample: a misaligned piece would be
            # read silently
            raise DimensionError(f"residuals[{index}] has shape {E.shape}; expected "
                                 f"{(n, K - R)} (e_k for k = max_delay .. K - 1 of trajectory "
                                 f"{index}, K = {K} input samples)")
        if K - joint.first_sample < _DIRECT_SAMPLES:
            # e_k for k = R .. K - 1 in place, zeros before (samples the lags never reach)
            e = np.zeros((n, K))
            e[:, R:] = E
            lengths.append(K - joint.first_sample)
            if K - joint.first_sample > joint.dense_samples:
                joined.append((X[:, :K], U, e))
                continue
            # (few samples: one dense product of its vectors, as the engine sums it)
            joint.new_trajectory()
            joint.update({"x": X[:, :K], "u": U, "e": e})
            gram = joint.gram()
        else:
            engine = LaggedGram(layout, {"x": n, "u": m}) if engine is None else engine
            engine.new_trajectory()
            engine.update({"x": X[:, :K], "u": U})
            lengths.append(engine.n_samples)
            gram = _with_residuals(engine, X, U, E, layout, ahead + R)
        total = gram if total is None else total + gram
    if joined:
        gram = _joined_gram(joint, joined)
        total = gram if total is None else total + gram
    if total is None:
        return CorrectedMoments(np.zeros((0, 0)), np.zeros(0), np.zeros((0, n)),
                                np.zeros((n, n)), [])
    sums, N = total[-1, :-1], total[-1, -1]
    M = total[:-1, :-1]
    if centred:
        M = M - np.outer(sums, sums) / N
    phi, w, e = slice(0, p), slice(p, M.shape[0] - n), slice(M.shape[0] - n, None)
    S = M[phi, phi]
    # w~_k = w_k - A phi_k with A = S_wphi G^T (G: least squares' projection, pseudo-inverse
    # on the regressors' range): the corrected Gram matrix and moments expanded in the blocks
    A = M[w, phi] @ projected_instruments(S, S).T
    cross = A @ M[phi, w]
    signals = M[w, w] - cross - cross.T + A @ S @ A.T
    moments = M[w, e] - A @ M[phi, e]
    return CorrectedMoments(0.5 * (signals + signals.T), np.diag(M[w, w]).copy(), moments,
                            M[e, e], lengths)


def _joined_gram(engine: LaggedGram, pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
                 ) -> np.ndarray:
    """The Gram matrix of ``[v_k; 1]`` summed over the samples of every piece ``(x, u, e)``
    (values from time 0 each), from one trajectory of the pieces laid end to end, less the
    vectors of the samples whose lags straddle two pieces (the first ``first_sample`` of
    each piece after the first): one Gram matrix instead of one per piece, and products as
    long as all the pieces together (the residual checks' ten pieces of 2000 samples, n = 20,
    m = 4, R = 20: 0.70-0.85x; 100 pieces of 200 samples: 0.3x)."""
    engine.new_trajectory()
    joined = {s: np.concatenate([piece[i] for piece in pieces], axis=1)
              for i, s in enumerate(("x", "u", "e"))}
    engine.update(joined)
    gram = engine.gram()
    k0 = engine.first_sample
    starts = np.cumsum([piece[1].shape[1] for piece in pieces])[:-1]
    if k0 and starts.size:
        straddling = np.concatenate([engine.vectors_of({s: v[:, t - k0:t + k0]
                                                        for s, v in joined.items()})
                                     for t in starts], axis=1)
        gram -= straddling @ straddling.T
    return gram


def _with_residuals(engine: LaggedGram, X: np.ndarray, U: np.ndarray, E: np.ndarray,
                    layout: list[tuple[str, int]], offset: int) -> np.ndarray:
    """The Gram matrix of ``[v_k; e_k; 1]`` of the engine's open trajectory (``v_k`` its
    slots ``layout``), the residuals' blocks by :func:`_residual_products`; ``E`` (n, K - R)
    the residuals from sample ``R``, ``offset`` the engine's lag of them (``R`` plus its
    shift)."""
    inner = engine.gram()                                   # [v_k; 1]
    d, n = inner.shape[0] - 1, E.shape[0]
    first = engine.first_sample
    e = E[:, first - offset:first - offset + engine.n_samples]
    out = np.empty((d + n + 1, d + n + 1))
    keep = np.r_[0:d, d + n]
    out[np.ix_(keep, keep)] = inner
    out[:d, d:d + n] = _residual_products(X, U, e, layout, first)
    out[d:d + n, :d] = out[:d, d:d + n].T
    out[d:d + n, d:d + n] = e @ e.T
    out[d:d + n, -1] = out[-1, d:d + n] = e.sum(axis=1)
    return out


def _residual_products(X: np.ndarray, U: np.ndarray, e: np.ndarray,
                       layout: list[tuple[str, int]], first: int) -> np.ndarray:
    """``sum_k v_k e_k^T`` (d, n) over the engine's samples ``k = first .. first + N - 1``
    (``e`` (n, N) their residuals; slot ``(s, lag)`` of ``v_k`` is ``s`` at time ``k - lag``).

    The residuals are products with the data, not a signal of the lagged Gram matrix: there
    each of their rows would be correlated with every lag of the inputs in the frequency
    domain (at n = 50, m = 4, R = 5 that was 60 % of the engine's cost); here the states'
    slots are one product each and all the input lags one product per block of samples, of
    the residuals with a copied window of the time-major inputs (as in
    :func:`dmdidc.fitting._simulated_statistics`)."""
    N = e.shape[1]
    m = U.shape[0]
    widths = {"x": X.shape[0], "u": m}
    out = np.empty((sum(widths[s] for s, _ in layout), e.shape[0]))
    lags = [lag for s, lag in layout if s == "u"]
    inputs = None
    if m and lags:
        lo, hi = min(lags), max(lags)
        span = hi - lo + 1
        # row t of the windows is [u_t .. u_t+span-1]: sample k reads row k - hi, lag c its
        # block hi - c
        windows = np.lib.stride_tricks.sliding_window_view(
            np.ascontiguousarray(U.T).ravel(), span * m)[::m]
        inputs = np.zeros((e.shape[0], span * m))
        for a in range(0, N, _BLOCK):
            b = min(a + _BLOCK, N)
            inputs += e[:, a:b] @ np.ascontiguousarray(
                windows[first + a - hi:first + b - hi])
    row = 0
    for s, lag in layout:
        width = widths[s]
        if width == 0:              # (no inputs: the engine leaves their slots out too)
            continue
        if s == "x":
            out[row:row + width] = X[:, first - lag:first - lag + N] @ e.T
        else:
            at = (hi - lag) * m
            out[row:row + width] = inputs[:, at:at + m].T
        row += width
    return out
