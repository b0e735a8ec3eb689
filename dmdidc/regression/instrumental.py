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

import dataclasses

import numpy as np

from dmdidc.errors import InsufficientExcitationError, ParameterError
from dmdidc.regression.covariance import KroneckerCovariance
from dmdidc.regression.lag_products import (
    PieceLayout,
    centred_autocovariances,
    lag_products,
    trimmed_autocovariances,
)
from dmdidc.regression.solution import (
    EXACT_FIT,
    RegressionSolution,
    _choose_rank,
    _column_scale,
    _too_few,
    assemble_solution,
)

__all__ = ["instrumental_solution", "refined_affine_solution", "coefficient_jacobian",
           "entry_error_spread", "pretest_bias2",
           "long_run_covariance", "TrimmedMoments",
           "instrument_moments", "regressor_moments", "projected_instruments", "lagged_moments",
           "first_stage_f", "WEAK_INSTRUMENTS_F", "hausman_variance",
           "hac_lags", "residual_memory"]

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
                          intercepts: int = 0, strength: bool = True) -> RegressionSolution:
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
    strength : bool, default True
        Compute ``instrument_strength`` (an eigendecomposition of ``S_phiphi`` and an SVD,
        about a third of the cost); ``False`` leaves it ``None``, for a fit only compared with
        another (the IV twin of a least-squares fit).

    Returns
    -------
    RegressionSolution
        ``estimator="iv"``; ``singular_values`` are those of the equilibrated first stage
        ``S_zz^-1/2 S_zphi`` (its rank decides identifiability), ``unscaled_covariance`` is
        ``M^-1`` and ``instrument_strength`` the smallest canonical correlation between
        regressors and instruments (``None`` without ``strength``).

    Raises
    ------
    InsufficientExcitationError
        Fewer samples or instruments than regressors, or instruments that do not determine
        every regressor (rank-deficient first stage).
    """
    n, p = n_states, n_regressors
    if n_samples < p:
        raise _too_few(n_samples, p)
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
    rho = None
    if strength:
        _, Lp = _inverse_sqrt(S_pp)
        canonical = (np.linalg.svd(B @ Lp.T, compute_uv=False) if Lp.shape[0] == p
                     else np.zeros(1))
        rho = float(np.clip(canonical.min(), 0.0, 1.0))
    return assemble_solution(coefficients, singular, rank, residual, np.diag(S_yy), unscaled,
                             tol, n_samples=n_samples, regressor_sum=sums[phi],
                             target_sum=sums[y], intercepts=intercepts, estimator="iv",
                             instrument_strength=rho)


def refined_affine_solution(solution: RegressionSolution, blocks, *, svd_rank: int | None = None,
                            rank_rtol: float = 1e-10) -> RegressionSolution:
    """One step of iterative refinement of an affine IV ``solution`` solved from centred
    moments, whose rounding grows with the offsets (``gram - sums sums^T / N`` cancels the
    digits of ``mean^2 / variance``).

    The data are centred explicitly and the residuals ``r = Y - Theta Phi`` computed sample by
    sample; the correction ``Delta`` is the IV fit of ``r`` on the same regressors and
    instruments (:func:`instrumental_solution` on the moments of ``[Phi; r; Z]``), so only the
    small residual moments are rounded.  Singular values, unscaled covariance and instrument
    strength are those of the centred data; the residual covariance that of the new residuals.

    Parameters
    ----------
    solution : RegressionSolution
        The IV solution of the centred moments (``intercepts`` 1).
    blocks : iterable of (Phi (p, N_i), Y (n, N_i), Z (q, N_i))
        The samples of its moments, per trajectory.
    svd_rank, rank_rtol
        As in :func:`instrumental_solution`.

    Returns
    -------
    RegressionSolution
        ``solution`` unchanged when the blocks do not hold its ``n_samples`` samples.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.standard_normal((2, 500)) + 50.0
    >>> Phi = Z + 0.1 * rng.standard_normal((2, 500))
    >>> Y = np.array([[1.0, -2.0]]) @ Phi + 1e-3 * rng.standard_normal((1, 500)) + 3.0
    >>> V = np.vstack([Phi, Y, Z])
    >>> G = V @ V.T - np.outer(V.sum(1), V.sum(1)) / 500
    >>> rough = instrumental_solution(G, np.zeros(5), 500, n_states=1, n_regressors=2,
    ...                               instruments=np.arange(3, 5), intercepts=1)
    >>> fine = refined_affine_solution(rough, [(Phi, Y, Z)])
    >>> bool(np.allclose(fine.coefficients, [[1.0, -2.0]], atol=1e-3))
    True
    """
    Phi, Y, Z = (np.concatenate(parts, axis=1) for parts in zip(*blocks, strict=True))
    if Phi.shape[1] != solution.n_samples:
        return solution
    p, n = Phi.shape[0], Y.shape[0]
    V = np.concatenate([Phi, Y, Z])
    V -= V.mean(axis=1, keepdims=True)
    V[p:p + n] -= solution.coefficients @ V[:p]           # the residuals of the centred data
    correction = instrumental_solution(V @ V.T, np.zeros(V.shape[0]), Phi.shape[1], n_states=n,
                                       n_regressors=p, instruments=np.arange(p + n, V.shape[0]),
                                       svd_rank=svd_rank, rank_rtol=rank_rtol,
                                       intercepts=solution.intercepts)
    return dataclasses.replace(
        correction, coefficients=solution.coefficients + correction.coefficients,
        target_norm=solution.target_norm, target_rms=solution.target_rms,
        residual_mean=solution.residual_mean)


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


def entry_error_spread(gram: np.ndarray, coefficients: np.ndarray, *, n_states: int,
                       n_regressors: int, instruments: np.ndarray | None,
                       entry_scale: np.ndarray) -> np.ndarray:
    """Standard deviation of every coefficient when each entry ``(i, j)`` of ``gram`` (with its
    mirror) has an independent error of standard deviation ``entry_scale[i] entry_scale[j]``,
    to first order: :func:`coefficient_jacobian`'s covariance without forming the Jacobian.

    Each coefficient's derivative is a matrix ``K`` of rank two: from the perturbation
    formula of :func:`coefficient_jacobian`, ``dTheta_ab = g_a^T dG r_b + h_a^T dG t_b`` with
    ``g_a`` the residual direction (1 at ``y_a``, ``-Theta_a`` at ``phi``), ``h_a`` the
    instruments' part of ``(S_yz - Theta S_phiz) S_zz^-1``, ``r_b`` that of ``A M^-1 e_b`` and
    ``t_b = M^-1 e_b`` at ``phi`` minus ``r_b``.  The variance is then a few inner products per
    coefficient, ``O(n p d)`` after the factorizations (the Jacobian costs ``O(d^5)``).

    Parameters
    ----------
    gram : ndarray, shape (d, d)
        Ordered ``[phi (p); y (n); other instruments]``.
    coefficients : ndarray, shape (n, p)
    n_states, n_regressors : int
    instruments : ndarray of int or None
        ``None`` for least squares.
    entry_scale : ndarray, shape (d,)

    Returns
    -------
    ndarray, shape (n, p)

    Raises
    ------
    numpy.linalg.LinAlgError
        Singular instrument moments or ``M``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> V = rng.standard_normal((3, 400))                 # [phi (2); y (1)]
    >>> G = V @ V.T
    >>> theta = np.linalg.solve(G[:2, :2], G[:2, 2])[None]
    >>> scale = 1e-8 * np.ones(3)
    >>> rows, cols = np.triu_indices(3)
    >>> J = coefficient_jacobian(G, theta, n_states=1, n_regressors=2, instruments=None,
    ...                          entries=(rows, cols))
    >>> exact = np.sqrt((J ** 2 * (scale[rows] * scale[cols]) ** 2).sum(axis=1))
    >>> spread = entry_error_spread(G, theta, n_states=1, n_regressors=2, instruments=None,
    ...                             entry_scale=scale)
    >>> bool(np.allclose(spread.ravel(), exact))
    True
    """
    n, p, d = n_states, n_regressors, gram.shape[0]
    phi, y = np.arange(p), np.arange(p, p + n)
    z = phi if instruments is None else np.asarray(instruments, dtype=int)
    S_zz, S_zphi, S_yz = gram[np.ix_(z, z)], gram[np.ix_(z, phi)], gram[np.ix_(y, z)]
    A = np.linalg.solve(S_zz, S_zphi)
    W = np.linalg.inv(S_zphi.T @ A)                                  # M^-1
    C = np.linalg.solve(S_zz, (S_yz - coefficients @ S_zphi.T).T).T   # rows: h_a on z
    V = A @ W                                                        # columns: r_b on z

    def embed(values: np.ndarray, at: np.ndarray) -> np.ndarray:     # rows placed in d entries
        out = np.zeros((values.shape[0], d))
        np.add.at(out, (slice(None), at), values)       # instruments may repeat regressors
        return out * entry_scale

    g = embed(-coefficients, phi)
    g[np.arange(n), y] += entry_scale[y]
    h, r = embed(C, z), embed(V.T, z)
    t = embed(W.T, phi) - r
    variance = np.empty((n, p))
    for a in range(n):
        # K_ab + K_ab^T = sum_k u_k w_k^T over the four pairs below (scaled entries); the
        # errors of the symmetric pairs i < j count once, the diagonal's move K_ii alone
        u = np.stack([np.broadcast_to(g[a], r.shape), r, np.broadcast_to(h[a], t.shape), t], 1)
        w = np.stack([r, np.broadcast_to(g[a], r.shape), t, np.broadcast_to(h[a], t.shape)], 1)
        frobenius = np.einsum("bkl,bkl->b", u @ u.transpose(0, 2, 1), w @ w.transpose(0, 2, 1))
        diagonal = np.einsum("bkd,bkd->bd", u, w)
        variance[a] = 0.5 * frobenius - 0.25 * np.einsum("bd,bd->b", diagonal, diagonal)
    return np.sqrt(np.clip(variance, 0.0, None))


#: Instruments are weak below this first-stage F (Staiger and Stock 1997's rule of thumb).
WEAK_INSTRUMENTS_F = 10.0


def first_stage_f(solution: RegressionSolution) -> float:
    """First-stage F of an IV solution from its smallest canonical correlation ``rho``:
    ``N rho^2 / (1 - rho^2) / n`` (``n`` endogenous regressors, the states); ``inf`` for an
    exact fit.

    Raises
    ------
    ParameterError
        If ``solution`` carries no instrument strength (least squares, or IV solved with
        ``strength=False``): an F of ``inf`` would read as perfectly strong instruments.
    """
    rho = solution.instrument_strength
    if rho is None:
        raise ParameterError(f"solution (estimator {solution.estimator!r}) has no "
                             f"instrument_strength, so no first-stage F: solve IV with "
                             f"strength=True (instrumental_solution's default)")
    if solution.relative_residual < EXACT_FIT:
        return float("inf")
    rho = min(rho, 1.0 - 1e-16)
    return solution.n_samples * rho ** 2 / (1.0 - rho ** 2) / max(solution.coefficients.shape[0], 1)


#: Longest lag window of :func:`long_run_covariance`.
_MAX_HAC_LAGS = 100
def residual_memory(residuals: list[np.ndarray], trim: int | None = None
                    ) -> int | tuple[int, int]:
    """The last lag at which some residual's autocorrelation is significant (Bonferroni over
    rows and lags at level 1 %), 0 for white residuals: beyond it the residuals carry no serial
    correlation, so products with any independent series do not either.

    With ``trim``, the pair of it and the same of the pieces without their first and last
    ``trim`` samples (pieces left with fewer than two out): the samples of the moment checks
    (:func:`long_run_covariance`'s ``trim``), from the same autocovariances less the pairs
    the cut removes (:func:`~dmdidc.regression.lag_products.trimmed_autocovariances`) instead
    of a second pass of transforms over 100 lags (2 x 19 ms of a 290 ms fit at n = 50,
    K = 2e4).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> white = [rng.standard_normal((2, 3000))]
    >>> residual_memory(white), residual_memory(white, trim=10)
    (0, (0, 0))
    """
    N = sum(e.shape[1] for e in residuals)
    cov, laid, layout = centred_autocovariances(residuals, _memory_lags(N))
    memory = _last_significant(cov, N)
    if trim is None:
        return memory
    cut = [e.shape[1] - 2 * trim for e in residuals]
    N_cut = sum(c for c in cut if c >= 2)
    if N_cut == 0:
        return memory, 0
    lags = _memory_lags(N_cut)
    if 2 * trim * (lags + 1) * layout.lengths.size <= _EDGE_PAIRS * N_cut:
        sums, _ = trimmed_autocovariances(laid, layout, cov, trim, lags)
    else:        # short pieces: the cut removes most of their pairs, cheaper computed anew
        sums = centred_autocovariances([e[:, trim:e.shape[1] - trim] for e, c in
                                        zip(residuals, cut, strict=True) if c >= 2], lags)[0]
    return memory, _last_significant(sums, N_cut)


#: :func:`residual_memory` of trimmed pieces from the pairs the cut removes (``2 trim`` per
#: piece and lag) while they number at most this many per trimmed sample, else by transforms
#: of the trimmed pieces: a removed pair costs 2.5-3 ns a row, the transforms 20 ns a sample
#: and row (2026-11-28: 10 pieces of 1980 samples, 20 rows, 100 lags, trim 10: 1.3 ms
#: against 8.8 ms; 600 pieces of 30 samples: 60 ms against 22 ms).
_EDGE_PAIRS = 4


def _memory_lags(N: int) -> int:
    """Lags :func:`residual_memory` looks at for ``N`` samples."""
    return int(min(_MAX_HAC_LAGS, max(N // 10, 1)))


def _last_significant(cov: np.ndarray, N: int) -> int:
    """:func:`residual_memory` from the pooled centred autocovariances ``cov`` (lags, rows) of
    ``N`` samples."""
    from scipy import special

    if cov.size == 0:                                   # no residual series: no memory
        return 0
    rho = cov / np.where(cov[0] > 0, cov[0], 1.0)
    z = float(special.ndtri(1.0 - 0.01 / (2.0 * rho.size)))
    significant = np.flatnonzero(np.any(np.abs(rho[1:]) > z / np.sqrt(max(N, 1)), axis=1))
    return int(significant[-1]) + 1 if significant.size else 0


def hac_lags(residuals: list[np.ndarray], memory: int | None = None) -> int:
    """Lag window for a long-run covariance of products with a series independent of the
    residuals: twice the residuals' memory (:func:`residual_memory`, or ``memory`` when the
    caller has it), at least 1 (the moving average of measurement noise), at most 100."""
    memory = residual_memory(residuals) if memory is None else memory
    return int(min(_MAX_HAC_LAGS, max(1, 2 * memory)))


def instrument_moments(Z: np.ndarray, head: np.ndarray, common: int = 0
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``(Z Z^T, Z Phi^T)`` for the regressors ``Phi = [head; Z[-common:]]``: the last
    ``common`` rows of ``Z`` are regressors too (the lagged inputs instrument themselves), so
    their columns are read from ``Z Z^T`` and only ``head`` is multiplied (and never copied
    next to them).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> shared = rng.standard_normal((2, 50))
    >>> Z, Phi = np.vstack([rng.standard_normal((1, 50)), shared]), np.vstack([shared[:1], shared])
    >>> S_zz, S_zphi = instrument_moments(Z, Phi[:1], common=2)
    >>> bool(np.allclose(S_zphi, Z @ Phi.T))
    True
    """
    S_zz = Z @ Z.T
    return S_zz, regressor_moments(S_zz, Z @ head.T, common)


def regressor_moments(S_zz: np.ndarray, S_zhead: np.ndarray, common: int) -> np.ndarray:
    """``Z Phi^T`` for ``Phi = [head; Z[-common:]]`` from ``Z head^T`` and ``Z Z^T``."""
    return S_zhead if common == 0 else np.concatenate([S_zhead, S_zz[:, -common:]], axis=1)


def projected_instruments(S_zz: np.ndarray, S_zphi: np.ndarray) -> np.ndarray:
    """``G = S_zz^-1 S_zphi M^-1`` (``M = S_phiz S_zz^-1 S_zphi``, pseudo-inverses on the
    instruments' range), so that ``h_k = G^T z_k`` are the projected instruments of 2SLS."""
    z_scale, Lz = _inverse_sqrt(S_zz)
    B = Lz @ (S_zphi / z_scale[:, None])                           # whitened first stage
    # the regressors' columns at unit norm before the pseudo-inverse, whose cut-off is
    # relative to the largest: states in micro-units fell under it (a unit change moved the
    # block test 2.9 -> 50 and ls_vs_iv 7 -> 2e21 of one fit; G is then unit-covariant)
    phi_scale = _column_scale(np.linalg.norm(B, axis=0))
    B /= phi_scale
    return (Lz.T @ B @ np.linalg.pinv(B.T @ B)) / z_scale[:, None] / phi_scale


#: Rows of the stacked lagged operand of :func:`lagged_moments` (bounded memory: a block of
#: lags is one matrix product, one pass over the instruments instead of one per lag).
_LAGGED_ROWS = 256


def lagged_moments(Z: np.ndarray, lengths: list[int], lags: int, gram: np.ndarray,
                   means: np.ndarray | None = None,
                   lagged: tuple[int, int] | None = None) -> np.ndarray:
    """``S(tau) = sum_k z_k z_{k-tau}^T`` within each piece, for ``tau = 1 .. lags``.

    Parameters
    ----------
    Z : ndarray, shape (q, N)
        The pieces (trajectories) side by side; lags stay inside a piece.
    lengths : list of int
        Samples of each piece.
    lags : int
    gram : ndarray, shape (q, q)
        ``Z Z^T`` (lag 0).
    means : ndarray, shape (q,), optional
        Row means that were subtracted from ``Z`` (centred series).
    lagged : (head, width), optional
        The rows after ``head`` are ``v_k, v_{k-1}, ..`` of a ``width``-row signal ``v``
        (as :func:`~dmdidc.regression.solution.lagged_inputs` lays them out, before any
        centring): row ``(j, c)`` at ``k - tau`` is row ``(j + tau, c)`` at ``k``, so those
        columns are ``gram``'s less the first ``tau`` samples of each piece, and only
        ``head + width tau`` columns are new products.

    Returns
    -------
    ndarray, shape (lags, q, q)

    Notes
    -----
    Many lags are summed by blocked transforms
    (:func:`~dmdidc.regression.lag_products.lag_products`): every column without lag
    structure, with it only the ``head + width`` rows of the head and of lag 0 of ``v``
    against the ``head + width`` columns of the head and the oldest lag (their other columns
    follow down the anti-diagonals, :func:`_transformed_structured`).  With lag structure the
    rows of the other lags of ``v`` follow from those of the lag before, at the lag before
    (:func:`_lagged_rows`), whatever the number of lags.

    Examples
    --------
    >>> from dmdidc.regression.solution import lagged_inputs
    >>> rng = np.random.default_rng(0)
    >>> Z = lagged_inputs(rng.standard_normal((2, 60)), 3)             # (8, 57): lags 0 .. 3
    >>> fast = lagged_moments(Z, [57], 2, Z @ Z.T, lagged=(0, 2))
    >>> bool(np.allclose(fast[1], Z[:, 2:] @ Z[:, :-2].T))
    True
    """
    q, N = Z.shape
    head, width = (q, 0) if lagged is None else lagged
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)
    out = np.empty((lags, q, q))
    if lagged is None:
        if lags > _TRANSFORM_LAGS + _TRANSFORM_ROWS / max(q, 1) and _affordable(lags, q, q):
            _transformed_lags(Z, lengths, out)
        else:
            _direct_lags(Z, starts, lengths, out)
        return out
    # the rows of the head and of lag 0 of v directly, the other lags of v from them
    # (_lagged_rows): the lead rows' products only
    lead = min(head + width, q)
    if width and lags > _TRANSFORM_STRUCTURED_LAGS and _affordable(lags, q, head + width):
        _transformed_structured(Z, starts, lengths, head, width, means, gram, out)
    else:
        _stacked_structured(Z, starts, lengths, head, width, lead, out)
        totals = Z.sum(axis=1) if means is not None else None        # the same for every lag
        for tau in range(1, lags + 1):
            shifted = np.arange(head, max(q - width * tau, head))   # lags 0 .. R - tau: in gram
            if shifted.size == 0:
                continue
            source = shifted + width * tau
            edges = [Z[:, s:s + min(tau, length)]
                     for s, length in zip(starts, lengths, strict=True)]
            out[tau - 1][:lead, shifted] = gram[:lead, source] - sum(e[:lead] @ e[source].T
                                                                     for e in edges)
            if means is not None:   # centred, rows (j, c) and (j + tau, c) differ by a constant
                sums = totals[:lead] - sum(e[:lead].sum(axis=1) for e in edges)
                out[tau - 1][:lead, shifted] += np.outer(sums, means[source] - means[shifted])
    _lagged_rows(Z, starts, lengths, head, width, means, gram, out)
    return out


def _lagged_gram(Z: np.ndarray, starts: np.ndarray, lengths: list[int], head: int,
                 width: int) -> np.ndarray:
    """``Z Z^T`` of :func:`lagged_moments`'s lagged layout (uncentred): the rows of the head
    and of lag 0 of ``v`` by one product, each block of lags ``(j1, j2)`` of ``v`` from
    ``(j1 - 1, j2 - 1)``: row ``(j, c)`` of ``z_k`` is row ``(j - 1, c)`` of ``z_{k-1}``, so
    the sum over a piece's samples shifts by one, gaining the products of its first sample's
    rows ``(j1)``, ``(j2)`` and losing those of its last sample's ``(j1 - 1)``, ``(j2 - 1)``
    (``(head + width) q`` multiply-adds per sample instead of ``q^2 / 2``: 2.2x fewer for
    the IV instruments, 104 rows, head 20, width 4)."""
    q = Z.shape[0]
    lead, J = head + width, (q - head) // width
    gram = np.empty((q, q))
    gram[:lead] = Z[:lead] @ Z.T
    kept = [(s, n) for s, n in zip(starts, lengths, strict=True) if n > 0]
    firsts = Z[head:, [s for s, _ in kept]]
    lasts = Z[head:, [s + n - 1 for s, n in kept]]
    gained, lost = firsts @ firsts.T, lasts @ lasts.T                  # (J width, J width)
    for j in range(1, J):
        rows = slice(lead + (j - 1) * width, lead + j * width)
        # columns of lags j .. J - 1 (the upper triangle), from lags j - 1 .. J - 2
        gram[rows, head + j * width:] = (gram[rows.start - width:rows.stop - width,
                                              head + (j - 1) * width:q - width]
                                         + gained[j * width:(j + 1) * width, j * width:]
                                         - lost[(j - 1) * width:j * width, (j - 1) * width:-width])
    lower = np.tril_indices(q, -1)            # symmetric as a rank-k update: the upper mirrored
    gram[lower] = gram.T[lower]
    return gram


def _lagged_rows(Z: np.ndarray, starts: np.ndarray, lengths: list[int], head: int, width: int,
                 means: np.ndarray | None, gram: np.ndarray, out: np.ndarray) -> None:
    """The rows of lags ``1 .. J - 1`` of ``v`` in every ``S(tau)`` (:func:`lagged_moments`'s
    lagged layout), the others already in ``out``: row ``(j, c)`` of ``z_k`` is row ``(j - 1,
    c)`` of ``z_{k-1}``, so row ``(j, c)`` of ``S(tau)`` is row ``(j - 1, c)`` of ``S(tau -
    1)`` (``gram`` for ``tau = 1``) less each piece's last term, ``z_{e-1}`` times
    ``z_{e-tau}`` (end ``e``).  Centred rows (``means``) differ from lag to lag by a
    constant: the row then also gains the difference of the means times the sum of ``z``
    over the samples ``k - tau`` concerned (each piece's last ``tau`` left out).  A few
    small products per lag instead of those of every row (4x fewer for the IV instruments:
    104 rows, head 20, width 4)."""
    q, lags = Z.shape[0], out.shape[0]
    lead = head + width
    if not width or lead >= q:
        return
    # per piece, its last samples z_{e-lags+i}, i < lags (zero before the piece)
    lasts = np.zeros((q, len(lengths), lags))
    for p, (s, n) in enumerate(zip(starts, lengths, strict=True)):
        take = min(n, lags)
        lasts[:, p, lags - take:] = Z[:, s + n - take:s + n]
    if means is not None:
        steps = means[lead:] - means[head:q - width]                 # mean(j) - mean(j - 1)
        # per column, its sum over k <= e - 1 - tau of each piece (the last tau left out)
        ends = Z.sum(axis=1)[:, None] - np.cumsum(lasts.sum(axis=1)[:, ::-1], axis=1)
    for tau in range(1, lags + 1):
        previous = gram if tau == 1 else out[tau - 2]
        out[tau - 1][lead:] = (previous[head:q - width]
                               - lasts[head:q - width, :, -1] @ lasts[:, :, lags - tau].T)
        if means is not None:
            out[tau - 1][lead:] -= np.outer(steps, ends[:, tau - 1])


def _stacked_structured(Z: np.ndarray, starts: np.ndarray, lengths: list[int], head: int,
                        width: int, lead: int, out: np.ndarray) -> None:
    """The columns of ``S(tau)`` that the lag-0 gram does not hold (:func:`lagged_moments`'s
    lagged layout: the ``head`` rows and the lags beyond ``R - tau``) in its first ``lead``
    rows, a block of lags in one product with a stacked operand whose rows for lag ``tau``
    hold ``z_{k-tau}`` (zero for the first ``tau`` samples of each piece)."""
    q, N = Z.shape
    lags = out.shape[0]
    direct = [np.concatenate([np.arange(min(head, q)), np.arange(max(q - width * tau, head), q)])
              for tau in range(1, lags + 1)]
    first = 1
    while first <= lags:
        last, rows = first, direct[first - 1].size
        while last < lags and rows + direct[last].size <= _LAGGED_ROWS:
            rows += direct[last].size
            last += 1
        stacked = np.empty((rows, N))
        at = 0
        for tau in range(first, last + 1):
            # the head rows and the last lags: two runs of rows, copied from slices (indexing
            # with the column list copied every piece twice: 7.3 against 5.0 ms, 104 rows of
            # 2e4 samples, 2 lags)
            runs = [(0, min(head, q)), (max(q - width * tau, head), q)]
            for s, length in zip(starts, lengths, strict=True):
                stacked[at:at + direct[tau - 1].size, s:s + min(tau, length)] = 0.0
                if length > tau:
                    row = at
                    for low, high in runs:
                        stacked[row:row + high - low, s + tau:s + length] = \
                            Z[low:high, s:s + length - tau]
                        row += high - low
            at += direct[tau - 1].size
        products = Z[:lead] @ stacked.T
        at = 0
        for tau in range(first, last + 1):
            cols = direct[tau - 1]
            out[tau - 1][:lead, cols] = products[:, at:at + cols.size]
            at += cols.size
        first = last + 1


def _transformed_structured(Z: np.ndarray, starts: np.ndarray, lengths: list[int],
                            head: int, width: int, means: np.ndarray | None,
                            gram: np.ndarray, out: np.ndarray) -> None:
    """The rows of the head and of lag 0 of ``v`` (the ``lead = head + width`` rows that
    :func:`_lagged_rows` starts from) of every ``S(tau)`` of :func:`lagged_moments`'s lagged
    layout for many lags: their columns of the head and of the oldest lag ``J - 1`` by
    blocked transforms, the others along the lag structure of the columns.

    Column ``(j, c)`` of ``S(tau)`` sums ``z_k v_{k-tau-j}`` over ``k >= s + tau`` of each
    piece (start ``s``), column ``(j + 1, c)`` of ``S(tau - 1)`` the same products from ``k
    = s + tau - 1`` on: they differ by that one sample's product, ``z_{s+tau-1}`` times
    ``v_{s-1-j}``, which is row ``(j + 1, c)`` of ``z_s``; the lags still in ``z_k`` (``j +
    tau < J``) are columns of ``gram`` less the first ``tau`` samples of each piece.  Centred
    rows (``means``) differ from lag to lag by a constant: the two columns then also differ
    by the difference of the means times the sum of ``z_k`` over ``k >= s + tau``.  (The
    transforms of every row against those columns cost 3-4x more: 104 rows, head 20, width
    4, 7-100 lags.)"""
    q, lags = Z.shape[0], out.shape[0]
    J = (q - head) // width
    kept = [(s, n) for s, n in zip(starts, lengths, strict=True) if n > 0]
    if not kept:
        out[...] = 0.0
        return
    lead = head + width                                  # rows transformed: head, lag 0
    columns = np.r_[0:head, q - width:q]
    layout = PieceLayout(np.array([n for _, n in kept]), gap=lags)
    laid = layout.place([Z[:, s:s + n] for s, n in kept])
    found = np.moveaxis(lag_products(laid[:lead], laid[columns], 1, lags), -1, 0)
    # per piece, its first samples z_{s+i}, i < lags (zero beyond it)
    firsts = layout.window(laid, 0, lags)                               # (q, pieces, lags)
    # the column recursion's terms z_{s+tau-1} v_{s-1-j} (rows of z_s), lead rows only
    products = firsts[:lead].transpose(2, 0, 1) @ Z[head:, [s for s, _ in kept]].T
    heads = np.cumsum(firsts.sum(axis=1), axis=1)        # (q, lags): sums over k < s + tau
    if means is not None:
        totals = Z.sum(axis=1)
        steps = means[head + width:] - means[head:q - width]        # mean(j + 1) - mean(j)
    for tau in range(1, lags + 1):
        S, previous = out[tau - 1], gram if tau == 1 else out[tau - 2]
        S[:lead, columns] = found[tau - 1]
        # lead rows, lags still in z_k: gram less the first tau samples of each piece
        shifted = np.arange(head, max(q - width * tau, head))
        if shifted.size:
            source = shifted + width * tau
            edge = firsts[:, :, :tau].reshape(q, -1)
            S[:lead, shifted] = gram[:lead, source] - edge[:lead] @ edge[source].T
            if means is not None:
                S[:lead, shifted] += np.outer(totals[:lead] - heads[:lead, tau - 1],
                                              means[source] - means[shifted])
        # lead rows, lags low .. J - 2 beyond z_k: down the anti-diagonals from lag tau - 1
        low = max(0, J - tau)
        if tau > 1 and low <= J - 2:
            target = slice(head + low * width, head + (J - 1) * width)
            S[:lead, target] = (previous[:lead, head + (low + 1) * width:head + J * width]
                                - products[tau - 1][:, (low + 1) * width:])
            if means is not None:
                S[:lead, target] += np.outer(totals[:lead] - heads[:lead, tau - 1],
                                             steps[low * width:(J - 1) * width])


#: :func:`lagged_moments` without lag structure by blocked transforms beyond this many lags
#: (plus :data:`_TRANSFORM_ROWS` over the rows): a product per lag costs ``q^2 N`` per lag,
#: the transforms about ``8 q^2 N`` for every lag at once plus ``q N log`` for the transforms.
#: Measured (single-threaded, 10 pieces of 1960 samples): 40 rows, 98 lags 157 against 30 ms,
#: 20 lags 30 against 17, 8 lags equal; 2 rows equal near 25 lags, 80 rows near 10.
_TRANSFORM_LAGS = 8
_TRANSFORM_ROWS = 60
#: With lag structure, the new columns of lag ``tau`` (the head and ``tau`` lags of ``v``) in
#: the ``head + width`` lead rows by a stacked product cost ``(head + width) (head + width
#: tau) N`` per lag, by transforms and the anti-diagonal recursion about ``8 (head +
#: width)^2 N`` for all (the other rows follow by :func:`_lagged_rows` either way):
#: transforms beyond this many lags.  Measured (10 pieces of 1980 samples, 2026-11-27),
#: stacked against transforms: 104 rows (head 20, width 4) 4 lags 6.3 against 9.2 ms, 6 lags
#: 10.2 against 9.4, 8 lags 15.7 against 10.2; 54 rows (head 0, width 6) 4 lags 1.9 against
#: 2.5, 6 lags 4.4 against 2.5; 13 rows (head 3, width 2) 4 lags 1.2 against 1.5, 6 lags 2.1
#: against 1.4; 104 rows in 100 pieces of 200 samples 4 lags 10.1 against 10.8, 6 lags 16.2
#: against 11.5.
_TRANSFORM_STRUCTURED_LAGS = 5
#: Bytes of the transforms' per-frequency sums (complex, ``rows x columns`` at each of about
#: ``4 lags`` frequencies) above which the products stay in the time domain: a few hundred
#: rows at 100 lags would otherwise hold gigabytes.
_TRANSFORM_BYTES = 1 << 28


def _affordable(lags: int, rows: int, columns: int) -> bool:
    """Whether the transforms' sums of ``rows x columns`` products over ``lags`` lags fit
    in :data:`_TRANSFORM_BYTES`."""
    return 16 * (4 * lags + 1) * rows * columns <= _TRANSFORM_BYTES


def _transformed_lags(Z: np.ndarray, lengths: list[int], out: np.ndarray) -> None:
    """``out[tau - 1] = S(tau)`` by the blocked transforms of
    :func:`~dmdidc.regression.lag_products.lag_products`: the pieces laid end to end, as many
    zeros apart as the longest lag, so that no product reaches across a piece start."""
    lags = out.shape[0]
    cuts = np.cumsum(lengths)[:-1]
    pieces = [z for z in np.split(Z, cuts, axis=1) if z.shape[1]]
    if not pieces:
        out[...] = 0.0
        return
    layout = PieceLayout(np.array([z.shape[1] for z in pieces]), gap=lags)
    laid = layout.place(pieces)
    out[...] = np.moveaxis(lag_products(laid, laid, 1, lags), -1, 0)


def _direct_lags(Z: np.ndarray, starts: np.ndarray, lengths: list[int], out: np.ndarray) -> None:
    """``out[tau - 1] = S(tau)`` for series without lag structure: per lag one product of the
    pieces side by side at the shift (views, no copy) less the few products reaching across
    piece starts.  Every column is new here, and a pass over ``Z`` per lag costs less than
    copying them into a stacked operand (40 rows x 2 lags 4.6 ms against 7.7 ms, 40 x 20 57
    against 94 ms on 10 pieces of 1960 samples); with few new columns per lag (the lagged
    layout) the stacked operand's single pass wins (104 rows, head 20: 9-10 ms against 12)."""
    N = Z.shape[1]
    for tau in range(1, out.shape[0] + 1):
        if tau >= N:          # no pair of samples this far apart (Z[:, :N - tau] would wrap)
            out[tau - 1] = 0.0
            continue
        block = Z[:, tau:] @ Z[:, :N - tau].T
        for s, length in zip(starts[1:], lengths[1:], strict=True):
            lo, hi = max(s, tau), min(s + tau, s + length)
            if lo < hi:
                block -= Z[:, lo:hi] @ Z[:, lo - tau:hi - tau].T
        out[tau - 1] = block


@dataclasses.dataclass(frozen=True)
class TrimmedMoments:
    """Instrument moments ``(Z Z^T, Z head^T)`` over every trajectory's samples less ``trim``
    at either end (centred by their own means when ``centred``), read from the moments of all
    samples (:func:`long_run_covariance`): those the moment checks use
    (:func:`dmdidc.inference.residuals.moment_checks`).  ``sums`` (the uncentred sums of
    ``z`` over those samples) and ``n_samples`` let a user check they are of its data.
    ``residual_memory``: :func:`residual_memory` of the residuals of ``coefficients`` over
    those samples (``None`` when the covariance's lag window was given, not found)."""

    trim: int
    centred: bool
    S_zz: np.ndarray
    S_zhead: np.ndarray
    sums: np.ndarray
    n_samples: int
    residual_memory: int | None = None
    coefficients: np.ndarray | None = None


def _trimmed(Z: np.ndarray, head: np.ndarray, lengths: list[int], trim: int, S_zz: np.ndarray,
             S_zhead: np.ndarray, means: np.ndarray | None, head_means: np.ndarray | None
             ) -> TrimmedMoments | None:
    """:class:`TrimmedMoments` from the moments of all samples of ``Z`` and ``head`` (the
    trajectories side by side, centred by ``means`` and ``head_means`` when given) less the
    products of the ``2 trim`` samples cut from each trajectory (``None`` when a trajectory
    keeps fewer than two: the checks leave those out)."""
    if any(length - 2 * trim < 2 for length in lengths):
        return None
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)
    cut = np.concatenate([np.r_[s:s + trim, s + length - trim:s + length]
                          for s, length in zip(starts, lengths, strict=True)])
    z_cut, h_cut = Z[:, cut], head[:, cut]
    count = Z.shape[1] - cut.size
    z_sums = Z.sum(axis=1) - z_cut.sum(axis=1)         # of the centred series: near zero
    S_zz = S_zz - z_cut @ z_cut.T
    S_zhead = S_zhead - z_cut @ h_cut.T
    if means is not None:
        # re-centred by the kept samples' own means (the series' differ by z_sums / count)
        h_sums = head.sum(axis=1) - h_cut.sum(axis=1)
        S_zz -= np.outer(z_sums, z_sums) / count
        S_zhead -= np.outer(z_sums, h_sums) / count
    raw = z_sums if means is None else z_sums + count * means
    return TrimmedMoments(trim, means is not None, S_zz, S_zhead, raw, count)


def long_run_covariance(coefficients: np.ndarray, blocks, *, centred: bool = False,
                        lags: int | None = None, common: int = 0,
                        lagged: tuple[int, int] | None = None, trim: int | None = None):
    """Covariance of a 2SLS ``vec(Theta)`` under serially correlated residuals (HAC).

    The 2SLS error is ``Theta - Theta_0 = sum_k e_k h_k^T`` with the projected instruments
    ``h_k = G^T z_k``, ``G = S_zz^-1 S_zphi M^-1``.  When the instruments are independent of
    the noise (functions of an open-loop excitation), ``Cov(vec Theta) = sum_tau
    gamma_e(tau) kron H(tau)`` with ``gamma_e`` the residuals' autocovariance (per sample) and
    ``H(tau) = sum_k h_k h_{k-tau}^T = G^T S_zz(tau) G``; Bartlett weights over ``|tau| <= L``
    (Newey and West 1987), per residual degree of freedom ``N - p - intercepts`` (the
    small-sample correction of the white formula's ``Sigma``).  Lag 0 alone is the textbook
    ``Sigma kron M^-1``.  Measurement
    noise on the states makes the residuals a moving average (``e_k = v_{k+1} - A_d v_k +
    w_k``) whose negative lag-1 correlation the textbook formula ignores: it overstates the
    variance of ``A_d`` several-fold for slow modes (measured 4-5x on random plants), and
    understates it under coloured noise.

    Parameters
    ----------
    coefficients : ndarray, shape (n, p)
    blocks : iterable of (Phi (p, N_i), Y (n, N_i), Z (q, N_i))
        The samples of each trajectory (lags are taken within a trajectory).
    centred : bool
        The fit had an intercept (means removed).
    lags : int, optional
        ``L`` (default :func:`hac_lags`: the instruments are independent of the noise, so only
        the lags at which the residuals are correlated contribute).
    common : int, default 0
        The last ``common`` rows of ``Z`` are those of ``Phi`` (:func:`instrument_moments`).
    lagged : (head, width), optional
        ``Z``'s rows after ``head`` are lags ``0, 1, ..`` of one signal
        (:func:`lagged_moments`): the lagged products reuse the lag-0 ones.
    trim : int, optional
        Also return the instrument moments without the first and last ``trim`` samples of
        each trajectory (:class:`TrimmedMoments`, ``None`` if a trajectory is too short),
        for the moment checks: a few edge products instead of a pass of their own.

    Returns
    -------
    KroneckerCovariance
        ``2 L + 1`` Kronecker terms (never the ``(n p)^2`` matrix); with ``trim``, the pair of
        it and the :class:`TrimmedMoments`.
    """
    blocks = list(blocks)
    # the regressors not among Z's rows: the others' moments are read from Z Z^T
    head = np.concatenate([b[0][:b[0].shape[0] - common] for b in blocks], axis=1)
    Z = np.concatenate([b[2] for b in blocks], axis=1)
    Y = np.concatenate([b[1] for b in blocks], axis=1)
    return _laid_out_covariance(coefficients, head, Y, Z, [b[0].shape[1] for b in blocks],
                               centred=centred, lags=lags, common=common, lagged=lagged,
                               trim=trim)


def _laid_out_covariance(coefficients: np.ndarray, head: np.ndarray, Y: np.ndarray,
                        Z: np.ndarray, lengths: list[int], *, centred: bool = False,
                        lags: int | None = None, common: int = 0,
                        lagged: tuple[int, int] | None = None, trim: int | None = None):
    """:func:`long_run_covariance` of the trajectories laid side by side: ``head`` (the
    regressors that are not the last ``common`` rows of ``Z``), ``Y`` and ``Z`` with
    ``lengths[i]`` samples of trajectory ``i`` each, our own arrays (``head`` and ``Z`` are
    centred in place when ``centred``): built in place by the caller, the samples are never
    copied into blocks and then again into one array."""
    n, p = coefficients.shape
    if common:
        E = Y - coefficients[:, :p - common] @ head
        E -= coefficients[:, p - common:] @ Z[Z.shape[0] - common:]
    else:
        E = Y - coefficients @ head
    residuals = np.split(E, np.cumsum(lengths)[:-1], axis=1)          # views of E
    if centred:
        for e in residuals:
            e -= e.mean(axis=1, keepdims=True)
    means = head_means = None
    if centred:                                   # both our own copies: in place
        head_means = head.mean(axis=1)
        head -= head_means[:, None]
        means = Z.mean(axis=1)
        Z -= means[:, None]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)
    if lagged is not None and lagged[1] and not centred:
        # the lagged rows' block from the lag structure (centred rows lose it to the means)
        S_zz = _lagged_gram(Z, starts, lengths, *lagged)
        S_zphi = regressor_moments(S_zz, Z @ head.T, common)
    else:
        S_zz, S_zphi = instrument_moments(Z, head, common)
    trimmed = None if trim is None else _trimmed(Z, head, lengths, trim, S_zz,
                                                 S_zphi[:, :head.shape[0]], means, head_means)
    G = projected_instruments(S_zz, S_zphi)
    N = head.shape[1]
    L = lags
    if lags is None:
        memory = residual_memory(residuals, trim)
        if trim is not None:
            memory, trimmed_memory = memory
            if trimmed is not None:       # the checks' samples: their residuals' memory too
                trimmed = dataclasses.replace(trimmed, residual_memory=trimmed_memory,
                                              coefficients=coefficients)
        L = hac_lags(residuals, memory)
    # the residuals' autocovariances per residual degree of freedom, as the white formula's
    # Sigma = E E^T / (N - rank - intercepts): dividing by N left the long-run covariance
    # p / N short of it (3.4 % of the variance at K = 390, p = 13; 0.04 % at K = 30000)
    dof = max(N - p - (len(lengths) if centred else 0), 1)
    # H(tau) = G^T S_zz(tau) G and gamma_e(tau): the instruments' and the residuals' lagged
    # products within each trajectory, never the (p, N) h_k
    S_lagged = lagged_moments(Z, lengths, L, S_zz, means, lagged)
    E_0 = E @ E.T
    E_lagged = lagged_moments(E, lengths, L, E_0)
    left, right = [], []
    for tau in range(L + 1):
        weight = 1.0 - tau / (L + 1.0)
        gamma_e = E_0 if tau == 0 else E_lagged[tau - 1]
        H = G.T @ (S_zz if tau == 0 else S_lagged[tau - 1]) @ G
        if tau == 0:
            left.append(gamma_e / dof)
            right.append(H)
        else:
            left += [weight * gamma_e / dof, weight * gamma_e.T / dof]
            right += [H, H.T]
    # Positive semi-definite without repair: the Bartlett-weighted sum of the lagged Kronecker
    # products of two positive-definite autocovariance sequences is a non-negative spectrum.
    covariance = KroneckerCovariance(np.array(left), np.array(right))
    return covariance if trim is None else (covariance, trimmed)

def hausman_variance(v_iv: np.ndarray, v_ls: np.ndarray) -> np.ndarray:
    """Variance of an IV-minus-LS difference if least squares is consistent (Hausman 1978).

    Least squares is then efficient, so ``Var(IV - LS) = Var IV - Var LS``; floored at 5 % of
    ``Var IV`` (two estimates from the same data never differ by exactly their variances'
    difference; the floor keeps a near-equal pair from dividing by about zero).

    Examples
    --------
    >>> hausman_variance(np.array([4.0, 1.0]), np.array([1.0, 1.0])).tolist()
    [3.0, 0.05]
    """
    return np.maximum(v_iv - v_ls, 0.05 * v_iv)


def pretest_bias2(v_ls: np.ndarray, v_iv: np.ndarray, difference: np.ndarray) -> np.ndarray:
    """Estimated squared bias of least squares kept by a pretest against IV.

    ``max(|D|^2 - Var D, 0)`` for the IV-minus-LS difference ``D`` (complex allowed) with
    :func:`hausman_variance`: unbiased for ``|E D|^2`` before the clipping; 0 where either
    variance is missing (NaN).

    Examples
    --------
    >>> pretest_bias2(np.array([1.0, 1.0]), np.array([4.0, 4.0]), np.array([3.0, 1.0])).tolist()
    [6.0, 0.0]
    """
    with np.errstate(invalid="ignore"):
        bias2 = np.maximum(np.abs(difference) ** 2 - hausman_variance(v_iv, v_ls), 0.0)
    return np.nan_to_num(bias2)
