"""Occupancy, base load and internal gains: ground truth and what it drives."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.errors import DimensionError, ParameterError
from simulations.smartgrid import base_load, internal_gains, simulate_occupancy
from simulations.smartgrid.occupancy import Occupancy


def test_daily_labels_follow_the_steps():
    occ = simulate_occupancy(60, first_weekday=4, dt_s=300.0, rng=1)
    home = (occ.people_home > 0).reshape(60, 288)
    np.testing.assert_allclose(occ.home_fraction, home.mean(axis=1))
    np.testing.assert_array_equal(occ.occupied_day, home.mean(axis=1) >= 0.25)
    assert set(np.unique(occ.people_home)) <= {0, occ.occupants}


def test_fleet_has_days_away_and_both_behaviour_types():
    runs = [simulate_occupancy(90, first_weekday=0, rng=seed) for seed in range(30)]
    away = np.mean([1 - r.occupied_day.mean() for r in runs])
    assert 0.08 < away < 0.4
    assert {r.kind for r in runs} == {"commuter", "home"}
    commuters = [r for r in runs if r.kind == "commuter"]
    # Commuters are out at noon on most working days that they are not away entirely.
    noon = np.array([(r.people_home.reshape(90, 288)[:, 144] == 0) for r in commuters])
    weekdays = (np.arange(90) % 7) < 5
    assert noon[:, weekdays].mean() > 0.8


def test_same_seed_same_occupancy_and_errors():
    a = simulate_occupancy(10, first_weekday=2, rng=5)
    b = simulate_occupancy(10, first_weekday=2, rng=5)
    np.testing.assert_array_equal(a.people_home, b.people_home)
    with pytest.raises(ParameterError, match="first_weekday must be 0..6"):
        simulate_occupancy(10, first_weekday=7)
    with pytest.raises(ParameterError, match="divide one day"):
        simulate_occupancy(10, first_weekday=0, dt_s=7.0)
    with pytest.raises(ParameterError, match="days must be an integer >= 1"):
        simulate_occupancy(0, first_weekday=0)


def test_base_load_follows_occupancy_and_has_realistic_energy():
    energies = []
    for seed in range(40):
        occ = simulate_occupancy(28, first_weekday=0, dt_s=900.0, rng=seed)
        shape = 0.3 + 0.7 * np.sin(np.linspace(0, 28 * np.pi, occ.people_home.size)) ** 2
        load = base_load(occ, shape, rng=seed)
        empty = occ.people_home == 0
        # Nobody home: standby (40-100 W), plus appliances that were started before leaving.
        standby = load[empty].min()
        assert 0.04 <= standby <= 0.1 and np.mean(np.isclose(load[empty], standby)) > 0.8
        assert load[~empty].mean() > load[empty].mean()
        energies.append(load.mean() * 8760)
    assert 1200 < np.median(energies) < 4000


def test_internal_gains_formula_and_shape_check():
    occ = Occupancy(np.array([0, 2, 2, 0]), 2, "home", 4)
    np.testing.assert_allclose(internal_gains(occ, np.array([0.1, 0.5, 1.0, 0.1])),
                               [0.08, 0.16 + 0.4, 0.16 + 0.8, 0.08])
    with pytest.raises(DimensionError, match="shape_kw has 3 steps; expected 4"):
        base_load(occ, np.ones(3))
