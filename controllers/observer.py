"""Control from outputs: a delay-aware Kalman filter in front of any state controller.

The lifted realization of a delayed plant has the state ``[x_k, u_{k-1}, ..., u_{k-R}]``; its
input-history part is known exactly (the controller issued those commands), so only ``x_k``
needs estimating.  :class:`DelayedKalmanObserver` is the Kalman filter (time-varying from an
initial covariance, then at its steady state) for

    x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j} + w_k,     y_k = C x_k + v_k,

with the delayed inputs entering the prediction exactly (fractional delays included: they are
the blocks ``B^(w)``, ``B^(w+1)``).  :class:`OutputFeedback` wires it to a state controller
(predictive, fractional-delay, MPC): at every step it corrects the estimate with ``y_k``, asks
the controller for ``u_k`` and predicts ``x_{k+1}``.  The separation principle makes the loop's
eigenvalues those of the state-feedback loop and of the steady filter ``A_d - A_d M C``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import linalg

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_finite_array
from controllers.outputs import (
    measurement_matrix,
    model_mismatch,
    output_level,
    refuse_feedthrough,
)
from dmdidc.model import DelayedPlant, as_plant

__all__ = ["DelayedKalmanObserver", "OutputFeedback"]

#: A mode outside the unit circle whose visibility ``|C v| / (|C| |v|)`` (``v`` its right
#: eigenvector) is below this warns: the observer's gain grows as its inverse (0.4 / visibility
#: on diag(0.1, -0.5) at T = 1: 4e5 at 1e-6, 4e8 at 1e-9, where the estimate's error reached
#: 1.9e8), the counterpart of lqr_gain's reachability test.
DETECTABILITY_MARGIN = 1e-6


def _covariance(name: str, value: Any, size: int) -> np.ndarray:
    """A symmetric positive semidefinite (size, size) matrix from a scalar, vector or matrix."""
    array = check_finite_array(name, value)
    if array.ndim == 0:
        array = float(array) * np.eye(size)
    elif array.ndim == 1:
        if array.size != size:
            raise DimensionError(f"{name} has {array.size} entries; expected {size}")
        array = np.diag(array)
    if array.shape != (size, size):
        raise DimensionError(f"{name} has shape {array.shape}; expected ({size}, {size})")
    array = 0.5 * (array + array.T)
    if np.linalg.eigvalsh(array).min() < -1e-12 * max(np.abs(array).max(), 1.0):
        raise ParameterError(f"{name} must be positive semidefinite (a covariance)")
    return array


#: An estimation-error eigenvalue with modulus at or above ``1 - UNSEEN_MARGIN`` is refused: the
#: mode is not detectable (an unseen mode on the unit circle gives 1 to rounding, 2e-16; one
#: seen at visibility s converges at 1 - |lambda| ~ s / 2, accurate to s = 1e-12), and an
#: estimate converging over 1e10 periods is never estimated in a run.
UNSEEN_MARGIN = 1e-10
#: The slowest estimation-error mode converging more slowly than this many periods (its time
#: constant ``-1 / log |lambda|``) warns: the loop runs one period at a time and settles no
#: faster than the estimate, whose error is still ``e^-1`` of its start after that many
#: periods (an integrator seen at visibility 1e-3: 2000 periods, loop cost 331 against 4.37
#: with state feedback, silently).  In periods because the observer does not know the
#: controller; the error modes of a well-seen plant converge in a few periods.
SLOW_ERROR_PERIODS = 1000.0
#: An output feedback whose estimate's slowest mode takes more than this many times as long as
#: its state loop's (at least one period) warns: the estimate, not the design, then sets the
#: loop's pace (an integrator seen at visibility 1e-2: 200 periods against 3.2, 62 times,
#: loop cost 101 against 4.37 with state feedback).  On 1000 random plants (2-4 states, 1-2
#: inputs, 1-n random sensors, default noises, make_controller('fractional')) the ratio
#: reached 32 (median 1.0, 99th percentile 10.7).
SLOW_ESTIMATE_RATIO = 50.0
#: The default measurement noise: this share of each output's variance (its standard deviation
#: 1 %), so that the default is the same in any output units.
_DEFAULT_NOISE_SHARE = 1e-4

#: The time-varying filter hands over to the steady-state gain once its prediction covariance
#: is within this share of the steady one.
_STEADY_RTOL = 1e-9


def _stationary_covariance(A: np.ndarray, B: np.ndarray, Q_w: np.ndarray,
                           steady: np.ndarray) -> np.ndarray:
    """The default initial covariance: the states' stationary covariance under unit white
    inputs and the process noise (how far from rest the plant may start), or the filter's
    steady prediction covariance when there is none (an unstable or marginal ``A``)."""
    if np.max(np.abs(np.linalg.eigvals(A)), initial=0.0) < 1.0 - 1e-6:
        covariance = linalg.solve_discrete_lyapunov(A, B @ B.T + Q_w)
        if np.all(np.isfinite(covariance)):
            return 0.5 * (covariance + covariance.T)
    return steady.copy()


def _visibility(C: np.ndarray, v: np.ndarray) -> float:
    """How much of the mode ``v`` the sensors see: ``|C v| / (|C| |v|)``."""
    return float(np.linalg.norm(C @ v)) / max(float(np.linalg.norm(C))
                                              * float(np.linalg.norm(v)), 1e-300)


def _mode_text(A: np.ndarray, C: np.ndarray, error_value: complex) -> str:
    """The mode of ``A`` nearest an estimation-error eigenvalue, with how much ``C`` sees it."""
    values, vectors = np.linalg.eig(A)
    i = int(np.argmin(np.abs(values - error_value)))
    return (f"the mode {values[i]:.6g} (|lambda| = {abs(values[i]):.6g}) of A_d, seen by the "
            f"sensors at |C v| / (|C| |v|) = {_visibility(C, vectors[:, i]):.3g}")


def _least_seen_mode(A: np.ndarray, C: np.ndarray) -> str:
    """The mode on or outside the unit circle the sensors see least, as text."""
    values, vectors = np.linalg.eig(A)
    outside = np.flatnonzero(np.abs(values) >= 1.0 - UNSEEN_MARGIN)
    if outside.size == 0:
        return "every mode of A_d is inside the unit circle"
    i = min(outside, key=lambda j: _visibility(C, vectors[:, j]))
    return _mode_text(A, C, values[i])


def _periods(modulus: float) -> float:
    """The time constant ``-1 / log |lambda|`` of a mode, in periods (0 for lambda = 0)."""
    return -1.0 / np.log(modulus) if modulus > 0 else 0.0


def _warn_slower_than_the_loop(controller: Any, observer: DelayedKalmanObserver) -> None:
    """Warn when the estimate converges ``SLOW_ESTIMATE_RATIO`` times more slowly than the
    state loop the controller realizes on its model (its ``nominal_spectral_radius``), unless
    the observer already warned (``SLOW_ERROR_PERIODS``)."""
    radius = getattr(controller, "nominal_spectral_radius", None)
    values = observer.error_eigenvalues
    if radius is None or not np.isfinite(radius) or radius >= 1.0 or values.size == 0:
        return
    slowest = values[int(np.argmax(np.abs(values)))]
    estimate, loop = _periods(float(abs(slowest))), max(_periods(float(radius)), 1.0)
    if SLOW_ESTIMATE_RATIO * loop < estimate <= SLOW_ERROR_PERIODS:
        warnings.warn(
            f"OutputFeedback: slow estimate check failed: the estimation error's slowest mode "
            f"{slowest:.6g} takes {estimate:.3g} periods to shrink by e, {estimate / loop:.3g} "
            f"times the state loop's {loop:.3g} (> SLOW_ESTIMATE_RATIO = "
            f"{SLOW_ESTIMATE_RATIO:g}), so the estimate, not the design, sets the loop's pace: "
            f"it comes from {_mode_text(observer.plant.A_d, observer.C, slowest)}; add a "
            f"sensor that sees this mode better, or a larger process_noise if the model is "
            f"uncertain there", RuntimeWarning, stacklevel=3)


def _check_error_modes(A: np.ndarray, C: np.ndarray, error_values: np.ndarray) -> None:
    """Refuse an estimation error that does not converge (``UNSEEN_MARGIN``: a mode on or
    outside the unit circle the sensors do not see) and warn when its slowest mode takes more
    than ``SLOW_ERROR_PERIODS`` periods, naming the mode of ``A_d`` behind it."""
    if error_values.size == 0:
        return
    slowest = error_values[int(np.argmax(np.abs(error_values)))]
    modulus = float(abs(slowest))
    if modulus >= 1.0 - UNSEEN_MARGIN:
        raise ParameterError(
            f"DelayedKalmanObserver: (A_d, C) is not detectable: the estimation error has the "
            f"eigenvalue {slowest:.6g} (|lambda| = {modulus:.12g} >= 1 - UNSEEN_MARGIN = "
            f"1 - {UNSEEN_MARGIN:g}), so the estimate of {_mode_text(A, C, slowest)} never "
            f"converges; add a sensor that sees this mode, or control a model without it")
    periods = _periods(modulus)
    if periods > SLOW_ERROR_PERIODS:
        warnings.warn(
            f"DelayedKalmanObserver: slow estimate check failed: the estimation error's "
            f"slowest mode {slowest:.6g} (|lambda| = {modulus:.9g}) takes {periods:.3g} "
            f"periods to shrink by e (> SLOW_ERROR_PERIODS = {SLOW_ERROR_PERIODS:g}), and the "
            f"loop settles no faster: it comes from {_mode_text(A, C, slowest)}; add a sensor "
            f"that sees this mode better, a larger process_noise if the model is uncertain "
            f"there, or control a model without it", RuntimeWarning, stacklevel=3)


def _output_spread(A: np.ndarray, B: np.ndarray, Q_w: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Each output's variance ``diag(C S C^T)`` with ``S`` the states' stationary covariance
    under unit white inputs and the process noise (after ``n + 1`` periods of them for an
    unstable or marginal ``A``): the outputs' scale, in their own units."""
    n = A.shape[0]
    if np.max(np.abs(np.linalg.eigvals(A)), initial=0.0) < 1.0 - 1e-6:
        S = linalg.solve_discrete_lyapunov(A, B @ B.T + Q_w)
    else:
        S, step = np.zeros((n, n)), B @ B.T + Q_w
        for _ in range(n + 1):
            S, step = S + step, A @ step @ A.T
    spread = np.einsum("ij,jk,ik->i", C, S, C)
    if not np.all(np.isfinite(spread)):
        spread = np.einsum("ij,jk,ik->i", C, B @ B.T + Q_w, C)
    return np.maximum(spread, 1e-300)


def _warn_barely_detectable(A: np.ndarray, C: np.ndarray, gain: np.ndarray) -> None:
    """Warn (``RuntimeWarning``) when a mode with ``|lambda| > 1`` is barely seen by ``C``
    (``DETECTABILITY_MARGIN``): the filter exists, but its gain amplifies the measurement noise
    and rounding by about the inverse of the mode's visibility."""
    values, vectors = np.linalg.eig(A)
    for value, v in zip(values, vectors.T, strict=True):
        if abs(value) <= 1.0 + 1e-10:     # on the circle: the gain stays small, the estimate
            continue                      # slow (the slow estimate check)
        seen = _visibility(C, v)
        if seen < DETECTABILITY_MARGIN:
            warnings.warn(
                f"DelayedKalmanObserver: detectability margin check failed: the mode "
                f"{value:.6g} (|lambda| = {abs(value):.6g} > 1 of A_d) is barely seen by the "
                f"sensors (|C v| / (|C| |v|) = {seen:.3g} < DETECTABILITY_MARGIN = "
                f"{DETECTABILITY_MARGIN:g}), so the observer's gain reaches "
                f"{float(np.abs(gain).max()):.3g} and amplifies noise and rounding about as "
                f"much; add a sensor that sees this mode, or control a model without it",
                RuntimeWarning, stacklevel=3)
            return


def _check_same_model(controller: Any, plant: Any) -> None:
    """Refuse a controller designed on another model than the observer's (a different
    sampling period, size, basis or dynamics): it would act on an estimate whose states mean
    something else (a controller on the true plant fed an identified model's estimate: cost
    4.99, no better than no control)."""
    own = getattr(controller, "plant", None)
    name = type(controller).__name__
    if not isinstance(own, DelayedPlant):   # a controller of one's own: its declared sizes
        sizes = (getattr(controller, "n_states", plant.n_states),
                 getattr(controller, "n_inputs", plant.n_inputs))
        if sizes != (plant.n_states, plant.n_inputs):
            raise DimensionError(f"controller ({name}) has {sizes[0]} states and {sizes[1]} "
                                 f"inputs; the observer's model has {plant.n_states} and "
                                 f"{plant.n_inputs}")
        return
    if not np.isclose(own.dt, plant.dt, rtol=1e-9, atol=0.0):
        raise ParameterError(f"controller ({name}) is designed for the sampling period "
                             f"T = {own.dt:g} s and the observer for T = {plant.dt:g} s: both "
                             f"act once per period of the same loop; build them on one model")
    if (own.n_states, own.n_inputs) != (plant.n_states, plant.n_inputs):
        raise DimensionError(f"controller ({name}) is designed on a model with {own.n_states} "
                             f"states and {own.n_inputs} inputs; the observer's model has "
                             f"{plant.n_states} and {plant.n_inputs}: build both on one model")
    found = model_mismatch(own, plant, "observer's")
    if found is not None:
        raise ParameterError(
            f"controller ({name}) is designed on another model than the observer: {found}; "
            f"the controller acts on the observer's estimate, whose states are those of the "
            f"observer's model (an identified model's basis is its own), so build both on "
            f"one model (e.g. the same OutputDMDidc)")


class DelayedKalmanObserver:
    """Steady-state Kalman filter for a delayed plant measured through ``y = C x + v``.

    Parameters
    ----------
    model : DelayedPlant or fitted estimator (DMDidc, OutputDMDidc)
        The plant; an :class:`~dmdidc.OutputDMDidc` also supplies ``C`` and the output noise.
    C : array_like, shape (l, n), optional
        Measurement matrix, in the basis of the model's states (required unless ``model`` has
        one).  With a model that carries its own (an :class:`~dmdidc.OutputDMDidc`, whose
        states are canonical variates, not the plant's) a different ``C`` is refused: it would
        read the wrong combination of the model's states.
    measurement_noise : float, array_like (l,) or (l, l), optional
        Covariance of ``v``; default the model's ``noise_std_ ** 2`` (an
        :class:`~dmdidc.OutputDMDidc`'s residual spread), else ``1e-4`` times each output's
        variance ``diag(C S C^T)`` (a standard deviation of 1 % of the output), with ``S`` the
        states' stationary covariance under unit white inputs and the process noise (after
        ``n + 1`` periods of them for an unstable or marginal model): the same filter in any
        output units.  Until 2026-11-28 a fixed ``1e-4`` whatever the units (the same loop
        cost 10.1, 10.0 and 159 with outputs in three units).  Give the sensors' noise
        variance when it is known.
    process_noise : float, array_like (n,) or (n, n), optional
        Covariance of ``w``; default ``0.1 B_d B_d^T + 1e-6 I`` (disturbances entering with the
        inputs; ``B_d`` times the inputs' spread, ``input_scale_``, for an
        :class:`~dmdidc.OutputDMDidc`, so the default is the same in any input units), a
        tuning knob: larger trusts the measurements more.
    initial_covariance : float, array_like (n,) or (n, n), optional
        Covariance of the initial state about the estimate the filter starts from (the
        operating point, or ``x0`` of :meth:`reset`): the first steps run the time-varying
        Kalman filter from it, handing over to the steady-state gain once the two agree to
        1e-9.  Default: the states' stationary covariance under unit white inputs (of the
        inputs' spread for an :class:`~dmdidc.OutputDMDidc`) and the process noise (the steady
        prediction covariance for an unstable model).  The
        steady-state gain alone from the first step (the behaviour until 2026-11-27) read a
        start far from rest into a wrong first estimate, and an output-bounded MPC acted on
        it: a loop that never reached its bound cost 4898 against 1.93 unbounded.
    offset : array_like (l,), optional
        Constant output offset ``c`` of ``y = C x + c + v`` (sensor offsets, absolute units),
        subtracted from every measurement; default the model's ``offset_`` (an
        :class:`~dmdidc.OutputDMDidc` estimates it), else zero.  Required for a model fitted
        with ``detrend="constant"`` or ``"linear"`` (the removed means or lines are not
        kept: ParameterError).

    Attributes
    ----------
    plant : DelayedPlant
        The model, with its operating point when it has one (an
        :class:`~dmdidc.OutputDMDidc` fitted to inputs at a non-zero level): the estimate is
        then in the model's units, starts at ``x_op`` and the inputs at ``u_op``, so a
        controller built on the same model regulates around them.
    offset : ndarray, shape (l,)
        The output offset subtracted from each measurement.
    gain : ndarray, shape (n, l)
        Steady-state measurement-update gain ``M`` (``xhat_k|k = xhat_k|k-1 + M (y_k - C
        xhat_k|k-1)``), used once the time-varying start has converged.
    initial_covariance : ndarray, shape (n, n)
    error_eigenvalues : ndarray
        Eigenvalues of the estimation-error dynamics ``A_d (I - M C)``, inside the unit circle
        by at least ``UNSEEN_MARGIN`` (else refused).

    Raises
    ------
    ParameterError
        ``(A_d, C)`` not detectable: a mode on or outside the unit circle the sensors do not
        see (no steady filter, or an estimation error with ``|lambda| >= 1 -
        UNSEEN_MARGIN``, which never converges); the message names the mode and how much
        the sensors see it.  Also a ``C`` other than the one the model carries, a model with
        feedthrough, and noise covariances that leave the innovation singular.

    Warns
    -----
    RuntimeWarning
        The estimation error's slowest mode takes more than ``SLOW_ERROR_PERIODS`` (1000)
        periods to shrink by ``e`` (a marginal or slow mode barely seen: the loop settles no
        faster); the message names the mode of ``A_d`` behind it.  A mode outside the unit
        circle barely seen by ``C`` (``DETECTABILITY_MARGIN``): the gain, and the noise it
        passes on, grow as the inverse of its visibility.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]],
    ...                                      delay=1.3, dt=0.5)
    >>> observer = DelayedKalmanObserver(plant, C=[[1.0, 0.0]], measurement_noise=1e-4)
    >>> bool(np.all(np.abs(observer.error_eigenvalues) < 1))
    True
    """

    def __init__(self, model: Any, C: Any = None, *, measurement_noise: Any = None,
                 process_noise: Any = None, offset: Any = None,
                 initial_covariance: Any = None) -> None:
        plant = as_plant(model)
        n = plant.n_states
        C = measurement_matrix(model, C, n, missing="C is required: the measurement matrix "
                                                    "y = C x (the model has none)")
        refuse_feedthrough(model)
        # Without it the filter reads a sensor offset as state, and the loop steers the plant
        # away from zero to cancel a reading it should have subtracted.
        self.offset = output_level(model, offset, C.shape[0])
        # the defaults' "unit white inputs" in the fit's units (an OutputDMDidc's inputs over
        # their spread): in the given units they moved C P0 C^T from 1e-4 to 1e5 of the
        # outputs' variance as the same data's inputs went from mV to kV (a review)
        scale = getattr(model, "input_scale_", None)
        B_d = plant.B_blocks.sum(axis=0) * (1.0 if scale is None else np.asarray(scale))
        Q_w = (_covariance("process_noise", process_noise, n) if process_noise is not None
               else 0.1 * B_d @ B_d.T + 1e-6 * np.eye(n))
        A = plant.A_d
        if measurement_noise is None:
            std = getattr(model, "noise_std_", None)
            # a fixed 1e-4 read the same sensors as 1e4 times noisier in mV than in V: loop
            # cost 10.1, 10.0 and 159 in three units against 4.53 with the noise given
            measurement_noise = (np.square(std) if std is not None else
                                 _DEFAULT_NOISE_SHARE * _output_spread(A, B_d, Q_w, C))
        R_v = _covariance("measurement_noise", measurement_noise, C.shape[0])
        # a regularization relative to the noises (an absolute 1e-12 was 1 % of the default
        # noise of outputs in units a thousand times larger, and moved the filter)
        tiny = 1e-12 * max(float(np.abs(R_v).max(initial=0.0)),
                           float(np.abs(C @ Q_w @ C.T).max(initial=0.0)), 1e-300)
        try:
            P = linalg.solve_discrete_are(A.T, C.T, Q_w, R_v + tiny * np.eye(C.shape[0]))
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise ParameterError(f"no steady-state Kalman filter: (A_d, C) is not detectable "
                                 f"({_least_seen_mode(A, C)}) or the noise covariances are "
                                 f"degenerate ({exc}); add a sensor that sees every mode on "
                                 f"or outside the unit circle, or control a model without "
                                 f"it") from exc
        self.plant, self.C = plant, C
        innovation = C @ P @ C.T + R_v
        condition = np.linalg.cond(innovation)
        if condition > 1e12:
            raise ParameterError(
                f"no Kalman gain: the innovation covariance C P C^T + measurement_noise is "
                f"singular (condition {condition:.3g}): measurement_noise = "
                f"0 with process_noise that does not reach every measured direction; give a "
                f"positive measurement_noise (the sensors' noise variance) or process_noise")
        self.gain = P @ C.T @ np.linalg.inv(innovation)
        self.error_eigenvalues = np.linalg.eigvals(A @ (np.eye(n) - self.gain @ C))
        _check_error_modes(A, C, self.error_eigenvalues)
        _warn_barely_detectable(A, C, self.gain)
        self._noise, self._steady = (Q_w, R_v), P
        self.initial_covariance = (_stationary_covariance(A, B_d, Q_w, P)
                                   if initial_covariance is None else
                                   _covariance("initial_covariance", initial_covariance, n))
        self.reset()

    def reset(self, x0: Any = None) -> None:
        """Start from ``x0`` with the past inputs at rest: by default at the model's operating
        point (``x_op``, inputs ``u_op``), else at zero.

        Parameters
        ----------
        x0 : array_like, shape (n,), optional
            The initial estimate, in the model's state basis and units.

        Raises
        ------
        DimensionError, NonFiniteError
            ``x0`` of another shape than ``(n,)``, or not finite (the estimate is unchanged).
        """
        n, m, R = self.plant.n_states, self.plant.n_inputs, self.plant.max_delay
        op = self.plant.operating_point
        rest_x, rest_u = (np.zeros(n), np.zeros(m)) if op is None else (op.state, op.input)
        if x0 is not None:
            x0 = check_finite_array("x0", x0, ndim=1)
            if x0.shape != (n,):
                raise DimensionError(f"x0 has shape {x0.shape}; expected ({n},), one entry per "
                                     f"state of the observer's model")
        self._x = rest_x.copy() if x0 is None else x0.copy()
        self._history = np.tile(rest_u, (R + 1, 1))   # u_k, u_{k-1}, ..., u_{k-R}
        # the estimate's covariance while the filter is not yet steady (None: steady)
        self._P = self.initial_covariance.copy()

    def correct(self, y: Any) -> np.ndarray:
        """The estimate ``xhat_k|k`` after measuring ``y_k`` (shape (n,))."""
        y = check_finite_array("y", y, ndim=1)
        if y.shape != (self.C.shape[0],):
            raise DimensionError(f"y has shape {y.shape}; expected ({self.C.shape[0]},)")
        gain = self.gain
        if getattr(self, "_P", None) is not None:    # time-varying, from the initial covariance
            C, (_, R_v) = self.C, self._noise
            gain = self._P @ C.T @ np.linalg.inv(C @ self._P @ C.T + R_v)
            self._P = self._P - gain @ C @ self._P
        self._x = self._x + gain @ (y - self.offset - self.C @ self._x)
        return self._x.copy()

    def predict(self, u: Any) -> np.ndarray:
        """Record the command ``u_k`` and return the prediction ``xhat_{k+1|k}``.

        Parameters
        ----------
        u : array_like, shape (m,)

        Returns
        -------
        ndarray, shape (n,)

        Raises
        ------
        DimensionError, NonFiniteError
            ``u`` of another shape than ``(m,)``, or not finite (nothing is recorded).
        """
        u = check_finite_array("u", u, ndim=1)
        if u.shape != (self.plant.n_inputs,):
            raise DimensionError(f"u has shape {u.shape}; expected ({self.plant.n_inputs},), "
                                 f"one command per input of the observer's model")
        self._history = np.vstack([u[None, :], self._history[:-1]])
        A = self.plant.A_d
        self._x = A @ self._x + np.einsum("jnm,jm->n", self.plant.B_blocks, self._history)
        if getattr(self, "_P", None) is not None:
            P = A @ self._P @ A.T + self._noise[0]
            steady = self._steady
            # steady to rounding: the constant gain from here on (the same filter)
            self._P = None if np.abs(P - steady).max() <= _STEADY_RTOL * np.abs(steady).max() \
                else 0.5 * (P + P.T)
        return self._x.copy()


class OutputFeedback:
    """A state controller fed by a :class:`DelayedKalmanObserver`: ``u_k = controller(xhat_k|k)``.

    Parameters
    ----------
    controller : object with ``reset()`` and ``__call__(x) -> u``
        A :class:`~controllers.PredictiveController`,
        :class:`~controllers.FractionalDelayController`, :class:`~controllers.DelayedMPC`, ...
        designed on the observer's model: its ``plant`` must have the observer's ``dt``,
        sizes, ``A_d`` and input blocks (to rounding; a longer ``max_delay`` adds zero
        blocks).  Its operating point may differ (a setpoint,
        :meth:`~dmdidc.DelayedPlant.with_operating_point`).  A controller of your own without
        ``plant`` is checked by its ``n_states`` and ``n_inputs``, if it has them.
    observer : DelayedKalmanObserver

    Warns
    -----
    RuntimeWarning
        The estimate's slowest mode takes more than ``SLOW_ESTIMATE_RATIO`` (50) times as
        many periods as the state loop's (its ``nominal_spectral_radius``, at least one
        period): the loop settles at the estimate's pace; the message names the mode.

    Raises
    ------
    ParameterError
        A controller without ``reset()``/``__call__``, an observer of another type, or a
        controller designed on another model than the observer's (another ``dt``, ``A_d``
        or input blocks; the message names which and by how much).
    DimensionError
        A controller for other numbers of states or inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from controllers import PredictiveController, lqr_gain
    >>> plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]],
    ...                                      delay=1.3, dt=0.5)
    >>> loop = OutputFeedback(PredictiveController(plant, lqr_gain(plant)),
    ...                       DelayedKalmanObserver(plant, C=[[1.0, 0.0]]))
    >>> loop.reset()
    >>> loop(np.array([0.2])).shape
    (1,)
    """

    def __init__(self, controller: Any, observer: DelayedKalmanObserver) -> None:
        if not (callable(controller) and hasattr(controller, "reset")):
            raise ParameterError("controller must have reset() and __call__(x) -> u")
        if not isinstance(observer, DelayedKalmanObserver):
            raise ParameterError("observer must be a DelayedKalmanObserver")
        _check_same_model(controller, observer.plant)
        _warn_slower_than_the_loop(controller, observer)
        self.controller, self.observer = controller, observer

    @property
    def operating_point(self) -> Any:
        """The controller's operating point (``AttributeError`` for a controller without that
        attribute), so that :func:`~simulations.simulate_closed_loop` can check it against the
        plant's."""
        return self.controller.operating_point

    @property
    def plant(self) -> Any:
        """The model the loop is designed on (the observer's, which the controller shares)."""
        return self.observer.plant

    @property
    def n_outputs(self) -> int:
        """Number of measured signals ``l``."""
        return self.observer.C.shape[0]

    def reset(self, x0: Any = None) -> None:
        """Reset the observer (estimate ``x0``, shape (n,), default the model's operating
        point, or zero) and the controller; a refused ``x0`` (DimensionError,
        NonFiniteError) leaves both as they were."""
        self.observer.reset(x0)         # first: it checks x0
        self.controller.reset()

    def __call__(self, y: Any) -> np.ndarray:
        """Command ``u_k`` for the measurement ``y_k``."""
        x_hat = self.observer.correct(y)
        u = np.asarray(self.controller(x_hat), dtype=float)
        if u.shape != (self.observer.plant.n_inputs,):
            raise DimensionError(f"the controller ({type(self.controller).__name__}) returned "
                                 f"a command of shape {u.shape}; expected "
                                 f"({self.observer.plant.n_inputs},), one per input of the "
                                 f"observer's model")
        self.observer.predict(u)
        return u
