"""What the default fit decides on its own, and the instrumental-variable consistency (issue 16)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from _toolbox.errors import InsufficientExcitationError, ParameterError
from dmdidc import DelayedPlant, DMDidc, SufficientStatistics
from dmdidc.fitting import trajectory_trend_fit
from dmdidc.regression import lagged_inputs
from simulations.studies.data_kinds import make_data, random_plant


def quiet_fit(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args, **kwargs)


def a_c_error(est, plant):
    return float(np.linalg.norm(est.A_c - plant.A_c) / np.linalg.norm(plant.A_c))


@pytest.mark.slow
@pytest.mark.statistical
def test_instrumental_variables_error_falls_like_one_over_root_k():
    # Issue 16 item 1: random plants at 10 dB measurement noise; ten times the data should
    # divide the error by about sqrt(10) = 3.2 (a consistent estimator).  Measured over these
    # plants: median A_c error 0.124 -> 0.025 (ratio 0.2), least squares 3.0 -> 2.7 (biased).
    errors = {K: [] for K in (3000, 30000)}
    for seed in range(8):
        plant = random_plant(1000 + seed)
        for K in errors:
            data = make_data("white", plant, samples=K, snr_db=10.0, rng=seed)
            errors[K].append(a_c_error(quiet_fit(DMDidc(max_delay=4), data.X, data.U,
                                                 dt=0.5), plant))
    ratio = np.median(errors[30000]) / np.median(errors[3000])
    assert ratio < 0.45, (errors, ratio)


def test_exact_data_use_least_squares_with_the_backward_stable_solver():
    plant = random_plant(7)
    U = np.random.default_rng(0).standard_normal((2, 400))
    est = DMDidc(max_delay=4).fit(plant.simulate(np.zeros(3), U), U, dt=0.5)
    assert est.diagnostics_.estimator == "ls" and est.diagnostics_.passed
    assert any("exactly" in note for note in est.diagnostics_.notes)
    np.testing.assert_allclose(est.A_c, plant.A_c, atol=1e-9 * np.abs(plant.A_c).max())


@pytest.mark.parametrize("seed", range(4))
def test_exact_data_written_with_eight_digits_around_offsets_pass_and_cover_the_delays(seed):
    """Noise-free states around offsets of 20 (and 20, -3, 100) state rms, written with
    ``%.8g`` (a user's CSV): their rounding, ~1e-8 of the level, is all the residual there is.
    The normal equations' residual covariance from such moments is rounding itself, and the
    robust IV's centred moments about the origin lost it too: block_structure failed with
    T^2 of 1e2-1e4 on 20 of 24 default fits (12 of 12 robust IV) and the 99.9 % delay
    intervals missed on 8 of 12 robust IV fits.  Now no check fails, and they cover."""
    from dmdidc import random_excitation

    rng = np.random.default_rng(9000 + seed)
    plant = random_plant(rng)
    U = random_excitation(plant.n_inputs, 4000, rng=rng)
    X = plant.simulate(np.zeros(plant.n_states), U)
    rms = np.sqrt(np.mean(X ** 2, axis=1, keepdims=True))

    def written(a):
        return np.array([float(f"{v:.8g}") for v in a.ravel()]).reshape(a.shape)

    for offsets in ([20.0, 20.0, 20.0], [20.0, -3.0, 100.0]):
        Xw, Uw = written(X + np.array(offsets)[:, None] * rms), written(U)
        for estimator in ("auto", "huber_iv"):
            est = quiet_fit(DMDidc(max_delay=4, estimator=estimator), Xw, Uw, dt=plant.dt)
            assert not est.diagnostics_.failed, (offsets, estimator, est.diagnostics_.failed)
            delay = est.confidence_intervals(0.999).delay
            assert np.all((delay.low <= plant.delay) & (plant.delay <= delay.high)), (
                offsets, estimator, delay.low, delay.high, plant.delay)


def test_too_few_samples_for_instruments_fall_back_to_least_squares_and_say_so():
    plant = random_plant(8)
    rng = np.random.default_rng(0)
    p = plant.n_states + plant.n_inputs * (plant.max_delay + 1)
    U = rng.standard_normal((2, p + plant.max_delay))          # p regression samples
    X = plant.simulate(np.zeros(3), U) + 1e-3 * rng.standard_normal((3, U.shape[1] + 1))
    est = quiet_fit(DMDidc(max_delay=4), X, U, dt=0.5)
    assert est.diagnostics_.estimator == "ls"
    assert any("least squares was fitted instead" in note for note in est.diagnostics_.notes)


@pytest.mark.parametrize("seed", range(6))
def test_the_default_switches_to_robust_iv_on_outliers_before_its_least_squares_pretest(seed):
    """8 outliers of 30 sd in 1500 samples (1 % measurement noise): the default fit weighs
    them down (robust IV) instead of letting them decide Hausman's pretest, which kept least
    squares on 10 of 16 such plants (eigenvalues of A_d 0.33-0.72 off; robust IV 3e-4-0.02,
    or loud).  Without the outliers the same data keep their unweighted fit."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(1, 4))
    plant = random_plant(rng, n_states=n, n_inputs=m)
    U = rng.choice([-1.0, 1.0], (m, 1500))
    X = plant.simulate(np.zeros(n), U)
    X += 0.01 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    clean = quiet_fit(DMDidc(max_delay=4), X, U, dt=plant.dt)
    assert clean.regression_.estimator in ("iv", "ls")
    X[rng.integers(0, n, 8), rng.choice(X.shape[1], 8, replace=False)] += 30 * X.std()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dirty = DMDidc(max_delay=4).fit(X, U, dt=plant.dt)
    assert dirty.regression_.estimator == "huber_iv"
    error = np.max(np.abs(np.sort_complex(np.linalg.eigvals(dirty.model_.A_d))
                          - np.sort_complex(np.linalg.eigvals(plant.A_d))))
    assert error < 0.05 or any("failed" in str(w.message) for w in caught)


def test_explicit_robust_iv_and_its_refusals():
    plant = random_plant(1003)
    data = make_data("outliers", plant, rng=3)
    est = quiet_fit(DMDidc(max_delay=4, estimator="huber_iv"), data.X, data.U, dt=0.5)
    assert est.regression_.estimator == "huber_iv" and a_c_error(est, plant) < 0.05
    with pytest.raises(ParameterError, match="huber_iv' weights the refined instruments"):
        DMDidc(max_delay=4, estimator="huber_iv", instruments="inputs").fit(data.X, data.U,
                                                                           dt=0.5)
    with pytest.raises(ParameterError, match="partial_fit does not support"):
        DMDidc(max_delay=4, estimator="huber_iv").partial_fit(data.X, data.U, dt=0.5)


def test_every_instrument_option_takes_effect_or_is_refused():
    plant = random_plant(1001)
    data = make_data("white", plant, rng=1)
    stats = SufficientStatistics.from_data(data.X, data.U, max_delay=4, instruments="inputs")
    with pytest.raises(ParameterError, match="partial_fit streams"):
        DMDidc(max_delay=4, instruments="model").partial_fit(data.X, data.U, dt=0.5)
    with pytest.raises(ParameterError, match=r"statistics carry the\s+instruments"):
        DMDidc(max_delay=4, instruments="states").fit_statistics(stats, dt=0.5)
    with pytest.raises(ParameterError, match="instruments='exogenous' needs"):
        DMDidc(max_delay=4, instruments="exogenous").fit(data.X, data.U, dt=0.5)
    with pytest.raises(ParameterError, match="reference needs instrumental variables"):
        DMDidc(max_delay=4, instruments="states").fit(data.X, data.U, dt=0.5,
                                                      reference=data.U)
    fits = {kind: quiet_fit(DMDidc(max_delay=4, instruments=kind), data.X, data.U, dt=0.5)
            for kind in ("model", "inputs", "states")}
    assert {kind: est.diagnostics_.instruments for kind, est in fits.items()} == {
        "model": "model", "inputs": "inputs", "states": "states"}
    assert quiet_fit(DMDidc(max_delay=4), data.X, data.U, dt=0.5).diagnostics_.instruments \
        == "model"
    streamed = DMDidc(max_delay=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        streamed.partial_fit(data.X, data.U, dt=0.5)
    assert streamed.diagnostics_.instruments == "inputs"
    assert DMDidc(max_delay=4).fit_statistics(stats, dt=0.5).diagnostics_.estimator == "iv"


def test_z_is_the_former_name_of_reference():
    plant = random_plant(1000)
    data = make_data("closed_loop", plant, samples=2000, rng=0)
    with pytest.warns(DeprecationWarning, match="Z= was renamed reference="):
        old = DMDidc(max_delay=4).fit(data.X, data.U, dt=0.5, Z=data.reference)
    new = quiet_fit(DMDidc(max_delay=4), data.X, data.U, dt=0.5, reference=data.reference)
    np.testing.assert_array_equal(old.A_d, new.A_d)
    with pytest.raises(ParameterError, match="give reference= only"):
        DMDidc(max_delay=4).fit(data.X, data.U, dt=0.5, reference=data.reference,
                                Z=data.reference)


def test_constant_inputs_cannot_identify_an_intercept_and_say_so():
    plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], 0.3, 1.0)
    U = np.ones((1, 300))
    X = plant.simulate([0.0], U) + 1e-3 * np.random.default_rng(0).standard_normal((1, 301))
    with pytest.raises(InsufficientExcitationError):
        quiet_fit(DMDidc(max_delay=2), X, U, dt=1.0)


@pytest.mark.parametrize("seed", range(4))
def test_data_without_inputs_give_plain_dmd_by_least_squares(seed):
    # m = 0 is plain DMD: the default falls back to least squares (no excitation to build
    # instruments from) and says so; the eigenvalues match PyDMD's exact DMD on the same data.
    from pydmd import DMD

    rng = np.random.default_rng(seed)
    n = 3
    A = rng.standard_normal((n, n))
    A *= rng.uniform(0.5, 0.95) / np.max(np.abs(np.linalg.eigvals(A)))
    X = np.empty((n, 301))
    X[:, 0] = rng.standard_normal(n)
    for k in range(300):
        X[:, k + 1] = A @ X[:, k] + 0.1 * rng.standard_normal(n)
    est = quiet_fit(DMDidc(), X, np.zeros((0, 300)), dt=1.0)
    assert est.diagnostics_.estimator == "ls" and est.B_blocks.size == 0
    assert any("no inputs" in note for note in est.diagnostics_.notes)
    pydmd = DMD(svd_rank=n, exact=True).fit(X)             # the same pairs: every sample
    np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(est.A_d)),
                               np.sort_complex(pydmd.eigs), atol=1e-8)
    with pytest.raises(ParameterError, match="need inputs"):
        DMDidc(estimator="iv").fit(X, np.zeros((0, 300)), dt=1.0)


def _autonomous(rng, n=3, K=300, trajectories=1):
    """Trajectories of a random stable continuous plant without inputs (sampled at T = 1, so
    ``A_d`` has a real logarithm), driven by process noise."""
    from scipy.linalg import expm

    A_c = rng.standard_normal((n, n))
    A_c -= (np.max(np.linalg.eigvals(A_c).real) + rng.uniform(0.2, 1.0)) * np.eye(n)
    A = expm(A_c)
    Xs = []
    for _ in range(trajectories):
        X = np.empty((n, K + 1))
        X[:, 0] = rng.standard_normal(n)
        for k in range(K):
            X[:, k + 1] = A @ X[:, k] + 0.1 * rng.standard_normal(n)
        Xs.append(X)
    return A, Xs


@pytest.mark.parametrize("seed", range(4))
def test_every_path_without_inputs_fits_plain_dmd(seed):
    # Issue 20: m = 0 once divided by zero; fit, partial_fit (in chunks), fit_statistics and
    # max_delay=None now all give the same plain-DMD model, and its intervals are finite.
    max_delay = 0
    rng = np.random.default_rng(seed)
    _, (X,) = _autonomous(rng)
    U = np.zeros((0, 300))
    whole = quiet_fit(DMDidc(max_delay=max_delay), X, U, dt=1.0)
    streamed = DMDidc(max_delay=max_delay)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        streamed.partial_fit(X[:, :151], U[:, :150], dt=1.0)
        streamed.partial_fit(X[:, 150:], U[:, 150:], dt=1.0)
        from_stats = DMDidc(max_delay=max_delay).fit_statistics(
            SufficientStatistics.from_data(X, U, max_delay=max_delay), dt=1.0)
    for other in (streamed, from_stats):
        np.testing.assert_allclose(other.A_d, whole.A_d, atol=1e-8 * np.abs(whole.A_d).max())
        assert other.B_blocks.shape == (max_delay + 1, 3, 0)
    if whole.model_.has_continuous:          # (a fast mode may leave A_d no logarithm)
        assert whole.delay.shape == (0,)
        intervals = whole.confidence_intervals()
        assert intervals.delay.value.shape == (0,)
        assert np.all(np.isfinite(intervals.A_c.low)) and np.all(np.isfinite(intervals.A_c.high))


@pytest.mark.parametrize("seed", range(3))
def test_a_delay_bound_without_inputs_is_refused_on_every_path(seed):
    # Without inputs no input can be delayed: max_delay = R > 0 only dropped the first R
    # samples and moved A_d (500 snapshots -> 497 at R = 3), so every path refuses it.
    rng = np.random.default_rng(seed)
    _, (X,) = _autonomous(rng)
    U = np.zeros((0, 300))
    R = int(rng.integers(1, 6))
    stats = SufficientStatistics.from_data(X, U, max_delay=R)
    for fit in (lambda est: est.fit(X, U, dt=1.0),
                lambda est: est.partial_fit(X, U, dt=1.0),
                lambda est: est.fit_statistics(stats, dt=1.0),
                lambda est: est.fit(X[:, :-1], U, dt=1.0, Y=X[:, 1:])):
        with pytest.raises(ParameterError, match=f"max_delay={R} .*no inputs.*max_delay=0"):
            fit(DMDidc(max_delay=R))
    E = rng.standard_normal((1, 300))                       # nothing to instrument either
    for fit in (lambda est: est.fit(X, U, dt=1.0, reference=E),
                lambda est: est.partial_fit(X, U, dt=1.0, reference=E)):
        with pytest.raises(ParameterError, match="reference .*no inputs"):
            fit(DMDidc())
    plain = quiet_fit(DMDidc(), X, U, dt=1.0)               # no false alarm at R = 0
    assert plain.regression_.n_samples == 300               # every sample is used


def test_delay_bound_without_inputs_is_zero_without_a_warning():
    # No inputs, no delay: max_delay=None chooses 0 and does not warn that "no input lag
    # explains the states" (there is no input to explain anything).
    _, (X,) = _autonomous(np.random.default_rng(5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay=None).fit(X, np.zeros((0, 300)), dt=1.0)
    assert est.max_delay_ == 0
    assert not any("input lag" in str(w.message) for w in caught)


@pytest.mark.parametrize("seed", range(3))
def test_bootstrap_without_inputs_is_finite(seed):
    rng = np.random.default_rng(seed)
    _, Xs = _autonomous(rng, K=200, trajectories=4)
    Us = [np.zeros((0, 200))] * 4
    est = quiet_fit(DMDidc(), Xs, Us, dt=1.0)
    if not est.model_.has_continuous:
        pytest.skip("no real logarithm for this draw")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        intervals = est.confidence_intervals(method="bootstrap", X=Xs, U=Us, rng=seed,
                                             n_resamples=20)
    assert intervals.delay.value.shape == (0,)
    assert np.all(np.isfinite(intervals.A_c.low)) and np.all(np.isfinite(intervals.A_c.high))


def _assert_same_statistics(fused, direct) -> None:
    np.testing.assert_allclose(fused.gram, direct.gram, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fused.sums, direct.sums, rtol=1e-12, atol=1e-12)
    assert fused.layout == direct.layout
    for name in ("n_samples", "n_trajectories", "min_trajectory_samples",
                 "max_trajectory_samples", "intercepts", "clipped", "centering"):
        assert getattr(fused, name) == getattr(direct, name), name


def test_a_delay_bound_far_beyond_the_data_is_refused_at_once():
    # Issue 20: max_delay=10**6 on 100 samples allocated a 7 TiB Gram matrix (MemoryError), and
    # 5000 spent minutes on a 5003 x 5003 matrix of zeros; both are refused before allocating.
    import time

    rng = np.random.default_rng(0)
    X, U = rng.standard_normal((2, 101)), rng.standard_normal((1, 100))
    for max_delay in (5000, 10 ** 6):
        start = time.perf_counter()
        with pytest.raises(InsufficientExcitationError, match="at least"):
            DMDidc(max_delay=max_delay).fit(X, U, dt=1.0)
        assert time.perf_counter() - start < 1.0


def test_least_squares_statistics_from_the_input_instrument_pass_equal_a_pass_of_their_own():
    # The LS fit takes its statistics from the IV twin's pass (regression block plus the first
    # samples the twin skips): equal to the direct pass on trajectories of every length,
    # shorter than the lags included.
    from dmdidc.fitting import _plain_statistics, _statistics

    rng = np.random.default_rng(0)
    for _ in range(30):
        n, m, R = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
        trajectories = []
        for K in rng.integers(1, 60, size=int(rng.integers(1, 4))):
            trajectories.append((rng.standard_normal((n, int(K) + 1)),
                                 rng.standard_normal((m, int(K)))))
        direct, fused = _statistics(trajectories, R, None), _plain_statistics(trajectories, R, {})
        _assert_same_statistics(fused, direct)


@pytest.mark.parametrize("seed", range(6))
def test_one_fit_passes_over_the_data_once(seed, monkeypatch):
    # Issue 21: the statistics of a fit are one pass over the samples (the input-instrument
    # pass serves least squares, its IV twin and the refined-IV start; the few first samples
    # it skips are added once), also when "auto" falls back to least squares on exact data.
    from dmdidc.regression.lagged_gram import LaggedGram

    rng = np.random.default_rng(seed)
    n, m, R = int(rng.integers(2, 5)), int(rng.integers(1, 3)), int(rng.integers(3, 6))
    plant = random_plant(rng, n_states=n, n_inputs=m, max_delay=R)
    samples = []

    def counting(method):
        def counted(self, values, *args, **kwargs):
            # the regression's engines (x_{k+1} among their slots); the residual checks'
            # moments of least squares (inference.moment_gram) are a pass over the residuals
            # of their own; short trajectories are laid out whole (vectors_of), the others
            # streamed (update)
            if -1 in self._lags.get("x", ()):
                samples.append(values["u"].shape[1] if "u" in values else 0)
            return method(self, values, *args, **kwargs)
        return counted

    monkeypatch.setattr(LaggedGram, "update", counting(LaggedGram.update))
    monkeypatch.setattr(LaggedGram, "vectors_of", counting(LaggedGram.vectors_of))
    trajectories = []
    for K in rng.integers(300, 800, size=int(rng.integers(1, 3))):
        U = rng.standard_normal((m, int(K)))
        trajectories.append((plant.simulate(rng.standard_normal(n), U), U))
    total = sum(U.shape[1] for _, U in trajectories)
    X, U = [x for x, _ in trajectories], [u for _, u in trajectories]
    noisy = [x + 1e-2 * rng.standard_normal(x.shape) for x in X]
    for estimator, states in (("ls", noisy), ("iv", noisy), ("auto", X)):
        samples.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            DMDidc(max_delay=R, estimator=estimator).fit(states, U, dt=plant.dt)
        first = R - (-2 * n // m)        # R + L: the samples the input-instrument pass skips
        assert total <= sum(samples) <= total + 2 * first * len(trajectories), estimator


@pytest.mark.parametrize("block", [7, 8192])
def test_simulated_state_statistics_from_the_input_pass_equal_a_pass_of_their_own(block,
                                                                                 monkeypatch):
    # The refined stage takes its regression block from the input-instrument pass and adds only
    # the simulated states' products (in blocks of samples): equal to the direct pass, on
    # trajectories of every length, shorter than the lags included.
    from dmdidc import fitting

    monkeypatch.setattr(fitting, "_CROSS_BLOCK", block)
    rng = np.random.default_rng(1)
    for _ in range(30):
        n, m, R = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
        trajectories, signals = [], []
        for K in rng.integers(1, 60, size=int(rng.integers(1, 4))):
            trajectories.append((rng.standard_normal((n, int(K) + 1)),
                                 rng.standard_normal((m, int(K)))))
            signals.append(rng.standard_normal((n, int(K))))
        memo = {}
        try:
            fitting._input_statistics(trajectories, R, memo)
        except ValueError:
            continue
        direct = fitting._statistics(trajectories, R, "simulated", 0, signals)
        fused = fitting._simulated_statistics(trajectories, R, signals, memo)
        _assert_same_statistics(fused, direct)


@pytest.mark.parametrize("unstable", [False, True])
def test_lagged_state_products_by_the_recursion_equal_the_direct_products(unstable):
    # The simulated states' products with the lagged inputs follow from lag 0 by the model's
    # recursion (a reflected unstable model's with its imaginary part, whose lag-0 moments
    # the simulation reads from its blocks): the statistics equal the direct pass to
    # rounding, on random models and trajectories of every length (shorter than the lags
    # included).
    from dmdidc import fitting
    from dmdidc.regression.refined import simulated_recursions, simulated_states

    rng = np.random.default_rng(2 + unstable)
    checked = 0
    for _ in range(30):
        n, m, R = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(0, 5))
        A = rng.standard_normal((n, n))
        radius = np.max(np.abs(np.linalg.eigvals(A)))
        A *= (rng.uniform(1.05, 1.5) if unstable else rng.uniform(0.3, 0.99)) / radius
        B_blocks = rng.standard_normal((R + 1, n, m))
        trajectories = [(rng.standard_normal((n, int(K) + 1)), rng.standard_normal((m, int(K))))
                        for K in rng.integers(1, 300, size=int(rng.integers(1, 4)))]
        memo = {}
        try:
            first = R + fitting._input_statistics(trajectories, R, memo).instrument_lags
        except ValueError:
            continue
        simulated = simulated_recursions(A, B_blocks, [U for _, U in trajectories], first)
        signals = [s[0] for s in simulated]
        for (_, U), E in zip(trajectories, signals, strict=True):
            # the recursion's simulation carries a constant channel (the sums of the states):
            # the same states to rounding
            expected = simulated_states(A, B_blocks, U)
            np.testing.assert_allclose(E, expected, rtol=0,
                                       atol=1e-12 * max(np.abs(expected).max(), 1.0))
        M = next(s[1] for s in simulated if s[1] is not None)
        assert (M.shape[0] == 2 * n) == unstable
        direct = fitting._simulated_statistics(trajectories, R, signals, memo)
        fused = fitting._simulated_statistics(trajectories, R, signals, memo, recursion=(
            M, B_blocks, [s[2] for s in simulated]))
        np.testing.assert_allclose(fused.gram, direct.gram, rtol=0,
                                   atol=1e-11 * np.abs(direct.gram).max())
        np.testing.assert_array_equal(fused.sums, direct.sums)
        checked += 1
    assert checked >= 20


def test_delayed_response_input_moments_equal_the_direct_sums():
    # The lag-0 moments of every state (those not returned included) from the blocks.
    from dmdidc.regression.propagation import delayed_response

    rng = np.random.default_rng(4)
    for K, first in ((1, 0), (5, 3), (97, 12), (400, 37), (400, 399)):
        n, m, R = 4, 2, 3
        A = rng.standard_normal((n, n))
        A *= 0.95 / np.max(np.abs(np.linalg.eigvals(A)))
        B_blocks = rng.standard_normal((R + 1, 2, m))        # inputs enter 2 of the 4 states
        U = rng.standard_normal((m, K))
        full = delayed_response(A, B_blocks, U)
        states, (D0, start, last) = delayed_response(A, B_blocks, U, leading=2,
                                                     input_moments=first)
        np.testing.assert_array_equal(states, full[:2])
        scale = np.abs(full).max() * np.abs(U).max() * K
        np.testing.assert_allclose(D0, full[:, first:] @ U[:, first:].T, rtol=0,
                                   atol=1e-13 * scale)
        np.testing.assert_allclose(start, full[:, first], rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(last, full[:, -1], rtol=0, atol=1e-13 * scale)
        # the states' sums as one more column (a constant channel that drives nothing)
        _, (with_sums, _, _) = delayed_response(A, B_blocks, U, leading=2, input_moments=first,
                                                state_sums=True)
        np.testing.assert_allclose(with_sums[:, :m], D0, rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(with_sums[:, m], full[:, first:].sum(axis=1), rtol=0,
                                   atol=1e-13 * np.abs(full).max() * K)


def test_state_directions_refuse_only_instruments_that_the_solver_refuses():
    # The cheap rank bound on the simulated states (before their statistics pass) must never
    # refuse instruments that instrumental_solution accepts, and it catches the collinear ones
    # of large weakly excited plants (n = 50, m = 4: 54 of 74 directions in the scaling bench).
    from dmdidc.fitting import _require_state_directions, _solve, _state_moments, _statistics
    from dmdidc.regression.refined import simulated_states

    refused = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        n, m, R = int(rng.choice([3, 12, 30])), int(rng.integers(1, 3)), int(rng.integers(1, 4))
        Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
        A_d = Q @ np.diag(rng.uniform(0.3, 0.98, n)) @ Q.T
        B_blocks = rng.standard_normal((R + 1, n, m)) * (rng.random((R + 1, 1, 1)) < 0.5)
        U = rng.standard_normal((m, 3000))
        X = simulated_states(A_d, B_blocks, np.concatenate([U, np.zeros((m, 1))], axis=1))
        X = X + 10.0 ** rng.uniform(-6, -1) * rng.standard_normal(X.shape)
        signals = [simulated_states(A_d, B_blocks, U)]
        for centred in (False, True):
            try:
                _require_state_directions(_state_moments(signals, R), centred,
                                          n + m * (R + 1), m * (R + 1))
            except InsufficientExcitationError:
                refused += 1
                stats = _statistics([(X, U)], R, "simulated", 0, signals)
                with pytest.raises(InsufficientExcitationError):
                    _solve(stats, R, "iv", centred, svd_rank=None, rank_rtol=1e-10)
    assert refused > 0


def test_least_squares_from_the_statistics_moments_equals_its_own_gram_pass():
    # The LS fit starts the solver from the statistics (GramAccumulator.from_moments) instead
    # of a Gram pass of its own: the same moments and coefficients on random trajectory sets.
    from dmdidc.fitting import _statistics
    from dmdidc.regression.solution import GramAccumulator, least_squares

    rng = np.random.default_rng(0)
    for _ in range(20):
        n, m, R = int(rng.integers(1, 6)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
        trajectories = [(rng.standard_normal((n, int(K) + 1)), rng.standard_normal((m, int(K))))
                        for K in rng.integers(30, 300, size=2)]
        plain = _statistics(trajectories, R, None)
        given = GramAccumulator.from_moments(plain.gram, plain.sums, plain.n_samples,
                                             n_states=n, n_inputs=m, max_delay=R)
        own, pass_ = least_squares(trajectories, R, method="gram")
        started, _ = least_squares(trajectories, R, method="gram", accumulated=given)
        np.testing.assert_allclose(started.coefficients, own.coefficients, rtol=1e-10,
                                   atol=1e-12)
        for name in ("gram", "cross", "target_gram", "regressor_sum", "target_sum"):
            np.testing.assert_allclose(getattr(given, name), getattr(pass_, name),
                                       rtol=1e-12, atol=1e-10)
        assert given.n_samples == pass_.n_samples


@pytest.mark.parametrize("kind", ["constant", "linear"])
@pytest.mark.parametrize("seed", range(5))
def test_trajectory_trend_fit_is_least_squares_with_a_trend_per_trajectory(kind, seed):
    """Frisch-Waugh: the rows centred (detrended) over each trajectory's regression samples
    give the coefficients of least squares with explicit intercept (and slope) columns per
    trajectory, on noisy data of unequal lengths (a trajectory shorter than R + 1 adds
    nothing)."""
    rng = np.random.default_rng(seed)
    n, m, R = 2, 1, 2
    parts = [(rng.standard_normal((n, K + 1)) + rng.standard_normal((n, 1)),
              rng.standard_normal((m, K))) for K in (40, 57, 2, 33)]
    rows, targets, dummies = [], [], []
    for t, (X, U) in enumerate(parts):
        K = U.shape[1]
        if K <= R:
            continue
        rows.append(np.concatenate([X[:, R:K], lagged_inputs(U, R)]).T)
        targets.append(X[:, R + 1:].T)
        trend = np.zeros((K - R, 2 * len(parts)))
        trend[:, 2 * t] = 1.0
        trend[:, 2 * t + 1] = np.arange(R, K) if kind == "linear" else 0.0
        dummies.append(trend)
    design = np.concatenate([np.concatenate(rows), np.concatenate(dummies)], axis=1)
    design = design[:, np.any(design != 0.0, axis=0)]
    expected = np.linalg.lstsq(design, np.concatenate(targets), rcond=None)[0][:rows[0].shape[1]].T
    np.testing.assert_allclose(trajectory_trend_fit(parts, R, kind=kind), expected,
                               rtol=1e-9, atol=1e-12)


def test_trajectory_trend_fit_refuses_an_unknown_kind():
    with pytest.raises(ParameterError, match="kind must be 'constant' or 'linear'; got 'cubic'"):
        trajectory_trend_fit([(np.zeros((1, 11)), np.zeros((1, 10)))], 0, kind="cubic")


def _short_experiments(plant, count: int, length: int, noise: float, rng):
    """``count`` experiments of ``length`` samples from rest, white inputs, measurement noise
    of ``noise`` times each state's spread."""
    from dmdidc import random_excitation

    trajectories = []
    for _ in range(count):
        U = random_excitation(plant.n_inputs, length, rng=rng)
        X = plant.simulate(np.zeros(plant.n_states), U)
        trajectories.append((X, U))
    spread = np.sqrt(np.mean([X.var(axis=1) for X, _ in trajectories], axis=0))[:, None]
    return [(X + noise * spread * rng.standard_normal(X.shape), U) for X, U in trajectories]


def test_streamed_simulated_statistics_equal_those_of_the_whole_list(monkeypatch):
    # The refined stage simulates and sums its instruments a block of trajectories at a time
    # (SimulatedSignals): the statistics equal those of every signal simulated at once and
    # kept in a list (the former path), whatever the blocks, trajectories shorter than the
    # lags included.
    from dmdidc import fitting
    from dmdidc.regression import refined

    rng = np.random.default_rng(11)
    checked = 0
    for entries in (1, 40, 400):
        monkeypatch.setattr(refined, "_SIGNAL_ENTRIES", entries)
        for _ in range(6):
            n, m, R = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
            A = rng.standard_normal((n, n))
            A *= rng.uniform(0.3, 0.95) / np.max(np.abs(np.linalg.eigvals(A)))
            B_blocks = rng.standard_normal((R + 1, n, m))
            trajectories = [(rng.standard_normal((n, int(K) + 1)),
                             rng.standard_normal((m, int(K))) + rng.normal(0, 2, (m, 1)))
                            for K in rng.integers(1, 120, size=int(rng.integers(2, 12)))]
            memo = {}
            try:
                first = R + fitting._input_statistics(trajectories, R, memo).instrument_lags
            except ValueError:
                continue
            inputs = [U for _, U in trajectories]
            whole = refined.simulated_recursions(A, B_blocks, inputs, first)
            M = next((s[1] for s in whole if s[1] is not None), None)
            listed = fitting._simulated_statistics(
                trajectories, R, [s[0] for s in whole], memo,
                recursion=None if M is None else (M, B_blocks, [s[2] for s in whole]))
            streamed = fitting._simulated_statistics(
                trajectories, R, refined.SimulatedSignals(A, B_blocks, inputs), memo)
            np.testing.assert_allclose(streamed.gram, listed.gram, rtol=0,
                                       atol=1e-11 * np.abs(listed.gram).max())
            np.testing.assert_allclose(streamed.sums, listed.sums, rtol=0,
                                       atol=1e-11 * np.abs(listed.sums).max())
            for name in ("n_samples", "n_trajectories", "min_trajectory_samples",
                         "max_trajectory_samples"):
                assert getattr(streamed, name) == getattr(listed, name), name
            checked += 1
    assert checked >= 12


def test_refined_statistics_memory_does_not_grow_with_the_experiments(monkeypatch):
    # 30 000 experiments of 200 samples at n = 50 kept every simulated signal (2.4 GB, as
    # large as the states): now a block at a time.  The peak traced inside the refined
    # statistics is about the same for 100 and 800 experiments, and far below the 800
    # experiments' signals.
    import tracemalloc

    from dmdidc import fitting
    from dmdidc.regression import refined

    monkeypatch.setattr(refined, "_SIGNAL_ENTRIES", 1 << 16)
    rng = np.random.default_rng(3)
    n, m, R = 20, 2, 3
    A = rng.standard_normal((n, n))
    A *= 0.9 / np.max(np.abs(np.linalg.eigvals(A)))
    B_blocks = rng.standard_normal((R + 1, n, m))
    peaks = {}
    for count in (100, 800):
        trajectories = [(rng.standard_normal((n, 201)), rng.standard_normal((m, 200)))
                        for _ in range(count)]
        memo = {}
        fitting._input_statistics(trajectories, R, memo)
        signals = refined.SimulatedSignals(A, B_blocks, [U for _, U in trajectories])
        tracemalloc.start()
        try:
            fitting._simulated_statistics(trajectories, R, signals, memo)
            peaks[count] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    listed = 800 * n * 200 * 8
    assert peaks[800] < 1.5 * peaks[100] + 1e6, peaks
    assert peaks[800] < 0.25 * listed, (peaks, listed)


def test_blocks_of_experiments_give_the_fit_of_one_block(monkeypatch):
    # Old against new on a few hundred noisy experiments: the default fit with the refined
    # instruments simulated in one block (as all were kept before) and in many small blocks
    # chooses the same estimator, and its coefficients and standard errors agree far inside
    # a standard error.
    from dmdidc.regression import refined

    rng = np.random.default_rng(5)
    plant = random_plant(rng, n_states=3, n_inputs=2, max_delay=3)
    trajectories = _short_experiments(plant, 300, 60, 0.03, rng)
    fits = {}
    for entries in (1 << 40, 64):
        monkeypatch.setattr(refined, "_SIGNAL_ENTRIES", entries)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[entries] = DMDidc(max_delay=3).fit([X for X, _ in trajectories],
                                                    [U for _, U in trajectories], dt=plant.dt)
    one, many = (fits[e].regression_ for e in (1 << 40, 64))
    assert one.estimator == many.estimator == "iv"
    assert np.max(np.abs(one.coefficients - many.coefficients) / one.standard_errors) < 1e-6
    np.testing.assert_allclose(many.standard_errors, one.standard_errors, rtol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_many_short_experiments_agree_with_one_long_record(seed):
    # Realistic data: a random plant, 30 dB measurement noise, 150 experiments of 200
    # samples from rest against one record of as many samples (independent noise and
    # inputs): the default fits agree within their standard errors (the difference of two
    # independent estimates in units of its standard deviation; 5 is far in the tail for
    # the few tens of coefficients), and each is within its standard errors of the plant.
    rng = np.random.default_rng(100 + seed)
    R = 4
    plant = random_plant(rng, n_states=3, n_inputs=2, max_delay=R)
    many = _short_experiments(plant, 150, 200, 10 ** -1.5, rng)
    one = _short_experiments(plant, 1, 150 * 200, 10 ** -1.5, rng)
    fits = []
    for data in (many, one):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(DMDidc(max_delay=R).fit([X for X, _ in data], [U for _, U in data],
                                                dt=plant.dt).regression_)
    truth = np.hstack([plant.A_d, *plant.B_blocks])
    a, b = fits
    assert a.coefficients.shape == truth.shape
    gap = np.abs(a.coefficients - b.coefficients) / np.hypot(a.standard_errors,
                                                             b.standard_errors)
    assert gap.max() < 5.0, (gap.max(), a.estimator, b.estimator)
    for fit in fits:
        assert np.max(np.abs(fit.coefficients - truth) / fit.standard_errors) < 5.0


def test_streamed_medians_are_numpy_medians(monkeypatch):
    # Robust IV takes the residuals' medians in passes over blocks of them (a bounded number
    # held): the same numbers as numpy.median of them side by side, with outliers of 1e6,
    # ties, signed zeros, values one ulp apart and extremes near the largest float.
    from dmdidc import fitting

    monkeypatch.setattr(fitting, "_ROBUST_ENTRIES", 5000)
    rng = np.random.default_rng(4)
    for trial in range(40):
        count = int(rng.integers(2000, 30000))
        values = rng.standard_normal((3, count)) * np.exp(5 * rng.standard_normal((3, 1)))
        if trial % 3 == 0:
            values[:, rng.random(count) < 0.01] *= 1e6
        if trial % 4 == 1:
            values = np.round(values)
        if trial % 5 == 2:
            values[0] = 1.5
        if trial % 7 == 3:
            values[1] = 0.0
            values[1, ::3] = -0.0
        if trial % 11 == 4:
            values[2, ::2] = 1e308
            values[2, 1::4] = -1e308
        if trial % 13 == 5:
            values[0] = 1 + np.round(3 * rng.standard_normal(count)) * np.spacing(1.0)
        blocks = np.array_split(values, int(rng.integers(1, 9)), axis=1)
        got = fitting._streamed_medians(lambda blocks=blocks: iter(blocks), count, 3)
        np.testing.assert_array_equal(got, np.median(values, axis=1))


@pytest.mark.parametrize("seed", range(3))
def test_streamed_medians_of_extreme_rows_in_few_passes(monkeypatch, seed):
    # rows mixing the largest floats, denormal spreads, 1e+-300, Cauchy tails, ties and -0:
    # numpy's medians (no crash: the largest float once made the bins' scale 0, inf * 0),
    # and glitches 1e300 times the spread cost a few passes, not 66 with the row collected
    from dmdidc import fitting

    monkeypatch.setattr(fitting, "_ROBUST_ENTRIES", 200)
    rng = np.random.default_rng(seed)
    big = np.finfo(float).max
    pools = [lambda k: rng.standard_normal(k), lambda k: rng.integers(-2, 3, k) * 1.0,
             lambda k: np.full(k, big) * rng.choice([-1, 1], k), lambda k: np.full(k, -0.0),
             lambda k: 1e300 * rng.standard_normal(k), lambda k: 1e-300 * rng.standard_normal(k),
             lambda k: np.full(k, 1e-320) * rng.choice([-1, 1], k),
             lambda k: rng.standard_cauchy(k) * 1e10, lambda k: 1e-310 * rng.random(k)]
    for _ in range(60):
        count, rows = int(rng.integers(1, 1500)), int(rng.integers(1, 4))
        values = np.empty((rows, count))
        for r in range(rows):
            parts, which = rng.integers(0, len(pools), 3), rng.integers(0, 3, count)
            for j, pool in enumerate(parts):
                values[r, which == j] = pools[pool](int((which == j).sum()))
        blocks = np.array_split(values, int(rng.integers(1, 9)), axis=1)
        with np.errstate(all="ignore"):
            got = fitting._streamed_medians(lambda blocks=blocks: iter(blocks), count, rows)
            np.testing.assert_array_equal(got, np.median(values, axis=1))
    for glitch, spread in ((1e300, 1e-300), (1e12, 1.0), (30.0, 1.0)):
        values = spread * rng.standard_normal((1, 5001))
        values[0, 7], values[0, 8] = glitch, -glitch
        passes = []

        def blocks(values=values, passes=passes):
            passes.append(1)
            return (values[:, a:a + 100] for a in range(0, values.shape[1], 100))
        got = fitting._streamed_medians(blocks, values.shape[1], 1)
        np.testing.assert_array_equal(got, np.median(values, axis=1))
        assert len(passes) <= 8, (glitch, len(passes))


def _with_outliers(trajectories, share, size, rng):
    """The trajectories with ``share`` of their samples (every state) moved by ``size`` of
    the states' spread, either sign."""
    spread = np.sqrt(np.mean([X.var(axis=1) for X, _ in trajectories], axis=0))[:, None]
    moved = []
    for X, U in trajectories:
        hit = rng.random(X.shape[1]) < share
        X = X.copy()
        X[:, hit] += size * spread * rng.choice([-1.0, 1.0], (X.shape[0], int(hit.sum())))
        moved.append((X, U))
    return moved


@pytest.mark.parametrize("seed", range(3))
def test_robust_iv_in_groups_gives_the_fit_of_one_group(monkeypatch, seed):
    # Old against new: robust IV summed its weighted moments over every sample laid out at
    # once; now over groups of samples, the medians in passes.  On a few hundred noisy
    # experiments with 0.5 % outliers of 30 sd, groups of ~40 samples and medians in passes
    # give the coefficients and standard errors of one group far inside a standard error,
    # and down-weight as many samples.
    from dmdidc import fitting
    from dmdidc.regression import refined

    rng = np.random.default_rng(20 + seed)
    plant = random_plant(rng, n_states=int(rng.integers(2, 5)), n_inputs=2, max_delay=3)
    trajectories = _with_outliers(_short_experiments(plant, 300, 60, 0.03, rng), 0.005,
                                  30.0, rng)
    fits = {}
    for entries in (1 << 40, 1000):
        monkeypatch.setattr(fitting, "_ROBUST_ENTRIES", entries)
        monkeypatch.setattr(refined, "_SIGNAL_ENTRIES", min(entries, 1 << 22))
        fits[entries] = quiet_fit(DMDidc(max_delay=3, estimator="huber_iv"),
                                  [X for X, _ in trajectories], [U for _, U in trajectories],
                                  dt=plant.dt)
    one, many = (fits[e].regression_ for e in (1 << 40, 1000))
    assert one.estimator == many.estimator == "huber_iv"
    assert np.max(np.abs(one.coefficients - many.coefficients) / one.standard_errors) < 1e-6
    np.testing.assert_allclose(many.standard_errors, one.standard_errors, rtol=1e-6)
    notes = [[note for note in fit.diagnostics_.notes if "robust IV" in note]
             for fit in fits.values()]
    assert notes[0] == notes[1] and len(notes[0]) == 1


@pytest.mark.parametrize("seed", range(3))
def test_robust_iv_on_many_short_experiments_agrees_with_one_long_record(seed):
    # Realistic data: a random plant, 30 dB measurement noise and 0.5 % outliers of 30 sd,
    # 150 experiments of 200 samples against one record of as many samples (independent
    # noise, inputs and outliers): the robust fits agree within their standard errors
    # (5 is far in the tail for the few tens of coefficients), each within its standard
    # errors of the plant.
    rng = np.random.default_rng(200 + seed)
    R = 4
    plant = random_plant(rng, n_states=3, n_inputs=2, max_delay=R)
    fits = []
    for count, length in ((150, 200), (1, 150 * 200)):
        data = _with_outliers(_short_experiments(plant, count, length, 10 ** -1.5, rng),
                              0.005, 30.0, rng)
        fits.append(quiet_fit(DMDidc(max_delay=R, estimator="huber_iv"),
                              [X for X, _ in data], [U for _, U in data],
                              dt=plant.dt).regression_)
    truth = np.hstack([plant.A_d, *plant.B_blocks])
    a, b = fits
    gap = np.abs(a.coefficients - b.coefficients) / np.hypot(a.standard_errors,
                                                             b.standard_errors)
    assert gap.max() < 5.0, gap.max()
    for fit in fits:
        assert fit.estimator == "huber_iv"
        assert np.max(np.abs(fit.coefficients - truth) / fit.standard_errors) < 5.0


def test_robust_iv_memory_does_not_grow_with_the_experiments(monkeypatch):
    # Robust IV laid out every sample's [phi; y; z] (4 copies of ~3 n + 2 m (R + 1) rows):
    # now a group at a time.  The peak traced inside robust_refit is about the same for 100
    # and 800 experiments, and far below the 800 experiments' states.
    import tracemalloc

    from dmdidc import fitting
    from dmdidc.regression import refined

    monkeypatch.setattr(refined, "_SIGNAL_ENTRIES", 1 << 16)
    monkeypatch.setattr(fitting, "_ROBUST_ENTRIES", 1 << 16)
    rng = np.random.default_rng(6)
    plant = random_plant(rng, n_states=6, n_inputs=2, max_delay=3)
    peaks = {}
    for count in (100, 800):
        trajectories = _with_outliers(_short_experiments(plant, count, 100, 0.03, rng), 0.005,
                                      30.0, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcome = fitting.fit_trajectories(
                trajectories, None, max_delay=3, estimator="iv", instruments="auto",
                instrument_lags=None, offset="auto", method="auto", svd_rank=None,
                rank_rtol=1e-10, chunk_size=65536, level=0.01)
        tracemalloc.start()
        try:
            robust = fitting.robust_refit(outcome, trajectories, 3)
            peaks[count] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert robust.estimator == "huber_iv"
    states = 800 * 6 * 101 * 8
    assert peaks[800] < 1.5 * peaks[100] + 1e6, peaks
    assert peaks[800] < 0.5 * states, (peaks, states)


def test_the_collinearity_story_is_told_only_when_the_instruments_are_collinear():
    # _collinear_states explains a refused refined-IV solve by too few instrument directions;
    # when the instruments span every regressor direction the solver refused for another
    # reason, and its own error is passed on unchanged
    from dmdidc.fitting import _collinear_states, _statistics
    from dmdidc.regression.refined import simulated_states

    rng = np.random.default_rng(3)
    n, m, R = 3, 1, 2
    A_d = np.diag([0.5, 0.7, 0.9])
    B_blocks = rng.standard_normal((R + 1, n, m))
    U = rng.standard_normal((m, 2000))
    X = simulated_states(A_d, B_blocks, np.concatenate([U, np.zeros((m, 1))], axis=1))
    signals = [simulated_states(A_d, B_blocks, U)]
    stats = _statistics([(X, U)], R, "simulated", 0, signals)
    other = InsufficientExcitationError("some other refusal")
    assert _collinear_states(other, stats, False, n, m, R, n + m * (R + 1)) is other
    told = _collinear_states(other, stats, False, n, m, R, 10 * (n + m * (R + 1)))
    assert told is not other and "excite fewer state directions" in str(told)
