"""The initial states eliminated experiment by experiment give the dense formulation's answers,
and no factorization grows with the number of experiments."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import linalg

import dmdidc.output.refine as refine_module
from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
from dmdidc.output.arrow import Arrow
from dmdidc.output.blocks import RCOND
from dmdidc.output.jacobian import line_basis, prediction_jacobian
from simulations.studies.data_kinds import random_state_matrix


class _Dense:
    """The dense normal equations with the dense algebra the arrow replaced (the reference)."""

    def __init__(self, normal: np.ndarray, gradient: np.ndarray, c: int):
        self.normal, self.gradient, self.c = normal, gradient, c

    def diagonal(self):
        return np.diag(self.normal)

    def scaled(self, scale, damping=0.0):
        return _Dense(self.normal / np.outer(scale, scale) + damping * np.eye(scale.size),
                      self.gradient / scale, self.c)

    def solve(self, rhs):
        return linalg.solve(self.normal, rhs, assume_a="pos")

    def matvec(self, v):
        return self.normal @ v

    def without(self, fixed):
        at = np.flatnonzero(fixed)
        normal, gradient = self.normal.copy(), self.gradient.copy()
        normal[at], normal[:, at], gradient[at] = 0.0, 0.0, 0.0
        return _Dense(normal, gradient, self.c)

    def is_finite(self):
        return bool(np.isfinite(self.normal).all() and np.isfinite(self.gradient).all())

    def finite(self, bound):
        return _Dense(np.nan_to_num(self.normal, nan=0.0, posinf=bound, neginf=-bound),
                      np.nan_to_num(self.gradient, nan=0.0, posinf=bound, neginf=-bound), self.c)

    def pseudo_gain(self, rcond):
        values, vectors = np.linalg.eigh(self.normal)
        keep = values > rcond * max(values.max(initial=0.0), np.finfo(float).tiny)
        projected = vectors[:, keep].T @ self.gradient
        return float(projected @ (projected / values[keep]))

    def basis_free_inverse(self, similarity, fixed):
        # the fixed parameters' rows left out (main floored their zero eigenvalues, which
        # amplified the rounding of the other eigenvectors ~1e15 times: 1e-2 relative errors)
        free = np.r_[~fixed, np.ones(self.normal.shape[0] - self.c, dtype=bool)]
        normal, similarity = self.normal[np.ix_(free, free)], similarity[free]
        size = normal.shape[0]
        complement = np.linalg.svd(np.eye(size) - similarity @ similarity.T)[0][
            :, :size - similarity.shape[1]]
        reduced = complement.T @ normal @ complement
        values, vectors = np.linalg.eigh(0.5 * (reduced + reduced.T))
        floor = np.finfo(float).eps * max(values.max(initial=0.0), np.finfo(float).tiny)
        full = complement @ ((vectors / np.maximum(values, floor)) @ vectors.T) @ complement.T
        covariance = np.zeros((self.c, self.c))
        covariance[np.ix_(~fixed, ~fixed)] = full[:int((~fixed).sum()), :int((~fixed).sum())]
        return covariance


def _dense_normal_equations(experiments, dt, R, *, A_c, C, B_c, delays, states, layout,
                            residuals, lines=False):
    """``J^T J``, ``J^T r`` from the whole Jacobian (samples x parameters)."""
    J = prediction_jacobian(experiments, dt, R, A_c=A_c, C=C, B_c=B_c, delays=delays,
                            states=states, layout=layout)
    ny = C.shape[0]
    if lines:
        parts, start = [], 0
        for X in states:
            T = X.shape[1]
            block = J[start:start + T * ny].reshape(T, ny, -1)
            Q = line_basis(T)
            parts.append((block - np.einsum("tk,ksa->tsa", Q, np.einsum("tk,tsa->ksa", Q, block))
                          ).reshape(T * ny, -1))
            start += T * ny
        J = np.vstack(parts)
    r = np.concatenate([part.ravel() for part in residuals])
    return _Dense(J.T @ J, J.T @ r, layout["x0"].start)


def _arrow(rng, c, E, n, null=None, rows=30):
    """A random arrow Jacobian: each experiment's rows touch the common columns and its own;
    ``J null = 0`` when given (size, k), its own columns adjusted (k <= n)."""
    J = np.zeros((E * rows, c + E * n))
    for e in range(E):
        common, own = rng.standard_normal((rows, c)), rng.standard_normal((rows, n))
        if null is not None:
            V_c, V_e = null[:c], null[c + e * n:c + (e + 1) * n]
            own -= (common @ V_c + own @ V_e) @ np.linalg.pinv(V_e)
        J[e * rows:(e + 1) * rows, :c] = common
        J[e * rows:(e + 1) * rows, c + e * n:c + (e + 1) * n] = own
    return J


@pytest.mark.parametrize("seed", range(6))
def test_arrow_algebra_equals_the_dense_algebra(seed):
    rng = np.random.default_rng(seed)
    c, E, n = int(rng.integers(3, 9)), int(rng.integers(1, 12)), int(rng.integers(1, 4))
    size = c + E * n
    # a fixed parameter (a held delay), and null directions with components on every initial
    # state but none on it (as a change of basis has)
    fixed = np.zeros(c, dtype=bool)
    fixed[rng.integers(0, c)] = True
    V = rng.standard_normal((size, min(2, n)))
    V[:c][fixed] = 0.0
    V = np.linalg.qr(V)[0]
    J, J_null = _arrow(rng, c, E, n), _arrow(rng, c, E, n, null=V)
    assert np.abs(J_null @ V).max() <= 1e-12 * np.abs(J_null).max()
    for JJ, similarity in ((J, np.zeros((size, 0))), (J_null, V)):
        normal, gradient = JJ.T @ JJ, JJ.T @ rng.standard_normal(JJ.shape[0])
        arrow = Arrow(normal[:c, :c].copy(),
                      np.stack([normal[:c, c + e * n:c + (e + 1) * n] for e in range(E)]),
                      np.stack([normal[c + e * n:c + (e + 1) * n, c + e * n:c + (e + 1) * n]
                                for e in range(E)]), gradient)
        dense = _Dense(normal, gradient, c)
        assert np.allclose(arrow.dense(), normal, rtol=0, atol=1e-13 * np.abs(normal).max())
        v = rng.standard_normal(size)
        assert np.allclose(arrow.matvec(v), normal @ v, rtol=1e-12, atol=1e-12)
        scale = np.sqrt(np.diag(normal))
        damped, reference = arrow.scaled(scale, 1e-3), dense.scaled(scale, 1e-3)
        assert np.allclose(damped.dense(), reference.normal, rtol=1e-13, atol=1e-13)
        step, expected = damped.solve(damped.gradient), reference.solve(reference.gradient)
        assert np.allclose(step, expected, rtol=1e-8, atol=1e-9 * np.abs(expected).max())
        gain = arrow.scaled(scale).pseudo_gain(RCOND)
        assert gain == pytest.approx(dense.scaled(scale).pseudo_gain(RCOND), rel=1e-8)
        held = arrow.without(fixed)
        covariance = held.basis_free_inverse(similarity, fixed)
        expected = _Dense(held.dense(), held.gradient, c).basis_free_inverse(similarity, fixed)
        assert np.allclose(covariance, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
        assert not covariance[fixed].any() and not covariance[:, fixed].any()


def test_a_matrix_that_is_not_positive_definite_is_refused_as_the_dense_solve():
    arrow = Arrow(np.eye(2), np.zeros((1, 2, 1)), -np.ones((1, 1, 1)), np.ones(3))
    with pytest.raises(linalg.LinAlgError):
        arrow.solve(arrow.gradient)
    with pytest.raises(linalg.LinAlgError):
        linalg.solve(arrow.dense(), arrow.gradient, assume_a="pos")


def _problem(seed, n, ny, m, E, offset):
    rng = np.random.default_rng(seed)
    dt = 0.5
    plant = DelayedPlant.from_continuous(random_state_matrix(rng, n, dt),
                                         rng.standard_normal((n, m)), rng.uniform(0.1, 1.4, m),
                                         dt, max_delay=3)
    C = rng.standard_normal((ny, n))
    lengths = rng.integers(80, 400, E) if E > 3 else rng.integers(600, 1500, E)
    Us = [random_excitation(m, int(K), rng=rng) for K in lengths]
    Ys = [C @ plant.simulate(rng.standard_normal(n), U)[:, :-1]
          + 0.05 * rng.standard_normal((ny, U.shape[1])) + (0.3 if offset else 0.0)
          for U in Us]
    return Ys, Us, dt


def _fit(Ys, Us, dt, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OutputDMDidc(max_delay=3, **options).fit(Ys, Us, dt=dt)
    return est, sorted(str(w.message) for w in caught)


@pytest.mark.parametrize("seed,n,ny,m,E,feedthrough,offset,detrend", [
    (0, 2, 1, 2, 1, False, False, None), (1, 2, 1, 2, 5, True, False, None),
    (2, 3, 2, 1, 12, False, True, None), (3, 1, 1, 1, 40, True, True, None),
    (4, 2, 2, 2, 3, False, False, None), (5, 2, 1, 1, 7, False, False, "linear")])
def test_fits_equal_the_dense_formulation(monkeypatch, seed, n, ny, m, E, feedthrough, offset,
                                          detrend):
    """Estimates, standard errors, intervals, the initial states and every warning (the
    order and delay checks refit) equal those of the dense normal equations and algebra."""
    Ys, Us, dt = _problem(seed, n, ny, m, E, offset)
    options = dict(order=n, feedthrough=feedthrough, offset=offset)
    if detrend:
        options = dict(order=n, detrend=detrend)
    est, said = _fit(Ys, Us, dt, **options)
    monkeypatch.setattr(refine_module, "normal_equations", _dense_normal_equations)
    dense, dense_said = _fit(Ys, Us, dt, **options)
    assert said == dense_said
    for name in ("delay", "eigenvalues_", "eigenvalue_se_", "delay_se_", "initial_states_",
                 "A_c", "B_c", "C"):
        ours, theirs = np.asarray(getattr(est, name)), np.asarray(getattr(dense, name))
        assert np.allclose(ours, theirs, rtol=1e-7, atol=1e-9 * max(np.abs(theirs).max(), 1e-300)
                           ), name
    assert est.refined_.rss == pytest.approx(dense.refined_.rss, rel=1e-9)
    assert np.allclose(est.delay_ci(), dense.delay_ci(), rtol=1e-7, atol=1e-9)
    assert np.allclose(est.refined_.covariance, dense.refined_.covariance, rtol=1e-6,
                       atol=1e-9 * np.abs(dense.refined_.covariance).max())


_FACTORIZATIONS = [(np.linalg, name) for name in ("eigh", "eigvalsh", "svd", "pinv", "inv",
                                                   "solve", "lstsq", "cholesky", "eig", "qr")]
_FACTORIZATIONS += [(linalg, name) for name in ("solve", "lstsq", "svd", "qr", "cho_factor",
                                                "eigh", "expm")]


def _largest_factorized(monkeypatch, Ys, Us, dt) -> tuple[int, int]:
    """The largest ``min(rows, columns)`` any factorization of a fit saw (its cost grows with
    the cube of that, times the rest linearly), and the largest array the fit returns."""
    seen = [0]
    for module, name in _FACTORIZATIONS:
        original = getattr(module, name)

        def counted(a, *args, _original=original, **kwargs):
            shape = np.shape(a)
            if len(shape) >= 2:
                seen[0] = max(seen[0], min(shape[-2:]))
            return _original(a, *args, **kwargs)
        monkeypatch.setattr(module, name, counted)
    est, _ = _fit(Ys, Us, dt, order=2)
    monkeypatch.undo()
    return seen[0], est.refined_.covariance.size


def test_no_factorization_grows_with_the_number_of_experiments(monkeypatch):
    """4 and 24 experiments of one plant: every factorization (eigen, singular value, Cholesky,
    inverse, solve) is of the same largest size, and so is the covariance (the dense
    formulation's grew by ``n`` per experiment: 8 -> 48 more rows)."""
    Ys, Us, dt = _problem(11, 2, 1, 1, 24, False)
    few = _largest_factorized(monkeypatch, Ys[:4], Us[:4], dt)
    many = _largest_factorized(monkeypatch, Ys, Us, dt)
    assert few == many


def test_an_exactly_flat_direction_gets_a_huge_variance_not_none():
    """Right or loud: a parameter the data do not touch at all (not a change of basis, not
    held) is reported as undetermined, never as known."""
    rng = np.random.default_rng(3)
    J = _arrow(rng, 4, 3, 2)
    J[:, 1] = 0.0                                                # parameter 1: no effect
    normal = J.T @ J
    arrow = Arrow(normal[:4, :4].copy(), np.stack([normal[:4, 4 + 2 * e:6 + 2 * e]
                                                   for e in range(3)]),
                  np.stack([normal[4 + 2 * e:6 + 2 * e, 4 + 2 * e:6 + 2 * e] for e in range(3)]),
                  np.zeros(10))
    covariance = arrow.basis_free_inverse(np.zeros((10, 0)), np.zeros(4, dtype=bool))
    others = np.delete(np.diag(covariance), 1)
    assert covariance[1, 1] > 1e10 * others.max()
