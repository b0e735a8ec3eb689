"""Alias of :mod:`_toolbox.plotting`, where this module moved: importing ``privacy.plotting`` gives
that module itself (imports and pickles naming ``privacy.plotting`` keep working)."""

import sys

import _toolbox.plotting

sys.modules[__name__] = _toolbox.plotting
