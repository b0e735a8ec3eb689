"""Tests of privacy.noise: the public noise-law interface the accountant reads."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from privacy import GaussianMechanism, LaplaceMechanism, SaSMechanism
from privacy.noise import GaussianNoise, LaplaceNoise, NoiseLaw, SaSNoise

LAWS = [(LaplaceNoise(1.7), stats.laplace(scale=1.7)),
        (GaussianNoise(0.6), stats.norm(scale=0.6)),
        (SaSNoise(1.0, 2.0), stats.cauchy(scale=2.0)),
        (SaSNoise(2.0, 0.5), stats.norm(scale=math.sqrt(2.0) * 0.5))]


@pytest.mark.parametrize("law,ref", LAWS, ids=lambda v: type(v).__name__)
def test_law_matches_scipy(law, ref):
    x = np.linspace(-12.0, 12.0, 97)
    np.testing.assert_allclose(law.logpdf(x), ref.logpdf(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(law.cdf(x), ref.cdf(x), rtol=1e-11, atol=1e-300)
    np.testing.assert_allclose(law.sf(x), ref.sf(x), rtol=1e-11, atol=1e-300)
    assert isinstance(law, NoiseLaw)


@pytest.mark.parametrize("law,ref", LAWS, ids=lambda v: type(v).__name__)
def test_cell_masses_keep_relative_accuracy_in_both_tails(law, ref):
    edges = np.array([-np.inf, -40.0, -39.0, -1.0, 0.5, 2.0, 39.0, 40.0, np.inf])
    masses = law.cell_masses(edges)
    assert masses.shape == (8,)
    assert masses.sum() == pytest.approx(1.0, abs=1e-15)
    # far-tail cells against scipy's tail-accurate sf; cancelling 1 - cdf would lose them all
    for lo, hi, mass in [(39.0, 40.0, masses[6]), (-40.0, -39.0, masses[1])]:
        upper = lo if lo > 0 else -hi
        expected = ref.sf(upper) - ref.sf(upper + 1.0)
        if expected > 0:
            assert mass == pytest.approx(expected, rel=1e-9)
    assert masses[3] == pytest.approx(ref.cdf(0.5) - ref.cdf(-1.0), rel=1e-12)


def test_laplace_far_tail_mass_against_mpmath():
    law = LaplaceNoise(0.5)
    mass = law.cell_masses([300.0, 301.0])[0]
    with mp.workdps(30):
        exact = 0.5 * (mp.e ** (-600) - mp.e ** (-602))
    assert mass == pytest.approx(float(exact), rel=1e-12)


@pytest.mark.parametrize("law", [LaplaceNoise(1.3), GaussianNoise(0.7), SaSNoise(2.0, 0.7),
                                 SaSNoise(1.5, 1.0)], ids=lambda v: type(v).__name__)
def test_tail_bound_is_the_quantile_rounded_up(law):
    mass = 1e-12
    t = law.tail_bound(mass)
    assert float(law.sf(t)) <= mass
    assert float(law.sf(t * (1 - 1e-6))) > mass


def test_light_tails_and_mechanism_laws():
    assert LaplaceNoise(1.0).light_tailed and GaussianNoise(1.0).light_tailed
    assert SaSNoise(2.0, 1.0).light_tailed and not SaSNoise(1.9, 1.0).light_tailed
    assert LaplaceMechanism(scale=2.0).noise == LaplaceNoise(2.0)
    assert GaussianMechanism(sigma=3.0, dimension=4).noise == GaussianNoise(3.0)
    assert SaSMechanism(alpha=1.5, scale=0.2).noise == SaSNoise(1.5, 0.2)


@pytest.mark.statistical
@pytest.mark.parametrize("law,ref", LAWS[:3], ids=lambda v: type(v).__name__)
def test_samples_follow_the_law(law, ref):
    draws = law.sample((20_000,), rng=11)
    assert stats.kstest(draws, ref.cdf).pvalue > 1e-3
    np.testing.assert_array_equal(draws, law.sample((20_000,), rng=11))
