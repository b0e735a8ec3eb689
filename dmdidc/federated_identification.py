"""Alias of :mod:`dmdidc.federated.identification`, where this module moved.

Keeps ``dmdidc.federated_identification`` imports and pickles working.
"""

from __future__ import annotations

from dmdidc.federated.identification import (
    FederatedIdentification,
    ReleaseAccount,
)

__all__ = [
    "FederatedIdentification",
    "ReleaseAccount",
]
