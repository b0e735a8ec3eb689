"""The errors ``controllers`` raises, re-exported from :mod:`_toolbox.errors` (their home).

Kept so that ``from controllers.errors import SolverError`` and pickled errors keep working.
"""

from __future__ import annotations

from _toolbox.errors import SolverError

__all__ = ["SolverError"]
