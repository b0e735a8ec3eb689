"""Property tests: DMDidc recovers random controllable delayed plants exactly (noise-free), and
never reads a delay too short from noisy data.

Plants: n <= 8 states, m <= 3 inputs; A_c = V J V^{-1} with J block diagonal (real modes and
rotations), eigenvalues lambda with Re(lambda) T in [-1, 0.1] (noisy data: [-1, -0.05], so that
experiments from rest stay bounded) and |Im(lambda)| T <= 1.5 (well below Nyquist, pi);
V = Q1 diag(s) Q2 with s in [1, 3] (well conditioned).  Delays per channel r_j = (w_j + p_j) T
< R T with p_j = 0 or p_j in [0.02, 0.98].
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dmdidc import (
    DelayedPlant,
    DMDidc,
    InsufficientExcitationError,
    random_excitation,
    samples_needed,
)
from simulations.studies.data_kinds import random_state_matrix


@st.composite
def delayed_plants(draw, stable=False):
    n = draw(st.integers(1, 8))
    m = draw(st.integers(1, 3))
    R = draw(st.integers(1, 4))
    dt = draw(st.floats(0.1, 1.0))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    A_c = random_state_matrix(rng, n, dt, real_parts=(-1.0, -0.05 if stable else 0.1))
    B_c = rng.standard_normal((n, m))
    common = draw(st.booleans())
    channels = 1 if common else m
    whole = [draw(st.integers(0, R - 1)) for _ in range(channels)]
    fraction = [draw(st.one_of(st.just(0.0), st.floats(0.02, 0.98))) for _ in range(channels)]
    delay = (np.array(whole) + np.array(fraction)) * dt
    delay = np.full(m, delay[0]) if common else delay
    return A_c, B_c, delay, dt, R, seed


def controllable(A, B):
    n = A.shape[0]
    blocks, current = [], B
    for _ in range(n):
        blocks.append(current / np.linalg.norm(current))
        current = A @ current
    singular = np.linalg.svd(np.concatenate(blocks, axis=1), compute_uv=False)
    return singular[-1] > 1e-6 * singular[0]


def rel_err(estimate, truth):
    return float(np.max(np.abs(estimate - truth)) / np.max(np.abs(truth)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(delayed_plants())
def test_random_plants_recovered(case):
    A_c, B_c, delay, dt, R, seed = case
    true = DelayedPlant.from_continuous(A_c, B_c, delay=delay, dt=dt, max_delay=R)
    assume(controllable(true.A_d, true.B_d))
    n, m = B_c.shape
    p = samples_needed(n, m, R)
    U = random_excitation(m, R + 4 * p, rng=seed)
    X = true.simulate(np.zeros(n), U)
    est = DMDidc(max_delay=R).fit(X, U, dt=dt)
    assert np.all(np.abs(est.delay - delay) <= 1e-6 * dt), (est.delay, delay)
    np.testing.assert_array_equal(est.delay_steps, true.delay_steps)
    assert rel_err(est.A_c, A_c) < 1e-6
    assert rel_err(est.B_c, B_c) < 1e-6
    assert rel_err(est.B_blocks, true.B_blocks) < 1e-8


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(delayed_plants())
def test_exactly_enough_samples_suffice_and_one_fewer_does_not(case):
    A_c, B_c, delay, dt, R, seed = case
    true = DelayedPlant.from_continuous(A_c, B_c, delay=delay, dt=dt, max_delay=R)
    assume(controllable(true.A_d, true.B_d))
    n, m = B_c.shape
    K = R + samples_needed(n, m, R)                 # K = R + n + m (R + 1) inputs
    U = random_excitation(m, K, rng=seed)
    x0 = np.random.default_rng(seed + 1).standard_normal(n)
    X = true.simulate(x0, U)
    est = DMDidc(max_delay=R, estimator="ls", method="qr").fit(X, U, dt=dt)
    assert est.regression_.n_samples == n + m * (R + 1) == est.regression_.rank
    # A square, generically invertible system: the fit interpolates the exact blocks.  Its
    # accuracy is cond * eps (cond of the square data matrix, random): allow 1e-12 * cond.
    cond = est.regression_.condition_number
    assert rel_err(est.B_blocks, true.B_blocks) < max(1e-6, 1e-12 * cond)
    with pytest.raises(InsufficientExcitationError, match="at least"):
        DMDidc(max_delay=R).fit(X[:, :-1], U[:, :-1], dt=dt)


def noisy_experiments(true, seed, noise):
    """10 experiments of 30 p samples from rest, measurement noise ``noise`` x each state's rms."""
    n, m, R = true.n_states, true.n_inputs, true.max_delay
    rng = np.random.default_rng(seed)
    length = R + 30 * samples_needed(n, m, R)
    Us = [rng.standard_normal((m, length)) for _ in range(10)]
    Xs = [true.simulate(np.zeros(n), U) for U in Us]
    rms = np.sqrt(np.mean(np.concatenate(Xs, axis=1) ** 2, axis=1))[:, None]
    return [X + noise * rms * rng.standard_normal(X.shape) for X in Xs], Us


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(delayed_plants(stable=True), st.sampled_from([1e-3, 1e-2, 1e-1]))
def test_noisy_random_plants_never_get_a_delay_too_short(case, noise):
    # Under measurement noise the blocks before a delay stay unbiased (their inputs are
    # independent of the regressor x_k), so the test keeps its level: no block before the delay
    # is declared active (family-wise level 1e-3; derandomized: a fixed set of 40 cases).
    # The delay itself is not asserted here: on random plants whose states are nearly collinear
    # with the lagged inputs (fast modes, one input) the least-squares bias from noisy states
    # (errors in variables) moves the fraction by up to ~0.07 T at 1 % noise and can push a
    # fast eigenvalue of A_d below zero; the README plant is tested in test_estimator.py.
    A_c, B_c, delay, dt, R, seed = case
    true = DelayedPlant.from_continuous(A_c, B_c, delay=delay, dt=dt, max_delay=R)
    assume(controllable(true.A_d, true.B_d))
    Xs, Us = noisy_experiments(true, seed, noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=R).fit(Xs, Us, dt=dt)
    first = est.block_test_.first_active
    assert np.all((first >= true.delay_steps) | (first < 0)), (first, true.delay_steps)
