"""DMDidc(max_delay=None): the delay bound chosen by BIC (dmdidc.inference.selection)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import (
    ContinuousModelWarning,
    DelayedPlant,
    DMDidc,
    InsufficientExcitationError,
    ParameterError,
    SufficientStatistics,
    random_excitation,
)
from dmdidc.regression import lagged_inputs
from tests.seed_example import A_C, B_C, T


def experiments(delay, noise=0.05, count=10, seed=0):
    plant = DelayedPlant.from_continuous(A_C, B_C, delay, T)
    rng = np.random.default_rng(seed)
    Us = [random_excitation(2, 300, rng=rng) for _ in range(count)]
    Xs = [plant.simulate(np.zeros(2), U) for U in Us]
    rms = np.sqrt(np.mean(np.concatenate(Xs, axis=1) ** 2, axis=1))[:, None]
    return plant, [X + noise * rms * rng.standard_normal(X.shape) for X in Xs], Us


@pytest.mark.parametrize("periods, chosen", [(1.0, 2), (1.25, 3), (1.5, 3), (3.5, 5)])
def test_bound_is_the_last_significant_lag_plus_one(periods, chosen):
    plant, Xs, Us = experiments(periods * T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        est = DMDidc(max_delay=None).fit(Xs, Us, dt=T)
        assert DMDidc(max_delay=3).fit(Xs, Us, dt=T).delay_bound_ is None
    selection = est.delay_bound_
    assert est.max_delay_ == selection.selected == chosen
    assert selection.best == chosen - 1 and selection.limit == 30
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.05 * T)
    assert f"max_delay chosen: {chosen}" in selection.summary()


def test_criterion_equals_an_independent_computation():
    _, Xs, Us = experiments(1.25 * T, count=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        est = DMDidc(max_delay=None).fit(Xs, Us, dt=T)
    selection = est.delay_bound_
    limit = selection.limit
    for R in (0, 2, 5):
        Phi = np.hstack([np.vstack([X[:, limit:-1], lagged_inputs(U, limit)[:2 * (R + 1)]])
                         for X, U in zip(Xs, Us, strict=True)])
        Y = np.hstack([X[:, limit + 1:] for X in Xs])
        E = Y - np.linalg.lstsq(Phi.T, Y.T, rcond=None)[0].T @ Phi
        N = Y.shape[1]
        bic = N * np.linalg.slogdet(E @ E.T / N)[1] + 2 * Phi.shape[0] * np.log(N)
        assert selection.criterion[R] == pytest.approx(bic, rel=1e-8)
    assert selection.n_samples == sum(U.shape[1] - limit for U in Us)


def test_statistics_choose_the_bound_from_their_sub_blocks():
    plant, Xs, Us = experiments(1.25 * T)
    stats = SufficientStatistics.from_data(Xs, Us, max_delay=8)
    est = DMDidc(max_delay=None).fit_statistics(stats, dt=T)
    assert est.max_delay_ == 3 and est.delay_bound_.limit == 8
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.05 * T)


def test_a_delay_beyond_the_bounds_tried_is_reported():
    _, Xs, Us = experiments(5.5 * T, count=1)
    stats = SufficientStatistics.from_data(Xs, Us, max_delay=4)
    with pytest.warns(ContinuousModelWarning) as record:
        est = DMDidc(max_delay=None).fit_statistics(stats, dt=T)
    assert "no input lag 0..4 explains the states" in str(record[0].message)
    assert est.max_delay_ == 4 and "delay exceeds max_delay=4" in str(record[-1].message)


def test_too_little_data_and_streaming_are_refused():
    _, Xs, Us = experiments(1.25 * T, count=1)
    with pytest.raises(InsufficientExcitationError, match="too few samples to choose max_delay"):
        DMDidc(max_delay=None).fit(Xs[0][:, :12], Us[0][:, :11], dt=T)
    with pytest.raises(ParameterError, match="partial_fit needs an integer max_delay"):
        DMDidc(max_delay=None).partial_fit(Xs[0], Us[0], dt=T)


def _dead_time(periods: float, samples: int, acts: bool = True, seed: int = 0):
    """One input through a dead time of ``periods`` (T = 0.05 s), 1 % noise."""
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((3, 3))
    A = V @ np.diag([-0.1, -0.5, -1.0]) @ np.linalg.inv(V)
    plant = DelayedPlant.from_continuous(A, rng.standard_normal((3, 1)), [periods * 0.05],
                                         dt=0.05)
    U = random_excitation(1, samples, rng=seed + 1)
    X = plant.simulate(np.zeros(3), U if acts else random_excitation(1, samples, rng=seed + 2))
    return plant, X + 0.01 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape), U


@pytest.mark.parametrize("periods, seed", [(37.4, 0), (45.7, 1), (52.2, 2)])
def test_a_delay_beyond_the_first_search_is_found_where_the_data_allow(periods, seed):
    # a trial: 37.4 periods in 20 000 samples stopped at R = 30 with delay 0 and "the largest
    # bound these data allow", which allow about 1800
    plant, X, U = _dead_time(periods, 20_000, seed=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay="auto").fit(X, U, dt=0.05)
    assert not any("explains the states" in str(w.message) for w in caught)
    assert est.max_delay_ > periods and est.delay_bound_.limit > 30
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.1 * 0.05)


def test_a_search_that_finds_no_lag_says_what_stopped_it():
    _, X, U = _dead_time(37.4, 20_000, acts=False)
    with pytest.warns(ContinuousModelWarning, match="no input lag 0..127") as record:
        DMDidc(max_delay=None).fit(X, U, dt=0.05)
    message = next(str(w.message) for w in record if "no input lag" in str(w.message))
    assert "these data would allow up to" in message and "pass max_delay=" in message
    _, X, U = _dead_time(37.4, 600, acts=False)           # the samples stop it
    with pytest.warns(ContinuousModelWarning, match="largest bound these data allow"):
        DMDidc(max_delay=None).fit(X, U, dt=0.05)


def test_auto_is_an_alias_of_none_and_the_refusal_names_it():
    plant, Xs, Us = experiments(1.25 * T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        auto = DMDidc(max_delay="auto").fit(Xs, Us, dt=T)
        none = DMDidc(max_delay=None).fit(Xs, Us, dt=T)
    assert auto.max_delay_ == none.max_delay_ and auto.get_params()["max_delay"] == "auto"
    np.testing.assert_array_equal(auto.delay, none.delay)
    with pytest.raises(ParameterError, match="'auto'"):
        DMDidc(max_delay="automatic").fit(Xs, Us, dt=T)
    with pytest.raises(ParameterError, match="partial_fit needs an integer max_delay"):
        DMDidc(max_delay="auto").partial_fit(Xs[0], Us[0], dt=T)
