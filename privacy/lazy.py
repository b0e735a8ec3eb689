"""Alias of :mod:`_toolbox.lazy`, where this module moved: importing ``privacy.lazy`` gives that
module itself (imports and pickles naming ``privacy.lazy`` keep working)."""

import sys

import _toolbox.lazy

sys.modules[__name__] = _toolbox.lazy
