"""What an honest client's released DMDidc statistics can be: the federated server's screen.

A client of :class:`~dmdidc.federated.FederatedIdentification` replies its noisy statistics
``z`` (:meth:`~dmdidc.SufficientStatistics.to_vector`: the upper triangle of the Gram ``G``
row by row, then the sums ``s`` if released) and its public counts.  In the unit-box
coordinates of a release (every regressor entry clipped to its declared bound and divided by
it), the statistics of ``N`` regression samples, centred or not, satisfy

* the counts are consistent: ``n_trajectories = k >= 1``, ``0 <= min_trajectory_samples <=
  max_trajectory_samples`` (equal when ``k = 1``) and ``max + (k - 1) min <= N <= min + (k -
  1) max`` (one trajectory of each extreme length; and ``N`` is at most the federation's
  public cap ``max_samples``, when it declares one).  The release noise of ``unit=
  "trajectory"`` grows with ``max`` and that of centred statistics as ``min`` falls, so
  counts no trajectories can have would widen the screen below;
* ``0 <= G_ii <= N``, ``|G_ij| <= N`` and ``|s_i| <= N`` (each of the ``N`` regressors has
  entries in [-1, 1]; centring only lowers the diagonal, and Cauchy-Schwarz bounds the rest:
  the prior box of FedInfer's posterior, :func:`~dmdidc.federated.combine.statistics_box`);
* ``G`` is positive semidefinite (a sum of outer products).

The release adds i.i.d. noise to every entry of ``z``; except with probability
:data:`~privacy.federated.validation.FALSE_ALARM` per reply, no entry's noise exceeds
``t = noise_allowance(law, dimension)``, so the box widens by ``t`` and the smallest eigenvalue
of the noisy Gram (size ``p``) stays above ``-p t`` (the noise matrix's norm is at most its
largest absolute row sum).  A reply outside is rejected, never clipped: an honest release is
never altered, a poisoned one never reaches the posterior.  The Gram's symmetry needs no check:
the reply carries its upper triangle only, and the server mirrors it.

References
----------
Seed Ch. 7 (FedInfer's prior box, Assumption 4), Ch. 9 (the DMDidc statistics).

Examples
--------
>>> import numpy as np
>>> from dmdidc import SufficientStatistics
>>> rng = np.random.default_rng(0)
>>> X, U = rng.uniform(-1, 1, (1, 41)), rng.uniform(-1, 1, (1, 40))
>>> stats = SufficientStatistics.from_data(X, U, max_delay=1, state_bound=1.0, input_bound=1.0)
>>> z = stats.to_vector()
>>> statistics_bound(stats, 0.0).holds(z[None])
True
>>> print(gram_reason(-z, stats, 0.5))   # a negated Gram: not positive semidefinite
the Gram matrix of the statistics is not positive semidefinite: its smallest eigenvalue is ...
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from dmdidc.statistics.statistics import SufficientStatistics
from privacy.federated.validation import ReplyBound, noise_allowance

__all__ = ["COUNTS", "count_reason", "gram_reason", "release_allowance", "statistics_bound"]

#: Public counts a client reports with its release (the accountant treats them as public).
COUNTS = ("n_samples", "n_trajectories", "min_trajectory_samples", "max_trajectory_samples")


def count_reason(metrics: Mapping[str, Any], max_samples: int | None = None) -> str | None:
    """Why a reply's public counts (``metrics[COUNTS]``) are not those of any honest client.

    Examples
    --------
    >>> counts = {"n_samples": 80, "n_trajectories": 2, "min_trajectory_samples": 40,
    ...           "max_trajectory_samples": 40}
    >>> count_reason(counts) is None
    True
    >>> count_reason({**counts, "n_samples": 10 ** 9})
    'n_samples = 1000000000 is not what 2 trajectories of 40 to 40 samples hold'
    >>> print(count_reason(counts, max_samples=50))
    n_samples = 80 exceeds the federation's cap max_samples = 50
    """
    values = {}
    for name in COUNTS:
        value = metrics.get(name)
        # a trajectory of max_delay + 1 samples or fewer holds no regression sample
        least = 0 if name == "min_trajectory_samples" else 1
        if (not isinstance(value, numbers.Real) or isinstance(value, bool)
                or not np.isfinite(value) or value != int(value) or value < least):
            return f"count {name!r} missing or not an integer >= {least} (got {value!r})"
        values[name] = int(value)
    n, trajectories = values["n_samples"], values["n_trajectories"]
    shortest, longest = values["min_trajectory_samples"], values["max_trajectory_samples"]
    # one trajectory of each extreme length, the others anywhere between (one: both its own)
    others = trajectories - 1
    if (shortest > longest or (trajectories == 1 and shortest != longest)
            or not longest + others * shortest <= n <= shortest + others * longest):
        return (f"n_samples = {n} is not what {trajectories} trajectories of {shortest} to "
                f"{longest} samples hold")
    if max_samples is not None and n > max_samples:
        return f"n_samples = {n} exceeds the federation's cap max_samples = {max_samples}"
    return None


def statistics_bound(like: Any, allowance: float) -> ReplyBound:
    """The box of the vector of honest statistics like ``like`` (its layout and
    ``n_samples``): FedInfer's prior box (:func:`~dmdidc.federated.combine.statistics_box`)
    widened by ``allowance`` (the noise's reach per entry) and a rounding margin."""
    from dmdidc.federated.combine import statistics_box

    lower, upper = statistics_box(like)
    reach = allowance + 1e-9 * max(like.n_samples, 1)
    return ReplyBound(lower - reach, upper + reach)


def gram_reason(z: np.ndarray, like: Any, allowance: float) -> str | None:
    """Why the Gram matrix in ``z`` cannot be an honest Gram plus noise of reach ``allowance``
    per entry (its smallest eigenvalue below ``-p allowance``), or ``None``."""
    gram = SufficientStatistics.from_vector(z, like=like).gram   # the layout of to_vector
    p = gram.shape[0]
    smallest = float(np.linalg.eigvalsh(gram)[0])
    floor = p * allowance + 1e-9 * float(np.abs(np.diag(gram)).sum())
    if smallest < -floor:
        return (f"the Gram matrix of the statistics is not positive semidefinite: its smallest "
                f"eigenvalue is {smallest:.3g}, below -{floor:.3g} (what the release noise "
                f"can reach)")
    return None


def release_allowance(release: Any, dimension: int) -> float:
    """How far the noise of ``release`` (a :class:`dmdidc.private.release.PrivacyRelease`)
    reaches on any entry, except with probability ``FALSE_ALARM``."""
    return _allowance(release.mechanism.noise, dimension)


@functools.lru_cache(maxsize=256)
def _allowance(law: Any, dimension: int) -> float:
    # a SaS tail bound takes a fraction of a second; clients mostly share a few laws
    return noise_allowance(law, dimension)

