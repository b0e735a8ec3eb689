"""The bias of per-trajectory trends on short trajectories (the ``trend_bias`` check).

``detrend="constant"`` (``"linear"``) fits one intercept (and slope) per trajectory
(:func:`dmdidc.fitting.trajectory_trend_fit`): by Frisch-Waugh, least squares on each
trajectory's regression rows with their own mean (line) removed.  The lagged state is then
correlated with the removed mean of the errors: ``x_l`` holds ``e_k`` for every ``k < l``, so
the centred regressor and error of one trajectory share ``sum_{k<l} P_kl e_k`` (``P`` the
projection on the trend) and the fit is biased by

    E[Theta_hat] - Theta ~= -[Sigma S^T, 0] G^-1,    S = sum_t sum_{d>=1} w_t(d) A_d^(d-1),

``w_t(d) = sum_k P_t[k, k+d]`` (``(N_t - d) / N_t`` for a mean over ``N_t`` samples), ``Sigma``
the one-step error covariance and ``G`` the Gram of the centred regressors: Nickell's (1981)
dynamic-panel bias, ``-(1 + a) / N_t`` for a scalar ``x_{k+1} = a x_k + e_k``.  It shrinks as
``1 / N_t`` while the standard error shrinks as ``1 / sqrt(sum_t N_t)``, so it is comparable to
the standard error when there are many short trajectories (bias / SE ~ sqrt(count / N_t)),
and no interval covers it.  Measured on a damped oscillator (``A_c`` 2 x 2, one input with a
fractional delay, process noise; ``benchmarks/bench_detrend_coverage.py``): ``A_d``'s bias was
0.3-0.6 standard errors for 60 trajectories of 20 samples with ``"constant"``, 0.5-1.2 with
``"linear"`` (its 95 % intervals covered 0.79-0.91), below 0.2 for 12 of 100
(docs/identification.md, *Many short experiments*).

The estimate plugs in the fit's ``Sigma`` and unscaled covariance and, by a few fixed-point
steps, ``A_d`` minus its own bias (at the biased ``A_d`` alone it was 0.75 of the Monte Carlo
bias at 24 samples per trajectory, with the steps 1.02-1.11 on 5 random plants); the
regressors' correlation with the errors through the inputs is ignored (open-loop inputs).  It
is an order for the warning, not a correction: the check fails when the estimated bias of some
coefficient exceeds :data:`TREND_BIAS_SHARE` of its standard error (a bias of 0.25 SE costs a
95 % interval about one point of coverage).
"""

from __future__ import annotations

import numpy as np

from dmdidc.inference.checks import Check
from dmdidc.regression.solution import RegressionSolution

__all__ = ["TREND_BIAS_SHARE", "trend_bias", "trend_bias_check"]

#: The check fails when a coefficient's estimated trend bias exceeds this share of its
#: standard error.
TREND_BIAS_SHARE = 0.25

#: The sum over lags stops when the remaining terms are below this share of the sum.
_TAIL = 1e-6
#: Fixed-point steps of the bias at ``A_d`` minus its bias (1: the plug-in).
_ITERATIONS = 3
#: A power of ``A_d`` above this norm: explosive, the stationary order does not apply.
_EXPLOSIVE = 1e8


def lag_weights(samples: int, kind: str) -> np.ndarray:
    """``w(d) = sum_k P[k, k+d]`` for ``d = 1 .. samples - 1``: the trend projection ``P`` of
    ``samples`` regression samples (mean, or mean and line) summed along its ``d``-th
    superdiagonal.

    Examples
    --------
    >>> lag_weights(4, "constant")
    array([0.75, 0.5 , 0.25])
    >>> np.round(lag_weights(4, "linear"), 12)          # P = 1 1^T / 4 + c c^T / (c^T c)
    array([ 1. ,  0.2, -0.2])
    """
    d = np.arange(1, samples, dtype=float)
    weights = (samples - d) / samples
    if kind == "linear" and samples > 1:
        # sum_{k < samples - d} c_k c_{k+d}, c_k = k - a centred, in closed form
        M, a = samples - d, (samples - 1) / 2.0
        first = M * (M - 1) / 2.0 - M * a
        second = (M - 1) * M * (2 * M - 1) / 6.0 - a * M * (M - 1) + M * a * a
        weights = weights + (second + d * first) / (samples * (samples ** 2 - 1) / 12.0)
    return weights


def trend_bias(solution: RegressionSolution, lengths: list[int], R: int, kind: str
               ) -> np.ndarray | None:
    """The estimated bias of ``solution``'s coefficients from per-trajectory trends (module
    notes), shape ``(n, p)``; ``None`` when ``A_d`` is explosive (no stationary order).

    Parameters
    ----------
    solution : RegressionSolution
        The fit with the trends (:func:`dmdidc.fitting.with_trend_parameters`).
    lengths : list of int
        Input samples ``K`` of each trajectory.
    R : int
        The delay bound (``K - R`` regression samples per trajectory).
    kind : {"constant", "linear"}

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dmdidc import DMDidc
    >>> rng = np.random.default_rng(0)
    >>> Xs, Us = [], []
    >>> for _ in range(100):                          # 100 trajectories of 10 samples
    ...     U, X = rng.standard_normal((1, 10)), np.zeros((1, 11))
    ...     for k in range(10):
    ...         X[:, k + 1] = 0.5 * X[:, k] + 0.1 * U[:, k] + rng.standard_normal()
    ...     Xs.append(X)
    ...     Us.append(U)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")       # the trend_bias check warns: it fails
    ...     est = DMDidc(detrend="constant", estimator="ls").fit(Xs, Us, dt=1.0)
    >>> bias = trend_bias(est.regression_, [10] * 100, 0, "constant")
    >>> bool(-0.2 < bias[0, 0] < -0.1)        # Nickell's -(1 + a) / N_t = -0.15
    True
    """
    n = solution.coefficients.shape[0]
    samples = [K - R for K in lengths if K - R > 1]
    if not samples:
        return np.zeros_like(solution.coefficients)
    total = np.zeros(max(samples) - 1)
    for N in set(samples):
        total[:N - 1] += samples.count(N) * lag_weights(N, kind)
    A, bias = solution.coefficients[:, :n], None
    for _ in range(_ITERATIONS):
        S = _lag_sum(total, A)
        if S is None:
            return None
        moment = np.zeros_like(solution.coefficients)
        moment[:, :n] = -solution.residual_covariance @ S.T
        bias = moment @ solution.unscaled_covariance
        # the bias at the unbiased A_d (the plug-in at the biased one is smaller: 0.75 of
        # the Monte Carlo bias at 24 samples per trajectory)
        A = solution.coefficients[:, :n] - bias[:, :n]
    return bias


def _lag_sum(weights: np.ndarray, A: np.ndarray) -> np.ndarray | None:
    """``sum_d weights[d - 1] A^(d-1)``, stopped where the rest is negligible; ``None`` for
    an explosive ``A``."""
    S, power = np.zeros_like(A), np.eye(len(A))
    tail = np.cumsum(weights[::-1])[::-1]              # sum of the weights from lag d on
    for d, weight in enumerate(weights):
        S += weight * power
        power = power @ A
        size = np.linalg.norm(power)
        if size > _EXPLOSIVE or not np.isfinite(size):
            return None
        remaining = tail[d + 1] if d + 1 < len(weights) else 0.0
        if size * remaining <= _TAIL * np.linalg.norm(S):
            break
    return S


def trend_bias_check(solution: RegressionSolution, lengths: list[int], R: int,
                     kind: str) -> Check:
    """The ``trend_bias`` check of a fit with ``detrend=kind``: is every coefficient's
    estimated bias from the per-trajectory trends (:func:`trend_bias`) below
    :data:`TREND_BIAS_SHARE` of its standard error?

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=0.5, dt=1.0)
    >>> U = random_excitation(1, 2000, rng=0)
    >>> X = plant.simulate([0.0], U) + 0.01 * np.random.default_rng(1).standard_normal((1, 2001))
    >>> est = DMDidc(max_delay=1, detrend="constant", estimator="ls").fit(X, U, dt=1.0)
    >>> trend_bias_check(est.regression_, [2000], 1, "constant").passed
    True
    """
    question = "Is the bias of the per-trajectory trends small against the standard errors?"
    if solution.estimator == "iv":
        # instruments from the inputs alone are independent of each trajectory's mean noise:
        # no within-trajectory (Nickell) bias, and the formula below (least squares' inverse
        # Gram) does not apply to IV's covariance (a review measured IV's bias at 60 x 20
        # samples -0.013 +/- 0.008 where the formula gave -25 and warned on every fit)
        return Check("trend_bias", question, None,
                     finding="not estimated for instrumental variables (instruments from the "
                             "inputs: no within-trajectory bias)")
    bias = trend_bias(solution, lengths, R, kind)
    if bias is None:
        return Check("trend_bias", question, None,
                     finding="not estimated (explosive A_d: no stationary order)")
    errors = solution.standard_errors
    ratio = np.abs(bias) / np.where(errors > 0, errors, np.inf)
    largest = float(ratio.max(initial=0.0))
    used = [K - R for K in lengths if K > R]
    shortest = min(used, default=0)
    finding = (f"estimated bias up to {largest:.2g} standard errors ({len(used)} trajectories, "
               f"the shortest {shortest} regression samples; Nickell's O(1 / samples) bias of "
               f"detrend={kind!r}, which the intervals do not cover)")
    if largest <= TREND_BIAS_SHARE:
        return Check("trend_bias", question, True, largest, TREND_BIAS_SHARE, finding)
    return Check("trend_bias", question, False, largest, TREND_BIAS_SHARE, finding,
                 "longer trajectories (joined experiments), or subtract a known operating "
                 "point and fit with detrend=None (or detrend='auto': one intercept for all)")
