"""Clipping to the declared bounds: how much of the data it changed, and the check of a fit.

Statistics built with bounds (:meth:`dmdidc.SufficientStatistics.from_data` with
``state_bound`` and ``input_bound``) clip every value beyond its bound to it before privacy
noise is added (the sensitivity needs bounded entries).  A clipped value is pulled in toward
zero, and the moments with it: the regression then fits a plant whose large excursions are
smaller than they were, which biases every coefficient, the modes and the delays, and no
residual check sees the cause (the clipped data are consistent with some other linear plant).
:class:`Clipping` counts the clipped values per signal while the statistics are built;
:func:`clipping_check` judges the count, once, for every caller: the fit of plain statistics
(:meth:`dmdidc.DMDidc.fit_statistics`), the data owner's release (:meth:`dmdidc.
SufficientStatistics.privatize`, which warns before the count is left behind) and the command
line.

**The count is private.**  How many values exceeded a bound says something about the data
beyond what the calibrated release protects, so a release never carries it (privatized
statistics have ``clipping=None``).  The owner, who holds the count, is warned when they
privatize; the fit of a release reports the check as not applicable and says why.

**The threshold**, :data:`CLIP_SHARE` = 1 % of a signal's values, was measured
(``benchmarks/bench_clipping.py``): on random stable plants (n = 3, m = 2, 200 experiments of 300
samples, state noise 0.02) the coefficients' shift caused by clipping grows about linearly with
the clipped share, 0.08-0.22 of the standard errors of a Gaussian release at epsilon 3 per 1 %
clipped (a 95 % interval then covers at least 94 %), 0.5-1.4 at 5 % and 1.4-2.9 at 10 %.  Plain
statistics have no privacy noise and far narrower intervals, which the same bias exceeds from
about 0.01 % clipped on (0.2-1.2 standard errors): there the check passes below the threshold,
its finding says the share, and other checks may fail from it (``block_structure``).
"""

from __future__ import annotations

from dataclasses import dataclass

from dmdidc.inference.checks import Check

__all__ = ["CLIP_SHARE", "Clipping", "NO_CLIPPING", "clipping_check"]

#: Largest share of a signal's values that may be clipped before the clipping check fails
#: (module notes: the measured bias against a private fit's standard errors).
CLIP_SHARE = 0.01

QUESTION = "Did clipping to the declared bounds change the data?"

#: The signals counted, in the order of :class:`Clipping`'s tuples, and their bounds' names.
SIGNALS = (("state", "state_bound"), ("input", "input_bound"),
           ("instrument", "instrument_bound"))


@dataclass(frozen=True)
class Clipping:
    """Values of the data clipped to their declared bounds, per signal (state, input,
    exogenous instrument): the data owner's information, never part of a release.

    Attributes
    ----------
    clipped : tuple of int
        Values beyond their bound (clipped to it).
    values : tuple of int
        Values seen (clipped or not).
    peak : tuple of float
        Largest ``|value| / bound`` seen (0 without bounds): above 1, how far beyond the bound
        the data went.

    Examples
    --------
    >>> a = Clipping((3, 0, 0), (100, 50, 0), (1.5, 0.4, 0.0))
    >>> (a + a.times(2)).clipped, a.total, a.share(0)
    ((9, 0, 0), 3, 0.03)
    """

    clipped: tuple = (0, 0, 0)
    values: tuple = (0, 0, 0)
    peak: tuple = (0.0, 0.0, 0.0)

    @property
    def total(self) -> int:
        """Values clipped, all signals."""
        return int(sum(self.clipped))

    def share(self, signal: int) -> float:
        """Share of signal ``signal``'s values that were clipped (0 when it has none)."""
        return self.clipped[signal] / self.values[signal] if self.values[signal] else 0.0

    def times(self, count: int) -> Clipping:
        """The counts of data counted ``count`` times (a resample drawing a part twice)."""
        return Clipping(tuple(count * c for c in self.clipped),
                        tuple(count * v for v in self.values), self.peak)

    def __add__(self, other: Clipping) -> Clipping:
        return Clipping(tuple(a + b for a, b in zip(self.clipped, other.clipped, strict=True)),
                        tuple(a + b for a, b in zip(self.values, other.values, strict=True)),
                        tuple(max(a, b) for a, b in zip(self.peak, other.peak, strict=True)))


#: Nothing clipped, nothing counted: statistics built without bounds or from moments.
NO_CLIPPING = Clipping()


def _shares(clipping: Clipping, signals: list[int]) -> str:
    """The clipped share of each signal that had any (with how far beyond its bound), then
    the signals without: ``"2% of the state values (up to 1.6 times state_bound), no input
    value"``."""
    parts = [f"{100 * clipping.share(i):.2g}% of the {SIGNALS[i][0]} values (up to "
             f"{clipping.peak[i]:.2g} times {SIGNALS[i][1]})"
             for i in signals if clipping.clipped[i]]
    spared = [SIGNALS[i][0] for i in signals if not clipping.clipped[i]]
    return ", ".join(parts + ([f"no {' or '.join(spared)} value"] if spared else []))


def clipping_check(stats) -> Check:
    """The ``clipping`` check of sufficient statistics (module notes).

    Parameters
    ----------
    stats : SufficientStatistics
        Plain statistics carry their :class:`Clipping` count; released ones carry ``None``.

    Returns
    -------
    Check
        Failed when more than :data:`CLIP_SHARE` of a signal's values were clipped (statistic:
        the largest share); not applicable without bounds or without the count (a release).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import SufficientStatistics
    >>> rng = np.random.default_rng(0)
    >>> X, U = rng.standard_normal((1, 501)), rng.uniform(-1, 1, (1, 500))
    >>> stats = SufficientStatistics.from_data(X, U, max_delay=1, state_bound=1.0,
    ...                                        input_bound=1.0)
    >>> check = clipping_check(stats)
    >>> check.failed, check.finding[:62]
    (True, 'clipped to the declared bounds: 34% of the state values (up to')
    >>> clipping_check(SufficientStatistics.from_data(X, U, max_delay=1, state_bound=5.0,
    ...                                               input_bound=1.0)).passed
    True
    """
    clipping = stats.clipping
    if clipping is None:
        return Check("clipping", QUESTION, None, finding=(
            "not known: a release does not carry the count of clipped values (it is the data "
            "owner's information); privatize() warned its owner if more than "
            f"{100 * CLIP_SHARE:g}% of a signal's values were clipped"))
    if stats.state_bound is None:
        return Check("clipping", QUESTION, None, finding="no bounds declared: nothing clipped")
    signals = [i for i in range(len(SIGNALS)) if clipping.values[i]]
    if not signals:
        return Check("clipping", QUESTION, None, finding="no data")
    share = max(clipping.share(i) for i in signals)
    shares = _shares(clipping, signals)
    if share > CLIP_SHARE:
        return Check(
            "clipping", QUESTION, False, share, CLIP_SHARE,
            finding=(f"clipped to the declared bounds: {shares}; a clipped value is "
                     f"pulled in to its bound, which biases the model (its gains, modes and "
                     f"delays) by more than a private release's standard errors once over "
                     f"{100 * CLIP_SHARE:g}% of a signal's values are clipped, and no "
                     f"interval includes that bias"),
            remedy=("declare bounds that cover the signals' range (raise state_bound, "
                    "input_bound): from public knowledge of the plant (physical limits), or a "
                    "high quantile (e.g. 99.9%) of the magnitudes in earlier or public data, "
                    "not in the data being released (bounds read off them leak them); "
                    "statistics never privatized need no bounds"))
    if share == 0:
        peaks = ", ".join(f"{SIGNALS[i][0]} {clipping.peak[i]:.2g} times {SIGNALS[i][1]}"
                          for i in signals)
        return Check("clipping", QUESTION, True, share, CLIP_SHARE,
                     finding=f"nothing clipped (largest values: {peaks})")
    return Check("clipping", QUESTION, True, share, CLIP_SHARE, finding=(
        f"clipped to the declared bounds: {shares}; a bias small against a private release's "
        f"noise, which a plain fit's narrower intervals may still show (e.g. as "
        f"block_structure)"))
