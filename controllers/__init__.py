"""Delay-aware controllers: gain design, predictive and fractional-delay feedback, MPC.

The names below are imported on first use (PEP 562): ``import controllers`` does not load
cvxpy until an MPC is asked for.
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes
from controllers.names import CONTROLLER_NAMES, LINEAR_CONTROLLER_NAMES

# public name -> module that defines it
_EXPORTS = {
    "DelayMismatchStudy": "controllers.analysis",
    "closed_loop_matrix": "controllers.analysis",
    "delay_mismatch_study": "controllers.analysis",
    "plot_delay_mismatch": "controllers.analysis",
    "spectral_radius": "controllers.analysis",
    "SolverError": "controllers.errors",
    "make_controller": "controllers.factory",
    "FractionalDelayController": "controllers.feedback",
    "NaiveStateFeedback": "controllers.feedback",
    "PredictiveController": "controllers.feedback",
    "reduced_input_matrix": "controllers.feedback",
    "is_schur": "controllers.gains",
    "lqr_gain": "controllers.gains",
    "place_gain": "controllers.gains",
    "DelayedMPC": "controllers.mpc",
    "MPCResult": "controllers.mpc",
}

__all__ = [
    "CONTROLLER_NAMES",
    "DelayMismatchStudy",
    "DelayedMPC",
    "FractionalDelayController",
    "LINEAR_CONTROLLER_NAMES",
    "MPCResult",
    "NaiveStateFeedback",
    "PredictiveController",
    "SolverError",
    "closed_loop_matrix",
    "delay_mismatch_study",
    "is_schur",
    "lqr_gain",
    "make_controller",
    "place_gain",
    "plot_delay_mismatch",
    "reduced_input_matrix",
    "spectral_radius",
]

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
