"""Dynamic Mode Decomposition with input-delayed control (DMDidc)."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

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

try:
    __version__ = _version("dmdidc")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

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
