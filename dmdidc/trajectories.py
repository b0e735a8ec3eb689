"""Trajectory data: validation (time on the last axis) and per-trajectory detrending."""

from __future__ import annotations

from typing import Any

import numpy as np

from _toolbox.validation import DATA_MAGNITUDE_LIMIT, check_finite_array, check_magnitude
from dmdidc.errors import DimensionError, InsufficientExcitationError, NonFiniteError

__all__ = ["as_trajectories", "check_data", "detrended", "remove_trend", "subsample",
           "held_inputs", "held_input_error",
           "DIAGNOSTIC_SAMPLES", "DATA_MAGNITUDE_LIMIT", "HELD_RTOL"]

#: An input whose spread is within this share of its magnitude holds one value (rounding):
#: it carries no excitation (:func:`held_inputs`; OutputDMDidc scales it by its magnitude).
HELD_RTOL = 1e-12

#: Regression samples the residual diagnostics use at most (their power is ample long before).
DIAGNOSTIC_SAMPLES = 20_000
#: Pieces a subsample takes from one trajectory at most (spread over it).
_PIECES = 10
#: Samples (beyond ``max_delay``) a piece of a subsample has at least (:func:`subsample`).
_SHORTEST_PIECE = 250
#: Trajectories shorter than this (beyond ``max_delay``) are not cut by a subsample: kept
#: whole or left out.
_CUT_FROM = _PIECES * _SHORTEST_PIECE
#: Entries per piece of :func:`_largest_magnitude` (1 MB: the two reductions share the cache).
_PIECE = 131_072


def check_data(name: str, value: Any) -> np.ndarray:
    """A finite, real 2-D array whose entries stay within :data:`DATA_MAGNITUDE_LIMIT`.

    Raises
    ------
    DimensionError, NonFiniteError, ParameterError
        Not 2-D, NaN or infinite, beyond the limit (its moments would overflow), or complex.

    Examples
    --------
    >>> check_data("X", [[1.0, -2.0]]).shape
    (1, 2)
    """
    array = value
    try:
        if not (type(value) is np.ndarray and value.dtype == np.float64 and value.ndim == 2
                and value.size):
            array = check_finite_array(name, value, ndim=2)
        largest = _largest_magnitude(array)
        if not np.isfinite(largest):
            check_finite_array(name, array, ndim=2)      # says how many entries and raises
    except NonFiniteError as exc:
        raise NonFiniteError(f"{exc}{_first_nonfinite(value)}") from None
    check_magnitude(name, largest, "the regression's sums of products would overflow float64",
                    "rescale the data (e.g. other units)")
    return array


def _first_nonfinite(value: Any) -> str:
    """Where the first NaN or infinite entry of ``value`` is, and what handles lost samples."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return ""
    if array.ndim != 2 or np.isfinite(array).all():
        return ""
    column, row = (int(i) for i in np.argwhere(~np.isfinite(array.T))[0])   # earliest sample
    kind = "NaN" if np.isnan(array[row, column]) else "infinite"
    where = (f"; the first (earliest) at row {row}, column {column} (signal {row}, sample "
             f"{column}: {kind})")
    if not np.isnan(array).any():          # an overflow or a fault, not a lost sample
        return where
    return (f"{where}. Lost samples (NaN) are handled by IdData(X, U, dt=..., missing='drop' or "
            f"'interpolate'), read_data(..., missing=...) or dmdidc identify --missing")


def _shape_mistake(x: tuple[int, int], u: tuple[int, int], tag: str) -> str:
    """Why ``U`` (m, K) does not fit ``X`` (n, N): the message names the likeliest mistake
    (a transposition only where an array has more rows than columns, as samples would: with
    n = m + 1 an extra input sample is no transposition)."""
    (n, N), (m, K) = x, u
    expected = (f"U{tag} has {K} samples; expected {N - 1} (columns of X{tag} minus one; time "
                f"runs along the columns)")
    if n == m + 1 and n > N:
        return (f"{expected}; the data look transposed: X{tag} has {n} rows and U{tag} {m}, "
                f"one more, as samples would (pass X.T and U.T)")
    if n - 1 == K and n > N:
        return (f"X{tag} has shape {x}, which looks transposed: its {n} rows are one more than "
                f"the {K} samples of U{tag} {u}; time runs along the columns: pass X.T, shape "
                f"(n, K + 1)")
    if m == N - 1 and m > K:
        return (f"U{tag} has shape {u}, which looks transposed: its {m} rows are the {N - 1} "
                f"steps of X{tag} {x}; time runs along the columns: pass U.T, shape (m, K)")
    if K == N:
        return (f"{expected}: U{tag} has as many samples as X{tag}, one too many (the last "
                f"input would act after the last state); drop its last column, U[:, :-1]")
    return expected


def held_inputs(U: Any) -> dict[int, float]:
    """The input channels of ``U`` (m, K), or of a list of such arrays, that hold one value in
    every sample, up to rounding (channel: value): they carry no excitation.

    Examples
    --------
    >>> held_inputs(np.array([[1.0, -1.0, 0.5], [8.0, 8.0, 8.0]]))
    {1: 8.0}
    """
    # each experiment's range, not one joined copy (30 000 experiments of 200 samples, m = 4:
    # 190 MB joined when a refused fit looked for a held input)
    arrays = [np.asarray(u, dtype=float) for u in (U if isinstance(U, (list, tuple)) else [U])]
    if any(a.ndim != 2 for a in arrays) or sum(a.shape[1] for a in arrays) < 2:
        return {}
    filled = [a for a in arrays if a.shape[1]]
    low = np.min([a.min(axis=1) for a in filled], axis=0)
    high = np.max([a.max(axis=1) for a in filled], axis=0)
    held = high - low <= HELD_RTOL * np.maximum(np.abs(high), np.abs(low))
    return {int(i): float(filled[0][i, 0]) for i in np.flatnonzero(held)}


def held_input_error(name: str, value: float, count: int, remedy: str
                     ) -> InsufficientExcitationError:
    """The refusal of an input held at ``value`` (``count`` such inputs); ``remedy`` says how
    to leave it out (the API's or the command line's way).

    Examples
    --------
    >>> print(held_input_error("'heater'", 8.0, 1, "--inputs without it"))
    ... # doctest: +ELLIPSIS
    input 'heater' is constant (8 in every sample): it carries no excitation, ... excite it
    """
    more = f" ({count} inputs are constant)" if count > 1 else ""
    return InsufficientExcitationError(
        f"input {name} is constant ({value:g} in every sample){more}: it carries no "
        f"excitation, so the data determine neither its delay nor its effect and the "
        f"regression is rank-deficient; leave it out ({remedy}) or excite it")


def _largest_magnitude(array: np.ndarray) -> float:
    """``max |entry|`` (at least 0; NaN if any entry is NaN) without a copy of the data.

    The largest and the smallest entry (NaN and inf propagate through both), not the absolute
    values: no copies, which cost as much as the statistics' own pass.  Contiguous data are
    read in pieces that stay in cache for the second reduction, one pass over memory instead
    of two (20 x 2e5: 3.5 -> 2.5 ms).
    """
    flat = array.reshape(-1, order="A") if (array.flags.c_contiguous
                                            or array.flags.f_contiguous) else None
    if flat is None or flat.size <= _PIECE:
        return max(float(np.max(array, initial=0.0)), -float(np.min(array, initial=0.0)))
    extremes = np.empty((2, -(-flat.size // _PIECE)))
    for i, start in enumerate(range(0, flat.size, _PIECE)):
        piece = flat[start:start + _PIECE]
        extremes[0, i], extremes[1, i] = piece.max(), -piece.min()
    return float(np.max(extremes, initial=0.0)) + 0.0     # keeps a NaN (Python's max would not)


def as_trajectories(X: Any, U: Any, *, check_orientation: bool = True
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Validated ``(X (n, K+1), U (m, K))`` pairs from arrays or lists of trajectories.

    Raises
    ------
    DimensionError, NonFiniteError
        Mismatched lists or sizes, transposed-looking data, non-finite values or values
        beyond :data:`DATA_MAGNITUDE_LIMIT`.
    """
    if isinstance(X, (list, tuple)) != isinstance(U, (list, tuple)):
        raise DimensionError("X and U must both be arrays or both be lists of trajectories")
    if not isinstance(X, (list, tuple)):
        X, U = [X], [U]
    if len(X) != len(U) or not X:
        raise DimensionError(f"got {len(X)} state and {len(U)} input trajectories; expected the "
                             f"same positive number")
    result = []
    for i, (Xi, Ui) in enumerate(zip(X, U, strict=True)):
        tag = f"[{i}]" if len(X) > 1 else ""
        Xi = check_data(f"X{tag}", Xi)
        Ui = check_data(f"U{tag}", Ui)
        if Ui.shape[1] != Xi.shape[1] - 1:
            raise DimensionError(_shape_mistake(Xi.shape, Ui.shape, tag))
        if check_orientation and Xi.shape[0] == Ui.shape[0] + 1 and Xi.shape[0] > Xi.shape[1]:
            raise DimensionError(f"X{tag} has shape {Xi.shape} and U{tag} {Ui.shape}: more states "
                                 f"than snapshots, which looks like transposed data; time runs "
                                 f"along the columns (X is (n, K+1), U is (m, K))")
        if result and (Xi.shape[0], Ui.shape[0]) != (result[0][0].shape[0], result[0][1].shape[0]):
            raise DimensionError(f"trajectory {i} has {Xi.shape[0]} states and {Ui.shape[0]} "
                                 f"inputs; the first has {result[0][0].shape[0]} and "
                                 f"{result[0][1].shape[0]}")
        result.append((Xi, Ui))
    return result


def detrended(trajectories: list[tuple[np.ndarray, np.ndarray]], kind: str
              ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    """Remove the per-row mean or least-squares line of every trajectory (MATLAB's detrend).

    Returns the detrended trajectories and the trends ``(n_traj, rows, 2)`` of states and
    inputs: ``[..., 0]`` the value at sample 0, ``[..., 1]`` the slope per sample.
    """
    result, state_trends, input_trends = [], [], []
    for X, U in trajectories:
        (Xd, x_trend), (Ud, u_trend) = remove_trend(X, kind), remove_trend(U, kind)
        result.append((Xd, Ud))
        state_trends.append(x_trend)
        input_trends.append(u_trend)
    return result, np.array(state_trends), np.array(input_trends)


def remove_trend(data: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``(data - trend, trend)`` per row; ``trend`` (rows, 2) holds value at 0 and slope."""
    k = np.arange(data.shape[1], dtype=float)
    if kind == "constant" or data.shape[1] < 2:
        trend = np.stack([data.mean(axis=1), np.zeros(data.shape[0])], axis=1)
    else:
        centred = k - k.mean()
        slope = data @ centred / (centred @ centred)
        trend = np.stack([data.mean(axis=1) - slope * k.mean(), slope], axis=1)
    return data - trend[:, :1] - trend[:, 1:] * k, trend


def subsample(trajectories: list[tuple[np.ndarray, np.ndarray]], signals: list | None,
              samples: int = DIAGNOSTIC_SAMPLES, *, max_delay: int = 0
              ) -> tuple[list, list | None, float, np.ndarray]:
    """At most about ``samples`` samples of the data, as long pieces spread over it.

    Residual diagnostics on a million samples would cost far more than the fit while their
    power is ample at tens of thousands.  Short data are returned whole.  Otherwise every
    trajectory of at least :data:`_CUT_FROM` samples (beyond ``max_delay``) gives up to
    ``10`` pieces of its share of the kept samples, spread evenly over it (each a trajectory
    of its own: lags stay inside a piece); the shorter ones are kept whole or left out,
    chosen evenly over the record so that they keep their share too.  Every piece has at
    least :data:`_SHORTEST_PIECE` samples beyond ``max_delay`` (or is a whole trajectory):
    the checks that need a window (the moment tests lose ``max_delay + 20`` samples per
    piece, the whiteness and correlation filters 45 at either end, the linearity check's
    filters 20) keep nearly every sample.  (Why: each trajectory cut into 10 pieces of its
    share turned 100 experiments of 300 samples into 1000 pieces of 17 regression samples,
    on which those checks reported "too few samples" or were not tested.)

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
    signals : list of ndarray (q, K) or None
    samples : int, default :data:`DIAGNOSTIC_SAMPLES`
    max_delay : int, default 0
        ``R``: a piece's first ``R`` samples give no regression sample.

    Returns
    -------
    trajectories : list of (X, U)
    signals : list of ndarray or None
        The matching pieces of ``signals`` (same time axis as ``U``).
    scale : float
        Samples of the data per sample kept (1 when nothing was cut): sums over the subsample
        times ``scale`` estimate sums over the data.
    whole : ndarray of bool
        Per piece: it is a whole trajectory (not a cut of one).  A fit with an intercept per
        trajectory centres the residuals of each, and the residual checks correct the
        whiteness test for that of the whole ones (a cut's share of it, from a trajectory of
        at least :data:`_CUT_FROM` samples, is negligible).

    Examples
    --------
    >>> U = np.zeros((1, 300))
    >>> pieces, _, scale, whole = subsample([(np.zeros((1, 301)), U)] * 100, None)
    >>> len(pieces), {p[1].shape[1] for p in pieces}, round(scale, 3), bool(whole.all())
    (67, {300}, 1.493, True)
    """
    total = sum(U.shape[1] for _, U in trajectories)
    if total <= samples:
        return trajectories, signals, 1.0, np.ones(len(trajectories), dtype=bool)
    fraction = samples / total
    shortest = _SHORTEST_PIECE + max_delay
    pieces, cuts, whole = [], [], []
    # the samples owed (the kept share so far less the samples kept): a trajectory is kept
    # when it owes at least half of what it would add, so whole ones are chosen evenly
    owed = 0.0
    for t, (X, U) in enumerate(trajectories):
        K = U.shape[1]
        share = K * fraction
        if K >= _CUT_FROM + max_delay:
            count = min(_PIECES, max(int(share // shortest), 1))
            length = max(int(share / count), shortest)
        else:
            count, length = 1, K
        owed += share
        if owed < 0.5 * count * length:
            continue
        owed -= count * length
        # the middles of ``count`` equal segments: evenly spread, a single piece central
        middles = (np.arange(count) + 0.5) * K / count
        for start in np.clip(np.round(middles - length / 2), 0, K - length).astype(int):
            pieces.append((X[:, start:start + length + 1], U[:, start:start + length]))
            cuts.append((t, start, length))
            whole.append(length == K)
    if not pieces:                 # a budget below half of any piece: nothing to spread
        return trajectories, signals, 1.0, np.ones(len(trajectories), dtype=bool)
    piece_signals = None
    if signals is not None:
        # signals computed when read (dmdidc.regression.refined.SimulatedSignals) are read
        # together: one side-by-side simulation of the chosen trajectories, not one each
        # (100 of 30 000 short experiments: 50 ms one by one)
        chosen = sorted({t for t, _, _ in cuts})
        read = (signals.subset(chosen) if hasattr(signals, "subset")
                else {t: signals[t] for t in chosen})
        piece_signals = [read[t][:, start:start + length] for t, start, length in cuts]
    kept = sum(U.shape[1] for _, U in pieces)
    return pieces, piece_signals, total / kept, np.array(whole, dtype=bool)
