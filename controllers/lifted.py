"""The exact lifted loop of a linear controller on a delayed plant, and its spectral radius.

A controller that follows the feedback protocol ``u_k = K_x x_k + sum_{i=1}^{H} K_u[i-1] u_{k-i}``
(:meth:`feedback_matrices`) closed around the plant
``x_{k+1} = A_d x_k + sum_{j=0}^{R} B^(j) u_{k-j}`` is a finite-dimensional linear recursion on
``z_k = [x_k, u_{k-1}, ..., u_{k-L}]`` with ``L = max(R, H)``.  Its spectral radius decides
asymptotic stability of the sampled loop exactly (and, with zero-order hold, of the continuous
loop, since the inter-sample response is a bounded linear map of ``z_k``).  A module below the
controllers, so that each can check its own loop when it is built (:mod:`controllers.analysis`
re-exports these functions beside its studies).

References
----------
Dissertation sec. 9.5, Figure 9.1 (truncated versus fractional controller at r = 1T, 1.25T, 1.5T).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import check_finite_array
from controllers.outputs import refuse_model_basis
from dmdidc.model import DelayedPlant, as_plant

__all__ = ["closed_loop_matrix", "feedback_gains", "lifted_loop", "spectral_radius"]


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
    ParameterError
        A controller designed on an output model (its ``output_matrix``), whose states are
        that model's own basis, on another plant (its states are not the controller's).

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
    refuse_model_basis(plant, controller)
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
    This is the spectral radius of the float64 lifted matrix, which is not always the exact
    loop's.  The lifted loop of a delay compensator has a nilpotent part (eigenvalues at zero
    in Jordan blocks about as long as the delay in periods), and a perturbation ``delta`` of
    the gains (their rounding, amplified when they are computed by a prediction over many
    periods) moves those eigenvalues to moduli about ``delta^(1/L)`` (``L`` a block's length):
    for a loop whose exact radius is 5e-4 (a two-input oscillator, ``Q = 1e4``), 0.0011,
    0.014, 0.084, 0.28 and 0.51 at delays of 3.3, 6.3, 12.3, 25.3 and 50.3 periods; 0.137
    against 0.100 at about 3 periods with three inputs.  The numbers are the matrices', not
    the eigenvalue routine's: 40-digit arithmetic on the same float64 matrices gives 0.085 and
    0.278 at 12.3 and 25.3 periods, and 0.137 in the three-input case.  So:

    * a computed radius below 1 means a stable loop (the loop's own eigenvalues are computed
      to rounding; only the nilpotent part's are moved), and at or above 1 an unstable one
      unless the delay is hundreds of periods (``delta^(1/L)`` nears 1);
    * a small computed radius of a long-delay loop is an upper estimate: the exact loop may
      settle much faster.  For a :class:`~controllers.FractionalDelayController` on its own
      model, ``nominal_spectral_radius`` is computed from the reduced loop (``n`` or ``n + m``
      states) and has no nilpotent part.  With a delay error of 0.1 period the same loops
      have radii 0.50-0.90, which are the loops' own (a change of their entries by 1e-12
      moves them by 1e-12).

    Until 2026-11-28 this note said the effect was 1e-8 to 1e-4.

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
