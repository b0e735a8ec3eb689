"""Household model: exact discretization with COP and disturbances vs an independent ODE solve."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from privacy.errors import DimensionError, ParameterError
from simulations.smartgrid import (
    DISTURBANCES,
    Household,
    HouseholdParameters,
    draw_households,
    heat_pump_cop,
    supply_temperature,
)

DT = 300.0


def ode_reference(params: HouseholdParameters, dt, x0, U, D, U_past):
    """Integrate C x' = heat flows with the delayed command, from the physical equations.

    Written from the model equations (not from the household's matrices): the heat pump
    delivers COP(T_o(t)) * P(t - r) into the floor node; disturbances are held per period.
    """
    C_i, C_h = params.C_air_kJ_K, params.C_floor_kJ_K
    R_ih, R_ia = params.R_floor_K_kW, params.R_envelope_K_kW
    A_w, f_s, r = params.window_area_m2, params.solar_floor_fraction, params.delay_s
    K = U.shape[1]
    history = np.concatenate([U_past[0], U[0]])
    R = U_past.shape[1]

    def command(t):
        i = int(np.floor((t - r) / dt + 1e-12))
        return history[R + i] if -R <= i < K else 0.0

    def rhs(t, x, k, P):
        T_i, T_h = x
        T_o, G, gains = D[:, k]
        cop = heat_pump_cop(T_o, supply_temperature(T_o, params.design_supply_c),
                            quality=params.cop_quality)
        dT_i = ((T_h - T_i) / R_ih + (T_o - T_i) / R_ia + (1 - f_s) * A_w * G + gains) / C_i
        dT_h = ((T_i - T_h) / R_ih + f_s * A_w * G + cop * P) / C_h
        return [dT_i, dT_h]

    x = np.asarray(x0, dtype=float)
    out = [x]
    shift = r - np.floor(r / dt) * dt
    for k in range(K):
        cuts = sorted({k * dt, (k + 1) * dt, k * dt + shift})
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if b - a < 1e-9:
                continue
            P = command(0.5 * (a + b))
            sol = solve_ivp(rhs, (a, b), x, args=(k, P), method="DOP853", rtol=1e-12,
                            atol=1e-12)
            assert sol.success
            x = sol.y[:, -1]
        out.append(x)
    return np.array(out).T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_simulation_matches_ode_with_cop_and_disturbances(seed):
    house = draw_households(1, dt_s=DT, rng=seed)[0]
    rng = np.random.default_rng(100 + seed)
    K = 30
    U = rng.uniform(0, house.parameters.heat_pump_max_kw, (1, K))
    D = np.vstack([rng.uniform(-10, 12, K), rng.uniform(0, 0.6, K), rng.uniform(0, 1.5, K)])
    U_past = rng.uniform(0, 2, (1, house.plant.max_delay))
    x0 = np.array([20.5, 26.0])
    X = house.simulate(x0, U, D, U_past=U_past)
    X_ref = ode_reference(house.parameters, DT, x0, U, D, U_past)
    assert np.max(np.abs(X - X_ref)) < 1e-8


def test_delays_are_fractional_and_per_household():
    fleet = draw_households(30, dt_s=DT, rng=3)
    ratio = np.array([h.parameters.delay_s for h in fleet]) / DT
    assert ratio.min() >= 1.3 and ratio.max() <= 1.7 and ratio.std() > 0.05
    for h in fleet:
        assert h.plant.delay_steps[0] == 1
        np.testing.assert_allclose(h.plant.delay[0], h.parameters.delay_s)
        # B^(0) vanishes (whole delay 1), B^(1) and B^(2) carry the fraction (eqs. 9.62-9.63).
        assert np.all(h.plant.B_blocks[0] == 0) and np.all(h.plant.B_blocks[1:] >= 0)


def test_fleet_is_heterogeneous_and_physically_plausible():
    fleet = draw_households(60, rng=4)
    p = [h.parameters for h in fleet]
    conductance = np.array([1 / q.R_envelope_K_kW / q.floor_area_m2 * 1e3 for q in p])
    assert 0.6 - 1e-9 <= conductance.min() and conductance.max() <= 2.5 + 1e-9
    slow = np.array([1 / -np.linalg.eigvals(h.plant.A_c).real.max() / 3600 for h in fleet])
    fast = np.array([1 / -np.linalg.eigvals(h.plant.A_c).real.min() / 60 for h in fleet])
    assert 5 < np.median(slow) < 60          # hours: the building's time constant
    assert 2 < np.median(fast) < 30          # minutes: air against floor
    assert np.all(np.abs(np.linalg.eigvals(np.stack([h.plant.A_d for h in fleet]))) < 1)
    power = np.array([q.heat_pump_max_kw for q in p])
    assert 0.5 < np.percentile(power, 5) and np.percentile(power, 95) < 12


def test_equilibrium_heat_balance():
    """At steady state the heat pump replaces the envelope losses net of the gains."""
    house = draw_households(1, rng=5)[0]
    q = house.parameters
    T_o, G, gains, P = -2.0, 0.1, 0.4, 1.2
    D = np.tile([[T_o], [G], [gains]], (1, 8000))
    X = house.simulate([20.0, 25.0], np.full((1, 8000), P), D,
                       U_past=np.full((1, house.plant.max_delay), P))
    T_i = X[0, -1]
    heat_in = float(q.cop(T_o)) * P + q.window_area_m2 * G + gains
    np.testing.assert_allclose((T_i - T_o) / q.R_envelope_K_kW, heat_in, rtol=1e-6)


def test_cop_follows_staffell_regression_and_heating_curve():
    # 6.81 - 0.121 dT + 0.000630 dT^2, dT clipped to [15, 60]
    assert heat_pump_cop(7.0, 35.0) == pytest.approx(6.81 - 0.121 * 28 + 0.000630 * 28**2)
    assert heat_pump_cop(30.0, 35.0) == pytest.approx(6.81 - 0.121 * 15 + 0.000630 * 225)
    assert heat_pump_cop(-40.0, 35.0, quality=0.9) == pytest.approx(
        0.9 * (6.81 - 0.121 * 60 + 0.000630 * 3600))
    assert supply_temperature(20.0, 35.0) == pytest.approx(25.0)   # floor of the curve
    assert supply_temperature(-12.0, 35.0) == pytest.approx(35.0)
    assert supply_temperature(4.0, 36.0) == pytest.approx(28.0)
    house = draw_households(1, rng=0)[0]
    gains = house.input_gain(np.array([-10.0, house.reference_outdoor_c, 10.0]))
    assert gains[0] < 1.0 == pytest.approx(gains[1]) and gains[2] > 1.0


def test_same_seed_same_fleet_and_bad_input():
    a, b = draw_households(4, rng=7), draw_households(4, rng=7)
    assert [h.parameters for h in a] == [h.parameters for h in b]
    house = a[0]
    with pytest.raises(DimensionError, match="disturbances has shape"):
        house.simulate([20, 25], np.ones((1, 5)), np.ones((2, 5)))
    with pytest.raises(DimensionError, match="expected 1"):
        house.simulate([20, 25], np.ones((2, 5)), np.ones((3, 5)))
    with pytest.raises(ParameterError, match="n must be an integer >= 1"):
        draw_households(0)
    with pytest.raises(ParameterError, match="delay_periods"):
        draw_households(2, delay_periods=(1.7, 1.3))
    with pytest.raises(ParameterError, match="solar_floor_fraction"):
        HouseholdParameters(**{**house.parameters.to_dict(), "solar_floor_fraction": 1.5})
    with pytest.raises(ParameterError, match="C_air_kJ_K must be > 0"):
        HouseholdParameters(**{**house.parameters.to_dict(), "C_air_kJ_K": 0.0})
    with pytest.raises(ParameterError, match="HouseholdParameters"):
        Household.from_parameters({"a": 1}, dt_s=300.0)
    assert len(DISTURBANCES) == house.E_c.shape[1] == 3
