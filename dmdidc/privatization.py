"""Alias of :mod:`dmdidc.private.release`, where this module moved: importing
``dmdidc.privatization`` gives that module itself (imports and pickles naming
``dmdidc.privatization`` keep working)."""

import sys

import dmdidc.private.release

sys.modules[__name__] = dmdidc.private.release
