"""Alias of :mod:`dmdidc.private.sensitivity`, where this module moved.

Keeps ``dmdidc.sensitivity`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.private.sensitivity import (
    PRIVACY_UNITS,
    StatisticsSensitivity,
    statistics_sensitivity,
)

__all__ = [
    "StatisticsSensitivity",
    "statistics_sensitivity",
    "PRIVACY_UNITS",
]
