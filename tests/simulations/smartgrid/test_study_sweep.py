"""The fleet privacy-utility sweep: batched statistics, one cell, Dask = serial, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privacy.errors import ParameterError
from simulations.smartgrid import draw_households, load_profiles, run_sweep, simulate_fleet
from simulations.smartgrid.private_identification import SharingBounds, household_statistics
from simulations.smartgrid.study_sweep import (
    fleet_identification_task,
    fleet_statistics,
    max_delay_for,
    study_grid,
    summarize_study,
)

TIMING = ("time_simulate_s", "time_statistics_s", "time_privatize_s", "time_aggregate_s",
          "time_identify_s", "time_total_s", "time_cpu_s")


def _without_timing(rows):
    """Rows without the clock columns, NaN as a string (NaN != NaN)."""
    return [{k: "nan" if isinstance(v, float) and math.isnan(v) else v
             for k, v in row.items() if k not in TIMING} for row in rows]


def test_batched_statistics_equal_the_per_household_ones():
    # tight clip bounds and large noise so that clipping happens and is counted
    record = simulate_fleet(draw_households(5, delay_periods=(2.1, 2.9), rng=3),
                            load_profiles("extract"), start_day=30, days=3, excitation=0.4,
                            excitation_signal="uniform", noise_K=(0.6, 0.6), rng=4)
    bounds = SharingBounds(state_bounds_K=(0.5, 3.0), excitation=0.3)
    batched = fleet_statistics(record, max_delay=4, bounds=bounds)
    assert len(batched) == 5
    for i, stats in enumerate(batched):
        one = household_statistics(record, i, max_delay=4, bounds=bounds)
        np.testing.assert_allclose(stats.gram, one.gram, rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(stats.sums, one.sums, rtol=1e-12, atol=1e-10)
        assert stats.clipped == one.clipped > 0
        # per channel, as the clipping check reads them
        assert (stats.clipping.channel_clipped, stats.clipping.channel_values) == (
            one.clipping.channel_clipped, one.clipping.channel_values)
        for got, expected in zip(stats.clipping.channel_peak, one.clipping.channel_peak,
                                 strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        assert (stats.n_samples, stats.n_trajectories, stats.layout, stats.scale.tolist()) == \
            (one.n_samples, one.n_trajectories, one.layout, one.scale.tolist())
    assert not np.allclose(batched[1].gram, batched[2].gram)      # households differ


def test_cell_privacy_accounting_and_error_columns():
    config = study_grid(epsilons=[2.0], households=[5], mechanisms=["laplace"], days=2,
                        chunk=2, profiles="extract", delays=[2.5], delay_spread=0.3)[0]
    row = fleet_identification_task(config, np.random.default_rng(1))
    assert row["households_simulated"] == 5                  # three chunks: 2 + 2 + 1
    assert row["max_delay"] == max_delay_for(2.5, 0.3) == 4
    assert 2.2 <= row["delay_true_T"] <= 2.8
    # pure DP, accountant's answer within the budget (Laplace: exactly the budget)
    assert row["epsilon_household"] == pytest.approx(2.0) and row["delta_household"] == 0.0
    assert row["accountant"] == "pure-dp"
    for name, value in (("delay_error_T", "delay_identified_T"), ("plain_error_T",
                                                                  "delay_plain_T")):
        if math.isfinite(row[value]):
            assert row[name] == pytest.approx(row[value] - row["delay_true_T"])
    assert row["time_total_s"] >= row["time_simulate_s"] + row["time_privatize_s"]
    again = fleet_identification_task(config, np.random.default_rng(1))
    assert _without_timing([again]) == _without_timing([row])


def test_negligible_noise_gives_the_plain_fit_and_a_covering_interval():
    # with a huge budget the private fit is the plain one; 30 households x 5 winter days
    config = study_grid(epsilons=[1e9], households=[30], mechanisms=["gaussian"], days=5,
                        profiles="extract")[0]
    row = fleet_identification_task(config, np.random.default_rng(0))
    assert abs(row["plain_error_T"]) < 0.05
    assert row["delay_identified_T"] == pytest.approx(row["delay_plain_T"], abs=1e-3)
    assert row["ci_low_T"] < row["delay_identified_T"] < row["ci_high_T"]
    assert row["covered"] == float(row["ci_low_T"] <= row["delay_true_T"] <= row["ci_high_T"])
    # a small budget on the same data: far more noise, the fit breaks down
    small = dict(config, epsilon=0.1)
    noisy = fleet_identification_task(small, np.random.default_rng(0))
    assert noisy["noise_scale"] > 1e5 * row["noise_scale"]
    assert not abs(noisy["delay_error_T"]) < 0.05                # NaN (no fit) or far off


@pytest.mark.slow
def test_dask_local_cluster_with_two_workers_equals_serial():
    configs = study_grid(epsilons=[300.0, 3000.0], households=[8], mechanisms=["gaussian"],
                         days=2, profiles="extract", repeats=2)
    serial = run_sweep(fleet_identification_task, configs, seed=5, engine="serial",
                       progress=False)
    parallel = run_sweep(fleet_identification_task, configs, seed=5, n_workers=2,
                         processes=True, progress=False)
    assert parallel.engine.startswith("tcp://")
    assert _without_timing(parallel.rows) == _without_timing(serial.rows)
    assert len({row["delay_true_T"] for row in serial.rows}) == len(configs)   # own streams
    assert sum(math.isfinite(row["delay_identified_T"]) for row in serial.rows) >= 2


def test_grid_and_summary():
    grid = study_grid(epsilons=[1.0, 3.0], households=[10, 20], mechanisms=["sas", "laplace"],
                      alphas=[1.5, 1.9], repeats=2)
    assert len(grid) == 2 * 2 * 3 * 2                             # eps x N x variants x repeats
    assert {(c["mechanism"], c["alpha"]) for c in grid} == {("sas", 1.5), ("sas", 1.9),
                                                            ("laplace", None)}
    rows = [dict(c, delay_error_T=e, plain_error_T=0.0, covered=math.nan, ci_low_T=math.nan,
                 ci_high_T=math.nan, epsilon_household=c["epsilon"], time_total_s=1.0)
            for c, e in zip(grid, np.linspace(-1, 1, len(grid)), strict=True)]
    summary = summarize_study(rows)
    assert len(summary) == len(grid) // 2
    first = summary[0]
    errors = sorted(abs(r["delay_error_T"]) for r in rows[:2])
    assert (first["abs_error_q10_T"], first["abs_error_q90_T"]) == tuple(errors)
    assert first["failed"] == 0 and math.isnan(first["coverage"])


@pytest.mark.parametrize("kwargs, message", [
    ({"epsilons": [0.0]}, "epsilons"),
    ({"epsilons": []}, "non-empty"),
    ({"households": [0]}, "households"),
    ({"mechanisms": ["exponential"]}, "mechanisms"),
    ({"alphas": [2.0]}, "alpha"),
    ({"alphas": [0.05]}, "below the supported minimum 0.1"),
    ({"alphas": [1.5], "mechanisms": ["gaussian", "laplace"]},
     r"alphas apply to mechanism 'sas' only; got alphas=\[1.5\]"),
    ({"delays": [0.1]}, "delay_spread"),
    ({"dt_s": 400.0}, "divide 900"),
    ({"excitation": 0.0}, "excitation"),
    ({"unit": "window"}, "window"),
    ({"window": 12}, "unit='window'"),
    ({"chunk": 0}, "chunk"),
    ({"start_day": 366}, "start_day"),
    ({"profiles": "web"}, "profiles"),
])
def test_bad_grid_arguments_are_refused(kwargs, message):
    base = {"epsilons": [1.0], "households": [10]}
    with pytest.raises(ParameterError, match=message):
        study_grid(**{**base, **kwargs})
