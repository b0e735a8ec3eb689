"""Proper orthogonal decomposition: DMDidc on many sensors through the leading POD modes.

Thousands of sensors watching a plant with a few states give snapshots ``x_k = C z_k + v_k``
(n large, rank ``r`` small): the regression on all ``n`` states has ``n + m (R + 1)``
regressors (often more than the samples) and a covariance with ``(n p)^2`` entries.
``DMDidc(svd_rank=r)`` instead identifies the plant in the coordinates ``z = Q^T x`` of the
leading ``r`` left singular vectors ``Q`` (n, r) of the snapshots (POD modes), as DMD does
(Schmid 2010; Proctor, Brunton and Kutz 2016 for DMDc), and maps predictions back with ``Q``.
Eigenvalues and delays are invariant under the change of coordinates, so they are those of
the plant; ``A_c`` and ``B_c`` are in POD coordinates.

The modes come from the Gram matrix of the smaller side (``X X^T`` when the samples outnumber
the sensors, else ``X^T X``), one symmetric product and one symmetric eigen-decomposition:
``n K min(n, K)`` flops, less than a thin SVD (which first reduces ``X`` by a QR of twice that
cost).  The Gram squares the singular values, so a mode is resolved when its singular value
exceeds ``~1e-7`` of the largest; below :data:`GRAM_RESOLUTION` the thin SVD is used instead.
Memory: ``n r`` for the modes plus ``min(n, K)^2`` for the Gram.

When both sides are large (``min(n, K)`` above :data:`RANDOMIZED_ABOVE`, where even the Gram
costs ``n K min(n, K)``), a randomized range finder with power iterations (Halko, Martinsson
and Tropp 2011, Alg. 4.4) costs ``~6 n K (r + 10)`` flops instead; its subspace is accurate
when the kept singular values stand clear of the rest (a few states above the noise), the
case ``svd_rank`` is for.
"""

from __future__ import annotations

import numpy as np

from _toolbox.validation import as_generator, check_finite_array
from dmdidc.errors import DimensionError

__all__ = ["pod_modes", "outside_span", "GRAM_RESOLUTION", "SPECTRUM_EXTRA",
           "RANDOMIZED_ABOVE"]

#: ``min(n, K)`` above which ``pod_modes`` is randomized by default (the Gram would cost more
#: than ~(r + 10) / min(n, K) times as much).
RANDOMIZED_ABOVE = 4000
#: Oversampling and power iterations of the randomized range finder.
_OVERSAMPLING = 10
_POWER_ITERATIONS = 2

#: Singular values reported beyond the rank (only the leading part of the spectrum is
#: computed: the partial eigen-decomposition is several times cheaper than the whole).
SPECTRUM_EXTRA = 20

#: Smallest kept singular value, relative to the largest, that the Gram route resolves
#: (its eigenvalues carry absolute errors ~eps times the largest, i.e. singular values
#: ~sqrt(eps)); below it the modes come from a thin SVD.
GRAM_RESOLUTION = 1e3 * np.sqrt(np.finfo(float).eps)


def pod_modes(states: list[np.ndarray], rank: int, *, randomized: bool | None = None,
              rng: np.random.Generator | int | None = 0, centre: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """The leading ``rank`` POD modes of the snapshots of every trajectory (less ``centre``).

    Parameters
    ----------
    states : list of ndarray, shape (n, K_i + 1)
        The snapshots of each trajectory (columns).
    rank : int
        Number of modes ``r``, at most ``min(n, sum K_i + 1)``.
    randomized : bool or None, default None
        Use the randomized range finder (module notes); ``None``: when ``min(n, samples)``
        exceeds :data:`RANDOMIZED_ABOVE` and ``rank + 10`` is below a tenth of it.
    rng : numpy.random.Generator, int or None, default 0
        Randomness of the randomized range finder (a fixed seed by default, so fits repeat).
    centre : ndarray, shape (n,), optional
        The modes of the snapshots less this point, ``x_k - c`` (e.g. their mean), computed
        from the snapshots' own products: no centred copy of them (``n K`` memory for a
        hundred thousand sensors), except on the thin-SVD path of unresolved modes.

    Returns
    -------
    modes : ndarray, shape (n, r)
        Orthonormal columns, each signed so that its largest entry is positive.
    singular_values : ndarray
        The leading singular values of ``[X_1, X_2, ...]``, descending: :data:`SPECTRUM_EXTRA`
        beyond ``rank`` (or all, when fewer), to choose ``r``.

    Raises
    ------
    DimensionError
        ``rank`` outside ``1 .. min(n, samples)``, or ``centre`` not of ``n`` entries.
    NonFiniteError
        ``centre`` with NaN or inf.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> C = rng.standard_normal((500, 3))
    >>> X = C @ rng.standard_normal((3, 200))          # 500 sensors, three modes
    >>> modes, s = pod_modes([X], 3)
    >>> modes.shape, bool(s[3] < 1e-6 * s[0])       # (the Gram resolves ~1e-7 of s[0])
    ((500, 3), True)
    >>> bool(np.allclose(modes @ (modes.T @ X), X))
    True
    """
    n = states[0].shape[0]
    samples = sum(X.shape[1] for X in states)
    if not 1 <= rank <= min(n, samples):
        raise DimensionError(f"svd_rank must be between 1 and min(n, snapshots) = "
                             f"{min(n, samples)} (n = {n} states, {samples} snapshots); "
                             f"got {rank}")
    small = min(n, samples)
    if randomized is None:
        randomized = small > RANDOMIZED_ABOVE and 10 * (rank + _OVERSAMPLING) < small
    c = np.zeros(n) if centre is None else check_finite_array("centre", centre, ndim=1)
    if c.shape != (n,):
        raise DimensionError(f"centre has {c.size} entries; expected {n} (one per state)")
    if randomized:
        return _randomized(states, rank, as_generator(rng), c)
    if n <= samples:          # sensors fewer than snapshots: the n x n Gram (streams)
        # sum (x - c)(x - c)^T = sum x x^T - s c^T - c s^T + N c c^T, s = sum x
        gram = sum(X @ X.T for X in states)
        if centre is not None:
            # - s c^T - c s^T + N c c^T = -(a c^T + c a^T) with a = s - N c / 2 (s = sum x),
            # in blocks of rows: no n x n temporary beside the Gram
            a = sum(X.sum(axis=1) for X in states) - 0.5 * samples * c
            for i in range(0, n, 256):
                gram[i:i + 256] -= np.outer(a[i:i + 256], c) + np.outer(c[i:i + 256], a)
        values, vectors = _leading(gram, rank)
        modes = vectors[:, :rank]
    else:                     # more sensors than snapshots: the snapshot Gram
        X = np.concatenate(states, axis=1) if len(states) > 1 else states[0]
        # (X - c 1^T)^T (X - c 1^T) from X^T X and X^T c
        projected = X.T @ c
        gram = X.T @ X - projected[:, None] - projected[None, :] + c @ c
        values, vectors = _leading(gram, rank)
        singular = np.sqrt(np.clip(values[:rank], 0.0, None))
        V = vectors[:, :rank]
        modes = (X @ V - np.outer(c, V.sum(axis=0))) / np.where(singular > 0, singular, 1.0)
    singular = np.sqrt(np.clip(values, 0.0, None))
    if singular[rank - 1] <= GRAM_RESOLUTION * singular[0]:
        # a kept mode below what the Gram resolves: the backward-stable thin SVD
        X = np.concatenate(states, axis=1) if len(states) > 1 else states[0]
        left, singular, _ = np.linalg.svd(X - c[:, None], full_matrices=False)
        modes, singular = left[:, :rank], singular[:values.size]
    else:
        # re-orthonormalize (the snapshot route divides by singular values)
        Q, triangle = np.linalg.qr(modes)
        modes = Q * np.where(np.diag(triangle) < 0, -1.0, 1.0)
    return _signed(modes), singular


def outside_span(modes: np.ndarray, point: np.ndarray) -> np.ndarray:
    """The part of ``point`` (n,) outside the span of the orthonormal ``modes`` (n, r): the
    centre an ``svd_rank`` fit's coordinates cannot carry.

    Examples
    --------
    >>> outside_span(np.array([[1.0], [0.0]]), np.array([3.0, 4.0]))
    array([0., 4.])
    """
    return point - modes @ (modes.T @ point)


def _leading(gram: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The leading ``rank + SPECTRUM_EXTRA`` eigenpairs of a symmetric matrix, descending."""
    from scipy import linalg

    size = gram.shape[0]
    count = min(size, rank + SPECTRUM_EXTRA)
    values, vectors = linalg.eigh(gram, subset_by_index=[size - count, size - 1],
                                  driver="evr", check_finite=False)
    return values[::-1], vectors[:, ::-1]


def _randomized(states: list[np.ndarray], rank: int, rng: np.random.Generator,
                c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Randomized range finder with power iterations, each re-orthonormalized (Halko et al.
    2011, Alg. 4.4), then the SVD of the small projection; of ``X - c 1^T``, whose products
    are those of ``X`` corrected by rank-one terms."""
    X = np.concatenate(states, axis=1) if len(states) > 1 else states[0]

    def right(M: np.ndarray) -> np.ndarray:           # (X - c 1^T) M
        return X @ M - np.outer(c, M.sum(axis=0))

    def left_(B: np.ndarray) -> np.ndarray:           # (X - c 1^T)^T B
        return X.T @ B - (c @ B)[None, :]

    k = min(rank + _OVERSAMPLING, *X.shape)
    basis = np.linalg.qr(right(rng.standard_normal((X.shape[1], k))))[0]
    for _ in range(_POWER_ITERATIONS):
        basis = np.linalg.qr(right(np.linalg.qr(left_(basis))[0]))[0]
    left, singular, _ = np.linalg.svd(left_(basis).T, full_matrices=False)
    modes = basis @ left[:, :rank]
    return _signed(modes), singular


def _signed(modes: np.ndarray) -> np.ndarray:
    """Each column signed so that its largest entry is positive (a reproducible basis)."""
    signs = np.sign(modes[np.argmax(np.abs(modes), axis=0), np.arange(modes.shape[1])])
    return modes * np.where(signs == 0, 1.0, signs)
