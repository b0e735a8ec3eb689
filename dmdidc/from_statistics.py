"""Alias of :mod:`dmdidc.statistics.fit`, where this module moved.

Keeps ``dmdidc.from_statistics`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.statistics.fit import (
    effective_noise_variance,
    nearest_psd,
    regression_from_statistics,
)

__all__ = [
    "regression_from_statistics",
    "effective_noise_variance",
    "nearest_psd",
]
