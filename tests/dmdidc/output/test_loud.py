"""OutputDMDidc is right or loud: the silent failures of issue 19, and no false alarms."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import OutputDMDidc
from dmdidc.errors import DiagnosticWarning
from tests.dmdidc.output.test_estimator import R, T, _eigenvalue_error, _experiment


def _fit(Y, U):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
    return est, [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)]


def test_two_delays_that_fit_equally_well_are_named():
    """One sensor, two states: each channel's sampled numerator has as many coefficients as
    ``(b, r)`` parameters, and a second delay fits as well as the true one."""
    plant, _, Y, U = _experiment(3, n=2, m=2, outputs=1, K=2000, snr_db=20.0)
    est, messages = _fit(Y, U)
    wrong = np.abs(est.delay - plant.delay) > 0.1 * T
    for i in np.flatnonzero(wrong):
        assert any(f"channel {i}: delay not determined" in text for text in messages)


@pytest.mark.parametrize("seed", range(6))
def test_noise_free_data_name_a_second_exact_delay(seed):
    """Without noise there is no sigma^2 for the likelihood ratio: a second delay that fits
    the outputs exactly as well is still named (one sensor), and two sensors, which tell the
    delays apart, raise no warning."""
    plant, _, Y, U = _experiment(seed, n=2, m=2, outputs=1, K=2000)
    est, messages = _fit(Y, U)
    for i in np.flatnonzero(np.abs(est.delay - plant.delay) > 0.1 * T):
        assert messages, (seed, i, est.delay, plant.delay)
    plant, _, Y, U = _experiment(seed, n=2, m=2, outputs=2, K=2000)
    est, messages = _fit(Y, U)
    assert messages == [] and np.max(np.abs(est.delay - plant.delay)) < 1e-3 * T


@pytest.mark.parametrize("seed", range(4))
def test_well_posed_plants_raise_no_false_alarm(seed):
    plant, _, Y, U = _experiment(seed, n=2, m=2, outputs=2, K=2000, snr_db=30.0)
    est, messages = _fit(Y, U)
    assert messages == []
    assert est.order_ == 2 and _eigenvalue_error(plant, est) < 0.1
    assert np.max(np.abs(est.delay - plant.delay)) < 0.1 * T


@pytest.mark.parametrize("seed", range(6))
def test_one_sensor_fits_are_right_or_loud(seed):
    """Seed 1 has three close modes (A_c T = -0.51, -0.70, -0.86): fits of order 2 and 3
    from the subspace basis end above the order-1 residual, the nested start of
    :func:`~dmdidc.output.order_check.extended_dynamics` finds order 2 significant and order 3
    better at 0.05 but not at the level, so the order is reported uncertain."""
    plant, _, Y, U = _experiment(seed, n=3, m=2, outputs=1, K=2000, snr_db=20.0)
    est, messages = _fit(Y, U)
    right = (est.order_ == 3 and _eigenvalue_error(plant, est) < 0.1
             and np.max(np.abs(est.delay - plant.delay)) < 0.1 * T)
    assert right or messages


@pytest.mark.parametrize("seed", [3, 5, 6])
def test_a_weak_state_near_the_noise_edge_makes_the_order_uncertain(seed):
    """Four states seen by one sensor at 25 dB: the weakest kept canonical correlation is near
    the edge and a neighbouring order fits as well (or better): the order is reported
    uncertain, naming the check and the remedy."""
    plant, _, Y, U = _experiment(seed, n=4, m=1, outputs=1, K=2000, snr_db=25.0)
    est, messages = _fit(Y, U)
    if est.order_ != 4 or _eigenvalue_error(plant, est) >= 0.1:
        assert any(f"order {est.order_} is uncertain" in text and "order=" in text
                   for text in messages)


def test_second_delay_verdicts_do_not_depend_on_giving_up_restarts(monkeypatch):
    """A second-delay restart that cannot come within the tie's critical value of the chosen
    fit is given up early (``short_of``); the fits keep the same order, warnings, delays and
    residual as with every restart run to convergence, on cases whose restarts stop early."""
    from dmdidc.output import estimator

    stops = []

    def counted(target):
        rule = original(target)

        def stop(rss, gain):
            stops.append(rule(rss, gain))
            return stops[-1]
        return stop

    original = estimator.short_of
    for seed, n, outputs in ((5, 3, 2), (7, 3, 1)):
        plant, _, Y, U = _experiment(seed, n=n, m=2, outputs=outputs, K=2000, snr_db=20.0)
        runs = []
        for rule in (counted, lambda target: lambda rss, gain: False):
            monkeypatch.setattr(estimator, "short_of", rule)
            est, messages = _fit(Y, U)
            runs.append((est.order_, messages, est.delay, est.refined_.rss))
        assert runs[0][:2] == runs[1][:2]
        np.testing.assert_allclose(runs[0][2], runs[1][2], rtol=1e-9)
        assert runs[0][3] == pytest.approx(runs[1][3], rel=1e-9)
    assert any(stops)                      # the rule did end some restarts early


@pytest.mark.parametrize("seed", range(3))
def test_an_offset_fitted_as_a_state_without_offset_is_named(seed):
    """Review finding: offset=False (CLI --detrend none) on outputs with a sensor offset of
    3 output rms fitted order 4 with a real mode at about 1e-7 1/s that the inputs do not
    reach, and said nothing.  It now warns naming offset=True; without an offset, and with
    offset=True, the fit stays quiet about it."""
    from simulations.studies.data_kinds import random_plant

    plant = random_plant(seed)
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((2, 3000))
    clean = rng.standard_normal((2, 3)) @ plant.simulate(np.zeros(3), U)[:, :-1]
    clean = clean + 0.01 * clean.std() * rng.standard_normal(clean.shape)
    for shift, offset, loud in ((3.0, False, True), (0.0, False, False), (3.0, True, False)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            OutputDMDidc(max_delay=4, offset=offset).fit(clean + shift * clean.std(), U,
                                                         dt=plant.dt)
        named = [str(w.message) for w in caught if "offset=True" in str(w.message)]
        assert bool(named) == loud, (shift, offset, named)


@pytest.mark.parametrize("seed", range(2))
def test_a_drift_fitted_as_a_state_is_named(seed):
    """Review finding: outputs with a linear drift (2 rms over the record) fitted with the
    defaults gained a mode at about +4e-6 1/s (order 4 for 3 states, slightly unstable) that
    the inputs do not reach, silently in 3 of 4 random plants; it now warns about a drift."""
    from simulations.studies.data_kinds import random_plant

    plant = random_plant(seed)
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((2, 3000))
    clean = rng.standard_normal((2, 3)) @ plant.simulate(np.zeros(3), U)[:, :-1]
    clean = clean + 0.01 * clean.std() * rng.standard_normal(clean.shape)
    for drift, loud in ((2.0, True), (0.0, False)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            OutputDMDidc(max_delay=4).fit(clean + drift * clean.std() * np.linspace(0, 1, 3000),
                                          U, dt=plant.dt)
        named = [str(w.message) for w in caught if "a drift of the outputs" in str(w.message)]
        assert bool(named) == loud, (drift, named)
