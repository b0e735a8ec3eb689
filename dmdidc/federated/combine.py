"""Federated identification: the server's posterior of the fleet's statistics (FedInfer).

Every client (a plant with the same dynamics and its own data) computes its
:class:`~dmdidc.SufficientStatistics` and privatizes them once
(:meth:`~dmdidc.SufficientStatistics.privatize`).  The fleet's statistics are the sum of the
clients'; the server observes the sum of the releases, one full observation of it in the sense
of FedInfer (seed 7.18), and :func:`combine_statistics` returns FedInfer's posterior estimate
of the global statistics (:func:`privacy.federated.release_sum.sum_posterior`): the sum itself
for Gaussian releases (flat conjugate prior, posterior variance ``sum_k sigma_k^2``), the
posterior mean under the SaS (stable sum) or Laplace likelihood with the uniform prior on the
box every global statistic lies in (unit-box data: ``|gram_ij| <= N``, ``0 <= gram_ii <= N``,
``|sums_i| <= N`` for ``N`` samples in all, a public count).  Heterogeneous noise scales and
clients that join over rounds enter through the law of the summed noise.

The noise the fit needs.  The result carries every client's release (for the privacy record)
and a ``noise_variance`` per entry that :meth:`dmdidc.DMDidc.fit_statistics` propagates into
standard errors and intervals: the posterior variance for Gaussian releases, and for SaS and
Laplace the variance of the normal law with the posterior's central ``level`` interval (the
largest over entries).  A SaS posterior has heavy tails, so intervals at other levels are
approximate; its true variance under the prior box is finite but dominated by the box.

References
----------
Seed Ch. 7 (Algorithms 1-2, eqs. 7.13-7.19), Ch. 9 (DMDidc, eqs. 9.19-9.21); Ch. 3 (eq. 3.8).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import special

from _toolbox.errors import NonFiniteError
from _toolbox.validation import check_in_interval
from dmdidc.errors import DimensionError, ParameterError
from dmdidc.statistics.statistics import SufficientStatistics
from privacy.federated.noise import ReleaseSumNoise
from privacy.federated.posterior import PosteriorSummary
from privacy.federated.release_sum import sum_posterior

__all__ = ["combine_statistics", "statistics_posterior", "statistics_box", "release_noises"]


def release_noises(stats: SufficientStatistics) -> list[ReleaseSumNoise]:
    """The per-entry noise of every release summed into ``stats`` (empty when plain).

    Raises
    ------
    ParameterError
        A release whose mechanism is not Gaussian, Laplace or SaS.
    """
    return [ReleaseSumNoise.from_mechanism(release.mechanism) for release in stats.releases]


def statistics_box(stats: SufficientStatistics) -> tuple[np.ndarray, np.ndarray]:
    """Prior box of :meth:`~dmdidc.SufficientStatistics.to_vector` for ``stats.n_samples``
    unit-box samples: ``(lower, upper)``, each shape (dimension,)."""
    d = stats.gram.shape[0]
    N = float(max(stats.n_samples, 1))
    rows, cols = np.triu_indices(d)
    lower = np.where(rows == cols, 0.0, -N)
    if stats.released_sums:
        lower = np.concatenate([lower, np.full(d, -N)])
    return lower, np.full(lower.size, N)


def _check(releases: Sequence[SufficientStatistics]) -> list[SufficientStatistics]:
    if isinstance(releases, SufficientStatistics) or not isinstance(releases, Sequence):
        raise ParameterError(f"releases must be a sequence of SufficientStatistics; got "
                             f"{type(releases).__name__}")
    parts = list(releases)
    if not parts:
        raise ParameterError("releases is empty: the server needs at least one client's "
                             "statistics")
    first = parts[0]
    units = set()
    seen: dict[int, int] = {}
    for i, part in enumerate(parts):
        if not isinstance(part, SufficientStatistics):
            raise ParameterError(f"releases[{i}] is a {type(part).__name__}; expected "
                                 f"SufficientStatistics")
        if id(part) in seen:
            raise ParameterError(f"releases[{i}] is the same object as releases[{seen[id(part)]}]"
                                 f": a client's release would be counted twice")
        seen[id(part)] = i
        if part.layout != first.layout:
            raise DimensionError(f"releases[{i}] has layout {part.layout}; releases[0] has "
                                 f"{first.layout}: every client must build its statistics with "
                                 f"the same n, m, max_delay and instruments")
        if not np.array_equal(part.scale, first.scale):
            raise ParameterError(f"releases[{i}] was built with other bounds (scale "
                                 f"{np.asarray(part.scale).tolist()}) than releases[0] "
                                 f"({np.asarray(first.scale).tolist()}): declare the same "
                                 f"state_bound, input_bound and instrument_bound everywhere")
        if part.released_sums != first.released_sums:
            raise ParameterError(f"releases[{i}] has centering {part.centering!r} and "
                                 f"releases[0] {first.centering!r}: centred and uncentred "
                                 f"statistics cannot be combined")
        vector = part.to_vector()
        if not np.all(np.isfinite(vector)):
            raise NonFiniteError(f"releases[{i}] holds {int(np.sum(~np.isfinite(vector)))} "
                                 f"non-finite statistics")
        for release in part.releases:
            if release.dimension != part.dimension:
                raise DimensionError(f"releases[{i}] carries a release of {release.dimension} "
                                     f"entries; its statistics have {part.dimension}")
            units.add((release.unit, release.window))
    if len(units) > 1:
        raise ParameterError(f"releases protect different privacy units {sorted(units, key=str)}"
                             f": the federation's guarantee needs one unit (and window) for "
                             f"every client")
    return parts


def statistics_posterior(releases: Sequence[SufficientStatistics], *, level: float = 0.95
                         ) -> tuple[SufficientStatistics, PosteriorSummary]:
    """The sum of the releases and FedInfer's posterior of the global statistics.

    Parameters
    ----------
    releases : sequence of SufficientStatistics
        One per client (privatized, or plain: exact), same layout, bounds and privacy unit.
    level : float, default 0.95
        Level of the credible intervals.

    Returns
    -------
    total : SufficientStatistics
        ``sum(releases)`` (the observation).
    posterior : PosteriorSummary
        Per entry of :meth:`~dmdidc.SufficientStatistics.to_vector`: posterior mean, sd and
        central credible interval of the global statistics (unit-box coordinates).

    Raises
    ------
    ParameterError, DimensionError, NonFiniteError
        Empty input, a non-statistics element, the same release twice, mismatched layouts,
        bounds, centering or privacy units, non-finite values, or SaS releases with
        different alphas (or mixed with other noise).
    """
    parts = _check(releases)
    level = check_in_interval("level", level, 0.0, 1.0, low_open=True, high_open=True)
    total = sum(parts[1:], parts[0])
    noises = [noise for part in parts for noise in release_noises(part)]
    lower, upper = statistics_box(total)
    return total, sum_posterior(total.to_vector(), noises, lower=lower, upper=upper,
                                level=level)


def combine_statistics(releases: Sequence[SufficientStatistics], *, level: float = 0.95
                       ) -> SufficientStatistics:
    """The server's estimate of the global statistics from the clients' releases (FedInfer).

    Parameters
    ----------
    releases : sequence of SufficientStatistics
        Every client's (privatized) statistics, one each; same layout, bounds, centering and
        privacy unit.  Plain statistics count as exact.
    level : float, default 0.95
        The posterior interval whose width the returned noise variance matches (module notes).

    Returns
    -------
    SufficientStatistics
        The posterior mean as statistics (metadata of the sum: samples, trajectories, every
        client's release) with ``noise_variance`` for :meth:`dmdidc.DMDidc.fit_statistics`.
        For Gaussian releases this is ``sum(releases)`` with ``sum_k sigma_k^2``.

    Raises
    ------
    ParameterError, DimensionError, NonFiniteError
        As :func:`statistics_posterior`.

    References
    ----------
    Seed Ch. 7, eqs. (7.13)-(7.19); eq. (3.8) for SaS sums.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, SufficientStatistics
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = np.random.default_rng(0).uniform(-1.0, 1.0, (1, 40_000))   # |u| <= 1, |x| <= 2
    >>> X = plant.simulate([0.0], U)
    >>> releases = []
    >>> for k in range(40):                         # 40 clients, 1000 samples each
    ...     a, b = 1000 * k, 1000 * (k + 1)
    ...     stats = SufficientStatistics.from_data(X[:, a:b + 1], U[:, a:b], max_delay=2,
    ...                                            state_bound=2.0, input_bound=1.0)
    ...     releases.append(stats.privatize("gaussian", epsilon=1.0, delta=1e-5, rng=k))
    >>> fleet = combine_statistics(releases)          # here: the sum, sum of the variances
    >>> est = DMDidc(max_delay=2).fit_statistics(fleet, dt=1.0)
    >>> ci = est.delay_ci()
    >>> bool(ci.low[0] < 1.5 < ci.high[0]), fleet.n_samples
    (True, 39920)
    """
    total, post = statistics_posterior(releases, level=level)
    if not total.releases:
        return total
    z = special.ndtri(0.5 + post.level / 2.0)
    variance = float(np.max(((post.upper - post.lower) / (2.0 * z)) ** 2))
    return SufficientStatistics.from_vector(post.mean, like=total, noise_variance=variance)
