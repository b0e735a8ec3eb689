"""Streaming sums of the DMDidc regression vectors (chunks of trajectories): the engine.

Per block of samples the regression vectors ``v_k`` (layout of
:class:`~dmdidc.statistics.layout.StatisticsLayout`) are sliced from the lagged, clipped and
scaled signals and ``V V^T`` is one symmetric product (``d^2 / 2`` flops per sample); the history
the lags need is carried from chunk to chunk, so memory is independent of the data length.

:class:`LaggedSums` returns the fields of a
:class:`~dmdidc.statistics.SufficientStatistics` as plain values (:meth:`LaggedSums.totals`)
and knows nothing of that class: ``SufficientStatistics.from_data`` and
:class:`~dmdidc.statistics.accumulator.StatisticsAccumulator` build on it, so the value and
its builders depend on the engine, never the other way round.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _toolbox.validation import check_integer, check_scalar_or_vector
from dmdidc.errors import DimensionError, ParameterError
from dmdidc.regression.solution import check_regression_size
from dmdidc.statistics.layout import INSTRUMENT_KINDS, StatisticsLayout

__all__ = ["LaggedSums"]

#: Samples per block: the block of regression vectors (d x 4096 doubles) stays in cache.
_BLOCK = 4096


def _bound(name: str, value: Any, size: int) -> np.ndarray | None:
    if value is None:
        return None
    array = check_scalar_or_vector(name, value, size)
    if np.any(array <= 0):
        raise ParameterError(f"{name} must be > 0 (a symmetric bound |value| <= bound); got "
                             f"{array.tolist()}")
    return array


class LaggedSums:
    """Streaming sums of the regression vectors ``v_k`` (chunks of trajectories).

    ``update(X, U, E)`` adds a chunk of the current trajectory (chunks overlap by one state, as
    in :meth:`dmdidc.DMDidc.partial_fit`); ``new_trajectory()`` starts another; ``totals()``
    returns the fields of the statistics of everything so far.  Memory is independent of the
    data length.  Per block of samples the variables ``v_k`` are sliced from the lagged signals
    and ``V V^T`` is one symmetric product (``d^2 / 2`` flops per sample).
    """

    def __init__(self, n_states: int, n_inputs: int, max_delay: int, *,
                 instruments: str | None = None, instrument_lags: int | None = None,
                 n_exogenous: int = 0, state_bound: Any = None, input_bound: Any = None,
                 instrument_bound: Any = None, detrend: str | None = None) -> None:
        R = check_integer("max_delay", max_delay, minimum=0)
        if instruments is not None and instruments not in INSTRUMENT_KINDS:
            raise ParameterError(f"instruments must be None, 'inputs', 'states' or an array of "
                                 f"exogenous signals; got {instruments!r}")
        if detrend not in (None, "constant"):
            raise ParameterError(f"detrend must be None or 'constant' for statistics (a mean "
                                 f"per trajectory); got {detrend!r}")
        n, m = n_states, n_inputs
        lags = 0 if instruments is None else _default_lags(instruments, instrument_lags, n, m,
                                                           R, n_exogenous)
        self.layout = StatisticsLayout(n, m, R, instruments, lags, n_exogenous)
        bounds = {"x": _bound("state_bound", state_bound, n),
                  "u": _bound("input_bound", input_bound, m),
                  "e": _bound("instrument_bound", instrument_bound, n_exogenous)
                  if instruments == "exogenous" else None}
        if instrument_bound is not None and instruments != "exogenous":
            raise ParameterError("instrument_bound applies to exogenous instrument signals "
                                 "only; lagged inputs and states use input_bound / state_bound")
        self._bounds = bounds
        self.bounded = bounds["x"] is not None and bounds["u"] is not None and (
            instruments != "exogenous" or bounds["e"] is not None)
        if any(b is not None for b in bounds.values()) and not self.bounded:
            missing = [name for name, key in (("state_bound", "x"), ("input_bound", "u"),
                                              ("instrument_bound", "e"))
                       if bounds[key] is None and (key != "e" or instruments == "exogenous")]
            raise ParameterError(f"declare all bounds or none; missing {missing}")
        self.detrend = detrend
        d = self.layout.dimension
        check_regression_size(n, m, R, d)
        self.gram, self.sums = np.zeros((d, d)), np.zeros(d)
        self.n_samples = self.n_trajectories = self.intercepts = 0
        self.clipped = 0
        self._lengths: list[int] = []
        self._open = False

    # per-trajectory state ----------------------------------------------------------------
    def new_trajectory(self) -> None:
        """Close the current trajectory (center it if asked) and start a new one."""
        self._close()
        d = self.layout.dimension
        self._gram, self._sums, self._count = np.zeros((d, d)), np.zeros(d), 0
        self._time = 0
        self._history = {s: np.zeros((self.layout.width(s), 0)) for s in ("x", "u", "e")}
        self._last_state: np.ndarray | None = None
        self._open = True

    def _close(self) -> None:
        if not self._open:
            return
        gram, sums, count = self._folded()
        self.gram += gram
        self.sums += sums
        self.n_samples += count
        self.n_trajectories += 1
        self.intercepts += int(self.detrend is not None and count > 0)
        self._lengths.append(count)
        self._open = False

    def _folded(self) -> tuple[np.ndarray, np.ndarray, int]:
        gram, sums, count = self._gram, self._sums, self._count
        if self.detrend is not None and count > 0:
            return gram - np.outer(sums, sums) / count, np.zeros_like(sums), count
        return gram, sums, count

    @property
    def last_state(self) -> np.ndarray | None:
        """Last state of the open trajectory, unit-box coordinates (chunks must continue it)."""
        return getattr(self, "_last_state", None)

    def _scaled(self, signal: str, data: np.ndarray, new_from: int) -> np.ndarray:
        bound = self._bounds[signal]
        if bound is None:
            return data
        clipped = np.clip(data, -bound[:, None], bound[:, None])
        self.clipped += int(np.count_nonzero(clipped[:, new_from:] != data[:, new_from:]))
        return clipped / bound[:, None]

    def update(self, X: np.ndarray, U: np.ndarray, E: np.ndarray | None = None) -> None:
        """Add states ``X`` (n, L + 1), inputs ``U`` (m, L) and exogenous instruments ``E``
        (q, L) of the current trajectory; ``X[:, 0]`` continues the previous chunk."""
        if not self._open:
            self.new_trajectory()
        layout = self.layout
        continuing = self._time > 0
        X = self._scaled("x", X, 1 if continuing else 0)
        U = self._scaled("u", U, 0)
        E = self._scaled("e", E, 0) if E is not None else np.zeros((0, U.shape[1]))
        t0, L = self._time, U.shape[1]
        hist = self._history
        lag_x, lag_u, lag_e = (layout.max_lag(s) for s in ("x", "u", "e"))
        # column c of a padded signal is time t0 - lag + c (x also holds x_{t0 + L})
        padded = {"x": _pad(hist["x"], lag_x, X), "u": _pad(hist["u"], lag_u, U),
                  "e": _pad(hist["e"], lag_e, E)}
        origin = {"x": t0 - lag_x, "u": t0 - lag_u, "e": t0 - lag_e}
        slots = layout.slots
        first = max(t0, layout.first_sample)
        for a in range(first, t0 + L, _BLOCK):
            b = min(a + _BLOCK, t0 + L)
            V = np.concatenate([padded[s][:, a - lag - origin[s]:b - lag - origin[s]]
                                for s, lag in slots], axis=0)
            self._gram += V @ V.T          # numpy's symmetric product (syrk)
            self._sums += V @ np.ones(b - a)
            self._count += b - a
        self._history = {"x": padded["x"][:, max(padded["x"].shape[1] - 1 - lag_x, 0):-1],
                         "u": padded["u"][:, padded["u"].shape[1] - lag_u:],
                         "e": padded["e"][:, padded["e"].shape[1] - lag_e:]}
        self._last_state = X[:, -1].copy()
        self._time += L

    def totals(self) -> dict[str, Any]:
        """The fields of the statistics of all data so far (the open trajectory included): the
        keyword arguments of :class:`~dmdidc.statistics.SufficientStatistics`."""
        gram, sums = self.gram.copy(), self.sums.copy()
        n_samples, n_traj, intercepts = self.n_samples, self.n_trajectories, self.intercepts
        lengths = list(self._lengths)
        if self._open:
            g, s, c = self._folded()
            gram, sums = gram + g, sums + s
            n_samples, n_traj = n_samples + c, n_traj + 1
            intercepts += int(self.detrend is not None and c > 0)
            lengths.append(c)
        layout = self.layout
        ones = {"x": np.ones(layout.n_states), "u": np.ones(layout.n_inputs),
                "e": np.ones(layout.n_exogenous)}
        scale = np.concatenate([(self._bounds[s] if self._bounds[s] is not None else ones[s])
                                for s, _ in layout.slots])
        gram = 0.5 * (gram + gram.T)
        return dict(
            layout=layout, gram=gram, sums=sums, n_samples=n_samples,
            n_trajectories=n_traj, intercepts=intercepts,
            centering="trajectory" if self.detrend is not None else "none", scale=scale,
            state_bound=self._bounds["x"], input_bound=self._bounds["u"],
            instrument_bound=self._bounds["e"],
            min_trajectory_samples=min(lengths, default=0),
            max_trajectory_samples=max(lengths, default=0), clipped=self.clipped)


def _pad(history: np.ndarray, lag: int, data: np.ndarray) -> np.ndarray:
    """``lag`` columns of history (zeros before the trajectory's start) followed by data."""
    missing = lag - history.shape[1]
    parts = [np.zeros((data.shape[0], missing))] if missing > 0 else []
    return np.concatenate(parts + [history[:, history.shape[1] - lag:] if lag else
                                   history[:, :0], data], axis=1)


def _default_lags(kind: str, lags: int | None, n: int, m: int, R: int, q: int) -> int:
    """``L``: the given value, or the smallest giving ``n`` more instruments than regressors."""
    p = n + m * (R + 1)
    if kind == "inputs" and m == 0:
        raise ParameterError("instruments='inputs' need inputs; the data have none (m = 0): "
                             "use instruments='states' or least squares")
    if kind in ("exogenous", "simulated") and q < 1:
        raise DimensionError(f"{kind} instruments need at least one signal row")
    if kind == "simulated":
        lags = 0 if lags is None else check_integer("instrument_lags", lags, minimum=0)
    if kind == "simulated":
        pass
    elif lags is not None:
        lags = check_integer("instrument_lags", lags, minimum=0 if kind == "exogenous" else 1)
    else:
        target = p + n
        if kind == "inputs":
            lags = -(-(target - m * (R + 1)) // m)
        elif kind == "states":
            lags = -(-(target - m * (R + 1)) // n)
        else:
            lags = max(-(-target // q) - R - 1, 0)
    count = {"inputs": m * (R + 1 + lags), "states": m * (R + 1) + n * lags,
             "exogenous": q * (R + 1 + lags), "simulated": m * (R + 1) + q}[kind]
    if count < p:
        raise ParameterError(f"instrument_lags={lags} gives {count} instruments for {p} "
                             f"regressors (n + m (R + 1)); instrumental variables need at least "
                             f"as many instruments as regressors: raise instrument_lags")
    return lags


