"""Tests of privacy.mechanisms (Laplace, Gaussian, SaS)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, special

from privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    NeighboringRelation,
    ParameterError,
    SaSMechanism,
)
from privacy.mechanisms import sas_pure_epsilon


def cauchy_epsilon(scale, sensitivity=1.0):
    """Seed eq. (3.57), evaluated literally in 50-digit arithmetic."""
    import mpmath
    with mpmath.workdps(50):
        s = mpmath.sqrt(4 * (mpmath.mpf(scale) / sensitivity) ** 2 + 1)
        return float(mpmath.log((s + 1) / (s - 1)))



# ----------------------------------------------------------------------------- Laplace / Gaussian


def test_laplace_epsilon_and_randomize():
    mech = LaplaceMechanism(scale=2.0, sensitivity=0.5)
    assert mech.epsilon == pytest.approx(0.25)
    x = mech.randomize(np.zeros((3, 4)), rng=1)
    assert x.shape == (3, 4)
    assert isinstance(mech.randomize(1.0, rng=np.random.default_rng(0)), float)
    np.testing.assert_array_equal(mech.randomize([1.0, 2.0], rng=5),
                                  mech.randomize([1.0, 2.0], rng=5))
    assert np.max(np.abs(mech.privacy_loss(np.linspace(-10, 10, 101)))) <= mech.epsilon + 1e-15


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (0.5, 1e-6), (0.9, 1e-3)])
def test_gaussian_classical_is_valid_and_analytic_is_tighter(eps, delta):
    classical = GaussianMechanism.from_epsilon_delta(eps, delta, method="classical")
    analytic = GaussianMechanism.from_epsilon_delta(eps, delta)
    assert classical.delta_for_epsilon(eps) <= delta
    assert analytic.sigma < classical.sigma
    assert analytic.delta_for_epsilon(eps) <= delta
    assert analytic.delta_for_epsilon(eps) == pytest.approx(delta, rel=1e-6)


def test_gaussian_classical_refuses_large_epsilon():
    with pytest.raises(ParameterError, match="epsilon"):
        GaussianMechanism.from_epsilon_delta(1.5, 1e-5, method="classical")
    # the analytic calibration works for any epsilon
    mech = GaussianMechanism.from_epsilon_delta(5.0, 1e-5, sensitivity=2.0)
    assert mech.delta_for_epsilon(5.0) <= 1e-5


def test_gaussian_curve_matches_numerical_integration():
    mech = GaussianMechanism(sigma=1.3, sensitivity=0.7)
    eps = 0.8

    def integrand(x):
        p1 = math.exp(-(x - 0.7) ** 2 / (2 * 1.3 ** 2))
        p0 = math.exp(-x ** 2 / (2 * 1.3 ** 2))
        return max(0.0, p1 - math.exp(eps) * p0) / (1.3 * math.sqrt(2 * math.pi))
    start = (eps * 1.3 ** 2 + 0.5 * 0.7 ** 2) / 0.7
    value, _ = integrate.quad(integrand, start, np.inf, epsabs=1e-14)
    assert mech.delta_for_epsilon(eps) == pytest.approx(value, rel=1e-8)
    assert mech.epsilon_for_delta(mech.delta_for_epsilon(eps)) == pytest.approx(eps, rel=1e-8)


# ----------------------------------------------------------------------------- SaS epsilon


@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 7.0, 300.0])
def test_cauchy_closed_form(scale):
    assert SaSMechanism(alpha=1.0, scale=scale).epsilon == pytest.approx(
        cauchy_epsilon(scale), abs=1e-10)
    assert SaSMechanism(alpha=1.0, scale=scale).epsilon >= cauchy_epsilon(scale)


@pytest.mark.parametrize("scale", [0.05, 1.0, 20.0])
def test_generic_maximizer_reproduces_cauchy(scale):
    from privacy.mechanisms import _maximize_loss
    mech = SaSMechanism(alpha=1.0, scale=scale)
    value, x_star = _maximize_loss(lambda x: np.asarray(mech.privacy_loss(x)), 0.5,
                                   max(scale, 1.0))
    assert value == pytest.approx(cauchy_epsilon(scale), abs=1e-10)
    assert value >= cauchy_epsilon(scale)
    assert x_star == pytest.approx(0.5 * (1 + math.sqrt(1 + 4 * scale ** 2)), rel=1e-6)


def test_cauchy_small_and_large_scale_limits():
    # (3.75): eps ~ D / gamma for large gamma.
    assert sas_pure_epsilon(1.0, 1e4) == pytest.approx(1e-4, rel=1e-6)
    # Small gamma: (3.57) gives (s+1)/(s-1) ~ 1/r^2, i.e. eps ~ 2 ln(D/gamma).  The seed's
    # (3.78)-(3.79) print 2 ln(sqrt(2) D/gamma): the factor 2 of the denominator 2 r^2 was dropped,
    # an additive ln 2 misprint.
    assert sas_pure_epsilon(1.0, 1e-4) == pytest.approx(2 * math.log(1e4), rel=1e-8)
    assert sas_pure_epsilon(1.0, 1e-4) == pytest.approx(
        2 * math.log(math.sqrt(2) * 1e4) - math.log(2.0), rel=1e-8)


@pytest.mark.parametrize("alpha", [1.0, 1.5,
                                   1.9])
@pytest.mark.parametrize("c", [0.1, 3.0, 50.0])
def test_epsilon_invariant_under_joint_scaling(alpha, c):
    base = SaSMechanism(alpha=alpha, scale=0.8, sensitivity=1.0).epsilon
    scaled = SaSMechanism(alpha=alpha, scale=0.8 * c, sensitivity=c).epsilon
    assert scaled == pytest.approx(base, rel=1e-9)


def test_alpha_two_is_not_pure():
    assert SaSMechanism(alpha=2.0, scale=1.0).epsilon == math.inf
    with pytest.raises(ParameterError, match="alpha"):
        SaSMechanism.from_epsilon(1.0, alpha=2.0)


@pytest.mark.parametrize("alpha", [1.0, 1.7])
@pytest.mark.parametrize("eps", [0.05, 1.0, 6.0])
def test_from_epsilon_round_trip(alpha, eps):
    mech = SaSMechanism.from_epsilon(eps, alpha=alpha, sensitivity=2.5)
    assert mech.epsilon <= eps
    assert mech.epsilon == pytest.approx(eps, rel=1e-8)


def test_expected_distortion_formula_and_table_3_1():
    table = {2.0: 1.1284, 1.999: 1.1289, 1.99: 1.1340, 1.95: 1.1576, 1.9: 1.1903, 1.8: 1.2687}
    for alpha, printed in table.items():
        value = SaSMechanism(alpha=alpha, scale=1.0).expected_distortion
        # independent evaluation: E|Y| = int_0^inf 2 P(|Y| > y) ... via Gamma: 2/pi Gamma(1-1/a)
        independent = 2.0 / math.pi * math.exp(special.gammaln(1.0 - 1.0 / alpha))
        assert value == pytest.approx(independent, rel=1e-14)
        assert round(value, 4) == pytest.approx(printed, abs=1.5e-4), alpha
    assert SaSMechanism(alpha=2.0, scale=1.0).expected_distortion == pytest.approx(
        GaussianMechanism(sigma=math.sqrt(2.0)).expected_distortion)
    assert SaSMechanism(alpha=1.0, scale=1.0).expected_distortion == math.inf


def test_cauchy_expected_distortion_is_infinite_and_alpha_15_finite():
    assert SaSMechanism(alpha=1.5, scale=2.0).expected_distortion == pytest.approx(
        4.0 / math.pi * math.gamma(1.0 / 3.0))


# ----------------------------------------------------------------------------- SaS privacy curve


def _direct_curve(mech, eps):
    def integrand(x):
        return max(0.0, math.exp(float(mech._logpdf(np.array(x - mech.sensitivity))))
                   - math.exp(eps + float(mech._logpdf(np.array(x)))))
    a, b = mech._loss_level_set(eps)
    value, _ = integrate.quad(integrand, a, b, epsabs=1e-15, epsrel=1e-12, limit=500)
    return value


@pytest.mark.parametrize("scale,eps", [(1.0, 0.0), (1.0, 0.3), (0.5, 1.2), (3.0, 0.2)])
def test_cauchy_privacy_curve_vs_direct_integration(scale, eps):
    mech = SaSMechanism(alpha=1.0, scale=scale)
    curve = mech.privacy_curve(eps)
    # {loss > eps}: (1 - e^eps) x^2 + 2 e^eps x - e^eps + scale^2 (1 - e^eps) > 0, solved directly
    k = math.exp(eps)
    if eps == 0.0:
        a, b = 0.5, math.inf
    else:
        roots = np.roots([1 - k, 2 * k, -k + scale ** 2 * (1 - k)])
        a, b = sorted(roots.real)

    def density(x):
        return 1.0 / (math.pi * scale * (1 + (x / scale) ** 2))

    def integrand(x):
        return density(x - 1.0) - k * density(x)
    brute, _ = integrate.quad(integrand, a, b, limit=1000, epsabs=1e-15, epsrel=1e-13)
    assert curve == pytest.approx(brute, rel=1e-9, abs=1e-14)


def test_pure_curve_vanishes_beyond_epsilon():
    mech = SaSMechanism(alpha=1.0, scale=0.7)
    assert mech.privacy_curve(mech.epsilon) == 0.0
    assert mech.privacy_curve(mech.epsilon * 1.01) == 0.0
    assert mech.privacy_curve(mech.epsilon * 0.999) > 0.0


@pytest.mark.parametrize("alpha", [1.5, 1.9])
def test_stable_privacy_curve(alpha):
    mech = SaSMechanism(alpha=alpha, scale=1.0)
    eps = 0.5 * mech.epsilon
    assert mech.privacy_curve(eps) == pytest.approx(_direct_curve(mech, eps), rel=1e-6)
    assert mech.privacy_curve(mech.epsilon) == 0.0


def test_alpha_two_curve_is_gaussian():
    sas = SaSMechanism(alpha=2.0, scale=0.9, sensitivity=1.3)
    gauss = GaussianMechanism(sigma=math.sqrt(2.0) * 0.9, sensitivity=1.3)
    for eps in [0.0, 0.5, 2.0, 5.0]:
        assert sas.privacy_curve(eps) == pytest.approx(gauss.delta_for_epsilon(eps), rel=1e-9,
                                                       abs=1e-300)


# ----------------------------------------------------------------------------- vector SaS


def test_vector_epsilon_cauchy_is_even_split_and_seed_bound_is_loose():
    mech = SaSMechanism(alpha=1.0, scale=1.0)
    for m in [2, 5, 20]:
        vec = mech.epsilon_vector(m)
        exact = m * 2.0 * math.asinh(1.0 / (2.0 * m))  # g concave: even split
        assert vec.achieved == pytest.approx(exact, rel=1e-9)
        assert exact <= vec.upper_bound <= exact * 1.01
        assert vec.seed_bound > 1.8 * vec.upper_bound  # m eps_1(D) is loose


def test_vector_epsilon_bound_against_brute_force_m2():
    mech = SaSMechanism(alpha=1.0, scale=0.4)
    vec = mech.epsilon_vector(2)

    def total(v):  # -(loss of coordinate 1 + loss of coordinate 2) for shift (d, 1-d)
        d = 1.0 / (1.0 + math.exp(-v[0]))
        l1 = float(SaSMechanism(1.0, 0.4, d).privacy_loss(v[1]))
        l2 = float(SaSMechanism(1.0, 0.4, 1.0 - d).privacy_loss(v[2]))
        return -(l1 + l2)
    best = -min(optimize.minimize(total, x0, method="Nelder-Mead",
                                  options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20000}).fun
                for x0 in ([0.0, 0.5, 0.5], [2.0, 0.8, 0.3], [-1.0, 0.3, 0.8]))
    assert best <= vec.upper_bound + 1e-9
    assert best == pytest.approx(vec.achieved, rel=1e-8)
    assert vec.upper_bound <= best * 1.01
    assert vec.upper_bound < mech.epsilon_vector(2).seed_bound


def test_vector_epsilon_near_gaussian_bound_holds_m2():
    mech = SaSMechanism(alpha=1.95, scale=0.5)
    vec = mech.epsilon_vector(2)

    def split_value(d):
        return ((sas_pure_epsilon(1.95, 0.5, d) if d > 0 else 0.0)
                + (sas_pure_epsilon(1.95, 0.5, 1 - d) if d < 1 else 0.0))
    brute = max(split_value(d) for d in np.linspace(0.0, 1.0, 41))
    # joint maximisation over the outcome pair at the best split found
    loss_half = SaSMechanism(alpha=1.95, scale=0.5, sensitivity=0.5).privacy_loss
    joint = 2 * float(np.max(loss_half(np.linspace(0.25, 30.0, 200_001))))
    assert joint <= brute + 1e-9
    assert brute <= vec.upper_bound + 1e-9
    assert brute == pytest.approx(vec.achieved, rel=1e-9)  # even split is the worst (concave)
    assert vec.upper_bound <= 1.01 * vec.achieved
    assert vec.seed_bound > 1.9 * vec.upper_bound


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs,name", [
    (dict(alpha=0.0, scale=1.0), "alpha"), (dict(alpha=2.5, scale=1.0), "alpha"),
    (dict(alpha=1.5, scale=0.0), "scale"), (dict(alpha=1.5, scale=math.inf), "scale"),
    (dict(alpha=1.5, scale=1.0, sensitivity=-1.0), "sensitivity"),
    (dict(alpha=float("nan"), scale=1.0), "alpha"),
    (dict(alpha=1.5, scale=1.0, dimension=0), "dimension")])
def test_sas_bad_parameters(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        SaSMechanism(**kwargs)


def test_other_bad_parameters():
    with pytest.raises(ParameterError, match="scale"):
        LaplaceMechanism(scale=-1.0)
    with pytest.raises(ParameterError, match="sigma"):
        GaussianMechanism(sigma=float("nan"))
    with pytest.raises(ParameterError, match="delta"):
        GaussianMechanism.from_epsilon_delta(1.0, 1.0)
    with pytest.raises(ParameterError, match="epsilon"):
        GaussianMechanism.from_epsilon_delta(0.0, 1e-5)
    with pytest.raises(ParameterError, match="rng"):
        LaplaceMechanism(scale=1.0).randomize(1.0, rng="seed")
    with pytest.raises(ParameterError, match="value"):
        LaplaceMechanism(scale=1.0).randomize([1.0, math.nan])
    assert isinstance(NeighboringRelation.ADD_OR_REMOVE, NeighboringRelation)


@pytest.mark.statistical
def test_sas_randomize_statistics():
    mech = SaSMechanism(alpha=1.0, scale=2.0)
    x = mech.randomize(np.zeros(200_000), rng=3)
    # median of |Cauchy(2)| is 2
    assert np.median(np.abs(x)) == pytest.approx(2.0, rel=0.02)
    g = SaSMechanism(alpha=2.0, scale=1.5).randomize(np.zeros(200_000), rng=4)
    assert np.std(g) == pytest.approx(math.sqrt(2) * 1.5, rel=0.01)


@pytest.mark.parametrize("alpha", [1.1, 1.5, 1.9, 1.999])
def test_expected_distortion_matches_stable_module(alpha):
    from privacy import stable
    assert SaSMechanism(alpha=alpha, scale=2.0).expected_distortion == pytest.approx(
        float(stable.sas_mean_absolute_deviation(alpha, 2.0)), rel=1e-10)


@pytest.mark.parametrize("alpha", [1.5, 1.9, 1.95, 1.999])
def test_stable_epsilon_against_dense_grid(alpha):
    mech = SaSMechanism(alpha=alpha, scale=0.7)
    x = np.linspace(0.5, 200.0, 400_001)
    grid_max = float(np.max(mech.privacy_loss(x)))
    assert grid_max <= mech.epsilon <= grid_max + 1e-8


def test_sas_epsilon_keeps_growing_at_tiny_scales():
    """The loss peak is ~scale wide near x = D; epsilon grows by (1 + alpha) ln 10 a decade."""
    alpha = 1.95
    values = [SaSMechanism(alpha=alpha, scale=s).epsilon for s in (1e-8, 1e-9, 1e-10)]
    steps = np.diff(values)
    np.testing.assert_allclose(steps, (1 + alpha) * math.log(10), rtol=1e-3)


def test_vector_mechanism_randomize_checks_dimension():
    pair = SaSMechanism(alpha=1.5, scale=1.0, dimension=2)
    assert pair.randomize(np.zeros(2), rng=0).shape == (2,)
    with pytest.raises(ValueError, match="dimension=2"):
        pair.randomize(np.zeros(3), rng=0)
