"""Alias of :mod:`_toolbox.errors`, where this module moved: importing ``controllers.errors`` gives
that module itself (imports and pickles naming ``controllers.errors`` keep working)."""

import sys

import _toolbox.errors

sys.modules[__name__] = _toolbox.errors
