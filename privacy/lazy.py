"""Lazy package attributes, re-exported from :mod:`_toolbox.lazy` (their home).

Kept so that ``from privacy.lazy import lazy_attributes`` keeps working.
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes

__all__ = ["lazy_attributes"]
