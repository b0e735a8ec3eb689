"""Exact zero-order-hold discretization of x' = A_c x + B_c u(t - r) with fractional input delays.

With ``u`` held over [kT, (k+1)T) and a delay r_j = (w_j + p_j) T on input channel j, channel j
acts over one sampling interval through two consecutive held inputs (dissertation eqs. 9.59-9.65):

    x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j},
    B^(w)[:, j]   = Gamma((1 - p) T) b_j,            (9.62)
    B^(w+1)[:, j] = e^{A_c (1 - p) T} Gamma(p T) b_j,  (9.63)

with Gamma(s) = int_0^s e^{A_c tau} d tau.  Every matrix is read off one block matrix exponential
(Van Loan), so the discretization is exact to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import expm

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import (
    check_allocation,
    check_finite_array,
    check_integer,
    check_nonnegative,
    check_positive,
)

__all__ = ["zoh_matrices", "split_delay", "delay_blocks", "required_max_delay",
           "first_active_blocks", "check_continuous", "checked_expm", "split_periods"]

#: Delays within this many sampling periods of a whole multiple are snapped to it, so that
#: r = 1.5 * 2.0 / 2.0 does not become w = 1, p = 0.4999999999999999 or w = 2, p = 1e-16.
_SNAP_STEPS = 1e-12
#: Delays of this many sampling periods or more are refused: beyond 2**53 a float no longer
#: holds the whole number of periods (and the blocks would not fit in memory anyway).
_MAX_PERIODS = 2.0 ** 53


def checked_expm(M: np.ndarray, what: str, scale: float = 1.0) -> np.ndarray:
    """``e^{M scale}``, or ``NonFiniteError`` naming ``what`` when it is not finite in float64.

    ``e^{A s}`` overflows when ``s`` times the largest real part of an eigenvalue of ``A``
    exceeds about 709, and scaling and squaring can fail (NaN) long before that when
    ``||A|| s`` is huge (e.g. ``1e300``); either way the result would be silently wrong.

    Parameters
    ----------
    M : ndarray, shape (k, k)
    what : str
        The arguments that made ``M``, for the message (e.g. ``"A_c = ..., dt = 2.0"``).
    scale : float, default 1.0
        A time span multiplying ``M`` (an overflowing product is refused, not warned about).

    Returns
    -------
    ndarray, shape (k, k)

    Raises
    ------
    NonFiniteError
        ``M`` or ``e^M`` has a NaN or infinite entry.

    Examples
    --------
    >>> checked_expm(np.array([[1.0]]), "A_c = 1, dt = 1.0")
    array([[2.71828183]])
    >>> checked_expm(np.array([[2000.0]]), "A_c = 1000, dt = 2.0")
    Traceback (most recent call last):
    ...
    _toolbox.errors.NonFiniteError: the matrix exponential of A_c = 1000, dt = 2.0 is not ...
    """
    with np.errstate(all="ignore"):
        M = M * scale
        result = expm(M) if np.all(np.isfinite(M)) else None
    if result is None or not np.all(np.isfinite(result)):
        norm = np.max(np.abs(M)) if np.all(np.isfinite(M)) else np.inf
        raise NonFiniteError(f"the matrix exponential of {what} is not finite in float64 (the "
                             f"exponent's largest entry is {norm:.3g}; e^x overflows beyond "
                             f"x = 709): reduce the time span or the rates")
    return result


def zoh_matrices(A: np.ndarray, B: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(e^{A s}, Gamma(s) B)`` with ``Gamma(s) = int_0^s e^{A tau} d tau``.

    Parameters
    ----------
    A : ndarray, shape (n, n)
    B : ndarray, shape (n, m)
    s : float
        Length of the hold interval (seconds), ``s >= 0``.

    Returns
    -------
    Phi : ndarray, shape (n, n)
    Gamma_B : ndarray, shape (n, m)

    Raises
    ------
    DimensionError
        ``A`` not square or ``B`` with another number of rows.
    NonFiniteError
        ``A`` or ``B`` with NaN or infinite entries, or a result that is not finite in
        float64 (``A s`` too large, :func:`checked_expm`).
    ParameterError
        ``s`` negative or not finite.

    Examples
    --------
    >>> import numpy as np
    >>> Phi, G = zoh_matrices(np.array([[-1.0]]), np.array([[1.0]]), 1.0)
    >>> bool(np.isclose(G[0, 0], 1 - np.exp(-1.0)))
    True
    """
    A, B = check_finite_array("A", A), check_finite_array("B", B)
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != A.shape[1] or B.shape[0] != A.shape[0]:
        raise DimensionError(f"A must be square (n, n) and B (n, m); got shapes {np.shape(A)} "
                             f"and {np.shape(B)}")
    s = check_nonnegative("hold length s", s)
    n, m = A.shape[0], B.shape[1]
    block = np.zeros((n + m, n + m))
    block[:n, :n] = A
    block[:n, n:] = B
    exp_block = checked_expm(block, f"[[A, B], [0, 0]] * s with s = {s!r}", s)
    return exp_block[:n, :n], exp_block[:n, n:]


def split_delay(delay: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Split delays ``r = (w + p) T`` into whole steps ``w`` (int) and fractions ``p`` in [0, 1).

    Parameters
    ----------
    delay : ndarray, shape (m,)
        Delays in seconds, ``>= 0``.
    dt : float
        Sampling period ``T`` in seconds.

    Returns
    -------
    steps : ndarray of int, shape (m,)
    fraction : ndarray of float, shape (m,)

    Raises
    ------
    NonFiniteError, ParameterError
        A NaN, infinite or negative delay, ``dt <= 0``, or a delay of ``2**53`` periods or
        more.

    Examples
    --------
    >>> split_delay(np.array([2.5, 4.0]), 2.0)
    (array([1, 2]), array([0.25, 0.  ]))
    """
    delay = _checked_delays(delay)
    with np.errstate(over="ignore"):
        ratio = delay / check_positive("dt", dt)
    if np.any(ratio >= _MAX_PERIODS):
        raise ParameterError(f"delay {delay.tolist()} s at dt = {dt!r} s is "
                             f"{float(np.max(ratio)):.3g} sampling periods; accepted: fewer "
                             f"than 2**53 = {_MAX_PERIODS:.3g} (whole periods exact in float64)")
    return split_periods(ratio)


def split_periods(ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_delay` of delays already in sampling periods (``r / T``, finite, ``>= 0``
    and below ``2**53``; not checked: for searches that split whole grids of delays they
    made themselves, where the checks cost as much as the split).

    Examples
    --------
    >>> split_periods(np.array([1.25, 2.0 - 1e-13]))
    (array([1, 2]), array([0.25, 0.  ]))
    """
    nearest = np.rint(ratio)             # np.round's own kernel for whole numbers
    ratio = np.where(np.abs(ratio - nearest) < _SNAP_STEPS * np.maximum(1.0, nearest), nearest,
                     ratio)
    steps = np.floor(ratio).astype(int)
    return steps, ratio - steps


def required_max_delay(delay: np.ndarray, dt: float) -> int:
    """Smallest ``R`` such that blocks ``B^(0..R)`` hold every channel's delay exactly."""
    steps, fraction = split_delay(delay, dt)
    return int(np.max(steps + (fraction > 0))) if np.size(steps) else 0


def first_active_blocks(active: np.ndarray) -> np.ndarray:
    """Whole delay ``w`` of each channel: index of its first active input block (eq. 9.66).

    Parameters
    ----------
    active : ndarray of bool, shape (R + 1, m)
        ``active[j, i]``: block ``B^(j)`` acts through input channel ``i``.

    Returns
    -------
    ndarray of int, shape (m,)
        ``-1`` for a channel without any active block.

    Examples
    --------
    >>> first_active_blocks(np.array([[False, False], [True, False], [True, False]]))
    array([ 1, -1])
    """
    active = np.asarray(active, dtype=bool)
    return np.where(active.any(axis=0), np.argmax(active, axis=0), -1)


def check_continuous(A_c: Any, B_c: Any, delay: Any
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate a continuous model: ``A_c`` (n, n), ``B_c`` (n, m), delays (m,) ``>= 0`` s.

    A scalar delay is the same for every channel.  Raises ``DimensionError``,
    ``NonFiniteError`` or ``ParameterError`` naming the argument.
    """
    A_c = check_finite_array("A_c", A_c, ndim=2)
    B_c = check_finite_array("B_c", B_c, ndim=2)
    if A_c.shape[0] != A_c.shape[1]:
        raise DimensionError(f"A_c must be square; got shape {A_c.shape}")
    n, m = B_c.shape
    if n != A_c.shape[0]:
        raise DimensionError(f"B_c has {n} rows; expected {A_c.shape[0]} (the size of A_c)")
    delay = _checked_delays(delay)
    if delay.ndim == 0:
        delay = np.full(m, float(delay))
    if delay.shape != (m,):
        raise DimensionError(f"delay has shape {delay.shape}; expected a scalar or ({m},) (one "
                             f"per input channel, the columns of B_c)")
    return A_c, B_c, delay


def _checked_delays(delay: Any) -> np.ndarray:
    delay = check_finite_array("delay", delay)
    if np.any(delay < 0):
        raise ParameterError(f"delay must be >= 0 seconds; got {delay.tolist()}")
    return delay


def delay_blocks(A_c: np.ndarray, B_c: np.ndarray, delay: np.ndarray, dt: float,
                 max_delay: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact discretization ``(A_d, B_blocks)`` of a continuous plant with per-channel delays.

    Parameters
    ----------
    A_c : ndarray, shape (n, n)
    B_c : ndarray, shape (n, m)
    delay : float or ndarray, shape (m,)
        Input delay of each channel in seconds (a scalar: the same for every channel).
    dt : float
        Sampling period ``T`` (seconds).
    max_delay : int, optional
        Number ``R`` of past periods represented (blocks ``0..R``).  Defaults to the smallest
        sufficient value, :func:`required_max_delay`.

    Returns
    -------
    A_d : ndarray, shape (n, n)
    B_blocks : ndarray, shape (R + 1, n, m)

    Raises
    ------
    DimensionError, NonFiniteError
        ``A_c`` not square, ``B_c`` with the wrong number of rows, ``delay`` not of shape
        ``(m,)``, NaN or infinite entries, or a discretization that overflows float64
        (e.g. ``e^{A_c dt}`` with ``A_c dt > 709``).
    ParameterError
        A negative delay, ``dt <= 0``, ``max_delay`` too small for the delays, or blocks
        beyond :data:`~_toolbox.validation.ALLOCATION_LIMIT_BYTES`.

    References
    ----------
    Dissertation eqs. (9.59)-(9.65).

    Examples
    --------
    >>> A_d, blocks = delay_blocks(np.array([[-1.0]]), np.array([[1.0]]), np.array([0.5]), 1.0)
    >>> blocks.shape, bool(np.isclose(blocks.sum(), 1 - np.exp(-1.0)))
    ((2, 1, 1), True)
    """
    dt = check_positive("dt", dt)
    A_c, B_c, delay = check_continuous(A_c, B_c, delay)
    n, m = B_c.shape
    needed = required_max_delay(delay, dt)
    R = needed if max_delay is None else check_integer("max_delay", max_delay, minimum=0)
    if R < needed:
        raise ParameterError(f"max_delay={R} is too small for delays {delay.tolist()} s at "
                             f"dt={dt}: at least {needed} past periods are needed")
    check_allocation(f"max_delay = {R}", (R + 1, n, m))
    steps, fraction = split_delay(delay, dt)
    try:
        A_d, _ = zoh_matrices(A_c, B_c, dt)
    except NonFiniteError as exc:
        raise NonFiniteError(f"A_c (largest |entry| {np.max(np.abs(A_c)):.3g}) with dt = "
                             f"{dt!r} has no float64 discretization: {exc}") from exc
    blocks = np.zeros((R + 1, n, m))
    for j in range(m):
        b = B_c[:, j:j + 1]
        s = (1.0 - fraction[j]) * dt
        Phi_s, Gamma_s_b = zoh_matrices(A_c, b, s)
        blocks[steps[j], :, j] = Gamma_s_b[:, 0]
        if fraction[j] > 0:
            _, Gamma_p_b = zoh_matrices(A_c, b, fraction[j] * dt)
            blocks[steps[j] + 1, :, j] = (Phi_s @ Gamma_p_b)[:, 0]
    return A_d, blocks
