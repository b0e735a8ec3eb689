"""DelayedKalmanObserver warns when an unstable mode is barely seen by the sensors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from controllers.observer import DETECTABILITY_MARGIN, DelayedKalmanObserver
from dmdidc.model import DelayedPlant


def plant_and_view(seed: int):
    """A random plant with one unstable mode (rate a > 0) and its right eigenvector v, and a
    sensor row orthogonal to v: C + e v' sees it with visibility about e."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    rates = np.concatenate([[rng.uniform(0.05, 0.4)], -rng.uniform(0.2, 1.5, n - 1)])
    S = rng.standard_normal((n, n)) + 2 * np.eye(n)
    plant = DelayedPlant.from_continuous(S @ np.diag(rates) @ np.linalg.inv(S),
                                         rng.standard_normal((n, 1)), delay=rng.uniform(0, 2),
                                         dt=1.0)
    v = S[:, 0] / np.linalg.norm(S[:, 0])
    C = rng.standard_normal((1, n))
    C -= (C @ v)[:, None] * v[None, :]           # C v = 0
    return plant, v, C / np.linalg.norm(C)


def caught(plant, C):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        observer = DelayedKalmanObserver(plant, C=C)
    return observer, [str(w.message) for w in record
                      if "detectability margin" in str(w.message)]


@pytest.mark.parametrize("seed", range(6))
def test_a_barely_seen_unstable_mode_warns_and_a_seen_one_does_not(seed):
    plant, v, C = plant_and_view(seed)
    weak, said = caught(plant, C + 3e-7 * v[None, :])
    assert len(said) == 1 and "add a sensor" in said[0]
    # the premise: the gain is huge (the noise it passes on with it)
    assert np.abs(weak.gain).max() > 1e5
    strong, said = caught(plant, C + 0.3 * v[None, :])
    assert said == [] and np.abs(strong.gain).max() < 1e4


def test_a_barely_seen_stable_mode_does_not_warn():
    plant = DelayedPlant.from_continuous(np.diag([-0.1, -0.5]), [[1.0], [1.0]], delay=1.0,
                                         dt=1.0)
    assert caught(plant, [[1e-9, 1.0]])[1] == []


def test_the_trial_observer():
    plant = DelayedPlant.from_continuous(np.diag([0.1, -0.5]), [[1.0], [1.0]], delay=1.0,
                                         dt=1.0)
    assert len(caught(plant, [[1e-9, 1.0]])[1]) == 1
    assert caught(plant, [[10 * DETECTABILITY_MARGIN, 1.0]])[1] == []
