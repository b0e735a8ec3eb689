"""Sufficient statistics of the DMDidc regression: the value that adds up, is privatized and fitted.

* :mod:`~dmdidc.statistics.layout`: which signal and lag each entry of ``v_k`` holds;
* :mod:`~dmdidc.statistics.streaming`: the streaming sums (the engine, chunks of trajectories);
* :mod:`~dmdidc.statistics.statistics`: :class:`SufficientStatistics`, the value;
* :mod:`~dmdidc.statistics.accumulator`: :class:`StatisticsAccumulator`, streaming sums that
  hand out the value;
* :mod:`~dmdidc.statistics.fit`: the regression from (possibly noisy) statistics.

``dmdidc.statistics`` was one module; every name it had is still importable from here (its
names are imported on first use, PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes

# public name -> module that defines it (imported on first attribute access, PEP 562)
_EXPORTS = {
    "StatisticsLayout": "dmdidc.statistics.layout",
    "INSTRUMENT_KINDS": "dmdidc.statistics.layout",
    "LaggedSums": "dmdidc.statistics.streaming",
    "SufficientStatistics": "dmdidc.statistics.statistics",
    "StatisticsAccumulator": "dmdidc.statistics.accumulator",
    "regression_from_statistics": "dmdidc.statistics.fit",
    "effective_noise_variance": "dmdidc.statistics.fit",
    "nearest_psd": "dmdidc.statistics.fit",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
