"""Sweep engine: Dask LocalCluster vs serial give identical tables; seeds per task."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from privacy.errors import ParameterError
from simulations.smartgrid import parameter_grid, run_sweep, task_rng


def noisy_mean(config, rng):
    """A small task with randomness: the mean of noisy draws."""
    draws = config["loc"] + config["scale"] * rng.standard_normal(1000)
    return {"mean": float(draws.mean()), "first": float(draws[0])}


def failing(config, rng):
    if config["x"] == 2:
        raise ValueError("bad x")
    return {"y": config["x"]}


def test_dask_local_cluster_equals_serial():
    configs = parameter_grid(loc=[0.0, 1.0, 2.0], scale=[0.5, 1.5])
    serial = run_sweep(noisy_mean, configs, seed=11, engine="serial", progress=False)
    parallel = run_sweep(noisy_mean, configs, seed=11, n_workers=2, processes=False,
                         progress=False)
    assert parallel.rows == serial.rows
    assert serial.engine == "serial" and parallel.engine != "serial"
    assert [row["task"] for row in serial.rows] == list(range(6))
    # Each task's randomness is its own child seed: independent of the other tasks.
    expected = 1.0 + 1.5 * task_rng(11, 3).standard_normal(1000)
    assert serial.rows[3]["first"] == pytest.approx(expected[0])
    assert len({row["first"] for row in serial.rows}) == 6
    other_seed = run_sweep(noisy_mean, configs, seed=12, engine="serial", progress=False)
    assert other_seed.rows != serial.rows


def test_existing_client_is_used_and_kept_open():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        result = run_sweep(noisy_mean, [{"loc": 0.0, "scale": 1.0}], client=client,
                           progress=False)
        assert result.engine == client.scheduler.address
        assert client.status == "running"


def test_grid_table_and_errors(tmp_path):
    assert parameter_grid(a=[1, 2], b=["x"]) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    result = run_sweep(failing, parameter_grid(x=[0, 1]), engine="serial", progress=False)
    path = result.to_csv(tmp_path / "out" / "sweep.csv")
    with path.open() as handle:
        assert list(csv.DictReader(handle)) == [{"task": "0", "x": "0", "y": "0"},
                                                {"task": "1", "x": "1", "y": "1"}]
    assert result.column("y") == [0, 1]
    with pytest.raises(ValueError, match="bad x"):
        run_sweep(failing, parameter_grid(x=[1, 2]), engine="serial", progress=False)
    with pytest.raises(ParameterError, match="non-empty list"):
        parameter_grid(a=[])
    with pytest.raises(ParameterError, match="at least one configuration"):
        run_sweep(failing, [], engine="serial")
    with pytest.raises(ParameterError, match="engine must be"):
        run_sweep(failing, [{"x": 0}], engine="ray")
    with pytest.raises(ParameterError, match="not both"):
        run_sweep(failing, [{"x": 0}], scheduler="tcp://x:1", client=object())
    with pytest.raises(ParameterError, match="clash"):
        run_sweep(lambda c, r: {"x": 1}, [{"x": 0}], engine="serial", progress=False)
    with pytest.raises(ParameterError, match="no column"):
        result.column("z")
    assert np.isfinite(task_rng(0, 0).normal())
