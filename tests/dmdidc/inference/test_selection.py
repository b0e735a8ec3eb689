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
