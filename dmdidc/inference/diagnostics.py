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
  a larger ``max_delay``);
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
  ``log(lambda) / T``, is then not determined (any faster mode fits the data as well), nor are
  ``A_c``, ``B_c`` and the delay fraction: typically a mode much faster than the sampling
  period, whose state follows a lagged input (``A_c = diag(-0.1, -30)`` at ``T = 1`` s gives
  -21 or -23 for the fast mode, depending on the rounding of the data).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dmdidc.discretization import first_active_blocks
from dmdidc.inference.blocks import BlockTest, residual_precision
from dmdidc.model import DelayedPlant
from dmdidc.regression.solution import RegressionSolution

__all__ = ["eigenvalue_standard_errors", "identification_warnings", "logarithm_evidence"]

#: Level of the residual-mean (offset) test.  Small, because residuals of noisy states are a
#: moving average (up to ~2x the variance of their mean assumed by the test).
_OFFSET_LEVEL = 1e-9
#: Fewer regression samples per regressor than this: name "too few samples" as a cause.
_FEW_SAMPLES_PER_REGRESSOR = 20
#: Below this relative residual the data are explained to (Gram) rounding: nothing is missing.
_EXACT_FIT = 1e-6


def identification_warnings(solution: RegressionSolution, test: BlockTest,
                            model: DelayedPlant, *, detrended: bool,
                            log_error: Exception | None = None) -> list[str]:
    """Messages naming what may be wrong with an identification, each with its evidence.

    Parameters
    ----------
    solution : RegressionSolution
        The (unrestricted) least-squares regression.
    test : BlockTest
        The statistics of the test which input blocks act.
    model : DelayedPlant
        The identified model: its active blocks and whole delays are what the warnings speak of
        (the same facts the controllers read).
    detrended : bool
        Whether offsets were removed before the fit (then the offset check is skipped).
    log_error : Exception, optional
        The :class:`~dmdidc.LogarithmError` of the continuous recovery, if any.

    Returns
    -------
    list of str
        Empty when nothing suspicious was found.
    """
    R = model.max_delay
    messages = []
    relative = solution.relative_residual
    fit = f"the fit leaves {relative:.2g} of the targets unexplained"
    first = first_active_blocks(model.active_blocks)
    silent = np.flatnonzero(first < 0)
    if silent.size:
        lag = int(np.argmax(test.statistics[:, silent].max(axis=1)))
        largest = float(test.statistics[:, silent].max())
        bound = (f"the delay exceeds max_delay={R} periods, so no input u_k .. u_(k-{R}) "
                 f"explains the states ({fit}): refit with a larger max_delay")
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
                       f"privacy unit or a larger epsilon)")
            causes.insert(0 if share > 0.5 else len(causes), privacy)
        causes.append(f"the input's effect is below the noise ({fit}; lengthen the data or "
                      f"excite more strongly)")
        causes.append("the input does not act on the states")
        listed = "; ".join(f"({chr(97 + i)}) {cause}" for i, cause in enumerate(causes))
        messages.append(
            f"input channel(s) {silent.tolist()} show no significant effect within "
            f"max_delay={R} periods: no input block passes the test (largest T^2 = "
            f"{largest:.3g} at lag {lag}, critical value {test.critical_value:.3g}); their "
            f"B_c column and delay are reported as 0. Possible causes: {listed}")
    at_bound = np.flatnonzero(first == R) if R > 0 else np.zeros(0, dtype=int)
    if at_bound.size and relative > _EXACT_FIT:
        messages.append(
            f"the delay of input channel(s) {at_bound.tolist()} may exceed max_delay={R} "
            f"periods: their first significant block is the last one, B^({R}) (T^2 = "
            f"{np.round(test.statistics[R, at_bound], 1).tolist()}), so the delay is at least "
            f"{R} periods and is identified as exactly {R}; if it is longer, the blocks it "
            f"needs are missing and the identified delay and model are wrong ({fit}). Refit "
            f"with max_delay={R + 1} or more: if B^({R + 1}) is then inactive, the delay is "
            f"{R} periods")
    if not detrended and solution.noise_covariance is None:   # privatized sums are noisy
        inverse = residual_precision(solution.residual_covariance, solution.target_rms)
        mean = solution.residual_mean
        statistic = float(solution.n_samples * mean @ inverse @ mean)
        critical = float(special.chdtri(mean.size, _OFFSET_LEVEL))
        if statistic > critical:
            messages.append(
                f"the residuals have the non-zero mean "
                f"{np.array2string(mean, precision=3, separator=', ')} (T^2 = {statistic:.3g} "
                f"against zero; about {mean.size} is expected without an offset, and the critical "
                f"value is {critical:.3g}): the data contain an offset (a sensor "
                f"offset, an input bias or a non-zero operating point) that a linear model "
                f"through the origin cannot represent, which biases A_d, the blocks and the "
                f"delay. Fit with detrend='constant' (the model is then in deviations from the "
                f"operating point)")
    if log_error is not None:
        messages.append(f"no continuous-time model ({fit}): {log_error}")
    elif model.has_continuous:
        messages.extend(_undetermined_modes(solution, model, test.significance))
    return messages


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
    n, p = solution.coefficients.shape
    rounding = np.finfo(float).eps * solution.target_rms
    cov = solution.covariance() + np.kron(np.diag(rounding ** 2), solution.unscaled_covariance)
    cov = cov.reshape(n, p, n, p)[:, :n, :, :n].reshape(n * n, n * n)
    eigenvalues, right = np.linalg.eig(A_d)
    left = np.linalg.inv(right)             # rows y^H with y^H x = 1
    gradients = np.einsum("ia,bi->iab", left, right).reshape(n, n * n)
    errors = np.sqrt(np.abs(np.einsum("ij,jk,ik->i", gradients, cov, gradients.conj())))
    return eigenvalues, errors


def _undetermined_modes(solution: RegressionSolution, model: DelayedPlant,
                        significance: float) -> list[str]:
    eigenvalues, errors = eigenvalue_standard_errors(solution, model.A_d)
    z = float(special.ndtri(1.0 - significance / (2 * eigenvalues.size)))
    weak = np.flatnonzero(np.abs(eigenvalues) <= z * errors)
    if not weak.size:
        return []
    found = ", ".join(f"{_number(eigenvalues[i])} (standard error {errors[i]:.2g})"
                      for i in weak)
    modes = ", ".join(f"{np.log(complex(eigenvalues[i])).real / model.dt:.4g}" for i in weak)
    return [f"A_d has eigenvalue(s) {found} within {z:.2g} standard errors of zero (level "
            f"{significance:g}): the continuous mode(s) log(lambda) / T = {modes} 1/s are not "
            f"determined by the data (any faster mode fits them as well), and with them A_c, "
            f"B_c and the delay fraction. Likely cause: a mode much faster than the sampling "
            f"period T = {model.dt:g} s (its state follows a lagged input); sample faster, or "
            f"rely on the discrete model (A_d, the blocks and the whole delay are fitted)"]


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
    return (f"noise is the likely cause: the eigenvalue(s) {'; '.join(findings)} of A_d are "
            f"within {_NOISE_STANDARD_ERRORS:g} standard errors of zero, so the data do not "
            f"determine their sign (lengthen the data, reduce the noise, use a consistent "
            f"estimator such as estimator='iv', or sample more slowly if the mode is fast)")
