"""Alias of :mod:`_toolbox.validation`, where this module moved: importing ``privacy.validation``
gives that module itself (imports and pickles naming ``privacy.validation`` keep working)."""

import sys

import _toolbox.validation

sys.modules[__name__] = _toolbox.validation
