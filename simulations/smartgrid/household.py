"""Heat-pump households: a grey-box thermal model per house, exactly discretized with its delay.

Each house is the two-state ``TiTh`` network of Bacher & Madsen (2011) (indoor air ``T_i`` and
the heat-distribution mass ``T_h`` into which the heat pump delivers; here an underfloor-heating
screed), with the heat pump's *electrical* power as the input, its COP from the outdoor
temperature, and outdoor temperature, solar and internal gains as disturbances:

    C_i T_i' = (T_h - T_i) / R_ih + (T_o - T_i) / R_ia + (1 - f_s) A_w G + Phi_int
    C_h T_h' = (T_i - T_h) / R_ih + f_s A_w G + COP(T_o) P_el(t - r)

(capacities kJ/K, resistances K/kW, powers kW, irradiance kW/m^2, time in seconds).  Both
states are measured: ``T_i`` by the thermostat, ``T_h`` by the heat pump's return-flow sensor.
The commanded power reaches the compressor after the communication + actuation delay ``r``.

Physical grounding (nominal values, scaled by each house's floor area ``A``):

* Structure and the air node: Bacher, P. and Madsen, H. (2011), "Identifying suitable models for
  the heat dynamics of buildings", Energy and Buildings 43(7), 1511-1522,
  doi:10.1016/j.enbuild.2011.02.005 (model hierarchy Ti, TiTh, TiTe, ...).  For their 120 m^2
  test building (SYSLAB, Risø) the TiTe estimates used in public re-implementations are
  ``C_i = 0.143 kWh/K``, ``C_e = 3.24 kWh/K``, ``R_ie = 0.909 K/kW``, ``R_ea = 4.47 K/kW``,
  window area about 6 m^2; we take ``C_i``, the total envelope resistance
  ``R_ia = R_ie + R_ea = 5.38 K/kW`` and ``A_w = 6 m^2`` per 120 m^2 as nominal values.
* Heat-distribution node: a 65 mm screed (2000 kg/m^3, 1.0 kJ/(kg K): 130 kJ/(m^2 K)) over the
  heated fraction of the floor, and the floor-to-room heat-transfer coefficient 10.8 W/(m^2 K) of
  EN 1264-2 / ISO 11855 (``R_ih = 1 / (10.8 W/(m^2 K) * heated area)``).
* COP: the air-source regression of Staffell, I., Brett, D., Brandon, N., Hawkes, A. (2012), "A
  review of domestic heat pumps", Energy & Environmental Science 5(11), 9291-9306,
  doi:10.1039/c2ee22653g: ``COP = 6.81 - 0.121 dT + 0.000630 dT^2`` with the lift
  ``dT = T_supply - T_o`` (valid for 15-60 K, clipped there), times a per-unit quality factor;
  the supply temperature follows a heating curve (design 32-38 C at -12 C, 20 C at +20 C).

Exactness: with every input and disturbance held over ``[kT, (k+1)T)`` (the disturbance series
are sampled that way) the sampled states obey exactly

    x_{k+1} = A_d x_k + g_k sum_j B^(j) u_{k-j} + E_d d_k,     g_k = COP(T_o,k) / COP_ref

where ``(A_d, B^(j))`` is the :class:`dmdidc.DelayedPlant` of the house at the reference COP
(eqs. 9.59-9.65 of the dissertation) and ``E_d = Gamma(T) E_c``.  The COP multiplies the heat
delivered in period ``k`` (the compressor runs at the outdoor temperature of that period).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_in_interval,
    check_integer,
    check_positive,
    read_only,
)
from dmdidc.discretization import zoh_matrices
from dmdidc.model import DelayedPlant

__all__ = [
    "DISTURBANCES",
    "Household",
    "HouseholdParameters",
    "draw_households",
    "heat_pump_cop",
    "supply_temperature",
]

#: Names (and units) of the disturbance channels, in the order of ``E_c``'s columns.
DISTURBANCES = ("outdoor_c", "irradiance_kw_m2", "internal_gain_kw")

_KWH = 3600.0                       # kJ per kWh
REFERENCE_AREA_M2 = 120.0           # Bacher & Madsen's test building
NOMINAL_C_AIR_KJ_K = 0.143 * _KWH   # C_i (TiTe estimate)
NOMINAL_R_ENVELOPE_K_KW = 0.909 + 4.47   # R_ie + R_ea
NOMINAL_WINDOW_M2 = 6.0
SCREED_KJ_M2K = 130.0               # 65 mm screed
FLOOR_TRANSFER_KW_M2K = 10.8e-3     # EN 1264-2 total heat-transfer coefficient
DESIGN_OUTDOOR_C = -12.0
STAFFELL_ASHP = (6.81, -0.121, 0.000630)   # COP = c0 + c1 dT + c2 dT^2
STAFFELL_RANGE_K = (15.0, 60.0)


def supply_temperature(outdoor_c: Any, design_supply_c: float, *,
                       design_outdoor_c: float = DESIGN_OUTDOOR_C,
                       min_supply_c: float = 25.0) -> np.ndarray:
    """Supply temperature of a weather-compensated heating curve.

    Linear from 20 C at an outdoor 20 C to ``design_supply_c`` at ``design_outdoor_c``, and at
    least ``min_supply_c``.

    Parameters
    ----------
    outdoor_c : array_like
        Outdoor temperature, C.
    design_supply_c : float
        Supply temperature at the design outdoor temperature, C (floor heating: 30-40 C).
    design_outdoor_c : float, default -12
    min_supply_c : float, default 25

    Returns
    -------
    ndarray, shape of ``outdoor_c``

    Examples
    --------
    >>> float(supply_temperature(-12.0, 35.0))
    35.0
    """
    outdoor = np.asarray(outdoor_c, dtype=float)
    slope = (design_supply_c - 20.0) / (20.0 - design_outdoor_c)
    return np.maximum(20.0 + slope * (20.0 - outdoor), min_supply_c)


def heat_pump_cop(outdoor_c: Any, supply_c: Any, *, quality: float = 1.0) -> np.ndarray:
    """COP of an air-source heat pump (Staffell et al. 2012 regression) times ``quality``.

    ``COP = quality * (6.81 - 0.121 dT + 0.000630 dT^2)``, ``dT = supply - outdoor`` clipped to
    the regression's range 15-60 K.

    Parameters
    ----------
    outdoor_c, supply_c : array_like
        Source (outdoor) and sink (supply) temperatures, C.
    quality : float, default 1.0
        Multiplies the fleet-average curve (better or worse units).

    Returns
    -------
    ndarray

    References
    ----------
    Staffell, Brett, Brandon, Hawkes (2012), Energy Environ. Sci. 5, 9291-9306.

    Examples
    --------
    >>> round(float(heat_pump_cop(2.0, 35.0)), 3)    # the A2/W35 rating point
    3.503
    """
    lift = np.clip(np.asarray(supply_c, dtype=float) - np.asarray(outdoor_c, dtype=float),
                   *STAFFELL_RANGE_K)
    c0, c1, c2 = STAFFELL_ASHP
    return quality * (c0 + c1 * lift + c2 * lift ** 2)


@dataclass(frozen=True)
class HouseholdParameters:
    """Physical parameters of one heat-pump household (units in the names).

    Attributes
    ----------
    floor_area_m2 : float
    C_air_kJ_K : float
        Capacity ``C_i`` of indoor air and furniture.
    C_floor_kJ_K : float
        Capacity ``C_h`` of the heat-distribution mass (screed).
    R_envelope_K_kW : float
        Resistance ``R_ia`` from indoor air to outdoors (envelope and ventilation).
    R_floor_K_kW : float
        Resistance ``R_ih`` between the heat-distribution mass and the indoor air.
    window_area_m2 : float
        Effective solar aperture ``A_w`` (multiplies global horizontal irradiance).
    solar_floor_fraction : float
        Fraction ``f_s`` in [0, 1] of the solar gain absorbed by the floor.
    design_supply_c : float
        Heating-curve supply temperature at -12 C outdoors.
    cop_quality : float
        Multiplies the Staffell COP curve.
    heat_pump_max_kw : float
        Largest electrical power of the heat pump.
    delay_s : float
        Delay ``r`` between the aggregator's command and the compressor, seconds.
    """

    floor_area_m2: float
    C_air_kJ_K: float
    C_floor_kJ_K: float
    R_envelope_K_kW: float
    R_floor_K_kW: float
    window_area_m2: float
    solar_floor_fraction: float
    design_supply_c: float
    cop_quality: float
    heat_pump_max_kw: float
    delay_s: float

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "solar_floor_fraction":
                check_in_interval(item.name, value, 0.0, 1.0)
            elif item.name == "delay_s":
                check_in_interval(item.name, value, 0.0, float("inf"))
            elif item.name != "design_supply_c":
                check_positive(item.name, value)
        check_in_interval("design_supply_c", self.design_supply_c, 20.0, 80.0)

    def continuous_matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(A_c, b_heat, E_c)``: state matrix (1/s), thermal-power input (K/s per kW), and
        disturbance matrix (2, 3) for ``[outdoor C, irradiance kW/m^2, internal gain kW]``."""
        C_i, C_h = self.C_air_kJ_K, self.C_floor_kJ_K
        g_ih, g_ia = 1.0 / self.R_floor_K_kW, 1.0 / self.R_envelope_K_kW
        A_c = np.array([[-(g_ih + g_ia) / C_i, g_ih / C_i],
                        [g_ih / C_h, -g_ih / C_h]])
        b_heat = np.array([[0.0], [1.0 / C_h]])
        f_s, A_w = self.solar_floor_fraction, self.window_area_m2
        E_c = np.array([[g_ia / C_i, (1.0 - f_s) * A_w / C_i, 1.0 / C_i],
                        [0.0, f_s * A_w / C_h, 0.0]])
        return A_c, b_heat, E_c

    def cop(self, outdoor_c: Any) -> np.ndarray:
        """COP at the outdoor temperature(s), following the house's heating curve."""
        return heat_pump_cop(outdoor_c, supply_temperature(outdoor_c, self.design_supply_c),
                             quality=self.cop_quality)

    def to_dict(self) -> dict[str, float]:
        """Plain-JSON representation."""
        return asdict(self)


@dataclass(frozen=True, eq=False)
class Household:
    """A heat-pump household: its :class:`dmdidc.DelayedPlant` plus disturbance matrices.

    Build it with :meth:`from_parameters` (or a fleet with :func:`draw_households`).

    Attributes
    ----------
    parameters : HouseholdParameters
    plant : dmdidc.DelayedPlant
        Exact discretization at period ``dt_s`` of the house with electrical input at the
        reference COP: ``B_c = b_heat * COP(reference_outdoor_c)``; states ``[T_i, T_h]``, C.
    E_c : ndarray, shape (2, 3)
        Continuous disturbance matrix (columns: :data:`DISTURBANCES`).
    E_d : ndarray, shape (2, 3)
        ``Gamma(T) E_c``: effect of disturbances held over one period.
    reference_outdoor_c : float
        Outdoor temperature at which ``plant``'s COP is taken.
    cop_reference : float
        That COP.
    """

    parameters: HouseholdParameters
    plant: DelayedPlant
    E_c: np.ndarray
    E_d: np.ndarray
    reference_outdoor_c: float
    cop_reference: float = field(repr=False)

    @classmethod
    def from_parameters(cls, parameters: HouseholdParameters, *, dt_s: float,
                        reference_outdoor_c: float = 2.0,
                        max_delay: int | None = None) -> Household:
        """Discretize a house exactly at period ``dt_s`` (seconds).

        Parameters
        ----------
        parameters : HouseholdParameters
        dt_s : float
            Sampling period ``T``, seconds.
        reference_outdoor_c : float, default 2.0
            Outdoor temperature of the plant's COP (the A2/W35-style rating point).
        max_delay : int, optional
            Input blocks kept (default: the fewest that hold the delay).

        Returns
        -------
        Household

        Examples
        --------
        >>> house = draw_households(1, dt_s=300.0, rng=0)[0]
        >>> house.plant.delay_steps, house.plant.n_states, house.plant.n_inputs
        (array([1]), 2, 1)
        """
        if not isinstance(parameters, HouseholdParameters):
            raise ParameterError(f"parameters must be HouseholdParameters; got "
                                 f"{type(parameters).__name__}")
        dt_s = check_positive("dt_s", dt_s)
        A_c, b_heat, E_c = parameters.continuous_matrices()
        cop_reference = float(parameters.cop(reference_outdoor_c))
        plant = DelayedPlant.from_continuous(A_c, b_heat * cop_reference, parameters.delay_s,
                                             dt_s, max_delay=max_delay)
        _, E_d = zoh_matrices(A_c, E_c, dt_s)
        return cls(parameters, plant, read_only(E_c), read_only(E_d),
                   float(reference_outdoor_c), cop_reference)

    @property
    def dt_s(self) -> float:
        """Sampling period ``T``, seconds."""
        return self.plant.dt

    def input_gain(self, outdoor_c: Any) -> np.ndarray:
        """``g_k = COP(T_o,k) / COP_ref``: how much more heat a kW buys than in ``plant``."""
        return self.parameters.cop(outdoor_c) / self.cop_reference

    def simulate(self, x0: Any, U: Any, disturbances: Any, *, U_past: Any = None) -> np.ndarray:
        """Exact sampled states for held heat-pump powers and held disturbances.

        Parameters
        ----------
        x0 : array_like, shape (2,)
            ``[T_i, T_h]`` at time 0, C.
        U : array_like, shape (1, K)
            Commanded electrical power ``u_k`` (kW) held over ``[kT, (k+1)T)``; it reaches the
            compressor ``delay_s`` later.
        disturbances : array_like, shape (3, K)
            Rows :data:`DISTURBANCES`, held over each period.
        U_past : array_like, shape (1, R), optional
            Commands before time 0 (oldest first); zero by default.

        Returns
        -------
        X : ndarray, shape (2, K + 1)

        Raises
        ------
        DimensionError, NonFiniteError
            For badly shaped or non-finite arrays.

        Examples
        --------
        >>> import numpy as np
        >>> house = draw_households(1, dt_s=300.0, rng=0)[0]
        >>> D = np.tile([[0.0], [0.0], [0.1]], (1, 12))
        >>> house.simulate([20.0, 25.0], np.ones((1, 12)), D).shape
        (2, 13)
        """
        plant = self.plant
        U = check_finite_array("U", U, ndim=2)
        if U.shape[0] != 1:
            raise DimensionError(f"U has {U.shape[0]} rows; expected 1 (heat-pump power; time "
                                 f"along the columns)")
        D = check_finite_array("disturbances", disturbances, ndim=2)
        if D.shape != (len(DISTURBANCES), U.shape[1]):
            raise DimensionError(f"disturbances has shape {D.shape}; expected "
                                 f"{(len(DISTURBANCES), U.shape[1])} (rows {DISTURBANCES})")
        # The delayed-input forcing sum_j B^(j) u_{k-j} at the reference COP: the plant's own
        # recursion with A_d = 0 returns it as x_{k+1} ...
        forcing_path = DelayedPlant(np.zeros((2, 2)), plant.B_blocks, plant.dt)
        heat = forcing_path.simulate(np.zeros(2), U, U_past)[:, 1:]
        # ... scaled by the period's COP, plus the disturbances: the exact forcing.
        forcing = heat * self.input_gain(D[0]) + self.E_d @ D
        return DelayedPlant(plant.A_d, np.eye(2)[None], plant.dt).simulate(x0, forcing)


def draw_households(n: int, *, dt_s: float = 300.0,
                    delay_periods: tuple[float, float] = (1.3, 1.7),
                    reference_outdoor_c: float = 2.0,
                    rng: np.random.Generator | int | None = None) -> list[Household]:
    """Draw a heterogeneous fleet of heat-pump households around the published nominal values.

    Per house (independently): floor area lognormal (median 140 m^2, sigma 0.25, clipped to
    80-250); ``C_i`` = nominal x area/120 x LN(0, 0.3); ``R_ia`` = nominal x 120/area x LN(0, 0.3)
    clipped to an envelope conductance of 0.6-2.5 W/(m^2 K) of floor area (new to partly
    renovated houses); heated floor fraction U(0.6, 0.9)
    setting ``C_h`` (x LN(0, 0.2)) and ``R_ih``; ``A_w`` = 6 m^2 x area/120 x LN(0, 0.3); solar
    floor fraction U(0.3, 0.6); design supply U(32, 38) C; COP quality U(0.85, 1.05); heat pump
    sized at U(1.1, 1.4) times the design heat load (20 C inside, -12 C outside); delay
    U(delay_periods) x ``dt_s``.

    Parameters
    ----------
    n : int
        Number of households (>= 1).
    dt_s : float, default 300
        Sampling period ``T``, seconds.
    delay_periods : (float, float), default (1.3, 1.7)
        Range of the delay in sampling periods.
    reference_outdoor_c : float, default 2.0
        Outdoor temperature of each plant's reference COP.
    rng : numpy.random.Generator or int or None

    Returns
    -------
    list of Household

    Raises
    ------
    ParameterError
        For ``n < 1``, ``dt_s <= 0`` or an empty or negative delay range.

    Examples
    --------
    >>> fleet = draw_households(3, rng=1)
    >>> [round(h.parameters.delay_s / 300, 2) for h in fleet]
    [1.51, 1.35, 1.55]
    """
    n = check_integer("n", n, minimum=1)
    dt_s = check_positive("dt_s", dt_s)
    low, high = (float(v) for v in delay_periods)
    if not 0.0 <= low <= high:
        raise ParameterError(f"delay_periods must be (low, high) with 0 <= low <= high; got "
                             f"{delay_periods!r}")
    rng = as_generator(rng)
    area = np.clip(140.0 * rng.lognormal(0.0, 0.25, n), 80.0, 250.0)
    size = area / REFERENCE_AREA_M2
    heated = area * rng.uniform(0.6, 0.9, n)
    C_air = NOMINAL_C_AIR_KJ_K * size * rng.lognormal(0.0, 0.3, n)
    # Envelope conductance per floor area: 0.6-2.5 W/(m^2 K) (new to partly renovated houses).
    R_env = NOMINAL_R_ENVELOPE_K_KW / size * rng.lognormal(0.0, 0.3, n)
    R_env = np.clip(R_env, 1.0 / (2.5e-3 * area), 1.0 / (0.6e-3 * area))
    C_floor = SCREED_KJ_M2K * heated * rng.lognormal(0.0, 0.2, n)
    R_floor = 1.0 / (FLOOR_TRANSFER_KW_M2K * heated)
    window = NOMINAL_WINDOW_M2 * size * rng.lognormal(0.0, 0.3, n)
    solar_floor = rng.uniform(0.3, 0.6, n)
    supply = rng.uniform(32.0, 38.0, n)
    quality = rng.uniform(0.85, 1.05, n)
    oversize = rng.uniform(1.1, 1.4, n)
    delay = rng.uniform(low, high, n) * dt_s
    fleet = []
    for i in range(n):
        design_cop = float(heat_pump_cop(DESIGN_OUTDOOR_C, supply[i], quality=quality[i]))
        design_load_kw = (20.0 - DESIGN_OUTDOOR_C) / R_env[i]
        params = HouseholdParameters(
            floor_area_m2=float(area[i]), C_air_kJ_K=float(C_air[i]),
            C_floor_kJ_K=float(C_floor[i]), R_envelope_K_kW=float(R_env[i]),
            R_floor_K_kW=float(R_floor[i]), window_area_m2=float(window[i]),
            solar_floor_fraction=float(solar_floor[i]), design_supply_c=float(supply[i]),
            cop_quality=float(quality[i]),
            heat_pump_max_kw=float(oversize[i] * design_load_kw / design_cop),
            delay_s=float(delay[i]))
        fleet.append(Household.from_parameters(params, dt_s=dt_s,
                                               reference_outdoor_c=reference_outdoor_c))
    return fleet
