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

*Factored form.*  The Jacobian is kept as these pieces (:class:`ModelJacobian`), never as
the ``(m + n^2 + n m) x (n^2 + 2 m n)`` matrix (63 MB at ``n = 50``, ``m = 4``, with an
``n^4`` logarithm block): ``A_c``'s rows are the map ``dA_d -> V ((W dA_d V) / D_exp) W``
(``W = V^-1``), whose variances the covariance reads in that form
(:meth:`~dmdidc.regression.covariance.KroneckerCovariance.frechet_variances`, ``O(n^4)``
flops, ``O(n^3)`` memory), and each channel's rows (its delay and its column of ``B_c``) are
formed alone (:meth:`ModelJacobian.channel`, ``n + 1`` rows on ``vec A_d`` and the channel's
pair of blocks), their chain through the logarithm applied as the adjoint map
``G -> W^T ((V^T G W^T) / D_exp) V^T`` instead of a product with the ``n^2 x n^2`` matrix.
:meth:`ModelJacobian.dense` assembles the matrix for small problems.

The whole Jacobian costs ``O(m n^4)`` flops against ``O(n^2)`` complete recoveries (each a
matrix logarithm and ``m`` hold-length searches) for central differences: at ``n = 30``,
``m = 5`` a fraction of a second instead of about two minutes.  When ``A_c`` is not safely
diagonalizable (eigenvector condition number above :data:`MAX_EIGENVECTOR_CONDITION`, or
its derivatives in one direction disagreeing by more than :data:`MAX_EIGENBASIS_ERROR` with
the block-matrix exponential's, which never uses the eigenbasis), :func:`model_jacobian`
uses the same pieces computed without the eigenbasis (:mod:`dmdidc.inference.frechet`: the
logarithm's derivative by inverse scaling and squaring in the Schur basis, the hold's by
quadrature of its integral), checked in turn against the block-matrix exponential; only if that
check fails too does it return ``None`` and the caller differentiate numerically.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmdidc.inference.frechet import SchurFrechet, block_exponential_error, schur_error
from dmdidc.regression.covariance import frechet_matrix

__all__ = ["model_jacobian", "ModelJacobian", "MAX_EIGENVECTOR_CONDITION",
           "MAX_EIGENBASIS_ERROR", "MAX_SCHUR_ERROR"]

#: Above this eigenvector condition number the eigenbasis formulas lose too many digits.
MAX_EIGENVECTOR_CONDITION = 1e8

#: Largest relative disagreement of the eigenbasis derivatives with the block-matrix
#: exponential (:func:`_eigenbasis_error`) for which they are used.  Measured against the
#: block-logm ground truth, the true error stays within 10x of this disagreement: the error
#: of ``A_c``'s variances for two eigenvalues ``d`` apart (the family of
#: ``tests/dmdidc/inference/test_jacobian.py``; d = 1e-1 .. 1e-5, cond(V) 3e1 .. 3e5:
#: 8.7e-14 -> 7.9e-14, 3.1e-8 -> 3.7e-8, 7.3e-5 -> 1.7e-5, 8.7e-4 -> 4.8e-3, 0.13 -> 0.17),
#: and the logarithm's derivative on random plants of n = 30, 50 (7.7e-5 -> 4.7e-4,
#: 4.8e-5 -> 3.6e-5); so 1e-5 keeps the variances within about 2e-4.  Well-conditioned
#: plants disagree by 1e-15 .. 1e-9.
MAX_EIGENBASIS_ERROR = 1e-5

#: The same check for the eigenbasis-free fallback (:mod:`dmdidc.inference.frechet`), which
#: agrees to 1e-13 .. 1e-15 on the near-defective plants of the tests (eigenvalues down to
#: 1e-7 apart) and on random plants of n = 30, 50.
MAX_SCHUR_ERROR = 1e-8


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


# eq=False: a generated __eq__ over array fields raises (ambiguous truth value) and makes the
# instances unhashable; identity is the only meaningful equality of a factored operator
@dataclass(frozen=True, eq=False)
class ModelJacobian:
    """The Jacobian of ``[delay (m), vec A_c (n^2), vec B_c (n m)]`` (row-major vecs) with
    respect to ``[vec A_d, b0, b1 per channel]``, in factored form (module notes).

    Attributes
    ----------
    mu : ndarray, shape (n,), complex, or None
        Eigenvalues of ``A_c`` (``None`` on the eigenbasis-free route, ``schur``).
    V, W : ndarray, shape (n, n), complex, or None
        Eigenvectors of ``A_c`` as columns and their inverse.
    log_factors : ndarray, shape (n, n), complex, or None
        ``1 / D_exp``: ``d A_c = V ((W dA_d V) o log_factors) W``.
    A_c, B_c, delay, columns, dt, starts, weights
        The recovered plant and the arguments of :func:`model_jacobian`.
    schur : SchurFrechet or None
        The eigenbasis-free derivatives, when ``A_c`` is not safely diagonalizable.
    """

    mu: np.ndarray | None
    V: np.ndarray | None
    W: np.ndarray | None
    log_factors: np.ndarray | None
    A_c: np.ndarray
    B_c: np.ndarray
    delay: np.ndarray
    columns: list
    dt: float
    starts: np.ndarray | None
    weights: np.ndarray
    _G_T_inv: np.ndarray
    _D_gamma_T: np.ndarray | None
    schur: SchurFrechet | None = None

    def log_variances(self, cov) -> np.ndarray:
        """The variances of ``A_c``, shape (n, n), under ``cov`` (a
        :class:`~dmdidc.regression.covariance.KroneckerCovariance` of coefficients whose first
        ``n`` columns are ``A_d``)."""
        n = self.A_c.shape[0]
        if self.schur is None:
            return cov.frechet_variances(self.V, self.W, self.log_factors, np.arange(n))
        p = cov.shape[1]
        index = (np.arange(n)[:, None] * p + np.arange(n)[None, :]).ravel()
        variances = np.empty(n * n)
        for rows, block in self.schur.log_row_blocks():    # (rows are independent)
            variances[rows] = cov.linear_variances(block, index)
        return variances.reshape(n, n)

    def _hold(self, s: float) -> tuple[np.ndarray, np.ndarray]:
        """``exp(A_c s)`` and ``Gamma(s)``."""
        if self.schur is not None:
            return self.schur.hold(s)
        gamma_s, _ = _gamma(self.mu, s)
        return (((self.V * np.exp(self.mu * s)) @ self.W).real,
                ((self.V * gamma_s) @ self.W).real)

    def _hold_times(self, s: float, v: np.ndarray, gamma: bool) -> np.ndarray:
        """``J[a, c n + d] = (L_f(A_c, e_c e_d^T) v)[a]`` for ``f = Gamma(s)`` or ``exp``."""
        if self.schur is not None:
            return self.schur.hold_times(s, v, gamma)
        if gamma and s == self.dt:
            D = self._D_gamma_T
        elif gamma:
            D = _divided(*_gamma(self.mu, s), self.mu)
        else:
            exp_s = np.exp(self.mu * s)
            D = _divided(exp_s, s * exp_s, self.mu)
        return _frechet_times(self.V, self.W, D, v)

    def log_adjoint(self, G: np.ndarray) -> np.ndarray:
        """The gradients ``G`` on ``A_c`` carried to ``A_d``: ``L^T(G) = W^T ((V^T G W^T) o
        log_factors) V^T`` for each of ``G``, shape (k, n, n) (the rows ``g^T J_log`` of the
        logarithm's Jacobian ``J_log``, without forming it)."""
        if self.schur is not None:
            return self.schur.log_adjoint(G)
        inner = np.matmul(np.matmul(self.V.T, G), self.W.T) * self.log_factors
        return np.matmul(np.matmul(self.W.T, inner), self.V.T).real

    def channel(self, i: int, b: np.ndarray | None = None, delay: float | None = None, *,
                delay_only: bool = False) -> np.ndarray | None:
        """Rows of channel ``i``: its delay, then its column of ``B_c`` (unless
        ``delay_only``), over ``[vec A_d (n^2), b0 (n), b1 (n)]`` (``b1``'s columns zero
        when that block lies beyond the bound).

        Parameters
        ----------
        i : int
        b, delay : optional
            The channel's ``B_c`` column and delay to differentiate at (by default the
            recovered ones; the pair ``w, w + 1`` fitted alone gives its own).
        delay_only : bool, default False

        Returns
        -------
        ndarray, shape (1 + n, n^2 + 2 n) or (1, n^2 + 2 n), or None
            ``None`` for a channel without pair (no active block).
        """
        if self.columns[i] is None:
            return None
        A_c, dt = self.A_c, self.dt
        n = A_c.shape[0]
        b = self.B_c[:, i] if b is None else b
        delay = self.delay[i] if delay is None else delay
        G_T_inv = self._G_T_inv
        start = np.floor(delay / dt + 1e-9) if self.starts is None else self.starts[i]
        s = (start + 1) * dt - delay
        E_s, G_s = self._hold(s)
        f, r = E_s @ b, G_s @ b - self.columns[i][0]
        fw, rw = self.weights * f, self.weights * r          # the weighted condition g = f^T W r
        curvature = f @ fw + (A_c @ f) @ rw
        # d b and the residual/slope perturbations in A_c, then carried to A_d
        db_A = -G_T_inv @ self._hold_times(dt, b, gamma=True)
        dr_A = self._hold_times(s, b, gamma=True) + G_s @ db_A
        df_A = self._hold_times(s, b, gamma=False) + E_s @ db_A
        dg_A = rw @ df_A + fw @ dr_A
        gradients = dg_A[None] if delay_only else np.concatenate([dg_A[None], db_A])
        out = np.zeros((gradients.shape[0], n * n + 2 * n))
        out[:, :n * n] = self.log_adjoint(gradients.reshape(-1, n, n)).reshape(-1, n * n)
        out[0, :n * n] /= curvature
        out[0, n * n:n * n + n] = (rw @ E_s @ G_T_inv + fw @ (G_s @ G_T_inv - np.eye(n))
                                   ) / curvature
        if not delay_only:
            out[1:, n * n:n * n + n] = G_T_inv
        if self.columns[i][1] is not None:
            out[0, n * n + n:] = (rw @ E_s @ G_T_inv + fw @ G_s @ G_T_inv) / curvature
            if not delay_only:
                out[1:, n * n + n:] = G_T_inv
        return out

    def dense(self) -> np.ndarray:
        """The whole matrix, shape (m + n^2 + n m, n^2 + 2 m n): columns ``vec A_d`` (n^2),
        then per channel ``b0`` (n) and ``b1`` (n) (zero columns for missing ones).  For
        small problems (it holds the ``n^4`` logarithm block)."""
        n, m = self.B_c.shape
        out = np.zeros((m + n * n + n * m, n * n + 2 * m * n))
        out[m:m + n * n, :n * n] = (self.schur.log_rows() if self.schur is not None else
                                    frechet_matrix(self.V, self.W, self.log_factors).real)
        for i in range(m):
            rows = self.channel(i)
            if rows is None:
                continue
            lo = n * n + 2 * i * n
            targets = np.r_[i, m + n * n + np.arange(n) * m + i]
            out[targets, :n * n] = rows[:, :n * n]
            out[targets, lo:lo + 2 * n] = rows[:, n * n:]
        return out


def model_jacobian(A_c: np.ndarray, B_c: np.ndarray, delay: np.ndarray,
                   columns: list[tuple[np.ndarray, np.ndarray | None] | None], dt: float,
                   starts: np.ndarray | None = None, weights: np.ndarray | None = None
                   ) -> ModelJacobian | None:
    """Jacobian of ``[delay (m), vec A_c (n^2), vec B_c (n m)]`` (row-major vecs), factored.

    Parameters
    ----------
    A_c : ndarray, shape (n, n)
    B_c : ndarray, shape (n, m)
    delay : ndarray, shape (m,)
        The recovered plant at the estimate.
    columns : list of (b0, b1) or None, length m
        Per channel the input columns of the two blocks its delay was recovered from
        (``b1`` ``None`` when the second block lies beyond the bound), ``None`` for a channel
        without effect (no derivative: its rows are zero).
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
    ModelJacobian or None
        Its :meth:`~ModelJacobian.dense` matrix has shape ``(m + n^2 + n m, n^2 + 2 m n)``:
        columns ``vec A_d`` (n^2), then per channel ``b0`` (n) and ``b1`` (n).  ``None`` when
        neither the eigenbasis nor the Schur-basis derivatives pass their check (module
        notes).

    Examples
    --------
    >>> import numpy as np
    >>> A_c, B_c = np.array([[-0.5]]), np.array([[1.0]])
    >>> b0, b1 = np.array([0.3]), np.array([0.5])
    >>> J = model_jacobian(A_c, B_c, np.array([0.7]), [(b0, b1)], dt=1.0)
    >>> J.dense().shape        # rows: delay, A_c, B_c; columns: A_d, b0, b1
    (3, 3)
    """
    n, m = B_c.shape
    common = (A_c, B_c, delay, list(columns), dt, starts,
              np.ones(n) if weights is None else weights)
    mu, V = np.linalg.eig(A_c)
    if np.linalg.cond(V) <= MAX_EIGENVECTOR_CONDITION:
        W = np.linalg.inv(V)
        exp_T = np.exp(mu * dt)
        D_exp = _divided(exp_T, dt * exp_T, mu)
        gamma_T, gamma_T_slope = _gamma(mu, dt)
        D_gamma = _divided(gamma_T, gamma_T_slope, mu)
        if np.min(np.abs(D_exp)) > 0 and \
                _eigenbasis_error(A_c, dt, V, W, D_exp, D_gamma) <= MAX_EIGENBASIS_ERROR:
            G_T_inv = np.linalg.inv(((V * gamma_T) @ W).real)
            return ModelJacobian(mu, V, W, 1.0 / D_exp, *common, G_T_inv, D_gamma)
    # nearly defective: the same derivatives without the eigenbasis
    try:
        schur = SchurFrechet(A_c, dt)
        if not schur_error(schur) <= MAX_SCHUR_ERROR:
            return None
        G_T_inv = np.linalg.inv(schur.hold(dt)[1])
    except (np.linalg.LinAlgError, ValueError):      # singular Sylvester equation or Gamma(T)
        return None
    return ModelJacobian(None, None, None, None, *common, G_T_inv, None, schur)


def _eigenbasis_error(A_c: np.ndarray, dt: float, V: np.ndarray, W: np.ndarray,
                      D_exp: np.ndarray, D_gamma: np.ndarray) -> float:
    """Relative disagreement of the eigenbasis derivatives with ones that never use it.

    ``cond(V)`` alone does not bound the error: the divided differences of nearly equal
    eigenvalues lose digits as well (a near-defective ``A_c`` at cond(V) = 3e4 already gave
    ``A_c``'s variances 1e-4 wrong).  So one fixed direction ``E`` is checked with the block
    identity ``f([[A, E], [0, A]]) = [[f(A), L_f(A, E)], [0, f(A)]]`` (Mathias 1996;
    Higham, *Functions of Matrices*, sec. 3.2) by the scaling-and-squaring ``expm``: the
    logarithm's derivative ``G = L_log(E)``, mapped back by the exponential's
    (``L_exp(A_c T, G T)`` must return ``E``; exp has no branch, so any logarithm the
    estimator chose is checked), and ``Gamma(T)``'s derivative (the hold's; ``Gamma`` of the
    block matrix from a ``4n x 4n`` exponential).  ``O(n^3)`` flops (5 ms at ``n = 50``),
    against the ``O(n^4)`` of the intervals.

    Returns
    -------
    float
        The larger relative Frobenius error of the two (``nan`` if either overflowed).
    """
    n = A_c.shape[0]
    # a fixed dense direction: it has a component along every eigenpair, and the same data
    # give the same decision
    E = np.random.default_rng(20261128).standard_normal((n, n))
    return block_exponential_error(A_c, dt, E, (V @ ((W @ E @ V) / D_exp) @ W).real,
                                   (V @ ((W @ E @ V) * D_gamma) @ W).real)
