"""Confidence intervals for the identified delay and continuous plant (``A_c``, ``B_c``).

**Asymptotic** (delta method).  The model is a smooth function of the restricted coefficients
``Theta_r = Theta P`` (inactive blocks constrained to zero; ``P`` as in
:func:`dmdidc.inference.blocks.restricted_coefficients`): ``A_c = logm(A_d) / T``, and per channel
``B_c`` and the delay from ``A_c`` and the blocks ``w, w + 1`` (dissertation eqs. 9.67-9.69).
Its Jacobian is analytic (:mod:`dmdidc.inference.jacobian`: Frechet derivatives in the
eigenbasis of ``A_c``, or in its Schur basis when that is ill-conditioned,
:mod:`dmdidc.inference.frechet`, and the implicit function theorem for the hold length), with
central differences of the recovery only when neither passes its check (each channel's
pair of blocks then fitted alone with its hold length unclipped, as the analytic Jacobian
linearizes it: a whole delay's clipped hold length does not move under a small step, and
noisy data got a zero-width interval), and

    Cov(model) = J Cov(vec Theta_r) J^T,   Cov(vec Theta_r) = (I kron P^T) Cov(vec Theta) (I kron P)

read in factored form, neither ``J`` nor a covariance of its size formed: ``A_c``'s variances
in the eigenbasis of ``A_c`` from the Kronecker factors
(:meth:`~dmdidc.regression.covariance.KroneckerCovariance.frechet_variances`), each channel's
delay and ``B_c`` column from its own ``n + 1`` gradient rows on ``A_d`` and its pair of
blocks (:meth:`~dmdidc.inference.jacobian.ModelJacobian.channel`), and with ``delays_only``
(``delay_ci``) the delays' rows alone.  At ``n = 50``, ``m = 4`` the intervals' tracemalloc
peak fell from 300 MB to 13 MB, ``delay_ci``'s to 7 MB (``benchmarks/bench_scaling.py``).

The covariance is the estimator's own (least squares, IV, Huber, plus privacy noise; see
:class:`~dmdidc.regression.RegressionSolution`).  Within one block structure the interval is
``estimate +/- z se``.  A delay at a whole number of periods ``w`` (the hold length clipped at
the boundary of the recovery) gets the derivative from the side of the pair ``w, w + 1``, or
of ``w - 1, w`` when ``B^(w + 1)`` is constrained to zero (its side has no variance): on exact
data a zero-width interval, not NaN.

*Selection.*  The block structure is itself chosen from the data: the block test zeroes every
block before a channel's first significant one ``w``, and a weak ``B^(w - 1)`` (a delay just
short of ``w`` periods under weak excitation: a tenth of the input's action through a weak
closed-loop dither) is zeroed with them.  An interval computed given that structure ignores
the choice (a post-selection interval): on closed-loop data a delay of 0.897 T was read as
1.00 T with the 95 % interval [0.93, 1.07] and no check failing.  The test cannot reject
the structure with ``B^(w - 1)`` fitted too (it nests the decided one), so each interval spans
both: the values and standard errors stay the decided structure's, the low end of a delay's
interval and both ends of ``A_c``'s and ``B_c``'s become the lower and higher of the two
structures' (that structure stands for delays shorter than ``w`` periods, so a delay's high
end stays).  Where ``B^(w - 1)`` is truly zero its interval mostly lies inside the decided one
(white inputs, 120 random plants: median and 90th-percentile widths unchanged at 1e-4 T).
The ``block_rtol`` override fixes the structure by the user's rule instead of a test, and
its intervals are not spanned.

*Whole delay read with the next block kept.*  A delay a little longer than ``w`` periods acts
through a strong ``B^(w)`` and a weak ``B^(w + 1)``; the block test may find the weak one
insignificant, and it is kept (:func:`~dmdidc.inference.blocks.kept_blocks`) so that the
fraction is estimated.  The recovery chooses among candidate pairs by misfit, and on short
records noise can make the whole-delay structure (``B^(w + 1)`` zero) fit better: the delay
is read as exactly ``w`` periods, and a delta-method interval around ``w`` ignores that choice
(at fractions within 0.1 of a whole period and K = 10 x the parameter count, 9 of 396 delays
were read whole and none of their 95 % intervals covered the truth).  Such a channel's
interval is joined with that of the pair ``w, w + 1`` fitted alone
(:func:`~dmdidc.inference.recovery.pair_delay`, by its own delta method) when that pair reads
a longer delay; the value and standard error stay the recovery's.

**Bootstrap over trajectories** (or over the parts given to ``fit_statistics``): trajectories
(parts) are resampled with replacement, the estimator is refitted with the fit's estimator,
instruments and intercept kept and no checks (whole-delay decision included:
:mod:`dmdidc.resampling`), and the percentile interval of each quantity is reported.  It
needs independent experiments (at least ~20 for a 95 % interval) and captures what the
asymptotic interval cannot: the variability of the whole delay and of the block decision.

Both are intervals for what the estimator converges to: least squares on noisy states
converges to a biased value (errors in variables), so its intervals do not cover the truth as
data grow; IV intervals do.

**After a pretest** (``estimator="auto"`` kept least squares because Hausman's comparison found
no difference from weak-instrument IV, typically closed-loop data): the comparison has least
power exactly then, so a bias it cannot detect may still exceed least squares' own standard
error, and a pretest estimator's nominal intervals undercover (Guggenberger 2010).
:func:`with_pretest_bias` adds the estimated squared bias ``max(D^2 - Var D, 0)`` of each
quantity, ``D`` its IV-minus-LS difference, to the least-squares variance (a mean-squared-error
interval): on 120 random closed-loop plants the 95 % delay intervals of such fits covered
91 % of the true delays before, 94 % after (``docs/scripts/closed_loop_coverage.py``).  With
the spanned structures above, each structure's interval is widened by its own IV-minus-LS
difference before the two are joined.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from _toolbox.formatting import interval_text
from _toolbox.validation import as_generator, check_in_interval, check_integer, read_only
from dmdidc.discretization import first_active_blocks
from dmdidc.errors import (
    ContinuousModelWarning,
    DimensionError,
    InconsistentModelError,
    LogarithmError,
    ParameterError,
)
from dmdidc.inference.blocks import (
    restricted_coefficients,
    restriction_projector,
    with_earlier_blocks,
)
from dmdidc.inference.jacobian import model_jacobian
from dmdidc.inference.recovery import pair_delay, recover_continuous, solution_weights
from dmdidc.regression.instrumental import pretest_bias2
from dmdidc.regression.solution import coefficient_blocks

__all__ = ["IntervalEstimate", "ConfidenceIntervals", "asymptotic_intervals",
           "bootstrap_intervals", "model_vector", "INTERVAL_METHODS", "rate_units",
           "with_pretest_bias", "with_signal_units"]

INTERVAL_METHODS = ("asymptotic", "bootstrap")
#: Most bootstrap refits one call may ask for.
MAX_RESAMPLES = 10_000
_NO_INTERVAL = {"asymptotic": "no active block", "bootstrap": "no active block"}
#: Central-difference step, relative to each coefficient's standard error.
_STEP = 1e-3


@dataclass(frozen=True)
class IntervalEstimate:
    """An estimate with its confidence interval (arrays of one shape).

    Attributes
    ----------
    name : str
        ``"r"``, ``"A_c"`` or ``"B_c"``.
    value, low, high : ndarray
        Estimate and interval bounds.
    standard_error : ndarray
        Asymptotic standard error in the decided block structure (the interval may reach
        further on one side: it spans the structure with ``B^(w - 1)`` fitted too, module
        notes, *Selection*); bootstrap: standard deviation over resamples.
    level : float
    method : str
        ``"asymptotic"`` or ``"bootstrap"``.
    unit : str or ndarray of str
        Unit of the values (``"s"`` for delays, ``"1/s"`` for ``A_c`` and ``B_c`` of signals
        without units), or one per entry, of the values' shape (``"K/(kW s)"`` for the entry
        of ``B_c`` from an input in kW to a state in K: :func:`rate_units`).
    """

    name: str
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    standard_error: np.ndarray
    level: float
    method: str
    unit: str | np.ndarray

    def __post_init__(self) -> None:
        for field in ("value", "low", "high", "standard_error"):
            object.__setattr__(self, field, read_only(np.asarray(getattr(self, field), float)))
        if not isinstance(self.unit, str):
            units = np.array(self.unit, dtype=object)
            if units.shape != self.value.shape:
                raise DimensionError(f"unit must be one string or one per entry, shape "
                                     f"{self.value.shape}; got shape {units.shape}")
            units.flags.writeable = False
            object.__setattr__(self, "unit", units)

    def unit_of(self, index: tuple[int, ...]) -> str:
        """The unit of the entry ``index``."""
        return self.unit if isinstance(self.unit, str) else str(self.unit[index])

    @property
    def half_width(self) -> np.ndarray:
        """Half the interval length."""
        return 0.5 * (self.high - self.low)

    def lines(self) -> list[str]:
        """One line per entry: ``"r[0] = 2.50 +/- 0.03 s"`` (asymptotic and symmetric to 1 %
        of the width, or narrower than its printed digits) or
        ``"r[0] = 2.50 s, 95 % interval [2.46, 2.53] s"`` (bootstrap, or an asymptotic interval
        spanning another block structure on one side), as
        :func:`_toolbox.formatting.interval_text` prints them: each entry to at most
        :data:`~_toolbox.formatting.MAX_PRINTED_DIGITS` significant digits of its own
        magnitude, and a half-width below those digits with its own (exact data print
        ``"r[0] = 2.50000 +/- 4.4e-16 s"``, neither 16 digits of rounding nor ``0.00000``).
        The cap is each entry's own, not the matrix's largest entry: entries of mixed units or
        scales (a state in Pa beside one in K) would otherwise lose the digits their intervals
        need (``-1 +/- 0.0063`` for -0.503)."""
        out = []
        for index in np.ndindex(self.value.shape):
            label = f"{self.name}[{', '.join(map(str, index))}]" if index else self.name
            value, low, high = self.value[index], self.low[index], self.high[index]
            unit = self.unit_of(index)
            if not np.isfinite(high - low):
                out.append(f"{label} = {value:.3f} {unit} (no {self.method} interval)")
            else:
                out.append(f"{label} = " + interval_text(
                    value, low, high, unit=unit, level=self.level,
                    symmetric=self.method == "asymptotic"))
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


@dataclass(frozen=True)
class ConfidenceIntervals:
    """Intervals for the delay (per channel), ``A_c`` and ``B_c`` of one identification.

    Attributes
    ----------
    delay : IntervalEstimate
    A_c, B_c : IntervalEstimate or None
        ``None`` where the fit has no intervals for them: an output-error fit
        (:meth:`dmdidc.OutputDMDidc.confidence_intervals`), whose state basis is its own
        choice (its eigenvalues have intervals: ``eigenvalue_ci``).
    level : float
    method : str
    resamples : int
        Bootstrap resamples used (0 for asymptotic intervals).
    failures : int
        Bootstrap resamples without a continuous model (no real logarithm, or moments that do
        not identify the regression), left out.
    """

    delay: IntervalEstimate
    A_c: IntervalEstimate | None
    B_c: IntervalEstimate | None
    level: float
    method: str
    resamples: int = 0
    failures: int = 0

    def summary(self) -> str:
        """The intervals as text, delays first."""
        head = (f"{100 * self.level:g} % confidence intervals ({self.method}"
                + (f", {self.resamples} resamples, {self.failures} left out"
                   if self.method == "bootstrap" else "") + "):")
        lines = [head] + ["  " + line for item in (self.delay, self.A_c, self.B_c)
                          if item is not None for line in item.lines()]
        if any("interval)" in line for line in lines):
            lines.append(f"  (no {self.method} interval: {_NO_INTERVAL[self.method]})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def rate_units(rows: tuple[str, ...] | list[str], columns: tuple[str, ...] | list[str]
               ) -> str | np.ndarray:
    """Units of the entries of a continuous-time matrix from signals ``columns`` to the rates
    of signals ``rows``: ``[row] / ([column] s)`` (``A_c``: states to states, ``B_c``: inputs
    to states), ``"1/s"`` where both units are equal (or empty).

    Returns
    -------
    str or ndarray of str, shape (len(rows), len(columns))
        ``"1/s"`` when it is every entry's unit, else one unit per entry.

    Examples
    --------
    >>> rate_units(["", ""], [""])
    '1/s'
    >>> rate_units(["K", "Pa"], ["kW"]).tolist()
    [['K/(kW s)'], ['Pa/(kW s)']]
    >>> rate_units(["K"], [""]).tolist()
    [['K/s']]
    """
    def rate(row: str, column: str) -> str:
        if row == column:
            return "1/s"
        return f"{row or 1}/({column} s)" if column else f"{row}/s"

    units = np.array([[rate(r, c) for c in columns] for r in rows], dtype=object)
    return "1/s" if units.size and np.all(units == "1/s") else units


def with_signal_units(ci: ConfidenceIntervals, state_units: tuple[str, ...],
                      input_units: tuple[str, ...]) -> ConfidenceIntervals:
    """``ci`` with the units of ``A_c`` and ``B_c`` formed from the signals' units
    (:func:`rate_units`; unchanged without units)."""
    return dataclasses.replace(
        ci, A_c=dataclasses.replace(ci.A_c, unit=rate_units(state_units, state_units)),
        B_c=dataclasses.replace(ci.B_c, unit=rate_units(state_units, input_units)))


def _model_vector(coefficients: np.ndarray, n: int, m: int, R: int, dt: float,
                  active: np.ndarray, block_variance: float | None = None,
                  weights: np.ndarray | None = None) -> np.ndarray:
    A_d, blocks = coefficient_blocks(coefficients, n, m, R)
    if block_variance is None:
        A_c, B_c, delay = recover_continuous(A_d, blocks, dt, active=active, weights=weights)
    else:
        from dmdidc.inference.branches import recover_branch

        A_c, B_c, delay = recover_branch(A_d, blocks, dt, active=active,
                                         block_variance=block_variance, weights=weights)
    return np.concatenate([delay, A_c.ravel(), B_c.ravel()])


def _split(vector: np.ndarray, n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return vector[:m], vector[m:m + n * n].reshape(n, n), vector[m + n * n:].reshape(n, m)


def _package(values, lows, highs, ses, n, m, level, method, resamples=0, failures=0
             ) -> ConfidenceIntervals:
    parts = [_split(v, n, m) for v in (values, lows, highs, ses)]
    items = [IntervalEstimate(name, *(part[k] for part in parts), level=level, method=method,
                              unit=unit)
             for k, (name, unit) in enumerate((("r", "s"), ("A_c", "1/s"), ("B_c", "1/s")))]
    return ConfidenceIntervals(*items, level=level, method=method, resamples=resamples,
                               failures=failures)


def asymptotic_intervals(solution, test, kept: np.ndarray, *, n_states: int, n_inputs: int,
                         max_delay: int, dt: float, level: float = 0.95,
                         block_variance: float | None = None, alternative=None,
                         delays_only: bool = False) -> ConfidenceIntervals:
    """Delta-method intervals over the block structures the test cannot tell apart (module notes).

    Parameters
    ----------
    solution : RegressionSolution
        With the estimator's covariance.
    test : BlockTest
        Which blocks act.
    kept : ndarray of bool, shape (R + 1, m)
        The blocks the model was built from (:func:`~dmdidc.inference.blocks.kept_blocks`);
        the others are constrained to zero.
    n_states, n_inputs, max_delay : int
    dt : float
    level : float, default 0.95
    block_variance : float, optional
        The blocks' mean variance, for the choice of the logarithm's branch
        (:func:`~dmdidc.inference.branches.recover_branch`); by default the principal one.
    alternative : RegressionSolution, optional
        IV's regression when a pretest kept ``solution`` (least squares): each structure's
        intervals are widened by the bias the pretest could not exclude
        (:func:`with_pretest_bias`, against ``alternative``'s intervals of the same structure).
    delays_only : bool, default False
        Differentiate the delays only (what ``delay_ci`` reads): ``A_c``'s and ``B_c``'s
        values are given, their standard errors and ends are NaN.  The delays' intervals are
        those of the whole computation, at a fraction of its cost for many states.

    Returns
    -------
    ConfidenceIntervals
        Values and standard errors from the decided block structure; each interval the union
        of that structure's and of the structure with ``B^(w - 1)`` fitted too (module notes,
        *Selection*), so it may be asymmetric.

    Raises
    ------
    LogarithmError
        No continuous model to differentiate (in either structure).
    """
    level = check_in_interval("level", level, 0.0, 1.0, low_open=True, high_open=True)
    # the fit's delay-fit weights (its solution's), also for the alternative's intervals
    shape = dict(n=n_states, m=n_inputs, R=max_delay, dt=dt, level=level,
                 block_variance=block_variance, weights=solution_weights(solution),
                 delays_only=delays_only)
    structures = [(test.active, kept, False)]
    earlier = with_earlier_blocks(test.active, test.active)
    if test.rule == "significance" and not np.array_equal(earlier, test.active):
        # (under the block_rtol override the structure is the user's, not a test's)
        structures.append((earlier, with_earlier_blocks(kept, test.active), True))
    out = None
    for active, blocks, earlier_side in structures:
        try:
            intervals = _delta_method(solution, active, blocks, **shape,
                                      earlier_side=earlier_side)
        except LogarithmError as exc:
            if not earlier_side:
                raise
            if solution.noise_covariance is None:
                remedy = ("use confidence_intervals(method='bootstrap'), which refits "
                          "resamples")
            else:
                # a private release refuses the bootstrap (it would refit without the noise)
                remedy = ("the release is too noisy for this model: more clients or samples, "
                          "a larger epsilon or a smaller max_delay; or fit a list of "
                          "separately privatized parts (fit_statistics([part, ...])) and "
                          "bootstrap those")
            raise LogarithmError(f"the intervals span the block structure with the block "
                                 f"before each delay fitted too, which has no continuous "
                                 f"model ({exc}); {remedy}") from exc
        if alternative is not None:
            try:
                intervals = with_pretest_bias(intervals, _delta_method(
                    alternative, active, blocks, **shape, earlier_side=earlier_side))
            except (LogarithmError, InconsistentModelError, np.linalg.LinAlgError):
                pass     # IV's blocks have no continuous model: no bias estimate to add
        out = intervals if out is None else _union(out, intervals)
    return out


def _silent_entries(silent: np.ndarray, n: int, m: int) -> np.ndarray:
    """Model-vector entries of the channels without an active block (``silent``, shape (m,)
    bool): their delay and ``B_c`` column are reported as 0 and get no interval."""
    channels = np.flatnonzero(silent)
    return np.concatenate([channels, m + n * n + np.add.outer(np.arange(n) * m,
                                                              channels).ravel()]).astype(int)


def _delta_method(solution, active: np.ndarray, kept: np.ndarray, *, n: int, m: int, R: int,
                  dt: float, level: float, block_variance: float | None,
                  weights: np.ndarray | None = None, earlier_side: bool = False,
                  delays_only: bool = False) -> ConfidenceIntervals:
    """Delta-method intervals given the block structure (``active`` decides each channel's
    first block, ``kept`` the blocks fitted; the module notes); ``weights``: the delay fits'
    (by default ``solution``'s, :func:`~dmdidc.inference.recovery.solution_weights`);
    ``delays_only``: ``A_c``'s and ``B_c``'s standard errors and ends are left NaN."""
    weights = solution_weights(solution) if weights is None else weights
    projector = restriction_projector(solution, n, kept)
    restricted = restricted_coefficients(solution, n, kept, projector=projector)
    p = restricted.shape[1]
    cov = solution.factored_covariance().project(projector)     # that of Theta_r, factored
    first = first_active_blocks(active)
    base = _model_vector(restricted, n, m, R, dt, active, block_variance, weights)
    delay, A_c = base[:m], base[m:m + n * n].reshape(n, n)
    B_c = base[m + n * n:].reshape(n, m)
    starts = _pair_starts(delay / dt, kept, earlier_side)
    pairs, indices = [], []
    states = np.arange(n) * p
    for i, start in enumerate(starts):
        lags = [start, start + 1] if first[i] >= 0 else []
        pairs.append(tuple(restricted[:, n + j * m + i] if j <= R else None for j in lags)
                     or None)
        # vec A_d, then the pair's columns (a block beyond the bound: -1, dropped below)
        indices.append(np.concatenate([np.add.outer(states, np.arange(n)).ravel()]
                                      + [states + n + j * m + i if j <= R else np.full(n, -1)
                                         for j in (start, start + 1)]))
    variance = np.full(base.size, np.nan)     # (what is not asked for stays NaN)
    jacobian = model_jacobian(A_c, B_c, delay, pairs, dt, starts, weights)
    analytic = jacobian is not None
    if analytic:
        if not delays_only:
            variance[m:m + n * n] = jacobian.log_variances(cov).ravel()
        for i in range(m):
            rows = np.r_[i, m + n * n + np.arange(n) * m + i][:1 if delays_only else None]
            gradients = jacobian.channel(i, delay_only=delays_only)
            if gradients is None:       # no active block: no interval (NaN below)
                continue
            used = indices[i] >= 0
            variance[rows] = cov.linear_variances(gradients[:, used], indices[i][used])
    else:                               # neither route passed its check: central differences
        dense, index = _numerical_jacobian(restricted, cov, active, base, starts, n, m, R,
                                           dt, block_variance, weights)
        wanted = np.arange(m if delays_only else base.size)
        variance[wanted] = cov.linear_variances(dense[wanted], np.asarray(index))
    se = np.sqrt(np.clip(variance, 0.0, None))
    se[_silent_entries(first < 0, n, m)] = np.nan
    z = float(special.ndtri(0.5 + 0.5 * level))
    low, high = base - z * se, base + z * se
    if not earlier_side:
        for i, b, value in _later_pair_reads(restricted, base, starts, first, kept, n, m, R,
                                             dt, weights):
            if analytic:                # the pair's own delta method, at its own fit
                gradient = jacobian.channel(i, b, value, delay_only=True)
                used = indices[i] >= 0
                error = float(np.sqrt(max(cov.linear_variances(gradient[:, used],
                                                               indices[i][used])[0], 0.0)))
            else:                       # central differences already fit that pair alone
                error = se[i]
            low[i], high[i] = min(low[i], value - z * error), max(high[i], value + z * error)
    low[:m] = np.maximum(low[:m], 0.0)      # a delay is not negative (the model's range)
    return _package(base, low, high, se, n, m, level, "asymptotic")


def _later_pair_reads(restricted, base, starts, first, kept, n, m, R, dt, weights):
    """``(channel, b, delay)`` of the pair ``w, w + 1`` fitted alone, for each channel read as
    a whole ``w`` periods while that pair is kept and reads a longer delay (module notes,
    *Whole delay read with the next block kept*)."""
    delay, A_c = base[:m], base[m:m + n * n].reshape(n, n)
    for i, w in enumerate(starts):
        if first[i] < 0 or abs(delay[i] / dt - w) > 1e-9 or w + 1 > R or not kept[w + 1, i]:
            continue
        columns = restricted[:, n:].reshape(n, R + 1, m)[:, :, i].T
        b, later = pair_delay(A_c, columns, w, dt, weights=weights)
        if later - delay[i] > 1e-12 * dt:      # (the pair reads w too: nothing to span)
            yield i, b, later


def _pair_starts(periods: np.ndarray, kept: np.ndarray, earlier_side: bool) -> np.ndarray:
    """The first block of the pair each channel's delay is differentiated through.

    A delay inside a period uses the pair around it.  A delay at a whole number ``w`` of
    periods lies on both pairs ``w - 1, w`` and ``w, w + 1``; the later one is used unless
    ``earlier_side`` asks for the earlier, or the later pair's ``B^(w + 1)`` is constrained to
    zero (not kept, or beyond the bound): its derivative would then be zero, a zero-width
    interval on noisy data.  The earlier pair is only used when ``B^(w - 1)`` is kept.
    """
    starts = np.floor(periods + 1e-9).astype(int)
    R1 = kept.shape[0]
    for i, w in enumerate(starts):
        if abs(periods[i] - w) > 1e-9 or not 1 <= w < R1 or not kept[w - 1, i]:
            continue
        if earlier_side or w + 1 >= R1 or not kept[w + 1, i]:
            starts[i] = w - 1
    return starts


def _union(decided: ConfidenceIntervals, earlier: ConfidenceIntervals) -> ConfidenceIntervals:
    """``decided``'s values and standard errors, each interval widened to span ``earlier``'s
    (the structure with ``B^(w - 1)`` fitted, where it has one); a delay's upper end stays the
    decided one (that structure stands for delays shorter than ``w`` periods, not longer)."""
    delay = dataclasses.replace(decided.delay, low=np.fmin(decided.delay.low, earlier.delay.low))
    items = [dataclasses.replace(mine, low=np.fmin(mine.low, theirs.low),
                                 high=np.fmax(mine.high, theirs.high))
             for mine, theirs in ((decided.A_c, earlier.A_c), (decided.B_c, earlier.B_c))]
    return ConfidenceIntervals(delay, *items, level=decided.level, method=decided.method)



def with_pretest_bias(chosen: ConfidenceIntervals, alternative: ConfidenceIntervals
                      ) -> ConfidenceIntervals:
    """Asymptotic intervals of least squares kept by a pretest, widened by its estimated bias.

    Per quantity, ``D = alternative - chosen`` (IV minus least squares) estimates the bias of
    least squares with variance :func:`~dmdidc.regression.instrumental.hausman_variance`;
    ``max(D^2 - Var D, 0)`` estimates its square (unbiased before the clipping,
    :func:`~dmdidc.regression.instrumental.pretest_bias2`), and the standard error becomes
    ``sqrt(se^2 + max(D^2 - Var D, 0))``: the interval is built on the estimated mean-squared
    error (each side ``h`` of an asymmetric interval becomes ``sqrt(h^2 + z^2 max(...))``).
    Where the alternative has no interval the chosen one is kept.

    Parameters
    ----------
    chosen : ConfidenceIntervals
        Least squares' asymptotic intervals (the reported values).
    alternative : ConfidenceIntervals
        IV's asymptotic intervals on the same data and block decision.

    Returns
    -------
    ConfidenceIntervals
        Same values as ``chosen``, same level, wider where IV differs by more than chance.

    Examples
    --------
    >>> ls = IntervalEstimate("r", [2.0], [1.9], [2.1], [0.05], 0.95, "asymptotic", "s")
    >>> iv = IntervalEstimate("r", [2.3], [2.1], [2.5], [0.1], 0.95, "asymptotic", "s")
    >>> pair = [ConfidenceIntervals(x, x, x, 0.95, "asymptotic") for x in (ls, iv)]
    >>> bool(with_pretest_bias(*pair).delay.half_width[0] > 0.5)
    True
    """
    z = float(special.ndtri(0.5 + 0.5 * chosen.level))
    items = []
    for mine, other in ((chosen.delay, alternative.delay), (chosen.A_c, alternative.A_c),
                        (chosen.B_c, alternative.B_c)):
        v_ls, v_iv = mine.standard_error ** 2, other.standard_error ** 2
        bias2 = pretest_bias2(v_ls, v_iv, other.value - mine.value)   # (none without IV's)
        below, above = mine.value - mine.low, mine.high - mine.value
        items.append(IntervalEstimate(
            mine.name, mine.value, mine.value - np.sqrt(below ** 2 + z * z * bias2),
            mine.value + np.sqrt(above ** 2 + z * z * bias2), np.sqrt(v_ls + bias2),
            mine.level, mine.method, mine.unit))
    return ConfidenceIntervals(*items, level=chosen.level, method=chosen.method)


def _numerical_jacobian(restricted, cov, active, base, starts, n, m, R, dt, block_variance,
                        weights) -> tuple[np.ndarray, list[int]]:
    """Central differences of the recovery (when no analytic Jacobian passes its check):
    ``(jacobian, index)`` over the entries of ``A_d`` and each channel's pair of blocks
    ``starts[i], starts[i] + 1`` (those of the analytic Jacobian).

    Each channel's delay and ``b`` are differentiated as the fit of that pair alone with the
    hold length unclipped (:func:`~dmdidc.inference.recovery.pair_delay`, ``clip=False``), as
    the analytic Jacobian linearizes it: a delay read as a whole number of periods has its hold
    length clipped at the boundary, where it does not move under a small step, and differences
    of the clipped recovery gave noisy data a zero-width interval.
    """
    p = restricted.shape[1]
    first = first_active_blocks(active)
    acting = np.flatnonzero(first >= 0)
    used = [(a, c) for a in range(n) for c in range(n)]
    for i in acting:
        used += [(a, n + j * m + i) for j in (starts[i], starts[i] + 1) if j <= R
                 for a in range(n)]
    index = sorted({a * p + c for a, c in used})
    se_coef = np.sqrt(np.clip(cov.diagonal().ravel()[index], 0.0, None))
    A_c = base[m:m + n * n].reshape(n, n)

    def model(coefficients: np.ndarray, A_c: np.ndarray, channels) -> np.ndarray:
        vector = base.copy()
        vector[m:m + n * n] = A_c.ravel()
        blocks = coefficients[:, n:].reshape(n, R + 1, m)
        for i in channels:
            vector[m + n * n + i::m], vector[i] = pair_delay(A_c, blocks[:, :, i].T,
                                                             starts[i], dt, clip=False,
                                                             weights=weights)
        return vector

    jacobian = np.zeros((base.size, len(index)))
    for k, flat in enumerate(index):
        step = _STEP * se_coef[k] if se_coef[k] > 0 else 1e-8 * (1.0 + abs(restricted.flat[flat]))
        column = flat % p
        moved = []
        for sign in (1.0, -1.0):
            shifted = restricted.copy()
            shifted.flat[flat] += sign * step
            if column < n:                      # A_d: everything moves
                moved_A = _model_vector(shifted, n, m, R, dt, active, block_variance, weights)
                moved.append(model(shifted, moved_A[m:m + n * n].reshape(n, n), acting))
            else:                               # a block column moves its channel only
                moved.append(model(shifted, A_c, [(column - n) % m]))
        jacobian[:, k] = (moved[0] - moved[1]) / (2.0 * step)
    return jacobian, index


def bootstrap_intervals(refit: Callable[[np.ndarray], np.ndarray | None], n_parts: int,
                        estimate: np.ndarray, *, n_states: int, n_inputs: int,
                        level: float = 0.95, n_resamples: int = 200,
                        rng: np.random.Generator | int | None = None,
                        silent: np.ndarray | None = None) -> ConfidenceIntervals:
    """Percentile intervals from refits on parts resampled with replacement (module notes).

    Parameters
    ----------
    refit : callable
        ``refit(counts)`` with ``counts[i]`` the multiplicity of part ``i`` returns the model
        vector ``[delay, A_c.ravel(), B_c.ravel()]`` or ``None`` (no continuous model).
    n_parts : int
        Independent parts (trajectories, clients), at least 2.
    estimate : ndarray
        The model vector of the fit on all data.
    n_states, n_inputs : int
    level : float, default 0.95
    n_resamples : int, default 200
    rng : numpy.random.Generator, int or None
    silent : ndarray of bool, shape (n_inputs,), optional
        Channels without an active block in the fit on all data: their delay and ``B_c``
        column (reported as 0) get no interval, as in :func:`asymptotic_intervals` (the
        resamples would mostly repeat the 0: a zero-width interval around a placeholder).

    Raises
    ------
    ParameterError
        Fewer than two parts, ``n_resamples`` outside ``2 .. MAX_RESAMPLES``, fewer than two
        resamples with a continuous model, or ``silent`` not booleans.
    DimensionError
        ``silent`` not one flag per input channel.
    """
    level = check_in_interval("level", level, 0.0, 1.0, low_open=True, high_open=True)
    if check_integer("n_resamples", n_resamples, minimum=2) > MAX_RESAMPLES:
        raise ParameterError(f"n_resamples = {n_resamples} refits the model that many times; "
                             f"accepted: 2 .. {MAX_RESAMPLES} (percentile intervals settle "
                             f"long before)")
    if n_parts < 2:
        raise ParameterError(f"the bootstrap resamples independent trajectories (or statistics "
                             f"parts); got {n_parts}: record several experiments, or use "
                             f"method='asymptotic'")
    silent = np.zeros(n_inputs, dtype=bool) if silent is None else np.asarray(silent)
    if silent.dtype != bool:     # (channel indices or weights would be cast to flags)
        raise ParameterError(f"silent has dtype {silent.dtype}: expected booleans, one flag "
                             f"per input channel (True: no active block)")
    if silent.shape != (n_inputs,):
        raise DimensionError(f"silent has shape {silent.shape}; expected ({n_inputs},): one "
                             f"flag per input channel")
    generator = as_generator(rng)
    draws, failures = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        for _ in range(n_resamples):
            counts = np.bincount(generator.integers(0, n_parts, n_parts), minlength=n_parts)
            vector = refit(counts)
            if vector is None:
                failures += 1
            else:
                draws.append(vector)
    if len(draws) < 2:
        raise ParameterError(f"only {len(draws)} of {n_resamples} bootstrap fits have a "
                             f"continuous model; the data cannot support an interval")
    draws = np.array(draws)
    tail = 50.0 * (1.0 - level)
    low, high = np.percentile(draws, [tail, 100.0 - tail], axis=0)
    spread = draws.std(axis=0, ddof=1)
    hidden = _silent_entries(silent, n_states, n_inputs)
    low[hidden] = high[hidden] = spread[hidden] = np.nan
    return _package(estimate, low, high, spread, n_states, n_inputs, level,
                    "bootstrap", resamples=n_resamples, failures=failures)


def model_vector(model) -> np.ndarray | None:
    """``[delay, A_c.ravel(), B_c.ravel()]`` of a plant, or ``None`` without continuous model."""
    if not model.has_continuous:
        return None
    return np.concatenate([model.delay, model.A_c.ravel(), model.B_c.ravel()])
