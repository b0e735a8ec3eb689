"""Federated identification: combine_statistics (the FederatedIdentification protocol is in
test_identification.py)."""

import dataclasses
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from dmdidc import DelayedPlant, DMDidc, SufficientStatistics
from dmdidc.errors import DimensionError, ParameterError
from dmdidc.federated import combine_statistics, statistics_box, statistics_posterior
from dmdidc.statistics.fit import effective_noise_variance
from privacy.errors import NonFiniteError

PLANT = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
BOUNDS = {"state_bound": 2.0, "input_bound": 1.0}


def _client_data(k, experiments=4, length=60, noise=0.02):
    rng = np.random.default_rng(1000 + k)
    U = rng.uniform(-1, 1, (experiments, 1, length))
    X = np.stack([PLANT.simulate([0.0], u) for u in U])
    return {"X": X + noise * rng.standard_normal(X.shape), "U": U}


def _stats(k, **kwargs):
    data = _client_data(k, **kwargs)
    return SufficientStatistics.from_data(list(data["X"]), list(data["U"]), max_delay=2,
                                          **BOUNDS)


def test_gaussian_releases_combine_to_their_sum_with_the_summed_variance():
    eps = [0.5, 1.0, 2.0]
    releases = [_stats(k).privatize("gaussian", epsilon=e, delta=1e-5, rng=k)
                for k, e in enumerate(eps)]
    fleet = combine_statistics(releases)
    assert np.array_equal(fleet.to_vector(), sum(releases).to_vector())
    sigmas = [r.privacy.mechanism.sigma for r in releases]
    assert fleet.noise_variance == pytest.approx(sum(s ** 2 for s in sigmas), rel=1e-12)
    assert fleet.n_samples == sum(r.n_samples for r in releases)
    assert len(fleet.releases) == 3 and {r.unit for r in fleet.releases} == {"sample"}
    # and the plain statistics are what the noise was added to: the error is the noise
    exact = sum(_stats(k) for k in range(3))
    residual = fleet.to_vector() - exact.to_vector()
    assert abs(residual.std() / np.sqrt(fleet.noise_variance) - 1) < 0.35


def test_sas_and_laplace_posteriors_match_the_summed_law():
    releases = [_stats(k, experiments=10, length=600).privatize("laplace", epsilon=e, rng=k)
                for k, e in enumerate([0.5, 1.0, 2.0])]
    total, post = statistics_posterior(releases)
    b = np.array([r.privacy.mechanism.scale for r in releases])
    # far from the box edges the Laplace-sum posterior is symmetric about the sum
    lower, upper = statistics_box(total)
    interior = (post.mean - 30 * post.std > lower) & (post.mean + 30 * post.std < upper)
    assert interior.sum() > 5
    assert np.allclose(post.mean[interior], total.to_vector()[interior], atol=1e-3 * b.sum())
    assert np.allclose(post.std[interior] ** 2, 2 * np.sum(b ** 2), rtol=2e-3)
    sas = [_stats(k, experiments=10, length=600).privatize("sas", epsilon=1.0, alpha=1.5, rng=k)
           for k in range(3)]
    total, post = statistics_posterior(sas)
    gamma = np.sum([r.privacy.mechanism.scale ** 1.5 for r in sas]) ** (1 / 1.5)
    half = sps.levy_stable.ppf(0.975, 1.5, 0.0, scale=gamma)   # interval of the stable sum
    lower, upper = statistics_box(total)
    interior = (total.to_vector() - 30 * gamma > lower) & (total.to_vector() + 30 * gamma < upper)
    assert interior.sum() > 5
    assert np.allclose((post.upper - post.lower)[interior] / 2, half, rtol=0.01)
    fleet = combine_statistics(sas)     # the fit's variance: that interval as a normal one
    assert np.sqrt(fleet.noise_variance) * sps.norm.ppf(0.975) >= half * 0.99


def test_effective_variance_of_summed_sas_releases_is_stable():
    a, b = (_stats(k).privatize("sas", epsilon=1.0, alpha=1.5, rng=k) for k in range(2))
    g = [a.privacy.mechanism.scale, b.privacy.mechanism.scale]
    expected = 2 * (g[0] ** 1.5 + g[1] ** 1.5) ** (2 / 1.5)
    assert effective_noise_variance(a + b) == pytest.approx(expected)
    assert effective_noise_variance(a + b) > 2 * (g[0] ** 2 + g[1] ** 2)   # not summed squares


def test_plain_statistics_combine_exactly():
    parts = [_stats(k) for k in range(3)]
    fleet = combine_statistics(parts)
    assert np.array_equal(fleet.gram, sum(parts).gram) and fleet.noise_variance == 0


def test_bad_inputs_are_refused_with_the_reason():
    good = _stats(0).privatize("gaussian", epsilon=1.0, delta=1e-5, rng=0)
    with pytest.raises(ParameterError, match="empty"):
        combine_statistics([])
    with pytest.raises(ParameterError, match="sequence"):
        combine_statistics(good)
    with pytest.raises(ParameterError, match=r"releases\[1\] is a dict"):
        combine_statistics([good, {}])
    with pytest.raises(ParameterError, match="counted twice"):
        combine_statistics([good, good])
    other_layout = SufficientStatistics.from_data(
        list(_client_data(1)["X"]), list(_client_data(1)["U"]), max_delay=3, **BOUNDS)
    with pytest.raises(DimensionError, match="layout"):
        combine_statistics([good, other_layout])
    other_bounds = SufficientStatistics.from_data(
        list(_client_data(1)["X"]), list(_client_data(1)["U"]), max_delay=2,
        state_bound=3.0, input_bound=1.0)
    with pytest.raises(ParameterError, match="bounds"):
        combine_statistics([good, other_bounds])
    window = _stats(1).privatize("gaussian", epsilon=1.0, delta=1e-5, unit="window",
                                 window=5, rng=1)
    with pytest.raises(ParameterError, match="privacy units"):
        combine_statistics([good, window])
    nan = dataclasses.replace(_stats(2), gram=np.full_like(good.gram, np.nan))
    with pytest.raises(NonFiniteError, match=r"releases\[1\]"):
        combine_statistics([good, nan])
    a = _stats(3).privatize("sas", epsilon=1.0, alpha=1.5, rng=3)
    b = _stats(4).privatize("sas", epsilon=1.0, alpha=1.2, rng=4)
    with pytest.raises(ParameterError, match="one alpha"):
        combine_statistics([a, b])
    with pytest.raises(ParameterError, match="level"):
        combine_statistics([good], level=1.0)


@pytest.mark.statistical
def test_delay_error_falls_with_the_number_of_clients():
    """4 against 64 clients at epsilon = 1 each (Gaussian, one time step): the error of the
    delay identified from the combined statistics falls, about as 1 / sqrt(N) (factor 4);
    required: at least 2.5x over 4 seeds (medians)."""
    errors = {4: [], 64: []}
    for seed in range(4):
        rng = np.random.default_rng(seed)
        U = rng.uniform(-1, 1, (1, 64 * 3000))
        X = PLANT.simulate([0.0], U)
        releases = []
        for k in range(64):
            a, b = 3000 * k, 3000 * (k + 1)
            stats = SufficientStatistics.from_data(X[:, a:b + 1], U[:, a:b], max_delay=2,
                                                   **BOUNDS)
            releases.append(stats.privatize("gaussian", epsilon=1.0, delta=1e-5,
                                            rng=100 * seed + k))
        for n in errors:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = DMDidc(max_delay=2).fit_statistics(combine_statistics(releases[:n]),
                                                         dt=1.0)
            errors[n].append(abs(est.delay[0] - 1.5))
    assert np.median(errors[64]) < np.median(errors[4]) / 2.5
