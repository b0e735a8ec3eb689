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

Without feedthrough the first residual of each experiment has no input of its sample and is
not tested (by either check): the outlier threshold counts ``sum(K_i - R - 1)`` residuals and
``outlier_samples_`` lists only tested ones.

A failed check warns with its statistic, threshold and remedy, once: in
:meth:`~dmdidc.OutputDMDidc.partial_fit`, which solves the model after every chunk, a check that
keeps failing does not warn again (``checks_`` still shows it failed); one that passed in
between and fails again warns anew, and every :meth:`~dmdidc.OutputDMDidc.fit` warns.  The
estimator's other findings (order uncertain, residual check, coloured noise, delay not
determined, a channel without effect or at the bound) follow the same rule, :func:`warn_new`.

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
from dmdidc.errors import DiagnosticWarning, warn_model
from dmdidc.inference.checks import Check
from dmdidc.inference.residuals import residual_analysis, residual_checks
from dmdidc.trajectories import check_data

__all__ = ["SCREENS", "data_checks", "finite_signal", "warn_new", "windowed"]

#: The checks run, by their names in :func:`~dmdidc.inference.residuals.residual_checks`.
SCREENS = ("feedback", "outliers")

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
        ``feedback`` and ``outliers`` (not applicable with fewer than 100 residuals).
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
    ([True, True], 0)
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
    return tuple(result), outliers


def warn_new(key: str, message: str, before: frozenset[str]) -> None:
    """Warn ``message`` (a :class:`~dmdidc.DiagnosticWarning` at the user's line) unless its
    finding ``key`` was found at the previous solve of the same stream (``before``): the one
    rule by which :class:`~dmdidc.OutputDMDidc` warns, once per new finding, so that
    :meth:`~dmdidc.OutputDMDidc.partial_fit`'s solve after every chunk does not repeat a
    finding that stands; one that went away and comes back warns anew.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_new("outliers", "found again", frozenset({"outliers"}))
    ...     warn_new("feedback", "new", frozenset({"outliers"}))
    >>> [str(w.message) for w in caught]
    ['new']
    """
    if key not in before:
        warn_model(message, DiagnosticWarning)


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
