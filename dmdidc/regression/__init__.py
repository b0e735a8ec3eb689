"""Regression of the DMDidc model on lagged data: least squares, instrumental variables, Huber.

* :mod:`~dmdidc.regression.solution`: the one regression value (:class:`RegressionSolution`),
  one-pass Gram and tall-skinny QR accumulators, lagged data;
* :mod:`~dmdidc.regression.covariance`: the coefficient covariance as a sum of Kronecker
  products (never the (n p)^2 matrix);
* :mod:`~dmdidc.regression.instrumental`: instrumental variables for noisy states;
* :mod:`~dmdidc.regression.lag_products`: sums of lagged products by blocked FFT;
* :mod:`~dmdidc.regression.pod`: the leading POD modes of many sensors (``svd_rank``);
* :mod:`~dmdidc.regression.propagation`: linear recursions as matrix products;
* :mod:`~dmdidc.regression.robust`: Huber's M-estimator for heavy-tailed noise;
* :mod:`~dmdidc.regression.refined`: refined instruments simulated from a first-stage model.

``dmdidc.regression`` was one module; every name it had is still importable from here (its
names are imported on first use, PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_exports

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "dmdidc.regression.solution": ["RegressionSolution", "GramAccumulator", "QRAccumulator",
                                   "make_accumulator", "lagged_inputs", "assemble_solution",
                                   "gram_factors", "solve_normal_equations", "regression_blocks",
                                   "least_squares"],
    "dmdidc.regression.covariance": ["KroneckerCovariance"],
    "dmdidc.regression.instrumental": ["instrumental_solution", "coefficient_jacobian",
                                       "long_run_covariance"],
    "dmdidc.regression.pod": ["pod_modes"],
    "dmdidc.regression.robust": ["huber_solution", "huber_threshold"],
    "dmdidc.regression.refined": ["model_instruments", "reference_projection", "simulate_forced"],
})
