"""Alias of :mod:`dmdidc.inference.intervals`, where this module moved: importing
``dmdidc.intervals`` gives that module itself (imports and pickles naming ``dmdidc.intervals`` keep
working)."""

import sys

import dmdidc.inference.intervals

sys.modules[__name__] = dmdidc.inference.intervals
