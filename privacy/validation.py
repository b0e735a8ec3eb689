"""Argument checks, re-exported from :mod:`_toolbox.validation` (their home).

Kept so that ``from privacy.validation import check_positive`` keeps working.
"""

from __future__ import annotations

from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_in_interval,
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
    check_scalar_or_vector,
    read_only,
)

__all__ = [
    "check_positive",
    "check_nonnegative",
    "check_in_interval",
    "check_integer",
    "check_finite_array",
    "check_scalar_or_vector",
    "check_probability",
    "as_generator",
    "read_only",
]
