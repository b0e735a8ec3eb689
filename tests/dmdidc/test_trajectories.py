"""Validation of trajectory data (dmdidc.trajectories.check_data): one fused pass finds NaN,
infinities and magnitudes beyond the limit, for every layout of the array."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.errors import DimensionError, NonFiniteError
from dmdidc.trajectories import DATA_MAGNITUDE_LIMIT, check_data


def layouts(array):
    """The same values as C-ordered, Fortran-ordered and strided-view arrays, and as float32
    when they fit."""
    wide = np.zeros((array.shape[0], 2 * array.shape[1]))
    wide[:, ::2] = array
    fits = not np.any(np.abs(array) > 1e30)
    return [array, np.asfortranarray(array), wide[:, ::2]] + ([array.astype(np.float32)] if fits
                                                             else [])


@pytest.mark.parametrize("seed", range(20))
def test_bad_entries_are_refused_wherever_they_are(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((int(rng.integers(1, 6)), int(rng.integers(1, 300))))
    i, j = int(rng.integers(0, X.shape[0])), int(rng.integers(0, X.shape[1]))
    for bad, match in ((np.nan, "NaN or infinite"), (np.inf, "NaN or infinite"),
                       (-np.inf, "NaN or infinite"), (-3 * DATA_MAGNITUDE_LIMIT, "magnitude")):
        Y = X.copy()
        Y[i, j] = bad
        for array in layouts(Y)[:3]:
            with pytest.raises(NonFiniteError, match=f"U.*{match}|{match}") as info:
                check_data("U", array)
            assert str(info.value).startswith("U ")


@pytest.mark.parametrize("seed", range(20))
def test_good_data_pass_unchanged(seed):
    rng = np.random.default_rng(100 + seed)
    scale = 10.0 ** rng.uniform(-50, 99)
    X = scale * rng.standard_normal((int(rng.integers(1, 6)), int(rng.integers(0, 300))))
    for array in layouts(X):
        checked = check_data("X", array)
        assert checked.dtype == np.float64 and checked.shape == X.shape
        assert np.array_equal(checked, array.astype(np.float64))
    assert check_data("X", X) is X                       # no copy of valid float data
    assert check_data("X", [[1, 2, 3]]).dtype == np.float64


def test_wrong_dimensions_and_complex_entries_are_refused():
    with pytest.raises(DimensionError, match="2-dimensional"):
        check_data("X", np.zeros(5))
    with pytest.raises(ValueError, match="complex"):
        check_data("X", np.array([[1.0 + 1j]]))


class _Tagged(np.ndarray):
    """An ndarray subclass (as np.matrix or a unit-carrying array would be)."""


def test_array_subclasses_become_plain_arrays():
    checked = check_data("X", np.ones((2, 3)).view(_Tagged))
    assert type(checked) is np.ndarray and checked.shape == (2, 3)


@pytest.mark.parametrize("seed", range(6))
def test_long_data_read_in_pieces_refuse_bad_entries_in_any_piece(seed):
    """Arrays longer than one piece of the fused reduction (C- and Fortran-ordered) are
    refused wherever the bad entry sits (first, a middle or the last, partial piece) and
    pass unchanged when good."""
    from dmdidc.trajectories import _PIECE, _largest_magnitude

    rng = np.random.default_rng(200 + seed)
    rows = int(rng.integers(1, 5))
    X = rng.standard_normal((rows, 2 * _PIECE // rows + int(rng.integers(1, 1000))))
    for array in (X, np.asfortranarray(X)):
        assert _largest_magnitude(array) == np.max(np.abs(X))
        assert check_data("X", array) is array
    for flat in (0, int(rng.integers(_PIECE, 2 * _PIECE)), X.size - 1):
        i, j = np.unravel_index(flat, X.shape)
        for bad, match in ((np.nan, "NaN or infinite"), (-np.inf, "NaN or infinite"),
                           (-3 * DATA_MAGNITUDE_LIMIT, "magnitude")):
            Y = X.copy()
            Y[i, j] = bad
            for array in (Y, np.asfortranarray(Y)):
                with pytest.raises(NonFiniteError, match=match):
                    check_data("X", array)
