"""Separable models: kernel features, data blocks, their sensitivity (brute force), solutions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge

from privacy.errors import DimensionError, ParameterError
from privacy.federated.models import KernelFeatures, LeastSquaresModel, SeparableLoss


def _model(classes=3, count=4, kernel="rbf", bound=2.5, total=50, ridge=1e-3, rng=0):
    feats = KernelFeatures.random(low=[-2, -2, -2], high=[2, 2, 2], count=count, rng=rng,
                                  kernel=kernel, scale=0.7)
    return LeastSquaresModel(feats, classes, feature_bound=bound, total_samples=total,
                             ridge=ridge)


def _data(n, classes=3, rng=0, spread=1.5):
    gen = np.random.default_rng(rng)
    return {"X": gen.normal(scale=spread, size=(n, 3)), "y": gen.integers(0, classes, n)}


@pytest.mark.parametrize("kernel", ["linear", "rbf", "polynomial"])
def test_kernel_features_match_their_formulas(kernel):
    f = KernelFeatures.random(low=[0, 0], high=[1, 2], count=3, rng=4, kernel=kernel,
                              scale=0.5, coef0=2.0, degree=3)
    assert np.all((f.basis >= [0, 0]) & (f.basis <= [1, 2]))
    X = np.random.default_rng(1).normal(size=(5, 2))
    phi = f.transform(X)
    x, b = X[2], f.basis[1]
    expected = {"linear": 0.5 * x @ b + 2.0, "rbf": math.exp(-0.5 * np.sum((x - b) ** 2)),
                "polynomial": (x @ b + 2.0) ** 3}[kernel]
    assert phi[2, 0] == 1.0 and np.allclose(phi[2, 1:3], x)
    assert phi[2, 3 + 1] == pytest.approx(expected)
    with pytest.raises(DimensionError, match="samples, features"):
        f.transform(X.T)


def test_blocks_add_up_to_the_global_block():
    model = _model()
    a, b = _data(20, rng=1), _data(30, rng=2)
    both = {"X": np.vstack([a["X"], b["X"]]), "y": np.r_[a["y"], b["y"]]}
    for norm in ("l1", "l2"):
        np.testing.assert_allclose(model.block(a, norm) + model.block(b, norm),
                                   model.block(both, norm), atol=1e-14)
        A, B = model.unpack(model.block(both, norm), norm)
        phi = model.clipped_features(both["X"])
        np.testing.assert_allclose(A, phi.T @ phi / 50, atol=1e-14)
        np.testing.assert_allclose(B, phi.T @ model.targets(both["y"]) / 50, atol=1e-14)


def test_solution_matches_scikit_learn_ridge():
    model = _model(classes=3, ridge=0.01, total=80)
    data = _data(80, rng=3)
    W = model.centralized(data["X"], data["y"])
    phi = model.clipped_features(data["X"])
    ref = Ridge(alpha=0.01 * 80, fit_intercept=False).fit(phi, model.targets(data["y"]))
    np.testing.assert_allclose(W, ref.coef_.T, rtol=1e-8, atol=1e-10)
    binary = _model(classes=2, ridge=0.01, total=80)
    data["y"] = data["y"] % 2
    W2 = binary.centralized(data["X"], data["y"])
    assert W2.shape == (binary.num_features, 1)
    pred = binary.predict(W2, data["X"])
    assert set(pred) <= {0, 1} and binary.accuracy(W2, data["X"], data["y"]) > 0.5


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), classes=st.sampled_from([2, 3]),
       spread=st.floats(0.1, 20.0), bound=st.floats(0.5, 6.0))
def test_block_sensitivity_by_brute_force(seed, classes, spread, bound):
    """Adding one record never moves the block by more than the derived bound."""
    model = _model(classes=classes, bound=bound, rng=seed % 7)
    base = _data(6, classes=classes, rng=seed, spread=spread)
    gen = np.random.default_rng(seed + 1)
    for _ in range(5):
        x = gen.normal(scale=spread, size=(1, 3))
        label = gen.integers(0, classes, 1)
        more = {"X": np.vstack([base["X"], x]), "y": np.r_[base["y"], label]}
        for norm, order in (("l2", 2), ("l1", 1)):
            change = np.linalg.norm(model.block(more, norm) - model.block(base, norm), order)
            assert change <= model.block_sensitivity(norm) * (1 + 1e-12)
        lo, hi = model.block_bounds("l2")
        assert np.all(model.block(more) * model.total_samples / 7 >= lo - 1e-12)
        assert np.all(model.block(more) * model.total_samples / 7 <= hi + 1e-12)


def test_l2_sensitivity_is_attained_by_a_clipped_record():
    model = _model(bound=1.5)
    big = {"X": np.full((1, 3), 50.0), "y": np.array([1])}
    assert np.linalg.norm(model.clipped_features(big["X"])) == pytest.approx(1.5)
    assert np.linalg.norm(model.block(big)) == pytest.approx(model.block_sensitivity("l2"),
                                                              rel=1e-12)


def test_clipped_gradient_is_the_gradient_of_a_huber_loss():
    model = _model(classes=3)
    data = _data(9, rng=5, spread=3.0)
    phi, T = model.local_loss_parts(data)
    W = np.random.default_rng(2).normal(size=model.weight_shape)
    clip = 0.8

    # the Huber loss psi(u) = u^2/2 (u <= c), c u - c^2/2 beyond, c = clip / ||phi||
    def psi_total(W):
        total = 0.0
        for p, t in zip(phi, T, strict=True):
            u, c = np.linalg.norm(W.T @ p - t), clip / np.linalg.norm(p)
            total += u * u / 2 if u <= c else c * u - c * c / 2
        return total / 9
    grad = model.clipped_gradient(W, phi, T, clip, 9)
    h = 1e-6
    numeric = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = h
        numeric[idx] = (psi_total(W + E) - psi_total(W - E)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)
    assert np.any(np.linalg.norm(phi, axis=1) * np.linalg.norm(phi @ W - T, axis=1) > clip)


def test_generic_separable_loss_matches_least_squares():
    model = _model(classes=2, ridge=0.05, count=2, total=40)
    data = _data(40, classes=2, rng=8)
    p = model.num_features
    iu = np.triu_indices(p)

    def g(w):  # J = 1/2 w^T A w - w^T b with A from the upper triangle (off-diagonal twice)
        outer = np.outer(w, w)[iu] * np.where(iu[0] == iu[1], 0.5, 1.0)
        return np.concatenate([outer, -w])

    def h(d):
        phi = model.clipped_features(d["X"])
        t = model.targets(d["y"])[:, 0]
        return np.concatenate([(phi.T @ phi)[iu], phi.T @ t]) / len(d["X"])
    loss = SeparableLoss(g=g, h=h, dimension=iu[0].size + p, w0=np.zeros(p),
                         total_samples=40, sensitivity=1.0,
                         regularizer=lambda w: 0.025 * w @ w)
    w = loss.solve(loss.block(data))
    np.testing.assert_allclose(w, model.centralized(data["X"], data["y"])[:, 0], atol=1e-7)
    with pytest.raises(DimensionError, match="declared dimension"):
        SeparableLoss(g=g, h=lambda d: np.ones(3), dimension=4, w0=[0.0], total_samples=1,
                      sensitivity=1.0).block(data)


def test_bad_model_arguments_are_refused():
    with pytest.raises(ParameterError, match="kernel"):
        KernelFeatures(np.zeros((1, 2)), kernel="sigmoid")
    model = _model()
    with pytest.raises(ParameterError, match="labels must lie"):
        model.targets(np.array([0, 5]))
    with pytest.raises(DimensionError, match="expected"):
        model.unpack(np.zeros(3))
    with pytest.raises(ParameterError, match="norm"):
        model.block_sensitivity("linf")
