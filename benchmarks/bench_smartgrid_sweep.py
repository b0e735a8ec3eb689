"""Run time of the fleet privacy-utility sweep against the number of households, serial vs Dask.

For every N (default 100, 1000, 10000 households, 14 days at T = 5 min) the same two tasks
(Gaussian and Laplace releases at epsilon = 10 per household, one sample) run serially in this
process and on a ``distributed.LocalCluster`` with two single-threaded worker processes
(started once, its start-up timed separately).  Prints wall times, their ratio, the growth
exponent between consecutive N, the median time of every stage per task, the process's peak
RSS, and the two measured wins inside a task: batched statistics (``fleet_statistics``) against
``household_statistics`` per household, and one BLAS thread against the default for drawing
households (tiny matrices).  The load average is printed: the machine is shared.

    python benchmarks/bench_smartgrid_sweep.py [--households 100 1000 10000] [--days 14]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time

import numpy as np


def _load() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())


def _wins(days: int) -> None:
    from threadpoolctl import threadpool_limits

    from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
    from simulations.smartgrid.private_identification import SharingBounds, household_statistics
    from simulations.smartgrid.study_sweep import fleet_statistics

    N = 300
    times = {}
    for label, limit in (("default BLAS threads", None), ("one BLAS thread", 1)):
        with threadpool_limits(limits=limit, user_api="blas"):
            draw_households(5, rng=0)                     # imports and caches out of the timing
            start = time.perf_counter()
            draw_households(N, rng=0)
            times[label] = time.perf_counter() - start
    print(f"draw_households({N}): {times['default BLAS threads']:.3f} s with the default BLAS "
          f"threads, {times['one BLAS thread']:.3f} s with one "
          f"(ratio {times['default BLAS threads'] / times['one BLAS thread']:.1f}x)")
    with threadpool_limits(limits=1, user_api="blas"):
        record = simulate_fleet(draw_households(N, rng=0), load_profiles("extract"),
                                start_day=0, days=days, excitation=0.5,
                                excitation_signal="binary", rng=1)
        bounds = SharingBounds(excitation=0.5)
        start = time.perf_counter()
        one = [household_statistics(record, i, max_delay=3, bounds=bounds) for i in range(N)]
        per_household = time.perf_counter() - start
        start = time.perf_counter()
        batched = fleet_statistics(record, max_delay=3, bounds=bounds)
        together = time.perf_counter() - start
    gap = max(float(np.max(np.abs(a.gram - b.gram))) for a, b in zip(one, batched, strict=True))
    print(f"statistics of {N} households x {days} days: household_statistics {per_household:.3f}"
          f" s, fleet_statistics {together:.3f} s (ratio {per_household / together:.1f}x, "
          f"largest Gram difference {gap:.1e})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--households", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from distributed import Client, LocalCluster

    from simulations.smartgrid import run_sweep
    from simulations.smartgrid.study_sweep import fleet_identification_task, study_grid

    print(f"cpus {os.cpu_count()}, {_load()}")
    _wins(args.days)
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                           dashboard_address=None)
    client = Client(cluster)
    startup = time.perf_counter() - start
    print(f"LocalCluster start-up ({args.workers} worker processes): {startup:.1f} s")
    warm = study_grid(epsilons=[10.0], households=[4], mechanisms=["gaussian", "laplace"],
                      days=1, profiles="extract")
    start = time.perf_counter()
    run_sweep(fleet_identification_task, warm, engine="serial", progress=False)
    run_sweep(fleet_identification_task, warm, client=client, progress=False)
    print(f"warm-up (imports, profiles, calibration cache on both engines): "
          f"{time.perf_counter() - start:.1f} s, not in the table\n")
    header = (f"{'N':>6} | {'serial s':>9} {'dask s':>8} {'serial/dask':>11} | "
              f"{'growth':>6} | {'simulate':>8} {'stats':>7} {'privatize':>9} {'identify':>8}"
              f" {'CPU/wall':>8}"
              f" | {'peak RSS MB':>11} | |delay error| / T | load")
    print(header)
    previous = None
    try:
        for N in sorted(args.households):
            configs = study_grid(epsilons=[10.0], households=[N],
                                 mechanisms=["gaussian", "laplace"], days=args.days,
                                 profiles="extract", chunk=500)
            start = time.perf_counter()
            serial = run_sweep(fleet_identification_task, configs, seed=0, engine="serial",
                               progress=False)
            t_serial = time.perf_counter() - start
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            start = time.perf_counter()
            dask = run_sweep(fleet_identification_task, configs, seed=0, client=client,
                             progress=False)
            t_dask = time.perf_counter() - start
            same = all(a["delay_identified_T"] == b["delay_identified_T"] or
                       (math.isnan(a["delay_identified_T"]) and
                        math.isnan(b["delay_identified_T"]))
                       for a, b in zip(serial.rows, dask.rows, strict=True))
            growth = "" if previous is None else \
                f"{math.log(t_serial / previous[1]) / math.log(N / previous[0]):6.2f}"
            stages = {k: np.median([r[f"time_{k}_s"] for r in serial.rows])
                      for k in ("simulate", "statistics", "privatize", "identify", "total",
                                "cpu")}
            print(f"{N:>6} | {t_serial:9.2f} {t_dask:8.2f} {t_serial / t_dask:11.2f} | "
                  f"{growth:>6} | {stages['simulate']:8.2f} {stages['statistics']:7.2f} "
                  f"{stages['privatize']:9.2f} {stages['identify']:8.3f} "
                  f"{stages['cpu'] / stages['total']:8.2f} | {rss:11.0f} | "
                  + " ".join(f"{r['mechanism']} {abs(r['delay_error_T']):.3g}"
                             for r in serial.rows)
                  + f" | {_load()}{'' if same else '  (TABLES DIFFER)'}")
            previous = (N, t_serial)
    finally:
        client.close()
        cluster.close()
    print("\nserial/dask > 1: Dask faster; growth: exponent of the serial time between "
          "consecutive N (1 = linear); stage times are medians per task (serial), CPU/wall the "
          "task's share of a core (< 1: the cores are shared); peak RSS of this process so "
          "far.")


if __name__ == "__main__":
    main()
