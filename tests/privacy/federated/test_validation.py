"""The reach a reply screen allows for release noise: exceeded with at most the stated
probability, and not a vacuous bound (the union bound is nearly tight at small levels)."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.federated.validation import FALSE_ALARM, noise_allowance
from privacy.noise import GaussianNoise, LaplaceNoise, SaSNoise

TRIALS = 20000


@pytest.mark.parametrize("law", [GaussianNoise(scale=0.7), LaplaceNoise(scale=2.0),
                                 SaSNoise(alpha=1.5, scale=1.3), SaSNoise(alpha=1.0, scale=0.5)],
                         ids=lambda law: type(law).__name__)
@pytest.mark.parametrize("dimension", [1, 15])
def test_release_noise_exceeds_its_allowance_at_most_as_often_as_stated(law, dimension):
    """At a false-alarm probability of 5 %, whole releases of ``dimension`` i.i.d. entries
    leave the allowance on some entry in at most ~5 % of 20000 draws (binomial sd 0.15 %), and
    in more than 3 % (the union over entries and signs loses little): the bound is right and
    tight, so the screen's 1e-12 rests on the same formula."""
    rng = np.random.default_rng(dimension)
    t = noise_allowance(law, dimension, false_alarm=0.05)
    exceeded = np.mean(np.max(np.abs(law.sample((TRIALS, dimension), rng=rng)), axis=1) > t)
    assert 0.03 < exceeded < 0.05 + 4 * np.sqrt(0.05 * 0.95 / TRIALS)
    assert noise_allowance(law, dimension) > t            # the default, 1e-12, reaches further
    assert noise_allowance(law, dimension) == noise_allowance(law, dimension, FALSE_ALARM)
