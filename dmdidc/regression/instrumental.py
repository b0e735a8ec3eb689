"""Instrumental variables (two-stage least squares) for the DMDidc regression, from moments.

**Why.**  With measurement noise on the states, ``x~_k = x_k + nu_k``, the regression
``x~_{k+1} = Theta [x~_k; u_k; ...; u_{k-R}] + eps_k`` has the error
``eps_k = w_k + nu_{k+1} - A_d nu_k``, correlated with the regressor ``x~_k`` (errors in
variables): least squares is biased at any data length.  An instrument ``z_k`` correlated with
the regressors but not with ``eps_k`` restores consistency: 2SLS solves
``E[z_k eps_k^T] = 0`` in the least-squares sense,

    Theta = S_yz S_zz^-1 S_zphi M^-1,   M = S_phiz S_zz^-1 S_zphi,

(``S_ab = sum_k a_k b_k^T``), with asymptotic covariance ``Sigma kron M^-1`` (``Sigma`` the
covariance of ``eps``), the instrumental-variable analogue of ``Sigma kron (Phi Phi^T)^-1``.

**Which instruments** (:class:`dmdidc.SufficientStatistics` carries them):

* ``"inputs"`` (default): the inputs themselves (exogenous, noise-free) plus the inputs lagged
  beyond the bound, ``u_{k-R-1} .. u_{k-R-L}``.  They drive ``x_k`` through the impulse response
  ``h_{R+l}`` and are independent of the noise and of ``w_k`` when the inputs are an open-loop
  excitation.  Relevance decays like the plant's spectral radius to the power ``R + l``:
  weak for fast, strongly damped plants with a large ``R``.
* ``"states"``: the inputs plus the lagged measured states ``x~_{k-1} .. x~_{k-L}``.  Strong
  (``x_{k-1}`` is close to ``x_k``), valid when the measurement noise is white (``nu_{k-l}``
  independent of ``nu_k, nu_{k+1}``) and the process noise is white.
* ``"exogenous"``: a signal the identifier knows to be independent of every noise (e.g. the
  excitation an aggregator adds to closed-loop commands), at lags ``0 .. R + L``.  Use it when
  the inputs are themselves endogenous: computed by feedback from noisy states, or measured
  with noise.

Consistency needs: instruments uncorrelated with ``eps_k`` (above), relevance (``M`` of full
rank: as many instruments as regressors, ``L`` chosen so, and a controllable plant), and
stationary, ergodic data (or many independent experiments).  **Noisy inputs**: if the recorded
inputs carry measurement noise too, they are endogenous and cannot instrument themselves, so
``"inputs"`` and ``"states"`` are biased; instruments must then exclude ``u_k .. u_{k-R}``:
use the commanded signal (``"exogenous"``).

References
----------
T. Soderstrom and P. Stoica, *Instrumental variable methods for system identification*,
Springer (1983); L. Ljung, *System Identification*, 2nd ed., Sec. 7.6 (1999).
"""

from __future__ import annotations

import numpy as np

from dmdidc.errors import InsufficientExcitationError
from dmdidc.regression.solution import (
    RegressionSolution,
    _choose_rank,
    _column_scale,
    assemble_solution,
)

__all__ = ["instrumental_solution", "coefficient_jacobian"]

#: Instruments whose equilibrated Gram has eigenvalues below this fraction of the largest are
#: collinear (e.g. repeated); they are projected out.
_INSTRUMENT_RTOL = 1e-12
#: Gram entries differentiated at once in :func:`coefficient_jacobian`.
_JACOBIAN_BATCH = 256


def _inverse_sqrt(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(scale, L)`` with ``L (gram / outer(scale, scale)) L^T = I`` on the range of gram."""
    scale = _column_scale(np.sqrt(np.clip(np.diag(gram), 0.0, None)))
    values, vectors = np.linalg.eigh(gram / np.outer(scale, scale))
    keep = values > _INSTRUMENT_RTOL * max(values.max(), np.finfo(float).tiny)
    return scale, (vectors[:, keep] / np.sqrt(values[keep])).T


def instrumental_solution(gram: np.ndarray, sums: np.ndarray, n_samples: int, *,
                          n_states: int, n_regressors: int, instruments: np.ndarray,
                          svd_rank: int | None = None, rank_rtol: float = 1e-10,
                          intercepts: int = 0) -> RegressionSolution:
    """Two-stage least squares from the moments of ``[Phi; Y; extra]``.

    Parameters
    ----------
    gram : ndarray, shape (d, d)
        ``sum_k v_k v_k^T`` with ``v_k = [phi_k (p); y_k (n); extra]`` (the layout of
        :class:`~dmdidc.SufficientStatistics`), in the data's units.
    sums : ndarray, shape (d,)
    n_samples : int
    n_states, n_regressors : int
        ``n`` and ``p``.
    instruments : ndarray of int
        Entries of ``v_k`` that are instruments (at least ``p``).
    svd_rank, rank_rtol, intercepts
        As in :func:`~dmdidc.regression.solve_normal_equations`.

    Returns
    -------
    RegressionSolution
        ``estimator="iv"``; ``singular_values`` are those of the equilibrated first stage
        ``S_zz^-1/2 S_zphi`` (its rank decides identifiability), ``unscaled_covariance`` is
        ``M^-1`` and ``instrument_strength`` the smallest canonical correlation between
        regressors and instruments.

    Raises
    ------
    InsufficientExcitationError
        Fewer samples or instruments than regressors, or instruments that do not determine
        every regressor (rank-deficient first stage).
    """
    n, p = n_states, n_regressors
    phi, y, z = np.arange(p), np.arange(p, p + n), np.asarray(instruments, dtype=int)
    if z.size < p:
        raise InsufficientExcitationError(
            f"{z.size} instruments for {p} regressors: instrumental variables need at least as "
            f"many instruments as regressors (raise instrument_lags)")
    S_zz, S_zphi, S_zy = gram[np.ix_(z, z)], gram[np.ix_(z, phi)], gram[np.ix_(z, y)]
    S_pp, S_py, S_yy = gram[np.ix_(phi, phi)], gram[np.ix_(phi, y)], gram[np.ix_(y, y)]
    z_scale, Lz = _inverse_sqrt(S_zz)
    phi_scale = _column_scale(np.sqrt(np.clip(np.diag(S_pp), 0.0, None)))
    B = Lz @ (S_zphi / np.outer(z_scale, phi_scale))          # whitened first stage
    c = Lz @ (S_zy / z_scale[:, None])
    if B.shape[0] < p:
        raise InsufficientExcitationError(
            f"the instruments span only {B.shape[0]} directions for {p} regressors (collinear "
            f"instruments): use more or other instruments")
    U_, singular, Vt = np.linalg.svd(B, full_matrices=False)
    rank, tol = _choose_rank(singular, svd_rank, rank_rtol, p, n_samples, rank_floor=1e-12)
    inv = Vt[:rank].T / singular[:rank]
    coefficients = ((inv @ (U_[:, :rank].T @ c)) / phi_scale[:, None]).T
    unscaled = (inv @ inv.T) / np.outer(phi_scale, phi_scale)
    residual = (S_yy - coefficients @ S_py - S_py.T @ coefficients.T
                + coefficients @ S_pp @ coefficients.T)
    _, Lp = _inverse_sqrt(S_pp)
    canonical = np.linalg.svd(B @ Lp.T, compute_uv=False) if Lp.shape[0] == p else np.zeros(1)
    return assemble_solution(coefficients, singular, rank, residual, np.diag(S_yy), unscaled,
                             tol, n_samples=n_samples, regressor_sum=sums[phi],
                             target_sum=sums[y], intercepts=intercepts, estimator="iv",
                             instrument_strength=float(np.clip(canonical.min(), 0.0, 1.0)))


def coefficient_jacobian(gram: np.ndarray, coefficients: np.ndarray, *, n_states: int,
                         n_regressors: int, instruments: np.ndarray | None,
                         entries: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Derivative of ``vec(Theta)`` (row by row) with respect to symmetric Gram entries.

    For 2SLS, ``Theta M = S_yz A`` with ``A = S_zz^-1 S_zphi`` and ``M = S_phiz A``, so a
    perturbation ``dG`` gives ``dA = S_zz^-1 (dS_zphi - dS_zz A)``,
    ``dM = dS_phiz A + S_phiz dA`` and ``dTheta = (dS_yz A + S_yz dA - Theta dM) M^-1``.
    Least squares is the case ``z = phi`` (``A = I``): ``dTheta = (dS_yphi - Theta dS_phiphi)
    S_phiphi^-1``.

    Parameters
    ----------
    gram : ndarray, shape (d, d)
    coefficients : ndarray, shape (n, p)
    n_states, n_regressors : int
    instruments : ndarray of int or None
        ``None`` for least squares.
    entries : (rows, cols)
        Entries ``(i, j)``, ``i <= j``; a perturbation moves ``G[i, j]`` and ``G[j, i]``.

    Returns
    -------
    ndarray, shape (n p, len(rows))
    """
    n, p = n_states, n_regressors
    phi, y = np.arange(p), np.arange(p, p + n)
    z = phi if instruments is None else np.asarray(instruments, dtype=int)
    S_zz, S_zphi, S_yz = gram[np.ix_(z, z)], gram[np.ix_(z, phi)], gram[np.ix_(y, z)]
    A = np.linalg.solve(S_zz, S_zphi)
    M = S_zphi.T @ A
    rows, cols = entries
    out = np.zeros((n * p, rows.size))
    d = gram.shape[0]
    for start in range(0, rows.size, _JACOBIAN_BATCH):       # bounded memory
        r, c = rows[start:start + _JACOBIAN_BATCH], cols[start:start + _JACOBIAN_BATCH]
        E = r.size
        dG = np.zeros((E, d, d))
        dG[np.arange(E), r, c] = 1.0
        dG[np.arange(E), c, r] = 1.0
        d_zz, d_zphi, d_yz = dG[:, z][:, :, z], dG[:, z][:, :, phi], dG[:, y][:, :, z]
        dA = np.linalg.solve(S_zz, d_zphi - d_zz @ A)
        dM = d_zphi.transpose(0, 2, 1) @ A + S_zphi.T @ dA
        rhs = d_yz @ A + S_yz @ dA - coefficients @ dM
        dTheta = np.linalg.solve(M.T, rhs.transpose(0, 2, 1)).transpose(0, 2, 1)  # rhs M^-1
        out[:, start:start + E] = dTheta.reshape(E, n * p).T
    return out
