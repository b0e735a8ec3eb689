"""The inputs' scaling, and inputs that output identification cannot tell apart.

**Scaling.**  The fit divides each input by its spread (:func:`input_scale`) and returns
``B_c`` and ``D`` in the given units: the canonical variates, the least-squares steps and the
effect test all decide by thresholds relative to the largest entry, which read an input in
units 1e8 smaller than another's as without effect (a trial: order wrong on 4 of 8 plants,
"no significant effect" on 8 of 8; at 1e4 apart two false "delay not determined").

**Collinear or copied input channels.**

Each channel acts through its own input vector and delay; when the channels' inputs are
linearly dependent (one input a multiple of another, or of a combination of others) or one is
a delayed copy of another, their gains and delays trade against each other along that
dependence, and the fit returns one of infinitely many equally good answers with intervals as
tight as if it were determined (a trial: two channels with ``u_2 = 2 u_1`` got each other's
delays, silently).  :class:`~dmdidc.DMDidc` refuses such data by the rank of its regressors
(every lag ``0 .. R`` of every input is a regressor there).  The output model has only a few
parameters per channel, so inputs that are merely poor in frequencies (a multisine of fewer
lines than lags, shared by the channels) may still identify it, and are left to the fit's
precision and residual checks; dependent or copied channels never do, and are refused here,
before any fit.
"""

from __future__ import annotations

import numpy as np

from dmdidc.errors import InsufficientExcitationError
from dmdidc.trajectories import HELD_RTOL

__all__ = ["COLLINEAR_RTOL", "input_scale", "pooled_spread", "refuse_collinear_inputs",
           "scale_from_spread"]

#: Dependence below this share: exactly collinear inputs give ~1e-16; a second input that is
#: the first plus 1 % of an independent signal ~1e-4 (identifiable, and the fit is right).
COLLINEAR_RTOL = 1e-10

_REMEDY = ("so their gains and delays trade against each other and any fit would be one of "
           "many equally good ones. Excite each input independently (e.g. random_excitation), "
           "or leave out the redundant channel")


def pooled_spread(signals: list[np.ndarray]) -> np.ndarray:
    """Each row's standard deviation about each experiment's mean, pooled over the
    experiments' ``signals`` (zero for a row without variation).

    Examples
    --------
    >>> pooled_spread([np.array([[1.0, 3.0]]), np.array([[10.0, 12.0]])]).tolist()
    [1.0]
    """
    deviations = sum(np.sum((S - S.mean(axis=1, keepdims=True)) ** 2, axis=1)
                     for S in signals)
    return np.sqrt(deviations / sum(S.shape[1] for S in signals))


def scale_from_spread(spread: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """The inputs' scaling from their pooled ``spread`` and largest ``magnitude``: the
    spread, or the magnitude for an input held at one value (its spread rounding: dividing
    by it would blow the rounding up to a signal), or 1 for one held at zero."""
    held = spread <= HELD_RTOL * magnitude
    return np.where(held, np.where(magnitude > 0, magnitude, 1.0),
                    np.where(spread > 0, spread, 1.0))


def input_scale(inputs: list[np.ndarray]) -> np.ndarray:
    """Each input's scaling in the fit (module notes), (m,).

    Examples
    --------
    >>> input_scale([np.array([[1e8, -1e8, 1e8], [5.0, 5.0, 5.0], [0.0, 0.0, 0.0]])])
    array([9.42809042e+07, 5.00000000e+00, 1.00000000e+00])
    """
    magnitude = np.max([np.max(np.abs(U), axis=1, initial=0.0) for U in inputs], axis=0)
    return scale_from_spread(pooled_spread(inputs), magnitude)


def refuse_collinear_inputs(inputs: list[np.ndarray], max_delay: int) -> None:
    """Raise when the input channels are linearly dependent or one is a delayed copy of
    another (by ``1 .. R`` samples) over the data.

    The inputs are taken about each experiment's mean.  Dependent: the smallest eigenvalue
    of the channels' correlation matrix is below ``COLLINEAR_RTOL`` times the largest.  A
    copy: ``1 - |rho| < COLLINEAR_RTOL`` for the correlation ``rho`` of ``u_a,k`` and
    ``u_b,k-d`` over the samples both have (summed over the experiments).  Inputs that never
    move are left to the estimator's other checks (they act on nothing).

    Parameters
    ----------
    inputs : list of ndarray, shape (m, K_i)
        Each experiment's inputs.
    max_delay : int
        ``R``: copies by up to ``R`` samples.

    Raises
    ------
    InsufficientExcitationError
        Naming the channels (and the shift of a copy).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> u = rng.standard_normal((1, 500))
    >>> refuse_collinear_inputs([np.vstack([u, rng.standard_normal((1, 500))])], 2)
    >>> try:
    ...     refuse_collinear_inputs([np.vstack([u, 2.0 * u])], 2)
    ... except InsufficientExcitationError as exc:
    ...     print(str(exc)[:50])
    the inputs are linearly dependent: channels [0, 1]
    """
    m, R = inputs[0].shape[0], max_delay
    if m < 2:
        return
    centred = [U - U.mean(axis=1, keepdims=True) for U in inputs if U.shape[1] > 0]
    gram = sum(U @ U.T for U in centred)
    scale = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    moving = np.flatnonzero(scale > 0)
    if moving.size < 2:
        return
    correlation = gram[np.ix_(moving, moving)] / np.outer(scale[moving], scale[moving])
    values, vectors = np.linalg.eigh(correlation)
    if values[0] <= COLLINEAR_RTOL * values[-1]:
        weights = np.abs(vectors[:, 0])
        channels = moving[weights > 0.1 * weights.max()].tolist()
        raise InsufficientExcitationError(
            f"the inputs are linearly dependent: channels {channels} combine to zero over the "
            f"data (smallest eigenvalue {values[0]:.3g} of their correlation, tolerance "
            f"{COLLINEAR_RTOL:g} x the largest {values[-1]:.3g}), {_REMEDY}")
    for d in range(1, R + 1):
        products, energy_late, energy_early = 0.0, 0.0, 0.0
        for U in centred:
            if U.shape[1] > d + 1:      # u_k (later) against u_{k-d} (earlier), each about
                late = U[:, d:] - U[:, d:].mean(axis=1, keepdims=True)   # its own mean there
                early = U[:, :-d] - U[:, :-d].mean(axis=1, keepdims=True)
                products = products + late @ early.T
                energy_late = energy_late + np.einsum("ik,ik->i", late, late)
                energy_early = energy_early + np.einsum("ik,ik->i", early, early)
        if np.isscalar(products):
            break
        norms = np.sqrt(np.outer(energy_late, energy_early))
        rho = np.divide(products, norms, out=np.zeros_like(products), where=norms > 0)
        np.fill_diagonal(rho, 0.0)            # a channel against its own past: not a copy
        copied = np.argwhere(1.0 - np.abs(rho) < COLLINEAR_RTOL)
        if copied.size:
            a, b = (int(i) for i in copied[0])
            raise InsufficientExcitationError(
                f"input {a} is input {b} delayed by {d} sample(s) over the data (correlation "
                f"{rho[a, b]:.10g}): channels {sorted((a, b))} are copies, {_REMEDY}")
