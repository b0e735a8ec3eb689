"""``OutputDMDidc``: a delayed plant and its per-channel fractional delays from measured outputs."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from scipy import linalg, special, stats

from _toolbox.validation import (
    check_finite_array,
    check_in_interval,
    check_integer,
    check_positive,
)
from dmdidc.data import as_arrays
from dmdidc.discretization import split_delay
from dmdidc.errors import (
    DiagnosticWarning,
    DimensionError,
    InsufficientExcitationError,
    LogarithmError,
    NonFiniteError,
    NotFittedError,
    ParameterError,
    warn_model,
)
from dmdidc.inference.checks import Check, FitDiagnostics
from dmdidc.inference.intervals import ConfidenceIntervals, IntervalEstimate
from dmdidc.inference.recovery import continuous_state_matrix
from dmdidc.missing import interpolated_inputs_warning, left_out
from dmdidc.output.blocks import (
    PROFILE_CELL,
    LagMoments,
    StructuredFit,
    lag_moments,
    profile_delays,
    profile_minima,
    structured_fit,
)
from dmdidc.output.bound_check import hidden_delay
from dmdidc.output.checks import (
    UNEQUAL_NOISE,
    convergence,
    data_checks,
    finite_signal,
    relative_levels,
    warn_new,
    windowed,
)
from dmdidc.output.inputs import input_scale, pooled_spread, refuse_collinear_inputs
from dmdidc.output.intervals import (
    DelayProfile,
    determined_delays,
    eigenvalue_parts,
    joined_boxes,
    joined_delays,
    precise_model,
    profiled_only,
    profiles,
    restart,
    undetermined_channels,
)
from dmdidc.output.noise import balanced_dynamics, output_residuals, whiteness_test
from dmdidc.output.operating_point import input_level, input_operating_point
from dmdidc.output.order_check import (
    extended_dynamics,
    neighbour_verdicts,
    raise_order,
    short_of,
)
from dmdidc.output.pairs import PairCoefficients, coalescing_pairs, pair_boxes
from dmdidc.output.refine import Refined, in_noise_variances, refine, residual_input_test
from dmdidc.output.streaming import Reservoir, SubspaceStatistics
from dmdidc.output.subspace import SubspaceBasis, subspace_basis
from dmdidc.trajectories import detrended, held_inputs

__all__ = ["OutputDMDidc"]

#: ``|C b| <= _FIRST_ORDER |C A_c b| T`` (outputs in noise units): the channel's delay has a
#: nearly singular first order (its Wald interval is not judged by the precision check).
_FIRST_ORDER = 0.1

#: Orders above the noise-edge count the residual test may still add (weak modes the canonical
#: correlations cannot separate from noise but the input-output residuals reveal).
_EXTRA_ORDERS = 2
#: A canonical correlation below this multiple of the noise edge is not clearly a state (the
#: noise's largest correlations scatter around the edge at finite K): only then is the order
#: checked by neighbouring fits.  On the sweep of benchmarks/bench_output_loud.py every order
#: missed or added but one had its weakest kept state below 1.5 edges.
_CLEAR = 1.5
#: Level at which one more state "may" be there: the order is then reported as uncertain (a
#: weaker claim than the residual test's ``significance``, so a looser level).
_UNCERTAIN = 0.05
#: A residual sum of squares below this fraction of the output energy is an exact fit: a relative
#: residual of 1e-8, a hundred times what the model's own evaluation reaches (its hold blocks are
#: accurate to about ``1e6 eps``, :data:`~dmdidc.output.blocks._SPECTRAL_COND`).  It was 1e-20,
#: at that floor: noise-free data of one plant fitted exactly or not depending on the scale of
#: ``U`` (issue 19: relative residuals of 1e-20 to 1e-18 at the true order, an F test on
#: rounding errors, a spurious third mode).  Noisy data are many orders above either.
_EXACT = 1e-16
#: Relative residual (of the outputs' energy) below which a delay's profile residual counts as
#: exact on exact data: the profile at fixed dynamics is rounded to a few ``eps`` of the energy
#: (noise-free plant 900 of the delay-tie trials: 3e-15 at the chosen delay), far above
#: ``_EXACT``; the restart there decides at ``_EXACT``.
_PROFILE_ROUNDING = 1e-10


def _exact_rss(experiments: list, R: int, level: float = _EXACT) -> float:
    """Residual sum of squares below which a fit reproduces the outputs from sample ``R``
    (the samples the fits use) to rounding: ``level`` (default :data:`_EXACT`) times their
    energy."""
    return level * sum(float(np.sum(Y[:, R:] ** 2)) for Y, _ in experiments)


def _exact_fit(experiments: list, refined: Refined, R: int) -> bool:
    """Does the fit reproduce the outputs from sample ``R`` to rounding?"""
    return refined.rss <= _exact_rss(experiments, R)


def _residuals(experiments: list, refined: Refined, dt: float, R: int) -> list[np.ndarray]:
    """The output-error residuals (T_e, l) of a fit: those :func:`refine` kept, else simulated."""
    if refined.residuals is not None:
        return list(refined.residuals)
    return output_residuals(experiments, refined, dt, R)


#: (:data:`dmdidc.output.checks.UNEQUAL_NOISE`: one definition for outputs and experiments)
_UNEQUAL = UNEQUAL_NOISE
#: Weighted refits of experiments of unequal noise at most (:meth:`OutputDMDidc.fit`): each
#: divides by the levels of the previous fit's residuals (noise 100x apart: 17-23x read from
#: the misweighted fit, about 100 after the second).
_REWEIGHTINGS = 3
#: What is left when the experiments, weighed by their levels, still differ in noise.
_WEIGHTED_REMEDY = (
    "one level per experiment cannot weigh levels that differ output by output (a sensor "
    "noisier in some experiments only) or with the signal (the model missing more of the "
    "larger experiments' response); fit the experiments that share each output's noise level "
    "together, or leave the noisier sensor's experiments out")


def _reissue(caught: list) -> None:
    """Issue recorded warnings again, attributed to the user's line as when first issued."""
    for caught_warning in caught:
        warn_model(str(caught_warning.message), caught_warning.category)


def _spread(signals: list[np.ndarray]) -> np.ndarray:
    """The outputs' scaling: each row's pooled spread about each experiment's mean (1 for a
    row without variation), blind to offsets (the root mean square with the offset, used
    before, made an output with an offset of 50 standard deviations 50 times quieter than its
    neighbour, an unequal noise the pooled fit misread: the order wrong on 6 of 12 plants)."""
    spread = pooled_spread(signals)
    return np.where(spread > 0, spread, 1.0)


def _scaled_inputs(experiments: list, input_scale: np.ndarray) -> list:
    """The experiments with each input divided by its ``input_scale`` (the fit's units)."""
    return [(Yi, Ui / input_scale[:, None]) for Yi, Ui in experiments]


def _output_variances(experiments: list, refined: Refined, dt: float, R: int) -> np.ndarray:
    """Each output's residual variance (l,), in the units of ``experiments``: its share of the
    residual sum of squares, so that their mean is the pooled ``rss / dof``."""
    rss = np.sum(np.vstack(_residuals(experiments, refined, dt, R)) ** 2, axis=0)
    total = float(rss.sum())
    if not total > 0.0:
        return np.zeros(rss.size)
    return rss / total * rss.size * refined.rss / refined.dof


def _signals(y_name: str, Y: Any, u_name: str, U: Any) -> tuple[np.ndarray, np.ndarray]:
    """``Y`` and ``U`` as finite 2-D arrays within the data magnitude limit (entries near
    1e154 overflow the window products: the fit went on to a silently wrong model), each with
    at least one signal."""
    Y, U = finite_signal(y_name, Y), finite_signal(u_name, U)
    if Y.shape[0] == 0:
        raise ParameterError(f"{y_name} has no output rows (shape {Y.shape}): OutputDMDidc "
                             f"identifies a plant from its measured outputs")
    if U.shape[0] == 0:
        raise ParameterError("U has no input rows: OutputDMDidc identifies how inputs act. "
                             "For output-only data, DMDidc (plain DMD) of the outputs is right "
                             "only when they are the whole state; with fewer sensors than "
                             "states it finds too few modes: stack q delayed outputs [y_k; "
                             "...; y_(k-q)] as the states (Hankel DMD, q + 1 sensors' worth "
                             "at least the order) and fit DMDidc(max_delay=0, "
                             "svd_rank=order)")
    return Y, U


def _refuse_short(experiments: list[tuple[np.ndarray, np.ndarray]], R: int) -> None:
    """One of several experiments with at most ``R`` samples has no output-error residual
    to fit after its initial ones (the moments' shapes broke on it): name it."""
    if len(experiments) < 2:
        return                   # the subspace step says what a single experiment lacks
    for i, (_, Ui) in enumerate(experiments):
        if Ui.shape[1] < R + 1:
            raise DimensionError(
                f"experiment {i} has {Ui.shape[1]} samples; each experiment needs at least "
                f"max_delay + 1 = {R + 1}: leave it out (or lower max_delay)")


#: Smallest variation an output must have: below it squares underflow (the mirror of the
#: magnitude limit 1e154 of :func:`~dmdidc.trajectories.check_data`).
_FLOOR = float(np.sqrt(np.finfo(float).tiny))
#: Variation at or below this fraction of an output's magnitude is rounding of its offset.
_ROUNDING = 1e-12
#: Accepted ``detrend``: nothing, each experiment's mean, or its least-squares line.
_DETRENDS = (False, "constant", "linear")


def _with_signal(experiments: list, *, level: np.ndarray | None = None, what: str = "") -> None:
    """Refuse outputs without signal: all zero, a constant (an offset only), or varying less
    than :data:`_FLOOR` or than rounding of their level (they fitted order 1 with delay 0 and
    only a "delay not determined" warning: issue 19).  ``level``: the outputs' magnitude
    before a trend was removed (``what`` says how), whose rounding the rest must exceed."""
    Y = np.hstack([Yi for Yi, _ in experiments])
    level = np.max(np.abs(Y), axis=1) if level is None else level
    variation = np.max(np.abs(Y - Y[:, :1]), axis=1)
    for i in np.flatnonzero((variation < _FLOOR) | (variation <= _ROUNDING * level)):
        raise InsufficientExcitationError(
            f"Y row {i} has no signal{' ' + what if what else ''}: it varies by "
            f"{variation[i]:.3g} about {Y[i, 0]:.3g} "
            f"(accepted: a variation above {_FLOOR:.3g} and above {_ROUNDING:g} x its "
            f"magnitude); a dead or constant sensor says nothing about the plant: check the "
            f"sensor and the data's units, or drop that output row")


def _experiments(Y: Any, U: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Validated ``(Y (l, K), U (m, K))`` pairs from arrays or lists of experiments."""
    if isinstance(Y, (list, tuple)) != isinstance(U, (list, tuple)):
        raise DimensionError("Y and U must both be arrays or both be lists of experiments")
    if not isinstance(Y, (list, tuple)):
        Y, U = [Y], [U]
    if len(Y) != len(U) or not Y:
        raise DimensionError(f"got {len(Y)} output and {len(U)} input experiments; expected the "
                             f"same positive number")
    result = []
    for i, (Yi, Ui) in enumerate(zip(Y, U, strict=True)):
        tag = f"[{i}]" if len(Y) > 1 else ""
        Yi, Ui = _signals(f"Y{tag}", Yi, f"U{tag}", Ui)
        # before the sample counts: transposed (K, l) and (K, m) arrays compare l with m
        if Yi.shape[0] > Yi.shape[1] or Ui.shape[0] > Ui.shape[1]:
            raise DimensionError(f"Y{tag} {Yi.shape} or U{tag} {Ui.shape} has more signals than "
                                 f"samples: pass signals as rows (transpose the data)")
        if Yi.shape[1] == Ui.shape[1] + 1:      # the state convention: one output more
            Yi = Yi[:, :-1]
        if Yi.shape[1] != Ui.shape[1]:
            raise DimensionError(f"Y{tag} has {Yi.shape[1]} samples and U{tag} {Ui.shape[1]}; "
                                 f"expected the same number (samples on the last axis)")
        if result and (Yi.shape[0], Ui.shape[0]) != (result[0][0].shape[0], result[0][1].shape[0]):
            raise DimensionError(f"experiment {i} has {Yi.shape[0]} outputs and {Ui.shape[0]} "
                                 f"inputs; the first has {result[0][0].shape[0]} and "
                                 f"{result[0][1].shape[0]}")
        result.append((Yi, Ui))
    _with_signal(result)
    return result


def _warn_interpolated_inputs(data) -> None:
    """Warn when an IdData's inputs were interpolated (:mod:`dmdidc.missing`): not what the
    plant received, which the output-error fit reads as output noise."""
    count = 0 if data is None else data.missing_report.interpolated_inputs
    if count:
        warn_model(interpolated_inputs_warning(count), DiagnosticWarning)


def _delay_se(se: np.ndarray, found: tuple) -> np.ndarray:
    """The Wald standard errors ``se`` (m,), NaN for a delay whose interval is its profile's
    alone (a singular first order: :func:`~dmdidc.output.intervals.profiled_only`)."""
    return np.where(profiled_only(found) if len(found) else False, np.nan, se)


#: A mode whose input-to-output reach is below this fraction of the largest mode's is idle.
_IDLE_MODE = 1e-2
#: An input vector below this fraction of the largest channel's is rounding: no effect.
_NO_EFFECT = 1e-8


def _wald(b: np.ndarray, cov: np.ndarray) -> float:
    """``b' cov^+ b`` on the directions where ``cov`` is positive beyond rounding: never
    negative (``lstsq`` on a rounding-singular covariance of noise-free data printed
    "chi^2 = -7.81e+17" for an input held at zero)."""
    values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
    keep = values > np.finfo(float).eps * cov.shape[0] * max(values.max(initial=0.0), 0.0)
    return float(np.sum((vectors[:, keep].T @ b) ** 2 / values[keep]))


def _at_bound(delay: np.ndarray, max_delay: int, dt: float) -> np.ndarray:
    """Channels within 5 % of a period of ``max_delay * dt``: the bound may cut their delay."""
    return (delay >= (max_delay - 0.05) * dt) & (max_delay > 0)


def _with_real_logarithm(A_d: np.ndarray) -> np.ndarray:
    """``A_d`` with eigenvalues on the closed negative real axis reflected to the positive one.

    Only a starting point: a noisy subspace estimate of a slow or nearly repeated mode can
    land on the negative axis, where no real logarithm exists; the output-error refinement then
    moves the mode to where the data put it (and its standard error says how well).
    """
    values, vectors = np.linalg.eig(A_d)
    bad = (np.abs(values.imag) <= 1e-12 * np.maximum(np.abs(values), 1.0)) & (values.real <= 0)
    if not bad.any() or np.linalg.cond(vectors) > 1e8:
        return A_d
    values = np.where(bad, np.maximum(np.abs(values.real), 1e-3), values)
    return np.real(vectors @ np.diag(values) @ np.linalg.inv(vectors))


#: Evaluations per round by which the model's refinement is continued when it stopped at its
#: limit (60) with more to gain, while a round gains at least one noise variance, at most
#: :data:`_CONTINUATIONS` rounds.  Well-posed data rarely need it (400 random plants of orders
#: 1-6, noise-free and 20-40 dB, benchmarks/bench_output_convergence.py: one model, seed 143,
#: which then converged after 71 evaluations; 18 candidate searches of 16 fits, which are not
#: continued).  Noise-free data of ill-conditioned plants converge linearly at rounding, at a
#: rate that depends on the BLAS kernels (seed 20, order 6 from one sensor: 49 evaluations,
#: 164 on OpenBLAS's Haswell kernels, 440 on Prescott's, each round gaining thousands of
#: rounding-level variances); a noisy search that gains less than one noise variance in a round
#: crawls along a direction the data barely fix (one gained 2.2 in 3000 evaluations): the
#: ``convergence`` check fails.
_MORE_EVALUATIONS = 180
#: Rounds of :data:`_MORE_EVALUATIONS` at most (780 evaluations in all).
_CONTINUATIONS = 4
#: A residual sum of squares at or below this fraction of the outputs' energy (a relative rms
#: residual of 1e-10) is not continued (:meth:`OutputDMDidc._continued`): on exact data the
#: search crawls at rounding instead of converging (damped Gauss-Newton on a nearly singular
#: Jacobian).  The audit plant of tests/dmdidc/output/test_exact.py ran 780 evaluations at
#: 2e-25..3e-25 with its delay 8e-7 s off, the README's one-sensor plant on OpenBLAS's Prescott
#: kernels at 5e-22, 3e-5 s off.  An exact fit's intervals are at its whole residual instead
#: (:func:`~dmdidc.output.intervals.profiles`, *Exact fits*).
_ROUNDED = 1e-20


def _named(checks: tuple[Check, ...], name: str) -> int:
    """Where the check ``name`` is in ``checks`` (``checks_``)."""
    return next(i for i, check in enumerate(checks) if check.name == name)


#: A fit of one order that fails this way says nothing about the others: the next is tried.
_NO_FIT = (LogarithmError, NonFiniteError)


def _finite(moments: LagMoments, A_d: np.ndarray) -> LagMoments:
    """``moments``, or a :class:`NonFiniteError` when they overflowed: an unstable mode's
    response over a long record (a subspace estimate of closed-loop data; before, a bare
    ``LinAlgError`` from the delay search's eigendecomposition)."""
    if np.isfinite(moments.normal).all() and np.isfinite(moments.moment).all():
        return moments
    radius = float(np.max(np.abs(np.linalg.eigvals(A_d))))
    raise NonFiniteError(
        f"the lag regression of the order-{A_d.shape[0]} dynamics overflowed: their spectral "
        f"radius is {radius:.4g} (accepted: a finite response over the record; above 1 a mode "
        f"grows without bound). An output-error fit needs stable dynamics: identify an unstable "
        f"one from closed-loop data with DMDidc(...).fit(..., reference=r) when every state "
        f"is measured, or fix a lower order=")


#: Discrete eigenvalues below this fraction of the spectral radius are "near 0": a pure shift's.
_SHIFT = 1e-3


def _shift_states(A_d: np.ndarray) -> int:
    """How many eigenvalues of ``A_d`` are near 0 (below :data:`_SHIFT` of the spectral radius):
    the inputs in flight of a delay beyond ``max_delay`` (or modes much faster than the
    sampling)."""
    values = np.abs(np.linalg.eigvals(A_d))
    return int(np.sum(values < _SHIFT * values.max(initial=0.0)))


#: The results a fit sets (read before one: NotFittedError, see OutputDMDidc.__getattr__).
_RESULTS = frozenset({
    "A_c", "B_c", "C", "D", "A_d", "delay", "delay_steps", "delay_fraction", "offset_",
    "operating_point_", "initial_states_", "eigenvalues_", "eigenvalue_se_", "delay_se_",
    "noise_std_", "at_bound_", "order_", "subspace_", "singular_values_", "noise_edge_",
    "horizon_", "refined_", "checks_", "outlier_samples_", "order_rule_", "samples_",
    "refinement_samples_", "scale_", "input_scale_", "experiment_levels_"})


class OutputDMDidc:
    """Plant ``(A_c, B_c, C, D)`` and per-channel fractional input delays from outputs.

    For ``y_k = C x_k (+ D u_k)`` with fewer (or more) measured signals than states: a canonical
    variate subspace step gives the dynamics ``(A, C)`` with the inputs in flight projected out
    (so the delay adds no states, :mod:`dmdidc.output.subspace`), then each channel's input
    vector ``b`` and delay ``r = (w + p) T`` follow from the structured output-error regression
    of eq. (9.65), ``B^(w) = Gamma_0(p) b``, ``B^(w+1) = Gamma_1(p) b``
    (:mod:`dmdidc.output.blocks`).  Use :class:`~dmdidc.DMDidc` when every state is measured.

    Parameters
    ----------
    max_delay : int
        ``R``: delays up to ``R T`` are searched.  A delay beyond it warns: at the bound,
        or, with ``R = 0``, when a refit with room for a delay needs fewer modes
        (:mod:`dmdidc.output.bound_check`).
    order : int, optional
        Plant order; by default the number of canonical correlations above the noise edge,
        raised (by at most two) until the output-error residuals no longer depend on the
        inputs, and lowered to the smallest such order when those residuals are coloured
        (noise-model states counted by the edge: :mod:`dmdidc.output.noise`); ``order_rule_``
        says which and why.
    horizon : int, optional
        Future and past window ``f``; default ``max(10, ceil(2 (max_order + 1) / l))``.
    max_order : int, default 10
    feedthrough : bool, default False
        Estimate ``D`` (outputs that react to the input within the same sample).
    offset : bool, default True
        Estimate a constant output offset ``y_k = C x_k + D u_k + c`` (sensor offsets, data in
        absolute units, inputs around a non-zero operating point): ``offset_``.
    detrend : {False, "constant", "linear"}, default False
        Fit each experiment's own constant (``"constant"``) or line (``"linear"``: drifting
        sensors or operating points) with the plant: removed from outputs and inputs, and
        concentrated out of the subspace step and the output-error fit, whose intervals count
        them (docs: *Drift*); the model is in deviations from them, which are not kept
        (``offset_`` is 0).  With an experiment's own level, experiments of unequal noise are
        weighed by it (``experiment_levels_``).
    significance : float, default 1e-3
        Level of the test "channel ``i`` acts" (a channel without effect gets a warning).
    memory : int, default 20000
        Samples :meth:`partial_fit` keeps (the most recent) for the delays and the
        output-error refinement; the subspace step always uses every sample.

    Attributes
    ----------
    A_c, B_c, C, D : ndarray
        The plant in the basis of the canonical variates (``A_c`` and ``C`` fix it; only
        basis-free quantities such as eigenvalues, the transfer function and delays are unique).
    A_d : ndarray
    delay, delay_steps, delay_fraction : ndarray, shape (m,)
        Delays in seconds, whole periods ``w`` and fractions ``p``.
    order_ : int
    order_rule_ : str
    singular_values_ : ndarray
        The canonical correlations (plot them with :meth:`plot_singular_values`).
    eigenvalues_ : ndarray
        Eigenvalues of ``A_c``.
    delay_se_ : ndarray, shape (m,)
        Wald standard errors of the delays (seconds); NaN for a delay whose Wald standard
        error says nothing (``C B_c = 0``: the fit is singular in its direction, module notes
        of :mod:`dmdidc.output.intervals`, *Singular first order*): :meth:`delay_ci` then holds
        its profile likelihood interval.
    at_bound_ : ndarray of bool, shape (m,)
        Channels whose delay is within 5 % of a period of ``max_delay * dt`` (they warn: the
        bound may cut them);
        never an input held at one value over the record (its delay is meaningless and it warns
        so).
    noise_std_ : ndarray, shape (l,)
        Each output's own residual standard deviation, in its units (its share of the
        residual sum of squares; divided by ``scale_`` squared they average to ``rss / dof``).
        Outputs whose residual variances differ by more than a factor 2 are fitted weighted by
        them (docs: *Unequal sensor noise and sensor offsets*).
    scale_ : ndarray, shape (l,)
        The outputs' scaling in the fit: each output's spread about each experiment's mean,
        times its relative residual standard deviation when the outputs were weighted.
    input_scale_ : ndarray, shape (m,)
        The inputs' scaling in the fit: each input's spread about each experiment's mean (its
        magnitude when held); ``refined_`` is in the units of the outputs over ``scale_`` and
        the inputs over ``input_scale_``, ``B_c`` and ``D`` in the given ones.
    offset_ : ndarray, shape (l,)
        Constant output offset (zero with ``offset=False``).
    operating_point_ : OperatingPoint or None
        The equilibrium under the mean input, ``(x_op, u_op)`` in the model's state basis, when
        the inputs sit at a non-zero level (one-signed, or their mean above a tenth of their
        spread and beyond chance;
        :mod:`dmdidc.output.operating_point`; after :meth:`partial_fit`, the mean of the
        ``memory`` samples kept); :meth:`plant` carries it, so controllers and
        :class:`~controllers.DelayedKalmanObserver` regulate around it.  ``None`` for inputs
        around zero and with ``detrend``.
    initial_states_ : ndarray, shape (E, n)
        State at sample ``max_delay`` of each experiment (with :meth:`partial_fit`: of each
        experiment in the reservoir).
    subspace_ : SubspaceBasis
        The canonical variates of all data (``subspace_.dynamics(n)``: ``(A, C)`` of order
        ``n`` before the refinement).
    checks_ : tuple of Check
        The ``feedback``, ``outliers`` and ``noise_levels`` checks of the residuals, and
        ``convergence``: did the output-error refinement reach its minimum (``refined_.ending``,
        ``refined_.gain``)?  (:mod:`dmdidc.output.checks`; a failed one warned.)
    diagnostics_ : FitDiagnostics
        ``checks_`` as :class:`~dmdidc.DMDidc` keeps its checks (``summary()``, ``failed``,
        ``diagnostics_["feedback"]``); each check's ``status`` is its word in the table.
    experiment_levels_ : ndarray, shape (E,)
        Each experiment's noise level relative to the quietest, by which :meth:`fit` divided
        its outputs and inputs (weighted output error) when the ``noise_levels`` check found
        them unequal and no offset is shared (``detrend`` or ``offset=False``); ones otherwise.
    outlier_samples_ : tuple of ndarray of int
        Per experiment the fit used, the samples whose residual the failed outlier check found
        beyond its threshold (empty when it passed); after :meth:`partial_fit`, per streamed
        experiment, numbered from its first streamed sample (the check sees the ``memory``
        samples kept).  Both are saved (:meth:`save`) and read back (:meth:`load`): whether
        the fit's residuals trusted the model travels with it (files written before
        2026-11-27 hold neither: NotFittedError names the file).
    signals_ : dict or None
        Only on a loaded model: the signals' names and units :meth:`save` recorded
        (``signals=``), else ``None``.
    samples_, refinement_samples_ : int
        Samples the subspace step used, and the refinement (fewer after :meth:`partial_fit`
        streamed more than ``memory``).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]],
    ...                                      delay=1.3, dt=0.5)
    >>> U = random_excitation(1, 2000, rng=0)
    >>> Y = [[1.0, 0.0]] @ plant.simulate([0.0, 0.0], U)[:, :-1]    # the first state only
    >>> est = OutputDMDidc(max_delay=4).fit(Y, U, dt=0.5)
    >>> est.order_, bool(abs(est.delay[0] - 1.3) < 1e-4)
    (2, True)
    """

    def __init__(self, max_delay: int, order: int | None = None, *, horizon: int | None = None,
                 max_order: int = 10, feedthrough: bool = False, offset: bool = True,
                 detrend: str | bool = False, significance: float = 1e-3,
                 memory: int = 20000) -> None:
        self.max_delay = max_delay
        self.order = order
        self.horizon = horizon
        self.max_order = max_order
        self.feedthrough = feedthrough
        self.offset = offset
        self.detrend = detrend
        self.significance = significance
        self.memory = memory

    # -- parameters -----------------------------------------------------------------------
    @property
    def _offset(self) -> bool:
        """Does the output-error fit estimate ``offset_``?  Not with ``detrend``: each
        experiment's constant (``"constant"``) or line (``"linear"``), concentrated out, holds
        it (:mod:`dmdidc.output.refine`)."""
        return self.offset and not self.detrend

    @property
    def _trend(self) -> int:
        """Columns of each experiment's trend that the subspace step and the refinement
        concentrate out (:func:`~dmdidc.output.jacobian.trend_degree`): 2 for
        ``detrend="linear"``, 1 for ``"constant"``, 0 without."""
        return {"linear": 2, "constant": 1}.get(self.detrend, 0)

    def _checked(self, n_outputs: int) -> tuple[int, int | None, int, int]:
        R = check_integer("max_delay", self.max_delay, minimum=0)
        max_order = check_integer("max_order", self.max_order, minimum=1)
        order = None if self.order is None else check_integer("order", self.order, minimum=1)
        if order is not None and order > max_order:
            raise ParameterError(f"order={order} exceeds max_order={max_order}; accepted: "
                                 f"order <= max_order (raise max_order with it)")
        horizon = (max(10, int(np.ceil(2 * (max(max_order, order or 0) + 1) / n_outputs)))
                   if self.horizon is None else check_integer("horizon", self.horizon,
                                                              minimum=2))
        if self.detrend not in _DETRENDS:
            raise ParameterError(f"detrend={self.detrend!r}; accepted: False, 'constant' or "
                                 f"'linear'")
        for name in ("feedthrough", "offset"):
            if not isinstance(getattr(self, name), bool):
                raise ParameterError(f"{name}={getattr(self, name)!r}; accepted: True or False")
        check_in_interval("significance", self.significance, 0.0, 1.0, low_open=True,
                          high_open=True)
        check_integer("memory", self.memory, minimum=1)
        if self.memory < 2 * horizon + R + 1:    # name what set the floor, not only memory
            raise ParameterError(f"memory={self.memory} samples is too short for "
                                 f"max_delay={R} and horizon={horizon}: it needs at least "
                                 f"2 horizon + max_delay + 1 = {2 * horizon + R + 1}; lower "
                                 f"max_delay or horizon, or raise memory")
        return R, order, horizon, max_order

    def _left_out(self, n_outputs: int, U: Any) -> int:
        """One window's span ``2 horizon + max_delay + 1``; experiments of ``U`` (a list) shorter
        than it are not used, which warns when they hold much of the data (samples_ tells;
        :func:`~dmdidc.missing.left_out`)."""
        _, _, horizon, _ = self._checked(n_outputs)
        shortest = 2 * horizon + self.max_delay + 1
        if isinstance(U, (list, tuple)):
            note, loud = left_out([np.shape(u)[-1] for u in U], shortest,
                                  window=f"2 horizon + max_delay + 1 = {shortest}",
                                  shorter="lower horizon or max_delay")
            if loud:
                warn_model(note, DiagnosticWarning)
        return shortest

    # -- fitting --------------------------------------------------------------------------
    def fit(self, Y: Any, U: Any = None, *, dt: float | None = None) -> OutputDMDidc:
        """Identify the plant from outputs ``Y`` (l, K) and inputs ``U`` (m, K).

        Parameters
        ----------
        Y, U : array_like or list of array_like
            Samples on the last axis (a 1-D array is one channel); several experiments as lists.
            ``Y`` may carry one sample more than ``U`` (the state convention of
            :class:`~dmdidc.DMDidc`).  An :class:`~dmdidc.IdData` (its signals are the outputs)
            replaces ``Y``, ``U`` and ``dt``; its operating point is removed first, and its
            experiments shorter than ``2 horizon + max_delay + 1`` samples (one window;
            ``missing="drop"`` may leave such pieces) are not used, as in :meth:`partial_fit`.
        dt : float
            Sampling period ``T`` in seconds (not with an IdData).

        Returns
        -------
        self

        Raises
        ------
        InsufficientExcitationError
            Too few samples, no dynamics found, or an output row without signal (zero,
            constant, or varying only within rounding).
        LogarithmError
            The discrete dynamics have no real logarithm (no continuous plant; eigenvalues
            near 0 point to a delay beyond ``max_delay``, and the message says so).
        NonFiniteError
            Every candidate order's dynamics are unstable enough to overflow over the record.
        """
        Y, U, dt, data = as_arrays(Y, U, dt, caller="OutputDMDidc.fit")
        dt = check_positive("dt", dt)
        _warn_interpolated_inputs(data)
        if data is not None:        # missing="drop" may leave pieces shorter than a window
            shortest = self._left_out(data.n_states, U)
            Y, U = windowed(Y, U, shortest)
        experiments = _experiments(Y, U)
        R = self._checked(experiments[0][0].shape[0])[0]
        _refuse_short(experiments, R)
        refuse_collinear_inputs([Ui for _, Ui in experiments], R)
        level = None if self.detrend else input_level(experiments)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self._fit_experiments(experiments, dt, level)
            except BaseException:
                _reissue(caught)           # (after the with: warnings would be recorded)
                raise
        relative = self._unequal
        if relative is None or (self.offset and not self.detrend):
            # equal levels; or unequal with one offset_ for all: dividing an experiment's
            # outputs by its level divides its offset too, and about an estimated offset the
            # error is divided unequally (a review plant, noise 100x apart: the first fit's
            # offset 1.7 noise deviations of the quiet experiment off gave its weighted refit
            # a level step, a mode at 0 and order 4 on 7 of 10 draws; iterating the offset
            # did not converge, the mode at 0 took the step).  The check warned; its remedy
            # is detrend='constant', with which the weighting below is exact
            _reissue(caught)
            return self
        # the experiments' noise levels differ (the noise_levels check) and no offset is
        # shared (each experiment's mean or line is removed, or there is none): fit again with
        # each experiment's outputs and inputs divided by its level, so that every experiment
        # weighs by its noise (the plant's gains and delays are unchanged by dividing both);
        # the first fit's warnings judged the misweighted fit and are dropped (as for outputs
        # of unequal noise, _solve)
        first = dict(self.__dict__)
        levels, kept, again = np.ones(len(experiments)), None, []
        for _ in range(_REWEIGHTINGS):
            # a misweighted fit's residuals understate the levels' spread (its model follows
            # the noisier experiments): noise 100x apart read 17-23x apart on 6 of 6 plants,
            # and the fit weighted by them still failed the check; the weighted fit's own
            # residuals give the rest
            trial = levels * relative
            trial = trial / trial.min()                 # relative to the quietest
            weighted = [(Yi / r, Ui / r) for (Yi, Ui), r in zip(experiments, trial, strict=True)]
            try:
                with warnings.catch_warnings(record=True) as recorded:
                    warnings.simplefilter("always")
                    self._fit_experiments(weighted, dt, level)
            except (*_NO_FIT, InsufficientExcitationError) as exc:
                if kept is not None:        # the last weighted fit stands
                    break
                self.__dict__.clear()
                self.__dict__.update(first)
                _reissue(caught)
                shown = ", ".join(f"{r:.3g}" for r in relative)
                self._warn_new("unweighted experiments", (
                    f"experiments of unequal noise (relative levels {shown}) "
                    f"could not be fitted weighted by them ({exc}): the fit pools one noise "
                    f"level, so its order checks and intervals misjudge the experiments"))
                return self
            levels, kept, again = trial, dict(self.__dict__), recorded
            relative = self._unequal            # the weighted residuals' levels, None if equal
            # equal by experiment yet failing: the levels differ output by output (one sensor
            # noisier in one experiment), which one level per experiment cannot weigh
            if relative is None or np.ptp(np.log(relative)) < np.log(1.1):
                break
        self.__dict__.clear()
        self.__dict__.update(kept)
        relative = levels
        at = _named(self.checks_, "noise_levels")
        still = bool(self.checks_[at].failed)
        # a failure that stands is warned below with what is left to do, not the remedy the
        # weighting applied
        _reissue([w for w in again
                  if not (still and str(w.message).startswith("check 'noise_levels' failed"))])
        self.experiment_levels_ = relative
        # the weighted fit's states are the data's divided by the level (its inputs were), so
        # that C x0 reproduces each experiment's start in the data's units (they read 7-11
        # times small in the noisier one of two experiments 10 times apart)
        self.initial_states_ = self.initial_states_ * relative[:, None]
        # the check found the levels and they are weighed now: a note, not a failure (unless
        # the weighted fit's levels still differ: that failure stands, and it warned)
        unequal = first["checks_"][_named(first["checks_"], "noise_levels")]
        if still:
            # its remedy (weigh each experiment by its level) was applied: say what is left
            check = dataclasses.replace(self.checks_[at], remedy=(
                f"each experiment was weighed by its level (experiment_levels_ "
                f"{', '.join(f'{r:.3g}' for r in relative[:12])}) and the levels still "
                f"differ: {_WEIGHTED_REMEDY}"))
            self._warn_new(check.name, check.message())
        else:
            check = dataclasses.replace(
                unequal, passed=True, remedy="", finding=(
                    f"{unequal.finding.split('; the fit pools')[0]}; each experiment's outputs "
                    f"and inputs were divided by its level and the fit repeated, so that every "
                    f"experiment weighs by its noise (experiment_levels_)"))
        self.checks_ = (*self.checks_[:at], check, *self.checks_[at + 1:])
        # each output's level in the data's units: experiment e's residuals are its weighted
        # fit's times its level (the model is the same; its initial state is divided too)
        rss = relative ** 2 @ self._energies
        self.noise_std_ = np.sqrt(rss * rss.size / self.refined_.dof) * self.scale_
        return self

    def _fit_experiments(self, experiments: list, dt: float, level: np.ndarray | None) -> None:
        """The fit of :meth:`fit` on its checked experiments, with the inputs' ``level``
        (:func:`~dmdidc.output.operating_point.input_level` of the data as given)."""
        R, order, horizon, max_order = self._checked(experiments[0][0].shape[0])
        self._level = level
        self.experiment_levels_ = np.ones(len(experiments))
        if self.detrend:
            # inputs too: what a line of the inputs does is (after the transient the free
            # initial state absorbs) a line of the outputs, which left in the inputs would be
            # fitted against outputs whose line was removed
            level = np.max([np.max(np.abs(Yi), axis=1) for Yi, _ in experiments], axis=0)
            experiments = detrended(experiments, self.detrend)[0]
            _with_signal(experiments, level=level, what=f"once detrend={self.detrend!r} "
                                                        f"removed its trend")

        # inputs in comparable units (dmdidc.output.inputs), B_c and D returned in the given
        inputs_scale = input_scale([Ui for _, Ui in experiments])
        internal = _scaled_inputs(experiments, inputs_scale)

        def basis_at(scale: np.ndarray) -> SubspaceBasis:
            return subspace_basis([(Yi / scale[:, None], Ui) for Yi, Ui in internal], R,
                                  horizon=horizon, offset=self.offset,
                                  trend=self._trend)

        # outputs in comparable units, so that the regression weighs them alike
        scale = _spread([Yi for Yi, _ in experiments])
        basis = basis_at(scale)
        self.dt, self._stream, self._pending = dt, None, None
        self._begin_solve()
        self.samples_ = self.refinement_samples_ = sum(Yi.shape[1] for Yi, _ in experiments)
        n, start, refined, scaled, basis = self._solve(internal, scale, basis, basis_at, R,
                                                       dt, order, max_order)
        refined = self._checked_delays(scaled, R, dt, refined)
        self._held = held_inputs([Ui for _, Ui in experiments])
        self.input_scale_ = inputs_scale
        self._finish(n, start, refined, basis, scaled, R)
        self._screen(scaled, refined, R)
        self._check_hidden_delay(experiments)

    def partial_fit(self, Y: Any, U: Any = None, *, dt: float | None = None,
                    new_experiment: bool = False) -> OutputDMDidc:
        """Add a chunk of one experiment; memory stays independent of the data length.

        The canonical variate step uses every sample streamed (its statistics, a triangular
        factor of the stacked windows, are updated exactly: :mod:`dmdidc.output.streaming`),
        so ``singular_values_``, ``subspace_`` and the order's noise-edge count equal
        :meth:`fit`'s on the concatenated data to rounding.  The delays, the output-error
        refinement and the residual test of the order need the samples themselves: they run on
        the most recent ``memory`` samples (all of them while fewer were streamed, and then
        the result is :meth:`fit`'s).  The model is solved at every call (about one fit of
        ``memory`` samples: feed chunks of many samples).

        Parameters
        ----------
        Y : array_like, shape (l, L) or (l, L + 1), or IdData
            Outputs of the chunk (a 1-D array is one output).  With ``L + 1`` samples (the state
            convention of :meth:`DMDidc.partial_fit <dmdidc.DMDidc.partial_fit>`) chunks overlap by
            one sample: a continuing chunk's ``Y[:, 0]`` must equal the previous chunk's last
            output.  With ``L`` samples chunks follow each other (``Y[:, a:b]``, ``U[:, a:b]``).
            The first chunk fixes the convention.  An
            :class:`~dmdidc.IdData` (without ``U`` and ``dt``; operating point removed) adds
            each of its experiments as a new experiment after the first.
        U : array_like, shape (m, L)
        dt : float
            Sampling period; must not change between calls.
        new_experiment : bool, default False
            Start a new experiment (the first call always does).

        Returns
        -------
        self
            Fitted on everything so far; while the data are not yet enough the results raise
            the :class:`~dmdidc.InsufficientExcitationError` that says what is missing.

        Raises
        ------
        ParameterError
            ``detrend="constant"`` or ``"linear"`` (it needs each whole experiment;
            ``offset=True`` estimates a constant output offset instead), or ``dt`` changed.
        DimensionError
            A chunk that does not continue the previous one, or changed sizes.

        Examples
        --------
        >>> from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
        >>> plant = DelayedPlant.from_continuous([[-1.0, 2.0], [-2.0, -1.0]], [[1.0], [0.0]],
        ...                                      delay=0.7, dt=0.5)
        >>> U = random_excitation(1, 3000, rng=1)
        >>> Y = [[0.0, 1.0]] @ plant.simulate([0.0, 0.0], U)        # K + 1 outputs
        >>> est = OutputDMDidc(max_delay=3)
        >>> for a in range(0, 3000, 1000):                          # chunks overlap by one
        ...     est = est.partial_fit(Y[:, a:a + 1001], U[:, a:a + 1000], dt=0.5)
        >>> est.order_, round(float(est.delay[0]), 4), est.samples_
        (2, 0.7, 3000)
        """
        Y, U, dt, data = as_arrays(Y, U, dt, caller="OutputDMDidc.partial_fit")
        dt = check_positive("dt", dt)
        _warn_interpolated_inputs(data)
        if data is not None:          # deviations from its operating point, one experiment each
            Y, U = (Y, U) if isinstance(Y, (list, tuple)) else ([Y], [U])
            for i, (Yi, Ui) in enumerate(zip(Y, U, strict=True)):
                self.partial_fit(Yi, Ui, dt=dt, new_experiment=new_experiment or i > 0)
            self._left_out(data.n_states, U)     # the reservoir skipped them: said as in fit
            return self
        if self.detrend:
            raise ParameterError(f"partial_fit cannot use detrend={self.detrend!r} (it needs "
                                 f"each whole experiment); offset=True estimates a constant "
                                 f"output offset instead; fit(...) removes each experiment's "
                                 f"trend")
        Y, U = self._chunk(Y, U, dt, new_experiment)
        stream, reservoir = self._stream, self._reservoir
        stream.update(Y, U, new_experiment=self._new)
        reservoir.add(Y, U, new_experiment=self._new)
        self._new = False
        self._begin_solve()
        try:
            scale = stream.spread()
            scale = np.where(scale > 0, scale, 1.0)
            inputs_scale = stream.input_scale()
            basis = stream.basis(scale, inputs_scale)
            if not reservoir.experiments:
                raise InsufficientExcitationError(
                    f"no experiment has {reservoir.shortest} samples yet (a window's span)")
            _with_signal(reservoir.experiments)
            self.samples_ = stream.samples
            self.refinement_samples_ = sum(Yi.shape[1] for Yi, _ in reservoir.experiments)
            R, order, _, max_order = self._checked(Y.shape[0])
            refuse_collinear_inputs([Ui for _, Ui in reservoir.experiments], R)
            n, start, refined, scaled, basis = self._solve(
                _scaled_inputs(reservoir.experiments, inputs_scale), scale, basis,
                lambda at: stream.basis(at, inputs_scale), R, dt, order, max_order)
            refined = self._checked_delays(scaled, R, dt, refined)
        except InsufficientExcitationError as exc:
            self._pending = exc
            if hasattr(self, "order_"):
                del self.order_
            return self
        self._pending = None
        self.experiment_levels_ = np.ones(len(reservoir.experiments))   # (not weighted)
        self._held = held_inputs([Ui for _, Ui in reservoir.experiments])
        self.input_scale_ = inputs_scale
        self._level = input_level(reservoir.experiments)
        self._finish(n, start, refined, basis, scaled, R)
        self._screen(scaled, refined, R)
        self._check_hidden_delay(reservoir.experiments)
        # the reservoir's samples are the stream's last ones: number them as streamed
        self.outlier_samples_ = reservoir.in_stream(self.outlier_samples_)
        return self

    def _chunk(self, Y: Any, U: Any, dt: float, new_experiment: bool
               ) -> tuple[np.ndarray, np.ndarray]:
        """The chunk's ``(Y, U)`` pairs, checked against the stream (set up on the first)."""
        Y, U = _signals("Y", Y, "U", U)
        if Y.shape[1] not in (U.shape[1], U.shape[1] + 1):
            raise DimensionError(f"Y has {Y.shape[1]} samples and U {U.shape[1]}; expected "
                                 f"the same number, or one output more (chunks overlapping by "
                                 f"one sample); samples on the last axis")
        overlap = Y.shape[1] == U.shape[1] + 1
        if getattr(self, "_stream", None) is None:
            R, _, horizon, _ = self._checked(Y.shape[0])
            self.dt, self._overlap, self._new, self._last = dt, overlap, True, None
            self._stream = SubspaceStatistics(Y.shape[0], U.shape[0], max_delay=R,
                                              horizon=horizon, offset=self.offset)
            self._reservoir = Reservoir(self.memory, shortest=self._stream.span + 1)
        else:
            if dt != self.dt:
                raise ParameterError(f"dt changed between partial_fit calls: {self.dt} then {dt}")
            stream = self._stream
            if (Y.shape[0], U.shape[0]) != (stream.n_outputs, stream.n_inputs):
                raise DimensionError(f"chunk has {Y.shape[0]} outputs and {U.shape[0]} inputs; "
                                     f"earlier chunks had {stream.n_outputs} and "
                                     f"{stream.n_inputs}")
            if overlap != self._overlap:
                raise DimensionError(
                    f"chunk has {Y.shape[1]} outputs for {U.shape[1]} inputs; the first chunk "
                    f"fixed {'one output more than inputs' if self._overlap else 'as many'}")
            self._new = self._new or new_experiment
            if overlap and not self._new and not np.array_equal(Y[:, 0], self._last):
                raise DimensionError("Y[:, 0] does not continue the previous chunk (it must "
                                     "equal its last output); pass new_experiment=True for a "
                                     "new one")
        if overlap:
            self._last = Y[:, -1].copy()
            Y = Y[:, :-1]
        return Y, U

    def _solve(self, experiments: list, scale: np.ndarray, basis: SubspaceBasis, basis_at,
               R: int, dt: float, order: int | None, max_order: int
               ) -> tuple[int, StructuredFit, Refined, list, SubspaceBasis]:
        """The order and its fit: ``(n, start, refined, scaled experiments, basis)``; sets
        ``scale_``.

        The output-error fit pools one noise variance over the outputs divided by ``scale``
        (their spread), which is maximum likelihood only when every scaled output is equally
        noisy; the likelihood ratios of the order and delay checks, the residual tests and
        the intervals all read that pooled variance.  When the fit's residual variances
        differ by more than :data:`_UNEQUAL`, it is repeated once with each output scaled by
        its residual standard deviation (weighted output error); the first fit's warnings
        are then dropped (they judged the misweighted fit), else issued as found.
        ``basis`` is the subspace basis of the outputs divided by ``scale``, ``basis_at(s)``
        that of the outputs divided by ``s``.
        """
        found, first, ratio, unweighted = set(self._found), None, 1.0, ""
        for weighted in (False, True):
            scaled = [(Yi / scale[:, None], Ui) for Yi, Ui in experiments]
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    n, start, refined, white = self._fit_orders(basis, scaled, R, dt, order,
                                                                max_order)
                    n, start, refined = self._check_order(basis, scaled, R, dt, n, start,
                                                          refined, white)
            except (*_NO_FIT, InsufficientExcitationError) as exc:
                if first is None:
                    _reissue(caught)
                    raise
                # the weighted fit failed where the unweighted one did not: that one stands
                (n, start, refined, scaled, basis, scale, caught, self._found,
                 self.order_rule_) = first
                unweighted = (
                    f"outputs of unequal noise (residual variances {ratio:.3g} times apart) "
                    f"could not be fitted weighted by them ({exc}): the fit pools one noise "
                    f"variance, so its order checks and intervals misjudge the outputs; "
                    f"noise_std_ still gives each output's own level. Remedy: fix order=, or "
                    f"rescale the noisier outputs by their noise level before fitting")
                break
            if weighted or _exact_fit(scaled, refined, R):
                break
            # an output fitted to rounding has no noise to weigh it by: at most 1e16 times
            variances = _output_variances(scaled, refined, dt, R)
            variances = np.maximum(variances, _EXACT * variances.max())
            ratio = variances.max() / variances.min()
            if ratio <= _UNEQUAL:
                break
            first = (n, start, refined, scaled, basis, scale, caught, set(self._found),
                     self.order_rule_)
            scale = scale * np.sqrt(variances / variances.mean())
            basis = basis_at(scale)
            self._found = set(found)
        _reissue(caught)
        if unweighted:
            self._warn_new("unweighted", unweighted)
        self.scale_ = scale
        return n, start, refined, scaled, basis

    def _fit_order(self, basis: SubspaceBasis, experiments: list, R: int, dt: float, n: int,
                   dynamics: tuple[np.ndarray, np.ndarray] | None = None, stop=None,
                   test: bool = True) -> tuple[StructuredFit, Refined, float, str]:
        """Subspace dynamics of order ``n`` (or the given discrete ``(A, C)``), delays by
        profile, joint refinement (``stop``: :func:`~dmdidc.output.refine.refine`), residual
        test (``test=False``: skipped, p-value NaN, for fits compared by likelihood only)."""
        A_d, C = basis.dynamics(n) if dynamics is None else dynamics
        A_d = _with_real_logarithm(A_d)
        A_c = continuous_state_matrix(A_d, dt)
        with np.errstate(over="ignore", invalid="ignore"):     # _finite says what overflowed
            moments = _finite(lag_moments(experiments, A_d, C, R, feedthrough=self.feedthrough,
                                          offset=self.offset), A_d)
        start = structured_fit(moments, A_c, dt, profile_delays(moments, A_c, dt))
        refined = refine(experiments, dt, R, A_c=A_c, C=C, B_c=start.B_c, delays=start.delays,
                         initial_states=start.initial_states,
                         D=start.D if self.feedthrough else None,
                         offset=start.offset if self._offset else None, stop=stop,
                         trend=self._trend)
        if refined.rss <= _EXACT * moments.energy:
            return start, refined, 1.0, "the model reproduces the outputs to rounding"
        if not test:
            return start, refined, np.nan, "not tested"
        p_value, sentence = residual_input_test(experiments, refined, dt, R,
                                                lags=max(2 * R + 2, 10))
        return start, refined, p_value, sentence

    def _continued(self, experiments: list, R: int, dt: float, refined: Refined) -> Refined:
        """The model's fit ``refined``, or, when it ended at its evaluation limit with more to
        gain (``ending``: the ``convergence`` check), its search continued for
        :data:`_MORE_EVALUATIONS` at a time while a round gains a noise variance or more (at
        most :data:`_CONTINUATIONS` rounds).  Only the model's: the candidates' searches
        decide orders and delay ties as before (continuing every search, together with a
        stricter step rule, cost 40 % of the fit time on 400 random plants and moved a few of
        those decisions)."""
        floor = _exact_rss(experiments, R, _ROUNDED)
        for _ in range(_CONTINUATIONS):
            if refined.ending != "evaluations" or refined.rss <= floor:
                break
            more = restart(experiments, refined, refined.delays, dt, R,
                           feedthrough=self.feedthrough, offset=self._offset,
                           max_evaluations=_MORE_EVALUATIONS, damping=refined.damping)
            if more is None:
                break
            # the search's own unit (rss / N), which ended it at the limit
            gained = in_noise_variances(refined.rss - more.rss, refined.rss,
                                        sum(part.size for part in refined.residuals))
            refined = dataclasses.replace(more,
                                          evaluations=refined.evaluations + more.evaluations)
            if not gained >= 1.0:       # crawling: more rounds would not reach the minimum
                break
        return refined

    def _fit_orders(self, basis: SubspaceBasis, experiments: list, R: int, dt: float,
                    order: int | None, max_order: int
                    ) -> tuple[int, StructuredFit, Refined, float | None]:
        """The order (fixed, or :meth:`_edge_order`, lowered to what the input-output part
        needs when the residuals are coloured: :mod:`dmdidc.output.noise`), with its fits and
        the whiteness p-value of the returned fit (``None`` when not tested here), which
        :meth:`_check_order` asks about the same fit."""
        n, start, refined, explained = self._edge_order(basis, experiments, R, dt, order,
                                                        max_order)
        if not explained:       # coloured by the misfit, which the residual check has reported
            return n, start, refined, None
        white, sentence = self._whiteness(experiments, refined, R, dt)
        if white > self.significance:
            return n, start, refined, white
        lowered = (None if order is not None
                   else self._lowest_order(basis, experiments, R, dt, refined))
        if lowered is not None:
            (n, start, refined), rule = lowered
            white = None                        # another fit: not tested
            self.order_rule_ = (f"order {n}: the residuals of the noise-edge order are coloured "
                                f"({sentence}), so the edge count includes noise-model states; "
                                f"{rule}")
            order_note = f"the order was lowered to the {n} states the inputs excite (order_rule_)"
        elif order is None:
            order_note = (f"no lower order explains the input-output part, so order {n} stands; "
                          f"modes the inputs barely excite may be noise-model states (compare "
                          f"fits with a lower order=)")
        else:
            order_note = f"order {n} was fixed by the user"
        self._warn_new(
            "coloured",
            f"coloured output noise: the residuals are not white ({sentence}); {order_note}. "
            f"With inputs independent of the noise (open loop) the output-error fit stays "
            f"consistent (under feedback it does not: see the feedback check), but delay_ci, "
            f"eigenvalue_ci and the "
            f"standard errors assume white noise and are too narrow: treat them as lower "
            f"bounds, or estimate the spread from independent experiments")
        return n, start, refined, white

    def _whiteness(self, experiments: list, refined: Refined, R: int, dt: float
                   ) -> tuple[float, str]:
        """Ljung-Box p-value of the output-error residuals (1 for an exact fit)."""
        if _exact_fit(experiments, refined, R):
            return 1.0, "an exact fit"
        return whiteness_test(_residuals(experiments, refined, dt, R))

    def _lowest_order(self, basis: SubspaceBasis, experiments: list, R: int, dt: float,
                      fitted: Refined) -> tuple[tuple[int, StructuredFit, Refined], str] | None:
        """Below the order of ``fitted``, the smallest order whose residuals do not depend on
        the inputs: ``((order, start, refined), rule)``, or ``None``.  Each order starts from
        the balanced truncation of ``fitted`` (its noise states go first), then, if that fit
        fails, from the subspace basis (``None``); searched upward (low orders are cheap fits,
        orders with noise modes are not)."""
        for k in range(1, fitted.A_c.shape[0]):
            balanced = balanced_dynamics(fitted, k, dt)
            for start_from in ([balanced] if balanced is not None else []) + [None]:
                try:
                    start, refined, p_value, sentence = self._fit_order(
                        basis, experiments, R, dt, k, start_from)
                except _NO_FIT:      # no continuous plant, or no finite fit, from this start
                    continue
                if p_value > self.significance:
                    return (k, start, refined), (f"order {k} is the smallest whose residuals "
                                                 f"do not depend on the inputs ({sentence})")
        return None

    def _edge_order(self, basis: SubspaceBasis, experiments: list, R: int, dt: float,
                    order: int | None, max_order: int
                    ) -> tuple[int, StructuredFit, Refined, bool]:
        """The order: fixed, or the smallest from the noise-edge count whose residuals no
        longer depend on the inputs (``order_rule_`` says which and why); and whether they
        do not."""
        limit = min(max_order, basis.max_order)
        if order is not None:
            if order > basis.max_order:
                raise InsufficientExcitationError(
                    f"order={order} exceeds what horizon={basis.horizon} with "
                    f"{basis.n_outputs} outputs can reveal ({basis.max_order}); raise horizon")
            start, refined, p_value, sentence = self._fit_order(basis, experiments, R, dt, order)
            self.order_rule_ = f"order {order}: fixed by the user"
            self._residual_check(p_value, sentence, order)
            self._above_need(basis, experiments, R, dt, order, refined)
            return order, start, refined, p_value > self.significance
        detected = min(basis.detected_order(), limit)
        edge = (f"{detected} canonical correlation(s) above the noise edge "
                f"{np.sqrt(basis.noise_edge):.3g}")
        tried, last_error, shifts = {}, None, 0
        for n in range(max(detected, 1), min(detected + _EXTRA_ORDERS, limit) + 1):
            try:
                tried[n] = self._fit_order(basis, experiments, R, dt, n)
            except _NO_FIT as exc:      # an order with no continuous or no finite fit: next
                last_error, shifts = exc, _shift_states(basis.dynamics(n)[0])
                continue
            if tried[n][2] > self.significance:
                self.order_rule_ = (f"order {n}: {edge}; the residuals of order {n} no longer "
                                    f"depend on the inputs ({tried[n][3]})")
                return n, tried[n][0], tried[n][1], True
        if not tried and isinstance(last_error, NonFiniteError):
            # the count itself can be too high: a few spikes add canonical correlations above
            # the noise edge (a user trial: two spikes made it 10, whose dynamics overflowed,
            # while order 3 fitted and named the spikes), so the orders below it are tried,
            # upward, before the data are refused.  Not after a missing logarithm: a delay
            # beyond max_delay (shift states) is named below, and lower orders would hide it
            for n in range(1, max(detected, 1)):
                try:
                    tried[n] = self._fit_order(basis, experiments, R, dt, n)
                except _NO_FIT:
                    continue
                if tried[n][2] > self.significance:
                    self.order_rule_ = (
                        f"order {n}: {edge}, but no order from {max(detected, 1)} gave a "
                        f"finite fit with a real logarithm (outliers or a short record can "
                        f"raise the count); order {n} is the smallest whose residuals do not "
                        f"depend on the inputs ({tried[n][3]})")
                    return n, tried[n][0], tried[n][1], True
        if not tried and isinstance(last_error, NonFiniteError):
            raise NonFiniteError(f"no order from {max(detected, 1)} gives a finite fit: "
                                 f"{last_error}") from None
        if not tried:
            beyond = (f"; {shifts} discrete eigenvalue(s) near 0 are what a delay beyond "
                      f"max_delay * dt = {R * dt:g} s adds (the inputs in flight become states "
                      f"of a pure shift, which has no logarithm): increase max_delay"
                      if shifts else "")
            raise LogarithmError(
                f"no order from {max(detected, 1)} gives dynamics with a real logarithm "
                f"({last_error}){beyond}; the sampling period may alias the plant's modes: "
                f"sample faster or fix order")
        n = max(tried, key=lambda k: tried[k][2])
        below = (f"; orders {max(detected, 1)} to {min(detected + _EXTRA_ORDERS, limit)} had "
                 f"no finite fit ({last_error})" if max(tried) < max(detected, 1) else "")
        self.order_rule_ = (f"order {n}: {edge}{below}; no order up to {max(tried)} leaves "
                            f"residuals independent of the inputs, order {n} comes closest")
        self._residual_check(tried[n][2], tried[n][3], n)
        return n, tried[n][0], tried[n][1], False

    def _check_order(self, basis: SubspaceBasis, experiments: list, R: int, dt: float, n: int,
                     start: StructuredFit, refined: Refined, white: float | None = None
                     ) -> tuple[int, StructuredFit, Refined]:
        """Right or loud about the automatic order (:mod:`dmdidc.output.order_check`).

        With white residuals, states are added while one more is significant at
        ``significance`` by its likelihood ratio (``order_rule_`` says so).  When the weakest
        kept canonical correlation is below ``_CLEAR`` noise edges, the order is reported
        uncertain if order ``n - 1`` (from the balanced truncation of the fit) fits as well at
        ``significance``, or order ``n + 1`` fits better at ``_UNCERTAIN``.  A told order
        (``order=``) is kept, and warned too low when, with white residuals, one more state is
        significant at ``significance``.  Only inexact fits.
        """
        if _exact_fit(experiments, refined, R):
            return n, start, refined
        E = len(experiments)

        def fit(k: int, dynamics=None, stop=None) -> tuple[StructuredFit, Refined]:
            # candidates are compared by likelihood: their residual input test is not needed
            return self._fit_order(basis, experiments, R, dt, k, dynamics, stop,
                                   test=False)[:2]

        def unclear(k: int) -> bool:    # is order k's weakest canonical correlation unclear?
            return bool(basis.singular_values[k - 1] < _CLEAR * np.sqrt(basis.noise_edge))

        def starts(fitted: Refined) -> list:
            return extended_dynamics(fitted, np.vstack(_residuals(experiments, fitted, dt, R)),
                                     dt)

        def raised_order(limit: int, read_at) -> tuple:
            return raise_order(fit, n, start, refined, limit=limit,
                               significance=self.significance, n_experiments=E, starts=starts,
                               read_at=read_at,
                               truncate=lambda fitted, k: balanced_dynamics(fitted, k, dt))

        if white is None and (self.order is None or n < min(self.max_order, basis.max_order)):
            white = self._whiteness(experiments, refined, R, dt)[0]   # (not by _fit_orders)
        if self.order is not None:
            # a told order is kept; the likelihood ratio of one more state (white residuals:
            # it is calibrated only then) says when the data ask for it
            if n < min(self.max_order, basis.max_order) and white > self.significance:
                more, _, _, rule, _ = raised_order(n + 1, lambda k: 0.0)
                if more > n:
                    self._warn_new(
                        f"order_low:{n}",
                        f"order={n} is too low for the data: {rule}; the model keeps the "
                        f"order told, so its modes, delays and gains may be off. Remedy: "
                        f"order={n + 1}, or order=None (chosen from the data)")
            return n, start, refined
        larger, raised = None, ""
        if white > self.significance:
            n, start, refined, raised, larger = raised_order(
                min(self.max_order, basis.max_order),
                lambda k: _UNCERTAIN if unclear(k) else 0.0)
            if raised:
                self.order_rule_ += f"; raised: {raised}"
        if not unclear(n):
            return n, start, refined
        # a raised order's weakest state was just found significant: no n - 1 refit
        smaller = None if raised else balanced_dynamics(refined, n - 1, dt) if n > 1 else None
        found = neighbour_verdicts(fit, refined, smaller, larger, raised=raised,
                                   significance=self.significance, uncertain=_UNCERTAIN,
                                   n_experiments=E)
        if found:
            self._warn_new(
                f"order_uncertain:{n}",
                f"order {n} is uncertain: its weakest canonical correlation "
                f"{basis.singular_values[n - 1]:.3g} is within {_CLEAR:g} x the noise edge "
                f"{np.sqrt(basis.noise_edge):.3g} and {'; '.join(found)}; modes may be missing, "
                f"spurious or off. Remedy: more data, richer inputs or more sensors, or compare "
                f"fits with order= set")
        return n, start, refined

    def _checked_delays(self, experiments: list, R: int, dt: float, refined: Refined
                        ) -> Refined:
        """:meth:`_check_delays`, then the profiles of the delays near whole periods that
        :meth:`delay_ci` and :meth:`eigenvalue_ci` join (:mod:`dmdidc.output.intervals`)."""
        refined = self._check_delays(experiments, R, dt,
                                     self._continued(experiments, R, dt, refined))
        scale = None
        if _exact_fit(experiments, refined, R) and refined.rss > 0:
            # an exact fit's residual is rounding, not noise: its whole residual is the
            # parameters' possible error, not rss / dof of it, and the delays' profiles at
            # that scale give their intervals (intervals module, Exact fits)
            scale = refined.rss
            refined = dataclasses.replace(refined, covariance=refined.covariance * (
                scale / (refined.rss / refined.dof)))
        self._profiles = profiles(experiments, refined, dt, R, feedthrough=self.feedthrough,
                                  offset=self._offset, exact_scale=scale)
        return refined

    def _check_delays(self, experiments: list, R: int, dt: float, refined: Refined) -> Refined:
        """Right or loud about each delay: is there a second delay the data fit as well?

        With few outputs the sampled numerator of a channel has as many coefficients as its
        input vector and fractional delay have parameters, so a second ``(b, r)`` can give
        (nearly) the same input-output map; the local covariance cannot see it.  Each channel's
        profile residual (at the refined dynamics) is searched for its lowest local minimum
        outside the chosen delay's interval at ``significance`` (and its grid cell), each well
        found to the bottom however narrow (:func:`~dmdidc.output.blocks.profile_minima`); if
        that minimum is within twice the chosen one's (on exact data: near-exact, at
        ``_PROFILE_ROUNDING``), the full output-error fit is restarted there (from the
        profile's own input vectors and initial states at that delay) and the two compared
        by a likelihood-ratio test (``Delta RSS / sigma^2`` against chi^2 with one dof at
        ``significance``): a significantly better fit replaces the first, an
        indistinguishable one warns, naming both delays.
        """
        if R == 0:
            return refined
        # Exact (noise-free) data have no sigma^2 for the likelihood ratio: there a second
        # delay counts as equally good when it fits exactly too.
        exact_rss = _exact_rss(experiments, R)
        exact = refined.rss <= exact_rss
        # the distributions' own special functions (scipy.stats adds ~30 us of checks per call)
        critical = float(special.chdtri(1, self.significance))             # chi2.isf
        z, delay_at = float(-special.ndtri(self.significance / 2)), refined.layout["delays"].start
        moments, at = None, None
        for i in range(refined.delays.size):
            if at is not refined:           # the moments of the current fit's dynamics
                moments, at = lag_moments(experiments, linalg.expm(refined.A_c * dt),
                                          refined.C, R, feedthrough=self.feedthrough,
                                          offset=self.offset), refined
            # outside the chosen delay's interval at ``significance`` and its grid cell
            spread = max(z * np.sqrt(max(refined.covariance[delay_at + i, delay_at + i], 0.0)),
                         PROFILE_CELL * dt)
            minima, values, rss = profile_minima(
                moments, refined.A_c, dt, refined.delays, i,
                skip=(refined.delays[i] - spread, refined.delays[i] + spread))
            far = np.abs(minima - refined.delays[i]) > spread
            chosen = float(rss(refined.delays[i:i + 1])[0])
            # on exact data both residuals are the profile's rounding, not a scale to double
            level = max(2.0 * chosen, _PROFILE_ROUNDING * moments.energy if exact else 0.0)
            if not far.any() or values[far].min() > level:
                continue
            delays = refined.delays.copy()
            delays[i] = minima[far][np.argmin(values[far])]
            # started from the profile's own solution there (input vectors, initial states,
            # D and offset at those delays), whose residual is the well's bottom: from the
            # chosen fit's input vectors the search had to carry them across, and on exact
            # data (convergence sweep seed 52, 6 states, one sensor) it reached the truth's
            # exact fit on some BLAS kernels and stopped at its limit 1e20 above it on others
            at_well = structured_fit(moments, refined.A_c, dt, delays)
            start = dataclasses.replace(refined, B_c=at_well.B_c,
                                        initial_states=at_well.initial_states,
                                        D=at_well.D if self.feedthrough else refined.D,
                                        offset=at_well.offset if self._offset else refined.offset)
            # a restart that cannot come within the tie's critical value of the chosen fit
            # changes nothing: its search is given up there (the order check's rule)
            other = restart(experiments, start, delays, dt, R, feedthrough=self.feedthrough,
                            offset=self._offset, stop=None if exact else short_of(
                                refined.rss * (1.0 + critical / refined.dof)))
            if other is None:
                continue
            if exact:
                tied = other.rss <= exact_rss
                evidence = "both fit the noise-free data exactly"
            else:
                ratio = (refined.rss - other.rss) / (refined.rss / refined.dof)
                if ratio > critical:          # the restart fits significantly better: take it
                    refined = self._continued(experiments, R, dt, other)
                    continue
                tied = ratio > -critical
                evidence = (f"likelihood ratio {abs(ratio):.3g} < {critical:.3g} at level "
                            f"{self.significance:g}")
            if tied and abs(other.delays[i] - refined.delays[i]) > spread:
                self._warn_new(
                    f"delay_tie:{i}",
                    f"channel {i}: delay not determined by the data: {refined.delays[i]:.4g} s "
                    f"and {other.delays[i]:.4g} s fit equally well ({evidence}); the "
                    f"interval delay_ci covers only the first. Add outputs (sensors), excite "
                    f"with richer inputs, or lower max_delay if the delay is known to be "
                    f"shorter")
        return refined

    def _screen(self, experiments: list, refined: Refined, R: int) -> None:
        """Feedback and outlier checks of the residuals (:mod:`dmdidc.output.checks`):
        ``checks_`` and ``outlier_samples_``; exact fits are not tested.  A check that failed
        at the previous solve of the same stream (partial_fit) does not warn again
        (:meth:`_begin_solve`)."""
        residuals = _residuals(experiments, refined, self.dt, R)
        checks, self.outlier_samples_ = data_checks(
            experiments, residuals, R, significance=self.significance,
            feedthrough=self.feedthrough, warned=self._before)
        searched = convergence(refined, exact=_exact_fit(experiments, refined, R),
                               rounded=refined.rss <= _exact_rss(experiments, R, _ROUNDED))
        if searched.failed:
            warn_new(searched.name, searched.message(), self._before)
        self.checks_ = (*checks, searched)
        self._found.update(c.name for c in self.checks_ if c.failed)
        # experiments of unequal noise: their relative levels, by which fit weighs them, and
        # each experiment's residual sum of squares per output (fit's noise_std_ then)
        self._unequal = (relative_levels([E.T for E in residuals])
                         if self.checks_[_named(self.checks_, "noise_levels")].failed else None)
        self._energies = np.array([np.sum(E ** 2, axis=0) for E in residuals])

    def _begin_solve(self) -> None:
        """Start a solve: the findings of the previous solve of the same stream (partial_fit
        solves after every chunk) are not warned again by :meth:`_warn_new`; a fit starts
        afresh."""
        same = self._stream is not None and getattr(self, "_solved", None) is self._stream
        self._before = frozenset(getattr(self, "_found", ())) if same else frozenset()
        self._found: set[str] = set()
        self._solved = self._stream

    def _check_hidden_delay(self, experiments: list) -> None:
        """With ``max_delay=0``: warn (once per new finding) when a refit with room for a
        delay explains the unscaled ``experiments`` at a lower order
        (:func:`~dmdidc.output.bound_check.hidden_delay`); streaming refits the samples
        :meth:`partial_fit` refines on."""
        hidden = hidden_delay(self, experiments, self.significance)
        if hidden:
            self._warn_new("hidden delay", hidden)

    def _warn_new(self, key: str, message: str) -> None:
        """Warn ``message`` once per new finding ``key`` (a check's or a channel's), by the
        rule of :func:`~dmdidc.output.checks.warn_new`."""
        self._found.add(key)
        warn_new(key, message, self._before)

    def _residual_check(self, p_value: float, sentence: str, order: int) -> None:
        if p_value <= self.significance:
            self._warn_new(
                f"residual:{order}",
                f"residual check failed at order {order}: {sentence} <= {self.significance:g}. "
                f"The model misses how the inputs act: a higher order (order=, max_order=), a "
                f"delay beyond max_delay, or feedback from the outputs to the inputs (closed "
                f"loop biases output-error fits)")

    def _above_need(self, basis: SubspaceBasis, experiments: list, R: int, dt: float,
                    order: int, refined: Refined) -> None:
        """A fixed order above the canonical correlations' count on noise-free data: warn if
        that count reproduces the outputs to rounding too (the extra modes are then arbitrary;
        on noisy data the likelihood decides, :meth:`_check_order`)."""
        needed = max(basis.detected_order(), 1)
        if order <= needed or not _exact_fit(experiments, refined, R):
            return
        try:
            smaller = self._fit_order(basis, experiments, R, dt, needed, test=False)[1]
        except _NO_FIT:
            return
        if _exact_fit(experiments, smaller, R):
            self._warn_new(
                "above_need",
                f"order={order} is higher than the noise-free data need: order {needed} "
                f"reproduces them to rounding too ({needed} canonical correlation(s) above the "
                f"noise edge), so {order - needed} mode(s) of eigenvalues_ are not determined "
                f"by the data: set order={needed}")

    def _finish(self, n: int, start: StructuredFit, refined: Refined, basis: SubspaceBasis,
                experiments: list, R: int) -> None:
        dt = self.dt
        self.order_ = n
        self.subspace_ = basis
        self.singular_values_ = basis.singular_values
        self.noise_edge_ = float(np.sqrt(basis.noise_edge))
        self.horizon_ = basis.horizon
        self.refined_ = refined
        self.A_c, self.delay = refined.A_c, refined.delays
        self.B_c = refined.B_c / self.input_scale_
        self.A_d = linalg.expm(self.A_c * dt)
        self.C = refined.C * self.scale_[:, None]
        self.D = refined.D * self.scale_[:, None] / self.input_scale_
        self.offset_ = refined.offset * self.scale_
        self.operating_point_ = input_operating_point(self.A_c, self.B_c, dt,
                                                      getattr(self, "_level", None))
        self.delay_steps, self.delay_fraction = split_delay(self.delay, dt)
        self.initial_states_ = refined.initial_states
        # standard errors of the real and imaginary parts, (n, 2)
        self.eigenvalues_, self._eigenvalue_axes_se = eigenvalue_parts(refined)
        # the pairs near coalescence only widen eigenvalue_ci's boxes: found when asked
        self._pairs = None
        self._pair_source = (refined.A_c, refined.covariance[refined.layout["A_c"],
                                                             refined.layout["A_c"]])
        self.eigenvalue_se_ = np.hypot(*self._eigenvalue_axes_se.T)
        delays = refined.layout["delays"]
        self.delay_se_ = _delay_se(np.sqrt(np.clip(np.diag(refined.covariance)[delays], 0.0,
                                                   None)), self._profiles)
        self.noise_std_ = np.sqrt(_output_variances(experiments, refined, dt, R)) * self.scale_
        self.at_bound_ = _at_bound(self.delay, R, dt)
        # a held input's delay is meaningless, at the bound or not (_warn_checks names it)
        self.at_bound_[list(getattr(self, "_held", {}))] = False
        self._warn_checks(start, R)
        intervals = self.delay_ci()
        undetermined = determined_delays(intervals, dt, R)
        if undetermined.failed:
            self._warn_new(undetermined.name, undetermined.message())
        self._warn_idle_mode()
        # the delays not reported already (held, without effect, undetermined, at the bound)
        reported = np.array([any(key in self._found for key in (f"held:{i}", f"no_effect:{i}",
                                                                  f"at_bound:{i}"))
                             for i in range(len(self.delay))], dtype=bool)
        reported |= undetermined_channels(intervals, dt, R)
        # a channel whose first Markov parameter nearly vanishes (relative degree two: one
        # sensor on a second-order path) has a nearly singular first order in its delay, where
        # an unprofiled Wald interval is unreliable either way (the docs' oscillator: +-0.13 s
        # on 2 of 12 noise draws whose delays spread 0.014 s, the truth missed on 3): such a
        # delay is not judged, and the finding names it.  |C b| against |C A_c b| T, the outputs
        # in noise units: the same in any state basis and any output units
        weight = 1.0 / np.where(self.noise_std_ > 0, self.noise_std_, 1.0)[:, None]
        first = np.linalg.norm(weight * (self.C @ self.B_c), axis=0)
        second = np.linalg.norm(weight * (self.C @ self.A_c @ self.B_c), axis=0) * dt
        singular = first <= _FIRST_ORDER * second
        precision = precise_model(intervals, self.eigenvalues_, self.eigenvalue_ci(), dt,
                                  ~(reported | singular),
                                  unjudged=np.flatnonzero(singular & ~reported))
        if precision.failed:
            self._warn_new(precision.name, precision.message())

    def _warn_idle_mode(self) -> None:
        """Warn about a mode at 0 (within three standard errors, or slower than 1e-3 per
        period) that the inputs do not reach: an output offset (``offset=False``) or a drift
        fitted as a state (data with a sensor offset gave order 4 with an eigenvalue of 1e-7
        1/s, a linear drift one of +4e-6 1/s, both in silence)."""
        values, vectors = np.linalg.eig(self.A_c)
        # in the fit's units: the inputs and outputs at comparable spreads
        reach = (np.linalg.norm(np.linalg.pinv(vectors) @ self.refined_.B_c, axis=1)
                 * np.linalg.norm(self.refined_.C @ vectors, axis=0))
        slow = (np.abs(values) <= 3.0 * self.eigenvalue_se_) | (np.abs(values) * self.dt < 1e-3)
        idle = slow & (reach <= _IDLE_MODE * reach.max(initial=0.0))
        if not idle.any():
            return
        lower = (f"order={self.order_ - 1}" if self.order_ > 1 else "a lower order")
        # with detrend each experiment's own level (or line) is fitted already: the generic
        # cause below ("one offset_ is fitted for all": detrend='constant') would be wrong (a
        # linear drift under detrend='constant' read so on 4 of 4 plants)
        trend = {"constant": ("mean", "a drift within the experiments (a slow trend beside "
                                      "each one's level): fit with detrend='linear' (each "
                                      "experiment's line removed from outputs and inputs)"),
                 "linear": ("line", "a curved drift within the experiments")}.get(self.detrend)
        cause = (f"with detrend={self.detrend!r} each experiment's {trend[0]} is fitted with the "
                 f"plant, so this is {trend[1]}, or the experiments' free initial states (one "
                 f"more per experiment for each mode: {len(self.initial_states_)} here) fitting "
                 f"their noise, frequent with many short experiments: fit with {lower} and "
                 f"compare, or record without the drift" if trend else
                 "with offset=False a constant output offset is fitted as such a state, not "
                 "the plant's; if the outputs carry an offset (sensor offsets, absolute units) "
                 "fit with offset=True (the default)" if not self.offset else
                 "a drift of the outputs (a slow trend beside the constant offset), or "
                 "experiments at different output levels (one offset_ is fitted for all), is "
                 "fitted as such a state, not the plant's: fit with detrend='constant' (each "
                 "experiment's mean removed; its level is then not kept) or detrend='linear' "
                 "(each experiment's line removed from outputs and inputs), or record without "
                 "the drift")
        value = values[idle][0]
        shown = f"{value.real:.2g}" if value.imag == 0 else f"{value:.2g}"
        self._warn_new("idle_mode", f"a mode at {shown} 1/s that the inputs do not reach: "
                                    f"{cause}")

    def _warn_checks(self, fit: StructuredFit, R: int) -> None:
        """Right or loud: a channel without effect, a delay at the bound, an order at the cap.

        The channel test uses the structured fit at the subspace dynamics (``b``'s covariance
        there is basis-consistent); the bound check the refined delays.
        """
        m, n = fit.B_c.shape[1], fit.B_c.shape[0]
        sigma2 = fit.rss / fit.dof
        # each channel's effect at its input's spread (the fit's inputs are scaled to it:
        # in units 1e8 apart one b was 1e-8 of the other, which the rounding test read as none)
        effect = np.linalg.norm(fit.B_c, axis=0)
        largest = effect.max(initial=0.0)
        for i in range(m):
            cov = fit.covariance[i * n:(i + 1) * n, i * n:(i + 1) * n]
            b = fit.B_c[:, i]
            # an effect at rounding of the others is none whatever its covariance says (on
            # noise-free data both are rounding: the Wald statistic of an input held at 0
            # came out -7.8e17 or 3.6e11 depending on the solver)
            statistic = (0.0 if effect[i] <= _NO_EFFECT * largest
                         else _wald(b, cov) if sigma2 > 0 else np.inf)
            critical = float(special.chdtri(n, self.significance / m))          # chi2.isf
            held = getattr(self, "_held", {}).get(i)
            if held is not None:
                # its effect is a constant, as the offset's and a free initial state's: it
                # showed as "at the bound, raise max_delay" or "not determined", not as itself
                self._warn_new(
                    f"held:{i}",
                    f"channel {i}: the input is held at {held:.4g} over every sample the delays "
                    f"are fitted on (partial_fit: the last memory samples): its effect cannot "
                    f"be told apart from the output offset and the initial state, and its "
                    f"delay {self.delay[i]:.4g} s is meaningless: excite it (vary it) or drop "
                    f"that input row")
                continue
            if statistic <= critical:
                self._warn_new(
                    f"no_effect:{i}", f"channel {i}: no significant effect on the outputs (chi^2 = "
                    f"{statistic:.3g} <= {critical:.3g} at level {self.significance:g}); its "
                    f"delay {self.delay[i]:.4g} s is meaningless: excite it more or drop it")
            if self.at_bound_[i]:
                self._warn_new(
                    f"at_bound:{i}",
                    f"channel {i}: delay {self.delay[i]:.4g} s is at the bound max_delay * dt "
                    f"= {R * self.dt:g} s: the true delay may be longer; raise max_delay")
        # (an order the user fixed was not chosen against the cap: nothing to raise)
        if self.order is None and self.order_ >= min(self.max_order,
                                                     (self.horizon_ - 1) * len(self.scale_)):
            self._warn_new(
                "order_cap",
                f"order {self.order_} is the largest allowed: more dynamics may be present; "
                f"raise max_order or horizon")

    # -- results --------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # only for names that normal lookup did not find: a result before a fit (or while a
        # stream is short) says so, as DMDidc's do, instead of a bare AttributeError (also a
        # property whose NotFittedError, an AttributeError, Python routes here)
        prop = getattr(type(self), name, None)
        if isinstance(prop, property) and "order_" in self.__dict__:
            return prop.fget(self)    # fitted: the property's own AttributeError, not masked
        if name in _RESULTS or isinstance(prop, property):
            loaded = self.__dict__.get("_loaded_from")
            if loaded is not None:
                raise NotFittedError(f"{name} is not available: this OutputDMDidc was loaded "
                                     f"from {loaded!r}, which does not record it (checks_ and "
                                     f"outlier_samples_ are recorded since 2026-11-27); fit "
                                     f"it to the data again to compute it")
            pending = self.__dict__.get("_pending")
            if pending is not None:
                raise NotFittedError(f"{name} is not available: not enough data streamed yet: "
                                     f"{pending}")
            raise NotFittedError(f"{name} is not available: this OutputDMDidc is not fitted "
                                 f"yet: call fit(Y, U, dt=...)")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check_fitted(self) -> None:
        if getattr(self, "_pending", None) is not None:
            raise InsufficientExcitationError(f"not enough data streamed yet: {self._pending}")
        if not hasattr(self, "order_"):
            raise NotFittedError("this OutputDMDidc is not fitted yet: call fit(Y, U, dt=...)")

    def delay_ci(self, level: float = 0.95) -> np.ndarray:
        """Confidence interval of each channel's delay, shape (m, 2), seconds
        (:meth:`confidence_intervals` gives them as ``DMDidc.delay_ci`` does: an
        :class:`~dmdidc.inference.intervals.IntervalEstimate` with ``.low``, ``.high``).

        Wald intervals ``delay +- z se`` from the joint output-error covariance (the errors of
        the dynamics included; white output noise assumed), clipped to ``[0, max_delay dt]``.
        Near a whole period the outputs are not smooth in the delay; there the interval also
        holds every delay the profile likelihood ratio does not reject at ``level``
        (:mod:`dmdidc.output.intervals`; a model read by :meth:`load` keeps the profiles).
        A delay whose ``delay_se_`` is NaN (Wald says nothing there) gets its profile's
        interval alone.
        """
        self._check_fitted()
        level = float(level)
        if not 0.0 < level < 1.0:
            raise ParameterError(f"level={level!r}; accepted: (0, 1)")
        z = -special.ndtri((1.0 - level) / 2.0)        # stats.norm.isf without its checks
        low, high = joined_delays(self.delay - z * self.delay_se_,
                                  self.delay + z * self.delay_se_,
                                  getattr(self, "_profiles", ()), level)
        bound = self.max_delay * self.dt
        return np.stack([np.clip(low, 0.0, bound), np.clip(high, 0.0, bound)], axis=1)

    def confidence_intervals(self, level: float = 0.95) -> ConfidenceIntervals:
        """The delays' intervals as :meth:`DMDidc.confidence_intervals
        <dmdidc.DMDidc.confidence_intervals>` returns them: ``.delay`` is an
        :class:`~dmdidc.inference.intervals.IntervalEstimate` (``value``, ``low``, ``high``,
        ``standard_error`` = ``delay_se_``, seconds) holding :meth:`delay_ci`'s bounds, so code
        reads ``est.confidence_intervals().delay.low`` from either estimator; ``str()`` prints
        ``r[0] = 1.30 +/- 0.01 s`` (the ends where the interval is not symmetric: profile
        joined, or clipped to ``[0, max_delay dt]``).  ``A_c`` and ``B_c`` are ``None``: the
        output model's state basis is the fit's own choice (the eigenvalues' intervals are
        :meth:`eigenvalue_ci`'s).  :meth:`delay_ci` keeps its array (m, 2)."""
        bounds = self.delay_ci(level)
        delay = IntervalEstimate("r", self.delay, bounds[:, 0], bounds[:, 1], self.delay_se_,
                                 level=float(level), method="asymptotic", unit="s")
        return ConfidenceIntervals(delay, None, None, level=float(level), method="asymptotic")

    @property
    def diagnostics_(self) -> FitDiagnostics:
        """The fit's checks (``checks_``) as :attr:`DMDidc.diagnostics_
        <dmdidc.DMDidc.diagnostics_>` holds them: ``summary()`` (the table of ``pass`` /
        ``note`` / ``FAIL`` / ``n/a``), ``failed``, ``diagnostics_["feedback"]``.  Each
        statistical check is taken at ``significance``; the level shown is their Bonferroni
        sum (at most the family-wise false-alarm probability).  ``plot()`` has no residual
        figure for an output-error fit (``resid``'s data are DMDidc's)."""
        checks = self.checks_
        tested = sum(c.passed is not None and c.name != "convergence" for c in checks)
        return FitDiagnostics(checks, estimator="output-error", instruments=None,
                              level=tested * self.significance,
                              notes=(f"each statistical check at {self.significance:g}",))

    def eigenvalue_ci(self, level: float = 0.95) -> np.ndarray:
        """Confidence boxes (n, 2) of the eigenvalues as complex corners ``low``, ``high``:
        ``Re lambda -+ z se(Re lambda)`` and the same for the imaginary part; each box covers
        its eigenvalue at ``level``.  A complex eigenvalue's box is two intervals, each at
        ``sqrt(level)`` (Sidak: the box of two parts at ``level`` each covered only about
        ``level^2``, 0.86-0.89 instead of 0.95 on the sweep of
        ``benchmarks/bench_output_loud.py``); a real eigenvalue's interval is at ``level``
        (its imaginary part has none).  Near a whole period, the boxes of the other fits not
        rejected at ``level`` are joined (:mod:`dmdidc.output.intervals`); for a pair whose
        characteristic polynomial's region at ``level`` holds both real and complex pairs,
        the box of its roots there (:mod:`dmdidc.output.pairs`).

        A model read by :meth:`load` from a file without the parts' standard errors uses
        ``eigenvalue_se_`` (their root sum of squares) on both axes: wider, never narrower.
        """
        self._check_fitted()
        level = float(level)
        if not 0.0 < level < 1.0:
            raise ParameterError(f"level={level!r}; accepted: (0, 1)")
        parts = np.where(self.eigenvalues_.imag != 0, np.sqrt(level), level)
        z = stats.norm.isf((1.0 - parts) / 2.0)
        axes = self._axes_se()
        spread = z * (axes[:, 0] + 1j * axes[:, 1])
        low, high = joined_boxes(self.eigenvalues_ - spread, self.eigenvalues_ + spread,
                                 getattr(self, "_profiles", ()), level, z)
        low, high = pair_boxes(low, high, getattr(self, "_pairs", ()), level)
        return np.stack([low, high], axis=1)

    @property
    def _pairs(self) -> tuple[PairCoefficients, ...]:
        """The eigenvalue pairs near coalescence (:func:`~dmdidc.output.pairs.
        coalescing_pairs`), found at the first use by :meth:`eigenvalue_ci` or :meth:`save`
        (a fit does not need them); read back by :meth:`load`."""
        found = self.__dict__.get("_found_pairs")
        if found is None and self.__dict__.get("_pair_source") is not None:
            found = self._found_pairs = coalescing_pairs(*self._pair_source)
        return () if found is None else found

    @_pairs.setter
    def _pairs(self, pairs: tuple[PairCoefficients, ...] | None) -> None:
        self._found_pairs = pairs

    def _axes_se(self) -> np.ndarray:
        """Standard errors (n, 2) of the eigenvalues' real and imaginary parts (both
        ``eigenvalue_se_`` for a model loaded without them)."""
        axes = getattr(self, "_eigenvalue_axes_se", None)
        return np.stack([self.eigenvalue_se_] * 2, axis=1) if axes is None else axes

    def predict(self, U: Any, x0: Any = None) -> np.ndarray:
        """Outputs (l, K) of the identified plant for inputs ``U`` (m, K), from ``x0``."""
        self._check_fitted()
        U = check_finite_array("U", U, ndim=2)
        if U.shape[0] != self.B_c.shape[1]:
            raise DimensionError(f"U has {U.shape[0]} rows; the model has {self.B_c.shape[1]} "
                                 f"inputs")
        plant = self.plant().deviation_model()    # the model's own coordinates, as fitted
        x0 = np.zeros(self.order_) if x0 is None else check_finite_array("x0", x0, ndim=1)
        X = plant.simulate(x0, U)[:, :-1]
        return self.C @ X + self.D @ U + self.offset_[:, None]

    def plant(self):
        """The state part as a :class:`~dmdidc.DelayedPlant` (its states are this basis'), with
        :attr:`operating_point_` when the inputs sat at one."""
        from dmdidc.model import DelayedPlant
        self._check_fitted()
        return DelayedPlant.from_continuous(self.A_c, self.B_c, self.delay, self.dt,
                                            max_delay=max(self.max_delay, 1),
                                            operating_point=getattr(self, "operating_point_",
                                                                    None))

    def with_operating_point(self, state: Any = None, input: Any = None, *,
                             rtol: float = 1e-6) -> OutputDMDidc:
        """The same output model around another equilibrium: a setpoint for its controllers,
        which keep reading its ``C``, output level ``offset_`` and noise (output bounds,
        the default output weight), unlike :meth:`plant`'s
        :meth:`~dmdidc.DelayedPlant.with_operating_point` (a ``DelayedPlant`` without them).

        Parameters
        ----------
        state, input, rtol
            As :meth:`dmdidc.DelayedPlant.with_operating_point` (physical values; the state in
            this model's basis).

        Returns
        -------
        OutputDMDidc
            A copy with ``operating_point_`` the requested equilibrium (every other result
            shared with this one; a stream of :meth:`partial_fit` copied, so that chunks
            streamed into either do not enter the other).

        Examples
        --------
        >>> from dmdidc import DelayedPlant, random_excitation
        >>> plant = DelayedPlant.from_continuous([[-1.0, 2.0], [-2.0, -1.0]], [[1.0], [0.0]],
        ...                                      delay=0.7, dt=0.5)
        >>> U = random_excitation(1, 2000, rng=1)
        >>> est = OutputDMDidc(max_delay=3).fit([[0.0, 1.0]] @ plant.simulate([0.0, 0.0], U),
        ...                                     U, dt=0.5)
        >>> warmer = est.with_operating_point(input=[1.0])
        >>> warmer.operating_point_.input, warmer.C is est.C
        (array([1.]), True)
        """
        import copy

        target = self.plant().with_operating_point(state, input, rtol=rtol)
        moved = copy.copy(self)
        moved.operating_point_ = target.operating_point
        # a stream is updated in place: more chunks into the copy must not enter this one
        for name in ("_stream", "_reservoir"):
            if self.__dict__.get(name) is not None:
                setattr(moved, name, copy.deepcopy(self.__dict__[name]))
        return moved

    @property
    def model_(self):
        """:meth:`plant`, so that controllers accept the estimator as a model
        (:class:`~controllers.DelayedKalmanObserver` also reads ``C`` and ``noise_std_``)."""
        return self.plant()

    #: Identifies the JSON files :meth:`save` writes.
    FILE_FORMAT = "dmdidc-output-model"

    def save(self, path: str | Path, *, level: float = 0.95,
             signals: dict[str, list[str]] | None = None) -> Path:
        """Write the identified model as JSON: plant, delays with their intervals, eigenvalues
        with standard errors, order and how it was chosen, settings (:meth:`load` reads it).

        ``signals`` (optional) records the signals' names and units, read back as
        ``signals_``: keys ``outputs``, ``output_units`` (one per row of ``C``), ``inputs``,
        ``input_units`` (one per column of ``B_c``), each a list of str (``dmdidc identify
        --outputs`` passes the CSV header's).
        """
        self._check_fitted()
        intervals = self.delay_ci(level)
        sizes = {"outputs": self.C.shape[0], "output_units": self.C.shape[0],
                 "inputs": self.B_c.shape[1], "input_units": self.B_c.shape[1]}
        for key, names in (signals or {}).items():
            if key not in sizes or len(names) != sizes[key]:
                raise DimensionError(f"signals[{key!r}] has {len(names)} entries; expected "
                                     f"keys {sorted(sizes)} with {sizes.get(key, '?')} "
                                     f"entries (the model's outputs or inputs)")
        record = {
            "format": self.FILE_FORMAT, "format_version": 1, "dt": self.dt,
            "A_c": self.A_c.tolist(), "B_c": self.B_c.tolist(), "C": self.C.tolist(),
            "D": self.D.tolist(), "offset": self.offset_.tolist(),
            "operating_point": None if self.operating_point_ is None
            else self.operating_point_.to_dict(),
            "delay": self.delay.tolist(),
            "delay_interval": intervals.tolist(), "interval_level": level,
            "delay_se": [float(se) if np.isfinite(se) else None for se in self.delay_se_],
            "eigenvalues": [[v.real, v.imag] for v in self.eigenvalues_],
            "eigenvalue_se": self.eigenvalue_se_.tolist(),
            "eigenvalue_se_parts": self._axes_se().tolist(),
            # the delay profiles near whole periods (the intervals at any level, as fitted)
            "profiles": [None if profile is None else dataclasses.asdict(profile)
                         for profile in getattr(self, "_profiles", ())],
            "pairs": [dataclasses.asdict(pair) for pair in getattr(self, "_pairs", ())],
            "noise_std": self.noise_std_.tolist(), "order": self.order_,
            "input_scale": self.input_scale_.tolist(),
            "singular_values": self.singular_values_.tolist(), "noise_edge": self.noise_edge_,
            "horizon": self.horizon_,
            "order_rule": self.order_rule_, "basis": "canonical variates (only eigenvalues, "
            "delays and the transfer function are unique)",
            "settings": {"max_delay": self.max_delay, "order": self.order,
                         "horizon": self.horizon, "max_order": self.max_order,
                         "feedthrough": self.feedthrough, "offset": self.offset,
                         "detrend": self.detrend,
                         "significance": self.significance, "memory": self.memory},
            "signals": None if signals is None else {key: [str(name) for name in names]
                                                     for key, names in signals.items()},
        }
        if "experiment_levels_" in self.__dict__:    # (a model loaded from an older file: none)
            record["experiment_levels"] = self.experiment_levels_.tolist()
        if "checks_" in self.__dict__:           # (a model loaded from an older file: none)
            # what the fit's residuals showed: whether the model was trusted, read back
            record["checks"] = [{key: None if isinstance(value, float) and not np.isfinite(value)
                                 else value for key, value in dataclasses.asdict(check).items()}
                                for check in self.checks_]
            record["outlier_samples"] = [np.asarray(samples).tolist()
                                         for samples in self.outlier_samples_]
        path = Path(path)
        path.write_text(json.dumps(record, indent=1))
        return path

    @classmethod
    def load(cls, path: str | Path) -> OutputDMDidc:
        """A fitted estimator from a file of :meth:`save` (predict, plant, controllers work;
        the data-dependent intervals, ``checks_`` and ``outlier_samples_`` are read back as
        stored)."""
        from dmdidc.model import OperatingPoint

        record = json.loads(Path(path).read_text())
        if record.get("format") != cls.FILE_FORMAT:
            raise ParameterError(f"{str(path)!r} is not an OutputDMDidc model file (format "
                                 f"{record.get('format')!r}; expected {cls.FILE_FORMAT!r})")
        est = cls(**record["settings"])
        est.dt = float(record["dt"])
        est.A_c, est.B_c = np.array(record["A_c"]), np.array(record["B_c"])
        est.C, est.D = np.array(record["C"]), np.array(record["D"])
        est.offset_ = np.array(record["offset"])
        point = record.get("operating_point")       # absent in files of earlier versions
        est.operating_point_ = (None if point is None else
                                OperatingPoint(point["state"], point["input"]))
        est.A_d = linalg.expm(est.A_c * est.dt)
        est.delay = np.array(record["delay"])
        est.delay_steps, est.delay_fraction = split_delay(est.delay, est.dt)
        est.at_bound_ = _at_bound(est.delay, est.max_delay, est.dt)
        delay_se = np.array(record["delay_se"], dtype=float)        # None (NaN) read as NaN
        est.eigenvalues_ = np.array([complex(*v) for v in record["eigenvalues"]])
        est.eigenvalue_se_ = np.array(record["eigenvalue_se"])
        if "eigenvalue_se_parts" in record:
            est._eigenvalue_axes_se = np.array(record["eigenvalue_se_parts"]).reshape(-1, 2)
        est._profiles = tuple(None if profile is None else DelayProfile(
            delays=tuple(profile["delays"]), excess=tuple(profile["excess"]),
            se=tuple(profile["se"]),
            boxes=tuple(tuple(tuple(part) for part in box) for box in profile["boxes"]))
            for profile in record.get("profiles", ()))
        est.delay_se_ = _delay_se(delay_se, est._profiles)
        est._pairs = tuple(PairCoefficients(
            lower=pair["lower"], upper=pair["upper"], coefficients=tuple(pair["coefficients"]),
            covariance=tuple(tuple(row) for row in pair["covariance"]))
            for pair in record.get("pairs", ()))
        est.noise_std_ = np.array(record["noise_std"])
        if "experiment_levels" in record:        # (files written before 2026-11-28: none)
            est.experiment_levels_ = np.array(record["experiment_levels"], dtype=float)
        if "input_scale" in record:
            est.input_scale_ = np.array(record["input_scale"], dtype=float)
        else:                                # files written before 2026-11-27
            warnings.warn(f"{str(path)!r} records no input_scale (written before it was "
                          f"kept): DelayedKalmanObserver's default covariances then read the "
                          f"inputs in their given units; refit and save the model to record it",
                          UserWarning, stacklevel=2)
        est.order_, est.order_rule_ = int(record["order"]), record["order_rule"]
        est.singular_values_ = np.array(record["singular_values"])
        est.noise_edge_, est.horizon_ = float(record["noise_edge"]), int(record["horizon"])
        est.signals_ = record.get("signals")
        if "checks" in record:                   # (files written before 2026-11-27: none)
            est.checks_ = tuple(Check(**{key: np.nan if value is None and key in (
                "statistic", "threshold") else value for key, value in check.items()})
                for check in record["checks"])
            est.outlier_samples_ = tuple(np.array(samples, dtype=int)
                                         for samples in record["outlier_samples"])
        est._loaded_from = str(path)
        return est

    def plot_singular_values(self, ax=None):
        """Canonical correlations with the noise edge and the chosen order; returns the Figure."""
        from _toolbox.plotting import new_figure
        self._check_fitted()
        if ax is None:
            fig = new_figure((5, 3.2))
            ax = fig.add_subplot()
        else:
            fig = ax.figure
        k = np.arange(1, self.singular_values_.size + 1)
        ax.semilogy(k, np.maximum(self.singular_values_, 1e-16), "o-", label="canonical corr.")
        ax.axhline(self.noise_edge_, color="grey", ls="--", label="noise edge")
        ax.axvline(self.order_ + 0.5, color="C3", ls=":", label=f"order {self.order_}")
        ax.set_xlabel("index")
        ax.set_ylabel("correlation")
        ax.legend(frameon=False)
        fig.tight_layout()
        return fig
