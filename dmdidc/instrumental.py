"""Alias of :mod:`dmdidc.regression.instrumental`, where this module moved.

Keeps ``dmdidc.instrumental`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.regression.instrumental import (
    coefficient_jacobian,
    instrumental_solution,
)

__all__ = [
    "instrumental_solution",
    "coefficient_jacobian",
]
