"""Validation of trajectory data (dmdidc.trajectories.check_data): one fused pass finds NaN,
infinities and magnitudes beyond the limit, for every layout of the array."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.errors import DimensionError, NonFiniteError
from dmdidc.trajectories import DATA_MAGNITUDE_LIMIT, DIAGNOSTIC_SAMPLES, check_data, subsample


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


# -- the diagnostic subsample (subsample) ----------------------------------------------------

def _indexed(lengths, n=2, m=1):
    """Trajectories of ``lengths`` input samples whose entries are their own sample index and
    trajectory number (row 0: the trajectory, row 1: the sample), so pieces say where they
    came from."""
    out = []
    for t, K in enumerate(lengths):
        X = np.vstack([np.full(K + 1, float(t)), np.arange(K + 1.0)] + [np.zeros(K + 1)] * (n - 2))
        out.append((X, np.vstack([np.arange(float(K))] * m)))
    return out


@pytest.mark.parametrize(("count", "K"), [(100, 300), (300, 100), (1000, 50), (70, 290)])
def test_a_subsample_of_many_experiments_keeps_whole_ones_spread_over_the_indexed(count, K):
    """Audit finding: every experiment was cut into 10 pieces (100 x 300 -> 1000 pieces of 20
    samples), too short for the checks' windows.  Short experiments are kept whole, chosen
    evenly: the kept share of every stretch of the record is the budget's."""
    data = _indexed([K] * count)
    pieces, _, scale, whole = subsample(data, None, max_delay=4)
    kept = sum(U.shape[1] for _, U in pieces)
    assert whole.all() and all(U.shape[1] == K for _, U in pieces)
    assert abs(kept - DIAGNOSTIC_SAMPLES) <= K and scale == count * K / kept
    chosen = np.array([X[0, 0] for X, _ in pieces])
    fraction = DIAGNOSTIC_SAMPLES / (count * K)
    # every run of 10 consecutive experiments holds its share, to one experiment
    for start in range(0, count - 10, 10):
        inside = np.count_nonzero((chosen >= start) & (chosen < start + 10))
        assert abs(inside - 10 * fraction) <= 1.0


@pytest.mark.parametrize("lengths", [[100_000], [30_000, 40_000], [5_000] * 12 + [200] * 30,
                                     [2_000, 90_000, 3_000, 120, 40_000]])
def test_long_trajectories_are_cut_into_long_pieces_spread_over_each(lengths):
    data = _indexed(lengths)
    R = 4
    pieces, signals, scale, whole = subsample(data, [U for _, U in data], max_delay=R)
    kept = sum(U.shape[1] for _, U in pieces)
    assert abs(kept - DIAGNOSTIC_SAMPLES) <= max(lengths) and scale == sum(lengths) / kept
    for (X, U), S, complete in zip(pieces, signals, whole, strict=True):
        t, start = int(X[0, 0]), int(X[1, 0])
        source_X, source_U = data[t]
        assert complete == (U.shape[1] == lengths[t])
        # a whole trajectory, or a cut of at least the shortest piece beyond max_delay
        assert complete or U.shape[1] >= 250 + R
        np.testing.assert_array_equal(X, source_X[:, start:start + U.shape[1] + 1])
        np.testing.assert_array_equal(S, source_U[:, start:start + U.shape[1]])
    for t, K in enumerate(lengths):
        starts = sorted(int(X[1, 0]) for X, _ in pieces if X[0, 0] == t)
        if len(starts) > 1:             # evenly spread: equal spacing, to rounding
            assert np.ptp(np.diff(starts)) <= 1 and starts[0] <= K // len(starts)


def test_short_data_are_returned_whole():
    data = _indexed([300] * 10)
    pieces, signals, scale, whole = subsample(data, None)
    assert pieces is data and signals is None and scale == 1.0 and whole.all()
