"""Overflow-safe clipping: a huge finite record is clipped to the bound, never dropped.

Reference values come from the textbook formulas applied to the records rescaled by an exact
power of two (``ldexp``), which keeps every direction and ratio exact and no square overflows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privacy._clipping import clip_factors, clip_rows, row_norms
from privacy.errors import NonFiniteError
from privacy.federated.models import KernelFeatures, LeastSquaresModel
from privacy.federated.robust import combine
from privacy.federated.sifl_models import MLP, SoftmaxRegression

EPS = np.finfo(float).eps
EXPONENTS = [150, 155, 160, 200, 250, 300]


def _huge_rows(exponent, rng=0, rows=6, cols=5):
    gen = np.random.default_rng(rng)
    return gen.standard_normal((rows, cols)) * 10.0 ** exponent


def _direction(v):
    """Unit rows of ``v``, through an exact power-of-two rescaling of each row."""
    _, e = np.frexp(np.max(np.abs(v), axis=1))
    w = np.ldexp(v, -e[:, None])
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def _textbook(v, bound):
    """The pre-fix arithmetic, for rows that do not overflow."""
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v * np.minimum(1.0, bound / np.maximum(norms, 1e-300))


@pytest.mark.parametrize("exponent", EXPONENTS)
@pytest.mark.parametrize("bound", [1e-3, 1.0, 7.5])
def test_clip_rows_clips_huge_rows_to_the_bound_along_their_direction(exponent, bound):
    v = _huge_rows(exponent)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = clip_rows(v, bound)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), bound, rtol=8 * EPS)
    np.testing.assert_allclose(out / bound, _direction(v), rtol=0, atol=8 * EPS)


def test_clip_rows_keeps_ordinary_rows_bit_for_bit():
    gen = np.random.default_rng(1)
    v = gen.standard_normal((200, 7)) * gen.uniform(0.01, 10.0, (200, 1))
    v[:3] = 0.0
    out = clip_rows(v, 2.5)
    assert np.array_equal(out, _textbook(v, 2.5))
    assert np.array_equal(np.signbit(out), np.signbit(_textbook(v, 2.5)))


def test_clip_rows_mixes_huge_tiny_and_short_rows():
    v = np.array([[3e300, -4e300], [3e-170, 4e-170], [0.3, 0.4], [1.7e308, 1.7e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = clip_rows(v, 1e-175)
    lifted = np.ldexp(out, 600)                  # exact: the clipped norms' squares underflow
    np.testing.assert_allclose(np.linalg.norm(lifted, axis=1), np.ldexp(1e-175, 600),
                               rtol=8 * EPS)
    np.testing.assert_allclose(lifted / np.ldexp(1e-175, 600), _direction(v), atol=8 * EPS)
    # tiny rows under a large bound stay as they are
    assert np.array_equal(clip_rows(v[1:2], 1.0), v[1:2])


@pytest.mark.parametrize("exponent", EXPONENTS)
def test_clip_factors_and_row_norms_of_huge_rows(exponent):
    v = _huge_rows(exponent)
    r = _huge_rows(exponent, rng=5, cols=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        norms = row_norms(v)
        factor = clip_factors(3.0, v[:, :2] * 10.0 ** -exponent, r)
    _, e = np.frexp(np.max(np.abs(v), axis=1))
    reference = np.ldexp(np.linalg.norm(np.ldexp(v, -e[:, None]), axis=1), e)
    np.testing.assert_allclose(norms, reference, rtol=8 * EPS)
    # factor * ||a|| * ||r||, in the order that cannot overflow
    np.testing.assert_allclose(factor * row_norms(v[:, :2] * 10.0 ** -exponent) * row_norms(r), 3.0,
                               rtol=16 * EPS)


def test_clip_factors_keep_ordinary_rows_bit_for_bit():
    gen = np.random.default_rng(2)
    a, b = gen.standard_normal((100, 4)), gen.standard_normal((100, 3))
    size = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    assert np.array_equal(clip_factors(1.5, a, b), np.minimum(1.0, 1.5 / np.maximum(size, 1e-300)))


def _linear_model(bound=1.0):
    feats = KernelFeatures(np.eye(3), kernel="linear", coef0=0.0, include_inputs=True)
    return LeastSquaresModel(feats, 3, feature_bound=bound, total_samples=20)


@pytest.mark.parametrize("exponent", EXPONENTS)
def test_least_squares_clips_a_huge_record_instead_of_dropping_it(exponent):
    model = _linear_model(bound=2.0)
    X = _huge_rows(exponent, rows=4, cols=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        phi = model.clipped_features(X)
    np.testing.assert_allclose(np.linalg.norm(phi, axis=1), 2.0, rtol=8 * EPS)
    np.testing.assert_allclose(phi / 2.0, _direction(model.features.transform(X)), atol=8 * EPS)


def test_least_squares_ordinary_records_unchanged_bit_for_bit():
    model = _linear_model(bound=1.5)
    X = np.random.default_rng(3).normal(scale=2.0, size=(100, 3))
    assert np.array_equal(model.clipped_features(X), _textbook(model.features.transform(X), 1.5))


@pytest.mark.filterwarnings("ignore:overflow encountered in power")
def test_least_squares_refuses_features_that_overflow():
    feats = KernelFeatures(np.ones((1, 3)), kernel="polynomial", degree=3)
    model = LeastSquaresModel(feats, 2, feature_bound=1.0, total_samples=5)
    with pytest.raises(NonFiniteError, match="features of X overflow"):
        model.clipped_features(np.full((2, 3), 1e200))


def test_clipped_gradient_clips_a_huge_residual():
    model = _linear_model()
    gen = np.random.default_rng(4)
    phi = model.clipped_features(gen.standard_normal((1, 3)))
    T = np.eye(3)[[1]]
    W = gen.standard_normal(model.weight_shape) * 1e200    # a diverged server model
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grad = model.clipped_gradient(W, phi, T, clip=0.5, count=1)
    assert np.isclose(np.linalg.norm(grad), 0.5, rtol=16 * EPS, atol=0)
    R = phi @ W - T
    expected = np.outer(phi[0], _direction(R)[0])
    np.testing.assert_allclose(grad / 0.5, expected / np.linalg.norm(expected), atol=16 * EPS)


def test_clipped_gradient_ordinary_records_bit_for_bit():
    model = _linear_model()
    gen = np.random.default_rng(5)
    phi = model.clipped_features(gen.standard_normal((50, 3)))
    T = np.eye(3)[gen.integers(0, 3, 50)]
    W = gen.standard_normal(model.weight_shape)
    R = phi @ W - T
    size = np.linalg.norm(phi, axis=1) * np.linalg.norm(R, axis=1)
    old = phi.T @ (R * np.minimum(1.0, 0.3 / np.maximum(size, 1e-300))[:, None]) / 50
    assert np.array_equal(model.clipped_gradient(W, phi, T, 0.3, 50), old)


@pytest.mark.parametrize("exponent", [160, 250, 300])
def test_sifl_gradient_norms_of_huge_examples(exponent):
    X = _huge_rows(exponent, rows=4, cols=3)
    y = np.array([0, 1, 1, 0])
    soft = SoftmaxRegression(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        norms = soft.example_gradient_norms(np.zeros(soft.size), X, y)
    # theta = 0: p = (1/2, 1/2), ||p - e_y|| = 1/sqrt(2); sqrt(||x||^2 + 1) = ||x|| to rounding
    np.testing.assert_allclose(norms, row_norms(X) / np.sqrt(2.0), rtol=8 * EPS)
    mlp = MLP(n_features=3, n_hidden=4, n_classes=2)
    theta = mlp.init(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        norms = mlp.example_gradient_norms(theta, X, y)
    assert np.all(np.isfinite(norms)) and np.all(norms > 0)


def test_sifl_gradient_norms_ordinary_examples_bit_for_bit():
    gen = np.random.default_rng(6)
    X, y = gen.standard_normal((30, 3)), gen.integers(0, 2, 30)
    mlp = MLP(n_features=3, n_hidden=4, n_classes=2)
    theta = mlp.init(1)
    out, inner, hidden = mlp._errors(theta, X, y)
    old = np.sqrt(np.sum(inner ** 2, axis=1) * (np.sum(X ** 2, axis=1) + 1.0)
                  + np.sum(out ** 2, axis=1) * (np.sum(hidden ** 2, axis=1) + 1.0))
    assert np.array_equal(mlp.example_gradient_norms(theta, X, y), old)
    soft = SoftmaxRegression(3, 2)
    theta = soft.init(2)
    err = soft._output_error(soft._forward(theta, X)[0], y)
    old = np.linalg.norm(err, axis=1) * np.sqrt(np.sum(X ** 2, axis=1) + 1.0)
    assert np.array_equal(soft.example_gradient_norms(theta, X, y), old)


@pytest.mark.parametrize("exponent", [160, 300, 308])
@pytest.mark.parametrize("zeros", [0, 1])
def test_norm_robust_rule_clips_a_huge_update(exponent, zeros):
    gen = np.random.default_rng(7)
    values = gen.standard_normal((5, 4))
    values[:zeros] = 0.0                    # a zero update sorts below every other norm
    values[2] = values[2] / np.max(np.abs(values[2])) * (1.7e308 if exponent == 308
                                                          else 10.0 ** exponent)
    weights = np.full(5, 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = combine(values, weights, "norm")
    small = np.delete(values, 2, axis=0)
    limit = np.median(np.append(np.linalg.norm(small, axis=1), np.inf))
    clipped = np.vstack([small, limit * _direction(values[2:3])])
    scale = np.minimum(1.0, limit / np.maximum(np.linalg.norm(clipped, axis=1), 1e-300))
    np.testing.assert_allclose(got, (0.2 * scale) @ clipped, rtol=64 * EPS, atol=64 * EPS)
