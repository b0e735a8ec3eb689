"""Delay-aware controllers: gain design, predictive and fractional-delay feedback, MPC.

The names below are imported on first use (PEP 562): ``import controllers`` loads no numerics;
an MPC loads its QP solver when it is built, and cvxpy only with ``solver="CVXPY"``.
"""

from __future__ import annotations

from _toolbox.lazy import lazy_exports
from controllers.names import CONTROLLER_NAMES, LINEAR_CONTROLLER_NAMES

__all__ = ["CONTROLLER_NAMES", "LINEAR_CONTROLLER_NAMES"]
# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "controllers.analysis": ["DelayMismatchStudy", "delay_mismatch_study", "plot_delay_mismatch"],
    "controllers.lifted": ["closed_loop_matrix", "spectral_radius"],
    "_toolbox.errors": ["SolverError", "UnstableLoopWarning"],
    "controllers.factory": ["make_controller"],
    "controllers.feedback": ["FractionalDelayController", "NaiveStateFeedback",
                             "PredictiveController", "reduced_input_matrix",
                             "whole_delay_input_matrix"],
    "controllers.gains": ["is_schur", "lqr_gain", "output_weight", "place_gain"],
    "controllers.mpc": ["DelayedMPC", "MPCResult"],
    "controllers.observer": ["DelayedKalmanObserver", "OutputFeedback"],
}, eager=__all__)
