"""Sums of lagged products ``sum_k a_i,k b_j,k-d`` of many series over a range of lags.

The regression's long-run covariances and the residual checks correlate tens of series with
tens of signals at tens of lags.  One matrix product per lag costs ``rows_a x rows_b x lags``
multiply-adds per sample.  :func:`lag_products` instead cuts ``a`` into blocks of ``B`` samples
and pairs each block with the ``B + span`` samples of ``b`` that its lags reach: their circular
correlation of length ``F >= B + span`` is the linear one at every lag of the range, and the
transforms add over blocks, so each frequency takes one small complex matrix product
(``rows_a x blocks`` by ``blocks x rows_b``).  That is about ``4 rows_a rows_b F / B`` flops per
sample whatever the number of lags, plus the transforms (``(rows_a + rows_b) log F``).

Several trajectories are laid end to end with at least as many zeros between them as the
largest lag (:func:`autocovariances`): products across the gap vanish, so one call pools them.
(The routine lives in the regression layer so that :mod:`dmdidc.regression.instrumental`, which
cannot import :mod:`dmdidc.inference`, shares it with the residual checks.)
"""

from __future__ import annotations

import numpy as np

from dmdidc.errors import DimensionError, ParameterError

__all__ = ["lag_products", "autocovariances"]

#: Lag spans below this: the diagonal products directly (a transform per row costs about as
#: much as two dozen products).
_DIRECT_SPAN = 20
#: Samples (rows x transform length) of one group of blocks: its buffers and transforms stay
#: in the L2 cache.
_GROUP_VALUES = 1 << 16


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
    F = _transform_size(span, T)
    B = F - span
    blocks = -(-T // B)
    frequencies = F // 2 + 1
    G = np.zeros((frequencies, rows_a) if diagonal else (frequencies, rows_a, rows_b), complex)
    # groups of blocks whose buffers stay in cache, reused: fresh large arrays cost page faults
    group = min(blocks, max(1, _GROUP_VALUES // ((rows_a + rows_b) * F)))
    a_flat = np.zeros((rows_a, group * B))
    a_blocks = np.zeros((rows_a, group, F))                  # zero-padded beyond B samples
    b_flat = np.zeros((rows_b, group * B + span))
    for c0 in range(0, blocks, group):
        g = min(group, blocks - c0)
        start = c0 * B
        stop = min(T, start + g * B)
        a_flat[:, :stop - start] = a[:, start:stop]
        a_flat[:, stop - start:] = 0.0
        a_blocks[:, :g, :B] = a_flat[:, :g * B].reshape(rows_a, g, B)
        # the samples of b that the block's lags reach: b[start - high .. stop - low)
        first, last = start - high, start - high + g * B + span
        low_b, high_b = max(0, first), min(T, last)
        b_flat[:] = 0.0
        if low_b < high_b:
            b_flat[:, low_b - first:high_b - first] = b[:, low_b:high_b]
        step = b_flat.strides[1]                      # block c's segment: b_flat[c B : c B + F]
        segments = np.lib.stride_tricks.as_strided(
            b_flat, (rows_b, g, F), (b_flat.strides[0], B * step, step), writeable=False)
        a_hat = np.fft.rfft(a_blocks[:, :g], axis=2)
        np.conjugate(a_hat, out=a_hat)
        b_hat = np.fft.rfft(segments, axis=2)
        if diagonal:
            G += np.einsum("icf,icf->fi", a_hat, b_hat)
        else:   # one (rows_a x blocks) @ (blocks x rows_b) product per frequency
            G += a_hat.transpose(2, 0, 1) @ b_hat.transpose(2, 1, 0)
    # circular correlation r(m) = sum_i a_i s_{i + m}, m = 0 .. span, is the lag d = high - m
    r = np.fft.irfft(G, F, axis=0)[span::-1]
    return np.moveaxis(r, 0, -1)


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


def autocovariances(series: list[np.ndarray], max_lag: int) -> np.ndarray:
    """Per row, ``sum_k s_k s_{k-tau}`` for ``tau = 0 .. max_lag``, summed over the
    trajectories ``series`` (lags within a trajectory; means not removed): one
    :func:`lag_products` call on the trajectories laid end to end, ``max_lag`` zeros apart.

    Returns
    -------
    ndarray, shape (max_lag + 1, rows)

    Examples
    --------
    >>> s = [np.array([[1.0, 2.0, 3.0]]), np.array([[4.0]])]
    >>> autocovariances(s, 2)[:, 0]                     # 1+4+9+16, 1*2+2*3, 1*3
    array([30.,  8.,  3.])
    """
    rows = series[0].shape[0]
    laid = np.zeros((rows, sum(s.shape[1] + max_lag for s in series)))
    at = 0
    for s in series:
        laid[:, at:at + s.shape[1]] = s
        at += s.shape[1] + max_lag
    return lag_products(laid, laid, 0, max_lag, diagonal=True).T
