"""Alias of :mod:`dmdidc.inference.selection`, where this module moved: importing
``dmdidc.selection`` gives that module itself (imports and pickles naming ``dmdidc.selection`` keep
working)."""

import sys

import dmdidc.inference.selection

sys.modules[__name__] = dmdidc.inference.selection
