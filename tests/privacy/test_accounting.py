"""Tests of privacy.accounting, privacy.pld, privacy.composition and privacy.calibration."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy import (
    AccountingError,
    GaussianMechanism,
    LaplaceMechanism,
    NeighboringRelation,
    ParameterError,
    SaSMechanism,
)
from privacy.accounting import delta, epsilon, guarantee, pessimistic_pld
from privacy.calibration import calibrate_gaussian_sigma, calibrate_scale
from privacy.composition import (
    advanced_composition,
    amplified_epsilon,
    gdp_epsilon,
    gdp_mu_gaussian,
    pure_dp_delta,
    pure_dp_epsilon,
    rdp_epsilon_gaussian,
    simple_composition,
)
from privacy.noise import GaussianNoise, LaplaceNoise, SaSNoise
from privacy.pld import _connect_dots


@pytest.mark.parametrize("mech", [GaussianMechanism(sigma=1.0), LaplaceMechanism(scale=2.0)],
                         ids=["gaussian", "laplace"])
@pytest.mark.parametrize("steps,q", [(100, 0.01), (1000, 0.01), (100, 1.0)])
def test_generic_path_matches_native_from_above(mech, steps, q):
    native = epsilon(mech, delta=1e-5, steps=steps, sampling_rate=q)
    generic = epsilon(mech, delta=1e-5, steps=steps, sampling_rate=q, generic=True)
    assert native <= generic <= native * 1.01


@pytest.mark.parametrize("steps,q", [(100, 0.01), (1000, 0.01)])
def test_generic_delta_matches_native_from_above(steps, q):
    mech = GaussianMechanism(sigma=1.0)
    native = delta(mech, epsilon=1.5, steps=steps, sampling_rate=q)
    generic = delta(mech, epsilon=1.5, steps=steps, sampling_rate=q, generic=True)
    assert native <= generic <= native * 1.05


def test_native_matches_dp_accounting_directly():
    pld = pld_lib.from_gaussian_mechanism(1.0, sampling_prob=0.01).self_compose(1000)
    assert epsilon(GaussianMechanism(sigma=1.0), delta=1e-5, steps=1000,
                   sampling_rate=0.01) == pytest.approx(pld.get_epsilon_for_delta(1e-5))


@pytest.mark.parametrize("steps,q", [(1, 1.0), (100, 0.01), (1000, 0.001)])
def test_sas_alpha_two_equals_gaussian(steps, q):
    sas = SaSMechanism(alpha=2.0, scale=1.0)
    gauss = GaussianMechanism(sigma=math.sqrt(2.0))
    reference = epsilon(gauss, delta=1e-5, steps=steps, sampling_rate=q)
    assert epsilon(sas, delta=1e-5, steps=steps, sampling_rate=q) == pytest.approx(reference)
    generic = epsilon(sas, delta=1e-5, steps=steps, sampling_rate=q, generic=True)
    assert reference <= generic <= reference * 1.01


def test_replace_one_generic_matches_native_gaussian():
    mech = GaussianMechanism(sigma=2.0)
    rel = NeighboringRelation.REPLACE_ONE
    native = epsilon(mech, delta=1e-5, steps=50, sampling_rate=0.1, neighboring=rel)
    generic = epsilon(mech, delta=1e-5, steps=50, sampling_rate=0.1, neighboring=rel,
                      generic=True)
    assert native <= generic <= native * 1.01


@pytest.mark.parametrize("scale,eps", [(1.0, 0.1), (1.0, 0.5), (0.3, 2.0), (4.0, 0.05)])
def test_sas_single_release_pld_above_exact_curve(scale, eps):
    mech = SaSMechanism(alpha=1.0, scale=scale)
    exact = mech.privacy_curve(eps)
    bound = delta(mech, epsilon=eps)
    assert exact <= bound <= exact + 1e-3 * max(exact, 1e-3)


def test_sas_single_release_epsilon_below_pure():
    mech = SaSMechanism(alpha=1.0, scale=1.0)
    assert epsilon(mech, delta=0.0) <= mech.epsilon * (1 + 1e-11)
    assert epsilon(mech, delta=1e-5) == pytest.approx(mech.epsilon, rel=2e-3)
    assert delta(mech, epsilon=mech.epsilon) == 0.0


def test_sas_composition_with_subsampling_bounded_by_simple_and_monotone():
    mech = SaSMechanism(alpha=1.0, scale=2.0)
    amplified = math.log1p(0.01 * math.expm1(mech.epsilon))
    e100 = epsilon(mech, delta=1e-5, steps=100, sampling_rate=0.01)
    e1000 = epsilon(mech, delta=1e-5, steps=1000, sampling_rate=0.01)
    assert 0 < e100 < e1000 <= 1000 * amplified
    assert epsilon(mech, delta=1e-5, steps=100, sampling_rate=0.02) > e100


def test_sas_pld_add_and_remove_differ_under_subsampling():
    pld = pessimistic_pld(SaSMechanism(alpha=1.0, scale=1.0), sampling_rate=0.1)
    assert not pld._symmetric  # noqa: SLF001 - checks both adjacency directions are kept
    remove = pld._pmf_remove.get_delta_for_epsilon(0.05)
    add = pld._pmf_add.get_delta_for_epsilon(0.05)
    assert remove != pytest.approx(add, rel=1e-3)



@pytest.mark.parametrize("alpha", [1.0, 1.5,
                                   1.9,
                                   1.999])
def test_sas_subsampled_single_release_above_exact_mixture_curve(alpha):
    # exact delta for the subsampled REMOVE and ADD pairs by direct integration
    import numpy as np
    from scipy import integrate
    mech = SaSMechanism(alpha=alpha, scale=0.5)
    q, eps = 0.2, 0.1

    def p(x):
        return math.exp(float(mech.noise.logpdf(x)))

    def integrand_remove(x):
        return max(0.0, q * p(x + 1.0) + (1 - q) * p(x) - math.exp(eps) * p(x))

    def integrand_add(x):
        return max(0.0, p(x) - math.exp(eps) * (q * p(x - 1.0) + (1 - q) * p(x)))
    exact = max(integrate.quad(f, -np.inf, np.inf, limit=2000, epsabs=1e-13)[0]
                for f in (integrand_remove, integrand_add))
    bound = delta(mech, epsilon=eps, sampling_rate=q)
    assert exact <= bound <= exact * 1.01 + 1e-9


def test_comparison_accountants_order():
    sigma, steps, q = 1.0, 1000, 0.01
    pld_eps = epsilon(GaussianMechanism(sigma=sigma), delta=1e-5, steps=steps, sampling_rate=q)
    rdp_eps = rdp_epsilon_gaussian(sigma, delta=1e-5, steps=steps, sampling_rate=q)
    mu, exact = gdp_mu_gaussian(sigma, steps=steps, sampling_rate=q)
    assert not exact
    assert pld_eps < rdp_eps  # RDP is a looser upper bound
    assert gdp_epsilon(mu, 1e-5) < rdp_eps  # CLT is an approximation, often below the truth
    mu1, exact1 = gdp_mu_gaussian(2.0, steps=10)
    assert exact1
    assert epsilon(GaussianMechanism(sigma=2.0), delta=1e-5, steps=10) == pytest.approx(
        gdp_epsilon(mu1, 1e-5), rel=1e-3)


def test_simple_and_advanced_composition():
    assert simple_composition(0.2, 1e-6, steps=10).epsilon == pytest.approx(2.0)
    assert simple_composition(0.2, 1e-6, steps=10).delta == pytest.approx(1e-5)
    adv = advanced_composition(0.01, steps=10_000, delta_slack=1e-5)
    assert adv.epsilon < simple_composition(0.01, steps=10_000).epsilon
    mech = LaplaceMechanism(scale=100.0)
    assert epsilon(mech, delta=1e-5, steps=10_000) <= adv.epsilon


@pytest.mark.slow
def test_calibration_round_trips():
    gamma = calibrate_scale(1.0, delta=1e-5, steps=100, sampling_rate=0.05, alpha=1.0)
    assert epsilon(SaSMechanism(alpha=1.0, scale=gamma), delta=1e-5, steps=100,
                   sampling_rate=0.05) <= 1.0
    assert epsilon(SaSMechanism(alpha=1.0, scale=gamma / 1.01), delta=1e-5, steps=100,
                   sampling_rate=0.05) > 1.0
    # epsilon 1, not 2: the larger sigma (1.42, not 0.96) makes the subsampled Gaussian's PLD
    # grid several times smaller (the two calibrations 29 s -> 5 s CPU)
    sigma = calibrate_gaussian_sigma(1.0, delta=1e-5, steps=1000, sampling_rate=0.01)
    assert epsilon(GaussianMechanism(sigma=sigma), delta=1e-5, steps=1000,
                   sampling_rate=0.01) <= 1.0
    gamma2 = calibrate_scale(1.0, delta=1e-5, steps=1000, sampling_rate=0.01, alpha=2.0)
    assert math.sqrt(2.0) * gamma2 == pytest.approx(sigma, rel=3e-3)


@pytest.mark.parametrize("kwargs,name", [
    (dict(delta=1.0), "delta"), (dict(delta=-0.1), "delta"),
    (dict(delta=1e-5, steps=0), "steps"), (dict(delta=1e-5, steps=1.5), "steps"),
    (dict(delta=1e-5, sampling_rate=0.0), "sampling_rate"),
    (dict(delta=1e-5, sampling_rate=1.5), "sampling_rate"),
    (dict(delta=1e-5, neighboring="add"), "neighboring")])
def test_epsilon_bad_input(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        epsilon(GaussianMechanism(sigma=1.0), **kwargs)


def test_delta_bad_input_and_unsupported():
    with pytest.raises(ParameterError, match="epsilon"):
        delta(GaussianMechanism(sigma=1.0), epsilon=0.0)
    with pytest.raises(ParameterError, match="mechanism"):
        delta(object(), epsilon=1.0)
    with pytest.raises(AccountingError):
        pessimistic_pld(SaSMechanism(alpha=1.0, scale=1.0, dimension=3))
    with pytest.raises(ParameterError, match="target_epsilon"):
        calibrate_scale(-1.0, delta=1e-5, steps=10)
    with pytest.raises(ParameterError, match="alpha"):
        calibrate_scale(1.0, delta=1e-5, steps=10, alpha=2.1)


def test_results_never_nan_or_negative():
    for mech in [GaussianMechanism(sigma=0.2), SaSMechanism(alpha=1.0, scale=0.05),
                 LaplaceMechanism(scale=0.1)]:
        e = epsilon(mech, delta=1e-8, steps=3)
        assert e >= 0 and not math.isnan(e)
        d = delta(mech, epsilon=0.01, steps=3)
        assert 0.0 <= d <= 1.0


def test_replace_one_is_add_remove_with_double_sensitivity_without_sampling():
    rel = NeighboringRelation.REPLACE_ONE
    sas = SaSMechanism(alpha=1.0, scale=1.5)
    doubled = SaSMechanism(alpha=1.0, scale=1.5, sensitivity=2.0)
    assert delta(sas, epsilon=0.3, steps=5, neighboring=rel) == pytest.approx(
        delta(doubled, epsilon=0.3, steps=5), rel=1e-4)
    lap = LaplaceMechanism(scale=3.0)
    native = epsilon(LaplaceMechanism(scale=3.0, sensitivity=2.0), delta=1e-6, steps=20)
    generic = epsilon(lap, delta=1e-6, steps=20, neighboring=rel)
    assert native <= generic <= native * 1.01


@settings(max_examples=15, deadline=None)
@given(scale=st.floats(0.05, 20.0), ratio=st.floats(0.01, 0.99))
def test_property_pld_delta_never_below_exact_curve(scale, ratio):
    mech = SaSMechanism(alpha=1.0, scale=scale)
    eps = ratio * mech.epsilon
    assert delta(mech, epsilon=eps) >= mech.privacy_curve(eps)


def test_calibration_comparison_rows():
    from simulations.studies.sas_figures import calibration_comparison
    # q = 1: the Gaussian reference is the exact closed form, the Cauchy PLD is small (fast)
    rows = calibration_comparison(epsilons=(2.0,), alphas=(2.0, 1.0), steps=10,
                                  sampling_rate=1.0, rtol=1e-3)
    assert [row["alpha"] for row in rows] == [2.0, 1.0]
    for row in rows:
        assert 1.99 < row["achieved_epsilon"] <= 2.0
    assert rows[0]["scale_ratio_to_gaussian"] == 1.0
    gaussian_sigma = calibrate_gaussian_sigma(2.0, delta=1e-5, steps=10, rtol=1e-3)
    assert math.sqrt(2.0) * rows[0]["scale"] == pytest.approx(gaussian_sigma, rel=2e-3)
    # the Gaussian reference no longer has to come first (it used to give NaN ratios)
    later = calibration_comparison(epsilons=(2.0,), alphas=(1.0,), steps=10,
                                   sampling_rate=1.0, rtol=1e-3)
    assert later[0]["scale_ratio_to_gaussian"] == pytest.approx(
        rows[1]["scale_ratio_to_gaussian"], rel=1e-12)


@pytest.mark.parametrize("alpha", [1.5, 1.9, 1.95, 1.999])
def test_stable_single_release_pld_above_exact_curve(alpha):
    mech = SaSMechanism(alpha=alpha, scale=1.0)
    for frac in (0.2, 0.6, 0.95):
        eps = frac * mech.epsilon
        exact = mech.privacy_curve(eps)
        bound = delta(mech, epsilon=eps)
        assert exact <= bound <= exact * 1.002 + 1e-7
    assert delta(mech, epsilon=mech.epsilon) == 0.0
    assert epsilon(mech, delta=1e-5) <= mech.epsilon


def test_stable_composition_ordering_in_alpha():
    # at equal scale, heavier tails (smaller alpha) give smaller composed epsilon here
    values = [epsilon(SaSMechanism(alpha=a, scale=1.0), delta=1e-5, steps=1000,
                      sampling_rate=1e-3) for a in (1.9, 1.95, 1.999)]
    gauss = epsilon(GaussianMechanism(sigma=math.sqrt(2.0)), delta=1e-5, steps=1000,
                    sampling_rate=1e-3)
    assert values[0] < values[1] < values[2] < gauss * 1.05


# ----------------------------------------------------------------------------- log-space PLD


def test_connect_dots_survives_a_loss_range_beyond_exp_overflow():
    """Losses from -2000 to 2000: the hockey stick is evaluated in log space, no NaN."""
    loss = np.array([-2000.0, -1.0, 0.5, 3.0, 2000.0])
    mass = np.array([0.3, 0.2, 0.2, 0.2, 0.1])
    pmf = _connect_dots(mass, loss, 0.0, 0.5)
    for eps in (0.0, 1.0, 2.9, 100.0, 1999.0):
        with mp.workdps(30):   # delta(eps) = sum_{L > eps} w (1 - e^{eps - L}), exactly
            exact = float(sum(mp.mpf(w) * (1 - mp.e ** (mp.mpf(eps) - mp.mpf(value)))
                              for w, value in zip(mass, loss, strict=True) if value > eps))
        value = pmf.get_delta_for_epsilon(eps)
        assert np.isfinite(value)
        assert exact <= value <= exact + 1e-12   # grid points carry the exact values


@pytest.mark.slow
def test_generic_gaussian_with_an_extreme_loss_range_is_finite_and_tight():
    """sigma = 0.05 (loss range ~2000): used to run 86 s and return NaN."""
    mech = GaussianMechanism(sigma=0.05)
    exact = mech.epsilon_for_delta(1e-5)     # closed form, 284.39...
    generic = epsilon(mech, delta=1e-5, generic=True)
    assert exact <= generic <= exact * (1 + 1e-4)
    assert guarantee(mech, delta=1e-5).method == "gaussian-exact"
    assert epsilon(mech, delta=1e-5) == pytest.approx(exact, rel=1e-12)


# ----------------------------------------------------------------------------- scalable bounds


def _binomial_rr_delta(eps1, steps, eps):
    """delta(eps) of N-fold randomized response by summing the binomial terms (mpmath)."""
    with mp.workdps(40):
        e1, e = mp.mpf(eps1), mp.mpf(eps)
        p = mp.e ** e1 / (1 + mp.e ** e1)
        total = mp.mpf(0)
        for k in range(steps + 1):
            if e1 * (2 * k - steps) > e:
                total += mp.binomial(steps, k) * (p ** k * (1 - p) ** (steps - k)
                                                  - mp.e ** e * (1 - p) ** k * p ** (steps - k))
        return float(total)


@pytest.mark.parametrize("eps1,steps,eps", [(1.0, 1, 0.0), (0.3, 7, 0.5), (0.05, 200, 1.0),
                                            (0.01, 1000, 0.2)])
def test_pure_dp_delta_against_binomial_sum(eps1, steps, eps):
    exact = _binomial_rr_delta(eps1, steps, eps)
    assert exact <= pure_dp_delta(eps1, steps=steps, epsilon=eps) <= exact * (1 + 1e-8) + 1e-300


def test_pure_dp_composition_against_dp_accountings_worst_case_pld():
    """dp_accounting's PLD of the worst (eps, 0)-DP pair, composed, gives the same delta."""
    eps1, steps = 0.1, 300
    pld = pld_lib.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(eps1, 0.0))
    theirs = pld.self_compose(steps).get_delta_for_epsilon(2.0)
    ours = pure_dp_delta(eps1, steps=steps, epsilon=2.0)
    assert ours == pytest.approx(theirs, rel=1e-6)
    assert pure_dp_epsilon(eps1, steps=steps, delta=ours) == pytest.approx(2.0, abs=1e-6)
    assert pure_dp_epsilon(eps1, steps=steps, delta=0.0) == pytest.approx(steps * eps1)


def test_a_billion_steps_is_fast_and_states_its_method():
    """Used to hang or need 10 TiB inside dp_accounting's self-composition."""
    gauss = guarantee(GaussianMechanism(sigma=1.0), delta=1e-5, steps=10 ** 9,
                      sampling_rate=0.01)
    assert gauss.method == "rdp"
    accountant = rdp_privacy_accountant.RdpAccountant()
    accountant.compose(dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(
        0.01, dp_event.GaussianDpEvent(1.0)), 10 ** 9))
    assert gauss.epsilon == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-12)
    sas = SaSMechanism(alpha=1.95, scale=1.0)
    # q = 1e-2: the composed PLD would exceed 2**24 grid points (q = 1e-3 fits: the dense
    # FFT composition then answers 473 in ~7 s of CPU, against 9540 by pure DP)
    bound = guarantee(sas, delta=1e-5, steps=10 ** 9, sampling_rate=1e-2)
    assert bound.method == "pure-dp"
    eps1 = math.log1p(1e-2 * math.expm1(sas.epsilon))
    assert bound.epsilon == pytest.approx(pure_dp_epsilon(eps1, steps=10 ** 9, delta=1e-5),
                                          rel=1e-9)
    # pure-DP composition of N releases grows like sqrt(N) here, far below N eps1
    assert bound.epsilon < 0.2 * 10 ** 9 * eps1
    exact = guarantee(GaussianMechanism(sigma=30.0), delta=1e-5, steps=10 ** 9)
    assert exact.method == "gaussian-exact"
    assert exact.epsilon == pytest.approx(gdp_epsilon(math.sqrt(1e9) / 30.0, 1e-5), rel=1e-12)


def test_replace_one_subsampled_gaussian_beyond_the_pld_is_refused():
    with pytest.raises(AccountingError, match="REPLACE_ONE"):
        epsilon(GaussianMechanism(sigma=1.0), delta=1e-5, steps=10 ** 9, sampling_rate=0.01,
                neighboring=NeighboringRelation.REPLACE_ONE)


def test_exact_gaussian_without_subsampling_matches_the_pld():
    mech = GaussianMechanism(sigma=3.0, sensitivity=1.5)
    exact = guarantee(mech, delta=1e-6, steps=40)
    assert exact.method == "gaussian-exact"
    pld = pld_lib.from_gaussian_mechanism(3.0, sensitivity=1.5).self_compose(40)
    assert exact.epsilon <= pld.get_epsilon_for_delta(1e-6) <= exact.epsilon * 1.001
    assert delta(mech, epsilon=exact.epsilon, steps=40) == pytest.approx(1e-6, rel=1e-9)


def test_amplified_epsilon_formula():
    with mp.workdps(30):
        expected = float(mp.log(1 + mp.mpf("0.01") * (mp.e ** 2 - 1)))
    assert amplified_epsilon(2.0, 0.01) == pytest.approx(expected, rel=1e-14)
    assert amplified_epsilon(2.0, 0.01) >= expected
    assert amplified_epsilon(800.0, 0.5) == pytest.approx(800.0 + math.log(0.5), rel=1e-12)


# ----------------------------------------------------------------------------- vector releases


def test_gaussian_vector_release_has_the_scalar_guarantee():
    scalar = epsilon(GaussianMechanism(sigma=1.0), delta=1e-5, steps=100, sampling_rate=0.01)
    vector = epsilon(GaussianMechanism(sigma=1.0, dimension=50), delta=1e-5, steps=100,
                     sampling_rate=0.01)
    assert vector == scalar


def test_vector_laplace_and_sas_use_pure_dp_composition():
    lap = guarantee(LaplaceMechanism(scale=2.0, dimension=3), delta=0.0, steps=10)
    assert (lap.epsilon, lap.method) == (pytest.approx(5.0), "pure-dp")
    sas = SaSMechanism(alpha=1.0, scale=1.0, dimension=2)
    bound = guarantee(sas, delta=1e-5, steps=100, sampling_rate=0.05)
    assert bound.method == "pure-dp"
    eps1 = amplified_epsilon(sas.epsilon, 0.05)
    assert bound.epsilon == pytest.approx(pure_dp_epsilon(eps1, steps=100, delta=1e-5))
    # the vector release costs more than a scalar one with the same l1-sensitivity
    assert bound.epsilon > epsilon(SaSMechanism(alpha=1.0, scale=1.0), delta=1e-5, steps=100,
                                   sampling_rate=0.05)
    replace = guarantee(sas, delta=0.0, steps=3, neighboring=NeighboringRelation.REPLACE_ONE)
    assert replace.epsilon == pytest.approx(
        3 * SaSMechanism(alpha=1.0, scale=1.0, sensitivity=2.0, dimension=2).epsilon)


def test_batch_of_releases_is_counted_by_the_mechanism():
    mech = SaSMechanism(alpha=1.5, scale=1.0, dimension=2)
    batch = np.zeros((2, 25))
    steps = mech.releases(batch.shape)
    assert steps == 25
    assert epsilon(mech, delta=0.0, steps=steps) == pytest.approx(25 * mech.epsilon)


def test_guarantee_needs_exactly_one_target():
    with pytest.raises(ParameterError, match="exactly one"):
        guarantee(GaussianMechanism(sigma=1.0))
    with pytest.raises(ParameterError, match="exactly one"):
        guarantee(GaussianMechanism(sigma=1.0), delta=1e-5, epsilon=1.0)
    assert epsilon(GaussianMechanism(sigma=1.0), delta=0.0) == math.inf


def test_calibration_refuses_pure_dp_for_gaussian_at_once():
    with pytest.raises(ParameterError, match="pure DP"):
        calibrate_scale(1.0, delta=0.0, steps=10, alpha=2.0)
    with pytest.raises(ParameterError, match="pure DP"):
        calibrate_gaussian_sigma(1.0, delta=0.0, steps=10)


def test_pure_calibration_matches_the_cauchy_closed_form():
    """N pure releases, q = 1: each must be eps/N-DP; Cauchy eps1 = 2 asinh(1/(2 gamma))."""
    gamma = calibrate_scale(1.0, delta=0.0, steps=10, alpha=1.0, rtol=1e-6)
    expected = 1.0 / (2.0 * math.sinh(0.05))
    assert expected <= gamma <= expected * (1 + 2e-6)


@pytest.mark.parametrize("law", [SaSNoise(alpha=1.95, scale=1.0), SaSNoise(alpha=1.2, scale=0.5),
                                 LaplaceNoise(scale=2.0), GaussianNoise(scale=1.5)],
                         ids=["sas-1.95", "sas-1.2", "laplace", "gauss"])
@pytest.mark.parametrize("q", [1e-3, 0.3])
def test_add_partition_is_the_mirror_of_remove(law, q):
    # the 'add' PLD reuses the mirrored 'remove' partition (centred symmetric noise):
    # its losses must be what the add loss gives at those points, and its cells as fine
    from privacy.pld import _loss, _mirrored, _partition

    tolerance = 1e-4
    points, losses = _mirrored(_partition(law, 1.0, "remove", q, tolerance))
    assert np.all(np.diff(points) > 0)
    direct = _loss(law, 1.0, points, "add", q)
    assert np.max(np.abs(losses - direct)) <= 1e-14 * max(1.0, np.max(np.abs(direct)))
    assert np.max(np.abs(np.diff(losses))) <= tolerance


def test_gaussian_calibration_is_remembered_per_question():
    """The same (checked) question is searched once: calibrate_noise for several noise laws
    reuses the Gaussian sigma; a different question is searched again."""
    from privacy import calibration

    # (no subsampling: the search composes an analytic Gaussian, milliseconds instead of the
    # seconds of a subsampled PLD; what is remembered does not depend on it)
    args = dict(delta=1e-5, steps=20, sampling_rate=1.0)
    first = calibration.calibrate_gaussian_sigma(1.5, **args)
    hits = calibration._gaussian_sigma.cache_info().hits
    assert calibration.calibrate_gaussian_sigma(1.5, **args) == first
    assert calibration._gaussian_sigma.cache_info().hits == hits + 1
    assert calibration.calibrate_gaussian_sigma(3.0, **args) < first


def test_sas_calibration_is_remembered_per_question_and_only_for_it():
    """calibrate_scale searches a question once; every argument is part of the question, so a
    call that differs in any one of them is searched afresh and gets what a search without
    memory gives."""
    from privacy import calibration

    # pure DP of Cauchy noise: closed forms, so each search takes milliseconds
    base = dict(target_epsilon=2.0, delta=0.0, steps=10, sampling_rate=1.0, alpha=1.0,
                sensitivity=1.0, neighboring=NeighboringRelation.ADD_OR_REMOVE, rtol=1e-2,
                discretization=None, dimension=1)

    def searched(args: dict) -> float:   # the search itself, without the memory
        return calibration._sas_scale.__wrapped__(
            args["target_epsilon"], args["delta"], args["steps"], args["sampling_rate"],
            args["alpha"], args["sensitivity"], args["neighboring"], args["rtol"],
            args["discretization"], args["dimension"])

    first = calibrate_scale(**base)
    info = calibration._sas_scale.cache_info()
    assert calibrate_scale(**{**base, "steps": np.int64(10), "sensitivity": 1}) == first
    assert calibration._sas_scale.cache_info().hits == info.hits + 1
    changes = dict(target_epsilon=3.0, delta=1e-5, steps=11, sampling_rate=0.5, alpha=1.5,
                   sensitivity=2.0, neighboring=NeighboringRelation.REPLACE_ONE, rtol=5e-3,
                   discretization=1e-3, dimension=3)
    for name, value in changes.items():
        args = {**base, name: value}
        misses = calibration._sas_scale.cache_info().misses
        got = calibrate_scale(**args)
        assert calibration._sas_scale.cache_info().misses == misses + 1, name
        assert got == searched(args), name
    assert calibrate_scale(**{**base, "target_epsilon": 3.0}) < first < calibrate_scale(
        **{**base, "steps": 11})
    with pytest.raises(ParameterError, match="neighboring"):
        calibrate_scale(**{**base, "neighboring": ["add"]})
    with pytest.raises(ParameterError, match="discretization"):
        calibrate_scale(**{**base, "discretization": -1e-3})
