"""The one accountant: mechanism events, heterogeneous composition, independent cross-checks."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from prv_accountant import PRVAccountant
from prv_accountant.privacy_random_variables import (
    GaussianMechanism as PRVGaussian,
)
from prv_accountant.privacy_random_variables import (
    PoissonSubsampledGaussianMechanism as PRVSubsampledGaussian,
)
from prv_accountant.privacy_random_variables import PureDPMechanism as PRVPure

from privacy import (
    AccountingError,
    DimensionError,
    GaussianMechanism,
    LaplaceMechanism,
    NeighboringRelation,
    ParameterError,
    SaSMechanism,
)
from privacy.accountant import Accountant
from privacy.accounting import epsilon as mechanism_epsilon
from privacy.accounting import guarantee as mechanism_guarantee
from privacy.composition import pure_dp_epsilon, simple_composition
from privacy.events import EpsilonDeltaDpEvent, SaSDpEvent, VectorLaplaceDpEvent

# ----------------------------------------------------------------------------- events


def test_every_mechanism_describes_its_release_as_an_event():
    assert GaussianMechanism(2.0, 0.5, 3).to_dp_event() == dp_event.GaussianDpEvent(4.0)
    assert LaplaceMechanism(2.0, 0.5).to_dp_event() == dp_event.LaplaceDpEvent(4.0)
    assert LaplaceMechanism(2.0, 0.5, 3).to_dp_event() == VectorLaplaceDpEvent(4.0, 3)
    assert SaSMechanism(1.5, 2.0, 0.5, 3).to_dp_event() == SaSDpEvent(1.5, 4.0, 3)


@pytest.mark.parametrize("mech", [GaussianMechanism(1.0, dimension=2),
                                  LaplaceMechanism(1.0, dimension=2),
                                  SaSMechanism(1.5, 1.0, dimension=2)])
def test_a_batch_is_a_self_composition_of_releases(mech):
    one = mech.to_dp_event()
    assert mech.to_dp_event((2,)) == one
    assert mech.to_dp_event((2, 7)) == dp_event.SelfComposedDpEvent(one, 7)
    with pytest.raises(DimensionError, match="dimension 2"):
        mech.to_dp_event((3, 7))


def test_events_round_trip_through_named_tuples():
    for event in (SaSDpEvent(1.5, 2.0, 4), VectorLaplaceDpEvent(1.0, 3),
                  EpsilonDeltaDpEvent(0.5, 1e-6)):
        assert dp_event.DpEvent.from_named_tuple(event.to_named_tuple()) == event


# ----------------------------------------------------------------------------- the views


@pytest.mark.parametrize("mech, kwargs", [
    (GaussianMechanism(1.0), dict(steps=300, sampling_rate=0.01)),
    (LaplaceMechanism(2.0), dict(steps=20)),
    (SaSMechanism(1.5, 2.0, 0.5), dict(steps=5)),
    (SaSMechanism(1.7, 3.0, 1.0, 3), dict(steps=5)),
])
def test_the_mechanism_functions_are_the_accountant(mech, kwargs):
    accountant = Accountant()
    event = mech.to_dp_event()
    if kwargs.get("sampling_rate", 1.0) < 1.0:
        event = dp_event.PoissonSampledDpEvent(kwargs["sampling_rate"], event)
    accountant.compose(event, kwargs["steps"])
    g = mechanism_guarantee(mech, delta=1e-5, **kwargs)
    assert accountant.guarantee(delta=1e-5) == g
    assert g.unit == "record" and accountant.releases == kwargs["steps"] == g.steps


def test_compose_takes_a_mechanism_and_keeps_the_ledger():
    acc = Accountant().compose(GaussianMechanism(2.0), 3).compose(LaplaceMechanism(1.0))
    assert acc.ledger == dp_event.ComposedDpEvent([
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(2.0), 3),
        dp_event.LaplaceDpEvent(1.0)])
    assert acc.releases == 4 and acc.supports(SaSDpEvent(1.5, 1.0))
    assert not acc.supports(dp_event.UnsupportedDpEvent())


# ----------------------------------------------------------------------------- composition


def test_gaussians_without_subsampling_compose_exactly():
    acc = Accountant().compose(GaussianMechanism(2.0), 3).compose(GaussianMechanism(1.0, 0.5))
    mu = math.sqrt(3 / 4 + 1 / 4)          # sqrt(sum (D / sigma)^2)
    g = acc.guarantee(delta=1e-6)
    assert g.method == "gaussian-exact"
    assert g.epsilon == pytest.approx(GaussianMechanism(1.0 / mu).epsilon_for_delta(1e-6),
                                      rel=1e-9)


def test_heterogeneous_pld_matches_dp_accounting_side_by_side():
    """Independent: dp_accounting's own PLDAccountant on the same events (same grid)."""
    events = [(dp_event.GaussianDpEvent(3.0), 20),
              (dp_event.PoissonSampledDpEvent(0.02, dp_event.GaussianDpEvent(1.0)), 500),
              (dp_event.LaplaceDpEvent(8.0), 10)]
    ours, theirs = Accountant(), pld_privacy_accountant.PLDAccountant()
    for event, count in events:
        ours.compose(event, count)
        theirs.compose(event, count)
    for delta in (1e-5, 1e-8):
        g = ours.guarantee(delta=delta)
        reference = theirs.get_epsilon(delta)
        assert g.method == "pld" and g.steps == 530 and g.sampling_rate == 1.0
        # never below; the pessimistic truncation of the dense composition (privacy.dense)
        # puts ~1e-11 at infinite loss, which moves epsilon at delta = 1e-8 by ~4e-5
        assert reference * (1 - 1e-9) <= g.epsilon <= reference * (1 + 1e-4)
    theirs_delta = theirs.get_delta(1.0)
    assert theirs_delta * (1 - 1e-9) <= ours.delta(1.0) <= theirs_delta * (1 + 1e-6) + 1e-10


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # prv_accountant's float128
def test_heterogeneous_composition_brackets_prv_accountant():
    """Independent: Microsoft's PRV accountant (FFT on the privacy random variables) gives a
    lower and an upper bound; ours is an upper bound, so it lies above the lower one, and
    within the PRV error of its upper one."""
    prvs = [PRVGaussian(2.0), PRVSubsampledGaussian(0.01, 1.0), PRVPure(0.05)]
    counts = [10, 1000, 20]
    prv = PRVAccountant(prvs=prvs, max_self_compositions=counts, eps_error=1e-2,
                        delta_error=1e-10)
    low, estimate, high = prv.compute_epsilon(delta=1e-5, num_self_compositions=counts)
    ours = (Accountant()
            .compose(GaussianMechanism(2.0), 10)
            .compose(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 1000)
            .compose(EpsilonDeltaDpEvent(0.05), 20)
            .epsilon(1e-5))
    assert low <= ours <= high
    assert ours == pytest.approx(estimate, abs=1e-2)


def test_pure_dp_releases_of_different_epsilons():
    acc = (Accountant().compose(LaplaceMechanism(2.0, dimension=3), 10)      # 0.5 each
           .compose(SaSDpEvent(1.0, 4.0, dimension=1), 4))                  # Cauchy
    cauchy = SaSMechanism(1.0, 4.0).epsilon
    total = 10 * 0.5 + 4 * cauchy
    assert acc.epsilon(0.0) == pytest.approx(total, rel=1e-12)
    g = acc.guarantee(delta=1e-5)
    # independent: dp_accounting's PLD of the pure-DP pairs (vector Laplace) and of the
    # Cauchy release's dominating pair, composed
    rr = pld_lib.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(0.5))
    reference = rr.self_compose(10).compose(pld_lib.from_privacy_parameters(
        pld_common.DifferentialPrivacyParameters(cauchy)).self_compose(4))
    assert g.epsilon <= reference.get_epsilon_for_delta(1e-5) + 1e-3
    assert g.epsilon < total and g.method in ("pld", "pure-dp")


def test_epsilon_delta_records_compose_optimally():
    """k releases that are only known to be (eps, delta)-DP: the optimal composition
    (Kairouz et al.), cross-checked with dp_accounting's PLD of the same pair."""
    eps1, delta1, k = 0.3, 1e-7, 20
    acc = Accountant().compose(EpsilonDeltaDpEvent(eps1, delta1), k)
    target = 1e-5
    ours = acc.epsilon(target)
    reference = pld_lib.from_privacy_parameters(
        pld_common.DifferentialPrivacyParameters(eps1, delta1)).self_compose(k)
    assert ours <= reference.get_epsilon_for_delta(target) + 1e-3
    assert ours >= reference.get_epsilon_for_delta(target) - 1e-3
    assert ours <= simple_composition(eps1, delta1, steps=k).epsilon
    # below the mass at infinite loss nothing can be claimed
    assert acc.epsilon(1e-7) == math.inf
    assert acc.delta(ours) <= target * (1 + 1e-9)


def test_subsampled_releases_of_every_kind_compose():
    q = 0.05
    acc = Accountant()
    for mech in (GaussianMechanism(1.5), LaplaceMechanism(1.0), SaSMechanism(1.5, 1.0)):
        acc.compose(dp_event.PoissonSampledDpEvent(q, mech.to_dp_event()), 30)
    g = acc.guarantee(delta=1e-5)
    single = [mechanism_epsilon(m, delta=1e-5 / 3, steps=30, sampling_rate=q)
              for m in (GaussianMechanism(1.5), LaplaceMechanism(1.0), SaSMechanism(1.5, 1.0))]
    assert g.method == "pld" and g.sampling_rate == q and g.steps == 90
    assert g.epsilon < sum(single)       # tighter than adding the parts' (eps, delta / 3)


def test_replace_one_doubles_the_shift():
    plain = Accountant().compose(SaSDpEvent(1.5, 1.0, 4)).compose(GaussianMechanism(2.0), 3)
    replace = (Accountant(neighboring=NeighboringRelation.REPLACE_ONE)
               .compose(SaSDpEvent(1.5, 2.0, 4)).compose(GaussianMechanism(4.0), 3))
    for delta in (0.0, 1e-5):
        assert replace.epsilon(delta) == pytest.approx(plain.epsilon(delta), rel=1e-3)


def test_rdp_answers_where_the_pld_cannot():
    acc = (Accountant()
           .compose(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 10 ** 9)
           .compose(GaussianMechanism(50.0), 10 ** 6))
    g = acc.guarantee(delta=1e-5)
    assert g.method == "rdp" and math.isfinite(g.epsilon) and g.steps == 10 ** 9 + 10 ** 6


def test_no_release_and_non_private_releases():
    empty = Accountant(unit="household")
    assert empty.epsilon(1e-5) == 0.0 and empty.delta(1.0) == 0.0
    assert empty.guarantee(delta=0.0).method == "none"
    acc = Accountant().compose(dp_event.NoOpDpEvent()).compose(GaussianMechanism(1.0), 0)
    assert acc.releases == 0 and acc.epsilon(0.0) == 0.0
    acc.compose(dp_event.NonPrivateDpEvent())
    assert acc.epsilon(1e-5) == math.inf and acc.delta(5.0) == 1.0
    assert Accountant().compose(dp_event.GaussianDpEvent(0.0)).epsilon(0.5) == math.inf
    sampled_out = Accountant().compose(
        dp_event.PoissonSampledDpEvent(0.0, dp_event.GaussianDpEvent(1.0)), 5)
    assert sampled_out.epsilon(1e-5) == 0.0


def test_every_answer_is_a_stated_upper_bound():
    acc = Accountant(unit="example").compose(GaussianMechanism(1.0), 4)
    g = acc.guarantee(delta=1e-5)
    assert str(g).startswith(f"({g.epsilon:.4g}, 1e-05)-DP for one example added or removed")
    assert acc.get_epsilon(1e-5) == g.epsilon and acc.get_delta(1.0) == acc.delta(1.0)
    # the exact curve of 4 Gaussian releases lies below the accountant's values
    assert acc.delta(g.epsilon) <= 1e-5 * (1 + 1e-9)


@pytest.mark.parametrize("call, error, pattern", [
    (lambda: Accountant(unit=""), ParameterError, "unit"),
    (lambda: Accountant(unit=" "), ParameterError, "unit"),
    # a guarantee's unit is checked however it is made (the CLI replaced it, unchecked)
    (lambda: dataclasses.replace(Accountant().guarantee(delta=1e-5), unit=""), ParameterError,
     "unit must be a non-empty string"),
    (lambda: Accountant(neighboring="replace"), ParameterError, "neighboring"),
    (lambda: Accountant(discretization=0.0), ParameterError, "discretization"),
    (lambda: Accountant().compose(GaussianMechanism(1.0), -1), ParameterError, "count"),
    (lambda: Accountant().compose(1.0), ParameterError, "DpEvent"),
    (lambda: Accountant().compose(dp_event.UnsupportedDpEvent()), AccountingError,
     "unsupported"),
    (lambda: Accountant().compose(dp_event.GaussianDpEvent(-1.0)), AccountingError,
     "noise_multiplier must lie in"),
    (lambda: Accountant().compose(SaSDpEvent(2.5, 1.0)), AccountingError, "alpha"),
    (lambda: Accountant().compose(EpsilonDeltaDpEvent(1.0, 1.5)), AccountingError, "delta"),
    (lambda: Accountant().compose(dp_event.PoissonSampledDpEvent(
        0.1, dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(1.0), 2))),
     AccountingError, "unsupported"),
    (lambda: Accountant().guarantee(delta=1e-5, epsilon=1.0), ParameterError, "exactly one"),
    (lambda: Accountant().epsilon(1.0), ParameterError, "delta must lie in"),
    (lambda: Accountant().delta(0.0), ParameterError, "epsilon must be > 0"),
])
def test_bad_input_is_refused_by_name(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_answers_are_cached_until_the_next_composition():
    acc = Accountant().compose(LaplaceMechanism(1.0, dimension=2), 3)
    first = acc.guarantee(delta=1e-5)
    assert acc.guarantee(delta=1e-5) is first
    acc.compose(LaplaceMechanism(1.0, dimension=2))
    assert acc.epsilon(0.0) == pytest.approx(4.0) and acc.guarantee(delta=1e-5) != first


def test_pure_bound_of_the_largest_epsilon_bounds_mixed_releases():
    eps = np.array([0.1, 0.2, 0.4])
    acc = Accountant()
    for e in eps:
        acc.compose(EpsilonDeltaDpEvent(float(e)), 50)
    value = acc.epsilon(1e-6)
    assert value <= pure_dp_epsilon(0.4, steps=150, delta=1e-6)
    assert value <= 50 * eps.sum()


@pytest.mark.parametrize("sigma", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("steps", [1, 10, 10**7])
def test_rdp_under_replace_one_bounds_the_exact_gaussian(sigma, steps):
    """Trial: dp_accounting's RDP reads a Gaussian's noise multiplier as the replacement's, the
    package as one record's add/remove (a replacement shifts by twice it): epsilon 8.08 was
    claimed for 17.86 (10 steps, sigma 2), 1.4e6 for 5.0e6 (1e7 steps)."""
    from privacy import composition

    mechanism = GaussianMechanism(sigma=sigma)
    exact = mechanism_guarantee(mechanism, delta=1e-5, steps=steps,
                      neighboring=NeighboringRelation.REPLACE_ONE).epsilon
    rdp = composition.rdp_epsilon_gaussian(sigma, delta=1e-5, steps=steps,
                                          neighboring=NeighboringRelation.REPLACE_ONE)
    assert rdp >= exact * (1 - 1e-9)
    generic = mechanism_guarantee(mechanism, delta=1e-5, steps=steps,
                        neighboring=NeighboringRelation.REPLACE_ONE, generic=True)
    assert generic.epsilon >= exact * (1 - 1e-9), generic.method


# ----------------------------------------------------------------------------- small deltas


def _sas_cdf_fourier(x: float, alpha: float) -> float:
    """Independent SaS(alpha, 1) cdf: 1/2 + (1/pi) int_0^inf sin(t x) / t exp(-t^alpha) dt."""
    from scipy import integrate

    if x == 0.0:
        return 0.5
    s, x = math.copysign(1.0, x), abs(x)
    head, _ = integrate.quad(lambda t: math.sin(t * x) / t * math.exp(-t ** alpha) if t > 0
                             else x, 0.0, 1.0 / x, limit=200, epsabs=1e-15, epsrel=1e-13)
    tail, _ = integrate.quad(lambda t: math.exp(-t ** alpha) / t, 1.0 / x, np.inf,
                             weight="sin", wvar=x, limlst=200)
    return 0.5 + s * (head + tail) / math.pi


def _binned_sas_epsilons(alpha: float, q: float, steps: int, delta: float) -> tuple[float, float]:
    """dp_accounting's optimistic and pessimistic epsilon of the SaS pair binned on a grid.

    The outputs of the noise and of the Poisson-subsampled shifted noise (D = 1, scale 1) are
    coarsened to cells of 0.02 (geometric beyond 30): a post-processing, so the optimistic
    value is below the true epsilon, and the pessimistic one is close above it.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld

    inner = np.round(np.arange(-30.0, 31.0 + 0.01, 0.02), 10)
    outer = np.geomspace(31.0, 1e5, 200)
    edges = np.unique(np.concatenate([-outer[::-1], inner, outer]))
    cdf = {float(x): _sas_cdf_fourier(float(x), alpha)
           for x in np.unique(np.concatenate([edges, edges - 1.0]))}

    def masses(shift: float) -> np.ndarray:
        f = np.array([cdf[float(x)] for x in edges - shift])
        return np.maximum(np.concatenate([[f[0]], np.diff(f), [1.0 - f[-1]]]), 1e-300)
    base = masses(0.0)
    mixture = (1.0 - q) * base + q * masses(1.0)
    answers = []
    for pessimistic in (False, True):
        sides = []
        for upper, lower in ((mixture, base), (base, mixture)):
            composed = pld.from_two_probability_mass_functions(
                dict(enumerate(np.log(lower))), dict(enumerate(np.log(upper))),
                pessimistic_estimate=pessimistic,
                value_discretization_interval=1e-5).self_compose(steps)
            sides.append(composed.get_epsilon_for_delta(delta))
        answers.append(max(sides))
    return answers[0], answers[1]


def test_a_small_delta_is_not_lost_to_the_truncations_sas():
    """A thousand releases cut ~2.5e-11 of tail mass to infinite loss, more than delta =
    1e-12: the PLD read inf and the answer fell to the pure-DP bound, 7.38 for SaS
    (alpha 1.9, q = 0.01) where an independent binned PLD gives 1.67."""
    low, high = _binned_sas_epsilons(1.9, 0.01, 1000, 1e-12)
    g = mechanism_guarantee(SaSMechanism(alpha=1.9, scale=1.0), delta=1e-12, steps=1000,
                            sampling_rate=0.01)
    assert g.method == "pld"
    assert low <= g.epsilon <= 1.02 * high


def test_a_small_delta_is_not_lost_to_the_truncations_laplace():
    """Laplace (b = 1, q = 0.01, 1000 releases) at delta = 1e-12: 3.72 (pure DP) for
    dp_accounting's own pessimistic PLD composition's 2.03."""
    pmf = pld_lib.from_laplace_mechanism(1.0, sampling_prob=0.01,
                                         value_discretization_interval=1e-4)
    reference = pmf.self_compose(1000).get_epsilon_for_delta(1e-12)
    ours = mechanism_epsilon(LaplaceMechanism(1.0), delta=1e-12, steps=1000, sampling_rate=0.01)
    assert reference * (1 - 1e-9) <= ours <= 1.01 * reference


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # prv_accountant's float128
def test_a_small_delta_gets_the_rdp_bound_when_the_pld_cannot_answer():
    """A subsampled Gaussian (sigma 1, q = 0.01, 1000 releases) at delta = 1e-12 read
    epsilon = inf (the truncated mass above delta) although Renyi DP bounds it: now the
    smaller of the two, above the PRV accountant's lower bound (3.90)."""
    from dp_accounting import rdp

    event = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
    prv = PRVAccountant(prvs=PRVSubsampledGaussian(0.01, 1.0), max_self_compositions=1000,
                        eps_error=1e-2, delta_error=1e-15)
    low, _, _ = prv.compute_epsilon(delta=1e-12, num_self_compositions=[1000])
    renyi = rdp.RdpAccountant().compose(event, 1000).get_epsilon(1e-12)
    ours = Accountant().compose(event, 1000).epsilon(1e-12)
    assert low <= ours <= renyi * (1 + 1e-9)


# ----------------------------------------------------------------------------- tiny rates


def _sum_statistic_epsilon(mu: float, delta: float) -> float:
    """Epsilon of the Gaussian pair with mean shift ``mu`` (scipy, Balle and Wang's formula)."""
    from scipy import optimize, stats

    def excess(eps: float) -> float:
        return (stats.norm.cdf(mu / 2 - eps / mu)
                - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu) - delta)
    return optimize.brentq(excess, 0.0, 100.0, xtol=1e-12)


@pytest.mark.parametrize(("mechanism", "noise_sd"), [(GaussianMechanism(1.0), 1.0),
                                                     (LaplaceMechanism(1.0), math.sqrt(2.0))])
def test_tiny_sampling_rates_are_not_lost_to_rounding(mechanism, noise_sd):
    """Rate 1e-20, 1e40 releases: dp_accounting's pmf of one release is all at loss 0 and its
    RDP negative (clamped to 0), so both read epsilon 0.  An adversary who adds up the 1e40
    outputs sees a shift of N q = 1e20 on noise of sd sqrt(N) * sd(noise) (Gaussian to any
    precision at this N, the participations' spread 1e10 is 1e-10 of it): a test at least as
    good as that Gaussian pair, whose epsilon lower-bounds the truth (4.38 and 2.94)."""
    import warnings

    q, steps, delta = 1e-20, 10 ** 40, 1e-5
    lower = _sum_statistic_epsilon(q * math.sqrt(steps) / noise_sd, delta)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = mechanism_guarantee(mechanism, delta=delta, steps=steps, sampling_rate=q)
    assert 0.9 * lower <= g.epsilon < math.inf, (g.epsilon, g.method, lower)


def test_extreme_noise_multipliers_get_bounds_not_arithmetic_errors():
    """sigma = 1e300 D overflowed in dp_accounting's PLD (OverflowError) and sigma = 1e-300 D
    divided by zero in its RDP, both under Poisson subsampling."""
    quiet = mechanism_guarantee(GaussianMechanism(1e300), delta=1e-5, steps=10,
                                sampling_rate=0.01)
    assert 0.0 <= quiet.epsilon < 0.1
    # one participation (probability ~0.1) tells everything: no finite epsilon at 1e-5
    loud = mechanism_guarantee(GaussianMechanism(1.0, sensitivity=1e300), delta=1e-5, steps=10,
                               sampling_rate=0.01)
    assert loud.epsilon == math.inf


@pytest.mark.parametrize(("sigma", "q"), [(1.0, 0.01), (0.7, 0.1), (3.0, 1e-4), (1.0, 0.5)])
def test_stable_integer_order_rdp_is_dp_accountings_where_that_is_accurate(sigma, q):
    """Where dp_accounting's integer-order RDP is accurate (rates >= 1e-4) the stable sum
    (used below a total variation of 1e-12) gives its log A_a at every order, and an epsilon
    (plain conversion) above dp_accounting's own and within 1.5 times it (plus 0.045)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    from privacy.composition import _ORDERS, _log_a, stable_rdp_gaussians

    ours = _log_a(q, 1.0 / sigma ** 2)[:60]
    theirs = [rdp_lib._compute_log_a_int(q, sigma, int(a)) for a in _ORDERS[:60]]
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-15)
    event = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma))
    mine = stable_rdp_gaussians([(sigma, q, 1000)], 1e-5, None)
    native = rdp_lib.RdpAccountant().compose(event, 1000).get_epsilon(1e-5)
    # the plain conversion at the largest order (256) cannot go below log(1 / delta) / 255
    assert native * (1 - 1e-9) <= mine <= 1.5 * native + math.log(1e5) / 255


def test_the_public_rdp_functions_keep_a_tiny_rate():
    """privacy.composition's RDP comparison functions read dp_accounting's 0 at rate 1e-20
    (1e40 releases; the sum of the outputs alone gives an adversary 4.38)."""
    from privacy.composition import rdp_delta_gaussian, rdp_epsilon_gaussian

    lower = _sum_statistic_epsilon(1.0, 1e-5)
    assert rdp_epsilon_gaussian(1.0, delta=1e-5, steps=10 ** 40, sampling_rate=1e-20) >= lower
    assert rdp_delta_gaussian(1.0, epsilon=0.5 * lower, steps=10 ** 40,
                              sampling_rate=1e-20) > 1e-5


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # prv_accountant's float128
def test_calibration_at_a_small_delta_does_not_drown_the_signal():
    """Every PLD answer near the optimum read inf at delta = 1e-12 (1e3 releases, q = 0.01),
    so the search settled on sigma = 1086 (epsilon 0.0056 for a target of 2).  Now the RDP
    bound answers: the sigma meets the target by the PRV accountant's estimate too."""
    from privacy.calibration import calibrate_gaussian_sigma

    sigma = calibrate_gaussian_sigma(2.0, delta=1e-12, steps=1000, sampling_rate=0.01)
    prv = PRVAccountant(prvs=PRVSubsampledGaussian(0.01, sigma), max_self_compositions=1000,
                        eps_error=1e-2, delta_error=1e-15)
    low, estimate, _ = prv.compute_epsilon(delta=1e-12, num_self_compositions=[1000])
    assert estimate <= 2.0 and sigma < 1.6, (sigma, low, estimate)


def _mixed_accountant() -> Accountant:
    sas = SaSMechanism(alpha=1.95, scale=1.0, sensitivity=1.0)
    acc = Accountant(unit="example")
    acc.compose(dp_event.PoissonSampledDpEvent(1e-3, sas.to_dp_event()), 10_000)
    return acc.compose(GaussianMechanism(sigma=20.0), 10)


def test_mixed_releases_at_a_tiny_delta_add_each_kinds_bound():
    """SaS (1e4 subsampled) and Gaussian releases at delta = 1e-12 read epsilon = inf: their
    joint PLD's round-off, moved to infinite loss, exceeds the delta, and neither pure DP nor
    RDP bounds the mix.  Now each kind's own bound at half the delta, added (basic
    composition): finite, at least the Gaussian releases' own exact epsilon, and the same
    numbers as the two kinds' accountants."""
    g = _mixed_accountant().guarantee(delta=1e-12)
    assert math.isfinite(g.epsilon) and g.method.startswith("split: ")
    sas = Accountant(unit="example").compose(dp_event.PoissonSampledDpEvent(
        1e-3, SaSMechanism(alpha=1.95, scale=1.0, sensitivity=1.0).to_dp_event()), 10_000)
    gaussian = Accountant(unit="example").compose(GaussianMechanism(sigma=20.0), 10)
    parts = [sas.guarantee(delta=5e-13), gaussian.guarantee(delta=5e-13)]
    assert g.epsilon == pytest.approx(sum(p.epsilon for p in parts), rel=1e-12)
    assert g.method == "split: " + " + ".join(p.method for p in parts)
    assert g.epsilon >= gaussian.epsilon(1e-12)      # a subset of the releases: a lower bound


def test_the_split_bound_is_only_the_last_resort():
    """Where the joint PLD resolves the delta it answers, and the split bound is looser."""
    from privacy.accountant import _split_bound

    acc = _mixed_accountant()
    g = acc.guarantee(delta=1e-6)
    assert g.method == "pld"
    split, _ = _split_bound(acc._groups, acc.neighboring, None, False, 1e-6)
    assert split > g.epsilon
