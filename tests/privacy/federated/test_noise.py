"""The federation's one noise-law type: kinds, constructors, draws and sums."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from privacy.errors import ParameterError
from privacy.federated import noise
from privacy.federated.local_dp import NOISES
from privacy.federated.models import noise_norm as models_noise_norm
from privacy.federated.noise import NOISE_KINDS, NoiseLaw, ReleaseNoise, noise_norm
from privacy.federated.posterior import NoiseLaw as PosteriorNoiseLaw
from privacy.federated.release_sum import ReleaseNoise as SumReleaseNoise
from privacy.federated.release_sum import summed_noise_law
from privacy.mechanisms import GaussianMechanism, LaplaceMechanism, SaSMechanism


def test_docstring_examples():
    result = doctest.testmod(noise, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_old_names_are_the_one_type():
    assert PosteriorNoiseLaw is NoiseLaw and NOISES == NOISE_KINDS
    assert SumReleaseNoise is ReleaseNoise and models_noise_norm is noise_norm
    law = ReleaseNoise("sas", 0.5, 1.3)
    assert isinstance(law, NoiseLaw) and (law.kind, law.scale, law.alpha) == ("sas", 0.5, 1.3)
    assert law == NoiseLaw("sas", 0.5, (1.0,), 1.3)
    assert [noise_norm(k) for k in NOISE_KINDS] == ["l2", "l1", "l1"]


def test_draws_by_standard_deviation_are_the_former_sifl_draws():
    shape = (3, 4)
    gauss = NoiseLaw.from_std("gaussian", 0.7).sample(shape, np.random.default_rng(5))
    lap = NoiseLaw.from_std("laplace", 0.7).sample(shape, np.random.default_rng(5))
    np.testing.assert_array_equal(gauss, np.random.default_rng(5).normal(0.0, 0.7, shape))
    np.testing.assert_array_equal(
        lap, np.random.default_rng(5).laplace(0.0, 0.7 / math.sqrt(2.0), shape))
    with pytest.raises(ParameterError, match="noise law kind"):
        NoiseLaw.from_std("sas", 1.0)


def test_sums_of_draws_follow_the_summed_law():
    law = NoiseLaw("laplace", 0.5, (1.0, 1.0, 1.0))
    draws = law.sample((40000,), rng=1)
    assert np.std(draws) == pytest.approx(law.spread, rel=0.03)
    sas = NoiseLaw("sas", 1.0, (1.0, 1.0), alpha=1.0).sample((20001,), rng=2)
    assert np.median(np.abs(sas)) == pytest.approx(2.0, rel=0.05)   # Cauchy(2): median |x| = 2


def test_mechanisms_describe_their_noise_as_a_law():
    assert NoiseLaw.from_mechanism(GaussianMechanism(sigma=2.0)) == ReleaseNoise("gaussian", 2.0)
    assert NoiseLaw.from_mechanism(LaplaceMechanism(scale=0.5)) == ReleaseNoise("laplace", 0.5)
    sas = NoiseLaw.from_mechanism(SaSMechanism(alpha=1.5, scale=0.3))
    assert (sas.kind, sas.scale, sas.alpha) == ("sas", 0.3, 1.5)
    with pytest.raises(ParameterError, match="no noise law"):
        NoiseLaw.from_mechanism(object())


def test_a_weighted_law_sums_like_its_terms():
    weighted = summed_noise_law([NoiseLaw("gaussian", 2.0, (1.0, 0.5))])
    flat = summed_noise_law([ReleaseNoise("gaussian", 2.0), ReleaseNoise("gaussian", 1.0)])
    assert weighted == flat and weighted.combined_scale == pytest.approx(math.sqrt(5.0))


def test_bad_laws_are_refused():
    for bad, match in [(lambda: NoiseLaw("cauchy", 1.0), "kind"),
                       (lambda: NoiseLaw("gaussian", -1.0), "scale"),
                       (lambda: NoiseLaw("gaussian", 1.0, ()), "at least one"),
                       (lambda: NoiseLaw("laplace", 1.0, (1.0, 2.0)), "equal release weights"),
                       (lambda: ReleaseNoise("sas", 1.0), "alpha"),
                       (lambda: noise_norm("uniform"), "noise law kind")]:
        with pytest.raises(ParameterError, match=match):
            bad()
