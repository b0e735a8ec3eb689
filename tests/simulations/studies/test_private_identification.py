"""The per-sample baseline of the private identification study: its guarantee is the
accountant's composition of the per-step releases."""

from __future__ import annotations

import numpy as np
import pytest

from privacy import accounting
from simulations.studies.private_identification import _sample_mechanism, privatize_samples


@pytest.mark.parametrize("mechanism", ["laplace", "sas"])
def test_pure_dp_samples_compose_in_the_accountant(mechanism):
    X = np.zeros((1, 2, 9))
    noisy, eps, delta = privatize_samples(X, state_bound=1.5, mechanism=mechanism, epsilon=2.0,
                                          delta=1e-5, alpha=1.5, steps=10,
                                          rng=np.random.default_rng(0))
    assert noisy.shape == X.shape and not np.allclose(noisy, X)
    assert delta == 0.0 and 1.9 <= eps <= 2.0 + 1e-9
    mech = _sample_mechanism(mechanism, 2.0, 1e-5, 1.5, 6.0, 3.0 * np.sqrt(2), 2, 10)[0]
    assert eps == pytest.approx(10 * accounting.epsilon(mech, delta=0.0), rel=1e-12)
