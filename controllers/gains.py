"""State-feedback gain design for the delay-free discrete pair of a delayed plant.

With predictive (eq. 9.13) or fractional-delay (eq. 9.74) feedback the closed loop of an
input-delayed plant reduces to ``x_{k+1} = (A_d - B_d K) x_k`` (eqs. 9.14, 9.75), so ``K`` is
designed on the delay-free discrete pair ``(A_d, B_d)`` with standard tools.  Both functions
accept either a :class:`~dmdidc.DelayedPlant` (or a fitted estimator exposing ``model_``), in
which case the pair is ``(plant.A_d, plant.B_d)`` with ``B_d`` the sum of the input blocks, or
the two matrices.

References
----------
Dissertation sec. 9.3, eqs. (9.12)-(9.14); sec. 9.4.3, eq. (9.75).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError, SolverError
from _toolbox.validation import check_finite_array, check_in_interval
from dmdidc.model import as_plant

__all__ = ["lqr_gain", "place_gain", "is_schur", "output_weight"]

#: Closed loops whose spectral radius exceeds ``1 - _SCHUR_MARGIN`` are reported as not stable.
_SCHUR_MARGIN = 1e-10
#: Ridge of :func:`output_weight`, relative to ``||C||_2^2`` (so it is the same in any output
#: units): a state the sensors do not see still gets a definite, negligible weight.
_OUTPUT_RIDGE = 1e-6


def output_weight(C: Any) -> np.ndarray:
    """The state weight of an output model: ``C^T C + 1e-6 ||C||_2^2 I``.

    An identified output model's states are its own basis' (an
    :class:`~dmdidc.OutputDMDidc`'s are canonical variates), so the identity weighs quantities
    without physical meaning and the design changes with the basis; ``C^T C`` weighs the
    outputs, ``y^T y = x^T C^T C x``, the same in any basis.  The ridge keeps the weight
    definite for states the sensors do not see.  The default ``Q`` of :func:`lqr_gain`,
    :class:`~controllers.DelayedMPC` and :func:`~controllers.make_controller` for a model that
    carries ``C``.

    Parameters
    ----------
    C : array_like, shape (l, n)

    Returns
    -------
    Q : ndarray, shape (n, n)

    Examples
    --------
    >>> output_weight([[2.0, 0.0]]).round(9).tolist()     # the unseen state: the ridge only
    [[4.000004, 0.0], [0.0, 4e-06]]
    """
    C = check_finite_array("C", C, ndim=2)
    return C.T @ C + _OUTPUT_RIDGE * float(np.linalg.norm(C, 2)) ** 2 * np.eye(C.shape[1])


def default_state_weight(model: Any) -> np.ndarray | None:
    """:func:`output_weight` of a model that carries its measurement matrix ``C`` (an output
    model), else ``None`` (the identity)."""
    C = getattr(model, "C", None)
    return None if C is None else output_weight(C)


def is_schur(matrix: Any, *, margin: float = _SCHUR_MARGIN) -> bool:
    """Whether every eigenvalue of a square matrix lies strictly inside the unit circle.

    Parameters
    ----------
    matrix : array_like, shape (N, N)
    margin : float, optional
        Eigenvalues with modulus ``>= 1 - margin`` count as not stable.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_schur([[0.5, 1.0], [0.0, -0.9]])
    True
    """
    matrix = check_finite_array("matrix", matrix, ndim=2)
    margin = check_in_interval("margin", margin, 0.0, 1.0, high_open=True)
    if matrix.size == 0:
        return True
    return bool(np.max(np.abs(np.linalg.eigvals(matrix))) < 1.0 - margin)


def _design_pair(model_or_A: Any, B: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(A_d, B_d)`` from a plant / fitted estimator, or validate two matrices."""
    if B is None:
        try:
            plant = as_plant(model_or_A)
        except ParameterError as exc:
            raise ParameterError(f"model_or_A must be a DelayedPlant, a fitted estimator, or a "
                                 f"matrix A_d given together with B; got "
                                 f"{type(model_or_A).__name__} and B=None") from exc
        return np.array(plant.A_d), np.array(plant.B_d)
    if any(hasattr(obj, name) for obj in (model_or_A, type(model_or_A))
           for name in ("A_d", "model_")):
        raise ParameterError("B must be omitted when model_or_A is a plant or an estimator "
                             "(its B_d is used)")
    A = check_finite_array("A_d", model_or_A, ndim=2)
    B = check_finite_array("B", B)
    if B.ndim == 1:
        B = B[:, None]
    if B.ndim != 2:
        raise DimensionError(f"B must be 2-dimensional with shape (n, m); got shape {B.shape}")
    n = A.shape[0]
    if A.shape != (n, n) or n == 0:
        raise DimensionError(f"A_d must be square and non-empty; got shape {A.shape}")
    if B.shape[0] != n or B.shape[1] == 0:
        raise DimensionError(f"B has shape {B.shape}; expected ({n}, m) with m >= 1 "
                             f"(rows = size of A_d)")
    return A, B


def check_weight(name: str, W: Any, size: int, *, definite: bool) -> np.ndarray:
    """Validate a quadratic weight: ``None`` (identity), a scalar, a diagonal or a matrix.

    Returns the symmetric ``(size, size)`` matrix; raises ``ParameterError`` unless it is
    symmetric positive semidefinite (positive definite with ``definite=True``).
    """
    if W is None:
        return np.eye(size)
    W = check_finite_array(name, W)
    if W.ndim == 0:
        W = float(W) * np.eye(size)
    elif W.ndim == 1:
        if W.shape != (size,):
            raise DimensionError(f"{name} given as a diagonal has shape {W.shape}; expected "
                                 f"({size},)")
        W = np.diag(W)
    if W.shape != (size, size):
        raise DimensionError(f"{name} has shape {W.shape}; expected a scalar, ({size},) or "
                             f"{(size, size)}")
    scale = max(1.0, float(np.max(np.abs(W))))
    if not np.allclose(W, W.T, rtol=0.0, atol=1e-12 * scale):
        raise ParameterError(f"{name} must be symmetric; max |{name} - {name}^T| = "
                             f"{float(np.max(np.abs(W - W.T))):.3g}")
    W = 0.5 * W + 0.5 * W.T             # (W + W.T) / 2 overflows for entries near 1e308
    smallest = float(np.min(np.linalg.eigvalsh(W)))
    if definite and smallest <= 1e-12 * scale:
        raise ParameterError(f"{name} must be symmetric positive definite; its smallest "
                             f"eigenvalue is {smallest:.3g}")
    if not definite and smallest < -1e-10 * scale:
        raise ParameterError(f"{name} must be symmetric positive semidefinite; its smallest "
                             f"eigenvalue is {smallest:.3g}")
    return W


def _check_result(K: np.ndarray, A: np.ndarray, B: np.ndarray, method: str) -> np.ndarray:
    K = np.asarray(K, dtype=float)
    if K.shape != (B.shape[1], A.shape[0]):
        raise SolverError(f"{method} returned a gain of shape {K.shape}; expected "
                          f"{(B.shape[1], A.shape[0])}")
    if not np.all(np.isfinite(K)):
        raise SolverError(f"{method} returned a gain with NaN or infinite entries")
    radius = float(np.max(np.abs(np.linalg.eigvals(A - B @ K))))
    if radius >= 1.0 - _SCHUR_MARGIN:
        raise SolverError(f"{method} gain does not stabilize the delay-free pair: spectral "
                          f"radius of A_d - B_d K is {radius:.6g}; expected < 1")
    return K


def lqr_gain(model_or_A: Any, B: Any = None, *, Q: Any = None, R: Any = None) -> np.ndarray:
    """Discrete LQR gain ``K`` for ``x_{k+1} = A_d x_k + B_d u_k`` (``u_k = -K x_k``).

    Minimizes ``sum_k x_k^T Q x_k + u_k^T R u_k`` with :func:`control.dlqr`.

    Parameters
    ----------
    model_or_A : DelayedPlant, fitted estimator or array_like, shape (n, n)
        A plant (then ``A_d`` and ``B_d = sum_j B_blocks[j]`` are used, the delay-free pair of
        eq. 9.14) or the matrix ``A_d``.
    B : array_like, shape (n, m), optional
        Input matrix; required with a matrix ``model_or_A``, omitted with a plant.
    Q : array_like, shape (n, n), optional
        Symmetric positive semidefinite state weight.  Default: the identity, or for a model
        that carries a measurement matrix ``C`` (an :class:`~dmdidc.OutputDMDidc`, whose states
        are canonical variates) :func:`output_weight`, ``C^T C + 1e-6 ||C||^2 I``.
    R : array_like, shape (m, m), optional
        Symmetric positive definite input weight (default identity).

    Returns
    -------
    K : ndarray, shape (m, n)
        Finite gain with ``A_d - B_d K`` Schur stable.

    Raises
    ------
    DimensionError, NonFiniteError, ParameterError
        Wrong shapes, NaN/inf entries, weights that are not symmetric PSD / PD, or an
        unstabilizable pair (a mode with ``|lambda| >= 1`` that no input reaches).
    SolverError
        The Riccati equation has no stabilizing solution otherwise (e.g. an unstable mode
        unobservable through ``Q``), or the result is not finite / not stabilizing.

    References
    ----------
    Dissertation eqs. (9.13)-(9.14), (9.75): the predictive and fractional controllers give the
    closed loop ``A_d - B_d K``.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=2.5, dt=2.0)
    >>> K = lqr_gain(plant)
    >>> K.shape
    (2, 2)
    >>> bool(np.max(np.abs(np.linalg.eigvals(plant.A_d - plant.B_d @ K))) < 1)
    True
    """
    import control

    if Q is None and B is None:         # a model (a pair of matrices carries no C)
        Q = default_state_weight(model_or_A)
    A, B = _design_pair(model_or_A, B)
    Q = check_weight("Q", Q, A.shape[0], definite=False)
    R = check_weight("R", R, B.shape[1], definite=True)
    try:
        K, _, _ = control.dlqr(A, B, Q, R)
    except (ValueError, np.linalg.LinAlgError, control.ControlArgument) as exc:
        _refuse_unreached_mode(A, B, exc)
        raise SolverError(f"control.dlqr found no stabilizing solution for this (A_d, B_d, Q, R): "
                          f"{exc}") from exc
    try:
        return _check_result(K, A, B, "lqr_gain")
    except SolverError as exc:
        # dlqr may return a gain for an unstabilizable pair (B = 0 against a mode at 1.23:
        # radius 1.23197, a SolverError that did not name the mode): the same refusal
        _refuse_unreached_mode(A, B, exc)
        raise


def _refuse_unreached_mode(A: np.ndarray, B: np.ndarray, cause: Exception) -> None:
    """When the Riccati solver found no stabilizing gain (it failed, or its gain does not
    stabilize the pair), refuse the pair as bad input if a mode
    on or outside the unit circle is reached by no input (its left eigenvector ``y`` has
    ``y^H B = 0``, relative to ``|y| |B|``: the test is blind to the inputs' units and the
    sampling period): no gain can stabilize it (``B = 0`` raised a SolverError from inside the
    solver).  Asked only after the solver failed, so a weakly reached mode is never refused."""
    values, left = linalg.eig(A, left=True, right=False)
    size = float(np.linalg.norm(B))
    for value, y in zip(values, left.T, strict=True):
        # (a rotation's |lambda| = 1 comes out 1 - 1e-16: the margin of the Schur test)
        if abs(value) < 1.0 - _SCHUR_MARGIN:
            continue
        reach = float(np.linalg.norm(y.conj() @ B)) / max(float(np.linalg.norm(y)) * size,
                                                          1e-300)
        if reach <= 1e-10:
            raise ParameterError(
                f"the plant is not stabilizable: its mode {value:.10g} (|lambda| = "
                f"{abs(value):.10g} >= 1 of A_d) is reached by no input (rank [A_d - lambda I, "
                f"B_d] < {A.shape[0]}), so no feedback gain can stabilize it; check the "
                f"model's input matrix (all zero?) or control a model without that mode"
            ) from cause


def place_gain(model_or_A: Any, B: Any = None, *, poles: Any) -> np.ndarray:
    """Pole-placement gain ``K`` so that ``eig(A_d - B_d K)`` equals ``poles``.

    Parameters
    ----------
    model_or_A : DelayedPlant, fitted estimator or array_like, shape (n, n)
        A plant (its delay-free pair ``(A_d, B_d)`` is used, eq. 9.14) or the matrix ``A_d``.
    B : array_like, shape (n, m), optional
        Input matrix; required with a matrix ``model_or_A``.
    poles : array_like, shape (n,)
        Desired discrete closed-loop poles, strictly inside the unit circle; complex poles in
        conjugate pairs; no pole repeated more than ``rank(B)`` times.

    Returns
    -------
    K : ndarray, shape (m, n)

    Raises
    ------
    DimensionError, NonFiniteError
        Wrong shapes or NaN/inf entries.
    ParameterError
        Poles on or outside the unit circle, not in conjugate pairs, or not placeable.
    SolverError
        The computed gain is not finite or does not stabilize the pair.

    References
    ----------
    Dissertation eqs. (9.14), (9.75).

    Examples
    --------
    >>> import numpy as np
    >>> K = place_gain(np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([[0.0], [1.0]]),
    ...                poles=[0.5, 0.4])
    >>> np.sort(np.linalg.eigvals(np.array([[1.0, 1.0], [0.0, 1.0]])
    ...                           - np.array([[0.0], [1.0]]) @ K).real).round(6)
    array([0.4, 0.5])
    """
    import control

    A, B = _design_pair(model_or_A, B)
    try:
        poles = np.asarray(poles, dtype=complex)
    except OverflowError as exc:            # an integer beyond the float range
        raise NonFiniteError("poles has an entry beyond the float range") from exc
    except (TypeError, ValueError) as exc:
        raise DimensionError(f"poles must be a numeric array; got {type(poles).__name__}") from exc
    poles = poles.reshape(-1) if poles.ndim == 0 else poles
    if poles.ndim != 1 or poles.shape[0] != A.shape[0]:
        raise DimensionError(f"poles has shape {poles.shape}; expected ({A.shape[0]},) "
                             f"(one per state)")
    if not np.all(np.isfinite(poles)):
        raise NonFiniteError("poles contains NaN or infinite entries")
    if np.any(np.abs(poles) >= 1.0):
        raise ParameterError(f"poles must lie strictly inside the unit circle (|p| < 1); got "
                             f"moduli {np.round(np.abs(poles), 6).tolist()}")
    if not np.allclose(np.sort_complex(poles), np.sort_complex(poles.conj()), atol=1e-12):
        raise ParameterError("poles must be real or come in complex-conjugate pairs")
    if np.allclose(poles.imag, 0.0):
        poles = poles.real
    try:
        K = control.place(A, B, poles)
    except (ValueError, np.linalg.LinAlgError, control.ControlArgument) as exc:
        raise ParameterError(f"poles {np.round(poles, 6).tolist()} cannot be placed for this "
                             f"(A_d, B_d): {exc}") from exc
    return _check_result(K, A, B, "place_gain")


def _check_gain(K: Any, n: int, m: int) -> np.ndarray:
    """Validate a feedback gain of shape (m, n); return a float copy."""
    K = check_finite_array("K", K)
    if K.ndim == 1 and m == 1:
        K = K[None, :]
    if K.shape != (m, n):
        raise DimensionError(f"K has shape {K.shape}; expected ({m}, {n}) "
                             f"(inputs x states)")
    return np.array(K, dtype=float)
