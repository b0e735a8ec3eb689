"""``dmdidc smartgrid sweep``: the fleet privacy-utility study on Dask (or serially).

:func:`add_sweep_action` registers the ``sweep`` action on the ``dmdidc smartgrid`` actions
(``argparse`` subparsers); its handler is :func:`run_sweep_action` (``dmdidc``'s ``main``
turns its errors into exit code 2 and lists the output files it overwrote).  The grid is
:func:`simulations.smartgrid.study_sweep.study_grid`, each cell
:func:`~simulations.smartgrid.study_sweep.fleet_identification_task`, the engine
:func:`simulations.smartgrid.run_sweep`.

Examples
--------
``dmdidc smartgrid sweep --epsilons 1 10 100 --alphas 1.5 1.9 --households 100 1000 \
--days 14 --workers 2 --out out/smartgrid_sweep``
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from simulations.cli.common import _bounded

__all__ = ["add_sweep_action", "run_sweep_action", "DEFAULT_WORKERS"]

DEFAULT_WORKERS = 2
FILES = ("sweep.csv", "sweep.json", "sweep.md", "sweep.png")
#: Default delta of the Gaussian and SaS releases (an option that does nothing for Laplace).
_DELTA = 1e-5


def add_sweep_action(actions: Any) -> argparse.ArgumentParser:
    """Add ``sweep`` to the ``dmdidc smartgrid`` actions; returns its parser.

    Parameters
    ----------
    actions : argparse._SubParsersAction
        From ``parser.add_subparsers()``.
    """
    sweep = actions.add_parser(
        "sweep", help="fleet privacy-utility study: delay error vs epsilon, alpha, N, delay",
        description="For every cell of epsilon x mechanism (SaS alpha) x households x mean "
                    "delay (x repeats): simulate the fleet in chunks, let each household "
                    "privatize its DMDidc statistics with its own budget, aggregate, identify "
                    "the fleet delay and compare it with the fleet's true mean delay. Runs on a "
                    "Dask LocalCluster (--workers), an existing cluster (--scheduler) or in "
                    "this process (--serial). Writes sweep.csv (one row per task), sweep.json "
                    "(settings, rows, summary; null for a failed fit or a missing interval) "
                    "and sweep.png.")
    positive, count = _bounded(float, 0.0, strict=True), _bounded(int, 1)
    sweep.add_argument("--epsilons", type=positive, nargs="+", default=[1.0, 10.0, 100.0],
                       help="budgets per household (composed, for --unit) (default: 1 10 100)")
    sweep.add_argument("--mechanisms", nargs="+", choices=("sas", "gaussian", "laplace"),
                       default=["sas", "gaussian"],
                       help="noise on the statistics (default: sas gaussian)")
    sweep.add_argument("--alphas", type=positive, nargs="+",
                       help="SaS stability indices in [0.1, 2), one cell each; needs sas in "
                            "--mechanisms (default: 1.9)")
    sweep.add_argument("--households", type=count, nargs="+", default=[100, 1000],
                       help="fleet sizes N (default: 100 1000)")
    sweep.add_argument("--delays", type=positive, nargs="+", default=[1.5],
                       help="mean delay of the fleet in sampling periods T (default: 1.5)")
    sweep.add_argument("--delay-spread", type=_bounded(float, 0.0), default=0.2,
                       help="households' delays are uniform on mean +- spread, periods "
                            "(default: 0.2)")
    sweep.add_argument("--days", type=count, default=14,
                       help="days of operation data per household (default: 14)")
    sweep.add_argument("--start-day", type=_bounded(int, 0), default=0,
                       help="first day of year 2016, 0-based (default: 0, heating season)")
    sweep.add_argument("--excitation", type=positive, default=0.5,
                       help="aggregator's excitation amplitude, fraction of each heat pump's "
                            "power, in (0, 1] (default: 0.5)")
    sweep.add_argument("--unit", choices=("sample", "window", "trajectory"), default="sample",
                       help="privacy unit: one time step, --window steps, or a household's "
                            "whole record (default: sample)")
    sweep.add_argument("--window", type=count, help="time steps per window (only with --unit "
                                                    "window)")
    sweep.add_argument("--delta", type=positive, default=_DELTA,
                       help=f"delta of the Gaussian and SaS releases (SaS: calibrated on the "
                            f"l2-sensitivity through the vector-SaS GDP bound), needs gaussian "
                            f"or sas among --mechanisms (default: {_DELTA:g})")
    sweep.add_argument("--repeats", type=count, default=3,
                       help="repetitions per cell: new fleet, data and noise (default: 3)")
    sweep.add_argument("--chunk", type=count, default=500,
                       help="households simulated at a time: bounds the memory (default: 500)")
    sweep.add_argument("--profiles", choices=("auto", "packages", "extract"), default="auto",
                       help="load/weather data: SimBench+DWD packages or the shipped extract "
                            "(default: auto)")
    sweep.add_argument("--seed", type=_bounded(int, 0), default=0,
                       help="root seed; task i uses SeedSequence(seed, spawn_key=(i,)) "
                            "(default: 0)")
    engine = sweep.add_argument_group("engine (at most one of these)")
    engine.add_argument("--workers", type=count,
                        help=f"worker processes of a local Dask cluster (default: "
                             f"{DEFAULT_WORKERS})")
    engine.add_argument("--scheduler", metavar="ADDR",
                        help="address of an existing Dask scheduler, e.g. tcp://host:8786 "
                             "(its workers must import this package)")
    engine.add_argument("--serial", action="store_true",
                        help="run the tasks one after the other in this process")
    sweep.add_argument("--no-progress", action="store_true",
                       help="hide the progress bar (shown only on a terminal anyway)")
    sweep.add_argument("--out", default="out/smartgrid_sweep",
                       help="output folder (default: out/smartgrid_sweep)")
    sweep.set_defaults(handler=run_sweep_action)
    return sweep


def _engine(args: argparse.Namespace) -> dict[str, Any]:
    from _toolbox.errors import ParameterError

    chosen = [flag for flag, given in (("--workers", args.workers is not None),
                                       ("--scheduler", args.scheduler is not None),
                                       ("--serial", args.serial)) if given]
    if len(chosen) > 1:
        raise ParameterError(f"give at most one of --workers, --scheduler, --serial; got "
                             f"{' and '.join(chosen)} (--workers sizes a local cluster, "
                             f"--scheduler uses an existing one)")
    if args.serial:
        return {"engine": "serial"}
    if args.scheduler is not None:
        if not args.scheduler.strip():
            raise ParameterError("--scheduler needs an address such as tcp://host:8786")
        return {"engine": "dask", "scheduler": args.scheduler}
    return {"engine": "dask", "n_workers": args.workers or DEFAULT_WORKERS}


def run_sweep_action(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc smartgrid sweep``: validate, run, write CSV/JSON/PNG, print."""
    from simulations.cli.atomic import staged_folder
    from simulations.cli.common import (
        option_values,
        output_path,
        refuse_unused,
        show_progress,
        write_table,
    )
    from simulations.smartgrid.study_sweep import (
        fleet_identification_task,
        plot_study,
        study_grid,
        summarize_study,
    )
    from simulations.smartgrid.sweep import run_sweep

    out = output_path(args.out, folder=True)
    engine = _engine(args)
    # delta acts on the Gaussian and the SaS releases (Laplace is pure DP)
    refuse_unused(args, {"delta": (_DELTA, bool({"gaussian", "sas"} & set(args.mechanisms)),
                                   "gaussian or sas among --mechanisms")})
    configs = study_grid(
        epsilons=args.epsilons, households=args.households, delays=args.delays,
        mechanisms=args.mechanisms, alphas=args.alphas, repeats=args.repeats,
        delay_spread=args.delay_spread, days=args.days, start_day=args.start_day,
        excitation=args.excitation, unit=args.unit, window=args.window, delta=args.delta,
        chunk=args.chunk, profiles=args.profiles)
    where = engine.get("scheduler") or engine["engine"]
    if "n_workers" in engine:
        where += f" with {engine['n_workers']} local workers"
    print(f"smartgrid sweep: {len(configs)} tasks on {where}", file=sys.stderr)
    result = run_sweep(fleet_identification_task, configs, seed=args.seed,
                       progress=show_progress() and not args.no_progress, **engine)
    summary = summarize_study(result.rows)
    settings = option_values(args)
    table = _table(summary)
    with staged_folder(out) as stage:
        result.to_csv(stage / "sweep.csv")
        (stage / "sweep.json").write_text(json.dumps(
            _strict({"settings": settings, "engine": result.engine, "rows": list(result.rows),
                     "summary": summary}), indent=1, allow_nan=False))
        plot_study(summary, stage / "sweep.png")
        write_table(stage / "sweep.md", table, title="dmdidc smartgrid sweep")
    print(table)
    print(f"wrote {', '.join(str(out / name) for name in FILES)}")
    return 0


def _strict(value: Any) -> Any:
    """Plain JSON: non-finite numbers (a failed fit, no interval) become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def _table(summary: list[dict[str, Any]]) -> str:
    """The console table; an error quantile that is a failed fit reads ``failed``, a missing
    number ``n/a``, and the legend under the table says which is which."""
    from simulations.cli.common import known

    lines = [f"{'mechanism':<14} {'N':>6} {'delay':>5} {'eps':>6} | {'|err| med':>9} "
             f"{'q10':>8} {'q90':>8} {'failed':>6} {'plain':>8} {'cover':>5} "
             f"{'eps_hh':>7} {'time s':>7}"]
    missing = failed = False
    for e in summary:
        name = f"sas {e['alpha']:g}" if e["mechanism"] == "sas" else e["mechanism"]
        # a failed fit counts as an infinite error: a quantile that lands on one is a failure,
        # not a number missing
        cells = ["failed" if e[key] == math.inf else known(e[key], pattern.format, "")
                 for key, pattern in (("abs_error_median_T", "{:>9.3g}"),
                                      ("abs_error_q10_T", "{:>8.3g}"),
                                      ("abs_error_q90_T", "{:>8.3g}"))]
        failed |= "failed" in cells
        plain = known(e["plain_abs_error_median_T"], "{:>8.3g}".format, "")
        cover = known(e["coverage"], "{:>5.2f}".format, "")
        epsilon = known(e["epsilon_household_max"], "{:>7.4g}".format, "")
        missing |= "n/a" in "".join([*cells, plain, cover, epsilon])
        lines.append(
            f"{name:<14} {e['households']:>6} {e['delay_T']:>5g} {e['epsilon']:>6g} | "
            f"{cells[0]:>9} {cells[1]:>8} {cells[2]:>8} {e['failed']:>3}/{e['repeats']:<2} "
            f"{plain:>8} {cover:>5} {epsilon:>7} {e['time_median_s']:>7.2f}")
    if failed:
        lines.append("failed: that quantile of |err| is a failed fit (a failure counts as an "
                     "infinite error; how many: 'failed')")
    if missing:
        lines.append("n/a: no repeat of that row gave the number (every fit failed: see "
                     "'failed'; or no fit gave an interval to cover the delay)")
    return "\n".join(lines)
