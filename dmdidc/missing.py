"""Missing samples (NaN) in identification data: interpolated or dropped, with a report.

MATLAB's ``misdata`` fills gaps with a model; here the two plain choices, each reported:

* ``"interpolate"``: every gap inside an experiment is filled by linear interpolation in time,
  channel by channel; a gap at the start or the end of an experiment (nothing to interpolate
  from on one side; the input before the last state included: it is never extrapolated) is
  cut off (:func:`support`).  An interpolated *input* is not what the plant received: the
  report counts them (``interpolated_inputs``), and :class:`~dmdidc.OutputDMDidc` and
  :class:`~dmdidc.DMDidc` warn (:func:`interpolated_inputs_warning`): the output-error fit
  reads the difference as output noise (on 20 random plants with 1-5 % of the input samples
  lost in runs of 1-20, 3 fits were right with ``"interpolate"`` against 12 with ``"drop"``,
  as many as without the loss: ``benchmarks/bench_output_kinds.py``), the state regression
  as state noise (on 12 random plants right but failing the whiteness check on all 12;
  ``"drop"``: right and quiet on all 12);
* ``"drop"``: the experiment is split at every sample with a missing value, since a sample
  cannot be removed from a trajectory without joining two states that are not one period
  apart; a sample whose state is known but whose input is lost ends the piece before it (it
  is the state after that piece's last input).  The pieces become experiments of their own
  (the regression's lags stay inside a piece); pieces with fewer than two states are
  discarded, and so are pieces with fewer snapshots than states when there is one state
  more than inputs (the shape of transposed data, which the trajectory check refuses).

Infinite values are never "missing": they are refused (a sensor that overflowed is not a gap).

A fit needs more samples of each experiment than ``"drop"`` may leave between close gaps: one
window (``max_delay + 1`` input samples for :class:`~dmdidc.DMDidc`, ``2 horizon + max_delay
+ 1`` for :class:`~dmdidc.OutputDMDidc`).  Shorter pieces are left out of the fit, and
:func:`left_out` says so (``fit`` and ``partial_fit`` of an :class:`~dmdidc.IdData`
alike): a note in the fit's diagnostics when any piece is left out, a
:class:`~dmdidc.DiagnosticWarning` when they hold more than :data:`LEFT_OUT_WARNING` of the
samples (frequent gaps can discard most of the data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from _toolbox.errors import NonFiniteError, ParameterError

__all__ = ["LEFT_OUT_WARNING", "MISSING_POLICIES", "MissingReport", "handle_missing",
           "interpolated_inputs_warning", "left_out", "support"]

#: What :class:`~dmdidc.IdData` does with NaN samples.
MISSING_POLICIES = ("error", "interpolate", "drop")
#: Share of the samples in experiments too short for a fit's window above which leaving them
#: out warns (below it, a note in the diagnostics: a few short pieces cost little).
LEFT_OUT_WARNING = 0.1


@dataclass(frozen=True)
class MissingReport:
    """What was missing and what was done about it.

    Attributes
    ----------
    policy : str
        ``"error"``, ``"interpolate"`` or ``"drop"``: what the data were read with.
    counts : dict of str to int
        Missing samples per signal name.
    locations : tuple of (int, str, tuple of int)
        ``(experiment, signal, sample indices)`` of every signal with a gap.
    interpolated : int
        Values filled in by interpolation.
    removed : int
        Samples (time instants) removed: cut edges, or dropped and too-short pieces.
    experiments_before, experiments_after : int
        Experiments given and experiments handed on (``"drop"`` splits them).
    interpolated_inputs : int
        Of the values ``interpolated``, those of inputs (not what the plant received).
    """

    policy: str
    counts: dict
    locations: tuple
    interpolated: int
    removed: int
    experiments_before: int
    experiments_after: int
    interpolated_inputs: int = 0

    @property
    def n_missing(self) -> int:
        """Missing values in all signals."""
        return int(sum(self.counts.values()))

    def __str__(self) -> str:
        if not self.n_missing:
            return "no missing samples"
        where = "; ".join(f"experiment {e}, {name}: samples {_ranges(idx)}"
                          for e, name, idx in self.locations)
        inputs = (f" ({self.interpolated_inputs} of inputs, which the plant did not receive)"
                  if self.interpolated_inputs else "")
        action = (f"{self.interpolated} value(s) interpolated{inputs}"
                  if self.policy == "interpolate"
                  else f"experiments split: {self.experiments_before} -> "
                       f"{self.experiments_after}")
        return (f"{self.n_missing} missing value(s) ({where}); {action}; {self.removed} "
                f"sample(s) removed")

    @classmethod
    def combined(cls, reports: list[MissingReport]) -> MissingReport:
        """One report for datasets merged from several (the same report once if all agree)."""
        if all(r == reports[0] for r in reports):
            return reports[0]
        counts: dict = {}
        for r in reports:
            for name, count in r.counts.items():
                counts[name] = counts.get(name, 0) + count
        policies = {r.policy for r in reports}
        return cls(policies.pop() if len(policies) == 1 else "mixed", counts,
                   tuple(loc for r in reports for loc in r.locations),
                   sum(r.interpolated for r in reports), sum(r.removed for r in reports),
                   sum(r.experiments_before for r in reports),
                   sum(r.experiments_after for r in reports),
                   sum(r.interpolated_inputs for r in reports))


def _ranges(indices: tuple[int, ...]) -> str:
    """``(3, 4, 5, 9)`` -> ``"3-5, 9"``."""
    parts, start = [], None
    for i, k in enumerate(indices):
        if start is None:
            start = k
        if i + 1 == len(indices) or indices[i + 1] != k + 1:
            parts.append(str(start) if start == k else f"{start}-{k}")
            start = None
    return ", ".join(parts)


def _interpolated(row: np.ndarray) -> np.ndarray:
    good = np.flatnonzero(~np.isnan(row))
    filled = row.copy()
    bad = np.flatnonzero(np.isnan(row))
    filled[bad] = np.interp(bad, good, row[good])
    return filled


def handle_missing(experiments: list[tuple[np.ndarray, np.ndarray]], names: list[str],
                   policy: str) -> tuple[list[tuple[np.ndarray, np.ndarray]], MissingReport]:
    """Apply ``policy`` to the NaN samples of ``(X (n, K+1), U (m, K))`` experiments.

    Parameters
    ----------
    experiments : list of (X, U)
    names : list of str
        The ``n + m`` signal names (states, then inputs), for the report.
    policy : {"error", "interpolate", "drop"}

    Returns
    -------
    experiments : list of (X, U)
        Without NaN.
    report : MissingReport

    Raises
    ------
    NonFiniteError
        An infinite value, any NaN with ``policy="error"`` (the message says where and how to
        handle it), or an experiment with no complete piece left.
    ParameterError
        An unknown policy.
    """
    if policy not in MISSING_POLICIES:
        raise ParameterError(f"missing must be one of {MISSING_POLICIES}; got {policy!r}")
    counts = dict.fromkeys(names, 0)
    locations = []
    for e, (X, U) in enumerate(experiments):
        for name, row in zip(names, list(X) + list(U), strict=True):
            if np.isinf(row).any():
                k = int(np.flatnonzero(np.isinf(row))[0])
                raise NonFiniteError(f"signal {name!r} of experiment {e} is infinite at sample "
                                     f"{k}; only NaN marks a missing sample")
            gaps = tuple(int(k) for k in np.flatnonzero(np.isnan(row)))
            if gaps:
                counts[name] += len(gaps)
                locations.append((e, name, gaps))
    if locations and policy == "error":
        first = locations[0]
        raise NonFiniteError(
            f"{sum(counts.values())} missing (NaN) value(s), first in experiment {first[0]}, "
            f"signal {first[1]!r}, samples {_ranges(first[2])}; pass missing='interpolate' or "
            f"missing='drop' to handle them (with a report)")
    inputs = 0
    if not locations:
        result, interpolated, removed = experiments, 0, 0
    elif policy == "interpolate":
        result, interpolated, removed, inputs = _interpolate(experiments)
    else:
        result, interpolated, removed = _drop(experiments)
    report = MissingReport(policy, counts, tuple(locations), interpolated, removed,
                           len(experiments), len(result), inputs)
    return result, report


#: What interpolated inputs do to each fit, measured on random plants with 1-5 % of the input
#: samples lost in runs of 1-20 (simulations.studies.data_kinds, 30 dB).
_INTERPOLATED_EFFECT = {
    "output": "the output-error fit reads what they did not do as output noise (on 20 random "
              "plants, 3 fits were right against 12 when the record was split at the lost "
              "samples)",
    "state": "the regression reads what they did not do as state noise (on 12 random plants "
             "the estimates stayed within tolerance, but the residuals failed the whiteness "
             "check on all 12, so the standard errors and intervals are off; none failed when "
             "the record was split at the lost samples)",
}


def interpolated_inputs_warning(count: int, fit: str = "output") -> str:
    """What :class:`~dmdidc.OutputDMDidc` (``fit="output"``) or :class:`~dmdidc.DMDidc`
    (``fit="state"``), and ``dmdidc identify``, say about ``count`` interpolated input values
    (module notes).

    Examples
    --------
    >>> interpolated_inputs_warning(12)[:62]
    "12 input value(s) were interpolated (missing='interpolate'): t"
    """
    return (f"{count} input value(s) were interpolated (missing='interpolate'): the plant "
            f"did not receive them, and {_INTERPOLATED_EFFECT[fit]}. Remedy: missing='drop' "
            f"(the record splits at the lost inputs; interpolate only where "
            f"{'outputs' if fit == 'output' else 'states'} alone are lost)")


def support(X: np.ndarray, U: np.ndarray) -> tuple[int, int]:
    """The first and last sample ``k`` of ``X`` (n, K+1), ``U`` (m, K) that
    ``"interpolate"`` keeps: every signal known at or before the first and at or after the last
    (an input ``u_k`` acts up to ``x_{k+1}``), so that no value is extrapolated; ``last <
    first + 1`` when fewer than two samples are left.

    Examples
    --------
    >>> X = np.array([[np.nan, 1.0, 2.0, np.nan, 4.0, 5.0]])
    >>> U = np.array([[0.0, 1.0, 1.0, 0.0, np.nan]])      # u_4 lost: x_5 is cut off
    >>> support(X, U)
    (1, 4)
    """
    firsts, lasts = [], []
    for signal, pad in [(row, 0) for row in X] + [(row, 1) for row in U]:
        known = np.flatnonzero(~np.isnan(signal))
        if known.size == 0:
            return 0, -1
        firsts.append(int(known[0]))
        lasts.append(int(known[-1]) + pad)
    return max(firsts), min(lasts)


def _interpolate(experiments):
    result, interpolated, removed, inputs = [], 0, 0, 0
    for e, (X, U) in enumerate(experiments):
        first, last = support(X, U)
        if last - first < 1:
            raise NonFiniteError(f"experiment {e} has fewer than two complete samples to "
                                 f"interpolate between (every signal known at or before the "
                                 f"first, at or after the last); complete the data or use "
                                 f"missing='drop'")
        removed += X.shape[1] - (last - first + 1)
        lost_inputs = int(np.isnan(U[:, first:last]).sum())
        interpolated += int(np.isnan(X[:, first:last + 1]).sum()) + lost_inputs
        inputs += lost_inputs
        # each signal is filled from its own known samples, then cut: a signal need not be
        # known at the first and last sample kept (cut first, a gap at an edge was held flat)
        result.append((np.array([_interpolated(r) for r in X])[:, first:last + 1],
                       np.array([_interpolated(r) for r in U]).reshape(U.shape)[:, first:last]))
    return result, interpolated, removed, inputs


def _drop(experiments):
    result, removed = [], 0
    for X, U in experiments:
        state = ~np.isnan(X).any(axis=0)
        # a step k -> k+1 is usable when x_k, u_k and x_{k+1} are known: a sample whose input
        # is lost still ends the piece before it (it is the state after the last known input)
        # (measured outputs y_k may come with as many inputs: u_(K) is then after the last step)
        usable = state[:-1] & ~np.isnan(U[:, :len(state) - 1]).any(axis=0) & state[1:]
        edges = np.flatnonzero(np.diff(np.concatenate([[0], usable.astype(int), [0]])))
        # a piece needs two states; with n = m + 1 also n snapshots, else it has the shape of
        # transposed data (refused by the trajectory check).  Other short pieces stay: the
        # regression pools the samples of all pieces (many sensors, gaps a few samples apart)
        shortest = max(2, X.shape[0]) if X.shape[0] == U.shape[0] + 1 else 2
        kept = 0
        for a, b in zip(edges[::2], edges[1::2], strict=True):     # steps a .. b-1
            if b - a + 1 >= shortest:
                result.append((X[:, a:b + 1].copy(), U[:, a:b].copy()))
                kept += b - a + 1
        removed += int(X.shape[1] - kept)
    if not result:
        raise NonFiniteError("no two consecutive complete samples are left after dropping the "
                             "missing ones; use missing='interpolate' or fewer gaps")
    return result, 0, removed


def left_out(lengths: list[int], shortest: int, *, window: str,
             shorter: str = "lower max_delay") -> tuple[str | None, bool]:
    """What a fit that needs ``shortest`` input samples per experiment leaves out.

    Parameters
    ----------
    lengths : list of int
        Input samples ``K`` of each experiment.
    shortest : int
        The fewest a used experiment has (one window of the fit).
    window : str
        What sets ``shortest``, for the message (``"max_delay + 1 = 4"``).
    shorter : str
        How to shorten the window, for the remedy.

    Returns
    -------
    note : str or None
        How many experiments and samples are left out, and the remedy; ``None`` when none is,
        or when every one is (the fit then refuses the data with its own error).
    loud : bool
        Whether they hold more than :data:`LEFT_OUT_WARNING` of the samples (warn).

    Examples
    --------
    >>> note, loud = left_out([500, 8, 8], 10, window="max_delay + 1 = 10")
    >>> loud, note[:73]
    (False, '2 of 3 experiments (16 of 516 samples, 3.1 %) are shorter than one window')
    """
    short = [k for k in lengths if k < shortest]
    if not short or len(short) == len(lengths):
        return None, False
    lost, total = sum(short), sum(lengths)
    note = (f"{len(short)} of {len(lengths)} experiments ({lost} of {total} samples, "
            f"{100 * lost / total:.2g} %) are shorter than one window of the fit ({window} "
            f"input samples) and were left out: interpolate short gaps "
            f"(IdData(..., missing='interpolate')), record with fewer gaps, or {shorter}")
    return note, lost > LEFT_OUT_WARNING * total
