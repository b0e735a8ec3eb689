"""The scenario of the smart-grid case study as one frozen, validated configuration.

``dmdidc smartgrid run`` loads it (from JSON or flags) and every stage reads it: the fleet
(:func:`~simulations.smartgrid.draw_households`), its operation data
(:func:`~simulations.smartgrid.simulate_fleet`), privatized identification, the attacks, the
closed loop and the LV grid.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from _toolbox.errors import ParameterError
from _toolbox.validation import (
    check_in_interval,
    check_integer,
    check_nonnegative,
    check_positive,
)
from dmdidc.private.release import check_release_settings
from privacy.stable import check_alpha
from simulations.smartgrid.grid import check_grid_code
from simulations.smartgrid.operation import check_excitation
from simulations.smartgrid.profiles import check_day

__all__ = ["ScenarioConfig"]

UNITS = ("sample", "window", "trajectory")
PROFILE_SOURCES = ("auto", "packages", "extract")
EXCITATION_SIGNALS = ("binary", "uniform")


@dataclass(frozen=True)
class ScenarioConfig:
    """Settings of one smart-grid run (defaults: the issue's headline scenario).

    Attributes
    ----------
    households : int
        Fleet size ``N``.
    dt_s : float
        Sampling period ``T`` (seconds, must divide 900 s, the profile step).
    delay_periods : (float, float)
        Range of the households' command-to-compressor delay, in periods ``T``.
    start_day : int
        First day of the identification data (day of year 2016, 0-based; 0 = 1 January; the
        data wrap around the year: 305 = 1 November).
    identification_days : int
        Days of operation data per household (the default 120: November-February).
    excitation : float
        Aggregator's excitation amplitude as a fraction of each heat pump's largest power.
    excitation_signal : {"binary", "uniform"}
        Law of the per-period excitation (:func:`~simulations.smartgrid.simulate_fleet`).
    noise_K : (float, float)
        Measurement-noise standard deviations of ``T_i`` and ``T_h``, K.
    setpoint_c, setback_K : float
        Comfort setpoint and its reduction while the house is empty.
    max_delay : int
        Delay bound ``R`` of the DMDidc regression (periods).
    mechanism : {"sas", "gaussian", "laplace"}
        Privacy mechanism on the sufficient statistics.
    alpha : float
        Stability index of the SaS mechanism, in [0.1, 2) (the SaS mechanism's range; the
        privacy-utility curve's SaS points use it whatever the run's mechanism).
    epsilon, delta : float
        Per-household privacy budget (composed over the whole run); the Gaussian mechanism
        needs ``delta > 0``.
    unit : {"sample", "window", "trajectory"}
        What one privacy unit protects: one time step, ``window_steps`` consecutive steps, or a
        household's whole record.
    window_steps : int or None
        Length of a privacy window (required for ``unit="window"``, else None).
    attack_window_steps : int
        Window length of the statistics the reconstruction attack intercepts.
    grid : str
        SimBench code of the LV grid, one of
        :data:`~simulations.smartgrid.grid.HOUSEHOLD_GRIDS` (an LV feeder with household loads).
    grid_day : int
        Day of year of the demand-response day and of its power flows.
    comfort_K : float
        Half-width of the comfort band around the setpoint (demand response), K.
    mpc_horizon_steps : int
        Decision moves of the fleet MPC.
    profile_source : {"auto", "packages", "extract"}
        Where the load and weather profiles come from.
    seed : int
        Root seed of every random draw.
    """

    households: int = 200
    dt_s: float = 300.0
    delay_periods: tuple[float, float] = (1.3, 1.7)
    start_day: int = 305
    identification_days: int = 120
    excitation: float = 0.5
    excitation_signal: str = "binary"
    noise_K: tuple[float, float] = (0.1, 0.2)
    setpoint_c: float = 21.0
    setback_K: float = 0.0
    max_delay: int = 3
    mechanism: str = "sas"
    alpha: float = 1.9
    epsilon: float = 1.0
    delta: float = 1e-5
    unit: str = "sample"
    window_steps: int | None = None
    attack_window_steps: int = 12
    grid: str = "1-LV-rural2--0-sw"
    grid_day: int = 10
    comfort_K: float = 1.0
    mpc_horizon_steps: int = 12
    profile_source: str = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        check_integer("households", self.households, minimum=1)
        dt = check_positive("dt_s", self.dt_s)
        if abs(900.0 / dt - round(900.0 / dt)) > 1e-9:
            raise ParameterError(f"dt_s must divide 900 s (the profile step); got {dt}")
        low, high = self._pair("delay_periods", self.delay_periods)
        if not 0.0 <= low <= high:
            raise ParameterError(f"delay_periods must be (low, high) with 0 <= low <= high; got "
                                 f"{self.delay_periods!r}")
        if check_integer("max_delay", self.max_delay, minimum=0) < math.ceil(high):
            raise ParameterError(f"max_delay={self.max_delay} cannot hold delays up to {high} "
                                 f"periods; use max_delay >= {math.ceil(high)}")
        for name in ("start_day", "grid_day"):
            check_day(name, getattr(self, name))
        check_integer("identification_days", self.identification_days, minimum=1)
        check_excitation(self.excitation)
        if self.excitation_signal not in EXCITATION_SIGNALS:
            raise ParameterError(f"excitation_signal must be one of {EXCITATION_SIGNALS}; got "
                                 f"{self.excitation_signal!r}")
        check_positive("comfort_K", self.comfort_K)
        check_integer("mpc_horizon_steps", self.mpc_horizon_steps, minimum=1)
        for value in self._pair("noise_K", self.noise_K):
            check_nonnegative("noise_K", value)
        check_in_interval("setpoint_c", self.setpoint_c, 5.0, 30.0)
        check_nonnegative("setback_K", self.setback_K)
        # the releases' own checks, here before any work: the mechanism, its delta, and alpha
        # in the SaS range whatever the mechanism (the privacy-utility curve draws SaS too)
        check_release_settings(self.mechanism, self.alpha if self.mechanism == "sas" else None,
                               self.delta)
        check_alpha(self.alpha, high_open=True)
        check_positive("epsilon", self.epsilon)
        if self.unit not in UNITS:
            raise ParameterError(f"unit must be one of {UNITS}; got {self.unit!r}")
        if self.unit == "window":
            if self.window_steps is None:
                raise ParameterError("unit='window' needs window_steps (the steps one window "
                                     "protects)")
            check_integer("window_steps", self.window_steps, minimum=1)
        elif self.window_steps is not None:
            raise ParameterError(f"window_steps is only used with unit='window'; got "
                                 f"window_steps={self.window_steps} with unit={self.unit!r}")
        check_integer("attack_window_steps", self.attack_window_steps, minimum=1)
        check_grid_code("grid", self.grid)
        if self.profile_source not in PROFILE_SOURCES:
            raise ParameterError(f"profile_source must be one of {PROFILE_SOURCES}; got "
                                 f"{self.profile_source!r}")
        check_integer("seed", self.seed, minimum=0)

    @staticmethod
    def _pair(name: str, value: Any) -> tuple[float, float]:
        try:
            low, high = (float(v) for v in value)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"{name} must be a pair of numbers; got {value!r}") from exc
        return low, high

    @property
    def steps_per_day(self) -> int:
        """Sampling periods per day."""
        return round(86400.0 / self.dt_s)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation (pairs as lists)."""
        data = asdict(self)
        for name in ("delay_periods", "noise_K"):
            data[name] = list(data[name])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScenarioConfig:
        """Build from a mapping; unknown keys are refused with the accepted ones listed.

        Examples
        --------
        >>> ScenarioConfig.from_dict({"households": 20, "epsilon": 3.0}).households
        20
        """
        if not isinstance(data, dict):
            raise ParameterError(f"a scenario must be a JSON object; got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ParameterError(f"unknown scenario setting(s) {unknown}; accepted: "
                                 f"{sorted(known)}")
        values = dict(data)
        for name in ("delay_periods", "noise_K"):
            if name in values:
                values[name] = tuple(cls._pair(name, values[name]))
        return cls(**values)

    def save(self, path: str | Path) -> Path:
        """Write as JSON."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2))
        return path

    @classmethod
    def load(cls, path: str | Path) -> ScenarioConfig:
        """Read a JSON file written by :meth:`save` (or by hand)."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ParameterError(f"cannot read a scenario from {str(path)!r}: {exc}") from exc
        return cls.from_dict(data)
