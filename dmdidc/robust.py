"""Alias of :mod:`dmdidc.regression.robust`, where this module moved.

Keeps ``dmdidc.robust`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.regression.robust import (
    huber_solution,
    huber_threshold,
)

__all__ = [
    "huber_solution",
    "huber_threshold",
]
