"""Robust (Huber) M-estimation of the DMDidc regression for heavy-tailed noise.

Least squares weights every sample by its squared residual, so under heavy-tailed noise (e.g.
symmetric alpha-stable with alpha < 2, whose variance is infinite) a few huge residuals decide
the fit and the error *grows* with the data.  The Huber estimator minimises

    sum_k rho(r_k),   r_k = || S^-1 (y_k - Theta phi_k) ||,   rho(r) = r^2 / 2 (r <= c),
                                                               c r - c^2 / 2 (r > c),

with one weight per sample for the whole residual vector (multivariate Huber, Maronna, Martin
and Yohai 2006, Sec. 6.6: the same weight for every row keeps the covariance in the Kronecker
form of least squares, so the block test applies unchanged).  ``S = diag(s)`` is a robust
scale per state: ``s = 1.4826 MAD`` of the residuals (50 % breakdown, finite under infinite
variance), re-estimated at every iteration (as statsmodels' RLM); ``c^2`` is the 0.9 quantile
of ``chi^2_n`` (the residual norm's Gaussian distribution), so 10 % of Gaussian samples are
down-weighted.  It is solved by iteratively reweighted least squares (IRLS) with weights
``w_k = min(1, c / r_k)``: for a fixed scale the objective is convex (a non-decreasing convex
function of a norm of an affine map), so IRLS converges to its minimiser (checked against
cvxpy in the tests).

Asymptotic covariance (regressors independent of the errors, as with white inputs and process
noise): ``Cov(vec Theta) = V kron (Phi Phi^T)^-1`` with the sandwich
``V = D^-1 E[psi psi^T] D^-T``, ``psi_k = w_k e_k`` and ``D = E[d psi / d e]
= E[w_k I - 1(r_k > c) c / r_k^3 e_k (S^-2 e_k)^T]`` (Huber 1973), estimated from the final
residuals.  Measurement noise on the states makes the regressors noisy too: the estimator then
keeps a small errors-in-variables bias (as least squares, without its blow-up).

IRLS needs several passes over the samples: ``fit`` supports it (memory: the residuals,
``n`` numbers per sample), ``partial_fit`` and ``fit_statistics`` do not.

References
----------
P. J. Huber, "Robust regression: asymptotics, conjectures and Monte Carlo", Ann. Statist. 1
(1973) 799-821; R. A. Maronna, R. D. Martin and V. J. Yohai, *Robust Statistics*, Wiley (2006).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dmdidc.regression.solution import (
    RegressionSolution,
    regression_blocks,
    solve_normal_equations,
)

__all__ = ["huber_solution", "huber_threshold"]

#: Relative change of the coefficients at which IRLS stops.
_TOLERANCE = 1e-9
_MAX_ITERATIONS = 200
_MAD_TO_SIGMA = 1.482602218505602     # 1 / Phi^-1(3/4)


def huber_threshold(n_states: int) -> float:
    """``c = sqrt(chi^2_n 0.9 quantile)`` (1.645 for one state, 2.146 for two)."""
    # chdtri is the chi^2 inverse survival function: no scipy.stats import (~0.5 s) for it
    return float(np.sqrt(special.chdtri(n_states, 0.1)))


def _weighted_moments(trajectories, R: int, coefficients: np.ndarray | None, scale, c: float,
                      p: int, n: int):
    """One pass: weighted Gram and cross products (and, with ``coefficients``, residuals)."""
    gram, cross, target = np.zeros((p, p)), np.zeros((n, p)), np.zeros((n, n))
    reg_sum, tgt_sum, count = np.zeros(p), np.zeros(n), 0
    for Phi, Y in regression_blocks(trajectories, R):
        if coefficients is None:
            w = np.ones(Y.shape[1])
        else:
            r = np.linalg.norm((Y - coefficients @ Phi) / scale[:, None], axis=0)
            w = np.minimum(1.0, c / np.maximum(r, np.finfo(float).tiny))
        Pw = Phi * w
        gram += Pw @ Phi.T
        cross += (Y * w) @ Phi.T
        target += (Y * w) @ Y.T
        reg_sum += Pw.sum(axis=1)
        tgt_sum += (Y * w).sum(axis=1)
        count += Y.shape[1]
    return gram, cross, target, reg_sum, tgt_sum, count


def _residual_scale(trajectories, R: int, coefficients: np.ndarray) -> np.ndarray:
    residuals = np.concatenate([Y - coefficients @ Phi
                                for Phi, Y in regression_blocks(trajectories, R)], axis=1)
    deviation = np.abs(residuals - np.median(residuals, axis=1, keepdims=True))
    scale = _MAD_TO_SIGMA * np.median(deviation, axis=1)
    rms = np.sqrt(np.mean(residuals ** 2, axis=1))
    # An exact fit has MAD 0: fall back to a tiny multiple of the residual rms.
    return np.where(scale > 0, scale, np.maximum(rms, np.finfo(float).tiny) * 1e-3)


def huber_solution(trajectories: list[tuple[np.ndarray, np.ndarray]], max_delay: int, *,
                   rank_rtol: float = 1e-10, threshold: float | None = None
                   ) -> tuple[RegressionSolution, int]:
    """Huber M-estimate of ``Theta`` by IRLS (see the module notes).

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
    max_delay : int
        ``R``.
    rank_rtol : float
        Relative singular-value threshold of the rank test.
    threshold : float, optional
        Huber's ``c`` (default :func:`huber_threshold`).

    Returns
    -------
    solution : RegressionSolution
        ``estimator="huber"``; ``residual_covariance`` is the sandwich ``V``,
        ``unscaled_covariance`` is ``(Phi Phi^T)^-1``.
    iterations : int
        IRLS iterations used.

    Raises
    ------
    InsufficientExcitationError
        Too few samples or rank-deficient data.
    """
    X0, U0 = trajectories[0]
    n, m, R = X0.shape[0], U0.shape[0], max_delay
    p = n + m * (R + 1)
    c = huber_threshold(n) if threshold is None else threshold
    gram, cross, target, reg_sum, tgt_sum, count = _weighted_moments(trajectories, R, None,
                                                                     None, c, p, n)
    plain = solve_normal_equations(gram, cross, target, n_samples=count, regressor_sum=reg_sum,
                                   target_sum=tgt_sum, rank_rtol=rank_rtol)
    coefficients = plain.coefficients
    iterations = 0
    while iterations < _MAX_ITERATIONS:
        iterations += 1
        scale = _residual_scale(trajectories, R, coefficients)
        moments = _weighted_moments(trajectories, R, coefficients, scale, c, p, n)
        updated = solve_normal_equations(moments[0], moments[1], moments[2], n_samples=count,
                                         regressor_sum=moments[3], target_sum=moments[4],
                                         rank_rtol=rank_rtol).coefficients
        change = np.max(np.abs(updated - coefficients)) / max(np.max(np.abs(updated)), 1e-300)
        coefficients = updated
        if change <= _TOLERANCE:
            break
    scale = _residual_scale(trajectories, R, coefficients)
    V, residual_matrix = _sandwich(trajectories, R, coefficients, scale, c, count, p)
    solution = RegressionSolution(
        coefficients=coefficients, singular_values=plain.singular_values, rank=plain.rank,
        n_samples=count, residual_norm=float(np.sqrt(max(np.trace(residual_matrix), 0.0))),
        target_norm=plain.target_norm, residual_covariance=V,
        unscaled_covariance=plain.unscaled_covariance,
        residual_mean=(tgt_sum - coefficients @ reg_sum) / count, target_rms=plain.target_rms,
        rank_tolerance=plain.rank_tolerance, estimator="huber")
    return solution, iterations


def _sandwich(trajectories, R: int, coefficients: np.ndarray, scale: np.ndarray, c: float,
              count: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """``V = D^-1 (sum psi psi^T / (N - p)) D^-T`` and the plain residual matrix ``E E^T``."""
    n = coefficients.shape[0]
    psi_psi, slope, residual = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    inv_s2 = 1.0 / scale ** 2
    for Phi, Y in regression_blocks(trajectories, R):
        E = Y - coefficients @ Phi
        r = np.maximum(np.linalg.norm(E / scale[:, None], axis=0), np.finfo(float).tiny)
        w = np.minimum(1.0, c / r)
        outside = r > c
        psi = E * w
        psi_psi += psi @ psi.T
        residual += E @ E.T
        slope += np.sum(w) * np.eye(n)
        Eo = E[:, outside]
        slope -= (Eo * (c / r[outside] ** 3)) @ (Eo * inv_s2[:, None]).T
    D = slope / count
    middle = psi_psi / max(count - p, 1)
    D_inv = np.linalg.inv(D)
    return D_inv @ middle @ D_inv.T, residual
