"""Alias of :mod:`dmdidc.statistics.accumulator`, where this module moved.

Keeps ``dmdidc.statistics_accumulator`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.statistics.accumulator import (
    StatisticsAccumulator,
)

__all__ = [
    "StatisticsAccumulator",
]
