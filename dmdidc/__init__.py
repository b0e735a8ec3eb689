"""Dynamic Mode Decomposition with input-delayed control (DMDidc)."""

from dmdidc.discretization import delay_blocks, split_delay, zoh_matrices
from dmdidc.errors import (
    DimensionError,
    InsufficientExcitationError,
    LogarithmError,
    NonFiniteError,
    NotFittedError,
    ParameterError,
    ToolboxError,
)
from dmdidc.estimator import DMDidc
from dmdidc.excitation import ExcitationReport, check_excitation, random_excitation, samples_needed
from dmdidc.model import DelayedPlant, as_plant
from dmdidc.recovery import ContinuousModelWarning, recover_continuous
from dmdidc.regression import RegressionSolution

__all__ = [
    "ContinuousModelWarning",
    "DMDidc",
    "DelayedPlant",
    "ExcitationReport",
    "RegressionSolution",
    "check_excitation",
    "random_excitation",
    "recover_continuous",
    "samples_needed",
    "DimensionError",
    "InsufficientExcitationError",
    "LogarithmError",
    "NonFiniteError",
    "NotFittedError",
    "ParameterError",
    "ToolboxError",
    "as_plant",
    "delay_blocks",
    "split_delay",
    "zoh_matrices",
]
