"""How a fit on trajectories in memory proceeds: offset, estimator, instruments, refinement.

:func:`fit_trajectories` is the data path of :meth:`dmdidc.DMDidc.fit`; every decision it takes
on its own is returned in :class:`FitOutcome` (and shown by ``diagnostics_``):

1. **Offset** (``detrend="auto"``): the intercept is tested on the first-stage moments
   (:mod:`dmdidc.inference.offset`); when significant, every later solve uses centred moments
   (an affine model, exactly) and the operating point is reported.
2. **Estimator.**  Least squares (``"ls"``), Huber (``"huber"``), instrumental variables
   (``"iv"``, consistent under measurement noise), or robust IV (``"huber_iv"``).  ``"auto"``
   is IV with refined instruments; with weak instruments it keeps least squares when Hausman's
   comparison finds no difference; it switches to robust IV when the residuals show outliers,
   and to least squares (backward-stable solver) when the data are fitted exactly.
3. **Instruments** of IV: ``"model"`` (refined, :mod:`dmdidc.regression.refined`): a first
   stage with the lagged inputs (or the reference's lags in closed loop) as instruments, then
   :data:`REFINEMENTS` refinement(s) with the states simulated from the previous model; or the
   fixed ``"inputs"``, ``"states"`` or ``"exogenous"`` instruments of
   :mod:`dmdidc.regression.instrumental`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from _toolbox.validation import check_in_interval
from dmdidc.errors import InsufficientExcitationError, ParameterError
from dmdidc.inference.offset import OffsetTest, offset_test
from dmdidc.model import INTEGRATOR_RCOND
from dmdidc.regression.instrumental import (
    _INSTRUMENT_RTOL,
    WEAK_INSTRUMENTS_F,
    TrimmedMoments,
    _laid_out_covariance,
    entry_error_spread,
    first_stage_f,
    hausman_variance,
    refined_affine_solution,
)
from dmdidc.regression.refined import (
    SimulatedSignals,
    instrument_rows,
    model_instruments,
    reference_projection,
)
from dmdidc.regression.robust import _MAD_TO_SIGMA, huber_solution, huber_threshold
from dmdidc.regression.solution import (
    EXACT_FIT,
    GRAM_CONDITION_LIMIT,
    REFINEMENT_CONDITION_LIMIT,
    ROUNDING_SHARE,
    GramAccumulator,
    RegressionSolution,
    accumulated_pass,
    affine_rounding_share,
    coefficient_blocks,
    lagged_inputs,
    least_squares,
    residual_rounding_share,
)
from dmdidc.statistics.fit import ordered_moments, regression_from_statistics
from dmdidc.statistics.statistics import SufficientStatistics, weighted_moments
from dmdidc.trajectories import DIAGNOSTIC_SAMPLES, subsample

__all__ = ["FitOutcome", "fit_trajectories", "instrumented_offset_decision", "offset_decision",
           "intercept_decision", "affine_rounding", "trajectory_shifts",
           "trajectory_trend_fit", "trend_parameters", "trend_shifted", "with_trend_parameters",
           "fit_with_trends", "reference_level_rule",
           "REFINEMENTS"]

#: Refinements of the model instruments after the first stage (a second one changed the median
#: A_c error on random plants at 10 dB by less than 2 % and costs a pass over the data).
REFINEMENTS = 1
#: IRLS iterations of robust IV, and its stopping rule (relative change of the coefficients).
_ROBUST_ITERATIONS = 50
_ROBUST_TOLERANCE = 1e-8


@dataclass
class FitOutcome:
    """The solution of a fit and what was decided on the way.

    Attributes
    ----------
    solution : RegressionSolution
    estimator : str
        ``"ls"``, ``"iv"``, ``"huber"`` or ``"huber_iv"``.
    instruments : str or None
    statistics : SufficientStatistics or None
        The moments of the final solve (uncentred: their ``sums`` give the means).
    offset : OffsetTest or None
        The intercept test (``detrend="auto"``).
    centred : bool
        Whether the solution is that of the affine model.
    instrument_signals : list of ndarray or None
        The refined instrument signals (for a robust refit).
    twin : RegressionSolution or None
        The other estimator on the same moments, for the LS-versus-IV comparison: least
        squares beside an IV solution, IV beside a least-squares one.
    notes : list of str
    reference : bool
        The instruments come from a reference signal (closed loop).
    instrument_kind : str or None
        How ``instrument_signals`` instrument (:func:`dmdidc.regression.refined.
        instrument_rows`): ``"simulated"`` or ``"exogenous"``.
    pretest : bool
        Least squares was kept because Hausman's comparison found no difference from IV
        (``twin`` then holds the IV solution): its intervals add the bias that
        comparison cannot exclude (:func:`dmdidc.inference.intervals.with_pretest_bias`).
    offset_note : str
        Why the intercept was not tested (``offset`` is ``None``), for the ``offset`` check;
        empty for the default reason (detrended data or too few samples).
    rounding : float
        The rounding of an affine fit solved from centred moments and not refined on the
        samples, in standard errors (:func:`affine_rounding`); 0 when refined or not affine.
    check_moments : TrimmedMoments or None
        The instrument moments of the moment checks, read from those of the long-run
        covariance (:func:`dmdidc.regression.instrumental.long_run_covariance`).
    reference_level : {None, "constant", "centred"}
        How the fixed instruments read a reference's level (:func:`reference_level_rule`), for
        the bootstrap's refits to repeat; ``None`` without a reference.
    """

    solution: RegressionSolution
    estimator: str
    instruments: str | None = None
    statistics: SufficientStatistics | None = None
    offset: OffsetTest | None = None
    centred: bool = False
    instrument_signals: list | None = None
    twin: RegressionSolution | None = None
    notes: list[str] = field(default_factory=list)
    reference: bool = False
    instrument_kind: str | None = None
    pretest: bool = False
    offset_note: str = ""
    rounding: float = 0.0
    check_moments: TrimmedMoments | None = None
    reference_level: str | None = None


def _statistics(trajectories, R: int, instruments, lags: int | None = None,
                signals: list | None = None) -> SufficientStatistics:
    """Statistics of validated trajectories; ``instruments`` a kind (with ``signals`` for
    ``"exogenous"`` and ``"simulated"``) or, as in ``from_data``, a list of exogenous signals."""
    if isinstance(instruments, list):
        instruments, signals = "exogenous", instruments
    return SufficientStatistics.from_trajectories(
        trajectories, signals if signals is not None else [None] * len(trajectories),
        max_delay=R, instruments=instruments, instrument_lags=lags)


def _input_statistics(trajectories, R: int, memo: dict) -> SufficientStatistics:
    """The statistics with the lagged inputs as instruments, once per fit: the refined-IV
    start and the least-squares fallback's IV twin both use them (one pass saved)."""
    if "inputs" not in memo:
        memo["inputs"] = _statistics(trajectories, R, "inputs")
    return memo["inputs"]


def _input_instrumented(trajectories, R: int, centred: bool, options: dict, memo: dict, *,
                        strength: bool = False) -> RegressionSolution:
    """IV on :func:`_input_statistics`, once per fit: the refined-IV start and the IV twin of
    a least-squares fallback (``ls_vs_iv``) solve the same moments (the benchmark's n = 50
    fit fell back after its start: one solve of 124 instruments saved)."""
    key = ("inputs-iv", centred, strength)
    if key not in memo:
        memo[key] = _solve(_input_statistics(trajectories, R, memo), R, "iv", centred,
                           strength=strength, **options)
    return memo[key]


def _plain_statistics(trajectories, R: int, memo: dict) -> SufficientStatistics:
    """The least-squares statistics, as the regression block of the input-instrument ones
    (which the IV twin of a least-squares fit needs anyway) plus the first ``L`` samples of
    each trajectory that those skip for their extra lags: one pass over the data, not two."""
    try:
        inputs = _input_statistics(trajectories, R, memo)
    except ValueError:                      # no inputs to instrument with: a pass of its own
        return _statistics(trajectories, R, None)
    first = R + inputs.instrument_lags      # the input statistics' first sample
    head = _statistics(_heads(trajectories, first), R, None)
    d = head.gram.shape[0]                  # [x_k; u_k .. u_k-R; x_k+1] lead both layouts
    return _joined(head, inputs, trajectories, R, head.gram + inputs.gram[:d, :d],
                   head.sums + inputs.sums[:d])


def _heads(trajectories, first: int) -> list:
    """The first ``first`` input samples of each trajectory (and their states)."""
    return [(X[:, :min(U.shape[1], first) + 1], U[:, :first]) for X, U in trajectories]


def _joined(head: SufficientStatistics, inputs: SufficientStatistics, trajectories, R: int,
            gram: np.ndarray, sums: np.ndarray) -> SufficientStatistics:
    """``head``'s layout with the moments of all samples: the head's and the input
    statistics' samples (which start where the head's end)."""
    lengths = [max(U.shape[1] - R, 0) for _, U in trajectories]
    return dataclasses.replace(head, gram=gram, sums=sums,
                               n_samples=head.n_samples + inputs.n_samples,
                               min_trajectory_samples=min(lengths),
                               max_trajectory_samples=max(lengths))


#: Samples per block of the simulated states' products in :func:`_simulated_statistics`:
#: their ``n x n`` products with the states are thin matrix products, which OpenBLAS runs
#: at half speed over 4096 samples (n = 20, K = 2e5: 18 against 10-11 ms for 256-2048).
_CROSS_BLOCK = 1024


def _state_moments(signals: list, R: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(sum_k x^_k x^_k^T, sum_k x^_k, count)`` of the simulated states over the samples
    ``k = R .. K - 1`` of every trajectory (those of the statistics)."""
    states = [E[:, R:] for E in signals if E.shape[1] > R]
    q = signals[0].shape[0]
    return (sum((s @ s.T for s in states), np.zeros((q, q))),
            sum((s.sum(axis=1) for s in states), np.zeros(q)), sum(s.shape[1] for s in states))


def _simulated_statistics(trajectories, R: int, signals, memo: dict,
                          states: tuple | None = None, recursion: tuple | None = None
                          ) -> SufficientStatistics:
    """The statistics of the simulated-state instruments (``z_k = [x^_k; u_k .. u_k-R]``)
    without a second pass over the regression data: their regression block
    ``[x_k; u_k .. u_k-R; x_k+1]`` is the input statistics' (the refined-IV start) plus the
    few samples those skip, so only the products of ``x^_k`` are new (``n`` rows instead of
    ``2 p``), summed in blocks that stay in cache.  Their products with the lagged inputs
    follow from lag 0 by the simulation's recursion (:func:`_lagged_state_products`) when
    ``recursion`` holds it, else each block's lagged inputs are one copied window of the
    time-major inputs (one product, not one per lag).  ``states``: their own moments
    (:func:`_state_moments`) when already computed.

    ``signals`` a :class:`~dmdidc.regression.refined.SimulatedSignals`: simulated and summed
    a block of trajectories at a time (their moments and recursion with them), so no
    trajectory's signal outlives its block (30 000 experiments of 200 samples at n = 50 kept
    2.4 GB of them)."""
    inputs = memo["inputs"]
    first = R + inputs.instrument_lags
    n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
    if isinstance(signals, SimulatedSignals):
        blocks = signals.blocks(first)
    else:
        whole = range(len(trajectories))
        blocks = iter([(whole, [(E, None, None) for E in signals])])
    streamed = isinstance(signals, SimulatedSignals)
    summaries, M = [None] * len(trajectories), None
    head, rows, own = None, None, [0.0, 0.0, 0]
    for block, simulated in blocks:
        part = [trajectories[i] for i in block]
        part_signals = [s[0] for s in simulated]
        piece = _statistics(_heads(part, first), R, "simulated", 0,
                            [E[:, :first] for E in part_signals])
        head = piece if head is None else head + piece
        d = piece.gram.shape[0] - part_signals[0].shape[0]   # [x_k; u_k .. u_k-R; x_k+1]
        if rows is None:
            rows = np.zeros((piece.gram.shape[0] - d, piece.gram.shape[0]))
        direct = m > 0 and recursion is None and not streamed
        _add_state_rows(rows, part, part_signals, first, R, d, direct)
        if streamed:
            for i, (_, matrix, moments) in zip(block, simulated, strict=True):
                summaries[i] = moments
                M = matrix if M is None else M
        if states is None:
            gram_s, sums_s, count_s = _state_moments(part_signals, R)
            own = [own[0] + gram_s, own[1] + sums_s, own[2] + count_s]
    if streamed and M is not None:
        recursion = (M, signals.model[1], summaries)
    gram, sums = head.gram.copy(), head.sums.copy()
    gram[:d, :d] += inputs.gram[:d, :d]
    sums[:d] += inputs.sums[:d]
    lags = slice(n, n + m * (R + 1))
    if m and recursion is not None:
        rows[:, lags] = _lagged_state_products(trajectories, recursion, first, R,
                                               inputs.gram[lags, lags])
    gram[d:] += rows
    gram[:d, d:] += rows[:, :d].T
    # the states' own block: every sample k = R .. K - 1 (the head's and the blocks')
    gram[d:, d:], sums[d:], _ = own if states is None else states
    return _joined(head, inputs, trajectories, R, gram, sums)


def _add_state_rows(rows: np.ndarray, trajectories, signals: list, first: int, R: int,
                    d: int, direct: bool) -> None:
    """Add ``sum_k x^_k [x_k; (u_k .. u_k-R if direct); x_k+1]^T`` over ``k = first .. K - 1``
    of the trajectories to ``rows`` (:func:`_simulated_statistics`)."""
    n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
    lags = slice(n, n + m * (R + 1))
    for (X, U), E in zip(trajectories, signals, strict=True):
        if U.shape[1] <= first:
            continue
        # row t of the windows is [u_t .. u_t+R] (time-major): sample k reads row k - R
        windows = np.lib.stride_tricks.sliding_window_view(
            np.ascontiguousarray(U.T).ravel(), (R + 1) * m)[::m] if direct else None
        for a in range(first, U.shape[1], _CROSS_BLOCK):
            b = min(a + _CROSS_BLOCK, U.shape[1])
            S = E[:, a:b]
            rows[:, :n] += S @ X[:, a:b].T
            if direct:
                lagged = (S @ np.ascontiguousarray(windows[a - R:b - R])).reshape(-1, R + 1, m)
                rows[:, lags] += lagged[:, ::-1].reshape(-1, m * (R + 1))
            rows[:, d - n:d] += S @ X[:, a + 1:b + 1].T


def _lagged_state_products(trajectories, recursion: tuple, first: int, R: int,
                           gamma: np.ndarray) -> np.ndarray:
    """``sum_k x^_k [u_k; ..; u_k-R]^T`` over ``k = first .. K - 1`` of every trajectory,
    shape (n, m (R + 1)), from lag 0 alone.

    The simulation is ``xi_{k+1} = M xi_k + [sum_i B^(i) u_{k-i}; 0]`` with ``x^`` the first
    ``n`` states of ``xi`` (the others: a reflected model's imaginary part), so ``D_j = sum_k
    xi_k u_{k-j}^T`` over ``k = a .. K - 1`` obeys ``D_{j+1} = M D_j + [sum_i B^(i) Gamma_ij;
    0] + xi_a u_{a-1-j}^T - xi_K u_{K-1-j}^T`` (the sum shifted by one sample, its two end
    terms put back), with ``Gamma_ij = sum_k u_{k-i} u_{k-j}^T`` the lagged inputs' moments
    over the same samples (``gamma``: the input statistics').  ``recursion = (M, B_blocks,
    moments)``, ``moments`` per trajectory ``(D_0, xi_a, xi_{K-1})`` (``None`` for those of
    ``K <= a``) from the simulation (:func:`dmdidc.regression.refined.simulated_recursions`):
    one ``n x m`` product per sample instead of ``n x m (R + 1)``.
    """
    M, B_blocks, moments = recursion
    n, m = B_blocks.shape[1], B_blocks.shape[2]
    D = np.zeros((M.shape[0], m))
    ends = np.zeros((R, M.shape[0], m))        # the end terms of D_1 .. D_R
    for (_, U), summary in zip(trajectories, moments, strict=True):
        if summary is None:
            continue
        K = U.shape[1]
        D0, start, last = summary
        D += D0
        end = M @ last                             # xi_K: one step past the data
        end[:n] += np.einsum("inm,mi->n", B_blocks, U[:, K - 1 - np.arange(R + 1)])
        # column j: u_{a-1-j} and u_{K-1-j}, j = 0 .. R - 1
        ends += (np.einsum("s,mj->jsm", start, U[:, first - 1 - np.arange(R)])
                 - np.einsum("s,mj->jsm", end, U[:, K - 1 - np.arange(R)]))
    forced = B_blocks.transpose(1, 0, 2).reshape(n, -1) @ gamma   # block j: sum_i B^(i) G_ij
    out = np.empty((n, m * (R + 1)))
    out[:, :m] = D[:n]
    for j in range(R):
        D = M @ D + ends[j]
        D[:n] += forced[:, j * m:(j + 1) * m]
        out[:, (j + 1) * m:(j + 2) * m] = D[:n]
    return out


def _solve(stats: SufficientStatistics, R: int, estimator: str, centred: bool, *,
           svd_rank: int | None, rank_rtol: float, strength: bool = True,
           reference_level: str | None = None) -> RegressionSolution:
    """``estimator``'s solve of ``stats``, affine when ``centred``; ``reference_level``: the
    instruments are a reference's lags, read independently of its level as
    :func:`reference_level_rule` says (:func:`~dmdidc.statistics.fit.
    regression_from_statistics`)."""
    return regression_from_statistics(stats.centered() if centred else stats, R,
                                      estimator=estimator, svd_rank=svd_rank,
                                      rank_rtol=rank_rtol, strength=strength,
                                      reference_level=reference_level)


def reference_level_rule(stats: SufficientStatistics, R: int, offset: str,
                         test: OffsetTest | None, *, level: float, **options) -> str:
    """How IV through the origin on a reference's lags reads the reference's level
    (:func:`~dmdidc.statistics.fit.regression_from_statistics`): by the intercept evidence of
    ``detrend="auto"``, whatever the fit's intercept rule ``offset`` (:func:`fit_trajectories`).

    Either way ``reference + c`` gives the fit of ``reference``.  ``"constant"`` (the
    constant among the instruments: the steady state is a moment) when neither IV's nor least
    squares' intercept test finds an intercept (:func:`instrumented_offset_decision`): the
    origin is then the equilibrium, and a set point's level excites the steady state (a mixed
    loop at level 20: ``A_c`` 2 % off with the constant, 33 % without).  ``"centred"`` (the
    instruments about their mean) otherwise, or with detrended data: zero-mean instruments
    leave an intercept the model does not fit (``detrend=None``) in the error without bias,
    and fit the slopes of the affine fit exactly; the constant's moment would force the steady
    state through the origin.  The smart-grid fleet (states about a public operating point,
    ``detrend=None``): IV's test, which alone decides the ``offset`` check there, misses the
    intercept (``T^2`` 13.2 < 13.6), least squares' finds it (2.4e3); with the constant its
    delay was 30 s off and ``A_d`` unstable.

    Parameters
    ----------
    stats : SufficientStatistics
        The uncentred moments with the reference's lags as instruments.
    R : int
    offset : {"auto", "test", "none", "centred"}
        As in :func:`fit_trajectories`.
    test : OffsetTest or None
        The intercept test of :func:`intercept_decision` under ``offset``.
    level : float
    **options
        ``svd_rank``, ``rank_rtol``.

    Returns
    -------
    {"constant", "centred"}

    Examples
    --------
    See :func:`intercept_decision`: a sensor offset that IV's test alone does not decide.
    """
    if offset == "test" and test is not None and not test.significant:
        # IV's test alone decides the check (no false alarm); the instruments ask least
        # squares' too, as detrend="auto" does
        test = offset_decision(stats, R, "ls", level=level, **options) or test
    if offset in ("auto", "test") and test is not None and not test.significant:
        return "constant"
    return "centred"


def _affine_least_squares(plain: SufficientStatistics, trajectories, R: int, method: str,
                          chunk_size: int, options: dict) -> RegressionSolution:
    """The affine least-squares fit: from the centred moments, or from a QR pass's centred
    factor for ``method="qr"`` and, under ``"auto"``, where the centred normal equations'
    rounding could reach :data:`~dmdidc.regression.solution.ROUNDING_SHARE` of a standard
    error (:func:`~dmdidc.regression.solution.affine_rounding_share`; no refinement here:
    its residuals would need the intercept) or of the residual covariance
    (:func:`~dmdidc.regression.solution.residual_rounding_share`, of the uncentred targets'
    squares: the centred ones are their difference), as :func:`least_squares` does for the
    fit through the origin."""
    if method != "qr":
        solution = _solve(plain, R, "ls", True, **options)
        if method == "gram":
            return solution
        cond = solution.condition_number
        gram = np.diag(plain.gram)
        if residual_rounding_share(solution, gram[plain.n_regressors:]) <= ROUNDING_SHARE and (
                cond <= GRAM_CONDITION_LIMIT or (
                    cond <= REFINEMENT_CONDITION_LIMIT and affine_rounding_share(
                        solution, gram, plain.sums, plain.n_samples) <= ROUNDING_SHARE)):
            return solution
    return accumulated_pass(trajectories, R, "qr", chunk_size).solution(centred=True,
                                                                        **options)


def offset_decision(stats: SufficientStatistics, R: int, estimator: str, *, level: float,
                    svd_rank: int | None = None, rank_rtol: float = 1e-10) -> OffsetTest | None:
    """The intercept test (:mod:`dmdidc.inference.offset`) on ``stats``, or ``None`` when the
    data cannot afford an intercept (too few samples)."""
    if stats.n_samples <= stats.n_regressors + 1:
        return None
    try:
        # the test reads coefficients and covariances only: no instrument strength
        centred = _solve(stats, R, estimator, True, svd_rank=svd_rank, rank_rtol=rank_rtol,
                         strength=False)
    except InsufficientExcitationError:
        return None
    return offset_test(centred, stats, level=level)


def instrumented_offset_decision(stats: SufficientStatistics, R: int, *, level: float,
                                 offset: str = "auto", **options) -> OffsetTest | None:
    """The intercept test of an IV fit: IV's, or (``offset="auto"``, which fits the affine
    model when significant) least squares' on the same moments when IV's finds nothing.

    IV's test is valid under measurement noise but weak: the lagged inputs instrument the
    states' mean poorly, so ``Theta mean(phi)`` is imprecise and hides the intercept (T^2 of 2-14
    against critical values of 18-22 on random plants with sensor offsets of 0.1-3 state rms,
    where least squares' is 1e3-2e4; ``docs/scripts/offset_sweep.py``).  Least squares' is
    powerful and, without an offset, stayed below the critical value on the same plants; a
    false detection costs ``n`` degrees of freedom, a missed offset the model (``A_d``'s
    eigenvalues pushed towards 1).  But noisy states bias least squares, and with inputs
    recorded around a non-zero mean the bias times the mean regressor looks like an intercept
    (T^2 of 60 against 18 on offset-free data), so ``offset="test"``, where a significant
    offset fails the check (a warning), keeps IV's test alone (no false alarm)."""
    test = offset_decision(stats, R, "iv", level=level, **options)
    if test is not None and (offset != "auto" or test.significant):
        return test
    return offset_decision(stats, R, "ls", level=level, **options) or test


def _centred(offset: str, test: OffsetTest | None) -> bool:
    """Whether the fit is affine: decided earlier (``"centred"``) or by the test (``"auto"``)."""
    return offset == "centred" or (offset == "auto" and test is not None and test.significant)


def intercept_decision(stats: SufficientStatistics, R: int, estimator: str, *, level: float,
                       offset: str, **options) -> tuple[OffsetTest | None, bool]:
    """The intercept rule of every fit path (``fit``, ``partial_fit``, ``fit_statistics``):
    the test and whether the fit is affine, decided once from the uncentred moments ``stats``.

    Parameters
    ----------
    stats : SufficientStatistics
        Uncentred moments of the regression (their ``sums`` give the means).
    R : int
    estimator : {"ls", "iv"}
        ``"iv"`` runs :func:`instrumented_offset_decision` (IV's test, then least squares'),
        ``"ls"`` least squares' test (:func:`offset_decision`).
    level : float
    offset : {"auto", "test", "none", "centred"}
        As in :func:`fit_trajectories`.
    **options
        ``svd_rank``, ``rank_rtol``.

    Returns
    -------
    test : OffsetTest or None
        ``None`` when not tested (``offset`` ``"none"`` or ``"centred"``, too few samples).
    centred : bool

    Raises
    ------
    ParameterError
        ``estimator`` or ``offset`` not one of the accepted names, ``level`` not in (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, SufficientStatistics, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 2000, rng=0)
    >>> X = plant.simulate([0.0], U) + 0.01 * np.random.default_rng(1).standard_normal(2001)
    >>> for offset in (0.0, 3.0):                  # a sensor offset of 3
    ...     stats = SufficientStatistics.from_data(X + offset, U, max_delay=3, instruments=[U])
    ...     test, centred = intercept_decision(stats, 3, "ls", level=1e-3, offset="auto")
    ...     iv, _ = intercept_decision(stats, 3, "iv", level=1e-3, offset="test")
    ...     print(test.significant, centred, reference_level_rule(stats, 3, "test", iv,
    ...                                                           level=1e-3))
    False False constant
    True True centred
    """
    if estimator not in ("ls", "iv") or offset not in ("auto", "test", "none", "centred"):
        raise ParameterError(f"estimator={estimator!r}, offset={offset!r}: accepted estimator "
                             f"'ls' or 'iv' and offset 'auto', 'test', 'none' or 'centred'")
    level = check_in_interval("level", level, 0.0, 1.0, low_open=True, high_open=True)
    test = None
    if offset in ("auto", "test"):
        test = (instrumented_offset_decision(stats, R, level=level, offset=offset, **options)
                if estimator == "iv" else offset_decision(stats, R, "ls", level=level, **options))
    return test, _centred(offset, test)


def affine_rounding(stats: SufficientStatistics, solution: RegressionSolution, R: int,
                    estimator: str) -> float:
    """How far the rounding of the uncentred moments may move an affine fit solved from the
    centred ones (``gram - sums sums^T / N``), in standard errors: the largest ratio over the
    coefficients.

    Centring cancels the digits of ``mean^2 / variance``: each moment keeps the rounding of
    its uncentred value, ``eps sqrt(G_ii G_jj)`` (independent per entry), which the exact
    derivative of the solve (:func:`~dmdidc.regression.instrumental.entry_error_spread`)
    carries to the coefficients.  Instruments that carry the offset (lagged states) suffer,
    the lagged inputs (no offset) hardly: two close modes, offset 10 state deviations,
    relative noise 1e-6, K 2e4 gave 0.19-0.32 for lagged-state instruments (actual errors
    against the same estimator on centred data 0.2-0.7), 0.34-0.58 for least squares (actual
    0.47-1.25) and 3e-7 for input instruments (actual 3e-8 - 2e-7).
    An exact fit (relative residual at most :data:`~dmdidc.regression.solution.EXACT_FIT`:
    standard errors of rounding, not noise) is measured against the accuracy it claims,
    ``EXACT_FIT`` times each row's coefficient norm.

    Parameters
    ----------
    stats : SufficientStatistics
        The uncentred moments.
    solution : RegressionSolution
        The affine ``estimator`` fit of ``stats.centered()``.
    R : int
    estimator : {"ls", "iv"}

    Returns
    -------
    float
        ``inf`` when the derivative does not exist (singular moments).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, SufficientStatistics, random_excitation
    >>> from dmdidc.statistics.fit import regression_from_statistics
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 2000, rng=0)
    >>> X = plant.simulate([0.0], U) + 0.01 * np.random.default_rng(1).standard_normal(2001)
    >>> stats = SufficientStatistics.from_data(X + 3.0, U, max_delay=3, instruments="states")
    >>> solution = regression_from_statistics(stats.centered(), 3, estimator="iv")
    >>> bool(affine_rounding(stats, solution, 3, "iv") < 1e-6)     # noisy data: nothing lost
    True
    """
    G, s, _, p, instruments = ordered_moments(stats, R, estimator)
    try:
        spread = entry_error_spread(
            G - np.outer(s, s) / max(stats.n_samples, 1), solution.coefficients,
            n_states=stats.n_states, n_regressors=p, instruments=instruments,
            entry_scale=np.sqrt(np.finfo(float).eps * np.clip(np.diag(G), 0.0, None)))
    except np.linalg.LinAlgError:
        return float("inf")
    if solution.relative_residual <= EXACT_FIT:
        scale = EXACT_FIT * np.linalg.norm(solution.coefficients, axis=1, keepdims=True)
    else:
        scale = solution.standard_errors
    return float(np.max(spread / np.where(scale > 0, scale, np.inf), initial=0.0))


def _refined_affine(stats: SufficientStatistics, solution: RegressionSolution, R: int,
                    trajectories, signals: list | None, options: dict) -> RegressionSolution:
    """An affine IV fit of fixed instruments (``stats`` their uncentred moments), refined on
    the samples (:func:`~dmdidc.regression.instrumental.refined_affine_solution`) where the
    centred moments' rounding may reach :data:`ROUNDING_SHARE` of a standard error
    (:func:`affine_rounding`)."""
    if affine_rounding(stats, solution, R, "iv") <= ROUNDING_SHARE:
        return solution
    layout, p, n = stats.layout, stats.n_regressors, stats.n_states
    instruments = layout.instrument_indices
    signals = [None] * len(trajectories) if signals is None else signals

    def blocks():
        for (X, U), E in zip(trajectories, signals, strict=True):
            V = layout.vectors(X, U, E)
            yield V[:p], V[p:p + n], V[instruments]
    return refined_affine_solution(solution, blocks(), **options)


def trajectory_trend_fit(trajectories, R: int, *, kind: str = "constant") -> np.ndarray:
    """Least squares of ``x_{k+1} = Theta phi_k + c_t`` (``kind="constant"``) or
    ``x_{k+1} = Theta phi_k + c_t + g_t k`` (``"linear"``), one intercept (and slope) per
    trajectory ``t``; returns ``Theta`` (the intercepts follow from it:
    :func:`trajectory_shifts`).

    By Frisch-Waugh, partialling out the per-trajectory regressors is removing each row's
    mean (or least-squares line) over the trajectory's own regression samples ``k = R .. K -
    1`` (``x_{k+1}``, ``x_k`` and every input lag over its own window, which is not what
    detrending the signals does).  Solved by QR of each trajectory's rows, their triangular
    factors stacked (backward stable: no squared condition number on exact data).

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
    R : int
    kind : {"constant", "linear"}, default "constant"

    Returns
    -------
    ndarray, shape (n, n + m (R + 1))

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> parts = []
    >>> for c in (0.3, -2.0):                      # two trajectories, two intercepts
    ...     U = rng.standard_normal((1, 100))
    ...     X = np.zeros((1, 101))
    ...     for k in range(100):
    ...         X[:, k + 1] = 0.9 * X[:, k] + U[:, k] + c
    ...     parts.append((X, U))
    >>> np.round(trajectory_trend_fit(parts, 0), 12)
    array([[0.9, 1. ]])
    """
    triangle = _within_triangle(trajectories, R, kind)
    p = triangle.shape[1] - trajectories[0][0].shape[0]
    return np.linalg.lstsq(triangle[:p, :p], triangle[:p, p:], rcond=None)[0].T


def _within_triangle(trajectories, R: int, kind: str) -> np.ndarray:
    """The triangular factor of the regression rows ``[phi_k, x_{k+1}]`` with each
    trajectory's trend removed (:func:`trajectory_trend_fit`)."""
    if kind not in ("constant", "linear"):
        raise ParameterError(f"kind must be 'constant' or 'linear'; got {kind!r}")
    factors = []
    for X, U in trajectories:
        K = U.shape[1]
        if K <= R:
            continue
        rows = np.concatenate([X[:, R:K], lagged_inputs(U, R), X[:, R + 1:]]).T
        trend = np.ones((K - R, 1)) if kind == "constant" else np.stack(
            [np.ones(K - R), np.arange(K - R) - (K - R - 1) / 2.0], axis=1)
        basis = np.linalg.qr(trend)[0][:, :min(K - R, trend.shape[1])]
        rows -= basis @ (basis.T @ rows)                 # Frisch-Waugh: the trends out
        factors.append(np.linalg.qr(rows, mode="r"))
    if not factors:
        raise InsufficientExcitationError(f"no trajectory has more than max_delay = {R} input "
                                          f"samples: no regression sample to fit trends on")
    return np.linalg.qr(np.concatenate(factors), mode="r")


def trajectory_shifts(trajectories, coefficients: np.ndarray, R: int, *,
                      kind: str = "constant") -> list[np.ndarray]:
    """The state (and input) trend of each trajectory that absorbs its own intercept
    (``kind="constant"``) or its own intercept and slope in ``k`` (``"linear"``) under the
    model ``coefficients``.

    With ``r_k = x_{k+1} - Theta phi_k`` the residuals over the trajectory's regression samples
    ``k = R .. K - 1`` and ``c_t + g_t k`` their mean (``g_t = 0``) or least-squares line,
    the trend ``z_t + w_t k`` subtracted from the states and ``v_t + s_t k`` from the inputs
    removes it exactly: it changes ``r_k`` by ``(I - A_d) z_t + w_t - B v_t + B' s_t + ((I -
    A_d) w_t - B s_t) k`` (``B = sum_i B^(i)``, ``B' = sum_i i B^(i)``), so ``(I - A_d) w_t -
    B s_t = g_t`` and ``(I - A_d) z_t - B v_t = c_t - w_t - B' s_t``.  The states take what
    ``I - A_d`` can; the inputs only the part along an eigenvalue 1 of ``A_d`` (an integrator,
    where an input's mean drives a ramp that no state offset absorbs): ``v_t = s_t = 0``
    without one.

    Why: ``detrend="constant"`` removes each trajectory's mean from every signal, but the
    regression's samples see the states over ``R .. K`` and each input lag over its own window,
    so an intercept ``c_t`` of the order of the edge samples' share (``R / K``) remains; a fit
    through the origin then biased the delay on exact data (1e-6 T at K 3000, 10 random plants)
    and its residuals failed the whiteness and state-completeness checks (10 of 10 plants at
    60 dB).  ``detrend="linear"`` leaves, for the same reason, a term ``c_t + g_t k`` that an
    intercept cannot absorb (exact data: delay 5e-7 T median, 1e-5 T largest, whiteness failed
    on 10 of 10 random plants).  With ``coefficients`` from :func:`trajectory_trend_fit` (the
    least-squares fit of the model with one intercept, and slope, per trajectory), least
    squares through the origin on the shifted states is that fit exactly (its residuals and
    coefficients are the same and no smaller sum of squares exists).  What neither the
    states nor the inputs can absorb (an integrator no input drives) stays: the least-squares
    shifts.

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
    coefficients : ndarray, shape (n, n + m (R + 1))
    R : int
    kind : {"constant", "linear"}, default "constant"

    Returns
    -------
    list of ndarray, shape (n + m, 2)
        Per trajectory, the states' (rows ``:n``) and the inputs' (rows ``n:``) value at
        sample 0 and slope per sample (zero for ``"constant"``), as
        :attr:`~dmdidc.DMDidc.state_trend_` and ``input_trend_``; zero for trajectories
        without a regression sample.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> U = rng.standard_normal((1, 200))
    >>> X = np.zeros((1, 201))
    >>> for k in range(200):
    ...     X[:, k + 1] = 0.5 * X[:, k] + U[:, k] + 0.3        # intercept 0.3: x_op = 0.6
    >>> [z] = trajectory_shifts([(X, U)], np.array([[0.5, 1.0]]), 0)
    >>> np.round(z, 12)                  # the state's (0.6, 0), the input's (0, 0)
    array([[0.6, 0. ],
           [0. , 0. ]])
    >>> drifted = X + 0.01 * np.arange(201)                  # a sensor drift 0.01 per sample
    >>> [z] = trajectory_shifts([(drifted, U)], np.array([[0.5, 1.0]]), 0, kind="linear")
    >>> np.round(z, 12)
    array([[0.6 , 0.01],
           [0.  , 0.  ]])
    """
    if kind not in ("constant", "linear"):
        raise ParameterError(f"kind must be 'constant' or 'linear'; got {kind!r}")
    n = coefficients.shape[0]
    m = (coefficients.shape[1] - n) // (R + 1)
    I_A = np.eye(n) - coefficients[:, :n]
    blocks = coefficients[:, n:].reshape(n, R + 1, m)
    B_sum, B_lag = blocks.sum(axis=1), np.einsum("nim,i->nm", blocks, np.arange(R + 1.0))
    shifts = []
    for X, U in trajectories:
        K = U.shape[1]
        if K <= R:
            shifts.append(np.zeros((n + m, 2)))
            continue
        residual = X[:, R + 1:] - coefficients @ np.concatenate([X[:, R:K],
                                                                 lagged_inputs(U, R)])
        mean, slope = residual.mean(axis=1), np.zeros(n)
        if kind == "linear" and K - R > 1:
            k = np.arange(R, K, dtype=float)
            k -= k.mean()
            slope = residual @ k / (k @ k)
        w, s = _operating_shift(I_A, B_sum, slope)
        # the line's value at k = 0 is mean - slope * mean(k)
        z, v = _operating_shift(I_A, B_sum, mean - slope * (R + K - 1) / 2.0 - w - B_lag @ s)
        shifts.append(np.stack([np.concatenate([z, v]), np.concatenate([w, s])], axis=1))
    return shifts


def trend_shifted(trajectories, R: int, kind: str
                  ) -> tuple[list, list[np.ndarray], np.ndarray]:
    """``trajectories`` shifted by their own trends (:func:`trajectory_shifts` under the fit
    of :func:`trajectory_trend_fit`), after which least squares through the origin is the
    fit with one intercept (and slope) per trajectory; those shifts; and the triangular
    factor ``F`` (p x p) of the regressors with the trends removed: by Frisch-Waugh the
    fit's unscaled covariance is ``(F^T F)^-1`` (:func:`with_trend_parameters`), not the
    inverse Gram of the shifted regressors, whose per-trajectory means it leaves in.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> parts = []
    >>> for c in (0.3, -2.0):
    ...     U = rng.standard_normal((1, 100))
    ...     X = np.zeros((1, 101))
    ...     for k in range(100):
    ...         X[:, k + 1] = 0.9 * X[:, k] + U[:, k] + c
    ...     parts.append((X, U))
    >>> shifted, shifts, _ = trend_shifted(parts, 0, "constant")
    >>> [round(float(z[0, 0]), 9) for z in shifts]      # the operating points c / (1 - 0.9)
    [3.0, -20.0]
    """
    n = trajectories[0][0].shape[0]
    triangle = _within_triangle(trajectories, R, kind)
    p = triangle.shape[1] - n
    theta = np.linalg.lstsq(triangle[:p, :p], triangle[:p, p:], rcond=None)[0].T
    shifts = trajectory_shifts(trajectories, theta, R, kind=kind)
    shifted = [(X - z[:n, :1] - z[:n, 1:] * np.arange(X.shape[1]),
                U - z[n:, :1] - z[n:, 1:] * np.arange(U.shape[1]))
               for (X, U), z in zip(trajectories, shifts, strict=True)]
    return shifted, shifts, triangle[:p, :p]


def fit_with_trends(trajectories, R: int, kind: str,
                    fit: Callable[[list], FitOutcome]) -> tuple[FitOutcome, list, list]:
    """``fit`` of the ``trajectories`` shifted by their own trends (:func:`trend_shifted`),
    its outcome with the trends counted (:func:`with_trend_parameters`); and the shifted
    trajectories and their shifts.  The one path of a fit and of each bootstrap resample
    (:mod:`dmdidc.resampling`) with ``detrend="constant"`` or ``"linear"``."""
    shifted, shifts, within = trend_shifted(trajectories, R, kind)
    count = trend_parameters([U.shape[1] for _, U in trajectories], R, kind)
    return with_trend_parameters(fit(shifted), count, within), shifted, shifts


def trend_parameters(lengths: list[int], R: int, kind: str) -> int:
    """The intercepts (and slopes) one state equation spends on the per-trajectory trends of
    :func:`trajectory_trend_fit`: one (``kind="constant"``) or two (``"linear"``) per
    trajectory of ``lengths`` input samples with a regression sample (a trajectory of one
    regression sample has its line's intercept only).

    Why: the through-origin fit on the shifted trajectories is the fit with those trends
    (:func:`trajectory_shifts`), so by Frisch-Waugh its covariance is exact when the residual
    variance divides by ``N - p - trend_parameters``; with 60 trajectories of 20 samples that
    is 60 (``"constant"``) or 120 (``"linear"``) of about 1000 degrees of freedom.

    Examples
    --------
    >>> trend_parameters([40, 40, 2], 2, "linear")      # the third has no regression sample
    4
    """
    width = 1 if kind == "constant" else 2
    return sum(min(K - R, width) for K in lengths if K > R)


def with_trend_parameters(outcome: FitOutcome, count: int,
                          within: np.ndarray | None = None) -> FitOutcome:
    """``outcome`` with ``count`` more intercepts (:func:`trend_parameters`) in its
    solution's (and twin's) residual degrees of freedom and residual covariance, rescaled
    from the degrees of freedom it had (the block test reads them too); and, given the
    triangular factor ``within`` of the detrended regressors (:func:`trend_shifted`), a
    full-rank least-squares solution's unscaled covariance ``(F^T F)^-1`` (Frisch-Waugh).

    Why the factor: the shifted regressors keep a per-trajectory mean of the size of the
    operating point's error, which adds ``N_t phibar phibar^T`` to their Gram; for a slow
    mode (``a`` near 1) and short trajectories it is of the Gram's own size (``(1 + a) /
    ((1 - a) N_t)``), and the standard errors from it were too small.  Instrumental and
    robust solutions keep theirs (their unscaled covariance is not the regressors' Gram)."""
    def counted(solution: RegressionSolution | None) -> RegressionSolution | None:
        if solution is None or count == 0:
            return solution
        unscaled = solution.unscaled_covariance
        if (within is not None and solution.estimator == "ls"
                and solution.rank == within.shape[0]):
            inverse = scipy.linalg.solve_triangular(within, np.eye(len(within)))
            unscaled = inverse @ inverse.T
        before = max(solution.dof, 1)
        after = solution.n_samples - solution.rank - solution.intercepts - count
        if after < 1:
            raise InsufficientExcitationError(
                f"the data provide {solution.n_samples} regression samples for "
                f"{solution.rank} coefficients and {solution.intercepts + count} trend "
                f"parameters (detrend's intercepts, and slopes, per trajectory): no residual "
                f"degree of freedom is left; use longer or fewer trajectories, or subtract a "
                f"known operating point instead of detrend")
        factor = before / after
        sampling = solution.sampling_covariance
        return dataclasses.replace(
            solution, intercepts=solution.intercepts + count, unscaled_covariance=unscaled,
            residual_covariance=solution.residual_covariance * factor,
            sampling_covariance=None if sampling is None else sampling.scaled(factor))
    return dataclasses.replace(outcome, solution=counted(outcome.solution),
                               twin=counted(outcome.twin))


#: Singular values of ``I - A_d`` below this share of the largest are an integrator's (an
#: eigenvalue 1 estimated to rounding; the share :func:`dmdidc.model.steady_state` uses,
#: :data:`dmdidc.model.INTEGRATOR_RCOND`): a state shift along them would be of the size of
#: the intercept over rounding, so the input shift takes that part.
_INTEGRATOR_RCOND = INTEGRATOR_RCOND


def _operating_shift(I_A: np.ndarray, B_sum: np.ndarray, target: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(z, v)`` with ``(I - A_d) z - B_sum v = target``: the state shift where ``I - A_d``
    is regular, the input's for the part along an integrator (``v = 0`` without one)."""
    left, singular, _ = np.linalg.svd(I_A)
    null = left[:, singular <= _INTEGRATOR_RCOND * singular[0]]    # I - A_d's left null space
    v = np.zeros(B_sum.shape[1])
    if null.shape[1] and B_sum.shape[1]:
        # only the inputs reach the null space: N^T (-B_sum v) = N^T target
        v = np.linalg.lstsq(-null.T @ B_sum, null.T @ target, rcond=None)[0]
    z = np.linalg.lstsq(I_A, target + B_sum @ v, rcond=_INTEGRATOR_RCOND)[0]
    return z, v


def _model(solution: RegressionSolution, n: int, m: int, R: int
           ) -> tuple[np.ndarray, np.ndarray]:
    return coefficient_blocks(solution.coefficients, n, m, R)


def fit_trajectories(trajectories: list[tuple[np.ndarray, np.ndarray]],
                     references: list[np.ndarray] | None, *, max_delay: int, estimator: str,
                     instruments: str, instrument_lags: int | None, offset: str,
                     method: str, svd_rank: int | None, rank_rtol: float, chunk_size: int,
                     level: float, memo: dict | None = None,
                     reference_level: str | None = None) -> FitOutcome:
    """The regression of in-memory trajectories (module notes).

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
        Already detrended when ``detrend`` was ``"constant"`` or ``"linear"``.
    references : list of ndarray (q, K) or None
        The reference (dither) of a closed loop, or exogenous instrument signals.
    max_delay : int
    estimator : {"auto", "ls", "iv", "huber", "huber_iv"}
    instruments : {"auto", "model", "inputs", "states", "exogenous"}
    instrument_lags, method, svd_rank, rank_rtol, chunk_size
        As in :class:`~dmdidc.DMDidc`.
    offset : {"auto", "test", "none", "centred"}
        Test the intercept and keep it when significant (``"auto"``), only test it (the
        model goes through the origin; a significant offset fails the check), neither
        (the data were detrended), or keep it untested (``"centred"``: an earlier fit on
        these data decided it, e.g. for bootstrap resamples, :mod:`dmdidc.resampling`).
    level : float
        Level of the offset test and of the outlier test of ``estimator="auto"``.
    memo : dict, optional
        Statistics already computed on these trajectories (filled as the fit goes; the
        fallbacks of one fit share it).
    reference_level : {None, "constant", "centred"}, optional
        How instruments from ``references`` read their level; default
        :func:`reference_level_rule` (a bootstrap refit passes its fit's).

    Returns
    -------
    FitOutcome
    """
    R = max_delay
    memo = {} if memo is None else memo
    n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
    if m == 0 and estimator == "auto" and references is None:
        # No inputs: plain DMD. Instruments need an excitation, so least squares it is.
        outcome = fit_trajectories(trajectories, None, max_delay=R, estimator="ls",
                                   instruments="auto", instrument_lags=None, offset=offset,
                                   method=method, svd_rank=svd_rank, rank_rtol=rank_rtol,
                                   chunk_size=chunk_size, level=level, memo=memo)
        outcome.notes.append("no inputs: plain DMD by least squares (instrumental variables "
                             "need an excitation; biased when the states are noisy)")
        return outcome
    kind = "iv" if estimator == "auto" else estimator
    options = dict(svd_rank=svd_rank, rank_rtol=rank_rtol)
    if kind in ("ls", "huber"):
        plain = _plain_statistics(trajectories, R, memo)
        test, centred = intercept_decision(plain, R, "ls", level=level, offset=offset,
                                           **options)
        if kind == "huber":       # fits through the origin: an offset fails its check
            return FitOutcome(huber_solution(trajectories, R, rank_rtol=rank_rtol)[0], "huber",
                              offset=test)
        twin = _instrumental_twin(trajectories, R, centred, options, memo)
        if centred:
            solution = _affine_least_squares(plain, trajectories, R, method, chunk_size,
                                             options)
            return FitOutcome(solution, "ls", None, plain, test, True, twin=twin)
        # the Gram pass of the solver is the statistics' own: start from them
        moments = GramAccumulator.from_moments(plain.gram, plain.sums, plain.n_samples,
                                               n_states=n, n_inputs=m, max_delay=R)
        solution, _ = least_squares(trajectories, R, method=method, chunk_size=chunk_size,
                                    accumulated=moments, **options)
        return FitOutcome(solution, "ls", None, plain, test, False, twin=twin)
    chosen = "model" if instruments == "auto" else instruments
    if chosen != "model":
        signals = references if chosen == "exogenous" else chosen
        stats = _statistics(trajectories, R, signals, instrument_lags)
        test, centred = intercept_decision(stats, R, "iv", level=level, offset=offset,
                                           **options)
        read = (reference_level or reference_level_rule(stats, R, offset, test, level=level,
                                                        **options)
                if chosen == "exogenous" else None)
        solution = _solve(stats, R, "iv", centred, reference_level=read, **options)
        if centred:
            solution = _refined_affine(stats, solution, R, trajectories,
                                       references if chosen == "exogenous" else None, options)
        return FitOutcome(solution, "iv", chosen, stats,
                          test, centred, twin=_twin(stats, R, "ls", centred, options),
                          reference=chosen == "exogenous", reference_level=read)
    try:
        outcome = _refined(trajectories, references, R=R, n=n, m=m, offset=offset,
                           level=level, options=options, memo=memo,
                           reference_level=reference_level)
    except InsufficientExcitationError as exc:
        if estimator != "auto" or references is not None:
            raise
        # Too few samples (or too little excitation) for instruments, enough for least
        # squares (n + m (R + 1) samples suffice, Theorem 9.4.5): fit it and say so.
        outcome = fit_trajectories(trajectories, None, max_delay=R, estimator="ls",
                                   instruments="auto", instrument_lags=None, offset=offset,
                                   method=method, chunk_size=chunk_size, level=level,
                                   memo=memo, **options)
        note = (f"instrumental variables are not identified by these data ({exc}); least "
                f"squares was fitted instead (biased when the states are measured with noise)")
        longest = max(U.shape[1] for _, U in trajectories)
        if len(trajectories) > 1 and longest < 4 * (R + 1):
            # short pieces (missing='drop' splits at every gap): the instruments' lags eat them
            note += (f"; the longest of the {len(trajectories)} experiments has {longest} "
                     f"input samples, too few for the instruments' lags: interpolate short "
                     f"gaps (IdData(..., missing='interpolate')), or fit lagged-state "
                     f"instruments (estimator='iv', instruments='states'), which need fewer")
        outcome.notes.append(note)
        return outcome
    if kind == "huber_iv":
        return robust_refit(outcome, trajectories, R)
    if estimator == "auto" and outcome.solution.relative_residual <= EXACT_FIT \
            and references is None:
        # Noise-free data: no errors in variables for IV to remove, and least squares has the
        # backward-stable solver (QR, refinement); IV from moments loses cond^2 * eps.
        exact = fit_trajectories(trajectories, None, max_delay=R, estimator="ls",
                                 instruments="auto", instrument_lags=None, offset=offset,
                                 method=method, chunk_size=chunk_size, level=level, memo=memo,
                                 **options)
        exact.notes.append("the data are fitted exactly (no noise): least squares with the "
                           "backward-stable solver")
        return exact
    if estimator != "auto":
        return outcome
    instrumented = dataclasses.replace(outcome, notes=list(outcome.notes))
    if not _least_squares_suffices(outcome, level):
        instrumented = outcome          # IV kept: its notes (the pretest's say why) go on
    if outcome.solution.relative_residual > EXACT_FIT:
        # on the residuals of the fit kept, least squares' too: outliers decide Hausman's
        # comparison, and a least squares kept by it skipped this test (10 of 16 random plants
        # with 8 outliers of 30 sd kept it, eigenvalues 0.33-0.72 off); IV's own residuals
        # with weak instruments are no test of the data (transient-dominated records' first
        # samples looked like outliers)
        z, critical = _largest_residual(outcome, trajectories, R, level)
        if z > critical:
            instrumented.notes.append(f"outliers: a residual {z:.3g} robust standard "
                                      f"deviations from the median (threshold "
                                      f"{critical:.3g}): switched to robust IV")
            return robust_refit(instrumented, trajectories, R)
    return outcome


def _twin(stats, R, estimator, centred, options, strength: bool = True
          ) -> RegressionSolution | None:
    """The other estimator on the same moments (for the LS-versus-IV check)."""
    try:
        return _solve(stats, R, estimator, centred, strength=strength, **options)
    except InsufficientExcitationError:
        return None


def _instrumental_twin(trajectories, R: int, centred: bool, options: dict, memo: dict
                       ) -> RegressionSolution | None:
    """IV with the lagged inputs as instruments, beside a least-squares fit (``ls_vs_iv``,
    which compares coefficients and standard errors only: no instrument strength, ~1/3 of
    the twin's cost)."""
    try:
        return _input_instrumented(trajectories, R, centred, options, memo)
    except (InsufficientExcitationError, ValueError):
        return None


def _least_squares_suffices(outcome: FitOutcome, level: float) -> bool:
    """With weak instruments, Hausman's comparison: keep least squares (the more precise) when
    it agrees with IV.

    Weak instruments (first-stage F below :data:`~dmdidc.regression.instrumental.
    WEAK_INSTRUMENTS_F`, e.g. a closed loop excited by a small dither) make IV imprecise and
    biased towards least squares in finite samples, while least squares may be biased by little.

    Under the hypothesis that least squares is consistent (no errors in variables, no
    feedback), ``Theta_IV - Theta_LS`` has the variance ``V_IV - V_LS`` (LS efficient); each
    coefficient's difference is compared with the Gaussian quantile at ``level`` shared over
    the coefficients (Bonferroni).  When none differs, least squares is kept in ``outcome`` (a
    note says so) and ``True`` is returned.
    """
    from scipy import special

    iv, ls = outcome.solution, outcome.twin
    if (ls is None or iv.estimator != "iv" or iv.instrument_strength is None
            or first_stage_f(iv) >= WEAK_INSTRUMENTS_F):
        return False              # strong (or unmeasured) instruments: IV is kept
    difference = iv.coefficients - ls.coefficients
    variance = hausman_variance(iv.standard_errors ** 2, ls.standard_errors ** 2)
    z = float(np.max(np.abs(difference) / np.sqrt(np.where(variance > 0, variance, np.inf))))
    critical = float(special.ndtri(1.0 - level / (2.0 * difference.size)))
    if z > critical:
        outcome.notes.append(f"least squares differs from IV by up to {z:.3g} standard "
                             f"deviations of the difference (threshold {critical:.3g}): noisy "
                             f"states or feedback bias it, the IV fit is kept")
        return False
    outcome.notes.append(f"least squares agrees with IV (largest difference {z:.3g} standard "
                         f"deviations, threshold {critical:.3g}): the more precise least "
                         f"squares is kept")
    outcome.twin, outcome.solution = iv, ls
    outcome.estimator, outcome.instruments, outcome.pretest = "ls", None, True
    return True


def _largest_residual(outcome: FitOutcome, trajectories, R: int, level: float
                      ) -> tuple[float, float]:
    """Largest robustly standardized residual of the fit, and its threshold (the residual
    check's: pieces of data whose noise levels differ scaled each by its own,
    :func:`~dmdidc.inference.residuals.largest_residual`)."""
    from dmdidc.inference.residuals import largest_residual

    coefficients = outcome.solution.coefficients
    pieces, _, _, _ = subsample(trajectories, None, max_delay=R)
    largest = largest_residual([X[:, R + 1:] - coefficients @ np.concatenate(
        [X[:, R:U.shape[1]], lagged_inputs(U, R)]) for X, U in pieces if U.shape[1] > R],
        constant_rows="tiny")
    return largest.z, largest.threshold(level)


#: Share of an input's variance below which the reference is said to explain it little.
_WEAKLY_DRIVEN = 0.1


def _weakly_driven(inputs: list[np.ndarray], drives: list[np.ndarray]) -> list[str]:
    """A note naming the inputs the reference explains little of: their instruments are weak,
    and an open-loop input left out of the reference is its own best instrument (a user
    trial's mixed loop, set point only: A_c 18.7 % off, the warnings blaming other causes)."""
    # about the means: the drives carry the inputs' operating point (the FIR's intercept)
    explained = sum(np.sum((d - d.mean(axis=1, keepdims=True)) ** 2, axis=1) for d in drives)
    total = sum(np.sum((u - u.mean(axis=1, keepdims=True)) ** 2, axis=1) for u in inputs)
    share = np.minimum(explained / np.maximum(total, np.finfo(float).tiny), 1.0)
    weak = np.flatnonzero(share < _WEAKLY_DRIVEN)
    if not weak.size:
        return []
    return [f"the reference explains {', '.join(f'{100 * x:.2g} %' for x in share)} of the "
            f"inputs' variance: input(s) {weak.tolist()} are instrumented weakly; an input the "
            f"loop does not drive (open loop, or its own dither) belongs in the reference as a "
            f"row of its own"]


def _refined(trajectories, references, *, R: int, n: int, m: int, offset: str,
             level: float, options: dict, memo: dict, reference_level: str | None
             ) -> FitOutcome:
    """First stage with fixed instruments, then :data:`REFINEMENTS` model-instrument stages
    (``reference_level``: how a first stage on ``references`` reads their level, by default
    :func:`reference_level_rule`)."""
    notes = []
    inputs = [U for _, U in trajectories]
    if references is None:
        first = _input_statistics(trajectories, R, memo)
        drives = inputs
    else:
        first = _statistics(trajectories, R, references)
        drives = reference_projection(inputs, references)
        notes.append("closed loop: instruments driven by the part of the inputs the reference "
                     "explains (two-stage)")
        notes += _weakly_driven(inputs, drives)
    test, centred = intercept_decision(first, R, "iv", level=level, offset=offset, **options)
    if references is not None:
        reference_level = reference_level or reference_level_rule(first, R, offset, test,
                                                                   level=level, **options)
    try:
        # refinements read only the first stage's model: no instrument strength
        solution = (_solve(first, R, "iv", centred, strength=REFINEMENTS == 0,
                           reference_level=reference_level, **options)
                    if references is not None else
                    _input_instrumented(trajectories, R, centred, options, memo,
                                        strength=REFINEMENTS == 0))
    except InsufficientExcitationError:       # weak fixed instruments: start from LS
        solution = _solve(first, R, "ls", centred, **options)
    # open loop: the simulated states beside the inputs (which instrument themselves); closed
    # loop: the simulated states and the reference-driven inputs at lags 0 .. R
    kind = "simulated" if references is None else "exogenous"
    for _ in range(REFINEMENTS):
        A_d, B_blocks = _model(solution, n, m, R)
        if references is None:
            # simulated block by block as the statistics sum them, read again only where
            # the covariance and the checks take their pieces: no list of every signal
            # data checked whole (no subsample) are read again whole: their states kept
            signals = SimulatedSignals(A_d, B_blocks, inputs, keep=sum(
                U.shape[1] for U in inputs) <= DIAGNOSTIC_SAMPLES)
            stats = _simulated_statistics(trajectories, R, signals, memo)
            d = stats.gram.shape[0] - n
            states = (stats.gram[d:, d:], stats.sums[d:], stats.n_samples)
            try:
                _require_state_directions(states, centred, n + m * (R + 1), m * (R + 1))
                solution = _solve(stats, R, "iv", centred, **options)
            except InsufficientExcitationError as exc:
                raise _collinear_states(exc, stats, centred, n, m, R, n + m * (R + 1)) \
                    from exc
        else:
            signals = model_instruments(A_d, B_blocks, drives)
            stats = _statistics(trajectories, R, kind, 0, signals)
            solution = _solve(stats, R, "iv", centred, **options)
    if centred and affine_rounding_share(solution, np.diag(stats.gram), stats.sums,
                                         stats.n_samples) > ROUNDING_SHARE:
        # the centred moments may have lost 1 % of a standard error to the offsets: one step
        # of refinement on the explicitly centred data (the least-squares rule's estimate,
        # 40-3000x pessimistic for IV: 2 % SE at K = 1e5, relative noise 1e-6, offset 10 sd)
        solution = refined_affine_solution(
            solution, _regression_vectors(trajectories, signals, R, kind), **options)
    check_moments = None
    if solution.relative_residual > EXACT_FIT:   # rounding is not serially correlated noise
        from dmdidc.inference.residuals import MOMENT_LAGS

        pieces, piece_signals, scale, _ = subsample(trajectories, signals, max_delay=R)
        # open loop, z_k = [x^_k; u_k .. u_k-R] shares the lagged inputs with phi_k; closed
        # loop, z_k is lags 0 .. R of one signal; the moment checks' instrument moments (the
        # same pieces less MOMENT_LAGS samples at either end) from the same products
        covariance, check_moments = _laid_out_covariance(
            solution.coefficients, *_regression_arrays(pieces, piece_signals, R, kind),
            centred=centred, common=m * (R + 1) if kind == "simulated" else 0,
            lagged=(n, m) if kind == "simulated" else (0, signals[0].shape[0]),
            trim=MOMENT_LAGS)
        # the long-run covariance of the moments grows like the samples; Theta's shrinks
        solution = dataclasses.replace(solution,
                                       sampling_covariance=covariance.scaled(1.0 / scale))
    return FitOutcome(solution, "iv", "model", stats, test, centred, signals,
                      _twin(stats, R, "ls", centred, options), notes, references is not None,
                      kind, check_moments=check_moments,
                      reference_level=None if references is None else reference_level)


def _require_state_directions(states: tuple, centred: bool, p: int, fixed: int) -> None:
    """Refuse simulated-state instruments that cannot determine the ``p`` regressors before
    they are solved for (the decision of :func:`dmdidc.regression.instrumental.
    instrumental_solution`, bounded from the states' own moments ``(gram, sums, samples)``,
    the statistics' simulated-state block).

    By Cauchy interlacing, the equilibrated moments of ``[u_k .. u_k-R; x^_k]`` have at most
    ``fixed`` (the lagged inputs) more eigenvalues above the solver's threshold than their
    simulated-state block has above any lower one: here half the same fraction of the block's
    own largest eigenvalue (at most the whole's).  Fewer than ``p`` then means IV must fail.
    """
    if states[2] == 0:
        return
    count = _state_directions(states, centred, 0.5 * _INSTRUMENT_RTOL)
    if fixed + count < p:
        raise InsufficientExcitationError(
            f"the instruments span at most {fixed + count} directions for {p} regressors (the "
            f"simulated states only {count} of {states[0].shape[0]}): use more or other "
            f"instruments")


def _state_directions(states: tuple, centred: bool, rtol: float) -> int:
    """Eigenvalues of the equilibrated moments ``states = (gram, sums, samples)`` of the
    simulated states above ``rtol`` of the largest: the directions they span."""
    gram, sums, samples = states
    if centred and samples:
        gram = gram - np.outer(sums, sums) / samples
    scale = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    scale = np.where(scale > 0, scale, 1.0)
    values = np.linalg.eigvalsh(gram / np.outer(scale, scale))
    return int(np.sum(values > rtol * max(values.max(), np.finfo(float).tiny)))


def _collinear_states(exc: InsufficientExcitationError, stats: SufficientStatistics,
                      centred: bool, n: int, m: int, R: int, needed: int
                      ) -> InsufficientExcitationError:
    """The refusal of refined IV whose simulated-state instruments are collinear, with the
    count that decides it and the remedies.

    Why say more than the solver: the noise-free states of a stable plant with many states
    and few inputs are collinear with the lagged inputs in double precision whatever the
    amount of data (``bench_scaling.random_plant``, n = 50, m = 4, R = 5: the true model's
    states and the inputs span 56 of 74 directions above 1e-12, by the singular values of
    the samples themselves as by their Gram matrix, on 2e4 and 2e5 samples alike; fitted
    models' 67-70 on 3000 experiments of 200 samples and on one record of 600 000)."""
    z = stats.layout.instrument_indices
    count = _state_directions((stats.gram[np.ix_(z, z)], stats.sums[z], stats.n_samples),
                              centred, _INSTRUMENT_RTOL)
    if count >= needed:
        # the instruments span enough directions: the solver refused for another reason,
        # which its own message names (the collinearity story would be false)
        return exc
    fixed = m * (R + 1)
    return InsufficientExcitationError(
        f"{exc} (check: the refined instruments, the first-stage model's {n} simulated states "
        f"beside the {fixed} lagged inputs, span {count} directions above "
        f"{_INSTRUMENT_RTOL:.0e} of the largest, the states adding {max(count - fixed, 0)}: "
        f"the {m} inputs excite fewer state directions than there are states, in double "
        f"precision, whatever the number of samples or experiments). Remedy: identify in the "
        f"leading POD modes (DMDidc(svd_rank=r), r below {max(count - fixed, 1)}), excite "
        f"with more inputs, or fit least squares (estimator='ls', biased by noise in the "
        f"states)")


def _regression_vectors(trajectories, signals, R: int, kind: str):
    """Per trajectory ``(Phi (p, N), Y (n, N), Z)`` for ``k = R .. K - 1`` (``Z`` the
    instruments of ``kind``, :func:`dmdidc.regression.refined.instrument_rows`)."""
    for (X, U), E in zip(trajectories, signals, strict=True):
        K = U.shape[1]
        if K <= R:
            continue
        Z = instrument_rows(kind, U, E, R)
        # simulated, z_k ends with the lagged inputs: copied from there, not built again
        lagged = Z[E.shape[0]:] if kind == "simulated" else lagged_inputs(U, R)
        yield np.concatenate([X[:, R:K], lagged]), X[:, R + 1:], Z


def _regression_arrays(trajectories, signals, R: int, kind: str
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """:func:`_regression_vectors` of all trajectories side by side, written in place (no
    block copied, then copied again into one array): ``(head, Y, Z, lengths)``, ``head`` the
    regressors that are not rows of ``Z`` too (``"simulated"``: the states, whose lagged
    inputs end ``Z``; ``"exogenous"``: every regressor)."""
    kept = [(X, U, E) for (X, U), E in zip(trajectories, signals, strict=True)
            if U.shape[1] > R]
    lengths = [U.shape[1] - R for _, U, _ in kept]
    (X, U), E = trajectories[0], signals[0]
    n, lagged = X.shape[0], U.shape[0] * (R + 1)
    simulated = kind == "simulated"
    head = np.empty((n if simulated else n + lagged, sum(lengths)))
    Y = np.empty((n, head.shape[1]))
    Z = np.empty((E.shape[0] + lagged if simulated else E.shape[0] * (R + 1), head.shape[1]))
    a = 0
    for (X, U, E), length in zip(kept, lengths, strict=True):
        b = a + length
        instrument_rows(kind, U, E, R, out=Z[:, a:b])
        head[:n, a:b] = X[:, R:U.shape[1]]
        if not simulated:
            lagged_inputs(U, R, out=head[n:, a:b])
        Y[:, a:b] = X[:, R + 1:]
        a = b
    return head, Y, Z, lengths


#: Entries (rows x samples) robust IV holds at once: the regression vectors ``[phi; y; z]`` of
#: one block of samples, and the residuals whose medians it takes (:func:`_streamed_medians`).
_ROBUST_ENTRIES = 1 << 22
#: Bins of each pass of :func:`_streamed_medians`.
_MEDIAN_BINS = 1024


def _robust_groups(trajectories, R: int, rows: int) -> list[list[tuple[int, int, int]]]:
    """Consecutive samples in groups of at most ``_ROBUST_ENTRIES / rows``: each group a list of
    pieces ``(i, a, b)``, the samples ``k = a .. b - 1`` of trajectory ``i`` (a long record is
    cut into pieces, short experiments side by side)."""
    budget = max(_ROBUST_ENTRIES // rows, 1)
    groups, group, size = [], [], 0
    for i, (_, U) in enumerate(trajectories):
        for a in range(R, U.shape[1], budget):
            b = min(a + budget, U.shape[1])
            if group and size + b - a > budget:
                groups.append(group)
                group, size = [], 0
            group.append((i, a, b))
            size += b - a
    if group:
        groups.append(group)
    return groups


def _group_vectors(trajectories, group: list, R: int, signals=None, kind: str = "simulated"
                   ) -> np.ndarray:
    """``[phi_k; y_k]`` of the samples of ``group`` (:func:`_robust_groups`) side by side, and
    the instruments ``z_k`` of ``kind`` below them when ``signals`` are given (a
    :class:`~dmdidc.regression.refined.SimulatedSignals` simulates the group's trajectories
    side by side, or reads again the one it read last)."""
    X, U = trajectories[group[0][0]]
    n, lagged = X.shape[0], U.shape[0] * (R + 1)
    p = n + lagged
    rows = 2 * n + lagged
    read = {}
    if signals is not None:
        indices = sorted({i for i, _, _ in group})
        read = (signals.subset(indices) if isinstance(signals, SimulatedSignals)
                and len(indices) > 1 else {i: signals[i] for i in indices})
        E = read[indices[0]]
        rows += (E.shape[0] + lagged if kind == "simulated" else E.shape[0] * (R + 1))
    V = np.empty((rows, sum(b - a for _, a, b in group)))
    s = 0
    for i, a, b in group:
        X, U = trajectories[i]
        e = s + b - a
        V[:n, s:e] = X[:, a:b]
        lagged_inputs(U[:, a - R:b], R, out=V[n:p, s:e])
        V[p:p + n, s:e] = X[:, a + 1:b + 1]
        if signals is not None:
            instrument_rows(kind, U, read[i], R, start=a, stop=b, out=V[p + n:, s:e])
        s = e
    return V


def _streamed_medians(blocks: Callable, count: int, rows: int) -> np.ndarray:
    """The median of each row of the values ``blocks()`` yields (arrays ``(rows, b)``, ``count``
    columns in all), as :func:`numpy.median` of them side by side, holding at most about
    :data:`_ROBUST_ENTRIES` of them.

    Why not the values side by side: they are as many as the samples.  Each pass bins the
    values of a bracket ``[lo, hi)`` of every row (:data:`_MEDIAN_BINS` bins of equal width),
    and the next bracket is the bin(s) of the middle rank(s), its ends the least values a
    bin holds (found on the floats by bisection: the binning is monotone, so each bin is an
    interval of floats and the counts below a bracket are exact); a bracket of fewer floats
    than bins is binned by float, which decides its median (ties too); once the brackets hold
    few enough values, they are collected and the middle ones selected.  With 30 sd outliers
    in 6e5 samples: a pass for the extremes, one or two of bins, one to collect.  A row whose
    bracket a pass of value bins narrows by less than 4x in count (glitches 1e12 or 1e300
    times the spread: 7 and 66 passes), or whose width is no float (the largest floats,
    denormal spreads), is binned by float keys instead: each such pass narrows the floats by
    1024x, so a row takes at most ~7 passes whatever its values.
    """
    if count * rows <= _ROBUST_ENTRIES:
        return np.median(np.concatenate(list(blocks()), axis=1), axis=1)
    ranks = np.array([(count - 1) // 2, count // 2])
    lo, hi = np.full(rows, np.inf), np.full(rows, -np.inf)
    for values in blocks():
        lo = np.minimum(lo, values.min(axis=1))
        hi = np.maximum(hi, values.max(axis=1))
    hi = np.nextafter(hi, np.inf)                       # brackets are half open
    hi_key = [_float_key(x) + 1 for x in np.nextafter(hi, -np.inf)]   # +inf included
    by_key = np.zeros(rows, dtype=bool)
    below, inside = np.zeros(rows, dtype=np.int64), np.full(rows, count, dtype=np.int64)
    middle = np.empty((rows, 2))
    done = np.zeros(rows, dtype=bool)
    for _ in range(64):
        if inside[~done].sum() <= _ROBUST_ENTRIES:
            break
        keys = [_float_key(x) for x in lo]
        exact = [y - k <= _MEDIAN_BINS for k, y in zip(keys, hi_key, strict=True)]
        with np.errstate(over="ignore", divide="ignore"):
            # (a width beyond the largest float: halves of it; the exact rows' unused)
            width = hi - lo
            scale = np.where(np.isfinite(width), _MEDIAN_BINS / width,
                             (_MEDIAN_BINS / 2) / (hi / 2 - lo / 2))
        by_key |= ~np.isfinite(scale) | (scale == 0) | ~np.isfinite(lo) | ~np.isfinite(hi)
        step = [-(-(y - k) // _MEDIAN_BINS) for k, y in zip(keys, hi_key, strict=True)]
        counts = np.zeros((rows, _MEDIAN_BINS + 1), dtype=np.int64)
        for values in blocks():
            for r in np.flatnonzero(~done):
                kv = _float_keys(values[r])
                held = (kv >= keys[r]) & (kv < hi_key[r])
                kv = kv[held]
                # (key offsets in unsigned arithmetic: a bracket may span more than 2^63 keys)
                bins = (kv - keys[r] if exact[r]
                        else ((kv.view(np.uint64) - np.uint64(keys[r] % 2**64))
                              // np.uint64(step[r])).astype(np.intp) if by_key[r]
                        else _median_bin(values[r][held], lo[r], scale[r]))
                counts[r] += np.bincount(bins, minlength=_MEDIAN_BINS + 1)
        cumulative = np.cumsum(counts, axis=1)
        progress = False
        for r in np.flatnonzero(~done):
            j1, j2 = np.searchsorted(cumulative[r], ranks - below[r], side="right")
            if exact[r]:                                # bin j holds one float
                middle[r] = [_key_float(keys[r] + j1), _key_float(keys[r] + j2)]
                done[r] = progress = True
                continue
            top = j2 + 1 < _MEDIAN_BINS
            if by_key[r]:
                new_lo_key = keys[r] + j1 * step[r]
                new_hi_key = min(keys[r] + (j2 + 1) * step[r], hi_key[r])
            else:
                new_lo_key = (_float_key(_bin_start(j1, lo[r], hi[r], scale[r])) if j1 > 0
                              else keys[r])
                new_hi_key = (_float_key(_bin_start(j2 + 1, lo[r], hi[r], scale[r])) if top
                              else hi_key[r])
            new_lo, new_hi = _key_float(new_lo_key), _key_float(new_hi_key)
            below[r] += cumulative[r, j1 - 1] if j1 > 0 else 0
            new_inside = cumulative[r, j2] - (cumulative[r, j1 - 1] if j1 > 0 else 0)
            progress |= bool(new_inside < inside[r] or new_lo > lo[r] or new_hi < hi[r])
            by_key[r] |= 4 * new_inside > inside[r]        # value bins made poor progress
            lo[r], hi[r], inside[r] = new_lo, new_hi, new_inside
            hi_key[r] = new_hi_key
        if not progress:
            break
    rest = np.flatnonzero(~done)
    if rest.size:
        kept: dict[int, list[np.ndarray]] = {r: [] for r in rest}
        for values in blocks():
            for r in rest:
                v = values[r]
                kv = _float_keys(v)
                kept[r].append(v[(kv >= _float_key(lo[r])) & (kv < hi_key[r])])
        for r in rest:
            k = ranks - below[r]
            middle[r] = np.partition(np.concatenate(kept[r]), k)[k]
    # numpy.median's mean of the middle value(s): the same rounding
    return np.mean(middle[:, :1], axis=1) if count % 2 else np.mean(middle, axis=1)


_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


def _float_keys(values: np.ndarray) -> np.ndarray:
    """Integers in the order of the floats ``values`` (their bits, sign-folded; -0 and 0
    alike)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return np.where(bits >= 0, bits, -(bits & _SIGN))


def _float_key(value: float) -> int:
    """:func:`_float_keys` of one float, as a Python integer."""
    return int(_float_keys(np.array([value]))[0])


def _key_float(key: int) -> float:
    """The float of a key of :func:`_float_keys`."""
    bits = key if key >= 0 else (-key) | -0x8000000000000000
    return float(np.array([bits], dtype=np.int64).view(np.float64)[0])


def _median_bin(values: np.ndarray, lo: float, scale: float) -> np.ndarray:
    """The bin of each value of ``[lo, hi)`` (:func:`_streamed_medians`): monotone in the
    value, so each bin holds an interval of floats."""
    with np.errstate(over="ignore", invalid="ignore"):
        bins = np.floor((values - lo) * scale)
    return np.clip(bins, 0, _MEDIAN_BINS - 1).astype(np.intp)


def _bin_start(j: int, lo: float, hi: float, scale: float) -> float:
    """The least float of ``[lo, hi)`` in bin ``j`` or above (:func:`_median_bin`), ``hi``
    if none, by bisection on the floats' order (:func:`_float_keys`)."""
    a, b = _float_key(lo), _float_key(hi)       # bin(lo) = 0 < j
    while b - a > 1:
        mid = (a + b) // 2
        if _median_bin(np.array([_key_float(mid)]), lo, scale)[0] >= j:
            b = mid
        else:
            a = mid
    return _key_float(b)


def robust_refit(outcome: FitOutcome, trajectories, R: int) -> FitOutcome:
    """Robust IV: Huber weights on the IV moment equations, by IRLS (bounded influence).

    Each sample gets the weight ``w_k = min(1, c / r_k)`` of its residual norm ``r_k`` in robust
    (MAD) units, ``c^2`` the 0.9 quantile of ``chi^2_n``
    (:func:`dmdidc.regression.robust.huber_threshold`), and the instrumental-variable estimate
    solves the weighted moment equations ``sum_k w_k z_k (y_k - Theta phi_k)^T = 0`` with the same
    instruments ``z_k`` (functions of the excitation only, so outliers in the states do not reach
    them).  The covariance is that of the weighted IV (approximate: the weights are treated as
    fixed).

    Memory: each iteration sums the weighted moments over groups of samples of at most
    :data:`_ROBUST_ENTRIES` entries of ``[phi_k; y_k; z_k]`` (the instruments simulated again
    per group, as the default fit does), and the residuals' medians (centre, MAD) are
    selected in passes over them (:func:`_streamed_medians`): nothing as large as the samples
    is held beyond the data and the instrument signal of a long record.  Data that fit in one
    group are laid out once, and their residuals computed once per iteration (one record of
    2e4 samples, n = 20: 79 ms, 96 ms when every sample was laid out four times).  Beyond
    one group, each median takes 3-4 passes over the residuals: one record of 3e5 samples at
    n = 20 took 2.0 s against 1.5 s, and its process peaked at 310 MB against 1156 MB.
    """
    from dmdidc.regression.instrumental import instrumental_solution

    solution = outcome.solution
    n, p = solution.coefficients.shape
    c = huber_threshold(n)
    signals, kind = outcome.instrument_signals, outcome.instrument_kind
    E0 = signals[0]
    m = trajectories[0][1].shape[0]
    q = E0.shape[0] + m * (R + 1) if kind == "simulated" else E0.shape[0] * (R + 1)
    groups = _robust_groups(trajectories, R, p + n + q)
    count = sum(b - a for group in groups for _, a, b in group)
    cached = (_group_vectors(trajectories, groups[0], R, signals, kind)
              if len(groups) == 1 else None)
    # An affine fit sums its weighted moments about the data's mean (the first group's), not
    # the origin: moments about an operating point far from the data's spread lose
    # eps (mean / spread)^2 of themselves when centred, and the residual covariance is their
    # difference (exact data written with 8 digits around offsets of 20-100 spreads: block
    # tests of 1e17).  The shift moves every residual by a constant, which the median removes.
    shift = np.zeros((0, 1))
    if outcome.centred:
        shift = (cached if cached is not None else _group_vectors(trajectories, groups[0], R,
                                                                  signals, kind)
                 ).mean(axis=1, keepdims=True)
        if cached is not None:
            cached -= shift
    instruments = p + n + np.arange(q)
    coefficients = solution.coefficients

    def regression(with_instruments: bool):
        if cached is not None:
            yield cached
            return
        for group in groups:
            V = _group_vectors(trajectories, group, R, signals if with_instruments else None,
                               kind)
            if shift.size:
                V -= shift[:V.shape[0]]
            yield V

    def residuals():
        for V in regression(False):
            yield V[p:p + n] - coefficients @ V[:p]

    for _ in range(_ROBUST_ITERATIONS):
        # residuals computed once per iteration when they fit in a group, else in each pass
        kept = list(residuals()) if count * n <= _ROBUST_ENTRIES else None
        errors = (lambda kept=kept: iter(kept)) if kept is not None else residuals
        centre = (_streamed_medians(errors, count, n)[:, None] if outcome.centred
                  else np.zeros((n, 1)))
        scale = _MAD_TO_SIGMA * _streamed_medians(
            lambda errors=errors, centre=centre: (np.abs(e - centre) for e in errors()),
            count, n)
        if np.any(scale <= 0):
            rms = np.sqrt(sum(np.sum((e - centre) ** 2, axis=1) for e in errors()) / count)
            scale = np.where(scale > 0, scale, np.maximum(rms, np.finfo(float).tiny))
        gram, sums, total, downweighted = 0.0, 0.0, 0.0, 0
        for V, e in zip(regression(True), errors() if kept is not None else
                        (None for _ in groups), strict=True):
            if e is None:
                e = V[p:p + n] - coefficients @ V[:p]
            r = np.linalg.norm((e - centre) / scale[:, None], axis=0)
            weights = np.minimum(1.0, c / np.maximum(r, np.finfo(float).tiny))
            Vw = V * weights
            gram = gram + Vw @ V.T
            sums = sums + Vw.sum(axis=1)
            total += float(weights.sum())
            downweighted += int(np.sum(weights < 0.5))
        if outcome.centred:
            gram = gram - np.outer(sums, sums) / total
            sums = sums + total * shift[:, 0]      # the data's own (the residuals' mean)
        # the weights summed to the count, which the intercept's mean sums / N divides by
        gram, sums, total = weighted_moments(gram, sums, total)
        updated = instrumental_solution(gram, sums, total, n_states=n,
                                        n_regressors=p, instruments=instruments,
                                        intercepts=int(outcome.centred))
        change = (np.max(np.abs(updated.coefficients - coefficients))
                  / max(np.max(np.abs(updated.coefficients)), 1e-300))
        coefficients = updated.coefficients
        if change <= _ROBUST_TOLERANCE:
            break
    notes = outcome.notes + [f"robust IV (Huber weights): {downweighted} of {count} "
                             f"samples weighted below 1/2"]
    solution = dataclasses.replace(updated, estimator="huber_iv")
    return dataclasses.replace(outcome, solution=solution, estimator="huber_iv", notes=notes)
