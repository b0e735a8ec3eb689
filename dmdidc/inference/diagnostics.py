"""Why an identification may be wrong, with the numbers: the estimator's warnings.

Each check reads only the regression's own statistics (:class:`~dmdidc.regression.
RegressionSolution`) and the block test (:class:`~dmdidc.inference.blocks.BlockTest`) and names
the cause it has evidence for:

* **no effect within the bound**: a channel without any significant block.  Its delay may
  exceed ``max_delay`` (the usual reason when the input was designed to excite the plant), the
  samples may be too few for the noise, or the input does not act;
* **delay at the bound**: a channel whose first active block is the last one, ``B^(R)``.  Its
  delay is ``R T`` or longer, and the data cannot tell which without the lag ``R + 1``; if it is
  longer, the blocks it needs are missing and the identified delay (``R T``) and model are wrong.
  This is a warning rather than an error because a delay of exactly ``R T`` is consistent with
  the data and refusing it would reject correct fits; the warning says how to decide (refit with
  a larger ``max_delay``).  With ``R = 0`` there is no bound to reach: a residual correlation
  with past inputs confirmed by a refit with room for a delay fails the check instead
  (:func:`zero_bound_check`);
* **delay ambiguity**: a channel whose delay recovered with ``B^(w - 1)`` fitted (instead of
  zeroed by the block test) differs from the estimate by more than its 99 % half-width and
  0.1 T (:mod:`~dmdidc.inference.ambiguity`): a weak block decided the whole part of the delay,
  and the delay and its interval may be confidently wrong (3.05 T, 99 % interval [2.84, 3.27],
  for a true 2.6 T on a weakly excited channel);
* **offset**: residuals whose mean differs from zero by many standard errors: a sensor offset,
  an input bias or a non-zero operating point, which a linear model through the origin cannot
  represent (``detrend=`` removes it).  Not checked on privatized statistics, whose sums carry
  the privacy noise (center them when they are built instead);
* **privacy noise**: for privatized statistics, its share of the coefficients' variance is
  named among the causes of a channel without effect (first when it dominates);
* **no continuous model**: ``A_d`` has no real logarithm (the error says which eigenvalue and
  why); the relative residual shows whether noise is a plausible cause;
* **undetermined mode**: an eigenvalue of ``A_d`` that is not significantly away from zero
  against its standard error (first-order perturbation of the least-squares ``A_d``, Bonferroni
  over the ``n`` eigenvalues at the block test's level).  Its logarithm, a continuous mode
  ``log(lambda) / T``, is then not determined, nor are ``A_c``, ``B_c`` and the delay
  fraction.  When the interval stays below ``1/e`` it is a mode much faster than the sampling
  period (any faster mode fits the data as well), whose state follows a lagged input
  (``A_c = diag(-0.1, -30)`` at ``T = 1`` s gives -21 or -23 for the fast mode, depending on
  the rounding of the data); when it reaches further, the data do not confine the mode at all
  (noise, privacy noise, too few samples: 1.02 +/- 0.79 in a private federated fit), and the
  remedy is more information, not a faster sampling.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import special

from dmdidc.discretization import first_active_blocks
from dmdidc.inference.ambiguity import AMBIGUITY, delay_ambiguity
from dmdidc.inference.blocks import BlockTest, restricted_coefficients, restriction_projector
from dmdidc.inference.checks import Check, unexplained_blocks
from dmdidc.inference.experiment_levels import MISLED, experiment_level_check
from dmdidc.inference.offset import AFFINE_ROUNDING_LOUD
from dmdidc.model import DelayedPlant
from dmdidc.regression.instrumental import WEAK_INSTRUMENTS_F, first_stage_f, pretest_bias2
from dmdidc.regression.lag_products import autocorrelations
from dmdidc.regression.solution import EXACT_FIT, RegressionSolution
from dmdidc.trajectories import subsample

__all__ = ["ZERO_BOUND_REFIT", "beyond_bound", "eigenvalue_standard_errors", "fit_diagnostics",
           "identification_warnings", "logarithm_evidence", "model_checks",
           "restricted_solution", "zero_bound_check", "deferred_feedback"]

#: Fewer regression samples per regressor than this: name "too few samples" as a cause.
_FEW_SAMPLES_PER_REGRESSOR = 20


def beyond_bound(test: BlockTest, max_delay: int, relative_residual: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The channels whose delay may exceed ``max_delay`` (module notes), the one decision of
    the ``effect`` and ``delay_bound`` checks (and of :class:`~dmdidc.OnlineDMDidc`'s growth).

    Parameters
    ----------
    test : BlockTest
    max_delay : int
        ``R``.
    relative_residual : float
        Of the regression: an exact fit (below ``EXACT_FIT``) misses no block, so a first
        active block ``R`` is then the delay, not a cut.

    Returns
    -------
    silent : ndarray of int
        Channels without any significant block.
    at_bound : ndarray of int
        Channels whose first significant block is the last one, ``B^(R)`` (``R > 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=2.5, dt=1.0)
    >>> U = random_excitation(1, 400, rng=0)
    >>> X = plant.simulate([0.0], U) + 0.01 * np.random.default_rng(1).standard_normal(401)
    >>> est = DMDidc(max_delay=2).fit(X, U, dt=1.0)
    >>> silent, at_bound = beyond_bound(est.block_test_, 2, est.regression_.relative_residual)
    >>> silent.tolist(), at_bound.tolist()
    ([], [0])
    """
    first = first_active_blocks(test.active)
    silent = np.flatnonzero(first < 0)
    at_bound = np.flatnonzero(first == max_delay) if max_delay > 0 else np.zeros(0, dtype=int)
    if relative_residual <= EXACT_FIT:
        at_bound = at_bound[:0]
    return silent, at_bound


def _residual_text(solution: RegressionSolution) -> str:
    """What the regression's residual says about the fit, for the ``effect`` check's causes.

    Privatized statistics' residual is not the data's: the Gram's repair
    (:func:`~dmdidc.statistics.fit.nearest_psd`) removes the noise's negative directions,
    which can take the whole residual with them (2.6e-08 of the targets, 0 on another CPU,
    where the noise was all of the coefficients' variance), so it is not quoted (the privacy
    cause says so); a residual at rounding (:data:`~dmdidc.regression.solution.EXACT_FIT`)
    is said as such.  Empty, or a parenthesis with its leading space."""
    relative = solution.relative_residual
    if solution.noise_covariance is not None:
        return ""
    if relative <= EXACT_FIT:
        return " (the fit reproduces the targets to rounding)"
    return f" (the fit leaves {relative:.2g} of the targets unexplained)"


def model_checks(solution: RegressionSolution, test: BlockTest, model: DelayedPlant, *,
                 log_error: Exception | None = None,
                 restricted: RegressionSolution | None = None) -> list[Check]:
    """Checks of the identified model against the regression's own statistics (module notes).

    Parameters
    ----------
    solution : RegressionSolution
        The (unrestricted) regression.
    test : BlockTest
        The statistics of the test which input blocks act.
    model : DelayedPlant
        The identified model: its active blocks and whole delays are what the checks speak of
        (the same facts the controllers read).
    log_error : Exception, optional
        The :class:`~dmdidc.LogarithmError` of the continuous recovery, if any.
    restricted : RegressionSolution, optional
        The regression restricted to the model's blocks (:func:`restricted_solution`), whose
        covariance is that of the model's ``A_d`` (default: ``solution``).

    Returns
    -------
    list of Check
        ``effect``, ``delay_bound``, ``delay_ambiguity``, ``block_structure``,
        ``unexplained_block``, ``continuous_model`` and ``determined_modes``.
    """
    R = model.max_delay
    checks = []
    relative = solution.relative_residual
    fit = _residual_text(solution)
    first = first_active_blocks(test.active)
    silent, at_bound = beyond_bound(test, R, relative)
    question = "Does every input act within max_delay periods?"
    if silent.size:
        lag = int(np.argmax(test.statistics[:, silent].max(axis=1)))
        largest = float(test.statistics[:, silent].max())
        bound = (f"the delay exceeds max_delay={R} periods, so no input u_k .. u_(k-{R}) "
                 f"explains the states{fit}: refit with a larger max_delay")
        p = solution.coefficients.shape[1]
        causes = [bound]
        if solution.n_samples < _FEW_SAMPLES_PER_REGRESSOR * p:
            causes.append(f"too few samples for the noise: {solution.n_samples} regression "
                          f"samples for {p} regressors ({solution.dof} residual degrees of "
                          f"freedom); record longer or more experiments")
        if solution.noise_covariance is not None:
            share = _privacy_share(solution)
            privacy = (f"the privacy noise on the statistics: it makes {100 * share:.0f} % of "
                       f"the coefficients' variance (privatize more data at once, a smaller "
                       f"privacy unit or a larger epsilon; the residual of privatized "
                       f"statistics is set by this noise and the Gram's repair to positive "
                       f"semidefinite, so it says nothing of the fit)")
            causes.insert(0 if share > 0.5 else len(causes), privacy)
        causes.append(f"the input's effect is below the noise{fit}: lengthen the data or "
                      f"excite more strongly")
        causes.append("the input does not act on the states")
        listed = "; ".join(f"({chr(97 + i)}) {cause}" for i, cause in enumerate(causes))
        checks.append(Check(
            "effect", question, False, largest, test.critical_value,
            f"input channel(s) {silent.tolist()} show no significant effect within "
            f"max_delay={R} periods: no input block passes the test (largest T^2 = "
            f"{largest:.3g} at lag {lag}); their B_c column and delay are reported as 0",
            f"Possible causes: {listed}", fails_below=True))
    else:
        checks.append(Check("effect", question, True, finding="every input acts"))
    question = "Is every delay inside the bound max_delay?"
    if at_bound.size:
        checks.append(Check(
            "delay_bound", question, False, finding=(
                f"the delay of input channel(s) {at_bound.tolist()} may exceed max_delay={R} "
                f"periods: their first significant block is the last one, B^({R}) (T^2 = "
                f"{np.round(test.statistics[R, at_bound], 1).tolist()}), so the delay is at "
                f"least {R} periods and is identified as exactly {R}; if it is longer, the "
                f"blocks it needs are missing and the identified delay and model are wrong "
                f"({fit})"),
            remedy=f"refit with max_delay={R + 1} or more: if B^({R + 1}) is then inactive, "
                   f"the delay is {R} periods"))
    elif R == 0:    # no bound for a delay to reach: decided by zero_bound_check on the data
        checks.append(Check("delay_bound", question, None, finding=(
            "not checked: max_delay=0 leaves no block for a delay to show at (fit(X, U) "
            "looks for one hidden beyond it; statistics and partial_fit cannot)")))
    elif relative <= EXACT_FIT and np.any(first == R):
        # an exact fit misses no block (beyond_bound): a delay longer than R would have left
        # part of its effect in B^(R + 1), outside the model, and the fit inexact
        checks.append(Check("delay_bound", question, True, finding=(
            f"the first active block of input channel(s) {np.flatnonzero(first == R).tolist()}"
            f" is the last one, B^({R}), but the fit is exact ({fit}): no block beyond it is "
            f"missing, so their delay is {R} whole periods")))
    else:
        checks.append(Check("delay_bound", question, True,
                            finding="every first active block lies before the last one"))
    if model.has_continuous and model.n_inputs > 0:
        checks.append(_ambiguity_check(solution, test, model, restricted or solution))
    checks.append(_structure_check(test, first))
    if model.has_continuous:
        checks.append(unexplained_blocks(test, model))
    question = "Does A_d have a continuous-time model (a unique real logarithm)?"
    if log_error is not None:
        checks.append(Check("continuous_model", question, False,
                            finding=f"no continuous-time model ({fit}): {log_error}",
                            remedy="use the discrete model (A_d, the blocks and the whole "
                                   "delay are fitted), or see the causes above"))
    else:
        checks.append(Check("continuous_model", question, True,
                            finding="A_c = logm(A_d) / T exists"))
    if model.has_continuous:
        checks.append(_undetermined_modes(restricted or solution, model, test.significance))
    return checks


#: ``max_delay`` of the refit that looks for a delay hidden beyond ``max_delay = 0``: room for
#: a fractional delay up to 2 T to show its first block (a longer one fails ``effect``).
ZERO_BOUND_REFIT = 2


def zero_bound_check(effect: Check, correlation: Check, refit: BlockTest | None,
                     T: float) -> Check:
    """``delay_bound`` of a ``max_delay = 0`` fit: is a delay hidden beyond the bound?

    A failure names two causes the data cannot tell apart: a delay beyond the bound, or a
    state the data do not measure, through which the input reaches the measured states one
    period later (``y = C x`` with fewer signals than states passed as the states).

    With ``R = 0`` a delay cannot show "at the bound" (there is no later block), and the fit
    returns delay 0 with the delay's effect in its residuals.  The evidence takes two tests
    that must agree: a symptom in the fit (``input_correlation`` failed: the residuals
    correlate with a past input; or ``effect`` failed: an input shows no effect at lag 0),
    and a refit of the same data with ``max_delay = ZERO_BOUND_REFIT`` that finds a
    significant block ``B^(j)``, ``j >= 1`` (the block test: the cause).  Either alone raises
    false alarms: the refit's least squares, kept by the estimator's pretest, picks up an
    errors-in-variables bias in ``B^(1)`` on noisy undelayed plants (7 of 30 at 2 % noise, 300
    samples), which the residual correlation does not; together they flagged none of 120
    undelayed random plants and all of 120 delayed by 0.3-2 T (0-10 % noise).

    Parameters
    ----------
    effect, correlation : Check
        The ``max_delay = 0`` fit's ``effect`` and ``input_correlation`` checks.
    refit : BlockTest or None
        The refit's block test (``None``: no refit, because neither check failed or the
        refit was refused).
    T : float
        Sampling period (s).

    Returns
    -------
    Check

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=0.7, dt=1.0)
    >>> U = random_excitation(1, 600, rng=0)
    >>> X = plant.simulate([0.0], U) + 0.01 * np.random.default_rng(1).standard_normal(601)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")     # fit warns with this check's text
    ...     est = DMDidc(max_delay=0).fit(X, U, dt=1.0)
    >>> check = est.diagnostics_["delay_bound"]
    >>> check.failed, "raise max_delay" in check.remedy
    (True, True)
    """
    question = "Is every delay inside the bound max_delay?"
    symptoms = " and ".join(name for name, check in (
        ("the residuals correlate with past inputs (input_correlation)", correlation),
        ("an input shows no effect at lag 0 (effect)", effect)) if check.failed)
    if not symptoms:
        return Check("delay_bound", question, None if correlation.passed is None else True,
                     finding=f"max_delay=0: every input acts at lag 0 and the residuals show "
                             f"no correlation with past inputs ({correlation.finding}), so no "
                             f"delay hides beyond the bound")
    if refit is None:
        return Check("delay_bound", question, None, finding=(
            f"max_delay=0: {symptoms}, and the refit with max_delay={ZERO_BOUND_REFIT} that "
            f"would tell whether a delay is the cause was refused by the data"))
    later = refit.significant[1:]
    channels = np.flatnonzero(later.any(axis=0))
    if not channels.size:
        return Check("delay_bound", question, True, finding=(
            f"max_delay=0: {symptoms}, but a refit with max_delay={ZERO_BOUND_REFIT} finds no "
            f"significant block after B^(0): not a delay"))
    statistics = np.where(later, refit.statistics[1:], 0.0)
    j, i = np.unravel_index(int(np.argmax(statistics)), statistics.shape)
    largest = float(statistics[j, i])
    # an input acting through a state the data do not measure also reaches the measured ones
    # a period later: the data cannot tell it from a delay (the "partial" data kind of
    # undelayed plants failed 8 of 8, and state_completeness fails on delayed plants too)
    return Check(
        "delay_bound", question, False, largest, refit.critical_value, finding=(
            f"input channel(s) {channels.tolist()} act later than max_delay=0 allows: "
            f"{symptoms}, and a refit with max_delay={ZERO_BOUND_REFIT} finds input {i} "
            f"acting through B^({j + 1}) (T^2 = {largest:.3g} > {refit.critical_value:.3g}). "
            f"Either the delay exceeds max_delay=0 (more than {j} periods, {j * T:g} s), or "
            f"a state the data do not measure (a signal missing from X) carries the input "
            f"to the measured ones a period later; the data cannot tell the two apart. "
            f"Either way this model's delay 0 and its A_d, B_d are wrong"),
        # the deepest significant block B^(d) needs its successor in the model: R >= d + 1
        remedy=f"raise max_delay to at least {int(np.flatnonzero(later.any(axis=1)).max()) + 2}"
               f" (or max_delay=None to choose it from the data); if the "
               f"plant has no delay, measure every state, or identify from the measured "
               f"outputs with OutputDMDidc")


def deferred_feedback(feedback: Check) -> Check:
    """A failed ``feedback`` check of a ``max_delay = 0`` fit whose ``delay_bound`` failed too,
    its finding and remedy pointing at the delay first; statistic and verdict unchanged.

    An input acting beyond the bound stays in the residuals, and they then correlate with
    later inputs as well: on open-loop data of a plant delayed by 1.25 T (2 % noise, 300
    samples) ``feedback`` failed at ``max_delay = 0`` in 5 of 8 seeds, beside a failed
    ``delay_bound`` in all 8, while the closed loop it names was not there.

    Parameters
    ----------
    feedback : Check
        The fit's failed ``feedback`` check.

    Returns
    -------
    Check
    """
    return dataclasses.replace(
        feedback,
        finding=f"{feedback.finding}; but check 'delay_bound' failed in the same fit: an "
                f"input acting later than max_delay=0 allows also leaves this correlation, "
                f"the likelier cause unless a controller computed the inputs",
        remedy=f"first raise max_delay as delay_bound says and refit; if this check still "
               f"fails: {feedback.remedy}")


def identification_warnings(solution: RegressionSolution, test: BlockTest, model: DelayedPlant,
                            *, detrended: bool = False,
                            log_error: Exception | None = None) -> list[str]:
    """The messages of the failed :func:`model_checks` (the warnings of dmdidc before the
    checks were values; ``detrended`` is accepted for compatibility and has no effect: the
    offset is a check of :func:`fit_diagnostics`)."""
    del detrended
    return [check.message() for check in model_checks(solution, test, model,
                                                      log_error=log_error) if check.failed]


def _ambiguity_check(solution: RegressionSolution, test: BlockTest, model: DelayedPlant,
                     restricted: RegressionSolution) -> Check:
    """``delay_ambiguity``: did zeroing a weak ``B^(w - 1)`` decide the whole delay?
    (:mod:`dmdidc.inference.ambiguity`, the rule of ``OnlineDMDidc.delay_status_``)."""
    question = "Does each delay hold with the block before the first active one fitted too?"
    T = model.dt
    found = delay_ambiguity(model.A_c, solution, test.active, model.delay, T,
                            lambda: delay_standard_errors(model, restricted))
    channels = np.flatnonzero(found.ambiguous)
    if not channels.size:
        return Check("delay_ambiguity", question, True,
                     finding=f"every delay within max(99 % half-width, {AMBIGUITY:g} T) of its "
                             f"recovery with B^(w-1) fitted")
    first = first_active_blocks(test.active)
    pairs = "; ".join(
        f"channel {i}: {found.estimate[i] / T:.3g} T with B^({first[i] - 1}) insignificant "
        f"and set to zero, but {found.below[i] / T:.3g} T with it fitted (they may differ by "
        f"{found.tolerance[i] / T:.2g} T)" for i in channels)
    return Check(
        "delay_ambiguity", question, False,
        float(np.max(np.abs(found.below - found.estimate)[channels] / found.tolerance[channels])),
        1.0,
        f"the whole part of the delay of input channel(s) {channels.tolist()} was decided by the "
        f"block test zeroing a weak block: {pairs}; the delay and its interval (conditional on "
        f"that decision) may be confidently wrong",
        "excite the channel(s) more strongly or record longer data, so that the block test "
        "decides B^(w-1); if the delay may be longer than max_delay allows for, widen max_delay; "
        "until then, do not rely on the delay of these channels")


def _structure_check(test: BlockTest, first: np.ndarray) -> Check:
    """Significant blocks after ``w + 1``: more than one fractional delay per channel."""
    question = "Do the inputs act through the blocks w and w + 1 only (one delay per channel)?"
    R1, m = test.active.shape
    later = np.zeros_like(test.active)
    for i in range(m):
        if first[i] >= 0:
            later[first[i] + 2:, i] = True
    if not later.any():
        return Check("block_structure", question, True, finding="no block after w + 1")
    statistics = np.where(later, test.statistics, 0.0)
    j, i = np.unravel_index(int(np.argmax(statistics)), statistics.shape)
    largest = float(statistics[j, i])
    if largest <= test.critical_value:
        return Check("block_structure", question, True, largest, test.critical_value,
                     "no significant block after w + 1")
    return Check(
        "block_structure", question, False, largest, test.critical_value,
        f"input {i} acts through block B^({j}), {j - first[i]} periods after its first active "
        f"block B^({first[i]}) (T^2 = {largest:.3g}); the model keeps only w and w + 1",
        "the plant is not one (fractional) delay per input channel: a distributed delay, "
        "several paths, inputs sampled rather than held over each period (a smooth input read "
        "at each tick: the plant received what lies between the samples, and the delay reads "
        "up to half a period short), or states missing from the data (measure every state, "
        "or identify an output model from the measured signals: OutputDMDidc, dmdidc "
        "identify --outputs)")


def eigenvalue_standard_errors(solution: RegressionSolution, A_d: np.ndarray
                               ) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of ``A_d`` and their standard errors from the regression's covariance.

    First-order perturbation: ``d lambda = y^H dA x / (y^H x)`` with ``Cov(dA[a, b], dA[c, d])
    = Sigma[a, c] C[b, d]`` (least squares, :class:`~dmdidc.regression.RegressionSolution`;
    ``Sigma`` the residual covariance, at least rounding), so ``E |d lambda|^2 = (y^H Sigma y)
    (x^H C x) / |y^H x|^2``, plus the privacy noise's covariance for privatized statistics
    (:meth:`~dmdidc.regression.RegressionSolution.covariance`).  Matches Monte Carlo under
    process noise; conservative for slow modes under measurement noise (errors in variables).

    Parameters
    ----------
    solution : RegressionSolution
    A_d : ndarray, shape (n, n)

    Returns
    -------
    eigenvalues : ndarray, shape (n,)
    standard_errors : ndarray, shape (n,)
    """
    n = A_d.shape[0]
    rounding = np.finfo(float).eps * solution.target_rms
    cov = solution.factored_covariance().plus(np.diag(rounding ** 2),
                                              solution.unscaled_covariance)
    eigenvalues, right = np.linalg.eig(A_d)
    left = np.linalg.inv(right)             # rows y^H with y^H x = 1
    # the gradient of lambda_i is the rank-one y_i^H x_i^T: never the (n^2)^2 covariance
    errors = np.sqrt(cov.rank_one_variances(left, right.T, np.arange(n)))
    return eigenvalues, errors


#: An undetermined eigenvalue whose bound ``z * se`` on its modulus stays below this (``1/e``:
#: the mode decays by more than ``e`` per period whatever it is) is a fast mode; above it the
#: data do not confine the mode at all (noise, privacy noise, too few samples).
_FAST_MODULUS = float(np.exp(-1.0))


def _undetermined_modes(solution: RegressionSolution, model: DelayedPlant,
                        significance: float) -> Check:
    question = "Is every eigenvalue of A_d significantly away from zero?"
    eigenvalues, errors = eigenvalue_standard_errors(solution, model.A_d)
    z = float(special.ndtri(1.0 - significance / (2 * eigenvalues.size)))
    weak = np.flatnonzero(np.abs(eigenvalues) <= z * errors)
    if not weak.size:
        return Check("determined_modes", question, True, finding="every mode is determined")
    found = ", ".join(f"{_number(eigenvalues[i])} (standard error {errors[i]:.2g})"
                      for i in weak)
    modes = ", ".join(f"{np.log(complex(eigenvalues[i])).real / model.dt:.4g}" for i in weak)
    # a fast mode: the data confine the eigenvalue near zero (|lambda| <= z se < 1/e), and
    # any faster mode fits as well; a loose one: the interval reaches moduli of slow modes
    fast = z * errors[weak] < _FAST_MODULUS
    causes, remedies = [], []
    if fast.any():
        causes.append(f"a mode much faster than the sampling period T = {model.dt:g} s (its "
                      f"eigenvalue within {z:.2g} standard errors of zero stays below "
                      f"{_FAST_MODULUS:.2g}, so any faster mode fits the data as well)")
        remedies.append("for a fast mode: sample faster, or rely on the discrete model (A_d, "
                        "the blocks and the whole delay are fitted)")
    if not fast.all():
        loose = weak[~fast]
        causes.append(f"too little information: eigenvalue(s) "
                      f"{', '.join(_number(eigenvalues[i]) for i in loose)} could lie anywhere "
                      f"within +/- {float(np.max(z * errors[loose])):.2g} of themselves, slow "
                      f"modes included (noise, too few samples"
                      + (", the privacy noise" if solution.noise_covariance is not None else "")
                      + ")")
        remedies.append("for an undetermined slow mode: record more samples, reduce the noise "
                        "or excite more strongly"
                        + (", or privatize with a larger epsilon (or more data at once)"
                           if solution.noise_covariance is not None else ""))
    return Check(
        "determined_modes", question, False, finding=(
            f"A_d has eigenvalue(s) {found} within {z:.2g} standard errors of zero (level "
            f"{significance:g}): the continuous mode(s) log(lambda) / T = {modes} 1/s are not "
            f"determined by the data, and with them A_c, B_c and the delay fraction; cause: "
            + "; ".join(causes)),
        remedy="; ".join(remedies))


def _number(value: complex) -> str:
    return f"{value.real:.3g}" if value.imag == 0 else f"{complex(value):.3g}"


def _privacy_share(solution: RegressionSolution) -> float:
    """Fraction of the coefficients' total variance that the privacy noise contributes."""
    sampling = float(np.trace(solution.residual_covariance)
                     * np.trace(solution.unscaled_covariance))
    noise = float(np.trace(solution.noise_covariance))
    return noise / (noise + sampling) if noise + sampling > 0 else 0.0


#: Least squares leaving this fraction of the targets unexplained: noise may bias A_d.
_NOISY_FIT = 0.05
#: An eigenvalue within this many standard errors of the negative real axis or of zero: the
#: data cannot decide on which side it lies.
_NOISE_STANDARD_ERRORS = 3.0
#: The solutions' estimators that are consistent under noisy states (instrumental variables).
_CONSISTENT = ("iv", "huber_iv")


def logarithm_evidence(solution: RegressionSolution, A_d: np.ndarray) -> str | None:
    """Whether noise explains an ``A_d`` without real logarithm, with the numbers.

    For each real eigenvalue ``lambda <= 0`` of ``A_d`` its standard error follows from the
    covariance of ``A_d`` (first-order perturbation, ``d lambda = l^T dA r / (l^T r)`` with the
    left and right eigenvectors).  An eigenvalue within ``3`` standard errors of zero is
    undetermined in sign by the data: noise (on the states, or privacy noise) is then the
    likely cause, not the plant.

    Without such an eigenvalue, a least-squares fit that leaves more than 5 % of the targets
    unexplained still names noise (the errors-in-variables bias is not in the standard errors).

    Returns
    -------
    str or None
        A sentence naming the evidence (``None`` when there is none).
    """
    eigenvalues, errors = eigenvalue_standard_errors(solution, A_d)
    findings = []
    for lam, se in zip(eigenvalues, errors, strict=True):
        if abs(lam.imag) > 1e-9 * max(abs(lam), 1e-300) or lam.real > 0:
            continue
        if se > 0 and abs(lam.real) <= _NOISE_STANDARD_ERRORS * se:
            findings.append(f"{lam.real:.3g} +/- {se:.2g} (standard error; "
                            f"{abs(lam.real) / se:.2g} standard errors from zero)")
    if not findings:
        if solution.estimator == "ls" and solution.relative_residual > _NOISY_FIT:
            return (f"noise may be the cause: the fit leaves {solution.relative_residual:.2g} of "
                    f"the targets unexplained, and least squares on noisy states biases A_d "
                    f"(errors in variables) at any data length; estimator='iv' is consistent")
        return None
    # an instrumental fit is the consistent estimator already: no use naming it again
    consistent = ("" if solution.estimator in _CONSISTENT
                  else "use a consistent estimator such as estimator='iv', ")
    return (f"noise is the likely cause: the eigenvalue(s) {'; '.join(findings)} of A_d are "
            f"within {_NOISE_STANDARD_ERRORS:g} standard errors of zero, so the data do not "
            f"determine their sign (lengthen the data, reduce the noise, {consistent}or "
            f"sample more slowly if the mode is fast)")


#: A delay known only to more than this (95 % half-width, in periods), or an eigenvalue of
#: A_c to more than this relative half-width, is reported as not determined by the data.
DELAY_PRECISION = 0.1
EIGENVALUE_PRECISION = 0.2
#: Lowest relative eigenvalue of an input's lag covariance that still counts as excited.
_EXCITED = 1e-4


def restricted_solution(solution: RegressionSolution, kept: np.ndarray) -> RegressionSolution:
    """The regression with the blocks a model drops constrained to zero, and its covariance
    ``(I kron P^T) Cov (I kron P)`` (:func:`dmdidc.blocks.restriction_projector`, factored): the
    uncertainty of the model's own ``A_d``, smaller than the unrestricted one's."""
    n = solution.coefficients.shape[0]
    P = restriction_projector(solution, n, kept)
    coefficients = restricted_coefficients(solution, n, kept, projector=P)
    return dataclasses.replace(solution, coefficients=coefficients,
                               sampling_covariance=solution.factored_covariance().project(P),
                               noise_covariance=None)


def fit_diagnostics(outcome, test: BlockTest, model: DelayedPlant, *,
                    trajectories: list | None, log_error: Exception | None,
                    level: float, share: float, kept: np.ndarray | None = None,
                    raw: list | None = None, trend: str | None = None):
    """Every check of one fit (:class:`~dmdidc.inference.checks.FitDiagnostics`).

    Parameters
    ----------
    outcome : dmdidc.fitting.FitOutcome
    test : BlockTest
    model : DelayedPlant
        The identified model (with its operating point, if any).
    trajectories : list of (X, U) or None
        The data as the regression saw them (after any per-trajectory detrend and POD
        projection): the residual checks; ``None`` for statistics and ``partial_fit``, which
        keep no samples (the checks that need them are then left out).
    log_error : Exception or None
    level : float
        Family-wise level of the statistical checks.
    share : float
        Level of each statistical check (``level / STATISTICAL_CHECKS``).
    kept : ndarray or None
        The kept blocks (default: the block test's active ones).
    raw : list of (X, U) or None
        The same data as given (before detrend and POD projection; default
        ``trajectories``): ``frozen_signal`` reads them, since a removed line turns a
        repeated value into a ramp and the POD rotation spreads a stuck sensor over every
        mode.
    trend : {None, "constant", "linear"}
        The trend the fit removed from each trajectory (``detrend``): it centres each
        trajectory's residuals, for which the whiteness test is corrected.

    Returns
    -------
    FitDiagnostics
    """
    from dmdidc.inference.checks import FitDiagnostics
    from dmdidc.inference.frozen import frozen_signal_check
    from dmdidc.inference.linearity import linearity_check  # with residuals: at the first fit
    from dmdidc.inference.residuals import (
        model_residuals,
        moment_checks,
        residual_analysis,
        residual_checks,
    )
    from dmdidc.inference.time_invariance import QUESTION as TIME_QUESTION
    from dmdidc.inference.time_invariance import time_invariance_check

    solution = outcome.solution
    restricted = restricted_solution(solution, kept if kept is not None else test.active)
    checks = model_checks(solution, test, model, log_error=log_error, restricted=restricted)
    notes = list(outcome.notes)
    if outcome.offset is not None:
        check = outcome.offset.check()
        if outcome.offset.significant and not outcome.centred:
            check = Check(check.name, check.question, False, check.statistic, check.threshold,
                          check.finding.split(":")[0] + " but the fit goes through the origin",
                          "fit with detrend='auto' (the default) or detrend='constant'")
        elif outcome.centred:
            check = _rounded_offset(check, outcome.rounding)
        checks.append(check)
    else:
        checks.append(Check("offset", "Do the data have an offset?", None,
                            finding=outcome.offset_note or "not tested (detrended data, or "
                                    "too few samples for an intercept)"))
    analysis = None
    signals = outcome.instrument_signals
    # fits without instrument signals whose coefficients are least squares' or near them: the
    # moment tests with the regressors as their own instruments (the prewhitened correlations
    # with the states are not zero under process noise, which drives the later states)
    regressors = signals is None and solution.estimator in ("ls", "huber")
    # IV with fixed instruments keeps no signals: the checks build them from the data
    fixed = (signals is None and solution.estimator == "iv"
             and outcome.instruments in ("inputs", "states") and outcome.statistics is not None)
    frozen = levels = None
    if trajectories is not None:
        frozen = frozen_signal_check(trajectories if raw is None else raw,   # every sample
                                     model.max_delay)
        whole_data = trajectories           # the experiments' means: every sample of each
        trajectories, signals, _, whole = subsample(trajectories, signals,
                                                    max_delay=model.max_delay)
        deviation = model.deviation_model()
        op = model.operating_point
        c = None if op is None else ((np.eye(model.n_states) - model.A_d) @ op.state
                                     - model.B_d @ op.input)
        parts = model_residuals(trajectories, deviation.A_d, deviation.B_blocks, c)
        levels = experiment_level_check(
            whole_data, deviation.A_d, deviation.B_blocks, c, share, trend=trend,
            state_covariance=restricted.unscaled_covariance[:model.n_states, :model.n_states],
            parts=parts if trajectories is whole_data else None)    # nothing cut: the same
        # the whole trajectories' residuals are centred each by a trend (the cuts of a long one
        # only by a negligible share of it); model_residuals leaves out those without a sample
        trends = None if trend is None else [
            trend if w else None
            for (_, U), w in zip(trajectories, whole, strict=True) if U.shape[1] > model.max_delay]
        # the correlations with the same transforms of the residuals as their whiteness,
        # unless the moment tests replace them (instrumented fits: then only if plotted)
        analysis = residual_analysis(parts, model.max_delay,
                                     correlations=signals is None and not regressors
                                     and not fixed,
                                     trends=trends)
    exact = analysis is not None and analysis.relative_residual < EXACT_FIT
    moments = trajectories is not None and (signals is not None
                                            or (regressors or fixed) and not exact)
    residual = residual_checks(analysis, share,
                               robust=solution.estimator in ("huber", "huber_iv"),
                               reference=outcome.reference, correlations=not moments)
    if moments:
        # least squares' coefficients when Hausman's pretest kept them: valid, the corrected
        # moments do not depend on the coefficients (moment_checks); Huber's likewise with
        # least squares' projection (only the covariance's residuals are Huber's)
        replaced = {c.name: c for c in moment_checks(
            trajectories, signals, solution.coefficients,
            max_delay=model.max_delay, centred=outcome.centred, level=share,
            reference=outcome.reference,
            kind="regressors" if regressors else outcome.instruments if fixed
            else outcome.instrument_kind or "exogenous",
            instrument_moments=outcome.check_moments,
            instrument_lags=outcome.statistics.instrument_lags if fixed else 0)}
        residual = [replaced.get(c.name, c) for c in residual]
    coloured = any(c.name == "whiteness" and c.failed for c in residual)
    checks += [_inconclusive(c) if coloured and c.name == "state_completeness" and c.failed
               else c for c in residual]
    checks.append(_instrument_check(solution))
    checks.append(_ls_versus_iv(outcome, share))
    # least squares kept by the pretest: judged on its estimated mean-squared error against
    # IV, as its confidence_intervals() are (transient-dominated data: weak instruments kept
    # a biased least squares, its modes off by 44-190 %, quiet at +/- 19 %)
    alternative = (restricted_solution(outcome.twin, kept if kept is not None else test.active)
                   if outcome.pretest and outcome.twin is not None else None)
    checks.append(_precision_check(model, restricted, alternative))
    if trajectories is not None:
        # under coloured residuals the features' whitening may leave a slow part whose sum
        # the lag-0 variance understates: inconclusive then, as state_completeness (a review
        # found 4 of 40 such fits blaming a saturating actuator)
        linearity = linearity_check(parts, deviation, share)
        checks.append(_inconclusive(linearity) if coloured and linearity.failed else linearity)
        if analysis is not None and analysis.relative_residual < EXACT_FIT:
            # rounding is no change of the plant: its batch means gave 7-15 standard errors on
            # noise-free data of slow modes and integrators
            checks.append(Check("time_invariance", TIME_QUESTION, True,
                                finding=f"the model reproduces the data to rounding (relative "
                                        f"residual {analysis.relative_residual:.2g})"))
        else:
            checks.append(time_invariance_check(parts, model.max_delay, share))
        checks.append(frozen)
        checks.append(_excitation_check(trajectories, model,
                                        next(c for c in checks if c.name == "precision")))
    if levels is not None:
        if exact:       # rounding is no offset (2 of 200 exact multi-experiment fits failed)
            levels = Check("experiment_levels", levels.question, True, finding=(
                f"the model reproduces the data to rounding (relative residual "
                f"{analysis.relative_residual:.2g})"))
        # an offset that moved between experiments fails many checks whose remedies mislead
        # (a user trial: block_structure, whiteness, instrument_strength named for it)
        if levels.failed:
            checks = [_inconclusive(c, "while the experiments sit at different levels (see "
                                       "'experiment_levels'; refit with detrend='constant')")
                      if c.failed and c.name in MISLED else c for c in checks]
        checks.append(levels)
    if outcome.offset is not None and outcome.offset.significant and outcome.centred:
        notes.append(f"offset found and removed: operating point {model.operating_point}")
    return FitDiagnostics(tuple(checks), outcome.estimator, outcome.instruments, level,
                          tuple(notes), analysis)


def _rounded_offset(check: Check, rounding: float) -> Check:
    """The offset check of an affine fit solved from centred moments without a pass over the
    samples to refine it: failed when their rounding may move a coefficient by
    :data:`~dmdidc.inference.offset.AFFINE_ROUNDING_LOUD` of its standard error (nearly
    exact data around a large operating point).  Singular moments (a rank-truncated fit,
    ``regression_rank``, or inputs that never move) have no derivative to measure that with
    (:func:`~dmdidc.fitting.affine_rounding` is ``inf``): the rounding is then not tested,
    and the check says so instead of "inf standard errors off"."""
    if not np.isfinite(rounding):
        return Check(check.name, check.question, None, check.statistic, check.threshold,
                     f"{check.finding.split(':')[0]}; how far centring the moments moved the "
                     f"coefficients is not tested: the moments are singular (a rank-truncated "
                     f"fit, regression_rank, or a regressor that never varies), so their "
                     f"rounding has no derivative to measure it with")
    if not rounding > AFFINE_ROUNDING_LOUD:
        return check
    return Check(check.name, check.question, False, rounding, AFFINE_ROUNDING_LOUD,
                 f"{check.finding.split(':')[0]}, and centring the moments lost digits to it: "
                 f"the coefficients may be {rounding:.3g} standard errors off (rounding of "
                 f"the uncentred moments; statistics and partial_fit have no samples to "
                 f"refine it)",
                 "fit the trajectories with fit(X, U, dt=...) (which refines the affine fit "
                 "on the samples, detrend='auto'), or subtract a known operating point (set "
                 "point) from the data before accumulating them")


def _inconclusive(check: Check, reason: str = "under coloured noise (see 'whiteness')"
                  ) -> Check:
    """A failure the test cannot stand by, ``reason`` said: by default a state-completeness or
    linearity failure under coloured noise (state completeness: its lagged regressor is nearly
    collinear with the present one, so the coloured noise's bias leaks in; linearity: its
    variance assumes white features); statistic, threshold and direction kept."""
    return Check(check.name, check.question, None, check.statistic, check.threshold,
                 f"inconclusive {reason}: {check.finding}", fails_below=check.fails_below)


def _instrument_check(solution: RegressionSolution) -> Check:
    question = f"Are the instruments strong (first-stage F above {WEAK_INSTRUMENTS_F:g})?"
    if solution.estimator not in ("iv", "huber_iv") or solution.instrument_strength is None:
        return Check("instrument_strength", question, None, finding="not an IV fit")
    F = first_stage_f(solution)
    rho = solution.instrument_strength
    if F >= WEAK_INSTRUMENTS_F:
        return Check("instrument_strength", question, True, F, WEAK_INSTRUMENTS_F,
                     f"first-stage F {F:.3g} (smallest canonical correlation {rho:.3g})",
                     fails_below=True)
    return Check("instrument_strength", question, False, F, WEAK_INSTRUMENTS_F,
                 f"weak instruments: smallest canonical correlation {rho:.3g} between regressors "
                 f"and instruments (first-stage F {F:.3g} < {WEAK_INSTRUMENTS_F:g}); instrumental "
                 f"variables then converge slowly and their standard errors are unreliable",
                 "excite more strongly or longer; with closed-loop data a larger reference or "
                 "dither; or estimator='ls' if the states are measured without noise",
                 fails_below=True)


def _ls_versus_iv(outcome, share: float) -> Check:
    """Least squares against instrumental variables on the same moments."""
    question = "Does least squares agree with instrumental variables (no errors in variables)?"
    iv, ls = outcome.solution, outcome.twin
    if outcome.estimator == "ls":
        iv, ls = outcome.twin, outcome.solution
    if iv is None or ls is None or iv.estimator not in ("iv", "huber_iv"):
        return Check("ls_vs_iv", question, None, finding="no pair of fits to compare")
    difference = iv.coefficients - ls.coefficients
    variance = iv.standard_errors ** 2
    z = np.abs(difference) / np.sqrt(np.where(variance > 0, variance, np.inf))
    largest = float(np.max(z))
    critical = float(special.ndtri(1.0 - share / (2.0 * z.size)))
    disagree = largest > critical
    finding = (f"least squares differs from IV by up to {largest:.3g} IV standard errors"
               + (f" (more than {critical:.3g}): noisy states bias least squares (errors in "
                  f"variables)" if disagree else f" (at most {critical:.3g})"))
    if outcome.estimator == "ls" and disagree:
        return Check("ls_vs_iv", question, False, largest, critical, finding,
                     "use estimator='auto' (the default) or estimator='iv', which stays "
                     "consistent when the states are measured with noise")
    # above its threshold, but passed: the consistent fit was kept, which is what it asks for
    return Check("ls_vs_iv", question, True, largest, critical,
                 ("IV kept: " if disagree else "") + finding
                 + ("; the IV fit is the model, so the difference does no harm" if disagree
                    else ""))


def delay_standard_errors(model: DelayedPlant, restricted: RegressionSolution) -> np.ndarray:
    """Standard error of each channel's delay (s) from its two blocks, to first order
    (:func:`delay_gradients`); ``nan`` for a channel without effect or whose second block lies
    beyond the bound."""
    cov = restricted.factored_covariance()
    out = np.full(model.n_inputs, np.nan)
    for i, gradient, index in delay_gradients(model, restricted):
        out[i] = float(np.sqrt(max(gradient @ cov.submatrix(index) @ gradient, 0.0)))
    return out


def delay_gradients(model: DelayedPlant, restricted: RegressionSolution
                    ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Each determined channel's delay gradient: ``(channel, gradient, index)`` with ``d delay
    = gradient @ d vec(Theta)[index]`` (``vec`` row by row, the covariance's order).

    With ``b = Gamma(T)^-1 (b0 + b1)`` and the hold ``s = (1 - p) T`` solving
    ``Gamma(s) b = b0`` (dissertation eqs. 9.68-9.69) in the least-squares sense, the implicit
    function theorem gives ``d delay = -d s = f^T W (J0 d b0 + J1 d b1) / f^T W f`` with
    ``f = e^{A_c s} b``, ``J1 = Gamma(s) Gamma(T)^-1``, ``J0 = J1 - I`` and ``W`` the fit's
    per-state weights (:func:`~dmdidc.inference.recovery.solution_weights`: the same in any
    units of the states); the covariance of the two block columns is the restricted
    regression's.  ``A_c`` is held fixed (its share is second order for the delay).  A channel
    without effect or whose second block lies beyond the bound has none.
    """
    from dmdidc.inference.recovery import _hold_integrals, solution_weights

    n, m, R = model.n_states, model.n_inputs, model.max_delay
    p = restricted.coefficients.shape[1]
    A_c, B_c, delay = model.require_continuous("delay standard errors")
    T = model.dt
    hold_integrals = _hold_integrals(A_c)       # the recovery's (one eigendecomposition)
    _, gamma_T = hold_integrals.matrices(T)
    out = []
    weights = solution_weights(restricted)
    for i, w in enumerate(model.delay_steps):
        if not model.active_blocks[:, i].any() or w + 1 > R:
            continue
        hold = T - (delay[i] - w * T)
        Phi_s, gamma_s = hold_integrals.matrices(hold)
        f = Phi_s @ B_c[:, i]
        J1 = np.linalg.solve(gamma_T.T, gamma_s.T).T
        gradient = ((weights * f) @ np.concatenate([J1 - np.eye(n), J1], axis=1)
                    / max(f @ (weights * f), np.finfo(float).tiny))
        index = np.concatenate([np.arange(n) * p + n + w * m + i,
                                np.arange(n) * p + n + (w + 1) * m + i])
        out.append((i, gradient, index))
    return out


def _pretest_errors(model: DelayedPlant, solution: RegressionSolution,
                    alternative: RegressionSolution | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(delay standard errors, eigenvalues of A_d, their standard errors)`` of ``solution``;
    with ``alternative`` (IV, when a pretest kept least squares) each root mean-squared error
    ``sqrt(se^2 + bias^2)`` with the bias estimated from the IV-minus-LS difference
    (:func:`~dmdidc.regression.instrumental.pretest_bias2`, as
    :func:`~dmdidc.inference.intervals.with_pretest_bias` widens the intervals), both
    linearized at least squares' model."""
    delays = delay_standard_errors(model, solution)
    eigenvalues, errors = eigenvalue_standard_errors(solution, model.A_d)
    if alternative is None:
        return delays, eigenvalues, errors
    n = model.n_states
    change = alternative.coefficients - solution.coefficients
    iv_delays = delay_standard_errors(model, alternative)
    for i, gradient, index in delay_gradients(model, solution):
        bias2 = pretest_bias2(delays[i] ** 2, iv_delays[i] ** 2,
                              gradient @ change.ravel()[index])
        delays[i] = np.sqrt(delays[i] ** 2 + bias2)
    _, iv_errors = eigenvalue_standard_errors(alternative, model.A_d)
    values, right = np.linalg.eig(model.A_d)
    moved = np.einsum("ia,ab,bi->i", np.linalg.inv(right), change[:, :n], right)   # y^H dA x
    errors = np.sqrt(errors ** 2 + pretest_bias2(errors ** 2, iv_errors ** 2, moved))
    return delays, eigenvalues, errors


def _precision_check(model: DelayedPlant, solution: RegressionSolution | None,
                     alternative: RegressionSolution | None = None) -> Check:
    question = (f"Do the data determine the delays (95 % to {DELAY_PRECISION:g} T) and the "
                f"modes (to {100 * EIGENVALUE_PRECISION:g} %)?")
    if not model.has_continuous:
        return Check("precision", question, None, finding="no continuous model")
    if solution is None:
        return Check("precision", question, None,
                     finding="not computed: no restricted regression")
    T = model.dt
    delay_errors, eigenvalues, errors = _pretest_errors(model, solution, alternative)
    half = 1.96 * delay_errors / T
    finite = np.isfinite(half)
    worst = float(np.max(half[finite])) if finite.any() else 0.0
    # an input that acts (its B_c column not zero) whose delay has no finite standard error
    # is a delay the data do not determine: it fails, by name (it added nothing and passed)
    acting = np.any(model.B_c != 0, axis=0) if model.n_inputs else np.zeros(0, dtype=bool)
    unknown = np.flatnonzero(acting & ~finite)
    # a delay at the bound: its fraction would be read from B^(R + 1), outside the model; on
    # an exact fit, which misses no block (delay_bound), the fraction is 0 to rounding
    at_bound = unknown[model.delay_steps[unknown] == model.max_delay] if unknown.size else unknown
    exact = at_bound.size > 0 and solution.relative_residual <= EXACT_FIT
    if exact:
        unknown = np.setdiff1d(unknown, at_bound)
    modes = np.log(eigenvalues.astype(complex)) / T            # continuous modes
    mode_errors = errors / np.maximum(np.abs(eigenvalues), np.finfo(float).tiny) / T
    # a mode at 0 (an integrator, eigenvalue 1 of A_d) has no relative error: on exact data
    # its rounding over its own rounding-sized value read 1e6 - 1e291.  Modes are compared
    # with EIGENVALUE_PRECISION of their size, but never below the exactness of a fit
    # (EXACT_FIT on log(lambda) T = d lambda / lambda, scale-free): what rounding resolves
    floor = EXACT_FIT / (EIGENVALUE_PRECISION * T)
    mode_half = 1.96 * mode_errors
    relative_each = mode_half / np.maximum(np.abs(modes), floor)
    relative = float(np.max(relative_each))
    statistic = max(worst / DELAY_PRECISION, relative / EIGENVALUE_PRECISION,
                    np.inf if unknown.size else 0.0)
    # a mode whose interval holds 0 (an integrator, a tank level, or a slow mode the record
    # is too short for) has no relative precision: "known to +/- 1700 %" hid what the data
    # do not say, whether it decays, integrates or grows.  Say that, with the other modes'
    # precision (judging it against them instead passed undetermined slow modes whose
    # intervals reached unstable values, 16 of 20 fits of a mode at -0.01 1/s)
    near_zero = (np.abs(modes) <= mode_half) & (mode_half > floor)
    if near_zero.any():
        others = relative_each[~near_zero]
        finding = (f"the other modes of A_c known to +/- "
                   f"{100 * float(np.max(others)):.2g} % (95 %); " if others.size else "")
        finding += ", ".join(f"{value.real:.3g} +/- {half:.2g} 1/s" for value, half in
                             zip(modes[near_zero], mode_half[near_zero], strict=True))
        finding += (": an interval holding 0, so the data do not say whether that mode "
                    "decays, integrates or grows (expected of a plant that integrates, a tank "
                    "level or a position; else record for several times its time constant)")
    else:
        finding = f"the modes of A_c known to +/- {100 * relative:.2g} % (95 %)"
    # the statistic is a ratio of two unlike tolerances: say which numbers make it
    ratio = (f"; statistic {statistic:.3g}: the larger of the delays' half-width over "
             f"{DELAY_PRECISION:g} T and the modes' over {100 * EIGENVALUE_PRECISION:g} %")
    remedy = ("excite more strongly and over a wider band (white inputs), record longer, "
              "reduce the noise; see confidence_intervals() before relying on the model")
    if at_bound.size and not exact:
        # the fraction is read from the two blocks around the first active one: at the bound
        # the second is outside the model, whatever the data (more excitation cannot help)
        R = model.max_delay
        remedy = (f"refit with max_delay={R + 1} or more, so the block B^({R + 1}) after the "
                  f"first active one is in the model")
        unknown = np.setdiff1d(unknown, at_bound)
    if unknown.size:
        finding = (f"the delay of input(s) {unknown.tolist()} without a finite standard "
                   f"error (not determined by the data), " + (
                       f"the others known to +/- {worst:.2g} T, " if finite.any() else "")
                   + finding)
    elif model.n_inputs > 0 and finite.any():
        finding = ("the other delays" if at_bound.size else "delays") + (
            f" known to +/- {worst:.2g} T, " + finding)
    elif model.n_inputs > 0:
        if not at_bound.size:           # no input acts: no delay ('+/- 0 T' said so)
            finding = "no delay (no input acts), " + finding
    else:   # plain DMD: only the transients and the process noise excite the modes
        remedy = ("record longer or more trajectories from different initial states, reduce "
                  "the noise; see confidence_intervals() before relying on the model")
    if exact:
        finding = (f"the delay of input(s) {at_bound.tolist()} is max_delay={model.max_delay} "
                   f"whole periods (first active block B^({model.max_delay}); the exact fit "
                   f"leaves no fraction, as delay_bound says); " + finding)
    elif at_bound.size:
        finding = (f"the delay of input(s) {at_bound.tolist()} sits at max_delay="
                   f"{model.max_delay} periods, where its fraction cannot be measured (it is "
                   f"read from B^({model.max_delay + 1}), outside the model); " + finding)
    if statistic <= 1.0:
        return Check("precision", question, True, statistic, 1.0, finding + ratio)
    return Check("precision", question, False, statistic, 1.0,
                 finding + ": the data do not determine the model to that accuracy" + ratio,
                 remedy)


def _excitation_check(trajectories: list, model: DelayedPlant,
                      precision: Check | None = None) -> Check:
    """Persistent excitation of each input of the order the regression needs.  Weak
    excitation matters through what it does to the estimates: when ``precision`` passed (the
    data determine the delays and modes, exact data among them), it is noted, not failed."""
    question = "Do the inputs excite every lag the regression needs (persistent excitation)?"
    n, m, R = model.n_states, model.n_inputs, model.max_delay
    if m == 0:
        return Check("excitation", question, None, finding="no inputs")
    order = n + R + 1
    series = [U for _, U in trajectories if U.shape[1] > order]
    if not series:
        return Check("excitation", question, None, finding="trajectories too short")
    # every channel's lag covariance at once; its eigenvalue ratio ignores the scale, so the
    # autocorrelations (lags 0 .. order - 1, each trajectory centred) serve
    rho = autocorrelations(series, order - 1).T                        # (m, order)
    values = np.linalg.eigvalsh(
        rho[:, np.abs(np.subtract.outer(np.arange(order), np.arange(order)))])
    ratios = values[:, 0] / np.maximum(values[:, -1], np.finfo(float).tiny)
    channel = int(np.argmin(ratios))
    worst = min(1.0, float(ratios[channel]))
    if worst >= _EXCITED:
        return Check("excitation", question, True, worst, _EXCITED,
                     f"every input is persistently exciting of order n + R + 1 = {order} "
                     f"(smallest relative eigenvalue of its lag covariance {worst:.2g})",
                     fails_below=True)
    if precision is not None and precision.passed:
        # step-like inputs on exact data (a user trial): 9.7e-05 of the largest failed this
        # check while the fit was exact to 1e-9 and the intervals rounding-narrow
        return Check("excitation", question, True, worst, _EXCITED,
                     f"input {channel} excites weakly at order n + R + 1 = {order} (smallest "
                     f"relative eigenvalue of its lag covariance {worst:.2g}), yet the data "
                     f"determine the delays and modes to the precision check's tolerances: "
                     f"wider-band inputs would narrow the intervals", fails_below=True)
    return Check("excitation", question, False, worst, _EXCITED,
                 f"input {channel} is not persistently exciting of order n + R + 1 = {order}: "
                 f"the smallest eigenvalue of its lag covariance is {worst:.2g} of the largest "
                 f"(a few sinusoids, or a narrow band), so the states and the lagged inputs are "
                 f"nearly collinear and the blocks cannot all be identified",
                 f"excite with a broadband signal (white noise, a PRBS, or a multisine with at "
                 f"least {(order + 1) // 2} frequencies per input)", fails_below=True)
