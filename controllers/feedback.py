"""Linear state feedback for input-delayed plants: naive, predictive and fractional-delay.

Every controller here is *linear* in the measured state and its own past commands,

    u_k = K_x x_k + sum_{i=1}^{H} K_u[i-1] u_{k-i},                      (feedback protocol)

:meth:`feedback_matrices` returns ``(K_x, K_u)`` and ``controller(x)`` evaluates exactly this law
with the controller's own command history.  :mod:`controllers.analysis` turns the pair into the
exact lifted closed loop; simulators may use it instead of calling the controller.

Controllers
-----------
``NaiveStateFeedback``
    ``u_k = -K x_k`` (ignores the delay).
``PredictiveController(prediction="truncated")``
    Eq. (9.13): whole-step prediction with ``B_d = sum_j B^(j)`` and the whole delay ``w``; the
    fractional part of the delay is ignored (the seed's "truncated" controller).
``PredictiveController(prediction="exact")``
    Whole-step prediction ``xhat_{k+w}`` with the full multi-block model (eq. 9.65).
``FractionalDelayController``
    Eqs. (9.70)-(9.74): ``u_k = -K x(kT + r)``, the state at the instant ``u_k`` starts acting;
    the sampled closed loop is exactly ``A_d - B_d K`` (eq. 9.75).  Generalized to per-channel
    delays (see the class docstring for what is guaranteed).
"""

from __future__ import annotations

import os
from typing import Any, Literal

import numpy as np

from _toolbox.errors import (
    DimensionError,
    NonFiniteError,
    ParameterError,
    UnstableLoopWarning,
    warn_caller,
)
from _toolbox.validation import check_finite_array, check_nonnegative
from controllers.gains import _SCHUR_MARGIN, _check_gain
from controllers.lifted import closed_loop_matrix
from controllers.outputs import model_outputs
from dmdidc.discretization import checked_expm, split_delay, zoh_matrices
from dmdidc.model import as_plant

__all__ = [
    "NaiveStateFeedback",
    "PredictiveController",
    "FractionalDelayController",
    "reduced_input_matrix",
    "whole_delay_input_matrix",
    "NOMINAL_CHECK_SIZE",
]

_PREDICTIONS = ("truncated", "exact")
#: Relative tolerance (in sampling periods) below which two instants count as equal.
_TIME_TOL = 1e-12
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: Lifted loops of more states than this are not checked at construction: the eigenvalue call
#: grows as the cube (0.6 s at 600 states, 2 s at 1200: a 300- or 600-period delay with two
#: inputs), and the nilpotent part's computed moduli approach 1 there anyway.
NOMINAL_CHECK_SIZE = 500
#: Remedy every unstable nominal loop shares: MPC predicts through every identified block.
_MPC_REMEDY = ("or DelayedMPC(model, horizon=...), which predicts through the model's delays "
               "exactly")


# ---------------------------------------------------------------------------------- base class
class _LinearFeedback:
    """``u_k = K_x x_k + sum_i K_u[i-1] u_{k-i}`` with the controller's own command history.

    A model with an :attr:`~dmdidc.DelayedPlant.operating_point` ``(x_op, u_op)`` describes
    deviations: the law then acts on them, ``u_k - u_op = K_x (x_k - x_op) + sum_i K_u[i-1]
    (u_{k-i} - u_op)``, so the controller takes and returns physical values and regulates the
    plant to its operating point.
    """

    def __init__(self, K: np.ndarray, K_x: np.ndarray, K_u: np.ndarray,
                 operating_point: Any = None) -> None:
        m, n = K.shape
        self._K = np.array(K, dtype=float)
        self._K_x = np.array(K_x, dtype=float).reshape(m, n)
        self._K_u = np.array(K_u, dtype=float).reshape(-1, m, m)
        if not (np.all(np.isfinite(self._K_x)) and np.all(np.isfinite(self._K_u))):
            # e.g. a prediction over many periods of an unstable plant: A_d^w overflows
            raise NonFiniteError(f"the feedback law of gain K (largest |entry| "
                                 f"{np.max(np.abs(self._K)):.3g}) on this plant is not finite "
                                 f"in float64 (a prediction over {self._K_u.shape[0]} periods "
                                 f"overflows); use a model with a shorter delay or slower "
                                 f"unstable modes")
        for array in (self._K, self._K_x, self._K_u):
            array.flags.writeable = False
        self.operating_point = operating_point
        self.reset()

    #: The measurement matrix ``C`` of the output model the controller was designed on (an
    #: :class:`~dmdidc.OutputDMDidc`: its states, and so the states this law acts on, are the
    #: model's own basis, canonical variates); ``None`` for a model whose states are the
    #: plant's.  Such a controller runs on estimated states only (an
    #: :class:`~controllers.OutputFeedback`): :func:`~simulations.simulate_closed_loop` and
    #: :func:`~controllers.closed_loop_matrix` refuse to feed it another plant's states.
    output_matrix: np.ndarray | None = None

    #: Spectral radius of the loop on the controller's own model; ``None`` when built without
    #: one, or for a lifted loop of more than :data:`NOMINAL_CHECK_SIZE` states (check it with
    #: ``controllers.spectral_radius(model, controller)``).
    nominal_spectral_radius: float | None = None

    def _check_nominal_loop(self, plant: Any) -> None:
        """Record the spectral radius of the loop on the controller's own model and warn
        (:class:`UnstableLoopWarning`) when it is 1 or more: such a loop diverges on the plant
        too if the model is right, and nothing else would say so before a simulation."""
        radius = self._nominal_radius(plant)
        self.nominal_spectral_radius = radius
        if radius is not None and radius >= 1.0 - _SCHUR_MARGIN:
            warn_caller(f"{type(self).__name__}: nominal loop check failed: on its own model "
                        f"(the one it was designed on) the closed loop has spectral radius "
                        f"{radius:.6g} >= 1, so it diverges on the plant too if the model is "
                        f"right; {self._unstable_remedy(plant)}", UnstableLoopWarning,
                        _PACKAGE_DIR)

    def _nominal_radius(self, plant: Any) -> float | None:
        """Spectral radius of the exact lifted loop of this law on ``plant`` (``None`` beyond
        :data:`NOMINAL_CHECK_SIZE` states)."""
        lag = max(plant.max_delay, self.history_steps)
        if plant.n_states + plant.n_inputs * lag > NOMINAL_CHECK_SIZE:
            return None
        try:
            return _radius(closed_loop_matrix(plant, self))
        except NonFiniteError:
            return np.inf

    def _unstable_remedy(self, plant: Any) -> str:
        raise NotImplementedError

    @property
    def K(self) -> np.ndarray:
        """Design gain, shape (m, n) (read-only)."""
        return self._K

    @property
    def n_states(self) -> int:
        """Number of plant states ``n``."""
        return self._K.shape[1]

    @property
    def n_inputs(self) -> int:
        """Number of inputs ``m``."""
        return self._K.shape[0]

    @property
    def history_steps(self) -> int:
        """Number ``H`` of past commands the law uses."""
        return self._K_u.shape[0]

    @property
    def command_history(self) -> np.ndarray:
        """Past commands, newest first: row ``i`` is ``u_{k-1-i}``; shape (H, m) (a copy)."""
        return self._history.copy()

    def feedback_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """The linear law ``u_k = K_x x_k + sum_{i=1}^{H} K_u[i-1] u_{k-i}``.

        Returns
        -------
        K_x : ndarray, shape (m, n)
        K_u : ndarray, shape (H, m, m)
            ``K_u[i-1]`` multiplies ``u_{k-i}``; ``H`` may be 0.
        """
        return self._K_x.copy(), self._K_u.copy()

    def reset(self, u_past: Any = None) -> None:
        """Forget the command history (zeros), or set it.

        Parameters
        ----------
        u_past : array_like, shape (m, H), optional
            Commands before the next call, oldest first (``u_{k-H} .. u_{k-1}``, the
            ``U_past`` convention of :meth:`DelayedPlant.simulate`).  Zero by default.
        """
        m, H = self.n_inputs, self.history_steps
        if u_past is None:
            self._history = np.zeros((H, m))       # at rest (at the operating point)
            return
        u_past = check_finite_array("u_past", u_past, ndim=2)
        if u_past.shape != (m, H):
            raise DimensionError(f"u_past has shape {u_past.shape}; expected ({m}, {H}) "
                                 f"(inputs x past steps, oldest first)")
        op = self.operating_point
        self._history = (u_past[:, ::-1].T - (0.0 if op is None else op.input)).copy()

    def __call__(self, x: Any) -> np.ndarray:
        """Command ``u_k`` for the measured state ``x_k``; records it in the history.

        Parameters
        ----------
        x : array_like, shape (n,)

        Returns
        -------
        u : ndarray, shape (m,)

        Raises
        ------
        DimensionError, NonFiniteError, ParameterError
            ``x`` of the wrong shape, not finite or complex, or a command that overflows.
        """
        x = check_finite_array("x", x)
        if x.shape != (self.n_states,):
            raise DimensionError(f"x has shape {x.shape}; expected ({self.n_states},) "
                                 f"(one measured state vector)")
        op = self.operating_point
        with np.errstate(over="ignore", invalid="ignore"):     # refused just below
            u = self._K_x @ (x if op is None else x - op.state)
            if self.history_steps:          # the history holds deviations from u_op
                u = u + np.einsum("hab,hb->a", self._K_u, self._history)
        if not np.all(np.isfinite(u)):      # checked before the history records it
            raise NonFiniteError(f"the command for x (largest |x| {np.max(np.abs(x)):.3g}) "
                                 f"overflows float64 with this gain and command history; "
                                 f"the controller's state is unchanged")
        if self.history_steps:
            self._history = np.concatenate([u[None, :], self._history[:-1]], axis=0)
        return u if op is None else u + op.input

    def with_model(self, model: Any, K: Any = None) -> Any:
        """This controller re-designed for an updated ``model`` (e.g. a new delay estimate).

        Re-used: the gain ``K`` (designed on ``(A_d, B_d)`` it depends on the delay-free
        pair only, not on the delay; designed on ``B_eff`` it does depend on the delays, and
        the re-designed controller warns, :class:`~_toolbox.errors.UnstableLoopWarning`, when
        it does not stabilize the new model; pass ``K`` to replace it) and the other settings
        (``prediction``, ``reference_delay``).  Recomputed: the prediction through the model's
        delay, i.e. the law ``(K_x, K_u)``.  The command history is carried over: the newest
        ``min(H_old, H_new)`` commands, older ones (if the new law needs more) at rest.  The
        result equals a controller built afresh on ``model`` with the same ``K`` and those
        commands; this controller is left unchanged.

        Parameters
        ----------
        model : DelayedPlant or fitted estimator
            The updated model, same numbers of states and inputs.
        K : array_like, shape (m, n), optional
            A new gain (default: keep this controller's).

        Returns
        -------
        controller
            Of this controller's class.

        Raises
        ------
        DimensionError
            ``model`` or ``K`` of other sizes.

        Examples
        --------
        >>> import numpy as np
        >>> from dmdidc import DelayedPlant
        >>> from controllers import lqr_gain
        >>> A_c, B_c = [[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]]
        >>> old = DelayedPlant.from_continuous(A_c, B_c, delay=0.65, dt=0.5, max_delay=4)
        >>> new = DelayedPlant.from_continuous(A_c, B_c, delay=1.3, dt=0.5, max_delay=4)
        >>> ctrl = FractionalDelayController(old, lqr_gain(old))
        >>> updated = ctrl.with_model(new)           # same K, prediction over 1.3 s
        >>> fresh = FractionalDelayController(new, ctrl.K)
        >>> all(np.allclose(a, b) for a, b in zip(updated.feedback_matrices(),
        ...                                        fresh.feedback_matrices()))
        True
        """
        plant = as_plant(model)
        if (plant.n_states, plant.n_inputs) != (self.n_states, self.n_inputs):
            raise DimensionError(f"model has {plant.n_states} states and {plant.n_inputs} "
                                 f"inputs; this controller has {self.n_states} and "
                                 f"{self.n_inputs}")
        new = self._redesigned(plant, self._K if K is None else K)
        new.output_matrix = model_outputs(model)
        keep = min(self.history_steps, new.history_steps)
        # the histories hold deviations from each model's operating input
        shift = _operating_input(self.operating_point) - _operating_input(new.operating_point)
        new._history[:keep] = self._history[:keep] + shift
        return new

    def _redesigned(self, plant: Any, K: Any) -> _LinearFeedback:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_states={self.n_states}, n_inputs={self.n_inputs}, "
                f"history_steps={self.history_steps})")


def _radius(matrix: np.ndarray) -> float:
    """Spectral radius; infinite for a matrix that overflowed float64 (a diverging loop)."""
    if not np.all(np.isfinite(matrix)):
        return np.inf
    return float(np.max(np.abs(np.linalg.eigvals(matrix)), initial=0.0))


def _operating_input(op: Any) -> Any:
    return 0.0 if op is None else op.input


def _law_from_predictor(K: np.ndarray, P_x: np.ndarray,
                        P_u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``u = -K (P_x x + sum P_u[i] u_{k-1-i})`` as ``(K_x, K_u)``."""
    return -K @ P_x, -np.einsum("ab,hbc->hac", K, P_u)


# ---------------------------------------------------------------------------------- predictors
def _powers(A: np.ndarray, count: int) -> list[np.ndarray]:
    out = [np.eye(A.shape[0])]
    for _ in range(count - 1):
        out.append(A @ out[-1])
    return out


def _truncated_predictor(A_d: np.ndarray, B_d: np.ndarray,
                         steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (9.13) per channel: ``A^W x_k + sum_j sum_{h=1}^{w_j} A^{W-w_j+h-1} b_j u^j_{k-h}``."""
    n, m = B_d.shape
    W = int(np.max(steps)) if m else 0
    powers = _powers(A_d, 2 * W + 1)
    P_u = np.zeros((W, n, m))
    for j in range(m):
        for h in range(1, int(steps[j]) + 1):
            P_u[h - 1, :, j] = powers[W - steps[j] + h - 1] @ B_d[:, j]
    return powers[W], P_u


def whole_delay_input_matrix(model: Any) -> np.ndarray:
    """``B_eff`` of the loop ``A_d - B_eff K`` of the whole-period predictive controllers.

    ``B_eff[:, j] = A_d^(W - w_j) B_d[:, j]`` with ``w_j`` the channel's whole delay
    (:attr:`~dmdidc.DelayedPlant.delay_steps`) and ``W`` the largest: a command of channel
    ``j`` reaches the predicted state ``W - w_j`` periods before the prediction instant.  On a
    model whose channels each act in one block (whole delays) the loop of
    :class:`PredictiveController` is exactly ``A_d - B_eff K`` (plus zeros) for both
    predictions; with one common delay ``B_eff = B_d``.  Needs no continuous model.

    Parameters
    ----------
    model : DelayedPlant or fitted estimator

    Returns
    -------
    B_eff : ndarray, shape (n, m)

    Examples
    --------
    >>> from dmdidc import DelayedPlant
    >>> from controllers import PredictiveController, lqr_gain, spectral_radius
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=[2.0, 4.0], dt=2.0)
    >>> K = lqr_gain(plant.A_d, whole_delay_input_matrix(plant))
    >>> bool(spectral_radius(plant, PredictiveController(plant, K)) < 1)
    True
    """
    plant = as_plant(model)
    steps = plant.delay_steps
    W = int(np.max(steps)) if plant.n_inputs else 0
    powers = _powers(plant.A_d, W + 1)
    return np.stack([powers[W - int(w)] @ plant.B_d[:, j] for j, w in enumerate(steps)],
                    axis=1) if plant.n_inputs else np.zeros((plant.n_states, 0))


def _exact_predictor(A_d: np.ndarray, B_blocks: np.ndarray,
                     W: int) -> tuple[np.ndarray, np.ndarray]:
    """``xhat_{k+W}`` iterating ``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j}`` with issued commands."""
    R, n, m = B_blocks.shape[0] - 1, B_blocks.shape[1], B_blocks.shape[2]
    powers = _powers(A_d, W + 1)
    P_u = np.zeros((R, n, m))
    for s in range(W):
        for j in range(s + 1, R + 1):
            P_u[j - s - 1] += powers[W - 1 - s] @ B_blocks[j]
    return powers[W], P_u


class _Exponentials:
    """Memoized ``e^{A_c s}`` and ``Gamma(s) B_c`` (one block exponential per distinct ``s``)."""

    def __init__(self, A_c: np.ndarray, B_c: np.ndarray, dt: float) -> None:
        self.A_c, self.B_c, self.dt = A_c, B_c, dt
        self._cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def __call__(self, s: float) -> tuple[np.ndarray, np.ndarray]:
        key = round(float(s) / self.dt, 12)        # a Python float: no overflow warning
        if key not in self._cache:
            if s >= 0:
                self._cache[key] = zoh_matrices(self.A_c, self.B_c, s)
            else:
                self._cache[key] = (checked_expm(self.A_c, f"A_c * {s} s", s),
                                    np.full(self.B_c.shape, np.nan))
        return self._cache[key]

    def segment_effect(self, channel: int, start: float, tau: float, *,
                       backward: bool = False) -> np.ndarray | None:
        """Effect at ``tau`` of a unit command of ``channel`` held on ``[start, start + dt)``.

        Times are relative to ``kT``.  Only the part inside ``[0, tau)`` counts (the part before
        0 is already in ``x_k``): ``e^{A_c (tau - b)} Gamma(b - a) b_c`` with
        ``[a, b) = [start, start + dt) & [0, tau)``.  With ``backward`` (the single-reference
        predictor) a segment ending after ``tau`` counts whole, propagated backwards from its
        end.  ``None`` if the part is empty.
        """
        a = max(start, 0.0)
        end = start + self.dt if backward else min(start + self.dt, tau)
        if end - a <= _TIME_TOL * self.dt:
            return None
        gamma_b = self(end - a)[1][:, channel]
        return self(tau - end)[0] @ gamma_b


def _snapped_delays(delay: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    steps, fraction = split_delay(delay, dt)
    return (steps + fraction) * dt, steps + (fraction > 0)


def _reference_predictor(A_c: np.ndarray, B_c: np.ndarray, delay: np.ndarray, dt: float,
                         reference: float) -> tuple[np.ndarray, np.ndarray]:
    """Artstein prediction to ``kT + r*`` with not-yet-issued commands taken as zero."""
    n, m = B_c.shape
    r, pending = _snapped_delays(delay, dt)
    H = int(np.max(pending)) if m else 0
    P_u = np.zeros((H, n, m))
    exponentials = _Exponentials(A_c, B_c, dt)
    for j in range(m):
        for h in range(1, int(pending[j]) + 1):
            effect = exponentials.segment_effect(j, r[j] - h * dt, reference, backward=True)
            if effect is not None:
                P_u[h - 1, :, j] = effect
    return checked_expm(A_c, f"A_c * reference_delay ({reference} s)", reference), P_u


def _own_instant_law(A_c: np.ndarray, B_c: np.ndarray, delay: np.ndarray, dt: float,
                     K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``u^i_k = -K_i x(kT + r_i)`` for every channel, as one unit-triangular linear system.

    Unknowns are the commands ``u^i_{k+l}`` whose hold starts (``lT + r_i`` after ``kT``) before
    the slowest channel's instant ``r_max``: exactly the commands that can influence some
    ``x(kT + r_j)``.  Each obeys ``u^i_{k+l} = -K_i x(kT + lT + r_i)`` with the model state,
    which depends on ``x_k``, the past commands and unknowns that start strictly earlier, so
    the system is unit lower triangular in start order and always solvable.
    """
    n, m = B_c.shape
    r, pending = _snapped_delays(delay, dt)
    H = int(np.max(pending)) if m else 0
    r_max = float(np.max(r)) if m else 0.0
    unknowns = [(i, 0) for i in range(m)]
    for i in range(m):
        lead = 1
        while lead * dt + r[i] < r_max - _TIME_TOL * dt * max(1.0, r_max / dt):
            unknowns.append((i, lead))
            lead += 1
    N = len(unknowns)
    M_x = np.zeros((N, n))
    M_u = np.zeros((H, N, m))
    M_v = np.zeros((N, N))
    exponentials = _Exponentials(A_c, B_c, dt)
    for e, (i, lead) in enumerate(unknowns):
        tau = lead * dt + r[i]
        M_x[e] = -K[i] @ exponentials(tau)[0]
        for c in range(m):
            for h in range(1, int(pending[c]) + 1):
                effect = exponentials.segment_effect(c, r[c] - h * dt, tau)
                if effect is not None:
                    M_u[h - 1, e, c] = -K[i] @ effect
        for f, (c, lead_c) in enumerate(unknowns):
            if lead_c * dt + r[c] < tau:
                effect = exponentials.segment_effect(c, lead_c * dt + r[c], tau)
                if effect is not None:
                    M_v[e, f] = -K[i] @ effect
    system = np.eye(N) - M_v
    K_x = np.linalg.solve(system, M_x)[:m]
    K_u = np.stack([np.linalg.solve(system, M_u[h])[:m] for h in range(H)]) if H else \
        np.zeros((0, m, m))
    return K_x, K_u


def reduced_input_matrix(model: Any, reference_delay: float | None = None) -> np.ndarray:
    """``B_eff`` of the loop ``A_d - B_eff K`` of the single-reference fractional controller.

    ``B_eff[:, j] = e^{A_c (r* - r_j)} B_d[:, j]`` with ``B_d = Gamma(T) B_c``: the delay-free
    ZOH input matrix with channel ``j`` moved from its delay ``r_j`` to the reference ``r*``.
    With one common delay and ``r* = r`` it equals ``B_d``.  A gain designed on
    ``(A_d, B_eff)`` makes ``FractionalDelayController(model, K, reference_delay=r*)`` loop
    exactly as ``A_d - B_eff K`` on the model, for any per-channel delays.

    Parameters
    ----------
    model : DelayedPlant or fitted estimator
        Must carry a continuous model (``A_c``, ``B_c``, ``delay``).
    reference_delay : float, optional
        ``r*`` in seconds, default the largest channel delay.

    Returns
    -------
    B_eff : ndarray, shape (n, m)

    Raises
    ------
    NonFiniteError
        ``e^{A_c (r* - r_j)}`` is not finite in float64 (``reference_delay`` far too large).

    References
    ----------
    Artstein (1982), "Linear systems with delayed controls: a reduction", IEEE TAC 27(4).

    Examples
    --------
    >>> from dmdidc import DelayedPlant
    >>> from controllers import FractionalDelayController, lqr_gain, spectral_radius
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=[2.0, 3.3], dt=2.0)
    >>> K = lqr_gain(plant.A_d, reduced_input_matrix(plant, 3.3))   # exact design, r* = 3.3 s
    >>> ctrl = FractionalDelayController(plant, K, reference_delay=3.3)
    >>> bool(spectral_radius(plant, ctrl) < 1)
    True
    """
    plant = as_plant(model)
    A_c, B_c, delay = plant.require_continuous("reduced_input_matrix (eqs. 9.71-9.72)")
    reference = float(np.max(delay)) if reference_delay is None else \
        check_nonnegative("reference_delay", reference_delay)
    _, B_d = zoh_matrices(A_c, B_c, plant.dt)
    return np.stack([checked_expm(A_c, f"A_c * (reference_delay - delay[{j}])",
                                  reference - delay[j]) @ B_d[:, j]
                     for j in range(B_c.shape[1])], axis=1)


def _staggered_monodromy(A_c: np.ndarray, B_c: np.ndarray, dt: float, phases: np.ndarray,
                         K: np.ndarray) -> np.ndarray:
    """One-period map of ``[x; v]``; channel ``j`` resamples ``v_j = -K_j x`` at ``phases[j]``."""
    n, m = B_c.shape
    M = np.eye(n + m)
    now = 0.0

    def hold(length: float) -> np.ndarray:
        Phi, Gamma_B = zoh_matrices(A_c, B_c, length)
        step = np.eye(n + m)
        step[:n, :n], step[:n, n:] = Phi, Gamma_B
        return step

    for phase in np.unique(phases):
        M = hold(phase - now) @ M
        reset = np.eye(n + m)
        for j in np.flatnonzero(phases == phase):
            reset[n + j] = 0.0
            reset[n + j, :n] = -K[j]
        M = reset @ M
        now = phase
    return hold(dt - now) @ M


# ---------------------------------------------------------------------------------- controllers
class NaiveStateFeedback(_LinearFeedback):
    """Delay-naive baseline ``u_k = -K x_k``.

    Parameters
    ----------
    model_or_m : DelayedPlant, fitted estimator, int or None
        Plant (``K`` is checked against its sizes), the number of inputs ``m``, or ``None``
        (sizes taken from ``K``).
    K : array_like, shape (m, n)

    Notes
    -----
    ``feedback_matrices()`` returns ``(-K, zeros((0, m, m)))``: no history.

    Examples
    --------
    >>> import numpy as np
    >>> ctrl = NaiveStateFeedback(None, np.array([[1.0, 2.0]]))
    >>> ctrl(np.array([1.0, 1.0]))
    array([-3.])
    """

    def __init__(self, model_or_m: Any, K: Any) -> None:
        plant = None
        if model_or_m is None:
            K_arr = check_finite_array("K", K, ndim=2)
            m, n = K_arr.shape
        elif isinstance(model_or_m, (int, np.integer)) and not isinstance(model_or_m, bool):
            m = int(model_or_m)
            if m < 1:
                raise ParameterError(f"model_or_m must be a plant or a number of inputs >= 1; "
                                     f"got {m}")
            K_arr = check_finite_array("K", K)
            n = K_arr.shape[-1] if K_arr.ndim else 0
        else:
            plant = as_plant(model_or_m)
            m, n = plant.n_inputs, plant.n_states
        K = _check_gain(K, n, m)
        self.plant, self.output_matrix = plant, model_outputs(model_or_m)
        super().__init__(K, -K, np.zeros((0, m, m)),
                         operating_point=None if plant is None else plant.operating_point)
        if plant is not None:
            self._check_nominal_loop(plant)

    def _redesigned(self, plant: Any, K: Any) -> NaiveStateFeedback:
        return NaiveStateFeedback(plant, K)

    def _unstable_remedy(self, plant: Any) -> str:
        if np.any(plant.active_blocks[1:]):
            return (f"it ignores the model's delays (whole delays "
                    f"{plant.delay_steps.tolist()} periods): use a delay-compensating "
                    f"controller (make_controller('fractional' or 'exact', model)) "
                    f"{_MPC_REMEDY}")
        return f"design K so that A_d - B_d K is stable (lqr_gain(model)) {_MPC_REMEDY}"


class PredictiveController(_LinearFeedback):
    """Predictive feedback over the whole delay (eq. 9.13): ``u_k = -K xhat_{k+w}``.

    Parameters
    ----------
    model : DelayedPlant or fitted estimator
        The controller's model of the plant (e.g. the DMDidc estimate).
    K : array_like, shape (m, n)
        Gain, usually designed on ``(A_d, B_d)`` (:func:`lqr_gain`).
    prediction : {"truncated", "exact"}, default "truncated"
        ``"truncated"``: exactly eq. (9.13) with ``B_d = sum_j B^(j)`` (sum of the model's blocks)
        and the whole delay ``w``; the fractional part ``p`` is ignored, so the command acts
        ``pT`` later than the prediction assumes.  ``"exact"``: ``xhat_{k+w}`` iterated with the
        full multi-block model ``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j}`` (eq. 9.65), exact at
        ``(k+w)T`` but still ``pT`` early.

    Notes
    -----
    With a whole delay (``p = 0``) both predictions are exact and the loop is ``A_d - B_d K``
    (eq. 9.14): lifted eigenvalues ``eig(A_d - B_d K)`` plus zeros.  Whole delays ``w_j`` are the
    model's :attr:`~dmdidc.DelayedPlant.delay_steps` (its first active input block, eq. 9.66:
    the estimator's decision for an identified model; no continuous model needed).  With
    per-channel whole delays
    the horizon is ``W = max_j w_j`` and commands not issued yet are taken as zero; for
    ``"truncated"`` this uses each channel's own ``w_j`` in the sum,
    ``xhat = A_d^W x_k + sum_j sum_{h=1}^{w_j} A_d^{W-w_j+h-1} b_j u^j_{k-h}``
    (``b_j`` column ``j`` of ``B_d``), and on a model without fractional delays the loop is
    ``A_d - B_eff K`` with ``B_eff[:, j] = A_d^{W-w_j} b_j`` (``= B_d`` for a common delay).

    References
    ----------
    Dissertation sec. 9.3, eqs. (9.12)-(9.14); eq. (9.65).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from controllers import lqr_gain
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=2.0, dt=2.0)
    >>> ctrl = PredictiveController(plant, lqr_gain(plant))
    >>> u0 = ctrl(np.array([1.0, 0.0]))
    >>> K_x, K_u = ctrl.feedback_matrices()
    >>> K_x.shape, K_u.shape
    ((2, 2), (1, 2, 2))
    """

    def __init__(self, model: Any, K: Any, *,
                 prediction: Literal["truncated", "exact"] = "truncated") -> None:
        plant = as_plant(model)
        if prediction not in _PREDICTIONS:
            raise ParameterError(f"prediction must be one of {_PREDICTIONS}; got {prediction!r}")
        K = _check_gain(K, plant.n_states, plant.n_inputs)
        steps = plant.delay_steps
        if prediction == "truncated":
            P_x, P_u = _truncated_predictor(plant.A_d, plant.B_d, steps)
        else:
            P_x, P_u = _exact_predictor(plant.A_d, plant.B_blocks, int(np.max(steps)))
        self.prediction = prediction
        self.plant, self.output_matrix = plant, model_outputs(model)
        self.delay_steps = steps
        super().__init__(K, *_law_from_predictor(K, P_x, P_u),
                         operating_point=plant.operating_point)
        self._check_nominal_loop(plant)

    def _redesigned(self, plant: Any, K: Any) -> PredictiveController:
        return PredictiveController(plant, K, prediction=self.prediction)

    def _unstable_remedy(self, plant: Any) -> str:
        reasons = []
        # a channel acting in more than one block: a fractional delay, beyond whole periods
        if np.any(plant.active_blocks.sum(axis=0) > 1):
            reasons.append(f"prediction={self.prediction!r} predicts whole periods only, so "
                           f"with the model's fractional delays each command acts a fraction "
                           f"of a period later than predicted: the fractional controller "
                           f"(make_controller('fractional', model)) predicts to that instant")
        if np.ptp(self.delay_steps) > 0:
            reasons.append(f"with whole delays that differ between channels "
                           f"({self.delay_steps.tolist()} periods) the loop is A_d - B_eff K "
                           f"with B_eff = whole_delay_input_matrix(model), not A_d - B_d K: "
                           f"design K on (A_d, B_eff), as make_controller("
                           f"{self.prediction!r}, model) does")
        if not reasons:
            reasons.append("its loop is A_d - B_d K (eq. 9.14): design K so that it is stable "
                           "(lqr_gain(model))")
        return "; ".join(reasons) + f"; {_MPC_REMEDY}"


class FractionalDelayController(_LinearFeedback):
    """Fractional-delay feedback (eqs. 9.70-9.74): ``u_k = -K x(kT + r)``.

    The state at the instant ``kT + r`` where ``u_k`` starts to act is predicted from ``x_k`` and
    the commands still in flight -- ``w`` whole steps, then the fractional step
    ``x(kT + r) = A_d^(p) x_{k+w} + B_d^(p) u_{k-1}`` with ``A_d^(p) = e^{A_c pT}`` (9.71) and
    ``B_d^(p) = int_0^{pT} e^{A_c (pT - tau)} dtau B_c`` (9.72).

    Why eq. (9.75) holds: let ``y_k = x(kT + r)``.  On ``[kT + r, (k+1)T + r)`` the plant input
    is ``u(t - r) = u_k``, constant, so ``y_{k+1} = A_d y_k + B_d u_k`` exactly, and the law is
    ``u_k = -K y_k``; hence ``y_{k+1} = (A_d - B_d K) y_k``.  In the lifted loop
    ``z_k = [x_k, u_{k-1}, ..., u_{k-L}]`` the map ``z_k -> y_k`` is onto and, after ``L`` steps,
    ``z_k`` is a linear function of ``y_{k-L}``, so the lifted eigenvalues are those of
    ``A_d - B_d K`` plus zeros (verified numerically in the tests by characteristic
    polynomials and by an independent piecewise-exact simulation).

    Parameters
    ----------
    model : DelayedPlant or fitted estimator
        Controller's model; must carry the continuous model ``(A_c, B_c, delay)``.
    K : array_like, shape (m, n)
        Gain designed on the delay-free pair ``(A_d, B_d)`` (:func:`lqr_gain`); with
        ``reference_delay`` given, on ``(A_d, reduced_input_matrix(model, reference_delay))``.
    reference_delay : float, optional
        ``None`` (default): every channel ``j`` uses its own instant ``kT + r_j`` (below).
        A number ``r*`` (seconds): one common prediction instant ``kT + r*`` (below).

    Notes
    -----
    All predictions use the continuous model (exact to rounding): a command of channel ``j``
    held on ``[kT + a, kT + b)`` moves the state at ``kT + tau`` by
    ``e^{A_c (tau - b)} Gamma(b - a) b_j``, ``Gamma(s) = int_0^s e^{A_c t} dt``.  With one common
    delay both modes coincide (``r* = r``) and reproduce eqs. (9.70)-(9.74).

    *Per-channel delays, default mode* -- each channel ``j`` uses ``u^j_k = -K_j x(kT + r_j)``,
    the model state at the instant its own command starts to act.  That state depends on
    commands of faster channels issued at or after ``k``; those are the ones this same law
    issues (they solve a unit-lower-triangular linear system, so the law stays linear and
    causal).  Guarantee, on the model (and on the true plant when the model is exact): the loop
    equals the *delay-free* loop in which channel ``j`` samples the state at the phase
    ``p_j T`` of every period and holds ``-K_j x`` for one period (staggered sampling) --
    independent of the whole delays ``w_j``.  :meth:`nominal_closed_loop` returns that loop's
    period map; when all fractions ``p_j`` are equal (delays differing by whole periods) it is
    exactly ``A_d - B_d K`` (eq. 9.75 extended).  For unequal fractions ``K`` from
    ``(A_d, B_d)`` is not guaranteed to stabilize; the staggered loop tends to ``A_d - B_d K``
    as the fractions approach each other.

    *Per-channel delays, ``reference_delay=r*``* -- a sampled Artstein reduction: the prediction
    is ``e^{A_c r*} (x(kT) + sum_j int_{kT - r_j}^{kT} e^{A_c (kT - s - r_j)} b_j u_j(s) ds)``
    (state at ``kT + r*`` with not-yet-issued commands taken as zero).  It obeys the delay-free
    recursion ``xhat_{k+1} = A_d xhat_k + B_eff u_k`` with ``B_eff`` of
    :func:`reduced_input_matrix`, so the lifted loop has the eigenvalues of
    ``A_d - B_eff K`` and zeros: design ``K`` on ``(A_d, B_eff)`` for a guaranteed loop.

    Raises
    ------
    LogarithmError
        The model has no continuous-time part (e.g. an identified ``A_d`` without a real
        logarithm); the predictive controllers and MPC need none.

    References
    ----------
    Dissertation sec. 9.4.3, eqs. (9.70)-(9.75); Artstein (1982), "Linear systems with delayed
    controls: a reduction", IEEE TAC 27(4).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from controllers import lqr_gain, spectral_radius
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=3.0, dt=2.0)
    >>> K = lqr_gain(plant)
    >>> ctrl = FractionalDelayController(plant, K)
    >>> ctrl.feedback_matrices()[1].shape          # u_{k-1}, u_{k-2} still in flight at kT
    (2, 2, 2)
    >>> target = np.max(np.abs(np.linalg.eigvals(plant.A_d - plant.B_d @ K)))
    >>> bool(np.isclose(spectral_radius(plant, ctrl), target))      # eq. (9.75)
    True
    """

    def __init__(self, model: Any, K: Any, *, reference_delay: float | None = None) -> None:
        plant = as_plant(model)
        K = _check_gain(K, plant.n_states, plant.n_inputs)
        A_c, B_c, delay = plant.require_continuous("FractionalDelayController (eqs. 9.71-9.72)")
        if reference_delay is None:
            K_x, K_u = _own_instant_law(A_c, B_c, delay, plant.dt, K)
        else:
            reference_delay = check_nonnegative("reference_delay", reference_delay)
            try:
                K_x, K_u = _law_from_predictor(
                    K, *_reference_predictor(A_c, B_c, delay, plant.dt, reference_delay))
            except NonFiniteError as exc:
                raise NonFiniteError(f"reference_delay = {reference_delay!r} s: the prediction "
                                     f"to it is not finite ({exc}); choose a reference delay "
                                     f"near the plant's delays {delay.tolist()} s") from exc
        self.plant, self.output_matrix = plant, model_outputs(model)
        self.reference_delay = reference_delay
        super().__init__(K, K_x, K_u, operating_point=plant.operating_point)
        self._check_nominal_loop(plant)

    def _redesigned(self, plant: Any, K: Any) -> FractionalDelayController:
        return FractionalDelayController(plant, K, reference_delay=self.reference_delay)

    def _nominal_radius(self, plant: Any) -> float:
        # the nonzero spectrum of the lifted loop, from an (n or n + m)-sized matrix
        with np.errstate(over="ignore", invalid="ignore"):   # an overflow counts as unstable
            return _radius(self.nominal_closed_loop())

    def _unstable_remedy(self, plant: Any) -> str:
        r = self.reference_delay
        if r is not None:
            return (f"its loop is A_d - B_eff K with B_eff = reduced_input_matrix(model, {r!r}), "
                    f"and K was not designed for it: design K on (A_d, B_eff), as "
                    f"make_controller('fractional', model, reference_delay={r!r}) does, "
                    f"{_MPC_REMEDY}")
        fraction = plant.delay_fraction
        if np.ptp(fraction) > _TIME_TOL:
            slowest = float(np.max(plant.delay))
            return (f"the channels' delay fractions differ ({np.round(fraction, 4).tolist()} "
                    f"of a period), and then K from (A_d, B_d) guarantees nothing: use the "
                    f"reference-delay design, r = {slowest:.6g} s, K = lqr_gain(model.A_d, "
                    f"reduced_input_matrix(model, r)), FractionalDelayController(model, K, "
                    f"reference_delay=r) (what make_controller('fractional', model) builds), "
                    f"{_MPC_REMEDY}")
        return (f"its loop is A_d - B_d K (eq. 9.75): design K so that it is stable "
                f"(lqr_gain(model)) {_MPC_REMEDY}")

    def nominal_closed_loop(self) -> np.ndarray:
        """Loop the controller achieves on its own model (its nonzero eigenvalues are exact).

        Returns
        -------
        ndarray, shape (n, n) or (n + m, n + m)
            ``A_d - B_d K`` (common delay fraction, eq. 9.75); ``A_d - B_eff K`` with
            ``reference_delay``; otherwise the one-period map of ``[x; held commands]`` of the
            staggered-sampling loop (channel ``j`` resamples at ``p_j T``).
        """
        A_c, B_c, delay = self.plant.require_continuous("nominal_closed_loop")
        A_d, B_d = self.plant.A_d, self.plant.B_d
        if self.reference_delay is not None:
            return A_d - reduced_input_matrix(self.plant, self.reference_delay) @ self._K
        _, fraction = split_delay(delay, self.plant.dt)
        if np.ptp(fraction) <= _TIME_TOL:
            return A_d - B_d @ self._K
        return _staggered_monodromy(A_c, B_c, self.plant.dt, fraction * self.plant.dt, self._K)
