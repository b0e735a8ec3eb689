"""Frechet derivatives of ``A_c = log(A_d) / T``, ``exp(A_c s)`` and ``Gamma(s)`` that never use
the eigenbasis: the fallback of :mod:`dmdidc.inference.jacobian` when ``A_c`` is nearly
defective (its eigenvectors ill-conditioned, or the divided differences of close eigenvalues
losing digits).

*The logarithm* (inverse scaling and squaring; Al-Mohy, Higham and Relton, "Computing the
Frechet derivative of the matrix logarithm and estimating the condition number", SIAM J. Sci.
Comput. 35, 2013; Higham, *Functions of Matrices*, sec. 11.4).  In the complex Schur basis
``A_c = Q U Q^H`` (``U`` upper triangular, unitary ``Q``: no conditioning lost), the square
roots ``S_k = exp(U T / 2^k)`` (taken from ``A_c`` itself, so they follow whichever logarithm
branch the estimator chose) bring ``A_d`` near the identity; ``log(A_d) = 2^s log(S_s)`` and
the chain rule through ``S_{k-1} = S_k^2`` gives

    E_k solves  S_k E_k + E_k S_k = E_{k-1}    (a triangular Sylvester equation),
    L_log(A_d, E_0) = 2^s sum_j w_j (I + t_j X)^-1 E_s (I + t_j X)^-1,   X = S_s - I,

the last the derivative of ``log(I + X) = int_0^1 X (I + t X)^-1 dt`` by Gauss-Legendre
quadrature (``||U T / 2^s||_1 <= 1`` bounds ``X``: the integrand's poles stay off ``[0, 1]``,
at ``0.5 +/- 0.9i`` at worst, where sixteen nodes err by about ``1e-16``).
Each equation is solved for many directions at once, column by column (Bartels-Stewart on a
triangular matrix: ``n`` triangular solves with all directions as right-hand sides), so the
``n^2`` gradient rows the variances of ``A_c`` need cost ``O(n^5)`` BLAS-3 flops.  The rows are
obtained through the adjoint map (the variance of ``A_c[a, b]`` is ``g^T Sigma g`` for the
gradient ``g = L^*(e_a e_b^T)``), never through the covariance's factors.

*The hold* (``exp(A_c s)``, ``Gamma(s) = int_0^s exp(A_c r) dr``).  The delta method needs
``L_f(A_c, E) v`` for a vector ``v``, for every direction ``E = e_c e_d^T``: from
``L_exp(A s, E s) = int_0^s e^{A(s - r)} E e^{A r} dr`` and ``L_Gamma(s) = int_0^s Gamma(s - r)
E e^{A r} dr``, ``(L_f(E) v)[a] = int f'(s - r)[a, c] (e^{A r} v)[d] dr`` with Gauss-Legendre
panels (entire integrands: twenty nodes on panels of ``||A_c||_2 r <= 8`` are exact to
rounding).

Both are checked in one random direction against the block-matrix exponential
(:func:`schur_error`); :func:`~dmdidc.inference.jacobian.model_jacobian` uses them only when
they agree.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial.legendre import leggauss
from scipy.linalg import expm, schur, solve_triangular

__all__ = ["SchurFrechet", "schur_error", "block_exponential_error"]

#: Bound on ``||U T / 2^s||_1`` after the square roots, and the quadrature nodes: the poles
#: of the integrand stay off ``[0, 1]`` (at ``0.5 +/- 0.9i`` at worst, an eigenvalue ``+/- i``),
#: where twelve nodes err by 1.9e-13 and sixteen by 4e-16 (a review measured both); fewer
#: roots, because the Sylvester equations dominate the cost.
_THETA = 1.0
_LOG_NODES = 16
#: Gauss-Legendre nodes per panel of the hold's integrals, and the panel length in
#: ``||A_c||_2 r``: for ``e^{z r}``, ``|z| h <= 8``, the error bound ``(|z| h / 4)^{2q} / (2q)!``
#: is 1e-24 at q = 20.
_HOLD_NODES, _PANEL = 20, 8.0
#: Working size of one block of :meth:`SchurFrechet.log_row_blocks` (its complex directions;
#: n = 50: 51 MB peak and 0.51 s for all rows, 26 MB and 0.64 s at half the size).
_BLOCK_BYTES = 8 * 2 ** 20


def _sylvester(S: np.ndarray, C: np.ndarray, block: int = 16) -> np.ndarray:
    """``X`` with ``S X + X S = C`` for upper triangular ``S`` (n, n) and ``C`` (N, n, n):
    column ``j`` solves ``(S + S_jj I) x_j = c_j - sum_{k<j} x_k S_kj`` for all N at once.
    The sum over earlier blocks of ``block`` columns is one matrix product per block (a sum
    per column re-reads all earlier columns: memory-bound, 5x slower at n = 50)."""
    N, n, _ = C.shape
    # columns first (X[:, :, j] = columns[j], (N, n)): the sums over earlier columns are
    # then products with one contiguous (j, N n) matrix
    columns = np.zeros((n, N, n), dtype=complex)
    given = C.transpose(2, 0, 1)
    eye = np.eye(n)
    for j0 in range(0, n, block):
        j1 = min(j0 + block, n)
        rhs = given[j0:j1] - np.tensordot(S[:j0, j0:j1], columns[:j0], axes=(0, 0)) \
            if j0 else given[j0:j1]
        for j in range(j0, j1):
            column = rhs[j - j0] - np.tensordot(S[j0:j, j], columns[j0:j], axes=(0, 0)) \
                if j > j0 else rhs[0]
            columns[j] = solve_triangular(S + S[j, j] * eye, column.T, check_finite=False).T
    return columns.transpose(1, 2, 0)


def _congruence(P: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``P Y P^H`` for each of ``Y`` (N, n, n), as two large matrix products (a batch of small
    ones is several times slower)."""
    N, n, _ = Y.shape
    right = (Y.reshape(N * n, n) @ P.conj().T).reshape(N, n, n)
    return np.tensordot(right, P, axes=(1, 1)).transpose(0, 2, 1)


class SchurFrechet:
    """Eigenbasis-free derivatives at ``A_c`` for the sampling period ``dt`` (module notes).

    Parameters
    ----------
    A_c : ndarray, shape (n, n)
    dt : float
    """

    def __init__(self, A_c: np.ndarray, dt: float):
        n = A_c.shape[0]
        self.A_c, self.dt, self.n = A_c, dt, n
        self._norm, self._node_cache = np.linalg.norm(A_c, 2), {}
        U, self.Q = schur(A_c.astype(complex), output="complex")
        scaled = U * dt
        norm = np.linalg.norm(scaled, 1)
        self.levels = max(0, int(np.ceil(np.log2(norm / _THETA)))) if norm > 0 else 0
        # the smallest root once, then squared upward: S_(k-1) = S_k^2 to rounding, the chain
        # rule's premise (each root from its own expm disagreed by up to 8e-10 on near-repeated
        # complex pairs, and the derivative lost five digits: a review)
        self.roots = []
        if self.levels:
            root = np.triu(expm(scaled / 2.0 ** self.levels))
            self.roots = [root]
            for _ in range(self.levels - 1):
                root = np.triu(root @ root)
                self.roots.insert(0, root)
        X = (self.roots[-1] if self.levels else np.triu(expm(scaled))) - np.eye(n)
        t, w = leggauss(_LOG_NODES)
        self.weights = w / 2 * 2.0 ** self.levels / dt
        self.resolvents = [solve_triangular(np.eye(n) + 0.5 * (tj + 1) * X, np.eye(n))
                           for tj in t]

    def _to_schur(self, E: np.ndarray) -> np.ndarray:
        return _congruence(self.Q.conj().T, E)

    def _from_schur(self, Y: np.ndarray) -> np.ndarray:
        return _congruence(self.Q, Y).real

    def log(self, E: np.ndarray) -> np.ndarray:
        """``L_log(A_d, E) / dt`` (the change of ``A_c``) for each of ``E``, shape (N, n, n)."""
        Y = self._to_schur(E)
        for S in self.roots:
            Y = _sylvester(S, Y)
        return self._from_schur(sum(w * (R @ Y @ R)
                                    for w, R in zip(self.weights, self.resolvents,
                                                    strict=True)))

    def log_adjoint(self, G: np.ndarray) -> np.ndarray:
        """The adjoint map (Frobenius inner product) of :meth:`log`: ``G`` on ``A_c`` carried to
        ``A_d``, shape (N, n, n)."""
        Z = self._to_schur(G)
        return self._adjoint_roots(sum(w * (R.conj().T @ Z @ R.conj().T)
                                       for w, R in zip(self.weights, self.resolvents,
                                                       strict=True)))

    def _adjoint_roots(self, Y: np.ndarray) -> np.ndarray:
        """The square roots' adjoint equations, last root first, then back from the Schur
        basis."""
        for S in reversed(self.roots):      # S^H Y + Y S^H = Z  <=>  S' Y^T + Y^T S' = Z^T
            Y = _sylvester(S.conj(), Y.transpose(0, 2, 1)).transpose(0, 2, 1)   # (S' = conj S)
        return self._from_schur(Y)

    def log_rows(self) -> np.ndarray:
        """The logarithm's Jacobian ``d vec A_c / d vec A_d`` (row-major vecs), (n^2, n^2)."""
        n = self.n
        out = np.empty((n * n, n * n))
        for rows, block in self.log_row_blocks():
            out[rows] = block
        return out

    def log_row_blocks(self):
        """:meth:`log_rows` a few rows at a time: ``(slice, rows)`` pairs in order, each block's
        working arrays about :data:`_BLOCK_BYTES` (the whole ``n^4`` complex block and its
        copies took 545 MB at ``n = 50``; a caller that reduces each block never holds it)."""
        # the unit directions e_a e_b^T are q_a^* q_b^T in the Schur basis, and the quadrature
        # keeps them rank one: sum_j w_j (R_j^H conj q_a)(conj R_j q_b)^T, O(n^4) flops
        n, Q = self.n, self.Q
        left = np.array([Q.conj() @ R.conj() for R in self.resolvents])      # (nodes, a, k)
        right = np.array([Q @ R.conj().T for R in self.resolvents])          # (nodes, b, l)
        step = max(1, _BLOCK_BYTES // (16 * n ** 3))
        for a0 in range(0, n, step):
            a1 = min(a0 + step, n)
            Y = np.einsum("j,jak,jbl->abkl", self.weights, left[:, a0:a1], right,
                          optimize=True)
            rows = self._adjoint_roots(Y.reshape((a1 - a0) * n, n, n))
            yield slice(a0 * n, a1 * n), rows.reshape((a1 - a0) * n, n * n)

    def hold(self, s: float) -> tuple[np.ndarray, np.ndarray]:
        """``exp(A_c s)`` and ``Gamma(s)``."""
        n = self.n
        big = expm(s * np.block([[self.A_c, np.eye(n)], [np.zeros((n, 2 * n))]]))
        return big[:n, :n], big[:n, n:]

    def hold_times(self, s: float, v: np.ndarray, gamma: bool) -> np.ndarray:
        """``J[a, c n + d] = (L_f(A_c, e_c e_d^T) v)[a]``, shape (n, n^2), for ``f = Gamma(s)``
        (``gamma``) or ``exp(A_c s)``."""
        n = self.n
        weights, exps, gammas = self._nodes(s)
        # the nodes are symmetric about s / 2: f(s - r_k) is f at the mirrored node
        outer = (gammas if gamma else exps)[::-1]
        inner = (exps @ v) * weights[:, None]
        return np.einsum("kac,kd->acd", outer, inner, optimize=True).reshape(n, n * n)

    def _nodes(self, s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Quadrature weights on ``[0, s]`` and ``exp(A_c r)``, ``Gamma(r)`` at the nodes; kept
        for the last few ``s`` (each channel asks for its own hold and the period's)."""
        key = float(s)
        if key not in self._node_cache:
            panels = max(1, int(np.ceil(self._norm * s / _PANEL)))
            t, w = leggauss(_HOLD_NODES)
            edges = np.linspace(0.0, s, panels + 1)
            half = np.diff(edges) / 2
            nodes = (edges[:-1, None] + half[:, None] * (t[None] + 1)).ravel()
            holds = [self.hold(r) for r in nodes]
            if len(self._node_cache) >= 4:
                self._node_cache.pop(next(iter(self._node_cache)))
            self._node_cache[key] = ((half[:, None] * w[None]).ravel(),
                                     np.array([h[0] for h in holds]),
                                     np.array([h[1] for h in holds]))
        return self._node_cache[key]


def block_exponential_error(A_c: np.ndarray, dt: float, E: np.ndarray, log_E: np.ndarray,
                            gamma_E: np.ndarray, v: np.ndarray | None = None) -> float:
    """Relative disagreement of derivatives in the direction ``E`` with the block-matrix
    exponential, which uses neither eigenbasis nor Schur basis: ``L_exp(A_c T, T log_E)`` must
    return ``E`` (``log_E`` the claimed change of ``A_c``; exp has no branch, so any logarithm
    is checked), and ``gamma_E`` must equal the top right of ``Gamma([[A_c, E], [0, A_c]])``
    (times ``v`` when given: ``gamma_E`` then a vector).  ``nan`` if anything overflowed."""
    n = A_c.shape[0]
    Z = np.zeros((n, n))
    # the directions scaled to A_c's size (the maps are linear in them): a large derivative
    # (eigenvalues of A_d near the negative axis or near 0) made expm scale for the
    # off-diagonal block, and the check's own rounding rejected right derivatives (a review)
    size = max(np.linalg.norm(A_c, 1), 1.0)
    alpha = size / max(np.linalg.norm(log_E, 1), np.finfo(float).tiny)
    back = expm(dt * np.block([[A_c, alpha * log_E], [Z, A_c]]))[:n, n:] / alpha
    log_error = np.linalg.norm(back - E) / np.linalg.norm(E)
    beta = size / max(np.linalg.norm(E, 1), np.finfo(float).tiny)
    M = np.block([[A_c, beta * E], [Z, A_c]])
    exact = expm(dt * np.block([[M, np.eye(2 * n)], [np.zeros((2 * n, 4 * n))]]))[:n, 3 * n:]
    exact = (exact if v is None else exact @ v) / beta
    gamma_error = np.linalg.norm(gamma_E - exact) / np.linalg.norm(exact)
    errors = np.array([log_error, gamma_error])
    return float(errors.max()) if np.isfinite(errors).all() else float("nan")


def schur_error(derivatives: SchurFrechet, rng_seed: int = 20261128) -> float:
    """:func:`block_exponential_error` of :class:`SchurFrechet` in one fixed random direction
    (the same data give the same decision)."""
    rng = np.random.default_rng(rng_seed)
    n = derivatives.n
    E, v = rng.standard_normal((n, n)), rng.standard_normal(n)
    return block_exponential_error(derivatives.A_c, derivatives.dt, E, derivatives.log(E[None])[0],
                                   derivatives.hold_times(derivatives.dt, v, gamma=True)
                                   @ E.ravel(), v)
