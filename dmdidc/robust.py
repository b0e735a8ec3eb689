"""Alias of :mod:`dmdidc.regression.robust`, where this module moved: importing ``dmdidc.robust``
gives that module itself (imports and pickles naming ``dmdidc.robust`` keep working)."""

import sys

import dmdidc.regression.robust

sys.modules[__name__] = dmdidc.regression.robust
