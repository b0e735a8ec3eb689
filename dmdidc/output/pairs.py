"""Eigenvalue boxes of a pair near coalescence, through its characteristic polynomial.

Two eigenvalues of ``A_c`` that nearly coincide (a complex pair with a small imaginary part,
or two close real ones) are not smooth functions of the matrix: where they meet, the
first-order gradients of each blow up, and the noise turns a complex pair into two real
eigenvalues or back.  A box of a real estimate then has no imaginary width and cannot cover a
complex truth (a one-sensor plant ``1 / ((s + 0.6)^2 + 0.02^2)``, 20 dB: 22 of 60 fits were
real, and the boxes covered 0.63 instead of 0.95; ``docs/output-identification.md``).

The pair's invariant subspace is smooth while the pair stays apart from the other eigenvalues,
and so are the trace ``t`` and determinant ``d`` of ``A_c`` restricted to it, the
coefficients of ``lambda^2 - t lambda + d``.  Their covariance follows from the first-order
change of the restricted matrix ``Y dA Q_1`` (``Q_1`` an orthonormal basis of the subspace,
``Y`` the matching rows of the spectral projector); the ellipse of ``(t, d)`` at the level
(chi-squared with 2 degrees of freedom) is mapped through the roots
``t / 2 -+ sqrt(t^2 / 4 - d)`` to a box for each member.  This is used when that ellipse holds
both real and complex pairs (the data do not tell which); elsewhere the usual boxes stand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, stats

__all__ = ["PairCoefficients", "coalescing_pairs", "pair_boxes"]

#: A pair is kept when its discriminant is within this many standard errors of zero (the
#: 0.999 half-width: every level up to there can reach coalescence).
_REACH = float(stats.norm.isf(0.0005))
#: Points of the ellipse's disc (radii x angles) through which the box is found.
_RADII, _ANGLES = 12, 90


@dataclass(frozen=True)
class PairCoefficients:
    """Eigenvalues ``lower``, ``upper`` (indices: the smaller root and the larger, or the
    member with negative and positive imaginary part) of one pair, with ``(t, d)`` and their
    covariance (2, 2) as nested tuples."""

    lower: int
    upper: int
    coefficients: tuple[float, float]
    covariance: tuple[tuple[float, float], tuple[float, float]]


def _coefficients(A_c: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(t, d)`` of ``A_c`` on the invariant subspace of the eigenvalues ``members`` and
    their gradients (2, n^2) along ``vec(A_c)`` (row-major)."""
    n = A_c.shape[0]
    chosen = np.linalg.eigvals(A_c)[members]
    centre, radius = chosen.mean(), 1e-9 + 0.5 * np.abs(chosen[0] - chosen[1])

    def select(re, im):      # the pair first in the real Schur form
        return np.abs(re + 1j * im - centre) <= radius * (1 + 1e-6) + 1e-12 * abs(centre)
    T, Q, k = linalg.schur(A_c, output="real", sort=select)
    if k != 2:
        raise np.linalg.LinAlgError("the pair's invariant subspace was not separated")
    T11, T12, T22 = T[:2, :2], T[:2, 2:], T[2:, 2:]
    Z = linalg.solve_sylvester(T11, -T22, T12) if n > 2 else np.zeros((2, 0))
    Y = np.hstack([np.eye(2), Z]) @ Q.T                      # rows of the spectral projector
    Q1 = Q[:, :2]
    adjugate = np.array([[T11[1, 1], -T11[0, 1]], [-T11[1, 0], T11[0, 0]]])
    # tr(Y dA Q1) and tr(adj(T11) Y dA Q1): gradients (Q1 Y)^T and (Q1 adj Y)^T
    gradients = np.stack([(Q1 @ Y).T.ravel(), (Q1 @ adjugate @ Y).T.ravel()])
    return np.array([np.trace(T11), np.linalg.det(T11)]), gradients


def coalescing_pairs(A_c: np.ndarray, covariance: np.ndarray
                     ) -> tuple[PairCoefficients, ...]:
    """The pairs of ``A_c``'s eigenvalues whose discriminant ``t^2 / 4 - d`` lies within
    :data:`_REACH` standard errors of zero; ``covariance`` (n^2, n^2) is that of
    ``vec(A_c)``.  A complex pair is a candidate, and so are neighbouring real eigenvalues;
    each eigenvalue joins one pair at most (the closest to coalescence first)."""
    values = np.linalg.eigvals(A_c)
    candidates = [(i, j) for i in range(values.size) for j in range(values.size)
                  if values[i].imag < 0 and np.isclose(values[j], values[i].conjugate())]
    real = [i for i in np.argsort(values.real) if values[i].imag == 0]
    candidates += list(zip(real[:-1], real[1:], strict=True))
    found = []
    for lower, upper in candidates:
        try:
            centre, gradients = _coefficients(A_c, np.array([lower, upper]))
        except (np.linalg.LinAlgError, ValueError):
            continue
        cov = gradients @ covariance @ gradients.T
        t, d = centre
        slope = np.array([t / 2, -1.0])                         # of t^2 / 4 - d
        spread = float(np.sqrt(max(slope @ cov @ slope, 0.0)))
        distance = abs(t * t / 4 - d) / spread if spread > 0 else np.inf
        if distance <= _REACH:
            found.append((distance, PairCoefficients(
                lower=int(lower), upper=int(upper), coefficients=(float(t), float(d)),
                covariance=tuple(tuple(float(v) for v in row) for row in cov))))
    kept, used = [], set()
    for _, pair in sorted(found, key=lambda item: item[0]):
        if not {pair.lower, pair.upper} & used:
            kept.append(pair)
            used |= {pair.lower, pair.upper}
    return tuple(kept)


def pair_boxes(low: np.ndarray, high: np.ndarray, pairs: tuple[PairCoefficients, ...],
               level: float) -> tuple[np.ndarray, np.ndarray]:
    """The boxes ``low``, ``high`` (n,) complex corners, joined for each pair whose ellipse of
    ``(t, d)`` at ``level`` holds both real and complex pairs with the box of its roots there.

    Examples
    --------
    >>> pair = PairCoefficients(lower=0, upper=1, coefficients=(-1.2, 0.3604),
    ...                         covariance=((1e-4, 0.0), (0.0, 1e-4)))
    >>> values = np.array([-0.6 - 0.02j, -0.6 + 0.02j])
    >>> low, high = pair_boxes(values - 0.01, values + 0.01, (pair,), 0.95)
    >>> bool(low[1].imag <= 0.0 and high[1].imag > 0.03)     # real and complex roots inside
    True
    """
    low, high = low.copy(), high.copy()
    radius = np.sqrt(stats.chi2.isf(1.0 - level, 2))
    for pair in pairs:
        values, vectors = np.linalg.eigh(np.array(pair.covariance))
        factor = vectors * np.sqrt(np.clip(values, 0.0, None))
        angles = np.linspace(0.0, 2 * np.pi, _ANGLES, endpoint=False)
        disc = np.concatenate([[0.0], np.repeat(np.linspace(radius / _RADII, radius, _RADII),
                                                _ANGLES)])
        turns = np.concatenate([[0.0], np.tile(angles, _RADII)])
        t, d = np.array(pair.coefficients)[:, None] + factor @ np.stack(
            [disc * np.cos(turns), disc * np.sin(turns)])
        discriminant = t * t / 4 - d
        if discriminant.min() >= 0 or discriminant.max() < 0:
            continue                     # the ellipse is all real or all complex: smooth there
        root = np.sqrt(discriminant.astype(complex))            # imaginary part >= 0
        for member, roots in ((pair.lower, t / 2 - root), (pair.upper, t / 2 + root)):
            low[member] = min(low[member].real, roots.real.min()) + 1j * min(
                low[member].imag, roots.imag.min())
            high[member] = max(high[member].real, roots.real.max()) + 1j * max(
                high[member].imag, roots.imag.max())
    return low, high
