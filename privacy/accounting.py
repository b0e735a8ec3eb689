"""Privacy accounting: N-fold composition with Poisson subsampling, always as an upper bound.

:func:`epsilon` and :func:`delta` compose ``steps`` Poisson-subsampled releases of one mechanism
with ``dp_accounting``'s privacy loss distribution (PLD) machinery and return pessimistic
(never under-reported) values.

* Laplace and Gaussian under ADD_OR_REMOVE use ``dp_accounting``'s native pessimistic
  constructors (Gaussian also under REPLACE_ONE).
* Every other case, in particular SaS, uses :func:`pessimistic_pld`: the privacy loss of SaS noise
  is bounded and *not monotone* in the outcome, so ``dp_accounting``'s monotone-loss constructors
  do not apply.  The outcome line is partitioned into cells; each cell's probability under the
  upper (numerator) distribution comes from cdf/sf differences and is placed at the *supremum* of
  the loss over the cell (endpoints where the loss is monotone, a bounded maximisation plus margin
  around each local maximum).  The tails beyond the grid go to the supremum of the loss over the
  tail (bounded SaS tails) or to infinity (light tails).  This discrete dominating pair is then
  put on the loss grid with the pessimistic connect-the-dots construction of Doroshenko et al.
  (2022) from its exact hockey-stick values, and composed by ``dp_accounting``.  Poisson
  subsampling enters through the mixture losses ``log(q e^l + 1 - q)`` for REMOVE and
  ``-log(q e^l' + 1 - q)`` for ADD (``dp_accounting`` keeps the two PLDs and reports the worse).

Both constructions only ever move privacy-loss mass upwards, so by the dominating-pair argument
every returned epsilon/delta is an upper bound on the true value (up to floating-point rounding in
cdf differences, which is absorbed by sending missing mass to infinity).

References
----------
Seed: composition (2.28), privacy curves (2.36)-(2.38), subsampled PRVs (2.39)-(2.40).
Y. Zhu, J. Dong, Y.-X. Wang, "Optimal accounting of differential privacy via characteristic
function", AISTATS 2022 (dominating pairs).  V. Doroshenko et al., "Connect the dots: tighter
discrete approximations of privacy loss distributions", PETS 2022.  S. Meiser and E. Mohammadi,
"Tight on budget? Tight bounds for r-fold approximate differential privacy", CCS 2018 (privacy
buckets).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from dp_accounting import privacy_accountant
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import optimize

from privacy.errors import AccountingError, ParameterError
from privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    NeighboringRelation,
    SaSMechanism,
)
from privacy.validation import check_in_interval, check_integer, check_positive, check_probability

__all__ = ["epsilon", "delta", "privacy_loss_distribution", "pessimistic_pld"]

Mechanism = LaplaceMechanism | GaussianMechanism | SaSMechanism

_DEFAULT_DISCRETIZATION = 1e-4
_MAX_CELLS = 3_000_000
_TAIL_MASS_TRUNCATION = 1e-15


def _check_common(mechanism: Any, steps: Any, sampling_rate: Any, neighboring: Any
                  ) -> tuple[int, float, NeighboringRelation]:
    if not isinstance(mechanism, (LaplaceMechanism, GaussianMechanism, SaSMechanism)):
        raise ParameterError(f"mechanism must be a LaplaceMechanism, GaussianMechanism or "
                             f"SaSMechanism; got {type(mechanism).__name__}")
    steps = check_integer("steps", steps, minimum=1)
    sampling_rate = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    if not isinstance(neighboring, NeighboringRelation):
        raise ParameterError(f"neighboring must be a NeighboringRelation; got {neighboring!r}")
    if isinstance(mechanism, SaSMechanism) and mechanism.dimension != 1:
        raise AccountingError(f"PLD accounting of SaS is implemented for dimension 1; got "
                              f"dimension={mechanism.dimension} (use its pure-DP epsilon with "
                              f"privacy.composition.simple_composition)")
    return steps, sampling_rate, neighboring


# ----------------------------------------------------------------------------- generic builder


def _loss(mechanism: Mechanism, x: np.ndarray, kind: str, q: float) -> np.ndarray:
    """Privacy loss of the (subsampled) pair for adjacency ``kind`` at noise coordinates x."""
    d = mechanism.sensitivity
    lp0 = mechanism._logpdf(x)
    logq = math.log(q)
    log1mq = math.log1p(-q) if q < 1.0 else -math.inf
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if kind in ("remove", "replace"):
            a = mechanism._logpdf(x + d) - lp0
            upper = np.logaddexp(logq + a, log1mq)
        else:
            upper = 0.0
        if kind in ("add", "replace"):
            b = mechanism._logpdf(x - d) - lp0
            lower = np.logaddexp(logq + b, log1mq)
        else:
            lower = 0.0
        return np.asarray(upper - lower, dtype=float)


def _noise_interval_masses(mechanism: Mechanism, points: np.ndarray) -> tuple[np.ndarray, float,
                                                                             float]:
    """Masses of the cells between consecutive points, and of the two tails."""
    cdf = np.asarray(mechanism._cdf(points), dtype=float)
    sf = np.asarray(mechanism._sf(points), dtype=float)
    lo, hi = points[:-1], points[1:]
    left = cdf[1:] - cdf[:-1]
    right = sf[:-1] - sf[1:]
    middle = 1.0 - cdf[:-1] - sf[1:]
    cells = np.where(hi <= 0, left, np.where(lo >= 0, right, middle))
    return np.maximum(cells, 0.0), float(cdf[0]), float(sf[-1])


def _cell_suprema(mechanism: Mechanism, kind: str, q: float, tolerance: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Adaptive partition; returns (points, loss at points, upper bound of loss on each cell)."""
    d = mechanism.sensitivity
    shift = 2.0 * d
    width = mechanism._grid_halfwidth()
    core = min(width, 60.0 * max(getattr(mechanism, "scale", 0.0),
                                 getattr(mechanism, "sigma", 0.0), d))
    parts = [np.linspace(-core - shift, core + shift, 4001)]
    if width > core:
        tail = np.geomspace(core, width, 400)
        parts += [-tail - shift, tail + shift]
    points = np.unique(np.concatenate(parts))
    losses = _loss(mechanism, points, kind, q)
    for _ in range(60):
        jumps = np.abs(np.diff(losses))
        need = jumps > tolerance
        if not np.any(need) or points.size > _MAX_CELLS:
            break
        idx = np.nonzero(need)[0]
        if points.size + idx.size > _MAX_CELLS:
            # refine the worst cells only; the result stays a valid (looser) upper bound
            idx = idx[np.argsort(jumps[idx])[::-1][: _MAX_CELLS - points.size]]
            if idx.size == 0:
                break
        mids = 0.5 * (points[idx] + points[idx + 1])
        mid_losses = _loss(mechanism, mids, kind, q)
        order = np.argsort(np.concatenate([points, mids]), kind="stable")
        points = np.concatenate([points, mids])[order]
        losses = np.concatenate([losses, mid_losses])[order]
    if not np.all(np.isfinite(losses)):
        raise AccountingError("privacy loss evaluation returned non-finite values on the grid")
    sup = np.maximum(losses[:-1], losses[1:])
    # local maxima of the sampled loss: the true maximum may lie inside an adjacent cell
    inner = losses[1:-1]
    peaks = np.nonzero(((inner > losses[:-2]) & (inner >= losses[2:]))
                       | ((inner >= losses[:-2]) & (inner > losses[2:])))[0] + 1
    # peaks of negligible prominence are floating-point wiggles of a flat loss (e.g. Laplace):
    # a margin of 10x the prominence bound covers them; real peaks get a bounded maximisation
    scale = np.maximum(1.0, np.abs(losses[peaks]))
    prominence = losses[peaks] - np.minimum(losses[peaks - 1], losses[peaks + 1])
    flat = prominence <= 1e-13 * scale
    for i, margin in zip(peaks[flat], 1e-12 * scale[flat], strict=True):
        sup[i - 1] = max(sup[i - 1], losses[i] + margin)
        sup[i] = max(sup[i], losses[i] + margin)
    peaks = peaks[~flat]
    if peaks.size > 200:
        raise AccountingError(f"the privacy loss has {peaks.size} local maxima on the grid; "
                              f"cannot bound it reliably")
    for i in peaks:
        lo, hi = points[i - 1], points[i + 1]
        res = optimize.minimize_scalar(
            lambda t: -float(_loss(mechanism, np.array([t]), kind, q)[0]),
            bounds=(lo, hi), method="bounded", options={"xatol": 1e-12 * (hi - lo) + 1e-300})
        top = max(float(-res.fun), float(losses[i]))
        # margin: a full tolerance step covers the location error of the maximiser
        bound = top + tolerance + 1e-12 * max(1.0, abs(top))
        sup[i - 1] = max(sup[i - 1], bound)
        sup[i] = max(sup[i], bound)
    return points, losses, sup


def _single_pmf(mechanism: Mechanism, kind: str, q: float, discretization: float,
                tolerance: float) -> pld_pmf.PLDPmf:
    """Pessimistic PLD pmf for one adjacency type (``'add'``, ``'remove'`` or ``'replace'``)."""
    d = mechanism.sensitivity
    points, losses, sup = _cell_suprema(mechanism, kind, q, tolerance)
    cells0, left0, right0 = _noise_interval_masses(mechanism, points)
    if kind == "add":
        cells, left, right = cells0, left0, right0
    else:  # upper distribution is q mu(x + D) + (1 - q) mu(x)
        cells1, left1, right1 = _noise_interval_masses(mechanism, points + d)
        cells = q * cells1 + (1.0 - q) * cells0
        left = q * left1 + (1.0 - q) * left0
        right = q * right1 + (1.0 - q) * right0
    infinity_mass = 0.0
    masses = [cells]
    values = [sup]
    if mechanism._light_tailed:
        infinity_mass += left  # loss unbounded (or not bounded here) on the far left
        masses.append(np.array([right]))
        values.append(np.array([losses[-1]]))  # loss decreasing on the right tail
    else:
        # SaS, alpha < 2: the loss tends monotonically to 0 in both tails (Bergstrom expansion)
        masses.append(np.array([left, right]))
        values.append(np.array([max(losses[0], 0.0), max(losses[-1], 0.0)]))
    mass = np.concatenate(masses)
    loss_values = np.concatenate(values)
    missing = 1.0 - float(np.sum(mass)) - infinity_mass
    if missing > 0:
        infinity_mass += missing  # rounding in cdf differences: send it to infinity
    keep = mass > 0
    mass, loss_values = mass[keep], loss_values[keep]
    return _connect_dots(mass, loss_values, infinity_mass, discretization)


def _connect_dots(mass: np.ndarray, loss_values: np.ndarray, infinity_mass: float,
                  discretization: float) -> pld_pmf.PLDPmf:
    """Pessimistic connect-the-dots pmf on the loss grid from an exact discrete PLD."""
    order = np.argsort(loss_values)
    loss_values, mass = loss_values[order], mass[order]
    k_lo = math.floor(loss_values[0] / discretization) - 1
    k_hi = math.ceil(loss_values[-1] / discretization) + 1
    grid = np.arange(k_lo, k_hi + 1) * discretization
    # delta(eps) = sum_{L > eps} w (1 - e^{eps - L}) + infinity_mass, via suffix sums
    shift = loss_values[-1]
    suffix_w = np.concatenate([np.cumsum(mass[::-1])[::-1], [0.0]])
    suffix_we = np.concatenate([np.cumsum((mass * np.exp(shift - loss_values))[::-1])[::-1],
                                [0.0]])
    pos = np.searchsorted(loss_values, grid, side="right")
    deltas = suffix_w[pos] - np.exp(grid - shift) * suffix_we[pos] + infinity_mass
    deltas = np.clip(deltas, 0.0, 1.0)
    deltas = np.minimum.accumulate(deltas)
    return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(
        discretization, int(k_lo), int(k_hi), deltas)


def _default_tolerance(steps: int, discretization: float) -> float:
    return float(min(discretization, max(2e-3 / steps, 2e-7)))


def pessimistic_pld(mechanism: Mechanism, *, sampling_rate: float = 1.0,
                    neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                    discretization: float = _DEFAULT_DISCRETIZATION,
                    cell_tolerance: float | None = None) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of one (subsampled) release built from the noise law only.

    Works for any mechanism of this package (it is the path used for SaS); see the module
    docstring for the construction.

    Parameters
    ----------
    mechanism : LaplaceMechanism, GaussianMechanism or SaSMechanism
    sampling_rate : float, default 1.0
        Poisson sampling probability ``q`` in ``(0, 1]``.
    neighboring : NeighboringRelation
    discretization : float, default 1e-4
        Loss grid spacing of the resulting PLD.
    cell_tolerance : float, optional
        Largest variation of the loss inside a cell of the outcome partition (tightness only;
        any value gives an upper bound).  Default ``discretization / 10``; the accountant uses
        ``min(discretization, max(2e-3 / steps, 2e-7))`` so that the composed bias stays small.

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
    """
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    h = check_positive("discretization", discretization)
    tol = h / 10.0 if cell_tolerance is None else check_positive("cell_tolerance",
                                                                   cell_tolerance)
    if neighboring is NeighboringRelation.REPLACE_ONE:
        return pld_lib.PrivacyLossDistribution(_single_pmf(mechanism, "replace", q, h, tol))
    remove = _single_pmf(mechanism, "remove", q, h, tol)
    if q == 1.0:
        return pld_lib.PrivacyLossDistribution(remove)
    add = _single_pmf(mechanism, "add", q, h, tol)
    return pld_lib.PrivacyLossDistribution(remove, add)


def privacy_loss_distribution(mechanism: Mechanism, *, sampling_rate: float = 1.0,
                              neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                              discretization: float = _DEFAULT_DISCRETIZATION,
                              steps_hint: int = 1,
                              generic: bool = False) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of one subsampled release (native ``dp_accounting`` where available).

    ``generic=True`` forces :func:`pessimistic_pld` (used to cross-check the native
    constructors).  ``steps_hint`` tightens the outcome partition for long compositions.
    """
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    relation = privacy_accountant.NeighboringRelation
    if not generic:
        if isinstance(mechanism, GaussianMechanism) or (
                isinstance(mechanism, SaSMechanism) and mechanism.alpha == 2.0):
            sigma = (mechanism.sigma if isinstance(mechanism, GaussianMechanism)
                     else math.sqrt(2.0) * mechanism.scale)
            rel = (relation.REPLACE_ONE if neighboring is NeighboringRelation.REPLACE_ONE
                   else relation.ADD_OR_REMOVE_ONE)
            return pld_lib.from_gaussian_mechanism(
                sigma, sensitivity=mechanism.sensitivity, sampling_prob=q,
                value_discretization_interval=discretization, neighboring_relation=rel)
        if (isinstance(mechanism, LaplaceMechanism)
                and neighboring is NeighboringRelation.ADD_OR_REMOVE):
            return pld_lib.from_laplace_mechanism(
                mechanism.scale, sensitivity=mechanism.sensitivity, sampling_prob=q,
                value_discretization_interval=discretization)
    return pessimistic_pld(mechanism, sampling_rate=q, neighboring=neighboring,
                           discretization=discretization,
                           cell_tolerance=_default_tolerance(steps_hint, discretization))


def _pure_bound(mechanism: Mechanism, steps: int, q: float,
                neighboring: NeighboringRelation) -> float:
    """Composed pure-DP epsilon (simple composition after subsampling amplification)."""
    if isinstance(mechanism, GaussianMechanism):
        return math.inf
    if isinstance(mechanism, SaSMechanism) and mechanism.alpha == 2.0:
        return math.inf
    if neighboring is NeighboringRelation.REPLACE_ONE:
        # shift 2 D; a ratio of two q-mixtures sharing the component mu(x) is at most the
        # ratio of the other components, so no amplification is claimed here
        return steps * (2.0 * mechanism.epsilon if isinstance(mechanism, LaplaceMechanism)
                        else SaSMechanism(mechanism.alpha, mechanism.scale,
                                          2.0 * mechanism.sensitivity).epsilon)
    eps1 = mechanism.epsilon
    if q < 1.0:
        eps1 = float(np.logaddexp(eps1 + math.log(q), math.log1p(-q)))  # log(1 + q(e^eps - 1))
    if steps == 1 and q == 1.0:
        return eps1
    return steps * eps1 * (1.0 + 1e-13)  # covers rounding of the product and the logaddexp


def _composed(mechanism: Mechanism, steps: int, q: float, neighboring: NeighboringRelation,
              discretization: float | None, generic: bool) -> pld_lib.PrivacyLossDistribution:
    h = _DEFAULT_DISCRETIZATION if discretization is None else check_positive(
        "discretization", discretization)
    single = privacy_loss_distribution(mechanism, sampling_rate=q, neighboring=neighboring,
                                       discretization=h, steps_hint=steps, generic=generic)
    return single.self_compose(steps, tail_mass_truncation=_TAIL_MASS_TRUNCATION) \
        if steps > 1 else single


def epsilon(mechanism: Mechanism, *, delta: float, steps: int = 1, sampling_rate: float = 1.0,
            neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
            discretization: float | None = None, generic: bool = False) -> float:
    """Upper bound on epsilon after ``steps`` Poisson-subsampled releases, for ``delta``.

    Parameters
    ----------
    mechanism : LaplaceMechanism, GaussianMechanism or SaSMechanism
        Description of one release (scalar query for SaS).
    delta : float
        Target delta in ``[0, 1)``.
    steps : int, default 1
        Number of composed releases ``N >= 1``.
    sampling_rate : float, default 1.0
        Poisson sampling probability ``q`` in ``(0, 1]``.
    neighboring : NeighboringRelation, default ADD_OR_REMOVE
    discretization : float, optional
        PLD loss grid (default 1e-4); smaller is tighter and slower.
    generic : bool, default False
        Force the generic pessimistic construction also for Laplace/Gaussian.

    Returns
    -------
    float
        epsilon >= the true value (may be ``inf``, never NaN or negative).  For pure-DP
        mechanisms the result is also capped by simple composition of the amplified epsilon.

    Raises
    ------
    ParameterError
        Bad arguments.
    AccountingError
        The accountant cannot bound this case (e.g. vector SaS).

    Examples
    --------
    >>> from privacy import GaussianMechanism
    >>> from privacy.accounting import epsilon
    >>> eps = epsilon(GaussianMechanism(sigma=1.0), delta=1e-5, steps=1000, sampling_rate=0.01)
    >>> 1.8 < eps < 1.9
    True

    References
    ----------
    Seed Sec. 2.6.4, 2.7 (eqs. 2.36-2.40).
    """
    steps, q, neighboring = _check_common(mechanism, steps, sampling_rate, neighboring)
    delta = check_in_interval("delta", delta, 0.0, 1.0, high_open=True)
    pure = _pure_bound(mechanism, steps, q, neighboring)
    composed = _composed(mechanism, steps, q, neighboring, discretization, generic)
    value = float(composed.get_epsilon_for_delta(delta))
    if math.isnan(value):
        raise AccountingError("dp_accounting returned NaN for epsilon")
    return max(0.0, min(value, pure))


def delta(mechanism: Mechanism, *, epsilon: float, steps: int = 1, sampling_rate: float = 1.0,
          neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
          discretization: float | None = None, generic: bool = False) -> float:
    """Upper bound on delta after ``steps`` Poisson-subsampled releases, for ``epsilon``.

    Same parameters as :func:`epsilon` with ``epsilon > 0`` instead of ``delta``; returns a value
    in ``[0, 1]`` (exactly 0 when ``epsilon`` exceeds the composed pure-DP bound).

    Examples
    --------
    >>> from privacy import SaSMechanism
    >>> from privacy.accounting import delta
    >>> delta(SaSMechanism(alpha=1.0, scale=1.0), epsilon=1.0) == 0.0
    True
    """
    steps, q, neighboring = _check_common(mechanism, steps, sampling_rate, neighboring)
    eps = check_positive("epsilon", epsilon)
    if eps >= _pure_bound(mechanism, steps, q, neighboring):
        return 0.0
    composed = _composed(mechanism, steps, q, neighboring, discretization, generic)
    value = float(composed.get_delta_for_epsilon(eps))
    if math.isnan(value):
        raise AccountingError("dp_accounting returned NaN for delta")
    return min(1.0, max(0.0, value))
