"""Refined instruments: fast simulation and reference projection (dmdidc.regression.refined)."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.regression.refined import (
    model_instruments,
    reference_projection,
    simulate_forced,
    simulated_states,
)
from simulations.studies.data_kinds import random_plant


def direct(A, forcing):
    X = np.zeros((A.shape[0], forcing.shape[1] + 1))
    for k in range(forcing.shape[1]):
        X[:, k + 1] = A @ X[:, k] + forcing[:, k]
    return X


@pytest.mark.parametrize("seed", range(5))
def test_schur_recursion_equals_the_direct_one(seed):
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 7)
    A = rng.standard_normal((n, n))
    A *= 0.97 / max(np.max(np.abs(np.linalg.eigvals(A))), 1e-12)      # stable, non-normal
    forcing = rng.standard_normal((n, 500))
    reference = direct(A, forcing)
    np.testing.assert_allclose(simulate_forced(A, forcing), reference,
                               atol=1e-10 * np.abs(reference).max())


def test_stabilizing_reflects_only_unstable_modes():
    theta = 0.7
    rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    forcing = np.random.default_rng(0).standard_normal((2, 3000))
    stable = 0.9 * rotation
    np.testing.assert_allclose(simulate_forced(stable, forcing, stabilize=True),
                               simulate_forced(stable, forcing), atol=1e-12)
    # 1.2 R is reflected to R / 1.2: the response to a pulse is that of the reflected matrix
    pulse = np.zeros((2, 60))
    pulse[0, 0] = 1.0
    np.testing.assert_allclose(simulate_forced(1.2 * rotation, pulse, stabilize=True),
                               direct(rotation / 1.2, pulse), atol=1e-12)


def resting_state(plant, U):
    """The state the plant rests in under the mean of ``U``."""
    return np.linalg.solve(np.eye(plant.n_states) - plant.A_d,
                           plant.B_blocks.sum(axis=0) @ U.mean(axis=1))


def test_simulated_states_are_the_noise_free_response_aligned_with_the_inputs():
    plant = random_plant(3)
    U = np.random.default_rng(1).standard_normal((plant.n_inputs, 400))
    xhat = simulated_states(plant.A_d, plant.B_blocks, U)
    # at rest under the mean input before the record: the deviations' response plus the rest
    mean = U.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(xhat, plant.simulate(np.zeros(plant.n_states), U - mean)[:, :-1]
                               + resting_state(plant, U)[:, None], atol=1e-10)
    Z = model_instruments(plant.A_d, plant.B_blocks, [U, U[:, :100]])
    assert [z.shape for z in Z] == [(plant.n_states + plant.n_inputs, 400),
                                    (plant.n_states + plant.n_inputs, 100)]


def test_reference_projection_recovers_the_filter_from_reference_to_inputs():
    rng = np.random.default_rng(2)
    references = [rng.standard_normal((1, 3000)) for _ in range(2)]
    fir = np.array([0.5, -0.3, 0.2])
    inputs = [np.convolve(r[0], fir)[:r.shape[1]][None] + 0.3 * rng.standard_normal((1, 3000))
              for r in references]            # the feedback part is independent of r
    explained = reference_projection(inputs, references, lags=5)
    noise_free = [np.convolve(r[0], fir)[:r.shape[1]][None] for r in references]
    for e, truth in zip(explained, noise_free, strict=True):
        assert np.std(e - truth) < 0.03


@pytest.mark.parametrize("seed", range(5))
def test_stabilized_simulation_equals_the_schur_sweep(seed):
    # The reflected (complex) matrix runs as the real recursion of [Re x; Im x]: equal to the
    # back substitution through the complex Schur triangle it replaced, on unstable non-normal A.
    from scipy import linalg

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    A = 1.5 * rng.standard_normal((n, n)) / np.sqrt(n)
    forcing = rng.standard_normal((n, 700))
    T, Q = linalg.schur(A, output="complex")
    diagonal = np.diag(T).copy()
    outside = np.abs(diagonal) >= 1.0
    assert outside.any()
    diagonal[outside] = 1.0 / np.conj(diagonal[outside])
    T = T - np.diag(np.diag(T)) + np.diag(diagonal)
    g, z = Q.conj().T @ forcing, np.zeros((n, 701), dtype=complex)
    for k in range(700):
        z[:, k + 1] = T @ z[:, k] + g[:, k]
    reference = (Q @ z).real
    np.testing.assert_allclose(simulate_forced(A, forcing, stabilize=True), reference,
                               atol=1e-10 * np.abs(reference).max())


@pytest.mark.parametrize("seed", range(6))
def test_an_input_operating_point_only_shifts_the_instruments(seed):
    """Inputs around an operating point c: the instruments are those of the deviations plus
    the constant resting state of c (from zero they carried a transient of the operating
    point's size, as long as the slowest mode, which the measured states do not have)."""
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n_states=3, n_inputs=2)
    U = rng.standard_normal((2, 600))
    c = rng.uniform(3.0, 10.0, (2, 1)) * rng.choice([-1.0, 1.0], (2, 1))
    shifted = simulated_states(plant.A_d, plant.B_blocks, U + c)
    deviation = simulated_states(plant.A_d, plant.B_blocks, U)
    steady = np.linalg.solve(np.eye(3) - plant.A_d, plant.B_blocks.sum(axis=0) @ c[:, 0])
    np.testing.assert_allclose(shifted - deviation, np.repeat(steady[:, None], 600, axis=1),
                               atol=1e-9 * (1.0 + np.abs(shifted).max()))


def test_an_integrator_without_a_resting_state_starts_at_zero():
    A = np.array([[1.0, 0.0], [0.0, 0.5]])
    B = np.array([[[1.0], [1.0]]])                 # R = 0: one block
    U = np.full((1, 5), 2.0)
    np.testing.assert_allclose(simulated_states(A, B, U)[0], [0.0, 2.0, 4.0, 6.0, 8.0])


@pytest.mark.parametrize("kind", ["stable", "unstable", "integrator", "zero_sum"])
def test_side_by_side_simulation_equals_one_trajectory_at_a_time(kind, monkeypatch):
    # Many short experiments run as the rows of one state array (each padded to its group's
    # longest, from its own resting state): the same states and moments, to rounding, as one
    # simulation per trajectory -- whatever the lengths (empty, shorter than the moments'
    # first sample, longer than the side-by-side limit), the drives' means (offsets, zero),
    # a reflected unstable model, an integrator (no resting state) or blocks summing to zero
    # (no forcing by the mean).
    from dmdidc.regression import refined

    monkeypatch.setattr(refined, "SIDE_BY_SIDE", 150)       # long ones in the same test
    rng = np.random.default_rng(["stable", "unstable", "integrator", "zero_sum"].index(kind))
    for _ in range(6):
        n, m, R = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
        A = rng.standard_normal((n, n))
        A *= {"unstable": 1.3}.get(kind, 0.9) / np.max(np.abs(np.linalg.eigvals(A)))
        if kind == "integrator":
            A[0, :], A[:, 0] = 0.0, 0.0
            A[0, 0] = 1.0
        B_blocks = rng.standard_normal((R + 1, n, m))
        if kind == "zero_sum":
            B_blocks[-1] = -B_blocks[:-1].sum(axis=0)
        first = R + int(rng.integers(0, 6))
        lengths = [0, 1, first, first + 1, *rng.integers(2, 400, size=12)]
        drives = [rng.standard_normal((m, int(K))) + rng.normal(0, 3, (m, 1))
                  * rng.integers(0, 2) for K in lengths]
        together = refined.simulated_recursions(A, B_blocks, drives, first)
        states_only = refined.simulated_recursions(A, B_blocks, drives[1:], None)
        for drive, (states, M, moments) in zip(drives[1:], states_only, strict=True):
            expected = refined.simulated_states(A, B_blocks, drive)
            assert M is None and moments is None
            np.testing.assert_allclose(states, expected, rtol=0,
                                       atol=1e-12 * max(np.abs(expected).max(), 1.0))
        for drive, (states, M, moments) in zip(drives, together, strict=True):
            K = drive.shape[1]
            scale = max(np.abs(states).max(initial=0.0), 1.0)
            if K == 0:                      # (the one-trajectory simulation refuses them)
                assert states.shape == (n, 0) and M is None and moments is None
                continue
            if K <= first:
                expected = refined.simulated_states(A, B_blocks, drive)
                assert M is None and moments is None
                np.testing.assert_allclose(states, expected, rtol=0, atol=1e-12 * scale)
                continue
            alone = refined._simulated_recursion(A, B_blocks, drive, first)
            np.testing.assert_allclose(states, alone[0], rtol=0, atol=1e-12 * scale)
            np.testing.assert_array_equal(M, alone[1])
            for got, want in zip(moments, alone[2], strict=True):
                np.testing.assert_allclose(got, want, rtol=0,
                                           atol=1e-11 * max(np.abs(want).max(), 1.0) * K)


def test_simulated_signals_read_as_the_list_of_simulations(monkeypatch):
    # SimulatedSignals computes the signals when read (no list of them is kept): indexing,
    # iterating and its blocks give every trajectory's simulated states, in order, once each,
    # equal to the one-trajectory simulation to rounding, in blocks of any size.
    from dmdidc.regression import refined

    rng = np.random.default_rng(7)
    for entries in (1, 50, 1 << 22):
        monkeypatch.setattr(refined, "_SIGNAL_ENTRIES", entries)
        n, m, R = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
        A = rng.standard_normal((n, n))
        A *= 0.9 / np.max(np.abs(np.linalg.eigvals(A)))
        B_blocks = rng.standard_normal((R + 1, n, m))
        drives = [rng.standard_normal((m, int(K))) + 2.0 for K in [0, *rng.integers(1, 80, 9)]]
        signals = refined.SimulatedSignals(A, B_blocks, drives)
        expected = [refined.simulated_states(A, B_blocks, d) if d.shape[1] else np.zeros((n, 0))
                    for d in drives]
        assert len(signals) == len(drives)
        covered = [i for block, _ in signals.blocks(R + 1) for i in block]
        assert covered == list(range(len(drives)))
        for got, want in zip(signals, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(np.abs(want).max(
                initial=0.0), 1.0))
        for i in (-1, 3, 3, 0):
            np.testing.assert_allclose(signals[i], expected[i], rtol=0,
                                       atol=1e-12 * max(np.abs(expected[i]).max(initial=0), 1))
        read = signals.subset([5, 1, 5, -1])
        assert sorted(read) == [1, 5, len(drives) - 1]
        for i, got in read.items():
            np.testing.assert_allclose(got, expected[i], rtol=0,
                                       atol=1e-12 * max(np.abs(expected[i]).max(initial=0), 1))
        with pytest.raises(IndexError):
            signals[len(drives)]


def test_every_read_after_the_blocks_is_its_own_records(monkeypatch):
    # a block of one record stays read (SimulatedSignals._last): whatever is read next, by
    # index or by subset, is that record's simulation and no other's
    from dmdidc.regression import refined

    monkeypatch.setattr(refined, "_SIGNAL_ENTRIES", 1)      # one record per block
    rng = np.random.default_rng(2)
    n, m, R = 2, 1, 2
    A = np.array([[0.5, 0.2], [0.0, -0.4]])
    B_blocks = rng.standard_normal((R + 1, n, m))
    drives = [rng.standard_normal((m, int(K))) + 1.0 for K in (30, 5000, 40, 7)]
    expected = [refined.simulated_states(A, B_blocks, d) for d in drives]
    for first in (R + 1, None):
        signals = refined.SimulatedSignals(A, B_blocks, drives)
        for _ in signals.blocks(first):
            pass
        read = signals.subset(range(len(drives)))
        for i, want in enumerate(expected):
            np.testing.assert_allclose(read[i], want, rtol=0, atol=1e-12 * np.abs(want).max())
        for _ in signals.blocks(first):
            pass
        for i in reversed(range(len(drives))):
            np.testing.assert_allclose(signals[i], expected[i], rtol=0,
                                       atol=1e-12 * np.abs(expected[i]).max())


def test_a_record_kept_by_the_blocks_is_iterated_without_a_second_simulation(monkeypatch):
    # one record (the whole data of a short fit): the statistics' blocks simulate it, and
    # the covariance and the checks then iterate the signals; they read the record kept,
    # which is its simulation, not another's
    from dmdidc.regression import refined

    rng = np.random.default_rng(4)
    n, m, R = 3, 2, 2
    A = np.array([[0.5, 0.2, 0.0], [0.0, -0.4, 0.1], [0.0, 0.0, 0.7]])
    B_blocks = rng.standard_normal((R + 1, n, m))
    drive = rng.standard_normal((m, 5000)) + 1.0
    expected = refined.simulated_states(A, B_blocks, drive)
    calls = []
    original = refined.simulated_recursions
    monkeypatch.setattr(refined, "simulated_recursions",
                        lambda *args: calls.append(args[-1]) or original(*args))
    signals = refined.SimulatedSignals(A, B_blocks, [drive])
    for _ in signals.blocks(R + 1):
        pass
    for _ in range(2):
        (got,) = list(signals)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert calls == [R + 1]                             # the statistics' simulation only
    # two records: each block simulates its own (the kept one is the last read)
    monkeypatch.setattr(refined, "_SIGNAL_ENTRIES", 1)
    drives = [drive, drive[:, ::-1] - 2.0]
    signals = refined.SimulatedSignals(A, B_blocks, drives)
    for _ in signals.blocks(R + 1):
        pass
    for got, d in zip(signals, drives, strict=True):
        want = refined.simulated_states(A, B_blocks, d)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())


def test_kept_signals_are_read_again_without_another_simulation(monkeypatch):
    # keep=True (data checked whole): the block of every trajectory is iterated again from
    # the statistics' simulation, and a subset read twice is simulated once; without keep,
    # iterating simulates again (nothing kept beyond one record); the states are each
    # trajectory's own either way
    from dmdidc.regression import refined

    rng = np.random.default_rng(6)
    n, m, R = 3, 2, 2
    A = np.array([[0.5, 0.2, 0.0], [0.0, -0.4, 0.1], [0.0, 0.0, 0.7]])
    B_blocks = rng.standard_normal((R + 1, n, m))
    drives = [rng.standard_normal((m, int(K))) + 1.0 for K in (40, 300, 7, 5000, 120)]
    expected = [refined.simulated_states(A, B_blocks, d) for d in drives]
    calls = []
    original = refined.simulated_recursions
    monkeypatch.setattr(refined, "simulated_recursions",
                        lambda *args: calls.append(len(args[2])) or original(*args))
    for keep in (True, False):
        calls.clear()
        signals = refined.SimulatedSignals(A, B_blocks, drives, keep=keep)
        for _ in signals.blocks(R + 1):
            pass
        for _ in range(2):
            for got, want in zip(signals, expected, strict=True):
                np.testing.assert_allclose(got, want, rtol=0,
                                           atol=1e-12 * np.abs(want).max())
        assert calls == ([len(drives)] if keep else [len(drives)] * 3)
        calls.clear()
        for _ in range(2):
            read = signals.subset([4, 0, 2])
            assert sorted(read) == [0, 2, 4]
            for i, got in read.items():
                np.testing.assert_allclose(got, expected[i], rtol=0,
                                           atol=1e-12 * np.abs(expected[i]).max())
        assert calls == [3]                             # the second read: the same subset


def test_a_slice_of_the_simulated_signals_is_a_list_of_their_simulations():
    from dmdidc.regression import refined

    rng = np.random.default_rng(5)
    A, B_blocks = np.array([[0.6]]), rng.standard_normal((2, 1, 1))
    drives = [rng.standard_normal((1, K)) for K in (12, 30, 7)]
    sliced = refined.SimulatedSignals(A, B_blocks, drives)[1:]
    assert len(sliced) == 2
    for got, drive in zip(sliced, drives[1:], strict=True):
        np.testing.assert_allclose(got, refined.simulated_states(A, B_blocks, drive))
