"""Delay-aware controllers: gain design, predictive and fractional-delay feedback, MPC."""

from controllers.analysis import (
    DelayMismatchStudy,
    closed_loop_matrix,
    delay_mismatch_study,
    plot_delay_mismatch,
    spectral_radius,
)
from controllers.errors import SolverError
from controllers.factory import CONTROLLER_NAMES, LINEAR_CONTROLLER_NAMES, make_controller
from controllers.feedback import (
    FractionalDelayController,
    NaiveStateFeedback,
    PredictiveController,
    reduced_input_matrix,
)
from controllers.gains import is_schur, lqr_gain, place_gain
from controllers.mpc import DelayedMPC, MPCResult

__all__ = [
    "CONTROLLER_NAMES",
    "LINEAR_CONTROLLER_NAMES",
    "SolverError",
    "make_controller",
    "DelayMismatchStudy",
    "DelayedMPC",
    "MPCResult",
    "FractionalDelayController",
    "NaiveStateFeedback",
    "PredictiveController",
    "closed_loop_matrix",
    "delay_mismatch_study",
    "is_schur",
    "lqr_gain",
    "place_gain",
    "plot_delay_mismatch",
    "reduced_input_matrix",
    "spectral_radius",
]
