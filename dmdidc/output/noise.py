"""Coloured output noise: is it there, and which order does the input-output part need?

The canonical correlations of the subspace step count every state that carries the past into
the future outputs, the noise model's included: output noise with a pole (an AR(1) disturbance,
drift, a slow sensor) adds states that no input excites.  An output-error model of that order
fits the extra modes to the noise, so its eigenvalues are wrong although its delays and its
input-output map may be right.  Such states have no input-output (Markov) signature: a model
without them leaves residuals that still do not depend on the inputs.  The order the
input-output part needs is therefore the smallest whose residuals are independent of the
inputs; :class:`~dmdidc.OutputDMDidc` looks below the noise-edge count for it when the
residuals of that count are coloured (:func:`whiteness_test`), which white noise rarely makes
them (at the test's level), so white-noise fits cost nothing more.

In open loop the output-error fit stays consistent under coloured noise (the input-output map
is estimated without bias; under feedback it is not), but its covariance assumes white noise,
so the intervals are then too narrow: :class:`~dmdidc.OutputDMDidc` says so in a warning.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg, special

from dmdidc.model import DelayedPlant
from dmdidc.output.refine import Refined, without_lines

__all__ = ["balanced_dynamics", "output_residuals", "whiteness_test"]

#: Relative floor on the Gramians' eigenvalues (a mode no input excites has a zero one).
_GRAMIAN_FLOOR = 1e-14

def output_residuals(experiments: list[tuple[np.ndarray, np.ndarray]], refined: Refined,
                     dt: float, R: int) -> list[np.ndarray]:
    """Output-error residuals ``y_k - yhat_k`` (T_e, l) of each experiment, from sample ``R``.

    The model is simulated from its fitted state at sample ``R`` with the recorded inputs
    before it in flight (less each experiment's line for a fit with ``trend``).
    """
    plant = DelayedPlant.from_continuous(refined.A_c, refined.B_c, refined.delays, dt,
                                         max_delay=max(R, 1))
    lags = plant.max_delay
    residuals = []
    for (Y, U), x0 in zip(experiments, refined.initial_states, strict=True):
        past = np.zeros((U.shape[0], lags))
        past[:, lags - min(R, lags):] = U[:, R - min(R, lags):R]
        X = plant.simulate(x0, U[:, R:], past)[:, :-1]
        predicted = refined.C @ X + refined.D @ U[:, R:] + refined.offset[:, None]
        residuals.append((Y[:, R:] - predicted).T)
    return without_lines(residuals, refined.trend) if refined.trend else residuals


def balanced_dynamics(refined: Refined, order: int, dt: float
                      ) -> tuple[np.ndarray, np.ndarray] | None:
    """Discrete ``(A, C)`` of order ``order`` by balanced truncation of the input-output part
    ``(A_c, B_c, C)`` of a fitted model (``None`` if ``A_c`` is not stable).

    A state that no input excites (a noise-model state fitted as a mode) has a zero Hankel
    singular value and goes first, so the truncation starts the lower-order fit from the
    plant's modes; the truncation of the subspace basis instead keeps the states with the
    largest canonical correlations, noise states included.  Input delays do not change the
    Hankel singular values (they act on the inputs, not on the states).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc.output.refine import Refined
    >>> fit = Refined(A_c=np.diag([-1.0, -0.1]), C=np.array([[1.0, 1.0]]),
    ...               B_c=np.array([[1.0], [0.0]]), delays=np.zeros(1),
    ...               initial_states=np.zeros((1, 2)), D=np.zeros((1, 1)), offset=np.zeros(1),
    ...               covariance=np.zeros((0, 0)), rss=0.0, dof=1, layout={}, converged=True)
    >>> A, C = balanced_dynamics(fit, 1, dt=0.5)       # the input-driven mode at -1 stays
    >>> np.round(np.log(np.linalg.eigvals(A)) / 0.5, 6)
    array([-1.])
    """
    A, B, C = refined.A_c, refined.B_c, refined.C
    if np.max(np.linalg.eigvals(A).real) >= 0:
        return None
    roots = []
    for gramian in (linalg.solve_continuous_lyapunov(A, -B @ B.T),
                    linalg.solve_continuous_lyapunov(A.T, -C.T @ C)):
        values, vectors = np.linalg.eigh(0.5 * (gramian + gramian.T))
        values = np.maximum(values, _GRAMIAN_FLOOR * max(values.max(), np.finfo(float).tiny))
        roots.append(vectors * np.sqrt(values))
    left, hankel, right_t = np.linalg.svd(roots[1].T @ roots[0])
    scale = 1.0 / np.sqrt(hankel[:order])
    project = (left[:, :order] * scale).T @ roots[1].T              # (order, n)
    lift = roots[0] @ right_t[:order].T * scale                     # (n, order)
    return linalg.expm(project @ A @ lift * dt), C @ lift


def whiteness_test(residuals: list[np.ndarray], *, lags: int = 20) -> tuple[float, str]:
    """Are the residuals white?  ``(p_value, sentence)`` of a Ljung-Box test.

    Per output, ``Q = sum_e N_e (N_e + 2) sum_{j <= lags} rho_j^2 / (N_e - j)`` over the
    experiments ``e`` (chi-squared with ``lags`` degrees of freedom per experiment for white
    residuals; Ljung and Box 1978), Bonferroni-combined over outputs.  Residuals at rounding
    level (an exact fit) count as white.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import signal
    >>> rng = np.random.default_rng(0)
    >>> white = rng.standard_normal((3000, 2))
    >>> coloured = signal.lfilter([1.0], [1.0, -0.9], white, axis=0)
    >>> bool(whiteness_test([white])[0] > 1e-3), bool(whiteness_test([coloured])[0] < 1e-3)
    (True, True)
    """
    used = [E for E in residuals if E.shape[0] > 2 * lags]
    if not used:
        return 1.0, "too few samples for the whiteness test"
    ny = used[0].shape[1]
    Q, dof = np.zeros(ny), 0
    for E in used:
        N = E.shape[0]
        E = E - E.mean(axis=0)
        power = np.sum(E ** 2, axis=0)
        power = np.where(power > 0, power, 1.0)           # a zero residual is white
        # sum_k E[k + j] E[k] for every lag j at once: the lagged copies of the zero-padded
        # residuals as a strided view, one product instead of a reduction per lag
        padded = np.concatenate([E, np.zeros((lags, E.shape[1]))])
        lagged = np.lib.stride_tricks.sliding_window_view(padded, lags + 1, axis=0)[:N, :, 1:]
        rho = np.einsum("ka,kaj->ja", E, lagged) / power
        Q += N * (N + 2) * np.sum(rho ** 2 / (N - np.arange(1, lags + 1))[:, None], axis=0)
        dof += lags
    p_values = special.chdtrc(dof, Q)             # chi2.sf, without scipy.stats' checks
    worst = int(np.argmin(p_values))
    p_value = float(min(1.0, p_values[worst] * ny))
    return p_value, (f"output {worst}: Ljung-Box Q = {Q[worst]:.3g} on {dof} dof over lags "
                     f"1..{lags}, p = {p_value:.2g}")
