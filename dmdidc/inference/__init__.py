"""What the fitted regression says about the plant: block tests, delay bound, continuous model.

* :mod:`~dmdidc.inference.blocks`: which input blocks act (a test on the estimator's covariance);
* :mod:`~dmdidc.inference.selection`: the delay bound chosen by an information criterion;
* :mod:`~dmdidc.inference.recovery`: ``A_c``, ``B_c`` and the fractional delays;
* :mod:`~dmdidc.inference.intervals`: confidence intervals (asymptotic, bootstrap);
* :mod:`~dmdidc.inference.diagnostics`: warnings when the data break the method's assumptions.

Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes

# public name -> module that defines it (imported on first attribute access, PEP 562)
_EXPORTS = {
    "BlockTest": "dmdidc.inference.blocks",
    "block_test": "dmdidc.inference.blocks",
    "column_covariances": "dmdidc.inference.blocks",
    "restricted_coefficients": "dmdidc.inference.blocks",
    "restriction_projector": "dmdidc.inference.blocks",
    "DelayBoundSelection": "dmdidc.inference.selection",
    "largest_bound": "dmdidc.inference.selection",
    "select_max_delay": "dmdidc.inference.selection",
    "ContinuousModelWarning": "dmdidc.inference.recovery",
    "continuous_state_matrix": "dmdidc.inference.recovery",
    "recover_channel": "dmdidc.inference.recovery",
    "recover_continuous": "dmdidc.inference.recovery",
    "IntervalEstimate": "dmdidc.inference.intervals",
    "ConfidenceIntervals": "dmdidc.inference.intervals",
    "asymptotic_intervals": "dmdidc.inference.intervals",
    "bootstrap_intervals": "dmdidc.inference.intervals",
    "INTERVAL_METHODS": "dmdidc.inference.intervals",
    "eigenvalue_standard_errors": "dmdidc.inference.diagnostics",
    "identification_warnings": "dmdidc.inference.diagnostics",
    "logarithm_evidence": "dmdidc.inference.diagnostics",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
