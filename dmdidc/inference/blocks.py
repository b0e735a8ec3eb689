"""Which input blocks act: a significance test against the regression's own standard errors.

The whole delay of channel ``i`` is the first lag ``j`` whose block column ``b = B^(j)[:, i]``
is not zero (dissertation eq. 9.66).  Estimated blocks are never exactly zero, and on noisy data
a block without effect is as large as the noise, so "not zero" is decided statistically.  Column
``c`` of the regression coefficients has covariance ``V_c = C[c, c] * Sigma`` (least squares:
``C = (Phi Phi^T)^+``, ``Sigma`` the residual covariance; instrumental variables and Huber
supply their own pair, and privatized statistics add the privacy noise's part, see
:class:`~dmdidc.regression.RegressionSolution`), so

    T^2 = b^T V_c^{-1} b        (= b^T Sigma^{-1} b / C[c, c] without privacy noise)

is Hotelling's statistic for ``b = 0``: with ``d`` residual degrees of freedom,
``(d - n + 1) / (d n) T^2 ~ F(n, d - n + 1)`` under Gaussian errors (``chi^2_n`` as ``d`` grows).
A block is active when ``T^2`` exceeds the critical value at level ``significance / (m (R + 1))``
(Bonferroni over all blocks, so the probability that *any* block without effect is declared
active, which would shorten a delay, is at most ``significance``), and when it is larger than
rounding: ``|b| > 1e-7 max_j |B^(j)[:, i]|`` (the floor only matters on noise-free data, where
the residual, and so ``Sigma``, is rounding).

Under measurement noise on the states (errors in variables) the inputs ``u_{k-j}`` with
``j <= w`` are independent of the regressor ``x_k``, so the blocks before the delay stay
unbiased and the test keeps its level; blocks after ``w + 1`` pick up a small bias.  The test
assumes white inputs (as in Theorem 9.4.5); strongly coloured inputs make it approximate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from dmdidc.discretization import first_active_blocks
from dmdidc.inference.recovery import _remembered
from dmdidc.regression.solution import RegressionSolution

__all__ = ["BlockTest", "block_test", "column_covariances", "kept_blocks",
           "restricted_coefficients", "restriction_projector", "with_earlier_blocks"]

#: A block column smaller than this fraction of the channel's largest is rounding, never active.
ROUNDING_RTOL = 1e-7
#: The residual covariance is floored at this relative level (per target, in its own units), so
#: that a noise-free fit (residual at rounding) gives a well-defined statistic.
_COVARIANCE_FLOOR = 1e-8


@dataclass(frozen=True)
class BlockTest:
    """Outcome of the test "block ``B^(j)`` acts through channel ``i``" for every block.

    Attributes
    ----------
    statistics : ndarray, shape (R + 1, m)
        Hotelling's ``T^2`` of each block column against zero.
    critical_value : float
        ``T^2`` above which a block is significant (level ``significance / (m (R + 1))``).
    norms : ndarray, shape (R + 1, m)
        Euclidean norm of each block column.
    active : ndarray of bool, shape (R + 1, m)
        The decision: :attr:`significant` (the default rule), or the ``block_rtol`` override.
    significance : float
        Family-wise level of the test.
    rule : str
        ``"significance"`` (default) or ``"block_rtol"`` (explicit relative-size override).
    dof : int
        Residual degrees of freedom of the regression.
    """

    statistics: np.ndarray
    critical_value: float
    norms: np.ndarray
    active: np.ndarray
    significance: float
    rule: str
    dof: int

    @property
    def significant(self) -> np.ndarray:
        """The blocks the data show, shape (R + 1, m): ``T^2`` above the critical value and
        the column larger than rounding (module notes).  This is what "active" means by
        default (``active`` is this array); the ``block_rtol`` override decides ``active``
        by size instead, and the checks compare its model with these blocks."""
        return _significant(self.statistics, self.critical_value, self.norms)

    @property
    def first_active(self) -> np.ndarray:
        """First active block of each channel, shape (m,); ``-1`` when none is active."""
        return first_active_blocks(self.active)

    def summary(self) -> str:
        """One line per channel: statistic of every block, marked ``*`` where active."""
        lines = [f"block test ({self.rule}; critical T^2 = {self.critical_value:.3g} at "
                 f"family-wise level {self.significance:g}, {self.dof} residual dof):"]
        for i in range(self.active.shape[1]):
            cells = " ".join(f"{self.statistics[j, i]:10.3g}{'*' if self.active[j, i] else ' '}"
                             for j in range(self.active.shape[0]))
            lines.append(f"  channel {i}: T^2 by lag 0..{self.active.shape[0] - 1}: {cells}")
        return "\n".join(lines)


def _largest(norms: np.ndarray) -> np.ndarray:
    """Each channel's largest block-column norm, shape (1, m) (never zero)."""
    return np.maximum(norms.max(axis=0, keepdims=True), np.finfo(float).tiny)


def _significant(statistics: np.ndarray, critical: float, norms: np.ndarray) -> np.ndarray:
    """Significant and larger than rounding: the default rule of "a block is active"."""
    return (statistics > critical) & (norms > ROUNDING_RTOL * _largest(norms))


def _critical_value(n: int, dof: int, level: float) -> float:
    if dof >= n:
        d2 = dof - n + 1
        return float(special.fdtri(n, d2, 1.0 - level) * dof * n / d2)
    return float(special.chdtri(n, level))   # no residual information: chi^2 with the floor


def _floored(covariance: np.ndarray, rms: np.ndarray, power: int) -> np.ndarray:
    scale = np.where(rms > 0, rms, 1.0)
    scaled = covariance / np.outer(scale, scale)
    values, vectors = np.linalg.eigh(0.5 * (scaled + scaled.T))
    values = np.maximum(values, _COVARIANCE_FLOOR ** 2) ** power
    return (vectors * values) @ vectors.T * np.outer(scale, scale) ** power


def residual_precision(covariance: np.ndarray, rms: np.ndarray) -> np.ndarray:
    """Inverse of the residual covariance, eigenvalues floored relative to each target's rms."""
    return _floored(covariance, rms, -1)


def column_covariances(solution: RegressionSolution, columns: np.ndarray) -> np.ndarray:
    """Covariance (k, n, n) of the coefficient columns, the residual covariance floored.

    As :meth:`RegressionSolution.column_covariances`, with the residual covariance's
    eigenvalues floored relative to each target's rms (so that noise-free fits give
    well-defined statistics) and the privacy-noise part, if any, added.
    """
    columns = np.asarray(columns, dtype=int)
    sigma = _floored(solution.residual_covariance, solution.target_rms, 1)
    unscaled = np.diag(solution.unscaled_covariance)[columns][:, None, None]
    if solution.sampling_covariance is not None:     # serial correlation accounted for
        floor = np.diag((_COVARIANCE_FLOOR * solution.target_rms) ** 2)
        covs = solution.sampling_covariance.columns(columns) + unscaled * floor[None]
    else:
        covs = unscaled * sigma[None]
    if solution.noise_covariance is not None:
        n, p = solution.coefficients.shape
        covs = covs + solution.noise_covariance.reshape(n, p, n, p)[:, columns, :, columns]
    return covs


def _quadratic_forms(columns: np.ndarray, covs: np.ndarray) -> np.ndarray:
    """``c' (S + tiny I)^-1 c`` per column ``c`` (k, n) and covariance ``S`` (k, n, n): a solve,
    or, where that sum is exactly singular or the solve's form comes out negative, ``S``'s
    eigendecomposition with its rounding-negative eigenvalues taken as zero.

    A direction without variance (noise-free data, an exact fit) makes a column's coefficient
    in it all but certain: its statistic is that of a variance ``tiny``, huge.  ``solve`` on
    ``S + tiny I`` meant the same, but an eigenvalue rounded to ``-tiny`` made the sum exactly
    singular: a bare ``LinAlgError`` under ``OPENBLAS_CORETYPE=Prescott`` (noise-free records of
    2 of 30 random plants at max_delay 0 and 1), a finite answer under Haswell.  The solve stays
    the first try: the batched eigendecomposition costs ten times more (5 ms of an LS fit of
    84 blocks of 20 states, 0.07 numpy Gram passes)."""
    tiny = np.finfo(float).tiny
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            statistics = np.einsum("ka,ka->k", columns, np.linalg.solve(
                covs + tiny * np.eye(covs.shape[1]), columns[:, :, None])[:, :, 0])
    except np.linalg.LinAlgError:
        statistics = np.full(len(columns), np.nan)
    # a quadratic form below zero (or not finite) is the solve's rounding on a covariance
    # singular to rounding (review: 612 of 2000 random rank-2 covariances): the eigenvalues
    bad = ~(np.isfinite(statistics) & (statistics >= 0.0))
    if np.any(bad):
        values, vectors = np.linalg.eigh(0.5 * (covs[bad] + covs[bad].transpose(0, 2, 1)))
        along = np.einsum("kab,ka->kb", vectors, columns[bad])
        with np.errstate(over="ignore"):
            statistics[bad] = np.sum(along ** 2 / (np.clip(values, 0.0, None) + tiny), axis=1)
    return statistics


def block_test(solution: RegressionSolution, n_states: int, n_inputs: int, max_delay: int, *,
                significance: float = 1e-3, block_rtol: float | None = None) -> BlockTest:
    """Decide which input blocks act (see the module notes).

    Parameters
    ----------
    solution : RegressionSolution
        Coefficients ``[A_d, B^(0), ..., B^(R)]`` (n, n + m (R + 1)) with their covariance.
    n_states, n_inputs, max_delay : int
        ``n``, ``m`` and ``R``.
    significance : float, default 1e-3
        Family-wise probability of declaring some block without effect active.
    block_rtol : float, optional
        Explicit override: a block is active iff its column norm exceeds ``block_rtol`` times
        the channel's largest (the statistics are still reported).

    Returns
    -------
    BlockTest

    References
    ----------
    Dissertation eq. (9.66); Hotelling's T^2 (e.g. Anderson, *An Introduction to Multivariate
    Statistical Analysis*, ch. 5).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 400, rng=0)
    >>> X = plant.simulate([0.0], U) + 0.01 * np.random.default_rng(1).standard_normal(401)
    >>> est = DMDidc(max_delay=3).fit(X, U, dt=1.0)
    >>> est.block_test_.active[:, 0].tolist()
    [False, True, True, False]
    """
    n, m, R = n_states, n_inputs, max_delay
    coefficients = solution.coefficients
    blocks = coefficients[:, n:].reshape(n, R + 1, m)                   # [:, j, i] = B^(j)[:, i]
    norms = np.linalg.norm(blocks, axis=0)                              # (R + 1, m)
    columns = blocks.transpose(1, 2, 0).reshape(-1, n)                 # column n + j m + i
    covs = column_covariances(solution, n + np.arange(m * (R + 1)))
    statistics = _quadratic_forms(columns, covs).reshape(R + 1, m)
    level = significance / max(m * (R + 1), 1)                      # m = 0: no blocks to test
    critical = _critical_value(n, solution.dof, level)
    if block_rtol is None:
        active = _significant(statistics, critical, norms)
        rule = "significance"
    else:
        active = norms > block_rtol * _largest(norms)
        rule = "block_rtol"
    return BlockTest(statistics=statistics, critical_value=critical, norms=norms,
                     active=active, significance=significance, rule=rule, dof=solution.dof)


def kept_blocks(active: np.ndarray) -> np.ndarray:
    """The blocks a model keeps: the active ones, and ``w + 1`` after each channel's first.

    A fractional delay ``r = (w + p) T`` acts through exactly the blocks ``w`` and ``w + 1``
    (eq. 9.65), so ``B^(w + 1)`` is kept even when the test finds it insignificant (a small
    fraction ``p`` makes it small): the fraction is then estimated, with its interval, instead of
    being set to zero.  Other significant blocks are kept too (the recovery chooses the pair of
    blocks whose structure explains them all, and the ``block_structure`` check of
    :mod:`dmdidc.inference.diagnostics` reports significant blocks beyond ``w + 1``).

    Parameters
    ----------
    active : ndarray of bool, shape (R + 1, m)
        The block test's decision.

    Returns
    -------
    ndarray of bool, shape (R + 1, m)
    """
    kept = np.array(active, dtype=bool)
    for i, w in enumerate(first_active_blocks(kept)):
        if 0 <= w < kept.shape[0] - 1:
            kept[w + 1, i] = True
    return kept


def with_earlier_blocks(blocks: np.ndarray, active: np.ndarray) -> np.ndarray:
    """``blocks`` with ``B^(w - 1)`` added for every channel whose first active block is ``w >= 1``.

    The block test zeroes every block before a channel's first significant one ``w``, and a
    weak ``B^(w - 1)`` (a delay just short of ``w`` periods under weak excitation) is zeroed
    too; this is the block structure that fits it as well.  The ``delay_ambiguity`` check
    (:mod:`dmdidc.inference.ambiguity`) recovers the delay with it, and the asymptotic delay
    interval (:func:`dmdidc.inference.intervals.asymptotic_intervals`) spans it.

    Parameters
    ----------
    blocks : ndarray of bool, shape (R + 1, m)
        A block selection (the test's ``active``, or the :func:`kept_blocks`).
    active : ndarray of bool, shape (R + 1, m)
        The block test's decision, which gives each channel's ``w``.

    Returns
    -------
    ndarray of bool, shape (R + 1, m)

    Examples
    --------
    >>> active = np.array([[False, True], [True, True], [False, False]])
    >>> with_earlier_blocks(kept_blocks(active), active).astype(int).tolist()
    [[1, 1], [1, 1], [1, 0]]
    """
    out = np.array(blocks, dtype=bool)
    for i, w in enumerate(first_active_blocks(active)):
        if w >= 1:
            out[w - 1, i] = True
    return out


def restricted_coefficients(solution: RegressionSolution, n_states: int,
                            active: np.ndarray, *, projector: np.ndarray | None = None
                            ) -> np.ndarray:
    """Least-squares coefficients with the inactive input blocks constrained to zero.

    From the unrestricted solution and its covariance, without another pass over the data:
    ``Theta_r = Theta - Theta_D C_DD^{-1} C_D:`` for the dropped columns ``D``.

    Parameters
    ----------
    solution : RegressionSolution
    n_states : int
    active : ndarray of bool, shape (R + 1, m)
    projector : ndarray (p, p), optional
        :func:`restriction_projector` of the same arguments, when the caller already built it
        (it costs a solve); computed here otherwise.

    Returns
    -------
    ndarray, shape (n, n + m (R + 1))
        Exactly zero in the columns of inactive blocks.
    """
    if projector is None:
        projector = restriction_projector(solution, n_states, active)
    coefficients = solution.coefficients @ projector
    dropped = n_states + np.flatnonzero(~np.asarray(active).reshape(-1))
    coefficients[:, dropped] = 0.0          # exactly, not to rounding
    return coefficients


def restriction_projector(solution: RegressionSolution, n_states: int,
                          active: np.ndarray) -> np.ndarray:
    """``P`` (p, p) with ``restricted = coefficients @ P``: ``P = I - E_D C_DD^-1 C_D:``.

    Parameters
    ----------
    solution : RegressionSolution
    n_states : int
    active : ndarray of bool, shape (R + 1, m)

    Returns
    -------
    ndarray, shape (p, p)
    """
    active = np.asarray(active, dtype=bool)
    C = np.asarray(solution.unscaled_covariance)
    # a fit builds the same projector for its model and for its checks (identified_model,
    # restricted_solution): one solve (~1 ms at p = 104), keyed by what P depends on
    key = (n_states, active.shape, active.tobytes(), C.shape, C.tobytes())
    return _remembered(_PROJECTOR, key, lambda: _projector(C, n_states, active)).copy()


_PROJECTOR: list = []        # the last (key, P) of restriction_projector


def _projector(C: np.ndarray, n_states: int, active: np.ndarray) -> np.ndarray:
    dropped = n_states + np.flatnonzero(~active.reshape(-1))
    P = np.eye(C.shape[0])
    if dropped.size:
        P[dropped] -= np.linalg.lstsq(C[np.ix_(dropped, dropped)], C[dropped], rcond=None)[0]
    return P
