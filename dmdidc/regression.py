"""Streaming least-squares regression of x_{k+1} on [x_k, u_k, u_{k-1}, ..., u_{k-R}].

The DMDidc regression (dissertation eqs. 9.19-9.21) has p = n + m (R + 1) regressors.  Two
accumulators share one interface (``update`` per chunk, ``solution`` at any time) and need memory
independent of the number of samples:

* :class:`GramAccumulator` (default) sums the cross-products.  It never builds the augmented data
  matrix: the input-input block is block-Toeplitz up to edge terms, so it is read off m x m lagged
  auto-correlations (R + 1 small products instead of (R + 1)^2), and the state blocks come from
  R + 1 skinny products.  Numerical soundness: the sums are formed in raw units (a floating-point
  sum has the same *relative* accuracy whatever the units), and the normal equations are
  equilibrated by the diagonal before they are solved, so states 1e6 times larger than inputs
  cost nothing.  Forming normal equations squares the condition number of the *equilibrated*
  data; for data whose equilibrated condition number exceeds ~1e5 use ``method="qr"``.
* :class:`QRAccumulator` keeps the triangular factor of the stacked data (TSQR), which is
  backward stable (the condition number is not squared), at about twice the flops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privacy.errors import DimensionError, InsufficientExcitationError

__all__ = ["RegressionSolution", "GramAccumulator", "QRAccumulator", "make_accumulator",
           "lagged_inputs"]


@dataclass(frozen=True)
class RegressionSolution:
    """Least-squares solution and the spectrum of the (equilibrated) regression matrix.

    Attributes
    ----------
    coefficients : ndarray, shape (n, p)
        ``[A_d, B^(0), ..., B^(R)]`` side by side.
    singular_values : ndarray, shape (p,)
        Singular values of the column-equilibrated regression matrix, descending.
    rank : int
        Number of singular values used.
    n_samples : int
        Number of regression samples (columns of the data matrix).
    residual_norm : float
        Frobenius norm of ``Y - coefficients @ Phi`` (NaN when not available).
    """

    coefficients: np.ndarray
    singular_values: np.ndarray
    rank: int
    n_samples: int
    residual_norm: float

    @property
    def condition_number(self) -> float:
        """Ratio of the largest to the smallest singular value (inf when rank-deficient)."""
        smallest = self.singular_values[-1]
        return float(self.singular_values[0] / smallest) if smallest > 0 else float("inf")


def lagged_inputs(U: np.ndarray, max_delay: int) -> np.ndarray:
    """Stack ``[u_k; u_{k-1}; ...; u_{k-R}]`` for ``k = R .. K-1``.

    Parameters
    ----------
    U : ndarray, shape (m, K)
    max_delay : int
        ``R``.

    Returns
    -------
    ndarray, shape (m (R + 1), K - R)
    """
    m, K = U.shape
    return np.concatenate([U[:, max_delay - j:K - j] for j in range(max_delay + 1)], axis=0)


class _Accumulator:
    """Shared bookkeeping: trajectory continuity, carried state and input history."""

    def __init__(self, n_states: int, n_inputs: int, max_delay: int) -> None:
        self.n, self.m, self.R = n_states, n_inputs, max_delay
        self.p = n_states + n_inputs * (max_delay + 1)
        self.n_samples = 0
        self._last_state: np.ndarray | None = None
        self._history = np.zeros((n_inputs, 0))  # last (at most R) inputs of the trajectory

    @property
    def last_state(self) -> np.ndarray | None:
        """Last state of the current trajectory (the next chunk must start with it)."""
        return self._last_state

    def new_trajectory(self) -> None:
        """Forget the carried state and input history (the next chunk starts afresh)."""
        self._last_state = None
        self._history = np.zeros((self.m, 0))

    def update(self, X: np.ndarray, U: np.ndarray) -> None:
        """Add a chunk: states ``X`` (n, L + 1) and inputs ``U`` (m, L) of one trajectory.

        If a trajectory is in progress, ``X[:, 0]`` must be its last state (checked by the
        caller); the carried input history supplies the lags.
        """
        inputs = np.concatenate([self._history, U], axis=1)
        start = self.R - self._history.shape[1]  # first usable sample within this chunk
        self._history = inputs[:, max(0, inputs.shape[1] - self.R):]
        self._last_state = X[:, -1].copy()
        if start >= U.shape[1]:
            return
        # Samples k >= start have all R lags; `inputs` then holds exactly u_{start-R} onwards.
        states = X[:, start:]
        self._add(states, inputs)
        self.n_samples += states.shape[1] - 1

    def add_samples(self, Phi: np.ndarray, Y: np.ndarray) -> None:
        """Add explicit regression samples: regressors ``Phi`` (p, N), targets ``Y`` (n, N)."""
        self._add_rows(Phi, Y)
        self.n_samples += Phi.shape[1]

    def _add(self, states: np.ndarray, window: np.ndarray) -> None:
        L = states.shape[1] - 1
        Phi = np.concatenate([states[:, :-1], lagged_inputs(window, self.R)[:, :L]], axis=0)
        self._add_rows(Phi, states[:, 1:])

    def _add_rows(self, Phi: np.ndarray, Y: np.ndarray) -> None:
        raise NotImplementedError


class GramAccumulator(_Accumulator):
    """Accumulate ``Phi Phi^T``, ``Y Phi^T`` and ``Y Y^T`` with the lag structure exploited."""

    method = "gram"

    def __init__(self, n_states: int, n_inputs: int, max_delay: int) -> None:
        super().__init__(n_states, n_inputs, max_delay)
        n, p = n_states, self.p
        self.gram = np.zeros((p, p))
        self.cross = np.zeros((n, p))
        self.target_gram = np.zeros((n, n))

    def _add(self, states: np.ndarray, window: np.ndarray) -> None:
        n, m, R = self.n, self.m, self.R
        L = states.shape[1] - 1
        # window holds u_{k-R} .. u_{k+L-1} for the L samples k of this chunk: shape (m, L + R).
        stacked = np.concatenate([states[:, :-1], states[:, 1:]], axis=0)   # [x_k; x_{k+1}]
        both = stacked @ stacked.T
        self.gram[:n, :n] += both[:n, :n]
        self.cross[:, :n] += both[n:, :n]
        self.target_gram += both[n:, n:]
        for j in range(R + 1):
            lagged = window[:, R - j:R - j + L]                             # u_{k-j}
            product = stacked @ lagged.T
            cols = slice(n + j * m, n + (j + 1) * m)
            self.gram[:n, cols] += product[:n]
            self.cross[:, cols] += product[n:]
        self._add_input_block(window, L)

    def _add_rows(self, Phi: np.ndarray, Y: np.ndarray) -> None:
        self.gram += Phi @ Phi.T
        self.cross += Y @ Phi.T
        self.target_gram += Y @ Y.T

    def _add_input_block(self, window: np.ndarray, L: int) -> None:
        """Input-input blocks sum_k u_{k-i} u_{k-j}^T from lagged auto-correlations."""
        n, m, R = self.n, self.m, self.R
        total = window.shape[1]                                             # L + R
        for lag in range(R + 1):
            # full[lag] = sum over t of u_t u_{t-lag}^T for all t with both in the window
            full = window[:, lag:] @ window[:, :total - lag].T
            for i in range(R + 1 - lag):
                j = i + lag
                # block(i, j) sums t = k - i over k in the chunk: indices R - i .. R - i + L - 1
                head_end = R - i                        # exclude t < R - i
                tail_start = R - i + L                  # exclude t >= R - i + L
                block = full.copy()
                if head_end > lag:
                    block -= window[:, lag:head_end] @ window[:, :head_end - lag].T
                if tail_start < total:
                    block -= window[:, tail_start:] @ window[:, tail_start - lag:total - lag].T
                rows = slice(n + i * m, n + (i + 1) * m)
                cols = slice(n + j * m, n + (j + 1) * m)
                self.gram[rows, cols] += block

    def symmetric_gram(self) -> np.ndarray:
        """The full symmetric ``Phi Phi^T`` (only the upper triangle is accumulated)."""
        upper = np.triu(self.gram)
        return upper + np.triu(upper, 1).T

    def solution(self, *, svd_rank: int | None = None, rank_rtol: float = 1e-10
                 ) -> RegressionSolution:
        """Solve the equilibrated normal equations (see the module notes)."""
        gram = self.symmetric_gram()
        scale = _column_scale(np.sqrt(np.clip(np.diag(gram), 0.0, None)))
        scaled = gram / np.outer(scale, scale)
        eigenvalues, vectors = np.linalg.eigh(scaled)
        order = np.argsort(eigenvalues)[::-1]
        eigenvalues, vectors = eigenvalues[order], vectors[:, order]
        singular = np.sqrt(np.clip(eigenvalues, 0.0, None))
        # Singular values from a Gram matrix carry absolute errors ~sqrt(eps) * largest, so an
        # exactly rank-deficient matrix can show ~2e-8; below 10 sqrt(eps) nothing is resolved.
        rank = _choose_rank(singular, svd_rank, rank_rtol, self.p, self.n_samples,
                            rank_floor=_GRAM_RANK_FLOOR)
        V = vectors[:, :rank]
        cross_scaled = self.cross / scale
        coefficients = ((cross_scaled @ V) / eigenvalues[:rank]) @ V.T / scale
        residual = np.trace(self.target_gram) - np.sum((cross_scaled @ V) ** 2
                                                       / eigenvalues[:rank])
        return RegressionSolution(coefficients, singular, rank, self.n_samples,
                                  float(np.sqrt(max(residual, 0.0))))


class QRAccumulator(_Accumulator):
    """Keep the R factor of ``[Phi^T, Y^T]`` (tall-skinny QR, backward stable)."""

    method = "qr"

    def __init__(self, n_states: int, n_inputs: int, max_delay: int) -> None:
        super().__init__(n_states, n_inputs, max_delay)
        self.factor = np.zeros((0, self.p + n_states))

    def _add_rows(self, Phi: np.ndarray, Y: np.ndarray) -> None:
        rows = np.concatenate([Phi, Y], axis=0).T
        self.factor = np.linalg.qr(np.concatenate([self.factor, rows], axis=0), mode="r")

    def singular_values(self) -> np.ndarray:
        """Singular values of the column-equilibrated regression matrix (descending)."""
        R11 = self._square_factor()
        return np.linalg.svd(R11 / _column_scale(np.linalg.norm(R11, axis=0)),
                             compute_uv=False)

    def _square_factor(self) -> np.ndarray:
        p = self.p
        R11 = np.zeros((p, p))
        rows = min(p, self.factor.shape[0])
        R11[:rows] = self.factor[:rows, :p]
        return R11

    def solution(self, *, svd_rank: int | None = None, rank_rtol: float = 1e-10
                 ) -> RegressionSolution:
        """Solve from the triangular factor with an SVD (rank-revealing)."""
        p = self.p
        if self.factor.shape[0] < p:
            raise _too_few(self.n_samples, p)
        R11, R12 = self.factor[:p, :p], self.factor[:p, p:]
        scale = _column_scale(np.linalg.norm(R11, axis=0))
        U_, singular, Vt = np.linalg.svd(R11 / scale)
        rank = _choose_rank(singular, svd_rank, rank_rtol, p, self.n_samples,
                            rank_floor=np.finfo(float).eps * p)
        projected = U_[:, :rank].T @ R12
        coefficients = ((Vt[:rank].T / singular[:rank]) @ projected).T / scale
        residual_sq = np.sum(self.factor[:, p:] ** 2) - np.sum(projected ** 2)
        return RegressionSolution(coefficients, singular, rank, self.n_samples,
                                  float(np.sqrt(max(residual_sq, 0.0))))


def make_accumulator(method: str, n_states: int, n_inputs: int, max_delay: int) -> _Accumulator:
    """Return a :class:`GramAccumulator` (``"gram"``) or :class:`QRAccumulator` (``"qr"``)."""
    if method == "gram":
        return GramAccumulator(n_states, n_inputs, max_delay)
    if method == "qr":
        return QRAccumulator(n_states, n_inputs, max_delay)
    raise ValueError(f"method must be 'gram' or 'qr'; got {method!r}")


_GRAM_RANK_FLOOR = 10 * np.sqrt(np.finfo(float).eps)


def _column_scale(norms: np.ndarray) -> np.ndarray:
    # A regressor that is identically zero keeps scale 1 so that it shows up as a zero singular
    # value (rank deficiency) instead of a division by zero.
    return np.where(norms > 0, norms, 1.0)


def _too_few(n_samples: int, p: int) -> InsufficientExcitationError:
    return InsufficientExcitationError(
        f"the data provide {n_samples} regression samples; at least {p} = n + m (R + 1) are "
        f"needed (Theorem 9.4.5); record a longer excitation or lower max_delay")


def _choose_rank(singular: np.ndarray, svd_rank: int | None, rank_rtol: float, p: int,
                 n_samples: int, rank_floor: float) -> int:
    if n_samples < p:
        raise _too_few(n_samples, p)
    if svd_rank is not None:
        if not 1 <= svd_rank <= p:
            raise DimensionError(f"svd_rank must be between 1 and {p} (the number of "
                                 f"regressors); got {svd_rank}")
        return svd_rank
    tol = max(rank_rtol, rank_floor) * singular[0]
    rank = int(np.count_nonzero(singular > tol))
    if rank < p:
        hint = (" (normal equations cannot resolve smaller singular values; method='qr' can)"
                if rank_floor == _GRAM_RANK_FLOOR and singular[-1] > 0 else "")
        raise InsufficientExcitationError(
            f"the regression data matrix is rank-deficient: numerical rank {rank} of {p} "
            f"regressors (n + m (R + 1)) with {n_samples} samples; smallest singular value "
            f"{singular[-1]:.3g}, largest {singular[0]:.3g} (equilibrated columns), tolerance "
            f"{tol:.3g}{hint}. The inputs do not excite the plant enough (constant or collinear "
            f"inputs, an uncontrollable plant, or too few samples); use richer random inputs "
            f"or set svd_rank to fit a reduced model deliberately")
    return rank
