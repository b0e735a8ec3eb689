"""The posterior of a sum of heterogeneous noisy releases (privacy.federated.release_sum)."""

import numpy as np
import pytest
from scipy import integrate, stats

from privacy.errors import DimensionError, NonFiniteError, ParameterError
from privacy.federated.noise import ReleaseSumNoise
from privacy.federated.posterior import GaussianPosterior
from privacy.federated.release_sum import (
    LaplaceSum,
    ReleaseNoise,
    sum_posterior,
    summed_noise_law,
)


def _partial_fractions(x, scales):
    """Exact density of a sum of Laplace(b_k) with distinct b_k: the characteristic function
    prod 1 / (1 + b_k^2 t^2) = sum_k c_k / (1 + b_k^2 t^2), c_k = prod_{j != k} b_k^2 /
    (b_k^2 - b_j^2), so the density is sum_k c_k Laplace(b_k)."""
    b = np.asarray(scales)
    total = 0.0
    for k, bk in enumerate(b):
        c = np.prod([bk ** 2 / (bk ** 2 - bj ** 2) for j, bj in enumerate(b) if j != k])
        total = total + c * np.exp(-np.abs(x) / bk) / (2 * bk)
    return total


@pytest.mark.parametrize("scales", [[2.0, 0.5], [1.0, 1.7, 3.1], [0.3, 1.0, 2.0, 4.0]])
def test_laplace_sum_matches_partial_fractions(scales):
    law = LaplaceSum(scales)
    x = np.linspace(-12 * law.spread, 12 * law.spread, 801)
    exact = _partial_fractions(x, scales)
    keep = exact > 1e-10 * exact.max()
    assert np.max(np.abs(law.logpdf(x[keep]) - np.log(exact[keep]))) < 2e-3
    # normalized, and its variance is sum 2 b^2
    density = np.exp(law.logpdf(x))
    assert integrate.trapezoid(density, x) == pytest.approx(1.0, abs=1e-4)
    assert integrate.trapezoid(x ** 2 * density, x) == pytest.approx(
        2 * np.sum(np.square(scales)), rel=1e-3)


@pytest.mark.parametrize("m", [2, 5, 60])
def test_laplace_sum_matches_closed_form_for_equal_scales(m):
    law, exact = LaplaceSum([0.7] * m), ReleaseSumNoise("laplace", 0.7, (1.0,) * m)
    x = np.linspace(0, 12 * law.spread, 400)
    ours, truth = law.logpdf(x), exact.logpdf(x)
    body = truth > truth[0] + np.log(1e-11)
    assert np.max(np.abs(ours[body] - truth[body])) < 1e-4
    # beyond the tabulated body (density < 1e-13 of the peak) the extension is heavier
    assert np.all(ours[~body] >= truth[~body] - 1e-3)


def test_laplace_sum_with_gaussian_term_matches_numerical_convolution():
    b, sigma = 1.3, 0.8
    law = LaplaceSum([b], gaussian_variance=sigma ** 2)
    for x0 in (0.0, 1.0, 4.0):
        value, _ = integrate.quad(lambda u, x0=x0: stats.laplace.pdf(u, scale=b)
                                  * stats.norm.pdf(x0 - u, scale=sigma), -40, 40, points=[0.0])
        assert law.logpdf(x0) == pytest.approx(np.log(value), abs=1e-5)


def test_sas_sum_is_stable_with_the_combined_scale():
    """Heterogeneous SaS releases (one alpha) sum to SaS with (sum gamma^alpha)^(1/alpha):
    Monte Carlo with scipy's levy_stable against the law's cdf (KS test)."""
    alpha, gammas = 1.5, np.array([0.5, 1.0, 2.0, 0.2])
    law = summed_noise_law([ReleaseNoise("sas", g, alpha) for g in gammas])
    combined = np.sum(gammas ** alpha) ** (1 / alpha)
    assert law.combined_scale == pytest.approx(combined)
    rng = np.random.default_rng(3)
    draws = sum(stats.levy_stable.rvs(alpha, 0.0, scale=g, size=4000, random_state=rng)
                for g in gammas)
    grid = np.linspace(-60, 60, 24001)
    cdf = np.cumsum(np.exp(law.logpdf(grid))) * (grid[1] - grid[0])
    result = stats.kstest(draws, lambda v: np.interp(v, grid, cdf))
    assert result.pvalue > 1e-3
    # and the density is scipy's at the combined scale
    x = np.array([0.0, 1.0, 3.0])
    assert np.allclose(law.logpdf(x), stats.levy_stable.logpdf(x, alpha, 0.0, scale=combined),
                       atol=1e-5)


def test_gaussian_sum_posterior_is_the_closed_form():
    sigmas = [1.0, 2.0, 2.0]
    y = np.array([3.0, -1.0])
    post = sum_posterior(y, [ReleaseNoise("gaussian", s) for s in sigmas],
                         lower=[-10, -10], upper=[10, 10])
    assert np.array_equal(post.mean, y)
    assert np.allclose(post.std, 3.0)
    assert np.allclose(post.upper - post.lower, 2 * stats.norm.ppf(0.975) * 3.0)
    # FedInfer's conjugate posterior (flat prior, one full observation) says the same
    conjugate = GaussianPosterior(ReleaseSumNoise("gaussian", 1.0, tuple(sigmas)), 2)
    reference = conjugate.summary(conjugate.add(conjugate.initial(), y))
    assert np.allclose(post.mean, reference.mean, rtol=1e-12)
    assert np.allclose(post.lower, reference.lower, rtol=1e-12)


def test_exact_releases_give_the_sum():
    post = sum_posterior([1.0, 2.0], [], lower=[0, 0], upper=[3, 3])
    assert np.array_equal(post.mean, [1.0, 2.0]) and np.all(post.std == 0)


@pytest.mark.statistical
@pytest.mark.parametrize("noises", [
    [ReleaseNoise("gaussian", s) for s in (0.5, 1.0, 3.0)],
    [ReleaseNoise("laplace", b) for b in (0.5, 1.0, 3.0)],
    [ReleaseNoise("sas", g, 1.5) for g in (0.5, 1.0, 3.0)],
])
def test_posterior_intervals_cover_at_their_level(noises):
    """Location family with a prior box much wider than the noise: the 90 % credible interval
    is a 90 % confidence interval.  2000 coordinates; binomial sd 0.0067."""
    rng = np.random.default_rng(11)
    d, draws = 200, 10
    lower, upper = np.full(d, -1e4), np.full(d, 1e4)
    hits = []
    for _ in range(draws):
        truth = rng.uniform(-100, 100, d)
        noise = 0.0
        for n in noises:
            if n.kind == "gaussian":
                noise = noise + rng.normal(0, n.scale, d)
            elif n.kind == "laplace":
                noise = noise + rng.laplace(0, n.scale, d)
            else:
                noise = noise + stats.levy_stable.rvs(n.alpha, 0.0, scale=n.scale, size=d,
                                                      random_state=rng)
        post = sum_posterior(truth + noise, noises, lower=lower, upper=upper, level=0.9)
        hits.append((post.lower <= truth) & (truth <= post.upper))
    assert 0.87 < np.mean(hits) < 0.93


def test_box_prior_pulls_a_heavy_tailed_outlier_back():
    """SaS noise with a huge draw: the posterior mean stays in the box (the sum does not)."""
    noises = [ReleaseNoise("sas", 1.0, 1.1)] * 3
    post = sum_posterior([5000.0], noises, lower=[0.0], upper=[100.0])
    assert 0.0 <= post.mean[0] <= 100.0 and post.upper[0] <= 100.0


def test_bad_inputs():
    g = [ReleaseNoise("gaussian", 1.0)]
    with pytest.raises(ParameterError, match="kind"):
        ReleaseNoise("cauchy", 1.0)
    with pytest.raises(ParameterError, match="scale"):
        ReleaseNoise("laplace", 0.0)
    with pytest.raises(ParameterError, match="one alpha"):
        summed_noise_law([ReleaseNoise("sas", 1.0, 1.5), ReleaseNoise("sas", 1.0, 1.2)])
    with pytest.raises(ParameterError, match="one alpha"):
        summed_noise_law([ReleaseNoise("sas", 1.0, 1.5), ReleaseNoise("gaussian", 1.0)])
    with pytest.raises(ParameterError, match="at least one"):
        summed_noise_law([])
    with pytest.raises(NonFiniteError):
        sum_posterior([np.nan], g, lower=[0.0], upper=[1.0])
    with pytest.raises(DimensionError):
        sum_posterior([[1.0]], g, lower=[0.0], upper=[1.0])
    with pytest.raises(DimensionError, match="shape of total"):
        sum_posterior([1.0, 2.0], [ReleaseNoise("laplace", 1.0)], lower=[0.0], upper=[1.0])
