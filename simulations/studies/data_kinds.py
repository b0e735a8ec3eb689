"""The data practitioners record, on random plants: is a fit right, or does it say it may not be?

A *data kind* is a way real identification data depart from the idealized experiment (white
inputs, every state measured, open loop, white measurement noise): feedback, coloured noise,
low-pass or multisine inputs, a sensor offset, fewer signals than states, outliers, a state
that saturates (a nonlinear plant), a stuck sensor, a delay that changes mid-record.
:func:`make_data` draws a data set of one kind from a random stable plant
(:func:`random_plant`), :func:`assess` fits it and classifies the outcome:

* **right**: every channel's delay within ``delay_tolerance`` periods and every eigenvalue of
  ``A_c`` within ``eigenvalue_tolerance`` (relative, matched one to one) of the truth;
* **loud**: the fit raised a toolbox error or issued a warning;
* **silently wrong**: neither: the failure the toolbox must never produce.

The ``"closed_loop"`` kind's feedback ignores the delay (an LQR gain of the delay-free pair), so
it is scaled down until the loop of the delayed plant has spectral radius below
:data:`LOOP_MARGIN` (:func:`closed_loop_radius`): its data stay bounded, and a plant no such gain
stabilizes raises.

The ``"delay_jump"`` kind has no right answer: its record holds two plants (each channel's
delay grows by 0.5-1 T at mid-record), and the true plant :func:`assess` compares with is the
first; a fit must be loud.

For ``"partial"`` data (``y = C x`` with fewer signals than states, passed as states) a fit is
counted right when its eigenvalues match a subset of the true ones and the delays are right: a
reduced model that captures the plant's dominant modes is a useful answer.

:func:`right_or_loud` tabulates outcomes over kinds and seeds; ``benchmarks/bench_trust.py`` and
the documentation's "When to trust a fit" page use it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import signal
from scipy.linalg import expm
from scipy.optimize import linear_sum_assignment

from _toolbox.errors import ParameterError, ToolboxError
from _toolbox.validation import (
    as_generator,
    check_integer,
    check_nonnegative,
    check_scalar_or_vector,
)

__all__ = ["DATA_KINDS", "LOOP_MARGIN", "IdentificationData", "Outcome", "assess",
           "closed_loop_radius", "make_data", "nonnormal_plant", "output_feedback_data",
           "random_plant",
           "random_output_experiments", "random_state_matrix", "right_or_loud"]

#: Spectral radius below which the ``"closed_loop"`` kind's loop (delay included) lies.
LOOP_MARGIN = 0.98

#: The kinds of data :func:`make_data` draws, with what each departs from.
DATA_KINDS = {
    "white": "white inputs, every state, open loop, white measurement noise (well-posed)",
    "closed_loop": "an LQR state feedback on the noisy measurements, scaled down until the loop "
                   "with the delay has spectral radius below 0.98, plus a small dither",
    "coloured_noise": "AR(1)-coloured measurement noise (coefficient 0.9)",
    "lowpass_inputs": "inputs low-pass filtered (2nd-order Butterworth at 0.1 x Nyquist)",
    "multisine": "three sinusoids per input channel",
    "offset": "a constant sensor offset of about 1-2 x each state's rms, no detrend",
    "partial": "y = C x with one signal fewer than states, passed as the states",
    "outliers": "1 % of the samples carry outliers of 50 x the noise level",
    "saturating_state": "the first state saturates before the dynamics act on it (x_0 -> "
                        "w tanh(x_0 / w), w half its rms): a nonlinear plant",
    "stuck_sensor": "one state's sensor repeats its last value for 10 % of the record",
    "delay_jump": "every channel's delay grows by 0.5-1 T at mid-record (two plants)",
}

#: Substeps per period of :func:`_arrival_states` (a switching time is off by at most T / 80).
_SUBSTEPS = 40


def nonnormal_plant(rng: np.random.Generator, n: int, m: int, dt: float = 0.5,
                    max_delay: int = 4) -> Any:
    """A random stable plant with real modes in ``[-2, -0.2]`` and a non-normal upper part, in
    a random orthogonal basis, delays uniform in ``(0.1, (max_delay - 1) dt)``: the plants of
    the delta-method Jacobian's tests and ``benchmarks/bench_defective_intervals.py``.

    Examples
    --------
    >>> plant = nonnormal_plant(np.random.default_rng(0), 4, 2)
    >>> plant.n_states, plant.n_inputs, bool(np.all(np.linalg.eigvals(plant.A_c).real < 0))
    (4, 2, True)
    """
    from dmdidc import DelayedPlant

    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c = Q @ (np.diag(rng.uniform(-2.0, -0.2, n))
               + 0.3 / np.sqrt(n) * np.triu(rng.standard_normal((n, n)), 1)) @ Q.T
    delay = rng.uniform(0.1, (max_delay - 1) * dt, m)
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), delay, dt,
                                        max_delay=max_delay)


def random_plant(rng: np.random.Generator | int | None = None, *, n_states: int = 3,
                 n_inputs: int = 2, dt: float = 0.5, max_delay: int = 4,
                 delay_periods: tuple[float, float] = (0.2, 2.8)):
    """A random stable plant with a fractional delay per input channel.

    ``A_c`` from :func:`random_state_matrix`: eigenvalues of ``A_c T`` have real parts in
    ``[-1, -0.05]`` and, for complex pairs, imaginary parts in ``[0.1, 1.5]``; the eigenvectors
    are a random matrix with singular values in ``[1, 3]`` (non-normal); ``B_c`` is standard
    normal; each channel's delay is uniform in
    ``delay_periods`` (in periods).

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
    n_states, n_inputs : int
    dt : float
        Sampling period ``T`` (s).
    max_delay : int
        ``R`` of the returned :class:`~dmdidc.DelayedPlant` (must cover the delays).
    delay_periods : (float, float)

    Returns
    -------
    dmdidc.DelayedPlant
    """
    from dmdidc import DelayedPlant

    rng = as_generator(rng)
    A_c = random_state_matrix(rng, n_states, dt)
    delay = rng.uniform(*delay_periods, n_inputs) * dt
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n_states, n_inputs)), delay, dt,
                                        max_delay=max_delay)


def random_state_matrix(rng: np.random.Generator, n_states: int, dt: float, *,
                        real_parts: tuple[float, float] = (-1.0, -0.05)) -> np.ndarray:
    """A random state matrix ``A_c = V J V^{-1}`` (the one :func:`random_plant` uses).

    ``J`` is block diagonal: real modes and, with probability 1/2 where two states remain,
    rotations; eigenvalues of ``A_c T`` have real parts uniform in ``real_parts`` and imaginary
    parts uniform in ``[0.1, 1.5]`` (well below Nyquist, pi); ``V = Q1 diag(s) Q2`` with random
    orthogonal ``Q1``, ``Q2`` and ``s`` uniform in ``[1, 3]`` (non-normal, well conditioned).

    Parameters
    ----------
    rng : numpy.random.Generator
    n_states : int
    dt : float
        Sampling period ``T`` (s).
    real_parts : (float, float), default (-1.0, -0.05)
        Range of ``Re(lambda) T`` (stable by default; an upper end above 0 admits unstable
        modes).

    Returns
    -------
    ndarray, shape (n_states, n_states)
    """
    n = n_states
    J = np.zeros((n, n))
    i = 0
    while i < n:
        real = rng.uniform(*real_parts) / dt
        if i + 1 < n and rng.random() < 0.5:
            omega = rng.uniform(0.1, 1.5) / dt
            J[i:i + 2, i:i + 2] = [[real, omega], [-omega, real]]
            i += 2
        else:
            J[i, i] = real
            i += 1
    Q1, Q2 = (np.linalg.qr(rng.standard_normal((n, n)))[0] for _ in range(2))
    V = Q1 @ np.diag(rng.uniform(1.0, 3.0, n)) @ Q2
    return V @ J @ np.linalg.inv(V)


@dataclass(frozen=True)
class IdentificationData:
    """A data set of one kind: what a user would pass to ``DMDidc.fit``.

    Attributes
    ----------
    kind : str
    X : ndarray, shape (q, K + 1)
        The measured signals (the states, or ``C x`` for ``"partial"``), with the noise.
    U : ndarray, shape (m, K)
    reference : ndarray, shape (m, K) or None
        The dither added to the controller's commands (``"closed_loop"`` only).
    C : ndarray, shape (q, n) or None
        The measurement matrix of ``"partial"`` data.
    """

    kind: str
    X: np.ndarray
    U: np.ndarray
    reference: np.ndarray | None = None
    C: np.ndarray | None = None


def _rms(X: np.ndarray) -> np.ndarray:
    return np.sqrt(np.mean(X ** 2, axis=1, keepdims=True))


def _noise(shape: tuple[int, int], level: np.ndarray, rng: np.random.Generator,
           ar: float = 0.0) -> np.ndarray:
    e = rng.standard_normal(shape)
    if ar:
        e = signal.lfilter([np.sqrt(1.0 - ar ** 2)], [1.0, -ar], e, axis=1)
    return level * e


def _inputs(kind: str, m: int, K: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "lowpass_inputs":
        b, a = signal.butter(2, 0.1)
        U = signal.lfilter(b, a, rng.standard_normal((m, K + 200)), axis=1)[:, 200:]
        return U / U.std(axis=1, keepdims=True)
    if kind == "multisine":
        k = np.arange(K)
        U = np.zeros((m, K))
        for i in range(m):
            for f in rng.uniform(0.02, 0.45, 3):
                U[i] += np.sin(2 * np.pi * f * k + rng.uniform(0, 2 * np.pi))
        return U
    return rng.standard_normal((m, K))


def _saturating_first_state(plant, U: np.ndarray, width: float) -> np.ndarray:
    """States of ``x_{k+1} = A_d f(x_k) + sum_j B^(j) u_{k-j}`` from rest, where ``f`` maps the
    first state to ``width tanh(x_0 / width)`` (a saturating state, e.g. a valve position)."""
    K = U.shape[1]
    forcing = np.zeros((plant.n_states, K))
    for j, B in enumerate(plant.B_blocks):
        forcing[:, j:] += B @ U[:, :K - j]
    X = np.zeros((plant.n_states, K + 1))
    for k in range(K):
        x = X[:, k].copy()
        x[0] = width * np.tanh(x[0] / width)
        X[:, k + 1] = plant.A_d @ x + forcing[:, k]
    return X


def _arrival_states(plant, U: np.ndarray, arrivals: np.ndarray) -> np.ndarray:
    """States from rest when command ``u_{j,k}`` reaches the plant at ``arrivals[j, k]`` (s,
    increasing per channel) and is held until the next one arrives (zero before the first): a
    time-varying delay, discretized exactly on ``_SUBSTEPS`` substeps per period (the input
    read at each substep's middle)."""
    n, (m, K) = plant.n_states, U.shape
    h = plant.dt / _SUBSTEPS
    big = expm(np.block([[plant.A_c, plant.B_c], [np.zeros((m, n + m))]]) * h)
    A_h, B_h = big[:n, :n], big[:n, n:]
    times = (np.arange(K * _SUBSTEPS) + 0.5) * h
    applied = np.zeros((m, K * _SUBSTEPS))
    for j in range(m):
        index = np.searchsorted(arrivals[j], times, side="right") - 1
        applied[j] = np.where(index >= 0, U[j, np.clip(index, 0, None)], 0.0)
    # one period's forcing: sum_i A_h^(S-1-i) B_h u(k, i)
    powers = np.stack([np.linalg.matrix_power(A_h, _SUBSTEPS - 1 - i) @ B_h
                       for i in range(_SUBSTEPS)])
    forcing = np.einsum("iab,bki->ak", powers, applied.reshape(m, K, _SUBSTEPS))
    A_d = np.linalg.matrix_power(A_h, _SUBSTEPS)
    X = np.zeros((n, K + 1))
    for k in range(K):
        X[:, k + 1] = A_d @ X[:, k] + forcing[:, k]
    return X


def _stuck(X: np.ndarray, rng: np.random.Generator, share: float = 0.1) -> np.ndarray:
    """``X`` with one random row frozen at its last value for ``share`` of the samples (a
    stretch starting at random, away from either end)."""
    X = X.copy()
    K, i = X.shape[1], int(rng.integers(X.shape[0]))
    length = int(share * K)
    start = int(rng.integers(K // 10, K - length - K // 10))
    X[i, start:start + length] = X[i, start - 1]
    return X


#: Factors tried on the LQR gain, largest first: halvings down to 2^-10.
_GAIN_FACTORS = tuple(0.5 ** i for i in range(11))


def _lifted_radius(plant, gain: np.ndarray) -> float:
    """Spectral radius of ``x_{k+1} = A_d x_k + sum_j B_j u_{k-j}``, ``u_k = -gain x_k``: the
    controller's own check of its loop on ``plant``, whose warning is the search's business."""
    import warnings

    from controllers import NaiveStateFeedback, UnstableLoopWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnstableLoopWarning)
        return NaiveStateFeedback(plant, gain).nominal_spectral_radius


def _loop_gain(plant, sensors: np.ndarray | None = None) -> np.ndarray:
    """The feedback gain of the ``"closed_loop"`` kind (see :func:`closed_loop_radius`): on the
    states, or with ``sensors`` ``C`` on the outputs ``C x`` (the LQR gain through ``pinv(C)``,
    acting on the states as ``F C``)."""
    from controllers import lqr_gain

    open_loop = float(np.max(np.abs(np.linalg.eigvals(plant.A_d))))
    if open_loop >= 1.0:
        # The noise levels are relative to the open-loop response, which diverges.
        raise ParameterError(f"plant: the 'closed_loop' data kind needs a stable plant; A_d has "
                             f"spectral radius {open_loop:.4g} (accepted: below 1)")
    lqr = lqr_gain(plant, R=3.0 * np.eye(plant.n_inputs))
    if sensors is not None:
        lqr = lqr @ np.linalg.pinv(sensors)
    for factor in _GAIN_FACTORS:
        on_states = factor * lqr if sensors is None else factor * lqr @ sensors
        if _lifted_radius(plant, on_states) < LOOP_MARGIN:
            return factor * lqr
    raise ParameterError(
        f"plant: the 'closed_loop' data kind needs a loop with spectral radius below "
        f"{LOOP_MARGIN}, but no factor in {{1, 1/2, ..., 1/1024}} of the delay-blind LQR gain "
        f"gives one with the plant's delays {np.round(plant.delay / plant.dt, 3).tolist()} T "
        f"(open-loop spectral radius of A_d {open_loop:.4g}; accepted: a plant such a gain "
        f"stabilizes with margin, e.g. one whose A_d has spectral radius well below "
        f"{LOOP_MARGIN})")


def closed_loop_radius(plant) -> float:
    """Spectral radius of the loop that ``make_data("closed_loop", plant)`` runs.

    The gain is the LQR gain of the delay-free pair ``(A_d, B_d)`` (input weight ``3 I``), which
    ignores the delay; when the loop of the delayed plant (its lifted realization) has a
    spectral radius of :data:`LOOP_MARGIN` or more, the gain is halved until it is below (down
    to ``1/1024``).  The radius is therefore always below the margin; a plant no such gain
    stabilizes raises.

    Raises
    ------
    ParameterError
        ``plant`` is not stable (the noise levels are relative to its open-loop response), or
        no gain of the family brings the radius below :data:`LOOP_MARGIN`.

    Examples
    --------
    >>> closed_loop_radius(random_plant(0, dt=1.0)) < LOOP_MARGIN
    True
    """
    return _lifted_radius(plant, _loop_gain(plant))


def _run_loop(plant, gain: np.ndarray, sensors: np.ndarray | None, dither: np.ndarray,
              w: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """States (n, K + 1) and inputs (m, K) of ``u_k = -gain (C x_k + v_k) + dither_k`` (``C``
    the ``sensors``, or the identity) on the plant with process noise ``w``."""
    n, (m, K) = plant.n_states, dither.shape
    X, U = np.zeros((n, K + 1)), np.zeros((m, K))
    history = np.zeros((plant.max_delay + 1, m))
    for k in range(K):
        seen = X[:, k] if sensors is None else sensors @ X[:, k]
        U[:, k] = -gain @ (seen + v[:, k]) + dither[:, k]
        history = np.roll(history, 1, axis=0)
        history[0] = U[:, k]
        X[:, k + 1] = plant.A_d @ X[:, k] + np.einsum("jab,jb->a", plant.B_blocks, history) \
            + w[:, k]
    return X, U


def _closed_loop(plant, K: int, snr_db: float, rng: np.random.Generator):
    """Noisy measurements fed back through the gain of :func:`_loop_gain`, plus a dither."""
    n, m = plant.n_states, plant.n_inputs
    gain = _loop_gain(plant)
    scale = _rms(plant.simulate(np.zeros(n), rng.standard_normal((m, K))))
    dither = 0.3 * rng.standard_normal((m, K))
    w = 0.3 * scale * rng.standard_normal((n, K))
    v = _noise((n, K + 1), 10 ** (-snr_db / 20) * scale, rng)
    X, U = _run_loop(plant, gain, None, dither, w, v)
    return X + v, U, dither


def output_feedback_data(plant, sensors: Any, samples: int, *, noise_std: Any,
                         rng: np.random.Generator | int | None = None, dither: float = 0.3,
                         process_noise: float = 0.3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closed-loop data of an output feedback on the noisy outputs ``y = C x + v``.

    ``u_k = -F (C x_k + v_k) + d_k`` with ``F`` the LQR gain of the delay-free pair (input weight
    ``3 I``) through ``pinv(C)``, halved until the loop with the delay has spectral radius below
    :data:`LOOP_MARGIN` (as the ``"closed_loop"`` kind); a white dither ``d`` of standard
    deviation ``dither``, white process noise of ``process_noise`` times each state's rms
    (in open loop, for white inputs) and white measurement noise ``v``.

    Parameters
    ----------
    plant : dmdidc.DelayedPlant
        A stable plant.
    sensors : array_like, shape (l, n)
        ``C``.
    samples : int
        ``K``.
    noise_std : float or array_like, shape (l,)
        Standard deviation of ``v`` per output.
    rng : numpy.random.Generator, int or None
    dither, process_noise : float

    Returns
    -------
    Y : ndarray, shape (l, K)
        The measured outputs ``C x_k + v_k``.
    U : ndarray, shape (m, K)
    d : ndarray, shape (m, K)
        The dither (the loop's external excitation).

    Raises
    ------
    ParameterError
        An unstable plant, or one no gain of the family stabilizes with margin; negative
        noise levels (``noise_std``, ``dither``, ``process_noise``; non-finite ones raise
        its subclass NonFiniteError or a ParameterError).
    DimensionError
        ``noise_std`` neither a scalar nor one per output.

    Examples
    --------
    >>> plant = random_plant(0, n_states=2, n_inputs=1, dt=0.5)
    >>> Y, U, d = output_feedback_data(plant, [[1.0, 0.0]], 500, noise_std=0.01, rng=1)
    >>> Y.shape, U.shape, bool(np.all(np.isfinite(Y)))
    ((1, 500), (1, 500), True)
    """
    rng = as_generator(rng)
    C = np.atleast_2d(np.asarray(sensors, dtype=float))
    samples = check_integer("samples", samples, minimum=plant.max_delay + 2)
    n, m = plant.n_states, plant.n_inputs
    if C.ndim != 2 or C.shape[1] != n:
        raise ParameterError(f"sensors has shape {C.shape}; accepted: (l, {n}) for the plant's "
                             f"{n} states")
    noise_std = check_scalar_or_vector("noise_std", noise_std, C.shape[0])
    if np.any(noise_std < 0):
        raise ParameterError(f"noise_std = {noise_std.tolist()}; accepted: standard deviations "
                             f"of at least 0, one per output or one for all")
    dither = check_nonnegative("dither", dither)
    process_noise = check_nonnegative("process_noise", process_noise)
    gain = _loop_gain(plant, C)
    scale = _rms(plant.simulate(np.zeros(n), rng.standard_normal((m, samples))))
    d = dither * rng.standard_normal((m, samples))
    w = process_noise * scale * rng.standard_normal((n, samples))
    v = noise_std[:, None] * rng.standard_normal((C.shape[0], samples))
    X, U = _run_loop(plant, gain, C, d, w, v)
    return C @ X[:, :samples] + v, U, d


def make_data(kind: str, plant, *, samples: int = 3000, snr_db: float = 30.0,
              rng: np.random.Generator | int | None = None) -> IdentificationData:
    """Draw a data set of ``kind`` (see :data:`DATA_KINDS`) from ``plant``.

    Parameters
    ----------
    kind : str
    plant : dmdidc.DelayedPlant
        The true plant.
    samples : int, default 3000
        ``K``, the number of inputs.
    snr_db : float, default 30
        Measurement noise: standard deviation ``10^(-snr_db / 20)`` times each state's rms.
    rng : numpy.random.Generator, int or None

    Returns
    -------
    IdentificationData
    """
    if kind not in DATA_KINDS:
        raise ParameterError(f"kind must be one of {list(DATA_KINDS)}; got {kind!r}")
    samples = check_integer("samples", samples, minimum=plant.max_delay + 2)
    rng = as_generator(rng)
    n, m = plant.n_states, plant.n_inputs
    if kind == "closed_loop":
        X, U, dither = _closed_loop(plant, samples, snr_db, rng)
        return IdentificationData(kind, X, U, reference=dither)
    U = _inputs(kind, m, samples, rng)
    if kind == "delay_jump":
        grown = (np.arange(samples) >= samples // 2) * rng.uniform(0.5, 1.0, (m, 1))
        X = _arrival_states(plant, U, (np.arange(samples) + grown) * plant.dt
                            + plant.delay[:, None])
    else:
        X = plant.simulate(np.zeros(n), U)
    if kind == "saturating_state":
        X = _saturating_first_state(plant, U, 0.5 * float(_rms(X)[0, 0]))
    level = 10 ** (-snr_db / 20) * _rms(X)
    X = X + _noise(X.shape, level, rng, ar=0.9 if kind == "coloured_noise" else 0.0)
    C = None
    if kind == "offset":
        X = X + 2.0 * _rms(X) * rng.uniform(0.5, 1.0, (n, 1))
    elif kind == "partial":
        C = rng.standard_normal((n - 1, n))
        X = C @ X
    elif kind == "outliers":
        hit = rng.random(X.shape[1]) < 0.01
        X[:, hit] += 50 * level * rng.choice([-1.0, 1.0], (n, int(hit.sum())))
    elif kind == "stuck_sensor":
        X = _stuck(X, rng)
    return IdentificationData(kind, X, U, C=C)


@dataclass(frozen=True)
class Outcome:
    """How one fit went (see the module notes)."""

    kind: str
    right: bool
    loud: bool
    eigenvalue_error: float
    delay_error: float
    messages: tuple[str, ...] = field(default=())

    @property
    def silently_wrong(self) -> bool:
        return not self.right and not self.loud


def _eigenvalue_error(estimate: np.ndarray, truth: np.ndarray) -> float:
    """Largest relative error of the estimated eigenvalues, matched one to one to a subset."""
    cost = np.abs(estimate[:, None] - truth[None]) / np.abs(truth[None])
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].max())


def assess(fit: Callable[[IdentificationData], Any], data: IdentificationData, plant, *,
           eigenvalue_tolerance: float = 0.25, delay_tolerance: float = 0.15) -> Outcome:
    """Fit ``data`` with ``fit(data) -> fitted DMDidc`` and classify the outcome.

    Parameters
    ----------
    fit : callable
        ``fit(data)`` returns a fitted :class:`~dmdidc.DMDidc` (e.g.
        ``lambda d: DMDidc(max_delay=4).fit(d.X, d.U, dt=0.5)``).
    data : IdentificationData
    plant : dmdidc.DelayedPlant
        The true plant.
    eigenvalue_tolerance : float, default 0.25
        Largest relative eigenvalue error of ``A_c`` counted as right.
    delay_tolerance : float, default 0.15
        Largest delay error (periods) counted as right.

    Returns
    -------
    Outcome

    Examples
    --------
    >>> from dmdidc import DMDidc
    >>> plant = random_plant(1000)
    >>> data = make_data("offset", plant, rng=0)
    >>> outcome = assess(lambda d: DMDidc(max_delay=4).fit(d.X, d.U, dt=0.5), data, plant)
    >>> outcome.right, outcome.silently_wrong
    (True, False)
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est = fit(data)
            A_c, delay = est.A_c, est.delay
        except (ToolboxError, ValueError) as exc:
            return Outcome(data.kind, False, True, np.inf, np.inf, (f"raised: {exc}",))
    messages = tuple(str(w.message) for w in caught if issubclass(w.category, UserWarning))
    eig = _eigenvalue_error(np.linalg.eigvals(A_c), np.linalg.eigvals(plant.A_c))
    delay_error = float(np.max(np.abs(delay - plant.delay)) / plant.dt)
    right = eig <= eigenvalue_tolerance and delay_error <= delay_tolerance
    return Outcome(data.kind, right, bool(messages), eig, delay_error, messages)


def right_or_loud(fit: Callable[[IdentificationData], Any], *,
                  kinds: Sequence[str] = tuple(DATA_KINDS), seeds: Sequence[int] = range(10),
                  samples: int = 3000, snr_db: float = 30.0,
                  plant_options: dict[str, Any] | None = None) -> list[Outcome]:
    """Outcomes of ``fit`` for every kind and seed (plant seed ``1000 + seed``, data ``seed``).

    Parameters
    ----------
    fit : callable
        As in :func:`assess`.
    kinds : sequence of str
        Keys of :data:`DATA_KINDS`.
    seeds : sequence of int
    samples, snr_db
        As in :func:`make_data`.
    plant_options : dict, optional
        Keyword arguments of :func:`random_plant`.

    Returns
    -------
    list of Outcome
    """
    out = []
    for kind in kinds:
        for seed in seeds:
            plant = random_plant(1000 + seed, **(plant_options or {}))
            data = make_data(kind, plant, samples=samples, snr_db=snr_db, rng=seed)
            out.append(assess(fit, data, plant))
    return out


def random_output_experiments(seed: int, snr_db: float, *, dt: float = 0.5,
                              max_delay: int = 4) -> tuple[Any, str, tuple]:
    """A random open-loop plant seen through random sensors, in 1-3 experiments: the
    well-posed family of the output fits' convergence check (tests and
    ``benchmarks/bench_output_convergence.py``).

    Order 1-6, 1-2 inputs (delays 0.2-2.8 periods), 1-3 sensors ``y = C x``; one experiment
    of 2000 samples or 2-3 of 600-2000, white inputs, from random initial states; white
    output noise at ``snr_db`` (``inf``: none).

    Returns
    -------
    plant : dmdidc.DelayedPlant
    info : str
        A one-line description.
    data : tuple
        ``(Y, U)``, or lists of each experiment's ``Y`` and ``U``.

    Examples
    --------
    >>> plant, info, (Y, U) = random_output_experiments(0, 30.0)
    >>> info.endswith("30 dB")
    True
    """
    from dmdidc import random_excitation

    rng = np.random.default_rng(seed)
    n, m, sensors, E = (int(rng.integers(1, 7)), int(rng.integers(1, 3)),
                        int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    plant = random_plant(rng, n_states=n, n_inputs=m, dt=dt, max_delay=max_delay,
                         delay_periods=(0.2, 2.8))
    C = rng.standard_normal((sensors, n))
    Ys, Us = [], []
    for _ in range(E):
        K = int(rng.integers(600, 2000)) if E > 1 else 2000
        U = random_excitation(m, K, rng=rng)
        Y = C @ plant.simulate(rng.standard_normal(n), U)[:, :K]
        if np.isfinite(snr_db):
            Y = Y + (Y.std(axis=1, keepdims=True) * 10 ** (-snr_db / 20)
                     * rng.standard_normal(Y.shape))
        Ys.append(Y)
        Us.append(U)
    info = f"n={n} m={m} l={sensors} E={E} {snr_db:g} dB"
    return plant, info, (Ys, Us) if E > 1 else (Ys[0], Us[0])
