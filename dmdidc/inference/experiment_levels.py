"""Were the experiments recorded at the same level?  Per-experiment intercepts against one.

Several experiments of one plant are often recorded on different days, after a recalibration,
with another sensor or at another set point of an unmeasured disturbance: each then carries its
own offset.  One model with one intercept (``detrend="auto"``) cannot represent that, and the
misfit shows everywhere but where it comes from: coloured residuals, late input blocks (a
"distributed delay"), weak instruments, a drifting level (a user trial: 4 experiments of 800
samples, offsets of about 2 state deviations each, 6 of 12 random plants identified wrong, up
to 1.18 T in the delay and 180 % in the modes, and the warnings named the level in 7 of 12).
``detrend="constant"`` (each experiment's own mean removed) identified all 12.

**The test** (a Lagrange-multiplier test of experiment dummies): the model's residuals ``r`` are
regressed on the experiment indicators ``D`` after removing from both what a constant and the
lagged inputs ``u_k .. u_{k-R}`` explain (``M``, Frisch-Waugh): under a common level
``S = D M r^T`` has mean zero and covariance ``(W + V) (x) Omega`` with
``W = D M D^T``.  Experiments at other operating points of one plant (other input means, and
the state levels they drive) differ in their inputs' means, which the projection removes, and
in their state levels, through which the estimation error of ``A_d`` reaches the residuals'
means: ``V = L C L^T``, ``L`` the experiments' projected state sums and ``C`` the regression's
unscaled covariance of ``A_d``'s columns.  The states are not projected on: under measurement
noise that would carry least squares' errors-in-variables bias into the experiments' means (11
of 40 random plants at other operating points failed).  Residual memory enters through
``Omega``: the residual covariance scaled per state by its long-run variance over its variance
(Bartlett over twice the residuals' memory, :func:`~dmdidc.regression.instrumental.hac_lags`),
never below 1 (a mean difference of a series with negative correlation varies less; assuming
white is the safe side).  Experiments shorter (median) than ten such windows are not tested:
their means carry the noise's slow part, and centring each hides the memory (AR(0.9)
measurement noise in 1000 experiments of 50 samples failed).  ``T^2 = vec(S)^T Cov^+ vec(S)``
is ``d F(d, nu)`` with ``d = n (E - 1)`` and ``nu = 3 N / (2 (lags + 1))``,
the Bartlett estimate's equivalent degrees of freedom (``chi^2_d`` for white residuals and
long data).  Exact fits pass
(:func:`~dmdidc.inference.diagnostics.fit_diagnostics`: rounding is no offset).

The statistic uses the model's residuals, whatever estimator fitted it, on every sample (the
experiment means are its subject: a subsample of pieces would not keep them), at the cost of
one product of the lagged inputs with themselves and with the residuals and states.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dmdidc.inference.checks import Check

__all__ = ["MISLED", "QUESTION", "experiment_level_check"]

#: Experiments shorter (median) than this many times the residuals' memory window are not
#: tested: their means carry the slow noise, and centring each biases the memory estimate.
_MEMORIES = 2

QUESTION = "Were the experiments recorded at one level (no offset that differs between them)?"

#: The checks whose failure an offset that differs between experiments produces, with remedies
#: that would mislead (excite more, raise max_delay, measure more states, a closed loop ...):
#: inconclusive while ``experiment_levels`` fails.
MISLED = ("block_structure", "whiteness", "input_correlation", "feedback", "state_completeness",
          "linearity", "time_invariance", "instrument_strength", "delay_ambiguity",
          "unexplained_block", "precision", "determined_modes", "excitation")


def experiment_level_check(trajectories: list, A_d: np.ndarray, B_blocks: np.ndarray,
                           intercept: np.ndarray | None, level: float, *,
                           state_covariance: np.ndarray | None = None,
                           trend: str | None = None, parts: list | None = None) -> Check:
    """``experiment_levels``: do the experiments' residuals sit at one level (module notes)?

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
        The experiments as the regression saw them.
    A_d, B_blocks, intercept
        The model in the regression's coordinates (``intercept`` ``None``: through the origin).
    level : float
        The check's level.
    state_covariance : ndarray, shape (n, n), optional
        The unscaled covariance of ``A_d``'s columns (the regression's ``unscaled_covariance``
        of the states): the estimation error of ``A_d`` on the experiments' state levels.
    trend : {None, "constant", "linear"}
        The trend the fit removed from each experiment: then not tested.
    parts : list, optional
        :func:`~dmdidc.inference.residuals.model_residuals` of these trajectories and this
        model, when the caller has them (data checked whole): not formed again.

    Returns
    -------
    Check
    """
    from dmdidc.inference.residuals import model_residuals
    from dmdidc.regression.instrumental import _last_significant, _memory_lags, hac_lags
    from dmdidc.regression.lag_products import centred_autocovariances

    if trend is not None:
        return Check("experiment_levels", QUESTION, None,
                     finding=f"not tested: detrend={trend!r} removed each experiment's level")
    R = B_blocks.shape[0] - 1
    # counted before the residuals are formed: one long record's residuals cost most of a
    # Gram pass of the data (54 ms of a 2e5-sample fit), for a check that then cannot run
    if sum(U.shape[1] > R for _, U in trajectories) < 2:
        return Check("experiment_levels", QUESTION, None,
                     finding="not tested: one experiment (with regression samples)")
    if parts is None:
        parts = model_residuals(trajectories, A_d, B_blocks, intercept)
    if len(parts) < 2:
        return Check("experiment_levels", QUESTION, None,
                     finding="not tested: one experiment (with regression samples)")
    residuals, regressors = [], []
    states = []
    for E, U, X in parts:
        N = E.shape[1]
        residuals.append(E)
        regressors.append(np.concatenate([U[:, R - j:R - j + N] for j in range(R + 1)]))
        states.append(X[:, R:R + N])
    counts = np.array([E.shape[1] for E in residuals], dtype=float)
    total = counts.sum()
    n, p = residuals[0].shape[0], regressors[0].shape[0]      # (p = 0 without inputs)
    count = len(parts)
    if total <= n + p + count:
        return Check("experiment_levels", QUESTION, None,
                     finding="not tested: too few samples for an intercept per experiment")
    phi_mean = sum(P.sum(axis=1) for P in regressors) / total
    r_mean = sum(E.sum(axis=1) for E in residuals) / total
    x_mean = sum(Xs.sum(axis=1) for Xs in states) / total
    gram = np.zeros((p, p))
    cross = np.zeros((p, 2 * n))
    for P, E, Xs in zip(regressors, residuals, states, strict=True):
        Pc = P - phi_mean[:, None]
        gram += Pc @ Pc.T
        cross += Pc @ np.concatenate([E - r_mean[:, None], Xs - x_mean[:, None]]).T
    # the experiments' sums about the common means (residuals, states: E x 2n; inputs: A)
    A = np.stack([P.sum(axis=1) for P in regressors], axis=1) - np.outer(phi_mean, counts)
    sums = (np.stack([np.concatenate([E.sum(axis=1), Xs.sum(axis=1)])
                      for E, Xs in zip(residuals, states, strict=True)])
            - np.outer(counts, np.concatenate([r_mean, x_mean])))
    scale = np.sqrt(np.maximum(np.diag(gram), np.finfo(float).tiny))
    solve = np.linalg.pinv(gram / np.outer(scale, scale), rcond=1e-10, hermitian=True)
    inputs = (A / scale[:, None]).T                                  # (E, p)
    S, levels = np.split(sums - inputs @ (solve @ (cross / scale[:, None])), 2, axis=1)
    # the within-experiment residual covariance, each state scaled by its memory
    centred = [E - E.mean(axis=1, keepdims=True) for E in residuals]
    sigma = sum(c @ c.T for c in centred) / max(total - len(parts), 1.0)
    cov, _, _ = centred_autocovariances(centred, _memory_lags(int(total)))
    lags = min(hac_lags(centred, memory=_last_significant(cov, int(total))), cov.shape[0] - 1)
    typical = float(np.median(counts))
    if typical < _MEMORIES * (lags + 1):
        # a slow noise moves each short experiment's mean as an offset would, and centring
        # each hides the memory that says so (AR(0.9) noise in 1000 experiments of 50)
        return Check("experiment_levels", QUESTION, None, finding=(
            f"not tested: the residuals' memory ({lags} lags) is not short against the "
            f"experiments (median {typical:.0f} samples, fewer than {_MEMORIES} x "
            f"{lags + 1}), so an offset per experiment cannot be told from the noise's slow "
            f"part"))
    # centring each experiment lowers every autocovariance by about the long-run variance
    # over its length, and the Bartlett sum by (lags + 1) / length of itself: undone
    memory = np.maximum(1.0, _long_run_ratio(cov, lags) / (1.0 - (lags + 1) / typical))
    omega = sigma * np.sqrt(np.outer(memory, memory))
    # Cov(vec S) = (W + V) (x) Omega: the noise's mean, and A_d's estimation error carried by
    # the experiments' state levels (V = levels C_xx levels^T; its covariance assumes white
    # residuals, scaled by their memory as the means are).  W + V is diag(N_e) plus terms of
    # rank 1 + p + n, and annihilates the ones, to which S is orthogonal: the form S^T (W +
    # V)^+ S is S^T M^-1 S with M = W + V + ones ones^T alpha, by Woodbury (E x (p + n) work;
    # the (E n)^2 covariance took 5.9 s of a 6.1 s fit of 1000 experiments)
    C = np.zeros((n, n)) if state_covariance is None else state_covariance
    alpha = total / count
    Z = np.concatenate([counts[:, None], np.ones((count, 1)), inputs, levels], axis=1)
    G = np.zeros((Z.shape[1],) * 2)
    G[0, 0], G[1, 1] = -1.0 / total, alpha
    G[2:2 + p, 2:2 + p] = -solve
    G[2 + p:, 2 + p:] = C
    scaled = Z / counts[:, None]                                       # D^-1 Z
    small = np.eye(Z.shape[1]) + (Z.T @ scaled) @ G
    if np.linalg.cond(small) > 1e10:
        return Check("experiment_levels", QUESTION, None, finding=(
            "not tested: the inputs' levels explain the experiments' levels (inputs held at "
            "one value within each experiment), so an offset cannot be told from them"))
    Y = scaled.T @ S                                                   # Z^T D^-1 S
    form = S.T @ (S / counts[:, None]) - Y.T @ G @ np.linalg.solve(small, Y)
    dof = n * (count - 1)
    statistic = float(np.trace(np.linalg.pinv(omega, hermitian=True) @ form))
    # each experiment's standard error: the diagonal of W + V
    diagonal = (counts - counts ** 2 / total - np.einsum("ea,ab,eb->e", inputs, solve, inputs)
                + np.einsum("ea,ab,eb->e", levels, C, levels))
    # Omega is estimated, from about 3 N / (2 (lags + 1)) degrees of freedom (Bartlett's
    # equivalent, Priestley 1981): F rather than chi^2, which with the residuals' memory
    # long was too liberal (AR(0.9) measurement noise: 3 of 200 fits at up to 1.3 times it)
    equivalent = 1.5 * total / (lags + 1)
    critical = float(dof * special.fdtri(dof, equivalent, 1.0 - level))
    if statistic <= critical:
        return Check("experiment_levels", QUESTION, True, statistic, critical,
                     f"the {count} experiments' residuals sit at one level (T^2 = "
                     f"{statistic:.3g} at most {critical:.3g}, {dof} F({dof}, "
                     f"{equivalent:.0f}))")
    # the experiment and state most off: its residual sum against its own standard error
    z = S / np.sqrt(np.maximum(np.outer(diagonal, np.diag(omega)), np.finfo(float).tiny))
    e, i = np.unravel_index(int(np.argmax(np.abs(z))), z.shape)
    return Check(
        "experiment_levels", QUESTION, False, statistic, critical,
        f"the {count} experiments sit at different levels: with one intercept for all of them "
        f"the residuals' means still differ between experiments beyond what their inputs "
        f"explain (T^2 = {statistic:.3g} > {critical:.3g}, {dof} F({dof}, {equivalent:.0f}), "
        f"residual memory accounted; most: experiment {e}, residual {i}, "
        f"{z[e, i]:+.3g} standard errors from the common level): an offset that moved between "
        f"experiments (another day, a recalibrated sensor, an unmeasured disturbance), which "
        f"one model cannot represent; its misfit shows as coloured residuals, late input "
        f"blocks and a wrong delay and modes (the checks that fail for it are inconclusive "
        f"here)",
        "fit with detrend='constant' (each experiment's own mean removed; detrend='linear' "
        "if the levels also drift), or subtract each experiment's known level before fitting")


def _long_run_ratio(cov: np.ndarray, lags: int) -> np.ndarray:
    """Each row's long-run variance over its variance from its autocovariances ``cov``
    (lags 0 .., rows), Bartlett over ``lags`` after AR(1) prewhitening (Andrews and Monahan
    1992): the window alone missed the tail of a slow noise (AR(0.9) measurement noise: 4 of
    200 multi-experiment fits failed at up to 2.2 times the threshold)."""
    variance = np.where(cov[0] > 0, cov[0], 1.0)
    rho = np.clip(cov[1] / variance, -0.97, 0.97) if cov.shape[0] > 1 else np.zeros_like(variance)
    # the innovations' autocovariances e_k = c_k - rho c_{k-1}, lags 0 .. lags
    padded = np.concatenate([cov[1:2], cov, np.zeros((1, cov.shape[1]))])    # gamma_{-1} = 1
    lag = np.arange(lags + 1)
    innovations = ((1.0 + rho ** 2) * padded[lag + 1] - rho * (padded[lag] + padded[lag + 2]))
    weights = 1.0 - lag / (lags + 1.0)
    weights[1:] *= 2.0
    return np.maximum(weights @ innovations, 0.0) / (1.0 - rho) ** 2 / variance
