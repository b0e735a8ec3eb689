"""Tests of the federated echo-state-network reconstruction attack (seed Sec. 6.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge

from privacy.errors import DimensionError, NonFiniteError, ParameterError
from privacy.federated.esn_attack import (
    EchoStateReservoir,
    ReservoirStatistics,
    attack_loss,
    attack_loss_and_gradient,
    reconstruct_input,
    reconstruct_input_subspace,
    relative_error,
    seed_input,
    strongest_attack,
)


def _loop_statistics(res: EchoStateReservoir, u: np.ndarray):
    """Eqs. (6.13)-(6.15) written out with an explicit loop (independent of the module)."""
    n, a = res.n_nodes, res.leak
    x = np.zeros(n)
    A = np.zeros(n + 2)
    B = res.ridge * np.eye(n + 2)
    for t in range(u.size - 1):
        x = (1 - a) * x + a * np.tanh(res.W @ x + res.W_in * u[t])
        z = np.concatenate([[1.0, u[t]], x])
        A += u[t + 1] * z
        B += np.outer(z, z)
    return A, B


def test_reservoir_matches_the_seed_setup():
    res = EchoStateReservoir.random(100, rng=3)
    assert np.max(np.abs(np.linalg.eigvals(res.W))) == pytest.approx(0.9, rel=1e-12)
    assert 0.17 < np.mean(res.W != 0) < 0.23                     # 80 % sparse
    u = seed_input(20)
    assert u == pytest.approx(5 * np.sin(np.arange(1, 21) ** 2 / 60))


def test_statistics_match_explicit_sums_and_ridge_regression():
    res = EchoStateReservoir.random(15, ridge=0.3, rng=1)
    u = seed_input(12)
    stats = res.statistics(u)
    A, B = _loop_statistics(res, u)
    np.testing.assert_allclose(stats.A, A, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(stats.B, B, rtol=1e-13, atol=1e-12)
    Z, y = res.design(u)
    ridge = Ridge(alpha=0.3, fit_intercept=False, solver="cholesky").fit(Z.T, y)
    np.testing.assert_allclose(res.output_weights(stats), ridge.coef_, rtol=1e-8, atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), steps=st.integers(3, 12), nodes=st.integers(3, 25))
def test_gradient_matches_complex_step(seed, steps, nodes):
    rng = np.random.default_rng(seed)
    res = EchoStateReservoir.random(nodes, density=0.9, rng=rng)
    target = res.statistics(rng.normal(0, 2, steps))
    u = rng.normal(0, 2, steps)
    _, grad = attack_loss_and_gradient(res, u, target)
    h = 1e-30
    complex_step = np.array([attack_loss(res, u + 1j * h * e, target).imag / h
                             for e in np.eye(steps)])
    np.testing.assert_allclose(grad, complex_step, rtol=1e-9,
                               atol=1e-12 * np.max(np.abs(complex_step)))


def test_gradient_matches_central_differences():
    rng = np.random.default_rng(5)
    res = EchoStateReservoir.random(20, rng=rng)
    target = res.statistics(seed_input(8))
    u = rng.normal(size=8)
    loss, grad = attack_loss_and_gradient(res, u, target)
    assert loss == pytest.approx(attack_loss(res, u, target), rel=1e-14)
    h = 1e-5
    central = np.array([(attack_loss(res, u + h * e, target) - attack_loss(res, u - h * e, target))
                        / (2 * h) for e in np.eye(8)])
    np.testing.assert_allclose(grad, central, rtol=1e-6)


def test_seed_gradient_descent_is_eq_6_20():
    res = EchoStateReservoir.random(10, rng=0)
    target = res.statistics(seed_input(6))
    u0 = np.linspace(-1, 1, 6)
    out = reconstruct_input(res, target, steps=6, method="gd", iterations=2, learning_rate=1e-4,
                            momentum=0.1, u0=u0, record_every=1)
    g0 = attack_loss_and_gradient(res, u0, target)[1]
    u1 = u0 - 1e-4 * g0                                  # u_{-1} = u_0: no momentum term yet
    g1 = attack_loss_and_gradient(res, u1, target)[1]
    u2 = u1 - 1e-4 * g1 - 0.1 * (u1 - u0)               # the seed's sign
    np.testing.assert_allclose(out.iterates[1], u1, rtol=1e-14)
    np.testing.assert_allclose(out.u, u2, rtol=1e-14)
    assert out.iterations.tolist() == [0, 1, 2]


def test_attacks_recover_the_input_exactly_from_clean_statistics():
    res = EchoStateReservoir.random(30, rng=2)
    u = seed_input(10)
    target = res.statistics(u)
    assert relative_error(reconstruct_input_subspace(res, target, steps=10, grid=801), u) < 1e-6
    best = strongest_attack(res, target, steps=10, restarts=0, iterations=150, rng=0)
    assert relative_error(best, u) < 1e-9
    ams = reconstruct_input(res, target, steps=10, method="amsgrad", iterations=100)
    assert ams.losses[-1] < ams.losses[0]


def test_subspace_attack_needs_short_inputs():
    res = EchoStateReservoir.random(5, density=0.6, rng=0)
    with pytest.raises(ParameterError, match="steps - 1 < n_nodes"):
        reconstruct_input_subspace(res, res.statistics(seed_input(8)), steps=8)


def test_bad_inputs_raise_clear_errors():
    res = EchoStateReservoir.random(5, density=0.6, rng=0)
    target = res.statistics(seed_input(4))
    with pytest.raises(ParameterError, match="method"):
        reconstruct_input(res, target, steps=4, method="adam")
    with pytest.raises(DimensionError, match="u0 has 3 entries"):
        reconstruct_input(res, target, steps=4, u0=np.zeros(3))
    with pytest.raises(DimensionError, match="at least 2"):
        res.statistics(np.array([1.0]))
    # trial 13: an input of 1e300 overflowed and was reported as "A contains NaN"
    with pytest.raises(NonFiniteError, match=r"u has an entry of magnitude 1e\+300"):
        res.statistics(np.full(10, 1e300))
    with pytest.raises(DimensionError, match="B has shape"):
        ReservoirStatistics(np.zeros(3), np.zeros((2, 2)))
    with pytest.raises(DimensionError, match="regressors"):
        attack_loss_and_gradient(EchoStateReservoir.random(6, density=0.6, rng=0),
                                 seed_input(4), target)
    with pytest.raises(ParameterError, match="leak"):
        EchoStateReservoir(np.eye(2), np.ones(2), leak=1.5)
