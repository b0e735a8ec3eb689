"""``dmdidc smartgrid report | attacks | extract``: the smart-grid study scripts as subcommands.

* ``report``: the foundation measurements (:func:`simulations.smartgrid.report.run_foundations`:
  identification variants, reconstruction and occupancy attacks, optional LV power flows),
  ``foundations.json``;
* ``attacks``: both attacks against epsilon and window length, plain and privatized
  (:mod:`simulations.smartgrid.attack_study`), JSON + CSV + PNG;
* ``extract``: regenerate the shipped profile extract from the installed simbench and
  demandlib packages (:func:`simulations.smartgrid.make_extract.write_extract`).

:func:`add_study_actions` registers them on the ``dmdidc smartgrid`` actions.  Their defaults are
spelled out (``--help`` imports nothing heavy); a test keeps them equal to the library's.

Examples
--------
``dmdidc smartgrid report --households 20 --out out/smartgrid``
``dmdidc smartgrid attacks --households 60 --days 56 --out out/attacks``
``dmdidc smartgrid extract --out extract.npz``
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simulations.cli.common import _bound, _count, _scale, _seed

__all__ = ["add_study_actions", "load_config", "MECHANISMS", "PRIVACY_UNITS", "REPORT_DEFAULTS"]

#: ``dmdidc.private.MECHANISMS`` and ``PRIVACY_UNITS`` (the library's order), spelled out so that
#: ``--help`` imports nothing heavy; a test keeps them equal.
MECHANISMS = ("gaussian", "laplace", "sas")
PRIVACY_UNITS = ("sample", "window", "trajectory")
#: ``ScenarioConfig(households=20)``, the report's base scenario, spelled out (a test keeps them
#: equal).
REPORT_DEFAULTS = {"households": 20, "identification_days": 120, "start_day": 305,
                   "grid_day": 10, "setback_K": 0.0, "excitation": 0.5, "seed": 0,
                   "max_delay": 3}
#: Report flag -> ScenarioConfig field.
_REPORT_FLAGS = {"households": "households", "days": "identification_days",
                 "start_day": "start_day", "grid_day": "grid_day", "setback": "setback_K",
                 "excitation": "excitation", "seed": "seed"}
#: Settings of the attack study, in the order its JSON lists them.
_ATTACK_SETTINGS = ("households", "days", "start_day", "setback", "excitation", "epsilons",
                    "windows", "mechanisms", "unit", "window", "seeds", "starts", "seed", "out")


def add_study_actions(actions: Any) -> None:
    """Add ``report``, ``attacks`` and ``extract`` to the ``dmdidc smartgrid`` actions."""
    d = REPORT_DEFAULTS
    report = actions.add_parser(
        "report", help="foundation measurements: identification variants, attacks, grid",
        description="Simulate a fleet from a ScenarioConfig and measure what the README reports "
                    "on the foundations: identification variants, the reconstruction and "
                    "occupancy attacks, and the LV power flows; writes foundations.json.")
    report.add_argument("--config", help="scenario JSON (ScenarioConfig); flags override it")
    report.add_argument("--households", type=_count, help=f"fleet size (default {d['households']})")
    report.add_argument("--days", type=_count, help=f"identification days (default "
                        f"{d['identification_days']})")
    report.add_argument("--start-day", type=_seed, help=f"first day of the data, 0 = 1 January "
                        f"(default {d['start_day']})")
    report.add_argument("--grid-day", type=_seed, help=f"day of the power flows, within the "
                        f"data (default {d['grid_day']})")
    report.add_argument("--setback", type=_scale, help=f"away setback, K (default "
                        f"{d['setback_K']})")
    report.add_argument("--excitation", type=_scale, help=f"excitation amplitude as a fraction "
                        f"of the heat pump's power (default {d['excitation']})")
    report.add_argument("--seed", type=_seed, help=f"root seed (default {d['seed']})")
    report.add_argument("--windows", type=_count, nargs="+",
                        default=[8, 10, 12, 13, 14, 16, 24, 48, 96],
                        help="window lengths of the reconstruction attack")
    report.add_argument("--no-grid", action="store_true", help="skip the power flows")
    report.add_argument("--out", default="out/smartgrid", help="output folder")
    report.set_defaults(handler=run_report)

    attacks = actions.add_parser(
        "attacks", help="attack and defence study: both attacks against epsilon, plain and "
                        "privatized",
        description="Attack and defence study (issue 10, item 4): the reconstruction attack "
                    "against epsilon and window length, the occupancy attack against epsilon, "
                    "plain and privatized; writes attack_study.json, occupancy.csv, "
                    "reconstruction.csv and attack_study.png.")
    attacks.add_argument("--households", type=_count, default=40, help="fleet size")
    attacks.add_argument("--days", type=_count, default=28, help="days of data")
    attacks.add_argument("--start-day", type=_seed, default=0, help="first day, 0 = 1 January")
    attacks.add_argument("--setback", type=_scale, default=0.0, help="away setback, K")
    attacks.add_argument("--excitation", type=_scale, default=d["excitation"],
                         help="excitation amplitude as a fraction of P_max")
    attacks.add_argument("--epsilons", type=_bound, nargs="+",
                         default=[0.1, 1.0, 10.0, 100.0, 1000.0],
                         help="household budgets per unit (composed)")
    attacks.add_argument("--windows", type=_count, nargs="+", default=[12, 14, 16, 18, 24],
                         help="window lengths of attack (a), periods")
    attacks.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS),
                         choices=MECHANISMS, help="privacy mechanisms")
    attacks.add_argument("--unit", default="sample", choices=PRIVACY_UNITS, help="privacy unit")
    attacks.add_argument("--window", type=_count, default=None,
                         help="steps of a privacy window (--unit window)")
    attacks.add_argument("--seeds", type=_count, default=2, help="privacy-noise draws, attack (b)")
    attacks.add_argument("--starts", type=_count, default=3, help="windows per length, attack (a)")
    attacks.add_argument("--seed", type=_seed, default=0, help="root seed")
    attacks.add_argument("--out", default="out/attack_study", help="output folder")
    attacks.set_defaults(handler=run_attacks)

    extract = actions.add_parser(
        "extract", help="regenerate the shipped profile extract from simbench and demandlib",
        description="Write a compressed .npz (float32) with the six SimBench household shapes "
                    "(active and reactive), PV1-PV8 and the hourly DWD TRY 2010 region 4 "
                    "(Potsdam) temperature and irradiance, from the installed simbench and "
                    "demandlib packages. The result is a derived database of SimBench and stays "
                    "under the Open Database License 1.0 (see simulations/smartgrid/data/"
                    "README.md).")
    extract.add_argument("--out", help="output .npz file (default: the shipped extract, "
                                       "simulations/smartgrid/data/)")
    extract.set_defaults(handler=run_extract)


def load_config(path: str) -> Any:
    """The :class:`~simulations.smartgrid.ScenarioConfig` of ``--config``; a bad file or
    setting raises :class:`~simulations.cli.terms.StatedError` naming the file and its key
    (``households``, ``window_steps``), not the flag that would set it."""
    from _toolbox.errors import ParameterError
    from simulations.cli.terms import StatedError
    from simulations.smartgrid.config import ScenarioConfig

    try:
        return ScenarioConfig.load(path)
    except ParameterError as exc:
        raise StatedError(f"--config {path}: {exc}") from exc


def run_report(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc smartgrid report``."""
    from _toolbox.errors import ParameterError
    from simulations.cli.atomic import staged_folder
    from simulations.cli.common import output_path, show_progress, summary_table, write_table
    from simulations.smartgrid.config import ScenarioConfig
    from simulations.smartgrid.report import run_foundations

    if args.no_grid and args.grid_day is not None:
        raise ParameterError(f"--grid-day only sets the day of the power flows; got --grid-day "
                             f"{args.grid_day} with --no-grid")
    out = output_path(args.out, folder=True)
    base = load_config(args.config) if args.config else ScenarioConfig(households=20)
    overrides = {field: getattr(args, flag) for flag, field in _REPORT_FLAGS.items()
                 if getattr(args, flag) is not None}
    config = ScenarioConfig.from_dict({**base.to_dict(), **overrides})
    with staged_folder(out) as stage:
        summary = run_foundations(config, stage, windows=args.windows, grid=not args.no_grid,
                                  progress=show_progress())
        shown = {k: v for k, v in summary.items() if not k.startswith("identification_rows")}
        write_table(stage / "foundations.md", shown, title="dmdidc smartgrid report")
    print(summary_table(shown))
    print(f"wrote {out}/foundations.json, {out}/foundations.md")
    return 0


def run_attacks(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc smartgrid attacks``: both attacks against epsilon (and window
    length), CSV + JSON + PNG."""
    import numpy as np

    from _toolbox.errors import ParameterError
    from simulations.cli.atomic import staged_folder
    from simulations.cli.common import output_path, show_progress, summary_table, write_table
    from simulations.smartgrid.attack_study import (
        attack_summary,
        chance_epsilon,
        occupancy_privacy_study,
        plot_attacks,
    )
    from simulations.smartgrid.attack_windows import fleet_prior, reconstruction_privacy_study
    from simulations.smartgrid.config import ScenarioConfig
    from simulations.smartgrid.household import draw_households
    from simulations.smartgrid.operation import simulate_fleet
    from simulations.smartgrid.private_identification import fleet_clipping, household_statistics
    from simulations.smartgrid.profiles import load_profiles

    # refused before the fleet is simulated (privatize_household would refuse it later)
    if (args.unit == "window") != (args.window is not None):
        raise ParameterError(f"--window applies to --unit window and that unit needs it; got "
                             f"--unit {args.unit} with --window {args.window}")
    out = output_path(args.out, folder=True)
    progress = show_progress()
    rng = np.random.default_rng(args.seed)
    record = simulate_fleet(draw_households(args.households, rng=rng), load_profiles(),
                            start_day=args.start_day, days=args.days, setback_K=args.setback,
                            excitation=args.excitation, progress=progress, rng=rng)
    options = {"unit": args.unit, "window": args.window}
    # the headline is at the first mechanism and epsilon asked for (it was SaS at epsilon 1
    # whatever --mechanisms and --epsilons said)
    mechanism, epsilon = args.mechanisms[0], args.epsilons[0]
    households = [household_statistics(record, i, max_delay=ScenarioConfig.max_delay)
                  for i in range(args.households)]
    with fleet_clipping(households):         # once, not at each of the studies' releases
        summary = attack_summary(record, mechanism=mechanism, epsilon=epsilon, rng=rng,
                                 **options)
        summary.pop("attack_releases")       # guarantee objects (a case-study run composes them)
        occupancy = occupancy_privacy_study(record, epsilons=args.epsilons,
                                            mechanisms=args.mechanisms, seeds=args.seeds,
                                            progress=progress, rng=rng, **options)
        model = fleet_prior(record, ScenarioConfig.max_delay)
        reconstruction = reconstruction_privacy_study(
            record, windows=args.windows, epsilons=args.epsilons, mechanisms=args.mechanisms,
            starts=args.starts, model=model, progress=progress, rng=rng, **options)
    result = {"settings": {key: getattr(args, key) for key in _ATTACK_SETTINGS},
              "summary": summary,
              "chance_epsilon": {m: chance_epsilon(occupancy, m) for m in args.mechanisms},
              "occupancy": occupancy, "reconstruction": reconstruction}
    shown = {"headline": f"{mechanism} at epsilon {epsilon:g} per {args.unit} (the first of "
                         f"--mechanisms and --epsilons; the CSVs hold every pair)",
             **{k: v for k, v in summary.items() if k != "attack_trace"},
             "chance_epsilon": result["chance_epsilon"]}
    shown = json.loads(json.dumps(shown, default=float))          # numpy scalars as numbers
    with staged_folder(out) as stage:
        (stage / "attack_study.json").write_text(json.dumps(result, indent=2, default=float))
        _write_csv(occupancy, stage / "occupancy.csv")
        _write_csv(reconstruction, stage / "reconstruction.csv")
        plot_attacks(summary, stage / "attack_study.png", occupancy_rows=occupancy)
        write_table(stage / "attack_study.md", shown, title="dmdidc smartgrid attacks")
    print(summary_table(shown))
    print(f"wrote {out}/attack_study.json, attack_study.md, occupancy.csv, reconstruction.csv, "
          f"attack_study.png")
    return 0


def run_extract(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc smartgrid extract``."""
    from simulations.cli.atomic import staged_file
    from simulations.smartgrid.make_extract import write_extract
    from simulations.smartgrid.profiles import EXTRACT_PATH

    path = Path(EXTRACT_PATH if args.out is None else args.out)
    with staged_file(path) as staged:
        write_extract(staged)
    print(f"wrote {path}: {path.stat().st_size / 1e6:.2f} MB")
    return 0


def _write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import csv

    keys = [k for k in rows[0] if not isinstance(rows[0][k], list)]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
