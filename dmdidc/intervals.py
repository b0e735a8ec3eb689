"""Alias of :mod:`dmdidc.inference.intervals`, where this module moved.

Keeps ``dmdidc.intervals`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.inference.intervals import (
    INTERVAL_METHODS,
    ConfidenceIntervals,
    IntervalEstimate,
    asymptotic_intervals,
    bootstrap_intervals,
)

__all__ = [
    "IntervalEstimate",
    "ConfidenceIntervals",
    "asymptotic_intervals",
    "bootstrap_intervals",
    "INTERVAL_METHODS",
]
