"""The federation's one noise type (ReleaseSumNoise): kinds, constructors, draws and sums."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from privacy.errors import ParameterError
from privacy.federated import noise
from privacy.federated.local_dp import NOISES
from privacy.federated.models import noise_norm as models_noise_norm
from privacy.federated.noise import NOISE_KINDS, ReleaseNoise, ReleaseSumNoise, noise_norm
from privacy.federated.release_sum import ReleaseNoise as SumReleaseNoise
from privacy.federated.release_sum import summed_noise_law
from privacy.mechanisms import GaussianMechanism, LaplaceMechanism, SaSMechanism


def test_docstring_examples():
    result = doctest.testmod(noise, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_old_names_are_the_one_type():
    assert NOISES == NOISE_KINDS
    assert SumReleaseNoise is ReleaseNoise and models_noise_norm is noise_norm
    law = ReleaseNoise("sas", 0.5, 1.3)
    assert isinstance(law, ReleaseSumNoise)
    assert (law.kind, law.scale, law.alpha) == ("sas", 0.5, 1.3)
    assert law == ReleaseSumNoise("sas", 0.5, (1.0,), 1.3)
    assert [noise_norm(k) for k in NOISE_KINDS] == ["l2", "l1", "l1"]


def test_draws_by_standard_deviation_are_the_former_sifl_draws():
    shape = (3, 4)
    gauss = ReleaseSumNoise.from_std("gaussian", 0.7).sample(shape, np.random.default_rng(5))
    lap = ReleaseSumNoise.from_std("laplace", 0.7).sample(shape, np.random.default_rng(5))
    np.testing.assert_array_equal(gauss, np.random.default_rng(5).normal(0.0, 0.7, shape))
    np.testing.assert_array_equal(
        lap, np.random.default_rng(5).laplace(0.0, 0.7 / math.sqrt(2.0), shape))
    with pytest.raises(ParameterError, match="noise law kind"):
        ReleaseSumNoise.from_std("sas", 1.0)


def test_sums_of_draws_follow_the_summed_law():
    law = ReleaseSumNoise("laplace", 0.5, (1.0, 1.0, 1.0))
    draws = law.sample((40000,), rng=1)
    assert np.std(draws) == pytest.approx(law.spread, rel=0.03)
    sas = ReleaseSumNoise("sas", 1.0, (1.0, 1.0), alpha=1.0).sample((20001,), rng=2)
    assert np.median(np.abs(sas)) == pytest.approx(2.0, rel=0.05)   # Cauchy(2): median |x| = 2


def test_mechanisms_describe_their_noise_as_a_law():
    from_mechanism = ReleaseSumNoise.from_mechanism
    assert from_mechanism(GaussianMechanism(sigma=2.0)) == ReleaseNoise("gaussian", 2.0)
    assert from_mechanism(LaplaceMechanism(scale=0.5)) == ReleaseNoise("laplace", 0.5)
    sas = ReleaseSumNoise.from_mechanism(SaSMechanism(alpha=1.5, scale=0.3))
    assert (sas.kind, sas.scale, sas.alpha) == ("sas", 0.3, 1.5)
    with pytest.raises(ParameterError, match="no noise law"):
        ReleaseSumNoise.from_mechanism(object())


def test_a_weighted_law_sums_like_its_terms():
    weighted = summed_noise_law([ReleaseSumNoise("gaussian", 2.0, (1.0, 0.5))])
    flat = summed_noise_law([ReleaseNoise("gaussian", 2.0), ReleaseNoise("gaussian", 1.0)])
    assert weighted == flat and weighted.combined_scale == pytest.approx(math.sqrt(5.0))


def test_bad_laws_are_refused():
    for bad, match in [(lambda: ReleaseSumNoise("cauchy", 1.0), "kind"),
                       (lambda: ReleaseSumNoise("gaussian", -1.0), "scale"),
                       (lambda: ReleaseSumNoise("gaussian", 1.0, ()), "at least one"),
                       (lambda: ReleaseSumNoise("laplace", 1.0, (1.0, 2.0)),
                        "equal release weights"),
                       (lambda: ReleaseNoise("sas", 1.0), "alpha"),
                       (lambda: noise_norm("uniform"), "noise law kind")]:
        with pytest.raises(ParameterError, match=match):
            bad()


@pytest.mark.parametrize("module", ["privacy.federated.noise", "privacy.federated",
                                    "privacy.federated.posterior"])
def test_the_old_name_noise_law_still_works_with_a_deprecation_warning(module):
    """``NoiseLaw`` (the old name, that of privacy.noise's mechanism law too) is served where it
    was public, as ReleaseSumNoise, with a warning naming the new name; it is in no __all__."""
    import importlib

    import privacy.noise

    where = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match="ReleaseSumNoise") as caught:
        old = where.NoiseLaw
    assert old is ReleaseSumNoise and old is not privacy.noise.NoiseLaw
    assert "privacy.noise.NoiseLaw" in str(caught[0].message)
    with pytest.warns(DeprecationWarning):          # every access warns (not cached)
        exec(f"from {module} import NoiseLaw", {})
    assert "NoiseLaw" not in where.__all__ and "NoiseLaw" not in dir(where)
    with pytest.raises(AttributeError, match="NoSuchLaw"):
        where.NoSuchLaw  # noqa: B018


def test_the_mechanisms_noise_law_keeps_its_name():
    import privacy.noise

    assert privacy.noise.NoiseLaw.__name__ == "NoiseLaw"
    assert isinstance(GaussianMechanism(sigma=1.0).noise, privacy.noise.NoiseLaw)
    assert not issubclass(ReleaseSumNoise, privacy.noise.NoiseLaw)
