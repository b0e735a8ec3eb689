"""``DMDidc(svd_rank=r).partial_fit``: regression statistics in streamed POD coordinates.

Each chunk first updates the incremental POD (:mod:`dmdidc.regression.incremental_pod`,
``k = r + 10`` tracked modes), then the regression moments of everything so far are carried
into the new basis (the state blocks of ``sum v v^T`` are congruent under ``Q_new^T Q_old``)
and the chunk's own moments, computed in the new basis, are added.  At a solve the leading
``r`` coordinates are kept.  Memory: ``n (k + L)`` for the modes and a chunk of ``L``
snapshots, ``n (R + L_iv + 1)`` for the states in flight between chunks, and the moments
(``p^2``); never ``(n p)^2``.

The approximation: the moments of earlier chunks are those of their projection onto the basis
of their time, carried forward; a direction that only later data reveal was not in their
coordinates.  When the plant's few states dominate (the case ``svd_rank`` is for) the tracked
span settles after the first chunks and the statistics then agree with the batch POD fit's
(tested by subspace angle and eigenvalues against :meth:`DMDidc.fit`).
"""

from __future__ import annotations

import numpy as np

from dmdidc.errors import InsufficientExcitationError, ParameterError
from dmdidc.regression.incremental_pod import IncrementalPOD
from dmdidc.regression.pod import outside_span
from dmdidc.statistics.accumulator import StatisticsAccumulator
from dmdidc.statistics.layout import StatisticsLayout
from dmdidc.statistics.statistics import SufficientStatistics

__all__ = ["PODStatistics"]


class PODStatistics:
    """Streaming sufficient statistics of a trajectory's leading POD coordinates.

    The interface of :class:`~dmdidc.statistics.accumulator.StatisticsAccumulator` that
    :meth:`DMDidc.partial_fit <dmdidc.DMDidc.partial_fit>` uses (``update``,
    ``new_trajectory``, ``last_state``, ``statistics``), for full-space snapshots.

    Parameters
    ----------
    n_states, n_inputs, max_delay, rank : int
        Sensors ``n``, inputs ``m``, ``R`` and the POD rank ``r``.
    instruments : {None, "inputs"}
        Instrumental variables from inputs lagged beyond ``R`` (else least squares only).
    instrument_lags : int, optional
        As for :class:`StatisticsAccumulator`; its default for ``r`` states.
    centred : bool, default False
        The modes of the snapshots minus their running mean, and coordinates ``z = modes^T
        (x - centre)`` with ``centre`` the mean's part outside the modes' span, as
        ``DMDidc(svd_rank=r, detrend="auto").fit`` takes them: a sensor offset then takes
        no mode.  The moments are kept about the first chunk's mean (so earlier chunks stay
        inside the tracked span) and moved to ``centre`` at :meth:`statistics` (exactly,
        through their sums).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 1200, rng=0)
    >>> X = np.linspace(1.0, 2.0, 500)[:, None] @ plant.simulate([0.0], U)   # 500 sensors
    >>> stats = PODStatistics(500, 1, 3, rank=1)
    >>> for a in range(0, 1200, 400):
    ...     stats.update(X[:, a:a + 401], U[:, a:a + 400])
    >>> stats.statistics().n_samples, stats.modes.shape
    (1197, (500, 1))
    """

    def __init__(self, n_states: int, n_inputs: int, max_delay: int, rank: int, *,
                 instruments: str | None = None, instrument_lags: int | None = None,
                 centred: bool = False) -> None:
        if instruments not in (None, "inputs"):
            raise ParameterError(f"svd_rank streams instruments={instruments!r}; accepted: "
                                 f"None (least squares) or 'inputs'")
        self.n_states, self.n_inputs, self.max_delay, self.rank = (n_states, n_inputs,
                                                                   max_delay, rank)
        self.instruments = instruments
        self.pod = IncrementalPOD(rank, centred=centred)
        # the origin of the streamed coordinates: the first chunk's mean (centred), so the
        # moments of earlier chunks stay inside the tracked span (an offset would not)
        self._origin = np.zeros(n_states)
        # the layout in the tracked coordinates: its default instrument lags serve any of
        # their counts (a chunk's moments are computed with up to rank + oversampling states)
        tracked = min(rank + self.pod.oversampling, n_states)
        self.layout = StatisticsAccumulator(tracked, n_inputs, max_delay,
                                            instruments=instruments,
                                            instrument_lags=instrument_lags).layout
        self._gram = self._sums = None
        self.n_samples = self.n_trajectories = 0
        self._lengths: list[int] = []
        self._states = np.zeros((n_states, 0))
        self._inputs = np.zeros((n_inputs, 0))

    @property
    def last_state(self) -> np.ndarray | None:
        """The last state of the open trajectory (the next chunk starts with it)."""
        return self._states[:, -1] if self._states.shape[1] else None

    @property
    def modes(self) -> np.ndarray:
        """The leading ``rank`` POD modes so far, shape (n, rank)."""
        if self.pod.basis is None or self.pod.basis.shape[1] < self.rank:
            raise InsufficientExcitationError(
                f"{self.pod.snapshots} snapshots so far: svd_rank={self.rank} needs at least "
                f"that many")
        return self.pod.basis[:, :self.rank]

    @property
    def centre(self) -> np.ndarray:
        """The point ``z = 0`` maps to, shape (n,): when ``centred`` the part of the
        snapshots' mean so far outside the modes' span (``DMDidc._pod_of``'s rule), else the
        origin."""
        if self.pod.mean is None:
            return np.zeros(self.n_states)
        return outside_span(self.modes, self.pod.mean)

    def new_trajectory(self) -> None:
        self._states = np.zeros((self.n_states, 0))
        self._inputs = np.zeros((self.n_inputs, 0))

    def update(self, X: np.ndarray, U: np.ndarray, E: None = None) -> None:
        """Add a chunk: states ``X`` (n, L + 1), overlapping the previous chunk by one state
        (``X[:, 0]`` is its last) unless a trajectory starts, and inputs ``U`` (m, L)."""
        fresh = self.last_state is None
        if fresh:
            self.n_trajectories += 1
            self._lengths.append(0)
        new = X if fresh else X[:, 1:]
        if self.pod.centred and self.pod.mean is None:
            self._origin = new.mean(axis=1)
        transition = self.pod.update(new)
        self._carry(transition)
        states = np.hstack([self._states[:, :-1], X]) if not fresh else X
        inputs = np.hstack([self._inputs, U])
        first = self.layout.first_sample
        if inputs.shape[1] > first:
            chunk = SufficientStatistics.from_data(
                self.pod.basis.T @ states - (self.pod.basis.T @ self._origin)[:, None], inputs,
                max_delay=self.max_delay,
                instruments=self.instruments,
                instrument_lags=self.layout.instrument_lags if self.instruments else None)
            self._gram = chunk.gram if self._gram is None else self._gram + chunk.gram
            self._sums = chunk.sums if self._sums is None else self._sums + chunk.sums
            self.n_samples += chunk.n_samples
            self._lengths[-1] += chunk.n_samples
        # what the next chunk's first samples need: the last `first` inputs and states
        self._states = states[:, max(states.shape[1] - first - 1, 0):]
        self._inputs = inputs[:, max(inputs.shape[1] - first, 0):]

    def _carry(self, transition: np.ndarray) -> None:
        """The moments so far, in the new basis (state blocks congruent under ``transition``)."""
        if self._gram is None:
            return
        blocks = [transition if signal == "x" else np.eye(self.n_inputs)
                  for signal, _ in self.layout.slots]
        rows = sum(b.shape[0] for b in blocks)
        cols = sum(b.shape[1] for b in blocks)
        T = np.zeros((rows, cols))
        r = c = 0
        for b in blocks:
            T[r:r + b.shape[0], c:c + b.shape[1]] = b
            r, c = r + b.shape[0], c + b.shape[1]
        self._gram = T @ self._gram @ T.T
        self._sums = T @ self._sums

    def statistics(self) -> SufficientStatistics:
        """The statistics of the leading ``rank`` coordinates of everything so far."""
        modes = self.modes                                   # raises while too few snapshots
        if self._gram is None:
            raise InsufficientExcitationError("no regression sample yet: stream more data")
        k = self.pod.basis.shape[1]
        keep, start = [], 0
        for signal, _ in self.layout.slots:
            width = k if signal == "x" else self.n_inputs
            keep.extend(range(start, start + (modes.shape[1] if signal == "x" else width)))
            start += width
        keep = np.array(keep)
        gram, sums = self._moved(self.pod.basis.T @ (self.centre - self._origin))
        lengths = [length for length in self._lengths if length > 0] or [0]
        return SufficientStatistics(
            layout=StatisticsLayout(self.rank, self.n_inputs, self.max_delay, self.instruments,
                                    self.layout.instrument_lags, 0),
            gram=gram[np.ix_(keep, keep)], sums=sums[keep],
            n_samples=self.n_samples, n_trajectories=self.n_trajectories, intercepts=0,
            centering="none", scale=np.ones(keep.size), state_bound=None, input_bound=None,
            instrument_bound=None, min_trajectory_samples=min(lengths),
            max_trajectory_samples=max(lengths))

    def _moved(self, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The moments of the coordinates minus ``shift`` (k,) in every state slot:
        ``sum (v - c)(v - c)^T = sum v v^T - s c^T - c s^T + N c c^T``."""
        c = np.concatenate([shift if signal == "x" else np.zeros(self.n_inputs)
                            for signal, _ in self.layout.slots])
        if not np.any(c):
            return self._gram, self._sums
        N = self.n_samples
        gram = (self._gram - np.outer(self._sums, c) - np.outer(c, self._sums)
                + N * np.outer(c, c))
        return gram, self._sums - N * c
