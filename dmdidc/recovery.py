"""Alias of :mod:`dmdidc.inference.recovery`, where this module moved.

Keeps ``dmdidc.recovery`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.inference.recovery import (
    ContinuousModelWarning,
    continuous_state_matrix,
    recover_channel,
    recover_continuous,
)

__all__ = [
    "ContinuousModelWarning",
    "continuous_state_matrix",
    "recover_channel",
    "recover_continuous",
]
