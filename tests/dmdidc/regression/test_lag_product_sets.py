"""Lagged products by blocked FFT equal the direct sums; the piece layout keeps pieces apart."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmdidc.errors import ParameterError
from dmdidc.regression.lag_products import PieceLayout, lag_product_sets, lag_products


def _direct(a, b, low, high):
    T = a.shape[1]
    out = np.zeros((a.shape[0], b.shape[0], high - low + 1))
    for d in range(low, high + 1):
        first, stop = max(0, d), min(T, T + d)
        if first < stop:
            out[:, :, d - low] = a[:, first:stop] @ b[:, first - d:stop - d].T
    return out


@pytest.mark.parametrize("seed", range(6))
def test_lag_products_equal_the_direct_sums(seed):
    rng = np.random.default_rng(seed)
    for T in (1, 7, 64, int(rng.integers(100, 3000))):
        low = int(rng.integers(-45, 10))
        high = low + int(rng.integers(0, 70))
        a = rng.standard_normal((3, T)) + rng.normal()
        b = rng.standard_normal((2, T)) * 10.0
        expected = _direct(a, b, low, high)
        scale = np.sqrt(np.sum(a ** 2) * np.sum(b ** 2))
        np.testing.assert_allclose(lag_products(a, b, low, high), expected, atol=1e-13 * scale)
        auto = lag_products(a, a, low, high, diagonal=True)       # few and many lags
        np.testing.assert_allclose(auto, np.einsum("iid->id", _direct(a, a, low, high)),
                                   atol=1e-13 * np.sum(a ** 2))


def test_lag_products_refuse_an_empty_lag_range():
    with pytest.raises(ParameterError, match="low <= high"):
        lag_products(np.ones((1, 5)), np.ones((1, 5)), 3, 2)


def test_layout_keeps_pieces_apart_for_lags_up_to_the_gap():
    rng = np.random.default_rng(3)
    pieces = [rng.standard_normal((2, K)) for K in (5, 40, 1, 17)]
    layout = PieceLayout(np.array([p.shape[1] for p in pieces]), gap=6)
    laid = layout.place(pieces)
    pooled = sum(_direct(p, p, -6, 6) for p in pieces)
    np.testing.assert_allclose(lag_products(laid, laid, -6, 6), pooled, atol=1e-12)
    np.testing.assert_allclose(layout.sums(laid), np.stack([p.sum(axis=1) for p in pieces], 1))
    centred = layout.centred(laid)
    assert np.allclose(layout.sums(centred), 0.0) and np.all(centred[:, ~layout.mask] == 0.0)
    np.testing.assert_array_equal(layout.window(laid, -2, 2, from_end=True)[:, 1],
                                  pieces[1][:, -2:])
    with pytest.raises(ParameterError, match="gaps of at least one"):
        PieceLayout(np.array([3]), gap=0)


@pytest.mark.parametrize("N", [999, 1000])
def test_largest_robust_residual_is_the_median_based_z(N):
    from dmdidc.inference.residuals import largest_robust_residual

    rng = np.random.default_rng(N)
    E = rng.standard_t(3, size=(4, N))
    E[2] = 1.5                                      # a constant row: MAD zero
    E[2, 7] = 2.0
    centre = np.median(E, axis=1, keepdims=True)
    deviation = np.abs(E - centre)
    mad = 1.482602218505602 * np.median(deviation, axis=1, keepdims=True)
    rms = np.sqrt(np.mean(deviation ** 2, axis=1, keepdims=True))
    expected = np.max(deviation / np.where(mad > 0, mad, rms))
    assert largest_robust_residual(E) == pytest.approx(expected, rel=1e-14)
    assert largest_robust_residual(np.delete(E, 2, axis=0), constant_rows="tiny") == \
        pytest.approx(np.max(np.delete(deviation / np.where(mad > 0, mad, 1.0), 2, axis=0)),
                      rel=1e-14)


def test_lag_products_refuse_what_they_would_get_wrong():
    """Series of different lengths, diagonal products of different row counts, complex or
    one-dimensional series: a named error, not a truncation, a broadcast or a dropped
    imaginary part."""
    from dmdidc.errors import DimensionError

    a = np.ones((2, 50))
    for b, diagonal, what in [(np.ones((2, 60)), False, "samples"),
                              (np.ones((2, 40)), True, "samples"),
                              (np.ones((1, 50)), True, "rows"),
                              (np.ones(50), False, "two-dimensional")]:
        for span in (3, 30):                       # the direct and the transform paths
            with pytest.raises(DimensionError, match=what):
                lag_products(a, b, 0, span, diagonal=diagonal)
    with pytest.raises(ParameterError, match="real"):
        lag_products(a * 1j, a, 0, 3, diagonal=True)


@pytest.mark.parametrize("seed", range(4))
def test_lag_products_of_single_precision_series_are_double_sums(seed):
    """float32 series give the float64 sums of their values on both paths (few and many
    lags on the diagonal), as the transforms do."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((3, 3000)) + 5.0).astype(np.float32)
    for high in (4, 40):
        expected = np.einsum("iid->id", _direct(a.astype(float), a.astype(float), 0, high))
        got = lag_products(a, a, 0, high, diagonal=True)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * expected.max())


@pytest.mark.parametrize("seed", range(3))
def test_sets_of_single_precision_series_are_double_sums(seed):
    """float32 series in a set (the residuals with themselves and the signals, the signals
    with themselves: every own product from the blocks' or windows' spectra with their edges
    corrected) give the float64 sums of their values."""
    rng = np.random.default_rng(seed)
    e = (100.0 * rng.standard_normal((3, 5000)) + 7.0).astype(np.float32)
    s = (50.0 * rng.standard_normal((2, 5000)) - 3.0).astype(np.float32)
    auto, cross, own = lag_product_sets([e, s], [(0, 0, True), (0, 1, False), (1, 1, True)],
                                        -12, 30)
    e, s = e.astype(float), s.astype(float)
    for got, expected in ((auto, np.einsum("iid->id", _direct(e, e, -12, 30))),
                          (cross, _direct(e, s, -12, 30)),
                          (own, np.einsum("iid->id", _direct(s, s, -12, 30)))):
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(1, 120), min_size=1, max_size=6),
       gap=st.integers(1, 40), seed=st.integers(0, 2 ** 32 - 1),
       rows=st.tuples(st.integers(1, 4), st.integers(1, 4)), data=st.data())
def test_pooled_lag_products_over_any_layout_equal_the_sums_per_piece(lengths, gap, seed, rows,
                                                                      data):
    """Any pieces (shorter than the lags too), any lag range within the gap, both paths:
    the pooled products equal the direct sums piece by piece."""
    rng = np.random.default_rng(seed)
    low = data.draw(st.integers(-gap, gap), label="low")
    high = data.draw(st.integers(low, gap), label="high")
    A = [rng.standard_normal((rows[0], K)) + 3.0 for K in lengths]
    B = [rng.standard_normal((rows[1], K)) for K in lengths]
    layout = PieceLayout(np.array(lengths), gap=gap)
    a, b = layout.place(A), layout.place(B)
    pooled = sum(_direct(x, y, low, high) for x, y in zip(A, B, strict=True))
    scale = np.sqrt(np.sum(a ** 2) * np.sum(b ** 2))
    np.testing.assert_allclose(lag_products(a, b, low, high), pooled, atol=1e-13 * scale)
    square = layout.place([x[:rows[1]] if rows[0] >= rows[1] else
                           np.vstack([x, np.zeros((rows[1] - rows[0], x.shape[1]))])
                           for x in A])
    np.testing.assert_allclose(lag_products(square, b, low, high, diagonal=True),
                               np.einsum("iid->id", _direct(square, b, low, high)),
                               atol=1e-13 * scale)


def test_lag_products_over_many_groups_of_blocks_equal_the_direct_sums():
    """Enough rows and samples for many cache-sized groups of blocks, the last one partial
    (the buffers are reused from group to group: nothing of one may leak into the next)."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((20, 20011)) + 1.0, rng.standard_normal((18, 20011))
    scale = np.sqrt(np.sum(a ** 2) * np.sum(b ** 2))
    np.testing.assert_allclose(lag_products(a, b, -30, 30), _direct(a, b, -30, 30),
                               atol=1e-13 * scale)
    np.testing.assert_allclose(lag_products(a[:18], b, -5, 40, diagonal=True),
                               np.einsum("iid->id", _direct(a[:18], b, -5, 40)),
                               atol=1e-13 * scale)


@pytest.mark.parametrize("seed", range(5))
def test_product_sets_equal_the_direct_sums_of_each_pair(seed):
    """Several products over one lag range, each series transformed once per role (several
    groups of blocks, the last partial, and series shorter than a transform): every pair's
    sums are its direct sums."""
    rng = np.random.default_rng(seed)
    T = int(rng.choice([70, 900, 20011]))
    low = -int(rng.integers(0, 45))
    high = int(rng.integers(max(low, 0), 40))
    e = rng.standard_normal((int(rng.integers(1, 21)), T)) + 1.0
    u, x = rng.standard_normal((3, T)), rng.standard_normal((int(rng.integers(1, 21)), T))
    pairs = [(0, 0, True), (0, 1, False), (1, 1, True), (0, 2, False), (2, 2, True)]
    series = [e, u, x]
    found = lag_product_sets(series, pairs, low, high)
    for (i, j, diagonal), got in zip(pairs, found, strict=True):
        direct = _direct(series[i], series[j], low, high)
        scale = np.sqrt(np.sum(series[i] ** 2) * np.sum(series[j] ** 2))
        expected = np.einsum("iid->id", direct) if diagonal else direct
        np.testing.assert_allclose(got, expected, atol=1e-13 * scale)


@pytest.mark.parametrize("seed", range(8))
def test_a_series_products_with_itself_from_its_one_role_are_the_direct_sums(seed):
    """The residuals lead (blocks) and a signal trails (windows) in their cross products: their
    own products come from those transforms alone, with the pairs across the blocks' edges,
    the windows' wrap and their shared samples corrected, whatever the length against the
    blocks (a last block nearly full, just started, or the only one) and the lag range."""
    from dmdidc.regression.lag_products import _transform_size

    rng = np.random.default_rng(seed)
    for _ in range(12):
        low, high = -int(rng.integers(0, 45)), int(rng.integers(0, 45))
        B = _transform_size(high - low, 10 ** 6) - (high - low)
        T = max(2, int(rng.integers(0, 5)) * B + int(rng.integers(-high - 3, 4)))
        e = rng.standard_normal((3, T)) + 2.0
        s = rng.standard_normal((2, T)) - 1.0
        auto_e, _, auto_s = lag_product_sets([e, s], [(0, 0, True), (0, 1, False),
                                                      (1, 1, True)], low, high)
        for got, x in ((auto_e, e), (auto_s, s)):
            expected = np.einsum("iid->id", _direct(x, x, low, high))
            np.testing.assert_allclose(got, expected, atol=1e-14 * np.sum(x * x))


def test_product_sets_refuse_what_they_would_get_wrong():
    from dmdidc.errors import DimensionError

    a = np.ones((2, 50))
    with pytest.raises(DimensionError, match="samples"):
        lag_product_sets([a, np.ones((2, 49))], [(0, 1, False)], 0, 30)
    with pytest.raises(DimensionError, match="rows"):
        lag_product_sets([a, np.ones((3, 50))], [(0, 1, True)], 0, 30)
    with pytest.raises(ParameterError, match="low <= high"):
        lag_product_sets([a], [(0, 0, True)], 3, 2)


def test_centre_in_place_is_centred_with_the_gaps_cleared():
    rng = np.random.default_rng(3)
    layout = PieceLayout(np.array([5, 1, 8]), gap=3)
    laid = layout.place([rng.standard_normal((2, K)) + 4.0 for K in (5, 1, 8)])
    dirty = laid + 7.0 * ~layout.mask                # a filter's tails in the gaps
    layout.centre(dirty)
    np.testing.assert_allclose(dirty, layout.centred(laid), atol=1e-14)


def test_a_product_with_a_series_without_rows_is_empty_and_leaves_the_others_alone():
    rng = np.random.default_rng(0)
    e = rng.standard_normal((2, 300))
    auto, cross = lag_product_sets([e, np.zeros((0, 300))], [(0, 0, True), (0, 1, False)],
                                   -3, 25)
    assert cross.shape == (2, 0, 29)
    np.testing.assert_allclose(auto, lag_products(e, e, -3, 25, diagonal=True), atol=1e-10)
