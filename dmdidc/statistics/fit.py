"""The DMDidc regression from sufficient statistics, plain or privatized.

:func:`regression_from_statistics` solves least squares or 2SLS from the moments of
:class:`~dmdidc.SufficientStatistics`, for any delay bound up to the statistics' own (the
smaller bound's moments are sub-blocks).  For privatized statistics it

* **repairs** the noisy Gram, which may be indefinite (noise in directions where the data
  have little or no energy, e.g. the residual of a nearly exact fit), by projecting it onto the
  positive semidefinite cone: eigenvalues below zero set to zero, in the unit-box coordinates
  where the noise is isotropic (the nearest PSD matrix in Frobenius norm, Higham 1988).  The
  true Gram is PSD, so the projection never moves the noisy Gram away from it (projection onto
  a convex set is non-expansive): the repair does not add error, and the noise covariance
  below, computed for the unrepaired noise, stays an honest (conservative) description;
* adds the **noise covariance** of the coefficients, ``J diag(v) J^T`` with ``J`` the exact
  derivative of ``vec(Theta)`` with respect to the Gram entries
  (:func:`dmdidc.regression.instrumental.coefficient_jacobian`) and ``v`` each released entry's
  noise variance in the data's units, to the sampling covariance, so standard errors, the block
  test and confidence intervals account for the privacy noise.  SaS noise with alpha < 2 has
  no variance; its scale enters as the variance ``2 gamma^2`` of the alpha = 2 member of the
  family (matching the body of the law, not its heavy tails): the standard errors are then
  approximate.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np

from dmdidc.errors import InsufficientExcitationError, ParameterError
from dmdidc.regression.instrumental import coefficient_jacobian, instrumental_solution
from dmdidc.regression.solution import RegressionSolution, solve_normal_equations

__all__ = ["regression_from_statistics", "effective_noise_variance", "nearest_psd",
           "ordered_moments"]


def effective_noise_variance(stats) -> float:
    """Noise variance per released entry used for standard errors (module notes).

    ``stats.noise_variance`` when finite (Gaussian and Laplace releases, and the posterior of
    :func:`dmdidc.federated.combine_statistics`).  With SaS releases it is infinite: the
    releases of each alpha sum to a SaS law of scale ``(sum_k gamma_k^alpha)^(1/alpha)``
    (stability, seed eq. 3.8), which enters as the variance ``2 gamma^2`` of its alpha = 2
    member; Gaussian and Laplace releases add their variances.  A release listed ``c`` times
    (a bootstrap resample that drew its part ``c`` times, :func:`dmdidc.resampling.
    weighted_total`) is one noise realization times ``c``: its scale is ``c`` times its own.
    """
    if np.isfinite(stats.noise_variance):
        return float(stats.noise_variance)
    total = 0.0
    stable: dict[float, float] = {}
    times = Counter(release.token for release in stats.releases)
    for release in {release.token: release for release in stats.releases}.values():
        mech, c = release.mechanism, times[release.token]
        kind = type(mech).__name__
        if kind == "GaussianMechanism":
            total += (c * mech.sigma) ** 2
        elif kind == "LaplaceMechanism":
            total += 2.0 * (c * mech.scale) ** 2
        else:
            stable[mech.alpha] = stable.get(mech.alpha, 0.0) + (c * mech.scale) ** mech.alpha
    return total + sum(2.0 * power ** (2.0 / alpha) for alpha, power in stable.items())


def nearest_psd(gram: np.ndarray) -> np.ndarray:
    """Nearest positive semidefinite matrix in Frobenius norm (negative eigenvalues -> 0)."""
    values, vectors = np.linalg.eigh(0.5 * (gram + gram.T))
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T


def _indices(stats, R: int, estimator: str) -> tuple[np.ndarray, int, np.ndarray | None]:
    """Entries of ``v_k`` in the order [phi (p_R); y (n); other instruments] and the
    instruments' positions in that order."""
    n, m, Rs = stats.n_states, stats.n_inputs, stats.max_delay
    p_s = n + m * (Rs + 1)
    phi = np.arange(n + m * (R + 1))
    y = np.arange(p_s, p_s + n)
    order = np.concatenate([phi, y])
    if estimator != "iv":
        return order, phi.size, None
    instruments = stats.instrument_indices
    others = np.setdiff1d(instruments, order)
    order = np.concatenate([order, others])
    position = {int(v): k for k, v in enumerate(order)}
    return order, phi.size, np.array([position[int(v)] for v in instruments])


def regression_from_statistics(stats, max_delay: int, *, estimator: str = "ls",
                               svd_rank: int | None = None, rank_rtol: float = 1e-10,
                               strength: bool = True, reference_level: str | None = None
                               ) -> RegressionSolution:
    """Least squares (``"ls"``) or 2SLS (``"iv"``) from sufficient statistics.

    Parameters
    ----------
    stats : SufficientStatistics
    max_delay : int
        ``R <= stats.max_delay``.
    estimator : {"ls", "iv"}
    svd_rank, rank_rtol
        As in :class:`~dmdidc.DMDidc`.
    strength : bool, default True
        IV: compute ``instrument_strength`` (:func:`~dmdidc.regression.instrumental.
        instrumental_solution`).
    reference_level : {None, "constant", "centred"}, default None
        IV through the origin on instruments that are a reference's lags (set point,
        dither; uncentred, unprivatized statistics), made independent of the reference's
        level: ``"constant"``: the constant ``1`` joins the instruments (its moments are
        ``sums`` and ``n_samples``), so ``r + c`` spans what ``r`` spans and the steady state,
        ``mean(x_{k+1}) = Theta mean(phi)``, is one of the moments: right when the model has
        no intercept (the intercept test found none), whose level then excites the steady
        state.  ``"centred"``: the instruments about their mean, uncorrelated with any
        intercept the model leaves in its error (``detrend=None`` on data about a public
        operating point, the smart-grid fleet's): the steady state is then no moment, as it
        must not be when the origin is not the plant's equilibrium (there the constant's
        moment pulled the fleet's delay 30 s off, its ``A_d`` unstable); the slopes are then
        those of the affine fit.  :func:`~dmdidc.fitting.reference_level_rule` chooses.
        ``None``: the instruments as given (their level counts).  Ignored for least squares,
        centred statistics (both hold already) and privatized ones (their ``sums`` carry
        noise the noise covariance does not follow).

    Returns
    -------
    RegressionSolution
        With ``noise_covariance`` for privatized statistics.

    Raises
    ------
    ParameterError
        ``max_delay`` above the statistics' bound, or IV without instruments.
    InsufficientExcitationError
        Too few samples or rank-deficient moments (the message names the privacy noise when
        the statistics are privatized).
    """
    if max_delay > stats.max_delay:
        raise ParameterError(f"max_delay={max_delay} exceeds the statistics' bound "
                             f"{stats.max_delay}: build them with max_delay >= {max_delay}")
    if estimator == "iv" and stats.instruments is None:
        raise ParameterError("estimator='iv' needs statistics with instruments: build them "
                             "with SufficientStatistics.from_data(..., instruments='inputs' | "
                             "'states' | signals)")
    variance = effective_noise_variance(stats)
    scale = stats.scale
    n = stats.n_states
    G, s, order, p, instruments = ordered_moments(
        stats, max_delay, estimator, nearest_psd(stats.gram) if variance > 0 else None)
    if reference_level not in (None, "constant", "centred"):
        raise ParameterError(f"reference_level={reference_level!r}: accepted None, "
                             f"'constant' or 'centred'")
    level = reference_level if variance == 0 and stats.centering == "none" else None
    try:
        if estimator == "iv":
            Gz, sz, z = G, s, instruments
            N = float(stats.n_samples)
            if level == "constant":       # the constant's moments: the sums and the count
                Gz = np.block([[G, s[:, None]], [s[None, :], np.array([[N]])]])
                sz, z = np.append(s, N), np.append(instruments, G.shape[0])
            elif level == "centred" and N > 0:    # v - c, c the instruments' means
                c = np.zeros_like(s)
                c[instruments] = s[instruments] / N
                Gz = G - np.outer(c, s) - np.outer(s, c) + N * np.outer(c, c)
                sz = s - N * c
            solution = instrumental_solution(Gz, sz, stats.n_samples, n_states=n, n_regressors=p,
                                             instruments=z, svd_rank=svd_rank,
                                             rank_rtol=rank_rtol, intercepts=stats.intercepts,
                                             strength=strength)
        else:
            phi, y = np.arange(p), np.arange(p, p + n)
            solution = solve_normal_equations(
                G[np.ix_(phi, phi)], G[np.ix_(y, phi)], G[np.ix_(y, y)],
                n_samples=stats.n_samples, regressor_sum=s[phi], target_sum=s[y],
                svd_rank=svd_rank, rank_rtol=rank_rtol, intercepts=stats.intercepts)
    except InsufficientExcitationError as exc:
        if variance > 0:
            raise _hidden_excitation(stats, variance, order[:p], exc) from exc
        raise
    if variance == 0:
        return solution
    rows, cols = np.triu_indices(order.size)
    keep = ~((rows >= p) & (rows < p + n) & (cols >= p) & (cols < p + n))   # y-y: no effect
    rows, cols = rows[keep], cols[keep]
    try:
        jacobian = coefficient_jacobian(G, solution.coefficients, n_states=n, n_regressors=p,
                                        instruments=instruments, entries=(rows, cols))
    except np.linalg.LinAlgError as exc:    # the solver's rank test passed, an exact solve not
        raise _hidden_excitation(stats, variance, order[:p], exc) from exc
    entry_variance = variance * (scale[order][rows] * scale[order][cols]) ** 2
    noise = (jacobian * entry_variance) @ jacobian.T
    return dataclasses.replace(solution, noise_covariance=0.5 * (noise + noise.T))


def ordered_moments(stats, max_delay: int, estimator: str, gram: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray | None]:
    """The moments of ``stats`` (or ``gram`` in their coordinates) in the data's units, in the
    solver's order ``[phi (p); y (n); other instruments]``: ``(G, s, order, p, instruments)``,
    ``order`` the entries of ``v_k`` taken, ``instruments`` their positions in it (``None``
    for least squares)."""
    scale = stats.scale
    gram = (stats.gram if gram is None else gram) * np.outer(scale, scale)
    order, p, instruments = _indices(stats, max_delay, estimator)
    return gram[np.ix_(order, order)], (stats.sums * scale)[order], order, p, instruments


def _hidden_excitation(stats, variance: float, regressors: np.ndarray,
                       cause: Exception) -> InsufficientExcitationError:
    """The error of privatized statistics whose noise leaves a singular regression.

    It names the data sizes measured instead of estimating the samples a fit needs: the
    noise's spectral norm (``2 sigma sqrt(p)``) against the smallest regressor energy missed
    the first size that fits by up to 1.6x either way on random plants (the smallest
    eigenvalue, not the energy, decides, and the repair of the Gram moves it).
    """
    diagonal = np.diag(stats.gram)[regressors]
    # the solver's own remedies (svd_rank, regression_rank) do not cure privacy noise: keep
    # its diagnosis, the first sentence
    found = str(cause).split(". ")[0]
    return InsufficientExcitationError(
        f"the privacy noise hides the excitation: the privatized statistics carry noise "
        f"of standard deviation {np.sqrt(variance):.3g} per entry against regressor "
        f"energies (Gram diagonal) of {diagonal.min():.3g} .. {diagonal.max():.3g} "
        f"(unit-box coordinates, {stats.n_samples} samples), and the repaired Gram is "
        f"rank-deficient. Privatize more data at once, use a smaller privacy unit or a "
        f"larger epsilon. The noise per entry does not grow with the data, the energies do: "
        f"how many samples an epsilon needs is measured in the privacy sweep (docs "
        f"noisy-data.md, 'Statistics against per-sample privatization': about 3e6 samples "
        f"for a delay to 0.01 T at epsilon 1, event level). (Solver: {found})")
