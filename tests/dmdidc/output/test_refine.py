"""The output-error refinement at the edges of its parameter box."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, OutputDMDidc, random_excitation


@pytest.mark.parametrize("seed", range(3))
def test_max_delay_zero_fits_an_undelayed_plant_with_the_delays_fixed(seed):
    rng = np.random.default_rng(seed)
    n, m = 2 + seed % 2, 1 + seed % 2
    A_c = rng.standard_normal((n, n))
    A_c -= (np.max(np.linalg.eigvals(A_c).real) + rng.uniform(0.2, 1.0)) * np.eye(n)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), np.zeros(m), 0.5)
    U = random_excitation(m, 2000, rng=rng)
    Y = rng.standard_normal((1, n)) @ plant.simulate(np.zeros(n), U)[:, :-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                   # order checks are not the point
        est = OutputDMDidc(max_delay=0, order=n).fit(Y, U, dt=0.5)
    truth = np.sort_complex(np.linalg.eigvals(A_c))
    assert np.allclose(np.sort_complex(est.eigenvalues_), truth, rtol=1e-6, atol=1e-8)
    assert np.all(est.delay == 0.0) and np.all(est.delay_se_ == 0.0)
