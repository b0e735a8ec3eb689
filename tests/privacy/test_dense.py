"""Dense FFT composition (privacy.dense): upper bounds, exact on small cases, fast queries."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from _toolbox.errors import AccountingError
from privacy import GaussianMechanism, SaSMechanism, accounting
from privacy.composition import pure_dp_epsilon
from privacy.dense import (
    DensePmf,
    compose,
    delta_for_epsilon,
    epsilon_for_delta,
    from_dp_accounting,
    self_compose,
)
from privacy.pld import privacy_loss_distribution


def _random_pmf(rng, size):
    probs = rng.dirichlet(np.ones(size)) * (1 - 1e-3)
    return DensePmf(0.1, int(rng.integers(-size, 0)), probs, 1e-3)


def _exact_delta(pmf, eps):
    losses = pmf.losses
    above = losses > eps
    return pmf.infinity_mass + float(np.sum(pmf.probs[above] * -np.expm1(eps - losses[above])))


@pytest.mark.parametrize("seed", range(8))
def test_self_compose_matches_repeated_direct_convolution(seed):
    rng = np.random.default_rng(seed)
    pmf = _random_pmf(rng, int(rng.integers(2, 30)))
    count = int(rng.integers(1, 40))
    ours = self_compose(pmf, count, tail_mass=0.0)
    direct = pmf.probs
    for _ in range(count - 1):
        direct = np.convolve(direct, pmf.probs)
    assert ours.lower == pmf.lower * count and ours.probs.size == direct.size
    assert np.allclose(ours.probs, direct, atol=1e-15)
    assert ours.infinity_mass == pytest.approx(1 - (1 - 1e-3) ** count, rel=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_queries_match_the_hockey_stick_definition(seed):
    rng = np.random.default_rng(100 + seed)
    pmf = _random_pmf(rng, int(rng.integers(2, 50)))
    for eps in rng.uniform(pmf.losses[0] - 1, pmf.losses[-1] + 1, 20):
        assert delta_for_epsilon(pmf, eps) == pytest.approx(_exact_delta(pmf, eps), abs=1e-14)
    for target in (2e-3, 0.01, 0.1):
        eps = epsilon_for_delta(pmf, target)
        assert _exact_delta(pmf, eps) <= target + 1e-14
        assert _exact_delta(pmf, eps - 1e-6) > target - 1e-12   # the smallest one
    assert epsilon_for_delta(pmf, 1e-4) == math.inf             # below the mass at infinity


def test_truncation_is_pessimistic():
    """Cut tails only move mass up: every delta of the truncated composition is >= exact."""
    rng = np.random.default_rng(7)
    pmf = _random_pmf(rng, 40)
    exact = self_compose(pmf, 25, tail_mass=0.0)
    cut = self_compose(pmf, 25, tail_mass=1e-3)
    assert cut.probs.size < exact.probs.size
    for eps in np.linspace(-2, 10, 30):
        assert delta_for_epsilon(cut, eps) >= delta_for_epsilon(exact, eps) - 1e-15


def test_sizes_are_checked_before_allocating():
    pmf = DensePmf(1e-4, 0, np.full(1000, 1e-3), 0.0)
    with pytest.raises(AccountingError, match="grid points"):
        self_compose(pmf, 10 ** 6, max_points=10 ** 5)
    with pytest.raises(AccountingError, match="different grids"):
        compose(pmf, DensePmf(1e-3, 0, np.ones(1), 0.0))


@pytest.mark.parametrize("sigma,q,steps", [(1.0, 0.01, 1000), (2.0, 0.1, 100), (0.8, 1.0, 30)])
def test_gaussian_composition_is_an_upper_bound_next_to_dp_accounting(sigma, q, steps):
    """Against the closed form (q = 1) and dp_accounting's own composition: never below,
    within 1e-6 relative above."""
    pld = privacy_loss_distribution(GaussianMechanism(sigma=sigma), sampling_rate=q,
                                    discretization=1e-3)
    sides = [pld._pmf_remove] if pld._symmetric else [pld._pmf_remove, pld._pmf_add]
    ours = max(epsilon_for_delta(self_compose(from_dp_accounting(p), steps), 1e-5)
               for p in sides)
    theirs = pld.self_compose(steps).get_epsilon_for_delta(1e-5)
    assert theirs * (1 - 1e-9) <= ours <= theirs * (1 + 1e-6)
    if q == 1.0:
        exact = GaussianMechanism(sigma=sigma / math.sqrt(steps)).epsilon_for_delta(1e-5)
        assert exact <= ours


def test_sas_composition_dominates_and_is_consistent():
    """SaS: the accountant's PLD bound lies below the pure-DP composition and above the
    Gaussian with the same scale (alpha = 2 is the lightest tail)."""
    mech = SaSMechanism(alpha=1.9, scale=2.0)
    g = accounting.guarantee(mech, delta=1e-5, steps=200, sampling_rate=0.05)
    assert g.method == "pld"
    one = math.log1p(0.05 * math.expm1(mech.epsilon))
    assert g.epsilon <= pure_dp_epsilon(one, steps=200, delta=1e-5)
    delta = accounting.delta(mech, epsilon=g.epsilon, steps=200, sampling_rate=0.05)
    assert delta <= 1e-5 * (1 + 1e-6)
    pld = pld_lib.from_gaussian_mechanism(math.sqrt(2) * 2.0, sampling_prob=0.05)
    assert g.epsilon >= pld.self_compose(200).get_epsilon_for_delta(1e-5) * 0.5


@pytest.mark.parametrize("scale,q,steps", [(1.0, 0.1, 50), (4.0, 1.0, 200)])
def test_laplace_composition_is_never_below_dp_accounting(scale, q, steps):
    from privacy import LaplaceMechanism
    ours = accounting.guarantee(LaplaceMechanism(scale=scale), delta=1e-6, steps=steps,
                                sampling_rate=q, discretization=1e-3)
    pld = pld_lib.from_laplace_mechanism(scale, sampling_prob=q,
                                         value_discretization_interval=1e-3)
    theirs = pld.self_compose(steps).get_epsilon_for_delta(1e-6)
    assert ours.method == "pld"
    assert theirs * (1 - 1e-9) <= ours.epsilon <= theirs * (1 + 1e-4)


@pytest.mark.parametrize("seed", range(6))
def test_tail_cut_sums_prefixes_as_the_whole_cumulative_sum(seed):
    # the truncation sums growing prefixes (256, 2048, ... entries) instead of the whole array:
    # the same cut, whether it lies in the first prefix, a later one or spans everything
    from privacy.dense import _tail_length

    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(int(rng.integers(1, 40_000)), 0.3))
    whole = np.cumsum(probs)
    for half in (0.0, 1e-300, *rng.uniform(0, 1, 5) ** 4, 0.999, 1.0, 2.0):
        assert _tail_length(probs, half) == int(np.searchsorted(whole, half, side="right"))


@pytest.mark.parametrize("seed", range(4))
def test_truncated_composition_dominates_on_long_tails(seed):
    """Tails cut over thousands of grid points (beyond the first prefix) stay pessimistic."""
    rng = np.random.default_rng(50 + seed)
    pmf = _random_pmf(rng, 300)
    count = int(rng.integers(20, 60))
    exact = self_compose(pmf, count, tail_mass=0.0)
    cut = self_compose(pmf, count, tail_mass=0.05)
    assert cut.probs.size < exact.probs.size - 1000
    assert cut.infinity_mass >= exact.infinity_mass
    for eps in np.linspace(exact.losses[0], exact.losses[-1], 40):
        assert delta_for_epsilon(cut, eps) >= delta_for_epsilon(exact, eps) - 1e-14
