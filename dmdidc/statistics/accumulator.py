"""Streaming accumulation of :class:`~dmdidc.SufficientStatistics` (chunks of trajectories).

:class:`StatisticsAccumulator` is the engine :class:`~dmdidc.statistics.streaming.LaggedSums`
(the Gram matrix of the regression vectors ``v_k`` from the cross-correlations of the lagged,
clipped and scaled signals) that hands out its sums as a
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
    data length.  The sums come from the cross-correlations of the signals
    (:mod:`dmdidc.regression.lagged_gram`).
    """

    def statistics(self) -> SufficientStatistics:
        """The statistics of all data so far (the open trajectory included)."""
        return SufficientStatistics(**self.totals())
