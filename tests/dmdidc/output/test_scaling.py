"""OutputDMDidc with unequal sensor noise or a sensor offset: scaled by each output's spread
about its mean, refitted with each output weighted by its residual standard deviation when the
outputs' noise levels differ."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import OutputDMDidc, random_excitation
from dmdidc.output.estimator import _spread
from dmdidc.output.streaming import SubspaceStatistics
from simulations.studies.data_kinds import random_plant

T, R, K = 0.5, 4, 3000


def _data(seed: int, levels, offsets=None):
    """A random 3-state, 2-input plant seen through ``len(levels)`` sensors, each with white
    noise of ``levels`` times its standard deviation and a constant offset of ``offsets``
    times it; also the noise standard deviations (the truth for ``noise_std_``)."""
    rng = np.random.default_rng([seed, 41])
    plant = random_plant(rng, n_states=3, n_inputs=2, dt=T, max_delay=R)
    U = random_excitation(2, K, rng=rng)
    C = rng.standard_normal((len(levels), 3))
    clean = C @ plant.simulate(np.zeros(3), U)[:, :K]
    sd = clean.std(axis=1)
    sigma = np.asarray(levels) * sd
    Y = clean + sigma[:, None] * rng.standard_normal(clean.shape)
    if offsets is not None:
        Y = Y + (np.asarray(offsets) * sd)[:, None]
    return plant, Y, U, sigma


def _fit(Y, U, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OutputDMDidc(max_delay=R, **kwargs).fit(Y, U, dt=T)
    return est, [str(w.message) for w in caught]


def _right(plant, est) -> bool:
    """The true order, delays within 0.05 T and eigenvalues within 10 %."""
    truth = np.sort_complex(np.linalg.eigvals(plant.A_c))
    found = np.sort_complex(est.eigenvalues_)
    return (est.order_ == 3 and np.max(np.abs(est.delay - plant.delay)) < 0.05 * T
            and np.max(np.abs(found - truth) / np.abs(truth)) < 0.1)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("levels, offsets", [
    ((0.01, 0.3), None),                        # 40 dB and 10 dB
    ((0.03, 0.03), (0.0, 50.0)),                # an offset of 50 standard deviations
    ((0.01, 0.01, 0.3), (-200.0, 0.0, 30.0)),   # three sensors, one noisy, offsets
])
def test_unequal_noise_and_offsets_fit_right_and_quiet(seed, levels, offsets):
    """Before, 40 dB / 10 dB warned falsely on 9 of 12 plants (order wrong on 8) and
    ``noise_std_`` was one pooled level, 20 times the quiet sensor's."""
    plant, Y, U, sigma = _data(seed, levels, offsets)
    est, caught = _fit(Y, U)
    assert _right(plant, est), (est.order_, est.delay, plant.delay, caught)
    assert not caught
    # each output's own noise level, in its units
    np.testing.assert_array_less(np.abs(np.log(est.noise_std_ / sigma)), np.log(1.15))


@pytest.mark.parametrize("seed", range(3))
def test_an_offset_changes_nothing_but_offset_(seed):
    """The scaling is blind to offsets: the same fit with and without one."""
    plant, Y, U, _ = _data(seed, (0.03, 0.1))
    plain, _ = _fit(Y, U)
    shifted, _ = _fit(Y + np.array([[0.0], [1e4 * Y[1].std()]]), U)
    assert shifted.order_ == plain.order_
    np.testing.assert_allclose(shifted.delay, plain.delay, atol=1e-4 * T)
    np.testing.assert_allclose(shifted.noise_std_, plain.noise_std_, rtol=1e-3)
    np.testing.assert_allclose(shifted.scale_, plain.scale_, rtol=1e-3)


def test_equal_noise_is_fitted_once_with_the_spread():
    """Equally noisy outputs are not reweighted: the scale is each output's spread."""
    plant, Y, U, sigma = _data(0, (0.03, 0.03))
    est, caught = _fit(Y, U)
    np.testing.assert_allclose(est.scale_, Y.std(axis=1), rtol=1e-12)
    assert _right(plant, est) and not caught
    np.testing.assert_array_less(np.abs(np.log(est.noise_std_ / sigma)), np.log(1.15))


def test_the_streamed_spread_is_the_pooled_one_without_cancellation():
    """Per-experiment means, pooled; offsets 1e8 times the variation do not cancel it away
    (raw sums of squares would lose it to rounding)."""
    rng = np.random.default_rng(3)
    parts = [(1e8 + rng.standard_normal((2, 700)), rng.standard_normal((1, 700))),
             (-3e8 + 2.0 * rng.standard_normal((2, 500)), rng.standard_normal((1, 500)))]
    stats = SubspaceStatistics(2, 1, max_delay=1, horizon=3, offset=True)
    for Yi, Ui in parts:
        for a in range(0, Yi.shape[1], 150):
            stats.update(Yi[:, a:a + 150], Ui[:, a:a + 150], new_experiment=a == 0)
    # the means themselves carry rounding of 1e8: 1e-8 of the spread at worst
    np.testing.assert_allclose(stats.spread(), _spread([Yi for Yi, _ in parts]), rtol=1e-6)
    expected = np.sqrt((np.var(parts[0][0], axis=1) * 700 + np.var(parts[1][0], axis=1) * 500)
                       / 1200)
    np.testing.assert_allclose(stats.spread(), expected, rtol=1e-6)


def test_partial_fit_in_chunks_is_fit_with_unequal_noise_and_an_offset():
    plant, Y, U, sigma = _data(1, (0.01, 0.3), (0.0, 50.0))
    batch, _ = _fit(Y, U)
    est = OutputDMDidc(max_delay=R)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for a in range(0, K, 1000):
            est.partial_fit(Y[:, a:a + 1000], U[:, a:a + 1000], dt=T)
    assert not caught
    np.testing.assert_allclose(est.scale_, batch.scale_, rtol=1e-6)
    assert est.order_ == batch.order_ == 3
    np.testing.assert_allclose(est.delay, batch.delay, atol=1e-6 * T)
    np.testing.assert_allclose(est.noise_std_, batch.noise_std_, rtol=1e-4)
    np.testing.assert_allclose(np.sort_complex(est.eigenvalues_),
                               np.sort_complex(batch.eigenvalues_), rtol=1e-4)   # optimizer


def test_a_weighted_refit_that_fails_leaves_the_unweighted_fit_and_says_so(monkeypatch):
    """A weighted fit that finds no continuous plant (or no finite one) where the unweighted
    one did: the unweighted fit stands, with its own warnings and one naming the failure."""
    from dmdidc.errors import LogarithmError

    plant, Y, U, sigma = _data(0, (0.01, 0.3))
    calls = []
    fit_orders = OutputDMDidc._fit_orders

    def failing_second(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise LogarithmError("no real logarithm (injected)")
        return fit_orders(self, *args, **kwargs)

    monkeypatch.setattr(OutputDMDidc, "_fit_orders", failing_second)
    est, caught = _fit(Y, U)
    assert len(calls) == 2
    assert any("could not be fitted weighted" in m and "injected" in m for m in caught), caught
    np.testing.assert_allclose(est.scale_, Y.std(axis=1), rtol=1e-12)        # unweighted
    assert np.all(np.isfinite(est.noise_std_)) and est.order_ >= 1


def _units_case(seed: int):
    """A random 4-state plant, 3 white or low-pass inputs, two sensors at 30 dB."""
    rng = np.random.default_rng([seed, 43])
    plant = random_plant(rng, n_states=4, n_inputs=3, dt=T, max_delay=R)
    U = random_excitation(3, K, rng=rng)
    if seed % 2:
        U = np.apply_along_axis(lambda u: np.convolve(u, np.ones(3) / 3, "same"), 1, U)
    C = rng.standard_normal((2, 4))
    clean = C @ plant.simulate(np.zeros(4), U)[:, :K]
    return plant, clean + 0.03 * clean.std(axis=1, keepdims=True) * rng.standard_normal(
        clean.shape), U


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("units", [(1e8, 1.0, 1e-4), (1e-8, 3.0, 1e4)])
def test_inputs_in_units_far_apart_give_the_same_model(seed, units):
    """Trial: inputs 1e8 apart read one channel as without effect ("chi^2 = 0") on 8 of 8
    plants and changed the order on 4; 1e4 apart warned "delay not determined" falsely.
    Now the fit is the same in any input units: delays, eigenvalues, warnings and the
    transfer function (B_c and D in the given units)."""
    plant, Y, U = _units_case(seed)
    base, base_caught = _fit(Y, U)
    f = np.array(units)
    est, caught = _fit(Y, U * f[:, None])
    assert caught == base_caught
    assert est.order_ == base.order_
    np.testing.assert_allclose(est.delay, base.delay, atol=1e-6 * T)
    np.testing.assert_allclose(np.sort_complex(est.eigenvalues_),
                               np.sort_complex(base.eigenvalues_), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(est.input_scale_, base.input_scale_ * f, rtol=1e-12)
    # the same outputs from the same physical inputs
    np.testing.assert_allclose(est.predict(U * f[:, None]), base.predict(U),
                               atol=1e-6 * np.abs(Y).max())
    # DC gains in the given units: each column scaled back by its unit
    gain = lambda e: e.C @ np.linalg.solve(-e.A_c, e.B_c) + e.D        # noqa: E731
    np.testing.assert_allclose(gain(est) * f, gain(base), rtol=1e-6, atol=1e-9)


def test_partial_fit_scales_inputs_as_fit_does():
    """Streaming scales the inputs by the stream's pooled spread (the fit's, to rounding):
    chunks in units 1e8 apart warn as the same chunks in one unit, and end at the fit."""
    _, Y, U = _units_case(2)
    f = np.array([1e8, 1.0, 1e-4])

    def streamed(inputs):
        est = OutputDMDidc(max_delay=R)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for a in range(0, K, 1000):
                est.partial_fit(Y[:, a:a + 1000], inputs[:, a:a + 1000], dt=T)
        return est, [str(w.message) for w in caught]

    plain, plain_caught = streamed(U)
    est, caught = streamed(U * f[:, None])
    batch, _ = _fit(Y, U * f[:, None])
    assert caught == plain_caught
    np.testing.assert_allclose(est.input_scale_, batch.input_scale_, rtol=1e-10)
    assert est.order_ == batch.order_ == plain.order_
    np.testing.assert_allclose(est.delay, batch.delay, atol=1e-6 * T)
    np.testing.assert_allclose(est.predict(U * f[:, None]), batch.predict(U * f[:, None]),
                               atol=1e-4 * np.abs(Y).max())


def test_a_held_input_is_scaled_by_its_level_not_by_its_rounding():
    """A held input's spread is rounding: dividing by it would turn rounding into signal."""
    from dmdidc.output.inputs import input_scale
    u = np.full((1, 500), 3.7)
    u[0, ::7] += 1e-15                        # rounding-level wobble
    np.testing.assert_allclose(input_scale([u]), [3.7], rtol=1e-12)
    np.testing.assert_array_equal(input_scale([np.zeros((1, 9))]), [1.0])
