"""The low-voltage grid: households with heat pumps on a SimBench LV feeder, AC power flow by
pandapower (thin adapter; both engines are imported lazily).

:class:`LVGrid` loads a SimBench grid (default ``1-LV-rural2--0-sw``: 96 buses, one 250 kVA
20/0.4 kV transformer, 99 loads of which 92 follow household ("H0") profiles, 8 PV systems) with
its 2016 profiles, places the simulated households on the household loads (household ``i`` on
household load ``i mod 92``; several households on one load add up), adds their heat-pump power
(power factor 0.97 by default) and runs one AC power flow per step with pandapower's time-series
engine (``pandapower.timeseries.run_timeseries`` with ``ConstControl`` profiles).  Base loads
and PV come from SimBench's absolute profiles (15-min means, held over finer steps) unless the
caller passes the households' own base loads.
"""

from __future__ import annotations

import copy
import functools
import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError, SolverError
from _toolbox.logs import quiet_logger
from _toolbox.validation import (
    check_finite_array,
    check_in_interval,
    check_positive,
    read_only,
)
from simulations.smartgrid.profiles import YEAR_DAYS, check_day

__all__ = ["HOUSEHOLD_GRIDS", "GridResult", "LVGrid", "check_grid_code"]

DEFAULT_GRID = "1-LV-rural2--0-sw"
_PROFILE_DT_S = 900.0
#: The six SimBench LV feeders, their scenarios (0: today, 1: 2024, 2: 2034) and switch variants.
_LV_FEEDERS = ("rural1", "rural2", "rural3", "semiurb4", "semiurb5", "urban6")
_SCENARIOS = ("0", "1", "2")
_SWITCHES = ("sw", "no_sw")
#: SimBench codes the LV grid accepts: simbench's pure low-voltage grids (every one of its
#: ``collect_all_simbench_codes()`` of type LV), each with household ("H0") loads to place the
#: households on (a test checks both against simbench).  Pure MV and HV grids have none
#: (their loads are whole LV feeders); the combined MV+LV codes, some of which have a few,
#: are not offered: the case study places its households on one LV feeder.
HOUSEHOLD_GRIDS = tuple(f"1-LV-{feeder}--{scenario}-{switch}" for feeder in _LV_FEEDERS
                        for scenario in _SCENARIOS for switch in _SWITCHES)


def check_grid_code(name: str, code: Any) -> str:
    """``code`` if it is one of :data:`HOUSEHOLD_GRIDS`, else a :class:`ParameterError` naming
    ``name``, the value and the accepted codes (checked before any grid is read)."""
    if isinstance(code, str) and code in HOUSEHOLD_GRIDS:
        return code
    raise ParameterError(
        f"{name} must be a SimBench LV grid with household (H0) loads, "
        f"1-LV-<feeder>--<scenario>-<switches> with feeder in {', '.join(_LV_FEEDERS)}, "
        f"scenario in {', '.join(_SCENARIOS)} (today, 2024, 2034) and switches in "
        f"{', '.join(_SWITCHES)} (default {DEFAULT_GRID}); got {code!r}")


@dataclass(frozen=True, eq=False)
class GridResult:
    """Power-flow results per step (time on the last axis).

    Attributes
    ----------
    voltage_min_pu, voltage_max_pu : ndarray, shape (K,)
        Lowest / highest voltage magnitude over the low-voltage buses.
    transformer_loading_percent : ndarray, shape (K,)
        Loading of the MV/LV transformer (its rating is 100 %).
    line_loading_max_percent : ndarray, shape (K,)
        Highest line loading.
    grid_import_mw : ndarray, shape (K,)
        Active power drawn from the MV grid (losses included; negative: export).
    heat_pump_mw : ndarray, shape (K,)
        Total heat-pump power placed on the grid.
    dt_s : float
    ms_per_step : float
        Wall-clock milliseconds per power flow (measured).
    """

    voltage_min_pu: np.ndarray
    voltage_max_pu: np.ndarray
    transformer_loading_percent: np.ndarray
    line_loading_max_percent: np.ndarray
    grid_import_mw: np.ndarray
    heat_pump_mw: np.ndarray
    dt_s: float
    ms_per_step: float

    def summary(self) -> dict[str, float]:
        """Extremes over the run: the numbers a report shows."""
        return {"voltage_min_pu": float(self.voltage_min_pu.min()),
                "voltage_max_pu": float(self.voltage_max_pu.max()),
                "transformer_loading_max_percent": float(self.transformer_loading_percent.max()),
                "line_loading_max_percent": float(self.line_loading_max_percent.max()),
                "grid_import_max_mw": float(self.grid_import_mw.max()),
                "ms_per_step": self.ms_per_step}


@functools.lru_cache(maxsize=2)
def _simbench(code: str) -> tuple[Any, dict[tuple[str, str], Any]]:
    """A SimBench grid and its absolute profiles, read once per process (seconds of CSV
    reading: a study, a report and the tests load the same grid several times)."""
    try:
        import simbench
    except ImportError as exc:
        raise ImportError("the LV grid needs simbench and pandapower: pip install "
                          "'dmdidc[smartgrid]'") from exc
    net = simbench.get_simbench_net(code)
    return net, simbench.get_absolute_values(net, profiles_instead_of_study_cases=True)


class LVGrid:
    """A SimBench low-voltage grid ready for per-step power flows with heat pumps.

    Use :meth:`load`; then :meth:`run` as often as needed (the network is reused).

    Examples
    --------
    >>> import numpy as np
    >>> grid = LVGrid.load()                                      # doctest: +SKIP
    >>> result = grid.run(np.full((92, 4), 2.0), start_day=10, dt_s=900.0)   # doctest: +SKIP
    >>> result.voltage_min_pu.shape                               # doctest: +SKIP
    (4,)
    """

    def __init__(self, net: Any, profiles: dict[tuple[str, str], Any], code: str) -> None:
        self.net = net
        self.code = code
        # copies: the profiles are shared by every load of this grid in the process
        self._load_p = read_only(np.asarray(profiles[("load", "p_mw")], dtype=float).T)
        self._load_q = read_only(np.asarray(profiles[("load", "q_mvar")], dtype=float).T)
        self._sgen_p = read_only(np.asarray(profiles[("sgen", "p_mw")], dtype=float).T)
        self._rated = (net.load["p_mw"].copy(), net.load["q_mvar"].copy(),
                       net.sgen["p_mw"].copy())
        names = net.load["profile"].astype(str)
        self.household_loads = np.flatnonzero(names.str.startswith("H0").to_numpy())
        self.lv_buses = np.flatnonzero(net.bus["vn_kv"].to_numpy() < 1.0)

    @classmethod
    def load(cls, code: str = DEFAULT_GRID) -> LVGrid:
        """Load a SimBench grid and its absolute 2016 profiles (a few seconds, ~600 MB peak,
        once per process and code: later loads copy the grid read then).

        Raises
        ------
        ParameterError
            If ``code`` is not one of :data:`HOUSEHOLD_GRIDS`.
        ImportError
            If simbench / pandapower are not installed (the ``smartgrid`` extra).
        """
        net, profiles = _simbench(check_grid_code("code", code))
        # a copy: runs add controllers and results to the net, the cached one stays as read
        return cls(copy.deepcopy(net), profiles, code)

    @property
    def n_household_loads(self) -> int:
        """Number of household loads the households are placed on."""
        return self.household_loads.size

    def run(self, heat_pump_kw: Any, *, start_day: int, dt_s: float,
            base_load_kw: Any = None, power_factor: float = 0.97,
            progress: bool = False) -> GridResult:
        """Power flows for every step of the households' heat-pump power.

        Parameters
        ----------
        heat_pump_kw : array_like, shape (N, K)
            Electrical power the heat pumps draw (kW) per step of ``dt_s``: the delayed
            commands, e.g. :meth:`~simulations.smartgrid.FleetRecord.applied_power`.
        start_day : int
            Day of year of the first step (0-based, 2016: 0..365); SimBench profiles start
            there, and steps past 31 December continue from 1 January.
        dt_s : float
            Step, seconds; must divide 900 s (the SimBench profile step).
        base_load_kw : array_like, shape (N, K), optional
            The households' own base loads; they replace the SimBench profile of the loads they
            are placed on (reactive power scaled from SimBench's q/p of that load).
        power_factor : float, default 0.97
            Of the heat pumps (inductive).
        progress : bool, default False

        Returns
        -------
        GridResult

        Raises
        ------
        DimensionError, NonFiniteError, ParameterError
            For badly shaped arrays or settings (a negative heat-pump power, a first day
            beyond the year).
        SolverError
            If a power flow does not converge: the message names the steps (and the day and
            time they stand for), the load at the worst one and the remedies.
        """
        hp = check_finite_array("heat_pump_kw", heat_pump_kw, ndim=2)
        N, K = hp.shape
        if hp.size and hp.min() < 0.0:
            i, k = np.unravel_index(np.argmin(hp), hp.shape)
            raise ParameterError(f"heat_pump_kw must be >= 0 (the power a heat pump draws, kW); "
                                 f"got {hp[i, k]:g} for household {i} at step {k}")
        start_day = check_day("start_day", start_day)
        dt_s = check_positive("dt_s", dt_s)
        per = _PROFILE_DT_S / dt_s
        if abs(per - round(per)) > 1e-9:
            raise ParameterError(f"dt_s must divide {_PROFILE_DT_S:g} s; got {dt_s}")
        pf = check_in_interval("power_factor", power_factor, 0.0, 1.0, low_open=True)
        index = (start_day * 96 + np.arange(K) // round(per)) % self._load_p.shape[1]
        load_p, load_q = self._load_p[:, index].copy(), self._load_q[:, index].copy()
        placement = self.household_loads[np.arange(N) % self.n_household_loads]
        if base_load_kw is not None:
            base = check_finite_array("base_load_kw", base_load_kw, ndim=2)
            if base.shape != hp.shape:
                raise DimensionError(f"base_load_kw has shape {base.shape}; expected {hp.shape}"
                                     f" (like heat_pump_kw)")
            ratio = np.divide(load_q, load_p, out=np.zeros_like(load_q), where=load_p > 0)
            own = np.zeros_like(load_p)
            np.add.at(own, placement, base / 1000.0)
            replaced = np.unique(placement)
            load_p[replaced] = own[replaced]
            load_q[replaced] = own[replaced] * ratio[replaced]
        hp_p = np.zeros_like(load_p)
        np.add.at(hp_p, placement, hp / 1000.0)
        load_p += hp_p
        load_q += hp_p * np.tan(np.arccos(pf))
        sgen_p = self._sgen_p[:, index]
        out, elapsed, failed = self._time_series(load_p, load_q, sgen_p, progress)
        if failed.size:
            def when(k: int) -> str:
                minutes = round(k * dt_s / 60.0)
                # (a run past 31 December continues on 1 January: the profiles' day)
                day = (start_day + minutes // 1440) % YEAR_DAYS
                return (f"step {k} (day {day}, "
                        f"{minutes % 1440 // 60:02d}:{minutes % 60:02d})")

            worst = failed[np.argmax(load_p[:, failed].sum(axis=0))]
            raise SolverError(
                f"the power flow did not converge at {failed.size} of {K} steps, first at "
                f"{when(int(failed[0]))}; the largest load among them at {when(int(worst))}: "
                f"{1000 * load_p[:, worst].sum():.0f} kW on the feeder, heat pumps "
                f"{1000 * hp_p[:, worst].sum():.0f} kW of it, largest per load "
                f"{1000 * load_p[:, worst].max():.0f} kW: the feeder cannot carry it (voltage "
                f"collapse). Remedy: check heat_pump_kw's unit (kW) and size, place fewer "
                f"households per household load ({N} households on "
                f"{self.n_household_loads} loads here), or use a larger grid")
        vm = out["res_bus.vm_pu"][:, self.lv_buses]
        return GridResult(read_only(vm.min(axis=1)), read_only(vm.max(axis=1)),
                          read_only(out["res_trafo.loading_percent"].max(axis=1)),
                          read_only(out["res_line.loading_percent"].max(axis=1)),
                          read_only(out["res_ext_grid.p_mw"].sum(axis=1)),
                          read_only(hp_p.sum(axis=0)), dt_s, 1000.0 * elapsed / max(K, 1))

    def _time_series(self, load_p: np.ndarray, load_q: np.ndarray, sgen_p: np.ndarray,
                     progress: bool) -> tuple[dict[str, np.ndarray], float, np.ndarray]:
        """pandapower's time-series engine over the given (element, step) profiles.

        Returns the logged result tables as arrays (step, element), the seconds it took and the
        steps whose power flow did not converge (their results are not valid).
        """
        import pandas as pd
        from pandapower.control import ConstControl
        from pandapower.timeseries import DFData, OutputWriter, run_timeseries

        net = self.net
        steps = range(load_p.shape[1])
        controllers = []
        for element, variable, values in (("load", "p_mw", load_p), ("load", "q_mvar", load_q),
                                          ("sgen", "p_mw", sgen_p)):
            frame = pd.DataFrame(values.T, columns=net[element].index)
            controllers.append(ConstControl(net, element, variable,
                                            element_index=net[element].index,
                                            data_source=DFData(frame),
                                            profile_name=frame.columns))
        writer = OutputWriter(net, time_steps=steps, output_path=None, log_variables=[])
        logged = (("res_bus", "vm_pu"), ("res_trafo", "loading_percent"),
                  ("res_line", "loading_percent"), ("res_ext_grid", "p_mw"))
        for table, variable in logged:
            writer.log_variable(table, variable)
        begin = time.perf_counter()
        try:
            # every step runs, so that the error names each one that did not converge (and the
            # time it stands for) instead of pandapower's bare LoadflowNotConverged, and its
            # ERROR line per such step is not logged
            with quiet_logger("pandapower.timeseries.run_time_series", logging.CRITICAL):
                run_timeseries(net, time_steps=steps, verbose=progress, numba=False,
                               check_connectivity=False, continue_on_divergence=True)
        finally:
            elapsed = time.perf_counter() - begin
            net.controller.drop([c.index for c in controllers], inplace=True)
            # The net keeps its rated values (SimBench's); the result tables hold the last step.
            net.load["p_mw"], net.load["q_mvar"], net.sgen["p_mw"] = self._rated
            del net["output_writer"]
        parameters = writer.output.get("Parameters")
        failed = (np.flatnonzero(parameters["powerflow_failed"].eq(True).to_numpy())
                  if parameters is not None and "powerflow_failed" in parameters
                  else np.zeros(0, dtype=int))
        return ({f"{t}.{v}": writer.output[f"{t}.{v}"].to_numpy() for t, v in logged}, elapsed,
                failed)


