"""The toolbox's exception hierarchy: one small tree for every package.

``ToolboxError`` is the base of every error raised deliberately by ``privacy``, ``dmdidc``,
``controllers`` and ``simulations``; it lives in this neutral base package (which imports
nothing of ours) so that every package can raise and catch the same classes.  Each error is
also a builtin: every input error is a ``ValueError``, ``NotFittedError`` an
``AttributeError`` (as in scikit-learn) and ``SolverError`` a ``RuntimeError``, so callers that
catch builtins keep working.

The classes stay importable from their old homes (``privacy.errors`` and ``controllers.errors``
are aliases of this module, ``dmdidc.errors`` re-exports them), so imports and pickles made
against those paths keep working.
"""

from __future__ import annotations

import sys
import warnings

__all__ = [
    "ToolboxError",
    "ParameterError",
    "DimensionError",
    "NonFiniteError",
    "AccountingError",
    "SolverError",
    "InsufficientExcitationError",
    "NotFittedError",
    "LogarithmError",
    "InconsistentModelError",
    "NoSteadyStateError",
    "ContinuousModelWarning",
    "DiagnosticWarning",
    "RepeatedReleaseWarning",
    "UnstableLoopWarning",
]  # the hierarchy only; warn_caller (below) is the packages' helper to issue the warnings


class ToolboxError(Exception):
    """Base class of every error raised deliberately by this toolbox."""


# ------------------------------------------------------------------ input errors (every package)
class ParameterError(ToolboxError, ValueError):
    """A scalar parameter is outside its accepted range or of the wrong type."""


class DimensionError(ToolboxError, ValueError):
    """An array has the wrong number of dimensions, shape or orientation."""


class NonFiniteError(ToolboxError, ValueError):
    """An array contains NaN or infinite entries."""


# ------------------------------------------------------------------ privacy accounting
class AccountingError(ToolboxError, ValueError):
    """A privacy accountant was asked for something it cannot bound rigorously."""


# ------------------------------------------------------------------ numerical solvers
class SolverError(ToolboxError, RuntimeError):
    """A numerical solver failed or reported an infeasible or inaccurate status."""


# ------------------------------------------------------------------ identification
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


class NoSteadyStateError(ParameterError):
    """A plant has no unique steady state under a constant input: ``A_d`` has an eigenvalue at
    1 (an integrator), so ``I - A_d`` is singular and the state drifts instead of settling."""


class ContinuousModelWarning(UserWarning):
    """The identified model may be unreliable (delay at the bound, no effect, offset, ...)."""


class DiagnosticWarning(ContinuousModelWarning):
    """A validation check of a fit failed (``dmdidc.inference.diagnostics``): the message names
    the check, the statistic, the threshold and the remedy."""


class RepeatedReleaseWarning(UserWarning):
    """The same plain data were released privately more than once: each release reports its own
    guarantee, the message the accountant's composition of them all."""


class UnstableLoopWarning(UserWarning):
    """A controller's closed loop on its own model (the model it was designed on) is not
    asymptotically stable: its spectral radius is 1 or more, so the loop diverges on the plant
    too if the model is right.  The message names the check, the radius and the remedies.
    Turn it into an error with ``warnings.simplefilter("error", UnstableLoopWarning)``."""


def warn_caller(message: str, category: type[Warning], inside: str) -> None:
    """Issue ``category`` attributed to the first calling line outside the directory
    ``inside`` (a package's folder), so that the user sees their own line, not ours."""
    frame, level = sys._getframe(1), 2      # level 1 would be this function
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
