"""Pessimistic privacy loss distributions (PLDs) of one (Poisson-subsampled) release.

:func:`privacy_loss_distribution` returns ``dp_accounting``'s native pessimistic PLD where one
exists (Gaussian; Laplace under ADD_OR_REMOVE) and otherwise :func:`pessimistic_pld`, built from
the mechanism's public :class:`~privacy.noise.NoiseLaw` only.  The privacy loss of SaS noise is
bounded and *not monotone* in the outcome, so ``dp_accounting``'s monotone-loss constructors do
not apply.  The outcome line is partitioned into cells; each cell's probability under the upper
(numerator) distribution comes from tail-accurate cell masses and is placed at the *supremum* of
the loss over the cell (endpoints where the loss is monotone, a bounded maximisation plus margin
around each local maximum).  The tails beyond the grid go to the supremum of the loss over the
tail (bounded SaS tails) or to infinity (light tails).  This discrete dominating pair is put on
the loss grid with the pessimistic connect-the-dots construction of Doroshenko et al. (2022)
from its exact hockey-stick values, computed in log space (no overflow for any loss range).
Poisson subsampling enters through the mixture losses ``log(q e^l + 1 - q)`` for REMOVE and
``-log(q e^l' + 1 - q)`` for ADD (``dp_accounting`` keeps the two PLDs and reports the worse).

Both constructions only ever move privacy-loss mass upwards, so by the dominating-pair argument
every value derived from them is an upper bound on the truth.

References
----------
Seed: composition (2.28), privacy curves (2.36)-(2.38), subsampled PRVs (2.39)-(2.40).
Y. Zhu, J. Dong, Y.-X. Wang, "Optimal accounting of differential privacy via characteristic
function", AISTATS 2022 (dominating pairs).  V. Doroshenko et al., "Connect the dots: tighter
discrete approximations of privacy loss distributions", PETS 2022.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from dp_accounting import privacy_accountant
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from _toolbox.errors import AccountingError, ParameterError
from _toolbox.validation import check_positive, check_probability
from privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    NeighboringRelation,
    SaSMechanism,
)
from privacy.noise import NoiseLaw

__all__ = ["privacy_loss_distribution", "pessimistic_pld", "gaussian_equivalent"]

DEFAULT_DISCRETIZATION = 1e-4
#: Largest number of loss-grid points of one release when the discretization is automatic:
#: beyond it (loss ranges above 200, e.g. a Gaussian with sigma < sensitivity / 15) the grid
#: spacing grows with the range; the result stays an upper bound.
_MAX_GRID_POINTS = 2_000_000
#: Largest range of the privacy loss of one release that is put on a PLD grid: at most
#: ``_MAX_GRID_POINTS`` points means a spacing of up to 50, beyond which ``exp(spacing)`` in
#: the connect-the-dots construction nears overflow.  Wider losses (a Gaussian with
#: ``sigma < sensitivity / 1e4``, Laplace or SaS with ``scale < sensitivity / 5e7``) get no
#: PLD; the accountant bounds them by RDP or pure DP instead.
_MAX_LOSS_RANGE = 1e8
#: Automatic grid of a SaS release (alpha < 2): at most this many points (``range / 2e5``).
_AUTO_SAS_POINTS = 200_000
_MAX_CELLS = 3_000_000
_TAIL_MASS = 1e-19


#: Smallest total variation ``q * TV`` of one release that is put on a PLD grid.  The pmf's
#: masses are rounded to ~1e-16 next to the mass at zero loss; below this the rounding decides
#: the composed loss (Poisson rate 1e-20, sigma = 1: dp_accounting's pmf is all at loss 0, and
#: 1e40 such releases read epsilon 0 for a true ~5).  RDP or pure DP bound such releases.
MIN_RESOLVED_VARIATION = 1e-12


def release_variation(law: NoiseLaw, shift: float, q: float) -> float:
    """Total variation ``q * TV(noise, noise + shift)`` of one Poisson-subsampled release."""
    # symmetric unimodal noise: TV(noise, noise + shift) is the mass of (-shift/2, shift/2)
    return q * float(law.cell_masses([-0.5 * shift, 0.5 * shift])[0])


def _check_resolved(law: NoiseLaw, shift: float, q: float, what: str) -> None:
    """Refuse a release too close to no privacy loss for a PLD grid (``AccountingError``)."""
    variation = release_variation(law, shift, q)
    if not variation >= MIN_RESOLVED_VARIATION:
        raise AccountingError(
            f"one {what} release (sampling rate {q:.3g}) changes the output distribution by a "
            f"total variation of {variation:.3g}, below {MIN_RESOLVED_VARIATION:g}: its "
            f"privacy loss distribution would be decided by rounding, so no PLD is built for "
            f"it (the accountant bounds it by Renyi DP or pure DP)")


def gaussian_equivalent(mechanism: Mechanism) -> GaussianMechanism | None:
    """The Gaussian mechanism with the same privacy, or None when there is none.

    A Gaussian of any dimension has the privacy of the scalar Gaussian with the same
    l2-sensitivity (rotation invariance); SaS with alpha = 2 is ``N(0, 2 scale^2)`` and its
    l1-sensitivity bounds the l2 shift.
    """
    if isinstance(mechanism, GaussianMechanism):
        return GaussianMechanism(mechanism.sigma, mechanism.sensitivity)
    if isinstance(mechanism, SaSMechanism) and mechanism.alpha == 2.0:
        return GaussianMechanism(math.sqrt(2.0) * mechanism.scale, mechanism.sensitivity)
    return None


# ----------------------------------------------------------------------------- generic builder


def _loss(law: NoiseLaw, d: float, x: np.ndarray, kind: str, q: float) -> np.ndarray:
    """Privacy loss of the (subsampled) pair for adjacency ``kind`` at noise coordinates x."""
    lp0 = law.logpdf(x)
    logq = math.log(q)
    log1mq = math.log1p(-q) if q < 1.0 else -math.inf
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        upper = lower = 0.0
        if kind in ("remove", "replace"):
            upper = np.logaddexp(logq + law.logpdf(x + d) - lp0, log1mq)
        if kind in ("add", "replace"):
            lower = np.logaddexp(logq + law.logpdf(x - d) - lp0, log1mq)
        return np.asarray(upper - lower, dtype=float)


def _initial_grid(law: NoiseLaw, d: float) -> np.ndarray:
    shift = 2.0 * d
    width = law.tail_bound(_TAIL_MASS) if law.light_tailed else 1e4 * max(law.scale, d)
    core = min(width, 60.0 * max(law.scale, d))
    parts = [np.linspace(-core - shift, core + shift, 4001)]
    if width > core:
        tail = np.geomspace(core, width, 400)
        parts += [-tail - shift, tail + shift]
    return np.unique(np.concatenate(parts))


def _partition(law: NoiseLaw, d: float, kind: str, q: float, tolerance: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive partition: (points, loss at points), the loss varying by at most
    ``tolerance`` between neighbours (or the cell budget spent)."""
    points = _initial_grid(law, d)
    losses = _loss(law, d, points, kind, q)
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
        idx = np.sort(idx)
        mids = 0.5 * (points[idx] + points[idx + 1])
        points = np.insert(points, idx + 1, mids)
        losses = np.insert(losses, idx + 1, _loss(law, d, mids, kind, q))
    return points, losses


def _mirrored(partition: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The partition of the 'add' loss from that of the 'remove' loss.

    The noise is centred and symmetric, so ``L_add(x) = -L_remove(-x)``: the same densities
    at mirrored points (``logpdf`` of ``|x - d|`` and ``|x|``), so the refinement of one is the
    mirror image of the other's and need not be computed twice.
    """
    points, losses = partition
    return -points[::-1], -losses[::-1]


def _cell_suprema(law: NoiseLaw, d: float, kind: str, q: float, tolerance: float,
                  partition: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Adaptive partition (``partition`` if given); returns (points, loss at points, upper
    bound of loss on each cell)."""
    from scipy import optimize

    points, losses = (_partition(law, d, kind, q, tolerance) if partition is None
                      else partition)
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
            lambda t: -float(_loss(law, d, np.array([t]), kind, q)[0]),
            bounds=(lo, hi), method="bounded", options={"xatol": 1e-12 * (hi - lo) + 1e-300})
        top = max(float(-res.fun), float(losses[i]))
        # margin: a full tolerance step covers the location error of the maximiser
        bound = top + tolerance + 1e-12 * max(1.0, abs(top))
        sup[i - 1] = max(sup[i - 1], bound)
        sup[i] = max(sup[i], bound)
    return points, losses, sup


def _discrete_pld(law: NoiseLaw, d: float, kind: str, q: float, tolerance: float,
                  partition: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, float]:
    """Exact dominating discrete PLD ``(mass, loss, mass at +inf)`` for one adjacency kind
    (on ``partition``, see :func:`_cell_suprema`)."""
    points, losses, sup = _cell_suprema(law, d, kind, q, tolerance, partition)
    edges = np.concatenate([[-np.inf], points, [np.inf]])
    masses = law.cell_masses(edges)                   # left tail, cells, right tail
    if kind != "add":  # upper distribution is q mu(x + D) + (1 - q) mu(x)
        masses = q * law.cell_masses(edges + d) + (1.0 - q) * masses
    left, cells, right = masses[0], masses[1:-1], masses[-1]
    infinity_mass = 0.0
    if law.light_tailed:
        infinity_mass += left  # loss unbounded (or not bounded here) on the far left
        mass = np.append(cells, right)
        values = np.append(sup, losses[-1])  # loss decreasing on the right tail
    else:
        # SaS, alpha < 2: the loss tends monotonically to 0 in both tails (Bergstrom expansion)
        mass = np.concatenate([cells, [left, right]])
        values = np.concatenate([sup, [max(losses[0], 0.0), max(losses[-1], 0.0)]])
    missing = 1.0 - float(np.sum(mass)) - infinity_mass
    if missing > 0:
        infinity_mass += missing  # rounding in cdf differences: send it to infinity
    keep = mass > 0
    return mass[keep], values[keep], infinity_mass


def _connect_dots(mass: np.ndarray, loss_values: np.ndarray, infinity_mass: float,
                  discretization: float) -> pld_pmf.PLDPmf:
    """Pessimistic connect-the-dots pmf on the loss grid from an exact discrete PLD.

    ``delta(eps) = sum_{L > eps} w (1 - e^{eps - L}) + infinity_mass`` at every grid epsilon,
    with suffix sums of ``w`` and a suffix log-sum-exp of ``log w - L``: every exponent is
    ``eps - L < 0``, so nothing overflows whatever the range of the losses.
    """
    order = np.argsort(loss_values)
    loss_values, mass = loss_values[order], mass[order]
    k_lo = math.floor(loss_values[0] / discretization) - 1
    k_hi = math.ceil(loss_values[-1] / discretization) + 1
    grid = np.arange(k_lo, k_hi + 1) * discretization
    suffix_w = np.append(np.cumsum(mass[::-1])[::-1], 0.0)
    with np.errstate(divide="ignore"):
        log_terms = np.log(mass) - loss_values
    suffix_log = np.append(np.logaddexp.accumulate(log_terms[::-1])[::-1], -np.inf)
    pos = np.searchsorted(loss_values, grid, side="right")
    with np.errstate(under="ignore"):
        deltas = suffix_w[pos] - np.exp(grid + suffix_log[pos]) + infinity_mass
    deltas = np.minimum.accumulate(np.clip(deltas, 0.0, 1.0))
    return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(
        discretization, int(k_lo), int(k_hi), deltas)


def _pure_loss_bound(mechanism: Mechanism, neighboring: NeighboringRelation, q: float
                     ) -> float:
    """Largest absolute privacy loss of one (subsampled) pure-DP release."""
    if neighboring is NeighboringRelation.REPLACE_ONE:
        return dataclasses.replace(mechanism, sensitivity=2.0 * mechanism.sensitivity).epsilon
    eps = mechanism.epsilon
    # |log(q e^{+-l} + 1 - q)| <= log(q e^eps + 1 - q), in log space (no overflow)
    return eps if q == 1.0 else float(np.logaddexp(math.log(q) + eps, math.log1p(-q)))


def _kinds(neighboring: NeighboringRelation, q: float) -> tuple[str, ...]:
    if neighboring is NeighboringRelation.REPLACE_ONE:
        return ("replace",)
    return ("remove",) if q == 1.0 else ("remove", "add")


def pessimistic_pld(mechanism: Mechanism, *, sampling_rate: float = 1.0,
                    neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                    discretization: float | None = None,
                    cell_tolerance: float | None = None) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of one (subsampled) release built from the noise law only.

    Works for every scalar mechanism of this package (it is the path used for SaS); see the
    module docstring for the construction.

    Parameters
    ----------
    mechanism : Mechanism
        Laplace or SaS of dimension 1, or a Gaussian (any dimension).
    sampling_rate : float, default 1.0
        Poisson sampling probability ``q`` in ``(0, 1]``.
    neighboring : NeighboringRelation
    discretization : float, optional
        Loss grid spacing of the resulting PLD.  Default: 1e-4, or ``range / 2e6`` when the
        single-release loss range exceeds 200 (extreme noise-to-sensitivity ratios), which
        keeps the grid at two million points (SaS with alpha < 2: ``range / 2e5`` beyond 20);
        the result is an upper bound either way.  Values
        needing more than two million points are refused (``ParameterError``).
    cell_tolerance : float, optional
        Largest variation of the loss inside a cell of the outcome partition (tightness only;
        any value gives an upper bound).  Default ``discretization / 10``; never below
        ``1e-6 * range`` (extreme loss ranges would need more cells than are affordable).

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution

    Raises
    ------
    ParameterError
        ``discretization`` so fine that the grid would exceed two million points (the message
        gives the smallest accepted value).
    AccountingError
        A vector Laplace or SaS mechanism (no PLD is built for it), a loss range above 1e8
        (noise far below the sensitivity), a release whose total variation ``q * TV`` is below
        1e-12 (its pmf would be decided by rounding), or a loss that cannot be bounded.
    """
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    gaussian = gaussian_equivalent(mechanism)
    if mechanism.dimension != 1 and gaussian is None:
        raise AccountingError(f"no privacy loss distribution is built for a "
                              f"{type(mechanism).__name__} of dimension {mechanism.dimension}; "
                              f"privacy.accounting.epsilon composes its pure-DP epsilon instead")
    law = (gaussian or mechanism).noise
    d = mechanism.sensitivity
    _check_resolved(law, 2.0 * d if neighboring is NeighboringRelation.REPLACE_ONE else d, q,
                    type(mechanism).__name__)
    kinds = _kinds(neighboring, q)
    probe = _initial_grid(law, d)
    spread = max(float(np.ptp(_loss(law, d, probe, kind, q))) for kind in kinds)
    if gaussian is None:   # pure DP: the loss lies within +-epsilon (the probe may miss a peak)
        spread = max(spread, 2.0 * _pure_loss_bound(mechanism, neighboring, q))
    # SaS (alpha < 2): the loss lies within +-epsilon, so a wide range means a large epsilon,
    # where a relative grid of 1e-5 (and cells of 1e-7 range^2) is tight enough and keeps
    # the build and composition to seconds (scale = 1e-8: 14 s -> 2 s)
    heavy = not law.light_tailed
    h = _grid_spacing(spread, discretization, type(mechanism).__name__,
                      auto_points=_AUTO_SAS_POINTS if heavy else _MAX_GRID_POINTS)
    tol = h / 10.0 if cell_tolerance is None else check_positive("cell_tolerance",
                                                                   cell_tolerance)
    # extreme loss ranges: keep the partition to ~1e6 cells (fewer for wide SaS losses)
    tol = max(tol, 1e-6 * spread, 1e-7 * spread * spread if heavy else 0.0)
    partitions = {kind: _partition(law, d, kind, q, tol) for kind in kinds if kind != "add"}
    if "add" in kinds:   # the mirror image of the remove partition (half the density calls)
        partitions["add"] = _mirrored(partitions["remove"])
    pmfs = [_connect_dots(*_discrete_pld(law, d, kind, q, tol, partitions[kind]), h)
            for kind in kinds]
    return pld_lib.PrivacyLossDistribution(*pmfs)


def _grid_spacing(spread: float, discretization: float | None, what: str, *,
                  auto_points: int = _MAX_GRID_POINTS) -> float:
    """Loss grid spacing for one release whose loss spans ``spread``; refuses what cannot fit.

    ``None`` picks 1e-4, coarser when the grid would exceed ``auto_points`` (still an
    upper bound).  An explicit spacing that needs more points is refused before anything is
    allocated, with the number of points and the accepted range.
    """
    if not spread <= _MAX_LOSS_RANGE:
        raise AccountingError(f"the privacy loss of one {what} release spans {spread:.3g} "
                              f"(more than {_MAX_LOSS_RANGE:.0e}): no privacy loss distribution "
                              f"is built for it (the noise is far below the sensitivity)")
    finest = spread / _MAX_GRID_POINTS
    if discretization is None:
        return max(DEFAULT_DISCRETIZATION, spread / auto_points)
    h = check_positive("discretization", discretization)
    if h < finest:
        raise ParameterError(
            f"discretization={h!r} would put the privacy loss of one {what} release (range "
            f"{spread:.4g}) on {spread / h:.3g} grid points ({8 * spread / h / 2**30:.3g} GiB); "
            f"accepted: discretization >= {finest:.3g} (at most {_MAX_GRID_POINTS:.0e} points) "
            f"or None (automatic)")
    return h


def _tolerance_for(steps: int, discretization: float) -> float:
    return float(min(discretization, max(2e-3 / steps, 2e-7)))


def privacy_loss_distribution(mechanism: Mechanism, *, sampling_rate: float = 1.0,
                              neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
                              discretization: float | None = None,
                              steps_hint: int = 1,
                              generic: bool = False) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of one subsampled release (native ``dp_accounting`` where available).

    ``generic=True`` forces :func:`pessimistic_pld` (used to cross-check the native
    constructors).  ``steps_hint`` tightens the outcome partition for long compositions.
    ``discretization=None`` picks the grid automatically (see :func:`pessimistic_pld`).

    Raises
    ------
    ParameterError
        ``discretization`` finer than the two-million-point grid allows (refused before
        anything is allocated; the message gives the accepted range).
    AccountingError
        The privacy loss of one release spans more than 1e8, or its total variation ``q * TV``
        is below 1e-12 (no PLD is built).
    """
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    relation = privacy_accountant.NeighboringRelation
    gaussian = gaussian_equivalent(mechanism)
    if not generic and gaussian is not None:
        mu = gaussian.sensitivity / gaussian.sigma
        if neighboring is NeighboringRelation.REPLACE_ONE:
            mu *= 2.0
        _check_resolved(gaussian.noise, mu * gaussian.sigma, q, "Gaussian")
        spread = mu * mu + 20.0 * mu          # loss range within dp_accountings's truncation
        h = _grid_spacing(spread, discretization, "Gaussian")
        rel = (relation.REPLACE_ONE if neighboring is NeighboringRelation.REPLACE_ONE
               else relation.ADD_OR_REMOVE_ONE)
        return pld_lib.from_gaussian_mechanism(
            gaussian.sigma, sensitivity=gaussian.sensitivity, sampling_prob=q,
            value_discretization_interval=h, neighboring_relation=rel)
    if (not generic and isinstance(mechanism, LaplaceMechanism) and mechanism.dimension == 1
            and neighboring is NeighboringRelation.ADD_OR_REMOVE):
        _check_resolved(mechanism.noise, mechanism.sensitivity, q, "Laplace")
        h = _grid_spacing(2.0 * mechanism.epsilon, discretization, "Laplace")
        return pld_lib.from_laplace_mechanism(
            mechanism.scale, sensitivity=mechanism.sensitivity, sampling_prob=q,
            value_discretization_interval=h)
    h_tol = DEFAULT_DISCRETIZATION if discretization is None else discretization
    return pessimistic_pld(mechanism, sampling_rate=q, neighboring=neighboring,
                           discretization=discretization,
                           cell_tolerance=_tolerance_for(steps_hint, h_tol))
