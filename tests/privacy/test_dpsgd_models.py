"""Per-example gradients of privacy.dpsgd.models: finite differences, ghost clipping, sklearn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from privacy import DimensionError, ParameterError
from privacy.dpsgd import LogisticModel, MLPModel, SoftmaxModel, cross_entropy
from privacy.dpsgd.models import check_labels

MODELS = [LogisticModel(4), SoftmaxModel(4, 3), MLPModel(4, 5, 3)]


def _classes(model) -> int:
    return 2 if isinstance(model, LogisticModel) else model.n_classes


def _random_batch(model, rng, R=2, B=3):
    params = rng.normal(size=(R, model.n_params))
    X = rng.normal(scale=2.0, size=(R, B, model.n_features))
    y = rng.integers(0, _classes(model), size=(R, B))
    return params, X, y


def _example_loss(model, row, x, label):
    return float(cross_entropy(model.logits(row[None, :], x[None, :]), np.array([label]))[0, 0])


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_per_example_gradients_match_central_differences(model):
    rng = np.random.default_rng(3)
    params, X, y = _random_batch(model, rng)
    grads = model.per_example_gradients(params, X, y)
    assert grads.shape == (2, 3, model.n_params)
    h = 1e-6
    for r in range(2):
        for b in range(3):
            numeric = np.empty(model.n_params)
            for j in range(model.n_params):
                e = np.zeros(model.n_params)
                e[j] = h
                numeric[j] = (_example_loss(model, params[r] + e, X[r, b], y[r, b])
                              - _example_loss(model, params[r] - e, X[r, b], y[r, b])) / (2 * h)
            np.testing.assert_allclose(grads[r, b], numeric, rtol=1e-6, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(kind=st.integers(0, 2), R=st.integers(1, 4), B=st.integers(1, 6),
       clip=st.floats(1e-3, 10.0), seed=st.integers(0, 2**32 - 1))
def test_ghost_clipped_sum_equals_materialized(kind, R, B, clip, seed):
    model = MODELS[kind]
    rng = np.random.default_rng(seed)
    params, X, y = _random_batch(model, rng, R, B)
    valid = rng.random((R, B)) < 0.7
    grads = model.per_example_gradients(params, X, y)
    norms = np.linalg.norm(grads, axis=2)
    factors = np.where(valid, np.minimum(1.0, clip / norms), 0.0)
    expected = np.einsum("rb,rbp->rp", factors, grads)
    got = model.clipped_gradient_sum(params, X, y, valid, clip)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    # every clipped contribution has norm <= clip
    assert np.all(np.linalg.norm(got, axis=1) <= clip * valid.sum(axis=1) + 1e-9)


def _fit_ours(model, X, y, lam):
    """Minimise mean cross-entropy + lam/2 |weights|^2 (biases free) with our loss/gradient."""
    mask = np.ones(model.n_params)
    if isinstance(model, LogisticModel):
        mask[-1] = 0.0
    else:
        mask[-model.n_classes:] = 0.0

    def fun(w):
        p = w[None, :]
        return (float(model.loss(p, X, y)[0]) + 0.5 * lam * np.sum(mask * w * w),
                model.gradient(p, X, y)[0] + lam * mask * w)
    res = optimize.minimize(fun, np.zeros(model.n_params), jac=True, method="L-BFGS-B",
                            options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15})
    return res.x


def test_logistic_optimum_matches_sklearn():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    lam = 1e-2
    ours = _fit_ours(LogisticModel(30), X, y, lam)
    ref = LogisticRegression(C=1.0 / (lam * len(y)), tol=1e-12, max_iter=20000).fit(X, y)
    np.testing.assert_allclose(ours[:-1], ref.coef_[0], atol=2e-4)
    assert ours[-1] == pytest.approx(ref.intercept_[0], abs=2e-4)


def test_softmax_optimum_matches_sklearn_multinomial():
    X, y = load_digits(return_X_y=True)
    X, y = X[:200] / 16.0, y[:200]
    lam = 5e-2
    model = SoftmaxModel(64, 10)
    ours = _fit_ours(model, X, y, lam)
    ref = LogisticRegression(C=1.0 / (lam * len(y)), tol=1e-12, max_iter=20000).fit(X, y)
    W = ours[:640].reshape(64, 10)
    # softmax parameters are identified up to a constant per feature; sklearn's penalised
    # optimum has zero-mean columns over classes, and so has ours (same penalty)
    np.testing.assert_allclose(W.T, ref.coef_, atol=2e-4)
    # the unpenalised intercepts are identified only up to a constant: compare probabilities
    ours_proba = np.exp(model.logits(ours[None], X)[0])
    ours_proba /= ours_proba.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ours_proba, ref.predict_proba(X), atol=1e-5)


def _mlp_params(clf) -> np.ndarray:
    return np.concatenate([clf.coefs_[0].ravel(), clf.intercepts_[0], clf.coefs_[1].ravel(),
                           clf.intercepts_[1]])[None, :]


def test_mlp_forward_and_stationary_point_match_sklearn():
    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16.0, y[:300]
    clf = MLPClassifier(hidden_layer_sizes=(8,), activation="tanh", solver="lbfgs", alpha=0.0,
                        max_iter=5000, tol=1e-12, random_state=0).fit(X, y)
    model = MLPModel(64, 8, 10)
    params = _mlp_params(clf)
    logits = model.logits(params, X)[0]
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, clf.predict_proba(X), rtol=1e-9, atol=1e-12)
    # sklearn's optimum is a stationary point of our loss: our gradient is tiny there, while
    # at a perturbed point it is not
    grad = model.gradient(params, X, y)[0]
    moved = model.gradient(params + 0.05, X, y)[0]
    assert np.linalg.norm(grad) < 1e-3 * np.linalg.norm(moved)


def test_mlp_init_is_glorot_and_reproducible():
    model = MLPModel(64, 32, 10)
    a, b = model.init(3, rng=5), model.init(3, rng=5)
    np.testing.assert_array_equal(a, b)
    bound = np.sqrt(6.0 / (64 + 32))
    assert np.abs(a[:, :64 * 32]).max() <= bound
    assert np.abs(a[:, :64 * 32]).max() > 0.95 * bound
    assert not np.array_equal(a[0], a[1])


def test_cross_entropy_binary_and_multiclass_agree():
    z = np.array([[0.3], [-2.0]])
    multi = np.hstack([np.zeros((2, 1)), z])          # softmax of [0, z] = sigmoid(z)
    y = np.array([1, 0])
    np.testing.assert_allclose(cross_entropy(z, y), cross_entropy(multi, y), rtol=1e-14)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_shape_errors(model):
    rng = np.random.default_rng(0)
    params, X, y = _random_batch(model, rng)
    with pytest.raises(DimensionError, match="params must have shape"):
        model.per_example_gradients(params[:, :-1], X, y)
    with pytest.raises(DimensionError, match="X must have shape"):
        model.per_example_gradients(params, X[..., :-1], y)
    with pytest.raises(DimensionError, match="y must have shape"):
        model.per_example_gradients(params, X, y[:, :-1])
    with pytest.raises(DimensionError, match="valid must have shape"):
        model.clipped_gradient_sum(params, X, y, np.ones((2, 2), bool), 1.0)
    with pytest.raises(DimensionError, match="X must have shape"):
        model.logits(params, X[0, :, :-1])


def test_constructor_and_label_errors():
    with pytest.raises(ParameterError, match="n_classes"):
        SoftmaxModel(3, 1)
    with pytest.raises(ParameterError, match="n_features"):
        LogisticModel(0)
    with pytest.raises(ParameterError, match="labels must be integers in 0..1"):
        check_labels(LogisticModel(2), np.array([0, 2]))
    with pytest.raises(ParameterError, match="labels"):
        check_labels(SoftmaxModel(2, 3), np.array([0.5, 1.0]))


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("magnitude", [1e150, 1e155, 1e200, 1e300])
def test_clipping_works_for_huge_finite_examples(model, magnitude):
    # a squared norm beyond 1.8e308 used to zero (or NaN) an example's clipped gradient; the
    # reference norms are Python's math.hypot, which scales instead of squaring
    rng = np.random.default_rng(5)
    params, X, y = _random_batch(model, rng, R=2, B=4)
    X[0, 1, 2] = magnitude
    X[1, 3, 0] = -magnitude
    if isinstance(model, LogisticModel):       # the wrong label: no saturated zero gradient
        y[0, 1] = int(params[0, 2] < 0)
    if isinstance(model, MLPModel):            # one hidden unit blind to the huge feature,
        params[0, 2 * model.n_hidden] = 0.0    # so it stays unsaturated: a huge W1 gradient
    valid = np.array([[True, True, True, False], [True, True, True, True]])
    clip = 0.7
    grads = model.per_example_gradients(params, X, y)
    norms = np.array([[math.hypot(*g) for g in row] for row in grads])
    factors = np.minimum(1.0, clip / np.maximum(norms, np.finfo(float).tiny))
    expected = np.einsum("rb,rbp->rp", np.where(valid, factors, 0.0), grads)
    got = model.clipped_gradient_sum(params, X, y, valid, clip)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    # the huge example alone: its contribution is scaled to clip_norm, not zeroed
    alone = np.zeros_like(valid)
    alone[0, 1] = True
    single = model.clipped_gradient_sum(params, X, y, alone, clip)[0]
    assert norms[0, 1] > 1e100
    assert math.hypot(*single) == pytest.approx(clip, rel=1e-12)
