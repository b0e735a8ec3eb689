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

from _toolbox.lazy import lazy_exports

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "dmdidc.statistics.layout": ["StatisticsLayout", "INSTRUMENT_KINDS"],
    "dmdidc.statistics.streaming": ["LaggedSums"],
    "dmdidc.statistics.statistics": ["SufficientStatistics"],
    "dmdidc.statistics.accumulator": ["StatisticsAccumulator"],
    "dmdidc.statistics.fit": ["regression_from_statistics", "effective_noise_variance",
                              "nearest_psd"],
})
