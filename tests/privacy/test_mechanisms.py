"""Tests of privacy.mechanisms (Laplace, Gaussian, SaS)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, optimize, stats

from privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    NeighboringRelation,
    ParameterError,
    SaSMechanism,
)
from privacy.errors import NonFiniteError
from privacy.mechanisms import sas_pure_epsilon
from privacy.pure_epsilon import maximize_loss, sas_epsilon_floor


def _reference_module():
    path = Path(__file__).parent / "data" / "make_stable_reference.py"
    spec = importlib.util.spec_from_file_location("make_stable_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REF = _reference_module()


def cauchy_epsilon(scale, sensitivity=1.0):
    """Seed eq. (3.57), evaluated literally in 50-digit arithmetic."""
    with mp.workdps(50):
        s = mp.sqrt(4 * (mp.mpf(scale) / sensitivity) ** 2 + 1)
        return float(mp.log((s + 1) / (s - 1)))


def cauchy_epsilon_by_maximization(scale):
    """Independent of (3.57): maximize the Cauchy log-density ratio numerically (mpmath)."""
    with mp.workdps(40):
        s2 = mp.mpf(scale) ** 2

        def loss(x):
            return mp.log((s2 + x ** 2) / (s2 + (x - 1) ** 2))

        def slope(x):
            return 2 * x / (s2 + x ** 2) - 2 * (x - 1) / (s2 + (x - 1) ** 2)
        x_star = mp.findroot(slope, (mp.mpf(1), mp.mpf(2) + 2 * mp.mpf(scale)),
                             solver="anderson")
        return float(loss(x_star))


def mean_absolute_deviation_from_characteristic_function(alpha, scale=1.0):
    """E|Y| = (2/pi) int_0^inf (1 - Re phi(t)) / t^2 dt with phi(t) = exp(-|scale t|^alpha)."""
    with mp.workdps(30):
        a = mp.mpf(alpha)

        def f(t):
            return -mp.expm1(-(scale * t) ** a) / t ** 2
        k = 1 / (a - 1)        # t = w^k removes the t^(alpha - 2) singularity at 0
        near = mp.quad(lambda w: f(w ** k) * k * w ** (k - 1), [0, 1])
        return float(2 / mp.pi * (near + mp.quad(f, [1, 10, mp.inf])))



# ----------------------------------------------------------------------------- Laplace / Gaussian


def test_laplace_epsilon_and_randomize():
    mech = LaplaceMechanism(scale=2.0, sensitivity=0.5)
    assert mech.epsilon == pytest.approx(0.25)
    assert LaplaceMechanism(scale=2.0, sensitivity=0.5, dimension=3).epsilon == 0.25
    x = LaplaceMechanism(scale=2.0, dimension=3).randomize(np.zeros((3, 4)), rng=1)
    assert x.shape == (3, 4)
    assert isinstance(mech.randomize(1.0, rng=np.random.default_rng(0)), float)
    np.testing.assert_array_equal(mech.randomize([[1.0, 2.0]], rng=5),
                                  mech.randomize([[1.0, 2.0]], rng=5))
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
    independent = cauchy_epsilon_by_maximization(scale)
    assert cauchy_epsilon(scale) == pytest.approx(independent, rel=1e-13)   # eq. (3.57) holds
    assert SaSMechanism(alpha=1.0, scale=scale).epsilon == pytest.approx(independent, abs=1e-10)
    assert SaSMechanism(alpha=1.0, scale=scale).epsilon >= independent


def test_generic_maximizer_reproduces_cauchy():
    scales = np.array([0.05, 1.0, 20.0])
    mechs = [SaSMechanism(alpha=1.0, scale=s) for s in scales]

    def loss(x):   # one row per scale
        return np.stack([np.asarray(m.privacy_loss(row)) for m, row in zip(mechs, x,
                                                                           strict=True)])
    values, x_star = maximize_loss(loss, np.full(3, 0.5), np.maximum(scales, 1.0))
    for value, x, scale in zip(values, x_star, scales, strict=True):
        assert value == pytest.approx(cauchy_epsilon(scale), abs=1e-10)
        assert value >= cauchy_epsilon(scale)
        assert x == pytest.approx(0.5 * (1 + math.sqrt(1 + 4 * scale ** 2)), rel=1e-6)


@pytest.mark.parametrize("alpha,scale", [(1.5, 0.7), (1.9, 0.4)])
def test_stable_epsilon_against_mpmath_density(alpha, scale):
    """The value at the maximizer, recomputed from the 40-digit Fourier integral (eq. 3.7)."""
    mech = SaSMechanism(alpha=alpha, scale=scale)
    value, x_star = maximize_loss(lambda x: np.asarray(mech.privacy_loss(x)),
                                  np.array([0.5]), np.array([1.0]),
                                  focus=(np.array([1.0]), np.array([scale])))
    x = float(x_star[0])
    exact = float(mp.log(REF.fourier_pdf((x - 1.0) / scale, alpha)
                         / REF.fourier_pdf(x / scale, alpha)))
    assert exact <= mech.epsilon <= exact + 1e-9
    # the maximizer is global: a scipy (levy_stable) scan finds nothing higher
    grid = np.linspace(0.5, 12.0, 120)
    theirs = (stats.levy_stable.logpdf(grid - 1.0, alpha, 0.0, scale=scale)
              - stats.levy_stable.logpdf(grid, alpha, 0.0, scale=scale))
    assert np.max(theirs) <= mech.epsilon + 1e-5


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


@pytest.mark.parametrize("alpha", [0.1, 0.15, 0.5, 1.5])
def test_the_epsilon_floor_bounds_every_scale_and_is_reached(alpha):
    floor = sas_epsilon_floor(alpha)
    at = {s: SaSMechanism(alpha=alpha, scale=s).epsilon for s in (1e3, 1e12, 1e40, 1e200)}
    assert all(value >= floor for value in at.values())
    assert at[1e12] == at[1e40] == at[1e200] == floor < at[1e3]
    # a 5-entry query: five times the scalar floor, reached once every split is at it
    assert SaSMechanism(alpha=alpha, scale=1e15, dimension=5).epsilon == \
        sas_epsilon_floor(alpha, 5) == 5 * floor


def test_a_target_below_the_floor_is_refused_and_one_above_it_reached():
    floor = sas_epsilon_floor(0.1)
    with pytest.raises(ParameterError, match=r"alpha=0\.1.*smallest pure-DP epsilon.*"
                                             r"larger alpha"):
        SaSMechanism.from_epsilon(0.5 * floor, alpha=0.1)
    with pytest.raises(ParameterError, match="20-entry query"):
        SaSMechanism.from_epsilon(15 * floor, alpha=0.1, dimension=20)
    assert SaSMechanism.from_epsilon(1.01 * floor, alpha=0.1).epsilon <= 1.01 * floor
    # the Cauchy closed form is not capped: no floor
    assert sas_epsilon_floor(1.0) == 0.0
    assert SaSMechanism.from_epsilon(1e-14, alpha=1.0).epsilon <= 1e-14


@pytest.mark.parametrize("alpha", [1.1, 1.5, 1.8, 1.95, 1.999, 2.0])
def test_expected_distortion_against_characteristic_function(alpha):
    value = SaSMechanism(alpha=alpha, scale=2.5).expected_distortion
    assert value == pytest.approx(
        mean_absolute_deviation_from_characteristic_function(alpha, 2.5), rel=1e-10)


def test_expected_distortion_table_3_1_and_limits():
    table = {2.0: 1.1284, 1.999: 1.1289, 1.99: 1.1340, 1.95: 1.1576, 1.9: 1.1903, 1.8: 1.2687}
    for alpha, printed in table.items():
        value = SaSMechanism(alpha=alpha, scale=1.0).expected_distortion
        assert round(value, 4) == pytest.approx(printed, abs=1.5e-4), alpha
    assert SaSMechanism(alpha=2.0, scale=1.0).expected_distortion == pytest.approx(
        GaussianMechanism(sigma=math.sqrt(2.0)).expected_distortion)
    assert SaSMechanism(alpha=1.0, scale=1.0).expected_distortion == math.inf
    # Laplace E|Y| = b and Gaussian sqrt(2/pi) sigma, checked by quadrature
    lap = integrate.quad(lambda x: x * stats.laplace.pdf(x, scale=1.7), 0, np.inf)[0] * 2
    assert LaplaceMechanism(scale=1.7).expected_distortion == pytest.approx(lap, rel=1e-9)
    gau = integrate.quad(lambda x: x * stats.norm.pdf(x, scale=0.8), 0, np.inf)[0] * 2
    assert GaussianMechanism(sigma=0.8).expected_distortion == pytest.approx(gau, rel=1e-9)


# ----------------------------------------------------------------------------- SaS privacy curve


def _direct_curve(mech, eps):
    def integrand(x):
        return max(0.0, math.exp(float(mech.noise.logpdf(x - mech.sensitivity)))
                   - math.exp(eps + float(mech.noise.logpdf(x))))
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
    with pytest.raises(NonFiniteError, match="value"):
        LaplaceMechanism(scale=1.0).randomize(math.nan)
    assert isinstance(NeighboringRelation.ADD_OR_REMOVE, NeighboringRelation)


@pytest.mark.statistical
def test_sas_randomize_statistics():
    mech = SaSMechanism(alpha=1.0, scale=2.0)
    x = mech.randomize(np.zeros((1, 200_000)), rng=3)
    # median of |Cauchy(2)| is 2
    assert np.median(np.abs(x)) == pytest.approx(2.0, rel=0.02)
    g = SaSMechanism(alpha=2.0, scale=1.5).randomize(np.zeros((1, 200_000)), rng=4)
    assert np.std(g) == pytest.approx(math.sqrt(2) * 1.5, rel=0.01)


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


@pytest.mark.parametrize("scale", [1e10, 1e15, 1e50, 1e200])
def test_huge_scales_give_a_tiny_bound_not_an_overflow(scale):
    eps = SaSMechanism(alpha=1.5, scale=scale).epsilon
    # epsilon ~ 1.0087 / scale for large scales; below ~1e-11 only the evaluation margin is left
    assert 1.0087 / scale <= eps <= 1.001 * 1.0087 / scale + 5e-12
    assert SaSMechanism(alpha=1.5, scale=1e300, sensitivity=1e-5).epsilon <= 5e-12


def test_epsilon_non_increasing_in_scale_across_magnitudes():
    scales = np.geomspace(1e-200, 1e200, 41)
    values = [SaSMechanism(alpha=1.9, scale=s).epsilon for s in scales]
    assert np.all(np.diff(values) <= 1e-15)


def test_absurdly_small_ratio_is_refused():
    from privacy.errors import AccountingError
    with pytest.raises(AccountingError, match="scale / sensitivity"):
        _ = SaSMechanism(alpha=1.5, scale=1e-300, sensitivity=1e10).epsilon


def test_seed_vector_bound_ratio_for_m2_is_at_most_two():
    """m eps(D) / (certified bound) lies in (1, 2] for m = 2 (the README's measured range)."""
    ratios = []
    for alpha, scale in [(1.999, 0.01), (1.0, 0.05), (1.5, 1.0), (1.95, 100.0)]:
        vec = SaSMechanism(alpha=alpha, scale=scale).epsilon_vector(2)
        assert vec.achieved <= vec.upper_bound <= 1.01 * vec.achieved
        # the bound can never exceed 2: the worst split is at least the concentrated one
        assert vec.upper_bound >= SaSMechanism(alpha=alpha, scale=scale).epsilon
        ratios.append(vec.seed_bound / vec.upper_bound)
    assert 1.0 < min(ratios) < 1.13 and 1.98 < max(ratios) <= 2.0


@pytest.mark.slow
def test_from_epsilon_for_a_vector_query():
    mech = SaSMechanism.from_epsilon(2.0, alpha=1.5, dimension=2)
    assert mech.dimension == 2
    assert mech.epsilon <= 2.0
    assert SaSMechanism(1.5, mech.scale * (1 - 1e-6), dimension=2).epsilon > 2.0


@pytest.mark.parametrize("bad", [-1.0, 0.0, float("nan")])
def test_check_epsilon_reachable_refuses_a_target_that_is_no_epsilon(bad):
    from privacy.pure_epsilon import check_epsilon_reachable

    with pytest.raises(ValueError, match="epsilon must"):
        check_epsilon_reachable(bad, 1.5)
