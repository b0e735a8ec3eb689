"""Differential privacy: SaS numerics, noise mechanisms, accounting and federated learning."""

from privacy.errors import (
    AccountingError,
    DimensionError,
    NonFiniteError,
    ParameterError,
    ToolboxError,
)

__all__ = [
    "AccountingError",
    "DimensionError",
    "NonFiniteError",
    "ParameterError",
    "ToolboxError",
]
