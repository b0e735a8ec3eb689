"""Right or loud: the default fit on the data practitioners record, over random plants (issue 16).

Each data kind departs from the idealized experiment in one way (feedback, coloured noise,
low-pass or multisine inputs, an offset, fewer signals than states, outliers).  The default
``DMDidc`` must never be silently wrong on any of them, and on well-posed data it must be
accurate without false alarms.
"""

from __future__ import annotations

import numpy as np
import pytest

from _toolbox.errors import ParameterError
from controllers import lqr_gain
from controllers.analysis import lifted_loop
from dmdidc import DelayedPlant, DMDidc
from simulations.studies.data_kinds import (
    DATA_KINDS,
    LOOP_MARGIN,
    assess,
    closed_loop_radius,
    make_data,
    output_feedback_data,
    random_plant,
    right_or_loud,
)


def default_fit(data):
    return DMDidc(max_delay=4).fit(data.X, data.U, dt=0.5)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("kind", sorted(set(DATA_KINDS) - {"white"}))
def test_the_default_fit_is_never_silently_wrong(kind):
    outcomes = right_or_loud(default_fit, kinds=[kind], seeds=range(6))
    silent = [(o.eigenvalue_error, o.delay_error) for o in outcomes if o.silently_wrong]
    assert not silent, silent


@pytest.mark.slow
@pytest.mark.statistical
def test_well_posed_data_fit_within_five_percent_without_false_alarms():
    # Issue 16 item 3: on well-posed data (white inputs, every state, open loop, 30 dB white
    # measurement noise) at least 9 in 10 random plants within 5 % and at most 1 in 10 warns.
    # Measured on 100 plants: 97 within 5 %, 2 warned.
    outcomes = right_or_loud(default_fit, kinds=["white"], seeds=range(20))
    within = [o.eigenvalue_error <= 0.05 and o.delay_error <= 0.05 for o in outcomes]
    assert np.mean(within) >= 0.9, [(o.eigenvalue_error, o.delay_error) for o in outcomes]
    assert np.mean([o.loud for o in outcomes]) <= 0.1, [o.messages for o in outcomes if o.loud]


@pytest.mark.slow
def test_closed_loop_with_the_reference_is_identified_consistently():
    # Feedback makes the inputs react to the measurement noise; the reference (dither) drives
    # the instruments, so the error falls with the data while the fit without it is loud.
    errors = {}
    for samples in (3000, 30000):
        plant = random_plant(1002)
        data = make_data("closed_loop", plant, samples=samples, rng=2)
        outcome = assess(lambda d: DMDidc(max_delay=4).fit(d.X, d.U, dt=0.5,
                                                           reference=d.reference), data, plant)
        errors[samples] = outcome.eigenvalue_error
        assert not outcome.silently_wrong
    assert errors[30000] < 0.05 and errors[30000] < errors[3000]
    without = assess(default_fit, make_data("closed_loop", random_plant(1002), rng=2),
                     random_plant(1002))
    assert without.right or without.loud


def test_data_kinds_are_reproducible_and_checked():
    plant = random_plant(5)
    first = make_data("coloured_noise", plant, rng=3)
    again = make_data("coloured_noise", random_plant(5), rng=3)
    np.testing.assert_array_equal(first.X, again.X)
    assert make_data("partial", plant, rng=0).X.shape == (plant.n_states - 1, 3001)
    assert make_data("closed_loop", plant, samples=200, rng=0).reference.shape == (2, 200)
    with pytest.raises(ParameterError, match="kind must be one of"):
        make_data("sinusoids", plant)
    with pytest.raises(ParameterError, match="samples"):
        make_data("white", plant, samples=3)


def _delay_blind_radius(plant) -> float:
    """Spectral radius of the delayed loop under the unscaled LQR gain (the kind before)."""
    m = plant.n_inputs
    gain = lqr_gain(plant, R=3.0 * np.eye(m))
    F, G, C = lifted_loop(plant, -gain, np.zeros((0, m, m)))
    return float(np.max(np.abs(np.linalg.eigvals(F + G @ C))))


def _rms(X):
    return float(np.sqrt(np.mean(X ** 2)))


@pytest.mark.parametrize("dt", [0.5, 1.0])
def test_closed_loop_kind_is_stable_with_margin_on_every_random_plant(dt):
    # The unscaled delay-blind LQR loop is unstable on 9 (T = 0.5) and 39 (T = 1) of 500
    # random plants; the kind scales the gain down until the delayed loop has radius < 0.98.
    plants = [random_plant(seed, dt=dt) for seed in range(150)]
    radii = np.array([closed_loop_radius(plant) for plant in plants])
    assert radii.max() < LOOP_MARGIN, radii.max()
    assert any(_delay_blind_radius(plant) >= 1.0 for plant in plants)   # the fix is exercised


def test_closed_loop_data_are_bounded_where_the_delay_blind_loop_diverged():
    seeds = [s for s in range(60) if _delay_blind_radius(random_plant(s, dt=1.0)) >= 1.0][:4]
    assert seeds
    for seed in seeds + [0, 1]:
        plant = random_plant(seed, dt=1.0)
        data = make_data("closed_loop", plant, samples=2000, rng=seed)
        assert np.all(np.isfinite(data.X)) and np.all(np.isfinite(data.U))
        # Stationary: no growth from the first half to the second (divergence is e^100+).
        half = data.X.shape[1] // 2
        assert _rms(data.X[:, half:]) < 2.0 * _rms(data.X[:, :half]), seed
        again = make_data("closed_loop", random_plant(seed, dt=1.0), samples=2000, rng=seed)
        np.testing.assert_array_equal(data.X, again.X)


def test_closed_loop_kind_refuses_plants_it_cannot_run_stably():
    unstable = DelayedPlant.from_continuous([[0.8]], [[1.0]], delay=1.5, dt=1.0, max_delay=4)
    with pytest.raises(ParameterError, match=r"plant: .*stable plant; A_d has spectral radius"):
        make_data("closed_loop", unstable)
    # A slow mode the heavy-input-weight gain barely reaches: no gain factor gets below 0.98.
    slow = DelayedPlant.from_continuous(np.diag([-0.001, -0.5]), [[1e-3], [1.0]], delay=1.5,
                                        dt=1.0, max_delay=4)
    with pytest.raises(ParameterError, match=r"plant: .*no factor .*open-loop spectral"):
        make_data("closed_loop", slow, rng=0)
    with pytest.raises(ParameterError, match="plant"):
        closed_loop_radius(slow)


def test_output_feedback_data_refuses_bad_noise_levels():
    """Negative or NaN levels gave sign-flipped or NaN data silently; a vector of the wrong
    length a raw numpy broadcasting error.  Good levels (scalar, one per output, 0) pass."""
    plant = random_plant(0, n_states=2, n_inputs=1, dt=0.5)
    C = [[1.0, 0.0], [0.0, 1.0]]
    for keywords, name in ((dict(noise_std=-0.05), "noise_std"),
                           (dict(noise_std=np.nan), "noise_std"),
                           (dict(noise_std=[0.1, 0.2, 0.3]), "noise_std"),
                           (dict(noise_std=0.1, dither=-1.0), "dither"),
                           (dict(noise_std=0.1, process_noise=np.nan), "process_noise")):
        with pytest.raises(ValueError, match=name):
            output_feedback_data(plant, C, 300, rng=1, **keywords)
    for level in (0.0, 0.1, [0.1, 0.02]):
        Y, U, _ = output_feedback_data(plant, C, 300, noise_std=level, rng=1)
        assert np.all(np.isfinite(Y)) and np.all(np.isfinite(U))
