"""Differentially private releases of sufficient statistics.

* :mod:`~dmdidc.private.sensitivity`: how much one privacy unit can move the released vector;
* :mod:`~dmdidc.private.release`: one release through a :mod:`privacy` mechanism, calibrated
  from that sensitivity, and its guarantee (:class:`PrivacyRelease`).

Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_exports

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "dmdidc.private.sensitivity": ["StatisticsSensitivity", "statistics_sensitivity",
                                   "PRIVACY_UNITS"],
    "dmdidc.private.release": ["PrivacyRelease", "privatize_statistics", "describe_release",
                               "calibrate_release", "MECHANISMS"],
})
