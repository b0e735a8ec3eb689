"""``dmdidc smartgrid``: the smart-grid privacy case study from the command line (issue 10).

This module defines the group and its ``run`` action; ``sweep`` is in
:mod:`simulations.cli.smartgrid_sweep`, ``report``, ``attacks`` and ``extract`` in
:mod:`simulations.cli.smartgrid_studies`.  Wire into the main CLI with
``actions = add_smartgrid_parser(sub)`` on the ``add_subparsers`` object of
:mod:`simulations.cli.root`; other modules add actions to the returned ``smartgrid`` group
(``actions.add_parser(...)`` and ``set_defaults(handler=...)``).

Examples
--------
``dmdidc smartgrid run --households 200 --epsilon 1 --out out/smartgrid``
``dmdidc smartgrid run --households 20 --days 30 --mechanism gaussian --no-grid --out o``
``dmdidc smartgrid run --config scenario.json --seed 3 --out o`` (flags override the file)
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from simulations.cli.smartgrid_studies import add_study_actions, load_config
from simulations.cli.smartgrid_sweep import add_sweep_action

__all__ = ["add_smartgrid_parser", "run_command"]

#: ``ScenarioConfig`` defaults, spelled out so that ``--help`` imports nothing heavy; a test
#: keeps them equal.
DEFAULTS = {"households": 200, "epsilon": 1.0, "delta": 1e-5, "mechanism": "sas",
            "alpha": 1.9, "unit": "sample", "identification_days": 120, "start_day": 305,
            "grid_day": 10, "seed": 0, "profile_source": "auto"}
#: Flag -> ScenarioConfig field.
_FIELDS = {"households": "households", "epsilon": "epsilon", "delta": "delta",
           "mechanism": "mechanism", "alpha": "alpha", "unit": "unit", "window": "window_steps",
           "days": "identification_days", "start_day": "start_day", "grid_day": "grid_day",
           "seed": "seed", "profiles": "profile_source"}
#: Epsilons of the curve (``case_study.CURVE_EPSILONS``, as text: argparse parses a string
#: default with the option's type, and the help shows it as written).
_CURVE = "0.3,1,3,10,30,100"


def _epsilons(text: str) -> tuple[float, ...]:
    if text.strip().lower() == "none":
        return ()
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers or 'none'; got "
                                         f"{text!r}") from exc
    if not values or any(not (math.isfinite(v) and v > 0) for v in values):
        raise argparse.ArgumentTypeError(f"expected epsilons > 0; got {text!r}")
    return values


def add_smartgrid_parser(subparsers: Any) -> Any:
    """Register the ``smartgrid`` group and its ``run``, ``sweep``, ``report``, ``attacks`` and
    ``extract`` actions; return the group's actions."""
    group = subparsers.add_parser(
        "smartgrid", help="smart-grid privacy case study: private federated identification of "
                          "a heat-pump fleet, delay-aware demand response, LV grid",
        description="The smart-grid case study of issue 10.")
    actions = group.add_subparsers(dest="smartgrid_command", required=True)
    run = actions.add_parser(
        "run", help="the whole case study; summary.json and PNG figures",
        description="Simulate the fleet, privatize every household's sufficient statistics, "
                    "identify the fleet model, run demand response on the true fleet with the "
                    "fractional, truncated, naive and MPC controllers (private and non-private "
                    "models) and the LV power flows; write summary.json and figures.")
    d = DEFAULTS
    run.add_argument("--config", help="scenario JSON (ScenarioConfig); flags override it")
    run.add_argument("--households", type=int,
                     help=f"fleet size (default: {d['households']})")
    run.add_argument("--epsilon", type=float,
                     help=f"per-household budget, composed (default: {d['epsilon']})")
    run.add_argument("--delta", type=float, help=f"delta of the guarantee (default: "
                                                  f"{d['delta']})")
    run.add_argument("--mechanism", choices=("sas", "gaussian", "laplace"),
                     help=f"noise on the statistics (default: {d['mechanism']})")
    run.add_argument("--alpha", type=float,
                     help=f"SaS stability index in (0, 2), --mechanism sas only (default: "
                          f"{d['alpha']})")
    run.add_argument("--unit", choices=("sample", "window", "trajectory"),
                     help=f"privacy unit: one time step, --window steps, or a household's "
                          f"whole record (default: {d['unit']})")
    run.add_argument("--window", type=int, help="time steps of a privacy window, --unit window "
                                                "only")
    run.add_argument("--days", type=int, help=f"identification days per household "
                                              f"(default: {d['identification_days']})")
    run.add_argument("--start-day", type=int, help=f"first day of the data, 0 = 1 January "
                                                   f"2016 (default: {d['start_day']})")
    run.add_argument("--grid-day", type=int, help=f"day of the demand response and power "
                                                  f"flows (default: {d['grid_day']})")
    run.add_argument("--profiles", choices=("auto", "packages", "extract"),
                     help=f"profile source (default: {d['profile_source']})")
    run.add_argument("--seed", type=int, help=f"root seed (default: {d['seed']})")
    run.add_argument("--curve-epsilons", type=_epsilons, default=_CURVE,
                     help="epsilons of the privacy-utility curve, comma separated, or 'none'")
    run.add_argument("--no-grid", action="store_true", help="skip the LV power flows")
    run.add_argument("--no-attacks", action="store_true",
                     help="skip the reconstruction and occupancy attacks (they need at least 5 "
                          "households)")
    run.add_argument("--out", default="out/smartgrid", help="output folder")
    run.set_defaults(handler=run_command)

    add_sweep_action(actions)            # smartgrid sweep (issue 10, item 7)
    add_study_actions(actions)           # smartgrid report, attacks, extract
    return actions


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc smartgrid run``."""
    from _toolbox.errors import ParameterError
    from simulations.cli.atomic import staged_folder, written_files
    from simulations.cli.common import output_path, show_progress, write_table
    from simulations.smartgrid.case_study import run_case_study
    from simulations.smartgrid.config import ScenarioConfig

    out = output_path(args.out, folder=True)
    base = load_config(args.config) if args.config else ScenarioConfig()
    overrides = {field: getattr(args, flag) for flag, field in _FIELDS.items()
                 if getattr(args, flag) is not None}
    mechanism = overrides.get("mechanism", base.mechanism)
    if "alpha" in overrides and mechanism != "sas":
        raise ParameterError(f"--alpha only applies to --mechanism sas; got --mechanism "
                             f"{mechanism}")
    # a config's own alpha would only move the SaS points of the curve, silently
    if "alpha" not in overrides and mechanism != "sas" and base.alpha != DEFAULTS["alpha"]:
        raise ParameterError(f"alpha {base.alpha:g} of --config {args.config!r} only applies "
                             f"to mechanism sas; the run's mechanism is {mechanism}: remove "
                             f"alpha from the config, or give --mechanism sas")
    config = ScenarioConfig.from_dict({**base.to_dict(), **overrides})
    with staged_folder(out) as stage:
        summary = run_case_study(config, stage, grid=not args.no_grid,
                                 curve_epsilons=args.curve_epsilons,
                                 attacks=not args.no_attacks, progress=show_progress())
        lines = console_lines(summary, grid=not args.no_grid, attacks=not args.no_attacks)
        write_table(stage / "summary.md", "\n".join(lines), title="dmdidc smartgrid run")
        names = written_files(stage)
    print("\n".join(lines))
    # the files this run wrote: "and the figures" was printed when no figure was written
    print(f"wrote {out}/: {', '.join(names)}" + (
        "" if any(name.endswith(".png") for name in names)
        else " (no figure: no curve, no controller ran and no power flows to plot)"))
    return 0


def console_lines(summary: dict[str, Any], *, grid: bool = True,
                  attacks: bool = True) -> list[str]:
    """The console report of a case-study summary; every missing number says why (``n/a
    (reason)``), never a bare ``nan``.

    Examples
    --------
    >>> summary = {"households": 3, "epsilon": 1.0, "delta": 1e-5, "unit": "sample",
    ...            "mechanism": "sas", "dt_s": 900.0, "delay_true_s": 450.0,
    ...            "delay_identified_s": float("nan"), "delay_error_T": float("nan"),
    ...            "delay_note": "rank-deficient moments",
    ...            "delay_identified_nonprivate_s": 460.0,
    ...            "tracking_rmse": {"mpc": float("nan")},
    ...            "comfort_violation_Kh": {"mpc": float("nan")},
    ...            "tracking_rmse_nonprivate": {"mpc": 0.5},
    ...            "comfort_violation_Kh_nonprivate": {"mpc": 0.1},
    ...            "control_notes": {"private": "no controller: no model"},
    ...            "voltage_min_pu": {}, "voltage_max_pu": {}, "timings_s": {"total": 3.0}}
    >>> print("\\n".join(console_lines(summary, grid=False, attacks=False)))
    3 households, (1, 1e-05)-DP per sample (sas)
    fleet delay: true mean 0.500 T, private n/a (rank-deficient moments), non-private 0.511 T
    controller   RMSE kW  comfort Kh   (non-private: RMSE, Kh)
           mpc       n/a         n/a   (0.500, 0.100)
      private model: n/a: no controller: no model
    attacks: n/a (skipped: --no-attacks)
    grid: n/a (skipped: --no-grid)
    time 3 s
    """
    from simulations.cli.common import known

    T = summary["dt_s"]
    notes = summary.get("control_notes", {})
    private_delay = known(summary["delay_identified_s"], lambda v: f"{v / T:.3f} T",
                           summary.get("delay_note") or "no private model")
    error = known(summary["delay_error_T"], lambda v: f" (error {v:.3f} T)", None)
    plain = known(summary["delay_identified_nonprivate_s"], lambda v: f"{v / T:.3f} T",
                   "no usable non-private model")
    lines = [f"{summary['households']} households, ({summary['epsilon']:.3g}, "
             f"{summary['delta']:.3g})-DP per {summary['unit']} ({summary['mechanism']})",
             f"fleet delay: true mean {summary['delay_true_s'] / T:.3f} T, private "
             f"{private_delay}{error}, non-private {plain}",
             f"{'controller':>10}  {'RMSE kW':>8}  {'comfort Kh':>10}   (non-private: RMSE, Kh)"]
    if "epsilon_total_private" in summary:    # the first line is the main release's only
        total = known(summary["epsilon_total_private"], "{:.3g}".format, "no private release")
        lines.insert(1, f"  (main release; every private release of the run (curve, attacks) "
                        f"composed: ({total}, {summary['epsilon_total_delta']:.3g}) per "
                        f"{summary['unit']} per household; the non-private fit: none)")
    for name, rmse in summary["tracking_rmse"].items():
        other = (summary["tracking_rmse_nonprivate"][name],
                 summary["comfort_violation_Kh_nonprivate"][name])
        lines.append(f"{name:>10}  {known(rmse, '{:8.3f}'.format, ''):>8}  "
                     f"{known(summary['comfort_violation_Kh'][name], '{:10.3f}'.format, ''):>10}"
                     f"   ({', '.join(known(v, '{:.3f}'.format, '') for v in other)})")
    failure = summary.get("delay_note") or ""
    for label in ("private", "nonprivate"):
        if label in notes:
            note = notes[label]
            if label == "private" and len(failure) > 40:   # said once, on the delay line
                note = note.replace(failure, "the failure on the delay line above")
            lines.append(f"  {label.replace('nonprivate', 'non-private')} model: n/a: {note}")
        # a controller that failed alone: the others' numbers above are kept
        for name, note in summary.get("controller_notes", {}).get(label, {}).items():
            lines.append(f"  {name} on the {label.replace('nonprivate', 'non-private')} model: "
                         f"n/a: {note}")
    if "attack_error_plain" in summary:
        def attack(key: str, pattern: str) -> str:
            return known(summary[key], pattern.format, "the attack failed")

        lines.append(f"attack (a), {summary['attack_window']}-period windows: relative error "
                     f"{attack('attack_error_plain', '{:.2g}')} plain, "
                     f"{attack('attack_error_private', '{:.2g}')} private; attack (b) balanced "
                     f"accuracy {attack('attack_accuracy_plain', '{:.2f}')} plain, "
                     f"{attack('attack_accuracy_private', '{:.2f}')} private")
    else:
        lines.append("attacks: n/a (" + ("skipped: --no-attacks" if not attacks
                                         else "not run for this fleet") + ")")
    if not grid:
        lines.append("grid: n/a (skipped: --no-grid)")
    for name in ("uncontrolled", "controlled"):
        if name in summary["voltage_min_pu"]:
            # which model controls: the non-private one when the private fit gave no controller
            by = f" by {summary['grid_controlled_by']}" if name == "controlled" else ""
            lines.append(f"grid {name}{by}: voltage {summary['voltage_min_pu'][name]:.3f}-"
                         f"{summary['voltage_max_pu'][name]:.3f} pu")
        elif grid:
            lines.append(f"grid {name}: n/a (no controller ran on either model)")
    lines.append(f"time {summary['timings_s']['total']:.0f} s")
    return lines
