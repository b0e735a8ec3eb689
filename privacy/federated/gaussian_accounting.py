"""Composed epsilon of a Gaussian release whose sensitivity may dwarf its noise.

:func:`privacy.accounting.epsilon` discretises the privacy loss on a fixed grid (1e-4); the loss
of a Gaussian with ``r = sensitivity / sigma`` spans about ``r^2``, so a badly protected release
(``r`` in the hundreds, as for the seed's SNR-calibrated noise) would need ~1e9 grid cells.  The
grid is widened in proportion to ``max(1, r^2)``, which keeps the cost constant; the result stays
an upper bound (pessimistic discretisation) whose relative slack stays ~1e-4.
"""

from __future__ import annotations

import math

from privacy import accounting
from privacy.mechanisms import GaussianMechanism, NeighboringRelation

__all__ = ["gaussian_epsilon"]


def gaussian_epsilon(sigma: float, sensitivity: float, *, delta: float, steps: int = 1,
                     neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE
                     ) -> float:
    """Upper bound on epsilon of ``steps`` Gaussian releases (noise ``sigma``, l2 ``sensitivity``).

    Examples
    --------
    >>> eps = gaussian_epsilon(1.0, 100.0, delta=1e-5)      # exact: 5425.51
    >>> 5425.5 < eps < 5428
    True
    """
    mechanism = GaussianMechanism(sigma=sigma, sensitivity=sensitivity)
    ratio = mechanism.sensitivity * math.sqrt(steps) / mechanism.sigma
    return accounting.epsilon(mechanism, delta=delta, steps=steps, neighboring=neighboring,
                              discretization=1e-4 * max(1.0, ratio ** 2))
