"""Foundation measurements of the smart-grid case study and their figures.

:func:`run_foundations` (the command ``dmdidc smartgrid report --households 20 --out
out/smartgrid``) simulates a fleet from a :class:`~simulations.smartgrid.ScenarioConfig`, and
measures what the README reports:

* identification of every household's delay from its own operation data with the DMDidc
  estimator (:func:`identification_study`): plain least squares on the raw data, with one
  intercept per day (centred), with the delay read from the heat-distribution row, and, as the
  reference a consistent estimator should reach, two-stage least squares with the aggregator's
  excitation as instruments;
* attack (a) against window length (:func:`reconstruction_study`);
* attack (b) on plain per-day statistics (:func:`~simulations.smartgrid.occupancy_attack`);
* the day's LV power flows with the fleet's heat pumps (:class:`~simulations.smartgrid.LVGrid`).

It writes ``foundations.json`` and the figures ``reconstruction.png`` and ``voltage_band.png``.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError, ToolboxError
from _toolbox.validation import as_generator, check_integer
from dmdidc import DMDidc
from dmdidc.regression import lagged_inputs
from simulations.smartgrid.config import ScenarioConfig
from simulations.smartgrid.grid import GridResult
from simulations.smartgrid.household import draw_households
from simulations.smartgrid.occupancy_attack import occupancy_attack
from simulations.smartgrid.operation import FleetRecord, simulate_fleet
from simulations.smartgrid.profiles import YEAR_DAYS, load_profiles
from simulations.smartgrid.reconstruction import (
    free_dimensions,
    gram_blocks,
    reconstruct_trajectory,
    relative_error,
)

__all__ = ["identification_study", "plot_reconstruction", "plot_voltage_band",
           "reconstruction_study", "run_foundations"]

VARIANTS = ("ls_raw", "ls_centered", "ls_centered_weighted", "iv_excitation")
#: Scale of T_i in the weighted variants: the delay is read from the T_h (heat-distribution) row,
#: where the heat pump acts, not from the air row, which internal and solar gains dominate.
AIR_ROW_WEIGHT = 0.01
SUCCESS_ERROR = 0.1


def identification_study(record: FleetRecord, *, max_delay: int = 3, block_rtol: float = 0.05,
                         instrument_lags: int = 36, households: Sequence[int] | None = None,
                         measured: bool = True) -> list[dict[str, Any]]:
    """Each household's delay identified from its own data, four ways (see module docstring).

    ``measured=False`` uses the noise-free states (perfect sensors), which separates the effect
    of the unknown disturbances from that of the measurement noise.

    Returns
    -------
    list of dict
        Per household: ``household``, ``delay_true_T`` and, per variant of :data:`VARIANTS`,
        ``<variant>_T`` (identified delay in periods, NaN when the fit failed) and
        ``<variant>_error_T``.
    """
    R = check_integer("max_delay", max_delay, minimum=0)
    L = check_integer("instrument_lags", instrument_lags, minimum=R + 1)
    rows = []
    for i in households if households is not None else range(len(record.households)):
        row: dict[str, Any] = {"household": i, "delay_true_T":
                               record.households[i].parameters.delay_s / record.dt_s}
        for name in VARIANTS:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    estimator = _fit(name, record, i, R, L, block_rtol, measured)
                    delay = float(estimator.delay[0]) / record.dt_s
            except (ToolboxError, np.linalg.LinAlgError):
                delay = math.nan
            row[f"{name}_T"] = delay
            row[f"{name}_error_T"] = delay - row["delay_true_T"]
        rows.append(row)
    return rows


def _fit(name: str, record: FleetRecord, i: int, R: int, L: int, block_rtol: float,
         measured: bool) -> DMDidc:
    estimator = DMDidc(max_delay=R, block_rtol=block_rtol)
    T = record.dt_s
    if name == "ls_raw":
        return estimator.fit(*record.trajectories(i, measured=measured), dt=T)
    weight = np.diag([AIR_ROW_WEIGHT if name != "ls_centered" else 1.0, 1.0])
    if name == "iv_excitation":
        Xk, Ul, Y = _two_stage(record, i, R, L, measured)
    else:
        Xk, Ul, Y = record.snapshots(i, R, measured=measured)
    return estimator.fit(weight @ Xk, Ul, Y=weight @ Y, dt=T)


def _two_stage(record: FleetRecord, i: int, R: int, L: int, measured: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """2SLS snapshots: regressors projected on the last ``L + 1`` excitation values (per-day
    means removed); least squares of the targets on them is two-stage least squares."""
    X_list, U_list = record.trajectories(i, measured=measured)
    excitation = record.excitation_kw[i]
    span = record.steps_per_day
    parts = []
    for d, (X, U) in enumerate(zip(X_list, U_list, strict=True)):
        if U.shape[1] <= L:
            continue
        S = excitation[:, d * span:d * span + U.shape[1]]
        Phi = np.vstack([X[:, L:-1], lagged_inputs(U, R)[:, L - R:]])
        Z = lagged_inputs(S, L)
        Y = X[:, L + 1:]
        parts.append([A - A.mean(axis=1, keepdims=True) for A in (Phi, Z, Y)])
    Phi, Z, Y = (np.hstack(p) for p in zip(*parts, strict=True))
    projected = np.linalg.lstsq(Z.T, Phi.T, rcond=None)[0].T @ Z
    return projected[:2], projected[2:], Y


def reconstruction_study(record: FleetRecord, windows: Sequence[int], *, max_delay: int = 3,
                         households: Sequence[int] = (0,), starts: int = 4, restarts: int = 5,
                         rng: np.random.Generator | int | None = None) -> list[dict[str, Any]]:
    """Attack (a) on plain statistics against the window length ``K``.

    For each window length, ``starts`` windows at random positions of each listed household are
    attacked; the row gives the unknowns, the free dimensions at the truth, the median relative
    error and the share of windows reconstructed to within 10 %.
    """
    R = check_integer("max_delay", max_delay, minimum=0)
    rng = as_generator(rng)
    rows = []
    for K in windows:
        K = check_integer("window", K, minimum=R + 1)
        errors = []
        for i in households:
            X_all, U_all = record.X[i], record.U[i]
            for start in rng.integers(0, U_all.shape[1] - K, size=starts):
                X, U = X_all[:, start:start + K + 1], U_all[:, start:start + K]
                result = reconstruct_trajectory(gram_blocks(X, U, R), U, restarts=restarts,
                                                rng=rng)
                errors.append(relative_error(result.states, X[:, R:]))
        unknowns, free = free_dimensions(record.X[households[0]][:, :K + 1],
                                         record.U[households[0]][:, :K], R)
        rows.append({"window_steps": K, "unknowns": unknowns, "free_dimensions": free,
                     "median_error": float(np.median(errors)),
                     "success_share": float(np.mean(np.array(errors) < SUCCESS_ERROR))})
    return rows


def _figure(width: float = 6.0, height: float = 3.8):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _save(fig, ax, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_reconstruction(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """PNG: reconstruction error and free dimensions against the window length."""
    fig, ax = _figure()
    K = [r["window_steps"] for r in rows]
    ax.semilogy(K, [max(r["median_error"], 1e-12) for r in rows], "o-",
                label="median relative error")
    ax.axhline(SUCCESS_ERROR, color="k", linestyle="--", linewidth=0.8, label="10 % error")
    ax.set_xlabel("window length K (periods)")
    ax.set_ylabel("relative reconstruction error")
    ax.set_title("Attack (a) on plain statistics")
    twin = ax.twinx()
    twin.plot(K, [r["free_dimensions"] for r in rows], "s:", color="tab:red")
    twin.set_ylabel("free dimensions (red)")
    return _save(fig, ax, path)


def plot_voltage_band(results: dict[str, GridResult], path: str | Path) -> Path:
    """PNG: lowest/highest LV voltage over the day for each named run (e.g. uncontrolled)."""
    fig, ax = _figure(7.0, 4.0)
    for name, result in results.items():
        hours = np.arange(result.voltage_min_pu.size) * result.dt_s / 3600.0
        line = ax.plot(hours, result.voltage_min_pu, label=f"{name}: min")[0]
        ax.plot(hours, result.voltage_max_pu, linestyle="--", color=line.get_color(),
                label=f"{name}: max")
    ax.axhline(0.9, color="k", linewidth=0.8, linestyle=":", label="EN 50160 limit 0.9 pu")
    ax.set_xlabel("hour of day")
    ax.set_ylabel("voltage (pu)")
    ax.set_title("LV feeder voltage band")
    return _save(fig, ax, path)


def run_foundations(config: ScenarioConfig, out: str | Path, *, windows: Sequence[int] = (
        8, 10, 12, 13, 14, 16, 24, 48, 96), grid: bool = True,
        progress: bool = True) -> dict[str, Any]:
    """Simulate the configured fleet and measure the foundation numbers; write JSON + figures."""
    offset = (config.grid_day - config.start_day) % YEAR_DAYS   # the data wrap around the year
    if grid and offset >= config.identification_days:
        last = config.start_day + config.identification_days - 1
        raise ParameterError(f"grid_day={config.grid_day} lies outside the simulated days "
                             f"{config.start_day}..{last} (mod {YEAR_DAYS})")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = as_generator(config.seed)
    begin = time.perf_counter()
    profiles = load_profiles(config.profile_source)
    summary: dict[str, Any] = {"config": config.to_dict(), "profiles": profiles.source,
                               "load_profiles_s": time.perf_counter() - begin}
    fleet = draw_households(config.households, dt_s=config.dt_s,
                            delay_periods=config.delay_periods, rng=rng)
    begin = time.perf_counter()
    record = simulate_fleet(fleet, profiles, start_day=config.start_day,
                            days=config.identification_days, setpoint_c=config.setpoint_c,
                            setback_K=config.setback_K, excitation=config.excitation,
                            excitation_signal=config.excitation_signal,
                            noise_K=config.noise_K, progress=progress, rng=rng)
    summary["simulate_fleet_s"] = time.perf_counter() - begin
    for sensors, measured in (("measured", True), ("perfect_sensors", False)):
        rows = identification_study(record, max_delay=config.max_delay, measured=measured)
        summary[f"identification_{sensors}"] = {
            name: {"median_abs_error_T": float(np.nanmedian(np.abs([r[f"{name}_error_T"]
                                                                     for r in rows]))),
                   "failed": int(np.sum(np.isnan([r[f"{name}_T"] for r in rows])))}
            for name in VARIANTS}
        summary[f"identification_rows_{sensors}"] = rows
    attack = reconstruction_study(record, windows, max_delay=config.max_delay, rng=rng)
    summary["reconstruction"] = attack
    plot_reconstruction(attack, out / "reconstruction.png")
    inference = occupancy_attack(record, max_delay=config.max_delay, rng=rng)
    summary["occupancy_attack"] = {"balanced_accuracy": inference.balanced_accuracy,
                                   "occupied_share": inference.occupied_share,
                                   "n_days": inference.n_days, "cv": inference.cv}
    if grid:
        from simulations.smartgrid.grid import LVGrid

        lv = LVGrid.load(config.grid)
        window = slice(offset * config.steps_per_day, (offset + 1) * config.steps_per_day)
        result = lv.run(record.applied_power()[:, window], start_day=config.grid_day,
                        dt_s=config.dt_s, base_load_kw=record.base_load_kw[:, window],
                        progress=progress)
        summary["grid"] = result.summary()
        label = (f"thermostat + excitation {config.excitation:g} P_max" if config.excitation
                 else "thermostat only")
        plot_voltage_band({f"{config.households} heat pumps, {label}": result},
                          out / "voltage_band.png")
    path = out / "foundations.json"
    path.write_text(json.dumps(summary, indent=2))
    return summary
