"""Offsets and the operating point: is there an affine term, and where does the plant sit?

Recorded signals rarely vary around zero: sensors have offsets, inputs have a bias, plants run
at an operating point.  A linear model through the origin absorbs an offset into ``A_d`` (pushing
its eigenvalues towards 1) and the input blocks, silently.  The affine model

    x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j} + c

represents it exactly, and regressing with an intercept is regressing the *centred* moments
(:meth:`~dmdidc.SufficientStatistics.centered`): ``Theta`` from ``gram - sums sums^T / N`` and
``c = mean(x_{k+1}) - Theta mean(phi_k)``.

**Deciding from the data** (``detrend="auto"``): the intercept's Hotelling statistic
``T^2 = c^T Sigma^-1 c / v``, ``v = 1 / N + mean(phi)^T C mean(phi)`` (``C`` the unscaled
covariance of the centred fit, ``Sigma`` the residual covariance), is ``chi^2_n`` without an
offset; above the quantile at the check level the fit keeps the intercept.  A false detection
costs ``n`` degrees of freedom and nothing else; a missed offset is as small as the noise
allows.

**The operating point** of the affine model is the equilibrium under the mean input:
``u_op = mean(u)`` and ``x_op = (I - A_d)^-1 (B_d u_op + c)`` (``B_d = sum_j B^(j)``).  In
deviations ``x - x_op``, ``u - u_op`` the model is linear (``c`` disappears), so controllers and
predictions work in deviations and add the operating point back: a model fitted to 350 K and
2e5 Pa predicts in K and Pa.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from dmdidc.errors import NoSteadyStateError
from dmdidc.inference.checks import Check

__all__ = ["OffsetTest", "offset_test", "operating_point", "operating_point_of",
           "AFFINE_ROUNDING_LOUD"]

#: An affine fit solved from centred moments that no pass over the samples refines (statistics,
#: ``partial_fit``) fails the ``offset`` check when their rounding may move a coefficient by
#: this share of its standard error (:func:`dmdidc.fitting.affine_rounding`; fits on samples
#: refine from :data:`~dmdidc.regression.solution.ROUNDING_SHARE` on).  The estimate was
#: about 0.4-1 times the actual error (two close modes, offset 10 state deviations, K 2e4).
AFFINE_ROUNDING_LOUD = 0.1


@dataclass(frozen=True)
class OffsetTest:
    """The intercept test of ``detrend="auto"``.

    Attributes
    ----------
    statistic : float
        Hotelling's ``T^2`` of the intercept against zero.
    critical_value : float
        ``chi^2_n`` quantile at the level.
    intercept : ndarray, shape (n,)
        The estimated affine term ``c``.
    significant : bool
        Whether the fit keeps the intercept.
    """

    statistic: float
    critical_value: float
    intercept: np.ndarray
    significant: bool

    def check(self) -> Check:
        """The decision as a (passing, informative) :class:`~dmdidc.inference.checks.Check`."""
        if self.significant:       # the intercept printed only here (formatting costs ~0.3 ms)
            c = np.array2string(self.intercept, precision=3, separator=", ")
            finding = (f"an offset was found (intercept {c}, T^2 = {self.statistic:.3g} above "
                       f"{self.critical_value:.3g}): the model carries the operating point "
                       f"(model_.operating_point) and works in deviations from it")
        else:
            finding = (f"no offset (T^2 = {self.statistic:.3g} at most {self.critical_value:.3g})"
                       f": the model goes through the origin")
        return Check("offset", "Do the data have an offset (a non-zero operating point)?",
                     True, self.statistic, self.critical_value, finding)


def intercept(solution, stats, max_delay: int) -> np.ndarray:
    """``c = mean(y) - Theta mean(phi)`` from the uncentred means of ``stats``."""
    n, p = solution.coefficients.shape
    _, sums = stats.moments()
    N = max(stats.n_samples, 1)
    phi = sums[:p] / N
    p_s = stats.n_regressors
    y = sums[p_s:p_s + n] / N
    return y - solution.coefficients @ phi


def offset_test(centred_solution, stats, *, level: float) -> OffsetTest:
    """Test the intercept of a fit on centred moments (module notes).

    Parameters
    ----------
    centred_solution : RegressionSolution
        The fit on ``stats.centered()`` (its covariance is the intercept model's).
    stats : SufficientStatistics
        The uncentred statistics (their ``sums`` give the means).
    level : float

    Returns
    -------
    OffsetTest
    """
    from dmdidc.inference.blocks import residual_precision

    n, p = centred_solution.coefficients.shape
    c = intercept(centred_solution, stats, stats.max_delay)
    N = max(stats.n_samples, 1)
    _, sums = stats.moments()
    phi = sums[:p] / N
    variance = 1.0 / N + float(phi @ centred_solution.unscaled_covariance @ phi)
    precision = residual_precision(centred_solution.residual_covariance,
                                   centred_solution.target_rms)
    statistic = float(c @ precision @ c) / variance
    critical = float(special.chdtri(n, level))
    return OffsetTest(statistic, critical, c, statistic > critical)


def operating_point(A_d: np.ndarray, B_blocks: np.ndarray, c: np.ndarray,
                    u_op: np.ndarray) -> np.ndarray:
    """``x_op = (I - A_d)^-1 (B_d u_op + c)``: the equilibrium under ``u_op``.

    Raises
    ------
    NoSteadyStateError
        ``A_d`` has an eigenvalue at 1 (an integrator has no equilibrium for a general ``c``):
        :func:`dmdidc.model.steady_state` decides it.
    """
    from dmdidc.model import steady_state

    return steady_state(A_d, B_blocks.sum(axis=0) @ u_op + c)


def operating_point_of(outcome, A_d: np.ndarray, B_blocks: np.ndarray):
    """The operating point of an affine fit (``None`` when the fit went through the origin).

    Parameters
    ----------
    outcome : dmdidc.fitting.FitOutcome
        ``centred`` fits carry the uncentred statistics whose means define the intercept.
    A_d, B_blocks
        The final model's matrices (the intercept is recomputed for them).

    Returns
    -------
    dmdidc.model.OperatingPoint or None
    """
    from dmdidc.model import OperatingPoint

    if not outcome.centred or outcome.statistics is None:
        return None
    stats = outcome.statistics
    n, m = A_d.shape[0], B_blocks.shape[2]
    R1 = B_blocks.shape[0]
    _, sums = stats.moments()
    N = max(stats.n_samples, 1)
    x_mean = sums[:n] / N
    u_means = sums[n:n + m * R1].reshape(R1, m) / N
    p_s = stats.n_regressors
    y_mean = sums[p_s:p_s + n] / N
    c = y_mean - A_d @ x_mean - np.einsum("jab,jb->a", B_blocks, u_means)
    u_op = u_means[0]
    try:
        x_op = operating_point(A_d, B_blocks, c, u_op)
    except NoSteadyStateError:
        x_op = x_mean          # an integrator: no equilibrium; the data's mean state
    return OperatingPoint(x_op, u_op)
