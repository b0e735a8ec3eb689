"""The Gram matrix of lagged signals from their cross-correlations (block-Toeplitz structure).

A regression vector ``v_k`` stacks *slots* ``s_{k-a}``: a signal ``s`` (states ``x``, inputs
``u``, instruments ``e``) at a lag ``a`` (``-1`` for ``x_{k+1}``), for the samples
``k = k0 .. K-1`` of a trajectory (``k0`` the largest lag, so that every slot exists).  With
every signal zero outside its data, the sum over *all* ``k`` of a block of two slots, signals
``s`` and ``r`` at lags ``a`` and ``b``, is a cross-correlation at the lag ``l = b - a``:

    sum_k s_{k-a} r_{k-b}^T = C_l = sum_t s_t r_{t-l}^T,

so the Gram matrix over all ``k`` is block-Toeplitz, read off the ``C_l``.  The samples
outside ``k0 .. K-1`` are the few (at most the largest lag + 2) at either end, whose vectors
``v_k`` are formed from the first and last values kept:

    sum_{k=k0}^{K-1} v_k v_k^T = T(C) - H H^T - E E^T    (H, E: the vectors v_k, k < k0, k >= K).

``C_l`` streams as ``sum_k s_{k-a*} r_{k-a*-l}^T`` with ``a*`` the largest lag of ``s`` (or any
of its lags for ``r = s``): at sample ``k`` no value later than the slots of ``v_k`` is
needed.  Per sample, one product of the rows of the other signals with the lag matrix of each
signal replaces the dense ``V V^T`` (``d^2 / 2``): the states against the inputs cost ``n x m``
per input lag instead of ``2n x m``, the inputs against themselves ``m x m`` per lag instead of
``(m (R + 1))^2 / 2``.  A signal of at most three lags (the states) is instead multiplied
lag by lag as views of the data (copying it into a lag matrix would cost more than the
products), and each chunk is read in place.  A constant signal ``1`` (one row, lag 0; ones at
the sample times) is the last slot: the last row of the Gram matrix holds the sums of the
slots and the count.
A short trajectory (at most ``2^23 / d^2`` samples) keeps all its values and is summed as one
dense product of its vectors: there the fixed cost of the ends would dominate.

A signal of many lags (the inputs, ``C = R + L + 2`` lags against the states) costs ``C`` products
per row and sample in the time domain.  Its correlations are instead summed over segments of
``P`` samples in the frequency domain (overlap-add of the correlation): each segment's rows and
its window of ``P + C - 1`` values of the lagged signal are transformed (length ``N >= P + C -
1``, no wrap-around), the products of their spectra add up over the segments, and one inverse
transform in :meth:`LaggedGram.gram` gives the ``C`` lags.  Per row and sample that is a
transform (``~ log N``) and ``~ width / 2`` complex products instead of ``C x width`` real
ones; the rounding is that of the transforms (``~ eps log N`` of the signals' norms).  The
samples that do not fill a segment, and chunks or trajectories of fewer than
``_SPECTRAL_SAMPLES`` samples, take the time-domain products.

Every element-wise transformation of a signal (clipping, scaling) keeps the structure: it is
applied once to the signal, before its lags are taken.  Per-sample weights would not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from dmdidc.errors import ParameterError

__all__ = ["LaggedGram", "regression_slots"]

#: Samples per block: the lag matrices (a few hundred rows x 4096 doubles) stay in cache.
_BLOCK = 4096
#: Groups of at most this many lags are multiplied lag by lag from views (no lag matrix).
_DIRECT_LAGS = 3
#: A trajectory of at most this many samples times d^2 (or _DENSE_SAMPLES samples) is summed
#: as one dense product: below it the fixed cost of the correlations' ends (~0.5 ms) dominates.
_DENSE_WORK = 2 ** 23
_DENSE_SAMPLES = 65536
#: A group whose lag matrix has at least this many rows (lags times the column's width), and
#: at least _SPECTRAL_LAGS lags, accumulates whole segments of samples in the frequency domain
#: (module notes): its products per sample grow with the lags, the transforms only with their
#: logarithm.  Measured (n = 20, m = 4, K = 2e5, one thread): 32 lags of 4 inputs 1.3-1.4x
#: faster, 22 lags even, 33 lags of 2 inputs 10 % slower.
_SPECTRAL_ROWS = 96
_SPECTRAL_LAGS = 8
#: Samples per batch of segments transformed at once (a few megabytes of spectra).
_SPECTRAL_BATCH = 16384
#: Fewer new samples than this (a short trajectory or chunk) stay in the time domain: the
#: fixed costs of the transforms would outweigh their gain (600-sample trajectories took
#: 1.5-2x longer).
_SPECTRAL_SAMPLES = 4096
#: Plans and Toeplitz indices by layout (slots, widths), the oldest dropped beyond the limit.
_PLANS: dict[tuple, tuple[tuple, np.ndarray]] = {}
_MAX_PLANS = 64


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
        ahead, the furthest ahead supported); a slot ``("1", 0)`` (the constant) is appended.
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
        ahead = [(s, lag) for s, lag in slots if lag < -1]
        if ahead:
            # the end vectors and the streaming windows reach one value ahead at most: the
            # Gram matrix of further future lags came out wrong (0.01-0.4 % of its entries)
            raise ParameterError(f"slots: lags below -1 are not supported, got {ahead}; "
                                 f"shift every slot's lag by the largest future lag (the "
                                 f"Gram matrix of the same samples, counted from later)")
        widths = {**widths, "1": 1}
        # every slot counts for the first sample, even of a signal without rows (m = 0)
        self.first_sample = max(0, max((lag for _, lag in slots), default=0))
        slots = [slot for slot in slots if widths[slot[0]] > 0] + [("1", 0)]
        self.dimension = sum(widths[s] for s, _ in slots)
        offsets = np.cumsum([0] + [widths[s] for s, _ in slots])
        self._widths = widths
        self._signals = list(dict.fromkeys(s for s, _ in slots))
        self._lags = {s: np.array([lag for t, lag in slots if t == s]) for s in self._signals}
        self._slices = [(int(offsets[i]), int(offsets[i + 1]), t, lag)
                        for i, (t, lag) in enumerate(slots)]
        self._rows = {s: np.concatenate([np.arange(offsets[i], offsets[i + 1])
                                         for i, (t, _) in enumerate(slots) if t == s])
                      for s in self._signals}
        self._span = {s: (int(lags.min()), int(lags.max())) for s, lags in self._lags.items()}
        # The plan and the index depend only on the layout: built once per layout, because
        # federations and smart-grid studies build thousands of accumulators of short
        # trajectories (2000 x 300 samples: 6.5 s with the plan rebuilt each time, 3.1 s before
        # the engine existed).
        key = (tuple(slots), tuple(sorted(widths.items())))
        if key not in _PLANS:
            groups = tuple(self._plan())
            index = self._toeplitz_index_of(groups)
            index.flags.writeable = False
            if len(_PLANS) >= _MAX_PLANS:
                _PLANS.pop(next(iter(_PLANS)))
            _PLANS[key] = (groups, index)
        self._groups, self._toeplitz = _PLANS[key]
        self._work: list[tuple[np.ndarray, np.ndarray]] | None = None
        # per group, the length of its transforms (0: products in the time domain only)
        self._transform = [_transform_length(g, widths[g.col]) for g in self._groups]
        # the correlation sums start at the first sample whose rows are not all zero
        self._start = min(p.top for g in self._groups for p in g.pairs)
        # values kept at each end: the end vectors reach 2 (largest lag + 1) + 1 steps
        self._keep = 2 * (self.first_sample + 1) + 2
        # the correlation terms of sample k read values from k - _reach to k + _ahead - 1
        self._reach = max(max(g.last, *(p.top for p in g.pairs)) for g in self._groups)
        self._ahead = 1 + max(0, -min(first for first, _ in self._span.values()))
        # A short trajectory costs less as one dense product of its vectors than the fixed
        # cost of the correlations' ends: all its values are kept until it has more samples.
        self._short = min(_DENSE_WORK // self.dimension ** 2, _DENSE_SAMPLES)
        self._hold = self._keep + self._short + self.first_sample + 2
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
        self._next = self._start                        # next k of the correlation sums
        self._head = {s: np.zeros((self._widths[s], 0)) for s in self._signals}
        # the last `_keep` values (zeros before time 0): the history of the lags and the tail
        self._recent = {s: np.zeros((self._widths[s], self._keep)) for s in self._signals}
        self._corr = [np.zeros((sum(self._widths[p.row] for p in g.pairs),
                                (g.last - g.first + 1) * self._widths[g.col]))
                      for g in self._groups]
        # the conjugate cross-spectra of the segments summed in the frequency domain (per
        # group, allocated when its first segments arrive)
        self._spectra: list[np.ndarray | None] = [None] * len(self._groups)

    @property
    def n_samples(self) -> int:
        """Samples ``k`` of the open trajectory in the Gram matrix (``k >= first_sample``)."""
        return max(self._samples - self.first_sample, 0)

    @property
    def dense_samples(self) -> int:
        """Samples of a trajectory up to which its Gram matrix is one dense product of its
        vectors (:meth:`vectors_of`): below it the correlations' ends cost more."""
        return self._short

    def vectors_of(self, values: dict[str, np.ndarray], out: np.ndarray | None = None
                   ) -> np.ndarray:
        """The vectors ``v_k`` (the constant last) of one whole trajectory, its signals'
        values from time 0 (``(width, count)`` arrays): the columns whose Gram matrix a
        fresh trajectory given in one :meth:`update` would sum (``k = first_sample .. K - 1``,
        every lag inside the data).  Written into ``out`` (``(dimension, samples)``) when
        given.  The open trajectory is not touched."""
        K = min(values[s].shape[1] + self._span[s][0] for s in self._signals if s != "1")
        k0 = self.first_sample
        if out is None:
            out = np.empty((self.dimension, max(K - k0, 0)))
        if K <= k0:                       # no sample has every lag (and no negative slices)
            return out
        for start, stop, s, lag in self._slices:
            if s == "1":
                out[start:stop] = 1.0
            else:
                out[start:stop] = values[s][:, k0 - lag:K - lag]
        return out

    def update(self, values: dict[str, np.ndarray]) -> None:
        """Append new values (``(width, count)`` arrays) of the signals of the open trajectory;
        a signal left out gets none."""
        old = dict(self._count)                     # time of the first new value
        new = {}
        for s in self._signals:
            given = values.get(s) if s != "1" else None
            new[s] = given if given is not None else np.zeros((self._widths[s], 0))
            self._count[s] += new[s].shape[1]
        samples = min(self._count[s] + self._span[s][0] for s in self._signals if s != "1")
        grow = max(samples - self._count["1"], 0)      # the constant: one per sample time
        new["1"] = np.ones((1, grow))
        self._count["1"] += grow
        if samples - self.first_sample > self._short:
            if 0 < self._samples > self._next:   # left while short: every value is in the head
                source = {s: np.concatenate([np.zeros((self._widths[s], self._keep)),
                                             self._head[s], new[s]], axis=1)
                          for s in self._signals}
                self._accumulate(self._corr, source, dict.fromkeys(self._signals, -self._keep),
                                 self._next, samples, spectral=True)
            else:
                # The first samples reach back into the kept values: a short joined buffer.
                # The others read the new values in place (copying every chunk cost ~10 %).
                split = min(max(old.values()) + self._reach, samples)
                if self._next < split:
                    joined = {s: np.concatenate([self._recent[s], new[s][
                        :, :max(split + self._ahead - old[s], 0)]], axis=1)
                              for s in self._signals}
                    self._accumulate(self._corr, joined,
                                     {s: old[s] - self._keep for s in self._signals},
                                     self._next, split, spectral=True)
                if max(split, self._next) < samples:
                    self._accumulate(self._corr, new, old, max(split, self._next), samples,
                                     spectral=True)
            self._next = max(self._next, samples)
        for s in self._signals:
            have = self._head[s].shape[1]        # the head: the first `_hold` values
            need = min(self._hold, self._count[s]) - have
            if need > 0:                         # then the head holds every old value
                self._head[s] = np.concatenate([self._head[s], new[s][
                    :, have - old[s]:have - old[s] + need]], axis=1)
            if new[s].shape[1] >= self._keep:    # a copy: a view would keep the chunk alive
                self._recent[s] = new[s][:, new[s].shape[1] - self._keep:].copy()
            else:
                self._recent[s] = np.concatenate([self._recent[s], new[s]], axis=1)[
                    :, new[s].shape[1]:]
        self._samples = max(self._samples, samples)

    def _accumulate(self, corr: list[np.ndarray], buffers: dict[str, np.ndarray],
                    low: dict[str, int], start: int, stop: int, *, spectral: bool = False
                    ) -> None:
        """Add the terms of samples ``start .. stop - 1`` to the correlation sums ``corr``
        (``buffers[s]`` holds ``s`` from time ``low[s]``); with ``spectral``, the whole
        segments of the groups with transforms to their spectra instead."""
        if self._work is None:
            # one workspace per group, reused block after block: fresh multi-megabyte arrays
            # would be page-faulted in again for every block
            self._work = [None if _direct(g) else
                          (np.empty((total.shape[0], _BLOCK)),
                           np.empty(((g.last - g.first + 1) * self._widths[g.col], _BLOCK)))
                          for g, total in zip(self._groups, corr, strict=True)]
        begin = [start] * len(self._groups)          # per group, the first sample left
        if spectral:
            begin = [self._add_spectral(i, g, buffers, low, start, stop) if size else start
                     for i, (g, size) in enumerate(zip(self._groups, self._transform,
                                                       strict=True))]
        # A group of few lags multiplies views of the data (no workspace to keep in cache):
        # one call for the whole range (108 calls of 4096 samples took ~7 % longer in all).
        for group, total, work, first in zip(self._groups, corr, self._work, begin, strict=True):
            if work is None and first < stop:
                self._add_direct(group, total, buffers, low, first, stop)
        for a0 in range(min(begin), stop, _BLOCK):
            for group, total, work, first in zip(self._groups, corr, self._work, begin,
                                                 strict=True):
                a, b = max(a0, first), min(a0 + _BLOCK, stop)
                if a >= b or work is None:
                    continue
                rows, lagged = work
                row = 0
                for p in group.pairs:
                    width = self._widths[p.row]
                    rows[row:row + width, :b - a] = buffers[p.row][:, a - p.top - low[p.row]:
                                                                   b - p.top - low[p.row]]
                    row += width
                _lag_matrix(buffers[group.col], a - low[group.col], group.first, group.last,
                            lagged[:, :b - a])
                total += rows[:, :b - a] @ lagged[:, :b - a].T

    def _add_spectral(self, index: int, group: _Group, buffers: dict[str, np.ndarray],
                      low: dict[str, int], start: int, stop: int) -> int:
        """Add the whole segments of samples from ``start`` (before ``stop``) to the group's
        spectra; return the first sample left for the products.

        A segment of ``P`` samples from ``s`` correlates its rows ``y_t = row_{s+t-top}`` with
        the window ``w_tau = col_{s-last+tau}`` (``P + C - 1`` values, ``C`` lags): the term of
        lag ``c`` is ``sum_t y_t w_{t+last-c}^T``, the circular correlation at ``last - c`` of
        transforms of length ``N >= P + C - 1`` (no wrap-around).  Transforms are linear, so
        the segments' products of spectra add up and are transformed back once, in
        :meth:`gram`."""
        if stop - start < _SPECTRAL_SAMPLES:
            return start
        size = self._transform[index]
        lags = group.last - group.first + 1
        length = size - lags + 1                          # P
        count = (stop - start) // length
        if count == 0:
            return start
        if self._spectra[index] is None:
            self._spectra[index] = np.zeros((size // 2 + 1, self._corr[index].shape[0],
                                             self._widths[group.col]), complex)
        spectrum, col, at = self._spectra[index], buffers[group.col], low[group.col]
        batch = max(1, _SPECTRAL_BATCH // length)
        ones = None                  # the transform of a segment of the constant
        for first in range(0, count, batch):
            q = min(batch, count - first)
            a = start + first * length
            b = a + q * length
            windows = sliding_window_view(col[:, a - group.last - at:b - group.first - at],
                                          length + lags - 1, axis=1)[:, ::length]
            W = np.fft.rfft(windows.transpose(2, 0, 1), size, axis=0).conj().transpose(0, 2, 1)
            row = 0
            for p in group.pairs:
                width = self._widths[p.row]
                rows = buffers[p.row][:, a - p.top - low[p.row]:b - p.top - low[p.row]]
                if p.row == "1" and rows.min() == 1.0:
                    # the constant inside the data: every segment has the same transform, so
                    # its products are that transform times the windows' summed spectra
                    if ones is None:
                        ones = np.fft.rfft(np.ones(length), size)
                    spectrum[:, row] += ones[:, None] * W.sum(axis=1)
                else:
                    Y = np.fft.rfft(rows.reshape(width, q, length).transpose(2, 0, 1), size,
                                    axis=0)
                    spectrum[:, row:row + width] += Y @ W
                row += width
        return start + count * length

    def _add_direct(self, group: _Group, total: np.ndarray, buffers: dict[str, np.ndarray],
                    low: dict[str, int], a: int, b: int) -> None:
        """A group of few lags: one product of views of the buffers per pair and lag (no
        copies; a signal against itself at its own lag is a symmetric rank-k update)."""
        wr, col, at = self._widths[group.col], buffers[group.col], low[group.col]
        row = 0
        for p in group.pairs:
            width = self._widths[p.row]
            rows = buffers[p.row][:, a - p.top - low[p.row]:b - p.top - low[p.row]]
            if p.row == "1" and rows.size and rows.min() == 1.0:
                # the constant inside the data: sums of the column signal over windows one
                # sample apart differ by two values (one sum instead of a product per lag)
                sums = col[:, a - p.top - p.lo - at:b - p.top - p.lo - at].sum(axis=1)
                for c in range(p.top + p.lo, p.top + p.hi + 1):
                    if c > p.top + p.lo:
                        sums = sums + col[:, a - c - at] - col[:, b - c - at]
                    j = (c - group.first) * wr
                    total[row, j:j + wr] += sums
                row += width
                continue
            for c in range(p.top + p.lo, p.top + p.hi + 1):
                j = (c - group.first) * wr
                total[row:row + width, j:j + wr] += rows @ col[:, a - c - at:b - c - at].T
            row += width

    def gram(self) -> np.ndarray:
        """``sum_k v_k v_k^T`` over the samples of the open trajectory, ``(d + 1, d + 1)`` with
        the constant last (its row: the sums of the entries and the count)."""
        K, k0 = self._samples, self.first_sample
        if K <= k0:
            return np.zeros((self.dimension, self.dimension))
        if K - k0 <= self._short:             # every value is kept: one dense product
            vectors = self._vectors(k0, K)
            return vectors @ vectors.T
        # the correlation terms of the samples after K (the signals end with zeros)
        beyond = self.first_sample + 3
        buffers = {s: np.concatenate([self._recent[s], np.zeros((self._widths[s], beyond))],
                                     axis=1) for s in self._signals}
        low = {s: self._count[s] - self._keep for s in self._signals}
        corr = [c.copy() for c in self._corr]
        self._accumulate(corr, buffers, low, K, K + beyond)
        for total, spectrum, size in zip(corr, self._spectra, self._transform, strict=True):
            if spectrum is not None:     # lag c at last - c of the correlation: reversed
                lags = total.shape[1] // spectrum.shape[2]
                back = np.fft.irfft(spectrum.conj(), size, axis=0)[lags - 1::-1]
                total += back.transpose(1, 0, 2).reshape(total.shape)
        full = np.concatenate([c.ravel() for c in corr])[self._toeplitz]
        head = self._vectors(min(first for first, _ in self._span.values()), k0)
        tail = self._vectors(K, K + beyond)
        return full - head @ head.T - tail @ tail.T

    def _vectors(self, k0: int, k1: int) -> np.ndarray:
        """The vectors ``v_k`` (with the constant) of samples ``k0 .. k1 - 1``, zero outside
        the data, from the values kept."""
        windows = {s: self._window(s, k0 - last, k1 - first)
                   for s, (first, last) in self._span.items()}
        out = np.empty((self.dimension, k1 - k0))
        for start, stop, s, lag in self._slices:
            column = self._span[s][1] - lag
            out[start:stop] = windows[s][:, column:column + k1 - k0]
        return out

    def _toeplitz_index_of(self, groups: tuple[_Group, ...]) -> np.ndarray:
        """Index into the concatenated, flattened correlation sums of every entry of the
        block-Toeplitz Gram matrix ``T(C)`` (of the correlation groups ``groups``)."""
        index = np.zeros((self.dimension, self.dimension), dtype=np.intp)
        offset = 0
        for group in groups:
            wr = self._widths[group.col]
            columns = (group.last - group.first + 1) * wr
            row0 = offset
            for pair in group.pairs:
                ws = self._widths[pair.row]
                a = self._lags[pair.row][:, None, None, None]
                b = self._lags[pair.col][None, None, :, None]
                alpha = np.arange(ws)[None, :, None, None]
                beta = np.arange(wr)[None, None, None, :]
                lag = b - a
                upper = lag >= 0 if pair.same else np.ones_like(lag, dtype=bool)
                # a block below the diagonal of one signal is the transpose of C_{a-b}
                i = np.where(upper, alpha, beta)
                j = np.where(upper, beta, alpha)
                c = pair.top + np.abs(lag) if pair.same else pair.top + lag
                flat = row0 + i * columns + (c - group.first) * wr + j
                flat = np.broadcast_to(flat, (a.shape[0], ws, b.shape[2], wr))
                rows = self._rows[pair.row].reshape(-1, ws)[:, :, None, None]
                cols = self._rows[pair.col].reshape(-1, wr)[None, None, :, :]
                index[rows, cols] = flat
                index[cols.transpose(2, 3, 0, 1), rows.transpose(2, 3, 0, 1)] = \
                    flat.transpose(2, 3, 0, 1)
                row0 += ws * columns
            offset = row0
        return index

    def _window(self, s: str, t0: int, t1: int) -> np.ndarray:
        """Values of ``s`` at times ``t0 .. t1 - 1`` (zero outside the data) from the kept
        head and tail: the end vectors reach times within ``_keep`` of either end, a short
        trajectory is all head."""
        out = np.zeros((self._widths[s], t1 - t0))
        count = self._count[s]
        for values, first in ((self._head[s], 0), (self._recent[s], count - self._keep)):
            lo, hi = max(t0, first, 0), min(t1, first + values.shape[1], count)
            if lo < hi:
                out[:, lo - t0:hi - t0] = values[:, lo - first:hi - first]
        return out


def _transform_length(group: _Group, width: int) -> int:
    """Length ``N`` of the group's transforms (a power of two near 8 times its lags, where
    the cost per sample is flattest), or 0 when its products stay in the time domain."""
    lags = group.last - group.first + 1
    if lags < _SPECTRAL_LAGS or lags * width < _SPECTRAL_ROWS:
        return 0
    return 1 << int(np.ceil(np.log2(8 * lags)))


def _direct(group: _Group) -> bool:
    """Whether the group's lags are few enough to multiply views of the data lag by lag:
    copying them into a lag matrix would cost more than the smaller products."""
    return group.last - group.first < _DIRECT_LAGS


def _lag_matrix(values: np.ndarray, at: int, first: int, last: int, out: np.ndarray) -> None:
    """Write the rows ``r_{t-c}`` for ``c = first .. last`` (blocks of ``wr`` rows) into ``out``,
    columns ``t`` from column ``at`` of ``values`` on."""
    wr, length = values.shape[0], out.shape[1]
    for j, c in enumerate(range(first, last + 1)):     # plain copies: faster than a strided view
        out[j * wr:(j + 1) * wr] = values[:, at - c:at - c + length]
