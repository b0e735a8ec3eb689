"""Tests of the noise defence on echo-state-network statistics and its accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special

from privacy import ParameterError
from privacy.federated.esn_attack import EchoStateReservoir, seed_input, strongest_attack
from privacy.federated.esn_defence import (
    clip_input,
    defence_privacy,
    noise_for_snr,
    privatize_statistics,
    state_bounds,
    statistics_sensitivity,
)


def gaussian_epsilon_reference(sigma: float, shift: float, delta: float) -> float:
    """Exact epsilon of one Gaussian release (Balle & Wang's curve with both terms kept in logs;
    ``GaussianMechanism.epsilon_for_delta`` drops the second term above epsilon = 700)."""
    a = shift / (2 * sigma)

    def excess(eps):
        b = eps * sigma / shift
        return special.ndtr(a - b) - math.exp(eps + special.log_ndtr(-a - b)) - delta

    high = 1.0
    while excess(high) > 0:
        high *= 2
    return optimize.brentq(excess, 0.0, high, xtol=1e-12, rtol=1e-14)


def _largest_change(res, steps, bound, unit, rng, starts=25):
    """Brute force: multi-start maximisation of ||q(u) - q(u')|| over admissible neighbours."""
    def q(u):
        return res.statistics(u).released_vector()

    best = 0.0
    for k in range(starts):
        if unit == "sequence":
            def f(z):
                return -np.linalg.norm(q(z[:steps]) - q(z[steps:]))
            size = 2 * steps
        else:
            s = k % steps

            def f(z, s=s):
                other = z[:steps].copy()
                other[s] = z[steps]
                return -np.linalg.norm(q(z[:steps]) - q(other))
            size = steps + 1
        found = optimize.minimize(f, rng.uniform(-bound, bound, size), method="L-BFGS-B",
                                  bounds=[(-bound, bound)] * size)
        best = max(best, -found.fun)
    return best


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("unit", ["sequence", "step"])
def test_sensitivity_bounds_brute_force_maximum(seed, unit):
    res = EchoStateReservoir.random(4, density=0.5, rng=seed)
    bound = statistics_sensitivity(res, steps=4, input_bound=1.0, unit=unit)
    found = _largest_change(res, 4, 1.0, unit, np.random.default_rng(seed))
    assert found <= bound
    assert found >= 0.4 * bound          # measured 0.53-0.68: the bound is not vacuous


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), bound=st.floats(0.1, 10.0))
def test_state_bounds_hold_for_admissible_inputs(seed, bound):
    rng = np.random.default_rng(seed)
    res = EchoStateReservoir.random(8, density=0.4, rng=rng)
    b, _ = state_bounds(res, steps=7, input_bound=bound)
    for _ in range(5):
        u = rng.choice([-bound, bound], 7) * rng.uniform(0.5, 1.0, 7)
        states, _ = res.run(u)
        assert np.all(np.abs(states[:, 1:7]).T <= b + 1e-15)
    assert np.all(b <= 1.0)


def test_epsilon_matches_the_exact_gaussian_curve_and_composes():
    res = EchoStateReservoir.random(10, rng=0)
    for sigma, observations in [(0.5, 1), (50.0, 1), (400.0, 1), (400.0, 9)]:
        out = defence_privacy(res, sigma, steps=6, input_bound=2.0, observations=observations)
        exact = gaussian_epsilon_reference(sigma / math.sqrt(observations), out.diameter, 1e-5)
        assert exact <= out.epsilon <= exact * 1.001 + 1e-3
    assert out.unit == "sequence"


def test_noise_has_the_requested_snr_and_averages_observations():
    res = EchoStateReservoir.random(30, rng=1)
    clean = res.statistics(seed_input(10))
    sigma = noise_for_snr(clean, 0.25)
    v = clean.released_vector()
    assert np.mean(v ** 2) / sigma ** 2 == pytest.approx(0.25)
    noisy = privatize_statistics(clean, sigma, observations=4, rng=0)
    np.testing.assert_array_equal(noisy.B, noisy.B.T)
    residual = noisy.released_vector() - v
    assert np.std(residual) == pytest.approx(sigma / 2, rel=0.05)      # 528 draws


def test_seed_defence_defeats_the_attack_but_gives_no_meaningful_epsilon():
    res = EchoStateReservoir.random(30, rng=2)
    u = seed_input(10)
    clean = res.statistics(u)
    sigma = noise_for_snr(clean, 0.25)
    errors = [np.linalg.norm(strongest_attack(res, privatize_statistics(clean, sigma, rng=k),
                                              steps=10, restarts=0, iterations=100, rng=k) - u)
              / np.linalg.norm(u) for k in range(2)]
    assert min(errors) > 0.2
    assert defence_privacy(res, sigma, steps=10, input_bound=5.0).epsilon > 100


def test_clip_and_argument_errors():
    np.testing.assert_array_equal(clip_input(np.array([-3.0, 0.5, 9.0]), 2.0), [-2.0, 0.5, 2.0])
    res = EchoStateReservoir.random(4, rng=0)
    with pytest.raises(ParameterError, match="unit"):
        statistics_sensitivity(res, steps=4, input_bound=1.0, unit="record")
    with pytest.raises(ParameterError, match="input_bound"):
        statistics_sensitivity(res, steps=4, input_bound=0.0)
    with pytest.raises(ParameterError, match="sigma"):
        privatize_statistics(res.statistics(seed_input(4)), -1.0)
