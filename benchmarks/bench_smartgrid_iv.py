"""The IV estimator on smart-grid household data (issue 8, item 7; no pipeline wiring).

Fleet: ``draw_households(20, rng=0)``, operated with ``simulate_fleet`` (real weather and
profiles, PI thermostats, the aggregator's random excitation, 0.1 K / 0.2 K sensor noise),
``--days`` days from ``--start-day``.  Each household is identified from its own data, one
trajectory per day, every day centred (``detrend="constant"``: an intercept per day), by

* ``DMDidc(max_delay=3, detrend="constant")`` (least squares, the default block test);
* ``DMDidc(max_delay=3, estimator="iv", instruments="exogenous", detrend="constant")`` with the
  excitation ``record.excitation_kw`` as instrument signal (the commands are computed by the
  thermostat from noisy temperatures, so they are endogenous), with the default number of
  extra lags and with ``--lags``.

Reported over households: median and 90th percentile of ``|r_hat - r| / T``, households within
0.05 T and 0.1 T, whole delay right, and the delay interval's coverage of the truth.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_smartgrid_iv.py
          [--days 120 --start-day 305 --excitation 0.5 --lags 33]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from _toolbox.errors import ToolboxError
from dmdidc import DMDidc
from simulations.smartgrid import draw_households, load_profiles, simulate_fleet


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--households", type=int, default=20)
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--start-day", type=int, default=305)
    parser.add_argument("--excitation", type=float, default=0.5)
    parser.add_argument("--lags", type=int, default=33)
    args = parser.parse_args()
    fleet = draw_households(args.households, dt_s=300.0, rng=0)
    record = simulate_fleet(fleet, load_profiles(), start_day=args.start_day, days=args.days,
                            excitation=args.excitation, rng=1)
    T = record.dt_s
    span = record.steps_per_day
    variants = {
        "ls": lambda: DMDidc(max_delay=3, detrend="constant"),
        "iv (default lags)": lambda: DMDidc(max_delay=3, estimator="iv",
                                            instruments="exogenous", detrend="constant"),
        f"iv (L = {args.lags})": lambda: DMDidc(max_delay=3, estimator="iv",
                                                instruments="exogenous",
                                                instrument_lags=args.lags, detrend="constant"),
    }
    print(f"{args.households} households, {args.days} days from day {args.start_day}, "
          f"excitation {args.excitation}, T = {T:.0f} s")
    for name, make in variants.items():
        errors, right, covered = [], [], []
        for i, house in enumerate(fleet):
            X_list, U_list = record.trajectories(i)
            E_list = [record.excitation_kw[i][:, d * span:d * span + U.shape[1]]
                      for d, U in enumerate(U_list)]
            true = house.plant
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    est = make()
                    est.fit(X_list, U_list, dt=T, **({"Z": E_list} if "iv" in name else {}))
                    delay = float(est.delay[0])
                    interval = est.delay_ci(0.95)
                    covered.append(bool(interval.low[0] <= true.delay[0] <= interval.high[0]))
                except ToolboxError:
                    delay = np.nan
            errors.append(abs(delay - float(true.delay[0])) / T)
            right.append(bool(np.isfinite(delay)) and int(est.delay_steps[0])
                         == int(true.delay_steps[0]))
        errors = np.array(errors)
        finite = errors[np.isfinite(errors)]
        print(f"{name:<18}: median |r_hat - r| = {np.median(finite):.3f} T, 90th pct. "
              f"{np.percentile(finite, 90):.3f} T, within 0.05 T: {np.sum(finite < 0.05)}, "
              f"within 0.1 T: {np.sum(finite < 0.1)}, right whole delay {sum(right)}/"
              f"{len(right)}, 95 % interval covers r: {sum(covered)}/{len(covered)}, "
              f"failed {np.sum(~np.isfinite(errors))}", flush=True)


if __name__ == "__main__":
    main()
