"""Per-trajectory trends (detrend="constant" / "linear"): their degrees of freedom in the
covariance, and the loud ``trend_bias`` check of many short trajectories (Nickell's bias)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from dmdidc import DMDidc
from dmdidc.errors import InsufficientExcitationError
from dmdidc.fitting import FitOutcome, trend_parameters, trend_shifted, with_trend_parameters
from dmdidc.inference.trend_bias import (
    TREND_BIAS_SHARE,
    lag_weights,
    trend_bias,
    trend_bias_check,
)
from dmdidc.regression.solution import least_squares
from dmdidc.trajectories import detrended
from simulations.studies.data_kinds import random_plant


def equation_error_data(plant, count: int, samples: int, rng, noise: float = 0.3):
    """``count`` trajectories of ``samples`` white inputs with white equation errors (least
    squares is consistent: what is left is the trends'), each with its own sensor offset
    (all trajectories stepped at once)."""
    n, m = plant.n_states, plant.n_inputs
    U = rng.standard_normal((count, m, samples))
    lags = len(plant.B_blocks)
    padded = np.concatenate([np.zeros((count, m, lags)), U], axis=2)
    # the input i samples back drives through B^(i); then one step of A_d per sample
    driven = sum(np.einsum("nm,tmk->tkn", B, padded[:, :, lags - i:lags - i + samples])
                 for i, B in enumerate(plant.B_blocks))
    driven = driven + noise * rng.standard_normal((count, samples, n))
    X = np.zeros((count, samples + 1, n))
    X[:, 0] = rng.standard_normal((count, n))
    for k in range(samples):
        X[:, k + 1] = X[:, k] @ plant.A_d.T + driven[:, k]
    X = X.transpose(0, 2, 1) + 3.0 * rng.standard_normal((count, n, 1))
    return list(X), list(U)


def regression(Xs, Us, kind, R: int = 4):
    """The fit's regression without its diagnostics: signals detrended, shifted by their
    trends, least squares, the trends counted (as ``DMDidc(detrend=kind, estimator="ls")``)."""
    data = detrended(list(zip(Xs, Us, strict=True)), kind)[0]
    shifted, _, within = trend_shifted(data, R, kind)
    outcome = FitOutcome(least_squares(shifted, R)[0], "ls")
    count = trend_parameters([U.shape[1] for U in Us], R, kind)
    return with_trend_parameters(outcome, count, within).solution


def fit(Xs, Us, detrend):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay=4, detrend=detrend, estimator="ls").fit(Xs, Us, dt=0.5)
    return est, [str(w.message) for w in caught if "'trend_bias'" in str(w.message)]


def test_trend_parameters_count_what_each_trajectory_fits():
    assert trend_parameters([40, 40, 2], 2, "constant") == 2
    assert trend_parameters([40, 40, 2], 2, "linear") == 4
    assert trend_parameters([3, 40], 2, "linear") == 3        # one sample: its intercept only


@pytest.mark.parametrize("kind", ["constant", "linear"])
def test_lag_weights_are_the_superdiagonal_sums_of_the_trend_projection(kind):
    for samples in (2, 5, 17):
        trend = np.stack([np.ones(samples), np.arange(samples)], axis=1)
        basis = np.linalg.qr(trend[:, :1] if kind == "constant" else trend)[0]
        P = basis @ basis.T
        expected = [np.trace(P, offset=d) for d in range(1, samples)]
        np.testing.assert_allclose(lag_weights(samples, kind), expected, atol=1e-12)


def test_the_trends_cost_their_degrees_of_freedom_and_are_refused_without_any():
    rng = np.random.default_rng(0)
    plant = random_plant(1000)
    Xs, Us = equation_error_data(plant, 30, 20, rng)
    for kind in ("constant", "linear"):
        est, _ = fit(Xs, Us, kind)
        solution = est.regression_
        direct = regression(Xs, Us, kind)           # the tests' path without diagnostics
        np.testing.assert_allclose(solution.coefficients, direct.coefficients, atol=1e-10)
        np.testing.assert_allclose(solution.standard_errors, direct.standard_errors, rtol=1e-8)
        assert solution.intercepts == trend_parameters([20] * 30, 4, kind)
        assert solution.dof == 30 * 16 - solution.rank - solution.intercepts
    outcome = FitOutcome(solution, "ls")
    more = with_trend_parameters(outcome, 10).solution
    assert more.dof == solution.dof - 10
    np.testing.assert_allclose(more.residual_covariance * more.dof,
                               solution.residual_covariance * solution.dof, rtol=1e-12)
    assert np.all(more.standard_errors > solution.standard_errors)
    with pytest.raises(InsufficientExcitationError, match="no residual degree of freedom"):
        with_trend_parameters(outcome, solution.dof)


@pytest.mark.parametrize("seed", range(4))
def test_many_short_trajectories_fail_the_trend_bias_check_loudly(seed):
    # 80 trajectories of 15 samples: the bias of the trends is of the standard errors'
    # size (bias / SE ~ sqrt(count / samples)); the check names it and the remedy
    rng = np.random.default_rng(seed)
    Xs, Us = equation_error_data(random_plant(1000 + seed), 80, 15, rng)
    for kind in ("constant", "linear"):
        est, caught = fit(Xs, Us, kind)
        check = est.diagnostics_["trend_bias"]
        assert check.failed and check.statistic > TREND_BIAS_SHARE, (kind, check)
        assert len(caught) == 1 and "longer trajectories" in caught[0], caught
        assert "detrend=None" in caught[0] and f"detrend={kind!r}" in caught[0]


@pytest.mark.parametrize("seed", range(4))
def test_long_trajectories_raise_no_trend_bias_alarm(seed):
    rng = np.random.default_rng(seed)
    plant = random_plant(1000 + seed)
    for count, samples in ((1, 2000), (2, 1000)):
        Xs, Us = equation_error_data(plant, count, samples, rng)
        for kind in ("constant", "linear"):
            est, caught = fit(Xs, Us, kind)
            assert est.diagnostics_["trend_bias"].passed and not caught, (count, kind)


def test_no_trend_bias_check_without_trends():
    rng = np.random.default_rng(0)
    Xs, Us = equation_error_data(random_plant(1000), 3, 300, rng)
    est, _ = fit([X - X.mean(axis=1, keepdims=True) for X in Xs], Us, None)
    assert "trend_bias" not in [c.name for c in est.diagnostics_.checks]


def test_the_estimated_bias_is_the_monte_carlo_bias():
    # 40 trajectories of 24 samples, 60 repetitions on one plant: the mean error of the
    # coefficients along the estimated bias is that bias (measured 1.06; the plug-in at the
    # biased A_d alone gave 0.75 of it), and it is several standard errors
    rng = np.random.default_rng(7)
    plant = random_plant(1000)
    truth = np.concatenate([plant.A_d, *plant.B_blocks], axis=1)
    errors, biases, scale = [], [], []
    for _ in range(60):
        solution = regression(*equation_error_data(plant, 40, 24, rng), "linear")
        errors.append(solution.coefficients - truth)
        biases.append(trend_bias(solution, [24] * 40, 4, "linear"))
        scale.append(solution.standard_errors)
    bias, error, se = np.mean(biases, 0), np.mean(errors, 0), np.mean(scale, 0)
    along = float(np.sum(error / se * bias / se) / np.sum((bias / se) ** 2))
    assert 0.85 < along < 1.25, along
    assert np.max(np.abs(bias) / se) > 2


@pytest.mark.parametrize(("kind", "count", "samples"), [("constant", 4, 500),
                                                        ("linear", 2, 1000)])
def test_intervals_cover_where_the_check_passes(kind, count, samples):
    # on random plants the check passes, and the coefficients' 95 % intervals (t quantile on
    # the residual dof with the trends counted) cover within the binomial band of the fits
    # (entries of one fit are dependent: the band of the fits, not of the entries)
    level, hits = 0.95, []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        plant = random_plant(1000 + seed)
        truth = np.concatenate([plant.A_d, *plant.B_blocks], axis=1)
        for _ in range(25):
            Xs, Us = equation_error_data(plant, count, samples, rng)
            solution = regression(Xs, Us, kind)
            check = trend_bias_check(solution, [samples] * count, 4, kind)
            assert check.passed, check
            half = stats.t.ppf(0.5 + level / 2, solution.dof) * solution.standard_errors
            hits.append(np.mean(np.abs(solution.coefficients - truth) <= half))
    band = 3 * np.sqrt(level * (1 - level) / len(hits))
    assert abs(np.mean(hits) - level) < band, (np.mean(hits), band)


def test_statistics_centred_per_trajectory_are_checked_alike():
    # SufficientStatistics.from_data(..., detrend="constant") centres each trajectory's
    # regression samples: the same within fit, the same bias; loud on many short ones
    from dmdidc import SufficientStatistics

    rng = np.random.default_rng(0)
    plant = random_plant(1000)
    for (count, samples), loud in (((80, 15), True), ((2, 1000), False)):
        Xs, Us = equation_error_data(plant, count, samples, rng)
        stats_ = SufficientStatistics.from_data(Xs, Us, max_delay=4, detrend="constant")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = DMDidc(max_delay=4, estimator="ls").fit_statistics(stats_, dt=0.5)
        check = est.diagnostics_["trend_bias"]
        assert check.failed == loud, check
        assert any("'trend_bias'" in str(w.message) for w in caught) == loud
        if not loud:
            continue
        direct, _ = fit(Xs, Us, "constant")       # the data fit's estimate, within 30 %
        assert 0.7 < check.statistic / direct.diagnostics_["trend_bias"].statistic < 1.3


@pytest.mark.parametrize("seed", range(2))
def test_instrumental_fits_are_not_judged_by_the_least_squares_bias(seed):
    # Review: the default fit (IV here) of 20 x 200 samples warned with a bias of many
    # standard errors that IV does not have (instruments from the inputs are independent of
    # each trajectory's mean noise); the formula is least squares'
    rng = np.random.default_rng(seed)
    Xs, Us = equation_error_data(random_plant(1000 + seed), 20, 200, rng)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay=4, detrend="constant", estimator="iv").fit(Xs, Us, dt=0.5)
    check = est.diagnostics_["trend_bias"]
    assert check.passed is None and "instrumental" in check.finding, check
    assert not any("'trend_bias'" in str(w.message) for w in caught)
