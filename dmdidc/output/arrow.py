"""Normal equations with one initial state per experiment: an arrow matrix.

An experiment's rows of the output-error Jacobian touch the common parameters (dynamics, input
matrix, delays, feedthrough, offset: ``c`` of them) and its own initial state (``n``) only, so
``J^T J`` is an arrow: a common ``c x c`` block, one ``n x n`` block per experiment and their
``c x n`` couplings.  Every solve, pseudo-inverse and covariance here eliminates the initial
states experiment by experiment (the Schur complement; each block is independent given the
common parameters), at a cost linear in the number of experiments ``E``, where the dense
``(c + E n)``-square matrix cost ``E^2`` to form and ``E^3`` to factor.

The eliminated blocks are inverted with a pseudo-inverse: for a Gram matrix a null vector
``v`` of a block has ``H_e v = 0`` (``H_e`` the experiment's initial-state columns), so the
coupling ``J_c^T H_e v`` vanishes too and the generalized Schur complement is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

__all__ = ["Arrow"]


@dataclass(frozen=True)
class Arrow:
    """``J^T J`` and ``J^T r`` of parameters ordered ``[common (c); x0 of experiment 0 (n);
    ...]``.

    Attributes
    ----------
    common : ndarray, shape (c, c)
    coupling : ndarray, shape (E, c, n)
        ``J_c^T H_e`` of each experiment.
    blocks : ndarray, shape (E, n, n)
        ``H_e^T H_e``.
    gradient : ndarray, shape (c + E n,)
    """

    common: np.ndarray
    coupling: np.ndarray
    blocks: np.ndarray
    gradient: np.ndarray

    @property
    def size(self) -> int:
        return self.gradient.size

    @classmethod
    def zeros(cls, c: int, E: int, n: int) -> Arrow:
        return cls(np.zeros((c, c)), np.zeros((E, c, n)), np.zeros((E, n, n)),
                   np.zeros(c + E * n))

    def dense(self) -> np.ndarray:
        """The full ``(c + E n)``-square matrix (for tests and tiny problems)."""
        c, (E, n) = self.common.shape[0], self.blocks.shape[:2]
        full = np.zeros((c + E * n, c + E * n))
        full[:c, :c] = self.common
        full[:c, c:] = self.coupling.transpose(1, 0, 2).reshape(c, E * n)
        full[c:, :c] = full[:c, c:].T
        full[c:, c:] = linalg.block_diag(*self.blocks) if E else np.zeros((0, 0))
        return full

    def diagonal(self) -> np.ndarray:
        return np.concatenate([np.diag(self.common),
                               np.diagonal(self.blocks, axis1=1, axis2=2).ravel()])

    def _split(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c, (E, n) = self.common.shape[0], self.blocks.shape[:2]
        return v[:c], v[c:].reshape(E, n)

    def scaled(self, scale: np.ndarray, damping: float = 0.0) -> Arrow:
        """``diag(scale)^-1 N diag(scale)^-1 + damping I`` (and the gradient divided by
        ``scale``)."""
        top, states = self._split(scale)
        common = self.common / np.outer(top, top)
        blocks = self.blocks / (states[:, :, None] * states[:, None, :])
        if damping:
            common[np.diag_indices_from(common)] += damping
            blocks = blocks + damping * np.eye(blocks.shape[1])
        return Arrow(common, self.coupling / (top[None, :, None] * states[:, None, :]), blocks,
                     self.gradient / scale)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        top, states = self._split(v)
        return np.concatenate([self.common @ top + np.einsum("ecn,en->c", self.coupling, states),
                               (np.einsum("ecn,c->en", self.coupling, top)
                                + np.einsum("enk,ek->en", self.blocks, states)).ravel()])

    def without(self, fixed: np.ndarray) -> Arrow:
        """Rows and columns of the common parameters ``fixed`` (bool, (c,)) set to zero."""
        common, coupling, gradient = self.common.copy(), self.coupling.copy(), self.gradient.copy()
        common[fixed], common[:, fixed], coupling[:, fixed] = 0.0, 0.0, 0.0
        gradient[:fixed.size][fixed] = 0.0
        return Arrow(common, coupling, self.blocks, gradient)

    def finite(self, bound: float) -> Arrow:
        """NaN to 0 and infinities to ``+-bound`` (a wild trial: no direction from overflow)."""
        def clean(a):
            return np.nan_to_num(a, nan=0.0, posinf=bound, neginf=-bound)
        return Arrow(clean(self.common), clean(self.coupling), clean(self.blocks),
                     clean(self.gradient))

    def is_finite(self) -> bool:
        return all(np.isfinite(a).all() for a in (self.common, self.coupling, self.blocks,
                                                  self.gradient))

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``N^-1 rhs`` of a positive definite ``N`` (``LinAlgError`` otherwise, as
        ``scipy.linalg.solve(assume_a="pos")``): the blocks are Cholesky-factored, then their
        Schur complement."""
        top, states = self._split(rhs)
        factors = np.linalg.cholesky(self.blocks)                 # LinAlgError unless pos. def.
        # B_e^-1 [coupling_e^T, rhs_e] from the factors (batched triangular solves)
        right = np.concatenate([self.coupling.transpose(0, 2, 1), states[:, :, None]], axis=2)
        solved = _cholesky_solve(factors, right)
        weights, partial = solved[:, :, :-1], solved[:, :, -1]                 # (E, n, c)
        schur = self.common - np.einsum("ecn,enk->ck", self.coupling, weights)
        reduced = top - np.einsum("ecn,en->c", self.coupling, partial)
        x = linalg.solve(0.5 * (schur + schur.T), reduced, assume_a="pos")
        return np.concatenate([x, (partial - np.einsum("enc,c->en", weights, x)).ravel()])

    def _eliminated(self, cutoff: float) -> tuple[np.ndarray, np.ndarray]:
        """Pseudo-inverses of the blocks (eigenvalues at most ``cutoff`` dropped) and the Schur
        complement of the common block."""
        inverse = _block_pinv(self.blocks, cutoff)
        schur = self.common - np.einsum("ecn,enk,edk->cd", self.coupling, inverse, self.coupling)
        return inverse, 0.5 * (schur + schur.T)

    def pseudo_gain(self, rcond: float) -> float:
        """``g^T N^+ g`` with eigenvalues below ``rcond`` of the largest dropped (the largest of
        the common block's and the blocks' eigenvalues: the arrow's to within a factor of a
        few, and the dropped ones are rounding against either)."""
        largest = max(np.linalg.eigvalsh(self.common).max(initial=0.0),
                      np.linalg.eigvalsh(self.blocks).max(initial=0.0), np.finfo(float).tiny)
        cutoff = rcond * largest
        inverse, schur = self._eliminated(cutoff)
        top, states = self._split(self.gradient)
        partial = np.einsum("enk,ek->en", inverse, states)
        reduced = top - np.einsum("ecn,en->c", self.coupling, partial)
        values, vectors = np.linalg.eigh(schur)
        keep = values > cutoff
        projected = vectors[:, keep].T @ reduced
        return float(np.einsum("en,en->", states, partial) + projected @ (projected / values[keep]))

    def basis_free_inverse(self, similarity: np.ndarray, fixed: np.ndarray) -> np.ndarray:
        """The common parameters' block (c, c) of ``(J^T J)^-1`` on the complement of the
        ``similarity`` directions (size, k), orthonormal; parameters ``fixed`` (bool, (c,))
        get zero rows and columns.

        That block of ``K (K^T N K)^-1 K^T`` (``K`` an orthonormal complement) is the common
        block of the inverse of ``[[N, V], [V^T, 0]]`` (the directions held out by
        multipliers), whose initial-state blocks are eliminated like ``N``'s.  A pseudo-inverse
        with a relative cutoff would also drop any *other* flat direction (a delay the data
        cannot fix, a mode the inputs barely excite) and report a tiny variance along it, the
        opposite of the truth; here only the basis directions are removed and every other
        direction is inverted exactly (a flat one gets a variance as large as its flatness).
        """
        c, (E, n) = self.common.shape[0], self.blocks.shape[:2]
        free = ~fixed
        V_top, V_states = similarity[:c][free], similarity[c:].reshape(E, n, -1)
        coupling = self.coupling[:, free]
        largest = max(np.linalg.eigvalsh(self.blocks).max(initial=0.0), np.finfo(float).tiny)
        inverse = _block_pinv(self.blocks, np.finfo(float).eps * largest)
        # Schur complement of [[N, V], [V^T, 0]] after the initial-state blocks
        stacked = np.concatenate([coupling.transpose(0, 2, 1), V_states], axis=2)  # (E, n, f+k)
        weighted = inverse @ stacked
        f = int(free.sum())
        system = np.zeros((f + V_top.shape[1],) * 2)
        system[:f, :f] = self.common[np.ix_(free, free)]
        system[:f, f:] = V_top
        system[f:, :f] = V_top.T
        system -= np.einsum("enp,enq->pq", stacked, weighted)
        system = 0.5 * (system + system.T)
        try:
            inverse_system = np.linalg.inv(system)
        except np.linalg.LinAlgError:
            # exactly flat along a direction that is not a change of basis: floored at eps of
            # the largest entry (as the dense eigenvalue floor did), so its variance is huge,
            # never dropped to zero
            system[:f, :f] += np.finfo(float).eps * np.abs(system).max() * np.eye(f)
            inverse_system = np.linalg.inv(system)
        covariance = np.zeros((c, c))
        covariance[np.ix_(free, free)] = inverse_system[:f, :f]
        return 0.5 * (covariance + covariance.T)


def _block_pinv(blocks: np.ndarray, cutoff: float) -> np.ndarray:
    """Pseudo-inverses of symmetric blocks (E, n, n), eigenvalues at most ``cutoff`` dropped."""
    values, vectors = np.linalg.eigh(blocks)
    keep = values > cutoff
    return (vectors * np.where(keep, 1.0 / np.where(keep, values, 1.0), 0.0)[:, None, :]
            ) @ vectors.transpose(0, 2, 1)


def _cholesky_solve(factors: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``(L L^T)^-1 right`` for batched lower factors ``L`` (E, n, n), ``right`` (E, n, q)."""
    inner = np.linalg.solve(factors, right)
    return np.linalg.solve(factors.transpose(0, 2, 1), inner)
