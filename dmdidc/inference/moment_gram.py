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
much as those correlations at ``n = 20, m = 4, R = 20``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmdidc.regression.instrumental import projected_instruments
from dmdidc.regression.lagged_gram import LaggedGram, regression_slots

__all__ = ["CorrectedMoments", "corrected_moments"]

#: Samples per block of the residuals' products with the lagged inputs: the copied window
#: of the inputs stays in cache.
_BLOCK = 1024


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
    engine = LaggedGram(layout, {"x": n, "u": m})     # one per call: 0.3 ms each
    for (X, U), E in zip(trajectories, residuals, strict=True):
        K = U.shape[1]
        if K - engine.first_sample < 2:
            continue
        engine.new_trajectory()
        engine.update({"x": X[:, :K], "u": U})
        lengths.append(engine.n_samples)
        # the residuals of the engine's samples (slot ("e", ahead): e_k, k = R .. K - 1)
        start = engine.first_sample - ahead - R
        e = E[:, start:start + engine.n_samples]
        gram = engine.gram()
        products = _residual_products(X, U, e, layout, engine.first_sample)
        if total is None:
            total, cross, own, e_sums = gram, products, e @ e.T, e.sum(axis=1)
        else:
            total, cross = total + gram, cross + products
            own, e_sums = own + e @ e.T, e_sums + e.sum(axis=1)
    if total is None:
        return CorrectedMoments(np.zeros((0, 0)), np.zeros(0), np.zeros((0, n)),
                                np.zeros((n, n)), [])
    N = total[-1, -1]
    M, sums = total[:-1, :-1], total[-1, :-1]
    if centred:
        M = M - np.outer(sums, sums) / N
        cross = cross - np.outer(sums, e_sums) / N
        own = own - np.outer(e_sums, e_sums) / N
    phi, w = slice(0, p), slice(p, M.shape[0])
    S = M[phi, phi]
    # w~_k = w_k - A phi_k with A = S_wphi G^T (G: least squares' projection, pseudo-inverse
    # on the regressors' range): the corrected Gram matrix and moments expanded in the blocks
    A = M[w, phi] @ projected_instruments(S, S).T
    products = A @ M[phi, w]
    signals = M[w, w] - products - products.T + A @ S @ A.T
    moments = cross[w] - A @ cross[phi]
    return CorrectedMoments(0.5 * (signals + signals.T), np.diag(M[w, w]).copy(), moments,
                            own, lengths)


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
