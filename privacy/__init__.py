"""Differential privacy: SaS numerics, noise mechanisms, accounting and federated learning.

Importing the package is cheap: the errors are loaded at once, everything else (which needs
scipy) on first use, so ``import dmdidc`` does not pay for privacy it does not use.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

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
    "GaussianMechanism": "privacy.mechanisms",
    "LaplaceMechanism": "privacy.mechanisms",
    "NeighboringRelation": "privacy.mechanisms",
    "SaSMechanism": "privacy.mechanisms",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"privacy.{name}") is not None:
        value = importlib.import_module(f"privacy.{name}")   # a submodule: privacy.accounting
    else:
        raise AttributeError(f"module 'privacy' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
