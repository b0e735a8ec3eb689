"""Continuous-model and delay recovery (dmdidc.inference.recovery, eqs. 9.66-9.69)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.linalg import expm

from dmdidc import (
    ContinuousModelWarning,
    DelayedPlant,
    DimensionError,
    DMDidc,
    LogarithmError,
    delay_blocks,
    first_active_blocks,
    random_excitation,
    recover_continuous,
)
from dmdidc.inference.recovery import continuous_state_matrix, recover_channel


def rotation_plant(omega, dt, damping=0.1):
    return np.array([[-damping, omega], [-omega, -damping]])


@pytest.fixture(scope="module")
def plant():
    rng = np.random.default_rng(0)
    A_c = rng.standard_normal((3, 3)) * 0.5 - 0.5 * np.eye(3)
    B_c = rng.standard_normal((3, 2))
    return A_c, B_c


# ---------------------------------------------------------------------- logarithm failures
def test_negative_real_eigenvalue_raises():
    with pytest.raises(LogarithmError, match=r"eigenvalue -0\.5 on the negative real axis"):
        recover_continuous(np.diag([-0.5, 0.3]), np.ones((1, 2, 1)), 1.0)


def test_mode_exactly_at_nyquist_raises():
    T = 0.5
    A_c = rotation_plant(np.pi / T, T, damping=0.0)        # A_d = expm(A_c T) = -I
    A_d = expm(A_c * T)
    np.testing.assert_allclose(A_d, -np.eye(2), atol=1e-14)
    with pytest.raises(LogarithmError, match="Nyquist"):
        continuous_state_matrix(A_d, T)
    # Damped mode at Nyquist: eigenvalues -e^{-0.1 T} (double) on the negative real axis.
    with pytest.raises(LogarithmError, match="negative real axis"):
        continuous_state_matrix(expm(rotation_plant(np.pi / T, T) * T), T)


@pytest.mark.parametrize("A_d", [np.diag([0.0, 0.5]), np.diag([1e-14, 0.5]),
                                 np.array([[0.0, 1.0], [0.0, 0.0]])])
def test_singular_a_d_raises(A_d):
    with pytest.raises(LogarithmError, match="at zero"):
        continuous_state_matrix(A_d, 1.0)


def test_a_nearly_singular_defective_a_d_raises_a_logarithm_error_naming_max_delay():
    # OutputDMDidc(max_delay=0)'s subspace dynamics of a plant delayed by 2.3 periods: three
    # eigenvalues about 1e-5 of the spectral radius (the inputs in flight); scipy's logm
    # overflowed on it and a bare "array must not contain infs or NaNs" ValueError escaped
    A_d = np.array([
        [0.1465600232604216, 0.3357894525968496, -0.4159813502832521, 0.00364489988128529,
         0.12795883122297252],
        [-0.3512744032937914, -0.11134320541236951, 0.5592086652791992, -0.6328278401423988,
         0.06914580800643244],
        [0.08583882443474618, -0.8599337198037915, -0.24277875954207886, 0.02518071212471729,
         0.41488391232245025],
        [-0.44510343988946954, -0.29383650354026275, 0.057667016582777286, 0.4763767281377372,
         -0.6306287818011161],
        [0.6332053864291101, -0.05087029848015799, 0.6409080492077663, 0.3658924532388098,
         0.037655663125870154]])
    with pytest.raises(LogarithmError, match="increase max_delay"):
        continuous_state_matrix(A_d, 0.5)


def test_estimator_without_real_logarithm_keeps_discrete_model():
    # x_{k+1} = diag(-0.5, 0.3) x_k + B u_{k-1}: valid discrete data, no continuous plant.
    true = DelayedPlant(np.diag([-0.5, 0.3]), np.array([np.zeros((2, 1)), [[1.0], [2.0]]]), 1.0)
    U = random_excitation(1, 50, rng=0)
    X = true.simulate(np.zeros(2), U)
    with pytest.warns(ContinuousModelWarning, match="no continuous-time model.*negative real"):
        est = DMDidc(max_delay=1).fit(X, U, dt=1.0)
    np.testing.assert_allclose(est.B_blocks, true.B_blocks, atol=1e-12)
    np.testing.assert_allclose(est.predict(np.ones(2), U), true.simulate(np.ones(2), U),
                               atol=1e-10)
    assert not est.model_.has_continuous
    for name in ("A_c", "B_c", "delay"):
        with pytest.raises(LogarithmError, match="negative real axis"):
            getattr(est, name)


def test_jordan_block_has_real_logarithm():
    A_d = np.array([[1.0, 1.0], [0.0, 1.0]])
    A_c = continuous_state_matrix(A_d, 2.0)
    np.testing.assert_allclose(A_c, [[0.0, 0.5], [0.0, 0.0]], atol=1e-14)


# ---------------------------------------------------------------------- Nyquist and aliasing
def test_near_nyquist_warns_but_recovers():
    T = 0.5
    A_c = rotation_plant(3.12 / T, T)                       # 3.12 rad per period (pi - 0.02)
    with pytest.warns(ContinuousModelWarning, match="close to the Nyquist frequency"):
        recovered = continuous_state_matrix(expm(A_c * T), T)
    np.testing.assert_allclose(recovered, A_c, atol=1e-9)


def test_no_warning_well_below_nyquist():
    T = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        continuous_state_matrix(expm(rotation_plant(2.5 / T, T) * T), T)


def test_frequency_beyond_nyquist_gives_alias():
    # 4 rad per period > pi: the data cannot tell it from its alias 4 - 2 pi rad per period.
    T = 0.5
    A_c = rotation_plant(4.0 / T, T)
    true = DelayedPlant.from_continuous(A_c, np.array([[1.0], [0.5]]), delay=0.0, dt=T)
    U = random_excitation(1, 60, rng=1)
    est = DMDidc(max_delay=0).fit(true.simulate(np.zeros(2), U), U, dt=T)
    alias = rotation_plant((4.0 - 2 * np.pi) / T, T)
    assert np.max(np.abs(est.A_c - A_c)) > 1.0                 # not the true A_c ...
    np.testing.assert_allclose(est.A_c, alias, atol=1e-9)      # ... but its principal alias
    np.testing.assert_allclose(expm(est.A_c * T), expm(A_c * T), atol=1e-12)
    # The alias model reproduces the sampled data exactly.
    again = DelayedPlant.from_continuous(est.A_c, est.B_c, delay=est.delay, dt=T)
    np.testing.assert_allclose(again.B_blocks, true.B_blocks, atol=1e-10)


# ---------------------------------------------------------------------- delay fraction
@pytest.mark.parametrize("fraction", [0.0, 1e-3, 0.02, 0.5, 0.98, 0.999])
@pytest.mark.parametrize("whole", [0, 2])
def test_fraction_to_full_precision_from_exact_blocks(plant, whole, fraction):
    A_c, B_c = plant
    dt = 0.4
    delay = np.array([(whole + fraction) * dt, (1 + 0.37) * dt])
    A_d, blocks = delay_blocks(A_c, B_c, delay, dt, max_delay=4)
    A_rec, B_rec, d = recover_continuous(A_d, blocks, dt)
    assert abs(d[0] - delay[0]) <= 1e-9 * dt
    assert abs(d[1] - delay[1]) <= 1e-9 * dt
    np.testing.assert_allclose(A_rec, A_c, atol=1e-12)
    np.testing.assert_allclose(B_rec, B_c, atol=1e-10)
    if fraction == 0.0:
        assert d[0] == whole * dt                       # exactly, not w + 1 - 1e-16


@pytest.mark.parametrize("fraction", [0.0, 1e-3, 0.5, 0.999])
def test_fraction_to_full_precision_through_estimator(plant, fraction):
    # Identified (not exact) blocks: the recovery must still be at rounding level.
    A_c, B_c = plant
    dt = 0.4
    delay = np.array([(1 + fraction) * dt, 0.0])
    true = DelayedPlant.from_continuous(A_c, B_c, delay=delay, dt=dt, max_delay=3)
    U = random_excitation(2, 120, rng=5)
    est = DMDidc(estimator="ls", max_delay=3, method="qr").fit(true.simulate(np.zeros(3), U), U,
                                                               dt=dt)
    err = np.abs(est.delay - delay) / dt
    assert np.all(err <= 1e-9), err                    # measured ~1e-14
    np.testing.assert_allclose(est.B_c, B_c, atol=1e-9)


@pytest.mark.parametrize("marked_first", [1, 2])
def test_fraction_just_below_a_whole_period_is_recovered(plant, marked_first):
    # p = 1 - 1e-8: B^(1) is 1e-8 relative.  Whether it is marked active (the exact non-zero
    # rule) or not (a noise-aware decision), the pair starting one block earlier explains the
    # blocks better and is chosen.
    A_c, B_c = plant
    dt = 0.4
    delay = np.array([(2 - 1e-8) * dt, 0.5 * dt])
    A_d, blocks = delay_blocks(A_c, B_c, delay, dt, max_delay=3)
    active = np.any(blocks != 0, axis=1)
    active[:marked_first, 0] = False
    _, _, d = recover_continuous(A_d, blocks, dt, active=active)
    np.testing.assert_allclose(d, delay, rtol=0, atol=1e-12 * dt)


def test_a_pair_that_keeps_the_significant_blocks_wins(plant):
    # Delays a little short of 2 T: B^(1) = Gamma(0.05..0.12 T) b is small.  Noise about twice
    # B^(1) makes the pair 1, 2 leave a larger residual than discarding B^(1) (the pair 2, 3):
    # by misfit alone the delay reads 2.00 T with B^(1) set to zero.  When the test found
    # B^(1) significant, the pair that keeps it wins and every delay is right (within 0.1 T:
    # the noise still moves b, fitted to B^(1) + B^(2)); on exact blocks nothing changes.
    A_c, B_c = plant
    dt = 1.0
    A_c_hat = continuous_state_matrix(expm(A_c * dt), dt)
    significant = np.array([False, True, True, False, False])
    discarded = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        delay = 2.0 - rng.uniform(0.05, 0.12)
        _, blocks = delay_blocks(A_c, B_c[:, :1], np.array([delay]), dt, max_delay=4)
        columns = blocks[:, :, 0].copy()
        noise = np.cross(columns[1], columns[2])
        columns[1] += rng.uniform(1.7, 2.1) * np.linalg.norm(columns[1]) * noise / np.linalg.norm(
            noise)
        _, by_misfit = recover_channel(A_c_hat, columns, dt, 1)
        _, keeping = recover_channel(A_c_hat, columns, dt, 1, significant=significant)
        discarded += by_misfit == 2.0
        assert abs(keeping - delay) < 0.1, (seed, keeping, delay)
        _, exact = recover_channel(A_c_hat, blocks[:, :, 0], dt, 1, significant=significant)
        assert abs(exact - delay) < 1e-9
    assert discarded >= 8           # measured: 10 of 12 read 2.00 T by misfit alone
    # every candidate zeroes a significant block (B^(0) and B^(3) with the delay at 1.9 T):
    # the misfit decides, as without the test's decision
    both_ends = np.array([True, True, True, True, False])
    assert recover_channel(A_c_hat, columns, dt, 0, significant=both_ends)[1] == pytest.approx(
        recover_channel(A_c_hat, columns, dt, 0)[1])


def test_first_active_blocks():
    active = np.array([[False, False, False], [True, False, False], [False, True, False],
                       [True, True, False]])
    np.testing.assert_array_equal(first_active_blocks(active), [1, 2, -1])


def test_silent_channel_reports_zero_delay():
    A_d = np.diag([0.5, 0.8])
    blocks = np.zeros((2, 2, 2))
    blocks[1, :, 0] = [1.0, 0.5]
    _, B_c, delay = recover_continuous(A_d, blocks, 1.0)
    assert delay[1] == 0.0 and np.all(B_c[:, 1] == 0.0)
    assert delay[0] == 1.0
    # an active mask overrides the non-zero rule: channel 0 declared silent
    _, B_c, delay = recover_continuous(A_d, blocks, 1.0, active=np.zeros((2, 2), bool))
    assert np.all(B_c == 0.0) and np.all(delay == 0.0)


def test_recover_continuous_names_a_wrong_shape():
    A_d, blocks = delay_blocks(np.array([[-1.0, 0.2], [0.0, -0.5]]), np.array([[1.0], [2.0]]),
                               np.array([1.3]), 0.5)
    with pytest.raises(DimensionError, match=r"B_blocks has shape \(2, 1\); expected "
                                             r"\(R \+ 1, n, m\) = \(R \+ 1, 2, m\).*"
                                             r"B_blocks\[None\], shape \(1, 2, 1\)"):
        recover_continuous(A_d, blocks[0], 0.5)                 # a 2-D block
    with pytest.raises(DimensionError, match=r"B_blocks has shape \(4, 3, 1\)"):
        recover_continuous(A_d, np.zeros((4, 3, 1)), 0.5)       # rows do not match A_d
    with pytest.raises(DimensionError, match="A_d has shape"):
        recover_continuous(A_d[:, :1], blocks, 0.5)
    with pytest.raises(DimensionError, match=r"active has shape \(3,\)"):
        recover_continuous(A_d, blocks, 0.5, active=np.ones(3, bool))
    # the accepted form: a single block given as B_blocks[None] (no delay)
    _, B_c, delay = recover_continuous(A_d, blocks[2][None], 0.5)
    assert delay[0] == 0.0 and np.all(np.isfinite(B_c))


# ---------------------------------------------------------------------- hold integrals
def _random_case(seed):
    rng = np.random.default_rng(seed)
    n, m, R, dt = int(rng.integers(2, 9)), int(rng.integers(1, 4)), 4, float(rng.uniform(0.05, 1))
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    upper = 0.5 * np.triu(rng.standard_normal((n, n)), 1)
    A_c = Q @ (np.diag(rng.uniform(-2.0, -0.1, n)) + upper) @ Q.T
    B_c = rng.standard_normal((n, m))
    delay = rng.uniform(0.0, R - 1.0, m) * dt
    A_d, blocks = delay_blocks(A_c, B_c, delay, dt, max_delay=R)
    noisy = blocks + 1e-4 * np.max(np.abs(blocks)) * rng.standard_normal(blocks.shape)
    return A_d, noisy, dt


@pytest.mark.parametrize("seed", range(12))
def test_eigenbasis_and_exponential_paths_agree(seed, monkeypatch):
    # The eigenbasis of A_c (one decomposition for every channel and hold length) and the
    # exact block exponential give the same recovery on noisy blocks of random plants.
    from dmdidc.inference import recovery

    A_d, blocks, dt = _random_case(seed)
    fast = recover_continuous(A_d, blocks, dt)
    monkeypatch.setattr(recovery, "_EIGENBASIS_CONDITION", 0.0)   # every A_c takes expm
    monkeypatch.setattr(recovery, "_LAST", [])
    exact = recover_continuous(A_d, blocks, dt)
    np.testing.assert_allclose(fast[1], exact[1], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fast[2], exact[2], rtol=0, atol=1e-8 * dt)


@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.9])
def test_defective_state_matrix_takes_the_exponential_path(fraction):
    # A Jordan block has no eigenbasis: the exact path recovers the delay all the same.
    A_c = np.array([[-0.5, 1.0, 0.0], [0.0, -0.5, 1.0], [0.0, 0.0, -0.5]])
    B_c = np.array([[0.3], [-1.0], [2.0]])
    dt = 0.25
    delay = np.array([(2 + fraction) * dt])
    A_d, blocks = delay_blocks(A_c, B_c, delay, dt, max_delay=4)
    _, B_rec, d = recover_continuous(A_d, blocks, dt, A_c=A_c)
    assert abs(d[0] - delay[0]) <= 1e-9 * dt
    np.testing.assert_allclose(B_rec, B_c, atol=1e-9)


def test_a_state_matrix_changed_in_place_is_not_served_from_the_cache():
    from dmdidc.inference.recovery import recover_channel

    A_c = np.array([[-1.0, 2.0], [-2.0, -1.0]])
    B_c = np.array([[1.0], [0.5]])
    _, blocks = delay_blocks(A_c, B_c, np.array([0.7]), 0.5, max_delay=3)
    recover_channel(A_c, blocks[:, :, 0], 0.5, 1)
    A_c[0, 1] = 1.5                                     # another plant, same array
    _, blocks = delay_blocks(A_c, B_c, np.array([0.6]), 0.5, max_delay=3)
    b, delay = recover_channel(A_c, blocks[:, :, 0], 0.5, 1)
    assert abs(delay - 0.6) <= 1e-9
    np.testing.assert_allclose(b, B_c[:, 0], atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_hold_matrices_match_the_block_exponential(seed):
    from dmdidc.discretization import zoh_matrices
    from dmdidc.inference.recovery import _hold_integrals

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    A_c = rng.standard_normal((n, n)) - np.eye(n)
    for s in (0.0, 1e-9, 0.3, 1.7):
        fast, exact = _hold_integrals(A_c).matrices(s), zoh_matrices(A_c, np.eye(n), s)
        for mine, reference in zip(fast, exact, strict=True):
            scale = max(float(np.max(np.abs(reference))), 1e-300)    # rounding is relative
            np.testing.assert_allclose(mine, reference, rtol=0, atol=1e-11 * scale)


@pytest.mark.parametrize("seed", range(12))
def test_eigenbasis_logarithm_matches_the_schur_logarithm(seed):
    # The principal logarithm from the eigenbasis of A_d (well-conditioned case) is scipy's
    # logm to rounding, also with complex pairs and modes close to Nyquist.
    from scipy.linalg import logm

    rng = np.random.default_rng(seed)
    n, dt = int(rng.integers(2, 9)), float(rng.uniform(0.05, 1.0))
    A_c = rng.standard_normal((n, n)) * rng.uniform(0.5, 3.0) - 0.3 * np.eye(n)
    A_d = expm(A_c * dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mine = continuous_state_matrix(A_d, dt)
        except LogarithmError:
            pytest.skip("no real logarithm for this draw")
    reference = np.real(logm(A_d)) / dt
    np.testing.assert_allclose(mine, reference, rtol=0,
                               atol=1e-10 * max(1.0, float(np.max(np.abs(reference)))))


@pytest.mark.parametrize("seed", range(6))
def test_unclipped_pair_delay_moves_where_the_clipped_one_sticks(seed):
    # A whole delay w T whose next block noise made point below w: the clipped hold length
    # stays at the boundary (the delay reads w T whatever the size of that block), the
    # unclipped one reads below w T, farther as the block grows; inside the pair both agree.
    from dmdidc.inference.recovery import pair_delay

    rng = np.random.default_rng(seed)
    n, dt, w = 3, 0.5, int(rng.integers(1, 3))
    A_c = rng.standard_normal((n, n)) - 1.5 * np.eye(n)
    B_c = rng.standard_normal((n, 1))
    _, blocks = delay_blocks(A_c, B_c, np.array([w * dt]), dt, 4)
    reads = []
    for size in (1e-3, 1e-2):
        columns = blocks[:, :, 0].copy()
        columns[w + 1] = -size * columns[w]
        clipped, free = (pair_delay(A_c, columns, w, dt, clip=c)[1] for c in (True, False))
        assert clipped == w * dt and free < w * dt
        reads.append(free)
    assert reads[1] < reads[0]
    _, blocks = delay_blocks(A_c, B_c, np.array([(w + 0.3) * dt]), dt, 4)
    inside = [pair_delay(A_c, blocks[:, :, 0], w, dt, clip=c)[1] for c in (True, False)]
    np.testing.assert_allclose(inside, (w + 0.3) * dt, rtol=0, atol=1e-10)
