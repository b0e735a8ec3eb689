"""The accountant: composes mechanism events and answers epsilon or delta, as upper bounds.

:class:`Accountant` is ``dp_accounting``'s ``PrivacyAccountant`` for this package's events
(:mod:`privacy.events`) and ``dp_accounting``'s own: it keeps a ledger of the ``DpEvent``
values that mechanisms describe (:meth:`privacy.mechanisms.Mechanism.to_dp_event`), under one
neighbouring relation and one privacy unit, and answers ``epsilon(delta)`` or
``delta(epsilon)`` for their composition.  Every answer is the smallest of the rigorous upper
bounds that apply (:class:`Guarantee` says which one):

* ``"pld"``: the privacy loss distribution (PLD) composition of the pessimistic
  single-release PLDs (:mod:`privacy.pld`: ``dp_accounting``'s for Gaussian and Laplace, built
  from the noise law for SaS), self-composed per kind of release by FFT squaring with
  pessimistic truncation and composed across kinds (:mod:`privacy.dense`).  Releases
  without a PLD of their own (vector Laplace or SaS, ``(epsilon, delta)`` records) enter a
  composition with other kinds through the PLD of their pure-DP dominating pair.
* ``"gaussian-exact"``: Gaussian releases without subsampling compose exactly to a Gaussian
  with ``mu = sqrt(sum_i (D_i / sigma_i)^2)`` (closed form, any number).
* ``"pure-dp"``: the optimal composition of pure-DP epsilons (amplified by subsampling under
  ``ADD_OR_REMOVE``) through the N-fold randomized response, which dominates every epsilon-DP
  mechanism (:func:`privacy.composition.pure_dp_epsilon`); releases of different epsilons are
  bounded by the largest one.  ``(epsilon, delta)`` records add their deltas as mass at
  infinite loss (Kairouz, Oh and Viswanath 2015).  The only bound for vector Laplace and SaS
  releases alone.
* ``"gaussian-unsampled"``: the same closed form for subsampled Gaussian releases with their
  subsampling ignored (it only helps), the last resort under ``ADD_OR_REMOVE`` when neither a
  PLD nor RDP is computed (a noise multiplier of 1e-300).
* ``"split: ..."``: where no joint bound is finite for a delta target (mixed kinds whose
  joint PLD's round-off, moved to infinite loss, exceeds a delta near ``1e-12``), each kind's
  own best bound (the methods named) at an equal share of the delta, added by basic
  composition (``sum epsilon_g`` at ``sum delta_g``).
* ``"rdp"``: Renyi DP (``dp_accounting.rdp``) for (subsampled) Gaussians when the composed PLD
  would not fit in memory (about ``2**24`` grid points; e.g. ``10**9`` steps), or when the
  mass its truncations move to infinite loss takes more than a tenth of a small target delta
  even after a retry with a smaller truncation budget (a thousand subsampled Gaussians at
  delta = 1e-12: the PLD alone read ``inf``).  A release whose total variation ``q * TV``
  is below 1e-12 gets no PLD (:mod:`privacy.pld`: its pmf would be rounding) and, for a
  Gaussian, the integer-order RDP of Mironov, Talwar and Zhang summed as ``log1p`` of positive
  terms instead of ``dp_accounting``'s (whose divergences come out negative there and read
  epsilon 0: Poisson rate 1e-20, 1e40 releases, true epsilon above 4.3).

References
----------
Seed: composition (2.28), privacy curves (2.36)-(2.38), subsampled PRVs (2.39)-(2.40).
dp_accounting ``privacy_accountant.py`` and ``pld/pld_privacy_accountant.py``.  P. Kairouz,
S. Oh, P. Viswanath, "The composition theorem for differential privacy", ICML 2015.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from _toolbox.errors import AccountingError, ParameterError
from _toolbox.validation import check_in_interval, check_integer, check_positive
from privacy import composition, dense, stable
from privacy.curves import gaussian_delta, gaussian_epsilon
from privacy.events import EpsilonDeltaDpEvent, SaSDpEvent, VectorLaplaceDpEvent
from privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    NeighboringRelation,
    SaSMechanism,
)
from privacy.pld import (
    DEFAULT_DISCRETIZATION,
    MIN_RESOLVED_VARIATION,
    gaussian_equivalent,
    privacy_loss_distribution,
    release_variation,
)

__all__ = ["Accountant", "Guarantee"]

#: Mass the truncations of one composition may move to infinite loss (adds at most this to
#: delta); see :func:`privacy.dense.self_compose`.
_TAIL_MASS_TRUNCATION = 1e-12
#: Share of a target delta the truncated mass may take before the composition is redone with
#: a smaller budget (cut in an early square, it is carried into every later one: 2.5e-11 at a
#: thousand releases, more than a delta of 1e-12, which read epsilon = inf).
_TRUNCATION_SHARE = 0.1
#: Largest composed PLD (grid points of dp_accounting's FFT) the accountant builds.
_MAX_COMPOSED_POINTS = 2 ** 24
_RELATIONS = {
    NeighboringRelation.ADD_OR_REMOVE: privacy_accountant.NeighboringRelation.ADD_OR_REMOVE_ONE,
    NeighboringRelation.REPLACE_ONE: privacy_accountant.NeighboringRelation.REPLACE_ONE,
}
_Details = privacy_accountant.PrivacyAccountant.CompositionErrorDetails


def _check_unit(unit: str) -> None:
    """Refuse a privacy unit that names nothing (a guarantee would read "for one  added")."""
    if not isinstance(unit, str) or not unit.strip():
        raise ParameterError(f"unit must be a non-empty string naming the privacy unit (e.g. "
                             f"'record', 'example', 'household'); got {unit!r}")


@dataclass(frozen=True)
class Guarantee:
    """A composed ``(epsilon, delta)`` upper bound, how it was obtained and for which unit.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee (one of them was the target, the other is the upper bound).
    method : str
        ``"pld"``, ``"gaussian-exact"``, ``"gaussian-unsampled"``, ``"pure-dp"``, ``"rdp"`` or
        ``"split: ..."`` (module docstring);
        ``"none"`` without releases, ``"non-private"`` after a release without noise.
    steps : int
        Releases composed.
    sampling_rate : float
        Poisson sampling probability of the releases (the largest, when they differ).
    neighboring : NeighboringRelation
    unit : str, default "record"
        The privacy unit that neighbouring data sets differ in.

    Examples
    --------
    >>> from privacy import GaussianMechanism
    >>> from privacy.accountant import Accountant
    >>> print(Accountant(unit="example").compose(GaussianMechanism(sigma=4.0), 2).guarantee(
    ...     delta=1e-5))
    (1.356, 1e-05)-DP for one example added or removed (2 releases; upper bound by gaussian-exact)
    """

    epsilon: float
    delta: float
    method: str
    steps: int
    sampling_rate: float
    neighboring: NeighboringRelation
    unit: str = "record"

    def __post_init__(self) -> None:
        # here, not only in Accountant: dataclasses.replace(guarantee, unit=...) comes here too
        _check_unit(self.unit)

    def __str__(self) -> str:
        relation = ("added or removed" if self.neighboring is NeighboringRelation.ADD_OR_REMOVE
                    else "replaced")
        sampled = "" if self.sampling_rate == 1.0 else f", Poisson rate {self.sampling_rate:g}"
        return (f"({self.epsilon:.4g}, {self.delta:.3g})-DP for one {self.unit} {relation} "
                f"({self.steps} releases{sampled}; upper bound by {self.method})")


@dataclass(frozen=True)
class _Leaf:
    """One kind of release in the ledger, normalized to sensitivity 1.

    ``kind`` is ``"gaussian"``, ``"laplace"``, ``"sas"`` (``noise_multiplier``, ``alpha``,
    ``dimension``) or ``"epsilon-delta"`` (``epsilon``, ``delta``).
    """

    kind: str
    sampling_rate: float = 1.0
    noise_multiplier: float = math.nan
    alpha: float = 2.0
    dimension: int = 1
    epsilon: float = math.nan
    delta: float = 0.0

    def mechanism(self) -> Mechanism | None:
        if self.kind == "gaussian":
            return GaussianMechanism(self.noise_multiplier, 1.0, self.dimension)
        if self.kind == "laplace":
            return LaplaceMechanism(self.noise_multiplier, 1.0, self.dimension)
        if self.kind == "sas":
            return SaSMechanism(self.alpha, self.noise_multiplier, 1.0, self.dimension)
        return None


def _check_real(event: Any, name: str, value: Any, low: float, high: float) -> str | None:
    try:
        check_in_interval(name, value, low, high)
    except ParameterError as exc:
        return f"{type(event).__name__}.{exc}"
    return None


def _leaf(event: Any, q: float) -> _Leaf | str | None:
    """The ledger entry for a release event (``"non-private"``, or None when unsupported)."""
    noisy = {dp_event.GaussianDpEvent: "gaussian", dp_event.LaplaceDpEvent: "laplace",
             VectorLaplaceDpEvent: "laplace", SaSDpEvent: "sas"}
    kind = noisy.get(type(event))
    if kind is not None:
        error = _check_real(event, "noise_multiplier", event.noise_multiplier, 0.0, math.inf)
        alpha = getattr(event, "alpha", 2.0)
        error = error or _check_real(event, "alpha", alpha, stable.MIN_ALPHA, 2.0)
        dimension = getattr(event, "dimension", 1)
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            error = error or (f"{type(event).__name__}.dimension must be an integer >= 1; got "
                              f"{dimension!r}")
        if error:
            return error
        if event.noise_multiplier == 0.0:
            return "non-private"
        return _Leaf(kind, q, float(event.noise_multiplier), float(alpha), dimension)
    if isinstance(event, EpsilonDeltaDpEvent):
        error = (_check_real(event, "epsilon", event.epsilon, 0.0, math.inf)
                 if event.epsilon != math.inf else None)
        error = error or _check_real(event, "delta", event.delta, 0.0, 1.0)
        if error:
            return error
        if event.epsilon == math.inf or event.delta == 1.0:
            return "non-private"
        return _Leaf("epsilon-delta", q, epsilon=float(event.epsilon), delta=float(event.delta))
    return None


class Accountant(privacy_accountant.PrivacyAccountant):
    """The one privacy accountant: composes ``DpEvent`` values, answers upper bounds.

    Parameters
    ----------
    neighboring : NeighboringRelation, default ADD_OR_REMOVE
        How neighbouring data sets differ (the events' sensitivities are stated for it).
    unit : str, default "record"
        The privacy unit (a record, an example, a time step, a household's day, ...); every
        :class:`Guarantee` states it.
    discretization : float, optional
        PLD loss grid (default 1e-4, coarser for extreme loss ranges); smaller is tighter and
        slower.
    generic : bool, default False
        Force the generic pessimistic PLD also for Laplace and Gaussian releases (cross-checks).

    Notes
    -----
    Supported events: ``NoOpDpEvent``, ``NonPrivateDpEvent``, ``SelfComposedDpEvent``,
    ``ComposedDpEvent``, ``GaussianDpEvent``, ``LaplaceDpEvent``,
    :class:`~privacy.events.SaSDpEvent`, :class:`~privacy.events.VectorLaplaceDpEvent`,
    :class:`~privacy.events.EpsilonDeltaDpEvent` and ``PoissonSampledDpEvent`` of any of the
    release events.  :meth:`compose` also takes a mechanism (its one-release event).

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> from privacy import GaussianMechanism, LaplaceMechanism
    >>> from privacy.accountant import Accountant
    >>> accountant = Accountant(unit="example")
    >>> step = GaussianMechanism(sigma=1.0).to_dp_event()
    >>> _ = accountant.compose(dp_event.PoissonSampledDpEvent(0.01, step), 1000)
    >>> _ = accountant.compose(LaplaceMechanism(scale=10.0), 5)     # five pure-DP releases
    >>> g = accountant.guarantee(delta=1e-5)
    >>> g.method, g.steps, 2.0 < g.epsilon < 2.3
    ('pld', 1005, True)
    """

    def __init__(self, *, neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                 unit: str = "record", discretization: float | None = None,
                 generic: bool = False):
        if not isinstance(neighboring, NeighboringRelation):
            raise ParameterError(f"neighboring must be a NeighboringRelation; got "
                                 f"{neighboring!r}")
        _check_unit(unit)
        super().__init__(_RELATIONS[neighboring])
        self._neighboring = neighboring
        self._unit = unit
        self._discretization = (None if discretization is None
                                else check_positive("discretization", discretization))
        self._generic = bool(generic)
        self._groups: dict[_Leaf, int] = {}
        self._non_private = False
        self._answers: dict[tuple[str, float], Guarantee] = {}

    # ------------------------------------------------------------------ ledger
    @property
    def neighboring(self) -> NeighboringRelation:
        """The neighbouring relation of every answer."""
        return self._neighboring

    @property
    def unit(self) -> str:
        """The privacy unit of every answer."""
        return self._unit

    @property
    def releases(self) -> int:
        """Number of noisy releases composed so far."""
        return sum(self._groups.values())

    def compose(self, event: Any, count: int = 1) -> Accountant:
        """Add ``count`` adaptive compositions of ``event`` to the ledger; returns ``self``.

        Parameters
        ----------
        event : dp_accounting.dp_event.DpEvent or Mechanism
            A supported event (class notes), or a mechanism (its one-release event).
        count : int, default 1
            ``>= 0``.

        Raises
        ------
        ParameterError
            ``count`` is not an integer ``>= 0`` or ``event`` is not an event.
        AccountingError
            The event (or one inside it) is not supported, or has invalid parameters.
        """
        if isinstance(event, Mechanism):
            event = event.to_dp_event()
        count = check_integer("count", count, minimum=0)
        if not isinstance(event, dp_event.DpEvent):
            raise ParameterError(f"event must be a dp_accounting DpEvent or a mechanism; got "
                                 f"{type(event).__name__}")
        error = self._maybe_compose(event, count, False)
        if error is not None:
            raise AccountingError(f"the accountant cannot compose {error.invalid_event}: "
                                  f"{error.error_message}")
        if count:
            super().compose(event, count)
            self._answers.clear()
        return self

    def _maybe_compose(self, event: dp_event.DpEvent, count: int, do_compose: bool
                       ) -> _Details | None:
        if isinstance(event, dp_event.NoOpDpEvent):
            return None
        if isinstance(event, dp_event.NonPrivateDpEvent):
            self._non_private |= do_compose and count > 0
            return None
        if isinstance(event, dp_event.SelfComposedDpEvent):
            if isinstance(event.count, bool) or not isinstance(event.count, int) \
                    or event.count < 0:
                return _Details(event, f"count must be an integer >= 0; got {event.count!r}")
            return self._maybe_compose(event.event, event.count * count, do_compose)
        if isinstance(event, dp_event.ComposedDpEvent):
            for inner in event.events:
                error = self._maybe_compose(inner, count, do_compose)
                if error is not None:
                    return error
            return None
        q = 1.0
        if isinstance(event, dp_event.PoissonSampledDpEvent):
            error = _check_real(event, "sampling_probability", event.sampling_probability,
                                0.0, 1.0)
            if error:
                return _Details(event, error)
            q, event = float(event.sampling_probability), event.event
            if q == 0.0:
                return None if _leaf(event, 1.0) is not None else _Details(
                    event, "Poisson sampling applies to one release event (Gaussian, Laplace, "
                           "SaS or (epsilon, delta)), not to compositions")
        leaf = _leaf(event, q)
        if leaf is None:
            return _Details(event, "unsupported event (supported: Gaussian, Laplace, SaS, "
                                   "vector Laplace, (epsilon, delta), their Poisson sampling "
                                   "and compositions)")
        if isinstance(leaf, str) and leaf != "non-private":
            return _Details(event, leaf)
        if do_compose and count > 0:
            if leaf == "non-private":
                self._non_private = True
            else:
                self._groups[leaf] = self._groups.get(leaf, 0) + count
        return None

    # ------------------------------------------------------------------ answers
    def guarantee(self, *, delta: float | None = None, epsilon: float | None = None
                  ) -> Guarantee:
        """The composed guarantee for ``delta`` (or for ``epsilon``), with its method and unit.

        Parameters
        ----------
        delta : float, optional
            Target delta in ``[0, 1)`` (0: pure DP; ``inf`` epsilon for Gaussians).
        epsilon : float, optional
            Target epsilon ``> 0``.  Give exactly one of the two.

        Returns
        -------
        Guarantee
            ``epsilon`` an upper bound (maybe ``inf``, never NaN or negative) for the target
            delta, or ``delta`` in ``[0, 1]`` an upper bound for the target epsilon.

        Raises
        ------
        ParameterError
            Not exactly one target, or a target out of range.
        AccountingError
            No method can bound this composition.
        """
        if (delta is None) == (epsilon is None):
            raise ParameterError(f"give exactly one of delta and epsilon; got delta={delta!r}, "
                                 f"epsilon={epsilon!r}")
        if delta is not None:
            key = ("delta", check_in_interval("delta", delta, 0.0, 1.0, high_open=True))
        else:
            key = ("epsilon", check_positive("epsilon", epsilon))
        if key not in self._answers:
            self._answers[key] = self._answer(*key)
        return self._answers[key]

    def epsilon(self, delta: float) -> float:
        """Upper bound on the composed epsilon for ``delta`` in ``[0, 1)``."""
        return self.guarantee(delta=delta).epsilon

    def delta(self, epsilon: float) -> float:
        """Upper bound on the composed delta for ``epsilon > 0``."""
        return self.guarantee(epsilon=epsilon).delta

    def get_epsilon(self, target_delta: float) -> float:
        """``dp_accounting``'s name for :meth:`epsilon`."""
        return self.epsilon(target_delta)

    def get_delta(self, target_epsilon: float) -> float:
        """``dp_accounting``'s name for :meth:`delta`."""
        return self.delta(target_epsilon)

    def _answer(self, target: str, value: float) -> Guarantee:
        steps = self.releases
        rate = max((leaf.sampling_rate for leaf in self._groups), default=1.0)

        def make(eps: float, delta: float, method: str) -> Guarantee:
            return Guarantee(eps, delta, method, steps, rate, self._neighboring, self._unit)
        want_epsilon = target == "delta"
        if self._non_private:
            return (make(math.inf, value, "non-private") if want_epsilon
                    else make(value, 1.0, "non-private"))
        if not self._groups:
            return make(0.0, value, "none") if want_epsilon else make(value, 0.0, "none")
        found = _bounds(self._groups, self._neighboring, self._discretization, self._generic,
                        target_delta=value if want_epsilon else None,
                        target_epsilon=None if want_epsilon else value)
        bound, method = min(found, key=lambda item: item[0])
        if want_epsilon:
            return make(max(0.0, bound), value, method)
        return make(value, min(1.0, max(0.0, bound)), method)


# ----------------------------------------------------------------------------- the bounds


def _pure_epsilon(mechanism: Mechanism, neighboring: NeighboringRelation) -> float:
    """Pure-DP epsilon of one release under the relation (``inf`` if none)."""
    if neighboring is NeighboringRelation.REPLACE_ONE:
        # epsilon grows with the sensitivity (infinite at D when infinite at D / 2): the
        # undoubled one need not be computed first (a certified vector bound, ~0.2 s for SaS)
        return dataclasses.replace(mechanism, sensitivity=2.0 * mechanism.sensitivity).epsilon
    return mechanism.epsilon


def _pure(leaf: _Leaf, neighboring: NeighboringRelation) -> tuple[float, float]:
    """``(epsilon, delta)`` of one (subsampled) release from its pure-DP epsilon."""
    add_remove = neighboring is NeighboringRelation.ADD_OR_REMOVE
    q = leaf.sampling_rate
    if leaf.kind == "epsilon-delta":
        eps, delta = leaf.epsilon, leaf.delta
    else:
        eps, delta = _pure_epsilon(leaf.mechanism(), neighboring), 0.0
    if math.isfinite(eps) and add_remove and q < 1.0:
        return composition.amplified_epsilon(eps, q), q * delta
    return eps, delta


def _pmfs(pld: pld_lib.PrivacyLossDistribution) -> list[dense.DensePmf]:
    """The REMOVE and ADD pmfs of a PLD as dense arrays (one when they coincide)."""
    sides = [pld._pmf_remove] if pld._symmetric else [pld._pmf_remove, pld._pmf_add]  # noqa: SLF001
    return [dense.from_dp_accounting(pmf) for pmf in sides]


def _composed_width(pmf: dense.DensePmf, steps: int) -> float:
    """Rough grid width of ``steps`` compositions: +-8 standard deviations of the sum.

    Only used to skip compositions far beyond memory before spending time on them; the
    convolutions check their exact sizes themselves.
    """
    p = pmf.probs / max(float(np.sum(pmf.probs)), 1e-300)
    index = np.arange(p.size)
    mean = float(index @ p)
    std = math.sqrt(max(float(((index - mean) ** 2) @ p), 0.0))
    return 16.0 * std * math.sqrt(steps) + p.size


def _pld_bound(plds: list[pld_lib.PrivacyLossDistribution], counts: list[int],
               target_delta: float | None, target_epsilon: float | None
               ) -> tuple[float | None, bool]:
    """The PLD bound: dense FFT composition of each side, the worse side's answer.

    Returns ``(bound, full)``: ``bound`` is None when the composition would exceed
    ``_MAX_COMPOSED_POINTS`` grid points; ``full`` is False when the mass the truncations
    moved to infinite loss takes more than ``_TRUNCATION_SHARE`` of the target delta even
    after a retry with a smaller budget (the bound holds but is loose: others may be smaller).
    """
    per_pld = [_pmfs(pld) for pld in plds]
    if sum(_composed_width(sides[0], count) for sides, count in zip(per_pld, counts,
                                                                    strict=True)) \
            > _MAX_COMPOSED_POINTS:
        return None, True
    composed = _composed_sides(per_pld, counts, _TAIL_MASS_TRUNCATION)
    if composed is None:
        return None, True
    cut = max(pmf.infinity_mass for pmf in composed)
    if target_delta is None or cut <= _TRUNCATION_SHARE * target_delta:
        return _read(composed, target_delta, target_epsilon), True
    # a budget that leaves the truncations a hundredth of the delta (cut grows with it); a
    # retry far larger than the first is FFT round-off the budget no longer cuts (1e3
    # subsampled Gaussians: 1.4e5 -> 2.7e7 points, 4 s to refuse): given up at 32 times
    largest = max(pmf.probs.size for pmf in composed)
    finer = _composed_sides(per_pld, counts,
                            _TAIL_MASS_TRUNCATION * 0.1 * _TRUNCATION_SHARE * target_delta / cut,
                            max_points=min(_MAX_COMPOSED_POINTS, 32 * largest))
    first = _read(composed, target_delta, None)
    if finer is None:
        return first, False
    return min(first, _read(finer, target_delta, None)), True


def _composed_sides(per_pld: list[list[dense.DensePmf]], counts: list[int], tail_mass: float,
                    max_points: int = _MAX_COMPOSED_POINTS) -> list[dense.DensePmf] | None:
    """Each side's composed PMF (None when one would exceed ``max_points``)."""
    out = []
    for side in range(max(len(sides) for sides in per_pld)):
        composed = None
        for sides, count in zip(per_pld, counts, strict=True):
            pmf = sides[min(side, len(sides) - 1)]   # symmetric: ADD is REMOVE
            try:
                part = dense.self_compose(pmf, count, tail_mass=tail_mass,
                                          max_points=max_points)
                composed = part if composed is None else dense.compose(
                    composed, part, tail_mass=tail_mass, max_points=max_points)
            except AccountingError:
                return None   # beyond memory: the other bounds answer
        out.append(composed)
    return out


def _read(composed: list[dense.DensePmf], target_delta: float | None,
          target_epsilon: float | None) -> float:
    """The worse side's epsilon (for ``target_delta``) or delta (for ``target_epsilon``)."""
    return max(dense.epsilon_for_delta(pmf, target_delta) if target_delta is not None
               else dense.delta_for_epsilon(pmf, target_epsilon) for pmf in composed)


def _grid(pld: pld_lib.PrivacyLossDistribution) -> float:
    return float(pld._pmf_remove._discretization)  # noqa: SLF001


#: Largest epsilon of an ``(epsilon, delta)`` pair given a PLD: ``exp(epsilon)`` overflows a
#: float beyond 709.78.
_MAX_PAIR_EPSILON = 700.0


def _plds(groups: dict[_Leaf, int], neighboring: NeighboringRelation,
          discretization: float | None, generic: bool
          ) -> list[pld_lib.PrivacyLossDistribution] | None:
    """One pessimistic PLD per kind of release on a common grid (None if one has none)."""
    def build(leaf: _Leaf, h: float | None) -> pld_lib.PrivacyLossDistribution | None:
        mech = leaf.mechanism()
        if mech is not None and (mech.dimension == 1 or gaussian_equivalent(mech) is not None):
            try:
                return privacy_loss_distribution(mech, sampling_rate=leaf.sampling_rate,
                                                 neighboring=neighboring, discretization=h,
                                                 steps_hint=groups[leaf], generic=generic)
            except AccountingError:
                return None   # a loss range beyond any grid: RDP or pure DP bound it
        eps, delta = _pure(leaf, neighboring)
        # alone, the pure-DP bound is the exact composition of this pair; beyond
        # _MAX_PAIR_EPSILON dp_accounting's pair PLD overflows (exp(epsilon), trial 13: a
        # release at epsilon 1e8 composed with a later one): the pure-DP bound covers it
        if not math.isfinite(eps) or len(groups) == 1 or eps > _MAX_PAIR_EPSILON:
            return None
        return pld_lib.from_privacy_parameters(
            pld_common.DifferentialPrivacyParameters(eps, delta),
            value_discretization_interval=h or DEFAULT_DISCRETIZATION)

    plds = [build(leaf, discretization) for leaf in groups]
    if any(p is None for p in plds):
        return None
    grids = {_grid(p) for p in plds}
    if len(grids) > 1:   # a common (the coarsest, still pessimistic) grid for the composition
        plds = [build(leaf, max(grids)) for leaf in groups]
    return plds


def _split_bound(groups: dict[_Leaf, int], neighboring: NeighboringRelation,
                 discretization: float | None, generic: bool, target_delta: float
                 ) -> tuple[float, str] | None:
    """Basic composition of each kind of release's own bound at an equal share of
    ``target_delta``: ``(sum epsilon_g, "split: ...")``, an upper bound because composition of
    ``(epsilon_g, delta_g)``-DP releases is ``(sum epsilon_g, sum delta_g)``-DP, adaptively
    too (Dwork, Rothblum and Vadhan 2010); ``None`` if a kind has no finite bound."""
    share = target_delta / len(groups)
    total, methods = 0.0, []
    for leaf, count in groups.items():
        try:
            value, method = min(_bounds({leaf: count}, neighboring, discretization, generic,
                                        target_delta=share), key=lambda item: item[0])
        except AccountingError:
            return None
        if not math.isfinite(value):
            return None
        total += max(value, 0.0)
        methods.append(method)
    return total, "split: " + " + ".join(methods)


def _pure_bound(groups: dict[_Leaf, int], neighboring: NeighboringRelation,
                target_delta: float | None, target_epsilon: float | None
                ) -> float | None:
    """The pure-DP (randomized-response) bound, or None when a release is not pure DP."""
    pairs = {leaf: _pure(leaf, neighboring) for leaf in groups}
    if not all(math.isfinite(eps) for eps, _ in pairs.values()):
        return None
    steps = sum(groups.values())
    total = math.fsum(eps * groups[leaf] for leaf, (eps, _) in pairs.items())
    eps1 = max(eps for eps, _ in pairs.values())   # every release is eps1-DP
    # mass at infinite loss: 1 - prod (1 - delta_i)^count_i
    log_keep = math.fsum(groups[leaf] * math.log1p(-d) for leaf, (_, d) in pairs.items())
    lost = -math.expm1(log_keep)
    if target_delta is not None:
        if lost == 0.0:
            value = composition.pure_dp_epsilon(eps1, steps=steps, delta=target_delta)
        elif target_delta < lost:
            return math.inf
        else:   # rounded towards a smaller delta for the randomized response: epsilon goes up
            rest = max(0.0, target_delta - lost * (1.0 + 1e-12)) / (1.0 - lost) * (1.0 - 1e-12)
            value = composition.pure_dp_epsilon(eps1, steps=steps, delta=rest)
        return min(value, total)
    if target_epsilon >= total:
        pure = 0.0
    else:
        pure = composition.pure_dp_delta(eps1, steps=steps, epsilon=target_epsilon)
    return pure if lost == 0.0 else min(1.0, (lost + (1.0 - lost) * pure) * (1.0 + 1e-12))


def _gaussian_leaves(groups: dict[_Leaf, int]) -> list[tuple[GaussianMechanism, float, int]]:
    """``(gaussian, q, count)`` of every leaf, or ``[]`` when one is not Gaussian-equivalent."""
    out = []
    for leaf, count in groups.items():
        gaussian = gaussian_equivalent(leaf.mechanism()) if leaf.kind != "epsilon-delta" \
            else None
        if gaussian is None:
            return []
        out.append((gaussian, leaf.sampling_rate, count))
    return out


def _rdp(groups: dict[_Leaf, int], neighboring: NeighboringRelation,
         target_delta: float | None, target_epsilon: float | None) -> float | None:
    """Renyi-DP bound for Gaussian-equivalent releases (None where it does not apply)."""
    leaves = _gaussian_leaves(groups)
    if not leaves:
        return None
    if neighboring is NeighboringRelation.REPLACE_ONE and any(q < 1.0 for _, q, _ in leaves):
        return None
    if any(q < 1.0 and release_variation(g.noise, g.sensitivity, q) < MIN_RESOLVED_VARIATION
           for g, q, _ in leaves):
        # dp_accounting sums terms of 1 - O(q) and O(q) in log space: at q = 1e-20 its
        # divergences come out negative and it returns epsilon 0 (1e40 releases, true ~5)
        return composition.stable_rdp_gaussians(
            [(g.sigma / g.sensitivity, q, count) for g, q, count in leaves],
            target_delta, target_epsilon)
    events = []
    for gaussian, q, count in leaves:
        event = gaussian.to_dp_event()
        if q < 1.0:
            event = dp_event.PoissonSampledDpEvent(q, event)
        events.append(dp_event.SelfComposedDpEvent(event, count))
    try:
        accountant = composition.rdp_accountant(dp_event.ComposedDpEvent(events), neighboring)
        if target_delta is not None:
            return float(accountant.get_epsilon(target_delta))
        return float(min(1.0, accountant.get_delta(target_epsilon)))
    except ArithmeticError:   # noise multipliers near 1e-300 (sigma**2 underflows to 0)
        return None


def _closed_form(leaves: list[tuple[GaussianMechanism, float, int]],
                 neighboring: NeighboringRelation, target_delta: float | None,
                 target_epsilon: float | None) -> float:
    """Exact epsilon (or delta) of the Gaussian releases without their subsampling."""
    shift = 2.0 if neighboring is NeighboringRelation.REPLACE_ONE else 1.0
    if len(leaves) == 1:
        gaussian, _, count = leaves[0]
        mu = math.sqrt(count) * shift * gaussian.sensitivity / gaussian.sigma
    else:
        mu = shift * math.sqrt(math.fsum(count * (g.sensitivity / g.sigma) ** 2
                                         for g, _, count in leaves))
    if target_delta is not None:
        return math.inf if target_delta == 0.0 else gaussian_epsilon(mu, target_delta)
    return gaussian_delta(mu, target_epsilon)


def _bounds(groups: dict[_Leaf, int], neighboring: NeighboringRelation,
            discretization: float | None, generic: bool, *,
            target_delta: float | None = None, target_epsilon: float | None = None
            ) -> list[tuple[float, str]]:
    """All applicable upper bounds (value, method) on epsilon (or delta) for the target."""
    want_epsilon = target_delta is not None
    gaussians = _gaussian_leaves(groups)
    if not generic and gaussians and all(q == 1.0 for _, q, _ in gaussians):
        return [(_closed_form(gaussians, neighboring, target_delta, target_epsilon),
                 "gaussian-exact")]
    found: list[tuple[float, str]] = []
    pure = _pure_bound(groups, neighboring, target_delta, target_epsilon)
    if pure is not None:
        found.append((pure, "pure-dp"))
        if (target_delta == 0.0) if want_epsilon else (pure == 0.0):
            return found  # exact: the largest composed loss
    plds = _plds(groups, neighboring, discretization, generic)
    if plds is not None:
        value, full = _pld_bound(plds, list(groups.values()), target_delta, target_epsilon)
        if value is not None:
            found.insert(0, (value, "pld"))
            if full and math.isfinite(value):
                return found
    rdp = _rdp(groups, neighboring, target_delta, target_epsilon)
    if rdp is not None:
        found.append((rdp, "rdp"))
    if not found and gaussians and neighboring is NeighboringRelation.ADD_OR_REMOVE:
        # subsampling only helps (joint convexity of the hockey-stick divergence): the same
        # releases without it bound these, where no PLD or RDP is computed (sigma = 1e-300 D;
        # REPLACE_ONE beyond the PLD keeps its refusal, which names the remedy)
        found.append((_closed_form(gaussians, neighboring, target_delta, target_epsilon),
                      "gaussian-unsampled"))
    huge = [eps for eps, _ in (_pure(leaf, neighboring) for leaf in groups)
            if math.isfinite(eps) and eps > _MAX_PAIR_EPSILON]
    if not found and huge:
        raise AccountingError(f"a release at epsilon {max(huge):.4g} composed with other "
                              f"releases has no computed bound: beyond epsilon "
                              f"{_MAX_PAIR_EPSILON:g} its privacy loss distribution overflows "
                              f"(and such a release protects nothing); release at a smaller "
                              f"epsilon")
    if want_epsilon and len(groups) > 1 and not any(math.isfinite(v) for v, _ in found):
        # mixed kinds whose joint PLD cannot resolve a small delta (its FFT round-off, moved
        # to infinite loss, exceeds it: 1e4 subsampled SaS and 10 Gaussian releases read inf
        # at delta = 1e-12) and no joint pure-DP or RDP bound: each kind's own bound
        split = _split_bound(groups, neighboring, discretization, generic, target_delta)
        if split is not None:
            found.append(split)
    if not found:
        raise AccountingError(f"{sum(groups.values())} releases exceed the PLD accountant's "
                              f"memory (> {_MAX_COMPOSED_POINTS} grid points) and neither the "
                              f"pure-DP nor dp_accounting's RDP bound applies (RDP: Gaussian "
                              f"releases, no Poisson subsampling under REPLACE_ONE); use fewer "
                              f"steps or ADD_OR_REMOVE")
    return found
