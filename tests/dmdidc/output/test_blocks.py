"""The fast paths of the output identification equal their plain definitions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import linalg

from dmdidc.output.blocks import _CHUNK, hold_family, lag_moments, modes, spectral_family
from dmdidc.output.subspace import stacked_data
from simulations.studies.data_kinds import random_state_matrix


@pytest.mark.parametrize("seed", range(8))
def test_spectral_hold_blocks_equal_the_exponentials(seed):
    rng = np.random.default_rng(seed)
    n, dt = int(rng.integers(1, 6)), 0.5
    A_c = random_state_matrix(rng, n, dt)
    delays = np.r_[np.linspace(0.0, 2.0, 33), rng.uniform(0.0, 2.0, 7)]
    fast, exact = spectral_family(A_c, dt)(delays), hold_family(A_c, dt, delays)
    assert np.array_equal(fast[0], exact[0])
    scale = np.max(np.abs(exact[1]))
    for a, b in zip(fast[1:], exact[1:], strict=True):
        assert np.max(np.abs(a - b)) <= 1e-9 * scale


def test_a_defective_plant_takes_the_exponentials():
    A_c = np.array([[-1.0, 1.0], [0.0, -1.0]])          # a Jordan block: no eigenbasis
    delays = np.linspace(0.0, 1.5, 13)
    fast, exact = spectral_family(A_c, 0.5)(delays), hold_family(A_c, 0.5, delays)
    for a, b in zip(fast, exact, strict=True):
        assert np.array_equal(a, b)


def _explicit_regressors(Y, U, A, C, R, e, E, feedthrough, offset):
    """The lag regression by simulating every regressor column sample by sample."""
    (ny, n), (m, K) = C.shape, U.shape
    T = K - R
    columns = (R + 1) * m * n
    drive = np.zeros((T, n, columns))
    for j in range(R + 1):
        for i in range(m):
            for c in range(n):
                drive[:, c, (j * m + i) * n + c] = U[i, R - j:K - j]
    x = np.zeros((n, columns))
    lags = np.zeros((T, ny, columns))
    for k in range(T):
        lags[k] = C @ x
        x = A @ x + drive[k]
    initial = np.stack([C @ np.linalg.matrix_power(A, k) for k in range(T)])
    parts = [lags, np.zeros((T, ny, E * n))]
    parts[1][:, :, e * n:(e + 1) * n] = initial
    if feedthrough:
        parts.append(np.einsum("ab,kt->tabk", np.eye(ny), U[:, R:]).reshape(T, ny, ny * m))
    if offset:
        parts.append(np.broadcast_to(np.eye(ny), (T, ny, ny)))
    return np.concatenate(parts, axis=2).reshape(T * ny, -1), Y[:, R:].T.ravel()


@pytest.mark.parametrize("seed,feedthrough,offset", [(0, False, True), (1, True, False),
                                                     (2, True, True)])
def test_lag_moments_equal_the_explicit_regression(seed, feedthrough, offset):
    """Several experiments, one longer than a chunk: the moments of the simulated regressors."""
    rng = np.random.default_rng(seed)
    n, m, ny, R = 2, 2, 2, 3
    A = linalg.expm(random_state_matrix(rng, n, 0.5) * 0.5)
    C = rng.standard_normal((ny, n))
    experiments = [(rng.standard_normal((ny, K)), rng.standard_normal((m, K)))
                   for K in (_CHUNK + 300, 400)]
    moments = lag_moments(experiments, A, C, R, feedthrough=feedthrough, offset=offset)
    rows = [_explicit_regressors(Y, U, A, C, R, e, 2, feedthrough, offset)
            for e, (Y, U) in enumerate(experiments)]
    Phi, target = np.vstack([r[0] for r in rows]), np.concatenate([r[1] for r in rows])
    scale = np.max(np.abs(Phi.T @ Phi))
    assert np.max(np.abs(moments.normal - Phi.T @ Phi)) <= 1e-10 * scale
    assert np.max(np.abs(moments.moment - Phi.T @ target)) <= 1e-10 * scale
    assert moments.rows == target.size


def test_stacked_windows_are_the_windows_of_every_experiment():
    rng = np.random.default_rng(3)
    ny, m, R, f = 2, 1, 2, 3
    experiments = [(rng.standard_normal((ny, K)), rng.standard_normal((m, K)))
                   for K in (40, 5, 25)]                    # the middle one is too short
    Z, sizes = stacked_data(experiments, R, f, offset=True)
    columns = []
    for Y, U in experiments:
        for k in range(f + R, Y.shape[1] - f + 1):
            columns.append(np.concatenate(
                [U[:, k - R:k + f].T.ravel(), [1.0], Y[:, k - f:k].T.ravel(),
                 U[:, k - f - R:k - R].T.ravel(), Y[:, k:k + f].T.ravel()]))
    assert sizes == ((f + R) * m + 1, f * (ny + m), f * ny)
    assert np.array_equal(Z, np.array(columns).T)


def test_the_refinement_residuals_are_the_simulated_residuals():
    """The residual checks read the search's last residuals instead of simulating again."""
    from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
    from dmdidc.output.noise import output_residuals
    rng = np.random.default_rng(4)
    plant = DelayedPlant.from_continuous(random_state_matrix(rng, 2, 0.5),
                                         rng.standard_normal((2, 1)), [0.7], 0.5, max_delay=3)
    U = [random_excitation(1, K, rng=rng) for K in (900, 700)]
    Y = [rng.standard_normal((1, 2)) @ plant.simulate(np.zeros(2), u)[:, :-1]
         + 0.05 * rng.standard_normal((1, u.shape[1])) for u in U]
    with warnings.catch_warnings():      # the fit's quality is not the point here
        warnings.simplefilter("ignore")
        est = OutputDMDidc(max_delay=3).fit(Y, U, dt=0.5)
    # refined_ is in the fit's units: outputs over scale_, inputs over input_scale_
    scaled = [(y / est.scale_[:, None], u / est.input_scale_[:, None])
              for y, u in zip(Y, U, strict=True)]
    simulated = output_residuals(scaled, est.refined_, 0.5, 3)
    for a, b in zip(est.refined_.residuals, simulated, strict=True):
        assert a.shape == b.shape and np.max(np.abs(a - b)) <= 1e-9 * np.max(np.abs(b))


@pytest.mark.parametrize("seed", range(4))
def test_triangular_factor_is_the_qr_factor_up_to_row_signs(seed):
    """Well-conditioned tall data take the Gram's Cholesky factor, rank-deficient (exact) and
    ill-conditioned data the Householder QR; either way ``R^T R = A^T A`` to rounding and
    ``|R|`` is the QR's (row signs are free)."""
    from dmdidc.output import subspace

    rng = np.random.default_rng(seed)
    noisy = rng.standard_normal((3000, 40)) @ (np.eye(40) + 0.3 * rng.standard_normal((40, 40)))
    exact = noisy.copy()
    exact[:, -5:] = exact[:, :5] @ rng.standard_normal((5, 5))    # dependent columns
    weak = noisy.copy()
    weak[:, -1] = weak[:, 0] + 1e-7 * rng.standard_normal(3000)     # cond ~ 1e8
    for A in (noisy, exact, weak):
        R = subspace.triangular_factor(A.copy())
        householder = np.triu(linalg.qr(A, mode="r")[0][:40])
        assert np.allclose(R, np.triu(R))
        np.testing.assert_allclose(R.T @ R, A.T @ A, atol=1e-12 * np.sum(A ** 2))
        np.testing.assert_allclose(np.abs(R), np.abs(householder),
                                   atol=1e-10 * np.abs(householder).max())
    # the Gram's factor where it is well conditioned (for ``weak`` its last entry would be
    # off by about its own size, beyond the tolerance above: the QR is taken)
    gram_factor = linalg.cholesky(noisy.T @ noisy, lower=False)
    assert np.array_equal(subspace.triangular_factor(noisy.copy()), gram_factor)


def test_modes_remembered_equal_a_fresh_decomposition_at_any_cond():
    """The remembered eigendecompositions are those of the matrix asked about, whatever
    condition bound was asked before, and cannot be changed by a caller."""
    rng = np.random.default_rng(4)
    A = random_state_matrix(rng, 3, 0.5)
    # nearly defective: eigenvector condition between the two bounds asked for
    close = np.array([[-1.0, 1.0], [0.0, -1.0 - 1e-5]])
    for matrix in (A, close):
        values, vectors = np.linalg.eig(matrix)
        condition = np.linalg.cond(vectors)
        low, high = condition / 10, condition * 10
        assert modes(matrix, low) is None
        for _ in range(2):
            got = modes(matrix, high)
            assert got is not None
            assert np.array_equal(got[0], values) and np.array_equal(got[1], vectors)
            assert np.array_equal(got[2], np.linalg.inv(vectors))
            assert not any(part.flags.writeable for part in got)
        assert modes(matrix, low) is None
    other = A + 1e-3
    assert np.array_equal(modes(other, np.inf)[0], np.linalg.eig(other)[0])


def test_profile_minima_finds_wells_narrower_than_the_grid():
    """Trial plant 900 (2 states, 1 sensor, noise-free) has two delays that fit exactly, the
    true 1.330 s in a well whose grid points lie 0.5 above it.  Every local minimum of a
    1/4096-period grid is found (to two of its steps, no higher), both exact delays to the
    profile's rounding; a skipped interval loses only its own wells."""
    from dmdidc import random_excitation
    from dmdidc.output.blocks import PROFILE_CELL, delay_profile, profile_minima
    from simulations.studies.data_kinds import random_plant

    plant = random_plant(900, n_states=2, n_inputs=1)
    dt, R = plant.dt, 3
    C = np.random.default_rng([0, 2]).standard_normal((1, 2))
    U = random_excitation(1, 2000, rng=0)
    Y = C @ plant.simulate(np.zeros(2), U)[:, :-1]
    moments = lag_moments([(Y, U)], linalg.expm(plant.A_c * dt), C, R)
    minima, values, rss = profile_minima(moments, plant.A_c, dt, np.zeros(1), 0)
    assert np.all(np.diff(minima) > 0)
    np.testing.assert_allclose(rss(minima), values)
    fine = np.linspace(0.0, R * dt, R * 4096 + 1)
    on_fine = rss(fine)
    lower = np.r_[True, on_fine[1:] < on_fine[:-1]] & np.r_[on_fine[:-1] <= on_fine[1:], True]
    for r, value in zip(fine[lower], on_fine[lower], strict=True):
        near = np.abs(minima - r) <= 2 * dt / 4096
        assert near.any() and values[near].min() <= value + 1e-12 * moments.energy, r
    exact = values <= 1e-10 * moments.energy
    np.testing.assert_allclose(minima[exact], [1.0327, plant.delay[0]], atol=1e-4)
    grid, on_grid = delay_profile(moments, plant.A_c, dt, np.zeros(1), 0)
    assert np.allclose(np.diff(grid), PROFILE_CELL * dt)
    beside = np.abs(grid - plant.delay[0]) < PROFILE_CELL * dt
    assert on_grid[beside].min() > 1e-4 * moments.energy      # the grid alone misses it
    kept, _, _ = profile_minima(moments, plant.A_c, dt, np.zeros(1), 0, skip=(1.2, 1.45))
    assert not np.any(np.abs(kept - plant.delay[0]) < 1e-3)
    np.testing.assert_array_equal(kept, minima[(minima < 1.2) | (minima > 1.45)])
