"""Analytic Jacobian of the recovered plant ``(delay, A_c, B_c)`` with respect to the
coefficients ``[A_d, B^(0..R)]`` (the delta method of :mod:`dmdidc.inference.intervals`).

Everything is read in the eigenbasis of ``A_c = V diag(mu) V^-1``: for an analytic ``f`` the
Frechet derivative is ``L_f(A, E) = V ((V^-1 E V) o D_f) V^-1`` with the divided differences
``D_f[i, j] = (f(mu_i) - f(mu_j)) / (mu_i - mu_j)`` (``f'(mu_i)`` on the diagonal; Higham,
*Functions of Matrices*, Thm. 3.11).  Hence

* ``A_c`` from ``A_d = exp(A_c T)``: ``V^-1 dA_c V = (V^-1 dA_d V) / D_exp`` (any logarithm
  branch, the one the estimator chose included);
* per channel, with ``b = Gamma(T)^-1 (b0 + b1)`` and the hold ``s`` solving the least-squares
  condition ``g = f^T r = 0`` (``r = Gamma(s) b - b0``, ``f = e^{A_c s} b``; dissertation eqs.
  9.68-9.69), the implicit function theorem: ``d delay = -d s = dg / (f^T f + (A_c f)^T r)``
  and ``d b = Gamma(T)^-1 (d b0 + d b1 - dGamma(T) b)``.

This costs ``O(n^5)`` flops in all, against ``O(n^2)`` complete recoveries (each a matrix
logarithm and ``m`` hold-length searches) for central differences: at ``n = 30``, ``m = 5`` a
fraction of a second instead of about two minutes.  When ``A_c`` is not safely diagonalizable
(eigenvector condition number above :data:`MAX_EIGENVECTOR_CONDITION`), :func:`model_jacobian`
returns ``None`` and the caller differentiates numerically.
"""

from __future__ import annotations

import numpy as np

__all__ = ["model_jacobian", "MAX_EIGENVECTOR_CONDITION"]

#: Above this eigenvector condition number the eigenbasis formulas lose too many digits.
MAX_EIGENVECTOR_CONDITION = 1e8


def _divided(values: np.ndarray, slopes: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``(f(mu_i) - f(mu_j)) / (mu_i - mu_j)``, ``f'`` where the eigenvalues (nearly) coincide."""
    gap = mu[:, None] - mu[None, :]
    close = np.abs(gap) <= 1e-9 * (1.0 + np.abs(mu)[:, None] + np.abs(mu)[None, :])
    quotient = (values[:, None] - values[None, :]) / np.where(close, 1.0, gap)
    return np.where(close, 0.5 * (slopes[:, None] + slopes[None, :]), quotient)


def _gamma(mu: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """``(e^{mu t} - 1) / mu`` and its derivative in ``mu`` (series near ``mu t = 0``)."""
    z = mu * t
    small = np.abs(z) < 1e-4
    safe = np.where(small, 1.0, mu)
    value = np.where(small, t * (1 + z / 2 + z * z / 6), np.expm1(z) / safe)
    slope = np.where(small, t * t * (0.5 + z / 3 + z * z / 8),
                     (t * np.exp(z) - value) / safe)
    return value, slope


def _frechet_times(V: np.ndarray, W: np.ndarray, D: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``J[a, c, d] = (L_f(A, e_c e_d^T) v)[a]``, shape (n, n * n), for ``A = V diag W``."""
    beta = W @ v
    Z = D @ (V * beta[None, :]).T                     # Z[i, d] = sum_j D_ij V[d, j] beta_j
    n = V.shape[0]
    return (V @ (W[:, :, None] * Z[:, None, :]).reshape(n, n * n)).real


def model_jacobian(A_c: np.ndarray, B_c: np.ndarray, delay: np.ndarray,
                   columns: list[tuple[np.ndarray, np.ndarray | None] | None], dt: float,
                   starts: np.ndarray | None = None, weights: np.ndarray | None = None
                   ) -> np.ndarray | None:
    """Jacobian of ``[delay (m), vec A_c (n^2), vec B_c (n m)]`` (row-major vecs).

    Parameters
    ----------
    A_c : ndarray, shape (n, n)
    B_c : ndarray, shape (n, m)
    delay : ndarray, shape (m,)
        The recovered plant at the estimate.
    columns : list of (b0, b1) or None, length m
        Per channel the input columns of the two blocks its delay was recovered from
        (``b1`` ``None`` when the second block lies beyond the bound), ``None`` for a channel
        without effect or with a whole delay (no derivative).
    dt : float
    starts : ndarray of int, shape (m,), optional
        The first block of each channel's pair; by default ``floor(delay / dt)``, so a whole
        delay ``w`` is differentiated from the side of the pair ``w, w + 1`` (``w - 1`` gives
        the side of the pair ``w - 1, w``).
    weights : ndarray, shape (n,), optional
        The hold-length fit's per-state weights (its condition ``f^T W r = 0``,
        :func:`~dmdidc.inference.recovery.recovery_weights`); by default 1.

    Returns
    -------
    ndarray, shape (m + n^2 + n m, n^2 + 2 m n) or None
        Columns: ``vec A_d`` (n^2), then per channel ``b0`` (n) and ``b1`` (n) (zero columns
        for missing ones).  ``None`` when ``A_c`` is not safely diagonalizable.
    """
    n, m = B_c.shape
    w = np.ones(n) if weights is None else weights
    mu, V = np.linalg.eig(A_c)
    if np.linalg.cond(V) > MAX_EIGENVECTOR_CONDITION:
        return None
    W = np.linalg.inv(V)
    exp_T = np.exp(mu * dt)
    D_exp = _divided(exp_T, dt * exp_T, mu)
    if np.min(np.abs(D_exp)) == 0:
        return None
    # d vec A_c / d vec A_d: V ((W dA_d V) / D_exp) W, an (n^2, n^2) matrix
    # [a, b, c, d] = sum_ij (V[a, i] W[i, c]) / D_exp[i, j] (V[d, j] W[j, b]): two products
    left = (V[:, None, :] * W.T[None, :, :]).reshape(n * n, n)          # (a c, i)
    right = (V[:, None, :] * W.T[None, :, :]).transpose(2, 1, 0)        # (j, b, d)
    log_jacobian = ((left @ (1.0 / D_exp)) @ right.reshape(n, n * n)).real
    log_jacobian = log_jacobian.reshape(n, n, n, n).transpose(0, 2, 1, 3).reshape(n * n, n * n)
    out = np.zeros((m + n * n + n * m, n * n + 2 * m * n))
    out[m:m + n * n, :n * n] = log_jacobian
    gamma_T, gamma_T_slope = _gamma(mu, dt)
    G_T = ((V * gamma_T) @ W).real
    G_T_inv = np.linalg.inv(G_T)
    D_gamma_T = _divided(gamma_T, gamma_T_slope, mu)
    for i in range(m):
        if columns[i] is None:
            continue
        b0, b1 = columns[i]
        b = B_c[:, i]
        start = np.floor(delay[i] / dt + 1e-9) if starts is None else starts[i]
        s = (start + 1) * dt - delay[i]
        gamma_s, gamma_s_slope = _gamma(mu, s)
        E_s = ((V * np.exp(mu * s)) @ W).real
        G_s = ((V * gamma_s) @ W).real
        f, r = E_s @ b, G_s @ b - b0
        fw, rw = w * f, w * r                  # the weighted condition g = f^T W r
        curvature = f @ fw + (A_c @ f) @ rw
        # d b and the residual/slope perturbations, per variable group (A, b0, b1)
        db_A = -G_T_inv @ _frechet_times(V, W, D_gamma_T, b)
        dr_A = _frechet_times(V, W, _divided(gamma_s, gamma_s_slope, mu), b) + G_s @ db_A
        exp_s = np.exp(mu * s)
        df_A = _frechet_times(V, W, _divided(exp_s, s * exp_s, mu), b) + E_s @ db_A
        dg_A = (rw @ df_A + fw @ dr_A) @ log_jacobian
        dg_0 = rw @ E_s @ G_T_inv + fw @ (G_s @ G_T_inv - np.eye(n))
        dg_1 = rw @ E_s @ G_T_inv + fw @ G_s @ G_T_inv
        lo = n * n + 2 * i * n
        out[i, :n * n] = dg_A / curvature
        out[i, lo:lo + n] = dg_0 / curvature
        rows = m + n * n + np.arange(n) * m + i
        out[rows, :n * n] = db_A @ log_jacobian
        out[rows, lo:lo + n] = G_T_inv
        if b1 is not None:
            out[i, lo + n:lo + 2 * n] = dg_1 / curvature
            out[rows, lo + n:lo + 2 * n] = G_T_inv
    return out
