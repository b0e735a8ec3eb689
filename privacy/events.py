"""Mechanism events: what a release did, in ``dp_accounting``'s ``DpEvent`` language.

A mechanism adds noise and *describes* its release as a ``DpEvent``
(:meth:`privacy.mechanisms.Mechanism.to_dp_event`); the one accountant
(:class:`privacy.accountant.Accountant`) composes those descriptions.  Where ``dp_accounting``
has an event for the mechanism it is used (``GaussianDpEvent``, ``LaplaceDpEvent`` for a
scalar Laplace release, ``PoissonSampledDpEvent``, ``SelfComposedDpEvent``,
``ComposedDpEvent``); this module adds the events it lacks, as new classes (``dp_accounting``'s
stability contract: the meaning of an existing event never changes):

* :class:`SaSDpEvent`: i.i.d. symmetric alpha-stable noise on a query of ``dimension``
  coordinates;
* :class:`VectorLaplaceDpEvent`: i.i.d. Laplace noise on a query of ``dimension > 1``
  coordinates, accounted by its pure-DP epsilon only;
* :class:`EpsilonDeltaDpEvent`: a release of which only an ``(epsilon, delta)`` guarantee is
  known (a record written before the mechanism was kept, a third-party release).

Conventions shared with ``dp_accounting``: ``noise_multiplier`` is the noise scale divided by the
sensitivity ``C``, the largest change of the query vector (in the norm named by the event) that
one privacy unit causes under ``ADD_OR_REMOVE``, or one unit's contribution bound under
``REPLACE_ONE`` (replacing a unit moves the query by up to ``2 C``).  The neighbouring relation
and the privacy unit belong to the accountant that composes the events (one ledger is one data
set of units, as in ``dp_accounting``), and every answer states them.

References
----------
dp_accounting ``dp_event.py`` (event design, stability contract); seed eqs. (3.1), (3.2),
(3.7)-(3.8) (the noise laws), (3.14)-(3.16) and (3.29) (pure DP of SaS releases).
"""

from __future__ import annotations

import attr
from dp_accounting import dp_event

__all__ = ["SaSDpEvent", "VectorLaplaceDpEvent", "EpsilonDeltaDpEvent"]


@attr.s(frozen=True, slots=True, auto_attribs=True)
class SaSDpEvent(dp_event.DpEvent):
    """One release with i.i.d. symmetric alpha-stable noise on every coordinate.

    For a query ``v`` of ``dimension`` coordinates whose l1 change is at most ``C`` and noise
    ``z_i ~ SaS(alpha, s)`` (characteristic function ``exp(-|s t|^alpha)``), the release is
    ``v + z`` and ``noise_multiplier = s / C``.  ``alpha = 2`` is Gaussian noise of standard
    deviation ``sqrt(2) s``.  The accountant uses the privacy loss distribution of scalar
    releases (``dimension == 1``) and the certified pure-DP epsilon of vector releases
    (:func:`privacy.pure_epsilon.sas_vector_epsilon`, the worst split of the l1 shift).

    Attributes
    ----------
    alpha : float
        Stability index in ``[0.1, 2]`` (the accountant refuses smaller values).
    noise_multiplier : float
        ``s / C`` (``0``: no noise, not private).
    dimension : int, default 1
        Coordinates of one release.

    Examples
    --------
    >>> from privacy import SaSMechanism
    >>> SaSMechanism(alpha=1.5, scale=2.0, sensitivity=0.5, dimension=3).to_dp_event()
    SaSDpEvent(alpha=1.5, noise_multiplier=4.0, dimension=3)
    """

    alpha: float
    noise_multiplier: float
    dimension: int = 1


@attr.s(frozen=True, slots=True, auto_attribs=True)
class VectorLaplaceDpEvent(dp_event.DpEvent):
    """One release with i.i.d. Laplace noise on a query of ``dimension > 1`` coordinates.

    Noise ``Laplace(0, s)`` per coordinate, l1 change of the query at most ``C``,
    ``noise_multiplier = s / C``.  The accountant composes its pure-DP epsilon ``1 /
    noise_multiplier`` only (no privacy loss distribution is built for vector Laplace releases;
    ``dp_accounting.LaplaceDpEvent`` would account it as the scalar pair).

    Attributes
    ----------
    noise_multiplier : float
        ``s / C`` (``0``: no noise, not private).
    dimension : int
        Coordinates of one release (``>= 2``; a scalar release is ``LaplaceDpEvent``).

    Examples
    --------
    >>> from privacy import LaplaceMechanism
    >>> LaplaceMechanism(scale=2.0, dimension=3).to_dp_event()
    VectorLaplaceDpEvent(noise_multiplier=2.0, dimension=3)
    """

    noise_multiplier: float
    dimension: int


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDeltaDpEvent(dp_event.DpEvent):
    """A release known only to be ``(epsilon, delta)``-DP for one privacy unit.

    The guarantee is stated for the accountant's neighbouring relation and unit.  The
    accountant composes it through its dominating pair (randomized response with an atom of
    mass ``delta`` at infinite loss; Kairouz, Oh and Viswanath 2015), which is the optimal
    composition of such guarantees.

    Attributes
    ----------
    epsilon : float
        ``>= 0``.
    delta : float, default 0.0
        In ``[0, 1]``.

    Examples
    --------
    >>> from privacy.accountant import Accountant
    >>> Accountant().compose(EpsilonDeltaDpEvent(0.5), 4).epsilon(delta=0.0)
    2.0
    """

    epsilon: float
    delta: float = 0.0
