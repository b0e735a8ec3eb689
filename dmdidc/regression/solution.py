"""Streaming least-squares regression of x_{k+1} on [x_k, u_k, u_{k-1}, ..., u_{k-R}].

The DMDidc regression (dissertation eqs. 9.19-9.21) has p = n + m (R + 1) regressors.  Two
accumulators share one interface (``update`` per chunk, ``solution`` at any time) and need memory
independent of the number of samples:

* :class:`GramAccumulator` (default) sums the cross-products.  It never builds the whole
  augmented data matrix: the Gram matrix of lagged signals is block-Toeplitz up to edge terms,
  so it is read off the cross-correlations of the states and inputs (with exact corrections
  at both ends of each trajectory, :mod:`dmdidc.regression.lagged_gram`) at about
  ``n m (R + 2) + m^2 (R + 1)`` instead of ``p^2 / 2`` flops per sample.  Numerical soundness: the
  sums are formed in raw units (a floating-point sum has the same *relative* accuracy whatever
  the units) and the normal equations are equilibrated by their diagonal before they are
  solved, so states 1e6 times larger than the inputs cost nothing.  Normal equations square
  the condition number of the *equilibrated* data; :meth:`GramAccumulator.refine` removes that
  loss with passes of iterative refinement (residuals computed sample by sample).
* :class:`QRAccumulator` keeps the triangular factor of the stacked data (TSQR, 2048-row
  panels), which is backward stable (the condition number is not squared) but several times
  slower.

Both also sum the regressors and targets, and every :class:`RegressionSolution` carries the
least-squares covariance ``Cov(vec Theta) = Sigma kron (Phi Phi^T)^+`` (``Sigma`` the residual
covariance; kept factored, :mod:`dmdidc.regression.covariance`), from which the standard
errors of all coefficients and the block tests of :mod:`dmdidc.inference.blocks` follow.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from _toolbox import validation
from _toolbox.validation import check_allocation
from dmdidc.errors import DimensionError, InsufficientExcitationError, ParameterError
from dmdidc.regression.covariance import KroneckerCovariance
from dmdidc.regression.lagged_gram import LaggedGram, regression_slots

__all__ = ["RegressionSolution", "GramAccumulator", "QRAccumulator", "make_accumulator",
           "coefficient_blocks",
           "lagged_inputs", "assemble_solution", "gram_factors", "solve_normal_equations",
           "regression_blocks", "least_squares", "stream_trajectory", "LEAST_SQUARES_METHODS",
           "GRAM_CONDITION_LIMIT", "REFINEMENT_CONDITION_LIMIT", "EXACT_FIT",
           "FULL_COVARIANCE_LIMIT"]


@dataclass(frozen=True)
class RegressionSolution:
    """Least-squares solution, its covariance and the spectrum of the regression matrix.

    The regression is ``Y = Theta Phi + E`` with regressors ``Phi`` (p, N) (states and lagged
    inputs) and targets ``Y`` (n, N).

    Attributes
    ----------
    coefficients : ndarray, shape (n, p)
        ``Theta = [A_d, B^(0), ..., B^(R)]`` side by side.
    singular_values : ndarray, shape (p,)
        Singular values of the column-equilibrated regression matrix, descending.
    rank : int
        Number of singular values used.
    n_samples : int
        Number ``N`` of regression samples (columns of the data matrix).
    residual_norm : float
        Frobenius norm of ``Y - coefficients @ Phi``.  The Gram path computes it as a
        difference of sums, accurate only to about ``1e-8 * ||Y||`` (a noise-free fit may show
        a residual at that level); the QR path is accurate to rounding.
    target_norm : float
        Frobenius norm of the targets ``Y``.
    residual_covariance : ndarray, shape (n, n)
        ``Sigma = E E^T / (N - rank)``: the unbiased estimate of the covariance of the one-step
        errors (same accuracy caveat as ``residual_norm``).
    unscaled_covariance : ndarray, shape (p, p)
        ``(Phi Phi^T)^+`` (rank-``rank`` pseudo-inverse).  The least-squares estimate has
        ``Cov(Theta[:, a], Theta[:, b]) = unscaled_covariance[a, b] * Sigma`` for white errors
        independent of the regressors; for white inputs it also holds for the input
        coefficients under measurement noise on the states (errors-in-variables).
    residual_mean : ndarray, shape (n,)
        Mean of the residuals ``E`` over the samples (about zero unless the data have an
        offset the model through the origin cannot represent).
    target_rms : ndarray, shape (n,)
        Root mean square of each target row.
    rank_tolerance : float
        Singular values at or below it count as zero (rank test).
    estimator : str
        ``"ls"`` (least squares), ``"iv"`` (instrumental variables,
        :mod:`dmdidc.regression.instrumental`) or ``"huber"`` (robust M-estimation,
        :mod:`dmdidc.regression.robust`).  For IV and Huber,
        ``residual_covariance kron unscaled_covariance`` is that estimator's asymptotic
        covariance: IV ``Sigma kron (Phi P_Z Phi^T)^+`` with ``P_Z`` the projection on the
        instruments; Huber ``V kron (Phi Phi^T)^+`` with ``V`` the sandwich
        ``D^-1 E[psi psi^T] D^-T`` of the score (both in place of the least-squares pair).
    intercepts : int
        Means removed before the fit (one per centred trajectory of
        :class:`~dmdidc.SufficientStatistics`); each costs a residual degree of freedom.
    noise_covariance : ndarray, shape (n p, n p), optional
        Covariance of ``vec(Theta)`` (row by row) added by privacy noise on the statistics
        (:meth:`dmdidc.DMDidc.fit_statistics`); ``None`` for data.
    instrument_strength : float, optional
        IV only: the smallest canonical correlation between the regressors and the
        instruments, in (0, 1] (1 for a regressor that instruments itself; near 0 means weak
        instruments and large standard errors).
    sampling_covariance : KroneckerCovariance, optional
        When set, the covariance of ``vec(Theta)`` (row by row) from the data's own serial
        correlation (:func:`dmdidc.regression.instrumental.long_run_covariance`, a sum of
        Kronecker products), in place of ``residual_covariance kron unscaled_covariance``,
        which assumes white residuals.
    """

    coefficients: np.ndarray
    singular_values: np.ndarray
    rank: int
    n_samples: int
    residual_norm: float
    target_norm: float
    residual_covariance: np.ndarray
    unscaled_covariance: np.ndarray
    residual_mean: np.ndarray
    target_rms: np.ndarray
    rank_tolerance: float = 0.0
    estimator: str = "ls"
    intercepts: int = 0
    noise_covariance: np.ndarray | None = None
    instrument_strength: float | None = None
    sampling_covariance: KroneckerCovariance | None = None

    @property
    def relative_residual(self) -> float:
        """``residual_norm / ||Y||`` (the fraction of the targets the model leaves unexplained)."""
        return self.residual_norm / self.target_norm if self.target_norm > 0 else float("nan")

    @property
    def condition_number(self) -> float:
        """Ratio of the largest to the smallest singular value; inf when rank-deficient."""
        smallest = self.singular_values[-1]
        if smallest <= self.rank_tolerance or smallest <= 0:
            return float("inf")
        return float(self.singular_values[0] / smallest)

    @property
    def dof(self) -> int:
        """Residual degrees of freedom ``N - rank - intercepts``."""
        return self.n_samples - self.rank - self.intercepts

    @property
    def standard_errors(self) -> np.ndarray:
        """Standard error of every coefficient, shape (n, p) (see ``covariance``)."""
        return np.sqrt(np.clip(self.factored_covariance().diagonal(), 0.0, None))

    def factored_covariance(self) -> KroneckerCovariance:
        """Covariance of ``vec(Theta)`` as a sum of Kronecker products
        (:class:`~dmdidc.regression.covariance.KroneckerCovariance`): ``residual_covariance
        kron unscaled_covariance`` (or ``sampling_covariance`` when set), plus
        ``noise_covariance`` for privatized statistics.  Never forms the ``(n p)^2`` matrix."""
        factored = (self.sampling_covariance if self.sampling_covariance is not None
                    else KroneckerCovariance.single(self.residual_covariance,
                                                    self.unscaled_covariance))
        return factored.with_extra(self.noise_covariance)

    def covariance(self) -> np.ndarray:
        """Covariance of ``vec(Theta)`` (row by row: entry ``a p + c`` is ``Theta[a, c]``).

        The dense form of :meth:`factored_covariance`, with ``(n p)^2`` entries: for small
        problems only (everything in the package reads the factors).

        Returns
        -------
        ndarray, shape (n p, n p)
        """
        return self.factored_covariance().dense()

    def column_covariances(self, columns: np.ndarray) -> np.ndarray:
        """Covariance of the coefficient columns ``Theta[:, c]`` for each ``c`` in ``columns``.

        Returns
        -------
        ndarray, shape (len(columns), n, n)
        """
        return self.factored_covariance().columns(columns)


def coefficient_blocks(coefficients: np.ndarray, n_states: int, n_inputs: int,
                       max_delay: int) -> tuple[np.ndarray, np.ndarray]:
    """``(A_d, B_blocks)`` of the coefficients ``[A_d, B^(0), .., B^(R)]``
    (n, n + m (R + 1)): the blocks as an (R + 1, n, m) view, :class:`~dmdidc.DelayedPlant`'s
    layout.

    Examples
    --------
    >>> A_d, blocks = coefficient_blocks(np.arange(8.0).reshape(2, 4), 2, 1, 1)
    >>> blocks.shape, blocks[1, :, 0].tolist()
    ((2, 2, 1), [3.0, 7.0])
    """
    n = n_states
    blocks = coefficients[:, n:].reshape(n, max_delay + 1, n_inputs).transpose(1, 0, 2)
    return coefficients[:, :n], blocks


def lagged_inputs(U: np.ndarray, max_delay: int, out: np.ndarray | None = None) -> np.ndarray:
    """Stack ``[u_k; u_{k-1}; ...; u_{k-R}]`` for ``k = R .. K-1``.

    Parameters
    ----------
    U : ndarray, shape (m, K)
    max_delay : int
        ``R``.
    out : ndarray, shape (m (R + 1), K - R), optional
        Written in place (e.g. rows of a larger array: no intermediate copy).

    Returns
    -------
    ndarray, shape (m (R + 1), K - R)
    """
    m, K = U.shape
    if out is None:
        return np.concatenate([U[:, max_delay - j:K - j] for j in range(max_delay + 1)], axis=0)
    for j in range(max_delay + 1):
        out[j * m:(j + 1) * m] = U[:, max_delay - j:K - j]
    return out


def regression_blocks(trajectories: list[tuple[np.ndarray, np.ndarray]], max_delay: int,
                      block: int | None = None):
    """Regression samples of in-memory trajectories, block by block (bounded memory).

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
    max_delay : int
        ``R``: samples ``k = R .. K-1`` of every trajectory.
    block : int, optional
        Samples per block (default: a cache-sized block).

    Yields
    ------
    Phi : ndarray, shape (n + m (R + 1), L)
        ``[x_k; u_k; ...; u_{k-R}]``.
    Y : ndarray, shape (n, L)
        ``x_{k+1}``.
    """
    block = block or _GRAM_BLOCK
    R = max_delay
    for X, U in trajectories:
        padded = np.concatenate([np.zeros((U.shape[0], R)), U], axis=1)
        for a in range(R, U.shape[1], block):
            b = min(a + block, U.shape[1])
            yield (np.concatenate([X[:, a:b], lagged_inputs(padded[:, a:b + R], R)]),
                   X[:, a + 1:b + 1])


class _Accumulator:
    """Shared bookkeeping: trajectory continuity, carried state and input history."""

    def __init__(self, n_states: int, n_inputs: int, max_delay: int) -> None:
        self.n, self.m, self.R = n_states, n_inputs, max_delay
        self.p = n_states + n_inputs * (max_delay + 1)
        check_regression_size(n_states, n_inputs, max_delay, self.p + n_states)
        self.n_samples = 0
        self.regressor_sum = np.zeros(self.p)
        self.target_sum = np.zeros(n_states)
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
        self.regressor_sum += Phi.sum(axis=1)
        self.target_sum += Y.sum(axis=1)

    def _result(self, coefficients: np.ndarray, singular: np.ndarray, rank: int,
                residual_matrix: np.ndarray, target_gram_diag: np.ndarray,
                unscaled: np.ndarray, rank_tolerance: float) -> RegressionSolution:
        """Assemble a :class:`RegressionSolution` (residual matrix ``E E^T``, n x n)."""
        return assemble_solution(coefficients, singular, rank, residual_matrix,
                                 target_gram_diag, unscaled, rank_tolerance,
                                 n_samples=self.n_samples, regressor_sum=self.regressor_sum,
                                 target_sum=self.target_sum)

    def _add(self, states: np.ndarray, window: np.ndarray) -> None:
        L = states.shape[1] - 1
        Phi = np.concatenate([states[:, :-1], lagged_inputs(window, self.R)[:, :L]], axis=0)
        self._add_rows(Phi, states[:, 1:])
        self.regressor_sum += Phi.sum(axis=1)
        self.target_sum += states[:, 1:].sum(axis=1)

    def _add_rows(self, Phi: np.ndarray, Y: np.ndarray) -> None:
        raise NotImplementedError


class GramAccumulator(_Accumulator):
    """Accumulate ``Phi Phi^T``, ``Y Phi^T`` and ``Y Y^T`` with the lag structure exploited.

    The Gram matrix of ``[x_k; u_k; ...; u_{k-R}; x_{k+1}; 1]`` is read off the
    cross-correlations of the states and inputs with exact corrections at the two ends of each
    trajectory (:class:`~dmdidc.regression.lagged_gram.LaggedGram`, shared with the statistics
    of :mod:`dmdidc.statistics`): per sample ``n x m (R + 2)`` for the states against the
    inputs and ``m^2 (R + 1)`` for the inputs, instead of ``p^2 / 2``.  ``gram``, ``cross``,
    ``target_gram``, the sums and ``n_samples`` are its blocks after every call.
    """

    method = "gram"

    def __init__(self, n_states: int, n_inputs: int, max_delay: int) -> None:
        super().__init__(n_states, n_inputs, max_delay)
        self._lagged = LaggedGram(regression_slots(max_delay), {"x": n_states, "u": n_inputs})
        size = self.p + n_states + 1
        self._done = np.zeros((size, size))      # finished trajectories and explicit samples
        self._done_samples = 0
        self._refresh()

    @classmethod
    def from_moments(cls, gram: np.ndarray, sums: np.ndarray, n_samples: int, *,
                     n_states: int, n_inputs: int, max_delay: int) -> GramAccumulator:
        """The accumulator holding the moments ``gram`` and ``sums`` of ``[phi_k; x_k+1]``
        (the least-squares layout of :class:`~dmdidc.SufficientStatistics`, uncentred) over
        ``n_samples`` samples: a pass over data whose statistics are known is not repeated."""
        accumulator = cls(n_states, n_inputs, max_delay)
        d = accumulator._done.shape[0] - 1
        accumulator._done[:d, :d], accumulator._done[d, :d] = gram, sums
        accumulator._done[:d, d], accumulator._done[d, d] = sums, n_samples
        accumulator._done_samples = n_samples
        accumulator._refresh()
        return accumulator

    def new_trajectory(self) -> None:
        """Close the current trajectory (fold its Gram matrix) and start afresh."""
        self._done += self._lagged.gram()
        self._done_samples += self._lagged.n_samples
        self._lagged.new_trajectory()
        super().new_trajectory()

    def update(self, X: np.ndarray, U: np.ndarray) -> None:
        """Add states ``X`` (n, L + 1) and inputs ``U`` (m, L) of the current trajectory."""
        self._lagged.update({"x": X if self._last_state is None else X[:, 1:], "u": U})
        self._last_state = X[:, -1].copy()
        self._refresh()

    def add_samples(self, Phi: np.ndarray, Y: np.ndarray) -> None:
        """Add explicit regression samples: regressors ``Phi`` (p, N), targets ``Y`` (n, N)."""
        V = np.concatenate([Phi, Y, np.ones((1, Phi.shape[1]))])
        self._done += V @ V.T
        self._done_samples += Phi.shape[1]
        self._refresh()

    def _refresh(self) -> None:
        """The moments' blocks from the Gram matrix of everything so far."""
        G = self._done + self._lagged.gram()
        G = 0.5 * (G + G.T)
        n, p = self.n, self.p
        self.gram, self.cross, self.target_gram = G[:p, :p], G[p:p + n, :p], G[p:-1, p:-1]
        self.regressor_sum, self.target_sum = G[-1, :p], G[-1, p:-1]
        self.n_samples = self._done_samples + self._lagged.n_samples

    def symmetric_gram(self) -> np.ndarray:
        """The symmetric ``Phi Phi^T``."""
        return self.gram.copy()

    def solution(self, *, svd_rank: int | None = None, rank_rtol: float = 1e-10
                 ) -> RegressionSolution:
        """Solve the equilibrated normal equations (see the module notes)."""
        return solve_normal_equations(self.symmetric_gram(), self.cross, self.target_gram,
                                      n_samples=self.n_samples,
                                      regressor_sum=self.regressor_sum,
                                      target_sum=self.target_sum, svd_rank=svd_rank,
                                      rank_rtol=rank_rtol)

    def refine(self, solution: RegressionSolution,
               trajectories: list[tuple[np.ndarray, np.ndarray]]) -> RegressionSolution:
        """Iterative refinement with residuals computed sample by sample.

        The normal equations lose ``cond^2 * eps``; each refinement pass multiplies the error
        by ``rho = cond^2 * eps`` until it reaches the accuracy of a backward-stable solver
        (~``cond * eps``).  The number of passes is that predicted by this contraction: one for
        ``cond`` up to ~1e5, two up to ~1e6.  Each pass costs less than the Gram pass itself,
        far less than a QR factorization.

        Parameters
        ----------
        solution : RegressionSolution
            From :meth:`solution` on the same data.
        trajectories : list of (X (n, K+1), U (m, K))
            The data that were accumulated, again.
        """
        eps = np.finfo(float).eps
        cond = solution.condition_number
        contraction = min(cond * cond * eps, 0.5)
        passes = int(np.clip(np.ceil(np.log(cond * eps) / np.log(contraction) - 1), 1, 3))
        scale, eigenvalues, V, _, _, _ = gram_factors(
            self.symmetric_gram(), None if solution.rank == self.p else solution.rank, 0.0,
            self.n_samples)
        coefficients = solution.coefficients
        for _ in range(passes):
            correction = np.zeros_like(self.cross)
            for Phi, Y in regression_blocks(trajectories, self.R):
                correction += (Y - coefficients @ Phi) @ Phi.T
            coefficients = coefficients + (((correction / scale) @ V) / eigenvalues) @ V.T / scale
        # Residual statistics from the Gram pass: their accuracy is enough for standard errors.
        return dataclasses.replace(
            solution, coefficients=coefficients,
            residual_mean=(self.target_sum - coefficients @ self.regressor_sum)
            / max(self.n_samples, 1))


class QRAccumulator(_Accumulator):
    """Keep the R factor of ``[Phi^T, Y^T, 1]`` (tall-skinny QR, backward stable).

    :attr:`factor`, its leading ``p + n`` columns, is the R factor of ``[Phi^T, Y^T]`` (the
    fit through the origin).  The column of ones makes the affine fit (:meth:`solution` with
    ``centred=True``) as accurate: moved to the front and re-triangularized (``O(p^3)``,
    independent of the samples), the trailing block is the R factor of the centred data
    (projecting out the ones removes the mean), where the centred normal equations
    ``Phi Phi^T - N mean mean^T`` lose ``cond^2 eps`` (more when the mean is large).
    """

    method = "qr"

    def __init__(self, n_states: int, n_inputs: int, max_delay: int) -> None:
        super().__init__(n_states, n_inputs, max_delay)
        self._factor = np.zeros((0, self.p + n_states + 1))

    def _add_rows(self, Phi: np.ndarray, Y: np.ndarray) -> None:
        rows = np.concatenate([Phi, Y, np.ones((1, Phi.shape[1]))], axis=0).T
        for a in range(0, rows.shape[0], _QR_BLOCK):
            stacked = np.concatenate([self._factor, rows[a:a + _QR_BLOCK]], axis=0)
            self._factor = np.linalg.qr(stacked, mode="r")

    def __setstate__(self, state: dict) -> None:
        """Unpickle.  An accumulator pickled before the column of ones was kept (a ``factor``
        of ``[Phi^T, Y^T]`` alone) gets it from its sums: the new last column ``r`` solves
        ``R^T r = sums`` and, with as many rows as columns, closes with ``sqrt(N - |r|^2)``
        (with fewer samples the ones lie in the rows' span: no new row)."""
        state = dict(state)
        if "_factor" not in state and "factor" in state:
            old = state.pop("factor")
            sums = np.concatenate([state["regressor_sum"], state["target_sum"]])
            r = np.linalg.lstsq(old.T, sums, rcond=None)[0] if old.size else np.zeros(0)
            factor = np.concatenate([old, r[:, None]], axis=1)
            if old.shape[0] >= old.shape[1]:
                last = np.sqrt(max(state["n_samples"] - float(r @ r), 0.0))
                row = np.zeros((1, factor.shape[1]))
                row[0, -1] = last
                factor = np.concatenate([factor, row])
            state["_factor"] = factor
        self.__dict__.update(state)

    @property
    def factor(self) -> np.ndarray:
        """The R factor of ``[Phi^T, Y^T]``, ``(p + n)`` columns."""
        return self._factor[:self.p + self.n, :-1]

    def _centred_factor(self) -> np.ndarray:
        """The R factor of the centred ``[Phi^T, Y^T]``."""
        ones_first = np.roll(self._factor, 1, axis=1)
        return np.linalg.qr(ones_first, mode="r")[1:, 1:]

    def singular_values(self) -> np.ndarray:
        """Singular values of the column-equilibrated regression matrix (descending); with
        fewer samples than regressors the missing ones are zero (no ``p x p`` SVD of zeros)."""
        R11 = self.factor[:self.p, :self.p]
        singular = np.zeros(self.p)
        if R11.shape[0]:
            found = np.linalg.svd(R11 / _column_scale(np.linalg.norm(R11, axis=0)),
                                  compute_uv=False)
            singular[:found.size] = found
        return singular

    def solution(self, *, svd_rank: int | None = None, rank_rtol: float = 1e-10,
                 centred: bool = False) -> RegressionSolution:
        """Solve from the triangular factor with an SVD (rank-revealing); ``centred``: the
        affine fit (one intercept, solved from the centred factor), as
        :func:`~dmdidc.statistics.fit.regression_from_statistics` of the centred moments."""
        p = self.p
        factor = self._centred_factor() if centred else self.factor
        if factor.shape[0] < p:
            raise _too_few(self.n_samples, p)
        R11, R12 = factor[:p, :p], factor[:p, p:]
        scale = _column_scale(np.linalg.norm(R11, axis=0))
        U_, singular, Vt = np.linalg.svd(R11 / scale)
        rank, tol = _choose_rank(singular, svd_rank, rank_rtol, p, self.n_samples,
                                 rank_floor=np.finfo(float).eps * p)
        projected = U_[:, :rank].T @ R12
        coefficients = ((Vt[:rank].T / singular[:rank]) @ projected).T / scale
        # E^T E = R22^T R22 + |(I - U_r U_r^T) R12|^2, both formed without cancellation.
        R22 = factor[p:, p:]
        outside = R12 - U_[:, :rank] @ projected
        residual = R22.T @ R22 + outside.T @ outside
        target_diag = np.sum(factor[:, p:] ** 2, axis=0)
        unscaled = (Vt[:rank].T / singular[:rank] ** 2) @ Vt[:rank] / np.outer(scale, scale)
        if not centred:
            return self._result(coefficients, singular, rank, residual, target_diag, unscaled,
                                tol)
        return assemble_solution(coefficients, singular, rank, residual, target_diag, unscaled,
                                 tol, n_samples=self.n_samples, regressor_sum=np.zeros(p),
                                 target_sum=np.zeros(self.n), intercepts=1)


def assemble_solution(coefficients: np.ndarray, singular: np.ndarray, rank: int,
                      residual_matrix: np.ndarray, target_gram_diag: np.ndarray,
                      unscaled: np.ndarray, rank_tolerance: float, *, n_samples: int,
                      regressor_sum: np.ndarray, target_sum: np.ndarray, intercepts: int = 0,
                      **extra) -> RegressionSolution:
    """A :class:`RegressionSolution` from the pieces every solver computes.

    ``residual_matrix`` is ``E E^T`` (n x n); the residual covariance divides it by the residual
    degrees of freedom ``N - rank - intercepts``.  ``extra`` sets the optional fields
    (``estimator``, ``noise_covariance``, ``instrument_strength``).
    """
    N = n_samples
    residual_matrix = 0.5 * (residual_matrix + residual_matrix.T)
    target_sq = float(np.sum(target_gram_diag))
    return RegressionSolution(
        coefficients=coefficients, singular_values=singular, rank=rank, n_samples=N,
        residual_norm=float(np.sqrt(max(np.trace(residual_matrix), 0.0))),
        target_norm=float(np.sqrt(max(target_sq, 0.0))),
        residual_covariance=residual_matrix / max(N - rank - intercepts, 1),
        unscaled_covariance=0.5 * (unscaled + unscaled.T),
        residual_mean=(target_sum - coefficients @ regressor_sum) / max(N, 1),
        target_rms=np.sqrt(np.clip(target_gram_diag, 0.0, None) / max(N, 1)),
        rank_tolerance=rank_tolerance, intercepts=intercepts, **extra)


def gram_factors(gram: np.ndarray, svd_rank: int | None, rank_rtol: float, n_samples: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float]:
    """Equilibration and eigen-decomposition of a Gram matrix, with the rank test.

    Returns ``(scale, eigenvalues[:rank], vectors[:, :rank], singular_values, rank, tol)`` of
    ``gram / outer(scale, scale)`` (``scale`` the column norms).
    """
    scale = _column_scale(np.sqrt(np.clip(np.diag(gram), 0.0, None)))
    eigenvalues, vectors = np.linalg.eigh(gram / np.outer(scale, scale))
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues, vectors = eigenvalues[order], vectors[:, order]
    singular = np.sqrt(np.clip(eigenvalues, 0.0, None))
    # Singular values from a Gram matrix carry absolute errors ~sqrt(eps) * largest, so an
    # exactly rank-deficient matrix can show ~2e-8; below 10 sqrt(eps) nothing is resolved.
    rank, tol = _choose_rank(singular, svd_rank, rank_rtol, gram.shape[0], n_samples,
                             rank_floor=_GRAM_RANK_FLOOR)
    return scale, eigenvalues[:rank], vectors[:, :rank], singular, rank, tol


def solve_normal_equations(gram: np.ndarray, cross: np.ndarray, target_gram: np.ndarray, *,
                           n_samples: int, regressor_sum: np.ndarray, target_sum: np.ndarray,
                           svd_rank: int | None = None, rank_rtol: float = 1e-10,
                           intercepts: int = 0) -> RegressionSolution:
    """Least squares from the moments ``Phi Phi^T`` (p, p), ``Y Phi^T`` (n, p), ``Y Y^T``.

    The normal equations are equilibrated by their diagonal and solved through an
    eigen-decomposition (rank-revealing; see the module notes).

    Raises
    ------
    InsufficientExcitationError
        Fewer samples than regressors, or a rank-deficient Gram matrix.
    """
    scale, eigenvalues, V, singular, rank, tol = gram_factors(gram, svd_rank, rank_rtol,
                                                              n_samples)
    projected = (cross / scale) @ V
    coefficients = (projected / eigenvalues) @ V.T / scale
    residual = target_gram - (projected / eigenvalues) @ projected.T
    unscaled = (V / eigenvalues) @ V.T / np.outer(scale, scale)
    return assemble_solution(coefficients, singular, rank, residual, np.diag(target_gram),
                             unscaled, tol, n_samples=n_samples, regressor_sum=regressor_sum,
                             target_sum=target_sum, intercepts=intercepts)


def check_regression_size(n_states: int, n_inputs: int, max_delay: int, dimension: int
                          ) -> None:
    """Refuse, before allocating, moments of ``dimension`` variables whose square matrix
    exceeds :data:`~_toolbox.validation.ALLOCATION_LIMIT_BYTES` (a ``ParameterError`` naming
    ``max_delay`` and the largest one these sizes allow)."""
    side = math.isqrt(validation.ALLOCATION_LIMIT_BYTES // 8)
    largest = (side - (dimension - n_inputs * (max_delay + 1))) // max(n_inputs, 1) - 1
    check_allocation(f"max_delay = {max_delay} with n = {n_states} states and m = {n_inputs} "
                     f"inputs", (dimension, dimension),
                     accepted=(f"max_delay <= {largest} for these sizes" if largest >= 0
                               else "fewer states or inputs"))


def make_accumulator(method: str, n_states: int, n_inputs: int, max_delay: int) -> _Accumulator:
    """Return a :class:`GramAccumulator` (``"gram"``) or :class:`QRAccumulator` (``"qr"``)."""
    if method == "gram":
        return GramAccumulator(n_states, n_inputs, max_delay)
    if method == "qr":
        return QRAccumulator(n_states, n_inputs, max_delay)
    raise ParameterError(f"method must be 'gram' or 'qr'; got {method!r}")


_GRAM_RANK_FLOOR = 10 * np.sqrt(np.finfo(float).eps)
#: Samples per block: the lagged-input block (m (R + 1) x 4096 doubles) stays in cache.
_GRAM_BLOCK = 4096
#: Rows per QR update: LAPACK's QR is far faster on short panels than on very tall ones.
_QR_BLOCK = 2048


def _column_scale(norms: np.ndarray) -> np.ndarray:
    # A regressor that is identically zero keeps scale 1 so that it shows up as a zero singular
    # value (rank deficiency) instead of a division by zero.
    return np.where(norms > 0, norms, 1.0)


def require_samples(n_samples: int, p: int) -> None:
    """Raise :class:`InsufficientExcitationError` when fewer than ``p`` regression samples are
    available (before any moments are allocated: a bound ``R`` far beyond the data is refused
    at once instead of after building a ``p x p`` matrix of zeros)."""
    if n_samples < p:
        raise _too_few(n_samples, p)


def _too_few(n_samples: int, p: int) -> InsufficientExcitationError:
    return InsufficientExcitationError(
        f"the data provide {n_samples} regression samples; at least {p} = n + m (R + 1) are "
        f"needed (Theorem 9.4.5); record a longer excitation or lower max_delay")


def _choose_rank(singular: np.ndarray, svd_rank: int | None, rank_rtol: float, p: int,
                 n_samples: int, rank_floor: float) -> tuple[int, float]:
    """``(rank, tolerance)``: the rank used and the singular-value tolerance of the rank test."""
    if n_samples < p:
        raise _too_few(n_samples, p)
    tol = max(rank_rtol, rank_floor) * singular[0]
    if svd_rank is not None:
        if not 1 <= svd_rank <= p:
            raise DimensionError(f"regression_rank must be between 1 and {p} (the number of "
                                 f"regressors); got {svd_rank}")
        return svd_rank, tol
    rank = int(np.count_nonzero(singular > tol))
    if rank < p:
        hint = (" (normal equations cannot resolve smaller singular values; method='qr' can)"
                if rank_floor == _GRAM_RANK_FLOOR and singular[-1] > 0 else "")
        raise InsufficientExcitationError(
            f"the regression data matrix is rank-deficient: numerical rank {rank} of {p} "
            f"regressors (n + m (R + 1)) with {n_samples} samples; smallest singular value "
            f"{singular[-1]:.3g}, largest {singular[0]:.3g} (equilibrated columns), tolerance "
            f"{tol:.3g}{hint}. The inputs do not excite the plant enough (constant or collinear "
            f"inputs, an uncontrollable plant, too few samples, or redundant states such as "
            f"many sensors of a few modes); use richer random inputs, set svd_rank to "
            f"identify in the leading POD modes of the states, or regression_rank to fit a "
            f"reduced regression deliberately")
    return rank, tol


#: Above this equilibrated condition number the normal equations may lose more than ~8 digits;
#: "auto" then refines the Gram solution with one more pass over the data ...
GRAM_CONDITION_LIMIT = 1e4
#: ... and beyond this one, where refinement may not converge, repeats the pass with QR.
REFINEMENT_CONDITION_LIMIT = 1e6
#: Between the two, no refinement when the normal equations' rounding error is estimated below
#: this share of every coefficient's standard error (:func:`_rounding_share`): noisy data,
#: whose sampling error dwarfs the lost digits.
ROUNDING_SHARE = 0.01
#: Formerly the largest ``n p`` whose dense covariance was formed; every covariance is now
#: factored (:mod:`dmdidc.regression.covariance`) and nothing is skipped.  Kept for callers.
FULL_COVARIANCE_LIMIT = 4000
#: A fit leaving less than this fraction of its targets unexplained reproduces the data to the
#: accuracy of the moments (normal equations: ~1e-8): its residuals are rounding, not noise.
EXACT_FIT = 1e-6
#: The least-squares solvers (``method`` of :func:`least_squares`).
LEAST_SQUARES_METHODS = ("auto", "gram", "qr")
#: The normal equations' residual sums of squares (``target_gram`` less the fitted part, each
#: row's a difference of sums of ``y^2``) are off by up to this many ``eps`` times the row's
#: uncentred sum of squares: measured against QR's on 56 random plants (2-20 states, 1-4
#: inputs, R = 4-15, K = 1e3-1e5, cond 10-1e6, offsets 0-300 state deviations, exact,
#: rounded to 6 or 8 digits, or noisy), 0.4-11.3 times, unrelated to the condition number.
RESIDUAL_ROUNDING = 16.0


def stream_trajectory(accumulator, X: np.ndarray, U: np.ndarray, chunk_size: int) -> None:
    """Feed one trajectory to ``accumulator`` in chunks of ``chunk_size`` samples (chunks
    overlap by one state), so the working memory is bounded."""
    K = U.shape[1]
    for start in range(0, K, chunk_size):
        stop = min(start + chunk_size, K)
        accumulator.update(X[:, start:stop + 1], U[:, start:stop])


def accumulated_pass(trajectories: list[tuple[np.ndarray, np.ndarray]], max_delay: int,
                     method: str, chunk_size: int = 65536) -> _Accumulator:
    """One pass of the ``method`` (``"gram"`` or ``"qr"``) accumulator over ``trajectories``."""
    n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
    accumulator = make_accumulator(method, n, m, max_delay)
    for X, U in trajectories:
        accumulator.new_trajectory()
        stream_trajectory(accumulator, X, U, chunk_size)
    return accumulator


def _rounding_share(solution: RegressionSolution) -> float:
    """The rounding error of the normal equations' solution in standard errors (estimated).

    In equilibrated columns (unit diagonal Gram ``G``, eigenvalues ``l``), the rounding of the
    moments (``~ eps`` of the cross products ``|c_i| ~ sqrt(N) rms(y_i)``) moves row ``i`` of
    the coefficients by about ``eps sqrt(N) rms(y_i) / l_min`` along the weakest direction,
    where its standard error is ``sigma_i / sqrt(l_min)``: their ratio is about ``eps cond
    sqrt(N) rms(y_i) / sigma_i`` (``cond = sqrt(l_max / l_min)``, ``l_max >= 1``), largest for
    the row the fit explains best.  Measured against QR (a random plant of 50 states, cond
    4e5, and plants of two close modes, cond 2e2 - 5e4, relative residuals 1e-8 - 1e-2), the
    actual ratio was 0.2-1.4 times this estimate; on 95 random plants (2-5 states, low-pass
    inputs, offsets up to 300 state deviations, cond 8 - 3e5) 0.3-2.6 times, and 1-1.6 times
    at cond 4e5 with 1e5 samples: a kept solution can be up to ~3 % of a standard error off.

    Returns
    -------
    float
        ``inf`` when the fit or a row of it is exact (relative residual at most
        :data:`EXACT_FIT`: the residuals are then the rounding itself, not independent noise,
        and the estimate does not hold; noise-free fits measured 0.02-inf).
    """
    if solution.relative_residual <= EXACT_FIT:
        return float("inf")
    sigma = np.sqrt(np.clip(np.diag(solution.residual_covariance), 0.0, None))
    rms = solution.target_rms
    fitted = rms > 0                     # rows of zero targets have nothing to round
    if not np.any(fitted) or np.any(sigma[fitted] <= 0):
        return float("inf")
    relative = float(np.min(sigma[fitted] / rms[fitted]))
    return float(np.finfo(float).eps * solution.condition_number
                 * np.sqrt(max(solution.n_samples, 1)) / relative)


def residual_rounding_share(solution: RegressionSolution, target_squares: np.ndarray
                            ) -> float:
    """How much of a normal-equations solution's residual covariance its rounding may be: the
    largest over the targets of :data:`RESIDUAL_ROUNDING` ``eps ||y_i||^2`` over the residual
    sum of squares of row ``i``.

    The normal equations compute each row's residual sum of squares as ``||y_i||^2`` (of the
    data as summed: uncentred, also for an affine fit) less the fitted part, so a residual
    far below the data's level -- exact data written with a few digits, and most of all
    around an offset -- keeps nothing of itself: on noise-free states + 20 written with 8
    digits (rounding 3e-7) the variances came out 0.2, -0.7 and 1.7 times QR's and the block
    tests read 8.6e3 where QR's read 12.  Noisy data are far from it: noise of 1e-6 of the
    level gives 0.004.

    Parameters
    ----------
    solution : RegressionSolution
        From the normal equations.
    target_squares : ndarray, shape (n,)
        ``sum_k y_ik^2`` of each target row, uncentred.

    Returns
    -------
    float
        ``inf`` when a row with data has no positive residual sum of squares left.
    """
    floor = RESIDUAL_ROUNDING * np.finfo(float).eps * np.clip(target_squares, 0.0, None)
    residual = np.diag(solution.residual_covariance) * max(solution.dof, 1)
    summed = floor > 0                   # rows of zero targets have nothing to round
    if not np.any(summed):
        return 0.0
    if np.any(residual[summed] <= 0):
        return float("inf")
    return float(np.max(floor[summed] / residual[summed]))


def affine_rounding_share(solution: RegressionSolution, gram_diagonal: np.ndarray,
                          sums: np.ndarray, n_samples: int) -> float:
    """:func:`_rounding_share` of an affine fit solved from centred moments
    (``gram - sums sums^T / N``), whose rounding is that of the uncentred moments: larger by
    the largest ``mean^2 / variance + 1`` of the regressors and targets (``gram_diagonal``,
    ``sums``: uncentred).  Measured against QR's centred factor on two close modes (cond
    1.4e4 - 1.5e5, offsets 0.5 - 30 state deviations, 48 fits), the actual share was 0.08-2
    times this estimate."""
    N = max(n_samples, 1)
    mean_square = np.clip(gram_diagonal, 0.0, None) / N
    variance = np.clip(mean_square - (sums / N) ** 2, 0.0, None)
    varying = variance > 0
    growth = float(np.max(mean_square[varying] / variance[varying])) if np.any(varying) else 1.0
    return _rounding_share(solution) * growth


def least_squares(trajectories: list[tuple[np.ndarray, np.ndarray]], max_delay: int, *,
                  method: str = "auto", svd_rank: int | None = None, rank_rtol: float = 1e-10,
                  chunk_size: int = 65536, accumulated: GramAccumulator | None = None
                  ) -> tuple[RegressionSolution, _Accumulator]:
    """The least-squares regression of in-memory trajectories, with the solver policy.

    ``"gram"`` and ``"qr"`` use that accumulator.  ``"auto"`` accumulates the equilibrated
    normal equations and decides from their condition number ``cond`` (before any model is
    built, so a discarded pass neither raises nor warns): keep the solution up to
    :data:`GRAM_CONDITION_LIMIT`, add passes of iterative refinement (:meth:`GramAccumulator.
    refine`) up to :data:`REFINEMENT_CONDITION_LIMIT` unless the digits lost are far below the
    noise (:func:`_rounding_share` at most :data:`ROUNDING_SHARE`: a pass over the data that
    measured), and repeat the pass with QR beyond, when the Gram rank test cannot resolve
    singular values below ~sqrt(eps) while QR can, or when the residuals are so far below the
    data's level that their rounding may be 1 % of their covariance
    (:func:`residual_rounding_share`: exact data, or data rounded to their last digits).

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
    max_delay : int
        ``R``.
    method : {"auto", "gram", "qr"}
    svd_rank, rank_rtol, chunk_size
        As in :class:`~dmdidc.DMDidc`.
    accumulated : GramAccumulator, optional
        The Gram pass of these trajectories, already done (:meth:`GramAccumulator.
        from_moments`): ``"auto"`` and ``"gram"`` start from it instead of a pass.

    Returns
    -------
    solution : RegressionSolution
    accumulator : GramAccumulator or QRAccumulator
        The accumulator of the pass that gave the solution.

    Raises
    ------
    InsufficientExcitationError
        Too few samples or rank-deficient data.
    """
    kind = "gram" if method == "auto" else method
    accumulator = (accumulated if accumulated is not None and kind == "gram"
                   else accumulated_pass(trajectories, max_delay, kind, chunk_size))
    if method != "auto":
        return accumulator.solution(svd_rank=svd_rank, rank_rtol=rank_rtol), accumulator
    try:
        solution = accumulator.solution(svd_rank=svd_rank, rank_rtol=rank_rtol)
    except InsufficientExcitationError:
        if accumulator.n_samples < accumulator.p:
            raise
        solution = None
    if solution is not None and residual_rounding_share(
            solution, np.diag(accumulator.target_gram)) > ROUNDING_SHARE:
        solution = None        # residuals at the moments' rounding: only QR resolves them
    if solution is not None and solution.condition_number <= GRAM_CONDITION_LIMIT:
        return solution, accumulator
    if solution is not None and solution.condition_number <= REFINEMENT_CONDITION_LIMIT:
        if _rounding_share(solution) <= ROUNDING_SHARE:
            return solution, accumulator
        return accumulator.refine(solution, trajectories), accumulator
    accumulator = accumulated_pass(trajectories, max_delay, "qr", chunk_size)
    return accumulator.solution(svd_rank=svd_rank, rank_rtol=rank_rtol), accumulator
