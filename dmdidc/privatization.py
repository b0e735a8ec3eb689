"""Alias of :mod:`dmdidc.private.release`, where this module moved.

Keeps ``dmdidc.privatization`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.private.release import (
    MECHANISMS,
    PrivacyRelease,
    calibrate_release,
    describe_release,
    privatize_statistics,
)

__all__ = [
    "PrivacyRelease",
    "privatize_statistics",
    "describe_release",
    "calibrate_release",
    "MECHANISMS",
]
