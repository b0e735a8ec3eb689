"""The controllers' names: the one list the factory, the analysis and the CLI read.

A module of its own, with no imports, so that the ``dmdidc`` command can offer the names
without loading the controllers and their solvers.
"""

__all__ = ["CONTROLLER_NAMES", "LINEAR_CONTROLLER_NAMES"]

#: Every controller :func:`controllers.make_controller` builds.
CONTROLLER_NAMES = ("fractional", "truncated", "exact", "naive", "mpc")
#: The linear ones (``feedback_matrices()``; exact stability via :mod:`controllers.analysis`).
LINEAR_CONTROLLER_NAMES = ("fractional", "truncated", "exact", "naive")
