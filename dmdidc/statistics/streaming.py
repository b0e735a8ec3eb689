"""Streaming sums of the DMDidc regression vectors (chunks of trajectories): the engine.

The regression vectors ``v_k`` (layout of :class:`~dmdidc.statistics.layout.StatisticsLayout`)
stack lags of a few signals, so their Gram matrix is block-Toeplitz up to the ends of each
trajectory: :class:`~dmdidc.regression.lagged_gram.LaggedGram` (shared with the least-squares
:class:`~dmdidc.regression.GramAccumulator`) sums the cross-correlations of the clipped and
scaled signals and corrects the ends exactly, instead of the dense ``V V^T`` (``d^2 / 2``
flops per sample).  The history the lags need is carried from chunk to chunk, so memory is
independent of the data length.

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
from dmdidc.inference.clipping import Clipping
from dmdidc.regression.lagged_gram import LaggedGram
from dmdidc.regression.solution import check_regression_size
from dmdidc.statistics.layout import INSTRUMENT_KINDS, StatisticsLayout

__all__ = ["LaggedSums"]

#: Samples of short trajectories' vectors laid side by side for one product (add_short).
_SHORT_BATCH = 1 << 15


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
    data length.  The sums come from the cross-correlations of the signals (module notes).
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
        self._engine = LaggedGram(self.layout.slots, {"x": n, "u": m, "e": n_exogenous})
        self.n_samples = self.n_trajectories = self.intercepts = 0
        # per channel of each signal: values clipped, values seen, largest |value| / bound
        self._clip = {signal: (np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64),
                               np.zeros(k))
                      for signal, k in (("x", n), ("u", m), ("e", n_exogenous))}
        self._lengths: list[int] = []
        self._open = False

    # per-trajectory state ----------------------------------------------------------------
    def new_trajectory(self) -> None:
        """Close the current trajectory (center it if asked) and start a new one."""
        self._close()
        self._engine.new_trajectory()
        self._last_state: np.ndarray | None = None
        self._open = True

    def _close(self) -> None:
        if not self._open:
            return
        gram, sums, count = self._folded()
        self.gram += gram
        self.sums += sums
        self._counted(count)
        self._open = False

    def _counted(self, count: int) -> None:
        """Count a closed trajectory of ``count`` regression samples."""
        self.n_samples += count
        self.n_trajectories += 1
        self.intercepts += int(self.detrend is not None and count > 0)
        self._lengths.append(count)

    def _folded(self) -> tuple[np.ndarray, np.ndarray, int]:
        """Gram matrix, sums and count of the open trajectory (centred if asked)."""
        d = self.layout.dimension
        augmented, count = self._engine.gram(), self._engine.n_samples
        gram, sums = augmented[:d, :d], augmented[d, :d]
        if self.detrend is not None and count > 0:
            return gram - np.outer(sums, sums) / count, np.zeros_like(sums), count
        return gram, sums, count

    def add_short(self, trajectories: list[tuple[np.ndarray, np.ndarray]],
                  signals: list[np.ndarray | None]) -> list[int]:
        """Add every whole trajectory short enough for a dense product of its vectors
        (:attr:`~dmdidc.regression.lagged_gram.LaggedGram.dense_samples`), many in one product;
        return the indices of the others (for :meth:`update`).  The open trajectory is closed
        first.  The same sums, to rounding, as one trajectory at a time.

        Why: 30 000 experiments of 200 samples spent 80 us each in the streaming engine's
        set-up (its buffers, ends and dense product per trajectory): 0.5 s of a refined-IV
        fit's 0.8 s.  Here each costs the copies of its vectors into a shared buffer.
        """
        self._close()
        d = self.layout.dimension
        engine = self._engine
        first, dense = engine.first_sample, engine.dense_samples
        if self.layout.n_exogenous > 0 and any(E is None for E in signals):
            raise DimensionError(f"these statistics carry {self.layout.n_exogenous} "
                                 f"instrument signal rows (instruments="
                                 f"{self.layout.instruments!r}); every trajectory needs E")
        capacity = max(dense, min(_SHORT_BATCH, sum(
            max(U.shape[1] - first, 0) for _, U in trajectories)))
        buffer = np.empty((d + 1, capacity))
        filled, own_sums, counts, rest = 0, [], [], []

        def flush() -> None:
            nonlocal filled
            if filled == 0:
                return
            vectors = buffer[:, :filled]
            total = vectors @ vectors.T
            self.gram += total[:d, :d]
            if self.detrend is None:
                self.sums += total[d, :d]
            else:              # each trajectory centred by its own mean: less s s^T / count
                S = np.array(own_sums).T
                self.gram -= (S / np.array(counts, dtype=float)) @ S.T
                own_sums.clear()
                counts.clear()
            filled = 0

        for i, ((X, U), E) in enumerate(zip(trajectories, signals, strict=True)):
            count = max(U.shape[1] - first, 0)
            if count > dense:
                rest.append(i)
                continue
            values = {"x": self._scaled("x", X, 0), "u": self._scaled("u", U, 0)}
            if E is not None:
                values["e"] = self._scaled("e", E, 0)
            if filled + count > capacity:
                flush()
            vectors = engine.vectors_of(values, out=buffer[:, filled:filled + count])
            if self.detrend is not None and count > 0:
                own_sums.append(vectors[:d].sum(axis=1))
                counts.append(count)
            filled += count
            self._counted(count)
        flush()
        return rest

    @property
    def last_state(self) -> np.ndarray | None:
        """Last state of the open trajectory, unit-box coordinates (chunks must continue it)."""
        return getattr(self, "_last_state", None)

    def _scaled(self, signal: str, data: np.ndarray, new_from: int) -> np.ndarray:
        """``data`` divided by its bound and clipped to [-1, 1], its values from column
        ``new_from`` on counted (earlier ones continue the previous chunk)."""
        bound, (clipped, seen, peak) = self._bounds[signal], self._clip[signal]
        if bound is None or not data.size:
            return data
        seen += data.shape[1] - new_from
        scaled = data / bound[:, None]
        top = np.maximum(scaled.max(axis=1), -scaled.min(axis=1))
        np.maximum(peak, top, out=peak)
        if top.max() <= 1.0:
            return scaled              # the common case: nothing to clip, nothing to count
        new = scaled[:, new_from:]
        clipped += np.count_nonzero(new > 1.0, axis=1) + np.count_nonzero(new < -1.0, axis=1)
        return np.clip(scaled, -1.0, 1.0, out=scaled)

    @property
    def clipping(self) -> Clipping:
        """The values clipped to the bounds so far, per channel of each signal."""
        counts = [self._clip[signal] for signal in ("x", "u", "e")]
        return Clipping(*(tuple(tuple(c[i].tolist()) for c in counts) for i in range(3)))

    def update(self, X: np.ndarray, U: np.ndarray, E: np.ndarray | None = None) -> None:
        """Add states ``X`` (n, L + 1), inputs ``U`` (m, L) and exogenous instruments ``E``
        (q, L) of the current trajectory; ``X[:, 0]`` continues the previous chunk."""
        if not self._open:
            self.new_trajectory()
        if E is None and self.layout.n_exogenous > 0:
            raise DimensionError(f"these statistics carry {self.layout.n_exogenous} instrument "
                                 f"signal rows (instruments={self.layout.instruments!r}); "
                                 f"update needs E (q, L) with every chunk")
        # clipping and scaling act on each signal once, before its lags are taken
        new_from = 0 if self._last_state is None else 1
        X = self._scaled("x", X, new_from)
        values = {"x": X[:, new_from:], "u": self._scaled("u", U, 0)}
        if E is not None:
            values["e"] = self._scaled("e", E, 0)
        self._engine.update(values)
        self._last_state = X[:, -1].copy()

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
            max_trajectory_samples=max(lengths, default=0), clipping=self.clipping)


def _default_lags(kind: str, lags: int | None, n: int, m: int, R: int, q: int) -> int:
    """``L``: the given value, or the smallest giving ``n`` more instruments than regressors."""
    p = n + m * (R + 1)
    if kind == "inputs" and m == 0:
        raise ParameterError("instruments='inputs' need inputs; the data have none (m = 0): "
                             "use instruments='states' or least squares (estimator='ls')")
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


