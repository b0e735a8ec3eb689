"""The delay_ambiguity check: a delay whose whole part the block test decided by zeroing a weak
B^(w-1) is warned about (batch DMDidc), and strong channels with whole delays raise no alarm."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc
from dmdidc.inference.ambiguity import AMBIGUITY, delay_ambiguity
from simulations.studies.data_kinds import make_data, random_plant


def _plant(seed: int, gain: float, delay: np.ndarray | None = None) -> DelayedPlant:
    """A random 3-state, 2-input plant (T = 1 s) with channel 1 scaled by ``gain``."""
    rng = np.random.default_rng(seed)
    base = random_plant(rng, n_states=3, n_inputs=2, dt=1.0, max_delay=4)
    B_c = base.B_c * np.array([1.0, gain])
    return DelayedPlant.from_continuous(base.A_c, B_c, base.delay if delay is None else delay,
                                        1.0, max_delay=4)


def _fit(plant: DelayedPlant, kind: str, samples: int, snr_db: float, seed: int):
    data = make_data(kind, plant, samples=samples, snr_db=snr_db, rng=seed + 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=4).fit(data.X, data.U, dt=1.0, reference=data.reference)


def test_weak_channel_in_closed_loop_is_right_or_flagged():
    # the sweep of docs/scripts/weak_channel_check.py (these seeds hold two confidently wrong
    # fits: 1.30 T, 99 % [1.00, 1.60], for 0.81 T; 3.36 T, [2.92, 3.80], for 2.68 T)
    flagged = 0
    for seed in range(8, 20):
        rng = np.random.default_rng(10_000 + seed)
        plant = _plant(seed, rng.uniform(0.05, 0.3))
        try:
            fit = _fit(plant, "closed_loop", 600, rng.uniform(20, 30), seed)
            ci = fit.delay_ci(0.99)
        except ValueError:          # refused (no continuous model, a quiet loop): loud
            continue
        check = fit.diagnostics_["delay_ambiguity"]
        flagged += check.failed
        wrong = (np.abs(fit.delay - plant.delay) > AMBIGUITY) & (
            (ci.low > plant.delay) | (plant.delay > ci.high))
        assert not wrong.any() or check.failed, (seed, fit.delay, plant.delay)
        if check.failed:            # the finding names both candidate delays
            assert "with it fitted" in check.finding and "set to zero" in check.finding
    assert flagged >= 1


@pytest.mark.parametrize("kind", ["white", "closed_loop"])
def test_strong_channels_with_whole_delays_raise_no_alarm(kind):
    alarms = []
    for seed in range(30):
        rng = np.random.default_rng(20_000 + seed)
        plant = _plant(seed, 1.0, delay=rng.integers(1, 4, 2).astype(float))
        try:
            fit = _fit(plant, kind, 500, rng.uniform(20, 30), seed)
        except ValueError:
            continue
        alarms += [seed] if fit.diagnostics_["delay_ambiguity"].failed else []
    # a 99 % check on noisy draws (500 samples, 20-30 dB): at most one alarm in 30 (the
    # delay fits weighted by the states' noise, 2026-11-27: 1 of 30 in closed loop, seed 10,
    # 3.16 T read for 3 T inside its interval; 0 before on these draws)
    assert len(alarms) <= 1, alarms


def test_strong_fractional_delays_raise_no_alarm():
    for seed in range(30):
        fit = _fit(_plant(seed, 1.0), "white", 500, 25.0, seed)
        assert fit.diagnostics_["delay_ambiguity"].passed, seed


def test_interval_is_computed_only_when_the_recoveries_differ():
    fit = _fit(_plant(3, 1.0, delay=np.array([2.0, 1.0])), "white", 500, 30.0, 3)

    def interval():
        raise AssertionError("the interval was not needed")

    found = delay_ambiguity(fit.A_c, fit.regression_, fit.block_test_.active, fit.delay, 1.0,
                            interval)
    assert not found.ambiguous.any()
    assert np.all(np.abs(found.below - found.estimate) <= AMBIGUITY)
