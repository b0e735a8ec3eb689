"""Private federated identification of the fleet: statistics, guarantee, enforcement, fleet fit."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

from privacy import GaussianMechanism, LaplaceMechanism, accounting
from privacy.errors import ParameterError
from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
from simulations.smartgrid.private_identification import (
    BudgetExceededError,
    SharingBounds,
    aggregate_statistics,
    daily_household_statistics,
    fleet_clipping,
    fleet_clipping_message,
    household_statistics,
    identify_fleet,
    privatize_household,
    run_guarantee,
    trajectories_reached,
)

T = 300.0
# the module's fleet statistics are privatized by many tests on purpose
pytestmark = pytest.mark.filterwarnings("ignore::dmdidc.RepeatedReleaseWarning")


@pytest.fixture(scope="module")
def record():
    fleet = draw_households(8, rng=0)
    return simulate_fleet(fleet, load_profiles("extract"), start_day=330, days=21,
                          excitation=0.5, excitation_signal="binary", rng=1)


@pytest.fixture(scope="module")
def stats(record):
    return [household_statistics(record, i, max_delay=3) for i in range(8)]


def test_daily_statistics_add_up_to_the_households(record, stats):
    daily = daily_household_statistics(record, 2, max_delay=3)
    assert len(daily) == record.days
    np.testing.assert_allclose(sum(daily[1:], daily[0]).to_vector(), stats[2].to_vector(),
                               rtol=1e-12)
    np.testing.assert_allclose(aggregate_statistics(stats).to_vector(),
                               np.sum([s.to_vector() for s in stats], axis=0), rtol=1e-12)


def test_plain_fleet_fit_recovers_the_mean_delay(record, stats):
    fit = identify_fleet(aggregate_statistics(stats), dt_s=T, max_delay=3)
    true = np.mean([h.plant.delay[0] for h in record.households])
    assert fit.usable and fit.note == ""
    assert abs(fit.delay_s - true) < 0.05 * T
    assert fit.delay_ci_s[0] < fit.delay_s < fit.delay_ci_s[1]


def test_privacy_costs_interval_width(stats):
    plain = identify_fleet(aggregate_statistics(stats), dt_s=T, max_delay=3)
    private = [privatize_household(s, mechanism="gaussian", epsilon=30.0, rng=i)[0]
               for i, s in enumerate(stats)]
    noisy = identify_fleet(aggregate_statistics(private), dt_s=T, max_delay=3)
    width = np.diff(noisy.delay_ci_s)[0]
    assert width > 2.0 * np.diff(plain.delay_ci_s)[0]


def test_a_fit_that_finds_no_input_effect_is_reported_as_failed(stats):
    # eps = 0.01 buries the heat pump's effect: no block passes the test, and the fit must not
    # read as "delay 0" (B = 0) but as a failure that names the cause
    private = [privatize_household(s, mechanism="gaussian", epsilon=0.01, rng=i)[0]
               for i, s in enumerate(stats)]
    fit = identify_fleet(aggregate_statistics(private), dt_s=T, max_delay=3)
    assert math.isnan(fit.delay_s) and not fit.usable
    assert fit.note.startswith("failed: the heat pump's channel shows no significant effect")


@pytest.mark.parametrize("unit, window", [("sample", None), ("window", 12),
                                          ("trajectory", None)])
def test_gaussian_guarantee_is_the_accountants_and_meets_the_budget(stats, unit, window):
    private, g = privatize_household(stats[0], mechanism="gaussian", epsilon=1.0, delta=1e-5,
                                     unit=unit, window=window, rng=0)
    k = trajectories_reached(unit, window, stats[0])
    assert g.trajectories == k == {"sample": 1, "window": 2, "trajectory": 21}[unit]
    # independent: the accountant on a Gaussian with k times the single-trajectory sensitivity
    sigma = g.to_dict()["noise_scale"]
    sens = stats[0].sensitivity("trajectory" if unit == "trajectory" else unit,
                                window=window).l2
    mech = GaussianMechanism(sigma=sigma, sensitivity=k * sens)
    eps = accounting.epsilon(mech, delta=1e-5)
    assert eps == pytest.approx(g.epsilon, rel=1e-9)
    assert 0.98 <= g.epsilon <= 1.0 + 1e-9
    assert not np.allclose(private.to_vector(), stats[0].to_vector())


def test_a_runs_releases_of_one_household_compose(stats):
    _, g = privatize_household(stats[0], mechanism="gaussian", epsilon=1.0, delta=1e-5, rng=0)
    # independent: four Gaussian releases of sigma are one release of sigma / 2
    alone = GaussianMechanism(sigma=g.to_dict()["noise_scale"] / 2.0,
                              sensitivity=stats[0].sensitivity("sample").l2)
    total = run_guarantee([g] * 4, delta=1e-5)
    assert total.epsilon == pytest.approx(accounting.epsilon(alone, delta=1e-5), rel=1e-3)
    assert total.unit == "sample" and total.delta == 1e-5
    _, laplace = privatize_household(stats[0], mechanism="laplace", epsilon=0.5, delta=0.0,
                                     rng=0)
    assert run_guarantee([laplace] * 3, delta=0.0).epsilon == pytest.approx(1.5, rel=1e-9)
    assert run_guarantee([g, laplace], delta=1e-5).epsilon > g.epsilon
    _, window = privatize_household(stats[0], mechanism="laplace", epsilon=1.0, delta=0.0,
                                    unit="window", window=12, rng=0)
    with pytest.raises(ParameterError, match="one unit"):
        run_guarantee([g, window], delta=1e-5)


def test_laplace_window_under_daily_sharing_composes(stats):
    _, g = privatize_household(stats[0], mechanism="laplace", epsilon=1.0, delta=0.0,
                               unit="window", window=12, releases=2, rng=0)
    scale = g.to_dict()["noise_scale"]
    sens = stats[0].sensitivity("window", window=12).l1
    mech = LaplaceMechanism(scale=scale, sensitivity=g.trajectories * sens)
    assert accounting.epsilon(mech, delta=0.0, steps=2) == pytest.approx(g.epsilon)
    assert g.epsilon <= 1.0 + 1e-9 and g.releases == 2


def test_budget_is_enforced(stats):
    with pytest.raises(BudgetExceededError, match="beyond its budget"):
        privatize_household(stats[0], mechanism="gaussian", epsilon=1.0,
                            budget=(0.5, 1e-5), rng=0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(mechanism="uniform", epsilon=1.0), "mechanism"),
    (dict(mechanism="gaussian", epsilon=-1.0), "epsilon"),
    (dict(mechanism="gaussian", epsilon=1.0, delta=0.0), "delta"),
    (dict(mechanism="gaussian", epsilon=1.0, window=5), "window"),
    (dict(mechanism="gaussian", epsilon=1.0, unit="day"), "unit"),
    (dict(mechanism="gaussian", epsilon=1.0, alpha=1.5), "alpha=1.5 with mechanism='gaussian'"),
    (dict(mechanism="laplace", epsilon=1.0, alpha=1.9, unit="window", window=12, releases=2),
     "alpha applies to mechanism='sas' only"),
    (dict(mechanism="sas", epsilon=1.0, alpha=2.0), "alpha"),
])
def test_bad_arguments_are_refused(stats, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        privatize_household(stats[0], **kwargs)


def test_aggregate_and_household_refusals(record):
    with pytest.raises(ParameterError, match="at least one"):
        aggregate_statistics([])
    with pytest.raises(ParameterError, match="household must be < 8"):
        household_statistics(record, 8, max_delay=3)


def test_sas_guarantee_without_delta_is_pure_and_within_budget(stats):
    _, g = privatize_household(stats[0], mechanism="sas", epsilon=2.0, delta=0.0, alpha=1.5,
                               rng=0)
    assert g.delta == 0.0 and g.method == "pure-dp" and g.epsilon <= 2.0
    assert math.isfinite(g.to_dict()["noise_scale"])


@pytest.mark.parametrize("unit, window, releases", [("sample", None, 1), ("window", 12, 2)])
def test_sas_with_delta_is_the_accountants_gdp_guarantee_within_budget(stats, unit, window,
                                                                       releases):
    from privacy.vector_sas import sas_gaussian_equivalent_sigma

    private, g = privatize_household(stats[0], mechanism="sas", epsilon=1.0, delta=1e-5,
                                     alpha=1.9, unit=unit, window=window, releases=releases,
                                     rng=0)
    # independent: the accountant on the certified Gaussian equivalent, k times the l2
    # sensitivity of one trajectory, composed over the releases a unit reaches
    sens = stats[0].sensitivity(unit, window=window).l2
    sigma = sas_gaussian_equivalent_sigma(1.9, g.to_dict()["noise_scale"])
    mech = GaussianMechanism(sigma=sigma, sensitivity=g.trajectories * sens)
    assert accounting.epsilon(mech, delta=1e-5, steps=releases) == pytest.approx(g.epsilon)
    assert g.delta == 1e-5 and 0.98 <= g.epsilon <= 1.0 + 1e-9
    assert g.method.startswith("vector-SaS GDP bound") and g.to_dict()["norm"] == "l2"
    # far less noise than the pure-DP calibration of the same household
    _, pure = privatize_household(stats[0], mechanism="sas", epsilon=1.0, delta=0.0,
                                  alpha=1.9, unit=unit, window=window, releases=releases,
                                  rng=0)
    assert g.to_dict()["noise_scale"] < 0.5 * pure.to_dict()["noise_scale"]
    assert type(private.privacy.mechanism).__name__ == "SaSMechanism"


def test_sas_with_delta_budget_is_enforced(stats):
    with pytest.raises(BudgetExceededError, match="beyond its budget"):
        privatize_household(stats[0], mechanism="sas", epsilon=1.0, delta=1e-5, alpha=1.9,
                            budget=(0.5, 1e-5), rng=0)
    with pytest.raises(BudgetExceededError, match="beyond its budget"):
        privatize_household(stats[0], mechanism="sas", epsilon=1.0, delta=1e-5, alpha=1.9,
                            budget=(1.0, 1e-6), rng=0)


def _household_epsilon(mech, trajectories, releases, delta):
    """The accountant's household guarantee, written out independently of the module."""
    import dataclasses

    from privacy import NeighboringRelation
    from privacy.accountant import Accountant
    event = dataclasses.replace(mech, sensitivity=mech.sensitivity * trajectories / 2.0)
    return Accountant(neighboring=NeighboringRelation.REPLACE_ONE).compose(
        event.to_dp_event(), releases).guarantee(delta=delta).epsilon


def _sas_household(scale, alpha, l1, trajectories, releases, delta, gdp):
    """The household epsilon of SaS noise of ``scale`` on a one-entry release, through the GDP
    certificate (the Gaussian equivalent) or the pure-DP bound."""
    from privacy import SaSMechanism
    from privacy.vector_sas import sas_gaussian_equivalent_sigma

    mech = GaussianMechanism(sas_gaussian_equivalent_sigma(alpha, scale), sensitivity=l1) \
        if gdp else SaSMechanism(alpha=alpha, scale=scale, sensitivity=l1, dimension=1)
    return _household_epsilon(mech, trajectories, releases, delta)


@pytest.mark.parametrize("seed", range(6))
def test_sas_calibration_is_the_least_noise_either_certificate_allows(seed):
    # random composed SaS releases, with and without delta (seed 3: alpha < 1 with delta > 0,
    # pure SaS too); one entry keeps the certified bound cheap (the window-12-2 cases above
    # run the same search on the 152-entry release)
    from types import SimpleNamespace

    from simulations.smartgrid.private_identification import _sas_calibration

    rng = np.random.default_rng(seed)
    alpha = float(rng.uniform(0.6, 1.9)) if seed != 3 else 0.8
    delta = 1e-5 if seed % 2 else 0.0
    epsilon = float(np.exp(rng.uniform(np.log(0.2), np.log(5.0))))
    l1 = float(np.exp(rng.uniform(0.0, np.log(1e3))))
    trajectories, releases = [(2, 1), (1, 2), (2, 2), (3, 1)][seed % 4]
    cal = _sas_calibration(1, SimpleNamespace(l1=l1, l2=l1), epsilon, delta, "window", alpha,
                           trajectories, releases)
    gdp = cal.accounted is not cal.mechanism
    assert not gdp or (delta and 1.0 <= alpha < 2.0)                # GDP only where it applies
    scale = cal.mechanism.scale
    # never over-claims: the household guarantee at the released scale meets the budget
    assert _sas_household(scale, alpha, l1, trajectories, releases, delta, gdp) <= epsilon
    # nor over-noises: 2 % less noise meets it under neither certificate that applies
    for family in ({False, True} if bool(delta) and 1.0 <= alpha < 2.0 else {False}):
        assert _sas_household(0.98 * scale, alpha, l1, trajectories, releases, delta,
                              family) > epsilon


@pytest.mark.parametrize("mechanism, delta, alpha", [
    ("gaussian", 1e-5, None), ("laplace", 0.0, None), ("sas", 1e-5, 1.9), ("sas", 0.0, 1.5)])
def test_a_composed_release_draws_the_calibrated_noise_within_budget(stats, mechanism, delta,
                                                                     alpha):
    # a window across midnight under daily sharing: 2 trajectories, 2 releases
    from simulations.smartgrid.private_identification import _release_calibration

    options = dict(mechanism=mechanism, epsilon=1.0, delta=delta, unit="window", window=12,
                   alpha=alpha)
    cal = _release_calibration(stats[1], mechanism, 1.0, delta, "window", 12, alpha, 2, 2)
    private, g = privatize_household(stats[1], releases=2, rng=3, **options)
    released = private.privacy
    name = "sigma" if mechanism == "gaussian" else "scale"
    assert getattr(released.mechanism, name) == pytest.approx(getattr(cal.mechanism, name),
                                                              rel=1e-12)
    # the release's epsilon is the accountant's for what it accounts, the household's within
    # budget (and not far below: no needless noise)
    assert released.epsilon == pytest.approx(
        accounting.epsilon(released.accounted_mechanism, delta=released.delta), rel=1e-9)
    assert 0.95 <= g.epsilon <= 1.0 + 1e-9 and g.trajectories == 2 and g.releases == 2


def test_sas_without_alpha_is_refused_naming_alpha(stats):
    # (a window reaching two days under daily sharing takes the scale search)
    for delta in (0.0, 1e-5):
        with pytest.raises(ParameterError, match="alpha"):
            privatize_household(stats[0], mechanism="sas", epsilon=1.0, delta=delta,
                                unit="window", window=12, releases=2, rng=0)


@pytest.mark.parametrize("mechanism, extra", [
    ("gaussian", {}), pytest.param("laplace", {}, marks=pytest.mark.slow),
    pytest.param("sas", {"alpha": 1.9}, marks=pytest.mark.slow)])
def test_a_release_lands_at_or_below_its_budget_never_above(stats, mechanism, extra):
    """Trial 13: at epsilon 1e-3 the guarantee read 1.00000000000001e-3, accepted through a
    relative tolerance.  Now the calibration takes a margin and the comparison is exact."""
    from dmdidc.private.release import calibrate_release

    for epsilon in (1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 0.5, 30.0):
        _, g = privatize_household(stats[0], mechanism=mechanism, epsilon=float(epsilon),
                                   rng=0, **extra)
        assert 0.0 < g.epsilon <= epsilon
        # the library's calibration alike, sensitivities of several scales
        for l1, l2 in ((1.0, 1.0), (508.0, 43.0)):
            cal = calibrate_release(mechanism, float(epsilon), delta=1e-5,
                                    alpha=extra.get("alpha"), l1=l1, l2=l2, dimension=152)
            assert cal.epsilon <= epsilon
    # composed releases (a window reaching 2 releases, the trajectory unit) as well
    for kwargs in (dict(unit="window", window=12, releases=2), dict(unit="trajectory")):
        _, g = privatize_household(stats[0], mechanism=mechanism, epsilon=1e-3, rng=0,
                                   **kwargs, **extra)
        assert g.epsilon <= 1e-3


def test_a_budget_refusal_prints_numbers_that_differ(stats):
    """Trial 13: '(1e-08, 1e-05)-DP ... beyond its budget (1e-08, 1e-05)'."""
    _, g = privatize_household(stats[0], mechanism="gaussian", epsilon=1e-8, rng=0)
    with pytest.raises(BudgetExceededError) as refused:
        privatize_household(stats[0], mechanism="gaussian", epsilon=1e-8, rng=0,
                            budget=(g.epsilon * (1 - 1e-9), 1e-5))
    given, budget = re.search(r"household \(([^,]+), .* budget \(([^,]+),",
                              str(refused.value)).groups()
    assert float(given) > float(budget) and given != budget


def test_a_huge_release_then_another_is_composed_or_refused_clearly(record):
    """Trial 13: a release at epsilon 1e8, then another of the same statistics, raised
    OverflowError (exp of the first release's epsilon in the repeated-release composition)."""
    from privacy.errors import AccountingError

    for mechanism, extra in (("laplace", {}), ("gaussian", {}), ("sas", {"alpha": 1.9})):
        fresh = household_statistics(record, 1, max_delay=3)
        first = privatize_household(fresh, mechanism=mechanism, epsilon=1e8, rng=0, **extra)[1]
        assert first.epsilon <= 1e8
        try:
            second = privatize_household(fresh, mechanism=mechanism, epsilon=1.0, rng=1,
                                         **extra)[1]
        except AccountingError as exc:
            assert "beyond epsilon 700" in str(exc) and "smaller epsilon" in str(exc)
        else:
            assert second.epsilon <= 1.0


@pytest.mark.parametrize("statistics", ["household_statistics", "daily_household_statistics"])
def test_a_delay_bound_of_a_day_or_more_is_refused(statistics):
    """Each day is one trajectory: max_delay=2000 on a day's few hundred samples returned
    statistics of no sample without a word (a trial); now refused, naming the day's length."""
    import simulations.smartgrid.private_identification as module

    record = simulate_fleet(draw_households(1, rng=0), load_profiles("extract"), start_day=10,
                            days=2, excitation=0.5, rng=0)
    with pytest.raises(ParameterError, match=r"max_delay=2000 .* day of \d+ samples"):
        getattr(module, statistics)(record, 0, max_delay=2000)
    assert getattr(module, statistics)(record, 0, max_delay=3) is not None


@pytest.mark.parametrize("state_bounds", [(0.3, 4.0), (2.0, 0.6), (0.3, 0.6)])
def test_a_fleet_says_its_clipping_once_with_each_households_verdict(record, state_bounds):
    """The fleet's loops say the clipping once (how many households fail their own check
    'clipping', which channels, the largest share) and silence each release's repeat."""
    from dmdidc.inference.clipping import clipping_check

    tight = SharingBounds(state_bounds_K=state_bounds)
    stats = [household_statistics(record, i, max_delay=3, bounds=tight) for i in range(8)]
    failing = sum(clipping_check(s).failed for s in stats)
    assert failing > 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fleet_clipping(stats) as message:
            for _ in range(2):
                for s in stats:
                    privatize_household(s, mechanism="gaussian", epsilon=1.0, rng=0,
                                        accounted=True)
            with fleet_clipping(stats):         # a nested loop (the curve in a run)
                privatize_household(stats[0], mechanism="gaussian", epsilon=1.0, rng=0,
                                    accounted=True)
    said = [str(w.message) for w in caught if "clipping" in str(w.message)]
    assert said == [message]
    assert message.startswith(f"check 'clipping' failed for {failing} of 8 households")
    for i, name in enumerate(("T_i", "T_h")):
        assert (f"{name} in" in message) == any(
            s.clipping.channel_share(0, i) > 0.01 for s in stats)
    assert message.endswith("Remedy: raise SharingBounds.state_bounds_K")
    assert message.index("biased") < message.index("Remedy")
    # outside the block each release says its own again
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        privatize_household(stats[0], mechanism="gaussian", epsilon=1.0, rng=0, accounted=True)
    assert len([w for w in caught if "check 'clipping'" in str(w.message)]) == int(
        clipping_check(stats[0]).failed)


def test_a_fleet_within_its_bounds_says_nothing(record):
    wide = SharingBounds(state_bounds_K=(20.0, 20.0))
    stats = [household_statistics(record, i, max_delay=3, bounds=wide) for i in range(8)]
    assert fleet_clipping_message(stats) is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fleet_clipping(stats) as message:
            privatize_household(stats[0], mechanism="gaussian", epsilon=1.0, rng=0)
    assert message is None and not [w for w in caught if "clipping" in str(w.message)]
