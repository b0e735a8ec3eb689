"""The frozen-signal check: a stuck sensor is loud and named; quantized or resting data are not."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc, IdData
from dmdidc.inference.frozen import FROZEN_SAMPLES, frozen_signal_check
from simulations.studies.data_kinds import assess, make_data, random_plant

T, R = 0.5, 4


def _fit(*args, **keywords):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay=R).fit(*args, **keywords)
    return est, [str(w.message) for w in caught]


def _adc(X, bits):
    low, high = X.min(axis=1, keepdims=True), X.max(axis=1, keepdims=True)
    step = (high - low) / (2 ** bits - 1)
    return low + step * np.round((X - low) / step)


@pytest.mark.parametrize("seed", range(5))
def test_a_stuck_sensor_is_named_and_its_remedy_works(seed):
    # one state frozen for 10 % of the record: before the check only 'whiteness' failed,
    # blaming coloured noise
    plant = random_plant(1000 + seed)
    data = make_data("stuck_sensor", plant, rng=seed)
    est, messages = _fit(data.X, data.U, dt=T)
    check = est.diagnostics_["frozen_signal"]
    assert check.failed and check.statistic >= 0.1 * 3000 - 1
    assert any("check 'frozen_signal' failed" in m and "missing='drop'" in m for m in messages)
    # the remedy: the samples it names set to NaN, the record split there
    state, first, last = map(int, re.search(r"state (\d+) .* \(samples (\d+) \.\. (\d+)\)",
                                            check.finding).groups())
    X = data.X.copy()
    X[state, first + 1:last + 1] = np.nan
    fixed, messages = _fit(IdData(X, data.U, dt=T, missing="drop"))
    assert fixed.diagnostics_["frozen_signal"].passed
    assert not any("frozen_signal" in m for m in messages)
    assert assess(lambda d: fixed, data, plant).right


@pytest.mark.parametrize("kind", ["white", "lowpass_inputs", "multisine", "closed_loop",
                                  "outliers", "offset"])
def test_measured_states_are_never_frozen(kind):
    for seed in range(3):
        data = make_data(kind, random_plant(1000 + seed), rng=seed)
        assert frozen_signal_check([(data.X, data.U)], R).passed, (kind, seed)


@pytest.mark.parametrize("seed", range(4))
def test_quantized_resting_or_exact_data_raise_no_alarm(seed):
    rng = np.random.default_rng(seed)
    plant = random_plant(1000 + seed)
    # 6-bit ADC on low-pass data (runs of 9-11 equal readings: the signal moves by less
    # than 10 of its steps over as many samples) and 8-bit on white data, both noise-free
    smooth = make_data("lowpass_inputs", plant, snr_db=300, rng=seed)
    assert frozen_signal_check([(_adc(smooth.X, 6), smooth.U)], R).passed
    white = make_data("white", plant, snr_db=300, rng=seed)
    assert frozen_signal_check([(_adc(white.X, 8), white.U)], R).passed
    # steps: between them the inputs hold and the quantized states settle exactly
    U = np.repeat(rng.standard_normal((2, 6)), 500, axis=1)
    X = _adc(plant.simulate(np.zeros(3), U), 8)
    assert frozen_signal_check([(X, U)], R).passed
    # exact data from rest with long delays (a chain of states waits R + n samples)
    slow = DelayedPlant.from_continuous(np.diag([-0.3, -0.4, -0.5]) + np.diag([1.0, 1.0], -1),
                                        [[1.0], [0.0], [0.0]], [5.9], T, max_delay=12)
    U = rng.standard_normal((1, 500))
    X = slow.simulate(np.zeros(3), U)
    assert np.all(X[2, :12] == 0.0)                 # the last state rests 12 samples
    assert frozen_signal_check([(X, U)], 12).passed


def test_long_records_are_screened_and_short_runs_tolerated():
    rng = np.random.default_rng(0)
    plant = random_plant(1000)
    U = rng.standard_normal((2, 100_000))
    X = plant.simulate(np.zeros(3), U) + 0.01 * rng.standard_normal((3, 100_001))
    assert frozen_signal_check([(X, U)], R).passed
    X[2, 40_000:40_050] = X[2, 39_999]             # 50 samples: longer than the stride (20)
    check = frozen_signal_check([(X, U)], R)
    assert check.failed and check.statistic == 50 and "state 2" in check.finding
    # a repeat over FROZEN_SAMPLES samples (a logger that missed a few updates) is tolerated
    X[2, 40_000:40_050] = X[2, 39_999] + rng.standard_normal(50)
    X[2, 40_020:40_020 + FROZEN_SAMPLES] = X[2, 40_019]
    assert frozen_signal_check([(X, U)], R).passed


def test_without_inputs_not_applicable():
    X = np.zeros((2, 100))
    assert frozen_signal_check([(X, np.zeros((0, 99)))], R).passed is None


# the fit paths that transform the data before the regression: a removed line turns a run
# of equal values into a ramp, the POD rotation spreads a stuck sensor over every mode (the
# check missed both, statistic 0, before it read the data as given)
DETRENDS = [None, "constant", "linear"]
K = 1500


def _frozen_through_fit(X, U, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=R, **options).fit(X, U, dt=T).diagnostics_["frozen_signal"]


def _sensors(X, rng):
    """Six sensors of the three states (a full-rank mix: ``svd_rank=3`` recovers them)."""
    return rng.standard_normal((6, X.shape[0])) @ X


@pytest.mark.parametrize("seed", range(4))
def test_a_stuck_sensor_is_caught_through_every_detrend_and_svd_rank(seed):
    rng = np.random.default_rng(seed)
    plant = random_plant(1000 + seed)
    data = make_data("stuck_sensor", plant, samples=K, rng=seed)
    stuck = int(np.flatnonzero(np.any(np.diff(data.X, axis=1) == 0, axis=1))[0])
    for detrend in DETRENDS:
        check = _frozen_through_fit(data.X, data.U, detrend=detrend)
        assert check.failed and check.statistic >= 0.1 * K - 1, (detrend, check)
        assert f"state {stuck} " in check.finding
    # many sensors of a few modes, one sensor stuck: named among the sensors as given
    Y = _sensors(make_data("white", plant, samples=K, rng=seed).X, rng)
    sensor, start = int(rng.integers(6)), int(rng.integers(200, K - 400))
    Y[sensor, start:start + 150] = Y[sensor, start - 1]
    for detrend in DETRENDS:
        check = _frozen_through_fit(Y, data.U, svd_rank=3, detrend=detrend)
        assert check.failed and check.statistic >= 149, (detrend, check)
        assert f"state {sensor} " in check.finding


def _quantized(X, per_rms):
    step = np.sqrt(np.mean(X ** 2, axis=1, keepdims=True)) / per_rms
    return step * np.round(X / step)


@pytest.mark.parametrize("kind", ["white", "lowpass_inputs", "multisine", "quantized"])
def test_no_false_alarm_through_every_detrend_and_svd_rank(kind):
    for seed in range(3):
        rng = np.random.default_rng(seed)
        plant = random_plant(1000 + seed)
        data = make_data("lowpass_inputs" if kind == "quantized" else kind, plant,
                         samples=K, rng=seed)
        # quantized: a coarse reading of smooth states (1/20 of their rms per step)
        X = _quantized(data.X, 20) if kind == "quantized" else data.X
        for detrend in DETRENDS:
            check = _frozen_through_fit(X, data.U, detrend=detrend)
            assert check.passed, (kind, seed, detrend, check)
        Y = _sensors(X, rng)
        Y = _quantized(Y, 20) if kind == "quantized" else Y
        assert _frozen_through_fit(Y, data.U, svd_rank=3).passed, (kind, seed)
