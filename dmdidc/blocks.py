"""Alias of :mod:`dmdidc.inference.blocks`, where this module moved: importing ``dmdidc.blocks``
gives that module itself (imports and pickles naming ``dmdidc.blocks`` keep working)."""

import sys

import dmdidc.inference.blocks

sys.modules[__name__] = dmdidc.inference.blocks
