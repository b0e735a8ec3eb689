"""Regression of the DMDidc model on lagged data: least squares, instrumental variables, Huber.

* :mod:`~dmdidc.regression.solution`: the one regression value (:class:`RegressionSolution`),
  one-pass Gram and tall-skinny QR accumulators, lagged data;
* :mod:`~dmdidc.regression.instrumental`: instrumental variables for noisy states;
* :mod:`~dmdidc.regression.robust`: Huber's M-estimator for heavy-tailed noise;
* :mod:`~dmdidc.regression.refined`: refined instruments simulated from a first-stage model.

``dmdidc.regression`` was one module; every name it had is still importable from here (its
names are imported on first use, PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes

# public name -> module that defines it (imported on first attribute access, PEP 562)
_EXPORTS = {
    "RegressionSolution": "dmdidc.regression.solution",
    "GramAccumulator": "dmdidc.regression.solution",
    "QRAccumulator": "dmdidc.regression.solution",
    "make_accumulator": "dmdidc.regression.solution",
    "lagged_inputs": "dmdidc.regression.solution",
    "assemble_solution": "dmdidc.regression.solution",
    "gram_factors": "dmdidc.regression.solution",
    "solve_normal_equations": "dmdidc.regression.solution",
    "regression_blocks": "dmdidc.regression.solution",
    "instrumental_solution": "dmdidc.regression.instrumental",
    "coefficient_jacobian": "dmdidc.regression.instrumental",
    "huber_solution": "dmdidc.regression.robust",
    "huber_threshold": "dmdidc.regression.robust",
    "least_squares": "dmdidc.regression.solution",
    "long_run_covariance": "dmdidc.regression.instrumental",
    "model_instruments": "dmdidc.regression.refined",
    "reference_projection": "dmdidc.regression.refined",
    "simulate_forced": "dmdidc.regression.refined",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
