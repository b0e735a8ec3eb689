"""Streaming for ``OutputDMDidc.partial_fit``: the subspace statistics and a bounded reservoir.

The canonical variate step (:mod:`dmdidc.output.subspace`) needs only a lower-triangular
``L`` with ``L L^T = Z Z^T`` for the stacked windows ``Z = [U_f; W_p; Y_f]``.  Each chunk adds
its windows' columns to ``Z``; the triangular factor of ``[L^T; Z_chunk^T]`` (one QR of
``d + columns`` rows, ``d`` the stacked dimension) is a factor of the whole ``Z Z^T``, so the
factor is updated chunk by chunk in ``d^2`` memory, backward stable like the batch QR (no
normal equations).  A window spans ``2 f + R`` samples, so the last ``2 f + R - 1`` samples of
an experiment are kept and prepended to its next chunk: every window is counted once, also
across chunk boundaries, and the statistics equal the batch ones to rounding.

The scaling of :meth:`OutputDMDidc.fit` (each output divided by its spread about each
experiment's mean, then by its residual standard deviation when the outputs' noise levels
differ; each input by its spread) is not known while streaming; the factor is kept unscaled and
scaled at the end, which is exact: scaling the rows of ``Z`` scales the rows of ``L`` (``(S
Z)^T = Q R S`` and ``R S`` is still triangular), and the Householder QR of a chunk keeps each
column's own relative accuracy (inputs in units 1e8 apart lose nothing to the scaling after).

The delays and the output-error refinement need the samples themselves (a response to the
identified dynamics, unknown until the subspace step is done); they run on a reservoir of the
most recent ``memory`` samples (:class:`Reservoir`).
"""

from __future__ import annotations

import numpy as np

from dmdidc.output.inputs import scale_from_spread
from dmdidc.output.subspace import (
    SubspaceBasis,
    basis_from_factor,
    stacked_data,
    triangular_factor,
)

__all__ = ["Reservoir", "SubspaceStatistics"]


class SubspaceStatistics:
    """The triangular factor of the stacked windows of everything streamed so far.

    Parameters
    ----------
    n_outputs, n_inputs : int
    max_delay, horizon : int
    offset : bool
        A constant row joins the projected-out inputs (as in :func:`subspace_basis`).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc.output.subspace import subspace_basis
    >>> rng = np.random.default_rng(0)
    >>> Y, U = rng.standard_normal((1, 900)), rng.standard_normal((1, 900))
    >>> stats = SubspaceStatistics(1, 1, max_delay=2, horizon=4, offset=True)
    >>> for a in range(0, 900, 300):
    ...     stats.update(Y[:, a:a + 300], U[:, a:a + 300], new_experiment=a == 0)
    >>> batch = subspace_basis([(Y, U)], 2, horizon=4, offset=True)
    >>> bool(np.allclose(stats.basis(np.ones(1)).singular_values, batch.singular_values))
    True
    """

    def __init__(self, n_outputs: int, n_inputs: int, *, max_delay: int, horizon: int,
                 offset: bool) -> None:
        self.n_outputs, self.n_inputs = n_outputs, n_inputs
        self.max_delay, self.horizon, self.offset = max_delay, horizon, offset
        f, R = horizon, max_delay
        self.sizes = (n_inputs * (f + R) + int(offset), (n_outputs + n_inputs) * f, n_outputs * f)
        self._factor = np.zeros((0, sum(self.sizes)))
        self.columns = 0
        self.samples = 0
        # each experiment's running mean and sum of squared deviations (Chan's update: no
        # cancellation of a large offset against the variation, as with raw sums of squares)
        # (outputs, then inputs)
        self._mean = np.zeros(n_outputs + n_inputs)
        self._count = 0
        self._deviations = np.zeros(n_outputs + n_inputs)
        self._magnitude = np.zeros(n_inputs)
        self._tail: tuple[np.ndarray, np.ndarray] | None = None

    def __setstate__(self, state: dict) -> None:
        # statistics pickled before the spread was kept: their root mean square scales as then
        if "_deviations" not in state:
            state["_deviations"] = state.pop("sum_squares")
            state["_mean"], state["_count"] = np.zeros(state["n_outputs"]), 0
        # and before the inputs' spread was: their scale unknown, 1 (unscaled, as then)
        state.setdefault("_magnitude", None)
        self.__dict__.update(state)

    @property
    def span(self) -> int:
        """Samples one window covers (``2 f + R``)."""
        return 2 * self.horizon + self.max_delay

    def update(self, Y: np.ndarray, U: np.ndarray, *, new_experiment: bool) -> None:
        """Add the samples ``Y`` (l, L), ``U`` (m, L) that follow the previous chunk's (or start
        a new experiment)."""
        self._add_spread(np.vstack([Y, U]), new_experiment=new_experiment or self._tail is None)
        if self._magnitude is not None and U.shape[1]:
            self._magnitude = np.maximum(self._magnitude, np.max(np.abs(U), axis=1))
        self.samples += Y.shape[1]
        if self._tail is not None and not new_experiment:
            Y, U = np.hstack([self._tail[0], Y]), np.hstack([self._tail[1], U])
        keep = self.span - 1                      # every later window needs at most these
        self._tail = (Y[:, -keep:], U[:, -keep:])
        stacked = stacked_data([(Y, U)], self.max_delay, self.horizon, offset=self.offset)
        if stacked is None:                       # too short for a window yet: all in the tail
            return
        Z = stacked[0]
        self._factor = triangular_factor(np.vstack([self._factor, Z.T]))
        self.columns += Z.shape[1]

    def _add_spread(self, Y: np.ndarray, *, new_experiment: bool) -> None:
        """Merge the chunk's means and squared deviations (its rows ``Y``) into its
        experiment's."""
        if Y.shape[0] != self._mean.size:      # pickled with the outputs' alone
            Y = Y[:self._mean.size]
        if new_experiment:
            self._mean, self._count = np.zeros(self._mean.size), 0
        count = Y.shape[1]
        if count == 0:
            return
        mean = Y.mean(axis=1)
        total = self._count + count
        delta = mean - self._mean
        self._deviations = (self._deviations + np.sum((Y - mean[:, None]) ** 2, axis=1)
                            + delta ** 2 * self._count * count / total)
        self._mean, self._count = self._mean + delta * count / total, total

    def spread(self) -> np.ndarray:
        """Standard deviation of each output about each experiment's mean, pooled over every
        sample streamed (``OutputDMDidc.fit``'s output scaling, to rounding)."""
        return np.sqrt(self._deviations[:self.n_outputs] / max(self.samples, 1))

    def input_scale(self) -> np.ndarray:
        """Each input's scaling (:func:`~dmdidc.output.inputs.input_scale` of everything
        streamed, to rounding; ones for statistics pickled without the inputs' spread)."""
        if self._magnitude is None:
            return np.ones(self.n_inputs)
        spread = np.sqrt(self._deviations[self.n_outputs:] / max(self.samples, 1))
        return scale_from_spread(spread, self._magnitude)

    def basis(self, scale: np.ndarray, input_scale: np.ndarray | None = None
              ) -> SubspaceBasis:
        """The canonical variates of the outputs divided by ``scale`` (l,) and the inputs by
        ``input_scale`` (m,; default unscaled).

        Raises
        ------
        InsufficientExcitationError
            Too few windows so far.
        """
        d = sum(self.sizes)
        L = np.zeros((d, d))
        L[:, :self._factor.shape[0]] = self._factor.T
        rows = np.ones(d)
        rows[d - self.sizes[2]:] = np.tile(1.0 / scale, self.horizon)   # Y_f rows
        first = self.sizes[0]
        rows[first:first + self.n_outputs * self.horizon] = np.tile(1.0 / scale, self.horizon)
        if input_scale is not None:          # U_f (then the offset's row) and U_p
            m, f, R = self.n_inputs, self.horizon, self.max_delay
            rows[:(f + R) * m] = np.tile(1.0 / input_scale, f + R)
            past = first + self.n_outputs * f
            rows[past:past + m * f] = np.tile(1.0 / input_scale, f)
        return basis_from_factor(rows[:, None] * L, self.sizes, self.columns,
                                 horizon=self.horizon, max_delay=self.max_delay,
                                 n_outputs=self.n_outputs)


class Reservoir:
    """The most recent samples of each experiment, at most ``memory`` in all.

    Older samples leave from the front of the oldest experiment (each kept experiment stays
    contiguous); an experiment shorter than ``shortest`` samples is dropped.

    Examples
    --------
    >>> import numpy as np
    >>> keep = Reservoir(memory=5, shortest=2)
    >>> keep.add(np.arange(4.0)[None], np.zeros((1, 4)), new_experiment=True)
    >>> keep.add(np.arange(4.0, 7.0)[None], np.zeros((1, 3)), new_experiment=False)
    >>> [Y.tolist() for Y, _ in keep.experiments]
    [[[2.0, 3.0, 4.0, 5.0, 6.0]]]
    """

    def __init__(self, memory: int, shortest: int) -> None:
        self.memory, self.shortest = memory, shortest
        self._parts: list[list[tuple[np.ndarray, np.ndarray]]] = []
        self._sizes: list[int] = []
        # per kept experiment: its number in the stream and the samples cut from its front
        self._origins: list[list[int]] = []
        self._streamed = self._current = 0

    def __setstate__(self, state: dict) -> None:
        # reservoirs pickled before the origins were kept: positions from the kept samples
        state.setdefault("_origins", [[i, 0] for i in range(len(state["_sizes"]))])
        state.setdefault("_streamed", len(state["_sizes"]))
        state.setdefault("_current", state["_sizes"][-1] if state["_sizes"] else 0)
        self.__dict__.update(state)

    def add(self, Y: np.ndarray, U: np.ndarray, *, new_experiment: bool) -> None:
        if new_experiment or not self._streamed:
            self._streamed += 1
            self._current = 0                       # samples streamed of this experiment
        if new_experiment or not self._parts:    # (all dropped: the stream goes on after them)
            self._origins.append([self._streamed - 1, self._current])
            self._parts.append([])
            self._sizes.append(0)
        self._current += Y.shape[1]
        self._parts[-1].append((Y, U))
        self._sizes[-1] += Y.shape[1]
        excess = sum(self._sizes) - self.memory
        while excess > 0:
            self._merge(0)
            Y0, U0 = self._parts[0][0]
            cut = min(excess, self._sizes[0])
            if self._sizes[0] - cut < self.shortest:         # too short to keep: drop it all
                cut = self._sizes[0]
            excess -= cut
            if cut == self._sizes[0]:
                del self._parts[0], self._sizes[0], self._origins[0]
                if not self._parts:
                    return
            else:
                self._parts[0] = [(Y0[:, cut:], U0[:, cut:])]
                self._sizes[0] -= cut
                self._origins[0][1] += cut

    def _merge(self, i: int) -> None:
        if len(self._parts[i]) > 1:
            Ys, Us = zip(*self._parts[i], strict=True)
            self._parts[i] = [(np.hstack(Ys), np.hstack(Us))]

    @property
    def experiments(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The kept experiments ``(Y (l, K_i), U (m, K_i))``, oldest first."""
        for i in range(len(self._parts)):
            self._merge(i)
        return [parts[0] for parts, size in zip(self._parts, self._sizes, strict=True)
                if size >= self.shortest]

    def in_stream(self, samples: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """Sample numbers per kept experiment (:attr:`experiments`' order, counted from
        their first kept sample) as numbers in the stream: one array per streamed experiment,
        counted from its first streamed sample (empty for experiments no longer kept).

        Examples
        --------
        >>> import numpy as np
        >>> keep = Reservoir(memory=5, shortest=2)
        >>> keep.add(np.zeros((1, 4)), np.zeros((1, 4)), new_experiment=True)
        >>> keep.add(np.zeros((1, 3)), np.zeros((1, 3)), new_experiment=False)
        >>> keep.in_stream((np.array([0, 4]),))           # the first 2 samples left memory
        (array([2, 6]),)
        """
        out = [np.zeros(0, dtype=int) for _ in range(self._streamed)]
        kept = [origin for origin, size in zip(self._origins, self._sizes, strict=True)
                if size >= self.shortest]
        for (number, cut), found in zip(kept, samples, strict=True):
            out[number] = np.asarray(found, dtype=int) + cut
        return tuple(out)

    @property
    def size(self) -> int:
        """Samples kept."""
        return sum(self._sizes)
