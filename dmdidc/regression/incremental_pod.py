"""Incremental POD: the leading left singular vectors of snapshots that arrive in chunks.

For ``n`` sensors (up to ~1e5) the Gram ``X X^T`` does not fit in memory, and the snapshots do
not either.  An incremental thin SVD (Brand 2002; the streaming POD of DMD, Hemati, Williams
and Rowley 2014) keeps ``k = rank + oversampling`` modes ``Q`` (n, k) and singular values
``s``: a chunk ``X_c`` is appended as ``[Q diag(s), X_c] = Q' R'``, the SVD of the small
``R'`` rotates ``Q'``, and the leading ``k`` directions are kept.  Memory ``n (k + L)`` for a
chunk of ``L`` snapshots, time ``2 n (k + L)^2`` per chunk.

The approximation: each update forgets the part of the earlier snapshots outside the kept
``k`` directions (``discarded_energy``), so the modes are those of a rank-``k`` approximation
of the data seen so far, not of the data.  The leading ``rank`` modes are accurate when the
kept singular values stand clear of the rest (a few states above sensor noise: the case
``svd_rank`` is for); the oversampling keeps the truncation away from them.  Coordinates
computed in an earlier basis map to the current one by ``transition`` (``Q_new^T Q_old``),
exact for snapshots inside the old span.
"""

from __future__ import annotations

import numpy as np

from dmdidc.regression.pod import _signed

__all__ = ["IncrementalPOD"]

#: Extra directions kept beyond the rank (they absorb what the truncation would misplace).
OVERSAMPLING = 10


class IncrementalPOD:
    """Leading POD modes of snapshot chunks (module notes).

    Parameters
    ----------
    rank : int
        Modes reported (``modes(rank)``); ``rank + oversampling`` are tracked.
    oversampling : int, default 10
    centred : bool, default False
        Track the modes of the snapshots minus their running mean (``mean``): each chunk is
        centred on its own mean and one more column, ``sqrt(N L / (N + L))`` times the
        difference of the two means, carries the shift of the mean (Ross, Lim, Lin and Yang
        2008), so the modes are those of the batch POD of the centred snapshots.

    Attributes
    ----------
    basis : ndarray, shape (n, k)
        The tracked orthonormal directions, by decreasing singular value.
    singular_values : ndarray, shape (k,)
    discarded_energy : float
        Sum of the squared singular values dropped so far (the error budget of the
        truncations).
    snapshots : int
    mean : ndarray, shape (n,) or None
        The mean of the snapshots so far (``centred=True``; ``None`` otherwise).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc.regression.pod import pod_modes
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((2000, 3)) @ rng.standard_normal((3, 600))
    >>> X += 1e-3 * rng.standard_normal(X.shape)                # 2000 sensors, 3 modes
    >>> pod = IncrementalPOD(3)
    >>> for a in range(0, 600, 150):
    ...     _ = pod.update(X[:, a:a + 150])
    >>> batch, _ = pod_modes([X], 3)
    >>> angle = np.linalg.norm(batch - pod.basis[:, :3] @ (pod.basis[:, :3].T @ batch), 2)
    >>> bool(angle < 1e-6)
    True
    """

    def __init__(self, rank: int, oversampling: int = OVERSAMPLING, *,
                 centred: bool = False) -> None:
        self.rank, self.oversampling, self.centred = rank, oversampling, centred
        self.mean: np.ndarray | None = None
        self.basis: np.ndarray | None = None
        self.singular_values = np.zeros(0)
        self.discarded_energy = 0.0
        self.snapshots = 0

    def update(self, X: np.ndarray) -> np.ndarray:
        """Add snapshots ``X`` (n, L); returns the transition ``Q_new^T Q_old`` (k_new, k_old)
        that maps coordinates in the previous basis to the new one."""
        old = self.basis if self.basis is not None else np.zeros((X.shape[0], 0))
        seen, count = self.snapshots, X.shape[1]
        if count == 0:          # nothing new (the mean of no snapshots would be NaN)
            return np.eye(old.shape[1])
        k_old = old.shape[1]
        # [old S, X (centred), the mean's shift]: one array, centred in place (a hundred
        # thousand sensors: each copy of a chunk is its size again)
        extra = int(self.centred and self.mean is not None)
        stacked = np.empty((X.shape[0], k_old + count + extra))
        np.multiply(old, self.singular_values, out=stacked[:, :k_old])
        stacked[:, k_old:k_old + count] = X
        if self.centred:
            chunk_mean = X.mean(axis=1)
            stacked[:, k_old:k_old + count] -= chunk_mean[:, None]
            if self.mean is None:
                self.mean = chunk_mean
            else:
                stacked[:, -1] = np.sqrt(seen * count / (seen + count)) * (self.mean
                                                                           - chunk_mean)
                self.mean = self.mean + count / (seen + count) * (chunk_mean - self.mean)
        Q, triangle = np.linalg.qr(stacked)
        left, singular, _ = np.linalg.svd(triangle, full_matrices=False)
        k = min(self.rank + self.oversampling, singular.size)
        self.discarded_energy += float(np.sum(singular[k:] ** 2))
        self.basis = _signed(Q @ left[:, :k])
        self.singular_values = singular[:k]
        self.snapshots += count
        return self.basis.T @ old
