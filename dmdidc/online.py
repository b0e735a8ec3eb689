"""Live identification: forgetting statistics, lost packets and change detection.

:class:`OnlineDMDidc` keeps the moments of the DMDidc regression (the ``gram`` and ``sums`` of
:class:`~dmdidc.SufficientStatistics`, ``v_k = [x_k; u_k; ...; u_{k-R}; x_{k+1};
instruments]``) with **exponential forgetting** (row ``k`` weighs ``lambda^(t - k)`` at time ``t``)
or over a **sliding window** of the last ``window`` samples.  A chunk of ``L`` samples costs one
block update ``G <- lambda^L G + V diag(w) V^T`` (``d^2`` flops per sample, ``d = 2n + m (R +
1)``): memory is ``O(d^2)`` with forgetting (the window also keeps its ``window`` regression
vectors, which it must subtract when they leave).  The model is the fit of these statistics by
:meth:`dmdidc.DMDidc.fit_statistics` (the block test, the delay recovery and the intervals are
DMDidc's own), solved when asked and cached until the next update.  The default estimator is
**instrumental variables** (2SLS with the inputs lagged beyond ``R`` as instruments: ``v_k``
then also holds ``u_{k-R-1} .. u_{k-R-L}``), consistent under measurement noise on the states;
``estimator="ls"`` is least squares, which that noise biases (errors in variables: on random
plants at 30 dB its delay was off by up to 0.35 T where IV's error was below 0.005 T).

**One sample per call.**  A live controller feeds a sample a period; such a call, complete (no
NaN) and quiet (no alarm, not the end of the warmup, no window), takes a path without the chunk
machinery: ``v_t`` gathered from a buffer of the recent inputs, the rank-one update ``G <- G +
(lambda / c) v v^T`` in place by BLAS with the decay kept in a scalar ``c`` (applied when the
statistics are read), and the CUSUM step from the predictor whitened once per refresh.  It
keeps the chunk path's statistics (to rounding), events, growth and counts (tested on streams
with lost samples, a change and a growth); any other call takes the chunk path.

**Lost packets.**  A NaN anywhere in ``x_t`` or ``u_t`` marks sample ``t`` as lost: exactly the
regression rows that involve it are skipped (rows ``t - 1`` and ``t`` for a lost state, rows
``t .. t + R + L`` for a lost input: every row holding one of its lags); nothing is
interpolated.  With ``lost_inputs="hold"`` a NaN input is instead a lost command packet: the
actuator held its last applied value, which is used (per entry).  Lost samples are counted
(``dropped_samples_``) and grouped into bursts (``drop_bursts_``).  Forgetting follows the
clock, not the received rows: a gap ages the statistics as the time that passed.

**Rows recorded around a level.**  The moments are kept about a shift ``c`` (the first row,
then the rows' weighted mean each time the statistics are read): ``sum w (v - c)(v - c)^T``
and ``sum w (v - c)``, from which :meth:`OnlineDMDidc.statistics` returns the moments about
zero, scaled so that the weights sum to their count (:meth:`~dmdidc.SufficientStatistics.
weighted`: the fit's centring removes the weighted mean only then).  Kept about zero, every
update rounded at ``eps`` times the squared level, and the rounding accumulated: one sample a
call at a level 2e4 times the states' deviations gave a centred Gram 1.7e-5 off (correlation
units; 7.7e-8 about the mean), at 2e5 times a residual covariance 2-15 % off.  What remains is
the fit's own centring of moments about zero, ``eps (level / deviation)^2`` once: at 2e6
times the residual covariance is rounding (the block checks fail with ``T^2`` of 1e12-1e15),
beyond it the centred moments are singular (an InsufficientExcitationError).  The stream says
so (:meth:`OnlineDMDidc._level_rounding`): a :class:`~dmdidc.DiagnosticWarning` at its checks
or on access once the rounding of a residual variance may reach 10 % of it (estimated
pessimistically from the levels its residual reaches through the coefficients; ``eps
level^2`` alone was up to 3x optimistic: 15-18 % off at 2e4 deviations and 60 dB, quiet), or
when one came out negative (then the coefficients and delays are rounding too: a delay read
1.0 s for 1.25 s at 80 dB), and the error names the level.  Remove a known operating point
from the states streamed that far (the warning fires from about 2e4 deviations at 60 dB).  The
detector's predictor (below) is the affine fit of the moments about the mean, and a row is
scored as ``v - mean``: fitted through zero, at 2e5 deviations it was undefined on one random
plant of 8 (the detector never armed) and flagged delay steps 280 samples late on 2 of 4 (now
at the sample it flags at level 0).

**Change detection.** Every received row's one-step prediction residual ``e_k`` (a priori: with the
coefficients of the previous refresh, every ``refresh`` rows, inside a chunk too; least squares'
coefficients whatever the estimator, the smallest one-step residuals) is normalized by the running
residual covariance ``Sigma`` of that regression, ``q_k = e_k^T Sigma^{-1} e_k`` (chi-square with
``n`` degrees of freedom while the model holds), and a CUSUM of the log-likelihood ratio of a
covariance inflated by ``kappa`` (``magnitude``), ``l_k = (1 - 1/kappa) min(q_k, c) / 2 - (n /
2) ln kappa`` (the score clipped: *Outliers* below), runs over them: ``g_k = max(0, g_{k-1} +
l_k)``. Its mean drift is negative on a stationary plant and jumps positive when the delay or
the plant changes (the old delay blocks mispredict every sample). When the evidence (below)
exceeds ``threshold`` an event is recorded, the statistics older than the CUSUM's change-point
estimate (the last sample where ``g`` was zero) are shrunk to the weight of ``p`` samples (kept
only so the model stays defined), and the detector rests for ``warmup`` received samples while
the new plant is learned. False alarms, measured: no event in 20 000 stationary samples on each
of 20 random plants at 30 dB with 3 % lost samples (4 in the tests); the CUSUM peaked at 19.8
against the default threshold 35 (the residuals of noisy states are correlated, so the
white-residual run length ``~exp(threshold)`` is optimistic). Changes of the delay by 0.2 T or
more, or of ``A_c`` by 60 %, were flagged 6-10 received rows after them on 30 plants (0-6
before the outlier rules below; more with lost samples, noise or weaker changes: up to 38
samples at 10 % lost, 192 at 20 dB, docs/live-identification.md).

**Outliers.**  A spike in one state sample ``x_t`` (a sensor glitch) spoils two rows, ``t - 1``
(its target) and ``t`` (a regressor), by as much as it likes: one such sample once raised the
CUSUM to 1.2e5 and was taken for a change (each discarding the older data). So no row adds more
than ``threshold / 5`` (:data:`_ROWS_TO_ALARM`): its score is clipped at ``c = (threshold / 5 +
(n / 2) ln kappa) / ((1 - 1/kappa) / 2)`` (32 for ``n = 3`` at the defaults, a chi-square tail
of 5e-7: clean rows are not clipped), and the alarm is raised on the *evidence*, the CUSUM less
the largest increase that one sample's two rows (two consecutive received rows) gave its
excursion. That evidence never exceeds the CUSUM of the other rows (tested), so no single sample
can raise an alarm, and a change needs the evidence of at least 5 more rows (the price: 6-10
samples to detect it). Each row enters the statistics with the weight ``min(1, c' / q_k)``,
with ``c' = max(c, chi2.isf(1e-7, n))`` (the clip's own tail grows with ``n``: 3.2e-5 at ``n =
20``, and at ``n = 12`` it named a clean row), so its weighted score is at most ``c'``: a row
adds at most ``c'`` (in units of ``Sigma``) to the residual moments, and a spike's rows weigh
about 1e-4 (one-step IRLS with the a priori predictor and a redescending weight, where the
batch fit's robust IV iterates Huber weights). A row beyond ``c'`` is recorded in ``outliers_``
as the sample it spoils (the target of its first row: ``x_t``; ``x_t`` also when row ``t - 1``
was lost and row ``t + 1`` is clean), those from a detected change's onset on are dropped from
it (they were the change). The rows received while the detector rests (the first ``warmup``
rows, and those after each alarm) have no predictor to score them and enter with weight 1; when
it arms, they are rebuilt from the ring of raw samples (*Learning the bound*), scored with the
new predictor (deleted residuals ``q / (1 - h)^2``: a spike whose target row was lost is a
leverage point) against a robust residual covariance (the rows within 5 MAD-standard deviations:
the statistics' own is inflated by the outliers), and those beyond ``c'`` are down-weighted and
named as above, the row after the first of a run taking its weight (it holds the spoiled sample
as a regressor: a leverage point the predictor fits, three spikes in 500 rows masked each
other), the predictor refitted and the rows scored again until the weights settle (IRLS). The
rows a growth of the bound rebuilds from the ring enter with weight 1 too, and the detector
rests after it: they are screened so when it re-arms (each sample named once). The rows of the
chunk under way are screened as received; those of earlier chunks only as far as the ring still
holds them (without a ring, ``max_delay_limit = max_delay``, not at all). Not covered: a spike
in a logged input the plant did not receive (it spoils ``R + 1`` rows), and a second outlier
within the same CUSUM excursion (a few dozen rows after the first) when the CUSUM already sits
high.

**Undetermined delays.**  A channel whose input blocks are all insignificant in the block test
(on few rows: the first ones, or the first after a detected change, when the statistics
restart; or a channel the data do not excite) has no delay the data support: its ``delay`` and
``delay_ci`` are NaN and ``delay_status_`` says why, instead of the fit's 0 (measured in the
closed loop of :mod:`simulations.studies.adaptive_delay`: 0 with no interval for 50-300
samples after the change on most plants).  The other channels keep their estimates.

**Learning the bound.** When the warmup ends (at the start, after a change, after a growth) and
every 5000 received rows after, the block test of the detector's regression decides, by
DMDidc's own rule (:func:`~dmdidc.inference.diagnostics.beyond_bound`, that of its ``effect``
and ``delay_bound`` checks), whether a channel's delay may exceed the bound: no significant
block within it, or the first one is the last, ``B^(R)``. Then ``R`` grows to ``min(2 R + 1,
max_delay_limit)`` (the blocks double). A channel without any significant block grows the bound
only when a least-squares refit of the ring's samples (below) at ``max_delay_limit`` finds a
significant block of it beyond ``R``: a weak channel shows no block either until enough rows
accumulate (a trial's stream grew 3 -> 7 -> 15 at its warmup's end for a channel whose batch
``T^2`` was 267). Without that evidence the channel is checked again a warmup later; still
silent, one :class:`~dmdidc.DiagnosticWarning` says it shows no effect within the limit (below
the noise, or a delay beyond the limit), and nothing grows. The moments of the new lags cannot
be derived from the ``O(d^2)`` statistics, so these are rebuilt from a ring of the last
``max(20 p, 500) + R + L + 1`` raw samples (``p``, ``R`` and ``L`` of the limit; ``n + m``
numbers a sample: 1400 samples for 4 states, 2 inputs and ``R = 7``, whose default limit is
31): their rows in the grown layout (those after the last change's onset, weighted by the clock
as if received so) replace the statistics, and the detector rests for what the warmup still
lacks, then checks the bound again. Measured on 60 random plants with delays of 2.2-6 T and
``max_delay=2`` (2 -> 5 -> 11), 30 dB, 3 % lost, forgetting 0.999, a window of 1500 or no
detector: every delay within 0.016 T after 1000 samples; on 20 plants whose delay stepped by
2.5-4 T past ``max_delay=3``: the bound grew 750 samples after the step (when the detector
re-armed) and the delays were within 0.013 T 1000 samples after it (without the detector, the
periodic check caught it 3500-3750 samples after the step); no growth on 20 plants with delays
inside the bound (20 000 samples each). Growth is recorded in ``bound_events_``; at
``max_delay_limit`` one :class:`~dmdidc.DiagnosticWarning` names the limit and the remedy.
"""

from __future__ import annotations

import collections
import copy
import functools
import math
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.linalg import blas
from scipy.stats import chi2

from _toolbox.validation import check_in_interval, check_integer, check_positive
from dmdidc.errors import (
    DiagnosticWarning,
    DimensionError,
    InsufficientExcitationError,
    NonFiniteError,
    ParameterError,
    warn_model,
)
from dmdidc.inference.ambiguity import delay_ambiguity
from dmdidc.inference.blocks import block_test
from dmdidc.inference.diagnostics import beyond_bound
from dmdidc.inference.intervals import IntervalEstimate
from dmdidc.regression.robust import _MAD_TO_SIGMA
from dmdidc.regression.solution import EXACT_FIT
from dmdidc.statistics.fit import regression_from_statistics
from dmdidc.statistics.layout import StatisticsLayout
from dmdidc.statistics.statistics import SufficientStatistics
from dmdidc.statistics.streaming import _default_lags

__all__ = ["OnlineDMDidc", "ChangeEvent", "BoundEvent", "Outlier"]

#: Received rows between two checks of the delay bound (besides the one when the warmup ends):
#: a block test (about 0.15 ms at p = 20) on the predictor's regression, about 0.03 us a row.
_BOUND_EVERY = 5000
#: Fewest rows, besides the two of the sample that gives the most, whose evidence can raise an
#: alarm: a row's CUSUM increment is at most ``threshold`` over it (module notes, *Outliers*).
_ROWS_TO_ALARM = 5
#: Reweighting passes over the rows of a warmup when the detector arms (IRLS; module notes).
_SCREEN_ITERATIONS = 10
#: Outliers within a warmup's worth of samples that :meth:`OnlineDMDidc.outlier_rate_warning`
#: reports (Gaussian noise gives about 5e-5).
_OUTLIERS_TO_WARN = 3
#: Share of the residual variances that the rounding of the fit's centring (states recorded
#: around a level) may reach before the stream warns (:meth:`OnlineDMDidc._level_rounding`).
_LEVEL_SHARE = 0.1
#: Rounding of a residual variance from the fit's centring of moments about zero, in units of
#: ``eps`` times the squared level its residual reaches (``|c_y| + |theta| |c_x|``): the
#: error measured was at most 1.65 of that unit (LS on 16 random plants, IV on 8, 30-80 dB,
#: levels 4-2e6 times the deviations); over twice that keeps the warning pessimistic.
_LEVEL_ROUNDING = 4.0
#: Share of the states' variances rounded away beyond which a failed fit's error names the
#: level (at 2e7 deviations: 0.13).
_LEVEL_LOST = 1e-4
#: Chi-square tail of a clean row's score beyond which it is an outlier, at least (the
#: CUSUM's clip may lie further out; :meth:`OnlineDMDidc._outlier_limit`).
_OUTLIER_TAIL = 1e-7


@dataclass
class ChangeEvent:
    """A change flagged by the detector of :class:`OnlineDMDidc`.

    Attributes
    ----------
    sample : int
        Time index ``k`` of the row at which the CUSUM crossed the threshold.
    onset : int
        The CUSUM's estimate of when the change began (the statistics before it were shrunk).
    old_delay : ndarray, shape (m,) or None
        Delay estimate (s) just before the event (NaN for an undetermined channel,
        ``delay_status_``; ``None`` if the fit failed).
    new_delay : ndarray, shape (m,) or None
        Delay estimate (s) when the detector re-armed, ``warmup`` samples later (``None``
        until then; if the bound had to grow then, at the re-arming after the growth).
    statistic : float
        The detector's evidence at the alarm: the CUSUM less the largest increase one sample
        gave it (module notes, *Outliers*), above ``threshold``.
    """

    sample: int
    onset: int
    old_delay: np.ndarray | None
    new_delay: np.ndarray | None
    statistic: float


@dataclass(frozen=True)
class Outlier:
    """A sample whose rows the detector of :class:`OnlineDMDidc` read as an outlier (module
    notes, *Outliers*): down-weighted in the statistics, not taken for a change.

    Attributes
    ----------
    sample : int
        The sample ``t`` whose state ``x_t`` is out of line: the first row it spoils predicts
        it (row ``t - 1``), the next holds it as a regressor (row ``t``).
    score : float
        ``q`` of row ``t - 1``, the residual's squared Mahalanobis norm (chi-square with ``n``
        degrees of freedom, mean ``n``, while the model holds).
    weight : float
        That row's weight in the statistics, ``clip / q`` (1 for a row within the clip).
    """

    sample: int
    score: float
    weight: float


@dataclass(frozen=True)
class BoundEvent:
    """A growth of the delay bound of :class:`OnlineDMDidc`.

    Attributes
    ----------
    sample : int
        Samples received when the bound grew.
    old_max_delay, new_max_delay : int
        The bound ``R`` before and after.
    channels : tuple of int
        The input channels whose delay may exceed the old bound (no significant block within
        it, or the first one is the last, ``B^(R)``).
    rows : int
        Regression rows of the recent raw samples the grown statistics were rebuilt from.
    """

    sample: int
    old_max_delay: int
    new_max_delay: int
    channels: tuple[int, ...]
    rows: int


class OnlineDMDidc:
    """DMDidc on a live stream: forgetting statistics, lost samples and change detection.

    See the module notes for the estimator, the lost-sample rule, the detector and the growth
    of the delay bound.

    Parameters
    ----------
    max_delay : int
        ``R``, the initial delay bound in periods (as :class:`~dmdidc.DMDidc`).
    max_delay_limit : int or None, default None
        The largest bound growth may reach (module notes, *Learning the bound*): when a
        channel's delay may exceed the bound, ``R`` grows to ``min(2 R + 1, max_delay_limit)``
        and the statistics are rebuilt from the recent raw samples.  ``None``: ``4 R + 3`` (two
        doublings of the blocks); ``max_delay`` keeps the bound fixed.  At the limit a
        :class:`~dmdidc.DiagnosticWarning` names it and the remedy.
    dt : float
        Sampling period ``T`` (s).
    forgetting : float in (0, 1] or None, default None
        ``lambda``: each row's weight is multiplied by it per sample (memory about
        ``1 / (1 - lambda)`` samples).  ``None`` (and 1) keep every sample with equal weight
        unless ``window`` is given.
    window : int or None, default None
        Keep exactly the rows of the last ``window`` samples instead (not with
        ``forgetting``).
    estimator : {"iv", "ls"}, default "iv"
        Instrumental variables with lagged inputs (consistent under measurement noise) or
        least squares (module notes).
    instrument_lags : int or None, default None
        ``L`` of the IV instruments (default: the smallest giving ``n`` more instruments than
        regressors, as :class:`~dmdidc.DMDidc`).
    detect : bool, default True
        Run the change detector.
    threshold : float, default 35.0
        CUSUM threshold ``h`` (module notes).
    magnitude : float, default 2.0
        ``kappa > 1``, the residual-covariance inflation the CUSUM is tuned to.
    warmup : int or None, default None
        Received rows before the detector arms (at the start and after each event); default
        ``max(20 p, 500)`` with ``p = n + m (R + 1)`` regressors.
    lost_inputs : {"skip", "hold"}, default "skip"
        What a NaN in ``U`` means.  ``"skip"``: the record of the input is lost (the plant
        applied something unknown): the rows holding it are skipped.  ``"hold"``: the command
        packet was lost and the actuator held its last applied value, which is then used (per
        entry; the sample still counts as lost).
    refresh : int, default 200
        Received rows between re-solves of the detector's one-step predictor (a solve costs
        about a millisecond; amortized over ``refresh`` rows it keeps the per-sample cost
        ``O(d^2)``).  The predictor is a priori either way: the residuals of a chunk use the
        coefficients of an earlier one.

    Attributes
    ----------
    max_delay_ : int
        The current bound ``R`` (``max_delay`` until it grows).
    bound_events_ : list of BoundEvent
        Every growth of the bound.
    estimator_ : DMDidc
        The DMDidc fit of the current statistics (``A_c``, ``B_c``, ``model_``,
        ``confidence_intervals``, ... are forwarded to it).
    delay : ndarray, shape (m,)
        The fit's delay (s), NaN for a channel whose delay is undetermined; ``delay_ci(level)``
        likewise.
    delay_status_ : list of str
        Per channel ``"determined"`` or the reason it is not (module notes).
    dropped_samples_ : int
        Samples ``t`` (of the complete ones, ``t < samples_seen_``) with a NaN in ``x_t`` or
        ``u_t``.
    drop_bursts_ : list of (int, int)
        ``(start, length)`` of every run of consecutive lost samples.
    events_ : list of ChangeEvent
    outliers_ : list of Outlier
        Samples read as outliers (module notes, *Outliers*), down-weighted in the statistics;
        those after a detected change's onset are dropped from it (they were the change).
    samples_seen_ : int
        Inputs received (lost ones included).
    rows_used_ : int
        Complete regression rows received (the others involve a lost sample); with a window,
        the statistics hold those of the last ``window`` samples.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, OnlineDMDidc, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 3000, rng=0)
    >>> X = plant.simulate([0.0], U)
    >>> X[:, 100:103] = np.nan                       # three lost packets
    >>> live = OnlineDMDidc(max_delay=3, dt=1.0, forgetting=0.999)
    >>> for a in range(0, 3000, 500):                # chunks overlap by one state
    ...     live = live.update(X[:, a:a + 501], U[:, a:a + 500])
    >>> bool(abs(live.delay[0] - 1.5) < 1e-6), live.dropped_samples_, live.drop_bursts_
    (True, 3, [(100, 3)])
    """

    def __init__(self, *, max_delay: int, dt: float, forgetting: float | None = None,
                 window: int | None = None, estimator: str = "iv",
                 instrument_lags: int | None = None, detect: bool = True,
                 threshold: float = 35.0,
                 magnitude: float = 2.0, warmup: int | None = None, refresh: int = 200,
                 lost_inputs: str = "skip", max_delay_limit: int | None = None) -> None:
        self.max_delay = check_integer("max_delay", max_delay, minimum=0)
        self.max_delay_limit = 4 * self.max_delay + 3 if max_delay_limit is None else \
            check_integer("max_delay_limit", max_delay_limit, minimum=self.max_delay)
        self.dt = check_positive("dt", dt)
        if forgetting is not None and window is not None:
            raise ParameterError(f"give forgetting or window, not both; got forgetting="
                                 f"{forgetting!r} and window={window!r}")
        self.forgetting = 1.0 if forgetting is None else check_in_interval(
            "forgetting", forgetting, 0.0, 1.0, low_open=True)
        self.window = None if window is None else check_integer("window", window, minimum=1)
        if estimator not in ("iv", "ls"):
            raise ParameterError(f"estimator must be 'iv' or 'ls'; got {estimator!r}")
        self.estimator = estimator
        self.instrument_lags = None if instrument_lags is None else check_integer(
            "instrument_lags", instrument_lags, minimum=1)
        self.detect = bool(detect)
        self.threshold = check_positive("threshold", threshold)
        self.magnitude = check_in_interval("magnitude", magnitude, 1.0, np.inf, low_open=True)
        self.warmup = None if warmup is None else check_integer("warmup", warmup, minimum=1)
        self.refresh = check_integer("refresh", refresh, minimum=1)
        if lost_inputs not in ("skip", "hold"):
            raise ParameterError(f"lost_inputs must be 'skip' or 'hold'; got {lost_inputs!r}")
        self.lost_inputs = lost_inputs
        self._layout: StatisticsLayout | None = None
        self._chunk_rows: tuple | None = None    # (V, times, t0) of the chunk being added

    # ------------------------------------------------------------------ streaming
    def _start(self, n: int, m: int) -> None:
        self._now = 0                            # rows are weighted lambda^(now - k)
        self._last_state: np.ndarray | None = None
        self.samples_seen_ = self.rows_used_ = self.dropped_samples_ = 0
        self.drop_bursts_: list[tuple[int, int]] = []
        self.events_: list[ChangeEvent] = []
        self.outliers_: list[Outlier] = []
        self.bound_events_: list[BoundEvent] = []
        self._configure(n, m, self.max_delay)
        # A ring of the recent raw samples (x_t and u_t in column t mod size) that growth
        # rebuilds from: the warmup of the largest bound and the input lags of its first row.
        size = 0
        if self.max_delay_limit > self.max_delay:
            cap = self._layout_for(n, m, self.max_delay_limit)
            size = max(self._resolved_warmup(cap), 20 * cap.n_regressors) + cap.first_sample + 1
        self._raw_X, self._raw_U = np.full((n, size), np.nan), np.full((m, size), np.nan)

    def _layout_for(self, n: int, m: int, R: int) -> StatisticsLayout:
        kind = "inputs" if self.estimator == "iv" else None
        lags = 0 if kind is None else _default_lags(kind, self.instrument_lags, n, m, R, 0)
        return StatisticsLayout(n, m, R, kind, lags, 0)

    def _configure(self, n: int, m: int, R: int) -> None:
        """Empty statistics, input history and detector for the bound ``R``."""
        self.max_delay_ = R
        self._layout = self._layout_for(n, m, R)
        d = self._layout.dimension
        self._gram, self._sums, self._weight = np.zeros((d, d)), np.zeros(d), 0.0
        self._scale = 1.0                        # the moments are _scale * (_gram, _sums)
        # the moments are those of v - _shift, the rows' weighted mean when last read
        # (module notes, *Rows recorded around a level*); None until the first row
        self._shift: np.ndarray | None = None
        # (times, V, weight) of the rows the window holds (weight < 1 after an event)
        self._rows: collections.deque = collections.deque()
        self._lags = self._layout.first_sample  # input lags in v_k (regressors, instruments)
        # The one-sample path's sample: [x_t; x_{t+1}; u_t; u_{t-1} .. u_{t-R-L}], then v_t is
        # one gather from it.  Its recent inputs, u_{t-1} .. u_{t-R-L} (NaN: none yet) then room
        # for one more, are the chunk path's input history too; shifted by m with u_t written
        # in front, they are the inputs of v_t in order.
        self._sample = np.full(2 * n + m * (self._lags + 1), np.nan)
        self._states, self._recent = self._sample[:2 * n].reshape(2, n), self._sample[2 * n:]
        inputs = 2 * n + np.arange(m * (self._lags + 1))
        past = m * (R + 1)                       # v = [x_t; u_t .. u_{t-R}; x_{t+1}; instruments]
        self._gather = np.concatenate([np.arange(n), inputs[:past], n + np.arange(n),
                                       inputs[past:]])
        self._v = np.empty(d)
        self._warmup_left = self._resolved_warmup()
        self._reset_cusum()
        self._since_solve = self._since_bound = self._since_continuous = 0
        self._bound_due = False                  # check the bound after this chunk
        self._filled = False                     # the last event's new_delay was just set
        self._capped = False                     # the limit's warning was issued
        self._silent_since: int | None = None    # rows_used_ at the first check of a silence
        self._discrete_only = False              # the no-continuous-model warning was issued
        self._level: str | None = None           # the last fit's level finding (_level_rounding)
        self._level_warned = 0                   # the severity it was warned at
        self._checking = False                   # _check_continuous's quiet fit under way
        # Theta, Sigma^{-1}, the rows' mean (_predictor_from_fit)
        self._predictor: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._whitening: tuple = (None,) * 7    # (_whitener: predictor, W, .., kappa, h)
        self._solution = None                    # the predictor's regression
        self._fit = None

    def update(self, X: Any, U: Any) -> OnlineDMDidc:
        """Add a chunk: states ``X`` (n, L + 1) and inputs ``U`` (m, L).

        As :meth:`dmdidc.DMDidc.partial_fit`: ``X[:, 0]`` is the previous chunk's last state
        (on the first call, the first state).  NaN entries are lost samples (module notes).

        Returns
        -------
        self

        Raises
        ------
        DimensionError
            Wrong shapes, sizes that change, or ``X[:, 0]`` not continuing the previous chunk.
        NonFiniteError
            Infinite entries (a lost sample is NaN; infinity is a fault).
        """
        if self._one_sample(X, U):
            self._after_chunk(1)
            return self
        X, U = _chunk("X", X), _chunk("U", U)
        if X.shape[1] != U.shape[1] + 1:
            raise DimensionError(f"X has {X.shape[1]} columns and U {U.shape[1]}; X needs one "
                                 f"more (x_t .. x_(t+L) with u_t .. u_(t+L-1))")
        if self._layout is None:
            self._start(X.shape[0], U.shape[0])
        n, m = self._layout.n_states, self._layout.n_inputs
        if X.shape[0] != n or U.shape[0] != m:
            raise DimensionError(f"chunk has {X.shape[0]} states and {U.shape[0]} inputs; "
                                 f"earlier chunks had {n} and {m}")
        if self._last_state is not None and not np.array_equal(X[:, 0], self._last_state,
                                                               equal_nan=True):
            raise DimensionError("X[:, 0] does not continue the previous chunk (it must equal "
                                 "its last state, NaN for a lost one)")
        L, t0 = U.shape[1], self.samples_seen_
        lost_x = np.isnan(X).any(axis=0)
        lost = lost_x[:L] | np.isnan(U).any(axis=0)
        self._count_lost(lost, t0)
        V, times = self._regression_rows(X, U, t0)
        self._last_state = X[:, -1].copy()
        self.samples_seen_ = t0 + L
        self._chunk_rows = (V, times, t0)        # (a warmup's screening reads them)
        counted = self._process(V, times)
        self._chunk_rows = None
        if self._raw_U.shape[1]:                 # (x_t0 was stored with the previous chunk)
            _ring_write(self._raw_X, t0 + 1 if t0 else 0, X[:, 1:] if t0 else X)
            _ring_write(self._raw_U, t0, U)
        self._advance(t0 + L)
        self._after_chunk(int(times.size), counted)
        return self

    def _after_chunk(self, rows: int, counted: int = 0) -> None:
        """Refresh the predictor and check the bound when due, after ``rows`` received rows
        (of which ``counted`` came before a refresh inside the chunk)."""
        self._fit = None
        self._since_solve += rows - counted
        self._since_bound += rows
        if self._warmup_left == 0 and self.detect and (
                self._predictor is None or self._since_solve >= self.refresh):
            self._predictor = self._predictor_from_fit()
        fresh = self._since_solve == 0           # (the predictor's regression is reused)
        # a silence seen at the last check is checked again a warmup's rows later
        again = (self._silent_since is not None
                 and self.rows_used_ - self._silent_since >= self._resolved_warmup())
        if self._bound_due or again or (self._since_bound >= _BOUND_EVERY
                                        and (fresh or not self.detect)):
            self._check_bound()
        self._since_continuous += rows
        if self._since_continuous >= _BOUND_EVERY and not self._warmup_left:
            self._check_continuous()             # (the bound's check waits for a fresh one)

    def _one_sample(self, X: Any, U: Any) -> bool:
        """The update by one complete sample, in place, if nothing special happens (else
        ``False``, with nothing changed, and the chunk path handles it).

        A live controller feeds one sample per period: this path does what the chunk path
        does for it (the same rank-one update ``G <- lambda G + v v^T``, the same CUSUM step)
        without its per-chunk array work.  It declines a NaN or infinite entry (the chunk
        path counts or rejects it), a window, the end of the warmup and an alarm.
        """
        layout = self._layout
        if (layout is None or self._last_state is None or self.window is not None
                or type(X) is not np.ndarray
                or type(U) is not np.ndarray or X.dtype != np.float64 or U.dtype != np.float64
                or X.shape != (layout.n_states, 2) or U.shape != (layout.n_inputs, 1)):
            return False
        if X[:, 0].tolist() != self._last_state.tolist():
            return False                         # (a broken chain, or a lost state: NaN)
        m, recent, u = layout.n_inputs, self._recent, U[:, 0]
        self._states[...] = X.T
        recent[m:] = recent[:-m]                 # (numpy copies overlapping slices safely)
        recent[:m] = u
        v = self._sample.take(self._gather, out=self._v)
        armed = self.detect and self._predictor is not None
        if not math.isfinite(v.dot(v)):
            decline = True                       # (a lost sample or a fault)
        elif armed:
            q = self._score(v)
            _, _, gain, offset, _, clip, _ = self._whitening     # (cached by _score)
            # (the steps of _detector_path for one row; an outlier row takes the chunk path)
            step = gain * q - offset
            decline = q > clip or self._cusum + step - self._pair_max > self.threshold
        else:
            decline = self._warmup_left == 1     # (the detector arms: the chunk path)
        if decline:
            recent[:-m] = recent[m:]             # (back: only the spare slot is lost)
            return False
        t = self.samples_seen_
        self._last_state[:] = X[:, 1]
        self.samples_seen_ = t + 1
        if self._raw_U.shape[1]:
            size = self._raw_U.shape[1]
            self._raw_X[:, (t + 1) % size] = X[:, 1]
            self._raw_U[:, t % size] = u
        weight = self.forgetting                 # row t weighs lambda^(now - t), now = t + 1
        if weight < 1.0:                         # (as _advance then _add; the decay of the
            decay = weight ** (t + 1 - self._now)   # moments is deferred to a scalar)
            self._scale *= decay
            self._weight *= decay
            if self._scale < 1e-100:
                self._settle()
        if self._shift is None:
            self._shift = v.copy()
        np.subtract(v, self._shift, out=v)
        # in place by BLAS (G is symmetric, so its transpose is the Fortran-ordered G)
        blas.dger(weight / self._scale, v, v, a=self._gram.T, overwrite_a=1)
        blas.daxpy(v, self._sums, a=weight / self._scale)
        self._weight += weight
        self._now = t + 1
        self.rows_used_ += 1
        if armed:
            self._step_cusum(step, t)
        elif self._warmup_left:
            self._warmup_left -= 1
        return True

    def _whitener(self) -> tuple:
        """``(predictor, W, gain, offset, kappa, clip, threshold)``, cached per predictor,
        ``magnitude`` and ``threshold`` (public attributes that may change between chunks):
        ``W = Sigma^{-1/2} [-Theta, I]`` (zero on the instruments) so that ``|W v - b|^2``,
        ``b = W mean`` (``_bias``), is the residual's ``q = r' Sigma^{-1} r``; the CUSUM
        increment of a row is ``l = gain min(q, clip) - offset`` with ``gain = (1 - 1/kappa)
        / 2``, ``offset = n log(kappa) / 2`` and ``clip`` the score at which ``l`` reaches
        ``threshold / _ROWS_TO_ALARM`` (module notes, *Outliers*).  The one-sample and the
        chunk paths both use it: one definition of ``l``."""
        if (self._whitening[0] is not self._predictor or self._whitening[4] != self.magnitude
                or self._whitening[6] != self.threshold):
            theta, precision, mean = self._predictor
            values, vectors = np.linalg.eigh(0.5 * (precision + precision.T))
            root = np.sqrt(np.maximum(values, 0.0))[:, None] * vectors.T
            n, p = theta.shape
            residual = np.zeros((n, self._layout.dimension))   # (no slicing of v)
            residual[:, :p], residual[:, p:p + n] = -theta, np.eye(n)
            kappa = self.magnitude
            gain, offset = 0.5 * (1.0 - 1.0 / kappa), 0.5 * n * math.log(kappa)
            clip = (self.threshold / _ROWS_TO_ALARM + offset) / gain
            W = root @ residual
            self._whitening = (self._predictor, W, gain, offset, kappa, clip, self.threshold)
            self._bias = W @ mean                # (W (v - mean) = W v - _bias)
        return self._whitening

    def _score(self, v: np.ndarray) -> float:
        """``q = r' Sigma^{-1} r`` of one regression vector ``v`` (:meth:`_whitener`)."""
        whitening = self._whitening     # (the cache read inline: a call is 7 % of this step)
        if (whitening[0] is not self._predictor or whitening[4] != self.magnitude
                or whitening[6] != self.threshold):
            whitening = self._whitener()
        z = whitening[1].dot(v) - self._bias
        return float(z.dot(z))

    def _outlier_limit(self) -> float:
        """The score beyond which a row is an outlier (down-weighted to ``limit / q`` and
        named): the CUSUM's clip, or the chi-square tail of :data:`_OUTLIER_TAIL` if that
        is higher (the clip's tail grows with ``n``: 4.8e-7 at ``n = 3``, 3.2e-5 at ``n =
        20``, which named clean rows on 12-state plants)."""
        clip = self._whitener()[5]
        return max(clip, _chi2_limit(self._layout.n_states))

    def _increments(self, q):
        """The CUSUM increments ``l = gain min(q, clip) - offset`` of scores ``q``."""
        _, _, gain, offset, _, clip, _ = self._whitener()
        return gain * np.minimum(q, clip) - offset

    def _reset_cusum(self) -> None:
        # the CUSUM g, the largest increase one sample's two rows gave its excursion, and the
        # last row's increase (module notes, *Outliers*); the excursion's first row (the
        # change's onset if it alarms: it may lie in an earlier chunk)
        self._cusum = self._pair_max = self._last_rise = 0.0
        self._excursion_start: int | None = None

    def _step_cusum(self, increment: float, t: int) -> None:
        """One row of :meth:`_detector_path` (the one-sample path), received at ``t``."""
        g = self._cusum + float(increment)
        if g <= 0.0:
            self._reset_cusum()
            return
        if self._cusum <= 0.0:
            self._excursion_start = t
        rise = max(float(increment), 0.0)
        self._cusum, self._pair_max = g, max(self._pair_max, self._last_rise + rise)
        self._last_rise = rise

    def _regression_rows(self, X: np.ndarray, U: np.ndarray, t0: int
                         ) -> tuple[np.ndarray, np.ndarray]:
        """The complete regression vectors ``v_k`` of a chunk starting at sample ``t0`` and
        their times, after the input history (which then moves on to the chunk's end)."""
        L, R, lags = U.shape[1], self.max_delay_, self._lags
        m = U.shape[0]
        history = self._recent[:m * lags].reshape(lags, m)[::-1].T   # u_{t0-lags} .. u_{t0-1}
        inputs = np.concatenate([history, U], axis=1)
        if self.lost_inputs == "hold":
            inputs = _held(inputs)
        u = [inputs[:, lags - j:lags - j + L] for j in range(lags + 1)]   # u_{k-j}
        V = np.concatenate([X[:, :L]] + u[:R + 1] + [X[:, 1:]] + u[R + 1:], axis=0)
        keep = ~np.isnan(V).any(axis=0)
        if lags:
            self._recent[:m * lags] = inputs[:, inputs.shape[1] - lags:][:, ::-1].T.ravel()
        return V[:, keep], t0 + np.flatnonzero(keep)

    def _count_lost(self, lost: np.ndarray, t0: int) -> None:
        """Count lost samples and extend the bursts (a run may continue the previous one)."""
        if not lost.any():
            return
        self.dropped_samples_ += int(lost.sum())
        edges = np.diff(np.concatenate([[0], lost.astype(np.int8), [0]]))
        for start, end in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1),
                              strict=True):
            first = t0 + int(start)
            bursts = self.drop_bursts_
            if bursts and bursts[-1][0] + bursts[-1][1] == first:
                bursts[-1] = (bursts[-1][0], bursts[-1][1] + int(end - start))
            else:
                bursts.append((first, int(end - start)))

    def _process(self, V: np.ndarray, times: np.ndarray) -> int:
        """Add the received rows, running the detector over them (module notes); the
        predictor is refreshed every ``refresh`` rows inside the chunk too, as the one-sample
        path refreshes it (one chunk of 3000 rows ran them all on the warmup's predictor: a
        false change on a stationary slow plant).  Returns the rows added before the last
        refresh inside the chunk (counted there)."""
        i, N, refreshed = 0, times.size, 0
        while i < N:
            if self._predictor is None or not self.detect:
                # (warmup done but the predictor undefined: add all, retry after the chunk)
                j = N if not self._warmup_left else min(N, i + self._warmup_left)
                self._add(V[:, i:j], times[i:j])
                if self._warmup_left:
                    self._warmup_left -= j - i
                    if self._warmup_left == 0 and self.detect:
                        self._rearm(times[j - 1])
                    self._bound_due = self._warmup_left == 0
                i = j
                continue
            due = max(self.refresh - self._since_solve - (i - refreshed), 1)
            end = min(N, i + due)
            q, g, evidence, carry = self._detector_path(V[:, i:end])
            weights = self._weights(q)
            alarm = [] if evidence is None else np.flatnonzero(evidence > self.threshold)
            if len(alarm) == 0:
                if weights is not None:
                    self._note_outliers(times[i:end], q)
                self._add(V[:, i:end], times[i:end], weights)
                zeros = np.flatnonzero(g <= 0.0)
                if zeros.size:
                    self._excursion_start = (int(times[i + zeros[-1] + 1])
                                             if i + zeros[-1] + 1 < end else None)
                elif self._cusum <= 0.0:
                    self._excursion_start = int(times[i])
                self._cusum, self._pair_max, self._last_rise = carry
                if end < N:                      # a refresh falls inside the chunk
                    self._predictor = self._predictor_from_fit()
                    refreshed = end
                i = end
                continue
            a = i + int(alarm[0])
            zeros = np.flatnonzero(g[:a - i + 1] <= 0.0)
            onset = i + int(zeros[-1]) + 1 if zeros.size else i
            started = int(times[onset])
            if not zeros.size and self._cusum > 0.0 and self._excursion_start is not None:
                started = self._excursion_start  # (in an earlier chunk or segment)
            self._note_outliers(times[i:onset], q[:onset - i])
            self._add(V[:, i:onset], times[i:onset],
                      None if weights is None else weights[:onset - i])
            self._event(int(times[a]), started, float(evidence[a - i]))
            self._add(V[:, onset:a + 1], times[onset:a + 1])     # (the new plant's rows)
            self._warmup_left = max(self._resolved_warmup() - (a + 1 - onset), 1)
            i = refreshed = a + 1
        return refreshed

    def _detector_path(self, V: np.ndarray, full: bool = False) -> tuple:
        """The detector over the rows of ``V`` from its current state (vectorized; as
        :meth:`_step_cusum` row by row): ``(q, g, evidence, carry)``, the scores, the CUSUM
        ``g_k = S_k - min(-g_0, min_{j <= k} S_j)`` (``S`` the running sum of the increments
        of :meth:`_increments`), the evidence ``g_k`` less the largest increase one sample's
        two rows gave the excursion (module notes, *Outliers*), and the state after the
        last row.  The evidence is at most ``g``: without ``full`` it is ``None`` when ``g``
        stays within the threshold (no alarm; the usual case, a third of the cost)."""
        _, whiten, gain, offset, _, clip, _ = self._whitener()
        Z = whiten @ V - self._bias[:, None]
        q = np.einsum("ik,ik->k", Z, Z)
        increments = gain * np.minimum(q, clip) - offset
        S = np.cumsum(increments)
        g = S - np.minimum(np.minimum.accumulate(S), -self._cusum)
        rise = np.maximum(increments, 0.0)
        if not full and g.max() <= self.threshold:
            # only the state after the last row: that of the last excursion
            zeros = np.flatnonzero(g <= 0.0)
            if zeros.size and zeros[-1] == g.size - 1:
                return q, g, None, (float(g[-1]), 0.0, 0.0)
            first, largest, last = ((zeros[-1] + 1, 0.0, 0.0) if zeros.size
                                    else (0, self._pair_max, self._last_rise))
            tail = rise[first:]
            pairs = tail + np.concatenate([[last], tail[:-1]])
            return q, g, None, (float(g[-1]), max(largest, float(pairs.max())),
                                float(tail[-1]))
        ended = g <= 0.0                         # an excursion ends: the next starts afresh
        before = np.concatenate([[self._last_rise], np.where(ended[:-1], 0.0, rise[:-1])])
        pair = before + rise                     # the two rows of the sample between them
        # the running maximum within each excursion: offset by excursion so that one
        # accumulate serves them all (rises are at most threshold / _ROWS_TO_ALARM each)
        excursion = np.concatenate([[0], np.cumsum(ended[:-1])])
        span = 2.0 * self.threshold / _ROWS_TO_ALARM + 1.0
        key = pair + span * excursion
        key[0] = max(key[0], self._pair_max)
        largest = np.where(ended, 0.0, np.maximum.accumulate(key) - span * excursion)
        evidence = g - largest
        carry = (float(g[-1]), float(largest[-1]), 0.0 if ended[-1] else float(rise[-1]))
        return q, g, evidence, carry

    def _weights(self, q: np.ndarray) -> np.ndarray | None:
        """Each row's weight in the statistics, ``min(1, clip / q)``: the weighted score
        ``w q`` is the clipped score the CUSUM takes (module notes, *Outliers*); ``None``
        when every row is within the clip."""
        clip = self._outlier_limit()
        if q.max() <= clip:
            return None
        return np.minimum(1.0, clip / np.maximum(q, np.finfo(float).tiny))

    def _note_outliers(self, times: np.ndarray, q: np.ndarray) -> None:
        """Record the samples of the rows whose score exceeds the clip (module notes): a
        spike in ``x_t`` spoils row ``t - 1`` (its target) and row ``t`` (a regressor)."""
        clip = self._outlier_limit()
        beyond = q > clip
        if not beyond.any():
            return
        # (a warmup's screening after a growth sees the rows screened before it again)
        known = {o.sample for o in self.outliers_ if o.sample >= times[0]}
        for row in np.flatnonzero(beyond):
            t, score = int(times[row]), float(q[row])
            if (self.outliers_ and self.outliers_[-1].sample == t) or t in known:
                continue                         # x_t as a regressor: the same sample
            sample = t + 1                       # the target of its first spoiled row
            if row and times[row - 1] != t - 1 and row + 1 < times.size \
                    and times[row + 1] == t + 1 and not beyond[row + 1]:
                sample = t                       # row t - 1 lost, row t + 1 clean: x_t
            if sample not in known:
                self.outliers_.append(Outlier(sample, score, clip / score))
                known.add(sample)

    def _event(self, sample: int, onset: int, statistic: float) -> None:
        """Record a change and forget what came before its onset."""
        self._fit = None
        self.events_.append(ChangeEvent(sample, onset, self._delay_or_none(), None, statistic))
        keep = self._layout.n_regressors / max(self._weight, 1.0)
        if keep < 1.0:
            self._gram *= keep
            self._sums *= keep
            self._weight *= keep
            self._rows = collections.deque((t, V, w * keep) for t, V, w in self._rows)
        self._predictor, self._solution = None, None
        self._reset_cusum()
        # the clipped rows from the onset on were the change, not outliers
        self.outliers_ = [o for o in self.outliers_ if o.sample <= onset]
        self._silent_since = None                # (the statistics restart: so does the count)

    def _rearm(self, time: int) -> None:
        self._advance(int(time) + 1)
        self._fit = None
        self._predictor = self._predictor_from_fit()
        if self._predictor is not None and self._screen_warmup(int(time)):
            self._fit = None
            self._predictor = self._predictor_from_fit()
        if self.events_ and self.events_[-1].new_delay is None:
            self.events_[-1].new_delay = self._delay_or_none()
            self._filled = True                  # (emptied again if the bound must grow)

    def _screen_warmup(self, last: int) -> bool:
        """Down-weight the outliers among the rows received while the detector rested (from
        the last change's alarm, or the start, to row ``last``), which entered with weight 1:
        those of the current chunk as received and those before it rebuilt from the ring of
        raw samples (what it still holds) are scored with the new predictor against a robust
        residual covariance (:meth:`_robust_scores`), each row beyond the clip takes the
        weight ``clip / q``, and the predictor is refitted and the rows scored again until
        the weights settle (IRLS, at most :data:`_SCREEN_ITERATIONS` passes; module notes,
        *Outliers*).  Returns whether any row was down-weighted."""
        # (after a change, the rows from the alarm on: those between the onset and the alarm
        # may have been shrunk with the older data)
        start = self.events_[-1].sample + 1 if self.events_ else 0
        V_now, times_now, t0 = self._chunk_rows
        mine = (times_now >= start) & (times_now <= last)
        parts = [(V_now[:, mine], times_now[mine])]
        size = self._raw_U.shape[1]
        first = max(start, t0 + 1 - size, 0)     # (what the ring holds: up to t0)
        end = min(t0, last + 1)                  # the rows before the chunk's
        if size and end > first:
            read = max(first - self._lags, t0 + 1 - size, 0)  # (their lags)
            saved = self._sample.copy()          # (the input history of the stream goes on)
            self._recent[:] = np.nan             # (the rows without theirs: left out)
            V, times = self._regression_rows(_ring_read(self._raw_X, read, end + 1),
                                             _ring_read(self._raw_U, read, end), read)
            self._sample[:] = saved
            parts.insert(0, (V[:, times >= start], times[times >= start]))
        V = np.concatenate([part[0] for part in parts], axis=1)
        times = np.concatenate([part[1] for part in parts])
        n, p = self._predictor[0].shape
        if times.size <= 2 * p:
            return False
        clip = self._outlier_limit()
        weights = np.ones(times.size)            # each rebuilt row's weight as it entered
        scores = None
        for _ in range(_SCREEN_ITERATIONS):
            # IRLS: a spike's regressor row is a leverage point that pulls the first
            # predictor towards it (it shows only once its target row is down-weighted)
            theta, _, mean = self._predictor
            q = self._robust_scores(V - mean[:, None], theta)
            if q is None:
                break
            scores = q
            new = np.where(q > clip, clip / q, 1.0)
            # the row after the first of a run beyond the clip holds the sample that row
            # predicts, as a regressor: a leverage point that the predictor fits (three
            # spikes in 500 rows masked each other), so it takes that row's weight
            beyond = q > clip
            first = beyond[:-1] & (np.diff(times) == 1)
            first[1:] &= ~(beyond[:-2] & (np.diff(times[:-1]) == 1))
            at = np.flatnonzero(first)
            new[at + 1] = np.minimum(new[at + 1], new[at])
            moved = np.flatnonzero(np.abs(weights - new) > 1e-9 * new)
            if not moved.size:
                break
            self._reweight(V[:, moved], times[moved], weights[moved], new[moved])
            weights[moved] = new[moved]
            self._fit = None
            self._predictor = self._predictor_from_fit()
            if self._predictor is None:
                break
        if scores is None or np.all(weights == 1.0):
            return False
        # named by their own scores: a row that only took the weight of the row before it
        # holds the same sample (as a regressor), and would name the sample after it
        self._note_outliers(times, np.where((weights < 1.0) & (scores > clip), scores, 0.0))
        return True

    @staticmethod
    def _robust_scores(V: np.ndarray, theta: np.ndarray) -> np.ndarray | None:
        """``q`` of each row of ``V`` under the predictor ``theta`` against a robust residual
        covariance: that of the rows within 5 MAD-standard deviations of the median in every
        state (the statistics' own is inflated by the outliers); ``None`` if undefined."""
        n, p = theta.shape
        E = V[p:p + n] - theta @ V[:p]
        deviation = np.abs(E - np.median(E, axis=1, keepdims=True))
        scale = _MAD_TO_SIGMA * np.median(deviation, axis=1)
        inside = np.all(deviation <= 5.0 * np.maximum(scale, np.finfo(float).tiny)[:, None],
                        axis=0)
        if inside.sum() <= n:
            return None
        sigma = E[:, inside] @ E[:, inside].T / inside.sum()
        try:
            q = np.einsum("ik,ik->k", E, np.linalg.solve(sigma, E))
            # deleted residuals: a spike held only as a regressor (its target row lost) is a
            # leverage point the predictor fits, e_i = (1 - h_i) e_(i), and went unseen
            R = V[:p]
            h = np.einsum("ik,ik->k", R, np.linalg.solve(R @ R.T, R))
        except np.linalg.LinAlgError:
            return None
        return q / np.maximum(1.0 - h, 1e-6) ** 2

    def _reweight(self, V: np.ndarray, times: np.ndarray, old: np.ndarray, new: np.ndarray
                  ) -> None:
        """Rows ``V`` received at ``times`` with the robust weights ``old`` take ``new``."""
        self._settle()
        if self.window is None:
            change = (old - new) * self.forgetting ** (self._now - times)
            V = self._shifted(V)
            self._gram -= (V * change) @ V.T
            self._sums -= V @ change
            self._weight -= float(change.sum())
            return
        ratio = dict(zip(times.tolist(), (new / old).tolist(), strict=True))
        for held, Vh, weight in self._rows:      # (rows that left the window: nothing)
            for j in np.flatnonzero(np.isin(held, times)):
                taken = weight[j] * (1.0 - ratio[int(held[j])])
                v = Vh[:, j] - self._shift
                self._gram -= taken * np.outer(v, v)
                self._sums -= taken * v
                self._weight -= taken
                weight[j] -= taken

    # ------------------------------------------------------------------ the bound
    def _check_bound(self) -> None:
        """Grow the bound if a channel's delay may exceed it (DMDidc's decision,
        :func:`~dmdidc.inference.diagnostics.beyond_bound`), or warn at the limit."""
        filled, self._filled = self._filled, False
        self._bound_due, self._since_bound = False, 0
        if self._warmup_left:
            return                               # too few rows to tell a cut from noise
        self._check_continuous()
        solution = self._solution               # least squares' predictor, when it decides
        if solution is None:
            try:
                solution = regression_from_statistics(self.statistics(), self.max_delay_,
                                                      estimator=self.estimator)
            except ValueError:
                return
        from dmdidc.estimator import DEFAULT_SIGNIFICANCE  # (that of estimator_'s fit)

        n, m, R = self._layout.n_states, self._layout.n_inputs, self.max_delay_
        test = block_test(solution, n, m, R, significance=DEFAULT_SIGNIFICANCE)
        silent, at_bound = beyond_bound(test, R, solution.relative_residual)
        channels = tuple(sorted(int(i) for i in np.concatenate([silent, at_bound])))
        if not channels:
            self._capped = False                 # (a later episode at the limit warns again)
            self._silent_since = None
            return
        if not at_bound.size:
            # No significant block is no evidence of a delay beyond the bound: a weak channel
            # shows none either until enough rows accumulate (a trial's 2-input stream grew
            # 3 -> 7 -> 15 at its warmup's end, T^2 15.8 against 18.3 for its weaker
            # channel, whose batch T^2 was 267).  Growth needs a block beyond the bound in a
            # refit at the limit's bound; without one, the silence must outlast a second
            # warmup before the stream warns (and nothing grows: no block shows where to).
            if R < self.max_delay_limit and self._acts_beyond(channels):
                self._silent_since = None
                if filled:
                    self.events_[-1].new_delay = None
                self._grow(channels)
                return
            if self._silent_since is None:
                self._silent_since = self.rows_used_
                return
            since, self._silent_since = self._silent_since, self.rows_used_
            if not self._capped:
                self._capped = True
                warn_model(f"input channel(s) {list(channels)} show no effect: no significant "
                           f"input block within max_delay={R}, nor in a refit of the recent "
                           f"samples at max_delay_limit={self.max_delay_limit}, over the "
                           f"{self.rows_used_ - since} rows since the first such check: the "
                           f"effect is below the noise (delay_status_ 'undetermined'), or the "
                           f"delay exceeds max_delay_limit; excite "
                           f"the channel(s) more strongly or longer, or construct OnlineDMDidc "
                           f"with a larger max_delay_limit", DiagnosticWarning)
            return
        if R < self.max_delay_limit:
            if filled:                           # found at the bound: learned again
                self.events_[-1].new_delay = None
            self._grow(channels)
        elif not self._capped:
            self._capped = True
            warn_model(f"the delay of input channel(s) {list(channels)} may exceed "
                       f"max_delay_limit={self.max_delay_limit} periods (no significant input "
                       f"block within it, or the first is the last one): the bound cannot grow "
                       f"further, so the identified delay and model are wrong if the delay is "
                       f"longer; construct OnlineDMDidc with a larger max_delay_limit",
                       DiagnosticWarning)

    def _check_continuous(self) -> None:
        """Warn once (until it has one again) when the current fit has no continuous-time
        model: ``delay``, ``delay_ci``, ``A_c`` and ``B_c`` then raise
        :class:`~dmdidc.LogarithmError` on access, which a stream that warned nothing left as
        a surprise (a trial's stationary stream, weak instruments: an eigenvalue of ``A_d``
        at -0.35 +/- 0.76).  The fit's own ``continuous_model`` check decides, at the bound's
        checks and every 5000 received rows (a fit: 6 ms for 4 states, 2 inputs, ``R = 3``,
        about 1.2 us a row beside the update's 22).  Its fit's rounding at a level (module
        notes, *Rows recorded around a level*) warns here too, once until it is gone."""
        self._since_continuous = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # (the fit's other checks: on access only)
            self._checking = True
            try:
                check = self.estimator_.diagnostics_["continuous_model"]
            except (ValueError, AttributeError, KeyError):    # (as _delay_or_none: no fit)
                return
            finally:
                self._checking = False
        self._warn_level()
        if not check.failed:
            self._discrete_only = False
            return
        if not self._discrete_only:
            self._discrete_only = True
            warn_model(f"after {self.rows_used_} rows the fit has no continuous-time model, so "
                       f"delay, delay_ci, A_c and B_c raise LogarithmError until the data "
                       f"determine it (model_, the discrete model, stays available): "
                       f"{check.finding}", DiagnosticWarning)

    def _acts_beyond(self, channels: tuple[int, ...]) -> bool:
        """Whether a refit of the recent raw samples at ``max_delay_limit`` (the rows growth
        would rebuild) finds one of the ``channels`` acting through a significant block
        beyond the current bound; the statistics are left as they are."""
        from dmdidc.estimator import DEFAULT_SIGNIFICANCE

        trial = copy.copy(self)                  # (_configure gives it arrays of its own)
        trial.bound_events_ = []
        trial._grow(channels, self.max_delay_limit)
        try:
            # least squares: IV's test, on the ring's few rows for the limit's many
            # regressors, missed a main block at 6 T after growth to 5 (30 dB)
            solution = regression_from_statistics(trial.statistics(), trial.max_delay_,
                                                  estimator="ls")
        except ValueError:
            return False
        layout = trial._layout
        test = block_test(solution, layout.n_states, layout.n_inputs, trial.max_delay_,
                          significance=DEFAULT_SIGNIFICANCE)
        # any significant block beyond the bound (the first may be B^(R), too weak to show
        # in the fit at R: a delay of 5.98 T at R = 5)
        return bool(test.active[self.max_delay_ + 1:, list(channels)].any())

    def _grow(self, channels: tuple[int, ...], bound: int | None = None) -> None:
        """The bound grows to ``bound`` (default ``min(2 R + 1, limit)``); the statistics
        restart from the rows of the recent raw samples after the last change's onset."""
        old = self.max_delay_
        n, m = self._layout.n_states, self._layout.n_inputs
        self._configure(n, m, min(2 * old + 1, self.max_delay_limit) if bound is None
                        else bound)
        end = self.samples_seen_
        start = max(end + 1 - self._raw_U.shape[1], 0)
        V, times = self._regression_rows(_ring_read(self._raw_X, start, end + 1),
                                         _ring_read(self._raw_U, start, end), start)
        if self.events_:                         # the rows of the plant before a change: out
            recent = times >= self.events_[-1].onset
            V, times = V[:, recent], times[recent]
        rows_used = self.rows_used_
        self._add(V, times)
        self.rows_used_ = rows_used              # (not received again)
        self._warmup_left = max(self._resolved_warmup() - times.size, 1)
        self.bound_events_.append(BoundEvent(self.samples_seen_, old, self.max_delay_, channels,
                                             int(times.size)))

    def _resolved_warmup(self, layout: StatisticsLayout | None = None) -> int:
        p = (layout or self._layout).n_regressors
        return self.warmup if self.warmup is not None else max(20 * p, 500)

    def _advance(self, now: int) -> None:
        """Age the statistics to time ``now`` (forgetting) or drop rows older than the window."""
        if now <= self._now:
            return
        self._settle()
        if self.window is None:
            decay = self.forgetting ** (now - self._now)
            self._gram *= decay
            self._sums *= decay
            self._weight *= decay
        else:
            while self._rows and self._rows[0][0][0] < now - self.window:
                times, V, weight = self._rows.popleft()
                old = times < now - self.window
                self._remove(V[:, old], weight[old])
                if not old.all():
                    self._rows.appendleft((times[~old], V[:, ~old], weight[~old]))
        self._now = now

    def _add(self, V: np.ndarray, times: np.ndarray, robust: np.ndarray | None = None
             ) -> None:
        """Add rows ``V`` received at ``times``, each weighted by ``robust`` (default 1; the
        outliers' weights, :meth:`_weights`) and by forgetting."""
        if times.size == 0:
            return
        self._advance(int(times[-1]) + 1)
        self.rows_used_ += times.size
        if robust is not None and np.all(robust == 1.0):
            robust = None                        # (the usual case: no outlier)
        if self.window is not None:              # a chunk longer than the window: its tail only
            recent = times >= self._now - self.window
            V, times = V[:, recent], times[recent]
            robust = None if robust is None else robust[recent]
        if self.window is not None:              # (the rows as received: they leave so)
            self._rows.append((times, V, np.ones(times.size) if robust is None else robust))
        if self._shift is None:
            self._shift = V[:, 0].copy()
        V = self._shifted(V)
        if self.window is None and self.forgetting < 1.0:
            weights = self.forgetting ** (self._now - times)
            if robust is not None:
                weights = weights * robust
            self._gram += (V * weights) @ V.T
            self._sums += V @ weights
            self._weight += float(weights.sum())
        elif robust is not None:
            self._gram += (V * robust) @ V.T
            self._sums += V @ robust
            self._weight += float(robust.sum())
        else:
            self._gram += V @ V.T
            self._sums += V.sum(axis=1)
            self._weight += times.size

    def _shifted(self, V: np.ndarray) -> np.ndarray:
        """Rows ``V`` less the shift of the moments (:meth:`_recentre`)."""
        return V - self._shift[:, None]

    def _recentre(self) -> None:
        """Move the shift of the moments to the rows' weighted mean (then ``_sums`` is zero):
        ``G <- G - s s^T / W`` of rows already near it, which keeps the digits that the
        moments about zero of data recorded around a level lose (module notes, *Rows
        recorded around a level*)."""
        if self._shift is None or self._weight <= 0.0:
            return
        self._settle()
        mean = self._sums / self._weight
        self._gram -= np.outer(self._sums, mean)
        self._shift = self._shift + mean
        self._sums[:] = 0.0

    def _settle(self) -> None:
        """Apply the deferred decay of the one-sample path to the moments."""
        if self._scale != 1.0:
            self._gram *= self._scale
            self._sums *= self._scale
            self._scale = 1.0

    def _remove(self, V: np.ndarray, weight: np.ndarray) -> None:
        """Subtract rows ``V`` added with ``weight`` (one per row)."""
        self._settle()
        V = self._shifted(V)
        self._gram -= (V * weight) @ V.T
        self._sums -= V @ weight
        self._weight -= float(weight.sum())

    # ------------------------------------------------------------------ the fit
    def statistics(self) -> SufficientStatistics:
        """The current (weighted) statistics: the moments of rows weighted so that the weights
        sum to ``n_samples``, the total weight ``W`` (forgetting, outliers' and events'
        weights) rounded.

        The moments are scaled by ``n_samples / W`` (:meth:`SufficientStatistics.weighted
        <dmdidc.SufficientStatistics.weighted>`): the fit
        centres them by ``sums sums^T / n_samples``, which removes the weighted mean only when
        ``n_samples`` is the weights' sum.  Rounded alone (the moments' ``W`` kept) it moved
        the centred Gram by ``(W - N) / N`` times the squared mean, which at a level of 350
        with state deviations of 0.5 made it indefinite (a false
        InsufficientExcitationError) or moved the delays by 0.06 T with intervals that
        excluded the truth.  The scaling changes neither the coefficients nor their
        covariance (``sigma^2 G^{-1}``: both factors scale), only ``n_samples``' integer
        degrees of freedom.

        Their layout is that of the current bound ``max_delay_`` (it changes when it grows).

        With forgetting the rows carry unequal weights, and the fit's covariance
        ``sigma^2 (sum w phi phi^T)^{-1}`` is about twice the weighted estimate's own,
        ``sum w^2 / sum w ~ 1 / (1 + lambda)`` times it: the intervals of the fit are
        conservative.
        """
        if self._layout is None:
            raise ParameterError("no data yet: call update(X, U) first")
        self._recentre()
        self._settle()
        weight = max(self._weight, 0.0)          # (a window's rounding)
        gram, sums = self._gram, self._sums
        if self._shift is not None:              # the moments about zero (module notes)
            c = self._shift
            cross = np.outer(c, sums)
            gram = gram + cross + cross.T + weight * np.outer(c, c)
            sums = sums + weight * c
        return SufficientStatistics.weighted(self._layout, gram, sums, weight)

    @property
    def estimator_(self):
        """The :class:`~dmdidc.DMDidc` fit of the current statistics (cached)."""
        if self._fit is None:
            from dmdidc.estimator import DMDidc

            try:
                fit = DMDidc(max_delay=self.max_delay_, estimator=self.estimator
                             ).fit_statistics(self.statistics(), dt=self.dt)
            except InsufficientExcitationError as exc:
                finding = self._level_rounding(None)
                if finding is None:
                    raise
                raise InsufficientExcitationError(
                    f"the centred moments may be singular at rounding: {finding} (the "
                    f"solver: {exc})") from exc
            self._level = self._level_rounding(fit.regression_)
            self._fit = fit
            if not self._checking:               # (_check_continuous warns after its fit)
                self._warn_level()
        return self._fit

    def _warn_level(self) -> None:
        """Warn the last fit's level finding (:meth:`_level_rounding`), once until it is
        gone, and again when a residual variance comes out negative after it warned of
        their rounding (the model itself is unreliable then, not only its intervals)."""
        severity = 0 if self._level is None else 1 + ("came out" in self._level)
        if severity > self._level_warned:
            warn_model(f"the fit is off by rounding: {self._level}", DiagnosticWarning)
        self._level_warned = max(self._level_warned, severity) if severity else 0

    def _level_rounding(self, regression: Any = None) -> str | None:
        """What the fit's centring of the moments about zero loses of states recorded far
        from zero (module notes, *Rows recorded around a level*), or ``None``.

        A residual ``x_{k+1} - theta phi_k`` has the variance ``[1, -theta] G [1, -theta]^T
        / W`` of the centred Gram ``G``, whose entry ``(a, b)`` rounds at about ``eps |c_a
        c_b|`` per unit weight (``c`` the rows' mean), so the variance of state ``i`` rounds
        at ``eps reach_i^2`` with ``reach = |c_y| + |theta| |c_x|``, :data:`_LEVEL_ROUNDING`
        times that taken (pessimistic, measured).  The finding when that reaches
        :data:`_LEVEL_SHARE` of a residual variance (or the variance came out <= 0) and the
        level reaches further than the deviations do (``|theta|`` of them: any fit's
        rounding), unless the fit is exact (noise-free: its residuals are rounding at any
        level, and the estimator's offset check weighs its coefficients' rounding against
        the accuracy it claims; at a level of 10 they came out negative with the delays
        right to 1e-15); with ``regression`` ``None`` (the fit failed) when ``eps (level /
        deviation)^2`` reaches :data:`_LEVEL_LOST` of a state's variance."""
        n = self._layout.n_states
        if self._shift is None or self._weight <= 0.0:
            return None
        self._recentre()
        eps, tiny = np.finfo(float).eps, np.finfo(float).tiny
        variance = np.maximum(np.diag(self._gram) / self._weight, tiny)
        level = np.abs(self._shift)
        deviation = np.sqrt(variance)
        negative = np.zeros(n, dtype=bool)
        if regression is None:
            share = eps * level[:n] ** 2 / variance[:n]
        else:
            p = self._layout.n_regressors
            residual = np.diag(regression.residual_covariance)
            if np.abs(residual).sum() <= EXACT_FIT ** 2 * variance[p:p + n].sum():
                return None     # an exact fit (of the centred targets): rounding at any level
            weights = np.abs(regression.coefficients)
            reach = level[p:p + n] + weights @ level[:p]
            negative = residual <= 0.0
            share = np.where(negative, np.inf, _LEVEL_ROUNDING * eps * reach ** 2
                             / np.maximum(residual, tiny))
            share[reach <= deviation[p:p + n] + weights @ deviation[:p]] = 0.0
        i = int(np.argmax(share))
        if share[i] <= (_LEVEL_LOST if regression is None else _LEVEL_SHARE):
            return None
        where = (f"state {i} is recorded around {level[i]:.4g}, {level[i] / deviation[i]:.3g} "
                 f"times its deviation {deviation[i]:.3g}, and the fit centres moments about "
                 f"zero")
        if regression is None:
            lost = f", whose rounding is {share[i]:.2g} of its variance"
        elif negative[i]:
            lost = (f": the residual variance of state {i} came out "
                    f"{regression.residual_covariance[i, i]:.2g}, negative: rounding. The model "
                    f"itself, not only its intervals, is unreliable: the block test reads the "
                    f"delays with this covariance")
        else:
            lost = (f", whose rounding may reach {share[i]:.2g} of its residual variance (the "
                    f"residual covariance, the standard errors and the intervals are off)")
        return (f"{where}{lost}. Subtract an operating point (the first samples' mean will "
                f"do) from the states before streaming them")

    def _predictor_from_fit(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """One-step predictor, residual precision and the rows' mean of the current
        statistics (``None`` while they do not determine the regression).

        The predictor is affine, fitted to the moments about the rows' mean (module notes,
        *Rows recorded around a level*), and a row ``v`` is scored by ``v - mean``: fitted
        through zero to the moments about zero, at 2e5 deviations it was undefined on one
        of 8 random plants (the detector never armed, silently) and raised a false change
        on another.

        The predictor is least squares' whatever the estimator: the smallest one-step
        residuals of these regressors, which is what the CUSUM watches.  IV's coefficients,
        imprecise under weak instruments (a slow plant, first-stage F 0.2-6), made the
        residual covariance swing 5x between refreshes, and the CUSUM raised 12 false
        changes on 6 stationary records (each discarding the older data); the estimator's
        regression decides the bound (``_check_bound`` solves it when due; least squares'
        own is kept for it here)."""
        self._since_solve, self._solution = 0, None
        self._recentre()                         # (the moments about the rows' mean)
        if self._shift is None:
            return None
        mean = self._shift.copy()
        centred = replace(SufficientStatistics.weighted(self._layout, self._gram, self._sums,
                                                        max(self._weight, 0.0)),
                          intercepts=1, centering="global")
        try:
            predictor = regression_from_statistics(centred, self.max_delay_, estimator="ls")
        except ValueError:
            return None
        if self.estimator == "ls":
            self._solution = predictor
        sigma = predictor.residual_covariance
        # a noise-free stream has Sigma ~ 0: floor it so rounding is not taken for a change
        # (the fit's, of the centred targets, and the scores', of rows far from zero)
        n, p = self._layout.n_states, self._layout.n_regressors
        targets = slice(p, p + n)
        floor = (1e-12 * np.diag(centred.gram)[targets] / max(centred.n_samples, 1)
                 + (100 * np.finfo(float).eps * mean[targets]) ** 2)
        sigma = 0.5 * (sigma + sigma.T) + np.diag(floor + np.finfo(float).tiny)
        return predictor.coefficients, np.linalg.inv(sigma), mean

    @property
    def delay_status_(self) -> list[str]:
        """Per input channel: ``"determined"``, or why its delay is undetermined (then
        ``delay`` and ``delay_ci`` are NaN for it; module notes, *Undetermined delays*)."""
        return self._delay_status()

    def _delay_status(self, ci: IntervalEstimate | None = None) -> list[str]:
        """``delay_status_``, from ``ci`` (the fit's asymptotic delay interval at any level) if
        given."""
        fit = self.estimator_
        cached = getattr(self, "_status", None)
        if cached is not None and cached[0] is fit:
            return cached[1]
        first = fit.block_test_.first_active
        check = delay_ambiguity(fit.A_c, fit.regression_, fit.block_test_.active, fit.delay,
                                self.dt, lambda: (fit.delay_ci() if ci is None
                                                  else ci).standard_error)
        estimate, below = check.estimate, check.below
        status = []
        for i in range(first.size):
            if first[i] < 0:
                status.append(f"undetermined: no input block of this channel is significant in "
                              f"the block test on {self.rows_used_} rows "
                              f"({len(self.events_)} change(s) detected; the statistics "
                              f"restart at each): the data do not yet show its effect; feed "
                              f"more samples or more excitation")
            elif check.ambiguous[i]:
                status.append(f"undetermined: the delay reads {estimate[i] / self.dt:.3g} T with "
                              f"B^({first[i] - 1}) insignificant and set to zero, but "
                              f"{below[i] / self.dt:.3g} T with that block fitted; the data "
                              f"cannot tell the whole delay yet (its effect is weak): feed "
                              f"more samples or more excitation")
            else:
                status.append("determined")
        self._status = (fit, status)
        return status

    @property
    def delay(self) -> np.ndarray:
        """Delay (s) of each input channel, NaN where it is undetermined
        (``delay_status_``)."""
        determined = np.array([s == "determined" for s in self.delay_status_])
        return np.where(determined, self.estimator_.delay, np.nan)

    def delay_ci(self, level: float = 0.95, **options: Any) -> IntervalEstimate:
        """The fit's ``delay_ci`` (:meth:`dmdidc.DMDidc.delay_ci`), with value and bounds NaN
        for the undetermined channels (``delay_status_``)."""
        ci = self.estimator_.delay_ci(level, **options)
        # the status is decided once per fit, from the asymptotic standard errors (whichever
        # interval is asked for first): reuse ci only when it carries those
        asymptotic = options.get("method", "asymptotic") == "asymptotic"
        status = self._delay_status(ci if asymptotic else None)
        undetermined = np.array([s != "determined" for s in status])
        nan = lambda a: np.where(undetermined, np.nan, a)       # noqa: E731
        return replace(ci, value=nan(ci.value), low=nan(ci.low), high=nan(ci.high),
                       standard_error=nan(ci.standard_error))

    def history(self) -> dict:
        """What the stream did, as plain numbers for a saved model's provenance.

        Returns
        -------
        dict
            ``samples``, ``lost`` (``samples_seen_``, ``dropped_samples_``), ``events`` (each
            change's ``sample``, ``onset``, ``statistic`` and delays before and after, s),
            ``outliers`` (``sample``, ``score``, ``weight``), ``bound`` (each growth's
            ``sample`` and ``new_max_delay``), ``since`` (the onset of the last change, whose
            samples alone the model rests on, or ``None``) and ``warnings`` (the outlier rate
            check's, if any).
        """
        def delays(values: Any) -> list | None:
            return None if values is None else [float(d) for d in np.ravel(values)]

        rate = self.outlier_rate_warning()
        return {
            "samples": int(self.samples_seen_), "lost": int(self.dropped_samples_),
            "events": [{"sample": int(e.sample), "onset": int(e.onset),
                        "statistic": float(e.statistic), "old_delay": delays(e.old_delay),
                        "new_delay": delays(e.new_delay)} for e in self.events_],
            "outliers": [{"sample": int(o.sample), "score": float(o.score),
                          "weight": float(o.weight)} for o in self.outliers_],
            "bound": [{"sample": int(b.sample), "new_max_delay": int(b.new_max_delay)}
                      for b in self.bound_events_],
            "since": int(self.events_[-1].onset) if self.events_ else None,
            "warnings": [] if rate is None else [rate]}

    @property
    def excursion_start_(self) -> int | None:
        """The first row of the detector's open CUSUM excursion, ``None`` while the CUSUM
        is zero: a change detected before it closes has its onset there, and the outliers
        from it on are dropped as that change's first rows (module notes, *Outliers*)."""
        if self._layout is None or self._cusum <= 0.0:
            return None
        return self._excursion_start

    def outlier_rate_warning(self) -> str | None:
        """Whether more samples were read as outliers than Gaussian noise explains.

        A row is an outlier (module notes) at a chi-square tail of at most 1e-7
        (:data:`_OUTLIER_TAIL`), so Gaussian noise gives about 5e-5 of them in a warmup's
        worth of samples: at least
        :data:`_OUTLIERS_TO_WARN` within that span (since the last change's onset) means the
        noise is heavy-tailed (then the residual covariance, and so the intervals, are too
        narrow) or the plant changed in a way that shows only at some rows, such as a delay
        change seen only at the steps of held inputs (then the down-weighted rows were the
        change, and the model keeps the old plant).

        Returns
        -------
        str or None
            The warning naming both causes and the remedy, ``None`` while the rate is that
            of Gaussian noise.
        """
        if self._layout is None:
            return None
        onset = self.events_[-1].onset if self.events_ else -1
        samples = np.sort([o.sample for o in self.outliers_ if o.sample > onset])
        if samples.size < _OUTLIERS_TO_WARN:
            return None
        span = self._resolved_warmup()
        within = np.searchsorted(samples, samples + span) - np.arange(samples.size)
        most = int(within.max())
        if most < _OUTLIERS_TO_WARN:
            return None
        at = int(samples[int(np.argmax(within))])
        n = self._layout.n_states
        clip = self._outlier_limit() if self._predictor is not None else None
        tail = "" if clip is None else (
            f", where Gaussian noise gives {span * chi2.sf(clip, n):.1g} (rows beyond "
            f"q = {clip:.3g})")
        return (f"outlier rate check: {most} samples from {at} on, within {span} samples, "
                f"were read as outliers and down-weighted ({samples.size} since "
                f"{'the start' if onset < 0 else f'the onset {onset} of the last change'})"
                f"{tail}. Either the noise is heavy-tailed (then the residual covariance and "
                f"the delay intervals are too narrow) or the plant changed in a way that "
                f"shows only at some rows, such as a delay change seen only at the steps of "
                f"held inputs (then the model keeps the old plant). Check the outliers' "
                f"samples against the input's steps, and fit the record since them in batch "
                f"(DMDidc, or dmdidc identify FILE)")

    def _delay_or_none(self) -> np.ndarray | None:
        try:
            return self.delay
        except (ValueError, AttributeError):
            return None

    def __getattr__(self, name: str) -> Any:
        # delay, A_c, B_c, model_, delay_ci, confidence_intervals, ...: those of the fit
        if name.startswith("_") or name in ("samples_seen_", "rows_used_", "dropped_samples_",
                                            "drop_bursts_", "events_", "bound_events_", "outliers_",
                                            "max_delay_"):
            raise AttributeError(name)
        if name in _FORWARDED:
            return getattr(self.estimator_, name)
        raise AttributeError(f"'OnlineDMDidc' object has no attribute {name!r}")

    def __repr__(self) -> str:
        return (f"OnlineDMDidc(max_delay={self.max_delay}, dt={self.dt}, forgetting="
                f"{self.forgetting}, window={self.window}, max_delay_limit="
                f"{self.max_delay_limit})")


#: Attributes of the fit that the online estimator forwards.
_FORWARDED = ("A_c", "B_c", "A_d", "model_", "delay_steps", "delay_fraction",
              "confidence_intervals", "regression_", "block_test_", "predict")


@functools.cache
def _chi2_limit(n: int) -> float:
    """The score with chi-square tail :data:`_OUTLIER_TAIL` at ``n`` degrees of freedom."""
    return float(chi2.isf(_OUTLIER_TAIL, n))


def _ring_write(ring: np.ndarray, t: int, values: np.ndarray) -> None:
    """Store the columns of ``values`` (times ``t, t + 1, ...``) at their times modulo the
    ring's size (two slice copies at most: fancy indexing costs tens of microseconds)."""
    size, count = ring.shape[1], values.shape[1]
    a = t % size
    if a + count <= size:                   # (the usual case: one copy)
        ring[:, a:a + count] = values
        return
    if count > size:
        t, values = t + count - size, values[:, -size:]
        a = t % size
    head = min(size - a, values.shape[1])
    ring[:, a:a + head] = values[:, :head]
    ring[:, :values.shape[1] - head] = values[:, head:]


def _ring_read(ring: np.ndarray, start: int, end: int) -> np.ndarray:
    """The columns of times ``start .. end - 1`` (at most the ring's size back)."""
    a, count = start % ring.shape[1], end - start
    return np.concatenate([ring[:, a:a + count], ring[:, :max(a + count - ring.shape[1], 0)]],
                          axis=1)


def _held(inputs: np.ndarray) -> np.ndarray:
    """Each NaN entry replaced by the last earlier value of its row (what a holding actuator
    applied); NaN where the row has none yet."""
    columns = np.arange(inputs.shape[1])
    last = np.maximum.accumulate(np.where(np.isnan(inputs), 0, columns), axis=1)
    held = np.take_along_axis(inputs, last, axis=1)
    return held


def _chunk(name: str, value: Any) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DimensionError(f"{name} must be a numeric array; got {type(value).__name__}"
                             ) from exc
    array = array[None] if array.ndim == 1 else array
    if array.ndim != 2:
        raise DimensionError(f"{name} must be 2-dimensional (signals x time); got shape "
                             f"{array.shape}")
    if np.isinf(array).any():
        raise NonFiniteError(f"{name} contains {int(np.isinf(array).sum())} infinite entries; "
                             f"a lost sample is NaN, infinity is a fault")
    return array
