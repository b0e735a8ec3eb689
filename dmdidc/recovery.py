"""Alias of :mod:`dmdidc.inference.recovery`, where this module moved: importing
``dmdidc.recovery`` gives that module itself (imports and pickles naming ``dmdidc.recovery`` keep
working)."""

import sys

import dmdidc.inference.recovery

sys.modules[__name__] = dmdidc.inference.recovery
