"""What the fitted regression says about the plant: block tests, delay bound, continuous model.

* :mod:`~dmdidc.inference.blocks`: which input blocks act (a test on the estimator's covariance);
* :mod:`~dmdidc.inference.selection`: the delay bound chosen by an information criterion;
* :mod:`~dmdidc.inference.recovery`: ``A_c``, ``B_c`` and the fractional delays;
* :mod:`~dmdidc.inference.ambiguity`: whether a weak block decided the whole delay;
* :mod:`~dmdidc.inference.intervals`: confidence intervals (asymptotic, bootstrap);
* :mod:`~dmdidc.inference.jacobian`: the analytic Jacobian of the recovered plant (delta method);
* :mod:`~dmdidc.inference.frechet`: its derivatives in the Schur basis (nearly defective ``A_c``);
* :mod:`~dmdidc.inference.offset`: the offset test and the operating point;
* :mod:`~dmdidc.inference.residuals`: residual analysis (correlations, moment tests);
* :mod:`~dmdidc.inference.checks`: the value of a check and of all checks of a fit;
* :mod:`~dmdidc.inference.diagnostics`: every check of a fit, warned when it fails.

Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_exports

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "dmdidc.inference.blocks": ["BlockTest", "block_test", "column_covariances",
                                "restricted_coefficients", "restriction_projector", "kept_blocks",
                                "with_earlier_blocks"],
    "dmdidc.inference.selection": ["DelayBoundSelection", "largest_bound", "select_max_delay"],
    "dmdidc.inference.recovery": ["ContinuousModelWarning", "continuous_state_matrix",
                                  "recover_channel", "recover_continuous"],
    "dmdidc.inference.intervals": ["IntervalEstimate", "ConfidenceIntervals",
                                   "asymptotic_intervals", "bootstrap_intervals",
                                   "INTERVAL_METHODS"],
    "dmdidc.inference.jacobian": ["model_jacobian", "ModelJacobian"],
    "dmdidc.inference.ambiguity": ["DelayAmbiguity", "delay_ambiguity"],
    "dmdidc.inference.diagnostics": ["eigenvalue_standard_errors", "identification_warnings",
                                     "logarithm_evidence", "fit_diagnostics", "model_checks"],
    "dmdidc.inference.checks": ["Check", "DiagnosticWarning", "FitDiagnostics"],
    "dmdidc.inference.offset": ["OffsetTest", "offset_test", "operating_point"],
    "dmdidc.inference.residuals": ["ResidualAnalysis", "residual_analysis", "moment_checks"],
})
