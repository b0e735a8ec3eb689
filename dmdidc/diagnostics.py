"""Alias of :mod:`dmdidc.inference.diagnostics`, where this module moved: importing
``dmdidc.diagnostics`` gives that module itself (imports and pickles naming ``dmdidc.diagnostics``
keep working)."""

import sys

import dmdidc.inference.diagnostics

sys.modules[__name__] = dmdidc.inference.diagnostics
