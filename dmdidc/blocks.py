"""Alias of :mod:`dmdidc.inference.blocks`, where this module moved.

Keeps ``dmdidc.blocks`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.inference.blocks import (
    BlockTest,
    block_test,
    column_covariances,
    restricted_coefficients,
    restriction_projector,
)

__all__ = [
    "BlockTest",
    "block_test",
    "column_covariances",
    "restricted_coefficients",
    "restriction_projector",
]
