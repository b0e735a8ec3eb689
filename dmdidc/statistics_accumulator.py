"""Alias of :mod:`dmdidc.statistics.accumulator`, where this module moved: importing
``dmdidc.statistics_accumulator`` gives that module itself (imports and pickles naming
``dmdidc.statistics_accumulator`` keep working)."""

import sys

import dmdidc.statistics.accumulator

sys.modules[__name__] = dmdidc.statistics.accumulator
