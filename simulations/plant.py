"""Sample-exact and inter-sample-exact open-loop simulation of the true delayed plant.

The true plant is continuous, ``x'(t) = A_c x(t) + B_c u(t - r)`` with one delay ``r_j`` per input
channel (dissertation eq. 9.15), driven by inputs held over ``[kT, (k+1)T)``.  At the sampling
instants its exact discretization (eq. 9.65) is the recursion of
:meth:`dmdidc.DelayedPlant.simulate`, which :func:`simulate_plant` reuses.  Between samples,
:func:`intersample_trajectory` evaluates the variation-of-constants formula (eqs. 9.57, 9.70) in
closed form: inside period ``k`` channel ``j`` sees ``u_{k-w_j-1}`` on ``[kT, kT + p_j T)`` and
``u_{k-w_j}`` on ``[kT + p_j T, (k+1)T)``, so for ``0 <= tau <= T``

    x(kT + tau) = e^{A_c tau} x_k
                  + sum_j (N_old(tau) e_j u_{k-w_j-1, j} + N_new(tau) e_j u_{k-w_j, j})

with ``N_new[:, j] = Gamma(tau - p_j T) b_j`` (zero if ``tau <= p_j T``) and
``N_old[:, j] = e^{A_c (tau - s_j)} Gamma(s_j) b_j``, ``s_j = min(tau, p_j T)``.  Every matrix is a
block matrix exponential (:func:`dmdidc.discretization.zoh_matrices`): no ODE integration, exact
to rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import as_generator, check_finite_array, check_integer
from dmdidc.discretization import zoh_matrices
from dmdidc.model import DelayedPlant, as_plant

__all__ = ["simulate_plant", "intersample_trajectory"]

#: A noise sampler: ``sampler(rng, shape) -> ndarray of that shape``.
Sampler = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def _noise_array(name: str, noise: Any, shape: tuple[int, ...],
                 rng: np.random.Generator,
                 accepted: tuple[tuple[int, ...], ...] | None = None) -> np.ndarray | None:
    """Resolve a noise argument (None, explicit array or ``sampler(rng, shape)``) to an array.

    ``accepted`` lists the array shapes an explicit array may have (default: ``shape``); a sampler
    is always called with ``shape``.
    """
    if noise is None:
        return None
    if callable(noise) and not isinstance(noise, np.ndarray):
        return checked_output(f"the {name} sampler", noise(rng, shape), shape)
    array = check_finite_array(name, noise, ndim=len(shape))
    accepted = accepted or (shape,)
    if array.shape not in accepted:
        expected = " or ".join(str(s) for s in accepted)
        raise DimensionError(f"{name} has shape {array.shape}; expected {expected} (states along "
                             f"the rows, time along the columns)")
    return array


def checked_output(source: str, value: Any, shape: tuple[int, ...], detail: str = ""
                   ) -> np.ndarray:
    """What a user callable (noise sampler, controller) returned, as a finite float array of
    ``shape``, or an error naming ``source`` (``detail`` is appended to a non-finite report)."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DimensionError(f"{source} returned {type(value).__name__}, not a numeric array of "
                             f"shape {shape}") from exc
    if array.shape != shape:
        raise DimensionError(f"{source} returned shape {array.shape}; expected {shape}")
    if not np.isfinite(array).all():
        raise NonFiniteError(f"{source} returned NaN or infinite values {array.tolist()[:8]}"
                             f"{detail}")
    return array


def simulate_plant(plant: DelayedPlant, x0: Any, U: Any, *, U_past: Any = None,
                   process_noise: np.ndarray | Sampler | None = None,
                   rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Sample-exact open-loop response of the true delayed plant to a held input sequence.

    Computes ``x_{k+1} = A_d x_k + sum_{j=0}^{R} B^(j) u_{k-j} + w_k`` which, for a plant built with
    :meth:`dmdidc.DelayedPlant.from_continuous`, equals the continuous solution of
    ``x' = A_c x + B_c u(t - r)`` at ``t = kT`` (plus the discrete process noise ``w_k``).

    Parameters
    ----------
    plant : dmdidc.DelayedPlant
        The true plant (``n`` states, ``m`` inputs, ``R`` past periods).
    x0 : array_like, shape (n,)
        Initial state ``x(0)``.
    U : array_like, shape (m, K)
        Inputs ``u_0 .. u_{K-1}``; ``u_k`` is held over ``[kT, (k+1)T)``.
    U_past : array_like, shape (m, R), optional
        Inputs ``u_{-R} .. u_{-1}`` (oldest first); zero by default.
    process_noise : ndarray of shape (n, K) or callable, optional
        Additive discrete process noise ``w_k`` (added to ``x_{k+1}``), given explicitly or as a
        sampler ``sampler(rng, (n, K)) -> ndarray`` (see
        :func:`simulations.closed_loop.noise_sampler`).
    rng : numpy.random.Generator or int or None, optional
        Randomness for a noise sampler.

    Returns
    -------
    X : ndarray, shape (n, K + 1)
        States ``x_0 .. x_K``.

    Raises
    ------
    DimensionError
        If ``x0``, ``U``, ``U_past`` or the noise have the wrong shape.
    NonFiniteError
        If an argument contains NaN or infinite entries.

    References
    ----------
    Dissertation eqs. (9.15), (9.59)-(9.65).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=2.5, dt=2.0)
    >>> X = simulate_plant(plant, [1.0, 0.0], np.ones((2, 5)))
    >>> X.shape
    (2, 6)
    """
    plant = as_plant(plant, "plant")
    X = plant.simulate(x0, U, U_past)
    n, K = X.shape[0], X.shape[1] - 1
    W = _noise_array("process_noise", process_noise, (n, K), as_generator(rng))
    if W is not None:
        # By linearity the noise response is that of x_{k+1} = A_d x_k + w_k from x_0 = 0: the same
        # recursion with the identity as the only input block.
        noise_path = DelayedPlant(plant.A_d, np.eye(n)[None], plant.dt)
        X = X + noise_path.simulate(np.zeros(n), W)
    return X


# ---------------------------------------------------------------------- inter-sample evaluation
def _offset_matrices(plant: DelayedPlant, tau: float) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    """``(M, N_old, N_new)`` with ``x(kT + tau) = M x_k + N_old u_old + N_new u_new``."""
    A_c, B_c, dt = plant.A_c, plant.B_c, plant.dt
    n, m = B_c.shape
    M, _ = zoh_matrices(A_c, np.zeros((n, 0)), tau)
    N_old = np.zeros((n, m))
    N_new = np.zeros((n, m))
    for j, fraction in enumerate(plant.delay_fraction):
        b = B_c[:, j:j + 1]
        switch = fraction * dt
        if tau <= switch:
            N_old[:, j] = zoh_matrices(A_c, b, tau)[1][:, 0]
        else:
            Phi_rest, Gamma_rest_b = zoh_matrices(A_c, b, tau - switch)
            N_new[:, j] = Gamma_rest_b[:, 0]
            if switch > 0:
                N_old[:, j] = (Phi_rest @ zoh_matrices(A_c, b, switch)[1])[:, 0]
    return M, N_old, N_new


def states_between_samples(plant: DelayedPlant, X: np.ndarray, padded: np.ndarray,
                           period: np.ndarray, offset_index: np.ndarray,
                           offsets: np.ndarray) -> np.ndarray:
    """Exact states at ``t = period * T + offsets[offset_index]`` from the sampled states.

    Parameters
    ----------
    plant : DelayedPlant
        Plant with a continuous model.
    X : ndarray, shape (n, K + 1)
        Sampled states (any process noise already included: it acts at the sampling instants).
    padded : ndarray, shape (m, R + K)
        ``[U_past, U]``: column ``R + i`` holds ``u_i``.
    period : ndarray of int, shape (N,)
        Sampling period ``k`` in ``0 .. K - 1`` of each requested instant.
    offset_index : ndarray of int, shape (N,)
        Index into ``offsets`` of each requested instant.
    offsets : ndarray, shape (P,)
        Distinct offsets ``tau`` in ``[0, T]``.

    Returns
    -------
    ndarray, shape (n, N)
    """
    n, m, R = plant.n_states, plant.n_inputs, plant.max_delay
    w = plant.delay_steps
    cols_new = R + period[None, :] - w[:, None]                      # (m, N)
    cols_old = np.maximum(cols_new - 1, 0)   # only read where p_j > 0, then >= 0
    rows = np.arange(m)[:, None]
    u_new = padded[rows, cols_new]
    u_old = padded[rows, cols_old]
    out = np.empty((n, period.size))
    for index, tau in enumerate(offsets):
        sel = np.flatnonzero(offset_index == index)
        if sel.size == 0:
            continue
        M, N_old, N_new = _offset_matrices(plant, float(tau))
        out[:, sel] = M @ X[:, period[sel]] + N_old @ u_old[:, sel] + N_new @ u_new[:, sel]
    return out


def _padded_inputs(plant: DelayedPlant, U: Any, U_past: Any) -> np.ndarray:
    m, R = plant.n_inputs, plant.max_delay
    U = np.asarray(U, dtype=float)
    history = np.zeros((m, R)) if U_past is None else np.asarray(U_past, dtype=float)
    return np.concatenate([history, U], axis=1)


def fine_grid(plant: DelayedPlant, X: np.ndarray, U: Any, U_past: Any,
              points_per_step: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact states on ``points_per_step`` equally spaced instants per period (plus ``t = KT``).

    ``X`` (n, K + 1) are the sampled states, already validated against ``U`` (m, K).  The grid
    contains every sampling instant, where the fine states equal ``X`` exactly.
    """
    P = check_integer("points_per_step", points_per_step, minimum=1)
    plant.require_continuous("the inter-sample trajectory")
    K = X.shape[1] - 1
    dt = plant.dt
    times = np.arange(K * P + 1) / P * dt
    fine = np.empty((X.shape[0], K * P + 1))
    fine[:, -1] = X[:, -1]
    if K:
        period = np.repeat(np.arange(K), P)
        offset_index = np.tile(np.arange(P), K)
        offsets = np.arange(P) / P * dt
        fine[:, :-1] = states_between_samples(plant, X, _padded_inputs(plant, U, U_past),
                                              period, offset_index, offsets)
        fine[:, :-1:P] = X[:, :-1]   # offset 0 is the sample itself (M = I, N = 0)
    return times, fine


def intersample_trajectory(plant: DelayedPlant, x0: Any, U: Any, *, U_past: Any = None,
                           points_per_step: int | None = None,
                           times: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact continuous-time trajectory of the true plant, also between the sampling instants.

    Within period ``[kT, (k+1)T]`` channel ``j`` switches from ``u_{k-w_j-1}`` to ``u_{k-w_j}`` at
    ``kT + p_j T`` (``r_j = (w_j + p_j) T``).  The state at each instant is the closed-form
    variation-of-constants solution from the sampled state ``x_k`` (eq. 9.70) with matrices from
    one block exponential per sub-interval, so it is exact to rounding (no ODE solver).

    Parameters
    ----------
    plant : dmdidc.DelayedPlant
        The true plant; it must carry its continuous model (``A_c``, ``B_c``, ``delay``).
    x0 : array_like, shape (n,)
        Initial state.
    U : array_like, shape (m, K)
        Held inputs ``u_0 .. u_{K-1}``.
    U_past : array_like, shape (m, R), optional
        Inputs ``u_{-R} .. u_{-1}`` (oldest first); zero by default.
    points_per_step : int, optional
        Number ``P >= 1`` of equally spaced instants per sampling period (default 20).
    times : array_like, shape (N,), optional
        Arbitrary instants in ``[0, K T]`` (seconds) to evaluate instead of the uniform grid
        (not together with ``points_per_step``).

    Returns
    -------
    t : ndarray, shape (K P + 1,) or (N,)
        Instants ``0, T/P, ..., K T`` (or ``times``).
    X_fine : ndarray, shape (n, K P + 1) or (n, N)
        States at those instants; ``X_fine[:, ::P]`` equals the sampled states.

    Raises
    ------
    LogarithmError
        If the plant has no continuous model.
    DimensionError, NonFiniteError, ParameterError
        For badly shaped or non-finite arrays, ``points_per_step < 1``, ``times`` outside
        ``[0, K T]``, or both ``points_per_step`` and ``times``.

    References
    ----------
    Dissertation eqs. (9.57), (9.59)-(9.63), (9.70).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=2.5, dt=2.0)
    >>> t, X_fine = intersample_trajectory(plant, [1.0, 0.0], np.ones((2, 3)), points_per_step=4)
    >>> t.shape, X_fine.shape
    ((13,), (2, 13))
    >>> bool(np.allclose(X_fine[:, ::4], simulate_plant(plant, [1.0, 0.0], np.ones((2, 3)))))
    True
    """
    plant = as_plant(plant, "plant")
    plant.require_continuous("the inter-sample trajectory")
    X = plant.simulate(x0, U, U_past)
    if times is None:
        return fine_grid(plant, X, U, U_past, 20 if points_per_step is None else points_per_step)
    if points_per_step is not None:
        raise ParameterError("give points_per_step or times, not both (times replaces the "
                             "uniform grid)")
    t = check_finite_array("times", times, ndim=1)
    K, dt = X.shape[1] - 1, plant.dt
    horizon = K * dt
    if t.size and (t.min() < 0 or t.max() > horizon * (1 + 1e-12)):
        raise ParameterError(f"times must lie in [0, {horizon}] (K T with K = {K} inputs); got "
                             f"values in [{t.min()}, {t.max()}]")
    if K == 0:
        return t, np.repeat(X, t.size, axis=1)
    period = np.clip(np.floor(t / dt).astype(int), 0, K - 1)
    tau = np.clip(t - period * dt, 0.0, dt)
    offsets, offset_index = np.unique(tau, return_inverse=True)
    fine = states_between_samples(plant, X, _padded_inputs(plant, U, U_past), period,
                                  offset_index.ravel(), offsets)
    return t, fine
