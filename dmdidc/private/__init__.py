"""Differentially private releases of sufficient statistics.

* :mod:`~dmdidc.private.sensitivity`: how much one privacy unit can move the released vector;
* :mod:`~dmdidc.private.release`: one release through a :mod:`privacy` mechanism, calibrated
  from that sensitivity, and its guarantee (:class:`PrivacyRelease`).

Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes

# public name -> module that defines it (imported on first attribute access, PEP 562)
_EXPORTS = {
    "StatisticsSensitivity": "dmdidc.private.sensitivity",
    "statistics_sensitivity": "dmdidc.private.sensitivity",
    "PRIVACY_UNITS": "dmdidc.private.sensitivity",
    "PrivacyRelease": "dmdidc.private.release",
    "privatize_statistics": "dmdidc.private.release",
    "describe_release": "dmdidc.private.release",
    "calibrate_release": "dmdidc.private.release",
    "MECHANISMS": "dmdidc.private.release",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
