"""The smart-grid privacy case study end to end (issue 10): one function, one summary, figures.

:func:`run_case_study` takes a :class:`~simulations.smartgrid.ScenarioConfig` and

1. draws the heterogeneous fleet and simulates its operation with the aggregator's excitation
   (:func:`~simulations.smartgrid.simulate_fleet`, real weather and profiles);
2. lets every household compute its sufficient statistics and privatize them at the configured
   mechanism, unit and epsilon, with its composed guarantee from :mod:`privacy.accounting`
   (:mod:`~simulations.smartgrid.private_identification`); the aggregator combines the releases
   (:func:`~simulations.smartgrid.private_identification.aggregate_statistics`, the federated
   seam) and identifies the fleet model with a confidence interval for the delay; the same from
   the plain statistics is the non-private reference;
3. measures the privacy-utility curve: the fleet delay's error against epsilon for SaS,
   Gaussian and Laplace releases of the same statistics (what-if releases, one per point: each
   point is a separate world, not composed with the others or with the run's release);
4. runs delay-aware demand response on the true fleet for one day with the fractional, truncated,
   naive and MPC controllers designed on the private and on the non-private model
   (:mod:`~simulations.smartgrid.demand_response`); the grid signal is peak shaving
   (:meth:`~simulations.smartgrid.tracking.GridSignal.flatten`) of the fleet's own load
   (base loads + heat pumps under thermostat control) on that day, a perfect day-ahead
   forecast, plus an intraday re-dispatch schedule (:data:`INTRADAY`); the controllers run from
   the day before (without the signal) so that their observers have converged;
5. runs the day's LV power flows (:class:`~simulations.smartgrid.LVGrid`) with the uncontrolled
   (thermostat) heat pumps and with the fractional controller;

and writes ``summary.json`` and the figures ``privacy_utility.png``, ``tracking.png``,
``comfort.png`` and ``voltages.png`` into ``out``.
"""

from __future__ import annotations

import itertools
import json
import math
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from _toolbox.errors import ParameterError, ToolboxError
from _toolbox.validation import as_generator
from simulations.smartgrid.config import ScenarioConfig
from simulations.smartgrid.demand_response import DemandResponseResult, run_demand_response
from simulations.smartgrid.household import draw_households
from simulations.smartgrid.operation import simulate_fleet
from simulations.smartgrid.private_identification import (
    FleetIdentification,
    SharingBounds,
    aggregate_statistics,
    fleet_clipping,
    household_statistics,
    identify_fleet,
    privatize_household,
    run_guarantee,
)
from simulations.smartgrid.profiles import YEAR_DAYS, load_profiles
from simulations.smartgrid.report import _figure, _save, plot_voltage_band
from simulations.smartgrid.tracking import TRACKING_CONTROLLERS, GridSignal

__all__ = ["CURVE_EPSILONS", "run_case_study"]

#: Epsilons of the privacy-utility curve (per household, event level by default).
CURVE_EPSILONS = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
CURVE_MECHANISMS = ("sas", "gaussian", "laplace")
CURVE_REPETITIONS = 3
#: Intraday re-dispatch on top of the peak shaving, fraction of P_max per 15-min knot.
INTRADAY = 0.05


def _identify(releases, config: ScenarioConfig) -> FleetIdentification | None:
    try:
        return identify_fleet(aggregate_statistics(releases), dt_s=config.dt_s,
                              max_delay=config.max_delay)
    except ToolboxError:
        return None          # rank-deficient noisy moments: no model at this privacy level


def _delay(fit: FleetIdentification | None) -> tuple[float, tuple[float, float], str]:
    if fit is None:
        return math.nan, (math.nan, math.nan), "the noisy moments are rank-deficient"
    return fit.delay_s, fit.delay_ci_s, fit.note


def _privatize_fleet(stats, config: ScenarioConfig, mechanism: str, epsilon: float,
                     rng: np.random.Generator, *, accounted: bool = False):
    releases, guarantees = [], []
    for s in stats:
        private, guarantee = privatize_household(
            s, mechanism=mechanism, epsilon=epsilon, delta=config.delta, unit=config.unit,
            window=config.window_steps, alpha=config.alpha if mechanism == "sas" else None,
            rng=rng, accounted=accounted)
        releases.append(private)
        guarantees.append(guarantee)
    return releases, guarantees


def privacy_utility_curve(stats, config: ScenarioConfig, true_delay_s: float, *,
                          epsilons: Sequence[float] = CURVE_EPSILONS,
                          mechanisms: Sequence[str] = CURVE_MECHANISMS,
                          repetitions: int = CURVE_REPETITIONS,
                          rng: np.random.Generator | int | None = None,
                          spent: list | None = None) -> list[dict[str, Any]]:
    """Fleet delay error ``|r_hat - mean r| / T`` against epsilon per mechanism (module notes).

    Every point privatizes the plain statistics ``repetitions`` times (independent noise) and
    reports the median error (a failed identification counts as an infinite error) and the
    failures.  ``spent``, when given, receives ``(household, HouseholdGuarantee)`` of every
    release (each a release of the household's data: they compose).
    """
    rng = as_generator(rng)
    rows = []
    with fleet_clipping(stats):               # once, not at each of its releases
        for mechanism, eps in itertools.product(mechanisms, epsilons):
            errors, notes, guarantee = [], [], 0.0
            for _ in range(repetitions):
                # the summary composes these re-releases (its "releases")
                releases, guarantees = _privatize_fleet(stats, config, mechanism, float(eps),
                                                        rng, accounted=True)
                if spent is not None:
                    spent.extend(enumerate(guarantees))
                delay, _, note = _delay(_identify(releases, config))
                errors.append(abs(delay - true_delay_s) / config.dt_s
                              if math.isfinite(delay) else math.inf)
                notes.append(note)
                guarantee = max([guarantee] + [g.epsilon for g in guarantees])
            rows.append({"mechanism": mechanism, "epsilon": float(eps),
                         "epsilon_household": guarantee,
                         "median_delay_error_T": float(np.median(errors)),
                         "delay_errors_T": errors,
                         "failed": int(sum(not math.isfinite(e) for e in errors)),
                         "notes": sorted({n for n in notes if n})})
    return rows


def run_case_study(config: ScenarioConfig, out: str | Path, *, grid: bool = True,
                   curve_epsilons: Sequence[float] = CURVE_EPSILONS, attacks: bool = True,
                   progress: bool = False) -> dict[str, Any]:
    """Run the case study and write ``summary.json`` and the figures (module notes).

    Parameters
    ----------
    config : ScenarioConfig
    out : str or Path
        Output folder (created).
    grid : bool, default True
        Run the LV power flows (needs pandapower and simbench; ~20 s to load the grid).
    curve_epsilons : sequence of float, default :data:`CURVE_EPSILONS`
        Epsilons of the privacy-utility curve (empty: no curve).
    attacks : bool, default True
        Run both attacks on household 0 and the fleet's per-day statistics, plain and
        privatized at the household's budget
        (:func:`simulations.smartgrid.attack_study.attack_summary`; needs at least 5
        households for household-level cross-validation).
    progress : bool, default False
        Show a tqdm bar over the stages.

    Returns
    -------
    dict
        The summary written to ``summary.json`` (NaN written as null).

    Raises
    ------
    ParameterError
        ``out`` is a file, a bad epsilon in ``curve_epsilons`` (or a curve with ``delta=0``:
        its Gaussian points need ``delta > 0``), or ``attacks`` with fewer than 5 households.

    Examples
    --------
    >>> import tempfile
    >>> config = ScenarioConfig(households=3, dt_s=900.0, delay_periods=(0.4, 0.6),
    ...                         max_delay=2, identification_days=20, mechanism="gaussian",
    ...                         epsilon=100.0, mpc_horizon_steps=4, profile_source="extract")
    >>> summary = run_case_study(config, tempfile.mkdtemp(), grid=False, curve_epsilons=(),
    ...                          attacks=False)
    >>> summary["households"], summary["unit"], round(summary["epsilon"], 6)
    (3, 'sample', 100.0)
    >>> sorted(summary["tracking_rmse_nonprivate"])
    ['fractional', 'mpc', 'naive', 'truncated']
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ParameterError(f"out {str(out)!r} is a file; it must name a folder")
    curve_epsilons = [float(e) for e in curve_epsilons]
    if any(not (math.isfinite(e) and e > 0) for e in curve_epsilons):
        raise ParameterError(f"curve_epsilons must be positive numbers; got {curve_epsilons}")
    if curve_epsilons and "gaussian" in CURVE_MECHANISMS and config.delta == 0.0:
        raise ParameterError("the privacy-utility curve's Gaussian points need delta > 0; got "
                             "delta=0.0: give delta > 0, or skip the curve (curve_epsilons=(), "
                             "the command's --curve-epsilons none)")
    if attacks and config.households < 5:
        raise ParameterError(f"the attacks need at least 5 households (household-level "
                             f"cross-validation of the occupancy attack); got households="
                             f"{config.households}: run more households, or attacks=False")
    out.mkdir(parents=True, exist_ok=True)
    stages = ["profiles and fleet", "statistics", "private release", "identification",
              "privacy-utility curve", "attacks", "demand response (private model)",
              "demand response (non-private model)", "LV grid", "figures"]
    bar = tqdm(total=len(stages), desc="smartgrid", unit="stage", disable=not progress)
    timings: dict[str, float] = {}
    clock = [time.perf_counter()]

    def done(stage: str) -> None:
        now = time.perf_counter()
        timings[stage] = now - clock[0]
        clock[0] = now
        following = stages.index(stage) + 1
        if following < len(stages):
            bar.set_postfix_str(stages[following])
        bar.update(1)

    # one stream per stage: the fleet, its data and the control day do not depend on which
    # mechanism or curve consumed random numbers before them
    fleet_rng, release_rng, curve_rng, control_rng, attack_rng = (
        np.random.default_rng(seed) for seed in np.random.SeedSequence(config.seed).spawn(5))
    begin = time.perf_counter()
    bar.set_postfix_str(stages[0])
    profiles = load_profiles(config.profile_source)
    fleet = draw_households(config.households, dt_s=config.dt_s,
                            delay_periods=config.delay_periods, rng=fleet_rng)
    record = simulate_fleet(fleet, profiles, start_day=config.start_day,
                            days=config.identification_days, setpoint_c=config.setpoint_c,
                            setback_K=config.setback_K, excitation=config.excitation,
                            excitation_signal=config.excitation_signal, noise_K=config.noise_K,
                            rng=fleet_rng)
    true_delay = float(np.mean([h.plant.delay[0] for h in fleet]))
    done(stages[0])

    bounds = SharingBounds(excitation=max(config.excitation, 1e-12))
    stats = [household_statistics(record, i, max_delay=config.max_delay, bounds=bounds)
             for i in range(config.households)]
    done(stages[1])
    # the households' clipping said once for the run, not at each of its releases
    with fleet_clipping(stats) as clipping:
        releases, guarantees = _privatize_fleet(stats, config, config.mechanism,
                                                config.epsilon, release_rng)
        done(stages[2])
        private_fit, plain_fit = _identify(releases, config), _identify(stats, config)
        delay, ci, note = _delay(private_fit)
        plain_delay, plain_ci, plain_note = _delay(plain_fit)
        done(stages[3])
        spent = list(enumerate(guarantees))   # (household, guarantee) of every private release
        curve = privacy_utility_curve(stats, config, true_delay, epsilons=curve_epsilons,
                                      rng=curve_rng, spent=spent) if curve_epsilons else []
        done(stages[4])
        attack = _attacks(record, config, attack_rng) if attacks else {}
        spent += attack.pop("attack_releases", [])
        done(stages[5])

    # the day before the demand-response day warms the controllers' observers up
    day = config.steps_per_day
    control = simulate_fleet(fleet, profiles, start_day=(config.grid_day - 1) % YEAR_DAYS,
                             days=2, setpoint_c=config.setpoint_c, setback_K=config.setback_K,
                             excitation=0.0, noise_K=config.noise_K, rng=control_rng)
    uncontrolled_kw, base_kw = control.applied_power()[:, day:], control.base_load_kw[:, day:]
    p_max = np.array([h.parameters.heat_pump_max_kw for h in fleet])
    forecast = uncontrolled_kw.sum(axis=0) + base_kw.sum(axis=0)
    signal = GridSignal.flatten(forecast, dt_s=config.dt_s,
                                fleet_pmax_kw=float(p_max.sum()), intraday=INTRADAY,
                                rng=control_rng)
    noise_seed = int(control_rng.integers(2 ** 31))
    control_results: dict[str, DemandResponseResult | None] = {}
    control_notes: dict[str, str] = {}
    for label, fit, stage in (("private", private_fit, stages[6]),
                              ("nonprivate", plain_fit, stages[7])):
        if fit is None or not fit.usable:
            control_results[label] = None
            control_notes[label] = ("no controller: the identified model has no continuous "
                                    "part (" + (_delay(fit)[2] or "no model") + ")")
        else:
            try:
                with warnings.catch_warnings():
                    # a controller that failed alone is in the summary's controller_notes
                    warnings.filterwarnings("ignore", "run_demand_response: controller",
                                            RuntimeWarning)
                    control_results[label] = run_demand_response(
                        fit.model, control, signal, comfort_K=config.comfort_K,
                        offsets_c=bounds.offsets_c, horizon_steps=config.mpc_horizon_steps,
                        warmup_steps=day, rng=noise_seed)
            except ToolboxError as exc:    # e.g. a noisy model no gain stabilizes
                control_results[label] = None
                control_notes[label] = f"no controller: design failed on this model ({exc})"
        done(stage)

    # the grid's controlled case is the fractional controller's, on the private model if it ran
    controlled_label, controlled = next(((label, result) for label, result
                                         in control_results.items()
                                         if result is not None and "fractional" in result.outcomes),
                                        ("nonprivate", None))
    grid_results = {}
    if grid:
        from simulations.smartgrid.grid import LVGrid

        lv = LVGrid.load(config.grid)
        grid_results["uncontrolled"] = lv.run(uncontrolled_kw, start_day=config.grid_day,
                                              dt_s=config.dt_s, base_load_kw=base_kw)
        if controlled is not None:
            grid_results["controlled"] = lv.run(controlled.outcomes["fractional"].applied_kw,
                                                start_day=config.grid_day, dt_s=config.dt_s,
                                                base_load_kw=base_kw)
    done(stages[8])

    guarantee = max(guarantees, key=lambda g: g.epsilon)
    summary: dict[str, Any] = {
        "households": config.households,
        "dt_s": config.dt_s,
        "epsilon": guarantee.epsilon,
        "delta": guarantee.delta,
        "unit": config.unit,
        "window_steps": config.window_steps,
        "mechanism": config.mechanism,
        "alpha": config.alpha if config.mechanism == "sas" else None,
        "guarantee": guarantee.to_dict(),
        "delay_true_s": true_delay,
        "delay_true_range_s": [float(min(h.plant.delay[0] for h in fleet)),
                               float(max(h.plant.delay[0] for h in fleet))],
        "delay_identified_s": delay,
        "delay_ci_s": list(ci),
        "delay_error_T": abs(delay - true_delay) / config.dt_s,
        "delay_note": note,
        # the data owners' information, summed up (the releases do not carry it)
        "clipping_note": clipping or "",
        "delay_identified_nonprivate_s": plain_delay,
        "delay_ci_nonprivate_s": list(plain_ci),
        "delay_error_nonprivate_T": abs(plain_delay - true_delay) / config.dt_s,
        "privacy_utility": curve,
        # "epsilon" is the main release's: say so, and what the whole run released
        "epsilon_scope": "the main release only (each household's statistics privatized once: "
                         "the private model and the demand response it drives); 'releases' "
                         "lists every release of the run",
        **_run_releases(spent, curve, attack, config),
    }
    summary.update({k: v for k, v in attack.items() if k != "attack_trace"})
    for label, result in control_results.items():
        suffix = "" if label == "private" else "_nonprivate"
        for metric in ("tracking_rmse", "comfort_violation_Kh", "energy_kwh"):
            key = "tracking_rmse_kw" if metric == "tracking_rmse" else metric
            summary[metric + suffix] = {
                name: (result.outcomes[name].metrics()[key]
                       if result is not None and name in result.outcomes else math.nan)
                for name in TRACKING_CONTROLLERS}
    summary["tracking_rmse_unit"] = "kW (aggregate heat-pump power)"
    summary["comfort_violation_unit"] = (f"K h per household over the day, outside setpoint "
                                         f"+- {config.comfort_K:g} K")
    ran = [r for r in control_results.values() if r is not None]
    summary["requested_rms_kw"] = (float(np.sqrt(np.mean(ran[0].requested_kw ** 2))) if ran
                                   else math.nan)
    summary["control_notes"] = control_notes
    # a controller that failed alone (e.g. the MPC's solver): its reason, the others' numbers kept
    summary["controller_notes"] = {label: dict(result.notes)
                                   for label, result in control_results.items()
                                   if result is not None and result.notes}
    summary["grid_controlled_by"] = f"fractional ({controlled_label} model)"
    for key, attribute in (("voltage_min_pu", "voltage_min_pu"),
                           ("voltage_max_pu", "voltage_max_pu"),
                           ("transformer_loading_max_percent", "transformer_loading_percent")):
        reducer = np.min if key == "voltage_min_pu" else np.max
        summary[key] = {name: float(reducer(getattr(r, attribute)))
                        for name, r in grid_results.items()}
    _figures(out, summary, curve, control_results, grid_results, control, config)
    if attack:
        from simulations.smartgrid.attack_study import plot_attacks
        plot_attacks(attack, out / "attacks.png")
    done(stages[9])
    bar.close()
    timings["total"] = time.perf_counter() - begin
    summary["timings_s"] = timings
    summary["config"] = config.to_dict()
    (out / "summary.json").write_text(json.dumps(_json_safe(summary), indent=2))
    return summary


def _run_releases(spent: list, curve: list[dict[str, Any]], attack: dict[str, Any],
                  config: ScenarioConfig) -> dict[str, Any]:
    """Every release of the run with its epsilon per household, and their composition for the
    household that released most (the accountant: :func:`run_guarantee`).

    The study re-releases the same households' data for the curve and the attacks and fits
    their plain statistics too; as a simulation that is its purpose, as a deployment it would
    be the composed total (and the non-private outputs no privacy at all).
    """
    releases = [{"what": "main release (private model, its demand response)", "private": True,
                 "mechanism": config.mechanism, "epsilon": spent[0][1].epsilon,
                 "per_household": 1}] if spent else []
    releases += [{"what": "privacy-utility curve", "private": True,
                  "mechanism": row["mechanism"], "epsilon": row["epsilon_household"],
                  "per_household": CURVE_REPETITIONS} for row in curve]
    if attack:
        releases += [{"what": "attack (a): windows of household 0", "private": True,
                      "mechanism": config.mechanism,
                      "epsilon": attack["attack_guarantee_window"]["epsilon"],
                      "per_household": "household 0: one per window attacked"},
                     {"what": "attack (b): per-day statistics", "private": True,
                      "mechanism": config.mechanism,
                      "epsilon": attack["attack_guarantee_day"]["epsilon"],
                      "per_household": 1}]
    releases.append({"what": "non-private fit (delay_identified_nonprivate_s, the *_nonprivate "
                             "demand response)", "private": False, "mechanism": None,
                     "epsilon": None, "per_household": 1})
    by_household: dict[int, list] = {}
    for household, guarantee in spent:
        by_household.setdefault(household, []).append(guarantee)
    totals: dict[frozenset, Any] = {}          # households that released alike: composed once
    for guarantees in by_household.values():
        key = frozenset(Counter(guarantees).items())
        if key not in totals:
            totals[key] = run_guarantee(guarantees, delta=config.delta)
    worst = max(totals.values(), key=lambda g: g.epsilon, default=None)
    return {"releases": releases,
            "epsilon_total_private": math.nan if worst is None else worst.epsilon,
            "epsilon_total_delta": math.nan if worst is None else worst.delta,
            "epsilon_total_note": "every private release of the run composed for the household "
                                  "that released most (the accountant, per "
                                  f"{config.unit}); the non-private fit is not private: the "
                                  "run as a whole has no finite epsilon"}


def _attacks(record, config: ScenarioConfig, rng: np.random.Generator) -> dict[str, Any]:
    """Both attacks at the run's budget and unit (household 0 for the reconstruction)."""
    from simulations.smartgrid.attack_study import attack_summary

    return attack_summary(record, household=0, epsilon=config.epsilon, delta=config.delta,
                          unit=config.unit,
                          window=config.window_steps if config.unit == "window" else None,
                          mechanism=config.mechanism,
                          alpha=config.alpha if config.mechanism == "sas" else None,
                          attack_window_steps=config.attack_window_steps,
                          max_delay=config.max_delay, rng=rng)


def _json_safe(value: Any) -> Any:
    """NaN/inf as null (strict JSON), numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def _figures(out: Path, summary: dict[str, Any], curve: list[dict[str, Any]],
             control_results: dict[str, DemandResponseResult | None],
             grid_results: dict[str, Any], control, config: ScenarioConfig) -> None:
    if curve:
        fig, ax = _figure()
        for mechanism in CURVE_MECHANISMS:
            rows = [r for r in curve if r["mechanism"] == mechanism]
            if rows:
                errors = [min(r["median_delay_error_T"], 1.0) for r in rows]
                ax.loglog([r["epsilon"] for r in rows], errors, "o-", label=mechanism)
        if math.isfinite(summary["delay_error_nonprivate_T"]):
            ax.axhline(max(summary["delay_error_nonprivate_T"], 1e-4), color="k",
                       linestyle=":", label="non-private")
        ax.axhline(0.05, color="tab:red", linestyle="--", linewidth=0.8, label="0.05 T")
        ax.set_xlabel(f"epsilon per household ({config.unit} level)")
        ax.set_ylabel(f"median |fleet delay error| / T (of {CURVE_REPETITIONS}; failed: 1)")
        ax.set_title(f"Privacy-utility: {config.households} households, "
                     f"{config.identification_days} days")
        _save(fig, ax, out / "privacy_utility.png")
    results = {k: v for k, v in control_results.items() if v is not None}
    if results:
        label, result = next(iter(results.items()))
        hours = np.arange(result.requested_kw.size) * result.dt_s / 3600.0
        fig, ax = _figure(7.0, 4.0)
        ax.plot(hours, result.requested_kw, color="k", linewidth=2, label="requested")
        for name, outcome in result.outcomes.items():
            ax.plot(hours, outcome.power_kw - outcome.baseline_kw, linewidth=1,
                    label=f"{name} ({outcome.tracking_rmse_kw:.1f} kW RMSE)")
        ax.set_xlabel("hour of day")
        ax.set_ylabel("aggregate modulation (kW)")
        ax.set_title(f"Demand response, controllers on the {label} model")
        _save(fig, ax, out / "tracking.png")
        fig, ax = _figure(7.0, 4.0)
        setpoint = config.setpoint_c
        for name in ("fractional", "naive", "mpc"):
            if name not in result.outcomes:
                continue
            indoor = result.outcomes[name].indoor_c
            line = ax.plot(hours, np.percentile(indoor[:, 1:], 5, axis=0),
                           label=f"{name}: 5 % / 95 % of houses "
                                 f"({result.outcomes[name].comfort_violation_Kh:.2f} K h)")[0]
            ax.plot(hours, np.percentile(indoor[:, 1:], 95, axis=0), color=line.get_color())
        for edge in (setpoint - config.comfort_K, setpoint + config.comfort_K):
            ax.axhline(edge, color="k", linestyle=":", linewidth=0.8)
        ax.set_xlabel("hour of day")
        ax.set_ylabel("indoor air temperature (C)")
        ax.set_title("Comfort band and the fleet's indoor temperatures")
        _save(fig, ax, out / "comfort.png")
    if grid_results:
        names = {"uncontrolled": "thermostat only",
                 "controlled": f"demand response ({summary['grid_controlled_by']})"}
        plot_voltage_band({names[k]: v for k, v in grid_results.items()},
                          out / "voltages.png")
