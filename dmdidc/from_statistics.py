"""Alias of :mod:`dmdidc.statistics.fit`, where this module moved: importing
``dmdidc.from_statistics`` gives that module itself (imports and pickles naming
``dmdidc.from_statistics`` keep working)."""

import sys

import dmdidc.statistics.fit

sys.modules[__name__] = dmdidc.statistics.fit
