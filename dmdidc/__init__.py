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
from dmdidc.model import DelayedPlant, as_plant

__all__ = [
    "DelayedPlant",
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
