"""``dmdidc simulate`` of an output model with output bounds: the true outputs' violation is
reported between samples too, warned about, and the bounds are drawn."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc import DelayedPlant
from tests.simulations.cli.test_simulate_outputs import output_model, run


def fine_outputs(est, X0, U, points=20):
    """The plant's outputs on a grid of ``points`` per period, by an independent
    discretization at the fine period (the inputs held over each period)."""
    plant = est.plant()
    fine = DelayedPlant.from_continuous(plant.A_c, plant.B_c, plant.delay, plant.dt / points)
    states = fine.simulate(X0, np.repeat(U, points, axis=1))
    return (est.C @ states)[0] + est.offset_[0]


@pytest.mark.parametrize("seed", range(6))
def test_violations_between_samples_are_reported_and_warned(tmp_path, capsys, seed):
    est, path = output_model(tmp_path, seed)
    level = est.offset_[0]
    assert run(tmp_path, path, "--controller", "mpc", out="free")[0] == 0
    free = np.genfromtxt(tmp_path / "free" / "trajectory.csv", delimiter=",", names=True)
    y_min = level - max(0.5 * (level - free["y_1"].min()), 0.1)   # halfway to its undershoot
    code, summary = run(tmp_path, path, "--controller", "mpc", f"--y-min={y_min}")
    assert code == 0
    table = np.genfromtxt(tmp_path / "sim" / "trajectory.csv", delimiter=",", names=True)
    n, m = est.plant().n_states, est.plant().n_inputs
    X0 = np.array([table[f"x_{i + 1}"][0] for i in range(n)])
    U = np.array([table[f"u_{j + 1}"][:-1] for j in range(m)])
    between = max(0.0, y_min - fine_outputs(est, X0, U).min())
    at_samples = max(0.0, y_min - table["y_1"].min())
    assert summary["output_bound_violation"] == pytest.approx(between, rel=1e-6, abs=1e-9)
    assert summary["output_bound_violation_at_samples"] == pytest.approx(at_samples, rel=1e-6,
                                                                         abs=1e-9)
    err = capsys.readouterr().err
    assert ("went beyond the output bounds" in err) == (between > 1e-6 * max(1, abs(y_min)))


def test_the_bounds_are_drawn(tmp_path, monkeypatch):
    import simulations.cli.simulate as simulate

    drawn = []
    original = simulate._plot_trajectory

    def spy(*args, **kwargs):
        drawn.append(kwargs.get("bounds"))
        return original(*args, **kwargs)
    monkeypatch.setattr(simulate, "_plot_trajectory", spy)
    est, path = output_model(tmp_path, 0)
    assert run(tmp_path, path, "--controller", "mpc", "--y-min=-5", "--y-max=5")[0] == 0
    assert drawn == [([-5.0], [5.0])]


def test_an_infinite_side_is_no_bound_and_no_line(tmp_path, monkeypatch):
    """--y-min=-inf (accepted since DelayedMPC takes it): the summary stays JSON and its
    violation finite, and the plot draws the finite bound alone."""
    import json

    from matplotlib.axes import Axes

    lines = []
    original = Axes.axhline

    def spy(self, y=0, *args, **kwargs):
        lines.append(y)
        return original(self, y, *args, **kwargs)
    monkeypatch.setattr(Axes, "axhline", spy)
    est, path = output_model(tmp_path, 0)
    code, summary = run(tmp_path, path, "--controller", "mpc", "--y-min=-inf", "--y-max=5")
    assert code == 0
    assert np.isfinite(summary["output_bound_violation"])
    stored = json.loads((tmp_path / "sim" / "summary.json").read_text(),
                        parse_constant=lambda name: pytest.fail(f"summary.json holds {name}"))
    assert stored["y_min"] == ["-inf"] and stored["y_max"] == [5.0]
    assert lines == [5.0]
