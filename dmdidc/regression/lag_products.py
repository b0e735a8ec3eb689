"""Sums of lagged products ``sum_k a_i,k b_j,k-d`` of many series over a range of lags.

The residual checks correlate tens of residual series with tens of signals at tens of lags.  One
matrix product per lag costs ``rows_a x rows_b x lags`` multiply-adds per sample, several Gram
passes of the regression.  :func:`lag_products` instead cuts ``a`` into blocks of ``B`` samples
and pairs each block with the ``B + span`` samples of ``b`` that its lags reach: their circular
correlation of length ``F >= B + span`` is the linear one at every lag of the range, and the
transforms add over blocks, so each frequency takes one small complex matrix product
(``rows_a x blocks`` by ``blocks x rows_b``).  That is about ``4 rows_a rows_b F / B`` flops per
sample whatever the number of lags, plus the transforms (``(rows_a + rows_b) log F``).
:func:`lag_product_sets` computes several such products over one lag range and transforms
each series once per role: the residual checks' whiteness moments and their products with
every prewhitened signal share the residuals' transforms (half the transforms of separate
calls).  A series' products with itself (``(i, i, True)``) come from the one role its other
products already transform it in, when it has one: the blocks' power spectra plus the pairs
across the block boundaries, or the windows' power spectra less their wrap and the samples
two windows share (the edge pairs: one small product over the blocks).  The residual checks
then transform the residuals and each prewhitened signal once, not twice (the set 0.83x).

Trajectories (pieces) are laid end to end with zeros between them (:class:`PieceLayout`):
products across a gap at least as wide as the largest lag vanish, so one call pools the pieces
(:func:`autocovariances`). The routines live in the regression layer so that
:mod:`dmdidc.regression.instrumental`, which cannot import :mod:`dmdidc.inference`, shares them
with the residual checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from _toolbox.validation import check_integer
from dmdidc.errors import DimensionError, ParameterError

__all__ = ["PieceLayout", "autocorrelations", "autocovariances", "centred_autocovariances",
           "lag_product_sets", "lag_products", "trimmed_autocovariances"]

#: Lag spans below this: the diagonal products directly (a transform per row costs about as
#: much as two dozen products).
_DIRECT_SPAN = 20
#: Samples (rows x transform length) of one group of blocks: its buffers and transforms stay
#: in the L2 cache.
_GROUP_VALUES = 1 << 16
#: Fewest blocks of a group: the per-frequency products are matrices this wide.
_MIN_GROUP = 8


def _transform_size(span: int, samples: int) -> int:
    """A power of two at least four times the lag span (blocks of ``F - span`` samples waste
    at most a quarter of each transform), and no longer than the data need."""
    size = max(64, 1 << (4 * (span + 1) - 1).bit_length())
    return min(size, 1 << (max(samples + span, 2) - 1).bit_length())


def lag_products(a: np.ndarray, b: np.ndarray, low: int, high: int, *,
                 diagonal: bool = False) -> np.ndarray:
    """``sum_k a_i,k b_j,k-d`` for every lag ``d = low .. high`` (both zero outside their samples).

    Parameters
    ----------
    a : ndarray, shape (rows_a, T)
    b : ndarray, shape (rows_b, T)
        ``rows_b == rows_a`` when ``diagonal``.
    low, high : int
        The lag range, ``low <= high`` (negative lags: ``b`` later than ``a``).
    diagonal : bool, default False
        Only the products of row ``i`` of ``a`` with row ``i`` of ``b`` (autocovariances when
        ``b is a``).

    Returns
    -------
    ndarray, shape (rows_a, rows_b, high - low + 1), or (rows_a, high - low + 1) when diagonal
        The same sums as the direct products, up to rounding (blocked FFT, module notes), in
        double precision whatever the series' float type.

    Raises
    ------
    ParameterError
        ``high < low``, or complex series.
    DimensionError
        Series that are not two-dimensional, of different sample counts, or (``diagonal``)
        of different row counts.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.standard_normal((2, 500)), rng.standard_normal((3, 500))
    >>> sums = lag_products(a, b, -2, 4)
    >>> direct = a[1, 3:] @ b[2, :-3]                  # lag 3: a_k b_{k-3}
    >>> bool(np.isclose(sums[1, 2, 3 + 2], direct))
    True
    """
    if high < low:
        raise ParameterError(f"lag range {low} .. {high}: expected low <= high")
    a, b = _real_series("a", a), _real_series("b", b)
    if a.shape[1] != b.shape[1]:
        raise DimensionError(f"a has {a.shape[1]} samples and b {b.shape[1]}: expected the "
                             f"same number (the sums run over common sample indices)")
    if diagonal and a.shape[0] != b.shape[0]:
        raise DimensionError(f"diagonal products pair row i of a with row i of b: a has "
                             f"{a.shape[0]} rows and b {b.shape[0]}; expected the same number")
    span, T = high - low, a.shape[1]
    rows_a, rows_b = a.shape[0], b.shape[0]
    out_shape = (rows_a, span + 1) if diagonal else (rows_a, rows_b, span + 1)
    if T == 0 or rows_a == 0 or rows_b == 0:
        return np.zeros(out_shape)
    if diagonal and span < _DIRECT_SPAN:     # a few lags: row-wise dot products are cheaper
        out = np.zeros(out_shape)
        for d in range(max(low, 1 - T), min(high, T - 1) + 1):     # k and k - d in 0 .. T-1
            first, stop = max(d, 0), min(T, T + d)
            out[:, d - low] = np.einsum("ik,ik->i", a[:, first:stop], b[:, first - d:stop - d],
                                        dtype=float)    # float32 series: double sums
        return out
    return _blocked([a] if b is a else [a, b], [(0, 0 if b is a else 1, diagonal)],
                    low, high)[0]


def lag_product_sets(series: list[np.ndarray], pairs: list[tuple[int, int, bool]], low: int,
                     high: int) -> list[np.ndarray]:
    """Several :func:`lag_products` over one lag range, each series transformed once.

    A series that takes part in several products (the residuals, correlated with themselves
    and with every signal) is cut into blocks and transformed once per role (the leading
    ``a`` and the trailing ``b`` of the products), not once per product.

    Parameters
    ----------
    series : list of ndarray, each (rows, T)
        Real series of one sample count.
    pairs : list of (int, int, bool)
        ``(i, j, diagonal)``: the products ``sum_k series[i]_k series[j]_{k-d}^T``
        (``diagonal``: row by row).
    low, high : int
        The lag range, ``low <= high``.

    Returns
    -------
    list of ndarray
        Per pair, what ``lag_products(series[i], series[j], low, high, diagonal=diagonal)``
        returns (the blocked transforms always: no direct path for few lags).

    Raises
    ------
    ParameterError, DimensionError
        As :func:`lag_products`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> e, s = rng.standard_normal((2, 800)), rng.standard_normal((3, 800))
    >>> auto, cross = lag_product_sets([e, s], [(0, 0, True), (0, 1, False)], -3, 30)
    >>> bool(np.allclose(auto, lag_products(e, e, -3, 30, diagonal=True)))
    True
    >>> bool(np.allclose(cross, lag_products(e, s, -3, 30)))
    True
    """
    if high < low:
        raise ParameterError(f"lag range {low} .. {high}: expected low <= high")
    series = [_real_series(f"series[{i}]", x) for i, x in enumerate(series)]
    for i, x in enumerate(series):
        if x.shape[1] != series[0].shape[1]:
            raise DimensionError(f"series[{i}] has {x.shape[1]} samples and series[0] "
                                 f"{series[0].shape[1]}: expected the same number")
    for i, j, diagonal in pairs:
        if diagonal and series[i].shape[0] != series[j].shape[0]:
            raise DimensionError(f"diagonal products pair row k of series[{i}] with row k of "
                                 f"series[{j}]: they have {series[i].shape[0]} and "
                                 f"{series[j].shape[0]} rows; expected the same number")
    return _blocked(series, pairs, low, high)


def _blocked(series: list[np.ndarray], pairs: list[tuple[int, int, bool]], low: int,
             high: int) -> list[np.ndarray]:
    """The blocked-transform sums of every pair (module notes), validated series."""
    span, T = high - low, series[0].shape[1]
    rows = [x.shape[0] for x in series]
    shapes = [(rows[i], span + 1) if diagonal else (rows[i], rows[j], span + 1)
              for i, j, diagonal in pairs]
    empty = [T == 0 or rows[i] == 0 or rows[j] == 0 for i, j, _ in pairs]
    if any(empty):                # (sums over nothing: zeros, and the others as usual)
        kept = [pair for pair, none in zip(pairs, empty, strict=True) if not none]
        found = iter(_blocked(series, kept, low, high) if kept else [])
        return [np.zeros(shape) if none else next(found)
                for shape, none in zip(shapes, empty, strict=True)]
    F = _transform_size(span, T)
    B = F - span
    blocks = -(-T // B)
    frequencies = F // 2 + 1
    # a series' products with itself from the one role its other products transform it in
    # (blocks or windows, :func:`_own_products`), else from both roles
    others = [(i, j) for i, j, diagonal in pairs if not (diagonal and i == j)]
    lead, trail = {i for i, _ in others}, {j for _, j in others}
    own = [("a" if i in lead else "b") if diagonal and i == j and (i in lead) != (i in trail)
           and low <= 0 <= high else None for i, j, diagonal in pairs]
    leading = sorted({i for (i, _, _), role in zip(pairs, own, strict=True) if role != "b"})
    trailing = sorted({j for (_, j, _), role in zip(pairs, own, strict=True) if role != "a"})
    # groups of blocks whose buffers stay in cache, reused (fresh large arrays cost page
    # faults), of at least _MIN_GROUP blocks (the products' matrices are blocks wide)
    values = sum(rows[i] for i in leading) + sum(rows[j] for j in trailing)
    group = min(blocks, max(_MIN_GROUP, _GROUP_VALUES // (values * F)))
    G = [np.zeros((frequencies, shape[0]) if role else (frequencies,) + shape[:-1],
                  float if role else complex) for shape, role in zip(shapes, own, strict=True)]
    product = [np.empty_like(acc) for acc in G]
    a_in = {i: np.zeros((rows[i], group, F)) for i in leading}    # zero-padded beyond B
    b_pad = {j: np.zeros((rows[j], group * B + span)) for j in trailing}
    # the transforms frequency first: per frequency a (rows x blocks) matrix for BLAS, written
    # there by the transforms (along the first axis of transposed views; copying them from
    # frequency-last arrays cost as much as a tenth of the transforms)
    hat = {("a", i): np.empty((frequencies, rows[i], group), complex) for i in leading}
    hat |= {("b", j): np.empty((frequencies, rows[j], group), complex) for j in trailing}
    for c0 in range(0, blocks, group):
        g = min(group, blocks - c0)
        start = c0 * B
        stop = min(T, start + g * B)
        for i in leading:             # blocks of B samples
            x, buffer = series[i], a_in[i]
            whole = (stop - start) // B
            buffer[:, :whole, :B] = x[:, start:start + whole * B].reshape(rows[i], whole, B)
            if whole < g:             # the last, partial block
                buffer[:, whole, :B] = 0.0
                buffer[:, whole, :stop - start - whole * B] = x[:, start + whole * B:stop]
            out = hat["a", i][:, :, :g]
            np.fft.rfft(buffer[:, :g].transpose(2, 0, 1), axis=0, out=out)
            np.conjugate(out, out=out)
        # the samples of b that the blocks' lags reach: b[start - high .. stop - low)
        first = start - high
        for j in trailing:            # block c's segment: samples first + c B .. + F
            x = series[j]
            if first < 0 or first + g * B + span > T:     # zeros beyond the series
                x = b_pad[j]
                x[:] = 0.0
                low_b, high_b = max(0, first), min(T, first + g * B + span)
                if low_b < high_b:
                    x[:, low_b - first:high_b - first] = series[j][:, low_b:high_b]
            else:
                x = x[:, first:]
            np.fft.rfft(_strided(x, g, F, B).transpose(2, 0, 1), axis=0,
                        out=hat["b", j][:, :, :g])
        for (i, j, diagonal), acc, out, role in zip(pairs, G, product, own, strict=True):
            if role:                  # |transform|^2 of the blocks (windows), summed
                parts = hat[role, i][:, :, :g].view(float)
                acc += np.einsum("fic,fic->fi", parts, parts)
            elif diagonal:
                acc += np.einsum("fic,fic->fi", hat["a", i][:, :, :g], hat["b", j][:, :, :g])
            else:   # one (rows_a x blocks) @ (blocks x rows_b) product per frequency
                np.matmul(hat["a", i][:, :, :g], hat["b", j][:, :, :g].transpose(0, 2, 1),
                          out=out)
                acc += out
    # circular correlation r(m) = sum_i a_i s_{i + m}, m = 0 .. span, is the lag d = high - m
    return [np.moveaxis(np.fft.irfft(acc, F, axis=0)[span::-1], 0, -1) if role is None
            else _own_products(np.fft.irfft(acc, F, axis=0), series[i], role, B, blocks, low,
                               high)
            for (i, _, _), acc, role in zip(pairs, G, own, strict=True)]


def _own_products(circular: np.ndarray, x: np.ndarray, role: str, B: int, blocks: int,
                  low: int, high: int) -> np.ndarray:
    """``sum_k x_k x_{k-d}`` (rows, lags ``low .. high``, ``low <= 0 <= high``) from
    ``circular`` (F, rows): the circular autocorrelations of :func:`_blocked`'s blocks
    (``role="a"``: ``B`` samples each, zero-padded) or windows (``"b"``: ``F`` samples from
    ``c B - high``), summed.

    A block's lags up to ``F - B`` do not wrap: only the pairs across the ``blocks - 1``
    boundaries are missing (the first ``D`` samples of each block with the last ``D`` of the
    one before, ``D`` the largest lag).  A window's wrap around its ends is subtracted (its
    first ``D`` samples with its last ``D``), and so are the pairs inside the ``F - B``
    samples that two windows share (counted twice).  Each set of edge pairs is one product
    of the edges' samples summed over the blocks, whose diagonals hold the lags."""
    F = circular.shape[0]
    D = max(-low, high)
    # block (window) c from sample c B (c B - high) of x; each edge gathered from x with zeros
    # outside it (no padded copy of x), its diagonals read in place: with a stacked 20 + 24
    # rows of 2e4 samples the set took 11.4 against 12.0 ms (order alternated, best of 60)
    starts = np.arange(blocks) * B - (high if role == "b" else 0)
    own = circular[:D + 1].T.copy()
    lags = np.arange(D + 1)
    if role == "a" and blocks > 1:        # pairs across the boundaries of the blocks
        own += _diagonals(_edge_products(x, starts[1], starts[1] - D, B, D, blocks - 1),
                          lags - D)
    elif role == "b":                     # less the wrap, and the F - B samples shared
        own -= _diagonals(_edge_products(x, starts[0], starts[0] + F - D, B, D, blocks),
                          lags - D)
        if blocks > 1:
            span = F - B
            shared = _edge_products(x, starts[1], starts[1], B, span, blocks - 1)
            own -= _diagonals(shared, lags)
    return own[:, np.abs(np.arange(low, high + 1))]


def _edge_products(x: np.ndarray, first: int, second: int, step: int, width: int,
                   count: int) -> np.ndarray:
    """``sum_c a_c b_c^T`` (rows, width, width) over ``count`` edges ``a_c``, ``width``
    samples of ``x`` from ``first + c step`` (``b_c``: from ``second + c step``), zero
    outside ``x``: the edges gathered into small contiguous arrays (BLAS products)."""

    def edges(at: int) -> np.ndarray:                    # (rows, count, width)
        index = at + step * np.arange(count)[:, None] + np.arange(width)[None, :]
        outside = (index < 0) | (index >= x.shape[1])
        out = np.asarray(x[:, np.clip(index, 0, x.shape[1] - 1)], dtype=float)  # double sums
        out[:, outside] = 0.0
        return out

    a = edges(first)
    return a.transpose(0, 2, 1) @ (a if second == first else edges(second))


def _diagonals(M: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The sums of the diagonals ``i - j = offset`` of each (n, n) matrix of ``M``, for each of
    ``offsets`` (zero beyond the matrix), shape (rows, len(offsets)): each diagonal a strided
    slice of the flattened matrices (the few diagonals needed, not all ``2 n - 1`` of a
    skewed copy three matrices wide)."""
    rows, n, _ = M.shape
    flat = M.reshape(rows, n * n)
    out = np.zeros((rows, len(offsets)))
    for column, k in enumerate(int(k) for k in offsets):
        if abs(k) < n:     # (i, i - k) from row max(k, 0), column max(-k, 0): every n + 1
            out[:, column] = flat[:, max(k, 0) * n + max(-k, 0)::n + 1][:, :n - abs(k)].sum(
                axis=1)
    return out


def _strided(flat: np.ndarray, count: int, width: int, step: int) -> np.ndarray:
    """``count`` windows of ``width`` samples every ``step`` samples of each row of ``flat``
    (which holds them all), shape (rows, count, width), a read-only view."""
    stride = flat.strides[1]
    return np.lib.stride_tricks.as_strided(flat, (flat.shape[0], count, width),
                                           (flat.strides[0], step * stride, stride),
                                           writeable=False)


def _real_series(name: str, x: np.ndarray) -> np.ndarray:
    """``x`` as an array of real series (rows, samples); complex values are refused, not
    silently made real (the sums here are of real products)."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise DimensionError(f"{name} has shape {x.shape}: expected two-dimensional series "
                             f"(rows, samples)")
    if np.iscomplexobj(x):
        raise ParameterError(f"{name} is complex ({x.dtype}): expected real series")
    return x


@dataclass(frozen=True, eq=False)
class PieceLayout:
    """Pieces of ``lengths`` samples laid end to end, each after ``gap`` zeros (and the last
    followed by ``gap`` zeros): lagged products of up to ``gap`` lags stay within a piece, and
    a causal filter of up to ``gap`` taps starts each piece from rest.

    Examples
    --------
    >>> import numpy as np
    >>> layout = PieceLayout(np.array([3, 2]), gap=1)
    >>> layout.place([np.array([[1.0, 2.0, 3.0]]), np.array([[4.0, 5.0]])])
    array([[0., 1., 2., 3., 0., 4., 5., 0.]])
    """

    lengths: np.ndarray
    gap: int

    def __post_init__(self):
        if self.gap < 1 or np.any(self.lengths < 1):
            raise ParameterError(f"pieces of {self.lengths} samples with gaps of {self.gap}: "
                             f"expected pieces of at least one sample and gaps of at least one")

    @cached_property
    def starts(self) -> np.ndarray:
        """First sample of each piece."""
        return self.gap + np.concatenate([[0], np.cumsum(self.lengths + self.gap)[:-1]])

    @cached_property
    def size(self) -> int:
        return int(self.lengths.sum() + (self.lengths.size + 1) * self.gap)

    @cached_property
    def mask(self) -> np.ndarray:
        """``True`` on the samples of the pieces, shape (size,)."""
        return self.piece >= 0

    @cached_property
    def piece(self) -> np.ndarray:
        """The piece of each sample, ``-1`` in the gaps, shape (size,)."""
        index = np.full(self.size, -1)
        for p, (start, length) in enumerate(zip(self.starts, self.lengths, strict=True)):
            index[start:start + length] = p
        return index

    def place(self, series: list[np.ndarray]) -> np.ndarray:
        """The pieces ``series`` (each (rows, length)) laid out, shape (rows, size)."""
        out = np.zeros((series[0].shape[0], self.size))
        for start, s in zip(self.starts, series, strict=True):
            out[:, start:start + s.shape[1]] = s
        return out

    def sums(self, x: np.ndarray) -> np.ndarray:
        """Per piece, the sum of its samples of the laid-out ``x``: shape (rows, pieces)."""
        bounds = np.stack([self.starts, self.starts + self.lengths], axis=1).ravel()
        return np.add.reduceat(x, bounds, axis=1)[:, ::2]      # [start, end), not the gaps

    def centred(self, x: np.ndarray) -> np.ndarray:
        """The laid-out ``x`` with each piece's mean removed (zeros stay in the gaps)."""
        out = np.array(x, dtype=float)
        self._subtract_means(out)
        return out

    def centre(self, x: np.ndarray) -> None:
        """:meth:`centred` in place, and the gaps set to zero (whatever they held, such as the
        tails a filter carries past each piece): no copy of ``x``."""
        self._subtract_means(x)
        x[:, :self.starts[0]] = 0.0
        for start, length in zip(self.starts, self.lengths, strict=True):
            x[:, start + length:start + length + self.gap] = 0.0

    def _subtract_means(self, x: np.ndarray) -> None:
        """Each piece's mean subtracted from its samples of ``x``, in place (piece by piece: a
        mean per sample, spread with ``np.repeat``, cost four passes over the data)."""
        means = self.sums(x) / self.lengths
        for p, (start, length) in enumerate(zip(self.starts, self.lengths, strict=True)):
            x[:, start:start + length] -= means[:, p:p + 1]

    def window(self, x: np.ndarray, offset: int, width: int, *, from_end: bool = False
               ) -> np.ndarray:
        """Per piece, the ``width`` samples from ``offset`` after its first sample (from its
        end, one past its last, when ``from_end``): shape (rows, pieces, width)."""
        anchor = self.starts + (self.lengths if from_end else 0)
        return x[:, anchor[:, None] + offset + np.arange(width)[None, :]]


def _checked_series(series: list[np.ndarray], max_lag: int
                    ) -> tuple[list[np.ndarray], int]:
    """The trajectories as real (rows, samples) arrays of one row count, and ``max_lag``;
    bad ones refused by name (laid into one real array, a complex series would silently lose
    its imaginary part and rows of another count fail with numpy's broadcasting message)."""
    max_lag = check_integer("max_lag", max_lag, minimum=0)
    if len(series) == 0:
        raise ParameterError("series is empty: expected at least one (rows, samples) array")
    series = [_real_series(f"series[{k}]", s) for k, s in enumerate(series)]
    rows = series[0].shape[0]
    for k, s in enumerate(series):
        if s.shape[0] != rows:
            raise DimensionError(f"series[{k}] has {s.shape[0]} rows and series[0] {rows}: "
                                 f"expected the same signals in every trajectory")
    return series, max_lag


def autocovariances(series: list[np.ndarray], max_lag: int) -> np.ndarray:
    """Per row, ``sum_k s_k s_{k-tau}`` for ``tau = 0 .. max_lag``, summed over the
    trajectories ``series`` (lags within a trajectory; means not removed): one
    :func:`lag_products` call on the trajectories laid end to end, ``max_lag`` zeros apart.

    Returns
    -------
    ndarray, shape (max_lag + 1, rows)

    Raises
    ------
    ParameterError
        No series, ``max_lag`` not an integer >= 0, or a complex series.
    DimensionError
        A series that is not two-dimensional, or with another number of rows than the first.

    Examples
    --------
    >>> s = [np.array([[1.0, 2.0, 3.0]]), np.array([[4.0]])]
    >>> autocovariances(s, 2)[:, 0]                     # 1+4+9+16, 1*2+2*3, 1*3
    array([30.,  8.,  3.])
    """
    series, max_lag = _checked_series(series, max_lag)
    rows = series[0].shape[0]
    laid = np.zeros((rows, sum(s.shape[1] + max_lag for s in series)))
    at = 0
    for s in series:
        laid[:, at:at + s.shape[1]] = s
        at += s.shape[1] + max_lag
    return lag_products(laid, laid, 0, max_lag, diagonal=True).T


def autocorrelations(series: list[np.ndarray], max_lag: int) -> np.ndarray:
    """Per row, the autocorrelation at lags ``0 .. max_lag`` pooled over the pieces ``series``
    (each centred on its own mean, lags within a piece; pieces without samples add nothing):
    the residual checks' Bartlett variances and prewhitening filters and the memory of the
    instrumental-variable residuals (:func:`~dmdidc.regression.instrumental.residual_memory`).

    Returns
    -------
    ndarray, shape (max_lag + 1, rows)
        Lag 0 is 1 (0 for a constant row); all zeros without samples.

    Raises
    ------
    ParameterError, DimensionError
        As :func:`autocovariances`.

    Examples
    --------
    >>> x = np.array([[1.0, -1.0, 1.0, -1.0]])
    >>> autocorrelations([x, x + 5.0], 2)[:, 0]        # each piece centred: -1, 1, -1, 1
    array([ 1.  , -0.75,  0.5 ])
    """
    cov = centred_autocovariances(series, max_lag)[0]
    return cov / np.where(cov[0] > 0, cov[0], 1.0)


def centred_autocovariances(series: list[np.ndarray], max_lag: int
                            ) -> tuple[np.ndarray, np.ndarray | None, PieceLayout | None]:
    """The sums behind :func:`autocorrelations` (validated ``series``): per row,
    ``sum_k c_k c_{k-tau}`` of the pieces each centred on its own mean (``c``), pooled,
    shape (max_lag + 1, rows); and the centred pieces laid out (``max_lag + 1`` zeros
    apart) with their layout, for :func:`trimmed_autocovariances` (``None`` without
    samples).

    Raises
    ------
    ParameterError, DimensionError
        As :func:`autocovariances`.
    """
    series, max_lag = _checked_series(series, max_lag)
    kept = [s for s in series if s.shape[1] > 0]
    if not kept:
        return np.zeros((max_lag + 1, series[0].shape[0])), None, None
    layout = PieceLayout(np.array([s.shape[1] for s in kept]), gap=max_lag + 1)
    x = layout.place(kept)
    layout.centre(x)                                      # our own copy: in place
    return lag_products(x, x, 0, max_lag, diagonal=True).T, x, layout


def trimmed_autocovariances(x: np.ndarray, layout: PieceLayout, pooled: np.ndarray,
                            trim: int, max_lag: int) -> tuple[np.ndarray, int]:
    """:func:`centred_autocovariances` of the same pieces less their first and last
    ``trim`` samples (each re-centred on its own mean; pieces left with fewer than two
    samples out), from those of the whole pieces: the pairs the cut removes and the change
    of means are a few products per lag, not a second pass of transforms.

    Parameters
    ----------
    x : ndarray, shape (rows, layout.size)
        The centred pieces laid out (:func:`centred_autocovariances`), ``layout.gap >
        max_lag``.
    layout : PieceLayout
    pooled : ndarray, shape (>= max_lag + 1, rows)
        Their pooled lagged sums.
    trim : int
    max_lag : int

    Returns
    -------
    sums : ndarray, shape (max_lag + 1, rows)
    samples : int
        The samples of the trimmed pieces.

    Raises
    ------
    ParameterError
        ``trim`` or ``max_lag`` not an integer >= 0, or a layout whose gaps a lag crosses.
    DimensionError
        ``x`` or ``pooled`` not of the layout's and each other's shape.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pieces = [rng.standard_normal((2, 40)), rng.standard_normal((2, 11))]
    >>> full, x, layout = centred_autocovariances(pieces, 3)
    >>> cut, count = trimmed_autocovariances(x, layout, full, 4, 3)
    >>> direct = centred_autocovariances([p[:, 4:-4] for p in pieces], 3)[0]
    >>> count, bool(np.allclose(cut, direct))
    (35, True)
    """
    trim = check_integer("trim", trim, minimum=0)
    max_lag = check_integer("max_lag", max_lag, minimum=0)
    if layout.gap <= max_lag:
        raise ParameterError(f"layout.gap is {layout.gap}: expected more than max_lag "
                             f"({max_lag}), so that no lagged pair reaches another piece")
    if x.ndim != 2 or x.shape[1] != layout.size or pooled.ndim != 2 \
            or pooled.shape[0] <= max_lag or pooled.shape[1] != x.shape[0]:
        raise DimensionError(f"x has shape {x.shape} and pooled {pooled.shape}: expected "
                             f"(rows, {layout.size}) (the layout's size) and (at least "
                             f"{max_lag + 1}, rows)")
    starts, lengths = layout.starts, layout.lengths
    cut = lengths - 2 * trim
    kept = cut >= 2
    if not kept.any():
        return np.zeros((max_lag + 1, x.shape[0])), 0
    out = np.array(pooled[:max_lag + 1], dtype=float)
    # the pairs (k, k - tau) of a piece not both in its kept samples: those whose earlier
    # sample is among its first trim (all of a piece left out), and those whose later one is
    # among its last trim with the earlier one kept (beyond a piece, x is zero: the gaps)
    heads = np.concatenate([s + np.arange(trim if keep else n)
                            for s, n, keep in zip(starts, lengths, kept, strict=True)])
    tails = np.concatenate([s + n - trim + np.arange(trim if keep else 0)
                            for s, n, keep in zip(starts, lengths, kept, strict=True)])
    floors = np.concatenate([np.full(trim if keep else 0, s + trim)
                             for s, keep in zip(starts, kept, strict=True)]).astype(int)
    lags = np.arange(max_lag + 1)
    # every lag at once, the edges in chunks of (rows, edges, lags) of at most _GROUP_VALUES
    chunk = max(1, _GROUP_VALUES // max(x.shape[0] * (max_lag + 1), 1))
    for at in range(0, heads.size, chunk):
        edge = heads[at:at + chunk]
        out -= np.einsum("rel,re->lr", x[:, edge[:, None] + lags], x[:, edge])
    for at in range(0, tails.size, chunk):
        edge, floor = tails[at:at + chunk], floors[at:at + chunk]
        earlier = edge[:, None] - lags
        inside = earlier >= floor[:, None]
        out -= np.einsum("rel,re->lr", x[:, np.where(inside, earlier, 0)] * inside,
                         x[:, edge])
    # re-centred: sum_k (t_k - mu)(t_{k-tau} - mu) = the raw sums - mu (the sums of t over
    # k >= tau and k < n - tau) + (n - tau) mu^2, per kept piece (t, n samples, mean mu)
    first, count = starts[kept] + trim, cut[kept]
    sums = np.add.reduceat(x, np.stack([first, first + count], axis=1).ravel(),
                           axis=1)[:, ::2]                              # (rows, pieces)
    means = sums / count
    width = min(max_lag, int(count.max()))
    steps = np.arange(width)
    ahead = x[:, first[:, None] + steps] * (steps < count[:, None])         # t_0 .. t_{w-1}
    behind = x[:, (first + count - 1)[:, None] - steps] * (steps < count[:, None])
    # sum_{k < tau} t_k and sum_{k >= n - tau} t_k (the whole piece once tau >= n)
    ends = np.zeros((x.shape[0], means.shape[1], max_lag + 1))
    ends[:, :, 1:width + 1] = np.cumsum(ahead, axis=2) + np.cumsum(behind, axis=2)
    ends[:, :, width + 1:] = 2.0 * sums[:, :, None]
    pairs = np.maximum(count[:, None] - lags[None, :], 0)                   # (pieces, lags)
    out -= np.einsum("rp,rpl->lr", means, 2.0 * sums[:, :, None] - ends)
    out += pairs.T @ (means ** 2).T
    return out, int(count.sum())
