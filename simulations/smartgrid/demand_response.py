"""Delay-aware demand response in closed loop on the *true* heterogeneous fleet (issue 10, item 5).

The aggregator designs every controller on one identified fleet model (per-unit input, offset
states: :mod:`simulations.smartgrid.private_identification`) and each household's gateway runs
it (:class:`~simulations.smartgrid.tracking.FleetTracker`) on the true house: its own thermal
parameters, COP, delay, weather, sun, occupancy-driven gains and noisy sensors
(:class:`~simulations.smartgrid.operation.FleetDynamics`).

Metrics, per controller (:func:`run_demand_response`):

* **tracking error** of the aggregate power: the grid asks every heat pump to add
  ``P_max,i m(t)`` to what it needs for comfort, so the fleet should draw
  ``P_0(t) + sum_i P_max,i m(t)``; ``P_0`` is what the same controller draws with ``m = 0``
  (a second closed loop on the same day with the same noise), so comfort feedback common to both
  runs cancels and the error measures how well the modulation is delivered *in time* -- the
  part a wrong delay belief gets wrong.  Power is the electrical power the compressors draw per
  period, after each house's true delay (:func:`~simulations.smartgrid.operation.
  applied_power`);
* **comfort violation**: degree-hours of the true air temperature outside the band
  ``setpoint +- comfort_K``, per household (mean over the fleet);
* **energy** drawn by the fleet's heat pumps, kWh.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError, SolverError
from _toolbox.validation import as_generator, check_integer, check_positive
from controllers import lqr_gain, make_controller
from dmdidc.model import DelayedPlant
from simulations.smartgrid.household import Household
from simulations.smartgrid.operation import FleetDynamics, FleetRecord, applied_power
from simulations.smartgrid.tracking import (
    INPUT_LIMITS,
    TRACKING_CONTROLLERS,
    DisturbanceObserver,
    FleetTracker,
    GridSignal,
    LinearLaw,
    belief_model,
    steady_state_target,
)

__all__ = ["ControlOutcome", "DemandResponseResult", "run_demand_response", "design_law"]

#: State weight of every controller (air temperature dominates comfort) and input weight, in
#: model coordinates (K, fraction of P_max).
STATE_WEIGHT = (1.0, 0.1)
INPUT_WEIGHT = 1.0


@dataclass(frozen=True, eq=False)
class ControlOutcome:
    """One controller's closed loop on the true fleet (time on the last axis).

    Attributes
    ----------
    power_kw, baseline_kw, target_kw : ndarray, shape (K,)
        Aggregate heat-pump power with the grid signal, without it, and the target
        ``baseline + sum_i P_max,i m`` (``K`` periods after the warm-up).
    commands_kw : ndarray, shape (N, K)
        Commands sent with the signal.
    applied_kw : ndarray, shape (N, K)
        Power drawn per household (after each house's delay).
    indoor_c : ndarray, shape (N, K + 1)
        True air temperature with the signal.
    tracking_rmse_kw, comfort_violation_Kh, energy_kwh : float
        The metrics (module notes).
    """

    power_kw: np.ndarray
    baseline_kw: np.ndarray
    target_kw: np.ndarray
    commands_kw: np.ndarray
    applied_kw: np.ndarray
    indoor_c: np.ndarray
    tracking_rmse_kw: float
    comfort_violation_Kh: float
    energy_kwh: float

    def metrics(self) -> dict[str, float]:
        """The three numbers a summary reports."""
        return {"tracking_rmse_kw": self.tracking_rmse_kw,
                "comfort_violation_Kh": self.comfort_violation_Kh,
                "energy_kwh": self.energy_kwh}


@dataclass(frozen=True, eq=False)
class DemandResponseResult:
    """Every controller's outcome on one day, with what they shared."""

    outcomes: dict[str, ControlOutcome]
    requested_kw: np.ndarray          # (K,) sum_i P_max,i m over each period
    dt_s: float
    #: controller -> why it has no outcome (its design or solver failed; the others ran)
    notes: dict[str, str] = field(default_factory=dict)


def design_law(name: str, model: DelayedPlant, *, households: int, horizon_steps: int,
               comfort: tuple[float, float]) -> Any:
    """The deviation law of controller ``name`` on ``model`` (LQR weights of the module).

    ``"fractional"``, ``"truncated"``, ``"naive"``: :func:`controllers.make_controller`'s linear
    law; ``"mpc"``: :class:`~simulations.smartgrid.fleet_mpc.FleetMPC` with the heat pump's
    limits and the comfort band (model coordinates).
    """
    if name not in TRACKING_CONTROLLERS:
        raise ParameterError(f"controller must be one of {TRACKING_CONTROLLERS}; got {name!r}")
    Q, R = np.diag(STATE_WEIGHT), np.array([[INPUT_WEIGHT]])
    if name == "mpc":
        from simulations.smartgrid.fleet_mpc import FleetMPC  # cvxpy: only for an MPC

        return FleetMPC(model, households=households, horizon=horizon_steps, Q=Q, R=R,
                        input_limits=INPUT_LIMITS, comfort=comfort)
    return LinearLaw.from_controller(make_controller(name, model, K=lqr_gain(model, Q=Q, R=R)))


def _check_day(control: FleetRecord) -> None:
    if control.U.shape[-1] < control.steps_per_day:
        raise ParameterError(f"control must hold at least one day ({control.steps_per_day} "
                             f"periods); got {control.U.shape[-1]}")


def run_demand_response(model: DelayedPlant, control: FleetRecord, signal: GridSignal, *,
                        controllers: Sequence[str] = TRACKING_CONTROLLERS,
                        comfort_K: float = 1.0, offsets_c: tuple[float, float] = (21.0, 25.0),
                        horizon_steps: int = 12, steps: int | None = None,
                        warmup_steps: int = 0, progress: Callable[[str], None] | None = None,
                        rng: np.random.Generator | int | None = None) -> DemandResponseResult:
    """Closed loops of the controllers designed on ``model`` on the true fleet of ``control``.

    Parameters
    ----------
    model : DelayedPlant
        The identified fleet model: input ``u / P_max - 0.5``, states ``[T_i, T_h] - offsets``.
    control : FleetRecord
        The day to control (:func:`~simulations.smartgrid.simulate_fleet` with
        ``excitation=0``): its households, disturbances, setpoints and initial state are used;
        its commands are the uncontrolled (thermostat) operation.
    signal : GridSignal
        Per-unit modulation ``m(t)``, time 0 = the record's first step.
    controllers : sequence of str, default all of ``("fractional", "truncated", "naive",
        "mpc")``
    comfort_K : float, default 1.0
        Half-width of the comfort band around each household's setpoint, K.
    offsets_c : (float, float), default (21, 25)
        The model's public operating point (what the households subtracted when sharing).
    horizon_steps : int, default 12
        MPC decision moves.
    steps : int, optional
        Periods simulated (default: the record's length).
    warmup_steps : int, default 0
        Periods at the start run without the signal and left out of the metrics and of the
        returned arrays (the observers converge from the thermostat's state); the signal's
        time 0 is their end.  ``warmup_steps * T`` must be whole knots of the signal.
    progress : callable, optional
        Called with the controller's name before each closed loop (e.g. a tqdm update).
    rng : numpy.random.Generator or int or None
        Sensor noise (0.1 K / 0.2 K, the same draw for every controller).

    Returns
    -------
    DemandResponseResult
        A controller whose design or solver failed (:class:`controllers.SolverError`) has no
        outcome and its reason in ``notes``; the others ran (a ``RuntimeWarning`` names it).

    Raises
    ------
    ParameterError
        Unknown controller, bad band, horizon or length, or a model that cannot hold a
        temperature target (singular steady-state balance).
    controllers.SolverError
        Every controller failed (no stabilizing gain on the model, MPC solver failures): the
        message gives each one's reason.

    Examples
    --------
    >>> from simulations.smartgrid import (aggregate_statistics, draw_households,
    ...     household_statistics, identify_fleet, load_profiles, simulate_fleet)
    >>> fleet, profiles = draw_households(4, rng=0), load_profiles("extract")
    >>> record = simulate_fleet(fleet, profiles, start_day=330, days=14, excitation=0.5,
    ...                         excitation_signal="binary", rng=1)
    >>> fit = identify_fleet(aggregate_statistics([household_statistics(record, i,
    ...                      max_delay=3) for i in range(4)]), dt_s=300.0, max_delay=3)
    >>> day = simulate_fleet(fleet, profiles, start_day=10, days=1, excitation=0.0, rng=2)
    >>> result = run_demand_response(fit.model, day, GridSignal.demand_response_day(rng=3),
    ...                              controllers=("fractional", "naive"), rng=4)
    >>> rmse = {k: o.tracking_rmse_kw for k, o in result.outcomes.items()}
    >>> rmse["fractional"] < rmse["naive"]
    True
    """
    _check_day(control)
    names = list(controllers)
    for name in names:
        if name not in TRACKING_CONTROLLERS:
            raise ParameterError(f"controllers must be among {TRACKING_CONTROLLERS}; got "
                                 f"{name!r}")
    comfort_K = check_positive("comfort_K", comfort_K)
    horizon_steps = check_integer("horizon_steps", horizon_steps, minimum=1)
    K = control.U.shape[-1] if steps is None else check_integer("steps", steps, minimum=1)
    if K > control.U.shape[-1]:
        raise ParameterError(f"steps must be <= the record's {control.U.shape[-1]} periods; got "
                             f"{K}")
    households = control.households
    N, dt = len(households), control.dt_s
    W = check_integer("warmup_steps", warmup_steps, minimum=0)
    if W >= K:
        raise ParameterError(f"warmup_steps must be < the {K} periods simulated; got {W}")
    knots_before = W * dt / signal.knot_s
    if abs(knots_before - round(knots_before)) > 1e-9:
        raise ParameterError(f"warmup_steps * dt_s = {W * dt} s must be whole knots of the "
                             f"signal ({signal.knot_s} s)")
    delayed = GridSignal(np.concatenate([np.zeros(round(knots_before)), signal.knots]),
                         signal.knot_s) if W else signal
    p_max = np.array([h.parameters.heat_pump_max_kw for h in households])
    offsets = np.asarray(offsets_c, dtype=float)
    noise = np.array([0.1, 0.2])[None, :, None] * as_generator(rng).standard_normal(
        (N, 2, K + 1))
    indoor = float(control.setpoint_c[:, 0].mean() - offsets[0])
    comfort = (indoor - comfort_K, indoor + comfort_K)
    steady_state_target(model, np.zeros((1, 2)), 0.0)     # refuses a model it cannot track
    observer = DisturbanceObserver.design(model)
    requested = p_max.sum() * signal.average(np.arange(K - W) * dt, dt)
    outcomes: dict[str, ControlOutcome] = {}
    notes: dict[str, str] = {}
    for name in names:
        if progress is not None:
            progress(name)
        runs = {}
        try:
            for label, active in (("signal", delayed), ("baseline", _silent(delayed))):
                law = design_law(name, model, households=N, horizon_steps=horizon_steps,
                                 comfort=comfort)
                runs[label] = _closed_loop(households, control, model, law, observer, active,
                                           name, indoor, horizon_steps, noise, offsets, p_max,
                                           K)
        except SolverError as exc:
            # one controller's failure (e.g. the MPC's solver) says nothing about the others'
            notes[name] = f"{name} failed: {exc}"
            continue
        (commands, applied, indoor_c), (_, base_applied, _) = runs["signal"], runs["baseline"]
        commands, applied, indoor_c = commands[:, W:], applied[:, W:], indoor_c[:, W:]
        power, baseline = applied.sum(axis=0), base_applied[:, W:].sum(axis=0)
        target = baseline + requested
        setpoints = np.concatenate([control.setpoint_c, control.setpoint_c[:, -1:]],
                                   axis=1)[:, W:K + 1]
        outside = np.maximum(np.abs(indoor_c - setpoints) - comfort_K, 0.0)
        outcomes[name] = ControlOutcome(
            power, baseline, target, commands, applied, indoor_c,
            float(np.sqrt(np.mean((power - target) ** 2))),
            float(outside[:, 1:].sum(axis=1).mean() * dt / 3600.0),
            float(power.sum() * dt / 3600.0))
    if not outcomes:
        raise SolverError("every controller failed on this model: " + "; ".join(notes.values()))
    for name, note in notes.items():
        warnings.warn(f"run_demand_response: controller {name!r} has no outcome ({note}); the "
                      f"others ran (DemandResponseResult.notes)", RuntimeWarning, stacklevel=2)
    return DemandResponseResult(outcomes, requested, dt, notes)


def _silent(signal: GridSignal) -> GridSignal:
    return GridSignal(np.zeros_like(signal.knots), signal.knot_s)


def _closed_loop(households: Sequence[Household], control: FleetRecord, model: DelayedPlant,
                 law: Any, observer: DisturbanceObserver, signal: GridSignal, name: str,
                 indoor: float, horizon_steps: int, noise: np.ndarray, offsets: np.ndarray,
                 p_max: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One controller on the true fleet: (commands kW (N, K), applied kW (N, K), T_i (N, K+1))."""
    dynamics = FleetDynamics(households, control.D)
    R_true = dynamics.R
    x = control.X_true[:, :, 0].copy()
    u_past_kw = control.U_past[:, 0]                      # (N, R_true), oldest first
    # u_{-1} .. u_{-R-1}, newest first: plant_step prepends u_k and drops the oldest
    history = np.concatenate([u_past_kw[:, ::-1], u_past_kw[:, :1]], axis=1)[:, :R_true + 1]
    states = np.empty((len(households), 2, K + 1))
    states[:, :, 0] = x
    commands_kw = np.empty((len(households), K))

    def plant_step(k: int, u: np.ndarray) -> None:
        nonlocal x, history
        u_kw = (u + 0.5) * p_max
        commands_kw[:, k] = u_kw
        history = np.concatenate([u_kw[:, None], history[:, :-1]], axis=1)
        x = dynamics.step(x, history, k)
        states[:, :, k + 1] = x

    def measure(k: int) -> np.ndarray:
        return states[:, :, k] + noise[:, :, k] - offsets

    tracker = FleetTracker(model, belief_model(name, model), law, observer, signal,
                           indoor=indoor, horizon_steps=horizon_steps)
    R_model = model.max_delay
    u_past_model = u_past_kw / p_max[:, None] - 0.5
    if u_past_model.shape[1] < R_model:
        pad = np.repeat(u_past_model[:, :1], R_model - u_past_model.shape[1], axis=1)
        u_past_model = np.concatenate([pad, u_past_model], axis=1)
    tracker.run(plant_step, measure(0), u_past_model[:, -R_model:] if R_model else
                u_past_model[:, :0], K, measure)
    applied = applied_power(households, commands_kw, u_past_kw)
    return commands_kw, applied, states[:, 0]
