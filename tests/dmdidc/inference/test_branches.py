"""Aliasing resolved by a fractional delay (dmdidc.inference.branches)."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc
from dmdidc.inference.branches import logarithm_branches, recover_branch
from dmdidc.inference.recovery import continuous_state_matrix

T = 1.0
OMEGA = 1.3 * np.pi / T                       # above the Nyquist frequency pi / T
A_FAST = np.array([[-0.1, OMEGA], [-OMEGA, -0.1]])


def test_every_branch_has_the_same_discretization():
    principal = continuous_state_matrix(DelayedPlant.from_continuous(
        A_FAST, [[1.0], [0.5]], 0.0, T).A_d, T)
    branches = logarithm_branches(principal, T)
    assert len(branches) == 3 and branches[0][0] == (0,)
    from scipy.linalg import expm
    for _, A_c in branches:
        np.testing.assert_allclose(expm(A_c * T), expm(principal * T), atol=1e-12)


@pytest.mark.parametrize("noise", [0.0, 1e-2, 1e-1])
def test_a_fractional_delay_recovers_the_mode_above_nyquist(noise):
    true = DelayedPlant.from_continuous(A_FAST, [[1.0], [0.5]], delay=1.4 * T, dt=T,
                                        max_delay=3)
    rng = np.random.default_rng(0)
    U = rng.standard_normal((1, 3000))
    X = true.simulate(np.zeros(2), U)
    X = X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    est = DMDidc(max_delay=3).fit(X, U, dt=T)
    np.testing.assert_allclose(np.sort(np.abs(np.linalg.eigvals(est.A_c).imag)), [OMEGA] * 2,
                               rtol=0.02)
    assert any("aliasing resolved" in note for note in est.diagnostics_.notes)
    ci = est.confidence_intervals()                  # intervals use the same branch
    assert np.all(np.abs(ci.A_c.value - est.A_c) < 1e-9)


def test_a_whole_delay_cannot_tell_the_alias_and_the_principal_log_stays():
    true = DelayedPlant.from_continuous(A_FAST, [[1.0], [0.5]], delay=1.0 * T, dt=T,
                                        max_delay=3)
    notes = []
    A_c, _, _ = recover_branch(true.A_d, true.B_blocks, T, active=true.active_blocks,
                               block_variance=0.0, notes=notes)
    assert np.max(np.abs(np.linalg.eigvals(A_c).imag)) < np.pi / T and not notes


def test_a_repeated_recovery_keeps_its_note_and_hands_out_copies():
    # The last recovery is remembered (the intervals redo the fit's): a second call still
    # reports the alias, and changing one answer leaves the next untouched.
    true = DelayedPlant.from_continuous(A_FAST, [[1.0], [0.5]], delay=1.4 * T, dt=T,
                                        max_delay=3)
    answers, notes = [], [[], []]
    for note_list in notes:
        answers.append(recover_branch(true.A_d, true.B_blocks, T, active=true.active_blocks,
                                      block_variance=0.0, notes=note_list))
    assert all(len(found) == 1 and "aliasing resolved" in found[0] for found in notes)
    for first, second in zip(*answers, strict=True):
        np.testing.assert_array_equal(first, second)
    answers[1][0][:] = 0.0
    again = recover_branch(true.A_d, true.B_blocks, T, active=true.active_blocks,
                           block_variance=0.0)
    np.testing.assert_array_equal(again[0], answers[0][0])
    other = recover_branch(true.A_d, true.B_blocks, T, active=true.active_blocks,
                           block_variance=1.0)               # other inputs: computed anew
    assert other[0].shape == (2, 2)
