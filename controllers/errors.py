"""Errors of the controllers package (the shared base lives in :mod:`privacy.errors`)."""

from __future__ import annotations

from privacy.errors import ToolboxError

__all__ = ["SolverError"]


class SolverError(ToolboxError, RuntimeError):
    """A numerical solver failed or reported an infeasible or inaccurate status."""
