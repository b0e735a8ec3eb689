"""The certified GDP bound of i.i.d. SaS vector noise (privacy.vector_sas)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privacy import GaussianMechanism, ParameterError, SaSMechanism
from privacy.curves import gaussian_delta
from privacy.vector_sas import (
    sas_gaussian_equivalent_sigma,
    sas_gdp_mu,
    sas_location_fisher_information,
)


def _gdp_delta(epsilon: float, mu: float) -> float:
    """delta(epsilon) of G_mu (seed 002 eq. 6): a Gaussian with sigma 1, sensitivity mu."""
    return gaussian_delta(mu, epsilon)


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1.999, 1.95, 1.9, 1.5, 1.2, 1.0])
def test_scalar_sas_privacy_curve_lies_below_the_gdp_bound(alpha):
    """Lemma (a): SaS(alpha, r) shifted by 1 is G_{mu}-DP with mu = sqrt(2 pi) p_r(0).

    Checked on the whole curve: tiny epsilons (where the two curves touch, at the total
    variation), the body, and up to the pure-DP epsilon where the SaS curve reaches 0.
    """
    for ratio in (0.05, 0.2, 1.0, 5.0, 50.0):
        mech = SaSMechanism(alpha=alpha, scale=ratio, sensitivity=1.0)
        mu = sas_gdp_mu(alpha, ratio, 1.0)
        top = mech.scalar_epsilon
        eps = np.unique(np.concatenate([[0.0], np.geomspace(1e-6, 1.0, 12) * min(top, 3 * mu),
                                        np.linspace(0.0, top, 14)]))
        for e in eps:
            sas, gauss = mech.privacy_curve(float(e)), _gdp_delta(float(e), mu)
            assert sas <= gauss * (1 + 1e-9) + 1e-15, (alpha, ratio, e, sas, gauss)


def test_alpha_two_is_the_gaussian_and_scaling():
    assert sas_gaussian_equivalent_sigma(2.0, 0.7) == pytest.approx(math.sqrt(2.0) * 0.7,
                                                                    rel=1e-15)
    assert sas_gdp_mu(1.5, 2.0, 3.0) == pytest.approx(1.5 * sas_gdp_mu(1.5, 1.0, 1.0))
    # heavier tails concentrate more mass at 0: the bound weakens (smaller sigma_eq)
    sig = [sas_gaussian_equivalent_sigma(a, 1.0) for a in (2.0, 1.999, 1.9, 1.5, 1.0)]
    assert all(a > b for a, b in zip(sig, sig[1:], strict=False))


def test_total_variation_is_where_the_bound_is_tight():
    """At epsilon = 0 the bound compares total variations: TV_SaS <= TV_G, nearly equal for
    small shifts (the bound cannot be lowered without breaking lemma (a))."""
    for alpha in (1.9, 1.5):
        mech = SaSMechanism(alpha=alpha, scale=20.0)
        mu = sas_gdp_mu(alpha, 20.0)
        tv_sas, tv_gdp = mech.privacy_curve(0.0), _gdp_delta(0.0, mu)
        assert tv_sas <= tv_gdp
        assert tv_sas > tv_gdp * (1 - 1e-3)
        assert mech.privacy_curve(0.0) > _gdp_delta(0.0, 0.999 * mu)


@pytest.mark.parametrize("alpha,expected", [(2.0, 0.5), (1.0, 0.5)])
def test_fisher_information_closed_forms(alpha, expected):
    assert sas_location_fisher_information(alpha, 1.0) == pytest.approx(expected, rel=1e-7)
    assert sas_location_fisher_information(alpha, 2.0) == pytest.approx(expected / 4, rel=1e-7)


@pytest.mark.parametrize("alpha", [1.999, 1.9, 1.5, 1.2])
def test_bound_is_above_the_spread_limit_and_tight_near_two(alpha):
    """No dimension-free bound can beat the LAN limit sigma = 1 / sqrt(I)."""
    lan = 1.0 / math.sqrt(sas_location_fisher_information(alpha))
    eq = sas_gaussian_equivalent_sigma(alpha, 1.0)
    assert eq <= lan
    if alpha == 1.999:
        assert eq > lan * (1 - 1e-3)


def test_accounting_through_the_gaussian_equivalent_is_weaker_than_scalar_sas():
    """For a scalar release the scalar SaS accountant is exact and tighter; the vector bound
    pays for the dimension (here: the same scale, a larger epsilon)."""
    from privacy.accounting import epsilon
    sas = SaSMechanism(alpha=1.9, scale=1.0)
    gauss = GaussianMechanism(sigma=sas_gaussian_equivalent_sigma(1.9, 1.0))
    assert epsilon(sas, delta=1e-5) < epsilon(gauss, delta=1e-5)


def test_errors():
    with pytest.raises(ParameterError, match="alpha must lie in"):
        sas_gdp_mu(0.5, 1.0)
    with pytest.raises(ParameterError, match="scale"):
        sas_gaussian_equivalent_sigma(1.5, 0.0)
    with pytest.raises(ParameterError, match="sensitivity"):
        sas_gdp_mu(1.5, 1.0, -1.0)


@pytest.mark.parametrize("alpha, sigma", [(1.0, 0.3), (1.5, 2.0), (1.9, 160.4), (2.0, 1e-3)])
def test_scale_for_gaussian_sigma_is_the_smallest_certified_scale(alpha, sigma):
    from privacy.vector_sas import sas_scale_for_gaussian_sigma

    scale = sas_scale_for_gaussian_sigma(alpha, sigma)
    assert sas_gaussian_equivalent_sigma(alpha, scale) >= sigma
    assert sas_gaussian_equivalent_sigma(alpha, math.nextafter(scale, 0.0)) < sigma


def test_scale_for_gaussian_sigma_refuses_bad_arguments():
    from privacy.vector_sas import sas_scale_for_gaussian_sigma

    with pytest.raises(ParameterError, match="sigma"):
        sas_scale_for_gaussian_sigma(1.5, 0.0)
    with pytest.raises(ParameterError, match="alpha"):
        sas_scale_for_gaussian_sigma(0.5, 1.0)
