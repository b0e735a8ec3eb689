"""Exact ZOH discretization with per-channel fractional input delays (dmdidc.discretization).

Every block is checked against an independent computation: adaptive numerical quadrature of
e^{A_c (T - s)} b_j over the part of the sampling interval [0, T] during which the held input
u_{k-i} acts on channel j, i.e. s in [max(0, r_j - i T), min(T, r_j - (i - 1) T)].
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad_vec
from scipy.linalg import expm
from scipy.signal import cont2discrete

from dmdidc import (
    DelayedPlant,
    DimensionError,
    NonFiniteError,
    ParameterError,
    delay_blocks,
    split_delay,
    zoh_matrices,
)
from dmdidc.discretization import required_max_delay


def quadrature_blocks(A_c, B_c, delay, dt, R):
    """Blocks B^(0..R) by numerical quadrature, independently of the library (n, m per block)."""
    n, m = B_c.shape
    blocks = np.zeros((R + 1, n, m))
    # e^{A t} through the eigendecomposition (fast to evaluate; A_c is diagonalizable here).
    lam, V = np.linalg.eig(A_c)
    for j in range(m):
        coef = np.linalg.solve(V, B_c[:, j].astype(complex))
        for i in range(R + 1):
            lo = max(0.0, delay[j] - i * dt)
            hi = min(dt, delay[j] - (i - 1) * dt)
            if hi <= lo:
                continue
            value, _ = quad_vec(lambda s, c=coef: V @ (np.exp(lam * (dt - s)) * c), lo, hi,
                                epsabs=1e-14, epsrel=1e-13)
            blocks[i, :, j] = value.real
    return blocks


def random_plant(rng, n, m):
    A_c = rng.standard_normal((n, n)) * 0.6 - 0.3 * np.eye(n)
    B_c = rng.standard_normal((n, m))
    return A_c, B_c


@pytest.mark.parametrize("delay", [[0.0, 0.0], [0.7, 0.7], [0.5, 1.3], [2.0, 0.15],
                                   [1.999, 0.001]])
def test_blocks_match_quadrature(delay):
    rng = np.random.default_rng(42)
    A_c, B_c = random_plant(rng, 3, 2)
    dt = 0.5
    delay = np.array(delay)
    A_d, blocks = delay_blocks(A_c, B_c, delay, dt, max_delay=5)
    expected = quadrature_blocks(A_c, B_c, delay, dt, 5)
    np.testing.assert_allclose(blocks, expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(A_d, expm(A_c * dt), rtol=1e-13, atol=1e-14)


def test_seed_plant_blocks_match_quadrature():
    # Dissertation example (9.76): T = 2 and r = 1, 1.25, 1.5 periods.
    A_c = np.array([[0.0, 1.1], [-1.1, 0.0]])
    B_c = np.array([[1.0, -1.0], [-1.0, 2.0]])
    for periods in (1.0, 1.25, 1.5):
        delay = np.full(2, periods * 2.0)
        A_d, blocks = delay_blocks(A_c, B_c, delay, 2.0)
        np.testing.assert_allclose(blocks, quadrature_blocks(A_c, B_c, delay, 2.0,
                                                             blocks.shape[0] - 1), atol=1e-10)
        np.testing.assert_allclose(A_d, expm(2.0 * A_c), atol=1e-14)


def test_zero_delay_is_standard_zoh():
    rng = np.random.default_rng(1)
    A_c, B_c = random_plant(rng, 4, 3)
    dt = 0.3
    Ad_ref, Bd_ref, *_ = cont2discrete((A_c, B_c, np.eye(4), np.zeros((4, 3))), dt,
                                       method="zoh")
    A_d, blocks = delay_blocks(A_c, B_c, np.zeros(3), dt)
    assert blocks.shape == (1, 4, 3)
    np.testing.assert_allclose(A_d, Ad_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(blocks[0], Bd_ref, rtol=1e-12, atol=1e-14)
    Phi, Gamma_B = zoh_matrices(A_c, B_c, dt)
    np.testing.assert_allclose(Phi, Ad_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Gamma_B, Bd_ref, rtol=1e-12, atol=1e-14)


def test_blocks_sum_to_delay_free_zoh():
    # The delay only redistributes the hold integral over the blocks (eq. 9.6).
    rng = np.random.default_rng(2)
    A_c, B_c = random_plant(rng, 3, 3)
    dt = 0.4
    _, Bd_ref, *_ = cont2discrete((A_c, B_c, np.eye(3), np.zeros((3, 3))), dt, method="zoh")
    _, blocks = delay_blocks(A_c, B_c, np.array([0.13, 0.8, 1.55]), dt, max_delay=6)
    np.testing.assert_allclose(blocks.sum(axis=0), Bd_ref, atol=1e-13)


def test_per_channel_delays_occupy_their_own_blocks():
    rng = np.random.default_rng(3)
    A_c, B_c = random_plant(rng, 3, 3)
    dt = 1.0
    delay = np.array([0.0, 1.0, 2.25])  # w = 0, 1, 2; p = 0, 0, 0.25
    _, blocks = delay_blocks(A_c, B_c, delay, dt)
    assert blocks.shape == (4, 3, 3)
    nonzero = np.linalg.norm(blocks, axis=1) > 1e-14     # (R + 1, m)
    expected = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]], dtype=bool)
    np.testing.assert_array_equal(nonzero, expected)
    # A whole delay of w periods is the ZOH column moved to block w.
    _, Bd_ref, *_ = cont2discrete((A_c, B_c, np.eye(3), np.zeros((3, 3))), dt, method="zoh")
    np.testing.assert_allclose(blocks[1, :, 1], Bd_ref[:, 1], atol=1e-13)


def test_split_delay_snaps_whole_multiples():
    # 0.3 / 0.1 = 2.9999999999999996 and 0.7 / 0.1 = 6.999999999999999 in floating point.
    assert 0.3 / 0.1 != 3.0
    steps, fraction = split_delay(np.array([0.3, 0.7, 0.25, 1.5 * 2.0]), 0.1)
    np.testing.assert_array_equal(steps, [3, 7, 2, 30])
    assert fraction[0] == 0.0 and fraction[1] == 0.0 and fraction[3] == 0.0
    assert fraction[2] == pytest.approx(0.5, abs=1e-12)
    assert steps.dtype.kind == "i"
    # A genuine small fraction is not snapped.
    steps, fraction = split_delay(np.array([0.3 + 1e-9]), 0.1)
    assert steps[0] == 3 and fraction[0] == pytest.approx(1e-8, rel=1e-6)


def test_snapped_delay_gives_single_block():
    A_c = np.array([[-1.0, 0.5], [0.0, -2.0]])
    B_c = np.array([[1.0], [1.0]])
    assert required_max_delay(np.array([0.3]), 0.1) == 3
    _, blocks = delay_blocks(A_c, B_c, np.array([0.3]), 0.1)
    assert blocks.shape[0] == 4
    assert np.all(blocks[:3] == 0.0)
    _, Bd_ref, *_ = cont2discrete((A_c, B_c, np.eye(2), np.zeros((2, 1))), 0.1, method="zoh")
    np.testing.assert_allclose(blocks[3], Bd_ref, atol=1e-15)


def test_required_max_delay():
    assert required_max_delay(np.array([0.0]), 1.0) == 0
    assert required_max_delay(np.array([1.0]), 1.0) == 1
    assert required_max_delay(np.array([1.0001]), 1.0) == 2
    assert required_max_delay(np.array([0.2, 3.5]), 1.0) == 4


def test_larger_max_delay_pads_with_zero_blocks():
    A_c = np.array([[-0.5]])
    B_c = np.array([[2.0]])
    _, tight = delay_blocks(A_c, B_c, np.array([0.75]), 0.5)
    _, padded = delay_blocks(A_c, B_c, np.array([0.75]), 0.5, max_delay=5)
    assert tight.shape == (3, 1, 1) and padded.shape == (6, 1, 1)
    np.testing.assert_array_equal(padded[:3], tight)
    assert np.all(padded[3:] == 0.0)


@pytest.mark.parametrize("delay, max_delay", [(1.5, 1), (1.0, 0), (0.1, 0), (3.0, 2)])
def test_max_delay_too_small_raises(delay, max_delay):
    A_c = np.array([[-1.0]])
    B_c = np.array([[1.0]])
    with pytest.raises(ParameterError, match="max_delay.*too small"):
        delay_blocks(A_c, B_c, np.array([delay]), 1.0, max_delay=max_delay)
    with pytest.raises(ParameterError, match="too small"):
        DelayedPlant.from_continuous(A_c, B_c, delay=delay, dt=1.0, max_delay=max_delay)


def test_negative_delay_and_bad_dt_raise():
    A_c = np.array([[-1.0]])
    B_c = np.array([[1.0]])
    with pytest.raises(ParameterError, match="delay must be >= 0"):
        delay_blocks(A_c, B_c, np.array([-0.1]), 1.0)
    with pytest.raises(ParameterError, match="dt"):
        delay_blocks(A_c, B_c, np.array([0.1]), 0.0)
    with pytest.raises(ParameterError, match="dt"):
        split_delay(np.array([0.1]), 0.0)
    # the public helpers check what they are given, too (no garbage steps from NaN or -1)
    with pytest.raises(ParameterError, match=r"delay must be >= 0 seconds; got \[-1.0\]"):
        split_delay(np.array([-1.0]), 1.0)
    with pytest.raises(NonFiniteError, match="delay contains 1 NaN"):
        split_delay(np.array([np.nan]), 1.0)
    with pytest.raises(ParameterError, match=r"hold length s must be >= 0; got -1.0"):
        zoh_matrices(A_c, B_c, -1.0)
    with pytest.raises(ParameterError, match="s must be finite"):
        zoh_matrices(A_c, B_c, np.inf)


def test_delay_count_and_matrix_shapes_are_checked():
    A_c, B_c = np.array([[-1.0, 0.0], [0.0, -2.0]]), np.ones((2, 2))
    with pytest.raises(DimensionError, match=r"delay has shape \(3,\); expected a scalar or "
                                             r"\(2,\)"):
        delay_blocks(A_c, B_c, [0.1, 0.2, 0.3], 1.0)          # too many delays
    with pytest.raises(DimensionError, match=r"delay has shape \(1,\)"):
        delay_blocks(A_c, B_c, [0.1], 1.0)                    # too few
    np.testing.assert_array_equal(delay_blocks(A_c, B_c, 0.5, 1.0)[1],
                                  delay_blocks(A_c, B_c, [0.5, 0.5], 1.0)[1])
    with pytest.raises(DimensionError, match="B_c has 3 rows"):
        delay_blocks(A_c, np.ones((3, 2)), [0.1, 0.2], 1.0)
    with pytest.raises(DimensionError, match="A_c must be square"):
        delay_blocks(np.ones((2, 3)), B_c, [0.1, 0.2], 1.0)
    with pytest.raises(ParameterError, match="max_delay must be an integer"):
        delay_blocks(A_c, B_c, [0.1, 0.2], 1.0, max_delay=2.0)
    with pytest.raises(DimensionError, match="A must be square"):
        zoh_matrices(np.ones((2, 3)), np.ones((2, 1)), 1.0)


def test_split_periods_is_split_delay_without_the_checks():
    """The unchecked split of the delay searches gives split_delay's steps and fractions,
    snapping included, and the searches' family still refuses a bad delay."""
    from dmdidc.discretization import split_periods
    from dmdidc.output.blocks import spectral_family
    rng = np.random.default_rng(0)
    dt = 0.37
    delays = np.concatenate([np.linspace(0.0, 4 * dt, 33), rng.uniform(0, 50, 200),
                             np.arange(6) * dt * (1 + 1e-14), 3 * 0.5 * 2.0 / 2.0 * np.ones(1)])
    steps, fractions = split_delay(delays, dt)
    fast_steps, fast_fractions = split_periods(delays / dt)
    assert np.array_equal(steps, fast_steps) and np.array_equal(fractions, fast_fractions)
    family = spectral_family(np.array([[-1.0, 0.5], [0.0, -2.0]]), dt)
    for bad in (-0.1, np.nan):
        with pytest.raises(ValueError, match="delay"):
            family(np.array([0.2, bad]))
