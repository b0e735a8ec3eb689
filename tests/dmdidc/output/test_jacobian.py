"""The output-error Jacobian equals finite differences of the predictions (random plants)."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.output.blocks import decaying_response
from dmdidc.output.jacobian import _reduction, normal_equations, prediction_jacobian
from dmdidc.output.refine import _layout, _predicted, _unpack, without_lines
from dmdidc.regression.propagation import impulse_response

DT, R = 0.5, 3


def _problem(seed: int, n: int, ny: int, m: int, E: int, feedthrough: bool, offset: bool,
             at_bound: bool = False, T: int = 200):
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((n, n))
    A_c -= (np.max(np.linalg.eigvals(A_c).real) + rng.uniform(0.1, 1.0)) * np.eye(n)
    delays = (rng.integers(0, R, m) + rng.uniform(0.1, 0.9, m)) * DT   # inside a period
    if at_bound:
        delays[0] = R * DT
    parts = [A_c, rng.standard_normal((ny, n)), rng.standard_normal((n, m)), delays,
             rng.standard_normal((E, n))]
    parts += [rng.standard_normal((ny, m))] if feedthrough else []
    parts += [rng.standard_normal(ny)] if offset else []
    experiments = [(np.zeros((ny, T)), rng.standard_normal((m, T))) for _ in range(E)]
    layout = _layout(n, ny, m, E, feedthrough, offset)
    return np.concatenate([np.ravel(p) for p in parts]), layout, experiments


def _predictions(theta, layout, experiments, shape):
    outputs, states = _predicted(*_unpack(theta, layout, *shape), experiments, DT, R)
    return np.concatenate([y.ravel() for y in outputs]), states


def _relative_errors(theta, layout, experiments, shape, one_sided=()):
    _, states = _predictions(theta, layout, experiments, shape)
    A_c, C, B_c, delays, *_ = _unpack(theta, layout, *shape)
    J = prediction_jacobian(experiments, DT, R, A_c=A_c, C=C, B_c=B_c, delays=delays,
                            states=states, layout=layout)
    numeric = np.empty_like(J)
    for p in range(theta.size):
        step = 1e-6 * max(1.0, abs(theta[p]))
        low, high = theta.copy(), theta.copy()
        low[p] -= step
        if p in one_sided:               # the upper delay bound: from below only
            numeric[:, p] = (_predictions(theta, layout, experiments, shape)[0]
                             - _predictions(low, layout, experiments, shape)[0]) / step
            continue
        high[p] += step
        numeric[:, p] = (_predictions(high, layout, experiments, shape)[0]
                         - _predictions(low, layout, experiments, shape)[0]) / (2 * step)
    scale = np.maximum(np.linalg.norm(numeric, axis=0), 1e-12)
    return np.linalg.norm(J - numeric, axis=0) / scale


@pytest.mark.parametrize("seed,n,ny,m,E,feedthrough,offset", [
    (0, 3, 2, 2, 1, False, True), (1, 2, 1, 1, 1, False, False), (2, 4, 2, 3, 2, True, True),
    (3, 3, 3, 1, 2, True, False), (4, 1, 2, 2, 1, False, True), (5, 5, 2, 2, 1, True, True)])
def test_jacobian_matches_central_differences(seed, n, ny, m, E, feedthrough, offset):
    theta, layout, experiments = _problem(seed, n, ny, m, E, feedthrough, offset)
    errors = _relative_errors(theta, layout, experiments, (n, ny, m, E))
    assert errors.max() < 1e-5, f"worst column {int(np.argmax(errors))}: {errors.max():.2e}"


@pytest.mark.parametrize("seed", range(3))
def test_a_delay_at_the_upper_bound_is_differentiated_from_below(seed):
    n, ny, m, E = 3, 2, 2, 1
    theta, layout, experiments = _problem(seed, n, ny, m, E, False, True, at_bound=True)
    column = layout["delays"].start
    errors = _relative_errors(theta, layout, experiments, (n, ny, m, E), one_sided=(column,))
    assert errors[column] < 1e-3                   # one-sided difference: first order in the step
    assert np.delete(errors, column).max() < 1e-5



@pytest.mark.parametrize("seed,n,ny,m,E,feedthrough,offset", [
    (10, 3, 2, 2, 1, False, True), (11, 2, 1, 1, 2, True, True), (12, 4, 3, 2, 2, True, False)])
def test_normal_equations_are_those_of_the_jacobian(seed, n, ny, m, E, feedthrough, offset):
    theta, layout, experiments = _problem(seed, n, ny, m, E, feedthrough, offset)
    _, states = _predictions(theta, layout, experiments, (n, ny, m, E))
    A_c, C, B_c, delays, *_ = _unpack(theta, layout, n, ny, m, E)
    parts = dict(A_c=A_c, C=C, B_c=B_c, delays=delays, states=states, layout=layout)
    J = prediction_jacobian(experiments, DT, R, **parts)
    r = np.random.default_rng(seed).standard_normal(J.shape[0])
    rows = np.cumsum([X.shape[1] for X in states])[:-1]
    normal, gradient = normal_equations(experiments, DT, R, **parts,
                                        residuals=np.split(r.reshape(-1, ny), rows))
    scale = np.sqrt(np.outer(np.diag(J.T @ J), np.diag(J.T @ J)))
    assert np.all(np.abs(normal - J.T @ J) <= 1e-12 * scale)
    assert np.allclose(gradient, J.T @ r, rtol=1e-10, atol=1e-10 * np.abs(J.T @ r).max())


@pytest.mark.parametrize("seed,n,ny,m,E", [(13, 3, 2, 2, 1), (14, 2, 1, 1, 3)])
def test_projected_normal_equations_are_those_of_the_projected_jacobian(seed, n, ny, m, E):
    """``lines=True`` (the trends concentrated out): the normal equations of the Jacobian
    whose columns lost each experiment's and output's least-squares line."""
    theta, layout, experiments = _problem(seed, n, ny, m, E, False, False)
    _, states = _predictions(theta, layout, experiments, (n, ny, m, E))
    A_c, C, B_c, delays, *_ = _unpack(theta, layout, n, ny, m, E)
    parts = dict(A_c=A_c, C=C, B_c=B_c, delays=delays, states=states, layout=layout)
    J = prediction_jacobian(experiments, DT, R, **parts)
    rows = np.cumsum([X.shape[1] for X in states])[:-1]
    r = np.concatenate([part.ravel() for part in without_lines(np.split(
        np.random.default_rng(seed).standard_normal((J.shape[0], 1)).reshape(-1, ny), rows))])
    projected = []
    for block in np.split(J, rows * ny):               # per experiment, rows k ny + a
        T = block.shape[0] // ny
        lines = np.stack([np.ones(T), np.arange(T)], axis=1)
        fitted = block.reshape(T, ny, -1)
        for a in range(ny):
            column = fitted[:, a]
            fitted[:, a] = column - lines @ np.linalg.lstsq(lines, column, rcond=None)[0]
        projected.append(fitted.reshape(T * ny, -1))
    J = np.vstack(projected)
    normal, gradient = normal_equations(experiments, DT, R, **parts, lines=True,
                                        residuals=np.split(r.reshape(-1, ny), rows))
    scale = np.sqrt(np.outer(np.diag(J.T @ J), np.diag(J.T @ J)))
    assert np.all(np.abs(normal - J.T @ J) <= 1e-10 * scale)
    assert np.allclose(gradient, J.T @ r, rtol=1e-10, atol=1e-10 * np.abs(J.T @ r).max())


@pytest.mark.parametrize("seed", range(5))
def test_a_decaying_response_is_the_impulse_response_cut_below_rounding(seed):
    rng = np.random.default_rng(seed)
    n, ny = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    vectors = rng.standard_normal((n, n))
    A = vectors @ np.diag(rng.uniform(0.3, 0.95, n)) @ np.linalg.inv(vectors)   # stable
    C = rng.standard_normal((ny, n))
    h, kept = decaying_response(A, C, 3000)
    full = impulse_response(A, C, 3000)
    assert kept < 3000 and not h[kept:].any()                  # the tail is exactly zero
    assert np.abs(h - full).max() <= 1e-20 * np.abs(full).max()
    marginal, kept = decaying_response(np.eye(n), C, 500)      # nothing decays: all kept
    assert kept == 500 and np.array_equal(marginal, impulse_response(np.eye(n), C, 500))


def test_a_growing_weakly_observed_mode_is_not_cut_off():
    # A mode that does not decay, observed at 1e-30, is negligible at first and dominant later:
    # the response must not be truncated where its early samples are small (found in review:
    # diag(0.5, 1.02) kept 67 of 5000 samples, 100 % wrong at the peak).
    A, C = np.diag([0.5, 1.02]), np.array([[1.0, 1e-30]])
    h, kept = decaying_response(A, C, 5000)
    full = impulse_response(A, C, 5000)
    assert kept == 5000
    np.testing.assert_allclose(h, full, rtol=1e-12, atol=0)


@pytest.mark.parametrize("seed", range(6))
def test_only_the_directions_outside_the_commutators_range_are_convolved(seed):
    """Distinct eigenvalues: n directions of A_c (not n^2); equal ones (A_c = -I, every
    direction a change of basis' null) or a non-finite trial: all n^2; always J = J_r expand."""
    rng = np.random.default_rng(seed)
    n, ny, m, E = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4)), 1
    theta, layout, _ = _problem(seed, n, ny, m, E, False, True)
    A_c, C, B_c, _, x0, *_ = _unpack(theta, layout, n, ny, m, E)
    for A, count in ((A_c, n), (-np.eye(n), n * n), (np.full((n, n), np.inf), n * n)):
        with np.errstate(invalid="ignore"):              # inf * 0 in the wild trial's map
            directions, reduced, expand = _reduction(A, C, B_c, x0, layout)
        assert len(directions) == count and reduced["size"] == layout["size"] - n * n + count
        assert expand.shape == (reduced["size"], layout["size"])
        assert np.isfinite(expand).all()


def _clustered(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """``A_c`` with repeated, nearly repeated or defective eigenvalues in a random basis."""
    vectors = rng.standard_normal((n, n))
    core = {"repeated": -0.5 * np.eye(n),                  # a scalar matrix up to rounding
            "near": np.diag(-0.5 - 1e-6 * np.arange(n)),
            "jordan": -0.5 * np.eye(n) + np.eye(n, k=1)}[kind]
    return vectors @ core @ np.linalg.inv(vectors)


@pytest.mark.parametrize("kind", ["repeated", "near", "jordan"])
@pytest.mark.parametrize("seed", range(3))
def test_the_jacobian_of_clustered_eigenvalues_matches_central_differences(kind, seed):
    """Found in review: ``V (lambda I) V^-1`` (every commutator singular value a rounding)
    took rounding for the commutator's range, and the recovered ``A_c`` columns were wrong by
    4-38 times their size (the covariance with them)."""
    n, ny, m, E = 2 + seed, 2, 2, 1
    theta, layout, experiments = _problem(seed, n, ny, m, E, seed % 2 == 0, seed < 2)
    theta[layout["A_c"]] = _clustered(kind, np.random.default_rng(seed + 100), n).ravel()
    errors = _relative_errors(theta, layout, experiments, (n, ny, m, E))
    assert errors.max() < 1e-5, f"worst column {int(np.argmax(errors))}: {errors.max():.2e}"


@pytest.mark.parametrize("seed,n,ny,m", [(20, 3, 2, 2), (21, 4, 1, 3), (22, 1, 2, 1)])
def test_modal_responses_equal_the_fft_convolution(seed, n, ny, m):
    """The sensitivity responses mode by mode (well-conditioned eigenvectors) and by the FFT
    convolution with ``C A_d^t`` are the same outputs to rounding (complex and real modes)."""
    from dmdidc.output.blocks import modes
    from dmdidc.output.jacobian import _modal_responses, _responses
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((n, n))
    A_c -= (np.max(np.linalg.eigvals(A_c).real) + 0.2) * np.eye(n)
    C = rng.standard_normal((ny, n))
    z, M = rng.standard_normal((300, n + 2 * m)), rng.standard_normal((n + 2 * m, n, 5))
    found = modes(A_c, 1e4)
    assert found is not None
    h, length = decaying_response(np.real(found[1] @ np.diag(np.exp(found[0] * DT))
                                          @ found[2]), C, 300)
    fft_way, modal = _responses(h, length, z, M), _modal_responses(found, DT, C, z, M)
    assert modal.shape == fft_way.shape == (ny, 5, 300)
    assert np.abs(modal - fft_way).max() <= 1e-10 * np.abs(fft_way).max()



@pytest.mark.parametrize("pole", [0.6 + 0.3j, 0.999 * np.exp(0.01j), -0.5 + 0.8j])
def test_a_complex_pole_filtered_in_real_arithmetic_equals_the_complex_recursion(pole):
    """The second-order real recursion of a complex pole and its conjugate gives the complex
    first-order recursion's real and imaginary parts (a slow, nearly real pole included)."""
    from scipy import signal

    from dmdidc.output.jacobian import _pair_filtered
    x = np.random.default_rng(5).standard_normal((3, 4000))
    complex_way = signal.lfilter([0.0, 1.0], [1.0, -pole], x, axis=1)
    real, imag = _pair_filtered(pole, x)
    scale = np.abs(complex_way).max()
    assert np.abs(real - complex_way.real).max() <= 1e-11 * scale
    assert np.abs(imag - complex_way.imag).max() <= 1e-11 * scale

def test_jacobian_of_a_nearly_defective_plant_uses_the_convolution_and_is_exact():
    """Eigenvectors too ill-conditioned for the modal form (a near Jordan block): the
    sensitivities take the FFT convolution, and the Jacobian still equals central
    differences."""
    from dmdidc.output.blocks import modes
    from dmdidc.output.jacobian import MODAL_COND
    n, ny, m, E = 2, 2, 2, 1
    theta, layout, experiments = _problem(7, n, ny, m, E, False, True)
    A_c = np.array([[-1.0, 1.0], [0.0, -1.0 - 1e-5]])
    assert modes(A_c, MODAL_COND) is None
    theta[layout["A_c"]] = A_c.ravel()
    errors = _relative_errors(theta, layout, experiments, (n, ny, m, E))
    assert errors.max() < 1e-5, f"worst column {int(np.argmax(errors))}: {errors.max():.2e}"
