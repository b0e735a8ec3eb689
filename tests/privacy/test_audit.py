"""Empirical DP auditing (privacy.audit): validity, power, and that it catches bugs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privacy import (
    DimensionError,
    GaussianMechanism,
    LaplaceMechanism,
    NonFiniteError,
    ParameterError,
    SaSMechanism,
    stable,
)
from privacy.accounting import epsilon
from privacy.audit import audit, clopper_pearson_lower, clopper_pearson_upper, epsilon_lower_bound
from privacy.vector_sas import sas_gaussian_equivalent_sigma


@pytest.mark.parametrize("k,n", [(0, 50), (3, 50), (17, 40), (40, 40), (1, 1000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    level = 0.975                       # one-sided 0.975 = two-sided 0.95
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert float(clopper_pearson_lower(k, n, level)) == pytest.approx(ci.low, abs=1e-12)
    assert float(clopper_pearson_upper(k, n, level)) == pytest.approx(ci.high, abs=1e-12)


def _mechanism_sampler(mech):
    def sampler(n, rng):
        return (mech.randomize(np.zeros((1, n)), rng)[0],
                mech.randomize(np.ones((1, n)), rng)[0])
    return sampler


def test_laplace_audit_is_close_to_and_below_the_truth():
    res = audit(_mechanism_sampler(LaplaceMechanism(scale=1.0)), samples=200_000, rng=0)
    assert 0.85 < res.epsilon_lower_bound <= 1.0
    assert res.certification_samples == res.selection_samples == 100_000
    assert res.numerator_lower > res.denominator_upper


@pytest.mark.statistical
def test_false_failure_rate_is_controlled():
    """Audits of a correct, *tight* mechanism exceed its epsilon in <= 5 % of repetitions.

    Laplace with epsilon = 1 attains e^epsilon on every half line beyond the shift, so a valid
    audit is often close to 1; an audit that selected and certified on the same samples would
    exceed it far more often.
    """
    rng = np.random.default_rng(11)
    reps, n = 300, 4000
    bounds = np.array([epsilon_lower_bound(rng.laplace(0, 1, n), rng.laplace(1, 1, n),
                                           confidence=0.95, max_thresholds=100,
                                           rng=rng).epsilon_lower_bound
                       for _ in range(reps)])
    violations = int(np.sum(bounds > 1.0))
    assert violations <= stats.binom.ppf(1 - 1e-6, reps, 0.05)
    assert np.mean(bounds) > 0.6                        # and it has power


@pytest.mark.statistical
def test_catches_a_miscalibrated_laplace_and_gaussian():
    """Noise scale halved, claimed epsilon unchanged: the lower bound exceeds the claim."""
    lap = LaplaceMechanism(scale=0.5)                   # claims epsilon = 1, is epsilon = 2
    res = audit(_mechanism_sampler(lap), samples=100_000, rng=1)
    assert res.epsilon_lower_bound > 1.0
    good = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    bad = GaussianMechanism(sigma=good.sigma / 2)       # claims (1, 1e-5), is (2.15, 1e-5)
    res_bad = audit(_mechanism_sampler(bad), samples=200_000, delta=1e-5, rng=2)
    assert res_bad.epsilon_lower_bound > 1.0
    res_good = audit(_mechanism_sampler(good), samples=200_000, delta=1e-5, rng=2)
    assert 0.3 < res_good.epsilon_lower_bound <= 1.0


@pytest.mark.statistical
def test_sas_mechanisms_audit_below_their_pure_epsilon():
    for alpha in (1.5, 1.9):
        mech = SaSMechanism.from_epsilon(1.0, alpha=alpha)
        res = audit(_mechanism_sampler(mech), samples=200_000, rng=3,
                    score=lambda x, m=mech: m.privacy_loss(x - 0.0))
        assert 0.4 < res.epsilon_lower_bound <= 1.0


@pytest.mark.statistical
@pytest.mark.slow
def test_vector_sas_release_breaks_the_scalar_claim_not_the_certified_one():
    """Seed-style accounting of a 16-dimensional i.i.d. SaS release with the scalar accountant
    claims epsilon = 1 (pure); the audit, with the shift spread evenly, proves more."""
    alpha, k = 1.5, 16
    mech = SaSMechanism.from_epsilon(1.0, alpha=alpha)
    gamma, shift = mech.scale, 1.0 / math.sqrt(k)       # ||shift||_2 = 1 = sensitivity

    def sampler(n, rng):
        null = stable.sas_sample(alpha, gamma, size=(n, k), rng=rng)
        return null, stable.sas_sample(alpha, gamma, size=(n, k), rng=rng) + shift

    def loss(x):
        return (stable.sas_logpdf(x - shift, alpha, gamma)
                - stable.sas_logpdf(x, alpha, gamma)).sum(axis=1)
    res = audit(sampler, samples=100_000, delta=1e-5, score=loss, rng=4)
    assert res.epsilon_lower_bound > epsilon(mech, delta=1e-5)       # scalar claim: broken
    certified = epsilon(GaussianMechanism(sas_gaussian_equivalent_sigma(alpha, gamma)),
                        delta=1e-5)
    assert res.epsilon_lower_bound <= certified


def test_selection_uses_both_orders_and_regions():
    rng = np.random.default_rng(5)
    null, alt = rng.laplace(0, 1, 20_000), rng.laplace(1, 1, 20_000)
    a = epsilon_lower_bound(null, alt, rng=0)
    b = epsilon_lower_bound(-null, -alt, rng=0)         # mirrored scores: same evidence
    assert a.epsilon_lower_bound > 0.7 and b.epsilon_lower_bound > 0.7
    assert {a.region, b.region} == {"above", "below"}


def test_identical_outputs_give_no_evidence():
    rng = np.random.default_rng(6)
    res = epsilon_lower_bound(rng.normal(size=10_000), rng.normal(size=10_000), rng=0)
    assert res.epsilon_lower_bound < 0.15


def test_input_errors():
    with pytest.raises(DimensionError, match="alt_scores has 3 samples; expected 4"):
        epsilon_lower_bound(np.zeros(4), np.zeros(3))
    with pytest.raises(NonFiniteError):
        epsilon_lower_bound(np.array([0.0, np.nan, 1, 2]), np.zeros(4))
    with pytest.raises(ParameterError, match="confidence"):
        epsilon_lower_bound(np.zeros(10), np.zeros(10), confidence=1.0)
    with pytest.raises(DimensionError, match="at least 2 samples"):
        epsilon_lower_bound(np.zeros(3), np.zeros(3))
    with pytest.raises(DimensionError, match="pass score="):
        audit(lambda n, rng: (np.zeros((n, 2)), np.zeros((n, 2))), samples=10)
