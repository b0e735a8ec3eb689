"""Sufficient statistics (dmdidc.statistics) and the fit from them (dmdidc.statistics.fit).

The statistics are checked against the regression vectors built explicitly with numpy, for every
instrument kind, in one piece and in chunks; the fits from statistics against numpy's least
squares and an explicit two-stage least squares on the same samples.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from dmdidc import (
    DelayedPlant,
    DimensionError,
    DMDidc,
    InsufficientExcitationError,
    ParameterError,
    SufficientStatistics,
    random_excitation,
)
from dmdidc.regression.instrumental import coefficient_jacobian
from dmdidc.statistics.accumulator import StatisticsAccumulator
from dmdidc.statistics.fit import nearest_psd, regression_from_statistics

N_STATES, N_INPUTS, R = 2, 2, 3


def regression_vectors(X, U, R, kind=None, L=0, E=None):
    """Explicit v_k = [x_k; u_k..u_{k-R}; x_{k+1}; extras] for every usable k (numpy only)."""
    k0 = {None: R, "inputs": R + L, "states": max(R, L), "exogenous": R + L}[kind]
    ks = np.arange(k0, U.shape[1])
    rows = [X[:, ks]] + [U[:, ks - j] for j in range(R + 1)] + [X[:, ks + 1]]
    if kind == "inputs":
        rows += [U[:, ks - R - lag] for lag in range(1, L + 1)]
    elif kind == "states":
        rows += [X[:, ks - lag] for lag in range(1, L + 1)]
    elif kind == "exogenous":
        rows += [E[:, ks - lag] for lag in range(R + L + 1)]
    return np.vstack(rows)


@pytest.fixture(scope="module")
def noisy_data():
    true = DelayedPlant.from_continuous([[0.0, 1.1], [-1.1, 0.0]], [[1.0, -1.0], [-1.0, 2.0]],
                                        delay=2.5, dt=2.0, max_delay=R)
    rng = np.random.default_rng(7)
    Us = [random_excitation(2, 150, rng=rng) for _ in range(4)]
    Xs = [true.simulate(np.zeros(2), U) + 0.05 * rng.standard_normal((2, 151)) for U in Us]
    return true, Xs, Us


@pytest.mark.parametrize("kind, L", [(None, 0), ("inputs", 2), ("states", 5), ("exogenous", 7)])
def test_statistics_equal_the_explicit_moments_in_one_piece_and_in_chunks(kind, L):
    rng = np.random.default_rng(1)
    X, U, E = rng.standard_normal((2, 61)), rng.standard_normal((2, 60)), rng.standard_normal(
        (1, 60))
    V = regression_vectors(X, U, R, kind, L, E)
    instruments = E if kind == "exogenous" else kind
    stats = SufficientStatistics.from_data(X, U, max_delay=R, instruments=instruments,
                                           instrument_lags=L if kind else None)
    np.testing.assert_allclose(stats.gram, V @ V.T, atol=1e-12)
    np.testing.assert_allclose(stats.sums, V.sum(axis=1), atol=1e-12)
    assert stats.n_samples == V.shape[1] and len(stats.labels) == V.shape[0]
    # the layout's own samples (for a pass over them: the affine refinement)
    np.testing.assert_array_equal(
        stats.layout.vectors(X, U, E if kind == "exogenous" else None), V)
    k0 = stats.layout.first_sample                      # a trajectory without a sample
    assert stats.layout.vectors(X[:, :k0 + 1], U[:, :k0], E[:, :k0]).shape == (V.shape[0], 0)
    accumulator = StatisticsAccumulator(2, 2, R, instruments=None if kind is None else (
        "exogenous" if kind == "exogenous" else kind), instrument_lags=L if kind else None,
        n_exogenous=1 if kind == "exogenous" else 0)
    for a, b in ((0, 2), (2, 3), (3, 17), (17, 60)):       # chunks shorter than the lags too
        accumulator.update(X[:, a:b + 1], U[:, a:b], E[:, a:b] if kind == "exogenous" else None)
    chunked = accumulator.statistics()
    np.testing.assert_allclose(chunked.gram, V @ V.T, atol=1e-12)
    assert chunked.n_samples == V.shape[1]
    centred = SufficientStatistics.from_data(X, U, max_delay=R, instruments=instruments,
                                             instrument_lags=L if kind else None,
                                             detrend="constant")
    Vc = V - V.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(centred.gram, Vc @ Vc.T, atol=1e-11)
    assert centred.intercepts == 1 and centred.centering == "trajectory"
    assert not centred.released_sums and centred.dimension == V.shape[0] * (V.shape[0] + 1) // 2


def test_labels_name_every_entry():
    stats = SufficientStatistics.from_data(np.zeros((1, 11)), np.zeros((1, 10)), max_delay=1,
                                           instruments="inputs", instrument_lags=2)
    assert stats.labels == ["x0[k]", "u0[k]", "u0[k-1]", "x0[k+1]", "u0[k-2]", "u0[k-3]"]
    np.testing.assert_array_equal(stats.instrument_indices, [1, 2, 4, 5])


def test_bounds_clip_and_scale_to_the_unit_box():
    X = np.array([[0.5, 3.0, -4.0, 1.0]])
    U = np.array([[10.0, -0.5, 0.2]])
    stats = SufficientStatistics.from_data(X, U, max_delay=0, state_bound=2.0, input_bound=1.0)
    clipped_X, clipped_U = np.clip(X, -2, 2), np.clip(U, -1, 1)
    V = regression_vectors(clipped_X, clipped_U, 0)
    scale = np.array([2.0, 1.0, 2.0])
    np.testing.assert_allclose(stats.gram, (V / scale[:, None]) @ (V / scale[:, None]).T)
    np.testing.assert_allclose(stats.moments()[0], V @ V.T)       # back in the data's units
    assert stats.clipped == 3 and np.abs(stats.gram).max() <= stats.n_samples


def test_addition_equals_statistics_of_all_trajectories(noisy_data):
    _, Xs, Us = noisy_data
    parts = [SufficientStatistics.from_data(X, U, max_delay=R, instruments="inputs",
                                            detrend="constant")
             for X, U in zip(Xs, Us, strict=True)]
    whole = SufficientStatistics.from_data(Xs, Us, max_delay=R, instruments="inputs",
                                           detrend="constant")
    total = sum(parts)
    np.testing.assert_allclose(total.gram, whole.gram, atol=1e-10)
    assert (total.n_samples, total.n_trajectories, total.intercepts) == (
        whole.n_samples, 4, 4)
    back = SufficientStatistics.from_vector(total.to_vector(), like=total)
    np.testing.assert_array_equal(back.gram, total.gram)


def test_incompatible_statistics_are_not_added():
    X, U = np.ones((1, 11)), np.ones((1, 10))
    base = SufficientStatistics.from_data(X, U, max_delay=1, state_bound=1.0, input_bound=1.0)
    with pytest.raises(DimensionError, match="different layouts"):
        base + SufficientStatistics.from_data(X, U, max_delay=2, state_bound=1.0,
                                              input_bound=1.0)
    with pytest.raises(ParameterError, match="different bounds"):
        base + SufficientStatistics.from_data(X, U, max_delay=1, state_bound=2.0,
                                              input_bound=1.0)
    with pytest.raises(ParameterError, match="centred and uncentred"):
        base + SufficientStatistics.from_data(X, U, max_delay=1, state_bound=1.0,
                                              input_bound=1.0, detrend="constant")
    with pytest.raises(ParameterError, match="can only add"):
        base + 1.0


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(state_bound=1.0), ParameterError, "declare all bounds or none"),
    (dict(state_bound=[1.0, 2.0], input_bound=1.0), DimensionError, "state_bound must be"),
    (dict(state_bound=-1.0, input_bound=1.0), ParameterError, "must be > 0"),
    (dict(instruments="outputs"), ParameterError, "instruments must be None"),
    (dict(instruments="inputs", instrument_lags=0), ParameterError, "instrument_lags must be"),
    (dict(instruments=np.ones((1, 5))), DimensionError, r"expected \(q, 10\)"),
    (dict(instruments=np.ones((1, 10)), instrument_lags=0), ParameterError,
     "at least as many instruments as regressors"),
    (dict(detrend="linear"), ParameterError, "detrend must be None or 'constant'"),
    (dict(instrument_bound=1.0), ParameterError, "exogenous instrument signals only"),
])
def test_bad_arguments_are_refused(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        SufficientStatistics.from_data(np.ones((1, 11)), np.ones((1, 10)), max_delay=1,
                                       **kwargs)


def test_centered_removes_the_overall_mean_once():
    rng = np.random.default_rng(3)
    X, U = rng.standard_normal((1, 31)) + 2.0, rng.standard_normal((1, 30))
    stats = SufficientStatistics.from_data(X, U, max_delay=1)
    V = regression_vectors(X, U, 1)
    Vc = V - V.mean(axis=1, keepdims=True)
    centred = stats.centered()
    np.testing.assert_allclose(centred.gram, Vc @ Vc.T, atol=1e-12)
    assert centred.intercepts == 1 and centred.centering == "global"
    assert centred.centered() is centred


def test_least_squares_from_statistics_equals_numpy_lstsq(noisy_data):
    _, Xs, Us = noisy_data
    stats = SufficientStatistics.from_data(Xs, Us, max_delay=R, state_bound=20.0,
                                           input_bound=5.0, instruments="inputs")
    V = np.hstack([regression_vectors(np.clip(X, -20, 20), np.clip(U, -5, 5), R, "inputs", 2)
                   for X, U in zip(Xs, Us, strict=True)])
    p = 2 + 2 * (R + 1)
    expected = np.linalg.lstsq(V[:p].T, V[p:p + 2].T, rcond=None)[0].T
    for R_fit in (R, 2):             # a smaller bound is a sub-block of the same statistics
        solution = regression_from_statistics(stats, R_fit)
        q = 2 + 2 * (R_fit + 1)
        want = expected if R_fit == R else np.linalg.lstsq(V[:q].T, V[p:p + 2].T,
                                                           rcond=None)[0].T
        np.testing.assert_allclose(solution.coefficients, want, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kind, L", [("inputs", 2), ("states", 2), ("exogenous", 6)])
def test_instrumental_variables_equal_explicit_two_stage_least_squares(noisy_data, kind, L):
    _, Xs, Us = noisy_data
    rng = np.random.default_rng(4)
    Es = [U[:1] + 0.3 * rng.standard_normal((1, U.shape[1])) for U in Us]
    stats = SufficientStatistics.from_data(Xs, Us, max_delay=R,
                                           instruments=Es if kind == "exogenous" else kind,
                                           instrument_lags=L)
    V = np.hstack([regression_vectors(X, U, R, kind, L, E) for X, U, E in
                   zip(Xs, Us, Es, strict=True)])
    p = 2 + 2 * (R + 1)
    Phi, Y = V[:p], V[p:p + 2]
    Z = V[stats.instrument_indices]
    projected = np.linalg.lstsq(Z.T, Phi.T, rcond=None)[0].T @ Z      # first stage
    expected = np.linalg.lstsq(projected.T, Y.T, rcond=None)[0].T     # second stage
    solution = regression_from_statistics(stats, R, estimator="iv")
    np.testing.assert_allclose(solution.coefficients, expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(solution.unscaled_covariance,
                               np.linalg.inv(projected @ projected.T), rtol=1e-7)
    assert solution.estimator == "iv" and 0 < solution.instrument_strength <= 1


def test_coefficient_jacobian_matches_finite_differences(noisy_data):
    _, Xs, Us = noisy_data
    stats = SufficientStatistics.from_data(Xs, Us, max_delay=1, instruments="inputs",
                                           instrument_lags=2)
    gram = stats.gram
    p, n = 2 + 2 * 2, 2
    instruments = stats.instrument_indices
    rows, cols = np.triu_indices(gram.shape[0])
    for estimator, z in (("ls", None), ("iv", instruments)):
        coefficients = regression_from_statistics(stats, 1, estimator=estimator).coefficients
        jacobian = coefficient_jacobian(gram, coefficients, n_states=n, n_regressors=p,
                                        instruments=z, entries=(rows, cols))
        for e in (0, 5, 17, 30, rows.size - 1):
            step = 1e-6 * np.sqrt(gram[rows[e], rows[e]] * gram[cols[e], cols[e]])
            shifted = []
            for sign in (1.0, -1.0):
                G = gram.copy()
                G[rows[e], cols[e]] += sign * step
                if rows[e] != cols[e]:
                    G[cols[e], rows[e]] += sign * step
                moved = dataclasses.replace(stats, gram=G)
                shifted.append(regression_from_statistics(moved, 1,
                                                          estimator=estimator).coefficients)
            numeric = (shifted[0] - shifted[1]).ravel() / (2 * step)
            np.testing.assert_allclose(jacobian[:, e], numeric, rtol=1e-5,
                                       atol=1e-7 * np.abs(numeric).max() + 1e-12)


@pytest.mark.parametrize("kind", ["inputs", "states"])
def test_entry_error_spread_equals_the_jacobian_propagation(noisy_data, kind):
    """The rank-two adjoint form gives the standard deviations of the full Jacobian's
    covariance (instruments that repeat regressors included), for LS and IV, with entry
    scales of very different sizes (an offset's)."""
    from dmdidc.regression.instrumental import entry_error_spread

    _, Xs, Us = noisy_data
    stats = SufficientStatistics.from_data([X + 5.0 for X in Xs], Us, max_delay=1,
                                           instruments=kind, instrument_lags=2)
    gram = stats.centered().gram
    n, p = 2, 2 + 2 * 2
    scale = np.sqrt(np.finfo(float).eps * np.diag(stats.gram))
    rows, cols = np.triu_indices(gram.shape[0])
    for estimator, z in (("ls", None), ("iv", stats.instrument_indices)):
        coefficients = regression_from_statistics(stats.centered(), 1,
                                                   estimator=estimator).coefficients
        jacobian = coefficient_jacobian(gram, coefficients, n_states=n, n_regressors=p,
                                        instruments=z, entries=(rows, cols))
        exact = np.sqrt((jacobian ** 2 * (scale[rows] * scale[cols]) ** 2).sum(axis=1))
        spread = entry_error_spread(gram, coefficients, n_states=n, n_regressors=p,
                                    instruments=z, entry_scale=scale)
        np.testing.assert_allclose(spread.ravel(), exact, rtol=1e-8)


def test_fit_statistics_equals_fit_and_refuses_what_statistics_cannot_do(noisy_data):
    true, Xs, Us = noisy_data
    stats = SufficientStatistics.from_data(Xs, Us, max_delay=R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_data = DMDidc(max_delay=R, estimator="ls", detrend=None).fit(Xs, Us, dt=2.0)
        from_stats = DMDidc(max_delay=R, estimator="ls", detrend=None).fit_statistics(
            stats, dt=2.0)
    np.testing.assert_allclose(from_stats.regression_.coefficients,
                               from_data.regression_.coefficients, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(from_stats.delay, from_data.delay, rtol=1e-9)
    with pytest.raises(ParameterError, match="needs statistics with instruments"):
        DMDidc(max_delay=R, estimator="iv").fit_statistics(stats, dt=2.0)
    with pytest.raises(ParameterError, match="reweights every sample"):
        DMDidc(max_delay=R, estimator="huber").fit_statistics(stats, dt=2.0)
    with pytest.raises(ParameterError, match="statistics are centred when built"):
        DMDidc(max_delay=R, detrend="constant").fit_statistics(stats, dt=2.0)
    with pytest.raises(ParameterError, match="exceeds the statistics' bound"):
        DMDidc(max_delay=R + 1).fit_statistics(stats, dt=2.0)
    with pytest.raises(ParameterError, match="SufficientStatistics or a non-empty list"):
        DMDidc(max_delay=R).fit_statistics([], dt=2.0)


def test_too_few_samples_in_statistics():
    stats = SufficientStatistics.from_data(np.ones((2, 8)), np.ones((2, 7)), max_delay=3)
    with pytest.raises(InsufficientExcitationError, match="at least 10"):
        DMDidc(max_delay=3).fit_statistics(stats, dt=1.0)


def test_nearest_psd_matches_the_convex_program():
    cvxpy = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(5)
    A = rng.standard_normal((5, 5))
    A = A + A.T
    ours = nearest_psd(A)
    X = cvxpy.Variable((5, 5), PSD=True)
    cvxpy.Problem(cvxpy.Minimize(cvxpy.norm(X - A, "fro"))).solve(solver="CLARABEL")
    # the solver's answer agrees to its tolerance, and ours is at least as close to A
    np.testing.assert_allclose(ours, X.value, atol=5e-4)
    assert np.linalg.norm(ours - A) <= np.linalg.norm(X.value - A) + 1e-9
    assert np.linalg.eigvalsh(ours).min() >= -1e-12
    np.testing.assert_allclose(nearest_psd(ours), ours, atol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_clipped_count_and_scaled_sums_in_chunks(seed):
    """Data inside their bounds are only scaled; data beyond are clipped and counted once
    (chunks share a state): the count and the moments equal the explicit ones."""
    from dmdidc.statistics.streaming import LaggedSums

    rng = np.random.default_rng(500 + seed)
    n, m, R, K = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.integers(0, 4)), 400
    X, U = 3 * rng.standard_normal((n, K + 1)), rng.standard_normal((m, K))
    inside = seed % 2 == 0                        # half the draws: nothing beyond the bounds
    bx = np.abs(X).max(axis=1) * (1.5 if inside else rng.uniform(0.3, 1.2, n))
    bu = np.abs(U).max(axis=1) * (1.5 if inside else rng.uniform(0.3, 1.2, m))
    sums = LaggedSums(n, m, R, state_bound=bx, input_bound=bu)
    cuts = [0, *np.sort(rng.integers(0, K, 3)).tolist(), K]
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        sums.update(X[:, a:b + 1], U[:, a:b])
    totals = sums.totals()
    expected = (np.count_nonzero(np.abs(X) > bx[:, None])
                + np.count_nonzero(np.abs(U) > bu[:, None]))
    assert totals["clipping"].total == expected and (expected == 0) == inside
    V = regression_vectors(np.clip(X, -bx[:, None], bx[:, None]) / bx[:, None],
                           np.clip(U, -bu[:, None], bu[:, None]) / bu[:, None], R)
    assert np.allclose(totals["gram"], V @ V.T, rtol=1e-12, atol=1e-12 * K)


@pytest.mark.parametrize("seed", range(8))
def test_statistics_of_many_input_lags_equal_the_explicit_moments(seed, monkeypatch):
    """Issue 21: the correlations of many input lags are summed in the frequency domain
    (:mod:`dmdidc.regression.lagged_gram`).  Random plants, noisy states with lost samples
    (``missing="drop"`` pieces), several trajectories in random chunks, plain or centred,
    bounded or not, with or without input instruments: every entry equals the explicit product
    to rounding (1e-10 of ``sqrt(G_ii G_jj)``)."""
    from dmdidc.missing import handle_missing
    from dmdidc.regression import lagged_gram
    from dmdidc.statistics.streaming import LaggedSums
    from simulations.studies.data_kinds import random_plant

    monkeypatch.setattr(lagged_gram, "_SPECTRAL_SAMPLES", 300)   # chunks of a few hundred
    rng = np.random.default_rng(900 + seed)
    n, m, R = int(rng.integers(2, 6)), int(rng.integers(5, 7)), int(rng.integers(18, 21))
    plant = random_plant(rng, n_states=n, n_inputs=m, max_delay=R, dt=0.2)
    kind = "inputs" if seed % 2 else None
    detrend = "constant" if seed % 4 >= 2 else None
    experiments = []
    for K in rng.integers(2000, 4000, size=int(rng.integers(1, 4))):
        U = random_excitation(m, int(K), rng=rng) + rng.uniform(-1, 1)
        X = plant.simulate(rng.standard_normal(n), U)
        X += 0.05 * X.std() * rng.standard_normal(X.shape) + 10.0 ** rng.uniform(-1, 1.5)
        for _ in range(int(rng.integers(0, 3))):        # lost samples: NaN segments
            start = int(rng.integers(0, int(K)))
            X[int(rng.integers(0, n)), start:start + int(rng.integers(1, 30))] = np.nan
        experiments.append((X, U))
    names = [f"x{i}" for i in range(n)] + [f"u{j}" for j in range(m)]
    pieces, _ = handle_missing(experiments, names, "drop")
    bounds = {}
    if seed % 3 == 0:                         # the 3 % largest clipped, all scaled to the box
        states = np.concatenate([X for X, _ in pieces], axis=1)
        bounds = dict(state_bound=np.quantile(np.abs(states), 0.97, axis=1), input_bound=1.5)
    sums = LaggedSums(n, m, R, instruments=kind, detrend=detrend, **bounds)
    L = sums.layout.instrument_lags
    d = sums.layout.dimension
    gram, total, count, used = np.zeros((d, d)), np.zeros(d), 0, 0
    for X, U in pieces:
        sums.new_trajectory()
        cuts = [0, *np.sort(rng.integers(0, U.shape[1], 3)).tolist(), U.shape[1]]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            sums.update(X[:, a:b + 1], U[:, a:b])
        used += any(s is not None for s in sums._engine._spectra)
        if bounds:
            bx = bounds["state_bound"][:, None]
            X, U = np.clip(X, -bx, bx) / bx, np.clip(U, -1.5, 1.5) / 1.5
        V = regression_vectors(X, U, R, kind, L)
        g, s = V @ V.T, V.sum(axis=1)
        if detrend and V.shape[1]:
            g, s = g - np.outer(s, s) / V.shape[1], np.zeros(d)
        gram, total, count = gram + g, total + s, count + V.shape[1]
    assert used                                  # the frequency-domain sums were taken
    totals = sums.totals()
    assert totals["n_samples"] == count
    scale = np.sqrt(np.clip(np.diag(gram), 1e-300, None))
    assert np.max(np.abs(totals["gram"] - gram) / np.outer(scale, scale)) < 1e-10
    assert np.all(np.abs(totals["sums"] - total) <= 1e-10 * scale * np.sqrt(max(count, 1)))


@pytest.mark.parametrize("seed", range(3))
def test_plain_statistics_refuse_moments_that_do_not_fit_their_layout(seed):
    # SufficientStatistics.plain takes moments summed elsewhere: a Gram or sums of another size
    # than the layout's, non-finite moments or a negative sample count were kept as given (a
    # later fit read the wrong entries); each is refused naming the argument, and the moments
    # of real data are accepted and give from_data's statistics
    from dmdidc.errors import DimensionError, NonFiniteError, ParameterError
    from dmdidc.statistics.layout import StatisticsLayout

    rng = np.random.default_rng(seed)
    n, m, R = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(0, 3))
    layout = StatisticsLayout(n, m, R, None, 0, 0)
    d = layout.dimension
    X, U = rng.standard_normal((n, 61)), rng.standard_normal((m, 60))
    reference = SufficientStatistics.from_data(X, U, max_delay=R)
    good = (reference.gram, reference.sums, reference.n_samples)
    stats = SufficientStatistics.plain(layout, *good)
    np.testing.assert_allclose(stats.gram, reference.gram, rtol=1e-12, atol=1e-12)
    assert stats.n_samples == reference.n_samples and stats.centering == "none"
    nan_gram = reference.gram.copy()
    nan_gram[0, -1] = np.nan
    bad = [((np.eye(d + 1), good[1], good[2]), DimensionError, "gram"),
           ((np.eye(d)[:, :-1], good[1], good[2]), DimensionError, "gram"),
           ((good[0], np.zeros(d - 1), good[2]), DimensionError, "sums"),
           ((nan_gram, good[1], good[2]), NonFiniteError, "gram"),
           ((good[0], np.full(d, np.inf), good[2]), NonFiniteError, "sums"),
           ((good[0], good[1], -5), ParameterError, "n_samples"),
           ((good[0], good[1], 2.5), ParameterError, "n_samples")]
    for args, error, name in bad:
        with pytest.raises(error, match=name):
            SufficientStatistics.plain(layout, *args)
