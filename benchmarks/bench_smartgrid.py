"""Smart-grid foundations: loaders, exact household simulation, LV power flow, Dask sweeps.

Compares, in one run:
* profile loading: the installed SimBench/demandlib packages vs the shipped extract;
* one household-day (288 periods, T = 5 min): exact discretization vs scipy ``solve_ivp``
  (DOP853, restarted at every input switch), with the largest state difference;
* a day of power flows on SimBench 1-LV-rural2 (96 steps of 15 min, 92 heat pumps at 2 kW):
  :meth:`LVGrid.run` (``pandapower.timeseries.run_timeseries`` with ``ConstControl`` profiles)
  vs a plain loop of ``pandapower.runpp`` warm-started from the previous solution;
* a sweep of fleet simulations + identifications: serial vs a Dask ``LocalCluster`` with two
  worker processes (cluster start-up reported separately).

Tiny matrix products are latency-bound: run with ``OPENBLAS_NUM_THREADS=1`` on a busy machine
(with two BLAS threads competing for two loaded cores, a 4x4 ``expm`` took 29 ms instead of
0.07 ms here).

Run:  .venv/bin/python benchmarks/bench_smartgrid.py [--tasks 8] [--skip-grid]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

from simulations.smartgrid import draw_households, load_profiles, run_sweep, simulate_fleet
from simulations.smartgrid.report import identification_study


def bench_loaders() -> None:
    timings = {}
    for source in ("packages", "extract"):
        load_profiles(source)                                   # warm the OS file cache
        begin = time.perf_counter()
        for _ in range(3):
            load_profiles(source)
        timings[source] = (time.perf_counter() - begin) / 3
    print(f"load_profiles: packages {timings['packages']:.3f} s, extract "
          f"{timings['extract']:.3f} s  (extract {timings['packages'] / timings['extract']:.0f}x "
          f"faster)")


def bench_household() -> None:
    house = draw_households(1, rng=0)[0]
    q = house.parameters
    rng = np.random.default_rng(1)
    K = 288
    U = rng.uniform(0, q.heat_pump_max_kw, (1, K))
    D = np.vstack([rng.uniform(-8, 8, K), rng.uniform(0, 0.5, K), rng.uniform(0, 1.2, K)])
    x0 = np.array([21.0, 25.0])
    begin = time.perf_counter()
    X = house.simulate(x0, U, D)
    exact_s = time.perf_counter() - begin
    A_c, b_heat, E_c = q.continuous_matrices()
    r, T = q.delay_s, house.dt_s
    cop = q.cop(D[0])
    begin = time.perf_counter()
    x, states = x0.copy(), [x0]
    for k in range(K):
        shift = r - np.floor(r / T) * T
        for a, b in ((k * T, k * T + shift), (k * T + shift, (k + 1) * T)):
            i = int(np.floor((0.5 * (a + b) - r) / T))
            P = U[0, i] if i >= 0 else 0.0
            forcing = b_heat[:, 0] * cop[k] * P + E_c @ D[:, k]
            x = solve_ivp(lambda t, z, f=forcing: A_c @ z + f, (a, b), x, method="DOP853",
                          rtol=1e-12, atol=1e-12).y[:, -1]
        states.append(x)
    ode_s = time.perf_counter() - begin
    error = np.abs(np.array(states).T - X).max()
    print(f"household day (288 periods): exact {exact_s * 1e3:.2f} ms, solve_ivp "
          f"{ode_s * 1e3:.0f} ms ({ode_s / exact_s:.0f}x), max |difference| {error:.1e} K")


def bench_grid() -> None:
    import pandapower

    from simulations.smartgrid import LVGrid

    begin = time.perf_counter()
    grid = LVGrid.load()
    print(f"LVGrid.load (1-LV-rural2, profiles): {time.perf_counter() - begin:.1f} s")
    K, day = 96, 10
    ours = grid.run(np.full((grid.n_household_loads, K), 2.0), start_day=day, dt_s=900.0)
    # The same day as a plain loop of runpp, warm-started from the previous step.
    net = grid.net
    rated = net.load["p_mw"].copy(), net.load["q_mvar"].copy(), net.sgen["p_mw"].copy()
    index = day * 96 + np.arange(K)
    load_p = grid._load_p[:, index].copy()
    load_q = grid._load_q[:, index].copy()
    load_p[grid.household_loads] += 0.002
    load_q[grid.household_loads] += 0.002 * np.tan(np.arccos(0.97))
    vmin = np.empty(K)
    begin = time.perf_counter()
    for k in range(K):
        net.load["p_mw"], net.load["q_mvar"] = load_p[:, k], load_q[:, k]
        net.sgen["p_mw"] = grid._sgen_p[:, index[k]]
        pandapower.runpp(net, init="results" if k else "auto", check_connectivity=False,
                         numba=False)
        vmin[k] = net.res_bus["vm_pu"].to_numpy()[grid.lv_buses].min()
    loop_ms = (time.perf_counter() - begin) / K * 1e3
    net.load["p_mw"], net.load["q_mvar"], net.sgen["p_mw"] = rated
    print(f"power flow, one day of 96 steps: LVGrid.run (run_timeseries) {ours.ms_per_step:.1f} "
          f"ms/step, runpp loop {loop_ms:.1f} ms/step (ratio {loop_ms / ours.ms_per_step:.2f}); "
          f"max |vmin difference| {np.abs(vmin - ours.voltage_min_pu).max():.1e} pu; day's vmin "
          f"{ours.voltage_min_pu.min():.4f} pu, transformer up to "
          f"{ours.transformer_loading_percent.max():.0f} %")


def fleet_task(config: dict, rng: np.random.Generator) -> dict:
    """One sweep task: simulate a fleet for four weeks and identify each delay."""
    fleet = draw_households(config["households"], rng=rng)
    record = simulate_fleet(fleet, load_profiles("extract"), start_day=0, days=28,
                            excitation=config["excitation"], rng=rng)
    rows = identification_study(record)
    return {"median_error_T": float(np.nanmedian([abs(r["ls_centered_weighted_error_T"])
                                                  for r in rows]))}


def bench_sweep(tasks: int) -> None:
    from distributed import Client, LocalCluster

    configs = [{"households": 10, "excitation": 0.2 + 0.05 * (i % 4)} for i in range(tasks)]
    begin = time.perf_counter()
    serial = run_sweep(fleet_task, configs, engine="serial", progress=False)
    serial_s = time.perf_counter() - begin
    begin = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        startup_s = time.perf_counter() - begin
        begin = time.perf_counter()
        parallel = run_sweep(fleet_task, configs, client=client, progress=False)
        dask_s = time.perf_counter() - begin
    same = parallel.rows == serial.rows
    print(f"sweep of {tasks} fleet tasks: serial {serial_s:.1f} s, Dask LocalCluster(2 "
          f"processes) {dask_s:.1f} s (+{startup_s:.1f} s start-up), speed-up "
          f"{serial_s / dask_s:.2f}x, identical rows: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8, help="tasks in the sweep benchmark")
    parser.add_argument("--skip-grid", action="store_true", help="skip the power flows")
    args = parser.parse_args()
    bench_loaders()
    bench_household()
    if not args.skip_grid:
        bench_grid()
    bench_sweep(args.tasks)


if __name__ == "__main__":
    main()
