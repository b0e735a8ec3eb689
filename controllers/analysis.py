"""Exact closed-loop stability of linear delay-compensating controllers, without simulation.

A controller that follows the feedback protocol ``u_k = K_x x_k + sum_{i=1}^{H} K_u[i-1] u_{k-i}``
(:meth:`feedback_matrices`) closed around the *true* delayed plant
``x_{k+1} = A_d x_k + sum_{j=0}^{R} B^(j) u_{k-j}`` is a finite-dimensional linear recursion on
``z_k = [x_k, u_{k-1}, ..., u_{k-L}]`` with ``L = max(R, H)``.  Its spectral radius decides
asymptotic stability of the sampled loop exactly (and, with zero-order hold, of the continuous
loop, since the inter-sample response is a bounded linear map of ``z_k``).

References
----------
Dissertation sec. 9.5, Figure 9.1 (truncated versus fractional controller at r = 1T, 1.25T, 1.5T).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.plotting import new_figure, save_figure
from _toolbox.validation import check_allocation, check_finite_array, check_positive
from controllers.factory import LINEAR_CONTROLLER_NAMES, make_controller
from controllers.gains import lqr_gain
from dmdidc.model import DelayedPlant, as_plant

__all__ = [
    "closed_loop_matrix",
    "feedback_gains",
    "lifted_loop",
    "spectral_radius",
    "DelayMismatchStudy",
    "delay_mismatch_study",
    "plot_delay_mismatch",
]


def feedback_gains(controller: Any, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The validated gains of a linear controller for a plant with ``n`` states, ``m`` inputs.

    Parameters
    ----------
    controller : object with ``feedback_matrices() -> (K_x, K_u)``
    n, m : int

    Returns
    -------
    K_x : ndarray, shape (m, n)
    K_u : ndarray, shape (H, m, m)
        ``K_u[i-1]`` multiplies ``u_{k-i}`` (``None`` or an empty array: ``H = 0``).

    Raises
    ------
    ParameterError
        ``controller`` has no ``feedback_matrices``.
    DimensionError, NonFiniteError
        Gains of the wrong shape or with NaN/inf entries.
    """
    if not callable(getattr(controller, "feedback_matrices", None)):
        raise ParameterError(f"controller must provide feedback_matrices() -> (K_x, K_u); got "
                             f"{type(controller).__name__}")
    K_x, K_u = controller.feedback_matrices()
    K_x = check_finite_array("K_x", K_x, ndim=2)
    if K_x.shape != (m, n):
        raise DimensionError(f"K_x has shape {K_x.shape}; expected {(m, n)} (inputs x states) "
                             f"for a plant with {n} states and {m} inputs")
    K_u = np.zeros((0, m, m)) if K_u is None else check_finite_array("K_u", K_u)
    if K_u.size == 0 and K_u.ndim < 3:
        K_u = np.zeros((0, m, m))
    if K_u.ndim != 3 or K_u.shape[1:] != (m, m):
        raise DimensionError(f"K_u has shape {K_u.shape}; expected (H, {m}, {m}) (K_u[i-1] "
                             f"multiplies u_(k-i))")
    return K_x, K_u


def lifted_loop(plant: DelayedPlant, K_x: np.ndarray, K_u: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(F, G, C)`` of the loop ``z_{k+1} = F z_k + G u_k``, ``u_k = C z_k``.

    ``z_k = [x_k, u_{k-1}, ..., u_{k-L}]`` with ``L = max(R, H)``: the plant's lifted
    realization (:meth:`~dmdidc.DelayedPlant.lifted_matrices`, padded to ``L`` past inputs) and
    the control law as a row block over ``z_k``.  The closed-loop matrix is ``F + G C``.

    Parameters
    ----------
    plant : DelayedPlant
    K_x : ndarray, shape (m, n)
    K_u : ndarray, shape (H, m, m)

    Returns
    -------
    F : ndarray, shape (n + m L, n + m L)
    G : ndarray, shape (n + m L, m)
    C : ndarray, shape (m, n + m L)
    """
    n, m, R = plant.n_states, plant.n_inputs, plant.max_delay
    H = K_u.shape[0]
    L = max(R, H)
    blocks = np.concatenate([plant.B_blocks, np.zeros((L - R, n, m))], axis=0)
    F, G = DelayedPlant(plant.A_d, blocks, plant.dt).lifted_matrices()
    C = np.zeros((m, n + m * L))
    C[:, :n] = K_x
    for i in range(H):
        C[:, n + m * i:n + m * (i + 1)] = K_u[i]
    return F, G, C


def closed_loop_matrix(true_plant: Any, controller: Any) -> np.ndarray:
    """Lifted closed-loop matrix of a linear controller on the true delayed plant.

    Parameters
    ----------
    true_plant : DelayedPlant or fitted estimator
        The plant the loop runs on (true delays), ``R = true_plant.max_delay``.
    controller : object with ``feedback_matrices() -> (K_x (m, n), K_u (H, m, m))``
        E.g. :class:`~controllers.PredictiveController`,
        :class:`~controllers.FractionalDelayController`, :class:`~controllers.NaiveStateFeedback`.

    Returns
    -------
    M : ndarray, shape (n + m L, n + m L)
        ``z_{k+1} = M z_k`` with ``z_k = [x_k, u_{k-1}, ..., u_{k-L}]``, ``L = max(R, H)``.

    Raises
    ------
    NonFiniteError
        The product of the plant's input blocks and the gains overflows float64.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from controllers import FractionalDelayController, lqr_gain
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=2.5, dt=2.0)
    >>> closed_loop_matrix(plant, FractionalDelayController(plant, lqr_gain(plant))).shape
    (6, 6)
    """
    plant = as_plant(true_plant)
    F, G, C = lifted_loop(plant, *feedback_gains(controller, plant.n_states, plant.n_inputs))
    with np.errstate(over="ignore", invalid="ignore"):
        M = F + G @ C
    if not np.all(np.isfinite(M)):
        raise NonFiniteError(f"the closed-loop matrix overflows float64 (largest |B^(j)| "
                             f"{np.max(np.abs(plant.B_blocks), initial=0):.3g}, largest |gain| "
                             f"{np.max(np.abs(C), initial=0):.3g}): the loop has no finite "
                             f"spectrum to analyse")
    return M


def spectral_radius(true_plant: Any, controller: Any) -> float:
    """Spectral radius of :func:`closed_loop_matrix`; the loop is asymptotically stable iff < 1.

    Parameters
    ----------
    true_plant : DelayedPlant or fitted estimator
    controller : object with ``feedback_matrices()``

    Returns
    -------
    float

    Notes
    -----
    The lifted loop of a delay compensator usually has a nilpotent part (eigenvalues at zero in
    Jordan blocks of size up to ``L``); their computed moduli are ``~ eps^(1/size)`` (about
    1e-8 to 1e-4), which only matters for loops whose true radius is that small.

    Examples
    --------
    >>> from dmdidc import DelayedPlant
    >>> from controllers import FractionalDelayController, PredictiveController, lqr_gain
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=3.0, dt=2.0)
    >>> K = lqr_gain(plant)
    >>> spectral_radius(plant, FractionalDelayController(plant, K)) < 1
    True
    >>> spectral_radius(plant, PredictiveController(plant, K)) < 1
    False
    """
    return float(np.max(np.abs(np.linalg.eigvals(closed_loop_matrix(true_plant, controller)))))


@dataclass(frozen=True)
class DelayMismatchStudy:
    """Spectral radius of each controller versus the error of the delay estimate.

    Attributes
    ----------
    offsets : ndarray, shape (P,)
        Delay estimate error ``r_hat - r`` in seconds.
    spectral_radius : dict of str to ndarray, shape (P,)
        One curve per controller name.
    true_delay : ndarray, shape (m,)
    dt : float
    """

    offsets: np.ndarray
    spectral_radius: dict[str, np.ndarray] = field(repr=False)
    true_delay: np.ndarray
    dt: float

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation."""
        return {"offsets": self.offsets.tolist(), "true_delay": self.true_delay.tolist(),
                "dt": self.dt,
                "spectral_radius": {k: v.tolist() for k, v in self.spectral_radius.items()}}


def delay_mismatch_study(A_c: Any, B_c: Any, dt: float, true_delay: Any, K: Any = None,
                         offsets: Any = None, *,
                         controllers: Sequence[str] = ("truncated", "exact", "fractional")
                         ) -> DelayMismatchStudy:
    """Exact closed-loop spectral radius when the controller's delay estimate is wrong.

    For each offset ``d``, the controllers are built on the exact model with delay
    ``true_delay + d`` (same ``A_c``, ``B_c``) and closed around the plant with ``true_delay``.

    Parameters
    ----------
    A_c : array_like, shape (n, n)
    B_c : array_like, shape (n, m)
    dt : float
        Sampling period ``T``, seconds.
    true_delay : float or array_like, shape (m,)
        True delay(s), seconds.
    K : array_like, shape (m, n), optional
        Gain used by every controller; default ``lqr_gain`` (Q = I, R = I) on the true
        ``(A_d, B_d)``.
    offsets : array_like, shape (P,), optional
        Delay estimate errors in seconds (added to every channel); default
        ``np.linspace(-0.5, 0.5, 41) * dt``.  Estimates must stay ``>= 0``.
    controllers : sequence of {"truncated", "exact", "fractional", "naive"}
        Linear controllers (:data:`controllers.LINEAR_CONTROLLER_NAMES`) to compare.

    Returns
    -------
    DelayMismatchStudy

    Examples
    --------
    >>> study = delay_mismatch_study([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 2.0, 2.5,
    ...                              offsets=[-0.2, 0.0, 0.2])
    >>> bool(study.spectral_radius["fractional"][1] < 1)
    True
    """
    dt = check_positive("dt", dt)
    true_plant = DelayedPlant.from_continuous(A_c, B_c, true_delay, dt)
    if true_plant.n_inputs == 0:
        raise ParameterError(f"B_c has shape {true_plant.B_c.shape}: no input, no delay to "
                             f"mismatch; give at least one input column")
    # every offset's lifted loop has at least the true plant's size: refuse it before building
    size = true_plant.n_states + true_plant.n_inputs * true_plant.max_delay
    check_allocation(f"true_delay = {np.asarray(true_delay).tolist()} s at dt = {dt} s "
                     f"({true_plant.max_delay} periods)", (size, size),
                     accepted="a delay of fewer periods (the lifted loop holds every input "
                              "still in flight)")
    if K is None:
        K = lqr_gain(true_plant)
    offsets = np.linspace(-0.5, 0.5, 41) * dt if offsets is None else \
        check_finite_array("offsets", offsets, ndim=1)
    names = tuple(controllers)
    for name in names:
        if name not in LINEAR_CONTROLLER_NAMES:
            raise ParameterError(f"controllers must be taken from {LINEAR_CONTROLLER_NAMES}; "
                                 f"got {name!r}")
    if np.min(true_plant.delay) + np.min(offsets, initial=0.0) < 0:
        raise ParameterError(f"offsets must keep every delay estimate >= 0; smallest true delay "
                             f"{float(np.min(true_plant.delay))} s, smallest offset "
                             f"{float(np.min(offsets))} s")
    radii = {name: np.empty(offsets.shape[0]) for name in names}
    for index, offset in enumerate(offsets):
        model = DelayedPlant.from_continuous(A_c, B_c, true_plant.delay + offset, dt)
        for name in names:
            radii[name][index] = spectral_radius(true_plant, make_controller(name, model, K))
    for value in radii.values():
        value.flags.writeable = False
    offsets = np.array(offsets, dtype=float)
    offsets.flags.writeable = False
    return DelayMismatchStudy(offsets, radii, np.array(true_plant.delay), dt)


def plot_delay_mismatch(study: DelayMismatchStudy, path: str | Path, *,
                        title: str | None = None) -> Path:
    """Write a PNG of spectral radius versus delay-estimate error (matplotlib OO API, Agg).

    Parameters
    ----------
    study : DelayMismatchStudy
    path : str or Path
        Output file (``.png``); parent directories are created.
    title : str, optional

    Returns
    -------
    Path
    """
    fig = new_figure((6.0, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    for name, radius in study.spectral_radius.items():
        ax.plot(study.offsets / study.dt, radius, marker=".", label=name)
    ax.axhline(1.0, color="k", linewidth=0.8, linestyle="--", label="stability limit")
    ax.set_xlabel("delay estimate error (r_hat - r) / T")
    ax.set_ylabel("closed-loop spectral radius")
    delays = ", ".join(f"{d / study.dt:g}" for d in np.unique(study.true_delay))
    ax.set_title(title or f"Delay mismatch, true delay = {delays} T")
    ax.legend()
    ax.grid(True, alpha=0.3)
    return save_figure(fig, path)
