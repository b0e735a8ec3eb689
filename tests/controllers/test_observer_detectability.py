"""DelayedKalmanObserver refuses a mode it cannot estimate, warns when an unstable mode is
barely seen by the sensors or the estimate converges very slowly, and reads its default noise
in the outputs' units."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from controllers.observer import DETECTABILITY_MARGIN, SLOW_ERROR_PERIODS, DelayedKalmanObserver
from dmdidc.errors import ParameterError
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


def marginal_plant(rng, seen):
    """A random plant with an undamped oscillation (or an integrator) and stable modes, and a
    sensor that sees the marginal mode at visibility about ``seen``."""
    n_stable = int(rng.integers(1, 3))
    if rng.random() < 0.5:
        w = rng.uniform(0.3, 2.0)
        core, size = np.array([[0.0, w], [-w, 0.0]]), 2
    else:
        core, size = np.zeros((1, 1)), 1
    n = size + n_stable
    A_c = np.zeros((n, n))
    A_c[:size, :size] = core
    A_c[size:, size:] = -np.diag(rng.uniform(0.5, 2.0, n_stable))
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((n, 1)) + 1.0,
                                         rng.uniform(0.0, 1.5), 0.5)
    C = np.concatenate([seen * rng.standard_normal(size) / np.sqrt(size),
                        rng.standard_normal(n_stable)])[None, :]
    return plant, C


def observer_warnings(plant, C, **options):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        observer = DelayedKalmanObserver(plant, C=C, **options)
    return observer, [str(w.message) for w in record if "slow estimate" in str(w.message)]


@pytest.mark.parametrize("seed", range(6))
def test_an_unseen_marginal_mode_is_refused_a_barely_seen_one_warns_a_seen_one_passes(seed):
    rng = np.random.default_rng(seed)
    plant, C = marginal_plant(rng, 0.0)
    with pytest.raises(ParameterError, match=r"not detectable.*(the mode|estimation error).*"
                                             r"add a sensor that sees"):
        DelayedKalmanObserver(plant, C=C)
    plant, C = marginal_plant(np.random.default_rng(seed), 1e-4)
    observer, said = observer_warnings(plant, C)
    slowest = np.abs(observer.error_eigenvalues).max()
    assert slowest < 1 and -1 / np.log(slowest) > SLOW_ERROR_PERIODS     # the premise
    assert len(said) == 1 and "|lambda| = 1)" in said[0] and "add a sensor" in said[0]
    plant, C = marginal_plant(np.random.default_rng(seed), 1.0)
    observer, said = observer_warnings(plant, C)
    assert said == [] and np.abs(observer.error_eigenvalues).max() < 0.99


@pytest.mark.parametrize("seed", range(6))
def test_the_default_measurement_noise_follows_the_outputs_units(seed):
    rng = np.random.default_rng(seed)
    n, m = (int(k) for k in rng.integers(2, 5, 2))
    plant = DelayedPlant.from_continuous(rng.standard_normal((n, n)) - np.eye(n),
                                         rng.standard_normal((n, m)), rng.uniform(0, 1.5, m),
                                         float(rng.uniform(0.3, 1.0)))
    C = rng.standard_normal((int(rng.integers(1, n + 1)), n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = DelayedKalmanObserver(plant, C=C)
        for units in (1e-3, 1e3):
            scaled = DelayedKalmanObserver(plant, C=units * C)
            # the same filter: the gain reads the outputs in their units
            assert np.allclose(units * scaled.gain, base.gain, rtol=1e-6,
                               atol=1e-9 * np.abs(base.gain).max())
            assert np.allclose(np.sort(np.abs(scaled.error_eigenvalues)),
                               np.sort(np.abs(base.error_eigenvalues)), atol=1e-7)


def feedback_warnings(plant, C):
    from controllers import OutputFeedback, make_controller

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        observer = DelayedKalmanObserver(plant, C=C)
        controller = make_controller("fractional", plant)
        OutputFeedback(controller, observer)
    said = [str(w.message) for w in record if "slow estimate" in str(w.message)]
    estimate = -1 / np.log(np.abs(observer.error_eigenvalues).max())
    return said, estimate, max(-1 / np.log(controller.nominal_spectral_radius), 1.0)


@pytest.mark.parametrize("seed", [2, 3, 5, 7, 8, 10])
def test_an_estimate_far_slower_than_the_state_loop_warns(seed):
    from controllers.observer import SLOW_ESTIMATE_RATIO

    plant, C = marginal_plant(np.random.default_rng(seed), 1e-2)
    said, estimate, loop = feedback_warnings(plant, C)
    # the premise: slower than the loop by the ratio, faster than the observer's own bound
    assert SLOW_ESTIMATE_RATIO * loop < estimate <= SLOW_ERROR_PERIODS
    assert len(said) == 1 and said[0].startswith("OutputFeedback: slow estimate check")
    assert "|lambda| = 1)" in said[0]
    plant, C = marginal_plant(np.random.default_rng(seed), 1.0)
    assert feedback_warnings(plant, C)[0] == []


@pytest.mark.parametrize("seed", range(10))
def test_random_plants_and_sensors_do_not_warn_of_a_slow_estimate(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 5)), int(rng.integers(1, 3))
    plant = DelayedPlant.from_continuous(rng.standard_normal((n, n)),
                                         rng.standard_normal((n, m)), rng.uniform(0, 2, m),
                                         float(rng.uniform(0.2, 1.0)))
    C = rng.standard_normal((int(rng.integers(1, n + 1)), n))
    assert feedback_warnings(plant, C)[0] == []
