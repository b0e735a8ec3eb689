"""Errors of the identification package (the hierarchy is defined once, in ``privacy.errors``)."""

from privacy.errors import (
    DimensionError,
    InsufficientExcitationError,
    LogarithmError,
    NonFiniteError,
    NotFittedError,
    ParameterError,
    ToolboxError,
)

__all__ = [
    "DimensionError",
    "InsufficientExcitationError",
    "LogarithmError",
    "NonFiniteError",
    "NotFittedError",
    "ParameterError",
    "ToolboxError",
]
