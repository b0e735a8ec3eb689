"""Operation and identification data of a heat-pump fleet: thermostat PI plus the aggregator's
excitation, real weather, occupancy-driven gains, noisy temperature measurements.

Every household runs a room-temperature PI thermostat (proportional band: full power at 2 K,
integral time 3 h, anti-windup by conditional integration) with setpoint ``setpoint_c`` while
someone is home and ``setpoint_c - setback_K`` otherwise; the aggregator adds a random excitation
``excitation * P_max * s_k`` (``s_k`` i.i.d. per period, uniform on [-1, 1] or, with
``excitation_signal="binary"``, a random sign: the binary test signal has three times the power
of the uniform one for the same amplitude) and the command is limited to ``[0, P_max]``.  The
command reaches the compressor after the household's delay.  All households advance together
(batched numpy), exactly as
:meth:`simulations.smartgrid.Household.simulate` (tested).

What the identifier sees and what it does not
---------------------------------------------
It sees the measured temperatures ``X = [T_i; T_h] + noise`` (n = 2, Gaussian, ``noise_K``) and
the commands ``U`` (m = 1, kW).  It does not see the disturbances: relative to the plant
``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j}`` at the reference COP they enter as *process noise*

    w_k = (g_k - 1) sum_j B^(j) u_{k-j} + E_d d_k,

which is coloured (daily weather and occupancy cycles), has a non-zero mean (outdoor temperature,
solar and internal gains keep the house warm) and is correlated with the commands through the
thermostat.  A regression without intercept absorbs the mean into ``A_d``; removing each
trajectory's mean (:meth:`FleetRecord.snapshots` with ``center=True``) is least squares with one
intercept per trajectory (Frisch-Waugh-Lovell), which the DMDidc estimator accepts as explicit
snapshot pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from _toolbox.errors import ParameterError
from _toolbox.validation import (
    as_generator,
    check_in_interval,
    check_integer,
    check_nonnegative,
    read_only,
)
from dmdidc.regression import lagged_inputs
from simulations.smartgrid.household import Household
from simulations.smartgrid.occupancy import (
    Occupancy,
    base_load,
    internal_gains,
    simulate_occupancy,
)
from simulations.smartgrid.profiles import ProfileData, check_day

__all__ = ["FleetDynamics", "FleetRecord", "applied_power", "check_excitation", "simulate_fleet"]

#: Laws of the aggregator's per-period excitation.
EXCITATION_SIGNALS = ("uniform", "binary")
PROPORTIONAL_BAND_K = 2.0
INTEGRAL_TIME_S = 3 * 3600.0


@dataclass(frozen=True, eq=False)
class FleetRecord:
    """Simulated operation of a fleet (time on the last axis; ``N`` households, ``K`` steps).

    Attributes
    ----------
    households : tuple of Household
    start_day, days : int
        Day of year of the first step (0-based) and number of days.
    X : ndarray, shape (N, 2, K + 1)
        Measured ``[T_i, T_h]`` (C), what the household can share.
    X_true : ndarray, shape (N, 2, K + 1)
        Noise-free states.
    U : ndarray, shape (N, 1, K)
        Commanded heat-pump electrical power (kW), held over each period.
    U_past : ndarray, shape (N, 1, R)
        Commands before the record (the thermostat's steady command at the start), oldest
        first, ``R`` the largest delay bound of the fleet's plants.
    excitation_kw : ndarray, shape (N, 1, K)
        The aggregator's random excitation added to the thermostat's command before the limits
        (known to the aggregator, independent of noise and disturbances: an instrument).
    D : ndarray, shape (N, 3, K)
        Disturbances ``[outdoor C, irradiance kW/m^2, internal gains kW]`` (unknown to the
        identifier).
    setpoint_c : ndarray, shape (N, K)
    base_load_kw : ndarray, shape (N, K)
        Electric base load (without the heat pump).
    occupancy : tuple of Occupancy
        Ground truth per household.
    shape_index : ndarray of int, shape (N,)
        SimBench household shape used by each household.
    """

    households: tuple[Household, ...]
    start_day: int
    days: int
    X: np.ndarray
    X_true: np.ndarray
    U: np.ndarray
    U_past: np.ndarray
    excitation_kw: np.ndarray
    D: np.ndarray
    setpoint_c: np.ndarray
    base_load_kw: np.ndarray
    occupancy: tuple[Occupancy, ...]
    shape_index: np.ndarray

    @property
    def dt_s(self) -> float:
        """Sampling period ``T``, seconds."""
        return self.households[0].dt_s

    @property
    def steps_per_day(self) -> int:
        """Periods per day."""
        return round(86400.0 / self.dt_s)

    def trajectories(self, household: int, *, days_per_trajectory: int = 1,
                     measured: bool = True) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """One household's data split into trajectories for DMDidc / sufficient statistics.

        Parameters
        ----------
        household : int
            Index ``0 .. N-1``.
        days_per_trajectory : int, default 1
            Days per trajectory (consecutive trajectories share their boundary state).
        measured : bool, default True
            Measured (noisy) states, or the true ones.

        Returns
        -------
        X_list : list of ndarray, shape (2, L + 1) each
        U_list : list of ndarray, shape (1, L) each
        """
        i = self._index(household)
        span = check_integer("days_per_trajectory", days_per_trajectory, minimum=1)
        span *= self.steps_per_day
        states = (self.X if measured else self.X_true)[i]
        K = self.U.shape[-1]
        starts = range(0, K, span)
        return ([states[:, a:min(a + span, K) + 1] for a in starts],
                [self.U[i][:, a:min(a + span, K)] for a in starts])

    def applied_power(self) -> np.ndarray:
        """Electrical power the compressors draw, averaged over each period: shape (N, K).

        See :func:`applied_power`; this, not ``U``, is what the grid sees.
        """
        return applied_power(self.households, self.U[:, 0], self.U_past[:, 0])

    def snapshots(self, household: int, max_delay: int, *, days_per_trajectory: int = 1,
                  center: bool = True, measured: bool = True
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Regression snapshot pairs ``(X_k, U_lagged, X_{k+1})`` for ``DMDidc.fit(..., Y=...)``.

        With ``center=True`` every trajectory's regressors and targets have their own mean
        removed, which equals least squares with one intercept per trajectory.  ``measured``
        as in :meth:`trajectories`.

        Returns
        -------
        Xk : ndarray, shape (2, N)
        U_lagged : ndarray, shape (R + 1, N)
            ``[u_k; u_{k-1}; ...; u_{k-R}]``.
        Y : ndarray, shape (2, N)
        """
        R = check_integer("max_delay", max_delay, minimum=0)
        parts = []
        for X, U in zip(*self.trajectories(household, days_per_trajectory=days_per_trajectory,
                                           measured=measured), strict=True):
            if U.shape[1] <= R:
                continue
            Phi = np.concatenate([X[:, R:-1], lagged_inputs(U, R)], axis=0)
            Y = X[:, R + 1:]
            if center:
                Phi = Phi - Phi.mean(axis=1, keepdims=True)
                Y = Y - Y.mean(axis=1, keepdims=True)
            parts.append((Phi, Y))
        Phi = np.concatenate([p for p, _ in parts], axis=1)
        Y = np.concatenate([y for _, y in parts], axis=1)
        return Phi[:2], Phi[2:], Y

    def _index(self, household: int) -> int:
        i = check_integer("household", household, minimum=0)
        if i >= len(self.households):
            raise ParameterError(f"household must be < {len(self.households)}; got {i}")
        return i


def check_excitation(excitation: object, *, instrument: bool = False) -> float:
    """The aggregator's excitation amplitude, a fraction of each heat pump's largest power:
    ``[0, 1]``, or ``(0, 1]`` where it is the ``instrument`` of a fleet fit (with 0 the data
    carry no information about the heat pump's effect).  Beyond 1 the command, limited to
    ``[0, P_max]``, only saturates.  The one check of the fleet's simulation, the scenario and
    the sweeps.

    Examples
    --------
    >>> check_excitation(0.5), check_excitation(0.0)
    (0.5, 0.0)
    """
    return check_in_interval("excitation", excitation, 0.0, 1.0, low_open=instrument)


def simulate_fleet(households: Sequence[Household], profiles: ProfileData, *, start_day: int,
                   days: int, setpoint_c: float = 21.0, setback_K: float = 0.0,
                   excitation: float = 0.3, excitation_signal: str = "uniform",
                   noise_K: tuple[float, float] = (0.1, 0.2), progress: bool = False,
                   rng: np.random.Generator | int | None = None) -> FleetRecord:
    """Simulate the fleet's operation with real weather, occupancy and the aggregator's excitation.

    Parameters
    ----------
    households : sequence of Household
        Same sampling period for all.
    profiles : ProfileData
        Weather and household shapes (:func:`simulations.smartgrid.load_profiles`).
    start_day : int
        First day of year (0-based; 0 = Friday 1 January 2016).
    days : int
        Days simulated.
    setpoint_c : float, default 21
        Comfort setpoint while someone is home.
    setback_K : float, default 0
        Setpoint reduction while the house is empty (smart thermostats' away mode).
    excitation : float, default 0.3
        Amplitude of the aggregator's random excitation as a fraction of each heat pump's
        largest power, in [0, 1] (0: plain thermostat operation; beyond 1 the commands, limited
        to [0, P_max], only saturate: :func:`check_excitation`).
    excitation_signal : {"uniform", "binary"}, default "uniform"
        Law of the per-period excitation ``s_k``: uniform on [-1, 1] or a random sign +-1
        (a random binary sequence: for a given amplitude it has the largest power, so the
        data carry the most information about the heat pump's effect per unit of amplitude).
    noise_K : (float, float), default (0.1, 0.2)
        Standard deviation of the measurement noise on ``T_i`` (thermostat) and ``T_h``
        (heat-pump sensor), K.
    progress : bool, default False
        Show a progress bar.
    rng : numpy.random.Generator or int or None

    Returns
    -------
    FleetRecord

    Raises
    ------
    ParameterError
        For an empty fleet, mixed sampling periods or out-of-range settings.

    Examples
    --------
    >>> from simulations.smartgrid import draw_households, load_profiles
    >>> fleet = draw_households(3, rng=0)
    >>> record = simulate_fleet(fleet, load_profiles("extract"), start_day=10, days=2, rng=0)
    >>> record.X.shape, record.U.shape
    ((3, 2, 577), (3, 1, 576))
    """
    households = tuple(households)
    if not households or not all(isinstance(h, Household) for h in households):
        raise ParameterError("households must be a non-empty sequence of Household")
    dt = households[0].dt_s
    if any(h.dt_s != dt for h in households):
        raise ParameterError(f"all households must share one sampling period; got "
                             f"{sorted({h.dt_s for h in households})}")
    days = check_integer("days", days, minimum=1)
    start_day = check_day("start_day", start_day)
    setback = check_nonnegative("setback_K", setback_K)
    amplitude = check_excitation(excitation)
    if excitation_signal not in EXCITATION_SIGNALS:
        raise ParameterError(f"excitation_signal must be one of {EXCITATION_SIGNALS}; got "
                             f"{excitation_signal!r}")
    sigma = np.array([check_nonnegative("noise_K", float(s)) for s in noise_K])
    if sigma.shape != (2,):
        raise ParameterError(f"noise_K must be two standard deviations (T_i, T_h); got "
                             f"{noise_K!r}")
    rng = as_generator(rng)
    N = len(households)
    outdoor = profiles.window("outdoor_c", start_day, days, dt)
    irradiance = profiles.window("irradiance_kw_m2", start_day, days, dt)
    shapes = profiles.window("household_p", start_day, days, dt)
    K = outdoor.size
    shape_index = rng.integers(shapes.shape[0], size=N)
    occupancy, loads, D = [], np.empty((N, K)), np.empty((N, 3, K))
    for i in range(N):
        occ = simulate_occupancy(days, first_weekday=profiles.weekday(start_day), dt_s=dt,
                                 rng=rng)
        loads[i] = base_load(occ, shapes[shape_index[i]], rng=rng)
        D[i] = np.stack([outdoor, irradiance, internal_gains(occ, loads[i])])
        occupancy.append(occ)
    present = np.stack([occ.people_home > 0 for occ in occupancy])
    setpoint = np.where(present, setpoint_c, setpoint_c - setback)
    p_max = np.array([h.parameters.heat_pump_max_kw for h in households])
    if excitation_signal == "uniform":
        signs = rng.uniform(-1.0, 1.0, (N, K))
    else:
        signs = 2.0 * rng.integers(0, 2, (N, K)) - 1.0
    excitation_kw = amplitude * p_max[:, None] * signs
    noise = sigma[None, :, None] * rng.standard_normal((N, 2, K + 1))
    # The thermostat acts on the same noisy reading of T_i that the household shares.
    X_true, U, U_past = _run(households, D, setpoint, excitation_kw, noise[:, 0], progress)
    return FleetRecord(households, start_day, days, read_only(X_true + noise),
                       read_only(X_true), read_only(U), read_only(U_past),
                       read_only(excitation_kw[:, None]),
                       read_only(D), read_only(setpoint), read_only(loads), tuple(occupancy),
                       shape_index)


def applied_power(households: Sequence[Household], U: np.ndarray, U_past: np.ndarray
                  ) -> np.ndarray:
    """Electrical power the compressors draw, averaged over each period.

    The command ``u_k`` reaches the compressor after the delay ``r = (w + p) T``, so period
    ``k`` draws ``(1 - p) u_{k-w} + p u_{k-w-1}``.

    Parameters
    ----------
    households : sequence of Household
    U : ndarray, shape (N, K)
        Commands, kW.
    U_past : ndarray, shape (N, R)
        Commands before ``U`` (oldest first), ``R`` at least every household's whole delay + 1.

    Returns
    -------
    ndarray, shape (N, K)
    """
    out = np.empty(U.shape)
    K, R = U.shape[-1], U_past.shape[-1]
    for i, house in enumerate(households):
        w, p = int(house.plant.delay_steps[0]), float(house.plant.delay_fraction[0])
        padded = np.concatenate([U_past[i], U[i]])
        new = padded[R - w:R - w + K]
        old = padded[R - w - 1:R - w - 1 + K] if p > 0 else new
        out[i] = (1.0 - p) * new + p * old
    return out


class FleetDynamics:
    """The true fleet's exact sampled dynamics under known disturbances, batched over houses.

    ``x_{k+1} = A_d x_k + g_k sum_j B^(j) u_{k-j} + E_d d_k`` per household (module notes of
    :mod:`simulations.smartgrid.household`), every household advanced at once.

    Parameters
    ----------
    households : sequence of Household
    D : ndarray, shape (N, 3, K)
        Disturbances per household and period.
    """

    def __init__(self, households: Sequence[Household], D: np.ndarray) -> None:
        households = tuple(households)
        N = len(households)
        self.R = max(h.plant.max_delay for h in households)
        self.A_d = np.stack([h.plant.A_d for h in households])                    # (N, 2, 2)
        self.B = np.zeros((N, self.R + 1, 2))
        for i, h in enumerate(households):
            self.B[i, :h.plant.max_delay + 1] = h.plant.B_blocks[:, :, 0]
        self.gain = np.stack([h.input_gain(D[i, 0]) for i, h in enumerate(households)])
        self.forcing = np.einsum("nij,njk->nik", np.stack([h.E_d for h in households]), D)

    def step(self, x: np.ndarray, history: np.ndarray, k: int) -> np.ndarray:
        """``x_{k+1}`` from ``x_k`` (N, 2) and the commands ``history`` (N, R + 1), newest
        first (``u_k, u_{k-1}, ..., u_{k-R}``)."""
        heat = np.einsum("nj,nji->ni", history, self.B)
        return np.einsum("nij,nj->ni", self.A_d, x) + self.gain[:, k, None] * heat + \
            self.forcing[:, :, k]


def _run(households: tuple[Household, ...], D: np.ndarray, setpoint: np.ndarray,
         excitation: np.ndarray, sensor_noise: np.ndarray, progress: bool
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batched closed loop: PI thermostats + excitation on the exact delayed plants."""
    N, _, K = D.shape
    dynamics = FleetDynamics(households, D)
    R = dynamics.R
    p_max = np.array([h.parameters.heat_pump_max_kw for h in households])
    kp = p_max / PROPORTIONAL_BAND_K
    ki = kp * households[0].dt_s / INTEGRAL_TIME_S
    x, u_eq = _equilibrium(households, D[:, :, 0], setpoint[:, 0])
    integral = np.clip(u_eq, 0.0, p_max)
    history = np.repeat(integral[:, None], R + 1, axis=1)     # u_{k}, u_{k-1}, ..., u_{k-R}
    U_past = np.repeat(integral[:, None, None], R, axis=2)
    X = np.empty((N, 2, K + 1))
    U = np.empty((N, 1, K))
    X[:, :, 0] = x
    for k in tqdm(range(K), disable=not progress, desc="fleet", unit="step", mininterval=1.0):
        error = setpoint[:, k] - (x[:, 0] + sensor_noise[:, k])
        command = kp * error + integral
        saturated = ((command >= p_max) & (error > 0)) | ((command <= 0) & (error < 0))
        integral = integral + np.where(saturated, 0.0, ki * error)
        u = np.clip(command + excitation[:, k], 0.0, p_max)
        history = np.concatenate([u[:, None], history[:, :-1]], axis=1)
        x = dynamics.step(x, history, k)
        X[:, :, k + 1] = x
        U[:, 0, k] = u
    return X, U, U_past


def _equilibrium(households: tuple[Household, ...], d0: np.ndarray, setpoint0: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Steady state with ``T_i`` at the setpoint under the first disturbances: (x, power)."""
    states, powers = np.empty((len(households), 2)), np.empty(len(households))
    for i, h in enumerate(households):
        A_c, b_heat, E_c = h.parameters.continuous_matrices()
        b = b_heat[:, 0] * float(h.parameters.cop(d0[i, 0]))
        # 0 = A_c [T_i; T_h] + b P + E_c d with T_i fixed: unknowns T_h and P.
        lhs = np.column_stack([A_c[:, 1], b])
        rhs = -(A_c[:, 0] * setpoint0[i] + E_c @ d0[i])
        T_h, P = np.linalg.solve(lhs, rhs)
        states[i], powers[i] = (setpoint0[i], T_h), P
    return states, powers
