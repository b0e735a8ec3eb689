"""Errors and warnings of the identification package.

The shared base ``ToolboxError`` and the generic input errors (``ParameterError``,
``DimensionError``, ``NonFiniteError``) live in :mod:`privacy.errors`, the lowest package, and
are re-exported here; the errors that only identification raises are defined here.  Every input
error is a ``ValueError`` (``NotFittedError`` an ``AttributeError``, as in scikit-learn), so
callers that catch builtins keep working.
"""

from __future__ import annotations

import os
import sys
import warnings

from privacy.errors import DimensionError, NonFiniteError, ParameterError, ToolboxError

__all__ = [
    "ContinuousModelWarning",
    "DimensionError",
    "InconsistentModelError",
    "InsufficientExcitationError",
    "LogarithmError",
    "NonFiniteError",
    "NotFittedError",
    "ParameterError",
    "ToolboxError",
]


class InsufficientExcitationError(ToolboxError, ValueError):
    """The regression data matrix is rank-deficient: the data cannot identify the model."""


class NotFittedError(ToolboxError, AttributeError):
    """An estimator was used before ``fit`` (an ``AttributeError``, as in scikit-learn)."""


class LogarithmError(ToolboxError, ValueError):
    """No continuous-time model: ``A_d`` has no unique real logarithm (Culver 1966), or the
    plant was built from discrete matrices only."""


class InconsistentModelError(ToolboxError, ValueError):
    """The discrete and continuous parts of a plant disagree (``A_d != expm(A_c T)``, or input
    blocks that are not the discretization of ``B_c`` with the delay)."""


class ContinuousModelWarning(UserWarning):
    """The identified model may be unreliable (delay at the bound, no effect, offset, ...)."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def warn_model(message: str) -> None:
    """Issue a :class:`ContinuousModelWarning` attributed to the user's line, not ours."""
    frame, level = sys._getframe(1), 2      # level 1 would be this function
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, ContinuousModelWarning, stacklevel=level)
