"""Tests of the numpy models and local optimizers used by SIFL and NbAFL."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from privacy.errors import DimensionError, ParameterError
from privacy.federated.sifl_models import MLP, LocalOptimizer, SoftmaxRegression


def _data(rng, m=30, d=4, c=3):
    return rng.normal(size=(m, d)), rng.integers(0, c, m)


@pytest.mark.parametrize("model", [SoftmaxRegression(4, 3, l2=0.1), MLP(4, 5, 3, l2=0.1)],
                         ids=["softmax", "mlp"])
def test_gradient_matches_central_differences(model):
    rng = np.random.default_rng(0)
    X, y = _data(rng)
    theta = model.init(rng) + 0.1 * rng.normal(size=model.size)
    weights = rng.uniform(0, 0.1, y.size)
    grad = model.gradient(theta, X, y, weights=weights)

    def weighted_loss(t):
        # sum_j w_j nll_j + l2 term; each single-example loss carries the l2 term once
        penalty = _l2(model, t)
        per_example = [model.loss(t, X[j:j + 1], y[j:j + 1]) - penalty for j in range(y.size)]
        return float(np.dot(weights, per_example) + penalty)

    h = 1e-6
    numeric = np.array([(weighted_loss(theta + h * e) - weighted_loss(theta - h * e)) / (2 * h)
                        for e in np.eye(model.size)])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def _l2(model, theta):
    mask = model._weight_mask()
    return 0.5 * model.l2 * float(np.sum(theta[mask] ** 2))


@pytest.mark.parametrize("model", [SoftmaxRegression(4, 3), MLP(4, 6, 3)], ids=["softmax", "mlp"])
def test_per_example_norms_match_one_gradient_per_example(model):
    rng = np.random.default_rng(1)
    X, y = _data(rng)
    theta = model.init(rng) + 0.3 * rng.normal(size=model.size)
    l2_part = model.gradient(theta, X[:1], y[:1], weights=np.zeros(1))
    explicit = [np.linalg.norm(model.gradient(theta, X[j:j + 1], y[j:j + 1]) - l2_part)
                for j in range(y.size)]
    np.testing.assert_allclose(model.example_gradient_norms(theta, X, y), explicit, rtol=1e-12)


def test_softmax_regression_optimum_matches_scikit_learn():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    l2 = 1e-2
    model = SoftmaxRegression(X.shape[1], 2, l2=l2)
    found = optimize.minimize(lambda t: model.loss(t, X, y), np.zeros(model.size),
                              jac=lambda t: model.gradient(t, X, y), method="L-BFGS-B",
                              options={"maxiter": 5000, "gtol": 1e-10, "ftol": 0})
    # two-class softmax: the optimum has w1 = -w0 = w/2, so our penalty is l2/4 ||w||^2 and the
    # equivalent binary logistic regression has C = 2 / (l2 m)
    reference = LogisticRegression(C=2.0 / (l2 * y.size), tol=1e-12, max_iter=10_000).fit(X, y)
    ours = np.exp(model._forward(found.x, X)[0])
    ours /= ours.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ours[:, 1], reference.predict_proba(X)[:, 1], atol=1e-5)
    assert model.accuracy(found.x, X, y) == pytest.approx(reference.score(X, y))


def test_optimizer_steps_follow_their_formulas():
    g1, g2 = np.array([1.0, -2.0]), np.array([0.5, 0.5])
    sgd = LocalOptimizer("sgd", 0.1)
    step, _ = sgd.step(sgd.start(2), g1)
    np.testing.assert_allclose(step, 0.1 * g1)
    mom = LocalOptimizer("momentum", 0.1, momentum=0.5)
    _, state = mom.step(mom.start(2), g1)
    step, _ = mom.step(state, g2)
    np.testing.assert_allclose(step, 0.1 * (0.5 * g1 + g2))
    adam = LocalOptimizer("adam", 0.01, betas=(0.9, 0.99), eps=1e-8)
    _, state = adam.step(adam.start(2), g1)
    step, _ = adam.step(state, g2)
    m = 0.9 * 0.1 * g1 + 0.1 * g2
    v = 0.99 * 0.01 * g1 ** 2 + 0.01 * g2 ** 2
    np.testing.assert_allclose(step, 0.01 * (m / (1 - 0.81)) / (np.sqrt(v / (1 - 0.99 ** 2))
                                                                   + 1e-8))


def test_bad_arguments_raise():
    model = SoftmaxRegression(3, 2)
    with pytest.raises(DimensionError, match="features"):
        model.loss(np.zeros(model.size), np.zeros((2, 4)), np.array([0, 1]))
    with pytest.raises(DimensionError, match="theta"):
        model.loss(np.zeros(3), np.zeros((2, 3)), np.array([0, 1]))
    with pytest.raises(ParameterError, match="labels"):
        model.loss(np.zeros(model.size), np.zeros((2, 3)), np.array([0, 2]))
    with pytest.raises(ParameterError, match="name"):
        LocalOptimizer("rmsprop", 0.1)
    with pytest.raises(ParameterError, match="n_classes"):
        MLP(3, 4, 1)
