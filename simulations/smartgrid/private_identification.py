"""Private federated identification of the heat-pump fleet (issue 10, item 3).

Each household turns its own operation data into DMDidc sufficient statistics
(:class:`dmdidc.SufficientStatistics`), privatizes them once (:meth:`~dmdidc.SufficientStatistics.
privatize`: Gaussian, Laplace or SaS noise with a sensitivity derived for the privacy unit) and
shares only the noisy statistics; the aggregator combines the fleet's releases
(:func:`aggregate_statistics`) and fits the fleet model from them by instrumental variables with
its own excitation as instrument (:func:`identify_fleet`).

What a household shares (:func:`household_statistics`)
----------------------------------------------------
* states ``[T_i - 21 C, T_h - 25 C]`` (a public operating point, subtracted so the clip bounds
  do not depend on the data), clipped to ``+-2 K`` and ``+-4 K`` (:class:`SharingBounds`);
* its command as a fraction of its heat pump's power minus one half, ``u / P_max - 0.5`` in
  ``[-0.5, 0.5]`` (per-unit inputs make the fleet's houses comparable and add up);
* the aggregator's excitation in the same per-unit scale, as the exogenous instrument: the
  thermostat computes the command from noisy temperatures, so the command is endogenous and
  only the excitation is independent of the noise and the disturbances
  (:mod:`dmdidc.regression.instrumental`);
* one trajectory per day, days disjoint (the transition across midnight is dropped), so one
  time step lies in one day's data and daily releases compose in parallel.  The statistics are
  not centred: with a zero-mean exogenous instrument the instrumental-variable fit needs no
  intercept (``E[z w] = E[z] E[w] = 0`` for any disturbance mean), and centring would double
  the sensitivity (the per-day means move with every sample).

Privacy units and the household's guarantee (:func:`household_guarantee`)
------------------------------------------------------------------------
``"sample"`` protects one time step (event level), ``"window"`` ``w`` consecutive time steps,
``"trajectory"`` the household's whole record.  A release's sensitivity is derived by
:mod:`dmdidc.private.sensitivity` for a unit inside one trajectory (a day); a unit that reaches
``k`` trajectories of the same release (a window across midnight: ``k = 2``; the whole record:
``k`` = all its days) moves the release by at most ``k`` times that (triangle inequality), and a
unit that reaches ``s`` releases (daily sharing) composes them.  :class:`HouseholdGuarantee` is a
view of the one accountant (:class:`privacy.accountant.Accountant`, one unit replaced): its
answer for the release's event with ``k`` times its sensitivity, composed ``s`` times -- never a
formula written here.
:func:`privatize_household` calibrates the release so that this guarantee meets the household's
budget and refuses to release otherwise (:class:`BudgetExceededError`).

Clipping of a fleet (:func:`fleet_clipping`)
--------------------------------------------
The library judges each household's clipping (check ``clipping``: more than 1 % of one
channel's values clipped biases that household's release), and :meth:`~dmdidc.
SufficientStatistics.privatize` warns at every release.  A study releases each household many
times (the curve, the attacks), so the fleet's loops say it once, summed up over the
households (:func:`fleet_clipping_message`), and silence the per-release repeats.  With the
default bounds 7 of a 20-household run's households clip more than 1 % of ``T_i`` or ``T_h``
(at most 7.9 %, up to 3.5 times the bound); the fleet's delay does not move measurably, while
wider bounds cost noise, so the bounds stay (measured in ``docs/smartgrid.md``).

Federated inference
-------------------
:func:`aggregate_statistics` is where the aggregator combines the households' releases: FedInfer's
posterior of the global statistics (:func:`dmdidc.combine_statistics`, dissertation Ch. 7,
eqs. 7.13-7.19), which for one round of Gaussian releases is their sum with the summed noise
variance, and for SaS or Laplace releases the posterior mean under the law of the summed noise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from _toolbox.errors import AccountingError, ParameterError
from _toolbox.validation import check_integer, check_positive
from dmdidc import DMDidc, SufficientStatistics, combine_statistics
from dmdidc.discretization import first_active_blocks
from dmdidc.private.release import (
    Calibration,
    PrivacyRelease,
    calibrate_release,
    check_release_settings,
    choose_sas_scale,
    privatize_calibrated,
    sas_calibration,
    sas_gdp_applies,
    within_budget,
)
from dmdidc.private.sensitivity import (
    PRIVACY_UNITS,
    StatisticsSensitivity,
    statistics_sensitivity,
)
from simulations.smartgrid.operation import FleetRecord

if TYPE_CHECKING:
    from privacy.accountant import Guarantee

__all__ = [
    "BudgetExceededError",
    "FleetIdentification",
    "HouseholdGuarantee",
    "SharingBounds",
    "aggregate_statistics",
    "daily_household_statistics",
    "fleet_estimator",
    "household_guarantee",
    "household_statistics",
    "run_guarantee",
    "identify_fleet",
    "fleet_clipping",
    "fleet_clipping_message",
    "privatize_household",
    "trajectories_reached",
]

#: Relative precision of the release calibration for units reaching several trajectories.
_CALIBRATION_RTOL = 1e-2


class BudgetExceededError(AccountingError):
    """A release would take a household beyond its privacy budget."""


@dataclass(frozen=True)
class SharingBounds:
    """Public operating point and clip bounds of what a household shares (see module notes).

    Attributes
    ----------
    offsets_c : (float, float)
        Subtracted from ``[T_i, T_h]`` before clipping, C.
    state_bounds_K : (float, float)
        Clip bounds of the offset states, K.
    excitation : float
        Amplitude of the aggregator's excitation as a fraction of ``P_max`` (the instrument's
        bound).
    """

    offsets_c: tuple[float, float] = (21.0, 25.0)
    state_bounds_K: tuple[float, float] = (2.0, 4.0)
    excitation: float = 0.5

    def __post_init__(self) -> None:
        for name in ("offsets_c", "state_bounds_K"):
            value = tuple(float(v) for v in getattr(self, name))
            if len(value) != 2:
                raise ParameterError(f"{name} must be two numbers (T_i, T_h); got "
                                     f"{getattr(self, name)!r}")
            object.__setattr__(self, name, value)
        for bound in self.state_bounds_K:
            check_positive("state_bounds_K", bound)
        check_positive("excitation", self.excitation)


def _household_days(record: FleetRecord, household: int, bounds: SharingBounds
                    ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Disjoint per-day trajectories (states, per-unit inputs, per-unit excitation)."""
    i = check_integer("household", household, minimum=0)
    if i >= len(record.households):
        raise ParameterError(f"household must be < {len(record.households)}; got {i}")
    p_max = record.households[i].parameters.heat_pump_max_kw
    span = record.steps_per_day
    offsets = np.array(bounds.offsets_c)[:, None]
    X_days, U_days, E_days = [], [], []
    for d in range(record.days):
        a = d * span
        X_days.append(record.X[i][:, a:a + span] - offsets)
        U_days.append(record.U[i][:, a:a + span - 1] / p_max - 0.5)
        E_days.append(record.excitation_kw[i][:, a:a + span - 1] / p_max)
    return X_days, U_days, E_days


def household_statistics(record: FleetRecord, household: int, *, max_delay: int,
                         bounds: SharingBounds | None = None) -> SufficientStatistics:
    """One household's sufficient statistics over its whole record (module notes).

    Parameters
    ----------
    record : FleetRecord
        Operation data with the aggregator's excitation.
    household : int
    max_delay : int
        Delay bound ``R`` (periods).
    bounds : SharingBounds, optional
        Default :class:`SharingBounds` ``()``; its ``excitation`` must be the record's amplitude
        (excitation values beyond it would be clipped).

    Returns
    -------
    SufficientStatistics
        One trajectory per day, exogenous instrument: the per-unit excitation.

    Examples
    --------
    >>> from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
    >>> record = simulate_fleet(draw_households(2, rng=0), load_profiles("extract"),
    ...                         start_day=10, days=2, excitation=0.5, rng=0)
    >>> stats = household_statistics(record, 0, max_delay=3)
    >>> stats.n_trajectories, stats.instruments, stats.dimension
    (2, 'exogenous', 152)
    """
    bounds = SharingBounds() if bounds is None else bounds
    X_days, U_days, E_days = _household_days(record, household, bounds)
    return SufficientStatistics.from_data(
        X_days, U_days, max_delay=_daily_delay_bound(max_delay, U_days),
        state_bound=list(bounds.state_bounds_K), input_bound=0.5, instruments=E_days,
        instrument_bound=bounds.excitation)


def _daily_delay_bound(max_delay: Any, U_days: list[np.ndarray]) -> int:
    """``max_delay`` checked against the days (each day one trajectory, whose first ``R``
    samples give no regression sample): a bound of a day or more left statistics of no
    sample, returned without a word (a trial: ``max_delay=2000`` on 96-sample days)."""
    R = check_integer("max_delay", max_delay, minimum=0)
    shortest = min((U.shape[1] for U in U_days), default=0)
    if R >= shortest:
        raise ParameterError(f"max_delay={R} periods leaves no regression sample in a day of "
                             f"{shortest} samples (each day is one trajectory); accepted: "
                             f"max_delay < {shortest}")
    return R


def daily_household_statistics(record: FleetRecord, household: int, *, max_delay: int,
                               bounds: SharingBounds | None = None) -> list[SufficientStatistics]:
    """The same statistics, one per day (a household sharing daily); they add up to
    :func:`household_statistics`."""
    bounds = SharingBounds() if bounds is None else bounds
    days = _household_days(record, household, bounds)
    R = _daily_delay_bound(max_delay, days[1])
    return [SufficientStatistics.from_data(X, U, max_delay=R,
                                           state_bound=list(bounds.state_bounds_K),
                                           input_bound=0.5, instruments=E,
                                           instrument_bound=bounds.excitation)
            for X, U, E in zip(*days, strict=True)]


def trajectories_reached(unit: str, window: int | None, stats: SufficientStatistics) -> int:
    """Trajectories of one release a privacy unit can change: 1 for a sample, up to
    ``1 + ceil((w - 1) / L)`` for a window of ``w`` steps over trajectories of ``L`` samples
    (at least 2 when ``w > 1``: a window may cross midnight), every trajectory for the record."""
    if unit not in PRIVACY_UNITS:
        raise ParameterError(f"unit must be one of {PRIVACY_UNITS}; got {unit!r}")
    if unit == "sample":
        return 1
    if unit == "trajectory":
        return stats.n_trajectories
    w = check_integer("window", window, minimum=1)
    shortest = max(stats.min_trajectory_samples, 1)
    return min(stats.n_trajectories, 1 + math.ceil((w - 1) / shortest)) if w > 1 else 1


@dataclass(frozen=True)
class HouseholdGuarantee:
    """A household's composed privacy guarantee for what it released (a view of the one
    accountant: :func:`household_guarantee`).

    Attributes
    ----------
    epsilon, delta : float
        The accountant's bound for one unit replaced.
    unit : str
        ``"sample"``, ``"window"`` or ``"trajectory"`` (the household's whole record).
    window : int or None
    releases : int
        Releases one unit can reach (composed).
    trajectories : int
        Trajectories of one release one unit can change (sensitivity multiple).
    method : str
        The accountant's method.
    release : dmdidc.private.release.PrivacyRelease
        The per-release description (mechanism, sensitivity in a single trajectory).
    """

    epsilon: float
    delta: float
    unit: str
    window: int | None
    releases: int
    trajectories: int
    method: str
    release: PrivacyRelease

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON summary."""
        mech = self.release.mechanism
        return {"epsilon": self.epsilon, "delta": self.delta, "unit": self.unit,
                "neighboring": "replace_one", "window": self.window, "releases": self.releases,
                "trajectories_per_release": self.trajectories, "method": self.method,
                "mechanism": type(mech).__name__,
                "noise_scale": float(getattr(mech, "sigma", getattr(mech, "scale", math.nan))),
                "sensitivity": self.release.sensitivity, "norm": self.release.norm,
                "dimension": self.release.dimension}


@functools.lru_cache(maxsize=256)
def _household_bound(mechanism: Any, *, unit: str, trajectories: int, releases: int,
                     delta: float) -> Guarantee:
    """The accountant's guarantee for one ``unit`` replaced: ``releases`` compositions of
    ``mechanism`` (sensitivity: the largest change of one release within one trajectory) with
    ``trajectories`` times its sensitivity.

    Remembered (a function of its frozen arguments, a frozen result): a fleet's households
    share their public bounds, so every one of them asked the accountant the same question
    twice (the attack study, 35 000 releases: 25 s of a 150 s case study)."""
    from privacy import NeighboringRelation
    from privacy.accountant import Accountant

    accountant = Accountant(neighboring=NeighboringRelation.REPLACE_ONE, unit=unit)
    return accountant.compose(_unit_event(mechanism, trajectories),
                              releases).guarantee(delta=delta)


def _unit_event(mechanism: Any, trajectories: int) -> Any:
    """The event of one release for one unit reaching ``trajectories`` trajectories of it."""
    # REPLACE_ONE: a unit's contribution bound is half the change its replacement causes
    return dataclasses.replace(
        mechanism, sensitivity=mechanism.sensitivity * trajectories / 2.0).to_dp_event()


def run_guarantee(guarantees: Sequence[HouseholdGuarantee], *, delta: float,
                  discretization: float = 1e-3) -> Guarantee:
    """The accountant's guarantee of everything one household released in a run: each of
    ``guarantees`` (one per release of its data, at one unit) composed with the others.

    Parameters
    ----------
    guarantees : sequence of HouseholdGuarantee
        At least one, all for the same unit (and window).
    delta : float
        Delta of the composed guarantee.
    discretization : float, default 1e-3
        The accountant's PLD loss grid.  A run composes a few tens of releases at epsilons up
        to 100; 1e-3 took 1.3 s where the default 1e-4 took 14 s, both 916.4 for a tiny run
        (23 releases), and a coarser grid stays an upper bound (pessimistic rounding).

    Returns
    -------
    privacy.accountant.Guarantee

    Raises
    ------
    ParameterError
        No guarantees, or guarantees for different units.

    Examples
    --------
    >>> from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
    >>> record = simulate_fleet(draw_households(1, rng=0), load_profiles("extract"),
    ...                         start_day=10, days=2, excitation=0.5, rng=0)
    >>> stats = household_statistics(record, 0, max_delay=3)
    >>> once = privatize_household(stats, mechanism="laplace", epsilon=1.0, rng=0)[1]
    >>> run_guarantee([once, once, once], delta=0.0).epsilon
    3.0
    """
    from collections import Counter

    from privacy import NeighboringRelation
    from privacy.accountant import Accountant

    guarantees = list(guarantees)
    units = {(g.unit, g.window) for g in guarantees}
    if len(units) != 1:
        raise ParameterError(f"run_guarantee needs guarantees for one unit; got "
                             f"{sorted(units, key=str) or 'none'}")
    accountant = Accountant(neighboring=NeighboringRelation.REPLACE_ONE, unit=guarantees[0].unit,
                            discretization=discretization)
    for g, count in Counter(guarantees).items():          # equal releases composed at once
        accountant = accountant.compose(
            _unit_event(g.release.accounted_mechanism, g.trajectories), g.releases * count)
    return accountant.guarantee(delta=delta)


def household_guarantee(release: PrivacyRelease, *, unit: str, window: int | None,
                        trajectories: int, releases: int = 1,
                        delta: float = 0.0) -> HouseholdGuarantee:
    """The household's guarantee: ``releases`` compositions of ``release``'s event with
    ``trajectories`` times its sensitivity (module notes), from the one accountant.

    The accountant composes ``release.accounted_mechanism``: for an ``(epsilon, delta)`` SaS
    release its certified Gaussian equivalent (l2-sensitivity; the triangle inequality scales
    it by ``trajectories`` as for l1), and ``method`` then names the vector-SaS GDP bound."""
    trajectories = check_integer("trajectories", trajectories, minimum=1)
    releases = check_integer("releases", releases, minimum=1)
    bound = _household_bound(release.accounted_mechanism, unit=unit, trajectories=trajectories,
                             releases=releases, delta=delta)
    method = bound.method if release.dominating is None else \
        f"vector-SaS GDP bound ({bound.method})"
    return HouseholdGuarantee(float(bound.epsilon), float(bound.delta), unit, window, releases,
                              trajectories, method, release)


def _release_delta(mechanism: str, delta: float) -> float | None:
    """Delta passed to the release: Gaussian and SaS use it (SaS: the l2 / GDP calibration),
    Laplace is pure DP."""
    return None if mechanism == "laplace" else delta


def _release_calibration(stats: SufficientStatistics, mechanism: str, epsilon: float,
                         delta: float, unit: str, window: int | None, alpha: float | None,
                         trajectories: int, releases: int) -> Calibration:
    """The release's calibration: the least noise whose household guarantee -- the number
    :func:`privatize_household` reports -- stays within ``epsilon`` (not a few ulps above:
    :func:`~dmdidc.private.release.within_budget`); the release draws exactly this noise."""
    def guarantee(calibration: Calibration) -> float:
        return _household_bound(calibration.accounted, unit=unit, trajectories=trajectories,
                                releases=releases,
                                delta=_release_delta(mechanism, delta) or 0.0).epsilon

    return within_budget(epsilon, lambda target: _calibration_at(
        stats, mechanism, target, delta, unit, window, alpha, trajectories, releases),
        guarantee)


def _calibration_at(stats: SufficientStatistics, mechanism: str, epsilon: float,
                    delta: float, unit: str, window: int | None, alpha: float | None,
                    trajectories: int, releases: int) -> Calibration:
    """:func:`_release_calibration` at one target, within its searches' tolerances."""
    sens = statistics_sensitivity(stats, unit, window=window if unit == "window" else None)
    release_delta = _release_delta(mechanism, delta)
    if trajectories == 1 and releases == 1:
        return calibrate_release(mechanism, epsilon, delta=release_delta, alpha=alpha,
                                 l1=sens.l1, l2=sens.l2, dimension=stats.dimension)
    if mechanism == "sas":
        return _sas_calibration(stats.dimension, sens, epsilon, delta, unit, alpha,
                                trajectories, releases)

    def household(eps_release: float) -> float:
        mech = calibrate_release(mechanism, eps_release, delta=release_delta, alpha=None,
                                 l1=sens.l1, l2=sens.l2, dimension=stats.dimension).accounted
        # at the delta the guarantee is reported at: a pure-DP Laplace release's epsilon at
        # delta 1e-5 is below its pure one (0.00104 against the budget 1e-3 reported, 2
        # releases of a window, before)
        return _household_bound(mech, unit=unit, trajectories=trajectories,
                                releases=releases, delta=release_delta or 0.0).epsilon

    # Gaussian and Laplace calibrate analytically: a bisection over the release's epsilon
    low, high = epsilon / (trajectories * releases), epsilon
    while household(low) > epsilon:
        low /= 4.0
    while high / low > 1.0 + _CALIBRATION_RTOL:
        middle = math.sqrt(low * high)
        if household(middle) > epsilon:
            high = middle
        else:
            low = middle
    return calibrate_release(mechanism, low, delta=release_delta, alpha=None, l1=sens.l1,
                             l2=sens.l2, dimension=stats.dimension)


def _sas_calibration(dimension: int, sens: StatisticsSensitivity, epsilon: float,
                     delta: float, unit: str, alpha: float, trajectories: int,
                     releases: int) -> Calibration:
    """:func:`_release_calibration` for SaS: the released scale is the decision variable.

    Each candidate is the smallest scale whose household guarantee -- the accountant's, as in
    :func:`household_guarantee` -- meets ``epsilon``: through the certified Gaussian equivalent
    where the GDP bound applies (:func:`dmdidc.private.release.sas_gdp_applies`; analytic
    accountant calls, milliseconds), and through the certified pure-DP vector bound (about
    0.3 s per scale, more where composing needs privacy loss distributions; within
    ``_CALIBRATION_RTOL``, rounded up).  The release's own rule picks the smaller
    (:func:`dmdidc.private.release.choose_sas_scale`: the pure-DP search runs only when neither
    its lower bound nor one bound at the GDP scale decides), so a composed release chooses as
    a single one does, and searching the per-release epsilon (each step a scale search of its
    own) is not needed.
    """
    from privacy import GaussianMechanism, SaSMechanism
    from privacy.curves import smallest_satisfying
    from privacy.vector_sas import sas_scale_for_gaussian_sigma

    def household(mech: Any) -> float:
        return _household_bound(mech, unit=unit, trajectories=trajectories, releases=releases,
                                delta=delta).epsilon

    gdp_scale = None
    if sas_gdp_applies(delta, alpha):
        # one release meeting the whole budget needs less noise than the composition
        start = GaussianMechanism.from_epsilon_delta(epsilon, delta, sensitivity=sens.l2).sigma
        sigma = smallest_satisfying(
            lambda s: household(GaussianMechanism(s, sensitivity=sens.l2)), epsilon,
            start=start, rtol=1e-9, what="Gaussian-equivalent sigma")
        gdp_scale = sas_scale_for_gaussian_sigma(alpha, sigma)

    def pure(scale: float) -> SaSMechanism:
        return SaSMechanism(alpha=alpha, scale=scale, sensitivity=sens.l1, dimension=dimension)

    # one coordinate taking the whole budget's shift needs less noise than the composed vector
    # guarantee: a lower bound of the pure-DP scale (the scalar bound costs microseconds)
    pure_low = SaSMechanism.from_epsilon(epsilon, alpha=alpha,
                                         sensitivity=trajectories * sens.l1).scale
    scale, gdp = choose_sas_scale(
        gdp_scale, pure_low, lambda s: household(pure(s)) <= epsilon,
        lambda: smallest_satisfying(lambda s: household(pure(s)), epsilon, start=pure_low,
                                    rtol=_CALIBRATION_RTOL, what="SaS noise scale"))
    return sas_calibration(scale, alpha=alpha, delta=delta, l1=sens.l1, l2=sens.l2,
                           dimension=dimension, gdp=gdp)


def privatize_household(stats: SufficientStatistics, *, mechanism: str, epsilon: float,
                        delta: float = 1e-5, unit: str = "sample", window: int | None = None,
                        alpha: float | None = None, releases: int = 1,
                        budget: tuple[float, float] | None = None,
                        rng: np.random.Generator | int | None = None,
                        accounted: bool = False
                        ) -> tuple[SufficientStatistics, HouseholdGuarantee]:
    """Privatize one release of a household so its composed guarantee meets ``epsilon``.

    Parameters
    ----------
    stats : SufficientStatistics
        Plain statistics with bounds (:func:`household_statistics` or one day of
        :func:`daily_household_statistics`).
    mechanism : {"gaussian", "laplace", "sas"}
    epsilon : float
        The household's budget for the unit, over all ``releases`` a unit can reach.
    delta : float, default 1e-5
        Delta of the guarantee.  Gaussian: of the release.  SaS: with ``delta > 0`` the
        release may be calibrated on the l2-sensitivity through the vector-SaS GDP bound
        (:func:`dmdidc.private.release.calibrate_release`; far less noise on many-entry
        releases) and the guarantee is the accountant's ``(epsilon, delta)``; ``0`` keeps pure
        DP.  Laplace: pure DP, reported with delta 0.
    unit : {"sample", "window", "trajectory"}, default "sample"
        Time step, ``window`` time steps, or the household's whole record.
    window : int, optional
        Time steps of a window (``unit="window"``).
    alpha : float, optional
        SaS stability index in (0, 2): required for ``mechanism="sas"``, refused with the
        others (it would change nothing).
    releases : int, default 1
        Releases of this kind one unit can reach (e.g. 2 for a window under daily sharing):
        the budget is split so that their composition meets it.
    budget : (epsilon, delta), optional
        The household's hard limit; a release whose guarantee exceeds it is refused.  Default:
        ``(epsilon, delta)``.
    rng : numpy.random.Generator or int or None
    accounted : bool, default False
        The caller accounts for repeated releases of ``stats`` (a study's independent noise
        draws): no :class:`~dmdidc.RepeatedReleaseWarning`
        (:meth:`dmdidc.SufficientStatistics.privatize`).

    Returns
    -------
    private : SufficientStatistics
    guarantee : HouseholdGuarantee

    Raises
    ------
    ParameterError
        Unknown mechanism or unit, bad epsilon/delta/window, alpha missing for SaS or given
        with another mechanism, window given with another unit.
    BudgetExceededError
        The accountant's guarantee exceeds the budget (never released).

    Examples
    --------
    >>> from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
    >>> record = simulate_fleet(draw_households(1, rng=0), load_profiles("extract"),
    ...                         start_day=10, days=2, excitation=0.5, rng=0)
    >>> stats = household_statistics(record, 0, max_delay=3)
    >>> private, guarantee = privatize_household(stats, mechanism="gaussian", epsilon=1.0,
    ...                                          rng=0)
    >>> round(guarantee.epsilon, 6), guarantee.unit, guarantee.method
    (1.0, 'sample', 'gaussian-exact')
    """
    alpha, delta = check_release_settings(mechanism, alpha, delta)
    epsilon = check_positive("epsilon", epsilon)
    if unit != "window" and window is not None:
        raise ParameterError(f"window applies to unit='window' only; got window={window!r} with "
                             f"unit={unit!r}")
    trajectories = trajectories_reached(unit, window, stats)
    releases = check_integer("releases", releases, minimum=1)
    limit_eps, limit_delta = (epsilon, delta) if budget is None else budget
    calibration = _release_calibration(stats, mechanism, epsilon, delta, unit, window, alpha,
                                       trajectories, releases)
    private = privatize_calibrated(stats, calibration, unit=unit,
                                   window=window if unit == "window" else None, rng=rng,
                                   accounted=accounted)
    guarantee = household_guarantee(private.privacy, unit=unit, window=window,
                                    trajectories=trajectories, releases=releases,
                                    delta=_release_delta(mechanism, delta) or 0.0)
    # exact: the calibration lands within epsilon, so only a budget below it refuses
    if guarantee.epsilon > limit_eps or guarantee.delta > limit_delta:
        eps, budget_eps = _distinct(guarantee.epsilon, limit_eps, 4)
        dlt, budget_dlt = _distinct(guarantee.delta, limit_delta, 3)
        raise BudgetExceededError(
            f"this release would give the household ({eps}, {dlt})-DP per {unit}, beyond its "
            f"budget ({budget_eps}, {budget_dlt}); it was not released")
    return private, guarantee


def _distinct(value: float, limit: float, digits: int) -> tuple[str, str]:
    """``value`` and ``limit`` with ``digits`` significant digits, more where that would print
    a value above the limit as equal to it."""
    while digits < 17 and value != limit and f"{value:.{digits}g}" == f"{limit:.{digits}g}":
        digits += 1
    return f"{value:.{digits}g}", f"{limit:.{digits}g}"


#: Names of the shared channels, (signal, channel) as in :class:`dmdidc.inference.clipping.
#: Clipping`, and what bounds them.
_CHANNELS = {(0, 0): ("T_i", "SharingBounds.state_bounds_K"),
             (0, 1): ("T_h", "SharingBounds.state_bounds_K"),
             (1, 0): ("the per-unit command", "the per-unit input bound 0.5"),
             (2, 0): ("the excitation", "SharingBounds.excitation")}


def fleet_clipping_message(stats: Sequence[SufficientStatistics]) -> str | None:
    """One sentence for a fleet's clipping: how many households fail their check ``clipping``
    (:func:`dmdidc.inference.clipping.clipping_check`, the per-household verdict), in which
    channels, the largest share and how far beyond its bound; ``None`` when none fails.

    Examples
    --------
    >>> from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
    >>> record = simulate_fleet(draw_households(3, rng=0), load_profiles("extract"),
    ...                         start_day=10, days=2, excitation=0.5, rng=0)
    >>> tight = SharingBounds(state_bounds_K=(0.2, 0.2))
    >>> message = fleet_clipping_message([household_statistics(record, i, max_delay=3,
    ...                                                         bounds=tight) for i in range(3)])
    >>> message[:62]
    "check 'clipping' failed for 3 of 3 households: more than 1% of"
    >>> wide = SharingBounds(state_bounds_K=(20.0, 20.0))
    >>> fleet_clipping_message([household_statistics(record, 0, max_delay=3,
    ...                                               bounds=wide)]) is None
    True
    """
    from dmdidc.inference.clipping import CLIP_SHARE, SIGNALS, clipping_check

    stats = list(stats)
    failed = [s.clipping for s in stats if clipping_check(s).failed]
    if not failed:
        return None
    over: dict[tuple[int, int], int] = {}
    for clipping in failed:
        for signal, channel, share in clipping.channels():
            if share > CLIP_SHARE:
                over[signal, channel] = over.get((signal, channel), 0) + 1
    names = {key: _CHANNELS.get(key, (f"{SIGNALS[key[0]][0]} {key[1]}", SIGNALS[key[0]][1]))
             for key in over}
    share = max(c.worst()[2] for c in failed)
    peak = max(c.channel_peak[i][j] for c in failed for i, j in over
               if c.channel_share(i, j) > CLIP_SHARE)
    knobs = sorted({names[key][1] for key in over})
    channels = ", ".join(f"{names[key][0]} in {count}" for key, count in sorted(over.items()))
    return (f"check 'clipping' failed for {len(failed)} of {len(stats)} households: more than "
            f"{100 * CLIP_SHARE:g}% of a channel's values clipped ({channels}; largest "
            f"{100 * share:.2g}%, up to {peak:.2g} times its bound); their releases, and the "
            f"fleet model fitted from them, are biased (each household's own check: "
            f"dmdidc.inference.clipping.clipping_check). Remedy: raise {' and '.join(knobs)}")


@contextlib.contextmanager
def fleet_clipping(stats: Sequence[SufficientStatistics]) -> Iterator[str | None]:
    """Say the fleet's clipping once (:func:`fleet_clipping_message`, a
    :class:`~dmdidc.DiagnosticWarning`) and silence each release's repeat of it inside the
    block (the loops that privatize the households' statistics, many times in a study).
    Yields the message (``None``: nothing failed).  Nested blocks say nothing more."""
    from dmdidc.errors import DiagnosticWarning, warn_model

    message = fleet_clipping_message(stats)
    if message is not None:
        warn_model(message, DiagnosticWarning)
    with warnings.catch_warnings():
        # each household's and the nested fleets' (their messages start alike)
        warnings.filterwarnings("ignore", message="check 'clipping' failed",
                                category=DiagnosticWarning)
        yield message


def aggregate_statistics(releases: Sequence[SufficientStatistics]) -> SufficientStatistics:
    """Combine the households' (privatized) statistics into the fleet's: the federated seam.

    FedInfer's posterior of the global statistics (:func:`dmdidc.combine_statistics`): the sum
    with its summed noise variance for Gaussian releases, the posterior mean under the stable
    sum (SaS) or Laplace likelihood otherwise, carrying every household's release for the
    privacy record.

    Raises
    ------
    ParameterError
        No releases, or releases that do not combine (mismatched layouts, bounds or units,
        SaS releases of different alphas).
    """
    releases = list(releases)
    if not releases:
        raise ParameterError("releases must hold at least one household's statistics")
    return combine_statistics(releases)


@dataclass(frozen=True, eq=False)
class FleetIdentification:
    """The aggregator's fleet model, identified from the combined statistics.

    Attributes
    ----------
    estimator : dmdidc.DMDidc
        Fitted (instrumental variables, exogenous instrument).
    delay_s : float
        Identified delay of the heat-pump channel, seconds (NaN when no input block passes the
        test -- the fit failed, ``note`` says why -- or without a continuous model).
    delay_ci_s : (float, float)
        Its confidence interval (NaN when not available).
    note : str
        Why the delay or its interval is missing (empty otherwise).
    """

    estimator: DMDidc
    delay_s: float
    delay_ci_s: tuple[float, float]
    note: str

    @property
    def model(self):
        """The identified :class:`dmdidc.DelayedPlant` (per-unit input)."""
        return self.estimator.model_

    @property
    def usable(self) -> bool:
        """Whether the fit found the heat pump's effect and the model has a continuous part
        (needed by the fractional controller)."""
        return math.isfinite(self.delay_s) and self.model.has_continuous


def fleet_estimator(max_delay: int) -> DMDidc:
    """The fleet model's estimator (module notes): instrumental variables with the zero-mean
    excitation as instrument, through the origin (``detrend=None``). The intercept needs no
    test: the instrument is uncorrelated with any disturbance mean, and the private releases,
    centred on the public operating point, could not be tested anyway; a test on the plain
    statistics would fit them differently from the private ones it is compared with.

    Examples
    --------
    >>> fleet_estimator(3).detrend is None
    True
    """
    return DMDidc(max_delay=max_delay, estimator="iv", instruments="exogenous", detrend=None)


def identify_fleet(statistics: SufficientStatistics, *, dt_s: float, max_delay: int,
                   level: float = 0.95) -> FleetIdentification:
    """Fit the fleet model from combined statistics by instrumental variables.

    Parameters
    ----------
    statistics : SufficientStatistics
        :func:`aggregate_statistics` of the households' releases (or plain statistics).
    dt_s : float
    max_delay : int
    level : float, default 0.95
        Confidence level of ``delay_ci_s``.

    Returns
    -------
    FleetIdentification

    Raises
    ------
    dmdidc.InsufficientExcitationError
        When the (noisy) moments are rank-deficient.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")   # kept: they explain a failed fit in ``note``
        estimator = fleet_estimator(max_delay).fit_statistics(statistics, dt=dt_s)
    model = estimator.model_
    if first_active_blocks(model.active_blocks)[0] < 0:
        # no input block passes the test: a delay of 0 with B = 0 would read as a result
        reasons = "; ".join(str(w.message) for w in caught)
        return FleetIdentification(estimator, math.nan, (math.nan, math.nan),
                                   f"failed: the heat pump's channel shows no significant "
                                   f"effect ({reasons or 'no input block passes the test'})")
    if not model.has_continuous:
        return FleetIdentification(estimator, math.nan, (math.nan, math.nan),
                                   model.continuous_note or "no continuous model")
    delay = float(model.delay[0])
    try:
        interval = estimator.delay_ci(level)
        ci = (float(interval.low[0]), float(interval.high[0]))
        note = "" if all(math.isfinite(v) for v in ci) else "no asymptotic interval"
    except (ParameterError, ValueError, np.linalg.LinAlgError) as exc:
        ci, note = (math.nan, math.nan), f"no interval: {exc}"
    return FleetIdentification(estimator, delay, ci, note)
