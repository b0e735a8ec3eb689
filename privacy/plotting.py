"""Figures without pyplot, re-exported from :mod:`_toolbox.plotting` (their home).

Kept so that ``from privacy.plotting import new_figure, save_figure`` keeps working.
"""

from __future__ import annotations

from _toolbox.plotting import new_figure, save_figure

__all__ = ["new_figure", "save_figure"]
