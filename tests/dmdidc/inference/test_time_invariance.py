"""The time-invariance check: a plant that changes mid-record is loud; stationary data are not."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc
from dmdidc.inference.residuals import model_residuals
from dmdidc.inference.time_invariance import time_invariance_check
from simulations.studies.data_kinds import _arrival_states, make_data, random_plant

T, R = 0.5, 4


def _fit(X, U):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay=R).fit(X, U, dt=T)
    return est, [str(w.message) for w in caught]


@pytest.mark.parametrize("seed", range(5))
def test_a_delay_that_jumps_mid_record_is_loud(seed):
    # each channel's delay grows by 0.5-1 T at mid-record: the fit averages the two plants
    # (2 of 10 such fits were 0.3 T off without any warning before the check)
    plant = random_plant(1000 + seed)
    data = make_data("delay_jump", plant, rng=seed)
    est, messages = _fit(data.X, data.U)
    assert est.diagnostics_["time_invariance"].failed
    assert any("check 'time_invariance' failed" in m and "split the record" in m
               for m in messages)


@pytest.mark.parametrize("seed", range(3))
def test_a_gain_that_changes_mid_record_is_loud(seed):
    rng = np.random.default_rng(seed)
    plant = random_plant(2000 + seed)
    changed = DelayedPlant.from_continuous(plant.A_c, 1.5 * plant.B_c, plant.delay, T,
                                           max_delay=R)
    U = rng.standard_normal((2, 3000))
    first = plant.simulate(np.zeros(3), U[:, :1500])
    X = np.hstack([first, changed.simulate(first[:, -1], U[:, 1500:])[:, 1:]])
    X += 0.03 * np.sqrt(np.mean(X ** 2, axis=1, keepdims=True)) * rng.standard_normal(X.shape)
    assert _fit(X, U)[0].diagnostics_["time_invariance"].failed


@pytest.mark.parametrize("kind", ["white", "lowpass_inputs", "multisine", "closed_loop",
                                  "coloured_noise", "offset", "outliers", "partial"])
def test_stationary_data_of_every_kind_raise_no_alarm(kind):
    # the halves' difference cancels whatever stationary misspecification (feedback, coloured
    # noise, a missing state) shifts both halves' moments by
    for seed in range(4):
        data = make_data(kind, random_plant(1000 + seed), rng=seed)
        est, messages = _fit(data.X, data.U)
        assert est.diagnostics_["time_invariance"].passed, (kind, seed)
        assert not any("time_invariance" in m for m in messages)


@pytest.mark.parametrize("seed", range(4))
def test_delay_jitter_heavy_tails_and_short_records_raise_no_alarm(seed):
    rng = np.random.default_rng(seed)
    plant = random_plant(1000 + seed)
    U = rng.standard_normal((2, 3000))
    # every command delayed by its channel's delay +- 0.3 T (uniform): stationary
    arrivals = np.maximum((np.arange(3000) + rng.uniform(-0.3, 0.3, U.shape)) * T
                          + plant.delay[:, None], np.arange(3000) * T)
    X = _arrival_states(plant, U, arrivals)
    scale = 0.03 * np.sqrt(np.mean(X ** 2, axis=1, keepdims=True))
    assert _fit(X + scale * rng.standard_normal(X.shape), U)[0] \
        .diagnostics_["time_invariance"].passed
    heavy = scale * rng.standard_t(3, X.shape) / np.sqrt(3.0)
    X = plant.simulate(np.zeros(3), U)
    assert _fit(X + heavy, U)[0].diagnostics_["time_invariance"].passed
    short = make_data("white", plant, samples=300, rng=seed)
    assert _fit(short.X, short.U)[0].diagnostics_["time_invariance"].passed


def test_too_few_samples_or_no_inputs_are_not_tested():
    plant = random_plant(1000)
    data = make_data("white", plant, samples=100, rng=0)
    parts = model_residuals([(data.X, data.U)], plant.A_d, plant.B_blocks)
    check = time_invariance_check(parts, R, 0.01 / 9)
    assert check.passed is None and "not tested" in check.finding
    E = np.zeros((3, 50))
    assert time_invariance_check([(E, np.zeros((0, 54)), E)], R, 0.01).passed is None


@pytest.mark.parametrize("seed", range(3))
def test_a_drifting_sensor_names_its_remedy_and_the_remedy_is_quiet(seed):
    # each state's sensor drifts by 1 x its rms over the record: before, only 'whiteness'
    # named a cause (coloured noise)
    rng = np.random.default_rng(seed)
    data = make_data("white", random_plant(1000 + seed), rng=seed)
    ramp = np.linspace(0.0, 1.0, data.X.shape[1])
    rms = np.sqrt(np.mean(data.X ** 2, axis=1, keepdims=True))
    X = data.X + rms * rng.choice([-1.0, 1.0], (3, 1)) * ramp
    check = _fit(X, data.U)[0].diagnostics_["time_invariance"]
    assert check.failed and "mean" in check.finding and "detrend='linear'" in check.remedy
    est = DMDidc(max_delay=R, detrend="linear")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert est.fit(X, data.U, dt=T).diagnostics_["time_invariance"].passed


@pytest.mark.parametrize("seed", range(2))
def test_many_short_experiments_from_random_states_raise_no_alarm(seed):
    # 20 experiments of 150 samples, each from a random initial state (40 such fits, white
    # and low-pass inputs: largest statistic 0.81 of its threshold)
    rng = np.random.default_rng(seed)
    plant = random_plant(3000 + seed)
    Xs, Us = [], []
    for _ in range(20):
        U = rng.standard_normal((2, 150))
        X = plant.simulate(rng.standard_normal(3), U)
        Xs.append(X + 0.03 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape))
        Us.append(U)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=R).fit(Xs, Us, dt=T)
    assert est.diagnostics_["time_invariance"].passed
    assert est.diagnostics_["frozen_signal"].passed


@pytest.mark.parametrize("seed", range(3))
def test_an_excitation_that_changes_between_halves_is_named_not_blamed_on_the_plant(seed):
    # Steps or a changed excitation: a misspecified model (here a wrong mode) leaves different
    # residual-input moments in each half although the plant did not change; the finding
    # says the inputs differ instead of "the plant changed".
    from dmdidc import DelayedPlant
    from dmdidc.inference.residuals import model_residuals

    rng = np.random.default_rng(seed)
    plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], [0.7], 0.5, max_delay=3)
    wrong = DelayedPlant.from_continuous([[-0.2]], [[1.0]], [0.7], 0.5, max_delay=3)
    U = rng.standard_normal((1, 4000)) * np.repeat([0.3, 3.0], 2000)
    X = plant.simulate([0.0], U) + 0.01 * rng.standard_normal((1, 4001))
    check = time_invariance_check(model_residuals([(X, U)], wrong.A_d, wrong.B_blocks), 3,
                                  0.01 / 9)
    assert check.failed
    assert "excite the halves differently" in check.finding
    assert "need not have changed" in check.finding
