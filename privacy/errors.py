"""The toolbox's exception hierarchy.

It lives in ``privacy`` because that is the lowest package (it imports nothing of ours) and every
other package re-uses it; ``dmdidc.errors`` re-exports it.  Every input error is a ``ValueError``
so callers that catch builtins keep working.
"""

from __future__ import annotations

__all__ = [
    "ToolboxError",
    "ParameterError",
    "DimensionError",
    "NonFiniteError",
    "InsufficientExcitationError",
    "NotFittedError",
    "LogarithmError",
    "SolverError",
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


class InsufficientExcitationError(ToolboxError, ValueError):
    """The regression data matrix is rank-deficient: the data cannot identify the model."""


class NotFittedError(ToolboxError, AttributeError):
    """An estimator was used before ``fit`` (an ``AttributeError``, as in scikit-learn)."""


class LogarithmError(ToolboxError, ValueError):
    """No unique real matrix logarithm exists, so no unique continuous-time model (Culver)."""


class SolverError(ToolboxError, RuntimeError):
    """A numerical solver failed or reported an infeasible or inaccurate status."""


class AccountingError(ToolboxError, ValueError):
    """A privacy accountant was asked for something it cannot bound rigorously."""
