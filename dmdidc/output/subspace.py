"""The plant's dynamics (A, C) from input-output data with delayed inputs: a CVA subspace step.

The future outputs ``Y_f = [y_k; ...; y_{k+f-1}]`` of a plant whose inputs act with a delay of
at most ``R`` samples are ``Y_f = Gamma_f x_k + H U_f + noise``, where ``Gamma_f`` is the
extended observability matrix and ``U_f = [u_{k-R}; ...; u_{k+f-1}]`` holds every input that can
still reach them (the ``R`` most recent past inputs included: they are "in flight").  The part
of ``x_k`` those in-flight inputs did not cause is a function of the past window
``W_p = [y_{k-p}; ...; y_{k-1}; u_{k-p-R}; ...; u_{k-R-1}]``, so the canonical correlations
between ``Y_f`` and ``W_p``, both with ``U_f`` projected out, have rank ``n`` (canonical variate
analysis, Larimore 1990).  Because the in-flight inputs are projected out, the delay adds no
states: the order found is the plant's, and the delay is read afterwards from the input blocks
(:mod:`dmdidc.output.blocks`).

Everything is computed from the ``R`` factor of one QR decomposition of the stacked data
``[U_f; W_p; Y_f]`` (the LQ form of subspace identification, Van Overschee & De Moor 1996), so
the cost is one pass over the data and the memory the stacked rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg
from scipy.linalg import lapack

from dmdidc.errors import InsufficientExcitationError
from dmdidc.output.jacobian import trend_degree

__all__ = ["SubspaceBasis", "basis_from_factor", "noise_edge", "stacked_data",
           "stacked_windows", "subspace_basis", "triangular_factor"]

#: Relative floor on the eigenvalues of the output weighting (noise-free data have a singular one).
_WEIGHT_FLOOR = 1e-12


@dataclass(frozen=True, eq=False)
class SubspaceBasis:
    """The canonical variates of one subspace step, from which ``(A, C)`` of any order follow.

    Attributes
    ----------
    singular_values : ndarray
        Canonical correlations between future outputs and the past window (descending), both
        with the inputs in flight and the future inputs projected out.
    noise_edge : float
        Largest squared canonical correlation pure noise reaches with these dimensions and
        this many windows (Wachter's limit plus a fluctuation margin).
    horizon : int
        Future and past window length ``f = p``.
    columns : int
        Number of data windows used.
    """

    singular_values: np.ndarray
    noise_edge: float
    horizon: int
    columns: int
    n_outputs: int
    _left: np.ndarray
    _weight_sqrt: np.ndarray

    @property
    def max_order(self) -> int:
        """The largest order the horizon can reveal (``f ny - ny``, at most the past dimension)."""
        return min((self.horizon - 1) * self.n_outputs, self.singular_values.size)

    def detected_order(self) -> int:
        """Number of canonical correlations above the noise edge."""
        return int(np.sum(self.singular_values[:self.max_order] ** 2 > self.noise_edge))

    def dynamics(self, order: int) -> tuple[np.ndarray, np.ndarray]:
        """``(A, C)`` of the given order, in the basis of the canonical variates.

        Only basis-free quantities (eigenvalues, transfer function, delays) are unique.
        """
        ny = self.n_outputs
        gamma = self._weight_sqrt @ self._left[:, :order] * np.sqrt(self.singular_values[:order])
        A = np.linalg.lstsq(gamma[:-ny], gamma[ny:], rcond=None)[0]
        return A, gamma[:ny]


def stacked_windows(series: np.ndarray, first: int, count: int, length: int,
                    out: np.ndarray | None = None) -> np.ndarray:
    """Rows ``series[:, first + i]`` for ``i < length`` stacked, one column per window start.

    ``series`` is (d, K); the result is (length d, count): column ``c`` is
    ``[series[:, first + c]; ...; series[:, first + c + length - 1]]``.  Written into ``out``
    when given (a block of a larger array).
    """
    d = series.shape[0]
    out = np.empty((length * d, count)) if out is None else out
    for i in range(length):             # row blocks are shifted slices: contiguous copies
        out[i * d:(i + 1) * d] = series[:, first + i:first + i + count]
    return out


def _window_range(K: int, R: int, f: int) -> tuple[int, int]:
    """First window start ``k`` (``k - p - R >= 0`` with ``p = f``) and the number of windows
    (the last has ``k + f - 1 <= K - 1``) of an experiment of ``K`` samples."""
    start = f + R
    return start, K - f + 1 - start


def _fill_windows(Y: np.ndarray, U: np.ndarray, R: int, f: int, parts: list[np.ndarray]
                  ) -> None:
    """Write ``U_f``, ``W_p`` and ``Y_f`` of one experiment into ``parts`` (three blocks)."""
    start, count = _window_range(Y.shape[1], R, f)
    U_f, past, Y_f = parts
    stacked_windows(U, start - R, count, f + R, out=U_f)
    stacked_windows(Y, start - f, count, f, out=past[:f * Y.shape[0]])
    stacked_windows(U, start - f - R, count, f, out=past[f * Y.shape[0]:])
    stacked_windows(Y, start, count, f, out=Y_f)


#: Smallest reciprocal condition number (1-norm) of the Cholesky factor of ``A^T A`` that
#: :func:`triangular_factor` keeps: its rounding, about ``eps cond(A)^2`` relative in ``A``'s
#: weakest direction, is then below 1e-8 (noisy data: at 40 dB the sweep of
#: ``benchmarks/bench_output_loud.py`` has 3e-4 and up); below it, Householder QR.
_GRAM_RCOND = 1e-4


def triangular_factor(A: np.ndarray) -> np.ndarray:
    """An upper triangular ``R`` (first ``A.shape[1]`` rows) with ``R^T R = A^T A`` (the ``R``
    of ``A = Q R`` up to row signs); ``A`` may be overwritten.

    The Cholesky factor of the Gram ``A^T A`` when that is well conditioned (one symmetric
    product: about 8x cheaper than the QR for the tall stacked data, 3977 x 89 at K = 4000),
    else the Householder form (its top square is ``R``; ``mode="r"`` would return and triu
    the whole array).  Only ``R^T R`` matters to the canonical correlations and variates
    (:func:`basis_from_factor`).

    Examples
    --------
    >>> A = np.random.default_rng(0).standard_normal((50, 3))
    >>> R = triangular_factor(A.copy())
    >>> R.shape, bool(np.allclose(R.T @ R, A.T @ A)), bool(np.allclose(R, np.triu(R)))
    ((3, 3), True, True)
    """
    if A.shape[0] > A.shape[1]:
        try:
            R = linalg.cholesky(A.T @ A, lower=False, check_finite=False)
            if lapack.dtrcon(R, norm="1", uplo="U")[0] > _GRAM_RCOND:
                return R
        except linalg.LinAlgError:      # singular (exact data): its rank needs the QR
            pass
    factored = linalg.qr(A, mode="raw", overwrite_a=True, check_finite=False)[0][0]
    return np.triu(factored[:A.shape[1]])


def _inverse_sqrt(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, vectors = np.linalg.eigh(0.5 * (weight + weight.T))
    values = np.maximum(values, _WEIGHT_FLOOR * max(values.max(), np.finfo(float).tiny))
    return (vectors / np.sqrt(values)) @ vectors.T, (vectors * np.sqrt(values)) @ vectors.T


def noise_edge(columns: int, n_future: int, n_past: int) -> float:
    """Largest squared canonical correlation between independent noise blocks (module notes).

    Wachter's limit ``(sqrt(c1 (1 - c2)) + sqrt(c2 (1 - c1)))^2`` with ``c1 = a / N``,
    ``c2 = b / N`` (Wachter 1980), plus ``3 N^(-2/3)`` for the Tracy-Widom fluctuation of the
    largest one at finite ``N`` (Johnstone 2008).
    """
    c1, c2 = min(n_future / columns, 1.0), min(n_past / columns, 1.0)
    edge = (np.sqrt(c1 * (1 - c2)) + np.sqrt(c2 * (1 - c1))) ** 2
    return float(min(edge + 3.0 * columns ** (-2.0 / 3.0), 1.0))


def subspace_basis(experiments: list[tuple[np.ndarray, np.ndarray]], max_delay: int, *,
                   horizon: int, offset: bool = False, trend: bool | int = False
                   ) -> SubspaceBasis:
    """The canonical variates of output experiments ``(Y (ny, K), U (m, K))``.

    ``offset``: a constant row joins the projected-out inputs (a constant output offset is
    then no dynamics).  ``trend``: each experiment's constant and line join them instead (a
    linear drift per experiment is no dynamics either; :func:`stacked_data`); ``trend`` 1:
    each experiment's constant only (``detrend="constant"``).

    Raises
    ------
    InsufficientExcitationError
        Too few samples for the windows.
    """
    R, f = max_delay, horizon
    stacked = stacked_data(experiments, R, f, offset=offset, trend=trend)
    if stacked is None:
        need = 2 * f + R
        raise InsufficientExcitationError(
            f"each experiment needs more than {need} samples for horizon={f} and "
            f"max_delay={R}; the longest has {max(Y.shape[1] for Y, _ in experiments)}: record "
            f"longer or lower horizon")
    Z, sizes = stacked
    columns = Z.shape[1]
    # One QR of the stacked data: Z = L Q with L lower triangular (the LQ form); Z is ours.
    L = triangular_factor(Z.T).T
    return basis_from_factor(L, sizes, columns, horizon=f, max_delay=R,
                             n_outputs=experiments[0][0].shape[0])


def stacked_data(experiments: list[tuple[np.ndarray, np.ndarray]], max_delay: int, horizon: int,
                 *, offset: bool, trend: bool | int = False
                 ) -> tuple[np.ndarray, tuple[int, int, int]] | None:
    """``Z = [U_f (; 1); W_p; Y_f]`` of every window of the experiments, with the row counts of
    its three parts (``None`` when no experiment is long enough).  ``trend``: instead of the
    ``1`` row, two rows per experiment, its windows' constant and index (zero elsewhere):
    projected out with the inputs, so data whose lines were removed beforehand (outputs and
    inputs, the fit's ``detrend="linear"``) give the canonical correlations of the raw data
    (without them, the line of the plant's response to the removed input line read as a
    slow state: one more correlation above the noise edge on a test plant).  ``trend`` 1: one
    row per experiment, its constant (data whose means were removed, ``detrend="constant"``)."""
    R, f = max_delay, horizon
    degree = trend_degree(trend)
    counts = [max(_window_range(Y.shape[1], R, f)[1], 0) for Y, _ in experiments]
    if not any(counts):
        return None
    ny, m = experiments[0][0].shape[0], experiments[0][1].shape[0]
    extra = degree * sum(count > 0 for count in counts) if degree else 1 if offset else 0
    sizes = ((f + R) * m + extra, f * (ny + m), f * ny)
    # One array, each experiment's windows written into its columns (no stacking copies).
    Z = np.empty((sum(sizes), sum(counts)))
    rows = np.cumsum((0,) + sizes)
    column = 0
    for (Y, U), count in zip(experiments, counts, strict=True):
        if count:
            block = Z[:, column:column + count]
            _fill_windows(Y, U, R, f, [block[rows[0]:rows[0] + (f + R) * m],
                                       block[rows[1]:rows[2]], block[rows[2]:rows[3]]])
            column += count
    if degree:
        Z[sizes[0] - extra:sizes[0]] = 0.0
        row, column = sizes[0] - extra, 0
        for count in filter(None, counts):
            Z[row, column:column + count] = 1.0
            if degree == 2:
                Z[row + 1, column:column + count] = np.linspace(-1.0, 1.0, count)
            row, column = row + degree, column + count
    elif offset:     # a constant output offset is projected out with the inputs, not a mode
        Z[sizes[0] - 1] = 1.0
    return Z, sizes


def basis_from_factor(L: np.ndarray, sizes: tuple[int, int, int], columns: int, *,
                      horizon: int, max_delay: int, n_outputs: int) -> SubspaceBasis:
    """The canonical variates from a lower-triangular ``L`` with ``L L^T = Z Z^T`` for the
    stacked data ``Z = [U_f; W_p; Y_f]`` of ``columns`` windows (row counts ``sizes``).

    Any such factor gives the same canonical correlations and variates (up to signs), so a
    factor updated chunk by chunk (:mod:`dmdidc.output.streaming`) serves as well as one QR.
    """
    a, b, c = sizes
    if columns < 2 * (a + b + c):
        raise InsufficientExcitationError(
            f"{columns} data windows for {a + b + c} stacked rows (horizon={horizon}, "
            f"max_delay={max_delay}): need at least {2 * (a + b + c)}; record longer, add "
            f"experiments or lower horizon")
    L32, L33 = L[a + b:, a:a + b], L[a + b:, a + b:]
    weight_inv_sqrt, weight_sqrt = _inverse_sqrt(L32 @ L32.T + L33 @ L33.T)
    left, correlations, _ = np.linalg.svd(weight_inv_sqrt @ L32, full_matrices=False)
    return SubspaceBasis(singular_values=np.clip(correlations, 0.0, 1.0),
                         noise_edge=noise_edge(columns, c, b), horizon=horizon, columns=columns,
                         n_outputs=n_outputs, _left=left, _weight_sqrt=weight_sqrt)
