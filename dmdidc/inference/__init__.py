"""What the fitted regression says about the plant: block tests, delay bound, continuous model.

* :mod:`~dmdidc.inference.blocks`: which input blocks act (a test on the estimator's covariance);
* :mod:`~dmdidc.inference.selection`: the delay bound chosen by an information criterion;
* :mod:`~dmdidc.inference.recovery`: ``A_c``, ``B_c`` and the fractional delays;
* :mod:`~dmdidc.inference.intervals`: confidence intervals (asymptotic, bootstrap);
* :mod:`~dmdidc.inference.offset`: the offset test and the operating point;
* :mod:`~dmdidc.inference.residuals`: residual analysis (correlations, moment tests);
* :mod:`~dmdidc.inference.checks`: the value of a check and of all checks of a fit;
* :mod:`~dmdidc.inference.diagnostics`: every check of a fit, warned when it fails.

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
    "fit_diagnostics": "dmdidc.inference.diagnostics",
    "model_checks": "dmdidc.inference.diagnostics",
    "kept_blocks": "dmdidc.inference.blocks",
    "Check": "dmdidc.inference.checks",
    "DiagnosticWarning": "dmdidc.inference.checks",
    "FitDiagnostics": "dmdidc.inference.checks",
    "OffsetTest": "dmdidc.inference.offset",
    "offset_test": "dmdidc.inference.offset",
    "operating_point": "dmdidc.inference.offset",
    "ResidualAnalysis": "dmdidc.inference.residuals",
    "residual_analysis": "dmdidc.inference.residuals",
    "moment_checks": "dmdidc.inference.residuals",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
