"""Streaming accumulation of :class:`~dmdidc.SufficientStatistics` (chunks of trajectories).

:class:`StatisticsAccumulator` is the engine :class:`~dmdidc.statistics.streaming.LaggedSums`
(per block of samples the regression vectors ``v_k`` are sliced from the lagged, clipped and
scaled signals and ``V V^T`` is one symmetric product) that hands out its sums as a
:class:`~dmdidc.statistics.SufficientStatistics` value; memory is independent of the data
length.
"""

from __future__ import annotations

from dmdidc.statistics.statistics import SufficientStatistics
from dmdidc.statistics.streaming import LaggedSums

__all__ = ["StatisticsAccumulator"]


class StatisticsAccumulator(LaggedSums):
    """Streaming sums for :class:`SufficientStatistics` (chunks of trajectories).

    ``update(X, U, E)`` adds a chunk of the current trajectory (chunks overlap by one state, as
    in :meth:`dmdidc.DMDidc.partial_fit`); ``new_trajectory()`` starts another;
    ``statistics()`` returns the statistics of everything so far.  Memory is independent of the
    data length.  Per block of samples the variables ``v_k`` are sliced from the lagged signals
    and ``V V^T`` is one symmetric product (``d^2 / 2`` flops per sample).
    """

    def statistics(self) -> SufficientStatistics:
        """The statistics of all data so far (the open trajectory included)."""
        return SufficientStatistics(**self.totals())
