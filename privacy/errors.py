"""The toolbox's exception hierarchy.

The shared base ``ToolboxError`` and the generic input errors live in ``privacy`` because it is
the lowest package (it imports nothing of ours) and every other package re-uses them.  Errors
that only one package raises live with it: identification errors (``InsufficientExcitationError``,
``NotFittedError``, ``LogarithmError``) in ``dmdidc.errors``, ``SolverError`` in
``controllers.errors``.  Every input error is a ``ValueError`` so callers that catch builtins
keep working.
"""

from __future__ import annotations

__all__ = [
    "ToolboxError",
    "ParameterError",
    "DimensionError",
    "NonFiniteError",
    "AccountingError",
]


class ToolboxError(Exception):
    """Base class of every error raised deliberately by this toolbox."""


class ParameterError(ToolboxError, ValueError):
    """A scalar parameter is outside its accepted range or of the wrong type."""


class DimensionError(ToolboxError, ValueError):
    """An array has the wrong number of dimensions, shape or orientation."""


class NonFiniteError(ToolboxError, ValueError):
    """An array contains NaN or infinite entries."""


class AccountingError(ToolboxError, ValueError):
    """A privacy accountant was asked for something it cannot bound rigorously."""
