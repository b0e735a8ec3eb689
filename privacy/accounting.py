"""Privacy accounting of one mechanism: N Poisson-subsampled releases, as an upper bound.

:func:`epsilon`, :func:`delta` and :func:`guarantee` are views of the one accountant
(:class:`privacy.accountant.Accountant`) for the common case of ``steps`` Poisson-subsampled
releases of one mechanism: they compose ``PoissonSampledDpEvent(sampling_rate,
mechanism.to_dp_event())`` ``steps`` times and return its answer, the smallest of the rigorous
upper bounds that apply (``"pld"``, ``"gaussian-exact"``, ``"pure-dp"``, ``"rdp"`` or
``"gaussian-unsampled"``; see
:mod:`privacy.accountant`).  Compose different mechanisms, batches and subsampled and plain
releases together with :class:`~privacy.accountant.Accountant` itself.

A batch of ``K`` releases (``randomize`` on shape ``(dimension, K)``) is ``K`` steps:
``steps = mechanism.releases(shape)``.

References
----------
Seed: composition (2.28), privacy curves (2.36)-(2.38), subsampled PRVs (2.39)-(2.40).
See :mod:`privacy.pld` and :mod:`privacy.composition` for the constructions.
"""

from __future__ import annotations

from typing import Any

from dp_accounting import dp_event

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer, check_probability
from privacy.accountant import Accountant, Guarantee
from privacy.mechanisms import Mechanism, NeighboringRelation
from privacy.pld import pessimistic_pld, privacy_loss_distribution

__all__ = ["epsilon", "delta", "guarantee", "Guarantee", "Accountant",
           "privacy_loss_distribution", "pessimistic_pld"]


def _check_common(mechanism: Any, steps: Any, sampling_rate: Any
                  ) -> tuple[int, float]:
    if not isinstance(mechanism, Mechanism):
        raise ParameterError(f"mechanism must be a LaplaceMechanism, GaussianMechanism or "
                             f"SaSMechanism; got {type(mechanism).__name__}")
    steps = check_integer("steps", steps, minimum=1)
    sampling_rate = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    return steps, sampling_rate


def guarantee(mechanism: Mechanism, *, delta: float | None = None,
              epsilon: float | None = None, steps: int = 1, sampling_rate: float = 1.0,
              neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
              discretization: float | None = None, generic: bool = False) -> Guarantee:
    """Composed guarantee for ``delta`` (or for ``epsilon``), with the method that gave it.

    Exactly one of ``delta`` / ``epsilon`` is the target; the other field of the result is the
    upper bound, the smallest over the methods that apply (module docstring).  Other parameters
    as in :func:`epsilon`.

    Raises
    ------
    ParameterError
        Bad arguments, or not exactly one of ``delta`` and ``epsilon``.
    AccountingError
        No method can bound this case.

    Examples
    --------
    >>> from privacy import LaplaceMechanism
    >>> from privacy.accounting import guarantee
    >>> g = guarantee(LaplaceMechanism(scale=1.0, dimension=3), delta=0.0, steps=10)
    >>> g.epsilon, g.method
    (10.0, 'pure-dp')
    """
    steps, q = _check_common(mechanism, steps, sampling_rate)
    accountant = Accountant(neighboring=neighboring, discretization=discretization,
                            generic=generic)
    event = mechanism.to_dp_event()
    if q < 1.0:
        event = dp_event.PoissonSampledDpEvent(sampling_probability=q, event=event)
    return accountant.compose(event, steps).guarantee(delta=delta, epsilon=epsilon)


def epsilon(mechanism: Mechanism, *, delta: float, steps: int = 1, sampling_rate: float = 1.0,
            neighboring: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE,
            discretization: float | None = None, generic: bool = False) -> float:
    """Upper bound on epsilon after ``steps`` Poisson-subsampled releases, for ``delta``.

    Parameters
    ----------
    mechanism : LaplaceMechanism, GaussianMechanism or SaSMechanism
        Description of one release (one query of its ``dimension``).
    delta : float
        Target delta in ``[0, 1)`` (0: pure DP, ``inf`` for Gaussians).
    steps : int, default 1
        Number of composed releases ``N >= 1``; a batch ``(dimension, K)`` counts ``K``.
    sampling_rate : float, default 1.0
        Poisson sampling probability ``q`` in ``(0, 1]``.
    neighboring : NeighboringRelation, default ADD_OR_REMOVE
    discretization : float, optional
        PLD loss grid (default 1e-4, coarser for extreme loss ranges); smaller is tighter and
        slower.
    generic : bool, default False
        Force the generic pessimistic PLD also for Laplace/Gaussian (cross-checks).

    Returns
    -------
    float
        epsilon >= the true value (may be ``inf``, never NaN or negative): the smallest of the
        bounds listed in the module docstring; :func:`guarantee` also says which one.

    Raises
    ------
    ParameterError
        Bad arguments.
    AccountingError
        The accountant cannot bound this case.

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
    return guarantee(mechanism, delta=delta, steps=steps, sampling_rate=sampling_rate,
                     neighboring=neighboring, discretization=discretization,
                     generic=generic).epsilon


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
    return guarantee(mechanism, epsilon=epsilon, steps=steps, sampling_rate=sampling_rate,
                     neighboring=neighboring, discretization=discretization,
                     generic=generic).delta
