"""Acceptance tests of the plant simulator against an independent ODE integration (solve_ivp)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from dmdidc import DelayedPlant
from dmdidc.errors import LogarithmError
from privacy.errors import DimensionError, NonFiniteError, ParameterError
from simulations.plant import intersample_trajectory, simulate_plant
from tests.seed_example import A_C as SEED_A
from tests.seed_example import B_C as SEED_B
from tests.seed_example import T as SEED_T

RTOL = 1e-8


# ---------------------------------------------------------------------- independent reference
def reference_states(A_c, B_c, delay, dt, x0, U, U_past, times):
    """Integrate x' = A_c x + B_c u(t - r_j) with DOP853, restarting at every input switch.

    ``u_i`` is held over [iT, (i+1)T); channel j sees it on [iT + r_j, (i+1)T + r_j).  Inputs
    ``u_{-R} .. u_{-1}`` come from U_past, earlier ones are zero.
    """
    m = B_c.shape[1]
    delay = np.broadcast_to(np.asarray(delay, dtype=float), (m,))
    K = U.shape[1]
    R = U_past.shape[1]
    horizon = K * dt
    padded = np.concatenate([U_past, U], axis=1)

    def delayed_input(t):
        u = np.zeros(m)
        for j in range(m):
            i = int(np.floor((t - delay[j]) / dt))
            if -R <= i < K:
                u[j] = padded[j, R + i]
        return u

    switches = {0.0, horizon}
    for j in range(m):
        for i in range(-R - 1, K + 1):
            s = i * dt + delay[j]
            if 0.0 < s < horizon:
                switches.add(s)
    switches = sorted(switches)
    times = np.asarray(times, dtype=float)
    out = np.full((A_c.shape[0], times.size), np.nan)
    x = np.asarray(x0, dtype=float)
    for a, b in zip(switches[:-1], switches[1:], strict=True):
        inside = np.flatnonzero((times >= a) & (times <= b))
        if b - a < 1e-13:   # (nearly) coincident switches: the state does not move
            out[:, inside] = x[:, None]
            continue
        u = delayed_input(0.5 * (a + b))
        t_eval = np.unique(np.concatenate([times[inside], [b]]))
        sol = solve_ivp(lambda t, x, u=u: A_c @ x + B_c @ u, (a, b), x, method="DOP853",
                        rtol=1e-12, atol=1e-12, t_eval=t_eval)
        assert sol.success
        for idx in inside:
            out[:, idx] = sol.y[:, np.searchsorted(sol.t, times[idx])]
        x = sol.y[:, -1]
    assert not np.isnan(out).any()
    return out


def relative_error(X, X_ref):
    return np.max(np.abs(X - X_ref)) / max(np.max(np.abs(X_ref)), 1e-300)


def random_plant(rng, n, m, stable):
    A = rng.normal(size=(n, n))
    shift = np.max(np.linalg.eigvals(A).real)
    A = A - (shift + 0.3) * np.eye(n) if stable else A - (shift - 0.4) * np.eye(n)
    return A, rng.normal(size=(n, m))


# (A_c, B_c, delay in seconds, dt)
CASES = {
    "seed r=1T": (SEED_A, SEED_B, 1.0 * SEED_T, SEED_T),
    "seed r=1.25T": (SEED_A, SEED_B, 1.25 * SEED_T, SEED_T),
    "seed r=1.5T": (SEED_A, SEED_B, 1.5 * SEED_T, SEED_T),
    "seed r=0": (SEED_A, SEED_B, 0.0, SEED_T),
    "seed per-channel fractional": (SEED_A, SEED_B, [0.3 * SEED_T, 1.85 * SEED_T], SEED_T),
    "seed per-channel whole": (SEED_A, SEED_B, [0.0, 2.0 * SEED_T], SEED_T),
    "seed whole and fractional": (SEED_A, SEED_B, [1.0 * SEED_T, 0.5 * SEED_T], SEED_T),
    "random stable": (*random_plant(np.random.default_rng(1), 4, 2, True), [0.17, 0.62], 0.25),
    "random unstable": (*random_plant(np.random.default_rng(2), 4, 2, False), [0.5, 0.1], 0.2),
    "random unstable common": (*random_plant(np.random.default_rng(3), 4, 2, False), 0.3, 0.2),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request):
    A_c, B_c, delay, dt = CASES[request.param]
    plant = DelayedPlant.from_continuous(A_c, B_c, delay, dt)
    rng = np.random.default_rng(10 + list(CASES).index(request.param))
    n, m, R = plant.n_states, plant.n_inputs, plant.max_delay
    x0 = rng.normal(size=n)
    U = rng.normal(size=(m, 9))
    U_past = rng.normal(size=(m, R))
    return plant, x0, U, U_past


# ---------------------------------------------------------------------- sampled states
def test_samples_match_ode_integration(case):
    plant, x0, U, U_past = case
    X = simulate_plant(plant, x0, U, U_past=U_past)
    times = np.arange(U.shape[1] + 1) * plant.dt
    X_ref = reference_states(plant.A_c, plant.B_c, plant.delay, plant.dt, x0, U, U_past, times)
    assert X.shape == (plant.n_states, U.shape[1] + 1)
    assert relative_error(X, X_ref) < RTOL


def test_samples_with_zero_history_match_ode_integration(case):
    plant, x0, U, _ = case
    X = simulate_plant(plant, x0, U)
    times = np.arange(U.shape[1] + 1) * plant.dt
    zero = np.zeros((plant.n_inputs, plant.max_delay))
    X_ref = reference_states(plant.A_c, plant.B_c, plant.delay, plant.dt, x0, U, zero, times)
    assert relative_error(X, X_ref) < RTOL


# ---------------------------------------------------------------------- inter-sample states
def test_fine_grid_matches_ode_integration(case):
    plant, x0, U, U_past = case
    P = 8
    t, X_fine = intersample_trajectory(plant, x0, U, U_past=U_past, points_per_step=P)
    K = U.shape[1]
    assert t.shape == (K * P + 1,) and X_fine.shape == (plant.n_states, K * P + 1)
    np.testing.assert_allclose(t, np.linspace(0.0, K * plant.dt, K * P + 1), rtol=0, atol=1e-12)
    X_ref = reference_states(plant.A_c, plant.B_c, plant.delay, plant.dt, x0, U, U_past, t)
    assert relative_error(X_fine, X_ref) < RTOL


def test_arbitrary_instants_including_switches_match_ode_integration(case):
    plant, x0, U, U_past = case
    K, dt = U.shape[1], plant.dt
    rng = np.random.default_rng(7)
    switches = (np.arange(K)[:, None] + plant.delay_fraction[None, :]).ravel() * dt
    times = np.concatenate([rng.uniform(0, K * dt, 25), switches, switches + 1e-9,
                            [0.0, K * dt]])
    t, X_at = intersample_trajectory(plant, x0, U, U_past=U_past, times=times)
    np.testing.assert_array_equal(t, times)
    X_ref = reference_states(plant.A_c, plant.B_c, plant.delay, plant.dt, x0, U, U_past, times)
    assert relative_error(X_at, X_ref) < RTOL


def test_fine_grid_passes_through_samples(case):
    plant, x0, U, U_past = case
    t, X_fine = intersample_trajectory(plant, x0, U, U_past=U_past, points_per_step=5)
    X = simulate_plant(plant, x0, U, U_past=U_past)
    np.testing.assert_array_equal(X_fine[:, ::5], X)
    np.testing.assert_allclose(t[::5], np.arange(U.shape[1] + 1) * plant.dt, rtol=1e-15)


def test_fine_grid_is_continuous_across_samples():
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, 1.25 * SEED_T, SEED_T)
    U = np.random.default_rng(0).normal(size=(2, 6))
    # the end of each period, evaluated from the period's start, equals the next sample
    K, dt = U.shape[1], plant.dt
    ends = (np.arange(K) + 1 - 1e-12) * dt
    _, X_end = intersample_trajectory(plant, [1.0, 0.0], U, times=ends)
    X = simulate_plant(plant, [1.0, 0.0], U)
    np.testing.assert_allclose(X_end, X[:, 1:], rtol=1e-9, atol=1e-9)


def test_single_point_per_step_is_the_sampled_trajectory():
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, 2.5, SEED_T)
    U = np.ones((2, 4))
    t, X_fine = intersample_trajectory(plant, [0.0, 1.0], U, points_per_step=1)
    np.testing.assert_array_equal(X_fine, simulate_plant(plant, [0.0, 1.0], U))
    np.testing.assert_array_equal(t, np.arange(5) * 2.0)


def test_zero_steps():
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, 2.5, SEED_T)
    t, X_fine = intersample_trajectory(plant, [1.0, 2.0], np.zeros((2, 0)))
    np.testing.assert_array_equal(t, [0.0])
    np.testing.assert_array_equal(X_fine, [[1.0], [2.0]])
    X = simulate_plant(plant, [1.0, 2.0], np.zeros((2, 0)))
    np.testing.assert_array_equal(X, [[1.0], [2.0]])


# ---------------------------------------------------------------------- python-control export
@pytest.mark.parametrize("delay", [2.0, 2.5, 3.0, [0.6, 3.7], 0.0])
def test_statespace_forced_response_matches(delay):
    import control
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, delay, SEED_T)
    rng = np.random.default_rng(4)
    x0 = rng.normal(size=2)
    U = rng.normal(size=(2, 12))
    X = simulate_plant(plant, x0, U)
    system = plant.to_statespace()
    z0 = np.concatenate([x0, np.zeros(system.nstates - 2)])
    # forced_response needs the input at the final instant too; it does not affect x_K
    U_ext = np.concatenate([U, np.zeros((2, 1))], axis=1)
    times = np.arange(U.shape[1] + 1) * plant.dt
    response = control.forced_response(system, T=times, U=U_ext, X0=z0)
    np.testing.assert_allclose(response.outputs, X, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------- process noise
def test_explicit_process_noise_enters_at_samples():
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, 2.5, SEED_T)
    rng = np.random.default_rng(5)
    U = rng.normal(size=(2, 7))
    W = rng.normal(size=(2, 7))
    X = simulate_plant(plant, [1.0, 0.0], U, process_noise=W)
    X_clean = simulate_plant(plant, [1.0, 0.0], U)
    expected = X_clean.copy()
    drift = np.zeros(2)
    for k in range(7):
        drift = plant.A_d @ drift + W[:, k]
        expected[:, k + 1] += drift
    np.testing.assert_allclose(X, expected, rtol=1e-13, atol=1e-13)


def test_process_noise_sampler_is_reproducible():
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, 2.5, SEED_T)
    U = np.zeros((2, 10))

    def sampler(rng, shape):
        return rng.standard_normal(shape)

    X1 = simulate_plant(plant, [0.0, 0.0], U, process_noise=sampler, rng=3)
    X2 = simulate_plant(plant, [0.0, 0.0], U, process_noise=sampler,
                        rng=np.random.default_rng(3))
    X3 = simulate_plant(plant, [0.0, 0.0], U, process_noise=sampler, rng=4)
    np.testing.assert_array_equal(X1, X2)
    assert not np.allclose(X1, X3)
    W = np.random.default_rng(3).standard_normal((2, 10))
    np.testing.assert_allclose(X1, simulate_plant(plant, [0.0, 0.0], U, process_noise=W),
                               rtol=1e-14, atol=1e-14)


# ---------------------------------------------------------------------- errors
def test_bad_arguments():
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, 2.5, SEED_T)
    U = np.zeros((2, 4))
    with pytest.raises(DimensionError, match="x0"):
        simulate_plant(plant, [1.0, 2.0, 3.0], U)
    with pytest.raises(DimensionError, match="U has 4 rows"):
        simulate_plant(plant, [1.0, 2.0], np.zeros((4, 2)))
    with pytest.raises(DimensionError, match="U_past"):
        simulate_plant(plant, [1.0, 2.0], U, U_past=np.zeros((2, 5)))
    with pytest.raises(DimensionError, match=r"process_noise has shape \(2, 3\)"):
        simulate_plant(plant, [1.0, 2.0], U, process_noise=np.zeros((2, 3)))
    with pytest.raises(DimensionError, match="sampler returned shape"):
        simulate_plant(plant, [1.0, 2.0], U, process_noise=lambda rng, shape: np.zeros(3))
    with pytest.raises(NonFiniteError, match="process_noise"):
        simulate_plant(plant, [1.0, 2.0], U, process_noise=np.full((2, 4), np.nan))
    with pytest.raises(ParameterError, match="plant"):
        simulate_plant("plant", [1.0, 2.0], U)
    with pytest.raises(ParameterError, match="points_per_step"):
        intersample_trajectory(plant, [1.0, 2.0], U, points_per_step=0)
    with pytest.raises(ParameterError, match="times must lie in"):
        intersample_trajectory(plant, [1.0, 2.0], U, times=[-1.0, 3.0])
    with pytest.raises(ParameterError, match="times must lie in"):
        intersample_trajectory(plant, [1.0, 2.0], U, times=[9.0])
    with pytest.raises(ParameterError, match="points_per_step or times, not both"):
        intersample_trajectory(plant, [1.0, 2.0], U, times=[1.0], points_per_step=7)
    with pytest.raises(ParameterError, match="rng"):
        simulate_plant(plant, [1.0, 2.0], U, process_noise=np.zeros((2, 4)), rng="seed")


def test_intersample_needs_the_continuous_model():
    discrete_only = DelayedPlant(np.eye(2), np.ones((2, 2, 1)), 1.0)
    X = simulate_plant(discrete_only, [1.0, 0.0], np.ones((1, 3)))
    assert X.shape == (2, 4)
    with pytest.raises(LogarithmError, match="inter-sample trajectory needs the continuous"):
        intersample_trajectory(discrete_only, [1.0, 0.0], np.ones((1, 3)))


# ---------------------------------------------------------------------- property-based
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(delays=st.lists(st.floats(0.0, 3.0), min_size=2, max_size=2),
       dt=st.sampled_from([0.5, 1.0, 2.0]), seed=st.integers(0, 2**16),
       snap=st.booleans())
def test_random_delays_match_ode_integration(delays, dt, seed, snap):
    """Any per-channel delays (optionally whole multiples of dt) match solve_ivp at random times."""
    delays = np.round(delays) * dt if snap else np.asarray(delays) * dt
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, delays, dt)
    rng = np.random.default_rng(seed)
    K = 5
    x0 = rng.normal(size=2)
    U = rng.normal(size=(2, K))
    U_past = rng.normal(size=(2, plant.max_delay))
    times = np.sort(np.concatenate([rng.uniform(0.0, K * dt, 12), np.arange(K + 1) * dt]))
    _, X_at = intersample_trajectory(plant, x0, U, U_past=U_past, times=times)
    X_ref = reference_states(SEED_A, SEED_B, delays, dt, x0, U, U_past, times)
    assert relative_error(X_at, X_ref) < RTOL
    X = simulate_plant(plant, x0, U, U_past=U_past)
    samples = reference_states(SEED_A, SEED_B, delays, dt, x0, U, U_past, np.arange(K + 1) * dt)
    assert relative_error(X, samples) < RTOL
