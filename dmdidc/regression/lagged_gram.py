"""The Gram matrix of lagged signals from their cross-correlations (block-Toeplitz structure).

A regression vector ``v_k`` stacks *slots* ``s_{k-a}``: a signal ``s`` (states ``x``, inputs
``u``, instruments ``e``) at a lag ``a`` (``-1`` for ``x_{k+1}``), for the samples
``k = k0 .. K-1`` of a trajectory (``k0`` the largest lag, so that every slot exists).  The
block of two slots, signals ``s`` and ``r`` at lags ``a`` and ``b``,

    G_ab = sum_{k=k0}^{K-1} s_{k-a} r_{k-b}^T,

depends on ``a`` and ``b`` through ``l = b - a`` only, up to the few samples at the two ends.
With ``a*`` the largest lag of ``s``, ``delta = a* - a >= 0`` and ``k' = k + delta``,

    G_ab = C_l - sum_{k'=k0}^{k0+delta-1} P_l(k') + sum_{k'=K}^{K+delta-1} P_l(k'),
    P_l(k) = s_{k-a*} r_{k-a*-l}^T,    C_l = sum_{k=k0}^{K-1} P_l(k),

signals being zero outside the data (the identity holds term by term, for any ``K``).
``C_l`` needs at sample ``k`` no value later than the slots of ``v_k``: it streams.  So per
sample one product of ``s_{k-a*}`` with the lag matrix of ``r`` (``ws x wr`` per lag) replaces
the dense ``V V^T`` (``d^2 / 2``): for the states against the inputs ``n x m`` per input lag
instead of ``2n x m``, for the inputs against themselves ``m x m`` per lag instead of
``(m (R + 1))^2 / 2``.  The ends cost ``O(lags^2)`` small products per trajectory, from the
first and last few values kept.  A constant signal ``1`` (one row, lag 0) is the last slot:
the last row of the Gram matrix holds the sums of the slots and the number of samples.

Every element-wise transformation of a signal (clipping, scaling) keeps the structure: it is
applied once to the signal, before its lags are taken.  Per-sample weights would not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LaggedGram", "regression_slots"]

#: Samples per block: the lag matrices (a few hundred rows x 4096 doubles) stay in cache.
_BLOCK = 4096


def regression_slots(max_delay: int) -> list[tuple[str, int]]:
    """The slots of the DMDidc regression ``[x_k; u_k; ...; u_{k-R}; x_{k+1}]`` (eqs.
    9.19-9.21), ``(signal, lag)`` each; instruments follow them in the statistics."""
    return [("x", 0)] + [("u", j) for j in range(max_delay + 1)] + [("x", -1)]


@dataclass(frozen=True)
class _Pair:
    """Blocks of a ``row`` signal (lags ``a``) against a ``col`` signal (lags ``b``), from
    ``C_l = sum_k row_{k-top} col_{k-top-l}^T`` for ``l = lo .. hi``; for one signal against
    itself only the blocks with ``a <= b`` (``l >= 0``)."""

    row: str
    col: str
    top: int
    lo: int
    hi: int

    @property
    def same(self) -> bool:
        return self.row == self.col


@dataclass(frozen=True)
class _Group:
    """The pairs sharing one lag matrix of ``col`` (times ``k - c`` for ``c = first ..
    last``): their row signals are stacked into one matrix product per block of samples."""

    col: str
    pairs: tuple[_Pair, ...]
    first: int
    last: int


class LaggedGram:
    """Streaming Gram matrix ``sum_k v_k v_k^T`` of lagged signals (see the module notes).

    Parameters
    ----------
    slots : list of (str, int)
        ``(signal, lag)`` per block of entries of ``v_k``, in order (lag ``-1`` is one step
        ahead); a slot ``("1", 0)`` (the constant) is appended.
    widths : dict of str to int
        Rows of each signal; signals of width 0 take no entries (their lags still count for
        the first sample).

    Notes
    -----
    ``update`` appends new values of every signal; sample ``k`` enters as soon as all its
    slots are known.  ``gram()`` returns the ``(d + 1) x (d + 1)`` Gram matrix of the open
    trajectory (``d`` the entries of ``v_k``; the last row and column are the sums and the
    count); ``new_trajectory()`` starts another (signals restart at time 0).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x, u = rng.standard_normal((2, 51)), rng.standard_normal((1, 50))
    >>> engine = LaggedGram([("x", 0), ("u", 0), ("u", 1), ("u", 2), ("x", -1)],
    ...                     {"x": 2, "u": 1})
    >>> engine.update({"x": x[:, :31], "u": u[:, :30]})
    >>> engine.update({"x": x[:, 31:], "u": u[:, 30:]})    # chunks: new values only
    >>> k = np.arange(2, 50)                               # samples with all lags
    >>> V = np.vstack([x[:, k], u[:, k], u[:, k - 1], u[:, k - 2], x[:, k + 1], np.ones(48)])
    >>> bool(np.allclose(engine.gram(), V @ V.T))
    True
    """

    def __init__(self, slots: list[tuple[str, int]], widths: dict[str, int]) -> None:
        widths = {**widths, "1": 1}
        # every slot counts for the first sample, even of a signal without rows (m = 0)
        self.first_sample = max(0, max((lag for _, lag in slots), default=0))
        slots = [slot for slot in slots if widths[slot[0]] > 0] + [("1", 0)]
        self.dimension = sum(widths[s] for s, _ in slots)
        offsets = np.cumsum([0] + [widths[s] for s, _ in slots])
        self._widths = widths
        self._signals = list(dict.fromkeys(s for s, _ in slots))
        self._lags = {s: np.array([lag for t, lag in slots if t == s]) for s in self._signals}
        self._rows = {s: np.concatenate([np.arange(offsets[i], offsets[i + 1])
                                         for i, (t, _) in enumerate(slots) if t == s])
                      for s in self._signals}
        self._groups = self._plan()
        # values kept at each end: the corrections reach 2 (largest lag + 1) + 1 steps
        self._keep = 2 * (self.first_sample + 1) + 2
        self.new_trajectory()

    def _plan(self) -> list[_Group]:
        """One group per signal whose lags are taken: the signal with more lags of each pair
        (then the narrower) is the lagged one, so the other contributes only rows."""
        spread = {s: int(lags.max() - lags.min()) for s, lags in self._lags.items()}
        cols: dict[str, list[tuple[str, int, int]]] = {}
        for i, s in enumerate(self._signals):
            for r in self._signals[i + 1:]:
                if (spread[s], -self._widths[s]) > (spread[r], -self._widths[r]):
                    s_, r_ = r, s
                else:
                    s_, r_ = s, r
                a, b = self._lags[s_], self._lags[r_]
                # the row's largest lag: no value later than the slots of v_k is needed
                cols.setdefault(r_, []).append((s_, int(a.max()), int(b.min() - a.max()),
                                                int(b.max() - a.min())))
        groups = []
        for r in self._signals:
            cross = cols.get(r, [])
            lags = self._lags[r]
            # against itself any reference lag streams: align it with the other pairs
            first = min((top + lo for _, top, lo, _ in cross), default=int(lags.min()))
            top = int(np.clip(first, lags.min(), lags.max()))
            pairs = [_Pair(r, r, top, 0, spread[r])] + [_Pair(s, r, t, lo, hi)
                                                       for s, t, lo, hi in cross]
            groups.append(_Group(r, tuple(pairs), min(p.top + p.lo for p in pairs),
                                 max(p.top + p.hi for p in pairs)))
        return groups

    def new_trajectory(self) -> None:
        """Forget the open trajectory (the caller folds its :meth:`gram` first)."""
        self._count = dict.fromkeys(self._signals, 0)   # values seen per signal
        self._samples = 0                               # K: samples with every slot known
        self._head = {s: np.zeros((self._widths[s], 0)) for s in self._signals}
        # the last `_keep` values (zeros before time 0): the history of the lags and the tail
        self._recent = {s: np.zeros((self._widths[s], self._keep)) for s in self._signals}
        self._corr = [np.zeros((sum(self._widths[p.row] for p in g.pairs),
                                (g.last - g.first + 1) * self._widths[g.col]))
                      for g in self._groups]

    @property
    def n_samples(self) -> int:
        """Samples ``k`` of the open trajectory in the Gram matrix (``k >= first_sample``)."""
        return max(self._samples - self.first_sample, 0)

    def update(self, values: dict[str, np.ndarray]) -> None:
        """Append new values (``(width, count)`` arrays) of the signals of the open trajectory;
        a signal left out gets none."""
        low = {s: self._count[s] - self._keep for s in self._signals}     # time of column 0
        buffers = {}
        for s in self._signals:
            new = values.get(s) if s != "1" else None
            if new is not None:
                buffers[s] = np.concatenate([self._recent[s], new], axis=1)
                self._count[s] += new.shape[1]
            else:
                buffers[s] = self._recent[s]
        samples = min(self._count[s] + int(self._lags[s].min())
                      for s in self._signals if s != "1")
        start = max(self._samples, self.first_sample)
        grow = max(samples - self._count["1"], 0)      # the constant: one per sample time
        buffers["1"] = np.concatenate([buffers["1"], np.ones((1, grow))], axis=1)
        self._count["1"] += grow
        for a in range(start, samples, _BLOCK):
            b = min(a + _BLOCK, samples)
            for group, corr in zip(self._groups, self._corr, strict=True):
                rows = np.concatenate([buffers[p.row][:, a - p.top - low[p.row]:
                                                      b - p.top - low[p.row]]
                                       for p in group.pairs])
                corr += rows @ _lag_matrix(buffers[group.col], a - low[group.col], b - a,
                                           group.first, group.last).T
        for s in self._signals:
            have = self._head[s].shape[1]        # the head: the first `_keep` values
            need = min(self._keep, self._count[s]) - have
            if need > 0:
                self._head[s] = np.concatenate([self._head[s], buffers[s][
                    :, have - low[s]:have - low[s] + need]], axis=1)
            self._recent[s] = buffers[s][:, buffers[s].shape[1] - self._keep:]
        self._samples = max(self._samples, samples)

    def gram(self) -> np.ndarray:
        """``sum_k v_k v_k^T`` over the samples of the open trajectory, ``(d + 1, d + 1)`` with
        the constant last (its row: the sums of the entries and the count)."""
        out = np.zeros((self.dimension, self.dimension))
        if self._samples <= self.first_sample:
            return out
        for group, corr in zip(self._groups, self._corr, strict=True):
            wr = self._widths[group.col]
            row = 0
            for pair in group.pairs:
                ws = self._widths[pair.row]
                block = corr[row:row + ws, (pair.top + pair.lo - group.first) * wr:
                             (pair.top + pair.hi - group.first + 1) * wr]
                self._place(out, pair, block.reshape(ws, pair.hi - pair.lo + 1, wr))
                row += ws
        return out

    def _place(self, out: np.ndarray, pair: _Pair, corr: np.ndarray) -> None:
        """Write the blocks of ``pair`` into ``out`` from its correlations ``corr``
        ``(ws, lag, wr)`` and the exact end corrections (module notes)."""
        s, r = pair.row, pair.col
        a, b = self._lags[s], self._lags[r]
        shift = pair.top - (np.minimum(a[:, None], b[None, :]) if pair.same else a[:, None])
        low, high = int(shift.min()), int(shift.max())
        # sum_{k0+delta}^{K-1+delta} = C + [F(K + delta) - F(K)] - [F(k0 + delta) - F(k0)]
        table = corr[None] + (self._partial(pair, self._samples, low, high)
                              - self._partial(pair, self.first_sample, low, high))
        shift = np.broadcast_to(shift - low, (a.size, b.size))
        if pair.same:
            blocks = table[shift, :, np.abs(b[None, :] - a[:, None]), :]
            flip = (a[:, None] > b[None, :])[..., None, None]
            blocks = np.where(flip, blocks.swapaxes(-1, -2), blocks)
        else:
            blocks = table[shift, :, b[None, :] - a[:, None] - pair.lo, :]
        # blocks (slot of s, slot of r, ws, wr) -> the rows of s and the columns of r
        dense = blocks.transpose(0, 2, 1, 3).reshape(a.size * self._widths[s],
                                                      b.size * self._widths[r])
        out[np.ix_(self._rows[s], self._rows[r])] = dense
        out[np.ix_(self._rows[r], self._rows[s])] = dense.T

    def _partial(self, pair: _Pair, start: int, low: int, high: int) -> np.ndarray:
        """``F(start + delta) - F(start)`` for ``delta = low .. high``, ``F(t)`` the sum of
        ``P_l(k)`` over ``k < t``: ``(high - low + 1, ws, lag, wr)``."""
        ws, wr, lags = self._widths[pair.row], self._widths[pair.col], pair.hi - pair.lo + 1
        span = high - low
        partial = np.zeros((span + 1, ws, lags, wr))
        if span:
            t0 = start + low - pair.top          # times of the row values
            rows = self._window(pair.row, t0, t0 + span)
            lagged = _lag_matrix(self._window(pair.col, t0 - pair.hi, t0 + span - pair.lo),
                                 pair.hi, span, pair.lo, pair.hi)
            terms = np.einsum("ic,jc->cij", rows, lagged).reshape(span, ws, lags, wr)
            np.cumsum(terms, axis=0, out=partial[1:])
        return partial - partial[-low]

    def _window(self, s: str, t0: int, t1: int) -> np.ndarray:
        """Values of ``s`` at times ``t0 .. t1 - 1`` (zero outside the data) from the kept
        head and tail; the corrections only reach times within ``_keep`` of either end."""
        out = np.zeros((self._widths[s], t1 - t0))
        count = self._count[s]
        for values, first in ((self._head[s], 0), (self._recent[s], count - self._keep)):
            lo, hi = max(t0, first, 0), min(t1, first + values.shape[1], count)
            if lo < hi:
                out[:, lo - t0:hi - t0] = values[:, lo - first:hi - first]
        return out


def _lag_matrix(values: np.ndarray, at: int, length: int, first: int, last: int
                ) -> np.ndarray:
    """Rows ``r_{t-c}`` for ``c = first .. last`` (blocks of ``wr`` rows), columns ``t`` from
    column ``at`` of ``values`` on, ``length`` of them."""
    wr = values.shape[0]
    out = np.empty(((last - first + 1) * wr, length))
    for j, c in enumerate(range(first, last + 1)):     # plain copies: faster than a strided view
        out[j * wr:(j + 1) * wr] = values[:, at - c:at - c + length]
    return out
