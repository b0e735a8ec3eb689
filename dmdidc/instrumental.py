"""Alias of :mod:`dmdidc.regression.instrumental`, where this module moved: importing
``dmdidc.instrumental`` gives that module itself (imports and pickles naming
``dmdidc.instrumental`` keep working)."""

import sys

import dmdidc.regression.instrumental

sys.modules[__name__] = dmdidc.regression.instrumental
