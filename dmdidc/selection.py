"""Alias of :mod:`dmdidc.inference.selection`, where this module moved.

Keeps ``dmdidc.selection`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.inference.selection import (
    DelayBoundSelection,
    largest_bound,
    select_max_delay,
)

__all__ = [
    "DelayBoundSelection",
    "largest_bound",
    "select_max_delay",
]
