"""Alias of :mod:`dmdidc.private.sensitivity`, where this module moved: importing
``dmdidc.sensitivity`` gives that module itself (imports and pickles naming ``dmdidc.sensitivity``
keep working)."""

import sys

import dmdidc.private.sensitivity

sys.modules[__name__] = dmdidc.private.sensitivity
