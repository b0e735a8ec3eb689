"""Bootstrap refits (over trajectories or statistics parts) at the cost of the estimates.

``DMDidc.confidence_intervals(method="bootstrap", X=..., U=...)`` refits the model on
trajectories resampled with replacement (:func:`dmdidc.inference.intervals.
bootstrap_intervals`).  Each fact is decided once, on all data, by the reported fit, and every
resample keeps it (:class:`Decisions`): the estimator (what ``estimator="auto"`` chose: a
resample does not switch to least squares, robust IV or back), the instruments, whether the
fit is affine (centred), the delay bound ``R`` and the block test's settings.  The block
decision itself is taken again per resample (its variability belongs in the interval), and no
diagnostic check runs per resample.

Where the estimator's moments add up over trajectories (least squares, and IV with the
inputs, the lagged states or an exogenous signal as instruments) the statistics of each
trajectory are computed once and a resample is their sum weighted by its counts plus one
solve.  A centred fit centres that sum with the resample's own mean (one intercept over the
resampled samples, as a fit on the resampled data does; centring commutes with nothing else,
so it comes after the sum).  Least squares keeps its solver policy: iterative refinement or QR
over the resampled data when the equilibrated moments are ill-conditioned.

Refined IV (instruments simulated from the model: ``estimator="auto"`` or ``"iv"`` with the
default ``instruments``) and the robust estimators depend on every sample through the model or
the weights: those resamples are fitted on the resampled data with the decisions fixed, the
first stage's input-instrument statistics summed as above.

The bootstrap over the parts given to ``fit_statistics`` (:func:`parts_refit`) follows the same
rule: a resample is the counts-weighted sum of the parts (:func:`weighted_total`, plain or
privatized) and the solve the fit used (its estimator, instruments and ``R``), with no checks.
A privatized part drawn ``c`` times brings its one noise realization ``c`` times: ``c N``, of
variance ``c^2 sigma^2``, not the ``c sigma^2`` of ``c`` independent releases (what the sum ``+``
of the repeated parts used to declare, so the noise covariance of every resample, and with it
its block test, was too small; ``+`` now refuses statistics that share a release).  The
resample declares ``sum_i c_i^2 sigma_i^2`` and lists each drawn release ``c_i`` times, which
:func:`dmdidc.statistics.fit.effective_noise_variance` reads as one realization scaled by
``c_i`` (SaS: scale ``c_i gamma_i``).  A resample's total differs from the fit's by
``sum_i (c_i - 1) (S_i + N_i)`` (part ``i``'s statistics and noise), whose spread is that of the
fit's total around its mean for independent parts: the privacy noise is in the percentile
intervals without a model of it (coverage measured in docs/noisy-data.md, *Confidence
intervals of private fits*).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dmdidc.errors import InsufficientExcitationError, ParameterError
from dmdidc.fitting import FitOutcome, _solve, _statistics, fit_trajectories, fit_with_trends
from dmdidc.identified import identified_model
from dmdidc.inference.intervals import model_vector
from dmdidc.regression.solution import GramAccumulator, RegressionSolution, least_squares
from dmdidc.statistics.statistics import SufficientStatistics

__all__ = ["Decisions", "parts_refit", "trajectory_refit", "weighted_total"]

#: Fixed instruments whose moments add up over trajectories.
_ADDITIVE_INSTRUMENTS = ("inputs", "states", "exogenous")


@dataclass(frozen=True)
class Decisions:
    """What a fit decided on all data, kept by each of its bootstrap resamples.

    Attributes
    ----------
    estimator : {"ls", "iv", "huber", "huber_iv"}
        The estimator the fit used (``estimator="auto"``'s choice).
    instruments : str or None
        Its instruments (``"model"``: refined; ``"inputs"``, ``"states"``, ``"exogenous"``).
    centred : bool
        The fit is affine (intercept kept).
    trend : {None, "constant", "linear"}
        The fit's per-trajectory trends (``detrend``): each resample fits its own
        (:func:`dmdidc.fitting.trend_shifted`), as a fit on the resampled data does.
    reference_level : {None, "constant", "centred"}
        How the fit's instruments read a reference's level (:func:`dmdidc.fitting.
        reference_level_rule`; ``None``: no reference, or as given by a fit pickled before).

    Examples
    --------
    >>> Decisions("iv", "inputs", False).additive
    True
    >>> Decisions("iv", "model", True).additive
    False
    >>> Decisions("ls", None, False, trend="constant").additive
    False
    """

    estimator: str
    instruments: str | None
    centred: bool
    trend: str | None = None
    reference_level: str | None = None

    @classmethod
    def of(cls, outcome: FitOutcome) -> Decisions:
        """The decisions of a fit's outcome (:class:`dmdidc.fitting.FitOutcome`)."""
        return cls(outcome.estimator, outcome.instruments, bool(outcome.centred),
                   reference_level=outcome.reference_level)

    @property
    def additive(self) -> bool:
        """Whether the estimator's moments add up over trajectories (module notes); not
        with per-trajectory trends, which each resample fits on its own trajectories."""
        return self.trend is None and (
            self.estimator == "ls" or (self.estimator == "iv"
                                       and self.instruments in _ADDITIVE_INSTRUMENTS))


def weighted_total(parts: list[SufficientStatistics], counts: np.ndarray
                   ) -> SufficientStatistics:
    """``sum_i counts[i] * parts[i]`` of statistics of one layout: a bootstrap resample of
    the parts, part ``i`` drawn ``counts[i]`` times (``sum`` of the repeated parts of plain
    statistics, without the repetitions).

    A privatized part drawn ``c`` times holds its noise realization ``c`` times: the total
    declares ``noise_variance = sum_i counts[i]^2 noise_variance_i`` and lists each drawn
    part's releases ``counts[i]`` times (module notes).

    Raises
    ------
    ParameterError
        No parts, ``counts`` that are not ``len(parts)`` integers >= 0 with a positive sum,
        or parts that cannot be added (other bounds or centring, a shared release).
    DimensionError
        Parts of other layouts.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import SufficientStatistics
    >>> rng = np.random.default_rng(0)
    >>> parts = [SufficientStatistics.from_data(rng.standard_normal((1, 31)),
    ...                                         rng.standard_normal((1, 30)), max_delay=1)
    ...          for _ in range(3)]
    >>> total = weighted_total(parts, np.array([2, 0, 1]))
    >>> bool(np.allclose(total.gram, (parts[0] + parts[0] + parts[2]).gram))
    True
    >>> total.n_samples, total.n_trajectories
    (87, 3)
    >>> bounded = [SufficientStatistics.from_data(
    ...     rng.uniform(-1, 1, (1, 31)), rng.uniform(-1, 1, (1, 30)), max_delay=1,
    ...     state_bound=1.0, input_bound=1.0).privatize(epsilon=1.0, delta=1e-5, rng=k)
    ...     for k in range(3)]
    >>> noisy = weighted_total(bounded, np.array([2, 0, 1]))
    >>> bool(np.isclose(noisy.noise_variance, 5 * bounded[0].noise_variance))  # 2^2 + 1^2
    True
    """
    if len(parts) == 0:
        raise ParameterError("parts is empty: expected the statistics of one trajectory each")
    counts = np.asarray(counts)
    if (counts.shape != (len(parts),) or not np.issubdtype(counts.dtype, np.integer)
            or np.any(counts < 0) or counts.sum() == 0):
        raise ParameterError(f"counts has {counts.size} entries ({counts.dtype}): expected "
                             f"{len(parts)} integers >= 0, not all zero (how often each part "
                             f"is drawn)")
    for part in parts[1:]:
        parts[0]._compatible(part)          # (the checks of `+`: layouts, bounds, centring)
    owner: dict[str, int] = {}              # and `+`'s refusal of a shared release
    for i, part in enumerate(parts):
        for release in part.releases:
            j = owner.setdefault(release.token, i)
            if j != i:
                raise ParameterError(f"parts[{j}] and parts[{i}] share a privatized release "
                                     f"(one noise realization): list each part once and "
                                     f"draw it more often with counts")
    return SufficientStatistics._weighted_sum(parts, counts)    # (the combination of `+`)


def _model_vector(n: int, m: int, R: int, dt: float, significance: float,
                  block_rtol: float | None) -> Callable[[FitOutcome], np.ndarray | None]:
    """The model vector of a resample's outcome: block test and recovery, no checks."""
    def vector(outcome: FitOutcome) -> np.ndarray | None:
        return model_vector(identified_model(outcome, n_states=n, n_inputs=m, max_delay=R,
                                             dt=dt, significance=significance,
                                             block_rtol=block_rtol).model)
    return vector


def _summed_refit(decisions: Decisions, total: Callable[[np.ndarray], SufficientStatistics],
                  solve: Callable[[SufficientStatistics, np.ndarray], RegressionSolution],
                  vector: Callable[[FitOutcome], np.ndarray | None]
                  ) -> Callable[[np.ndarray], np.ndarray | None]:
    """``refit(counts)``: the solve of the resample's summed statistics with ``decisions``
    kept, or ``None`` when they do not identify the regression (a counted failure)."""
    def refit(counts: np.ndarray) -> np.ndarray | None:
        stats = total(counts)
        try:
            solution = solve(stats, counts)
        except InsufficientExcitationError:
            return None
        return vector(FitOutcome(solution, decisions.estimator, decisions.instruments, stats,
                                 centred=decisions.centred))
    return refit


def parts_refit(decisions: Decisions, parts: list[SufficientStatistics], *, max_delay: int,
                dt: float, svd_rank: int | None, rank_rtol: float, significance: float,
                block_rtol: float | None) -> Callable[[np.ndarray], np.ndarray | None]:
    """``refit(counts)``: the model vector of ``fit_statistics`` on part ``i`` repeated
    ``counts[i]`` times, with ``decisions`` kept and no checks (module notes), or ``None``
    without a continuous model or when the resample does not identify the regression.

    Parameters
    ----------
    decisions : Decisions
        Those of the ``fit_statistics`` fit (its estimator and instruments).
    parts : list of SufficientStatistics
        The parts given to ``fit_statistics`` (plain or privatized).
    max_delay : int
        The fit's ``R``.
    dt : float
    svd_rank, rank_rtol
        As in :class:`~dmdidc.DMDidc` (``svd_rank`` its ``regression_rank``).
    significance, block_rtol
        The block test's.

    Returns
    -------
    callable
        For :func:`~dmdidc.inference.intervals.bootstrap_intervals`.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, SufficientStatistics, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> parts = [SufficientStatistics.from_data(plant.simulate([0.0], U), U, max_delay=3)
    ...          for U in (random_excitation(1, 100, rng=s) for s in range(4))]
    >>> refit = parts_refit(Decisions("ls", None, False), parts, max_delay=3, dt=1.0,
    ...                     svd_rank=None, rank_rtol=1e-10, significance=1e-3,
    ...                     block_rtol=None)
    >>> np.round(refit(np.array([2, 0, 1, 1])), 6)      # delay, A_c, B_c
    array([ 1.5, -0.5,  1. ])
    """
    R = max_delay
    return _summed_refit(
        decisions, lambda counts: weighted_total(parts, counts),
        lambda stats, _: _solve(stats, R, decisions.estimator, decisions.centred,
                                svd_rank=svd_rank, rank_rtol=rank_rtol,
                                reference_level=decisions.reference_level),
        _model_vector(parts[0].n_states, parts[0].n_inputs, R, dt, significance, block_rtol))


def trajectory_refit(decisions: Decisions, trajectories: list[tuple[np.ndarray, np.ndarray]],
                     references: list[np.ndarray] | None, *, max_delay: int, dt: float,
                     instrument_lags: int | None, method: str, svd_rank: int | None,
                     rank_rtol: float, chunk_size: int, significance: float,
                     block_rtol: float | None, level: float
                     ) -> Callable[[np.ndarray], np.ndarray | None]:
    """``refit(counts)``: the model vector of the fit on trajectory ``i`` repeated
    ``counts[i]`` times, with ``decisions`` kept (module notes), or ``None`` without a
    continuous model or when the resample does not identify the regression.

    Parameters
    ----------
    decisions : Decisions
    trajectories : list of (X (n, K+1), U (m, K))
        As the regression of the fit saw them (detrended, projected on its POD modes), before
        the shifts of per-trajectory trends (``decisions.trend``: each resample fits its own,
        so any order of the trajectories gives the same resamples' fits).
    references : list of ndarray (q, K) or None
        The reference or exogenous instrument signal of each trajectory.
    max_delay : int
        The fit's ``R``.
    dt : float
    instrument_lags, method, svd_rank, rank_rtol, chunk_size
        As in :class:`~dmdidc.DMDidc` (``svd_rank`` its ``regression_rank``).
    significance, block_rtol
        The block test's.
    level : float
        Level of the fit's own statistical checks (the refined first stage's).

    Returns
    -------
    callable
        For :func:`~dmdidc.inference.intervals.bootstrap_intervals`.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> Us = [random_excitation(1, 100, rng=s) for s in range(4)]
    >>> data = [(plant.simulate([0.0], U), U) for U in Us]
    >>> refit = trajectory_refit(Decisions("ls", None, False), data, None, max_delay=3,
    ...                          dt=1.0, instrument_lags=None, method="auto", svd_rank=None,
    ...                          rank_rtol=1e-10, chunk_size=65536, significance=1e-3,
    ...                          block_rtol=None, level=0.01)
    >>> np.round(refit(np.array([2, 0, 1, 1])), 6)      # delay, A_c, B_c
    array([ 1.5, -0.5,  1. ])
    """
    R = max_delay
    n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
    options = dict(svd_rank=svd_rank, rank_rtol=rank_rtol)
    kind = decisions.instruments if decisions.estimator == "iv" else None
    signals = references if references is not None else [None] * len(trajectories)

    vector = _model_vector(n, m, R, dt, significance, block_rtol)

    def chosen(counts: np.ndarray) -> list[int]:
        return [k for k, c in enumerate(counts) for _ in range(c)]

    if decisions.additive:
        parts = [_statistics([trajectory], R, kind if kind != "exogenous" else [signal],
                             instrument_lags if kind is not None else None)
                 for trajectory, signal in zip(trajectories, signals, strict=True)]

        def solve(stats: SufficientStatistics, counts: np.ndarray) -> RegressionSolution:
            if decisions.estimator == "ls" and not decisions.centred:
                # as the fit: the Gram pass is the statistics', refined on the data when the
                # moments are ill-conditioned
                moments = GramAccumulator.from_moments(stats.gram, stats.sums, stats.n_samples,
                                                       n_states=n, n_inputs=m, max_delay=R)
                return least_squares([trajectories[k] for k in chosen(counts)], R,
                                     method=method, chunk_size=chunk_size,
                                     accumulated=moments, **options)[0]
            return _solve(stats, R, decisions.estimator, decisions.centred,
                          reference_level=decisions.reference_level, **options)
        return _summed_refit(decisions, lambda counts: weighted_total(parts, counts), solve,
                             vector)

    refined = decisions.instruments == "model" and references is None
    # the refined first stage's statistics (the fit's memo), summed instead of a pass; not
    # with trends, whose shifts differ per resample
    inputs = ([_statistics([trajectory], R, "inputs") for trajectory in trajectories]
              if refined and m > 0 and decisions.trend is None else None)

    def refit(counts: np.ndarray) -> np.ndarray | None:
        picked = chosen(counts)
        memo = {} if inputs is None else {"inputs": weighted_total(inputs, counts)}
        def fit(data: list) -> FitOutcome:
            return fit_trajectories(
                data, None if references is None else [references[k] for k in picked],
                max_delay=R, estimator=decisions.estimator,
                instruments=decisions.instruments or "auto", instrument_lags=instrument_lags,
                offset="centred" if decisions.centred else "none", method=method,
                chunk_size=chunk_size, level=level, memo=memo,
                reference_level=decisions.reference_level, **options)
        data = [trajectories[k] for k in picked]
        try:
            outcome = (fit(data) if decisions.trend is None
                       else fit_with_trends(data, R, decisions.trend, fit)[0])
        except InsufficientExcitationError:
            return None
        return vector(outcome)
    return refit
