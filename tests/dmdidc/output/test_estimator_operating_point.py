"""OutputDMDidc's input operating point (walkthrough finding 3): inputs at a non-zero level give
the model the equilibrium under their mean, which its plant carries; inputs around zero give
none."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
from dmdidc.output.operating_point import OPERATING_LEVEL, input_level

T = 0.5


def _data(seed, level):
    """Outputs of a random stable 3-state, 2-input plant with fractional delays, one sensor with
    an offset, inputs ``level + excitation``."""
    rng = np.random.default_rng(seed)
    while True:
        A_c = rng.standard_normal((3, 3)) - np.eye(3)
        if np.linalg.eigvals(A_c).real.max() < -0.2:
            break
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((3, 2)),
                                         rng.uniform(0.2, 1.8, 2), T)
    C = rng.standard_normal((1, 3))
    U = np.asarray(level, dtype=float)[:, None] + random_excitation(2, 1500, rng=rng)
    mean = U.mean(axis=1)
    x_rest = np.linalg.solve(np.eye(3) - plant.A_d, plant.B_d @ mean)   # at rest there
    past = np.tile(mean[:, None], (1, plant.max_delay))
    Y = C @ plant.simulate(x_rest, U, past)[:, :-1] + rng.uniform(-5.0, 5.0)
    return Y + 0.01 * Y.std() * rng.standard_normal(Y.shape), U


def _fit(Y, U, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # the fit's own findings are not under test
        return OutputDMDidc(max_delay=4, **options).fit(Y, U, dt=T)


@pytest.mark.parametrize("seed", range(4))
def test_inputs_at_a_level_give_the_equilibrium_under_it(seed, tmp_path):
    level = np.random.default_rng(seed).uniform(10.0, 50.0, 2)
    Y, U = _data(seed, level)
    est = _fit(Y, U)
    op = est.operating_point_
    np.testing.assert_allclose(op.input, U.mean(axis=1), rtol=1e-12)
    # an equilibrium of the model: the same matrices in deviations as in the data's units
    plant = est.plant()
    assert plant.operating_point is op
    np.testing.assert_allclose(plant.A_d @ op.state + plant.B_d @ op.input, op.state,
                               rtol=1e-9, atol=1e-9 * np.abs(op.state).max())
    # ... whose output is the data's level
    assert abs((est.C @ op.state + est.offset_)[0] - Y.mean()) < 0.05 * Y.std()
    # predict is unchanged: the model's own coordinates from x0 = 0 with zero past inputs
    expected = est.C @ plant.deviation_model().simulate(np.zeros(est.order_), U)[:, :-1] \
        + est.offset_[:, None]
    np.testing.assert_allclose(est.predict(U), expected, rtol=1e-12, atol=1e-12)
    loaded = OutputDMDidc.load(est.save(tmp_path / "model.json"))
    np.testing.assert_array_equal(loaded.operating_point_.state, op.state)
    np.testing.assert_array_equal(loaded.plant().operating_point.input, op.input)


@pytest.mark.parametrize("seed", range(4))
def test_inputs_around_zero_give_no_operating_point(seed, tmp_path):
    Y, U = _data(seed, [0.0, 0.0])
    assert input_level([(Y, U)]) is None
    est = _fit(Y, U)
    assert est.operating_point_ is None and est.plant().operating_point is None
    path = est.save(tmp_path / "model.json")
    assert json.loads(path.read_text())["operating_point"] is None
    record = json.loads(path.read_text())
    del record["operating_point"]              # a file of an earlier version
    path.write_text(json.dumps(record))
    assert OutputDMDidc.load(path).operating_point_ is None


def test_one_input_at_a_level_is_enough_and_detrend_keeps_none():
    Y, U = _data(7, [0.0, 30.0])
    assert _fit(Y, U).operating_point_ is not None
    assert _fit(Y, U, detrend="constant").operating_point_ is None
    spread = U.std(axis=1)
    below = [(Y, U - U.mean(axis=1, keepdims=True) + 0.5 * OPERATING_LEVEL * spread[:, None])]
    assert input_level(below) is None


def test_streamed_chunks_give_the_same_operating_point():
    Y, U = _data(3, [20.0, -15.0])
    est = OutputDMDidc(max_delay=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a in range(0, 1500, 500):
            est.partial_fit(Y[:, a:a + 500], U[:, a:a + 500], dt=T)
    np.testing.assert_allclose(est.operating_point_.input, U.mean(axis=1), rtol=1e-12)


@pytest.mark.parametrize("samples", [400, 1000])
def test_zero_mean_excitation_gives_no_operating_point_by_chance(samples):
    """The mean of zero-mean excitation is chance: white inputs of 400 samples passed 'a tenth
    of the spread' on 4 of 60 fits (a trial; an operating point a controller would hold).  The
    mean must also differ from zero by a t test on batch means (level 1e-3 per input): at most
    2 of 100 white or low-pass records here (the rule alone: 30 and 18 of 100, the low-pass
    ones most), while a level of one spread is still found in all."""
    found = 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        U = random_excitation(2, samples, rng=rng)
        if seed % 2:                                    # low-pass: held over 5 samples
            U = np.repeat(U[:, ::5], 5, axis=1)[:, :samples]
        found += input_level([(None, U)]) is not None
        at_level = U + U.std(axis=1, keepdims=True)
        assert input_level([(None, at_level)]) is not None
    assert found <= 2


def test_a_one_signed_or_slowly_varying_input_at_a_level_keeps_its_operating_point():
    """A review: the batch-mean test missed a heater switched on and off (period 200, duty
    0.2-0.5: 15-26 of 50 found) and slowly varying inputs at a level of one spread (held 25,
    K = 400: 1 of 100); the one-signed rule and the long-run standard error find them."""
    for duty in (0.2, 0.3, 0.5):
        for seed in range(10):
            rng = np.random.default_rng(seed)
            t = (np.arange(1000) + rng.integers(200)) % 200
            U = (t < duty * 200).astype(float)[None] + 0.02 * rng.standard_normal((1, 1000))
            assert input_level([(None, U)]) is not None
    found = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        U = np.repeat(rng.standard_normal((1, 17)), 25, axis=1)[:, :400]
        found += input_level([(None, U + 1.5 * U.std())]) is not None
    assert found >= 36
