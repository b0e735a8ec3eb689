"""The errors ``privacy`` raises, re-exported from :mod:`_toolbox.errors` (their home).

Kept so that ``from privacy.errors import ParameterError`` and pickled errors keep working;
the hierarchy itself lives in the neutral base package shared by every package.
"""

from __future__ import annotations

from _toolbox.errors import (
    AccountingError,
    DimensionError,
    NonFiniteError,
    ParameterError,
    ToolboxError,
)

__all__ = [
    "ToolboxError",
    "ParameterError",
    "DimensionError",
    "NonFiniteError",
    "AccountingError",
]
