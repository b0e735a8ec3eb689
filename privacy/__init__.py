"""Differential privacy: SaS numerics, noise mechanisms, accounting and federated learning."""

from privacy.errors import (
    AccountingError,
    DimensionError,
    NonFiniteError,
    ParameterError,
    ToolboxError,
)
from privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    NeighboringRelation,
    SaSMechanism,
)

__all__ = [
    "AccountingError",
    "DimensionError",
    "GaussianMechanism",
    "LaplaceMechanism",
    "NeighboringRelation",
    "SaSMechanism",
    "NonFiniteError",
    "ParameterError",
    "ToolboxError",
]
