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
from _toolbox.lazy import lazy_exports

__all__ = ["AccountingError", "DimensionError", "NonFiniteError", "ParameterError", "ToolboxError"]
# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "privacy.accountant": ["Accountant"],
    "privacy.mechanisms": ["GaussianMechanism", "LaplaceMechanism", "NeighboringRelation",
                           "SaSMechanism"],
}, eager=__all__, submodules=True)
