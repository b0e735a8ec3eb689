"""Right or loud about the data an output-error fit assumes: open loop, no outliers, no gaps.

An output-error fit of :class:`~dmdidc.OutputDMDidc` assumes that the inputs do not react to
the output noise and that the noise has no gross errors.  Neither shows in the fit's own
tests (its residuals may stay independent of the *past* inputs), so two residual checks of
:class:`~dmdidc.DMDidc` are run on the output-error residuals, with its statistics and
thresholds (:func:`dmdidc.inference.residuals.residual_checks`, each at false-alarm
probability ``significance`` on well-posed data):

* **feedback**: the residuals' correlation with *later* inputs, each input prewhitened by its
  own autoregressive filter and the residuals alike, standardized by Bartlett's variance,
  Bonferroni over lags and pairs.  In open loop the inputs are independent of the noise at
  every lag; an output feedback makes ``u_k`` react to the noise in ``y_k`` (and in earlier
  outputs).  Without feedthrough the output ``y_k`` does not depend on ``u_k``, so lag 0
  (``u_k`` against ``e_k``) is feedback too and is tested (the inputs are delayed by one
  sample for the check); with feedthrough ``D u_k`` is fitted and only later inputs are tested.
* **outliers**: the largest robustly standardized residual (median and MAD per output)
  against the Gaussian quantile at ``significance`` divided by the number of residuals, raised
  by the MAD scale's sampling error (:func:`~dmdidc.inference.residuals.outlier_threshold`).
* **noise_levels** (several experiments): do the experiments share each output's noise
  level?  The fit pools one noise variance per output over every experiment; its order's
  likelihood ratios, residual tests and intervals read that pooled level.  Where the
  experiments differ, the noisier ones' scatter passes for structure (a review, 2026-11-28:
  two experiments of one 3-state plant whose inputs and noise were 10 times apart, 30 dB each,
  gave orders 4-8 on 8 of 8 random plants, one of them silently, the others warning only
  "order uncertain" or "precision"; with one noise level, 7 of 8 right).  The outlier check's
  test of the experiments' robust scales (the ``chi^2`` test of their logarithms at level
  1e-3, corrected for serial correlation: :func:`~dmdidc.inference.residuals.
  largest_residual`) decides that they differ; the check fails when, beyond that, two
  experiments' residual variances of one output are more than :data:`UNEQUAL_NOISE` apart
  (the estimator's threshold for weighting outputs).  Pieces of fewer than 30 residuals are
  left out of it; not applicable to fewer than two others, or to an exact fit.

* **convergence**: did the output-error refinement reach its minimum
  (:func:`convergence`)?  The search converged when its last step was at rounding, or when
  the local quadratic model of the residual sum of squares promises at most
  :data:`~dmdidc.output.refine.CHI2_GAIN` noise variances more (the parameters within about
  0.3 standard errors of the minimum it points to).  A search that reaches its evaluation
  limit with more to gain is continued (:class:`~dmdidc.OutputDMDidc`); one that still
  has more to gain, or can take no damped step, or ends at an overflowing trial, fails.
  An exact fit (noise-free outputs reproduced to rounding) is not judged by its step rule:
  there the search crawls at rounding, where neither a step's gain nor the model's in
  rounding's variances says anything, and Wald intervals at ``rss / dof`` are rounding's
  (the noise-free family of a review, 2026-11-28: 85 of 90 delay intervals missed the truth
  by 30-400 half-widths).  Its intervals are taken at its whole residual instead
  (:func:`~dmdidc.output.intervals.profiles`, *Exact fits*), which the finding says; it
  passes when its search ended by a step or at the outputs' own rounding (a relative residual
  of 1e-20), and fails as any other when its continued search stopped above that at its limit
  or without a descent.  The
  searches of candidate fits that a comparison rule ends early by design (a larger order, a
  second delay, that cannot become significant) are not the model and are not judged.

Without feedthrough the first residual of each experiment has no input of its sample and is
not tested (by either check): the outlier threshold counts ``sum(K_i - R - 1)`` residuals and
``outlier_samples_`` lists only tested ones.

A failed check warns with its statistic, threshold and remedy, once: in
:meth:`~dmdidc.OutputDMDidc.partial_fit`, which solves the model after every chunk, a check that
keeps failing does not warn again (``checks_`` still shows it failed); one that passed in
between and fails again warns anew, and every :meth:`~dmdidc.OutputDMDidc.fit` warns.  The
estimator's other findings (order uncertain, residual check, coloured noise, delay not
determined, a channel without effect or at the bound) follow the same rule,
:func:`~dmdidc.errors.warn_new`, which :meth:`dmdidc.DMDidc.partial_fit` follows too.

Lost samples (NaN) are refused with a :class:`~dmdidc.errors.NonFiniteError` that names the
remedy, the missing-sample policies of :mod:`dmdidc.missing` through :class:`~dmdidc.IdData`
(:func:`finite_signal`); pieces too short for the subspace step's window are not used
(:func:`windowed`).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from _toolbox.errors import NonFiniteError
from dmdidc.errors import warn_new
from dmdidc.inference.checks import Check
from dmdidc.inference.residuals import (
    _OWN_SCALE_SAMPLES,
    _SCALE_EQUALITY_LEVEL,
    largest_residual,
    residual_analysis,
    residual_checks,
)
from dmdidc.output.refine import CHI2_GAIN as _CHI2_GAIN
from dmdidc.trajectories import check_data

__all__ = ["SCREENS", "UNEQUAL_NOISE", "convergence", "data_checks", "finite_signal",
           "noise_levels",
           "relative_levels", "warn_new", "windowed"]

#: The checks run, by their names in :func:`~dmdidc.inference.residuals.residual_checks`.
SCREENS = ("feedback", "outliers")

#: Largest ratio of two residual variances that one pooled noise variance may stand for: of
#: two outputs (above it :class:`~dmdidc.OutputDMDidc` refits each output scaled by its
#: residual standard deviation), or of one output in two experiments (above it, where the
#: experiments' levels differ beyond chance, the ``noise_levels`` check fails).  Equal noise
#: scatters the ratio of two outputs by a few per cent (K = 3000, 2 or 3 sensors at 30 dB:
#: 1.00-1.07 on 12 plants); at 1.96 the unweighted fit's intervals were as calibrated as the
#: weighted one's, at 9 not (docs: *Unequal sensor noise and sensor offsets*;
#: benchmarks/bench_output_unequal_noise.py).
UNEQUAL_NOISE = 2.0

_NOISE_LEVELS_QUESTION = "do the experiments share each output's noise level?"
_NOISE_LEVELS_REMEDY = (
    "fit with detrend='constant' (each experiment's mean removed; the outputs' level is then "
    "not kept): fit(...) then weighs each experiment by its level itself, dividing its "
    "outputs and inputs by it (the plant's gains and delays do not change when both are "
    "divided); it cannot about one offset common to the experiments, which the division "
    "would split, nor can partial_fit, which streams the experiments before their levels are "
    "known. Or fit experiments of one noise level together")

_REMEDIES = {
    "feedback": "the inputs react to the outputs (closed-loop data), which biases output-error "
                "fits; OutputDMDidc has no reference= path: identify from an open-loop "
                "experiment (or one whose feedback acts through an external reference large "
                "against the noise), or, when every state is measured, use "
                "DMDidc().fit(..., reference=r)",
    "outliers": "the output-error fit is least squares and gross errors move it: set the "
                "samples outlier_samples_ names to NaN (Y[:, est.outlier_samples_[e]] = nan "
                "in experiment e, numbered as the fit saw it) and fit IdData(Y, U[:, :-1], "
                "dt=dt, missing='drop') (split at them; U whole when Y has one sample more)",
}


def windowed(Y: Any, U: Any, shortest: int) -> tuple[Any, Any]:
    """The experiments (lists ``Y``, ``U`` of arrays) whose ``U`` has at least ``shortest``
    samples (one window's span plus one, as :meth:`~dmdidc.OutputDMDidc.partial_fit` keeps):
    shorter pieces, such as ``IdData(..., missing="drop")`` leaves between close gaps, add no
    window to the subspace step and more initial states than samples to the refinement.  All
    of them when none is long enough (the subspace step then says what is missing); single
    arrays unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> Y, U = [np.zeros((1, 51)), np.zeros((1, 3))], [np.zeros((1, 50)), np.zeros((1, 2))]
    >>> [u.shape[1] for u in windowed(Y, U, 25)[1]]
    [50]
    """
    if not isinstance(U, (list, tuple)):
        return Y, U
    kept = [i for i, u in enumerate(U) if np.shape(u)[-1] >= shortest] or range(len(U))
    return [Y[i] for i in kept], [U[i] for i in kept]


def finite_signal(name: str, value: object) -> np.ndarray:
    """``value`` as a finite 2-D array within the data magnitude limit
    (:func:`~dmdidc.trajectories.check_data`); NaN (lost samples) raise a :class:`NonFiniteError`
    whose remedy says how to fit such data (:mod:`dmdidc.missing`, as for DMDidc).

    Examples
    --------
    >>> import numpy as np
    >>> try:
    ...     finite_signal("Y", [[1.0, np.nan, 3.0]])
    ... except ValueError as error:
    ...     print(str(error)[:62])
    Y contains 1 NaN or infinite entries; all entries must be fini
    """
    try:
        return check_data(name, value)
    except NonFiniteError as error:
        lost = np.flatnonzero(np.isnan(np.asarray(value, dtype=float)).any(axis=0))
        if not lost.size:                  # infinite values are not lost samples
            raise
        raise NonFiniteError(
            f"{error}: {lost.size} sample(s) with NaN, the first at {lost[0]}. Lost samples: "
            f"pass the data as IdData(Y, U[:, :-1], dt=dt, missing='drop') (the experiment "
            f"is split at the gaps; missing='interpolate' fills them linearly) to fit(data), "
            f"as for DMDidc") from None


def data_checks(experiments: list[tuple[np.ndarray, np.ndarray]],
                residuals: list[np.ndarray], max_delay: int, *, significance: float,
                feedthrough: bool, warned: frozenset[str] = frozenset()
                ) -> tuple[tuple[Check, ...], tuple[np.ndarray, ...]]:
    """The feedback and outlier checks of an output-error fit; each failed one warns once.

    Parameters
    ----------
    experiments : list of (Y (l, K), U (m, K))
        The data the fit used.
    residuals : list of ndarray, shape (K - max_delay, l)
        Its output-error residuals from sample ``max_delay``.
    max_delay : int
    significance : float
        False-alarm probability of each check on well-posed data.
    feedthrough : bool
        The model has ``D``: lag 0 is fitted, only later inputs are tested for feedback.
    warned : frozenset of str, optional
        Names of checks whose failure was already reported (by the previous solve of the same
        stream in :meth:`~dmdidc.OutputDMDidc.partial_fit`): failing again, they do not warn
        again (they still fail in ``checks``); a check that passed in between warns anew.

    Returns
    -------
    checks : tuple of Check
        ``feedback`` and ``outliers`` (not applicable with fewer than 100 residuals), and
        ``noise_levels`` (:func:`noise_levels`).
    outliers : tuple of ndarray of int
        Per experiment, the samples whose residual is beyond the outlier threshold in some
        output, among those the check tested (without feedthrough the first residual of each
        experiment is not: it has no input of the same sample); empty unless the check failed.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> U = rng.standard_normal((1, 2000))
    >>> Y = rng.standard_normal((1, 2000))
    >>> E = Y[:, 4:].T                           # the residuals of the model y = 0, from sample 4
    >>> checks, outliers = data_checks([(Y, U)], [E], 4, significance=1e-3, feedthrough=False)
    >>> [c.passed for c in checks], outliers[0].size
    ([True, True, None], 0)
    """
    shift = 0 if feedthrough else 1
    parts, tested = [], [E[shift:] for E in residuals]
    for (Y, U), E in zip(experiments, tested, strict=True):
        # residual k (sample R + k) paired with inputs delayed by ``shift``: the check's lag
        # -1 is then u_k against e_k without feedthrough.  The shift drops one residual per
        # experiment: the outlier threshold counts the residuals tested, sum(K_i - R - shift)
        K = U.shape[1]
        parts.append((np.ascontiguousarray(E.T), U[:, :K - shift], Y[:, shift:]))
    analysis = residual_analysis(parts, max_delay, correlations=False)
    checks = tuple(residual_checks(analysis, significance, only=SCREENS))
    result, outliers = [], tuple(np.zeros(0, dtype=int) for _ in residuals)
    for check in checks:
        if check.name == "outliers" and check.failed:
            outliers = _beyond(analysis, tested, check.threshold, max_delay + shift)
            check = dataclasses.replace(check, finding=(
                f"{check.finding}; {sum(o.size for o in outliers)} sample(s) beyond the "
                f"threshold (outlier_samples_)"))
        if check.name == "feedback" and shift:
            # the inputs were delayed by ``shift`` samples: say the inputs' own lag
            check = dataclasses.replace(check, finding=re.sub(
                r"(\d+) samples later", lambda found: f"{int(found[1]) - shift} samples later",
                check.finding))
        if check.failed:
            remedy = _REMEDIES[check.name]
            if check.name == "feedback" and shift and " 0 samples later" in check.finding:
                # u_k against e_k: an unmodelled direct feedthrough leaves the same correlation
                remedy += ("; or the outputs react to the inputs of the same sample (a direct "
                           "feedthrough D u_k): then fit OutputDMDidc(feedthrough=True)")
            check = dataclasses.replace(check, remedy=remedy)
            warn_new(check.name, check.message(), warned)
        result.append(check)
    # an exact fit's residuals are rounding: not tested, as the outlier check says
    levels = noise_levels(analysis, applicable=any(
        check.name == "outliers" and check.passed is not None for check in result))
    if levels.failed:
        warn_new(levels.name, levels.message(), warned)
    return (*result, levels), outliers


_CONVERGENCE_QUESTION = "did the output-error refinement reach its minimum?"
_CONVERGENCE_REMEDY = (
    "the model, its delays and intervals are those of a search short of its minimum; the "
    "search crawls along directions the data barely fix: excite the inputs more richly or "
    "record more samples, compare fits with order= set one lower (a mode the data do not "
    "support), or lower max_delay if the delays are known to be shorter")
#: Per ending of the search (:data:`~dmdidc.output.refine.ENDINGS`), what it means.
_ENDINGS = {
    "evaluations": "the search stopped at its evaluation limit (after {evaluations} "
                   "evaluations, continued while it gained) with its local quadratic model still "
                   "promising a decrease of {gain:.3g} noise variances (converged: at most "
                   "{threshold:g}): the parameters may be about {distance:.2g} standard errors "
                   "from the minimum",
    "no_descent": "no damped Gauss-Newton step lowered the residual sum of squares (after "
                  "{evaluations} evaluations the damping overflowed or shrank the step to "
                  "rounding) while the local quadratic "
                  "model promises a decrease of {gain:.3g} noise variances (converged: at most "
                  "{threshold:g}): a rounding-limited or inconsistent Jacobian",
    "diverged": "the search ended at a trial whose simulated outputs overflowed (after "
                "{evaluations} evaluations): the model's dynamics are unstable over the record",
    "stopped": "the search was ended before its minimum by a comparison rule (after "
               "{evaluations} evaluations), which only candidate fits that cannot win should "
               "meet",
}


def convergence(refined: Any, exact: bool = False, rounded: bool = False) -> Check:
    """The ``convergence`` check of an output-error fit (module notes) from its
    :class:`~dmdidc.output.refine.Refined`: ``ending``, ``evaluations`` and ``gain`` (the
    local quadratic model's further decrease in noise variances, the statistic).  ``exact``:
    the fit reproduces noise-free outputs to rounding (the estimator's exact fit), where
    neither the search's step rule nor its gain, in rounding's variances, says whether it
    converged: a step rule's ending passes, and the finding says that the intervals are at
    the fit's whole residual instead (:func:`~dmdidc.output.intervals.profiles`); ``rounded``
    (exact to the outputs' own rounding, the estimator's ``_ROUNDED``): so does every ending
    but an overflow.  An exact fit above that floor whose continued search still ended at
    its limit, or without a descent, passes when the gain it leaves is at most a tenth of its
    residual sum of squares (``gain <= 0.1 N``, ``N`` residuals: its intervals are at that
    whole residual), and fails as any other otherwise.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> check = convergence(SimpleNamespace(ending="evaluations", evaluations=240, gain=3.8))
    >>> check.failed, check.message()[:58]
    (True, "check 'convergence' failed (statistic 3.8 > threshold 0.1)")
    >>> convergence(SimpleNamespace(ending="converged", evaluations=5, gain=0.0)).passed
    True
    """
    numbers = {"evaluations": refined.evaluations, "gain": refined.gain,
               "threshold": _CHI2_GAIN, "distance": float(np.sqrt(max(refined.gain, 0.0)))
               if np.isfinite(refined.gain) else np.nan}
    if exact and (refined.ending in ("converged", "stopped")
                  or rounded and refined.ending != "diverged"):
        return Check("convergence", _CONVERGENCE_QUESTION, True, refined.gain, _CHI2_GAIN,
                     finding=(f"exact fit: the search ended ({refined.ending}) at rounding "
                              f"after {refined.evaluations} evaluations, where its noise "
                              f"variances are rounding's and say nothing of convergence; the "
                              f"intervals hold the parameters the fit's whole residual allows "
                              f"(delay_ci: the delays' profiles at that residual), not a "
                              f"noise's standard errors"))
    size = sum(np.size(e) for e in (getattr(refined, "residuals", None) or ()))
    if exact and refined.ending != "diverged" and 0 < refined.gain <= _CHI2_GAIN * size:
        # the gain in rounding's variances, as a share of the residual sum of squares: the
        # exact fit's intervals hold what its whole residual allows, which a decrease of at
        # most a tenth of it does not move (a review's noise-free fit warned at 0.39 of 2000)
        return Check("convergence", _CONVERGENCE_QUESTION, True, refined.gain, _CHI2_GAIN,
                     finding=(f"exact fit: the search ended ({refined.ending}) after "
                              f"{refined.evaluations} evaluations with at most "
                              f"{refined.gain / size:.2g} of its residual sum of squares "
                              f"still to gain; the intervals hold the parameters the fit's "
                              f"whole residual allows, not a noise's standard errors"))
    if refined.ending == "converged":
        return Check("convergence", _CONVERGENCE_QUESTION, True, refined.gain, _CHI2_GAIN,
                     finding=(f"the search converged after {refined.evaluations} evaluations "
                              f"(the local quadratic model promises {refined.gain:.3g} noise "
                              f"variances more)"))
    remedy = (_CONVERGENCE_REMEDY if refined.ending != "diverged" else
              "fix a lower order=, check that the data are open loop (feedback: the "
              "feedback check), or fit a shorter record")
    return Check("convergence", _CONVERGENCE_QUESTION, False, refined.gain, _CHI2_GAIN,
                 finding=_ENDINGS[refined.ending].format(**numbers), remedy=remedy)


def relative_levels(pieces: list[np.ndarray]) -> np.ndarray:
    """Each experiment's noise level relative to the quietest, from its residuals.

    Parameters
    ----------
    pieces : list of ndarray, each (l, N_e)
        The residuals of each experiment.

    Returns
    -------
    ndarray, shape (E,)
        Per experiment, the geometric mean over the outputs of its residual scale over the
        smallest of that output's scales (1 for the quietest).  A piece of at least 30
        residuals is scaled robustly (``1.4826 MAD`` about its median: an outlier does not
        set its level), a shorter one by its root mean square.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pieces = [s * rng.standard_normal((2, 2000)) for s in (1.0, 10.0)]
    >>> levels = relative_levels(pieces)
    >>> float(levels[0]), bool(9 < levels[1] < 11)
    (1.0, True)
    """
    scales = np.empty((len(pieces), pieces[0].shape[0]))
    for p, e in enumerate(pieces):
        if e.shape[1] >= _OWN_SCALE_SAMPLES:
            centred = e - np.median(e, axis=1, keepdims=True)
            scales[p] = 1.4826 * np.median(np.abs(centred), axis=1)
        else:
            scales[p] = np.sqrt(np.mean(e ** 2, axis=1))
    tiny = np.finfo(float).tiny
    scales = np.maximum(scales, tiny)
    return np.exp(np.mean(np.log(scales / scales.min(axis=0)), axis=1))


def noise_levels(analysis, *, applicable: bool = True) -> Check:
    """The ``noise_levels`` check (module notes) of a residual analysis's pieces.

    Parameters
    ----------
    analysis : ResidualAnalysis or None
        :func:`~dmdidc.inference.residuals.residual_analysis` of the experiments' residuals
        (its parts' residuals ``(l, N_e)``, one part per experiment).
    applicable : bool, default True
        ``False`` for an exact fit (its residuals are rounding): not applicable.

    Returns
    -------
    Check
        Its statistic is the largest ratio of two experiments' residual variances of one
        output where the scales' equality test rejects (1 where it does not), its threshold
        :data:`UNEQUAL_NOISE`.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc.inference.residuals import residual_analysis
    >>> rng = np.random.default_rng(0)
    >>> U = rng.standard_normal((1, 1000))
    >>> parts = [(s * rng.standard_normal((1, 1000)), U, np.zeros((1, 1000))) for s in (1, 5)]
    >>> check = noise_levels(residual_analysis(parts, 0, correlations=False))
    >>> check.failed, bool(15 < check.statistic < 40)     # variances 25 times apart
    (True, True)
    >>> short = (rng.standard_normal((1, 20)), U[:, :20], np.zeros((1, 20)))
    >>> noise_levels(residual_analysis([*parts, short], 0, correlations=False)).failed
    True
    """
    pieces = [] if analysis is None else [e for e, _, _ in analysis.parts]
    long = [e for e in pieces if e.shape[1] >= _OWN_SCALE_SAMPLES]
    if not applicable or len(long) < 2:
        why = ("an exact fit" if not applicable else "one experiment" if len(pieces) < 2
               else f"fewer than two experiments of {_OWN_SCALE_SAMPLES} residuals or more")
        return Check("noise_levels", _NOISE_LEVELS_QUESTION, None,
                     finding=f"not applicable: {why}")
    # the outlier check's scales where every piece is long enough to have its own (it pools
    # them otherwise); else those of the long pieces (missing='drop' leaves short ones)
    scaling = (analysis.outlier_scaling if len(long) == len(pieces)
               else largest_residual(long))
    if scaling.spread is None:
        return Check("noise_levels", _NOISE_LEVELS_QUESTION, True, 1.0, UNEQUAL_NOISE,
                     finding=f"the {len(pieces)} experiments' residual scales agree (their "
                             f"equality test at level {_SCALE_EQUALITY_LEVEL:g})")
    ratio = float(scaling.spread) ** 2
    output = int(np.argmax(scaling.scales.max(axis=0) / scaling.scales.min(axis=0)))
    relative = scaling.scales[:, output] / scaling.scales[:, output].min()
    shown = ", ".join(f"{value:.3g}" for value in relative[:12])
    more = f" and {relative.size - 12} more" if relative.size > 12 else ""
    finding = (f"the experiments' noise levels differ: output {output}'s residual variances "
               f"are up to {ratio:.3g} times apart (its relative noise levels per experiment: "
               f"{shown}{more}); the fit pools one level per output, so the noisier "
               f"experiments' scatter can pass for states (an order too high), and the "
               f"intervals misjudge the spread (a residual that grows with the signal, "
               f"the model missing more of the larger experiments' response, reads so too)")
    passed = ratio <= UNEQUAL_NOISE
    return Check("noise_levels", _NOISE_LEVELS_QUESTION, passed, ratio, UNEQUAL_NOISE,
                 finding=finding, remedy="" if passed else _NOISE_LEVELS_REMEDY)


def _beyond(analysis, residuals: list[np.ndarray], threshold: float, first: int
            ) -> tuple[np.ndarray, ...]:
    """Per experiment (``residuals``: (N_i, ny) each), the samples (``first + k`` for residual
    ``k``) whose residual is more than ``threshold`` robust standard deviations from the
    median in some output, scaled as the outlier check scaled them
    (``analysis.outlier_scaling``: each experiment by its own scales where their noise levels
    differ; pooled, the noisier experiments' ordinary residuals were named by the hundred)."""
    deviations = iter(analysis.outlier_scaling.deviations([e for e, _, _ in analysis.parts]))
    return tuple(first + np.flatnonzero(np.any(next(deviations) > threshold, axis=0))
                 if len(E) else np.zeros(0, dtype=int) for E in residuals)
