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


def _record(seed, samples=400):
    """A random stable plant's (X, U) with 3 states and 2 inputs around an operating point."""
    from dmdidc import DelayedPlant, random_excitation

    rng = np.random.default_rng(seed)
    plant = DelayedPlant.from_continuous(0.3 * rng.standard_normal((3, 3)) - 0.8 * np.eye(3),
                                         rng.standard_normal((3, 2)), [0.4, 1.1], 0.5)
    U = random_excitation(2, samples, rng=rng) + np.array([[45.0], [8.0]])
    return plant.simulate(np.zeros(3), U) + np.array([[60.0], [1.2], [3.5]]), U


@pytest.mark.parametrize("seed", range(6))
def test_array_mistakes_are_named_by_their_likeliest_cause(seed):
    from dmdidc import DMDidc

    X, U = _record(seed)
    fit = DMDidc(max_delay=3).fit
    with pytest.raises(DimensionError, match=r"one too many.*U\[:, :-1\]") as info:
        fit(X, np.hstack([U, U[:, -1:]]), dt=0.5)             # n = m + 1: not transposed
    assert "transposed" not in str(info.value)
    with pytest.raises(DimensionError, match=r"^X has shape \(401, 3\), which looks "
                                             r"transposed.*pass X.T"):
        fit(X.T, U, dt=0.5)
    with pytest.raises(DimensionError, match=r"^U has shape \(400, 2\), which looks "
                                             r"transposed.*pass U.T"):
        fit(X, U.T, dt=0.5)
    with pytest.raises(DimensionError, match="transposed"):
        fit(X.T, U.T, dt=0.5)
    assert fit(X, U, dt=0.5).delay.shape == (2,)               # the good case: no alarm


@pytest.mark.parametrize("seed", range(6))
def test_a_nan_is_located_and_the_missing_policies_named(seed):
    from dmdidc import DMDidc

    X, U = _record(seed)
    rng = np.random.default_rng(seed)
    i, k = int(rng.integers(0, 3)), int(rng.integers(1, 400))
    X[i, k] = X[i, k + 1:k + 3].sum() * np.nan
    X[:, -1] = np.where(seed % 2, np.inf, X[:, -1])           # a later fault is not the first
    with pytest.raises(NonFiniteError, match=rf"the first \(earliest\) at row {i}, column {k} "
                                             rf"\(signal {i}, sample {k}: NaN\).*"
                                             rf"missing='drop'.*--missing"):
        DMDidc(max_delay=3).fit(X, U, dt=0.5)
    X[i, k] = np.inf                                          # an overflow: not a lost sample
    with pytest.raises(NonFiniteError, match=rf"column {k} .*: infinite\)$"):
        DMDidc(max_delay=3).fit(X, U, dt=0.5)


@pytest.mark.parametrize("seed", range(6))
def test_a_constant_input_is_named_with_its_value_and_remedy(seed):
    from dmdidc import DMDidc, IdData
    from dmdidc.errors import InsufficientExcitationError

    X, U = _record(seed)
    held = seed % 2
    U[held] = [45.0, 8.0][held]
    with pytest.raises(InsufficientExcitationError, match=rf"input {held} \(row {held} of U\) "
                                                          rf"is constant \({U[held, 0]:g} in "
                                                          r"every sample\).*leave it out"):
        DMDidc(max_delay=3).fit(X, U, dt=0.5)
    data = IdData(X, U, dt=0.5, input_names=["valve", "heater"])
    with pytest.raises(InsufficientExcitationError, match=f"input '{['valve', 'heater'][held]}' "
                                                          f"is constant"):
        DMDidc(max_delay=3).fit(data)
