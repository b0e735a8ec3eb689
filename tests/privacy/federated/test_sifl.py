"""Tests of SIFL (Algorithms 1-2), plain FL and the NbAFL baseline."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.preprocessing import StandardScaler

from privacy import GaussianMechanism, NeighboringRelation, accounting
from privacy.errors import DimensionError, ParameterError
from privacy.federated.sifl import (
    AggregatorCode,
    ClientData,
    ImmersionCode,
    local_training,
    nbafl_noise_multiplier,
    run_nbafl,
    run_plain_fl,
    run_sifl,
)
from privacy.federated.sifl_models import MLP, LocalOptimizer, SoftmaxRegression


def _clients(dataset="cancer", k=3, per_client=40, seed=0):
    if dataset == "cancer":
        X, y = load_breast_cancer(return_X_y=True)
        X = StandardScaler().fit_transform(X)
    else:
        X, y = load_digits(return_X_y=True)
        X = X / 16.0
    rows = np.random.default_rng(seed).permutation(y.size)[:k * per_client]
    sizes = np.linspace(per_client * 0.6, per_client * 1.4, k).astype(int)   # unequal sizes
    cuts = np.cumsum(sizes)[:-1]
    return [ClientData(X[p], y[p]) for p in np.split(rows[:sizes.sum()], cuts)]


def test_codes_satisfy_the_immersion_conditions():
    code = ImmersionCode.random(6, 10, pi_scale=0.1, kernel_scale=5.0, condition=20.0, rng=0)
    np.testing.assert_allclose(code.Pi1L @ code.Pi1, np.eye(6), atol=1e-12)
    np.testing.assert_allclose(code.Pi1L @ code.N1, 0, atol=1e-12)
    assert np.linalg.cond(np.hstack([code.Pi1 / 0.1, code.N1 / 5.0])) == pytest.approx(20.0)
    w = np.arange(6.0)
    encoded = code.encode(w, rng=1)
    np.testing.assert_allclose(code.decode(encoded), w, atol=1e-12)
    noise = encoded - code.Pi1 @ w
    assert np.linalg.norm(noise) > 1.0                                       # noise is there
    coeffs = np.linalg.lstsq(code.N1, noise, rcond=None)[0]
    np.testing.assert_allclose(code.N1 @ coeffs, noise, atol=1e-12)         # ... in range(N1)
    agg = AggregatorCode.random(3, pi_scale=0.5, kernel_scale=2.0, rng=2)
    assert agg.Pi2 @ agg.Pi2R == pytest.approx(1.0)
    np.testing.assert_allclose(agg.N2 @ agg.Pi2R, 0, atol=1e-14)
    v = np.arange(10.0)
    np.testing.assert_allclose(agg.decode(agg.encode(v, rng=3)), v, atol=1e-12)


def test_fedavg_with_one_full_batch_step_is_centralised_gradient_descent():
    clients = _clients()
    model = SoftmaxRegression(30, 2, l2=1e-3)
    theta = model.init(0)
    history = run_plain_fl(model, LocalOptimizer("sgd", 0.3), clients, theta, rounds=5)
    X = np.vstack([c.X for c in clients])
    y = np.concatenate([c.y for c in clients])
    for _ in range(5):
        theta = theta - 0.3 * model.gradient(theta, X, y)
    np.testing.assert_allclose(history[-1], theta, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("optimizer", [LocalOptimizer("sgd", 0.3), LocalOptimizer("momentum", 0.05),
                                       LocalOptimizer("adam", 0.01)], ids=lambda o: o.name)
@pytest.mark.parametrize("model,dataset", [(SoftmaxRegression(30, 2), "cancer"),
                                           (MLP(64, 4, 10), "digits")], ids=["logistic", "mlp"])
def test_decoded_sifl_equals_plain_fl_to_rounding(optimizer, model, dataset):
    clients = _clients(dataset)
    theta0 = model.init(1)
    schedule = {"rounds": 6, "local_steps": 3, "batch_size": 16, "batch_seed": 7}
    plain = run_plain_fl(model, optimizer, clients, theta0, **schedule)
    code = ImmersionCode.random(model.size, model.size + 7, rng=2)
    agg = AggregatorCode.random(3, rng=3)
    m1 = run_sifl(model, optimizer, clients, theta0, code, rng=4, **schedule)
    m2 = run_sifl(model, optimizer, clients, theta0, code, aggregator=agg, rng=4, **schedule)
    scale = np.max(np.abs(plain))
    assert np.max(np.abs(m1.decoded - plain)) < 1e-11 * scale
    assert np.max(np.abs(m2.decoded - plain)) < 1e-11 * scale
    assert np.max(np.abs(plain[-1] - plain[0])) > 1e-2 * scale                # it did train
    # what travels is encoded: uploads are far from Pi1 w_i
    assert np.linalg.norm(m1.uploads[0, 0] - code.Pi1 @ m1.decoded[1]) > 1.0
    assert m2.broadcasts[1].shape == (code.n_encoded, 3)


def test_paper_scales_amplify_rounding():
    """With ||Pi1|| ~ 1e-3 and noise ~ 1e6 the decoding error grows by many orders."""
    clients = _clients()
    model = SoftmaxRegression(30, 2)
    theta0 = model.init(1)
    sgd = LocalOptimizer("sgd", 0.3)
    plain = run_plain_fl(model, sgd, clients, theta0, rounds=5)
    errors = {}
    for name, scales in {"unit": (1, 1, 1), "paper": (1e-3, 1e3, 1e3)}.items():
        code = ImmersionCode.random(model.size, model.size + 7, pi_scale=scales[0],
                                    kernel_scale=scales[1], noise_std=scales[2], rng=2)
        agg = AggregatorCode.random(2, pi_scale=scales[0], kernel_scale=scales[1],
                                    noise_std=scales[2], rng=3)
        decoded = run_sifl(model, sgd, clients, theta0, code, rounds=5, aggregator=agg,
                           rng=4).decoded
        errors[name] = np.max(np.abs(decoded - plain))
    assert errors["unit"] < 1e-12
    assert errors["paper"] > 1e4 * errors["unit"]


def test_local_training_target_optimizer_tracks_plain_iterates():
    clients = _clients()
    model = SoftmaxRegression(30, 2)
    code = ImmersionCode.random(model.size, model.size + 3, rng=0)
    w0 = model.init(0)
    encoded0 = code.encode(w0, rng=1)
    common = {"local_steps": 4, "batch_size": 10}
    plain = local_training(model, LocalOptimizer("adam", 0.05), w0, clients[0],
                           rng=np.random.default_rng(5), **common)
    target = local_training(model, LocalOptimizer("adam", 0.05), encoded0, clients[0],
                            rng=np.random.default_rng(5), code=code, **common)
    # immersion: w~_K = Pi1 w_K + b1 with the round's b1 unchanged (eqs. 12-15)
    np.testing.assert_allclose(target, code.Pi1 @ plain + (encoded0 - code.Pi1 @ w0),
                               atol=1e-12)


def test_nbafl_noise_multiplier_meets_the_target_and_clipping_is_exact():
    z = nbafl_noise_multiplier(5.0, delta=1e-5, rounds=3)
    reached = accounting.epsilon(GaussianMechanism(z, 1.0), delta=1e-5, steps=3,
                                 neighboring=NeighboringRelation.REPLACE_ONE)
    assert 4.99 < reached <= 5.0
    clients = _clients(k=2)
    model = SoftmaxRegression(30, 2, l2=0.0)
    theta0 = model.init(0)
    # with a huge clip and no noise NbAFL is FedAvg with one full-batch step
    fedavg = run_plain_fl(model, LocalOptimizer("sgd", 0.2), clients, theta0, rounds=3)
    np.testing.assert_allclose(run_nbafl(model, clients, theta0, rounds=3, learning_rate=0.2,
                                         clip=1e9, noise_multiplier=0.0), fedavg, atol=1e-14)
    # with a small clip each example moves the model by exactly lr * clip / m along its gradient
    clip = 1e-3
    one = run_nbafl(model, clients[:1], theta0, rounds=1, learning_rate=1.0, clip=clip,
                    noise_multiplier=0.0)[1]
    data = clients[0]
    expected = theta0.copy()
    for j in range(data.size):
        g = model.gradient(theta0, data.X[j:j + 1], data.y[j:j + 1])
        expected -= clip * g / np.linalg.norm(g) / data.size
    np.testing.assert_allclose(one, expected, atol=1e-15)


def test_nbafl_noise_has_the_calibrated_scale():
    clients = _clients(k=2, per_client=50)
    model = SoftmaxRegression(30, 2)
    theta0 = model.init(0)
    common = {"rounds": 1, "learning_rate": 0.5, "clip": 1.0}
    clean = run_nbafl(model, clients, theta0, noise_multiplier=0.0, **common)[1]
    noisy = run_nbafl(model, clients, theta0, noise_multiplier=100.0, rng=0, **common)[1]
    weights = np.array([c.size for c in clients]) / sum(c.size for c in clients)
    sigmas = 100.0 * 0.5 * 1.0 / np.array([c.size for c in clients])
    expected = np.sqrt(np.sum((weights * sigmas) ** 2))
    assert np.std(noisy - clean) == pytest.approx(expected, rel=0.2)         # 62 coordinates


def test_sifl_argument_errors():
    clients = _clients()
    model = SoftmaxRegression(30, 2)
    with pytest.raises(DimensionError, match="encodes 5"):
        run_sifl(model, LocalOptimizer("sgd", 0.1), clients, model.init(0),
                 ImmersionCode.random(5, 8, rng=0), rounds=1)
    with pytest.raises(ParameterError, match="n_encoded"):
        ImmersionCode.random(5, 5)
    with pytest.raises(ParameterError, match="noise law"):
        ImmersionCode.random(2, 3, noise="cauchy")
    with pytest.raises(ParameterError, match="noise_multiplier"):
        run_nbafl(model, clients, model.init(0), rounds=1, learning_rate=0.1, clip=1.0,
                  noise_multiplier=-1.0)
    with pytest.raises(DimensionError, match="one label"):
        ClientData(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ParameterError, match="at least one"):
        run_plain_fl(model, LocalOptimizer("sgd", 0.1), [], model.init(0), rounds=1)


def test_a_client_without_examples_is_refused_by_name():
    """Trial 13: a 0-record client was accepted and divided by zero in the gradient."""
    from privacy.federated.sifl import ClientData

    with pytest.raises(ParameterError, match=r"at least one example; got X of shape \(0, 3\)"):
        ClientData(np.ones((0, 3)), np.ones(0))
    assert ClientData(np.ones((1, 3)), np.ones(1)).size == 1
