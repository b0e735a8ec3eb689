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
from dmdidc import DMDidc
from simulations.studies.data_kinds import (
    DATA_KINDS,
    assess,
    make_data,
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
