"""Alias of :mod:`dmdidc.federated.identification`, where this module moved: importing
``dmdidc.federated_identification`` gives that module itself (imports and pickles naming
``dmdidc.federated_identification`` keep working)."""

import sys

import dmdidc.federated.identification

sys.modules[__name__] = dmdidc.federated.identification
