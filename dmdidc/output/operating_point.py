"""The input operating point of an output model: where the data sat, for control.

An :class:`~dmdidc.OutputDMDidc` fitted to inputs around a non-zero level ``u_op`` (a valve at
45 %) drives its states with the inputs themselves, ``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j}``,
and puts what remains constant in the output offset ``c`` of ``y = C x + c``.  Its equilibrium
under ``u_op`` is ``x_op = (I - A_d)^-1 B_d u_op = -A_c^-1 B_c u_op`` with the output
``y_op = C x_op + c``: the outputs' level in the data (the fitted offset is consistent with it by
construction).  Without it a controller regulates ``x`` to 0, i.e. the inputs to 0 (valve shut,
heater off, walkthrough finding 3); with it, as :class:`~dmdidc.OperatingPoint` of the model's
:meth:`~dmdidc.OutputDMDidc.plant`, controllers and the observer regulate around ``(x_op,
u_op)``.  Because ``x_op`` is the model's exact equilibrium, the model in deviations and the
model in the data's units have the same matrices: nothing else changes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["OPERATING_LEVEL", "input_level", "input_operating_point"]

#: An input whose mean is below this fraction of its spread (standard deviation about the mean)
#: is excitation around zero, not an operating point: zero-mean excitation of K samples has a
#: mean of about 1/sqrt(K) of its spread (0.02 at K = 2000), a plant run at an operating point
#: a mean of several spreads (the walkthrough's valve: 45 % +- 5 %).
OPERATING_LEVEL = 0.1
#: Two-sided level at which the mean must also differ from zero: the fraction alone is no test,
#: and white zero-mean excitation of 400 samples passed it on 4 of 60 fits (an operating point
#: made up from chance, which a controller would then hold).
_SIGNIFICANCE = 1e-3
#: An input whose samples lie on one side of zero but for this fraction of its spread (sensor
#: noise on an off heater) is one-signed: a level however slowly it varies.
_ONE_SIDED_SLACK = 0.1


def input_level(experiments: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray | None:
    """The mean input ``(m,)`` over every experiment's ``(Y, U)``, or ``None`` when every input
    varies around zero.

    An input sits at a level when it is one-signed (a heater between off and full power, a
    valve between 0 and 100 %: its 5th percentile at least, or its 95th at most, a tenth of its
    spread on the other side of zero) with a non-zero mean, or when its mean exceeds
    :data:`OPERATING_LEVEL` of its spread and differs from zero beyond chance: a t test at
    level 1e-3 with the mean's long-run (HAC) standard error and the effective number of
    samples as degrees of freedom, so that slowly varying inputs are judged by their few
    independent values.
    """
    from scipy.special import stdtrit

    U = np.hstack([Ui for _, Ui in experiments])
    if U.shape[0] == 0 or U.shape[1] == 0:
        return None
    K = U.shape[1]
    mean = U.mean(axis=1)
    spread = U.std(axis=1)
    low, high = np.percentile(U, [5, 95], axis=1)
    slack = _ONE_SIDED_SLACK * spread
    one_signed = (mean != 0) & ((low >= -slack) | (high <= slack))
    level = np.abs(mean) > OPERATING_LEVEL * spread
    variance = spread ** 2
    long_run = _long_run_variance(U, variance)
    effective = np.where(long_run > 0, K * variance / np.maximum(long_run, np.finfo(float).tiny),
                         K)
    critical = stdtrit(np.maximum(np.minimum(effective, K) - 1.0, 1.0),
                       1.0 - _SIGNIFICANCE / 2)
    level &= np.abs(mean) > critical * np.sqrt(np.maximum(long_run, 0.0) / K)
    if not (level | one_signed).any():
        return None
    return mean


def _long_run_variance(U: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """Each input's long-run variance (the variance of its mean times K): ``variance`` times its
    autocorrelations (:func:`~dmdidc.regression.lag_products.autocorrelations`) with Bartlett
    weights up to twice the lag where they first fall below 0.1 (at most a quarter of the
    record)."""
    from dmdidc.regression.lag_products import autocorrelations

    K = U.shape[1]
    out = np.zeros(U.shape[0])
    for i, row in enumerate(autocorrelations([U], K // 4).T):
        if variance[i] <= 0:
            continue
        below = np.flatnonzero(row < 0.1)
        lags = min(2 * (int(below[0]) if below.size else K // 4), K // 4)
        weights = 1.0 - np.arange(1, lags + 1) / (lags + 1.0)
        out[i] = variance[i] * (1.0 + 2.0 * float(weights @ row[1:lags + 1]))
    return np.maximum(out, variance / K)


def input_operating_point(A_c: np.ndarray, B_c: np.ndarray, dt: float,
                          level: np.ndarray | None):
    """The equilibrium ``OperatingPoint(x_op, u_op)`` of an output model under the input level
    ``u_op``: ``x_op = (I - A_d)^-1 B_d u_op`` (:func:`dmdidc.model.steady_state`, equal to
    ``-A_c^-1 B_c u_op``) with ``(A_d, B_d)`` the hold of ``(A_c, B_c)`` over ``dt``; ``None``
    without a level or for a model with an integrator (no equilibrium under a non-zero
    input)."""
    from dmdidc.discretization import zoh_matrices
    from dmdidc.errors import NoSteadyStateError
    from dmdidc.model import OperatingPoint, steady_state

    if level is None:
        return None
    A_d, B_d = zoh_matrices(A_c, B_c, dt)
    try:
        state = steady_state(A_d, B_d @ level)
    except NoSteadyStateError:
        return None
    return OperatingPoint(state, level)
