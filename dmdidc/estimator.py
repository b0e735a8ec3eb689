"""The DMDidc estimator: DMD with input-delayed control (dissertation Ch. 9).

It regresses x_{k+1} on [x_k, u_k, u_{k-1}, ..., u_{k-R}] (eqs. 9.19-9.21) by least squares,
instrumental variables (:mod:`dmdidc.regression.instrumental`) or Huber's robust
M-estimation (:mod:`dmdidc.regression.robust`), from data or from sufficient statistics
(:mod:`dmdidc.statistics`, possibly privatized), decides which input blocks act with a
significance test against that estimator's own standard errors (:mod:`dmdidc.inference.blocks`),
reads each channel's whole delay from its first active block and the fraction from the two
blocks around it, and recovers the continuous plant (eqs. 9.66-9.69), with confidence intervals
(:mod:`dmdidc.inference.intervals`).  With
``max_delay=0`` it is DMDc; with ``max_delay=None`` the bound is chosen from the data
(:mod:`dmdidc.inference.selection`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from _toolbox.parameters import (
    Interval,
    Options,
    constructor_parameters,
    validate_parameters,
)
from _toolbox.validation import check_finite_array, check_integer, check_positive, read_only
from dmdidc.data import IdData, as_arrays
from dmdidc.errors import (
    DimensionError,
    InsufficientExcitationError,
    LogarithmError,
    NotFittedError,
    ParameterError,
    warn_model,
    warn_new,
)
from dmdidc.fitting import (
    FitOutcome,
    affine_rounding,
    fit_trajectories,
    fit_with_trends,
    intercept_decision,
    reference_level_rule,
)
from dmdidc.identified import identified_model
from dmdidc.inference.blocks import (
    BlockTest,
)
from dmdidc.inference.checks import (
    STATISTICAL_CHECKS,
    Check,
    DiagnosticWarning,
    FitDiagnostics,
)
from dmdidc.inference.clipping import clipping_check
from dmdidc.inference.diagnostics import (
    ZERO_BOUND_REFIT,
    deferred_feedback,
    fit_diagnostics,
    zero_bound_check,
)
from dmdidc.inference.intervals import (
    INTERVAL_METHODS,
    ConfidenceIntervals,
    IntervalEstimate,
    asymptotic_intervals,
    bootstrap_intervals,
    model_vector,
    with_signal_units,
)
from dmdidc.inference.selection import (
    DelayBoundSelection,
    largest_bound,
    select_max_delay,
    wider_bound,
)
from dmdidc.inference.trend_bias import trend_bias_check
from dmdidc.info import ModelInfo, SensorMap
from dmdidc.missing import interpolated_inputs_warning, left_out
from dmdidc.model import DelayedPlant
from dmdidc.pod_streaming import PODStatistics
from dmdidc.regression.pod import outside_span, pod_modes
from dmdidc.regression.refined import centred_references
from dmdidc.regression.solution import (
    GRAM_CONDITION_LIMIT,
    LEAST_SQUARES_METHODS,
    ROUNDING_SHARE,
    GramAccumulator,
    RegressionSolution,
    make_accumulator,
    require_samples,
    residual_rounding_share,
    stream_trajectory,
)
from dmdidc.resampling import Decisions, parts_refit, trajectory_refit
from dmdidc.statistics.accumulator import StatisticsAccumulator
from dmdidc.statistics.fit import regression_from_statistics
from dmdidc.statistics.layout import StatisticsLayout
from dmdidc.statistics.statistics import SufficientStatistics, _trajectories
from dmdidc.trajectories import (
    check_data,
    detrended,
    held_input_error,
    held_inputs,
    remove_trend,
)

__all__ = ["DMDidc", "ESTIMATORS"]

_DETRENDS = ("auto", None, "constant", "linear")
#: The estimators of the regression.
ESTIMATORS = ("auto", "ls", "iv", "huber", "huber_iv")
#: The instruments of ``estimator="iv"`` (``"auto"``: the best the call allows).
INSTRUMENTS = ("auto", "model", "inputs", "states", "exogenous")
#: Family-wise level of the block test when ``significance`` is not given.
DEFAULT_SIGNIFICANCE = 1e-3
#: Family-wise false-alarm probability of the statistical validation checks.
DEFAULT_CHECK_LEVEL = 0.01


def _model_field(name: str, doc: str) -> property:
    """A read-only property returning ``model_.<name>``."""
    return property(lambda self: getattr(self.model_, name), doc=doc)


#: A fall of the POD singular values by this factor between kept modes is a gap: the modes
#: after it hold noise (a trial: 5000 sensors of 3 states, values 1, 0.21, 0.053, then 6e-4).
_RANK_GAP = 10.0
#: Kept POD singular values within this factor of the first discarded one sit on the noise
#: floor (a trial: 236, 26.5, 5.95 kept, then 5.93, 5.91, ...: no fall of _RANK_GAP, and the
#: mode at 5.95 is noise).  Sensor noise's singular values near the top of its spectrum lie
#: within a few percent of each other; a mode this close to them is not resolved by the POD.
_NOISE_FLOOR = 1.5


def _with_rank_hint(identified, singular: np.ndarray, rank: int):
    """``identified`` whose missing continuous model also names a POD rank beyond a gap in
    the singular values (the last fall by ``_RANK_GAP`` among the kept modes: a weak true
    mode may fall far below the strong ones before the noise's floor): the extra modes'
    noise dynamics have no logarithm, and the remedy is a lower ``svd_rank``, which the
    logarithm's own causes do not mention."""
    kept = np.asarray(singular[:rank], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):     # a zero value: an endless fall
        falls = np.nan_to_num(kept[:-1] / kept[1:], nan=1.0, posinf=np.inf)
    gaps = np.flatnonzero(falls >= _RANK_GAP)
    # without a gap, kept values at the first discarded one's level are its noise floor
    floor = float(singular[rank]) if len(singular) > rank else np.inf
    k = int(np.sum(kept > _NOISE_FLOOR * floor))
    if gaps.size:
        k = int(gaps[-1]) + 1       # the last gap: beyond it the values are the noise's floor
        why = (f"the POD singular values fall {falls[k - 1]:.3g}-fold after mode {k} "
               f"({kept[k - 1]:.3g} to {kept[k]:.3g})")
    elif 0 < k < rank:
        modes = f"mode {rank}" if k + 1 == rank else f"modes {k + 1} to {rank}"
        why = (f"the POD singular value(s) of {modes} ({', '.join(f'{v:.3g}' for v in kept[k:])}"
               f") lie within {_NOISE_FLOOR:g}x of the first discarded one ({floor:.3g}), "
               f"the noise floor")
    else:
        return identified
    hint = (f". With svd_rank={rank}: {why}, so the {rank - k} mode(s) beyond mode {k} hold "
            f"noise, whose dynamics have no continuous model: try svd_rank={k} "
            f"(pod_singular_values_ shows the spectrum)")
    error = LogarithmError(str(identified.log_error) + hint)
    model = identified.model
    model = DelayedPlant(model.A_d, model.B_blocks, model.dt, continuous_note=str(error),
                         operating_point=model.operating_point)
    return dataclasses.replace(identified, model=model, log_error=error)


class DMDidc:
    """Dynamic Mode Decomposition with input-delayed control.

    Parameters
    ----------
    max_delay : int, None or "auto", default 0
        Bound ``R`` on the input delay in whole sampling periods; the regression uses the last
        ``R + 1`` inputs.  Choose ``R > r / T``: one more than the whole delay when the delay
        is fractional, and also when it is a whole number of periods (a delay of exactly ``R``
        periods cannot be told from a longer one, and ``delay_bound`` warns so).  ``0`` gives
        DMDc; without inputs plain DMD, where a positive ``max_delay`` is refused (it would
        only drop samples).  ``None`` (or ``"auto"``, the command line's spelling) chooses
        ``R`` from the data by an information criterion (:mod:`dmdidc.inference.selection`;
        the choice is in ``max_delay_`` and ``delay_bound_``), widening the search while no
        lag explains the states and the samples allow; not with ``partial_fit`` or explicit
        snapshot pairs ``Y``.
    estimator : {"auto", "ls", "iv", "huber", "huber_iv"}, default "auto"
        ``"auto"``: instrumental variables with refined instruments; with weak instruments
        (e.g. a closed loop excited by a small dither) least squares is kept when Hausman's
        comparison finds no difference (its intervals then include the estimated bias), robust
        IV when the residuals show outliers, least squares when the data are fitted exactly
        (:mod:`dmdidc.fitting`; the choice is ``diagnostics_.estimator``).  ``"ls"``: least
        squares (dissertation eq. 9.21).  ``"iv"``: instrumental variables (two-stage least
        squares), consistent when the states are measured with noise
        (:mod:`dmdidc.regression.instrumental`).  ``"huber"``: Huber's robust M-estimator for
        heavy-tailed noise (:mod:`dmdidc.regression.robust`; ``fit`` only); ``"huber_iv"``
        its instrumental-variables form.  Each feeds its own covariance to the block test and
        the confidence intervals.
    instruments : {"auto", "model", "inputs", "states", "exogenous"}, default "auto"
        Instruments of instrumental variables: ``"auto"`` the best the call allows
        (``"model"`` for ``fit``: a first stage on the lagged inputs, or the reference's lags
        in closed loop, refined with states simulated from the previous model), the inputs
        lagged beyond ``R`` (``"inputs"``; valid for open-loop excitation), the lagged
        measured states (white measurement noise), or
        exogenous signals passed as ``fit(..., Z=E)`` (e.g. a known excitation added to
        closed-loop commands; needed when the inputs are themselves noisy or computed from
        noisy states).  See :mod:`dmdidc.regression.instrumental`.
    instrument_lags : int or None, default None
        Extra lags ``L`` of the instruments; default: the smallest giving ``n`` more
        instruments than regressors.
    svd_rank : int or None, default None
        Identify in the leading ``svd_rank`` POD modes of the states (thin SVD of the
        snapshots, :mod:`dmdidc.regression.pod`): for many sensors observing a few modes
        (``X = C z``, ``n`` large, even ``n`` above the number of samples).  The modes are
        ``modes_`` (n, r); ``model_`` (and ``A_c``, ``B_c``) is in the coordinates
        ``z = modes_^T (x - pod_centre_)``, while eigenvalues and delays are the plant's;
        ``predict`` works in the full space.  ``detrend="auto"`` takes the modes of the
        snapshots minus their mean (every experiment's pooled, as the fit's one intercept),
        so a sensor offset takes no mode, and ``pod_centre_`` is that mean's part outside
        the modes (its part inside is an intercept the fit decides as without
        ``svd_rank``); ``"constant"`` and ``"linear"`` remove each experiment's trend first,
        ``None`` keeps the origin.  The model's states are named ``z0 .. z{r-1}``;
        ``model_.info.sensors`` (a :class:`~dmdidc.SensorMap`, saved with the model) keeps
        the sensors' names, units, ``modes_`` and ``pod_centre_``.  Memory
        ``O(n r + p^2)`` with ``p = r + m (R + 1)``.  ``fit`` and ``partial_fit`` (an
        incremental POD with ``r + 10`` tracked modes whose moments are carried into each
        new basis, :mod:`dmdidc.pod_streaming`: it agrees with ``fit`` when the states stand
        clear of the sensor noise), not ``fit_statistics`` or explicit ``Y``.  Bootstrap
        intervals project every resample on the fit's modes (one basis: the intervals of
        ``A_c`` and ``B_c`` entries are in the model's coordinates; the modes' own
        variability is not in
        them).  ``None``: all states.
    regression_rank : int or None, default None
        Number of singular values of the (column-equilibrated) regression matrix kept (a
        deliberately reduced fit); ``None`` keeps all and raises
        :class:`~dmdidc.InsufficientExcitationError` when the data are rank-deficient.  Not
        with ``estimator="huber"``.
    method : {"auto", "gram", "qr"}, default "auto"
        Least-squares solver.  ``"gram"`` accumulates equilibrated normal equations (fastest;
        relative error up to ``cond^2 * 1e-16`` for an equilibrated condition number
        ``cond``); ``"qr"`` keeps a tall-skinny QR factor (backward stable, error about
        ``cond * 1e-16``, several times slower).  ``"auto"`` uses the Gram path and, in
        ``fit``, when ``cond > 1e4`` adds passes of iterative refinement with residuals
        computed sample by sample (one pass up to ``cond ~ 1e5``, two up to ``1e6``), which
        restores backward-stable accuracy, unless the digits lost are estimated below 1 % of
        every standard error (noisy data; measured up to 3 %); beyond ``1e6`` it repeats the
        pass with QR, as it does for an affine fit (an offset found) whose rounding could
        show, since refinement needs the fit through the origin.  In ``partial_fit`` it warns
        instead, since the data are gone.  All stream with memory independent of the number
        of samples.  Only ``"auto"`` with ``estimator != "ls"``.
    detrend : {"auto", None, "constant", "linear"}, default "auto"
        ``"auto"``: test the regression's intercept (Hotelling's T^2 on the fit's moments,
        :mod:`dmdidc.inference.offset`; under instrumental variables least squares' test when
        IV's finds nothing) and fit the affine model (an operating point in ``model_``) when
        it is significant, the same way in ``fit``, ``partial_fit`` and ``fit_statistics``
        (:func:`~dmdidc.fitting.intercept_decision`; not for statistics centred when built or
        privatized: the ``offset`` check says so).  ``None``:
        fit through the origin; a significant intercept fails the ``offset`` check (a
        warning); instruments from a ``reference`` are taken about their mean when least
        squares' test finds an intercept (it then stays in the error, without bias), else
        joined by the constant, as through the origin under ``"auto"``
        (:func:`~dmdidc.fitting.reference_level_rule`).
        ``"constant"``, ``"linear"``: remove, per trajectory and per row of ``X``,
        ``U`` (and ``Z``), the mean (``"constant"``) or the least-squares straight line over
        the sample index (``"linear"``) before the fit, as MATLAB's ``detrend``;
        ``"constant"`` then fits one intercept per trajectory (the means leave one of the
        size of the edge samples' share, ~R/K, which biased the delay on exact data and
        failed the whiteness check): the least-squares fit with those intercepts
        (:func:`~dmdidc.fitting.trajectory_trend_fit`, each trajectory's regression rows
        centred over its own samples) gives each trajectory's operating point, ``(I -
        A_d)^-1`` times its intercept (:func:`~dmdidc.fitting.trajectory_shifts`), and the fit
        runs on the states shifted by it: least squares is then that fit exactly, also for
        slow modes (exact data: 1e-11 on ``A_d`` at ``lambda_c = -1e-4``); IV is consistent on
        the same shifted data.  ``"linear"`` likewise fits one intercept and one slope in
        ``k`` per trajectory (the lines leave ``c + g k``).  An intercept along an eigenvalue
        1 of ``A_d`` (an integrator driven by an input's mean: a ramp, no state offset) is
        taken by the input's operating point instead (``input_trend_`` is then not the
        input's mean).  The intercepts (and slopes) count in the residual degrees of freedom
        and the standard errors are those of the detrended regressors (Frisch-Waugh,
        :func:`~dmdidc.fitting.with_trend_parameters`); with many short trajectories the
        trends bias a dynamic model by ``O(1 / samples per trajectory)`` (Nickell), which the
        ``trend_bias`` check estimates and warns about when it reaches a quarter of a
        standard error (:mod:`dmdidc.inference.trend_bias`).  The model is
        then in deviations from the operating point: use it with deviations, ``x - x_op`` and
        ``u - u_op``.  The removed trends are stored in ``state_trend_`` and
        ``input_trend_``.  Use it for data with a sensor offset, an input bias or a non-zero
        equilibrium (the estimator warns when the residuals show one).  Needs whole
        trajectories (``fit`` with ``X``, ``U``; not ``partial_fit``, ``Y`` or
        ``fit_statistics``, whose statistics are centred when built).
    significance : float or None, default None
        Family-wise level of the block test (``None``: 1e-3): the probability that some input
        block without effect is declared active (which would shorten a delay).  A block is
        active when it is significant against its standard error (Hotelling's T^2, Bonferroni
        over the ``m (R + 1)`` blocks; :mod:`dmdidc.inference.blocks`); no tolerance has to be
        tuned to the noise.  With ``max_delay=None`` it is also the level of the delay-bound
        selection.
    block_rtol : float or None, default None
        Explicit override of the test: a block is active iff its column norm exceeds
        ``block_rtol`` times the largest block of that channel.  ``None`` uses the test.
        Giving both ``block_rtol`` and ``significance`` with a fixed ``max_delay`` is refused
        (the significance would change nothing).
    rank_rtol : float, default 1e-10
        Relative singular-value threshold for the rank test.
    chunk_size : int, default 65536
        Samples per chunk in ``fit`` (bounds the working memory).

    Attributes
    ----------
    model_ : DelayedPlant
        The identified plant (immutable); controllers and simulations take it.  Its inactive
        input blocks are exactly zero, so its ``active_blocks`` and ``delay_steps`` are the
        estimator's decision.  When ``A_d`` has a real logarithm the model is the exact
        discretization of the recovered ``(A_c, B_c, delay)`` (blocks outside ``w, w + 1`` are
        zero); otherwise it is the discrete model with the inactive blocks constrained to zero,
        and ``A_c``, ``B_c``, ``delay`` raise ``LogarithmError``.
    regression_ : RegressionSolution
        The unrestricted regression: coefficients, their covariance (the estimator's own, plus
        privacy noise for privatized statistics) and standard errors, singular values, rank,
        condition number, residual.
    block_test_ : BlockTest
        Statistics and decision of the block test.
    max_delay_ : int
        The delay bound used (``max_delay``, or the one chosen when ``max_delay=None``).
    delay_bound_ : DelayBoundSelection or None
        The selection of ``max_delay=None`` (criterion per candidate); ``None`` otherwise.
    state_trend_, input_trend_ : ndarray, shape (n_trajectories, n or m, 2) or None
        The trends removed by ``detrend``: row ``i`` of trajectory ``t`` had
        ``trend[t, i, 0] + trend[t, i, 1] * k`` removed at sample ``k``.  ``None`` without
        ``detrend``.  A state's trend is its mean (``"constant"``) or line (``"linear"``) plus the
        trajectory's shift (its operating point under its own intercept and slope; 0.1-1 % of
        the spread apart on random plants with K = 1000); an input's is its mean or line
        (plus, with an integrator, the input's share of the operating point).

    Warns
    -----
    ContinuousModelWarning
        With the evidence, when a channel shows no significant effect, a delay reaches the
        bound ``max_delay``, the residuals show an offset, ``A_d`` has no real logarithm or an
        eigenvalue not significantly away from zero
        (:mod:`dmdidc.inference.diagnostics`).

    Notes
    -----
    All states must be measured (full-state identification, as in the dissertation): ``X`` are
    the states of the plant, not outputs of a subset of them.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant
    >>> true = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                     delay=2.5, dt=2.0)
    >>> U = np.random.default_rng(0).standard_normal((2, 200))
    >>> X = true.simulate(np.zeros(2), U)
    >>> est = DMDidc(max_delay=3).fit(X, U, dt=2.0)
    >>> np.round(est.delay, 10), est.delay_steps, np.round(est.delay_fraction, 10)
    (array([2.5, 2.5]), array([1, 1]), array([0.25, 0.25]))
    """

    #: What each constructor parameter accepts (checked in ``fit``, as in scikit-learn).
    _parameter_constraints: dict[str, list] = {
        "max_delay": [Interval(int, 0, None), Options("auto"), None],
        "estimator": [Options(*ESTIMATORS)],
        "instruments": [Options(*INSTRUMENTS)],
        "instrument_lags": [Interval(int, 0, None), None],
        "svd_rank": [Interval(int, 1, None), None],
        "regression_rank": [Interval(int, 1, None), None],
        "method": [Options(*LEAST_SQUARES_METHODS)],
        "detrend": [Options(*_DETRENDS)],
        "significance": [Interval(float, 0.0, 1.0, open="both"), None],
        "block_rtol": [Interval(float, 0.0, 1.0, open="both"), None],
        "rank_rtol": [Interval(float, 0.0, None, open="low")],
        "chunk_size": [Interval(int, 1, None)],
        "check_level": [Interval(float, 0.0, 1.0, open="both")],
    }

    def __init__(self, *, max_delay: int | str | None = 0, estimator: str = "auto",
                 instruments: str = "auto", instrument_lags: int | None = None,
                 svd_rank: int | None = None, regression_rank: int | None = None,
                 method: str = "auto",
                 detrend: str | None = "auto", significance: float | None = None,
                 block_rtol: float | None = None, rank_rtol: float = 1e-10,
                 chunk_size: int = 65536, check_level: float = DEFAULT_CHECK_LEVEL) -> None:
        self.max_delay = max_delay
        self.estimator = estimator
        self.instruments = instruments
        self.instrument_lags = instrument_lags
        self.svd_rank = svd_rank
        self.regression_rank = regression_rank
        self.method = method
        self.detrend = detrend
        self.significance = significance
        self.block_rtol = block_rtol
        self.rank_rtol = rank_rtol
        self.chunk_size = chunk_size
        self.check_level = check_level

    # ------------------------------------------------------------------ parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters (scikit-learn's contract; ``deep`` changes nothing here).

        Returns
        -------
        dict
        """
        return {name: getattr(self, name) for name in constructor_parameters(type(self))}

    def set_params(self, **params: Any) -> DMDidc:
        """Set constructor parameters (scikit-learn's contract); validated in ``fit``.

        Returns
        -------
        self

        Raises
        ------
        ParameterError
            An unknown parameter name.
        """
        valid = constructor_parameters(type(self))
        for name, value in params.items():
            if name not in valid:
                raise ParameterError(f"DMDidc has no parameter {name!r}; valid parameters: "
                                     f"{list(valid)}")
            setattr(self, name, value)
        return self

    @property
    def _significance(self) -> float:
        return DEFAULT_SIGNIFICANCE if self.significance is None else self.significance

    def _validated_params(self) -> None:
        """Each parameter against its constraint, then the rules that combine parameters."""
        validate_parameters("DMDidc", self.get_params(), self._parameter_constraints)
        if self.estimator in ("ls", "huber") and (self.instruments != "auto"
                                                  or self.instrument_lags is not None):
            raise ParameterError(f"instruments and instrument_lags apply to instrumental "
                                 f"variables (estimator 'auto', 'iv' or 'huber_iv'); got "
                                 f"estimator={self.estimator!r}")
        if self.instrument_lags is not None and self.instruments in ("auto", "model"):
            raise ParameterError(f"instrument_lags sets the lags of fixed instruments "
                                 f"(instruments 'inputs', 'states' or 'exogenous'); got "
                                 f"instruments={self.instruments!r}")
        if self.regression_rank is not None and self.estimator in ("huber", "huber_iv"):
            raise ParameterError(f"regression_rank is not supported by estimator="
                                 f"{self.estimator!r} "
                                 f"(its reweighted fits need full rank); use 'ls' or 'iv'")
        if self.method != "auto" and self.estimator != "ls":
            raise ParameterError(f"method={self.method!r} selects a least-squares solver; "
                                 f"estimator={self.estimator!r} has its own (use "
                                 f"method='auto')")
        if (self.significance is not None and self.block_rtol is not None
                and self._fixed_bound is not None):
            raise ParameterError(f"significance={self.significance!r} has no effect with "
                                 f"block_rtol={self.block_rtol!r} and a fixed max_delay (the "
                                 f"override replaces the significance test); give one of them "
                                 f"(significance also sets the level of the delay-bound "
                                 f"selection with max_delay=None)")

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, U: Any = None, *, dt: float | None = None, Y: Any = None,
            reference: Any = None, Z: Any = None) -> DMDidc:
        """Identify the delayed plant from snapshot data, and validate the fit.

        Parameters
        ----------
        X : array_like, shape (n, K + 1), a list of such arrays, or IdData
            States ``x_0 .. x_K`` as columns (several trajectories as a list; a 1-D array is one
            state, as in IdData), in the units they were recorded in (an offset or operating point
            is handled, see ``detrend``); or an :class:`~dmdidc.IdData` (then without ``U`` and
            ``dt``: the model takes its names, units, operating point and provenance).
        U : array_like, shape (m, K), or a list of such arrays
            Inputs ``u_0 .. u_{K-1}``, ``u_k`` held over ``[kT, (k+1)T)`` (with arrays; a
            1-D array is one input).
        dt : float
            Sampling period ``T`` in seconds (with arrays).
        Y : array_like, shape (n, N), optional
            Explicit successor snapshots (least squares only): then ``X`` is (n, N) with
            ``Y[:, i]`` following ``X[:, i]``, and ``U`` is (m (R + 1), N) holding
            ``[u_k; u_{k-1}; ...; u_{k-R}]`` per snapshot (for ``max_delay=0`` simply the
            inputs, as in PyDMD).
        reference : array_like, shape (q, K), or a list of such arrays, optional
            A signal known to be independent of every noise, one per trajectory: for
            closed-loop data the reference or dither that excites the loop (the instruments
            are then driven by it, so the fit stays consistent under feedback), or any
            exogenous instrument signal (``instruments="exogenous"``).  An input the loop
            does not drive (open loop) belongs in it as a row of its own (a note names the
            inputs it explains little of).
        Z : optional
            Former name of ``reference`` (deprecated).

        Returns
        -------
        self
            With ``model_`` and ``diagnostics_``; every failed check was issued as a
            :class:`~dmdidc.DiagnosticWarning`.

        Raises
        ------
        DimensionError, NonFiniteError, ParameterError
            Malformed data or parameters.
        InsufficientExcitationError
            Fewer than ``n + m (R + 1)`` regression samples, or rank-deficient data.
        """
        self._validated_params()
        given = (X, U, dt)
        X, U, dt, data = as_arrays(X, U, dt, caller="fit")
        dt = check_positive("dt", dt)
        if data is not None and data.missing_report.interpolated_inputs:
            warn_model(interpolated_inputs_warning(data.missing_report.interpolated_inputs,
                                                   "state"), DiagnosticWarning)
        reference = _renamed(reference, Z)
        self.state_trend_ = self.input_trend_ = None
        self._selection: DelayBoundSelection | None = None
        self._parts = None
        self._released: tuple = ()          # the private releases fitted (fit_statistics)
        self._source = data
        if Y is not None:
            self._refuse_svd_rank("explicit snapshot pairs Y")
            if data is not None:
                raise ParameterError("explicit snapshot pairs Y take arrays X, U; not an "
                                     "IdData")
            if self.estimator not in ("ls", "auto") or self._fixed_bound is None \
                    or self.detrend not in (None, "auto") or reference is not None:
                raise ParameterError("explicit snapshot pairs Y need estimator='ls' (or "
                                     "'auto'), an integer max_delay, no detrend and no "
                                     "reference (the other options need whole trajectories)")
            self._R = self._fixed_bound
            return self._fit_snapshots(X, Y, U, dt)
        self._check_instruments(reference, streaming=False)
        # the data as given, for the frozen_signal check: a removed line turns a repeated
        # value into a ramp and the POD rotation mixes a stuck sensor into every mode
        raw, references = self._data(X, U, reference)
        trajectories, references, pod, trends = self._transformed(raw, references)
        if trends is not None:
            self.state_trend_, self.input_trend_ = trends
        n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
        self._refuse_without_inputs(m, reference)
        self._R = self._delay_bound(trajectories, n, m)
        self._setup(n, m, dt)
        self._pod = pod
        # experiments of at most R samples give no regression sample: say so (missing="drop"
        # leaves such pieces between close gaps, and frequent gaps can lose most of the data)
        note = self._left_out([Ui.shape[1] for _, Ui in trajectories])
        try:
            require_samples(sum(max(Ui.shape[1] - self._R, 0) for _, Ui in trajectories),
                            n + m * (self._R + 1))
            if self.detrend in ("constant", "linear"):
                outcome, trajectories = self._fit_with_trends(trajectories, references, pod)
            else:
                outcome = self._fit_trajectories(trajectories, references)
        except InsufficientExcitationError as exc:
            _name_held_input(U, data, exc)
            _name_growth(trajectories, dt, exc)
            if self.detrend not in ("constant", "linear"):
                _name_large_offset(trajectories, exc)
            if pod is not None:
                raise
            snapshots = sum(Xi.shape[1] for Xi, _ in trajectories)
            if len(trajectories) > 1 and all(Ui.shape[1] <= self._R for _, Ui in trajectories):
                raise InsufficientExcitationError(
                    f"{exc}: each of the {len(trajectories)} experiments has at most "
                    f"max_delay = {self._R} input samples and gives none (missing='drop' "
                    f"splits at every gap): interpolate short gaps "
                    f"(IdData(..., missing='interpolate')) or lower max_delay") from exc
            raise InsufficientExcitationError(
                f"{exc}. With {n} states and {snapshots} snapshots"
                + (" (more states than snapshots)" if n >= snapshots else "")
                + ": if the states are many sensors of a few modes, DMDidc(svd_rank=r) "
                  "identifies in the leading r POD modes (pod_modes shows the singular "
                  "values)") from exc
        zero_bound = self._R == 0 and m > 0
        # at max_delay=0 the checks warn once delay_bound is decided: it rewords feedback
        self._finish(outcome, trajectories, raw, warn=not zero_bound)
        if zero_bound:
            self._zero_bound(given, reference)
        if self.detrend in ("constant", "linear"):       # Nickell's bias of short ones
            self._decisions = dataclasses.replace(self._decisions, trend=self.detrend)
            lengths = [Ui.shape[1] for _, Ui in trajectories]
            self._add_check(trend_bias_check(self._solution, lengths, self._R, self.detrend))
        self._add_note(note)
        return self

    def _zero_bound(self, given: tuple, reference: Any) -> None:
        """``delay_bound`` at ``max_delay=0`` (:func:`~dmdidc.inference.diagnostics.
        zero_bound_check`): only when the residuals correlate with past inputs, or an input
        shows no effect, is the same data refitted, quietly, with room for a delay (so clean
        fits keep their cost).  Warns with every failed check of the fit (``_finish`` left
        that to here), ``feedback`` deferring to a failed ``delay_bound``."""
        effect = self._diagnostics["effect"]
        correlation = self._diagnostics["input_correlation"]
        refit = None
        if correlation.failed or effect.failed:
            other = type(self)(**{**self.get_params(), "max_delay": ZERO_BOUND_REFIT})
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    refit = other.fit(*given[:2], dt=given[2], reference=reference).block_test_
            except ValueError:      # refused by the data (too few samples for the lags)
                refit = None
        check = zero_bound_check(effect, correlation, refit, self.dt)
        checks = tuple(check if c.name == check.name else c for c in self._diagnostics.checks)
        if check.failed:
            checks = tuple(deferred_feedback(c) if c.name == "feedback" and c.failed else c
                           for c in checks)
        self._diagnostics = dataclasses.replace(self._diagnostics, checks=checks)
        for failed in self._diagnostics.failed:
            warn_model(failed.message(), DiagnosticWarning)

    def _left_out(self, lengths: list[int]) -> str | None:
        """:func:`~dmdidc.missing.left_out` for experiments of ``lengths`` input samples
        against one window (``max_delay + 1``): warns when they hold much of the data; the
        note for :meth:`_add_note` (fit and partial_fit of an IdData report alike)."""
        note, loud = left_out(lengths, self._R + 1, window=f"max_delay + 1 = {self._R + 1}")
        if loud:
            warn_model(note, DiagnosticWarning)
        return note

    def _add_check(self, check: Check) -> None:
        """``check`` appended to the diagnostics; a failed one warns as the fit's own."""
        self._diagnostics = dataclasses.replace(
            self._diagnostics, checks=(*self._diagnostics.checks, check))
        if check.failed:
            warn_model(check.message(), DiagnosticWarning)

    def _add_note(self, note: str | None) -> None:
        """``note`` appended to the diagnostics' notes (none while the fit is pending)."""
        if note is not None and self._diagnostics is not None:
            self._diagnostics = dataclasses.replace(
                self._diagnostics, notes=(*self._diagnostics.notes, note))

    def _fit_trajectories(self, trajectories: list, references: list | None) -> FitOutcome:
        return fit_trajectories(
            trajectories, references, max_delay=self._R, estimator=self.estimator,
            instruments=self.instruments, instrument_lags=self.instrument_lags,
            offset=self._offset_mode(), method=self.method, svd_rank=self.regression_rank,
            rank_rtol=self.rank_rtol, chunk_size=self.chunk_size, level=self._check_share)

    def _fit_with_trends(self, trajectories: list, references: list | None,
                         pod: tuple | None) -> tuple[FitOutcome, list]:
        """The fit with one intercept (and slope) per trajectory (``detrend="constant"``,
        ``"linear"``, :func:`~dmdidc.fitting.fit_with_trends`: the signals' means (lines)
        leave one of the edge samples' size) and the trajectories as it saw them; the
        trajectories' shifts are added to ``state_trend_`` and ``input_trend_``."""
        outcome, shifted, shifts = fit_with_trends(
            trajectories, self._R, self.detrend,
            lambda data: self._fit_trajectories(data, references))
        n = trajectories[0][0].shape[0]
        modes = np.eye(n) if pod is None else pod[0]
        self.state_trend_ += np.array([modes @ z[:n] for z in shifts])
        self.input_trend_ += np.array([z[n:] for z in shifts])
        return outcome, shifted

    def _regression_data(self, X: Any, U: Any, reference: Any, pod: tuple | None = None
                         ) -> tuple[list, list | None, tuple | None, tuple | None]:
        """The trajectories and references as the regression sees them: detrended
        (``detrend``) and projected on the POD modes (``svd_rank``: those of ``pod``, else of
        these data), with those modes and the removed ``(state, input)`` trends (or None)."""
        return self._transformed(*self._data(X, U, reference), pod)

    def _transformed(self, trajectories: list, references: list | None,
                     pod: tuple | None = None
                     ) -> tuple[list, list | None, tuple | None, tuple | None]:
        """:meth:`_regression_data` of trajectories and references already read."""
        trends = None
        if self.detrend in ("constant", "linear"):
            trajectories, *trends = detrended(trajectories, self.detrend)
            references = None if references is None else [
                remove_trend(E, self.detrend)[0] for E in references]
        elif references is not None:
            # the model has one intercept or none: the references' one level is no
            # information (centred_references)
            references = centred_references(references)
        if self.svd_rank is not None:      # identify in the leading POD modes
            pod = pod or self._pod_of([Xi for Xi, _ in trajectories])
            # z = modes^T (x - c) = modes^T x: the centre lies outside the modes' span
            trajectories = [(pod[0].T @ Xi, Ui) for Xi, Ui in trajectories]
        return trajectories, references, pod, trends

    def _pod_of(self, states: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The POD of ``states``: modes, singular values and the centre ``c`` the coordinates
        ``z = modes^T (x - c)`` are taken from.  ``detrend="auto"``: the modes of the
        snapshots minus their mean (every experiment's pooled, as the fit's one intercept),
        and ``c`` the part of that mean outside the modes' span, which the ``r`` coordinates
        cannot carry; the part inside stays in them, where the fit's intercept rule decides
        it as without ``svd_rank`` (an offset: an operating point; none: the fit through the
        origin, unchanged).  Uncentred, a sensor offset took one of the ``r`` modes from the
        plant (a trial: DC gain 10 % off, no warning); centred in full, offset-free data had
        to fit an intercept for their mean (predictions 10x worse at their DC level).
        ``"constant"`` and ``"linear"`` have removed each experiment's trend already, and
        ``None`` keeps the origin, whose intercept the ``offset`` check tests."""
        n = states[0].shape[0]
        if self.detrend != "auto":
            return (*pod_modes(states, self.svd_rank), np.zeros(n))
        mean = sum(Xi.sum(axis=1) for Xi in states) / sum(Xi.shape[1] for Xi in states)
        modes, singular = pod_modes(states, self.svd_rank, centre=mean)   # (no centred copy)
        return modes, singular, outside_span(modes, mean)

    @property
    def _fixed_bound(self) -> int | None:
        """``max_delay`` as an integer, or ``None`` when it is chosen from the data (``None``
        or its alias ``"auto"``, the command line's spelling)."""
        return None if self.max_delay is None or isinstance(self.max_delay, str) \
            else int(self.max_delay)

    def _offset_mode(self) -> str:
        """The intercept rule of the fit (:func:`~dmdidc.fitting.fit_trajectories`'s
        ``offset``): ``detrend="auto"`` fits a significant intercept, ``None`` only tests it
        (a significant one fails the offset check), a removed trend leaves none to test."""
        return {"auto": "auto", None: "test"}.get(self.detrend, "none")

    def _refuse_without_inputs(self, m: int, reference: Any = None) -> None:
        """Without inputs (plain DMD) no input can be delayed: a positive ``max_delay`` would
        only drop the first samples and change ``A_d``, and a ``reference`` has no input
        coefficients to instrument, so both are refused, as every option that cannot act."""
        if m == 0 and reference is not None:
            raise ParameterError("reference drives instruments for the inputs' coefficients; "
                                 "the data have no inputs (U has 0 rows: plain DMD by least "
                                 "squares, nothing to instrument): leave reference out")
        if m == 0 and self._fixed_bound:
            raise ParameterError(f"max_delay={self.max_delay} bounds an input delay, and the data "
                                 f"have no inputs (U has 0 rows: plain DMD): it would only drop "
                                 f"the first {self.max_delay} samples; use max_delay=0")

    def _refuse_svd_rank(self, call: str) -> None:
        if self.svd_rank is not None:
            raise ParameterError(f"svd_rank projects whole trajectories onto their POD modes; "
                                 f"{call} cannot: use fit(X, U, dt=...) with the snapshots, "
                                 f"or project them yourself (dmdidc.regression.pod.pod_modes)")

    def fit_statistics(self, stats: SufficientStatistics | list[SufficientStatistics], *,
                       dt: float) -> DMDidc:
        """Identify the delayed plant from sufficient statistics (plain or privatized).

        Parameters
        ----------
        stats : SufficientStatistics or list of SufficientStatistics
            Statistics of the data (:meth:`SufficientStatistics.from_data`), e.g. summed over
            clients, possibly privatized.  A list is summed; its parts (independent
            experiments or clients) are what ``confidence_intervals(method="bootstrap")``
            resamples.
        dt : float
            Sampling period ``T`` in seconds.

        Returns
        -------
        self
            ``estimator="auto"`` uses instrumental variables when the statistics carry
            instruments and least squares otherwise (``diagnostics_.estimator``).

        Raises
        ------
        ParameterError
            ``estimator="huber"`` or ``"huber_iv"`` (they need the samples), ``detrend``
            ``"constant"`` or ``"linear"`` (center when building the statistics:
            ``from_data(..., detrend="constant")``), ``max_delay`` above the statistics' bound,
            ``estimator="iv"`` without instruments, or ``instruments`` other than ``"auto"``.
        InsufficientExcitationError
            Too few samples or rank-deficient moments.

        Notes
        -----
        Privatized statistics are repaired (projected onto the positive semidefinite matrices)
        and their noise variance enters the standard errors, the block test and the
        confidence intervals (:mod:`dmdidc.statistics.fit`).  Residual checks need the
        samples: on statistics they are reported as not applicable.  The intercept is decided
        as in ``fit`` (``detrend``), from the statistics' sums; statistics centred when built
        and privatized ones are not tested (the ``offset`` check says why).

        Examples
        --------
        >>> import numpy as np
        >>> from dmdidc import DMDidc, DelayedPlant, SufficientStatistics, random_excitation
        >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
        >>> U = random_excitation(1, 2000, rng=0)
        >>> X = plant.simulate([0.0], U)
        >>> float(abs(X).max()), float(abs(U).max())     # the bounds must hold the data
        (3.45..., 3.89...)
        >>> stats = SufficientStatistics.from_data(X, U, max_delay=3, state_bound=5.0,
        ...                                        input_bound=5.0)
        >>> est = DMDidc(max_delay=3).fit_statistics(stats, dt=1.0)
        >>> np.round(est.delay, 6), est.delay_steps
        (array([1.5]), array([1]))
        """
        self._validated_params()
        self._refuse_svd_rank("fit_statistics")
        dt = check_positive("dt", dt)
        parts = list(stats) if isinstance(stats, (list, tuple)) else [stats]
        if not parts or not all(isinstance(part, SufficientStatistics) for part in parts):
            raise ParameterError(f"stats must be SufficientStatistics or a non-empty list of "
                                 f"them; got {type(stats).__name__}")
        if self.estimator in ("huber", "huber_iv"):
            raise ParameterError(f"estimator={self.estimator!r} reweights every sample, which "
                                 f"statistics cannot do; fit the data, or use 'ls' or 'iv'")
        if self.detrend in ("constant", "linear"):
            raise ParameterError("detrend applies to data; statistics are centred when built "
                                 "(SufficientStatistics.from_data(..., detrend='constant'))")
        total = sum(parts[1:], parts[0])
        if self.instruments not in ("auto", total.instruments):
            raise ParameterError(f"instruments={self.instruments!r}: statistics carry the "
                                 f"instruments they were built with ({total.instruments!r}, "
                                 f"from_data(..., instruments=...)); leave instruments='auto'")
        n, m = total.n_states, total.n_inputs
        self._refuse_without_inputs(m)
        self.state_trend_ = self.input_trend_ = None
        self._selection = None
        if self._fixed_bound is None:
            gram, _ = total.moments()
            p = n + m * (total.max_delay + 1)
            self._selection = select_max_delay(gram[:p + n, :p + n], total.n_samples,
                                               n_states=n, n_inputs=m, limit=total.max_delay,
                                               significance=self._significance)
            self._R = self._selection.selected
        else:
            self._R = self._fixed_bound
        self._setup(n, m, dt)
        self._source = None
        self._parts = parts if len(parts) > 1 else None
        self._released = total.releases
        kind = self.estimator if self.estimator != "auto" else (
            "iv" if total.instruments is not None else "ls")
        self._finish(self._moments_outcome(total, kind, *self._statistics_offset(total)))
        # clipping to the bounds: judged on the owner's count (a release has none: privatize
        # warned its owner)
        self._add_check(clipping_check(total))
        if total.centering == "trajectory" and total.intercepts and not total.releases:
            # built with detrend="constant": their lengths are gone, their mean is not
            # (Nickell's bias depends on the lengths little beyond a few time constants)
            lengths = [round(total.n_samples / total.intercepts)] * total.intercepts
            self._add_check(trend_bias_check(self._solution, lengths, 0, "constant"))
        return self

    def _statistics_offset(self, total: SufficientStatistics) -> tuple[str, str]:
        """The intercept rule for statistics and, when they cannot be tested, why: centred
        statistics have no intercept left, privatized ones cannot be centred (the noise on
        their sums would enter the Gram)."""
        mode = self._offset_mode()
        if total.centering != "none":
            return "none", "not tested (the statistics were centred when built)"
        if total.releases and mode != "none":
            return "none", ("not tested: privatized statistics carry noisy sums and cannot "
                            "be centred; remove a public operating point before building "
                            "them, or build them with detrend='constant' before privatizing")
        return mode, ""

    def _data(self, X: Any, U: Any, reference: Any, *, check_orientation: bool = True
              ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray] | None]:
        trajectories, signals = _trajectories(X, U, reference,
                                              check_orientation=check_orientation)
        return trajectories, (None if reference is None else signals)

    def _check_instruments(self, reference: Any, *, streaming: bool) -> None:
        """Refuse an instrument choice that the call cannot honour."""
        iv = self.estimator in ("auto", "iv", "huber_iv")
        if self.instruments == "exogenous" and reference is None:
            raise ParameterError("instruments='exogenous' needs the instrument signals: "
                                 "fit(X, U, dt=..., reference=E) with E (q, K) per trajectory")
        if reference is not None and (not iv or self.instruments in ("inputs", "states")):
            raise ParameterError(f"reference needs instrumental variables with instruments "
                                 f"'auto', 'model' or 'exogenous'; got estimator="
                                 f"{self.estimator!r}, instruments={self.instruments!r}")
        if streaming and self.instruments == "model":
            raise ParameterError("instruments='model' simulates the instruments from a "
                                 "first-stage model over the whole data; partial_fit streams: "
                                 "use fit, or instruments='inputs'")
        if self.estimator == "huber_iv" and self.instruments not in ("auto", "model"):
            raise ParameterError(f"estimator='huber_iv' weights the refined instruments "
                                 f"(instruments='auto' or 'model'); got {self.instruments!r}")

    def _delay_bound(self, trajectories: list[tuple[np.ndarray, np.ndarray]], n: int, m: int
                     ) -> int:
        """``max_delay``, or the bound chosen by :func:`select_max_delay`."""
        if self._fixed_bound is not None:
            return self._fixed_bound
        lengths = [Ui.shape[1] for _, Ui in trajectories]
        limit = largest_bound(lengths, n, m)
        allowed = largest_bound(lengths, n, m, cap=None)
        while True:         # widened while no lag explains the states and the data allow
            wider = wider_bound(limit, allowed, m)
            accumulator = StatisticsAccumulator(n, m, limit)
            for Xi, Ui in trajectories:
                accumulator.new_trajectory()
                accumulator.update(Xi, Ui)
            stats = accumulator.statistics()
            self._selection = select_max_delay(
                stats.moments()[0], stats.n_samples, n_states=n, n_inputs=m, limit=limit,
                significance=self._significance, allowed=allowed, warn=wider is None)
            if not self._selection.exceeded or wider is None:
                return self._selection.selected
            limit = wider

    def partial_fit(self, X: Any, U: Any = None, *, dt: float | None = None,
                    new_trajectory: bool = False, reference: Any = None,
                    Z: Any = None) -> DMDidc:
        """Add a chunk of one trajectory; memory stays independent of the data length.

        Parameters
        ----------
        X : array_like, shape (n, L + 1), or IdData
            States of the chunk (a 1-D array is one state; so is a 1-D ``U`` one input).  When
            continuing a trajectory, ``X[:, 0]`` must equal the last state of the previous chunk
            (chunks overlap by one state, like ``X[:, a:b+1]`` with ``U[:, a:b]``).  An
            :class:`~dmdidc.IdData` (without ``U`` and ``dt``) adds each of its experiments as a
            new trajectory after the first.
        U : array_like, shape (m, L)
            With arrays.
        dt : float
            Sampling period; must not change between calls (with arrays).
        new_trajectory : bool, default False
            Start a new trajectory (the first call always does).
        reference : array_like, shape (q, L), optional
            Reference or exogenous instrument signals of the chunk (their lags instrument
            the fit).
        Z : optional
            Former name of ``reference`` (deprecated).

        Returns
        -------
        self
            ``model_`` reflects all data so far (it is solved at every call: about 0.1 s
            for ``p = 104`` regressors, so feed chunks of many samples); a check warns at the
            solve where it starts failing, not again while it keeps failing
            (``diagnostics_`` shows it), and anew if it passed in between, as
            :meth:`dmdidc.OutputDMDidc.partial_fit` (:func:`~dmdidc.errors.warn_new`;
            ``fit`` warns every failed check); it raises
            :class:`~dmdidc.InsufficientExcitationError` while the data are not yet enough.
            The intercept is decided as in ``fit`` (``detrend``),
            from the streamed moments and sums, by every solver.  ``estimator="auto"``
            streams instrumental variables with the lagged inputs (or the reference's lags) as
            instruments.  With ``svd_rank`` the snapshots are reduced by streamed POD modes
            (:mod:`dmdidc.pod_streaming`; least squares or input instruments, no reference).

        Raises
        ------
        ParameterError
            ``detrend="constant"`` or ``"linear"`` (they need the whole data),
            ``max_delay=None``, ``estimator="huber"`` or ``"huber_iv"`` (reweighting needs
            the samples again), ``instruments="model"``, or ``dt`` changed.
        DimensionError
            A chunk that does not continue the previous one, or changed sizes.
        """
        self._validated_params()
        X, U, dt, data = as_arrays(X, U, dt, caller="partial_fit")
        if data is not None:
            return self._partial_fit_data(data, new_trajectory, reference, Z)
        dt = check_positive("dt", dt)
        reference = _renamed(reference, Z)
        if self.detrend in ("constant", "linear"):
            raise ParameterError(f"partial_fit cannot use detrend={self.detrend!r}: it needs "
                                 f"the whole data in memory; use fit, or detrend='auto'")
        if self._fixed_bound is None:
            raise ParameterError("partial_fit needs an integer max_delay (choosing it needs the "
                                 "whole data): fit once with max_delay=None to choose it")
        if self.estimator in ("huber", "huber_iv"):
            raise ParameterError(f"partial_fit does not support estimator={self.estimator!r}: "
                                 f"iteratively reweighted fits need every sample again; use fit")
        self._check_instruments(reference, streaming=True)
        ((Xc, Uc),), (Ec,) = _trajectories(X, U, reference, check_orientation=False)
        # no inputs and no reference: plain DMD, by least squares as in fit (nothing to
        # instrument with)
        iv = self.estimator == "iv" or (self.estimator == "auto"
                                        and (Uc.shape[0] > 0 or Ec is not None))
        if self.svd_rank is not None and (Ec is not None
                                          or self.instruments not in ("auto", "inputs")):
            raise ParameterError("partial_fit with svd_rank streams least squares or "
                                 "instruments from the inputs (instruments='auto' or "
                                 "'inputs'), without a reference; use fit for the others")
        if getattr(self, "_accumulator", None) is None:
            n, m = Xc.shape[0], Uc.shape[0]
            self._refuse_without_inputs(m, Ec)
            self._R = self._fixed_bound
            self._selection, self._parts, self._released = None, None, ()
            self._setup(n if self.svd_rank is None else self.svd_rank, m, dt)
            self._source = None
            if self.svd_rank is not None:       # the statistics of streamed POD coordinates
                if self.svd_rank > n:
                    raise DimensionError(f"svd_rank={self.svd_rank} exceeds the {n} states")
                self._accumulator = PODStatistics(n, m, self._R, self.svd_rank,
                                                  instruments="inputs" if iv else None,
                                                  instrument_lags=self.instrument_lags,
                                                  centred=self.detrend == "auto")
            elif iv:
                kind = "exogenous" if Ec is not None else (
                    "inputs" if self.instruments == "auto" else self.instruments)
                self._accumulator = StatisticsAccumulator(
                    n, m, self._R, instruments=kind, instrument_lags=self.instrument_lags,
                    n_exogenous=0 if Ec is None else Ec.shape[0])
            else:
                self._accumulator = make_accumulator(
                    "gram" if self.method == "auto" else self.method, n, m, self._R)
        else:
            if dt != self.dt:
                raise ParameterError(f"dt changed between partial_fit calls: {self.dt} then {dt}")
            n, m, _ = self._dims
            n = n if self.svd_rank is None else self._accumulator.n_states
            if Xc.shape[0] != n or Uc.shape[0] != m:
                raise DimensionError(f"chunk has {Xc.shape[0]} states and {Uc.shape[0]} inputs; "
                                     f"earlier chunks had {n} and {m}")
            if new_trajectory:
                self._accumulator.new_trajectory()
            elif self._accumulator.last_state is not None and not np.array_equal(
                    Xc[:, 0], self._accumulator.last_state):
                raise DimensionError("X[:, 0] does not continue the previous chunk (it must equal "
                                     "its last state); pass new_trajectory=True for a new one")
        if iv or self.svd_rank is not None:
            self._accumulator.update(Xc, Uc, Ec)
        else:
            stream_trajectory(self._accumulator, Xc, Uc, self.chunk_size)
        self._partial = True
        self.state_trend_ = self.input_trend_ = None
        try:
            if self.svd_rank is not None:
                self._pod = (self._accumulator.modes, self._accumulator.pod.singular_values,
                             self._accumulator.centre)
            outcome = self._streamed_outcome(iv)
        except InsufficientExcitationError as exc:
            self._model = self._solution = self._block_test = self._diagnostics = None
            self._pending = exc
            return self
        return self._finish(outcome)

    def _partial_fit_data(self, data: IdData, new_trajectory: bool, reference: Any,
                          Z: Any) -> DMDidc:
        """``partial_fit`` of every experiment of an IdData (one trajectory each)."""
        if reference is not None or Z is not None:
            raise ParameterError("partial_fit with an IdData takes no reference; pass arrays")
        earlier = getattr(self, "_source", None)
        if earlier is not None and getattr(self, "_accumulator", None) is not None:
            for name in ("state_names", "input_names", "state_units", "input_units"):
                if getattr(data, name) != getattr(earlier, name):
                    raise ParameterError(f"this chunk's {name} {getattr(data, name)!r} differ "
                                         f"from the earlier chunks' {getattr(earlier, name)!r}")
        X, U = data.arrays(deviations=True)
        X, U = (X, U) if data.n_experiments > 1 else ([X], [U])
        self._source = None          # the chunks are deviations; the data's metadata come after
        for i, (Xi, Ui) in enumerate(zip(X, U, strict=True)):
            self.partial_fit(Xi, Ui, dt=data.dt, new_trajectory=new_trajectory or i > 0)
        # pieces of at most max_delay inputs gave no regression sample: said as fit says it
        self._add_note(self._left_out([Ui.shape[1] for Ui in U]))
        self._source = data
        if self._model is not None:
            self._model = self._annotated(self._model)
        return self

    def _annotated(self, model: DelayedPlant) -> DelayedPlant:
        """The model with the names, units, operating point and provenance of its data (with
        ``svd_rank``: states ``z0 ..`` and the sensors' in its :class:`~dmdidc.SensorMap`)."""
        data = getattr(self, "_source", None)
        provenance = {"dmdidc_version": _package_version(), "estimator": self.get_params(),
                      "data": None if data is None else data.provenance()}
        if getattr(self, "_pod", None) is not None:
            return _in_sensors(model, self._pod, data, provenance)
        if data is None:
            info = model.signal_info.renamed(provenance=provenance)
            return model.with_info(info)
        info = ModelInfo(data.state_names, data.input_names, data.state_units,
                         data.input_units, provenance=provenance)
        op = data.operating_point
        if op is not None:                      # the fit saw deviations from it
            model = model.shifted_by(op.state, op.input)
        return model.with_info(info)

    def _streamed_outcome(self, iv: bool) -> FitOutcome:
        """The solve of everything streamed so far, the intercept decided as in ``fit``."""
        if not iv and self.svd_rank is None:
            return self._least_squares_outcome()
        return self._moments_outcome(self._accumulator.statistics(), "iv" if iv else "ls",
                                     self._offset_mode())

    def _moments_outcome(self, stats: SufficientStatistics, kind: str, mode: str,
                         note: str = "") -> FitOutcome:
        """The ``kind`` (``"ls"`` or ``"iv"``) solve of uncentred ``stats``, affine when the
        intercept rule of every fit path (:func:`~dmdidc.fitting.intercept_decision`) says so;
        ``note`` says why the intercept is not tested (``mode="none"``)."""
        options = dict(svd_rank=self.regression_rank, rank_rtol=self.rank_rtol)
        test, centred = intercept_decision(stats, self._R, kind, level=self._check_share,
                                           offset=mode, **options)
        use = stats.centered() if centred else stats
        twin = (regression_from_statistics(use, self._R, estimator="ls", **options)
                if kind == "iv" else None)
        # exogenous instruments are a reference: its level must not matter
        read = (reference_level_rule(stats, self._R, mode, test, level=self._check_share,
                                     **options)
                if kind == "iv" and stats.instruments == "exogenous" else None)
        solution = regression_from_statistics(use, self._R, estimator=kind,
                                              reference_level=read, **options)
        # no samples to refine an affine fit on: its rounding goes to the offset check
        rounding = affine_rounding(stats, solution, self._R, kind) if centred else 0.0
        return FitOutcome(solution, kind, stats.instruments if kind == "iv" else None, stats,
                          test, centred, twin=twin, offset_note=note, rounding=rounding,
                          reference_level=read)

    def _least_squares_outcome(self) -> FitOutcome:
        """The solve of a least-squares accumulator (``partial_fit``, explicit ``Y``).

        Its moments (the Gram solver's blocks, or ``F^T F`` of the QR factor) and its sums are
        the statistics of the intercept rule, as in ``fit``; every fit is solved by the
        accumulator's own solver (the QR factor's centred block for an affine fit, which the
        centred normal equations would lose: ``method="qr"`` keeps its accuracy), an affine
        Gram fit from the centred moments, as ``fit`` does."""
        accumulator, (n, m, R) = self._accumulator, self._dims
        if isinstance(accumulator, GramAccumulator):
            gram = np.block([[accumulator.gram, accumulator.cross.T],
                             [accumulator.cross, accumulator.target_gram]])
        else:
            gram = accumulator.factor.T @ accumulator.factor
        stats = SufficientStatistics.plain(
            StatisticsLayout(n, m, R, None, 0, 0), gram,
            np.concatenate([accumulator.regressor_sum, accumulator.target_sum]),
            accumulator.n_samples)
        options = dict(svd_rank=self.regression_rank, rank_rtol=self.rank_rtol)
        test, centred = intercept_decision(stats, R, "ls", level=self._check_share,
                                           offset=self._offset_mode(), **options)
        rounding = 0.0
        if isinstance(accumulator, GramAccumulator):
            solution = (regression_from_statistics(stats.centered(), R, estimator="ls",
                                                   **options)
                        if centred else accumulator.solution(**options))
            rounding = affine_rounding(stats, solution, R, "ls") if centred else 0.0
        else:
            solution = accumulator.solution(centred=centred, **options)
        return FitOutcome(solution, "ls", None, stats, test, centred, rounding=rounding)

    def _setup(self, n: int, m: int, dt: float) -> None:
        """Forget earlier results; the next solve is for ``n`` states, ``m`` inputs, ``_R``."""
        self.dt = dt
        self._dims = (n, m, self._R)
        self._accumulator = None
        self._pod: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._model = self._solution = self._block_test = self._diagnostics = None
        self._block_variance: float | None = None
        self._pending: InsufficientExcitationError | None = None
        self._partial = False
        self._warned: frozenset[str] = frozenset()   # the findings of the last solve (_finish)

    def _fit_snapshots(self, X: Any, Y: Any, U: Any, dt: float) -> DMDidc:
        X, Y, U = check_data("X", X), check_data("Y", Y), check_data("U", U)
        if Y.shape != X.shape:
            raise DimensionError(f"Y has shape {Y.shape}; expected {X.shape} (the shape of X)")
        if U.shape[1] != X.shape[1]:
            raise DimensionError(f"U has {U.shape[1]} snapshots; expected {X.shape[1]} "
                                 f"(the columns of X)")
        if U.shape[0] % (self._R + 1):
            raise DimensionError(f"U has {U.shape[0]} rows; with explicit Y it must stack "
                                 f"max_delay + 1 = {self._R + 1} lagged inputs")
        n, m = X.shape[0], U.shape[0] // (self._R + 1)
        self._refuse_without_inputs(m)
        self._setup(n, m, dt)
        self._accumulator = make_accumulator("qr" if self.method == "auto" else self.method,
                                             n, m, self._R)
        self._accumulator.add_samples(np.concatenate([X, U]), Y)
        return self._finish(self._least_squares_outcome())

    @property
    def _check_share(self) -> float:
        """Level of each statistical check: ``check_level`` shared out (Bonferroni)."""
        return self.check_level / STATISTICAL_CHECKS

    def _finish(self, outcome: FitOutcome, trajectories: list | None = None,
                raw: list | None = None, *, warn: bool = True) -> DMDidc:
        """Decide the active blocks, build the model, validate it and warn with the evidence
        (``trajectories`` as the regression saw them, ``raw`` as given: see
        :func:`~dmdidc.inference.diagnostics.fit_diagnostics`; ``warn=False``: the caller
        warns with the failed checks)."""
        n, m, R = self._dims
        solution = outcome.solution
        identified = identified_model(outcome, n_states=n, n_inputs=m, max_delay=R, dt=self.dt,
                                      significance=self._significance,
                                      block_rtol=self.block_rtol)
        if identified.log_error is not None and getattr(self, "_pod", None) is not None:
            identified = _with_rank_hint(identified, self._pod[1], self.svd_rank)
        self._solution, self._block_test = solution, identified.test
        self._model, self._kept = self._annotated(identified.model), identified.kept
        self._block_variance = identified.block_variance
        # least squares kept by Hausman's pretest: its intervals need the IV twin
        self._pretest_iv = outcome.twin if outcome.pretest else None
        self._decisions = Decisions.of(outcome)     # what bootstrap resamples keep
        self._pending = None
        trend = self.detrend if self.detrend in ("constant", "linear") else None
        self._diagnostics = fit_diagnostics(outcome, identified.test, identified.model,
                                            trajectories=trajectories, raw=raw,
                                            log_error=identified.log_error,
                                            level=self.check_level, share=self._check_share,
                                            kept=identified.kept, trend=trend)
        # partial_fit solves after every chunk: a finding of its previous solve that stands
        # does not warn again (warn_new; fit and fit_statistics warn every finding)
        before = getattr(self, "_warned", frozenset()) if self._partial else frozenset()
        found = set()

        def finding(key: str, message: str) -> None:
            found.add(key)
            warn_new(key, message, before)

        for check in self._diagnostics.failed if warn else ():
            finding(check.name, check.message())
        if (self.method == "auto" and isinstance(self._accumulator, GramAccumulator)
                and self._partial and solution.condition_number > GRAM_CONDITION_LIMIT):
            finding("gram_condition",
                    f"the equilibrated regression data have condition number "
                    f"{solution.condition_number:.3g}; normal equations lose about "
                    f"{2 * np.log10(solution.condition_number):.0f} digits. Stream the data "
                    f"again with method='qr' for a backward-stable fit")
        if (self.method == "auto" and isinstance(self._accumulator, GramAccumulator)
                and self._partial and solution.estimator == "ls"
                and residual_rounding_share(solution, np.diag(self._accumulator.target_gram))
                > ROUNDING_SHARE):
            # fit() takes QR here (least_squares); the streamed data are gone
            finding("residual_rounding",
                    "the residuals lie at the rounding of the normal equations' sums "
                    "(exact data, or data written with their last digits, far from zero): "
                    "their covariance, the standard errors and the block tests are "
                    "rounding. Stream the data again with method='qr' for a "
                    "backward-stable fit")
        self._warned = frozenset(found)
        return self

    def _fitted(self, value: Any) -> Any:
        if value is None:
            pending = getattr(self, "_pending", None)
            if pending is not None:
                raise InsufficientExcitationError(str(pending))
            raise NotFittedError("this DMDidc estimator is not fitted yet; call fit(X, U, dt=...), "
                                 "fit_statistics or partial_fit first")
        return value


    # ------------------------------------------------------------------ uncertainty
    def confidence_intervals(self, level: float = 0.95, *, method: str = "asymptotic",
                             n_resamples: int = 200,
                             rng: np.random.Generator | int | None = None, X: Any = None,
                             U: Any = None, Z: Any = None) -> ConfidenceIntervals:
        """Confidence intervals of the delays, ``A_c`` and ``B_c``
        (:mod:`dmdidc.inference.intervals`).

        Parameters
        ----------
        level : float, default 0.95
        method : {"asymptotic", "bootstrap"}, default "asymptotic"
            Delta method with the estimator's covariance, spanning the block structure with
            the block before each delay fitted too (:mod:`dmdidc.inference.intervals`,
            *Selection*; when ``estimator="auto"`` kept
            least squares after comparing it with IV, e.g. on closed-loop data, widened by the
            bias that comparison cannot exclude:
            :func:`~dmdidc.inference.intervals.with_pretest_bias`), or percentile bootstrap over
            independent trajectories (the data given to ``fit``, passed again as ``X``, ``U``
            and ``Z``) or over the parts of a list given to ``fit_statistics``.
        n_resamples : int, default 200
            Bootstrap resamples, at most ``MAX_RESAMPLES`` (10,000).  Each keeps the
            decisions of this fit (estimator, instruments, intercept, ``max_delay_``) and runs
            no checks; the block test is taken again (:mod:`dmdidc.resampling`).
        rng : numpy.random.Generator, int or None
            Bootstrap randomness.
        X, U, Z : optional
            The trajectories of ``fit`` (bootstrap of a data fit only); ``X`` may be the
            :class:`~dmdidc.IdData` given to ``fit``.

        Returns
        -------
        ConfidenceIntervals
            ``str()`` shows e.g. ``r = 2.50 +/- 0.03 s``.

        Raises
        ------
        LogarithmError
            No continuous model.
        ParameterError
            Unknown method, data given for asymptotic intervals or missing for the
            bootstrap, fewer than two trajectories.

        Examples
        --------
        >>> import numpy as np
        >>> from dmdidc import DMDidc, DelayedPlant, random_excitation
        >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
        >>> U = random_excitation(1, 3000, rng=0)
        >>> X = plant.simulate([0.0], U) + 0.05 * np.random.default_rng(1).standard_normal(3001)
        >>> est = DMDidc(max_delay=3).fit(X, U, dt=1.0)
        >>> ci = est.confidence_intervals(0.95)
        >>> bool(ci.delay.low[0] < 1.5 < ci.delay.high[0])
        True
        """
        return self._intervals(level, method, n_resamples, rng, X, U, Z, delays_only=False)

    def _intervals(self, level: float, method: str, n_resamples: int,
                   rng: np.random.Generator | int | None, X: Any, U: Any, Z: Any, *,
                   delays_only: bool) -> ConfidenceIntervals:
        """``confidence_intervals`` (``delays_only``: the asymptotic method differentiates
        the delays alone, ``A_c``'s and ``B_c``'s intervals NaN; what ``delay_ci`` reads)."""
        model = self.model_
        if method not in INTERVAL_METHODS:
            raise ParameterError(f"method must be one of {INTERVAL_METHODS}; got {method!r}")
        if not model.has_continuous:
            raise LogarithmError(model.continuous_note or "no continuous model")
        n, m, R = self._dims
        solution = self._solution
        if method == "asymptotic":
            if X is not None or U is not None or Z is not None:
                raise ParameterError("asymptotic intervals come from the fit's covariance; "
                                     "X, U and Z are for method='bootstrap'")
            ci = self._asymptotic(solution, level, self._stored("_pretest_iv"),
                                  delays_only=delays_only)
            return with_signal_units(ci, model.signal_info.state_units,
                                     model.signal_info.input_units)
        n_resamples = check_integer("n_resamples", n_resamples, minimum=2)
        if self._parts is not None:
            if X is not None or U is not None or Z is not None:
                raise ParameterError("this estimator was fitted on a list of statistics; the "
                                     "bootstrap resamples them and takes no data")
            refit, parts = self._parts_refit()
        else:
            if getattr(self, "_released", ()):
                # the data behind a private release: their refits would publish intervals of
                # the non-private fit (to three digits), breaking the release's guarantee
                raise ParameterError(
                    f"this estimator was fitted on a private release ({self._released[0]}); "
                    f"a bootstrap on data would refit them without its noise, so its interval "
                    f"would reveal the non-private estimate and break the guarantee: use "
                    f"method='asymptotic' (its covariance includes the privacy noise), or fit "
                    f"a list of separately privatized parts (fit_statistics([part, ...])) and "
                    f"bootstrap those")
            if isinstance(X, IdData):
                X, U, _, _ = as_arrays(X, U, None, caller="confidence_intervals")
            if X is None or U is None:
                raise ParameterError("the bootstrap refits on resampled trajectories: pass the "
                                     "data given to fit as X=..., U=... (and Z=...), or "
                                     "fit_statistics with a list of statistics")
            refit, parts = self._trajectory_refit(X, U, Z)
        ci = bootstrap_intervals(refit, parts, model_vector(model), n_states=n, n_inputs=m,
                                 level=level, n_resamples=n_resamples, rng=rng,
                                 silent=self._block_test.first_active < 0)
        return with_signal_units(ci, model.signal_info.state_units,
                                 model.signal_info.input_units)

    def _parts_refit(self) -> tuple[Callable[[np.ndarray], np.ndarray | None], int]:
        """The bootstrap refit over the parts given to ``fit_statistics``
        (:func:`dmdidc.resampling.parts_refit`: the fit's decisions kept) and their number."""
        refit = parts_refit(self._stored("_decisions"), self._parts, max_delay=self._R,
                            dt=self.dt, svd_rank=self.regression_rank, rank_rtol=self.rank_rtol,
                            significance=self._significance, block_rtol=self.block_rtol)
        return refit, len(self._parts)

    def _trajectory_refit(self, X: Any, U: Any, reference: Any
                          ) -> tuple[Callable[[np.ndarray], np.ndarray | None], int]:
        """The bootstrap refit over the fit's trajectories (:mod:`dmdidc.resampling`: the
        fit's decisions kept, detrending and POD modes as the fit's) and their number."""
        n, m, R = self._dims
        trajectories, references, _, _ = self._regression_data(X, U, reference, self._pod)
        if (trajectories[0][0].shape[0], trajectories[0][1].shape[0]) != (n, m):
            raise DimensionError(f"the bootstrap data have {trajectories[0][0].shape[0]} "
                                 f"states and {trajectories[0][1].shape[0]} inputs; the fit "
                                 f"had {n} and {m}: pass the data given to fit")
        refit = trajectory_refit(self._stored("_decisions"), trajectories, references,
                                 max_delay=R, dt=self.dt, instrument_lags=self.instrument_lags,
                                 method=self.method, svd_rank=self.regression_rank,
                                 rank_rtol=self.rank_rtol, chunk_size=self.chunk_size,
                                 significance=self._significance, block_rtol=self.block_rtol,
                                 level=self._check_share)
        return refit, len(trajectories)

    def _asymptotic(self, solution: RegressionSolution, level: float,
                    alternative: RegressionSolution | None = None, *,
                    delays_only: bool = False) -> ConfidenceIntervals:
        """Delta-method intervals of ``solution`` with the fit's block decision (widened by
        the pretest's bias against ``alternative``, if given; ``delays_only``: see
        :func:`~dmdidc.inference.intervals.asymptotic_intervals`)."""
        n, m, R = self._dims
        return asymptotic_intervals(solution, self._block_test, self._kept, n_states=n,
                                    n_inputs=m, max_delay=R, dt=self.dt, level=level,
                                    block_variance=self._block_variance,
                                    alternative=alternative, delays_only=delays_only)

    def delay_ci(self, level: float = 0.95, *, method: str = "asymptotic",
                 n_resamples: int = 200, rng: np.random.Generator | int | None = None,
                 X: Any = None, U: Any = None, Z: Any = None) -> IntervalEstimate:
        """Confidence interval of each channel's delay (seconds): ``confidence_intervals``
        ``(...).delay`` (same arguments), with the asymptotic method differentiating the
        delays alone (at ``n = 50`` states a fraction of the whole computation's cost);
        ``str()`` gives ``r = 2.50 +/- 0.03 s``."""
        return self._intervals(level, method, n_resamples, rng, X, U, Z,
                               delays_only=True).delay

    # ------------------------------------------------------------------ fitted results
    @property
    def model_(self) -> DelayedPlant:
        """The identified :class:`~dmdidc.DelayedPlant` (computed by ``fit``)."""
        return self._fitted(getattr(self, "_model", None))

    @property
    def regression_(self) -> RegressionSolution:
        """The least-squares regression (coefficients, covariance, spectrum, residual)."""
        return self._fitted(getattr(self, "_solution", None))

    @property
    def block_test_(self) -> BlockTest:
        """Statistics and decision of the block test (which input blocks act)."""
        return self._fitted(getattr(self, "_block_test", None))

    @property
    def diagnostics_(self) -> FitDiagnostics:
        """Every validation check of the fit (``summary()``, ``failed``, ``plot()``)."""
        return self._fitted(getattr(self, "_diagnostics", None))

    @property
    def max_delay_(self) -> int:
        """The delay bound used (``max_delay`` or the one chosen for ``max_delay=None``)."""
        self._fitted(getattr(self, "_solution", None))
        return self._dims[2]

    @property
    def delay_bound_(self) -> DelayBoundSelection | None:
        """The delay-bound selection of ``max_delay=None`` (``None`` otherwise)."""
        self._fitted(getattr(self, "_solution", None))
        return self._selection

    # the identified model's fields, read through (each raises NotFittedError before a fit)
    A_d = _model_field("A_d", "Identified discrete state matrix, shape (n, n).")
    B_blocks = _model_field("B_blocks", "Identified input blocks ``B^(0..R)``, shape "
                                        "(R + 1, n, m).")
    A_c = _model_field("A_c", "Continuous state matrix, shape (n, n).")
    B_c = _model_field("B_c", "Continuous input matrix, shape (n, m).")
    delay = _model_field("delay", "Delay of each input channel in seconds, shape (m,).")
    delay_steps = _model_field("delay_steps", "Whole delay ``w`` per channel, shape (m,).")
    delay_fraction = _model_field("delay_fraction", "Fractional delay ``p`` in [0, 1) per "
                                                    "channel, shape (m,).")
    eigs = _model_field("eigs", "Eigenvalues of ``A_d`` (the discrete DMD eigenvalues), "
                                "shape (n,).")

    @property
    def modes(self) -> np.ndarray:
        """DMD modes: unit-norm eigenvectors of ``A_d`` as columns, shape (n, n); with
        ``svd_rank`` mapped to the full space, shape (n, svd_rank)."""
        vectors = np.linalg.eig(self.model_.A_d)[1]
        if self._pod is None:
            return vectors
        full = self._pod[0] @ vectors
        return full / np.linalg.norm(full, axis=0)

    @property
    def modes_(self) -> np.ndarray | None:
        """The POD modes of ``svd_rank`` (orthonormal columns, shape (n, svd_rank)): the model
        is in the coordinates ``z = modes_^T (x - pod_centre_)``.  ``None`` without
        ``svd_rank``."""
        self._fitted(getattr(self, "_solution", None))
        return None if self._pod is None else read_only(self._pod[0])

    @property
    def pod_centre_(self) -> np.ndarray | None:
        """The sensor-space point of ``z = 0``, shape (n,), with ``svd_rank``: the snapshots'
        mean's part outside the modes' span with ``detrend="auto"``, else zero
        (:class:`DMDidc`'s ``svd_rank``), plus the data's operating point (an
        :class:`~dmdidc.IdData`'s); ``None`` without ``svd_rank``.  The model keeps it with
        ``modes_`` (``model_.info.sensors``)."""
        self._fitted(getattr(self, "_solution", None))
        if self._pod is None:
            return None
        return self._sensors().centre

    def _sensors(self) -> SensorMap:
        """The model's :class:`~dmdidc.SensorMap` (``svd_rank``)."""
        sensors = self.model_.signal_info.sensors
        if sensors is None:         # a model pickled before models kept their sensors
            modes, _, centre = self._pod
            sensors = SensorMap(("",) * len(centre), ("",) * len(centre), modes, centre)
        return sensors

    @property
    def pod_singular_values_(self) -> np.ndarray | None:
        """All singular values of the snapshots (descending; centred as the modes) with
        ``svd_rank``, to choose the rank; ``None`` without ``svd_rank``."""
        self._fitted(getattr(self, "_solution", None))
        return None if self._pod is None else read_only(self._pod[1])

    def predict(self, x0: Any, U: Any, U_past: Any = None) -> np.ndarray:
        """Predict states for new inputs over any horizon (in the full space with
        ``svd_rank``: projected onto the modes, simulated, mapped back).

        Parameters
        ----------
        x0 : array_like, shape (n,)
        U : array_like, shape (m, K)
        U_past : array_like, shape (m, R), optional
            Inputs before ``x0`` (oldest first); by default the model's ``u_op`` (zero
            without an operating point), as :meth:`DelayedPlant.simulate`.  Predicting from
            the middle of a record needs the last ``R`` inputs here: the default held a new
            user's room 2 degC off where they gave 0.06.

        Returns
        -------
        X : ndarray, shape (n, K + 1)
        """
        model = self.model_
        if self._pod is None:
            return model.simulate(x0, U, U_past)
        sensors = self._sensors()
        x0 = check_finite_array("x0", x0, ndim=1)
        if x0.shape[0] != sensors.n_sensors:
            raise DimensionError(f"x0 has {x0.shape[0]} entries; expected "
                                 f"{sensors.n_sensors} (the states the estimator was fitted "
                                 f"on)")
        return sensors.expand(model.simulate(sensors.project(x0), U, U_past))

    def to_statespace(self):
        """The identified model as a python-control discrete ``StateSpace``."""
        return self.model_.to_statespace()

    def to_control(self, **options: Any):
        """The identified model in python-control with signal names
        (:meth:`dmdidc.DelayedPlant.to_control`: exact discrete, or continuous with Pade)."""
        return self.model_.to_control(**options)

    # ------------------------------------------------------------------ validation on data
    def compare(self, data: Any, U: Any = None, *, horizon: int | None = None):
        """Fit percentage and NRMSE of each state on data, by simulation or ``horizon``-step
        prediction (:func:`dmdidc.evaluation.compare`; ``.plot()`` draws it).

        Examples
        --------
        >>> from dmdidc import DMDidc, DelayedPlant, random_excitation
        >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
        >>> U = random_excitation(1, 300, rng=0)
        >>> est = DMDidc(max_delay=3).fit(plant.simulate([0.0], U), U, dt=1.0)
        >>> V = random_excitation(1, 300, rng=1)
        >>> bool(est.compare(plant.simulate([0.0], V), V).fit_percent[0] > 99.9)
        True
        """
        from dmdidc.evaluation import compare

        return compare(self.model_, data, U, horizon=horizon)

    def resid(self, data: Any, U: Any = None, *, lags: int = 20, level: float = 0.99):
        """Auto-correlation of the one-step residuals and their cross-correlation with the
        inputs, with confidence bands (:func:`dmdidc.evaluation.resid`; ``.plot()`` draws
        them)."""
        from dmdidc.evaluation import resid

        return resid(self.model_, data, U, lags=lags, level=level)

    # ------------------------------------------------------------------ saving
    def annotated_model(self, level: float | None = 0.95) -> DelayedPlant:
        """``model_`` with the asymptotic confidence intervals at ``level`` in its
        :attr:`~dmdidc.DelayedPlant.info` (``None``, or no continuous model: without; intervals
        the delta method cannot give, because the alternative block structure they span has no
        continuous model: without, with a :class:`ContinuousModelWarning` saying why), and the
        names of the checks the fit failed in its provenance (``"failed_checks"``: a saved model
        carries them to whoever loads it, ``dmdidc simulate`` repeats them)."""
        model = self.model_
        failed = [check.name for check in self.diagnostics_.failed]
        if failed:
            info = model.signal_info
            model = model.with_info(info.renamed(
                provenance={**(info.provenance or {}), "failed_checks": failed}))
        if level is None or not model.has_continuous:
            return model
        try:
            ci = self.confidence_intervals(level)
        except LogarithmError as exc:
            # the model itself stands: keep it (a saved fit lost to its intervals helped no
            # one), and say what is missing and how to get it
            warn_model(f"the model is kept without confidence intervals: {exc}")
            return model
        intervals = {"level": ci.level, "method": ci.method, **{
            item.name if item.name != "r" else "delay": {
                "value": item.value.tolist(), "low": item.low.tolist(),
                "high": item.high.tolist(), "standard_error": item.standard_error.tolist(),
                "unit": item.unit if isinstance(item.unit, str) else item.unit.tolist()}
            for item in (ci.delay, ci.A_c, ci.B_c)}}
        return model.with_info(model.signal_info.renamed(intervals=intervals))

    def save(self, path: Any, *, level: float | None = 0.95) -> Any:
        """Write the identified model with its operating point, signal names and units,
        confidence intervals at ``level`` and data provenance (``.json`` or ``.npz``; read
        with :meth:`dmdidc.DelayedPlant.load`).

        Returns
        -------
        pathlib.Path

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from dmdidc import DMDidc, DelayedPlant, IdData, random_excitation
        >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
        >>> U = random_excitation(1, 300, rng=0)
        >>> data = IdData(plant.simulate([0.0], U), U, dt=1.0, state_names=["T"],
        ...               input_names=["heater"], source="rig 3")
        >>> path = DMDidc(max_delay=3).fit(data).save(Path(tempfile.mkdtemp()) / "model.json")
        >>> info = DelayedPlant.load(path).info
        >>> info.input_names, info.intervals["delay"]["unit"], info.provenance["data"]["source"]
        (('heater',), 's', 'rig 3')
        """
        return self.annotated_model(level).save(path)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"DMDidc({params})"

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle.  An estimator pickled before the fit stored its decisions (what
        bootstrap resamples keep) gets them back from its diagnostics: the estimator and
        instruments they name, and an affine fit where the ``offset`` check found an offset
        and passed (the fit kept it).  Least squares that ``estimator="auto"`` may have kept
        by Hausman's pretest cannot be told apart from its other reasons: its intervals raise
        a :class:`~dmdidc.ParameterError` asking for a refit.  An estimator pickled when a
        ``detrend="constant"`` (``"linear"``) fit stored its trajectories' shifts (which its
        bootstrap subtracted by the trajectories' order) has them dropped and its decisions
        name the trend: its resamples fit their own, as a new fit's do."""
        self.__dict__.update(state)
        shifts = self.__dict__.pop("_shifts", None)
        pod = state.get("_pod")
        if pod is not None and len(pod) == 2:   # pickled before the POD had a centre
            self._pod = (*pod, np.zeros(pod[0].shape[0]))
        diagnostics = state.get("_diagnostics")
        if diagnostics is None:
            return
        if "_decisions" not in state:
            offset = next((c for c in diagnostics.checks if c.name == "offset"), None)
            centred = bool(offset is not None and offset.passed
                           and offset.statistic > offset.threshold)
            self._decisions = Decisions(diagnostics.estimator, diagnostics.instruments, centred)
        if shifts is not None and self.detrend in ("constant", "linear"):
            self._decisions = dataclasses.replace(self._decisions, trend=self.detrend)
        if "_pretest_iv" not in state and (diagnostics.estimator != "ls"
                                           or self.estimator != "auto"):
            self._pretest_iv = None             # no pretest: nothing to widen

    def _stored(self, name: str) -> Any:
        """A fitted attribute that an estimator pickled by an older version may lack."""
        try:
            return getattr(self, name)
        except AttributeError:
            raise ParameterError(
                f"this estimator was pickled by an older dmdidc version that did not store "
                f"{name.lstrip('_')!r} (needed here); refit it with this version (fit, "
                f"partial_fit or fit_statistics on the same data)") from None



def _in_sensors(model: DelayedPlant, pod: tuple, data: IdData | None,
                provenance: dict) -> DelayedPlant:
    """The model in POD coordinates ``pod`` (modes, singular values, centre) with its
    :class:`~dmdidc.SensorMap`: states named ``z0 .. z{r-1}`` (in the sensors' unit when they
    share one), the sensors' names and units kept with the modes, and the data's operating
    point split: its state, a sensor-space point, joins the map's centre; its input joins the
    model's operating point."""
    modes, _, centre = pod
    n, r = modes.shape
    names = data.state_names if data is not None else tuple(f"x{i}" for i in range(n))
    units = data.state_units if data is not None else ("",) * n
    op = None if data is None else data.operating_point
    if op is not None:                 # its state, a point of the sensors, joins the centre
        centre = centre + op.state
        model = model.shifted_by(np.zeros(r), op.input)
    sensors = SensorMap(names, units, modes, centre)
    inputs = (data.input_names, data.input_units) if data is not None else (
        model.signal_info.input_names, model.signal_info.input_units)
    info = ModelInfo(tuple(f"z{i}" for i in range(r)), inputs[0],
                     (sensors.coordinate_unit,) * r, inputs[1], provenance=provenance,
                     sensors=sensors)
    return model.with_info(info)


def _package_version() -> str:
    from dmdidc import __version__

    return __version__


def _renamed(reference: Any, Z: Any) -> Any:
    """``reference``, or its former name ``Z`` with a deprecation warning."""
    if Z is None:
        return reference
    if reference is not None:
        raise ParameterError("give reference= only (Z is its former name)")
    import warnings

    warnings.warn("Z= was renamed reference=", DeprecationWarning, stacklevel=3)
    return Z


#: A signal whose mean exceeds its spread this many times: its offset crowds its variation
#: out of the regression's precision (states at 1e9 varying by 1: 1 of 24 fits rank-deficient).
#: Growth of the states' rms over a trajectory beyond which a rank-deficient fit is blamed on
#: it, and the growth the suggested window keeps (the trial's first half, grown 3e6, fitted).
_GROWTH = 1e5
_GROWTH_KEPT = 1e3
_LARGE_OFFSET = 1e6


def _name_large_offset(trajectories: list, exc: Exception) -> None:
    """Raise the cause of a rank-deficient fit when a state or an input sits at an offset
    ``_LARGE_OFFSET`` times its spread, with the remedy (removing each trajectory's mean)."""
    for kind, index in (("state", 0), ("input", 1)):
        count, mean, squares = _pooled_moments(pair[index] for pair in trajectories)
        if count < 2:
            continue
        mean, spread = np.abs(mean), np.sqrt(squares / count)
        ratio = mean / np.where(spread > 0, spread, np.inf)
        worst = int(np.argmax(ratio))
        if ratio[worst] > _LARGE_OFFSET:
            raise InsufficientExcitationError(
                f"{exc}. Likely cause: {kind} {worst} sits at {mean[worst]:.3g}, "
                f"{ratio[worst]:.2g} times its variation ({spread[worst]:.3g}), which crowds "
                f"the variation out of the regression's precision; fit with "
                f"detrend='constant' (each trajectory's mean removed) or subtract a known "
                f"operating point first (IdData(..., operating_point=...))") from exc


def _name_growth(trajectories: list, dt: float, exc: Exception) -> None:
    """Raise the cause of a rank-deficient fit when the states grow by more than
    ``_GROWTH`` over a trajectory (an unstable plant or a diverging loop), with the window
    before the growth swamps double precision.  Grown by ``G``, every state follows the
    growing mode, the other directions (and the early samples) shrink to about ``1 / G`` of
    the late states, and the regression's rank tolerance takes them for rounding: the states
    look collinear.  Named only for a fit already refused, and only from ``G > 1e5`` (a trial:
    a mode at +0.02 1/s, |x| up to 3.3e13 over 3000 samples, was refused for "inputs that do
    not excite the plant", while its first half fitted right)."""
    for t, (X, _) in enumerate(trajectories):
        K = X.shape[1]
        width = max(10, K // 100)
        if K < 3 * width:
            continue
        windows = K // width
        rms = np.sqrt(np.mean(X[:, :windows * width].reshape(X.shape[0], windows, width) ** 2,
                              axis=(0, 2)))
        low = np.minimum.accumulate(np.where(rms > 0, rms, np.inf))
        growth = rms / low
        top = int(np.argmax(growth))
        if not growth[top] > _GROWTH:
            continue
        start = int(np.argmin(rms[:top + 1]))
        # the last sample before the states have grown by _GROWTH_KEPT
        k = int(np.argmax(growth > _GROWTH_KEPT)) * width
        rate = np.log(growth[top]) / ((top - start) * width * dt)
        which = f" of trajectory {t}" if len(trajectories) > 1 else ""
        # the cause first: the regression's own report blames the excitation
        raise InsufficientExcitationError(
            f"the states{which} grow by a factor {growth[top]:.2g} over "
            f"the record (rms {rms[start]:.3g} at samples {start * width}-{(start + 1) * width}"
            f", {rms[top]:.3g} at {top * width}-{(top + 1) * width}; about {rate:.2g} 1/s): "
            f"an unstable plant or a diverging closed loop, whose late samples swamp the early "
            f"ones beyond double precision, so that every state follows the growing mode. Fit "
            f"a window before the growth dominates (the first {k} samples grow by less than "
            f"{_GROWTH_KEPT:g}: X[:, :{k + 1}], U[:, :{k}]), several short experiments, or "
            f"record with the loop stabilized. The regression's report: {exc}") from exc


def _pooled_moments(arrays) -> tuple[int, np.ndarray, np.ndarray]:
    """``(count, mean, sum of squared deviations)`` of the rows of ``arrays`` (k_i columns
    each) joined along time, combined trajectory by trajectory (Chan, Golub and LeVeque's
    pairwise update) instead of from one joined copy: 30 000 experiments of 200 samples at
    n = 50 joined took 2.4 GB, and their deviations as much again."""
    count, mean, squares = 0, 0.0, 0.0
    for a in arrays:
        k = a.shape[1]
        if k == 0:
            continue
        own = a.mean(axis=1)
        delta, total = own - mean, count + k
        squares = squares + k * a.var(axis=1) + delta ** 2 * (count * k / total)
        mean, count = mean + delta * (k / total), total
    return count, np.asarray(mean), np.asarray(squares)


def _name_held_input(U: Any, data: IdData | None, exc: Exception) -> None:
    """Raise the cause of a rank-deficient fit when it is an input held at one value (as a
    constant state is refused by name): the regression's message lists every possible cause
    and names none."""
    held = held_inputs(U)
    if not held:
        return
    i, value = next(iter(held.items()))
    name = repr(data.input_names[i]) if data is not None else f"{i} (row {i} of U)"
    raise held_input_error(name, value, len(held), "U without that row; read_data or dmdidc "
                           "identify --inputs without it") from exc
