"""Following a grid signal with every heat pump: reference, disturbance observer, delay-aware law.

The aggregator broadcasts the identified fleet model (per-unit input ``u / P_max - 0.5``, states
``[T_i, T_h]`` minus the public operating point), the controller and a grid signal ``m(t)``: a
per-unit power modulation every heat pump should add to what it needs for comfort.  Each
household's gateway runs the controller on its own measurements, so no temperature leaves the
house.  Per household and period ``k``:

1. **Disturbance observer** (:class:`DisturbanceObserver`): a steady-state Kalman filter of the
   model augmented with a slowly varying additive disturbance ``c`` (outdoor temperature, sun,
   internal gains and model mismatch lumped together, as in offset-free MPC: Pannocchia and
   Rawlings, AIChE J. 49(2), 2003), driven by the commands actually applied.
2. **Steady-state target** (:func:`steady_state_target`): the floor temperature and power
   ``u_ss`` that hold the air at its setpoint under the estimated ``c``.
3. **Reference**: ``u_ref,k = u_ss + m_k`` and ``x_ref,k = x_ss + dx_k``, where ``dx`` is the
   model's response to the modulation.  Each controller times the modulation by *its own*
   belief about the delay: ``m_k`` is the mean of ``m(t)`` over ``[kT + r', (k+1)T + r')``, the
   interval on which it believes ``u_k`` will act, with ``r'`` the identified delay
   (fractional, MPC), its whole part (truncated) or zero (naive) (:func:`belief_model`).
4. **Feedback** on the deviation ``e_k = xhat_k - x_ref,k``: the controller's linear law
   (:func:`controllers.make_controller`; ``feedback_matrices()`` evaluated for all households
   at once) or the batched MPC (:mod:`simulations.smartgrid.fleet_mpc`), with the history of
   the deviations actually applied after the heat pump's limits (so the prediction through the
   delay uses what the plant really received).

References
----------
Dissertation eqs. (9.13) (truncated), (9.70)-(9.75) (fractional); Pannocchia and Rawlings
(2003); Muske and Badgwell, J. Process Control 12(5), 2002.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import as_generator, check_nonnegative, check_positive, read_only
from dmdidc.model import DelayedPlant

__all__ = [
    "DisturbanceObserver",
    "FleetTracker",
    "GridSignal",
    "LinearLaw",
    "belief_model",
    "steady_state_target",
]

#: Names of the controllers compared, and the delay each one believes in.
TRACKING_CONTROLLERS = ("fractional", "truncated", "naive", "mpc")
#: Per-unit input limits in model coordinates (``u / P_max - 0.5``).
INPUT_LIMITS = (-0.5, 0.5)


@dataclass(frozen=True, eq=False)
class GridSignal:
    """Per-unit power modulation ``m(t)``, piecewise linear between knots (time in seconds).

    Attributes
    ----------
    knots : ndarray, shape (J,)
        ``m`` at ``t = 0, knot_s, 2 knot_s, ...``; constant after the last knot.
    knot_s : float
        Spacing of the knots (the schedule's resolution; 900 s = 15 min).

    Examples
    --------
    >>> signal = GridSignal(np.array([0.0, 0.2, 0.2]), knot_s=900.0)
    >>> float(signal.average(0.0, 900.0)), float(signal.average(900.0, 1800.0))
    (0.1, 0.2)
    """

    knots: np.ndarray
    knot_s: float = 900.0

    def __post_init__(self) -> None:
        knots = np.asarray(self.knots, dtype=float)
        if knots.ndim != 1 or knots.size < 2 or not np.all(np.isfinite(knots)):
            raise DimensionError(f"knots must be a finite 1-D array of at least 2 values; got "
                                 f"shape {knots.shape}")
        object.__setattr__(self, "knots", read_only(knots))
        check_positive("knot_s", self.knot_s)

    def _integral(self, t: np.ndarray) -> np.ndarray:
        """``int_0^t m`` (exact for the piecewise linear ``m``)."""
        knots, h = self.knots, self.knot_s
        areas = np.concatenate([[0.0], np.cumsum(0.5 * (knots[1:] + knots[:-1]) * h)])
        last = knots.size - 1
        t = np.clip(np.asarray(t, dtype=float), 0.0, None)
        j = np.minimum((t // h).astype(int), last)
        tau = t - j * h
        slope = np.where(j < last, (knots[np.minimum(j + 1, last)] - knots[j]) / h, 0.0)
        return areas[j] + knots[j] * tau + 0.5 * slope * tau ** 2

    def average(self, start_s: Any, length_s: float) -> np.ndarray:
        """Mean of ``m`` over ``[start, start + length)`` for every start (seconds)."""
        start = np.asarray(start_s, dtype=float)
        length = check_positive("length_s", length_s)
        return (self._integral(start + length) - self._integral(start)) / length

    @classmethod
    def demand_response_day(cls, *, shaping: float = 0.1, intraday: float = 0.05,
                            hours: float = 26.0,
                            rng: np.random.Generator | int | None = None) -> GridSignal:
        """A day's signal: a day-ahead shape plus a random intraday schedule (15-min knots).

        The shape asks for ``-shaping`` in the morning (7-9 h, half) and evening (17-20 h)
        peaks of the feeder and ``+shaping`` while PV peaks (10:30-14:30); the intraday part is
        i.i.d. normal with standard deviation ``intraday`` per knot (a re-dispatch schedule
        announced ahead).  The whole signal has zero mean over the first 24 h, so it shifts
        energy in time instead of adding or removing it.

        Parameters
        ----------
        shaping, intraday : float
            Amplitudes, fraction of each heat pump's largest power.
        hours : float, default 26
            Length covered (the controllers look ahead beyond midnight).
        rng : numpy.random.Generator or int or None
        """
        check_nonnegative("shaping", shaping)
        check_nonnegative("intraday", intraday)
        rng = as_generator(rng)
        t_h = np.arange(0.0, check_positive("hours", hours) + 0.25, 0.25)
        of_day = t_h % 24.0
        shape = np.zeros_like(t_h)
        shape[(of_day >= 7.0) & (of_day < 9.0)] = -0.5
        shape[(of_day >= 10.5) & (of_day < 14.5)] = 1.0
        shape[(of_day >= 17.0) & (of_day < 20.0)] = -1.0
        knots = shaping * shape + intraday * rng.standard_normal(t_h.size)
        signal = cls(knots)
        mean = float(signal.average(0.0, 86400.0))
        return cls(knots - mean)


    @classmethod
    def flatten(cls, load_kw: Any, *, dt_s: float, fleet_pmax_kw: float, limit: float = 0.25,
                intraday: float = 0.0, hours: float = 26.0,
                rng: np.random.Generator | int | None = None) -> GridSignal:
        """Peak shaving: ask the fleet to absorb the feeder's load deviation from its mean.

        ``m = -(L - mean L) / sum_i P_max,i`` per 15-min knot (``L`` the load forecast averaged
        over each knot), clipped to ``+-limit``, plus an i.i.d. normal intraday schedule of
        standard deviation ``intraday`` per knot (re-dispatch announced ahead, as in
        :meth:`demand_response_day`), shifted to zero mean over the day, so the fleet moves
        energy from the feeder's peaks into its valleys.  The day's profile is repeated beyond
        24 h.

        Parameters
        ----------
        load_kw : array_like, shape (K,)
            Forecast of the feeder load the fleet should flatten (kW per period of ``dt_s``;
            e.g. base loads plus the heat pumps under thermostat control), ``K`` = one day.
        dt_s : float
            Period of ``load_kw``; must divide 900 s.
        fleet_pmax_kw : float
            ``sum_i P_max,i`` of the fleet.
        limit : float, default 0.25
            Largest peak-shaving modulation, fraction of each heat pump's power.
        intraday : float, default 0
            Standard deviation of the intraday schedule per knot (fraction of ``P_max``).
        hours : float, default 26
        rng : numpy.random.Generator or int or None
            Draws the intraday schedule.

        Raises
        ------
        ParameterError
            A period not dividing 900 s, a load not covering whole knots, or bad numbers.
        """
        load = np.asarray(load_kw, dtype=float)
        dt = check_positive("dt_s", dt_s)
        per_knot = round(900.0 / dt)
        if abs(per_knot * dt - 900.0) > 1e-9 or load.ndim != 1 or load.size % per_knot or \
                not np.all(np.isfinite(load)):
            raise ParameterError(f"load_kw must be a finite 1-D array of whole 15-min knots at "
                                 f"a dt_s dividing 900 s; got shape {load.shape}, dt_s={dt_s}")
        check_positive("fleet_pmax_kw", fleet_pmax_kw)
        check_positive("limit", limit)
        check_nonnegative("intraday", intraday)
        knot_load = load.reshape(-1, per_knot).mean(axis=1)
        day = np.clip(-(knot_load - knot_load.mean()) / fleet_pmax_kw, -limit, limit)
        count = int(np.ceil(check_positive("hours", hours) * 4.0)) + 1
        knots = np.resize(day, count)
        if intraday:
            knots = knots + intraday * as_generator(rng).standard_normal(count)
        signal = cls(knots)
        return cls(signal.knots - float(signal.average(0.0, 86400.0)))


def belief_model(name: str, model: DelayedPlant) -> DelayedPlant:
    """The delayed plant controller ``name`` believes in (its reference is timed by it).

    ``"fractional"`` and ``"mpc"``: the identified model; ``"truncated"``: ``B_d`` after the
    whole delay ``w`` (eq. 9.13 ignores the fraction); ``"naive"``: ``B_d`` at once.
    """
    if name not in TRACKING_CONTROLLERS:
        raise ParameterError(f"controller must be one of {TRACKING_CONTROLLERS}; got {name!r}")
    if name in ("fractional", "mpc"):
        return model
    w = 0 if name == "naive" else int(np.min(model.delay_steps))
    blocks = np.zeros((w + 1, model.n_states, model.n_inputs))
    blocks[w] = model.B_d
    if not model.has_continuous:
        return DelayedPlant(model.A_d, blocks, model.dt)
    return DelayedPlant.from_continuous(model.A_c, model.B_c, w * model.dt, model.dt)


def _believed_delay(model: DelayedPlant) -> float:
    """Delay of the (single) input channel in seconds, as the model states it."""
    if model.has_continuous:
        return float(model.delay[0])
    return float(model.delay_steps[0]) * model.dt


@dataclass(frozen=True, eq=False)
class DisturbanceObserver:
    """Steady-state Kalman filter of ``[x; c]`` with ``x_{k+1} = A x + sum_j B^(j) u_{k-j} + c``
    and ``c_{k+1} = c_k + eta_k``, batched over households (rows).

    Build it with :meth:`design`.  ``correct`` takes the prior estimate and the measurement;
    ``predict`` advances the corrected estimate with the applied inputs.
    """

    model: DelayedPlant
    gain: np.ndarray        # (2n, n): correction of [x; c] per innovation

    @classmethod
    def design(cls, model: DelayedPlant, *, measurement_std: Any = (0.1, 0.2),
               state_std: float = 0.03, disturbance_std: float = 0.005) -> DisturbanceObserver:
        """Kalman gain for the given noise levels (K per period; ``measurement_std`` per state).

        Raises
        ------
        ParameterError
            For non-positive noise levels.
        """
        n = model.n_states
        meas = np.asarray(measurement_std, dtype=float)
        if meas.shape != (n,) or np.any(meas <= 0):
            raise ParameterError(f"measurement_std must be {n} positive values; got "
                                 f"{measurement_std!r}")
        check_positive("state_std", state_std)
        check_positive("disturbance_std", disturbance_std)
        A_aug = np.block([[model.A_d, np.eye(n)], [np.zeros((n, n)), np.eye(n)]])
        C = np.hstack([np.eye(n), np.zeros((n, n))])
        W = np.diag(np.r_[np.full(n, state_std ** 2), np.full(n, disturbance_std ** 2)])
        V = np.diag(meas ** 2)
        P = scipy.linalg.solve_discrete_are(A_aug.T, C.T, W, V)
        gain = P @ C.T @ np.linalg.inv(C @ P @ C.T + V)
        return cls(model, read_only(gain))

    def correct(self, x_prior: np.ndarray, c_prior: np.ndarray, y: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """Corrected ``(x, c)``, each (N, n), from the priors and the measurements ``y``."""
        n = self.model.n_states
        update = (y - x_prior) @ self.gain.T
        return x_prior + update[:, :n], c_prior + update[:, n:]

    def predict(self, x: np.ndarray, c: np.ndarray, applied: np.ndarray) -> np.ndarray:
        """Prior ``x`` of the next period; ``applied`` (N, R + 1) the model-coordinate inputs
        ``u_k .. u_{k-R}`` (newest first)."""
        forcing = applied @ self.model.B_blocks[:, :, 0]
        return x @ self.model.A_d.T + forcing + c


#: Largest condition number of the steady-state balance a model may have to be tracked.
_TARGET_CONDITION = 1e8


def _target_matrix(model: DelayedPlant) -> np.ndarray:
    """``[(I - A)[:, 1], -B_d]``: unknowns ``x_1`` and ``u`` of the steady state."""
    if model.n_states != 2 or model.n_inputs != 1:
        raise DimensionError(f"the tracking needs a model with 2 states and 1 input; got "
                             f"{model.n_states} states, {model.n_inputs} inputs")
    I_A = np.eye(2) - model.A_d
    M = np.column_stack([I_A[:, 1], -model.B_d[:, 0]])
    if not np.isfinite(np.linalg.cond(M)) or np.linalg.cond(M) > _TARGET_CONDITION:
        raise ParameterError(f"the model cannot hold the air temperature at a target: its "
                             f"steady-state balance [(I - A_d)[:, 1], -B_d] has condition number "
                             f"{np.linalg.cond(M):.3g} (> {_TARGET_CONDITION:.0e}); B_d = "
                             f"{model.B_d[:, 0]}")
    return M


def steady_state_target(model: DelayedPlant, c: np.ndarray, indoor: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """States and input holding ``T_i`` (first state) at ``indoor`` under the disturbance ``c``.

    Solves ``(I - A) x = B_d u + c`` with ``x_0 = indoor`` for ``x_1`` and ``u``.

    Parameters
    ----------
    model : DelayedPlant
        Two states, one input.
    c : ndarray, shape (N, 2)
    indoor : float
        Target of the first state (model coordinates).

    Returns
    -------
    x_ss : ndarray, shape (N, 2)
    u_ss : ndarray, shape (N,)

    Raises
    ------
    DimensionError
        Not two states and one input.
    ParameterError
        The balance is singular (e.g. a noisy model with ``B_d`` near zero).
    """
    M = _target_matrix(model)
    rhs = c - (np.eye(2) - model.A_d)[:, 0] * indoor
    solution = np.linalg.solve(M, rhs.T).T
    x_ss = np.column_stack([np.full(len(c), indoor), solution[:, 0]])
    return x_ss, solution[:, 1]


@dataclass(frozen=True, eq=False)
class LinearLaw:
    """``nu_k = K_x e_k + sum_i K_u[i-1] nu_{k-i}`` for all households (rows) at once.

    Build it from any linear controller of :mod:`controllers` with :meth:`from_controller`.
    """

    K_x: np.ndarray         # (1, n)
    K_u: np.ndarray         # (H, 1, 1)

    @classmethod
    def from_controller(cls, controller: Any) -> LinearLaw:
        """Take ``controller.feedback_matrices()`` (one input)."""
        K_x, K_u = controller.feedback_matrices()
        return cls(read_only(K_x), read_only(K_u))

    @property
    def history_steps(self) -> int:
        """Past deviations the law reads."""
        return self.K_u.shape[0]

    def __call__(self, e: np.ndarray, history: np.ndarray, **_: Any) -> np.ndarray:
        """Deviation commands (N,) from ``e`` (N, n) and ``history`` (N, H), newest first."""
        nu = e @ self.K_x[0]
        if self.history_steps:
            nu = nu + history[:, :self.history_steps] @ self.K_u[:, 0, 0]
        return nu


class FleetTracker:
    """One controller on every household: observer, reference, feedback, limits (module notes).

    Parameters
    ----------
    model : DelayedPlant
        The identified fleet model (per-unit input, offset states).
    belief : DelayedPlant
        :func:`belief_model` of the controller: times the reference.
    law : callable
        ``law(e, history, reference=..., x_ref=..., k=...) -> nu`` (:class:`LinearLaw` or
        :class:`simulations.smartgrid.fleet_mpc.FleetMPC`).
    observer : DisturbanceObserver
    signal : GridSignal
    indoor : float
        Air-temperature setpoint in model coordinates.
    horizon_steps : int
        Periods of reference computed ahead (the MPC's prediction horizon; >= 1).
    """

    def __init__(self, model: DelayedPlant, belief: DelayedPlant, law: Any,
                 observer: DisturbanceObserver, signal: GridSignal, *, indoor: float,
                 horizon_steps: int = 1) -> None:
        self.model, self.belief, self.law = model, belief, law
        self.observer, self.signal, self.indoor = observer, signal, float(indoor)
        self.horizon_steps = max(int(horizon_steps), 1)
        self.delay_s = _believed_delay(belief)

    def reference(self, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """Modulation commands ``m_k`` (steps + horizon,) and the belief model's response
        ``dx`` (steps + horizon + 1, n) from rest."""
        T = self.model.dt
        total = steps + self.horizon_steps + self.belief.max_delay + 1
        m = self.signal.average(np.arange(total) * T + self.delay_s, T)
        dx = self.belief.simulate(np.zeros(self.belief.n_states), m[None, :]).T
        return m, dx

    def run(self, plant_step: Any, y_first: np.ndarray, u_past: np.ndarray, steps: int,
            measure: Any) -> np.ndarray:
        """Closed loop over ``steps`` periods.

        Parameters
        ----------
        plant_step : callable
            ``plant_step(k, u) -> None`` applies the model-coordinate commands ``u`` (N,).
        y_first : ndarray, shape (N, n)
            Measurement at ``k = 0`` (model coordinates).
        u_past : ndarray, shape (N, R)
            Model-coordinate commands before ``k = 0``, oldest first.
        steps : int
        measure : callable
            ``measure(k) -> y`` (N, n) after ``plant_step(k - 1, ...)``.

        Returns
        -------
        ndarray, shape (N, steps)
            The model-coordinate commands sent.
        """
        N = y_first.shape[0]
        R = self.model.max_delay
        history_len = max(getattr(self.law, "history_steps", 0), R)
        m, dx = self.reference(steps)
        applied = np.zeros((N, R + 1))                      # u_k .. u_{k-R}, newest first
        applied[:, 1:] = u_past[:, ::-1][:, :R]
        x_prior, c_prior = y_first.copy(), np.zeros_like(y_first)
        x_ss, u_ss = steady_state_target(self.model, c_prior, self.indoor)
        # deviations before the start: what was applied minus the first reference
        nu_history = np.repeat((applied[:, 1:2] - u_ss[:, None]), history_len, axis=1)
        commands = np.empty((N, steps))
        y = y_first
        for k in range(steps):
            x_hat, c_hat = self.observer.correct(x_prior, c_prior, y)
            x_ss, u_ss = steady_state_target(self.model, c_hat, self.indoor)
            u_ref = u_ss + m[k]
            e = x_hat - (x_ss + dx[k])
            nu = self.law(e, nu_history, u_ss=u_ss, x_ss=x_ss, m=m[k:], dx=dx[k:], k=k)
            u = np.clip(u_ref + nu, *INPUT_LIMITS)
            nu_history = np.concatenate([(u - u_ref)[:, None], nu_history[:, :-1]], axis=1)
            applied = np.concatenate([u[:, None], applied[:, :-1]], axis=1)
            commands[:, k] = u
            plant_step(k, u)
            x_prior = self.observer.predict(x_hat, c_hat, applied)
            c_prior = c_hat
            if k + 1 < steps:
                y = measure(k + 1)
        return commands
