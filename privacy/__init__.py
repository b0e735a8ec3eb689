"""Differential privacy: SaS numerics, noise mechanisms, accounting and federated learning.

Importing the package is cheap: the errors are loaded at once, everything else (which needs
scipy) on first use, so ``import dmdidc`` does not pay for privacy it does not use.
"""

from __future__ import annotations

from _toolbox.errors import (
    AccountingError,
    DimensionError,
    NonFiniteError,
    ParameterError,
    ToolboxError,
)
from _toolbox.lazy import lazy_attributes

__all__ = [
    "Accountant",
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

# public name -> module that defines it (imported on first attribute access, PEP 562)
_LAZY = {
    "Accountant": "privacy.accountant",
    "GaussianMechanism": "privacy.mechanisms",
    "LaplaceMechanism": "privacy.mechanisms",
    "NeighboringRelation": "privacy.mechanisms",
    "SaSMechanism": "privacy.mechanisms",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), submodules=True)
