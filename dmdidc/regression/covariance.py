"""The covariance of ``vec(Theta)`` in factored form: a short sum of Kronecker products.

Every estimator of :mod:`dmdidc.regression` has a coefficient covariance of the form

    Cov(vec Theta) = sum_l S_l kron H_l  (+ a dense part for privacy noise)

with ``S_l`` (n, n) and ``H_l`` (p, p) and ``vec`` row by row (entry ``a p + c`` is
``Theta[a, c]``): least squares, IV and Huber have one term (``Sigma kron (Phi Phi^T)^+`` and
its analogues), the long-run (HAC) covariance of serially correlated residuals one per lag.
The dense matrix has ``(n p)^2`` entries (118 TiB for 2000 sensors), the factors
``L (n^2 + p^2)``; every quantity the package needs reads the factors directly:

* variances of single coefficients: ``diag(S_l)`` times ``diag(H_l)``;
* covariances of coefficient columns (block test): ``H_l[c, c] S_l``;
* a restriction ``Theta P``: ``S_l kron P^T H_l P``;
* a rank-one gradient ``u v^T`` (eigenvalue perturbations): ``sum_l (u^T S_l u*) (v^T H_l v*)``;
* a dense sub-matrix on a few coefficients (delta-method intervals);
* the entries of a matrix function's first-order change read in an eigenbasis,
  ``V ((W E V) o F) W`` with ``E`` the change of a square coefficient block (``A_c`` from
  ``A_d``): ``sum_l`` of ``(W S_l W^H)`` and ``(V^T H_l conj V)`` contracted with ``V``,
  ``F`` and ``W``, ``O(n^4)`` flops in ``O(n^3)`` memory, where the gradients of all ``n^2``
  entries would be an ``n^2 x n^2`` matrix.

Only the privacy noise of privatized statistics (a propagated Jacobian, no Kronecker
structure) stays dense in ``extra``; it exists only for small problems.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from _toolbox.validation import check_allocation

__all__ = ["KroneckerCovariance", "frechet_matrix"]


def frechet_matrix(V: np.ndarray, W: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """The matrix of the map ``E -> V ((W E V) o factors) W`` on row-major ``vec``: entry
    ``[a n + b, c n + d]`` is the derivative of output ``[a, b]`` in ``E[c, d]``, shape
    (n^2, n^2), complex (for small problems: it has ``n^4`` entries).

    Examples
    --------
    >>> import numpy as np
    >>> V = np.array([[1.0, 1.0], [0.0, 1.0]]); W = np.linalg.inv(V)
    >>> F = np.array([[1.0, 0.5], [0.5, 2.0]]); E = np.array([[0.3, -1.0], [2.0, 0.1]])
    >>> bool(np.allclose(frechet_matrix(V, W, F) @ E.ravel(), (V @ ((W @ E @ V) * F) @ W).ravel()))
    True
    """
    n = V.shape[0]
    left = (V[:, None, :] * W.T[None, :, :]).reshape(n * n, n)          # (a c, i)
    right = (V[:, None, :] * W.T[None, :, :]).transpose(2, 1, 0)        # (j, b, d)
    out = (left @ factors) @ right.reshape(n, n * n)
    return out.reshape(n, n, n, n).transpose(0, 2, 1, 3).reshape(n * n, n * n)


@dataclass(frozen=True)
class KroneckerCovariance:
    """``sum_l left[l] kron right[l] + extra``: the covariance of ``vec(Theta)`` (module notes).

    Attributes
    ----------
    left : ndarray, shape (L, n, n)
        The state-side factors ``S_l`` (residual covariances, lagged for HAC terms).
    right : ndarray, shape (L, p, p)
        The regressor-side factors ``H_l``.
    extra : ndarray, shape (n p, n p), optional
        A dense part without Kronecker structure (privacy noise).

    Examples
    --------
    >>> import numpy as np
    >>> S, H = np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([[1.0, 0.2], [0.2, 3.0]])
    >>> cov = KroneckerCovariance.single(S, H)
    >>> bool(np.allclose(cov.dense(), np.kron(S, H)))
    True
    >>> cov.diagonal().tolist()
    [[2.0, 6.0], [1.0, 3.0]]
    """

    left: np.ndarray
    right: np.ndarray
    extra: np.ndarray | None = None

    @classmethod
    def single(cls, left: np.ndarray, right: np.ndarray,
               extra: np.ndarray | None = None) -> KroneckerCovariance:
        """One Kronecker product ``left kron right`` (plus ``extra``)."""
        return cls(np.asarray(left, float)[None], np.asarray(right, float)[None], extra)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, p)``: the shape of the coefficient matrix."""
        return self.left.shape[1], self.right.shape[1]

    def plus(self, left: np.ndarray, right: np.ndarray) -> KroneckerCovariance:
        """This covariance with one more term ``left kron right``."""
        return KroneckerCovariance(np.concatenate([self.left, np.asarray(left)[None]]),
                                   np.concatenate([self.right, np.asarray(right)[None]]),
                                   self.extra)

    def scaled(self, factor: float) -> KroneckerCovariance:
        """This covariance times ``factor``."""
        return KroneckerCovariance(self.left * factor, self.right,
                                   None if self.extra is None else self.extra * factor)

    def with_extra(self, extra: np.ndarray | None) -> KroneckerCovariance:
        """This covariance with the dense part added (``None`` adds nothing)."""
        if extra is None:
            return self
        return KroneckerCovariance(self.left, self.right,
                                   extra if self.extra is None else self.extra + extra)

    def diagonal(self) -> np.ndarray:
        """Variance of every coefficient, shape (n, p)."""
        variance = np.einsum("lii,ljj->ij", self.left, self.right)
        if self.extra is not None:
            variance = variance + np.diag(self.extra).reshape(variance.shape)
        return variance

    def columns(self, columns: np.ndarray) -> np.ndarray:
        """Covariance of each coefficient column ``Theta[:, c]``, shape (len(columns), n, n)."""
        columns = np.asarray(columns, dtype=int)
        out = np.einsum("lk,lab->kab", self.right[:, columns, columns], self.left)
        if self.extra is not None:
            n, p = self.shape
            out = out + self.extra.reshape(n, p, n, p)[:, columns, :, columns]
        return out

    def project(self, P: np.ndarray) -> KroneckerCovariance:
        """The covariance of ``vec(Theta P)``: ``S_l kron P^T H_l P``."""
        right = np.einsum("pc,lpq,qd->lcd", P, self.right, P, optimize=True)
        extra = None
        if self.extra is not None:
            n, p = self.shape
            extra = np.einsum("apbq,pc,qd->acbd", self.extra.reshape(n, p, n, p), P, P,
                              optimize=True).reshape(n * P.shape[1], n * P.shape[1])
        return KroneckerCovariance(self.left, right, extra)

    def rank_one_variances(self, u: np.ndarray, v: np.ndarray, columns: np.ndarray
                           ) -> np.ndarray:
        """``E |<G_i, dTheta>|^2`` for the gradients ``G_i = u_i v_i^T`` supported on
        ``columns``: ``sum_l (u_i^T S_l conj(u_i)) (v_i^T H_l[columns, columns] conj(v_i))``.

        Parameters
        ----------
        u : ndarray, shape (k, n)
        v : ndarray, shape (k, len(columns))
        columns : ndarray of int

        Returns
        -------
        ndarray, shape (k,)
        """
        columns = np.asarray(columns, dtype=int)
        H = self.right[:, columns][:, :, columns]
        su = np.einsum("ka,lab,kb->lk", u, self.left, u.conj(), optimize=True)
        hv = np.einsum("kc,lcd,kd->lk", v, H, v.conj(), optimize=True)
        total = np.sum(su * hv, axis=0)
        if self.extra is not None:
            n, p = self.shape
            block = self.extra.reshape(n, p, n, p)[:, columns][:, :, :, columns]
            g = np.einsum("ka,kc->kac", u, v)
            total = total + np.einsum("kac,acbd,kbd->k", g, block, g.conj(), optimize=True)
        return np.abs(total)

    def linear_variances(self, jacobian: np.ndarray, index: np.ndarray) -> np.ndarray:
        """``diag(J Cov[index, index] J^T)``: the variances of linear functions of a few
        coefficients, without forming that covariance.

        Row ``k`` of ``J`` is a gradient ``G_k`` (n, q) on the ``q`` coefficient columns the
        index touches, and ``vec(G)^T (S kron H) vec(G) = sum(G o (S G H^T))``.

        Parameters
        ----------
        jacobian : ndarray, shape (k, len(index))
        index : ndarray of int
            Positions in ``vec(Theta)``; repeated positions add up.

        Returns
        -------
        ndarray, shape (k,)
        """
        index = np.asarray(index, dtype=int)
        unique, inverse, counts = np.unique(index, return_inverse=True, return_counts=True)
        if unique.size < index.size:     # repeated positions: add their columns up
            order = np.argsort(inverse, kind="stable")
            jacobian = np.add.reduceat(jacobian[:, order], np.r_[0, np.cumsum(counts)[:-1]],
                                       axis=1)
            index = unique
        _, p = self.shape
        rows, cols = np.divmod(index, p)
        used, where = np.unique(cols, return_inverse=True)
        G = np.zeros((jacobian.shape[0], self.left.shape[1], used.size))
        G[:, rows, where] = jacobian
        total = np.zeros(jacobian.shape[0])
        for S, H in zip(self.left, self.right, strict=True):
            SGH = np.einsum("ab,kbd->kad", S, G, optimize=True) @ H[np.ix_(used, used)].T
            total += np.einsum("kad,kad->k", G, SGH)
        if self.extra is not None:
            total += np.einsum("kj,kj->k", jacobian @ self.extra[np.ix_(index, index)], jacobian)
        return total

    def frechet_variances(self, V: np.ndarray, W: np.ndarray, factors: np.ndarray,
                          columns: np.ndarray) -> np.ndarray:
        """``E |X[a, b]|^2`` for ``X = V ((W E V) o factors) W``, ``E = dTheta[:, columns]``
        (square): the variances of a matrix function's first-order change read in an
        eigenbasis ``A = V diag(mu) W`` (module notes), without the gradients' ``n^2 x n^2``
        matrix.

        With ``F = W E V``, ``E[F_ij conj F_kl] = sum_l (W S_l W^H)[i, k] (V^T H_l conj
        V)[j, l]``; for ``M[a, i, j] = V[a, i] factors[i, j]`` the variance of ``X[a, b]`` is
        ``sum_jl W[j, b] conj W[l, b] sum_l (V^T H_l conj V)[j, l] (M_a^T (W S_l W^H) conj
        M_a)[j, l]``: ``O(L n^4)`` flops, ``O(n^3)`` memory.

        Parameters
        ----------
        V, W : ndarray, shape (n, n), complex
            Eigenvectors and their inverse (``X`` real for a real function of a real matrix,
            as ``A_c`` from ``A_d``; for complex ``X`` the sum of the variances of its real
            and imaginary parts).
        factors : ndarray, shape (n, n), complex
            ``1 / D`` for the divided differences ``D`` of the inverse function (``A_c`` from
            ``A_d = exp(A_c T)``: ``1 / D_exp``).
        columns : ndarray of int, shape (n,)
            The coefficient columns of ``E`` (``A_d``: ``0 .. n - 1``).

        Returns
        -------
        ndarray, shape (n, n)
        """
        columns = np.asarray(columns, dtype=int)
        M = V[:, :, None] * factors[None, :, :]              # M[a, i, j] = V[a, i] F[i, j]
        K = np.zeros((V.shape[0],) * 3, dtype=complex)
        for S, H in zip(self.left, self.right, strict=True):
            state = W @ S @ W.conj().T
            regressor = V.T @ H[np.ix_(columns, columns)] @ V.conj()
            K += regressor[None] * np.matmul(M.transpose(0, 2, 1), np.matmul(state, M.conj()))
        total = np.einsum("jb,ajb->ab", W, np.matmul(K, W.conj())).real
        if self.extra is not None:      # (privacy noise: small problems, dense gradients)
            _, p = self.shape
            n = V.shape[0]
            index = (np.arange(n)[:, None] * p + columns[None, :]).ravel()
            gradients = frechet_matrix(V, W, factors).real
            total = total + np.einsum("kj,kj->k", gradients @ self.extra[np.ix_(index, index)],
                                      gradients).reshape(n, n)
        return total

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        """The dense covariance of the coefficients ``vec(Theta)[index]``.

        Parameters
        ----------
        index : ndarray of int
            Positions in ``vec(Theta)`` (row by row: ``a p + c``).

        Returns
        -------
        ndarray, shape (len(index), len(index))
        """
        index = np.asarray(index, dtype=int)
        _, p = self.shape
        rows, cols = np.divmod(index, p)
        out = np.zeros((index.size, index.size))
        for S, H in zip(self.left, self.right, strict=True):
            out += S[np.ix_(rows, rows)] * H[np.ix_(cols, cols)]
        if self.extra is not None:
            out = out + self.extra[np.ix_(index, index)]
        return out

    def dense(self) -> np.ndarray:
        """The full matrix, shape (n p, n p): only for small problems (it has (n p)^2 entries;
        one above ``_toolbox.validation.ALLOCATION_LIMIT_BYTES`` is refused with a
        ``ParameterError`` before anything is allocated)."""
        n, p = self.shape
        check_allocation(f"the dense coefficient covariance of n = {n} states and p = {p} "
                         f"regressors", (n * p, n * p),
                         accepted="read it factored (submatrix, columns, diagonal)")
        total = np.zeros((n * p, n * p))
        for S, H in zip(self.left, self.right, strict=True):
            total += np.kron(S, H)
        return total if self.extra is None else total + self.extra
