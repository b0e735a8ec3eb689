"""Errors and warnings of the identification package.

The classes live in :mod:`_toolbox.errors`, the one hierarchy of the toolbox, and are
re-exported here (their public home for users of ``dmdidc``, and the path old pickles name).
Every input error is a ``ValueError`` (``NotFittedError`` an ``AttributeError``, as in
scikit-learn), so callers that catch builtins keep working.  :func:`warn_model` issues a
:class:`ContinuousModelWarning` attributed to the caller's line outside this package.
"""

from __future__ import annotations

import os
import sys
import warnings

from _toolbox.errors import (
    ContinuousModelWarning,
    DiagnosticWarning,
    DimensionError,
    InconsistentModelError,
    InsufficientExcitationError,
    LogarithmError,
    NonFiniteError,
    NoSteadyStateError,
    NotFittedError,
    ParameterError,
    RepeatedReleaseWarning,
    ToolboxError,
)

__all__ = [
    "ContinuousModelWarning",
    "DiagnosticWarning",
    "DimensionError",
    "InconsistentModelError",
    "InsufficientExcitationError",
    "LogarithmError",
    "NoSteadyStateError",
    "NonFiniteError",
    "NotFittedError",
    "ParameterError",
    "RepeatedReleaseWarning",
    "ToolboxError",
]


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def warn_model(message: str, category: type[Warning] = ContinuousModelWarning) -> None:
    """Issue a :class:`ContinuousModelWarning` (or ``category``) attributed to the user's line,
    not ours."""
    frame, level = sys._getframe(1), 2      # level 1 would be this function
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
