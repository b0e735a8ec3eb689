"""Alias of :mod:`dmdidc.inference.diagnostics`, where this module moved.

Keeps ``dmdidc.diagnostics`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.inference.diagnostics import (
    eigenvalue_standard_errors,
    identification_warnings,
    logarithm_evidence,
)

__all__ = [
    "eigenvalue_standard_errors",
    "identification_warnings",
    "logarithm_evidence",
]
