"""Differentially private release of sufficient statistics (once, with a derived sensitivity).

:func:`privatize_statistics` (``SufficientStatistics.privatize``) adds noise *once* to the
whole vector :meth:`~dmdidc.SufficientStatistics.to_vector` (the distinct Gram entries and,
for uncentred statistics, the sums): one release of that dimension through a mechanism of
:mod:`privacy`, calibrated from the sensitivity of :mod:`dmdidc.private.sensitivity`:

* ``"gaussian"``: ``GaussianMechanism`` with the l2-sensitivity, sigma calibrated analytically
  for ``(epsilon, delta)`` (Balle and Wang 2018);
* ``"laplace"``: ``LaplaceMechanism`` with the l1-sensitivity, scale ``l1 / epsilon``;
* ``"sas"``: ``SaSMechanism`` (symmetric alpha-stable, alpha in (0, 2)) on the query's
  dimension.  Without ``delta`` (None or 0): pure DP, the smallest scale (within 1 %) whose
  certified pure-DP epsilon of the whole vector with the l1-sensitivity
  (``SaSMechanism.epsilon_vector``, dissertation Sec. 3.4 and the worst split of the l1 shift
  over coordinates) is at most ``epsilon``.  With ``delta > 0`` and alpha in [1, 2) also the
  vector-SaS GDP bound (:mod:`privacy.vector_sas`): i.i.d. SaS noise on a query of
  l2-sensitivity ``C`` is at least as private as Gaussian noise of ``sigma_eq(alpha, gamma)``,
  so the smallest scale whose Gaussian equivalent meets ``(epsilon, delta)`` with the
  l2-sensitivity; the release uses the smaller of the two scales and claims that calibration's
  guarantee.  On many-entry releases the l2 calibration is several times less noisy (l1 grows
  with the number of touched entries, l2 with its square root).  The GDP certificate rests on
  a numerically verified property of the scalar SaS pair (``privacy.vector_sas``, part (a)),
  not on a proof.

The guarantee reported in :class:`PrivacyRelease` is the one accountant's answer
(:class:`privacy.accountant.Accountant`) for the release's event
(:attr:`PrivacyRelease.dp_event`: the mechanism, or for the ``(epsilon, delta)`` SaS release its
certified Gaussian equivalent :attr:`PrivacyRelease.dominating`; for the pure-DP vector SaS
release the accountant uses privacy's certified pure-DP bound of that vector), never a formula
written here.  Neighbouring data sets differ in one privacy unit (a time step, a window of time
steps or a trajectory) *replaced* (``NeighboringRelation.REPLACE_ONE``: the derived sensitivity
is the largest change of the release, twice the event's per-unit bound); the numbers of samples
and trajectories are public.

What each unit protects: ``"sample"`` one time step of every signal (event-level privacy: a
single reading, e.g. one 5-minute interval of a household); ``"window"`` ``w`` consecutive time
steps (e.g. a day of occupancy); ``"trajectory"`` a whole experiment (e.g. a household's day
when each day is a trajectory).  The sensitivity, and so the noise, grows with the unit:
about ``w + R + 1`` touched samples for a window, the whole trajectory length for a trajectory
(a window at least as long as the longest trajectory is a trajectory: the same sensitivity).

Each call is one release: privatizing the same plain statistics again draws fresh noise on the
same data, and the releases compose.  The statistics count them (``release_count``), and from
the second on a :class:`~dmdidc.RepeatedReleaseWarning` gives the accountant's composition of all
(:func:`composed_guarantee`, for the finest unit among them) unless the caller passes
``accounted=True`` (a study of independent noise draws on simulated data).

The noisy statistics are unbiased (the noise is centred); the estimator repairs an indefinite
noisy Gram and takes the noise variance into its standard errors
(:meth:`dmdidc.DMDidc.fit_statistics`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from _toolbox.validation import check_in_interval, check_positive
from dmdidc.errors import ParameterError
from dmdidc.private.sensitivity import statistics_sensitivity

__all__ = ["PrivacyRelease", "Calibration", "privatize_statistics", "privatize_calibrated",
           "describe_release", "calibrate_release", "check_mechanism", "check_release_settings",
           "sas_gdp_applies", "choose_sas_scale", "sas_calibration", "composed_guarantee",
           "within_budget", "MECHANISMS"]

MECHANISMS = ("gaussian", "laplace", "sas")
#: Relative precision of the SaS scale search (rounded up: at most this much extra noise).
_SAS_SCALE_RTOL = 1e-2


@dataclass(frozen=True)
class PrivacyRelease:
    """The guarantee of one privatized release of sufficient statistics.

    Attributes
    ----------
    mechanism : GaussianMechanism, LaplaceMechanism or SaSMechanism
        The mechanism that added the noise; its ``sensitivity`` is the largest change of the
        released vector between neighbouring data sets.
    epsilon, delta : float
        The guarantee: ``(epsilon, delta)``-DP with respect to replacing one ``unit``.
    unit : str
        ``"sample"``, ``"window"`` or ``"trajectory"``.
    window : int or None
        Time steps per window.
    sensitivity : float
        The sensitivity the guarantee rests on, in unit-box coordinates: l2 for Gaussian and
        for the ``(epsilon, delta)`` SaS release, l1 otherwise.
    norm : str
        ``"l2"`` or ``"l1"``.
    dimension : int
        Entries released at once (one query of this dimension).
    accountant : str
        Where ``epsilon`` comes from.
    dominating : GaussianMechanism or None
        For the ``(epsilon, delta)`` SaS release: the certified Gaussian equivalent (sigma from
        :func:`privacy.vector_sas.sas_gaussian_equivalent_sigma`, the l2-sensitivity), at most
        as private as the release; the accountant composes it in place of ``mechanism``.
        None otherwise.
    """

    mechanism: Any
    epsilon: float
    delta: float
    unit: str
    window: int | None
    sensitivity: float
    norm: str
    dimension: int
    accountant: str
    dominating: Any = None
    #: Which noise realization this is: made once per release and kept by copies, pickling and
    #: dataclasses.replace (an id() was lost through pickling: P + pickled P was taken for two
    #: independent releases and declared half the variance of its noise).  Not compared: two
    #: releases of equal settings are still two draws.
    token: str = field(default_factory=lambda: uuid.uuid4().hex, compare=False, repr=False)

    @property
    def accounted_mechanism(self) -> Any:
        """The mechanism the accountant composes for this release: ``dominating`` when set,
        else ``mechanism`` (with the whole replacement shift as its sensitivity)."""
        return self.mechanism if self.dominating is None else self.dominating

    @property
    def neighboring(self) -> Any:
        """``NeighboringRelation.REPLACE_ONE``: neighbours differ in one ``unit`` replaced."""
        from privacy import NeighboringRelation
        return NeighboringRelation.REPLACE_ONE

    @property
    def dp_event(self) -> Any:
        """The ``DpEvent`` of this release under :attr:`neighboring`.

        ``REPLACE_ONE`` states a unit's contribution bound ``C`` and lets a replacement move the
        release by ``2 C`` (``dp_accounting``'s convention), so ``C`` is half of
        ``sensitivity``, the largest change a replacement causes.
        """
        mech = self.accounted_mechanism
        return dataclasses.replace(mech, sensitivity=mech.sensitivity / 2.0).to_dp_event()

    def guarantee(self, releases: int = 1) -> Any:
        """The accountant's guarantee (at ``delta``) after ``releases`` releases of this kind
        that one unit reaches (:class:`privacy.accountant.Guarantee`)."""
        from privacy.accountant import Accountant
        return Accountant(neighboring=self.neighboring, unit=self.unit).compose(
            self.dp_event, releases).guarantee(delta=self.delta)

    def __str__(self) -> str:
        unit = {"sample": "one time step replaced",
                "window": f"a window of {self.window} time steps replaced",
                "trajectory": "one trajectory replaced"}[self.unit]
        return (f"({self.epsilon:.4g}, {self.delta:.3g})-DP for {unit} "
                f"({type(self.mechanism).__name__}, {self.norm}-sensitivity "
                f"{self.sensitivity:.4g} of a {self.dimension}-entry release; {self.accountant})")


def _declared(mechanism: Any, dimension: int) -> Any:
    """The mechanism with its query dimension declared, where the mechanism declares one (the
    release rule: one query of the declared dimension per call)."""
    names = {f.name for f in dataclasses.fields(mechanism)}
    return dataclasses.replace(mechanism, dimension=dimension) if "dimension" in names else \
        mechanism


def _sas_epsilon(mechanism) -> float:
    """The accountant's pure-DP epsilon of one SaS release (for a vector, privacy's certified
    bound of the worst split of the l1 shift)."""
    from privacy import accounting
    return accounting.epsilon(mechanism, delta=0.0)


def _sas_mechanism(epsilon: float, alpha: float, sensitivity: float, dimension: int):
    """Smallest SaS scale (within ``_SAS_SCALE_RTOL``, rounded up) whose certified pure-DP
    epsilon for a ``dimension``-vector with this l1-sensitivity is at most ``epsilon``.

    Raises ``ParameterError`` at once when ``epsilon`` is below the floor certified at any
    scale (:func:`privacy.pure_epsilon.sas_epsilon_floor`, 1.31 for 20 entries at alpha 0.1):
    past it the doubling below would never stop."""
    from privacy import SaSMechanism
    from privacy.pure_epsilon import check_epsilon_reachable

    check_epsilon_reachable(epsilon, alpha, dimension)

    def make(scale: float) -> SaSMechanism:
        return SaSMechanism(alpha=alpha, scale=scale, sensitivity=sensitivity,
                            dimension=dimension)
    # the vector bound is at least the scalar one (all of the shift on one coordinate)
    low = SaSMechanism.from_epsilon(epsilon, alpha=alpha, sensitivity=sensitivity).scale
    high = low
    while _sas_epsilon(make(high)) > epsilon:
        low, high = high, 2.0 * high
    while high / low > 1.0 + _SAS_SCALE_RTOL:
        middle = math.sqrt(low * high)
        if _sas_epsilon(make(middle)) > epsilon:
            low = middle
        else:
            high = middle
    return make(high)


def sas_gdp_applies(delta: float | None, alpha: float) -> bool:
    """Whether an SaS release may be calibrated through the vector-SaS GDP bound (module
    notes): ``delta > 0`` and alpha in [1, 2).

    Examples
    --------
    >>> sas_gdp_applies(1e-5, 1.9), sas_gdp_applies(0.0, 1.9), sas_gdp_applies(1e-5, 0.8)
    (True, False, False)
    """
    return bool(delta) and 1.0 <= alpha < 2.0


def choose_sas_scale(gdp_scale: float | None, pure_low: float,
                     pure_meets: Callable[[float], bool],
                     pure_scale: Callable[[], float]) -> tuple[float, bool]:
    """The SaS release rule: the smaller of the GDP-calibrated and the pure-DP scale.

    The pure-DP scale is a search (certified vector bounds, seconds); it runs only when the
    GDP scale does not already win: when it is below ``pure_low`` (microseconds), or when the
    pure-DP certificate does not meet the budget at the GDP scale (one bound).

    Parameters
    ----------
    gdp_scale : float or None
        The scale of the GDP calibration, None where it does not apply
        (:func:`sas_gdp_applies`).
    pure_low : float
        A lower bound of the pure-DP scale (the scalar bound).
    pure_meets : callable float -> bool
        Whether the pure-DP certificate meets the budget at a scale (non-decreasing).
    pure_scale : callable () -> float
        The pure-DP scale search; called at most once.

    Returns
    -------
    scale : float
    on_gdp : bool
        Whether ``scale`` is the GDP one (a tie goes to pure DP).

    Examples
    --------
    >>> never = lambda *_: 1 / 0
    >>> choose_sas_scale(2.0, 3.0, never, never)              # decided by the lower bound
    (2.0, True)
    >>> choose_sas_scale(4.0, 3.0, lambda s: s >= 5.0, never)  # one bound at the GDP scale
    (4.0, True)
    >>> choose_sas_scale(4.0, 3.0, lambda s: s >= 3.5, lambda: 3.5)
    (3.5, False)
    >>> choose_sas_scale(None, 3.0, never, lambda: 3.5)
    (3.5, False)
    """
    if gdp_scale is not None and (gdp_scale < pure_low or not pure_meets(gdp_scale)):
        return gdp_scale, True
    pure = pure_scale()
    if gdp_scale is not None and gdp_scale < pure:
        return gdp_scale, True
    return pure, False


class Calibration(NamedTuple):
    """A release's calibration (:func:`calibrate_release`, :func:`sas_calibration`): what
    :func:`privatize_calibrated` releases with, decided once."""

    mechanism: Any
    variance: float
    epsilon: float
    delta: float
    source: str
    accounted: Any


def sas_calibration(scale: float, *, alpha: float, delta: float | None, l1: float, l2: float,
                    dimension: int, gdp: bool) -> Calibration:
    """The calibration of an SaS release at a ``scale`` already chosen (:func:`choose_sas_scale`,
    or a search on a composed budget): its guarantee from the accountant, no search.

    ``gdp`` claims the ``(epsilon, delta)`` of the certified Gaussian equivalent on the
    l2-sensitivity (needs :func:`sas_gdp_applies`), otherwise privacy's certified pure-DP bound
    of the ``dimension``-vector on the l1-sensitivity.

    Examples
    --------
    >>> cal = sas_calibration(400.0, alpha=1.9, delta=1e-5, l1=508.0, l2=43.0, dimension=152,
    ...                       gdp=True)
    >>> cal.mechanism.scale, type(cal.accounted).__name__, cal.delta
    (400.0, 'GaussianMechanism', 1e-05)
    """
    from privacy import GaussianMechanism, SaSMechanism, accounting
    from privacy.vector_sas import sas_gaussian_equivalent_sigma

    mech = SaSMechanism(alpha=alpha, scale=scale, sensitivity=l1, dimension=dimension)
    if not gdp:
        return Calibration(mech, math.inf, _sas_epsilon(mech), 0.0,
                           f"privacy's certified pure-DP bound of the {dimension}-dimensional "
                           f"SaS release (SaSMechanism.epsilon_vector)", mech)
    if not sas_gdp_applies(delta, alpha):
        raise ParameterError(f"the vector-SaS GDP calibration needs delta > 0 and alpha in "
                             f"[1, 2); got delta={delta!r}, alpha={alpha!r}")
    gaussian = _declared(GaussianMechanism(sas_gaussian_equivalent_sigma(alpha, scale),
                                           sensitivity=l2), dimension)
    bound = accounting.guarantee(gaussian, delta=delta)
    return Calibration(mech, math.inf, bound.epsilon, delta,
                       f"vector-SaS GDP bound (privacy.vector_sas: Gaussian equivalent sigma "
                       f"{gaussian.sigma:.4g} on the l2-sensitivity; numerically verified scalar "
                       f"property) composed by privacy.accounting ({bound.method})", gaussian)


@functools.lru_cache(maxsize=256)
def calibrate_release(mechanism: str, epsilon: float, *, delta: float | None,
                      alpha: float | None, l1: float, l2: float, dimension: int
                      ) -> Calibration:
    """The mechanism for one ``dimension``-vector release at ``epsilon`` (module notes).

    Parameters
    ----------
    mechanism : {"gaussian", "laplace", "sas"}
    epsilon : float
    delta : float or None
        Required for ``"gaussian"``; for ``"laplace"`` only the reported epsilon depends on it;
        for ``"sas"`` with alpha in [1, 2) a positive delta adds the l2 (GDP) calibration
        (module notes).
    alpha : float or None
        SaS stability index (``"sas"`` only).
    l1, l2 : float
        Sensitivities: the largest l1 / l2 change of the vector between neighbours.
    dimension : int

    Returns
    -------
    Calibration
        ``mechanism`` (GaussianMechanism, LaplaceMechanism or SaSMechanism, with the matching
        sensitivity and dimension where mechanisms declare one); ``variance``, the noise
        variance per entry (``inf`` for SaS with alpha < 2); ``epsilon`` and ``delta``, the
        guarantee from the accountant (SaS: privacy's certified pure-DP bound or the GDP
        bound); ``source``, where the epsilon comes from; ``accounted``, what
        :mod:`privacy.accounting` composes for this release (the SaS release's certified
        Gaussian equivalent when the GDP calibration is used, else ``mechanism``).

    Notes
    -----
    Cached: the calibration (for SaS a search over the vector bound, seconds) depends only on
    these numbers, not on the data.  SaS: the smaller of the two scales
    (:func:`choose_sas_scale`).

    Examples
    --------
    >>> from dmdidc.private.release import calibrate_release
    >>> pure = calibrate_release("sas", 1.0, delta=None, alpha=1.9, l1=508.0, l2=43.0,
    ...                          dimension=152)
    >>> gdp = calibrate_release("sas", 1.0, delta=1e-5, alpha=1.9, l1=508.0, l2=43.0,
    ...                         dimension=152)
    >>> gdp[0].scale < pure[0].scale / 4, gdp[3], type(gdp[5]).__name__
    (True, 1e-05, 'GaussianMechanism')
    """
    return within_budget(
        epsilon, lambda target: _calibrate_once(mechanism, target, delta=delta, alpha=alpha,
                                                l1=l1, l2=l2, dimension=dimension),
        lambda calibration: calibration.epsilon)


#: First relative margin :func:`within_budget` takes off a target the calibration overshot;
#: it grows 8-fold per retry (measured overshoots: 1e-14 at epsilon 1e-3, 9e-12 at 1e-4,
#: 1.7e-9 at 1e-8: the analytic Gaussian calibration and the accountant's epsilon are two
#: root findings whose tolerances do not agree to the last bits).
_FIRST_MARGIN = 1e-13


def within_budget(epsilon: float, calibrate: Callable[[float], Any],
                  guarantee: Callable[[Any], float]) -> Any:
    """``calibrate(target)`` for the largest target tried whose ``guarantee`` is at most
    ``epsilon``: ``epsilon`` itself, else ``epsilon`` less a margin growing from 1e-13.

    A calibration meets its target to the search's tolerance, but the number a release
    reports is the accountant's, computed another way: it may land a few ulps (up to 2e-9
    relative, measured) above.  A privacy number above the budget asked for is never
    returned; the comparison stays exact.

    Raises
    ------
    AccountingError
        No target down to half of ``epsilon`` brings the guarantee within it (a calibration
        that does not meet its own target).
    """
    from _toolbox.errors import AccountingError

    target, margin = epsilon, _FIRST_MARGIN
    while True:
        result = calibrate(target)
        if guarantee(result) <= epsilon:
            return result
        if margin > 0.5:
            raise AccountingError(f"no calibration brings the guarantee within epsilon "
                                  f"{epsilon!r}: {guarantee(result)!r} at target {target!r}")
        target, margin = epsilon * (1.0 - margin), margin * 8.0


def _calibrate_once(mechanism: str, epsilon: float, *, delta: float | None,
                    alpha: float | None, l1: float, l2: float, dimension: int
                    ) -> Calibration:
    """:func:`calibrate_release` at one target, its guarantee within a search's tolerance."""
    from privacy import GaussianMechanism, LaplaceMechanism, SaSMechanism, accounting

    report_delta = 0.0 if delta is None else delta
    if mechanism == "gaussian":
        mech = _declared(GaussianMechanism.from_epsilon_delta(epsilon, delta, sensitivity=l2),
                         dimension)
        return Calibration(mech, mech.sigma ** 2, accounting.epsilon(mech, delta=delta), delta,
                           "privacy.accounting.epsilon (one release)", mech)
    if mechanism == "laplace":
        mech = _declared(LaplaceMechanism(scale=l1 / epsilon, sensitivity=l1), dimension)
        return Calibration(mech, 2.0 * mech.scale ** 2,
                           accounting.epsilon(mech, delta=report_delta), report_delta,
                           "privacy.accounting.epsilon (one release)", mech)
    gdp_scale = _sas_gdp_scale(epsilon, delta, alpha, l2) if sas_gdp_applies(delta, alpha) \
        else None
    # the pure-DP scale is at least the scalar one (all of the shift on one coordinate)
    pure_low = SaSMechanism.from_epsilon(epsilon, alpha=alpha, sensitivity=l1).scale
    scale, gdp = choose_sas_scale(
        gdp_scale, pure_low,
        lambda s: _sas_epsilon(SaSMechanism(alpha=alpha, scale=s, sensitivity=l1,
                                            dimension=dimension)) <= epsilon,
        lambda: _sas_mechanism(epsilon, alpha, l1, dimension).scale)
    return sas_calibration(scale, alpha=alpha, delta=delta, l1=l1, l2=l2,
                           dimension=dimension, gdp=gdp)


def _sas_gdp_scale(epsilon: float, delta: float, alpha: float, l2: float) -> float:
    """The smallest SaS scale certified at least as private as the Gaussian meeting
    ``(epsilon, delta)`` on the l2-sensitivity (:mod:`privacy.vector_sas`)."""
    from privacy import GaussianMechanism
    from privacy.vector_sas import sas_scale_for_gaussian_sigma

    sigma = GaussianMechanism.from_epsilon_delta(epsilon, delta, sensitivity=l2).sigma
    return sas_scale_for_gaussian_sigma(alpha, sigma)


def privatize_statistics(stats, mechanism: str = "gaussian", *, epsilon: float,
                         delta: float | None = None, unit: str = "sample",
                         window: int | None = None, alpha: float | None = None,
                         rng: np.random.Generator | int | None = None,
                         accounted: bool = False):
    """Release ``stats`` with differential privacy (see the module notes).

    Parameters
    ----------
    stats : SufficientStatistics
        Plain statistics built with bounds.
    mechanism : {"gaussian", "laplace", "sas"}, default "gaussian"
    epsilon : float
        Target epsilon of the release.
    delta : float, optional
        Target delta; required for ``"gaussian"``.  ``"laplace"``: optional, only changes the
        reported epsilon (the accountant's epsilon at that delta).  ``"sas"``: without it pure
        DP on the l1-sensitivity; with ``delta > 0`` (alpha in [1, 2)) the release may instead
        be calibrated on the l2-sensitivity through the vector-SaS GDP bound, whichever scale
        is smaller, and then claims ``(epsilon, delta)`` (module notes).
    unit : {"sample", "window", "trajectory"}, default "sample"
    window : int, optional
        Time steps per window (``unit="window"``).
    alpha : float, optional
        SaS stability index in (0, 2); required for ``"sas"`` only.
    rng : numpy.random.Generator, int or None
    accounted : bool, default False
        The caller composes repeated releases of ``stats`` itself: no warning (module notes).

    Returns
    -------
    SufficientStatistics
        The noisy statistics, with ``noise_variance`` and ``privacy`` set.

    Warns
    -----
    RepeatedReleaseWarning
        ``stats`` released before (module notes), unless ``accounted``.
    DiagnosticWarning
        Check ``clipping`` failed: more than 1 % of a channel's values were clipped to the
        bounds (:func:`dmdidc.inference.clipping.clipping_check`).  The release does not carry
        the count, so this warning, on the data owner's side, is the only one.

    Raises
    ------
    ParameterError
        Unknown mechanism or unit, bad epsilon/delta/alpha, statistics without bounds,
        statistics already privatized or centred after summing.

    References
    ----------
    Seed eqs. (3.1), (3.2), (3.8) (mechanisms), Sec. 3.4 (SaS pure DP); Balle and Wang,
    "Improving the Gaussian mechanism for differential privacy", ICML 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, SufficientStatistics, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 1000, rng=0)
    >>> stats = SufficientStatistics.from_data(plant.simulate([0.0], U), U, max_delay=2,
    ...                                        state_bound=4.0, input_bound=3.0)
    >>> private = stats.privatize("gaussian", epsilon=1.0, delta=1e-5, unit="sample", rng=0)
    >>> private.privacy.epsilon <= 1.0, private.privacy.unit
    (True, 'sample')
    """
    _check_plain(stats)
    release, variance = describe_release(stats, mechanism, epsilon=epsilon, delta=delta,
                                         unit=unit, window=window, alpha=alpha)
    return _noisy(stats, release, variance, rng, accounted)


def privatize_calibrated(stats, calibration: Calibration, *, unit: str = "sample",
                         window: int | None = None,
                         rng: np.random.Generator | int | None = None,
                         accounted: bool = False):
    """Release ``stats`` with a calibration decided elsewhere, e.g. a scale searched on a
    composed budget (:func:`sas_calibration`): the noise of ``calibration.mechanism``, drawn
    once, and its guarantee, with no second calibration.

    Parameters
    ----------
    stats : SufficientStatistics
        Plain statistics built with bounds.
    calibration : Calibration
        Its mechanism's sensitivity must be the one of ``stats`` for ``unit`` (l2 for Gaussian
        noise, l1 otherwise).
    unit, window, rng, accounted
        As in :func:`privatize_statistics`.

    Returns
    -------
    SufficientStatistics

    Raises
    ------
    ParameterError
        A calibration for another sensitivity, or as :func:`privatize_statistics`.

    Examples
    --------
    >>> from dmdidc import DelayedPlant, SufficientStatistics, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 1000, rng=0)
    >>> stats = SufficientStatistics.from_data(plant.simulate([0.0], U), U, max_delay=2,
    ...                                        state_bound=4.0, input_bound=3.0)
    >>> sens = stats.sensitivity("sample")
    >>> cal = sas_calibration(100.0, alpha=1.5, delta=None, l1=sens.l1, l2=sens.l2,
    ...                       dimension=stats.dimension, gdp=False)
    >>> private = privatize_calibrated(stats, cal, rng=0)
    >>> private.privacy.mechanism.scale, private.privacy.epsilon == cal.epsilon
    (100.0, True)
    """
    from privacy import GaussianMechanism

    _check_plain(stats)
    sens = _release_sensitivity(stats, unit, window)
    mech = calibration.mechanism
    expected = sens.l2 if isinstance(mech, GaussianMechanism) else sens.l1
    if not math.isclose(mech.sensitivity, expected, rel_tol=1e-12):
        raise ParameterError(f"calibration is for sensitivity {mech.sensitivity!r}; these "
                             f"statistics have {expected!r} per {unit} (a calibration made for "
                             f"the same statistics, unit and window is accepted)")
    return _noisy(stats, _describe(calibration, sens, unit, stats.dimension),
                  calibration.variance, rng, accounted)


def _check_plain(stats) -> None:
    if stats.releases:
        raise ParameterError("these statistics are already privatized; privatize plain "
                             "statistics once (composing releases of the same data is the "
                             "accountant's job)")
    if stats.interpolated:
        # a gap's interpolated values are set by the real readings at both of its ends: one
        # replaced reading moves the whole gap (41 time steps for a 40-sample gap: l2 change
        # 4.6 times the per-sample sensitivity, epsilon 5.5 instead of 1)
        raise ParameterError(
            f"stats were built from data with {stats.interpolated} interpolated value(s) "
            f"(missing='interpolate'); an interpolated value depends on the real readings on "
            f"both sides of its gap, so replacing one reading changes every value of the gap "
            f"and no privacy unit's sensitivity bounds the release. Read the data with "
            f"missing='drop' (the record splits into experiments at the gaps) before "
            f"privatizing")


def _noisy(stats, release: PrivacyRelease, variance: float, rng, accounted: bool):
    """``stats`` with ``release``'s noise added once to the whole vector; the release counted
    on ``stats``, and from the second one on their composition said unless ``accounted``.

    The warning's text is composed before the noise is drawn, and a composition the
    accountant cannot bound is said, not raised: a raise after the draw would leave a release
    recorded but never returned, and every later release of ``stats`` raising too."""
    from dmdidc.errors import DiagnosticWarning, RepeatedReleaseWarning, warn_model
    from dmdidc.inference.clipping import clipping_check

    drawn = [*stats._drawn, release]
    message = None if len(drawn) == 1 or accounted else _repeated_message(drawn)
    clipping = clipping_check(stats)
    noisy = np.asarray(release.mechanism.randomize(stats.to_vector(), rng=rng), dtype=float)
    private = type(stats).from_vector(noisy, like=stats, noise_variance=variance)
    stats._drawn.append(release)
    if clipping.failed:
        # the owner's only chance to see it: the release does not carry the count
        # said before the remedy, which closes the message
        said = dataclasses.replace(clipping, finding=(
            f"{clipping.finding}; the release does not carry the count of clipped values, "
            f"which is the data owner's information: a fit of it cannot report this"))
        warn_model(said.message(), DiagnosticWarning)
    if message is not None:
        warn_model(message, RepeatedReleaseWarning)
    return dataclasses.replace(private, releases=(release,), clipping=None)


def _repeated_message(drawn: list[PrivacyRelease]) -> str:
    """The repeated-release warning for the releases ``drawn`` of the same statistics."""
    from _toolbox.errors import AccountingError

    each = ", ".join(sorted({f"({r.epsilon:.4g}, {r.delta:.3g})" for r in drawn}))
    try:
        together = f"together they are {composed_guarantee(drawn)}"
    except AccountingError as exc:
        together = (f"their composition is not computable ({exc}); together they are at best "
                    f"as private as the least private of them")
    return (f"these plain statistics have now been privatized {len(drawn)} times (fresh noise "
            f"on the same data each time); each release reports only its own guarantee "
            f"({each}), {together}. Release once and reuse the result, or pass "
            f"accounted=True where the composition is accounted for "
            f"(stats.composed_privacy())")


#: Finest first: a release per window or trajectory also protects one time step of it.
_UNIT_ORDER = {"sample": 0, "window": 1, "trajectory": 2}


def composed_guarantee(releases) -> Any:
    """The accountant's guarantee of several releases of the same data, for the finest unit
    among them (a release per window or trajectory protects one time step of it at least as
    well, a smaller window one of a larger; not the other way), at the largest delta among
    them (:class:`privacy.accountant.Guarantee`).

    Parameters
    ----------
    releases : sequence of PrivacyRelease
        At least one.

    Examples
    --------
    >>> from dmdidc import DelayedPlant, SufficientStatistics, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 1000, rng=0)
    >>> stats = SufficientStatistics.from_data(plant.simulate([0.0], U), U, max_delay=2,
    ...                                        state_bound=4.0, input_bound=3.0)
    >>> once = stats.privatize("gaussian", epsilon=1.0, delta=1e-5, rng=0).privacy
    >>> print(composed_guarantee([once] * 10))   # doctest: +ELLIPSIS
    (3.619, 1e-05)-DP for one sample replaced (10 releases; ...)
    """
    from collections import Counter

    from privacy.accountant import Accountant

    releases = list(releases)
    if not releases:
        raise ParameterError("composed_guarantee needs at least one release; got none")
    finest = min(releases, key=lambda r: (_UNIT_ORDER[r.unit], r.window or 0))
    unit = (f"window of {finest.window} time steps" if finest.unit == "window"
            else finest.unit)
    accountant = Accountant(neighboring=finest.neighboring, unit=unit)
    for release, count in Counter(releases).items():      # equal releases composed at once
        accountant = accountant.compose(release.dp_event, count)
    return accountant.guarantee(delta=max(r.delta or 0.0 for r in releases))


def check_mechanism(mechanism: str, alpha: float | None) -> float | None:
    """Refuse an unknown mechanism, SaS without alpha in (0, 2), and alpha with any other
    mechanism (it would do nothing); returns alpha.

    Examples
    --------
    >>> check_mechanism("sas", 1.9), check_mechanism("gaussian", None)
    (1.9, None)
    """
    from privacy.stable import MIN_ALPHA, check_alpha

    if mechanism not in MECHANISMS:
        raise ParameterError(f"mechanism must be one of {MECHANISMS}; got {mechanism!r}")
    if mechanism == "sas":
        if alpha is None:
            raise ParameterError(f"mechanism='sas' needs its stability index, e.g. alpha=1.9 "
                                 f"(accepted: alpha in [{MIN_ALPHA}, 2))")
        return check_alpha(alpha, high_open=True)      # the SaS mechanism's own range
    if alpha is not None:
        raise ParameterError(f"alpha applies to mechanism='sas' only; got alpha={alpha!r} with "
                             f"mechanism={mechanism!r}")
    return None


def check_release_settings(mechanism: str, alpha: float | None, delta: float | None
                           ) -> tuple[float | None, float | None]:
    """:func:`check_mechanism`, and ``delta`` in ``[0, 1)`` (None: pure DP) with ``delta > 0``
    for the Gaussian mechanism; returns ``(alpha, delta)``.  Checked before any work by every
    caller that releases later (a scenario's settings, a household's release).

    Examples
    --------
    >>> check_release_settings("gaussian", None, 1e-5)
    (None, 1e-05)
    >>> try:
    ...     check_release_settings("gaussian", None, 0.0)
    ... except ValueError as exc:
    ...     print(str(exc)[:44])
    the Gaussian mechanism needs delta in (0, 1)
    """
    alpha = check_mechanism(mechanism, alpha)
    if delta is not None:
        delta = check_in_interval("delta", delta, 0.0, 1.0, high_open=True)
    if mechanism == "gaussian" and not delta:
        raise ParameterError(f"the Gaussian mechanism needs delta in (0, 1), e.g. delta=1e-5 "
                             f"(it is never pure epsilon-DP); got delta={delta!r}; use "
                             f"mechanism='laplace' or mechanism='sas' for pure DP")
    return alpha, delta


def describe_release(stats, mechanism: str = "gaussian", *, epsilon: float,
                     delta: float | None = None, unit: str = "sample",
                     window: int | None = None, alpha: float | None = None
                     ) -> tuple[PrivacyRelease, float]:
    """The release :func:`privatize_statistics` makes of statistics like ``stats``, without
    drawing noise: its :class:`PrivacyRelease` and the noise variance per entry.

    It depends only on public facts (layout, bounds, centering and, for some units, the
    trajectory lengths), so a federated server rebuilds each client's release from them.

    Parameters
    ----------
    stats : SufficientStatistics
    mechanism, epsilon, delta, unit, window, alpha
        As in :func:`privatize_statistics`.

    Returns
    -------
    release : PrivacyRelease
    variance : float
        ``inf`` for SaS noise.

    Raises
    ------
    ParameterError
        As :func:`privatize_statistics`.
    """
    alpha, delta = check_release_settings(mechanism, alpha, delta)
    epsilon = check_positive("epsilon", epsilon)
    sens = _release_sensitivity(stats, unit, window)
    calibration = calibrate_release(mechanism, epsilon, delta=delta, alpha=alpha, l1=sens.l1,
                                    l2=sens.l2, dimension=stats.dimension)
    return _describe(calibration, sens, unit, stats.dimension), calibration.variance


def _release_sensitivity(stats, unit: str, window: int | None):
    """The sensitivity a release of ``stats`` is calibrated on; statistics of no sample are
    refused here (their sensitivity is 0, which no mechanism accepts)."""
    if stats.n_samples == 0:
        raise ParameterError(f"the statistics hold no regression samples (empty data: "
                             f"{stats.n_trajectories} trajectory(ies), none with more input "
                             f"samples than max_delay), so there is nothing to release; build "
                             f"them from trajectories longer than max_delay")
    return statistics_sensitivity(stats, unit, window=window)


def _describe(calibration: Calibration, sens, unit: str, dimension: int) -> PrivacyRelease:
    """The :class:`PrivacyRelease` of ``calibration`` on statistics of sensitivity ``sens``."""
    from privacy import GaussianMechanism

    mech, accounted = calibration.mechanism, calibration.accounted
    on_l2 = isinstance(accounted, GaussianMechanism)
    return PrivacyRelease(mechanism=mech, epsilon=float(calibration.epsilon),
                          delta=calibration.delta, unit=unit, window=sens.window,
                          sensitivity=float(sens.l2 if on_l2 else sens.l1),
                          norm="l2" if on_l2 else "l1", dimension=dimension,
                          accountant=calibration.source,
                          dominating=accounted if accounted is not mech else None)
