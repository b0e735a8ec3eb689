"""Attack (a): reconstruct a household's trajectory from its intercepted DMDidc statistics.

The dissertation's Ch. 6 threat (data reconstructed by optimizing dummy data until the shared
quantities match) carried over to identification.  A household shares, per window of ``K``
periods, the Gram blocks of its lagged data ``phi_k = [x_k; u_k; ...; u_{k-R}]``,
``y_k = x_{k+1}`` (k = R .. K-1, ``N = K - R`` samples):

    G = Phi Phi^T (p x p),   C = Y Phi^T (n x p),   S = Y Y^T (n x n),   p = n + m (R + 1).

These are the regression blocks of the :class:`dmdidc.SufficientStatistics` the household
shares (:meth:`GramBlocks.from_statistics`, in the data's units, plain or privatized; with
instruments the statistics start at a later sample ``k0``, and the blocks of the instrument
rows are left unused).

The adversary knows the model class (``n`` states, the lag ``R``) and the commands ``U`` (the
aggregator sent them), and optionally the fleet model (a :class:`dmdidc.DelayedPlant`).  It
searches the states ``x_R .. x_K`` whose statistics match the intercepted ones (nonlinear least
squares, analytic Jacobian, several random starts), optionally penalising departures from the
fleet model's dynamics.

How much the statistics determine: the unknowns are ``n (N + 1)`` numbers, the intercepted
blocks that involve states hold at most ``n (n + 1) + n m (R + 1) + n p`` (26 for n = 2, m = 1,
R = 3) numbers.  :func:`free_dimensions` gives the exact count at the true trajectory: the
dimension of the set of trajectories with the same statistics (``n (N + 1)`` minus the rank of
the Jacobian of the statistics).  Once it is positive the statistics cannot single out the
trajectory without a prior.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_integer,
    check_nonnegative,
    read_only,
)
from dmdidc.model import DelayedPlant
from dmdidc.regression import lagged_inputs
from dmdidc.statistics import SufficientStatistics

__all__ = ["GramBlocks", "ReconstructionResult", "free_dimensions", "gram_blocks",
           "reconstruct_trajectory", "relative_error"]


@dataclass(frozen=True, eq=False)
class GramBlocks:
    """The statistics a household shares for one window (what the adversary intercepts).

    Attributes
    ----------
    gram : ndarray, shape (p, p)
        ``Phi Phi^T``.
    cross : ndarray, shape (n, p)
        ``Y Phi^T``.
    target_gram : ndarray, shape (n, n)
        ``Y Y^T``.
    n_samples : int
        ``N``.
    max_delay : int
        ``R``.
    first_sample : int or None
        Time index ``k0 >= R`` of the first regression sample in the window (default ``R``);
        the blocks hold ``x_{k0} .. x_K`` and need the commands from ``k0 - R``.
    """

    gram: np.ndarray
    cross: np.ndarray
    target_gram: np.ndarray
    n_samples: int
    max_delay: int
    first_sample: int | None = None

    def __post_init__(self) -> None:
        if self.first_sample is None:
            object.__setattr__(self, "first_sample", self.max_delay)
        elif check_integer("first_sample", self.first_sample, minimum=0) < self.max_delay:
            raise ParameterError(f"first_sample must be >= max_delay={self.max_delay}; got "
                                 f"{self.first_sample}")

    @classmethod
    def from_statistics(cls, statistics: SufficientStatistics) -> GramBlocks:
        """The regression blocks of shared statistics, in the data's units.

        Parameters
        ----------
        statistics : dmdidc.SufficientStatistics
            One window (or day) of one household, plain or privatized, uncentred or centred
            (its ``gram`` is used as stored, times ``scale``).

        Raises
        ------
        ParameterError
            If ``statistics`` is not :class:`dmdidc.SufficientStatistics`.

        Examples
        --------
        >>> import numpy as np
        >>> from dmdidc import SufficientStatistics
        >>> X, U = np.ones((2, 11)), np.ones((1, 10))
        >>> stats = SufficientStatistics.from_data(X, U, max_delay=3, state_bound=2.0,
        ...                                        input_bound=2.0)
        >>> float(GramBlocks.from_statistics(stats).gram[0, 0])    # in the data's units again
        7.0
        """
        if not isinstance(statistics, SufficientStatistics):
            raise ParameterError(f"statistics must be a dmdidc.SufficientStatistics; got "
                                 f"{type(statistics).__name__}")
        M = statistics.moments()[0]
        n, p = statistics.n_states, statistics.n_regressors
        return cls(read_only(M[:p, :p]), read_only(M[p:p + n, :p]),
                   read_only(M[p:p + n, p:p + n]), statistics.n_samples,
                   statistics.max_delay, statistics.layout.first_sample)

    @property
    def n_states(self) -> int:
        """``n``."""
        return self.cross.shape[0]


def gram_blocks(X: Any, U: Any, max_delay: int) -> GramBlocks:
    """Statistics of one trajectory (``X`` (n, K + 1), ``U`` (m, K)): the blocks of its plain
    :class:`dmdidc.SufficientStatistics` (:meth:`GramBlocks.from_statistics`).

    Examples
    --------
    >>> import numpy as np
    >>> blocks = gram_blocks(np.ones((2, 11)), np.ones((1, 10)), 3)
    >>> blocks.gram.shape, blocks.n_samples
    ((6, 6), 7)
    """
    X, U = _check_data(X, U)
    R = check_integer("max_delay", max_delay, minimum=0)
    if U.shape[1] <= R:
        raise DimensionError(f"U has {U.shape[1]} steps; need more than max_delay={R}")
    return GramBlocks.from_statistics(SufficientStatistics.from_data(X, U, max_delay=R))


@dataclass(frozen=True, eq=False)
class ReconstructionResult:
    """Outcome of :func:`reconstruct_trajectory`.

    Attributes
    ----------
    states : ndarray, shape (n, N + 1)
        Reconstructed ``x_R .. x_K``.
    statistics_residual : float
        Relative mismatch of the reconstructed statistics (Frobenius, over the blocks that
        involve states).
    restarts : int
        Random starts tried.
    """

    states: np.ndarray
    statistics_residual: float
    restarts: int


def relative_error(states: Any, truth: Any) -> float:
    """``||states - truth||_F / ||truth - row means||_F``: error relative to the variation.

    The mean temperature is easy to recover (a few moments pin it down); the variation around
    it is what reveals daily life, so the error is measured against it.
    """
    estimate = check_finite_array("states", states, ndim=2)
    truth = check_finite_array("truth", truth, ndim=2)
    if estimate.shape != truth.shape:
        raise DimensionError(f"states has shape {estimate.shape}; truth has {truth.shape}")
    spread = np.linalg.norm(truth - truth.mean(axis=1, keepdims=True))
    return float(np.linalg.norm(estimate - truth) / max(spread, 1e-300))


def reconstruct_trajectory(blocks: GramBlocks, U: Any, *, model: DelayedPlant | None = None,
                           prior_weight: float = 1.0, restarts: int = 5,
                           start_level: Any = None,
                           rng: np.random.Generator | int | None = None) -> ReconstructionResult:
    """Search the states whose lagged statistics match intercepted ones (attack a).

    Parameters
    ----------
    blocks : GramBlocks
        Intercepted statistics of one window.
    U : array_like, shape (m, N + R)
        The window's commands from ``k0 - R`` on (known to the aggregator and to an adversary
        that intercepts them); ``N = blocks.n_samples``, ``k0 = blocks.first_sample``.
    model : dmdidc.DelayedPlant, optional
        Fleet model known to the adversary; adds ``sqrt(prior_weight / N)`` times the one-step
        prediction errors ``x_{k+1} - A_d x_k - sum_j B^(j) u_{k-j}`` to the residuals (its
        input blocks are zero-padded or truncated to ``R + 1``).
    prior_weight : float, default 1.0
        Weight of the model prior relative to the statistics (both per sample).
    restarts : int, default 5
        Random starts around ``start_level``; the best fit is kept.
    start_level : array_like, shape (n,), optional
        Where the starts lie (e.g. the mean state, which shared sums give away); default: the
        root mean square ``sqrt(diag(G)[:n] / N)``, right for positive states only.
    rng : numpy.random.Generator or int or None

    Returns
    -------
    ReconstructionResult
        States ``x_{k0} .. x_K``.

    Raises
    ------
    DimensionError
        If ``U`` does not fit the statistics or ``model`` has another number of states/inputs.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, U = 20 + rng.normal(size=(2, 9)), rng.normal(size=(1, 8))
    >>> result = reconstruct_trajectory(gram_blocks(X, U, 3), U, rng=0)
    >>> relative_error(result.states, X[:, 3:]) < 1e-6
    True
    """
    U = check_finite_array("U", U, ndim=2)
    R, N, n = blocks.max_delay, blocks.n_samples, blocks.n_states
    if U.shape[1] != N + R:
        raise DimensionError(f"U has {U.shape[1]} steps; the statistics hold N={N} samples "
                             f"with max_delay={R}, so expected {N + R}")
    restarts = check_integer("restarts", restarts, minimum=1)
    weight = check_nonnegative("prior_weight", prior_weight)
    H = lagged_inputs(U, R)
    observed = _observed(blocks)
    prior = None if model is None else _prior_matrices(model, n, U.shape[0], R)
    rng = as_generator(rng)
    if start_level is None:
        level = np.sqrt(np.clip(np.diag(blocks.gram)[:n], 0.0, None) / N)
    else:
        level = check_finite_array("start_level", start_level, ndim=1)
        if level.size != n:
            raise DimensionError(f"start_level has {level.size} entries; expected n={n}")
    scale = np.linalg.norm(observed)
    best = None
    for _ in range(restarts):
        start = level[:, None] + 0.01 * np.abs(level)[:, None] * rng.standard_normal((n, N + 1))
        fit = least_squares(_residuals, start.ravel(), jac=_jacobian, method="trf",
                            x_scale="jac", args=(H, observed, N, n, prior, weight),
                            xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=200)
        if best is None or fit.cost < best.cost:
            best = fit
    states = best.x.reshape(n, N + 1)
    mismatch = np.linalg.norm(_statistics(states, H) - observed) / max(scale, 1e-300)
    return ReconstructionResult(read_only(states), float(mismatch), restarts)


def free_dimensions(X: Any, U: Any, max_delay: int) -> tuple[int, int]:
    """How many directions of the trajectory the statistics leave free, at the truth.

    Returns
    -------
    unknowns : int
        ``n (N + 1)``: the states ``x_R .. x_K`` that enter the statistics.
    free : int
        ``unknowns - rank J``, with ``J`` the Jacobian of the state-dependent statistics: the
        dimension of the set of trajectories with the same statistics near the truth (0: locally
        unique).
    """
    X, U = _check_data(X, U)
    R = check_integer("max_delay", max_delay, minimum=0)
    states, H = X[:, R:], lagged_inputs(U, R)
    n, N = X.shape[0], H.shape[1]
    J = _jacobian(states.ravel(), H, None, N, n, None, 0.0)
    singular = np.linalg.svd(J, compute_uv=False)
    rank = int(np.sum(singular > singular[0] * 1e-10)) if singular.size else 0
    return n * (N + 1), n * (N + 1) - rank


# ---------------------------------------------------------------------- residuals and Jacobian
def _pairs(n: int, q: int) -> list[tuple[int, int]]:
    """Entries of ``M = Z Z^T``, ``Z = [x_k; h_k; x_{k+1}]``, that involve states (upper part)."""
    size = 2 * n + q
    inputs = range(n, n + q)
    return [(a, b) for a in range(size) for b in range(a, size)
            if not (a in inputs and b in inputs)]


def _stack(states: np.ndarray, H: np.ndarray) -> np.ndarray:
    return np.concatenate([states[:, :-1], H, states[:, 1:]], axis=0)


def _statistics(states: np.ndarray, H: np.ndarray) -> np.ndarray:
    Z = _stack(states, H)
    M = Z @ Z.T
    return np.array([M[a, b] for a, b in _pairs(states.shape[0], H.shape[0])])


def _observed(blocks: GramBlocks) -> np.ndarray:
    n, p = blocks.n_states, blocks.gram.shape[0]
    M = np.zeros((p + n, p + n))
    M[:p, :p] = blocks.gram
    M[p:, :p] = blocks.cross
    M[:p, p:] = blocks.cross.T
    M[p:, p:] = blocks.target_gram
    return np.array([M[a, b] for a, b in _pairs(n, p - n)])


def _prior_matrices(model: DelayedPlant, n: int, m: int, R: int) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(model, DelayedPlant):
        raise ParameterError(f"model must be a dmdidc.DelayedPlant; got {type(model).__name__}")
    if (model.n_states, model.n_inputs) != (n, m):
        raise DimensionError(f"model has {model.n_states} states and {model.n_inputs} inputs; "
                             f"the statistics have {n} and the commands {m}")
    blocks = np.zeros((R + 1, n, m))
    keep = min(R, model.max_delay) + 1
    blocks[:keep] = model.B_blocks[:keep]
    return model.A_d, np.concatenate(list(blocks), axis=1)          # B_stack (n, m (R + 1))


def _residuals(flat: np.ndarray, H: np.ndarray, observed: np.ndarray, N: int, n: int,
               prior: tuple[np.ndarray, np.ndarray] | None, weight: float) -> np.ndarray:
    states = flat.reshape(n, N + 1)
    parts = [(_statistics(states, H) - observed) / N]
    if prior is not None:
        A_d, B_stack = prior
        error = states[:, 1:] - A_d @ states[:, :-1] - B_stack @ H
        parts.append(np.sqrt(weight / N) * error.ravel())
    return np.concatenate(parts)


def _jacobian(flat: np.ndarray, H: np.ndarray, observed: Any, N: int, n: int,
              prior: tuple[np.ndarray, np.ndarray] | None, weight: float) -> np.ndarray:
    states = flat.reshape(n, N + 1)
    Z = _stack(states, H)
    q = H.shape[0]
    a, b = np.array(_pairs(n, q)).T
    pair = np.arange(a.size)
    dZ = np.zeros((a.size, *Z.shape))       # d M[a, b] / d Z = e_a Z[b] + e_b Z[a], per pair
    np.add.at(dZ, (pair, a), Z[b])
    np.add.at(dZ, (pair, b), Z[a])
    dX = np.zeros((a.size, n, N + 1))
    dX[:, :, :-1] += dZ[:, :n]              # rows of Z holding x_k
    dX[:, :, 1:] += dZ[:, n + q:]           # rows of Z holding x_{k+1}
    J = dX.reshape(a.size, -1) / N
    if prior is not None:
        J = np.vstack([J, np.sqrt(weight / N) * _prior_jacobian(prior[0], N)])
    return J


def _prior_jacobian(A_d: np.ndarray, N: int) -> np.ndarray:
    """Jacobian of ``vec(x_{t+1} - A_d x_t)`` (row ``i N + t``) w.r.t. ``vec(states)``."""
    n = A_d.shape[0]
    shift = np.eye(N, N + 1, k=1)          # picks x_{t+1}
    same = np.eye(N, N + 1)                # picks x_t
    return np.kron(np.eye(n), shift) - np.kron(A_d, same)


def _check_data(X: Any, U: Any) -> tuple[np.ndarray, np.ndarray]:
    X = check_finite_array("X", X, ndim=2)
    U = check_finite_array("U", U, ndim=2)
    if X.shape[1] != U.shape[1] + 1:
        raise DimensionError(f"X has {X.shape[1]} columns; expected {U.shape[1] + 1} (one more "
                             f"than U's {U.shape[1]} steps)")
    return X, U
