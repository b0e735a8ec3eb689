"""Clipping to the declared bounds: how much of the data it changed, and the check of a fit.

Statistics built with bounds (:meth:`dmdidc.SufficientStatistics.from_data` with
``state_bound`` and ``input_bound``) clip every value beyond its bound to it before privacy
noise is added (the sensitivity needs bounded entries).  A clipped value is pulled in toward
zero, and the moments with it: the regression then fits a plant whose large excursions are
smaller than they were, which biases every coefficient, the modes and the delays, and no
residual check sees the cause (the clipped data are consistent with some other linear plant).
:class:`Clipping` counts the clipped values per channel (each state, input and instrument)
while the statistics are built;
:func:`clipping_check` judges the count, once, for every caller: the fit of plain statistics
(:meth:`dmdidc.DMDidc.fit_statistics`), the data owner's release (:meth:`dmdidc.
SufficientStatistics.privatize`, which warns before the count is left behind) and the command
line.

**The count is private.**  How many values exceeded a bound says something about the data
beyond what the calibrated release protects, so a release never carries it (privatized
statistics have ``clipping=None``).  The owner, who holds the count, is warned when they
privatize; the fit of a release reports the check as not applicable and says why.

**The threshold**, :data:`CLIP_SHARE` = 1 % of one channel's values, was measured
(``benchmarks/bench_clipping.py``, every state clipped at the same quantile): on random stable
plants (n = 3, m = 2, 200 experiments of 300 samples, state noise 0.02) the coefficients' shift
caused by clipping grows about linearly with the clipped share, 0.08-0.22 of the standard
errors of a Gaussian release at epsilon 3 per 1 % clipped (a 95 % interval then covers at least
94 %), 0.5-1.4 at 5 % and 1.4-2.9 at 10 %.  Plain
statistics have no privacy noise and far narrower intervals, which the same bias exceeds from
about 0.01 % clipped on (0.2-1.2 standard errors): there the check passes below the threshold,
its finding says the share, and other checks may fail from it (``block_structure``).

**Per channel, not per signal**: the bias follows the share of the channel that was clipped,
not of its signal.  One state clipped at 7 % among 8 (0.9 % of the state values) moved the
plain fit's coefficients 1.1, 1.5 and 2.7 standard errors of an epsilon-3 release (3 random
plants, 200 experiments of 300 samples); pooled, the check had passed it.  So the check judges
the largest channel's share and names that channel and its bound; the signals' totals are
shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from dmdidc.inference.checks import Check

__all__ = ["CLIP_SHARE", "Clipping", "NO_CLIPPING", "clipping_check"]

#: Largest share of one channel's values (one state, input or instrument) that may be clipped
#: before the clipping check fails (module notes: the measured bias against a private fit's
#: standard errors).
CLIP_SHARE = 0.01

QUESTION = "Did clipping to the declared bounds change the data?"

#: The signals counted, in the order of :class:`Clipping`'s tuples, and their bounds' names.
SIGNALS = (("state", "state_bound"), ("input", "input_bound"),
           ("instrument", "instrument_bound"))


@dataclass(frozen=True)
class Clipping:
    """Values of the data clipped to their declared bounds, per channel of each signal (state,
    input, exogenous instrument): the data owner's information, never part of a release.

    Counted per channel because the bias is: one state clipped at 7 % among 8 states is 0.9 %
    of the state values, yet moved the plain fit's coefficients 1.1-2.7 standard errors of an
    epsilon-3 release (3 random plants), as 7 % of every state would.

    Attributes
    ----------
    channel_clipped : tuple of tuple of int
        Per signal, per channel: values beyond the bound (clipped to it).
    channel_values : tuple of tuple of int
        Per signal, per channel: values seen (clipped or not).
    channel_peak : tuple of tuple of float
        Per signal, per channel: largest ``|value| / bound`` seen (0 without bounds): above 1,
        how far beyond its bound the channel went.

    Examples
    --------
    >>> a = Clipping(((3, 0), (0,), ()), ((50, 50), (50,), ()), ((1.5, 0.9), (0.4,), ()))
    >>> (a + a.times(2)).clipped, a.total, a.share(0), a.worst()
    ((9, 0, 0), 3, 0.03, (0, 0, 0.06))
    """

    channel_clipped: tuple = ((), (), ())
    channel_values: tuple = ((), (), ())
    channel_peak: tuple = ((), (), ())

    @property
    def clipped(self) -> tuple:
        """Values clipped per signal (all its channels)."""
        return tuple(int(sum(c)) for c in self.channel_clipped)

    @property
    def values(self) -> tuple:
        """Values seen per signal (all its channels)."""
        return tuple(int(sum(v)) for v in self.channel_values)

    @property
    def peak(self) -> tuple:
        """Largest ``|value| / bound`` per signal (all its channels; 0 without any)."""
        return tuple(max(p, default=0.0) for p in self.channel_peak)

    @property
    def total(self) -> int:
        """Values clipped, all signals."""
        return int(sum(self.clipped))

    def share(self, signal: int) -> float:
        """Share of signal ``signal``'s values (all channels) that were clipped (0 when it has
        none): for display; the check judges :meth:`channel_share`."""
        values = self.values[signal]
        return self.clipped[signal] / values if values else 0.0

    def channel_share(self, signal: int, channel: int) -> float:
        """Share of channel ``channel`` of signal ``signal`` that was clipped (0 without
        values)."""
        values = self.channel_values[signal][channel]
        return self.channel_clipped[signal][channel] / values if values else 0.0

    def channels(self) -> list[tuple[int, int, float]]:
        """``(signal, channel, share)`` of every channel with values, the largest share first
        (ties: signal and channel order)."""
        found = [(i, j, self.channel_share(i, j)) for i, counts in
                 enumerate(self.channel_values) for j, seen in enumerate(counts) if seen]
        return sorted(found, key=lambda item: -item[2])

    def worst(self) -> tuple[int, int, float] | None:
        """``(signal, channel, share)`` of the channel with the largest clipped share (``None``
        without values)."""
        return next(iter(self.channels()), None)

    def times(self, count: int) -> Clipping:
        """The counts of data counted ``count`` times (a resample drawing a part twice)."""
        return Clipping(tuple(tuple(count * c for c in s) for s in self.channel_clipped),
                        tuple(tuple(count * v for v in s) for s in self.channel_values),
                        self.channel_peak)

    def __add__(self, other: Clipping) -> Clipping:
        def merged(a: tuple, b: tuple, join) -> tuple:
            # a signal not counted on one side (statistics from moments) adds nothing
            return tuple(x if not y else y if not x else
                         tuple(join(p, q) for p, q in zip(x, y, strict=True))
                         for x, y in zip(a, b, strict=True))

        return Clipping(merged(self.channel_clipped, other.channel_clipped, int.__add__),
                        merged(self.channel_values, other.channel_values, int.__add__),
                        merged(self.channel_peak, other.channel_peak, max))


#: Nothing clipped, nothing counted: statistics built without bounds or from moments.
NO_CLIPPING = Clipping()


def _channel(clipping: Clipping, bounds: tuple, signal: int, channel: int) -> str:
    """``"state 0 (12% of its values, up to 1.6 times state_bound[0] = 2)"``."""
    name, bound = SIGNALS[signal]
    value = "" if bounds[signal] is None else f" = {float(bounds[signal][channel]):.3g}"
    return (f"{name} {channel} ({100 * clipping.channel_share(signal, channel):.2g}% of its "
            f"values, up to {clipping.channel_peak[signal][channel]:.2g} times "
            f"{bound}[{channel}]{value})")


def _shares(clipping: Clipping, bounds: tuple, signals: list[int]) -> str:
    """The clipped channels over :data:`CLIP_SHARE` (at most three; else the largest) with
    their ``bounds`` (state, input, instrument), then each signal's share (with how far beyond
    its bound), then the signals without: ``"state 0 (7% of its values, up to 1.6 times
    state_bound[0] = 2); per signal: 0.9% of the state values (up to 1.6 times state_bound),
    no input value"``."""
    clipped = [item for item in clipping.channels() if clipping.channel_clipped[item[0]][item[1]]]
    over = [item for item in clipped if item[2] > CLIP_SHARE] or clipped[:1]
    named = "; ".join(_channel(clipping, bounds, i, j) for i, j, _ in over[:3])
    if len(over) > 3:
        named += f"; {len(over) - 3} more channel(s) over {100 * CLIP_SHARE:g}%"
    parts = [f"{100 * clipping.share(i):.2g}% of the {SIGNALS[i][0]} values (up to "
             f"{clipping.peak[i]:.2g} times {SIGNALS[i][1]})"
             for i in signals if clipping.clipped[i]]
    spared = [SIGNALS[i][0] for i in signals if not clipping.clipped[i]]
    return f"{named}; per signal: " + ", ".join(
        parts + ([f"no {' or '.join(spared)} value"] if spared else []))


def clipping_check(stats) -> Check:
    """The ``clipping`` check of sufficient statistics (module notes).

    Parameters
    ----------
    stats : SufficientStatistics
        Plain statistics carry their :class:`Clipping` count; released ones carry ``None``.

    Returns
    -------
    Check
        Failed when more than :data:`CLIP_SHARE` of one channel's values were clipped
        (statistic: the largest share of a channel; the finding names the channels over it and
        their bounds, then each signal's share); not applicable without bounds or without the
        count (a release).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import SufficientStatistics
    >>> rng = np.random.default_rng(0)
    >>> X, U = rng.standard_normal((1, 501)), rng.uniform(-1, 1, (1, 500))
    >>> stats = SufficientStatistics.from_data(X, U, max_delay=1, state_bound=1.0,
    ...                                        input_bound=1.0)
    >>> check = clipping_check(stats)
    >>> check.failed, check.finding[:58]
    (True, 'clipped to the declared bounds: state 0 (34% of its values')
    >>> clipping_check(SufficientStatistics.from_data(X, U, max_delay=1, state_bound=5.0,
    ...                                               input_bound=1.0)).passed
    True
    """
    clipping = stats.clipping
    if clipping is None:
        return Check("clipping", QUESTION, None, finding=(
            "not known: a release does not carry the count of clipped values (it is the data "
            "owner's information); privatize() warned its owner if more than "
            f"{100 * CLIP_SHARE:g}% of a channel's values were clipped"))
    if stats.state_bound is None:
        return Check("clipping", QUESTION, None, finding="no bounds declared: nothing clipped")
    signals = [i for i in range(len(SIGNALS)) if clipping.values[i]]
    if not signals:
        return Check("clipping", QUESTION, None, finding="no data")
    share = clipping.worst()[2]
    shares = _shares(clipping, (stats.state_bound, stats.input_bound, stats.instrument_bound),
                     signals)
    if share > CLIP_SHARE:
        return Check(
            "clipping", QUESTION, False, share, CLIP_SHARE,
            finding=(f"clipped to the declared bounds: {shares}; a clipped value is "
                     f"pulled in to its bound, which biases the model (its gains, modes and "
                     f"delays) by more than a private release's standard errors once over "
                     f"{100 * CLIP_SHARE:g}% of a channel's values are clipped, and no "
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
