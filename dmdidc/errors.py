"""Errors and warnings of the identification package.

The classes live in :mod:`_toolbox.errors`, the one hierarchy of the toolbox, and are
re-exported here (their public home for users of ``dmdidc``, and the path old pickles name).
Every input error is a ``ValueError`` (``NotFittedError`` an ``AttributeError``, as in
scikit-learn), so callers that catch builtins keep working.  :func:`warn_model` issues a
:class:`ContinuousModelWarning` attributed to the caller's line outside this package.
"""

from __future__ import annotations

import os

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
    warn_caller,
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
    warn_caller(message, category, _PACKAGE_DIR)


def warn_new(key: str, message: str, before: frozenset[str]) -> None:
    """Warn ``message`` (a :class:`DiagnosticWarning` at the user's line) unless its
    finding ``key`` was found at the previous solve of the same stream (``before``): the one
    rule by which the streaming fits (:meth:`dmdidc.DMDidc.partial_fit`,
    :meth:`dmdidc.OutputDMDidc.partial_fit`) warn, once per new finding, so that their solve
    after every chunk does not repeat a finding that stands; one that went away and comes
    back warns anew.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_new("outliers", "found again", frozenset({"outliers"}))
    ...     warn_new("feedback", "new", frozenset({"outliers"}))
    >>> [str(w.message) for w in caught]
    ['new']
    """
    if key not in before:
        warn_model(message, DiagnosticWarning)
